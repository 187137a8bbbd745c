//! Paging and fault reporting.

use super::TestResult;
use crate::arch::traps;
use crate::ensure;

pub fn paging() -> TestResult {
    let mem = crate::bootinfo::get().mem_size;
    kprintln!(
        "  the low 64 KiB absent, reading 8 bytes at 64 KiB, 2 MiB and the end of each RAM range of {} MiB",
        mem >> 20
    );
    for addr in [0, 0x1000, 0xfff8] {
        ensure!(traps::probe_read(addr).is_err(), "address {addr:#x} in the low 64 KiB is mapped");
    }
    for addr in [0x10000, 2 << 20] {
        ensure!(traps::probe_read(addr).is_ok(), "address {addr:#x} is not mapped");
    }
    let mut last_end = 0;
    for (start, end) in crate::mem::ram_ranges() {
        ensure!(traps::probe_read(end - 8).is_ok(), "address {:#x} (end of RAM) is not mapped", end - 8);
        // The hole below 4 GiB (IOAPIC 0xFEC00000, local APIC 0xFEE00000) is not RAM.
        if start > last_end {
            kprintln!("  the hole [{last_end:#x}, {start:#x}) is not mapped");
            for addr in [last_end, hrt_abi::layout::IOAPIC_BASE, start - 8] {
                ensure!(traps::probe_read(addr).is_err(), "address {addr:#x} in the hole is mapped");
            }
        }
        last_end = end;
    }
    ensure!(traps::probe_read(last_end).is_err(), "address {last_end:#x} beyond RAM is mapped");
    Ok(())
}

pub fn fault_report() -> TestResult {
    kprintln!("  provoking a page fault at 0x18 and an invalid opcode");
    let f = match traps::probe_read(0x18) {
        Ok(v) => return Err(alloc::format!("read of 0x18 succeeded with {v:#x}")),
        Err(f) => f,
    };
    ensure!(f.vector == 14, "page fault reported as vector {}", f.vector);
    ensure!(f.address == 0x18, "page fault address {:#x}, want 0x18", f.address);
    ensure!(f.error & 1 == 0 && f.error & 2 == 0, "error code {:#x}: want not-present read", f.error);
    let u = match traps::probe_invalid_opcode() {
        Ok(_) => return Err("ud2 did not fault".into()),
        Err(u) => u,
    };
    ensure!(u.vector == 6, "ud2 reported as vector {}", u.vector);
    ensure!(u.rip == traps::invalid_opcode_probe_address(), "ud2 rip {:#x}", u.rip);
    Ok(())
}

/// Dereferences an unmapped address with no probe: the kernel must panic with a report.
pub fn crash_page_fault() -> TestResult {
    kprintln!("  writing to address 0x28 (expect a kernel panic)");
    // SAFETY: deliberately not safe: this test checks the fatal-fault report.
    unsafe { core::ptr::write_volatile(0x28 as *mut u64, 1) };
    Err("the write to 0x28 did not fault".into())
}

pub fn crash_panic() -> TestResult {
    panic!("deliberate panic from the crash_panic self-test");
}

/// A thread that overwrites the lowest word of its kernel stack (what an overflow does first)
/// and yields: the switch away must panic naming it, not run on with a corrupted neighbour.
pub fn crash_kernel_stack_overflow() -> TestResult {
    use crate::sched::{self, thread::USER_STACK_SIZE, ThreadOptions};
    kprintln!(
        "  a thread clobbers the bottom of its {} KiB kernel stack (expect a kernel panic)",
        USER_STACK_SIZE >> 10
    );
    let h = sched::spawn(ThreadOptions::named("overflow").stack(USER_STACK_SIZE), || {
        // SAFETY: the current record is alive while it runs.
        let top = sched::thread::stack_top(unsafe { &*sched::current() });
        // SAFETY: deliberately not safe: the lowest word of this thread's own stack, unused.
        unsafe { core::ptr::write_volatile((top - USER_STACK_SIZE as u64) as *mut u64, 0) };
        sched::yield_now();
        0
    })
    .map_err(|e| alloc::format!("spawn: {e:?}"))?;
    h.join();
    Err("the clobbered stack went unnoticed".into())
}
