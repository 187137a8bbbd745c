//! Where stuck vCPUs are: when the monitor gives up on a kernel that leaves a signal untaken
//! (`host_signals::watch`), each vCPU thread is interrupted out of KVM_RUN and prints its
//! vCPU's registers, so that a hang can be found (the host's `perf` cannot see into a PVM
//! guest, and such a vCPU takes no interrupt).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// The vCPU threads: (host process, thread id), so that a forked child never signals its
/// parent's threads through a copied list.
static THREADS: Mutex<Vec<(i32, i32)>> = Mutex::new(Vec::new());
/// Counts `say_where_vcpus_are` calls: an interrupted vCPU thread that has not answered the
/// latest prints where its vCPU is.
static ASKED: AtomicU32 = AtomicU32::new(0);

/// A debugging aid: with `HRT_DEBUG_WHERE_AFTER_MS=n` in `hrt`'s environment, each VM (a
/// forked child's too) says where its vCPUs are `n` ms after it starts and every second after,
/// and goes on.
/// For hangs that leave every signal taken (a vCPU spinning with interrupts on).
pub fn debug_deadline() -> Option<std::time::Instant> {
    let ms: u64 = std::env::var("HRT_DEBUG_WHERE_AFTER_MS").ok()?.parse().ok()?;
    Some(std::time::Instant::now() + std::time::Duration::from_millis(ms))
}

/// Whether `HRT_DEBUG_WHERE_AFTER_MS` is set (`debug_deadline`).
pub fn debugging() -> bool {
    std::env::var_os("HRT_DEBUG_WHERE_AFTER_MS").is_some()
}

/// The words of the 4 KiB above `rsp` that may be return addresses into the kernel's code
/// (linked from `hrt_abi::layout::KERNEL_BASE` up, within 63 MiB): a rough backtrace of a
/// stuck vCPU, for `addr2line`.
pub fn kernel_code_on_stack(ram: &super::memory::GuestRam, rsp: u64) -> String {
    let base = hrt_abi::layout::KERNEL_BASE;
    let Some(bytes) = ram.slice(rsp, 4096) else { return String::from("(stack not in guest RAM)") };
    let words = bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()));
    words.filter(|w| (base..base + (63 << 20)).contains(w)).map(|w| format!("{w:#x}")).collect::<Vec<_>>().join(" ")
}

/// Notes the calling thread as a vCPU thread.
pub fn register_vcpu_thread() {
    // SAFETY: getpid and gettid have no preconditions.
    let ids = unsafe { (libc::getpid(), libc::gettid()) };
    THREADS.lock().unwrap_or_else(|e| e.into_inner()).push(ids);
}

/// The latest request for vCPU threads interrupted out of KVM_RUN to say where their vCPUs
/// are (0: none yet).
pub fn asked() -> u32 {
    ASKED.load(Ordering::Relaxed)
}

/// Interrupts every vCPU thread of this process, which then prints its vCPU's registers, and
/// waits a moment for the lines.
pub fn say_where_vcpus_are() {
    ASKED.fetch_add(1, Ordering::SeqCst);
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
