//! Child processes that run host programs (`--children host`, the McKernel/Multiverse
//! delegation). The "spawn" pattern is supported: `vfork()`, or `clone(CLONE_VM|CLONE_VFORK)`
//! as glibc's `posix_spawn` (and so `system()` and `popen()`) makes it, followed by `execve`.
//!
//! The child runs in the guest as a thread of its own that shares the program's memory (as a
//! vfork child does) while its parent waits. Its forwarded calls carry its id (see
//! `hrt_abi::process`), so the monitor applies its `dup2`, `close`, `fcntl`, `chdir`, `setpgid`
//! and `setsid` to the child's own copy of the descriptor table and state; its `rt_sigaction`s
//! change a copy of the program's actions. At `execve` the monitor starts the host program with
//! the child's descriptors (CLOEXEC ones closed), ignored signals, signal mask, working
//! directory and process group; the child's guest thread ends and the parent's `clone` returns
//! the host pid. A child that ends (`_exit`) before exec leaves a zombie here, with its guest
//! tid as pid, that `wait4`/`waitid` report. A failing exec returns its error to the child.
//!
//! `fork()` (clone without CLONE_VM) makes a child that goes on running the program: a new VM
//! over a copy of the program's memory (fork.rs). Waiting for, signalling and grouping host
//! children (forked ones included) is forwarded to the monitor, which performs it on the host
//! (the children are the monitor's own).

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

use hrt_abi::process as op;

use crate::arch::syscall as user;
use crate::arch::traps::TrapFrame;
use crate::linux::errno::{SysResult, ECHILD, EINTR, EINVAL, ENOSYS, ESRCH};
use crate::linux::process::{self, PROCESS};
use crate::linux::signal::{self as sig, SigInfo, SIG_IGN};
use crate::linux::syscall::forward;
use crate::linux::uaccess;
use crate::sched::{self, Thread, ThreadOptions};
use crate::sync::IrqSpinLock;

const CLONE_VM: u64 = 0x100;
const CLONE_VFORK: u64 = 0x4000;
const CLONE_SETTLS: u64 = 0x8_0000;
/// Flags a spawn child may not have: it is a process of its own.
const CLONE_SHARING: u64 = 0x200 | 0x400 | 0x800 | 0x1_0000; // FS, FILES, SIGHAND, THREAD
pub const CLONE_PIDFD: u64 = 0x1000;
const CLONE_PARENT_SETTID: u64 = 0x10_0000;
use crate::linux::signal::SIGCHLD;
const CLD_EXITED: i32 = 1;
const P_ALL: u64 = 0;
const P_PID: u64 = 1;
const P_PIDFD: u64 = 3;
const WNOHANG: u64 = 1;
const WNOWAIT: u64 = 0x0100_0000;
const WEXITED: u64 = 4;

/// A spawn child before its exec.
struct Child {
    /// Its own copy of the program's signal actions (a vfork child has its own table).
    sigactions: Box<[[u64; 4]; 65]>,
}

/// The spawn children alive, by guest tid (their context id for the monitor).
static CHILDREN: IrqSpinLock<BTreeMap<u32, Child>> = IrqSpinLock::new(BTreeMap::new());
/// How many there are: while 0, forwarded calls need no look-up.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
/// Children that ended before exec: (guest tid as their pid, wait status).
static ZOMBIES: IrqSpinLock<Vec<(u32, u32)>> = IrqSpinLock::new(Vec::new());
/// Those of `ZOMBIES` the program got a pidfd of: the monitor made a host stand-in for each
/// (`process::STAND_IN_PIDFD`), reaped when the zombie is taken.
static STAND_INS: IrqSpinLock<Vec<u32>> = IrqSpinLock::new(Vec::new());

/// How a spawn child's guest thread ended (its exit value, which the parent's join reads).
const EXECED: u64 = 1 << 62;
const EXITED: u64 = 1 << 61;
const FAILED: u64 = 1 << 60;

fn current() -> &'static mut Thread {
    // SAFETY: the current thread's record is alive while it runs, and only it touches these
    // fields.
    unsafe { &mut *sched::current() }
}

/// Whether thread `tid` is a spawn child before its exec.
pub fn is_child(tid: u32) -> bool {
    ACTIVE.load(Ordering::SeqCst) != 0 && CHILDREN.lock().contains_key(&tid)
}

/// The calling thread's context id if it is a spawn child before exec.
pub fn child_ctx() -> Option<u32> {
    if ACTIVE.load(Ordering::SeqCst) == 0 {
        return None;
    }
    let tid = process::current_tid();
    CHILDREN.lock().contains_key(&tid).then_some(tid)
}

/// Forwarded call number `nr` tagged with the calling thread's child context, if any.
pub fn tagged(nr: u64) -> u64 {
    match child_ctx() {
        Some(ctx) => nr | (ctx as u64) << op::CONTEXT_SHIFT,
        None => nr,
    }
}

/// A process call to the monitor, as a system-call result.
pub fn call(nr: u64, a: [u64; 6]) -> SysResult {
    let r = if super::children_time::may_reap(nr) {
        super::children_time::around_reap(|| forward(nr, a))
    } else {
        forward(nr, a)
    };
    if r < 0 {
        Err((-r) as u32)
    } else {
        Ok(r as u64)
    }
}

/// The (user, system) time of the program's ended and waited-for host children, in
/// nanoseconds (0 where the monitor cannot tell); see `children_time`.
pub fn children_time_ns() -> (u64, u64) {
    super::children_time::ns()
}

/// vfork(): clone(CLONE_VM | CLONE_VFORK | SIGCHLD) on the caller's stack.
pub fn vfork(frame: &mut TrapFrame, _: [u64; 6]) -> SysResult {
    spawn_child(frame, CLONE_VM | CLONE_VFORK | SIGCHLD, 0, 0).map(|(pid, _)| pid)
}

/// fork(): a new VM over a copy of the program's memory (fork.rs).
pub fn fork(frame: &mut TrapFrame, _: [u64; 6]) -> SysResult {
    super::fork::fork_process(frame, SIGCHLD, 0, 0)
}

/// clone without CLONE_THREAD: a process. Only the spawn pattern is supported.
pub fn clone_process(frame: &mut TrapFrame, flags: u64, newsp: u64, [ptid, ctid, tls]: [u64; 3]) -> SysResult {
    if flags & CLONE_VM == 0 {
        let mut from = *frame;
        if newsp != 0 {
            from.rsp = newsp;
        }
        return super::fork::fork_process(&from, flags, ptid, ctid);
    }
    if flags & CLONE_PIDFD != 0 && flags & CLONE_PARENT_SETTID != 0 {
        // Both would be written at the parent's `ptid`.
        return Err(EINVAL);
    }
    if flags & CLONE_VFORK == 0 || flags & CLONE_SHARING != 0 {
        kprintln!("hrt: clone with flags {flags:#x}: only threads and vfork-style children (CLONE_VM|CLONE_VFORK) are supported: returning ENOSYS");
        return Err(ENOSYS);
    }
    let (pid, execed) = spawn_child(frame, flags, newsp, tls)?;
    if flags & CLONE_PIDFD != 0 {
        let fd = if execed { pidfd_of(pid, true) } else { stand_in_pidfd(pid as u32) };
        let _ = uaccess::write::<i32>(ptid, fd);
    }
    Ok(pid)
}

/// CLONE_PIDFD of a spawn child that ended before its exec (a zombie of the guest's own): a
/// pidfd of a host process the monitor made to have ended as the child did, whose waits
/// answer the child's pid. A child already reaped (SIGCHLD ignored) has none: -1, said once.
fn stand_in_pidfd(pid: u32) -> i32 {
    let status = ZOMBIES.lock().iter().find(|&&(p, _)| p == pid).map(|&(_, s)| s);
    let Some(status) = status else { return pidfd_of(pid as u64, false) };
    match call(op::STAND_IN_PIDFD, [pid as u64, status as u64, 0, 0, 0, 0]) {
        Ok(fd) => {
            STAND_INS.lock().push(pid);
            fd as i32
        }
        Err(e) => {
            kprintln!(
                "hrt: clone CLONE_PIDFD: no pidfd for child {pid}, which ended before its exec (error {e}): storing -1"
            );
            -1
        }
    }
}

/// Drops child `pid` from `STAND_INS`; whether it was there.
fn forget_stand_in(pid: u32) -> bool {
    let mut s = STAND_INS.lock();
    let i = s.iter().position(|&p| p == pid);
    i.map(|i| s.swap_remove(i)).is_some()
}

/// Zombie `pid` was taken: its stand-in, if it has one, is reaped.
fn reap_stand_in(pid: u32) {
    if forget_stand_in(pid) {
        let _ = call(op::REAP_STAND_IN, [pid as u64, 0, 0, 0, 0, 0]);
    }
}

/// CLONE_PIDFD: a pidfd (close-on-exec) of child `pid`, which the parent's clone stores. A
/// host process has one (the forwarded pidfd_open); a spawn child that ended before its exec
/// (`host` false: a zombie of the guest's own) or a host child already reaped (SIGCHLD
/// ignored) has none: -1, said once (Linux gives one that reports the end).
pub fn pidfd_of(pid: u64, host: bool) -> i32 {
    let fd = if host { forward(linux_raw_sys::general::__NR_pidfd_open as u64, [pid, 0, 0, 0, 0, 0]) } else { -1 };
    if fd < 0 {
        static SAID: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
        if !SAID.swap(true, Ordering::Relaxed) {
            kprintln!("hrt: clone CLONE_PIDFD: child {pid} ended before its exec or was reaped: storing -1 instead of a pidfd (reported once)");
        }
        return -1;
    }
    fd as i32
}

/// Runs a spawn child until it execs or exits, then returns its pid to the parent, and whether
/// it exec'd (its pid is then a host process's).
fn spawn_child(frame: &mut TrapFrame, flags: u64, newsp: u64, tls: u64) -> Result<(u64, bool), u32> {
    if child_ctx().is_some() {
        kprintln!("hrt: a vfork child cannot create a child of its own before its exec: returning ENOSYS");
        return Err(ENOSYS);
    }
    // Its exec makes a host process (or another VM) that needs a host CPU while this one waits.
    sched::note_forked();
    let exit_signal = flags & 0xff;
    let mut child = *frame;
    child.rax = 0;
    if newsp != 0 {
        child.rsp = newsp;
    }
    let parent = current();
    let fs_base = if flags & CLONE_SETTLS != 0 {
        if tls >= uaccess::USER_END {
            return Err(linux_raw_sys::errno::EPERM);
        }
        tls
    } else {
        parent.fs_base
    };
    let sigmask = parent.sigmask;
    // A vfork child keeps its parent's alternate signal stack (Linux clears it only for
    // CLONE_VM without CLONE_VFORK: a thread).
    let alt_stack = sig::state::alt_stack(parent.tid);
    let mut actions = Box::new(*PROCESS.sigactions.lock());
    if flags & CLONE_CLEAR_SIGHAND != 0 {
        clear_handlers(&mut actions);
    }
    let options = ThreadOptions::named("vfork").user();
    let mut tid = 0u32;
    let spawned = sched::spawn_with(
        options,
        |t| {
            tid = super::thread::start_program_thread(t, fs_base, sigmask, parent.affinity());
            sig::state::set_alt_stack(tid, alt_stack);
            CHILDREN.lock().insert(t.tid, Child { sigactions: actions });
            ACTIVE.fetch_add(1, Ordering::SeqCst);
        },
        move || {
            let me = process::current_tid();
            let r = forward(op::CHILD_BEGIN, [me as u64, 0, 0, 0, 0, 0]);
            if r < 0 {
                end_child(FAILED | (-r) as u64);
            }
            let top = sched::thread::stack_top(current());
            // SAFETY: our own kernel stack; the frame is the parent's, with the child's stack.
            unsafe { user::return_to_user(&child, top) }
        },
    );
    let Ok(handle) = spawned else { return Err(linux_raw_sys::errno::EAGAIN) };
    let v = handle.join();
    if v & EXECED != 0 {
        return Ok((v & 0xffff_ffff, true));
    }
    if v & FAILED != 0 {
        return Err((v & 0xffff) as u32);
    }
    // Ended before exec: a zombie with its guest tid as pid, and SIGCHLD as Linux sends it.
    let status = (v & 0xffff) as u32;
    if exit_signal != 17 || !sig::host_mirror::children_reaped_at_exit() {
        // SIGCHLD ignored or SA_NOCLDWAIT: Linux reaps such a child at once.
        ZOMBIES.lock().push((tid, status));
    }
    // A legacy clone's exit signal may be any byte; Linux sends only a valid signal.
    if (1..=64).contains(&exit_signal) {
        let _ = sig::send_process(child_exited(exit_signal as i32, tid, status));
        sig::state::kick_all();
    }
    Ok((tid as u64, false))
}

/// Ends the calling spawn child's guest thread; its parent's join reads `value`.
fn end_child(value: u64) -> ! {
    crate::linux::robust::thread_exits();
    let tid = process::current_tid();
    if CHILDREN.lock().remove(&tid).is_some() {
        ACTIVE.fetch_sub(1, Ordering::SeqCst);
    }
    super::signal::thread_exited(tid);
    sched::exit(value)
}

/// exit/exit_group in a spawn child before exec: only the child ends, with `code`.
pub fn exit_if_child(code: u64) {
    if let Some(ctx) = child_ctx() {
        crate::linux::syscall::trace_final(linux_raw_sys::general::__NR_exit_group as u64, &[code], 0, 'L');
        let _ = forward(op::CHILD_END, [ctx as u64, 0, 0, 0, 0, 0]);
        end_child(EXITED | (code & 0xff) << 8);
    }
}

/// A spawn child before its exec killed by `sig` (a fault of its own, a signal sent to it):
/// only it ends, as the process it is on Linux; its parent's wait sees the signal. Returns if
/// the caller is not a spawn child.
pub fn end_if_child_killed(sig: i32) {
    if let Some(ctx) = child_ctx() {
        let _ = forward(op::CHILD_END, [ctx as u64, 0, 0, 0, 0, 0]);
        end_child(EXITED | (sig as u64 & 0x7f));
    }
}

/// The child's ignored signals (bit `sig - 1`), which stay ignored across exec.
fn ignored(ctx: u32) -> u64 {
    let children = CHILDREN.lock();
    let Some(c) = children.get(&ctx) else { return 0 };
    (1..65).filter(|&s| c.sigactions[s][0] == SIG_IGN).fold(0, |m, s| m | 1 << (s - 1))
}

/// rt_sigaction in a spawn child: its own copy of the actions. None for the program itself.
pub fn child_sigaction(signo: usize, new: Option<[u64; 4]>, oact: u64) -> Option<SysResult> {
    let ctx = child_ctx()?;
    let mut children = CHILDREN.lock();
    let c = children.get_mut(&ctx)?;
    let old = c.sigactions[signo];
    if let Some(new) = new {
        c.sigactions[signo] = new;
    }
    drop(children);
    if oact != 0 {
        if let Err(e) = uaccess::write::<[u64; 4]>(oact, old) {
            return Some(Err(e));
        }
    }
    Some(Ok(0))
}

pub fn execve(frame: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    exec(frame, linux_raw_sys::general::__NR_execve, [libc_at_fdcwd(), a[0], a[1], a[2], 0])
}

pub fn execveat(frame: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    exec(frame, linux_raw_sys::general::__NR_execveat, [a[0], a[1], a[2], a[3], a[4]])
}

fn libc_at_fdcwd() -> u64 {
    (-100i32) as u32 as u64
}

fn exec(frame: &mut TrapFrame, nr: u32, [dirfd, path, argv, envp, flags]: [u64; 5]) -> SysResult {
    let Some(ctx) = child_ctx() else {
        // The program itself: a forked child's exec may start a host program in its place;
        // otherwise its image is replaced (linux/exec.rs).
        let args = [dirfd, path, argv, envp, flags];
        if let Some(r) = crate::linux::exec::exec_on_host(nr, args) {
            return r;
        }
        return crate::linux::exec::exec_self(frame, args);
    };
    let mask = current().sigmask;
    // With the CPUs the program allows this thread: the host program keeps them.
    let [a0, a1, a2] = super::thread::exec_affinity();
    call(tagged(op::SIGNALS), [ignored(ctx), mask, a0, a1, a2, 0])?;
    // The host program gets the thread's seccomp filters (`linux::seccomp`).
    let filters = crate::linux::seccomp::host_chain();
    let pid = call(tagged(op::EXEC), [dirfd, path, argv, envp, flags, filters])?;
    // The line says what the program sees: exec returns nothing; the host pid is the parent's.
    let shown: &[u64] =
        if nr == linux_raw_sys::general::__NR_execve { &[path, argv, envp] } else { &[dirfd, path, argv, envp, flags] };
    crate::linux::syscall::trace_final(nr as u64, shown, pid as i64, 'F');
    end_child(EXECED | pid)
}

/// Takes (or, with WNOWAIT, looks at) a zombie that `pid` (wait4's selector) names.
fn take_zombie(pid: i64, keep: bool) -> Option<(u32, u32)> {
    let mut z = ZOMBIES.lock();
    let i = z.iter().position(|&(p, _)| pid == -1 || pid == 0 || pid == p as i64)?;
    if keep {
        return Some(z[i]);
    }
    let taken = z.remove(i);
    drop(z);
    reap_stand_in(taken.0);
    Some(taken)
}

/// wait4(pid, status, options, rusage): a child that ended before exec, else the host's
/// answer for the program's host children (rusage is the host's).
pub fn wait4(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (pid, status, rusage) = (a[0] as i32 as i64, a[1], a[3]);
    if a[2] & !(WNOHANG | 2 | 8 | 0x4000_0000 | 0x8000_0000 | 0x2000_0000) != 0 {
        return Err(EINVAL);
    }
    // A process group of -INT_MIN cannot exist (Linux refuses to negate it).
    if pid == i32::MIN as i64 {
        return Err(ESRCH);
    }
    if let Some((p, ws)) = take_zombie(pid, false) {
        if status != 0 {
            uaccess::write::<u32>(status, ws)?;
        }
        if rusage != 0 {
            uaccess::write::<[u64; 18]>(rusage, [0; 18])?;
        }
        return Ok(p as u64);
    }
    let r = wait_after_signals(|| call(op::WAIT4, a))?;
    let r = settle_interrupted(r, a[2], || match call(op::WAIT4, [a[0], a[1], a[2] | WNOHANG, a[3], a[4], a[5]]) {
        Ok(p) if p > 0 => Some(Ok(p)),
        Err(ECHILD) => Some(Err(ECHILD)),
        _ => None,
    });
    if let Ok(p) = r {
        // Without WUNTRACED and WCONTINUED only an ended child is reported.
        let ws = if a[1] != 0 { uaccess::read::<u32>(a[1]).ok() } else { None };
        let ended = match ws {
            Some(ws) => ws & 0xff != 0x7f && ws != 0xffff,
            None => a[2] & (2 | 8) == 0,
        };
        if ended {
            note_ended(p as u32);
        }
    }
    sigchld_before_return();
    r
}

/// The last ended children the program's waits reported (a ring): a SIGCHLD for one of them
/// that comes after the wait is late (`late_sigchld_only`).
static REPORTED: IrqSpinLock<([u32; 16], usize)> = IrqSpinLock::new(([0; 16], 0));

fn note_ended(pid: u32) {
    if pid == 0 {
        return;
    }
    let mut r = REPORTED.lock();
    let at = r.1 % r.0.len();
    r.0[at] = pid;
    r.1 = r.1.wrapping_add(1);
}

/// Whether the one signal that interrupted this thread's wait is a late SIGCHLD: one for the
/// end of a child an earlier wait already reported. On Linux a child's SIGCHLD is pending before the
/// child can be waited for, so its handler ran before that wait returned and it cannot
/// interrupt a later wait. Here it reaches the program when a thread of `hrt` passes it on,
/// which on a loaded host can be after the wait (the thread that took it on the host was
/// preempted before it passed it on, see `sigchld_before_return`): then its handler runs
/// and the wait starts again, as if the signal had come before it, instead of failing with
/// EINTR (kill_group's grandchild: waitpid of a child that had yet to end).
fn late_sigchld_only() -> bool {
    let Some(info) = crate::linux::signal::state::only_deliverable_here(SIGCHLD) else { return false };
    let child = info.w16 as u32;
    (1..=3).contains(&info.code) && child != 0 && REPORTED.lock().0.contains(&child)
}

/// Raises now the SIGCHLD that the monitor passed on while it looked at the children
/// (`host_signals::pass_pending_sigchld`): on Linux a child's SIGCHLD is pending before the
/// child can be waited for, so the handler has run when waitpid returns it. Left to CPU 0's
/// interrupt, it came after the wait, on a loaded host during the program's next wait, which
/// it interrupted.
fn sigchld_before_return() {
    crate::linux::channel::raise_host_signals();
}

/// Makes a host wait (`wait`) until it answers for itself: the monitor answers
/// `SIGNAL_CAME_FIRST` when a signal other than SIGCHLD reached `hrt` on the host before the
/// child it found was waitable, and leaves the child be. The signal (which CPU 0's interrupt
/// may not have raised yet) is raised here; one this thread takes ends the wait as Linux ends
/// it for a signal that comes before the child's end (EINTR, or a restart with SA_RESTART:
/// Err), without looking at the children; otherwise the wait is made again (Ok: its answer).
/// SIGCHLD does not count: it comes with a child's end, which Linux's wait looks at first
/// (blocked signals from a child, then its SIGCHLD, made its wait fail with EINTR).
fn wait_after_signals(mut wait: impl FnMut() -> SysResult) -> Result<SysResult, u32> {
    loop {
        match wait() {
            Err(e) if e as i64 == hrt_abi::channel::SIGNAL_CAME_FIRST => {
                crate::linux::channel::raise_host_signals();
                if crate::linux::signal::state::deliverable_here_besides(SIGCHLD) {
                    return Err(sig::ERESTARTSYS);
                }
            }
            r => return Ok(r),
        }
    }
}

/// A wait a signal interrupted (`r`, made with `options`): Linux looks at the children before
/// it looks for signals, so a wait whose children are all gone fails with ECHILD, and one whose
/// child is ready returns it, even with a signal pending. Under SA_NOCLDWAIT a child is reaped
/// at its exit while its SIGCHLD comes at once; the host's wait, interrupted for that signal,
/// answered EINTR (1 run in ~100 at `--cpus 2`). `again` makes the wait once more without
/// waiting: Some(what to answer) if it settled the wait.
fn settle_interrupted(r: SysResult, options: u64, again: impl FnOnce() -> Option<SysResult>) -> SysResult {
    match r {
        Err(e) if (e == sig::ERESTARTSYS || e == EINTR) && options & WNOHANG == 0 => {
            again().unwrap_or_else(|| if late_sigchld_only() { Err(sig::ERESTARTNOINTR) } else { Err(e) })
        }
        other => other,
    }
}

/// waitid(idtype, id, infop, options, rusage), as wait4.
pub fn waitid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let r = waitid_with(a);
    if r.is_ok() && a[2] != 0 {
        // The child's pid, at offset 16 of the siginfo (0: none was ready), and how it
        // changed at 8 (CLD_EXITED, CLD_KILLED, CLD_DUMPED: it ended).
        if let (Ok(p), Ok(code)) = (uaccess::read::<u32>(a[2] + 16), uaccess::read::<i32>(a[2] + 8)) {
            if (1..=3).contains(&code) {
                note_ended(p);
            }
        }
    }
    sigchld_before_return();
    r
}

/// The siginfo (128 bytes) of a child whose state changed, left waitable (waitid with WNOWAIT
/// and WNOHANG): what Linux's SIGCHLD carries, for one the host raised without it (a host
/// child's SIGCHLD reaches the program as a signal sent to `hrt`, see signal/host.rs).
pub fn peek_child_change() -> Option<[u8; 128]> {
    const WSTOPPED: u64 = 2;
    const WCONTINUED: u64 = 8;
    let mut got = None;
    crate::linux::usermem::with_scratch(|page| {
        let options = WEXITED | WSTOPPED | WCONTINUED | WNOHANG | WNOWAIT;
        if waitid_with([P_ALL, 0, page, options, 0, 0]).is_ok() {
            // SAFETY: our scratch page, 128 bytes of which the host's waitid filled.
            let info = unsafe { *(page as *const [u8; 128]) };
            if u32::from_le_bytes([info[16], info[17], info[18], info[19]]) != 0 {
                got = Some(info);
            }
        }
        0
    });
    got
}

fn waitid_with(a: [u64; 6]) -> SysResult {
    let (idtype, id, infop, options, rusage) = (a[0], a[1] as i32 as i64, a[2], a[3], a[4]);
    let selector = match idtype {
        P_ALL => Some(-1),
        P_PID => Some(id),
        _ => None,
    };
    if options & WEXITED != 0 {
        if let Some((p, ws)) = selector.and_then(|s| take_zombie(s, options & WNOWAIT != 0)) {
            if infop != 0 {
                uaccess::write_bytes(infop, &child_exited(SIGCHLD as i32, p, ws).bytes())?;
            }
            if rusage != 0 {
                uaccess::write::<[u64; 18]>(rusage, [0; 18])?;
            }
            return Ok(0);
        }
    }
    let r = settle_interrupted(wait_after_signals(|| call(op::WAITID, a))?, options, || {
        match call(op::WAITID, [a[0], a[1], a[2], options | WNOHANG, a[4], a[5]]) {
            // A child's siginfo written (its pid at offset 16): the wait is over.
            Ok(0) if infop != 0 && uaccess::read::<u32>(infop + 16).is_ok_and(|p| p != 0) => Some(Ok(0)),
            Err(ECHILD) => Some(Err(ECHILD)),
            _ => None,
        }
    })?;
    if idtype == P_PIDFD && options & WNOWAIT == 0 && !STAND_INS.lock().is_empty() {
        // A stand-in's pidfd: the monitor reaped it and answered the child's pid, whose zombie
        // goes too. Without an infop to read that pid from, the stand-ins the monitor no
        // longer has are the ones reaped.
        let reaped: Vec<u32> = if infop != 0 {
            uaccess::read::<u32>(infop + 16).into_iter().collect()
        } else {
            // Copied first: no lock is held across the calls.
            let waiting: Vec<u32> = STAND_INS.lock().clone();
            waiting.into_iter().filter(|&g| call(op::REAP_STAND_IN, [g as u64, 1, 0, 0, 0, 0]) == Ok(0)).collect()
        };
        for pid in reaped {
            if forget_stand_in(pid) {
                ZOMBIES.lock().retain(|&(p, _)| p != pid);
            }
        }
    }
    Ok(r)
}

/// The program's own pid (or, in a spawn child, its own id) as 0: the caller, for the host.
fn own_as_zero(pid: u64) -> u64 {
    let p = pid as u32;
    if p == process::pid() || child_ctx() == Some(p) {
        0
    } else {
        pid
    }
}

/// Whether `pid` is one of the program's threads other than the main one: Linux finds it as a
/// task of the caller's process (the host knows no such id).
fn other_own_thread(pid: u64) -> bool {
    let p = pid as u32;
    p as i32 > 0 && p != process::pid() && crate::linux::signal::is_program_thread(p)
}

/// A thread's id asks about its process, as the process's own id does.
fn own_or_thread_as_zero(pid: u64) -> u64 {
    if other_own_thread(pid) {
        0
    } else {
        own_as_zero(pid)
    }
}

pub fn setpgid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    // A thread that is not its process's leader has no process group to set (EINVAL).
    if other_own_thread(a[0]) {
        return Err(EINVAL);
    }
    // A group id equal to the caller's own pid means the caller's own group (0) only when the
    // caller moves itself; moving a child there names the group whose id is the caller's pid,
    // which exists only if the caller leads it (EPERM if not: it put the child in a group of
    // its own until stop 101).
    let target = own_as_zero(a[0]);
    let group = if target == 0 { own_as_zero(a[1]) } else { a[1] };
    call(tagged(op::SETPGID), [target, group, 0, 0, 0, 0])
}

pub fn getpgid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    call(tagged(op::GETPGID), [own_or_thread_as_zero(a[0]), 0, 0, 0, 0, 0])
}

/// Whether host process `pid` (none of the program's threads) exists: its process group is
/// there to ask for (ESRCH if not).
pub fn host_process_exists(pid: u32) -> bool {
    call(tagged(op::GETPGID), [pid as u64, 0, 0, 0, 0, 0]) != Err(crate::linux::errno::ESRCH)
}

pub fn getpgrp(_: &mut TrapFrame, _: [u64; 6]) -> SysResult {
    call(tagged(op::GETPGID), [0; 6])
}

pub fn setsid(_: &mut TrapFrame, _: [u64; 6]) -> SysResult {
    let r = call(tagged(op::SETSID), [0; 6])?;
    // A spawn child's session is made at its exec; its id is the child's pid.
    Ok(if r == 0 { child_ctx().map_or(0, |c| c as u64) } else { r })
}

/// pidfd_open: the host's, but for one of the program's threads other than the main one, which
/// the host does not know: ENOENT without PIDFD_THREAD (Linux: no process has that id as its
/// leader), and with it not provided (ENOSYS, said once).
pub fn pidfd_open(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    const PIDFD_THREAD: u64 = linux_raw_sys::general::O_EXCL as u64;
    if other_own_thread(a[0]) && a[1] & !(PIDFD_THREAD | linux_raw_sys::general::O_NONBLOCK as u64) == 0 {
        if a[1] & PIDFD_THREAD == 0 {
            return Err(crate::linux::errno::ENOENT);
        }
        static SAID: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
        if !SAID.swap(true, core::sync::atomic::Ordering::Relaxed) {
            crate::kprintln!("hrt: pidfd_open with PIDFD_THREAD of one of the program's threads is not supported: returning ENOSYS (reported once)");
        }
        return Err(ENOSYS);
    }
    let r = forward(linux_raw_sys::general::__NR_pidfd_open as u64, a);
    if r < 0 {
        Err((-r) as u32)
    } else {
        Ok(r as u64)
    }
}

pub fn getsid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    call(tagged(op::GETSID), [own_or_thread_as_zero(a[0]), 0, 0, 0, 0, 0])
}

/// kill to another process (a host descendant), a process group, or -1: the monitor sends it
/// on the host to the program's descendants and the groups it or they are in (never to `hrt`
/// itself); 1 means the caller's own process is in the group and gets its copy from the caller.
pub fn kill_other(pid: u64, signo: u64) -> SysResult {
    if ZOMBIES.lock().iter().any(|&(p, _)| p as u64 == pid) {
        return Ok(0);
    }
    call(op::KILL, [pid, signo, 0, 0, 0, 0])
}

/// The siginfo of a child `pid` that exited with wait status `status` (for `signo`, SIGCHLD or
/// the clone's exit signal, and for waitid's answer).
fn child_exited(signo: i32, pid: u32, status: u32) -> SigInfo {
    let uid = crate::linux::calls::ids::ruid() as u64;
    SigInfo { signo, code: CLD_EXITED, w16: pid as u64 | uid << 32, w24: (status >> 8) as u64, ..SigInfo::EMPTY }
}

/// clone3's CLONE_CLEAR_SIGHAND in the new process's copy of the signal actions: every
/// handler becomes SIG_DFL, ignored signals stay ignored, and no action keeps its flags, mask
/// or restorer (Linux's flush_signal_handlers).
pub const CLONE_CLEAR_SIGHAND: u64 = 0x1_0000_0000;

pub fn clear_handlers(actions: &mut [[u64; 4]; 65]) {
    for act in actions.iter_mut().skip(1) {
        let handler = if act[0] == SIG_IGN { SIG_IGN } else { 0 };
        *act = [handler, 0, 0, 0];
    }
}

/// In a forked child: no spawn children or zombies of the parent's. When the fork was a spawn
/// child's (`from_child`, its tid), its own signal actions are the new process's; with
/// `clear_sighand` (CLONE_CLEAR_SIGHAND) they are then cleared.
pub fn after_fork(from_child: u32, clear_sighand: bool) {
    if let Some(c) = CHILDREN.lock().get(&from_child) {
        let mut actions = PROCESS.sigactions.lock();
        *actions = *c.sigactions;
        crate::linux::signal::state::note_handlers(&actions);
    }
    if clear_sighand {
        let mut actions = PROCESS.sigactions.lock();
        clear_handlers(&mut actions);
        crate::linux::signal::state::note_handlers(&actions);
    }
    CHILDREN.lock().clear();
    ACTIVE.store(0, Ordering::SeqCst);
    ZOMBIES.lock().clear();
    STAND_INS.lock().clear();
}
