//! Register sites: `mov %rX, %eax; syscall` (3 + 2 bytes; libgomp's futex calls, with the
//! number hoisted into r8 or r9 at the function's start) rewritten into `call slot(N)`
//! (5 bytes), a slot `mov $N, %eax; jmp entry` (`arch::slot_table`).
//! The `mov`'s only effect, eax = N, is the slot's, so the program sees the same registers.
//! One instruction G between the two (`mov %r8d, %eax; mov futex_wake(%rip), %esi; syscall`,
//! libgomp's barrier wake-up) moves up by the `mov`'s 3 bytes: `G; call slot(N)` (G's
//! RIP-relative displacement grows by 3), if G neither reads nor writes rax, touches memory
//! only RIP-relative (a global: no fault to report at a moved address), is no branch target,
//! and is not 3 bytes long (then no old instruction start would be a new one: see below).
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
//! - a slot table is within ±2 GiB of the site: the gate's, or the program's near table
//!   (`near_table`) for programs placed high (if neither, the site keeps SYSCALL);
//!
//! The patch itself is made with every other CPU stopped at a safe point (`sched::freeze`), so
//! that none is half-way through the window while the bytes change. A thread may still be
//! there in its saved registers (interrupted inside the window, then switched out or
//! parked): its rip is an old instruction start that is not a new one (after the `mov`, or
//! the `syscall`), recorded as such (`Decision::Interior` and the site's `Register`). After
//! the `mov` it moves back by 3 bytes (`fix_resume_point`), to the same point of the new
//! code, G's start: the `mov` does not run again, but its effect is the slot's (eax = X = N).
//! At the `syscall` the call is made with the registers as they are, through the gate's
//! `Enter` slot (the same registers the `call`'s slot would give, unless a signal handler
//! changed them while a restart waited there). Every resumption passes one of two
//! points after the patch: the return path to the program (`signal::on_return`, right after
//! its safe point, the one where frozen CPUs wait) for the thread a CPU runs, and the switch to
//! a thread (`sched`'s switch-in hook) for the others. A restart of a call made at such a site
//! re-enters without the slot (`restart`).

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpAccess, OpKind, Register,
};

use super::rewrite::{self, Decision};
use super::uaccess;
use crate::arch::call_gate::{self, SLED_LEN};
use crate::arch::irq;
use crate::arch::slot_table::{self, Slot};
use crate::arch::traps::TrapFrame;

const SYSCALL: [u8; 2] = [0x0f, 0x05];
const CALL_REL32: u8 = 0xe8;
/// The `mov`'s length: how far the window's old instruction starts move back.
const MOV_LEN: u64 = 3;
/// The `call rel32`'s length.
const CALL_LEN: u64 = 5;
/// The longest window patched: here the `mov`, G (at most 15 bytes) and the `syscall` (20);
/// a variable-number window (`varsite`) up to 24 (glibc's `__lll_lock_wait` needs 22: its
/// futex flag is a `xor` on a register set four instructions before).
pub(super) const MAX_WINDOW: usize = 24;

/// How long the patching CPU waits for the others to reach a safe point; if they do not,
/// the site keeps SYSCALL.
const FREEZE_TIMEOUT_NS: u64 = 100_000_000;

/// How many windows were patched (`patch_frozen`: register sites and the generic `syscall()`
/// function's), and the lowest and highest address recorded for one: most resumptions are
/// decided by these without a look-up.
static PATCHED: AtomicUsize = AtomicUsize::new(0);
/// How many register sites were rewritten.
static REGISTERS: AtomicUsize = AtomicUsize::new(0);
static LOWEST: AtomicU64 = AtomicU64::new(u64::MAX);
static HIGHEST: AtomicU64 = AtomicU64::new(0);

/// A window patched elsewhere (`spin_sites`) whose interior points (`rewrite::record_interior`)
/// `fix_resume_point` must look up.
pub(super) fn note_window(start: u64, end: u64) {
    LOWEST.fetch_min(start, Ordering::SeqCst);
    HIGHEST.fetch_max(end, Ordering::SeqCst);
    PATCHED.fetch_add(1, Ordering::SeqCst);
}

/// How many register sites were rewritten.
pub fn count() -> usize {
    REGISTERS.load(Ordering::Relaxed)
}

/// A register site that qualified: the `mov` at `mov`, G (if any) of `gap` bytes right after
/// it, the `syscall` after that.
pub struct Window {
    mov: u64,
    gap: u64,
}

impl Window {
    fn site(&self) -> u64 {
        self.mov + MOV_LEN + self.gap
    }
    fn end(&self) -> u64 {
        self.site() + 2
    }
}

/// The window of the site that is instruction `at` of its function `instrs`, if it is a
/// register site that qualifies for call number `nr` (the module comment's rules).
pub(super) fn qualifies(instrs: &[Instruction], at: usize, nr: u64) -> Option<Window> {
    let site = instrs[at].ip();
    let mut factory = InstructionInfoFactory::new();
    let (mov_at, gap) = match at.checked_sub(1).map(|i| &instrs[i]) {
        Some(g) if at >= 2 && !copies_register(g) && movable(&mut factory, instrs, g) => (at - 2, g.len() as u64),
        _ => (at.checked_sub(1)?, 0),
    };
    let mov = &instrs[mov_at];
    if nr >= SLED_LEN || !copies_register(mov) || mov.len() as u64 != MOV_LEN || !nothing_lands_on(instrs, site) {
        return None;
    }
    let window = Window { mov: mov.ip(), gap };
    rel32(&window, nr)?;
    let held = mov.op1_register().full_register();
    let constant =
        block_constant(&mut factory, instrs, mov_at, held).or_else(|| holds_constant(&mut factory, instrs, held));
    (constant == Some(nr)).then_some(window)
}

/// `mov %rX, %eax` or `mov %rX, %rax`.
fn copies_register(i: &Instruction) -> bool {
    i.mnemonic() == Mnemonic::Mov
        && i.op0_kind() == OpKind::Register
        && matches!(i.op0_register(), Register::EAX | Register::RAX)
        && i.op1_kind() == OpKind::Register
        && i.op1_register().size() >= 4
}

/// Whether G may move up 3 bytes, before the `mov` (the module comment's conditions; iced
/// gives a RIP-relative operand as an absolute address, without base or index).
fn movable(factory: &mut InstructionInfoFactory, instrs: &[Instruction], g: &Instruction) -> bool {
    let info = factory.info(g);
    g.len() as u64 != MOV_LEN
        && g.flow_control() == FlowControl::Next
        && !info.used_registers().iter().any(|u| u.register().full_register() == Register::RAX)
        && info.used_memory().iter().all(|m| m.base() == Register::None && m.index() == Register::None)
        && nothing_lands_on(instrs, g.ip())
}

/// No direct branch of the function targets `ip`, and the function has no indirect jump.
pub(super) fn nothing_lands_on(instrs: &[Instruction], ip: u64) -> bool {
    !instrs.iter().any(|i| {
        i.flow_control() == FlowControl::IndirectBranch
            || (i.op0_kind() == OpKind::NearBranch64 && i.near_branch_target() == ip)
    })
}

/// The constant `reg` holds at instruction `at` if the last write before it, in the same
/// basic block (no branch lands after the write, up to `at`; no jump or call in between), is a
/// constant's.
fn block_constant(
    factory: &mut InstructionInfoFactory,
    instrs: &[Instruction],
    at: usize,
    reg: Register,
) -> Option<u64> {
    for w in (0..at).rev() {
        if !nothing_lands_on(instrs, instrs[w + 1].ip()) {
            return None;
        }
        let i = &instrs[w];
        if writes(factory, i, reg) {
            return constant_of(i);
        }
        if i.flow_control() != FlowControl::Next {
            return None;
        }
    }
    None
}

/// Whether `instr` writes any part of the full register `reg` (maybe conditionally).
pub(super) fn writes(factory: &mut InstructionInfoFactory, instr: &Instruction, reg: Register) -> bool {
    factory.info(instr).used_registers().iter().any(|u| {
        u.register().full_register() == reg
            && matches!(
                u.access(),
                OpAccess::Write | OpAccess::ReadWrite | OpAccess::CondWrite | OpAccess::ReadCondWrite
            )
    })
}

/// The constant `reg` holds wherever it is read in the function, if the function writes it
/// once, with a constant, in its straight-line start, and no call clobbers it.
fn holds_constant(factory: &mut InstructionInfoFactory, instrs: &[Instruction], reg: Register) -> Option<u64> {
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
    let is_call =
        |i: &Instruction| i.is_call_near() || i.is_call_far() || i.is_call_near_indirect() || i.is_call_far_indirect();
    if caller_saved && instrs.iter().any(is_call) {
        return None;
    }
    let mut all = instrs.iter().enumerate().filter(|(_, i)| writes(factory, i, reg));
    let (at, write) = all.next()?;
    if all.next().is_some() {
        return None;
    }
    // Straight-line start: nothing before the write changes the flow, and no branch of the
    // function lands after the first instruction and up to the write.
    if instrs[..at].iter().any(|i| i.flow_control() != FlowControl::Next) {
        return None;
    }
    if !instrs[1..=at].iter().all(|i| nothing_lands_on(instrs, i.ip())) {
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

/// The `call`'s displacement to the slot of `nr`, if one is in reach (the `call` ends the window).
fn rel32(window: &Window, nr: u64) -> Option<i32> {
    slot_table::call_displacement(Slot::Number(nr), window.end())
}

/// Records and patches a qualifying register site with the other CPUs stopped; true if it
/// was rewritten now. If they cannot be stopped in time the site keeps SYSCALL.
pub(super) fn rewrite(window: &Window, nr: u64) -> bool {
    let interior = [(window.mov + MOV_LEN, MOV_LEN)];
    let interiors = if window.gap != 0 { &interior[..] } else { &[] };
    let done = patch_frozen(window.mov, window.site(), interiors, |_| new_code(window, nr));
    if done {
        REGISTERS.fetch_add(1, Ordering::Relaxed);
    }
    done
}

/// Patches the window from `start` to the end of the `syscall` at `site` with the bytes
/// `new_code` gives (None: the old bytes changed, or no slot is to be had: no patch, the site
/// keeps SYSCALL), every other CPU stopped, once the site is recorded as `Register` (and each
/// old instruction start of `interiors` as `Interior`, with how far back its saved rips move).
/// `new_code` gets a test of whether a range of program memory is mapped (it may write a slot
/// there). The new code must end with a 5-byte `call` whose return address is the old
/// `syscall`'s end, and every old instruction start in the window must be a new one except
/// `interiors` and the `syscall`, whose saved rips move back by 3 (`fix_resume_point`). True if
/// patched now; if the others cannot be stopped in time the site keeps SYSCALL. False with
/// nothing recorded while the patch waits for a better moment (`patch_defer`).
pub(super) fn patch_frozen(
    start: u64,
    site: u64,
    interiors: &[(u64, u64)],
    new_code: impl FnOnce(&dyn Fn(u64, u64) -> bool) -> Option<[u8; MAX_WINDOW]>,
) -> bool {
    let end = site + 2;
    if !super::patch_defer::may_patch(site) {
        // Not recorded: a later call examines the site again.
        return false;
    }
    // Not preemptible from the freeze to the thaw: the other CPUs spin until the thaw, so it
    // must come soon (another thread of this CPU asking for a freeze meanwhile yields to this
    // one, `freeze_others`). Another CPU waiting for this one's interrupts cannot park: the
    // timeout ends the attempt.
    let was = irq::save_and_disable();
    if !crate::sched::freeze::freeze_others(FREEZE_TIMEOUT_NS, crate::sched::freeze::Halted::AreStopped) {
        irq::restore(was);
        rewrite::record(site, Decision::Kept);
        return false;
    }
    // Recorded before the patch: from here a saved rip on an old instruction start inside the
    // window moves back, which is right before the patch (the old code runs from there the
    // same) and after it.
    let decide = |mapped: &dyn Fn(u64, u64) -> bool| {
        // Never in shared memory (`shared_files::overlaps`); checked first, as `new_code` may
        // take a slot.
        let new = if super::shared_files::overlaps(start, end) { None } else { new_code(mapped) };
        let Some(new) = new else {
            rewrite::record(site, Decision::Kept);
            return false;
        };
        let interior = interiors.iter().all(|&(at, back)| rewrite::record_interior(at, back).is_some());
        if !interior || rewrite::record(site, Decision::Register) != Some(Decision::Register) {
            return false;
        }
        LOWEST.fetch_min(start, Ordering::SeqCst);
        HIGHEST.fetch_max(site, Ordering::SeqCst);
        call_gate::write_code(start, &new[..(end - start) as usize]);
        PATCHED.fetch_add(1, Ordering::SeqCst);
        true
    };
    let done = super::usermem::while_mapped_and(start, end, decide) == Some(true);
    crate::sched::freeze::thaw();
    irq::restore(was);
    done
}

/// The window's new bytes, `G; call slot(nr)`, if its old bytes are still the ones decoded.
fn new_code(window: &Window, nr: u64) -> Option<[u8; MAX_WINDOW]> {
    let len = (window.end() - window.mov) as usize;
    let mut old = [0u8; MAX_WINDOW];
    for (i, byte) in old[..len].iter_mut().enumerate() {
        *byte = uaccess::read::<u8>(window.mov + i as u64).ok()?;
    }
    let gap = window.gap as usize;
    let mov = Decoder::with_ip(64, &old[..3], window.mov, DecoderOptions::NONE).decode();
    if !copies_register(&mov) || old[3 + gap..len] != SYSCALL {
        return None;
    }
    let mut new = [0u8; MAX_WINDOW];
    new[..gap].copy_from_slice(&old[3..3 + gap]);
    if gap > 0 {
        let mut decoder = Decoder::with_ip(64, &old[3..3 + gap], window.mov + MOV_LEN, DecoderOptions::NONE);
        let g = decoder.decode();
        if g.len() != gap {
            return None;
        }
        if g.is_ip_rel_memory_operand() {
            // Three bytes earlier, the same target: the displacement grows by 3.
            let at = decoder.get_constant_offsets(&g).displacement_offset();
            let disp = i32::from_le_bytes(new[at..at + 4].try_into().ok()?).checked_add(MOV_LEN as i32)?;
            new[at..at + 4].copy_from_slice(&disp.to_le_bytes());
        }
    }
    new[gap] = CALL_REL32;
    new[gap + 1..gap + CALL_LEN as usize].copy_from_slice(&rel32(window, nr)?.to_le_bytes());
    Some(new)
}

/// A saved program frame about to resume: if its rip is an old instruction start inside a
/// rewritten register site's window that no longer is one, moves it to the same point of the
/// new code (as recorded: `rewrite::resume_point`).
///
/// At the old `syscall` itself (a thread stopped right before it, or a restart set up before
/// the patch: rip back at the `syscall`, rax the number) the registers are the call's, and
/// the call is made with them, as the `syscall` would have made it: rip at the gate's
/// `Enter` slot that pushes rcx, rcx the address after the site (as SYSCALL, the call
/// clobbers rcx). Not from the `call`: its slot replays the window, whose loads a signal
/// handler may have changed (memory, or registers in its frame): a read restarted after its
/// handler zeroed the word its length came from read 0 bytes (ring_varsite `restart`, 1 run
/// in ~20 under load). No stack write here: the frame the switch-in hook fixes may be stale.
pub fn fix_resume_point(frame: &mut TrapFrame) {
    if PATCHED.load(Ordering::SeqCst) == 0 {
        return;
    }
    let rip = frame.rip;
    if (LOWEST.load(Ordering::SeqCst)..=HIGHEST.load(Ordering::SeqCst)).contains(&rip) {
        match rewrite::resume_point(rip) {
            Some(rewrite::Resume::AtSyscall) => {
                frame.rcx = rip + SYSCALL.len() as u64;
                frame.rip = slot_table::enter_pushing_rcx_address();
            }
            Some(rewrite::Resume::Back(back)) => frame.rip = rip - back,
            None => {}
        }
    }
}

/// The switch-in hook (`sched::set_switch_in_hook`): the program frame a user thread left at
/// the top of its kernel stack (stale if it last entered by the fast path, and then unused).
pub fn fix_switched_in(kernel_stack_top: u64) {
    if PATCHED.load(Ordering::SeqCst) == 0 {
        return;
    }
    // SAFETY: the top of a live user thread's kernel stack, reserved for its program frame
    // (`thread::USER_FRAME_RESERVE`); the thread is not running, and this CPU switches to it.
    fix_resume_point(unsafe { &mut *crate::arch::syscall::user_frame(kernel_stack_top) });
}

/// A restart of call `nr` made from a register site (rip after it): the call is made again
/// as if by the `call` but without its slot, as Linux makes it again from the `syscall`: the
/// return address pushed (where the `call` pushed it; the red-zone rule makes that word free),
/// rip at the gate's `Enter` slot, which jumps to the entry with rax = `nr`. A slot replays
/// instructions of the old window (`varsite`: loads from memory, or from registers a signal
/// handler may have changed in the frame), which the restart must not do again. If the stack
/// word cannot be written, back to the `call`, whose push faults as the program's own would.
pub(super) fn restart(frame: &mut TrapFrame, nr: u64) {
    let sp = frame.rsp.wrapping_sub(8);
    if uaccess::write::<u64>(sp, frame.rip).is_ok() {
        frame.rsp = sp;
        frame.rip = slot_table::enter_address();
    } else {
        frame.rip -= CALL_LEN;
    }
    frame.rax = nr;
}
