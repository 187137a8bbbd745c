//! The program's CPUID instructions as jumps to the kernel's answers. A CPUID traps to the
//! host on a PVM host (~35 us here), and glibc's start-up runs about 67 of them;
//! `arch::cpuid_cache` answers most from memory. Unlike a `syscall`, a CPUID never reaches
//! the kernel, so its sites cannot be found when they first run (`rewrite`, lazily): they are
//! looked for when an image is loaded, before the program runs. Each `0f a2` in its code whose
//! function the symbol table or the unwind table names, that decodes there as a CPUID, with
//! a window before it that may move (`window`), becomes padding and a `jmp` to a slot that
//! replays the window, calls the stub with the stack pointer below the red zone and jumps
//! back (`slot_table::Then::Cpuid`). Sites that do not qualify keep CPUID. Only with
//! rewriting on (`rewrite::enabled`: the kernel in ring 3, no `--no-rewrite`).
//!
//! What it costs: a pass over the code for `0f a2` (through the pool's alias, whose large
//! pages cost no shadow-paging fault per 4 KiB), eight bytes at a time, and the decoding of
//! each function holding one. Images with more code than `SCAN_MAX` are left alone.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

use iced_x86::{FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpKind, Register};

use crate::arch::slot_table::{self, Then};

/// The most code a pass looks at (8 MiB: a few ms at worst, about what glibc's CPUIDs cost).
const SCAN_MAX: u64 = 8 << 20;

static REWRITTEN: AtomicUsize = AtomicUsize::new(0);
static KEPT: AtomicUsize = AtomicUsize::new(0);

/// CPUID sites rewritten and kept since boot.
pub fn counts() -> (usize, usize) {
    (REWRITTEN.load(Ordering::Relaxed), KEPT.load(Ordering::Relaxed))
}

/// Rewrites the CPUID sites that qualify in the code `[lo, hi)` of an image just loaded (its
/// symbols and unwind tables recorded), before the program runs.
pub fn rewrite_loaded(lo: u64, hi: u64) {
    if !super::rewrite::enabled() || hi <= lo || hi - lo > SCAN_MAX {
        return;
    }
    crate::arch::cpuid_cache::seed();
    let Some(code) = readable(lo, hi - lo) else { return };
    let mut sites = Vec::new();
    find(code, lo, &mut sites);
    let mut at = 0;
    while at < sites.len() {
        let Some((start, end)) = super::symbols::function_at(sites[at]) else {
            KEPT.fetch_add(1, Ordering::Relaxed);
            at += 1;
            continue;
        };
        let within = sites[at..].iter().take_while(|&&s| s < end).count();
        let instrs = super::rewrite::decode_function(start, end);
        let landings = instrs.as_ref().and_then(|instrs| landings(instrs, lo, hi));
        for &site in &sites[at..at + within] {
            let done = instrs.as_ref().zip(landings.as_ref()).is_some_and(|(instrs, landings)| {
                let at = instrs.iter().position(|i| i.ip() == site && i.mnemonic() == Mnemonic::Cpuid);
                at.filter(|&at| sets_leaf(instrs, at))
                    .and_then(|at| window(instrs, at, landings))
                    .is_some_and(|start| patch(start, site))
            });
            let counter = if done { &REWRITTEN } else { &KEPT };
            counter.fetch_add(1, Ordering::Relaxed);
        }
        at += within;
    }
}

/// The fewest bytes of instructions a window holds before its `cpuid`: with the `cpuid`'s
/// two, room for the `jmp`.
const MIN_WINDOW: u64 = JMP_LEN - 2;
const JMP_LEN: u64 = 5;
/// The most: the slot's 32 bytes hold them, the stub's call and the jump back (23).
const MAX_WINDOW: u64 = 9;

/// How far back `sets_leaf` looks.
const LEAF_SET_WITHIN: usize = 16;

/// Whether one of the `LEAF_SET_WITHIN` instructions before the `cpuid` that is instruction
/// `at` of `instrs`, after the last control transfer, writes eax: the leaf. The bytes `0f a2`
/// were found by a pattern, not by running them, and a function's extent may hold data that
/// happens to decode as instructions; a CPUID whose leaf is loaded right before it is code
/// (every glibc, libgcc, Rust and Go site seen loads it within ten instructions).
fn sets_leaf(instrs: &[Instruction], at: usize) -> bool {
    let mut factory = InstructionInfoFactory::new();
    for i in instrs[at.saturating_sub(LEAF_SET_WITHIN)..at].iter().rev() {
        if i.flow_control() != FlowControl::Next {
            return false;
        }
        let writes_eax = super::regsite::writes(&mut factory, i, Register::RAX);
        if writes_eax {
            return true;
        }
    }
    false
}

/// The start of the window of the `cpuid` that is instruction `at` of its function `instrs`:
/// the instructions right before it back to the first that gives it `MIN_WINDOW` bytes, if
/// each runs the same at the slot (no control flow; RIP-relative operands are adjusted there)
/// and nothing of the function lands inside it or on the `cpuid` (`landings`, sorted). Unlike
/// a `syscall`'s window (`varsite`), the program has not run yet, so no thread can be inside
/// it and any such instruction may move: the slot runs it once, in the same order, with the
/// same stack pointer (the slot is reached by `jmp`).
fn window(instrs: &[Instruction], at: usize, landings: &[u64]) -> Option<u64> {
    let site = instrs[at].ip();
    let mut first = at;
    while site - instrs[first].ip() < MIN_WINDOW {
        first = first.checked_sub(1)?;
        let i = &instrs[first];
        if i.flow_control() != FlowControl::Next || i.has_segment_prefix() || site - i.ip() > MAX_WINDOW {
            return None;
        }
    }
    instrs[first + 1..=at].iter().all(|i| landings.binary_search(&i.ip()).is_err()).then(|| instrs[first].ip())
}

/// The most entries a jump table may have here: a longer one keeps its function's sites.
const TABLE_MAX: u64 = 4096;
/// How far before a jump table's load its `lea` may be.
const LEA_WITHIN: usize = 16;

/// Every address where control may enter the function `instrs` (code of an image whose code is
/// `[lo, hi)`) other than by falling through, sorted: its direct branches' targets and its
/// jump tables' entries. None if it also jumps indirectly in a way not understood here (a
/// computed `goto`, a tail call through a register): then any of its instructions may be one.
///
/// glibc's `init_cpu_features` (ld.so's, and static programs' `__libc_start_main`, where it is
/// inlined) dispatches on the CPU model through jump tables, and its CPUIDs (leaves 0,
/// 0x8000_000x, ~20 sites) were kept for it: 5-8 traps of ~35 us in every start of a dynamic
/// program.
fn landings(instrs: &[Instruction], lo: u64, hi: u64) -> Option<Vec<u64>> {
    let mut out: Vec<u64> =
        instrs.iter().filter(|i| i.op0_kind() == OpKind::NearBranch64).map(|i| i.near_branch_target()).collect();
    let mut dispatches = Vec::new();
    let mut tables = Vec::new();
    for (k, i) in instrs.iter().enumerate() {
        if i.flow_control() == FlowControl::IndirectBranch {
            let (table, lea) = jump_table(instrs, k)?;
            let bound = index_bound(instrs, k);
            tables.push((table, bound.map(|(n, _)| n)));
            // From the bound (or the `lea`) to the jump: a block control must not enter.
            let from = bound.map_or(instrs[lea].ip(), |(_, at)| at.min(instrs[lea].ip()));
            dispatches.push((from, i.ip()));
        }
    }
    // A table ends where the function's next one starts (gcc lays a function's tables out
    // one after the other): read past it, the next table's entries, taken relative to this
    // one's start, gave targets that were none, and glibc's `handle_amd` (three tables, 22
    // CPUIDs run at every start, ~19 us each) kept its sites for them.
    let starts: Vec<u64> = tables.iter().map(|&(t, _)| t).collect();
    for &(table, bound) in &tables {
        let next = starts.iter().copied().filter(|&s| s > table).min();
        let room = next.map_or(TABLE_MAX, |n| ((n - table) / 4).min(TABLE_MAX));
        table_targets(table, bound.map_or(room, |b| b.min(room)), lo, hi, &mut out)?;
    }
    out.sort_unstable();
    out.dedup();
    // Control that entered a dispatch after its `lea` (or its index's bound) would reach the
    // jump with a table register this block may not have set (or an index it did not bound):
    // then the tables read are not the whole story.
    let inside = |&(lea, jmp): &(u64, u64)| out.iter().any(|&t| t > lea && t <= jmp);
    (!dispatches.iter().any(inside)).then_some(out)
}

/// The jump table behind the indirect `jmp` that is instruction `k` of `instrs`, in the form
/// gcc gives it: `lea table(%rip), T; ...; movslq (T, I, 4), X; add T, X; jmp *X`, the `lea`
/// within the same block (no control flow in between, and the last write of T before the
/// load). Returns the table's address and the index of the `lea`.
fn jump_table(instrs: &[Instruction], k: usize) -> Option<(u64, usize)> {
    let (jmp, add, load) = (&instrs[k], &instrs[k.checked_sub(1)?], &instrs[k.checked_sub(2)?]);
    let x = jmp.op0_register();
    let t = add.op1_register();
    let shape = jmp.mnemonic() == Mnemonic::Jmp
        && jmp.op0_kind() == OpKind::Register
        && add.mnemonic() == Mnemonic::Add
        && add.op0_kind() == OpKind::Register
        && add.op1_kind() == OpKind::Register
        && add.op0_register() == x
        && t != x
        && load.mnemonic() == Mnemonic::Movsxd
        && load.op0_register() == x
        && load.op1_kind() == OpKind::Memory
        && load.memory_base() == t
        && load.memory_index() != Register::None
        && load.memory_index_scale() == 4
        && load.memory_displacement64() == 0
        && !load.has_segment_prefix();
    if !shape {
        return None;
    }
    let mut factory = InstructionInfoFactory::new();
    for w in (0..k - 2).rev().take(LEA_WITHIN) {
        let i = &instrs[w];
        if i.flow_control() != FlowControl::Next {
            return None;
        }
        let writes_t = super::regsite::writes(&mut factory, i, t.full_register());
        if writes_t {
            let lea = i.mnemonic() == Mnemonic::Lea && i.is_ip_rel_memory_operand() && i.op0_register() == t;
            return lea.then(|| (i.ip_rel_memory_address(), w));
        }
    }
    None
}

/// How many entries the jump table of the indirect `jmp` that is instruction `k` may use, where
/// its block bounds the index right before the load: `and $m, I` (m + 1 entries) or
/// `cmp $n, I` and `ja` (n + 1) before it, I the load's index register (or its low half).
/// None where no such bound is found (the table is then read up to its first entry that
/// points outside the code). With the address of the bounding instruction (`landings` makes
/// sure control enters the dispatch only before it).
fn index_bound(instrs: &[Instruction], k: usize) -> Option<(u64, u64)> {
    let index = instrs[k.checked_sub(2)?].memory_index().full_register();
    let mut factory = InstructionInfoFactory::new();
    for w in (0..k - 2).rev().take(LEA_WITHIN) {
        let i = &instrs[w];
        // The whole index: an 8- or 16-bit `and` or `cmp` leaves its upper bits unbounded.
        let whole = |r: Register| r.full_register() == index && r.size() >= 4;
        let on_index = i.op0_kind() == OpKind::Register && whole(i.op0_register());
        let imm = matches!(i.op1_kind(), OpKind::Immediate8 | OpKind::Immediate8to32 | OpKind::Immediate32)
            .then(|| i.immediate(1));
        match (i.mnemonic(), on_index, imm) {
            (Mnemonic::And, true, Some(m)) if m < TABLE_MAX => return Some((m + 1, i.ip())),
            (Mnemonic::Ja, ..) => {
                // The bound's compare is the instruction before the branch.
                let c = &instrs[w.checked_sub(1)?];
                let on_index = c.op0_kind() == OpKind::Register && whole(c.op0_register());
                let n = matches!(c.op1_kind(), OpKind::Immediate8 | OpKind::Immediate8to32 | OpKind::Immediate32)
                    .then(|| c.immediate(1));
                return match (c.mnemonic(), on_index, n) {
                    (Mnemonic::Cmp, true, Some(n)) if n < TABLE_MAX => Some((n + 1, c.ip())),
                    _ => None,
                };
            }
            _ => {}
        }
        if i.flow_control() != FlowControl::Next {
            return None;
        }
        let writes_index = super::regsite::writes(&mut factory, i, index);
        if writes_index {
            // The index's last write before the load is no bound.
            return None;
        }
    }
    None
}

/// Appends the targets of the jump table at `table` (32-bit offsets from its start) to `out`:
/// its first `entries` entries, up to the first that points outside the image's code
/// `[lo, hi)`, which no entry the jump uses can do. What follows the table in memory may add
/// targets that are none (the window they fall in is then kept: harmless). None if there are
/// more than `TABLE_MAX`.
fn table_targets(table: u64, entries: u64, lo: u64, hi: u64, out: &mut Vec<u64>) -> Option<()> {
    for j in 0..entries {
        let Ok(entry) = super::uaccess::slice(table + 4 * j, 4) else { return Some(()) };
        let rel = i32::from_le_bytes([entry[0], entry[1], entry[2], entry[3]]);
        let target = table.wrapping_add(rel as i64 as u64);
        if target < lo || target >= hi {
            return Some(());
        }
        out.push(target);
    }
    (entries < TABLE_MAX).then_some(())
}

/// Patches the window `[start, site + 2)` into padding and a `jmp` to a slot that replays it,
/// answers CPUID and jumps back to `site + 2`. True if patched (a slot was to be had).
fn patch(start: u64, site: u64) -> bool {
    if super::shared_files::overlaps(start, site + 2) {
        return false;
    }
    let len = (site + 2 - start) as usize;
    let Ok(old) = super::uaccess::slice(start, len as u64) else { return false };
    let Some(replay) = slot_table::replay_of(&old[..len - 2], start) else { return false };
    let mapped = |start, end| super::usermem::is_mapped(start, end);
    let Some(rel) = slot_table::window_call(&replay, site + 2, &mapped, Then::Cpuid { back: site + 2 }) else {
        return false;
    };
    let mut new = [0xccu8; MAX_WINDOW as usize + 2];
    let pad = len - JMP_LEN as usize;
    match pad {
        0 => {}
        1 => new[0] = 0x90,
        _ => new[..2].copy_from_slice(&[0xeb, (pad - 2) as u8]), // jmp to the `jmp`
    }
    new[pad] = 0xe9; // jmp rel32
    new[pad + 1..len].copy_from_slice(&rel.to_le_bytes());
    crate::arch::call_gate::write_code(start, &new[..len]);
    true
}

/// `[addr, addr + len)` of program memory to read: through the pool's alias where it has one.
fn readable(addr: u64, len: u64) -> Option<&'static [u8]> {
    match crate::arch::paging::pool_alias(addr, len) {
        // SAFETY: the alias maps the pool for good; the image was just loaded there.
        Some(p) => Some(unsafe { core::slice::from_raw_parts(p, len as usize) }),
        None => super::uaccess::slice(addr, len).ok(),
    }
}

/// Appends to `out` the address of every `0f a2` in `code` (loaded at `base`), in order: eight
/// bytes at a time, looking closer only at words holding an `a2`.
fn find(code: &[u8], base: u64, out: &mut Vec<u64>) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut check = |i: usize| {
        if code[i] == 0xa2 && i > 0 && code[i - 1] == 0x0f {
            out.push(base + i as u64 - 1);
        }
    };
    let words = code.len() / 8;
    for w in 0..words {
        let word = u64::from_le_bytes(code[w * 8..w * 8 + 8].try_into().unwrap_or_default());
        let x = word ^ (0xa2 * ONES);
        if x.wrapping_sub(ONES) & !x & HIGHS != 0 {
            (w * 8..w * 8 + 8).for_each(&mut check);
        }
    }
    (words * 8..code.len()).for_each(check);
}
