//! Access to the program's memory from the kernel. Every pointer the program passes is
//! checked to lie in pages it has mapped (the page map of `usermap`, inside its pool) before the
//! kernel touches it, so a range that leaves its mappings gives EFAULT as on Linux; memory is
//! identity-mapped, so a checked address is also the kernel's pointer.

use super::errno::{Errno, EFAULT};

/// The end of Linux's x86-64 user address space (TASK_SIZE_MAX with 4-level paging): user
/// pointers and the TLS base lie below it.
pub const USER_END: u64 = (1 << 47) - 4096;

/// Checks `[addr, addr + len)` is program memory the program can read.
pub fn check(addr: u64, len: u64) -> Result<(), Errno> {
    check_access(addr, len, false)
}

/// Checks `[addr, addr + len)` is program memory the program can write.
pub fn check_write(addr: u64, len: u64) -> Result<(), Errno> {
    check_access(addr, len, true)
}

fn check_access(addr: u64, len: u64, write: bool) -> Result<(), Errno> {
    let end = addr.checked_add(len).ok_or(EFAULT)?;
    if len == 0
        || super::usermem::is_user_range(addr, end)
            && super::usermap::is_mapped(addr, len)
            && super::protect::allows(addr, end, write)
    {
        Ok(())
    } else {
        Err(EFAULT)
    }
}

/// EFAULT if part of `[addr, addr + len)` (checked) is a shared file page another process's
/// truncation took away, not hidden yet: touching it from the kernel would spin inside KVM.
pub fn still_there(addr: u64, len: u64) -> Result<(), Errno> {
    match super::shared_files::vanished(addr, addr + len) {
        true => Err(EFAULT),
        false => Ok(()),
    }
}

pub fn slice<'a>(addr: u64, len: u64) -> Result<&'a [u8], Errno> {
    check(addr, len)?;
    still_there(addr, len)?;
    if len == 0 {
        return Ok(&[]);
    }
    // SAFETY: checked to be program memory, which stays mapped for the program's lifetime.
    Ok(unsafe { core::slice::from_raw_parts(addr as *const u8, len as usize) })
}

pub fn slice_mut<'a>(addr: u64, len: u64) -> Result<&'a mut [u8], Errno> {
    check_write(addr, len)?;
    still_there(addr, len)?;
    if len == 0 {
        return Ok(&mut []);
    }
    // SAFETY: as above; the program may race with us on its own memory, as on Linux.
    Ok(unsafe { core::slice::from_raw_parts_mut(addr as *mut u8, len as usize) })
}

/// Reads a plain-data value from the program. The copy survives another thread unmapping the
/// memory meanwhile (EFAULT), as do `write` and `write_bytes` a protection taken away.
pub fn read<T: Copy>(addr: u64) -> Result<T, Errno> {
    let len = core::mem::size_of::<T>();
    check(addr, len as u64)?;
    still_there(addr, len as u64)?;
    let mut value = core::mem::MaybeUninit::<T>::uninit();
    // SAFETY: checked to be program memory; the destination is our own value.
    if !unsafe { crate::arch::traps::copy_catching_faults(value.as_mut_ptr() as *mut u8, addr as *const u8, len) } {
        return Err(EFAULT);
    }
    // SAFETY: all its bytes were copied, and T is plain data.
    Ok(unsafe { value.assume_init() })
}

pub fn write<T: Copy>(addr: u64, value: T) -> Result<(), Errno> {
    write_bytes(addr, as_bytes(&value))
}

/// Copies plain data to the program.
pub fn write_bytes(addr: u64, bytes: &[u8]) -> Result<(), Errno> {
    check_write(addr, bytes.len() as u64)?;
    still_there(addr, bytes.len() as u64)?;
    // SAFETY: checked to be program memory the program may write (a concurrent change ends
    // the copy with EFAULT, see `read`).
    match unsafe { crate::arch::traps::copy_catching_faults(addr as *mut u8, bytes.as_ptr(), bytes.len()) } {
        true => Ok(()),
        false => Err(EFAULT),
    }
}

/// Views a plain-data value as bytes.
pub fn as_bytes<T: Copy>(v: &T) -> &[u8] {
    // SAFETY: T is plain data (Copy, no padding-sensitive reads by the caller).
    unsafe { core::slice::from_raw_parts(v as *const T as *const u8, core::mem::size_of::<T>()) }
}

/// Reads a NUL-terminated string of at most `max` bytes (without the NUL).
pub fn read_cstr<'a>(addr: u64, max: usize) -> Result<&'a [u8], Errno> {
    let mapped = super::usermap::mapped_len(addr, max as u64);
    if mapped == 0 {
        return Err(EFAULT);
    }
    let window = slice(addr, mapped)?;
    match window.iter().position(|&b| b == 0) {
        Some(n) => Ok(&window[..n]),
        None if window.len() == max => Err(super::errno::ENAMETOOLONG),
        None => Err(EFAULT),
    }
}
