//! Robust futex lists of a program whose `hrt` was killed (SIGKILL: no kernel code ran at its
//! end). Linux's exit marks every robust mutex a dying thread holds FUTEX_OWNER_DIED and wakes
//! a waiter, so that a process sharing the mutex gets EOWNERDEAD instead of waiting forever
//! (a parent's `pthread_mutex_lock` on a mutex its SIGKILLed child held). The kernel does that
//! itself on every other end (kernel/src/linux/robust.rs) and then empties its table of lists
//! (`hrt_abi::robust_heads`); what is left in the table when `hrt` is gone belongs to threads
//! that died with it. The late-teardown holder (late_teardown.rs), which keeps `hrt`'s memory
//! after it, walks those lists here before it lets the memory go.
//!
//! The holder runs on a small stack with `hrt`'s TLS, after every thread of `hrt` died at an
//! unknown point: this code takes no lock, allocates nothing and cannot panic (no indexing, no
//! unchecked arithmetic); it reads only the program's pool of guest RAM, everything from the
//! table on being the program's and so untrusted.

use std::collections::BTreeMap;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use hrt_abi::robust_heads::{Head, Table, ENTRIES};
use hrt_abi::MAX_RAM_RANGES;

/// Linux's bound on the entries walked per list.
const ROBUST_LIST_LIMIT: usize = 2048;
const FUTEX_WAITERS: u32 = 0x8000_0000;
const FUTEX_OWNER_DIED: u32 = 0x4000_0000;
const FUTEX_TID_MASK: u32 = 0x3fff_ffff;

/// Linux marks a dying thread's robust mutexes before its parent hears of the death, so a
/// parent's `pthread_mutex_trylock` after `waitpid` sees EOWNERDEAD. Here the holder walks once
/// `hrt` is gone, when the parent `hrt` may already have reaped it: each forked child gets a
/// pipe whose write end only its holder keeps and closes once it has walked, and the parent's
/// wait for a child killed by a signal waits for that end of file (at most `WALK_WAIT_MS`)
/// before it answers the program.
const WALK_WAIT_MS: i32 = 1000;

/// In a forked child's `hrt`, until `late_teardown::start` takes it: the pipe's write end.
static WALKED_FD: AtomicI32 = AtomicI32::new(-1);
/// In a parent `hrt`: each forked child's read end, by its pid.
static CHILDREN: Mutex<BTreeMap<i32, OwnedFd>> = Mutex::new(BTreeMap::new());
/// Children kept before the parent looks for ones reaped without it (SIGCHLD ignored).
const CHILDREN_PRUNED_PAST: usize = 64;

/// Before the host fork of a child `hrt`: the pipe, close-on-exec (read end, write end).
pub fn pipe_for_fork() -> Option<(RawFd, RawFd)> {
    let mut fds = [-1; 2];
    // SAFETY: pipe2 writes two descriptors into our array.
    (unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == 0).then_some((fds[0], fds[1]))
}

/// In the new child `hrt`: keeps the write end for the holder (`late_teardown::start`); the
/// read end is closed with the parent's other descriptors.
pub fn forked_child(write_end: RawFd) {
    WALKED_FD.store(write_end, Ordering::SeqCst);
}

/// The write end to keep across the child's closing of inherited descriptors.
pub fn walked_descriptor() -> Option<RawFd> {
    Some(WALKED_FD.load(Ordering::SeqCst)).filter(|&fd| fd >= 0)
}

/// `late_teardown::start`: the write end, -1 if none; the caller closes it.
pub fn take_walked_descriptor() -> RawFd {
    WALKED_FD.swap(-1, Ordering::SeqCst)
}

/// In the parent after the host fork (`pid` < 0: it failed): keeps the read end by the
/// child's pid, closes the write end.
pub fn forked_parent(pid: i64, (read_end, write_end): (RawFd, RawFd)) {
    // SAFETY: both ends are ours (`pipe_for_fork`), each closed exactly once (OwnedFd).
    let (read_end, _) = unsafe { (OwnedFd::from_raw_fd(read_end), OwnedFd::from_raw_fd(write_end)) };
    if pid <= 0 {
        return;
    }
    let mut children = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
    if children.len() >= CHILDREN_PRUNED_PAST {
        // Children the host reaped without a wait (SIGCHLD ignored) or waited for otherwise.
        children.retain(|&pid, _| {
            // SAFETY: signal 0 checks that the process exists.
            unsafe { libc::kill(pid, 0) == 0 }
        });
    }
    children.insert(pid as i32, read_end);
}

/// The parent's wait took child `pid`; `killed`: a signal ended it; `execd`: it had become a
/// host program, whose start ended its `hrt`'s use of the memory (late_teardown.rs,
/// `exec_pipe`). Then waits for its holder's walk and unmapping of the host shared memory
/// (see `WALK_WAIT_MS`; done long before for an exec) before the wait answers.
pub fn child_reaped(pid: i32, killed: bool, execd: bool) {
    let Some(read_end) = CHILDREN.lock().unwrap_or_else(|e| e.into_inner()).remove(&pid) else { return };
    if !killed && !execd {
        // Its own `hrt` let go of the lists and the shared memory before it exited.
        return;
    }
    let mut pfd = libc::pollfd { fd: std::os::fd::AsRawFd::as_raw_fd(&read_end), events: libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd of ours; end of file (every write end closed) makes it ready.
    unsafe { libc::poll(&mut pfd, 1, WALK_WAIT_MS) };
}

/// Where the walk finds things, noted at start (a forked child's `hrt` inherits them: its
/// memory is at the same host addresses). TABLE 0: nothing to walk.
static TABLE: AtomicU64 = AtomicU64::new(0);
/// The program's pool, guest-physical `[lo, hi)`: the only memory the lists may point to.
static POOL: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];
/// Guest RAM ranges: guest base, size, host base.
static RAM: [[AtomicU64; 3]; MAX_RAM_RANGES] = [const { [const { AtomicU64::new(0) }; 3] }; MAX_RAM_RANGES];

/// Notes the table the kernel keeps at host address `table`, the program's pool and guest
/// RAM's host mappings (`(guest base, size, host base)`).
pub fn note(table: *mut u8, pool: (u64, u64), ram: &[(u64, u64, *mut u8)]) {
    for (slot, &(base, size, host)) in RAM.iter().zip(ram) {
        slot[0].store(base, Ordering::Relaxed);
        slot[1].store(size, Ordering::Relaxed);
        slot[2].store(host as u64, Ordering::Relaxed);
    }
    POOL[0].store(pool.0, Ordering::Relaxed);
    POOL[1].store(pool.1, Ordering::Relaxed);
    TABLE.store(table as u64, Ordering::Release);
}

/// The host address of the program's `len` bytes at guest `addr`, aligned to `len`, if they
/// lie in its pool and in one RAM range.
fn host(addr: u64, len: u64) -> Option<u64> {
    let end = addr.checked_add(len)?;
    if !addr.is_multiple_of(len) || addr < POOL[0].load(Ordering::Relaxed) || end > POOL[1].load(Ordering::Relaxed) {
        return None;
    }
    RAM.iter().find_map(|r| {
        let (base, size, host) =
            (r[0].load(Ordering::Relaxed), r[1].load(Ordering::Relaxed), r[2].load(Ordering::Relaxed));
        (host != 0 && addr >= base && end <= base.checked_add(size)?).then(|| host + (addr - base))
    })
}

fn read_u64(addr: u64) -> Option<u64> {
    let h = host(addr, 8)?;
    // SAFETY: `host` checked that the 8 aligned bytes are guest RAM, mapped for the life of
    // this memory (the holder keeps it); the program's threads are gone, but another process
    // may share the page, hence the atomic read.
    Some(unsafe { &*(h as *const AtomicU64) }.load(Ordering::SeqCst))
}

/// Walks every list left in the table (the holder, `hrt` gone), then empties the table.
pub fn walk_left_lists() {
    let table = TABLE.load(Ordering::Acquire);
    if table == 0 {
        return;
    }
    // SAFETY: the monitor placed the table in guest RAM, mapped for the life of this memory;
    // the kernel that wrote it is gone. Its contents are the program's: only `used` and the
    // entries below it are read, `used` bounded by ENTRIES.
    let t = table as *mut Table;
    // SAFETY: as above.
    let used = (unsafe { std::ptr::addr_of!((*t).used).read_volatile() } as usize).min(ENTRIES);
    for i in 0..used {
        // SAFETY: `i < ENTRIES`, inside the table.
        let entry = unsafe { std::ptr::addr_of_mut!((*t).heads).cast::<Head>().add(i) };
        // SAFETY: as above.
        let Head { tid, head, .. } = unsafe { entry.read_volatile() };
        if tid != 0 && head != 0 {
            walk(head, tid);
        }
        // SAFETY: as above.
        unsafe { entry.write_volatile(Head { tid: 0, _pad: 0, head: 0 }) };
    }
}

fn entry_at(at: u64) -> Option<(u64, bool)> {
    let v = read_u64(at)?;
    Some((v & !1, v & 1 != 0))
}

/// Linux's `exit_robust_list` for the list at `head` of dead thread `tid`.
fn walk(head: u64, tid: u32) {
    // struct robust_list_head { list.next, futex_offset, list_op_pending }
    let Some((mut entry, _)) = entry_at(head) else { return };
    let Some(offset) = head.checked_add(8).and_then(read_u64) else { return };
    let Some((pending, pending_pi)) = head.checked_add(16).and_then(entry_at) else { return };
    let mut limit = ROBUST_LIST_LIMIT;
    while entry != head && limit > 0 {
        let next = entry_at(entry);
        if entry != pending && owner_died(entry.wrapping_add(offset), tid, false, false).is_err() {
            return;
        }
        let Some((n, _)) = next else { return };
        entry = n;
        limit -= 1;
    }
    if pending != 0 {
        let _ = owner_died(pending.wrapping_add(offset), tid, pending_pi, true);
    }
}

/// Linux's `handle_futex_death` (see kernel/src/linux/robust.rs): marks the word at `addr` if
/// `tid` owns it and wakes one waiter, on the host, where other processes wait on shared memory.
fn owner_died(addr: u64, tid: u32, pi: bool, pending: bool) -> Result<(), ()> {
    let h = host(addr, 4).ok_or(())?;
    // SAFETY: `host` checked the 4 aligned bytes are guest RAM (see `read_u64`).
    let word = unsafe { &*(h as *const AtomicU32) };
    let mut val = word.load(Ordering::SeqCst);
    loop {
        let owner = val & FUTEX_TID_MASK;
        if pending && !pi && owner == 0 {
            wake_one(h);
            return Ok(());
        }
        if owner != tid {
            return Ok(());
        }
        let marked = (val & FUTEX_WAITERS) | FUTEX_OWNER_DIED;
        match word.compare_exchange(val, marked, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => break,
            Err(now) => val = now,
        }
    }
    if val & FUTEX_WAITERS != 0 {
        wake_one(h);
    }
    Ok(())
}

/// FUTEX_WAKE of one waiter, not private: waiters in other processes on a shared page.
fn wake_one(host: u64) {
    // SAFETY: FUTEX_WAKE reads nothing but the address's identity.
    unsafe { crate::raw_sys::syscall6(libc::SYS_futex, [host, libc::FUTEX_WAKE as u64, 1, 0, 0, 0]) };
}
