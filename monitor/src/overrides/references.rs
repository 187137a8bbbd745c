//! Which library functions the program itself uses: direct references from code outside the
//! library (a `call`/`jmp rel32`, or a RIP-relative or absolute 32-bit address, which is how
//! x86-64 code names a function) to a library function the group does not override. The
//! library's own code is left out: what it references is either replaced with it or reached
//! only through a function the program would have to use itself.
//!
//! The scan looks at the 32-bit fields that follow the opcodes which name a function: `call`
//! and `jmp` (E8, E9), RIP-relative `lea` and `mov` (8D, 8B with ModRM 00xxx101), and the
//! absolute immediates of `mov r32, imm32` and `push imm32` (a non-PIE program's function
//! pointers; a PIE's code has none, and its small constants would otherwise look like the
//! addresses of its first functions). Only global functions count: a local one (a `.part.0`
//! clone) is named by its own object's code alone. It looks at every byte offset rather than decoding instructions: a false match
//! can only make the planner more careful (it keeps the program's libgomp), never less.
//! References held in data (function pointers in tables) are not seen.

use std::collections::HashMap;

use hrt_abi::overrides::Group;

use super::symbols::Table;

/// The first library function, not overridden, that code outside the library references.
pub fn first_unprovided_use(
    table: &Table,
    group: &Group,
    overridden: &std::collections::HashSet<u64>,
) -> Option<String> {
    let targets: HashMap<u64, &str> = table
        .functions
        .iter()
        .filter(|f| f.in_library && !f.local && !overridden.contains(&f.addr))
        .filter(|f| group.entry_prefixes.iter().any(|p| f.name.starts_with(p)))
        .map(|f| (f.addr, f.name.as_str()))
        .collect();
    let (lo, hi) = (targets.keys().min().copied()?, targets.keys().max().copied()?);
    // The bytes that may come right before such a field: most code bytes are none of them, and
    // this test first is what keeps a scan of a static program's ~700 KiB of code at ~0.5 ms
    // (~3 ms when every offset was decoded as a field).
    let mut may_precede = [false; 256];
    for op in 0..=255u8 {
        may_precede[op as usize] = op == 0xe8
            || op == 0xe9
            || op & 0xc7 == 0x05
            || (!table.pie && ((0xb8..=0xbf).contains(&op) || op == 0x68));
    }
    for f in table.functions.iter().filter(|f| !f.in_library) {
        let Some(code) = table.code_of(f) else { continue };
        for i in 1..code.len().saturating_sub(3) {
            let op = code[i - 1];
            if !may_precede[op as usize] {
                continue;
            }
            let v = i32::from_le_bytes([code[i], code[i + 1], code[i + 2], code[i + 3]]);
            let before = if i >= 2 { code[i - 2] } else { 0 };
            let rip_relative = op == 0xe8 || op == 0xe9 || (op & 0xc7 == 0x05 && (before == 0x8d || before == 0x8b));
            let absolute = !table.pie && ((0xb8..=0xbf).contains(&op) || op == 0x68);
            let t = if rip_relative {
                (f.addr + i as u64 + 4).wrapping_add(v as i64 as u64)
            } else if absolute {
                v as u32 as u64
            } else {
                continue;
            };
            if (lo..=hi).contains(&t) {
                if let Some(name) = targets.get(&t) {
                    return Some(format!("{name} (from {})", f.name));
                }
            }
        }
    }
    None
}
