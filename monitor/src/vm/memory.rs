//! Guest RAM: one anonymous mapping (transparent huge pages requested) registered with KVM at
//! guest physical 0. Untouched pages cost the host nothing; the kernel never zeroes memory it
//! does not use.

use kvm_ioctls::VmFd;
use vm_memory::{Bytes, GuestAddress, GuestMemoryBackend, GuestMemoryMmap, GuestMemoryRegion};

use crate::err;
use crate::error::Result;
use crate::kernel_image::KernelImage;
use hrt_abi::layout;

/// The smallest guest memory the kernel boots in: its image area, page tables, per-CPU
/// stacks and a working heap.
pub const MIN_MEM: u64 = 32 << 20;
/// Guest memory for `selftest` and `info` unless --mem says otherwise.
pub const DEFAULT_MEM: u64 = 1 << 30;

pub fn check_size(mem: u64) -> Result<u64> {
    if mem < MIN_MEM {
        return Err(err!("--mem {} MiB is too small: the kernel needs at least {} MiB", mem >> 20, MIN_MEM >> 20));
    }
    if mem > layout::MAX_MEM {
        return Err(err!("--mem {} GiB is more than hrt supports ({} GiB)", mem >> 30, layout::MAX_MEM >> 30));
    }
    // Whole 2 MiB pages, so the identity map needs no partial large page.
    Ok(mem & !((2 << 20) - 1))
}

pub struct GuestRam {
    pub mem: GuestMemoryMmap,
    pub size: u64,
    /// Host address of guest physical 0.
    pub host_base: *mut u8,
}

// SAFETY: the mapping lives as long as GuestRam; concurrent guest access is KVM's business and
// the monitor's own accesses go through checked, bounded copies.
unsafe impl Send for GuestRam {}
// SAFETY: as above.
unsafe impl Sync for GuestRam {}

impl GuestRam {
    pub fn new(vm: &VmFd, size: u64) -> Result<GuestRam> {
        let mem = GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(0), size as usize)])
            .map_err(|e| err!("cannot reserve {} MiB of guest memory: {e}", size >> 20))?;
        let region = mem.iter().next().ok_or_else(|| err!("no guest memory region"))?;
        let host_base = mem.get_host_address(GuestAddress(0)).map_err(|e| err!("guest memory: {e}"))?;
        // SAFETY: advice on our own mapping; failure only means no huge pages.
        unsafe { libc::madvise(host_base as *mut libc::c_void, size as usize, libc::MADV_HUGEPAGE) };
        let slot = kvm_bindings::kvm_userspace_memory_region {
            slot: 0,
            flags: 0,
            guest_phys_addr: 0,
            memory_size: region.len(),
            userspace_addr: host_base as u64,
        };
        // SAFETY: the mapping stays alive (owned by `mem`) for as long as the VM exists.
        unsafe { vm.set_user_memory_region(slot) }.map_err(|e| err!("cannot give memory to the VM: {e}"))?;
        Ok(GuestRam { mem, size, host_base })
    }

    /// Copies `data` to guest physical `addr` (bounds-checked).
    pub fn write(&self, addr: u64, data: &[u8]) -> Result<()> {
        self.mem.write_slice(data, GuestAddress(addr)).map_err(|e| err!("guest write at {addr:#x}: {e}"))
    }

    /// The guest range `[addr, addr + len)` as a host slice, or None if it is not all RAM.
    /// The guest may change it concurrently; callers copy out what they need.
    pub fn slice(&self, addr: u64, len: u64) -> Option<&[u8]> {
        let end = addr.checked_add(len)?;
        if end > self.size {
            return None;
        }
        // SAFETY: the range lies inside the live mapping (checked above).
        Some(unsafe { std::slice::from_raw_parts(self.host_base.add(addr as usize), len as usize) })
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

/// Copies the kernel's segments to their physical addresses (the rest of memory is zero).
pub fn load_kernel(ram: &GuestRam, image: &KernelImage) -> Result<()> {
    for &(addr, off, filesz, _memsz) in &image.segments {
        ram.write(addr, image.segment_bytes(off, filesz))?;
    }
    Ok(())
}
