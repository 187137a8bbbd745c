//! Waiting the runtime's way: spin on a word (cheap: a handoff between two CPUs polling in the
//! same ring is a cache-line transfer), give the CPU away while other threads want it, and
//! after the spin budget sleep on the word as a futex. Wakers call `wake` only when someone
//! sleeps, so the common case is a store and a load. A waiter takes the signals sent to it
//! (or to the program) while it waits, as a thread of libgomp does when its futex wait ends:
//! the handler may be what ends the wait (`omp_fulfill_event` in a signal handler).

use core::sync::atomic::{AtomicU32, Ordering};

use crate::counters::{self, Stat};
use crate::linux::{futex, signal};

/// A futex word with a count of its sleepers.
#[derive(Default)]
pub struct Word {
    pub value: AtomicU32,
    sleepers: AtomicU32,
}

impl Word {
    pub const fn new(v: u32) -> Word {
        Word { value: AtomicU32::new(v), sleepers: AtomicU32::new(0) }
    }

    pub fn load(&self) -> u32 {
        self.value.load(Ordering::Acquire)
    }

    /// Waits until the value is no longer `old`; returns the new value.
    pub fn wait_while(&self, old: u32) -> u32 {
        let mut spin = Spin::new();
        let spin_from = crate::time::ticks();
        loop {
            let v = self.value.load(Ordering::Acquire);
            if v != old {
                return v;
            }
            if !spin.again() {
                break;
            }
        }
        counters::add(Stat::OmpSpinTicks, crate::time::ticks().wrapping_sub(spin_from));
        counters::add(Stat::OmpSleeps, 1);
        loop {
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            counters::add(Stat::OmpWaits, 1);
            futex::wait_word(&self.value, old);
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
            signal::take_while_waiting();
            let v = self.value.load(Ordering::Acquire);
            if v != old {
                return v;
            }
        }
    }

    /// Wakes the threads sleeping in `until` on this word (after the caller made their
    /// condition true): a bump only when someone sleeps, so usually one load.
    /// The caller's change that makes a waiter's condition true must be ordered before this
    /// load (a SeqCst store or a locked read-modify-write), or a waiter registering meanwhile
    /// may miss it and sleep for good.
    pub fn nudge(&self) {
        if self.sleepers.load(Ordering::SeqCst) != 0 {
            self.bump();
        }
    }

    /// Adds one and wakes every sleeper.
    pub fn bump(&self) {
        self.value.fetch_add(1, Ordering::SeqCst);
        self.wake();
    }

    /// Wakes every sleeper (after the caller changed the value).
    pub fn wake(&self) {
        if self.sleepers.load(Ordering::SeqCst) != 0 {
            futex::wake_word(&self.value, u64::MAX);
        }
    }
}

/// A waiter's spin budget: the spin count, cut to the throttled count once two or more other
/// threads are ready on this CPU (each check gives them the CPU first). With a team far larger
/// than the CPUs (OpenMP_VV asks for 1,000 threads on 2 vCPUs) every waiter would otherwise
/// spin its whole budget in slices between yields while the thread with the work waits for its
/// turn behind all of them. One other ready thread (a team packed two to a vCPU when vCPUs
/// outnumber host CPUs) gets the CPU straight back from each yield, and there the full spin
/// measured faster than sleeping early (`icv::init`).
struct Spin {
    round: u64,
    budget: u64,
}

impl Spin {
    fn new() -> Spin {
        Spin { round: 0, budget: super::icv::spin_rounds() }
    }

    /// A wait for another CPU's thread while this CPU's ready threads wait for this one (a
    /// packed team's group leader in the barrier, see barrier.rs): they cannot hasten it, and
    /// one that got the CPU would spin its 64 rounds before giving it back, so no yield at
    /// once, only every 64 rounds.
    fn remote() -> Spin {
        Spin { round: 1, budget: super::icv::spin_rounds() }
    }

    /// One more round (a PAUSE), or false when the budget is spent and the waiter should sleep.
    fn again(&mut self) -> bool {
        self.round += 1;
        if self.round == 1 {
            // A new wait: a thread of this CPU that is ready may be the one waited for (a
            // packed team's partner that has not arrived yet), or one whose own wait this
            // thread's arrival just ended: it runs first, now, rather than after 64 rounds
            // (NPB SP: 3 million barriers, each round of 64 about 3 us).
            if crate::sched::runnable_here() > 0 {
                crate::sched::yield_now();
            }
        } else if self.round.is_multiple_of(64) {
            // A safe point for another CPU's fork: a waiter spins in the kernel's code, where
            // interrupts return without passing one (a return to the program does), and under
            // OMP_WAIT_POLICY=active it may spin for good: every fork then gave up after 2 s
            // (EAGAIN). It holds no lock here, and its thread is not copied.
            crate::sched::freeze::check();
            signal::take_while_waiting();
            let others = crate::sched::runnable_here();
            if others > 1 {
                self.budget = self.budget.min(super::icv::throttled_spin_rounds());
            }
            if others > 0 {
                crate::sched::yield_now();
            }
        }
        if self.round >= self.budget {
            return false;
        }
        core::hint::spin_loop();
        true
    }
}

/// Waits until `cond` holds, sleeping on `word` (which whoever makes `cond` true bumps).
pub fn wait_until(word: &Word, cond: impl Fn() -> bool) {
    loop {
        let seen = word.load();
        if cond() {
            return;
        }
        word.wait_while(seen);
    }
}

/// Waits until `cond` holds, testing it while spinning (it may read other words than
/// `word`), then sleeping on `word`; whoever makes `cond` true calls `word.nudge()`.
pub fn until(word: &Word, cond: impl Fn() -> bool) {
    until_with(word, cond, Spin::new());
}

/// As `until`, for a condition another CPU's thread makes true while this CPU's ready threads
/// wait for this one (see `Spin::remote`).
pub fn until_remote(word: &Word, cond: impl Fn() -> bool) {
    until_with(word, cond, Spin::remote());
}

fn until_with(word: &Word, cond: impl Fn() -> bool, mut spin: Spin) {
    let spin_from = crate::time::ticks();
    loop {
        if cond() {
            return;
        }
        if !spin.again() {
            break;
        }
    }
    counters::add(Stat::OmpSpinTicks, crate::time::ticks().wrapping_sub(spin_from));
    counters::add(Stat::OmpSleeps, 1);
    loop {
        // Counted as a sleeper before the last test: a waker that makes `cond` true after it
        // sees the count and bumps the value, so the futex wait below returns at once.
        word.sleepers.fetch_add(1, Ordering::SeqCst);
        let seen = word.value.load(Ordering::SeqCst);
        let done = cond();
        if !done {
            counters::add(Stat::OmpWaits, 1);
            futex::wait_word(&word.value, seen);
        }
        word.sleepers.fetch_sub(1, Ordering::SeqCst);
        if done {
            return;
        }
        signal::take_while_waiting();
    }
}
