//! Guest memory as the forwarder sees it, and checked accessors over it.
//!
//! Every guest address is guest-physical (equal to the program's virtual address). Nothing here
//! forms a Rust reference to guest memory: the guest may change it concurrently, so values are
//! copied in and out through raw pointers, and host system calls get raw pointers into it. The
//! copies survive a page that vanished under them (a shared file shrunk by another process:
//! `guest_copy`) and answer EFAULT, as Linux does.

use std::ffi::CString;

use super::errno::{Errno, SysResult};
use super::guest_copy::copy;

/// Guest memory as the forwarder sees it. Implemented by the monitor's GuestRam; tests use
/// [`VecMemory`].
pub trait GuestMemory: Sync {
    /// `[addr, addr+len)` as host memory, or None if any part is outside guest RAM.
    fn host_range(&self, addr: u64, len: u64) -> Option<*mut u8>;

    /// How many bytes from `addr` (at most `len`) lie in pages the program has mapped: `len` if
    /// all of them, else the distance to the first unmapped page (0 if `addr`'s page is not
    /// mapped). Where Linux would fault, this is short.
    fn mapped_len(&self, addr: u64, len: u64) -> u64;

    /// Like `mapped_len`, for the host writing there: the prefix in mapped pages that are not
    /// read-only (Linux's copies to the program fault at a page without PROT_WRITE).
    fn writable_len(&self, addr: u64, len: u64) -> u64 {
        self.mapped_len(addr, len)
    }
}

/// The length of the mapped prefix of `[addr, addr+len)` by the program's page map
/// (`hrt_abi::UserMap`): `bits` is the host address of the bitmap's `map.bytes` bytes.
///
/// # Safety
/// `bits` must point to `map.bytes` readable bytes (guest RAM the kernel may change meanwhile:
/// they are read with volatile loads, never through a reference).
pub unsafe fn mapped_len_in(bits: *const u8, map: &hrt_abi::UserMap, addr: u64, len: u64) -> u64 {
    if len == 0 || addr < map.base {
        return 0;
    }
    // SAFETY: the caller's contract.
    unsafe { prefix_len(bits, map, addr, len, false) }
}

/// The length of the prefix of `[addr, addr+len)` (at most `len`) that has no page marked in
/// the read-only bitmap `bits` (same shape as the page map `map`).
///
/// # Safety
/// As `mapped_len_in`.
pub unsafe fn unmarked_len_in(bits: *const u8, map: &hrt_abi::UserMap, addr: u64, len: u64) -> u64 {
    if len == 0 || addr < map.base {
        return len;
    }
    // SAFETY: the caller's contract.
    unsafe { prefix_len(bits, map, addr, len, true) }
}

/// The prefix of `[addr, addr+len)` (`addr >= map.base`) up to the first page whose bit is
/// set (`stop_on_set`) or clear; pages past the map stop it too unless `stop_on_set`.
///
/// # Safety
/// As `mapped_len_in`.
unsafe fn prefix_len(bits: *const u8, map: &hrt_abi::UserMap, addr: u64, len: u64, stop_on_set: bool) -> u64 {
    const PAGE: u64 = hrt_abi::USER_MAP_PAGE;
    let pages = map.pages.min(map.bytes.saturating_mul(8));
    let end = addr.saturating_add(len);
    let first = (addr - map.base) / PAGE;
    let last = (end - map.base).div_ceil(PAGE).min(pages);
    let skip = if stop_on_set { 0x00 } else { 0xff };
    let mut page = first;
    while page < last {
        // SAFETY: page < pages <= map.bytes * 8, so the byte is inside the bitmap.
        let byte = unsafe { std::ptr::read_volatile(bits.add((page / 8) as usize)) };
        if byte == skip && page.is_multiple_of(8) && page + 8 <= last {
            page += 8;
            continue;
        }
        if (byte & (1 << (page % 8)) != 0) == stop_on_set {
            break;
        }
        page += 1;
    }
    if stop_on_set && page >= last {
        return len;
    }
    (map.base + page * PAGE).saturating_sub(addr).min(len)
}

/// The first guest page is never a program buffer (Linux never maps page 0 for a program:
/// `vm.mmap_min_addr`), but it is guest RAM. A pointer into it is the program's NULL: EFAULT,
/// as on Linux, instead of reading or writing the kernel's low memory.
pub const NULL_GUARD: u64 = 4096;

/// The end of Linux's x86-64 user address space (TASK_SIZE_MAX with 4-level paging): a range
/// ending above it fails `access_ok`, EFAULT before anything is copied.
pub const USER_END: u64 = (1 << 47) - 4096;

/// Linux's PATH_MAX, terminating NUL included.
pub const PATH_MAX: usize = 4096;

/// Checked access to guest memory for one forwarded call.
#[derive(Clone, Copy)]
pub struct Guest<'a> {
    mem: &'a dyn GuestMemory,
}

impl<'a> Guest<'a> {
    pub fn new(mem: &'a dyn GuestMemory) -> Guest<'a> {
        Guest { mem }
    }

    /// `[addr, addr+len)` as a host pointer the host only reads through. An empty range is
    /// always valid (Linux accepts any pointer with a zero length) and gives a dangling,
    /// non-null pointer the host never touches.
    pub fn range(&self, addr: u64, len: u64) -> SysResult<*mut u8> {
        self.checked(addr, len, false)
    }

    /// `[addr, addr+len)` as a host pointer the host writes through: every page must be mapped
    /// and writable (EFAULT for a read-only one, as Linux's copy to the program gives).
    pub fn range_mut(&self, addr: u64, len: u64) -> SysResult<*mut u8> {
        self.checked(addr, len, true)
    }

    fn checked(&self, addr: u64, len: u64, write: bool) -> SysResult<*mut u8> {
        if len == 0 {
            return Ok(std::ptr::NonNull::<u64>::dangling().as_ptr() as *mut u8);
        }
        if addr < NULL_GUARD || addr.checked_add(len).is_none() || len > isize::MAX as u64 {
            return Err(Errno::EFAULT);
        }
        let p = self.mem.host_range(addr, len).ok_or(Errno::EFAULT)?;
        let usable = if write { self.mem.writable_len(addr, len) } else { self.mem.mapped_len(addr, len) };
        if usable != len {
            return Err(Errno::EFAULT);
        }
        Ok(p)
    }

    /// How much of `[addr, addr+len)` a transfer can use before it would fault: the mapped
    /// prefix (EFAULT if it is empty). A `read` or `write` with a length running past the
    /// program's mappings moves that many bytes, as Linux's copies stop at the first fault;
    /// a range past the user address space (Linux's `access_ok`) is EFAULT at once.
    pub fn usable_len(&self, addr: u64, len: u64) -> SysResult<u64> {
        self.usable(addr, len, false)
    }

    /// `usable_len` for a transfer into the program (a `read`): the prefix of mapped, writable
    /// pages.
    pub fn usable_len_mut(&self, addr: u64, len: u64) -> SysResult<u64> {
        self.usable(addr, len, true)
    }

    fn usable(&self, addr: u64, len: u64, write: bool) -> SysResult<u64> {
        if len == 0 {
            return Ok(0);
        }
        if addr.checked_add(len).is_none_or(|end| end > USER_END) {
            return Err(Errno::EFAULT);
        }
        let n = if write { self.mem.writable_len(addr, len) } else { self.mem.mapped_len(addr, len) };
        match n {
            0 => Err(Errno::EFAULT),
            n => Ok(n),
        }
    }

    /// Reads a plain-data value (any bit pattern valid for `T`) from guest memory.
    pub fn read<T: Copy>(&self, addr: u64) -> SysResult<T> {
        let size = std::mem::size_of::<T>();
        let p = self.range(addr, size as u64)?;
        let mut v = std::mem::MaybeUninit::<T>::uninit();
        // SAFETY: `p` covers size_of::<T>() bytes of mapped guest RAM, `v` is as large.
        unsafe { copy(v.as_mut_ptr() as *mut u8, p, size) }.map_err(|_| Errno::EFAULT)?;
        // SAFETY: all its bytes were copied; T is plain data (callers use integers and C
        // structs of integers and pointers), so every bit pattern is a valid T.
        Ok(unsafe { v.assume_init() })
    }

    /// Writes a plain-data value to guest memory.
    pub fn write<T: Copy>(&self, addr: u64, value: &T) -> SysResult<()> {
        let size = std::mem::size_of::<T>();
        let p = self.range_mut(addr, size as u64)?;
        // SAFETY: `p` covers size_of::<T>() bytes of mapped guest RAM; `value` is a host value.
        unsafe { copy(p, value as *const T as *const u8, size) }.map_err(|_| Errno::EFAULT)
    }

    /// Copies `len` bytes out of guest memory.
    pub fn read_bytes(&self, addr: u64, len: u64) -> SysResult<Vec<u8>> {
        let p = self.range(addr, len)?;
        let mut v = vec![0u8; len as usize];
        // SAFETY: `p` covers `len` bytes of mapped guest RAM; `v` is a separate host buffer.
        unsafe { copy(v.as_mut_ptr(), p, v.len()) }.map_err(|_| Errno::EFAULT)?;
        Ok(v)
    }

    /// Copies `data` into guest memory.
    pub fn write_bytes(&self, addr: u64, data: &[u8]) -> SysResult<()> {
        let p = self.range_mut(addr, data.len() as u64)?;
        // SAFETY: `p` covers data.len() bytes of mapped guest RAM; `data` is a host buffer.
        unsafe { copy(p, data.as_ptr(), data.len()) }.map_err(|_| Errno::EFAULT)
    }

    /// Reads a NUL-terminated string of at most `PATH_MAX` bytes (NUL included), the way Linux's
    /// `getname` does: EFAULT if it runs out of guest memory first, ENAMETOOLONG if no NUL within
    /// the limit. Reads page by page, so a string that ends just before the end of memory is fine.
    pub fn read_path(&self, addr: u64) -> SysResult<CString> {
        self.read_cstr(addr, PATH_MAX)
    }

    /// Reads a NUL-terminated string of at most `max` bytes (NUL included), as `read_path`.
    /// Copies it out in small pieces, stopping at the NUL: a path is mostly far shorter than
    /// the page it lies in (copying the rest of the page took ~1.3 us of a ~10 us `stat`).
    pub fn read_cstr(&self, addr: u64, max: usize) -> SysResult<CString> {
        const PIECE: usize = 256;
        let mut out = Vec::with_capacity(PIECE);
        let mut at = addr;
        while out.len() < max {
            // The rest of the current 4 KiB page, limited to what the length cap still allows.
            let page_left = 4096 - (at & 4095);
            let want = page_left.min((max - out.len()) as u64);
            let Ok(p) = self.range(at, want) else {
                // Memory may end inside this page: take the bytes that are there, one by one.
                let chunk = self.read_prefix(at, want);
                if let Some(nul) = chunk.iter().position(|&b| b == 0) {
                    out.extend_from_slice(&chunk[..nul]);
                    return CString::new(out).map_err(|_| Errno::EFAULT);
                }
                if chunk.is_empty() {
                    return Err(Errno::EFAULT);
                }
                out.extend_from_slice(&chunk);
                at = at.checked_add(chunk.len() as u64).ok_or(Errno::EFAULT)?;
                continue;
            };
            let mut piece = [0u8; PIECE];
            let mut off = 0usize;
            while (off as u64) < want {
                let n = (want as usize - off).min(PIECE);
                // SAFETY: `p` covers `want` bytes of mapped guest RAM, of which [off, off + n)
                // is a part; `piece` is a separate host buffer of at least `n` bytes.
                unsafe { copy(piece.as_mut_ptr(), p.add(off), n) }.map_err(|_| Errno::EFAULT)?;
                if let Some(nul) = piece[..n].iter().position(|&b| b == 0) {
                    out.extend_from_slice(&piece[..nul]);
                    // No interior NUL: `out` stops at the first one.
                    return CString::new(out).map_err(|_| Errno::EFAULT);
                }
                out.extend_from_slice(&piece[..n]);
                off += n;
            }
            at = at.checked_add(want).ok_or(Errno::EFAULT)?;
        }
        Err(Errno::ENAMETOOLONG)
    }

    /// The readable bytes of `[addr, addr+len)` up to the first unreadable one.
    fn read_prefix(&self, addr: u64, len: u64) -> Vec<u8> {
        let mut v = Vec::new();
        for i in 0..len {
            match addr.checked_add(i).map(|a| self.read::<u8>(a)) {
                Some(Ok(b)) => v.push(b),
                _ => break,
            }
        }
        v
    }
}

/// Guest memory backed by a host buffer, guest address 0 at its start (for tests).
#[cfg(test)]
pub struct VecMemory {
    base: *mut u8,
    len: usize,
}

#[cfg(test)]
// SAFETY: the buffer lives as long as the VecMemory; accesses go through raw pointers.
unsafe impl Sync for VecMemory {}

#[cfg(test)]
impl VecMemory {
    pub fn new(len: usize) -> VecMemory {
        let buf = vec![0u8; len].into_boxed_slice();
        VecMemory { base: Box::into_raw(buf) as *mut u8, len }
    }

    pub fn len(&self) -> u64 {
        self.len as u64
    }

    pub fn put(&self, addr: u64, data: &[u8]) {
        let p = self.host_range(addr, data.len() as u64).expect("test address inside memory");
        // SAFETY: inside the buffer (checked).
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) };
    }

    pub fn get(&self, addr: u64, len: u64) -> Vec<u8> {
        let p = self.host_range(addr, len).expect("test address inside memory");
        let mut v = vec![0u8; len as usize];
        // SAFETY: inside the buffer (checked).
        unsafe { std::ptr::copy_nonoverlapping(p, v.as_mut_ptr(), v.len()) };
        v
    }
}

#[cfg(test)]
impl Drop for VecMemory {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` came from Box::into_raw of a boxed slice of this length.
        unsafe { drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.base, self.len))) };
    }
}

#[cfg(test)]
impl GuestMemory for VecMemory {
    fn host_range(&self, addr: u64, len: u64) -> Option<*mut u8> {
        let end = addr.checked_add(len)?;
        if end > self.len as u64 {
            return None;
        }
        // SAFETY: inside the buffer (checked).
        Some(unsafe { self.base.add(addr as usize) })
    }

    /// No page map: a range inside the buffer is mapped, any other not at all (tests of the
    /// page map use `mapped_len_in`).
    fn mapped_len(&self, addr: u64, len: u64) -> u64 {
        if addr.checked_add(len).is_some_and(|end| end <= self.len as u64) {
            len
        } else {
            0
        }
    }
}

#[cfg(test)]
mod page_map_tests {
    use super::mapped_len_in;
    use hrt_abi::UserMap;

    const BASE: u64 = 0x40_0000;
    const P: u64 = 4096;

    fn map(bits: &[u8]) -> UserMap {
        UserMap {
            bitmap: 0,
            bytes: bits.len() as u64,
            base: BASE,
            pages: bits.len() as u64 * 8,
            read_only: 0,
            unreadable: 0,
        }
    }

    fn len(bits: &[u8], addr: u64, n: u64) -> u64 {
        // SAFETY: `bits` holds map.bytes bytes.
        unsafe { mapped_len_in(bits.as_ptr(), &map(bits), addr, n) }
    }

    #[test]
    fn mapped_prefix_stops_at_the_first_unmapped_page() {
        // Pages 0..=9 mapped, 10 not, 11 mapped, the rest not.
        let bits = [0xff, 0b0000_1011, 0, 0];
        assert_eq!(len(&bits, BASE, 10 * P), 10 * P);
        assert_eq!(len(&bits, BASE + 100, u64::MAX), 10 * P - 100);
        assert_eq!(len(&bits, BASE + 10 * P, 1), 0);
        assert_eq!(len(&bits, BASE + 11 * P + 5, 2 * P), P - 5);
        assert_eq!(len(&bits, BASE - 1, 2), 0, "below the pool");
        assert_eq!(len(&bits, BASE + 32 * P, P), 0, "above the pool");
        assert_eq!(len(&bits, BASE + 9 * P, 0), 0);
    }

    #[test]
    fn the_unmarked_prefix_stops_at_the_first_read_only_page() {
        // Pages 10 and 40 read-only.
        let bits = [0, 0b0000_0100, 0, 0, 0, 0b0000_0001, 0, 0];
        let unmarked = |addr, n| unsafe { super::unmarked_len_in(bits.as_ptr(), &map(&bits), addr, n) };
        assert_eq!(unmarked(BASE, 10 * P), 10 * P);
        assert_eq!(unmarked(BASE + 100, 20 * P), 10 * P - 100);
        assert_eq!(unmarked(BASE + 10 * P, 1), 0);
        assert_eq!(unmarked(BASE + 11 * P, 100 * P), 29 * P, "stops at page 40");
        assert_eq!(unmarked(BASE + 41 * P, 1000 * P), 1000 * P, "past the map nothing is marked");
        assert_eq!(unmarked(BASE - 4096, 5), 5, "below the pool nothing is marked");
    }

    #[test]
    fn a_fully_mapped_pool_ends_at_its_end() {
        let bits = [0xff; 4];
        assert_eq!(len(&bits, BASE + P, 64 * P), 31 * P);
        assert_eq!(len(&bits, BASE, 32 * P), 32 * P);
    }
}
