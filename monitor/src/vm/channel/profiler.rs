//! `hrt run --profile`: a thread interrupts every vCPU `hz` times a second with
//! `PROFILE_VECTOR` (the kernel notes the instruction each was at, `kernel/src/linux/profile.rs`),
//! and once the program has ended the samples are read from the kernel's area and reported by
//! function (`profile_report`).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hrt_abi::channel::PROFILE_VECTOR;

use super::Service;
use crate::file_bytes::FileBytes;
use crate::vm::memory::GuestRam;

/// The most samples per vCPU the monitor reads, whatever the guest's header says (the kernel
/// keeps as many): at most 32 MiB of the host's memory for 64 vCPUs.
const MAX_CAPACITY: u64 = 1 << 16;

/// What the report needs: the rate, and the images whose symbols name the samples.
pub struct ProfileSetup {
    pub hz: u32,
    pub program: Arc<FileBytes>,
    pub kernel: Vec<u8>,
}

impl Service {
    /// Profiles this run (before `start`).
    pub fn profile_with(&self, setup: ProfileSetup) {
        let _ = self.profile.set(setup);
    }

    /// Starts the interrupting thread, if profiling; it installs `filter` on itself.
    pub(super) fn start_profiler(
        self: &Arc<Self>,
        filter: Option<seccompiler::BpfProgram>,
    ) -> crate::error::Result<()> {
        let Some(hz) = self.profile.get().map(|p| p.hz) else { return Ok(()) };
        let svc = self.clone();
        std::thread::Builder::new()
            .name("hrt-profile".into())
            .spawn(move || {
                if let Some(Err(e)) = filter.as_ref().map(crate::vm::seccomp::install) {
                    eprintln!("hrt: {e}");
                    return;
                }
                let period = Duration::from_secs(1) / hz;
                let mut next = Instant::now() + period;
                while !svc.stopping.load(Ordering::Relaxed) {
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                    // A late tick (the host ran something else) is not made up for.
                    next = (next + period).max(Instant::now());
                    let Some(ch) = svc.channel() else { continue };
                    if ch.header.profile_area.load(Ordering::Acquire) == 0 {
                        continue;
                    }
                    for cpu in 0..svc.cpus {
                        let _ = svc.send(cpu, PROFILE_VECTOR);
                    }
                }
            })
            .map_err(|e| crate::error::err!("cannot start the profiling thread: {e}"))?;
        Ok(())
    }

    /// Prints the profile (the program has ended); nothing if this run was not profiled.
    pub fn report_profile(&self, ram: &GuestRam) {
        let (Some(setup), Some(ch)) = (self.profile.get(), self.channel()) else { return };
        let area = ch.header.profile_area.load(Ordering::Acquire);
        let capacity = ch.header.profile_capacity.load(Ordering::Relaxed).min(MAX_CAPACITY);
        let part = (capacity + 1) * 8;
        let Some(ptr) = (area != 0).then(|| ram.host_ptr(area, part * self.cpus as u64)).flatten() else {
            eprintln!("hrt: profile: the kernel kept no samples");
            return;
        };
        let (mut samples, mut dropped) = (Vec::new(), 0);
        for cpu in 0..self.cpus as u64 {
            // SAFETY: `host_ptr` checked that the whole area lies in guest RAM, which stays
            // mapped while the monitor runs; the guest has stopped (and its words are only
            // numbers to us).
            unsafe {
                let words = ptr.add((cpu * part) as usize) as *const u64;
                let taken = words.read_volatile();
                let kept = taken.min(capacity);
                dropped += taken - kept;
                samples.extend((0..kept).map(|i| words.add(1 + i as usize).read_volatile()));
            }
        }
        let base = ch.header.profile_program_base.load(Ordering::Relaxed);
        let program = crate::profile_report::Symbols::of(&setup.program, base);
        let kernel = crate::profile_report::Symbols::of(&setup.kernel, 0);
        for line in crate::profile_report::report(&samples, dropped, setup.hz, self.cpus, &program, &kernel) {
            eprintln!("{line}");
        }
    }
}
