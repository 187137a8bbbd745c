//! Each thread's OpenMP state: the implicit task it runs now (its team, its number, its ICVs,
//! where it is in the team's work-sharing constructs), reached through the kernel's record of
//! the current thread.

use alloc::boxed::Box;
use alloc::sync::Arc;
use core::sync::atomic::AtomicU32;

use super::icv::{self, Icv};
use super::places::{self, Partition};
use super::tasks::{Group, NodeRef};
use super::team::Team;
use super::work::Cursor;

/// The record of a thread's implicit task (what a thread is inside one parallel region, or
/// outside all of them). An explicit task runs in the record of the task it interrupts, with
/// the fields a task has of its own (ICVs, final flag, group, children, lock identity) swapped
/// in and back (`tasks::run_included`, `tasks::execute`); the rest is the same for both.
pub struct Ctx {
    /// The team (null for the initial task outside any region).
    pub team: *const Team,
    /// Thread number in the team, and the team's size.
    pub id: u32,
    pub nthreads: u32,
    /// Nesting depth of parallel regions, and of active ones (teams of more than one).
    pub level: u32,
    pub active_level: u32,
    /// The task that encountered the region (for ancestor queries).
    pub parent: *const Ctx,
    pub icv: Icv,
    /// Work-sharing constructs and singles this thread has met in the team.
    pub ws_seq: u64,
    pub single_seq: u64,
    /// Team barriers this implicit task has passed (or left, cancelled) in its region.
    pub barriers: u32,
    /// The loop or sections construct the thread is working through.
    pub cur: Cursor,
    /// Inside a final task (tasks it creates are included).
    pub in_final: bool,
    /// This task's children (made when it first defers one).
    pub node: Option<NodeRef>,
    /// The innermost taskgroup the tasks it creates belong to.
    pub group: Option<Arc<Group>>,
    /// Its place (`places::NONE` without binding) and place partition.
    pub place: u32,
    pub part: Partition,
    /// The `teams` region this task is part of: its number, and the number of teams (1 and 0
    /// outside any; see `teams`).
    pub num_teams: u32,
    pub team_num: u32,
    /// The count of threads its contention group has in teams beyond their masters (for
    /// thread-limit-var, see `team::team_size`); null: the thread's own (`OmpThread::busy`), as
    /// for a thread's initial task.
    pub busy: *const AtomicU32,
    /// The identity that owns nestable locks for this task when it is not the record's own
    /// address (null): an explicit task runs in the record of the task it interrupts (see
    /// `tasks::run_included` and `tasks::execute`) but is a task of its own.
    pub lock_owner: *mut u8,
}

impl Ctx {
    pub fn initial() -> Ctx {
        Ctx {
            team: core::ptr::null(),
            id: 0,
            nthreads: 1,
            level: 0,
            active_level: 0,
            parent: core::ptr::null(),
            icv: icv::initial(),
            ws_seq: 0,
            single_seq: 0,
            barriers: 0,
            cur: Cursor::NONE,
            in_final: false,
            node: None,
            group: None,
            place: places::of_cpu(crate::cpu::id() as u32).unwrap_or(places::NONE),
            part: places::all(),
            num_teams: 1,
            team_num: 0,
            busy: core::ptr::null(),
            lock_owner: core::ptr::null_mut(),
        }
    }
}

/// What the kernel's thread record points to: the current task, the thread's initial task,
/// and the teams this thread has led (kept warm per nesting level). Every runtime call reads
/// `ctx`: the record has cache lines of its own, not shared with another thread's record or
/// other heap data that other CPUs write.
#[repr(align(128))]
pub struct OmpThread {
    /// The current task: changed only through `set_task` (which keeps the thread record's
    /// `omp_hot`, see `set_hot`).
    ctx: *mut Ctx,
    initial: Ctx,
    pub hot: [*mut Team; 4],
    /// The teams this thread led inside `target` regions, kept while it runs outside them
    /// (`target`: a target region's parallel regions are those of a new initial thread).
    pub device_hot: [*mut Team; 4],
    /// The busy count of the contention group this thread's initial task starts (see
    /// `Ctx::busy`); the record is never freed.
    pub busy: AtomicU32,
}

/// The current thread's state, made on first use. Inlined: every runtime call (a loop chunk
/// too) starts here, and only the first one of a thread takes the out-of-line `make`.
#[inline(always)]
pub fn this() -> &'static mut OmpThread {
    let t = crate::sched::current();
    // SAFETY: the current thread's record is alive while it runs; only this thread uses its
    // `omp` field.
    unsafe {
        if (*t).omp.is_null() {
            make(t);
        }
        &mut *((*t).omp as *mut OmpThread)
    }
}

/// Gives thread `t` (the current one) its OpenMP state.
#[cold]
#[inline(never)]
fn make(t: *mut crate::sched::Thread) {
    let st = Box::into_raw(Box::new(OmpThread {
        ctx: core::ptr::null_mut(),
        initial: Ctx::initial(),
        hot: [core::ptr::null_mut(); 4],
        device_hot: [core::ptr::null_mut(); 4],
        busy: AtomicU32::new(0),
    }));
    // SAFETY: `st` was just made; `t` is the current thread (see `this`).
    unsafe {
        (*st).ctx = &mut (*st).initial;
        (*t).omp = st as *mut u8;
    }
}

impl OmpThread {
    /// Whether the thread runs no region: its current task is its initial one.
    pub fn outside_regions(&self) -> bool {
        core::ptr::eq(self.ctx, &self.initial)
    }

    /// The current task.
    pub fn task(&self) -> *mut Ctx {
        self.ctx
    }

    /// Makes `c` (alive until it is replaced) the current task.
    pub fn set_task(&mut self, c: *mut Ctx) {
        self.ctx = c;
        // SAFETY: the caller's live task.
        set_hot(super::work::fast_slot(unsafe { &(*c).cur }));
    }
}

/// Sets the running thread's `omp_hot`: `work::fast_slot` of its current task's cursor (the
/// work share of the unordered dynamic loop it is in, for `work::next`'s fast path, else 0).
/// Called whenever the current task or its cursor changes, with the value computed from the
/// cursor just written (not read back through the thread's state, which the caller may hold
/// a unique reference into); a thread record whose word is 0 (a new one, a forked child's)
/// just takes the general path.
#[inline(always)]
pub fn set_hot(slot: u64) {
    let t = crate::sched::current();
    // SAFETY: the current thread's record; only this thread writes its `omp_hot`.
    unsafe { (*t).omp_hot = slot };
}

/// The work share of the unordered dynamic loop the running thread is in (`set_hot`), or
/// null: two dependent loads (the CPU's record, the thread's), against four to reach it
/// through the current task.
#[inline(always)]
pub fn hot_slot() -> u64 {
    let t = crate::sched::current();
    // SAFETY: the current thread's record is alive while it runs.
    unsafe { (*t).omp_hot }
}

/// The busy count of task `c`'s contention group (`Ctx::busy`).
pub fn busy_of(c: &Ctx) -> &'static AtomicU32 {
    if c.busy.is_null() {
        &this().busy
    } else {
        // SAFETY: a contention group's count outlives its tasks (a thread record, never freed,
        // or a target region's, alive while the region runs).
        unsafe { &*c.busy }
    }
}

/// The current implicit task.
#[inline(always)]
pub fn ctx() -> &'static mut Ctx {
    // SAFETY: `ctx` always points to a live task: the thread's initial one, or one on the
    // stack of a region this thread is still running.
    unsafe { &mut *this().ctx }
}

/// See `omp::after_exec`: the current thread gets a fresh state on its next OpenMP call; the
/// old one is left (leaked: its tasks' records pointed into the old image's stacks, and its
/// teams' workers are gone).
pub fn forget_current() {
    let t = crate::sched::current();
    // SAFETY: the current thread's record; only this thread uses its `omp` fields.
    unsafe {
        (*t).omp = core::ptr::null_mut();
        (*t).omp_hot = 0;
    }
}

/// See `omp::after_fork`: the thread's kept teams are dropped (leaked: their workers do not
/// exist in a forked child).
pub fn forget_teams(state: *mut u8) {
    if !state.is_null() {
        // SAFETY: a thread's `omp` field points to its OmpThread (see `this`), copied with the
        // rest of memory; no other thread exists yet.
        unsafe {
            (*(state as *mut OmpThread)).hot = [core::ptr::null_mut(); 4];
            (*(state as *mut OmpThread)).device_hot = [core::ptr::null_mut(); 4];
        }
    }
}
