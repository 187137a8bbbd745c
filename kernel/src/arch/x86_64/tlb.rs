//! TLB shootdown after page permissions were reduced: this CPU flushes what went stale, and
//! every other CPU does the same from an IPI before `shoot_down` returns, so no CPU keeps
//! using a permission the program just gave up.
//!
//! A few pages are flushed with INVLPG each; more, or a merged table, reload CR3 (CR4.PGE is
//! off, so that drops every TLB entry). One shootdown at a time; the initiator waits with
//! interrupts enabled, so two CPUs that both want one cannot deadlock.

use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use super::paging::StaleTlb;

pub const TLB_VECTOR: u8 = 0xf2;

/// Serialises shootdowns (set while one holds the published request).
static REQUEST_BUSY: AtomicBool = AtomicBool::new(false);

/// Holds `REQUEST_BUSY` until dropped.
struct RequestGuard;

impl RequestGuard {
    fn acquire() -> Self {
        while REQUEST_BUSY.swap(true, Ordering::Acquire) {
            core::hint::spin_loop();
        }
        RequestGuard
    }
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        REQUEST_BUSY.store(false, Ordering::Release);
    }
}
static PAGES: [AtomicU64; StaleTlb::MAX] = [const { AtomicU64::new(0) }; StaleTlb::MAX];
/// Pages in the published request; `usize::MAX`: flush everything.
static COUNT: AtomicUsize = AtomicUsize::new(0);
/// CPUs that have not flushed the published request yet.
static PENDING: AtomicUsize = AtomicUsize::new(0);
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// Drops `count` pages (an array of addresses at `pages`) from this CPU's TLB, or everything
/// for `u64::MAX`. Runs in ring 0 (`privileged`).
extern "C" fn flush_pages(pages: u64, count: u64, _: u64) -> u64 {
    if count == u64::MAX {
        // SAFETY: reloading the current tables.
        unsafe { super::instr::write_cr3(super::instr::read_cr3()) };
        return 0;
    }
    for i in 0..count as usize {
        // SAFETY: the caller passes `count` readable addresses; INVLPG only drops TLB entries.
        unsafe {
            let addr = *(pages as *const u64).add(i);
            core::arch::asm!("invlpg [{}]", in(reg) addr, options(nostack));
        }
    }
    0
}

fn flush_local(count: usize, pages: *const u64) {
    let count = if count == usize::MAX { u64::MAX } else { count as u64 };
    super::ring3::privileged(flush_pages, pages as u64, count, 0);
}

fn on_ipi(_: &mut super::traps::TrapFrame) {
    let count = COUNT.load(Ordering::Acquire);
    flush_local(count, PAGES.as_ptr() as *const u64);
    PENDING.fetch_sub(1, Ordering::AcqRel);
}

/// Flushes `stale` on this CPU and on the other `cpus - 1` CPUs (all of them online).
pub fn shoot_down(stale: &StaleTlb, cpus: usize) {
    if stale.is_empty() {
        return;
    }
    let count = if stale.everything() { usize::MAX } else { stale.pages().len() };
    if cpus <= 1 {
        flush_local(count, stale.pages().as_ptr());
        return;
    }
    let _guard = RequestGuard::acquire();
    if !REGISTERED.swap(true, Ordering::AcqRel) {
        super::traps::register_immediate(TLB_VECTOR, on_ipi);
    }
    for (slot, &p) in PAGES.iter().zip(stale.pages()) {
        slot.store(p, Ordering::Relaxed);
    }
    COUNT.store(count, Ordering::Release);
    PENDING.store(cpus - 1, Ordering::Release);
    super::apic::send_ipi_all_others(TLB_VECTOR);
    flush_local(count, stale.pages().as_ptr());
    while PENDING.load(Ordering::Acquire) != 0 {
        core::hint::spin_loop();
    }
}
