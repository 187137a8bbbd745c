//! Dynamically linked executables (gcc's default output) and PATH lookup: each program runs
//! natively and under `hrt run`, which loads its interpreter (ld.so) from the host; stdout and
//! exit status must match.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::hostile::{assert_same, build_dynamic, hrt_cmd, repo_root, run, Outcome};

fn program_source(name: &str) -> PathBuf {
    repo_root().join("tests/programs").join(format!("{name}.c"))
}

fn hostile_source(name: &str) -> PathBuf {
    repo_root().join("tests/programs/hostile").join(format!("{name}.c"))
}

/// A fresh, empty directory for one test, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("hrt-dynamic-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `prog args` natively and under `hrt run --cpus N`, both with `env` and in `dir`.
fn both(cpus: u32, prog: &Path, args: &[&str], env: &[(&str, &str)], dir: Option<&Path>) -> (Outcome, Outcome) {
    let setup = |cmd: &mut Command| {
        cmd.envs(env.iter().copied());
        if let Some(d) = dir {
            cmd.current_dir(d);
        }
    };
    let mut native = Command::new(prog);
    native.args(args);
    setup(&mut native);
    let mut hrt = hrt_cmd();
    hrt.args(["run", "--cpus", &cpus.to_string(), "--"]).arg(prog).args(args);
    setup(&mut hrt);
    (run(native, None), run(hrt, None))
}

/// The test programs of tests/programs, built by plain gcc (dynamic PIE), with 1 and 2 vCPUs.
fn check_program(name: &str, flags: &[&str], args: &[&str]) {
    check_build(name, name, flags, args)
}

/// As `check_program`, built into `dyn-OUT` with `flags`.
fn check_build(name: &str, out: &str, flags: &[&str], args: &[&str]) {
    let prog = build_dynamic(&program_source(name), out, flags);
    for cpus in [1, 2] {
        // Named by the build, not the source: `hello` and `hello_no_pie` run at once, and a
        // shared directory was removed under one by the other's end.
        let dir = TempDir::new(&format!("{out}-{cpus}"));
        let threads = cpus.to_string();
        let env = [("OMP_NUM_THREADS", threads.as_str()), ("HRT_TEST_VAR", "dynamic")];
        let (mut native, mut hrt) = both(cpus, &prog, args, &env, Some(&dir.0));
        // omp_get_num_procs: the host's CPUs natively, the vCPUs under hrt.
        for o in [&mut native, &mut hrt] {
            o.stdout =
                o.stdout.lines().filter(|l| !l.starts_with("omp_get_num_procs")).map(|l| format!("{l}\n")).collect();
        }
        assert_same(&format!("{name} (dynamic) --cpus {cpus}"), &native, &hrt);
    }
}

#[test]
fn hello() {
    check_program("hello", &[], &[]);
}

/// A dynamic program linked at a fixed address (ET_EXEC): placed at its link address, its
/// interpreter elsewhere.
#[test]
fn hello_no_pie() {
    check_build("hello", "hello-nopie", &["-no-pie"], &[]);
}

#[test]
fn args_env() {
    check_program("args_env", &[], &["one", "two words", "", "ünïcødé"]);
}

#[test]
fn files() {
    check_program("files", &[], &[]);
}

#[test]
fn pthreads() {
    check_program("pthreads", &[], &[]);
}

#[test]
fn openmp() {
    check_program("openmp", &["-fopenmp"], &[]);
}

#[test]
fn malloc_stress() {
    check_program("malloc_stress", &[], &[]);
}

/// A system program found in PATH: /usr/bin/ls (dynamic), on a directory only this test
/// touches, with `-la` (owners, sizes, times and ACL marks through the xattr calls).
#[test]
fn ls_la() {
    let dir = TempDir::new("ls");
    let d = dir.0.join("d");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("a.txt"), b"some bytes\n").unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    std::os::unix::fs::symlink("a.txt", d.join("link")).unwrap();
    let env = [("LC_ALL", "C")];
    let (native, hrt) = both(1, Path::new("ls"), &["-la", "d"], &env, Some(&dir.0));
    assert!(native.stdout.contains("a.txt") && native.stdout.contains("link -> a.txt"), "{native:?}");
    assert_same("ls -la", &native, &hrt);
}

/// `true` and `false` through PATH, and a shell running a builtin-only script.
#[test]
fn path_lookup_and_shell() {
    for prog in ["true", "false"] {
        let (native, hrt) = both(1, Path::new(prog), &[], &[], None);
        assert_same(prog, &native, &hrt);
    }
    let (native, hrt) = both(1, Path::new("sh"), &["-c", "echo hi; exit 3"], &[], None);
    assert_eq!(native.code(), 3);
    assert_same("sh -c", &native, &hrt);
}

/// PATH decides: the first directory holding an executable file of that name wins; a name
/// found nowhere is one `hrt:` line and status 127 (a shell's "command not found").
#[test]
fn path_order_and_not_found() {
    let dir = TempDir::new("path");
    let (first, second) = (dir.0.join("first"), dir.0.join("second"));
    std::fs::create_dir_all(&first).unwrap();
    std::fs::create_dir_all(&second).unwrap();
    let prog = build_dynamic(&program_source("exit_code"), "exit_code", &[]);
    // In `first`: a file of that name that is not executable (skipped, as execvp does).
    std::fs::write(first.join("hrt-exit-code"), b"not a program").unwrap();
    std::fs::copy(&prog, second.join("hrt-exit-code")).unwrap();
    let path = format!("{}:{}", first.display(), second.display());
    let got = run(
        {
            let mut c = hrt_cmd();
            c.args(["run", "--cpus", "1", "--", "hrt-exit-code", "42", "exit"]).env("PATH", &path);
            c
        },
        None,
    );
    assert_eq!(got.code(), 42, "{got:?}");
    let missing = run(
        {
            let mut c = hrt_cmd();
            c.args(["run", "--", "hrt-no-such-command"]).env("PATH", &path);
            c
        },
        None,
    );
    assert_eq!(missing.code(), 127, "{missing:?}");
    assert!(missing.stderr.starts_with("hrt: hrt-no-such-command") && missing.stderr.contains("PATH"), "{missing:?}");
}

/// /proc/self/maps of a dynamically linked program: ld.so's and libc's lines name their files
/// with their inodes, as the executable's (tests/programs/hostile/proc_maps.c).
#[test]
fn proc_maps_of_a_dynamic_program_names_its_libraries() {
    let prog = build_dynamic(&hostile_source("proc_maps"), "proc_maps", &[]);
    for cpus in [1, 2] {
        let (native, hrt) = both(cpus, &prog, &[], &[], None);
        assert!(native.stdout.contains("every file's inode is the file's: yes"), "natively: {native:?}");
        assert_same(&format!("proc_maps (dynamic) --cpus {cpus}"), &native, &hrt);
    }
}

/// A library found through LD_LIBRARY_PATH, and one put first by LD_PRELOAD, as on Linux;
/// without LD_LIBRARY_PATH both sides fail the same way (ld.so's message, status 127).
#[test]
fn ld_library_path_and_preload() {
    let lib = build_dynamic(&hostile_source("dyn_lib"), "lib/libdynlib.so", &["-shared", "-fPIC"]);
    let preload =
        build_dynamic(&hostile_source("dyn_lib"), "preload/libpreload.so", &["-shared", "-fPIC", "-DPRELOAD"]);
    let lib_dir = lib.parent().unwrap().to_str().unwrap().to_string();
    let prog = build_dynamic(&hostile_source("dyn_uselib"), "uselib", &["-L", &lib_dir, "-ldynlib"]);
    let (native, hrt) = both(1, &prog, &[], &[("LD_LIBRARY_PATH", &lib_dir)], None);
    assert_eq!((native.code(), native.stdout.as_str()), (42, "dyn_answer() = 42\n"));
    assert_same("LD_LIBRARY_PATH", &native, &hrt);

    let env = [("LD_LIBRARY_PATH", lib_dir.as_str()), ("LD_PRELOAD", preload.to_str().unwrap())];
    let (native, hrt) = both(2, &prog, &[], &env, None);
    assert_eq!(native.code(), 7, "{native:?}");
    assert_same("LD_PRELOAD", &native, &hrt);

    let (native, hrt) = both(1, &prog, &[], &[("LD_LIBRARY_PATH", "/nonexistent")], None);
    assert_eq!(native.code(), 127);
    assert_same("library not found", &native, &hrt);
    assert!(hrt.stderr.contains("libdynlib.so"), "{hrt:?}");
}

/// LD_PRELOAD and LD_AUDIT are for the program only: `hrt` is a static executable, so a library
/// they name is loaded once, by the program's ld.so, as on Linux (each process that loads
/// tests/programs/hostile/dyn_announce.c prints its lines once), and not at all when the program
/// is static. A dynamic `hrt` would load it too and print it twice.
#[test]
fn ld_variables_reach_only_the_program() {
    let lib = build_dynamic(&hostile_source("dyn_announce"), "announce/libannounce.so", &["-shared", "-fPIC"]);
    let lib = lib.to_str().unwrap();
    let dynamic = build_dynamic(&program_source("hello"), "hello", &[]);
    let fixed = build_dynamic(&program_source("hello"), "hello-static", &["-static"]);
    let count = |o: &Outcome, line: &str| o.stderr.lines().filter(|l| *l == line).count();
    let ctor = "dyn_announce: constructor ran";
    let audit = "dyn_announce: la_version ran";
    for (var, lines) in [("LD_PRELOAD", &[ctor][..]), ("LD_AUDIT", &[ctor, audit][..])] {
        let (native, hrt) = both(1, &dynamic, &[], &[(var, lib)], None);
        assert_same(var, &native, &hrt);
        for line in lines {
            assert_eq!(count(&native, line), 1, "{var}: natively {native:?}");
            assert_eq!(count(&hrt, line), 1, "{var}: `hrt run` of a dynamic program: {hrt:?}");
        }
        let (native, hrt) = both(1, &fixed, &[], &[(var, lib)], None);
        assert_same(&format!("{var}, static program"), &native, &hrt);
        assert!(!hrt.stderr.contains("dyn_announce"), "{var}: `hrt` itself loaded the library: {hrt:?}");
    }
}

/// An interpreter that does not exist: refused before the VM starts, naming it, with status
/// 127 (as a shell reports execve's ENOENT).
#[test]
fn missing_interpreter() {
    let prog = build_dynamic(
        &program_source("hello"),
        "hello-badinterp",
        &["-Wl,--dynamic-linker=/nonexistent/ld-hrt-test.so"],
    );
    let mut c = hrt_cmd();
    c.args(["run", "--"]).arg(&prog);
    let got = run(c, None);
    assert_eq!(got.code(), 127, "{got:?}");
    assert!(got.stderr.starts_with("hrt: ") && got.stderr.contains("/nonexistent/ld-hrt-test.so"), "{got:?}");
}

/// python3 (if installed): a script's output, its exit status, and an uncaught exception.
#[test]
fn python3() {
    let python = Path::new("/usr/bin/python3");
    if !python.exists() {
        eprintln!("no /usr/bin/python3: skipped");
        return;
    }
    let script = "import json, math, sys\nprint(json.dumps({'pi': math.pi, 'n': 6 * 7}))\nsys.exit(5)";
    let (native, hrt) = both(2, python, &["-c", script], &[], None);
    assert_eq!(native.code(), 5);
    assert_same("python3 script", &native, &hrt);
    let (native, hrt) = both(1, python, &["-c", "print('before'); 1/0"], &[], None);
    assert_same("python3 exception", &native, &hrt);
    assert!(hrt.stderr.contains("ZeroDivisionError"), "{hrt:?}");
}

/// The file mappings ld.so makes, one by one (tests/programs/hostile/dyn_mmap.c): the same
/// answers as on Linux, with 1 and 2 vCPUs.
#[test]
fn file_mappings_as_ld_so_makes_them() {
    let prog = build_dynamic(&hostile_source("dyn_mmap"), "mmap", &[]);
    for cpus in [1, 2] {
        let (native, hrt) = both(cpus, &prog, &[], &[], None);
        assert!(native.stdout.contains("code from the file returns 42"), "{native:?}");
        assert_same(&format!("dyn_mmap --cpus {cpus}"), &native, &hrt);
    }
}

/// Everyday tools from PATH give Linux's output and stderr (before fadvise64 and mincore
/// existed, each printed an ENOSYS line): `cat`, `sort`, `md5sum` advise on the file, `grep`
/// probes its stack with mincore.
#[test]
fn coreutils() {
    let dir = TempDir::new("coreutils");
    let text: String =
        (0..2000).map(|i| format!("line {} {}\n", (i * 7919) % 2000, if i % 3 == 0 { "hrt" } else { "x" })).collect();
    std::fs::write(dir.0.join("t.txt"), text).unwrap();
    let cases: [&[&str]; 5] = [
        &["cat", "t.txt"],
        &["sort", "t.txt"],
        &["md5sum", "t.txt"],
        &["grep", "-c", "hrt", "t.txt"],
        &["wc", "t.txt"],
    ];
    for case in cases {
        let (native, hrt) = both(1, Path::new(case[0]), &case[1..], &[("LC_ALL", "C")], Some(&dir.0));
        assert_same(&case.join(" "), &native, &hrt);
        assert_eq!(native.stderr, hrt.stderr, "{}: stderr differs", case.join(" "));
    }
}

/// Coreutils' `cat FILE > OUT` and `cp FILE OUT` (both copy with copy_file_range first; they
/// fell back to read/write when it answered ENOSYS): a multi-line file and a 10 MiB one arrive
/// byte for byte as natively, and `--strace` shows the copies forwarded.
#[test]
fn cat_and_cp_copy_with_copy_file_range() {
    let dir = TempDir::new("copy");
    let lines: String = (0..2000).map(|i| format!("line {i}: {}\n", "x".repeat(i % 50))).collect();
    std::fs::write(dir.0.join("lines.txt"), &lines).unwrap();
    // 10 MiB that no run could produce by accident (a simple xorshift stream).
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let big: Vec<u8> = (0..10 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(dir.0.join("big.bin"), &big).unwrap();
    for name in ["lines.txt", "big.bin"] {
        let src = dir.0.join(name);
        let want = std::fs::read(&src).unwrap();
        for (tool, how) in [("cat", "native"), ("cat", "hrt"), ("cp", "native"), ("cp", "hrt")] {
            let out = dir.0.join(format!("{name}.{tool}.{how}"));
            // Not `run`: cat's standard output is the file (its copy_file_range needs one), so
            // `timeout` bounds the run instead (with the process group it makes).
            let mut cmd = Command::new("timeout");
            cmd.args(["-s", "KILL", "300"]);
            if how == "native" {
                cmd.arg(tool);
            } else {
                cmd.arg(env!("CARGO_BIN_EXE_hrt")).args(["run", "--cpus", "1", "--strace", "--", tool]);
            }
            cmd.arg(&src).stderr(std::process::Stdio::piped());
            if tool == "cat" {
                cmd.stdout(std::fs::File::create(&out).unwrap());
            } else {
                cmd.arg(&out);
            }
            let done = cmd.output().unwrap();
            let stderr = String::from_utf8_lossy(&done.stderr);
            assert!(done.status.success(), "{tool} {name} ({how}): {:?}\n{stderr}", done.status);
            assert!(std::fs::read(&out).unwrap() == want, "{tool} {name} ({how}): the copy differs");
            if how == "hrt" {
                let copied = stderr.lines().any(|l| l.contains("copy_file_range(") && !l.contains("errno"));
                assert!(copied, "{tool} {name}: no forwarded copy_file_range:\n{stderr}");
            }
        }
    }
}
