//! fadvise64: advice about a file's access pattern (`cat`, `sort`, `md5sum` and other
//! coreutils give it), passed to the host's file.

use super::errno::SysResult;
use super::host::int;
use super::Forwarder;

impl Forwarder {
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
