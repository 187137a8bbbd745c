//! The kernel in ring 3 ("one ring" on PVM hosts, where guest ring 0 is emulated and costs
//! 1.4-3.4 K cycles per instruction while guest ring 3 runs natively).
//!
//! After boot every CPU drops to ring 3 and stays there: the scheduler, the idle loop, the
//! synchronisation primitives, the allocators and the Linux layer run in the same ring as the
//! program, and the program's `syscall` lands at a ring-3 entry (`hrt_syscall_ring3`) that
//! calls the dispatcher without a mode switch. Ring 0 is entered only by the hardware
//! (exceptions and interrupts) and by `privileged`, the gate for the few operations ring 3
//! cannot do (APIC registers, halting, TLB flushes).
//!
//! What changes with the ring:
//! - Interrupt masking is a per-CPU software flag (`irq`): CLI/STI fault in ring 3. An
//!   interrupt that arrives while the flag is set, inside the entry window below, or while the
//!   CPU is in ring 0 is only noted (per-CPU pending bits) and acknowledged; the handler runs
//!   when ring 3 next enables interrupts (`traps::run_deferred`).
//! - Entries from ring 3 arrive on a per-CPU entry stack (TSS.rsp0) and are moved at once to
//!   the stack they belong on: below the interrupted stack pointer (beyond any red zone) when
//!   kernel code was running, to the top of the thread's kernel stack when the program was.
//! - Thread switches that happen in ring 0 (preemption from an interrupt) drop back to ring 3
//!   on the next thread (`context::switch`); the trap return path returns within ring 3 with
//!   the hardware's ring-3 selectors when it runs there (`idt.rs`).
//! - GS holds the per-CPU pointer in both rings (both GS base MSRs are set, so SWAPGS changes
//!   nothing), FS is loaded with WRFSBASE, the hypercall port is open to ring 3 through the
//!   TSS I/O bitmap.
//!
//! The price is the one every hybrid runtime pays: the program and the kernel share one
//! privilege level and one address space, so the program can read and write kernel memory
//! (the kernel's code and read-only data stay read-only). `hrt run --kernel-ring 0` keeps the
//! kernel in ring 0, separated from the program, at the emulated ring 0's cost.

use core::arch::naked_asm;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::gdt::{USER_CS, USER_SS};
use super::percpu::{OFF_IRQ_OFF, OFF_KERNEL_RSP};

/// True once the boot CPU has chosen ring-3 mode (read from assembly too).
pub(super) static KERNEL_RING3: AtomicBool = AtomicBool::new(false);

/// The kernel's code, as ring-3 entries tell kernel code from program code: [lo, hi).
static KTEXT_LO: AtomicU64 = AtomicU64::new(0);
static KTEXT_HI: AtomicU64 = AtomicU64::new(0);
/// The user-executable page inside the kernel's code (program code, not kernel code).
static UTEXT_LO: AtomicU64 = AtomicU64::new(0);
static UTEXT_HI: AtomicU64 = AtomicU64::new(0);

extern "C" {
    static __text_start: u8;
    static __text_end: u8;
    fn hrt_syscall_call_entry();
    fn hrt_syscall_ring3();
    fn hrt_syscall_ring3_switched();
    fn hrt_ring0_gate_ret();
    fn hrt_ring3_return_window();
    fn hrt_ring3_return_iret();
    fn hrt_ring3_return_end();
}

/// Chooses ring-3 mode for this boot; boot CPU, before paging and the IDT are set up.
pub fn choose(on: bool) {
    KTEXT_LO.store(&raw const __text_start as u64, Ordering::Relaxed);
    KTEXT_HI.store(&raw const __text_end as u64, Ordering::Relaxed);
    let tramp = super::syscall::trampoline_page();
    UTEXT_LO.store(tramp, Ordering::Relaxed);
    UTEXT_HI.store(tramp + 4096, Ordering::Relaxed);
    KERNEL_RING3.store(on, Ordering::Release);
}

/// Per-CPU set-up in ring 0, just before `enter`: GS is the per-CPU pointer in both GS base
/// MSRs (so SWAPGS changes nothing and ring 3 reads per-CPU data natively), entries from ring
/// 3 land on `entry_stack_top`, and ring 3 may use the hypercall port.
pub fn init_cpu(entry_stack_top: u64) {
    use super::instr::{rdmsr, wrmsr, MSR_GS_BASE, MSR_KERNEL_GS_BASE};
    let cpu = super::cpu::this();
    // SAFETY: both MSRs get the same per-CPU pointer GS already holds; the TSS is this CPU's
    // own, and the stack a fresh allocation it owns forever.
    unsafe {
        wrmsr(MSR_KERNEL_GS_BASE, rdmsr(MSR_GS_BASE));
        let tss = &mut *cpu.tss.get();
        tss.rsp[0] = entry_stack_top;
        tss.open_hypercall_port();
    }
}

/// True if the kernel runs in ring 3 on this boot.
#[inline(always)]
pub fn active() -> bool {
    KERNEL_RING3.load(Ordering::Relaxed)
}

/// True if kernel code runs at native speed: in ring 3, or in ring 0 anywhere but a PVM host
/// (where each ring-0 instruction is emulated, so bulk work on memory is the monitor's job).
pub fn kernel_runs_natively() -> bool {
    active() || crate::bootinfo::get().platform != hrt_abi::Platform::PvmEmulated as u32
}

/// True if this code runs emulated now: in ring 0 on a PVM host.
pub fn runs_emulated() -> bool {
    in_ring0() && crate::bootinfo::get().platform == hrt_abi::Platform::PvmEmulated as u32
}

/// True if this code runs in ring 0 now (CS's low bits are the current privilege level).
#[inline(always)]
pub fn in_ring0() -> bool {
    let cs: u64;
    // SAFETY: reading CS has no side effects.
    unsafe { core::arch::asm!("mov {:r}, cs", out(reg) cs, options(nomem, nostack, preserves_flags)) };
    cs & 3 == 0
}

/// True if `rip` is the kernel's own code (as opposed to the program's, or the user page).
pub fn is_kernel_code(rip: u64) -> bool {
    (KTEXT_LO.load(Ordering::Relaxed)..KTEXT_HI.load(Ordering::Relaxed)).contains(&rip)
        && !(UTEXT_LO.load(Ordering::Relaxed)..UTEXT_HI.load(Ordering::Relaxed)).contains(&rip)
        && !in_entry_window(rip)
}

/// True if `rip` lies in the user-executable page of the kernel's code (the stubs rewritten
/// code calls).
pub fn in_user_text(rip: u64) -> bool {
    (UTEXT_LO.load(Ordering::Relaxed)..UTEXT_HI.load(Ordering::Relaxed)).contains(&rip)
}

/// True if `rip` lies in the first instructions of the ring-3 system-call entries, which still
/// run on the program's stack and use per-CPU scratch slots: an interrupt there is deferred.
pub fn in_entry_window(rip: u64) -> bool {
    (hrt_syscall_call_entry as *const () as u64..hrt_syscall_ring3_switched as *const () as u64).contains(&rip)
}

// The entry stub every interrupt and exception gate uses in ring-3 mode (see the module
// comment); one per vector, the same shape as `idt.rs`'s.
mod slow_stubs {
    super::super::idt::isr_stub_table!(isr_stubs_ring3, super::trap_ring3_relocate);
}

/// The stubs of the vectors that `fast_irq_vector` names: they enter `trap_ring3_relocate`
/// past the checks that tell an interrupt from the rest.
mod irq_stubs {
    super::super::idt::isr_stub_table!(irq_stubs_ring3, super::hrt_irq_fast_ring3);
}

extern "C" {
    fn hrt_irq_fast_ring3();
    /// The instruction after the halt gate's `hlt`: where an interrupt finds a halted CPU.
    fn hrt_halt_resume();
}

/// Whether `vector`'s gate may enter at `hrt_irq_fast_ring3`: with an x2APIC (the short
/// paths' acknowledgement is its EOI MSR), for an interrupt vector other than the spurious
/// one and the TLB shootdown's (which has a short path of its own before those checks).
fn fast_irq_vector(vector: u8) -> bool {
    vector >= 32
        && vector != super::apic::SPURIOUS_VECTOR
        && vector != super::tlb::TLB_VECTOR
        && super::apic::is_x2apic()
}

/// The entry stub of `vector` in ring-3 mode.
pub fn stub_address(vector: u8) -> u64 {
    if fast_irq_vector(vector) {
        irq_stubs::stub_address(vector)
    } else {
        slow_stubs::stub_address(vector)
    }
}

/// `trap_ring3_relocate`'s steps for an interrupt moved to ring 3 (its paths 28 and 33): set its
/// pending bit and the CPU's deferred flag, count it, acknowledge it (x2APIC EOI) and mask.
/// Clobbers rax, rcx (the vector before) and rdx.
macro_rules! note_deferred_ack_and_mask {
    () => {
        concat!(
            "lock bts qword ptr gs:[{pending}], rcx\n",
            "mov rax, gs:[{cpu_id}]\n",
            "lea rdx, [rip + {deferred}]\n",
            "mov byte ptr [rdx + rax], 1\n",
            "inc qword ptr gs:[{deferred_irqs}]\n",
            "mov ecx, {msr_eoi}\n",
            "xor eax, eax\n",
            "xor edx, edx\n",
            "wrmsr\n",
            "mov qword ptr gs:[{irq_off}], 1\n",
        )
    };
}

/// From ring 0 (the CPU stayed on the current stack, a kernel stack or the entry stack of a
/// `privileged` call): handle in place. From ring 3: move the frame off the entry stack, below
/// the interrupted stack pointer for kernel code, to the thread's kernel stack top for the
/// program, then join the common trap path (`hrt_trap_save`; GS is the kernel's in both rings).
///
/// First a short path for an interrupt that is only to be noted (what `traps::dispatch` does
/// for it, ~175 emulated instructions on PVM with the relocation, the register save and the
/// return; this takes ~35): one that stopped ring 0 (a halt) or ring-3 code with interrupts
/// masked, outside the trap return's window (which the full path rewinds), not an immediate
/// one, with an x2APIC: its pending bit is set, it is acknowledged, and the CPU returns.
/// Then one for an interrupt that stopped ring-3 code with interrupts on (~70 instructions
/// where the full path's relocation, save, dispatch and drop to ring 3 took ~245): its
/// handler runs in ring 3 in either case.
#[unsafe(naked)]
unsafe extern "C" fn trap_ring3_relocate() {
    naked_asm!(
        // [rsp] vector, +8 error, +16 rip, +24 cs, +32 rflags, +40 rsp, +48 ss
        // A TLB shootdown that flushes everything (always, on PVM): reload CR3, acknowledge
        // it and the interrupt, return (~25 emulated instructions; the general path took
        // ~245). Wherever it arrived: a reload has no other effect, and nothing is noted.
        "cmp qword ptr [rsp], {tlb_vector}",
        "jne 24f",
        "cmp byte ptr [rip + {x2apic}], 0",
        "je 24f",
        "cmp qword ptr [rip + {tlb_count}], -1",
        "jne 24f",
        "push rax",
        "push rcx",
        "push rdx",
        "mov rax, cr3",
        "mov cr3, rax",
        "lock dec qword ptr [rip + {tlb_pending}]",
        "jmp 25f",
        "24:",
        "cmp qword ptr [rsp], 32",
        "jb 20f",
        "cmp qword ptr [rsp], {spurious}",
        "je 20f",
        "cmp byte ptr [rip + {x2apic}], 0",
        "je 20f",
        // The entry of the vectors that can only be device or IPI interrupts with an x2APIC
        // (`irq_stubs`: not an exception, the spurious vector or the shootdown's), which the
        // checks above would let through: eight emulated instructions fewer per interrupt.
        ".global hrt_irq_fast_ring3",
        "hrt_irq_fast_ring3:",
        "test byte ptr [rsp + 24], 3",
        "jz 41f",
        "cmp qword ptr gs:[{irq_off}], 0",
        "je 26f",
        "21:",
        "push rax",
        "push rcx",
        "push rdx",
        // [rsp] rdx, +8 rcx, +16 rax, +24 vector, +32 error, +40 rip, +48 cs
        "mov rcx, [rsp + 24]",
        "bt qword ptr [rip + {immediate}], rcx",
        "jc 22f",
        "test byte ptr [rsp + 48], 3",
        "jz 23f",
        "mov rax, [rsp + 40]",
        "lea rdx, [rip + {ret_lo}]",
        "cmp rax, rdx",
        "jb 23f",
        "lea rdx, [rip + {ret_hi}]",
        "cmp rax, rdx",
        "jb 22f",
        "23:",
        "lock bts qword ptr gs:[{pending}], rcx",
        // Where it found the CPU, for a sampling handler (`traps::register_sampling`).
        "mov rax, [rsp + 40]",
        "mov gs:[{noted_rip}], rax",
        "inc qword ptr gs:[{noted_irqs}]",
        // Acknowledge and return (the TLB path too).
        "25:",
        "mov ecx, {msr_eoi}",
        "xor eax, eax",
        "xor edx, edx",
        "wrmsr",
        "pop rdx",
        "pop rcx",
        "pop rax",
        "add rsp, 16",
        "iretq",
        "22:",
        "pop rdx",
        "pop rcx",
        "pop rax",
        "jmp 20f",
        // Ring 0: in ring-3 mode only a halt (`halt_unless_pending`) takes interrupts there.
        // The halt gate gives up rax, rcx and rdx, so nothing is saved: note, acknowledge,
        // return (thirteen instructions where the path above takes twenty-three). Anywhere
        // else in ring 0, or for an immediate vector: the paths above.
        "41:",
        "cmp qword ptr [rsp + 16], offset {halt_resume}",
        "jne 21b",
        "mov rcx, [rsp]",
        "bt qword ptr [rip + {immediate}], rcx",
        "jc 20f",
        "lock bts qword ptr gs:[{pending}], rcx",
        "inc qword ptr gs:[{noted_irqs}]",
        "mov ecx, {msr_eoi}",
        "xor eax, eax",
        "xor edx, edx",
        "wrmsr",
        "add rsp, 16",
        "iretq",
        // Ring 3 with interrupts on: note the interrupt, acknowledge it, mask, and continue in
        // ring 3 at `hrt_irq_ring3` on the stack the full path would use, with the entry's
        // seven words copied there; the handler runs in ring 3 (`traps::preempt_in_ring3`),
        // as `traps::defer_to_ring3` arranges on the full path. Not for an immediate vector,
        // nor inside the trap return's window (rewound by the full path) or the system-call
        // entry's (noted there).
        "26:",
        "cmp byte ptr [rip + {in_ring3}], 0",
        "je 20f",
        "push rax",
        "push rcx",
        "push rdx",
        // [rsp] rdx, +8 rcx, +16 rax, +24 vector, +32 error, +40 rip, +48 cs, +56 rflags,
        // +64 rsp, +72 ss
        "mov rcx, [rsp + 24]",
        "bt qword ptr [rip + {immediate}], rcx",
        "jc 22b",
        "mov rax, [rsp + 40]",
        // Past the kernel's code (the program's, the common case): in neither window, which
        // are kernel code; two instructions instead of the twelve of both windows' checks.
        "cmp rax, [rip + {khi}]",
        "jae 33f",
        "lea rdx, [rip + {ret_lo}]",
        "cmp rax, rdx",
        "jb 27f",
        "lea rdx, [rip + {ret_hi}]",
        "cmp rax, rdx",
        "jb 22b",
        "27:",
        "lea rdx, [rip + {win_lo}]",
        "cmp rax, rdx",
        "jb 28f",
        "lea rdx, [rip + {win_hi}]",
        "cmp rax, rdx",
        "jb 22b",
        "28:",
        note_deferred_ack_and_mask!(),
        // The stack: kernel code's own, past its red zone; the program's thread's kernel stack.
        "mov rax, [rsp + 40]",
        "cmp rax, [rip + {klo}]",
        "jb 29f",
        "cmp rax, [rip + {khi}]",
        "jae 29f",
        "cmp rax, [rip + {ulo}]",
        "jb 30f",
        "cmp rax, [rip + {uhi}]",
        "jb 29f",
        "30:",
        // Kernel code on the program's stack: the thread's kernel stack, as above.
        "mov rdx, [rsp + 64]",
        "cmp rdx, [rip + {pool_lo}]",
        "jb 32f",
        "cmp rdx, [rip + {pool_hi}]",
        "jae 32f",
        "mov rax, gs:[{kernel_rsp}]",
        "test rax, rax",
        "jz 32f",
        "mov rdx, rax",
        "jmp 31f",
        "32:",
        "sub rdx, 128",
        "and rdx, -16",
        "jmp 31f",
        "29:",
        "mov rdx, gs:[{kernel_rsp}]",
        "test rdx, rdx",
        "jz 30b",
        "31:",
        "sub rdx, 56",
        "mov rax, [rsp + 24]",
        "mov [rdx], rax",
        "mov rax, [rsp + 32]",
        "mov [rdx + 8], rax",
        "mov rax, [rsp + 40]",
        "mov [rdx + 16], rax",
        "mov rax, [rsp + 48]",
        "mov [rdx + 24], rax",
        "mov rax, [rsp + 56]",
        "mov [rdx + 32], rax",
        "mov rax, [rsp + 64]",
        "mov [rdx + 40], rax",
        "mov rax, [rsp + 72]",
        "mov [rdx + 48], rax",
        "lea rax, [rip + {irq_ring3}]",
        "mov [rsp + 40], rax",
        "mov qword ptr [rsp + 56], 0x202",
        "mov [rsp + 64], rdx",
        "pop rdx",
        "pop rcx",
        "pop rax",
        "add rsp, 16",
        "iretq",
        // The program's own code (see the check above): noted, acknowledged and masked as at
        // 28, and continued on the thread's kernel stack (29) without the kernel-code checks.
        "33:",
        note_deferred_ack_and_mask!(),
        "jmp 29b",
        "20:",
        "test byte ptr [rsp + 24], 3",
        "jnz 50f",
        // Ring 0 runs only these entry paths in ring-3 mode, so a page fault there at the
        // page behind GS means that the program set the GS base (WRGSBASE) to memory that is
        // not mapped, and an entry's first per-CPU access faulted: report it as the ring-3
        // entries do (`hrt_program_gs_base`) instead of faulting again in the handler.
        "cmp qword ptr [rsp], 14",
        "jne hrt_trap_save",
        "push rax",
        "push rcx",
        "push rdx",
        "mov ecx, {msr_gs_base}",
        "rdmsr",
        "shl rdx, 32",
        "or rdx, rax",
        "mov rax, cr2",
        "sub rax, rdx",
        "cmp rax, 4096",
        "pop rdx",
        "pop rcx",
        "pop rax",
        "jb hrt_program_gs_base_ring0",
        "jmp hrt_trap_save",
        "50:",
        "push rax",
        "push rbx",
        // [rsp] rbx, +8 rax, +16 vector, +24 error, +32 rip, +40 cs, +48 rflags, +56 rsp, +64 ss
        "mov rax, [rsp + 32]",
        // An interrupt inside the ring-3 trap return's window (`idt.rs`): rewind to the frame
        // being returned through, and take the interrupt as if it arrived at its destination
        // (registers from the frame, interrupts on there), in place: no new stack.
        "cmp qword ptr [rsp + 16], 32",
        "jb 8f",
        "lea rbx, [rip + {ret_lo}]",
        "cmp rax, rbx",
        "jb 8f",
        "lea rbx, [rip + {ret_hi}]",
        "cmp rax, rbx",
        "jae 8f",
        "mov rbx, [rsp + 56]",
        "lea rcx, [rip + {ret_iret}]",
        "cmp rax, rcx",
        "jne 9f",
        "sub rbx, 136",
        "9:",
        "mov rax, [rsp + 16]",
        "mov [rbx + 120], rax",
        "mov rax, [rsp + 24]",
        "mov [rbx + 128], rax",
        // The selectors as this entry sees ring 3 (the return path wrote ring 3's own view).
        "mov rax, [rsp + 40]",
        "mov [rbx + 144], rax",
        "mov rax, [rsp + 64]",
        "mov [rbx + 168], rax",
        "mov qword ptr gs:[{irq_off}], 0",
        "lea rsp, [rbx + 120]",
        "mov r15, [rbx]",
        "mov r14, [rbx + 8]",
        "mov r13, [rbx + 16]",
        "mov r12, [rbx + 24]",
        "mov r11, [rbx + 32]",
        "mov r10, [rbx + 40]",
        "mov r9, [rbx + 48]",
        "mov r8, [rbx + 56]",
        "mov rbp, [rbx + 64]",
        "mov rdi, [rbx + 72]",
        "mov rsi, [rbx + 80]",
        "mov rdx, [rbx + 88]",
        "mov rcx, [rbx + 96]",
        "mov rax, [rbx + 112]",
        "mov rbx, [rbx + 104]",
        "jmp hrt_trap_save",
        "8:",
        "cmp rax, [rip + {klo}]",
        "jb 1f",
        "cmp rax, [rip + {khi}]",
        "jae 1f",
        "lea rbx, [rip + {win_lo}]",
        "cmp rax, rbx",
        "jb 3f",
        "lea rbx, [rip + {win_hi}]",
        "cmp rax, rbx",
        "jb 1f",
        "3:",
        "cmp rax, [rip + {ulo}]",
        "jb 4f",
        "cmp rax, [rip + {uhi}]",
        "jb 1f",
        "4:",
        // Kernel code: below its stack pointer, past a red zone; but kernel code on the
        // program's stack (the fast call path) takes the thread's kernel stack, unused
        // meanwhile: another thread may have made the program's stack read-only under it, and
        // this write faulted in ring 0, a kernel panic (altstack_read_only_race, 1 CI run in 4).
        "mov rbx, [rsp + 56]",
        "cmp rbx, [rip + {pool_lo}]",
        "jb 5f",
        "cmp rbx, [rip + {pool_hi}]",
        "jae 5f",
        "mov rax, gs:[{kernel_rsp}]",
        "test rax, rax",
        "jz 5f",
        "mov rbx, rax",
        "jmp 2f",
        "5:",
        "sub rbx, 128",
        "and rbx, -16",
        "jmp 2f",
        "1:",
        // Program code (or the entry window): the thread's kernel stack, unused meanwhile;
        // a kernel thread has none (a jump out of the kernel's code, a bug): as kernel code.
        "mov rbx, gs:[{kernel_rsp}]",
        "test rbx, rbx",
        "jz 4b",
        "2:",
        "sub rbx, 72",
        super::idt::copy_entry_frame_asm!(),
        "mov rsp, rbx",
        "pop rbx",
        "pop rax",
        "jmp hrt_trap_save",
        msr_gs_base = const super::instr::MSR_GS_BASE,
        klo = sym KTEXT_LO,
        khi = sym KTEXT_HI,
        ulo = sym UTEXT_LO,
        uhi = sym UTEXT_HI,
        win_lo = sym hrt_syscall_call_entry,
        win_hi = sym hrt_syscall_ring3_switched,
        kernel_rsp = const OFF_KERNEL_RSP,
        pool_lo = sym super::ring0::POOL_LO,
        pool_hi = sym super::ring0::POOL_HI,
        ret_lo = sym hrt_ring3_return_window,
        ret_iret = sym hrt_ring3_return_iret,
        ret_hi = sym hrt_ring3_return_end,
        irq_off = const OFF_IRQ_OFF,
        spurious = const super::apic::SPURIOUS_VECTOR as u64,
        x2apic = sym super::apic::X2APIC,
        immediate = sym super::traps::IMMEDIATE,
        pending = const super::percpu::OFF_IRQ_PENDING,
        cpu_id = const super::percpu::OFF_CPU_ID,
        noted_rip = const super::percpu::OFF_NOTED_RIP,
        noted_irqs = const super::percpu::OFF_NOTED_IRQS,
        halt_resume = sym hrt_halt_resume,
        deferred_irqs = const super::percpu::OFF_DEFERRED_IRQS,
        msr_eoi = const 0x80b,
        in_ring3 = sym super::traps::HANDLE_IN_RING3,
        deferred = sym super::traps::DEFERRED,
        irq_ring3 = sym hrt_irq_ring3,
        tlb_vector = const super::tlb::TLB_VECTOR as u64,
        tlb_count = sym super::tlb::COUNT,
        tlb_pending = sym super::tlb::PENDING,
    );
}

/// Where the ring-3 entry's deferral path continues (in ring 3, interrupts masked): the stack
/// holds the entry's seven words and the registers are the interrupted code's; the rest of a
/// `TrapFrame` is pushed as `hrt_trap_save` pushes it, and `hrt_preempt_ring3` runs the noted
/// handler and returns through the frame.
#[unsafe(naked)]
unsafe extern "C" fn hrt_irq_ring3() {
    naked_asm!(super::idt::push_trap_registers_asm!(), "cld", "jmp hrt_preempt_ring3",);
}

/// The breakpoint gate in ring-3 mode. An `int3` at `hrt_ring0_gate` is a `privileged` call:
/// run the function in rdi with the arguments in rsi, rdx, rcx on the entry stack, in ring 0,
/// and return its rax to ring 3 (about 17 emulated instructions: no trap frame, no dispatch).
/// An `int3` at `hrt_reload_gate` drops pages from the TLB (`invalidate_pages`: the one in
/// rdx, seven instructions, the common single page of a munmap or mprotect, where a loop over
/// an array took ten; then rsi more from the array at rdi, five instructions each) or, with
/// rsi = -1, reloads CR3 (`reload_cr3`: seven instructions, rax clobbered); one at
/// `hrt_deadline_gate` only writes edx:eax to the TSC-deadline MSR (`set_tsc_deadline`: nine
/// instructions where `privileged` took about 23).
/// Any other breakpoint takes the ordinary path (SIGTRAP for the program).
///
/// # Safety
/// Only the CPU calls it, through the IDT.
#[unsafe(naked)]
pub unsafe extern "C" fn breakpoint_entry() {
    naked_asm!(
        // [rsp] rip, +8 cs, +16 rflags, +24 rsp, +32 ss
        // The kernel is linked low and position-dependent: the addresses fit an immediate.
        // `invalidate_pages`: INVLPG the page at rdx, then each of the rsi addresses at rdi
        // (one page, the common case, is seven instructions); rsi < 0: `reload_cr3` (seven
        // too). INVLPG leaves the flags of the test alone.
        "cmp qword ptr [rsp], offset {reload_ret}",
        "jne 2f",
        "test rsi, rsi",
        "js 5f",
        "invlpg [rdx]",
        "jnz 6f",
        "iretq",
        "6:",
        "mov rax, [rdi]",
        "invlpg [rax]",
        "add rdi, 8",
        "dec rsi",
        "jnz 6b",
        "iretq",
        "5:",
        "mov rax, cr3",
        "mov cr3, rax",
        "iretq",
        "2:",
        "cmp qword ptr [rsp], offset {deadline_ret}",
        "jne 3f",
        "mov ecx, {msr_deadline}",
        "wrmsr",
        "iretq",
        "3:",
        // `send_x2apic_icr`: edx:eax to the x2APIC's ICR.
        "cmp qword ptr [rsp], offset {ipi_ret}",
        "jne 7f",
        "mov ecx, {msr_icr}",
        "wrmsr",
        "iretq",
        "7:",
        // `halt_unless_pending`: halt unless an interrupt is noted already; `sti; hlt` lets
        // none slip in between. The interrupt that ends the halt is noted by the ring-0 short
        // path of `trap_ring3_relocate`, which returns here.
        "cmp qword ptr [rsp], offset {halt_ret}",
        "jne 8f",
        "mov rax, gs:[{pending}]",
        "or rax, gs:[{pending} + 8]",
        "or rax, gs:[{pending} + 16]",
        "or rax, gs:[{pending} + 24]",
        "jnz 9f",
        "sti",
        "hlt",
        ".global hrt_halt_resume",
        "hrt_halt_resume:",
        "cli",
        "9:",
        "iretq",
        "8:",
        "cmp qword ptr [rsp], offset {gate_ret}",
        "jne 1f",
        "mov rax, rdi",
        "mov rdi, rsi",
        "mov rsi, rdx",
        "mov rdx, rcx",
        "sub rsp, 8",
        "call rax",
        "add rsp, 8",
        "iretq",
        "1:",
        "push 0",
        "push 3",
        "jmp {relocate}",
        gate_ret = sym hrt_ring0_gate_ret,
        reload_ret = sym hrt_reload_gate_ret,
        deadline_ret = sym hrt_deadline_gate_ret,
        ipi_ret = sym hrt_ipi_gate_ret,
        halt_ret = sym hrt_halt_gate_ret,
        pending = const super::percpu::OFF_IRQ_PENDING,
        msr_icr = const super::apic::X2APIC_ICR_MSR,
        msr_deadline = const super::instr::MSR_TSC_DEADLINE,
        relocate = sym trap_ring3_relocate,
    );
}

core::arch::global_asm!(
    ".section .text",
    ".global hrt_ring0_gate",
    "hrt_ring0_gate:",
    "    int3",
    ".global hrt_ring0_gate_ret",
    "hrt_ring0_gate_ret:",
    "    ret",
    ".global hrt_reload_gate",
    "hrt_reload_gate:",
    "    int3",
    ".global hrt_reload_gate_ret",
    "hrt_reload_gate_ret:",
    "    ret",
    ".global hrt_deadline_gate",
    "hrt_deadline_gate:",
    "    int3",
    ".global hrt_deadline_gate_ret",
    "hrt_deadline_gate_ret:",
    "    ret",
    ".global hrt_ipi_gate",
    "hrt_ipi_gate:",
    "    int3",
    ".global hrt_ipi_gate_ret",
    "hrt_ipi_gate_ret:",
    "    ret",
    ".global hrt_halt_gate",
    "hrt_halt_gate:",
    "    int3",
    ".global hrt_halt_gate_ret",
    "hrt_halt_gate_ret:",
    "    ret",
);

extern "C" {
    fn hrt_ring0_gate();
    fn hrt_reload_gate();
    fn hrt_reload_gate_ret();
    fn hrt_deadline_gate();
    fn hrt_deadline_gate_ret();
    fn hrt_ipi_gate();
    fn hrt_ipi_gate_ret();
    fn hrt_halt_gate();
    fn hrt_halt_gate_ret();
}

/// Writes `value` to the x2APIC's interrupt command register (an IPI) from ring 3, through the
/// breakpoint gate's `hrt_ipi_gate` path: five instructions in ring 0 where `privileged` and
/// `apic::send_icr_ring0` took about thirty (each 1.4-3.5 K cycles on PVM), on every wake-up
/// of a halted CPU. Only with an x2APIC (`apic::send_icr` decides).
pub fn send_x2apic_icr(value: u64) {
    let t0 = super::instr::rdtsc();
    // SAFETY: the gate's `int3` enters `breakpoint_entry`, which writes edx:eax to the ICR MSR
    // (clobbering ecx) and returns here.
    unsafe {
        core::arch::asm!("call {gate}", gate = sym hrt_ipi_gate, in("eax") value as u32,
                         in("edx") (value >> 32) as u32, out("ecx") _)
    };
    count_ring0(t0);
}

/// Halts this CPU in ring 0 unless an interrupt is noted in its pending bits already, through
/// the breakpoint gate's `hrt_halt_gate` path (about seventeen instructions where `privileged`
/// with `irq::halt_ring0` took about forty). Called with interrupts masked (the software flag);
/// the interrupt that ends the halt is only noted, and the caller's unmask handles it.
pub fn halt_unless_pending() {
    let t0 = super::instr::rdtsc();
    // SAFETY: the gate's `int3` enters `breakpoint_entry`, which reads this CPU's pending bits
    // (clobbering rax), halts if none is set, and returns here; the interrupt that ends the
    // halt is noted by `trap_ring3_relocate`'s halt path, which clobbers rax, rcx and rdx.
    unsafe { core::arch::asm!("call {gate}", gate = sym hrt_halt_gate, out("rax") _, out("rcx") _, out("rdx") _) };
    count_ring0(t0);
}

/// Counts a ring-0 visit that began at TSC `t0` as `privileged` does (`-v`'s "ring0 calls").
fn count_ring0(t0: u64) {
    crate::arch::counters::add(crate::arch::counters::Stat::Ring0Calls, 1);
    crate::arch::counters::add(crate::arch::counters::Stat::Ring0Ticks, super::instr::rdtsc() - t0);
}

/// Arms this CPU's TSC-deadline timer (the CPU has one) at `deadline` (0 disarms): from ring 3
/// through the breakpoint gate's `hrt_deadline_gate` path.
pub fn set_tsc_deadline(deadline: u64) {
    if in_ring0() {
        // SAFETY: the TSC-deadline MSR only arms this CPU's timer.
        unsafe { super::instr::wrmsr(super::instr::MSR_TSC_DEADLINE, deadline) };
        return;
    }
    // SAFETY: the gate's `int3` enters `breakpoint_entry`, which writes edx:eax to the
    // TSC-deadline MSR (clobbering ecx) and returns here.
    unsafe {
        core::arch::asm!("call {gate}", gate = sym hrt_deadline_gate, in("eax") deadline as u32,
                         in("edx") (deadline >> 32) as u32, out("ecx") _)
    };
}

/// Drops every TLB entry of this CPU (CR3 reloaded with its own value). From ring 3 through
/// the breakpoint gate's shortest path, `int3` at `hrt_reload_gate`: five instructions in
/// ring 0 against about seventeen for `privileged`, and on PVM each costs 1.4-3.5 K cycles
/// (measured: ~23 K cycles for this flush, ~62 K for the same reload through `privileged`).
/// Two other ways were slower or failed: a vector of its own (`int n`) gets #UD from PVM, and
/// ICEBP (#DB) cost ~50 K, PVM emulating the instruction. Anyone may take this path, the
/// program too: it only drops TLB entries and clobbers rax.
pub fn reload_cr3() {
    if in_ring0() {
        // SAFETY: reloading the current tables only drops TLB entries.
        unsafe { super::instr::write_cr3(super::instr::read_cr3()) };
        return;
    }
    // SAFETY: the gate's `int3` enters `breakpoint_entry`, which reloads CR3 (through rax)
    // when rsi is negative and returns here; nothing else changes.
    unsafe { core::arch::asm!("call {gate}", gate = sym hrt_reload_gate, in("rsi") u64::MAX, out("rax") _) };
}

/// Drops the TLB entries of the pages at `pages` on this CPU: INVLPG each, from ring 3
/// through the reload gate (a count in rsi). On PVM this keeps the hypervisor's view of the
/// page tables as it is, where a CR3 reload makes it write-protect every table again: the
/// next store into a table then costs a fault (~52 K cycles), after an INVLPG a plain store.
pub fn invalidate_pages(pages: &[u64]) {
    if pages.is_empty() {
        return;
    }
    if in_ring0() {
        for &addr in pages {
            // SAFETY: INVLPG only drops a TLB entry.
            unsafe { core::arch::asm!("invlpg [{}]", in(reg) addr, options(nostack)) };
        }
        return;
    }
    let (first, rest) = (pages[0], &pages[1..]);
    // SAFETY: the gate's `int3` enters `breakpoint_entry`, which runs INVLPG on rdx and on
    // each of the rsi addresses at rdi (clobbering rax, rdi, rsi) and returns here.
    unsafe {
        core::arch::asm!("call {gate}", gate = sym hrt_reload_gate, in("rdx") first,
                         inout("rdi") rest.as_ptr() => _, inout("rsi") rest.len() as u64 => _, out("rax") _)
    };
}

/// A function that `privileged` runs in ring 0.
pub type Ring0Fn = extern "C" fn(u64, u64, u64) -> u64;

/// Runs `f(a, b, c)` in ring 0: directly when already there, through the breakpoint gate from
/// ring 3 (about 13-20 K cycles on PVM). `f` runs with interrupts off on the entry stack, so it
/// must be short and must not block or switch threads.
#[inline]
pub fn privileged(f: Ring0Fn, a: u64, b: u64, c: u64) -> u64 {
    if in_ring0() {
        return f(a, b, c);
    }
    let ret: u64;
    let t0 = super::instr::rdtsc();
    // SAFETY: the gate's `int3` enters `breakpoint_entry`, which calls `f` with (a, b, c)
    // following the C ABI and returns here; the C clobbers cover what `f` may change.
    unsafe {
        core::arch::asm!("call {gate}", gate = sym hrt_ring0_gate, in("rdi") f, in("rsi") a, in("rdx") b,
                         in("rcx") c, lateout("rax") ret, clobber_abi("C"));
    }
    count_ring0(t0);
    ret
}

/// Where the program's SYSCALL lands in ring-3 mode (still in ring 3 on PVM: rcx = return
/// address, r11 = flags). Interrupts are deferred (software flag) from the first instruction;
/// until the stack switch the entry window defers them too. Then it builds the same frame as
/// every other entry and joins the common path, which dispatches and returns with IRETQ.
///
/// # Safety
/// Only the CPU calls it, through LSTAR.
#[unsafe(naked)]
pub unsafe extern "C" fn syscall_entry() {
    // gs:[32] is `OFF_IRQ_OFF`, gs:[0] the CPU's own record, gs:[16] and gs:[24] the kernel and
    // user stack slots, gs:[120] `OFF_ENTRY_FLAGS` (asserted below): a template takes no named
    // operand here.
    // A rewritten site (`syscall_rewrite`) arrives first, by `call *%rax` through the page at
    // address 0: it pops the return address and takes the flags, so that the state is
    // SYSCALL's (rcx = return address, r11 = flags, rsp = the program's), and marks the entry
    // with 2 in the interrupt flag (`entered_by_call`). The flags go through the CPU's own
    // scratch word, never the program's stack: an interrupt on the way here (the page at 0 is
    // program code) may have let another thread make that stack read-only after the call
    // pushed to it, and a fault here is the kernel's (a panic in CI: altstack_read_only_race).
    // Nor the kernel stack's top, where an immediate interrupt inside this window puts its
    // frame. `lea` leaves the flags as they are.
    super::syscall::syscall_entry_asm!(
        ".global hrt_syscall_call_entry",
        "hrt_syscall_call_entry:",
        // gs:[128] is `OFF_MAGIC`, 0x48525447 `MAGIC` (asserted below).
        "cmp qword ptr gs:[128], 0x48525447",
        "jne hrt_program_gs_base",
        "mov qword ptr gs:[32], 2",
        "pop rcx",
        "mov gs:[24], rsp",
        "mov rsp, gs:[0]",
        "lea rsp, [rsp + 128]",
        "pushfq",
        "pop r11",
        "mov rsp, gs:[16]",
        "jmp hrt_syscall_ring3_switched",
        ".global hrt_syscall_ring3",
        "hrt_syscall_ring3:",
        "cmp qword ptr gs:[128], 0x48525447",
        "jne hrt_program_gs_base",
        "mov qword ptr gs:[32], 1",
        "2:",
        switched: [
            ".global hrt_syscall_ring3_switched",
            "hrt_syscall_ring3_switched:",
            "or r11, 0x200",
        ]
        ss = USER_SS,
        cs = USER_CS
    );
}

const _: () = assert!(super::percpu::OFF_MAGIC == 128 && super::percpu::MAGIC == 0x4852_5447);

/// The request a kernel entry makes when the GS base is not the kernel's (`nr::PROGRAM_GS_BASE`):
/// a static block, as the CPU's own is found through GS.
static PROGRAM_GS_BASE_CALL: [AtomicU64; 9] = [const { AtomicU64::new(0) }; 9];

// A kernel entry from the program found no `PerCpu::magic` behind GS: the program set the GS
// base (WRGSBASE, which PVM lets ring 3 run), where the kernel in the program's ring keeps its
// per-CPU data. Nothing here uses GS: the base goes to the monitor, which ends the run as a
// program killed by SIGILL. Before this check such an entry went on with the program's memory
// for per-CPU data, and ended in a triple fault or, in some kernel builds, a fault loop.
core::arch::global_asm!(
    // From ring 0 (a page fault at the base, `trap_ring3_relocate`): the MSR, since
    // RDGSBASE there depends on the guest's CR4, which ring 3 does not.
    ".global hrt_program_gs_base_ring0",
    "hrt_program_gs_base_ring0:",
    "mov ecx, {msr_gs_base}",
    "rdmsr",
    "shl rdx, 32",
    "or rax, rdx",
    "jmp 3f",
    ".global hrt_program_gs_base",
    "hrt_program_gs_base:",
    "rdgsbase rax",
    "3:",
    "mov [rip + {block} + 8], rax",
    "mov qword ptr [rip + {block}], {nr}",
    "lea rax, [rip + {block}]",
    "mov dx, {port}",
    "2:",
    "out dx, eax",
    "jmp 2b",
    block = sym PROGRAM_GS_BASE_CALL,
    nr = const hrt_abi::nr::PROGRAM_GS_BASE,
    port = const hrt_abi::HYPERCALL_PORT,
    msr_gs_base = const super::instr::MSR_GS_BASE,
);

/// The registers `fast_call_entry` saved, in its push order (lowest address first), and the
/// return address the site's `call *%rax` pushed.
#[repr(C)]
pub struct FastCallRegs {
    pub r9: u64,
    pub r8: u64,
    pub r10: u64,
    pub rdx: u64,
    pub rsi: u64,
    pub rdi: u64,
    pub nr: u64,
    pub return_address: u64,
}

/// The upper layer's fast system-call handler (`set_fast_call_handler`), 0 while there is none.
static FAST_CALL_HANDLER: AtomicU64 = AtomicU64::new(0);

/// Installs the function rewritten sites try first: it gets the saved registers (see
/// `fast_call_entry`) and returns the call's result, or `i64::MIN` to take the full path.
pub fn set_fast_call_handler(handler: extern "C" fn(&FastCallRegs) -> i64) {
    FAST_CALL_HANDLER.store(handler as usize as u64, Ordering::Release);
}

/// Where rewritten sites enter (the sled's final jump): the fast handler, if any, is called
/// with the syscall registers saved on the thread's kernel stack (unused meanwhile) and the
/// stack aligned for the C ABI; its result returns straight to the site with `ret` on the
/// program's stack. Registers are as SYSCALL leaves them (only rax, rcx, r11 change).
/// `i64::MIN` from it, or no handler, continues at the full entry with the registers
/// untouched. Kernel code: an interrupt here is taken at once, on the kernel stack below this
/// code's. Nothing here writes the program's stack: another thread may make it read-only
/// meanwhile (a signal handler's rt_sigreturn on an alternate stack that another thread keeps
/// protecting: the handler's own pushes there faulted in kernel code, a kernel panic).
///
/// # Safety
/// Only the call gate jumps here.
#[unsafe(naked)]
pub unsafe extern "C" fn fast_call_entry() {
    naked_asm!(
        "cmp qword ptr gs:[{magic_at}], {magic}",
        "jne hrt_program_gs_base",
        "cmp qword ptr [rip + {handler}], 0",
        "je hrt_syscall_call_entry",
        "mov r11, gs:[{kernel_rsp}]",
        "test r11, r11",
        "jz hrt_syscall_call_entry",
        "mov rcx, rsp",
        "mov rsp, r11",
        // The program's stack pointer, then `FastCallRegs` from its last word (the return
        // address the site's call pushed, read from the program's stack).
        "push rcx",
        "push qword ptr [rcx]",
        "push rax",
        "push rdi",
        "push rsi",
        "push rdx",
        "push r10",
        "push r8",
        "push r9",
        "mov rdi, rsp",
        "mov rcx, rsp",
        "and rsp, -16",
        "push rcx",
        "push rcx",
        "call qword ptr [rip + {handler}]",
        "pop rcx",
        "pop rsp",
        "pop r9",
        "pop r8",
        "pop r10",
        "pop rdx",
        "pop rsi",
        "pop rdi",
        "mov rcx, {not_fast}",
        "cmp rax, rcx",
        "je 1f",
        // The saved rax and return address, then back to the program's stack.
        "add rsp, 16",
        "pop rsp",
        "ret",
        "1:",
        "pop rax",
        "add rsp, 8",
        "pop rsp",
        "jmp hrt_syscall_call_entry",
        handler = sym FAST_CALL_HANDLER,
        not_fast = const i64::MIN,
        kernel_rsp = const OFF_KERNEL_RSP,
        magic_at = const super::percpu::OFF_MAGIC,
        magic = const super::percpu::MAGIC,
    );
}

/// True if the system call being dispatched on this CPU came through a rewritten site (the
/// call entry) rather than a SYSCALL instruction. Valid until the dispatcher enables interrupts.
pub fn entered_by_call() -> bool {
    super::cpu::this().irq_off.load(Ordering::Relaxed) == 2
}

/// Where SYSCALL lands in ring-3 mode (LSTAR): `hrt_syscall_ring3`, inside `syscall_entry`.
pub fn syscall_entry_address() -> u64 {
    debug_assert_eq!(syscall_entry as *const () as u64, hrt_syscall_call_entry as *const () as u64);
    hrt_syscall_ring3 as *const () as u64
}

/// Where rewritten sites enter (the jump at the end of the page-0 sled leads here): the fast
/// path, which falls through to the start of `syscall_entry`.
pub fn call_entry_address() -> u64 {
    // `syscall_entry` is reached only by name from assembly: naming it here keeps it (and the
    // labels inside it) in the image.
    core::hint::black_box(syscall_entry as *const ());
    fast_call_entry as *const () as u64
}

const _: () = assert!(OFF_IRQ_OFF == 32);
const _: () = assert!(super::syscall::OFF_KERNEL_RSP == 16 && super::syscall::OFF_USER_RSP == 24);
const _: () = assert!(super::percpu::OFF_SELF == 0 && super::percpu::OFF_ENTRY_FLAGS + 8 == 128);

/// Drops this CPU from ring 0 to ring 3, continuing on the same stack (whose pages, like all
/// kernel memory in this mode, are user-accessible).
///
/// # Safety
/// Ring 0, with everything ring 3 needs in place (`init_cpu`, user-accessible kernel memory,
/// the ring-3 gates and SYSCALL entry).
#[unsafe(naked)]
pub unsafe extern "C" fn enter() {
    naked_asm!(drop_to_ring3_asm!(), "1:", "ret", ss = const USER_SS as u64, cs = const USER_CS as u64);
}

/// Assembly that leaves ring 0 for ring 3 on the current stack, continuing at the label `1:`
/// that must follow it, with interrupts enabled; needs operands `ss` and `cs` (the guest's
/// user selectors, for the emulated IRETQ) and clobbers rax.
macro_rules! drop_to_ring3_asm {
    () => {
        concat!(
            "mov rax, rsp\n",
            "push {ss}\n",
            "push rax\n",
            "push 0x202\n",
            "push {cs}\n",
            "lea rax, [rip + 1f]\n",
            "push rax\n",
            "iretq\n",
        )
    };
}
pub(super) use drop_to_ring3_asm;
