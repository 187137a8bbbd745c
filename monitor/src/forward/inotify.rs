//! inotify (`tail -f`, Node.js's `fs.watch`, build tools' watchers): host inotify instances in
//! the program's descriptor table. A watch's path is walked like any other (nothing of `hrt`'s
//! own /proc), the object the walk found is opened and watched through its /proc/self/fd name,
//! so the host watches exactly what was checked; reading events is an ordinary forwarded read.

use std::sync::Arc;

use super::errno::{Errno, SysResult};
use super::fd_table::HostFd;
use super::guest_mem::Guest;
use super::host::{int, ptr, uint};
use super::Forwarder;

const IN_DONT_FOLLOW: u64 = 0x0200_0000;

/// Linux's ALL_INOTIFY_BITS: the events, IN_UNMOUNT, IN_Q_OVERFLOW, IN_IGNORED and the flags
/// (IN_ONLYDIR to IN_ONESHOT); a mask with none of them is EINVAL.
const ALL_INOTIFY_BITS: u32 = 0xfff | 0xe000 | 0xf700_0000;

impl Forwarder {
    /// inotify_init1 (inotify_init is `flags` 0).
    pub(super) fn inotify_init1(&self, flags: u64) -> SysResult<i64> {
        let flags = int(flags);
        let cloexec = libc::IN_CLOEXEC as libc::c_long;
        if flags & !(cloexec | libc::IN_NONBLOCK as libc::c_long) != 0 {
            return Err(Errno::EINVAL);
        }
        // SAFETY: no pointer arguments.
        let fd = unsafe { self.sys(libc::SYS_inotify_init1, &[flags | cloexec])? };
        self.fds().insert(Arc::new(HostFd::owned(fd as i32, false)), flags & cloexec != 0, 0)
    }

    /// inotify_add_watch(fd, path, mask): IN_DONT_FOLLOW is the walk's (the host then follows
    /// only the /proc/self/fd link to the object found).
    pub(super) fn inotify_add_watch(&self, g: Guest, fd: u64, path: u64, mask: u64) -> SysResult<i64> {
        // Linux's order: a mask with none of the inotify bits is EINVAL, then the descriptor
        // (EBADF; EINVAL if it is no inotify instance), then the path.
        if mask as u32 & ALL_INOTIFY_BITS == 0 {
            return Err(Errno::EINVAL);
        }
        let h = self.fds().get(fd)?;
        let follow = mask & IN_DONT_FOLLOW == 0;
        let (_object, host) = match self.path(g, path, follow).and_then(|at| super::xattr::open_object(&at, follow)) {
            Ok(opened) => opened,
            Err(e) => {
                // The host's checks of the descriptor and the mask, with an empty path that it
                // refuses (ENOENT) after them and that watches nothing.
                let args = [h.raw() as libc::c_long, ptr(c"".as_ptr()), uint(mask & !IN_DONT_FOLLOW)];
                // SAFETY: a host C string.
                return Err(match unsafe { self.sys(libc::SYS_inotify_add_watch, &args) } {
                    Err(first) if first != Errno::ENOENT => first,
                    _ => e,
                });
            }
        };
        let mask = mask as u32 as u64 & !IN_DONT_FOLLOW;
        // SAFETY: a host C string.
        unsafe { self.sys(libc::SYS_inotify_add_watch, &[h.raw() as libc::c_long, ptr(host.as_ptr()), uint(mask)]) }
    }

    pub(super) fn inotify_rm_watch(&self, fd: u64, wd: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        // SAFETY: no pointer arguments.
        unsafe { self.sys(libc::SYS_inotify_rm_watch, &[h.raw() as libc::c_long, int(wd)]) }
    }
}
