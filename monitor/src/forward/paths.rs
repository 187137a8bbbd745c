//! Path arguments: read from guest memory, then resolved so that no spelling reaches the
//! monitor's own /proc entries.
//!
//! The monitor process is the program's host process, so `/proc/self` is the monitor. Two steps:
//! 1. The usual spellings of the program's own view are rewritten (lexically): `/proc/self/exe`
//!    is the program's executable; `/proc/self/fd/N` (also `/dev/fd/N`,
//!    `/dev/stdin|stdout|stderr`, `/proc/thread-self/fd/N`, `/proc/<monitor pid>/...`,
//!    `/proc/self/task/T/...`) is the guest's fd N — ENOENT if the guest has no fd N;
//!    `/proc/self/{cmdline,status,comm,maps}` are synthesized for the program.
//! 2. Every other path is walked component by component on the host ([`walk`]): any lookup in
//!    the monitor's own /proc directories (its pid and each of its thread ids), however reached
//!    (`..`, symbolic links, `/proc/self/cwd/...`, a directory fd), is EACCES, except the
//!    harmless namespace entries (`mounts`, `net`, ...). The call is then made relative to the
//!    directory the walk ended in.

use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::errno::{Errno, SysResult};
use super::fd_table::HostFd;
use super::guest_mem::Guest;
use super::synthetic;
use super::walk::{self, Resolved};
use super::Forwarder;

/// A path argument ready for a host *at call.
pub struct At {
    /// Host directory descriptor (or AT_FDCWD).
    pub dirfd: i32,
    pub path: CString,
    /// The path is the program's executable (`/proc/self/exe`).
    pub exe: bool,
    /// Reading the link gives this text (a link the host does not have, synthetic.rs).
    pub link_text: Option<Vec<u8>>,
    /// The resolved path lies under /proc or /dev (descriptors opened here are `special`).
    pub special: bool,
    /// The last name was looked up and is not a symbolic link: a call that follows links must
    /// not follow one found there now (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW), so a link swapped in
    /// after the check is refused instead of followed.
    pub nofollow: bool,
    /// The last name was not looked at (`path_at_to_stat`): `nofollow` is set, and if the call
    /// finds a symbolic link there, the path must be resolved again with `path_at_to_inspect`.
    pub unlooked: bool,
    /// Opening it gives these contents instead (the program's /proc/self/cmdline, ...).
    pub synthetic: Option<Vec<u8>>,
    /// The path named one of the program's own /proc or /dev entries (its descriptors, its
    /// executable, a synthesized file), so the host must not see the text as given.
    pub rewritten: bool,
    /// The normalized path, for one under /sys/devices/system/cpu or .../node (see
    /// HostFd::vm_path).
    pub vm_path: Option<Arc<[u8]>>,
    /// Host descriptors the call uses (kept open until it returns).
    _hold: Option<Arc<HostFd>>,
    _dir: Option<OwnedFd>,
}

impl At {
    fn new(dirfd: i32, path: CString, hold: Option<Arc<HostFd>>) -> At {
        At {
            dirfd,
            path,
            exe: false,
            link_text: None,
            special: false,
            nofollow: false,
            unlooked: false,
            synthetic: None,
            rewritten: false,
            vm_path: None,
            _hold: hold,
            _dir: None,
        }
    }

    /// `flags` for an open of this path (O_NOFOLLOW added where the walk says so).
    pub fn open_flags(&self, flags: libc::c_long) -> libc::c_long {
        if self.nofollow {
            flags | libc::O_NOFOLLOW as libc::c_long
        } else {
            flags
        }
    }

    /// `flags` for a *at call that follows links unless AT_SYMLINK_NOFOLLOW is given.
    pub fn at_flags(&self, flags: libc::c_long) -> libc::c_long {
        if self.nofollow {
            flags | libc::AT_SYMLINK_NOFOLLOW as libc::c_long
        } else {
            flags
        }
    }
}

/// What a normalized absolute path means.
enum Meaning {
    Plain,
    Exe,
    /// Guest fd N, then the rest of the path below it.
    Fd(usize, Vec<Vec<u8>>),
    /// `/proc/self/fdinfo/N`.
    FdInfo(usize),
    /// `/proc/self/fd` (also `/dev/fd`), or `/proc/self/fdinfo` (true): listed from the
    /// program's descriptors (fd_dirs.rs).
    FdDir(bool),
    /// `/proc/self/task`: listed from the program's threads (task_dir.rs).
    TaskDir,
    /// `/proc/self/task/<tid>`: a thread's directory (the monitor's main thread's stands for
    /// it; the entries below it mean the process's files, or the thread's for status).
    ThreadDir(usize),
    /// One of walk::SYNTHESIZED (`cmdline`, `status`, ...).
    Own(&'static [u8], synthetic::Who),
    Denied,
    /// A name no descriptor has (`/proc/self/fd/01`, `/dev/fd/x`): ENOENT, as procfs says.
    Missing,
}

/// Lexical normalization: components without "", "." and with ".." applied.
fn components(abs: &[u8]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    for c in abs.split(|&b| b == b'/') {
        match c {
            b"" | b"." => {}
            b".." => {
                out.pop();
            }
            c => out.push(c.to_vec()),
        }
    }
    out
}

/// Reads `abs` name by name, lexically (`.` skipped, `..` drops the name before it), calling
/// `at_name` after each name with the names so far and the offset just past it; the first
/// `Some` it gives ends the reading.
fn scan_names<'a, R>(abs: &'a [u8], mut at_name: impl FnMut(&[&'a [u8]], usize) -> Option<R>) -> Option<R> {
    let mut out: Vec<&[u8]> = Vec::new();
    let mut at = 0usize;
    while at < abs.len() {
        let end = abs[at..].iter().position(|&b| b == b'/').map_or(abs.len(), |i| at + i);
        match &abs[at..end] {
            b"" | b"." => {}
            b".." => {
                out.pop();
            }
            c => {
                out.push(c);
                if let Some(r) = at_name(&out, end) {
                    return Some(r);
                }
            }
        }
        at = end + 1;
    }
    None
}

/// A path that names one of the program's descriptor links (`/proc/self/fd/N`, `/dev/fd/N`,
/// `/dev/stdin`, ...) and goes on after it, even by a lone `/`: the descriptor N and the text
/// after the link's name, as given (its `.` and `..` are relative to what N is).
fn fd_link_then(abs: &[u8], host_pid: &str) -> Option<(usize, Vec<u8>)> {
    scan_names(abs, |out, end| {
        // The links lie at most six names deep (/proc/self/task/T/fd/N).
        if end >= abs.len() || !(2..=6).contains(&out.len()) {
            return None;
        }
        let comps = thread_as_task(out.iter().map(|c| c.to_vec()).collect(), host_pid);
        match meaning(&comps, host_pid.as_bytes(), false) {
            Meaning::Fd(n, below) if below.is_empty() => Some((n, abs[end + 1..].to_vec())),
            _ => None,
        }
    })
}

/// The program's own working-directory and root links (`/proc/self/cwd`, `/proc/self/root`,
/// the same under `thread-self`, `/proc/<its pid>` and `task/<tid>`) followed by more of the
/// path, or ending it when the call follows links: whether it is the root link, and the text
/// after the link's name, as given. They are the monitor's own magic links, which the walk
/// refuses; the program's working directory is the monitor's, and its root `/` (chroot is
/// not provided), so the rest is resolved from there instead. Also how many links Linux
/// follows to get there (`self` and `thread-self` are links too), and the thread named, if any.
fn cwd_or_root_then(abs: &[u8], host_pid: &str, follow: bool) -> Option<OwnLink> {
    let own = |w: &[u8]| w == b"self" || w == b"thread-self" || w == host_pid.as_bytes();
    scan_names(abs, |out, end| {
        let (w, thread, l) = match out {
            [b"proc", w, l] if own(w) => (*w, None, *l),
            [b"proc", w, b"task", t, l] if own(w) && number(t).is_some() => (*w, number(t), *l),
            _ => return None,
        };
        if !matches!(l, b"cwd" | b"root") || end >= abs.len() && !follow {
            return None;
        }
        let rest = abs.get(end + 1..).unwrap_or_default().to_vec();
        let links = if w == host_pid.as_bytes() { 1 } else { 2 };
        Some(OwnLink { root: l == b"root", rest, links, thread })
    })
}

/// See `cwd_or_root_then`.
struct OwnLink {
    root: bool,
    rest: Vec<u8>,
    links: u32,
    thread: Option<usize>,
}

/// Linux's limit on links followed in one lookup, for the program's own cwd and root links.
const MAX_OWN_LINKS: u32 = 40;

std::thread_local! {
    /// The program's own cwd and root links followed so far in the lookup this thread makes.
    static LINKS_FOLLOWED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Whether host descriptor `h` is a directory.
fn is_directory(h: &HostFd) -> bool {
    // SAFETY: fstat writes into the struct we pass; `h` holds the descriptor open.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::fstat(h.raw(), &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFDIR }
}

fn number(c: &[u8]) -> Option<usize> {
    // As procfs's names: digits only, no leading zero (`01` names nothing).
    if c.is_empty() || c.len() > 9 || !c.iter().all(u8::is_ascii_digit) || c.len() > 1 && c[0] == b'0' {
        return None;
    }
    std::str::from_utf8(c).ok()?.parse().ok()
}

/// `inspect`: for a call that only looks at the object's metadata (see
/// walk::resolve_to_inspect), which may stat `mem` and `map_files` themselves.
fn meaning(comps: &[Vec<u8>], host_pid: &[u8], inspect: bool) -> Meaning {
    let c: Vec<&[u8]> = comps.iter().map(|v| v.as_slice()).collect();
    match c.as_slice() {
        [b"dev", b"fd"] => Meaning::FdDir(false),
        [b"dev", b"fd", n, rest @ ..] => match number(n) {
            Some(n) => Meaning::Fd(n, rest.iter().map(|r| r.to_vec()).collect()),
            None => Meaning::Missing,
        },
        [b"dev", b"stdin", rest @ ..] => Meaning::Fd(0, rest.iter().map(|r| r.to_vec()).collect()),
        [b"dev", b"stdout", rest @ ..] => Meaning::Fd(1, rest.iter().map(|r| r.to_vec()).collect()),
        [b"dev", b"stderr", rest @ ..] => Meaning::Fd(2, rest.iter().map(|r| r.to_vec()).collect()),
        [b"proc", who, rest @ ..] if *who == b"self" || *who == b"thread-self" || *who == host_pid => {
            let thread_self = *who == b"thread-self";
            let (rest, whose) = match rest {
                [b"task"] => return Meaning::TaskDir,
                [b"task", t] => return number(t).map_or(Meaning::Plain, Meaning::ThreadDir),
                [b"task", t, rest @ ..] if number(t).is_some() => {
                    (rest, number(t).map_or(synthetic::Who::Process, |t| synthetic::Who::Thread(t as u32)))
                }
                rest if thread_self => (rest, synthetic::Who::Caller),
                rest => (rest, synthetic::Who::Process),
            };
            match rest {
                [b"exe"] => Meaning::Exe,
                [b"fd"] => Meaning::FdDir(false),
                [b"fdinfo"] => Meaning::FdDir(true),
                [b"fd", n, below @ ..] => match number(n) {
                    Some(n) => Meaning::Fd(n, below.iter().map(|r| r.to_vec()).collect()),
                    None => Meaning::Missing,
                },
                [b"fdinfo", n] => number(n).map_or(Meaning::Missing, Meaning::FdInfo),
                [b"mem"] | [b"map_files"] if inspect => Meaning::Plain,
                [b"mem", ..] | [b"map_files", ..] => Meaning::Denied,
                [name] => match walk::SYNTHESIZED.iter().find(|s| **s == *name) {
                    Some(s) => Meaning::Own(s, whose),
                    None => Meaning::Plain,
                },
                [b"root", below @ ..] => {
                    meaning(&below.iter().map(|r| r.to_vec()).collect::<Vec<_>>(), host_pid, inspect)
                }
                _ => Meaning::Plain,
            }
        }
        _ => Meaning::Plain,
    }
}

/// `/proc/<tid>/...` of one of the program's threads other than the main one: Linux has it
/// (unlisted) and it means `/proc/self/task/<tid>/...`; the host has none of that number.
fn thread_as_task(comps: Vec<Vec<u8>>, host_pid: &str) -> Vec<Vec<u8>> {
    let tid = match comps.as_slice() {
        [p, n, ..] if p.as_slice() == b"proc" && n.as_slice() != host_pid.as_bytes() => number(n),
        _ => None,
    };
    let Some(tid) = tid else { return comps };
    let pid = host_pid.parse().unwrap_or(0);
    if !super::task_dir::thread_ids(pid).contains(&(tid as u32)) {
        return comps;
    }
    let mut out = vec![b"proc".to_vec(), b"self".to_vec(), b"task".to_vec(), comps[1].clone()];
    out.extend(comps.into_iter().skip(2));
    out
}

fn is_special(comps: &[Vec<u8>]) -> bool {
    matches!(comps.first().map(|c| c.as_slice()), Some(b"proc") | Some(b"dev"))
}

/// Whether an absolute host path lies under /proc or /dev.
pub fn special_path(abs: &[u8]) -> bool {
    is_special(&components(abs))
}

fn cstring(v: Vec<u8>) -> SysResult<CString> {
    CString::new(v).map_err(|_| Errno::EINVAL)
}

/// An O_PATH descriptor of the process's working directory (None if it cannot be opened:
/// relative paths then go by AT_FDCWD).
pub(super) fn open_cwd() -> Option<Arc<HostFd>> {
    // SAFETY: a C string and flags; the result is a descriptor we own from here.
    let fd = unsafe { libc::open(c".".as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    (fd >= 0).then(|| Arc::new(HostFd::owned(fd, false)))
}

/// Host path of a host descriptor, via /proc/self/fd.
pub(super) fn fd_path(fd: i32) -> Option<Vec<u8>> {
    std::fs::read_link(format!("/proc/self/fd/{fd}")).ok().map(|p| p.as_os_str().as_bytes().to_vec())
}

impl Forwarder {
    /// Reads path argument `path_addr` for a call relative to guest directory fd `dirfd_arg`
    /// (AT_FDCWD or a guest fd; the fd is not needed and not checked for an absolute path, as on
    /// Linux), and resolves it.
    /// `follow`: whether the call follows a symbolic link in the last component.
    pub(super) fn path_at(&self, g: Guest, dirfd_arg: u64, path_addr: u64, follow: bool) -> SysResult<At> {
        let raw = g.read_path(path_addr)?.into_bytes();
        self.resolve(dirfd_arg, raw, follow)
    }

    /// `path_at` for a call that only looks at the object's metadata: the stat family,
    /// readlink, the xattr reads (see walk::resolve_to_inspect).
    pub(super) fn path_at_to_inspect(&self, g: Guest, dirfd_arg: u64, path_addr: u64, follow: bool) -> SysResult<At> {
        let raw = g.read_path(path_addr)?.into_bytes();
        self.resolve_with(dirfd_arg, raw, follow, true)
    }

    /// `path_at_to_inspect` for the stat family, whose answer says whether the object is a
    /// symbolic link: the last name may be left unlooked (`At::unlooked`, walk::Opts).
    pub(super) fn path_at_to_stat(&self, g: Guest, dirfd_arg: u64, path_addr: u64, follow: bool) -> SysResult<At> {
        let raw = g.read_path(path_addr)?.into_bytes();
        self.resolve_full(dirfd_arg, raw, follow, true, true, false)
    }

    /// `path_at_to_stat` of a NULL path with AT_EMPTY_PATH (Linux 6.11+): the descriptor
    /// itself, or the working directory.
    pub(super) fn empty_path_at(&self, dirfd_arg: u64) -> SysResult<At> {
        self.resolve_full(dirfd_arg, Vec::new(), true, true, true, false)
    }

    /// `path_at` for a call that acts on the last name as a directory entry (unlink, rmdir,
    /// rename, mkdir, mknod, the new name of symlink and link): see walk::Opts::entry.
    pub(super) fn path_at_entry(&self, g: Guest, dirfd_arg: u64, path_addr: u64) -> SysResult<At> {
        let raw = g.read_path(path_addr)?.into_bytes();
        self.resolve_full(dirfd_arg, raw, false, false, false, true)
    }

    /// A path argument for the calls without a directory fd.
    pub(super) fn path(&self, g: Guest, path_addr: u64, follow: bool) -> SysResult<At> {
        self.path_at(g, libc::AT_FDCWD as u32 as u64, path_addr, follow)
    }

    /// The working directory of the call being made, as a held descriptor: a spawn child's
    /// own if it changed directory, else the program's. Relative paths are walked from it and
    /// made relative to it, so the directory checked is the directory used even while another
    /// thread changes directory (from AT_FDCWD, a `chdir` into /proc/<hrt> between the check
    /// and the call could have moved a relative `open` there), and its file system is asked
    /// once (a `statfs` a call before).
    fn cwd_fd(&self) -> Option<Arc<HostFd>> {
        self.child_cwd().or_else(|| self.cwd.lock().unwrap().clone())
    }

    /// Records `dir` as the working directory (`cwd_fd`) while `change` makes it the host's;
    /// resolutions meanwhile see the old one or the new one, whole.
    pub(super) fn change_cwd<R>(
        &self,
        dir: Option<Arc<HostFd>>,
        change: impl FnOnce() -> SysResult<R>,
    ) -> SysResult<R> {
        let mut cwd = self.cwd.lock().unwrap();
        let r = change()?;
        *cwd = dir.or_else(open_cwd);
        Ok(r)
    }

    /// Host directory fd for a guest dirfd argument (AT_FDCWD passes through).
    pub(super) fn dirfd(&self, dirfd_arg: u64) -> SysResult<(i32, Option<Arc<HostFd>>)> {
        if dirfd_arg as u32 as i32 == libc::AT_FDCWD {
            return Ok((libc::AT_FDCWD, None));
        }
        let h = self.fds().get(dirfd_arg)?;
        Ok((h.raw(), Some(h)))
    }

    pub(super) fn resolve(&self, dirfd_arg: u64, raw: Vec<u8>, follow: bool) -> SysResult<At> {
        self.resolve_with(dirfd_arg, raw, follow, false)
    }

    fn resolve_with(&self, dirfd_arg: u64, raw: Vec<u8>, follow: bool, inspect: bool) -> SysResult<At> {
        self.resolve_full(dirfd_arg, raw, follow, inspect, false, false)
    }

    /// `reports_link`: the caller's call reports a symbolic link at the last name itself (see
    /// `path_at_to_stat`); `entry`: the call acts on the last name as a directory entry
    /// (`path_at_entry`).
    fn resolve_full(
        &self,
        dirfd_arg: u64,
        raw: Vec<u8>,
        follow: bool,
        inspect: bool,
        reports_link: bool,
        entry: bool,
    ) -> SysResult<At> {
        // What the walk from `dirfd` may skip: a look at a held descriptor's file system (asked
        // once per descriptor), and at the last name when the call reports a link itself.
        // No call that acts on a directory entry takes an empty path (AT_EMPTY_PATH is for
        // the looked-up object): ENOENT before anything else is looked at, as on Linux.
        if entry && raw.is_empty() {
            return Err(Errno::ENOENT);
        }
        let opts = |dirfd: i32, hold: &Option<Arc<HostFd>>| walk::Opts {
            start_on_procfs: hold.as_ref().filter(|h| h.raw() == dirfd).map(|h| h.on_procfs()),
            call_reports_link: reports_link,
            entry,
        };
        let (dirfd, hold, abs) = if raw.first() == Some(&b'/') {
            (libc::AT_FDCWD, None, Some(raw.clone()))
        } else {
            let (dirfd, hold) = match self.dirfd(dirfd_arg) {
                // An empty path with a descriptor the program does not have: -1 to the host,
                // which answers as Linux (ENOENT before the descriptor is looked at, EBADF
                // with AT_EMPTY_PATH).
                Err(Errno::EBADF) if raw.is_empty() => (-1, None),
                r => r?,
            };
            // Only below /proc or /dev, or in the VM's CPU and node directories, can a relative
            // path be one of the rewritten spellings.
            let cwd_vm = if hold.is_none() { self.cwd_vm.lock().unwrap().clone() } else { None };
            let base = match &hold {
                None if cwd_vm.is_some() => cwd_vm.map(|p| p.to_vec()),
                None if self.cwd_special.load(Ordering::Relaxed) => {
                    std::env::current_dir().ok().map(|p| p.as_os_str().as_bytes().to_vec())
                }
                Some(h) if h.special() => fd_path(h.raw()),
                Some(h) if h.vm_path().is_some() => h.vm_path().map(<[u8]>::to_vec),
                _ => None,
            };
            let abs = match base {
                Some(mut b) if !raw.is_empty() => {
                    b.push(b'/');
                    b.extend_from_slice(&raw);
                    Some(b)
                }
                _ => None,
            };
            (dirfd, hold, abs)
        };
        if raw.is_empty() {
            // The descriptor itself (AT_EMPTY_PATH) or ENOENT: the host decides.
            let mut at = At::new(dirfd, cstring(raw)?, hold.clone());
            at.special = hold.as_ref().is_some_and(|h| h.special());
            // The descriptor's own VM path (the program's descriptor or thread directory, whose
            // stat figures are the program's: files.rs).
            at.vm_path = hold.as_ref().and_then(|h| h.vm_path()).map(Into::into);
            return Ok(at);
        }
        let mut special = hold.as_ref().is_some_and(|h| h.special());
        if entry {
            if let Some(stand_in) = abs.as_deref().and_then(|a| self.procfs_entry_stand_in(a)) {
                let mut at = At::new(libc::AT_FDCWD, cstring(stand_in)?, None);
                at.nofollow = true;
                at.special = true;
                at.rewritten = true;
                return Ok(at);
            }
        }
        if let Some((n, rest)) = abs.as_deref().and_then(|a| fd_link_then(a, &self.host_pid)) {
            // Anything after a descriptor link (`/dev/fd/3/..`, `/proc/self/fd/3/`) goes through
            // the descriptor, so a `..` there cannot be read lexically: a non-directory is
            // ENOTDIR, a directory's rest is walked from it.
            let h = self.fds().lookup(n).ok_or(Errno::ENOENT)?;
            if !is_directory(&h) {
                return Err(Errno::ENOTDIR);
            }
            let rest = if rest.iter().all(|&b| b == b'/') { b".".to_vec() } else { rest };
            // The call's own options (a call on a directory entry keeps a trailing slash from
            // following a link: `mkdir /proc/self/fd/N/m/` with m dangling made m's target).
            let hold_h = Some(h.clone());
            let mut at = self.walked(h.raw(), &rest, follow, inspect, opts(h.raw(), &hold_h))?;
            at.special = below_is_special(&h);
            at.rewritten = true;
            at._hold = Some(h);
            return Ok(at);
        }
        if let Some(OwnLink { root, rest, links, thread }) =
            abs.as_deref().and_then(|a| cwd_or_root_then(a, &self.host_pid, follow))
        {
            if let Some(t) = thread {
                if !super::task_dir::thread_ids(self.host_pid.parse().unwrap_or(0)).contains(&(t as u32)) {
                    return Err(Errno::ENOENT);
                }
            }
            // From the program's root or working directory (AT_FDCWD, the monitor's), as a
            // path given that way would be: every rule of this function applies to it too.
            // Each such link counts as one followed, as Linux counts them: ELOOP past 40.
            // The working directory by its name (the VM's, for one in its CPU tree), so that the
            // rest is read lexically as any absolute path is; by the directory itself if it has
            // none (removed).
            let cwd = || {
                let vm = self.cwd_vm.lock().unwrap().clone().map(|p| p.to_vec());
                vm.or_else(|| std::env::current_dir().ok().map(|p| p.as_os_str().as_bytes().to_vec()))
            };
            let mut raw = match root {
                true => b"/".to_vec(),
                false => cwd().filter(|c| c.first() == Some(&b'/')).unwrap_or_else(|| b".".to_vec()),
            };
            raw.push(b'/');
            raw.extend_from_slice(&rest);
            let depth = LINKS_FOLLOWED.with(|d| d.replace(d.get() + links));
            let r = if depth + links > MAX_OWN_LINKS {
                Err(Errno::ELOOP)
            } else {
                self.resolve_full(libc::AT_FDCWD as u32 as u64, raw, follow, inspect, reports_link, entry)
            };
            LINKS_FOLLOWED.with(|d| d.set(depth));
            return r;
        }
        if let Some(abs) = abs {
            let comps = thread_as_task(components(&abs), &self.host_pid);
            special = is_special(&comps);
            match meaning(&comps, self.host_pid.as_bytes(), inspect) {
                Meaning::Plain => {}
                Meaning::Exe if inspect && !follow => {
                    // The link itself (lstat, `ls -l`): its metadata, which says nothing of
                    // `hrt`; readlink still reads the program's path (`exe`).
                    let mut at = At::new(libc::AT_FDCWD, cstring(b"/proc/self/exe".to_vec())?, None);
                    at.exe = true;
                    at.nofollow = true;
                    at.rewritten = true;
                    return Ok(at);
                }
                Meaning::Exe => {
                    let mut at = At::new(libc::AT_FDCWD, cstring(self.exe_to_open())?, None);
                    at.exe = true;
                    at.rewritten = true;
                    return Ok(at);
                }
                Meaning::Fd(n, below) => {
                    let h = self.fds().lookup(n).ok_or(Errno::ENOENT)?;
                    if below.is_empty() {
                        // The guest's own descriptor, reopened through our /proc/self/fd.
                        let p = format!("/proc/self/fd/{}", h.raw()).into_bytes();
                        let mut at = At::new(libc::AT_FDCWD, cstring(p)?, Some(h.clone()));
                        at.special = below_is_special(&h);
                        at.rewritten = true;
                        if h.is_signalfd() {
                            // Its eventfd's link would say eventfd.
                            at.link_text = Some(b"anon_inode:[signalfd]".to_vec());
                        }
                        return Ok(at);
                    }
                    let rest = below.join(&b'/');
                    let hold_h = Some(h.clone());
                    let mut at = self.walked(h.raw(), &rest, follow, inspect, opts(h.raw(), &hold_h))?;
                    at.special = below_is_special(&h);
                    at.rewritten = true;
                    at._hold = Some(h);
                    return Ok(at);
                }
                Meaning::FdInfo(n) => {
                    let h = self.fds().lookup(n).ok_or(Errno::ENOENT)?;
                    let p = format!("/proc/self/fdinfo/{}", h.raw());
                    // Opened, its text is the host's with the program's flags.
                    let cloexec = self.fds().cloexec(n as u64).unwrap_or(false);
                    let text = std::fs::read(&p).ok().map(|t| super::fd_dirs::program_fdinfo(&t, h.hidden(), cloexec));
                    let mut at = At::new(libc::AT_FDCWD, cstring(p.into_bytes())?, Some(h));
                    at.special = true;
                    at.rewritten = true;
                    at.synthetic = text;
                    return Ok(at);
                }
                Meaning::FdDir(info) => {
                    // The monitor's own directory, whose listing is the program's (fd_dirs.rs).
                    let path = super::fd_dirs::path(info);
                    let mut at = At::new(libc::AT_FDCWD, cstring(path.to_vec())?, None);
                    at.special = true;
                    at.rewritten = true;
                    at.vm_path = Some(path.into());
                    return Ok(at);
                }
                Meaning::TaskDir => {
                    // The monitor's own directory, whose listing is the program's (task_dir.rs).
                    let path = super::task_dir::PATH;
                    let mut at = At::new(libc::AT_FDCWD, cstring(path.to_vec())?, None);
                    at.special = true;
                    at.rewritten = true;
                    at.vm_path = Some(path.into());
                    return Ok(at);
                }
                Meaning::ThreadDir(tid) => {
                    let pid = self.host_pid.parse().unwrap_or(0);
                    if !super::task_dir::thread_ids(pid).contains(&(tid as u32)) {
                        return Err(Errno::ENOENT);
                    }
                    // The monitor's main thread's directory stands for the thread's: a thread
                    // directory, which (unlike a process's) serves as no pidfd, as on Linux.
                    let dir = format!("/proc/self/task/{pid}").into_bytes();
                    let mut at = At::new(libc::AT_FDCWD, cstring(dir)?, None);
                    at.special = true;
                    at.rewritten = true;
                    return Ok(at);
                }
                Meaning::Own(name, whose) => {
                    // A thread's files exist while it does (a dead thread's `comm` is ENOENT).
                    if let synthetic::Who::Thread(t) = whose {
                        let pid = self.host_pid.parse().unwrap_or(0);
                        if !super::task_dir::thread_ids(pid).contains(&t) {
                            return Err(Errno::ENOENT);
                        }
                    }
                    return self.own_entry(name, whose);
                }
                Meaning::Denied => return Err(Errno::EACCES),
                Meaning::Missing => return Err(Errno::ENOENT),
            }
            let normalized = abs_text(&comps);
            // The files the VM answers for lie under /proc and /sys: a path that ends elsewhere
            // and whose text never names /sys (a `..` may leave a vCPU's directory) needs none
            // of the looks below (~0.7 us a call).
            let vm_files = matches!(comps.first().map(Vec::as_slice), Some(b"proc" | b"sys"))
                || abs.windows(4).any(|w| w == b"/sys");
            if !vm_files {
                let mut at = self.walked(dirfd, &raw, follow, inspect, opts(dirfd, &hold))?;
                at.special = special;
                at._hold = hold;
                return Ok(at);
            }
            // A forked child's stat and status: its leader's state as its kernel has it.
            if let Some(data) = self.forked_child_file(&comps) {
                let mut at = self.walked(dirfd, &raw, follow, inspect, opts(dirfd, &hold))?;
                at.special = special;
                at._hold = hold;
                at.synthetic = Some(data);
                return Ok(at);
            }
            // Node 0's link to a vCPU leads to the CPU directory's entry, as the host's links do.
            if let Some(target) = super::synthetic::through_node_link(&normalized, self.cpus, follow) {
                return self.resolve_with(libc::AT_FDCWD as u32 as u64, target, follow, inspect);
            }
            if let Some((link, text)) = super::synthetic::node_link_stand_in(&normalized, self.cpus) {
                let mut at = self.walked(libc::AT_FDCWD, &link, false, inspect, walk::Opts::default())?;
                at.link_text = Some(text);
                at.rewritten = true;
                return Ok(at);
            }
            // A vCPU the host does not have: its directory is the host's cpu0 (the walk goes there).
            let stand_in = super::synthetic::stand_in(&abs, self.cpus);
            let abs = normalized;
            let (dirfd, raw) = match &stand_in {
                Some(p) => (libc::AT_FDCWD, p.clone()),
                None => (dirfd, raw),
            };
            if let Some(data) = super::synthetic::contents(&abs, self.cpus) {
                // Other calls (stat, access) see the host's file, or, if it has none, the
                // harmless CPU list.
                let mut at = match self.walked(dirfd, &raw, follow, inspect, walk::Opts::default()) {
                    Ok(at) => at,
                    Err(_) => {
                        let mut at =
                            At::new(libc::AT_FDCWD, cstring(b"/sys/devices/system/cpu/possible".to_vec())?, None);
                        at.rewritten = true;
                        at
                    }
                };
                at.synthetic = Some(data);
                return Ok(at);
            }
            if super::synthetic::beyond_vm(&abs, self.cpus) {
                return Err(Errno::ENOENT);
            }
            let mut at = self.walked(dirfd, &raw, follow, inspect, opts(dirfd, &hold))?;
            at.special = special;
            at.rewritten = stand_in.is_some();
            at.vm_path = super::synthetic::in_vm_tree(&abs).then(|| abs.into());
            at._hold = hold;
            return Ok(at);
        }
        // A path relative to the working directory: from the held descriptor.
        let (dirfd, hold) = match (dirfd, hold) {
            (libc::AT_FDCWD, None) => match self.cwd_fd() {
                Some(cwd) => (cwd.raw(), Some(cwd)),
                None => (libc::AT_FDCWD, None),
            },
            other => other,
        };
        let mut at = self.walked(dirfd, &raw, follow, inspect, opts(dirfd, &hold))?;
        at.special = special;
        at._hold = hold;
        Ok(at)
    }

    /// `/proc/<pid>/stat` or `/proc/<pid>/status` of one of the program's forked children
    /// (child_state.rs), as normalized components.
    fn forked_child_file(&self, comps: &[Vec<u8>]) -> Option<Vec<u8>> {
        let [proc_dir, pid, name] = comps else { return None };
        if proc_dir != b"proc" || !matches!(name.as_slice(), b"stat" | b"status") {
            return None;
        }
        let pid: i32 = std::str::from_utf8(pid).ok()?.parse().ok()?;
        if !self.children.is_forked(pid) {
            return None;
        }
        super::child_state::proc_file(pid, name == b"status")
    }

    /// `raw` walked from host directory `dirfd` (see walk.rs).
    fn walked(&self, dirfd: i32, raw: &[u8], follow: bool, inspect: bool, opts: walk::Opts) -> SysResult<At> {
        match walk::resolve_with(dirfd, raw, follow, inspect, opts)? {
            Resolved::At { dir, raw_dir, name, nofollow, unlooked } => {
                let mut at = At::new(raw_dir, name, None);
                at.nofollow = nofollow;
                at.unlooked = unlooked;
                at._dir = dir;
                Ok(at)
            }
            Resolved::Object(fd) => {
                let p = format!("/proc/self/fd/{}", fd.as_raw_fd()).into_bytes();
                let mut at = At::new(libc::AT_FDCWD, cstring(p)?, None);
                at._dir = Some(fd);
                Ok(at)
            }
            Resolved::Own(name) => self.own_entry(name, synthetic::Who::Process),
            Resolved::Again { path, links } => {
                // A link into /proc or /dev: the rest is looked up as the program's path would
                // be (the walk alone would meet the monitor's /proc/self: EACCES). The links
                // followed so far count towards ELOOP, across such restarts too.
                let depth = LINKS_FOLLOWED.with(|d| d.replace(d.get() + links));
                let r = if depth + links > MAX_OWN_LINKS {
                    Err(Errno::ELOOP)
                } else {
                    let at_cwd = libc::AT_FDCWD as u32 as u64;
                    self.resolve_full(at_cwd, path, follow, inspect, opts.call_reports_link, opts.entry)
                };
                LINKS_FOLLOWED.with(|d| d.set(depth));
                r
            }
        }
    }

    /// For a call on a directory entry (mkdir, unlink, rename, link's and symlink's new name),
    /// a path whose last name is one of the program's own /proc entries (`/proc/self/fd/N`,
    /// `/dev/fd/N/`, `/proc/self/exe`, `fd`, `task`, `status`...): the monitor's entry of the
    /// same kind (its descriptor's for N, a name no descriptor has for one the program lacks),
    /// so that the host answers as Linux does for the program's. That entry is not the object
    /// behind it (`mkdir /proc/self/fd/3/` is EEXIST, `rename f /proc/self/fd/9` EXDEV), and
    /// procfs refuses every such call there, so nothing of the monitor changes.
    fn procfs_entry_stand_in(&self, abs: &[u8]) -> Option<Vec<u8>> {
        let slash = if abs.ends_with(b"/") { "/" } else { "" };
        let host = |n: usize| self.fds().lookup(n).map_or_else(|| "-".to_string(), |h| h.raw().to_string());
        if let Some((n, rest)) = fd_link_then(abs, &self.host_pid) {
            // A descriptor link followed by slashes only names the link's own entry.
            return rest.iter().all(|&b| b == b'/').then(|| format!("/proc/self/fd/{}{slash}", host(n)).into_bytes());
        }
        let comps = thread_as_task(components(abs), &self.host_pid);
        let pid = self.host_pid.parse().unwrap_or(0);
        let text = match meaning(&comps, self.host_pid.as_bytes(), false) {
            Meaning::Plain => return None,
            Meaning::Fd(n, below) if below.is_empty() => format!("/proc/self/fd/{}", host(n)),
            Meaning::Fd(..) => return None,
            Meaning::FdInfo(n) => format!("/proc/self/fdinfo/{}", host(n)),
            Meaning::Exe => "/proc/self/exe".to_string(),
            Meaning::FdDir(info) => if info { "/proc/self/fdinfo" } else { "/proc/self/fd" }.to_string(),
            Meaning::TaskDir => "/proc/self/task".to_string(),
            Meaning::ThreadDir(t) if super::task_dir::thread_ids(pid).contains(&(t as u32)) => {
                format!("/proc/self/task/{pid}")
            }
            Meaning::ThreadDir(_) | Meaning::Missing => "/proc/self/fd/-".to_string(),
            Meaning::Own(name, _) => format!("/proc/self/{}", String::from_utf8_lossy(name)),
            Meaning::Denied => "/proc/self/mem".to_string(),
        };
        Some([text.as_bytes(), slash.as_bytes()].concat())
    }

    /// The program's own `/proc/self/<name>` (one of walk::SYNTHESIZED): opening it gives the
    /// synthesized contents; other calls (stat, access) see the monitor's harmless entry.
    fn own_entry(&self, name: &'static [u8], whose: synthetic::Who) -> SysResult<At> {
        let mut p = b"/proc/self/".to_vec();
        p.extend_from_slice(name);
        let mut at = At::new(libc::AT_FDCWD, cstring(p)?, None);
        at.special = true;
        at.rewritten = true;
        at.synthetic = Some(self.synthesize(name, whose));
        if name == b"comm" {
            // Marked with the thread's VM path: a write to it renames the thread (task_dir.rs).
            at.vm_path = super::own_status::tid_of(whose).map(|t| super::task_dir::comm_path(t).into());
        }
        Ok(at)
    }
}

/// Normalized components back to an absolute path.
fn abs_text(comps: &[Vec<u8>]) -> Vec<u8> {
    let mut v = Vec::new();
    for c in comps {
        v.push(b'/');
        v.extend_from_slice(c);
    }
    v
}

/// Whether what a host descriptor refers to lies under /proc or /dev.
fn below_is_special(h: &HostFd) -> bool {
    fd_path(h.raw()).is_some_and(|p| special_path(&p))
}

/// The program's executable as `/proc/self/exe` shows it: absolute, links resolved.
pub fn exe_path(exe: &std::path::Path) -> Vec<u8> {
    let p = std::fs::canonicalize(exe).unwrap_or_else(|_| match std::env::current_dir() {
        Ok(cwd) if exe.is_relative() => cwd.join(exe),
        _ => exe.to_path_buf(),
    });
    OsStr::as_bytes(p.as_os_str()).to_vec()
}

/// Whether the process's working directory is under /proc or /dev, or in the CPU or node
/// directories the VM answers for (synthetic.rs): relative paths from there are then resolved
/// as absolute ones.
pub fn cwd_is_special() -> bool {
    std::env::current_dir().is_ok_and(|p| {
        let p = p.as_os_str().as_bytes();
        special_path(p) || super::synthetic::in_vm_tree(p)
    })
}
