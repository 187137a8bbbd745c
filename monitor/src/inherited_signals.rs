//! The signal state `hrt` was started with: which signals its starter left ignored and which
//! blocked. An exec'd program inherits both (and the program is what `hrt` was asked to exec),
//! so the kernel starts it with them (`BootInfo::sig_ignored`, `sig_mask`); `hrt` itself then
//! unblocks everything, so host signals still reach it to be passed on. Read by a constructor
//! that runs before `main`, because Rust's runtime sets SIGPIPE to ignored before `main`.

use std::sync::atomic::{AtomicU64, Ordering};

static IGNORED: AtomicU64 = AtomicU64::new(0);
static MASK: AtomicU64 = AtomicU64::new(0);

extern "C" fn capture() {
    let (mut ignored, mut mask) = (0u64, 0u64);
    // SAFETY: queries of this process's dispositions and this thread's mask into our own
    // zeroed structures; nothing is changed.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let masked = libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut set) == 0;
        for sig in 1..=64 {
            // The raw query: glibc's sigaction refuses 32 and 33, which a starter may have
            // left ignored (glibc's posix_spawn ignores them in its child).
            if crate::shared_signals::is_ignored(sig) {
                ignored |= 1 << (sig - 1);
            }
            if masked && libc::sigismember(&set, sig) == 1 {
                mask |= 1 << (sig - 1);
            }
        }
    }
    IGNORED.store(ignored, Ordering::Relaxed);
    MASK.store(mask, Ordering::Relaxed);
}

/// Runs `capture` before `main` (and before Rust's runtime changes SIGPIPE).
#[used]
#[link_section = ".init_array"]
static CAPTURE: extern "C" fn() = capture;

/// The signals `hrt` was started with ignored (bit `sig - 1`).
pub fn ignored() -> u64 {
    IGNORED.load(Ordering::Relaxed)
}

/// The signal mask `hrt` was started with (bit `sig - 1`).
pub fn mask() -> u64 {
    MASK.load(Ordering::Relaxed)
}

/// Whether `sig` was ignored when `hrt` started.
pub fn was_ignored(sig: libc::c_int) -> bool {
    (1..=64).contains(&sig) && ignored() & (1 << (sig - 1)) != 0
}

/// Unblocks every signal in the calling thread (and the threads it creates from now on).
pub fn unblock_all() {
    // SAFETY: an emptied set we own; changes only this thread's mask.
    unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    }
}
