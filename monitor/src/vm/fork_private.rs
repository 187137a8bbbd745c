//! Memory both processes of a fork write at once, copied for the child rather than shared.
//!
//! A fork of the program is a host `fork` of `hrt` (`fork.rs`): every page of guest RAM
//! becomes copy-on-write in both processes, which makes KVM drop the parent's translations of
//! all of it, and under PVM's shadow paging every page touched afterwards costs a fault in each
//! process (the host's copy on a write, then KVM's mapping, one 4 KiB page a fault: KVM maps
//! neighbours only from memory the host maps writable). Some memory both sides use at once:
//! the kernel's static data (its per-CPU records, run queues, locks, counters: the image's data
//! and bss above its shared code), ~50 such faults per fork in each process, and the program's
//! own busy pages (the code the fork returns to, the stack, the TLS, the top of the heap),
//! which the kernel names in `nr::FORK` (bash's subshells: ~250 faults per fork between the
//! two, ~130 of them in code).
//!
//! So those 2 MiB pages are left out of the host's fork (`MADV_DONTFORK`): the parent keeps
//! its pages and their translations, and hands the child a copy made while its vCPUs are
//! stopped for the fork (~0.07 ms per 2 MiB). The child moves each copy into place (`mremap`)
//! before anything reads guest RAM there, and makes it its own (one copy-on-write fault per
//! huge page, which it reuses: the parent lets go of its copies as soon as its `fork` returns)
//! before its vCPUs run. The copies' memory is made ahead, after the previous fork
//! (`prepare_next`): fresh host memory costs 0.1 ms per 2 MiB here, and 4-5 ms where the host's
//! own hypervisor has to back it again (the host reports free memory to it).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};

use crate::error::err;
use crate::error::Result;

use super::memory::GuestRam;

const HUGE: usize = 2 << 20;

/// The copies made for one fork: (copy, place) host addresses of 2 MiB pages.
pub struct Snapshot {
    pages: Vec<(usize, usize)>,
}

/// Copies whose host memory is made already, for the next fork (host addresses).
static READY: Mutex<Vec<usize>> = Mutex::new(Vec::new());
/// The pages of guest RAM left out of this process's forks now (host addresses).
static KEPT_OUT: Mutex<Vec<usize>> = Mutex::new(Vec::new());
/// How many pages the last fork would have copied: `prepare_next` makes that many ready.
static WANTED: AtomicUsize = AtomicUsize::new(0);

/// Marks the 2 MiB page of guest RAM at host address `place` as left out of the host's forks
/// (`out`) or copied by them as usual.
fn keep_out(place: usize, out: bool) -> bool {
    let advice = if out { libc::MADV_DONTFORK } else { libc::MADV_DOFORK };
    // SAFETY: advice on our own guest-RAM mapping; it changes only what a fork copies.
    unsafe { libc::madvise(place as *mut libc::c_void, HUGE, advice) == 0 }
}

fn unmap(copy: usize) {
    // SAFETY: a copy's mapping, ours alone, used by nothing else.
    unsafe { libc::munmap(copy as *mut libc::c_void, HUGE) };
}

/// Before a fork, with the guest's CPUs stopped: leaves the 2 MiB pages of guest `ranges`
/// (2 MiB aligned) out of it and copies them for the child. The first range's pages are
/// copied in any case, the others only into memory made ahead (`prepare_next`): a fresh 2 MiB
/// page made here can cost more than the faults its copy saves. A page that is not RAM or is
/// not copied is forked as any other memory, and so is one an earlier fork left out that
/// `ranges` no longer has.
pub fn snapshot(ram: &GuestRam, ranges: &[(u64, u64)]) -> Snapshot {
    let mut places: Vec<(usize, bool)> = Vec::new();
    for (i, &(start, end)) in ranges.iter().enumerate() {
        let mut page = start;
        while page.is_multiple_of(HUGE as u64) && page < end {
            if let Some(host) = ram.host_ptr(page, HUGE as u64) {
                if !places.iter().any(|&(p, _)| p == host as usize) {
                    places.push((host as usize, i == 0));
                }
            }
            page += HUGE as u64;
        }
    }
    WANTED.store(places.len(), Ordering::Relaxed);
    let mut kept = KEPT_OUT.lock().unwrap_or_else(|e| e.into_inner());
    for &place in kept.iter().filter(|&&p| !places.iter().any(|&(q, _)| q == p)) {
        keep_out(place, false);
    }
    kept.clear();
    let mut ready = READY.lock().unwrap_or_else(|e| e.into_inner());
    let mut pages = Vec::new();
    for (place, required) in places {
        let made = ready.pop().or_else(|| if required { fresh(ram.huge_pages(), false) } else { None });
        let Some(copy) = made else {
            keep_out(place, false);
            continue;
        };
        if !keep_out(place, true) {
            keep_out(place, false);
            unmap(copy);
            continue;
        }
        // SAFETY: both are 2 MiB of our own mappings; the guest's CPUs are stopped.
        unsafe { std::ptr::copy_nonoverlapping(place as *const u8, copy as *mut u8, HUGE) };
        kept.push(place);
        pages.push((copy, place));
    }
    Snapshot { pages }
}

/// After a fork, on the fork thread: the next fork's copies get their host memory, as many as
/// this one would have made, on a thread of their own (a fresh page took 4.5 ms in some forks
/// here, and a fork waiting behind it took as long).
pub fn prepare_next(ram: &GuestRam) {
    let huge = ram.huge_pages();
    let mut maker = MAKER.lock().unwrap_or_else(|e| e.into_inner());
    if maker.is_none() {
        *maker = start_maker();
    }
    if maker.as_ref().is_none_or(|tx| tx.send(huge).is_err()) {
        make_ready(huge);
    }
}

/// The thread that makes copies ahead, told the RAM's page size each time.
static MAKER: Mutex<Option<mpsc::Sender<bool>>> = Mutex::new(None);

fn start_maker() -> Option<mpsc::Sender<bool>> {
    let (tx, rx) = mpsc::channel::<bool>();
    // No fork until the thread runs its own code (`fork::THREAD_STARTS`). Only the fork thread
    // forks, and it is here, but it forks next as soon as this returns.
    let starting = super::fork::THREAD_STARTS.lock().unwrap_or_else(|e| e.into_inner());
    let (up, is_up) = mpsc::channel::<()>();
    let started = std::thread::Builder::new().name("hrt-fork-copies".into()).stack_size(64 << 10).spawn(move || {
        drop(up);
        // Only where a host CPU has nothing else to run: right after a fork the child's start
        // needs both of this host's CPUs, and a fresh page took the host up to 4.5 ms to make.
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: sets this thread's own policy (pid 0); failure leaves the default.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
        while let Ok(huge) = rx.recv() {
            make_ready(huge);
        }
    });
    // Disconnected once the thread runs (or it was never made).
    let _ = is_up.recv();
    drop(starting);
    started.ok().map(|_| tx)
}

/// Makes copies until `WANTED` are ready.
fn make_ready(huge: bool) {
    while READY.lock().unwrap_or_else(|e| e.into_inner()).len() < WANTED.load(Ordering::Relaxed) {
        // Made without the lock: a fork may take what is ready meanwhile.
        let Some(copy) = fresh(huge, true) else { return };
        READY.lock().unwrap_or_else(|e| e.into_inner()).push(copy);
    }
}

/// This module's global locks, taken without waiting for a fork (`vm::fork`): false if
/// another thread holds one (the copy maker, pushing what it made).
pub(crate) fn hold_for_fork(held: &mut super::fork::Held) -> bool {
    super::fork::try_hold(held, &READY)
}

/// A fresh private 2 MiB mapping at a 2 MiB boundary, with huge host pages as guest RAM has
/// them (`huge`), its host memory made at once if `made`.
fn fresh(huge: bool, made: bool) -> Option<usize> {
    // SAFETY: a fresh anonymous mapping, trimmed to the aligned part below.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            2 * HUGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return None;
    }
    let at = (raw as usize).next_multiple_of(HUGE);
    let (head, tail) = (at - raw as usize, raw as usize + HUGE - at);
    // SAFETY: trims the parts of our fresh mapping outside `[at, at + HUGE)`; advice on it
    // (failures only cost speed: small host pages, or memory made at the copy).
    unsafe {
        if head > 0 {
            libc::munmap(raw, head);
        }
        if tail > 0 {
            libc::munmap((at + HUGE) as *mut libc::c_void, tail);
        }
        let pages = if huge { libc::MADV_HUGEPAGE } else { libc::MADV_NOHUGEPAGE };
        libc::madvise(at as *mut libc::c_void, HUGE, pages);
        libc::madvise(at as *mut libc::c_void, HUGE, libc::MADV_DONTDUMP);
        if made {
            libc::madvise(at as *mut libc::c_void, HUGE, libc::MADV_POPULATE_WRITE);
        }
    }
    Some(at)
}

impl Snapshot {
    /// In the parent once the fork is made (or failed): the copies are the child's alone.
    pub fn release(self) {
        for (copy, _) in self.pages {
            unmap(copy);
        }
    }

    /// In the child, first of all: each copy takes its page's place (which the fork left
    /// unmapped here) and stays left out of this process's own forks. Their pages are still
    /// the parent's copy-on-write until `Placed::own`.
    pub fn install(self) -> Result<Placed> {
        for &(copy, place) in &self.pages {
            // SAFETY: moves our own copy over the hole the fork left in guest RAM (same length).
            let at = unsafe {
                libc::mremap(
                    copy as *mut libc::c_void,
                    HUGE,
                    HUGE,
                    libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                    place as *mut libc::c_void,
                )
            };
            if at as usize != place {
                return Err(err!("cannot place a copy of guest memory: {}", std::io::Error::last_os_error()));
            }
            keep_out(place, true);
        }
        // This process's own forks start from what its parent's last one kept out, with no
        // copies made ahead (the parent's were taken) and no maker (threads are not copied).
        *KEPT_OUT.lock().unwrap_or_else(|e| e.into_inner()) = self.pages.iter().map(|&(_, place)| place).collect();
        READY.lock().unwrap_or_else(|e| e.into_inner()).clear();
        // The parent's maker's sender is leaked, not dropped: a drop disconnects the channel
        // under its waker lock, which the parent's maker thread (not copied) may have held
        // in its `recv` when the fork came; the child then waited for it forever (1 run in
        // ~230 of tests/programs/hostile/signal_before_child_end.c).
        std::mem::forget(MAKER.lock().unwrap_or_else(|e| e.into_inner()).take());
        Ok(Placed { places: self.pages.into_iter().map(|(_, place)| place).collect() })
    }
}

/// The copies in their places in the child.
pub struct Placed {
    places: Vec<usize>,
}

impl Placed {
    /// Before the child's vCPUs run, as late as possible: each copy's pages become this
    /// process's own in one fault, which reuses the huge page once the parent has let go of
    /// it (if it has not yet, the host copies what is written, as for any forked memory).
    pub fn own(self) {
        for place in self.places {
            // SAFETY: advice on guest RAM of ours; it changes no byte.
            unsafe { libc::madvise(place as *mut libc::c_void, HUGE, libc::MADV_POPULATE_WRITE) };
        }
    }
}
