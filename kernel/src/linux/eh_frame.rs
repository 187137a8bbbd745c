//! Function extents from an ELF object's unwind table (`.eh_frame_hdr`, the PT_GNU_EH_FRAME
//! segment): every function compiled with unwind information (all of glibc and libgomp, and
//! stripped programs) has an FDE giving its start and length, and the header's sorted table
//! finds it by binary search. `rewrite` needs one function's extent to check a system-call
//! site's surroundings; the program's own symbol table gives it for the program, this gives it
//! for the shared libraries ld.so maps and for programs without a symbol table.
//!
//! Everything is read from the program's memory through `uaccess` (it may be changed or
//! unmapped at any time): a malformed table gives no extent, never a fault.

use alloc::vec::Vec;

use super::uaccess;
use crate::sync::SpinLock;

/// A loaded ELF object: its mapped span and its `.eh_frame_hdr`.
#[derive(Clone, Copy)]
struct Object {
    start: u64,
    end: u64,
    hdr: u64,
}

static OBJECTS: SpinLock<Vec<Object>> = SpinLock::new(Vec::new());

const PT_LOAD: u32 = 1;
const PT_GNU_EH_FRAME: u32 = 0x6474_e550;

/// Registers the ELF object mapped at `[start, start + len)` (an ELF header at `start`, as ld.so
/// maps a library from file offset 0) if it has an unwind table inside that span.
pub fn add_mapped(start: u64, len: u64) {
    if let Some(hdr) = find_hdr(start, len) {
        add(start, start + len, hdr);
    }
}

/// Registers an object whose unwind table the loader found (`hdr`, at its loaded address).
pub fn add(start: u64, end: u64, hdr: u64) {
    let mut objects = OBJECTS.lock();
    objects.retain(|o| o.start != start);
    objects.push(Object { start, end, hdr });
}

/// Forgets the objects whose start lies in `[start, end)` (unmapped).
pub fn forget(start: u64, end: u64) {
    let mut objects = OBJECTS.lock();
    if !objects.is_empty() {
        objects.retain(|o| !(start..end).contains(&o.start));
    }
}

/// The `.eh_frame_hdr` of the ELF image at `start` (loaded `start - first segment` above its
/// link addresses), if it lies inside `[start, start + len)`.
fn find_hdr(start: u64, len: u64) -> Option<u64> {
    let ident: [u8; 4] = uaccess::read(start).ok()?;
    if ident != *b"\x7fELF" || uaccess::read::<u8>(start + 4).ok()? != 2 {
        return None;
    }
    let phoff: u64 = uaccess::read(start + 32).ok()?;
    let phentsize: u16 = uaccess::read(start + 54).ok()?;
    let phnum: u16 = uaccess::read(start + 56).ok()?;
    if phentsize != 56 || phoff.checked_add(56 * phnum as u64)? > len.min(1 << 20) {
        return None;
    }
    let (mut first_load, mut eh) = (None, None);
    for i in 0..phnum as u64 {
        let ph = start + phoff + i * 56;
        let kind: u32 = uaccess::read(ph).ok()?;
        let vaddr: u64 = uaccess::read(ph + 16).ok()?;
        match kind {
            PT_LOAD if first_load.is_none() => first_load = Some(vaddr & !0xfff),
            PT_GNU_EH_FRAME => eh = Some(vaddr),
            _ => {}
        }
    }
    let bias = start.checked_sub(first_load?)?;
    let hdr = bias.checked_add(eh?)?;
    (hdr >= start && hdr < start + len).then_some(hdr)
}

/// The extent `[start, end)` of the function holding `addr`, from the unwind table of the
/// object that holds it.
pub fn function_at(addr: u64) -> Option<(u64, u64)> {
    let object = OBJECTS.lock().iter().copied().find(|o| (o.start..o.end).contains(&addr))?;
    lookup(object.hdr, addr).filter(|&(s, e)| s >= object.start && e <= object.end)
}

/// DW_EH_PE encodings the tables use.
const PCREL_SDATA4: u8 = 0x1b;
const UDATA4: u8 = 0x03;
const DATAREL_SDATA4: u8 = 0x3b;

/// Binary search of the header's table (the encodings every toolchain emits; others give
/// None), then the FDE's length.
fn lookup(hdr: u64, addr: u64) -> Option<(u64, u64)> {
    let head: [u8; 4] = uaccess::read(hdr).ok()?;
    if head != [1, PCREL_SDATA4, UDATA4, DATAREL_SDATA4] {
        return None;
    }
    let count: u32 = uaccess::read(hdr + 8).ok()?;
    let table = hdr + 12;
    let entry = |i: u64| -> Option<(u64, u64)> {
        let pair: [i32; 2] = uaccess::read(table + i * 8).ok()?;
        Some((hdr.wrapping_add(pair[0] as i64 as u64), hdr.wrapping_add(pair[1] as i64 as u64)))
    };
    // The last entry whose start is <= addr.
    let (mut lo, mut hi) = (0u64, count as u64);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if entry(mid)?.0 <= addr {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let (start, fde) = entry(lo.checked_sub(1)?)?;
    let len = fde_range(fde)?;
    let end = start.checked_add(len)?;
    // A signal frame's entry (augmentation 'S') starts a byte before its code, since unwinders
    // look up a return address minus one: glibc's `__restore_rt`, whose `mov $15, %rax;
    // syscall` decoded from there was garbage and kept SYSCALL.
    let start = if signal_frame(fde) == Some(true) { start + 1 } else { start };
    if addr == end && lo < count as u64 {
        // A `syscall` right where its function's entry ends, up to the next entry: glibc's
        // clone and clone3 end their unwind information before it (the child must not unwind
        // into the parent's frames), so pthread_create and posix_spawn in libc.so kept
        // SYSCALL. The tail joins the function (the caller checks all of it).
        let (next, _) = entry(lo)?;
        return (next > end && next - end <= UNWOUND_TAIL_MAX).then_some((start, next));
    }
    (start <= addr && addr < end).then_some((start, end))
}

/// The longest stretch after an entry's end, up to the next entry, that a site at that end
/// takes into its function (clone's: the `syscall`, a test, two branches and a `ret`).
const UNWOUND_TAIL_MAX: u64 = 32;

/// Whether the CIE of the FDE at `fde` marks a signal frame (augmentation 'S').
fn signal_frame(fde: u64) -> Option<bool> {
    let cie_offset: u32 = uaccess::read(fde + 4).ok()?;
    let cie = (fde + 4).checked_sub(cie_offset as u64)?;
    let aug = uaccess::read_cstr(cie + 9, 16).ok()?;
    Some(aug.first() == Some(&b'z') && aug.contains(&b'S'))
}

/// The `pc_range` of the FDE at `fde`, in the encoding its CIE gives (augmentation 'R').
fn fde_range(fde: u64) -> Option<u64> {
    let length: u32 = uaccess::read(fde).ok()?;
    if length == 0 || length == u32::MAX {
        return None;
    }
    let cie_offset: u32 = uaccess::read(fde + 4).ok()?;
    let cie = (fde + 4).checked_sub(cie_offset as u64)?;
    let size = pointer_size(fde_encoding(cie)?)?;
    let at = fde + 8 + size;
    Some(match size {
        2 => uaccess::read::<u16>(at).ok()? as u64,
        4 => uaccess::read::<u32>(at).ok()? as u64,
        _ => uaccess::read::<u64>(at).ok()?,
    })
}

/// Bytes of a pointer in encoding `enc` (the fixed-size formats only).
fn pointer_size(enc: u8) -> Option<u64> {
    match enc & 0x0f {
        0x00 | 0x04 | 0x0c => Some(8),
        0x02 | 0x0a => Some(2),
        0x03 | 0x0b => Some(4),
        _ => None,
    }
}

/// The FDE pointer encoding of the CIE at `cie` (its 'R' augmentation; absolute pointers if it
/// has none).
fn fde_encoding(cie: u64) -> Option<u8> {
    let version: u8 = uaccess::read(cie + 8).ok()?;
    let aug = uaccess::read_cstr(cie + 9, 16).ok()?;
    if aug.first() != Some(&b'z') {
        return Some(0);
    }
    let mut at = cie + 9 + aug.len() as u64 + 1;
    at = skip_leb(at)?; // code alignment
    at = skip_leb(at)?; // data alignment
    at = if version == 1 { at + 1 } else { skip_leb(at)? }; // return address register
    at = skip_leb(at)?; // augmentation data length
    for &c in &aug[1..] {
        match c {
            b'R' => return uaccess::read::<u8>(at).ok(),
            b'P' => {
                let enc: u8 = uaccess::read(at).ok()?;
                at += 1 + pointer_size(enc)?;
            }
            b'L' => at += 1,
            b'S' | b'B' => {}
            _ => return None,
        }
    }
    Some(0)
}

/// The address after the LEB128 number at `at`.
fn skip_leb(mut at: u64) -> Option<u64> {
    for _ in 0..10 {
        let b: u8 = uaccess::read(at).ok()?;
        at += 1;
        if b & 0x80 == 0 {
            return Some(at);
        }
    }
    None
}

/// The loaded `.eh_frame_hdr` of an ELF image in kernel memory (`image`, loaded `bias` bytes
/// above its link addresses), for the loader's objects.
pub fn image_hdr(phdrs: impl Iterator<Item = (u32, u64)>, bias: u64) -> Option<u64> {
    phdrs.filter(|&(kind, _)| kind == PT_GNU_EH_FRAME).map(|(_, vaddr)| bias + vaddr).next()
}
