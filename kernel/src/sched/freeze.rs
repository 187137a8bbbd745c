//! Stopping every other CPU at a safe point, for the Linux layer's `fork`: while the monitor
//! copies guest memory, no CPU may be half-way through a kernel structure or hold a lock. A
//! safe point is the idle loop or a return to the program (every kernel path returning to user
//! code passes it); the freezing CPU kicks the others there with an IPI and waits until each
//! spins in `park`, which touches nothing but the atomics below.
//!
//! Patching program code needs less (`Halted::AreStopped`): only that no other CPU runs program
//! code meanwhile. A halted CPU runs none: woken, it passes `check` in its idle loop before it
//! runs a thread again. So it is left halted rather than woken by an IPI, which with more vCPUs
//! than host CPUs cost milliseconds per patch (each lazily rewritten system-call site of a
//! glibc program's start-up: ~7.7 ms each at 4 vCPUs on 2 host CPUs, 0.3 ms at 2).

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::arch::{apic, irq};
use crate::cpu;
use hrt_abi::MAX_CPUS;

/// The freezing CPU's index + 1 (0: no freeze).
static FREEZER: AtomicUsize = AtomicUsize::new(0);
/// CPUs parked in `park`.
static PARKED: AtomicUsize = AtomicUsize::new(0);
/// Per CPU: parked in `park` now.
static PARKED_HERE: [AtomicBool; MAX_CPUS] = [const { AtomicBool::new(false) }; MAX_CPUS];

/// Whether a halted CPU counts as stopped for a freeze.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Halted {
    /// It must be stopped before it writes anything (`fork`: memory is copied meanwhile).
    /// With the kernel in ring 0 it is woken and parked: woken, it runs interrupt handlers
    /// that take locks before it reaches `check`. In ring-3 mode an interrupt that wakes it
    /// is only noted (in its own per-CPU words) until its idle loop unmasks, and the loop
    /// checks for a freeze first (`idle_loop`, `Sched::asleep`): a CPU asleep in its halt
    /// counts as stopped as it is. Waking it cost an IPI through the hypervisor and its
    /// emulated ring-0 path: 0.2-8.7 ms per fork at `--cpus 2`, 4-13 ms at `--cpus 4` (where
    /// three such CPUs share two host CPUs).
    MustPark,
    /// It is stopped as it is (patching program code: it runs none before `check`).
    AreStopped,
}

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
    PARKED_HERE[cpu::id()].store(true, Ordering::SeqCst);
    while FREEZER.load(Ordering::Acquire) != 0 {
        core::hint::spin_loop();
    }
    PARKED_HERE[cpu::id()].store(false, Ordering::SeqCst);
    PARKED.fetch_sub(1, Ordering::SeqCst);
    irq::restore(was);
}

/// Stops every other CPU at a safe point (or, with `Halted::AreStopped`, leaves a halted one
/// halted). Returns false (and stops nothing) if they are not all stopped within `timeout_ns`.
/// The caller must hold no lock and must call `thaw` after.
pub fn freeze_others(timeout_ns: u64, halted: Halted) -> bool {
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
    let me = cpu::id();
    let start = crate::time::ticks();
    let (timeout, every) = (crate::time::ns_to_ticks(timeout_ns), crate::time::ns_to_ticks(KICK_EVERY_NS));
    // A CPU seen halted after FREEZER was set (both SeqCst) passes `check` before it runs a
    // thread; one seen running gets kicked to a safe point.
    // A dormant CPU (`cpu::make_dormant`) runs nothing and starts only when asked.
    cpu::settle();
    let asleep_is_stopped = crate::arch::irq::noted_while_masked();
    let stopped = |c: usize| {
        let s = super::on_cpu(c);
        cpu::is_dormant(c)
            || PARKED_HERE[c].load(Ordering::SeqCst)
            || (halted == Halted::AreStopped && s.halted.load(Ordering::SeqCst))
            || (asleep_is_stopped && s.asleep.load(Ordering::SeqCst))
    };
    let mut kicked = None;
    loop {
        let mut all = true;
        for c in (0..cpu::count()).filter(|&c| c != me && !stopped(c)) {
            all = false;
            let now = crate::time::ticks();
            // A CPU polling in its idle loop parks at its next look without an interrupt
            // (on PVM each costs that CPU an emulated ring-0 entry).
            if kicked.is_none_or(|at: u64| now.wrapping_sub(at) >= every) && !super::polls_idle(c) {
                apic::send_ipi(cpu::apic_id(c), apic::KICK_VECTOR);
            }
        }
        if all {
            return true;
        }
        let now = crate::time::ticks();
        if kicked.is_none_or(|at: u64| now.wrapping_sub(at) >= every) {
            kicked = Some(now);
        }
        if now.wrapping_sub(start) >= timeout {
            thaw();
            return false;
        }
        core::hint::spin_loop();
    }
}

/// Lets the frozen CPUs go on.
pub fn thaw() {
    FREEZER.store(0, Ordering::Release);
}

/// A forked child's kernel: nothing is frozen in its copy of memory.
pub fn reset() {
    FREEZER.store(0, Ordering::SeqCst);
    PARKED.store(0, Ordering::SeqCst);
    for p in &PARKED_HERE {
        p.store(false, Ordering::SeqCst);
    }
}
