//! The kernel's static data kept out of the host's fork.
//!
//! A fork of the program is a host `fork` of `hrt` (`fork.rs`): every page of guest RAM
//! becomes copy-on-write in both processes, which makes KVM drop the parent's translations of
//! all of it, and under PVM's shadow paging every page written afterwards costs a fault in
//! each process (the host's copy, then KVM's mapping, one 4 KiB page a fault: KVM maps
//! neighbours only from memory the host maps writable). The kernel's static data (its
//! per-CPU records, run queues, locks, counters: the image's data and bss, above its shared
//! code) is written at once by both sides: ~50 such faults per fork in each process, where the
//! parent's and child's kernels write a few hundred bytes in each of its pages.
//!
//! So the 2 MiB pages holding it are left out of the host's fork (`MADV_DONTFORK`): the parent
//! keeps its pages and their translations, and hands the child a copy made while its vCPUs are
//! stopped for the fork (a 2 MiB copy, ~0.07 ms). The child moves that copy into place
//! (`mremap`) before anything reads guest RAM there, and makes it its own (one copy-on-write
//! fault for the whole huge page, which it reuses: the parent lets go of the copy as soon as its
//! `fork` returns) before its vCPUs run. The copy's memory is made ahead, after the previous
//! fork (`prepare_next`): fresh host memory costs 0.1 ms per 2 MiB here, and 4-5 ms where the
//! host's own hypervisor has to back it again (the host reports free memory to it).

use std::sync::Mutex;

use crate::error::err;
use crate::error::Result;

use super::memory::GuestRam;

const HUGE: usize = 2 << 20;

/// A copy of the kept-out range, made for one fork.
pub struct Snapshot {
    /// Where the copy is (host address, 2 MiB aligned).
    copy: *mut u8,
    len: usize,
    /// Where it belongs in guest RAM (host address).
    place: *mut u8,
}

// SAFETY: plain addresses of this process's own mappings, used by one thread at a time.
unsafe impl Send for Snapshot {}

/// The next fork's copy, its host memory already made (host address, length).
static NEXT: Mutex<Option<(usize, usize)>> = Mutex::new(None);

/// Marks host range `[place, place + len)` of guest RAM as left out of the host's forks
/// (`out`) or copied by them as usual.
fn keep_out(place: *mut u8, len: usize, out: bool) -> bool {
    let advice = if out { libc::MADV_DONTFORK } else { libc::MADV_DOFORK };
    // SAFETY: advice on our own guest-RAM mapping; it changes only what a fork copies.
    unsafe { libc::madvise(place.cast(), len, advice) == 0 }
}

/// The 2 MiB-aligned guest range `range` as a length, if it is one.
fn length((start, end): (u64, u64)) -> Option<usize> {
    (start < end && start.is_multiple_of(HUGE as u64) && end.is_multiple_of(HUGE as u64))
        .then_some((end - start) as usize)
}

/// Before a fork: leaves guest `range` (whole 2 MiB pages of RAM) out of it and copies it for
/// the child. None where the range is not that or no copy could be made: the fork then copies
/// the range as any other memory.
pub fn snapshot(ram: &GuestRam, range: (u64, u64)) -> Option<Snapshot> {
    let len = length(range)?;
    let place = ram.host_ptr(range.0, len as u64)?;
    let ready = NEXT.lock().unwrap_or_else(|e| e.into_inner()).take();
    let copy = match ready {
        Some((at, l)) if l == len => Some(at as *mut u8),
        other => {
            if let Some((at, l)) = other {
                // SAFETY: a prepared copy of another length, ours alone.
                unsafe { libc::munmap(at as *mut libc::c_void, l) };
            }
            fresh(len, ram.huge_pages(), false)
        }
    };
    let Some(copy) = copy.filter(|_| keep_out(place, len, true)) else {
        // An earlier fork may have left the range out: this one must copy it.
        keep_out(place, len, false);
        return None;
    };
    // SAFETY: both ranges are `len` bytes of our own mappings; the guest's CPUs are stopped.
    unsafe { std::ptr::copy_nonoverlapping(place, copy, len) };
    Some(Snapshot { copy, len, place })
}

/// After a fork, on the fork thread: the next fork's copy gets its host memory now.
pub fn prepare_next(ram: &GuestRam, range: (u64, u64)) {
    let Some(len) = length(range) else { return };
    let mut next = NEXT.lock().unwrap_or_else(|e| e.into_inner());
    if next.is_none() {
        *next = fresh(len, ram.huge_pages(), true).map(|at| (at as usize, len));
    }
}

/// A fresh private mapping of `len` bytes at a 2 MiB boundary, with huge host pages as guest
/// RAM has them (`huge`), its host memory made at once if `made`.
fn fresh(len: usize, huge: bool, made: bool) -> Option<*mut u8> {
    // SAFETY: a fresh anonymous mapping, trimmed to the aligned part below.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len + HUGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return None;
    }
    let at = (raw as usize).next_multiple_of(HUGE);
    let (head, tail) = (at - raw as usize, raw as usize + len + HUGE - (at + len));
    // SAFETY: trims the parts of our fresh mapping outside `[at, at + len)`; advice on it
    // (failures only cost speed: small host pages, or memory made at the copy).
    unsafe {
        if head > 0 {
            libc::munmap(raw, head);
        }
        if tail > 0 {
            libc::munmap((at + len) as *mut libc::c_void, tail);
        }
        let pages = if huge { libc::MADV_HUGEPAGE } else { libc::MADV_NOHUGEPAGE };
        libc::madvise(at as *mut libc::c_void, len, pages);
        libc::madvise(at as *mut libc::c_void, len, libc::MADV_DONTDUMP);
        if made {
            libc::madvise(at as *mut libc::c_void, len, libc::MADV_POPULATE_WRITE);
        }
    }
    Some(at as *mut u8)
}

impl Snapshot {
    /// In the parent once the fork is made (or failed): the copy is the child's alone.
    pub fn release(self) {
        // SAFETY: the copy's mapping, which nothing in this process uses.
        unsafe { libc::munmap(self.copy.cast(), self.len) };
    }

    /// In the child, first of all: the copy takes the range's place (which the fork left
    /// unmapped here) and stays left out of this process's own forks. Its pages are still
    /// the parent's copy-on-write until `Placed::own`.
    pub fn install(self) -> Result<Placed> {
        // SAFETY: moves our own copy over the hole the fork left in guest RAM (same length).
        let at = unsafe {
            libc::mremap(
                self.copy.cast(),
                self.len,
                self.len,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                self.place.cast::<libc::c_void>(),
            )
        };
        if at != self.place.cast() {
            return Err(err!("cannot place the kernel's data: {}", std::io::Error::last_os_error()));
        }
        keep_out(self.place, self.len, true);
        Ok(Placed { place: self.place, len: self.len })
    }
}

/// The copy in its place in the child.
pub struct Placed {
    place: *mut u8,
    len: usize,
}

impl Placed {
    /// Before the child's vCPUs run, as late as possible: the copy's pages become this
    /// process's own in one fault, which reuses the huge page once the parent has let go of
    /// it (if it has not yet, the host copies what is written, as for any forked memory).
    pub fn own(self) {
        // SAFETY: advice on guest RAM of ours; it changes no byte.
        unsafe { libc::madvise(self.place.cast(), self.len, libc::MADV_POPULATE_WRITE) };
    }
}
