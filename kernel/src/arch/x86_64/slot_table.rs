//! The slot tables that register sites and the generic `syscall()` function's site reach with
//! `call rel32` (`linux::regsite`, `linux::sysfunc`): 16-byte slots, `mov $N, %eax; jmp T` for
//! each N below `SLED_LEN`, then `mov 0x10(%rsp), %r9; jmp T` for the `syscall()` function
//! (the sixth argument, one word further up past the return address; the number is already in
//! rax), T leading to the ring-3 call entry. One table lies in the call gate (a kernel page
//! below 2 GiB, T the entry itself). A `call rel32` reaches ±2 GiB only, so programs placed
//! farther (static-PIE and dynamically linked ones, in the pool above 4 GiB) call a second
//! table that the Linux layer maps among them (`write_near`, `set_near`), whose slots jump to a
//! hub in front of it, `jmp *[rip]` with the entry's address.

use core::sync::atomic::{AtomicU64, Ordering};

use super::call_gate::SLED_LEN;

/// A slot of the table.
#[derive(Clone, Copy)]
pub enum Slot {
    /// `mov $N, %eax; jmp entry` (N below `SLED_LEN`).
    Number(u64),
    /// `mov 0x10(%rsp), %r9; jmp entry`.
    SyscallFunction,
}

/// Bytes per slot (`mov` (5), `jmp rel32` (5), int3 padding).
const SLOT: usize = 16;
/// A table's length.
pub const TABLE_LEN: usize = (SLED_LEN as usize + 1) * SLOT;
/// The near table's hub: `jmp *[rip + 2]` (6 bytes), 2 bytes of int3, the entry's address.
const HUB_LEN: usize = 16;
/// The near table's length: the hub, then a table.
pub const NEAR_TABLE_LEN: usize = HUB_LEN + TABLE_LEN;

/// The gate's table and the program's near table (0: none).
static KERNEL: AtomicU64 = AtomicU64::new(0);
static NEAR: AtomicU64 = AtomicU64::new(0);

fn offset(slot: Slot) -> u64 {
    match slot {
        Slot::Number(nr) => {
            debug_assert!(nr < SLED_LEN);
            nr * SLOT as u64
        }
        Slot::SyscallFunction => SLED_LEN * SLOT as u64,
    }
}

/// Writes a table into `code` (at least `TABLE_LEN` bytes, to be executed at `addr`) whose slots
/// jump to `target`, within ±2 GiB of it.
pub(super) fn write(code: &mut [u8], addr: u64, target: u64) {
    // `jmp target` at `at` (5 bytes).
    let jump = |code: &mut [u8], at: usize| {
        let rel = i32::try_from(target as i64 - (addr as i64 + at as i64 + 5)).expect("slot table out of reach");
        code[at] = 0xe9;
        code[at + 1..at + 5].copy_from_slice(&rel.to_le_bytes());
    };
    for nr in 0..SLED_LEN {
        let at = offset(Slot::Number(nr)) as usize;
        code[at] = 0xb8; // mov eax, imm32
        code[at + 1..at + 5].copy_from_slice(&(nr as u32).to_le_bytes());
        jump(code, at + 5);
    }
    let at = offset(Slot::SyscallFunction) as usize;
    code[at..at + 5].copy_from_slice(&[0x4c, 0x8b, 0x4c, 0x24, 0x10]); // mov r9, [rsp + 0x10]
    jump(code, at + 5);
}

/// Records the gate's table (`call_gate::install`).
pub(super) fn set_kernel(addr: u64) {
    KERNEL.store(addr, Ordering::Relaxed);
}

/// Writes a near table (hub and slots) into `code`, to be executed at `addr`.
pub fn write_near(code: &mut [u8], addr: u64) {
    code[..HUB_LEN].fill(0xcc);
    code[..6].copy_from_slice(&[0xff, 0x25, 0x02, 0x00, 0x00, 0x00]); // jmp [rip + 2]
    code[8..16].copy_from_slice(&super::ring3::call_entry_address().to_le_bytes());
    write(&mut code[HUB_LEN..], addr + HUB_LEN as u64, addr);
}

/// Makes the near table written at `addr` (`write_near`) the one sites may call from now on.
pub fn set_near(addr: u64) {
    NEAR.store(addr, Ordering::SeqCst);
}

/// The displacement of a `call rel32` ending at `from` to `slot`, in the gate's table if it
/// reaches it, else in the near table; None if neither is in reach.
pub fn call_displacement(slot: Slot, from: u64) -> Option<i32> {
    let near = NEAR.load(Ordering::SeqCst);
    let tables = [KERNEL.load(Ordering::Relaxed), if near == 0 { 0 } else { near + HUB_LEN as u64 }];
    tables.into_iter().filter(|&t| t != 0).find_map(|t| i32::try_from((t + offset(slot)) as i64 - from as i64).ok())
}
