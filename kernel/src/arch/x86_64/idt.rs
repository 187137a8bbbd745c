//! The interrupt descriptor table, shared by all CPUs, and the 256 entry stubs.
//!
//! Each stub is 16 bytes at `isr_stubs + 16 * vector`: it pushes a zero error code where the
//! CPU pushes none, pushes the vector, and jumps to `trap_common`, which saves every
//! general-purpose register into a `TrapFrame` and calls `traps::dispatch`. Gates are filled
//! lazily (exceptions at boot, interrupt vectors when a handler is registered): on emulated
//! ring 0 every boot instruction costs about a microsecond.

use core::arch::asm;
use core::cell::UnsafeCell;

use super::gdt::{IST_DOUBLE_FAULT, IST_MACHINE_CHECK, IST_NMI, IST_PROGRAM, KERNEL_CS};

/// Emits a table of 256 entry stubs named `$name`, 16 bytes each, that jump to `$target`
/// with the error code (0 where the CPU pushes none) and the vector pushed, and the function
/// `stub_address(vector)` that finds them.
macro_rules! isr_stub_table {
    ($name:ident, $target:path) => {
        core::arch::global_asm!(
            ".section .text",
            ".balign 16",
            concat!(".global ", stringify!($name)),
            concat!(stringify!($name), ":"),
            ".set vec, 0",
            ".rept 256",
            "    .balign 16",
            // Vectors 8, 10-14, 17, 21, 29, 30 come with an error code from the CPU.
            "    .if (vec == 8) || ((vec >= 10) && (vec <= 14)) || (vec == 17) || (vec == 21) || (vec == 29) || (vec == 30)",
            "    .else",
            "    .byte 0x6a, 0x00", // push 0
            "    .endif",
            "    .byte 0x68", // push imm32
            "    .long vec",
            "    jmp {target}",
            "    .set vec, vec + 1",
            ".endr",
            target = sym $target,
        );

        extern "C" {
            static $name: u8;
        }

        /// The entry stub for `vector` in this table.
        pub fn stub_address(vector: u8) -> u64 {
            core::ptr::addr_of!($name) as u64 + 16 * vector as u64
        }
    };
}
pub(super) use isr_stub_table;

/// Assembly that pushes the general registers in `TrapFrame` order (r15 ends at `[rsp]`),
/// above which the entry's seven words already lie.
macro_rules! push_trap_registers_asm {
    () => {
        concat!(
            "push rax\n",
            "push rbx\n",
            "push rcx\n",
            "push rdx\n",
            "push rsi\n",
            "push rdi\n",
            "push rbp\n",
            "push r8\n",
            "push r9\n",
            "push r10\n",
            "push r11\n",
            "push r12\n",
            "push r13\n",
            "push r14\n",
            "push r15\n",
        )
    };
}
pub(super) use push_trap_registers_asm;

/// Assembly that copies the nine words at `[rsp]` (rbx, rax, vector, error code and the CPU's
/// five-word frame, as the relocating entry stubs push them) to `[rbx]`, through rax.
macro_rules! copy_entry_frame_asm {
    () => {
        concat!(
            "mov rax, [rsp]\n",
            "mov [rbx], rax\n",
            "mov rax, [rsp + 8]\n",
            "mov [rbx + 8], rax\n",
            "mov rax, [rsp + 16]\n",
            "mov [rbx + 16], rax\n",
            "mov rax, [rsp + 24]\n",
            "mov [rbx + 24], rax\n",
            "mov rax, [rsp + 32]\n",
            "mov [rbx + 32], rax\n",
            "mov rax, [rsp + 40]\n",
            "mov [rbx + 40], rax\n",
            "mov rax, [rsp + 48]\n",
            "mov [rbx + 48], rax\n",
            "mov rax, [rsp + 56]\n",
            "mov [rbx + 56], rax\n",
            "mov rax, [rsp + 64]\n",
            "mov [rbx + 64], rax\n",
        )
    };
}
pub(super) use copy_entry_frame_asm;

isr_stub_table!(isr_stubs, trap_common);

/// Saves registers into a `TrapFrame`, swaps GS when the trap came from ring 3, dispatches.
/// Two inner labels are shared with the ring-3 paths (`syscall.rs`): `hrt_trap_save` (the
/// frame's top seven words are pushed and GS is the kernel's) and `hrt_trap_return` (rsp
/// points at a complete `TrapFrame`).
#[unsafe(naked)]
unsafe extern "C" fn trap_common() {
    core::arch::naked_asm!(
        // [rsp] = vector, [rsp+8] = error, [rsp+16] = rip, [rsp+24] = cs
        "test byte ptr [rsp + 24], 3",
        "jz 2f",
        "swapgs",
        "2:",
        ".global hrt_trap_save",
        "hrt_trap_save:",
        push_trap_registers_asm!(),
        "mov rdi, rsp",
        "cld",
        "call {dispatch}",
        // Non-zero: preempt in ring 3 first (ring-3 mode): leave ring 0 for
        // `hrt_preempt_ring3` on this stack, which returns through the same frame.
        "test rax, rax",
        "jz hrt_trap_return",
        super::ring3::drop_to_ring3_asm!(),
        "1:",
        "jmp hrt_preempt_ring3",
        ".global hrt_trap_return",
        "hrt_trap_return:",
        "mov ax, cs",
        "test al, 3",
        "jz 4f",
        // Running in ring 3 (ring-3 mode, `ring3`): return within the ring, with the
        // selectors the hardware gives ring 3 (a PVM host's, not the guest GDT's).
        "movzx eax, ax",
        "mov [rsp + 144], rax",
        "mov ax, ss",
        "movzx eax, ax",
        "mov [rsp + 168], rax",
        // Interrupts stay masked until the rewindable window below: one that arrived earlier
        // was noted and runs first (`drain`); one that arrives inside the window is taken as
        // if it had arrived at the destination (`ring3::trap_ring3_relocate` rewinds to this
        // frame), so that a stream of interrupts cannot stack frames without bound.
        "mov qword ptr gs:[{irq_off}], 1",
        "jmp hrt_ring3_return_window",
        "5:",
        "mov rbx, rsp",
        "mov rdi, rsp",
        "and rsp, -16",
        "call {drain}",
        "mov rsp, rbx",
        // From here to the IRETQ, rsp is the frame (only the final `lea` moves it).
        ".global hrt_ring3_return_window",
        "hrt_ring3_return_window:",
        "mov rax, gs:[{pending}]",
        "or rax, gs:[{pending} + 8]",
        "or rax, gs:[{pending} + 16]",
        "or rax, gs:[{pending} + 24]",
        "jnz 5b",
        "mov qword ptr gs:[{irq_off}], 0",
        "mov r15, [rsp]",
        "mov r14, [rsp + 8]",
        "mov r13, [rsp + 16]",
        "mov r12, [rsp + 24]",
        "mov r11, [rsp + 32]",
        "mov r10, [rsp + 40]",
        "mov r9, [rsp + 48]",
        "mov r8, [rsp + 56]",
        "mov rbp, [rsp + 64]",
        "mov rdi, [rsp + 72]",
        "mov rsi, [rsp + 80]",
        "mov rdx, [rsp + 88]",
        "mov rcx, [rsp + 96]",
        "mov rbx, [rsp + 104]",
        "mov rax, [rsp + 112]",
        "lea rsp, [rsp + 136]",
        ".global hrt_ring3_return_iret",
        "hrt_ring3_return_iret:",
        "iretq",
        ".global hrt_ring3_return_end",
        "hrt_ring3_return_end:",
        "4:",
        // Handlers may have enabled interrupts; none may arrive between swapgs and iretq.
        "cli",
        "pop r15",
        "pop r14",
        "pop r13",
        "pop r12",
        "pop r11",
        "pop r10",
        "pop r9",
        "pop r8",
        "pop rbp",
        "pop rdi",
        "pop rsi",
        "pop rdx",
        "pop rcx",
        "pop rbx",
        // Ring 3 never swaps GS (SWAPGS is privileged; in ring-3 mode both bases are equal).
        "mov ax, cs",
        "test al, 3",
        "pop rax",
        "jnz 3f",
        "test byte ptr [rsp + 24], 3",
        "jz 3f",
        "swapgs",
        "3:",
        "add rsp, 16",
        "iretq",
        dispatch = sym super::traps::dispatch,
        drain = sym super::traps::drain_noted_masked,
        irq_off = const super::percpu::OFF_IRQ_OFF,
        pending = const super::percpu::OFF_IRQ_PENDING,
        ss = const super::gdt::USER_SS as u64,
        cs = const super::gdt::USER_CS as u64,
    );
}

// The ring-3 return path above patches the frame's CS and SS at these offsets.
const _: () = {
    assert!(core::mem::offset_of!(super::traps::TrapFrame, cs) == 144);
    assert!(core::mem::offset_of!(super::traps::TrapFrame, ss) == 168);
};

#[repr(C)]
#[derive(Clone, Copy)]
struct Gate {
    offset_low: u16,
    selector: u16,
    ist: u8,
    type_attr: u8,
    offset_mid: u16,
    offset_high: u32,
    _reserved: u32,
}

const MISSING: Gate =
    Gate { offset_low: 0, selector: 0, ist: 0, type_attr: 0, offset_mid: 0, offset_high: 0, _reserved: 0 };

#[repr(C, align(16))]
struct Idt(UnsafeCell<[Gate; 256]>);

// SAFETY: gates are written only by `set_gate`, whose callers serialise (boot CPU at boot,
// handler registration under the handler-table lock); the CPU reads them.
unsafe impl Sync for Idt {}

static IDT: Idt = Idt(UnsafeCell::new([MISSING; 256]));

/// Installs the stub for `vector` as a present interrupt gate (IF cleared on entry). With a
/// ring-0 program, gates without an IST of their own use the program-safe one (`ring0`).
pub fn set_gate(vector: u8, ist: u8, user_callable: bool) {
    let (addr, ist) = if ist == 0 && super::ring3::active() {
        if vector == 3 {
            (super::ring3::breakpoint_entry as *const () as u64, 0)
        } else {
            (super::ring3::stub_address(vector), 0)
        }
    } else if ist == 0 && super::ring0::active() {
        (super::ring0::stub_address(vector), IST_PROGRAM)
    } else {
        (stub_address(vector), ist)
    };
    let dpl: u8 = if user_callable { 3 } else { 0 };
    let gate = Gate {
        offset_low: addr as u16,
        selector: KERNEL_CS,
        ist,
        type_attr: 0x8e | (dpl << 5),
        offset_mid: (addr >> 16) as u16,
        offset_high: (addr >> 32) as u32,
        _reserved: 0,
    };
    // SAFETY: see `Idt`'s Sync note; a 16-byte gate write while another CPU could take that
    // vector is impossible because vectors are only raised after registration completes.
    unsafe { (*IDT.0.get())[vector as usize] = gate };
}

/// Fills the exception gates; called once by the boot CPU.
pub fn init() {
    fill(0..32);
}

/// The breakpoint that ring-3 code enters ring 0 through, and the double fault, which any
/// exception of the boot's short ring-0 part becomes (reported as a kernel panic): enough to
/// boot in ring-3 mode, where `init` fills the rest as soon as the CPU is in ring 3. Each gate
/// costs ~50 instructions, which a PVM host emulates one by one in ring 0.
pub fn init_for_boot() {
    for v in [3, 8] {
        fill(v..v + 1);
    }
}

fn fill(vectors: core::ops::Range<u8>) {
    for v in vectors {
        let ist = match v {
            2 => IST_NMI,
            8 => IST_DOUBLE_FAULT,
            18 => IST_MACHINE_CHECK,
            _ => 0,
        };
        set_gate(v, ist, v == 3);
    }
}

/// Loads the shared IDT on this CPU.
pub fn load() {
    #[repr(C, packed)]
    struct Pointer {
        limit: u16,
        base: u64,
    }
    let ptr = Pointer { limit: (256 * 16 - 1) as u16, base: IDT.0.get() as u64 };
    // SAFETY: the IDT is static and its present gates point at valid stubs.
    unsafe { asm!("lidt [{}]", in(reg) &ptr, options(readonly, nostack)) };
}
