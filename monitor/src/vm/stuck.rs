//! Where stuck vCPUs are: when the monitor gives up on a kernel that leaves a signal untaken
//! (`host_signals::watch`), each vCPU thread is interrupted out of KVM_RUN and prints its
//! vCPU's registers, so that a hang can be found (the host's `perf` cannot see into a PVM
//! guest, and such a vCPU takes no interrupt).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The vCPU threads: (host process, thread id), so that a forked child never signals its
/// parent's threads through a copied list.
static THREADS: Mutex<Vec<(i32, i32)>> = Mutex::new(Vec::new());
/// Set by `say_where_vcpus_are`: an interrupted vCPU thread prints where its vCPU is.
static ASKED: AtomicBool = AtomicBool::new(false);

/// Notes the calling thread as a vCPU thread.
pub fn register_vcpu_thread() {
    // SAFETY: getpid and gettid have no preconditions.
    let ids = unsafe { (libc::getpid(), libc::gettid()) };
    THREADS.lock().unwrap_or_else(|e| e.into_inner()).push(ids);
}

/// Whether a vCPU thread interrupted out of KVM_RUN is to say where its vCPU is.
pub fn asked() -> bool {
    ASKED.load(Ordering::Relaxed)
}

/// Interrupts every vCPU thread of this process, which then prints its vCPU's registers, and
/// waits a moment for the lines.
pub fn say_where_vcpus_are() {
    ASKED.store(true, Ordering::SeqCst);
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    let threads = THREADS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for (pid, tid) in threads.into_iter().filter(|&(pid, _)| pid == me) {
        // SAFETY: a signal with a no-op handler to a thread of this process.
        unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, crate::kept_signals::wake_signal()) };
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
}

/// This module's global locks, taken without waiting for a fork (`vm::fork`): false if
/// another thread holds one.
pub(crate) fn hold_for_fork(held: &mut crate::vm::fork::Held) -> bool {
    crate::vm::fork::try_hold(held, &THREADS)
}
