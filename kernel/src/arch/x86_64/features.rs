//! CPU features the kernel may use: what CPUID reports, restricted to what the monitor says
//! the VM offers. On PVM hosts CPUID executes on the host CPU and reports features (XSAVE,
//! AVX, ...) that the VM does not support, so the boot-info list is the authority.

use core::sync::atomic::{AtomicU64, Ordering};

pub use hrt_abi::features::*;

use super::instr::cpuid;

static FEATURES: AtomicU64 = AtomicU64::new(0);

/// Boot CPU, first thing after reading the boot-info block.
pub fn init(offered: u64) {
    let (_, _, ecx1, _) = cpuid(1, 0);
    let (_, _, _, edx_ext) = cpuid(0x8000_0001, 0);
    let cpu = [
        (ecx1 & (1 << 21) != 0, X2APIC),
        (ecx1 & (1 << 24) != 0, TSC_DEADLINE),
        (ecx1 & (1 << 26) != 0, XSAVE),
        (ecx1 & (1 << 28) != 0, AVX),
        (edx_ext & (1 << 26) != 0, PAGES_1G),
        (edx_ext & (1 << 27) != 0, RDTSCP),
    ]
    .into_iter()
    .filter_map(|(on, bit)| on.then_some(bit))
    .fold(0, |a, b| a | b);
    // KVM's paravirtual leaves are the monitor's to report: CPUID executed natively (ring 3
    // on PVM) shows whatever hypervisor runs the host, if any.
    let paravirt = STEAL_TIME;
    FEATURES.store((cpu | paravirt) & offered, Ordering::Relaxed);
}

#[inline]
pub fn has(feature: u64) -> bool {
    FEATURES.load(Ordering::Relaxed) & feature != 0
}
