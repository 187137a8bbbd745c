//! The one process a VM runs: identity, brk, thread count, recorded signal state, limits.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::sync::IrqSpinLock;

/// Linux thread ids are kernel thread ids plus this: above every pid the host can hand out
/// (PID_MAX_LIMIT, 2^22 on 64-bit Linux; this host's pid_max is 32,768), so that a tid is
/// never also the pid of a host process. With 1000 it often was (the program's own children
/// are host processes): a call that took an ended thread's tid for another process's pid then
/// reached that process (`prlimit_of_other_processes_as_on_linux` read an unrelated process's
/// limits once, with the test suite's processes around), and a live thread could shadow a
/// child with the same number. Still far below FUTEX_TID_MASK (2^30), which robust and PI
/// futexes store tids in.
const TID_BASE: u32 = 1 << 22;

/// The Linux tid of a program thread other than the main one (whose tid is the pid, `hrt`'s
/// host pid): from the kernel thread id, skipping the pid so no thread shares it.
pub fn tid_for(thread_id: u64) -> u32 {
    let tid = thread_id as u32 + TID_BASE;
    if tid >= pid() {
        tid + 1
    } else {
        tid
    }
}

pub struct Brk {
    pub start: u64,
    /// The program's current break.
    pub cur: u64,
    /// End of the memory backing the break (grows in 2 MiB steps, never shrinks).
    pub mapped_end: u64,
    /// Pages `[page_up(cur), kept_top)` above a lowered break that stayed present, holding what
    /// the program left there (`calls::memory::brk`, once the break has taken turns shrinking
    /// and growing): zeroed when the break grows over them again, made not present when the
    /// window above the break is given up. 0: none.
    pub kept_top: u64,
    /// How many times the break grew right after it had been lowered (a malloc heap's trim
    /// and regrowth).
    pub regrowths: u32,
    /// The break's last move lowered it.
    pub lowered: bool,
    /// How many times the break grew by at least a page.
    pub grows: u32,
}

impl Brk {
    /// The break's window above the break (reserved, not part of the address space).
    pub fn unused(&self) -> u64 {
        self.mapped_end.saturating_sub(super::usermem::page_up(self.cur).max(self.start))
    }
}

/// `Brk::unused` of the program's break, mirrored whenever the break or its window moves, so
/// that the address space can be read without the break's lock (`calls::info::address_space`).
pub static UNUSED_BREAK: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

pub struct Process {
    pub pid: AtomicU32,
    pub live_threads: AtomicUsize,
    pub brk: IrqSpinLock<Brk>,
    pub name: IrqSpinLock<[u8; 16]>,
    /// Recorded rt_sigaction handlers (delivery beyond fatal signals comes later).
    pub sigactions: IrqSpinLock<[[u64; 4]; 65]>,
    /// soft, hard per resource (RLIMIT_*).
    pub rlimits: IrqSpinLock<[(u64, u64); 16]>,
}

const INF: u64 = u64::MAX;

pub static PROCESS: Process = Process {
    pid: AtomicU32::new(0),
    live_threads: AtomicUsize::new(0),
    brk: IrqSpinLock::new(Brk { start: 0, cur: 0, mapped_end: 0, kept_top: 0, regrowths: 0, lowered: false, grows: 0 }),
    name: IrqSpinLock::new([0; 16]),
    sigactions: IrqSpinLock::new([[0; 4]; 65]),
    rlimits: IrqSpinLock::new([
        (INF, INF),          // CPU
        (INF, INF),          // FSIZE
        (INF, INF),          // DATA
        (8 << 20, INF),      // STACK
        (0, INF),            // CORE
        (INF, INF),          // RSS
        (INF, INF),          // NPROC
        (1024, 1024 * 1024), // NOFILE
        (8 << 20, 8 << 20),  // MEMLOCK
        (INF, INF),          // AS
        (INF, INF),          // LOCKS
        (INF, INF),          // SIGPENDING
        (819_200, 819_200),  // MSGQUEUE
        (0, 0),              // NICE
        (0, 0),              // RTPRIO
        (INF, INF),          // RTTIME
    ]),
};

/// Takes the resource limits `hrt` was started with (the boot-info block's), as an exec'd
/// program inherits its parent's; a block without them (all zero) keeps the defaults above.
pub fn inherit_rlimits(limits: &[[u64; 2]; hrt_abi::RLIMITS]) {
    if limits.iter().all(|l| l[1] == 0) {
        return;
    }
    let mut own = PROCESS.rlimits.lock();
    for (slot, l) in own.iter_mut().zip(limits) {
        *slot = (l[0], l[1]);
    }
}

/// A forked child's parent: the parent's pid (its `hrt`'s host pid; 0: not a forked child,
/// whose parent is `hrt`'s parent, the boot-info block's `host_ppid`).
static PARENT_PID: AtomicU32 = AtomicU32::new(0);

pub fn set_parent_pid(pid: u32) {
    PARENT_PID.store(pid, Ordering::Relaxed);
}

/// The program's getppid.
pub fn parent_pid() -> u32 {
    match PARENT_PID.load(Ordering::Relaxed) {
        0 => crate::bootinfo::get().host_ppid,
        p => p,
    }
}

pub fn pid() -> u32 {
    PROCESS.pid.load(Ordering::Relaxed)
}

/// The Linux tid of the current thread.
pub fn current_tid() -> u32 {
    // SAFETY: the current thread's record is alive.
    unsafe { (*crate::sched::current()).tid }
}

/// Set by the first thread that ends the program. Threads on other CPUs can reach an end at
/// the same moment (a thread dies of SIGABRT while the main thread calls exit): exactly one of
/// them decides the status, as Linux's exit_group does under its signal lock, so that the report
/// on stderr ("Aborted") and the exit status always belong to the same end.
static ENDING: AtomicBool = AtomicBool::new(false);
/// The thread that claimed the end, and the status and signal it ends the program with
/// (status in the high half), set with `ENDING`.
static ENDER: AtomicUsize = AtomicUsize::new(0);
static END_STATUS: AtomicU64 = AtomicU64::new(0);

/// Claims the end of the program for the calling thread, which will end it with `status` (and
/// signal `sig`, 0 for an exit). Returns false when another thread has already claimed it;
/// that thread's status stands, and the caller must not report anything.
pub fn claim_end(status: i32, sig: u64) -> bool {
    if ENDING.swap(true, Ordering::SeqCst) {
        return false;
    }
    END_STATUS.store((status as u32 as u64) << 32 | sig & 0xffff_ffff, Ordering::SeqCst);
    ENDER.store(crate::sched::current() as usize, Ordering::SeqCst);
    true
}

/// Whether a thread is ending the program (a fatal signal that comes now changes nothing: the
/// status is decided, as on Linux once exit_group has begun).
pub fn ending() -> bool {
    ENDING.load(Ordering::SeqCst)
}

/// A forked child is a process of its own: a thread of the parent that was ending the parent
/// when another forked (its end waiting asleep for the host meanwhile) ends only the parent.
/// Copied claimed, the child's own end would find it lost and wait for good.
pub fn after_fork() {
    ENDING.store(false, Ordering::SeqCst);
    ENDER.store(0, Ordering::SeqCst);
}

/// Ends the program: the VM shuts down with `status` (the program's exit status as the
/// shell would report it). Never returns. A thread that loses the race to end the program
/// waits here for the VM to stop.
pub fn exit_program(status: i32) -> ! {
    if claim_end(status, 0) {
        end_claimed(status)
    }
    lost_end()
}

/// Ends the program after the caller won `claim_end`.
pub fn end_claimed(status: i32) -> ! {
    end_claimed_by(status, 0)
}

/// Ends the program, killed by signal `sig` (the caller won `claim_end`): `hrt` exits with
/// 128 + sig as a shell reports it; a forked child's `hrt` dies of the signal.
pub fn end_by_signal(sig: i32) -> ! {
    end_claimed_by(128 + sig, sig as u64)
}

/// How many of the sites that kept SYSCALL `-v` lists at the end.
const KEPT_SITES_SHOWN: usize = 16;

fn end_claimed_by(status: i32, sig: u64) -> ! {
    // Before the VM stops: another process may wait for a robust mutex a thread holds.
    super::robust::process_exits();
    // Only when they are shown (`-v`): gathering them reads the whole site table (64 KiB) and
    // every CPU's counters, which in a forked child are pages shared copy-on-write with its
    // parent, each a shadow-paging fault of its own on a PVM host (16 for the site table).
    if !crate::console::quiet() {
        report_counts();
    }
    crate::console::flush_held();
    crate::arch::hypercall::shutdown_by(status, sig)
}

/// `-v`'s end-of-run lines: rewritten sites, forwarded calls, hypercalls, per-CPU counters,
/// steal time.
fn report_counts() {
    if super::rewrite::enabled() {
        let (rewritten, kept) = super::rewrite::counts();
        let registers = super::regsite::count();
        let functions = super::sysfunc::count();
        let variable = super::varsite::count();
        crate::kinfo!(
            "kernel: {rewritten} system-call site(s) rewritten into calls, {kept} kept SYSCALL ({registers} of the \
             rewritten with the number in a register, {functions} in the generic syscall function, {variable} with \
             a replayed window and any number)"
        );
        let kept_at = super::rewrite::kept_sites(KEPT_SITES_SHOWN);
        if !kept_at.is_empty() {
            let mut list = alloc::string::String::new();
            for site in &kept_at {
                let _ = core::fmt::Write::write_fmt(&mut list, format_args!(" {site:#x}"));
            }
            let more = if kept > kept_at.len() { " ..." } else { "" };
            crate::kinfo!("kernel: sites that kept SYSCALL:{list}{more}");
        }
        let (cpuid, cpuid_kept) = super::cpuid_sites::counts();
        crate::kinfo!("kernel: {cpuid} CPUID site(s) rewritten into calls, {cpuid_kept} kept CPUID");
        let (loops, yields) = super::spin_sites::counts();
        crate::kinfo!("kernel: {loops} spin-wait loop(s) rewritten to yield their vCPU, {yields} yield(s) from them");
        let mut list = alloc::string::String::new();
        for (start, end, rewritten) in super::spin_sites::examined_loops() {
            let how = if rewritten { "rewritten" } else { "left" };
            let _ = core::fmt::Write::write_fmt(&mut list, format_args!(" {start:#x}-{end:#x} {how},"));
        }
        if !list.is_empty() {
            crate::kinfo!("kernel: spin-wait loops examined:{}", list.trim_end_matches(','));
        }
    }
    let (kept, exact) = super::calls::memory::lowerings();
    if kept + exact > 0 {
        crate::kinfo!(
            "kernel: the break was lowered {} time(s): {kept} kept the pages above it present (a break that grows back again; --exact-brk makes none), {exact} made them not present",
            kept + exact
        );
    }
    if super::channel::active() {
        let (calls, slept, rung, evicted) = super::channel::counts();
        let halted = super::channel::halted_now();
        crate::kinfo!(
            "kernel: {calls} forwarded call(s) through the channel, {slept} of them waited asleep, {rung} doorbell(s) rung; {halted} vCPU(s) counted halted at exit"
        );
        if evicted > 0 {
            crate::kinfo!(
                "kernel: {evicted} call(s) blocked on the host gave their channel slot to a waiting call and were made again"
            );
        }
    }
    let mut exits = alloc::string::String::new();
    for (nr, n) in crate::arch::hypercall::made() {
        let _ = core::fmt::Write::write_fmt(&mut exits, format_args!(" {n} x {nr},"));
    }
    crate::kinfo!("kernel: hypercalls (VM exits) by number (abi::nr):{}", exits.trim_end_matches(','));
    if let Some((looks, spinning)) = crate::sched::spin_look::counts() {
        crate::kinfo!("kernel: {looks} look(s) at running program threads, {spinning} found spinning");
        crate::counters::print();
    }
    if crate::arch::features::has(crate::arch::features::STEAL_TIME) {
        let cpus = crate::cpu::count();
        let stolen_ms: u64 = (0..cpus).map(crate::arch::steal_time::stolen_ns).sum::<u64>() / 1_000_000;
        crate::kinfo!(
            "kernel: steal time: the host kept this VM's {cpus} vCPU(s) waiting for a host CPU {stolen_ms} ms in all"
        );
    }
}

/// Whether this process is a forked child (its parent is a program in another VM).
pub fn forked() -> bool {
    PARENT_PID.load(Ordering::Relaxed) != 0
}

/// Whether the program's death by a signal is reported by whoever waits for it, not here: a
/// forked child, or a child process of another HRT program (`--children hrt`).
pub fn reported_by_parent() -> bool {
    forked() || crate::bootinfo::get().flags & hrt_abi::flags::CHILD_PROCESS != 0
}

/// Parks a thread that lost the race to end the program until the VM stops. Off its CPU, not
/// spinning: the winner may need this CPU to finish. The winner itself, come here again from
/// inside its own end (an interrupt or fault while it waits for the host), ends the VM at once
/// with the status it claimed: parked, nothing would end it (a pool worker of Python's
/// multiprocessing at `--cpus 1`, SIGTERMed by `Pool.terminate` while it exited, spun here
/// with its only CPU for good and took no more signals).
pub fn lost_end() -> ! {
    if ENDER.load(Ordering::SeqCst) == crate::sched::current() as usize {
        let word = END_STATUS.load(Ordering::SeqCst);
        crate::arch::hypercall::shutdown_by((word >> 32) as u32 as i32, word & 0xffff_ffff)
    }
    crate::sched::park_for_good()
}
