//! Stopping every other CPU at a safe point, for the Linux layer's `fork`: while the monitor
//! copies guest memory, no CPU may be half-way through a kernel structure or hold a lock. A
//! safe point is the idle loop or a return to the program (every kernel path returning to user
//! code passes it); the freezing CPU kicks the others there with an IPI and waits until each
//! spins in `park`, which touches nothing but the two atomics below.

use core::sync::atomic::{AtomicUsize, Ordering};

use crate::arch::{apic, irq};
use crate::cpu;

/// The freezing CPU's index + 1 (0: no freeze).
static FREEZER: AtomicUsize = AtomicUsize::new(0);
/// CPUs parked in `park`.
static PARKED: AtomicUsize = AtomicUsize::new(0);

/// How often the freezing CPU repeats its kick while some CPU is still not parked (one that was
/// in kernel code when the first one came passes a safe point later, but may not be kicked
/// again by anything else).
const KICK_EVERY_NS: u64 = 200_000;

/// A safe point: if another CPU is freezing the others, waits here until it thaws them.
#[inline]
pub fn check() {
    let f = FREEZER.load(Ordering::Acquire);
    if f != 0 && f != cpu::id() + 1 {
        park();
    }
}

fn park() {
    let was = irq::save_and_disable();
    PARKED.fetch_add(1, Ordering::SeqCst);
    while FREEZER.load(Ordering::Acquire) != 0 {
        core::hint::spin_loop();
    }
    PARKED.fetch_sub(1, Ordering::SeqCst);
    irq::restore(was);
}

/// Stops every other CPU at a safe point. Returns false (and stops nothing) if they are not all
/// stopped within `timeout_ns`. The caller must hold no lock and must call `thaw` after.
pub fn freeze_others(timeout_ns: u64) -> bool {
    loop {
        let me = cpu::id() + 1;
        let f = FREEZER.load(Ordering::Acquire);
        if f == me {
            // Another thread of this CPU froze the others and was switched away (preempted,
            // or blocked on the host): parking here would stop the one CPU that can thaw them.
            // Let it run until it thaws, with interrupts on meanwhile (what wakes it may be
            // one); nothing is frozen by this thread yet.
            let was = irq::enabled();
            irq::enable();
            super::yield_now();
            if !was {
                irq::disable();
            }
        } else if f != 0 {
            // Another CPU is freezing at the same time: be frozen by it first (we are at a
            // safe point).
            park();
        } else if PARKED.load(Ordering::SeqCst) != 0 {
            // CPUs still leaving the last freeze must not count as parked for this one.
            core::hint::spin_loop();
        } else if FREEZER.compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            break;
        }
    }
    let others = cpu::count() - 1;
    let start = crate::time::ticks();
    let (timeout, every) = (crate::time::ns_to_ticks(timeout_ns), crate::time::ns_to_ticks(KICK_EVERY_NS));
    let mut kicked = start;
    if others > 0 {
        apic::send_ipi_all_others(apic::KICK_VECTOR);
    }
    while PARKED.load(Ordering::SeqCst) < others {
        let now = crate::time::ticks();
        if now.wrapping_sub(start) >= timeout {
            thaw();
            return false;
        }
        if now.wrapping_sub(kicked) >= every {
            apic::send_ipi_all_others(apic::KICK_VECTOR);
            kicked = now;
        }
        core::hint::spin_loop();
    }
    true
}

/// Lets the frozen CPUs go on.
pub fn thaw() {
    FREEZER.store(0, Ordering::Release);
}

/// A forked child's kernel: nothing is frozen in its copy of memory.
pub fn reset() {
    FREEZER.store(0, Ordering::SeqCst);
    PARKED.store(0, Ordering::SeqCst);
}
