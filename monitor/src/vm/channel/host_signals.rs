//! Signals sent to `hrt` (Ctrl-C, SIGTERM, SIGHUP) go to the program once its kernel can take
//! them: the signal handler sets the signal's bit in the channel header and interrupts CPU 0;
//! the kernel raises it in the program (a handler runs; the default action ends the program
//! with 128 + signal). Before that (or with `--no-channel`) they stop the VM at once.

use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU64, Ordering};

use hrt_abi::channel::HOST_SIGNAL_VECTOR;

static WORD: AtomicPtr<AtomicU64> = AtomicPtr::new(std::ptr::null_mut());
static VM_FD: AtomicI32 = AtomicI32::new(-1);
/// When (CLOCK_MONOTONIC, ns) a signal that may end the program or run its handler was last
/// passed on (`passed_on_since`).
static LAST_PASSED: AtomicU64 = AtomicU64::new(0);

/// CLOCK_MONOTONIC in nanoseconds (async-signal-safe).
pub fn monotonic_ns() -> u64 {
    // SAFETY: an all-zero timespec is valid; clock_gettime fills it.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: clock_gettime writes the struct we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// When a signal other than SIGCONT, SIGCHLD and SIGWINCH was last passed to the program (0:
/// never).
pub fn last_passed_ns() -> u64 {
    LAST_PASSED.load(Ordering::SeqCst)
}

/// `KVM_SIGNAL_MSI`: `_IOW(KVMIO, 0xa5, struct kvm_msi)`.
const KVM_SIGNAL_MSI: u64 =
    (1 << 30) | ((std::mem::size_of::<kvm_bindings::kvm_msi>() as u64) << 16) | (0xae << 8) | 0xa5;

/// From now on signals go to the program: `word` is the channel's `host_signals`, `vm_fd` the
/// VM's descriptor (both valid until `detach`).
pub fn attach(word: &AtomicU64, vm_fd: i32) {
    VM_FD.store(vm_fd, Ordering::SeqCst);
    WORD.store(word as *const AtomicU64 as *mut AtomicU64, Ordering::SeqCst);
}

/// The VM is ending: signals stop it again.
pub fn detach() {
    WORD.store(std::ptr::null_mut(), Ordering::SeqCst);
}

/// Called from the signal handler: passes `sig` to the program; false if the program cannot
/// take it (then the caller stops the VM). Async-signal-safe: atomics and one ioctl.
pub fn deliver(sig: i32) -> bool {
    let word = WORD.load(Ordering::SeqCst);
    if word.is_null() || !(1..64).contains(&sig) {
        return false;
    }
    if ![libc::SIGCONT, libc::SIGCHLD, libc::SIGWINCH].contains(&sig) {
        LAST_PASSED.store(monotonic_ns(), Ordering::SeqCst);
    }
    // SAFETY: `attach` stored a pointer into guest RAM, mapped until the process ends.
    unsafe { (*word).fetch_or(1 << sig, Ordering::SeqCst) };
    let msi = kvm_bindings::kvm_msi { address_lo: 0xfee0_0000, data: HOST_SIGNAL_VECTOR as u32, ..Default::default() };
    // SAFETY: KVM_SIGNAL_MSI reads the struct we pass; the descriptor is the VM's.
    unsafe { libc::ioctl(VM_FD.load(Ordering::SeqCst), KVM_SIGNAL_MSI as _, &msi) >= 0 }
}
