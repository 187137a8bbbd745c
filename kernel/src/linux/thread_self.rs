//! `readlink("/proc/thread-self")` answered in the kernel: `<pid>/task/<tid>` with the calling
//! thread's id as the program knows it. Forwarded, the host answered with the id of the
//! monitor's thread that served the call (a host thread the program never sees: the kernel's
//! x86 selftest thread-self failed on it). Paths through it (`/proc/thread-self/comm`) are the
//! monitor's to resolve, as before; other spellings of the link itself are forwarded.

use alloc::format;

const PATH: &[u8] = b"/proc/thread-self";

/// The result of forwarded call `nr` (`args`) if it is `readlink` or `readlinkat` of
/// `/proc/thread-self`; None to forward it.
pub fn intercept(nr: u64, args: &[u64; 6]) -> Option<i64> {
    let (buf, size) = super::local_links::readlink_of(nr, args, PATH)?;
    let text = format!("{}/task/{}", super::process::pid(), super::process::current_tid());
    Some(super::local_links::answer(buf, size, text.as_bytes()))
}
