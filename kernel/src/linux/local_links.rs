//! What the links the kernel answers itself (`own_exe`, `thread_self`) share: recognising
//! `readlink` or `readlinkat` of one absolute path, and writing the answer as Linux does.

use linux_raw_sys::general::{__NR_readlink, __NR_readlinkat};

use super::errno::{EFAULT, EINVAL};
use super::uaccess;

/// The buffer and size of forwarded call `nr` (`args`) if it is `readlink` or `readlinkat` of
/// exactly `path` (absolute: readlinkat's descriptor does not matter); None otherwise.
pub fn readlink_of(nr: u64, args: &[u64; 6], path: &[u8]) -> Option<(u64, u64)> {
    let (at, buf, size) = if nr == __NR_readlink as u64 {
        (args[0], args[1], args[2])
    } else if nr == __NR_readlinkat as u64 {
        (args[1], args[2], args[3])
    } else {
        return None;
    };
    (uaccess::read_cstr(at, path.len() + 1).ok()? == path).then_some((buf, size))
}

/// readlink's result for link text `text` into `buf` of `size` bytes: as Linux, a size that is
/// not positive as an int is EINVAL, and the text is cut to the size.
pub fn answer(buf: u64, size: u64, text: &[u8]) -> i64 {
    let size = size as u32 as i32;
    if size <= 0 {
        return -(EINVAL as i64);
    }
    let n = text.len().min(size as usize);
    match uaccess::write_bytes(buf, &text[..n]) {
        Ok(()) => n as i64,
        Err(_) => -(EFAULT as i64),
    }
}
