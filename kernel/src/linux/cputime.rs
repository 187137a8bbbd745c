//! CPU time of the program's threads and of the program, for the CPU-time clocks
//! (CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID and the clock ids of
//! clock_getcpuclockid/pthread_getcpuclockid), getrusage, times and the CPU-time timers.
//!
//! The scheduler counts each thread's running time from the TSC at its switch points
//! (`Thread::cpu_ticks`), so the resolution is the TSC's; time a thread spends in the kernel or
//! waiting for the host inside a call without switching away counts as running (there is no
//! user/system split: the PROF and VIRT clocks are the same clock). A thread's time ends with
//! it; the program's is its live threads' plus that of the threads that exited.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::linux::errno::EINVAL;
use crate::linux::signal::state::SIGNALS;
use crate::sched;
use crate::time;

const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;
const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
/// Linux's encoding of a CPU clock of another process or thread (a negative id): the pid or
/// tid inverted in the bits above 3, bit 2 for a thread, bits 0-1 the kind (PROF, VIRT, SCHED).
const CPUCLOCK_PERTHREAD: i32 = 4;
const CPUCLOCK_KIND: i32 = 3;

/// TSC ticks run by threads that have exited.
static EXITED_TICKS: AtomicU64 = AtomicU64::new(0);

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

/// Thread `tid`'s CPU time in TSC ticks, None if no such thread runs the program.
fn thread_ticks(tid: u32) -> Option<u64> {
    let me = sched::current();
    // SAFETY: the current thread's record is alive.
    if unsafe { (*me).tid } == tid {
        // SAFETY: as above.
        return Some(unsafe { (*me).cpu_ticks() });
    }
    let s = SIGNALS.lock();
    let t = s.threads.get(&tid).map(|t| t.thread).filter(|t| !t.is_null())?;
    // SAFETY: registered threads are alive (they unregister, under this lock, before exiting).
    Some(unsafe { (*t).cpu_ticks() })
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

/// The program's CPU time in nanoseconds.
pub fn process_ns() -> u64 {
    ns(CpuClock::Process).unwrap_or(0)
}

/// The calling thread's CPU time in nanoseconds.
pub fn thread_ns() -> u64 {
    // SAFETY: the current thread's record is alive.
    time::ticks_to_ns(unsafe { (*sched::current()).cpu_ticks() })
}

/// An exiting thread's time joins the program's (called as it unregisters, with its ticks).
pub fn add_exited(ticks: u64) {
    EXITED_TICKS.fetch_add(ticks, Ordering::SeqCst);
}

/// A forked child's CPU time starts at zero (its one thread is new).
pub fn after_fork() {
    EXITED_TICKS.store(0, Ordering::SeqCst);
}
