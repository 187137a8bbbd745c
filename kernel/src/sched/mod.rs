//! The scheduler: per-CPU run queues of pinned threads, blocking and waking, yield, sleep,
//! optional timer preemption, and the idle loop. Tickless: the LAPIC timer is armed only for
//! the next sleeper (and the preemption quantum when preemption is on).

pub mod balance;
pub mod barrier;
pub mod condvar;
pub mod fork;
pub mod freeze;
pub mod idle;
pub mod runqueue;
pub mod sleep;
pub mod spin_look;
pub mod task;
pub mod thread;
pub mod waitqueue;

use core::ptr::null_mut;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::arch::{apic, context, fpu, irq};
use crate::cpu;
use crate::sync::{IrqSpinLock, PerCpuCell};
use runqueue::RunQueue;
use thread::{BLOCKED, BLOCKING, EXITED, READY, RUNNING};

pub use barrier::Barrier;
pub use condvar::CondVar;
pub use fork::{fork, Fork};
pub use sleep::{block_until, sleep_ns};
pub use thread::{create, exit, spawn, spawn_with, Thread, ThreadHandle, ThreadOptions};
pub use waitqueue::WaitQueue;

/// Scheduler state of one CPU (inside its `PerCpu`). Cache-line aligned: every OpenMP call
/// reads `current`, which must not share a line with another CPU's fields or a neighbouring
/// static that another CPU writes.
#[repr(align(128))]
pub struct CpuSched {
    runq: IrqSpinLock<RunQueue>,
    /// Mirrors the run queue length so idle loops and yields can check it without the lock.
    runq_len: AtomicUsize,
    current: AtomicPtr<Thread>,
    idle: AtomicPtr<Thread>,
    /// Set by the idle loop just before `hlt`; wakers send a kick IPI only then.
    pub halted: AtomicBool,
    /// Set by the idle loop for exactly the halt itself, with nothing more to write before
    /// it and a freeze check right after it (`freeze::Halted::MustPark` in ring-3 mode).
    pub asleep: AtomicBool,
    need_resched: AtomicBool,
    /// A thread that exited and whose stack we were still on until the switch completed.
    prev_exited: PerCpuCell<*mut Thread>,
    /// A thread moving to another CPU, queued there only once we have left its stack.
    prev_migrating: PerCpuCell<*mut Thread>,
    /// The thread whose FPU/vector state the registers hold (null: none). Switching to the
    /// idle thread, which never touches that state, leaves it there, so a thread that blocks
    /// and comes back with nothing in between costs no save and restore (an XSAVE of the
    /// AVX-512 state is ~2.4 KB).
    fpu_owner: PerCpuCell<*mut Thread>,
    pub(crate) sleepers: IrqSpinLock<sleep::SleepList>,
    pub(crate) tasks: IrqSpinLock<task::TaskQueue>,
    pub(crate) tasks_len: AtomicUsize,
    /// TSC of the next preemption tick (0: preemption off).
    preempt_at: AtomicU64,
    /// TSC of the first sleeper's deadline (u64::MAX: none), for the polling idle loop.
    pub(crate) next_wake: AtomicU64,
    /// TSC of the next look for a spinning program thread (0: none; `spin_look`).
    spin_look_at: AtomicU64,
    /// The timer found a look due; ring 3 does it on the way back to the program.
    spin_look_due: AtomicBool,
    /// The due look is for a sleeper the timer woke (`spin_look::sleeper_woke`).
    spin_look_for_sleeper: AtomicBool,
    /// Looks in a row that found the program spinning.
    spin_streak: AtomicU32,
    /// Looks in a row that found no spinning program.
    spin_quiet: AtomicU32,
    /// TSC of the last look that found the program spinning (0: none).
    spin_seen_at: AtomicU64,
    /// A program thread called `sched_yield` here since the last look: the program hands the
    /// CPU over by itself (LLVM's libomp yields periodically in its spin waits), so the next look
    /// counts as a quiet one.
    program_yielded: AtomicBool,
    /// The TSC deadline the timer is armed for (0: none, or it fired; `program_timer`).
    timer_armed: AtomicU64,
    /// Another CPU queued a woken thread here and kicked this CPU for it since its last
    /// switch (`queue_ready`): one such kick per switch at most.
    woken_kick: AtomicBool,
    /// TSC at which the running thread got the CPU (its `run_start`, readable from other
    /// CPUs without its record).
    running_since: AtomicU64,
}

impl CpuSched {
    pub const fn new() -> Self {
        CpuSched {
            runq: IrqSpinLock::new(RunQueue::new()),
            runq_len: AtomicUsize::new(0),
            current: AtomicPtr::new(null_mut()),
            idle: AtomicPtr::new(null_mut()),
            halted: AtomicBool::new(false),
            asleep: AtomicBool::new(false),
            need_resched: AtomicBool::new(false),
            prev_exited: PerCpuCell::new(null_mut()),
            prev_migrating: PerCpuCell::new(null_mut()),
            fpu_owner: PerCpuCell::new(null_mut()),
            sleepers: IrqSpinLock::new(sleep::SleepList::new()),
            tasks: IrqSpinLock::new(task::TaskQueue::new()),
            tasks_len: AtomicUsize::new(0),
            preempt_at: AtomicU64::new(0),
            next_wake: AtomicU64::new(u64::MAX),
            spin_look_at: AtomicU64::new(0),
            spin_look_due: AtomicBool::new(false),
            spin_look_for_sleeper: AtomicBool::new(false),
            spin_streak: AtomicU32::new(0),
            spin_quiet: AtomicU32::new(0),
            spin_seen_at: AtomicU64::new(0),
            program_yielded: AtomicBool::new(false),
            timer_armed: AtomicU64::new(0),
            woken_kick: AtomicBool::new(false),
            running_since: AtomicU64::new(0),
        }
    }

    pub fn runnable(&self) -> usize {
        self.runq_len.load(Ordering::SeqCst)
    }

    /// The running thread's turn is over: it gives way at this interrupt's preemption point.
    pub fn turn_over(&self) -> bool {
        self.need_resched.load(Ordering::Relaxed)
    }

    /// A forked child's kernel, before CPU `cpu` (this record's) runs anything: the parent's
    /// threads, sleepers and tasks here are not this VM's. They are leaked, not dropped:
    /// nothing refers to them any more, and dropping a parent's task could run its code.
    fn forget_all(&self, cpu: usize) {
        *self.runq.lock() = RunQueue::new();
        *self.sleepers.lock() = sleep::SleepList::new();
        core::mem::forget(core::mem::take(&mut *self.tasks.lock()));
        self.runq_len.store(0, Ordering::SeqCst);
        self.tasks_len.store(0, Ordering::SeqCst);
        self.current.store(null_mut(), Ordering::SeqCst);
        cpu::get(cpu).current_thread.store(0, Ordering::SeqCst);
        self.idle.store(null_mut(), Ordering::SeqCst);
        self.halted.store(false, Ordering::SeqCst);
        // The parent's CPU may have been asleep in its halt while memory was copied.
        self.asleep.store(false, Ordering::SeqCst);
        self.need_resched.store(false, Ordering::SeqCst);
        self.woken_kick.store(false, Ordering::SeqCst);
        self.preempt_at.store(0, Ordering::SeqCst);
        self.next_wake.store(u64::MAX, Ordering::SeqCst);
        self.spin_look_at.store(0, Ordering::SeqCst);
        self.spin_look_due.store(false, Ordering::SeqCst);
        self.spin_look_for_sleeper.store(false, Ordering::SeqCst);
        self.spin_streak.store(0, Ordering::SeqCst);
        self.spin_quiet.store(0, Ordering::SeqCst);
        self.spin_seen_at.store(0, Ordering::SeqCst);
        self.program_yielded.store(false, Ordering::SeqCst);
        self.timer_armed.store(0, Ordering::SeqCst);
        // SAFETY: only this CPU touches these cells, and it runs no thread yet.
        unsafe {
            *self.prev_exited.get() = null_mut();
            *self.prev_migrating.get() = null_mut();
            *self.fpu_owner.get() = null_mut();
        }
    }
}

static IDLE_HALT: AtomicBool = AtomicBool::new(false);
/// How long an idle CPU polls before it halts, in ns (u64::MAX: never).
static HALT_AFTER_NS: AtomicU64 = AtomicU64::new(u64::MAX);
/// Polling time before halting with `--idle halt`: waking a halted vCPU costs an IPI (21-56 us
/// on a PVM host), so short gaps are better spent spinning.
pub(super) const HALT_AFTER_NS_HALTING: u64 = 50_000;
/// With `IDLE_HALT_LATE`: an idle period this long is worth the IPI a wake-up then costs, and
/// leaves the host CPU to the channel's service thread.
const HALT_AFTER_NS_LATE: u64 = 1_000_000;
/// With `IDLE_HALT_LONG`: a CPU with a host CPU of its own and one to spare still halts once
/// idle this long (an idle server at `--cpus 1` polled a whole host CPU for good); the IPI a
/// wake-up then costs is well under 1 % of the idle period it ends.
const HALT_AFTER_NS_LONG: u64 = 10_000_000;
/// The program has made a child process: a forked child is a VM of its own, a spawned one
/// (vfork, posix_spawn) a host process or another VM, and either needs a host CPU while this
/// one waits for it (`fork` + `_exit` + `waitpid` at `--cpus 1` on 2 host CPUs, under load:
/// 59 ms with the parent's vCPU polling, 20 with it halting), so an idle CPU that would poll
/// for good (or for `HALT_AFTER_NS_LONG`) halts after `HALT_AFTER_NS_LATE` instead.
static FORKED: AtomicBool = AtomicBool::new(false);
/// Preemption quantum in TSC ticks (0 = off, the default).
static QUANTUM: AtomicU64 = AtomicU64::new(0);
/// How many vCPUs (the first ones) the kernel's OpenMP runtime places its threads on: all of
/// them (0), or, when they outnumber the host's CPUs, as many as the host has.
static PLACEMENT_CPUS: AtomicUsize = AtomicUsize::new(0);
/// The vCPUs outnumber the host's CPUs: a spinning waiter may hold the host CPU that the
/// vCPU it waits for needs.
static HOST_OVERCOMMITTED: AtomicBool = AtomicBool::new(false);

/// Every CPU's scheduler state, by CPU number.
struct CpuScheds([CpuSched; hrt_abi::MAX_CPUS]);

// SAFETY: each record's fields are atomics, locks, or `PerCpuCell`s that only their own CPU
// touches (with interrupts off), as when the records lived in the per-CPU block.
unsafe impl Sync for CpuScheds {}

static SCHEDS: CpuScheds = CpuScheds([const { CpuSched::new() }; hrt_abi::MAX_CPUS]);

/// CPU `cpu`'s scheduler state (shared fields only from other CPUs: atomics and locks).
pub fn on_cpu(cpu: usize) -> &'static CpuSched {
    &SCHEDS.0[cpu]
}

/// This CPU's scheduler state.
pub(crate) fn this_sched() -> &'static CpuSched {
    on_cpu(cpu::id())
}

/// Global settings from the boot-info block; boot CPU, before any thread exists.
/// `pack_on`: when the vCPUs outnumber the host's CPUs, how many of them take threads (0: all).
pub fn configure(idle_halt: bool, halt_late: bool, halt_long: bool, preempt_us: u64, pack_on: Option<u32>) {
    IDLE_HALT.store(idle_halt, Ordering::Relaxed);
    HOST_OVERCOMMITTED.store(pack_on.is_some(), Ordering::Relaxed);
    spin_look::configure(pack_on.is_some());
    for (c, s) in SCHEDS.0.iter().enumerate() {
        crate::arch::spin_yield::set_ready_count(c, s.runq_len.as_ptr());
    }
    if let Some(n) = pack_on.filter(|&n| n > 0 && (n as usize) < cpu::count()) {
        // Threads that wait for each other then take turns on a vCPU (a switch in the guest,
        // ~1 us) instead of halting and kicking vCPUs, which on PVM cost emulated ring-0
        // entries and the host's scheduling of the woken vCPU (150-400 us per wake-up).
        PLACEMENT_CPUS.store(n as usize, Ordering::Relaxed);
        kinfo!(
            "sched: more vCPUs than host CPUs: the kernel's OpenMP runtime (and a program's own libgomp or libomp that hrt recognises) puts its threads on the first {n} vCPUs"
        );
    }
    let after = match (idle_halt, halt_late, halt_long) {
        (true, _, _) => HALT_AFTER_NS_HALTING,
        (false, true, _) => HALT_AFTER_NS_LATE,
        (false, false, true) => HALT_AFTER_NS_LONG,
        (false, false, false) => u64::MAX,
    };
    HALT_AFTER_NS.store(after, Ordering::Relaxed);
    if preempt_us > 0 {
        QUANTUM.store(crate::time::ns_to_ticks(preempt_us * 1000), Ordering::Relaxed);
    }
}

/// How many vCPUs, the first ones, the kernel's OpenMP runtime places threads on
/// (`PLACEMENT_CPUS`).
pub fn placement_cpus() -> usize {
    match PLACEMENT_CPUS.load(Ordering::Relaxed) {
        0 => cpu::count(),
        n => n.min(cpu::count()),
    }
}

/// Whether the vCPUs outnumber the host's CPUs (`HOST_OVERCOMMITTED`).
pub fn host_overcommitted() -> bool {
    HOST_OVERCOMMITTED.load(Ordering::Relaxed)
}

/// How long this CPU's idle loop polls before it halts, in ns (u64::MAX: it never halts). A
/// vCPU that takes packed threads (`PLACEMENT_CPUS`) polls 1 ms, as when every vCPU has a host
/// CPU: it has one in effect, and its threads' waits are mostly shorter.
pub fn halt_after_ns_here() -> u64 {
    let packed = PLACEMENT_CPUS.load(Ordering::Relaxed);
    match halt_after_ns() {
        u64::MAX => u64::MAX,
        _ if cpu::id() < packed => HALT_AFTER_NS_LATE,
        ns => ns,
    }
}

/// How long the idle loop polls before it halts, in ns (u64::MAX: it never halts).
pub fn halt_after_ns() -> u64 {
    match HALT_AFTER_NS.load(Ordering::Relaxed) {
        ns if ns > HALT_AFTER_NS_LATE && FORKED.load(Ordering::Relaxed) => HALT_AFTER_NS_LATE,
        ns => ns,
    }
}

/// The program made a child process (`FORKED`): from now on idle CPUs halt after a while.
pub fn note_forked() {
    FORKED.store(true, Ordering::Relaxed);
}

pub fn idle_halts() -> bool {
    IDLE_HALT.load(Ordering::Relaxed)
}

pub fn preemption_enabled() -> bool {
    QUANTUM.load(Ordering::Relaxed) != 0
}

/// A forked child's kernel, on its boot CPU before `init_cpu`: this CPU's scheduler state as
/// before boot (see `CpuSched::forget_all`). The other CPUs' is forgotten by the boot CPU
/// (`forget_dormant_cpu`) before any of them starts.
pub fn reset_cpu_after_fork() {
    this_sched().forget_all(cpu::id());
}

/// A forked child's kernel, on the boot CPU before any thread runs: CPU `c`, which stays
/// dormant until a thread is placed on it (`cpu::make_dormant`), has no scheduler state of
/// the parent's that this CPU could read (its run queue, its running thread, its halt).
pub fn forget_dormant_cpu(c: usize) {
    on_cpu(c).forget_all(c);
}

/// A forked child's kernel, on the boot CPU before any CPU runs a thread: none of the parent's
/// threads runs here, so no CPU carries load, no task waits and nothing is frozen.
pub fn reset_after_fork() {
    thread::reset_load();
    task::reset();
    freeze::reset();
}

/// Idle-thread records made ahead for CPUs that have not booted yet (`prepare_cpu`).
static PREPARED_IDLE: [AtomicPtr<Thread>; hrt_abi::MAX_CPUS] =
    [const { AtomicPtr::new(null_mut()) }; hrt_abi::MAX_CPUS];

/// Makes CPU `id`'s idle-thread record ahead of its boot, from a CPU that runs natively: on a
/// PVM host the allocation costs ~150 emulated instructions in the booting CPU's ring 0.
pub fn prepare_cpu(id: usize) {
    let idle = Thread::new_boot(id);
    let old = PREPARED_IDLE[id].swap(idle, Ordering::AcqRel);
    if !old.is_null() {
        // SAFETY: an unused record made by an earlier `prepare_cpu`, owned by nobody else.
        drop(unsafe { alloc::boxed::Box::from_raw(old) });
    }
}

/// Makes every CPU's idle-thread record ahead for a forked child (its CPUs start from its copy
/// of this memory), from a CPU that runs natively; `unprepare_cpus` frees them here again.
/// Every other CPU must be frozen: their records are swapped without their knowing.
pub fn prepare_cpus(count: usize) {
    for id in 0..count.min(hrt_abi::MAX_CPUS) {
        prepare_cpu(id);
    }
}

/// Frees the records `prepare_cpus` made (the child has its copies).
pub fn unprepare_cpus() {
    for prepared in &PREPARED_IDLE {
        let old = prepared.swap(null_mut(), Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: an unused record made by `prepare_cpu`, owned by nobody else.
            drop(unsafe { alloc::boxed::Box::from_raw(old) });
        }
    }
}

/// Makes the running boot context this CPU's idle thread and installs the timer and kick
/// handlers. Every CPU calls this once.
pub fn init_cpu() {
    let s = this_sched();
    let prepared = PREPARED_IDLE[cpu::id()].swap(null_mut(), Ordering::AcqRel);
    let idle = if prepared.is_null() { Thread::new_boot(cpu::id()) } else { prepared };
    s.idle.store(idle, Ordering::Relaxed);
    set_current(s, idle);
    if cpu::id() == 0 {
        crate::arch::traps::register(apic::TIMER_VECTOR, timer_interrupt);
        // A kick also tells a busy CPU that a thread now waits for it (`make_runnable`).
        crate::arch::traps::register(apic::KICK_VECTOR, |_| kicked(this_sched()));
        crate::arch::traps::set_after_interrupt_hook(after_interrupt);
        crate::arch::traps::set_resched_query(resched_wanted);
    }
}

/// A kick from another CPU: a thread waits in the run queue (the clock starts), and if it was
/// woken there, it takes the CPU as a sleeper woken here would (`preempt_for_woken`).
fn kicked(s: &CpuSched) {
    arm_preemption(s);
    if s.woken_kick.load(Ordering::SeqCst) && !is_idle_thread() {
        preempt_for_woken(s);
        arm_timer(s);
    }
}

/// Starts the preemption clock of this CPU if preemption is on, a thread waits in its run
/// queue and the clock is not running: the tick is armed only while it can matter, so a CPU
/// that runs one thread takes no timer interrupts.
///
/// Who starts it: the CPU itself when it queues a thread for itself and when it switches to a
/// thread while others stay queued (`switch_away`); a kick from the CPU that queued a thread
/// for it while it ran another; its own timer, which keeps the clock running while threads
/// wait. A thread queued from another CPU is thus never left waiting behind a spinner with
/// the clock stopped (see `make_runnable` for the orderings this relies on).
fn arm_preemption(s: &CpuSched) {
    let q = QUANTUM.load(Ordering::Relaxed);
    if q == 0 || s.runnable() == 0 {
        return;
    }
    let was = irq::save_and_disable();
    // A spinning thread is switched out at its look, long before the quantum ends.
    let look = spin_look::crowded(s);
    if s.preempt_at.load(Ordering::SeqCst) == 0 {
        s.preempt_at.store(crate::time::ticks() + q, Ordering::SeqCst);
    } else if !look {
        irq::restore(was);
        return;
    }
    arm_timer(s);
    irq::restore(was);
}

/// The running thread: one GS read (the per-CPU copy `set_current` keeps).
#[inline(always)]
pub fn current() -> *mut Thread {
    cpu::current_thread() as *mut Thread
}

/// Makes `t` the running thread of this CPU (whose scheduler state `s` is).
fn set_current(s: &CpuSched, t: *mut Thread) {
    s.current.store(t, Ordering::SeqCst);
    cpu::this().current_thread.store(t as u64, Ordering::SeqCst);
}

/// Whether threads are packed (`placement_cpus` below the vCPU count) and every vCPU beyond
/// the packed ones runs its idle thread.
pub(super) fn only_packed_cpus_busy() -> bool {
    let (packed, n) = (placement_cpus(), cpu::count());
    packed < n
        && SCHEDS.0[packed..n].iter().all(|s| s.current.load(Ordering::Relaxed) == s.idle.load(Ordering::Relaxed))
}

/// Whether a CPU other than this one runs a thread rather than its idle loop.
pub fn others_run_threads() -> bool {
    let me = cpu::id();
    (0..cpu::count()).any(|c| {
        let s = on_cpu(c);
        c != me && s.current.load(Ordering::SeqCst) != s.idle.load(Ordering::Relaxed)
    })
}

/// Whether CPU `c` runs its idle loop without being halted: it passes `freeze::check` within
/// microseconds, or runs a thread only through a return to the program, which checks too.
pub(crate) fn polls_idle(c: usize) -> bool {
    let s = on_cpu(c);
    s.current.load(Ordering::SeqCst) == s.idle.load(Ordering::Relaxed) && !s.halted.load(Ordering::SeqCst)
}

/// Whether the running thread is this CPU's idle thread (which must never block).
pub fn is_idle_thread() -> bool {
    let s = this_sched();
    s.current.load(Ordering::Relaxed) == s.idle.load(Ordering::Relaxed)
}

/// How many threads wait in this CPU's run queue.
pub fn runnable_here() -> usize {
    this_sched().runnable()
}

/// A function the idle loop calls with `true` on every polling round and with `false` just
/// before it stops polling (to run a thread or to halt): an upper layer that has threads
/// waiting on memory the host writes (the forwarding channel) checks it there.
static IDLE_HOOK: Hook = Hook::new();

/// A function the idle loop calls with `true` right before it halts its CPU and with `false`
/// once the CPU woke (interrupts off both times): an upper layer tells the host which CPUs are
/// halted (the forwarding channel's pollers spin longer while a host CPU is free).
static HALT_HOOK: Hook = Hook::new();

pub fn set_idle_hook(hook: fn(bool)) {
    IDLE_HOOK.set(hook);
}

pub(crate) fn run_idle_hook(polling: bool) {
    IDLE_HOOK.run(polling);
}

pub fn set_halt_hook(hook: fn(bool)) {
    HALT_HOOK.set(hook);
}

pub(crate) fn run_halt_hook(halting: bool) {
    HALT_HOOK.run(halting);
}

/// A `fn(bool)` an upper layer registers (the scheduler may not call up by name).
struct Hook(AtomicPtr<()>);

impl Hook {
    const fn new() -> Hook {
        Hook(AtomicPtr::new(null_mut()))
    }

    fn set(&self, hook: fn(bool)) {
        self.0.store(hook as *mut (), Ordering::Release);
    }

    fn run(&self, arg: bool) {
        let p = self.0.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: only `set` stores here, from a `fn(bool)`.
            let hook: fn(bool) = unsafe { core::mem::transmute::<*mut (), fn(bool)>(p) };
            hook(arg);
        }
    }
}

/// Name and id of the running thread, for log and panic lines.
pub fn current_description() -> (u64, &'static str) {
    let t = this_sched().current.load(Ordering::Relaxed);
    if t.is_null() {
        (0, "boot")
    } else {
        // SAFETY: the current thread's record outlives this call.
        unsafe { ((*t).id, (*t).name()) }
    }
}

/// Puts a new (or moved) thread at the end of its CPU's run queue, kicking that CPU if it is
/// halted. (A woken one goes through `queue_ready`.)
///
/// # Safety
/// `t` must be a live thread record in no queue.
pub(crate) unsafe fn make_runnable(t: *mut Thread) {
    // SAFETY: the caller's contract.
    unsafe { queue_ready(t, false) }
}

/// `make_runnable`; `woken`: the thread ends a wait, and goes ahead of the threads that were
/// preempted or yielded (`RunQueue::push_woken`).
///
/// # Safety
/// As `make_runnable`.
unsafe fn queue_ready(t: *mut Thread, woken: bool) {
    // SAFETY: `t` is a live thread record.
    let target = unsafe { (*t).cpu };
    let s = on_cpu(target);
    // SAFETY: as above.
    unsafe { (*t).state.store(READY, Ordering::SeqCst) };
    {
        let mut q = s.runq.lock();
        // SAFETY: the caller's contract.
        unsafe {
            if woken {
                q.push_woken(t)
            } else {
                q.push(t)
            }
        };
        s.runq_len.store(q.len(), Ordering::SeqCst);
    }
    if woken && s.current.load(Ordering::SeqCst) != s.idle.load(Ordering::Relaxed) {
        // It waits behind a running thread: an idle CPU may take it.
        // SAFETY: the caller's contract.
        balance::offer(unsafe { &*t }, target);
    }
    if target == cpu::id() {
        arm_preemption(s);
    } else if preemption_enabled()
        && !s.halted.load(Ordering::SeqCst)
        && s.current.load(Ordering::SeqCst) != s.idle.load(Ordering::Relaxed)
    {
        // Busy elsewhere, clock stopped: that CPU starts its own preemption clock. Unless its
        // timer fires soon anyway (a look at a spinning program): `timer_interrupt` starts it
        // then, which saves the IPI and the interrupt (ring-0 entries, on PVM 20 us and more).
        let clock_stopped = s.preempt_at.load(Ordering::SeqCst) == 0 && !timer_fires_within_quantum(s);
        // A thread that ends a wait there takes that CPU once its thread has run
        // `WAKE_PREEMPT_AFTER_NS` (`kicked`), as a sleeper woken there does, not when the quantum
        // ends (a futex wake beside a computing thread took 10 ms, natively ~30 us): a kick
        // when it has (one until that CPU next switches), and with the clock's kick anyway.
        // Not for a thread that has run less: a spinning thread that yields soon would pay
        // an interrupt per wake-up (pthread fork/join at --cpus 2, 10x slower).
        let ran = crate::time::ticks().saturating_sub(s.running_since.load(Ordering::SeqCst));
        let ran_long =
            ran + crate::time::ns_to_ticks(WAKE_PREEMPT_SLACK_NS) >= crate::time::ns_to_ticks(WAKE_PREEMPT_AFTER_NS);
        let kick = if woken && (clock_stopped || ran_long) {
            !s.woken_kick.swap(true, Ordering::SeqCst) || clock_stopped
        } else {
            clock_stopped
        };
        if kick {
            apic::send_ipi(cpu::apic_id(target), apic::KICK_VECTOR);
        }
    }
    // No kick otherwise, and the queued thread still gets its turn. The queue length was
    // stored (SeqCst) before `preempt_at` and `current` were read (SeqCst), and the target
    // stores those two before it reads the queue length (`timer_interrupt` stopping the clock,
    // `switch_away` leaving idle): either we saw the clock stopped on a busy CPU and kicked, or
    // the target sees this thread queued and keeps or starts its clock. Likewise for a timer
    // seen armed: `timer_interrupt` clears `timer_armed` before it reads the queue length.
    // (Without that, an idle CPU that was about to run a first thread when a second was queued
    // there, or a clock stopping as a thread was queued, left the second thread behind a
    // spinning one for good: the rare hang of sched_spin_handoff at --cpus 2.)
    kick_if_halted(target);
}

/// Whether CPU `s`'s timer is armed to fire within a preemption quantum from now.
fn timer_fires_within_quantum(s: &CpuSched) -> bool {
    let armed = s.timer_armed.load(Ordering::SeqCst);
    armed != 0 && armed <= crate::time::ticks().saturating_add(QUANTUM.load(Ordering::Relaxed))
}

/// Sends the kick IPI to `target` if its idle loop is halted.
pub(crate) fn kick_if_halted(target: usize) {
    let s = on_cpu(target);
    if target != cpu::id() && s.halted.load(Ordering::SeqCst) {
        crate::counters::add(crate::counters::Stat::Kicks, 1);
        apic::send_ipi(cpu::apic_id(target), apic::KICK_VECTOR);
    }
}

/// Wakes a thread that is blocking or blocked; does nothing to a running or ready thread.
///
/// # Safety
/// `t` must be a live thread record.
pub unsafe fn wake(t: *mut Thread) {
    // SAFETY: `t` is a live thread record; its state is atomic.
    let state = unsafe { &(*t).state };
    loop {
        match state.load(Ordering::SeqCst) {
            BLOCKING => {
                // Not yet off its CPU: cancelling the block is enough.
                if state.compare_exchange(BLOCKING, READY, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                    return;
                }
            }
            BLOCKED => {
                if state.compare_exchange(BLOCKED, READY, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                    queue_ready(t, true);
                    return;
                }
            }
            _ => return,
        }
    }
}

/// Blocks the current thread, which has set its state to BLOCKING and registered itself
/// where a waker will find it. Returns once woken (immediately if already woken).
pub fn block() {
    let was = irq::save_and_disable();
    let cur = current();
    // SAFETY: the current thread's record is alive.
    let state = unsafe { &(*cur).state };
    if state.compare_exchange(BLOCKING, BLOCKED, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
        switch_away(this_sched(), cur);
    } else {
        state.store(RUNNING, Ordering::SeqCst);
    }
    irq::restore(was);
}

/// Takes the current thread off its CPU until the VM stops (a thread that lost the race to
/// end the program): the CPU goes on running the other threads, among them the one ending the
/// program, which may be waiting on this CPU's run queue or asleep for the host. A wake-up (a
/// signal) only puts it back here. The idle thread, which must not block (or a CPU before its
/// scheduler runs), spins instead.
pub fn park_for_good() -> ! {
    loop {
        if current().is_null() || is_idle_thread() {
            core::hint::spin_loop();
            continue;
        }
        // SAFETY: the current thread's record is alive.
        unsafe { (*current()).state.store(BLOCKING, Ordering::SeqCst) };
        block();
    }
}

/// Gives the CPU to the next ready thread on this CPU, if any.
pub fn yield_now() {
    let s = this_sched();
    if s.runnable() == 0 {
        return;
    }
    let was = irq::save_and_disable();
    let cur = current();
    if cur != s.idle.load(Ordering::Relaxed) {
        let mut q = s.runq.lock();
        // SAFETY: the current thread is alive and in no queue while running.
        unsafe {
            (*cur).state.store(READY, Ordering::SeqCst);
            q.push(cur);
        }
        s.runq_len.store(q.len(), Ordering::SeqCst);
    }
    switch_away(s, cur);
    irq::restore(was);
}

/// A round of a spin-wait loop rewritten to yield (`linux::spin_sites`), which found a thread
/// ready on this CPU: it runs.
pub fn yield_for_spin_site() {
    this_sched().program_yielded.store(true, Ordering::Relaxed);
    if !balance::spread_on_yield(cpu::id()) {
        yield_now();
    }
}

/// A program's `sched_yield`: another thread of this vCPU runs if one is ready. Otherwise,
/// when the vCPUs outnumber the host's CPUs and more than the packed ones are busy, the vCPU
/// gives its host CPU away (a host `sched_yield` through the monitor): a program that yields
/// in its spins (LLVM's libomp, which counts the vCPUs as CPUs) waits for a vCPU the host
/// may not be running, and yielding only inside the guest would leave that vCPU waiting for
/// the host's next tick.
pub fn yield_for_program() {
    let s = this_sched();
    s.program_yielded.store(true, Ordering::Relaxed);
    if s.runnable() > 0 {
        yield_now();
    } else if host_overcommitted() && !only_packed_cpus_busy() {
        crate::arch::hypercall::host_yield();
    }
}

/// Run with a user thread's kernel stack top when a CPU switches to it (0: none).
static SWITCH_IN_HOOK: AtomicUsize = AtomicUsize::new(0);

/// Installs the function run, with interrupts off, whenever a CPU switches to a user thread,
/// with the top of that thread's kernel stack (where its program registers are saved).
pub fn set_switch_in_hook(hook: fn(u64)) {
    SWITCH_IN_HOOK.store(hook as usize, Ordering::Release);
}

/// Switches to the next ready thread (or idle). Interrupts must be off.
fn switch_away(s: &CpuSched, cur: *mut Thread) {
    if sleep::due(s) {
        // Sleepers whose deadline passed with no timer of their own (`timer_deadline`).
        sleep::wake_expired(s);
    }
    let next = {
        let mut q = s.runq.lock();
        let n = q.pop();
        s.runq_len.store(q.len(), Ordering::SeqCst);
        n
    };
    let next = match next {
        Some(n) => n,
        None => s.idle.load(Ordering::Relaxed),
    };
    if next == cur {
        // SAFETY: live record.
        unsafe { (*cur).state.store(RUNNING, Ordering::SeqCst) };
        return;
    }
    // SAFETY: the current record is alive while it runs.
    thread::check_stack(unsafe { &*cur });
    // SAFETY: both records are alive; `next` was ready (queued) or is the idle thread, so its
    // saved_rsp came from an earlier switch or from prepare_stack.
    unsafe {
        // CPU-time accounting: the run that ends now, and the one that starts.
        (*cur).account_run(None);
        let now = crate::time::ticks();
        (*next).account_run(Some(now));
        (*next).state.store(RUNNING, Ordering::SeqCst);
        set_current(s, next);
        s.running_since.store(now, Ordering::SeqCst);
        // The next woken thread queued here from another CPU kicks again.
        s.woken_kick.store(false, Ordering::SeqCst);
        if next != s.idle.load(Ordering::Relaxed) {
            // Threads still queued behind `next` need the clock; one queued from another CPU
            // while this one was idle got no kick (`make_runnable`).
            arm_preemption(s);
            if s.runnable() == 0 && sleep::any(s) {
                // The queue is empty: the sleepers' deadlines need the timer again.
                arm_timer(s);
            }
        }
        if (*next).is_user {
            crate::arch::syscall::set_kernel_stack(thread::stack_top(&*next));
            crate::arch::syscall::set_fs_base((*next).fs_base);
            let hook = SWITCH_IN_HOOK.load(Ordering::Acquire);
            if hook != 0 {
                // SAFETY: only `set_switch_in_hook` stores it, and it is a `fn(u64)`.
                core::mem::transmute::<usize, fn(u64)>(hook)(thread::stack_top(&*next));
            }
        }
        let owner = *s.fpu_owner.get();
        if next != s.idle.load(Ordering::Relaxed) && next != owner && !owner.is_null() {
            fpu::save((*owner).fpu.0.as_mut_ptr());
            (*owner).fpu_saved = true;
            *s.fpu_owner.get() = null_mut();
        }
        context::switch(&mut (*cur).saved_rsp, (*next).saved_rsp);
    }
    finish_switch();
}

/// Runs on the new thread right after every switch: completes the exit of the thread we left
/// (now that nothing runs on its stack) and restores the new thread's FPU state.
pub(crate) fn finish_switch() {
    let s = this_sched();
    // SAFETY: interrupts are off and the slot belongs to this CPU; the migrating thread's
    // stack is no longer in use, and its record names its new CPU.
    unsafe {
        let migrating = core::mem::replace(&mut *s.prev_migrating.get(), null_mut());
        if !migrating.is_null() {
            make_runnable(migrating);
        }
    }
    // SAFETY: interrupts are off and the slot belongs to this CPU.
    let prev = unsafe { core::mem::replace(&mut *s.prev_exited.get(), null_mut()) };
    if !prev.is_null() {
        // SAFETY: `prev` exited and we have left its stack; its record is still allocated.
        unsafe {
            let mut e = (*prev).exit.lock();
            e.done = true;
            let joiner = core::mem::replace(&mut e.joiner, null_mut());
            let detached = e.detached;
            drop(e);
            if detached {
                Thread::free(prev);
            } else if !joiner.is_null() {
                wake(joiner);
            }
        }
    }
    let cur = s.current.load(Ordering::Relaxed);
    // SAFETY: the record is alive; its area holds state once `fpu_saved` is set; interrupts
    // are off and the owner slot is this CPU's.
    unsafe {
        if cur != s.idle.load(Ordering::Relaxed) && *s.fpu_owner.get() != cur {
            if (*cur).fpu_saved {
                fpu::restore((*cur).fpu.0.as_ptr());
            } else {
                fpu::restore_initial();
            }
            *s.fpu_owner.get() = cur;
        }
    }
}

/// Moves the current thread to CPU `target` (it continues there; returns on the new CPU).
/// The thread is put on the target's run queue by this CPU's next thread, once nothing runs on
/// the migrating thread's stack any more (otherwise the target could resume it too early).
pub fn migrate_current(target: usize) {
    if target >= cpu::count() || target == cpu::id() {
        return;
    }
    cpu::ensure_online(target);
    let was = irq::save_and_disable();
    let s = this_sched();
    let cur = current();
    // SAFETY: the current thread's record is alive and in no queue while running; interrupts
    // are off and the slot is this CPU's.
    unsafe {
        thread::move_load(&*cur, target);
        (*cur).cpu = target;
        // Its vector state must travel in its record, not stay in this CPU's registers.
        give_up_fpu(s, cur);
        (*cur).state.store(READY, Ordering::SeqCst);
        *s.prev_migrating.get() = cur;
    }
    switch_away(s, cur);
    irq::restore(was);
    let hook = AFTER_MIGRATE_HOOK.load(Ordering::Acquire);
    if hook != 0 {
        // SAFETY: only `set_after_migrate_hook` stores here, a `fn()`.
        let hook = unsafe { core::mem::transmute::<usize, fn()>(hook) };
        hook();
    }
}

/// Run by a thread that has just moved to another CPU (`migrate_current`), on the new one: the
/// Linux layer tells the program (rseq's cpu_id). 0: none.
static AFTER_MIGRATE_HOOK: AtomicUsize = AtomicUsize::new(0);

/// Installs the function a thread runs after it moved to another CPU.
pub fn set_after_migrate_hook(hook: fn()) {
    AFTER_MIGRATE_HOOK.store(hook as usize, Ordering::Release);
}

/// Asks thread `t`, another thread than the caller, to move to CPU `target`. Only a thread can
/// move itself (`migrate_current`), so `t` moves at its next safe point: its start, the end of
/// the system call it is in or blocked in, or the next interrupt that stops it (a thread
/// running on another CPU is interrupted for that).
///
/// Returns true when `t` runs on another CPU, which the request interrupts: the caller may wait
/// for `move_pending` to turn false, as Linux's sched_setaffinity returns once the thread moved.
///
/// # Safety
/// `t` must be a live thread record.
pub unsafe fn ask_to_move(t: *mut Thread, target: usize) -> bool {
    if target >= cpu::count() {
        return false;
    }
    // SAFETY: the caller's contract; the fields read are atomic or only informative (`cpu`
    // may be a moment old: a thread moving meanwhile checks the request itself).
    let (running, on) = unsafe {
        (*t).move_to.store(target, Ordering::SeqCst);
        ((*t).state.load(Ordering::SeqCst) == RUNNING, (*t).cpu)
    };
    let elsewhere = running && on != cpu::id() && on != target;
    if elsewhere {
        interrupt_to_move(on);
    }
    elsewhere
}

/// Interrupts CPU `on` so that its thread reaches `after_interrupt` in the ring its switches run
/// in: the preemption flag makes the trap path take that way (`resched_wanted`), where a kick
/// that finds the program in ring 0 or masked would otherwise return straight to it.
pub fn interrupt_to_move(on: usize) {
    if on < cpu::count() && on != cpu::id() {
        on_cpu(on).need_resched.store(true, Ordering::SeqCst);
        apic::send_ipi(cpu::apic_id(on), apic::KICK_VECTOR);
    }
}

/// Whether thread `t` has yet to act on a move asked with `ask_to_move`.
pub fn move_pending(t: &Thread) -> bool {
    t.move_to.load(Ordering::SeqCst) != thread::NO_MOVE
}

/// Moves the current thread where another thread asked it to (`ask_to_move`), if it did.
pub fn move_if_asked() {
    let cur = current();
    // SAFETY: the current thread's record is alive.
    let asked = unsafe { &(*cur).move_to };
    if asked.load(Ordering::Relaxed) == thread::NO_MOVE {
        return;
    }
    let target = asked.swap(thread::NO_MOVE, Ordering::SeqCst);
    if target != thread::NO_MOVE {
        migrate_current(target);
    }
}

/// Saves `t`'s FPU state into its record if this CPU's registers hold it, and forgets it.
///
/// # Safety
/// Interrupts off; `t` is the current thread.
unsafe fn give_up_fpu(s: &CpuSched, t: *mut Thread) {
    // SAFETY: the caller's contract; the slot is this CPU's, the record alive.
    unsafe {
        if *s.fpu_owner.get() == t {
            fpu::save((*t).fpu.0.as_mut_ptr());
            (*t).fpu_saved = true;
            *s.fpu_owner.get() = null_mut();
        }
    }
}

/// Leaves an exited thread for good.
pub(crate) fn exit_current(cur: *mut Thread) -> ! {
    let s = this_sched();
    // SAFETY: interrupts are off (exit disables them); this CPU's slot. The exited thread's
    // state is dropped: its record is freed soon.
    unsafe {
        if *s.fpu_owner.get() == cur {
            *s.fpu_owner.get() = null_mut();
        }
    }
    // SAFETY: interrupts are off; this CPU's slot.
    unsafe { *s.prev_exited.get() = cur };
    debug_assert_eq!(unsafe { (*cur).state.load(Ordering::Relaxed) }, EXITED);
    switch_away(s, cur);
    unreachable!("an exited thread was resumed");
}

/// The idle thread hands the CPU to the first ready thread.
pub(crate) fn idle_run_next() {
    let was = irq::save_and_disable();
    let s = this_sched();
    let idle = s.idle.load(Ordering::Relaxed);
    if s.runnable() > 0 {
        if spin_look::start(s) | sleep::any(s) {
            // The thread may keep the CPU past a sleeper's deadline: the timer ends it.
            arm_timer(s);
        }
        // SAFETY: the idle record is alive.
        unsafe { (*idle).state.store(READY, Ordering::SeqCst) };
        switch_away(s, idle);
    }
    irq::restore(was);
}

/// Programs this CPU's timer for the earliest of the next sleeper and the next preemption.
pub(crate) fn arm_timer(s: &CpuSched) {
    program_timer(s, timer_deadline(s));
}

/// Arms this CPU's timer for `deadline` (0: none needed) unless it is armed for that time or
/// an earlier one already: that interrupt comes first, and `timer_interrupt` arms what is
/// needed then. Each arm costs a ring-0 entry (on PVM 20 us and more), and threads taking
/// turns on a vCPU would otherwise pay one at nearly every switch (the preemption clock).
fn program_timer(s: &CpuSched, deadline: u64) {
    let was = irq::save_and_disable();
    let armed = s.timer_armed.load(Ordering::Relaxed);
    if deadline != 0 && (armed == 0 || deadline < armed) {
        let deadline = after_the_arm(deadline);
        s.timer_armed.store(deadline, Ordering::SeqCst);
        apic::set_deadline(deadline);
    }
    irq::restore(was);
}

/// Writes this CPU's timer deadline again with the value it has (for the in-kernel benchmark
/// that times an arm: nothing the scheduler expects changes).
pub fn rearm_timer_as_is() {
    let was = irq::save_and_disable();
    apic::set_deadline(this_sched().timer_armed.load(Ordering::SeqCst));
    irq::restore(was);
}

/// `deadline`, or a little after the arm that asks for it ends if it is nearer: a deadline
/// that passes during the arm (on PVM hosts an emulated ring-0 entry of ~30 us) brings its
/// interrupt into the kernel code that armed it, where a look at the program
/// (`spin_look::leftover`) cannot be made and must be armed again, another arm and interrupt.
/// A little later, it comes in the thread that runs next: a 10 us sleep beside a spinning
/// thread takes one interrupt instead of two.
fn after_the_arm(deadline: u64) -> u64 {
    let arm = apic::arm_ticks();
    deadline.max(crate::time::ticks() + arm + arm / 2)
}

/// As `arm_timer`, but also disarms a timer armed for an earlier time that nothing needs any
/// more: for an idle CPU about to halt, which it would only wake.
pub(crate) fn arm_timer_exact(s: &CpuSched) {
    let was = irq::save_and_disable();
    let deadline = timer_deadline(s);
    if s.timer_armed.swap(deadline, Ordering::SeqCst) != deadline {
        apic::set_deadline(deadline);
    }
    irq::restore(was);
}

/// The TSC deadline this CPU's timer needs (0 = none): its first sleeper, its preemption or
/// its next look for a spinning program (`spin_look`).
fn timer_deadline(s: &CpuSched) -> u64 {
    let preempt = s.preempt_at.load(Ordering::SeqCst);
    // While threads wait in the run queue and the preemption clock runs, a sleeper could not
    // run before the next switch or tick anyway (its wake-up only queues it, behind them), and
    // every switch queues the sleepers that are due (`switch_away`): its deadline needs no
    // interrupt of its own, each of which costs ring-0 entries (on PVM 50-300 us of the vCPU
    // for the arm, the interrupt and its EOI). A Go program's sysmon sleeps 20 us at a time
    // next to the runtime's other threads: one timer interrupt per sleep before.
    let queued = preempt != 0 && s.runnable() > 0;
    let sleeper = if queued { 0 } else { s.sleepers.lock().next_deadline().unwrap_or(0) };
    let look = s.spin_look_at.load(Ordering::Relaxed);
    [sleeper, preempt, look].into_iter().filter(|&t| t != 0).min().unwrap_or(0)
}

/// Arms this CPU's timer for what the scheduler needs and, if earlier, for TSC value `extra`
/// (the Linux layer's signal timers, which must fire even while a program thread spins in user
/// code on this CPU and the timer's kernel thread cannot run).
pub fn arm_timer_also(extra: u64) {
    let was = irq::save_and_disable();
    let s = this_sched();
    let own = timer_deadline(s);
    program_timer(s, if own == 0 { extra } else { own.min(extra) });
    irq::restore(was);
}

fn timer_interrupt(_frame: &mut crate::arch::traps::TrapFrame) {
    let s = this_sched();
    // The one-shot timer fired (perhaps early for what it was armed for: re-armed below).
    s.timer_armed.store(0, Ordering::SeqCst);
    let mut look = spin_look::fired(s);
    if sleep::wake_expired(s) {
        look |= spin_look::sleeper_woke(s);
        preempt_for_woken(s);
    }
    let q = QUANTUM.load(Ordering::Relaxed);
    let at = s.preempt_at.load(Ordering::SeqCst);
    if q != 0 && at == 0 && s.runnable() > 0 {
        // Queued from another CPU while this timer was armed, with no kick (`make_runnable`).
        s.preempt_at.store(crate::time::ticks() + q, Ordering::SeqCst);
    } else if q != 0 && at != 0 {
        let now = crate::time::ticks();
        if now >= at {
            // Keep the clock running only while threads wait. Stopped first and the queue read
            // after (both SeqCst): a thread queued from another CPU meanwhile is either seen
            // here, or its waker sees the clock stopped and kicks (`make_runnable`).
            s.preempt_at.store(0, Ordering::SeqCst);
            if s.runnable() > 0 {
                s.preempt_at.store(now + q, Ordering::SeqCst);
                s.need_resched.store(true, Ordering::Relaxed);
            }
        }
    }
    if !look {
        // (After a look, ring 3 arms it: less emulated ring-0 work.)
        arm_timer(s);
    }
}

/// How long a thread runs at least before a thread woken from a sleep on its CPU takes the
/// CPU from it (Linux's classic wake-up granularity).
const WAKE_PREEMPT_AFTER_NS: u64 = 1_000_000;
/// How close to that minimum run a wake-up preempts at once (an interrupt costs 50-150 us of
/// the vCPU on PVM).
const WAKE_PREEMPT_SLACK_NS: u64 = 200_000;

/// This CPU's timer has just ended a sleep and the woken thread waits in the run queue: the
/// running thread gives way once it has run `WAKE_PREEMPT_AFTER_NS` since it got the CPU (at
/// once if it has), not only when its quantum ends, as Linux lets a thread that slept run
/// before one that kept the CPU. The look at a spinning program (`spin_look::sleeper_woke`)
/// switches at once already; this is for a thread that computes: a `usleep(10)` loop beside one
/// at `--cpus 1` waited for its 10 ms quantum each time (90 sleeps a second, natively ~9,000).
/// Costs no interrupt where the running thread ran long enough (this one ended the sleep), else
/// one at the end of its minimum run, instead of the one at the end of its quantum.
fn preempt_for_woken(s: &CpuSched) {
    if QUANTUM.load(Ordering::Relaxed) == 0 || is_idle_thread() || s.runnable() == 0 {
        return;
    }
    // SAFETY: the running thread's record is alive while it runs.
    let start = unsafe { (*current()).run_start.load(Ordering::SeqCst) };
    let due = start.saturating_add(crate::time::ns_to_ticks(WAKE_PREEMPT_AFTER_NS));
    // Within `WAKE_PREEMPT_SLACK_NS` of it: at once, as an interrupt to wait for the rest would
    // cost about as much (a 1 ms sleep beside a computing thread: one interrupt, not two).
    if start == 0 || crate::time::ticks() + crate::time::ns_to_ticks(WAKE_PREEMPT_SLACK_NS) >= due {
        s.need_resched.store(true, Ordering::Relaxed);
        return;
    }
    let at = s.preempt_at.load(Ordering::SeqCst);
    if at == 0 || due < at {
        // `timer_interrupt` (or the look's ring-3 path) arms the timer for it.
        s.preempt_at.store(due, Ordering::SeqCst);
    }
}

/// An interrupt on this CPU has just ended waits of threads that run here (answers to their
/// forwarded calls): they take the CPU from a computing thread as a sleeper its timer woke
/// does (`preempt_for_woken`), not at the end of its quantum. A thread reading a pipe beside
/// one that computes, `--cpus 1`, waited up to 10 ms for each answer.
pub fn woken_by_interrupt() {
    if is_idle_thread() {
        return;
    }
    let s = this_sched();
    preempt_for_woken(s);
    arm_timer(s);
}

/// True if this CPU's thread should give way (its quantum ran out and others are ready).
/// Never the idle thread: it hands the CPU over itself (`idle_run_next`), and preempted in the
/// middle of its loop it would resume there later with stale decisions, e.g. halting with no
/// timer armed for a sleeper that blocked meanwhile (a lost wake-up).
pub fn resched_wanted() -> bool {
    let s = this_sched();
    !is_idle_thread() && (s.need_resched.load(Ordering::Relaxed) || s.spin_look_due.load(Ordering::Relaxed))
}

/// Called at the end of every interrupt: preempts the running thread if its quantum ran out.
/// With the kernel in ring 3, not from ring 0: the trap path asks `resched_wanted` and
/// switches once back in ring 3.
pub fn after_interrupt() {
    let s = this_sched();
    if crate::arch::ring3::active() && crate::arch::ring3::in_ring0() {
        return;
    }
    if is_idle_thread() {
        // See `resched_wanted`.
        return;
    }
    spin_look::leftover(s);
    if s.need_resched.swap(false, Ordering::Relaxed) {
        let cur = current();
        // SAFETY: live record.
        if unsafe { (*cur).state.load(Ordering::SeqCst) } == RUNNING {
            yield_now();
        }
    }
    // A thread stopped here (or resumed after a preemption here) that another thread gave a
    // CPU mask excluding this CPU. In ring-3 mode this point is also reached inside kernel
    // code, which an interrupt preempts there and which may hold this CPU's per-CPU records in
    // its locals (`traps::run_deferred`): it moves only at the program's edge then (the end of
    // its system call, an interrupt of its program code: `spin_look::program_interrupted`).
    if !crate::arch::ring3::active() {
        move_if_asked();
    }
}
