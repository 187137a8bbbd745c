//! Pause-loop exits of our own, for hosts where the vCPUs outnumber the CPUs.
//!
//! A program thread that spins (an OpenMP barrier in the program's own libgomp, which sees
//! every vCPU as a CPU and spins 300,000 PAUSE rounds, about 7 ms, before it sleeps) holds a
//! host CPU that the vCPU it waits for may need, until the host's scheduler takes it away
//! milliseconds later. Hardware virtualization has pause-loop exiting for that; a PVM guest's
//! ring 3 runs natively and has none. So, with the kernel in ring 3 and the vCPUs outnumbering
//! the host's CPUs: once a thread has run for `LOOK_AFTER_NS` since the CPU left its idle
//! loop, and from time to time after that, the timer interrupts it. The same on a vCPU where
//! other threads wait (crowded: more program threads than vCPUs) whatever the host: there a
//! spinning thread would otherwise keep the vCPU from the thread it waits for until its 10 ms
//! quantum ends (NPB LU with 4 threads on 2 vCPUs). The interrupt's handler runs in
//! ring 3 (`traps::handle_interrupts_in_ring3`: emulated ring 0 only notes it) and only marks
//! the look as due; the look itself runs next, still in ring 3, with the program's registers
//! (`look`): a PAUSE near the interrupted instruction means the program spins. Then a thread
//! ready on the same vCPU gets it; otherwise, overcommitted, the vCPU gives its host CPU away (a host
//! `sched_yield` through the monitor), which lets the host run another vCPU, perhaps the
//! awaited one. A thread that blocks before `LOOK_AFTER_NS` never sees a look.

use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use super::CpuSched;

/// Ticks between looks (0: no looks on this boot).
static PERIOD: AtomicU64 = AtomicU64::new(0);
/// The vCPUs outnumber the host's CPUs: every running thread gets looks, and a spinning one
/// with nothing else ready gives the host CPU away.
static OVERCOMMITTED: AtomicBool = AtomicBool::new(false);
/// Looks at program code, and those that found it spinning (for `hrt run -v`'s last lines).
static LOOKS: AtomicU64 = AtomicU64::new(0);
static SPINNING: AtomicU64 = AtomicU64::new(0);
/// How long a thread runs before the first look. After a look that finds no spinning, the
/// next comes as long after; after the second, twice that; then 4 times (2 ms, well inside
/// libgomp's 7 ms spin). A look costs an interrupt, 50-150 us here (mostly the emulated ring-0
/// entry), which a computing thread should seldom pay.
const LOOK_AFTER_NS: u64 = 500_000;
const QUIET_MAX_SHIFT: u32 = 2;
/// On a crowded vCPU of a host that is not overcommitted, the quiet looks go on doubling to
/// 8 ms: the alternative there is the 10 ms quantum, and the threads of a program that
/// crowds its vCPUs mostly compute.
const CROWDED_QUIET_MAX_SHIFT: u32 = 4;

/// The doublings of the look period after quiet looks, at most (see the two constants).
/// Overcommitted in effect: when the program's threads are packed on as many vCPUs as the host
/// has CPUs and the other vCPUs idle (`super::only_packed_cpus_busy`), each busy vCPU has a
/// host CPU and the looks go on doubling as on a crowded vCPU (4 NPB threads at `--cpus 4`,
/// dynamic, 3 runs: bt.W 0.56-0.58 -> 0.47 s, sp.W 1.06-1.11 -> 0.87-0.88, ua.W 1.53-1.59 ->
/// 1.27-1.29; natively 0.46-0.49, 1.15, 1.84; lu.S unchanged at ~1.0).
///
/// On a vCPU whose looks found a spin within `SPUN_RECENTLY_NS`, at most
/// `SPINNING_QUIET_MAX_SHIFT`: its program waits for its threads in program code (plain-load
/// flags), where only a look ends the wait of a thread whose awaited thread waits in the same
/// vCPU's queue. PRK's `p2p` (a pipeline of 4 threads, packed two to a vCPU at `--cpus 4`, each
/// waiting for its left neighbour's flag): 15.5-16.2 ms per iteration with the quiet looks at
/// 8 ms, 13.0-13.7 at 2 ms, 12.1-12.2 at 1 ms (natively 12-20).
fn quiet_shift(s: &CpuSched, quiet: u32) -> u32 {
    let most = if overcommitted_in_effect() { QUIET_MAX_SHIFT } else { CROWDED_QUIET_MAX_SHIFT };
    let spun_at = s.spin_seen_at.load(Ordering::Relaxed);
    let spun_recently =
        spun_at != 0 && crate::time::ticks().saturating_sub(spun_at) < crate::time::ns_to_ticks(SPUN_RECENTLY_NS);
    quiet.min(if spun_recently { most.min(SPINNING_QUIET_MAX_SHIFT) } else { most })
}
const SPINNING_QUIET_MAX_SHIFT: u32 = 1;

/// More vCPUs run threads than the host has CPUs (the vCPUs outnumber them, and not only the
/// packed ones are busy).
fn overcommitted_in_effect() -> bool {
    OVERCOMMITTED.load(Ordering::Relaxed) && !super::only_packed_cpus_busy()
}
const SPUN_RECENTLY_NS: u64 = 50_000_000;
/// The next look after one that found a spin: the wait is likely not over, and a look costs
/// little then. After a switch to another thread the same; on a host overcommitted in effect
/// (more busy vCPUs than host CPUs), doubled for each look in a row that found spinning, up to
/// `YIELD_RELOOK_MAX_SHIFT` doublings: there the looks at threads that all wait for another
/// vCPU take host time that vCPU may need. Where each busy vCPU has a host CPU, the looks only
/// take time its own threads would spend waiting, and a pipeline of threads packed two to a
/// vCPU (NPB LU: each thread waits for its neighbour's flag at every plane, so every step needs
/// a look on each vCPU) moves at the looks' pace: NPB 3.0 LU class W, 4 threads at `--cpus 4`,
/// 15.1-15.5 s with the doubling (0.8 ms), 10.7 at 0.2 ms, 8.1 at 0.1 ms.
const RELOOK_NS: u64 = 100_000;
const YIELD_RELOOK_MAX_SHIFT: u32 = 3;
/// The look after one for a woken sleeper that found kernel code (`leftover`): time for the
/// resumed thread to get back into its program, no more (with `RELOOK_NS` there, each
/// `usleep(10)` beside a spinner took 290-320 us instead of 200-240).
const SLEEPER_RELOOK_NS: u64 = 30_000;

/// The upper layer's spin-site hooks (`set_spin_site_hooks`; 0: none).
static ON_SPINNING: AtomicUsize = AtomicUsize::new(0);
static IS_PATCHED: AtomicUsize = AtomicUsize::new(0);

/// Installs what a look calls when it finds a thread spinning in a loop without PAUSE while
/// another waits for the vCPU (`on_spinning`, which may rewrite the loop to yield by itself,
/// `linux::spin_sites`), and how it recognises such a rewritten loop (`is_patched`: a thread
/// there spins as it did in the loop).
pub fn set_spin_site_hooks(on_spinning: fn(&mut crate::arch::traps::TrapFrame), is_patched: fn(u64) -> bool) {
    IS_PATCHED.store(is_patched as usize, Ordering::Release);
    ON_SPINNING.store(on_spinning as usize, Ordering::Release);
}

fn patched_spin(rip: u64) -> bool {
    let f = IS_PATCHED.load(Ordering::Acquire);
    f != 0 && {
        // SAFETY: only `set_spin_site_hooks` stores it, and it is such a function.
        let hook = unsafe { core::mem::transmute::<usize, fn(u64) -> bool>(f) };
        hook(rip)
    }
}

fn spinning_found(frame: &mut crate::arch::traps::TrapFrame) {
    let f = ON_SPINNING.load(Ordering::Acquire);
    if f != 0 {
        // SAFETY: only `set_spin_site_hooks` stores it, and it is such a function.
        let hook = unsafe { core::mem::transmute::<usize, fn(&mut crate::arch::traps::TrapFrame)>(f) };
        hook(frame);
    }
}

/// Boot CPU, before any thread runs: looks only with the kernel in ring 3 (where the look
/// itself runs natively), at every thread when the vCPUs outnumber the host's CPUs, else only
/// while threads wait in a vCPU's run queue (a crowded vCPU: a spinning thread there holds the
/// vCPU from the thread it may wait for until the 10 ms quantum ends).
pub(super) fn configure(host_overcommitted: bool) {
    if crate::arch::ring3::active() {
        PERIOD.store(crate::time::ns_to_ticks(LOOK_AFTER_NS), Ordering::Relaxed);
        OVERCOMMITTED.store(host_overcommitted, Ordering::Relaxed);
        // (The look runs in ring 3: interrupt handlers do there in ring-3 mode, see `boot`.)
        crate::arch::traps::set_program_interrupted_hook(program_interrupted);
        if host_overcommitted {
            kinfo!("sched: more vCPUs than host CPUs: spinning program threads give their host CPU away");
        }
    }
}

/// An interrupt stopped program code: the look, then a move another thread (a CPU mask) or an
/// idle CPU (`balance`) asked for: program code is a point where the thread may change CPU.
fn program_interrupted(frame: &mut crate::arch::traps::TrapFrame) {
    look(frame);
    super::move_if_asked();
    super::balance::move_if_taken();
    super::balance::spread_if_crowded(crate::cpu::id());
}

/// How many looks at program code there were, and how many found it spinning (None: no looks
/// on this boot, or none happened on a boot that looks only at crowded vCPUs).
pub fn counts() -> Option<(u64, u64)> {
    let looks = LOOKS.load(Ordering::Relaxed);
    (OVERCOMMITTED.load(Ordering::Relaxed) || looks > 0).then(|| (looks, SPINNING.load(Ordering::Relaxed)))
}

/// Whether this CPU's running thread should be looked at: always when overcommitted, else
/// while others wait for the CPU.
fn wanted(s: &CpuSched) -> bool {
    OVERCOMMITTED.load(Ordering::Relaxed) || s.runnable() > 0
}

/// A thread now waits in this busy CPU's run queue (`arm_preemption`): the running thread gets
/// a look unless one is due already. Returns whether the timer must be armed for it.
pub(super) fn crowded(s: &CpuSched) -> bool {
    let period = PERIOD.load(Ordering::Relaxed);
    if period == 0 || s.spin_look_at.load(Ordering::Relaxed) != 0 || super::is_idle_thread() {
        return false;
    }
    let quiet = s.spin_quiet.load(Ordering::Relaxed);
    s.spin_look_at.store(crate::time::ticks() + (period << quiet_shift(s, quiet)), Ordering::Relaxed);
    true
}

/// This CPU's timer ended a sleep and the woken thread waits here behind a running program
/// thread: the look comes at once, with this interrupt (it costs no other). Linux runs a
/// thread woken from a sleep at once; here, waiting for the next look (up to 8 ms on a
/// crowded vCPU, a few ms more for a spinning thread's own budget) left a thread that
/// polls for a pthread's work (libgomp spinning for an event the pthread fulfils after a
/// `usleep`) ~1.8 ms behind for each: 2.3 s against 0.25 natively at `--cpus 1`. Returns
/// whether a look became due (as `fired`).
pub(super) fn sleeper_woke(s: &CpuSched) -> bool {
    if PERIOD.load(Ordering::Relaxed) == 0 || super::is_idle_thread() || s.runnable() == 0 {
        return false;
    }
    s.spin_look_due.store(true, Ordering::Relaxed);
    s.spin_look_for_sleeper.store(true, Ordering::Relaxed);
    true
}

/// The idle loop hands the CPU to a thread: the first look is due `LOOK_AFTER_NS` from now,
/// or later after quiet looks. Returns whether the timer must be armed for it.
pub(super) fn start(s: &CpuSched) -> bool {
    let period = PERIOD.load(Ordering::Relaxed);
    // (The thread about to run is still counted in the queue.)
    if period == 0 || !(OVERCOMMITTED.load(Ordering::Relaxed) || s.runnable() > 1) {
        return false;
    }
    s.spin_look_due.store(false, Ordering::Relaxed);
    s.spin_look_for_sleeper.store(false, Ordering::Relaxed);
    s.spin_streak.store(0, Ordering::Relaxed);
    // The quiet count stays: a CPU whose threads compute (or wait in the kernel, as the
    // kernel's OpenMP runtime does) keeps its longer period across their blocks and wake-ups.
    let quiet = s.spin_quiet.load(Ordering::Relaxed);
    s.spin_look_at.store(crate::time::ticks() + (period << quiet_shift(s, quiet)), Ordering::Relaxed);
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
    s.spin_look_for_sleeper.store(false, Ordering::Relaxed);
    LOOKS.fetch_add(1, Ordering::Relaxed);
    // A program that yields hands the CPU over by itself: the look is not needed (each costs
    // an interrupt, 50-150 us; LLVM's libomp, packed two threads to a vCPU, met ~2,000 looks
    // a second while it yielded ~580,000 times per thread and run).
    let yielded = s.program_yielded.swap(false, Ordering::Relaxed);
    let pause = !yielded && crate::arch::pause::near(frame.rip);
    let plain_loop = !yielded && !pause && crate::arch::spin_loop::encloses(frame.rip);
    if yielded || !(pause || plain_loop || patched_spin(frame.rip)) {
        s.spin_streak.store(0, Ordering::Relaxed);
        quiet_look(s);
        return;
    }
    SPINNING.fetch_add(1, Ordering::Relaxed);
    s.spin_quiet.store(0, Ordering::Relaxed);
    s.spin_seen_at.store(crate::time::ticks(), Ordering::Relaxed);
    let streak = s.spin_streak.load(Ordering::Relaxed);
    s.spin_streak.store(streak + 1, Ordering::Relaxed);
    if s.runnable() > 0 {
        if plain_loop {
            // From now on the loop may yield by itself (`linux::spin_sites`).
            spinning_found(frame);
        }
        // A thread waits for this vCPU: it may be the awaited one, and a switch costs far less
        // than a trip through the host. The next look comes
        // soon, at whichever thread runs then; later while the threads here all spin (they
        // wait for another vCPU's), as a look costs more than such a wait (150-300 us here).
        s.need_resched.store(true, Ordering::Relaxed);
        let doublings = if overcommitted_in_effect() { streak.min(YIELD_RELOOK_MAX_SHIFT) } else { 0 };
        next_look(s, crate::time::ns_to_ticks(RELOOK_NS) << doublings);
        return;
    }
    if OVERCOMMITTED.load(Ordering::Relaxed) {
        // The host runs another of its threads on this CPU, perhaps the awaited vCPU: a host
        // `sched_yield` through the monitor (one I/O-port exit). It replaced halts of 0.2-1.6
        // ms (a timer arm, the halt, a wake-up interrupt, each an emulated ring-0 entry, and an
        // IPI at the program's next futex wake): LLVM's omp_single 19.1-19.8 -> 7.0-8.5 s, cg.S
        // 7.3-7.9 -> 2.7-3.2 s at 4 vCPUs on 2 host CPUs, load ~7.5.
        crate::arch::hypercall::host_yield();
    }
    next_look(s, crate::time::ns_to_ticks(RELOOK_NS));
}

/// Ring 3 after any interrupt: a look that found kernel code, not the program, is only put
/// off; a look for a woken sleeper comes again `SLEEPER_RELOOK_NS` later, with no quiet look
/// counted, when the thread is back in the program.
///
/// That is the common case of short sleeps beside a spinner: the sleeper blocks, the switch to
/// the spinning thread arms the timer for a deadline that passes during the arm (a ring-0
/// entry), and the interrupt is replayed in the kernel code that resumes the spinner. Put off
/// as a quiet look, the sleeper waited for the next one (500 us and more): each `usleep(10)`
/// beside a spinning thread took ~740 us at `--cpus 1` (Linux ~80), now ~200-260. Switching
/// at once instead was wrong: the thread resumed may have work now (the sleeper may have
/// ended its wait), and was starved (an OpenMP program whose pthread fulfils events: 1.7 s
/// -> 30 s); its saved program counter, at the PAUSE it was left at, cannot tell.
pub(super) fn leftover(s: &CpuSched) {
    if s.spin_look_due.load(Ordering::Relaxed) && s.spin_look_due.swap(false, Ordering::Relaxed) {
        let for_sleeper = s.spin_look_for_sleeper.swap(false, Ordering::Relaxed);
        if for_sleeper && s.runnable() > 0 {
            // After the arm's own time: a nearer deadline passes during the arm, and its
            // interrupt comes in kernel code again (on this project's PVM hosts an arm takes
            // ~30 us, and every look for a `usleep(10)` was put off until the running thread's
            // minimum run ended, ~1 ms).
            next_look(s, crate::time::ns_to_ticks(SLEEPER_RELOOK_NS) + crate::arch::apic::arm_ticks());
            return;
        }
        s.spin_streak.store(0, Ordering::Relaxed);
        quiet_look(s);
    }
}

/// The next look after one that found no spinning: later each time.
fn quiet_look(s: &CpuSched) {
    let quiet = s.spin_quiet.load(Ordering::Relaxed);
    s.spin_quiet.store(quiet + 1, Ordering::Relaxed);
    next_look(s, PERIOD.load(Ordering::Relaxed) << quiet_shift(s, quiet));
}

fn next_look(s: &CpuSched, after: u64) {
    let at = if wanted(s) {
        crate::time::ticks() + after
    } else {
        // A crowded vCPU no longer is: no looks until a thread waits here again (`crowded`).
        0
    };
    s.spin_look_at.store(at, Ordering::Relaxed);
    // Armed even without a look: the timer interrupt that led here left the re-arm for the
    // other deadlines (sleepers, preemption) to this ring-3 path.
    super::arm_timer(s);
}
