//! The notifier: a kernel thread that makes a signalfd's eventfd readable once a signal of its
//! mask is pending. Signals become pending in any context (the host-signal interrupt, a timer's
//! thread, another CPU's `kill`), where a forwarded call cannot be made; the notifier makes it.

use core::ptr::null_mut;
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use linux_raw_sys::general::{__NR_close, __NR_dup3, __NR_fcntl, __NR_write};

use super::registry;
use crate::linux::syscall::forward;
use crate::linux::usermem::with_scratch;
use crate::sched::{self, thread::BLOCKING, thread::RUNNING, Thread};

/// Work for the notifier: a signal of some mask became pending (or a mask changed).
static WORK: AtomicBool = AtomicBool::new(false);
/// The notifier took the work and has not finished arming (set before `WORK` is cleared).
static NOTIFYING: AtomicBool = AtomicBool::new(false);
/// The notifier's record while it waits (null before it first waits).
static NOTIFIER: AtomicPtr<Thread> = AtomicPtr::new(null_mut());
static STARTED: AtomicBool = AtomicBool::new(false);
/// A forked child whose signalfds still share their eventfds with the parent's.
static FORKED: AtomicBool = AtomicBool::new(false);

/// A signal in `bits` became pending: wakes the notifier if a signalfd watches it. Any context.
pub fn pending_added(bits: u64) {
    if registry::UNION.load(Ordering::SeqCst) & bits != 0 {
        poke();
    }
}

/// Signals in `bits` were taken (a handler's delivery, `sigtimedwait`, a signalfd's read, a
/// discard): a signalfd that watches one may have nothing left to read, so the notifier
/// empties its eventfd. Any context. (Before 2026-12-03 it stayed readable until a read found
/// nothing: `poll` said readable, a blocking read then waited.)
pub fn pending_removed(bits: u64) {
    if registry::LIVE.load(Ordering::Relaxed) != 0 && registry::UNION.load(Ordering::SeqCst) & bits != 0 {
        poke();
    }
}

/// Asks the notifier to look at every signalfd.
pub fn poke() {
    WORK.store(true, Ordering::SeqCst);
    let t = NOTIFIER.load(Ordering::SeqCst);
    if !t.is_null() {
        // SAFETY: the notifier never exits; its record lives as long as the kernel.
        unsafe { sched::wake(t) };
    }
}

/// Starts the notifier on first use (a system call's context).
pub fn ensure_started() {
    reopen_if_forked();
    if STARTED.swap(true, Ordering::SeqCst) {
        return;
    }
    // Every signal blocked: a forwarded call it waits for is never interrupted.
    let spawned = sched::spawn_with(sched::ThreadOptions::named("signalfd"), |t| t.sigmask = u64::MAX, run);
    match spawned {
        Ok(h) => h.detach(),
        Err(_) => STARTED.store(false, Ordering::SeqCst),
    }
}

fn run() -> u64 {
    let me = sched::current();
    loop {
        // SAFETY: our own record; registered below, where `poke` finds it.
        unsafe { (*me).state.store(BLOCKING, Ordering::SeqCst) };
        NOTIFIER.store(me, Ordering::SeqCst);
        if WORK.load(Ordering::SeqCst) {
            // SAFETY: as above; still on our CPU (a wake-up of a BLOCKING thread only marks it).
            unsafe { (*me).state.store(RUNNING, Ordering::SeqCst) };
        } else {
            sched::block();
        }
        NOTIFYING.store(true, Ordering::SeqCst);
        WORK.store(false, Ordering::SeqCst);
        arm_all();
        NOTIFYING.store(false, Ordering::SeqCst);
    }
}

/// One arming or emptying at a time: an eventfd is written (armed) and emptied (a reader that
/// took the last signal) in turn, never across each other, so that a write decided on before a
/// reader took the signal cannot land after the reader emptied the eventfd.
static ARMING: AtomicBool = AtomicBool::new(false);

/// Runs `f` while no other thread arms or empties an eventfd.
pub fn exclusively<R>(f: impl FnOnce() -> R) -> R {
    while ARMING.swap(true, Ordering::Acquire) {
        sched::yield_now();
        core::hint::spin_loop();
    }
    crate::sync::spinlock::raw_lock_taken();
    let r = f();
    ARMING.store(false, Ordering::Release);
    crate::sync::spinlock::raw_lock_released();
    r
}

/// Makes the eventfd of every signalfd with a pending signal of its mask readable, and empties
/// that of every signalfd armed with none (taken another way). A signal that becomes pending
/// while an eventfd is emptied sets `WORK` after it is pending, so this runs again for it.
fn arm_all() {
    exclusively(|| loop {
        let pending = || crate::linux::signal::state::pending_anywhere();
        while let Some(fd) = registry::next_to_arm(pending()) {
            let _ = with_scratch(|page| {
                // SAFETY: `page` is a fresh page of program memory that only we know.
                unsafe { (page as *mut u64).write(1) };
                forward(__NR_write as u64, [fd as u64, page, 8, 0, 0, 0])
            });
            registry::done_notifying();
        }
        let mut emptied = false;
        while let Some(fd) = registry::next_to_disarm(pending()) {
            super::read::empty(fd);
            emptied = true;
        }
        if !emptied {
            break;
        }
    })
}

/// After a local system call (every one: `kill`, `tgkill`, `sigqueue` to the program itself
/// among them): the caller arms what its signal made readable before it goes on, as Linux's
/// signalfd is readable as soon as the signal is pending; the notifier is for signals from
/// elsewhere. Also while the notifier is at it (`NOTIFYING`: woken by the same signal, it took
/// the work but may not have written the eventfd yet; a `poll` right after the `kill` then
/// saw the signalfd not readable, `signalfd_passed` in a full test run on a loaded host).
/// Arming is idempotent (only what is not armed yet) and exclusive: whichever comes second
/// finds nothing left.
pub fn after_local_call() {
    if registry::LIVE.load(Ordering::Relaxed) != 0 && (WORK.load(Ordering::SeqCst) || NOTIFYING.load(Ordering::SeqCst))
    {
        sync_now();
    }
}

/// `after_local_call`'s work, also before a forwarded call (`intercept`): a `poll` right after
/// a handler took a signal must not see its signalfd still readable.
pub fn sync_now() {
    if WORK.load(Ordering::SeqCst) || NOTIFYING.load(Ordering::SeqCst) {
        // A forked child's first signal (its own `raise`) must arm its own eventfd, not the
        // parent's that it still shares.
        reopen_if_forked();
        WORK.store(false, Ordering::SeqCst);
        arm_all();
    }
}

/// In a forked child, before its first use of a signalfd's eventfd (a system call's context):
/// each signalfd gets an eventfd of its own, armed anew by the notifier for the child's signals.
fn reopen_if_forked() {
    if FORKED.swap(false, Ordering::SeqCst) {
        for fds in registry::objects_fds() {
            reopen(&fds);
        }
        poke();
    }
}

/// A forked child: the notifier is gone; each signalfd gets its own eventfd at the child's
/// first forwarded call or first arming, whichever comes first (`reopen_if_forked`: the host's
/// fork shares the parent's, whose signals are not ours).
pub fn after_fork() {
    // Whoever held it in the parent (the notifier, or a reader emptying its eventfd, in the
    // middle of a forwarded write when the fork came) does not exist here: copied set, it
    // made every `exclusively` of the child spin for good (both vCPUs of a signalfd_fork
    // child in a CI run).
    ARMING.store(false, Ordering::SeqCst);
    NOTIFIER.store(null_mut(), Ordering::SeqCst);
    STARTED.store(false, Ordering::SeqCst);
    WORK.store(false, Ordering::SeqCst);
    NOTIFYING.store(false, Ordering::SeqCst);
    registry::after_fork();
    FORKED.store(registry::LIVE.load(Ordering::SeqCst) != 0, Ordering::SeqCst);
}

/// Puts a fresh eventfd (same O_NONBLOCK, same FD_CLOEXEC per descriptor) under each of `fds`.
fn reopen(fds: &[i32]) {
    const O_NONBLOCK: u64 = 0o4000;
    const O_CLOEXEC: u64 = 0o2000000;
    let fl = forward(__NR_fcntl as u64, [fds[0] as u64, 3, 0, 0, 0, 0]);
    if fl < 0 {
        return;
    }
    let new = forward(hrt_abi::process::SIGNALFD_EVENTFD, [fl as u64 & O_NONBLOCK | O_CLOEXEC, 0, 0, 0, 0, 0]);
    if new < 0 {
        return;
    }
    for &fd in fds {
        let cloexec = forward(__NR_fcntl as u64, [fd as u64, 1, 0, 0, 0, 0]) == 1;
        let flags = if cloexec { O_CLOEXEC } else { 0 };
        forward(__NR_dup3 as u64, [new as u64, fd as u64, flags, 0, 0, 0]);
    }
    forward(__NR_close as u64, [new as u64, 0, 0, 0, 0, 0]);
}
