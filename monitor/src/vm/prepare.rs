//! The KVM work of a start that needs nothing of the program or the configuration, on a thread
//! of its own: making the VM, reading KVM's CPUID and the VM's TSC frequency.
//!
//! On a PVM host (itself a VM here) `KVM_CREATE_VM` takes 0.25-1.2 ms and
//! `KVM_GET_SUPPORTED_CPUID` ~0.3 ms (the host's host traps each CPUID): together the largest
//! steps before the first vCPU runs. `hrt run` starts them as soon as /dev/kvm is open, and the
//! main thread meanwhile builds the configuration, reads the kernel's image, maps guest RAM and
//! copies the kernel into it; `super::run` takes the results where it needs them. Whatever the
//! thread could not make is made there again, with the errors that say why.

use std::os::fd::{AsRawFd, FromRawFd};
use std::thread::JoinHandle;

use kvm_bindings::{CpuId, KVM_MAX_CPUID_ENTRIES};
use kvm_ioctls::{Kvm, VmFd};

/// What the thread made (each None where it failed).
pub struct Made {
    pub vm: Option<VmFd>,
    pub cpuid: Option<CpuId>,
    pub tsc_khz: Option<u32>,
}

/// The thread at work.
pub struct Prepared(JoinHandle<Made>);

/// Starts the thread on a copy of `kvm`'s descriptor; None if it cannot start (then `run`
/// does the work itself). (A forked child's monitor making its VM so while its forwarder
/// became the child's gained nothing: 160 forks each, median 5.99 against 6.03 ms.)
pub fn start(kvm: &Kvm) -> Option<Prepared> {
    // SAFETY: duplicates an open descriptor of ours; the copy is owned by the thread's `Kvm`.
    let fd = unsafe { libc::fcntl(kvm.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: a descriptor of /dev/kvm that nothing else owns.
    let own = unsafe { Kvm::from_raw_fd(fd) };
    // SAFETY: sched_getcpu has no arguments.
    let here = unsafe { libc::sched_getcpu() };
    std::thread::Builder::new()
        .name("hrt-prepare".into())
        .spawn(move || {
            away_from(here);
            let vm = super::kvm::create_vm(&own).ok();
            let tsc_khz = vm.as_ref().and_then(|vm| super::tsc_khz(&own, vm));
            let cpuid = own.get_supported_cpuid(KVM_MAX_CPUID_ENTRIES).ok();
            Made { vm, cpuid, tsc_khz }
        })
        .ok()
        .map(Prepared)
}

/// Moves the calling thread off host CPU `cpu` (the main thread's when it started this one)
/// where `hrt` may run on another: the host placed a new thread on its creator's CPU and ran
/// it there first while another CPU was idle (the main thread waited 0.5-0.6 ms of a 9 ms
/// start for the VM's creation, which was to overlap with it). Advice only.
fn away_from(cpu: i32) {
    if cpu < 0 {
        return;
    }
    // SAFETY: cpu_set_t is plain data; sched_getaffinity/sched_setaffinity(0) read and set
    // this thread's own mask.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return;
        }
        let others = (0..libc::CPU_SETSIZE as usize).filter(|&c| c != cpu as usize && libc::CPU_ISSET(c, &set)).count();
        if others == 0 {
            return;
        }
        libc::CPU_CLR(cpu as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

impl Prepared {
    /// Waits for the thread and takes what it made.
    pub fn take(self) -> Made {
        self.0.join().unwrap_or(Made { vm: None, cpuid: None, tsc_khz: None })
    }
}
