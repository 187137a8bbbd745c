//! Core files: a program that crashes under `hrt run` with a core limit above 0 leaves an ELF
//! core of its own memory and registers where the host's `core_pattern` says (checked here the
//! way `gdb` reads one: the markers the program wrote are at their addresses in the core's
//! segments, the registers name the crash, every thread has its registers), and none with a limit of 0; a forked child's
//! death shows the core-dump flag exactly where Linux shows it.

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::hostile::{build, run, Outcome};

/// The host's pattern when it names a file in the crashing process's directory (no `/`, no
/// pipe): the only kind these tests can find again. None (and a note) otherwise.
fn local_pattern() -> Option<String> {
    let pattern = std::fs::read_to_string("/proc/sys/kernel/core_pattern").ok()?;
    let pattern = pattern.trim_end().to_string();
    if pattern.is_empty() || pattern.starts_with('|') || pattern.contains('/') {
        eprintln!("core_pattern {pattern:?} names no file in the working directory: core files not checked");
        return None;
    }
    Some(pattern)
}

/// Runs `cmd` in `dir` with soft core limit `limit`, at most the hard one (which only a
/// process with CAP_SYS_RESOURCE could raise).
fn run_in(mut cmd: Command, dir: &Path, limit: u64) -> Outcome {
    cmd.current_dir(dir);
    // SAFETY: getrlimit and setrlimit are async-signal-safe; the child sets its own soft limit
    // within its hard one.
    unsafe {
        cmd.pre_exec(move || {
            let mut l = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            libc::getrlimit(libc::RLIMIT_CORE, &mut l);
            l.rlim_cur = limit.min(l.rlim_max);
            if libc::setrlimit(libc::RLIMIT_CORE, &l) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    run(cmd, None)
}

/// A fresh empty directory under target/.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/core-files").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating a directory for core files");
    dir
}

/// The one file a run left in its directory.
fn left_file(dir: &Path) -> Option<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).ok()?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    assert!(files.len() <= 1, "more than one file in {}: {files:?}", dir.display());
    files.pop()
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// An ELF core as gdb reads it: its program headers and notes.
struct Core {
    bytes: Vec<u8>,
    /// (type, offset, vaddr, filesz) of each program header.
    segments: Vec<(u32, u64, u64, u64)>,
}

impl Core {
    fn read(path: &Path) -> Core {
        let bytes = std::fs::read(path).expect("reading the core file");
        assert!(bytes.len() >= 64 && &bytes[..4] == b"\x7fELF", "{} is no ELF file", path.display());
        assert_eq!(u16_at(&bytes, 16), 4, "{} is not ET_CORE", path.display());
        let (phoff, phentsize, phnum) = (u64_at(&bytes, 32) as usize, u16_at(&bytes, 54) as usize, u16_at(&bytes, 56));
        let segments = (0..phnum as usize)
            .map(|i| {
                let h = phoff + i * phentsize;
                (u32_at(&bytes, h), u64_at(&bytes, h + 8), u64_at(&bytes, h + 16), u64_at(&bytes, h + 32))
            })
            .collect();
        Core { bytes, segments }
    }

    /// `len` bytes of the program's memory at `addr` (a hole past the file's end reads zero).
    fn memory(&self, addr: u64, len: usize) -> Option<Vec<u8>> {
        let &(_, off, vaddr, _) = self
            .segments
            .iter()
            .find(|&&(kind, _, vaddr, size)| kind == 1 && addr >= vaddr && addr + len as u64 <= vaddr + size)?;
        let at = (off + addr - vaddr) as usize;
        let mut out = vec![0u8; len];
        let have = self.bytes.len().saturating_sub(at).min(len);
        out[..have].copy_from_slice(&self.bytes[at..at + have]);
        Some(out)
    }

    /// The descriptors of the notes of type `kind`.
    fn notes(&self, kind: u32) -> Vec<Vec<u8>> {
        let mut found = Vec::new();
        for &(_, off, _, size) in self.segments.iter().filter(|s| s.0 == 4) {
            let (mut at, end) = (off as usize, (off + size) as usize);
            while at + 12 <= end {
                let (namesz, descsz, t) =
                    (u32_at(&self.bytes, at), u32_at(&self.bytes, at + 4), u32_at(&self.bytes, at + 8));
                let desc = at + 12 + (namesz as usize).next_multiple_of(4);
                if t == kind {
                    found.push(self.bytes[desc..desc + descsz as usize].to_vec());
                }
                at = desc + (descsz as usize).next_multiple_of(4);
            }
        }
        found
    }

    /// The first NT_PRSTATUS's (the ending thread's) signal and instruction pointer.
    fn signal_and_rip(&self) -> (u16, u64) {
        let status = self.notes(1);
        let s = status.first().expect("an NT_PRSTATUS");
        (u16_at(s, 12), u64_at(s, 112 + 16 * 8))
    }
}

/// The address the program printed after `label`.
fn printed_address(stdout: &str, label: &str) -> u64 {
    let line =
        stdout.lines().find_map(|l| l.strip_prefix(label)).unwrap_or_else(|| panic!("no {label:?} in {stdout:?}"));
    u64::from_str_radix(line.trim().trim_start_matches("0x"), 16).expect("an address")
}

/// Checks that `core` holds what the run printed and ended with (`who`: for messages).
fn check_core(who: &str, core: &Core, out: &Outcome, sig: u16) {
    for (label, marker) in [("global ", "global-marker-of-the-core-test"), ("heap ", "heap-marker-of-the-core-test")] {
        let addr = printed_address(&out.stdout, label);
        let got =
            core.memory(addr, marker.len()).unwrap_or_else(|| panic!("{who}: {addr:#x} in no segment of the core"));
        assert_eq!(String::from_utf8_lossy(&got), marker, "{who}: the {label}marker at {addr:#x}");
    }
    let (cursig, rip) = core.signal_and_rip();
    assert_eq!(cursig, sig, "{who}: NT_PRSTATUS's signal");
    assert!(rip != 0, "{who}: no instruction pointer in NT_PRSTATUS");
    assert_eq!(core.notes(6).len(), 1, "{who}: one NT_AUXV (gdb relocates a PIE program by it)");
}

#[test]
fn a_crash_leaves_a_core_file_of_the_programs_memory_and_registers() {
    if local_pattern().is_none() {
        return;
    }
    let prog = build("core_file", &["-static-pie"]);
    for (how, sig) in [("segv", 11u16), ("abort", 6), ("quit", 3), ("threads", 11)] {
        let dir = fresh_dir(&format!("native-{how}"));
        let mut cmd = Command::new(&prog);
        cmd.arg(how);
        let linux = run_in(cmd, &dir, libc::RLIM_INFINITY);
        let Some(file) = left_file(&dir) else {
            eprintln!("{how}: no core file natively (the host does not dump here): not checked");
            return;
        };
        let native_core = Core::read(&file);
        check_core(&format!("{how} natively"), &native_core, &linux, sig);

        let dir = fresh_dir(&format!("hrt-{how}"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
        cmd.args(["run", "--cpus", "2", "--"]).arg(&prog).arg(how);
        let got = run_in(cmd, &dir, libc::RLIM_INFINITY);
        assert_eq!(got.status.code(), Some(128 + sig as i32), "{how}: {got:?}");
        assert!(got.stderr.contains("(core dumped)"), "{how}: stderr {:?}", got.stderr);
        let file = left_file(&dir).unwrap_or_else(|| panic!("{how}: hrt left no core file; stderr {:?}", got.stderr));
        let core = Core::read(&file);
        check_core(&format!("{how} under hrt"), &core, &got, sig);
        // A thread's registers each (the ending thread's first): as many as natively.
        assert_eq!(core.notes(1).len(), native_core.notes(1).len(), "{how}: NT_PRSTATUS notes");
        if how == "threads" {
            assert_eq!(core.notes(1).len(), 3, "{how}: NT_PRSTATUS notes");
        }
        if how == "segv" || how == "threads" {
            // The instruction hrt's report names is the one the registers hold.
            let reported = got.stderr.split("instruction at ").nth(1).and_then(|s| s.split([':', ')']).next());
            let reported = reported.map(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("an address"));
            assert_eq!(reported, Some(core.signal_and_rip().1), "segv: stderr {:?}", got.stderr);
        }
    }
}

#[test]
fn no_core_file_where_the_limit_is_zero() {
    if local_pattern().is_none() {
        return;
    }
    let prog = build("core_file", &["-static-pie"]);
    let dir = fresh_dir("hrt-limit-0");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
    cmd.args(["run", "--cpus", "1", "--"]).arg(&prog).arg("segv");
    let got = run_in(cmd, &dir, 0);
    assert_eq!(got.status.code(), Some(139), "{got:?}");
    assert!(!got.stderr.contains("core dumped"), "stderr {:?}", got.stderr);
    assert_eq!(left_file(&dir), None, "a core file despite a limit of 0");
}

#[test]
fn a_forked_childs_crash_shows_the_core_flag_as_on_linux() {
    let prog = build("core_file", &[]);
    for limit in [0, libc::RLIM_INFINITY] {
        let dir = fresh_dir(&format!("native-fork-{limit}"));
        let mut cmd = Command::new(&prog);
        cmd.arg("fork");
        let linux = run_in(cmd, &dir, limit);
        let dir = fresh_dir(&format!("hrt-fork-{limit}"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
        cmd.args(["run", "--cpus", "1", "--"]).arg(&prog).arg("fork");
        let got = run_in(cmd, &dir, limit);
        common::hostile::assert_same(&format!("fork, core limit {limit}"), &linux, &got);
    }
}
