//! The kernel heap (`#[global_allocator]`).
//!
//! Small requests (up to 2 KiB) are rounded up to a power-of-two size class. Each class has
//! a free list of returned objects and a bump region carved lazily out of a 64 KiB page block,
//! so neither allocating nor refilling loops over objects. Objects of a class are aligned to
//! the class size because chunks are 64 KiB aligned. Larger requests, or alignments above
//! 2 KiB, go straight to the page allocator. No headers: `dealloc` recomputes the class from
//! the layout it is given.
//!
//! Each CPU keeps up to `CACHE_MAX` free objects of each class of its own, taken and returned
//! with its interrupts (and so preemption) masked, without a lock or an atomic on a shared
//! line; only an empty or overfull per-CPU list goes to the shared classes, `CACHE_BATCH`
//! objects at a time. With one shared lock and one shared byte count, each deferred OpenMP
//! task (two objects, made on one CPU, freed on another) cost eight contended atomic
//! operations.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::buddy::{block_size, MAX_ORDER};
use crate::arch::irq;
use crate::sync::spinlock::IrqSpinLock;

/// log2 of the smallest and largest size classes (16 B, 2 KiB).
const MIN_SHIFT: usize = 4;
const MAX_SHIFT: usize = 11;
const CLASSES: usize = MAX_SHIFT - MIN_SHIFT + 1;
/// Small objects come from page blocks of this order (64 KiB).
const CHUNK_ORDER: usize = 4;

struct Class {
    /// Stack of batches of `CACHE_BATCH` freed objects, as CPUs spilled them: each batch is a
    /// list linked through its objects' first words (ending in 0), and the batches are linked
    /// through the second word of their first objects; 0 = empty. A refill takes a whole batch
    /// by its first object: walking a list of single objects to take 32 of them read each one,
    /// a serial cache miss apiece when another CPU freed them (the objects of OpenMP tasks made
    /// on one CPU and run on another: ~500 cycles per task when the host keeps the vCPUs far
    /// apart).
    batches: usize,
    /// Unused part `[bump, bump_end)` of the class's current chunk.
    bump: usize,
    bump_end: usize,
}

struct Classes([Class; CLASSES]);

// SAFETY: the addresses refer to heap memory owned by the allocator; the lock serialises use.
unsafe impl Send for Classes {}

static CLASSES_LOCK: IrqSpinLock<Classes> =
    IrqSpinLock::new(Classes([const { Class { batches: 0, bump: 0, bump_end: 0 } }; CLASSES]));

/// Bytes handed out as page blocks and not yet returned (small objects: `CpuCache::in_use`).
static IN_USE: AtomicUsize = AtomicUsize::new(0);

/// Free objects a CPU keeps of one class at most; past it, it gives `CACHE_BATCH` back.
const CACHE_MAX: usize = 64;
/// Objects moved between a CPU's list and the shared class at a time.
const CACHE_BATCH: usize = 32;

/// A CPU's free objects of one class (linked through their first word, as the shared lists).
#[derive(Clone, Copy)]
struct CpuList {
    head: usize,
    count: usize,
}

/// One CPU's lists, and the bytes of small objects it handed out less those returned on it
/// (negative when it frees what others made): on lines of its own.
#[repr(C, align(128))]
struct CpuCache {
    lists: [CpuList; CLASSES],
    in_use: isize,
}

struct CpuCaches([core::cell::UnsafeCell<CpuCache>; hrt_abi::MAX_CPUS]);

// SAFETY: each CPU touches only its own entry, with its interrupts masked (so the thread
// doing it stays on it); `stats` only reads the byte counts.
unsafe impl Sync for CpuCaches {}

static CACHES: CpuCaches = CpuCaches(
    [const { core::cell::UnsafeCell::new(CpuCache { lists: [CpuList { head: 0, count: 0 }; CLASSES], in_use: 0 }) };
        hrt_abi::MAX_CPUS],
);

/// Runs `f` on this CPU's cache with interrupts masked.
#[inline(always)]
fn with_cpu_cache<R>(f: impl FnOnce(&mut CpuCache) -> R) -> R {
    let were = irq::save_and_disable();
    // SAFETY: this CPU's entry; with interrupts masked nothing else on this CPU runs until
    // `restore`, and no other CPU touches it (see `CpuCaches`).
    let r = f(unsafe { &mut *CACHES.0[crate::cpu::id()].get() });
    irq::restore(were);
    r
}

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
    let small: isize = (0..crate::cpu::count())
        // SAFETY: a plain read of another CPU's count (a snapshot; see `CpuCaches`).
        .map(|c| unsafe { core::ptr::read_volatile(&(*CACHES.0[c].get()).in_use) })
        .sum();
    IN_USE.load(Ordering::Relaxed) + small.max(0) as usize
}

pub struct KernelHeap;

#[global_allocator]
static HEAP: KernelHeap = KernelHeap;

// SAFETY: every block handed out is exclusively owned until `dealloc`, is at least
// `layout.size()` bytes and aligned to `layout.align()` (see `Bucket::of`).
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let bucket = Bucket::of(layout);
        match bucket {
            Bucket::Small(i) => alloc_small(i),
            Bucket::Pages(order) if order <= MAX_ORDER => {
                let p = super::alloc_pages(order, None).map_or(ptr::null_mut(), super::phys_to_virt);
                if !p.is_null() {
                    IN_USE.fetch_add(bucket.bytes(), Ordering::Relaxed);
                }
                p
            }
            Bucket::Pages(_) => ptr::null_mut(),
        }
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        let bucket = Bucket::of(layout);
        match bucket {
            Bucket::Small(i) => free_small(i, p),
            Bucket::Pages(order) => {
                IN_USE.fetch_sub(bucket.bytes(), Ordering::Relaxed);
                super::free_pages(super::virt_to_phys(p), order)
            }
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

/// An object of class `i`: from this CPU's list, which is refilled from the shared class
/// when empty.
fn alloc_small(i: usize) -> *mut u8 {
    with_cpu_cache(|cache| {
        let list = &mut cache.lists[i];
        if list.head == 0 {
            refill(i, list);
            if list.head == 0 {
                return ptr::null_mut();
            }
        }
        let p = list.head;
        // SAFETY: listed objects are free and hold the next link in their first word.
        list.head = unsafe { *(p as *const usize) };
        list.count -= 1;
        cache.in_use += 1 << (MIN_SHIFT + i);
        p as *mut u8
    })
}

/// Gives object `p` of class `i` back to this CPU's list, moving `CACHE_BATCH` objects to the
/// shared class when the list is full.
fn free_small(i: usize, p: *mut u8) {
    with_cpu_cache(|cache| {
        cache.in_use -= 1 << (MIN_SHIFT + i);
        let list = &mut cache.lists[i];
        // SAFETY: the object is ours again and at least a word long and aligned.
        unsafe { *(p as *mut usize) = list.head };
        list.head = p as usize;
        list.count += 1;
        if list.count > CACHE_MAX {
            spill(i, list);
        }
    })
}

/// Gives the empty `list` up to `CACHE_BATCH` objects of class `i` from the shared class: a
/// spilled batch, else objects of its bump region (taking a fresh chunk when that is used up).
fn refill(i: usize, list: &mut CpuList) {
    let size = 1 << (MIN_SHIFT + i);
    let mut classes = CLASSES_LOCK.lock();
    let class = &mut classes.0[i];
    if class.batches != 0 {
        let first = class.batches;
        // SAFETY: a spilled batch's first object holds the next batch in its second word
        // (objects are at least two words).
        class.batches = unsafe { *(first as *const usize).add(1) };
        list.head = first;
        list.count = CACHE_BATCH;
        return;
    }
    for _ in 0..CACHE_BATCH {
        if class.bump == class.bump_end {
            // Chunk sizes are multiples of every class size, so the bump region ends exactly.
            let Some(chunk) = super::alloc_pages(CHUNK_ORDER, None) else {
                return;
            };
            class.bump = super::phys_to_virt(chunk) as usize;
            class.bump_end = class.bump + block_size(CHUNK_ORDER);
        }
        let p = class.bump;
        class.bump += size;
        // SAFETY: a free object of the class, now this CPU's.
        unsafe { *(p as *mut usize) = list.head };
        list.head = p;
        list.count += 1;
    }
}

/// Moves `CACHE_BATCH` objects of class `i` from `list` (which holds more) to the shared class.
fn spill(i: usize, list: &mut CpuList) {
    let first = list.head;
    let mut last = first;
    for _ in 1..CACHE_BATCH {
        // SAFETY: the list holds more than CACHE_BATCH linked free objects.
        last = unsafe { *(last as *const usize) };
    }
    // SAFETY: as above; `last` is the batch's final object.
    list.head = unsafe { *(last as *const usize) };
    list.count -= CACHE_BATCH;
    // SAFETY: the batch's objects are free and ours: it ends at `last`.
    unsafe { *(last as *mut usize) = 0 };
    let mut classes = CLASSES_LOCK.lock();
    let class = &mut classes.0[i];
    // SAFETY: as above; the second word of the batch's first object links the batches.
    unsafe { *(first as *mut usize).add(1) = class.batches };
    class.batches = first;
}
