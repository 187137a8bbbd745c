//! Physical memory: one buddy allocator per zone (NUMA node), plus the kernel heap.
//!
//! Each zone's allocator keeps its bitmap in the zone's own memory (the lowest free spot),
//! so a zone's bookkeeping stays node-local. Zones are independent locks; `alloc_pages`
//! prefers the current CPU's zone and falls back to the others.

pub mod buddy;
pub mod heap;
pub mod page_runs;
mod ranges;
pub mod table_pages;

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use hrt_abi::{flags, layout, nr, BootInfo, MAX_RAM_RANGES, MAX_RESERVED, MAX_ZONES};

use crate::arch::hypercall;
use crate::sync::spinlock::IrqSpinLock;
use buddy::{Buddy, PAGE_SIZE};
use ranges::Excluded;

pub use buddy::{block_size, MAX_ORDER};

/// One zone: its allocator, and its bounds readable without the lock (fixed after `init`).
struct Zone {
    buddy: IrqSpinLock<Buddy>,
    base: AtomicUsize,
    end: AtomicUsize,
}

impl Zone {
    const fn new() -> Zone {
        Zone { buddy: IrqSpinLock::new(Buddy::empty()), base: AtomicUsize::new(0), end: AtomicUsize::new(0) }
    }
}

static ZONES: [Zone; MAX_ZONES] = [const { Zone::new() }; MAX_ZONES];
static NUM_ZONES: AtomicUsize = AtomicUsize::new(0);

/// Guest RAM as the boot-info block describes it: `(start, end)` of each range, ascending;
/// unused entries are empty. Between them lies the hole below 4 GiB (devices, never RAM).
static RAM: [(AtomicU64, AtomicU64); MAX_RAM_RANGES] =
    [const { (AtomicU64::new(0), AtomicU64::new(0)) }; MAX_RAM_RANGES];

/// Physical address of each zone's metadata once its allocator is set up; 0 = not yet
/// (address 0 is in the reserved low memory, so it is never a real location).
static META: [AtomicU64; MAX_ZONES] = [const { AtomicU64::new(0) }; MAX_ZONES];

const PAGE: u64 = PAGE_SIZE as u64;

extern "C" {
    // Defined by kernel/linker.ld; only their addresses are meaningful.
    static __kernel_start: u8;
    static __kernel_end: u8;
}

/// Free memory `init` left out of the allocators because it ran in emulated ring 0: (zone,
/// start, end), added by `finish_init` in ring 3, where the buddy's bookkeeping runs natively.
/// Handing a zone's free memory to its buddy costs ~2,000 instructions, which a PVM host
/// emulates one by one in ring 0 (~7 ms of every boot); the boot needs only a little of it
/// before the kernel drops to ring 3 (page tables, the boot CPU's stacks, the first heap).
static DEFERRED: IrqSpinLock<[(usize, u64, u64); DEFERRED_MAX]> = IrqSpinLock::new([(0, 0, 0); DEFERRED_MAX]);
const DEFERRED_MAX: usize = 32;
/// The free memory `init` gives the allocators when it defers the rest: one aligned block of
/// this size (one free-list entry, where the first bytes of free memory in address order are
/// a dozen small gaps).
const EARLY_BLOCK: u64 = 16 << 20;

/// The part of the kernel's share of RAM that KVM does not know yet, `[LAZY_BASE, LAZY_LO)`
/// (`BootInfo::kernel_lazy`): the monitor registers the share's top at start and the rest as
/// the allocators run out (`grow`), downward. None of it is in an allocator, nor touched,
/// before the monitor has registered it: a touch would be an MMIO exit, which stops the VM, so
/// the kernel's page tables map it not present until then (`paging::now_present`).
static LAZY_BASE: AtomicU64 = AtomicU64::new(0);
static LAZY_LO: AtomicU64 = AtomicU64::new(0);

/// Sets up every zone's allocator. Runs once, on the boot CPU, before other CPUs start and
/// before the first heap allocation; the monitor's boot page tables map all guest RAM. In
/// emulated ring 0 it frees only an `EARLY_BLOCK`: `finish_init` frees the rest. The kernel's
/// lazy span is left out (its metadata too): `grow` frees it as the monitor registers it.
pub fn init(boot: &BootInfo) {
    for (i, r) in boot.ram[..(boot.num_ram as usize).min(MAX_RAM_RANGES)].iter().enumerate() {
        RAM[i].0.store(r.base, Ordering::Relaxed);
        RAM[i].1.store(r.base.saturating_add(r.size), Ordering::Relaxed);
    }
    let lazy = &boot.kernel_lazy;
    let (lazy_lo, lazy_hi) = (lazy.base.next_multiple_of(PAGE), lazy.base.saturating_add(lazy.size) & !(PAGE - 1));
    let lazy_hi = lazy_hi.max(lazy_lo);
    LAZY_BASE.store(lazy_lo, Ordering::Relaxed);
    LAZY_LO.store(lazy_hi, Ordering::Release);
    // A static, built in place: on the stack its zeroing and the copy out of the function that
    // built it were two `rep` string instructions of ~200 iterations, each iteration emulated
    // in ring 0 on a PVM host (~0.3 ms each).
    let mut excluded = EXCLUDED.lock();
    add_excluded(&mut excluded, boot);
    // Out of the zones' metadata and free memory until the monitor registers it.
    excluded.add(lazy_lo, lazy_hi, PAGE);
    let n = (boot.num_zones as usize).min(MAX_ZONES);
    let defer = crate::arch::ring3::runs_emulated();
    for z in 0..n {
        let (lo, hi) = zone_bounds(boot, z);
        if lo < hi {
            setup_zone(boot, z, &*excluded, lo, hi, defer);
        }
    }
    // What `grow` frees is the lazy span's RAM minus what is never free.
    excluded.remove(lazy_lo, lazy_hi, PAGE);
    NUM_ZONES.store(n, Ordering::Release);
}

/// Frees the ranges `init` deferred in the zones `zones` accepts.
fn add_deferred(zones: impl Fn(usize) -> bool) {
    let mut list = DEFERRED.lock();
    for entry in list.iter_mut().filter(|(z, start, end)| start < end && zones(*z)) {
        let (z, start, end) = core::mem::take(entry);
        // SAFETY: `init` found the range free and left it out of the allocator.
        unsafe { ZONES[z].buddy.lock().add_free_range(start as usize, end as usize) };
    }
}

/// Frees what `init` deferred and reports each zone. Boot CPU, once, before other CPUs start.
pub fn finish_init() {
    add_deferred(|_| true);
    for z in 0..num_zones() {
        let buddy = ZONES[z].buddy.lock();
        if buddy.end() > buddy.base() {
            crate::kinfo!(
                "kernel: mem: zone {z} [{:#x}, {:#x}): {} MiB free, {} KiB metadata at {:#x}",
                buddy.base(),
                buddy.end(),
                buddy.free_bytes() >> 20,
                Buddy::metadata_bytes(buddy.end() - buddy.base()) >> 10,
                META[z].load(Ordering::Relaxed)
            );
        }
    }
    let lazy = lazy_bytes();
    if lazy > 0 {
        crate::kinfo!(
            "kernel: mem: {} MiB more of the kernel's share as it is needed, below {:#x}",
            lazy >> 20,
            LAZY_LO.load(Ordering::Relaxed)
        );
    }
}

/// Zone `z`'s page-aligned bounds.
fn zone_bounds(boot: &BootInfo, z: usize) -> (u64, u64) {
    let info = boot.zones[z];
    let lo = info.base.next_multiple_of(PAGE);
    let hi = info.base.saturating_add(info.size) & !(PAGE - 1);
    (lo, hi)
}

/// Everything that is never free, whichever zone it falls in: what is not RAM (the hole below
/// 4 GiB and anything above the last range) too.
fn add_excluded(excluded: &mut Excluded<EXCLUDED_MAX>, boot: &BootInfo) {
    excluded.add(0, layout::LOW_RESERVED_END, PAGE);
    let mut ram_end = 0;
    for (start, end) in ram_ranges() {
        excluded.add(ram_end, start, PAGE);
        ram_end = end;
    }
    excluded.add(ram_end, u64::MAX, PAGE);
    let kernel_start = &raw const __kernel_start as u64;
    let kernel_end = &raw const __kernel_end as u64;
    excluded.add(kernel_start, kernel_end, PAGE);
    let stacks = boot.num_cpus as u64 * layout::BOOT_STACK_SIZE;
    excluded.add(boot.boot_stacks, boot.boot_stacks + stacks, PAGE);
    for r in &boot.reserved[..(boot.num_reserved as usize).min(MAX_RESERVED)] {
        excluded.add(r.base, r.base.saturating_add(r.size), PAGE);
    }
}

/// `add_excluded`'s ranges, and the lazy span while `init` runs.
const EXCLUDED_MAX: usize = MAX_RESERVED + 4 + MAX_RAM_RANGES;
/// `init`'s excluded ranges (see there), which `grow` keeps out of the lazy span's memory. Its
/// lock also makes `grow` one at a time: a piece of the lazy span is registered and freed once.
static EXCLUDED: IrqSpinLock<Excluded<EXCLUDED_MAX>> = IrqSpinLock::new(Excluded::new());

/// Places zone `z`'s metadata at its lowest free spot, sets up its allocator over `[lo, hi)`
/// and frees the rest. Leaves the zone empty if the metadata does not fit.
fn setup_zone<const N: usize>(boot: &BootInfo, z: usize, excluded: &Excluded<N>, lo: u64, hi: u64, defer_most: bool) {
    let meta_size = Buddy::metadata_bytes((hi - lo) as usize) as u64;
    let Some(meta) = excluded.first_fit(lo, hi, meta_size, PAGE) else {
        // Usual with `--numa`: a zone that the program's pool fills holds no kernel memory.
        crate::kinfo!("kernel: mem: zone {z} [{lo:#x}, {hi:#x}): no room for metadata; unused");
        return;
    };
    let zone = &ZONES[z];
    let mut buddy = zone.buddy.lock();
    let meta_zeroed = boot.flags & flags::MEMORY_ZEROED != 0;
    // SAFETY: `meta` lies in this zone, mapped, and clear of every excluded range, so nothing
    // else uses it; untouched guest RAM is zero when the monitor says so. Then every gap is
    // free, mapped memory that nothing else uses.
    unsafe {
        buddy.init(lo as usize, (hi - lo) as usize, phys_to_virt(meta), meta_zeroed);
        // Deferring: one aligned early block of each zone now (the kernel's page tables and
        // stacks come from chosen zones), the rest later.
        let mut early = false;
        add_gaps(&mut buddy, excluded, (meta, meta + meta_size), lo, hi, |start, end| {
            if !defer_most {
                return (start, end);
            }
            let block = start.next_multiple_of(EARLY_BLOCK);
            if !early && block + EARLY_BLOCK <= end && defer(z, start, block) {
                if defer(z, block + EARLY_BLOCK, end) {
                    early = true;
                    return (block, block + EARLY_BLOCK);
                }
                return (block, end);
            }
            if defer(z, start, end) {
                (start, start)
            } else {
                (start, end)
            }
        });
        if defer_most && !early {
            // No gap of this zone holds an aligned early block: all of it now.
            drop(buddy);
            add_deferred(|d| d == z);
            buddy = zone.buddy.lock();
        }
    }
    zone.base.store(buddy.base(), Ordering::Relaxed);
    zone.end.store(buddy.end(), Ordering::Relaxed);
    META[z].store(meta, Ordering::Relaxed);
}

/// Notes `[start, end)` of zone `z` for `finish_init`; false if the list is full (the caller
/// frees it now).
fn defer(z: usize, start: u64, end: u64) -> bool {
    let mut list = DEFERRED.lock();
    match list.iter_mut().find(|(_, s, e)| s >= e) {
        Some(slot) => {
            *slot = (z, start, end);
            true
        }
        None => false,
    }
}

/// Frees every part of `[lo, hi)` outside the excluded ranges and the zone's metadata: of each
/// such gap, the part `now` answers (it keeps the rest for later).
///
/// # Safety
/// Those parts must be unused, mapped memory of this buddy's zone, not already free.
unsafe fn add_gaps<const N: usize>(
    buddy: &mut Buddy,
    excluded: &Excluded<N>,
    meta: (u64, u64),
    lo: u64,
    hi: u64,
    mut now: impl FnMut(u64, u64) -> (u64, u64),
) {
    let mut meta_range = Excluded::<1>::new();
    meta_range.add(meta.0, meta.1, PAGE);
    excluded.for_each_gap(lo, hi, |start, end| {
        meta_range.for_each_gap(start, end, |start, end| {
            let (start, end) = now(start, end);
            if start < end {
                // SAFETY: forwarded from the caller.
                unsafe { buddy.add_free_range(start as usize, end as usize) };
            }
        });
    });
}

/// Allocates `4 KiB << order` bytes aligned to their size and returns the physical address.
/// `zone: None` prefers the current CPU's zone and falls back to the others; `Some(z)`
/// uses only zone `z`. The memory is not zeroed.
pub fn alloc_pages(order: usize, zone: Option<usize>) -> Option<u64> {
    loop {
        let seen = LAZY_LO.load(Ordering::Acquire);
        if let Some(at) = alloc_registered(order, zone) {
            return Some(at);
        }
        if !grow(seen, order, zone) {
            return None;
        }
    }
}

/// `alloc_pages` from what the allocators have now.
fn alloc_registered(order: usize, zone: Option<usize>) -> Option<u64> {
    let n = num_zones();
    if let Some(z) = zone {
        return if z < n { alloc_in(z, order) } else { None };
    }
    if n == 0 {
        return None;
    }
    let home = crate::cpu::current_zone() % n;
    (0..n).find_map(|i| alloc_in((home + i) % n, order))
}

/// Allocates `pages` contiguous 4 KiB pages in zone `z`, aligned to the power of two that
/// holds them (the rest of that block stays free), and returns the physical address. Not zeroed.
/// In emulated ring 0 the rest of the block is kept: freeing it cost ~350 instructions, which a
/// PVM host emulates one by one, against at most the block's other half (the boot's page-table
/// runs, the only caller: 15 pages of 32 at 17 GiB of RAM).
pub fn alloc_run(pages: usize, z: usize) -> Option<u64> {
    if z >= num_zones() || pages == 0 {
        return None;
    }
    let order = order_for(pages * PAGE_SIZE);
    let (mut buddy, at) = loop {
        let seen = LAZY_LO.load(Ordering::Acquire);
        let mut buddy = ZONES[z].buddy.lock();
        if let Some(at) = buddy.alloc(order) {
            break (buddy, at);
        }
        drop(buddy);
        if !grow(seen, order, Some(z)) {
            return None;
        }
    };
    if !crate::arch::ring3::runs_emulated() {
        // SAFETY: the tail of the block just allocated is unused.
        unsafe { buddy.free_pages(at + pages * PAGE_SIZE, at + block_size(order)) };
    }
    Some(at as u64)
}

fn alloc_in(z: usize, order: usize) -> Option<u64> {
    ZONES[z].buddy.lock().alloc(order).map(|a| a as u64)
}

/// An allocation of `order` (in zone `zone`, or any) found no block while the lazy span was
/// registered from `seen` up: asks the monitor for more of it (`nr::KERNEL_RAM_READY`) and
/// frees what it registered. True if the caller should try again: memory was added, by this
/// call or by another since `seen`. False when no more can come (all of the span is in the
/// allocators, or none of what is left is in `zone`), or for an order no block has.
///
/// One at a time (under `EXCLUDED`'s lock), so a piece is freed once; the others wait for it,
/// interrupts off, for as long as the monitor takes (~1 ms per GiB it registers).
fn grow(seen: u64, order: usize, zone: Option<usize>) -> bool {
    let base = LAZY_BASE.load(Ordering::Relaxed);
    if seen <= base || order > MAX_ORDER {
        return false;
    }
    let excluded = EXCLUDED.lock();
    let lo = LAZY_LO.load(Ordering::Acquire);
    if lo != seen {
        return true;
    }
    if let Some(z) = zone {
        let (zone_lo, zone_hi) = if z < num_zones() { zone_range(z) } else { (0, 0) };
        if zone_hi <= base || zone_lo >= lo {
            return false;
        }
    }
    // Room for a block of this order at least; the monitor registers more (it doubles what
    // the kernel has of its share at each request).
    let want = lo.saturating_sub(2 * block_size(order) as u64).max(base);
    let from = hypercall::call(nr::KERNEL_RAM_READY, &[want]);
    // The monitor stops the VM when it cannot register memory; a negative answer never returns.
    assert!(from >= 0, "the monitor could not give the kernel's memory to KVM");
    let from = (from as u64).next_multiple_of(PAGE).clamp(base, lo);
    if from >= lo {
        return false;
    }
    crate::arch::paging::now_present(from, lo);
    free_lazy(&excluded, from, lo);
    LAZY_LO.store(from, Ordering::Release);
    true
}

/// Gives the allocators `[from, to)` of the lazy span, which KVM has just registered, but for
/// what is never free. Under `EXCLUDED`'s lock (passed in), before `LAZY_LO` moves to `from`.
fn free_lazy(excluded: &Excluded<EXCLUDED_MAX>, from: u64, to: u64) {
    for zone in &ZONES[..num_zones()] {
        let (zone_lo, zone_hi) = (zone.base.load(Ordering::Relaxed) as u64, zone.end.load(Ordering::Relaxed) as u64);
        let (start, end) = (from.max(zone_lo), to.min(zone_hi));
        if start < end {
            let mut buddy = zone.buddy.lock();
            excluded.for_each_gap(start, end, |start, end| {
                // SAFETY: KVM knows `[from, to)` now and no allocator had any of it (`init` left
                // the lazy span out, and only `grow` and `take_fresh` free it, once each piece,
                // under the lock); what `add_excluded` keeps out is not freed.
                unsafe { buddy.add_free_range(start as usize, end as usize) };
            });
        }
    }
}

/// `bytes` (rounded up to pages) of RAM that nothing has written since the VM was made, for
/// the caller to keep for good: the top of the kernel's lazy span, registered with KVM now
/// and never in an allocator. It reads zero without being cleared (guest RAM starts zero, and
/// the monitor writes only what `add_excluded` keeps out), and its pages cost the host
/// nothing until they are touched. The rest of what the monitor registers goes to the
/// allocators, as in `grow`. None (nothing taken) where the span's top is not that much RAM
/// of one zone with nothing kept out: allocate and clear as usual then.
pub fn take_fresh(bytes: u64) -> Option<u64> {
    let size = bytes.next_multiple_of(PAGE);
    let excluded = EXCLUDED.lock();
    let lo = LAZY_LO.load(Ordering::Acquire);
    let start = lo.checked_sub(size).filter(|&s| s >= LAZY_BASE.load(Ordering::Relaxed))?;
    let mut whole = false;
    excluded.for_each_gap(start, lo, |s, e| whole |= s == start && e == lo);
    if !whole || zone_of(start).is_none() || zone_of(start) != zone_of(lo - 1) {
        return None;
    }
    let from = hypercall::call(nr::KERNEL_RAM_READY, &[start]);
    // The monitor stops the VM when it cannot register memory; a negative answer never returns.
    assert!(from >= 0, "the monitor could not give the kernel's memory to KVM");
    let from = (from as u64).next_multiple_of(PAGE).clamp(LAZY_BASE.load(Ordering::Relaxed), lo);
    crate::arch::paging::now_present(from.min(lo), lo);
    let taken = (from <= start).then_some(start);
    // What KVM knows now but the caller does not take.
    free_lazy(&excluded, from, if taken.is_some() { start } else { lo });
    LAZY_LO.store(from.min(lo), Ordering::Release);
    taken
}

/// The part of the lazy span the monitor has not registered yet, `[LAZY_BASE, LAZY_LO)`.
pub fn unregistered() -> (u64, u64) {
    (LAZY_BASE.load(Ordering::Relaxed), LAZY_LO.load(Ordering::Acquire))
}

/// Bytes of RAM in the lazy span that the monitor has not registered yet (see `LAZY_LO`).
fn lazy_bytes() -> usize {
    let mut bytes = 0;
    for_each_ram(LAZY_BASE.load(Ordering::Relaxed), LAZY_LO.load(Ordering::Acquire), |s, e| bytes += e - s);
    bytes as usize
}

/// Returns a block from `alloc_pages(order, _)` (or an aligned part of a `reserve`d range).
/// Panics if `addr` belongs to no zone.
pub fn free_pages(addr: u64, order: usize) {
    let z = zone_of(addr).unwrap_or_else(|| panic!("free_pages: {addr:#x} is in no zone"));
    // SAFETY: the caller gives back a block it owns; the buddy checks the rest in debug builds.
    unsafe { ZONES[z].buddy.lock().free(addr as usize, order) };
}

/// Takes the physical range `[start, end)` (rounded outwards to pages) out of the free pool
/// if all of it is free and in one zone; the caller then owns it and may give it back with
/// `free_pages` in aligned blocks. Returns false, changing nothing, otherwise.
pub fn reserve(start: u64, end: u64) -> bool {
    match zone_of(start) {
        Some(z) => ZONES[z].buddy.lock().reserve(start as usize, end as usize),
        None => false,
    }
}

/// The smallest order whose block holds `bytes` (may exceed `MAX_ORDER`).
pub fn order_for(bytes: usize) -> usize {
    if bytes <= PAGE_SIZE {
        0
    } else {
        (usize::BITS - (bytes - 1).leading_zeros()) as usize - buddy::PAGE_SHIFT
    }
}

/// The zone whose managed range contains `addr`.
pub fn zone_of(addr: u64) -> Option<usize> {
    let addr = addr as usize;
    (0..num_zones()).find(|&z| {
        let zone = &ZONES[z];
        addr >= zone.base.load(Ordering::Relaxed) && addr < zone.end.load(Ordering::Relaxed)
    })
}

/// Zone `z`'s managed physical range `(start, end)` (empty if the zone is unused).
pub fn zone_range(z: usize) -> (u64, u64) {
    let zone = &ZONES[z];
    (zone.base.load(Ordering::Relaxed) as u64, zone.end.load(Ordering::Relaxed) as u64)
}

pub fn num_zones() -> usize {
    NUM_ZONES.load(Ordering::Acquire)
}

pub fn zone_free_bytes(z: usize) -> usize {
    ZONES[z].buddy.lock().free_bytes()
}

/// Usable bytes of zone `z` (free or allocated; excludes reserved memory and metadata).
pub fn zone_total_bytes(z: usize) -> usize {
    ZONES[z].buddy.lock().total_bytes()
}

/// Free bytes in all zones, counting the kernel's share the monitor registers only as the
/// allocators need it (`grow`) as free. A `grow` under way may be counted twice for a moment.
pub fn total_free_bytes() -> usize {
    (0..num_zones()).map(zone_free_bytes).sum::<usize>() + lazy_bytes()
}

/// The guest RAM ranges `(start, end)`, ascending (set by `init`).
pub fn ram_ranges() -> impl Iterator<Item = (u64, u64)> + Clone {
    RAM.iter().map(|(s, e)| (s.load(Ordering::Relaxed), e.load(Ordering::Relaxed))).filter(|(s, e)| s < e)
}

/// Calls `f(start, end)` for each part of `[lo, hi)` that is RAM.
pub fn for_each_ram(lo: u64, hi: u64, mut f: impl FnMut(u64, u64)) {
    for (start, end) in ram_ranges() {
        let (s, e) = (start.max(lo), end.min(hi));
        if s < e {
            f(s, e);
        }
    }
}

/// The end of the RAM range that contains `addr`, if any.
pub fn ram_extent(addr: u64) -> Option<u64> {
    ram_ranges().find(|&(s, e)| (s..e).contains(&addr)).map(|(_, e)| e)
}

/// Whether all of `[start, end)` is RAM (one range: nothing crosses the hole).
pub fn is_ram(start: u64, end: u64) -> bool {
    start == end || ram_extent(start).is_some_and(|e| end <= e)
}

/// The kernel's pointer to physical address `p` (identity-mapped today).
#[inline]
pub fn phys_to_virt(p: u64) -> *mut u8 {
    p as *mut u8
}

/// The physical address of a kernel pointer into direct-mapped memory.
#[inline]
pub fn virt_to_phys(v: *const u8) -> u64 {
    v as u64
}
