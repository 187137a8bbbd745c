//! What the program's `/proc/self/status` (and `/proc/self/stat`) shows of its threads, signal
//! state and address space, published in the channel header (`hrt_abi::channel::ProgramStatus`)
//! before a forwarded open that may be of such a file: a path that starts with `/proc/` or is
//! relative (an `openat` in a `/proc/self` directory descriptor). Other opens skip it.

use core::sync::atomic::{AtomicU64, Ordering};

use hrt_abi::channel::{ProgramStatus, STATUS_THREADS};

use super::process::PROCESS;
use super::signal::{SIG_DFL, SIG_IGN};

/// The largest address space the program has had since its last exec
/// (`ProgramStatus::vm_peak`): noted wherever it may shrink (`usermem::unmap_with`, brk
/// lowered) and at each publication, so every maximum is seen.
static VM_PEAK: AtomicU64 = AtomicU64::new(0);

/// Notes the address space now for VmPeak (no lock taken).
pub fn note_peak() {
    VM_PEAK.fetch_max(super::calls::info::address_space(), Ordering::Relaxed);
}

/// execve: the new image starts its own peak.
pub fn forget_peak() {
    VM_PEAK.store(0, Ordering::Relaxed);
}

/// Whether an open of `path` (a program pointer) may be of one of the program's own /proc files.
pub fn may_be_proc(path: u64) -> bool {
    super::uaccess::read_cstr(path, 4096).is_ok_and(|p| p.first() != Some(&b'/') || p.starts_with(b"/proc/"))
}

/// Writes the program's status into `to`.
/// Stores a 16-byte name in two words.
fn set_name(to: &[AtomicU64; 2], name: [u8; 16]) {
    for (w, bytes) in to.iter().zip(name.chunks_exact(8)) {
        w.store(u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8])), Ordering::Relaxed);
    }
}

/// The thread an open of `path` (a program pointer) may be about: the last all-digit component
/// of a `/proc` path (`/proc/PID/task/TID/stat`, `/proc/TID/status`), listed first whatever
/// the number of threads (only `STATUS_THREADS` are; a test that waited for its 55 threads to
/// show `S` waited for good).
fn named_thread(path: u64) -> Option<u32> {
    let p = super::uaccess::read_cstr(path, 4096).ok()?;
    p.rsplit(|&b| b == b'/')
        .filter(|c| !c.is_empty() && c.iter().all(u8::is_ascii_digit))
        .find_map(|c| core::str::from_utf8(c).ok()?.parse().ok())
}

/// Where the main stack's environment strings, auxiliary vector and argument strings are
/// (`ProgramStatus::environ`, `auxv`, `args`): with every `publish`, and as soon as the loader
/// has built a stack, since the monitor follows the argument strings from then on (the
/// program's process title on the host, the monitor's `own_title`).
pub fn publish_areas(to: &ProgramStatus) {
    let stack = &super::loader::INITIAL_STACK;
    for (w, v) in to.environ.iter().chain(to.auxv.iter()).chain(to.args.iter()).zip(stack.iter()) {
        w.store(v.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

pub fn publish(to: &ProgramStatus, path: u64) {
    let set = |w: &AtomicU64, v: u64| w.store(v, Ordering::Relaxed);
    set(&to.threads, PROCESS.live_threads.load(Ordering::Relaxed) as u64);
    let (mut ignored, mut caught) = (0, 0);
    {
        let acts = PROCESS.sigactions.lock();
        for sig in 1..65usize {
            match acts[sig][0] {
                SIG_IGN => ignored |= 1 << (sig - 1),
                SIG_DFL => {}
                _ => caught |= 1 << (sig - 1),
            }
        }
    }
    set(&to.ignored, ignored);
    set(&to.caught, caught);
    set(&to.caller, super::process::current_tid() as u64);
    set_name(&to.process_name, *PROCESS.name.lock());
    {
        let s = super::signal::state::SIGNALS.lock();
        set(&to.shared_pending, s.shared.set);
        let mut n = 0;
        let named = named_thread(path);
        let live = || s.threads.iter().filter(|(_, t)| !t.thread.is_null());
        let first = live().filter(|(&tid, _)| Some(tid) == named);
        let others = live().filter(|(&tid, _)| Some(tid) != named);
        for (&tid, t) in first.chain(others).take(STATUS_THREADS) {
            set(&to.tids[n], tid as u64);
            // SAFETY: registered threads are alive (they unregister under this lock first).
            set(&to.blocked[n], unsafe { (*t.thread).sigmask });
            // SAFETY: as above.
            set(&to.seccomp[n], super::seccomp::status_word(unsafe { &*t.thread }));
            // SAFETY: as above.
            for (w, v) in to.affinity[n].iter().zip(unsafe { (*t.thread).affinity() }) {
                set(w, v);
            }
            set(&to.pending[n], t.pending.set);
            // SAFETY: as above.
            let name = super::thread_names::of_locked(unsafe { &*t.thread });
            set_name(&to.names[n], name);
            // SAFETY: as above.
            let state = unsafe { (*t.thread).state.load(Ordering::Relaxed) };
            let waits = matches!(state, crate::sched::thread::BLOCKED | crate::sched::thread::BLOCKING);
            set(&to.states[n], if waits { b'S' } else { b'R' } as u64);
            n += 1;
        }
        set(&to.listed, n as u64);
    }
    set(&to.queued, super::signal::state::PENDING_COUNT.load(Ordering::Relaxed));
    publish_areas(to);
    for (w, l) in to.rlimits.iter().zip(PROCESS.rlimits.lock().iter()) {
        set(&w[0], l.0);
        set(&w[1], l.1);
    }
    let (lo, hi) = super::usermem::mapped_span();
    set(&to.mapped_span[0], lo);
    set(&to.mapped_span[1], hi);
    let size = super::calls::info::address_space();
    set(&to.vm_size, size);
    set(&to.vm_locked, super::locked::total());
    set(&to.vm_peak, VM_PEAK.fetch_max(size, Ordering::Relaxed).max(size));
    to.valid.store(1, Ordering::Release);
}
