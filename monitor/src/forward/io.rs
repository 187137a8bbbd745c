//! Reading and writing: read, write, pread64, pwrite64, readv, writev, preadv, pwritev, and the
//! copies between two descriptors that never pass through the program: sendfile,
//! copy_file_range, splice, tee.

use super::errno::{Errno, SysResult};
use super::fd_table::{FdKind, HostFd};
use super::guest_mem::{Guest, USER_END};
use super::host::ptr;
use super::Forwarder;

/// Linux never transfers more than this in one call (INT_MAX rounded down to a page).
pub const MAX_RW_COUNT: u64 = 0x7fff_f000;

/// One guest `struct iovec`.
#[derive(Clone, Copy)]
#[repr(C)]
pub(super) struct GuestIovec {
    pub base: u64,
    pub len: u64,
}

impl Forwarder {
    /// read/write/pread64/pwrite64: one buffer.
    fn rw(&self, g: Guest, nr: libc::c_long, fd: u64, buf: u64, count: u64, pos: Option<u64>) -> SysResult<i64> {
        self.rw_on(g, nr, &*self.fds().get(fd)?, buf, count, pos)
    }

    /// `rw` on host descriptor `h`.
    fn rw_on(&self, g: Guest, nr: libc::c_long, h: &HostFd, buf: u64, count: u64, pos: Option<u64>) -> SysResult<i64> {
        // Only the part of the buffer before the first unmapped page (Linux's copy stops there),
        // or, for a read into the program, before the first read-only one.
        let into_program = nr == libc::SYS_read || nr == libc::SYS_pread64;
        let usable = if into_program { g.usable_len_mut(buf, count) } else { g.usable_len(buf, count) };
        let usable = match usable {
            Ok(0) if buf >= USER_END => return self.rw_unusable(nr, h, poison::KERNEL_HALF, count, pos),
            Ok(n) => n,
            Err(Errno::EFAULT) => {
                let (p, n) = match buf.checked_add(count).is_some_and(|end| end <= USER_END) {
                    true => (poison::user_range(), count.min(MAX_RW_COUNT)),
                    false => (poison::KERNEL_HALF, count),
                };
                return self.rw_unusable(nr, h, p, n, pos);
            }
            Err(e) => return Err(e),
        };
        let count = if usable < count && !into_program {
            short_write_len(h.kind(), || self.is_stream(h).unwrap_or(false), usable)?
        } else {
            usable
        }
        .min(MAX_RW_COUNT);
        let p = if into_program { g.range_mut(buf, count)? } else { g.range(buf, count)? };
        let pos = pos.map_or(0, |p| p as libc::c_long);
        // SAFETY: `p` covers `count` bytes of guest memory.
        unsafe { self.sys(nr, &[h.raw() as libc::c_long, ptr(p), count as libc::c_long, pos]) }
    }

    /// A read or write whose buffer the program cannot use from its first byte (unmapped,
    /// read-only for a read, or past the user address space): the host makes the call with a
    /// buffer that faults the same way (`poison`), so its answers come in Linux's order (EBADF
    /// for a descriptor not open that way, ESPIPE, 0 at the end of a file, EAGAIN from an empty
    /// pipe, before any EFAULT), and no byte of the monitor is read or written.
    fn rw_unusable(&self, nr: libc::c_long, h: &HostFd, p: usize, count: u64, pos: Option<u64>) -> SysResult<i64> {
        let pos = pos.map_or(0, |p| p as libc::c_long);
        // SAFETY: `p` is memory no access can succeed on (PROT_NONE, or the kernel's half).
        unsafe { self.sys(nr, &[h.raw() as libc::c_long, p as libc::c_long, count as libc::c_long, pos]) }
    }

    pub(super) fn read(&self, g: Guest, fd: u64, buf: u64, count: u64) -> SysResult<i64> {
        self.rw(g, libc::SYS_read, fd, buf, count, None)
    }

    pub(super) fn write(&self, g: Guest, fd: u64, buf: u64, count: u64) -> SysResult<i64> {
        if let Some(tid) = self.comm_file(fd)? {
            // A thread's comm (pthread_setname_np of another thread): the kernel renames it.
            self.rename_thread(g, tid, buf, count)?;
            return Ok(count as i64);
        }
        self.rw(g, libc::SYS_write, fd, buf, count, None)
    }

    /// The thread whose /proc/<pid>/task/<tid>/comm descriptor `fd` is, if it is one.
    fn comm_file(&self, fd: u64) -> SysResult<Option<u32>> {
        Ok(self.fds().get(fd)?.vm_path().and_then(super::task_dir::comm_of))
    }

    /// A write of `count` bytes at `buf` to thread `tid`'s comm: its first 15 bytes name it.
    fn rename_thread(&self, g: Guest, tid: u32, buf: u64, count: u64) -> SysResult<()> {
        let bytes = g.read_bytes(buf, count.min(64))?;
        let pid = self.host_pid.parse().unwrap_or(0);
        super::task_dir::rename(pid, tid, &bytes).map_err(super::errno::Errno)
    }

    /// writev/pwritev/pwritev2 to a thread's comm: each buffer is a write of its own, as Linux
    /// writes a file without vectored writes, so the last one names the thread (musl's stdio
    /// flushes with writev); one at a position is ESPIPE, as a pwrite there.
    fn comm_writev(&self, g: Guest, tid: u32, nr: libc::c_long, iov: u64, count: u64, pos: [u64; 2]) -> SysResult<i64> {
        if nr == libc::SYS_pwritev || nr == libc::SYS_pwritev2 && pos[0] as i64 != -1 {
            return Err(Errno(libc::ESPIPE));
        }
        // Only the last name is seen: the kernel takes one rename when the call returns.
        let buffers: Vec<_> = guest_iovecs(g, iov, count)?.into_iter().filter(|v| v.len > 0).collect();
        for v in &buffers {
            g.read_bytes(v.base, v.len.min(15))?;
        }
        if let Some(last) = buffers.last() {
            self.rename_thread(g, tid, last.base, last.len)?;
        }
        Ok(buffers.iter().map(|v| v.len as i64).sum())
    }

    pub(super) fn pread64(&self, g: Guest, fd: u64, buf: u64, count: u64, pos: u64) -> SysResult<i64> {
        // A negative position is EINVAL before the descriptor is looked at.
        if (pos as i64) < 0 {
            return Err(Errno::EINVAL);
        }
        self.rw(g, libc::SYS_pread64, fd, buf, count, Some(pos))
    }

    /// `process::KEPT_PREAD` (handle, buf, count, pos): pread64 from a file kept for the
    /// program's private file mappings (kept_files.rs).
    pub(super) fn kept_pread(&self, g: Guest, a: &[u64; 6]) -> SysResult<i64> {
        let h = self.fds().kept().get(a[0])?;
        self.rw_on(g, libc::SYS_pread64, &h, a[1], a[2], Some(a[3]))
    }

    /// `process::FILE_ENTRY_COUNT` (fd, offset, length): how many override entries that part
    /// of the file has (worked out once per file by the plans, which `nr::FILE_OVERRIDES` then
    /// reads); 0 when the program has no plans.
    pub(super) fn file_entry_count(&self, a: &[u64; 6]) -> SysResult<i64> {
        let Some(plans) = self.library_plans.get() else { return Ok(0) };
        let h = self.fds().get(a[0])?;
        match plans.entries(h.raw(), a[1], a[2]) {
            Ok(entries) => Ok(entries.len() as i64),
            Err(()) => Err(Errno::EOPNOTSUPP),
        }
    }

    /// `process::MAP_PREAD` (fd, buf, count, pos): pread64 for a private file mapping, after
    /// the checks Linux's `mmap` makes of the descriptor.
    pub(super) fn map_pread(&self, g: Guest, a: &[u64; 6]) -> SysResult<i64> {
        let h = self.fds().get(a[0])?;
        // SAFETY: F_GETFL and fstat only read the descriptor's state into our own struct.
        let (mode, st) = unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            (libc::fcntl(h.raw(), libc::F_GETFL), (libc::fstat(h.raw(), &mut st) == 0).then_some(st))
        };
        let Some(st) = st.filter(|_| mode >= 0) else { return Err(Errno::last()) };
        if mode & libc::O_PATH != 0 {
            return Err(Errno::EBADF);
        }
        if mode & libc::O_ACCMODE == libc::O_WRONLY {
            return Err(Errno::EACCES);
        }
        let mappable = match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => h.mappable(),
            libc::S_IFBLK => true,
            libc::S_IFCHR => st.st_rdev == libc::makedev(1, 5), // /dev/zero
            _ => false,
        };
        if !mappable {
            return Err(Errno::ENODEV);
        }
        // /dev/zero reads zeros, which the mapping's memory already holds (the kernel asks
        // only for fresh memory): all of it counts as read, none of it is written. A PROT_NONE
        // mapping of /dev/zero as large as the address space (musl's libc-test fills memory
        // so) wrote every page, until the host ran out of memory.
        if st.st_mode & libc::S_IFMT == libc::S_IFCHR {
            return Ok(a[2].min(i64::MAX as u64) as i64);
        }
        self.rw_on(g, libc::SYS_pread64, &h, a[1], a[2], Some(a[3]))
    }

    pub(super) fn pwrite64(&self, g: Guest, fd: u64, buf: u64, count: u64, pos: u64) -> SysResult<i64> {
        if (pos as i64) < 0 {
            return Err(Errno::EINVAL);
        }
        if self.comm_file(fd)?.is_some() {
            return Err(Errno(libc::ESPIPE));
        }
        self.rw(g, libc::SYS_pwrite64, fd, buf, count, Some(pos))
    }

    /// The guest's iovec array as host iovecs, each (base, len) checked (writable ones when the
    /// call reads `into_program`); the total is capped at MAX_RW_COUNT as Linux does. As Linux's
    /// copies from and to a file stop at the first fault, for `short` (a file, not a pipe or
    /// socket, where Linux fails the whole call) the vector ends at the first buffer that is not
    /// wholly usable (with its usable prefix): EFAULT only if nothing at all is.
    pub(super) fn iovecs(
        &self,
        g: Guest,
        iov: u64,
        count: u64,
        into_program: bool,
        short: bool,
    ) -> SysResult<Vec<libc::iovec>> {
        let guest = guest_iovecs(g, iov, count)?;
        // Linux's `access_ok` on each buffer with its whole length, before any copy: one that
        // ends beyond the user address space is EFAULT, even where the total would be capped.
        if guest.iter().any(|v| v.base.checked_add(v.len).is_none_or(|end| end > USER_END)) {
            return Err(Errno::EFAULT);
        }
        let mut out = Vec::with_capacity(guest.len());
        let mut total = 0u64;
        for v in guest {
            if v.len == 0 {
                // Kept: a file that takes one buffer at a time sees it (an eventfd's write of a
                // zero-length buffer is EINVAL, whatever follows).
                out.push(libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 });
                continue;
            }
            let want = v.len.min(MAX_RW_COUNT - total);
            let usable = match if into_program { g.usable_len_mut(v.base, want) } else { g.usable_len(v.base, want) } {
                Ok(n) => n,
                Err(_) if short && total > 0 => 0,
                Err(e) => return Err(e),
            };
            if usable > 0 {
                let base = if into_program { g.range_mut(v.base, usable)? } else { g.range(v.base, usable)? };
                out.push(libc::iovec { iov_base: base as *mut libc::c_void, iov_len: usable as usize });
                total += usable;
            } else if want > 0 && total == 0 {
                return Err(Errno::EFAULT);
            }
            if usable < want {
                if !short {
                    return Err(Errno::EFAULT);
                }
                break;
            }
        }
        Ok(out)
    }

    /// readv/writev/preadv/pwritev/preadv2/pwritev2: `pos` is the (pos_l, pos_h) pair of the
    /// p-forms (-1 in the 2-forms: the descriptor's own position), `flags` the RWF_* flags of
    /// the 2-forms (the host checks them).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn rwv(
        &self,
        g: Guest,
        nr: libc::c_long,
        fd: u64,
        iov: u64,
        count: u64,
        pos: [u64; 2],
        flags: u64,
    ) -> SysResult<i64> {
        if matches!(nr, libc::SYS_writev | libc::SYS_pwritev | libc::SYS_pwritev2) {
            if let Some(tid) = self.comm_file(fd)? {
                return self.comm_writev(g, tid, nr, iov, count, pos);
            }
        }
        let h = self.fds().get(fd)?;
        self.rwv_on(g, nr, h.raw(), h.kind(), iov, count, pos, flags)
    }

    /// `rwv` on host descriptor `raw` (of kind `kind`).
    #[allow(clippy::too_many_arguments)]
    fn rwv_on(
        &self,
        g: Guest,
        nr: libc::c_long,
        raw: i32,
        kind: super::fd_table::FdKind,
        iov: u64,
        count: u64,
        pos: [u64; 2],
        flags: u64,
    ) -> SysResult<i64> {
        let into_program = matches!(nr, libc::SYS_readv | libc::SYS_preadv | libc::SYS_preadv2);
        let short = kind == super::fd_table::FdKind::Quick;
        let (v, vector) = match self.iovecs(g, iov, count, into_program, short) {
            Ok(v) => (v, None),
            // As `rw_unusable`: the host answers with buffers that fault as the program's
            // would (an iovec array it cannot read, a buffer past the user address space, or
            // one it may not touch), its descriptor checks, ESPIPE, EAGAIN and 0 first.
            Err(Errno::EFAULT) => match guest_iovecs(g, iov, count) {
                Err(_) => (Vec::new(), Some(poison::KERNEL_HALF)),
                Ok(guest) => {
                    let beyond = guest.iter().any(|v| v.base.checked_add(v.len).is_none_or(|end| end > USER_END));
                    let total = guest.iter().fold(0u64, |t, v| t.saturating_add(v.len)).min(MAX_RW_COUNT);
                    let base = if beyond { poison::KERNEL_HALF } else { poison::user_range() };
                    (vec![libc::iovec { iov_base: base as *mut libc::c_void, iov_len: total.max(1) as usize }], None)
                }
            },
            Err(e) => return Err(e),
        };
        let (vp, vn) = match vector {
            Some(bad) => (bad as libc::c_long, count as libc::c_long),
            None => (ptr(v.as_ptr()), v.len() as libc::c_long),
        };
        let args = [
            raw as libc::c_long,
            vp,
            vn,
            pos[0] as libc::c_long,
            pos[1] as libc::c_long,
            flags as libc::c_int as libc::c_long,
        ];
        // SAFETY: every host iovec covers checked guest memory, or memory no access succeeds on.
        unsafe { self.sys(nr, &args) }
    }

    pub(super) fn readv(&self, g: Guest, fd: u64, iov: u64, count: u64) -> SysResult<i64> {
        self.rwv(g, libc::SYS_readv, fd, iov, count, [0, 0], 0)
    }

    pub(super) fn writev(&self, g: Guest, fd: u64, iov: u64, count: u64) -> SysResult<i64> {
        self.rwv(g, libc::SYS_writev, fd, iov, count, [0, 0], 0)
    }

    pub(super) fn preadv(&self, g: Guest, fd: u64, iov: u64, count: u64, lo: u64, hi: u64) -> SysResult<i64> {
        self.rwv(g, libc::SYS_preadv, fd, iov, count, [lo, hi], 0)
    }

    pub(super) fn pwritev(&self, g: Guest, fd: u64, iov: u64, count: u64, lo: u64, hi: u64) -> SysResult<i64> {
        self.rwv(g, libc::SYS_pwritev, fd, iov, count, [lo, hi], 0)
    }

    /// sendfile(out, in, offset or NULL, count).
    pub(super) fn sendfile(&self, g: Guest, out: u64, input: u64, offset: u64, count: u64) -> SysResult<i64> {
        // A descriptor the program does not have is -1 to the host, whose checks then come in
        // Linux's order (the input's ESPIPE before the output's EBADF).
        let (ho, hi) = (self.fds().get(out).ok(), self.fds().get(input).ok());
        let off = offset_ptr(g, offset)?;
        // The count as given: the host checks it as Linux (a count negative as ssize_t is
        // EINVAL, after the input's checks) and caps it at MAX_RW_COUNT itself.
        // SAFETY: NULL or a loff_t in guest memory.
        unsafe { self.sys(libc::SYS_sendfile, &[raw_or_bad(&ho), raw_or_bad(&hi), ptr(off), count as libc::c_long]) }
    }

    /// copy_file_range(in, off_in or NULL, out, off_out or NULL, len, flags) and
    /// splice(in, off_in or NULL, out, off_out or NULL, len, flags): both descriptors the
    /// program's, each offset a loff_t the host reads and writes back.
    pub(super) fn copy_between(&self, g: Guest, nr: libc::c_long, a: &[u64; 6]) -> SysResult<i64> {
        // No flag is defined for copy_file_range (Linux: EINVAL after the descriptors' and the
        // offsets' checks), whatever the host accepts: any flag (an unsigned int) is given to
        // the host as one no Linux takes, so it answers EINVAL in its place in the order.
        let flags = match nr {
            libc::SYS_copy_file_range if a[5] as u32 != 0 => 0x8000_0000,
            _ => a[5],
        };
        // As in `sendfile`: the host's checks in Linux's order (a splice of 0 bytes is 0 before
        // any descriptor is looked at), the count as given (negative as ssize_t: EINVAL;
        // copy_file_range's position + count past 2^64: EOVERFLOW) before any data moves.
        let (hi, ho) = (self.fds().get(a[0]).ok(), self.fds().get(a[2]).ok());
        let (off_in, off_out) = (offset_ptr(g, a[1])?, offset_ptr(g, a[3])?);
        let args =
            [raw_or_bad(&hi), ptr(off_in), raw_or_bad(&ho), ptr(off_out), a[4] as libc::c_long, flags as libc::c_long];
        // SAFETY: the offsets are NULL or loff_ts in guest memory; no other pointer.
        unsafe { self.sys(nr, &args) }
    }

    /// tee(in, out, len, flags): two pipes, no memory.
    /// vmsplice(fd, iov, count, flags): Linux hands the program's pages to a pipe opened for
    /// writing, or copies a pipe's bytes out to the program's memory when it is opened for
    /// reading. Here the bytes are copied both ways (pwritev2 / preadv2 at the current
    /// position, RWF_NOWAIT for SPLICE_F_NONBLOCK), which is what a program sees unless it
    /// changes the pages it gave before the reader reads them (Linux's own caveat); a
    /// descriptor that is no pipe, or open for both, is EBADF, as on Linux.
    pub(super) fn vmsplice(&self, g: Guest, fd: u64, iov: u64, count: u64, flags: u64) -> SysResult<i64> {
        const SPLICE_F_NONBLOCK: u64 = 2;
        // Linux refuses a flag beyond SPLICE_F_ALL (an unsigned int) before the descriptor.
        if flags as u32 & !SPLICE_F_ALL != 0 {
            return Err(Errno::EINVAL);
        }
        let h = self.fds().get(fd)?;
        if h.kind() != super::fd_table::FdKind::Pipe {
            return Err(Errno::EBADF);
        }
        // SAFETY: F_GETFL on our own descriptor.
        let mode = unsafe { libc::fcntl(h.raw(), libc::F_GETFL) };
        if mode < 0 {
            return Err(Errno::last());
        }
        let nowait = if flags & SPLICE_F_NONBLOCK != 0 { libc::RWF_NOWAIT as u64 } else { 0 };
        // Offset -1: the current position (a pipe has none).
        let here = [u64::MAX, 0];
        match mode & libc::O_ACCMODE {
            // Linux waits for room in the pipe once, then hands over what fits (a blocking
            // write waited until all of it was written: a program that polls for room and
            // reads only after its vmsplice returned waited for good, LTP's vmsplice01).
            libc::O_WRONLY => loop {
                match self.rwv(g, libc::SYS_pwritev2, fd, iov, count, here, libc::RWF_NOWAIT as u64) {
                    Err(Errno::EAGAIN) if nowait == 0 => {
                        let mut p = libc::pollfd { fd: h.raw(), events: libc::POLLOUT, revents: 0 };
                        // SAFETY: one pollfd of ours.
                        unsafe { self.sys(libc::SYS_poll, &[ptr(&mut p as *mut libc::pollfd), 1, -1])? };
                    }
                    Err(Errno::EOPNOTSUPP) => break self.vmsplice_without_nowait(g, &h, iov, count, true, nowait != 0),
                    r => break r,
                }
            },
            libc::O_RDONLY => match self.rwv(g, libc::SYS_preadv2, fd, iov, count, here, nowait) {
                Err(Errno::EOPNOTSUPP) => self.vmsplice_without_nowait(g, &h, iov, count, false, nowait != 0),
                r => r,
            },
            _ => Err(Errno::EBADF),
        }
    }

    /// vmsplice on a pipe whose open file description takes no RWF_NOWAIT (a FIFO opened by
    /// its path; a pipe a `splice` has filled, since Linux 6.x clears its FMODE_NOWAIT), where
    /// Linux's own vmsplice still does not wait (SPLICE_F_NONBLOCK) or waits only for room: the
    /// bytes go through an O_NONBLOCK description of the same pipe, opened through
    /// /proc/self/fd (the program's description and its flags stay as they are). `write`: into
    /// the pipe; `no_wait`: EAGAIN rather than a wait.
    fn vmsplice_without_nowait(
        &self,
        g: Guest,
        h: &super::fd_table::HostFd,
        iov: u64,
        count: u64,
        write: bool,
        no_wait: bool,
    ) -> SysResult<i64> {
        let here = [u64::MAX, 0];
        let nr = if write { libc::SYS_pwritev2 } else { libc::SYS_preadv2 };
        if !write {
            // A read that may wait: a plain read of the description as it is; one that may
            // not: through the pipe's kept non-blocking reader.
            let raw = if no_wait { h.nonblocking_reader().ok_or(Errno::EAGAIN)? } else { h.raw() };
            return self.rwv_on(g, nr, raw, h.kind(), iov, count, here, 0);
        }
        // A writer is opened for the call only: kept open, it would keep the pipe's readers
        // from ever seeing its end.
        let path = std::ffi::CString::new(format!("/proc/self/fd/{}", h.raw())).map_err(|_| Errno::EBADF)?;
        // SAFETY: a path of ours; the descriptor is closed below.
        let twin = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if twin < 0 {
            // A FIFO without a reader opens no O_NONBLOCK writer (ENXIO): the write as it is
            // (EPIPE, as Linux's).
            return self.rwv_on(g, nr, h.raw(), h.kind(), iov, count, here, 0);
        }
        let r = loop {
            match self.rwv_on(g, nr, twin, h.kind(), iov, count, here, 0) {
                // A write that may wait waits for room once, then hands over what fits.
                Err(Errno::EAGAIN) if !no_wait => {
                    let mut p = libc::pollfd { fd: h.raw(), events: libc::POLLOUT, revents: 0 };
                    // SAFETY: one pollfd of ours.
                    if let Err(e) = unsafe { self.sys(libc::SYS_poll, &[ptr(&mut p as *mut libc::pollfd), 1, -1]) } {
                        break Err(e);
                    }
                }
                r => break r,
            }
        };
        // SAFETY: our own descriptor, opened above.
        unsafe { libc::close(twin) };
        r
    }

    pub(super) fn tee(&self, input: u64, out: u64, len: u64, flags: u64) -> SysResult<i64> {
        // Linux's order: an unknown flag is EINVAL, then a length of 0 is 0, then the pipes.
        if flags as u32 & !SPLICE_F_ALL != 0 {
            return Err(Errno::EINVAL);
        }
        if len == 0 {
            return Ok(0);
        }
        let hi = self.fds().get(input)?;
        let ho = self.fds().get(out)?;
        let args = [hi.raw() as libc::c_long, ho.raw() as libc::c_long, len as libc::c_long, flags as libc::c_long];
        // SAFETY: no pointer arguments.
        unsafe { self.sys(libc::SYS_tee, &args) }
    }
}

/// SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE | SPLICE_F_GIFT: the flags Linux's
/// vmsplice and tee take.
const SPLICE_F_ALL: u32 = 0xf;

/// How much of a write whose buffer is usable for its first `usable` bytes only Linux would
/// make, EFAULT if none: a file takes those bytes; a pipe whole pages of the buffer (it copies
/// page by page and drops the page the fault cut short); a stream socket whole chunks
/// (`STREAM_CHUNK`); a datagram socket nothing (a datagram is never cut short).
pub(super) fn short_write_len(kind: FdKind, stream: impl FnOnce() -> bool, usable: u64) -> SysResult<u64> {
    const PAGE: u64 = 4096;
    let whole = match kind {
        FdKind::Pipe => usable / PAGE * PAGE,
        FdKind::Socket if stream() => usable / STREAM_CHUNK * STREAM_CHUNK,
        FdKind::Socket => 0,
        _ => usable,
    };
    if whole == 0 {
        return Err(Errno::EFAULT);
    }
    Ok(whole)
}

/// What a stream socket's send copies at a time: Linux's copy for a Unix stream socket or TCP
/// takes ~32 KiB (32,741-36,544 bytes here) and keeps none of a chunk the fault cut short, so a
/// fault in the first ~32 KiB is EFAULT with nothing sent. (The count given back beyond that is
/// a multiple of 32 KiB, close to Linux's; what the peer receives is always what it says.)
const STREAM_CHUNK: u64 = 32 << 10;

/// The guest's array of `count` iovecs at `iov`, copied out: EINVAL for more than UIO_MAXIOV
/// of them or a length above isize::MAX (as Linux checks before any copy), EFAULT if the array
/// is not readable. The buffers themselves are not checked here.
pub(super) fn guest_iovecs(g: Guest, iov: u64, count: u64) -> SysResult<Vec<GuestIovec>> {
    if count > libc::UIO_MAXIOV as u64 {
        return Err(Errno::EINVAL);
    }
    let raw = g.read_bytes(iov, count * std::mem::size_of::<GuestIovec>() as u64)?;
    let mut out = Vec::with_capacity(count as usize);
    for chunk in raw.chunks_exact(std::mem::size_of::<GuestIovec>()) {
        // SAFETY: `chunk` is exactly one GuestIovec of plain integers.
        let v: GuestIovec = unsafe { std::ptr::read_unaligned(chunk.as_ptr() as *const GuestIovec) };
        if v.len > isize::MAX as u64 {
            return Err(Errno::EINVAL);
        }
        out.push(v);
    }
    Ok(out)
}

/// A call's optional offset (`loff_t *`, read and written back by the host): NULL stays NULL.
fn offset_ptr(g: Guest, offset: u64) -> SysResult<*mut u8> {
    if offset == 0 {
        Ok(std::ptr::null_mut())
    } else {
        g.range_mut(offset, 8)
    }
}

/// The host descriptor of a guest one the call names, or -1 (EBADF on the host) if the program
/// has no such descriptor: the host then checks the call's arguments in Linux's order.
fn raw_or_bad(h: &Option<std::sync::Arc<super::fd_table::HostFd>>) -> libc::c_long {
    h.as_ref().map_or(-1, |h| h.raw() as libc::c_long)
}

/// Buffers every access to faults, for host calls whose answer must come from the host's own
/// checks (see `Forwarder::rw_unusable`).
pub(super) mod poison {
    use std::sync::OnceLock;

    /// An address of the kernel's half: the host's range check (access_ok) refuses it.
    pub const KERNEL_HALF: usize = 0xffff_8000_0000_0000;

    /// The start of a PROT_NONE reservation of the monitor as long as the largest transfer
    /// (MAX_RW_COUNT): a user address the host accepts and then faults on. Address space only
    /// (no memory); KERNEL_HALF if it could not be reserved.
    pub fn user_range() -> usize {
        static AT: OnceLock<usize> = OnceLock::new();
        *AT.get_or_init(|| {
            let len = super::MAX_RW_COUNT as usize;
            let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
            // SAFETY: a fresh anonymous reservation, never accessed by the monitor.
            let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_NONE, flags, -1, 0) };
            if p == libc::MAP_FAILED {
                KERNEL_HALF
            } else {
                p as usize
            }
        })
    }
}
