//! The VM options of the command line (`cli::VmArgs`) checked against the host and turned into
//! the `vm::VmConfig` a VM is built from: the one place where the command line meets the VM
//! layer, so that `vm` knows nothing of `cli` (dependencies run cli -> vm -> forward -> abi).

use crate::cli::{HostPages, IdleMode, VmArgs};
use crate::error::{err, Result};
use crate::vm::{self, VmConfig};

/// The validated VM shape for `args`, with kernel command line `cmdline`.
pub fn config(args: &VmArgs, kvm: &kvm_ioctls::Kvm, cmdline: String) -> Result<VmConfig> {
    let cpus = vm::check_cpus(args.cpus, kvm)?;
    let mem = vm::check_mem(args.mem)?;
    if args.numa == 0 || args.numa as usize > hrt_abi::MAX_ZONES || args.numa > cpus {
        return Err(err!(
            "--numa {} is invalid: use 1 to {} zones, no more than the vCPUs ({cpus})",
            args.numa,
            hrt_abi::MAX_ZONES
        ));
    }
    if cmdline.len() > hrt_abi::CMDLINE_LEN {
        return Err(err!("kernel command line longer than {} bytes", hrt_abi::CMDLINE_LEN));
    }
    Ok(VmConfig {
        cpus,
        mem,
        idle_halt: args.idle == IdleMode::Halt,
        overcommitted: cpus > host_cpus(),
        host_cpus: host_cpus(),
        // `auto`: idle vCPUs halt after 1 ms of polling when there is no host CPU to spare
        // beyond them. When they outnumber the host's CPUs the kernel places threads on as many
        // vCPUs as the host has CPUs, and the rest halt for good.
        idle_halt_late: args.idle == IdleMode::Auto && cpus >= host_cpus(),
        kernel_ring0: args.kernel_ring.as_deref() == Some("0"),
        pin: args.pin,
        preempt_us: args.preempt.unwrap_or(0),
        numa: args.numa,
        cmdline,
        program: None,
        platform: crate::platform::choose(args.platform, kvm)?,
        seccomp: !args.no_seccomp,
        huge_pages: args.host_pages == HostPages::Huge,
    })
}

fn host_cpus() -> u32 {
    std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1)
}
