//! The host's random bytes, for the guest: seeds of the kernel's own random generator
//! (`BootInfo::seed`, `ForkAnswer::seed`) and the `nr::RANDOM` hypercall.

use hrt_abi::SEED_LEN;

/// Fills `len` bytes at `dst` with the host's `getrandom` bytes; Err(errno) if the host has
/// none to give.
///
/// # Safety
/// `dst` must be valid for writes of `len` bytes.
pub unsafe fn host_random(dst: *mut u8, len: usize) -> Result<(), i32> {
    let mut done = 0usize;
    while done < len {
        // SAFETY: the caller vouches for the destination; getrandom writes at most the length
        // given.
        let n = unsafe { libc::getrandom(dst.add(done) as *mut libc::c_void, len - done, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
            if e == libc::EINTR {
                continue;
            }
            return Err(e);
        }
        done += n as usize;
    }
    Ok(())
}

/// A fresh seed, or all zeros (which tells the kernel to ask the host for every request) if
/// the host has no random bytes to give.
pub fn fresh() -> [u8; SEED_LEN] {
    let mut seed = [0u8; SEED_LEN];
    // SAFETY: a local array of that length.
    if unsafe { host_random(seed.as_mut_ptr(), SEED_LEN) }.is_err() {
        seed = [0; SEED_LEN];
    }
    seed
}
