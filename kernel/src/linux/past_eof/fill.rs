//! The host's side of pages past the end of a file: what the file is (a forwarded `fstat`) and,
//! at a fault, whether it has grown over the page since, in which case the page is read in (a
//! forwarded `pread`) instead of raising SIGBUS.
//!
//! The page is read into a scratch page first and copied in once claimed, so that a second
//! thread touching it meanwhile retries instead of seeing a half-read page, and an unmap
//! racing with the fault finds the page either untouched or whole.

use linux_raw_sys::general::{__NR_fstat, __NR_pread64};

use super::PAGE;
use crate::linux::syscall::{forward, forward_unhooked};
use crate::linux::usermem;

/// The fields of x86-64's `struct stat` used here: device, inode, mode and size.
struct Stat {
    dev: u64,
    ino: u64,
    mode: u32,
    size: u64,
}

const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;

/// `fstat(fd)` into `scratch` (a page of program memory only the kernel knows). Not preceded by
/// `identify` (it runs inside it): an `fstat` changes no descriptor.
fn stat(fd: u64, scratch: u64) -> Option<Stat> {
    if forward_unhooked(__NR_fstat as u64, [fd, scratch, 0, 0, 0, 0]) < 0 {
        return None;
    }
    let at = |off: u64| scratch + off;
    // SAFETY: the scratch page is ours and the host's fstat filled its first 144 bytes:
    // st_dev at 0, st_ino at 8, st_mode at 24, st_size at 48 (x86-64's layout).
    unsafe {
        Some(Stat {
            dev: (at(0) as *const u64).read(),
            ino: (at(8) as *const u64).read(),
            mode: (at(24) as *const u32).read(),
            size: (at(48) as *const u64).read(),
        })
    }
}

/// The device and inode of the file `fd` names, if it is a regular file (SIGBUS past the end
/// is theirs: a device mapped privately, /dev/zero say, keeps reading what its read gave).
pub(super) fn regular_file(fd: u64) -> Option<(u64, u64)> {
    let mut id = None;
    usermem::with_scratch(|scratch| {
        id = stat(fd, scratch).filter(|s| s.mode & S_IFMT == S_IFREG).map(|s| (s.dev, s.ino));
        0
    });
    id
}

/// A page fault at `addr` (a write if `write`, an instruction fetch if `exec`): None if it is
/// no hidden page of a private file mapping, or one whose protection forbids the access
/// (SIGSEGV, as Linux checks that first); Some(true) if the page is still past the end of its
/// file (SIGBUS, BUS_ADRERR); Some(false) if the file has grown over it since, or another
/// thread is reading it in: the page is (or is about to be) the file's, and the program
/// touches it again.
pub fn fault(addr: u64, write: bool, exec: bool) -> Option<bool> {
    let page = addr & !(PAGE - 1);
    let mut found = super::hidden_page(page, write, exec)?;
    if matches!(found, Ok((file, _, _)) if file.id.is_none()) {
        // Mapped since the last forwarded call: which file is it? Not a regular file after
        // all, the page is shown now (or something else changed it): the touch tells.
        super::identify::identify();
        let Some(again) = super::hidden_page(page, write, exec) else { return Some(false) };
        found = again;
    }
    let (file, off, _) = match found {
        Ok(found) => found,
        Err(()) => return Some(false),
    };
    let grown = usermem::with_scratch(|scratch| {
        // The descriptor must still name the mapped file (closed or replaced: the file is out
        // of reach, and the page stays past its end).
        let Some(now) = stat(file.fd, scratch) else { return 0 };
        if Some((now.dev, now.ino)) != file.id || now.size <= off {
            return 0;
        }
        let got = forward(__NR_pread64 as u64, [file.fd, scratch, PAGE, off, 0, 0]);
        if got <= 0 {
            return 0;
        }
        if !super::claim(page) {
            return 1; // Unmapped, replaced or filled meanwhile: the touch tells.
        }
        // The rest of the scratch page is zero (fresh pool memory): the tail past the end
        // of the file reads zero. Copied while the page stays mapped (an unmap waits, then
        // zeroes it).
        usermem::while_mapped(page, page + PAGE, || usermem::copy(page, scratch, PAGE));
        // Present before it counts as filled: a thread touching it meanwhile retries.
        if let Some(prot) = super::filling(page) {
            crate::linux::protect::set(page, page + PAGE, prot);
            usermem::access_changed(page, page + PAGE, prot & crate::linux::protect::ALL != 0);
            super::filled(page);
        }
        1
    });
    Some(grown != 1)
}
