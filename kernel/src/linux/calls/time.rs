//! Clocks and sleeping. REALTIME is the host's wall clock at boot plus the TSC since; the
//! CPU-time clocks count the time the scheduler ran the thread (or the program's threads), see
//! linux::cputime.

use crate::arch::traps::TrapFrame;
use crate::linux::cputime::{self, CpuClock};
use crate::linux::errno::{SysResult, EINTR, EINVAL, EOPNOTSUPP, EPERM};
use crate::linux::uaccess;
use crate::sched;
use crate::time;

const CLOCK_REALTIME: u64 = 0;
const CLOCK_MONOTONIC: u64 = 1;
const CLOCK_MONOTONIC_RAW: u64 = 4;
const CLOCK_REALTIME_COARSE: u64 = 5;
const CLOCK_MONOTONIC_COARSE: u64 = 6;
const CLOCK_BOOTTIME: u64 = 7;
const CLOCK_TAI: u64 = 11;
const CLOCK_REALTIME_ALARM: u64 = 8;
const CLOCK_BOOTTIME_ALARM: u64 = 9;
const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
const TIMER_ABSTIME: u64 = 1;

/// The host's (CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_MONOTONIC_RAW) at the
/// kernel's time zero,
/// from the monitor's reading of them at a known guest TSC (monitor/src/vm/host_clocks.rs):
/// the program's clocks are the host's, as every process's are on Linux.
pub fn host_bases() -> [u64; 4] {
    let b = crate::bootinfo::get();
    let (zero_tsc, _) = time::tsc_parameters();
    // Time between the monitor's reading and the kernel's time zero (none if not read).
    let gap = if b.wallclock_tsc != 0 && b.wallclock_tsc <= zero_tsc {
        time::ticks_to_ns(zero_tsc - b.wallclock_tsc)
    } else {
        0
    };
    [b.wallclock_ns + gap, b.monotonic_ns + gap, b.boottime_ns + gap, b.monotonic_raw_ns + gap]
}

/// How far the program moved the realtime clock from the host's at time zero
/// (`set_realtime`), in nanoseconds.
static WALL_ADJUST: core::sync::atomic::AtomicI64 = core::sync::atomic::AtomicI64::new(0);

/// CLOCK_REALTIME at the kernel's time zero: the host's then, moved by the program's settings.
pub fn wall_base_ns() -> u64 {
    (host_bases()[0] as i64).wrapping_add(WALL_ADJUST.load(core::sync::atomic::Ordering::Relaxed)) as u64
}

pub fn realtime_ns() -> u64 {
    wall_base_ns() + time::now_ns()
}

/// CLOCK_MONOTONIC: the host's.
pub fn monotonic_ns() -> u64 {
    host_bases()[1] + time::now_ns()
}

/// CLOCK_MONOTONIC_RAW: the host's (the kernel's own count from the TSC, not slewed, from the
/// host's reading at time zero; its CLOCK_MONOTONIC differed by 256 ms on this host).
pub fn monotonic_raw_ns() -> u64 {
    host_bases()[3] + time::now_ns()
}

/// CLOCK_BOOTTIME: the host's.
pub fn boottime_ns() -> u64 {
    host_bases()[2] + time::now_ns()
}

/// The time of `clock` in nanoseconds; None for an unknown clock (or the CPU clock of a
/// thread or process that is not the program's).
pub fn clock_ns(clock: u64) -> Option<u64> {
    if let Some(cpu) = cputime::decode(clock) {
        return cputime::ns(cpu.ok()?);
    }
    Some(match clock {
        CLOCK_REALTIME | CLOCK_REALTIME_COARSE => realtime_ns(),
        CLOCK_MONOTONIC | CLOCK_MONOTONIC_COARSE => monotonic_ns(),
        CLOCK_MONOTONIC_RAW => monotonic_raw_ns(),
        CLOCK_BOOTTIME => boottime_ns(),
        CLOCK_TAI => realtime_ns() + crate::bootinfo::get().tai_offset_s * 1_000_000_000,
        _ => return None,
    })
}

fn write_timespec(addr: u64, ns: u64) -> Result<(), u32> {
    uaccess::write::<[i64; 2]>(addr, [(ns / 1_000_000_000) as i64, (ns % 1_000_000_000) as i64])
}

fn read_timespec(addr: u64) -> Result<u64, u32> {
    let [s, ns] = uaccess::read::<[i64; 2]>(addr)?;
    if s < 0 || !(0..1_000_000_000).contains(&ns) {
        return Err(EINVAL);
    }
    Ok((s as u64).saturating_mul(1_000_000_000).saturating_add(ns as u64))
}

pub fn clock_gettime(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let Some(ns) = clock_ns(a[0]) else { return of_another_process(linux_raw_sys::general::__NR_clock_gettime, a) };
    write_timespec(a[1], ns)?;
    Ok(0)
}

/// clock_gettime or clock_getres (`nr`) of another process's CPU clock: the host's answer
/// (glibc's `clock_getcpuclockid` of another pid asks clock_getres whether it exists); EINVAL
/// for any other clock the kernel does not know.
fn of_another_process(nr: u32, a: [u64; 6]) -> SysResult {
    if !cputime::of_another_process(a[0]) {
        return Err(EINVAL);
    }
    let r = crate::linux::syscall::forward(nr as u64, a);
    if r < 0 {
        return Err((-r) as u32);
    }
    Ok(r as u64)
}

/// clock_getres: 1 ns for the clocks counted from the TSC, the host's tick for the coarse ones
/// (which Linux updates only at each tick).
pub fn clock_getres(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    if clock_ns(a[0]).is_none() {
        return of_another_process(linux_raw_sys::general::__NR_clock_getres, a);
    }
    if a[1] != 0 {
        let coarse = crate::bootinfo::get().coarse_res_ns.max(1);
        // A CPU clock that counts at the tick (the PROF and VIRT kinds, low bits 0 and 1, of a
        // process's or thread's id) has Linux's tick as its resolution; the SCHED kind (and
        // CLOCK_PROCESS/THREAD_CPUTIME_ID) 1 ns.
        let id = a[0] as i32;
        let ticking = id < 0 && id & 3 < 2;
        let res = if matches!(a[0], CLOCK_REALTIME_COARSE | CLOCK_MONOTONIC_COARSE) {
            coarse
        } else if ticking {
            crate::linux::signal::timers::CPU_TIMER_TICK_NS
        } else {
            1
        };
        write_timespec(a[1], res)?;
    }
    Ok(0)
}

/// The latest time Linux lets the clock be set to (`timespec64_valid_settod`: KTIME_SEC_MAX
/// less 30 years of uptime).
const TIME_SETTOD_SEC_MAX: i64 = i64::MAX / 1_000_000_000 - 30 * 365 * 86_400;
const CAP_SYS_TIME: u32 = 25;

/// clock_settime(clock, tp) as Linux answers it: EINVAL for a clock that cannot be set,
/// EFAULT, EPERM for a CPU-time clock, EINVAL for a time out of range, EPERM without
/// CAP_SYS_TIME; then the host's realtime clock is set (the program's is the host's), and
/// the program's counts from the new time (`set_realtime`).
pub fn clock_settime(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let clock = a[0] as i32;
    // A process's or thread's CPU-time clock by id (negative, not a descriptor's: CLOCKFD is
    // 3 in the low three bits, as Linux's CLOCKFD_MASK reads them); CLOCK_PROCESS_CPUTIME_ID
    // and CLOCK_THREAD_CPUTIME_ID cannot be set.
    let cpu = clock < 0 && clock & 7 != 3;
    if clock != CLOCK_REALTIME as i32 && !cpu {
        return Err(EINVAL);
    }
    let [s, ns] = uaccess::read::<[i64; 2]>(a[1])?;
    if cpu {
        // A CPU clock is never set (EPERM), once its id names a thread or process (else
        // EINVAL, as Linux's `validate_clock_permissions`); another process's the host knows.
        return match cputime::decode(a[0]) {
            Some(Ok(_)) => Err(EPERM),
            _ if cputime::of_another_process(a[0]) => {
                of_another_process(linux_raw_sys::general::__NR_clock_getres, [a[0], 0, 0, 0, 0, 0])?;
                Err(EPERM)
            }
            _ => Err(EINVAL),
        };
    }
    set_realtime(s, ns, || {
        crate::linux::syscall::forward(linux_raw_sys::general::__NR_clock_settime as u64, [a[0], a[1], 0, 0, 0, 0])
    })
}

/// settimeofday(tv, tz), as `clock_settime`: EFAULT, EINVAL for microseconds out of range or a
/// time out of range, EPERM without CAP_SYS_TIME, EINVAL for a time zone beyond 15 hours;
/// then the host's clock (and time zone) are set.
pub fn settimeofday(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let tv = if a[0] != 0 { Some(uaccess::read::<[i64; 2]>(a[0])?) } else { None };
    if let Some([_, us]) = tv {
        if !(0..=1_000_000).contains(&us) {
            return Err(EINVAL);
        }
    }
    let tz = if a[1] != 0 { Some(uaccess::read::<[i32; 2]>(a[1])?) } else { None };
    if let Some([s, us]) = tv {
        if !settable(s, us.saturating_mul(1000)) {
            return Err(EINVAL);
        }
    }
    if !super::ids::capable(CAP_SYS_TIME) {
        return Err(EPERM);
    }
    if tz.is_some_and(|[west, _]| !(-15 * 60..=15 * 60).contains(&west)) {
        return Err(EINVAL);
    }
    if tv.is_none() && tz.is_none() {
        return Ok(0);
    }
    let on_host =
        || crate::linux::syscall::forward(linux_raw_sys::general::__NR_settimeofday as u64, [a[0], a[1], 0, 0, 0, 0]);
    match tv {
        Some([s, us]) => set_realtime(s, us * 1000, on_host),
        None => to_result(on_host()),
    }
}

/// A forwarded call's answer as a result.
fn to_result(r: i64) -> SysResult {
    u64::try_from(r).map_err(|_| (-r) as u32)
}

/// Whether Linux lets the realtime clock be set to `s` seconds and `ns` nanoseconds.
fn settable(s: i64, ns: i64) -> bool {
    (0..TIME_SETTOD_SEC_MAX).contains(&s) && (0..1_000_000_000).contains(&ns)
}

/// The realtime clock set to `s`, `ns` (`clock_settime`, `settimeofday`): the checks, then
/// the host's clock set (`on_host`, the forwarded call), then the program's realtime clock
/// (the kernel's and the vDSO's) moved to count from the new time. Other processes see the
/// host's, as on Linux; the program's other clocks do not move (neither do Linux's).
fn set_realtime(s: i64, ns: i64, on_host: impl FnOnce() -> i64) -> SysResult {
    if !settable(s, ns) {
        return Err(EINVAL);
    }
    if !super::ids::capable(CAP_SYS_TIME) {
        return Err(EPERM);
    }
    to_result(on_host())?;
    let wanted = (s as u64).saturating_mul(1_000_000_000).saturating_add(ns as u64);
    let adjust = (wanted as i64).wrapping_sub(host_bases()[0] as i64).wrapping_sub(time::now_ns() as i64);
    WALL_ADJUST.store(adjust, core::sync::atomic::Ordering::Relaxed);
    crate::linux::vdso::set_wall_base(wall_base_ns());
    Ok(0)
}

pub fn gettimeofday(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    if a[0] != 0 {
        let ns = realtime_ns();
        uaccess::write::<[i64; 2]>(a[0], [(ns / 1_000_000_000) as i64, ((ns % 1_000_000_000) / 1000) as i64])?;
    }
    if a[1] != 0 {
        uaccess::write::<[i32; 2]>(a[1], [0, 0])?;
    }
    Ok(0)
}

pub fn time(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let s = realtime_ns() / 1_000_000_000;
    if a[0] != 0 {
        uaccess::write::<i64>(a[0], s as i64)?;
    }
    Ok(s)
}

pub fn nanosleep(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let ns = read_timespec(a[0])?;
    interrupted_sleep(ns, a[1])
}

/// Sleeps `ns`; a signal the thread does not block ends the sleep with EINTR, the time left
/// written to `rem` (when not 0), as Linux's nanosleep does when a handler runs.
fn interrupted_sleep(ns: u64, rem: u64) -> SysResult {
    let Err(left) = sleep(ns) else { return Ok(0) };
    if rem != 0 {
        write_timespec(rem, left)?;
    }
    Err(EINTR)
}

/// clock_nanosleep(clock, flags, request, remain): on the wall clocks, or until a CPU clock
/// (the program's, or another of its threads') has counted the time, with Linux's errors:
/// EOPNOTSUPP for the clocks Linux cannot sleep on (CLOCK_THREAD_CPUTIME_ID among them),
/// EINVAL for the caller's own thread clock by id and for unknown clocks.
pub fn clock_nanosleep(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (clock, abs, req) = (a[0], a[1] & TIMER_ABSTIME != 0, a[2]);
    // Linux writes the time left only for a relative sleep.
    let rem = if abs { 0 } else { a[3] };
    // Linux's order: the clock's kind (EINVAL for none, EOPNOTSUPP for one that cannot be
    // slept on: a descriptor's clock, the raw and coarse ones, the thread CPU clock), the
    // request (EFAULT, EINVAL), then the clock itself (a CPU clock's id, the alarm clocks'
    // missing RTC).
    let id = clock as i32;
    if id < 0 && id & 7 == 3 || id == CLOCK_THREAD_CPUTIME_ID {
        return Err(EOPNOTSUPP);
    }
    if id >= 0 {
        // (2 is CLOCK_PROCESS_CPUTIME_ID.)
        match id as u64 {
            CLOCK_REALTIME | CLOCK_MONOTONIC | CLOCK_BOOTTIME | CLOCK_TAI | 2 => {}
            CLOCK_REALTIME_ALARM | CLOCK_BOOTTIME_ALARM => {}
            CLOCK_MONOTONIC_RAW | CLOCK_REALTIME_COARSE | CLOCK_MONOTONIC_COARSE => return Err(EOPNOTSUPP),
            _ => return Err(EINVAL),
        }
    }
    let t = read_timespec(req)?;
    if id >= 0 && matches!(id as u64, CLOCK_REALTIME_ALARM | CLOCK_BOOTTIME_ALARM) {
        return Err(EOPNOTSUPP);
    }
    let cpu = match cputime::decode(clock) {
        Some(Ok(CpuClock::Thread(tid))) if tid == crate::linux::process::current_tid() => return Err(EINVAL),
        Some(c) => Some(c?),
        None => None,
    };
    let Some(cpu) = cpu else {
        let ns = if abs { t.saturating_sub(clock_ns(clock).ok_or(EINVAL)?) } else { t };
        return interrupted_sleep(ns, rem);
    };
    // A CPU clock: look at it whenever it could have reached the deadline. A thread that has
    // exited counts no more: the sleep ends. The process clock counts without what this
    // thread spends looking (on Linux it sleeps and adds nothing): alone, it woke itself after
    // ~1 s of its own checks where Linux sleeps for good.
    let me = cputime::thread_ns();
    let counted = || {
        let looking = if matches!(cpu, CpuClock::Process) { cputime::thread_ns().saturating_sub(me) } else { 0 };
        cputime::ns(cpu).map(|now| now.saturating_sub(looking))
    };
    let Some(now) = counted() else { return Ok(0) };
    let deadline = if abs { t } else { now.saturating_add(t) };
    while let Some(now) = counted().filter(|&now| now < deadline) {
        if sleep(cputime::wall_wait(cpu, deadline - now)).is_err() {
            if rem != 0 {
                let left = counted().map_or(0, |now| deadline.saturating_sub(now));
                write_timespec(rem, left)?;
            }
            return Err(EINTR);
        }
    }
    Ok(0)
}

/// Sleeps `ns` (which the program chose: a huge value sleeps for good instead of wrapping).
/// A signal the thread does not block cuts it short: Err(nanoseconds left).
fn sleep(ns: u64) -> Result<(), u64> {
    let since = time::ticks();
    let deadline = since.saturating_add(time::ns_to_ticks(ns));
    while time::ticks() < deadline {
        // SAFETY: the current thread's record is alive; nothing else wakes it but the timer and
        // a signal.
        unsafe { (*sched::current()).state.store(sched::thread::BLOCKING, core::sync::atomic::Ordering::SeqCst) };
        crate::linux::signal::state::interruptible_begin();
        sched::block_until(deadline);
        if crate::linux::signal::state::interruptible_end() {
            return Err(time::ticks_to_ns(deadline.saturating_sub(time::ticks())));
        }
    }
    // The program's other threads on this vCPU get their turn even if the sleep ended before
    // the thread left it (see `give_way_since`).
    sched::sleep::give_way_since(since);
    Ok(())
}

/// timerfd_settime(fd, flags, new, old): a timerfd is the host's (the monitor performs the
/// call), and an absolute time (`TFD_TIMER_ABSTIME`) is on the program's clocks, which are the
/// host's as read at boot and counted on from the TSC since (`host_bases`). So the call goes
/// on with the program's monotonic and real-time "now" in the two argument slots the call does
/// not use, and the monitor moves the deadline to the host's clock of the timer by whatever
/// difference there is.
pub fn timerfd_settime(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let mut a = a;
    a[4] = monotonic_ns();
    a[5] = realtime_ns();
    let r = crate::linux::syscall::forward(linux_raw_sys::general::__NR_timerfd_settime as u64, a);
    if r < 0 {
        Err((-r) as u32)
    } else {
        Ok(r as u64)
    }
}
