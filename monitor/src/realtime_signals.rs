//! Real-time signals sent to `hrt` reach the program in the order they were sent. Linux queues
//! each instance of a real-time signal and delivers them oldest first; a program may count on
//! it (a sigqueue value as a sequence number). With a handler, the host delivers a
//! process-directed signal to whichever of `hrt`'s threads does not block it, and two threads
//! may run the handler at once: the later signal could then reach the channel first (4
//! inversions in 3,000 sigqueues sent back to back, at `--cpus 2`).
//!
//! So every thread blocks them, and one thread takes them from the host's queue with
//! `sigwaitinfo`, in the host's order, and passes each on as the handler would
//! (`shared_signals::pass_on`). The wake signal is not among them (the channel's workers are
//! interrupted with it), nor 32 and 33 (the C library's).
//!
//! A signal another process sends to one of `hrt`'s threads in particular (`tgkill` to its
//! pid, the main thread) waits on that thread, where `sigwaitinfo` of another thread cannot
//! take it: the thread that waits for the vCPUs takes its own now and then
//! (`take_own_pending`).

/// The signals taken in order: the real-time ones passed on to the program but the wake signal.
fn taken_in_order() -> libc::sigset_t {
    // SAFETY: an emptied set we own, then signals added to it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in (34..=64).filter(|&s| crate::kept_signals::passed_on(s)) {
            libc::sigaddset(&mut set, sig);
        }
        set
    }
}

/// Blocks the real-time signals in the calling thread, and so in every thread it starts from
/// now on, and starts the thread that takes them. Called once per host process: by `hrt run`
/// before the VM's threads start, and by a forked child's main thread (the taker does not
/// survive the fork; the blocked mask does).
pub fn take_in_order() -> crate::error::Result<()> {
    let set = taken_in_order();
    // SAFETY: changes only this thread's mask, from a set we own.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    std::thread::Builder::new()
        .name("hrt-rtsignals".into())
        .spawn(move || loop {
            // SAFETY: a zeroed siginfo the call fills in.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: waits for a signal of `set` (blocked in this thread) and fills `info`.
            let sig = unsafe { libc::sigwaitinfo(&set, &mut info) };
            if sig > 0 {
                crate::shared_signals::pass_on(sig, &mut info, std::ptr::null_mut());
            }
        })
        .map(|_| ())
        .map_err(|e| crate::error::err!("cannot start the thread that takes real-time signals: {e}"))
}

/// The real-time signals `take_own_pending` saw pending at its last look (bit `sig - 1`).
static SEEN_PENDING: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Passes on the real-time signals sent to the calling thread in particular (see the module's
/// comment), without waiting. Called now and then; it takes them only when they were pending
/// at its last look too: a process-directed one is the taker's within microseconds, and
/// taking one of those here could pass it on before an older one the taker holds.
pub fn take_own_pending() {
    let set = taken_in_order();
    // SAFETY: a set we own, filled by the call.
    let pending = unsafe {
        let mut p: libc::sigset_t = std::mem::zeroed();
        libc::sigpending(&mut p);
        (34..=64)
            .filter(|&s| libc::sigismember(&p, s) == 1 && libc::sigismember(&set, s) == 1)
            .fold(0u64, |m, s| m | 1 << (s - 1))
    };
    let before = SEEN_PENDING.swap(pending, std::sync::atomic::Ordering::Relaxed);
    if pending & before == 0 {
        return;
    }
    let none = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    loop {
        // SAFETY: a zeroed siginfo the call fills in.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: takes a pending signal of `set` (blocked here) without waiting.
        let sig = unsafe { libc::sigtimedwait(&set, &mut info, &none) };
        if sig <= 0 {
            return;
        }
        crate::shared_signals::pass_on(sig, &mut info, std::ptr::null_mut());
    }
}
