//! PVM detection by the PVM specification's booting sequence (pvm-spec.rst, virt-pvm tree).
//!
//! A PVM hypervisor answers the *synthetic* CPUID (`invlpg 0xffffffffff4d5650; cpuid`) itself,
//! with the KVM signature at 0x40000000 and "PVM\0" in EBX of 0x40000002. Elsewhere the INVLPG
//! just drops a TLB entry for an unmapped address and the CPUID is an ordinary one, so asking
//! is harmless on every platform. The kernel only reports the answer: this project's PVM hosts
//! do not implement the specification (docs/pvm.md), so there is no PVM supervisor mode to enter.

/// KVM's CPUID signature, "KVMKVMKVM\0\0\0", as EBX, ECX, EDX.
const KVM_SIGNATURE: (u32, u32, u32) = (0x4b4d_564b, 0x564b_4d56, 0x0000_004d);
/// EBX of leaf 0x40000002 on a PVM host: "PVM\0".
const PVM_SIGNATURE: u32 = 0x004d_5650;

/// The synthetic CPUID instruction of the PVM specification.
fn synthetic_cpuid(leaf: u32) -> (u32, u32, u32, u32) {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: INVLPG of an address the kernel never maps only drops a (non-existent) TLB entry;
    // CPUID has no side effects. RBX is reserved by LLVM, so it is saved around the CPUID.
    unsafe {
        core::arch::asm!(
            "invlpg [{probe}]",
            "mov {tmp:r}, rbx",
            "cpuid",
            "xchg {tmp:r}, rbx",
            probe = in(reg) 0xffff_ffff_ff4d_5650u64,
            tmp = out(reg) b,
            inout("eax") leaf => a,
            inout("ecx") 0u32 => c,
            out("edx") d,
        );
    }
    (a, b, c, d)
}

/// True if the hypervisor identifies itself as PVM through the synthetic CPUID (asked in
/// ring 0: INVLPG is privileged).
pub fn signature_present() -> bool {
    super::ring3::privileged(signature_ring0, 0, 0, 0) != 0
}

extern "C" fn signature_ring0(_: u64, _: u64, _: u64) -> u64 {
    signature_present_here() as u64
}

fn signature_present_here() -> bool {
    let (max, b, c, d) = synthetic_cpuid(0x4000_0000);
    if (b, c, d) != KVM_SIGNATURE || max < 0x4000_0002 {
        return false;
    }
    synthetic_cpuid(0x4000_0002).1 == PVM_SIGNATURE
}
