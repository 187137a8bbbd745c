//! Which descriptors raise SIGPIPE when a write or send on them fails with EPIPE. The host's
//! SIGPIPE goes to `hrt` (which ignores it), so the kernel raises the program's itself
//! (`syscall::forward_call`): for a pipe, and for a stream socket, but not for a datagram or
//! sequenced-packet socket, whose EPIPE (a peer that shut down or closed) Linux answers
//! without a signal. Asked only after an EPIPE, so the extra forwarded call costs nothing in
//! the common case.

use linux_raw_sys::general::__NR_getsockopt;

use crate::linux::syscall::forward;
use crate::linux::usermem::with_scratch;

// Linux's socket level, option and type numbers (linux-raw-sys has them behind its `net`
// feature, which the kernel does not otherwise need).
const SOL_SOCKET: u64 = 1;
const SO_TYPE: u64 = 3;
const SOCK_STREAM: u32 = 1;

/// Whether an EPIPE from a write or send on descriptor `fd` comes with SIGPIPE: true unless
/// the descriptor is a socket of a type other than SOCK_STREAM.
pub fn signals(fd: u64) -> bool {
    with_scratch(|page| {
        // SAFETY: `page` is a fresh page of program memory only the kernel knows: the option's
        // value at its start, its length after it.
        unsafe { ((page + 8) as *mut u32).write(4) };
        if forward(__NR_getsockopt as u64, [fd, SOL_SOCKET, SO_TYPE, page, page + 8, 0]) != 0 {
            // Not a socket (a pipe, a FIFO): Linux's pipe_write signals.
            return 1;
        }
        // SAFETY: as above; the host wrote the socket's type.
        let kind = unsafe { (page as *const u32).read() };
        (kind == SOCK_STREAM) as i64
    }) != 0
}
