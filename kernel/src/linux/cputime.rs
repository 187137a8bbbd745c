//! CPU time of the program's threads and of the program, for the CPU-time clocks
//! (CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID and the clock ids of
//! clock_getcpuclockid/pthread_getcpuclockid), getrusage, times and the CPU-time timers.
//!
//! The scheduler counts each thread's running time from the TSC at its switch points
//! (`Thread::cpu_ticks`), so the resolution is the TSC's; time a thread spends in the kernel or
//! waiting for the host inside a call without switching away counts as running. Of that time,
//! what ran between a system call's entry and its return is system time (the dispatcher calls
//! [`call_begin`] and [`call_end`]); the rest, the program's own code, its faults and signal
//! deliveries and the fast path's calls, is user time, so user + system is always the CPU
//! clock's total. (The PROF and VIRT interval timers still both count the total.) A thread's
//! time ends with it; the program's is its live threads' plus that of the threads that exited.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::linux::errno::EINVAL;
use crate::linux::signal::state::{with_thread, SIGNALS};
use crate::sched::{self, thread::Thread};
use crate::time;

const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;
const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
/// Linux's encoding of a CPU clock of another process or thread (a negative id): the pid or
/// tid inverted in the bits above 3, bit 2 for a thread, bits 0-1 the kind (PROF, VIRT, SCHED).
const CPUCLOCK_PERTHREAD: i32 = 4;
const CPUCLOCK_KIND: i32 = 3;

/// TSC ticks run by threads that have exited, and the system part of them.
static EXITED_TICKS: AtomicU64 = AtomicU64::new(0);
static EXITED_SYS_TICKS: AtomicU64 = AtomicU64::new(0);

/// Which CPU time a clock measures.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CpuClock {
    Process,
    Thread(u32),
}

/// The CPU clock `clock` names: None for a clock that is not a CPU clock, Err(EINVAL) for one
/// of another process, of an unknown thread or of an unknown kind (Linux answers EINVAL).
pub fn decode(clock: u64) -> Option<Result<CpuClock, u32>> {
    let clock = clock as i32;
    let me = crate::linux::process::current_tid();
    match clock {
        CLOCK_PROCESS_CPUTIME_ID => return Some(Ok(CpuClock::Process)),
        CLOCK_THREAD_CPUTIME_ID => return Some(Ok(CpuClock::Thread(me))),
        c if c >= 0 => return None,
        _ => {}
    }
    if clock & CPUCLOCK_KIND == CPUCLOCK_KIND {
        return Some(Err(EINVAL));
    }
    let id = !(clock >> 3) as u32;
    Some(if clock & CPUCLOCK_PERTHREAD != 0 {
        match id {
            0 => Ok(CpuClock::Thread(me)),
            tid if thread_ticks(tid).is_some() => Ok(CpuClock::Thread(tid)),
            _ => Err(EINVAL),
        }
    } else if id == 0 || id == crate::linux::process::pid() {
        Ok(CpuClock::Process)
    } else {
        Err(EINVAL)
    })
}

/// Whether `clock` is another process's CPU clock (the pid in it is not the program's): its
/// time is the host's, which knows that process (`calls::time::clock_gettime`).
pub fn of_another_process(clock: u64) -> bool {
    let clock = clock as i32;
    let id = !(clock >> 3) as u32;
    clock < 0
        && clock & CPUCLOCK_KIND != CPUCLOCK_KIND
        && clock & CPUCLOCK_PERTHREAD == 0
        && id != 0
        && id != crate::linux::process::pid()
}

/// Thread `tid`'s CPU time in TSC ticks, None if no such thread runs the program.
fn thread_ticks(tid: u32) -> Option<u64> {
    with_thread(tid, Thread::cpu_ticks)
}

/// The CPU time `clock` has counted, in nanoseconds; None when its thread has exited.
pub fn ns(clock: CpuClock) -> Option<u64> {
    let ticks = match clock {
        CpuClock::Thread(tid) => thread_ticks(tid)?,
        CpuClock::Process => {
            let s = SIGNALS.lock();
            let live: u64 = s
                .threads
                .values()
                .filter(|t| !t.thread.is_null())
                // SAFETY: registered threads are alive (they unregister under this lock).
                .map(|t| unsafe { (*t.thread).cpu_ticks() })
                .sum();
            live + EXITED_TICKS.load(Ordering::SeqCst)
        }
    };
    Some(time::ticks_to_ns(ticks))
}

/// The shortest wall time between two looks at a CPU clock that is awaited.
const MIN_CHECK_NS: u64 = 50_000;

/// The wall time to wait before `clock` could have counted `left` more nanoseconds: the
/// program's CPU time runs at most as many times faster than the wall clock as there are CPUs,
/// a thread's no faster; at least `MIN_CHECK_NS`.
pub fn wall_wait(clock: CpuClock, left: u64) -> u64 {
    let wait = match clock {
        CpuClock::Thread(_) => left,
        CpuClock::Process => left / crate::cpu::count().max(1) as u64,
    };
    wait.max(MIN_CHECK_NS)
}

/// The program's CPU time in nanoseconds.
pub fn process_ns() -> u64 {
    ns(CpuClock::Process).unwrap_or(0)
}

/// The calling thread's CPU time in nanoseconds.
pub fn thread_ns() -> u64 {
    // SAFETY: the current thread's record is alive.
    time::ticks_to_ns(unsafe { (*sched::current()).cpu_ticks() })
}

/// The dispatcher: the current thread enters a system call.
pub fn call_begin() {
    // SAFETY: the current thread's record is alive.
    let t = unsafe { &*sched::current() };
    t.call_start.store(t.cpu_ticks() + 1, Ordering::SeqCst);
}

/// The dispatcher: the current thread's system call returns; its run time since
/// [`call_begin`] is system time.
pub fn call_end() {
    // SAFETY: the current thread's record is alive.
    let t = unsafe { &*sched::current() };
    let start = t.call_start.swap(0, Ordering::SeqCst);
    if start != 0 {
        t.sys_ticks.fetch_add(t.cpu_ticks().saturating_sub(start - 1), Ordering::SeqCst);
    }
}

/// (total, system) ticks of a live thread, from one reading of its clock: the system part
/// includes the call it is in now, and never exceeds the total.
fn split(t: &Thread) -> (u64, u64) {
    let total = t.cpu_ticks();
    let start = t.call_start.load(Ordering::SeqCst);
    let current = if start == 0 { 0 } else { total.saturating_sub(start - 1) };
    (total, (t.sys_ticks.load(Ordering::SeqCst) + current).min(total))
}

/// (user, system) CPU time of `clock` in nanoseconds, user + system being its total (as
/// [`ns`] gives it); None when its thread has exited.
pub fn user_sys_ns(clock: CpuClock) -> Option<(u64, u64)> {
    let (total, sys) = match clock {
        CpuClock::Thread(tid) => with_thread(tid, split)?,
        CpuClock::Process => {
            let s = SIGNALS.lock();
            let live = s
                .threads
                .values()
                .filter(|t| !t.thread.is_null())
                // SAFETY: registered threads are alive (they unregister under this lock).
                .map(|t| split(unsafe { &*t.thread }))
                .fold((0, 0), |(a, b), (c, d)| (a + c, b + d));
            // Exiting threads add to these under the same lock.
            (live.0 + EXITED_TICKS.load(Ordering::SeqCst), live.1 + EXITED_SYS_TICKS.load(Ordering::SeqCst))
        }
    };
    let (total, sys) = (time::ticks_to_ns(total), time::ticks_to_ns(sys));
    Some((total - sys.min(total), sys.min(total)))
}

/// An exiting thread's time, and its system part, join the program's (called as it
/// unregisters).
pub fn add_exited(t: &Thread) {
    let (total, sys) = split(t);
    EXITED_TICKS.fetch_add(total, Ordering::SeqCst);
    EXITED_SYS_TICKS.fetch_add(sys, Ordering::SeqCst);
}

/// A forked child's CPU time starts at zero (its one thread is new).
pub fn after_fork() {
    EXITED_TICKS.store(0, Ordering::SeqCst);
    EXITED_SYS_TICKS.store(0, Ordering::SeqCst);
}
