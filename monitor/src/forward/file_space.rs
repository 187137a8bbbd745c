//! Calls on a file's space and its trip to disk, and anonymous memory files: fallocate
//! (`fallocate`, databases, download managers), sync and syncfs (`sync`), memfd_create
//! (systemd, Wayland clients, JIT compilers: a host memfd in the program's table, which the
//! program maps as any file).

use std::sync::Arc;

use super::errno::{Errno, SysResult};
use super::fd_table::HostFd;
use super::guest_mem::Guest;
use super::host::{int, ptr, uint};
use super::Forwarder;

/// Linux's limit on a memfd's name (NAME_MAX minus "memfd:").
const MFD_NAME_MAX: usize = 249;

impl Forwarder {
    pub(super) fn fallocate(&self, fd: u64, mode: u64, offset: u64, len: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        // SAFETY: no pointers.
        unsafe {
            self.sys(
                libc::SYS_fallocate,
                &[h.raw() as libc::c_long, int(mode), offset as libc::c_long, len as libc::c_long],
            )
        }
    }

    pub(super) fn sync(&self) -> SysResult<i64> {
        // SAFETY: no arguments.
        unsafe { self.sys(libc::SYS_sync, &[]) }
    }

    /// vhangup: a hangup of the controlling terminal, the program's (`hrt`'s host process is
    /// the program's), with the host's permission check (CAP_SYS_TTY_CONFIG). The SIGHUP it
    /// sends the session is the program's before the call returns, as on Linux.
    pub(super) fn vhangup(&self) -> SysResult<i64> {
        // SAFETY: no arguments.
        let r = unsafe { self.sys(libc::SYS_vhangup, &[]) };
        crate::taken_signals::sync();
        r
    }

    pub(super) fn syncfs(&self, fd: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        // SAFETY: no pointers.
        unsafe { self.sys(libc::SYS_syncfs, &[h.raw() as libc::c_long]) }
    }

    /// memfd_create(name, flags): the host's memfd; MFD_CLOEXEC is the guest fd's flag.
    pub(super) fn memfd_create(&self, g: Guest, name: u64, flags: u64) -> SysResult<i64> {
        let name = match g.read_cstr(name, MFD_NAME_MAX + 1) {
            Ok(n) if n.as_bytes().len() <= MFD_NAME_MAX => n,
            Ok(_) | Err(Errno::ENAMETOOLONG) => return Err(Errno::EINVAL),
            Err(e) => return Err(e),
        };
        let cloexec = libc::MFD_CLOEXEC as u64;
        // SAFETY: a host C string.
        let fd = unsafe { self.sys(libc::SYS_memfd_create, &[ptr(name.as_ptr()), uint(flags | cloexec)])? };
        self.fds().insert(Arc::new(HostFd::owned(fd as i32, false)), flags & cloexec != 0, 0)
    }
}
