//! Sleeping: each CPU keeps its sleeping threads in a list sorted by TSC deadline; the LAPIC
//! timer is armed for the earliest one and its interrupt wakes everything that is due. While
//! other threads wait in the CPU's run queue the preemption clock's tick stands in for it, and
//! every thread switch wakes the sleepers that are due (`sched::timer_deadline`).
//! A sleep never ends early: the deadline is rounded up and re-checked after every wake-up.
//! Nor does it end with its thread still on the CPU while others wait for it
//! (`give_way_since`).

use core::ptr::null_mut;
use core::sync::atomic::Ordering;

use super::thread::{Thread, BLOCKING};
use super::CpuSched;
use crate::time;

/// Sleeping threads linked through `Thread::sleep_next`, earliest deadline first.
pub struct SleepList {
    head: *mut Thread,
}

// SAFETY: only used under its CPU's lock.
unsafe impl Send for SleepList {}

impl SleepList {
    pub const fn new() -> Self {
        SleepList { head: null_mut() }
    }

    pub fn next_deadline(&self) -> Option<u64> {
        // SAFETY: linked records are alive while they sleep.
        (!self.head.is_null()).then(|| unsafe { (*self.head).sleep_deadline })
    }

    fn insert(&mut self, t: *mut Thread) {
        // SAFETY: `t` and every linked record are alive; the list is ours under the lock.
        unsafe {
            let deadline = (*t).sleep_deadline;
            let mut link: *mut *mut Thread = &mut self.head;
            while !(*link).is_null() && (**link).sleep_deadline <= deadline {
                link = &mut (**link).sleep_next;
            }
            (*t).sleep_next = *link;
            *link = t;
        }
    }

    /// Unlinks `t` if it is in the list; returns whether it was.
    fn remove(&mut self, t: *mut Thread) -> bool {
        // SAFETY: linked records are alive; the list is ours under the lock.
        unsafe {
            let mut link: *mut *mut Thread = &mut self.head;
            while !(*link).is_null() {
                if *link == t {
                    *link = (*t).sleep_next;
                    return true;
                }
                link = &mut (**link).sleep_next;
            }
        }
        false
    }

    fn pop_due(&mut self, now: u64) -> Option<*mut Thread> {
        let t = self.head;
        // SAFETY: linked records are alive.
        if t.is_null() || unsafe { (*t).sleep_deadline } > now {
            return None;
        }
        // SAFETY: as above.
        self.head = unsafe { (*t).sleep_next };
        Some(t)
    }
}

/// Sleeps for at least `ns` nanoseconds.
pub fn sleep_ns(ns: u64) {
    let deadline = time::ticks() + time::ns_to_ticks(ns);
    sleep_until_tsc(deadline);
}

/// Sleeps until the TSC reaches `deadline`.
pub fn sleep_until_tsc(deadline: u64) {
    let s: &CpuSched = super::this_sched();
    let since = time::ticks();
    while time::ticks() < deadline {
        let cur = super::current();
        {
            let mut list = s.sleepers.lock();
            // SAFETY: the current thread's record is alive and in no other queue.
            unsafe {
                (*cur).sleep_deadline = deadline;
                (*cur).state.store(BLOCKING, Ordering::SeqCst);
            }
            list.insert(cur);
            publish(s, &list);
        }
        arm_unless_polling(s);
        super::block();
    }
    give_way_since(since);
}

/// Ends a sleep that began at TSC `since`: if the current thread has not left its CPU since,
/// the threads that wait for that CPU get their turn now (the sleepers that are due first
/// joining them), as they would have had the sleep blocked.
///
/// A sleep can end before its thread gets off the CPU: the due sleepers' wake-up (the timer's
/// interrupt) cancels a block not yet done (`sched::wake` on a BLOCKING thread). With other
/// threads waiting, the sleep arms the timer (`arm_unless_polling`) in exactly that window,
/// and on a PVM host that ring-0 entry (50-280 us on average, measured) outlasts a sleep of
/// 1-50 us: nearly every such sleep ended that way, the thread never left the CPU, and with
/// no preemption (kernel threads, `--preempt 0`) the other thread waited until it had
/// finished all its sleeps (selftest `sleepers_take_turns`).
pub fn give_way_since(since: u64) {
    let s: &CpuSched = super::this_sched();
    let cur = super::current();
    // SAFETY: the current thread's record is alive; `run_start` is when it last came onto the
    // CPU (`Thread::account_run`).
    if unsafe { (*cur).run_start.load(Ordering::Relaxed) } > since {
        return;
    }
    if due(s) {
        wake_expired(s);
    }
    super::yield_now();
}

/// Records the list's first deadline where the idle loop reads it without the lock.
fn publish(s: &CpuSched, list: &SleepList) {
    s.next_wake.store(list.next_deadline().unwrap_or(u64::MAX), Ordering::SeqCst);
}

/// Arms the timer for a thread about to block, unless this CPU goes idle: with nothing else
/// ready the idle loop ends the sleep from the TSC (no timer interrupt, no trip to ring 0),
/// and arms the timer itself if it halts first (`idle::idle_loop`, also with `--idle halt`).
/// Leaving idle for a thread arms it (`idle_run_next`).
fn arm_unless_polling(s: &CpuSched) {
    if s.runnable() > 0 {
        super::arm_timer(s);
    }
}

/// True if a sleeper of this CPU is due within `ticks` TSC ticks from now.
pub(super) fn due_within(s: &CpuSched, ticks: u64) -> bool {
    time::ticks().saturating_add(ticks) >= s.next_wake.load(Ordering::Relaxed)
}

/// Blocks the current thread, which is BLOCKING and registered with some waker, until that
/// waker wakes it or the TSC reaches `deadline`. The caller tells which by checking whether it
/// is still registered with its waker. A wait that timed out gives way as a sleep does
/// (`give_way_since`: a futex wait with a short timeout kept its CPU as short sleeps did).
pub fn block_until(deadline: u64) {
    let s: &CpuSched = super::this_sched();
    let cur = super::current();
    let since = time::ticks();
    {
        let mut list = s.sleepers.lock();
        // SAFETY: the current thread's record is alive and in no sleep list.
        unsafe { (*cur).sleep_deadline = deadline };
        list.insert(cur);
        publish(s, &list);
    }
    arm_unless_polling(s);
    super::block();
    {
        let mut list = s.sleepers.lock();
        list.remove(cur);
        publish(s, &list);
    }
    if time::ticks() >= deadline {
        give_way_since(since);
    }
}

/// True if a sleeper of this CPU is due (read without the lock, for the polling idle loop).
pub(super) fn due(s: &CpuSched) -> bool {
    time::ticks() >= s.next_wake.load(Ordering::Relaxed)
}

/// True if this CPU has sleepers (leaving idle then needs the timer armed).
pub(super) fn any(s: &CpuSched) -> bool {
    s.next_wake.load(Ordering::Relaxed) != u64::MAX
}

/// Wakes every sleeper whose deadline has passed (timer interrupt).
/// Wakes this CPU's sleepers whose deadline has passed; returns whether there were any.
pub(super) fn wake_expired(s: &CpuSched) -> bool {
    let now = time::ticks();
    let mut woke = false;
    loop {
        let t = {
            let mut list = s.sleepers.lock();
            let t = list.pop_due(now);
            publish(s, &list);
            t
        };
        match t {
            // SAFETY: a sleeping thread's record is alive until it is woken.
            Some(t) => {
                woke = true;
                unsafe { super::wake(t) }
            }
            None => break,
        }
    }
    woke
}
