//! System calls as function calls: a `syscall` instruction of the program that has executed
//! once is rewritten in place into `call *%rax`, which reaches the dispatcher through the call
//! gate at address 0 (`arch::call_gate`) without SYSCALL's mode-switch emulation (~2.8 K cycles
//! on a PVM host). Lazy, as lazypoline: only sites that ran, found by the return address.
//!
//! A site is rewritten only when all of this holds, so that the rewrite cannot change what the
//! program computes:
//! - it is `mov $N, %eax` (or `%rax`) immediately followed by `syscall`, with N below the
//!   gate's sled: the call then always lands in the sled (the generic `syscall()` function,
//!   whose number varies, keeps SYSCALL);
//! - its two bytes lie in one cache line, so the patch is one atomic store that other CPUs
//!   fetch either before or after, never half-way;
//! - the program's symbol table names the function around it, and no instruction of that
//!   function addresses memory below the stack pointer (`[rsp - d]`) or a frame pointer
//!   (`[rbp - d]`): `call` pushes its return address into the 128-byte red zone below `rsp`,
//!   which a leaf function may use and SYSCALL leaves alone. Conservative: such functions,
//!   and stripped programs, keep SYSCALL. (Red-zone use through a copy of `rsp` in another
//!   register would escape the test; compilers do not emit it.)
//!
//! Rewritten sites are recorded: an entry through the gate whose return address is not a
//! site is a call through a NULL function pointer, which ends as Linux's SIGSEGV at address 0.
//! Restarts and signals see the same frame as after SYSCALL (the return address is popped).
//! `--strace` shows every call either way. `--no-rewrite` turns rewriting off.

use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use super::uaccess;
use crate::arch::call_gate::{self, SLED_LEN};
use crate::arch::traps::TrapFrame;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Sites decided so far, an open-addressing set of `site << 1 | kept` (0 = free slot), so
/// that each site is examined once. Full: no more decisions (the rest keep SYSCALL).
const SITES_LEN: usize = 8192;
static SITES: [AtomicU64; SITES_LEN] = [const { AtomicU64::new(0) }; SITES_LEN];
static SITES_USED: AtomicUsize = AtomicUsize::new(0);
static REWRITTEN: AtomicUsize = AtomicUsize::new(0);

const SYSCALL: u16 = u16::from_le_bytes([0x0f, 0x05]);
const CALL_RAX: u16 = u16::from_le_bytes([0xff, 0xd0]);

/// Decides once at boot whether sites are rewritten: only with the kernel in ring 3 (the gate
/// enters the ring-3 dispatcher) and a program, unless `--no-rewrite`. Returns the decision.
pub fn choose(boot: &hrt_abi::BootInfo) -> bool {
    let on = crate::arch::ring3::active() && boot.program.size != 0 && boot.flags & hrt_abi::flags::NO_REWRITE == 0;
    ENABLED.store(on, Ordering::Relaxed);
    on
}

pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// How many sites were rewritten and how many examined and kept.
pub fn counts() -> (usize, usize) {
    let rewritten = REWRITTEN.load(Ordering::Relaxed);
    (rewritten, SITES_USED.load(Ordering::Relaxed) - rewritten)
}

fn slot(site: u64) -> usize {
    (site.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 51) as usize % SITES_LEN
}

/// What was decided for `site`: Some(true) rewritten, Some(false) kept, None not yet.
fn decision(site: u64) -> Option<bool> {
    let mut i = slot(site);
    for _ in 0..SITES_LEN {
        match SITES[i].load(Ordering::Acquire) {
            0 => return None,
            s if s >> 1 == site => return Some(s & 1 == 0),
            _ => i = (i + 1) % SITES_LEN,
        }
    }
    None
}

/// Records the decision for `site`; returns the one that stands (another CPU may have
/// recorded it first), or None if the set is (nearly) full.
fn record(site: u64, rewrite: bool) -> Option<bool> {
    if SITES_USED.load(Ordering::Relaxed) >= SITES_LEN * 3 / 4 {
        return None;
    }
    let entry = site << 1 | !rewrite as u64;
    let mut i = slot(site);
    loop {
        match SITES[i].compare_exchange(0, entry, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                SITES_USED.fetch_add(1, Ordering::Relaxed);
                return Some(rewrite);
            }
            Err(s) if s >> 1 == site => return Some(s & 1 == 0),
            Err(_) => i = (i + 1) % SITES_LEN,
        }
    }
}

/// Called first by the dispatcher. Returns false if the entry came through the gate but not
/// from a rewritten site (a call through a NULL pointer): the caller raises the fault.
/// Otherwise rewrites the SYSCALL site that made this call, the first time, if it qualifies.
pub fn on_syscall(frame: &TrapFrame, by_call: bool) -> bool {
    let site = frame.rip.wrapping_sub(2);
    if by_call {
        return decision(site) == Some(true);
    }
    if enabled() && decision(site).is_none() && uaccess::read::<u16>(site) == Ok(SYSCALL) {
        // Lost races (another CPU decided first) keep that CPU's decision.
        if record(site, qualifies(site, frame.rax)) == Some(true) && call_gate::patch_u16(site, SYSCALL, CALL_RAX) {
            REWRITTEN.fetch_add(1, Ordering::Relaxed);
        }
    }
    true
}

/// Turns a NULL call that reached the gate into the fault Linux reports: the instruction
/// fetch at address 0, with the return address pushed (the entry popped it).
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

/// The rules in the module comment.
fn qualifies(site: u64, rax: u64) -> bool {
    if site % 64 == 63 || rax >= SLED_LEN {
        return false;
    }
    let before = |n: u64| uaccess::slice(site.wrapping_sub(n), n).ok();
    let mov_eax = before(5).is_some_and(|b| b[0] == 0xb8 && u32::from_le_bytes([b[1], b[2], b[3], b[4]]) as u64 == rax);
    let mov_rax = before(7)
        .is_some_and(|b| b[..3] == [0x48, 0xc7, 0xc0] && u32::from_le_bytes([b[3], b[4], b[5], b[6]]) as u64 == rax);
    if !mov_eax && !mov_rax {
        return false;
    }
    let Some((start, end)) = super::symbols::function_at(site) else {
        return false;
    };
    match uaccess::slice(start, end - start) {
        Ok(code) => !may_use_red_zone(code, start),
        Err(_) => false,
    }
}

/// True if the function `code` (at address `ip`) has a memory operand below the stack pointer
/// (`[rsp - d]`) or below a frame pointer (`[rbp - d]`), or cannot be decoded in full.
fn may_use_red_zone(code: &[u8], ip: u64) -> bool {
    use iced_x86::{Decoder, DecoderOptions, Instruction, OpKind, Register};
    let mut decoder = Decoder::with_ip(64, code, ip, DecoderOptions::NONE);
    let mut instr = Instruction::default();
    while decoder.can_decode() {
        decoder.decode_out(&mut instr);
        if instr.is_invalid() {
            return true;
        }
        let memory = (0..instr.op_count()).any(|i| instr.op_kind(i) == OpKind::Memory);
        if memory
            && matches!(instr.memory_base(), Register::RSP | Register::RBP)
            && (instr.memory_displacement64() as i64) < 0
        {
            return true;
        }
    }
    false
}
