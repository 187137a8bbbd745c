//! The team barrier: a dissemination barrier on per-thread flags, then the tasks.
//!
//! Arrival: in round k thread i counts one on a flag of thread (i + 2^k) mod n and waits for
//! its own round-k flag, so after ceil(log2 n) rounds every thread has heard, directly or not,
//! from every other. With 2 threads that is one cache-line transfer each way, in parallel
//! (a central counter needs two in a row: the last arrival, then the release). Each thread's
//! flags fill their own cache lines; flags are counters (a fast thread that laps is counted,
//! never lost), each thread remembering how many it consumed.
//!
//! Tasks: threads waiting for a flag run queued tasks. Once every thread has arrived the
//! barrier is done when no task is pending; that stays true until a thread leaves (no
//! implicit task runs, and no task is left to make more). The first thread that sees it
//! records the barrier as released, so a thread still helping with tasks leaves too even if
//! a thread that left already queued tasks of the next phase.
//!
//! Packed teams: with more threads than the vCPUs they are placed on (`sched::placement_cpus`,
//! thread t on vCPU (home + t) mod c), the threads are first combined by group, thread t in
//! group t mod c (the threads of one vCPU): the last of a group to arrive (a count in the
//! group's slot) takes part in the dissemination for its group, over the c groups' slots, and
//! then bumps the group's generation, which the group's other threads wait for (running tasks).
//! A barrier then costs one switch per vCPU (the last to arrive goes on first), not several
//! per round. The grouping is a function of the thread numbers alone, so it is correct
//! whatever vCPU a thread runs on. A group's `seen` counts are used by its leader of the
//! moment: leaders follow each other through the group's generation and arrival count.
//!
//! Cancellation: a cancellable barrier (`cancelled` given) also returns, with true, once the
//! region is cancelled; its threads then leave the region, and the flags they never consumed
//! or sent are zeroed by `reset` when the region has ended.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use super::tasks::Queue;
use super::wait;

const MAX_ROUNDS: usize = 32;

/// One thread's flags (written by its partners) and what it consumed (its own).
#[repr(C, align(128))]
struct Slot {
    flags: [AtomicU32; MAX_ROUNDS],
    seen: UnsafeCell<[u32; MAX_ROUNDS]>,
    /// Barriers this thread has passed in the current region.
    episode: UnsafeCell<u32>,
    /// The last episode this thread saw open (it left that barrier): written by this thread
    /// alone, read by the others only while they help with tasks in a barrier (apart from
    /// `seen` and `episode`, which its every barrier writes).
    opened: Opened,
    /// As the slot of group g (packed teams): its arrivals in this barrier and its generation.
    group: Group,
}

#[repr(align(128))]
struct Group {
    arrived: AtomicU32,
    generation: AtomicU32,
}

#[repr(align(128))]
struct Opened(AtomicU32);

impl core::ops::Deref for Opened {
    type Target = AtomicU32;
    fn deref(&self) -> &AtomicU32 {
        &self.0
    }
}

pub struct Barrier {
    slots: UnsafeCell<&'static [Slot]>,
    /// The vCPUs the region's threads are placed on (`prepare`; 0 before).
    cpus: UnsafeCell<usize>,
}

// SAFETY: `slots` and `cpus` change only in `prepare`, while the team's other threads are idle;
// a slot's `episode` is touched only by the thread of that number (or by `prepare`/`reset`),
// its `seen` by that thread too, or in a packed team by the leader of the group of that number
// (one at a time, see the module).
unsafe impl Sync for Barrier {}
unsafe impl Send for Barrier {}

/// Whether counter `v` has reached `target` (both wrap).
fn reached(v: u32, target: u32) -> bool {
    v.wrapping_sub(target) as i32 >= 0
}

fn new_slots(n: usize) -> &'static [Slot] {
    let v: Vec<Slot> = (0..n)
        .map(|_| Slot {
            flags: [const { AtomicU32::new(0) }; MAX_ROUNDS],
            seen: UnsafeCell::new([0; MAX_ROUNDS]),
            episode: UnsafeCell::new(0),
            opened: Opened(AtomicU32::new(0)),
            group: Group { arrived: AtomicU32::new(0), generation: AtomicU32::new(0) },
        })
        .collect();
    Box::leak(v.into_boxed_slice())
}

impl Barrier {
    pub const fn new() -> Barrier {
        Barrier { slots: UnsafeCell::new(&[]), cpus: UnsafeCell::new(0) }
    }

    /// Readies the barrier for a region of `n` threads (the master, before it starts them).
    /// Slots are never freed: a partner may still be nudging a flag of the last region. The
    /// episodes are 0 already (`leave`), so a region in a loop writes no worker's line here.
    pub fn prepare(&mut self, n: usize) {
        let slots = self.slots.get_mut();
        if slots.len() < n {
            *slots = new_slots(n.next_power_of_two());
        }
        let cpus = crate::sched::placement_cpus();
        if *self.cpus.get_mut() != cpus {
            *self.cpus.get_mut() = cpus;
        }
    }

    /// Thread `id` is done with the region: its episodes count from 0 in the next one.
    pub fn leave(&self, id: u32) {
        // SAFETY: prepared for this region; this thread's own slot (see `Barrier`).
        if let Some(s) = unsafe { *self.slots.get() }.get(id as usize) {
            // SAFETY: as above.
            unsafe { *s.episode.get() = 0 };
            if s.opened.load(Ordering::Relaxed) != 0 {
                s.opened.store(0, Ordering::Relaxed);
            }
        }
    }

    /// After a cancelled region, whose threads left barriers early (the team's threads idle):
    /// every count back to 0.
    pub fn reset(&self) {
        // SAFETY: no thread of the team touches the barrier now (see `Barrier`).
        for s in unsafe { *self.slots.get() } {
            for f in &s.flags {
                f.store(0, Ordering::Relaxed);
            }
            // SAFETY: as above.
            unsafe {
                *s.seen.get() = [0; MAX_ROUNDS];
                *s.episode.get() = 0;
            }
            s.group.arrived.store(0, Ordering::Relaxed);
            s.opened.store(0, Ordering::Release);
        }
    }

    /// Thread `id` of `n` waits for the others and the team's tasks (`tasks`); a cancellable
    /// barrier also returns when `cancelled` becomes true (whoever sets it nudges
    /// `tasks.signal`), and then returns true.
    pub fn wait(&self, id: u32, n: u32, tasks: &Queue, cancelled: Option<&AtomicBool>) -> bool {
        let is_cancelled = || cancelled.is_some_and(|c| c.load(Ordering::Acquire));
        // SAFETY: prepared for this region (see `Barrier`).
        let slots = unsafe { *self.slots.get() };
        let (id, n) = (id as usize, n as usize);
        let me = &slots[id];
        // SAFETY: this thread's own slot.
        let episode = unsafe { &mut *me.episode.get() };
        *episode = episode.wrapping_add(1);
        let e = *episode;
        // SAFETY: as above.
        let groups = match unsafe { *self.cpus.get() } {
            0 => n,
            c => c.min(n),
        };
        if groups == n {
            // SAFETY: this thread's own slot's counts.
            if exchange(slots, id, n, unsafe { &mut *me.seen.get() }, tasks, &is_cancelled, false) {
                return true;
            }
        } else {
            let g = id % groups;
            let size = (n - 1 - g) / groups + 1;
            let group = &slots[g].group;
            // Its last value: it changes only once this thread is counted in below.
            let generation = group.generation.load(Ordering::Acquire);
            if group.arrived.fetch_add(1, Ordering::AcqRel) as usize + 1 == size {
                // The last of the group: the others wait for the generation, so no one counts
                // here until that changes.
                group.arrived.store(0, Ordering::Relaxed);
                // SAFETY: the group's counts, used by its last arrival alone (whose count
                // acquired the previous leader's, see the module).
                if exchange(slots, g, groups, unsafe { &mut *slots[g].seen.get() }, tasks, &is_cancelled, true) {
                    return true;
                }
                // SeqCst before `nudge`'s load of the sleepers count.
                group.generation.fetch_add(1, Ordering::SeqCst);
                tasks.signal.nudge();
            } else {
                let done = || group.generation.load(Ordering::Acquire) != generation;
                while !done() {
                    if is_cancelled() {
                        return true;
                    }
                    if !tasks.run_one() {
                        wait::until(&tasks.signal, || done() || tasks.has_queued() || is_cancelled());
                    }
                }
            }
        }
        // Another thread left this barrier (`opened`): read only while tasks keep this one here.
        // (Not this thread's own: it has not left.)
        let released =
            || slots[..n].iter().enumerate().any(|(i, s)| i != id && reached(s.opened.load(Ordering::Acquire), e));
        loop {
            // A task to run is progress whatever else holds: the counts are read only when
            // there is none. Read before each task, they pulled the line of the thread making
            // the tasks, whose next count then waited for it back (`epcc.task.master`).
            if !is_cancelled() && tasks.run_one() {
                continue;
            }
            if tasks.all_finished() {
                // SeqCst before `nudge`'s load of the sleepers count (see doacross.rs, `post`).
                me.opened.store(e, Ordering::SeqCst);
                tasks.signal.nudge();
                return is_cancelled();
            }
            if released() {
                return is_cancelled();
            }
            if is_cancelled() {
                return true;
            }
            if !tasks.run_one() {
                wait::until(&tasks.signal, || {
                    released() || tasks.all_finished() || tasks.has_queued() || is_cancelled()
                });
            }
        }
    }
}

/// The dissemination among `n` participants, as participant `id` (its slot's flags, `seen` its
/// counts): true if the barrier was cancelled meanwhile.
fn exchange(
    slots: &[Slot],
    id: usize,
    n: usize,
    seen: &mut [u32; MAX_ROUNDS],
    tasks: &Queue,
    is_cancelled: &impl Fn() -> bool,
    remote: bool,
) -> bool {
    let me = &slots[id];
    let mut dist = 1;
    let mut k = 0;
    while dist < n {
        slots[(id + dist) % n].flags[k].fetch_add(1, Ordering::Release);
        tasks.signal.nudge();
        seen[k] = seen[k].wrapping_add(1);
        let (flag, target) = (&me.flags[k], seen[k]);
        while !reached(flag.load(Ordering::Acquire), target) {
            if is_cancelled() {
                return true;
            }
            if !tasks.run_one() {
                let cond = || reached(flag.load(Ordering::Acquire), target) || tasks.has_queued() || is_cancelled();
                if remote {
                    wait::until_remote(&tasks.signal, cond);
                } else {
                    wait::until(&tasks.signal, cond);
                }
            }
        }
        dist *= 2;
        k += 1;
    }
    false
}
