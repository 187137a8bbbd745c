//! Signals: handlers and masks are recorded; a signal the program sends itself that would
//! terminate it (abort's SIGABRT included) ends the program with status 128 + signal and the
//! shell's message. A signal blocked by the sending thread's mask stays pending, as on Linux,
//! and acts when the mask lets it through (or is dropped if it becomes ignored). A forwarded
//! write that meets a pipe without readers raises SIGPIPE. Delivery to handlers is not
//! implemented yet.

use alloc::collections::BTreeMap;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::arch::traps::TrapFrame;
use crate::linux::errno::{SysResult, EINVAL, ENOMEM, ESRCH};
use crate::linux::process::{self, PROCESS};
use crate::linux::{fault, uaccess};
use crate::sched;
use crate::sync::IrqSpinLock;

const SIG_DFL: u64 = 0;
const SIG_IGN: u64 = 1;
const SIGKILL: u64 = 9;
const SIGPIPE: u64 = 13;
const SIGSTOP: u64 = 19;

/// Signals sent to the process while blocked: bit `sig - 1`.
static PENDING: AtomicU64 = AtomicU64::new(0);

fn bit(sig: u64) -> u64 {
    1 << (sig - 1)
}

/// Signals whose default action is to do nothing (SIGCHLD, SIGURG, SIGWINCH, SIGCONT).
fn ignored_by_default(sig: u64) -> bool {
    matches!(sig, 17 | 18 | 23 | 28)
}

fn current_mask() -> u64 {
    // SAFETY: the current thread's record is alive.
    unsafe { (*sched::current()).sigmask }
}

fn handler(sig: u64) -> u64 {
    PROCESS.sigactions.lock()[sig as usize][0]
}

pub fn rt_sigaction(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (sig, act, oact, size) = (a[0] as usize, a[1], a[2], a[3]);
    if !(1..=64).contains(&sig) || size != 8 {
        return Err(EINVAL);
    }
    let mut table = PROCESS.sigactions.lock();
    if oact != 0 {
        uaccess::write::<[u64; 4]>(oact, table[sig])?;
    }
    if act != 0 {
        if sig == 9 || sig == 19 {
            return Err(EINVAL);
        }
        table[sig] = uaccess::read::<[u64; 4]>(act)?;
        let h = table[sig][0];
        if h == SIG_IGN || h == SIG_DFL && ignored_by_default(sig as u64) {
            // Linux discards a pending signal that becomes ignored.
            PENDING.fetch_and(!bit(sig as u64), Ordering::SeqCst);
        }
    }
    Ok(0)
}

pub fn rt_sigprocmask(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (how, set, oset, size) = (a[0], a[1], a[2], a[3]);
    if size != 8 {
        return Err(EINVAL);
    }
    // SAFETY: the current thread's record; only it changes its mask.
    let t = unsafe { &mut *sched::current() };
    if oset != 0 {
        uaccess::write::<u64>(oset, t.sigmask)?;
    }
    if set != 0 {
        let s = uaccess::read::<u64>(set)? & !((1 << 8) | (1 << 18)); // KILL, STOP
        t.sigmask = match how {
            0 => t.sigmask | s,
            1 => t.sigmask & !s,
            2 => s,
            _ => return Err(EINVAL),
        };
        deliver_unblocked(t.sigmask)?;
    }
    Ok(0)
}

/// Acts on the pending signals `mask` no longer blocks (as Linux does on the way back to the
/// program).
fn deliver_unblocked(mask: u64) -> SysResult {
    let ready = PENDING.load(Ordering::SeqCst) & !mask;
    for sig in 1..=64u64 {
        if ready & bit(sig) != 0 && PENDING.fetch_and(!bit(sig), Ordering::SeqCst) & bit(sig) != 0 {
            act(sig)?;
        }
    }
    Ok(0)
}

/// rt_sigpending: the pending signals the calling thread blocks.
pub fn rt_sigpending(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    if a[1] > 8 {
        return Err(EINVAL);
    }
    let set = PENDING.load(Ordering::SeqCst) & current_mask();
    uaccess::write_bytes(a[0], &set.to_le_bytes()[..a[1] as usize])?;
    Ok(0)
}

const SS_ONSTACK: u64 = 1;
const SS_DISABLE: u64 = 2;
const SS_AUTODISARM: u64 = 1 << 31;
const MINSIGSTKSZ: u64 = 2048;

/// Each thread's alternate signal stack (sp, size, flags), by tid; recorded and reported back,
/// not used yet (handlers are not delivered).
static ALT_STACKS: IrqSpinLock<BTreeMap<u32, [u64; 3]>> = IrqSpinLock::new(BTreeMap::new());

/// sigaltstack(ss, old_ss), with Linux's checks: EFAULT for unreadable or unwritable stack_t,
/// EINVAL for unknown flags, ENOMEM for a stack below MINSIGSTKSZ.
pub fn sigaltstack(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (ss, old) = (a[0], a[1]);
    let tid = process::current_tid();
    let new = if ss != 0 { Some(uaccess::read::<[u64; 3]>(ss)?) } else { None };
    let current = ALT_STACKS.lock().get(&tid).copied().unwrap_or([0, 0, 0]);
    if let Some([sp, flags, size]) = new {
        let flags = flags & 0xffff_ffff;
        let value = match flags & !SS_AUTODISARM {
            SS_DISABLE => [0, 0, 0],
            0 | SS_ONSTACK if size < MINSIGSTKSZ => return Err(ENOMEM),
            0 | SS_ONSTACK => [sp, size, flags & SS_AUTODISARM],
            _ => return Err(EINVAL),
        };
        ALT_STACKS.lock().insert(tid, value);
    }
    if old != 0 {
        let [sp, size, flags] = current;
        let flags = if size == 0 { SS_DISABLE } else { flags };
        uaccess::write::<[u64; 3]>(old, [sp, flags, size])?;
    }
    Ok(0)
}

/// Forgets an exiting thread's alternate signal stack.
pub fn thread_exited(tid: u32) {
    ALT_STACKS.lock().remove(&tid);
}

/// Acts on a signal sent to this process: ignored, left pending while the sending thread
/// blocks it, or fatal.
fn send_to_self(sig: u64) -> SysResult {
    if sig == 0 {
        return Ok(0);
    }
    if !(1..=64).contains(&sig) {
        return Err(EINVAL);
    }
    if sig != SIGKILL && sig != SIGSTOP && current_mask() & bit(sig) != 0 {
        let h = handler(sig);
        if h != SIG_IGN && !(h == SIG_DFL && ignored_by_default(sig)) {
            PENDING.fetch_or(bit(sig), Ordering::SeqCst);
        }
        return Ok(0);
    }
    act(sig)
}

/// What an unblocked signal does to the program now.
fn act(sig: u64) -> SysResult {
    let handler = handler(sig);
    if handler == SIG_IGN && sig != SIGKILL {
        return Ok(0);
    }
    if handler == SIG_DFL && ignored_by_default(sig) {
        return Ok(0);
    }
    if handler > SIG_IGN {
        kprintln!("hrt: signal {sig} has a handler, but HRT does not deliver signals yet: terminating");
    }
    fault::terminate(sig as i32, None)
}

/// A forwarded write met a pipe without readers (EPIPE): Linux raises SIGPIPE, which ends a
/// program that neither ignores, blocks nor handles it (status 141, no message, as a shell
/// reports it). Ignored or blocked (then pending), the call just fails with EPIPE; with a
/// handler too, after a trace line, since handlers are not delivered yet.
pub fn broken_pipe() {
    let h = handler(SIGPIPE);
    if h > SIG_IGN && current_mask() & bit(SIGPIPE) == 0 {
        kprintln!("hrt: SIGPIPE has a handler, but HRT does not deliver signals yet: the write returns EPIPE");
        return;
    }
    let _ = send_to_self(SIGPIPE);
}

fn is_us(pid: u64) -> bool {
    let p = pid as i64;
    p == 0 || p == -1 || p as u32 == process::pid()
}

pub fn kill(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    if !is_us(a[0]) {
        return Err(ESRCH);
    }
    send_to_self(a[1])
}

pub fn tgkill(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    if a[0] as u32 != process::pid() {
        return Err(ESRCH);
    }
    send_to_self(a[2])
}

pub fn tkill(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    send_to_self(a[1])
}
