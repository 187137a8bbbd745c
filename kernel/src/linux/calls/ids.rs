//! User and group ids. The program runs as `hrt`'s host process, with its ids (the boot-info
//! block's `uid` and `gid`, real, effective and saved alike) and supplementary groups (the
//! host's `getgroups`). Calls that set an id (or the group list) to the value it already has
//! succeed, as on Linux: GNU make, for one, sets its effective ids to their own values before
//! it runs a command. Changing one without the capability Linux asks for (CAP_SETUID,
//! CAP_SETGID, as the host's `capget` reports `hrt`'s) is EPERM, as on Linux (a daemon that
//! drops privileges when it has them finds it has none). Changing one with it is not
//! implemented: the forwarded calls run on `hrt`'s host threads, which would each need the
//! change (glibc's setxid broadcast), so it fails loudly with ENOSYS and a line on stderr.

use core::sync::atomic::{AtomicBool, Ordering};

use crate::arch::traps::TrapFrame;
use linux_raw_sys::general::{__NR_capget, __NR_getgroups};

use crate::linux::errno::{SysResult, EINVAL, ENOSYS, EPERM};
use crate::linux::syscall::forward;
use crate::linux::uaccess;
use crate::linux::usermem::with_scratch;

const CAP_SETGID: u32 = 6;
const CAP_SETUID: u32 = 7;
/// Linux's NGROUPS_MAX.
const NGROUPS_MAX: u64 = 65536;

/// "Leave this id as it is" in the set calls.
const UNCHANGED: u32 = u32::MAX;

fn uid() -> u32 {
    crate::bootinfo::get().uid
}

fn gid() -> u32 {
    crate::bootinfo::get().gid
}

/// Whether `hrt`'s host process has capability `cap` in its effective set.
fn capable(cap: u32) -> bool {
    const VERSION_3: u64 = 0x2008_0522;
    let r = with_scratch(|page| {
        // SAFETY: `page` is a fresh page of program memory only we know: the header (version,
        // pid 0), then the two data records.
        unsafe { (page as *mut u64).write(VERSION_3) };
        let r = forward(__NR_capget as u64, [page, page + 8, 0, 0, 0, 0]);
        // SAFETY: as above; the first record's first word is the effective set's low half.
        if r < 0 {
            r
        } else {
            unsafe { ((page + 8) as *const u32).read() as i64 }
        }
    });
    r >= 0 && r as u64 & 1 << cap != 0
}

/// Ok if every id in `asked` is UNCHANGED or already `current`; else EPERM without `cap`.
fn keep(name: &str, asked: &[u64], current: u32, cap: u32) -> SysResult {
    if asked.iter().all(|&a| a as u32 == UNCHANGED || a as u32 == current) {
        return Ok(0);
    }
    if !capable(cap) {
        return Err(EPERM);
    }
    unimplemented_change(name)
}

fn unimplemented_change(name: &str) -> SysResult {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        crate::kprintln!(
            "hrt: {name} to another id is not implemented (the program keeps hrt's ids): returning ENOSYS (reported once)"
        );
    }
    Err(ENOSYS)
}

pub fn getresuid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    for p in &a[..3] {
        uaccess::write(*p, uid())?;
    }
    Ok(0)
}

pub fn getresgid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    for p in &a[..3] {
        uaccess::write(*p, gid())?;
    }
    Ok(0)
}

pub fn setuid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    keep("setuid", &a[..1], uid(), CAP_SETUID)
}

pub fn setreuid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    keep("setreuid", &a[..2], uid(), CAP_SETUID)
}

pub fn setresuid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    keep("setresuid", &a[..3], uid(), CAP_SETUID)
}

pub fn setgid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    keep("setgid", &a[..1], gid(), CAP_SETGID)
}

pub fn setregid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    keep("setregid", &a[..2], gid(), CAP_SETGID)
}

pub fn setresgid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    keep("setresgid", &a[..3], gid(), CAP_SETGID)
}

/// setgroups(size, list): Linux asks for CAP_SETGID first (EPERM), then a size up to
/// NGROUPS_MAX (EINVAL) and a readable list (EFAULT). The list the program already has (as a
/// set) is kept; another is not implemented (see the module's note).
pub fn setgroups(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (size, list) = (a[0] as u32 as u64, a[1]);
    if !capable(CAP_SETGID) {
        return Err(EPERM);
    }
    if size > NGROUPS_MAX {
        return Err(EINVAL);
    }
    let asked = uaccess::slice(list, size * 4)?;
    let asked: alloc::vec::Vec<u32> =
        asked.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let mut same = false;
    with_scratch(|page| {
        let room = crate::linux::usermem::PAGE / 4;
        let n = forward(__NR_getgroups as u64, [room, page, 0, 0, 0, 0]);
        if n >= 0 {
            // SAFETY: the host wrote `n` (at most `room`) gids into our scratch page.
            let have = unsafe { core::slice::from_raw_parts(page as *const u32, n as usize) };
            same = asked.iter().all(|g| have.contains(g)) && have.iter().all(|g| asked.contains(g));
        }
        0
    });
    if same {
        Ok(0)
    } else {
        unimplemented_change("setgroups")
    }
}
