//! Protections of the program's memory (mprotect, mmap's prot, stack guard gaps), enforced by
//! the page tables: PROT_NONE pages are not present, pages without PROT_WRITE are read-only,
//! pages without PROT_EXEC are execute-disabled where the CPU has NX.
//!
//! Memory the pool hands out is readable and writable, not executable (as Linux's fresh
//! anonymous memory, its heap and its stacks), and stays so unless a protection is set (fresh
//! `mmap` with PROT_READ|PROT_WRITE leaves it that way: no page-table change, which costs a lot
//! on a PVM host; code segments and PROT_EXEC mappings change it; until 2026-12-03 the default
//! was executable too, and data, stacks and the heap ran as code) or it is unmapped (`unmap`: not
//! present until the pool hands it out again, which restores the default). The page tables
//! themselves say what each page allows; besides them there is only one bit per 2 MiB of the
//! program's pool, set once a protection was changed or memory unmapped there, so that
//! restoring the default looks at the tables only where something may differ.
//! (A search tree of protected ranges cost about 2.4 M cycles per change here, more than
//! the page-table change itself.)
//!
//! On a PVM host, an `mprotect` that opens a range of up to 256 MiB not present yet (a thread
//! stack's reservation) makes only its highest 2 MiB present; its other whole 2 MiB pages stay
//! not present, noted in `LAZY`, until the program touches one (`fault_in_lazy`), the kernel
//! is about to use one for it (`allows`, `materialize`) or a later change covers one. Each leaf
//! written costs a trapped store on a PVM host: an 8 MiB stack's `mprotect` took ~108 us so,
//! its `munmap` ~149 us; ~22 and ~65 us with the lazy pages.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::arch::paging::{self, StaleTlb, UserAccess};
use crate::sync::IrqSpinLock;

pub const PROT_READ: u64 = 1;
pub const PROT_WRITE: u64 = 2;
pub const PROT_EXEC: u64 = 4;
/// What every program page allows until told otherwise.
pub const DEFAULT: u64 = PROT_READ | PROT_WRITE;
/// Every protection bit.
pub const ALL: u64 = PROT_READ | PROT_WRITE | PROT_EXEC;
const CHUNK: u64 = 2 << 20;

/// One bit per 2 MiB of the pool: a protection was changed there (maybe since undone).
/// The lock also serialises page-table changes. It masks interrupts while held, so its holder
/// is never switched away from its CPU and a thread spinning on it waits only for a holder
/// running on another CPU. With a plain spinlock the holder could be preempted; once (musl's
/// 200-thread test at `--cpus 1`, every thread mapping and unmapping its stack) the only vCPU
/// spun on this lock for more than five minutes.
static TOUCHED: IrqSpinLock<Vec<u64>> = IrqSpinLock::new(Vec::new());
/// Whether any bit was ever set (until then, restoring the default has nothing to do).
static ANY: AtomicBool = AtomicBool::new(false);

/// 2 MiB pages the program may use that are not present yet, with the protection they take
/// when first used (`set`: an `mprotect` that opens a large reservation). Locked only inside
/// `TOUCHED`. On a PVM host every 2 MiB leaf written is a store the hypervisor traps (~52 K
/// cycles); a thread stack (8 MiB reserved `PROT_NONE`, opened by `mprotect`, given back by
/// `munmap`) wrote four leaves at each step, though a thread mostly uses the top one.
static LAZY: IrqSpinLock<BTreeMap<u64, u64>> = IrqSpinLock::new(BTreeMap::new());
/// Pages in `LAZY` (read without the lock: 0 means no look-up is needed).
static LAZY_PAGES: AtomicUsize = AtomicUsize::new(0);

fn access(prot: u64) -> UserAccess {
    UserAccess { present: prot & ALL != 0, writable: prot & PROT_WRITE != 0, executable: prot & PROT_EXEC != 0 }
}

/// The protection (PROT_* bits) the program's page at `addr` has: from the page tables, or
/// from `LAZY` for a page not made present yet. None where it is not present otherwise
/// (PROT_NONE, unmapped, a hidden page past a file's end).
pub fn prot_at(addr: u64) -> Option<u64> {
    match paging::user_access_at(addr) {
        Some(a) => Some(prot_of(a)),
        None => lazy_prot(addr),
    }
}

/// The PROT_* bits of a present page with access `a`.
fn prot_of(a: UserAccess) -> u64 {
    let exec = if paging::nx_enabled() { a.executable } else { false };
    PROT_READ | if a.writable { PROT_WRITE } else { 0 } | if exec { PROT_EXEC } else { 0 }
}

/// The protection a page that is not present takes when first used, if it is in a lazy page.
fn lazy_prot(addr: u64) -> Option<u64> {
    if LAZY_PAGES.load(Ordering::Acquire) == 0 {
        return None;
    }
    let _touched = TOUCHED.lock();
    LAZY.lock().get(&(addr & !(CHUNK - 1))).copied()
}

/// The protections of the program's pages in `[start, end)` (page-aligned), as runs
/// `(start, end, prot)` in address order (prot 0: PROT_NONE, or not the program's): for
/// `/proc/self/maps`. Only the 2 MiB pages where a protection was ever changed (and any outside
/// the pool) are looked up in the page tables, leaf by leaf; the others have the default.
pub fn runs(start: u64, end: u64) -> Vec<(u64, u64, u64)> {
    let mut out: Vec<(u64, u64, u64)> = Vec::new();
    let mut push = |s: u64, e: u64, prot: u64| match out.last_mut() {
        Some(last) if last.1 == s && last.2 == prot => last.1 = e,
        _ => out.push((s, e, prot)),
    };
    let (lo, hi) = super::usermem::pool_range();
    let mut cur = start;
    while cur < end {
        let next = ((cur | (CHUNK - 1)) + 1).min(end);
        let (chunk, _) = chunks(cur, cur + 1);
        // (Outside the pool, e.g. a program linked at a fixed address below it: no bits.)
        let touched = !(lo..hi).contains(&cur) || ANY.load(Ordering::Acquire) && is_touched(&TOUCHED.lock(), chunk);
        if !touched {
            push(cur, next, DEFAULT);
            cur = next;
            continue;
        }
        // Leaf by leaf (an absent 2 MiB or 1 GiB entry answers for all of it).
        while cur < next {
            let (access, size) = paging::user_access_span(cur);
            let to = ((cur | (size - 1)) + 1).min(next);
            let prot = match access {
                Some(a) => prot_of(a),
                None if size >= CHUNK => lazy_prot(cur).unwrap_or(0),
                None => 0,
            };
            push(cur, to, prot);
            cur = to;
        }
    }
    out
}

/// The chunk indices `[first, last)` covering `[start, end)` of the pool.
fn chunks(start: u64, end: u64) -> (usize, usize) {
    let (lo, _) = super::usermem::pool_range();
    let first = (start.saturating_sub(lo) / CHUNK) as usize;
    let last = (end.saturating_sub(lo)).div_ceil(CHUNK) as usize;
    (first, last)
}

fn is_touched(bits: &[u64], i: usize) -> bool {
    bits.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
}

/// Gives `[start, end)` (page-aligned program memory) the protection `prot` (PROT_* bits).
/// On a PVM host, whole 2 MiB pages of it that are not present yet, except the highest (a
/// stack's top, which its thread uses at once), stay so until first used (`LAZY`): the
/// program sees the same protections. A lazy page's first touch is a page fault handled in
/// ring 3 (`traps::defer_fault_to_ring3`), which costs about what writing its leaf at once
/// would have (an 8 MiB stack touched 3 MiB deep: first touch there 0.97-1.77 M cycles against
/// 0.68-1.49 M eagerly, both mostly the host's first touch of the 2 MiB); each page never
/// touched saves two trapped leaf stores, at `mprotect` and at `munmap`.
pub fn set(start: u64, end: u64, prot: u64) {
    change_with(start, end, prot & ALL, end - start <= LAZY_RANGE_MAX && leaves_cost_traps());
}

/// The largest range `set` leaves partly lazy: stacks of up to 256 MiB (`OMP_STACKSIZE`). Not
/// whole 1 GiB leaves, which one store makes present.
const LAZY_RANGE_MAX: u64 = 256 << 20;

/// Whether writing a page-table leaf is a store the hypervisor traps (PVM's shadow paging,
/// ~52 K cycles): only there are pages left lazy. Elsewhere a leaf costs a plain store, less
/// than the fault that would make it present later, and the design's rule holds: every page
/// the program can touch is present before it runs.
fn leaves_cost_traps() -> bool {
    crate::bootinfo::get().platform == hrt_abi::Platform::PvmEmulated as u32
}

/// Makes `[start, end)` (memory being unmapped) not present: once this returns, touching it
/// faults on every CPU.
pub fn unmap(start: u64, end: u64) {
    change(start, end, 0);
}

/// The pool `[lo, hi)` as the boot page tables leave it: not present, so handing memory out
/// must make it present (`reset`), as after an `unmap` of all of it (without the cost of one:
/// nothing to change in the tables, nothing to flush).
pub fn pool_starts_absent(lo: u64, hi: u64) {
    let (first, last) = chunks(lo, hi);
    mark_touched(&mut TOUCHED.lock(), first, last);
}

/// Sets the bits of chunks `[first, last)` (whole words at once: boot marks the whole pool).
fn mark_touched(touched: &mut Vec<u64>, first: usize, last: usize) {
    if touched.len() < last.div_ceil(64) {
        touched.resize(last.div_ceil(64), 0);
    }
    let mut i = first;
    while i < last {
        if i.is_multiple_of(64) && i + 64 <= last {
            touched[i / 64] = u64::MAX;
            i += 64;
        } else {
            touched[i / 64] |= 1 << (i % 64);
            i += 1;
        }
    }
    ANY.store(true, Ordering::Release);
}

/// Makes `[start, end)` not present without a TLB shootdown, for shared file pages whose host
/// pages vanished (another process shrank the file): the host's truncation made KVM drop every
/// translation of them on every vCPU (shadow entries on PVM, EPT entries and the TLB's
/// combined ones with hardware virtualization), so no TLB can hold one. A page that the file
/// covers again meanwhile may stay cached somewhere, which is harmless: it is the file's page,
/// as the program's next fault there would find (`shared_files::fault_past_end`). Runs where a
/// shootdown may not (on the way back to the program from an interrupt). No page table is
/// freed, since a cached path through it may survive without a shootdown: the range goes to
/// `protect_user` in pieces none of which covers a whole 2 MiB, which would merge its table.
pub fn hide_vanished(start: u64, end: u64) {
    if start >= end {
        return;
    }
    super::usermap::set_read_only(start, end, true);
    let (first, last) = chunks(start, end);
    let mut stale = StaleTlb::new();
    let mut touched = TOUCHED.lock();
    mark_touched(&mut touched, first, last);
    let mut cur = start;
    while cur < end {
        let next_2m = (cur | (CHUNK - 1)) + 1;
        let mut to = end.min(next_2m);
        if cur.is_multiple_of(CHUNK) && to == next_2m {
            to -= super::usermem::PAGE;
        }
        // Never a whole 2 MiB at once, so never a table freed (see above): kept, not leaked.
        let freed = paging::protect_user(cur, to, access(0), &mut stale);
        debug_assert!(freed.is_empty(), "a table freed without a shootdown");
        core::mem::forget(freed);
        cur = to;
    }
}

/// Restores the default protection of `[start, end)` (memory being handed out or replaced).
pub fn reset(start: u64, end: u64) {
    if ANY.load(Ordering::Acquire) {
        change(start, end, DEFAULT);
    }
}

fn change(start: u64, end: u64, prot: u64) {
    change_with(start, end, prot, false);
}

/// `change`; with `lazy_ok`, whole 2 MiB pages not present yet (but the highest) are left so
/// and noted in `LAZY` instead of made present.
fn change_with(start: u64, end: u64, prot: u64, lazy_ok: bool) {
    if start >= end {
        return;
    }
    if prot != 0 {
        // Memory about to be present must be memory KVM knows.
        super::usermem::ensure_ready(start, end);
    }
    // The monitor's view: it may write forwarded calls' answers only where PROT_WRITE is.
    super::usermap::set_read_only(start, end, prot & PROT_WRITE == 0);
    // Other processes' cross-memory attach: refused without PROT_READ (unmapping, prot 0,
    // clears the page map's bit instead).
    if prot != 0 {
        super::usermap::set_unreadable(start, end, prot & PROT_READ == 0);
    }
    let (first, last) = chunks(start, end);
    let mut stale = StaleTlb::new();
    let mut freed = Vec::new();
    let mut touched = TOUCHED.lock();
    let mut lazy = LAZY.lock();
    settle_lazy(&mut lazy, start, end, &mut stale, &mut freed);
    let lazy_ok = lazy_ok && prot != 0;
    if prot == DEFAULT {
        // Only chunks where something was changed can differ from the default. Runs of them
        // are changed at once, so that whole 1 GiB leaves stay whole.
        let (lo, _) = super::usermem::pool_range();
        let mut i = first;
        while i < last {
            if !is_touched(&touched, i) {
                i += 1;
                continue;
            }
            let run = i;
            while i < last && is_touched(&touched, i) {
                i += 1;
            }
            let (s, e) = (lo + run as u64 * CHUNK, lo + i as u64 * CHUNK);
            let (s, e) = (start.max(s), end.min(e));
            freed.extend(protect_or_defer(&mut lazy, s, e, prot, lazy_ok && e == end, &mut stale));
        }
    } else {
        mark_touched(&mut touched, first, last);
        freed.extend(protect_or_defer(&mut lazy, start, end, prot, lazy_ok, &mut stale));
    }
    LAZY_PAGES.store(lazy.len(), Ordering::Release);
    drop(lazy);
    drop(touched);
    // A permission taken away must not survive in any TLB (nor a freed table in any
    // paging-structure cache). One that grew needs no flush at all, not even here (INVLPG
    // is emulated too): a stale entry that allows less faults once and is retried
    // (`paging::retry_spurious_fault`).
    if stale.needs_shootdown() {
        crate::arch::tlb::shoot_down(&stale, crate::cpu::count());
    }
    for table in freed {
        crate::mem::free_pages(table, 0);
    }
}

/// `paging::protect_user` of `[start, end)` with `prot`; with `defer`, the whole 2 MiB pages
/// inside it that are not present, but the highest, are noted in `LAZY` instead.
fn protect_or_defer(
    lazy: &mut BTreeMap<u64, u64>,
    start: u64,
    end: u64,
    prot: u64,
    defer: bool,
    stale: &mut StaleTlb,
) -> Vec<u64> {
    let (first, top) = (start.next_multiple_of(CHUNK), (end & !(CHUNK - 1)).saturating_sub(CHUNK));
    if !defer || first >= top {
        return paging::protect_user(start, end, access(prot), stale);
    }
    let mut freed = Vec::new();
    let mut from = start;
    for page in (first..top).step_by(CHUNK as usize) {
        if paging::large_page_absent(page) {
            freed.extend(paging::protect_user(from, page, access(prot), stale));
            lazy.insert(page, prot);
            from = page + CHUNK;
        }
    }
    freed.extend(paging::protect_user(from, end, access(prot), stale));
    freed
}

/// Before a change of `[start, end)`: its lazy pages leave `LAZY`. One it covers wholly is not
/// present, as the change expects of PROT_NONE memory; one it covers in part is made present
/// first with its own protection, so that the rest of it keeps that.
fn settle_lazy(lazy: &mut BTreeMap<u64, u64>, start: u64, end: u64, stale: &mut StaleTlb, freed: &mut Vec<u64>) {
    if lazy.is_empty() || start & !(CHUNK - 1) >= end {
        return;
    }
    let pages: Vec<(u64, u64)> = lazy.range(start & !(CHUNK - 1)..end).map(|(&p, &prot)| (p, prot)).collect();
    for (page, prot) in pages {
        lazy.remove(&page);
        if page < start || page + CHUNK > end {
            freed.extend(paging::protect_user(page, page + CHUNK, access(prot), stale));
        }
    }
}

/// Makes the lazy pages in `[start, end)` present (the kernel is about to use them for the
/// program, or the program touched one). Returns whether there was one.
fn make_present(start: u64, end: u64) -> bool {
    // (An empty range: also the last byte of the address space, whose end wraps; a program
    // that jumped to u64::MAX took the kernel down in the range look-up below.)
    if LAZY_PAGES.load(Ordering::Acquire) == 0 || start >= end {
        return false;
    }
    let (mut stale, mut freed) = (StaleTlb::new(), Vec::new());
    let touched = TOUCHED.lock();
    let mut lazy = LAZY.lock();
    let pages: Vec<(u64, u64)> = lazy.range(start & !(CHUNK - 1)..end).map(|(&p, &prot)| (p, prot)).collect();
    for &(page, prot) in &pages {
        lazy.remove(&page);
        freed.extend(paging::protect_user(page, page + CHUNK, access(prot), &mut stale));
    }
    LAZY_PAGES.store(lazy.len(), Ordering::Release);
    drop(lazy);
    drop(touched);
    // Only permissions were added, each page one whole not-present leaf: no flush, no table.
    debug_assert!(!stale.needs_shootdown() && freed.is_empty());
    !pages.is_empty()
}

/// A page fault at `addr` (error code `error`) in a lazy page: makes it present. True when the
/// access can simply run again: also when another CPU made the page present meanwhile.
pub fn fault_in_lazy(addr: u64, error: u64) -> bool {
    make_present(addr, addr.saturating_add(1)) || paging::retry_spurious_fault(addr, error)
}

/// Makes whatever of `[start, end)` is lazy present, for the kernel to touch it directly.
pub fn materialize(start: u64, end: u64) {
    make_present(start, end);
}

/// Whether the kernel may read (and, with `write`, write) `[start, end)` on the program's
/// behalf: no part of it is PROT_NONE (or, for writes, lacks PROT_WRITE). Asks the page
/// tables: one look-up per leaf, no lock (lazy pages in the range are made present first).
pub fn allows(start: u64, end: u64, write: bool) -> bool {
    let ok = |s, e| !ANY.load(Ordering::Acquire) || s >= e || paging::user_range_allows(s, e, write);
    ok(start, end) || make_present(start, end) && ok(start, end)
}
