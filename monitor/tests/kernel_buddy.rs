//! Host unit tests of the kernel's buddy allocator (kernel/src/mem/buddy.rs), which depends on
//! nothing but `core` so it can be compiled here unchanged.

#[allow(dead_code)]
#[path = "../../kernel/src/mem/buddy.rs"]
mod buddy;

use buddy::{block_size, Buddy, MAX_ORDER, PAGE_SIZE};
use std::alloc::{alloc_zeroed, dealloc, Layout};

/// A host buffer aligned to its own size (so it can hold one top-order block of that size)
/// plus the buddy's metadata.
struct Arena {
    mem: *mut u8,
    layout: Layout,
    meta: Vec<u64>,
    buddy: Buddy,
}

impl Arena {
    /// Manages `[offset, offset + size)` inside a buffer of `buf_size` bytes aligned to
    /// `buf_size`, with nothing free yet.
    fn new(buf_size: usize, offset: usize, size: usize) -> Arena {
        let layout = Layout::from_size_align(buf_size, buf_size).unwrap();
        // SAFETY: the layout has a non-zero size.
        let mem = unsafe { alloc_zeroed(layout) };
        assert!(!mem.is_null());
        let mut meta = vec![0u64; Buddy::metadata_bytes(size) / 8];
        let mut buddy = Buddy::empty();
        // SAFETY: `meta` is zeroed, 8-byte aligned and large enough; the range is inside `mem`.
        unsafe { buddy.init(mem as usize + offset, size, meta.as_mut_ptr().cast(), true) };
        Arena { mem, layout, meta, buddy }
    }

    /// A fully free arena of `size` bytes aligned to `size`.
    fn full(size: usize) -> Arena {
        let mut a = Arena::new(size, 0, size);
        let base = a.base();
        // SAFETY: the whole buffer is unused.
        unsafe { a.buddy.add_free_range(base, base + size) };
        a
    }

    fn base(&self) -> usize {
        self.mem as usize
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        let _ = &self.meta;
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.mem, self.layout) };
    }
}

const MIB: usize = 1 << 20;

#[test]
fn metadata_size() {
    // One bit per page, then a 24-byte node per 2 MiB and two more (for the ends).
    assert_eq!(Buddy::metadata_bytes(0), 0);
    assert_eq!(Buddy::metadata_bytes(PAGE_SIZE), 8 + 2 * 24);
    assert_eq!(Buddy::metadata_bytes(64 * PAGE_SIZE), 8 + 2 * 24);
    assert_eq!(Buddy::metadata_bytes(65 * PAGE_SIZE), 16 + 2 * 24);
    // 4 GiB: 128 KiB of bitmap and 2,050 nodes.
    assert_eq!(Buddy::metadata_bytes(4 << 30), (128 << 10) + 2050 * 24);
}

#[test]
fn starts_empty() {
    let mut a = Arena::new(MIB, 0, MIB);
    assert_eq!(a.buddy.free_bytes(), 0);
    assert_eq!(a.buddy.total_bytes(), 0);
    assert_eq!(a.buddy.alloc(0), None);
    assert!(a.buddy.contains(a.base()));
    assert!(!a.buddy.contains(a.base() + MIB));
}

#[test]
fn alloc_free_coalesces_to_one_block() {
    let size = 8 * MIB;
    let top = (size / PAGE_SIZE).trailing_zeros() as usize; // order 11
    let mut a = Arena::full(size);
    let base = a.base();
    assert_eq!(a.buddy.free_bytes(), size);
    assert_eq!(a.buddy.total_bytes(), size);

    // The first page comes from splitting the one top block.
    let p = a.buddy.alloc(0).unwrap();
    assert_eq!(p, base);
    assert_eq!(a.buddy.free_bytes(), size - PAGE_SIZE);
    // A top-order block no longer exists.
    assert_eq!(a.buddy.alloc(top), None);
    // The split left exactly one free block of each order below `top`.
    let mut blocks = Vec::new();
    for k in (0..top).rev() {
        let b = a.buddy.alloc(k).unwrap();
        assert_eq!(b, base + block_size(k), "order {k}");
        blocks.push((b, k));
    }
    assert_eq!(a.buddy.free_bytes(), 0);
    assert_eq!(a.buddy.alloc(0), None);

    // SAFETY: all these blocks were allocated above and are not used.
    unsafe {
        a.buddy.free(p, 0);
        for (b, k) in blocks {
            a.buddy.free(b, k);
        }
    }
    assert_eq!(a.buddy.free_bytes(), size);
    assert_eq!(a.buddy.alloc(top), Some(base));
}

#[test]
fn blocks_are_aligned_and_writable() {
    let mut a = Arena::full(4 * MIB);
    let mut got = Vec::new();
    for k in [3, 0, 5, 1, 0, 7, 2] {
        let b = a.buddy.alloc(k).unwrap();
        assert_eq!(b % block_size(k), 0);
        // SAFETY: the block is ours.
        unsafe { std::ptr::write_bytes(b as *mut u8, 0xa5, block_size(k)) };
        got.push((b, k));
    }
    for &(b, k) in &got {
        // SAFETY: the block is ours and was filled above.
        let s = unsafe { std::slice::from_raw_parts(b as *const u8, block_size(k)) };
        assert!(s.iter().all(|&x| x == 0xa5));
    }
    for (b, k) in got {
        // SAFETY: allocated above.
        unsafe { a.buddy.free(b, k) };
    }
    assert_eq!(a.buddy.free_bytes(), 4 * MIB);
    assert_eq!(a.buddy.alloc(10), Some(a.base()));
}

#[test]
fn exhaustion_returns_none() {
    let mut a = Arena::full(MIB);
    let mut n = 0;
    while a.buddy.alloc(2).is_some() {
        n += 1;
    }
    assert_eq!(n, MIB / block_size(2));
    assert_eq!(a.buddy.free_bytes(), 0);
    assert_eq!(a.buddy.alloc(0), None);
    assert_eq!(a.buddy.alloc(MAX_ORDER), None);
    assert_eq!(a.buddy.alloc(MAX_ORDER + 1), None);
}

#[test]
fn add_free_range_uses_few_large_blocks() {
    // Manage 8 MiB but free an unaligned middle part: [12 KiB, 8 MiB - 20 KiB).
    let size = 8 * MIB;
    let mut a = Arena::new(size, 0, size);
    let base = a.base();
    let (lo, hi) = (base + 12 * 1024, base + size - 20 * 1024);
    // SAFETY: the buffer is unused.
    unsafe { a.buddy.add_free_range(lo, hi) };
    assert_eq!(a.buddy.free_bytes(), hi - lo);
    assert_eq!(a.buddy.total_bytes(), hi - lo);
    // Neither 4 MiB half is wholly free; the largest blocks are the 2 MiB blocks at
    // 2 MiB and 4 MiB.
    assert_eq!(a.buddy.alloc(10), None);
    let mut big = [a.buddy.alloc(9).unwrap(), a.buddy.alloc(9).unwrap()];
    big.sort();
    assert_eq!(big, [base + 2 * MIB, base + 4 * MIB]);
    assert_eq!(a.buddy.alloc(9), None);
    // Adding the missing pieces lets everything merge back into one 8 MiB block.
    // SAFETY: the pieces are unused and not free yet; the 2 MiB blocks were allocated above.
    unsafe {
        a.buddy.free(big[0], 9);
        a.buddy.free(big[1], 9);
        a.buddy.add_free_range(base, lo);
        a.buddy.add_free_range(hi, base + size);
    }
    assert_eq!(a.buddy.free_bytes(), size);
    assert_eq!(a.buddy.alloc(11), Some(base));
}

#[test]
fn add_free_range_rounds_inwards_and_clips() {
    let size = MIB;
    let mut a = Arena::new(2 * MIB, MIB / 2, size);
    let base = a.base() + MIB / 2;
    // SAFETY: the buffer is unused; the range is clipped to the managed part.
    unsafe { a.buddy.add_free_range(base - 8192 + 1, base + size + 8192) };
    assert_eq!(a.buddy.free_bytes(), size);
    // The managed range is not aligned to 1 MiB, so no 1 MiB block exists, but two 512 KiB do.
    assert_eq!(a.buddy.alloc(8), None);
    assert!(a.buddy.alloc(7).is_some());
    assert!(a.buddy.alloc(7).is_some());
    assert_eq!(a.buddy.alloc(0), None);
}

#[test]
fn reserve_takes_exact_range() {
    let size = 8 * MIB;
    let mut a = Arena::full(size);
    let base = a.base();
    let (lo, hi) = (base + 3 * MIB + 4096, base + 5 * MIB - 8192);
    assert!(a.buddy.reserve(lo, hi));
    assert_eq!(a.buddy.free_bytes(), size - (hi - lo));
    // Overlapping reservations fail and change nothing.
    assert!(!a.buddy.reserve(hi - 4096, hi + 4096));
    assert!(!a.buddy.reserve(lo - 4096, lo + 4096));
    assert!(!a.buddy.reserve(base, base + size));
    assert_eq!(a.buddy.free_bytes(), size - (hi - lo));
    // Out of range fails.
    assert!(!a.buddy.reserve(base + size, base + size + 4096));
    assert!(!a.buddy.reserve(base - 4096, base + 4096));
    // Every remaining page can be allocated and none lies in the reserved range.
    let mut pages = Vec::new();
    while let Some(p) = a.buddy.alloc(0) {
        assert!(p + PAGE_SIZE <= lo || p >= hi, "{p:#x} in reserved range");
        pages.push(p);
    }
    assert_eq!(pages.len() * PAGE_SIZE, size - (hi - lo));
    // SAFETY: allocated above.
    unsafe {
        for p in pages {
            a.buddy.free(p, 0);
        }
    }
    // Give the reserved range back in aligned blocks; everything merges again.
    let mut cur = lo;
    while cur < hi {
        let mut k = (cur.trailing_zeros() as usize - 12).min(MAX_ORDER);
        while cur + block_size(k) > hi {
            k -= 1;
        }
        // SAFETY: reserved above, so owned by us.
        unsafe { a.buddy.free(cur, k) };
        cur += block_size(k);
    }
    assert_eq!(a.buddy.free_bytes(), size);
    assert_eq!(a.buddy.alloc(11), Some(base));
}

#[test]
fn reserve_rounds_outwards_and_spans_blocks() {
    let mut a = Arena::full(2 * MIB);
    let base = a.base();
    // Make the free pool fragmented: allocate all pages, free all but one in the middle.
    let mut pages = Vec::new();
    while let Some(p) = a.buddy.alloc(0) {
        pages.push(p);
    }
    let hole = base + MIB;
    for &p in &pages {
        if p != hole {
            // SAFETY: allocated above.
            unsafe { a.buddy.free(p, 0) };
        }
    }
    // A range spanning the allocated page fails; ranges around it work.
    assert!(!a.buddy.reserve(hole - 100, hole + 100));
    assert!(a.buddy.reserve(hole - 3 * 4096 - 5, hole - 1));
    assert!(a.buddy.reserve(hole + 4096, hole + 5 * 4096 + 1));
    assert_eq!(a.buddy.free_bytes(), 2 * MIB - 10 * 4096);
    assert!(!a.buddy.reserve(hole - 4096, hole));
}

/// Random alloc/free/reserve checked against a model: which allocation owns each page.
#[test]
fn random_stress_against_model() {
    let size = 8 * MIB;
    let pages = size / PAGE_SIZE;
    // Leave the first and last 64 KiB out of the pool, to exercise range edges.
    let mut a = Arena::new(size, 0, size);
    let base = a.base();
    // SAFETY: the buffer is unused.
    unsafe { a.buddy.add_free_range(base + 64 * 1024, base + size - 64 * 1024) };
    let usable = size - 128 * 1024;
    let mut owner = vec![u32::MAX; pages]; // page -> allocation id
    let mut live: Vec<(usize, usize, u32)> = Vec::new();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut in_use = 0;
    let mut reserves = [0; 2]; // failed, succeeded
    for id in 0..200_000u32 {
        let r = rand();
        if r % 64 == 0 {
            // Reserve a random page range: must succeed exactly when the model says all of it
            // is free. Reserved pages are later freed one by one, like order-0 blocks.
            let first = (rand() as usize) % pages;
            let last = (first + 1 + (rand() as usize) % 64).min(pages);
            let (lo, hi) = (base + first * PAGE_SIZE, base + last * PAGE_SIZE);
            let managed = first >= 16 && last <= pages - 16;
            let expect = managed && owner[first..last].iter().all(|&o| o == u32::MAX);
            assert_eq!(a.buddy.reserve(lo, hi), expect, "reserve pages {first}..{last}");
            reserves[expect as usize] += 1;
            if expect {
                owner[first..last].fill(id);
                for p in first..last {
                    live.push((base + p * PAGE_SIZE, 0, id));
                    // SAFETY: the page is ours now.
                    unsafe { *((base + p * PAGE_SIZE) as *mut u32) = id };
                }
                in_use += hi - lo;
            }
        } else if live.is_empty() || (r % 3 != 0) == ((id / 10_000) % 2 == 0) {
            // Alternate phases of mostly allocating and mostly freeing.
            let k = (rand() % 12) as usize;
            match a.buddy.alloc(k) {
                Some(b) => {
                    assert_eq!(b % block_size(k), 0);
                    assert!(b >= base + 64 * 1024 && b + block_size(k) <= base + size - 64 * 1024);
                    let first = (b - base) / PAGE_SIZE;
                    for (p, o) in owner[first..first + (1 << k)].iter_mut().enumerate() {
                        assert_eq!(*o, u32::MAX, "page {} handed out twice", first + p);
                        *o = id;
                    }
                    // SAFETY: the block is ours.
                    unsafe { *(b as *mut u32) = id };
                    live.push((b, k, id));
                    in_use += block_size(k);
                }
                None => {
                    // Failure is only allowed if the model has no fully free aligned block
                    // of order k in the managed part.
                    let n = 1usize << k;
                    let lo: usize = 16; // first managed page
                    let hi = pages - 16;
                    let mut first = lo.next_multiple_of(n);
                    while first + n <= hi {
                        assert!(
                            owner[first..first + n].iter().any(|&o| o != u32::MAX),
                            "alloc({k}) failed but pages {first}.. are free"
                        );
                        first += n;
                    }
                }
            }
        } else {
            let i = (r >> 8) as usize % live.len();
            let (b, k, id) = live.swap_remove(i);
            // SAFETY: allocated above and written there.
            assert_eq!(unsafe { *(b as *const u32) }, id);
            let first = (b - base) / PAGE_SIZE;
            owner[first..first + (1 << k)].fill(u32::MAX);
            // SAFETY: allocated above.
            unsafe { a.buddy.free(b, k) };
            in_use -= block_size(k);
        }
        assert_eq!(a.buddy.free_bytes(), usable - in_use);
    }
    for (b, k, _) in live {
        // SAFETY: allocated above.
        unsafe { a.buddy.free(b, k) };
    }
    assert_eq!(a.buddy.free_bytes(), usable);
    assert!(reserves[0] > 100 && reserves[1] > 100, "reserve outcomes {reserves:?}");
    // Fully coalesced: the two 4 MiB halves minus the edges give, per half, one block of
    // each order 4..=9 (64 KiB .. 2 MiB); two 2 MiB blocks must exist.
    assert!(a.buddy.alloc(9).is_some());
    assert!(a.buddy.alloc(9).is_some());
    assert_eq!(a.buddy.alloc(9), None);
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "double free")]
fn double_free_is_caught() {
    let mut a = Arena::full(MIB);
    let p = a.buddy.alloc(1).unwrap();
    // SAFETY: deliberately wrong, to test the debug check.
    unsafe {
        a.buddy.free(p, 1);
        a.buddy.free(p, 1);
    }
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "double free")]
fn free_inside_merged_block_is_caught() {
    let mut a = Arena::full(MIB);
    let p = a.buddy.alloc(0).unwrap();
    let q = a.buddy.alloc(0).unwrap();
    // SAFETY: deliberately wrong, to test the debug check.
    unsafe {
        a.buddy.free(p, 0);
        a.buddy.free(q, 0); // merges with p
        a.buddy.free(q, 0);
    }
}

#[test]
fn max_order_blocks() {
    // A 1 GiB aligned region is too much to allocate in tests; check the arithmetic instead.
    assert_eq!(block_size(MAX_ORDER), 1 << 30);
    let mut a = Arena::full(MIB);
    assert_eq!(a.buddy.alloc(MAX_ORDER), None);
}

// The boot-time range helper used by `mem::init` is pure too.
#[allow(dead_code)]
#[path = "../../kernel/src/mem/ranges.rs"]
mod ranges;

#[test]
fn excluded_ranges_gaps_and_first_fit() {
    let mut ex = ranges::Excluded::<4>::new();
    // Added out of order, unaligned, overlapping; widened to 4 KiB pages.
    ex.add(0x9000, 0xa001, 0x1000); // [0x9000, 0xb000)
    ex.add(0x1800, 0x2000, 0x1000); // [0x1000, 0x2000)
    ex.add(0x5, 0x5, 0x1000); // empty: ignored
    ex.add(0x8000, 0x9800, 0x1000); // [0x8000, 0xa000)
    let mut gaps = Vec::new();
    ex.for_each_gap(0, 0x10000, |a, b| gaps.push((a, b)));
    assert_eq!(gaps, [(0, 0x1000), (0x2000, 0x8000), (0xb000, 0x10000)]);
    gaps.clear();
    ex.for_each_gap(0x1800, 0x9000, |a, b| gaps.push((a, b)));
    assert_eq!(gaps, [(0x2000, 0x8000)]);
    gaps.clear();
    ex.for_each_gap(0x8100, 0xa000, |a, b| gaps.push((a, b)));
    assert!(gaps.is_empty());

    assert_eq!(ex.first_fit(0, 0x10000, 0x1000, 0x1000), Some(0));
    assert_eq!(ex.first_fit(0, 0x10000, 0x2000, 0x1000), Some(0x2000));
    assert_eq!(ex.first_fit(0, 0x10000, 0x6000, 0x1000), Some(0x2000));
    assert_eq!(ex.first_fit(0, 0x10000, 0x6001, 0x1000), None);
    assert_eq!(ex.first_fit(0, 0x20000, 0x7000, 0x1000), Some(0xb000));
    assert_eq!(ex.first_fit(0x2000, 0x10000, 0x1000, 0x4000), Some(0x4000));
    assert_eq!(ex.first_fit(0x8000, 0xb000, 0x1000, 0x1000), None);
    assert_eq!(ex.first_fit(0, 0x10000, 0, 0x1000), Some(0));
}

#[test]
fn excluded_ranges_can_be_removed() {
    let mut ex = ranges::Excluded::<3>::new();
    ex.add(0x1000, 0x2000, 0x1000);
    ex.add(0x4000, 0x8000, 0x1000);
    ex.add(0x9000, 0xa000, 0x1000);
    assert!(!ex.remove(0x4000, 0x7000, 0x1000), "not a range that was added");
    // Named as it was added: widened the same way.
    assert!(ex.remove(0x4800, 0x7800, 0x1000));
    let mut gaps = Vec::new();
    ex.for_each_gap(0, 0x10000, |a, b| gaps.push((a, b)));
    assert_eq!(gaps, [(0, 0x1000), (0x2000, 0x9000), (0xa000, 0x10000)]);
    // Room again for another.
    ex.add(0xc000, 0xd000, 0x1000);
    assert_eq!(ex.first_fit(0x2000, 0x10000, 0x3000, 0x1000), Some(0x2000));
    assert_eq!(ex.first_fit(0xa000, 0x10000, 0x3000, 0x1000), Some(0xd000));
}

#[test]
#[should_panic(expected = "too many")]
fn excluded_ranges_overflow_panics() {
    let mut ex = ranges::Excluded::<1>::new();
    ex.add(0, 1, 1);
    ex.add(2, 3, 1);
}

/// Splitting a large block for a small allocation writes nothing beyond the first 2 MiB of it:
/// the nodes of the upper halves that start on 2 MiB boundaries live in the side table, so no
/// memory nobody uses is touched (each such 2 MiB would cost the host a huge page).
#[test]
fn splitting_touches_only_the_first_2_mib() {
    let size = 64 * MIB;
    let mut a = Arena::full(size);
    let base = a.base();
    assert_eq!(a.buddy.alloc(0), Some(base));
    // SAFETY: the arena's buffer is `size` bytes, zeroed when made.
    let untouched = unsafe { std::slice::from_raw_parts((base + 2 * MIB) as *const u8, size - 2 * MIB) };
    assert!(untouched.iter().all(|&b| b == 0), "a node was written beyond the first 2 MiB");
    // The halves are still found and merged back.
    // SAFETY: the block just allocated.
    unsafe { a.buddy.free(base, 0) };
    assert_eq!(a.buddy.free_bytes(), size);
    assert_eq!(a.buddy.alloc((size / PAGE_SIZE).trailing_zeros() as usize), Some(base));
}
