//! mincore: which pages of a range are resident. Program memory is physical and mapped up
//! front, so every mapped page is; an unmapped page in the range is ENOMEM, as on Linux.
//! (grep's and other GNU tools' stack-overflow detection probe the stack this way.)
//! mlock and its kin (gpg's secure memory, real-time programs): every page is
//! resident and stays so (no demand paging, no swap), so locking is already done; the calls
//! check their arguments as Linux does (RLIMIT_MEMLOCK is not counted).

use crate::arch::traps::TrapFrame;
use crate::linux::errno::{SysResult, EINVAL, ENOMEM};
use crate::linux::uaccess;
use crate::linux::usermem::{page_up, PAGE};

pub fn mincore(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (addr, len, vec) = (a[0], a[1], a[2]);
    if !addr.is_multiple_of(PAGE) {
        return Err(EINVAL);
    }
    let len = page_up(len);
    let end = addr.checked_add(len).ok_or(ENOMEM)?;
    if end > uaccess::USER_END || !crate::linux::usermap::is_mapped(addr, len) {
        return Err(ENOMEM);
    }
    uaccess::slice_mut(vec, len / PAGE)?.fill(1);
    Ok(0)
}

/// Whether `[addr, addr + len)`, widened to whole pages, is mapped (mlock's ENOMEM otherwise).
fn mapped_pages(addr: u64, len: u64) -> SysResult {
    let start = addr & !(PAGE - 1);
    let end = addr.checked_add(len).map(page_up).ok_or(ENOMEM)?;
    if end > uaccess::USER_END || len != 0 && !crate::linux::usermap::is_mapped(start, end - start) {
        return Err(ENOMEM);
    }
    Ok(0)
}

/// mlock and munlock.
pub fn mlock(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    mapped_pages(a[0], a[1])
}

/// mlock2(addr, len, flags): MLOCK_ONFAULT is the only flag.
pub fn mlock2(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    const MLOCK_ONFAULT: u64 = 1;
    if a[2] & !MLOCK_ONFAULT != 0 {
        return Err(EINVAL);
    }
    mapped_pages(a[0], a[1])
}

/// mlockall(flags): MCL_CURRENT, MCL_FUTURE, and MCL_ONFAULT with one of them.
pub fn mlockall(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    const CURRENT: u64 = 1;
    const FUTURE: u64 = 2;
    const ONFAULT: u64 = 4;
    let flags = a[0];
    if flags == 0 || flags & !(CURRENT | FUTURE | ONFAULT) != 0 || flags == ONFAULT {
        return Err(EINVAL);
    }
    Ok(0)
}

pub fn munlockall(_: &mut TrapFrame, _: [u64; 6]) -> SysResult {
    Ok(0)
}
