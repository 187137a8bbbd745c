//! Futexes on host shared memory (`shared_files::on_host`): another process (a forked child in
//! a VM of its own, a native program) may wait on the same word or wake it, which this
//! kernel's wait queues never see. So a non-private wait or wake there is the host's futex
//! (`hrt_abi::process::SHARED_FUTEX`), keyed by the shared page itself, as Linux keys shared
//! futexes: process-shared mutexes, semaphores and condition variables work between
//! processes. A wake also wakes this kernel's own waiters (a wait that began while the memory
//! was still private guest RAM, before a fork shared it).

use core::sync::atomic::{AtomicBool, Ordering};

use super::errno::{SysResult, EAGAIN, EDEADLK, EINTR, EINVAL, ENOSYS, ETIMEDOUT};
use super::futex::{deadline, user_atomic, user_word, wake_in_bucket, wake_op_with, BITSET_ANY};
use super::shared_files::on_host;
use hrt_abi::process::{SHARED_FUTEX, SHARED_FUTEX_COMPARE};

const FUTEX_WAIT: u64 = 0;
const FUTEX_WAKE: u64 = 1;
const FUTEX_REQUEUE: u64 = 3;
const FUTEX_CMP_REQUEUE: u64 = 4;
const FUTEX_WAKE_OP: u64 = 5;
const FUTEX_LOCK_PI: u64 = 6;
const FUTEX_UNLOCK_PI: u64 = 7;
const FUTEX_TRYLOCK_PI: u64 = 8;
const FUTEX_LOCK_PI2: u64 = 13;
const FUTEX_WAIT_BITSET: u64 = 9;
const FUTEX_WAKE_BITSET: u64 = 10;

/// futex command `cmd` (without flags) on shared word `addr` (for a requeue or wake-op,
/// `addr` or `addr2` is shared; `val2` is the timeout argument's place).
pub fn futex(addr: u64, cmd: u64, val: u32, timeout: u64, addr2: u64, val3: u32, realtime: bool) -> SysResult {
    // Only the host touches the word (its futex answers EFAULT for a page gone from the file).
    user_word(addr)?;
    match cmd {
        FUTEX_WAIT | FUTEX_WAIT_BITSET => {
            if cmd == FUTEX_WAIT_BITSET && val3 == 0 {
                return Err(EINVAL);
            }
            let until = deadline(timeout, cmd == FUTEX_WAIT_BITSET, realtime)?;
            let ns = until.map_or(u64::MAX, |d| crate::time::ticks_to_ns(d.saturating_sub(crate::time::ticks())));
            let bitset = if cmd == FUTEX_WAIT_BITSET { val3 } else { BITSET_ANY };
            match super::calls::procs::call(SHARED_FUTEX, [addr, 0, val as u64, ns, bitset as u64, 0]) {
                // Interrupted by a signal: restarted under SA_RESTART when it had no timeout,
                // as the kernel's own futex waits are.
                Err(EINTR) if until.is_none() => Err(super::signal::ERESTARTSYS),
                r => r,
            }
        }
        FUTEX_WAKE | FUTEX_WAKE_BITSET => {
            let bitset = if cmd == FUTEX_WAKE { BITSET_ANY } else { val3 };
            if bitset == 0 {
                return Err(EINVAL);
            }
            wake(addr, val as u64, bitset)
        }
        // The kernel applies the operation to the word itself (the host's page: atomic for
        // every process that maps it); only the wake-ups need the host.
        FUTEX_WAKE_OP => wake_op_with(addr, addr2, val as u64, timeout, val3, |a, n| {
            if on_host(a) {
                wake(a, n, BITSET_ANY)
            } else {
                Ok(wake_in_bucket(a, n, BITSET_ANY))
            }
        }),
        FUTEX_REQUEUE | FUTEX_CMP_REQUEUE => {
            requeue(addr, addr2, val as u64, timeout, (cmd == FUTEX_CMP_REQUEUE).then_some(val3))
        }
        // Priority-inheritance mutexes shared between processes (PTHREAD_PRIO_INHERIT with
        // PTHREAD_PROCESS_SHARED): ENOSYS before, which glibc's pthread_mutex_lock does not
        // check: two processes were inside the lock at once. LOCK_PI's timeout is absolute on
        // CLOCK_REALTIME, LOCK_PI2's on CLOCK_MONOTONIC unless FUTEX_CLOCK_REALTIME.
        FUTEX_LOCK_PI => lock_pi(addr, deadline(timeout, true, true)?),
        FUTEX_LOCK_PI2 => lock_pi(addr, deadline(timeout, true, realtime)?),
        FUTEX_TRYLOCK_PI => try_lock_pi(addr),
        FUTEX_UNLOCK_PI => unlock_pi(addr),
        other => {
            static SAID: AtomicBool = AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                kprintln!("hrt: futex operation {other} on memory shared with other processes is not supported: returning ENOSYS (reported once)");
            }
            Err(ENOSYS)
        }
    }
}

/// Wakes up to `n` waiters of shared word `addr`: this kernel's first (a wait that began
/// before a fork shared the memory), then the host's.
fn wake(addr: u64, n: u64, bitset: u32) -> SysResult {
    let here = wake_in_bucket(addr, n, bitset);
    if here >= n {
        return Ok(here);
    }
    let there = super::calls::procs::call(SHARED_FUTEX, [addr, 1, n - here, 0, bitset as u64, 0])?;
    Ok(here + there)
}

/// FUTEX_REQUEUE and FUTEX_CMP_REQUEUE (`expect`) between two shared words: the host's
/// futex moves the waiters, which may be other processes'. Between a shared and a private
/// word the waiters would sit on two kinds of queue; that is not supported.
fn requeue(addr: u64, addr2: u64, nwake: u64, nmove: u64, expect: Option<u32>) -> SysResult {
    user_word(addr2)?;
    if !on_host(addr) || !on_host(addr2) {
        static SAID: AtomicBool = AtomicBool::new(false);
        if !SAID.swap(true, Ordering::Relaxed) {
            kprintln!("hrt: futex requeue between memory shared with other processes and private memory is not supported: returning ENOSYS (reported once)");
        }
        return Err(ENOSYS);
    }
    // Compared here before this kernel's waiters are woken, and again by the host's futex.
    if let Some(v) = expect {
        if user_atomic(addr)?.load(Ordering::SeqCst) != v {
            return Err(EAGAIN);
        }
    }
    let here = wake_in_bucket(addr, nwake, BITSET_ANY);
    let compare = expect.map_or(0, |v| SHARED_FUTEX_COMPARE | v as u64);
    match super::calls::procs::call(SHARED_FUTEX, [addr, 2, nwake - here, nmove, addr2, compare]) {
        Err(EAGAIN) if here > 0 => Ok(here),
        r => r.map(|there| here + there),
    }
}

/// Wakes up to `n` waiters of shared word `addr` in other processes only (the host's futex),
/// not this kernel's: the robust-list walk of a process that ends (`robust`).
pub fn wake_host(addr: u64, n: u64) {
    let _ = super::calls::procs::call(SHARED_FUTEX, [addr, 1, n, 0, 0, 0]);
}

/// FUTEX_LOCK_PI / LOCK_PI2 on a shared word: `pi_futex`'s protocol (the owner's thread id in
/// the word, FUTEX_WAITERS while someone sleeps), sleeping on the host's futex, where threads
/// of other processes also wait. Who takes the word after sleeping, or while the waiters bit is
/// set, keeps the bit (others may sleep, in other processes this kernel cannot see), so that
/// its unlock wakes the next. A native process's Linux cannot use such a word (its owner id is
/// this program's, no host thread's): between two `hrt` programs it works. Until the TSC
/// `until` (ETIMEDOUT); a signal runs its handler and the call starts again.
fn lock_pi(addr: u64, until: Option<u64>) -> SysResult {
    use super::pi_futex::{FUTEX_OWNER_DIED, FUTEX_TID_MASK, FUTEX_WAITERS};
    let w = super::pi_futex::word(addr)?;
    let me = super::process::current_tid();
    let mut slept = false;
    loop {
        let v = w.load(Ordering::SeqCst);
        let owner = v & FUTEX_TID_MASK;
        if owner == me {
            return Err(EDEADLK);
        }
        if owner == 0 {
            let waiters = if slept { FUTEX_WAITERS } else { v & FUTEX_WAITERS };
            let new = me | (v & FUTEX_OWNER_DIED) | waiters;
            if w.compare_exchange(v, new, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                return Ok(0);
            }
            continue;
        }
        let waiting = v | FUTEX_WAITERS;
        if v != waiting && w.compare_exchange(v, waiting, Ordering::SeqCst, Ordering::SeqCst).is_err() {
            continue;
        }
        let ns = match until {
            None => u64::MAX,
            Some(d) => {
                let now = crate::time::ticks();
                if now >= d {
                    return Err(ETIMEDOUT);
                }
                crate::time::ticks_to_ns(d - now)
            }
        };
        match super::calls::procs::call(SHARED_FUTEX, [addr, 0, waiting as u64, ns, BITSET_ANY as u64, 0]) {
            Ok(_) | Err(EAGAIN) => {}
            Err(ETIMEDOUT) => return Err(ETIMEDOUT),
            // A lock call cannot answer EINTR (as Linux's): restarted after the handler.
            Err(EINTR) => return Err(super::signal::ERESTARTNOINTR),
            Err(e) => return Err(e),
        }
        slept = true;
    }
}

/// FUTEX_TRYLOCK_PI on a shared word: takes it if it has no owner, else EAGAIN (the waiters
/// bit set first, as Linux's).
fn try_lock_pi(addr: u64) -> SysResult {
    use super::pi_futex::{FUTEX_OWNER_DIED, FUTEX_TID_MASK, FUTEX_WAITERS};
    let w = super::pi_futex::word(addr)?;
    let me = super::process::current_tid();
    loop {
        let v = w.load(Ordering::SeqCst);
        let owner = v & FUTEX_TID_MASK;
        if owner == me {
            return Err(EDEADLK);
        }
        let (new, answer) = if owner == 0 {
            (me | (v & (FUTEX_OWNER_DIED | FUTEX_WAITERS)), Ok(0))
        } else {
            (v | FUTEX_WAITERS, Err(EAGAIN))
        };
        if w.compare_exchange(v, new, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            return answer;
        }
    }
}

/// FUTEX_UNLOCK_PI on a shared word: the owner frees it and wakes one waiter, here or in
/// another process (EPERM for a lock the caller does not hold).
fn unlock_pi(addr: u64) -> SysResult {
    super::pi_futex::release(addr, |a, waiters| if waiters { wake(a, 1, BITSET_ANY).map(|_| ()) } else { Ok(()) })
}
