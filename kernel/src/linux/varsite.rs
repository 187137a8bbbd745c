//! Variable-number sites: a `syscall` whose number sits in a register nobody proved constant
//! (libgomp's futex calls `mov %r13d, %eax; mov %rbp, %rdi; mov %ebx, %edx; syscall` and
//! `mov %r8d, %eax; mov %rbp, %rdi; mov futex_wake(%rip), %esi; syscall`, a `syscall(nr, ...)`
//! wrapper's `mov %rdi, %rax; syscall`), which neither an immediate site nor a register site
//! (`rewrite`, `regsite`) can take. The window, the instructions right before the `syscall`
//! back to the first that gives it 3 bytes or more, and the `syscall` become padding and a
//! `call rel32` (ending where the `syscall` ended) to a window slot (`arch::slot_table`) that
//! REPLAYS the window's instructions, then enters with whatever number rax holds (the entry
//! takes any number, as after SYSCALL). The window's instructions only set registers, so the
//! registers at the entry are the ones SYSCALL would have seen.
//!
//! A window qualifies if, beyond the red-zone rule every rewritten site's function meets
//! (`rewrite`: the `call` pushes into the red zone):
//! - each instruction sets a 32- or 64-bit register other than rsp from a register (not rsp,
//!   which the `call` moved), an immediate, itself (`xor %eX, %eX`), a RIP-relative memory
//!   word (a global: the slot names the same address) or an address (`lea`, RIP-relative or
//!   from registers other than rsp), and no register it reads is one the window writes. Then the window is idempotent: run again from its start, at any point of
//!   the old one, it leaves the same registers, because its inputs are where they were;
//! - nothing lands inside it: no direct branch of the function targets any of its instructions
//!   but the first (a branch to the first lands on the padding or the `call`, the same point
//!   of the new code) nor the `syscall`, and the function has no indirect jump. This is the
//!   rule regsite and sysfunc use, and the same trust: code outside the function's extent
//!   (a `.cold` part, another function) jumping into the middle of a function body is
//!   not something compilers emit into a straight run of register moves that ends in a
//!   `syscall` (a `.cold` part rejoins at a block's start, and the window holds no block start
//!   the function's own branches show), and tail calls reach function starts only. (Checked
//!   on static glibc 2.36 / gcc 12 libgomp builds of the OpenMP test program, EPCC and micro:
//!   no direct branch from outside a function lands among the instructions before any of
//!   their `syscall`s but at a function's start.);
//! - a window slot is to be had within ±2 GiB of the site (the gate's table, else the near
//!   table; each slot at most 27 bytes of replayed code) and its RIP-relative operands are in
//!   reach from there; if not, the site keeps SYSCALL.
//!
//! Soundness at the patch (made with the other CPUs stopped, `regsite::patch_frozen`): a
//! thread whose saved rip is an old instruction start inside the window that is no new one
//! moves back to the window's start (recorded `Interior` points) or, from the `syscall`, to
//! the `call` (`fix_resume_point`); either way the slot replays the whole window, which by
//! idempotence gives what the old code had given or would have. A load replayed later than
//! the old code made it reads memory as the thread would have if it had been stopped before
//! it: only register moves lie between such a load and the `syscall`. A restart does not run
//! the slot again: it re-enters with the number and every register as they were
//! (`regsite::restart`), as Linux makes the `syscall` again.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

use iced_x86::{Decoder, DecoderOptions, Instruction, Mnemonic, OpKind, Register};

use super::regsite::{self, MAX_WINDOW};
use super::uaccess;
use crate::arch::slot_table::{self, Replayed};

const SYSCALL: [u8; 2] = [0x0f, 0x05];
const CALL_REL32: u8 = 0xe8;
const CALL_LEN: usize = 5;
/// The fewest bytes of instructions a window holds before its `syscall`: with the `syscall`'s
/// two, room for the `call`.
const MIN_REPLAY: usize = CALL_LEN - 2;

/// How many such sites were rewritten.
static COUNT: AtomicUsize = AtomicUsize::new(0);

pub fn count() -> usize {
    COUNT.load(Ordering::Relaxed)
}

/// A window that qualified: from `start` to the end of the `syscall` at `site`, and its old
/// instruction starts that are no new ones, with how far back their saved rips move.
pub struct Window {
    start: u64,
    site: u64,
    interiors: Vec<(u64, u64)>,
}

/// The window of the site that is instruction `at` of its function `instrs`, if it qualifies
/// (the module comment's rules; the red-zone rule is the caller's).
pub(super) fn qualifies(instrs: &[Instruction], at: usize) -> Option<Window> {
    let site = instrs[at].ip();
    let mut first = at;
    let mut len = 0;
    while len < MIN_REPLAY {
        first = first.checked_sub(1)?;
        len += instrs[first].len();
    }
    let start = instrs[first].ip();
    if len + 2 > MAX_WINDOW
        || !replayable(&instrs[first..at])
        || !instrs[first + 1..=at].iter().all(|i| regsite::nothing_lands_on(instrs, i.ip()))
    {
        return None;
    }
    let call_at = site + 2 - CALL_LEN as u64;
    let interiors = instrs[first + 1..at]
        .iter()
        .map(Instruction::ip)
        .filter(|&ip| ip != call_at)
        .map(|ip| (ip, ip - start))
        .collect();
    Some(Window { start, site, interiors })
}

/// Whether the window's instructions may be replayed (the module comment's first rule).
fn replayable(window: &[Instruction]) -> bool {
    let (mut written, mut read) = (Vec::new(), Vec::new());
    for i in window {
        let Some((dst, srcs)) = register_load(i) else { return false };
        written.push(dst);
        read.extend(srcs.into_iter().flatten());
    }
    !read.iter().any(|r| written.contains(r))
}

/// The full register `i` sets and the ones it reads, if it is a load the window may replay.
fn register_load(i: &Instruction) -> Option<(Register, [Option<Register>; 2])> {
    if i.op_count() != 2 || i.op0_kind() != OpKind::Register || i.has_segment_prefix() {
        return None;
    }
    let dst = i.op0_register();
    if !(dst.is_gpr32() || dst.is_gpr64()) || dst.full_register() == Register::RSP {
        return None;
    }
    let full = |r: Register| (r != Register::None).then(|| r.full_register());
    let gpr = |r: Register| r.is_gpr32() || r.is_gpr64();
    let srcs = match (i.mnemonic(), i.op1_kind()) {
        (Mnemonic::Mov, OpKind::Register) if gpr(i.op1_register()) => [full(i.op1_register()), None],
        (Mnemonic::Mov, OpKind::Immediate32 | OpKind::Immediate32to64 | OpKind::Immediate64) => [None, None],
        // RIP-relative (not EIP-relative, whose sum wraps at 4 GiB).
        (Mnemonic::Mov | Mnemonic::Lea, OpKind::Memory) if i.memory_base() == Register::RIP => [None, None],
        // An address computed, nothing read from memory.
        (Mnemonic::Lea, OpKind::Memory) if !i.is_ip_rel_memory_operand() => {
            [full(i.memory_base()), full(i.memory_index())]
        }
        (Mnemonic::Xor | Mnemonic::Sub, OpKind::Register) if i.op1_register() == dst => [None, None],
        _ => return None,
    };
    (!srcs.contains(&Some(Register::RSP))).then_some((dst.full_register(), srcs))
}

/// Records and patches a qualifying window with the other CPUs stopped; true if it was
/// rewritten now. Without a slot in reach, or the others not stopped in time, it keeps SYSCALL.
pub(super) fn rewrite(window: &Window) -> bool {
    let done = regsite::patch_frozen(window.start, window.site, &window.interiors, |mapped| new_code(window, mapped));
    if done {
        COUNT.fetch_add(1, Ordering::Relaxed);
    }
    done
}

/// The window's new bytes, padding and `call slot`, if its old bytes still decode to a window
/// that qualifies and a slot is to be had (written now if new; `mapped` tells whether the near
/// table is still there).
fn new_code(window: &Window, mapped: &dyn Fn(u64, u64) -> bool) -> Option<[u8; MAX_WINDOW]> {
    let len = (window.site + 2 - window.start) as usize;
    let old = uaccess::slice(window.start, len as u64).ok()?;
    if old[len - 2..] != SYSCALL {
        return None;
    }
    let mut decoder = Decoder::with_ip(64, &old[..len - 2], window.start, DecoderOptions::NONE);
    let mut instrs = Vec::new();
    let mut replay = Vec::new();
    let mut at = 0;
    while decoder.can_decode() {
        let i = decoder.decode();
        let mut bytes = [0u8; 15];
        bytes[..i.len()].copy_from_slice(&old[at..at + i.len()]);
        let rip_relative = i
            .is_ip_rel_memory_operand()
            .then(|| (decoder.get_constant_offsets(&i).displacement_offset(), i.ip_rel_memory_address()));
        replay.push(Replayed { bytes, len: i.len(), rip_relative });
        at += i.len();
        instrs.push(i);
    }
    if instrs.iter().any(Instruction::is_invalid) || !replayable(&instrs) {
        return None;
    }
    let rel = slot_table::window_call(&replay, window.site + 2, mapped)?;
    let mut new = [0xccu8; MAX_WINDOW];
    let pad = len - CALL_LEN;
    match pad {
        0 => {}
        1 => new[0] = 0x90,
        _ => new[..2].copy_from_slice(&[0xeb, (pad - 2) as u8]), // jmp to the `call`
    }
    new[pad] = CALL_REL32;
    new[pad + 1..len].copy_from_slice(&rel.to_le_bytes());
    Some(new)
}
