//! Timers that send signals: alarm and setitimer (ITIMER_REAL's SIGALRM, and the CPU-time
//! timers ITIMER_VIRTUAL's SIGVTALRM and ITIMER_PROF's SIGPROF), and POSIX timers (timer_create
//! with SIGEV_SIGNAL, SIGEV_THREAD_ID or SIGEV_NONE on CLOCK_REALTIME, CLOCK_MONOTONIC and the
//! CPU-time clocks). Each armed timer has a kernel thread that sleeps until the deadline on the
//! scheduler's sleep list and sends the signal; re-arming wakes it.
//!
//! A CPU-time timer's deadline is the earliest moment its clock could reach the expiry (the CPU
//! time still to run, divided by the number of CPUs for the program's clock); there it reads
//! the clock again and either expires or sets the next such deadline, at least `MIN_CHECK_NS`
//! later (`cputime::wall_wait`). It therefore expires at most about 50 us of wall time after its
//! clock has reached the expiry (see linux::cputime for how the clock itself is counted).

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::state::{self, SigInfo};
use crate::arch::traps::TrapFrame;
use crate::linux::cputime::{self, CpuClock};
use crate::linux::errno::{SysResult, EAGAIN, EINVAL, EOPNOTSUPP};
use crate::linux::uaccess;
use crate::sched::{self, Thread};
use crate::sync::IrqSpinLock;
use crate::time;

const SIGALRM: u64 = 14;
const SIGVTALRM: u64 = 26;
const SIGPROF: u64 = 27;
const SIGXCPU: u64 = 24;
const SIGEV_SIGNAL: u32 = 0;
const SIGEV_NONE: u32 = 1;
/// Carried out by libc (a thread of its own); the kernel takes it as SIGEV_SIGNAL, as Linux's
/// `good_sigevent` does.
const SIGEV_THREAD: u32 = 2;
const SIGEV_THREAD_ID: u32 = 4;
const TIMER_ABSTIME: u64 = 1;
const CLOCK_REALTIME: u64 = 0;
const ITIMER_REAL: u64 = 0;
const ITIMER_VIRTUAL: u64 = 1;
const ITIMER_PROF: u64 = 2;
/// Slots 0-2 are setitimer's (ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF), 3 and 4 RLIMIT_CPU's
/// (`CPU_SOFT`, `CPU_HARD`); POSIX timer ids are slot numbers from here.
const FIRST_POSIX: usize = 5;
/// RLIMIT_CPU's soft limit: SIGXCPU once the program's CPU time reaches it, then every second,
/// each time one second more in the soft limit the program reads back (as Linux does), until
/// the hard limit.
const CPU_SOFT: usize = 3;
/// RLIMIT_CPU's hard limit: SIGKILL once the program's CPU time reaches it.
const CPU_HARD: usize = 4;
const NS_PER_SEC: u64 = 1_000_000_000;
/// How often an interval CPU-time timer may expire at most: Linux's tick (CONFIG_HZ=250, the
/// Debian kernels'), where it looks at CPU timers; the expiries an interval below it misses
/// count as overruns (POSIX timers) or are merged (setitimer's), as on Linux.
pub const CPU_TIMER_TICK_NS: u64 = 4_000_000;
/// Timer slots at most (setitimer's and RLIMIT_CPU's five included): past them timer_create is
/// EAGAIN. Linux bounds POSIX timers by RLIMIT_SIGPENDING (tens of thousands); here each armed
/// timer has a kernel thread (32 KiB), so 4,091 armed timers hold 128 MiB of the kernel's
/// memory. With 256, timer_create failed at the 252nd timer.
const MAX_TIMERS: usize = 4096;

#[derive(Clone, Copy)]
struct Timer {
    /// Monotonic nanoseconds of the next expiry (for a CPU-time timer: of the next look at its
    /// clock); 0 = disarmed.
    deadline: u64,
    /// The expiry in the timer's clock: monotonic nanoseconds, or CPU time for a CPU timer.
    expiry: u64,
    /// The CPU time the timer counts, None for the wall-clock timers.
    cpu: Option<CpuClock>,
    interval: u64,
    signo: u64,
    /// Thread to signal (SIGEV_THREAD_ID), 0 = the process; None = no signal (SIGEV_NONE).
    target: Option<u32>,
    value: u64,
    /// Expiries missed before the timer was armed (an absolute start already past), counted
    /// into its first signal's overrun.
    missed_before: u64,
    /// The timer's kernel thread once started.
    worker: *mut Thread,
    deleted: bool,
    clock: u64,
    /// An interval timer on a wall clock whose expiry merged into its signal still pending: it
    /// waits (deadline 0) until that signal is taken (`signal_taken`), as Linux re-arms its
    /// timers when their signal is dequeued. Expiring on meanwhile at a short interval woke its
    /// thread for nothing each time (a 10 us POSIX timer left the program no time to run).
    dormant: bool,
}

// SAFETY: `worker` is only used to wake the worker, which stays alive while its slot exists.
unsafe impl Send for Timer {}

/// Where timer_create looks for a free slot first (the one after the last it gave).
static NEXT_POSIX_ID: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(FIRST_POSIX);

/// Slots 0-2 are the setitimer timers; POSIX timer ids are slot numbers from FIRST_POSIX.
static TIMERS: IrqSpinLock<Vec<Option<Timer>>> = IrqSpinLock::new(Vec::new());

/// Each POSIX timer's overrun count of its last signal taken by the program (what
/// timer_getoverrun answers, Linux's `it_overrun_last`): set as the signal is dequeued, under
/// the signal state's lock, so not in `TIMERS`.
static LAST_OVERRUN: [AtomicU32; MAX_TIMERS] = [const { AtomicU32::new(0) }; MAX_TIMERS];

/// A POSIX timer's siginfo word (timer id, and the overrun count above it) with `more`
/// expiries added to its overrun count, which stops at DELAYTIMER_MAX (i32::MAX) as Linux's.
pub fn with_overrun(word: u64, more: u64) -> u64 {
    let overrun = (word >> 32).saturating_add(more).min(i32::MAX as u64);
    word as u32 as u64 | overrun << 32
}

/// The expiries of the interval timer in siginfo word `word` that are due by now but that its
/// kernel thread has not taken yet (a loaded host may run it late), taken here: the signal
/// being dequeued counts them as overruns, as Linux's, whose timer interrupt comes on time,
/// would have merged them into it. Called under the signal state's lock (which the timer
/// thread never holds while it holds `TIMERS`).
pub fn catch_up(word: u64) -> u64 {
    let mut timers = TIMERS.lock();
    let Some(Some(tm)) = timers.get_mut(word as u32 as usize) else { return 0 };
    if tm.deleted || tm.interval == 0 || tm.deadline == 0 && !tm.dormant || tm.cpu.is_some() {
        return 0;
    }
    let now = time::now_ns();
    if now < tm.expiry {
        return 0;
    }
    let due = (now - tm.expiry) / tm.interval + 1;
    tm.expiry += due * tm.interval;
    tm.deadline = tm.expiry;
    let woken = wake_dormant(tm);
    update_next(&timers);
    drop(timers);
    wake_worker(woken);
    due
}

/// Timers waiting for their signal to be taken (`Timer::dormant`).
static DORMANT: AtomicU32 = AtomicU32::new(0);

/// Signal `signo` was taken from a pending set (under the signal lock): the timers waiting for
/// it (`Timer::dormant`) run again from their next expiry on their interval's grid.
pub fn signal_taken(signo: u64) {
    if DORMANT.load(Ordering::SeqCst) == 0 {
        return;
    }
    let now = time::now_ns();
    let mut woken = Vec::new();
    {
        let mut timers = TIMERS.lock();
        for tm in timers.iter_mut().flatten().filter(|t| t.dormant && t.signo == signo) {
            if now >= tm.expiry {
                tm.expiry += ((now - tm.expiry) / tm.interval + 1) * tm.interval;
            }
            tm.deadline = tm.expiry;
            woken.push(wake_dormant(tm));
        }
        update_next(&timers);
    }
    for w in woken {
        wake_worker(w);
    }
}

/// Ends `tm`'s wait for its signal; its worker to wake, if it has one.
fn wake_dormant(tm: &mut Timer) -> *mut Thread {
    if !core::mem::take(&mut tm.dormant) {
        return core::ptr::null_mut();
    }
    DORMANT.fetch_sub(1, Ordering::SeqCst);
    tm.worker
}

fn wake_worker(worker: *mut Thread) {
    if !worker.is_null() && worker != STARTING {
        // SAFETY: a timer's worker lives as long as its slot.
        unsafe { sched::wake(worker) };
    }
}

/// The signal of timer `slot` merged into one still pending: an interval timer on a wall clock
/// waits for it to be taken (`Timer::dormant`). Called under the signal lock.
fn merged_into_pending(slot: usize) {
    let mut timers = TIMERS.lock();
    if let Some(Some(tm)) = timers.get_mut(slot) {
        if !tm.deleted && !tm.dormant && tm.cpu.is_none() && tm.interval != 0 && tm.deadline != 0 {
            tm.dormant = true;
            tm.deadline = 0;
            DORMANT.fetch_add(1, Ordering::SeqCst);
            update_next(&timers);
        }
    }
}

/// The program took a POSIX timer's signal with siginfo word `word` (`state::Pending::take`).
pub fn delivered(word: u64) {
    if let Some(last) = LAST_OVERRUN.get(word as u32 as usize) {
        last.store((word >> 32) as u32, Ordering::Relaxed);
    }
}

fn ns_from_timespec(t: [i64; 2]) -> Result<u64, u32> {
    if t[0] < 0 || !(0..1_000_000_000).contains(&t[1]) {
        return Err(EINVAL);
    }
    Ok((t[0] as u64).saturating_mul(1_000_000_000).saturating_add(t[1] as u64))
}

fn timespec(ns: u64) -> [i64; 2] {
    [(ns / 1_000_000_000) as i64, (ns % 1_000_000_000) as i64]
}

fn timeval(ns: u64) -> [i64; 2] {
    [(ns / 1_000_000_000) as i64, ((ns % 1_000_000_000) / 1000) as i64]
}

/// The timer's kernel thread: sleeps until the deadline, sends, re-arms intervals.
fn worker(slot: usize) -> u64 {
    loop {
        let mut timers = TIMERS.lock();
        let Some(Some(tm)) = timers.get_mut(slot) else { return 0 };
        if tm.deleted {
            timers[slot] = None;
            return 0;
        }
        let now = time::now_ns();
        if due(tm, now) {
            let sent = expire(slot, tm, now);
            update_next(&timers);
            drop(timers);
            send(slot, sent);
            continue;
        }
        let me = sched::current();
        tm.worker = me;
        // SAFETY: our own record; registered as the timer's worker, where re-arming finds it.
        unsafe { (*me).state.store(sched::thread::BLOCKING, Ordering::SeqCst) };
        let deadline = tm.deadline;
        drop(timers);
        if deadline == 0 {
            sched::block();
        } else {
            sched::block_until(time::ticks().saturating_add(time::ns_to_ticks(deadline.saturating_sub(now))));
        }
    }
}

/// The timer's clock now: monotonic nanoseconds, or the CPU time it counts (None once the
/// thread whose time it counts has exited).
fn clock_now(tm: &Timer, now: u64) -> Option<u64> {
    match tm.cpu {
        None => Some(now),
        Some(c) => cputime::ns(c),
    }
}

/// The monotonic time at which a timer whose clock needs `left` more nanoseconds could expire:
/// the program's CPU time runs at most as many times faster than the wall clock as there are
/// CPUs.
fn next_check(tm: &Timer, now: u64, left: u64) -> u64 {
    now.saturating_add(tm.cpu.map_or(left, |c| cputime::wall_wait(c, left)))
}

/// Whether `tm` expires at `now`. A CPU-time timer whose clock has not reached the expiry yet
/// moves its deadline to the next look; one whose thread has exited is disarmed.
fn due(tm: &mut Timer, now: u64) -> bool {
    if tm.deleted || tm.deadline == 0 || now < tm.deadline {
        return false;
    }
    match clock_now(tm, now) {
        Some(c) if c >= tm.expiry => true,
        Some(c) => {
            tm.deadline = next_check(tm, now, tm.expiry - c);
            false
        }
        None => {
            tm.deadline = 0;
            false
        }
    }
}

/// Takes an expiry of `tm` (slot `slot`), due at `now`: re-arms an interval timer (counting the
/// expiries missed as overruns) and returns the signal to send, its target and whether the
/// timer counts CPU time.
fn expire(slot: usize, tm: &mut Timer, now: u64) -> (SigInfo, Option<u32>, bool) {
    let c = clock_now(tm, now).unwrap_or(tm.expiry);
    let late = c.saturating_sub(tm.expiry);
    let mut overrun = core::mem::take(&mut tm.missed_before);
    if let Some(missed) = late.checked_div(tm.interval) {
        overrun += missed;
        tm.expiry += (missed + 1) * tm.interval;
        tm.deadline = next_check(tm, now, tm.expiry - c);
        if tm.cpu.is_some() {
            // At most one expiry per tick, as Linux checks CPU timers at its tick: ITIMER_PROF
            // at 1 us sent a signal every 50 us, whose delivery took longer (the program made
            // no progress and its alarm never ended it).
            tm.deadline = tm.deadline.max(now.saturating_add(CPU_TIMER_TICK_NS));
        }
    } else {
        tm.deadline = 0;
    }
    if slot == CPU_SOFT {
        crate::linux::calls::info::cpu_soft_limit_passed();
    }
    // The setitimer timers' and the CPU limit's signals come from the kernel (SI_KERNEL); POSIX
    // timers' are SI_TIMER.
    let info = if slot < FIRST_POSIX {
        SigInfo { signo: tm.signo as i32, code: super::SI_KERNEL, ..SigInfo::EMPTY }
    } else {
        SigInfo {
            signo: tm.signo as i32,
            code: super::SI_TIMER,
            w16: with_overrun(slot as u64, overrun),
            w24: tm.value,
            timer: true,
            ..SigInfo::EMPTY
        }
    };
    (info, tm.target, tm.cpu.is_some())
}

fn send(slot: usize, (info, target, cpu_time): (SigInfo, Option<u32>, bool)) {
    // ITIMER_REAL waits for its SIGALRM to be taken before it runs on, whether or not the
    // signal merged into one pending (Linux re-arms it when SIGALRM is dequeued: until then
    // getitimer and alarm say 0); the others only when their signal merged.
    let merged = |m: bool| {
        if m || slot == ITIMER_REAL as usize {
            merged_into_pending(slot);
        }
    };
    match target {
        Some(0) => {
            // A real-time signal that finds the queue full (state::Pending::add) is lost; Linux
            // preallocates a timer's, but its queue limit is far beyond most programs too. A
            // CPU-time timer's signal is for a thread that runs, whose time made it expire, as
            // on Linux (a sleeping thread woken for it saw its sleep end with EINTR).
            let _ = match cpu_time {
                true => state::send_process_to_runners(info, merged),
                false => state::send_process_noting(info, merged),
            };
            state::kick_all();
        }
        Some(tid) => {
            let _ = state::send_thread_noting(tid, info, merged);
            state::kick_thread(tid);
        }
        None => {}
    }
}

/// The earliest armed deadline (monotonic ns), u64::MAX when none: lets every return to the
/// program fire due timers itself (a thread spinning in user code on the timer's CPU would
/// otherwise never let the timer's kernel thread run).
static NEXT_DEADLINE: AtomicU64 = AtomicU64::new(u64::MAX);

fn update_next(timers: &[Option<Timer>]) {
    let next = timers.iter().flatten().filter(|t| t.deadline != 0 && !t.deleted).map(|t| t.deadline).min();
    NEXT_DEADLINE.store(next.unwrap_or(u64::MAX), Ordering::SeqCst);
}

/// Fires the timers that are due (called on the way back to the program).
pub fn fire_due() {
    if NEXT_DEADLINE.load(Ordering::SeqCst) == u64::MAX {
        return;
    }
    let now = time::now_ns();
    if now < NEXT_DEADLINE.load(Ordering::SeqCst) {
        return;
    }
    let mut fired = Vec::new();
    {
        let mut timers = TIMERS.lock();
        for (slot, t) in timers.iter_mut().enumerate() {
            if let Some(tm) = t {
                if due(tm, now) {
                    fired.push((slot, expire(slot, tm, now)));
                }
            }
        }
        update_next(&timers);
    }
    for (slot, sent) in fired {
        send(slot, sent);
    }
    arm_local();
}

/// Makes this CPU's timer interrupt come at the next armed deadline, so that the return path
/// fires it (see NEXT_DEADLINE).
fn arm_local() {
    let next = NEXT_DEADLINE.load(Ordering::SeqCst);
    if next != u64::MAX {
        let wait = next.saturating_sub(time::now_ns());
        sched::arm_timer_also(time::ticks().saturating_add(time::ns_to_ticks(wait)));
    }
}

/// Arms (or disarms, value 0) slot `slot`, starting its worker on first use. Returns the old
/// (remaining, interval) in nanoseconds.
fn arm(slot: usize, value: u64, interval: u64) -> Result<(u64, u64), u32> {
    arm_late(slot, value, interval, 0)
}

/// `arm` for an expiry `late` nanoseconds in the past (an absolute time already passed): it
/// expires after `value` as `arm`'s does, with the intervals that fit in `late` counted as
/// missed (its signal's overrun), as Linux's first expiry of such a timer counts them, and the
/// next expiries on the intervals' grid from the absolute time. (The grid point before now
/// may precede the kernel's time zero, where the clock here cannot go: the grid then starts
/// at the first expiry.)
fn arm_late(slot: usize, value: u64, interval: u64, late: u64) -> Result<(u64, u64), u32> {
    if slot >= FIRST_POSIX {
        state::discard_timer(slot as u32);
    }
    let now = time::now_ns();
    let (old, worker) = {
        let mut timers = TIMERS.lock();
        let tm = timers.get_mut(slot).and_then(|t| t.as_mut()).ok_or(EINVAL)?;
        let old = (slot_remaining(slot, tm, now), tm.interval);
        if core::mem::take(&mut tm.dormant) {
            DORMANT.fetch_sub(1, Ordering::SeqCst);
        }
        let c = clock_now(tm, now).ok_or(EINVAL)?;
        tm.expiry = c.saturating_add(value);
        tm.missed_before = late.checked_div(interval).unwrap_or(0);
        let since_grid = late.checked_rem(interval).unwrap_or(0);
        if late != 0 && since_grid <= c {
            tm.expiry = tm.expiry.min(c - since_grid);
        }
        tm.deadline = if value == 0 { 0 } else { next_check(tm, now, value) };
        tm.interval = interval;
        LAST_OVERRUN[slot].store(0, Ordering::Relaxed);
        let worker = tm.worker;
        update_next(&timers);
        (old, worker)
    };
    if !worker.is_null() && worker != STARTING {
        // SAFETY: a timer's worker lives as long as its slot.
        unsafe { sched::wake(worker) };
    } else if worker.is_null() && value != 0 {
        let started = sched::spawn(sched::ThreadOptions::named("timer").helper(), move || worker_entry(slot));
        match started {
            Ok(h) => h.detach(),
            Err(_) => return Err(EAGAIN),
        }
        // Mark the worker as started so a second arm does not start another; it registers its
        // record before it first sleeps.
        if let Some(Some(tm)) = TIMERS.lock().get_mut(slot) {
            if tm.worker.is_null() {
                tm.worker = STARTING;
            }
        }
    }
    arm_local();
    Ok(old)
}

/// A placeholder worker pointer between spawning and the worker's first sleep.
const STARTING: *mut Thread = core::ptr::dangling_mut::<Thread>();

fn worker_entry(slot: usize) -> u64 {
    worker(slot)
}

/// Creates the setitimer timers' slots on first use.
fn ensure_itimers() {
    let mut timers = TIMERS.lock();
    if timers.is_empty() {
        timers.push(Some(new_timer(SIGALRM, Some(0), 0, CLOCK_REALTIME, None)));
        for signo in [SIGVTALRM, SIGPROF, SIGXCPU, super::SIGKILL] {
            timers.push(Some(new_timer(signo, Some(0), 0, CLOCK_REALTIME, Some(CpuClock::Process))));
        }
    }
}

/// RLIMIT_CPU is now `soft`, `hard` seconds (u64::MAX: unlimited): SIGXCPU once the program's
/// CPU time reaches the soft limit, then every second, SIGKILL at the hard limit. Limits the
/// program has used up already act at once, as on Linux.
pub fn set_cpu_limit(soft: u64, hard: u64) -> Result<(), u32> {
    ensure_itimers();
    let used = cputime::ns(CpuClock::Process).unwrap_or(0);
    // A limit beyond what a u64 counts in nanoseconds (584 years) is never reached: unarmed,
    // as unlimited (hosts and batch systems hand out such finite limits).
    let left = |secs: u64| match secs.checked_mul(NS_PER_SEC) {
        None => 0,
        Some(ns) => ns.saturating_sub(used).max(1),
    };
    let interval = if soft.checked_mul(NS_PER_SEC).is_none() { 0 } else { NS_PER_SEC };
    // Linux looks at the hard limit first: a soft limit equal to the hard one never sends
    // SIGXCPU, only SIGKILL (the two timers, armed one after the other, fired in either order).
    let soft_left = if soft >= hard { 0 } else { left(soft) };
    arm(CPU_SOFT, soft_left, if soft_left == 0 { 0 } else { interval })?;
    arm(CPU_HARD, left(hard), 0)?;
    Ok(())
}

fn new_timer(signo: u64, target: Option<u32>, value: u64, clock: u64, cpu: Option<CpuClock>) -> Timer {
    Timer {
        deadline: 0,
        expiry: 0,
        cpu,
        interval: 0,
        signo,
        target,
        value,
        missed_before: 0,
        worker: core::ptr::null_mut(),
        deleted: false,
        clock,
        dormant: false,
    }
}

/// ITIMER_REAL's (time left, interval) in nanoseconds: what an exec keeps (alarm(2)).
pub fn real_timer() -> (u64, u64) {
    current(0).unwrap_or((0, 0))
}

/// ITIMER_VIRTUAL's and ITIMER_PROF's (time left, interval) in nanoseconds (zero if unarmed),
/// which an exec keeps as it keeps the alarm.
pub fn cpu_itimers() -> [u64; 4] {
    let (v, vi) = current(ITIMER_VIRTUAL as usize).unwrap_or((0, 0));
    let (p, pi) = current(ITIMER_PROF as usize).unwrap_or((0, 0));
    [v, vi, p, pi]
}

/// alarm(seconds): SIGALRM after that many seconds (0 cancels); returns the seconds left of the
/// previous alarm, rounded to nearest (at least 1), as Linux does.
pub fn alarm(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    ensure_itimers();
    let secs = a[0] & 0xffff_ffff;
    let (left, _) = arm(0, secs.saturating_mul(1_000_000_000), 0)?;
    let (s, us) = (left / 1_000_000_000, (left % 1_000_000_000) / 1000);
    Ok(if s == 0 && us > 0 || us >= 500_000 { s + 1 } else { s })
}

/// setitimer(which, new, old): ITIMER_REAL (SIGALRM after wall time), ITIMER_VIRTUAL
/// (SIGVTALRM) and ITIMER_PROF (SIGPROF) after the program's CPU time (the two count the same
/// time, see linux::cputime).
pub fn setitimer(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (which, new, old) = (a[0], a[1], a[2]);
    // Linux reads and checks the new value before it looks at `which` (EFAULT first).
    let read = if new != 0 { Some(uaccess::read::<[i64; 4]>(new)?) } else { None };
    if !matches!(which, ITIMER_REAL | ITIMER_VIRTUAL | ITIMER_PROF) {
        return Err(EINVAL);
    }
    let slot = which as usize;
    ensure_itimers();
    let (value, interval) = if let Some([is, ius, vs, vus]) = read {
        if [is, vs].iter().any(|s| *s < 0) || [ius, vus].iter().any(|u| !(0..1_000_000).contains(u)) {
            return Err(EINVAL);
        }
        let value = vs as u64 * 1_000_000_000 + vus as u64 * 1000;
        // A zero value disarms the timer; ITIMER_REAL's interval goes with it (getitimer then
        // shows none), the CPU-time timers keep theirs, as Linux's.
        let interval = is as u64 * 1_000_000_000 + ius as u64 * 1000;
        // A CPU-time timer's first expiry comes a tick later, as Linux's set_cpu_itimer adds
        // TICK_NSEC (getitimer shows it).
        let value = if value != 0 && slot != ITIMER_REAL as usize { value + CPU_TIMER_TICK_NS } else { value };
        (value, if value == 0 && slot == ITIMER_REAL as usize { 0 } else { interval })
    } else {
        (0, 0)
    };
    // A NULL new value is a zero one, as Linux still takes it: the timer is disarmed.
    let (left, ival) = arm(slot, value, interval)?;
    if old != 0 {
        let [i0, i1] = timeval(ival);
        let [v0, v1] = timeval(left);
        uaccess::write::<[i64; 4]>(old, [i0, i1, v0, v1])?;
    }
    Ok(0)
}

/// The (remaining, interval) of slot `slot`.
fn current(slot: usize) -> Result<(u64, u64), u32> {
    let now = time::now_ns();
    let timers = TIMERS.lock();
    let tm = timers.get(slot).and_then(|t| t.as_ref()).ok_or(EINVAL)?;
    Ok((slot_remaining(slot, tm, now), tm.interval))
}

/// `remaining`, but ITIMER_REAL waiting for its SIGALRM to be taken is not running (0), as
/// Linux's timer is not queued then.
fn slot_remaining(slot: usize, tm: &Timer, now: u64) -> u64 {
    if slot == ITIMER_REAL as usize && tm.dormant {
        return 0;
    }
    remaining(tm, now)
}

/// The time `tm`'s clock must still run before it expires (0: disarmed).
fn remaining(tm: &Timer, now: u64) -> u64 {
    if tm.dormant {
        // Its next expiry on the interval's grid, as Linux's timer_gettime forwards it.
        return match now.checked_sub(tm.expiry) {
            None => tm.expiry - now,
            Some(past) => tm.interval - past % tm.interval,
        };
    }
    if tm.deadline == 0 {
        return 0;
    }
    clock_now(tm, now).map_or(0, |c| tm.expiry.saturating_sub(c).max(1))
}

pub fn getitimer(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    if !matches!(a[0], ITIMER_REAL | ITIMER_VIRTUAL | ITIMER_PROF) {
        return Err(EINVAL);
    }
    ensure_itimers();
    let (left, ival) = current(a[0] as usize)?;
    let [i0, i1] = timeval(ival);
    let [v0, v1] = timeval(left);
    uaccess::write::<[i64; 4]>(a[1], [i0, i1, v0, v1])?;
    Ok(0)
}

/// timer_create(clock, sevp, timerid) on CLOCK_REALTIME or CLOCK_MONOTONIC (and their
/// variants), or on a CPU-time clock (the program's, the calling thread's, or one from
/// clock_getcpuclockid/pthread_getcpuclockid).
pub fn timer_create(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (clock, sevp, idp) = (a[0], a[1], a[2]);
    // Linux's order: the sigevent is read (EFAULT); the clock's kind (EINVAL for none,
    // EOPNOTSUPP for one without timers: a descriptor's, MONOTONIC_RAW, the COARSE ones); the
    // sigevent's fields; the new id is written (EFAULT); then the clock itself (a CPU clock's
    // id: EINVAL; the ALARM clocks want an RTC that can wake the machine, which the VM lacks:
    // EOPNOTSUPP, the id written all the same).
    let ev = if sevp != 0 { Some(uaccess::read::<[u32; 6]>(sevp)?) } else { None };
    let kind = clock as i32;
    if kind >= 0 && !matches!(kind, 0..=3 | 7..=9 | 11) {
        return Err(if matches!(kind, 4..=6) { EOPNOTSUPP } else { EINVAL });
    }
    if kind < 0 && kind & 7 == 3 {
        return Err(EOPNOTSUPP);
    }
    let decoded = cputime::decode(clock);
    let refused = match decoded {
        Some(Err(e)) => Some(e),
        None if matches!(kind, 8 | 9) => Some(EOPNOTSUPP),
        _ => None,
    };
    let cpu = decoded.and_then(Result::ok);
    ensure_itimers();
    let mut timer = new_timer(SIGALRM, Some(0), 0, clock, cpu);
    let explicit = if let Some(ev) = ev {
        let value = ev[0] as u64 | (ev[1] as u64) << 32;
        let (signo, notify, tid) = (ev[2] as u64, ev[3], ev[4]);
        match notify {
            SIGEV_NONE => timer.target = None,
            SIGEV_SIGNAL | SIGEV_THREAD | SIGEV_THREAD_ID => {
                if !(1..=64).contains(&signo) {
                    return Err(EINVAL);
                }
                timer.signo = signo;
                if notify == SIGEV_THREAD_ID {
                    let known = state::SIGNALS.lock().threads.get(&tid).is_some_and(|t| !t.thread.is_null());
                    if !known && tid != crate::linux::process::current_tid() {
                        return Err(EINVAL);
                    }
                    timer.target = Some(tid);
                }
            }
            _ => return Err(EINVAL),
        }
        Some(value)
    } else {
        None
    };
    let id = {
        let mut timers = TIMERS.lock();
        // As Linux: ids count up from the last one given (a deleted timer's id is not given
        // again at once, so a stale id does not name the next timer), wrapping at the end.
        let from = NEXT_POSIX_ID.load(Ordering::Relaxed).max(FIRST_POSIX);
        let free = (from..timers.len()).find(|&i| timers[i].is_none());
        let id = match free {
            Some(i) => i,
            None if timers.len() < MAX_TIMERS => {
                timers.push(None);
                timers.len() - 1
            }
            None => match (FIRST_POSIX..from.min(timers.len())).find(|&i| timers[i].is_none()) {
                Some(i) => i,
                None => return Err(EAGAIN),
            },
        };
        NEXT_POSIX_ID.store(id + 1, Ordering::Relaxed);
        // Without a sigevent the value is the timer id, as on Linux.
        timer.value = explicit.unwrap_or(id as u64);
        timers[id] = Some(timer);
        LAST_OVERRUN[id].store(0, Ordering::Relaxed);
        id
    };
    if let Err(e) = uaccess::write::<i32>(idp, id as i32) {
        TIMERS.lock()[id] = None;
        return Err(e);
    }
    if let Some(e) = refused {
        TIMERS.lock()[id] = None;
        return Err(e);
    }
    Ok(0)
}

fn posix_slot(id: u64) -> Result<usize, u32> {
    let id = id as i32;
    let timers = TIMERS.lock();
    if id >= FIRST_POSIX as i32 && (id as usize) < timers.len() && timers[id as usize].is_some_and(|t| !t.deleted) {
        Ok(id as usize)
    } else {
        Err(EINVAL)
    }
}

/// timer_settime(id, flags, new, old).
pub fn timer_settime(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    // No new setting is EINVAL before anything else, as on Linux.
    if a[2] == 0 {
        return Err(EINVAL);
    }
    let (slot, flags, new, old) = (posix_slot(a[0])?, a[1], a[2], a[3]);
    let [is, ins, vs, vns] = uaccess::read::<[i64; 4]>(new)?;
    let interval = ns_from_timespec([is, ins])?;
    let mut value = ns_from_timespec([vs, vns])?;
    // A zero value disarms the timer and clears its interval (timer_gettime shows none).
    let interval = if value == 0 { 0 } else { interval };
    let mut late = 0;
    if flags & TIMER_ABSTIME != 0 && value != 0 {
        let tm = TIMERS.lock()[slot].ok_or(EINVAL)?;
        let now = match tm.cpu {
            Some(c) => cputime::ns(c),
            None => crate::linux::calls::time::clock_ns(tm.clock),
        }
        .ok_or(EINVAL)?;
        // An absolute time already past expires at once.
        late = now.saturating_sub(value);
        value = value.saturating_sub(now).max(1);
    }
    let (left, ival) = arm_late(slot, value, interval, late)?;
    if old != 0 {
        let [i0, i1] = timespec(ival);
        let [v0, v1] = timespec(left);
        uaccess::write::<[i64; 4]>(old, [i0, i1, v0, v1])?;
    }
    Ok(0)
}

pub fn timer_gettime(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (left, ival) = current(posix_slot(a[0])?)?;
    let [i0, i1] = timespec(ival);
    let [v0, v1] = timespec(left);
    uaccess::write::<[i64; 4]>(a[1], [i0, i1, v0, v1])?;
    Ok(0)
}

pub fn timer_getoverrun(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let slot = posix_slot(a[0])?;
    Ok(LAST_OVERRUN[slot].load(Ordering::Relaxed) as u64)
}

pub fn timer_delete(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    delete_slot(posix_slot(a[0])?)
}

/// execve: every POSIX timer is deleted (the setitimer timers and alarm stay, as on Linux).
pub fn delete_posix_timers() {
    let used = TIMERS.lock().len();
    for slot in FIRST_POSIX..used {
        let _ = delete_slot(slot);
    }
}

fn delete_slot(slot: usize) -> SysResult {
    state::discard_timer(slot as u32);
    let worker = {
        let mut timers = TIMERS.lock();
        let tm = timers[slot].as_mut().ok_or(EINVAL)?;
        if core::mem::take(&mut tm.dormant) {
            DORMANT.fetch_sub(1, Ordering::SeqCst);
        }
        if tm.worker.is_null() {
            timers[slot] = None;
            return Ok(0);
        }
        tm.deleted = true;
        tm.deadline = 0;
        tm.worker
    };
    if worker != STARTING {
        // SAFETY: the worker lives until it sees `deleted` and frees the slot.
        unsafe { sched::wake(worker) };
    }
    Ok(0)
}

/// A forked child: interval timers, alarms and POSIX timers are not inherited (Linux); the CPU
/// limit is, and counts the child's own time.
pub fn after_fork() {
    TIMERS.lock().clear();
    NEXT_POSIX_ID.store(FIRST_POSIX, Ordering::Relaxed);
    DORMANT.store(0, Ordering::SeqCst);
    NEXT_DEADLINE.store(u64::MAX, Ordering::SeqCst);
    crate::linux::calls::info::arm_cpu_limit();
}
