//! What kind of KVM this host has, which decides where guest ring 0 runs natively.

use hrt_abi::Platform;
use std::path::Path;

/// PVM (kvm_pvm) runs every guest at CPL 3 and emulates a non-PVM guest's ring 0.
pub fn detect() -> Platform {
    if Path::new("/sys/module/kvm_pvm").exists() {
        Platform::PvmEmulated
    } else {
        Platform::HardwareVirt
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
