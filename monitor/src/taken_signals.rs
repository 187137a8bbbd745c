//! The signals `hrt` passes on to the program are taken from the host's queue by `hrt` itself,
//! never by a signal handler, so that two things Linux promises hold:
//!
//! - **Order.** Linux queues each instance of a real-time signal and delivers them oldest
//!   first; a program may count on it (a sigqueue value as a sequence number). With a handler,
//!   the host delivers a process-directed signal to whichever of `hrt`'s threads does not block
//!   it, and two threads may run the handler at once: the later signal could reach the channel
//!   first (4 inversions in 3,000 sigqueues sent back to back, at `--cpus 2`).
//! - **Before the next message.** A signal is pending in its receiver before the sender's
//!   `kill` returns: a message the sender writes next is read after the signal came (the
//!   handler has run when `read` returns, `sigpending` lists a blocked one). With a handler,
//!   the signal reached the program whenever a thread of `hrt` got to run it: on a busy host
//!   after the program's read had returned (tests/programs/hostile/signal_before_message.c:
//!   ~30 of 400 rounds wrong, and every queued signal after the first late one off by one).
//!
//! So every thread blocks them, and they are taken (dequeued with `rt_sigtimedwait`, which
//! does not wait) only while `TAKING` is held, each passed on (`shared_signals::pass_on`, as the
//! handler would) before it is let go: in the host's order, and once a thread sees none
//! pending and `TAKING` free, every signal sent before is in the channel. One thread waits for
//! them (poll on a signalfd, which takes nothing) and takes them; a forwarded call whose caller
//! may see when a signal came (`process::SIGNALS_WATCHED`) takes them too before it answers
//! (`sync`): one `rt_sigpending` when none came (~0.3 us on the AMD host).
//!
//! Not taken here: SIGCHLD (its hand-shake with the waits is `host_signals`'), SIGXFSZ (the
//! host raises its own on a forwarded write past the file size limit, `run`), and what `hrt`
//! keeps for itself (`kept_signals::passed_on`).
//!
//! A signal another process sends to one of `hrt`'s threads in particular (`tgkill` to its
//! pid, the main thread) waits on that thread, where no other can take it: the main thread
//! waits on the signalfd too (`vcpu::wait_on_main`), whose readiness includes its own pending
//! signals, and takes its own (`take_own_pending`); a channel worker's forwarded call takes
//! its own (`sync`).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

/// Held while a thread takes signals and passes them on.
static TAKING: AtomicBool = AtomicBool::new(false);
/// The signals taken here (bit `sig - 1`), once `take_in_order` ran; 0 before.
static TAKEN: AtomicU64 = AtomicU64::new(0);
/// The signalfd the taking thread polls (-1: none).
static SIGNAL_FD: AtomicI32 = AtomicI32::new(-1);

thread_local! {
    /// This thread holds `TAKING` (a signal passed on never takes more from inside).
    static HOLDING: Cell<bool> = const { Cell::new(false) };
}

/// The signals taken in order: every one passed on to the program but SIGCHLD and SIGXFSZ.
fn taken_mask() -> u64 {
    (1..=64)
        .filter(|&s| crate::kept_signals::passed_on(s) && s != libc::SIGCHLD && s != libc::SIGXFSZ)
        .fold(0, |m, s| m | 1 << (s - 1))
}

/// `mask` as a C library signal set.
fn as_sigset(mask: u64) -> libc::sigset_t {
    // SAFETY: an emptied set we own, then signals added to it (glibc refuses 32 and 33, which
    // are never in `mask`).
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in (1..=64).filter(|s| mask & 1 << (s - 1) != 0) {
            libc::sigaddset(&mut set, sig);
        }
        set
    }
}

/// Blocks the taken signals in the calling thread, and so in every thread it starts from now
/// on, and starts the thread that takes them. Called once per host process: by `hrt run`
/// before the VM's threads start, and by a forked child's main thread (the taker does not
/// survive the fork; the blocked mask and the signalfd, kept across it, do).
pub fn take_in_order() -> crate::error::Result<()> {
    let mask = taken_mask();
    let set = as_sigset(mask);
    // SAFETY: changes only this thread's mask, from a set we own.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    // A forked child: the parent's taker may have held it at the fork.
    TAKING.store(false, Ordering::SeqCst);
    let kept = SIGNAL_FD.load(Ordering::SeqCst);
    // SAFETY: F_GETFD only asks whether the descriptor is open.
    let fd = if kept >= 0 && unsafe { libc::fcntl(kept, libc::F_GETFD) } >= 0 {
        kept
    } else {
        // SAFETY: a new descriptor for the set we own.
        unsafe { libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) }
    };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err(crate::error::err!("cannot make the signalfd that waits for the program's signals: {e}"));
    }
    SIGNAL_FD.store(fd, Ordering::SeqCst);
    TAKEN.store(mask, Ordering::SeqCst);
    std::thread::Builder::new()
        .name("hrt-signals".into())
        .spawn(move || loop {
            let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
            // SAFETY: one pollfd of ours; waits until a taken signal is pending (takes none).
            let n = unsafe { libc::poll(&mut p, 1, -1) };
            if n == 1 && p.revents & (libc::POLLNVAL | libc::POLLERR) != 0 {
                // The descriptor went (cannot happen: it is kept): wait the plain way.
                wait_without_descriptor(&set);
            }
            take_pending();
        })
        .map(|_| ())
        .map_err(|e| crate::error::err!("cannot start the thread that takes the program's signals: {e}"))
}

/// The taking thread's loop without its signalfd: takes one signal at a time with
/// `sigwaitinfo` (then outside `TAKING`: in order still, but a forwarded call may answer
/// before it is passed on).
fn wait_without_descriptor(set: &libc::sigset_t) -> ! {
    loop {
        // SAFETY: a zeroed siginfo the call fills in.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waits for a signal of `set` (blocked in this thread) and fills `info`.
        let sig = unsafe { libc::sigwaitinfo(set, &mut info) };
        if sig > 0 {
            let _held = Held::take();
            crate::shared_signals::pass_on(sig, &mut info, std::ptr::null_mut());
        }
    }
}

/// `TAKING`, held until dropped (or not taken at all by a thread that holds it already).
struct Held(bool);

impl Held {
    fn take() -> Held {
        if HOLDING.with(|h| h.get()) {
            return Held(false);
        }
        while TAKING.swap(true, Ordering::SeqCst) {
            std::thread::yield_now();
        }
        HOLDING.with(|h| h.set(true));
        Held(true)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.0 {
            HOLDING.with(|h| h.set(false));
            TAKING.store(false, Ordering::SeqCst);
        }
    }
}

/// Takes every taken signal pending for this thread or the process and passes each on, in
/// the host's order, while holding `TAKING`.
fn take_pending() {
    let mask = TAKEN.load(Ordering::SeqCst);
    let _held = Held::take();
    let none = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    loop {
        // SAFETY: a zeroed siginfo the call fills in.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: the kernel's 8-byte set, a siginfo and a zero timeout of ours: takes a
        // pending signal of the set without waiting.
        let sig = unsafe {
            libc::syscall(libc::SYS_rt_sigtimedwait, &mask as *const u64, &mut info as *mut libc::siginfo_t, &none, 8)
        };
        if sig <= 0 {
            return;
        }
        crate::shared_signals::pass_on(sig as i32, &mut info, std::ptr::null_mut());
    }
}

/// Makes sure every taken signal that reached `hrt` before now (for the process, or for the
/// calling thread in particular) has been passed on: taken here if still pending, or waited
/// for while another thread passes it on. Cheap when none came: one `rt_sigpending`.
pub fn sync() {
    let mask = TAKEN.load(Ordering::Relaxed);
    if mask == 0 || HOLDING.with(|h| h.get()) {
        return;
    }
    let mut pending: u64 = 0;
    // SAFETY: writes the kernel's 8-byte set of pending signals this thread blocks.
    unsafe { libc::syscall(libc::SYS_rt_sigpending, &mut pending as *mut u64, 8) };
    // Whoever holds `TAKING` took its signals before this look: it passes them on before it
    // lets go.
    if pending & mask != 0 || TAKING.load(Ordering::SeqCst) {
        take_pending();
    }
}

/// Passes on the taken signals sent to the calling thread in particular (see the module's
/// comment), and any of the process's the taking thread has not taken yet, without waiting.
/// Called now and then by the thread that waits for the vCPUs.
pub fn take_own_pending() {
    sync();
}

/// The signalfd a forked child keeps (`vm::fork`).
pub fn host_descriptor() -> Option<i32> {
    let fd = SIGNAL_FD.load(Ordering::SeqCst);
    (fd >= 0).then_some(fd)
}
