//! `readlink("/proc/thread-self")` answered in the kernel: `<pid>/task/<tid>` with the calling
//! thread's id as the program knows it. Forwarded, the host answered with the id of the
//! monitor's thread that served the call (a host thread the program never sees: the kernel's
//! x86 selftest thread-self failed on it). Paths through it (`/proc/thread-self/comm`) are the
//! monitor's to resolve, as before; other spellings of the link itself are forwarded.

use alloc::format;

use linux_raw_sys::general::{__NR_readlink, __NR_readlinkat};

use super::errno::{EFAULT, EINVAL};
use super::uaccess;

const PATH: &[u8] = b"/proc/thread-self";

/// The result of forwarded call `nr` (`args`) if it is `readlink` or `readlinkat` of
/// `/proc/thread-self`; None to forward it.
pub fn intercept(nr: u64, args: &[u64; 6]) -> Option<i64> {
    let (path, buf, size) = if nr == __NR_readlink as u64 {
        (args[0], args[1], args[2])
    } else if nr == __NR_readlinkat as u64 {
        // An absolute path: the descriptor does not matter.
        (args[1], args[2], args[3])
    } else {
        return None;
    };
    if uaccess::read_cstr(path, PATH.len() + 1).ok()? != PATH {
        return None;
    }
    // As Linux: a size that is not positive as an int is EINVAL; the answer is cut to it.
    let size = size as u32 as i32;
    if size <= 0 {
        return Some(-(EINVAL as i64));
    }
    let text = format!("{}/task/{}", super::process::pid(), super::process::current_tid());
    let n = text.len().min(size as usize);
    match uaccess::write_bytes(buf, &text.as_bytes()[..n]) {
        Ok(()) => Some(n as i64),
        Err(_) => Some(-(EFAULT as i64)),
    }
}
