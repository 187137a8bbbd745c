//! Dispositions `hrt` must share with the program, because the host acts on them before the
//! program's kernel hears of anything (nr::HOST_SIGNAL_ACTION):
//! - SIGTTIN and SIGTTOU: the host's terminal sends them to `hrt` when a background job reads
//!   or writes it, and stops it, fails the call or interrupts it by their disposition;
//! - SIGCHLD ignored, or with SA_NOCLDWAIT: the host then reaps the program's ended children
//!   itself (they are `hrt`'s host children), so `wait` finds none, as Linux's would;
//! - SIGCHLD with SA_NOCLDSTOP: the host then sends none when a child stops or continues (the
//!   program's SIGCHLDs about its children are the host's), as Linux would send none.
//!
//! Each change costs an exit to the monitor, so only a change of what the host does is told.

use core::sync::atomic::{AtomicU64, Ordering};

use hrt_abi::signal_action::{DEFAULT, HANDLER, IGNORE, NO_CHILD_STOP, NO_CHILD_WAIT};

use super::{SIG_DFL, SIG_IGN};

const SIGCHLD: usize = 17;
const SIGTTIN: usize = 21;
const SIGTTOU: usize = 22;
const SA_NOCLDSTOP: u64 = 1;
const SA_NOCLDWAIT: u64 = 2;

/// What the host was last told for SIGCHLD, plus one (0: nothing yet: `hrt`'s start-up state,
/// which follows the program's initial dispositions).
static CHILD_TOLD: AtomicU64 = AtomicU64::new(0);

/// The host's action for `act` (a kernel sigaction: handler, flags, restorer, mask).
fn host_action(signo: usize, act: &[u64; 4]) -> u64 {
    let action = match act[0] {
        SIG_DFL => DEFAULT,
        SIG_IGN => IGNORE,
        _ => HANDLER,
    };
    if signo == SIGCHLD && action != IGNORE {
        // The host passes SIGCHLD on whether the program handles it or not.
        let wait = if act[1] & SA_NOCLDWAIT != 0 { NO_CHILD_WAIT } else { 0 };
        let stop = if act[1] & SA_NOCLDSTOP != 0 { NO_CHILD_STOP } else { 0 };
        return HANDLER | wait | stop;
    }
    action
}

/// The program set `signo`'s action to `act`.
pub fn after_sigaction(signo: usize, act: &[u64; 4]) {
    match signo {
        SIGTTIN | SIGTTOU => tell(signo, host_action(signo, act)),
        SIGCHLD => {
            let action = host_action(signo, act);
            let before = CHILD_TOLD.swap(action + 1, Ordering::SeqCst);
            let host_before = if before == 0 { start_action() } else { before - 1 };
            if host_before != action {
                tell(signo, action);
            }
        }
        _ => {}
    }
}

/// The host's SIGCHLD action at start-up: ignored if the program starts with it ignored.
fn start_action() -> u64 {
    if crate::bootinfo::get().sig_ignored & (1 << (SIGCHLD - 1)) != 0 {
        IGNORE
    } else {
        HANDLER
    }
}

/// An exec reset `signo`'s action from `old` to `new` (handlers to SIG_DFL, flags cleared).
pub fn after_exec_reset(signo: usize, old: &[u64; 4], new: &[u64; 4]) {
    if host_action(signo, old) != host_action(signo, new) {
        after_sigaction(signo, new);
    }
}

/// Whether a child that ends is reaped at once (SIGCHLD ignored or SA_NOCLDWAIT): no zombie.
pub fn children_reaped_at_exit() -> bool {
    let told = CHILD_TOLD.load(Ordering::SeqCst);
    let action = if told == 0 { start_action() } else { told - 1 };
    action == IGNORE || action & NO_CHILD_WAIT != 0
}

fn tell(signo: usize, action: u64) {
    crate::arch::hypercall::call(hrt_abi::nr::HOST_SIGNAL_ACTION, &[signo as u64, action]);
}
