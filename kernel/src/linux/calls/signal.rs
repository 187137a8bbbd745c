//! Signals: handlers and masks are recorded; a signal the program sends itself that would
//! terminate it (abort's SIGABRT included) ends the program with status 128 + signal and the
//! shell's message. Delivery to handlers is not implemented yet.

use alloc::collections::BTreeMap;

use crate::arch::traps::TrapFrame;
use crate::linux::errno::{SysResult, EINVAL, ENOMEM, ESRCH};
use crate::linux::process::{self, PROCESS};
use crate::linux::{fault, uaccess};
use crate::sched;
use crate::sync::IrqSpinLock;

const SIG_IGN: u64 = 1;

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
    }
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

/// Acts on a signal sent to this process.
fn send_to_self(sig: u64) -> SysResult {
    if sig == 0 {
        return Ok(0);
    }
    if !(1..=64).contains(&sig) {
        return Err(EINVAL);
    }
    let handler = PROCESS.sigactions.lock()[sig as usize][0];
    if handler == SIG_IGN && sig != 9 {
        return Ok(0);
    }
    match sig {
        // Ignored by default.
        17 | 23 | 28 | 18 => Ok(0),
        _ => {
            if handler > SIG_IGN {
                kprintln!("hrt: signal {sig} has a handler, but HRT does not deliver signals yet: terminating");
            }
            fault::terminate(sig as i32, None)
        }
    }
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
