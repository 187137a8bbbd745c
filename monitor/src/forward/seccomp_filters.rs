//! The program's seccomp filters, kept for the host programs it starts (kernel/src/linux/seccomp
//! applies them to the program itself). Each filter the program installs is registered here
//! (`process::SECCOMP_FILTER`) with the id of the filters it was installed over; an exec that
//! starts a host program names the exec'ing thread's newest, and the new process installs the
//! whole chain, oldest first, as the last step before its `execve` (`install`), so that the
//! host program runs under the filters it would have inherited on Linux.
//!
//! The program's memory is read again here after the kernel checked it: a program that changes
//! its filter meanwhile gives its host children a different one (which the host kernel checks
//! as any filter), nothing more.

use std::sync::Mutex;

use super::errno::{Errno, SysResult};
use super::guest_mem::Guest;

/// One kept filter: the id of the older filters (0: none) and its instructions.
struct Kept {
    older: u64,
    prog: Vec<libc::sock_filter>,
}

/// Filters by id - 1. Never dropped: a thread's chain may name any of them until the program
/// ends (forked children copy them with the monitor).
static KEPT: Mutex<Vec<Kept>> = Mutex::new(Vec::new());

/// The most instructions kept, over all filters (2 MiB): the kernel lets a program install at
/// most 32,768 along one chain, but threads may grow many chains.
const MAX_KEPT_INSNS: usize = 256 << 10;
/// Linux's BPF_MAXINSNS.
const MAX_INSNS: u64 = 4096;
/// SECCOMP_SET_MODE_FILTER.
const SET_MODE_FILTER: u64 = 1;

/// `SECCOMP_FILTER(older, prog, count)`: keeps the filter and answers its id.
pub(super) fn register(g: Guest, a: &[u64; 6]) -> SysResult<i64> {
    let (older, addr, count) = (a[0], a[1], a[2]);
    if count == 0 || count > MAX_INSNS {
        return Err(Errno::EINVAL);
    }
    let bytes = g.read_bytes(addr, count * 8)?;
    let prog: Vec<libc::sock_filter> = bytes
        .chunks_exact(8)
        .map(|c| libc::sock_filter {
            code: u16::from_le_bytes([c[0], c[1]]),
            jt: c[2],
            jf: c[3],
            k: u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
        })
        .collect();
    let mut kept = KEPT.lock().unwrap();
    if older > kept.len() as u64 {
        return Err(Errno::EINVAL);
    }
    if kept.iter().map(|k| k.prog.len()).sum::<usize>() + prog.len() > MAX_KEPT_INSNS {
        return Err(Errno(libc::ENOMEM));
    }
    kept.push(Kept { older, prog });
    Ok(kept.len() as i64)
}

/// The filters `id` names, oldest first (none for 0); EINVAL for an id never answered.
pub(super) fn chain(id: u64) -> SysResult<Vec<Vec<libc::sock_filter>>> {
    let kept = KEPT.lock().unwrap();
    let mut chain = Vec::new();
    let mut at = id;
    while at != 0 {
        let k = kept.get(at as usize - 1).ok_or(Errno::EINVAL)?;
        chain.push(k.prog.clone());
        // Ids only name older ones (smaller), so the walk ends.
        if k.older >= at {
            return Err(Errno::EINVAL);
        }
        at = k.older;
    }
    chain.reverse();
    Ok(chain)
}

/// The `struct sock_fprog`s of `chain` (which must outlive them), for `install`.
pub(super) fn programs(chain: &[Vec<libc::sock_filter>]) -> Vec<libc::sock_fprog> {
    chain
        .iter()
        .map(|p| libc::sock_fprog { len: p.len() as u16, filter: p.as_ptr() as *mut libc::sock_filter })
        .collect()
}

/// Installs `programs` on the calling task, oldest first: raw system calls only (it runs
/// between clone and exec). The errno of a refusal.
///
/// # Safety
/// Each program must point to its `len` instructions.
pub(super) unsafe fn install(programs: &[libc::sock_fprog]) -> Result<(), i32> {
    for p in programs {
        // SAFETY: the caller's promise; seccomp reads the program we pass.
        let r = unsafe { crate::raw_sys::syscall3(libc::SYS_seccomp, SET_MODE_FILTER, 0, p as *const _ as u64) };
        if r < 0 {
            return Err((-r) as i32);
        }
    }
    Ok(())
}
