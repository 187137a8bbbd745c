//! Memory allocators (OpenMP 5.1, 2.13 and 3.13): `omp_init_allocator` with its traits,
//! the predefined allocators, def-allocator-var (OMP_ALLOCATOR, `omp_set/get_default_allocator`)
//! and `omp_alloc`, `omp_aligned_alloc`, `omp_calloc`, `omp_aligned_calloc`, `omp_realloc`,
//! `omp_free`.
//!
//! The host has one kind of memory, so every memory space is the default one (as libgomp
//! without memkind). Blocks come from the kernel heap, which the program's ring can reach
//! like the runtime's own data; a header before each block records how to free it. Traits
//! honoured: alignment, pool_size (a limit on the bytes an allocator has out), fallback and
//! fb_data; the others are accepted and have no effect on a host with one memory.

#![allow(non_snake_case)]

use alloc::boxed::Box;
use core::alloc::Layout;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::thread;

/// Predefined allocator handles (omp_allocator_handle_t), as libgomp numbers them.
pub const NULL_ALLOCATOR: usize = 0;
pub const DEFAULT_MEM_ALLOC: usize = 1;
const LAST_PREDEFINED: usize = 8;

/// The names OMP_ALLOCATOR accepts, in handle order from 1.
const PREDEFINED: [&[u8]; LAST_PREDEFINED] = [
    b"omp_default_mem_alloc",
    b"omp_large_cap_mem_alloc",
    b"omp_const_mem_alloc",
    b"omp_high_bw_mem_alloc",
    b"omp_low_lat_mem_alloc",
    b"omp_cgroup_mem_alloc",
    b"omp_pteam_mem_alloc",
    b"omp_thread_mem_alloc",
];

/// Memory spaces (omp_memspace_handle_t): default, large_cap, const, high_bw, low_lat.
const LAST_MEMSPACE: usize = 4;
const HIGH_BW_MEMSPACE: usize = 3;
/// omp_atv_true.
const ATV_TRUE: usize = 1;

// Trait keys and values (omp_alloctrait_key_t, omp_alloctrait_value_t).
const TRAIT_SYNC_HINT: usize = 1;
const TRAIT_ALIGNMENT: usize = 2;
const TRAIT_ACCESS: usize = 3;
const TRAIT_POOL_SIZE: usize = 4;
const TRAIT_FALLBACK: usize = 5;
const TRAIT_FB_DATA: usize = 6;
const TRAIT_PINNED: usize = 7;
const TRAIT_PARTITION: usize = 8;
const FB_DEFAULT_MEM: usize = 11;
const FB_NULL: usize = 12;
const FB_ABORT: usize = 13;
const FB_ALLOCATOR: usize = 14;

/// An allocator made by omp_init_allocator (its handle is its address).
struct Allocator {
    alignment: usize,
    pool_size: usize,
    fallback: usize,
    fb_data: usize,
    used: AtomicUsize,
}

/// What precedes every block: how to give it back.
#[repr(C)]
struct Header {
    base: *mut u8,
    layout_size: usize,
    layout_align: usize,
    allocator: usize,
    size: usize,
    /// What it counts against its allocator's pool (`pool_charge`).
    charged: usize,
}

const HEADER: usize = core::mem::size_of::<Header>();
/// The least alignment of a block (malloc's on x86-64).
const MIN_ALIGN: usize = 16;

fn custom(handle: usize) -> Option<&'static Allocator> {
    // SAFETY: a handle above the predefined ones is an Allocator omp_init_allocator leaked
    // (the program must not pass a destroyed one).
    (handle > LAST_PREDEFINED).then(|| unsafe { &*(handle as *const Allocator) })
}

/// OMP_ALLOCATOR: a predefined allocator's name (`icv::init`).
pub fn parse_env(v: &[u8]) -> Option<usize> {
    // As libgomp 12: a name compared without case, then only white space.
    let v = super::icv::skip_ws(v);
    PREDEFINED
        .iter()
        .position(|n| v.len() >= n.len() && v[..n.len()].eq_ignore_ascii_case(n))
        .and_then(|i| super::icv::skip_ws(&v[PREDEFINED[i].len()..]).is_empty().then_some(i + 1))
}

/// A predefined allocator's name (OMP_DISPLAY_ENV).
pub fn name(handle: usize) -> &'static str {
    let n = handle.checked_sub(1).and_then(|i| PREDEFINED.get(i)).unwrap_or(&PREDEFINED[0]);
    core::str::from_utf8(n).unwrap_or("omp_default_mem_alloc")
}

/// omp_init_allocator(memspace, ntraits, traits): `traits` is an array of omp_alloctrait_t,
/// {int key; uintptr_t value} (16 bytes each).
pub extern "C" fn omp_init_allocator(memspace: usize, ntraits: i32, traits: *const [usize; 2]) -> usize {
    if memspace > LAST_MEMSPACE {
        return NULL_ALLOCATOR;
    }
    let mut pinned = false;
    let mut a = Allocator {
        alignment: 1,
        pool_size: usize::MAX,
        fallback: FB_DEFAULT_MEM,
        fb_data: 0,
        used: AtomicUsize::new(0),
    };
    for i in 0..ntraits.max(0) as usize {
        // SAFETY: the program's array of `ntraits` traits.
        let [key, value] = unsafe { *traits.add(i) };
        // The key is a C enum (an int): the rest of its word is padding.
        let key = key as u32 as usize;
        let ok = match key {
            TRAIT_ALIGNMENT => {
                a.alignment = value;
                value.is_power_of_two()
            }
            TRAIT_POOL_SIZE => {
                a.pool_size = value;
                true
            }
            TRAIT_FALLBACK => {
                a.fallback = value;
                (FB_DEFAULT_MEM..=FB_ALLOCATOR).contains(&value)
            }
            TRAIT_FB_DATA => {
                a.fb_data = value;
                true
            }
            // sync_hint (contended .. private: 1-4), access (all .. cgroup: 1-4), partition
            // (environment .. blocked: 1-4 and 11-14 as libgomp's numbering): accepted, no
            // effect with one memory.
            TRAIT_SYNC_HINT | TRAIT_ACCESS | TRAIT_PARTITION => true,
            TRAIT_PINNED => {
                pinned = value == ATV_TRUE;
                true
            }
            _ => false,
        };
        if !ok {
            return NULL_ALLOCATOR;
        }
    }
    // As libgomp 12, which has no pinned memory and no high-bandwidth memory (memkind came
    // with gcc 13): such an allocator is none, though the predefined high_bw allocator gives
    // ordinary memory.
    if pinned || memspace == HIGH_BW_MEMSPACE {
        return NULL_ALLOCATOR;
    }
    if a.fallback == FB_ALLOCATOR && a.fb_data == NULL_ALLOCATOR {
        return NULL_ALLOCATOR;
    }
    Box::into_raw(Box::new(a)) as usize
}

pub extern "C" fn omp_destroy_allocator(handle: usize) {
    if custom(handle).is_some() {
        // SAFETY: made by omp_init_allocator with Box::into_raw, destroyed once.
        drop(unsafe { Box::from_raw(handle as *mut Allocator) });
    }
}

pub extern "C" fn omp_set_default_allocator(handle: usize) {
    thread::ctx().icv.allocator = handle;
}
pub extern "C" fn omp_get_default_allocator() -> usize {
    thread::ctx().icv.allocator
}

/// A block of `size` bytes aligned to `align` from `handle` (the default allocator for null),
/// following its fallback when it has no room.
fn allocate(align: usize, size: usize, handle: usize) -> *mut u8 {
    let handle = if handle == NULL_ALLOCATOR { omp_get_default_allocator() } else { handle };
    if size == 0 || !align.is_power_of_two() {
        return core::ptr::null_mut();
    }
    let a = custom(handle);
    let align = align.max(a.map_or(1, |a| a.alignment));
    let Some(charged) = pool_charge(size, align) else { return core::ptr::null_mut() };
    let align = align.max(MIN_ALIGN);
    let within_pool = a.is_none_or(|a| {
        let mut used = a.used.load(Ordering::Relaxed);
        loop {
            let Some(next) = used.checked_add(charged).filter(|&n| n <= a.pool_size) else {
                return false;
            };
            match a.used.compare_exchange_weak(used, next, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(u) => used = u,
            }
        }
    });
    let p = if within_pool { from_heap(align, size, handle, charged) } else { core::ptr::null_mut() };
    if !p.is_null() {
        return p;
    }
    if within_pool {
        if let Some(a) = a {
            a.used.fetch_sub(charged, Ordering::AcqRel);
        }
    }
    match a.map_or(FB_NULL, |a| a.fallback) {
        FB_DEFAULT_MEM => allocate(align, size, DEFAULT_MEM_ALLOC),
        FB_ABORT => super::team::fatal("out of memory in an OpenMP allocator with the abort_fb fallback"),
        FB_ALLOCATOR => allocate(align, size, a.map_or(NULL_ALLOCATOR, |a| a.fb_data)),
        _ => core::ptr::null_mut(),
    }
}

/// What a block of `size` bytes aligned to `align` counts against its allocator's pool, as
/// libgomp counts it: the size, libgomp's 32-byte header, and the padding an alignment above 8
/// may need; so a program's pool fills up where it does with libgomp (a 1,000-byte block does
/// not fit a 1,024-byte pool). None if that overflows.
fn pool_charge(size: usize, align: usize) -> Option<usize> {
    const LIBGOMP_HEADER: usize = 32;
    size.checked_add(LIBGOMP_HEADER + align.saturating_sub(8))
}

fn from_heap(align: usize, size: usize, handle: usize, charged: usize) -> *mut u8 {
    // Room for the header below the aligned block.
    let before = HEADER.div_ceil(align) * align;
    let Some(total) = size.checked_add(before) else {
        return core::ptr::null_mut();
    };
    let Ok(layout) = Layout::from_size_align(total, align) else {
        return core::ptr::null_mut();
    };
    // SAFETY: a non-zero size.
    let base = unsafe { alloc::alloc::alloc(layout) };
    if base.is_null() {
        return base;
    }
    // SAFETY: `before` <= total; the header fits below the block (before >= HEADER) and is
    // aligned (align >= 16 >= the header's alignment).
    unsafe {
        let p = base.add(before);
        let h = p.sub(HEADER) as *mut Header;
        h.write(Header { base, layout_size: total, layout_align: align, allocator: handle, size, charged });
        p
    }
}

/// The header of a block this module handed out.
///
/// # Safety
/// `p` came from `allocate` and has not been freed.
unsafe fn header(p: *mut u8) -> &'static Header {
    // SAFETY: see `from_heap`.
    unsafe { &*(p.sub(HEADER) as *const Header) }
}

pub extern "C" fn omp_alloc(size: usize, handle: usize) -> *mut u8 {
    allocate(1, size, handle)
}
pub extern "C" fn omp_aligned_alloc(align: usize, size: usize, handle: usize) -> *mut u8 {
    allocate(align, size, handle)
}
pub extern "C" fn omp_calloc(n: usize, size: usize, handle: usize) -> *mut u8 {
    omp_aligned_calloc(1, n, size, handle)
}
pub extern "C" fn omp_aligned_calloc(align: usize, n: usize, size: usize, handle: usize) -> *mut u8 {
    let Some(total) = n.checked_mul(size) else {
        return core::ptr::null_mut();
    };
    let p = allocate(align, total, handle);
    if !p.is_null() {
        // SAFETY: a fresh block of `total` bytes.
        unsafe { core::ptr::write_bytes(p, 0, total) };
    }
    p
}

/// omp_free(ptr, allocator): the block's own allocator frees it (the argument may be null).
pub extern "C" fn omp_free(p: *mut u8, _handle: usize) {
    if !p.is_null() {
        release(p, true);
    }
}

/// Gives block `p` back to the heap, and its bytes to its allocator's pool when `count`.
fn release(p: *mut u8, count: bool) {
    // SAFETY: a block from omp_alloc and friends (the program's contract).
    let h = unsafe { header(p) };
    let (base, size, align, handle, used) = (h.base, h.layout_size, h.layout_align, h.allocator, h.charged);
    if let Some(a) = custom(handle).filter(|_| count) {
        a.used.fetch_sub(used, Ordering::AcqRel);
    }
    // SAFETY: allocated in from_heap with this layout.
    unsafe { alloc::alloc::dealloc(base, Layout::from_size_align_unchecked(size, align)) };
}

/// omp_realloc(ptr, size, allocator, free_allocator): a new block from `allocator` (null:
/// the block's own one) with the old contents, the old block freed.
pub extern "C" fn omp_realloc(p: *mut u8, size: usize, handle: usize, free_handle: usize) -> *mut u8 {
    if p.is_null() {
        return omp_alloc(size, handle);
    }
    if size == 0 {
        omp_free(p, free_handle);
        return core::ptr::null_mut();
    }
    // SAFETY: as in omp_free.
    let (old_size, old_charged, old_handle) = unsafe { (header(p).size, header(p).charged, header(p).allocator) };
    let handle = if handle == NULL_ALLOCATOR { old_handle } else { handle };
    // Within one allocator the old block's bytes count as given back first (the routine
    // deallocates it and allocates anew; libgomp does the same): a pool with room for the new
    // size alone has room for the reallocation.
    let same_pool = custom(handle).filter(|_| handle == old_handle);
    if let Some(a) = same_pool {
        a.used.fetch_sub(old_charged, Ordering::AcqRel);
    }
    let q = omp_alloc(size, handle);
    if q.is_null() {
        if let Some(a) = same_pool {
            a.used.fetch_add(old_charged, Ordering::AcqRel);
        }
        return q;
    }
    // SAFETY: both blocks hold at least the smaller size.
    unsafe { core::ptr::copy_nonoverlapping(p, q, old_size.min(size)) };
    release(p, same_pool.is_none());
    q
}

/// GOMP_alloc(alignment, size, allocator): the `allocate` clause's private copies (gcc 12);
/// running out of memory ends the program, as in libgomp.
pub extern "C" fn GOMP_alloc(align: usize, size: usize, handle: usize) -> *mut u8 {
    let p = allocate(align, size, handle);
    if p.is_null() && size != 0 {
        super::team::fatal("out of memory in an allocate clause");
    }
    p
}
/// GOMP_free(ptr, allocator): the end of an `allocate` clause's copy.
pub extern "C" fn GOMP_free(p: *mut u8, handle: usize) {
    omp_free(p, handle)
}
