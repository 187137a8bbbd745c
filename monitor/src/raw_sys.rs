//! System calls without libc's wrappers, for code that runs on another thread's TLS (a clone
//! child or thread made without CLONE_SETTLS): libc's wrappers would write `errno` there, into
//! the thread that lent it. Each answers the kernel's raw value (a negated errno on failure).

use core::arch::asm;

/// System call `n` with up to six arguments.
///
/// # Safety
/// The arguments must be valid for system call `n` (pointers to live memory of the right size).
pub unsafe fn syscall6(n: libc::c_long, a: [u64; 6]) -> i64 {
    let r: i64;
    // SAFETY: (caller) the arguments are valid for system call `n`.
    unsafe {
        asm!("syscall", inlateout("rax") n => r, in("rdi") a[0], in("rsi") a[1], in("rdx") a[2],
             in("r10") a[3], in("r8") a[4], in("r9") a[5], lateout("rcx") _, lateout("r11") _, options(nostack));
    }
    r
}

/// System call `n` with up to three arguments.
///
/// # Safety
/// As [`syscall6`].
pub unsafe fn syscall3(n: libc::c_long, a: u64, b: u64, c: u64) -> i64 {
    // SAFETY: the caller's promise.
    unsafe { syscall6(n, [a, b, c, 0, 0, 0]) }
}

/// Ends the calling thread (not its process) with `status`.
///
/// # Safety
/// Nothing may use this thread's stack afterwards.
pub unsafe fn exit_thread(status: u64) -> ! {
    // SAFETY: ends this task; `exit` does not return.
    unsafe { asm!("syscall", in("rax") libc::SYS_exit, in("rdi") status, options(noreturn, nostack)) }
}

/// The kernel's `struct sigaction` (x86-64): what `rt_sigaction` reads and writes.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct KernelSigaction {
    pub handler: u64,
    pub flags: u64,
    pub restorer: u64,
    pub mask: u64,
}

/// Sets signal `sig`'s disposition to `new` (None: only reads it), returning the old one or a
/// negated errno. Unlike libc's `sigaction`, it reaches the signals glibc keeps for itself (32
/// and 33), which a program may ignore and its exec'd programs must then find ignored.
///
/// # Safety
/// `new`'s handler must be SIG_DFL (0), SIG_IGN (1) or a handler valid in this process.
pub unsafe fn rt_sigaction(sig: i32, new: Option<&KernelSigaction>) -> Result<KernelSigaction, i64> {
    let mut old = KernelSigaction::default();
    let new_ptr = new.map_or(0, |n| n as *const KernelSigaction as u64);
    // SAFETY: (caller) the new action is valid; both structs are ours and of the kernel's size.
    let r = unsafe {
        syscall6(libc::SYS_rt_sigaction, [sig as u64, new_ptr, &mut old as *mut KernelSigaction as u64, 8, 0, 0])
    };
    if r < 0 {
        return Err(r);
    }
    Ok(old)
}
