//! Owners, file-system statistics and groups: chown, fchown, lchown, fchownat, statfs, fstatfs,
//! getgroups (performed on the host as the user running `hrt`, who is the program's user).

use super::errno::{Errno, SysResult};
use super::guest_mem::Guest;
use super::host::{int, ptr, uint};
use super::Forwarder;

/// sizeof(struct statfs) on x86-64 Linux.
const STATFS_SIZE: u64 = 120;

impl Forwarder {
    /// chown, lchown (`flags` AT_SYMLINK_NOFOLLOW) and fchownat. uid/gid are 32-bit; -1 keeps one.
    pub(super) fn fchownat(&self, g: Guest, dirfd: u64, path: u64, uid: u64, gid: u64, flags: u64) -> SysResult<i64> {
        let at = self.path_at(g, dirfd, path)?;
        let args = [at.dirfd as libc::c_long, ptr(at.path.as_ptr()), uint(uid), uint(gid), int(flags)];
        // SAFETY: a host C string, owned by `at`.
        unsafe { self.sys(libc::SYS_fchownat, &args) }
    }

    pub(super) fn fchown(&self, fd: u64, uid: u64, gid: u64) -> SysResult<i64> {
        let h = self.fds.get(fd)?;
        // SAFETY: no pointers.
        unsafe { self.sys(libc::SYS_fchown, &[h.raw() as libc::c_long, uint(uid), uint(gid)]) }
    }

    pub(super) fn statfs(&self, g: Guest, path: u64, buf: u64) -> SysResult<i64> {
        let at = self.path(g, path)?;
        let out = g.range(buf, STATFS_SIZE)?;
        // `path` resolves against the working directory (AT_FDCWD), the guest's and the host's.
        // SAFETY: a host C string and a statfs-sized buffer in guest memory.
        unsafe { self.sys(libc::SYS_statfs, &[ptr(at.path.as_ptr()), ptr(out)]) }
    }

    pub(super) fn fstatfs(&self, g: Guest, fd: u64, buf: u64) -> SysResult<i64> {
        let h = self.fds.get(fd)?;
        let out = g.range(buf, STATFS_SIZE)?;
        // SAFETY: a statfs-sized buffer in guest memory.
        unsafe { self.sys(libc::SYS_fstatfs, &[h.raw() as libc::c_long, ptr(out)]) }
    }

    /// getgroups(size, list): the user's supplementary groups (size 0: only how many).
    pub(super) fn getgroups(&self, g: Guest, size: u64, list: u64) -> SysResult<i64> {
        let size = size as u32 as i32;
        if size < 0 {
            return Err(Errno::EINVAL);
        }
        let out = if size == 0 { std::ptr::null_mut() } else { g.range(list, size as u64 * 4)? };
        // SAFETY: NULL (size 0) or `size` gid_t slots in guest memory.
        unsafe { self.sys(libc::SYS_getgroups, &[size as libc::c_long, ptr(out)]) }
    }
}
