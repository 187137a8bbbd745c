//! Robust futex lists (`set_robust_list`): when a thread ends, every robust mutex it still
//! holds is marked FUTEX_OWNER_DIED and one of its waiters woken, so that the next taker's
//! `pthread_mutex_lock` returns EOWNERDEAD instead of waiting forever, as Linux's
//! `exit_robust_list` does. The list is the program's memory (glibc's
//! `struct robust_list_head`), read with checked accesses: a bad pointer ends the walk
//! silently, as on Linux.

use core::sync::atomic::{AtomicU32, Ordering};

use super::signal::state::SIGNALS;
use super::{futex, shared_files, shared_futex, uaccess};
use crate::sched;

/// Linux's bound on the entries walked (a cyclic or endless list cannot hang an exit).
const ROBUST_LIST_LIMIT: usize = 2048;
const FUTEX_WAITERS: u32 = 0x8000_0000;
const FUTEX_OWNER_DIED: u32 = 0x4000_0000;
const FUTEX_TID_MASK: u32 = 0x3fff_ffff;
const FUTEX_WAKE: u64 = 1;
/// The head's size, which `set_robust_list` requires.
pub const HEAD_SIZE: u64 = 24;

/// Who is woken when a dead owner's mutex had waiters.
#[derive(Clone, Copy, PartialEq)]
enum Wake {
    /// A thread ends, the process lives on: a waiter here or in another process.
    Any,
    /// The whole process ends: only waiters in other processes (on host shared memory) are
    /// left to wake; a thread of this process woken now would run on while the VM stops.
    OtherProcesses,
}

/// `set_robust_list`: the calling thread's list is `head` (0: none).
pub fn register(head: u64) {
    // SAFETY: as in `thread_exits`.
    let t = unsafe { &mut *sched::current() };
    t.robust_list = head;
    heads::set(t.tid, head);
}

/// The calling thread ends (exit, or another thread's execve ends it) or execs: walks its
/// robust list, then forgets it (an exec'd image registers its own).
pub fn thread_exits() {
    // SAFETY: the current thread's record is alive while it runs, and only it changes these
    // fields.
    let t = unsafe { &mut *sched::current() };
    let head = core::mem::take(&mut t.robust_list);
    if head != 0 {
        heads::set(t.tid, 0);
        walk(head, t.tid, Wake::Any);
    }
}

/// A forked child's kernel starts: the table it copied names the parent's threads (whose
/// robust mutexes must never be marked for the child's death).
pub fn forked() {
    heads::clear();
}

/// The program ends (exit_group, a fatal signal): every thread's robust list is walked, the
/// caller's first, as each thread's exit does on Linux, so that robust mutexes the program's
/// threads hold in memory shared with other processes are marked for those processes. Only
/// those marks can be seen once the VM stops: a program without host shared memory (nearly
/// every one) skips the walk, which costs some microseconds a thread.
///
/// The other threads may still be running on other CPUs meanwhile (Linux kills them first): a
/// thread that takes a lock at that very moment can leave it held.
pub fn process_exits() {
    // The monitor's holder walks what the table still has if `hrt` is killed; from here on the
    // kernel does (or nothing needs it).
    heads::clear();
    if !shared_files::any_on_host() {
        return;
    }
    // SAFETY: as in `thread_exits`.
    let me = unsafe { &mut *sched::current() };
    if me.is_user {
        let head = core::mem::take(&mut me.robust_list);
        if head != 0 {
            walk(head, me.tid, Wake::OtherProcesses);
        }
    }
    // One registered thread at a time, without the lock while walking (it reads program memory
    // and may forward a wake-up to the host): the next tid above the last one walked.
    let mut after = 0u32;
    loop {
        let next = {
            let s = SIGNALS.lock();
            let mut others = s.threads.range(after.saturating_add(1)..);
            others.find(|(_, ts)| !ts.thread.is_null() && !core::ptr::eq(ts.thread, me)).map(|(&key, ts)| {
                // SAFETY: a registered thread's record is alive until it unregisters
                // (`thread_exited`), which takes this lock.
                let t = unsafe { &*ts.thread };
                (key, t.tid, t.robust_list)
            })
        };
        let Some((key, tid, head)) = next else { break };
        if head != 0 {
            walk(head, tid, Wake::OtherProcesses);
        }
        if key == u32::MAX {
            break;
        }
        after = key;
    }
}

/// A pointer in the list: the address, and whether it is a PI futex's entry (bit 0).
fn fetch_entry(at: u64) -> Option<(u64, bool)> {
    let v = uaccess::read::<u64>(at).ok()?;
    Some((v & !1, v & 1 != 0))
}

/// Linux's `exit_robust_list` for the list at `head` of thread `tid`.
fn walk(head: u64, tid: u32, wake: Wake) {
    // struct robust_list_head { list.next, futex_offset, list_op_pending }
    let Some((mut entry, mut pi)) = fetch_entry(head) else { return };
    let Ok(offset) = uaccess::read::<i64>(head.wrapping_add(8)) else { return };
    let Some((pending, pending_pi)) = fetch_entry(head.wrapping_add(16)) else { return };
    let mut limit = ROBUST_LIST_LIMIT;
    while entry != head {
        // The next pointer is read before the entry's owner is marked: once marked, another
        // thread may take and reuse the entry.
        let next = fetch_entry(entry);
        // The pending entry may not be linked in yet (or any more): it is handled below.
        if entry != pending && owner_died(entry.wrapping_add(offset as u64), tid, pi, false, wake).is_err() {
            return;
        }
        let Some((n, npi)) = next else { return };
        (entry, pi) = (n, npi);
        limit -= 1;
        if limit == 0 {
            break;
        }
    }
    if pending != 0 {
        let _ = owner_died(pending.wrapping_add(offset as u64), tid, pending_pi, true, wake);
    }
}

/// Linux's `handle_futex_death`: if thread `tid` owns the futex word at `addr`, marks its owner
/// dead (FUTEX_OWNER_DIED, waiters bit kept, tid cleared) and wakes one waiter. Err: the word
/// cannot be used (misaligned, not writable program memory), which ends the walk.
fn owner_died(addr: u64, tid: u32, pi: bool, pending: bool, wake: Wake) -> Result<(), ()> {
    if !addr.is_multiple_of(4) {
        return Err(());
    }
    uaccess::check(addr, 4).and(uaccess::still_there(addr, 4)).map_err(|_| ())?;
    // SAFETY: checked above to be aligned program memory, which stays mapped while the program
    // runs; it is written only once checked writable. The program may change it concurrently,
    // hence the atomic accesses.
    let word = unsafe { &*(addr as *const AtomicU32) };
    let mut val = word.load(Ordering::SeqCst);
    loop {
        let owner = val & FUTEX_TID_MASK;
        // The thread died in the middle of an unlock (the word already released, its waiter
        // not yet woken) or while a woken waiter had still to take the lock: the waiter
        // another would have woken is woken, the word left alone.
        if pending && !pi && owner == 0 {
            wake_one(addr, wake);
            return Ok(());
        }
        if owner != tid {
            return Ok(());
        }
        // Linux's write fault: a word the program may not write ends the walk.
        uaccess::check_write(addr, 4).map_err(|_| ())?;
        let marked = (val & FUTEX_WAITERS) | FUTEX_OWNER_DIED;
        match word.compare_exchange(val, marked, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => break,
            Err(now) => val = now,
        }
    }
    // A PI futex's waiter takes the lock as any other here (`pi_futex`: no hand-over), so
    // it is woken the same way.
    let _ = pi;
    if val & FUTEX_WAITERS != 0 {
        wake_one(addr, wake);
    }
    Ok(())
}

/// Wakes one waiter of the futex word at `addr` as Linux's non-private FUTEX_WAKE (robust
/// mutexes wait without FUTEX_PRIVATE_FLAG): on host shared memory the host's futex too, where
/// other processes wait.
fn wake_one(addr: u64, wake: Wake) {
    let shared = shared_files::on_host(addr);
    match wake {
        Wake::Any if shared => {
            let _ = shared_futex::futex(addr, FUTEX_WAKE, 1, 0, 0, 0, false);
        }
        Wake::Any => {
            futex::wake_address(addr, 1);
        }
        Wake::OtherProcesses if shared => shared_futex::wake_host(addr, 1),
        Wake::OtherProcesses => {}
    }
}

/// The table of the threads' lists the monitor walks if `hrt` is killed before the kernel can
/// (`hrt_abi::robust_heads`; monitor/src/vm/robust_walk.rs).
mod heads {
    use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

    use hrt_abi::robust_heads::{Table, BYTES, ENTRIES};

    fn table() -> Option<&'static Table> {
        let r = crate::bootinfo::get().robust_heads;
        // SAFETY: the monitor placed the table in RAM kept from the kernel's allocator and
        // identity-mapped, for the kernel alone (the program cannot reach it); it outlives every
        // thread. Its words are changed only atomically (below).
        (r.size == BYTES && r.base != 0).then(|| unsafe { &*(r.base as *const Table) })
    }

    fn used(t: &Table) -> &AtomicU64 {
        // SAFETY: an aligned u64 of the table, changed only atomically.
        unsafe { &*(core::ptr::addr_of!(t.used) as *const AtomicU64) }
    }

    fn tid_of(t: &Table, i: usize) -> &AtomicU32 {
        // SAFETY: `i < ENTRIES` (the callers'), an aligned u32 changed only atomically.
        unsafe { &*(core::ptr::addr_of!(t.heads[i].tid) as *const AtomicU32) }
    }

    fn head_of(t: &Table, i: usize) -> &AtomicU64 {
        // SAFETY: as in `tid_of`.
        unsafe { &*(core::ptr::addr_of!(t.heads[i].head) as *const AtomicU64) }
    }

    /// Thread `tid`'s list is `head` now (0: none, its entry freed). The lowest free entry is
    /// taken, so the entries in use stay below `used`; a thread past ENTRIES is not kept.
    pub fn set(tid: u32, head: u64) {
        let Some(t) = table() else { return };
        let n = (used(t).load(Ordering::Acquire) as usize).min(ENTRIES);
        if let Some(i) = (0..n).find(|&i| tid_of(t, i).load(Ordering::Relaxed) == tid) {
            if head == 0 {
                head_of(t, i).store(0, Ordering::Relaxed);
                tid_of(t, i).store(0, Ordering::Release);
            } else {
                head_of(t, i).store(head, Ordering::Release);
            }
            return;
        }
        if head == 0 {
            return;
        }
        for i in 0..ENTRIES {
            if tid_of(t, i).compare_exchange(0, tid, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                head_of(t, i).store(head, Ordering::Release);
                used(t).fetch_max(i as u64 + 1, Ordering::AcqRel);
                return;
            }
        }
    }

    /// Frees every entry.
    pub fn clear() {
        let Some(t) = table() else { return };
        let n = (used(t).swap(0, Ordering::AcqRel) as usize).min(ENTRIES);
        for i in 0..n {
            head_of(t, i).store(0, Ordering::Relaxed);
            tid_of(t, i).store(0, Ordering::Release);
        }
    }
}
