//! The CPUID the guest sees: what KVM supports, with per-vCPU APIC IDs filled in.

use hrt_abi::{layout, BootInfo, CpuidAnswer, CPUID_ANSWERS};
use kvm_bindings::{CpuId, KVM_MAX_CPUID_ENTRIES};
use kvm_ioctls::{Kvm, VcpuFd};

use super::memory::GuestRam;

use crate::error::err;
use crate::error::Result;

pub fn guest_cpuid(kvm: &Kvm, _cpus: u32) -> Result<CpuId> {
    kvm.get_supported_cpuid(KVM_MAX_CPUID_ENTRIES).map_err(|e| err!("cannot read KVM's CPUID: {e}"))
}

/// A copy of `base` for vCPU `id` of `cpus`: its initial APIC ID (leaf 1) and x2APIC ID
/// (leaves 0xB, 0x1F), and the topology the VM has (`topology`).
pub fn for_vcpu(base: &CpuId, id: u32, cpus: u32) -> CpuId {
    let mut c = base.clone();
    with_topology_levels(&mut c);
    for e in c.as_mut_slice() {
        match e.function {
            1 => {
                e.ebx = (e.ebx & 0x00ff_ffff) | (id << 24);
                e.ecx |= 1 << 31; // running under a hypervisor
            }
            0xb | 0x1f => e.edx = id,
            0x8000_0001 => {
                let host = std::arch::x86_64::__cpuid(0x8000_0001);
                e.ecx |= host.ecx & RING3_ECX_8000_0001;
                e.edx |= host.edx & RING3_EDX_8000_0001;
            }
            _ => {}
        }
        topology(e, id, cpus);
    }
    with_host_brand(&mut c);
    c
}

/// The VM's processor topology in the leaves that describe it: one package of `cpus` cores,
/// one thread each, vCPU `id` being core `id` with APIC ID `id`, every cache but the last
/// level per core, the last shared by all. This PVM host's KVM leaves the topology leaves
/// empty (0xB's levels, AMD's 0x8000_001E) and the counts (leaf 1's, 0x8000_0008's) as the
/// host's: hwloc's x86 backend rejected the data (`HWLOC_COMPONENTS=-linux lstopo`: "Invalid
/// argument"; `lstopo -v` lost its caches' "Inclusive"), and any program that counts cores
/// from CPUID counted the host's.
fn topology(e: &mut kvm_bindings::kvm_cpuid_entry2, id: u32, cpus: u32) {
    // Bits of the APIC ID that number the cores (its thread bits are none).
    let core_bits = cpus.max(1).next_power_of_two().trailing_zeros();
    match e.function {
        1 => {
            // Logical processors per package, and HTT ("that count is valid") beyond one.
            e.ebx = (e.ebx & !0x00ff_0000) | (cpus.min(255) << 16);
            if cpus > 1 {
                e.edx |= 1 << 28;
            }
        }
        4 if e.eax & 0x1f != 0 => {
            // Intel's caches: cores per package (bits 31-26) and threads sharing (25-14).
            let sharing = if (e.eax >> 5) & 7 >= 3 { cpus - 1 } else { 0 };
            e.eax = (e.eax & 0x3fff) | (sharing.min(0xfff) << 14) | ((cpus - 1).min(63) << 26);
        }
        0xb | 0x1f => {
            // Level 0: threads (one per core); level 1: cores (all of the package); then none.
            (e.eax, e.ebx, e.ecx) = match e.index {
                0 => (0, 1, 1 << 8),
                1 => (core_bits, cpus, 2 << 8 | 1),
                n => (0, 0, n & 0xff),
            };
        }
        0x8000_0008 => {
            // Cores per package less one (bits 7-0), APIC ID bits for them (15-12).
            e.ecx = (e.ecx & !0xf0ff) | (core_bits << 12) | ((cpus - 1) & 0xff);
        }
        0x8000_001d if e.eax & 0x1f != 0 => {
            // AMD's caches: logical processors sharing one, less one (bits 25-14).
            let sharing = if (e.eax >> 5) & 7 >= 3 { cpus - 1 } else { 0 };
            e.eax = (e.eax & !(0xfff << 14)) | (sharing.min(0xfff) << 14);
        }
        0x8000_001e => {
            // AMD: extended APIC ID; core ID with one thread per core; node 0 of one.
            (e.eax, e.ebx, e.ecx) = (id, id & 0xff, 0);
        }
        _ => {}
    }
}

/// Subleaves 0-2 of the topology leaves (0xB, and 0x1F where KVM has it), which `topology`
/// fills: KVM's table holds only the first here, and a subleaf it lacks answers zero (no
/// level of cores).
fn with_topology_levels(c: &mut CpuId) {
    for leaf in [0xb, 0x1f] {
        let Some(first) = c.as_slice().iter().find(|e| e.function == leaf).copied() else { continue };
        for index in 0..3 {
            if !c.as_slice().iter().any(|e| e.function == leaf && e.index == index) {
                let flags = kvm_bindings::KVM_CPUID_FLAG_SIGNIFCANT_INDEX;
                // A table already full keeps KVM's answer (no such level).
                let _ = c.push(kvm_bindings::kvm_cpuid_entry2 { index, flags, ..first });
            }
        }
    }
}

/// The processor's name (leaves 0x8000_0002-4, 48 bytes of text: `AMD EPYC`) as the host's
/// CPU answers it: this PVM host's KVM reports those leaves empty, so `lscpu`, 7-Zip's
/// benchmark header and every program that prints its CPU's name got an empty string, where
/// /proc/cpuinfo (the host's file) names it. Text only, the same on every host CPU. Kept as
/// KVM reports them where the host's CPU has no such leaves.
fn with_host_brand(c: &mut CpuId) {
    if std::arch::x86_64::__cpuid(0x8000_0000).eax < 0x8000_0004 {
        return;
    }
    for leaf in 0x8000_0002..=0x8000_0004u32 {
        let host = std::arch::x86_64::__cpuid(leaf);
        let regs = (host.eax, host.ebx, host.ecx, host.edx);
        if let Some(e) = c.as_mut_slice().iter_mut().find(|e| e.function == leaf) {
            (e.eax, e.ebx, e.ecx, e.edx) = regs;
        } else {
            let e = kvm_bindings::kvm_cpuid_entry2 {
                function: leaf,
                eax: regs.0,
                ebx: regs.1,
                ecx: regs.2,
                edx: regs.3,
                ..Default::default()
            };
            // A table already full keeps KVM's answer (none): nothing else depends on it.
            let _ = c.push(e);
        }
    }
}

/// Features of leaf 0x8000_0001 that are ordinary ring-3 instructions, running in the guest as
/// on the host, which this PVM host's KVM leaves out of what it reports as supported; announced
/// where the host has them. ECX: LZCNT (bit 5: without it glibc counts the CPU below x86-64-v3,
/// `haswell`, and picks its libraries' and functions' baseline forms) and SSE4A (bit 6).
const RING3_ECX_8000_0001: u32 = (1 << 5) | (1 << 6);
/// EDX: RDTSCP (bit 27), which GROMACS's mdrun requires when built to use it (Debian's is).
/// Its TSC_AUX is the host's CPU number on PVM (PVM does not switch it), so a program that
/// reads its CPU from RDTSCP reads the host's; the timing it is used for is right. RDPID (leaf
/// 7 ECX bit 22), which only reads that number, stays unannounced.
const RING3_EDX_8000_0001: u32 = 1 << 27;

/// Writes into the boot block (`BootInfo::cpuid`) what the boot vCPU's CPUID answers for the
/// leaves and subleaves `hrt_abi::cpuid_seedable` names (subleaf 0 for leaves that ignore it)
/// and zeros for the XSAVE components it lacks (`hrt_abi::CPUID_XSAVE_COMPONENTS`),
/// as KVM holds them once the vCPU's CPUID is set: KVM (PVM's part of it on this host) changes
/// some of what it was given (leaf 7.1 here gains two bits the host's ring 3 has), so the
/// answers come from KVM, not from the table the monitor gave it. Nothing written if KVM
/// cannot say: the kernel then asks the CPU.
pub fn write_answers(vcpu: &VcpuFd, ram: &GuestRam) {
    let Ok(held) = vcpu.get_cpuid2(KVM_MAX_CPUID_ENTRIES) else { return };
    let flag_index = kvm_bindings::KVM_CPUID_FLAG_SIGNIFCANT_INDEX;
    let subleaf = |e: &kvm_bindings::kvm_cpuid_entry2| if e.flags & flag_index != 0 { e.index } else { 0 };
    let mut answers = [CpuidAnswer::default(); CPUID_ANSWERS];
    let seeds = held.as_slice().iter().filter(|e| hrt_abi::cpuid_seedable(e.function, subleaf(e)));
    let held_answers =
        seeds.map(|e| CpuidAnswer { leaf: e.function, subleaf: subleaf(e), regs: [e.eax, e.ebx, e.ecx, e.edx] });
    // XSAVE components the CPU lacks: KVM answers zeros for them (glibc asks about 3 and 4,
    // MPX's, where they are missing: one trap each per start otherwise).
    let has_xsave_leaf = held.as_slice().iter().any(|e| e.function == 0xd && subleaf(e) == 0);
    let absent = hrt_abi::CPUID_XSAVE_COMPONENTS
        .filter(|&i| has_xsave_leaf && !held.as_slice().iter().any(|e| e.function == 0xd && subleaf(e) == i))
        .map(|i| CpuidAnswer { leaf: 0xd, subleaf: i, regs: [0; 4] });
    let mut n = 0u32;
    for (slot, a) in answers.iter_mut().zip(held_answers.chain(absent)) {
        *slot = a;
        n += 1;
    }
    let field = |offset: usize| layout::BOOT_INFO + offset as u64;
    // The answers first, then their count.
    if ram.write_obj(field(std::mem::offset_of!(BootInfo, cpuid)), &answers).is_ok() {
        let _ = ram.write_obj(field(std::mem::offset_of!(BootInfo, cpuid_count)), &n);
    }
}

/// Whether leaf `function` reports feature bit `bit` of register `reg` ('a', 'b', 'c' or 'd').
pub fn has(c: &CpuId, function: u32, reg: char, bit: u32) -> bool {
    c.as_slice().iter().find(|e| e.function == function && e.index == 0).is_some_and(|e| {
        let r = if reg == 'a' {
            e.eax
        } else if reg == 'c' {
            e.ecx
        } else if reg == 'b' {
            e.ebx
        } else {
            e.edx
        };
        r & (1 << bit) != 0
    })
}
