//! `hrt` stops itself with the stop signal that stopped the program (SIGTSTP for Ctrl-Z,
//! SIGTTIN, SIGTTOU or SIGSTOP), so that its parent sees what it sees natively: a shell's `$?`
//! after Ctrl-Z is 148 (128 + SIGTSTP), not 147 (SIGSTOP), and the host applies its own rule
//! for a process group without a parent in the session (an orphaned group ignores SIGTSTP,
//! SIGTTIN and SIGTTOU whose action is the default), as Linux would for the program.

/// Stops this process with stop signal `sig` and returns once it is continued. For SIGTSTP,
/// SIGTTIN and SIGTTOU the signal's disposition is the default and the signal unblocked in
/// this thread for the raise, then both are put back; any other value stops with SIGSTOP.
/// Async-signal-safe (sigaction, pthread_sigmask and raise only): also called from a handler
/// of the same signal.
pub fn stop_with(sig: i32) {
    if ![libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU].contains(&sig) {
        // SAFETY: raise only sends a signal to this thread; SIGSTOP stops the whole process
        // until a SIGCONT.
        unsafe { libc::raise(libc::SIGSTOP) };
        return;
    }
    // SAFETY: zeroed sigaction and sigset values are valid; the calls only change this
    // process's disposition of `sig` and this thread's mask, both restored below.
    unsafe {
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, &default, &mut old) != 0 {
            libc::raise(libc::SIGSTOP);
            return;
        }
        let mut only: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut only);
        libc::sigaddset(&mut only, sig);
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &only, &mut mask);
        // Delivered before `raise` returns (unblocked, to this thread): the process stops
        // here, or, in an orphaned group, the host discards the signal.
        libc::raise(sig);
        libc::pthread_sigmask(libc::SIG_SETMASK, &mask, std::ptr::null_mut());
        libc::sigaction(sig, &old, std::ptr::null_mut());
    }
}
