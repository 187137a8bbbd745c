//! Per-CPU GDT and TSS. The TSS carries the IST stacks that let double faults, NMIs and
//! machine checks run on a known-good stack even when the current one is broken.
//! (Hand-written rather than the `x86_64` crate's: the tables live inside `PerCpu` and are
//! filled in place, and the IDT side uses our own assembly entry stubs.)

use core::arch::asm;
use core::mem::size_of;

pub const KERNEL_CS: u16 = 0x08;
pub const KERNEL_SS: u16 = 0x10;
/// User selectors are laid out for SYSRET: STAR[63:48] = 0x10 gives SS = 0x18, CS = 0x20.
pub const USER_SS: u16 = 0x18 | 3;
pub const USER_CS: u16 = 0x20 | 3;
pub const TSS_SEL: u16 = 0x28;

/// IST slots (1-based, as the IDT gate encodes them).
pub const IST_DOUBLE_FAULT: u8 = 1;
pub const IST_NMI: u8 = 2;
pub const IST_MACHINE_CHECK: u8 = 3;
/// Every other gate when the program runs in ring 0 (see `ring0`).
pub const IST_PROGRAM: u8 = 4;
pub const IST_COUNT: usize = 4;
pub const IST_STACK_SIZE: usize = 16 << 10;

#[repr(C, packed(4))]
#[derive(Clone, Copy)]
pub struct Tss {
    _reserved0: u32,
    pub rsp: [u64; 3],
    _reserved1: u64,
    pub ist: [u64; 7],
    _reserved2: u64,
    _reserved3: u16,
    pub iomap_base: u16,
    /// I/O permission bitmap (a set bit denies ring 3 the port), then the 0xff terminator the
    /// CPU reads past the last byte. Covers the hypercall port; in effect only in ring-3 mode
    /// (`open_hypercall_port`), where ring-3 code makes the hypercalls.
    iomap: [u8; IOMAP_BYTES],
}

const IOMAP_BYTES: usize = hrt_abi::HYPERCALL_PORT as usize / 8 + 2;
/// Offset of `iomap` in the TSS (the hardware part is 104 bytes).
const IOMAP_OFFSET: u16 = 104;

impl Tss {
    pub const fn new() -> Self {
        Tss {
            _reserved0: 0,
            rsp: [0; 3],
            _reserved1: 0,
            ist: [0; 7],
            _reserved2: 0,
            _reserved3: 0,
            // Past the TSS limit: no bitmap, so ring 3 has no port.
            iomap_base: 0xffff,
            iomap: [0xff; IOMAP_BYTES],
        }
    }

    /// Lets ring 3 use the 4-byte hypercall port (`out` of a request address).
    pub fn open_hypercall_port(&mut self) {
        for port in hrt_abi::HYPERCALL_PORT..hrt_abi::HYPERCALL_PORT + 4 {
            self.iomap[port as usize / 8] &= !(1 << (port % 8));
        }
        self.iomap_base = IOMAP_OFFSET;
    }
}

const _: () = assert!(core::mem::offset_of!(Tss, iomap) == IOMAP_OFFSET as usize);

/// null, kernel code, kernel data, user data, user code, TSS (two slots).
#[repr(C, align(16))]
pub struct Gdt {
    entries: [u64; 7],
}

impl Gdt {
    pub const fn new() -> Self {
        Gdt {
            entries: [
                0,
                0x00af_9a00_0000_ffff, // kernel code: present, DPL 0, 64-bit
                0x00cf_9200_0000_ffff, // kernel data
                0x00cf_f200_0000_ffff, // user data: DPL 3
                0x00af_fa00_0000_ffff, // user code: DPL 3, 64-bit
                0,
                0,
            ],
        }
    }
}

#[repr(C, packed)]
struct Pointer {
    limit: u16,
    base: u64,
}

/// Points the GDT's TSS descriptor at `tss`, then loads the GDT, reloads the segment registers
/// and loads the task register.
///
/// # Safety
/// `gdt` and `tss` must live forever (they are in this CPU's `PerCpu`) and not move.
pub unsafe fn load(gdt: &mut Gdt, tss: &Tss) {
    let base = tss as *const Tss as u64;
    let limit = (size_of::<Tss>() - 1) as u64;
    gdt.entries[5] = (limit & 0xffff)
        | ((base & 0xff_ffff) << 16)
        | (0x89 << 40) // present, 64-bit available TSS
        | (((limit >> 16) & 0xf) << 48)
        | (((base >> 24) & 0xff) << 56);
    gdt.entries[6] = base >> 32;
    let ptr = Pointer { limit: (size_of::<Gdt>() - 1) as u16, base: gdt as *const Gdt as u64 };
    // SAFETY: the GDT is valid and permanent; the far return reloads CS with the kernel code
    // selector, the moves reload the data segments (GS/FS bases are MSRs and stay untouched).
    unsafe {
        asm!(
            "lgdt [{ptr}]",
            "push {cs}",
            "lea {tmp}, [rip + 2f]",
            "push {tmp}",
            "retfq",
            "2:",
            "mov ds, {ss:x}",
            "mov es, {ss:x}",
            "mov ss, {ss:x}",
            "ltr {tss:x}",
            ptr = in(reg) &ptr,
            cs = const KERNEL_CS as u64,
            ss = in(reg) KERNEL_SS as u64,
            tss = in(reg) TSS_SEL as u64,
            tmp = out(reg) _,
        );
    }
}
