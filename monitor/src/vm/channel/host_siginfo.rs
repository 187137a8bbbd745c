//! Which part of the host's siginfo of a signal sent to `hrt` the program sees (the kernel
//! raises the signal with it, `ChannelHeader::host_siginfo`): what another process put there
//! with kill, tgkill or sigqueue (SI_USER, SI_TKILL, SI_QUEUE: the sender's pid and uid, and
//! the value; a message queue's notification, SI_MESGQ, alike), a child's SIGCHLD (CLD_*: the
//! child's pid and uid, its status), SI_KERNEL (a terminal's, a plain SIGIO's), and for an I/O
//! signal chosen with F_SETSIG its POLL_* code, si_band and si_fd, the descriptor as the program
//! numbers it (`forward::async_fds`; unknown: -1). Others (timers) are passed as SI_USER from
//! pid 0, as before: their words would mean nothing to the program.

const SI_USER: i32 = 0;
const SI_QUEUE: i32 = -1;
const SI_MESGQ: i32 = -3;
const SI_TKILL: i32 = -6;
/// CLD_EXITED ..= CLD_CONTINUED.
const CLD_CODES: std::ops::RangeInclusive<i32> = 1..=6;
/// The kernel's own: a plain SIGIO (no F_SETSIG), a terminal's SIGINT or SIGWINCH.
const SI_KERNEL: i32 = 0x80;
/// POLL_IN ..= POLL_HUP: an I/O signal chosen with F_SETSIG (any signal but SIGCHLD, whose
/// codes are CLD_*; the other signals whose codes share the range are faults, kept by `hrt`).
const POLL_CODES: std::ops::RangeInclusive<i32> = 1..=6;

/// si_code and the words at offsets 16 and 24 to raise `sig` with, from the host's `info`
/// (none: a handler installed without SA_SIGINFO).
pub fn words(sig: i32, info: *const libc::siginfo_t) -> (i32, u64, u64) {
    if info.is_null() {
        return (SI_USER, 0, 0);
    }
    let p = info as *const u8;
    // SAFETY: the host passes an SA_SIGINFO handler a whole siginfo_t (128 bytes); the reads
    // are of its si_code (offset 8) and the two words at 16 and 24, unaligned-safe.
    let (code, w16, w24) = unsafe {
        (
            (p.add(8) as *const i32).read_unaligned(),
            (p.add(16) as *const u64).read_unaligned(),
            (p.add(24) as *const u64).read_unaligned(),
        )
    };
    match code {
        SI_USER | SI_TKILL => (code, w16, 0),
        // A POSIX message queue's notification (mq_notify) has sigqueue's layout.
        SI_QUEUE | SI_MESGQ => (code, w16, w24),
        // si_status is the int at 24; utime and stime (at 32 and 40) are not carried.
        c if sig == libc::SIGCHLD && CLD_CODES.contains(&c) => (code, w16, w24 & 0xffff_ffff),
        // si_band is the long at 16, si_fd the int at 24.
        c if sig != libc::SIGCHLD && POLL_CODES.contains(&c) => {
            let fd = crate::forward::async_fds::program_fd(w24 as u32 as i32).unwrap_or(-1);
            (code, w16, fd as u32 as u64)
        }
        SI_KERNEL => (SI_KERNEL, 0, 0),
        _ => (SI_USER, 0, 0),
    }
}
