//! Which forked children have called execve, for setpgid: Linux refuses to move a child that
//! has exec'd into another group (EACCES), but a forked child's exec under hrt happens in its
//! own VM, so its host process never execs and the host's setpgid would succeed. Every `hrt`
//! of a run shares one page of pids (MAP_SHARED, made before the first fork and inherited by
//! every forked `hrt` below): a child's monitor adds its pid at the program's first exec, its
//! parent's looks it up, and takes it out when it reaps the child (and when it adopts a new
//! child of that pid, in case the old one was reaped where no wait saw it). A full page loses marks:
//! setpgid then succeeds as before, said once on stderr.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, Ordering};

const SLOTS: usize = 4096 / 4;

static TABLE: AtomicPtr<AtomicI32> = AtomicPtr::new(std::ptr::null_mut());
static FULL_SAID: AtomicBool = AtomicBool::new(false);

fn slots() -> Option<&'static [AtomicI32]> {
    let p = TABLE.load(Ordering::Acquire);
    // SAFETY: `init` mapped SLOTS zeroed words there, never unmapped.
    (!p.is_null()).then(|| unsafe { std::slice::from_raw_parts(p as *const AtomicI32, SLOTS) })
}

/// Maps the shared page (the top `hrt` of a run, before the program runs; a forked `hrt`
/// keeps its parent's).
pub fn init() {
    if !TABLE.load(Ordering::Acquire).is_null() {
        return;
    }
    // SAFETY: a fresh anonymous shared mapping; no existing memory is touched.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            SLOTS * 4,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p != libc::MAP_FAILED {
        TABLE.store(p as *mut AtomicI32, Ordering::Release);
    }
}

/// The program in this process has exec'd (`EXEC_COMMIT`).
pub fn mark_self() {
    let Some(slots) = slots() else { return };
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    if slots.iter().any(|s| s.load(Ordering::Acquire) == me) {
        return;
    }
    if slots.iter().any(|s| s.compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire).is_ok()) {
        return;
    }
    if !FULL_SAID.swap(true, Ordering::Relaxed) {
        eprintln!("hrt: too many exec'd processes to track: setpgid on this one will not answer EACCES as Linux would");
    }
}

/// Whether child `pid` has exec'd.
pub fn execd(pid: i32) -> bool {
    pid > 0 && slots().is_some_and(|s| s.iter().any(|s| s.load(Ordering::Acquire) == pid))
}

/// Child `pid` was reaped: its pid may be another process's next.
pub fn forget(pid: i32) {
    if pid <= 0 {
        return;
    }
    if let Some(slots) = slots() {
        for s in slots {
            let _ = s.compare_exchange(pid, 0, Ordering::AcqRel, Ordering::Acquire);
        }
    }
}
