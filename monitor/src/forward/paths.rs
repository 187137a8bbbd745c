//! Path arguments: read from guest memory, then resolved against the few host paths that would
//! show the monitor instead of the program.
//!
//! The monitor process is the program's host process, so `/proc/self` is the monitor. Paths
//! that name it are rewritten: `/proc/self/exe` is the program's executable;
//! `/proc/self/fd/N` (also `/dev/fd/N`, `/dev/stdin|stdout|stderr`, `/proc/thread-self/fd/N`,
//! `/proc/<monitor pid>/...`, `/proc/self/task/T/...`) is the guest's fd N — ENOENT if the guest
//! has no fd N, so the monitor's own descriptors cannot be reopened through /proc;
//! `/proc/self/mem` and `/proc/self/map_files` are EACCES. This is lexical and best-effort (a
//! symbolic link elsewhere pointing into /proc is not followed): the program runs with the
//! user's rights anyway; the point is that the program sees itself, not the monitor.

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::errno::{Errno, SysResult};
use super::fd_table::HostFd;
use super::guest_mem::Guest;
use super::Forwarder;

/// A path argument ready for a host *at call.
pub struct At {
    /// Host directory descriptor (or AT_FDCWD).
    pub dirfd: i32,
    pub path: CString,
    /// The path is the program's executable (`/proc/self/exe`).
    pub exe: bool,
    /// The resolved path lies under /proc or /dev (descriptors opened here are `special`).
    pub special: bool,
    /// Host descriptors the call uses (kept open until it returns).
    _hold: Option<Arc<HostFd>>,
}

/// What a normalized absolute path means.
enum Meaning {
    Plain,
    Exe,
    /// Guest fd N, then the rest of the path below it.
    Fd(usize, Vec<Vec<u8>>),
    /// `/proc/self/fdinfo/N`.
    FdInfo(usize),
    Denied,
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

fn number(c: &[u8]) -> Option<usize> {
    if c.is_empty() || c.len() > 9 || !c.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(c).ok()?.parse().ok()
}

fn meaning(comps: &[Vec<u8>], host_pid: &[u8]) -> Meaning {
    let c: Vec<&[u8]> = comps.iter().map(|v| v.as_slice()).collect();
    match c.as_slice() {
        [b"dev", b"fd", n, rest @ ..] => match number(n) {
            Some(n) => Meaning::Fd(n, rest.iter().map(|r| r.to_vec()).collect()),
            None => Meaning::Plain,
        },
        [b"dev", b"stdin", rest @ ..] => Meaning::Fd(0, rest.iter().map(|r| r.to_vec()).collect()),
        [b"dev", b"stdout", rest @ ..] => Meaning::Fd(1, rest.iter().map(|r| r.to_vec()).collect()),
        [b"dev", b"stderr", rest @ ..] => Meaning::Fd(2, rest.iter().map(|r| r.to_vec()).collect()),
        [b"proc", who, rest @ ..] if *who == b"self" || *who == b"thread-self" || *who == host_pid => {
            let rest = match rest {
                [b"task", t, rest @ ..] if number(t).is_some() => rest,
                rest => rest,
            };
            match rest {
                [b"exe"] => Meaning::Exe,
                [b"fd", n, below @ ..] => match number(n) {
                    Some(n) => Meaning::Fd(n, below.iter().map(|r| r.to_vec()).collect()),
                    None => Meaning::Plain,
                },
                [b"fdinfo", n] => number(n).map_or(Meaning::Plain, Meaning::FdInfo),
                [b"mem", ..] | [b"map_files", ..] => Meaning::Denied,
                [b"root", below @ ..] => meaning(&below.iter().map(|r| r.to_vec()).collect::<Vec<_>>(), host_pid),
                _ => Meaning::Plain,
            }
        }
        _ => Meaning::Plain,
    }
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

/// Host path of a host descriptor, via /proc/self/fd.
fn fd_path(fd: i32) -> Option<Vec<u8>> {
    std::fs::read_link(format!("/proc/self/fd/{fd}")).ok().map(|p| p.as_os_str().as_bytes().to_vec())
}

impl Forwarder {
    /// Reads path argument `path_addr` for a call relative to guest directory fd `dirfd_arg`
    /// (AT_FDCWD or a guest fd; the fd is not needed and not checked for an absolute path, as on
    /// Linux), and resolves it.
    pub(super) fn path_at(&self, g: Guest, dirfd_arg: u64, path_addr: u64) -> SysResult<At> {
        let raw = g.read_path(path_addr)?.into_bytes();
        self.resolve(dirfd_arg, raw)
    }

    /// A path argument for the calls without a directory fd.
    pub(super) fn path(&self, g: Guest, path_addr: u64) -> SysResult<At> {
        self.path_at(g, libc::AT_FDCWD as u32 as u64, path_addr)
    }

    /// Host directory fd for a guest dirfd argument (AT_FDCWD passes through).
    pub(super) fn dirfd(&self, dirfd_arg: u64) -> SysResult<(i32, Option<Arc<HostFd>>)> {
        if dirfd_arg as u32 as i32 == libc::AT_FDCWD {
            return Ok((libc::AT_FDCWD, None));
        }
        let h = self.fds.get(dirfd_arg)?;
        Ok((h.raw(), Some(h)))
    }

    fn resolve(&self, dirfd_arg: u64, raw: Vec<u8>) -> SysResult<At> {
        let (dirfd, hold, abs) = if raw.first() == Some(&b'/') {
            (libc::AT_FDCWD, None, Some(raw.clone()))
        } else {
            let (dirfd, hold) = self.dirfd(dirfd_arg)?;
            // Only below /proc or /dev can a relative path mean the monitor; elsewhere, no cost.
            let base = match &hold {
                None if self.cwd_special.load(Ordering::Relaxed) => {
                    std::env::current_dir().ok().map(|p| p.as_os_str().as_bytes().to_vec())
                }
                Some(h) if h.special() => fd_path(h.raw()),
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
        let plain = |special| Ok(At { dirfd, path: cstring(raw.clone())?, exe: false, special, _hold: hold.clone() });
        let Some(abs) = abs else {
            let special = hold.as_ref().is_some_and(|h| h.special());
            return plain(special);
        };
        let comps = components(&abs);
        let special = is_special(&comps);
        match meaning(&comps, self.host_pid.as_bytes()) {
            Meaning::Plain => plain(special),
            Meaning::Exe => Ok(At {
                dirfd: libc::AT_FDCWD,
                path: cstring(self.exe.clone())?,
                exe: true,
                special: false,
                _hold: None,
            }),
            Meaning::Fd(n, below) => {
                let h = self.fds.lookup(n).ok_or(Errno::ENOENT)?;
                let mut p = format!("/proc/self/fd/{}", h.raw()).into_bytes();
                for c in below {
                    p.push(b'/');
                    p.extend_from_slice(&c);
                }
                let special = below_is_special(&h);
                Ok(At { dirfd: libc::AT_FDCWD, path: cstring(p)?, exe: false, special, _hold: Some(h) })
            }
            Meaning::FdInfo(n) => {
                let h = self.fds.lookup(n).ok_or(Errno::ENOENT)?;
                let p = format!("/proc/self/fdinfo/{}", h.raw()).into_bytes();
                Ok(At { dirfd: libc::AT_FDCWD, path: cstring(p)?, exe: false, special: true, _hold: Some(h) })
            }
            Meaning::Denied => Err(Errno::EACCES),
        }
    }
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

/// Whether the process's working directory is under /proc or /dev.
pub fn cwd_is_special() -> bool {
    std::env::current_dir().is_ok_and(|p| special_path(p.as_os_str().as_bytes()))
}
