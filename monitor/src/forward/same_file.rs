//! `process::SAME_FILE`: whether two of the program's descriptors share one open file
//! description. The kernel keeps its signalfds as host eventfds; one that comes back through an
//! SCM_RIGHTS message is a new descriptor of the same eventfd, which only this comparison tells
//! from a plain eventfd (an eventfd's fstat and fdinfo say nothing of who made it).

use super::errno::SysResult;
use super::Forwarder;

/// kcmp's KCMP_FILE: compare two descriptors' open files.
const KCMP_FILE: libc::c_long = 0;

impl Forwarder {
    /// 1 if guest descriptors `a` and `b` share an open file description, else 0.
    pub(super) fn same_file(&self, a: u64, b: u64) -> SysResult<i64> {
        let (a, b) = (self.fds().get(a)?, self.fds().get(b)?);
        // SAFETY: getpid has no pointers.
        let me = unsafe { libc::getpid() } as libc::c_long;
        // SAFETY: no pointers: two of this process's descriptors, compared.
        let order = unsafe {
            self.sys(libc::SYS_kcmp, &[me, me, KCMP_FILE, a.raw() as libc::c_long, b.raw() as libc::c_long])?
        };
        Ok((order == 0) as i64)
    }
}
