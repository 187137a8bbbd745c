//! The terminal's modes, put back when the program dies of a signal. An interactive shell
//! restores its terminal's modes after a foreground job that a signal killed or stopped (a
//! program in raw or no-echo mode that dies of SIGQUIT, SIGTERM or SIGSEGV leaves the terminal
//! usable), but not after one that exited; `hrt` exits with 128 + the signal instead of dying
//! of it (its own report of the crash stays the only one), so it puts back the modes the
//! terminal had when it started, which are the shell's for the job, itself. Only in the
//! terminal's foreground process group, as the shell does it only for a foreground job.

use std::sync::OnceLock;

/// The first of descriptors 0, 1 and 2 that is a terminal, and its modes at start.
static SAVED: OnceLock<Option<(i32, libc::termios)>> = OnceLock::new();

/// Notes the terminal's modes (before the program runs).
pub fn save() {
    SAVED.get_or_init(|| {
        (0..3).find_map(|fd| {
            // SAFETY: a zeroed termios is valid; tcgetattr fills it or fails (not a terminal).
            let mut t: libc::termios = unsafe { std::mem::zeroed() };
            // SAFETY: `t` is ours.
            (unsafe { libc::tcgetattr(fd, &mut t) } == 0).then_some((fd, t))
        })
    });
}

/// The program died of a signal and `hrt` exits with 128 + it: puts the saved modes back if
/// `hrt` is in the terminal's foreground process group, after the output written so far
/// (TCSADRAIN, as bash does).
pub fn restore_after_signal_death() {
    let Some(Some((fd, modes))) = SAVED.get() else { return };
    // SAFETY: tcgetpgrp and getpgrp only read process state.
    if unsafe { libc::tcgetpgrp(*fd) != libc::getpgrp() } {
        return;
    }
    // SAFETY: `modes` came from tcgetattr of the same terminal.
    unsafe { libc::tcsetattr(*fd, libc::TCSADRAIN, modes) };
}
