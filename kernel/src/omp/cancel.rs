//! Cancellation: the `cancel` and `cancellation point` constructs (OpenMP 5.1, 2.20), in effect
//! only when cancel-var is true (OMP_CANCELLATION). A thread that cancels a region returns
//! true from GOMP_cancel and the compiled code jumps to the region's end; the other threads
//! notice at cancellation points: GOMP_cancellation_point and the cancellable barriers
//! (GOMP_barrier_cancel, GOMP_loop_end_cancel, GOMP_sections_end_cancel), which gcc emits in
//! regions that contain a `cancel`.
//!
//! - `parallel`: the team's `cancelled` flag; threads waiting in a cancellable barrier leave
//!   it, and the team's tasks that have not started are discarded (`tasks::execute`).
//! - `for` and `sections`: the team's `ws_cancelled` mark names the construct by the number of
//!   barriers its threads have passed (every thread of a team meets the same barriers, and a
//!   cancellable construct ends with one, `nowait` being not allowed). Once past the closing
//!   barrier a thread's count no longer matches, so the mark needs no clearing that could race
//!   with the cancellation of the next construct.
//! - `taskgroup`: the innermost taskgroup of the encountering task (the group a work-sharing
//!   construct opens for its task reductions is not one); its tasks and their descendants
//!   that have not started are discarded. Outside any parallel region nothing is cancelled,
//!   as with libgomp, which makes no taskgroup there (every task runs at once): the
//!   cancelling task still goes to its end, and the group's later tasks run.

use core::sync::atomic::Ordering;

use super::icv;
use super::team::Team;
use super::thread::{self, Ctx};

/// The `which` argument (libgomp's GOMP_CANCEL_*).
const PARALLEL: i32 = 1;
const LOOP: i32 = 2;
const SECTIONS: i32 = 4;
const TASKGROUP: i32 = 8;

fn team_of(c: &Ctx) -> Option<&'static Team> {
    // SAFETY: teams are never freed.
    (!c.team.is_null()).then(|| unsafe { &*c.team })
}

/// GOMP_cancellation_point: whether the construct `which` binds to is cancelled.
pub fn cancellation_point(which: i32) -> bool {
    if !icv::cancellation() {
        return false;
    }
    let c = thread::ctx();
    let Some(team) = team_of(c) else {
        return false;
    };
    if which & (LOOP | SECTIONS) != 0 {
        return team.ws_cancelled.load(Ordering::Acquire) == c.barriers.wrapping_add(1);
    }
    if which & TASKGROUP != 0 && c.group.as_ref().is_some_and(|g| g.cancel_target().cancelled.load(Ordering::Acquire)) {
        return true;
    }
    // `cancel parallel` also cancels the region's explicit tasks (taskgroup points).
    team.cancelled.load(Ordering::Acquire)
}

/// GOMP_cancel: cancels the construct `which` binds to (`if` clause false: only a
/// cancellation point); true when the thread is to go to the construct's end.
pub fn cancel(which: i32, do_cancel: bool) -> bool {
    if !icv::cancellation() {
        return false;
    }
    if !do_cancel {
        return cancellation_point(which);
    }
    let c = thread::ctx();
    let team = team_of(c);
    if which & (LOOP | SECTIONS) != 0 {
        // Outside any region the construct is this thread's alone: it just leaves.
        if let Some(team) = team {
            team.ws_cancelled.store(c.barriers.wrapping_add(1), Ordering::Release);
        }
    } else if which & TASKGROUP != 0 {
        if let (Some(_), Some(g)) = (team, &c.group) {
            g.cancel_target().cancelled.store(true, Ordering::Release);
        }
    } else if which & PARALLEL != 0 {
        if let Some(team) = team {
            team.cancelled.store(true, Ordering::Release);
            // Wakes the threads sleeping in a cancellable barrier.
            team.tasks.signal.bump();
        }
    }
    true
}

/// Whether a task created now is discarded at once: its region, or the taskgroup it would
/// belong to (or one that group is nested in), is cancelled.
pub fn new_task_discarded() -> bool {
    if !icv::cancellation() {
        return false;
    }
    let c = thread::ctx();
    team_of(c).is_some_and(|t| t.cancelled.load(Ordering::Acquire))
        || c.group.as_ref().is_some_and(|g| g.cancelled_here_or_outside())
}
