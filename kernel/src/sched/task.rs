//! Tasks: run-to-completion functions queued to one CPU or to any CPU and executed by idle
//! CPUs, without a thread or a stack of their own. `TaskHandle::wait` blocks until done.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use super::WaitQueue;
use crate::sync::IrqSpinLock;

struct Completion {
    done: AtomicBool,
    value: AtomicU64,
    waiters: WaitQueue,
}

pub struct Task {
    work: Box<dyn FnOnce() -> u64 + Send>,
    completion: Arc<Completion>,
}

pub type TaskQueue = VecDeque<Task>;

/// Tasks any CPU may run.
static ANY: IrqSpinLock<TaskQueue> = IrqSpinLock::new(VecDeque::new());
static ANY_LEN: AtomicUsize = AtomicUsize::new(0);

/// A forked child: the parent's queued tasks are not its own.
pub(super) fn reset() {
    let mut q = ANY.lock();
    q.clear();
    ANY_LEN.store(0, Ordering::SeqCst);
}

#[derive(Clone)]
pub struct TaskHandle {
    completion: Arc<Completion>,
}

impl TaskHandle {
    pub fn is_done(&self) -> bool {
        self.completion.done.load(Ordering::Acquire)
    }

    /// Blocks until the task has run; returns its value.
    pub fn wait(&self) -> u64 {
        let c = &self.completion;
        c.waiters.wait_until(|| c.done.load(Ordering::Acquire));
        c.value.load(Ordering::Acquire)
    }
}

/// Queues `work` on CPU `cpu`, or on any CPU when None.
pub fn submit<F>(cpu: Option<usize>, work: F) -> TaskHandle
where
    F: FnOnce() -> u64 + Send + 'static,
{
    let completion =
        Arc::new(Completion { done: AtomicBool::new(false), value: AtomicU64::new(0), waiters: WaitQueue::new() });
    let task = Task { work: Box::new(work), completion: completion.clone() };
    match cpu {
        Some(c) => {
            let s = crate::sched::on_cpu(c);
            let mut q = s.tasks.lock();
            q.push_back(task);
            s.tasks_len.store(q.len(), Ordering::SeqCst);
            drop(q);
            super::kick_if_halted(c);
        }
        None => {
            let mut q = ANY.lock();
            q.push_back(task);
            ANY_LEN.store(q.len(), Ordering::SeqCst);
            drop(q);
            // Wake one halted CPU to take it (polling CPUs will see it anyway).
            if let Some(c) = (0..crate::cpu::count()).find(|&c| crate::sched::on_cpu(c).halted.load(Ordering::SeqCst)) {
                super::kick_if_halted(c);
            }
        }
    }
    TaskHandle { completion }
}

/// Whether this CPU has tasks to run.
pub fn pending() -> bool {
    super::this_sched().tasks_len.load(Ordering::SeqCst) > 0 || ANY_LEN.load(Ordering::SeqCst) > 0
}

fn take_one() -> Option<Task> {
    let s = super::this_sched();
    if s.tasks_len.load(Ordering::SeqCst) > 0 {
        let mut q = s.tasks.lock();
        let t = q.pop_front();
        s.tasks_len.store(q.len(), Ordering::SeqCst);
        if t.is_some() {
            return t;
        }
    }
    if ANY_LEN.load(Ordering::SeqCst) > 0 {
        let mut q = ANY.lock();
        let t = q.pop_front();
        ANY_LEN.store(q.len(), Ordering::SeqCst);
        return t;
    }
    None
}

/// Runs queued tasks (idle loop).
pub fn run_pending() {
    while let Some(task) = take_one() {
        let value = (task.work)();
        let c = task.completion;
        c.value.store(value, Ordering::Release);
        c.done.store(true, Ordering::Release);
        c.waiters.wake_all();
    }
}
