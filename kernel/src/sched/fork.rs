//! Thread fork, as in Nautilus: the child starts by returning from `fork()` into the caller's
//! frame, on its own stack holding a copy of that frame, with the caller's callee-saved
//! registers. When the calling function returns in the child, the child exits with that
//! return value.
//!
//! Rules for callers (checked by nothing, as in Nautilus): call `fork` from a function marked
//! `#[inline(never)]` (the copied frame is that function's, found through the frame pointer;
//! the kernel is built with frame pointers), and do not use, in the child, pointers to the
//! caller's stack variables taken before the fork (they still point into the parent's stack).

use alloc::boxed::Box;

use super::thread::{self, CreateError, ThreadHandle, ThreadOptions};

pub enum Fork {
    Parent(ThreadHandle),
    Child,
}

core::arch::global_asm!(
    ".section .text",
    ".global hrt_thread_fork",
    "hrt_thread_fork:",
    // [rsp] = return address into the caller, rbp = the caller's frame.
    "    mov rdi, rsp",
    "    mov rsi, rbp",
    "    push rbx",
    "    push r12",
    "    push r13",
    "    push r14",
    "    push r15",
    "    mov rdx, rsp",
    "    call {fork_impl}",
    "    pop r15",
    "    pop r14",
    "    pop r13",
    "    pop r12",
    "    pop rbx",
    "    ret",
    // The child's first instructions after its first switch: return 0 into the caller.
    ".global hrt_fork_child_start",
    "hrt_fork_child_start:",
    "    sub rsp, 8",
    "    call {finish}",
    "    add rsp, 8",
    "    xor eax, eax",
    "    ret",
    // Where the caller's frame returns to in the child.
    ".global hrt_fork_child_exit",
    "hrt_fork_child_exit:",
    "    mov rdi, rax",
    "    and rsp, -16",
    "    call {exit}",
    "    ud2",
    fork_impl = sym fork_impl,
    finish = sym child_first_run,
    exit = sym child_exit,
);

extern "C" {
    fn hrt_thread_fork() -> u64;
    fn hrt_fork_child_start();
    fn hrt_fork_child_exit();
}

/// `fork_impl`'s answer when the child cannot be created.
const FORK_FAILED: u64 = u64::MAX;

/// Forks the current thread; see the module comment for the rules. The child is placed
/// round-robin like any new thread.
#[inline(always)]
pub fn fork() -> Result<Fork, CreateError> {
    // SAFETY: hrt_thread_fork follows the C ABI in the parent; the child path is built to
    // resume the caller exactly as a return from this call would.
    let r = unsafe { hrt_thread_fork() };
    match r {
        0 => Ok(Fork::Child),
        FORK_FAILED => Err(CreateError::OutOfMemory),
        // SAFETY: fork_impl returned a leaked handle for the parent.
        _ => Ok(Fork::Parent(*unsafe { Box::from_raw(r as *mut ThreadHandle) })),
    }
}

extern "C" fn child_first_run() {
    super::finish_switch();
    crate::arch::irq::enable();
}

extern "C" fn child_exit(value: u64) -> ! {
    thread::exit(value)
}

/// `entry_rsp`: rsp at `hrt_thread_fork` entry (the return address into the caller);
/// `caller_rbp`: the caller's frame pointer; `regs`: saved r15, r14, r13, r12, rbx.
extern "C" fn fork_impl(entry_rsp: u64, caller_rbp: u64, regs: *const u64) -> u64 {
    let parent = super::current();
    // SAFETY: the current thread's record is alive.
    let name = unsafe { (*parent).name() };
    let mut child = match thread::allocate(&ThreadOptions::named(name)) {
        Ok(t) => t,
        Err(_) => return FORK_FAILED,
    };
    // Copy [entry_rsp, caller_rbp + 16): the return address into the caller, the caller's
    // locals, its saved rbp and its return address.
    let len = caller_rbp + 16 - entry_rsp;
    // Same alignment modulo 16 as in the parent (normally caller_rbp + 16 is 16-aligned).
    let child_frame_top = (thread::stack_top(&child) - 64) | ((caller_rbp + 16) & 15);
    assert!(len + 256 < thread::DEFAULT_STACK_SIZE as u64, "fork: caller frame too large");
    let child_base = child_frame_top - len;
    let delta = child_base.wrapping_sub(entry_rsp);
    // SAFETY: the source is our live stack; the destination is the child's fresh stack, which
    // is larger than the frame (asserted above).
    unsafe {
        core::ptr::copy_nonoverlapping(entry_rsp as *const u8, child_base as *mut u8, len as usize);
        // The caller's return address in the child leads to thread exit; its saved rbp ends
        // backtraces.
        *((caller_rbp + 8).wrapping_add(delta) as *mut u64) = hrt_fork_child_exit as *const () as u64;
        *(caller_rbp.wrapping_add(delta) as *mut u64) = 0;
        let regs = core::slice::from_raw_parts(regs, 5); // r15, r14, r13, r12, rbx
                                                         // The frame `context::switch` pops: r15 r14 r13 r12 rbx rbp, then returns.
        let frame = [
            regs[0],
            regs[1],
            regs[2],
            regs[3],
            regs[4],
            caller_rbp.wrapping_add(delta),
            hrt_fork_child_start as *const () as u64,
        ];
        let rsp = child_base - (frame.len() as u64) * 8;
        core::ptr::copy_nonoverlapping(frame.as_ptr(), rsp as *mut u64, frame.len());
        child.saved_rsp = rsp;
    }
    let raw = Box::into_raw(child);
    // SAFETY: a new, live thread in no queue.
    unsafe { super::make_runnable(raw) };
    Box::into_raw(Box::new(ThreadHandle::from_raw(raw))) as u64
}
