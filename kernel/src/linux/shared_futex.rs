//! Futexes on host shared memory (`shared_files::on_host`): another process (a forked child in
//! a VM of its own, a native program) may wait on the same word or wake it, which this
//! kernel's wait queues never see. So a non-private wait or wake there is the host's futex
//! (`hrt_abi::process::SHARED_FUTEX`), keyed by the shared page itself, as Linux keys shared
//! futexes: process-shared mutexes, semaphores and condition variables work between
//! processes. A wake also wakes this kernel's own waiters (a wait that began while the memory
//! was still private guest RAM, before a fork shared it).

use core::sync::atomic::{AtomicBool, Ordering};

use super::errno::{SysResult, EINTR, EINVAL, ENOSYS};
use super::futex::{deadline, user_word, wake_in_bucket, BITSET_ANY};
use hrt_abi::process::SHARED_FUTEX;

const FUTEX_WAIT: u64 = 0;
const FUTEX_WAKE: u64 = 1;
const FUTEX_WAIT_BITSET: u64 = 9;
const FUTEX_WAKE_BITSET: u64 = 10;

/// futex command `cmd` (without flags) on shared word `addr`.
pub fn futex(addr: u64, cmd: u64, val: u32, timeout: u64, val3: u32, realtime: bool) -> SysResult {
    // Only the host touches the word (its futex answers EFAULT for a page gone from the file).
    user_word(addr)?;
    match cmd {
        FUTEX_WAIT | FUTEX_WAIT_BITSET => {
            if cmd == FUTEX_WAIT_BITSET && val3 == 0 {
                return Err(EINVAL);
            }
            let until = deadline(timeout, cmd == FUTEX_WAIT_BITSET, realtime)?;
            let ns = until.map_or(u64::MAX, |d| crate::time::ticks_to_ns(d.saturating_sub(crate::time::ticks())));
            match super::calls::procs::call(SHARED_FUTEX, [addr, 0, val as u64, ns, 0, 0]) {
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
            let n = val as u64;
            let here = wake_in_bucket(addr, n, bitset);
            if here >= n {
                return Ok(here);
            }
            let there = super::calls::procs::call(SHARED_FUTEX, [addr, 1, n - here, 0, 0, 0])?;
            Ok(here + there)
        }
        other => {
            static SAID: AtomicBool = AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                kprintln!("hrt: futex operation {other} on memory shared with other processes is not supported: returning ENOSYS (reported once)");
            }
            Err(ENOSYS)
        }
    }
}

/// Wakes up to `n` waiters of shared word `addr` in other processes only (the host's futex),
/// not this kernel's: the robust-list walk of a process that ends (`robust`).
pub fn wake_host(addr: u64, n: u64) {
    let _ = super::calls::procs::call(SHARED_FUTEX, [addr, 1, n, 0, 0, 0]);
}
