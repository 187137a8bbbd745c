//! The polling service threads: take requests while they come, spin a while after the last
//! one, then sleep until the doorbell (or the registration) wakes them.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::Service;
use crate::vm::vcpu::Shared;

thread_local! {
    static POLLER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread is a polling thread (`poll_loop`).
pub(super) fn polls_here() -> bool {
    POLLER.with(|p| p.get())
}

pub(super) fn poll_loop(svc: &Service, shared: &Shared) {
    POLLER.with(|p| p.set(true));
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
        // Going to sleep: say so, then look once more, so a request or a cancel published
        // before the guest read `service_awake` is not left behind (it rings the doorbell
        // otherwise). A cancel left behind hung a thread whose signal arrived while it waited
        // in a host `read`: its worker was never interrupted (ring_varsite `restart`, 1 run in
        // ~20 fresh-clone CI runs).
        svc.hand_off_kept();
        let seen = *svc.bell.lock().unwrap();
        test_delay_before_sleep();
        awake.fetch_sub(1, Ordering::SeqCst);
        let pending = ch.header.pending.iter().any(|w| w.load(Ordering::SeqCst) != 0) || svc.cancel_requested(ch);
        if !pending {
            svc.poller_sleeps(caught);
            caught = false;
            sleep_until_rung(svc, Some(seen));
        }
        awake.fetch_add(1, Ordering::SeqCst);
        idle_since = Instant::now();
    }
}

/// `HRT_TEST_POLLER_SLEEP_DELAY_MS` (tests only): a poller about to sleep waits this long
/// first, still counted awake, so that a guest request or cancel lands in the window between
/// its last look and its sleep (`a_cancel_made_while_the_poller_falls_asleep_is_served`).
fn test_delay_before_sleep() {
    static DELAY_MS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let ms = *DELAY_MS
        .get_or_init(|| std::env::var("HRT_TEST_POLLER_SLEEP_DELAY_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(0));
    if ms > 0 {
        std::thread::sleep(std::time::Duration::from_millis(ms));
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
