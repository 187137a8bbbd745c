//! mincore: which pages of a range are resident. Program memory is physical and mapped up
//! front, so every mapped page is; an unmapped page in the range is ENOMEM, as on Linux.
//! (grep's and other GNU tools' stack-overflow detection probe the stack this way.)

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
