//! Applies the function overrides the monitor chose (`hrt_abi::overrides`): each overridden
//! function of the program gets a jump to the kernel's implementation over its first bytes
//! (see `plan`), and each import is handed to the group that needs it. Done while the program's
//! segments are being loaded, before any of its code runs. All or nothing: if any entry cannot
//! be applied (the kernel lacks the function, no jump fits), none is.

use alloc::vec;
use alloc::vec::Vec;

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

/// Bytes of `jmp *0(%rip)` followed by the 8-byte target: reaches anywhere.
const FAR_LEN: u64 = 14;

fn far_jump(to: u64) -> Vec<u8> {
    let mut code = vec![0xff, 0x25, 0, 0, 0, 0];
    code.extend_from_slice(&to.to_le_bytes());
    code
}

/// The code to write: (address, bytes), for every override. A function in reach of the kernel
/// (the program lies within 2 GiB of it, as a non-PIE program does) gets a `jmp rel32`; one
/// out of reach gets a far jump if it has room, and the rest of its body (dead once it is
/// overridden) holds far jumps for the small functions out of reach, which `jmp rel32` there.
fn plan(boot: &hrt_abi::BootInfo, bias: u64, lo: u64, hi: u64) -> Result<Vec<(u64, Vec<u8>)>, &'static str> {
    let mut writes = Vec::new();
    let mut spare: Vec<(u64, u64)> = Vec::new();
    let mut small: Vec<(u64, u64)> = Vec::new();
    for e in entries(boot.overrides) {
        let site = bias.wrapping_add(e.addr);
        if site < lo || site.saturating_add(e.size as u64) > hi || e.size < abi::PATCH_LEN {
            return Err("an override lies outside the program");
        }
        if e.kind != abi::KIND_OVERRIDE {
            continue;
        }
        let to = target(&e).ok_or("an override names a function the kernel does not have")?;
        if let Some(code) = jump(site, to) {
            writes.push((site, code.to_vec()));
        } else if e.size as u64 >= FAR_LEN {
            writes.push((site, far_jump(to)));
            if e.size as u64 >= 2 * FAR_LEN {
                spare.push((site + FAR_LEN, site + e.size as u64));
            }
        } else {
            small.push((site, to));
        }
    }
    for (site, to) in small {
        let slot = spare.iter_mut().find(|(a, b)| *b - *a >= FAR_LEN && jump(site, *a).is_some());
        let Some(slot) = slot else {
            return Err("an overridden function is out of the kernel's reach");
        };
        let at = slot.0;
        slot.0 += FAR_LEN;
        writes.push((at, far_jump(to)));
        writes.push((site, jump(site, at).unwrap_or([0xcc; 5]).to_vec()));
    }
    Ok(writes)
}

/// Applies the overrides to the program loaded `bias` bytes above its link addresses, whose
/// loaded span is `[lo, hi)`. Returns how many functions now jump into the kernel.
pub fn apply(boot: &hrt_abi::BootInfo, bias: u64, lo: u64, hi: u64) -> Result<usize, &'static str> {
    if boot.overrides.size == 0 {
        return Ok(0);
    }
    let writes = plan(boot, bias, lo, hi)?;
    for (at, code) in &writes {
        // SAFETY: inside the program's freshly copied segments (checked by `plan`), which
        // nothing runs yet.
        unsafe { core::ptr::copy_nonoverlapping(code.as_ptr(), *at as *mut u8, code.len()) };
    }
    let mut count = 0;
    for e in entries(boot.overrides) {
        match e.kind {
            abi::KIND_OVERRIDE => count += 1,
            abi::KIND_IMPORT if e.group == abi::OMP_GROUP => crate::omp::set_import(e.index as usize, bias + e.addr),
            _ => {}
        }
    }
    Ok(count)
}
