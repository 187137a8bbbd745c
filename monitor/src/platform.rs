//! What kind of KVM this host has, which decides where guest ring 0 runs natively.
//!
//! On a PVM host (kvm_pvm) every guest runs at hardware CPL 3. A guest kernel that speaks the
//! PVM specification's paravirtual interface (pvm-spec.rst in the virt-pvm tree) would run its
//! supervisor mode natively; one that does not gets its ring-0 code emulated. Whether the host
//! offers that interface is asked directly: the specification's MSRs must be readable by the VMM.
//! docs/pvm.md records what this project's hosts answer.

use crate::error::Result;
use hrt_abi::Platform;
use kvm_bindings::{kvm_msr_entry, Msrs};
use kvm_ioctls::Kvm;
use std::path::Path;

/// What `--platform` asks for.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlatformChoice {
    /// Detect: PVM (emulated supervisor mode) on kvm_pvm hosts, hardware virtualization elsewhere
    Auto,
    /// Use the PVM specification's paravirtual supervisor mode (refused where the host lacks it)
    Pvm,
    /// Treat guest ring 0 as native (hardware virtualization), whatever the host
    Native,
}

/// MSR_PVM_LINEAR_ADDRESS_RANGE of the PVM specification: the first MSR a PVM VMM reads.
pub const MSR_PVM_LINEAR_ADDRESS_RANGE: u32 = 0x4b56_4df0;

/// What the host's KVM offers for the guest's ring 0.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PvmInterface {
    /// Not a PVM host: guest ring 0 runs under hardware virtualization.
    NotPvm,
    /// A PVM host that answers the specification's MSRs (the value is the linear address range).
    Offered(u64),
    /// A PVM host whose KVM refuses the specification's MSRs: supervisor mode can only be emulated.
    Refused,
}

/// The platform `--platform auto` picks: PVM (emulated supervisor mode) on kvm_pvm hosts.
pub fn detect() -> Platform {
    if Path::new("/sys/module/kvm_pvm").exists() {
        Platform::PvmEmulated
    } else {
        Platform::HardwareVirt
    }
}

/// The platform to boot on: `--platform auto` detects it, `pvm` and `native` insist.
pub fn choose(choice: PlatformChoice, kvm: &Kvm) -> Result<Platform> {
    if choice == PlatformChoice::Auto {
        return Ok(detect());
    }
    match (choice, pvm_interface(kvm)) {
        (PlatformChoice::Native, _) | (PlatformChoice::Auto, _) => Ok(Platform::HardwareVirt),
        (PlatformChoice::Pvm, PvmInterface::NotPvm) => {
            Err(crate::error::err!("--platform pvm: /dev/kvm is served by {}, not kvm_pvm", kvm_module()))
        }
        (PlatformChoice::Pvm, PvmInterface::Refused) => Err(crate::error::err!(
            "--platform pvm: this host's kvm_pvm does not offer the PVM specification's interface \
             (KVM refuses MSR {MSR_PVM_LINEAR_ADDRESS_RANGE:#x}); supervisor mode runs emulated (docs/pvm.md)"
        )),
        (PlatformChoice::Pvm, PvmInterface::Offered(_)) => Err(crate::error::err!(
            "--platform pvm: the host offers the PVM interface, but the HRT kernel does not speak it yet (docs/pvm.md)"
        )),
    }
}

/// Asks KVM whether it implements the PVM specification's MSRs, on a throw-away vCPU.
pub fn pvm_interface(kvm: &Kvm) -> PvmInterface {
    if !Path::new("/sys/module/kvm_pvm").exists() {
        return PvmInterface::NotPvm;
    }
    let probe = || -> Option<u64> {
        let vm = kvm.create_vm().ok()?;
        let vcpu = vm.create_vcpu(0).ok()?;
        let mut msrs =
            Msrs::from_entries(&[kvm_msr_entry { index: MSR_PVM_LINEAR_ADDRESS_RANGE, ..Default::default() }]).ok()?;
        // KVM_GET_MSRS returns how many entries it could read: 0 when the MSR is unknown to it.
        match vcpu.get_msrs(&mut msrs) {
            Ok(1) => Some(msrs.as_slice()[0].data),
            _ => None,
        }
    };
    probe().map(PvmInterface::Offered).unwrap_or(PvmInterface::Refused)
}

/// One line for `hrt info` on the PVM interface.
pub fn describe_interface(interface: PvmInterface) -> String {
    match interface {
        PvmInterface::NotPvm => "not a PVM host".into(),
        PvmInterface::Offered(range) => format!("offered (linear address range MSR {range:#x})"),
        PvmInterface::Refused => format!(
            "not offered: KVM refuses MSR_PVM_LINEAR_ADDRESS_RANGE ({MSR_PVM_LINEAR_ADDRESS_RANGE:#x}); see docs/pvm.md"
        ),
    }
}

/// The kernel module serving /dev/kvm, for `hrt info`.
pub fn kvm_module() -> &'static str {
    for m in ["kvm_pvm", "kvm_intel", "kvm_amd"] {
        if Path::new("/sys/module").join(m).exists() {
            return m;
        }
    }
    "unknown"
}
