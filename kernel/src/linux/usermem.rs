//! The program's memory: a pool of user-accessible, identity-mapped memory reserved by the
//! monitor, handed out in exact page runs (`PageRuns`, whose bookkeeping lives on the kernel
//! heap, never in the pool). mmap and brk hand out physical memory at once (no demand paging);
//! munmap gives it back.
//!
//! Invariant: **free pool memory reads zero.** The pool starts untouched (guest RAM is a fresh
//! anonymous host mapping, so zero, and it costs the host nothing until written), and memory is
//! zeroed when it comes back (munmap, mremap), not when it goes out. So mmap, brk and mremap
//! growth never zero anything, and memory never used since boot is never touched.
//!
//! The page map (`usermap`) says which pages are mapped, for the pointer checks of the kernel
//! and the monitor; it is kept here, where regions are recorded and cut.
//!
//! Free memory is not present in the page tables (from boot on, and again once unmapped:
//! `protect::unmap`), so touching memory the program was never given or gave back faults as on
//! Linux; memory taken from the free pool gets the default access back (`protect::reset`).
//! The break's window is present only below the break (`break_moved`).
//!
//! Large copies of program memory go through the monitor (`MEM_COPY`). Zeroing does too where
//! the kernel runs in emulated ring 0 (about a microsecond per 8 bytes there); where it runs
//! natively it clears memory itself, through an alias of the pool that stays writable while
//! the pages are not present, and only whole 2 MiB pages go to the monitor, which gives them
//! back to the host (`zero`). A VM exit costs more than clearing a few hundred KiB.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use super::errno::{Errno, EEXIST, EINVAL, ENOMEM};
use crate::arch::hypercall;
use crate::mem::page_runs::PageRuns;
use crate::sync::IrqSpinLock;

/// The pool's free memory and the program's mappings, under one lock so that taking and
/// replacing ranges is atomic.
struct Memory {
    free: PageRuns,
    /// Mapped regions of the program: start -> end (page-aligned, disjoint).
    regions: BTreeMap<u64, u64>,
    /// Holes: the gaps between a loaded image's segments (start -> end), neither mapped nor
    /// free, with pages that are not present, as Linux leaves them unmapped. A fixed mapping
    /// may take them (they are free address space to Linux).
    holes: BTreeMap<u64, u64>,
}

static MEMORY: IrqSpinLock<Memory> =
    IrqSpinLock::new(Memory { free: PageRuns::new(), regions: BTreeMap::new(), holes: BTreeMap::new() });
static POOL_LO: AtomicU64 = AtomicU64::new(0);
static POOL_HI: AtomicU64 = AtomicU64::new(0);
/// Which chunks of guest-physical memory (`layout::POOL_CHUNK` each, numbered from address 0)
/// of the pool KVM knows: the monitor gives the pool to KVM chunk by chunk as they are first
/// needed (`nr::RAM_READY`, `ensure_ready`). A forked child's VM has every chunk its parent's
/// had, so the copy it inherits holds.
static READY: [AtomicU64; READY_WORDS] = [const { AtomicU64::new(0) }; READY_WORDS];
const CHUNK: u64 = hrt_abi::layout::POOL_CHUNK;
const READY_CHUNKS: u64 = hrt_abi::layout::MAX_PHYS_END / CHUNK;
const READY_WORDS: usize = READY_CHUNKS.div_ceil(64) as usize;

pub const PAGE: u64 = crate::mem::page_runs::PAGE;
/// The host's huge page: `zero` hands whole ones to the monitor.
const LARGE: u64 = crate::arch::paging::LARGE_PAGE_SIZE;

/// `v` rounded up to a page; saturates at the last page boundary (callers check ranges).
pub fn page_up(v: u64) -> u64 {
    v.checked_next_multiple_of(PAGE).unwrap_or(!(PAGE - 1))
}

/// Sets up the pool over `[lo, hi)`, which the monitor reserved and left untouched (zero).
/// Only its RAM is free: the span may contain the hole below 4 GiB.
pub fn init(lo: u64, hi: u64) {
    {
        let mut mem = MEMORY.lock();
        crate::mem::for_each_ram(lo, hi, |s, e| mem.free.add(s, e));
    }
    POOL_LO.store(lo, Ordering::Relaxed);
    POOL_HI.store(hi, Ordering::Relaxed);
    // The monitor registers the chunk holding the pool's start before the vCPUs run
    // (`nr::RAM_READY`): one exit (~130 us) fewer when the program is loaded there.
    if lo < hi && lo / CHUNK < READY_CHUNKS {
        READY[(lo / CHUNK) as usize / 64].fetch_or(1 << ((lo / CHUNK) % 64), Ordering::AcqRel);
        crate::arch::paging::pool_alias_ready(lo, (lo / CHUNK + 1) * CHUNK);
    }
    super::usermap::init(lo, hi);
    // Free memory is not present until it is handed out (`protect::reset`), so a stray pointer
    // into memory the program was never given faults as on Linux: the boot page tables leave
    // the pool so (`paging::build_identity_map`), whole 1 GiB and 2 MiB leaves.
    super::protect::pool_starts_absent(lo, hi);
}

/// Makes sure the pool in `[start, end)` is memory KVM knows, before the kernel makes any of it
/// present: until then a touch of it would be an MMIO exit (see `nr::RAM_READY`). A look at
/// one bit per chunk once the chunks are KVM's.
pub fn ensure_ready(start: u64, end: u64) {
    ensure_ready_and_small_pages(start, end, 0);
}

/// `ensure_ready`, with `small` (nonzero: a 2 MiB page, see `SMALL_HOST_PAGES`) given 4 KiB
/// host pages in the same exit if one is needed; returns whether it was.
fn ensure_ready_and_small_pages(start: u64, end: u64, small: u64) -> bool {
    let (start, end) = (start.max(POOL_LO.load(Ordering::Relaxed)), end.min(POOL_HI.load(Ordering::Relaxed)));
    if start >= end {
        return false;
    }
    let (first, last) = (start / CHUNK, (end - 1) / CHUNK + 1);
    if (first..last).all(chunk_ready) {
        return false;
    }
    let run_end = hypercall::call(hrt_abi::nr::RAM_READY, &[start, end, small]);
    // The monitor stops the VM when it cannot register memory; a negative answer never returns.
    assert!(run_end >= 0, "the monitor could not give the program's memory to KVM");
    let upto = (run_end as u64).div_ceil(CHUNK).min(READY_CHUNKS).max(last);
    for chunk in first..upto {
        READY[chunk as usize / 64].fetch_or(1 << (chunk % 64), Ordering::AcqRel);
    }
    crate::arch::paging::pool_alias_ready(first * CHUNK, upto * CHUNK);
    true
}

fn chunk_ready(chunk: u64) -> bool {
    READY[chunk as usize / 64].load(Ordering::Acquire) & (1 << (chunk % 64)) != 0
}

pub fn pool_range() -> (u64, u64) {
    (POOL_LO.load(Ordering::Relaxed), POOL_HI.load(Ordering::Relaxed))
}

/// The RAM of the pool, free or not (its span may also hold the hole below 4 GiB).
pub fn pool_bytes() -> u64 {
    MEMORY.lock().free.total_bytes()
}

/// The program's mappings now, `(start, end)` in address order (adjacent ones not joined).
pub fn regions() -> Vec<(u64, u64)> {
    MEMORY.lock().regions.iter().map(|(&s, &e)| (s, e)).collect()
}

/// Whether `[start, end)` lies in the program's memory pool.
pub fn is_user_range(start: u64, end: u64) -> bool {
    let (lo, hi) = pool_range();
    start >= lo && end <= hi && start <= end && crate::mem::is_ram(start, end)
}

/// Zeroes program memory (or kernel memory), also pages that are not present in the program's
/// page tables (unmapped memory on its way back to the pool). Where kernel code runs
/// natively it clears memory within one 2 MiB page itself, through the pool's alias
/// (`paging::pool_alias`); a range with a whole 2 MiB page goes to the monitor (a VM exit,
/// worth it only then), which gives whole pages back to the host and clears the ends without
/// allocating what the host never gave (glibc's guard page below a thread stack, given back
/// with the stack's unused part). In emulated ring 0 the monitor does everything from 4 KiB on.
pub fn zero(addr: u64, len: u64) {
    let end = addr + len;
    let whole_page_inside = addr.next_multiple_of(LARGE) < end & !(LARGE - 1);
    // In 4 KiB host pages (`small_tops`) a clear here would make the host allocate the pages
    // the program never touched; the monitor clears only those the host has.
    let small = super::small_tops::any_overlapping(addr, end);
    let by_monitor = if crate::arch::ring3::kernel_runs_natively() { whole_page_inside || small } else { len >= 4096 };
    if by_monitor {
        // A thread stack's top keeps its small host pages for the next stack (`small_tops`),
        // and so does a page small mappings share (`sparse_pages`).
        let stay_small = small;
        zero_by_monitor(addr, len, if stay_small { hrt_abi::nr::MEM_ZERO_STAY_SMALL } else { 0 });
    } else {
        clear(addr, len);
    }
}

/// `nr::MEM_ZERO` (`mode` 0 or `MEM_ZERO_DROP`), by the monitor (`by_monitor`).
fn zero_by_monitor(addr: u64, len: u64, mode: u64) {
    by_monitor(hrt_abi::nr::MEM_ZERO, [addr, len, mode, 0]);
}

/// Monitor operation `op` (a hypercall number) through the channel, where its service thread
/// polls it or the doorbell's exit serves it, else by hypercall. A thread's exit (glibc gives
/// its stack's unused part back) cost ~65 us of VM exit on a PVM host; ~3 us this way.
fn by_monitor(op: u64, args: [u64; 4]) -> i64 {
    let all = [args[0], args[1], args[2], args[3], 0, 0];
    super::channel::monitor_op(op, all).unwrap_or_else(|| hypercall::call(op, &args))
}

/// Clears `[addr, addr + len)` here: pool memory through its alias (present or not in the
/// program's tables), other memory where it is. Pool chunks KVM does not know are left alone:
/// nothing in them was ever present, so they read zero (`ensure_ready`), and a touch through
/// the alias would be an MMIO exit (a range the program reserved `PROT_NONE` and never
/// opened, which it then unmaps: Go's heap arenas).
fn clear(addr: u64, len: u64) {
    let end = addr + len;
    let (lo, hi) = pool_range();
    let mut at = addr;
    while at < end {
        let in_pool = at >= lo && at < hi;
        let next = match at {
            _ if in_pool => ((at / CHUNK + 1) * CHUNK).min(end),
            _ if at < lo => lo.min(end),
            _ => end,
        };
        if !in_pool || chunk_ready(at / CHUNK) {
            let to = crate::arch::paging::pool_alias(at, next - at).unwrap_or(at as *mut u8);
            // SAFETY: callers pass memory they own; the alias maps the same bytes writable.
            unsafe { core::ptr::write_bytes(to, 0, (next - at) as usize) };
        }
        at = next;
    }
}

/// Copies program memory (through the monitor when that is faster).
pub fn copy(dst: u64, src: u64, len: u64) {
    if len >= 4096 && (len >= NATIVE_COPY_MAX || crate::arch::ring3::runs_emulated()) {
        hypercall::call(hrt_abi::nr::MEM_COPY, &[dst, src, len]);
    } else {
        // Memory KVM knows (the monitor's copy needs no slot; a touch here does), through the
        // pool's writable alias: the destination may be a read-only segment, and the source
        // PROT_NONE (not present where the program maps it: `mremap` moving such a mapping
        // faulted in the kernel). Outside the pool the source is read where it is mapped,
        // present (`protect::set` may have left it lazy).
        ensure_ready(dst, dst + len);
        ensure_ready(src, src + len);
        let to = crate::arch::paging::pool_alias(dst, len).unwrap_or(dst as *mut u8);
        let from = match crate::arch::paging::pool_alias(src, len) {
            Some(alias) => alias as *const u8,
            None => {
                super::protect::materialize(src, src + len);
                src as *const u8
            }
        };
        // SAFETY: callers pass memory they own; ranges may overlap; the alias maps the same
        // bytes writable.
        unsafe { core::ptr::copy(from, to, len as usize) };
    }
}

/// The largest copy the kernel makes itself when it runs natively (ring 3 on PVM). Below it a
/// `MEM_COPY` exit (~85 us here) costs more than the copy with its first touches: an empty
/// static program's three segments took 115, 33 and 6 us natively against 133, 95 and 83
/// through the monitor. Above, the monitor's copy touches no guest mapping, and the boot
/// program's large segments are not in guest RAM at all before it (`nr::MEM_COPY`): the
/// loader must copy them through the monitor whatever the ring.
const NATIVE_COPY_MAX: u64 = hrt_abi::nr::SEGMENT_COPY_BY_HOST;

/// The bytes of `Memory::regions`, kept with them (changed only under the memory lock), so
/// that the address space (`/proc/self/status`, RLIMIT_AS) costs no walk of the regions.
static MAPPED: AtomicU64 = AtomicU64::new(0);

/// Records the region `[start, end)` (replacing one that starts at `start`: a grown mapping).
/// Linux's default `vm.max_map_count`: a mapping that would make the program's areas more is
/// ENOMEM, and so is an munmap that would split one (a program that maps until it fails, as
/// LTP's munmap04 does, overflowed its own table of them here).
const MAX_MAP_COUNT: usize = 65_530;

/// Whether the program has `MAX_MAP_COUNT` areas: its regions, those that touch counted as one
/// as Linux merges them (only counted when there are that many regions at all).
fn at_map_count_limit(regions: &BTreeMap<u64, u64>) -> bool {
    if regions.len() < MAX_MAP_COUNT {
        return false;
    }
    let mut areas = 0;
    let mut last_end = None;
    for (&s, &e) in regions {
        if last_end != Some(s) {
            areas += 1;
        }
        last_end = Some(e);
    }
    areas >= MAX_MAP_COUNT
}

/// ENOMEM if unmapping `[start, end)` would split an area in two with the program at the
/// `MAX_MAP_COUNT` limit, as Linux's munmap answers.
pub fn unmap_allowed(start: u64, end: u64) -> Result<(), Errno> {
    let mem = MEMORY.lock();
    let splits = region_containing(&mem.regions, start).is_some_and(|(s, e)| s < start && e > end);
    if splits && at_map_count_limit(&mem.regions) {
        return Err(ENOMEM);
    }
    Ok(())
}

fn record(regions: &mut BTreeMap<u64, u64>, start: u64, end: u64) {
    if let Some(old_end) = regions.insert(start, end) {
        MAPPED.fetch_sub(old_end - start, Ordering::Relaxed);
    }
    MAPPED.fetch_add(end - start, Ordering::Relaxed);
}

/// Allocates `len` bytes (page-rounded) aligned to `align` (a power of two >= 4 KiB) if such a
/// run is free, else page aligned: exactly the pages asked for, reading zero.
pub fn alloc(len: u64, align: u64) -> Result<u64, Errno> {
    alloc_with(len, align, false, true, 0)
}

/// What a new mapping's pages start as (`place`): the kinds of `alloc`, `alloc_unfilled`,
/// `alloc_absent` (with or without `stack`) and `alloc_stack`.
#[derive(Clone, Copy)]
pub enum Fresh {
    Present,
    Unfilled,
    Absent { stack: bool },
    Stack,
}

/// A new mapping of `kind` at `hint` (rounded down to a page, as x86-64 Linux does) when all of `[hint, hint + len)` is
/// free memory of the pool, as Linux honours a free address hint; else where the `alloc_*`
/// function of that kind puts it. A hint outside the pool (the program's addresses are
/// guest-physical) is never honoured: Linux may also ignore a hint.
pub fn place(hint: u64, len: u64, align: u64, kind: Fresh) -> Result<u64, Errno> {
    let hint = hint & !(PAGE - 1);
    match kind {
        Fresh::Present => alloc_with(len, align, false, true, hint),
        Fresh::Unfilled => {
            let at = alloc_with(len, align, false, false, hint)?;
            ensure_ready(at, at + page_up(len));
            Ok(at)
        }
        Fresh::Absent { stack } => {
            let at = alloc_with(len, align, stack, false, hint)?;
            if stack {
                small_host_pages_under_top(at, len);
            }
            Ok(at)
        }
        Fresh::Stack => {
            let at = alloc_with(len, align, true, false, hint)?;
            small_host_pages_under_top(at, len);
            super::protect::reset(at, at + page_up(len));
            Ok(at)
        }
    }
}

/// `place` within the lowest 2 GiB (mmap's MAP_32BIT: JITs that need 32-bit code addresses):
/// `hint` if it is free there, else the lowest free run there. ENOMEM where none is free, as
/// Linux (which looks between 1 and 2 GiB).
pub fn place_low(hint: u64, len: u64, kind: Fresh) -> Result<u64, Errno> {
    const LIMIT: u64 = 1 << 31;
    let len = len.checked_next_multiple_of(PAGE).ok_or(ENOMEM)?;
    let hint = hint & !(PAGE - 1);
    let hint = {
        let mem = MEMORY.lock();
        let hint_free = hint != 0 && hint.saturating_add(len) <= LIMIT && mem.free.is_free(hint, hint + len);
        if hint_free {
            hint
        } else {
            mem.free.lowest_fit_below(len, LIMIT).ok_or(ENOMEM)?
        }
    };
    let at = place(hint, len, PAGE, kind)?;
    if at + len > LIMIT {
        // Another thread took the run meanwhile and `place` went elsewhere.
        unmap(at, at + len);
        return Err(ENOMEM);
    }
    Ok(at)
}

/// `alloc` for a private file mapping, which `mmap` reads before the program can touch it: the
/// pages stay not present, and the caller makes present what the file filled, so that pages
/// wholly past the end of the file never were (hiding them again would cost a TLB flush: see
/// `past_eof`). The memory is KVM's already, as `alloc`'s is: the monitor's read writes it, and
/// `clear` takes free memory in chunks KVM does not know to read zero.
pub fn alloc_unfilled(len: u64, align: u64) -> Result<u64, Errno> {
    place(0, len, align, Fresh::Unfilled)
}

/// `alloc` (or with `stack`, `alloc_stack`) for a mapping that starts inaccessible (PROT_NONE):
/// its pages stay not present, as free memory is, where `alloc` would make them present only
/// for the caller to take that away again. Each leaf written in a live table is an emulated
/// store on a PVM host (its shadow paging write-protects the tables): a thread stack's
/// reservation (8 MiB + a page, PROT_NONE, then `mprotect` of all but its guard page) wrote
/// its leaves three times, now twice.
pub fn alloc_absent(len: u64, align: u64, stack: bool) -> Result<u64, Errno> {
    place(0, len, align, Fresh::Absent { stack })
}

/// `alloc` for a stack: its end (not its start) aligned to `align` where such a run is free.
/// A stack that ends a 2 MiB page asks the host for 4 KiB pages under that last 2 MiB: a
/// thread mostly touches a few KiB at the top, and a fresh host huge page there costs the host
/// a 2 MiB clear (0.1 ms; several ms when the host's own host has not backed the memory yet),
/// where Linux faults in the few 4 KiB pages touched. A 40-thread OpenMP team's first
/// region took 10-200 ms for its 39 stacks (2 ms natively). The rest of the stack keeps
/// huge pages, for a thread that goes deep.
pub fn alloc_stack(len: u64, align: u64) -> Result<u64, Errno> {
    place(0, len, align, Fresh::Stack)
}

/// See `alloc_stack`. A stack in a chunk KVM does not know yet (the main stack, ~1 GiB into
/// the pool, past the break's window) gets the chunk in the same exit (`RAM_READY`'s third
/// argument): one exit of ~0.1 ms less in every program's start.
fn small_host_pages_under_top(at: u64, len: u64) {
    let end = at + page_up(len);
    if len < LARGE || !end.is_multiple_of(LARGE) {
        return;
    }
    let top = end - LARGE;
    if super::small_tops::contains(top) {
        // An earlier stack's top, still small in the host: no operation (`small_tops`).
        ensure_ready(at, end);
        return;
    }
    if !ensure_ready_and_small_pages(at, end, top) {
        by_monitor(hrt_abi::nr::SMALL_HOST_PAGES, [top, LARGE, 0, 0]);
    }
    super::small_tops::insert(top);
}

/// The 2 MiB pages `sparse_pages::placed` chose get 4 KiB host pages (none made yet).
fn small_host_pages(pages: &[u64]) {
    for &page in pages {
        by_monitor(hrt_abi::nr::SMALL_HOST_PAGES, [page, LARGE, hrt_abi::nr::SMALL_HOST_PAGES_BARE, 0]);
        super::small_tops::insert(page);
    }
}

/// Memory just taken for a mapping other than a stack: the whole 2 MiB pages in it that a
/// stack's top left with small host pages become huge-page memory again (`small_tops`). They
/// are free memory, which reads zero: the clearing that does it changes nothing else.
fn huge_again_for(start: u64, end: u64) {
    for top in super::small_tops::take_within(start, end) {
        zero_by_monitor(top, LARGE, 0);
    }
}

fn alloc_with(len: u64, align: u64, end_aligned: bool, present: bool, hint: u64) -> Result<u64, Errno> {
    if len == 0 {
        return Err(EINVAL);
    }
    let len = len.checked_next_multiple_of(PAGE).ok_or(ENOMEM)?;
    let mut mem = MEMORY.lock();
    if at_map_count_limit(&mem.regions) {
        return Err(ENOMEM);
    }
    let phase = if end_aligned { len.wrapping_neg() } else { 0 };
    let hinted = hint != 0 && pool_span(hint, len).is_ok_and(|end| mem.free.take(hint, end));
    let at = if hinted {
        hint
    } else {
        mem.free.alloc_at_phase(len, align.max(PAGE), phase).or_else(|| mem.free.alloc(len, PAGE)).ok_or(ENOMEM)?
    };
    record(&mut mem.regions, at, at + len);
    super::usermap::set(at, at + len, true);
    let small = if end_aligned { Vec::new() } else { super::sparse_pages::placed(&mem.free, at, at + len) };
    drop(mem);
    if !end_aligned {
        huge_again_for(at, at + len);
        small_host_pages(&small);
    }
    if present {
        super::protect::reset(at, at + len);
    }
    Ok(at)
}

/// `[addr, addr + len)` page-rounded, if it lies in the pool and `addr` is page aligned.
fn pool_span(addr: u64, len: u64) -> Result<u64, Errno> {
    let end = addr.checked_add(len).and_then(|e| e.checked_next_multiple_of(PAGE)).ok_or(ENOMEM)?;
    if !is_user_range(addr, end) || !addr.is_multiple_of(PAGE) {
        return Err(ENOMEM);
    }
    Ok(end)
}

/// Takes `[addr, addr + len)` at exactly that address; fails if any of it is in use.
pub fn alloc_fixed(addr: u64, len: u64) -> Result<u64, Errno> {
    let end = take_fixed(addr, len)?;
    super::usermap::set(addr, end, true);
    Ok(addr)
}

/// Reserves the break's window like `alloc_fixed`, but its pages count as mapped (in the page
/// map) and are present (in the page tables) only below the break (`break_moved`), as Linux's
/// heap ends at the break.
pub fn reserve_break_window(addr: u64, len: u64) -> Result<u64, Errno> {
    take(addr, len, false).map(|_| addr)
}

fn take_fixed(addr: u64, len: u64) -> Result<u64, Errno> {
    take(addr, len, true)
}

/// Takes `[addr, addr + len)` from the free pool (and holes); `present`: makes it present.
fn take(addr: u64, len: u64, present: bool) -> Result<u64, Errno> {
    let end = pool_span(addr, len)?;
    let small = {
        let mut mem = MEMORY.lock();
        if at_map_count_limit(&mem.regions) {
            return Err(ENOMEM);
        }
        if free_or_hole(&mem, addr, end) {
            open_holes(&mut mem, addr, end);
        }
        if !mem.free.take(addr, end) {
            return Err(if overlaps_mapping(&mem.regions, addr, end) { EEXIST } else { ENOMEM });
        }
        record(&mut mem.regions, addr, end);
        super::sparse_pages::placed(&mem.free, addr, end)
    };
    huge_again_for(addr, end);
    small_host_pages(&small);
    // Present (free pages and holes are not).
    if present {
        super::protect::reset(addr, end);
    }
    Ok(end)
}

/// Turns `[start, end)` of a loaded image (a gap between its segments, already made not
/// present) into a hole: not mapped (the page map clears it, so system calls given pointers there
/// answer EFAULT and faults there are SEGV_MAPERR), and not free either.
pub fn make_hole(start: u64, end: u64) {
    let mut mem = MEMORY.lock();
    for (s, e) in cut_regions(&mut mem.regions, start, end) {
        super::usermap::set(s, e, false);
        mem.holes.insert(s, e);
    }
}

/// Whether every page of `[start, end)` is free or in a hole.
fn free_or_hole(mem: &Memory, start: u64, end: u64) -> bool {
    let mut cur = start;
    while cur < end {
        match mem.free.extent_containing(cur).or_else(|| region_containing(&mem.holes, cur)) {
            Some((_, e)) => cur = e,
            None => return false,
        }
    }
    true
}

/// Makes the parts of holes inside `[start, end)` free memory (they read zero: never written),
/// for a fixed mapping about to take them (which makes them present again).
fn open_holes(mem: &mut Memory, start: u64, end: u64) {
    if mem.holes.is_empty() {
        return;
    }
    for (s, e) in cut(&mut mem.holes, start, end) {
        mem.free.give_back(s, e);
    }
}

/// Page-map hook for mmap/mprotect: PROT_NONE pages count as unmapped in the page map, so the
/// monitor's forwarded calls give EFAULT for them as Linux does (they cannot be touched at all);
/// access given back counts them as mapped again.
pub fn access_changed(start: u64, end: u64, accessible: bool) {
    super::usermap::set(start, end, accessible);
}

/// brk's hook: the break moved from `old` to `new`, and its window from `old_end` to `new_end`
/// (grown by `grow_break`, which leaves what it adds not present). Only the pages below the
/// break (up to the page it ends in) are mapped and present, so touching memory above it
/// faults, and a range running past it is EFAULT, as on Linux. Memory above a lowered break is
/// zeroed once no CPU can touch it, so that it reads zero when the break grows again.
pub fn break_moved(old: u64, new: u64, old_end: u64, new_end: u64) {
    let (o, n) = (page_up(old), page_up(new));
    if n > o {
        super::usermap::set(o, n, true);
        super::protect::reset(o, n);
    } else if n < o {
        super::usermap::set(n, o, false);
        super::protect::unmap(n, o);
        zero(n, o - n);
    }
    if new_end > old_end {
        super::usermap::set(n.max(old_end), new_end, false);
    }
}

/// The break was lowered from page `old` to page `new` keeping the pages in between present
/// (`calls::memory::brk`'s `keeps_trimmed`): only the page map changes, so that forwarded
/// calls and the range calls find no mapping there, as on Linux.
pub fn break_lowered_kept(new: u64, old: u64) {
    super::usermap::set(new, old, false);
}

/// The break grew over pages `[from, to)` that a lowering kept present: they become the
/// program's again, zeroed here (fresh break memory reads zero: glibc's calloc trusts it). A
/// plain clear: the monitor's (`zero`) would give whole 2 MiB pages back to the host, which
/// the program is about to touch again.
pub fn break_regrown_kept(from: u64, to: u64) {
    if from < to {
        clear(from, to - from);
        super::usermap::set(from, to, true);
    }
}

/// The break grew over pages `[from, to)` (none kept), and the pages `[to, ahead)` above it
/// are made present with them (`calls::memory::grows_ahead_to`): the page map says only
/// `[from, to)` is mapped. `old_end`/`new_end`: the break's window before and after, as for
/// `break_moved`.
pub fn break_grown_ahead(from: u64, to: u64, ahead: u64, old_end: u64, new_end: u64) {
    super::usermap::set(from, to, true);
    super::protect::reset(from, ahead);
    if new_end > old_end {
        super::usermap::set(to.max(old_end), new_end, false);
    }
}

/// Pages `[from, to)` above the break that a lowering kept present go as a lowering does
/// (`break_moved`): not present, and zero.
pub fn release_kept(from: u64, to: u64) {
    if from < to {
        super::protect::unmap(from, to);
        zero(from, to - from);
    }
}

/// Maps `[addr, addr + len)` at exactly that address with fresh (zero) contents, replacing
/// whatever the program had mapped there (MAP_FIXED); with `fresh` false, the replaced pages
/// keep their contents (a file mapping over the same bytes, see `filemap`). Fails with ENOMEM,
/// changing nothing, if part of it is outside the pool or being unmapped by another thread
/// right now.
pub fn map_fixed(addr: u64, len: u64, fresh: bool) -> Result<u64, Errno> {
    let end = pool_span(addr, len)?;
    let (replaced, taken) = {
        let mut mem = MEMORY.lock();
        // Every page must be mapped, free or in a hole.
        let mut cur = addr;
        while cur < end {
            let covered = region_containing(&mem.regions, cur)
                .or_else(|| mem.free.extent_containing(cur))
                .or_else(|| region_containing(&mem.holes, cur));
            match covered {
                Some((_, e)) => cur = e,
                None => return Err(ENOMEM),
            }
        }
        open_holes(&mut mem, addr, end);
        let replaced = cut_regions(&mut mem.regions, addr, end);
        // What was not mapped is free: take it.
        let mut cur = addr;
        let mut taken = Vec::new();
        for &(s, e) in replaced.iter().chain(core::iter::once(&(end, end))) {
            if cur < s {
                let took = mem.free.take(cur, s);
                debug_assert!(took);
                taken.push((cur, s));
            }
            cur = e;
        }
        record(&mut mem.regions, addr, end);
        super::usermap::set(addr, end, true);
        (replaced, taken)
    };
    // The pages taken from the free pool (and holes) are present again; the replaced ones keep
    // their protection until the caller gives the whole range its own.
    for (s, e) in taken {
        super::protect::reset(s, e);
    }
    for (s, e) in replaced {
        if fresh {
            super::shared_files::for_each_guest_owned(s, e, |a, b| zero(a, b - a));
        }
        super::shared_files::release(s, e);
        super::past_eof::release(s, e);
    }
    Ok(addr)
}

/// The region containing `addr`, if any.
fn region_containing(regions: &BTreeMap<u64, u64>, addr: u64) -> Option<(u64, u64)> {
    regions.range(..=addr).next_back().map(|(&s, &e)| (s, e)).filter(|&(_, e)| e > addr)
}

fn overlaps_mapping(regions: &BTreeMap<u64, u64>, start: u64, end: u64) -> bool {
    regions.range(..end).next_back().is_some_and(|(_, &e)| e > start)
}

/// Removes `[start, end)` from the program's regions (and its rewritten system-call sites and
/// unwind tables) and returns the parts that were mapped, in address order.
fn cut_regions(regions: &mut BTreeMap<u64, u64>, start: u64, end: u64) -> Vec<(u64, u64)> {
    // Rewritten system-call sites in the range are gone with it.
    super::rewrite::forget(start, end);
    super::eh_frame::forget(start, end);
    super::symbols::forget(start, end);
    super::vdso::forget(start, end);
    // So is what madvise and mmap remember of it.
    super::private_files::release(start, end);
    super::fork_advice::release(start, end);
    super::locked::release(start, end);
    super::grows_down::release(start, end);
    let pieces = cut(regions, start, end);
    MAPPED.fetch_sub(pieces.iter().map(|(s, e)| e - s).sum(), Ordering::Relaxed);
    pieces
}

/// Removes `[start, end)` from a map of disjoint ranges (splitting those that stick out) and
/// returns the parts that were in it, in address order.
fn cut(regions: &mut BTreeMap<u64, u64>, start: u64, end: u64) -> Vec<(u64, u64)> {
    let overlapping: Vec<(u64, u64)> =
        regions.range(..end).rev().take_while(|(_, &e)| e > start).map(|(&s, &e)| (s, e)).collect();
    let mut cut = Vec::with_capacity(overlapping.len());
    for &(s, e) in overlapping.iter().rev() {
        regions.remove(&s);
        if s < start {
            regions.insert(s, start);
        }
        if e > end {
            regions.insert(end, e);
        }
        cut.push((s.max(start), e.min(end)));
    }
    cut
}

/// Whether every page of `[start, end)` is mapped.
pub fn is_mapped(start: u64, end: u64) -> bool {
    let regions = &MEMORY.lock().regions;
    let mut cur = start;
    while cur < end {
        match region_containing(regions, cur) {
            Some((_, e)) => cur = e,
            None => return false,
        }
    }
    true
}

/// The mapped parts of `[start, end)` in address order, and whether some of it is not mapped.
pub fn mapped_parts(start: u64, end: u64) -> (Vec<(u64, u64)>, bool) {
    let mem = MEMORY.lock();
    let parts: Vec<(u64, u64)> = mem
        .regions
        .range(..end)
        .rev()
        .take_while(|(_, &e)| e > start)
        .map(|(&s, &e)| (s.max(start), e.min(end)))
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let covered: u64 = parts.iter().map(|(s, e)| e - s).sum();
    (parts, covered < end - start)
}

/// `mapped_parts` as the program sees its memory: without the break's window above the break,
/// which is mapped (the break grows into it cheaply) but on Linux is no mapping at all. The
/// calls that take a range of the program's mappings (mprotect, msync, madvise, mlock,
/// mincore) answer ENOMEM there, as on Linux (they changed it, and succeeded).
pub fn program_parts(start: u64, end: u64) -> (Vec<(u64, u64)>, bool) {
    let window = {
        let b = super::process::PROCESS.brk.lock();
        (page_up(b.cur).max(b.start), b.mapped_end)
    };
    let (parts, mut unmapped) = mapped_parts(start, end);
    if window.0 >= window.1 || window.1 <= start || end <= window.0 {
        return (parts, unmapped);
    }
    let mut out = Vec::with_capacity(parts.len() + 1);
    for (s, e) in parts {
        for (ps, pe) in [(s, e.min(window.0)), (s.max(window.1), e)] {
            if ps < pe {
                out.push((ps, pe));
            }
        }
        unmapped |= s < window.1 && window.0 < e;
    }
    (out, unmapped)
}

/// Whether every page of `[start, end)` is one of the program's mappings (`program_parts`).
pub fn program_mapped(start: u64, end: u64) -> bool {
    start >= end || !program_parts(start, end).1
}

/// Runs `f` if every page of `[start, end)` is mapped, with the memory lock held, so that no
/// unmap can free the range meanwhile; None if it is not mapped.
pub fn while_mapped<R>(start: u64, end: u64, f: impl FnOnce() -> R) -> Option<R> {
    while_mapped_and(start, end, |_| f())
}

/// `while_mapped`, with `f` given a test of whether another range is mapped (under the same
/// lock, so that it stays so while `f` runs).
pub fn while_mapped_and<R>(start: u64, end: u64, f: impl FnOnce(&dyn Fn(u64, u64) -> bool) -> R) -> Option<R> {
    let mem = MEMORY.lock();
    let mapped = |start: u64, end: u64| {
        let mut cur = start;
        while cur < end {
            match region_containing(&mem.regions, cur) {
                Some(region) => cur = region.1,
                None => return false,
            }
        }
        true
    };
    mapped(start, end).then(|| f(&mapped))
}

/// Unmaps every mapped page of `[start, end)`; unmapped parts (holes included) are ignored, as
/// on Linux. The pages become not present (no CPU can touch them once this returns) and are
/// zeroed before they become free again.
pub fn unmap(start: u64, end: u64) {
    unmap_with(start, end, zero)
}

fn unmap_with(start: u64, end: u64, zero: impl Fn(u64, u64)) {
    // The address space may shrink: its size now may be the largest it reached (VmPeak).
    super::status::note_peak();
    let cut = cut_regions(&mut MEMORY.lock().regions, start, end);
    if cut.is_empty() {
        return;
    }
    // Outside the lock: the pieces are neither mapped nor free meanwhile. Zeroed after the
    // TLBs let go of them, so that free memory stays zero. Pieces that touch are one range
    // here: each range costs a TLB flush and, zeroed by the monitor, a VM exit (an exec
    // unmaps an image's ~30 mappings, most of them next to each other).
    for (s, e) in joined(&cut) {
        super::usermap::set(s, e, false);
        super::protect::unmap(s, e);
        // Host shared pages are not zeroed (that would zero the file, or the memory a forked
        // process shares): they become anonymous memory again, which reads zero.
        super::shared_files::for_each_guest_owned(s, e, |a, b| zero(a, b - a));
        super::shared_files::release(s, e);
        super::past_eof::release(s, e);
    }
    // A piece a forwarded call in flight may still write (a blocking read into it: the
    // monitor writes when the data comes) stays out of use until that call has ended.
    let mut now = Vec::with_capacity(cut.len());
    for (s, e) in cut {
        let waits = super::channel::in_flight_touching(s, e);
        if waits.is_empty() || !quarantine(s, e, waits) {
            now.push((s, e));
        }
    }
    let mut mem = MEMORY.lock();
    for (s, e) in now {
        mem.free.give_back(s, e);
        super::sparse_pages::freed(&mem.free, s, e);
    }
}

/// Memory unmapped while forwarded calls in flight named it (`channel::in_flight_touching`):
/// each piece with the slots and their finished counts it waits for. Neither mapped nor free
/// until they have all ended; then zeroed again (a late write may have landed) and given back.
/// Before, a blocking read whose buffer another thread unmapped wrote its data there when it
/// came, into whatever the program mapped there meanwhile (a fresh mapping must read zero).
/// (Linux fails that read with EFAULT; here it succeeds into memory the program no longer has.)
struct Quarantined {
    start: u64,
    end: u64,
    waits: Vec<(usize, u64)>,
}

static QUARANTINE: IrqSpinLock<Vec<Quarantined>> = IrqSpinLock::new(Vec::new());
static QUARANTINED: AtomicU64 = AtomicU64::new(0);

/// Keeps `[start, end)` out of use until the calls `waits` have ended; false if they all have
/// already (the caller gives it back now).
fn quarantine(start: u64, end: u64, mut waits: Vec<(usize, u64)>) -> bool {
    let mut q = QUARANTINE.lock();
    // Under the lock that `call_finished` takes: a call that ended before this look is not
    // waited for, one that ends after finds the entry.
    waits.retain(|&(idx, finished)| !super::channel::finished_since(idx, finished));
    if waits.is_empty() {
        return false;
    }
    q.push(Quarantined { start, end, waits });
    QUARANTINED.store(q.len() as u64, Ordering::SeqCst);
    true
}

/// The forwarded call in slot `idx` has ended: the memory that waited only for it is zeroed
/// and given back.
pub fn call_finished(idx: usize) {
    if QUARANTINED.load(Ordering::SeqCst) == 0 {
        return;
    }
    release_where(|waits| {
        waits.retain(|&(i, f)| i != idx && !super::channel::finished_since(i, f));
        waits.is_empty()
    });
}

/// A forked child: no call of the parent's is in flight here (the parent's monitor writes the
/// parent's memory only), so its quarantined memory is free.
pub fn release_quarantine_after_fork() {
    release_where(|_| true);
}

fn release_where(mut done: impl FnMut(&mut Vec<(usize, u64)>) -> bool) {
    let ready: Vec<(u64, u64)> = {
        let mut q = QUARANTINE.lock();
        let mut ready = Vec::new();
        q.retain_mut(|p| {
            let free = done(&mut p.waits);
            if free {
                ready.push((p.start, p.end));
            }
            !free
        });
        QUARANTINED.store(q.len() as u64, Ordering::SeqCst);
        ready
    };
    for &(s, e) in &ready {
        zero(s, e - s);
    }
    let mut mem = MEMORY.lock();
    for (s, e) in ready {
        mem.free.give_back(s, e);
        super::sparse_pages::freed(&mem.free, s, e);
    }
}

/// `pieces` (disjoint, in address order) with the ones that touch joined.
fn joined(pieces: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(pieces.len());
    for &(s, e) in pieces {
        match out.last_mut() {
            Some(last) if last.1 == s => last.1 = e,
            _ => out.push((s, e)),
        }
    }
    out
}

/// execve: unmaps every page of the program outside `[keep_start, keep_end)` (zeroed, given
/// back) and makes the holes between an old image's segments free memory again (they read zero:
/// never written).
///
/// The old image is zeroed by the monitor, which gives its pages back to the host
/// (`MEM_ZERO_DROP`) rather than clearing them: cleared here, each page cost a shadow-paging
/// fault through the pool's alias on PVM and, in a forked child, a copy of the page it shared
/// with its parent first (~1-3.5 us per KiB: 10-18 ms of a shell's fork + exec of `true`).
///
/// Up to `clear_in_place` bytes of the memory the host has are cleared where they are, lowest
/// addresses first, and the rest is given back: the new image lands on the same memory, and a
/// page given back costs a fresh host page (a 2 MiB clear, 0.2-3 ms on this host) and KVM a
/// new mapping when it is touched again. A forked child that has not exec'd yet passes 0: its
/// memory is still shared with its parent, so clearing a page in place would copy it first.
pub fn release_all_but(keep_start: u64, keep_end: u64, clear_in_place: u64) {
    let (lo, hi) = pool_range();
    let left = core::cell::Cell::new(clear_in_place);
    let by_monitor = |addr: u64, len: u64| {
        if left.get() == 0 {
            return zero_by_monitor(addr, len, hrt_abi::nr::MEM_ZERO_DROP);
        }
        let cleared = by_monitor(hrt_abi::nr::MEM_ZERO, [addr, len, hrt_abi::nr::MEM_ZERO_KEEP, left.get()]);
        left.set(left.get().saturating_sub(cleared.max(0) as u64));
    };
    unmap_with(lo, keep_start, by_monitor);
    unmap_with(keep_end, hi, by_monitor);
    // Both clearings made every whole 2 MiB page huge-page memory again.
    super::small_tops::clear();
    let holes = core::mem::take(&mut MEMORY.lock().holes);
    for (&s, &e) in &holes {
        super::protect::reset(s, e);
    }
    let mut mem = MEMORY.lock();
    for (s, e) in holes {
        mem.free.give_back(s, e);
    }
}

/// Tries to extend the mapping that ends at `end` to `new_end` in place.
pub fn grow_in_place(end: u64, new_end: u64) -> bool {
    grow(end, new_end, true)
}

/// `grow_in_place` for the break's window: what it adds stays not present (`break_moved`
/// makes the part below the break present).
pub fn grow_break(end: u64, new_end: u64) -> bool {
    grow(end, new_end, false)
}

fn grow(end: u64, new_end: u64, present: bool) -> bool {
    if !is_user_range(end, new_end) {
        return false;
    }
    let mut mem = MEMORY.lock();
    if !mem.free.take(end, new_end) {
        return false;
    }
    let start = mem.regions.range(..end).next_back().filter(|(_, &e)| e == end).map(|(&s, _)| s);
    record(&mut mem.regions, start.unwrap_or(end), new_end);
    super::usermap::set(end, new_end, true);
    // The growth's last 2 MiB page, if it covers it only in part (`sparse_pages`).
    let small = super::sparse_pages::placed(&mem.free, end, new_end);
    drop(mem);
    huge_again_for(end, new_end);
    small_host_pages(&small);
    if present {
        super::protect::reset(end, new_end);
    }
    true
}

/// Extends the mapping that starts at `start` down to `new_start` (one that grows down:
/// `grows_down`), present with the default access; false if any of `[new_start, start)` is
/// not free.
pub fn grow_down(new_start: u64, start: u64) -> bool {
    if !is_user_range(new_start, start) {
        return false;
    }
    let mut mem = MEMORY.lock();
    if !mem.free.take(new_start, start) {
        return false;
    }
    record(&mut mem.regions, new_start, start);
    super::usermap::set(new_start, start, true);
    let small = super::sparse_pages::placed(&mem.free, new_start, start);
    drop(mem);
    huge_again_for(new_start, start);
    small_host_pages(&small);
    super::protect::reset(new_start, start);
    true
}

/// The bytes of the program's mappings (the break's whole window included).
pub fn mapped_bytes() -> u64 {
    MAPPED.load(Ordering::Relaxed)
}

/// The lowest start and highest end of the program's mappings ((0, 0) without any).
pub fn mapped_span() -> (u64, u64) {
    let mem = MEMORY.lock();
    let lo = mem.regions.first_key_value().map_or(0, |(&s, _)| s);
    let hi = mem.regions.last_key_value().map_or(0, |(_, &e)| e);
    (lo, hi)
}

/// The bytes of `[start, end)` that are mapped now.
pub fn mapped_within(start: u64, end: u64) -> u64 {
    let mem = MEMORY.lock();
    mem.regions.range(..end).rev().take_while(|(_, &e)| e > start).map(|(&s, &e)| e.min(end) - s.max(start)).sum()
}

/// The program's memory as it is told of it (`sysinfo`, `/proc/meminfo`) and as team sizes
/// count it: (total, free) bytes of the pool, capped at what the host can give
/// (`BootInfo::host_memory`). The pool is a reservation that may be larger than the host's
/// memory; what lies beyond the host's is taken off the free part, so the used part stays the
/// pool's.
pub fn shown_bytes() -> (u64, u64) {
    let (total, free) = {
        let mem = MEMORY.lock();
        (mem.free.total_bytes(), mem.free.free_bytes())
    };
    cap_at_host(total, free, crate::bootinfo::get().host_memory)
}

fn cap_at_host(total: u64, free: u64, host: u64) -> (u64, u64) {
    if host == 0 || host >= total {
        return (total, free);
    }
    (host, free.saturating_sub(total - host))
}

/// Runs `f` with a scratch page of program memory that only the kernel knows (what the
/// forwarder reads and writes for a call the kernel makes itself), then gives the page back.
/// ENOMEM as a negated errno when there is none.
pub fn with_scratch(f: impl FnOnce(u64) -> i64) -> i64 {
    let Ok(page) = alloc(PAGE, PAGE) else {
        return -(ENOMEM as i64);
    };
    let r = f(page);
    unmap(page, page + PAGE);
    r
}
