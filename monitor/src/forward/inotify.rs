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
        let h = self.fds().get(fd)?;
        let follow = mask & IN_DONT_FOLLOW == 0;
        let at = self.path(g, path, follow)?;
        let (_object, host) = super::xattr::open_object(&at, follow)?;
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
