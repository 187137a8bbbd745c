//! Applies the function overrides the monitor chose (`hrt_abi::overrides`): each overridden
//! function of the program gets a `jmp rel32` to the kernel's implementation over its first
//! bytes, and each import is handed to the group that needs it. Done while the program's
//! segments are being loaded, before any of its code runs. All or nothing: if any entry cannot
//! be applied (the kernel lacks the function, it is out of a jump's reach), none is.

use hrt_abi::overrides::{self as abi, Entry};

/// The entries in the block the monitor placed (`BootInfo::overrides`).
fn entries(r: hrt_abi::Range) -> impl Iterator<Item = Entry> {
    let ptr = crate::mem::phys_to_virt(r.base) as *const u8;
    // SAFETY: the monitor placed the block there and reserved the range for good.
    let bytes = unsafe { core::slice::from_raw_parts(ptr, r.size as usize) };
    bytes.chunks_exact(core::mem::size_of::<Entry>()).map(|b| Entry {
        addr: u64::from_le_bytes(b[0..8].try_into().unwrap()),
        size: u32::from_le_bytes(b[8..12].try_into().unwrap()),
        index: u16::from_le_bytes(b[12..14].try_into().unwrap()),
        kind: b[14],
        group: b[15],
    })
}

/// The kernel's function for override `e`.
fn target(e: &Entry) -> Option<u64> {
    let group = abi::GROUPS.get(e.group as usize)?;
    let name = group.overrides.get(e.index as usize)?;
    match e.group {
        abi::OMP_GROUP => crate::omp::entry_point(name),
        _ => None,
    }
}

/// The `jmp rel32` from `site` to `to`, if in reach.
fn jump(site: u64, to: u64) -> Option<[u8; 5]> {
    let rel = i32::try_from(to as i64 - (site as i64 + 5)).ok()?;
    let r = rel.to_le_bytes();
    Some([0xe9, r[0], r[1], r[2], r[3]])
}

/// Applies the overrides to the program loaded `bias` bytes above its link addresses, whose
/// loaded span is `[lo, hi)`. Returns how many functions now jump into the kernel.
pub fn apply(boot: &hrt_abi::BootInfo, bias: u64, lo: u64, hi: u64) -> Result<usize, &'static str> {
    if boot.overrides.size == 0 {
        return Ok(0);
    }
    // Check everything first.
    for e in entries(boot.overrides) {
        let site = bias.wrapping_add(e.addr);
        if site < lo || site.saturating_add(e.size as u64) > hi {
            return Err("an override lies outside the program");
        }
        if e.kind == abi::KIND_OVERRIDE {
            let to = target(&e).ok_or("an override names a function the kernel does not have")?;
            if e.size < abi::PATCH_LEN || jump(site, to).is_none() {
                return Err("an overridden function is out of the kernel's reach");
            }
        }
    }
    let mut count = 0;
    for e in entries(boot.overrides) {
        let site = bias + e.addr;
        match e.kind {
            abi::KIND_OVERRIDE => {
                let code = jump(site, target(&e).unwrap_or(0)).unwrap_or([0xcc; 5]);
                // SAFETY: inside the program's freshly copied segments (checked above), which
                // nothing runs yet.
                unsafe { core::ptr::copy_nonoverlapping(code.as_ptr(), site as *mut u8, code.len()) };
                count += 1;
            }
            abi::KIND_IMPORT if e.group == abi::OMP_GROUP => crate::omp::set_import(e.index as usize, site),
            _ => {}
        }
    }
    Ok(count)
}
