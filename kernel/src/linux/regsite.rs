//! Register sites: `mov %rX, %eax; syscall` (3 + 2 bytes; libgomp's futex calls, with the
//! number hoisted into r8 or r9 at the function's start) rewritten into `call slot(N)`
//! (5 bytes), the gate's slot `mov $N, %eax; jmp entry` (`arch::call_gate::slot_address`).
//! The `mov`'s only effect, eax = N, is the slot's, so the program sees the same registers.
//!
//! Conditions, beyond the red-zone rule every rewritten site's function meets (`rewrite`):
//! - the `mov` is 3 bytes (a REX form; the 2-byte `mov %esi, %eax` cannot hold a rel32 call and
//!   keeps SYSCALL) right before the `syscall`, and copies a full register of at least 32 bits;
//! - X holds N at the site on every path: either the last write of X before the `mov` is
//!   `mov $N, %rX` (or `xor %rX, %rX` for 0) in the same basic block (no branch of the function
//!   lands after it, no jump or call in between), or X is written exactly once in the whole
//!   function, that way, in its straight-line start (no branch lands after the function's
//!   first instruction and up to that write), and no call clobbers X (calls clobber the
//!   caller-saved registers; the hoisted-constant case, libgomp's). N is below the sled's
//!   length and is the number of the call being made. Code outside the function's symbol (a
//!   `.cold` part) jumping back in is trusted to keep X, as the compiler's allocation does;
//! - nothing can land on the `syscall` itself (no direct branch to it, no indirect jump in the
//!   function), since after the patch it is the middle of the `call`;
//! - the slot is within ±2 GiB of the site (a program placed high keeps SYSCALL);
//! - the five bytes lie in an 8-byte run inside one cache line, patched by one locked store.
//!
//! The patch itself is made with every other CPU stopped at a safe point (`sched::freeze`), so
//! that none is half-way between the `mov` and the `syscall` while the bytes change. A thread
//! may still be there in its saved registers (interrupted between the two, then switched out
//! or parked): such a frame's rip, the `syscall`'s address, is moved back to the `mov`'s
//! (`fix_resume_point`) before the thread runs program code again. Rerunning the `mov` is
//! harmless (eax = X = N again, the slot does the same). Every resumption passes one of two
//! points after the patch: the return path to the program (`signal::on_return`, right after
//! its safe point, the one where frozen CPUs wait) for the thread a CPU runs, and the switch to
//! a thread (`sched`'s switch-in hook) for the others. A restart of a call made at such a site
//! goes back to the `call` (return address - 5).

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use iced_x86::{FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpAccess, OpKind, Register};

use super::rewrite::{self, Decision};
use super::uaccess;
use crate::arch::call_gate::{self, SLED_LEN};
use crate::arch::traps::TrapFrame;

const SYSCALL: [u8; 2] = [0x0f, 0x05];
const CALL_REL32: u8 = 0xe8;
/// The `mov`'s length, and the patched window's (`call rel32`).
const MOV_LEN: u64 = 3;
const WINDOW: u64 = MOV_LEN + 2;

/// How long the patching CPU waits for the others to reach a safe point; if they do not,
/// the site keeps SYSCALL.
const FREEZE_TIMEOUT_NS: u64 = 100_000_000;

/// How many register sites were rewritten, and the lowest and highest `syscall` address among
/// them: most resumptions are decided by these without a look-up.
static COUNT: AtomicUsize = AtomicUsize::new(0);
static LOWEST: AtomicU64 = AtomicU64::new(u64::MAX);
static HIGHEST: AtomicU64 = AtomicU64::new(0);

/// Whether the site at `site` (the `syscall`, instruction `at` of its function `instrs`) is
/// a register site that qualifies for call number `nr` (the module comment's rules).
pub(super) fn qualifies(instrs: &[Instruction], at: usize, site: u64, nr: u64) -> bool {
    if nr >= SLED_LEN || at == 0 || patch_window(site).is_none() || rel32(site, nr).is_none() {
        return false;
    }
    let mov = &instrs[at - 1];
    let copies_register = mov.mnemonic() == Mnemonic::Mov
        && mov.len() as u64 == MOV_LEN
        && mov.ip() == site - MOV_LEN
        && mov.op0_kind() == OpKind::Register
        && matches!(mov.op0_register(), Register::EAX | Register::RAX)
        && mov.op1_kind() == OpKind::Register
        && mov.op1_register().size() >= 4;
    if !copies_register {
        return false;
    }
    let held = mov.op1_register().full_register();
    nothing_lands_on(instrs, site)
        && block_constant(instrs, at - 1, held).or_else(|| holds_constant(instrs, held)) == Some(nr)
}

/// No direct branch of the function targets `site`, and the function has no indirect jump.
fn nothing_lands_on(instrs: &[Instruction], site: u64) -> bool {
    instrs.iter().all(|i| {
        !matches!(i.flow_control(), FlowControl::IndirectBranch)
            && !(i.op0_kind() == OpKind::NearBranch64 && i.near_branch_target() == site)
    })
}

/// The constant `reg` holds at instruction `at` if the last write before it, in the same
/// basic block (no branch lands after the write, up to `at`; no jump or call in between), is a
/// constant's.
fn block_constant(instrs: &[Instruction], at: usize, reg: Register) -> Option<u64> {
    let mut factory = InstructionInfoFactory::new();
    for w in (0..at).rev() {
        let next = instrs[w + 1].ip();
        if instrs.iter().any(|i| i.op0_kind() == OpKind::NearBranch64 && i.near_branch_target() == next) {
            return None;
        }
        let i = &instrs[w];
        if writes(&mut factory, i, reg) {
            return constant_of(i);
        }
        if i.flow_control() != FlowControl::Next {
            return None;
        }
    }
    None
}

/// Whether `instr` writes any part of the full register `reg`.
fn writes(factory: &mut InstructionInfoFactory, instr: &Instruction, reg: Register) -> bool {
    factory.info(instr).used_registers().iter().any(|u| {
        u.register().full_register() == reg
            && matches!(u.access(), OpAccess::Write | OpAccess::ReadWrite | OpAccess::CondWrite | OpAccess::ReadCondWrite)
    })
}

/// The constant `reg` holds wherever it is read in the function, if the function writes it
/// once, with a constant, in its straight-line start, and no call clobbers it.
fn holds_constant(instrs: &[Instruction], reg: Register) -> Option<u64> {
    let caller_saved = matches!(
        reg,
        Register::RAX
            | Register::RCX
            | Register::RDX
            | Register::RSI
            | Register::RDI
            | Register::R8
            | Register::R9
            | Register::R10
            | Register::R11
    );
    let is_call = |i: &Instruction| i.is_call_near() || i.is_call_far() || i.is_call_near_indirect() || i.is_call_far_indirect();
    if caller_saved && instrs.iter().any(is_call) {
        return None;
    }
    let mut factory = InstructionInfoFactory::new();
    let mut all = instrs.iter().enumerate().filter(|(_, i)| writes(&mut factory, i, reg));
    let (at, write) = all.next()?;
    if all.next().is_some() {
        return None;
    }
    // Straight-line start: nothing before the write changes the flow, and no branch of the
    // function lands after the first instruction and up to the write.
    let start = &instrs[..at];
    if start.iter().any(|i| i.flow_control() != FlowControl::Next) {
        return None;
    }
    let (lo, hi) = (instrs[0].ip(), write.ip());
    if instrs.iter().any(|i| i.op0_kind() == OpKind::NearBranch64 && (lo + 1..=hi).contains(&i.near_branch_target()))
    {
        return None;
    }
    constant_of(write)
}

/// The constant a write leaves in its (at least 32-bit) destination register, if it is a move
/// of an immediate or a register xored or subtracted from itself.
fn constant_of(write: &Instruction) -> Option<u64> {
    if write.op_count() != 2 || write.op0_kind() != OpKind::Register || write.op0_register().size() < 4 {
        return None;
    }
    match (write.mnemonic(), write.op1_kind()) {
        (Mnemonic::Mov, OpKind::Immediate32 | OpKind::Immediate32to64 | OpKind::Immediate64) => {
            Some(write.immediate(1))
        }
        (Mnemonic::Xor | Mnemonic::Sub, OpKind::Register) if write.op1_register() == write.op0_register() => Some(0),
        _ => None,
    }
}

/// The `call`'s displacement from the `mov` (at `site - 3`) to the slot of `nr`, if it fits.
fn rel32(site: u64, nr: u64) -> Option<i32> {
    let after_call = site - MOV_LEN + WINDOW;
    i32::try_from(call_gate::slot_address(nr) as i64 - after_call as i64).ok()
}

/// The start of an 8-byte run holding the five bytes from the `mov`, inside one cache line.
fn patch_window(site: u64) -> Option<u64> {
    let mov = site - MOV_LEN;
    (mov.saturating_sub(8 - WINDOW)..=mov).rev().find(|at| at % 64 <= 56)
}

/// Records and patches a qualifying register site with the other CPUs stopped; true if it
/// was rewritten now. If they cannot be stopped in time the site keeps SYSCALL.
pub(super) fn rewrite(site: u64, nr: u64) -> bool {
    if !crate::sched::freeze::freeze_others(FREEZE_TIMEOUT_NS) {
        rewrite::record(site, Decision::Kept);
        return false;
    }
    // Recorded before the patch: from here a saved rip on the `syscall` goes back to the `mov`,
    // right before and after the patch alike.
    let decide = || {
        if rewrite::record(site, Decision::Register) != Some(Decision::Register) {
            return false;
        }
        LOWEST.fetch_min(site, Ordering::SeqCst);
        HIGHEST.fetch_max(site, Ordering::SeqCst);
        COUNT.fetch_add(1, Ordering::SeqCst);
        patch(site, nr)
    };
    let done = super::usermem::while_mapped(site - MOV_LEN, site + 2, decide) == Some(true);
    crate::sched::freeze::thaw();
    done
}

/// Replaces `mov %rX, %eax; syscall` before `site` by `call slot(nr)` (one locked store of
/// the 8-byte run around it, if the bytes are still the ones decoded).
fn patch(site: u64, nr: u64) -> bool {
    let (Some(at), Some(rel)) = (patch_window(site), rel32(site, nr)) else { return false };
    let Ok(old) = uaccess::read::<[u8; 8]>(at) else { return false };
    let from = (site - MOV_LEN - at) as usize;
    let Ok(mov) = uaccess::read::<[u8; 3]>(site - MOV_LEN) else { return false };
    if old[from..from + 3] != mov || old[from + 3..from + 5] != SYSCALL {
        return false;
    }
    let mut new = old;
    new[from] = CALL_REL32;
    new[from + 1..from + 5].copy_from_slice(&rel.to_le_bytes());
    call_gate::patch_u64(at, u64::from_le_bytes(old), u64::from_le_bytes(new))
}

/// A saved program frame about to resume: if its rip is the `syscall` of a rewritten register
/// site (the middle of the `call` now), moves it back to the `mov`'s address, the `call`.
pub fn fix_resume_point(frame: &mut TrapFrame) {
    if COUNT.load(Ordering::SeqCst) == 0 {
        return;
    }
    let rip = frame.rip;
    if (LOWEST.load(Ordering::SeqCst)..=HIGHEST.load(Ordering::SeqCst)).contains(&rip)
        && rewrite::decision(rip) == Some(Decision::Register)
    {
        frame.rip = rip - MOV_LEN;
    }
}

/// The switch-in hook (`sched::set_switch_in_hook`): the program frame a user thread left at
/// the top of its kernel stack (stale if it last entered by the fast path, and then unused).
pub fn fix_switched_in(kernel_stack_top: u64) {
    if COUNT.load(Ordering::SeqCst) == 0 {
        return;
    }
    // SAFETY: the top of a live user thread's kernel stack, reserved for its program frame
    // (`thread::USER_FRAME_RESERVE`); the thread is not running, and this CPU switches to it.
    fix_resume_point(unsafe { &mut *crate::arch::syscall::user_frame(kernel_stack_top) });
}

/// A restart of call `nr` made from a register site (rip after it): back to the `call`.
pub(super) fn restart(frame: &mut TrapFrame, nr: u64) {
    frame.rip -= WINDOW;
    frame.rax = nr;
}
