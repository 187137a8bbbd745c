//! Opening /dev/kvm and creating the VM, with errors that say how to fix them.

use kvm_ioctls::{Kvm, VmFd};

use crate::error::err;
use crate::error::Result;

/// The KVM device; `HRT_KVM_DEVICE` overrides it (for tests of the error paths).
pub fn device_path() -> String {
    std::env::var("HRT_KVM_DEVICE").unwrap_or_else(|_| "/dev/kvm".into())
}

pub fn open_kvm() -> Result<Kvm> {
    use std::os::unix::io::FromRawFd;
    let path = device_path();
    let cpath = std::ffi::CString::new(path.clone()).map_err(|_| err!("bad KVM device path"))?;
    // SAFETY: a plain open(2) of a NUL-terminated path.
    let fd = unsafe { libc::open(cpath.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ENOENT) => err!(
                "{path} does not exist: this host has no KVM (enable virtualization and load kvm_intel or kvm_amd, e.g. `sudo modprobe kvm_intel`)"
            ),
            Some(libc::EACCES) | Some(libc::EPERM) => err!(
                "no permission to open {path}: add yourself to the kvm group (`sudo usermod -aG kvm $USER`, then log in again) or run as root"
            ),
            _ => err!("cannot open {path}: {}", crate::kernel_image::io_reason(&e)),
        });
    }
    // SAFETY: fd is a freshly opened descriptor we own.
    let kvm = unsafe { Kvm::from_raw_fd(fd) };
    match kvm.get_api_version() {
        12 => Ok(kvm),
        v if v < 0 => Err(err!("{path} is not a KVM device")),
        v => Err(err!("{path} speaks KVM API version {v}; hrt needs version 12")),
    }
}

/// The KVM device a parent `hrt` passed as descriptor `fd` (`--kvm-fd`), moved to a
/// close-on-exec descriptor of this process's (the program must not inherit it); None if it is
/// no KVM device.
pub fn kvm_from_inherited(fd: i32) -> Option<Kvm> {
    use std::os::unix::io::FromRawFd;
    if fd <= 2 {
        return None;
    }
    // SAFETY: fcntl and close on a descriptor number the parent placed for this process.
    let own = unsafe {
        let own = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3);
        libc::close(fd);
        own
    };
    if own < 0 {
        return None;
    }
    // SAFETY: `own` is a fresh descriptor this process owns.
    let kvm = unsafe { Kvm::from_raw_fd(own) };
    (kvm.get_api_version() == 12).then_some(kvm)
}

/// Checks `--cpus` against KVM's limit and the kernel's; None means the host's CPU count.
pub fn check_cpus(requested: Option<u32>, kvm: &Kvm) -> Result<u32> {
    let (kvm_limit, kernel_limit) = (kvm.get_max_vcpus(), hrt_abi::MAX_CPUS);
    let kvm_max = kvm_limit.min(kernel_limit) as u32;
    let cpus = match requested {
        Some(n) => n,
        None => crate::host_cpus::count().min(kvm_max),
    };
    if cpus == 0 {
        return Err(err!("--cpus 0: a VM needs at least one vCPU"));
    }
    if cpus > kvm_max {
        return Err(err!(
            "--cpus {cpus} is more than hrt can run here: at most {kvm_max} vCPUs (KVM allows {kvm_limit}, the kernel {kernel_limit})"
        ));
    }
    Ok(cpus)
}

/// A VM without its interrupt controller yet ([`create_irqchip`] before any vCPU).
pub fn create_vm_without_irqchip(kvm: &Kvm) -> Result<VmFd> {
    create_vm(kvm).map_err(|e| err!("cannot create a VM: {e}"))
}

/// KVM_CREATE_VM, again when a signal interrupted it: KVM answers EINTR (not a restartable
/// error) when a signal is pending, and a forked child's `hrt` takes the signals sent to the
/// program while its VM is made (a fork_early_signals child failed to start so).
pub fn create_vm(kvm: &Kvm) -> std::result::Result<VmFd, kvm_ioctls::Error> {
    loop {
        match kvm.create_vm() {
            Err(e) if e.errno() == libc::EINTR => continue,
            made => return made,
        }
    }
}

/// The in-kernel local APICs, without KVM's PIC and IOAPIC (a "split" interrupt controller):
/// the kernel uses only its local APIC (timer, IPIs) and the monitor's interrupts are MSIs.
///
/// Why not the whole controller (`KVM_CREATE_IRQCHIP`): making its PIC and IOAPIC left the
/// VM's next memory-slot change waiting ~5 ms in the host (5.1-7.9 ms for a 4 MiB slot made
/// right after it, 0.03-0.1 ms after a split controller or 6 ms later), and the program's
/// first piece of memory is registered right then, while the kernel boots and soon asks for
/// it. A host without split controllers (Linux before 4.4) gets the whole one.
pub fn create_irqchip(vm: &VmFd) -> Result<()> {
    let split = kvm_bindings::kvm_enable_cap {
        cap: kvm_bindings::KVM_CAP_SPLIT_IRQCHIP,
        // No IOAPIC pins to route: nothing uses them.
        args: [0; 4],
        ..Default::default()
    };
    if vm.enable_cap(&split).is_ok() {
        return Ok(());
    }
    vm.create_irq_chip().map_err(|e| err!("cannot create the in-kernel interrupt controller: {e}"))
}
