//! Advice and hints about a file's pages, passed to the host's file: fadvise64 (`cat`, `sort`,
//! `md5sum` and other coreutils give it), readahead, sync_file_range.

use super::errno::SysResult;
use super::host::{int, uint};
use super::Forwarder;

impl Forwarder {
    /// readahead: the host reads the file's pages into its page cache (which the program's
    /// reads, forwarded, then find).
    pub(super) fn readahead(&self, fd: u64, offset: u64, count: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        // SAFETY: no pointers.
        unsafe {
            self.sys(libc::SYS_readahead, &[h.raw() as libc::c_long, offset as libc::c_long, count as libc::c_long])
        }
    }

    /// sync_file_range: writing back part of the host file (databases' write-back hints).
    pub(super) fn sync_file_range(&self, fd: u64, offset: u64, nbytes: u64, flags: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        // SAFETY: no pointers.
        unsafe {
            self.sys(
                libc::SYS_sync_file_range,
                &[h.raw() as libc::c_long, offset as libc::c_long, nbytes as libc::c_long, uint(flags)],
            )
        }
    }

    pub(super) fn fadvise64(&self, fd: u64, offset: u64, len: u64, advice: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        // SAFETY: no pointers.
        unsafe {
            self.sys(
                libc::SYS_fadvise64,
                &[h.raw() as libc::c_long, offset as libc::c_long, len as libc::c_long, int(advice)],
            )
        }
    }
}
