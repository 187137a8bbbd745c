//! The Linux x86-64 rt_sigframe, byte for byte:
//!
//! ```text
//! frame + 0    pretcode (sa_restorer: the handler's return address)
//! frame + 8    struct ucontext (304 bytes)
//!                +0 uc_flags, +8 uc_link, +16 uc_stack (sp, flags, size),
//!                +40 uc_mcontext (struct sigcontext, 256 bytes), +296 uc_sigmask
//! frame + 312  siginfo_t (128 bytes)
//! ...          (alignment)
//! fpstate      FXSAVE/XSAVE area (64-byte aligned) with fpx_sw_bytes at +464 and, with XSAVE,
//!              FP_XSTATE_MAGIC2 right after the area
//! ```

use crate::arch::traps::TrapFrame;

pub const UC_OFFSET: u64 = 8;
pub const UC_SIZE: usize = 304;
pub const INFO_OFFSET: u64 = 8 + UC_SIZE as u64;
pub const FRAME_SIZE: u64 = INFO_OFFSET + 128;

/// The smallest alternate signal stack a handler's frame always fits on (the auxiliary
/// vector's AT_MINSIGSTKSZ, which glibc's `sysconf(_SC_MINSIGSTKSZ)` and `_SC_SIGSTKSZ` answer
/// from): the frame, the vector state as this CPU saves it (`fpstate::frame_size`, 2.7 KiB
/// with AVX-512), and what aligning each can cost (`deliver`), rounded up to 16 bytes. Linux
/// computes it the same way; a fixed 2,048 was too small for the AVX-512 state, and a program
/// sizing its stack by it died of SIGSEGV at its first handler.
pub fn min_alt_stack() -> u64 {
    (super::fpstate::frame_size() + 63 + FRAME_SIZE + 15 + 8 + 1).next_multiple_of(16)
}
/// Offset of uc_mcontext in the ucontext.
const MC: usize = 40;

pub const UC_FP_XSTATE: u64 = 1;
pub const UC_SIGCONTEXT_SS: u64 = 2;
pub const UC_STRICT_RESTORE_SS: u64 = 4;

pub const FP_XSTATE_MAGIC1: u32 = 0x4650_5853;
pub const FP_XSTATE_MAGIC2: u32 = 0x4650_5845;

/// sigcontext's general registers, in its order (r8 first).
const GREGS: usize = 18;

fn gregs(f: &TrapFrame) -> [u64; GREGS] {
    [
        f.r8, f.r9, f.r10, f.r11, f.r12, f.r13, f.r14, f.r15, f.rdi, f.rsi, f.rbp, f.rbx, f.rdx, f.rax, f.rcx, f.rsp,
        f.rip, f.rflags,
    ]
}

/// What a fault adds to the saved context.
#[derive(Clone, Copy, Default)]
pub struct FaultRegs {
    pub err: u64,
    pub trapno: u64,
    pub cr2: u64,
}

fn put(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn get(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The ucontext of a handler's frame.
pub struct UContext<'a> {
    pub flags: u64,
    pub stack: [u64; 3],
    pub regs: &'a TrapFrame,
    pub fault: FaultRegs,
    pub fpstate: u64,
    pub mask: u64,
}

impl UContext<'_> {
    pub fn bytes(&self) -> [u8; UC_SIZE] {
        let mut b = [0u8; UC_SIZE];
        put(&mut b, 0, self.flags);
        // uc_stack: ss_sp, ss_flags (int, padded), ss_size.
        put(&mut b, 16, self.stack[0]);
        put(&mut b, 24, self.stack[1]);
        put(&mut b, 32, self.stack[2]);
        for (i, r) in gregs(self.regs).iter().enumerate() {
            put(&mut b, MC + 8 * i, *r);
        }
        // cs, gs, fs, ss (16 bits each): Linux's 64-bit user selectors, which the program also
        // reads from its live registers. The trap frame's are the entry's own view of ring 3
        // (0x23 and 0x1b), which a handler read as 32-bit code (the Linux kernel's x86 selftest
        // sigreturn); rt_sigreturn takes none of them back.
        const USER_CS: u64 = 0x33;
        const USER_SS: u64 = 0x2b;
        let segs = USER_CS | USER_SS << 48;
        put(&mut b, MC + 144, segs);
        put(&mut b, MC + 152, self.fault.err);
        put(&mut b, MC + 160, self.fault.trapno);
        put(&mut b, MC + 168, self.mask); // oldmask
        put(&mut b, MC + 176, self.fault.cr2);
        put(&mut b, MC + 184, self.fpstate);
        put(&mut b, 296, self.mask);
        b
    }
}

/// What rt_sigreturn takes back from a ucontext.
pub struct Restored {
    pub gregs: [u64; GREGS],
    /// uc_stack: (sp, flags, size).
    pub stack: [u64; 3],
    pub fpstate: u64,
    pub mask: u64,
}

pub fn parse(b: &[u8; UC_SIZE]) -> Restored {
    let mut gregs = [0u64; GREGS];
    for (i, r) in gregs.iter_mut().enumerate() {
        *r = get(b, MC + 8 * i);
    }
    Restored {
        gregs,
        stack: [get(b, 16), get(b, 24) & 0xffff_ffff, get(b, 32)],
        fpstate: get(b, MC + 184),
        mask: get(b, 296),
    }
}

/// The arithmetic flags (and DF, TF, AC, RF) a handler may change in the saved rflags, as
/// Linux's FIX_EFLAGS.
pub const FIX_EFLAGS: u64 = 0x5_0dd5;

/// Writes saved registers back into `f` (rip, rsp and flags included; CS and SS stay).
pub fn restore_regs(f: &mut TrapFrame, g: &[u64; GREGS]) {
    [f.r8, f.r9, f.r10, f.r11, f.r12, f.r13, f.r14, f.r15] = [g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]];
    [f.rdi, f.rsi, f.rbp, f.rbx, f.rdx, f.rax, f.rcx, f.rsp, f.rip] =
        [g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15], g[16]];
    f.rflags = (f.rflags & !FIX_EFLAGS) | (g[17] & FIX_EFLAGS) | 0x200;
}
