//! Signals sent to `hrt` (Ctrl-C, SIGTERM, SIGHUP) go to the program once its kernel can take
//! them: the signal handler sets the signal's bit in the channel header and interrupts CPU 0;
//! the kernel raises it in the program (a handler runs; the default action ends the program
//! with 128 + signal). Before that (or with `--no-channel`) they stop the VM at once.
//!
//! A kernel that never takes a signal (a vCPU stuck with interrupts masked: a kernel bug, or a
//! program that wrote the kernel's per-CPU interrupt flag, which one ring lets it do) would
//! leave `hrt` unkillable but by SIGKILL. So a signal sent again while the kernel has not taken
//! the same one for a second acts on `hrt` itself, as before the program ran: Ctrl-C twice
//! stops a stuck VM. Sooner than that, the two are one signal, as Linux merges a standard
//! signal sent twice before it is delivered.

use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU64, Ordering};

use hrt_abi::channel::HOST_SIGNAL_VECTOR;

static WORD: AtomicPtr<AtomicU64> = AtomicPtr::new(std::ptr::null_mut());
static VM_FD: AtomicI32 = AtomicI32::new(-1);
/// Per signal: when (CLOCK_MONOTONIC, ns) the delivery that set its bit in `WORD` happened.
static SET_AT: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];
/// How long the kernel may leave a signal untaken before the same signal acts on `hrt`.
const STUCK_AFTER_NS: u64 = 1_000_000_000;

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
/// take it, or the kernel has not taken the same signal for a second (then the caller acts on
/// it as before the program ran: stops the VM for a terminating one). Async-signal-safe:
/// atomics, clock_gettime, write and one ioctl.
pub fn deliver(sig: i32) -> bool {
    let word = WORD.load(Ordering::SeqCst);
    if word.is_null() || !(1..64).contains(&sig) {
        return false;
    }
    let now = monotonic_ns();
    // SAFETY: `attach` stored a pointer into guest RAM, mapped until the process ends.
    let before = unsafe { (*word).fetch_or(1 << sig, Ordering::SeqCst) };
    if before & (1 << sig) == 0 {
        SET_AT[sig as usize].store(now, Ordering::SeqCst);
    } else if now.saturating_sub(SET_AT[sig as usize].load(Ordering::SeqCst)) >= STUCK_AFTER_NS {
        say_stuck(sig);
        return false;
    }
    let msi = kvm_bindings::kvm_msi { address_lo: 0xfee0_0000, data: HOST_SIGNAL_VECTOR as u32, ..Default::default() };
    // SAFETY: KVM_SIGNAL_MSI reads the struct we pass; the descriptor is the VM's.
    unsafe { libc::ioctl(VM_FD.load(Ordering::SeqCst), KVM_SIGNAL_MSI as _, &msi) >= 0 }
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the struct we pass; it is async-signal-safe.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One line on stderr (this runs in a signal handler).
fn say_stuck(sig: i32) {
    let mut digits = [0u8; 20];
    crate::signal_safe::write_stderr(&[
        b"hrt: the kernel has not taken signal ",
        crate::signal_safe::decimal(sig as u64, &mut digits),
        b" for a second (a vCPU stuck?): it acts on hrt\n",
    ]);
}
