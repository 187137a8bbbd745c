//! Variable-number sites: a `syscall` whose number sits in a register nobody proved constant
//! (libgomp's futex calls `mov %r13d, %eax; mov %rbp, %rdi; mov %ebx, %edx; syscall` and
//! `mov %r8d, %eax; mov %rbp, %rdi; mov futex_wake(%rip), %esi; syscall`, a `syscall(nr, ...)`
//! wrapper's `mov %rdi, %rax; syscall`), which neither an immediate site nor a register site
//! (`rewrite`, `regsite`) can take. The window, the instructions right before the `syscall`
//! back to the first that gives it 3 bytes or more (or further, to the instruction that set
//! the flags a branch in it tests), and the `syscall` become padding and a
//! `call rel32` (ending where the `syscall` ended) to a window slot (`arch::slot_table`) that
//! REPLAYS the window's instructions, then enters with whatever number rax holds (the entry
//! takes any number, as after SYSCALL). The window's instructions only set registers and
//! flags, or leave the window by a branch, so the registers at the entry are the ones SYSCALL
//! would have seen.
//!
//! A window qualifies if, beyond the red-zone rule every rewritten site's function meets
//! (`rewrite`: the `call` pushes into the red zone):
//! - each instruction
//!   - sets a 32- or 64-bit register other than rsp from a register (not rsp, which the `call`
//!     moved), an immediate, itself (`xor %eX, %eX`), a memory word named RIP-relative (a
//!     global: the slot names the same address), from rsp with a displacement (the program's
//!     own frame: the slot adds 8 for the word the `call` pushed) or from other registers (the
//!     same address at the slot), or an address (`lea`, RIP-relative or from registers other
//!     than rsp);
//!   - or changes a register other than rsp with an immediate (`xor`, `or`, `and`, `add`,
//!     `sub`; glibc's futex calls make their private flag with `xor $0x80, %sil`), which reads
//!     the register as well as writes it;
//!   - or compares (`cmp`, `test`) such registers, memory and immediates, setting only the
//!     flags;
//!   - or moves such a register into another on a condition (`cmovcc`, register to register:
//!     glibc's sched_getaffinity clamps the mask size so), reading the destination too and
//!     flags set earlier in the window;
//!   - or branches on the flags (`jcc`) to a target outside the window: at the slot the branch
//!     goes to a stub that drops the `call`'s return address and jumps there, so the taken
//!     path continues as in the old code;
//! - no input of the window (a register an instruction reads before the window itself set it)
//!   is a register an instruction of the window but the last writes (musl's `syscall()` ends
//!   with `mov 0x18(%rdx), %rdx`: a thread stopped after the last instruction is at the
//!   `syscall`, which needs no replay), and every branch tests flags that an instruction of the
//!   window set before it (the window reaches back that far: glibc's `read` is `cmpb $0,
//!   __libc_single_threaded(%rip); je 1f; xor %eax, %eax; syscall`, whose last two
//!   instructions leave no room for the `call`; its `__lll_lock_wait` is `mov %r8d, %esi; xor
//!   %r10d, %r10d; mov $2, %edx; mov $0xca, %eax; xor $0x80, %sil; syscall`, whose last `xor`
//!   needs the `mov` that set esi, 22 bytes back). Then the window is idempotent: run again
//!   from its start, at any point of the old one, it leaves the same registers and takes the
//!   same branches, because its inputs are where they were;
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
//!   table; 32 bytes per slot for the replayed code, the jump to the entry and 10 bytes per
//!   branch's stub) and its RIP-relative operands and branch targets are in reach from there;
//!   if not, the site keeps SYSCALL.
//!
//! Soundness at the patch (made with the other CPUs stopped, `regsite::patch_frozen`): a
//! thread whose saved rip is an old instruction start inside the window that is no new one
//! moves back to the window's start (recorded `Interior` points), where the slot replays the
//! whole window, which by idempotence gives what the old code had given or would have; one
//! at the old `syscall` makes the call with its registers as they are (`fix_resume_point`:
//! it may be a restart, whose handler may have changed what the window loads). A load replayed later than
//! the old code made it reads memory as the thread would have if it had been stopped before
//! it: only register moves lie between such a load and the `syscall`. A restart does not run
//! the slot again: it re-enters with the number and every register as they were
//! (`regsite::restart`), as Linux makes the `syscall` again.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

use iced_x86::{Decoder, DecoderOptions, Instruction, Mnemonic, OpKind, Register};

use super::regsite::{self, MAX_WINDOW};
use super::uaccess;
use crate::arch::slot_table::{self, Fixup, Replayed, Then};

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
/// (the module comment's rules; the red-zone rule is the caller's). It reaches back far enough
/// for the `call` and, when it holds a conditional branch, to the instruction that set the
/// flags the branch tests.
pub(super) fn qualifies(instrs: &[Instruction], at: usize) -> Option<Window> {
    let site = instrs[at].ip();
    let mut first = at;
    let mut len = 0;
    while len < MIN_REPLAY || !flags_set_within(&instrs[first..at]) || !anchored(&instrs[first..at]) {
        first = first.checked_sub(1)?;
        len += instrs[first].len();
        if len + 2 > MAX_WINDOW {
            return None;
        }
    }
    let start = instrs[first].ip();
    if !replayable(&instrs[first..at], start, site + 2)
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

/// What a window instruction does.
enum Step {
    /// Sets register `dst` (full) from the registers `srcs` (and perhaps memory).
    Load { dst: Register, srcs: [Option<Register>; 3] },
    /// Sets only the flags, from `srcs` (and perhaps memory).
    Compare { srcs: [Option<Register>; 3] },
    /// Branches on the flags to `target`.
    Branch { target: u64 },
}

/// Whether every conditional branch or move of `window` tests flags that an instruction of the
/// window before it set (so that replaying the window from its start sets them again); true without
/// branches.
fn flags_set_within(window: &[Instruction]) -> bool {
    let mut set = false;
    for i in window {
        if i.is_jcc_short_or_near() || is_cmov(i) {
            if !set {
                return false;
            }
        } else if sets_flags(i.mnemonic()) {
            set = true;
        }
    }
    true
}

/// Whether `i` is a conditional move (it reads the flags).
fn is_cmov(i: &Instruction) -> bool {
    use Mnemonic::*;
    matches!(
        i.mnemonic(),
        Cmova
            | Cmovae
            | Cmovb
            | Cmovbe
            | Cmove
            | Cmovg
            | Cmovge
            | Cmovl
            | Cmovle
            | Cmovne
            | Cmovno
            | Cmovnp
            | Cmovns
            | Cmovo
            | Cmovp
            | Cmovs
    )
}

fn sets_flags(m: Mnemonic) -> bool {
    use Mnemonic::*;
    matches!(m, Cmp | Test | Xor | Sub | Add | And | Or | Shl | Shr | Sar)
}

/// The registers `window` reads before writing them itself (its inputs) and those its
/// instructions but the last write; None if an instruction is none of the steps, or a branch
/// lands inside `[start, end)`.
fn dataflow(window: &[Instruction], start: u64, end: u64) -> Option<(Vec<Register>, Vec<Register>)> {
    let (mut inputs, mut written) = (Vec::new(), Vec::new());
    let mut written_before_last = Vec::new();
    for (n, i) in window.iter().enumerate() {
        if n + 1 == window.len() {
            written_before_last = written.clone();
        }
        let mut reads = |srcs: [Option<Register>; 3], written: &Vec<Register>| {
            inputs.extend(srcs.into_iter().flatten().filter(|r| !written.contains(r)));
        };
        match step(i)? {
            Step::Load { dst, srcs } => {
                reads(srcs, &written);
                written.push(dst);
            }
            Step::Compare { srcs } => reads(srcs, &written),
            Step::Branch { target } if !(start..end).contains(&target) => {}
            Step::Branch { .. } => return None,
        }
    }
    Some((inputs, written_before_last))
}

/// Whether no input of `window` is a register an instruction of it but the last writes, so
/// that a replay from its start, from any point inside it, reads what the first run read (a
/// register the window sets before it reads it, as glibc's `mov %r8d, %esi; ...; xor $0x80,
/// %sil` before its futex calls, is no input). The last instruction may write an input (musl's
/// `syscall()` ends its window with `mov 0x18(%rdx), %rdx`): a thread stopped after it is at
/// the `syscall` itself, which makes the call without a replay (`regsite::fix_resume_point`).
/// True also when the window cannot be replayed at all: reaching further back does not help
/// then.
fn anchored(window: &[Instruction]) -> bool {
    let (lo, hi) = window.first().zip(window.last()).map_or((0, 0), |(f, l)| (f.ip(), l.next_ip()));
    dataflow(window, lo, hi).is_none_or(|(inputs, written)| !inputs.iter().any(|r| written.contains(r)))
}

/// Whether the window `[start, end)` may be replayed (the module comment's first rule): each
/// instruction a step, no input written by an instruction of the window but the last, every
/// branch's flags set in the window and its target outside it.
fn replayable(window: &[Instruction], start: u64, end: u64) -> bool {
    let Some((inputs, written)) = dataflow(window, start, end) else { return false };
    flags_set_within(window) && !inputs.iter().any(|r| written.contains(r))
}

/// A memory operand the window may read: RIP-relative (not EIP-relative, whose sum wraps at
/// 4 GiB), rsp plus a displacement of 1 or 4 bytes (the slot adds 8: the `call` moved rsp)
/// without index, or an address from other 64-bit registers (the same at the slot; glibc's
/// barrier reads the futex's flags as `mov 0xc(%r8), %esi`); without segment.
fn replayable_memory(i: &Instruction) -> bool {
    let (base, index) = (i.memory_base(), i.memory_index());
    let other = |r: Register| r.is_gpr64() && r != Register::RSP;
    !i.has_segment_prefix()
        && (base == Register::RIP
            || base == Register::RSP && index == Register::None && matches!(i.memory_displ_size(), 1 | 4)
            || other(base) && (index == Register::None || other(index)))
}

/// The registers a replayable memory operand's address is made of.
fn address_registers(i: &Instruction) -> [Option<Register>; 2] {
    let gpr = |r: Register| (r.is_gpr64() && r != Register::RSP).then_some(r);
    [gpr(i.memory_base()), gpr(i.memory_index())]
}

/// What `i` does, if the window may replay it.
fn step(i: &Instruction) -> Option<Step> {
    if i.is_jcc_short_or_near() {
        return Some(Step::Branch { target: i.near_branch_target() });
    }
    if i.op_count() != 2 || i.has_segment_prefix() {
        return None;
    }
    let full = |r: Register| (r != Register::None).then(|| r.full_register());
    let gpr = |r: Register| (r.is_gpr32() || r.is_gpr64()) && r.full_register() != Register::RSP;
    let any_gpr = |r: Register| (r.is_gpr8() || r.is_gpr16() || gpr(r)) && r.full_register() != Register::RSP;
    let immediate = |k: OpKind| {
        matches!(
            k,
            OpKind::Immediate8
                | OpKind::Immediate16
                | OpKind::Immediate32
                | OpKind::Immediate8to16
                | OpKind::Immediate8to32
                | OpKind::Immediate8to64
                | OpKind::Immediate32to64
        )
    };
    if matches!(i.mnemonic(), Mnemonic::Cmp | Mnemonic::Test) {
        let [first, extra] = match i.op0_kind() {
            OpKind::Register if any_gpr(i.op0_register()) => [full(i.op0_register()), None],
            OpKind::Memory if replayable_memory(i) => address_registers(i),
            _ => return None,
        };
        let second = match i.op1_kind() {
            OpKind::Register if any_gpr(i.op1_register()) => full(i.op1_register()),
            k if immediate(k) => None,
            _ => return None,
        };
        return Some(Step::Compare { srcs: [first, extra, second] });
    }
    // A register changed with an immediate (`xor $0x80, %sil`, glibc's private-futex flag):
    // read and written whole (a byte or word keeps the rest), so the window must also hold the
    // instruction that set it before (`anchored`).
    if matches!(i.mnemonic(), Mnemonic::Xor | Mnemonic::Or | Mnemonic::And | Mnemonic::Add | Mnemonic::Sub)
        && i.op0_kind() == OpKind::Register
        && any_gpr(i.op0_register())
        && immediate(i.op1_kind())
    {
        let r = full(i.op0_register());
        return Some(Step::Load { dst: r?, srcs: [r, None, None] });
    }
    if i.op0_kind() != OpKind::Register || !gpr(i.op0_register()) {
        return None;
    }
    let dst = i.op0_register();
    // A conditional move (glibc's sched_getaffinity and pthread_getaffinity_np clamp the mask
    // size with `cmp %rsi, %r8; cmovbe %r8, %rsi`): reads its destination too (kept when the
    // condition fails; a 32-bit one clears the upper half either way) and flags the window
    // must have set before it (`flags_set_within`), as a branch does.
    if is_cmov(i) {
        let src = match i.op1_kind() {
            OpKind::Register if gpr(i.op1_register()) => full(i.op1_register()),
            _ => return None,
        };
        return Some(Step::Load { dst: dst.full_register(), srcs: [full(dst), src, None] });
    }
    let srcs = match (i.mnemonic(), i.op1_kind()) {
        (Mnemonic::Mov, OpKind::Register) if gpr(i.op1_register()) => [full(i.op1_register()), None, None],
        (Mnemonic::Mov, OpKind::Immediate32 | OpKind::Immediate32to64 | OpKind::Immediate64) => [None, None, None],
        (Mnemonic::Mov, OpKind::Memory) if replayable_memory(i) => {
            let [base, index] = address_registers(i);
            [base, index, None]
        }
        (Mnemonic::Lea, OpKind::Memory) if i.memory_base() == Register::RIP => [None, None, None],
        // An address computed, nothing read from memory.
        (Mnemonic::Lea, OpKind::Memory) if !i.is_ip_rel_memory_operand() => {
            let srcs = [full(i.memory_base()), full(i.memory_index()), None];
            if srcs.contains(&Some(Register::RSP)) {
                return None;
            }
            srcs
        }
        (Mnemonic::Xor | Mnemonic::Sub, OpKind::Register) if i.op1_register() == dst => [None, None, None],
        _ => return None,
    };
    Some(Step::Load { dst: dst.full_register(), srcs })
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
        let offsets = decoder.get_constant_offsets(&i);
        let fixup = if i.is_jcc_short_or_near() {
            Fixup::Branch(i.condition_code() as u8 - 1, i.near_branch_target())
        } else if i.is_ip_rel_memory_operand() {
            Fixup::RipRelative(offsets.displacement_offset(), i.ip_rel_memory_address())
        } else if i.memory_base() == Register::RSP && (0..i.op_count()).any(|k| i.op_kind(k) == OpKind::Memory) {
            Fixup::StackRelative(offsets.displacement_offset(), offsets.displacement_size())
        } else {
            Fixup::None
        };
        replay.push(Replayed { bytes, len: i.len(), fixup });
        at += i.len();
        instrs.push(i);
    }
    if instrs.iter().any(Instruction::is_invalid) || !replayable(&instrs, window.start, window.site + 2) {
        return None;
    }
    let rel = slot_table::window_call(&replay, window.site + 2, mapped, Then::Enter)?;
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
