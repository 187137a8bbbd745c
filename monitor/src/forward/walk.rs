//! Path resolution that keeps the program out of the monitor's own /proc entries.
//!
//! The monitor is the program's host process: `/proc/<monitor pid>` (and `/proc/<tid>` for each
//! of its threads) hold its memory (`mem`), descriptors (`fd/`, KVM's among them), environment,
//! maps and so on. So do the directories of every other `hrt` process the program can name: the
//! helper that holds this VM until the end (vm/late_teardown.rs, which shares this monitor's
//! memory), and the monitors of its forked children, of the process it was forked from, and of
//! the programs it runs under `hrt` (`monitor_of`). Matching path *text* cannot keep the program out (`openat(fd of "/",
//! "proc/self/mem")`, `/proc/self/cwd/proc/self/mem`, symbolic links, a vCPU thread's id...), so
//! every path is walked here one component at a time with `O_PATH | O_NOFOLLOW` descriptors, and
//! each lookup is judged by the *directory object* it happens in:
//!
//! - a directory on procfs that is one of the monitor's process or thread directories
//!   (`/proc/<pid>`, `/proc/<tid>`, `/proc/<pid>/task/<tid>`) allows only the harmless entries of
//!   [`HARMLESS`] (and, in this monitor's own, [`OWN_HARMLESS`]); anything else is EACCES. The
//!   directory itself may be the final object (`ps` stats `/proc/<its pid>`; a descriptor of it
//!   is judged again at each lookup through it);
//! - symbolic links outside procfs and procfs's own (`self`, `thread-self`, `mounts`, `net`) are
//!   followed here, as text; the "magic" links inside other processes' directories
//!   (`/proc/<other>/cwd`, `fd/N`) are followed by the kernel, and where they land is checked.
//!
//! The walk ends with a directory descriptor and one last name; the forwarded call is then made
//! relative to that descriptor, with O_NOFOLLOW / AT_SYMLINK_NOFOLLOW where the last name was
//! found not to be a link (see [`Resolved::nofollow`]), so a link swapped in by another program
//! thread after the check is not followed.

use std::collections::VecDeque;
use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use super::errno::{Errno, SysResult};

/// Linux's limit on symbolic links followed in one lookup.
const MAX_LINKS: u32 = 40;

/// Entries of any monitor's /proc directories the program may look up, this one's or another's
/// (`Monitor::Another`): the namespaces (mounts, network, cgroup, `ns/`), and what `ps` and
/// process managers read of a process (its command line, state, counters, limits, OOM score and
/// adjustment, which redis writes, audit ids, timer slack). Another monitor's are its real
/// files; this one's `cmdline`, `status`, `comm`, `stat`, `statm` and `limits` are answered
/// with the program's own contents when opened (see synthetic.rs).
const HARMLESS: &[&[u8]] = &[
    b"net",
    b"mounts",
    b"mountinfo",
    b"mountstats",
    b"cgroup",
    b"cpuset",
    b"ns",
    b"cmdline",
    b"status",
    b"comm",
    b"stat",
    b"statm",
    b"limits",
    b"io",
    b"oom_score_adj",
    b"oom_adj",
    b"oom_score",
    b"loginuid",
    b"sessionid",
    b"timerslack_ns",
];

/// Entries of this monitor's own /proc directories only, besides `HARMLESS`: the program's own
/// environment, auxiliary vector and maps (synthesized), the core-dump filter and the user
/// namespace's maps of the process that is the program's. Not another monitor's: its layout,
/// and a core of it would hold its memory.
const OWN_HARMLESS: &[&[u8]] =
    &[b"maps", b"environ", b"auxv", b"coredump_filter", b"setgroups", b"uid_map", b"gid_map", b"projid_map"];

/// Whose /proc directory a process or thread id names.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Monitor {
    /// This monitor's (its pid or one of its threads).
    This,
    /// Another `hrt` process's (`monitor_of`).
    Another,
}

impl Monitor {
    /// The entry `name` of such a directory that the program may look up, if it may.
    fn allows(self, name: &[u8]) -> Option<&'static [u8]> {
        let own = if self == Monitor::This { OWN_HARMLESS } else { &[] };
        HARMLESS.iter().chain(own).find(|h| **h == name).copied()
    }
}

/// Plain directories (not links) of a /proc process directory: `X/..` is the process directory
/// itself, as `/proc/self/` is (`ls -la /proc/self/fd/` stats `..`). Not `task`, whose
/// entries' `..` (`task/<tid>/..`) is the list of the monitor's threads.
const PLAIN_SUBDIRS: &[&[u8]] = &[b"fd", b"fdinfo", b"attr", b"map_files", b"net", b"ns"];

/// Entries of the monitor's /proc directories that the forwarder synthesizes for the program.
pub const SYNTHESIZED: &[&[u8]] = &[
    b"cmdline",
    b"status",
    b"comm",
    b"maps",
    b"smaps",
    b"smaps_rollup",
    b"stat",
    b"statm",
    b"limits",
    b"environ",
    b"auxv",
];

/// Where a walk ended.
pub enum Resolved {
    /// `name` in directory `dir` (an O_PATH descriptor, or AT_FDCWD's stand-in when `dir` is None).
    /// `nofollow`: the name was looked up and is not a symbolic link (or does not exist yet): the
    /// call must not follow one found there later.
    /// `unlooked`: the name was not looked at (see [`Opts::call_reports_link`]); `nofollow` is
    /// then set, and a call that finds a link there must walk again with the option off.
    At { dir: Option<OwnedFd>, raw_dir: i32, name: CString, nofollow: bool, unlooked: bool },
    /// An object reached through a magic link (another process's `/proc/<pid>/cwd`, `fd/N`):
    /// the call names it as `/proc/self/fd/<fd>`.
    Object(OwnedFd),
    /// One of [`SYNTHESIZED`] in the monitor's own /proc directory.
    Own(&'static [u8]),
    /// A symbolic link on the way leads into /proc or /dev, whose names mean the program's
    /// (`/proc/self/fd/N`, `/proc/self/cwd`, `/dev/stdin`, the VM's `/proc/cpuinfo`), not the
    /// monitor's: the rest of the lookup is this absolute path, read as if the program had
    /// given it (the caller resolves it again), after `links` links.
    Again { path: Vec<u8>, links: u32 },
}

fn cstr(v: &[u8]) -> SysResult<CString> {
    CString::new(v).map_err(|_| Errno::EINVAL)
}

/// openat(dir, name, O_PATH | extra), restarted after EINTR.
fn open_path(dir: i32, name: &CStr, extra: libc::c_int) -> SysResult<OwnedFd> {
    loop {
        // SAFETY: a C string and plain flags; the result is a fresh descriptor we own.
        let fd = unsafe { libc::openat(dir, name.as_ptr(), libc::O_PATH | libc::O_CLOEXEC | extra) };
        if fd >= 0 {
            // SAFETY: `fd` was just opened and is owned by nobody else.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        match Errno::last() {
            Errno::EINTR => continue,
            e => return Err(e),
        }
    }
}

fn is_link(fd: &OwnedFd) -> SysResult<bool> {
    // SAFETY: fstat writes the struct we pass; O_PATH descriptors allow fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } < 0 {
        return Err(Errno::last());
    }
    Ok(st.st_mode & libc::S_IFMT == libc::S_IFLNK)
}

/// Whether host descriptor `fd` (or the working directory, for AT_FDCWD) is on procfs.
pub(super) fn on_procfs(fd: i32) -> bool {
    // SAFETY: statfs is plain data written by the call.
    let mut sf: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a descriptor and a struct we own; "." for AT_FDCWD.
    let r = unsafe {
        if fd == libc::AT_FDCWD {
            libc::statfs(c".".as_ptr(), &mut sf)
        } else {
            libc::fstatfs(fd, &mut sf)
        }
    };
    r == 0 && sf.f_type == libc::PROC_SUPER_MAGIC
}

/// The path of what host descriptor `fd` refers to (AT_FDCWD: the working directory).
fn fd_text(fd: i32) -> Option<Vec<u8>> {
    let p = if fd == libc::AT_FDCWD {
        std::env::current_dir().ok()?
    } else {
        std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?
    };
    Some(p.as_os_str().as_bytes().to_vec())
}

fn number(c: &[u8]) -> Option<u32> {
    if c.is_empty() || c.len() > 9 || !c.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(c).ok()?.parse().ok()
}

/// Whether `n` is the monitor's pid or one of its thread ids (threads come and go: asked each time).
pub fn is_ours(n: u32) -> bool {
    n == std::process::id() || std::path::Path::new(&format!("/proc/self/task/{n}")).exists()
}

/// Whether process or thread id `n` is this monitor's, another `hrt` process's, or neither.
/// Another is one that runs this monitor's executable: the helper holding the VM (a clone of
/// this process), the monitors of forked children and of the process this one was forked from
/// (copies of it), and those of programs run under `hrt` (`--children hrt`). A program with
/// one of them as its child or parent reached its memory, descriptors (/dev/kvm) and
/// environment through /proc before (`/proc/<pid>/mem` opened read-write: code written into
/// the other monitor). The executable is compared by device and inode (`/proc/<n>/exe`, which
/// the host shows only to a process allowed to look at the other).
pub fn monitor_of(n: u32) -> Option<Monitor> {
    if is_ours(n) {
        return Some(Monitor::This);
    }
    static OWN_EXE: std::sync::OnceLock<Option<(u64, u64)>> = std::sync::OnceLock::new();
    let exe_of = |path: &CStr| {
        // SAFETY: stat writes the struct we pass; a NUL-terminated path.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        (unsafe { libc::stat(path.as_ptr(), &mut st) } == 0).then_some((st.st_dev, st.st_ino))
    };
    let own = (*OWN_EXE.get_or_init(|| exe_of(c"/proc/self/exe")))?;
    let path = CString::new(format!("/proc/{n}/exe")).ok()?;
    (exe_of(&path) == Some(own)).then_some(Monitor::Another)
}

/// Where a procfs path (as /proc/self/fd shows it) lies relative to the monitors' directories.
#[derive(PartialEq, Eq, Debug)]
enum Place {
    Elsewhere,
    /// A process or thread directory of a monitor (this one or another).
    OwnDir(Monitor),
    /// Inside one, below entry `first`.
    Below(Monitor, Vec<u8>),
}

fn place(text: &[u8]) -> Place {
    let comps: Vec<&[u8]> = text.split(|&b| b == b'/').filter(|c| !c.is_empty()).collect();
    for (i, c) in comps.iter().enumerate() {
        let Some(m) = number(c).and_then(monitor_of) else { continue };
        let rest = &comps[i + 1..];
        let task = |t: &[u8]| number(t).and_then(monitor_of).is_some();
        return match rest {
            [] => Place::OwnDir(m),
            [b"task", t] if task(t) => Place::OwnDir(m),
            [b"task", t, first, ..] if task(t) => Place::Below(m, first.to_vec()),
            [first, ..] => Place::Below(m, first.to_vec()),
        };
    }
    Place::Elsewhere
}

/// Whether directory `dir` has an entry `name` (a look that does not follow it; an error other
/// than ENOENT counts as there).
fn entry_exists(dir: i32, name: &[u8]) -> bool {
    let Ok(n) = std::ffi::CString::new(name) else { return false };
    // SAFETY: `st` is written by fstatat; `n` is a NUL-terminated name.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstatat(dir, n.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) == 0
            || std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOENT)
    }
}

/// Whose /proc process or thread directory `dir` is, if a monitor's.
fn monitor_dir(dir: i32) -> Option<Monitor> {
    if !on_procfs(dir) {
        return None;
    }
    match fd_text(dir).map(|t| place(&t)) {
        Some(Place::OwnDir(m)) => Some(m),
        _ => None,
    }
}

/// Checks an object reached through a procfs magic link.
fn check_landing(fd: &OwnedFd) -> SysResult<()> {
    if !on_procfs(fd.as_raw_fd()) {
        return Ok(());
    }
    match fd_text(fd.as_raw_fd()).map(|t| place(&t)) {
        Some(Place::Elsewhere) => Ok(()),
        Some(Place::Below(m, first)) if m.allows(&first).is_some() => Ok(()),
        _ => Err(Errno::EACCES),
    }
}

/// What a caller knows or can do that spares the walk host calls.
#[derive(Clone, Copy, Default)]
pub struct Opts {
    /// Whether `start` is on procfs, if the caller knows (a descriptor's filesystem never
    /// changes; `None`: asked with `fstatfs`).
    pub start_on_procfs: Option<bool>,
    /// The call reports what it found at the last name (the stat family: its mode), so for a
    /// call that follows links the common case needs no look at that name first: the call is
    /// made without following, and walked again (without this option) if it finds a link.
    pub call_reports_link: bool,
    /// The call acts on the last name itself, as a directory entry (unlink, rmdir, rename,
    /// mkdir, mknod, the new name of symlink and link): Linux looks up only the directory
    /// part, so a trailing slash does not follow a link there (`rmdir link/` is ENOTDIR, it
    /// never removes the link's target) and a final `.` or `..` stays the last name, for the
    /// host call to refuse as Linux does (`rmdir d/.`: EINVAL, `rename d/. x`: EBUSY).
    pub entry: bool,
}

/// Resolves `path` relative to host directory `start` for a call that only looks at the last
/// object's metadata (the stat family, readlink, the xattr reads): that last name may be any
/// entry of the monitor's own directories (`ls -la /proc/self` stats `fd`, `task`, `environ`
/// ...: procfs entries whose mode, owner and times say nothing of the monitor), and `..` may
/// end a path there when the parent is not the monitor's. What is reached *through* such an
/// entry is judged as in [`resolve`].
#[cfg(test)]
pub fn resolve_to_inspect(start: i32, path: &[u8], follow: bool) -> SysResult<Resolved> {
    resolve_in(start, path, follow, true, Opts::default())
}

/// [`resolve`] (`inspect` false) or [`resolve_to_inspect`] (true), with what the caller knows.
pub fn resolve_with(start: i32, path: &[u8], follow: bool, inspect: bool, opts: Opts) -> SysResult<Resolved> {
    resolve_in(start, path, follow, inspect, opts)
}

/// Resolves `path` relative to host directory `start` (AT_FDCWD for the working directory).
/// `follow`: a symbolic link as the last component is followed (stat, open) or not (lstat,
/// unlink, readlink). Errors are those Linux gives for the same lookup (ENOENT, ENOTDIR, EACCES,
/// ELOOP), plus EACCES for anything in the monitor's own /proc directories.
#[cfg(test)]
pub fn resolve(start: i32, path: &[u8], follow: bool) -> SysResult<Resolved> {
    resolve_in(start, path, follow, false, Opts::default())
}

fn resolve_in(start: i32, path: &[u8], follow: bool, inspect: bool, opts: Opts) -> SysResult<Resolved> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    if let Some(resolved) = within_one_mount(start, path, follow, opts) {
        return Ok(resolved);
    }
    // A path ending in "." ends at a directory, as one ending in "/" does: a link before it
    // is followed ("/proc/self/." is the process's directory, not the link "self"). A call on
    // a directory entry keeps a final "." as its last name instead (`Opts::entry`).
    let trimmed = &path[..path.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1)];
    let final_dot = opts.entry && (trimmed == b"." || trimmed.ends_with(b"/."));
    let ends_in_dot = !opts.entry && (path.ends_with(b"/.") || path == b".");
    let mut trailing_slash = path.ends_with(b"/") || ends_in_dot;
    // The last name must exist: it is followed by "." (in the path, or in the body of a link
    // that the walk follows last), so Linux walks it as a directory on the way, and a missing
    // one is ENOENT, never a name to create (`creat("g")` with g -> "a/x/." made the file a/x).
    let mut must_exist = ends_in_dot;
    let mut queue: VecDeque<Vec<u8>> = VecDeque::new();
    push_front(&mut queue, path);
    if final_dot {
        queue.push_back(b".".to_vec());
    }
    let mut cur: Option<OwnedFd> = None;
    let mut raw = start;
    if path.starts_with(b"/") {
        let root = open_path(libc::AT_FDCWD, c"/", 0)?;
        raw = root.as_raw_fd();
        cur = Some(root);
    }
    let mut links = 0;
    loop {
        let whose = monitor_dir(raw);
        let own = whose.is_some();
        let Some(c) = queue.pop_front() else {
            // The path ends at a directory ("/", "a/.", "a/..").
            return Ok(Resolved::At { dir: cur, raw_dir: raw, name: c".".to_owned(), nofollow: true, unlooked: false });
        };
        let last = queue.is_empty();
        if own && PLAIN_SUBDIRS.contains(&c.as_slice()) && queue.front().is_some_and(|n| n == b"..") {
            // Into a plain subdirectory and out again: still the process directory.
            queue.pop_front();
            continue;
        }
        if let (Some(m), false) = (whose, c.as_slice() == b"..") {
            match m.allows(&c) {
                // This monitor's: the program's own contents. Another's: its real file.
                Some(h) if last && m == Monitor::This && SYNTHESIZED.contains(&h) => return Ok(Resolved::Own(h)),
                Some(_) => {}
                None if last && inspect => {}
                // A call on a directory entry there (mkdir, unlink, rename, link's new name
                // ...) is refused by procfs itself whatever the entry (no process directory
                // creates, removes or renames anything): the host answers, as Linux does
                // (EEXIST, EPERM, EXDEV...), and nothing of the monitor is reached.
                None if last && opts.entry => {}
                // A name procfs has in no process directory: ENOENT, as Linux answers
                // (`touch /proc/self/x`); which names exist is the same for every process,
                // so the answer tells nothing of the monitor's.
                None if !entry_exists(raw, &c) => return Err(Errno::ENOENT),
                None => {
                    // Refused loudly: a program that reads its page map (LTP mmap12) learns why.
                    let name = String::from_utf8_lossy(&c);
                    super::sockets::report_once(format!(
                        "/proc/<pid>/{name} of an hrt process is not offered (it is the monitor's \
                         own, not the program's): EACCES"
                    ));
                    return Err(Errno::EACCES);
                }
            }
        }
        let name = cstr(&c)?;
        if c.as_slice() == b"." {
            // "." names the directory before it: a file there (a link to one followed, "l/."
            // with l -> file) is ENOTDIR, as Linux answers, before any host call sees ".".
            if cur.is_some() && !is_directory(raw) {
                return Err(Errno::ENOTDIR);
            }
            // Only a final "." of a call on a directory entry is kept (`final_dot`).
            return Ok(Resolved::At { dir: cur, raw_dir: raw, name, nofollow: true, unlooked: false });
        }
        if c.as_slice() == b".." {
            if last {
                if own {
                    if !inspect {
                        return Err(Errno::EACCES);
                    }
                    // The parent, if it is not the monitor's (`/proc`, not `/proc/<pid>/task`).
                    let up = open_path(raw, &name, 0)?;
                    check_landing(&up)?;
                    let raw_dir = up.as_raw_fd();
                    return Ok(Resolved::At {
                        dir: Some(up),
                        raw_dir,
                        name: c".".to_owned(),
                        nofollow: true,
                        unlooked: false,
                    });
                }
                return Ok(Resolved::At { dir: cur, raw_dir: raw, name, nofollow: true, unlooked: false });
            }
            let up = open_path(raw, &name, 0)?;
            raw = up.as_raw_fd();
            cur = Some(up);
            continue;
        }
        let next = match open_path(raw, &name, libc::O_NOFOLLOW) {
            Ok(f) => f,
            // A name to be created (open O_CREAT, mkdir, rename's target...).
            Err(Errno::ENOENT) if last && !must_exist => {
                let name = if trailing_slash { cstr(&[&c[..], b"/"].concat())? } else { name };
                return Ok(Resolved::At { dir: cur, raw_dir: raw, name, nofollow: true, unlooked: false });
            }
            Err(e) => return Err(e),
        };
        let link = is_link(&next)?;
        if link && (!last || follow || trailing_slash && !opts.entry) {
            links += 1;
            if links > MAX_LINKS {
                return Err(Errno::ELOOP);
            }
            if on_procfs(raw) && !is_procfs_root(raw) {
                // A magic link of some other process's directory: the kernel follows it.
                let obj = open_path(raw, &name, 0)?;
                check_landing(&obj)?;
                if last {
                    return Ok(Resolved::Object(obj));
                }
                raw = obj.as_raw_fd();
                cur = Some(obj);
                continue;
            }
            let target = read_link_at(raw, &name)?;
            if target.starts_with(b"/") && names_proc_or_dev(&target) {
                let mut path = target;
                for c in &queue {
                    path.push(b'/');
                    path.extend_from_slice(c);
                }
                // How the whole path ends: as a directory that must exist, or with a slash.
                if must_exist {
                    path.extend_from_slice(b"/.");
                } else if trailing_slash {
                    path.push(b'/');
                }
                return Ok(Resolved::Again { path, links });
            }
            if last && target.ends_with(b"/") {
                // The link's own trailing slash: what it names must be a directory (a link
                // "f/" to a file is ENOTDIR, as on Linux; it was followed to the file).
                trailing_slash = true;
            }
            if last && (target.ends_with(b"/.") || target == b".") {
                trailing_slash = true;
                must_exist = true;
            }
            if target.starts_with(b"/") {
                let root = open_path(libc::AT_FDCWD, c"/", 0)?;
                raw = root.as_raw_fd();
                cur = Some(root);
            }
            push_front(&mut queue, &target);
            if queue.is_empty() {
                // A link to "/" (or "."): the directory itself.
                continue;
            }
            continue;
        }
        if last {
            if ends_in_dot && !link && !is_directory(next.as_raw_fd()) {
                // "x/." looks "." up in x: ENOTDIR for a file, where "x/" with O_CREAT is
                // EISDIR (the host's answer to the name with its slash).
                return Err(Errno::ENOTDIR);
            }
            let name = if trailing_slash { cstr(&[&c[..], b"/"].concat())? } else { name };
            return Ok(Resolved::At { dir: cur, raw_dir: raw, name, nofollow: !link, unlooked: false });
        }
        raw = next.as_raw_fd();
        cur = Some(next);
    }
}

/// The common case in two host calls instead of three per component: a path whose directory
/// part the host resolves in one `openat2` without crossing a mount point (RESOLVE_NO_XDEV),
/// from a start that is not on procfs, so that the lookups never enter procfs, let alone the
/// monitor's own directories (nor meet a magic link, which only procfs has), and whose last
/// name is looked at here as the walk would. `stat` of a file in /etc: 11 host calls, ~15 us a
/// call under `hrt run`, against 4.
///
/// A directory part that crosses a mount (/sys, /dev, /proc, a bind mount) is resolved again
/// without RESOLVE_NO_XDEV, still without magic links, and taken if the directory it ends at
/// is not on procfs, or is a procfs directory outside the monitor's own (`outside_own_dirs`:
/// `/proc/sys/kernel`, another process's, the monitor's `net`): a lookup that went through the
/// monitor's directories on the way (a link into them, a `..` out of them) could only pass
/// through directories, which give nothing of the monitor away (what is in them, its files and
/// magic links, is never opened on the way). An open of a /sys file took ~30 host calls and
/// 17 us against 2 natively (MPICH's `MPI_Init` reads ~100 of them, hwloc more), one of
/// `/proc/net/route` (86 in `MPI_Init`) 29-32 us against 4.7.
///
/// None when the path needs the full walk: its directory part ends in or below one of the
/// monitor's own /proc directories or meets a magic link, its last name is a link to follow,
/// or it ends in `/`, `.` or `..` (the walk then gives the answer or the error).
///
/// The last name needs no look when the call does not follow a link there (lstat, unlink,
/// readlink: the call then gets AT_SYMLINK_NOFOLLOW or O_NOFOLLOW where it takes one, which
/// it asked for itself), nor when the call reports a link itself (`opts.call_reports_link`):
/// a lookup of the last name within the directory cannot leave it, so either way nothing
/// beyond the directory is reached. Each look is ~1.5 us of host time here.
fn within_one_mount(start: i32, path: &[u8], follow: bool, opts: Opts) -> Option<Resolved> {
    let (dir_part, last): (&[u8], &[u8]) = match path.iter().rposition(|&b| b == b'/') {
        Some(0) => (b"/", &path[1..]),
        Some(i) => (&path[..i], &path[i + 1..]),
        None => (b".", path),
    };
    if last.is_empty() || last == b"." || last == b".." {
        return None;
    }
    if !path.starts_with(b"/") && opts.start_on_procfs.unwrap_or_else(|| on_procfs(start)) {
        return None;
    }
    let name = cstr(last).ok()?;
    let (dir, raw_dir) = if dir_part == b"." {
        (None, start)
    } else {
        // SAFETY: open_how is plain integers; zero is a valid value of each.
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = (libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) as u64;
        how.resolve = libc::RESOLVE_NO_XDEV | libc::RESOLVE_NO_MAGICLINKS;
        let dir_c = cstr(dir_part).ok()?;
        let fd = loop {
            // SAFETY: a C string and an open_how of the size passed; the result is a fresh
            // descriptor we own.
            let fd = unsafe {
                libc::syscall(libc::SYS_openat2, start, dir_c.as_ptr(), &how, std::mem::size_of::<libc::open_how>())
            };
            if fd >= 0 {
                break fd as i32;
            }
            match Errno::last() {
                Errno::EINTR => {}
                // Across a mount: again without RESOLVE_NO_XDEV, then only a directory that is
                // not on procfs will do.
                Errno::EXDEV if how.resolve & libc::RESOLVE_NO_XDEV != 0 => {
                    how.resolve &= !libc::RESOLVE_NO_XDEV;
                }
                _ => return None,
            }
        };
        // SAFETY: `fd` was just opened and is owned by nobody else.
        let dir = unsafe { OwnedFd::from_raw_fd(fd) };
        if how.resolve & libc::RESOLVE_NO_XDEV == 0 && on_procfs(fd) && !outside_own_dirs(fd) {
            return None;
        }
        (Some(dir), fd)
    };
    if !follow || opts.call_reports_link {
        return Some(Resolved::At { dir, raw_dir, name, nofollow: true, unlooked: follow });
    }
    // SAFETY: fstatat writes the struct we pass; a C string and plain flags.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let looked = unsafe { libc::fstatat(raw_dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    let nofollow = if looked == 0 {
        let link = st.st_mode & libc::S_IFMT == libc::S_IFLNK;
        if link && follow {
            return None;
        }
        !link
    } else if Errno::last() == Errno::ENOENT {
        // A name to be created.
        true
    } else {
        return None;
    };
    Some(Resolved::At { dir, raw_dir, name, nofollow, unlooked: false })
}

/// Whether procfs directory `dir` is neither one of the monitor's own process or thread
/// directories nor below one, except below a harmless entry (`net`, `ns`): where the walk
/// itself would let any name be looked up (`/proc/net` is `/proc/<hrt>/net`).
fn outside_own_dirs(dir: i32) -> bool {
    match fd_text(dir).map(|t| place(&t)) {
        Some(Place::Elsewhere) => true,
        Some(Place::Below(m, first)) => m.allows(&first).is_some(),
        _ => false,
    }
}

/// Whether `dir` is the root of a procfs mount (where `self` and `thread-self` are plain links).
fn is_procfs_root(dir: i32) -> bool {
    // SAFETY: fstat/stat write the struct we pass.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let r = unsafe {
        if dir == libc::AT_FDCWD {
            libc::stat(c".".as_ptr(), &mut st)
        } else {
            libc::fstat(dir, &mut st)
        }
    };
    // procfs's root directory has inode number 1 (PROC_ROOT_INO).
    r == 0 && st.st_ino == 1
}

/// Whether descriptor `fd` is a directory.
fn is_directory(fd: i32) -> bool {
    // SAFETY: an all-zero stat is valid; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a struct stat of ours.
    let r = unsafe { libc::fstat(fd, &mut st) };
    r == 0 && st.st_mode & libc::S_IFMT == libc::S_IFDIR
}

/// Whether an absolute path's first name (`.` and empty names skipped) is `proc` or `dev`.
fn names_proc_or_dev(abs: &[u8]) -> bool {
    let first = abs.split(|&b| b == b'/').find(|c| !c.is_empty() && *c != b".");
    matches!(first, Some(b"proc" | b"dev"))
}

fn read_link_at(dir: i32, name: &CStr) -> SysResult<Vec<u8>> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: `buf` is PATH_MAX bytes.
    let n = unsafe { libc::readlinkat(dir, name.as_ptr(), buf.as_mut_ptr() as *mut libc::c_char, buf.len()) };
    if n < 0 {
        return Err(Errno::last());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// Puts the components of `path` (without "" and ".") in front of `queue`.
fn push_front(queue: &mut VecDeque<Vec<u8>>, path: &[u8]) {
    for c in path.split(|&b| b == b'/').filter(|c| !c.is_empty() && *c != b".").rev() {
        queue.push_front(c.to_vec());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places() {
        let me = std::process::id();
        let this = Monitor::This;
        assert_eq!(place(format!("/proc/{me}").as_bytes()), Place::OwnDir(this));
        assert_eq!(place(format!("/proc/{me}/task/{me}").as_bytes()), Place::OwnDir(this));
        assert_eq!(place(format!("/proc/{me}/mem").as_bytes()), Place::Below(this, b"mem".to_vec()));
        assert_eq!(place(format!("/proc/{me}/task/{me}/fd").as_bytes()), Place::Below(this, b"fd".to_vec()));
        assert_eq!(place(b"/proc/1/mem"), Place::Elsewhere);
    }

    /// Refused by the walk, or handed back as a path into /proc or /dev, which the caller
    /// reads as the program's (paths.rs; forward/tests.rs checks what it answers).
    fn denied(path: &str, follow: bool) -> bool {
        match resolve(libc::AT_FDCWD, path.as_bytes(), follow) {
            Err(Errno::EACCES) => true,
            Ok(Resolved::Again { path, .. }) => names_proc_or_dev(&path),
            _ => false,
        }
    }

    fn all_denied(paths: &[String]) {
        for p in paths {
            assert!(denied(p, true), "{p}");
        }
    }

    /// A fresh scratch directory `name` under the temporary directory holding symbolic links
    /// (`(link name, target)`); the caller removes it.
    fn dir_with_links(name: &str, links: &[(&str, &str)]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (link, target) in links {
            std::os::unix::fs::symlink(target, dir.join(link)).unwrap();
        }
        dir
    }

    #[test]
    fn own_proc_entries_are_refused_however_spelled() {
        let me = std::process::id();
        all_denied(&[
            "/proc/self/mem".to_string(),
            "/proc/thread-self/mem".to_string(),
            format!("/proc/{me}/smaps"),
            format!("/proc/{me}/task/{me}/mem"),
            format!("/proc/{me}/task/{me}"),
            "/proc/self/cwd/proc/self/mem".to_string(),
            "/proc/self/root/proc/self/mem".to_string(),
            "/proc/self/fd/0".to_string(),
            "/proc/self/net/../mem".to_string(),
            "//proc/./self/../self/mem".to_string(),
        ]);
        let dir = dir_with_links("hrt-walk", &[("mem", "/proc/self/mem"), ("p", "/proc")]);
        assert!(denied(dir.join("mem").to_str().unwrap(), true));
        assert!(!denied(dir.join("mem").to_str().unwrap(), false), "lstat of the link itself is fine");
        assert!(denied(&format!("{}/p/self/net/../smaps", dir.display()), true));
        let _ = std::fs::remove_dir_all(&dir);
        // Harmless and other entries, and the directories themselves; lookups through a
        // descriptor of one are judged again.
        for p in ["/proc/self".to_string(), format!("/proc/{me}/"), "/proc/self/.".to_string()] {
            assert!(resolve(libc::AT_FDCWD, p.as_bytes(), true).is_ok(), "{p}");
        }
        let own = std::fs::File::open(format!("/proc/{me}")).unwrap();
        for name in ["mem", "smaps", "task/../mem", "fd/0"] {
            assert!(matches!(resolve(own.as_raw_fd(), name.as_bytes(), true), Err(Errno::EACCES)), "{name}");
        }
        assert!(matches!(resolve(own.as_raw_fd(), b"status", true), Ok(Resolved::Own(b"status"))));
        // A name no process directory has is ENOENT, as Linux answers (`touch /proc/self/x`);
        // below an existing entry it is still refused.
        for name in ["nothing", "/proc/self/nothing"] {
            assert!(matches!(resolve(own.as_raw_fd(), name.as_bytes(), true), Err(Errno::ENOENT)), "{name}");
        }
        assert!(matches!(resolve(libc::AT_FDCWD, b"/proc/self/task/nothing", true), Err(Errno::EACCES)));
        assert!(resolve(libc::AT_FDCWD, b"/proc/self/mounts", true).is_ok());
        assert!(resolve(libc::AT_FDCWD, b"/proc/cpuinfo", true).is_ok());
        assert!(matches!(resolve(libc::AT_FDCWD, b"/proc/self/cmdline", true), Ok(Resolved::Own(b"cmdline"))));
        assert!(resolve(libc::AT_FDCWD, b"/proc/1/status", true).is_ok());
        assert!(matches!(resolve(libc::AT_FDCWD, b"/nonexistent/x", true), Err(Errno::ENOENT)));
    }

    /// Paths across mounts take the short way (`within_one_mount` without RESOLVE_NO_XDEV) only
    /// where their directory part ends outside procfs; into procfs they are walked and judged.
    #[test]
    fn paths_across_mounts_stay_out_of_own_entries() {
        let me = std::process::id();
        all_denied(&[
            "/sys/../proc/self/mem".to_string(),
            "/sys/../proc/self/smaps".to_string(),
            "/sys/devices/../../proc/self/task/../mem".to_string(),
            format!("/dev/../proc/{me}/mem"),
            "/dev/fd/0".to_string(),
            "/dev/../proc/self/root/proc/self/mem".to_string(),
            "/proc/net/../smaps".to_string(),
            format!("/proc/{me}/net/../task/{me}/mem"),
            "/proc/self/ns/../mem".to_string(),
        ]);
        let dir = dir_with_links("hrt-walk-mounts", &[("net", "/proc/self/net")]);
        assert!(denied(&format!("{}/net/../mem", dir.display()), true));
        // Through procfs and out again by `..`: only its directories were passed.
        assert!(
            resolve(libc::AT_FDCWD, format!("{}/net/../../../etc/hostname", dir.display()).as_bytes(), true).is_ok()
        );
        let _ = std::fs::remove_dir_all(&dir);
        for p in [
            "/sys/devices/system/cpu/online",
            "/proc/self/../../etc/hostname",
            "/dev/null",
            "/proc/net/route",
            "/proc/sys/kernel/ostype",
            "/proc/self/net/dev",
        ] {
            assert!(matches!(resolve(libc::AT_FDCWD, p.as_bytes(), true), Ok(Resolved::At { .. })), "{p}");
        }
    }

    #[test]
    fn inspecting_reaches_own_entries_but_not_through_them() {
        let me = std::process::id();
        let inspect = |p: &str, follow: bool| resolve_to_inspect(libc::AT_FDCWD, p.as_bytes(), follow);
        // The entries themselves, for their metadata; the parent `/proc`.
        for p in ["/proc/self/smaps", "/proc/self/fd", "/proc/self/task", "/proc/self/mem", "/proc/self/.."] {
            assert!(inspect(p, false).is_ok(), "{p}");
        }
        assert!(inspect(&format!("/proc/{me}/smaps"), false).is_ok());
        // Nothing below them, nor the monitor's own task directory through `..`.
        for p in [
            "/proc/self/fd/0".to_string(),
            "/proc/self/task/..".to_string(),
            format!("/proc/{me}/task/{me}/.."),
            "/proc/self/map_files/x".to_string(),
            "/proc/self/cwd/proc/self/mem".to_string(),
        ] {
            assert!(matches!(inspect(&p, true), Err(Errno::EACCES)), "{p}");
        }
        // Out of a plain subdirectory again: the process directory, as `/proc/self/` (`ls -la
        // /proc/self/fd/`), but nothing below it that way.
        for p in ["/proc/self/fd/..", "/proc/self/fdinfo/../", "/proc/self/", "/proc/self/fd/../cmdline"] {
            assert!(inspect(p, false).is_ok(), "{p}");
        }
        for p in ["/proc/self/fd/../fd/0", "/proc/self/fd/../task/..", "/proc/self/fd/../cwd/proc/self/mem"] {
            assert!(matches!(inspect(p, true), Err(Errno::EACCES)), "{p}");
        }
        // Other calls still may not.
        assert!(denied("/proc/self/smaps", false));
        assert!(denied("/proc/self/fd/../smaps", false));
        assert!(denied("/proc/self/..", false));
    }
}
