//! When a rewrite that stops the other CPUs (`regsite::patch_frozen`: register sites, the
//! generic `syscall()` function, variable-number sites) is made.
//!
//! Stopping a CPU that runs the program costs it an interrupt through emulated ring 0 on PVM
//! (~80 emulated instructions, 100-400 us on this host) plus the wait for the patch. A thread's
//! first futex wait in its OpenMP runtime, while another thread computes, stalled that other
//! thread ~0.3 ms per site (EPCC's delay calibration under the program's own libgomp came out
//! 10x too short). So a site whose call comes while another CPU runs a thread keeps SYSCALL
//! (~2.8 K cycles a call) for now, and is patched at a later call that finds every other CPU
//! idle (a polling idle CPU parks at its next look, a halted one stays halted), or at its
//! `PATCH_AT_CALL`th call: a hot site is worth the stop. Most such sites run a few times
//! (start-up, each thread's first waits) and then cost no other CPU anything.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Sites whose patch waits, and how many of their calls came so far (a site is never 0).
const SLOTS: usize = 64;
static SITES: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
static CALLS: [AtomicU32; SLOTS] = [const { AtomicU32::new(0) }; SLOTS];
/// The call at which a site is patched even with other CPUs busy.
const PATCH_AT_CALL: u32 = 16;

/// Whether the call from `site` that is being made may patch it now (see the module comment).
/// With the table full, yes.
pub fn may_patch(site: u64) -> bool {
    if !crate::sched::others_run_threads() {
        return true;
    }
    for (slot, calls) in SITES.iter().zip(&CALLS) {
        let s = slot.load(Ordering::Acquire);
        let mine = s == site
            || (s == 0
                && match slot.compare_exchange(0, site, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => true,
                    Err(now) => now == site,
                });
        if mine {
            return calls.fetch_add(1, Ordering::AcqRel) + 1 >= PATCH_AT_CALL;
        }
    }
    true
}

/// Program memory in `[start, end)` is unmapped: code mapped there later counts afresh.
pub fn forget(start: u64, end: u64) {
    for (slot, calls) in SITES.iter().zip(&CALLS) {
        let s = slot.load(Ordering::Acquire);
        if s != 0
            && (start..end).contains(&s)
            && slot.compare_exchange(s, 0, Ordering::AcqRel, Ordering::Acquire).is_ok()
        {
            calls.store(0, Ordering::Release);
        }
    }
}
