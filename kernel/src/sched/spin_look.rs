//! Pause-loop exits of our own, for hosts where the vCPUs outnumber the CPUs.
//!
//! A program thread that spins (an OpenMP barrier in the program's own libgomp, which sees
//! every vCPU as a CPU and spins 300,000 PAUSE rounds, about 7 ms, before it sleeps) holds a
//! host CPU that the vCPU it waits for may need, until the host's scheduler takes it away
//! milliseconds later. Hardware virtualization has pause-loop exiting for that; a PVM guest's
//! ring 3 runs natively and has none. So, only while overcommitted and with the kernel in
//! ring 3: once a thread has run for `LOOK_AFTER_NS` since the CPU left its idle loop, and
//! from time to time after that, the timer interrupts it. The interrupt's handler runs in
//! ring 3 (`traps::handle_interrupts_in_ring3`: emulated ring 0 only notes it) and only marks
//! the look as due; the look itself runs next, still in ring 3, with the program's registers
//! (`look`): a PAUSE near the interrupted instruction means the program spins, and the vCPU
//! halts for a while (a kick, e.g. a thread queued here or a futex wake in the program, ends
//! it sooner), which lets the host run another vCPU, perhaps the awaited one. A thread that
//! blocks before `LOOK_AFTER_NS` never sees a look. A spinning thread with another thread
//! ready on its vCPU yields to it instead of halting.

use core::sync::atomic::{AtomicU64, Ordering};

use super::CpuSched;
use crate::arch::{apic, irq};

/// Ticks between looks (0: no looks on this boot).
static PERIOD: AtomicU64 = AtomicU64::new(0);
/// Looks at program code, and those that found it spinning (for `hrt run -v`'s last lines).
static LOOKS: AtomicU64 = AtomicU64::new(0);
static SPINNING: AtomicU64 = AtomicU64::new(0);
/// How long a thread runs before the first look. After a look that finds no spinning, the
/// next comes as long after; after the second, twice that; then 4 times (2 ms, well inside
/// libgomp's 7 ms spin). A look costs an interrupt, 50-150 us here (mostly the emulated ring-0
/// entry), which a computing thread should seldom pay.
const LOOK_AFTER_NS: u64 = 500_000;
const QUIET_MAX_SHIFT: u32 = 2;
/// How long a vCPU seen spinning gives its host CPU away the first time; doubled for each look
/// in a row that finds it still spinning, up to `GIVE_AWAY_MAX_SHIFT` doublings. A release the
/// spinner waits for is a store, not a kick: it is seen when the halt ends, or sooner when
/// the releaser also wakes sleepers with a futex (`release_seen`), as libgomp's barrier does.
const GIVE_AWAY_NS: u64 = 200_000;
const GIVE_AWAY_MAX_SHIFT: u32 = 3;
/// The next look after a halt: the wait is likely not over, and a look costs little then.
/// After a switch to another thread the same, doubled for each look in a row that found
/// spinning, up to `YIELD_RELOOK_MAX_SHIFT` doublings.
const RELOOK_NS: u64 = 100_000;
const YIELD_RELOOK_MAX_SHIFT: u32 = 3;

/// Boot CPU, before any thread runs: looks only when the vCPUs outnumber the host's CPUs and
/// the kernel runs in ring 3 (where the look itself runs natively).
pub(super) fn configure(host_overcommitted: bool) {
    if host_overcommitted && crate::arch::ring3::active() {
        PERIOD.store(crate::time::ns_to_ticks(LOOK_AFTER_NS), Ordering::Relaxed);
        crate::arch::traps::set_program_interrupted_hook(look);
        crate::arch::traps::handle_interrupts_in_ring3();
        kinfo!("sched: more vCPUs than host CPUs: spinning program threads give their host CPU away");
    }
}

/// How many looks at program code there were, and how many found it spinning (None: looks
/// are off on this boot).
pub fn counts() -> Option<(u64, u64)> {
    (PERIOD.load(Ordering::Relaxed) != 0).then(|| (LOOKS.load(Ordering::Relaxed), SPINNING.load(Ordering::Relaxed)))
}

/// The idle loop hands the CPU to a thread: the first look is due `LOOK_AFTER_NS` from now,
/// or later after quiet looks. Returns whether the timer must be armed for it.
pub(super) fn start(s: &CpuSched) -> bool {
    let period = PERIOD.load(Ordering::Relaxed);
    if period == 0 {
        return false;
    }
    s.spin_look_due.store(false, Ordering::Relaxed);
    s.spin_streak.store(0, Ordering::Relaxed);
    // The quiet count stays: a CPU whose threads compute (or wait in the kernel, as the
    // kernel's OpenMP runtime does) keeps its longer period across their blocks and wake-ups.
    let quiet = s.spin_quiet.load(Ordering::Relaxed);
    s.spin_look_at.store(crate::time::ticks() + (period << quiet.min(QUIET_MAX_SHIFT)), Ordering::Relaxed);
    true
}

/// The idle loop is about to halt: a look still armed would only wake it (the caller then arms
/// the timer for what else it serves).
pub(super) fn cancel(s: &CpuSched) {
    s.spin_look_at.store(0, Ordering::Relaxed);
}

/// The timer interrupt (possibly in ring 0: nothing more than noting): true if a look became
/// due, which `super::resched_wanted` then reports so that the trap returns through ring 3,
/// where `look` or `leftover` re-arms the timer.
pub(super) fn fired(s: &CpuSched) -> bool {
    let at = s.spin_look_at.load(Ordering::Relaxed);
    if at == 0 || crate::time::ticks() < at {
        return false;
    }
    s.spin_look_at.store(0, Ordering::Relaxed);
    if super::is_idle_thread() {
        return false;
    }
    s.spin_look_due.store(true, Ordering::Relaxed);
    true
}

/// Ring 3, interrupts masked, after an interrupt stopped the program at `frame`: the look.
fn look(frame: &mut crate::arch::traps::TrapFrame) {
    let s = super::this_sched();
    if !s.spin_look_due.swap(false, Ordering::Relaxed) {
        return;
    }
    LOOKS.fetch_add(1, Ordering::Relaxed);
    if !crate::arch::pause::near(frame.rip) {
        s.spin_streak.store(0, Ordering::Relaxed);
        quiet_look(s);
        return;
    }
    SPINNING.fetch_add(1, Ordering::Relaxed);
    s.spin_quiet.store(0, Ordering::Relaxed);
    let streak = s.spin_streak.load(Ordering::Relaxed);
    s.spin_streak.store(streak + 1, Ordering::Relaxed);
    if s.runnable() > 0 {
        // A thread waits for this vCPU (threads packed on as many vCPUs as host CPUs): it may
        // be the awaited one, and a switch costs far less than a halt. The next look comes
        // soon, at whichever thread runs then; later while the threads here all spin (they
        // wait for another vCPU's), as a look costs more than such a wait (150-300 us here).
        s.need_resched.store(true, Ordering::Relaxed);
        next_look(s, crate::time::ns_to_ticks(RELOOK_NS) << streak.min(YIELD_RELOOK_MAX_SHIFT));
        return;
    }
    give_host_cpu_away(s, GIVE_AWAY_NS << streak.min(GIVE_AWAY_MAX_SHIFT));
    next_look(s, crate::time::ns_to_ticks(RELOOK_NS));
}

/// Ring 3 after any interrupt: a look that found kernel code, not the program, is only put off.
pub(super) fn leftover(s: &CpuSched) {
    if s.spin_look_due.load(Ordering::Relaxed) && s.spin_look_due.swap(false, Ordering::Relaxed) {
        s.spin_streak.store(0, Ordering::Relaxed);
        quiet_look(s);
    }
}

/// The next look after one that found no spinning: later each time.
fn quiet_look(s: &CpuSched) {
    let quiet = s.spin_quiet.load(Ordering::Relaxed);
    s.spin_quiet.store(quiet + 1, Ordering::Relaxed);
    next_look(s, PERIOD.load(Ordering::Relaxed) << quiet.min(QUIET_MAX_SHIFT));
}

fn next_look(s: &CpuSched, after: u64) {
    s.spin_look_at.store(crate::time::ticks() + after, Ordering::Relaxed);
    super::arm_timer(s);
}

/// Halts this vCPU for `ns`, until its own timer or until a kick (interrupts masked: whatever
/// arrives is noted and handled on the way back to the program).
fn give_host_cpu_away(s: &CpuSched, ns: u64) {
    super::arm_timer_by(s, crate::time::ticks() + crate::time::ns_to_ticks(ns));
    // Not `halted`: that is for idle CPUs, which run tasks meant for any CPU (`kick_if_halted`
    // kicks this one too).
    s.spin_giving_away.store(true, Ordering::SeqCst);
    if s.runnable() == 0 && !super::task::pending() {
        // A kick sent after the checks still ends the halt (see `irq::wait_for_interrupt`).
        irq::wait_for_interrupt();
    }
    s.spin_giving_away.store(false, Ordering::SeqCst);
}

/// A program thread woke others (a futex wake), usually right after the store that spinning
/// threads wait for: kicks the vCPUs halted in `give_host_cpu_away`, which would otherwise see
/// it only when their halt ends.
pub fn release_seen() {
    if PERIOD.load(Ordering::Relaxed) == 0 {
        return;
    }
    let me = crate::cpu::id();
    for cpu in (0..crate::cpu::count()).filter(|&c| c != me) {
        if super::on_cpu(cpu).spin_giving_away.load(Ordering::SeqCst) {
            apic::send_ipi(crate::cpu::apic_id(cpu), apic::KICK_VECTOR);
        }
    }
}
