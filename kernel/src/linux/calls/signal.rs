//! The signal system calls: actions, per-thread masks, pending sets, alternate stacks, sending
//! (kill, tgkill, tkill, rt_sigqueueinfo, rt_tgsigqueueinfo), waiting (rt_sigsuspend, pause, rt_sigtimedwait) and rt_sigreturn.
//! Signals act when the receiving thread next returns to the program (linux::signal::deliver):
//! default action, or a handler frame as on Linux.

use core::sync::atomic::Ordering;

use crate::arch::traps::TrapFrame;
use crate::linux::errno::{SysResult, EAGAIN, EINTR, EINVAL, ESRCH};
use crate::linux::process::{self, PROCESS};
use crate::linux::signal::deliver::SUSPENDED;
use crate::linux::signal::state::{self, SIGNALS};
use crate::linux::signal::{self as sig, SigInfo, SIG_DFL, SIG_IGN, SI_TKILL, SI_USER, UNBLOCKABLE};
use crate::linux::uaccess;
use crate::sched::{self, Thread};
use crate::time;
use linux_raw_sys::errno::EPERM;

fn current() -> &'static mut Thread {
    // SAFETY: the current thread's record is alive while it runs; only it changes its mask.
    unsafe { &mut *sched::current() }
}

pub fn rt_sigaction(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (signo, act, oact, size) = (a[0] as usize, a[1], a[2], a[3]);
    if !(1..=64).contains(&signo) || size != 8 {
        return Err(EINVAL);
    }
    // Flags Linux does not know are dropped (UAPI_SA_FLAGS), so that a program can tell what
    // is supported from the old action (glibc's sign-extended SA_RESETHAND included).
    let new = if act != 0 {
        let mut new = uaccess::read::<[u64; 4]>(act)?;
        new[1] &= UAPI_SA_FLAGS;
        Some(new)
    } else {
        None
    };
    if new.is_some() && (signo == 9 || signo == 19) {
        return Err(EINVAL);
    }
    if let Some(r) = super::procs::child_sigaction(signo, new, oact) {
        return r;
    }
    let mut table = PROCESS.sigactions.lock();
    // Written after the new action is set, as Linux's (a fault here leaves it set).
    let old = table[signo];
    if let Some(mut new) = new {
        if signo == 9 || signo == 19 {
            return Err(EINVAL);
        }
        new[3] &= !UNBLOCKABLE;
        table[signo] = new;
        state::note_handlers(&table);
        drop(table);
        let h = new[0];
        if h == SIG_IGN || h == SIG_DFL && sig::ignored_by_default(signo as u64) {
            // Linux discards a pending signal that becomes ignored.
            state::discard(signo as u64);
        }
        // `hrt` shares some dispositions with the program (SIGTTIN, SIGTTOU, SIGCHLD).
        sig::host_mirror::after_sigaction(signo, &new);
    } else {
        drop(table);
    }
    if oact != 0 {
        uaccess::write::<[u64; 4]>(oact, old)?;
    }
    Ok(0)
}

/// The sigaction flags Linux keeps (`UAPI_SA_FLAGS` with x86's SA_RESTORER): SA_NOCLDSTOP,
/// SA_NOCLDWAIT, SA_SIGINFO, SA_EXPOSE_TAGBITS, SA_RESTORER, SA_ONSTACK, SA_RESTART,
/// SA_NODEFER, SA_RESETHAND.
const UAPI_SA_FLAGS: u64 =
    0x1 | 0x2 | 0x4 | 0x800 | 0x0400_0000 | 0x0800_0000 | 0x1000_0000 | 0x4000_0000 | 0x8000_0000;

/// rt_sigprocmask: the calling thread's mask. Signals it unblocks act on the way back.
pub fn rt_sigprocmask(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (how, set, oset, size) = (a[0], a[1], a[2], a[3]);
    if size != 8 {
        return Err(EINVAL);
    }
    let t = current();
    let new = if set != 0 { Some(uaccess::read::<u64>(set)? & !UNBLOCKABLE) } else { None };
    // As Linux: the new mask first (an unknown `how` fails before the old one is written), then
    // the old one (a fault writing it leaves the new mask set).
    let old = t.sigmask;
    if let Some(s) = new {
        t.sigmask = match how {
            0 => old | s,
            1 => old & !s,
            2 => s,
            _ => return Err(EINVAL),
        };
    }
    if oset != 0 {
        uaccess::write::<u64>(oset, old)?;
    }
    Ok(0)
}

/// rt_sigpending: the pending signals (the thread's and the process's) the caller blocks.
pub fn rt_sigpending(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    if a[1] > 8 {
        return Err(EINVAL);
    }
    let t = current();
    // A vfork child before its exec is a process of its own, born without pending signals
    // (the program's are not its; LTP's vfork02).
    let set = match super::procs::child_ctx() {
        Some(_) => 0,
        None => {
            sig::host::take_sent_so_far();
            state::pending_for(t.tid) & t.sigmask
        }
    };
    uaccess::write_bytes(a[0], &set.to_le_bytes()[..a[1] as usize])?;
    Ok(0)
}

const SS_ONSTACK: u64 = 1;
use state::SS_DISABLE;

/// sigaltstack(ss, old_ss), with Linux's checks: EFAULT for unreadable or unwritable stack_t,
/// EINVAL for unknown flags, ENOMEM for a stack below MINSIGSTKSZ, EPERM while running on it.
pub fn sigaltstack(frame: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (ss, old) = (a[0], a[1]);
    let tid = process::current_tid();
    let new = if ss != 0 { Some(uaccess::read::<[u64; 3]>(ss)?) } else { None };
    let current = state::alt_stack(tid);
    let on_it = current[1] != 0 && frame.rsp > current[0] && frame.rsp - current[0] <= current[1];
    if let Some(new) = new {
        state::change_alt_stack(tid, frame.rsp, new)?;
    }
    if old != 0 {
        let [sp, size, flags] = current;
        let flags = if size == 0 {
            SS_DISABLE
        } else if on_it {
            SS_ONSTACK
        } else {
            flags
        };
        uaccess::write::<[u64; 3]>(old, [sp, flags, size])?;
    }
    Ok(0)
}

/// Forgets an exiting thread's signal state.
pub fn thread_exited(tid: u32) {
    state::thread_exited(tid);
}

/// Records a new thread of the program (for tgkill and wake-ups).
pub fn thread_started(t: &mut Thread) {
    SIGNALS.lock().thread(t.tid).thread = t as *mut Thread;
    crate::linux::signal::state::threads_changed();
}

/// The calling thread's record, registered for tgkill on first use (the main thread).
fn register_current() -> &'static mut Thread {
    let t = current();
    let mut s = SIGNALS.lock();
    let ts = s.thread(t.tid);
    if ts.thread.is_null() {
        ts.thread = t as *mut Thread;
    }
    t
}

fn valid(signo: u64) -> Result<(), u32> {
    if (1..=64).contains(&signo) {
        Ok(())
    } else {
        Err(EINVAL)
    }
}

/// A forwarded write met a pipe without readers (EPIPE): Linux sends SIGPIPE to the writing
/// thread, which ends a program that neither ignores, blocks nor handles it (status 141, no
/// message, as a shell reports it); a handler runs on the way back; the write fails with EPIPE.
pub fn broken_pipe() {
    let tid = process::current_tid();
    // A standard signal: never refused.
    let _ = state::send_thread(tid, SigInfo::from_user(sig::SIGPIPE, SI_USER));
}

/// A forwarded call went past the file size limit: SIGXFSZ for the calling thread.
pub fn file_too_big() {
    // A standard signal: never refused.
    let _ = state::send_thread(process::current_tid(), SigInfo::from_user(sig::SIGXFSZ, SI_USER));
}

pub fn kill(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    register_current();
    let signo = a[1];
    // Linux looks the target up before it checks the signal (a missing process is ESRCH
    // whatever the number): another process's answer is the host's.
    // pid_t is an int: the register's upper half is not part of it.
    if !own_process(a[0]) {
        // Another process, a process group (0: the caller's), or -1 (every other process):
        // the monitor signals them on the host; 1 says the caller's process is in the group.
        // Others first: the caller's own copy may end it.
        if super::procs::kill_other(a[0], signo)? != 1 {
            return Ok(0);
        }
    }
    if signo != 0 {
        valid(signo)?;
        // To the main thread if it waits for it (Linux's first choice), else to whichever
        // thread takes it first.
        match state::main_thread_waits_for(signo) {
            Some(main) => state::send_thread(main, SigInfo::from_user(signo, SI_USER))?,
            None => state::send_process(SigInfo::from_user(signo, SI_USER))?,
        }
        state::end_if_fatal(signo, None);
        state::kick_all();
    }
    Ok(0)
}

/// pidfd_send_signal(pidfd, sig, info, flags): the monitor sends it through the host's pidfd;
/// 1 means the pidfd is the program's own process, which gets the signal here before the call
/// returns (with the program's siginfo if it gave one), as `kill` to itself does.
pub fn pidfd_send_signal(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    register_current();
    let (signo, info) = (a[1], a[2]);
    if signo != 0 {
        valid(signo)?;
    }
    let r = crate::linux::syscall::forward(linux_raw_sys::general::__NR_pidfd_send_signal as u64, a);
    if r < 0 {
        return Err((-r) as u32);
    }
    // A siginfo for another signal than the one sent is EINVAL, as Linux checks it.
    if r == 1 && info != 0 && uaccess::read::<i32>(info)? as u64 != signo {
        return Err(EINVAL);
    }
    if r == 1 && signo != 0 {
        let si = if info != 0 { queued_info(signo, info)? } else { SigInfo::from_user(signo, SI_USER) };
        state::send_process(si)?;
        state::end_if_fatal(signo, None);
        state::kick_all();
    }
    Ok(0)
}

/// Sends `info` (signal `signo`) to thread `tid` of this process; the target acts at its next
/// return to the program (a thread running on another CPU is interrupted for it).
fn send_to_thread(tid: u32, signo: u64, info: SigInfo) -> SysResult {
    let me = register_current();
    let is_self = tid == me.tid;
    let target = if is_self {
        me as *mut Thread
    } else {
        let t = SIGNALS.lock().threads.get(&tid).map_or(core::ptr::null_mut(), |t| t.thread);
        if t.is_null() {
            return Err(ESRCH);
        }
        t
    };
    // After the thread's lookup, as Linux (ESRCH first).
    if signo != 0 {
        valid(signo)?;
    }
    if signo != 0 {
        state::send_thread(tid, info)?;
        state::end_if_fatal(signo, Some(tid));
        if !is_self {
            // SAFETY: registered threads are alive (they unregister before exiting).
            state::kick(unsafe { (*target).cpu });
        }
    }
    Ok(0)
}

pub fn tgkill(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    // pid_t arguments: their low 32 bits (a -1 passed as an int is 0xffffffff here).
    if (a[0] as i32) <= 0 || (a[1] as i32) <= 0 {
        return Err(EINVAL);
    }
    if a[0] as u32 != process::pid() {
        return to_other_process(linux_raw_sys::general::__NR_tgkill, a[2], a);
    }
    send_to_thread(a[1] as u32, a[2], SigInfo::from_user(a[2], SI_TKILL))
}

/// tgkill or rt_tgsigqueueinfo (`nr`, arguments `a`) to a thread of another process: the
/// monitor sends it on the host (a thread of another HRT program is reached as its main
/// thread, the tid that equals its pid).
fn to_other_process(nr: u32, signo: u64, a: [u64; 6]) -> SysResult {
    // The host checks the signal after it has found the thread (ESRCH first), as Linux.
    let _ = signo;
    let r = crate::linux::syscall::forward(nr as u64, a);
    if r < 0 {
        Err((-r) as u32)
    } else {
        Ok(0)
    }
}

pub fn tkill(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    if (a[0] as i32) <= 0 {
        return Err(EINVAL);
    }
    send_to_thread(a[0] as u32, a[1], SigInfo::from_user(a[1], SI_TKILL))
}

/// The siginfo a program passes to rt_sigqueueinfo or rt_tgsigqueueinfo for signal `signo`.
/// The words kept are si_errno, si_code and those at offsets 16 to 47 (si_pid, si_uid, si_value
/// for SI_QUEUE; whatever the program put there otherwise, which its handler sees again).
fn queued_info(signo: u64, uinfo: u64) -> Result<SigInfo, u32> {
    let b = uaccess::read::<[u64; 6]>(uinfo)?;
    let code = (b[1] & 0xffff_ffff) as u32 as i32;
    Ok(SigInfo {
        signo: signo as i32,
        errno: (b[0] >> 32) as u32 as i32,
        code,
        w16: b[2],
        w24: b[3],
        w32: [b[4], b[5]],
        timer: false,
    })
}

/// Linux's rule for those calls: sending to another process (`pid`), a program may not claim to
/// be the kernel, kill or tgkill (si_code >= 0 or SI_TKILL: EPERM); to itself it may.
/// Whether `pid` (a kill-style pid) names the program's own process: its pid, or the id of
/// one of its threads, which Linux's kill and sigqueue take for the thread's process.
fn own_process(pid: u64) -> bool {
    pid as i32 == process::pid() as i32 || pid as i32 > 0 && crate::linux::signal::is_program_thread(pid as u32)
}

/// Linux refuses a siginfo that pretends to come from kill, tgkill or the kernel unless it is
/// sent to the caller's own thread id (`task_pid_vnr(current)`): from a thread other than the
/// main one, even the process's id is EPERM.
fn may_queue(pid: u64, info: &SigInfo) -> Result<(), u32> {
    if (info.code >= 0 || info.code == SI_TKILL) && pid as u32 != current().tid {
        return Err(EPERM);
    }
    Ok(())
}

/// rt_sigqueueinfo(pid, sig, info) (sigqueue): sends `sig` with the caller's siginfo
/// (SI_QUEUE and si_value) to the process; real-time signals queue (state::Pending).
pub fn rt_sigqueueinfo(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    register_current();
    let (pid, signo) = (a[0], a[1] & 0xffff_ffff);
    let info = queued_info(signo, a[2])?;
    may_queue(pid, &info)?;
    if !own_process(pid) {
        // Another process of the program's tree: the monitor queues it on the host with the
        // program's siginfo (a receiver under hrt gets it as sent: SI_QUEUE, pid, uid, value;
        // monitor/src/vm/channel/host_siginfo.rs).
        if signo != 0 {
            valid(signo)?;
        }
        let r = crate::linux::syscall::forward(linux_raw_sys::general::__NR_rt_sigqueueinfo as u64, a);
        return if r < 0 { Err((-r) as u32) } else { Ok(0) };
    }
    if signo != 0 {
        valid(signo)?;
        state::send_process(info)?;
        state::end_if_fatal(signo, None);
        state::kick_all();
    }
    Ok(0)
}

/// rt_tgsigqueueinfo(tgid, tid, sig, info) (pthread_sigqueue): as rt_sigqueueinfo, to one
/// thread.
pub fn rt_tgsigqueueinfo(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (tgid, tid, signo) = (a[0], a[1], a[2] & 0xffff_ffff);
    let info = queued_info(signo, a[3])?;
    if (tgid as i32) <= 0 || (tid as i32) <= 0 {
        return Err(EINVAL);
    }
    may_queue(tgid, &info)?;
    if tgid as i32 != process::pid() as i32 {
        return to_other_process(linux_raw_sys::general::__NR_rt_tgsigqueueinfo, signo, a);
    }
    send_to_thread(tid as u32, signo, info)
}

/// Blocks until a signal outside `mask` is pending for the caller (or the TSC passes
/// `deadline`). Returns false on timeout.
fn wait_for_signal(mask: u64, deadline: Option<u64>) -> bool {
    let t = register_current();
    loop {
        {
            let mut s = SIGNALS.lock();
            let shared = s.shared.set;
            let ts = s.thread(t.tid);
            if (ts.pending.set | shared) & !mask != 0 {
                ts.waiter = core::ptr::null_mut();
                return true;
            }
            ts.waiter = t as *mut Thread;
            ts.wait_mask = mask;
            t.state.store(sched::thread::BLOCKING, Ordering::SeqCst);
        }
        match deadline {
            Some(d) => sched::block_until(d),
            None => sched::block(),
        }
        SIGNALS.lock().thread(t.tid).waiter = core::ptr::null_mut();
        if deadline.is_some_and(|d| time::ticks() >= d) {
            return false;
        }
    }
}

/// rt_sigsuspend(mask): waits with `mask` for a signal that runs a handler (or ends the
/// program); the handler's frame carries the caller's own mask, restored by rt_sigreturn.
pub fn rt_sigsuspend(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    if a[1] != 8 {
        return Err(EINVAL);
    }
    let mask = uaccess::read::<u64>(a[0])? & !UNBLOCKABLE;
    wait_with_mask(mask);
    wait_for_signal(mask, None);
    Err(EINTR)
}

/// The current thread takes `mask` for a wait; its own mask is kept aside, for a handler's
/// frame to carry (rt_sigreturn restores it) or for the return path to put back when no handler
/// runs (deliver.rs).
fn wait_with_mask(mask: u64) {
    let t = register_current();
    {
        let mut s = SIGNALS.lock();
        let ts = s.thread(t.tid);
        if ts.saved_mask.replace(t.sigmask).is_none() {
            SUSPENDED.fetch_add(1, Ordering::SeqCst);
        }
    }
    t.sigmask = mask;
}

/// The signal mask a forwarded ppoll, pselect6, epoll_pwait or epoll_pwait2 waits with; None
/// when it has none, or one the monitor will refuse (a wrong size: EINVAL; unreadable: EFAULT).
#[allow(non_upper_case_globals)] // linux-raw-sys names the numbers __NR_ppoll etc.
fn wait_sigmask(nr: u64, a: &[u64; 6]) -> Option<u64> {
    use linux_raw_sys::general::{__NR_epoll_pwait, __NR_epoll_pwait2, __NR_ppoll, __NR_pselect6};
    let (mask, size) = match nr as u32 {
        __NR_ppoll => (a[3], a[4]),
        __NR_epoll_pwait | __NR_epoll_pwait2 => (a[4], a[5]),
        // { const sigset_t *ss; size_t ss_len; }
        __NR_pselect6 if a[5] != 0 => uaccess::read::<[u64; 2]>(a[5]).ok().map(|[m, s]| (m, s))?,
        _ => return None,
    };
    if mask == 0 || size != 8 {
        return None;
    }
    uaccess::read::<u64>(mask).ok().map(|m| m & !UNBLOCKABLE)
}

/// A local wait with a signal mask (io_pgetevents) takes `mask` for the wait, as a forwarded
/// one does (`begin_masked_wait`); `end_masked_wait` ends it.
pub fn begin_wait_with_mask(mask: u64) {
    wait_with_mask(mask & !UNBLOCKABLE);
}

/// Before forwarded call `nr`: a wait with a signal mask (ppoll, pselect6, epoll_pwait,
/// epoll_pwait2) takes it for the wait, as Linux's set_user_sigmask does, so a signal it
/// unblocks interrupts the wait. Returns whether it did.
pub fn begin_masked_wait(nr: u64, a: &[u64; 6]) -> bool {
    let Some(mask) = wait_sigmask(nr, a) else { return false };
    wait_with_mask(mask);
    true
}

/// After a masked wait answered `ret`: the thread's own mask comes back at once, unless a signal
/// interrupted the wait (then the return path restores it, after a handler's frame has taken
/// it), as Linux's restore_saved_sigmask_unless.
pub fn end_masked_wait(ret: i64) {
    if ret == -(EINTR as i64) || ret == -(sig::ERESTARTSYS as i64) {
        return;
    }
    let t = current();
    let mut s = SIGNALS.lock();
    if let Some(mask) = s.thread(t.tid).saved_mask.take() {
        t.sigmask = mask;
        SUSPENDED.fetch_sub(1, Ordering::SeqCst);
    }
}

/// pause(): waits for a signal that runs a handler or ends the program.
pub fn pause(_: &mut TrapFrame, _: [u64; 6]) -> SysResult {
    wait_for_signal(current().sigmask, None);
    Err(EINTR)
}

/// restart_syscall(): resumes a call that a stop interrupted. HRT restarts its calls by
/// entering them again, never through a restart block, so a program's own call finds none:
/// EINTR, as Linux's answer without one.
pub fn restart_syscall(_: &mut TrapFrame, _: [u64; 6]) -> SysResult {
    Err(EINTR)
}

/// rt_sigtimedwait(set, info, timeout, size): takes a pending signal of `set` (the caller
/// blocks them, as POSIX asks) and returns its number; EAGAIN after the timeout, EINTR when
/// another signal runs a handler meanwhile.
pub fn rt_sigtimedwait(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (set, info, timeout, size) = (a[0], a[1], a[2], a[3]);
    if size != 8 {
        return Err(EINVAL);
    }
    let set = uaccess::read::<u64>(set)? & !UNBLOCKABLE;
    let deadline = if timeout != 0 {
        let [s, ns] = uaccess::read::<[i64; 2]>(timeout)?;
        if s < 0 || !(0..1_000_000_000).contains(&ns) {
            return Err(EINVAL);
        }
        let total = (s as u64).saturating_mul(1_000_000_000).saturating_add(ns as u64);
        Some(time::ticks().saturating_add(time::ns_to_ticks(total)))
    } else {
        None
    };
    let t = register_current();
    // Whether the signals another process sent so far were asked for (once, before EAGAIN).
    let mut asked_host = false;
    loop {
        if let Some(got) = state::take_for(t.tid, set) {
            crate::linux::signalfd::pending_removed(state::bit(got.signo as u64));
            if info != 0 {
                uaccess::write_bytes(info, &got.bytes())?;
            }
            return Ok(got.signo as u64);
        }
        // Anything else deliverable interrupts the wait.
        if state::pending_for(t.tid) & !t.sigmask & !set != 0 {
            return Err(EINTR);
        }
        let timed_out = deadline.is_some_and(|d| time::ticks() >= d) || !wait_for_signal(t.sigmask & !set, deadline);
        if timed_out {
            if asked_host {
                return Err(EAGAIN);
            }
            asked_host = true;
            sig::host::take_sent_so_far();
        }
    }
}

/// rt_sigreturn: back from a handler to the interrupted context.
pub fn rt_sigreturn(frame: &mut TrapFrame, _: [u64; 6]) -> SysResult {
    sig::sigreturn(frame)
}
