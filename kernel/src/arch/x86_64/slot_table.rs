//! The slot tables that register sites and the generic `syscall()` function's site reach with
//! `call rel32` (`linux::regsite`, `linux::sysfunc`): 16-byte slots, `mov $N, %eax; jmp T` for
//! each N below `SLED_LEN`, then `mov 0x10(%rsp), %r9; jmp T` for the `syscall()` function
//! (the sixth argument, one word further up past the return address; the number is already in
//! rax), T leading to the ring-3 call entry. One table lies in the call gate (a kernel page
//! below 2 GiB, T the entry itself). A `call rel32` reaches ±2 GiB only, so programs placed
//! farther (static-PIE and dynamically linked ones, in the pool above 4 GiB) call a second
//! table that the Linux layer maps among them (`write_near`, `set_near`), whose slots jump to a
//! hub in front of it, `jmp *[rip]` with the entry's address (a second hub leads to the CPUID
//! stub, `cpuid_cache`).
//!
//! After those, an `Enter` slot (`jmp T` alone: where a restarted call made from a slot-calling
//! site resumes, `linux::regsite::restart`; and `push rcx; jmp T` for a call made from an old
//! `syscall` of a site patched since, `linux::regsite::fix_resume_point`) and the window slots of variable-number sites
//! (`linux::varsite`), written while the program runs, with every other CPU stopped: each
//! replays the instructions of a window the site's `call` replaced, then jumps to T. Sites
//! whose windows replay the same code share a slot. A CPUID site's window slot
//! (`linux::cpuid_sites`, `Then::Cpuid`) is reached by `jmp` instead, calls the CPUID stub and
//! jumps back to the site. A spin-wait loop's slot (`linux::spin_sites`, `Then::Yield`) is
//! reached by `jmp` from the loop's head, calls the yield stub (`spin_yield`) first, then
//! replays the window and jumps back after it.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::call_gate::SLED_LEN;

/// A slot of the table.
#[derive(Clone, Copy)]
pub enum Slot {
    /// `mov $N, %eax; jmp entry` (N below `SLED_LEN`).
    Number(u64),
    /// `mov 0x10(%rsp), %r9; jmp entry`.
    SyscallFunction,
    /// `jmp entry`, and at `PUSHING_RCX` `push rcx; jmp entry`.
    Enter,
}

/// Bytes per slot (`mov` (5), `jmp rel32` (5), int3 padding).
const SLOT: usize = 16;
/// Where the `Enter` slot's `push rcx; jmp T` starts (after its `jmp T`).
const PUSHING_RCX: usize = 8;
/// Where the window slots start in a table.
const WINDOWS_AT: usize = (SLED_LEN as usize + 2) * SLOT;
/// Bytes per window slot: the replayed instructions, `jmp rel32`, a stub per branch out.
pub const WINDOW_SLOT: usize = 32;
/// Window slots per table.
const WINDOW_SLOTS: usize = 128;
/// A table's length.
pub const TABLE_LEN: usize = WINDOWS_AT + WINDOW_SLOTS * WINDOW_SLOT;
/// The near table's hubs, 16 bytes each: `jmp *[rip + 2]` (6 bytes), 2 bytes of int3, an
/// address: the entry's, the CPUID stub's (`cpuid_cache`), then the yield stub's
/// (`spin_yield`).
const HUB: usize = 16;
const HUBS: usize = 3;
const HUB_LEN: usize = HUBS * HUB;
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
        Slot::Enter => (SLED_LEN + 1) * SLOT as u64,
    }
}

/// A `jmp target` (5 bytes) for `code[at..]`, `code` to be executed at `addr`; None if out of reach.
/// Not inlined: folded into a caller with `target` a symbol, the reach test became a 32-bit
/// relocation of the symbol plus 2^31, which the linker cannot fit.
#[inline(never)]
fn jump_to(code: &mut [u8], addr: u64, at: usize, target: u64) -> Option<()> {
    let rel = i32::try_from(target as i64 - (addr as i64 + at as i64 + 5)).ok()?;
    code[at] = 0xe9;
    code[at + 1..at + 5].copy_from_slice(&rel.to_le_bytes());
    Some(())
}

/// Writes a table into `code` (at least `TABLE_LEN` bytes, to be executed at `addr`) whose slots
/// jump to `target`, within ±2 GiB of it.
pub(super) fn write(code: &mut [u8], addr: u64, target: u64) {
    let jump = |code: &mut [u8], at: usize| jump_to(code, addr, at, target).expect("slot table out of reach");
    for nr in 0..SLED_LEN {
        let at = offset(Slot::Number(nr)) as usize;
        code[at] = 0xb8; // mov eax, imm32
        code[at + 1..at + 5].copy_from_slice(&(nr as u32).to_le_bytes());
        jump(code, at + 5);
    }
    let at = offset(Slot::SyscallFunction) as usize;
    code[at..at + 5].copy_from_slice(&[0x4c, 0x8b, 0x4c, 0x24, 0x10]); // mov r9, [rsp + 0x10]
    jump(code, at + 5);
    let at = offset(Slot::Enter) as usize;
    code[at..at + SLOT].fill(0xcc);
    jump(code, at);
    code[at + PUSHING_RCX] = 0x51; // push rcx
    jump(code, at + PUSHING_RCX + 1);
    code[WINDOWS_AT..TABLE_LEN].fill(0xcc);
}

/// Records the gate's table (`call_gate::install`), whose slots jump to `target`.
pub(super) fn set_kernel(addr: u64, target: u64) {
    WINDOWS[0].reset(addr, [target, super::cpuid_cache::stub_address(), super::spin_yield::stub_address()]);
    KERNEL.store(addr, Ordering::Relaxed);
}

/// The gate table's `Enter` slot: where a restarted call resumes (with its return address
/// pushed, as by a `call`), from any site.
pub fn enter_address() -> u64 {
    KERNEL.load(Ordering::Relaxed) + offset(Slot::Enter)
}

/// The second half of the `Enter` slot: `push rcx; jmp T`, for a call made from a site's old
/// `syscall` with rcx the address after it (`linux::regsite::fix_resume_point`).
pub fn enter_pushing_rcx_address() -> u64 {
    enter_address() + PUSHING_RCX as u64
}

/// Writes a near table (hub and slots) into `code`, to be executed at `addr`.
pub fn write_near(code: &mut [u8], addr: u64) {
    code[..HUB_LEN].fill(0xcc);
    let targets =
        [super::ring3::call_entry_address(), super::cpuid_cache::stub_address(), super::spin_yield::stub_address()];
    for (hub, target) in code[..HUB_LEN].chunks_exact_mut(HUB).zip(targets) {
        hub[..6].copy_from_slice(&[0xff, 0x25, 0x02, 0x00, 0x00, 0x00]); // jmp [rip + 2]
        hub[8..16].copy_from_slice(&target.to_le_bytes());
    }
    write(&mut code[HUB_LEN..], addr + HUB_LEN as u64, addr);
}

/// The near table sites call now (`set_near`), 0 if none.
pub fn near() -> u64 {
    NEAR.load(Ordering::Relaxed)
}

/// Whether `addr` lies in the near table sites call now (`set_near`).
pub fn in_near_table(addr: u64) -> bool {
    let near = NEAR.load(Ordering::Relaxed);
    near != 0 && (near..near + NEAR_TABLE_LEN as u64).contains(&addr)
}

/// Makes the near table written at `addr` (`write_near`) the one sites may call from now on.
pub fn set_near(addr: u64) {
    let hub = |n: usize| addr + (n * HUB) as u64;
    WINDOWS[1].reset(addr + HUB_LEN as u64, [hub(0), hub(1), hub(2)]);
    NEAR.store(addr, Ordering::SeqCst);
}

/// The window slots of one table: where it is, where its slots jump, how many are used (the
/// table's own bytes tell which code each holds). Changed only by the one CPU that has stopped
/// the others (`window_call`), or while no other can patch (`set_kernel` at boot, `set_near`
/// as a program image is loaded).
struct Windows {
    table: AtomicU64,
    /// Where its window slots go on to: the entry (`Then::Enter`), the CPUID stub
    /// (`Then::Cpuid`), the yield stub (`Then::Yield`).
    targets: [AtomicU64; HUBS],
    used: AtomicUsize,
}

impl Windows {
    const fn new() -> Self {
        Windows { table: AtomicU64::new(0), targets: [const { AtomicU64::new(0) }; HUBS], used: AtomicUsize::new(0) }
    }

    fn reset(&self, table: u64, targets: [u64; HUBS]) {
        self.used.store(0, Ordering::SeqCst);
        for (t, &target) in self.targets.iter().zip(&targets) {
            t.store(target, Ordering::SeqCst);
        }
        self.table.store(table, Ordering::SeqCst);
    }
}

/// How a window slot is reached and what it does after replaying its instructions.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Then {
    /// Reached by `call`; enters the kernel with the number in rax: the window ended in a
    /// `syscall`.
    Enter,
    /// Reached by `jmp`; calls the CPUID stub (`cpuid_cache`) with rsp 128 bytes lower, past
    /// the red zone a leaf function may use, and jumps `back`: the window ended in a `cpuid`.
    Cpuid { back: u64 },
    /// Reached by `jmp` from a spin-wait loop; calls the yield stub (`spin_yield`) with rsp 128
    /// bytes lower first, then replays the window and jumps `back` (right after it). The
    /// window may end with the loop's back branch: one to `head`, where the window starts,
    /// goes to the slot's own start (no stub).
    Yield { back: u64, head: u64 },
}

impl Then {
    fn index(self) -> usize {
        match self {
            Then::Enter => 0,
            Then::Cpuid { .. } => 1,
            Then::Yield { .. } => 2,
        }
    }
}

/// A CPUID slot's tail: `lea -128(%rsp), %rsp`, `call` (5), `lea 128(%rsp), %rsp`, `jmp` (5).
/// A yield slot has the same bytes, the `jmp` after the replayed window.
const LOWER_RSP: [u8; 5] = [0x48, 0x8d, 0x64, 0x24, 0x80];
const RAISE_RSP: [u8; 8] = [0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00];
const CPUID_TAIL: usize = LOWER_RSP.len() + 5 + RAISE_RSP.len() + 5;
/// In a yield slot (`Then::Yield`): where its call returns, and where its copy of the window
/// starts (after `lea -128(%rsp), %rsp; call; lea 128(%rsp), %rsp`); how far rsp is lowered.
pub const YIELD_CALL_RETURN: u64 = (LOWER_RSP.len() + 5) as u64;
pub const YIELD_REPLAY_AT: u64 = (LOWER_RSP.len() + 5 + RAISE_RSP.len()) as u64;
pub const RED_ZONE: u64 = 128;

/// Writes the call to `target` below the red zone at `code[at..]` (executed at `addr`):
/// `lea -128(%rsp), %rsp; call; lea 128(%rsp), %rsp`, which leave the flags as they are.
/// Returns where the next byte goes.
fn call_below_red_zone(code: &mut [u8], addr: u64, at: usize, target: u64) -> Option<usize> {
    code[at..at + LOWER_RSP.len()].copy_from_slice(&LOWER_RSP);
    let at = at + LOWER_RSP.len();
    let rel = i32::try_from(target as i64 - (addr as i64 + at as i64 + 5)).ok()?;
    code[at] = 0xe8; // call rel32
    code[at + 1..at + 5].copy_from_slice(&rel.to_le_bytes());
    let at = at + 5;
    code[at..at + RAISE_RSP.len()].copy_from_slice(&RAISE_RSP);
    Some(at + RAISE_RSP.len())
}

/// The gate's table's window slots and the near table's (`table` 0: none yet).
static WINDOWS: [Windows; 2] = [Windows::new(), Windows::new()];

/// An instruction a window slot replays: its bytes and what must change when it runs at the
/// slot instead of its own place.
#[derive(Clone, Copy)]
pub struct Replayed {
    pub bytes: [u8; 15],
    pub len: usize,
    pub fixup: Fixup,
}

/// The instructions of `code` (at `ip`) as a slot replays them: RIP-relative operands adjusted
/// there, conditional branches to their targets. None if some byte does not decode.
pub fn replay_of(code: &[u8], ip: u64) -> Option<Vec<Replayed>> {
    let mut decoder = iced_x86::Decoder::with_ip(64, code, ip, iced_x86::DecoderOptions::NONE);
    let mut replay = Vec::new();
    let mut at = 0;
    while decoder.can_decode() {
        let i = decoder.decode();
        if i.is_invalid() {
            return None;
        }
        let mut bytes = [0u8; 15];
        bytes[..i.len()].copy_from_slice(&code[at..at + i.len()]);
        let fixup = if i.is_jcc_short_or_near() {
            Fixup::Branch(i.condition_code() as u8 - 1, i.near_branch_target())
        } else if i.is_ip_rel_memory_operand() {
            Fixup::RipRelative(decoder.get_constant_offsets(&i).displacement_offset(), i.ip_rel_memory_address())
        } else {
            Fixup::None
        };
        replay.push(Replayed { bytes, len: i.len(), fixup });
        at += i.len();
    }
    Some(replay)
}

/// What a replayed instruction needs at the slot.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Fixup {
    /// Nothing: it runs as it was.
    None,
    /// A RIP-relative operand: its 4-byte displacement at this offset among the bytes, and the
    /// address the operand names.
    RipRelative(usize, u64),
    /// A memory operand based on rsp: its displacement (at this offset, of this many bytes: 1
    /// or 4) grows by 8, the word the site's `call` pushed.
    StackRelative(usize, usize),
    /// A conditional branch out of the window (x86 condition nibble, target): at the slot a
    /// short branch to a stub that drops the `call`'s return address (`lea 8(%rsp), %rsp`,
    /// which leaves the flags alone) and jumps to the target.
    Branch(u8, u64),
}

/// The bytes of a taken branch's stub: `lea 8(%rsp), %rsp` (5), `jmp rel32` (5).
const STUB_LEN: usize = 10;

/// A window slot's code, to be executed at `addr` in a table whose slots go on to `target`:
/// the `replay` instructions (adjusted to the new place, `Fixup`), the tail `then` asks for
/// (`jmp target`, or CPUID's call and jump back), then the stubs of the branches, int3 after.
/// None if something is out of reach from there or does not fit.
fn window_code(replay: &[Replayed], addr: u64, target: u64, then: Then) -> Option<[u8; WINDOW_SLOT]> {
    let mut code = [0xccu8; WINDOW_SLOT];
    let body: usize = replay.iter().map(|r| if matches!(r.fixup, Fixup::Branch(..)) { 2 } else { r.len }).sum();
    // A yield slot's branch back to its window's start: to the slot's start.
    let to_slot =
        |r: &Replayed| matches!((r.fixup, then), (Fixup::Branch(_, to), Then::Yield { head, .. }) if to == head);
    let branches = replay.iter().filter(|r| matches!(r.fixup, Fixup::Branch(..)) && !to_slot(r)).count();
    let tail = match then {
        Then::Enter => 5,
        Then::Cpuid { .. } | Then::Yield { .. } => CPUID_TAIL,
    };
    if body + tail + branches * STUB_LEN > WINDOW_SLOT {
        return None;
    }
    // Reached by `call`, the slot runs with the return address pushed: stack operands reach 8
    // bytes further and a branch out drops it first.
    let pushed = matches!(then, Then::Enter);
    let mut at = 0;
    let mut stub = body + tail;
    if let Then::Yield { .. } = then {
        // The call comes first: every round of the loop passes it, whatever its window's
        // branches do.
        at = call_below_red_zone(&mut code, addr, at, target)?;
    }
    for r in replay {
        match r.fixup {
            Fixup::Branch(condition, _) if to_slot(r) => {
                // j<cc> rel8 to the slot's start.
                code[at] = 0x70 | (condition & 0xf);
                code[at + 1] = (-(at as i64 + 2)) as i8 as u8;
                at += 2;
                continue;
            }
            Fixup::Branch(condition, to) => {
                // j<cc> rel8 to this branch's stub.
                code[at] = 0x70 | (condition & 0xf);
                code[at + 1] = (stub - (at + 2)) as u8;
                if pushed {
                    code[stub..stub + 5].copy_from_slice(&[0x48, 0x8d, 0x64, 0x24, 0x08]);
                    jump_to(&mut code, addr, stub + 5, to)?;
                } else {
                    jump_to(&mut code, addr, stub, to)?;
                }
                stub += STUB_LEN;
                at += 2;
                continue;
            }
            _ => code[at..at + r.len].copy_from_slice(&r.bytes[..r.len]),
        }
        match r.fixup {
            Fixup::RipRelative(disp_at, names) => {
                let disp = i32::try_from(names as i64 - (addr as i64 + (at + r.len) as i64)).ok()?;
                code[at + disp_at..at + disp_at + 4].copy_from_slice(&disp.to_le_bytes());
            }
            Fixup::StackRelative(..) if !pushed => {}
            Fixup::StackRelative(disp_at, 1) => {
                code[at + disp_at] = (code[at + disp_at] as i8).checked_add(8)? as u8;
            }
            Fixup::StackRelative(disp_at, 4) => {
                let old = i32::from_le_bytes(code[at + disp_at..at + disp_at + 4].try_into().ok()?);
                code[at + disp_at..at + disp_at + 4].copy_from_slice(&old.checked_add(8)?.to_le_bytes());
            }
            Fixup::StackRelative(..) => return None,
            Fixup::None | Fixup::Branch(..) => {}
        }
        at += r.len;
    }
    match then {
        Then::Enter => jump_to(&mut code, addr, at, target)?,
        Then::Cpuid { back } => {
            at = call_below_red_zone(&mut code, addr, at, target)?;
            jump_to(&mut code, addr, at, back)?;
        }
        Then::Yield { back, .. } => jump_to(&mut code, addr, at, back)?,
    }
    Some(code)
}

/// The displacement of a `call rel32` (`jmp rel32` for `Then::Cpuid`) ending at `from` to a
/// window slot that replays `replay` and goes on as `then` says: a slot of the same code if there is one, else a new one, in the gate's table if
/// in reach, else the near table. None if neither has one in reach or room. `writable(start,
/// end)` tells whether the near table's memory is still there (the program may have unmapped
/// it). The caller has stopped every other CPU (`sched::freeze`): they pass a serializing
/// instruction before they run program code again.
pub fn window_call(replay: &[Replayed], from: u64, writable: &dyn Fn(u64, u64) -> bool, then: Then) -> Option<i32> {
    for (i, w) in WINDOWS.iter().enumerate() {
        let (table, target, used) = (
            w.table.load(Ordering::SeqCst),
            w.targets[then.index()].load(Ordering::SeqCst),
            w.used.load(Ordering::SeqCst),
        );
        let slot_addr = |n: usize| table + (WINDOWS_AT + n * WINDOW_SLOT) as u64;
        let reach = |addr: u64| i32::try_from(addr as i64 - from as i64).ok();
        if table == 0 || reach(slot_addr(0)).is_none() || reach(slot_addr(WINDOW_SLOTS - 1)).is_none() {
            continue;
        }
        if i == 1 && !writable(table, table + (WINDOWS_AT + WINDOW_SLOTS * WINDOW_SLOT) as u64) {
            continue;
        }
        for n in 0..used {
            let addr = slot_addr(n);
            // SAFETY: a used slot of a table that is mapped (the gate is the kernel's; the near
            // table checked just above), WINDOW_SLOT bytes long.
            let current = unsafe { core::ptr::read_volatile(addr as *const [u8; WINDOW_SLOT]) };
            if window_code(replay, addr, target, then) == Some(current) {
                return reach(addr);
            }
        }
        if used == WINDOW_SLOTS {
            continue;
        }
        let addr = slot_addr(used);
        let Some(code) = window_code(replay, addr, target, then) else { continue };
        super::call_gate::write_code(addr, &code);
        w.used.store(used + 1, Ordering::SeqCst);
        return reach(addr);
    }
    None
}

/// The displacement of a `call rel32` ending at `from` to `slot`, in the gate's table if it
/// reaches it, else in the near table; None if neither is in reach.
pub fn call_displacement(slot: Slot, from: u64) -> Option<i32> {
    let near = NEAR.load(Ordering::SeqCst);
    let tables = [KERNEL.load(Ordering::Relaxed), if near == 0 { 0 } else { near + HUB_LEN as u64 }];
    tables.into_iter().filter(|&t| t != 0).find_map(|t| i32::try_from((t + offset(slot)) as i64 - from as i64).ok())
}
