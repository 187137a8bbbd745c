//! Self-tests of the page allocator and the kernel heap.
//!
//! Sized for emulated ring 0 (~1 µs per instruction): a few hundred operations per zone,
//! touching only a couple of bytes per block.

use alloc::alloc::{alloc, dealloc, Layout};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use hrt_abi::MAX_ZONES;

use crate::mem::{self, block_size, heap};

/// A small xorshift PRNG: deterministic, a handful of instructions per number.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[derive(Clone, Copy)]
struct Block {
    addr: u64,
    order: usize,
    zone: usize,
}

impl Block {
    fn end(&self) -> u64 {
        self.addr + block_size(self.order) as u64
    }

    /// A byte identifying this block, written to its first and last byte.
    fn tag(&self) -> u8 {
        (self.addr >> 12) as u8 ^ (self.order as u8).wrapping_mul(37)
    }

    fn ends(&self) -> (*mut u8, *mut u8) {
        (mem::phys_to_virt(self.addr), mem::phys_to_virt(self.end() - 1))
    }
}

/// Random allocations of orders 0..=10 from every zone, checked for overlap, zone membership
/// and content, then freed in random order; every zone's free bytes must come back exactly.
pub fn buddy_stress() -> Result<(), String> {
    const MAX_TEST_ORDER: usize = 10;
    let zones = mem::num_zones();
    if zones == 0 {
        return Err("no memory zones".into());
    }
    let per_zone = (1024 / zones).clamp(64, 256);
    // Allocate the bookkeeping before taking the baseline, so the heap's own page use
    // cannot change the zone counters during the test.
    let mut blocks: Vec<Block> = Vec::with_capacity(per_zone * zones);
    let mut before = [0usize; MAX_ZONES];
    for (z, b) in before.iter_mut().enumerate().take(zones) {
        *b = mem::zone_free_bytes(z);
    }

    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut failed = 0;
    for (z, &free) in before.iter().enumerate().take(zones) {
        // Use at most half of the zone, so the test also runs on small guests.
        let mut budget = free / 2;
        for _ in 0..per_zone {
            // Skewed towards small orders: pick a maximum, then an order up to it.
            let max = rng.below(MAX_TEST_ORDER + 1);
            let mut order = rng.below(max + 1);
            while order > 0 && block_size(order) > budget {
                order -= 1;
            }
            if block_size(order) > budget {
                break;
            }
            match mem::alloc_pages(order, Some(z)) {
                Some(addr) => {
                    blocks.push(Block { addr, order, zone: z });
                    budget -= block_size(order);
                }
                None => failed += 1,
            }
        }
    }
    let total: usize = blocks.iter().map(|b| block_size(b.order)).sum();

    let result = check_blocks(&mut blocks, &before[..zones]);

    // Free everything in random order (Fisher-Yates), even if a check failed.
    for i in (1..blocks.len()).rev() {
        blocks.swap(i, rng.below(i + 1));
    }
    for b in &blocks {
        mem::free_pages(b.addr, b.order);
    }
    result?;
    for (z, &b) in before.iter().enumerate().take(zones) {
        let after = mem::zone_free_bytes(z);
        if after != b {
            return Err(format!("zone {z}: {b} bytes free before, {after} after"));
        }
    }
    crate::kprintln!(
        "buddy_stress: {zones} zones, {} blocks of orders 0..={MAX_TEST_ORDER}, {} KiB, {failed} failed",
        blocks.len(),
        total >> 10
    );
    Ok(())
}

/// Checks that blocks lie in their zones, do not overlap and keep their contents.
/// `free_before[z]` is zone z's free bytes before the test.
fn check_blocks(blocks: &mut [Block], free_before: &[usize]) -> Result<(), String> {
    for (z, &free) in free_before.iter().enumerate() {
        let (lo, hi) = mem::zone_range(z);
        if free >= 1 << 20 && !blocks.iter().any(|b| b.zone == z) {
            return Err(format!("zone {z}: no allocation succeeded"));
        }
        if let Some(b) = blocks.iter().find(|b| b.zone == z && (b.addr < lo || b.end() > hi)) {
            return Err(format!("block {:#x} order {} outside zone {z} [{lo:#x}, {hi:#x})", b.addr, b.order));
        }
    }
    for b in blocks.iter() {
        if !b.addr.is_multiple_of(block_size(b.order) as u64) {
            return Err(format!("block {:#x} not aligned to order {}", b.addr, b.order));
        }
        let (first, last) = b.ends();
        // SAFETY: the block was just allocated to us; phys_to_virt maps it.
        unsafe {
            first.write_volatile(b.tag());
            last.write_volatile(!b.tag());
        }
    }
    blocks.sort_unstable_by_key(|b| b.addr);
    for w in blocks.windows(2) {
        if w[0].end() > w[1].addr {
            return Err(format!(
                "blocks overlap: {:#x} order {} and {:#x} order {}",
                w[0].addr, w[0].order, w[1].addr, w[1].order
            ));
        }
    }
    for b in blocks.iter() {
        let (first, last) = b.ends();
        // SAFETY: as above; the block is still allocated.
        let (x, y) = unsafe { (first.read_volatile(), last.read_volatile()) };
        if x != b.tag() || y != !b.tag() {
            return Err(format!("block {:#x} order {}: contents changed", b.addr, b.order));
        }
    }
    Ok(())
}

/// Reserving a specific physical range works exactly when all of it is free.
pub fn page_reserve() -> Result<(), String> {
    let order = 4;
    let addr = mem::alloc_pages(order, None).ok_or("alloc_pages failed")?;
    let end = addr + block_size(order) as u64;
    // Allocated memory cannot be reserved.
    if mem::reserve(addr + 4096, end) {
        return Err(format!("reserved allocated range {addr:#x}"));
    }
    mem::free_pages(addr, order);
    // Now it is free: reserve it (unaligned start and end round outwards to pages).
    if !mem::reserve(addr + 1, end - 1) {
        return Err(format!("could not reserve free range [{addr:#x}, {end:#x})"));
    }
    let again = mem::reserve(addr, addr + 4096);
    // Give it back as aligned blocks (the test's own order, in one piece).
    mem::free_pages(addr, order);
    if again {
        return Err(format!("reserved {addr:#x} twice"));
    }
    if mem::reserve(u64::MAX - 8191, u64::MAX - 4096) {
        return Err("reserved an unmanaged range".into());
    }
    crate::kprintln!("page_reserve: {} KiB at {addr:#x}", block_size(order) >> 10);
    Ok(())
}

/// Boxes, vectors, strings and raw aligned allocations of many sizes; contents verified;
/// heap bytes in use return to where they started.
pub fn heap() -> Result<(), String> {
    const SIZES: [usize; 14] = [1, 7, 16, 17, 63, 100, 512, 1000, 2047, 2048, 2049, 4096, 10_000, 70_000];
    let start = heap::stats();
    {
        // Byte vectors of every size, filled (memset) and spot-checked.
        let vecs: Vec<Vec<u8>> = SIZES.iter().map(|&n| alloc::vec![n as u8 ^ 0x5a; n]).collect();
        for (v, &n) in vecs.iter().zip(SIZES.iter()) {
            if v.len() != n || (0..n).step_by(61).chain([n - 1]).any(|i| v[i] != n as u8 ^ 0x5a) {
                return Err(format!("vec of {n} bytes corrupted"));
            }
        }

        // Many small boxes, distinct and intact.
        let boxes: Vec<Box<u64>> = (0..200u64).map(|i| Box::new(i * 0x9e37_79b9)).collect();
        for (i, b) in boxes.iter().enumerate() {
            if **b != i as u64 * 0x9e37_79b9 {
                return Err(format!("box {i} corrupted"));
            }
        }

        // A string grown across several size classes and into page blocks.
        let mut s = String::new();
        for i in 0..400 {
            s.push_str(["abcdefghi", "jklmnopqr"][i % 2]);
        }
        if s.len() != 3600 || !s.starts_with("abcdefghijkl") || !s.ends_with("jklmnopqr") {
            return Err("string corrupted".into());
        }

        // Raw allocations with large alignments.
        for align in [64, 4096] {
            for size in [8, 100, 3000, 5000] {
                let layout = Layout::from_size_align(size, align).map_err(|e| format!("{e}"))?;
                // SAFETY: the layout has a non-zero size.
                let p = unsafe { alloc(layout) };
                if p.is_null() || !(p as usize).is_multiple_of(align) {
                    return Err(format!("alloc({size}, align {align}) returned {p:?}"));
                }
                // SAFETY: `p` points to `size` bytes we own.
                unsafe {
                    p.write(0xa1);
                    p.add(size - 1).write(0xb2);
                    let ok = p.read() == 0xa1 && p.add(size - 1).read() == 0xb2;
                    dealloc(p, layout);
                    if !ok {
                        return Err(format!("alloc({size}, align {align}) contents lost"));
                    }
                }
            }
        }
    }
    let end = heap::stats();
    if end != start {
        return Err(format!("heap in use: {start} bytes before, {end} after"));
    }
    crate::kprintln!("heap: vectors of {SIZES:?} bytes, 200 boxes, a 3600-byte string, align 64/4096 raw allocations");
    Ok(())
}
