//! Guest RAM: anonymous mappings (transparent huge pages requested) registered with KVM as
//! one memory slot per RAM range (`hrt run` gives the program's pool in pieces instead, as it
//! is first used: `pool_slots.rs`). Below 4 GiB RAM stops at `layout::LOW_RAM_END` and the rest
//! continues at 4 GiB, leaving the hole where the IOAPIC and the local APIC live, as on every PC
//! (`layout::ram_ranges`). Untouched pages cost the host nothing; the kernel never zeroes memory
//! it does not use.

use std::os::fd::{AsRawFd, FromRawFd};

use kvm_ioctls::VmFd;
use vm_memory::{Bytes, GuestAddress, GuestMemoryBackend, GuestMemoryMmap, GuestMemoryRegion};

use crate::error::err;
use crate::error::Result;
use crate::kernel_image::KernelImage;
use hrt_abi::layout;

/// The smallest guest memory the kernel boots in: its image area, page tables, per-CPU
/// stacks and a working heap.
pub const MIN_MEM: u64 = 32 << 20;
/// Guest memory for `selftest` and `info` unless --mem says otherwise.
pub const DEFAULT_MEM: u64 = 1 << 30;
/// Guest memory comes in whole 2 MiB pages, so the identity map needs no partial large page.
pub const GRANULE: u64 = 2 << 20;
/// How much of a thread stack's top `use_small_pages` has the host make at once.
const STACK_TOP_POPULATED: u64 = 64 << 10;

/// Checks `--mem` and rounds it down to whole 2 MiB pages.
pub fn check_size(mem: u64) -> Result<u64> {
    if mem < MIN_MEM {
        return Err(err!("--mem {} MiB is too small: the kernel needs at least {} MiB", mem >> 20, MIN_MEM >> 20));
    }
    if mem > layout::MAX_MEM {
        return Err(err!("--mem {} GiB is more than hrt supports ({} GiB)", mem >> 30, layout::MAX_MEM >> 30));
    }
    Ok(mem & !(GRANULE - 1))
}

pub type MemSlot = kvm_bindings::kvm_userspace_memory_region;

/// Registers `slots` with `vm`, in order.
pub fn register(vm: &VmFd, slots: &[MemSlot]) -> Result<()> {
    for slot in slots {
        // SAFETY: the mapping stays alive (owned by the GuestRam, which the VM's users share)
        // for as long as the VM exists.
        unsafe { vm.set_user_memory_region(*slot) }.map_err(|e| err!("cannot give memory to the VM: {e}"))?;
    }
    Ok(())
}

/// Clones share the mappings (a forked child's monitor gives its copy of them to a new VM).
#[derive(Clone)]
pub struct GuestRam {
    mem: GuestMemoryMmap,
    /// Bytes of RAM in all.
    pub size: u64,
    /// The host backs it with transparent huge pages (`--host-pages 2m`).
    huge: bool,
}

// SAFETY: the mappings live as long as GuestRam; concurrent guest access is KVM's business and
// the monitor's own accesses go through checked, bounded copies.
unsafe impl Send for GuestRam {}
// SAFETY: as above.
unsafe impl Sync for GuestRam {}

impl GuestRam {
    /// Maps `size` bytes of guest RAM (a multiple of 2 MiB) at their guest-physical ranges,
    /// without giving them to a VM yet, with host transparent huge pages (`huge`, where the host
    /// allows them: a touched 4 KiB guest page then costs the host its whole 2 MiB page) or
    /// without (4 KiB host pages).
    pub fn map(size: u64, huge: bool) -> Result<GuestRam> {
        let ranges: Vec<(GuestAddress, usize)> = layout::ram_ranges(size)
            .into_iter()
            .filter(|&(_, len)| len > 0)
            .map(|(base, len)| (GuestAddress(base), len as usize))
            .collect();
        let mem = GuestMemoryMmap::<()>::from_ranges(&ranges).map_err(|e| {
            // Under strict accounting the whole reservation counts against the commit limit.
            let strict = std::fs::read_to_string("/proc/sys/vm/overcommit_memory").is_ok_and(|m| m.trim() == "2");
            let hint = if strict {
                " (the host counts all of it against its commit limit: vm.overcommit_memory is 2; give a smaller --mem)"
            } else {
                ""
            };
            err!("cannot reserve {} MiB of guest memory: {e}{hint}", size >> 20)
        })?;
        for region in mem.iter() {
            let host = mem.get_host_address(region.start_addr()).map_err(|e| err!("guest memory: {e}"))?;
            let advice = if huge { libc::MADV_HUGEPAGE } else { libc::MADV_NOHUGEPAGE };
            // SAFETY: advice on our own mapping; failure only changes the host's page size.
            unsafe { libc::madvise(host as *mut libc::c_void, region.len() as usize, advice) };
            // Never in a core file of `hrt` (`fork::die_of`): GiBs of the guest's memory.
            // SAFETY: as above; failure only makes a core file larger.
            unsafe { libc::madvise(host as *mut libc::c_void, region.len() as usize, libc::MADV_DONTDUMP) };
        }
        Ok(GuestRam { mem, size, huge })
    }

    /// Gives the mappings to `vm`, one memory slot per range.
    pub fn give_to(&self, vm: &VmFd) -> Result<()> {
        let (now, _) = self.slots((0, 0));
        register(vm, &now)
    }

    /// Gives the mappings to `vm` outside guest range `later` now; returns the slots inside it
    /// (one per RAM range it overlaps), for [`super::pool_slots::PoolSlots`].
    pub fn give_to_except(&self, vm: &VmFd, later: (u64, u64)) -> Result<Vec<MemSlot>> {
        let (now, deferred) = self.slots(later);
        register(vm, &now)?;
        Ok(deferred)
    }

    /// KVM memory slots for all of RAM: those outside guest range `later`, and those inside it.
    /// Slot numbers are unique across both lists.
    fn slots(&self, later: (u64, u64)) -> (Vec<MemSlot>, Vec<MemSlot>) {
        let (mut now, mut deferred) = (Vec::new(), Vec::new());
        for region in self.mem.iter() {
            let (base, end) = (region.start_addr().0, region.start_addr().0 + region.len());
            let Ok(host) = self.mem.get_host_address(region.start_addr()) else { continue };
            let (lo, hi) = (later.0.clamp(base, end), later.1.clamp(base, end));
            let (lo, hi) = if lo < hi { (lo, hi) } else { (end, end) };
            for (from, to, later) in [(base, lo, false), (lo, hi, true), (hi, end, false)] {
                if from < to {
                    let list = if later { &mut deferred } else { &mut now };
                    list.push(MemSlot {
                        slot: 0,
                        flags: 0,
                        guest_phys_addr: from,
                        memory_size: to - from,
                        userspace_addr: host as u64 + (from - base),
                    });
                }
            }
        }
        for (i, s) in now.iter_mut().chain(deferred.iter_mut()).enumerate() {
            s.slot = i as u32;
        }
        (now, deferred)
    }

    /// Whether the host backs guest RAM with transparent huge pages (`--host-pages 2m`).
    pub fn huge_pages(&self) -> bool {
        self.huge
    }

    /// The guest-physical RAM ranges `(base, size)`, ascending.
    pub fn ranges(&self) -> Vec<(u64, u64)> {
        self.mem.iter().map(|r| (r.start_addr().0, r.len())).collect()
    }

    /// The parts of `[start, end)` that are RAM, as (guest address, length, host address).
    pub fn host_ranges_within(&self, (start, end): (u64, u64)) -> Vec<(u64, u64, u64)> {
        let mut out = Vec::new();
        for (base, len) in self.ranges() {
            let (from, to) = (base.max(start), (base + len).min(end));
            if let Some(host) = (from < to).then(|| self.host_ptr(from, to - from)).flatten() {
                out.push((from, to - from, host as u64));
            }
        }
        out
    }

    /// The guest-physical end of the highest RAM range.
    pub fn phys_end(&self) -> u64 {
        self.mem.iter().map(|r| r.start_addr().0 + r.len()).max().unwrap_or(0)
    }

    /// `nr::SMALL_HOST_PAGES`: the whole 2 MiB pages `[addr, addr + len)` get 4 KiB host pages
    /// (nothing to do when all of RAM has them), and the top of the range is made at once
    /// (`populate_stack_top`). 0 or a negated errno.
    pub fn use_small_pages(&self, addr: u64, len: u64) -> i64 {
        let ret = self.small_pages_only(addr, len);
        if ret == 0 {
            self.populate_stack_top(addr, len);
        }
        ret
    }

    /// The first half of `use_small_pages`: the 4 KiB host pages, none made yet. What the
    /// guest waits for when the channel serves it, which answers before the second half.
    pub fn small_pages_only(&self, addr: u64, len: u64) -> i64 {
        if !addr.is_multiple_of(GRANULE) || !len.is_multiple_of(GRANULE) {
            return -(libc::EINVAL as i64);
        }
        if len == 0 {
            return 0;
        }
        let Some(host) = self.host_ptr(addr, len) else { return -(libc::EFAULT as i64) };
        if self.huge {
            // SAFETY: advice on our own mapping (checked range); failure only leaves huge pages.
            unsafe { libc::madvise(host as *mut libc::c_void, len as usize, libc::MADV_NOHUGEPAGE) };
        }
        0
    }

    /// Backs guest `[start, end)` (page aligned, RAM) with shared memory of its own, holding
    /// the same bytes: memory that no process of the program ever writes (the kernel's code
    /// and read-only data). A forked child's `hrt` then shares it with its parent rather than
    /// copying it on write, so the host's fork leaves it writable in both: under PVM's shadow
    /// paging KVM maps the neighbours of a faulting page along with it only from memory the
    /// host maps writable (copy-on-write memory is not), and the parent's fork zaps its
    /// translations of copy-on-write memory only.
    /// Returns false where it leaves the memory private (no memfd here: correct, only forks are
    /// slower); an error where the replacing mapping failed, which may leave the range unmapped.
    pub fn share_unwritten(&self, start: u64, end: u64) -> Result<bool> {
        let len = (end - start) as usize;
        let host =
            self.host_ptr(start, end - start).ok_or_else(|| err!("guest range {start:#x}..{end:#x} is not RAM"))?;
        // SAFETY: a plain memfd_create with a NUL-terminated name.
        let fd = unsafe { libc::memfd_create(c"hrt-kernel-code".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Ok(false);
        }
        // SAFETY: `fd` is ours; closed on every path below (the mapping keeps the memory).
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        let file = std::fs::File::from(fd);
        // SAFETY: `host` is `len` bytes of this mapping, readable (checked by `host_ptr`).
        let bytes = unsafe { std::slice::from_raw_parts(host as *const u8, len) };
        if std::os::unix::fs::FileExt::write_all_at(&file, bytes, 0).is_err() {
            return Ok(false);
        }
        // SAFETY: replaces `len` bytes of our own guest-RAM mapping (no guest runs yet) with
        // a shared mapping of the same contents; the region stays mapped throughout.
        let at = unsafe {
            libc::mmap(
                host as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                file.as_raw_fd(),
                0,
            )
        };
        if at != host as *mut libc::c_void {
            return Err(err!("cannot map the kernel's code as shared memory: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: advice on the mapping just made.
        unsafe { libc::madvise(at, len, libc::MADV_DONTDUMP) };
        Ok(true)
    }

    /// The second half of `use_small_pages` for `[addr, addr + len)` (checked by the first):
    /// the top of a thread stack, which the thread touches first (glibc's thread descriptor and
    /// TLS, then its first frames), gets its host pages now, in one call, where each first touch
    /// of a fresh 4 KiB host page from the guest cost ~22 us here (a 64 KiB touch 353 us
    /// against 17 natively, 21 on pages the host has). It only makes zero pages (it writes no
    /// data), so it may run after the guest went on, even after it gave the range back.
    pub fn populate_stack_top(&self, addr: u64, len: u64) {
        let top = len.min(STACK_TOP_POPULATED);
        let Some(host) = self.host_ptr(addr + len - top, top) else { return };
        // SAFETY: advice on our own mapping (checked range); failure only leaves the pages to
        // be made at their first touch.
        unsafe { libc::madvise(host as *mut libc::c_void, top as usize, libc::MADV_POPULATE_WRITE) };
    }

    /// The 2 MiB pages that guest range `[addr, addr + len)` covers at least three quarters of
    /// get 4 KiB host pages (none made yet): for kernel structures of which a start touches a
    /// few 4 KiB pages in each 2 MiB, where a huge page costs the host a 2 MiB clear (~0.3 ms
    /// here) at the first touch. A page mostly holding something else keeps huge pages: with
    /// `--mem 1G` the whole 2 MiB around such a span (its first ~200 KiB) got small pages, and
    /// its other data's first touches made starts ~3 ms slower.
    pub fn sparse(&self, addr: u64, len: u64) {
        let end = addr.saturating_add(len);
        let mostly = |page: u64| end.min(page + GRANULE).saturating_sub(addr.max(page)) >= GRANULE / 4 * 3;
        let first = addr & !(GRANULE - 1);
        let lo = if mostly(first) { first } else { first + GRANULE };
        let last = end.saturating_sub(1) & !(GRANULE - 1);
        let hi = if mostly(last) { last + GRANULE } else { last };
        if !self.huge || len == 0 || lo >= hi {
            return;
        }
        if let Some(host) = self.host_ptr(lo, hi - lo) {
            // SAFETY: advice on our own mapping (checked range); failure only leaves huge pages.
            unsafe { libc::madvise(host as *mut libc::c_void, (hi - lo) as usize, libc::MADV_NOHUGEPAGE) };
        }
    }

    /// After `nr::MEM_ZERO` gave the whole 2 MiB pages inside guest range `[addr, addr + len)`
    /// back: they are huge-page memory again (undoing `use_small_pages` on the top of a thread
    /// stack that was unmapped, so that what the guest puts there next gets huge pages).
    pub fn huge_pages_again(&self, addr: u64, len: u64) {
        let (lo, hi) = (addr.next_multiple_of(GRANULE), addr.saturating_add(len) & !(GRANULE - 1));
        if !self.huge || lo >= hi {
            return;
        }
        if let Some(host) = self.host_ptr(lo, hi - lo) {
            // SAFETY: advice on our own mapping (checked range).
            unsafe { libc::madvise(host as *mut libc::c_void, (hi - lo) as usize, libc::MADV_HUGEPAGE) };
        }
    }

    /// Copies `data` to guest physical `addr` (bounds-checked).
    pub fn write(&self, addr: u64, data: &[u8]) -> Result<()> {
        self.mem.write_slice(data, GuestAddress(addr)).map_err(|e| err!("guest write at {addr:#x}: {e}"))
    }

    /// The guest range `[addr, addr + len)` as a host slice, or None if it is not all RAM.
    /// The guest may change it concurrently; callers copy out what they need.
    /// A range in the hole below 4 GiB, beyond the last range, or across the hole is not RAM.
    pub fn slice(&self, addr: u64, len: u64) -> Option<&[u8]> {
        let host = self.host_ptr(addr, len)?;
        // SAFETY: `[addr, addr + len)` lies inside one live mapping (checked by host_ptr).
        Some(unsafe { std::slice::from_raw_parts(host, len as usize) })
    }

    /// The host address of the guest range `[addr, addr + len)` if it is all RAM of one range.
    /// A raw pointer for the monitor's writes into guest memory: writing through the `&[u8]` of
    /// `slice` would be undefined (the compiler may drop writes made through a shared reference).
    pub fn host_ptr(&self, addr: u64, len: u64) -> Option<*mut u8> {
        let end = addr.checked_add(len)?;
        let region = self.mem.find_region(GuestAddress(addr))?;
        if end > region.start_addr().0 + region.len() {
            return None;
        }
        self.mem.get_host_address(GuestAddress(addr)).ok()
    }

    pub fn write_obj<T: Copy>(&self, addr: u64, value: &T) -> Result<()> {
        // SAFETY: T is plain data; viewing it as bytes is sound.
        let bytes = unsafe { std::slice::from_raw_parts(value as *const T as *const u8, std::mem::size_of::<T>()) };
        self.write(addr, bytes)
    }

    pub fn read_obj<T: Copy + Default>(&self, addr: u64) -> Option<T> {
        let src = self.slice(addr, std::mem::size_of::<T>() as u64)?;
        let mut v = T::default();
        // SAFETY: T is plain data of exactly src.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), &mut v as *mut T as *mut u8, src.len()) };
        Some(v)
    }
}

/// The end of the part of the kernel's image whose code and read-only data are shared.
const SHARED_CODE_END: u64 = 2 << 20;

/// Where the kernel's image lies in guest memory, `[start, end)` (0, 0 before it is loaded).
static KERNEL_SPAN: std::sync::Mutex<(u64, u64)> = std::sync::Mutex::new((0, 0));

/// `[start, end)` of the loaded kernel image, its static data (the per-CPU records) included.
pub fn kernel_span() -> (u64, u64) {
    *KERNEL_SPAN.lock().unwrap_or_else(|e| e.into_inner())
}

/// The whole 2 MiB pages above the shared code that hold the kernel's static data
/// (`fork_private`).
pub fn kernel_data_pages() -> (u64, u64) {
    let (_, end) = kernel_span();
    (SHARED_CODE_END, end.next_multiple_of(GRANULE).max(SHARED_CODE_END))
}

/// The kernel's code spans that `share_code_before_fork` has yet to share.
static UNSHARED_CODE: std::sync::Mutex<Vec<(u64, u64)>> = std::sync::Mutex::new(Vec::new());

/// Before the program's first fork: the kernel's code and read-only data below 2 MiB become
/// memory all its processes share (`share_unwritten`). Not at boot: the copy into a memfd cost
/// every start ~0.5 ms (an `hrt run` of an empty program 10.1-10.2 ms with it), while only a
/// program that forks gains from it.
pub fn share_code_before_fork(ram: &GuestRam) -> Result<()> {
    let spans = std::mem::take(&mut *UNSHARED_CODE.lock().unwrap_or_else(|e| e.into_inner()));
    for (start, end) in spans {
        ram.share_unwritten(start, end)?;
    }
    Ok(())
}

/// Copies the kernel's segments to their physical addresses (the rest of memory is zero).
pub fn load_kernel(ram: &GuestRam, image: &KernelImage) -> Result<()> {
    let mut span = (u64::MAX, 0);
    for &(addr, off, filesz, memsz) in &image.segments {
        ram.write(addr, image.segment_bytes(off, filesz))?;
        span = (span.0.min(addr), span.1.max(addr + memsz as u64));
    }
    // The code and read-only data in the first 2 MiB are shared between the processes of a
    // forked program (`share_unwritten`). Not past it: that 2 MiB page also holds the kernel's
    // data, and a mapping of its own there would cost the rest of it its huge host page (an
    // empty program's start took 113 shadow faults instead of 69, 9.7 ms instead of 8.3); the
    // first 2 MiB has 4 KiB leaves in the guest's tables anyway.
    let mut spans: Vec<(u64, u64)> = Vec::new();
    for &(start, end) in &image.read_only {
        match spans.last_mut() {
            Some(last) if last.1 == start => last.1 = end,
            _ => spans.push((start, end)),
        }
    }
    let spans: Vec<(u64, u64)> = spans
        .into_iter()
        .map(|(start, end)| (start, end.min(SHARED_CODE_END)))
        .filter(|(start, end)| start < end)
        .collect();
    *UNSHARED_CODE.lock().unwrap_or_else(|e| e.into_inner()) = spans;
    if span.0 < span.1 {
        *KERNEL_SPAN.lock().unwrap_or_else(|e| e.into_inner()) = span;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    /// Writes a marker through `write` and reads it back through `slice`.
    fn roundtrip(ram: &GuestRam, addr: u64) -> bool {
        let marker = addr.to_le_bytes();
        ram.write(addr, &marker).is_ok() && ram.slice(addr, 8).map(|s| s == marker).unwrap_or(false)
    }

    #[test]
    fn eight_gib_leaves_the_hole_below_4_gib() {
        let ram = GuestRam::map(8 * GIB, true).expect("8 GiB of address space");
        assert_eq!(ram.ranges(), vec![(0, 3 * GIB), (4 * GIB, 5 * GIB)]);
        assert_eq!(ram.phys_end(), 9 * GIB);
        for addr in [0x1000, 3 * GIB - 8, 4 * GIB, 0x1_0000_0000 + 0xFEE0_0000, 9 * GIB - 8] {
            assert!(roundtrip(&ram, addr), "{addr:#x} is RAM");
        }
        // The hole (IOAPIC, local APIC), beyond the end, and ranges across either are not RAM.
        for (addr, len) in [
            (0xFEC0_0000, 8),
            (0xFEE0_0000, 8),
            (3 * GIB, 1),
            (4 * GIB - 1, 1),
            (3 * GIB - 8, 16),
            (4 * GIB - 8, 16),
            (9 * GIB, 1),
            (9 * GIB - 8, 9),
            (u64::MAX - 4, 8),
        ] {
            assert!(ram.slice(addr, len).is_none(), "[{addr:#x}, +{len}) must not be RAM");
        }
        assert!(ram.write(3 * GIB - 4, &[0; 8]).is_err(), "a write across the hole");
    }

    #[test]
    fn small_memory_is_one_range() {
        let ram = GuestRam::map(64 << 20, true).unwrap();
        assert_eq!(ram.ranges(), vec![(0, 64 << 20)]);
        assert!(roundtrip(&ram, (64 << 20) - 8));
        assert!(ram.slice((64 << 20) - 4, 8).is_none());
    }

    /// The host's advice flags (`VmFlags` of /proc/self/smaps: `hg` huge pages asked for, `nh`
    /// refused) of the mapping that holds host address `addr`.
    fn advice_at(addr: u64) -> (bool, bool) {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split_whitespace().next().unwrap_or("");
            if let Some((lo, hi)) = range.split_once('-').filter(|_| !line.ends_with(':') && line.contains(' ')) {
                if let (Ok(lo), Ok(hi)) = (u64::from_str_radix(lo, 16), u64::from_str_radix(hi, 16)) {
                    inside = (lo..hi).contains(&addr);
                    continue;
                }
            }
            if let Some(flags) = line.strip_prefix("VmFlags:").filter(|_| inside) {
                let has = |f: &str| flags.split_whitespace().any(|x| x == f);
                return (has("hg"), has("nh"));
            }
        }
        panic!("no mapping at {addr:#x}");
    }

    #[test]
    fn a_stack_top_gets_small_host_pages_until_it_is_zeroed() {
        let ram = GuestRam::map(64 << 20, true).unwrap();
        let host = |a: u64| ram.host_ptr(a, 1).unwrap() as u64;
        assert_eq!(ram.use_small_pages(GRANULE + 4096, GRANULE), -(libc::EINVAL as i64));
        assert_eq!(ram.use_small_pages(62 << 20, 2 * GRANULE), -(libc::EFAULT as i64));
        assert_eq!(ram.use_small_pages(8 << 20, GRANULE), 0);
        assert_eq!(advice_at(host(8 << 20)), (false, true), "the stack top");
        assert_eq!(advice_at(host((10 << 20) - 1)), (false, true), "the stack top's last byte");
        assert_eq!(advice_at(host(10 << 20)), (true, false), "above it");
        assert_eq!(advice_at(host((8 << 20) - 1)), (true, false), "below it");
        // A zero of part of that 2 MiB page keeps it; one of the whole page undoes it.
        ram.huge_pages_again(7 << 20, 2 << 20);
        assert_eq!(advice_at(host(8 << 20)), (false, true));
        ram.huge_pages_again(6 << 20, 5 << 20);
        assert_eq!(advice_at(host(8 << 20)), (true, false));
        // With 4 KiB host pages everywhere there is nothing to change.
        let small = GuestRam::map(64 << 20, false).unwrap();
        assert_eq!(small.use_small_pages(8 << 20, GRANULE), 0);
        small.huge_pages_again(0, 64 << 20);
        assert_eq!(advice_at(small.host_ptr(8 << 20, 1).unwrap() as u64), (false, true));
    }

    #[test]
    fn sizes_round_down_to_2_mib_and_huge_ones_are_accepted() {
        assert_eq!(check_size((100 << 20) + 12345).unwrap(), 100 << 20);
        assert_eq!(check_size(3 * GIB + (1 << 20)).unwrap(), 3 * GIB);
        assert_eq!(check_size(100 * GIB).unwrap(), 100 * GIB);
        assert!(check_size(layout::MAX_MEM + GRANULE).is_err());
        assert!(check_size(MIN_MEM - 1).is_err());
    }
}
