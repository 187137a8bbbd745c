//! Linux error numbers as negative return values.

pub use linux_raw_sys::errno::*;

/// A Linux error, returned to the program as `-errno`.
pub type Errno = u32;

pub type SysResult = Result<u64, Errno>;

pub fn to_ret(r: SysResult) -> i64 {
    match r {
        Ok(v) => v as i64,
        Err(e) => -(e as i64),
    }
}
