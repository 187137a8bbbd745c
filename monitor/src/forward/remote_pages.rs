//! Which pages another VM's program has mapped, for cross-memory attach: that VM's RAM
//! directory names the host addresses of its kernel's page maps (`hrt_abi::UserMap`: one bit
//! per 4 KiB page of the program's pool, set while mapped; others mark pages without
//! PROT_WRITE and mapped pages without PROT_READ), and the forwarder reads the bits of the
//! pages a call names from the other process with the host's process_vm_readv (one call for the
//! map of mapped pages and the one a read or a write must not find marked). As Linux's (which
//! pins the pages without FOLL_FORCE), a read needs PROT_READ, a write PROT_WRITE, and
//! PROT_NONE pages count as not mapped. Nothing is kept: the
//! other program may change its mappings at any time, and a copy that follows the look-up
//! copies what was mapped then, as a Linux copy racing with the other's munmap could.
//!
//! The directory comes from another process: a directory whose maps cannot be read in full
//! counts as nothing mapped (EFAULT), and only host system calls ever touch its addresses.

use super::cross_memory::{read_remote, PageMaps};
use super::errno::{Errno, SysResult};
use super::guest_mem::{mapped_len_in, unmarked_len_in};

const PAGE: u64 = hrt_abi::USER_MAP_PAGE;

/// How many bytes from guest address `addr` (at most `len`) lie in pages the program of
/// process `pid` (whose page maps are `maps`) has mapped readable, or for a `write` writable:
/// the part a copy there makes before it faults.
pub(super) fn usable_len(pid: i32, maps: &PageMaps, addr: u64, len: u64, write: bool) -> SysResult<u64> {
    if len == 0 || maps.pages == 0 || addr < maps.base {
        return Ok(0);
    }
    let first_page = (addr - maps.base) / PAGE;
    let last_page = (addr.saturating_add(len) - maps.base).div_ceil(PAGE).min(maps.pages);
    if first_page >= last_page {
        return Ok(0);
    }
    // Whole bytes of the bitmaps: [lo, hi).
    let (lo, hi) = (first_page / 8, last_page.div_ceil(8));
    let n = (hi - lo) as usize;
    // The pages a copy may not find marked: read-only ones for a write, unreadable for a read.
    let refused = if write { maps.read_only } else { maps.unreadable };
    let (Some(mapped_at), Some(refused_at)) = (maps.mapped.checked_add(lo), refused.checked_add(lo)) else {
        return Ok(0);
    };
    let mut mapped = vec![0u8; n];
    let mut marked = vec![0u8; n];
    match read_remote(pid, &mut [(mapped.as_mut_ptr(), n, mapped_at), (marked.as_mut_ptr(), n, refused_at)]) {
        Ok(got) if got == 2 * n => {}
        Ok(_) | Err(Errno(libc::EFAULT)) => return Ok(0),
        Err(e) => return Err(e),
    }
    // The bytes read as a page map of their own, starting at page lo * 8.
    let view = hrt_abi::UserMap {
        bitmap: 0,
        bytes: n as u64,
        base: maps.base + lo * 8 * PAGE,
        pages: maps.pages - lo * 8,
        read_only: 0,
        unreadable: 0,
    };
    // SAFETY: both buffers hold `n` bytes, the bitmap's size in `view`.
    let usable = unsafe { mapped_len_in(mapped.as_ptr(), &view, addr, len) };
    // SAFETY: as above.
    Ok(usable.min(unsafe { unmarked_len_in(marked.as_ptr(), &view, addr, usable) }))
}
