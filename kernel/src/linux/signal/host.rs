//! Signals sent to `hrt` on the host (Ctrl-C, SIGTERM, SIGHUP) raised in the program, as if
//! another process had sent them: a handler runs, an ignored or blocked signal waits or goes,
//! and a signal whose default action ends the program ends it at once (as Linux kills a
//! process whose threads sleep in a read), with the shell-style status 128 + signal; a stop
//! signal's default action stops it (`hrt` stops itself on the host) at once too.

use super::state::{self, SigInfo};
use super::{SIGKILL, SIG_DFL};

/// SI_USER: sent by kill(2) from another process (pid and uid 0: not one the program knows).
const SI_USER: i32 = 0;

pub fn raise(sig: u64) {
    if !(1..=64).contains(&sig) {
        return;
    }
    let default_acts = state::handler(sig) == SIG_DFL && !state::blocked_anywhere(sig);
    if default_acts && super::stops_by_default(sig) {
        // Stop now, even while every thread waits in a host call (Ctrl-Z on a blocked read).
        super::stop_process();
        return;
    }
    let fatal = sig == SIGKILL || default_acts && !state::ignored_by_default(sig);
    if fatal {
        crate::linux::fault::terminate(sig as i32, None);
    }
    // A standard signal (host signals are), never refused.
    let _ = state::send_process(SigInfo { signo: sig as i32, code: SI_USER, w16: 0, w24: 0 });
    state::kick_all();
}
