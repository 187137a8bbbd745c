//! User and group ids. The program runs as `hrt`'s host process, with its ids (the boot-info
//! block's `uid` and `gid`, real, effective and saved alike). Calls that set an id to the value
//! it already has succeed, as on Linux: GNU make, for one, sets its effective ids to their own
//! values before it runs a command. Changing an id is not implemented: the forwarded calls run
//! on `hrt`'s host threads, which would each need the change (glibc's setxid broadcast), so it
//! fails loudly with ENOSYS and a line on stderr.

use core::sync::atomic::{AtomicBool, Ordering};

use crate::arch::traps::TrapFrame;
use crate::linux::errno::{SysResult, ENOSYS};
use crate::linux::uaccess;

/// "Leave this id as it is" in the set calls.
const UNCHANGED: u32 = u32::MAX;

fn uid() -> u32 {
    crate::bootinfo::get().uid
}

fn gid() -> u32 {
    crate::bootinfo::get().gid
}

/// Ok if every id in `asked` is UNCHANGED or already `current`.
fn keep(name: &str, asked: &[u64], current: u32) -> SysResult {
    if asked.iter().all(|&a| a as u32 == UNCHANGED || a as u32 == current) {
        return Ok(0);
    }
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
    keep("setuid", &a[..1], uid())
}

pub fn setreuid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    keep("setreuid", &a[..2], uid())
}

pub fn setresuid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    keep("setresuid", &a[..3], uid())
}

pub fn setgid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    keep("setgid", &a[..1], gid())
}

pub fn setregid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    keep("setregid", &a[..2], gid())
}

pub fn setresgid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    keep("setresgid", &a[..3], gid())
}
