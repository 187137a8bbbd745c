//! The page at address 0 that turns a rewritten `syscall` into a function call (the zpoline
//! technique): a site rewritten to `call *%rax` (FF D0, the same two bytes as `syscall`, 0F 05)
//! jumps to the address equal to the system-call number, which lands in a sled that hops and
//! slides to a jump into the ring-3 call entry (`ring3::call_entry_address`). The
//! policy (which sites, when) is the Linux layer's (`linux::rewrite`).
//!
//! The page is mapped user-readable and executable, never writable: a NULL *write* still
//! faults, but a NULL *read* returns the sled's bytes instead of faulting, and a call
//! through a NULL function pointer reaches the entry, which the Linux layer turns back into
//! the SIGSEGV Linux would give (the return address is not a rewritten site).

use core::sync::atomic::{AtomicU16, Ordering};

/// System-call numbers below this reach the entry; sites with larger numbers keep SYSCALL.
pub const SLED_LEN: u64 = 512;

/// The farthest a sled station sends a call: a station is `jmp +0x48` (EB 48), and a call
/// landing on its second byte runs `rex.w jmp +0x48` with the next station (48 EB 48), or
/// `rex.w nop` (48 90) at the end of the stations: every byte is a fine place to land. (The
/// displacement must be a REX.W byte: any other prefix or opcode would change a register.)
const STATION: usize = 3 + 0x48;

/// Writes the gate into physical page 0. Boot CPU, ring 0, while the monitor's boot page
/// tables (which map page 0 writable) are active.
///
/// Layout: stations (EB 48) from 0, then NOPs for the last `STATION` bytes (or one more)
/// before offset `SLED_LEN`, where `jmp` to the entry sits; int3 after it. A call to
/// N < SLED_LEN hops forward ~75 bytes per station and slides the rest: at most 6 jumps and
/// 76 NOPs, instead of up to 512 NOPs.
pub fn install() {
    let entry = super::ring3::call_entry_address();
    let jump_at = SLED_LEN as usize;
    let rel = entry as i64 - (jump_at as i64 + 5);
    assert!(i32::try_from(rel).is_ok(), "call entry out of reach of page 0");
    let mut code = [0xccu8; 4096];
    let nops_from = (jump_at - STATION - 1) & !1;
    for station in code[..nops_from].chunks_exact_mut(2) {
        station.copy_from_slice(&[0xeb, 0x48]);
    }
    code[nops_from..jump_at].fill(0x90);
    code[jump_at] = 0xe9;
    code[jump_at + 1..jump_at + 5].copy_from_slice(&(rel as i32).to_le_bytes());
    // SAFETY: physical page 0 is RAM no one else uses (the boot-info block starts at 0x1000),
    // identity-mapped and writable under the boot tables. Copied with `rep movsb` because
    // address 0 is the null pointer to Rust.
    unsafe {
        core::arch::asm!("rep movsb", inout("rdi") 0u64 => _, inout("rsi") code.as_ptr() => _,
                         inout("rcx") code.len() => _, options(nostack, preserves_flags));
    }
}

/// Replaces the two bytes at `addr` (program code, mapped read-only) with `new` if they still
/// hold `old`; returns whether it did. One atomic 16-bit store, so another CPU fetching the
/// instruction sees the old one or the new one, never a mix (the caller keeps the two bytes
/// inside one cache line).
pub fn patch_u16(addr: u64, old: u16, new: u16) -> bool {
    super::ring3::privileged(patch_ring0, addr, old as u64, new as u64) != 0
}

/// Ring 0: lifts CR0.WP for one compare-and-exchange on a read-only page.
extern "C" fn patch_ring0(addr: u64, old: u64, new: u64) -> u64 {
    const CR0_WP: u64 = 1 << 16;
    let cr0 = super::instr::read_cr0();
    // SAFETY: interrupts are off in this ring-0 call, so nothing else runs on this CPU while
    // write protection is lifted; `addr` is 2-byte program memory the caller checked.
    unsafe {
        super::instr::write_cr0(cr0 & !CR0_WP);
        let word = &*(addr as *const AtomicU16);
        let done = word.compare_exchange(old as u16, new as u16, Ordering::SeqCst, Ordering::SeqCst).is_ok();
        super::instr::write_cr0(cr0);
        done as u64
    }
}
