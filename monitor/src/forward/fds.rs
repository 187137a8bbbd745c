//! Descriptor operations: dup, dup2, dup3, pipe, pipe2, fcntl, ioctl.

use std::sync::Arc;

use super::errno::{Errno, SysResult};
use super::fd_table::{FdTable, HostFd};
use super::guest_mem::Guest;
use super::host::{int, ptr, uint};
use super::Forwarder;

/// sizeof(struct flock) on x86-64.
const FLOCK_SIZE: u64 = 32;
/// The kernel's struct termios (what TCGETS writes; not glibc's larger one).
const TERMIOS_SIZE: u64 = 36;
/// struct winsize.
const WINSIZE_SIZE: u64 = 8;

impl Forwarder {
    pub(super) fn dup(&self, fd: u64) -> SysResult<i64> {
        // Each guest dup has a host dup of its own (see fd_table.rs).
        let h = self.fds().get(fd)?.duplicate()?;
        self.fds().insert(Arc::new(h), false, 0)
    }

    pub(super) fn dup2(&self, old: u64, new: u64) -> SysResult<i64> {
        let h = self.fds().get(old)?;
        let n = FdTable::number(new)?;
        if FdTable::number(old)? == n {
            return Ok(n as i64);
        }
        // Whatever was at `new` is closed silently, as dup2 does.
        drop(self.fds().replace(n, Arc::new(h.duplicate()?), false)?);
        Ok(n as i64)
    }

    pub(super) fn dup3(&self, old: u64, new: u64, flags: u64) -> SysResult<i64> {
        let flags = int(flags);
        if flags & !(libc::O_CLOEXEC as libc::c_long) != 0 || old as u32 == new as u32 {
            return Err(Errno::EINVAL);
        }
        let n = FdTable::number(new)?;
        let h = self.fds().get(old)?;
        drop(self.fds().replace(n, Arc::new(h.duplicate()?), flags != 0)?);
        Ok(n as i64)
    }

    pub(super) fn pipe2(&self, g: Guest, fds: u64, flags: u64) -> SysResult<i64> {
        g.range_mut(fds, 8)?;
        let flags = int(flags);
        let mut host = [0i32; 2];
        // SAFETY: `host` holds two ints.
        unsafe { self.sys(libc::SYS_pipe2, &[ptr(host.as_mut_ptr()), flags | libc::O_CLOEXEC as libc::c_long])? };
        let [r, w] = host.map(|fd| Arc::new(HostFd::owned(fd, false)));
        let (gr, gw) = self.fds().insert_pair(r, w, flags & libc::O_CLOEXEC as libc::c_long != 0)?;
        g.write(fds, &[gr as i32, gw as i32])?;
        Ok(0)
    }

    pub(super) fn fcntl(&self, g: Guest, fd: u64, cmd: u64, arg: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        let raw = h.raw() as libc::c_long;
        match int(cmd) as libc::c_int {
            c @ (libc::F_DUPFD | libc::F_DUPFD_CLOEXEC) => {
                let min = arg as u32 as usize;
                if min >= self.fds().limit() {
                    return Err(Errno::EINVAL);
                }
                self.fds().insert(Arc::new(h.duplicate()?), c == libc::F_DUPFD_CLOEXEC, min)
            }
            libc::F_GETFD => Ok(if self.fds().cloexec(fd)? { libc::FD_CLOEXEC as i64 } else { 0 }),
            libc::F_SETFD => {
                self.fds().set_cloexec(fd, arg & libc::FD_CLOEXEC as u64 != 0)?;
                Ok(0)
            }
            c @ (libc::F_GETFL | libc::F_SETFL | libc::F_GETPIPE_SZ | libc::F_SETPIPE_SZ) => {
                // SAFETY: these take an integer argument.
                unsafe { self.sys(libc::SYS_fcntl, &[raw, c as libc::c_long, arg as libc::c_long]) }
            }
            c @ (libc::F_GETLK
            | libc::F_SETLK
            | libc::F_SETLKW
            | libc::F_OFD_GETLK
            | libc::F_OFD_SETLK
            | libc::F_OFD_SETLKW) => {
                // The GETLK forms write the answer back.
                let getlk = matches!(c, libc::F_GETLK | libc::F_OFD_GETLK);
                let p = if getlk { g.range_mut(arg, FLOCK_SIZE)? } else { g.range(arg, FLOCK_SIZE)? };
                // SAFETY: `p` covers a struct flock in guest memory.
                unsafe { self.sys(libc::SYS_fcntl, &[raw, c as libc::c_long, ptr(p)]) }
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// ioctl: the three queries programs make (terminal attributes, window size, bytes
    /// readable). The host answers into a local buffer first, so a descriptor of the wrong kind
    /// gives ENOTTY before the argument is looked at (Linux's order: `ioctl(file, TCGETS, NULL)`
    /// is ENOTTY, not EFAULT); then the answer is copied to the program.
    pub(super) fn ioctl(&self, g: Guest, fd: u64, cmd: u64, arg: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        let cmd = uint(cmd) as u32 as libc::Ioctl;
        let size = match cmd {
            libc::TCGETS => TERMIOS_SIZE,
            libc::TIOCGWINSZ => WINSIZE_SIZE,
            libc::FIONREAD => std::mem::size_of::<libc::c_int>() as u64,
            libc::FIOCLEX | libc::FIONCLEX => {
                self.fds().set_cloexec(fd, cmd == libc::FIOCLEX)?;
                return Ok(0);
            }
            _ => return Err(Errno::ENOTTY),
        };
        let mut local = [0u8; TERMIOS_SIZE as usize];
        // SAFETY: `local` is larger than any of these answers.
        let r = unsafe {
            self.sys(libc::SYS_ioctl, &[h.raw() as libc::c_long, cmd as libc::c_long, ptr(local.as_mut_ptr())])?
        };
        g.write_bytes(arg, &local[..size as usize])?;
        Ok(r)
    }
}
