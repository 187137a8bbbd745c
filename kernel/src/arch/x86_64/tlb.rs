//! TLB shootdown after page permissions were reduced: this CPU flushes what went stale, and
//! every other CPU does the same from an IPI before `shoot_down` returns, so no CPU keeps
//! using a permission the program just gave up.
//!
//! A few pages are flushed with INVLPG each; more, or a merged table, reload CR3 (CR4.PGE is
//! off, so that drops every TLB entry). On a PVM host (emulated ring 0, shadow paging) both
//! go through the breakpoint gate (`ring3::reload_cr3`, `ring3::invalidate_pages`) and cost
//! about the same for one page (an munmap of 4 KiB ~120-125 K cycles in all, each further
//! INVLPG ~4.5 K), but a reload has a cost that comes later: the hypervisor syncs its shadow
//! of every page table and write-protects them again, so the next store into each table
//! faults (~52 K cycles; an mmap of 4 KiB right after an munmap took ~105 K cycles so, ~52 K
//! after INVLPG). So this CPU uses INVLPG for up to `PVM_INVLPG_MAX` pages; other CPUs reload
//! (their IPI's fast path only reloads). Through the general ring-0 gate (`privileged`) a
//! reload cost ~59-65 K cycles and one INVLPG ~72-76 K, nearly all of it the gate's emulated
//! instructions.
//!
//! An idle CPU (in its idle loop, which never touches program memory) gets no IPI: waking a
//! halted vCPU costs more than the rest of an munmap. It owes a full flush instead, which it
//! does before it runs a thread again (`idle_ends`). A shootdown that frees page tables
//! interrupts every CPU, idle or not: none may keep a cached path through a freed table.
//!
//! In ring-3 mode a request to flush everything is served at the ring-3 entry itself
//! (`ring3::trap_ring3_relocate`): reload CR3, count down `PENDING`, acknowledge, return, about
//! 25 emulated instructions where the general interrupt path took ~245 (0.25 ms of the
//! receiving vCPU on PVM).

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::paging::StaleTlb;
use hrt_abi::MAX_CPUS;

pub const TLB_VECTOR: u8 = 0xf2;

/// Serialises shootdowns (set while one holds the published request).
static REQUEST_BUSY: AtomicBool = AtomicBool::new(false);

/// Holds `REQUEST_BUSY` until dropped, with this CPU's interrupts masked meanwhile, so that its
/// holder is never switched away or parked for a fork while it holds it (acknowledgements still
/// come: the other CPUs take the request's interrupt whatever their mask, or spin unmasked
/// while they wait for the flag). Preempted holding it, a thread on the forking CPU once had
/// it copied held into a forked child, whose first `mprotect` spun for good; and a fork that
/// waits for such a holder caught the next one holding it nearly every time when two threads
/// changed protections in a loop (fork_while_protecting on a loaded host: EAGAIN after 2 s).
struct RequestGuard {
    were_enabled: bool,
}

impl RequestGuard {
    fn acquire() -> Self {
        loop {
            let were_enabled = super::irq::save_and_disable();
            if !REQUEST_BUSY.swap(true, Ordering::Acquire) {
                return RequestGuard { were_enabled };
            }
            super::irq::restore(were_enabled);
            while REQUEST_BUSY.load(Ordering::Relaxed) {
                core::hint::spin_loop();
            }
        }
    }
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        REQUEST_BUSY.store(false, Ordering::Release);
        super::irq::restore(self.were_enabled);
    }
}
static PAGES: [AtomicU64; StaleTlb::MAX] = [const { AtomicU64::new(0) }; StaleTlb::MAX];
/// Pages in the published request; `usize::MAX`: flush everything. (Read by the ring-3
/// entry's fast path, `ring3::trap_ring3_relocate`, with `PENDING`.)
pub(super) static COUNT: AtomicUsize = AtomicUsize::new(0);
/// CPUs that have not flushed the published request yet.
pub(super) static PENDING: AtomicUsize = AtomicUsize::new(0);
static REGISTERED: AtomicBool = AtomicBool::new(false);
/// Per CPU: in its idle loop (between `idle_begins` and `idle_ends`).
static IDLE: [AtomicU32; MAX_CPUS] = [const { AtomicU32::new(0) }; MAX_CPUS];
/// Per CPU: a shootdown skipped it while idle; it flushes everything before it leaves idle.
static OWED: [AtomicU32; MAX_CPUS] = [const { AtomicU32::new(0) }; MAX_CPUS];

/// Whether CPU `cpu` is in its idle loop (running no thread) now.
pub fn is_idle(cpu: usize) -> bool {
    IDLE[cpu].load(Ordering::SeqCst) != 0
}

/// This CPU enters (or returns to) its idle loop.
pub fn idle_begins() {
    IDLE[super::cpu::id()].store(1, Ordering::SeqCst);
}

/// This CPU leaves its idle loop to run a thread: first it flushes what shootdowns skipped.
/// (SeqCst on both sides: either the initiator sees this CPU busy and sends the IPI, or this
/// CPU sees the flush owed.)
pub fn idle_ends() {
    let cpu = super::cpu::id();
    IDLE[cpu].store(0, Ordering::SeqCst);
    // Looked at before the swap: a wake-up with nothing owed (nearly all) makes no locked access
    // beyond the store above (32-bit words: a locked byte access costs twice as much here).
    if OWED[cpu].load(Ordering::SeqCst) != 0 && OWED[cpu].swap(0, Ordering::SeqCst) != 0 {
        flush_local(usize::MAX, core::ptr::null());
    }
}

/// Flushes `count` pages at `pages` from this CPU's TLB, or everything (`usize::MAX`).
fn flush_local(count: usize, pages: *const u64) {
    if count == usize::MAX {
        super::ring3::reload_cr3();
    } else {
        // SAFETY: the callers pass `count` (at most `StaleTlb::MAX`) addresses at `pages`.
        super::ring3::invalidate_pages(unsafe { core::slice::from_raw_parts(pages, count) });
    }
}

fn on_ipi(_: &mut super::traps::TrapFrame) {
    let count = COUNT.load(Ordering::Acquire);
    flush_local(count, PAGES.as_ptr() as *const u64);
    PENDING.fetch_sub(1, Ordering::AcqRel);
}

/// A PVM host (emulated ring 0, shadow paging): see the module comment.
fn on_pvm() -> bool {
    crate::bootinfo::get().platform == hrt_abi::Platform::PvmEmulated as u32
}

/// Most pages this CPU flushes one by one on a PVM host rather than reloading CR3 (module
/// comment): up to here the INVLPGs cost less than the fault a reload brings on later.
const PVM_INVLPG_MAX: usize = 8;

/// Flushes `stale` on this CPU and on the other `cpus - 1` CPUs (all of them online).
pub fn shoot_down(stale: &StaleTlb, cpus: usize) {
    if stale.is_empty() {
        return;
    }
    let pages = stale.pages().len();
    // Other CPUs flush everything on PVM: their IPI's fast path (`ring3::trap_ring3_relocate`)
    // reloads CR3, the general one took ~245 emulated instructions.
    let count = if stale.everything() || on_pvm() { usize::MAX } else { pages };
    let local = if stale.everything() || on_pvm() && pages > PVM_INVLPG_MAX { usize::MAX } else { pages };
    if cpus <= 1 {
        flush_local(local, stale.pages().as_ptr());
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
    // A dormant CPU (`cpu::make_dormant`) has no translations: its start loads CR3.
    super::cpu::settle();
    // The busy CPUs get the IPI; idle ones owe a flush. (A CPU seen idle after its debt is
    // recorded either still is, or leaves idle later and pays it.)
    let me = super::cpu::id();
    let mut busy = [false; MAX_CPUS];
    let mut targets = 0;
    for cpu in (0..cpus).filter(|&c| c != me && !super::cpu::is_dormant(c)) {
        let idle = !stale.frees_tables() && IDLE[cpu].load(Ordering::SeqCst) != 0 && {
            OWED[cpu].store(1, Ordering::SeqCst);
            IDLE[cpu].load(Ordering::SeqCst) != 0
        };
        if !idle {
            busy[cpu] = true;
            targets += 1;
        }
    }
    PENDING.store(targets, Ordering::Release);
    for cpu in (0..cpus).filter(|&c| busy[c]) {
        super::apic::send_ipi(super::cpu::apic_id(cpu), TLB_VECTOR);
    }
    flush_local(local, stale.pages().as_ptr());
    while PENDING.load(Ordering::Acquire) != 0 {
        core::hint::spin_loop();
    }
}
