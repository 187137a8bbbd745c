//! Mutexes on a 32-bit word: critical sections, the `atomic` fallback lock and `omp_lock_t`
//! (libgomp's is one int). Bit 0 says held, bit 1 that a locker may sleep on the word (as a
//! futex), and bits 2-31 count the unlocks (wrapping): a waiter that sees the count move while
//! the lock is held each time it looks knows the lock is being taken again and again (short
//! sections), and looks less often; one that sees the same count sees one long section, and
//! looks often so as to take the lock soon after it ends. A contended locker spins a little
//! before it sleeps.

use core::sync::atomic::{AtomicU32, Ordering};

use crate::linux::futex;

/// The word's bits (module comment).
const HELD: u32 = 1;
const SLEEPERS: u32 = 2;
const STATE: u32 = HELD | SLEEPERS;
const ONE_UNLOCK: u32 = 4;

/// Most pauses between two looks while the lock changes hands between looks. Looking less
/// often leaves the line with the holder, whose unlock and next lock then need no transfer
/// (EPCC critical and lock overheads on 2 vCPUs: 0.107-0.131 us without backoff, 0.060-0.075 us
/// with up to 16 pauses, Linux and libgomp 0.088-0.094 us; in stop 54's host state 0.027-0.049
/// with 16 against Linux's 0.030-0.053, 0.014-0.022 with 64).
const BACKOFF_CHURN: u32 = 64;

/// Most pauses between two looks while one section goes on: a waiter finds the lock free at
/// most this many pauses (~25 cycles each here) after it was released (two threads taking
/// turns with 5 us sections: 5.7 us a section with 16, 6.0-6.3 with 64, Linux 5.4).
const BACKOFF_HELD: u32 = 16;

/// Pauses between two looks for other work while waiting (signals, a thread of this CPU that
/// may hold the lock): about every 1,000 pauses, whatever the backoff.
const YIELD_EVERY: u64 = 1024;

/// Takes the lock: a free word is one `lock bts` with no frame around it (the wait is out of
/// line, so the entry points that jump here save no registers first).
#[inline(always)]
pub fn lock(w: &AtomicU32) {
    if !try_lock(w) {
        lock_contended(w);
    }
}

#[cold]
#[inline(never)]
fn lock_contended(w: &AtomicU32) {
    // Spin as long as a waiting thread does (libgomp's spin count, GOMP_SPINCOUNT): a holder
    // that sleeps on the word must wake its successor with a futex call at every unlock.
    // The count is of pauses, as libgomp counts its spin loop's rounds, whatever the backoff.
    let spin_rounds = super::icv::spin_rounds();
    let (mut paused, mut next_yield) = (0u64, YIELD_EVERY);
    let mut backoff = 1u32;
    let mut seen = w.load(Ordering::Relaxed);
    while paused < spin_rounds {
        for _ in 0..backoff {
            core::hint::spin_loop();
        }
        paused += backoff as u64;
        let now = w.load(Ordering::Relaxed);
        if now & HELD == 0 && try_lock(w) {
            return;
        }
        let cap = if (now ^ seen) & !STATE != 0 { BACKOFF_CHURN } else { BACKOFF_HELD };
        backoff = (backoff * 2).min(cap);
        seen = now;
        // The holder may be waiting for this CPU (more threads than vCPUs).
        if paused >= next_yield {
            next_yield = paused + YIELD_EVERY;
            // A safe point for another CPU's fork (as in `wait::Spin`): the holder may be the
            // forking thread.
            crate::sched::freeze::check();
            crate::linux::signal::take_while_waiting();
            if crate::sched::runnable_here() > 0 {
                crate::sched::yield_now();
            }
        }
    }
    // Taken from the sleeping path, the lock keeps SLEEPERS (there may be other sleepers), so
    // that its unlock wakes one.
    loop {
        let old = w.fetch_or(HELD | SLEEPERS, Ordering::Acquire);
        if old & HELD == 0 {
            return;
        }
        futex::wait_word(w, old | HELD | SLEEPERS);
        crate::linux::signal::take_while_waiting();
    }
}

/// A lock word alone in its cache line (the unnamed critical section, the `atomic` lock). The
/// word comes first (`arch::word_lock` addresses the static).
#[repr(C, align(128))]
pub struct Padded(pub AtomicU32);

/// The contended path of the frameless entry points (`arch::word_lock`), the word in rdi.
pub extern "C" fn lock_contended_at(w: *const AtomicU32) {
    // SAFETY: the entry point's lock word (a runtime static, or the program's lock).
    lock_contended(unsafe { &*w })
}

/// The rest of an unlock (`unlock`, and the frameless entry points with the word in rdi) whose
/// word was `old` before it added 3: not just HELD. With SLEEPERS, the bit is cleared if the
/// lock is still free (a locker that took it meanwhile wakes at its own unlock) and one sleeper
/// is woken; it takes the lock with SLEEPERS set again, in case there are more. A word that
/// was not held (an unlock of a free lock, which the program may not do) gets its 3 back.
pub extern "C" fn wake_one_at(w: *const AtomicU32, old: u32) {
    // SAFETY: as in `lock_contended_at`.
    let w = unsafe { &*w };
    if old & HELD == 0 {
        w.fetch_sub(HELD | SLEEPERS, Ordering::Relaxed);
        return;
    }
    let mut now = w.load(Ordering::Relaxed);
    while now & STATE == SLEEPERS {
        match w.compare_exchange_weak(now, now & !SLEEPERS, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => break,
            Err(v) => now = v,
        }
    }
    futex::wake_word(w, 1);
}

pub fn try_lock(w: &AtomicU32) -> bool {
    w.fetch_or(HELD, Ordering::Acquire) & HELD == 0
}

/// Frees the lock and counts the unlock, as `arch::word_lock`'s unlock entry points do: adding
/// 3 to a held word clears HELD and carries into the count (ONE_UNLOCK - HELD).
pub fn unlock(w: &AtomicU32) {
    let old = w.fetch_add(ONE_UNLOCK - HELD, Ordering::Release);
    if old & STATE != HELD {
        wake_one_at(w, old);
    }
}

/// The word at a program address (an `omp_lock_t`, a named critical's pointer variable).
///
/// # Safety
/// `addr` is 4-byte aligned program memory that the program gave the runtime for this use.
pub unsafe fn word_at<'a>(addr: *mut u8) -> &'a AtomicU32 {
    // SAFETY: the caller's contract.
    unsafe { &*(addr as *const AtomicU32) }
}

/// `omp_nest_lock_t` as libgomp lays it out: { int lock; int count; void *owner; }.
#[repr(C)]
pub struct NestLock {
    pub lock: AtomicU32,
    pub count: i32,
    pub owner: *mut u8,
}

/// The owner identity of nestable locks: the current task (OpenMP 3.0 on: locks are owned by
/// tasks, so an included task or a `parallel if(0)` region does not own its encountering
/// task's lock). A task's context is alive, at one address, while the task runs.
pub fn owner() -> *mut u8 {
    let c = super::thread::this().task();
    // SAFETY: the current task's record is alive while it runs.
    let other = unsafe { (*c).lock_owner };
    if other.is_null() {
        c as *mut u8
    } else {
        other
    }
}
