//! The host's clocks for the program's: CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME (and
//! CLOCK_MONOTONIC_RAW, which differs from CLOCK_MONOTONIC by the time keeper's slewing) are
//! system-wide on Linux, and programs compare them across processes (a monotonic deadline in
//! shared memory, a time stamp in a file, a child's start time against the uptime). The kernel
//! counts time from the TSC; it needs the host's three clocks at one known guest TSC value. So
//! just before the boot CPU first runs, the monitor reads the vCPU's TSC (KVM_GET_MSRS) between
//! two readings of the host clocks and writes the pair into the boot-info block. (A forked
//! child's TSC goes on from its parent's, so the parent's pair holds for it too.)

use hrt_abi::{layout, BootInfo};
use kvm_ioctls::VcpuFd;

use super::memory::GuestRam;

/// IA32_TSC.
const MSR_IA32_TSC: u32 = 0x10;

/// The host's (CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_MONOTONIC_RAW) now, in
/// nanoseconds.
pub fn now() -> [u64; 4] {
    [libc::CLOCK_REALTIME, libc::CLOCK_MONOTONIC, libc::CLOCK_BOOTTIME, libc::CLOCK_MONOTONIC_RAW].map(|clock| {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid timespec to write.
        unsafe { libc::clock_gettime(clock, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    })
}

/// The host's CLOCK_TAI ahead of its CLOCK_REALTIME, in whole seconds (leap seconds: an
/// integer set by the time keeper, 0 where none was).
pub fn tai_offset_s() -> u64 {
    let read = |clock| {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid timespec to write.
        unsafe { libc::clock_gettime(clock, &mut ts) };
        ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128
    };
    let (real, tai) = (read(libc::CLOCK_REALTIME), read(libc::CLOCK_TAI));
    // The two readings are microseconds apart: rounded to the second.
    ((tai - real + 500_000_000).div_euclid(1_000_000_000)).clamp(0, u32::MAX as i128) as u64
}

/// The resolution of the host's coarse clocks (its tick), in nanoseconds.
pub fn coarse_resolution_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// How many times `sample_at_boot` reads the TSC between two readings of the clocks; the
/// tightest pair is kept.
const SAMPLES: usize = 4;

/// Reads `vcpu`'s TSC and the host clocks at the same moment (the clocks read before and after
/// the TSC, averaged) into the boot-info block. Leaves the block as it was if the TSC cannot be
/// read: the kernel then counts from the clocks read when the block was built. The pair is
/// the tightest of `SAMPLES`: one read whose thread the host preempted between the readings
/// set the program's clocks off the host's by up to half the gap for the whole run (on a
/// loaded host, nix's SO_TIMESTAMPNS tests saw packets stamped by the host up to 2.3 us after
/// the program's CLOCK_REALTIME read after them).
pub fn sample_at_boot(vcpu: &VcpuFd, ram: &GuestRam) {
    let mut msrs = match kvm_bindings::Msrs::from_entries(&[kvm_bindings::kvm_msr_entry {
        index: MSR_IA32_TSC,
        ..Default::default()
    }]) {
        Ok(m) => m,
        Err(_) => return,
    };
    // (gap, clocks before, clocks after, TSC) of the tightest reading.
    let mut best: Option<(u64, [u64; 4], [u64; 4], u64)> = None;
    for _ in 0..SAMPLES {
        let before = now();
        let read = vcpu.get_msrs(&mut msrs);
        let after = now();
        let tsc = msrs.as_slice()[0].data;
        if read != Ok(1) || tsc == 0 {
            continue;
        }
        // CLOCK_MONOTONIC's gap (it does not step).
        let gap = after[1].saturating_sub(before[1]);
        if best.is_none_or(|(g, ..)| gap < g) {
            best = Some((gap, before, after, tsc));
        }
    }
    let Some((_, before, after, tsc)) = best else { return };
    let mid = |i: usize| before[i] + after[i].saturating_sub(before[i]) / 2;
    let field = |offset: usize| layout::BOOT_INFO + offset as u64;
    // The TSC last: a block with a TSC always has the clocks read with it.
    let _ = ram.write_obj(field(std::mem::offset_of!(BootInfo, wallclock_ns)), &mid(0));
    let _ = ram.write_obj(field(std::mem::offset_of!(BootInfo, monotonic_ns)), &mid(1));
    let _ = ram.write_obj(field(std::mem::offset_of!(BootInfo, boottime_ns)), &mid(2));
    let _ = ram.write_obj(field(std::mem::offset_of!(BootInfo, monotonic_raw_ns)), &mid(3));
    let _ = ram.write_obj(field(std::mem::offset_of!(BootInfo, wallclock_tsc)), &tsc);
}
