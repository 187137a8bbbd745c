//! Futexes on host shared memory (`hrt_abi::process::SHARED_FUTEX`): a word in a `MAP_SHARED`
//! mapping, a System V segment or anonymous memory shared at a fork is the host's page, and
//! other processes (forked children in VMs of their own, native programs) wait on it and wake
//! it with the host's futexes, keyed by the page itself. So the kernel hands the program's
//! non-private futex calls on such words here: a process-shared mutex, semaphore or condition
//! variable then works between processes as on Linux.

use super::errno::{Errno, SysResult};
use super::guest_mem::Guest;
use super::host::ptr;
use super::Forwarder;

impl Forwarder {
    /// args: addr, 0 (wait while the word holds `val`, timeout in ns or u64::MAX), 1 (wake
    /// at most `val` waiters) or 2 (requeue: see `hrt_abi::process::SHARED_FUTEX`).
    pub(super) fn shared_futex(&self, g: Guest, a: &[u64; 6]) -> SysResult<i64> {
        let (addr, wake, val, timeout) = (a[0], a[1], a[2], a[3]);
        // The waiters' and wakers' bits (FUTEX_WAIT_BITSET, FUTEX_WAKE_BITSET): across
        // processes as within one (0, from an older kernel: all).
        let bitset = match a[4] as u32 {
            0 => libc::c_long::from(-1i32),
            b => libc::c_long::from(b as i32),
        };
        if !addr.is_multiple_of(4) {
            return Err(Errno::EINVAL);
        }
        let word = g.range(addr, 4)?;
        if wake == 2 {
            return self.shared_futex_requeue(g, word, a);
        }
        if wake == 1 {
            let n = libc::c_long::from(i32::try_from(val).unwrap_or(i32::MAX));
            // SAFETY: the word is 4 checked bytes of guest memory; FUTEX_WAKE_BITSET only looks
            // it up.
            return unsafe {
                self.sys(libc::SYS_futex, &[ptr(word), libc::FUTEX_WAKE_BITSET as libc::c_long, n, 0, 0, bitset])
            };
        }
        if wake != 0 {
            return Err(Errno::EINVAL);
        }
        // FUTEX_WAIT_BITSET's timeout is absolute, on CLOCK_MONOTONIC.
        let ts = (timeout != u64::MAX).then(|| {
            let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: clock_gettime writes the struct we pass.
            unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
            let ns = (now.tv_nsec as u64).saturating_add(timeout % 1_000_000_000);
            let secs = (now.tv_sec as u64).saturating_add(timeout / 1_000_000_000).saturating_add(ns / 1_000_000_000);
            libc::timespec {
                tv_sec: secs.min(i64::MAX as u64) as libc::time_t,
                tv_nsec: (ns % 1_000_000_000) as libc::c_long,
            }
        });
        let tp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
        let expected = libc::c_long::from(val as u32 as i32);
        // SAFETY: the word is 4 checked bytes of guest memory, the timeout our own (or null);
        // FUTEX_WAIT_BITSET only reads the word.
        unsafe {
            self.sys(
                libc::SYS_futex,
                &[ptr(word), libc::FUTEX_WAIT_BITSET as libc::c_long, expected, ptr(tp), 0, bitset],
            )
        }
    }

    /// The host's FUTEX_REQUEUE or FUTEX_CMP_REQUEUE from `word` (guest `a[0]`, checked) to
    /// guest `a[4]`: both words are the program's shared pages, which other processes map.
    fn shared_futex_requeue(&self, g: Guest, word: *mut u8, a: &[u64; 6]) -> SysResult<i64> {
        let (nwake, nmove, addr2, compare) = (a[2], a[3], a[4], a[5]);
        if !addr2.is_multiple_of(4) {
            return Err(Errno::EINVAL);
        }
        let word2 = g.range(addr2, 4)?;
        let count = |n: u64| libc::c_long::from(i32::try_from(n).unwrap_or(i32::MAX));
        let (cmd, expected) = if compare & hrt_abi::process::SHARED_FUTEX_COMPARE != 0 {
            (libc::FUTEX_CMP_REQUEUE, libc::c_long::from(compare as u32 as i32))
        } else {
            (libc::FUTEX_REQUEUE, 0)
        };
        // SAFETY: both words are 4 checked bytes of guest memory; the host's futex reads the
        // first (for the compare) and only looks the pages up. The number to move goes in the
        // timeout's place, as the futex call takes it.
        unsafe {
            self.sys(
                libc::SYS_futex,
                &[ptr(word), cmd as libc::c_long, count(nwake), count(nmove), ptr(word2), expected],
            )
        }
    }
}
