//! The page that turns a rewritten `syscall` into a function call (after the zpoline
//! technique): a site `mov $N, %eax; syscall` is rewritten to `mov $GATE+N, %eax; call *%rax`
//! (the same lengths), which jumps into this page at offset N, where a sled hops and slides to
//! `sub rax, GATE` (the number again) and a jump into the ring-3 call entry
//! (`ring3::call_entry_address`). The policy (which sites, when) is the Linux layer's
//! (`linux::rewrite`).
//!
//! A second kind of site, `mov %rX, %eax; syscall` (3 + 2 bytes, X holding a constant N), is
//! rewritten to `call rel32` (5 bytes) to a slot of the table after the sled
//! (`slot_table`): `mov $N, %eax; jmp entry`, so that the entry finds the number in rax as
//! from the sled. One more slot serves the generic `syscall()` function's site, whose number
//! is already in rax.
//!
//! The page is a kernel page below 2 GiB (the immediate is 32 bits), not page 0: page 0 and
//! the rest of the low 64 KiB's first page stay not present, so NULL reads, writes and calls
//! fault as on Linux. A call into the gate from anywhere but a rewritten site reaches the entry,
//! which the Linux layer turns into a SIGSEGV (the return address is not a rewritten site).

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU64, Ordering};

use super::slot_table;

/// System-call numbers below this reach the entry; sites with larger numbers keep SYSCALL.
pub const SLED_LEN: u64 = 512;

/// The farthest a sled station sends a call: a station is `jmp +0x48` (EB 48), and a call
/// landing on its second byte runs `rex.w jmp +0x48` with the next station (48 EB 48), or
/// `rex.w nop` (48 90) at the end of the stations: every byte is a fine place to land. (The
/// displacement must be a REX.W byte: any other prefix or opcode would change a register.)
const STATION: usize = 3 + 0x48;

/// Where the slot table starts in the gate: the page after the sled's.
const SLOTS_AT: usize = 4096;
const GATE_LEN: usize = SLOTS_AT + slot_table::TABLE_LEN;

/// The gate's pages (the sled's, then the slot table): written once at boot (`install`),
/// executed by the program afterwards.
#[repr(C, align(4096))]
struct GatePage(UnsafeCell<[u8; GATE_LEN]>);

// SAFETY: written by `install`, on the boot CPU before any other CPU or program runs, and later
// only through `write_code` into window slots no site calls yet, with the other CPUs stopped.
unsafe impl Sync for GatePage {}

static GATE: GatePage = GatePage(UnsafeCell::new([0xcc; GATE_LEN]));

/// The gate's address: a rewritten site's `mov` loads it plus the system-call number.
pub fn base() -> u64 {
    GATE.0.get() as u64
}

/// Whether `addr` lies in a slot table rewritten sites call (`call rel32`): the gate's, or the
/// current image's near table.
pub fn is_slot(addr: u64) -> bool {
    (base() + SLOTS_AT as u64..base() + GATE_LEN as u64).contains(&addr) || slot_table::in_near_table(addr)
}

/// Whether `rip` is code the kernel runs in the program's place for rewritten sites, which the
/// program reaches by a call or jump it did not write: the gate (sled and slots), the current
/// image's near table, and the user-executable page of stubs (yield, CPUID).
pub fn is_code_for_sites(rip: u64) -> bool {
    (base()..base() + GATE_LEN as u64).contains(&rip)
        || slot_table::in_near_table(rip)
        || super::ring3::in_user_text(rip)
}

/// Writes the gate. Boot CPU, before the program or another CPU runs.
///
/// Layout: stations (EB 48) from 0, then NOPs for the last `STATION` bytes (or one more)
/// before offset `SLED_LEN`, where `sub rax, GATE` and a `jmp` to the entry sit; int3 after
/// them. A call to GATE + N (N < SLED_LEN) hops forward ~75 bytes per station and slides the
/// rest: at most 6 jumps and 76 NOPs, instead of up to 512 NOPs. The slots follow from
/// `SLOTS_AT` (`slot_table`).
pub fn install() {
    let entry = super::ring3::call_entry_address();
    let gate = base();
    let imm = i32::try_from(gate).expect("the call gate lies above 2 GiB");
    let sub_at = SLED_LEN as usize;
    let jump_at = sub_at + 6;
    let rel = entry as i64 - (gate as i64 + jump_at as i64 + 5);
    assert!(i32::try_from(rel).is_ok(), "call entry out of reach of the gate");
    // SAFETY: nothing runs the gate yet (see the function comment); written in place (it is
    // too large for the boot stack), starting as int3 everywhere.
    let code = unsafe { &mut *GATE.0.get() };
    let nops_from = (sub_at - STATION - 1) & !1;
    for station in code[..nops_from].chunks_exact_mut(2) {
        station.copy_from_slice(&[0xeb, 0x48]);
    }
    code[nops_from..sub_at].fill(0x90);
    code[sub_at..sub_at + 2].copy_from_slice(&[0x48, 0x2d]); // sub rax, imm32
    code[sub_at + 2..jump_at].copy_from_slice(&imm.to_le_bytes());
    code[jump_at] = 0xe9;
    code[jump_at + 1..jump_at + 5].copy_from_slice(&(rel as i32).to_le_bytes());
    slot_table::write(&mut code[SLOTS_AT..], gate + SLOTS_AT as u64, entry);
    slot_table::set_kernel(gate + SLOTS_AT as u64, entry);
}

/// Replaces the eight bytes at `addr` (program code, mapped read-only) with `new` if they
/// still hold `old`; returns whether it did. One atomic 8-byte store, so another CPU fetching
/// the instructions sees the old ones or the new ones, never a mix (the caller keeps the eight
/// bytes inside one cache line).
///
/// Code in the program's pool is written through the pool's writable alias, in the ring the
/// kernel runs in: through ring 0, on a PVM host, each write cost an emulated entry and ~100
/// emulated instructions (the CR0 toggles, the copy), 60-130 us per site at a program's first
/// calls. The store reaches the same physical line, and x86 checks stores against fetched
/// code by physical address, so the alias changes nothing for the CPUs that run it.
pub fn patch_u64(addr: u64, old: u64, new: u64) -> bool {
    match super::paging::pool_alias(addr, 8) {
        // SAFETY: the alias maps the pool read-write for good; the caller keeps the eight
        // bytes inside one cache line, where a locked access is atomic even unaligned.
        Some(p) => {
            unsafe { &*(p as *const AtomicU64) }.compare_exchange(old, new, Ordering::SeqCst, Ordering::SeqCst).is_ok()
        }
        None => super::ring3::privileged(patch_ring0, addr, old, new) != 0,
    }
}

/// Writes `bytes` over program code at `addr` (mapped read-only). Not atomic: the caller has
/// every other CPU stopped away from program code (`sched::freeze`), and they pass a
/// serializing IRETQ before they run program code again. Through the pool's alias where the
/// code is in the pool (see `patch_u64`); the gate's own slots directly (kernel data, writable
/// in the kernel's ring); anything else through ring 0.
pub fn write_code(addr: u64, bytes: &[u8]) {
    let len = bytes.len() as u64;
    let in_gate = addr >= base() && addr.checked_add(len).is_some_and(|end| end <= base() + GATE_LEN as u64);
    let target = if in_gate { Some(addr as *mut u8) } else { super::paging::pool_alias(addr, len) };
    match target {
        // SAFETY: the gate is this module's writable static and the alias maps the pool
        // read-write for good; `bytes` is the caller's buffer, which overlaps neither.
        Some(p) => unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len()) },
        None => {
            super::ring3::privileged(write_ring0, addr, bytes.as_ptr() as u64, bytes.len() as u64);
        }
    }
}

/// Ring 0: lifts CR0.WP to copy `len` bytes from `src` to program code at `dst`.
extern "C" fn write_ring0(dst: u64, src: u64, len: u64) -> u64 {
    const CR0_WP: u64 = 1 << 16;
    let cr0 = super::instr::read_cr0();
    // SAFETY: interrupts are off in this ring-0 call, so nothing else runs on this CPU while
    // write protection is lifted; `dst` is `len` bytes of mapped program code and `src` the
    // caller's buffer (`write_code`).
    unsafe {
        super::instr::write_cr0(cr0 & !CR0_WP);
        core::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, len as usize);
        super::instr::write_cr0(cr0);
    }
    0
}

/// Ring 0: lifts CR0.WP for one compare-and-exchange on a read-only page.
extern "C" fn patch_ring0(addr: u64, old: u64, new: u64) -> u64 {
    const CR0_WP: u64 = 1 << 16;
    let cr0 = super::instr::read_cr0();
    // SAFETY: interrupts are off in this ring-0 call, so nothing else runs on this CPU while
    // write protection is lifted; `addr` is 8 bytes of program code inside one cache line,
    // which the caller checked (x86 makes such an unaligned locked access atomic).
    unsafe {
        super::instr::write_cr0(cr0 & !CR0_WP);
        let word = &*(addr as *const AtomicU64);
        let done = word.compare_exchange(old, new, Ordering::SeqCst, Ordering::SeqCst).is_ok();
        super::instr::write_cr0(cr0);
        done as u64
    }
}
