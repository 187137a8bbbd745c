//! A binary buddy allocator over one contiguous physical range.
//!
//! Blocks are `PAGE_SIZE << order` bytes and aligned to their size in absolute address terms
//! (so a 2 MiB block can back a huge page). Free blocks are kept on intrusive doubly linked
//! lists, one per order, whose nodes live in the free blocks themselves; memory is assumed
//! to be directly addressable (address == pointer).
//!
//! The side tables are a bitmap with one bit per page, "a free block starts here", and the
//! nodes of free blocks that start on a 2 MiB boundary: splitting a large block writes a node
//! at each upper half, and were they in the blocks, splitting 1 GiB down would touch nine
//! 2 MiB pages nobody uses, each a huge page the host must allocate (what made `hrt`'s memory
//! grow with `--mem`). A free block's order is stored in its node, so asking "is my buddy free
//! at order k?" costs one bit test and one load. Every operation is O(MAX_ORDER) at worst and
//! never scans a list or touches memory page by page, because in this kernel each instruction
//! may be emulated.
//!
//! This file depends on nothing but `core` so the host test suite can include it directly.

use core::ptr;

/// log2 of the smallest block.
pub const PAGE_SHIFT: usize = 12;
pub const PAGE_SIZE: usize = 1 << PAGE_SHIFT;
/// Largest order: 4 KiB << 18 = 1 GiB.
pub const MAX_ORDER: usize = 18;

/// Free blocks starting on a multiple of this keep their node in the side table.
const CHUNK: usize = 2 << 20;

/// End-of-list marker (0 can be a valid block address on the host or in a zone at 0).
const NIL: usize = usize::MAX;

/// Bytes in a block of `order`.
#[inline]
pub const fn block_size(order: usize) -> usize {
    PAGE_SIZE << order
}

/// Header written at the start of every free block.
#[repr(C)]
struct FreeNode {
    next: usize,
    prev: usize,
    order: usize,
}

pub struct Buddy {
    /// Managed range `[base, end)`, page aligned.
    base: usize,
    end: usize,
    /// One bit per page of the managed range: set iff a free block starts at that page.
    bitmap: *mut u64,
    /// The nodes of free blocks at 2 MiB boundaries, one per 2 MiB from `chunk_base`.
    chunk_nodes: *mut FreeNode,
    chunk_base: usize,
    /// Head of each order's free list, or `NIL`.
    heads: [usize; MAX_ORDER + 1],
    /// Bit k set iff `heads[k]` is not empty, so alloc finds a block with one `tzcnt`.
    nonempty: u32,
    free: usize,
    total: usize,
}

// SAFETY: the raw pointers refer to memory owned by this allocator; callers serialise access
// (the kernel wraps every `Buddy` in a lock).
unsafe impl Send for Buddy {}

impl Buddy {
    /// An allocator managing nothing; call `init` before use.
    pub const fn empty() -> Buddy {
        Buddy {
            base: 0,
            end: 0,
            bitmap: ptr::null_mut(),
            chunk_nodes: ptr::null_mut(),
            chunk_base: 0,
            heads: [NIL; MAX_ORDER + 1],
            nonempty: 0,
            free: 0,
            total: 0,
        }
    }

    /// Bytes of metadata `init` needs to manage `size` bytes (a multiple of 8): the bitmap,
    /// then a node per 2 MiB (and one more for each end, wherever the range starts).
    pub const fn metadata_bytes(size: usize) -> usize {
        Self::bitmap_bytes(size) + Self::chunk_count(size) * core::mem::size_of::<FreeNode>()
    }

    const fn bitmap_bytes(size: usize) -> usize {
        (size / PAGE_SIZE).div_ceil(64) * 8
    }

    const fn chunk_count(size: usize) -> usize {
        if size == 0 {
            0
        } else {
            size / CHUNK + 2
        }
    }

    /// Manages the pages of `[base, base + size)` (rounded inwards to pages), with nothing
    /// free yet.
    ///
    /// # Safety
    /// `meta` must be 8-byte aligned, point to `metadata_bytes(size)` writable bytes used by
    /// nothing else, and be all zero if `meta_zeroed` (only the bitmap needs to be: nodes are
    /// written before they are read). The managed memory must be addressable
    /// and, once added as free, used by nothing else.
    pub unsafe fn init(&mut self, base: usize, size: usize, meta: *mut u8, meta_zeroed: bool) {
        let start = align_up(base, PAGE_SIZE);
        let end = align_down(base.saturating_add(size), PAGE_SIZE).max(start);
        *self = Buddy::empty();
        self.base = start;
        self.end = end;
        self.bitmap = meta.cast();
        // SAFETY: the nodes follow the bitmap inside the caller's `metadata_bytes(size)`.
        self.chunk_nodes = unsafe { meta.add(Self::bitmap_bytes(size)) }.cast();
        self.chunk_base = align_down(start, CHUNK);
        if !meta_zeroed {
            // SAFETY: the caller provides this many writable bytes; write_bytes is one
            // `rep stosb`, not a loop of emulated stores.
            unsafe { ptr::write_bytes(meta, 0, Self::bitmap_bytes(size)) };
        }
    }

    /// Start of the managed range.
    pub fn base(&self) -> usize {
        self.base
    }

    /// End of the managed range.
    pub fn end(&self) -> usize {
        self.end
    }

    /// Whether `addr` lies in the managed range.
    pub fn contains(&self, addr: usize) -> bool {
        addr >= self.base && addr < self.end
    }

    /// Bytes currently free.
    pub fn free_bytes(&self) -> usize {
        self.free
    }

    /// Bytes ever handed to `add_free_range`: usable memory, whether free or allocated.
    pub fn total_bytes(&self) -> usize {
        self.total
    }

    /// Frees `[start, end)` (rounded inwards to pages, clipped to the managed range) as the
    /// largest aligned blocks that fit: O(MAX_ORDER) blocks, not one per page.
    ///
    /// # Safety
    /// The range must be unused memory that is not already free.
    pub unsafe fn add_free_range(&mut self, start: usize, end: usize) {
        let start = align_up(start.max(self.base), PAGE_SIZE);
        let end = align_down(end.min(self.end), PAGE_SIZE);
        if start < end {
            self.total += end - start;
            // SAFETY: forwarded from the caller.
            unsafe { self.free_range(start, end) };
        }
    }

    /// Allocates a block of `order`, aligned to its size.
    pub fn alloc(&mut self, order: usize) -> Option<usize> {
        if order > MAX_ORDER {
            return None;
        }
        let candidates = self.nonempty >> order;
        if candidates == 0 {
            return None;
        }
        let mut k = order + candidates.trailing_zeros() as usize;
        let block = self.heads[k];
        // SAFETY: `block` heads list k, so it is a free block of order k.
        unsafe { self.unlink(block, k) };
        // Split down to the requested order, freeing the upper halves.
        while k > order {
            k -= 1;
            // SAFETY: the upper half lies in the block we own and nothing else uses it.
            unsafe { self.push(block + block_size(k), k) };
        }
        self.free -= block_size(order);
        Some(block)
    }

    /// Returns a block to the pool, merging it with its free buddies.
    ///
    /// # Safety
    /// `addr` must have come from `alloc(order)` (or be a part of `reserve`d memory forming
    /// an aligned block of `order`) and not be used afterwards.
    pub unsafe fn free(&mut self, addr: usize, order: usize) {
        debug_assert!(order <= MAX_ORDER, "buddy: free of order {order}");
        debug_assert!(addr.is_multiple_of(block_size(order)), "buddy: misaligned free {addr:#x}");
        debug_assert!(
            addr >= self.base && addr + block_size(order) <= self.end,
            "buddy: free of {addr:#x} outside the managed range"
        );
        debug_assert!(
            self.free_block_containing(addr).is_none()
                && self.free_block_containing(addr + block_size(order) - 1).is_none(),
            "buddy: double free of {addr:#x} (order {order})"
        );
        self.free += block_size(order);
        // SAFETY: forwarded from the caller.
        unsafe { self.merge_and_push(addr, order) };
    }

    /// Gives back the page-aligned range `[start, end)` of memory that came from `alloc` or
    /// `reserve` (any page-aligned part of it), as the largest aligned blocks that fit.
    ///
    /// # Safety
    /// The range must be allocated memory of this buddy that is no longer used.
    pub unsafe fn free_pages(&mut self, start: usize, end: usize) {
        debug_assert!(
            start.is_multiple_of(PAGE_SIZE) && end.is_multiple_of(PAGE_SIZE) && start >= self.base && end <= self.end
        );
        // SAFETY: forwarded from the caller.
        unsafe { self.free_range(start, end) };
    }

    /// Takes `[start, end)` (rounded outwards to pages) out of the free pool if every page of
    /// it is free and managed; otherwise returns false and changes nothing. The caller then
    /// owns that memory and may give it back with `free` in aligned blocks.
    pub fn reserve(&mut self, start: usize, end: usize) -> bool {
        let start = align_down(start, PAGE_SIZE);
        let end = align_up(end, PAGE_SIZE);
        if start >= end || start < self.base || end > self.end {
            return false;
        }
        // First pass: every page must lie in some free block. Free blocks never overlap, so
        // stepping from block end to block end visits each covering block once.
        let mut cur = start;
        while cur < end {
            match self.free_block_containing(cur) {
                Some((block, order)) => cur = block + block_size(order),
                None => return false,
            }
        }
        // Second pass: take the covering blocks and give back the parts outside the range.
        // Those parts only merge with memory outside [start, end), so the blocks still to be
        // visited are unchanged.
        let mut cur = start;
        while cur < end {
            let (block, order) = self.free_block_containing(cur).expect("checked above");
            let block_end = block + block_size(order);
            // SAFETY: `block` is a free block of `order` (just looked up).
            unsafe { self.unlink(block, order) };
            self.free -= block_size(order);
            // SAFETY: the head and tail pieces were free a moment ago and are unused.
            unsafe {
                if block < start {
                    self.free_range(block, start);
                }
                if block_end > end {
                    self.free_range(end, block_end);
                }
            }
            cur = block_end;
        }
        true
    }

    /// The free block containing `addr`, as (block address, order), if any.
    fn free_block_containing(&self, addr: usize) -> Option<(usize, usize)> {
        if !self.contains(addr) {
            return None;
        }
        // Walk the aligned blocks containing `addr` from small to large; the first one that
        // starts a free block decides: free blocks are disjoint, so if the free block starting
        // there does not reach `addr`, no free block contains `addr`.
        for k in 0..=MAX_ORDER {
            let block = addr & !(block_size(k) - 1);
            if block < self.base {
                return None;
            }
            if self.is_free_head(block) {
                // SAFETY: a set bit means a free block starts here, so its node is written.
                let order = unsafe { (*self.node(block)).order };
                return (addr < block + block_size(order)).then_some((block, order));
            }
        }
        None
    }

    /// Frees `[start, end)` (page aligned, in range) without touching `total`.
    ///
    /// # Safety
    /// As for `add_free_range`.
    unsafe fn free_range(&mut self, mut start: usize, end: usize) {
        while start < end {
            // Largest order allowed by both the alignment of `start` and the bytes left.
            let align_order = (start.trailing_zeros() as usize).saturating_sub(PAGE_SHIFT);
            let fit_order = (usize::BITS - 1 - (end - start).leading_zeros()) as usize - PAGE_SHIFT;
            let order = align_order.min(fit_order).min(MAX_ORDER);
            self.free += block_size(order);
            // SAFETY: forwarded from the caller.
            unsafe { self.merge_and_push(start, order) };
            start += block_size(order);
        }
    }

    /// Merges the free block `addr` of `order` with free buddies, then lists the result.
    ///
    /// # Safety
    /// The block must be unused, in range and not already free.
    unsafe fn merge_and_push(&mut self, mut addr: usize, mut order: usize) {
        while order < MAX_ORDER {
            let buddy = addr ^ block_size(order);
            if buddy < self.base || buddy + block_size(order) > self.end || !self.is_free_head(buddy) {
                break;
            }
            // SAFETY: a set bit means the node of `buddy` is written.
            let buddy_order = unsafe { (*self.node(buddy)).order };
            if buddy_order != order {
                break;
            }
            // SAFETY: `buddy` is a free block of `order`.
            unsafe { self.unlink(buddy, order) };
            addr &= !block_size(order);
            order += 1;
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.push(addr, order) };
    }

    /// Puts the block at the head of its free list.
    ///
    /// # Safety
    /// The block must be unused, in range and on no list.
    unsafe fn push(&mut self, addr: usize, order: usize) {
        let head = self.heads[order];
        // SAFETY: the block is ours to write, and `head` (if any) is a listed free block.
        unsafe {
            ptr::write(self.node(addr), FreeNode { next: head, prev: NIL, order });
            if head != NIL {
                (*self.node(head)).prev = addr;
            }
        }
        self.heads[order] = addr;
        self.nonempty |= 1 << order;
        self.set_free_head(addr, true);
    }

    /// Removes a listed free block from its list.
    ///
    /// # Safety
    /// `addr` must be on the free list of `order`.
    unsafe fn unlink(&mut self, addr: usize, order: usize) {
        // SAFETY: listed blocks and their neighbours hold valid nodes.
        unsafe {
            let FreeNode { next, prev, .. } = ptr::read(self.node(addr));
            if prev == NIL {
                self.heads[order] = next;
                if next == NIL {
                    self.nonempty &= !(1 << order);
                }
            } else {
                (*self.node(prev)).next = next;
            }
            if next != NIL {
                (*self.node(next)).prev = prev;
            }
        }
        self.set_free_head(addr, false);
    }

    /// Where the node of a free block starting at `addr` (in range) lives: in the side table
    /// for a 2 MiB boundary, else at the block's start.
    fn node(&self, addr: usize) -> *mut FreeNode {
        if addr.is_multiple_of(CHUNK) {
            self.chunk_nodes.wrapping_add((addr - self.chunk_base) / CHUNK)
        } else {
            addr as *mut FreeNode
        }
    }

    fn is_free_head(&self, addr: usize) -> bool {
        let page = (addr - self.base) >> PAGE_SHIFT;
        // SAFETY: `addr` is in range, so the word lies within the metadata given to `init`.
        let word = unsafe { *self.bitmap.add(page / 64) };
        word & (1 << (page % 64)) != 0
    }

    fn set_free_head(&mut self, addr: usize, set: bool) {
        let page = (addr - self.base) >> PAGE_SHIFT;
        // SAFETY: `addr` is in range, so the word lies within the metadata given to `init`.
        let word = unsafe { &mut *self.bitmap.add(page / 64) };
        if set {
            *word |= 1 << (page % 64);
        } else {
            *word &= !(1 << (page % 64));
        }
    }
}

const fn align_up(x: usize, align: usize) -> usize {
    x.saturating_add(align - 1) & !(align - 1)
}

const fn align_down(x: usize, align: usize) -> usize {
    x & !(align - 1)
}
