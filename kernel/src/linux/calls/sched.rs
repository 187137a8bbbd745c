//! Scheduling policies. The program's threads are the kernel's, run by its own scheduler; to
//! the program they are SCHED_OTHER threads of priority 0 (what sched_getscheduler and
//! sched_getparam answer), with the program's niceness, which the host performs (`hrt`'s
//! threads carry it: info.rs's priority calls). SCHED_BATCH and SCHED_IDLE, Linux's hints
//! that a thread wants throughput or only idle time, are accepted and read back (for the whole
//! program, not per thread; `chrt -b`, `chrt -i`), and change nothing in this scheduler; the
//! threads of `hrt` take the policy on the host (`mirror_on_host`), so that the host schedules
//! the program as it asked, the host programs it starts inherit it and other processes read
//! it for the program's pid, as on Linux; a real-time or
//! deadline policy is ENOSYS with a line (the kernel's scheduler has no such classes), after
//! Linux's own argument checks. Another process's policy is the host's: read and set there,
//! with the host's checks and permissions (for another HRT process, its `hrt`'s).

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::arch::traps::TrapFrame;
use crate::linux::errno::{SysResult, E2BIG, EACCES, EINVAL, ENOSYS, EPERM};
use crate::linux::uaccess;

const PRIO_PROCESS: u64 = 0;
const SCHED_OTHER: u64 = 0;
const SCHED_FIFO: u64 = 1;
const SCHED_RR: u64 = 2;
const SCHED_BATCH: u64 = 3;
const SCHED_IDLE: u64 = 5;

/// The program's policy as it set it: SCHED_OTHER, SCHED_BATCH or SCHED_IDLE. Kept over fork
/// and exec, as Linux keeps a thread's.
static POLICY: AtomicU64 = AtomicU64::new(SCHED_OTHER);
/// Whether `POLICY` holds the program's policy: it starts as the one `hrt` was started with
/// (`chrt -i 0 hrt run prog`, or a child `hrt` that inherits its parent's: `own_policy`).
static POLICY_KNOWN: AtomicBool = AtomicBool::new(false);

/// The program's policy; the first time, the host's for `hrt` (SCHED_OTHER, BATCH or IDLE;
/// another is SCHED_OTHER here).
fn own_policy() -> u64 {
    if !POLICY_KNOWN.load(Ordering::Relaxed) {
        let host = host_attr(crate::linux::process::pid() as u64).map(|(p, _)| p as u64 & !RESET_ON_FORK);
        let policy = host.ok().filter(|p| matches!(*p, SCHED_OTHER | SCHED_BATCH | SCHED_IDLE)).unwrap_or(SCHED_OTHER);
        if POLICY_KNOWN.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            POLICY.store(policy, Ordering::Relaxed);
        }
    }
    POLICY.load(Ordering::Relaxed)
}

/// The program set its policy.
fn set_own_policy(policy: u64) {
    POLICY.store(policy, Ordering::Relaxed);
    POLICY_KNOWN.store(true, Ordering::SeqCst);
    mirror_on_host(policy);
}
/// SCHED_RESET_ON_FORK, or'ed into sched_setscheduler's policy.
const RESET_ON_FORK: u64 = 0x4000_0000;

/// Whether `policy` is one Linux knows (OTHER, FIFO, RR, BATCH, IDLE, DEADLINE).
fn known(policy: u64) -> bool {
    matches!(policy, 0..=3 | 5 | 6)
}

/// sched_get_priority_max(policy): 99 for the real-time policies, 0 for the others.
pub fn sched_get_priority_max(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    match a[0] as i32 as i64 as u64 {
        SCHED_FIFO | SCHED_RR => Ok(99),
        p if known(p) => Ok(0),
        _ => Err(EINVAL),
    }
}

/// sched_get_priority_min(policy): 1 for the real-time policies, 0 for the others.
pub fn sched_get_priority_min(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    match a[0] as i32 as i64 as u64 {
        SCHED_FIFO | SCHED_RR => Ok(1),
        p if known(p) => Ok(0),
        _ => Err(EINVAL),
    }
}

/// sched_setscheduler(pid, policy, param): SCHED_OTHER with priority 0 for the program is
/// what it has; another process's policy is set by the host.
pub fn sched_setscheduler(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    set_policy(a[0], Some(a[1]), a[2])
}

/// sched_setparam(pid, param): priority 0 is what the program has.
pub fn sched_setparam(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    set_policy(a[0], None, a[1])
}

fn set_policy(pid: u64, policy: Option<u64>, param: u64) -> SysResult {
    let pid = pid as i32;
    let raw_policy = policy;
    let policy = policy.map(|p| p as i32 as i64 as u64 & !RESET_ON_FORK);
    if param == 0 || pid < 0 || policy.is_some_and(|p| !known(p)) {
        return Err(EINVAL);
    }
    let prio = uaccess::read::<i32>(param)?;
    if pid != 0 && !crate::linux::signal::is_program_thread(pid as u32) {
        // Another process: the host's call (monitor owners.rs), which looks for the process
        // (ESRCH) before it checks the priority, as Linux does.
        return match raw_policy {
            Some(p) => forwarded(linux_raw_sys::general::__NR_sched_setscheduler, [pid as u64, p, param]),
            None => forwarded(linux_raw_sys::general::__NR_sched_setparam, [pid as u64, param, 0]),
        };
    }
    let policy = policy.unwrap_or(SCHED_OTHER);
    if matches!(policy, SCHED_FIFO | SCHED_RR) && !(1..=99).contains(&prio)
        || !matches!(policy, SCHED_FIFO | SCHED_RR) && prio != 0
    {
        return Err(EINVAL);
    }
    if !matches!(policy, SCHED_OTHER | SCHED_BATCH | SCHED_IDLE) {
        return unsupported_sched("a real-time or deadline scheduling policy");
    }
    set_own_policy(policy);
    Ok(0)
}

/// Has every thread of `hrt` take `policy` (SCHED_OTHER, BATCH or IDLE) on the host: the monitor
/// takes a sched_setscheduler of the program's own pid for that (owners.rs). A refusal (the
/// host's rules for leaving SCHED_IDLE) leaves the host's policy as it was.
fn mirror_on_host(policy: u64) {
    let pid = crate::linux::process::pid() as u64;
    crate::linux::usermem::with_scratch(|param| {
        if uaccess::write::<i32>(param, 0).is_err() {
            return 0;
        }
        crate::linux::syscall::forward(
            linux_raw_sys::general::__NR_sched_setscheduler as u64,
            [pid, policy, param, 0, 0, 0],
        )
    });
}

pub fn sched_getparam(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    if a[1] == 0 || (a[0] as i32) < 0 {
        return Err(EINVAL);
    }
    let priority = match other_process(a[0]) {
        true => host_attr(a[0])?.1,
        false => 0,
    };
    uaccess::write::<u32>(a[1], priority)?;
    Ok(0)
}

pub fn sched_getscheduler(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    if (a[0] as i32) < 0 {
        return Err(EINVAL);
    }
    match other_process(a[0]) {
        true => Ok(host_attr(a[0])?.0 as u64),
        false => Ok(own_policy()),
    }
}

/// Whether `pid` names another process than the program (0 and its threads' ids are its own).
fn other_process(pid: u64) -> bool {
    pid as u32 != 0 && !crate::linux::signal::is_program_thread(pid as u32)
}

/// Another process's policy (with SCHED_RESET_ON_FORK) and static priority, as the host's
/// sched_getattr answers them (ESRCH for none).
fn host_attr(pid: u64) -> Result<(u32, u32), u32> {
    const SIZE: u64 = 48;
    let r = crate::linux::usermem::with_scratch(|page| {
        let r = crate::linux::syscall::forward(
            linux_raw_sys::general::__NR_sched_getattr as u64,
            [pid, page, SIZE, 0, 0, 0],
        );
        if r < 0 {
            return r;
        }
        // SAFETY: the host wrote a struct sched_attr at the start of our scratch page: the
        // policy is its second word, the flags its second u64, the static priority its sixth
        // word.
        let (policy, flags, priority) = unsafe {
            (((page + 4) as *const u32).read(), ((page + 8) as *const u64).read(), ((page + 20) as *const u32).read())
        };
        // SCHED_FLAG_RESET_ON_FORK shows in the policy as SCHED_RESET_ON_FORK, as Linux's
        // sched_getscheduler answers it (the host's init has it).
        let policy = policy | if flags & 1 != 0 { RESET_ON_FORK as u32 } else { 0 };
        (policy as i64) << 32 | priority as i64
    });
    if r < 0 {
        return Err((-r) as u32);
    }
    Ok(((r >> 32) as u32, r as u32))
}

/// sched_rr_get_interval(pid, tp): performed by the host like `sched_getattr` (a program
/// thread's id means the program, whose time slice is `hrt`'s main thread's).
pub fn sched_rr_get_interval(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let mut a = a;
    if (a[0] as i32) < 0 {
        return Err(EINVAL);
    }
    if crate::linux::signal::is_program_thread(a[0] as u32) {
        a[0] = 0;
    }
    let r = crate::linux::syscall::forward(linux_raw_sys::general::__NR_sched_rr_get_interval as u64, a);
    if r < 0 {
        return Err((-r) as u32);
    }
    Ok(r as u64)
}

/// sched_getattr(pid, attr, size, flags): performed by the host like `getpriority` (a program
/// thread's id means the program, whose attributes are `hrt`'s main thread's: SCHED_OTHER, as
/// sched_getscheduler says, with the program's niceness and the host's time slice).
pub fn sched_getattr(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let mut a = a;
    let own = a[0] as u32 == 0 || crate::linux::signal::is_program_thread(a[0] as u32);
    if own {
        a[0] = 0;
    }
    let r = crate::linux::syscall::forward(linux_raw_sys::general::__NR_sched_getattr as u64, a);
    if r < 0 {
        return Err((-r) as u32);
    }
    if own {
        // The policy is the program's (sched_attr's second word), not `hrt`'s thread's.
        uaccess::write::<u32>(a[1] + 4, own_policy() as u32)?;
    }
    Ok(r as u64)
}

/// sched_setattr(pid, attr, flags): for the program itself, SCHED_OTHER with a niceness (set
/// as `setpriority` sets it, clamped to -20..19 as Linux clamps it) or with SCHED_FLAG_KEEP_*;
/// another policy or flags HRT does not keep (utilization clamps, reset on fork) are ENOSYS
/// with a line, as sched_setscheduler is; another process's are the host's. Linux's argument
/// checks first.
pub fn sched_setattr(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    const VER0: u32 = 48;
    const VER1: u32 = 56;
    const KEEP_POLICY: u64 = 0x08;
    const KEEP_PARAMS: u64 = 0x10;
    let (pid, attr, flags) = (a[0] as i32, a[1], a[2]);
    if attr == 0 || pid < 0 || flags != 0 {
        return Err(EINVAL);
    }
    let mut size = uaccess::read::<u32>(attr)?;
    if size == 0 {
        size = VER0;
    }
    let bad_size = size < VER0 || size as u64 > crate::linux::usermem::PAGE;
    if bad_size || size > VER1 && uaccess::slice(attr + VER1 as u64, (size - VER1) as u64)?.iter().any(|&b| b != 0) {
        uaccess::write::<u32>(attr, VER1)?;
        return Err(E2BIG);
    }

    let head = uaccess::read::<[u32; 6]>(attr)?;
    let (policy, sflags, nice, prio) = (head[1], head[2] as u64 | (head[3] as u64) << 32, head[4] as i32, head[5]);
    if pid != 0 && !crate::linux::signal::is_program_thread(pid as u32) {
        // Another process: the host's call (monitor owners.rs), with Linux's checks.
        return forwarded(linux_raw_sys::general::__NR_sched_setattr, [pid as u64, attr, flags]);
    }
    // SCHED_OTHER, FIFO, RR, BATCH, IDLE, DEADLINE.
    if !matches!(policy, 0..=3 | 5 | 6) {
        return Err(EINVAL);
    }
    let policy = policy as u64;
    let normal = matches!(policy, SCHED_OTHER | SCHED_BATCH | SCHED_IDLE);
    if !normal || prio != 0 || sflags & !(KEEP_POLICY | KEEP_PARAMS) != 0 {
        return unsupported_sched("sched_setattr to a real-time or deadline policy");
    }
    if sflags & KEEP_POLICY == 0 {
        set_own_policy(policy);
    }
    if sflags & KEEP_PARAMS != 0 {
        return Ok(0);
    }
    let nice = nice.clamp(-20, 19);
    let r = crate::linux::syscall::forward(
        linux_raw_sys::general::__NR_setpriority as u64,
        [PRIO_PROCESS, 0, nice as i64 as u64, 0, 0, 0],
    );
    match r {
        0 => Ok(0),
        r if r == -(EACCES as i64) => Err(EPERM),
        r => Err((-r) as u32),
    }
}

/// The host's answer to call `nr` (one of those the monitor performs for another process).
fn forwarded(nr: u32, a: [u64; 3]) -> SysResult {
    let r = crate::linux::syscall::forward(nr as u64, [a[0], a[1], a[2], 0, 0, 0]);
    if r < 0 {
        return Err((-r) as u32);
    }
    Ok(r as u64)
}

fn unsupported_sched(what: &str) -> SysResult {
    static SAID: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, core::sync::atomic::Ordering::Relaxed) {
        crate::kprintln!("hrt: {what} is not implemented: returning ENOSYS (reported once)");
    }
    Err(ENOSYS)
}
