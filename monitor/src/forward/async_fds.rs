//! Which of the program's descriptor numbers each host descriptor with signal-driven I/O was
//! when the program set it up (`fcntl` F_SETFL with O_ASYNC, F_SETSIG, `ioctl` FIOASYNC): the
//! host reports the descriptor in an I/O signal's siginfo (`si_fd`, with F_SETSIG) by its own
//! number, and the program must see its own. Linux likewise reports the number the descriptor
//! had when O_ASYNC was set. Read from `hrt`'s signal handler, so a fixed table of atomics.

use std::sync::atomic::{AtomicI32, Ordering};

/// Host descriptors below this are remembered (`hrt`'s own stay few; a program's are as many
/// as it opens, and one with more open at once gets its siginfo without the descriptor).
const HOST_FDS: usize = 1 << 16;

/// 1 + the program's number for each host descriptor (0: none noted).
static PROGRAM_FD: [AtomicI32; HOST_FDS] = [const { AtomicI32::new(0) }; HOST_FDS];

/// The program sets up signal-driven I/O on its descriptor `program` (host descriptor `host`).
pub fn note(host: i32, program: u64) {
    if let (Ok(h), Ok(p)) = (usize::try_from(host), i32::try_from(program)) {
        if h < HOST_FDS && p < i32::MAX {
            PROGRAM_FD[h].store(p + 1, Ordering::Relaxed);
        }
    }
}

/// The program's number for host descriptor `host` as noted, if any. Async-signal-safe.
pub fn program_fd(host: i32) -> Option<i32> {
    let h = usize::try_from(host).ok().filter(|&h| h < HOST_FDS)?;
    match PROGRAM_FD[h].load(Ordering::Relaxed) {
        0 => None,
        n => Some(n - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noted_descriptors_are_found_and_others_are_not() {
        note(40_000, 7);
        assert_eq!(program_fd(40_000), Some(7));
        note(40_000, 0);
        assert_eq!(program_fd(40_000), Some(0));
        assert_eq!(program_fd(40_001), None);
        assert_eq!(program_fd(-1), None);
        note(HOST_FDS as i32, 3);
        assert_eq!(program_fd(HOST_FDS as i32), None);
    }
}
