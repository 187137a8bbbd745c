//! The generic `syscall()` function's site. glibc's x86-64 `syscall(long nr, ...)` shifts its
//! arguments into the system-call registers (`mov %rdi, %rax; mov %rsi, %rdi; ...;
//! mov %r9, %r8; mov 0x8(%rsp), %r9; syscall`): the number is an argument, so the site is
//! neither an immediate nor a register site (`rewrite`, `regsite`). Its last two instructions,
//! `mov 0x8(%rsp), %r9; syscall` (5 + 2 bytes), become a 2-byte nop and `call rel32` to the
//! slot `mov 0x10(%rsp), %r9; jmp entry` (`arch::slot_table`): the slot
//! loads the sixth argument from the same stack word (one word further up: the `call` pushed
//! its return address) and enters with the number the function left in rax, whatever it is
//! (the entry takes any number, as after SYSCALL). The `call` returns where the `syscall`
//! ended, as SYSCALL did.
//!
//! The conditions make the rewrite safe for any site with these two instructions, glibc's
//! function or not:
//! - the instruction before the `syscall` is exactly `mov 0x8(%rsp), %r9` (4c 8b 4c 24 08);
//! - the red-zone rule of every rewritten site's function (`rewrite`): nothing below the stack
//!   pointer is live at the site, so the return address the `call` pushes (and the fast path's
//!   saves below it) overwrite nothing. glibc's `syscall()` meets it by construction: it was
//!   called, so its caller's red zone died with that `call` (which wrote its return address
//!   there), and it keeps nothing on the stack itself;
//! - nothing lands on the `syscall`, now the middle of the `call`: no direct branch of the
//!   function targets it and the function has no indirect jump (a branch to the `mov` lands on
//!   the nop, the same point of the new code);
//! - a slot table is within ±2 GiB of the site (the gate's, or the program's `near_table`).
//!
//! Patched with the other CPUs stopped and recorded as a register site
//! (`regsite::patch_frozen`), whose resume and restart rules fit: a saved rip at the old
//! `syscall` (the `mov` done, rax the number) makes the call with the registers as they are
//! (`regsite::fix_resume_point`); a restart enters again with rax = the number and r9 as it
//! is (`regsite::restart`), as Linux makes the `syscall` again.

use core::sync::atomic::{AtomicUsize, Ordering};

use iced_x86::{Code, Instruction, Register};

use super::regsite::{self, MAX_WINDOW};
use super::uaccess;
use crate::arch::slot_table::{self, Slot};

/// The window's old bytes: `mov 0x8(%rsp), %r9; syscall`.
const OLD: [u8; 7] = [0x4c, 0x8b, 0x4c, 0x24, 0x08, 0x0f, 0x05];
/// The `mov`'s length: the window starts this far before the `syscall`.
const MOV_LEN: u64 = 5;
/// A 2-byte nop (`xchg %ax, %ax`), then the `call`.
const NOP2: [u8; 2] = [0x66, 0x90];
const CALL_REL32: u8 = 0xe8;

/// How many such sites were rewritten.
static COUNT: AtomicUsize = AtomicUsize::new(0);

pub fn count() -> usize {
    COUNT.load(Ordering::Relaxed)
}

/// The window's start (the `mov`) if the site that is instruction `at` of its function
/// `instrs` qualifies (the module comment's rules; the red-zone rule is the caller's).
pub(super) fn qualifies(instrs: &[Instruction], at: usize) -> Option<u64> {
    let mov = &instrs[at.checked_sub(1)?];
    let site = instrs[at].ip();
    let loads_arg6 = mov.code() == Code::Mov_r64_rm64
        && mov.op0_register() == Register::R9
        && mov.memory_base() == Register::RSP
        && mov.memory_index() == Register::None
        && mov.memory_displacement64() == 8
        && mov.len() as u64 == MOV_LEN;
    // The exact bytes too (`new_code` checks them again under the freeze): an encoding it
    // would refuse must not qualify, or every call from the site would try the freeze again.
    let bytes = uaccess::read::<[u8; 7]>(mov.ip()) == Ok(OLD);
    (loads_arg6 && bytes && regsite::nothing_lands_on(instrs, site) && rel32(site).is_some()).then(|| mov.ip())
}

/// The `call`'s displacement to the slot, if one is in reach (the `call` ends where the
/// `syscall` at `site` did).
fn rel32(site: u64) -> Option<i32> {
    slot_table::call_displacement(Slot::SyscallFunction, site + 2)
}

/// Rewrites the qualifying site whose window starts at `start`; true if it was rewritten now.
pub(super) fn rewrite(start: u64) -> bool {
    let site = start + MOV_LEN;
    let done = regsite::patch_frozen(start, site, &[], |_| new_code(site));
    if done {
        COUNT.fetch_add(1, Ordering::Relaxed);
    }
    done
}

/// The window's new bytes, `nop; call slot`, if its old bytes are still the expected ones.
fn new_code(site: u64) -> Option<[u8; MAX_WINDOW]> {
    if uaccess::read::<[u8; 7]>(site - MOV_LEN).ok()? != OLD {
        return None;
    }
    let mut new = [0u8; MAX_WINDOW];
    new[..2].copy_from_slice(&NOP2);
    new[2] = CALL_REL32;
    new[3..7].copy_from_slice(&rel32(site)?.to_le_bytes());
    Some(new)
}
