//! Copies between the monitor's own buffers and guest memory that fail cleanly, instead of
//! killing `hrt`, when a page has vanished under them.
//!
//! The pages of a program's `MAP_SHARED` file mapping are the host file's own
//! (`vm::shared_files`): another process may shrink the file, and touching a page past its new
//! end then raises SIGBUS in whoever touches it, the monitor included. The program's kernel
//! hides such pages once it knows (so the forwarder's page-map checks refuse them), but until
//! then a forwarded call's buffer may lie there: Linux answers EFAULT, and so must `hrt`, never
//! die. So the forwarder copies through `copy`, whose one instruction that touches memory
//! (`rep movsb`) has a fixup, as Linux's user copies have exception-table entries: the SIGBUS
//! handler (`install`, at the first shared file mapping) moves a fault there to the fixup,
//! which returns failure. Any other SIGBUS goes to the handler it had before (`chain`), as if
//! this one were not there: `hrt` dies of its own other faults, as ever. Host system calls
//! given guest pointers need none of this: the host kernel answers EFAULT itself.

use std::sync::OnceLock;

// `hrt_guest_copy(dst, src, len)`: 0 once copied, 1 if a page faulted (SIGBUS) on the way.
// The direction flag is clear at every call (the System V ABI).
core::arch::global_asm!(
    ".pushsection .text.hrt_guest_copy,\"ax\",@progbits",
    ".p2align 4",
    ".globl hrt_guest_copy",
    "hrt_guest_copy:",
    "    mov rcx, rdx",
    ".globl hrt_guest_copy_insn",
    "hrt_guest_copy_insn:",
    "    rep movsb",
    "    xor eax, eax",
    "    ret",
    ".globl hrt_guest_copy_fixup",
    "hrt_guest_copy_fixup:",
    "    mov eax, 1",
    "    ret",
    ".popsection",
);

extern "C" {
    fn hrt_guest_copy(dst: *mut u8, src: *const u8, len: usize) -> u32;
    static hrt_guest_copy_insn: u8;
    static hrt_guest_copy_fixup: u8;
}

/// Copies `len` bytes from `src` to `dst`; Err(()) if a page of either vanished (SIGBUS), with
/// the bytes before it copied.
///
/// # Safety
/// Both ranges must be mapped memory of this process (a mapped page whose file shrank under it
/// is what this survives) that nothing else holds a Rust reference to; they must not overlap.
pub unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) -> Result<(), ()> {
    if len == 0 {
        return Ok(());
    }
    // SAFETY: the caller's contract; the routine reads and writes only the two ranges.
    match unsafe { hrt_guest_copy(dst, src, len) } {
        0 => Ok(()),
        _ => Err(()),
    }
}

/// The SIGBUS action before `install`'s, given back to a SIGBUS that is not a guest copy's.
static BEFORE: OnceLock<libc::sigaction> = OnceLock::new();

/// Installs the SIGBUS handler that turns a fault in `copy` into its failure. Idempotent;
/// called before the first page that can vanish (a shared file mapping) exists.
pub fn install() {
    BEFORE.get_or_init(|| {
        // SAFETY: sigaction with zeroed structs and a handler that only edits the interrupted
        // context (or gives the signal back its previous action).
        unsafe {
            let mut before: libc::sigaction = std::mem::zeroed();
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sigbus as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            // Every signal blocked meanwhile: on the small alternate stack a burst of signals
            // sent by another process nested a frame each and overflowed it (shared_signals.rs).
            libc::sigfillset(&mut sa.sa_mask);
            libc::sigaction(libc::SIGBUS, &sa, &mut before);
            before
        }
    });
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo and the interrupted thread's context, ours to
    // edit; the two symbols are labels of the routine above.
    unsafe {
        let gregs = &mut (*(ctx as *mut libc::ucontext_t)).uc_mcontext.gregs;
        let rip = &mut gregs[libc::REG_RIP as usize];
        // A fault (a positive si_code; a sent SIGBUS has none) at the copy's one access.
        if *rip as usize == std::ptr::addr_of!(hrt_guest_copy_insn) as usize && (*info).si_code > 0 {
            *rip = std::ptr::addr_of!(hrt_guest_copy_fixup) as i64;
            return;
        }
    }
    chain(sig, info, ctx);
}

/// Hands a SIGBUS that is no guest copy's to the action it had before `install`, as if this
/// handler were not there.
fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let Some(before) = BEFORE.get() else { return };
    // SAFETY: the previous handler, called as the kernel would call it; the default action by
    // the same calls the kernel's delivery amounts to.
    unsafe {
        match before.sa_sigaction {
            libc::SIG_DFL => {
                // A fault meets the default action when its instruction runs again; a sent
                // signal is sent again (blocked until this handler returns).
                libc::signal(libc::SIGBUS, libc::SIG_DFL);
                if (*info).si_code <= 0 {
                    libc::raise(libc::SIGBUS);
                }
            }
            libc::SIG_IGN => {}
            h if before.sa_flags & libc::SA_SIGINFO != 0 => {
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) = std::mem::transmute(h);
                f(sig, info, ctx);
            }
            h => {
                let f: extern "C" fn(libc::c_int) = std::mem::transmute(h);
                f(sig);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: usize = 4096;

    #[test]
    fn copies_bytes() {
        let src: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
        let mut dst = vec![0u8; 300];
        // SAFETY: two separate buffers of 300 bytes.
        assert_eq!(unsafe { copy(dst.as_mut_ptr(), src.as_ptr(), 300) }, Ok(()));
        assert_eq!(src, dst);
    }

    /// A page of a file truncated under its mapping: the copy fails instead of killing the
    /// process, and the bytes before it are copied.
    #[test]
    fn a_vanished_page_fails_the_copy() {
        install();
        let file = tempfile_of(2 * PAGE);
        // SAFETY: a fresh shared mapping of our own file, unmapped below.
        let m = unsafe {
            libc::mmap(std::ptr::null_mut(), 2 * PAGE, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, file, 0)
        } as *mut u8;
        assert_ne!(m as *mut libc::c_void, libc::MAP_FAILED);
        // SAFETY: our own descriptor; the second page is past the new end of the file.
        unsafe {
            m.write_bytes(7, 2 * PAGE);
            assert_eq!(libc::ftruncate(file, PAGE as libc::off_t), 0);
        }
        let mut buf = vec![0u8; 2 * PAGE];
        // SAFETY: both are mapped; the source's second page vanished.
        assert_eq!(unsafe { copy(buf.as_mut_ptr(), m, 2 * PAGE) }, Err(()));
        assert!(buf[..PAGE].iter().all(|&b| b == 7), "the bytes before the gone page are copied");
        // SAFETY: as above, the other way.
        assert_eq!(unsafe { copy(m.add(PAGE - 8), buf.as_ptr(), 16) }, Err(()));
        // SAFETY: as above; the first page is the file's.
        assert_eq!(unsafe { copy(buf.as_mut_ptr(), m, PAGE) }, Ok(()));
        // SAFETY: our own mapping and descriptor.
        unsafe {
            libc::munmap(m as *mut libc::c_void, 2 * PAGE);
            libc::close(file);
        }
    }

    /// An unlinked temporary file of `len` bytes.
    fn tempfile_of(len: usize) -> i32 {
        let mut path = *b"/tmp/hrt-guest-copy-XXXXXX\0";
        // SAFETY: mkstemp fills in the template, a NUL-terminated buffer of ours.
        let fd = unsafe { libc::mkstemp(path.as_mut_ptr() as *mut libc::c_char) };
        assert!(fd >= 0);
        // SAFETY: the path mkstemp wrote; our own descriptor.
        unsafe {
            libc::unlink(path.as_ptr() as *const libc::c_char);
            assert_eq!(libc::ftruncate(fd, len as libc::off_t), 0);
        }
        fd
    }
}
