//! The first instructions. The monitor starts every vCPU in 64-bit mode at `_start` with
//! rdi = physical address of the boot-info block, rsi = CPU index, rsp = that CPU's boot stack,
//! interrupts off and the monitor's boot page tables loaded.
//! A later Multiboot2 path will have its own stub that ends in the same `boot::kernel_entry`.

core::arch::global_asm!(
    ".section .text.boot, \"ax\"",
    ".global _start",
    "_start:",
    "    cli",
    "    xor ebp, ebp",
    "    and rsp, -16",
    "    call {entry}",
    "2:  hlt",
    "    jmp 2b",
    entry = sym crate::boot::kernel_entry,
);
