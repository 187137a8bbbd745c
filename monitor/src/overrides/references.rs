//! Which library functions the program itself uses: direct references from code outside the
//! library (a `call`/`jmp rel32`, or a RIP-relative or absolute 32-bit address, which is how
//! x86-64 code names a function) to a library function the group does not override. The
//! library's own code is left out: what it references is either replaced with it or reached
//! only through a function the program would have to use itself.
//!
//! The scan looks at every byte offset rather than decoding instructions: a false match can
//! only make the planner more careful (it keeps the program's libgomp), never less.
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
        .filter(|f| f.in_library && !overridden.contains(&f.addr))
        .filter(|f| group.entry_prefixes.iter().any(|p| f.name.starts_with(p)))
        .map(|f| (f.addr, f.name.as_str()))
        .collect();
    let (lo, hi) = (targets.keys().min().copied()?, targets.keys().max().copied()?);
    for f in table.functions.iter().filter(|f| !f.in_library) {
        let Some(code) = table.code_of(f) else { continue };
        for (i, w) in code.windows(4).enumerate() {
            let v = i32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            let relative = (f.addr + i as u64 + 4).wrapping_add(v as i64 as u64);
            let absolute = v as u32 as u64;
            for t in [relative, absolute] {
                if (lo..=hi).contains(&t) {
                    if let Some(name) = targets.get(&t) {
                        return Some(format!("{name} (from {})", f.name));
                    }
                }
            }
        }
    }
    None
}
