//! KVM's steal-time records: per vCPU, the host writes into guest memory how long the vCPU
//! has waited, runnable, for a host CPU (`steal`, in ns). `hrt run -v` prints it per CPU at
//! the end (`counters::print`), which tells a slow run on a loaded host from a slow kernel.
//! The record's `preempted` byte (the host took the CPU away, as opposed to a halt) stays 0
//! on the PVM test host (docs/benchmarks.md, "Steal time"), so nothing here relies on it.

use core::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};

use hrt_abi::MAX_CPUS;

use super::features::{self, STEAL_TIME};

const MSR_KVM_STEAL_TIME: u32 = 0x4b56_4d03;
const ENABLE: u64 = 1;

/// `struct kvm_steal_time` (64 bytes, 64-byte aligned, as the MSR requires).
#[repr(C, align(64))]
struct Record {
    steal: AtomicU64,
    /// Odd while the host writes the record.
    version: AtomicU32,
    flags: AtomicU32,
    preempted: AtomicU8,
    _pad: [u8; 47],
}

static RECORDS: [Record; MAX_CPUS] = [const {
    Record {
        steal: AtomicU64::new(0),
        version: AtomicU32::new(0),
        flags: AtomicU32::new(0),
        preempted: AtomicU8::new(0),
        _pad: [0; 47],
    }
}; MAX_CPUS];

/// Registers this CPU's record with the host (ring 0, where the host offers it). A forked
/// child's CPUs register again: the MSR is per vCPU of the VM, and the copy of the parent's
/// record would say what the parent's vCPU waited.
pub fn init_cpu(cpu: usize) {
    let r = &RECORDS[cpu];
    r.steal.store(0, Ordering::Relaxed);
    r.preempted.store(0, Ordering::Relaxed);
    if !features::has(STEAL_TIME) {
        return;
    }
    // Memory is identity-mapped: the record's address is its guest-physical address.
    let gpa = r as *const Record as u64;
    // SAFETY: the record lives forever, is 64-byte aligned and the host only writes its 64
    // bytes; the MSR changes nothing else.
    unsafe { super::instr::wrmsr(MSR_KVM_STEAL_TIME, gpa | ENABLE) };
}

/// A forked child's dormant CPUs (not yet registered): no stale counts of the parent's.
pub fn forget(cpu: usize) {
    RECORDS[cpu].steal.store(0, Ordering::Relaxed);
    RECORDS[cpu].preempted.store(0, Ordering::Relaxed);
}

/// Nanoseconds CPU `cpu` has waited for a host CPU since it registered (0 where the host does
/// not report it). Updated by the host each time the vCPU gets a host CPU back.
pub fn stolen_ns(cpu: usize) -> u64 {
    let r = &RECORDS[cpu];
    loop {
        let v = r.version.load(Ordering::Acquire);
        let steal = r.steal.load(Ordering::Acquire);
        if v & 1 == 0 && r.version.load(Ordering::Acquire) == v {
            return steal;
        }
        core::hint::spin_loop();
    }
}
