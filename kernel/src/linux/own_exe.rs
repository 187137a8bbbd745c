//! `readlink("/proc/self/exe")` answered in the kernel. glibc's static start-up asks it of
//! every program (`_dl_non_dynamic_init`), and forwarded it was a static program's first
//! round trip to the monitor: a doorbell exit, ~0.1-0.3 ms of an empty program's ~12 ms. The
//! monitor's answer is fixed for an image (the program's absolute host path), so it comes in
//! the boot block (`BootInfo::exe_len`); an execve forgets it, and the new image's is forwarded
//! as any other. Other spellings (`/proc/thread-self/exe`, `/proc/<pid>/exe`, paths relative
//! to a descriptor) are forwarded as before.

use alloc::vec::Vec;

use crate::sync::SpinLock;

/// The answer, while the program is the image the monitor described at boot (empty: forward).
static EXE: SpinLock<Vec<u8>> = SpinLock::new(Vec::new());

const PATH: &[u8] = b"/proc/self/exe";

/// At boot: what the monitor answers for the program.
pub fn set(exe: &[u8]) {
    *EXE.lock() = exe.to_vec();
}

/// An execve replaced the image: its path is the monitor's to answer.
pub fn forget() {
    EXE.lock().clear();
}

/// The result of forwarded call `nr` (`args`) if it is `readlink` or `readlinkat` of
/// `/proc/self/exe` and the answer is known here; None to forward it.
pub fn intercept(nr: u64, args: &[u64; 6]) -> Option<i64> {
    let exe = EXE.lock();
    if exe.is_empty() {
        return None;
    }
    let (buf, size) = super::local_links::readlink_of(nr, args, PATH)?;
    Some(super::local_links::answer(buf, size, &exe))
}
