//! The program's seccomp filters, kept for the host programs it starts (kernel/src/linux/seccomp
//! applies them to the program itself). Each filter the program installs is registered here
//! (`process::SECCOMP_FILTER`) with the id of the filters it was installed over, and given
//! back when no thread holds it any more (`process::SECCOMP_RELEASE`); an exec that
//! starts a host program names the exec'ing thread's newest, and the new process installs the
//! whole chain, oldest first, as the last step before its `execve` (`install`), so that the
//! host program runs under the filters it would have inherited on Linux.
//!
//! The program's memory is read again here after the kernel checked it: a program that changes
//! its filter meanwhile gives its host children a different one (which the host kernel checks
//! as any filter), nothing more.

use std::collections::HashMap;
use std::sync::Mutex;

use super::errno::{Errno, SysResult};
use super::guest_mem::Guest;

/// One kept filter: the id of the older filters (0: none), its instructions, and how many
/// hold it: the kernel's filter, and each newer kept filter that names it as older.
struct Kept {
    older: u64,
    prog: Vec<libc::sock_filter>,
    holders: u32,
}

/// The kept filters by id, the last id given, and their instructions in all. Forked children
/// copy them with the monitor, as their kernels copy the filters.
struct Store {
    kept: HashMap<u64, Kept>,
    last_id: u64,
    insns: usize,
}

static KEPT: Mutex<Option<Store>> = Mutex::new(None);

/// The most instructions kept at once (32 MiB): the kernel lets one chain reach 32,768, and
/// lets go of a filter when no thread holds it (`SECCOMP_RELEASE`), but many threads may each
/// hold chains of their own.
const MAX_KEPT_INSNS: usize = 4 << 20;
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
    let mut guard = KEPT.lock().unwrap();
    let store = guard.get_or_insert_with(|| Store { kept: HashMap::new(), last_id: 0, insns: 0 });
    if store.insns + prog.len() > MAX_KEPT_INSNS {
        return Err(Errno(libc::ENOMEM));
    }
    if older != 0 {
        store.kept.get_mut(&older).ok_or(Errno::EINVAL)?.holders += 1;
    }
    store.last_id += 1;
    store.insns += prog.len();
    store.kept.insert(store.last_id, Kept { older, prog, holders: 1 });
    Ok(store.last_id as i64)
}

/// `SECCOMP_RELEASE(id)`: the kernel no longer holds filter `id`; it goes once nothing holds
/// it, and so, in turn, may the older ones.
pub(super) fn release(id: u64) -> SysResult<i64> {
    let mut guard = KEPT.lock().unwrap();
    let store = guard.as_mut().ok_or(Errno::EINVAL)?;
    if !store.kept.contains_key(&id) {
        return Err(Errno::EINVAL);
    }
    let mut at = id;
    while at != 0 {
        let Some(k) = store.kept.get_mut(&at) else { break };
        k.holders -= 1;
        if k.holders > 0 {
            break;
        }
        let gone = store.kept.remove(&at).expect("looked up above");
        store.insns -= gone.prog.len();
        at = gone.older;
    }
    Ok(0)
}

/// The filters `id` names, oldest first (none for 0); EINVAL for an id never answered.
pub(super) fn chain(id: u64) -> SysResult<Vec<Vec<libc::sock_filter>>> {
    let guard = KEPT.lock().unwrap();
    let mut chain = Vec::new();
    let mut at = id;
    while at != 0 {
        let k = guard.as_ref().and_then(|s| s.kept.get(&at)).ok_or(Errno::EINVAL)?;
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

/// This module's global locks, taken without waiting for a fork (`vm::fork`): false if
/// another thread holds one.
pub(crate) fn hold_for_fork(held: &mut crate::vm::fork::Held) -> bool {
    crate::vm::fork::try_hold(held, &KEPT)
}
