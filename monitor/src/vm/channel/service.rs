//! The polling service threads: take requests while they come, spin a while after the last
//! one, then sleep until the doorbell (or the registration) wakes them.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::Service;
use crate::vm::vcpu::Shared;

pub(super) fn poll_loop(svc: &Service, shared: &Shared) {
    // Until the kernel registers the channel there is nothing to poll.
    let ch = loop {
        if svc.stopping.load(Ordering::Relaxed) {
            return;
        }
        if let Some(ch) = svc.channel() {
            break ch;
        }
        sleep_until_rung(svc, None);
    };
    let awake = &ch.header.service_awake;
    awake.fetch_add(1, Ordering::SeqCst);
    let mut idle_since = Instant::now();
    let mut rounds = 0u32;
    let mut caught = false;
    loop {
        if svc.sweep(shared) {
            idle_since = Instant::now();
            caught = true;
            continue;
        }
        rounds = rounds.wrapping_add(1);
        // Reading the clock costs more than a poll: look at it every 64 rounds.
        if !rounds.is_multiple_of(64) || idle_since.elapsed() < svc.spin_now(ch) {
            std::hint::spin_loop();
            continue;
        }
        if svc.stopping.load(Ordering::Relaxed) {
            return;
        }
        // Going to sleep: say so, then look once more, so a request published before the guest
        // read `service_awake` is not left behind (it rings the doorbell otherwise).
        let seen = *svc.bell.lock().unwrap();
        awake.fetch_sub(1, Ordering::SeqCst);
        let pending = ch.header.pending.iter().any(|w| w.load(Ordering::SeqCst) != 0);
        if !pending {
            svc.poller_sleeps(caught);
            caught = false;
            sleep_until_rung(svc, Some(seen));
        }
        awake.fetch_add(1, Ordering::SeqCst);
        idle_since = Instant::now();
    }
}

/// Sleeps until the bell count moves past `seen` (or, without `seen`, until the next ring).
fn sleep_until_rung(svc: &Service, seen: Option<u64>) {
    let mut bell = svc.bell.lock().unwrap();
    let seen = seen.unwrap_or(*bell);
    while *bell == seen && !svc.stopping.load(Ordering::Relaxed) {
        bell = svc.bell_cv.wait(bell).unwrap();
    }
}
