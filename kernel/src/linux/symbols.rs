//! Where the program's functions are: the extents from its static symbol table, loaded once
//! with the program, or from unwind tables (`eh_frame`), so that code scans (`rewrite`) can
//! look at exactly one function.

use alloc::vec::Vec;

use crate::sync::SpinLock;

/// `(start, end)` of every function, sorted by start, at their loaded addresses.
static FUNCTIONS: SpinLock<Vec<(u64, u64)>> = SpinLock::new(Vec::new());

/// Records the functions of the ELF file `image`, loaded `bias` bytes above its link addresses.
pub fn load(image: &[u8], bias: u64) {
    let Some(elf) = super::elf::Elf::parse(image) else {
        return;
    };
    let mut funcs: Vec<(u64, u64)> = elf.functions().map(|(start, size)| (start + bias, start + bias + size)).collect();
    funcs.sort_unstable();
    funcs.dedup();
    FUNCTIONS.lock().extend(funcs);
}

/// Forgets the functions in `[start, end)`, unmapped or replaced: code the program puts there
/// later is not theirs, and a rewrite must not take their extents for its (it did until stop
/// 98). Those starting in the range, and the one before it if it reaches in; a look-up
/// costs a binary search where none does (most unmaps).
pub fn forget(start: u64, end: u64) {
    let mut funcs = FUNCTIONS.lock();
    let first = funcs.partition_point(|&(s, _)| s < start);
    let past = funcs.partition_point(|&(s, _)| s < end);
    let from = match first.checked_sub(1) {
        Some(before) if funcs[before].1 > start => before,
        _ => first,
    };
    if from < past {
        funcs.drain(from..past);
    }
}

/// Forgets every function (execve: the old image is gone).
pub fn clear() {
    FUNCTIONS.lock().clear();
}

/// The extent of the function holding `addr`: from the program's symbol table, else from the
/// unwind table of the object holding it (a shared library, a stripped program).
pub fn function_at(addr: u64) -> Option<(u64, u64)> {
    from_symbols(addr).or_else(|| super::eh_frame::function_at(addr))
}

fn from_symbols(addr: u64) -> Option<(u64, u64)> {
    let funcs = FUNCTIONS.lock();
    let i = funcs.partition_point(|&(start, _)| start <= addr);
    let (start, end) = *funcs.get(i.checked_sub(1)?)?;
    (addr < end).then_some((start, end))
}
