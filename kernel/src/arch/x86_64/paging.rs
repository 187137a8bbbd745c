//! The kernel's page tables: all guest memory identity-mapped with the largest pages the CPU
//! offers (1 GiB, else 2 MiB), except the first 2 MiB, mapped with 4 KiB pages so that page 0
//! can stay not-present and null dereferences fault. No demand paging: everything is mapped
//! once, at boot.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::instr::write_cr3;

pub const PAGE_SIZE: u64 = 4096;
pub const LARGE_PAGE_SIZE: u64 = 2 << 20;
pub const HUGE_PAGE_SIZE: u64 = 1 << 30;
/// The low addresses no page table of the kernel maps (Linux's default `vm.mmap_min_addr`):
/// NULL-based accesses fault there.
const LOW_UNMAPPED_END: u64 = 64 << 10;

pub const PRESENT: u64 = 1 << 0;
pub const WRITABLE: u64 = 1 << 1;
pub const USER: u64 = 1 << 2;
pub const WRITE_THROUGH: u64 = 1 << 3;
pub const NO_CACHE: u64 = 1 << 4;
/// Set by the CPU in a leaf before it caches the translation in a TLB.
pub const ACCESSED: u64 = 1 << 5;
/// Set by the CPU in a leaf before the first write through it.
pub const DIRTY: u64 = 1 << 6;
pub const PAGE_SIZE_BIT: u64 = 1 << 7;
pub const GLOBAL: u64 = 1 << 8;

const ADDR_MASK: u64 = 0x000f_ffff_ffff_f000;

/// Physical address of the kernel's PML4 once built.
static KERNEL_PML4: AtomicU64 = AtomicU64::new(0);

pub fn has_1g_pages() -> bool {
    super::features::has(super::features::PAGES_1G)
}

/// Where page-table pages come from: the memory layer's allocator of one 4 KiB page (with a
/// NUMA zone hint), and of a run of contiguous pages (zone 0 first), installed at boot before the
/// first map (`set_page_source`).
static PAGE_SOURCE: AtomicUsize = AtomicUsize::new(0);
static RUN_SOURCE: AtomicUsize = AtomicUsize::new(0);

/// Installs the allocators page tables take their pages from.
pub fn set_page_source(alloc_page: fn(Option<usize>) -> Option<u64>, alloc_run: fn(usize) -> Option<u64>) {
    PAGE_SOURCE.store(alloc_page as usize, Ordering::Release);
    RUN_SOURCE.store(alloc_run as usize, Ordering::Release);
}

/// A 4 KiB page for a table (zone hint `zone`), not zeroed.
fn table_page(zone: Option<usize>) -> *mut u64 {
    let f = PAGE_SOURCE.load(Ordering::Acquire);
    assert!(f != 0, "paging: no page source installed");
    // SAFETY: only `set_page_source` stores it, and it is such a function.
    let alloc_page = unsafe { core::mem::transmute::<usize, fn(Option<usize>) -> Option<u64>>(f) };
    direct(alloc_page(zone).expect("out of memory for page tables"))
}

/// The kernel's pointer to physical address `phys`: the direct map is the identity (as the
/// memory layer's `phys_to_virt` says).
fn direct(phys: u64) -> *mut u64 {
    phys as *mut u64
}

/// A zeroed page for a page table.
fn new_table() -> *mut u64 {
    let table = table_page(Some(0));
    // Zeroed by the monitor where this runs emulated (`fill_fresh`): a `rep stos` over the page
    // cost ~0.5 ms there, a fill one exit.
    // SAFETY: a freshly allocated 4 KiB page that nothing else references.
    unsafe { fill_fresh(table, 512, 0, 0) };
    table
}

/// Returns the table that entry `index` of `table` points to, creating it if absent.
///
/// # Safety
/// `table` must be a live page table of this kernel.
unsafe fn next_table(table: *mut u64, index: usize) -> *mut u64 {
    // SAFETY: index < 512 and the table is live (caller's contract).
    unsafe {
        flush_fills();
        let entry = table.add(index);
        if *entry & PRESENT == 0 {
            let next = new_table();
            flush_fills();
            *entry = next as u64 | TABLE_ENTRY_BITS;
        }
        direct(*entry & ADDR_MASK)
    }
}

/// Builds the identity map of the RAM ranges `ram` (`(start, end)`, 2 MiB aligned; the hole
/// between them stays unmapped, except the xAPIC window when `map_xapic`) and the pool's
/// alias (`pool_alias`), and returns the PML4's physical address. Boot CPU, once.
/// `user`: a 2 MiB-aligned range (the program's memory pool) whose leaves are user-accessible
/// and not present: the pool makes memory present as it hands it out, so a stray pointer into
/// memory never given faults. Every other page is present and supervisor-only, unless
/// `kernel_user` (ring-3 mode: the kernel runs in ring 3 too, so all RAM is user-accessible,
/// its code and read-only data read-only). Page 0 is not present. Intermediate entries allow
/// user access; the leaves decide. `absent`: the kernel's RAM that KVM does not know yet (the
/// lazy span, 2 MiB aligned), mapped with 2 MiB leaves that are not present until `now_present`
/// (after the monitor registered a piece): a stray access there, which in ring-3 mode a program
/// can make, is a page fault the kernel reports (SIGSEGV), not an MMIO exit that stops the VM.
///
/// Nothing here costs time per GiB of RAM beyond filling the tables: each map's directories
/// are one contiguous run of tables, and each run of leaves with the same flags is one fill,
/// which the monitor does where this code runs emulated (`fill_fresh`).
pub fn build_identity_map(
    ram: impl Iterator<Item = (u64, u64)> + Clone,
    map_xapic: bool,
    user: Option<(u64, u64)>,
    kernel_user: bool,
    absent: (u64, u64),
) -> u64 {
    let (user_lo, user_hi) = user.unwrap_or((0, 0));
    let (absent_lo, absent_hi) = (absent.0.next_multiple_of(LARGE_PAGE_SIZE), absent.1 & !(LARGE_PAGE_SIZE - 1));
    BATCH.on.store(true, Ordering::Relaxed);
    let pml4 = new_table();
    let huge = has_1g_pages();
    let kernel_u = if kernel_user { USER } else { 0 };
    // The kernel's leaves are never taken away, so they may count as used from the start
    // (the accessed bit only decides flushes, `StaleTlb::add`). Under shadow paging (PVM) the
    // hypervisor maps the neighbours of a faulting 4 KiB leaf along with it only where their
    // accessed bit is set, and maps a leaf writable at once only where its dirty bit is: with
    // the bits clear, an empty program's start took 164 shadow faults (125 in the kernel's
    // code, one per page), with them set 69, and 10.1-10.7 ms instead of 8.7-8.9.
    let kernel_leaf = PRESENT | WRITABLE | PAGE_SIZE_BIT | GLOBAL | kernel_u | ACCESSED | DIRTY;
    let pool_leaf = PAGE_SIZE_BIT | GLOBAL | USER;
    let ram_end = ram.clone().map(|(_, end)| end).max().unwrap_or(0);
    // SAFETY: all tables below are freshly allocated and only reachable from `pml4`.
    unsafe {
        let identity = Directories::new(pml4, 0, ram_end);
        for (start, end) in ram.clone() {
            if start == 0 {
                map_low_2mib(identity.pd_entry(0), kernel_user);
            }
            let start = start.max(LARGE_PAGE_SIZE);
            let (pool_lo, pool_hi) = (user_lo.clamp(start, end), user_hi.clamp(start, end));
            identity.map(start, pool_lo, kernel_leaf, huge);
            identity.map(pool_lo, pool_hi, pool_leaf, huge);
            let (lazy_lo, lazy_hi) = (absent_lo.clamp(pool_hi, end), absent_hi.clamp(pool_hi, end));
            identity.map(pool_hi, lazy_lo, kernel_leaf, huge);
            // 2 MiB leaves: the monitor registers the span in 2 MiB multiples.
            identity.map(lazy_lo, lazy_hi, kernel_leaf & !PRESENT, false);
            identity.map(lazy_hi, end, kernel_leaf, huge);
        }
        if user.is_some() {
            let alias = Directories::new(pml4, POOL_ALIAS_BASE, ram_end);
            // Not present until KVM knows the memory (`pool_alias_ready`), in 2 MiB leaves.
            for (start, end) in ram_in(ram, user_lo, user_hi) {
                alias.map(start, end, WRITABLE | PAGE_SIZE_BIT | kernel_u | ACCESSED | DIRTY, false);
            }
            POOL_ALIAS.store(user_lo, Ordering::Relaxed);
            POOL_ALIAS_END.store(user_hi, Ordering::Relaxed);
        }
        if map_xapic {
            let base = super::apic::XAPIC_BASE & !(LARGE_PAGE_SIZE - 1);
            let pdpt = next_table(pml4, 0);
            let pd = next_table(pdpt, (base >> 30) as usize);
            write_fresh(
                pd.add((base >> 21) as usize & 511),
                base | PRESENT | WRITABLE | PAGE_SIZE_BIT | NO_CACHE | WRITE_THROUGH,
            );
        }
    }
    flush_fills();
    BATCH.on.store(false, Ordering::Relaxed);
    KERNEL_PML4.store(pml4 as u64, Ordering::Release);
    pml4 as u64
}

/// One map's page directories at boot: a PDPT (one PML4 entry, 512 GiB of virtual space from
/// `va`) and one PD per GiB of physical space, contiguous, so that a run of 2 MiB leaves is one
/// fill however many GiB it spans. A GiB mapped by a 1 GiB leaf leaves its PD unused (4 KiB).
struct Directories {
    pdpt: *mut u64,
    pds: *mut u64,
}

impl Directories {
    /// Directories for physical `[0, phys_end)` at virtual `va` (512 GiB aligned), linked
    /// into `pml4`.
    ///
    /// # Safety
    /// `pml4` must be the table `build_identity_map` is building.
    unsafe fn new(pml4: *mut u64, va: u64, phys_end: u64) -> Directories {
        let gibs = phys_end.div_ceil(HUGE_PAGE_SIZE);
        assert!(gibs <= 512 && va.is_multiple_of(1 << 39), "paging: RAM beyond one PDPT");
        let pdpt = new_table();
        let pds = table_run(gibs as usize);
        // SAFETY: fresh tables owned by this map (the caller's contract).
        unsafe {
            fill_fresh(pds, gibs * 512, 0, 0);
            fill_fresh(pdpt, gibs, pds as u64 | TABLE_ENTRY_BITS, PAGE_SIZE);
            write_fresh(pml4.add((va >> 39) as usize & 511), pdpt as u64 | TABLE_ENTRY_BITS);
        }
        Directories { pdpt, pds }
    }

    /// The PD entry of the 2 MiB at physical `addr`.
    fn pd_entry(&self, addr: u64) -> *mut u64 {
        self.pds.wrapping_add((addr >> 21) as usize)
    }

    /// Maps physical `[start, end)` (2 MiB aligned; empty if `end <= start`) with leaves
    /// carrying `flags` (`PAGE_SIZE_BIT` included): 1 GiB leaves for whole GiBs when `huge`,
    /// 2 MiB leaves for the rest.
    ///
    /// # Safety
    /// The directories must be the fresh ones `new` made, and the range inside `phys_end`.
    unsafe fn map(&self, start: u64, end: u64, flags: u64, huge: bool) {
        if start >= end {
            return;
        }
        let (gib_lo, gib_hi) = (start.next_multiple_of(HUGE_PAGE_SIZE), end & !(HUGE_PAGE_SIZE - 1));
        // SAFETY: the caller's contract; every entry written lies in these fresh tables.
        unsafe {
            if !huge || gib_lo >= gib_hi {
                fill_fresh(self.pd_entry(start), (end - start) >> 21, start | flags, LARGE_PAGE_SIZE);
                return;
            }
            fill_fresh(self.pd_entry(start), (gib_lo - start) >> 21, start | flags, LARGE_PAGE_SIZE);
            let leaves = self.pdpt.add((gib_lo >> 30) as usize);
            fill_fresh(leaves, (gib_hi - gib_lo) >> 30, gib_lo | flags, HUGE_PAGE_SIZE);
            fill_fresh(self.pd_entry(gib_hi), (end - gib_hi) >> 21, gib_hi | flags, LARGE_PAGE_SIZE);
        }
    }
}

/// Maps the first 2 MiB with 4 KiB pages through PD entry `pd_entry`. The low 64 KiB stay not
/// present (the boot-info block and the boot page tables there are read only before these
/// tables are active, see `bootinfo`); the system-call trampoline page is the only
/// user-accessible page of the kernel image (all are in ring-3 mode, the code and read-only
/// data read-only; an image past 2 MiB would leave the rest writable).
///
/// # Safety
/// `pd_entry` must be the first entry of a fresh PD of the tables being built.
unsafe fn map_low_2mib(pd_entry: *mut u64, kernel_user: bool) {
    let kernel_u = if kernel_user { USER } else { 0 };
    let pt = new_table();
    let first = LOW_UNMAPPED_END / PAGE_SIZE;
    let flags = PRESENT | GLOBAL | kernel_u | ACCESSED;
    // SAFETY: `pt` is fresh; every index written is below 512.
    unsafe {
        fill_fresh(pt.add(first as usize), 512 - first, LOW_UNMAPPED_END | flags | WRITABLE | DIRTY, PAGE_SIZE);
        if kernel_user {
            let (ro_lo, ro_hi) = kernel_read_only();
            let (lo, hi) =
                (ro_lo.clamp(LOW_UNMAPPED_END, LARGE_PAGE_SIZE), ro_hi.clamp(LOW_UNMAPPED_END, LARGE_PAGE_SIZE));
            if lo < hi {
                fill_fresh(pt.add((lo / PAGE_SIZE) as usize), (hi - lo) / PAGE_SIZE, lo | flags, PAGE_SIZE);
            }
        }
        let tramp = super::syscall::trampoline_page();
        if (LOW_UNMAPPED_END..LARGE_PAGE_SIZE).contains(&tramp) {
            // Read back: the fills above may be queued.
            flush_fills();
            *pt.add((tramp / PAGE_SIZE) as usize) |= USER;
        }
        write_fresh(pd_entry, pt as u64 | TABLE_ENTRY_BITS);
    }
}

/// Writes `count` entries from `table`: `first + i * step`. For tables that are not in use yet
/// (no CR3 has reached them): in emulated ring 0 (PVM) the monitor writes them, one VM exit
/// instead of a few thousand cycles per emulated store. Never for a table in use: the
/// hypervisor's shadow paging would not see the monitor's writes.
///
/// # Safety
/// `[table, table + count)` must be fresh table memory the caller owns.
unsafe fn fill_fresh(table: *mut u64, count: u64, first: u64, step: u64) {
    if count == 0 {
        return;
    }
    if super::ring3::runs_emulated() {
        if BATCH.on.load(Ordering::Relaxed) {
            // SAFETY: only the boot CPU batches, in `build_identity_map`.
            let (list, len) = unsafe { &mut *BATCH.list.get() };
            if *len == list.len() {
                flush_fills();
            }
            // SAFETY: as above (`flush_fills` emptied a full list).
            let (list, len) = unsafe { &mut *BATCH.list.get() };
            list[*len] = [table as u64, count, first, step];
            *len += 1;
            return;
        }
        let done = super::hypercall::call(hrt_abi::nr::MEM_FILL, &[table as u64, count, first, step]);
        assert!(done == 0, "paging: the monitor did not fill the page tables ({done})");
        return;
    }
    // SAFETY: forwarded from the caller.
    unsafe { fill_entries(table, 0, count, first, step, 0) };
}

/// `*entry = value` for an entry of a fresh table, in order with the fills before it (they
/// may be queued, `BATCH`).
///
/// # Safety
/// As `fill_fresh`.
unsafe fn write_fresh(entry: *mut u64, value: u64) {
    // SAFETY: forwarded from the caller.
    unsafe { fill_fresh(entry, 1, value, 0) };
}

/// The fills `build_identity_map` queues where it runs emulated, sent in one `MEM_FILLS`: each
/// hypercall is an exit and ~90 emulated instructions, and the tables took 16 of them.
struct Batch {
    on: core::sync::atomic::AtomicBool,
    list: core::cell::UnsafeCell<([[u64; 4]; hrt_abi::nr::MEM_FILLS_MAX as usize], usize)>,
}

// SAFETY: used by the boot CPU alone, before any other CPU runs (`build_identity_map`).
unsafe impl Sync for Batch {}

static BATCH: Batch = Batch {
    on: core::sync::atomic::AtomicBool::new(false),
    list: core::cell::UnsafeCell::new(([[0; 4]; hrt_abi::nr::MEM_FILLS_MAX as usize], 0)),
};

/// Sends the queued fills (none queued: nothing). Before anything reads an entry they may write.
fn flush_fills() {
    // SAFETY: only the boot CPU batches, in `build_identity_map`.
    let (list, len) = unsafe { &mut *BATCH.list.get() };
    if *len == 0 {
        return;
    }
    let done = super::hypercall::call(hrt_abi::nr::MEM_FILLS, &[list.as_ptr() as u64, *len as u64]);
    assert!(done == 0, "paging: the monitor did not fill the page tables ({done})");
    *len = 0;
}

/// `pages` contiguous 4 KiB pages for tables (zone 0), not zeroed.
fn table_run(pages: usize) -> *mut u64 {
    let f = RUN_SOURCE.load(Ordering::Acquire);
    assert!(f != 0, "paging: no page source installed");
    // SAFETY: only `set_page_source` stores it, and it is such a function.
    let alloc_run = unsafe { core::mem::transmute::<usize, fn(usize) -> Option<u64>>(f) };
    direct(alloc_run(pages).expect("out of memory for page tables"))
}

/// Where the kernel sees the program's pool a second time: physical (= program) address `a`
/// at `POOL_ALIAS_BASE + a`, read-write, present once KVM knows the memory (`pool_alias_ready`).
/// The kernel clears memory
/// the program gave back through it: in the identity map those pages are not present from
/// the moment they are unmapped (so the program faults there), yet they must be zeroed before
/// they become free. Only the kernel uses it: supervisor-only where the kernel runs in ring 0;
/// in ring-3 mode the program could reach it, as it can reach all kernel memory there.
const POOL_ALIAS_BASE: u64 = 1 << 45;
/// The pool `[POOL_ALIAS, POOL_ALIAS_END)` the alias covers (both 0 before it is built).
static POOL_ALIAS: AtomicU64 = AtomicU64::new(0);
static POOL_ALIAS_END: AtomicU64 = AtomicU64::new(0);

/// The RAM parts of `[lo, hi)`.
fn ram_in(ram: impl Iterator<Item = (u64, u64)>, lo: u64, hi: u64) -> impl Iterator<Item = (u64, u64)> {
    ram.map(move |(s, e)| (s.max(lo), e.min(hi))).filter(|(s, e)| s < e)
}

/// The pool's `[start, end)` is memory KVM knows now (`nr::RAM_READY`): its alias becomes
/// present. Until then it is not, so that in ring-3 mode a stray access of the program there
/// faults (SIGSEGV) rather than stop the VM with an MMIO exit; the kernel itself uses the
/// alias only for memory it has made present in the pool, which KVM knows.
pub fn pool_alias_ready(start: u64, end: u64) {
    let (lo, hi) = (POOL_ALIAS.load(Ordering::Relaxed), POOL_ALIAS_END.load(Ordering::Relaxed));
    let (start, end) = (start.max(lo), end.min(hi));
    if start < end {
        leaves_present(POOL_ALIAS_BASE + start, POOL_ALIAS_BASE + end, POOL_ALIAS_BASE);
    }
}

/// The kernel's always-writable view of `[addr, addr + len)` of the program's pool (see
/// `POOL_ALIAS_BASE`), or None outside the pool.
pub fn pool_alias(addr: u64, len: u64) -> Option<*mut u8> {
    let (lo, hi) = (POOL_ALIAS.load(Ordering::Relaxed), POOL_ALIAS_END.load(Ordering::Relaxed));
    (addr >= lo && addr.checked_add(len).is_some_and(|end| end <= hi) && lo < hi)
        .then_some((POOL_ALIAS_BASE + addr) as *mut u8)
}

/// The kernel image's code and read-only data: [start, end), page aligned.
fn kernel_read_only() -> (u64, u64) {
    extern "C" {
        // Defined by kernel/linker.ld; only their addresses are meaningful.
        static __text_start: u8;
        static __rodata_end: u8;
    }
    (&raw const __text_start as u64, &raw const __rodata_end as u64)
}

/// Loads the kernel's page tables on this CPU.
pub fn activate() {
    let pml4 = KERNEL_PML4.load(Ordering::Acquire);
    assert!(pml4 != 0, "page tables not built");
    // SAFETY: the table identity-maps all memory, including the running kernel and its stacks.
    unsafe { write_cr3(pml4) };
    enable_nx();
}

pub fn kernel_pml4() -> u64 {
    KERNEL_PML4.load(Ordering::Acquire)
}

// ---------------------------------------------------------------------------------------------
// Protections of the program's pages (mprotect, mmap with PROT_NONE/PROT_READ, stack guards).
// The identity map gives every program page read, write and execute; these functions change
// the leaves of a range, splitting a 1 GiB or 2 MiB leaf into smaller ones where the range
// covers only part of it, and merging a 4 KiB table back into a 2 MiB leaf when a change
// covers all of it. The caller serialises changes and flushes the TLBs (`super::tlb`).
// ---------------------------------------------------------------------------------------------

/// Execute-disable (needs EFER.NXE).
pub const NO_EXECUTE: u64 = 1 << 63;
/// The permission bits `protect_user` decides.
const PERMISSION_BITS: u64 = PRESENT | WRITABLE | NO_EXECUTE;
/// The bits a 4 KiB leaf made present gets with `bits`: accessed, and dirty when writable,
/// as if the program had used it already. Under shadow paging (PVM) the hypervisor maps a
/// page on its first touch, and it maps the neighbours of a faulting leaf along with it only
/// when their accessed bit is set (KVM's prefetch of up to 8 leaves), and writably only when
/// their dirty bit is: touching the pages of a break grown again after a trim cost ~52 K
/// cycles each with the bits clear, ~7 K with them set (Linux ~1.7 K with its page fault).
/// The cost: unmapping such a leaf flushes it from the TLBs even if the program never used
/// it, an IPI to every busy CPU (~100-200 us of the two CPUs on PVM). So a change of at most
/// `FEW_PAGES` pages (`preset` false) leaves the bits clear, as Rust's threads showed (each
/// maps a 3-page signal stack, takes a guard page from it, unmaps it at exit untouched: two
/// shootdowns per thread). Measured with another thread spinning (mmap, touch, munmap, us per
/// round, bits set / clear): 3 pages none touched 51 / 2.4, 8 pages one touched 80-85 / 62-66,
/// but 8 pages all touched 85-115 / 120-123 and 4 all touched 72-74 / 87-89: the threshold
/// keeps the loss to mappings of up to 4 pages. 2 MiB and 1 GiB leaves are left alone (thread
/// stacks, large mappings mostly untouched).
fn small_leaf_bits(bits: u64, preset: bool) -> u64 {
    match bits {
        b if b & PRESENT == 0 || !preset => b,
        b if b & WRITABLE != 0 => b | ACCESSED | DIRTY,
        b => b | ACCESSED,
    }
}

/// Changes of at most this many pages make 4 KiB leaves present unused (`small_leaf_bits`).
const FEW_PAGES: u64 = 4;

/// A table entry pointing to a lower-level table: permissive, the leaves decide. Marked
/// accessed from the start, as the kernel's own leaves are (`build_identity_map`): under
/// shadow paging the hypervisor's walk would otherwise write the bit into each entry it
/// passes on first use.
const TABLE_ENTRY_BITS: u64 = PRESENT | WRITABLE | USER | ACCESSED;
const EFER_NXE: u64 = 1 << 11;

static NX_ENABLED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Turns on execute-disable on this CPU if the CPU has it (CPUID 0x8000_0001 EDX bit 20).
/// Every CPU calls this once (from `activate`); the answer is the same on all of them.
fn enable_nx() {
    let (_, _, _, edx) = super::instr::cpuid(0x8000_0001, 0);
    if edx & (1 << 20) == 0 {
        return;
    }
    let efer = super::instr::rdmsr(super::instr::MSR_EFER);
    if efer & EFER_NXE == 0 {
        // SAFETY: NXE only lets page-table entries forbid execution; no entry sets bit 63 yet.
        unsafe { super::instr::wrmsr(super::instr::MSR_EFER, efer | EFER_NXE) };
    }
    NX_ENABLED.store(true, Ordering::Relaxed);
}

/// Whether leaves may carry `NO_EXECUTE`.
pub fn nx_enabled() -> bool {
    NX_ENABLED.load(Ordering::Relaxed)
}

/// What a program page allows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct UserAccess {
    pub present: bool,
    pub writable: bool,
    pub executable: bool,
}

impl UserAccess {
    /// What the identity map gives every program page.
    pub const ALL: UserAccess = UserAccess { present: true, writable: true, executable: true };

    fn bits(self) -> u64 {
        if !self.present {
            return 0;
        }
        let mut b = PRESENT;
        if self.writable {
            b |= WRITABLE;
        }
        if !self.executable && nx_enabled() {
            b |= NO_EXECUTE;
        }
        b
    }
}

/// TLB entries a protection change made stale: a few addresses (each flushed with INVLPG),
/// or everything; and whether any permission was taken away (only then must other CPUs
/// flush at once: a stale entry that allows less only causes a spurious fault, which
/// `retry_spurious_fault` resolves) or a table was freed.
pub struct StaleTlb {
    pages: [u64; StaleTlb::MAX],
    count: usize,
    everything: bool,
    reduced: bool,
    freed_table: bool,
}

impl StaleTlb {
    pub const MAX: usize = 16;

    pub const fn new() -> Self {
        StaleTlb { pages: [0; Self::MAX], count: 0, everything: false, reduced: false, freed_table: false }
    }

    /// `addr` lies in a leaf whose permissions changed (any address of a large leaf flushes
    /// its whole TLB entry). A leaf the CPU never used (not present, or accessed bit clear)
    /// cannot be in any TLB: nothing to flush.
    fn add(&mut self, addr: u64, old: u64, new: u64) {
        if old & (PRESENT | ACCESSED) != PRESENT | ACCESSED {
            return;
        }
        if new & PRESENT == 0 || old & WRITABLE > new & WRITABLE || old & NO_EXECUTE < new & NO_EXECUTE {
            self.reduced = true;
        }
        if self.count < Self::MAX {
            self.pages[self.count] = addr;
            self.count += 1;
        } else {
            self.everything = true;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0 && !self.everything
    }

    pub fn everything(&self) -> bool {
        self.everything
    }

    pub fn pages(&self) -> &[u64] {
        &self.pages[..self.count]
    }

    /// Some CPU may still use a permission that was taken away, or a table that was freed.
    pub fn needs_shootdown(&self) -> bool {
        self.reduced || self.freed_table
    }

    /// A page table is freed once the flush is done.
    pub fn frees_tables(&self) -> bool {
        self.freed_table
    }
}

impl Default for StaleTlb {
    fn default() -> Self {
        Self::new()
    }
}

/// A 4 KiB page for a table, not zeroed (the caller writes all 512 entries).
fn alloc_table_page() -> *mut u64 {
    table_page(None)
}

/// Replaces the large leaf `*entry` (mapping `base`, `size` bytes) with a table of 512
/// leaves of `size / 512` bytes carrying the same flags, except that the leaves inside
/// `[lo, hi)` get the permission bits `bits` right away (a table that is in use may be
/// write-protected by the hypervisor's shadow paging, so each later write to it can trap).
/// The table is complete before the entry points to it: other CPUs see the old leaf or the
/// new table.
///
/// # Safety
/// `entry` must be a large leaf of the kernel's tables; the caller serialises changes.
unsafe fn split_leaf(entry: *mut u64, base: u64, size: u64, (lo, hi): (u64, u64), bits: u64, stale: &mut StaleTlb) {
    let table = alloc_table_page();
    // SAFETY: the caller's contract; `table` is a fresh page we own.
    unsafe {
        let step = size / 512;
        // 2 MiB leaves keep the PS bit; 4 KiB leaves must not have it (bit 7 is PAT there).
        // They count as used: a TLB may still hold the large leaf, which covers them. Writable
        // ones of a present leaf count as dirty too (the kernel reads no dirty bit): under
        // shadow paging the hypervisor maps a clean writable leaf read-only and takes a fault
        // of its own at its first write, and it does not map the neighbours of a faulting
        // page writable. A program's data segment that the monitor copied in (1 MiB or more)
        // sits in a large leaf nobody wrote through, which its protection then splits:
        // Python's start took 224 faults in its 319 data pages, one per page written.
        let dirty = if *entry & (PRESENT | WRITABLE) == PRESENT | WRITABLE { DIRTY } else { 0 };
        let flags =
            (*entry & !ADDR_MASK | ACCESSED | dirty) & if step == PAGE_SIZE { !PAGE_SIZE_BIT } else { u64::MAX };
        let preset = hi - lo > FEW_PAGES * PAGE_SIZE;
        let bits = if step == PAGE_SIZE && *entry & PRESENT == 0 { small_leaf_bits(bits, preset) } else { bits };
        let changed = (flags & !PERMISSION_BITS) | bits;
        // Entries [a, b) lie wholly inside [lo, hi). Three plain loops: each emulated
        // instruction costs thousands of cycles here, so the loop body is kept minimal.
        let a = (lo.max(base) - base).div_ceil(step).min(512);
        let b = (hi.min(base + size).saturating_sub(base) / step).max(a);
        fill_entries(table, 0, a, base, step, flags);
        fill_entries(table, a, b, base, step, changed);
        fill_entries(table, b, 512, base, step, flags);
        // Identity-mapped: the table's address is its physical address.
        let old = swap_entry(entry, table as u64 | TABLE_ENTRY_BITS);
        if changed != flags {
            stale.add(base.max(lo), old, changed);
        }
    }
}

/// Writes entries `[from, to)` of `table`: `(base + i * step) | flags`.
///
/// # Safety
/// `table` must be a 512-entry table the caller owns and `to <= 512`.
unsafe fn fill_entries(table: *mut u64, from: u64, to: u64, base: u64, step: u64, flags: u64) {
    let mut entry = (base + from * step) | flags;
    let mut p = table.wrapping_add(from as usize);
    let end = table.wrapping_add(to as usize);
    while p < end {
        // SAFETY: inside the table (caller's contract).
        unsafe { p.write(entry) };
        entry += step;
        p = p.wrapping_add(1);
    }
}

/// `set_leaf` for a 4 KiB leaf: one made present again also gets `small_leaf_bits`.
///
/// # Safety
/// `entry` must be a 4 KiB leaf entry of the kernel's tables.
unsafe fn set_small_leaf(entry: *mut u64, addr: u64, bits: u64, preset: bool, stale: &mut StaleTlb) {
    // SAFETY: the caller's contract.
    unsafe {
        let bits = if *entry & PRESENT == 0 { small_leaf_bits(bits, preset) } else { bits };
        set_leaf(entry, addr, bits, stale)
    }
}

/// Sets the permission bits of leaf `*entry`; notes the address if they changed.
///
/// # Safety
/// `entry` must be a leaf entry of the kernel's tables.
unsafe fn set_leaf(entry: *mut u64, addr: u64, bits: u64, stale: &mut StaleTlb) {
    // SAFETY: the caller's contract.
    unsafe {
        let old = *entry;
        // A leaf made not present forgets it was used (no TLB holds it once flushed), so that
        // when it is present again only a new use makes taking it away cost a flush.
        let used = if bits & PRESENT == 0 { ACCESSED } else { 0 };
        let new = (old & !PERMISSION_BITS & !used) | bits;
        if new != old {
            let old = swap_entry(entry, new);
            stale.add(addr, old, new);
        }
    }
}

/// Replaces a live entry and returns what it held, including an accessed bit the CPU (or the
/// hypervisor's page walk) set after the caller read it: that bit decides whether to flush.
///
/// # Safety
/// `entry` must be an entry of the kernel's tables (8-byte aligned).
unsafe fn swap_entry(entry: *mut u64, new: u64) -> u64 {
    // SAFETY: the caller's contract; page-table entries are only accessed atomically or by
    // the CPU's page walks.
    unsafe { (*(entry as *const AtomicU64)).swap(new, Ordering::AcqRel) }
}

/// Gives the program's pages `[start, end)` (4 KiB aligned, inside the identity map) the
/// permissions `access`. Returns the page-table pages that are no longer used: the caller
/// frees them (through the memory layer's page allocator) once `stale` has been flushed on every CPU.
pub fn protect_user(start: u64, end: u64, access: UserAccess, stale: &mut StaleTlb) -> alloc::vec::Vec<u64> {
    let bits = access.bits();
    let preset = end - start > FEW_PAGES * PAGE_SIZE;
    PROTECTION_CHANGES.fetch_add(1, Ordering::AcqRel);
    let mut freed = alloc::vec::Vec::new();
    let pml4 = direct(kernel_pml4());
    let mut cur = start;
    // SAFETY: the kernel's tables, changed one entry at a time with complete replacements;
    // the caller serialises protection changes.
    unsafe {
        while cur < end {
            let e4 = *pml4.add((cur >> 39) as usize & 511);
            if e4 & PRESENT == 0 {
                cur = (cur | ((1 << 39) - 1)) + 1;
                continue;
            }
            let pdpt = direct(e4 & ADDR_MASK);
            let e3 = pdpt.add((cur >> 30) as usize & 511);
            let gib = cur & !(HUGE_PAGE_SIZE - 1);
            // Zero: nothing mapped. A leaf made PROT_NONE is not present but keeps its address
            // and size bit, so it is still recognised as a leaf here.
            if *e3 == 0 {
                cur = gib + HUGE_PAGE_SIZE;
                continue;
            }
            if *e3 & PAGE_SIZE_BIT != 0 {
                if cur == gib && end >= gib + HUGE_PAGE_SIZE {
                    set_leaf(e3, gib, bits, stale);
                    cur = gib + HUGE_PAGE_SIZE;
                    continue;
                }
                // Into 2 MiB leaves; those wholly inside the range get the new bits at once.
                split_leaf(e3, gib, HUGE_PAGE_SIZE, (cur, end), bits, stale);
                stale.everything = true;
            }
            let pd = direct(*e3 & ADDR_MASK);
            let e2 = pd.add((cur >> 21) as usize & 511);
            let mib2 = cur & !(LARGE_PAGE_SIZE - 1);
            let whole = cur == mib2 && end >= mib2 + LARGE_PAGE_SIZE;
            if *e2 == 0 {
                cur = mib2 + LARGE_PAGE_SIZE;
                continue;
            }
            if *e2 & PAGE_SIZE_BIT != 0 {
                if whole {
                    set_leaf(e2, mib2, bits, stale);
                } else {
                    split_leaf(e2, mib2, LARGE_PAGE_SIZE, (cur, end), bits, stale);
                }
                cur = end.min(mib2 + LARGE_PAGE_SIZE);
                continue;
            }
            if whole {
                // All 512 small leaves get the same permissions: one 2 MiB leaf again.
                let pt = *e2 & ADDR_MASK;
                let first = *(direct(pt) as *const u64);
                let flags = (first & !ADDR_MASK & !PERMISSION_BITS) | PAGE_SIZE_BIT | bits;
                core::ptr::write_volatile(e2, mib2 | flags);
                freed.push(pt);
                stale.add(mib2, first, flags);
                stale.everything = true;
                stale.freed_table = true;
                cur = mib2 + LARGE_PAGE_SIZE;
                continue;
            }
            let pt = direct(*e2 & ADDR_MASK);
            let stop = end.min(mib2 + LARGE_PAGE_SIZE);
            while cur < stop {
                set_small_leaf(pt.add((cur >> 12) as usize & 511), cur, bits, preset, stale);
                cur += PAGE_SIZE;
            }
        }
    }
    freed
}

/// Whether every page of `[start, end)` is present (and writable, with `write`) in the
/// kernel's tables: one look-up per leaf, so large ranges in 2 MiB leaves cost little.
/// Interrupts are off meanwhile, so a TLB shootdown (after which a merged table is freed)
/// waits for the walk to finish.
pub fn user_range_allows(start: u64, end: u64, write: bool) -> bool {
    let need = PRESENT | if write { WRITABLE } else { 0 };
    let was = super::irq::save_and_disable();
    let mut cur = start & !(PAGE_SIZE - 1);
    let mut ok = true;
    while cur < end {
        let (leaf, size) = leaf_entry_sized(cur);
        if leaf & need != need {
            ok = false;
            break;
        }
        cur = (cur & !(size - 1)) + size;
    }
    super::irq::restore(was);
    ok
}

/// Makes the kernel's 2 MiB leaves in `[start, end)` that `build_identity_map` left absent
/// (its `absent` span) present: KVM knows that memory now. Not-present entries are in no TLB,
/// so nothing is flushed; a CPU that faults on one before it sees the write retries
/// (`retry_spurious_fault`).
pub fn now_present(start: u64, end: u64) {
    leaves_present(start, end, 0);
}

/// Makes the 2 MiB leaves of virtual `[start, end)` (rounded out to them) present that map
/// `virtual - offset` and were left not present for it: see `now_present`.
fn leaves_present(start: u64, end: u64, offset: u64) {
    if kernel_pml4() == 0 || start >= end {
        // Before the tables are built: `build_identity_map` maps what is known then.
        return;
    }
    let was = super::irq::save_and_disable();
    let mut cur = start & !(LARGE_PAGE_SIZE - 1);
    while cur < end {
        if let Some(entry) = pd_entry_of(cur) {
            // SAFETY: an entry of the kernel's live PD; replaced whole, atomically.
            unsafe {
                let old = *entry;
                if old & (PRESENT | PAGE_SIZE_BIT) == PAGE_SIZE_BIT && old & ADDR_MASK == cur - offset {
                    swap_entry(entry, old | PRESENT);
                }
            }
        }
        cur += LARGE_PAGE_SIZE;
    }
    super::irq::restore(was);
}

/// The PD entry for `addr` in the kernel's tables, where a PD maps it (not a 1 GiB leaf).
fn pd_entry_of(addr: u64) -> Option<*mut u64> {
    let pml4 = direct(kernel_pml4()) as *const u64;
    // SAFETY: reading the kernel's live tables; PDs of the identity map are never freed.
    unsafe {
        let e4 = *pml4.add((addr >> 39) as usize & 511);
        if e4 & PRESENT == 0 {
            return None;
        }
        let e3 = *(direct(e4 & ADDR_MASK) as *const u64).add((addr >> 30) as usize & 511);
        if e3 & PRESENT == 0 || e3 & PAGE_SIZE_BIT != 0 {
            return None;
        }
        Some(direct(e3 & ADDR_MASK).add((addr >> 21) as usize & 511))
    }
}

/// What the kernel's tables let the program do with the page at `addr`; None where it is not
/// present.
pub fn user_access_at(addr: u64) -> Option<UserAccess> {
    let was = super::irq::save_and_disable();
    let (leaf, _) = leaf_entry_sized(addr);
    super::irq::restore(was);
    (leaf & PRESENT != 0).then_some(UserAccess {
        present: true,
        writable: leaf & WRITABLE != 0,
        executable: leaf & NO_EXECUTE == 0,
    })
}

/// `user_access_at`, with the size of the leaf (or of the absent entry) that decides it: the
/// same answer holds up to the next multiple of that size.
pub fn user_access_span(addr: u64) -> (Option<UserAccess>, u64) {
    let was = super::irq::save_and_disable();
    let (leaf, size) = leaf_entry_sized(addr);
    super::irq::restore(was);
    let access = (leaf & PRESENT != 0).then_some(UserAccess {
        present: true,
        writable: leaf & WRITABLE != 0,
        executable: leaf & NO_EXECUTE == 0,
    });
    (access, size)
}

/// Whether the 2 MiB page at `addr` (aligned) is wholly not present as one leaf (2 MiB or
/// 1 GiB) that `protect_user` can make present: one entry to write, and until then nothing of
/// it in any TLB. (An empty entry maps nothing, and `protect_user` leaves it alone.)
pub fn large_page_absent(addr: u64) -> bool {
    let was = super::irq::save_and_disable();
    let (leaf, size) = leaf_entry_sized(addr);
    super::irq::restore(was);
    size >= LARGE_PAGE_SIZE && leaf & PRESENT == 0 && leaf & ADDR_MASK != 0
}

/// The leaf entry mapping `addr` (0 if none) and the size it maps.
fn leaf_entry_sized(addr: u64) -> (u64, u64) {
    let pml4 = direct(kernel_pml4()) as *const u64;
    // SAFETY: reading the kernel's live tables; entries are replaced atomically and tables
    // are freed only after a shootdown, which cannot complete while interrupts are off here.
    unsafe {
        let e4 = *pml4.add((addr >> 39) as usize & 511);
        if e4 & PRESENT == 0 {
            return (0, HUGE_PAGE_SIZE);
        }
        let e3 = *(direct(e4 & ADDR_MASK) as *const u64).add((addr >> 30) as usize & 511);
        if e3 & PRESENT == 0 || e3 & PAGE_SIZE_BIT != 0 {
            return (e3, HUGE_PAGE_SIZE);
        }
        let e2 = *(direct(e3 & ADDR_MASK) as *const u64).add((addr >> 21) as usize & 511);
        if e2 & PRESENT == 0 || e2 & PAGE_SIZE_BIT != 0 {
            return (e2, LARGE_PAGE_SIZE);
        }
        (*(direct(e2 & ADDR_MASK) as *const u64).add((addr >> 12) as usize & 511), PAGE_SIZE)
    }
}

/// A page fault at `addr` with error code `error` that the current tables would allow came
/// from a TLB entry older than a permission increase (which is not shot down on other CPUs):
/// drops that entry and returns true, so the faulting instruction is simply run again.
pub fn retry_spurious_fault(addr: u64, error: u64) -> bool {
    const ERR_WRITE: u64 = 1 << 1;
    const ERR_USER: u64 = 1 << 2;
    const ERR_RESERVED: u64 = 1 << 3;
    const ERR_FETCH: u64 = 1 << 4;
    let (leaf, _) = leaf_entry_sized(addr);
    let allowed = leaf & PRESENT != 0
        && error & ERR_RESERVED == 0
        && (error & ERR_WRITE == 0 || leaf & WRITABLE != 0)
        && (error & ERR_USER == 0 || leaf & USER != 0)
        && (error & ERR_FETCH == 0 || leaf & NO_EXECUTE == 0);
    if !allowed {
        return false;
    }
    // The same address faulting again with no protection change in between is a real
    // fault after all (say, a hypervisor that did not drop its entry): report it rather
    // than loop.
    let cpu = super::percpu::cpu_id();
    let generation = PROTECTION_CHANGES.load(Ordering::Acquire);
    let again = LAST_SPURIOUS[cpu].swap(addr, Ordering::Relaxed) == addr
        && LAST_SPURIOUS_GENERATION[cpu].swap(generation, Ordering::Relaxed) == generation;
    LAST_SPURIOUS_GENERATION[cpu].store(generation, Ordering::Relaxed);
    if again {
        LAST_SPURIOUS[cpu].store(0, Ordering::Relaxed);
        return false;
    }
    // INVLPG is privileged: in ring 3 (a program's fault handled there, `fault_in_lazy`) it
    // goes through the gate; a bare one raised #GP in the kernel (a KERNEL PANIC when a thread
    // wrote a page another thread unmapped and mapped again).
    super::ring3::invalidate_pages(&[addr]);
    true
}

/// The address of each CPU's last retried fault, and `PROTECTION_CHANGES` at that time.
static LAST_SPURIOUS: [AtomicU64; hrt_abi::MAX_CPUS] = [const { AtomicU64::new(0) }; hrt_abi::MAX_CPUS];
static LAST_SPURIOUS_GENERATION: [AtomicU64; hrt_abi::MAX_CPUS] = [const { AtomicU64::new(0) }; hrt_abi::MAX_CPUS];
/// Counts calls of `protect_user`.
static PROTECTION_CHANGES: AtomicU64 = AtomicU64::new(0);
