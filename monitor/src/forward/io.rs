//! Reading and writing: read, write, pread64, pwrite64, readv, writev, preadv, pwritev, sendfile.

use super::errno::{Errno, SysResult};
use super::guest_mem::Guest;
use super::host::ptr;
use super::Forwarder;

/// Linux never transfers more than this in one call (INT_MAX rounded down to a page).
pub const MAX_RW_COUNT: u64 = 0x7fff_f000;

/// One guest `struct iovec`.
#[derive(Clone, Copy)]
#[repr(C)]
struct GuestIovec {
    base: u64,
    len: u64,
}

impl Forwarder {
    /// read/write/pread64/pwrite64: one buffer.
    fn rw(&self, g: Guest, nr: libc::c_long, fd: u64, buf: u64, count: u64, pos: Option<u64>) -> SysResult<i64> {
        let h = self.fds.get(fd)?;
        // The whole range must be the program's memory (EFAULT otherwise, never a silent
        // shortening); then, as Linux, one call moves at most MAX_RW_COUNT bytes.
        let p = g.range(buf, count)?;
        let count = count.min(MAX_RW_COUNT);
        let pos = pos.map_or(0, |p| p as libc::c_long);
        // SAFETY: `p` covers `count` bytes of guest memory.
        unsafe { self.sys(nr, &[h.raw() as libc::c_long, ptr(p), count as libc::c_long, pos]) }
    }

    pub(super) fn read(&self, g: Guest, fd: u64, buf: u64, count: u64) -> SysResult<i64> {
        self.rw(g, libc::SYS_read, fd, buf, count, None)
    }

    pub(super) fn write(&self, g: Guest, fd: u64, buf: u64, count: u64) -> SysResult<i64> {
        self.rw(g, libc::SYS_write, fd, buf, count, None)
    }

    pub(super) fn pread64(&self, g: Guest, fd: u64, buf: u64, count: u64, pos: u64) -> SysResult<i64> {
        self.rw(g, libc::SYS_pread64, fd, buf, count, Some(pos))
    }

    pub(super) fn pwrite64(&self, g: Guest, fd: u64, buf: u64, count: u64, pos: u64) -> SysResult<i64> {
        self.rw(g, libc::SYS_pwrite64, fd, buf, count, Some(pos))
    }

    /// The guest's iovec array as host iovecs, each (base, len) checked; the total is capped at
    /// MAX_RW_COUNT as Linux does.
    fn iovecs(&self, g: Guest, iov: u64, count: u64) -> SysResult<Vec<libc::iovec>> {
        if count > libc::UIO_MAXIOV as u64 {
            return Err(Errno::EINVAL);
        }
        let raw = g.read_bytes(iov, count * std::mem::size_of::<GuestIovec>() as u64)?;
        let mut out = Vec::with_capacity(count as usize);
        let mut total = 0u64;
        for chunk in raw.chunks_exact(std::mem::size_of::<GuestIovec>()) {
            // SAFETY: `chunk` is exactly one GuestIovec of plain integers.
            let v: GuestIovec = unsafe { std::ptr::read_unaligned(chunk.as_ptr() as *const GuestIovec) };
            if v.len > isize::MAX as u64 {
                return Err(Errno::EINVAL);
            }
            let base = g.range(v.base, v.len)?;
            let len = v.len.min(MAX_RW_COUNT - total);
            total += len;
            out.push(libc::iovec { iov_base: base as *mut libc::c_void, iov_len: len as usize });
        }
        Ok(out)
    }

    /// readv/writev/preadv/pwritev: `pos` is the (pos_l, pos_h) pair of the p-forms.
    fn rwv(&self, g: Guest, nr: libc::c_long, fd: u64, iov: u64, count: u64, pos: [u64; 2]) -> SysResult<i64> {
        let h = self.fds.get(fd)?;
        let v = self.iovecs(g, iov, count)?;
        let args = [
            h.raw() as libc::c_long,
            ptr(v.as_ptr()),
            v.len() as libc::c_long,
            pos[0] as libc::c_long,
            pos[1] as libc::c_long,
        ];
        // SAFETY: every host iovec covers checked guest memory.
        unsafe { self.sys(nr, &args) }
    }

    pub(super) fn readv(&self, g: Guest, fd: u64, iov: u64, count: u64) -> SysResult<i64> {
        self.rwv(g, libc::SYS_readv, fd, iov, count, [0, 0])
    }

    pub(super) fn writev(&self, g: Guest, fd: u64, iov: u64, count: u64) -> SysResult<i64> {
        self.rwv(g, libc::SYS_writev, fd, iov, count, [0, 0])
    }

    pub(super) fn preadv(&self, g: Guest, fd: u64, iov: u64, count: u64, lo: u64, hi: u64) -> SysResult<i64> {
        self.rwv(g, libc::SYS_preadv, fd, iov, count, [lo, hi])
    }

    pub(super) fn pwritev(&self, g: Guest, fd: u64, iov: u64, count: u64, lo: u64, hi: u64) -> SysResult<i64> {
        self.rwv(g, libc::SYS_pwritev, fd, iov, count, [lo, hi])
    }

    /// sendfile(out, in, offset or NULL, count).
    pub(super) fn sendfile(&self, g: Guest, out: u64, input: u64, offset: u64, count: u64) -> SysResult<i64> {
        let ho = self.fds.get(out)?;
        let hi = self.fds.get(input)?;
        let off = if offset == 0 { std::ptr::null_mut() } else { g.range(offset, 8)? };
        let count = count.min(MAX_RW_COUNT);
        // SAFETY: NULL or a loff_t in guest memory.
        unsafe {
            self.sys(
                libc::SYS_sendfile,
                &[ho.raw() as libc::c_long, hi.raw() as libc::c_long, ptr(off), count as libc::c_long],
            )
        }
    }
}
