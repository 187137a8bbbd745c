//! mincore: which pages of a range are resident. Program memory is physical and mapped up
//! front, so every accessible page is (PROT_NONE memory not); an unmapped page in the range
//! (the break's window above the break included) is ENOMEM, as on Linux.
//! (grep's and other GNU tools' stack-overflow detection probe the stack this way.)
//! mlock and its kin (gpg's secure memory, real-time programs): every page is resident and
//! stays so (no demand paging, no swap), so locking changes no memory; the locks are kept as
//! Linux keeps them, with RLIMIT_MEMLOCK, VmLck and the rest (`linux::locked`).

use crate::arch::traps::TrapFrame;
use crate::linux::errno::{SysResult, EINVAL, ENOMEM};
use crate::linux::locked::{self, Lock};
use crate::linux::uaccess;
use crate::linux::usermem::{page_up, PAGE};

pub fn mincore(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (addr, len, vec) = (a[0], a[1], a[2]);
    if !addr.is_multiple_of(PAGE) {
        return Err(EINVAL);
    }
    let len = page_up(len);
    let end = addr.checked_add(len).ok_or(ENOMEM)?;
    if end > uaccess::USER_END || !crate::linux::usermem::program_mapped(addr, end) {
        return Err(ENOMEM);
    }
    // Pages the kernel keeps not present (PROT_NONE memory never made accessible) are not
    // resident; the rest is.
    let out = uaccess::slice_mut(vec, len / PAGE)?;
    for (i, v) in out.iter_mut().enumerate() {
        *v = crate::linux::usermap::is_mapped(addr + i as u64 * PAGE, PAGE) as u8;
    }
    Ok(0)
}

/// `[addr, addr + len)` widened to whole pages, and where its mapped part from the start ends:
/// Linux changes mapping after mapping and says ENOMEM at the first hole, having changed the
/// mappings before it (none if the range starts in a hole).
fn mapped_pages(addr: u64, len: u64) -> Result<(u64, u64, u64), u32> {
    let start = addr & !(PAGE - 1);
    let end = addr.checked_add(len).map(page_up).ok_or(ENOMEM)?;
    if end > uaccess::USER_END {
        return Err(ENOMEM);
    }
    if len == 0 || crate::linux::usermem::program_mapped(start, end) {
        return Ok((start, end, end));
    }
    let mut mapped_to = start;
    for (s, e) in crate::linux::usermem::program_parts(start, end).0 {
        if s != mapped_to {
            break;
        }
        mapped_to = e;
    }
    Ok((start, end, mapped_to))
}

/// Locks `[addr, addr + len)` as Linux's `do_mlock`: EPERM where the program may not lock,
/// ENOMEM past RLIMIT_MEMLOCK (what the range has locked already counted once) or for
/// unmapped pages.
fn lock(addr: u64, len: u64, on_fault: bool) -> SysResult {
    locked::may_lock()?;
    let (start, end, mapped_to) = mapped_pages(addr, len)?;
    if mapped_to == start && start < end {
        return Err(ENOMEM);
    }
    locked::lock_allowed(start, end)?;
    if start < mapped_to {
        locked::set(start, mapped_to, Some(Lock { on_fault }));
    }
    if mapped_to < end {
        return Err(ENOMEM);
    }
    // As Linux: the pages are locked, but populating inaccessible (PROT_NONE) ones fails, and
    // that is the call's answer.
    let inaccessible = || crate::linux::protect::runs(start, end).iter().any(|&(_, _, prot)| prot & 7 == 0);
    if !on_fault && inaccessible() {
        return Err(ENOMEM);
    }
    Ok(0)
}

pub fn mlock(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    lock(a[0], a[1], false)
}

pub fn munlock(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (start, end, mapped_to) = mapped_pages(a[0], a[1])?;
    if start < mapped_to {
        locked::set(start, mapped_to, None);
    }
    if mapped_to < end {
        return Err(ENOMEM);
    }
    Ok(0)
}

/// mlock2(addr, len, flags): MLOCK_ONFAULT is the only flag.
pub fn mlock2(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    const MLOCK_ONFAULT: u64 = 1;
    if a[2] & !MLOCK_ONFAULT != 0 {
        return Err(EINVAL);
    }
    lock(a[0], a[1], a[2] & MLOCK_ONFAULT != 0)
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
    locked::may_lock()?;
    // As Linux: the whole address space (VmSize) against the limit.
    if flags & CURRENT != 0 && !locked::within_limit(super::info::address_space()) {
        return Err(ENOMEM);
    }
    let on_fault = flags & ONFAULT != 0;
    locked::set_future(flags & FUTURE != 0, on_fault);
    if flags & CURRENT != 0 {
        // Every mapping but the vDSO's (Linux leaves its special mappings unlocked).
        for e in crate::linux::maps::entries() {
            if e.kind != hrt_abi::channel::maps_kind::VDSO {
                locked::set(e.start, e.end, Some(Lock { on_fault }));
            }
        }
    }
    Ok(0)
}

pub fn munlockall(_: &mut TrapFrame, _: [u64; 6]) -> SysResult {
    locked::set_future(false, false);
    locked::clear();
    Ok(0)
}
