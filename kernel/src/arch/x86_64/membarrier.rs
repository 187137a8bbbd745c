//! A memory barrier on every CPU that may be running the program (membarrier(2)): each other
//! busy CPU takes an IPI whose handler makes a locked write (a full barrier) and, when asked, a
//! serializing CPUID (SYNC_CORE: the CPU drops what it prefetched of code another thread just
//! changed), and the caller waits until all have. Taking an interrupt orders the CPU's earlier
//! accesses before the handler's; a CPU in its idle loop runs no program code and gets no IPI
//! (its next thread starts through the scheduler's locks, which order memory as well), nor
//! does a dormant one. One request at a time: a caller waits for the request's flag with
//! interrupts enabled (and the handler is `register_immediate`: it runs even where ring-3 mode
//! masks interrupts), so two CPUs that both call cannot deadlock; the flag's holder keeps them
//! masked.

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

pub const MEMBARRIER_VECTOR: u8 = 0xf5;

static BUSY: AtomicBool = AtomicBool::new(false);
static REGISTERED: AtomicBool = AtomicBool::new(false);
/// CPUs that have not passed the published request's barrier yet.
static PENDING: AtomicUsize = AtomicUsize::new(0);
/// Whether the published request asks for a serializing instruction too.
static SYNC_CORE: AtomicBool = AtomicBool::new(false);

fn on_ipi(_: &mut super::traps::TrapFrame) {
    if SYNC_CORE.load(Ordering::Acquire) {
        // CPUID is serializing: instructions after it are fetched anew.
        let _ = super::instr::cpuid(0, 0);
    }
    // A locked read-modify-write: a full barrier, then the caller may go on.
    PENDING.fetch_sub(1, Ordering::SeqCst);
}

/// Returns once every CPU (of `cpus`) that runs a thread has passed a full memory barrier, and
/// with `sync_core` a serializing instruction.
pub fn all_cpus(cpus: usize, sync_core: bool) {
    core::sync::atomic::fence(Ordering::SeqCst);
    if cpus <= 1 {
        return;
    }
    // Held with interrupts masked (as the TLB shootdown's request, `tlb::RequestGuard`): its
    // holder is never switched away or parked for a fork while it holds it.
    let were_enabled = loop {
        let were_enabled = super::irq::save_and_disable();
        if !BUSY.swap(true, Ordering::Acquire) {
            break were_enabled;
        }
        super::irq::restore(were_enabled);
        while BUSY.load(Ordering::Relaxed) {
            core::hint::spin_loop();
        }
    };
    if !REGISTERED.swap(true, Ordering::AcqRel) {
        super::traps::register_immediate(MEMBARRIER_VECTOR, on_ipi);
    }
    SYNC_CORE.store(sync_core, Ordering::Release);
    super::cpu::settle();
    let me = super::cpu::id();
    for c in (0..cpus).filter(|&c| c != me && !super::cpu::is_dormant(c) && !super::tlb::is_idle(c)) {
        // Counted before the IPI goes, so that no handler counts down below zero.
        PENDING.fetch_add(1, Ordering::SeqCst);
        super::apic::send_ipi(super::cpu::apic_id(c), MEMBARRIER_VECTOR);
    }
    while PENDING.load(Ordering::Acquire) != 0 {
        core::hint::spin_loop();
    }
    if sync_core {
        let _ = super::instr::cpuid(0, 0);
    }
    BUSY.store(false, Ordering::Release);
    super::irq::restore(were_enabled);
}
