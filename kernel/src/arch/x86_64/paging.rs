//! The kernel's page tables: all guest memory identity-mapped with the largest pages the CPU
//! offers (1 GiB, else 2 MiB), except the first 2 MiB, mapped with 4 KiB pages so that page 0
//! can stay not-present and null dereferences fault. No demand paging: everything is mapped
//! once, at boot.

use core::sync::atomic::{AtomicU64, Ordering};

use super::instr::write_cr3;

pub const PAGE_SIZE: u64 = 4096;
pub const LARGE_PAGE_SIZE: u64 = 2 << 20;
pub const HUGE_PAGE_SIZE: u64 = 1 << 30;

pub const PRESENT: u64 = 1 << 0;
pub const WRITABLE: u64 = 1 << 1;
pub const USER: u64 = 1 << 2;
pub const WRITE_THROUGH: u64 = 1 << 3;
pub const NO_CACHE: u64 = 1 << 4;
pub const PAGE_SIZE_BIT: u64 = 1 << 7;
pub const GLOBAL: u64 = 1 << 8;

const ADDR_MASK: u64 = 0x000f_ffff_ffff_f000;

/// Physical address of the kernel's PML4 once built.
static KERNEL_PML4: AtomicU64 = AtomicU64::new(0);

pub fn has_1g_pages() -> bool {
    super::features::has(super::features::PAGES_1G)
}

/// A zeroed page for a page table.
fn new_table() -> *mut u64 {
    let page = crate::mem::alloc_pages(0, Some(0)).expect("out of memory for page tables");
    let table = crate::mem::phys_to_virt(page) as *mut u64;
    // SAFETY: a freshly allocated 4 KiB page that nothing else references.
    unsafe { core::ptr::write_bytes(table, 0, 512) };
    table
}

/// Returns the table that entry `index` of `table` points to, creating it if absent.
///
/// # Safety
/// `table` must be a live page table of this kernel.
unsafe fn next_table(table: *mut u64, index: usize) -> *mut u64 {
    // SAFETY: index < 512 and the table is live (caller's contract).
    unsafe {
        let entry = table.add(index);
        if *entry & PRESENT == 0 {
            *entry = new_table() as u64 | PRESENT | WRITABLE | USER;
        }
        crate::mem::phys_to_virt(*entry & ADDR_MASK) as *mut u64
    }
}

/// Builds the identity map of the RAM ranges `ram` (`(start, end)`, 2 MiB aligned; the hole
/// between them stays unmapped, except the xAPIC window when `map_xapic`) and returns the
/// PML4's physical address. Boot CPU, once.
/// `user`: a 2 MiB-aligned range mapped user-accessible (the program's memory pool); every
/// other page is supervisor-only. Intermediate entries allow user access; the leaves decide.
pub fn build_identity_map(ram: impl Iterator<Item = (u64, u64)>, map_xapic: bool, user: Option<(u64, u64)>) -> u64 {
    let (user_lo, user_hi) = user.unwrap_or((0, 0));
    let pml4 = new_table();
    let huge = has_1g_pages();
    // SAFETY: all tables below are freshly allocated and only reachable from `pml4`.
    unsafe {
        for (start, end) in ram {
            map_range(pml4, start, end, huge, (user_lo, user_hi));
        }
        if map_xapic {
            let base = super::apic::XAPIC_BASE & !(LARGE_PAGE_SIZE - 1);
            let pdpt = next_table(pml4, 0);
            let pd = next_table(pdpt, (base >> 30) as usize);
            *pd.add((base >> 21) as usize & 511) = base | PRESENT | WRITABLE | PAGE_SIZE_BIT | NO_CACHE | WRITE_THROUGH;
        }
    }
    KERNEL_PML4.store(pml4 as u64, Ordering::Release);
    pml4 as u64
}

/// Identity-maps `[start, mem_size)` (one RAM range, 2 MiB aligned) into `pml4`.
///
/// # Safety
/// `pml4` must be the table `build_identity_map` is building.
unsafe fn map_range(pml4: *mut u64, start: u64, mem_size: u64, huge: bool, (user_lo, user_hi): (u64, u64)) {
    let mut addr = start;
    // SAFETY: the caller's contract; every table reached is fresh and owned by `pml4`.
    unsafe {
        while addr < mem_size {
            let pdpt = next_table(pml4, (addr >> 39) as usize & 511);
            let gib_index = (addr >> 30) as usize & 511;
            let user_gib = addr >= user_lo && addr + HUGE_PAGE_SIZE <= user_hi;
            let kernel_gib = addr + HUGE_PAGE_SIZE <= user_lo || addr >= user_hi;
            if huge
                && addr != 0
                && addr.is_multiple_of(HUGE_PAGE_SIZE)
                && addr + HUGE_PAGE_SIZE <= mem_size
                && (user_gib || kernel_gib)
            {
                let u = if user_gib { USER } else { 0 };
                *pdpt.add(gib_index) = addr | PRESENT | WRITABLE | PAGE_SIZE_BIT | GLOBAL | u;
                addr += HUGE_PAGE_SIZE;
                continue;
            }
            let pd = next_table(pdpt, gib_index);
            let end = ((addr | (HUGE_PAGE_SIZE - 1)) + 1).min(mem_size);
            while addr < end {
                let pd_index = (addr >> 21) as usize & 511;
                if addr == 0 {
                    let pt = next_table(pd, 0);
                    // Page 0 stays not present; the system-call trampoline page is the only
                    // user-accessible page of the kernel image.
                    let tramp = super::syscall::trampoline_page();
                    for i in 1..512u64 {
                        let u = if i * PAGE_SIZE == tramp { USER } else { 0 };
                        *pt.add(i as usize) = (i * PAGE_SIZE) | PRESENT | WRITABLE | GLOBAL | u;
                    }
                } else {
                    let u = if addr >= user_lo && addr < user_hi { USER } else { 0 };
                    *pd.add(pd_index) = addr | PRESENT | WRITABLE | PAGE_SIZE_BIT | GLOBAL | u;
                }
                addr += LARGE_PAGE_SIZE;
            }
        }
    }
}

/// Loads the kernel's page tables on this CPU.
pub fn activate() {
    let pml4 = KERNEL_PML4.load(Ordering::Acquire);
    assert!(pml4 != 0, "page tables not built");
    // SAFETY: the table identity-maps all memory, including the running kernel and its stacks.
    unsafe { write_cr3(pml4) };
}

pub fn kernel_pml4() -> u64 {
    KERNEL_PML4.load(Ordering::Acquire)
}
