//! Signals sent to `hrt` (Ctrl-C, SIGTERM, SIGHUP) go to the program once its kernel can take
//! them: the signal handler sets the signal's bit in the channel header and interrupts CPU 0;
//! the kernel raises it in the program (a handler runs; the default action ends the program
//! with 128 + signal). Before that (or with `--no-channel`) they stop the VM at once.

use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU64, Ordering};

use hrt_abi::channel::HOST_SIGNAL_VECTOR;

static WORD: AtomicPtr<AtomicU64> = AtomicPtr::new(std::ptr::null_mut());
static VM_FD: AtomicI32 = AtomicI32::new(-1);

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
    // SAFETY: `attach` stored a pointer into guest RAM, mapped until the process ends.
    unsafe { (*word).fetch_or(1 << sig, Ordering::SeqCst) };
    let msi = kvm_bindings::kvm_msi { address_lo: 0xfee0_0000, data: HOST_SIGNAL_VECTOR as u32, ..Default::default() };
    // SAFETY: KVM_SIGNAL_MSI reads the struct we pass; the descriptor is the VM's.
    unsafe { libc::ioctl(VM_FD.load(Ordering::SeqCst), KVM_SIGNAL_MSI as _, &msi) >= 0 }
}
