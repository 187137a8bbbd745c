//! Mutexes on a 32-bit word (0 free, 1 held, 2 held with sleepers): critical sections, the
//! `atomic` fallback lock and `omp_lock_t` (libgomp's is one int). A contended locker spins a
//! little before it sleeps on the word as a futex.

use core::sync::atomic::{AtomicU32, Ordering};

use crate::linux::futex;

/// Most pauses between two looks at a held lock word. Looking less often leaves the line with
/// the holder, whose unlock and next lock then need no transfer (EPCC critical and lock
/// overheads on 2 vCPUs, medians of 3 alternating runs: 0.107-0.131 us without backoff,
/// 0.060-0.075 us with it, Linux and libgomp 0.088-0.094 us).
const BACKOFF_MAX: u32 = 16;

/// Takes the lock: a free word is one `lock cmpxchg` with no frame around it (the wait is
/// out of line, so the entry points that jump here save no registers first).
#[inline(always)]
pub fn lock(w: &AtomicU32) {
    if w.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
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
    let (mut paused, mut looks) = (0u64, 0u64);
    let mut backoff = 1u32;
    while paused < spin_rounds {
        for _ in 0..backoff {
            core::hint::spin_loop();
        }
        paused += backoff as u64;
        if w.load(Ordering::Relaxed) == 0 && w.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            return;
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
        looks += 1;
        // The holder may be waiting for this CPU (more threads than vCPUs).
        if looks.is_multiple_of(64) {
            crate::linux::signal::take_while_waiting();
            if crate::sched::runnable_here() > 0 {
                crate::sched::yield_now();
            }
        }
    }
    while w.swap(2, Ordering::Acquire) != 0 {
        futex::wait_word(w, 2);
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

/// The unlock of the frameless entry points when a sleeper waits (the word was 2).
pub extern "C" fn wake_one_at(w: *const AtomicU32) {
    // SAFETY: as in `lock_contended_at`.
    futex::wake_word(unsafe { &*w }, 1);
}

pub fn try_lock(w: &AtomicU32) -> bool {
    w.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok()
}

pub fn unlock(w: &AtomicU32) {
    if w.swap(0, Ordering::Release) == 2 {
        futex::wake_word(w, 1);
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
