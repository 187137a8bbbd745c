//! Calls that would wait, tried again for a moment before a worker thread takes them.
//!
//! A read of a pipe or socket with nothing in it yet (or a write to a full pipe, a poll with
//! nothing ready) used to go to a worker thread at once: the worker blocked in the host call,
//! and when the data came the host had to wake it, then it answered, and the guest thread that
//! slept in the guest scheduler had to be woken in turn, often by an interrupt. Between two
//! threads of one program talking over a socketpair that made a round trip ~290 us (Linux:
//! ~35). Most such waits are short (the other side answers within tens of microseconds), and
//! a polling thread spins anyway: it keeps up to `MAX` of these requests and tries each again
//! without waiting on every round, for at most `WINDOW`; what is still waiting then goes to a
//! worker as before, and so does everything it holds when it goes to sleep.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::Request;

/// How long a request is tried again before a worker takes it.
pub(super) const WINDOW: Duration = Duration::from_micros(200);

/// Requests tried again at once, at most (each try is a host call on every polling round).
const MAX: usize = 16;

struct Kept {
    req: Request,
    since: Instant,
}

/// What a try of a kept request found.
pub(super) enum Again {
    /// Answered, or handed to a worker: no longer kept.
    Settled,
    /// Still waiting: kept (unless its time is up, then the caller hands it off).
    Waits,
}

#[derive(Default)]
pub(super) struct Retries {
    kept: Mutex<Vec<Kept>>,
    /// `kept.len()`, read without the lock on every polling round.
    count: AtomicUsize,
}

impl Retries {
    /// Keeps `req` to be tried again; false if there are `MAX` already (the caller hands it to
    /// a worker).
    pub fn keep(&self, req: Request) -> bool {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= MAX {
            return false;
        }
        kept.push(Kept { req, since: Instant::now() });
        self.count.store(kept.len(), Ordering::Release);
        true
    }

    /// Tries every kept request again with `again(req, expired)`, where `expired` says its time
    /// is up (then `again` must settle it). Skipped while another polling thread does it.
    /// True if one was settled.
    pub fn try_again(&self, mut again: impl FnMut(&Request, bool) -> Again) -> bool {
        if self.count.load(Ordering::Acquire) == 0 {
            return false;
        }
        let Ok(mut kept) = self.kept.try_lock() else { return false };
        let before = kept.len();
        kept.retain(|k| matches!(again(&k.req, k.since.elapsed() >= WINDOW), Again::Waits));
        self.count.store(kept.len(), Ordering::Release);
        kept.len() != before
    }

    /// Takes every kept request (a polling thread goes to sleep: workers take them).
    pub fn take_all(&self) -> Vec<Request> {
        if self.count.load(Ordering::Acquire) == 0 {
            return Vec::new();
        }
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        self.count.store(0, Ordering::Release);
        kept.drain(..).map(|k| k.req).collect()
    }
}
