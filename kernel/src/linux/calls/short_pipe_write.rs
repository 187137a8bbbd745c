//! A blocking write to a pipe that wrote part of its data and then found the readers gone:
//! Linux's `pipe_write` sends SIGPIPE then too, although the write returns the count it wrote
//! (sockets do not: they send it only when nothing was written, and fail with EPIPE, which
//! `syscall::forward_call` handles). The host's SIGPIPE went to `hrt`, which ignores it, so
//! the program got the count and no signal; a program with a SIGPIPE handler, or the default
//! action, saw that write end differently than natively.
//!
//! Asked only after a short forwarded `write`/`writev` (rare on a blocking descriptor: a
//! signal, or the readers leaving). The descriptor's flags, then a zero-timeout `poll` for
//! POLLERR (a pipe's write end reports it once no reader is left), then its type (a FIFO):
//! three forwarded calls, none on a full write or on a non-blocking descriptor's short one.

use linux_raw_sys::general::{
    __NR_fcntl, __NR_fstat, __NR_poll, __NR_write, __NR_writev, stat, F_GETFL, O_NONBLOCK, POLLERR, POLLOUT, S_IFIFO,
    S_IFMT,
};

use crate::linux::syscall::forward;
use crate::linux::uaccess;
use crate::linux::usermem::with_scratch;

/// The most iovecs whose lengths are added up (a longer array is taken as not short).
const MAX_IOVECS: u64 = 1024;

/// Whether forwarded call `nr` (`args`), which returned `ret` bytes, was a short write to a
/// blocking pipe that has no readers now.
#[allow(non_upper_case_globals)] // linux-raw-sys names the numbers __NR_write etc.
pub fn readers_left(nr: u64, args: &[u64; 6], ret: i64) -> bool {
    if ret <= 0 {
        return false;
    }
    let wanted = match nr as u32 {
        __NR_write => args[2],
        __NR_writev if args[2] <= MAX_IOVECS => (0..args[2])
            .try_fold(0u64, |sum, i| {
                uaccess::read::<[u64; 2]>(args[1] + i * 16).ok().map(|[_, len]| sum.saturating_add(len))
            })
            .unwrap_or(0),
        _ => return false,
    };
    if ret as u64 >= wanted {
        return false;
    }
    let fd = args[0];
    let flags = forward(__NR_fcntl as u64, [fd, F_GETFL as u64, 0, 0, 0, 0]);
    if flags < 0 || flags as u64 & O_NONBLOCK as u64 != 0 {
        return false;
    }
    with_scratch(|page| {
        // SAFETY: `page` is a fresh page of program memory only the kernel knows: a pollfd
        // (fd, events, revents) at its start, then a `struct stat`.
        unsafe { (page as *mut [u32; 2]).write([fd as u32, POLLOUT]) };
        if forward(__NR_poll as u64, [page, 1, 0, 0, 0, 0]) != 1 {
            return 0;
        }
        // SAFETY: as above; the host wrote the pollfd's revents.
        let revents = unsafe { ((page + 6) as *const u16).read() } as u32;
        if revents & POLLERR == 0 {
            return 0;
        }
        let st = page + 64;
        if forward(__NR_fstat as u64, [fd, st, 0, 0, 0, 0]) != 0 {
            return 0;
        }
        // SAFETY: as above; the host filled the `struct stat`.
        let mode = unsafe { (*(st as *const stat)).st_mode };
        (mode & S_IFMT == S_IFIFO) as i64
    }) == 1
}
