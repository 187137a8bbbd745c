//! Detachable tasks (`task detach(event)`, OpenMP 5.0): such a task completes when its body has
//! run *and* its event has been fulfilled (`omp_fulfill_event`, from any thread), whichever
//! comes last; only then are its dependent tasks released and its parent's `taskwait`, its
//! taskgroup and the team's barriers done with it. The program's `omp_event_handle_t` is a
//! pointer to the task's `Event` (one reference, given up by `omp_fulfill_event`).
//!
//! As in libgomp, a detachable task in a team of one is deferred (as every task of a region's
//! team of one is), run at the next task scheduling point, so that a later task can fulfil its
//! event; one that runs at once (`if(0)`, in a final task, outside any parallel region) makes
//! its creator wait for the event after the body.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicU32, Ordering};

use super::tasks::{self, Task};
use super::wait::{self, Word};
use crate::sync::SpinLock;

pub struct Event {
    /// What is left before the task completes: its body and the fulfilment.
    left: AtomicU32,
    /// The deferred task to finish then (None for one that runs at once).
    task: SpinLock<Option<Arc<Task>>>,
    /// Bumped when the task completes (its creator waits on it when it ran at once).
    done: Word,
}

impl Event {
    pub fn new() -> Arc<Event> {
        Arc::new(Event { left: AtomicU32::new(2), task: SpinLock::new(None), done: Word::new(0) })
    }

    /// Makes the program's handle (a reference that `omp_fulfill_event` gives up) and stores
    /// it where gcc wants it: the `detach` variable, and the first word of the task's argument
    /// block (the task's own copy of the variable).
    ///
    /// # Safety
    /// `detach` and `data` are gcc's: the event variable and the argument block it begins.
    pub unsafe fn publish(self: &Arc<Event>, detach: *mut usize, data: *mut u8) {
        let handle = Arc::into_raw(self.clone()) as usize;
        // SAFETY: see above.
        unsafe {
            *detach = handle;
            if !data.is_null() {
                *(data as *mut usize) = handle;
            }
        }
    }

    /// The deferred task this event completes.
    pub fn attach(&self, t: Arc<Task>) {
        *self.task.lock() = Some(t);
    }

    /// The body has run, or the event is fulfilled: the second of the two completes the task.
    pub fn arrive(&self) {
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            let task = self.task.lock().take();
            if let Some(t) = task {
                tasks::finish(&t);
            }
            self.done.bump();
        }
    }

    /// Waits until the task has completed (a task that ran at once, its body done).
    pub fn wait(&self) {
        wait::wait_until(&self.done, || self.done.load() != 0);
    }
}

/// `omp_fulfill_event`: `handle` is an event a detachable task published, fulfilled once.
pub extern "C" fn omp_fulfill_event(handle: usize) {
    if handle == 0 {
        super::team::fatal("omp_fulfill_event: not an event handle");
    }
    // SAFETY: the reference `publish` made for the program's handle, given up here.
    let e = unsafe { Arc::from_raw(handle as *const Event) };
    e.arrive();
}
