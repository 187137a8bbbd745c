//! Mutexes on a 32-bit word (0 free, 1 held, 2 held with sleepers): critical sections, the
//! `atomic` fallback lock and `omp_lock_t` (libgomp's is one int). A contended locker spins a
//! little before it sleeps on the word as a futex.

use core::sync::atomic::{AtomicU32, Ordering};

use crate::linux::futex;

const SPINS: u32 = 2000;

pub fn lock(w: &AtomicU32) {
    if w.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok() {
        return;
    }
    for _ in 0..SPINS {
        core::hint::spin_loop();
        if w.load(Ordering::Relaxed) == 0 && w.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            return;
        }
    }
    while w.swap(2, Ordering::Acquire) != 0 {
        futex::wait_word(w, 2);
    }
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

/// The owner identity of nestable locks: the thread.
pub fn owner() -> *mut u8 {
    crate::sched::current() as *mut u8
}
