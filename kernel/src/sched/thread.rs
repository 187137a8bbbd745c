//! Kernel threads: create (function + argument, or closure), exit with a value, join, detach.
//! A thread is pinned to one CPU for its life (HPC placement: one thread per CPU, no
//! migration); new threads go round-robin over the CPUs unless a CPU is named.

use alloc::boxed::Box;
use core::ptr::{addr_of_mut, null_mut};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::arch::context;
use crate::sync::IrqSpinLock;

pub const RUNNING: u32 = 0;
/// In a run queue (or about to be), waiting for its CPU.
pub const READY: u32 = 1;
/// Announced that it will block; a wake-up now cancels the block.
pub const BLOCKING: u32 = 2;
/// Off CPU, waiting for `sched::wake`.
pub const BLOCKED: u32 = 3;
pub const EXITED: u32 = 4;

pub const DEFAULT_STACK_SIZE: usize = 32 << 10;
/// The kernel stack of a thread that runs a Linux program's code (`ThreadOptions::user`): it
/// holds only the kernel's frames for that thread's system calls, faults, signal deliveries and
/// interrupts. The deepest use measured over the test suite (static, dynamic and OpenMP
/// programs, signals, forwarded calls, ring 0 and ring 3) was about 6 KiB. Half the default
/// lets 10,000 threads live at once at `--mem 4G` (the kernel's share is 256 MiB); the canary
/// at its bottom catches an overflow at the next switch.
pub const USER_STACK_SIZE: usize = 16 << 10;
/// Written at the lowest word of every owned kernel stack; a thread switched away from with it
/// changed has overflowed its stack.
const STACK_CANARY: u64 = 0x5354_4143_4b45_4e44;
const NAME_LEN: usize = 24;
/// Room for FXSAVE (512 B) or XSAVE of every user state component up to AVX-512 and PKRU.
const FPU_AREA: usize = crate::arch::fpu::AREA_MAX;

#[repr(C, align(64))]
pub struct FpuArea(pub [u8; FPU_AREA]);

/// What a finished thread leaves for its joiner.
pub struct ExitState {
    pub done: bool,
    pub detached: bool,
    pub value: u64,
    pub joiner: *mut Thread,
}

// SAFETY: the joiner pointer is only used under the lock that wraps ExitState.
unsafe impl Send for ExitState {}

type Closure = Box<dyn FnOnce() -> u64 + Send>;

/// A thread's rseq(2) registration, kept here for the Linux layer (`linux::rseq`), which
/// alone reads and writes it (only on the thread itself).
#[derive(Clone, Copy, Default)]
pub struct Rseq {
    /// The program's `struct rseq` (0: none registered), its length and abort signature.
    pub area: u64,
    pub len: u32,
    pub sig: u32,
    /// The CPU last written into the area (`u32::MAX`: to be written).
    pub cpu: u32,
    /// `run_seq` when the Linux layer last looked: a change means the thread was switched
    /// away meanwhile (a preemption, which aborts a critical section it was in).
    pub seen: u64,
}

#[repr(C)]
pub struct Thread {
    /// First field: 64-byte aligned as XSAVE requires. Holds state only once `fpu_saved`.
    pub fpu: FpuArea,
    pub fpu_saved: bool,
    pub saved_rsp: u64,
    /// Link for whichever single queue holds the thread (run queue, wait queue, sleepers).
    pub next: *mut Thread,
    pub state: AtomicU32,
    pub cpu: usize,
    pub id: u64,
    name: [u8; NAME_LEN],
    name_len: usize,
    /// Owned stack (0 for a CPU's boot/idle thread, whose stack the monitor provided).
    stack_base: u64,
    stack_order: usize,
    /// Counted in its CPU's placement load (`LOAD`); a helper thread is not.
    counts_as_load: bool,
    pub sleep_deadline: u64,
    /// Link in its CPU's sleep list (separate from `next`: a timed wait can be woken while
    /// still in that list).
    pub sleep_next: *mut Thread,
    pub exit: IrqSpinLock<ExitState>,
    /// Runs a Linux program's code (has a user context: TLS base, kernel stack for entries).
    pub is_user: bool,
    pub fs_base: u64,
    /// Linux thread id, and CLONE_CHILD_CLEARTID's address (0 = none).
    pub tid: u32,
    pub clear_child_tid: u64,
    pub robust_list: u64,
    /// The Linux layer's rseq(2) registration (`linux::rseq`); all zero for none.
    pub rseq: Rseq,
    pub sigmask: u64,
    /// The Linux thread's timer slack in ns, current and default (PR_SET_TIMERSLACK 0 restores
    /// the default); 0 stands for the process's initial slack (`linux::calls::prctl`). Only
    /// the thread itself reads and writes them.
    pub timer_slack: [u64; 2],
    /// The Linux thread's own name (PR_SET_NAME), None for the main thread while it has the
    /// process's (`linux::process::PROCESS.name`).
    pub comm: Option<[u8; 16]>,
    /// CPUs the program allowed this thread (sched_setaffinity); all zero = every CPU.
    /// Atomic words: another thread of the program may set them (`affinity`).
    affinity: [AtomicU64; 4],
    /// A CPU another thread asked this one to move to (`sched::ask_to_move`), or `NO_MOVE`.
    pub move_to: AtomicUsize,
    /// Put on its CPU by name (`ThreadOptions::cpu`) or by the kernel's OpenMP runtime: idle
    /// CPUs do not take it (`balance`).
    pub placed: AtomicBool,
    /// An idle CPU that asked this thread to move to it (`balance`), or `NO_MOVE`. Apart from
    /// `move_to`, since it is acted on only where the thread is at the program's edge (the end
    /// of a system call, an interrupt of program code), never inside kernel code that an
    /// interrupt preempted (which may hold this CPU's per-CPU state in its locals).
    pub take_to: AtomicUsize,
    /// Placed (`placed`) only to pack the program's threads onto the first vCPUs when vCPUs
    /// outnumber host CPUs: it may still move among those (`balance::spread_if_crowded`).
    /// Written before the thread first runs.
    pub packed: bool,
    /// Turns that ended on a crowded CPU since the thread last moved (`balance::spread_if_crowded`;
    /// only the thread itself touches it).
    pub crowded_turns: u32,
    /// TSC when the thread was created.
    pub created_tsc: u64,
    /// TSC ticks the thread has run, up to its last switch away (see `cpu_ticks`).
    pub run_ticks: AtomicU64,
    /// TSC when the thread started its current run; 0 while it does not run.
    pub run_start: AtomicU64,
    /// The nanoseconds the thread's CPU had waited for a host CPU when its current run began
    /// (`steal_time`): time the host ran something else meanwhile is not the thread's CPU time.
    pub run_steal: AtomicU64,
    /// The largest `cpu_ticks` answered: the clock never goes back (see there).
    pub cpu_seen: AtomicU64,
    /// Odd while the scheduler updates `run_ticks` and `run_start` (a sequence lock, so that
    /// another CPU reads a consistent pair).
    pub run_seq: AtomicU64,
    /// Of the ticks run, those spent inside system calls that have returned (system time;
    /// kept by linux::cputime).
    pub sys_ticks: AtomicU64,
    /// The thread's `cpu_ticks` when its current system call began, plus one; 0 outside one.
    pub call_start: AtomicU64,
    /// A system call's result computed by the Linux layer's fast path but still to be returned
    /// through the full path (a signal arrived meanwhile); `i64::MIN`: none.
    pub syscall_stash: i64,
    /// The Linux layer's seccomp filter chain for this thread (`linux::seccomp`: an `Arc` turned
    /// into a raw pointer), 0 for none. Another thread sets it under TSYNC.
    pub seccomp: AtomicUsize,
    /// Set while the kernel makes a system call of its own on the program's path
    /// (`signal::take_while_waiting`): the program's seccomp filters do not see it.
    pub kernel_call: bool,
    /// The OpenMP runtime's state for this thread (`omp::thread`), null until it first runs
    /// OpenMP code.
    pub omp: *mut u8,
    /// A word the OpenMP runtime keeps for its hottest lookup (the work share of the loop
    /// the thread is in, or 0), two loads from the CPU's record; only the thread writes it.
    pub omp_hot: u64,
    closure: Option<Closure>,
    entry: Option<fn(u64) -> u64>,
    arg: u64,
}

/// `move_to` when no move is asked.
pub const NO_MOVE: usize = usize::MAX;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static NEXT_CPU: AtomicUsize = AtomicUsize::new(0);

impl Thread {
    /// Builds the record in place: the FPU area is left uninitialised but for the XSAVE header
    /// (a thread's first switch-in loads the shared initial state instead), because on emulated ring 0 every
    /// byte copied or zeroed here costs time on each thread creation.
    fn new(name: &str, cpu: usize) -> Box<Thread> {
        let mut b = Box::<Thread>::new_uninit();
        let p = b.as_mut_ptr();
        let mut name_buf = [0u8; NAME_LEN];
        let n = name.len().min(NAME_LEN);
        name_buf[..n].copy_from_slice(&name.as_bytes()[..n]);
        // SAFETY: every field but `fpu` (plain bytes, valid uninitialised as far as the kernel
        // reads them: only after `fpu_saved` is set) is written before `assume_init`.
        unsafe {
            addr_of_mut!((*p).fpu_saved).write(false);
            // XSAVE leaves the header's reserved bytes alone and XRSTOR faults unless they are
            // zero: the only part of the area that must start clean (64 bytes at 512).
            core::ptr::write_bytes(addr_of_mut!((*p).fpu.0).cast::<u8>().add(512), 0, 64);
            addr_of_mut!((*p).saved_rsp).write(0);
            addr_of_mut!((*p).next).write(null_mut());
            addr_of_mut!((*p).state).write(AtomicU32::new(READY));
            addr_of_mut!((*p).cpu).write(cpu);
            addr_of_mut!((*p).id).write(NEXT_ID.fetch_add(1, Ordering::Relaxed));
            addr_of_mut!((*p).name).write(name_buf);
            addr_of_mut!((*p).name_len).write(n);
            addr_of_mut!((*p).stack_base).write(0);
            addr_of_mut!((*p).stack_order).write(0);
            addr_of_mut!((*p).counts_as_load).write(false);
            addr_of_mut!((*p).sleep_deadline).write(0);
            addr_of_mut!((*p).sleep_next).write(null_mut());
            addr_of_mut!((*p).is_user).write(false);
            addr_of_mut!((*p).fs_base).write(0);
            addr_of_mut!((*p).tid).write(0);
            addr_of_mut!((*p).clear_child_tid).write(0);
            addr_of_mut!((*p).robust_list).write(0);
            addr_of_mut!((*p).rseq).write(Rseq::default());
            addr_of_mut!((*p).sigmask).write(0);
            addr_of_mut!((*p).timer_slack).write([0; 2]);
            addr_of_mut!((*p).comm).write(None);
            addr_of_mut!((*p).affinity).write([const { AtomicU64::new(0) }; 4]);
            addr_of_mut!((*p).move_to).write(AtomicUsize::new(NO_MOVE));
            addr_of_mut!((*p).placed).write(AtomicBool::new(false));
            addr_of_mut!((*p).take_to).write(AtomicUsize::new(NO_MOVE));
            addr_of_mut!((*p).crowded_turns).write(0);
            addr_of_mut!((*p).packed).write(false);
            addr_of_mut!((*p).created_tsc).write(crate::time::ticks());
            addr_of_mut!((*p).run_ticks).write(AtomicU64::new(0));
            addr_of_mut!((*p).run_start).write(AtomicU64::new(0));
            addr_of_mut!((*p).run_steal).write(AtomicU64::new(0));
            addr_of_mut!((*p).cpu_seen).write(AtomicU64::new(0));
            addr_of_mut!((*p).run_seq).write(AtomicU64::new(0));
            addr_of_mut!((*p).sys_ticks).write(AtomicU64::new(0));
            addr_of_mut!((*p).call_start).write(AtomicU64::new(0));
            addr_of_mut!((*p).syscall_stash).write(i64::MIN);
            addr_of_mut!((*p).omp).write(core::ptr::null_mut());
            addr_of_mut!((*p).omp_hot).write(0);
            addr_of_mut!((*p).seccomp).write(AtomicUsize::new(0));
            addr_of_mut!((*p).kernel_call).write(false);
            addr_of_mut!((*p).exit).write(IrqSpinLock::new(ExitState {
                done: false,
                detached: false,
                value: 0,
                joiner: null_mut(),
            }));
            addr_of_mut!((*p).closure).write(None);
            addr_of_mut!((*p).entry).write(None);
            addr_of_mut!((*p).arg).write(0);
            b.assume_init()
        }
    }

    /// The CPUs the program allowed this thread (all zero: every CPU).
    pub fn affinity(&self) -> [u64; 4] {
        core::array::from_fn(|i| self.affinity[i].load(Ordering::Relaxed))
    }

    /// Sets the CPUs the program allows this thread (by the thread itself, or by another one
    /// that then asks it to move if it runs elsewhere: `sched::ask_to_move`).
    pub fn set_affinity(&self, mask: [u64; 4]) {
        for (w, v) in self.affinity.iter().zip(mask) {
            w.store(v, Ordering::Relaxed);
        }
    }

    /// The record for a CPU's boot context, which becomes that CPU's idle thread.
    pub fn new_boot(cpu: usize) -> *mut Thread {
        let t = Thread::new("idle", cpu);
        t.state.store(RUNNING, Ordering::Relaxed);
        Box::into_raw(t)
    }

    /// The TSC ticks this thread has been running (its CPU time), counted by the scheduler at
    /// each switch, less the time its vCPU waited for a host CPU meanwhile (the host's steal
    /// time, where it reports it: on a loaded host a CPU-time clock ran as fast as the wall
    /// clock, 1.00 s where the host counted 0.55-0.88 s for the whole `hrt`); includes the
    /// current run when it is running now. Another CPU may read it while the thread runs: the
    /// answer is then a moment old.
    ///
    /// Never less than an answer given before: the host adds the time a vCPU waited to its
    /// steal count only when it runs the vCPU again, so while it waits, the current run looks
    /// longer to another CPU than it will once the steal is known. A thread that slept on a
    /// spinning thread's CPU clock woke at 50 ms of it and then read less (a loaded host, 4
    /// vCPUs on 2 CPUs: `clock_nanosleep_on_cpu_clocks`); the clock now waits there instead.
    pub fn cpu_ticks(&self) -> u64 {
        let now = loop {
            let seq = self.run_seq.load(Ordering::SeqCst);
            let ran = self.run_ticks.load(Ordering::SeqCst);
            let start = self.run_start.load(Ordering::SeqCst);
            let steal = self.run_steal.load(Ordering::SeqCst);
            if seq & 1 == 0 && self.run_seq.load(Ordering::SeqCst) == seq {
                break if start == 0 { ran } else { ran + self.run_since(start, steal, self.cpu) };
            }
            core::hint::spin_loop();
        };
        self.cpu_seen.fetch_max(now, Ordering::SeqCst).max(now)
    }

    /// The ticks of a run that began at TSC `start`, when its CPU `cpu` had waited `steal` ns.
    fn run_since(&self, start: u64, steal: u64, cpu: usize) -> u64 {
        let stolen = crate::arch::steal_time::stolen_ns(cpu).saturating_sub(steal);
        crate::time::ticks().saturating_sub(start).saturating_sub(crate::time::ns_to_ticks(stolen))
    }

    /// Scheduler: the thread starts running at TSC `now` (`Some`), or stops (`None`), on this CPU.
    pub(crate) fn account_run(&self, now: Option<u64>) {
        let cpu = crate::cpu::id();
        self.run_seq.fetch_add(1, Ordering::SeqCst);
        match now {
            Some(t) => {
                self.run_steal.store(crate::arch::steal_time::stolen_ns(cpu), Ordering::SeqCst);
                self.run_start.store(t.max(1), Ordering::SeqCst);
            }
            None => {
                let start = self.run_start.swap(0, Ordering::SeqCst);
                if start != 0 {
                    let ran = self.run_since(start, self.run_steal.load(Ordering::SeqCst), cpu);
                    self.run_ticks.fetch_add(ran, Ordering::SeqCst);
                }
            }
        }
        self.run_seq.fetch_add(1, Ordering::SeqCst);
    }

    pub fn name(&self) -> &str {
        core::str::from_utf8(&self.name[..self.name_len]).unwrap_or("?")
    }

    /// Frees a thread that has finished switching away for the last time.
    ///
    /// # Safety
    /// `t` must be exited and no longer referenced by any queue or handle.
    pub unsafe fn free(t: *mut Thread) {
        // SAFETY: the caller guarantees exclusive ownership of an exited thread.
        unsafe {
            if (*t).counts_as_load {
                LOAD[(*t).cpu].fetch_sub(1, Ordering::Relaxed);
            }
            if (*t).stack_base != 0 {
                crate::mem::free_pages((*t).stack_base, (*t).stack_order);
            }
            drop(Box::from_raw(t));
        }
    }
}

/// How to create a thread.
#[derive(Clone, Copy)]
pub struct ThreadOptions<'a> {
    pub name: &'a str,
    /// A CPU index, or None for round-robin placement.
    pub cpu: Option<usize>,
    pub stack_size: usize,
    /// Runs Linux program code (gets a user context on every switch-in).
    pub user: bool,
    /// A kernel helper that mostly sleeps (a timer's worker): placed on the creating CPU and
    /// not counted in placement, so it neither starts a dormant CPU nor steers the program's
    /// threads away from the CPU it sleeps on.
    pub helper: bool,
}

impl Default for ThreadOptions<'_> {
    fn default() -> Self {
        ThreadOptions { name: "thread", cpu: None, stack_size: DEFAULT_STACK_SIZE, user: false, helper: false }
    }
}

impl<'a> ThreadOptions<'a> {
    pub fn named(name: &'a str) -> Self {
        ThreadOptions { name, ..Default::default() }
    }

    pub fn on_cpu(mut self, cpu: usize) -> Self {
        self.cpu = Some(cpu);
        self
    }

    pub fn stack(mut self, bytes: usize) -> Self {
        self.stack_size = bytes;
        self
    }

    /// A kernel helper thread (see `helper`).
    pub fn helper(mut self) -> Self {
        self.helper = true;
        self
    }

    /// Runs Linux program code, on a kernel stack of `USER_STACK_SIZE`.
    pub fn user(mut self) -> Self {
        self.user = true;
        self.stack_size = USER_STACK_SIZE;
        self
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateError {
    NoSuchCpu,
    OutOfMemory,
}

/// A created thread; must be joined or detached.
#[must_use = "a thread must be joined or detached"]
pub struct ThreadHandle {
    t: *mut Thread,
}

// SAFETY: a handle only refers to a heap thread record whose shared parts are synchronised.
unsafe impl Send for ThreadHandle {}

impl ThreadHandle {
    pub fn id(&self) -> u64 {
        // SAFETY: the record lives until join/detach consume the handle.
        unsafe { (*self.t).id }
    }

    pub fn cpu(&self) -> usize {
        // SAFETY: as above.
        unsafe { (*self.t).cpu }
    }

    /// Waits for the thread to exit and returns its exit value.
    pub fn join(self) -> u64 {
        let t = self.t;
        core::mem::forget(self);
        // SAFETY: the handle kept the record alive; `join` is its only consumer.
        unsafe {
            loop {
                let mut e = (*t).exit.lock();
                if e.done {
                    let v = e.value;
                    drop(e);
                    Thread::free(t);
                    return v;
                }
                let cur = super::current();
                e.joiner = cur;
                (*cur).state.store(BLOCKING, Ordering::SeqCst);
                drop(e);
                super::block();
            }
        }
    }

    /// Lets the thread free itself when it exits.
    pub fn detach(self) {
        let t = self.t;
        core::mem::forget(self);
        // SAFETY: as for join.
        unsafe {
            let mut e = (*t).exit.lock();
            if e.done {
                drop(e);
                Thread::free(t);
            } else {
                e.detached = true;
            }
        }
    }

    pub(super) fn from_raw(t: *mut Thread) -> Self {
        ThreadHandle { t }
    }
}

impl Drop for ThreadHandle {
    fn drop(&mut self) {
        // Dropping without join/detach would leak or race; treat it as detach.
        let t = core::mem::replace(&mut self.t, null_mut());
        if !t.is_null() {
            ThreadHandle { t }.detach();
        }
    }
}

/// Live threads placed on each CPU (idle threads not counted).
static LOAD: [AtomicUsize; hrt_abi::MAX_CPUS] = [const { AtomicUsize::new(0) }; hrt_abi::MAX_CPUS];

/// Moves one unit of placement load from CPU `from` to CPU `to` (a thread migrated).
/// A forked child: no thread counts on any CPU yet.
pub(super) fn reset_load() {
    for l in &LOAD {
        l.store(0, Ordering::Relaxed);
    }
}

pub(super) fn move_load(t: &Thread, to: usize) {
    if !t.counts_as_load {
        return;
    }
    let from = t.cpu;
    LOAD[from].fetch_sub(1, Ordering::Relaxed);
    LOAD[to].fetch_add(1, Ordering::Relaxed);
}

/// The least loaded of the CPUs `allowed` accepts (for threads created under an affinity mask).
pub fn least_loaded(allowed: impl Fn(usize) -> bool) -> Option<usize> {
    (0..crate::cpu::count()).filter(|&c| allowed(c)).min_by_key(|&c| LOAD[c].load(Ordering::Relaxed))
}

/// Wakes, if its idle loop halted, the CPU that a thread created next (without a named CPU)
/// would go to. A program that maps a thread stack creates a thread next: a halted vCPU takes
/// 0.3-1 ms to wake on a PVM host (an interrupt through the hypervisor, and the host's own
/// idle CPU), which then overlaps the creation instead of following it.
pub fn prewake_next_placement() {
    let n = crate::cpu::count();
    let start = NEXT_CPU.load(Ordering::Relaxed) % n.max(1);
    if let Some(c) = (0..n).map(|i| (start + i) % n).min_by_key(|&c| LOAD[c].load(Ordering::Relaxed)) {
        super::kick_if_halted(c);
    }
}

/// Where a new thread goes: the named CPU, or the least loaded one (round-robin among equals),
/// so that a program's N threads on N CPUs get one CPU each. A helper goes to this CPU.
fn pick_cpu(opts: &ThreadOptions) -> Result<usize, CreateError> {
    let n = crate::cpu::count();
    if opts.helper && opts.cpu.is_none() {
        return Ok(crate::cpu::id());
    }
    let chosen = match opts.cpu {
        Some(c) if c < n => c,
        Some(_) => return Err(CreateError::NoSuchCpu),
        None => {
            let start = NEXT_CPU.fetch_add(1, Ordering::Relaxed) % n;
            (0..n).map(|i| (start + i) % n).min_by_key(|&c| LOAD[c].load(Ordering::Relaxed)).unwrap_or(0)
        }
    };
    crate::cpu::ensure_online(chosen);
    LOAD[chosen].fetch_add(1, Ordering::Relaxed);
    Ok(chosen)
}

/// Allocates the record and stack (on the target CPU's NUMA zone) of a thread that will call
/// `start(record)` when first switched to.
pub(super) fn allocate(opts: &ThreadOptions) -> Result<Box<Thread>, CreateError> {
    let cpu = pick_cpu(opts)?;
    // pick_cpu counted it in its CPU's load, unless it is a helper placed here.
    let counted = !opts.helper || opts.cpu.is_some();
    let mut t = Thread::new(opts.name, cpu);
    t.is_user = opts.user;
    t.placed = AtomicBool::new(opts.cpu.is_some());
    t.counts_as_load = counted;
    let order = crate::mem::order_for(opts.stack_size.max(4096));
    let zone = crate::cpu::zone_of(cpu);
    let Some(stack) = crate::mem::alloc_pages(order, Some(zone)).or_else(|| crate::mem::alloc_pages(order, None))
    else {
        if counted {
            LOAD[cpu].fetch_sub(1, Ordering::Relaxed);
        }
        return Err(CreateError::OutOfMemory);
    };
    t.stack_base = stack;
    t.stack_order = order;
    // SAFETY: the lowest word of the stack just allocated for this thread.
    unsafe { (stack as *mut u64).write(STACK_CANARY) };
    Ok(t)
}

/// Panics if the thread `t` overflowed its kernel stack (its canary was overwritten).
pub fn check_stack(t: &Thread) {
    // SAFETY: an owned stack stays allocated while its record lives; its lowest word is the
    // canary written by `allocate`.
    if t.stack_base != 0 && unsafe { (t.stack_base as *const u64).read_volatile() } != STACK_CANARY {
        panic!("thread {} ({}) overflowed its {} KiB kernel stack", t.id, t.name(), (4096usize << t.stack_order) >> 10);
    }
}

pub fn stack_top(t: &Thread) -> u64 {
    t.stack_base + (4096u64 << t.stack_order)
}

/// Bytes at the top of a user thread's kernel stack kept for the register frame of entries
/// from ring 3 (the thread's own kernel frames start below it).
pub const USER_FRAME_RESERVE: u64 = 256;

fn launch(mut t: Box<Thread>) -> ThreadHandle {
    let top = stack_top(&t) - if t.is_user { USER_FRAME_RESERVE } else { 0 };
    let raw: *mut Thread = &mut *t;
    // SAFETY: the stack is freshly allocated and owned by this thread.
    t.saved_rsp = unsafe { context::prepare_stack(top, thread_start, raw as u64) };
    let raw = Box::into_raw(t);
    // SAFETY: a new, live thread in no queue.
    unsafe { super::make_runnable(raw) };
    ThreadHandle::from_raw(raw)
}

/// Creates a thread running `entry(arg)`; its return value is the exit value.
pub fn create(entry: fn(u64) -> u64, arg: u64, opts: ThreadOptions) -> Result<ThreadHandle, CreateError> {
    let mut t = allocate(&opts)?;
    t.entry = Some(entry);
    t.arg = arg;
    Ok(launch(t))
}

/// Creates a thread running a closure.
pub fn spawn<F>(opts: ThreadOptions, f: F) -> Result<ThreadHandle, CreateError>
where
    F: FnOnce() -> u64 + Send + 'static,
{
    spawn_with(opts, |_| {}, f)
}

/// Creates a thread running a closure, letting `setup` fill in the record before it can run.
pub fn spawn_with<F>(opts: ThreadOptions, setup: impl FnOnce(&mut Thread), f: F) -> Result<ThreadHandle, CreateError>
where
    F: FnOnce() -> u64 + Send + 'static,
{
    let mut t = allocate(&opts)?;
    t.closure = Some(Box::new(f));
    setup(&mut t);
    Ok(launch(t))
}

extern "C" fn thread_start(raw: u64) -> ! {
    super::finish_switch();
    crate::arch::irq::enable();
    let t = raw as *mut Thread;
    // SAFETY: the record is ours and alive; entry fields are only read here.
    let value = unsafe {
        if let Some(f) = (*t).closure.take() {
            f()
        } else if let Some(entry) = (*t).entry {
            entry((*t).arg)
        } else {
            0
        }
    };
    exit(value)
}

/// Ends the current thread with `value` (returned by `join`).
pub fn exit(value: u64) -> ! {
    crate::arch::irq::disable();
    let cur = super::current();
    // SAFETY: the current thread's record is alive until it has switched away.
    unsafe {
        (*cur).exit.lock().value = value;
        (*cur).state.store(EXITED, Ordering::SeqCst);
    }
    super::exit_current(cur)
}
