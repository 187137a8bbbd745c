//! The first instructions. The monitor starts every vCPU in 64-bit mode at `_start` with
//! rdi = physical address of the boot-info block, rsi = CPU index, rdx = a forked child's fork
//! record (0 on a boot), rsp = that CPU's boot stack, interrupts off and the monitor's boot page
//! tables loaded.
//! `_start` calls the kernel's entry by its link name, `hrt_kernel_entry` (defined by `boot`, the
//! layer above everything): this layer names nothing above it. A later Multiboot2 path will have
//! its own stub that ends in the same entry.

core::arch::global_asm!(
    ".section .text.boot, \"ax\"",
    ".global _start",
    "_start:",
    "    cli",
    "    xor ebp, ebp",
    "    and rsp, -16",
    "    call hrt_kernel_entry",
    "2:  hlt",
    "    jmp 2b",
);
