//! A background job reading its terminal while the program keeps SIGTTIN's default action.
//!
//! `hrt` then ignores SIGTTIN on the program's behalf (`manage`), so the host's terminal answers
//! such a read with EIO instead of stopping `hrt` inside the host call, and the forwarder stops
//! `hrt` itself with SIGTTIN's default action (a shell sees `Stopped (tty input)`). Once
//! continued it waits, before reading again, for what came with the SIGCONT: a SIGTERM sent to
//! the stopped job (bash's `kill %1` sends SIGTERM, then SIGCONT) reaches the program, whose
//! kernel ends it, as Linux acts on a pending signal before it restarts the read. Stopped inside
//! the host call instead, `hrt` restarted the read at once and stopped again before the program
//! had taken the SIGTERM. SIGTTOU (writes under TOSTOP) keeps the host's default action.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::errno::{Errno, SysResult};
use super::fd_table::FdKind;
use super::Forwarder;

/// `hrt` ignores SIGTTIN for the program, which keeps the default action.
static MANAGED: AtomicBool = AtomicBool::new(false);
/// SIGCONTs `hrt` has received.
static CONTINUES: AtomicU64 = AtomicU64::new(0);

/// How long, once continued, a read waits for signals sent with the SIGCONT to act (less if
/// the job is brought to the foreground meanwhile).
const GRACE: Duration = Duration::from_millis(100);
/// How long after raising SIGTTIN the SIGCONT handler must have counted a continue: else the
/// stop was discarded (an orphaned process group, where Linux answers EIO).
const CONTINUE_SEEN: Duration = Duration::from_millis(50);

/// The program's disposition of SIGTTIN is (`true`) or is no longer the default. With the
/// default, `hrt` ignores SIGTTIN and stops itself (`Forwarder::terminal_read`); the caller
/// installs any other disposition itself. Returns the host's sigaction answer.
pub fn manage(default: bool) -> libc::c_int {
    MANAGED.store(default, Ordering::SeqCst);
    if !default {
        return 0;
    }
    set(libc::SIG_IGN)
}

/// The SIGCONT handler: `hrt` was continued (async-signal-safe).
pub fn note_continued() {
    CONTINUES.fetch_add(1, Ordering::SeqCst);
}

fn set(disposition: libc::sighandler_t) -> libc::c_int {
    // SAFETY: a zeroed sigaction (empty mask, no flags) with a plain disposition.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = disposition;
    // SAFETY: installs the disposition built above.
    unsafe { libc::sigaction(libc::SIGTTIN, &sa, std::ptr::null_mut()) }
}

/// Whether this process is in the background of terminal `fd`, its controlling terminal. A
/// read of any other terminal never stops a process on Linux: a pseudo-terminal's master
/// side answers its slave's session and foreground group, and its EIO says the slave side is
/// closed (`pty.fork`, `expect`); another session's terminal is not this process's to wait on.
fn background(fd: i32) -> bool {
    // SAFETY: TIOCGPTN, TIOCGSID and TIOCGPGRP write the int we pass; getsid and getpgid take
    // none (getpgrp is not among the calls the seccomp filter allows).
    unsafe {
        let mut n: libc::c_int = 0;
        if libc::ioctl(fd, libc::TIOCGPTN, &mut n) == 0 {
            return false;
        }
        let mut sid: libc::pid_t = 0;
        if libc::ioctl(fd, libc::TIOCGSID, &mut sid) != 0 || sid != libc::getsid(0) {
            return false;
        }
        let mut pgrp: libc::pid_t = 0;
        libc::ioctl(fd, libc::TIOCGPGRP, &mut pgrp) == 0 && pgrp != libc::getpgid(0)
    }
}

/// If this process is in the background of terminal `fd`: stops it with SIGTTIN's default
/// action, then, continued, waits as the module documentation says. True: read again; false:
/// not in the background, or the stop was discarded (the read's EIO stands, as on Linux).
fn stop_in_background(fd: i32) -> bool {
    if !background(fd) {
        return false;
    }
    let seen = CONTINUES.load(Ordering::SeqCst);
    set(libc::SIG_DFL);
    // SAFETY: a sigset of our own; raise is thread-directed, so this thread takes the default
    // action (other threads reading the terminal meanwhile stop the process too).
    unsafe {
        let mut only: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut only);
        libc::sigaddset(&mut only, libc::SIGTTIN);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
        libc::raise(libc::SIGTTIN);
    }
    if MANAGED.load(Ordering::SeqCst) {
        set(libc::SIG_IGN);
    }
    let raised = Instant::now();
    while CONTINUES.load(Ordering::SeqCst) == seen {
        if raised.elapsed() > CONTINUE_SEEN {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let continued = Instant::now();
    while continued.elapsed() < GRACE && background(fd) {
        std::thread::sleep(Duration::from_millis(2));
    }
    true
}

impl Forwarder {
    /// A read (`read`, `readv`) of the program's descriptor `fd`: stops `hrt` and reads again
    /// while it is a terminal whose background read failed because SIGTTIN is ignored for the
    /// program (see the module documentation).
    ///
    /// A signal passed on to the program meanwhile (the SIGCONT of `bg` that continued a job
    /// Ctrl-Z stopped in this read, or the one that continued the stop here) is taken first:
    /// the answer is then `SIGNAL_CAME_FIRST`, and the kernel runs the program's handler (the
    /// read fails with EINTR without SA_RESTART, as on Linux) or makes the read again. Stopped
    /// at once instead, `hrt` ran a SIGCONT handler only at `fg`; read again at once, the read
    /// completed where Linux's failed with EINTR.
    pub(super) fn terminal_read(&self, fd: u64, read: impl Fn() -> SysResult<i64>) -> SysResult<i64> {
        let passed = crate::vm::host_signals::passed_besides_sigchld();
        loop {
            let r = read();
            if r != Err(Errno::EIO) || !MANAGED.load(Ordering::SeqCst) {
                return r;
            }
            let came_first = || crate::vm::host_signals::passed_besides_sigchld() != passed;
            if came_first() {
                return Err(Errno(hrt_abi::channel::SIGNAL_CAME_FIRST as i32));
            }
            if TTIN_BLOCKED.with(|b| b.get()) {
                // Linux answers EIO to a background read that blocks SIGTTIN, as to one that
                // ignores it.
                return r;
            }
            match self.fds().get(fd) {
                Ok(h) if h.kind() == FdKind::Terminal && stop_in_background(h.raw()) => {}
                _ => return r,
            }
            // Continued: the SIGCONT (and whatever came with it) first, as Linux acts on them
            // before it restarts the read; a SIGCONT handler without SA_RESTART ends it with
            // EINTR. (`stop_in_background` waited for them to reach the program.)
            if came_first() {
                return Err(Errno(hrt_abi::channel::SIGNAL_CAME_FIRST as i32));
            }
        }
    }
}

/// Blocks SIGTTOU on this thread until dropped (then restores its mask): the program's thread
/// that made the forwarded call blocks it (`process::TTOU_BLOCKED`), and on Linux a background
/// process with SIGTTOU blocked changes the terminal (`tcsetpgrp`, `tcsetattr`) or writes to it
/// under TOSTOP without being stopped.
pub struct TtouBlocked(libc::sigset_t);

impl TtouBlocked {
    pub fn new() -> TtouBlocked {
        // SAFETY: plain sigset_t values of this thread's; pthread_sigmask only reads `set`.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGTTOU);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            TtouBlocked(old)
        }
    }
}

impl Drop for TtouBlocked {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved by `new`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut()) };
    }
}

thread_local! {
    /// The program's thread whose call this thread makes blocks SIGTTIN (`TtinBlocked`).
    static TTIN_BLOCKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Notes, until dropped, that the program's thread that made the forwarded call blocks
/// SIGTTIN (`process::TTIN_BLOCKED`): `terminal_read` then leaves a background read's EIO be
/// instead of stopping `hrt`.
pub struct TtinBlocked(bool);

impl TtinBlocked {
    pub fn new() -> TtinBlocked {
        TtinBlocked(TTIN_BLOCKED.with(|b| b.replace(true)))
    }
}

impl Drop for TtinBlocked {
    fn drop(&mut self) {
        TTIN_BLOCKED.with(|b| b.set(self.0));
    }
}
