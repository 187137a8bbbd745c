//! Which host signals `hrt` keeps for itself and which it passes on to the program: one rule
//! for the layers that send `hrt` signals (the VM's signal handlers, the forwarder's F_SETSIG).

/// Whether `hrt` passes signal `sig`, sent to it on the host, on to the program: every signal
/// but those it keeps for itself. SIGKILL and SIGSTOP cannot be caught; SIGILL, SIGTRAP,
/// SIGABRT, SIGBUS, SIGFPE and SIGSEGV are faults of `hrt`'s own threads and SIGSYS its seccomp
/// filter's; SIGPIPE is a forwarded write's EPIPE (the kernel raises the program's own);
/// SIGTTIN and SIGTTOU are a background job's terminal access (forward/tty_stop.rs,
/// `run::mirror_signal_action`); 32 and 33 are the C library's (its sigaction refuses them);
/// the channel's wake signal is `hrt`'s. Signal 64 takes bit 0 of the channel's word.
/// Those `hrt` uses itself still reach the program when another process sends them
/// (`shared_signals`, `reaches_program`).
pub fn passed_on(sig: i32) -> bool {
    use libc::*;
    let kept = [SIGKILL, SIGSTOP, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGSYS, SIGPIPE, SIGTTIN, SIGTTOU];
    (1..=64).contains(&sig)
        && !kept.contains(&sig)
        && sig != 32
        && sig != 33
        && sig != wake_signal()
        && sig != credentials_signal()
}

/// The signal that interrupts a channel worker's blocked host call: a real-time one nobody
/// else uses.
pub fn wake_signal() -> libc::c_int {
    libc::SIGRTMIN() + 2
}

/// The signal that asks each thread of `hrt` to make a credential call (`every_thread`): 32,
/// which glibc keeps for thread cancellation, which `hrt` never uses. Not a real-time signal
/// the program may use: another process's instances of those reach the program in order
/// through the channel, where a handler on any thread of `hrt` would pass them on unordered.
/// glibc's `pthread_sigmask` never blocks it.
pub fn credentials_signal() -> libc::c_int {
    32
}

/// Whether signal `sig` reaches the program when another process sends it: every signal
/// `passed_on`, and those `hrt` uses itself (`shared_signals`); not SIGKILL, SIGSTOP (which
/// cannot be caught), SIGTTIN and SIGTTOU (a background job's stops, forward/tty_stop.rs).
pub fn reaches_program(sig: i32) -> bool {
    use libc::*;
    (1..=64).contains(&sig) && ![SIGKILL, SIGSTOP, SIGTTIN, SIGTTOU].contains(&sig)
}
