//! x86-64: entry, descriptor tables, traps, paging, LAPIC, context switch, FPU state.
pub mod apic;
pub mod context;
pub mod entry;
pub mod features;
pub mod fpu;
pub mod gdt;
pub mod hypercall;
pub mod idt;
pub mod instr;
pub mod irq;
pub mod paging;
pub mod percpu;
pub mod pvm;
pub mod ring0;
pub mod syscall;
pub mod tlb;
pub mod traps;
