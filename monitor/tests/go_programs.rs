//! A static Go program (tests/programs/go/yardstick): Go's runtime is the yardstick for
//! what runtimes need from the kernel (threads, futexes, epoll, timers, signals and SIGURG
//! preemption, fork+exec, sockets). Built with the host's Go toolchain (`.ci/run` installs
//! Debian's golang-go when there is none), run natively and under `hrt run` with 1, 2 and 4
//! vCPUs, and compared.

mod common;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::hostile::{assert_same, hrt, native, repo_root};

/// The `go` command: on PATH, or where the official tarball (/usr/local/go) or Debian
/// (/usr/lib/go) put it. A missing toolchain fails the test with how to install it.
fn go_tool() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("go"));
    let known = ["/usr/local/go/bin/go", "/usr/lib/go/bin/go"].into_iter().map(PathBuf::from);
    on_path.chain(known).find(|p| p.is_file()).expect("no Go toolchain: install it (apt-get install golang-go)")
}

/// Builds the Go program in tests/programs/go/NAME into target/programs/go-NAME (static: no
/// cgo), rebuilding when a source file is newer.
fn build_go(name: &str) -> PathBuf {
    let root = repo_root();
    let dir = root.join("tests/programs/go").join(name);
    let out = root.join("target/programs").join(format!("go-{name}"));
    std::fs::create_dir_all(out.parent().unwrap()).expect("creating target/programs");
    let newest_source = std::fs::read_dir(&dir)
        .expect("reading the Go program's directory")
        .filter_map(|e| e.ok()?.metadata().ok()?.modified().ok())
        .max();
    let built = std::fs::metadata(&out).and_then(|m| m.modified()).ok();
    if built.is_none() || built < newest_source {
        let result = Command::new(go_tool())
            .current_dir(&dir)
            .env("CGO_ENABLED", "0")
            .env("GOTOOLCHAIN", "local")
            .args(["build", "-o"])
            .arg(&out)
            .arg(".")
            .output()
            .expect("running go build");
        assert!(result.status.success(), "go build {}: {}", dir.display(), String::from_utf8_lossy(&result.stderr));
    }
    out
}

/// TCP echo with 32 client goroutines, an HTTP server and client, a spinning goroutine stopped
/// only by asynchronous preemption, tickers, 1,000 goroutines over a channel, os/signal,
/// os/exec of /bin/sh and sort, files: the same output and status as natively.
#[test]
fn a_static_go_program_runs_as_on_linux() {
    let prog = build_go("yardstick");
    assert!(is_static(&prog), "{} is not statically linked", prog.display());
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert!(linux.stdout.ends_with("done\n"), "natively: {}", linux.stdout);
    for cpus in ["1", "2", "4"] {
        assert_same(&format!("go yardstick --cpus {cpus}"), &linux, &hrt(&["--cpus", cpus], &prog, &[]));
    }
}

/// An ELF without a PT_INTERP program header (type 3).
fn is_static(prog: &Path) -> bool {
    let elf = std::fs::read(prog).expect("reading the program");
    let phoff = u64::from_le_bytes(elf[32..40].try_into().unwrap()) as usize;
    let (phentsize, phnum) =
        (u16::from_le_bytes([elf[54], elf[55]]) as usize, u16::from_le_bytes([elf[56], elf[57]]) as usize);
    (0..phnum).all(|i| elf[phoff + i * phentsize..][..4] != 3u32.to_le_bytes())
}
