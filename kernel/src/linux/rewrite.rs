//! System calls as function calls: a `syscall` instruction of the program that has executed
//! once is rewritten in place, with the `mov $N, %eax` right before it, into
//! `mov $GATE+N, %eax; call *%rax`, which reaches the dispatcher through the call gate
//! (`arch::call_gate`) without SYSCALL's mode-switch emulation (~2.8 K cycles on a PVM host).
//! Lazy, as lazypoline: only sites that ran, found by the return address; and only once the
//! program has made `WARM_UP` calls, so that short programs never build the decoder.
//!
//! A site is rewritten only when all of this holds, so that the rewrite cannot change what the
//! program computes:
//! - the instruction right before it is `mov $N, %eax` (B8 imm32, or `mov $N, %rax`, 48 C7 C0
//!   imm32, the signal restorer's) with N below the gate's sled
//!   (numbers the compiler hoisted into another register are register sites, and the generic
//!   `syscall()` function's site, whose number is an argument, is a third kind: below);
//! - the six bytes patched (the immediate and the `syscall`) lie in one cache line, so the
//!   patch is one atomic store that other CPUs fetch either before or after, never half-way;
//! - the program's symbol table names the function around it, and no instruction of that
//!   function addresses memory below the stack pointer (`[rsp - d]`) or a frame pointer
//!   (`[rbp - d]`): `call` pushes its return address into the 128-byte red zone below `rsp`,
//!   which a leaf function may use and SYSCALL leaves alone. Conservative: such functions,
//!   and stripped programs, keep SYSCALL. (Red-zone use through a copy of `rsp` in another
//!   register would escape the test; compilers do not emit it.)
//!
//! A second kind of site, `mov %rX, %eax; syscall` with X proven to hold N (the number
//! hoisted into a register, as libgomp's futex calls are), becomes `call GATE_SLOT(N)`; its
//! conditions and what makes the patch safe are in `regsite`. The generic `syscall()`
//! function's `mov 0x8(%rsp), %r9; syscall` becomes `nop; call` to a slot that loads r9
//! and enters with the number in rax (`sysfunc`); it is patched and recorded as a register
//! site. Any other site whose last instructions only load registers, from inputs they do not
//! write, becomes a `call` to a slot that replays them and enters with whatever number rax
//! holds (`varsite`), recorded as a register site too.
//!
//! Rewritten sites are recorded (by the address of the `syscall`, which is the return address
//! minus 2 for both kinds): an entry through the gate whose return address is not a
//! site is a stray call, which ends as a SIGSEGV. A restarted call goes back to the `call`
//! with the gate's number, or re-enters from a register site without its slot (`restart`);
//! one reaching a rewritten `call` with the bare
//! number (a jump past the `mov`) faults at page 0 and is taken as the system call
//! (`bare_number_call`). A rewritten `call` that cannot push its return address (a stack
//! made read-only or unmapped, where SYSCALL would have written nothing) faults and is taken
//! as the system call too (`blocked_push_call`). Restarts and signals see the same frame as after SYSCALL (the return
//! address is popped). `--strace` shows every call either way. `--no-rewrite` turns rewriting
//! off.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use iced_x86::{Code, Decoder, DecoderOptions, Instruction, OpKind, Register};

use super::uaccess;
use crate::arch::call_gate::{self, SLED_LEN};
use crate::arch::traps::TrapFrame;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Sites decided so far, an open-addressing set of `back << 56 | site << 2 | Decision` (0 = free
/// slot), so that each site is examined once; `back` is how far an `Interior` point's saved rip
/// moves back (`resume_point`). Full: no more decisions (the rest keep SYSCALL).
const SITES_LEN: usize = 8192;
static SITES: [AtomicU64; SITES_LEN] = [const { AtomicU64::new(0) }; SITES_LEN];
static SITES_USED: AtomicUsize = AtomicUsize::new(0);
static REWRITTEN: AtomicUsize = AtomicUsize::new(0);
/// Entries of `Decision::Interior` (not sites).
static INTERIOR: AtomicUsize = AtomicUsize::new(0);

/// What was decided for a site.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Decision {
    /// `mov $GATE+N, %eax; call *%rax`.
    Immediate = 0,
    /// Left as it is.
    Kept = 1,
    /// `call slot(N)` in place of `mov %rX, %eax; syscall` (`regsite`).
    Register = 2,
    /// Not a site: where an instruction began inside a register site's patched window that is
    /// no instruction's start any more (`regsite`).
    Interior = 3,
}

/// The site (or `Interior` point) an entry of `SITES` is for.
fn site_of(entry: u64) -> u64 {
    (entry >> 2) & ((1 << 54) - 1)
}

impl Decision {
    fn from_bits(bits: u64) -> Decision {
        match bits & 3 {
            0 => Decision::Immediate,
            2 => Decision::Register,
            3 => Decision::Interior,
            _ => Decision::Kept,
        }
    }
}

const SYSCALL: [u8; 2] = [0x0f, 0x05];
const CALL_RAX: [u8; 2] = [0xff, 0xd0];

/// Decides once at boot whether sites are rewritten: only with the kernel in ring 3 (the gate
/// enters the ring-3 dispatcher) and a program, unless `--no-rewrite`. Returns the decision.
pub fn choose(boot: &hrt_abi::BootInfo) -> bool {
    let on = crate::arch::ring3::active() && boot.program.size != 0 && boot.flags & hrt_abi::flags::NO_REWRITE == 0;
    ENABLED.store(on, Ordering::Relaxed);
    if on {
        crate::sched::set_switch_in_hook(super::regsite::fix_switched_in);
    }
    on
}

pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// How many sites were rewritten and how many examined and kept.
pub fn counts() -> (usize, usize) {
    let rewritten = REWRITTEN.load(Ordering::Relaxed);
    (rewritten, SITES_USED.load(Ordering::Relaxed) - rewritten - INTERIOR.load(Ordering::Relaxed))
}

/// Up to `max` sites that keep SYSCALL, lowest first (for `-v`: where a program still pays
/// SYSCALL's trip).
pub fn kept_sites(max: usize) -> Vec<u64> {
    let mut kept: Vec<u64> = SITES
        .iter()
        .map(|slot| slot.load(Ordering::Acquire))
        .filter(|&s| s != 0 && s != FORGOTTEN && Decision::from_bits(s) == Decision::Kept)
        .map(site_of)
        .collect();
    kept.sort_unstable();
    kept.truncate(max);
    kept
}

fn slot(site: u64) -> usize {
    (site.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 51) as usize % SITES_LEN
}

/// A slot whose site was unmapped (`forget`): probing goes on past it (site 0, never recorded).
const FORGOTTEN: u64 = Decision::Kept as u64;
/// The lowest and highest site ever recorded, so that most unmaps skip `forget`'s scan.
static LOWEST: AtomicU64 = AtomicU64::new(u64::MAX);
static HIGHEST: AtomicU64 = AtomicU64::new(0);

/// True if `site` is a rewritten system-call site (a call through the gate from anywhere
/// else is a NULL call).
pub fn is_rewritten(site: u64) -> bool {
    matches!(decision(site), Some(Decision::Immediate | Decision::Register))
}

/// What was decided for `site` (the `syscall`'s address), None if nothing yet.
pub fn decision(site: u64) -> Option<Decision> {
    entry(site).map(Decision::from_bits)
}

/// The entry of `SITES` for `site`, if any.
fn entry(site: u64) -> Option<u64> {
    let mut i = slot(site);
    for _ in 0..SITES_LEN {
        match SITES[i].load(Ordering::Acquire) {
            0 => return None,
            s if s != FORGOTTEN && site_of(s) == site => return Some(s),
            _ => i = (i + 1) % SITES_LEN,
        }
    }
    None
}

/// Drops the decisions for sites in `[start, end)`, which the program unmapped: new code
/// mapped there later is examined afresh, and a call through NULL from it is not taken for
/// a rewritten site. Called with the program's memory lock held, as `on_syscall` patches.
pub fn forget(start: u64, end: u64) {
    super::patch_defer::forget(start, end);
    super::spin_sites::forget(start, end);
    if end <= LOWEST.load(Ordering::Relaxed) || start > HIGHEST.load(Ordering::Relaxed) {
        return;
    }
    for slot in &SITES {
        let s = slot.load(Ordering::Acquire);
        if s != 0 && s != FORGOTTEN && (start..end).contains(&site_of(s)) {
            slot.store(FORGOTTEN, Ordering::Release);
        }
    }
}

/// Where a saved rip at an old instruction start `ip` resumes once a window around it was
/// patched (`regsite::fix_resume_point`). None if `ip` is no such point.
pub(super) fn resume_point(ip: u64) -> Option<Resume> {
    let s = entry(ip)?;
    match Decision::from_bits(s) {
        Decision::Register => Some(Resume::AtSyscall),
        Decision::Interior => Some(Resume::Back(s >> 56)),
        _ => None,
    }
}

/// See `resume_point`.
pub(super) enum Resume {
    /// At a register site's old `syscall`, now the end of its `call`: the call is made with
    /// the registers as they are.
    AtSyscall,
    /// Inside a window: this many bytes back, to the same point of the new code.
    Back(u64),
}

/// Records the decision for `site`; returns the one that stands (another CPU may have
/// recorded it first), or None if the set is (nearly) full.
pub(super) fn record(site: u64, decision: Decision) -> Option<Decision> {
    record_moving_back(site, decision, 0)
}

/// Records `Interior` point `at`, whose saved rips move `back` bytes (below 256) once patched.
pub(super) fn record_interior(at: u64, back: u64) -> Option<Decision> {
    debug_assert!(back < 256);
    record_moving_back(at, Decision::Interior, back)
}

fn record_moving_back(site: u64, decision: Decision, back: u64) -> Option<Decision> {
    if SITES_USED.load(Ordering::Relaxed) >= SITES_LEN * 3 / 4 {
        return None;
    }
    let entry = back << 56 | site << 2 | decision as u64;
    let mut i = slot(site);
    loop {
        match SITES[i].compare_exchange(0, entry, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                SITES_USED.fetch_add(1, Ordering::Relaxed);
                if decision == Decision::Interior {
                    INTERIOR.fetch_add(1, Ordering::Relaxed);
                }
                LOWEST.fetch_min(site, Ordering::Relaxed);
                HIGHEST.fetch_max(site, Ordering::Relaxed);
                return Some(decision);
            }
            Err(s) if s != FORGOTTEN && site_of(s) == site => return Some(Decision::from_bits(s)),
            Err(_) => i = (i + 1) % SITES_LEN,
        }
    }
}

/// System calls a program makes through SYSCALL before any site is examined. The first
/// examination builds the instruction decoder's tables (`iced_x86`'s, ~0.6-0.8 ms here and
/// ~1 ms natively, of an empty program's ~10 ms), and a rewrite saves ~2.7 K cycles (~1 us)
/// per later call of its site: a program that makes fewer calls than this in all (an empty
/// static program makes 14, `/bin/true` through ld.so ~40) would pay for a decoder it never
/// gains from, while one that makes more loses at most this many calls' difference, ~70 us.
const WARM_UP: usize = 64;
static TRAPPED: AtomicUsize = AtomicUsize::new(0);
static WARM: AtomicBool = AtomicBool::new(false);

/// True once the program has made `WARM_UP` system calls through SYSCALL (counting this one).
fn warmed_up() -> bool {
    if WARM.load(Ordering::Relaxed) {
        return true;
    }
    let warm = TRAPPED.fetch_add(1, Ordering::Relaxed) + 1 >= WARM_UP;
    if warm {
        WARM.store(true, Ordering::Relaxed);
    }
    warm
}

/// Called first by the dispatcher. Returns false if the entry came through the gate but not
/// from a rewritten site (a stray call into the gate): the caller raises the fault.
/// Otherwise rewrites the SYSCALL site that made this call, the first time, if it qualifies.
pub fn on_syscall(frame: &TrapFrame, by_call: bool) -> bool {
    let site = frame.rip.wrapping_sub(2);
    if by_call {
        return is_rewritten(site) || adopt_copied_site(site, frame.rax);
    }
    if enabled() && decision(site).is_none() && warmed_up() && uaccess::read::<[u8; 2]>(site) == Ok(SYSCALL) {
        let nr = frame.rax;
        let done = match qualifies(site, nr) {
            Plan::Register(window) => super::regsite::rewrite(&window, nr),
            Plan::SyscallFunction(start) => super::sysfunc::rewrite(start),
            Plan::Variable(window) => super::varsite::rewrite(&window),
            Plan::Decided(decided) => {
                // Lost races (another CPU decided first) keep that CPU's decision.
                // Recorded and patched while the site is still mapped: an unmap on another
                // CPU (which forgets the decisions for its range) waits.
                let decide = || {
                    let shared = super::shared_files::overlaps(patch_at(site), site + 2);
                    let decided = if shared { Decision::Kept } else { decided };
                    record(site, decided) == Some(Decision::Immediate) && patch(site, nr)
                };
                super::usermem::while_mapped(site, site + 2, decide) == Some(true)
            }
        };
        if done {
            REWRITTEN.fetch_add(1, Ordering::Relaxed);
        }
    }
    true
}

/// Whether an entry through the gate from a place that is not a recorded site came from a copy
/// of a rewritten immediate site: `mov $GATE+N, %eax` (or the `mov $GATE+N, %rax` form) and
/// `call *%rax`, N being the number the gate computed from where the call landed. Code that
/// relocates a function's first instructions makes such copies: an inline hook's trampoline
/// (Frida, funchook: the hooked function's `mov $N, %eax; syscall` prologue, read after the
/// rewrite), a binary translator's code cache. Such a copy is recorded as a site of its own,
/// so that a restart and a bare-number call find it, and makes the system call; until stop
/// 98 it ended as a stray call (SIGSEGV at address 0). So does a copy of a register site,
/// `call rel32` into a slot table (code moved to fresh memory at the same address, as programs
/// that put their text in huge pages do, copies every such site), recorded as a register site.
/// Anything else stays a stray call.
fn adopt_copied_site(site: u64, nr: u64) -> bool {
    if !enabled() {
        return false;
    }
    let ret = site.wrapping_add(2);
    if let (Ok(0xe8), Ok(rel)) = (uaccess::read::<u8>(ret.wrapping_sub(5)), uaccess::read::<i32>(ret.wrapping_sub(4))) {
        if call_gate::is_slot(ret.wrapping_add(rel as i64 as u64)) {
            return record(site, Decision::Register) == Some(Decision::Register);
        }
    }
    if nr >= SLED_LEN {
        return false;
    }
    let imm = ((call_gate::base() + nr) as u32).to_le_bytes();
    let Ok(tail) = uaccess::read::<[u8; 6]>(site.wrapping_sub(4)) else { return false };
    if tail[..4] != imm || tail[4..] != CALL_RAX {
        return false;
    }
    let short = uaccess::read::<u8>(site.wrapping_sub(5)) == Ok(0xb8);
    let wide = uaccess::read::<[u8; 3]>(site.wrapping_sub(7)) == Ok([0x48, 0xc7, 0xc0]);
    (short || wide) && record(site, Decision::Immediate) == Some(Decision::Immediate)
}

/// A single-step trap (the program's own TF) right after a rewritten immediate site's `call *%rax`,
/// at the gate's sled: natively the step goes over the SYSCALL it replaced, and the next trap
/// comes after the instruction that follows it. So the frame becomes the system call's (return
/// address popped, rax the number), TF still set, and the caller makes the call; the next trap
/// is then the program's own. Until stop 98 the program's handler got traps inside the gate.
pub fn single_step_into_gate(frame: &mut TrapFrame) -> bool {
    const TF: u64 = 1 << 8;
    let nr = frame.rip.wrapping_sub(call_gate::base());
    if frame.vector != 1 || frame.rflags & TF == 0 || nr >= SLED_LEN || frame.rax != frame.rip {
        return false;
    }
    let Ok(ret) = uaccess::read::<u64>(frame.rsp) else { return false };
    let site = ret.wrapping_sub(2);
    if decision(site) != Some(Decision::Immediate) && !adopt_copied_site(site, nr) {
        return false;
    }
    frame.rip = ret;
    frame.rsp = frame.rsp.wrapping_add(8);
    frame.rax = nr;
    true
}

/// Turns a stray call that reached the gate (not from a rewritten site) into a SIGSEGV: an
/// instruction fetch at address 0 that is not present, with the return address pushed (the
/// entry popped it).
pub fn null_call_fault(frame: &mut TrapFrame) {
    let ret = frame.rip;
    frame.rsp = frame.rsp.wrapping_sub(8);
    if uaccess::write::<u64>(frame.rsp, ret).is_err() {
        frame.rsp = frame.rsp.wrapping_add(8);
    }
    frame.rip = 0;
    frame.vector = crate::arch::traps::VEC_PAGE_FAULT;
    frame.error = 0x14; // user-mode instruction fetch, page not present
    super::fault::user_exception(frame, 0);
}

/// Points `frame` (returned from system call `nr`, rip after the site) back at the call, for
/// a restart: the 2-byte `syscall` or `call *%rax` (rax then the gate's number), or for a
/// register site the gate's entry as if called from the site (`regsite::restart`).
pub fn restart(frame: &mut TrapFrame, nr: u64) {
    let site = frame.rip.wrapping_sub(2);
    match decision(site) {
        Some(Decision::Register) => super::regsite::restart(frame, nr),
        Some(Decision::Immediate) if nr < SLED_LEN => {
            frame.rip = site;
            frame.rax = call_gate::base() + nr;
        }
        _ => {
            frame.rip = site;
            frame.rax = nr;
        }
    }
}

/// Whether a user page fault is a rewritten site's `call *%rax` run with the bare number in
/// rax (a fetch at that number, below the sled's length, with the return address after a
/// rewritten site on the stack): if so, turns the frame into the system call's (return
/// address popped, rax the number) and returns true.
pub fn bare_number_call(frame: &mut TrapFrame, cr2: u64) -> bool {
    const FETCH: u64 = 1 << 4;
    if !enabled() || frame.error & FETCH == 0 || cr2 != frame.rip || cr2 >= SLED_LEN {
        return false;
    }
    match uaccess::read::<u64>(frame.rsp) {
        Ok(ret) if decision(ret.wrapping_sub(2)) == Some(Decision::Immediate) => {
            frame.rip = ret;
            frame.rsp = frame.rsp.wrapping_add(8);
            frame.rax = cr2;
            true
        }
        _ => false,
    }
}

/// Whether an exception is a rewritten site's `call *%rax` that could not push its return
/// address (the stack below `rsp` not writable: an alternate signal stack another thread made
/// read-only under the signal restorer, or no stack at all), where the SYSCALL it replaced
/// writes nothing and would have run: if so, turns the frame into that system call's (rip
/// after the site, rax the number) and returns true. A page fault counts only as a write to
/// the eight bytes below `rsp`; #SS and #GP (a non-canonical `rsp`) need no address.
pub fn blocked_push_call(frame: &mut TrapFrame, cr2: u64) -> bool {
    const WRITE: u64 = 1 << 1;
    let push = match frame.vector {
        14 => frame.error & WRITE != 0 && (frame.rsp.wrapping_sub(8)..frame.rsp).contains(&cr2),
        12 | 13 => true,
        _ => false,
    };
    let nr = frame.rax.wrapping_sub(call_gate::base());
    if !enabled() || !push || nr >= SLED_LEN || decision(frame.rip) != Some(Decision::Immediate) {
        return false;
    }
    if uaccess::read::<[u8; 2]>(frame.rip) != Ok(CALL_RAX) {
        return false;
    }
    frame.rip += 2;
    frame.rax = nr;
    true
}

/// The eight bytes patched for `site`: from the `mov`'s immediate (4 bytes before the site).
fn patch_at(site: u64) -> u64 {
    site.wrapping_sub(4)
}

/// Patches `mov $nr, %eax; syscall` at `site` into `mov $GATE+nr, %eax; call *%rax` with one
/// atomic store (`qualifies` checked the bytes and that they share a cache line).
fn patch(site: u64, nr: u64) -> bool {
    let at = patch_at(site);
    let Ok(old) = uaccess::read::<[u8; 8]>(at) else { return false };
    let mut new = old;
    new[..4].copy_from_slice(&((call_gate::base() + nr) as u32).to_le_bytes());
    new[4..6].copy_from_slice(&CALL_RAX);
    old[..4] == (nr as u32).to_le_bytes()
        && old[4..6] == SYSCALL
        && call_gate::patch_u64(at, u64::from_le_bytes(old), u64::from_le_bytes(new))
}

/// What to do with a site.
enum Plan {
    /// Record this decision (and patch if it is `Immediate`).
    Decided(Decision),
    /// Rewrite this register site (`regsite`).
    Register(super::regsite::Window),
    /// Rewrite this generic `syscall()` function's site, whose window starts here (`sysfunc`).
    SyscallFunction(u64),
    /// Rewrite this site whose number nobody proved constant (`varsite`).
    Variable(super::varsite::Window),
}

/// Which kind of rewrite the rules (the module comment's, `regsite`'s, `sysfunc`'s and `varsite`'s) allow for `site`
/// making call `rax`; `Kept` if none.
fn qualifies(site: u64, rax: u64) -> Plan {
    let Some(instrs) = site_function(site) else {
        return Plan::Decided(Decision::Kept);
    };
    let Some(at) = instrs.iter().position(|i| i.ip() == site).filter(|&at| at > 0) else {
        return Plan::Decided(Decision::Kept);
    };
    let mov = &instrs[at - 1];
    // `mov $N, %eax` (B8 imm32), or `mov $N, %rax` (48 C7 C0 imm32: C libraries' signal
    // restorer, `__restore_rt`, run at the end of every handler): either way the immediate is
    // the four bytes right before the `syscall`, which `patch` rewrites (the gate's numbers are
    // below 2^31, so the sign-extended form loads the same value).
    let short = mov.code() == Code::Mov_r32_imm32 && mov.op0_register() == Register::EAX && mov.len() == 5;
    let wide = mov.code() == Code::Mov_rm64_imm32 && mov.op0_register() == Register::RAX && mov.len() == 7;
    let immediate = (short || wide) && mov.immediate(1) == rax;
    if immediate && rax < SLED_LEN && patch_at(site) % 64 <= 56 {
        Plan::Decided(Decision::Immediate)
    } else if let Some(window) = super::regsite::qualifies(&instrs, at, rax) {
        Plan::Register(window)
    } else if let Some(start) = super::sysfunc::qualifies(&instrs, at) {
        Plan::SyscallFunction(start)
    } else if let Some(window) = super::varsite::qualifies(&instrs, at) {
        Plan::Variable(window)
    } else {
        Plan::Decided(Decision::Kept)
    }
}

/// The instructions of the function around `site`, if the symbol table names it, it decodes,
/// and it uses nothing below its stack pointer (the red-zone rule).
fn site_function(site: u64) -> Option<Vec<Instruction>> {
    match super::symbols::function_at(site) {
        Some((start, end)) => function_instructions(start, end),
        None => restorer_instructions(site),
    }
}

/// A signal restorer the program registered (`sa_restorer`) that no sized symbol or unwind
/// entry names (static glibc's `__restore_rt` has a symbol without a size and no unwind
/// table): its `mov $15, %rax; syscall`, which runs on the signal frame's stack. Other code
/// without a size stays unknown: musl's `__unmapself` makes its exit call after unmapping its
/// own stack, where a `call` has nowhere to push (its thread died of SIGSEGV when such code
/// counted as a function).
fn restorer_instructions(site: u64) -> Option<Vec<Instruction>> {
    const MOV_RAX_IMM32: u64 = 7;
    let start = site.checked_sub(MOV_RAX_IMM32)?;
    if !super::signal::state::is_restorer(start) {
        return None;
    }
    function_instructions(start, site + 2)
}

/// The instructions of the function `[start, end)`, if it decodes and uses nothing below its
/// stack pointer (the red-zone rule).
fn function_instructions(start: u64, end: u64) -> Option<Vec<Instruction>> {
    let instrs = decode_function(start, end)?;
    (!instrs.iter().any(below_stack_pointer)).then_some(instrs)
}

/// The instructions of the function `[start, end)`, if it decodes.
pub(super) fn decode_function(start: u64, end: u64) -> Option<Vec<Instruction>> {
    decode(uaccess::slice(start, end - start).ok()?, start)
}

/// Before a fork freezes the other CPUs: the decoder's tables (a lazily built static) exist.
/// A thread preempted while building them left them half-built in the copy, where the child's
/// first decode spun for good on their `Once` (a fork_threads child on a loaded host).
pub fn prepare_for_fork() {
    let _ = Decoder::with_ip(64, &[0x90], 0, DecoderOptions::NONE);
}

/// Every instruction of the function `code` at `ip`; None if some cannot be decoded.
fn decode(code: &[u8], ip: u64) -> Option<Vec<Instruction>> {
    let mut decoder = Decoder::with_ip(64, code, ip, DecoderOptions::NONE);
    let mut out = Vec::new();
    while decoder.can_decode() {
        let instr = decoder.decode();
        if instr.is_invalid() {
            return None;
        }
        out.push(instr);
    }
    Some(out)
}

/// A memory operand below the stack pointer (`[rsp - d]`) or a frame pointer (`[rbp - d]`).
fn below_stack_pointer(instr: &Instruction) -> bool {
    (0..instr.op_count()).any(|i| instr.op_kind(i) == OpKind::Memory)
        && matches!(instr.memory_base(), Register::RSP | Register::RBP)
        && (instr.memory_displacement64() as i64) < 0
}
