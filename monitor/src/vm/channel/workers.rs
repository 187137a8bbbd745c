//! Threads for forwarded calls that may block: one per such call in flight, created on demand
//! and kept for the next ones. Threads are created by a spawner thread without the seccomp
//! filter (which forbids creating threads); each worker installs the filter on itself first.

use std::collections::VecDeque;
use std::sync::atomic::AtomicU64;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};

use super::{Request, Service};
use crate::vm::vcpu::Shared;

struct Queue {
    jobs: VecDeque<Request>,
    /// Workers waiting for a job.
    idle: usize,
    /// Workers alive or being created.
    total: usize,
    /// Workers asked of the spawner that have not started yet.
    creating: usize,
}

pub(super) struct Workers {
    /// The host thread (pthread_t) performing each slot's call, 0 if none.
    pub busy: Vec<AtomicU64>,
    queue: Mutex<Queue>,
    ready: Condvar,
    max: usize,
    spawn: Mutex<Option<mpsc::Sender<()>>>,
}

impl Workers {
    pub fn new(max: usize) -> Workers {
        Workers {
            busy: (0..hrt_abi::channel::SLOTS).map(|_| AtomicU64::new(0)).collect(),
            queue: Mutex::new(Queue { jobs: VecDeque::new(), idle: 0, total: 0, creating: 0 }),
            ready: Condvar::new(),
            max,
            spawn: Mutex::new(None),
        }
    }

    /// Queues `req` for a worker, creating one if every worker is taken.
    pub fn hand_off(&self, req: Request) {
        let mut q = self.queue.lock().unwrap();
        q.jobs.push_back(req);
        if q.jobs.len() > q.idle && q.total < self.max {
            if let Some(tx) = self.spawn.lock().unwrap().as_ref() {
                if tx.send(()).is_ok() {
                    q.total += 1;
                    q.creating += 1;
                }
            }
        }
        drop(q);
        self.ready.notify_one();
    }

    /// Registers the spawner; calls queued before it was there get their workers now.
    fn register_spawner(&self, tx: mpsc::Sender<()>) {
        let mut q = self.queue.lock().unwrap();
        while q.jobs.len() > q.idle + q.total && q.total < self.max && tx.send(()).is_ok() {
            q.total += 1;
            q.creating += 1;
        }
        *self.spawn.lock().unwrap() = Some(tx);
    }

    fn next_job(&self) -> Request {
        let mut q = self.queue.lock().unwrap();
        loop {
            if let Some(job) = q.jobs.pop_front() {
                return job;
            }
            q.idle += 1;
            q = self.ready.wait(q).unwrap();
            q.idle -= 1;
        }
    }

    /// A worker the spawner was asked for runs.
    fn started(&self) {
        self.queue.lock().unwrap().creating -= 1;
    }

    /// The host refused a worker's thread (EAGAIN: RLIMIT_NPROC, the host's thread limit).
    /// Returns the calls that no worker will take now, newest first: more than the idle
    /// workers and those still being made. Left queued they waited for good (a blocking `read`
    /// under `ulimit -u` after the program dropped root hung `hrt`).
    fn spawn_failed(&self) -> Vec<Request> {
        let mut q = self.queue.lock().unwrap();
        q.total -= 1;
        q.creating -= 1;
        let takers = q.idle + q.creating;
        let orphans = q.jobs.len().saturating_sub(takers);
        let keep = q.jobs.len() - orphans;
        q.jobs.split_off(keep).into_iter().rev().collect()
    }
}

/// Starts the thread that creates workers on request.
pub(super) fn start_spawner(
    svc: Arc<Service>,
    shared: Arc<Shared>,
    filter: Option<seccompiler::BpfProgram>,
) -> crate::error::Result<()> {
    let (tx, rx) = mpsc::channel::<()>();
    svc.workers.register_spawner(tx);
    std::thread::Builder::new()
        .name("hrt-spawn".into())
        .spawn(move || {
            let mut n = 0u32;
            while rx.recv().is_ok() {
                let (svc2, shared, filter) = (svc.clone(), shared.clone(), filter.clone());
                // No fork while the worker starts (`fork::THREAD_STARTS`): until it runs.
                let starting = crate::vm::fork::THREAD_STARTS.lock().unwrap_or_else(|e| e.into_inner());
                let (up, is_up) = mpsc::channel::<()>();
                let started = std::thread::Builder::new()
                    .name(format!("hrt-worker{n}"))
                    // Workers only run the forwarder: a small stack is plenty.
                    .stack_size(256 << 10)
                    .spawn(move || {
                        drop(up);
                        if let Some(Err(e)) = filter.as_ref().map(crate::vm::seccomp::install) {
                            eprintln!("hrt: {e}");
                            for req in svc2.workers.spawn_failed() {
                                svc2.complete_after_wait(req.idx, -(libc::EAGAIN as i64));
                            }
                            return;
                        }
                        svc2.workers.started();
                        loop {
                            let req = svc2.workers.next_job();
                            svc2.serve_cancellable(&shared, req);
                        }
                    });
                // Disconnected once the worker runs (or the thread was never made).
                let _ = is_up.recv();
                drop(starting);
                if let Err(e) = started {
                    eprintln!(
                        "hrt: cannot start a thread for a blocking forwarded call ({e}): the call fails with EAGAIN"
                    );
                    for req in svc.workers.spawn_failed() {
                        svc.complete_after_wait(req.idx, -(libc::EAGAIN as i64));
                    }
                }
                n += 1;
            }
        })
        .map_err(|e| crate::error::err!("cannot start the forwarding spawner thread: {e}"))?;
    Ok(())
}
