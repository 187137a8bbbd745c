//! TLB shootdown after page permissions were reduced: this CPU flushes what went stale, and
//! every other CPU does the same from an IPI before `shoot_down` returns, so no CPU keeps
//! using a permission the program just gave up.
//!
//! A few pages are flushed with INVLPG each; more, or a merged table, reload CR3 (CR4.PGE is
//! off, so that drops every TLB entry). One shootdown at a time; the initiator waits with
//! interrupts enabled, so two CPUs that both want one cannot deadlock.

use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use super::paging::StaleTlb;
use crate::sync::SpinLock;

pub const TLB_VECTOR: u8 = 0xf2;

/// Serialises shootdowns; holds the published request.
static REQUEST_LOCK: SpinLock<()> = SpinLock::new(());
static PAGES: [AtomicU64; StaleTlb::MAX] = [const { AtomicU64::new(0) }; StaleTlb::MAX];
/// Pages in the published request; `usize::MAX`: flush everything.
static COUNT: AtomicUsize = AtomicUsize::new(0);
/// CPUs that have not flushed the published request yet.
static PENDING: AtomicUsize = AtomicUsize::new(0);
static REGISTERED: AtomicBool = AtomicBool::new(false);

fn invlpg(addr: u64) {
    // SAFETY: INVLPG only drops TLB entries.
    unsafe { core::arch::asm!("invlpg [{}]", in(reg) addr, options(nostack)) };
}

fn flush_local(count: usize, page: impl Fn(usize) -> u64) {
    if count == usize::MAX {
        // SAFETY: reloading the current tables.
        unsafe { super::instr::write_cr3(super::instr::read_cr3()) };
    } else {
        (0..count).for_each(|i| invlpg(page(i)));
    }
}

fn on_ipi(_: &mut super::traps::TrapFrame) {
    let count = COUNT.load(Ordering::Acquire);
    flush_local(count, |i| PAGES[i].load(Ordering::Relaxed));
    PENDING.fetch_sub(1, Ordering::AcqRel);
}

/// Flushes `stale` on this CPU and on the other `cpus - 1` CPUs (all of them online).
pub fn shoot_down(stale: &StaleTlb, cpus: usize) {
    if stale.is_empty() {
        return;
    }
    let count = if stale.everything() { usize::MAX } else { stale.pages().len() };
    if cpus <= 1 {
        flush_local(count, |i| stale.pages()[i]);
        return;
    }
    let _guard = REQUEST_LOCK.lock();
    if !REGISTERED.swap(true, Ordering::AcqRel) {
        super::traps::register(TLB_VECTOR, on_ipi);
    }
    for (slot, &p) in PAGES.iter().zip(stale.pages()) {
        slot.store(p, Ordering::Relaxed);
    }
    COUNT.store(count, Ordering::Release);
    PENDING.store(cpus - 1, Ordering::Release);
    super::apic::send_ipi_all_others(TLB_VECTOR);
    flush_local(count, |i| stale.pages()[i]);
    while PENDING.load(Ordering::Acquire) != 0 {
        core::hint::spin_loop();
    }
}
