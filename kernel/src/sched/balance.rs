//! Idle CPUs take waiting threads from busy ones. Threads are placed once, on the least loaded
//! CPU when they are made (`thread::pick_cpu`), which counts the threads each CPU holds, not
//! what they do: a program's main thread that makes two workers on two CPUs and then waits
//! for them in `pthread_join` leaves its CPU idle while the workers take turns on the other
//! (`_par_sys 2`, two threads of open+fstat+read+close at `--cpus 2`: 237 us per round against
//! 15 us for one thread, every answer an interrupt through emulated ring 0).
//!
//! A thread woken on a CPU that runs another is offered to an idle CPU (`offer`), and an idle
//! CPU that polls looks at the others' run queues (`look`, for threads preempted there); either
//! asks one thread that waits behind a running one to move to that CPU (`Thread::take_to`).
//! The thread moves itself (`move_if_taken`) where it is at the program's edge: the end of the
//! system call it is in or blocked in, an interrupt of its program code, its start; nothing of
//! another CPU's is touched but the queue's lock. Only threads nobody placed: a program's
//! threads without a CPU mask, not put on a CPU by name (the main thread, a packed or masked
//! thread: `thread::pick_cpu`) nor by the kernel's OpenMP runtime (`keep_placed`); and only
//! between the CPUs threads are placed on (`placement_cpus`: the packed ones when vCPUs
//! outnumber host CPUs).

use core::sync::atomic::{AtomicU64, Ordering};

use hrt_abi::MAX_CPUS;

use super::thread::{Thread, NO_MOVE, READY};

/// Per CPU: when it last asked a thread to move to it (TSC), so that it asks for one at a
/// time: the thread moves only once its own CPU runs it again.
static LAST_ASK: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];

/// How long an idle CPU waits for the thread it asked for before it asks for another.
const ASK_EVERY_NS: u64 = 200_000;

/// Per CPU: when its idle loop last took another CPU's queue lock to look (TSC).
static LAST_LOOK: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];

/// How often an idle CPU takes another's queue lock at most (queued threads that may not move,
/// the kernel OpenMP runtime's, would otherwise have the busy CPU's lock taken on every turn
/// of the idle loop).
const LOOK_EVERY_NS: u64 = 20_000;

/// Whether `t` may be asked to move to CPU `to`.
fn movable(t: &Thread, to: usize) -> bool {
    let mask = t.affinity();
    t.is_user
        && !t.placed.load(Ordering::Relaxed)
        && t.state.load(Ordering::SeqCst) == READY
        && t.move_to.load(Ordering::SeqCst) == NO_MOVE
        && t.take_to.load(Ordering::SeqCst) == NO_MOVE
        && (mask == [0; 4] || mask[to / 64] & (1 << (to % 64)) != 0)
}

/// The idle loop's look (CPU `me`, nothing to run): asks a thread waiting on a busy CPU to
/// move here.
pub(super) fn look(me: usize) {
    let usable = super::placement_cpus();
    if usable < 2 || me >= usable {
        return;
    }
    let now = crate::time::ticks();
    if now.wrapping_sub(LAST_ASK[me].load(Ordering::Relaxed)) < crate::time::ns_to_ticks(ASK_EVERY_NS) {
        return;
    }
    for c in (0..usable).filter(|&c| c != me) {
        let s = super::on_cpu(c);
        // A CPU that runs its idle thread takes its queued threads itself.
        if s.runq_len.load(Ordering::SeqCst) == 0 || s.current.load(Ordering::SeqCst) == s.idle.load(Ordering::Relaxed)
        {
            continue;
        }
        if now.wrapping_sub(LAST_LOOK[me].load(Ordering::Relaxed)) < crate::time::ns_to_ticks(LOOK_EVERY_NS) {
            return;
        }
        LAST_LOOK[me].store(now, Ordering::Relaxed);
        let q = s.runq.lock();
        // SAFETY: queued threads are live records; the queue's lock keeps them queued.
        let asked = q.find(|t| unsafe { movable(&*t, me) }).is_some_and(|t| {
            // SAFETY: as above.
            unsafe { (*t).take_to.compare_exchange(NO_MOVE, me, Ordering::SeqCst, Ordering::SeqCst).is_ok() }
        });
        drop(q);
        if asked {
            LAST_ASK[me].store(now, Ordering::Relaxed);
            return;
        }
    }
}

/// Thread `t`, just queued on CPU `busy` behind its running thread after a wait, is asked to
/// move to a CPU that runs nothing, if one does (a halted one is woken when it arrives).
pub(super) fn offer(t: &Thread, busy: usize) {
    let usable = super::placement_cpus();
    if usable < 2 || busy >= usable || !t.is_user || t.placed.load(Ordering::Relaxed) {
        return;
    }
    let idle = |c: usize| {
        let s = super::on_cpu(c);
        s.current.load(Ordering::SeqCst) == s.idle.load(Ordering::Relaxed) && s.runq_len.load(Ordering::SeqCst) == 0
    };
    let now = crate::time::ticks();
    let free =
        |c: usize| now.wrapping_sub(LAST_ASK[c].load(Ordering::Relaxed)) >= crate::time::ns_to_ticks(ASK_EVERY_NS);
    // One thread at a time per idle CPU (threads woken together would all pick the same one).
    if let Some(to) = (0..usable).find(|&c| c != busy && free(c) && movable(t, c) && idle(c)) {
        if t.take_to.compare_exchange(NO_MOVE, to, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            LAST_ASK[to].store(now, Ordering::Relaxed);
        }
    }
}

/// Per CPU: when it last sent a thread whose turn ended to a less crowded CPU (TSC).
static LAST_SPREAD: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];

/// How often a crowded CPU sends a thread away at most: a thread moves every few of its
/// CPU's turns (the quantum is 10 ms), as Linux's balancing of busy CPUs moves one now and
/// then, and a thread's cache stays warm in between.
const SPREAD_EVERY_NS: u64 = 30_000_000;

/// Turns a thread has on a crowded CPU before it may be the one sent away.
const MOVE_AFTER_TURNS: u32 = 2;

/// An interrupt of program code ended the current thread's turn on CPU `me`, where more
/// threads are ready than on another CPU: the thread continues its next turn there. Threads
/// are placed once and idle CPUs take waiting ones (`look`, `offer`), but between busy CPUs
/// nothing moved them: threads that share a crowded CPU with one they wait for never ran
/// beside it (crossbeam-deque's `fifo::no_starvation`, 8 spinning stealers and a spinning
/// pusher on 2 vCPUs: the stealers on the pusher's vCPU never took an item, for good).
/// With more threads than CPUs they now take turns on every CPU, as under Linux.
pub fn spread_if_crowded(me: usize) {
    if super::on_cpu(me).turn_over() {
        spread(me);
    }
}

/// The current thread on CPU `me` yields its turn by itself (a rewritten spin-wait loop's
/// round, `linux::spin_sites`, whose turns end without the interrupt `spread_if_crowded`
/// waits for): as there, it may continue on a less crowded CPU. Returns whether it moved
/// (then it already gave this CPU to the next thread).
pub fn spread_on_yield(me: usize) -> bool {
    spread(me)
}

fn spread(me: usize) -> bool {
    let usable = super::placement_cpus();
    if usable < 2 || me >= usable {
        return false;
    }
    let s = super::on_cpu(me);
    let waiting = s.runq_len.load(Ordering::SeqCst);
    if waiting == 0 {
        return false;
    }
    // SAFETY: the current thread's record is alive while it runs, and only it changes
    // `crowded_turns`.
    let t = unsafe { &mut *super::current() };
    let mask = t.affinity();
    let allowed = |c: usize| mask == [0; 4] || mask[c / 64] & (1 << (c % 64)) != 0;
    if !t.is_user
        || t.placed.load(Ordering::Relaxed) && !t.packed
        || t.move_to.load(Ordering::SeqCst) != NO_MOVE
        || t.take_to.load(Ordering::SeqCst) != NO_MOVE
    {
        return false;
    }
    let load = |c: usize| {
        let o = super::on_cpu(c);
        let running = o.current.load(Ordering::SeqCst) != o.idle.load(Ordering::Relaxed);
        o.runq_len.load(Ordering::SeqCst) + usize::from(running)
    };
    let here = waiting + 1;
    let target = (0..usable)
        .filter(|&c| c != me && allowed(c) && !crate::cpu::is_dormant(c))
        .map(|c| (load(c), c))
        .min()
        .filter(|&(l, _)| l < here);
    let Some((_, to)) = target else { return false };
    // The one that moves is one that had turns here already: the moves go round all of them
    // (the thread whose turn happens to end when one is due would otherwise often be the same).
    t.crowded_turns = t.crowded_turns.saturating_add(1);
    let now = crate::time::ticks();
    if t.crowded_turns < MOVE_AFTER_TURNS
        || now.wrapping_sub(LAST_SPREAD[me].load(Ordering::Relaxed)) < crate::time::ns_to_ticks(SPREAD_EVERY_NS)
    {
        return false;
    }
    LAST_SPREAD[me].store(now, Ordering::Relaxed);
    t.crowded_turns = 0;
    super::migrate_current(to);
    true
}

/// Moves the current thread to the CPU that asked for it (`look`, `offer`), if one did and the
/// thread may still go there. Called only at the program's edge: the end of a system call, the
/// start of a thread, an interrupt of program code.
pub fn move_if_taken() {
    // SAFETY: the current thread's record is alive while it runs.
    let t = unsafe { &*super::current() };
    if t.take_to.load(Ordering::Relaxed) == NO_MOVE {
        return;
    }
    let to = t.take_to.swap(NO_MOVE, Ordering::SeqCst);
    let mask = t.affinity();
    let allowed = mask == [0; 4] || mask[to / 64] & (1 << (to % 64)) != 0;
    if to < super::placement_cpus()
        && allowed
        && !t.placed.load(Ordering::Relaxed)
        && t.move_to.load(Ordering::SeqCst) == NO_MOVE
    {
        super::migrate_current(to);
    }
}

/// Marks the current thread as placed where it is: idle CPUs do not take it (the kernel's
/// OpenMP runtime puts its workers on CPUs of its choosing).
pub fn keep_placed() {
    // SAFETY: the current thread's record is alive while it runs; only it writes `packed`.
    unsafe {
        (*super::current()).placed.store(true, Ordering::Relaxed);
        (*super::current()).packed = false;
    }
}
