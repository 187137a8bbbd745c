//! Signals sent to `hrt` on the host (Ctrl-C, SIGTERM, SIGHUP, another process's kill or
//! sigqueue, a child's SIGCHLD) raised in the program, as sent by that process: a handler runs,
//! an ignored or blocked signal waits or goes, and a signal whose default action ends the
//! program ends it at once (as Linux kills a process whose threads sleep in a read), with the
//! shell-style status 128 + signal; a stop signal's default action stops it (`hrt` stops itself
//! on the host) at once too.

use super::state::{self, SigInfo};
use super::{SIGKILL, SIG_DFL};

/// Raises `info`, the host's siginfo as the monitor passed it: the sender's (SI_USER, SI_TKILL,
/// SI_QUEUE: pid, uid, value) or a child's SIGCHLD (CLD_*: pid, uid, status); SI_USER from
/// pid 0 (a process the program does not know) for the rest.
pub fn raise(info: SigInfo) {
    if make_pending(info) {
        state::kick_all();
    }
}

/// `raise` without the kick: true if the signal is now pending and the program's threads are
/// to look (the caller kicks them once for a batch of signals).
pub fn make_pending(info: SigInfo) -> bool {
    let sig = info.signo as u64;
    if !(1..=64).contains(&sig) {
        return false;
    }
    let default_acts = state::handler(sig) == SIG_DFL && !state::blocked_anywhere(sig);
    if default_acts && super::stops_by_default(sig) {
        // Stop now, even while every thread waits in a host call (Ctrl-Z on a blocked read).
        state::flush_for_stop(sig);
        super::stop_process(sig);
        return false;
    }
    let fatal = sig == SIGKILL || default_acts && !state::ignored_by_default(sig);
    if fatal {
        if crate::linux::process::ending() {
            // The program is ending already, perhaps in the very thread this interrupt
            // stopped (waiting for the host in its end): its status stands.
            return false;
        }
        crate::linux::fault::terminate_program(sig as i32, None);
    }
    // A real-time signal may find its queue full (the sender's sigqueue succeeded on the
    // host): it is lost then, as kill's is (state::send_process).
    let _ = state::send_process(info);
    true
}

/// Makes every signal that reached `hrt` on the host before now pending here: the monitor
/// passes on what it has not yet (`process::SYNC_SIGNALS`), and the forwarded call's end
/// raises what the channel holds (`syscall::forward`). For the calls that look at pending
/// signals without waiting for one: on Linux a signal another process sent is pending before
/// its `kill` returns.
pub fn take_sent_so_far() {
    let _ = crate::linux::syscall::forward_unhooked(hrt_abi::process::SYNC_SIGNALS, [0; 6]);
}
