//! The host pages the boot program's large segments will land in, made ahead on another
//! thread while the VM boots.
//!
//! The kernel's loader puts a position-independent program at the start of the program's pool
//! (an ET_EXEC one at its link addresses) and has the monitor copy each segment of 1 MiB or
//! more there (`nr::MEM_COPY`, `placed_image`). Most of that copy's time is the host making
//! fresh 2 MiB pages for the destination, which it clears first: 0.3-3 ms each on this host,
//! itself a VM, ~50 of them for Node.js's 99 MB executable. A thread started once the program
//! is placed makes them, last page first, while the vCPU boots and, once the copy starts, from
//! the other end: the two meet in the middle. Only pages the copy is about to write are made
//! (their contents read zero until then, as fresh memory does), so nothing is made that the
//! program would not have had: where the kernel puts the program elsewhere (it does not), the
//! pages would merely be made early.

use goblin::elf::{header::ET_EXEC, program_header::PT_LOAD};

use super::memory::GuestRam;
use crate::program::Program;

const HUGE: u64 = 2 << 20;

/// The guest-physical ranges the copies of `program`'s large segments will write, with the
/// program at `pool_base` if it is position-independent.
pub fn segment_ranges(program: &Program, pool_base: u64) -> Vec<(u64, u64)> {
    let Ok(elf) = crate::elf_headers::headers(&program.bytes, false) else { return Vec::new() };
    let loads = || elf.program_headers.iter().filter(|p| p.p_type == PT_LOAD);
    let lo = loads().map(|p| p.p_vaddr).min().unwrap_or(0) & !0xfff;
    let bias = if elf.header.e_type == ET_EXEC { 0 } else { pool_base.wrapping_sub(lo) };
    loads()
        .filter(|p| p.p_filesz >= hrt_abi::nr::SEGMENT_COPY_BY_HOST)
        .map(|p| (bias.wrapping_add(p.p_vaddr), bias.wrapping_add(p.p_vaddr).wrapping_add(p.p_filesz)))
        .collect()
}

/// Starts the thread that makes the host pages of `ranges` of guest RAM (whole 2 MiB pages
/// inside them, last first). Advice only: a range outside RAM, or a host without
/// MADV_POPULATE_WRITE, changes nothing.
pub fn start(ram: &GuestRam, ranges: &[(u64, u64)]) {
    let mut pages: Vec<usize> = Vec::new();
    for &(start, end) in ranges {
        let (first, last) = (start.next_multiple_of(HUGE), end & !(HUGE - 1));
        let mut at = first;
        while at < last {
            if let Some(host) = ram.host_ptr(at, HUGE) {
                pages.push(host as usize);
            }
            at += HUGE;
        }
    }
    if pages.is_empty() {
        return;
    }
    let spawned = std::thread::Builder::new().name("hrt-prefault".into()).spawn(move || {
        for &page in pages.iter().rev() {
            // SAFETY: advice on whole 2 MiB pages of guest RAM, mapped for the life of `hrt`;
            // making a page present changes no byte of it.
            let r = unsafe { libc::madvise(page as *mut libc::c_void, HUGE as usize, libc::MADV_POPULATE_WRITE) };
            if r != 0 {
                return;
            }
        }
    });
    drop(spawned);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test binary (position-independent, a text segment over 1 MiB): its large segments
    /// at the pool's start, as the kernel's loader puts them.
    #[test]
    fn large_segments_land_at_the_pool_start() {
        let program = Program::open("/proc/self/exe").expect("the test binary");
        let pool = 0x4000_0000;
        let ranges = segment_ranges(&program, pool);
        assert!(!ranges.is_empty());
        let span = program.mem_needed;
        for (start, end) in ranges {
            assert!(start >= pool && end <= pool + span && end - start >= hrt_abi::nr::SEGMENT_COPY_BY_HOST);
        }
    }
}
