//! Pages for page tables, taken from 2 MiB blocks of their own.
//!
//! A shadow-paging host (PVM, where this kernel usually runs) write-protects every guest page
//! that serves as a page table, and then maps nothing else of that page's 2 MiB region with a
//! large page of its own: each 4 KiB page touched there costs a shadow-paging fault (several
//! microseconds on a PVM host, ~10 with a copy-on-write after a fork). Tables scattered through
//! the kernel's memory spoiled the regions of its heap, stacks and per-CPU data that way; kept
//! together, they spoil only their own blocks.

use hrt_abi::MAX_ZONES;

use super::buddy::PAGE_SIZE;
use crate::sync::spinlock::IrqSpinLock;

/// 2 MiB: the large pages a host maps guest memory with.
const BLOCK_ORDER: usize = 9;
const BLOCK_BYTES: u64 = (PAGE_SIZE as u64) << BLOCK_ORDER;

/// Each zone's block being handed out: `[next, end)` is what is left of it.
struct Arena {
    next: u64,
    end: u64,
}

static ARENAS: [IrqSpinLock<Arena>; MAX_ZONES] = [const { IrqSpinLock::new(Arena { next: 0, end: 0 }) }; MAX_ZONES];

/// One 4 KiB page for a page table, not zeroed: from zone `zone`'s current block (`None`: the
/// current CPU's zone), a new 2 MiB block when it is used up, or a page from that zone, else
/// from any, when no whole block is free. Table pages are never given back.
pub fn alloc_page(zone: Option<usize>) -> Option<u64> {
    let zones = super::num_zones();
    if zones == 0 {
        return None;
    }
    let z = zone.unwrap_or_else(crate::cpu::current_zone) % zones;
    loop {
        if let Some(page) = take(z) {
            return Some(page);
        }
        // Allocated without the arena's lock: the allocation may ask the monitor for memory.
        let Some(block) = super::alloc_pages(BLOCK_ORDER, Some(z)) else {
            // Any zone last: with `--numa` a zone may hold no kernel memory at all (the
            // kernel's share lies at the top of RAM, in the last zones).
            return super::alloc_pages(0, zone).or_else(|| super::alloc_pages(0, None));
        };
        let mut arena = ARENAS[z].lock();
        if arena.next < arena.end {
            // Refilled meanwhile by another CPU: take from that one.
            drop(arena);
            super::free_pages(block, BLOCK_ORDER);
            continue;
        }
        arena.next = block + PAGE_SIZE as u64;
        arena.end = block + BLOCK_BYTES;
        return Some(block);
    }
}

/// `pages` contiguous 4 KiB pages for tables in zone `z` (the boot's runs of the identity
/// map's tables), from the zone's block where they fit, else from a new block whose rest
/// serves later tables; from the zone's allocator (`super::alloc_run`) when more than a block.
pub fn alloc_run(pages: usize, z: usize) -> Option<u64> {
    let bytes = (pages * PAGE_SIZE) as u64;
    if pages == 0 || bytes > BLOCK_BYTES || z >= super::num_zones() {
        return super::alloc_run(pages, z);
    }
    loop {
        if let Some(at) = take_run(z, bytes) {
            return Some(at);
        }
        let Some(block) = super::alloc_pages(BLOCK_ORDER, Some(z)) else {
            return super::alloc_run(pages, z);
        };
        // What is left of the old block is not used again: tables are few, and never freed.
        let mut arena = ARENAS[z].lock();
        arena.next = block;
        arena.end = block + BLOCK_BYTES;
    }
}

fn take(z: usize) -> Option<u64> {
    take_run(z, PAGE_SIZE as u64)
}

fn take_run(z: usize, bytes: u64) -> Option<u64> {
    let mut arena = ARENAS[z].lock();
    (arena.end - arena.next >= bytes && arena.next != 0).then(|| {
        let at = arena.next;
        arena.next += bytes;
        at
    })
}
