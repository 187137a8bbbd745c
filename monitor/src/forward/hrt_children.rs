//! `--children hrt`: a spawn child's `execve` starts `hrt run [the parent's options] --as-child
//! --argv0=NAME -- PATH ARGS` instead of PATH, so the program it execs is an HRT process of its
//! own (a new VM), with the descriptors, directory, signal state and environment the host
//! program would get (procs.rs prepares those as in host mode). The executable is the
//! monitor's own: the new process, between its clone and its exec, still is the monitor, and
//! execs `/proc/self/exe`, the file this monitor was started from (even if its path has been
//! replaced or removed since); the program has no say in it.
//!
//! What Linux's `execve` refuses is refused here too, with its errno, before `hrt` starts:
//! a file without execute permission (EACCES), a file neither ELF nor `#!` script (ENOEXEC:
//! a shell then runs it as a shell script itself), a script whose interpreter does not exist
//! or may not be executed (its errno). What Linux runs and `hrt` cannot (a 32-bit program, a
//! script whose interpreter is a script) is left to the child `hrt`, which says why on stderr
//! and exits with 126, as a shell reports a command it cannot run.

use std::ffi::{CStr, CString};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::OnceLock;

use super::errno::{Errno, SysResult};

/// The command a child runs under (`hrt run OPTIONS --as-child`); unset: `--children host`.
static LAUNCHER: OnceLock<Vec<CString>> = OnceLock::new();

/// The monitor's own executable, as the new process (still the monitor) names it.
const SELF_EXE: &CStr = c"/proc/self/exe";

/// `--children hrt`: from now on a spawn child's exec runs `command` (set once, at start-up),
/// and gets the descriptor `kvm` (this `hrt`'s /dev/kvm, which lives as long as it) as
/// `--kvm-fd`.
pub fn run_children_as_hrt(command: Vec<CString>, kvm: i32) {
    let _ = LAUNCHER.set(command);
    KVM.store(kvm, std::sync::atomic::Ordering::Relaxed);
}

/// This `hrt`'s /dev/kvm descriptor with `--children hrt` (-1: none).
static KVM: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// The descriptor a spawn child's `hrt` gets its parent's /dev/kvm through (`--kvm-fd`).
pub(super) fn kvm_descriptor() -> Option<i32> {
    Some(KVM.load(std::sync::atomic::Ordering::Relaxed)).filter(|&fd| fd >= 0 && !host_mode())
}

/// Whether child processes run as host programs (`--children host`).
pub(super) fn host_mode() -> bool {
    LAUNCHER.get().is_none()
}

/// The file to exec and its argv for a child that execs `path` (the host path the checked walk
/// reached) with `argv`; `name`: the path as the program gave it (a script's interpreter gets
/// it, as Linux passes the exec's path); `execfn`: the file name Linux gives the new program
/// (AT_EXECFN, from which its command name comes too). `by_fd`: an fexecve of the program's descriptor
/// (its number, the monitor's copy, and whether it is placed for the exec only, being
/// close-on-exec): the child `hrt` reads the program from `/dev/fd/N` (AT_EXECFN, as on
/// Linux), and closes a placed one once it has (`--close-fd`); a memory file has no path
/// to start it by. `kvm_at`: the number the parent's /dev/kvm has in the new process
/// (`--kvm-fd`). Unchanged in host mode.
pub(super) fn command(
    path: &CStr,
    argv: &[CString],
    (name, execfn): (&CStr, &CStr),
    by_fd: Option<(i32, i32, bool)>,
    kvm_at: Option<i32>,
) -> SysResult<(CString, Vec<CString>)> {
    let Some(launcher) = LAUNCHER.get() else { return Ok((path.to_owned(), argv.to_vec())) };
    let own_copy = by_fd.map(|(_, copy, _)| CString::new(format!("/proc/self/fd/{copy}")).unwrap_or_default());
    let checked = own_copy.as_deref().unwrap_or(path);
    check_executable(checked)?;
    let argv0 = match kind(checked)? {
        Kind::Script => name.to_owned(),
        // An empty argv: Linux gives the program an empty argv[0].
        Kind::Elf | Kind::Unreadable => argv.first().cloned().unwrap_or_default(),
    };
    let mut out = launcher.clone();
    let mut flag = b"--argv0=".to_vec();
    flag.extend_from_slice(argv0.as_bytes());
    out.push(CString::new(flag).map_err(|_| Errno::EINVAL)?);
    let mut flag = b"--execfn=".to_vec();
    flag.extend_from_slice(execfn.to_bytes());
    out.push(CString::new(flag).map_err(|_| Errno::EINVAL)?);
    if let Some(n) = kvm_at {
        out.push(CString::new(format!("--kvm-fd={n}")).map_err(|_| Errno::EINVAL)?);
    }
    let path = match by_fd {
        Some((n, _, placed)) => {
            out.push(c"--fexecve".to_owned());
            if placed {
                out.push(CString::new(format!("--close-fd={n}")).map_err(|_| Errno::EINVAL)?);
            }
            CString::new(format!("/dev/fd/{n}")).map_err(|_| Errno::EINVAL)?
        }
        None => path.to_owned(),
    };
    out.push(c"--".to_owned());
    out.push(path);
    out.extend(argv.iter().skip(1).cloned());
    Ok((SELF_EXE.to_owned(), out))
}

/// EACCES (or the access check's error) unless the caller may execute `path`, as execve checks.
fn check_executable(path: &CStr) -> SysResult<()> {
    // SAFETY: a C string; faccessat reads it only.
    if unsafe { libc::faccessat(libc::AT_FDCWD, path.as_ptr(), libc::X_OK, libc::AT_EACCESS) } != 0 {
        return Err(Errno::last());
    }
    Ok(())
}

enum Kind {
    Elf,
    Script,
    /// Not readable by the caller (execute-only): `hrt` reads the program, so it says why.
    Unreadable,
}

/// Whether Linux's ELF loaders refuse a file that starts with the ELF magic (`head`: its
/// first bytes, at most 256) before they read more (ENOEXEC): a 64-bit file must be an x86-64
/// executable or shared object with program headers of the 64-bit size, a 32-bit one an i386
/// file (which Linux runs and the child `hrt` refuses with a line). A file too short for the
/// header reads as zeros there, as Linux's buffer does. (`hrt` started it, and its child exited
/// 126 where the exec should have failed.)
fn elf_refused(head: &[u8]) -> bool {
    let byte = |at: usize| head.get(at).copied().unwrap_or(0);
    let half = |at: usize| u16::from_le_bytes([byte(at), byte(at + 1)]);
    const ET_EXEC: u16 = 2;
    const ET_DYN: u16 = 3;
    const EM_386: u16 = 3;
    const EM_X86_64: u16 = 62;
    if ![ET_EXEC, ET_DYN].contains(&half(16)) {
        return true;
    }
    match byte(4) {
        // ELFCLASS64: e_phentsize (54) is 56, e_phnum (56) 1 to 65,536 bytes of headers.
        2 => half(18) != EM_X86_64 || half(54) != 56 || !(1..=(65_536 / 56) as u16).contains(&half(56)),
        // ELFCLASS32: the i386 loader's own checks are the child's to meet.
        1 => half(18) != EM_386,
        _ => true,
    }
}

/// What the file is, by its first bytes, as Linux's binfmt handlers look (ENOEXEC: neither).
fn kind(path: &CStr) -> SysResult<Kind> {
    let p = std::path::Path::new(std::ffi::OsStr::from_bytes(path.to_bytes()));
    let Ok(file) = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(p) else {
        return Ok(Kind::Unreadable);
    };
    let mut head = Vec::with_capacity(256);
    if file.take(256).read_to_end(&mut head).is_err() {
        return Ok(Kind::Unreadable);
    }
    if head.starts_with(b"\x7fELF") {
        return if elf_refused(&head) { Err(Errno::ENOEXEC) } else { Ok(Kind::Elf) };
    }
    if !head.starts_with(b"#!") {
        return Err(Errno::ENOEXEC);
    }
    // A line `hrt` cannot parse is its to report; a missing interpreter is execve's ENOENT.
    if let Ok(Some(interp)) = crate::script::parse("", &head) {
        let interp = CString::new(interp.path).map_err(|_| Errno::ENOEXEC)?;
        check_executable(&interp)?;
    }
    Ok(Kind::Script)
}
