//! The VM options of the command line (`cli::VmArgs`) checked against the host and turned into
//! the `vm::VmConfig` a VM is built from: the one place where the command line meets the VM
//! layer, so that `vm` knows nothing of `cli` (dependencies run cli -> vm -> forward -> abi).

use crate::cli::{HostPages, IdleMode, Overcommit, VmArgs};
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
    let host = crate::host_cpus::count();
    let packed = cpus > host && args.overcommit == Overcommit::Pack;
    Ok(VmConfig {
        cpus,
        mem,
        idle_halt: idle_halts(args.idle, cpus),
        overcommitted: cpus > host,
        pack_on: if packed { host } else { 0 },
        idle_halt_late: args.idle == IdleMode::Auto && !idle_halts(args.idle, cpus) && cpus >= host,
        idle_halt_long: args.idle == IdleMode::Auto && cpus < host,
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

/// Whether idle vCPUs halt: asked for, or (`auto`) because the vCPUs outnumber the host's
/// CPUs, where a polling vCPU takes host time from one that has work.
fn idle_halts(mode: IdleMode, cpus: u32) -> bool {
    let host = crate::host_cpus::count();
    match mode {
        IdleMode::Halt => true,
        IdleMode::Poll => false,
        IdleMode::Auto => cpus > host,
    }
}
