//! fork(): the program's process copied into a new VM in a new host process (the monitor's
//! `nr::FORK`, monitor/src/vm/fork.rs), whose memory is a copy-on-write copy of this one's.
//!
//! Parent: the other CPUs are stopped at safe points (`sched::freeze`: no lock held, no kernel
//! structure half-changed), the forking thread's registers, FPU state and signal state go into
//! the fork record, and the monitor forks; it answers the child's host pid, which `fork`
//! returns (the child is one of the program's host children: `wait4`, `kill`, SIGCHLD).
//!
//! Child: the boot CPU enters the kernel afresh and redoes its hardware set-up (boot.rs,
//! `resume_forked`); the other CPUs stay dormant until a thread is first placed on one
//! (`cpu::ensure_online`), then do the same; the memory allocator, page tables and heap are the parent's, consistent
//! because of the freeze. Then `prepare_child` drops what belonged to other threads (their
//! records and kernel stacks are leaked, not freed: nothing refers to them any more), and the
//! forking thread alone goes on, with pid = tid = the child's host pid, returning 0 from fork
//! with all its registers, FS base, FPU state, signal mask and alternate stack as in the parent.
//! As on Linux, pending signals, interval and POSIX timers, alarms and CPU times are not
//! inherited; file descriptors are (the same host descriptors). Shared memory stays shared:
//! file and segment mappings are host mappings already, and anonymous `MAP_SHARED` memory is
//! made one before the host fork (`shared_files::share_anonymous`).

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::arch::syscall as user;
use crate::arch::traps::TrapFrame;
use crate::arch::{fpu, hypercall, irq};
use crate::linux::errno::{SysResult, EAGAIN, ENOSYS};
use crate::linux::process::{self, PROCESS};
use crate::linux::uaccess;
use crate::sched::thread::FpuArea;
use crate::sched::{self, Thread, ThreadOptions};

const CLONE_PARENT_SETTID: u64 = 0x10_0000;
const CLONE_CHILD_CLEARTID: u64 = 0x20_0000;
const CLONE_CHILD_SETTID: u64 = 0x100_0000;
/// The exit signal (SIGCHLD for fork; the host sends SIGCHLD whatever it is).
const CSIGNAL: u64 = 0xff;

/// How long the forking CPU waits for the others to reach a safe point.
const FREEZE_TIMEOUT_NS: u64 = 2_000_000_000;
/// How long the forking thread lets the others run when a preempted thread holds a lock.
const LOCK_RETRY_NS: u64 = 50_000;
/// How many times a freeze for a fork found a lock held and let the others go on (the
/// self-test `fork_waits_for_lock_holders` reads it).
pub static LOCK_WAITS: AtomicU64 = AtomicU64::new(0);

/// What the child's kernel needs to resume the forking thread. Kernel memory, copied with the
/// rest; one fork at a time fills it (the freeze serialises forks).
#[repr(C)]
struct ForkRecord {
    /// Written by the child's monitor: the child's pid (its host pid) and its random seed.
    /// Must stay first.
    answer: hrt_abi::ForkAnswer,
    fpu: FpuArea,
    frame: TrapFrame,
    fs_base: u64,
    sigmask: u64,
    affinity: [u64; 4],
    cpu: usize,
    robust_list: u64,
    rseq: crate::sched::thread::Rseq,
    /// The forking thread's seccomp chain (`linux::seccomp`), which the child's thread keeps.
    seccomp: usize,
    clear_child_tid: u64,
    set_child_tid: u64,
    parent_pid: u64,
    alt_stack: [u64; 3],
    /// The thread's OpenMP runtime state (`Thread::omp`).
    omp: u64,
    /// The spawn child that forks (its guest tid, its context for the monitor), 0 for the
    /// program itself: its own signal actions become the new process's.
    from_child: u64,
    /// clone3's CLONE_CLEAR_SIGHAND: the child's signal actions are cleared.
    clear_sighand: bool,
    /// The forking thread's name: the child's (its process's), as on Linux.
    name: [u8; 16],
    /// The forking thread's current timer slack (`Thread::timer_slack[0]`): the child's
    /// current and default one.
    timer_slack: u64,
}

struct RecordCell(UnsafeCell<ForkRecord>);

// SAFETY: only the forking CPU writes it, while every other CPU is frozen; the child's kernel
// reads its own copy before any other thread runs.
unsafe impl Sync for RecordCell {}

static RECORD: RecordCell = RecordCell(UnsafeCell::new(ForkRecord {
    answer: hrt_abi::ForkAnswer { child_pid: 0, seed: [0; hrt_abi::SEED_LEN], ready: 0 },
    fpu: FpuArea([0; crate::arch::fpu::AREA_MAX]),
    frame: TrapFrame::ZERO,
    fs_base: 0,
    sigmask: 0,
    affinity: [0; 4],
    cpu: 0,
    robust_list: 0,
    rseq: crate::sched::thread::Rseq { area: 0, len: 0, sig: 0, cpu: 0, seen: 0 },
    seccomp: 0,
    clear_child_tid: 0,
    set_child_tid: 0,
    parent_pid: 0,
    alt_stack: [0; 3],
    timer_slack: 0,
    omp: 0,
    from_child: 0,
    clear_sighand: false,
    name: [0; 16],
}));

static REPORTED: AtomicBool = AtomicBool::new(false);
static EXIT_SIGNAL_REPORTED: AtomicBool = AtomicBool::new(false);
const SIGCHLD: u64 = 17;

fn current() -> &'static mut Thread {
    // SAFETY: the current thread's record is alive while it runs, and only it touches these
    // fields.
    unsafe { &mut *sched::current() }
}

/// fork(), or clone without CLONE_VM: `flags` may name only the exit signal and the tid
/// addresses (as glibc's `fork` passes them); anything else fails loudly with ENOSYS. A spawn
/// child (vfork) may fork before its exec: the new process is a copy of the child (the memory
/// it shares with the program, its descriptors, directory and signal actions).
pub fn fork_process(frame: &TrapFrame, flags: u64, ptid: u64, ctid: u64) -> SysResult {
    use super::procs::CLONE_PIDFD;
    // CLONE_PTRACE, CLONE_UNTRACED (no tracer here) and CLONE_IO (one I/O context per host
    // process) change nothing the program can see.
    const NO_EFFECT: u64 = 0x2000 | 0x0080_0000 | 0x8000_0000;
    let allowed = CSIGNAL
        | CLONE_PARENT_SETTID
        | CLONE_CHILD_SETTID
        | CLONE_CHILD_CLEARTID
        | CLONE_PIDFD
        | NO_EFFECT
        | super::procs::CLONE_CLEAR_SIGHAND;
    if flags & CLONE_PIDFD != 0 && flags & CLONE_PARENT_SETTID != 0 {
        // Both would be written at the parent's `ptid`.
        return Err(linux_raw_sys::errno::EINVAL);
    }
    if super::thread::namespaces_forbidden(flags) {
        return Err(linux_raw_sys::errno::EPERM);
    }
    if flags & !allowed != 0 {
        if !REPORTED.swap(true, Ordering::Relaxed) {
            kprintln!(
                "hrt: clone with flags {flags:#x}: a process that shares more than fork shares (CLONE_FILES, \
                 CLONE_FS, CLONE_SIGHAND, ... without CLONE_VM) is not supported: returning ENOSYS"
            );
        }
        return Err(ENOSYS);
    }
    let exit_signal = flags & CSIGNAL;
    if exit_signal != SIGCHLD && !EXIT_SIGNAL_REPORTED.swap(true, Ordering::Relaxed) {
        // The child is a host process that `hrt` forks, whose end the host reports with SIGCHLD
        // to every wait; Linux sends the clone's exit signal and shows such a child only to
        // __WCLONE and __WALL waits.
        kprintln!(
            "hrt: fork with exit signal {exit_signal} (not SIGCHLD): not supported, the child's end is \
             reported with SIGCHLD and to plain waits (reported once)"
        );
    }
    let from_child = super::procs::child_ctx().unwrap_or(0) as u64;
    sched::note_forked();
    // Read before the freeze, which must find no lock held.
    let name = crate::linux::thread_names::own();
    // The heap's top, for the monitor's advice (`busy_pages`).
    let brk = {
        let b = crate::linux::process::PROCESS.brk.lock();
        if b.cur > b.start {
            b.cur - 1
        } else {
            0
        }
    };
    crate::linux::rewrite::prepare_for_fork();
    let was = freeze_without_locks_held()?;
    let thaw = || {
        sched::freeze::thaw();
        irq::restore(was);
    };
    if crate::linux::exec::underway() {
        // Another thread's exec ends this one (on its way back): no child, as on Linux, where
        // the pending SIGKILL fails the fork. (Checked frozen: the exec cannot start meanwhile.)
        thaw();
        return Err(EAGAIN);
    }
    // Anonymous shared memory becomes host shared memory, which the host fork shares with the
    // child (frozen: no other thread writes it while its bytes are copied).
    if let Err(e) = crate::linux::shared_files::share_anonymous() {
        thaw();
        return Err(e);
    }
    let t = current();
    let rec = RECORD.0.get();
    // SAFETY: every other CPU is frozen and this thread is the only writer (see RecordCell);
    // the FPU registers hold this thread's state (it runs), saved with interrupts off.
    unsafe {
        (*rec).answer = hrt_abi::ForkAnswer { child_pid: 0, seed: [0; hrt_abi::SEED_LEN], ready: 0 };
        (*rec).frame = *frame;
        (*rec).frame.rax = 0;
        (*rec).fs_base = t.fs_base;
        (*rec).sigmask = t.sigmask;
        (*rec).timer_slack = t.timer_slack[0];
        (*rec).affinity = t.affinity();
        (*rec).name = name;
        (*rec).cpu = t.cpu;
        // A forked child starts without a robust list, and without a tid address unless
        // CLONE_CHILD_CLEARTID gives one, as Linux's copy_process leaves them (glibc registers
        // its list again in the child; musl at its next robust lock). The child's exit cleared
        // the parent's tid word in its copy of memory.
        (*rec).robust_list = 0;
        (*rec).rseq = crate::linux::rseq::forked(&t.rseq);
        (*rec).seccomp = t.seccomp.load(Ordering::Relaxed);
        (*rec).clear_child_tid = if flags & CLONE_CHILD_CLEARTID != 0 { ctid } else { 0 };
        (*rec).set_child_tid = if flags & CLONE_CHILD_SETTID != 0 { ctid } else { 0 };
        (*rec).parent_pid = process::pid() as u64;
        (*rec).alt_stack = crate::linux::signal::state::alt_stack(t.tid);
        (*rec).omp = t.omp as u64;
        (*rec).from_child = from_child;
        (*rec).clear_sighand = flags & super::procs::CLONE_CLEAR_SIGHAND != 0;
        fpu::save((*rec).fpu.0.as_mut_ptr());
    }
    let record = crate::mem::virt_to_phys(rec as *const u8);
    // The child's CPUs find their idle-thread records made (natively, here) instead of
    // allocating them in ring 0, which PVM emulates: ~150 instructions each.
    sched::prepare_cpus(crate::bootinfo::get().num_cpus as usize);
    // The child's memory is a copy of this one's: lines held now would print twice.
    crate::console::flush_held();
    // The child's copy names no leader until its own starts (`resume_child`): its parent reads
    // it as being set up, runnable, not as whatever this process's leader is doing.
    let leader = crate::linux::channel::leader();
    crate::linux::channel::publish_leader(None);
    let [a, b, c, d] = busy_pages(&[frame.rip, brk]);
    let r = hypercall::call(hrt_abi::nr::FORK, &[record, crate::time::ticks(), from_child, a, b, c, d]);
    crate::linux::channel::restore_leader(leader);
    sched::unprepare_cpus();
    thaw();
    if r < 0 {
        return Err((-r) as u32);
    }
    if flags & CLONE_PARENT_SETTID != 0 {
        let _ = uaccess::write::<u32>(ptid, r as u32);
    }
    if flags & CLONE_PIDFD != 0 {
        let _ = uaccess::write::<i32>(ptid, super::procs::pidfd_of(r as u64, true));
    }
    Ok(r as u64)
}

/// The 2 MiB pages (identity-mapped program memory: guest-physical addresses) that both
/// processes are about to use after the fork, for `nr::FORK`'s advice: the page of the code
/// the fork returns to (glibc's, for a dynamic program) and the one at the top of the break
/// (the heap, which for most programs follows the executable's code and data), each once; 0
/// for none. The monitor copies them for the child rather than sharing them copy-on-write
/// (monitor/src/vm/fork_private.rs): under shadow paging every first touch of shared memory
/// after a fork costs each process a fault. bash's `$(...)` 11-12 -> 8-9 ms. The stack's and
/// the TLS's pages were tried too: a few faults each, not worth their copies.
fn busy_pages(addresses: &[u64]) -> [u64; 4] {
    let mut pages = [0u64; 4];
    let mut n = 0;
    for page in addresses.iter().filter(|&&a| a != 0).map(|&a| a & !(crate::arch::paging::LARGE_PAGE_SIZE - 1)) {
        if n < pages.len() && !pages[..n].contains(&page) {
            pages[n] = page;
            n += 1;
        }
    }
    pages
}

/// Stops every other CPU at a safe point (`sched::freeze`) at a moment when no thread holds a
/// plain spinlock. A CPU at a safe point holds none, but a thread preempted inside a critical
/// section (plain spinlocks leave interrupts on) is on no CPU and still holds its lock: copied
/// held, it stays held in the child, where that thread never runs, and the child's first
/// taker spins for ever (a fork_sleepers child on a loaded host, spinning on the table of
/// function extents that a parent's thread was preempted holding). While one is held, the
/// others go on for a moment, which lets its holder finish, and the freeze is tried again;
/// EAGAIN after 2 s.
///
/// On success the others are frozen and this CPU's interrupts are masked; the caller must
/// `sched::freeze::thaw` them, then restore the interrupt state returned. Masked before the
/// look for held locks, so that nothing switches this thread away from then on: another
/// thread of this CPU that ran meanwhile could take a lock the look found free. So a TLB shootdown's request flag,
/// taken by a thread that preempted the forking one, was copied held into the child, whose
/// first `mprotect` spun for good (nix's test_unistd 3 runs in 25; a C program forking while
/// two threads change protections, 10 runs in 10).
pub fn freeze_without_locks_held() -> Result<bool, u32> {
    let start = crate::time::ticks();
    let timeout = crate::time::ns_to_ticks(FREEZE_TIMEOUT_NS);
    loop {
        let spent = crate::time::ticks().wrapping_sub(start);
        let left = crate::time::ticks_to_ns(timeout.saturating_sub(spent));
        // Not masked yet: another CPU may be spinning on a lock that a thread preempted here
        // holds, and reaches a safe point only once that thread ran on.
        if !sched::freeze::freeze_others(left, sched::freeze::Halted::MustPark) {
            kprintln!("hrt: fork: the other CPUs did not reach a safe point within 2 s: returning EAGAIN");
            return Err(EAGAIN);
        }
        let was = irq::save_and_disable();
        if crate::sync::spinlock::held_anywhere() == 0 {
            return Ok(was);
        }
        sched::freeze::thaw();
        irq::restore(was);
        LOCK_WAITS.fetch_add(1, Ordering::Relaxed);
        if crate::time::ticks().wrapping_sub(start) >= timeout {
            kprintln!("hrt: fork: a preempted thread held a kernel lock for 2 s: returning EAGAIN");
            return Err(EAGAIN);
        }
        // Long enough for the holder's CPU (this one, or another just thawed) to run it on.
        sched::sleep_ns(LOCK_RETRY_NS);
    }
}

/// The child's copy of the fork record at guest-physical `record`.
fn record_at(record: u64) -> &'static ForkRecord {
    // SAFETY: the monitor passes the record's address (checked when the parent asked); this
    // is the child's own copy, read before any thread runs.
    unsafe { &*(crate::mem::phys_to_virt(record) as *const ForkRecord) }
}

/// A forked child, on the boot CPU before the other CPUs start: forgets what the parent's
/// other threads were doing. Every queue a wake-up could come from (forwarded calls answered
/// in the copied channel, futexes, signals, timers, children) must be empty before another CPU
/// reaches its idle loop, which reaps answered calls: it once woke a copy of a parent thread
/// blocked in `wait4`, which then ran in the child (and ended it with status 0).
pub fn prepare_child(record: u64) {
    let rec = record_at(record);
    let pid = rec.answer.child_pid as u32;
    PROCESS.pid.store(pid, Ordering::SeqCst);
    PROCESS.live_threads.store(1, Ordering::SeqCst);
    if *PROCESS.name.lock() != rec.name {
        // Forked by a thread with a name of its own: that is the child's (`hrt`'s child process
        // took the parent's process name on the host).
        *PROCESS.name.lock() = rec.name;
        let word = |i: usize| u64::from_le_bytes(rec.name[i..i + 8].try_into().unwrap_or([0; 8]));
        crate::arch::hypercall::call(hrt_abi::nr::HOST_PRCTL, &[15, word(0), word(8)]);
    }
    crate::random::seed(&rec.answer.seed);
    process::set_parent_pid(rec.parent_pid as u32);
    process::after_fork();
    crate::linux::signal::state::after_fork(pid, rec.alt_stack);
    crate::linux::signal::timers::after_fork();
    crate::linux::futex::after_fork();
    crate::linux::robust::forked();
    crate::linux::exec::after_fork();
    crate::linux::cputime::after_fork();
    super::max_rss::after_fork();
    super::children_time::after_fork();
    super::procs::after_fork(rec.from_child as u32, rec.clear_sighand);
    super::prctl::after_fork(rec.timer_slack);
    crate::linux::channel::after_fork(rec.answer.ready & hrt_abi::fork_ready::CHANNEL != 0);
    crate::linux::usermap::after_fork(rec.answer.ready & hrt_abi::fork_ready::USER_MAP != 0);
    crate::linux::signalfd::after_fork();
    crate::linux::shared_files::after_fork();
    crate::linux::past_eof::after_fork();
    // Before any of the program's threads runs here: MADV_WIPEONFORK and MADV_DONTFORK.
    crate::linux::fork_advice::after_fork();
    // Locks are not inherited (nor MCL_FUTURE).
    crate::linux::locked::after_fork();
    // Nor AIO contexts.
    crate::linux::calls::aio::after_fork();
    // Memory the parent kept from use while its calls were in flight is free here.
    crate::linux::usermem::release_quarantine_after_fork();
}

/// A forked child, on the boot CPU once every CPU is up (`prepare_child` ran before): starts
/// the forking thread again where it called fork, with 0 as the result; it is the only one of
/// the parent's threads that exists here.
pub fn resume_child(record: u64) {
    let rec = record_at(record);
    let pid = rec.answer.child_pid as u32;
    let frame = rec.frame;
    // This CPU (the boot CPU), where its mask allows: the others are dormant, and placing the
    // thread on one would start them all (`cpu::ensure_online`).
    let here = crate::cpu::id();
    let allowed = rec.affinity == [0; 4] || rec.affinity[here / 64] & (1 << (here % 64)) != 0;
    let cpu = if allowed { here } else { rec.cpu };
    let spawned = sched::spawn_with(
        ThreadOptions::named("main").on_cpu(cpu).user(),
        |t| {
            t.tid = pid;
            t.fs_base = rec.fs_base;
            t.sigmask = rec.sigmask;
            t.timer_slack = [rec.timer_slack; 2];
            t.set_affinity(rec.affinity);
            t.robust_list = rec.robust_list;
            t.rseq = rec.rseq;
            crate::linux::seccomp::adopt_after_fork(t, rec.seccomp);
            t.clear_child_tid = rec.clear_child_tid;
            t.fpu.0.copy_from_slice(&rec.fpu.0);
            t.fpu_saved = true;
            t.omp = crate::linux::overrides::omp_after_fork(rec.omp as *mut u8);
            super::signal::thread_started(t);
            crate::linux::channel::publish_leader(Some(t));
            if rec.set_child_tid != 0 {
                let _ = uaccess::write::<u32>(rec.set_child_tid, pid);
            }
        },
        move || {
            let top = sched::thread::stack_top(current());
            // SAFETY: our own kernel stack; the frame is the forking thread's, in the child's
            // copy of its memory.
            unsafe { user::return_to_user(&frame, top) }
        },
    );
    match spawned {
        Ok(h) => h.detach(),
        Err(_) => {
            kprintln!("hrt: fork: the child cannot resume the forking thread (no memory)");
            hypercall::shutdown(1);
        }
    }
    // Its thread has the forking thread's mask now: signals sent to the child since the host
    // fork act on it (`channel::after_fork`).
    crate::linux::channel::release_host_signals();
}
