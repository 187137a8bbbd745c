//! Where a woken polling thread runs. A doorbell is served on the vCPU thread that took the
//! exit, and when doorbells come in a burst that thread wakes the pollers. The host scheduler
//! then places a poller on the waker's own CPU (wake-affine; measured with pvm-doorbell's probe
//! VMM: 97-99 % of wake-ups from a vCPU thread preempted it): the poller takes the core from the
//! very vCPU whose next calls it is to catch, spins for nothing and goes back to sleep (a
//! "futile" wake-up). So before such a wake-up each poller may run anywhere but on the waking
//! vCPU's current host CPU (unless that leaves nowhere); preempting a vCPU costs about what a
//! doorbell does on PVM (~70-80 K cycles), so the poller is worth waking only where the caller
//! is not.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

pub(super) struct Pollers {
    /// Host thread ids of the polling threads that may be steered (not pinned by `--pin`).
    tids: Mutex<Vec<libc::pid_t>>,
    /// The host CPU the pollers were last kept off (-1: none yet).
    kept_off: AtomicI32,
}

impl Pollers {
    pub(super) fn new() -> Pollers {
        Pollers { tids: Mutex::new(Vec::new()), kept_off: AtomicI32::new(-1) }
    }

    /// The calling polling thread may be steered.
    pub(super) fn add_self(&self) {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        self.tids.lock().unwrap().push(tid);
    }

    /// Keeps the pollers off the calling thread's current host CPU (called by a vCPU thread
    /// about to wake them). Nothing changes if they are already kept off it, or if the host
    /// allows this process only that CPU.
    pub(super) fn keep_off_this_cpu(&self) {
        // SAFETY: sched_getcpu has no preconditions.
        let here = unsafe { libc::sched_getcpu() };
        if here < 0 || self.kept_off.swap(here, Ordering::Relaxed) == here {
            return;
        }
        let allowed = crate::vm::vcpu::allowed_host_cpus();
        // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it (indices below CPU_SETSIZE).
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let mut any = false;
        for &cpu in allowed.iter().filter(|&&c| c != here as usize) {
            // SAFETY: as above.
            unsafe { libc::CPU_SET(cpu, &mut set) };
            any = true;
        }
        if !any {
            return;
        }
        for &tid in self.tids.lock().unwrap().iter() {
            // SAFETY: `tid` is one of our polling threads (they never exit while the VM runs);
            // the set is initialised. A failure leaves the thread where it may run now.
            unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        }
    }
}

/// A poller woken by a vCPU thread may not run on that thread's host CPU (where it would only
/// preempt the caller), and may run on every other CPU the process may use.
#[cfg(test)]
mod tests {
    use super::*;

    fn affinity(tid: libc::pid_t) -> Vec<usize> {
        // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its size.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        assert_eq!(unsafe { libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) }, 0);
        // SAFETY: CPU_ISSET reads the set.
        (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect()
    }

    #[test]
    fn woken_pollers_are_kept_off_the_wakers_cpu() {
        let pollers = std::sync::Arc::new(Pollers::new());
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let p = pollers.clone();
        let poller = std::thread::spawn(move || {
            p.add_self();
            // SAFETY: gettid has no preconditions.
            tx.send(unsafe { libc::gettid() }).unwrap();
            done_rx.recv().ok();
        });
        let tid = rx.recv().unwrap();
        pollers.keep_off_this_cpu();
        let off = pollers.kept_off.load(Ordering::Relaxed);
        let allowed = crate::vm::vcpu::allowed_host_cpus();
        let expected: Vec<usize> = if allowed.len() > 1 {
            allowed.iter().copied().filter(|&c| c as i32 != off).collect()
        } else {
            allowed.to_vec()
        };
        assert!(off >= 0, "the waker's CPU is known");
        assert_eq!(affinity(tid), expected, "poller kept off CPU {off} of {allowed:?}");
        done_tx.send(()).unwrap();
        poller.join().unwrap();
    }
}
