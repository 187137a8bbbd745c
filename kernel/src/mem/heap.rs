//! The kernel heap (`#[global_allocator]`).
//!
//! Small requests (up to 2 KiB) are rounded up to a power-of-two size class. Each class has
//! a free list of returned objects and a bump region carved lazily out of a 64 KiB page block,
//! so neither allocating nor refilling loops over objects. Objects of a class are aligned to
//! the class size because chunks are 64 KiB aligned. Larger requests, or alignments above
//! 2 KiB, go straight to the page allocator. No headers: `dealloc` recomputes the class from
//! the layout it is given.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::buddy::{block_size, MAX_ORDER};
use crate::sync::spinlock::IrqSpinLock;

/// log2 of the smallest and largest size classes (16 B, 2 KiB).
const MIN_SHIFT: usize = 4;
const MAX_SHIFT: usize = 11;
const CLASSES: usize = MAX_SHIFT - MIN_SHIFT + 1;
/// Small objects come from page blocks of this order (64 KiB).
const CHUNK_ORDER: usize = 4;

struct Class {
    /// Singly linked list of freed objects (the link is the object's first word); 0 = empty.
    free: usize,
    /// Unused part `[bump, bump_end)` of the class's current chunk.
    bump: usize,
    bump_end: usize,
}

struct Classes([Class; CLASSES]);

// SAFETY: the addresses refer to heap memory owned by the allocator; the lock serialises use.
unsafe impl Send for Classes {}

static CLASSES_LOCK: IrqSpinLock<Classes> =
    IrqSpinLock::new(Classes([const { Class { free: 0, bump: 0, bump_end: 0 } }; CLASSES]));

/// Bytes handed out and not yet returned (rounded to class or block sizes).
static IN_USE: AtomicUsize = AtomicUsize::new(0);

/// Where a layout is served from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bucket {
    /// Size class index (object size `1 << (MIN_SHIFT + i)`).
    Small(usize),
    /// Page block order.
    Pages(usize),
}

impl Bucket {
    fn of(layout: Layout) -> Bucket {
        let need = layout.size().max(layout.align()).max(1 << MIN_SHIFT);
        if need <= 1 << MAX_SHIFT {
            let shift = (usize::BITS - (need - 1).leading_zeros()) as usize;
            Bucket::Small(shift - MIN_SHIFT)
        } else {
            // Buddy blocks are aligned to their size, which covers the alignment.
            Bucket::Pages(super::order_for(need))
        }
    }

    fn bytes(self) -> usize {
        match self {
            Bucket::Small(i) => 1 << (MIN_SHIFT + i),
            Bucket::Pages(order) => block_size(order),
        }
    }
}

/// Heap bytes currently allocated (rounded to class or block sizes).
pub fn stats() -> usize {
    IN_USE.load(Ordering::Relaxed)
}

pub struct KernelHeap;

#[global_allocator]
static HEAP: KernelHeap = KernelHeap;

// SAFETY: every block handed out is exclusively owned until `dealloc`, is at least
// `layout.size()` bytes and aligned to `layout.align()` (see `Bucket::of`).
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let bucket = Bucket::of(layout);
        let p = match bucket {
            Bucket::Small(i) => alloc_small(i),
            Bucket::Pages(order) if order <= MAX_ORDER => {
                super::alloc_pages(order, None).map_or(ptr::null_mut(), super::phys_to_virt)
            }
            Bucket::Pages(_) => ptr::null_mut(),
        };
        if !p.is_null() {
            IN_USE.fetch_add(bucket.bytes(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        let bucket = Bucket::of(layout);
        IN_USE.fetch_sub(bucket.bytes(), Ordering::Relaxed);
        match bucket {
            Bucket::Small(i) => {
                let mut classes = CLASSES_LOCK.lock();
                let class = &mut classes.0[i];
                // SAFETY: the object is ours again and at least a word long and aligned.
                unsafe { *(p as *mut usize) = class.free };
                class.free = p as usize;
            }
            Bucket::Pages(order) => super::free_pages(super::virt_to_phys(p), order),
        }
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `new_size`, rounded to `layout.align()`, fits an isize.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // Growing or shrinking within the same class or block keeps the object in place.
        if Bucket::of(new_layout) == Bucket::of(layout) {
            return p;
        }
        // SAFETY: the new layout is valid (above); the old block is the caller's to give up.
        unsafe {
            let q = self.alloc(new_layout);
            if !q.is_null() {
                ptr::copy_nonoverlapping(p, q, layout.size().min(new_size));
                self.dealloc(p, layout);
            }
            q
        }
    }
}

/// Pops an object of class `i`, refilling the class from a fresh chunk when it is empty.
fn alloc_small(i: usize) -> *mut u8 {
    let size = 1 << (MIN_SHIFT + i);
    let mut classes = CLASSES_LOCK.lock();
    let class = &mut classes.0[i];
    if class.free != 0 {
        let p = class.free;
        // SAFETY: listed objects are free and hold the next link in their first word.
        class.free = unsafe { *(p as *const usize) };
        return p as *mut u8;
    }
    if class.bump == class.bump_end {
        // Chunk sizes are multiples of every class size, so the bump region ends exactly.
        let Some(chunk) = super::alloc_pages(CHUNK_ORDER, None) else {
            return ptr::null_mut();
        };
        class.bump = super::phys_to_virt(chunk) as usize;
        class.bump_end = class.bump + block_size(CHUNK_ORDER);
    }
    let p = class.bump;
    class.bump += size;
    p as *mut u8
}
