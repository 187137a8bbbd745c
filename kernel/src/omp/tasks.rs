//! Explicit tasks. A task the team can help with is *deferred*: its arguments are copied, and
//! it waits in its team's queue (or, while it has unfinished predecessors, in their successor
//! lists) until a thread takes it at a task scheduling point: a barrier, the end of the region,
//! `taskwait` or the end of a `taskgroup`. A task is run at once (undeferred) outside any
//! region, when it is `if(0)` or created inside a final task (included), and when the queue is
//! already long. A region's team of one defers tasks too, as libgomp does: nobody else could
//! run them, but the order its tasks run in is then libgomp's (a program of one thread that
//! prints from its tasks prints what it prints natively).
//!
//! Bookkeeping: every task that creates children gets a `Node` (its count of unfinished
//! children, for `taskwait`, and its children's dependences, which only order siblings); every
//! `taskgroup` a `Group` (its count of unfinished tasks, descendants included: a task belongs to
//! the innermost group of the task that created it). The team counts tasks not yet finished, so
//! its barriers end only when they are all done.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::detach::Event;
use super::icv::Icv;
use super::task_args::Args;
use super::thread::{self, Ctx};
use super::wait::Word;
use crate::sync::SpinLock;

pub const FLAG_FINAL: u32 = 1 << 1;
pub const FLAG_DEPEND: u32 = 1 << 3;
pub const FLAG_PRIORITY: u32 = 1 << 4;
pub const FLAG_UP: u32 = 1 << 8;
pub const FLAG_GRAINSIZE: u32 = 1 << 9;
pub const FLAG_IF: u32 = 1 << 10;
pub const FLAG_NOGROUP: u32 = 1 << 11;
pub const FLAG_REDUCTION: u32 = 1 << 12;
pub const FLAG_DETACH: u32 = 1 << 13;
pub const FLAG_STRICT: u32 = 1 << 14;

/// Dependence kinds of depobj entries (libgomp's GOMP_DEPEND_*).
const DEPEND_IN: usize = 1;
const DEPEND_OUT: usize = 2;
const DEPEND_INOUT: usize = 3;
const DEPEND_MUTEXINOUTSET: usize = 4;

/// Above this many unfinished tasks (queued, running or waiting for predecessors) per thread
/// of the team, in the team, new tasks run at once, as libgomp throttles: it bounds the memory
/// deferred tasks hold. A thread reads the team's count only now and then (`may_defer`).
/// libgomp still defers a task when the count equals the limit (a team of one defers 65 tasks
/// and runs the 66th at once: the order a program of one thread sees).
const PENDING_LIMIT_PER_THREAD: u32 = 64;

pub type TaskFn = extern "C" fn(*mut u8);
pub type CopyFn = Option<extern "C" fn(*mut u8, *mut u8)>;

/// A team's tasks: the ready tasks in lanes, the counts of tasks made and finished, and a
/// word that threads waiting at scheduling points sleep on.
///
/// A thread queues the tasks it makes (or whose last predecessor it finishes) in its own lane
/// (thread number modulo `LANES`) and takes from it first; a thread whose lane is empty takes
/// from the others. With one queue for the team, every task's queueing and taking moved the
/// queue's lock and ends between the CPUs (`epcc.task.parallel`: each thread makes tasks and
/// runs them at the barrier). Any thread may take any lane's tasks, so which lane a task is in
/// decides only who most likely runs it.
///
/// Waiters test their conditions (a task queued, their tasks finished) while they spin, so
/// queueing or finishing a task writes the word only when someone sleeps on it (`nudge`).
/// Each thread counts the tasks it makes and the tasks it finishes in its lane's `Counts`, a
/// line that only that lane's threads write: a task made on one CPU and run on another writes
/// no count line of the other's (`all_finished` reads them in an order that makes the sums
/// exact). When the finishing thread added to the maker's lane instead, the maker's next
/// task took that line back: one more transfer per task (`epcc.task.master`).
///
/// A team of one (`solo`) has nobody to share these with: its thread updates the lanes, the
/// counts and its tasks' nodes with plain loads and stores, without the lanes' locks, and its
/// lane is 0 without a look at its record: ~23 of ~198 cycles per deferred task (ten locked
/// operations and five record looks; libgomp's task at one thread is ~127). A detachable
/// task's event may be fulfilled by any thread, which then finishes the task: the team stops
/// being solo when it makes one.
pub struct Queue {
    lanes: [Lane; LANES],
    counts: [Counts; LANES],
    shared: Shared,
}

/// Lanes of a team's queue: more threads than lanes share them.
const LANES: usize = 8;

/// The most tasks a thread moves from another lane to its own at once (`take_any`).
const STEAL_BATCH: usize = 16;

/// One lane's ready tasks, on cache lines of their own.
#[repr(align(128))]
struct Lane {
    ready: SpinLock<VecDeque<Arc<Task>>>,
    counts: LaneCounts,
}

/// A lane's tasks queued now (low half) and ever (high half, only grows, wrapping), in one
/// word: queueing a task updates both with one atomic operation.
struct LaneCounts(AtomicU64);

const ONE_PUSHED: u64 = 1 << 32;

impl LaneCounts {
    /// Tasks waiting in the lane.
    fn queued(&self) -> u32 {
        self.0.load(Ordering::Acquire) as u32
    }

    /// Tasks ever queued in the lane.
    fn pushed(&self) -> u32 {
        (self.0.load(Ordering::Acquire) >> 32) as u32
    }

    /// `n` tasks queued (`solo`: by the only thread that changes the counts).
    fn add(&self, n: u32, solo: bool) {
        let d = n as u64 * (ONE_PUSHED + 1);
        if solo {
            self.0.store(self.0.load(Ordering::Relaxed).wrapping_add(d), Ordering::Relaxed);
        } else {
            self.0.fetch_add(d, Ordering::SeqCst);
        }
    }

    /// `n` tasks taken (the lane held them: the low half does not borrow).
    fn taken(&self, n: u32, solo: bool) {
        if solo {
            self.0.store(self.0.load(Ordering::Relaxed) - n as u64, Ordering::Relaxed);
        } else {
            self.0.fetch_sub(n as u64, Ordering::Relaxed);
        }
    }
}

/// What a lane's threads count, on lines of their own.
#[repr(align(128))]
struct Counts {
    /// Deferred tasks made by this lane's threads, and tasks finished by them (both only
    /// grow, wrapping): the sums over the lanes differ by the unfinished tasks.
    made: AtomicU32,
    finished: AtomicU32,
    /// Tasks this lane's threads may still defer before they next read the team's unfinished
    /// count (`may_defer`).
    budget: AtomicU32,
}

/// The word waiters sleep on, on lines of its own (the team's `single` word came next).
#[repr(align(128))]
pub struct Shared {
    pub signal: Word,
    /// Only the team's one thread touches the queue, its counts and its tasks' nodes (see
    /// `Queue`): set for a region's team of one, cleared when it makes a detachable task.
    pub solo: AtomicBool,
}

impl core::ops::Deref for Queue {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.shared
    }
}

/// This thread's lane in its current team's queue.
fn my_lane() -> usize {
    thread::ctx().id as usize % LANES
}

impl Queue {
    /// This thread's lane: a solo team's one thread (number 0) has lane 0, found without the
    /// three dependent loads of its record (five looks per task).
    #[inline(always)]
    fn lane(solo: bool) -> usize {
        if solo {
            0
        } else {
            my_lane()
        }
    }
}

/// How many tasks a thread defers between two reads of the team's unfinished count: the
/// limit is exceeded by at most this many per thread, and the read (a line per lane, which
/// other threads write) is paid once per this many tasks.
const BUDGET_REFILL: u32 = 16;

/// `add32` and `add64`: add `n` to `a` and return the value before: with `solo` (only this
/// thread changes it) a load and a store, else an atomic add.
macro_rules! solo_add {
    ($name:ident, $atomic:ty, $int:ty) => {
        #[inline(always)]
        fn $name(a: &$atomic, n: $int, solo: bool) -> $int {
            if solo {
                let v = a.load(Ordering::Relaxed);
                a.store(v.wrapping_add(n), Ordering::Relaxed);
                v
            } else {
                a.fetch_add(n, Ordering::SeqCst)
            }
        }
    };
}
solo_add!(add32, AtomicU32, u32);
solo_add!(add64, AtomicU64, u64);

impl Queue {
    pub const fn new() -> Queue {
        Queue {
            lanes: [const { Lane { ready: SpinLock::new(VecDeque::new()), counts: LaneCounts(AtomicU64::new(0)) } };
                LANES],
            counts: [const { Counts { made: AtomicU32::new(0), finished: AtomicU32::new(0), budget: AtomicU32::new(0) } };
                LANES],
            shared: Shared { signal: Word::new(0), solo: AtomicBool::new(false) },
        }
    }

    /// Makes the queue solo or shared, for a region about to start (no task of the team is
    /// unfinished, and nobody else touches it).
    pub fn set_solo(&mut self, solo: bool) {
        let flag = self.shared.solo.get_mut();
        if *flag != solo {
            *flag = solo;
        }
    }

    /// Whether only this thread uses the queue (see `Shared::solo`).
    #[inline(always)]
    fn solo(&self) -> bool {
        self.solo.load(Ordering::Relaxed)
    }

    /// Runs `f` on lane `l`'s ready tasks, under the lane's lock unless the team is `solo`.
    #[inline(always)]
    fn with_lane<R>(&self, l: usize, solo: bool, f: impl FnOnce(&mut VecDeque<Arc<Task>>) -> R) -> R {
        let lane = &self.lanes[l];
        if solo {
            // SAFETY: a solo team's one thread is the only one that touches its lanes, and
            // it does not reenter this (`f` takes or queues tasks, it runs none).
            f(unsafe { lane.ready.get_unlocked() })
        } else {
            f(&mut lane.ready.lock())
        }
    }

    fn push(&self, t: Arc<Task>) {
        let solo = self.solo();
        let l = Queue::lane(solo);
        self.with_lane(l, solo, |q| q.push_back(t));
        self.lanes[l].counts.add(1, solo);
        self.signal.nudge();
    }

    /// Counts a deferred task made by this thread.
    fn count_made(&self, solo: bool) {
        add32(&self.counts[Queue::lane(solo)].made, 1, solo);
    }

    /// Counts the end of a task, finished by this thread.
    fn count_finished(&self, solo: bool) {
        add32(&self.counts[Queue::lane(solo)].finished, 1, solo);
    }

    /// The team's unfinished tasks (made and not finished), summed over the lanes; exact
    /// only while no thread makes or finishes one.
    fn unfinished(&self) -> u32 {
        let finished = self.counts.iter().map(|l| l.finished.load(Ordering::Acquire)).fold(0, u32::wrapping_add);
        let made = self.counts.iter().map(|l| l.made.load(Ordering::Acquire)).fold(0, u32::wrapping_add);
        // Read in this order the difference is never below zero (see `all_finished`).
        made.wrapping_sub(finished)
    }

    /// Whether this thread may defer one more task with at most `limit` unfinished in the
    /// team, as libgomp throttles (its limit is on the team's count too): true, and one
    /// task of the lane's budget used, or false (the task is to run at once). The team's count
    /// is read when the budget is used up, so a thread defers at most `BUDGET_REFILL` past
    /// the limit.
    fn may_defer(&self, limit: u32) -> bool {
        let budget = &self.counts[Queue::lane(self.solo())].budget;
        let left = budget.load(Ordering::Relaxed);
        if left > 0 {
            budget.store(left - 1, Ordering::Relaxed);
            return true;
        }
        let unfinished = self.unfinished();
        if unfinished >= limit {
            return false;
        }
        budget.store((limit - unfinished).min(BUDGET_REFILL) - 1, Ordering::Relaxed);
        true
    }

    /// Whether every task made so far has finished. The finished counts are read first, then
    /// the made ones: a task counted finished was made before, so if the sums are equal, every
    /// task made by the time the first made count was read had finished by then (and only a
    /// running task or a thread outside a barrier makes tasks).
    pub fn all_finished(&self) -> bool {
        self.unfinished() == 0
    }

    /// Whether a task waits in the queue (a load per lane).
    pub fn has_queued(&self) -> bool {
        self.lanes.iter().any(|l| l.counts.queued() != 0)
    }

    /// Tasks ever queued, summed over the lanes: a waiter that found no task it could run
    /// reads it first and waits for it to change (a task queued since). Not the tasks waiting
    /// now: a task queued and another taken would leave that sum as it was.
    fn pushed_total(&self) -> u32 {
        self.lanes.iter().map(|l| l.counts.pushed()).fold(0, u32::wrapping_add)
    }

    /// Takes a ready task that `fits`: from this thread's lane first, then from the others in
    /// turn; the oldest of a lane, or with `newest` the newest. A task waiting for its own
    /// children or group wants the tasks it queued last (the scan from the front passed over
    /// every other task, under the lock, for each child: `epcc.task.nested` 0.78 of Linux's
    /// speed).
    fn take(&self, newest: bool, fits: impl Fn(&Task) -> bool) -> Option<Arc<Task>> {
        if super::icv::max_task_priority() > 0 {
            return self.take_by_priority(newest, fits);
        }
        let solo = self.solo();
        let me = Queue::lane(solo);
        (0..LANES).find_map(|k| {
            let l = (me + k) % LANES;
            let lane = &self.lanes[l];
            if lane.counts.queued() == 0 {
                return None;
            }
            self.with_lane(l, solo, |q| {
                // The end the waiter wants usually fits (a `taskwait` takes its last child).
                let end = if newest { q.back() } else { q.front() };
                if end.is_some_and(|t| fits(t)) {
                    lane.counts.taken(1, solo);
                    return if newest { q.pop_back() } else { q.pop_front() };
                }
                let i = if newest { q.iter().rposition(|t| fits(t)) } else { q.iter().position(|t| fits(t)) }?;
                let t = q.remove(i);
                lane.counts.taken(1, solo);
                t
            })
        })
    }

    /// `take` when tasks may have priorities (OMP_MAX_TASK_PRIORITY above 0): a task of the
    /// highest priority queued that `fits`, in any lane; the oldest of those, or with `newest`
    /// the newest, as libgomp takes from its team's queue (barriers) and from a task's
    /// children or a group's tasks (`taskwait`, a group's end). Every lane is looked at under
    /// its lock, one after the other: exact for a team of one, whose tasks are all in one lane;
    /// with more threads the order is a hint anyway (the specification's word).
    fn take_by_priority(&self, newest: bool, fits: impl Fn(&Task) -> bool) -> Option<Arc<Task>> {
        let solo = self.solo();
        let me = Queue::lane(solo);
        loop {
            let mut best: Option<(usize, u32)> = None;
            for k in 0..LANES {
                let l = (me + k) % LANES;
                if self.lanes[l].counts.queued() == 0 {
                    continue;
                }
                let highest = self.with_lane(l, solo, |q| q.iter().filter(|t| fits(t)).map(|t| t.priority).max());
                if let Some(p) = highest {
                    if best.is_none_or(|(_, b)| p > b) {
                        best = Some((l, p));
                    }
                }
            }
            let (l, p) = best?;
            let at = |t: &Arc<Task>| fits(t) && t.priority == p;
            let found = self.with_lane(l, solo, |q| {
                let i = if newest { q.iter().rposition(at) } else { q.iter().position(at) };
                let t = i.and_then(|i| q.remove(i))?;
                self.lanes[l].counts.taken(1, solo);
                Some(t)
            });
            // Taken by another thread since the look: look again.
            if found.is_some() {
                return found;
            }
        }
    }

    /// Runs tasks that `fits` (the newest first) until `done` holds, waiting meanwhile for a
    /// task to be queued or `done` to hold. When no such task is queued, one that fits `or`.
    /// Once `none_left` holds, no task that fits is queued or will be: then it only waits.
    ///
    /// The lanes' counts of queued tasks are read only when no task was found: read before
    /// each task, they pulled the lines of the threads queueing tasks, whose next task then
    /// waited for them back. A waiter with nothing left to take reads none of them: a task
    /// waiting for the child another thread runs (fib as tasks at two threads) pulled the
    /// other thread's lane line at each of its pushes, and scanned its lane under its lock.
    fn help_until(
        &self,
        fits: impl Fn(&Task) -> bool,
        or: Option<&dyn Fn(&Task) -> bool>,
        done: impl Fn() -> bool,
        none_left: impl Fn() -> bool,
    ) {
        let take = || self.take(true, &fits).or_else(|| or.and_then(|or| self.take(true, or)));
        loop {
            if done() {
                return;
            }
            if let Some(t) = take() {
                execute(t);
                continue;
            }
            if none_left() {
                super::wait::until(&self.signal, &done);
                return;
            }
            // None found: look again after noting the count, so that a task queued between
            // the look and the wait ends the wait.
            let seen = self.pushed_total();
            if done() {
                return;
            }
            match take() {
                Some(t) => execute(t),
                None => super::wait::until(&self.signal, || done() || self.pushed_total() != seen),
            }
        }
    }

    /// Takes the oldest ready task, from this thread's lane first. From another lane it takes
    /// up to half of that lane's tasks at once (at most `STEAL_BATCH`): it returns the first
    /// and queues the rest in its own lane, where other threads can still take them. Taken one
    /// at a time, every task moved the other lane's lock line between the CPUs, and its maker
    /// paid for that line again at its next task: a master making every task ran at the pace
    /// of the hand-overs (`epcc.task.master`).
    fn take_any(&self) -> Option<Arc<Task>> {
        if super::icv::max_task_priority() > 0 {
            return self.take_by_priority(false, |_| true);
        }
        let solo = self.solo();
        let me = Queue::lane(solo);
        for k in 0..LANES {
            let l = (me + k) % LANES;
            let lane = &self.lanes[l];
            if lane.counts.queued() == 0 {
                continue;
            }
            let mut moved: [Option<Arc<Task>>; STEAL_BATCH] = [const { None }; STEAL_BATCH];
            let mut n = 0;
            let first = self.with_lane(l, solo, |q| {
                let first = q.pop_front()?;
                if k != 0 {
                    n = (q.len() / 2).min(STEAL_BATCH);
                    for (slot, t) in moved.iter_mut().zip(q.drain(..n)) {
                        *slot = Some(t);
                    }
                }
                lane.counts.taken(1 + n as u32, solo);
                Some(first)
            });
            let Some(first) = first else { continue };
            if n > 0 {
                self.with_lane(me, solo, |q| q.extend(moved.iter_mut().take(n).filter_map(Option::take)));
                self.lanes[me].counts.add(n as u32, solo);
                self.signal.nudge();
            }
            return Some(first);
        }
        None
    }

    /// Runs one ready task, any task; false if there was none.
    pub fn run_one(&self) -> bool {
        match self.take_any() {
            Some(t) => {
                execute(t);
                true
            }
            None => false,
        }
    }

    /// Helps until every task of the team has finished (the end of a region).
    pub fn drain(&self) {
        loop {
            // Counts read only when there is no task to run (see `help_until`).
            if self.run_one() {
                continue;
            }
            if self.all_finished() {
                return;
            }
            if !self.run_one() {
                super::wait::until(&self.signal, || self.all_finished() || self.has_queued());
            }
        }
    }
}

/// What a task that creates tasks keeps for its children: how many it made and how many of
/// them have ended, for `taskwait`, and its children's dependences (which only order
/// siblings).
///
/// The task that owns the node writes its side (the count of children made, the dependence
/// map) and the threads that finish its children write the other (`ended`), on lines of their
/// own: a child made on one CPU and finished on another moves no line back and forth. With
/// one count and a reference count that every child took and dropped, the maker paid for the
/// line again at each task (~600-800 of ~1,700 cycles per task in a master that makes every
/// task, when the host keeps the two vCPUs far apart).
///
/// Lifetime: the owner holds it through a `NodeRef`, its children through a plain pointer;
/// whichever of the owner's end and its children's ends comes last frees it (`ended` counts
/// both, see `child_ended` and `owner_ended`).
pub struct Node {
    own: OwnerSide,
    end: EndSide,
}

#[repr(align(128))]
struct OwnerSide {
    /// Children made (wrapping); written by the owner only.
    made: AtomicU32,
    deps: SpinLock<BTreeMap<usize, Dep>>,
    /// `deps` may hold entries: a `taskwait` clears it only then (its lock was two atomic
    /// operations of every `taskwait`, most of which follow tasks without dependences).
    has_deps: AtomicBool,
    /// The owner's team's `Shared::solo`: the counts are then changed by one thread (teams are
    /// never freed).
    solo: &'static AtomicBool,
}

#[repr(align(128))]
struct EndSide {
    /// Children ended (low 32 bits, wrapping like `made`), plus `OWNER_GONE` once the owner has
    /// ended.
    ended: AtomicU64,
    /// Children taken from a queue to run (wrapping like `made`): the owner's `taskwait`
    /// stops looking for its children in the queues when all have (`children_started`).
    started: AtomicU32,
}

const OWNER_GONE: u64 = 1 << 63;

/// The counts' `solo` arguments: whether the owner's team is solo (`Shared::solo`), so that
/// only this thread changes them. The callers have the team at hand; the node's own pointer to
/// the flag serves the owner's end, which has not.
impl Node {
    fn solo(&self) -> bool {
        self.own.solo.load(Ordering::Relaxed)
    }

    /// Counts a child made (by the owner).
    fn child_made(&self, solo: bool) {
        add32(&self.own.made, 1, solo);
    }

    /// Whether every child made so far has ended (read by the owner).
    fn children_done(&self) -> bool {
        self.end.ended.load(Ordering::Acquire) as u32 == self.own.made.load(Ordering::Relaxed)
    }

    /// Whether every child made so far has started, so none is queued or waits for
    /// predecessors (read by the owner).
    fn children_started(&self) -> bool {
        self.end.started.load(Ordering::Acquire) == self.own.made.load(Ordering::Relaxed)
    }

    /// A child of `node` starts (taken from a queue, it runs to its end).
    ///
    /// # Safety
    /// As `child_ended`'s: the child has not ended.
    unsafe fn child_started(node: *const Node, solo: bool) {
        // SAFETY: the node lives until its last child has ended (this one has not yet).
        let n = unsafe { &*node };
        add32(&n.end.started, 1, solo);
    }

    /// A child of `node` has ended: the child's last use of the node. Frees the node when the
    /// owner has ended and this was its last child.
    ///
    /// # Safety
    /// `node` is the node of the child's owner, and the child has not ended before.
    unsafe fn child_ended(node: *const Node, solo: bool) {
        // SAFETY: the node lives until its last child has ended (this one has not yet).
        let n = unsafe { &*node };
        let now = add64(&n.end.ended, 1, solo).wrapping_add(1);
        // Once the owner is gone, `made` no longer changes (and the count's update above
        // synchronized with the owner's, which came after its last write of `made`).
        if now & OWNER_GONE != 0 && now as u32 == n.own.made.load(Ordering::Acquire) {
            // SAFETY: the owner has ended and every child has: nobody else holds it.
            drop(unsafe { alloc::boxed::Box::from_raw(node as *mut Node) });
        }
    }

    /// The owner has ended: frees the node if every child it made has ended too. One update
    /// of `ended` decides for both sides, so exactly one of the owner and the last child
    /// frees it.
    ///
    /// # Safety
    /// `node` is a node of `NodeRef::new`, whose owner has not ended before.
    unsafe fn owner_ended(node: *const Node) {
        // SAFETY: the owner's reference keeps it alive until this update.
        let n = unsafe { &*node };
        let made = n.own.made.load(Ordering::Relaxed);
        let before = if n.solo() {
            let v = n.end.ended.load(Ordering::Relaxed);
            n.end.ended.store(v | OWNER_GONE, Ordering::Relaxed);
            v
        } else {
            n.end.ended.fetch_or(OWNER_GONE, Ordering::AcqRel)
        };
        if before as u32 == made {
            // SAFETY: every child has ended and the owner is gone.
            drop(unsafe { alloc::boxed::Box::from_raw(node as *mut Node) });
        }
    }
}

/// A task's own reference to its children's node (its record's `node`).
pub struct NodeRef(core::ptr::NonNull<Node>);

impl NodeRef {
    fn new(solo: &'static AtomicBool) -> NodeRef {
        let node = alloc::boxed::Box::new(Node {
            own: OwnerSide {
                made: AtomicU32::new(0),
                deps: SpinLock::new(BTreeMap::new()),
                has_deps: AtomicBool::new(false),
                solo,
            },
            end: EndSide { ended: AtomicU64::new(0), started: AtomicU32::new(0) },
        });
        NodeRef(core::ptr::NonNull::from(alloc::boxed::Box::leak(node)))
    }

    fn ptr(&self) -> *const Node {
        self.0.as_ptr()
    }
}

impl core::ops::Deref for NodeRef {
    type Target = Node;
    fn deref(&self) -> &Node {
        // SAFETY: the owner's reference keeps the node alive.
        unsafe { self.0.as_ref() }
    }
}

impl Drop for NodeRef {
    fn drop(&mut self) {
        // SAFETY: made by `NodeRef::new`; this is the owner's one reference.
        unsafe { Node::owner_ended(self.0.as_ptr()) };
    }
}

// SAFETY: the node's shared parts are atomics and a locked map; a `NodeRef` is moved between a
// task's records, not shared.
unsafe impl Send for NodeRef {}

/// The last writer of an address among a node's children, and the readers since.
#[derive(Default)]
struct Dep {
    writer: Option<Arc<Task>>,
    readers: Vec<Arc<Task>>,
}

/// A taskgroup: its unfinished tasks, the group it is nested in, and its task reductions
/// (the last descriptor registered, see `reductions`; inherited from the outer group).
pub struct Group {
    count: AtomicU32,
    outer: Option<Arc<Group>>,
    pub reductions: AtomicUsize,
    /// `cancel taskgroup` was done in it: its tasks (and theirs) that have not started are
    /// discarded.
    pub cancelled: AtomicBool,
    /// The group a work-sharing construct with task reductions opens for them: not a
    /// `taskgroup` of the program (`cancel_target`).
    workshare: bool,
}

impl Group {
    fn new(outer: Option<Arc<Group>>, reductions: usize, workshare: bool) -> Group {
        Group {
            count: AtomicU32::new(0),
            outer,
            reductions: AtomicUsize::new(reductions),
            cancelled: AtomicBool::new(false),
            workshare,
        }
    }

    /// The taskgroup `cancel taskgroup` and its cancellation points bind to when this is the
    /// innermost group: the program's innermost `taskgroup`, which a work-sharing
    /// construct's own group is not.
    pub fn cancel_target(&self) -> &Group {
        match &self.outer {
            Some(outer) if self.workshare => outer,
            _ => self,
        }
    }

    /// Whether this group or one it is nested in is cancelled.
    pub fn cancelled_here_or_outside(&self) -> bool {
        let mut g = Some(self);
        while let Some(x) = g {
            if x.cancelled.load(Ordering::Acquire) {
                return true;
            }
            g = x.outer.as_deref();
        }
        false
    }
}

impl Group {
    /// A region's outermost group, with its reductions registered (GOMP_parallel_reductions).
    pub fn with_reductions(descriptor: usize) -> Arc<Group> {
        Arc::new(Group::new(None, descriptor, false))
    }
}

pub struct Task {
    f: TaskFn,
    /// Its `priority` clause's value, at most max-task-priority-var (0 without one).
    priority: u32,
    /// The task's copy of its arguments; the task's code writes to it (its firstprivate
    /// variables).
    args: UnsafeCell<Args>,
    /// The arguments were made by the task's copy constructor (C++ firstprivate objects): the
    /// task runs even when cancelled before it started, so that its code destroys them, as
    /// libgomp's (`copy_ctors_done`).
    constructed: bool,
    final_task: bool,
    /// The task's ICVs when they differ from those of its team's implicit tasks
    /// (`Team::icv`), which it has otherwise (a task made by a thread that changed none).
    icv: Option<alloc::boxed::Box<Icv>>,
    /// The node of the task that made it, which counts it among its children (`taskwait`);
    /// null for a taskloop's tasks in the loop's own taskgroup, whose end waits for them
    /// before the making task can do anything else (see `defer`).
    parent: *const Node,
    group: Option<Arc<Group>>,
    team: *const super::team::Team,
    /// What only a task with dependences or a `detach` event has.
    extra: Option<alloc::boxed::Box<Extra>>,
}

// A task's `Arc` block (two counts and the record) fits the heap's 128-byte class: two lines.
const _: () = assert!(core::mem::size_of::<Task>() + 16 <= 128);

/// The parts of a task with dependences or an event, kept out of its record: a deferred
/// task's record is written on the CPU that makes it and read on the one that runs it, one
/// cache line handed over per line it spans, and without these it spans two.
struct Extra {
    /// The task has dependences: it is in its parent's dependence map, so later siblings may
    /// wait for it (`done`, `successors`). A task without any is never anyone's predecessor.
    ordered: bool,
    /// Unfinished predecessors, plus one while the task is being created.
    npred: AtomicU32,
    done: AtomicBool,
    successors: SpinLock<Vec<Arc<Task>>>,
    /// A detachable task's event: the task completes when it is fulfilled too (`detach`).
    event: Option<Arc<Event>>,
}

impl Task {
    /// The dependence state of a task in a dependence map (every such task has it).
    fn deps(&self) -> &Extra {
        match &self.extra {
            Some(x) => x,
            None => super::team::fatal("a task without dependences in a dependence map"),
        }
    }

    /// Whether the task has dependences.
    fn ordered(&self) -> bool {
        self.extra.as_ref().is_some_and(|x| x.ordered)
    }

    /// Whether a task with dependences has finished.
    fn done(&self) -> bool {
        self.deps().done.load(Ordering::Acquire)
    }

    fn event(&self) -> Option<&Arc<Event>> {
        self.extra.as_ref().and_then(|x| x.event.as_ref())
    }
}

// SAFETY: a task is run by one thread at a time; its raw team pointer names a team that lives
// until the task has finished (the team's barriers wait for it), and the rest is atomics and
// locked lists.
unsafe impl Send for Task {}
unsafe impl Sync for Task {}

/// The current task's node, made on first use, for children queued in `q` (its team's).
fn node_of(c: &mut Ctx, q: &'static Queue) -> *const Node {
    c.node.get_or_insert_with(|| NodeRef::new(&q.solo)).ptr()
}

fn queue_of(c: &Ctx) -> Option<&'static Queue> {
    // SAFETY: teams are never freed.
    (!c.team.is_null() && (c.nthreads > 1 || unsafe { (*c.team).defers_tasks.load(Ordering::Relaxed) }))
        .then(|| unsafe { &(*c.team).tasks })
}

/// Runs `f` as a task of its own on this thread now, with the current task's team, ICVs and
/// group, and `final` added. The task runs in the current task's record, with the fields an
/// included task has of its own (ICVs, `final`, its children) swapped in and back: the rest
/// (team, thread number, levels, group, places, work-sharing state) is the same for both, and
/// building a second record cost as much as the rest of an undeferred task (84 cycles per
/// `task if(0)` against libgomp's 37).
#[inline(always)]
fn run_included(f: TaskFn, arg: *mut u8, final_task: bool) {
    run_included_in(thread::ctx(), f, arg, final_task);
}

/// `run_included` in record `c`, the current task's (found once: each look is three
/// dependent loads, a good part of an undeferred task's ~23 cycles).
#[inline(always)]
fn run_included_in(c: *mut thread::Ctx, f: TaskFn, arg: *mut u8, final_task: bool) {
    // Its own identity for nestable locks: an address in this frame, which no other live task
    // (a record elsewhere, or an included task in another frame) has.
    let identity = 0u8;
    // SAFETY: `c` is the current task's record; no reference to it is held across `f`, which
    // reaches it again through `thread::ctx`.
    let (icv, in_final, node, owner) = unsafe {
        let c = &mut *c;
        let saved = (c.icv, c.in_final, c.node.take(), c.lock_owner);
        c.in_final |= final_task;
        c.lock_owner = &identity as *const u8 as *mut u8;
        saved
    };
    f(arg);
    // SAFETY: the same record: `f` may have started and ended regions, tasks and groups, each
    // of which restores what it changed (the thread's current record included).
    let c = unsafe { &mut *c };
    c.icv = icv;
    c.in_final = in_final;
    c.lock_owner = owner;
    // The included task's children (if it deferred any) keep their node alive themselves.
    drop(core::mem::replace(&mut c.node, node));
}

/// Whether a task that has not started is discarded: its region or one of its taskgroups
/// is cancelled.
fn discarded(t: &Task) -> bool {
    if !super::icv::cancellation() {
        return false;
    }
    // SAFETY: see `Task`.
    let team = unsafe { &*t.team };
    team.cancelled.load(Ordering::Acquire) || t.group.as_ref().is_some_and(|g| g.cancelled_here_or_outside())
}

/// Runs a deferred task (taken from a queue) on this thread, unless it is discarded (and its
/// arguments need no destructors), and finishes it.
fn execute(t: Arc<Task>) {
    if !t.parent.is_null() {
        // SAFETY: see `finish`: the child has not ended.
        unsafe { Node::child_started(t.parent, (*t.team).tasks.solo()) };
    }
    if !t.constructed && discarded(&t) {
        complete(&t);
        return;
    }
    // SAFETY: only the thread running the task touches its arguments.
    let arg = unsafe { (*t.args.get()).ptr() };
    // The running thread belongs to the task's team (only its threads take the team's tasks),
    // so its current record has the task's team, thread number and levels; the task's own
    // ICVs, final flag, group, children and lock identity are swapped in, as for an included
    // task.
    let c = thread::ctx();
    let group = core::mem::replace(&mut c.group, t.group.clone());
    let (icv, in_final, node, owner) = (c.icv, c.in_final, c.node.take(), c.lock_owner);
    // SAFETY: see `Task`.
    c.icv = t.icv.as_deref().copied().unwrap_or_else(|| unsafe { (*t.team).icv });
    c.in_final = t.final_task;
    let identity = 0u8;
    c.lock_owner = &identity as *const u8 as *mut u8;
    (t.f)(arg);
    let c = thread::ctx();
    (c.icv, c.in_final, c.lock_owner) = (icv, in_final, owner);
    drop(core::mem::replace(&mut c.node, node));
    drop(core::mem::replace(&mut c.group, group));
    complete(&t);
}

/// A deferred task's body has run (or it was discarded): it is finished, unless it waits for
/// its event too (`detach`).
fn complete(t: &Task) {
    match t.event() {
        Some(e) => e.arrive(),
        None => finish(t),
    }
}

/// A task has completed: release its successors, and count it out of its parent, group and
/// team.
pub fn finish(t: &Task) {
    // SAFETY: see `Task`.
    let team = unsafe { &*t.team };
    let solo = team.tasks.solo();
    if t.ordered() {
        let x = t.deps();
        let successors = {
            let mut s = x.successors.lock();
            x.done.store(true, Ordering::Release);
            core::mem::take(&mut *s)
        };
        for s in successors {
            if s.deps().npred.fetch_sub(1, Ordering::AcqRel) == 1 {
                team.tasks.push(s);
            }
        }
    }
    if let Some(g) = &t.group {
        g.count.fetch_sub(1, Ordering::SeqCst);
    }
    if !t.parent.is_null() {
        // SAFETY: the task's parent node lives until its children have ended; this one ends
        // here (a task finishes once).
        unsafe { Node::child_ended(t.parent, solo) };
    }
    team.tasks.count_finished(solo);
    // Waiters test what this changed while they spin; only sleepers need the word.
    team.tasks.signal.nudge();
}

/// The addresses of a `depend` array and whether each is only read (`in`), in libgomp's two
/// layouts: [n, nout, addr...] and (gcc 9+) [0, n, nout, nmutexinoutset, nin, addr..., depobj...].
fn dependences(depend: *const usize) -> Vec<(usize, bool)> {
    // SAFETY: the compiler's depend array, laid out as described.
    unsafe {
        let word = |i: usize| *depend.add(i);
        let mut out = Vec::new();
        if word(0) != 0 {
            let (n, nout) = (word(0), word(1));
            for i in 0..n {
                out.push((word(2 + i), i >= nout));
            }
            return out;
        }
        let (n, nout, nmutex, nin) = (word(1), word(2), word(3), word(4));
        let normal = nout + nmutex + nin;
        for i in 0..n {
            if i < normal {
                out.push((word(5 + i), i >= nout + nmutex));
            } else {
                // A depobj: [address, kind].
                let d = word(5 + i) as *const usize;
                let kind = *d.add(1);
                match kind {
                    DEPEND_IN => out.push((*d, true)),
                    DEPEND_OUT | DEPEND_INOUT | DEPEND_MUTEXINOUTSET => out.push((*d, false)),
                    _ => super::team::fatal("unknown dependence kind in a depend clause"),
                }
            }
        }
        out
    }
}

/// The unfinished siblings a task with these dependences must wait for; with `me`, also
/// records it as the latest reader or writer of each address. An address may come more than
/// once (two clauses, or an `iterator` that names it twice): the task never waits for itself.
fn predecessors(node: &Node, deps: &[(usize, bool)], me: Option<&Arc<Task>>) -> Vec<Arc<Task>> {
    let mut preds: Vec<Arc<Task>> = Vec::new();
    let mut add = |t: &Arc<Task>| {
        let itself = me.is_some_and(|m| Arc::ptr_eq(m, t));
        if !itself && !t.done() && !preds.iter().any(|p| Arc::ptr_eq(p, t)) {
            preds.push(t.clone());
        }
    };
    let mut map = node.own.deps.lock();
    if me.is_some() {
        node.own.has_deps.store(true, Ordering::Relaxed);
    }
    for &(addr, read_only) in deps {
        let e = map.entry(addr).or_default();
        e.readers.retain(|r| !r.done());
        if read_only {
            if let Some(w) = &e.writer {
                add(w);
            }
            if let Some(me) = me {
                e.readers.push(me.clone());
            }
        } else {
            if e.readers.is_empty() {
                if let Some(w) = &e.writer {
                    add(w);
                }
            }
            for r in &e.readers {
                add(r);
            }
            if let Some(me) = me {
                e.writer = Some(me.clone());
                e.readers.clear();
            }
        }
    }
    preds
}

/// Waits, running the current task's children meanwhile, until `done` holds.
fn help_children_until(c: &mut Ctx, done: impl Fn() -> bool) {
    let Some(q) = queue_of(c) else {
        return;
    };
    let node = node_of(c, q);
    // SAFETY: the current task's own node, alive while the task is.
    let started = || unsafe { (*node).children_started() };
    q.help_until(|t| t.parent == node, None, done, started);
}

/// Waits for the unfinished siblings named by `depend` (an undeferred task's dependences, or
/// `taskwait depend`).
fn wait_for_dependences(depend: *const usize) {
    let c = thread::ctx();
    let Some(node) = c.node.as_ref() else {
        return; // no children: nothing to wait for
    };
    let preds = predecessors(node, &dependences(depend), None);
    help_children_until(c, || preds.iter().all(|p| p.done()));
}

/// A task's priority from GOMP_task's or GOMP_taskloop's `flags` and `priority` arguments: the
/// clause's value, at most max-task-priority-var, as libgomp bounds it (0 without the clause).
pub fn priority(flags: u32, priority: i32) -> u32 {
    if flags & FLAG_PRIORITY == 0 {
        return 0;
    }
    (priority.max(0) as u32).min(super::icv::max_task_priority())
}

/// GOMP_task's common case, checked before anything else: an undeferred task (`if(0)`, inside
/// a final task, a team of one) without a copy constructor, dependences or an event runs its
/// body at once. False if the task is not such a task (`task` then does it all).
#[inline(always)]
pub fn run_if_included(
    f: TaskFn,
    data: *mut u8,
    cpyfn: CopyFn,
    if_clause: bool,
    flags: u32,
    detach: *mut usize,
) -> bool {
    if cpyfn.is_some() || !detach.is_null() || flags & FLAG_DEPEND != 0 {
        return false;
    }
    let c = thread::ctx();
    if if_clause && !c.in_final && queue_of(c).is_some() {
        return false;
    }
    run_included_in(c, f, data, flags & FLAG_FINAL != 0);
    true
}

/// GOMP_task.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
pub fn task(
    f: TaskFn,
    data: *mut u8,
    cpyfn: CopyFn,
    arg_size: i64,
    arg_align: i64,
    if_clause: bool,
    flags: u32,
    depend: *const usize,
    priority: u32,
    detach: *mut usize,
) {
    let c = thread::ctx();
    let final_task = flags & FLAG_FINAL != 0;
    let (size, align) = (arg_size.max(0) as usize, arg_align.max(1) as usize);
    let event = (!detach.is_null()).then(Event::new);
    if event.is_some() && !c.team.is_null() {
        // Any thread may fulfil the event and so finish the task: the team's counts and lanes
        // are shared from here on.
        // SAFETY: teams are never freed.
        let team = unsafe { &*c.team };
        team.tasks.solo.store(false, Ordering::SeqCst);
    }
    if let Some(e) = &event {
        // SAFETY: gcc's event variable and argument block.
        unsafe { e.publish(detach, data) };
    }
    let limit = PENDING_LIMIT_PER_THREAD * c.nthreads + 1;
    let queue = queue_of(c).filter(|q| if_clause && !c.in_final && q.may_defer(limit));
    let Some(queue) = queue else {
        if !c.in_final && flags & FLAG_DEPEND != 0 {
            wait_for_dependences(depend);
        }
        match cpyfn {
            Some(_) => {
                let mut args = Args::copy(data, cpyfn, size, align, size);
                run_included(f, args.ptr(), final_task);
            }
            None => run_included(f, data, final_task),
        }
        if let Some(e) = event {
            e.arrive();
            e.wait();
        }
        return;
    };
    let args = Args::copy(data, cpyfn, size, align, size);
    let deps = if flags & FLAG_DEPEND != 0 { dependences(depend) } else { Vec::new() };
    defer(c, queue, f, (args, cpyfn.is_some()), (final_task, priority), &deps, event, true);
}

/// Makes a deferred task and queues it, or leaves it with its predecessors. `constructed`: its
/// arguments were made by a copy constructor. `as_child`: counted among the making task's
/// children. A taskloop's tasks in the loop's own taskgroup are not: the group's end waits for
/// them before the making task goes on, so no `taskwait` can see them unfinished, and the count
/// and the node's reference, both on lines the finishing thread writes too, were two
/// hand-overs more per task.
#[allow(clippy::too_many_arguments)]
fn defer(
    c: &mut Ctx,
    queue: &'static Queue,
    f: TaskFn,
    (args, constructed): (Args, bool),
    (final_task, priority): (bool, u32),
    deps: &[(usize, bool)],
    event: Option<Arc<Event>>,
    as_child: bool,
) {
    debug_assert!(as_child || deps.is_empty());
    let parent = if as_child { node_of(c, queue) } else { core::ptr::null() };
    let solo = queue.solo();
    queue.count_made(solo);
    let t = Arc::new(Task {
        f,
        priority,
        args: UnsafeCell::new(args),
        constructed,
        final_task,
        // SAFETY: the current task's team (not null: the task has a queue).
        icv: (c.icv != unsafe { (*c.team).icv }).then(|| alloc::boxed::Box::new(c.icv)),
        parent,
        group: c.group.clone(),
        team: c.team,
        extra: (!deps.is_empty() || event.is_some()).then(|| {
            alloc::boxed::Box::new(Extra {
                ordered: !deps.is_empty(),
                npred: AtomicU32::new(1),
                done: AtomicBool::new(false),
                successors: SpinLock::new(Vec::new()),
                event: event.clone(),
            })
        }),
    });
    if let Some(e) = event {
        e.attach(t.clone());
    }
    if !t.parent.is_null() {
        // SAFETY: the current task's own node (`c.node`).
        unsafe { (*t.parent).child_made(solo) };
    }
    if let Some(g) = &c.group {
        g.count.fetch_add(1, Ordering::AcqRel);
    }
    if deps.is_empty() {
        queue.push(t);
        return;
    }
    if t.parent.is_null() {
        return;
    }
    // SAFETY: the current task's own node (`c.node`).
    for p in predecessors(unsafe { &*t.parent }, deps, Some(&t)) {
        let mut s = p.deps().successors.lock();
        if !p.done() {
            t.deps().npred.fetch_add(1, Ordering::AcqRel);
            s.push(t.clone());
        }
    }
    if t.deps().npred.fetch_sub(1, Ordering::AcqRel) == 1 {
        queue.push(t);
    }
}

/// GOMP_taskwait: waits for the current task's children, running them meanwhile.
pub fn taskwait() {
    let c = thread::ctx();
    let Some(node) = c.node.as_ref().map(NodeRef::ptr) else {
        return;
    };
    // SAFETY: the current task's own node, alive while the task is.
    let node = unsafe { &*node };
    help_children_until(c, || node.children_done());
    if node.own.has_deps.load(Ordering::Relaxed) {
        node.own.has_deps.store(false, Ordering::Relaxed);
        node.own.deps.lock().clear();
    }
}

/// GOMP_taskwait_depend.
pub fn taskwait_depend(depend: *const usize) {
    wait_for_dependences(depend);
}

/// GOMP_taskyield: nothing, as libgomp 12 (the specification allows a switch to another task
/// there but does not require one). Running a queued task here changed the order a program of
/// one thread sees: libgomp runs the tasks made before a `taskyield` after it.
pub fn taskyield() {}

/// GOMP_taskgroup_start.
pub fn taskgroup_start() {
    group_start(thread::ctx(), false);
}

/// The group of a work-sharing construct with task reductions (`reductions::workshare_begin`),
/// ended by `taskgroup_end`.
pub fn workshare_group_start() {
    group_start(thread::ctx(), true);
}

/// GOMP_taskgroup_end: waits for the group's tasks (and theirs), running them meanwhile.
pub fn taskgroup_end() {
    group_end(thread::ctx());
}

fn group_start(c: &mut Ctx, workshare: bool) {
    let outer = c.group.take();
    let reductions = outer.as_ref().map_or(0, |g| g.reductions.load(Ordering::Acquire));
    c.group = Some(Arc::new(Group::new(outer, reductions, workshare)));
}

fn group_end(c: &mut Ctx) {
    let Some(g) = c.group.take() else {
        return;
    };
    if let Some(q) = queue_of(c) {
        // When none of the group's tasks is ready (they wait for predecessors), the waiting
        // task's own children, as libgomp's: a predecessor is a sibling, so a child of the
        // waiting task, and may be in an outer group. With one thread nobody else would run
        // it (libgomp's depend-3.c hung at OMP_NUM_THREADS=1).
        let node = c.node.as_ref().map(NodeRef::ptr);
        let child = |t: &Task| node.is_some_and(|n| t.parent == n);
        q.help_until(
            |t| t.group.as_ref().is_some_and(|tg| Arc::ptr_eq(tg, &g)),
            node.is_some().then_some(&child as &dyn Fn(&Task) -> bool),
            || g.count.load(Ordering::Acquire) == 0,
            || false,
        );
    }
    c.group = g.outer.clone();
}

/// A taskloop's iteration space in task-sized pieces: (number of tasks, iterations of each of
/// the first `extra` tasks is `per + 1`, of the rest `per`).
fn split(n: u64, flags: u32, num_tasks: u64, nthreads: u64) -> (u64, u64, u64) {
    let tasks = if flags & FLAG_GRAINSIZE != 0 {
        let g = num_tasks.max(1);
        if flags & FLAG_STRICT != 0 {
            n.div_ceil(g)
        } else {
            (n / g).max(1)
        }
    } else if num_tasks == 0 {
        nthreads.max(1)
    } else {
        num_tasks
    };
    let tasks = tasks.clamp(1, n.max(1));
    if flags & FLAG_GRAINSIZE != 0 && flags & FLAG_STRICT != 0 {
        // Every task but the last gets exactly the grain size.
        return (tasks, 0, num_tasks.max(1));
    }
    (tasks, n % tasks, n / tasks)
}

/// The number of iterations of a taskloop.
fn trip_count(bounds: (u64, u64, u64), signed: bool, up: bool) -> u64 {
    let (start, end, step) = bounds;
    if signed {
        let (s, e, d) = (start as i64 as i128, end as i64 as i128, step as i64 as i128);
        if d > 0 && e > s {
            ((e - s + d - 1) / d) as u64
        } else if d < 0 && s > e {
            ((s - e - d - 1) / -d) as u64
        } else {
            0
        }
    } else if up {
        if end > start {
            ((end - start) as u128).div_ceil(step as u128) as u64
        } else {
            0
        }
    } else if start > end {
        ((start - end) as u128).div_ceil(step.wrapping_neg() as u128) as u64
    } else {
        0
    }
}

/// GOMP_taskloop and GOMP_taskloop_ull: each task gets a copy of the arguments whose first two
/// words are its first and end values of the loop variable. The loop is in a taskgroup of its
/// own unless `nogroup`.
#[allow(clippy::too_many_arguments)]
pub fn taskloop(
    f: TaskFn,
    data: *mut u8,
    cpyfn: CopyFn,
    arg_size: i64,
    arg_align: i64,
    flags: u32,
    num_tasks: u64,
    priority: u32,
    bounds: (u64, u64, u64),
    signed: bool,
) {
    let (start, end, step) = bounds;
    let n = trip_count(bounds, signed, flags & FLAG_UP != 0);
    let grouped = flags & FLAG_NOGROUP == 0;
    // With `reduction`, the third word of the arguments points to the reductions' descriptor.
    let reductions = if flags & FLAG_REDUCTION != 0 {
        // SAFETY: gcc's taskloop argument block starts with the two bounds and that pointer.
        unsafe { *(data as *mut *mut usize).add(2) }
    } else {
        core::ptr::null_mut()
    };
    if n == 0 {
        if grouped && flags & FLAG_REDUCTION != 0 {
            // Tells the program the reductions were not registered (libgomp's ABI).
            // SAFETY: the descriptor's third word.
            unsafe { *reductions.add(2) = 0 };
        }
        return;
    }
    let value = |i: u64| -> u64 {
        if signed {
            (start as i64 as i128 + i as i128 * step as i64 as i128) as i64 as u64
        } else {
            start.wrapping_add(i.wrapping_mul(step))
        }
    };
    let c = thread::ctx();
    let (tasks, extra, per) = split(n, flags, num_tasks, c.nthreads as u64);
    let size = arg_size.max(16) as usize;
    let align = arg_align.max(8) as usize;
    let final_task = flags & FLAG_FINAL != 0;
    // As libgomp: a taskloop whose tasks would take the unfinished ones past the limit runs
    // them all at once, here. Each deferred task costs a queueing, a hand-over and its
    // counts, ~0.3-0.6 us between two vCPUs; EPCC's `TASKLOOP 1` (2,048 tasks of 0.1 us)
    // took 2.6x libgomp's time when the ones under the limit were deferred.
    let limit = PENDING_LIMIT_PER_THREAD as u64 * c.nthreads as u64;
    let queue = queue_of(c).filter(|q| flags & FLAG_IF != 0 && !c.in_final && q.unfinished() as u64 + tasks <= limit);
    if grouped {
        group_start(c, false);
        if flags & FLAG_REDUCTION != 0 {
            super::reductions::taskgroup_register(reductions);
        }
    }
    if queue.is_none() && cpyfn.is_none() && size <= super::task_args::STACK_BLOCK && align <= 16 {
        run_taskloop_here(f, data, arg_size.max(0) as usize, final_task, (tasks, extra, per, n), (end, value));
    } else {
        defer_taskloop(
            f,
            data,
            (cpyfn, arg_size, align, size),
            (final_task, priority),
            (tasks, extra, per, n),
            (end, &value),
            (queue, grouped),
        );
    }
    if grouped {
        group_end(thread::ctx());
    }
}

/// A taskloop's tasks, one after another on this thread (undeferred), without a copy
/// constructor and with arguments that fit a task record's inline block: the encountering
/// task's state is saved once, each task gets a fresh copy of the arguments with its bounds in
/// a block on this stack, and what a task may change (ICVs, its children's node) is put back
/// after each. The general path (`run_included` per task, the block built each time) cost 90
/// cycles per task against libgomp's 17-21 (`taskloop num_tasks(2048)` of empty iterations).
fn run_taskloop_here(
    f: TaskFn,
    data: *mut u8,
    arg_size: usize,
    final_task: bool,
    (tasks, extra, per, n): (u64, u64, u64, u64),
    (end, value): (u64, impl Fn(u64) -> u64),
) {
    let cancellable = super::icv::cancellation();
    let c = thread::ctx();
    let (icv, in_final, node, owner) = (c.icv, c.in_final, c.node.take(), c.lock_owner);
    // One identity for these tasks' nestable locks: they run one after another, and a task
    // must release its locks before it ends.
    let identity = 0u8;
    c.lock_owner = &identity as *const u8 as *mut u8;
    c.in_final = in_final | final_task;
    let mut block = super::task_args::StackBlock([0; super::task_args::STACK_BLOCK]);
    let words = block.0.as_mut_ptr() as *mut u64;
    let mut lo = 0u64;
    for t in 0..tasks {
        // Tasks created in a cancelled region or taskgroup are discarded (`cancel`).
        if cancellable && super::cancel::new_task_discarded() {
            break;
        }
        let len = if t < extra { per + 1 } else { per };
        let hi = if t + 1 == tasks { n } else { (lo + len).min(n) };
        // SAFETY: `data` holds `arg_size` bytes (the compiler's argument block), at most the
        // block's size (checked by the caller), whose first two words are the task's bounds
        // (gcc's taskloop layout).
        unsafe {
            copy_small(data, block.0.as_mut_ptr(), arg_size);
            *words = value(lo);
            *words.add(1) = if hi == n { end } else { value(hi) };
        }
        f(words as *mut u8);
        // The same record (see `run_included`); the task's ICV changes end with it, and its
        // deferred children, if any, keep their node alive themselves.
        let c = thread::ctx();
        c.icv = icv;
        c.in_final = in_final | final_task;
        c.lock_owner = &identity as *const u8 as *mut u8;
        if c.node.is_some() {
            c.node = None;
        }
        lo = hi;
        if lo >= n {
            break;
        }
    }
    let c = thread::ctx();
    (c.in_final, c.lock_owner) = (in_final, owner);
    c.node = node;
}

/// Copies `len` bytes (a task's argument block, a few words): whole words, then the bytes
/// left. The kernel's `memcpy` is a general one, two calls per block here (the compiler turns
/// plain copy loops into calls to it; volatile reads keep them loops).
///
/// # Safety
/// `src` must hold `len` readable bytes and `dst` room for them; they must not overlap.
#[inline(always)]
unsafe fn copy_small(src: *const u8, dst: *mut u8, len: usize) {
    // Whole words when both are aligned (the compiler's blocks are): written as words, so
    // that the task's loads of them are forwarded from the stores (bytes written one by one
    // are not, and cost each such load a wait: 46 cycles more per task than libgomp's).
    let words = if (src as usize | dst as usize).is_multiple_of(8) { len / 8 } else { 0 };
    // SAFETY: the caller's contract; word accesses only at 8-byte aligned addresses.
    unsafe {
        for i in 0..words {
            let w = core::ptr::read_volatile((src as *const u64).add(i));
            (dst as *mut u64).add(i).write(w);
        }
        for i in words * 8..len {
            *dst.add(i) = core::ptr::read_volatile(src.add(i));
        }
    }
}

/// A taskloop's tasks deferred on `queue`, or with no queue run here one by one, each with
/// its own argument block (made by the copy constructor if there is one).
fn defer_taskloop(
    f: TaskFn,
    data: *mut u8,
    (cpyfn, arg_size, align, size): (CopyFn, i64, usize, usize),
    (final_task, priority): (bool, u32),
    (tasks, extra, per, n): (u64, u64, u64, u64),
    (end, value): (u64, &dyn Fn(u64) -> u64),
    (queue, grouped): (Option<&'static Queue>, bool),
) {
    let c = thread::ctx();
    let mut lo = 0u64;
    for t in 0..tasks {
        // Tasks created in a cancelled region or taskgroup are discarded (`cancel`).
        if super::cancel::new_task_discarded() {
            break;
        }
        let len = if t < extra { per + 1 } else { per };
        let hi = if t + 1 == tasks { n } else { (lo + len).min(n) };
        let mut args = Args::copy(data, cpyfn, arg_size.max(0) as usize, align, size);
        let words = args.ptr() as *mut u64;
        // SAFETY: the block's first two words are the task's bounds (gcc's taskloop layout);
        // `args` has at least 16 bytes from `off`, aligned to 8.
        unsafe {
            *words = value(lo);
            *words.add(1) = if hi == n { end } else { value(hi) };
        }
        match queue {
            Some(q) => defer(c, q, f, (args, cpyfn.is_some()), (final_task, priority), &[], None, !grouped),
            None => run_included(f, words as *mut u8, final_task),
        }
        lo = hi;
        if lo >= n {
            break;
        }
    }
}
