//! The guest side of the forwarding channel (`hrt_abi::channel`): a forwarded system call is
//! written into a slot of memory the monitor polls, instead of leaving the VM. The caller spins
//! briefly for the answer and then sleeps in the scheduler, so its CPU runs other threads while
//! the host performs a slow call (a read from a pipe or terminal); the answer wakes it from this
//! CPU's idle loop, which polls the slots of its sleepers, or from the completion interrupt the
//! monitor sends when the CPU is busy or halted.

use core::ptr::null_mut;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use alloc::vec::Vec;
use linux_raw_sys::general::{
    __NR_access, __NR_chdir, __NR_faccessat, __NR_faccessat2, __NR_fcntl, __NR_getxattr, __NR_lstat,
    __NR_name_to_handle_at, __NR_newfstatat, __NR_open, __NR_openat, __NR_openat2, __NR_preadv, __NR_preadv2,
    __NR_readlink, __NR_readlinkat, __NR_readv, __NR_recvmsg, __NR_stat, __NR_statx,
};

use hrt_abi::channel::{
    Channel, COMPLETION_VECTOR, DONE, FILES_SHRANK_VECTOR, FREE, HOST_SIGNAL_VECTOR, NO_SLEEPER, SLOTS, SUBMITTED,
};
use hrt_abi::MAX_CPUS;

use crate::sched::thread::{Thread, BLOCKING, RUNNING};

/// The channel (kernel pointer), null until `init` has registered it with the monitor.
static CHANNEL: AtomicPtr<Channel> = AtomicPtr::new(null_mut());
/// Slots in use (ours; the monitor sees only `state`).
static TAKEN: [AtomicU64; SLOTS / 64] = [const { AtomicU64::new(0) }; SLOTS / 64];
/// Per slot: the calls it has finished (`call`), so that memory unmapped while its call was in
/// flight (`in_flight_touching`) knows when the monitor is done with it.
static FINISHED: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
/// The thread asleep on each slot, if any; whoever swaps it out wakes it.
static SLEEPER: [AtomicPtr<Thread>; SLOTS] = [const { AtomicPtr::new(null_mut()) }; SLOTS];
/// Per CPU: the slots whose sleepers belong to it (what its idle loop and interrupt scan).
static SLEEPING_ON: [[AtomicU64; SLOTS / 64]; MAX_CPUS] =
    [const { [const { AtomicU64::new(0) }; SLOTS / 64] }; MAX_CPUS];
/// Per CPU: how many of its threads sleep on a slot (the idle loop's fast check).
static SLEEPERS: [AtomicUsize; MAX_CPUS] = [const { AtomicUsize::new(0) }; MAX_CPUS];

/// How long a caller spins for its answer before it sleeps: long enough for a fast host call
/// served by a polling service thread (a few microseconds), short enough that a slow call lets
/// the CPU run something else. Shorter when other threads wait for this CPU.
const SPIN_NS: u64 = 50_000;
const SPIN_NS_CONTENDED: u64 = 5_000;

/// Slots whose call a caller waiting for a slot asked to give it up (`evict_one`).
static EVICT: [AtomicU64; SLOTS / 64] = [const { AtomicU64::new(0) }; SLOTS / 64];
/// Callers waiting for a slot take turns (`take_slot`): tickets handed out and the turn now,
/// for new calls and for calls made again after an eviction (which wait for the new ones).
static LINES: [Line; 2] = [const { Line { next: AtomicU64::new(0), turn: AtomicU64::new(0) } }; 2];
const NEW: usize = 0;
const AGAIN: usize = 1;

#[repr(align(64))]
struct Line {
    next: AtomicU64,
    turn: AtomicU64,
}

impl Line {
    fn empty(&self) -> bool {
        self.next.load(Ordering::Relaxed) == self.turn.load(Ordering::Relaxed)
    }
}
/// Where the next search for a call to evict starts.
static EVICT_CURSOR: AtomicUsize = AtomicUsize::new(0);
/// How long the first waiting caller waits for a free slot before it evicts a blocked call:
/// a new call, and one made again (which likely blocks again).
const EVICT_AFTER_NS: [u64; 2] = [200_000, 1_000_000];
/// Calls evicted from their slots (`-v`).
static EVICTED: AtomicU64 = AtomicU64::new(0);

/// Round trips and how many ended asleep (`-v` prints them at exit).
static CALLS: AtomicU64 = AtomicU64::new(0);
static SLEPT: AtomicU64 = AtomicU64::new(0);
/// Doorbells rung (VM exits).
static RUNG: AtomicU64 = AtomicU64::new(0);
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Allocates the channel and registers it with the monitor; forwarded calls keep the hypercall
/// if the monitor declines (or `--no-channel`).
pub fn init() {
    let boot = crate::bootinfo::get();
    if boot.flags & hrt_abi::flags::NO_CHANNEL != 0 {
        return;
    }
    let bytes = core::mem::size_of::<Channel>();
    let placed = boot.channel;
    let phys = if placed.size == bytes as u64 {
        // The monitor's placement (`BootInfo::channel`): zero, and served already.
        placed.base
    } else {
        let order = crate::mem::order_for(bytes);
        let Some(phys) = crate::mem::alloc_pages(order, None) else {
            kprintln!("hrt: no memory for the forwarding channel; forwarded calls use hypercalls");
            return;
        };
        super::usermem::zero(phys, bytes as u64);
        if crate::arch::hypercall::call(hrt_abi::nr::CHANNEL, &[phys, bytes as u64]) != 0 {
            crate::mem::free_pages(phys, order);
            return;
        }
        phys
    };
    crate::arch::traps::register(COMPLETION_VECTOR, |_| reap());
    crate::arch::traps::register(HOST_SIGNAL_VECTOR, |_| host_signals());
    crate::arch::traps::register(FILES_SHRANK_VECTOR, |_| files_shrank());
    crate::sched::set_idle_hook(idle_hook);
    crate::sched::set_halt_hook(halt_hook);
    CHANNEL.store(crate::mem::phys_to_virt(phys) as *mut Channel, Ordering::Release);
    if let Some(ch) = channel() {
        super::profile::init(ch);
    }
    take_host_signals();
    ENABLED.store(true, Ordering::Release);
}

/// Tells the monitor that signals sent to `hrt` may now come (the handler of
/// `HOST_SIGNAL_VECTOR` is in place), and raises those that came before (a forked child's
/// monitor keeps them in the word until then, without an interrupt).
fn take_host_signals() {
    if let Some(ch) = channel() {
        ch.header.signals_ready.store(1, Ordering::SeqCst);
        if ch.header.host_signals.load(Ordering::SeqCst) != 0 || ch.rt_signals.has_signals() {
            host_signals();
        }
    }
}

/// Names `t` as the program's leader thread (`ChannelHeader::leader_state`): its state word,
/// or none (`None`: a fork is copying this memory; the child names its own).
pub fn publish_leader(t: Option<&crate::sched::thread::Thread>) {
    const _: () = assert!(crate::sched::thread::BLOCKED == hrt_abi::channel::LEADER_WAITING);
    const _: () = assert!(crate::sched::thread::BLOCKING == hrt_abi::channel::LEADER_BLOCKING);
    if let Some(ch) = channel() {
        let at = t.map_or(0, |t| crate::mem::virt_to_phys(&t.state as *const _ as *const u8));
        ch.header.leader_state.store(at, Ordering::Release);
    }
}

/// Whether the current thread is the one `publish_leader` named.
fn is_leader(ch: &Channel) -> bool {
    let cur = crate::sched::current();
    // SAFETY: the current thread's record is alive while it runs.
    let at = crate::mem::virt_to_phys(unsafe { &(*cur).state } as *const _ as *const u8);
    ch.header.leader_state.load(Ordering::Relaxed) == at
}

/// The leader named last (`publish_leader`), to name again after a fork.
pub fn leader() -> u64 {
    channel().map_or(0, |ch| ch.header.leader_state.load(Ordering::Acquire))
}

/// Names again the leader a fork's copy left unnamed (`leader`'s value).
pub fn restore_leader(at: u64) {
    if let Some(ch) = channel() {
        ch.header.leader_state.store(at, Ordering::Release);
    }
}

/// The loader has built a main stack: the monitor learns where its strings are.
pub fn stack_built() {
    if let Some(ch) = channel() {
        super::status::publish_areas(&ch.header.status);
    }
}

fn channel() -> Option<&'static Channel> {
    let p = CHANNEL.load(Ordering::Acquire);
    // SAFETY: set once by `init` to zeroed memory of the channel's size, never freed.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// Whether forwarded calls go through the channel.
pub fn active() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// (round trips, of which the caller slept, doorbells rung, calls evicted from their slots)
/// so far.
pub fn counts() -> (u64, u64, u64, u64) {
    let c = (CALLS.load(Ordering::Relaxed), SLEPT.load(Ordering::Relaxed), RUNG.load(Ordering::Relaxed));
    (c.0, c.1, c.2, EVICTED.load(Ordering::Relaxed))
}

/// The CPUs the channel counts halted now (what the monitor's pollers read; `-v`).
pub fn halted_now() -> u32 {
    channel().map_or(0, |ch| ch.header.halted_cpus.load(Ordering::Relaxed))
}

/// Rings the doorbell (one VM exit; the monitor serves what is pending).
fn ring() {
    RUNG.fetch_add(1, Ordering::Relaxed);
    crate::arch::hypercall::call(hrt_abi::nr::DOORBELL, &[]);
}

/// The generation of the thread ids last published (`signal::state::THREADS_GENERATION`).
static THREADS_PUBLISHED: AtomicU64 = AtomicU64::new(u64::MAX);

/// Publishes the program's thread ids in the header (its `/proc/self/task` listing) if threads
/// came or went since the last time. Racing publishers write the same ids, or newer ones.
fn publish_threads(ch: &Channel) {
    use super::signal::state::{live_tids, THREADS_GENERATION};
    let generation = THREADS_GENERATION.load(Ordering::Acquire);
    // A load first: most opens find nothing new, and a swap would write the shared line.
    if THREADS_PUBLISHED.load(Ordering::Acquire) == generation
        || THREADS_PUBLISHED.swap(generation, Ordering::AcqRel) == generation
    {
        return;
    }
    let ids = &ch.header.thread_ids;
    let n = live_tids(super::process::pid(), |i, tid| {
        if let Some(slot) = ids.get(i) {
            slot.store(tid, Ordering::Relaxed);
        }
    });
    ch.header.thread_count.store(n as u32, Ordering::Release);
}

/// The calls besides the opens that look a path up without opening it (the stat family,
/// access, readlink, chdir).
const LOOKS_UP_PATHS: [u32; 12] = [
    __NR_stat,
    __NR_lstat,
    __NR_newfstatat,
    __NR_statx,
    __NR_access,
    __NR_faccessat,
    __NR_faccessat2,
    __NR_readlink,
    __NR_readlinkat,
    __NR_chdir,
    __NR_getxattr,
    __NR_name_to_handle_at,
];

/// Whether forwarded call `nr` names a thread as the owner of a descriptor's I/O signals
/// (fcntl F_SETOWN or F_SETOWN_EX), which the monitor checks against the published ids.
fn names_owner(nr: u64, args: &[u64; 6]) -> bool {
    const F_SETOWN: u64 = 8;
    const F_SETOWN_EX: u64 = 15;
    nr as u32 == __NR_fcntl && matches!(args[1], F_SETOWN | F_SETOWN_EX)
}

/// Performs forwarded call `nr` through the channel. None if there is no channel.
pub fn call(nr: u64, args: [u64; 6]) -> Option<i64> {
    let ch = channel()?;
    if [__NR_open, __NR_openat, __NR_openat2].contains(&(nr as u32)) {
        // What the program's /proc/meminfo shows (the monitor makes it). No caller holds the
        // memory lock here: a forwarded call may sleep.
        let m = &ch.header.program_memory;
        let (total, free) = super::usermem::shown_bytes();
        m[0].store(total, Ordering::Relaxed);
        m[1].store(free, Ordering::Relaxed);
        for (to, v) in ch.header.main_stack.iter().zip(super::loader::main_stack()) {
            to.store(v, Ordering::Relaxed);
        }
        let path = if nr as u32 == __NR_open { args[0] } else { args[1] };
        if super::status::may_be_proc(path) {
            super::status::publish(&ch.header.status, path);
        }
        if super::maps::may_be_maps(path) {
            super::maps::publish(&ch.header.maps);
        }
        publish_threads(ch);
    } else if LOOKS_UP_PATHS.contains(&(nr as u32)) || names_owner(nr, &args) {
        // Whether `/proc/self/task/<tid>` is there (stat, access, readlink of a thread's
        // directory or files) depends on the ids too.
        publish_threads(ch);
    }
    let mut line = NEW;
    let leader = is_leader(ch);
    loop {
        let idx = take_slot(ch, line);
        let slot = &ch.slots[idx];
        if leader {
            ch.header.leader_slot.store(idx as u64 + 1, Ordering::Release);
        }
        submit(ch, idx, nr | super::syscall::call_flags(nr), args);
        let (cancelled, evicted) = wait(ch, idx, || restartable(nr, &args));
        if leader {
            ch.header.leader_slot.store(0, Ordering::Release);
        }
        let mut ret = slot.ret.load(Ordering::Acquire);
        let bit = 1 << (idx % 64);
        if cancelled || evicted {
            ch.header.cancel[idx / 64].fetch_and(!bit, Ordering::SeqCst);
        }
        if EVICT[idx / 64].load(Ordering::Relaxed) & bit != 0 {
            EVICT[idx / 64].fetch_and(!bit, Ordering::SeqCst);
        }
        // A socket call with a time limit: EINTR, never restarted (`EINTR_FOR_GOOD`).
        let for_good = ret == -hrt_abi::channel::EINTR_FOR_GOOD;
        if for_good {
            ret = -(super::errno::EINTR as i64);
        }
        let interrupted = ret == -(super::errno::EINTR as i64);
        if cancelled && interrupted && !for_good {
            // Interrupted on the host because of our signal: EINTR or a restart, as Linux
            // decides for a call a signal interrupts (SA_RESTART).
            ret = -(super::signal::ERESTARTSYS as i64);
        }
        slot.state.store(FREE, Ordering::Relaxed);
        TAKEN[idx / 64].fetch_and(!bit, Ordering::Release);
        CALLS.fetch_add(1, Ordering::Relaxed);
        // Memory the program unmapped while this call could still write it is free now.
        FINISHED[idx].fetch_add(1, Ordering::SeqCst);
        super::usermem::call_finished(idx);
        if evicted && interrupted && !cancelled {
            EVICTED.fetch_add(1, Ordering::Relaxed);
            if super::signal::state::deliverable_here() {
                // A signal came meanwhile: as if it had interrupted the call.
                return Some(-(super::signal::ERESTARTSYS as i64));
            }
            // Gave its slot to a waiting caller before anything happened: made again, after
            // the callers waiting now (`take_slot`).
            line = AGAIN;
            continue;
        }
        // A rename of one of the program's threads the monitor passed on (this call may have
        // been its write to a `comm` file).
        super::thread_names::take_rename(&ch.header.rename);
        return Some(ret);
    }
}

/// The slots whose call is in flight and may name memory in `[start, end)`, each with its
/// `FINISHED` count now: an argument that points there, or a buffer of the iovec array or
/// message header one points at (readv, preadv, preadv2, recvmsg, recvfrom's address). The
/// monitor's worker writes a blocking read's data into guest RAM when it comes, whatever the
/// program unmapped meanwhile: memory unmapped and mapped again held a late read's bytes
/// where a fresh mapping must read zero (usermem::unmap keeps such memory out of use until the
/// call ends). Conservative: any argument value in the range counts.
pub fn in_flight_touching(start: u64, end: u64) -> Vec<(usize, u64)> {
    let mut out = Vec::new();
    let Some(ch) = channel() else { return out };
    let inside = |p: u64| (start..end).contains(&p);
    for (w, word) in TAKEN.iter().enumerate() {
        let mut bits = word.load(Ordering::SeqCst);
        while bits != 0 {
            let idx = w * 64 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let slot = &ch.slots[idx];
            let finished = FINISHED[idx].load(Ordering::SeqCst);
            let args: [u64; 6] = core::array::from_fn(|i| slot.args[i].load(Ordering::Relaxed));
            let nr = slot.nr.load(Ordering::Relaxed) as u32 as u64;
            if args.iter().any(|&a| inside(a)) || buffers_touch(nr, &args, &inside) {
                out.push((idx, finished));
            }
        }
    }
    out
}

/// Whether a buffer that call `nr`'s iovec array or message header names lies in the range
/// (`inside`); at most 64 iovecs are looked at.
#[allow(non_upper_case_globals)] // linux-raw-sys names the numbers __NR_readv etc.
fn buffers_touch(nr: u64, args: &[u64; 6], inside: &dyn Fn(u64) -> bool) -> bool {
    const MAX_LOOKED: u64 = 64;
    let iovecs = |iov: u64, count: u64| {
        (0..count.min(MAX_LOOKED)).any(|i| {
            super::uaccess::read::<[u64; 2]>(iov + i * 16)
                .is_ok_and(|[base, len]| len != 0 && (inside(base) || inside(base + len - 1)))
        })
    };
    match nr as u32 {
        __NR_readv | __NR_preadv | __NR_preadv2 => iovecs(args[1], args[2]),
        // struct msghdr: name, namelen, iov, iovlen, control, controllen, flags.
        __NR_recvmsg => super::uaccess::read::<[u64; 6]>(args[1])
            .is_ok_and(|[name, _, iov, iovlen, control, _]| inside(name) || inside(control) || iovecs(iov, iovlen)),
        _ => false,
    }
}

/// Whether slot `idx` has finished a call since its count was `finished`.
pub fn finished_since(idx: usize, finished: u64) -> bool {
    FINISHED.get(idx).is_none_or(|f| f.load(Ordering::SeqCst) != finished)
}

/// Writes request `nr` (`args`) into slot `idx`, which the caller took, and publishes it; rings
/// the doorbell if no service thread polls (the exit then serves it, and wakes the service
/// threads for a burst of calls).
fn submit(ch: &Channel, idx: usize, nr: u64, args: [u64; 6]) {
    let slot = &ch.slots[idx];
    slot.nr.store(nr, Ordering::Relaxed);
    for (to, a) in slot.args.iter().zip(args) {
        to.store(a, Ordering::Relaxed);
    }
    slot.sleeper_cpu.store(NO_SLEEPER, Ordering::Relaxed);
    slot.state.store(SUBMITTED, Ordering::Release);
    ch.header.pending[idx / 64].fetch_or(1 << (idx % 64), Ordering::SeqCst);
    if ch.header.service_awake.load(Ordering::SeqCst) == 0 {
        ring();
    }
}

/// Has the monitor perform its operation `op` (a hypercall number, `nr::MEM_ZERO`) through
/// the channel while a service thread polls it: ~1 us instead of a VM exit (~60 us on a PVM
/// host); while none polls, the doorbell's exit serves it and wakes them for a burst of
/// calls, if they have a host CPU to spare (`pollers_spare`, or a halted vCPU's: 100 x 100
/// threads that come and go at `--cpus 2` on two host CPUs, each thread's stack cleared
/// twice, 164-176 -> 156-160 us a thread; `munmap_2m` 250 K -> 205 K cycles). Never sleeps,
/// so callers may hold locks: None (make the hypercall) when no slot is free or no service
/// thread is to be woken; the answer is awaited spinning.
pub fn monitor_op(op: u64, args: [u64; 6]) -> Option<i64> {
    if !active() {
        return None;
    }
    let ch = channel()?;
    if ch.header.service_awake.load(Ordering::SeqCst) == 0
        && ch.header.pollers_spare.load(Ordering::Relaxed) == 0
        && ch.header.halted_cpus.load(Ordering::Relaxed) == 0
    {
        // Waking the service for a burst would take host time from the vCPUs.
        return None;
    }
    let idx = try_take_slot()?;
    let slot = &ch.slots[idx];
    submit(ch, idx, hrt_abi::channel::MONITOR_OP | op, args);
    while slot.state.load(Ordering::Acquire) != DONE {
        core::hint::spin_loop();
    }
    let ret = slot.ret.load(Ordering::Acquire);
    slot.state.store(FREE, Ordering::Relaxed);
    TAKEN[idx / 64].fetch_and(!(1 << (idx % 64)), Ordering::Release);
    CALLS.fetch_add(1, Ordering::Relaxed);
    Some(ret)
}

/// Whether forwarded call `nr` (`args`), interrupted on the host before it did anything,
/// can be made again later with the same effect and nothing visible to the program: a call
/// that waits without a time limit for another party (data, room, a peer, a child, a lock).
/// Timed waits are not (a second wait would start its time again), nor `connect` (an
/// interrupted connection goes on), nor the batched socket calls, nor writes and receives
/// with MSG_WAITALL: interrupted after part of their bytes they answer the part, which a
/// blocking call never does unless a signal came.
fn restartable(nr: u64, args: &[u64; 6]) -> bool {
    use hrt_abi::process as op;
    use linux_raw_sys::general as g;
    let nr = nr & ((1 << op::CONTEXT_SHIFT) - 1);
    if nr == op::WAIT4 || nr == op::WAITID {
        return true;
    }
    if nr == op::SHARED_FUTEX {
        return args[1] == 0 && args[3] == u64::MAX;
    }
    let Ok(nr) = u32::try_from(nr) else { return false };
    let no_limit = |a: u64| (a as u32 as i32) < 0;
    // linux_raw_sys's `net` module, which the kernel does not otherwise need.
    const MSG_WAITALL: u32 = 0x100;
    match nr {
        g::__NR_read
        | g::__NR_readv
        | g::__NR_pread64
        | g::__NR_preadv
        | g::__NR_accept
        | g::__NR_accept4
        | g::__NR_open
        | g::__NR_openat
        | g::__NR_openat2
        | g::__NR_creat
        | g::__NR_flock
        | g::__NR_wait4
        | g::__NR_waitid => true,
        g::__NR_recvfrom => args[3] as u32 & MSG_WAITALL == 0,
        g::__NR_recvmsg => args[2] as u32 & MSG_WAITALL == 0,
        g::__NR_fcntl => matches!(args[1] as u32, g::F_SETLKW | g::F_OFD_SETLKW),
        g::__NR_poll => no_limit(args[2]),
        g::__NR_epoll_wait | g::__NR_epoll_pwait => no_limit(args[3]),
        g::__NR_ppoll | g::__NR_epoll_pwait2 => args[2 + (nr == g::__NR_epoll_pwait2) as usize] == 0,
        g::__NR_select | g::__NR_pselect6 => args[4] == 0,
        _ => false,
    }
}

/// A free slot, claimed, for a call in `line`. While every slot is in flight, callers take
/// turns: the first in line waits for a slot to come free, and after `EVICT_AFTER_NS` asks a
/// call that waits on the host for another party to give its slot up (`evict_one`); that
/// call is made again, in the second line, which waits while the first has callers (new
/// calls more likely finish at once: a write to the pipe the blocked calls read). Without
/// evictions, calls blocked on the host in every slot would hold the call that unblocks them
/// out for good; with one line, a new call waited behind every evicted one at each turn.
fn take_slot(ch: &Channel, line: usize) -> usize {
    let (own, first) = (&LINES[line], &LINES[NEW]);
    if own.empty() && first.empty() {
        if let Some(idx) = try_take_slot() {
            return idx;
        }
    }
    let ticket = own.next.fetch_add(1, Ordering::SeqCst);
    while own.turn.load(Ordering::SeqCst) != ticket {
        crate::sched::yield_now();
        core::hint::spin_loop();
    }
    let mut since = crate::time::ticks();
    loop {
        if line == NEW || first.empty() {
            if let Some(idx) = try_take_slot() {
                own.turn.fetch_add(1, Ordering::SeqCst);
                return idx;
            }
            if crate::time::ticks().wrapping_sub(since) >= crate::time::ns_to_ticks(EVICT_AFTER_NS[line]) {
                evict_one(ch);
                since = crate::time::ticks();
            }
        } else {
            since = crate::time::ticks();
        }
        crate::sched::yield_now();
        core::hint::spin_loop();
    }
}

/// A free slot claimed, if there is one.
fn try_take_slot() -> Option<usize> {
    // Start where this CPU's last search would likely find room, to spread the callers.
    let first = crate::cpu::id() % TAKEN.len();
    for k in 0..TAKEN.len() {
        let w = (first + k) % TAKEN.len();
        let mut cur = TAKEN[w].load(Ordering::Relaxed);
        while cur != u64::MAX {
            let bit = (!cur).trailing_zeros();
            match TAKEN[w].compare_exchange_weak(cur, cur | 1 << bit, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return Some(w * 64 + bit as usize),
                Err(now) => cur = now,
            }
        }
    }
    None
}

/// Asks one call whose caller sleeps on its slot, and which can be made again unseen
/// (`restartable`), to give its slot up: wakes the caller, which cancels the call on the
/// host (`wait`), frees the slot when the host answers EINTR, and makes the call again.
fn evict_one(ch: &Channel) {
    let start = EVICT_CURSOR.fetch_add(1, Ordering::Relaxed);
    for k in 0..SLOTS {
        let idx = (start + k) % SLOTS;
        let bit = 1 << (idx % 64);
        let slot = &ch.slots[idx];
        if SLEEPER[idx].load(Ordering::Relaxed).is_null()
            || EVICT[idx / 64].load(Ordering::Relaxed) & bit != 0
            || slot.state.load(Ordering::Acquire) != SUBMITTED
        {
            continue;
        }
        let args = core::array::from_fn(|i| slot.args[i].load(Ordering::Relaxed));
        if !restartable(slot.nr.load(Ordering::Relaxed), &args) {
            continue;
        }
        EVICT_CURSOR.store(idx + 1, Ordering::Relaxed);
        EVICT[idx / 64].fetch_or(bit, Ordering::SeqCst);
        // Take the sleeper as `reap` would, from whichever CPU it sleeps on (`sleep_on`
        // published that CPU before the sleeper).
        let t = SLEEPER[idx].swap(null_mut(), Ordering::SeqCst);
        if !t.is_null() {
            let cpu = slot.sleeper_cpu.load(Ordering::SeqCst) as usize;
            SLEEPING_ON[cpu][idx / 64].fetch_and(!bit, Ordering::SeqCst);
            SLEEPERS[cpu].fetch_sub(1, Ordering::SeqCst);
            // SAFETY: a thread registered as a sleeper is alive until it is woken and has
            // unregistered (it cannot exit while asleep here).
            unsafe { crate::sched::wake(t) };
        }
        return;
    }
}

/// Waits until slot `idx` is done: spins, then sleeps where the scheduler can. A signal the
/// thread does not block, arriving while it sleeps, cancels the call on the host (a call that
/// blocks there then answers EINTR), and so does a caller that needs the slot (`evict_one`);
/// returns whether each did. Only a `restartable` call heeds an eviction (the mark may be
/// stale: set for the slot's last call as it ended).
fn wait(ch: &Channel, idx: usize, restartable: impl Fn() -> bool) -> (bool, bool) {
    let slot = &ch.slots[idx];
    let done = || slot.state.load(Ordering::Acquire) == DONE;
    let can_sleep = crate::arch::irq::enabled() && !crate::sched::is_idle_thread();
    let start = crate::time::ticks();
    let spin = |ns| crate::time::ns_to_ticks(ns);
    let watching = can_sleep && SLEEPERS[crate::cpu::id()].load(Ordering::Relaxed) > 0 && watch_sleepers(ch, true);
    loop {
        if done() {
            if watching {
                watch_sleepers(ch, false);
            }
            return (false, false);
        }
        // Another thread of this CPU that can run, or that can once it is woken (its answer is
        // there), makes the spin short: two threads of one CPU talking over a socketpair spun
        // out the whole long spin per message, waiting for the answer only the other could give.
        let contended = crate::sched::runnable_here() > 0 || watching && answered_sleeper_here(ch);
        let limit = if contended { spin(SPIN_NS_CONTENDED) } else { spin(SPIN_NS) };
        if can_sleep && crate::time::ticks().wrapping_sub(start) >= limit {
            break;
        }
        core::hint::spin_loop();
    }
    if watching {
        watch_sleepers(ch, false);
    }
    SLEPT.fetch_add(1, Ordering::Relaxed);
    let (mut cancelled, mut evicted) = (false, false);
    let bit = 1 << (idx % 64);
    while !done() {
        let interrupted = sleep_on(ch, idx, !cancelled);
        let evict = !evicted && EVICT[idx / 64].load(Ordering::SeqCst) & bit != 0 && restartable();
        if (interrupted && !cancelled || evict) && !done() {
            if !(cancelled || evicted) {
                ch.header.cancel[idx / 64].fetch_or(bit, Ordering::SeqCst);
                if ch.header.service_awake.load(Ordering::SeqCst) == 0 {
                    ring();
                }
            }
            cancelled |= interrupted;
            evicted |= evict;
        }
    }
    (cancelled, evicted)
}

/// Sleeps on slot `idx` until it is done or something else wakes the thread; with
/// `interruptible`, a signal the thread does not block wakes it too. Returns whether such a
/// signal is pending.
fn sleep_on(ch: &Channel, idx: usize, interruptible: bool) -> bool {
    let slot = &ch.slots[idx];
    let cur = crate::sched::current();
    // The CPU cannot change under us: interrupts are off until the thread is registered, and a
    // blocked thread stays on its CPU.
    let was = crate::arch::irq::save_and_disable();
    let cpu = crate::cpu::id();
    // SAFETY: the current thread's record is alive while it runs.
    unsafe { (*cur).state.store(BLOCKING, Ordering::SeqCst) };
    // The sleeper last: a caller on another CPU that takes it (`evict_one`) finds the CPU
    // and the bit it must clear already there.
    slot.sleeper_cpu.store(cpu as u32, Ordering::SeqCst);
    SLEEPING_ON[cpu][idx / 64].fetch_or(1 << (idx % 64), Ordering::SeqCst);
    SLEEPERS[cpu].fetch_add(1, Ordering::SeqCst);
    SLEEPER[idx].store(cur, Ordering::SeqCst);
    if slot.state.load(Ordering::SeqCst) == DONE {
        // Answered meanwhile: withdraw, unless a reaper already took us (then its wake-up is
        // consumed by `block`, which returns at once).
        if unregister(cpu, idx) {
            // SAFETY: as above.
            unsafe { (*cur).state.store(RUNNING, Ordering::SeqCst) };
            crate::arch::irq::restore(was);
            return false;
        }
    }
    crate::arch::irq::restore(was);
    if interruptible {
        super::signal::state::interruptible_begin();
    }
    crate::sched::block();
    let interrupted = interruptible && super::signal::state::interruptible_end();
    // A signal may have woken us early: make sure we are no longer registered.
    let was = crate::arch::irq::save_and_disable();
    unregister(cpu, idx);
    crate::arch::irq::restore(was);
    interrupted
}

/// While a caller spins for its answer (`wait`) with other threads of its CPU asleep on slots
/// (`watch`), the CPU says it polls the channel, as the idle loop does, so that the monitor
/// does not interrupt it for their answers: an interrupt of a running vCPU costs ~100 us of
/// emulated ring 0 on a PVM host (two threads of one CPU talking over a socketpair: one per
/// message, ~170 us a round trip). Interrupts stay masked meanwhile (in software in ring-3
/// mode: events are noted and handled when it ends), so that no other thread runs on the CPU
/// while it says so; the spin is at most `SPIN_NS`. When it ends (`watch` false) the answered
/// sleepers are woken here. Returns `watch`, or false if interrupts were off already.
fn watch_sleepers(ch: &Channel, watch: bool) -> bool {
    let flag = &ch.header.idle_polling[crate::cpu::id()];
    if watch {
        if !crate::arch::irq::save_and_disable() {
            return false;
        }
        flag.store(1, Ordering::SeqCst);
        return true;
    }
    // Cleared before the last look: an answer is either seen here or interrupts the CPU.
    flag.store(0, Ordering::SeqCst);
    reap();
    crate::arch::irq::enable();
    false
}

/// Whether a thread of this CPU sleeps on a slot that is answered (it is about to be woken).
fn answered_sleeper_here(ch: &Channel) -> bool {
    let cpu = crate::cpu::id();
    if SLEEPERS[cpu].load(Ordering::Relaxed) == 0 {
        return false;
    }
    SLEEPING_ON[cpu].iter().enumerate().any(|(w, word)| {
        let mut bits = word.load(Ordering::Relaxed);
        while bits != 0 {
            let idx = w * 64 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if ch.slots[idx].state.load(Ordering::Acquire) == DONE {
                return true;
            }
        }
        false
    })
}

/// Removes slot `idx`'s sleeper registration on `cpu`; true if it was still there.
fn unregister(cpu: usize, idx: usize) -> bool {
    if SLEEPER[idx].swap(null_mut(), Ordering::SeqCst).is_null() {
        return false;
    }
    SLEEPING_ON[cpu][idx / 64].fetch_and(!(1 << (idx % 64)), Ordering::SeqCst);
    SLEEPERS[cpu].fetch_sub(1, Ordering::SeqCst);
    true
}

/// Raises in the program the signals `hrt` received on the host (the monitor's interrupt):
/// the real-time ones the channel queued, each instance in the order they came, then those
/// of the word, each with the siginfo the monitor put beside it: read before the signal's bit
/// is cleared, since the monitor writes it only while the bit is clear.
fn host_signals() {
    let Some(ch) = channel() else { return };
    if HOST_SIGNALS_HELD.load(Ordering::SeqCst) {
        return;
    }
    RAISING.fetch_add(1, Ordering::SeqCst);
    let mut kick = false;
    while let Some(q) = ch.rt_signals.pop() {
        let info = super::signal::SigInfo {
            signo: q.signo,
            code: q.code,
            w16: q.w16,
            w24: q.w24,
            ..super::signal::SigInfo::EMPTY
        };
        kick |= super::signal::host::make_pending(info);
    }
    if kick {
        // Once for the batch: a burst of sigqueues is one look for each thread.
        super::signal::state::kick_all();
    }
    let mut bits = ch.header.host_signals.load(Ordering::Acquire);
    while bits != 0 {
        // Bit 0 is signal 64 (bit n is signal n otherwise).
        let n = bits.trailing_zeros() as usize;
        let sig = if n == 0 { 64 } else { n as u64 };
        bits &= bits - 1;
        let slot = &ch.header.host_siginfo[n];
        let info = super::signal::SigInfo {
            signo: sig as i32,
            code: slot.code.load(Ordering::Acquire),
            w16: slot.w16.load(Ordering::Acquire),
            w24: slot.w24.load(Ordering::Acquire),
            ..super::signal::SigInfo::EMPTY
        };
        // Whoever clears the bit raises the signal: a waiting thread may take them too
        // (`raise_host_signals`) while CPU 0's interrupt does.
        if ch.header.host_signals.fetch_and(!(1u64 << n), Ordering::AcqRel) & (1u64 << n) != 0 {
            super::signal::host::raise(info);
        }
    }
    RAISING.fetch_sub(1, Ordering::SeqCst);
}

/// A forked child's kernel before its thread runs (`after_fork` until `release_host_signals`):
/// the signals sent to it wait in the channel. Raised earlier, with no thread to block them, a
/// signal the forking thread blocks (inherited, as on Linux) found nobody blocking it and its
/// default action ended the child (a parent's SIGUSR1 sent right after fork killed it in 8 of
/// 10 rounds).
static HOST_SIGNALS_HELD: AtomicBool = AtomicBool::new(false);

/// The forked child's thread runs (with the forking thread's mask): the signals that came go
/// to the program.
pub fn release_host_signals() {
    if HOST_SIGNALS_HELD.swap(false, Ordering::SeqCst) {
        if let Some(ch) = channel() {
            if ch.header.host_signals.load(Ordering::SeqCst) != 0 || ch.rt_signals.has_signals() {
                host_signals();
            }
        }
    }
}

/// How many CPUs are in `host_signals`: one that cleared a signal's bit may not have raised it
/// yet.
static RAISING: AtomicUsize = AtomicUsize::new(0);

/// Raises now, from the calling thread, the signals that reached `hrt` on the host and still
/// wait in the channel for CPU 0's interrupt, if any (one load of the word when none do).
pub fn raise_waiting_host_signals() {
    let Some(ch) = channel() else { return };
    if ch.header.signals_ready.load(Ordering::Relaxed) == 0 {
        return;
    }
    if ch.header.host_signals.load(Ordering::SeqCst) != 0 || ch.rt_signals.has_signals() {
        raise_host_signals();
    }
}

/// Raises now, from the calling thread, the signals that reached `hrt` on the host and wait
/// for CPU 0's interrupt (a wait the monitor answered `SIGNAL_CAME_FIRST`), and waits until
/// CPU 0's interrupt, if it took one first, has raised it too. (A bounded wait: a signal that
/// ends the program may not return to say so.)
pub fn raise_host_signals() {
    host_signals();
    for _ in 0..1 << 22 {
        if RAISING.load(Ordering::SeqCst) == 0 {
            break;
        }
        core::hint::spin_loop();
    }
}

/// The monitor's `FILES_SHRANK_VECTOR`, on every CPU: another process shrank a file the program
/// maps shared. The word stays set until a CPU hides the pages (`after_host_shrink`), so that
/// every CPU's interrupt finds it: the one whose thread spins on a gone page must not return to
/// it before they are hidden.
fn files_shrank() {
    if channel().is_some_and(|ch| ch.header.files_shrank.load(Ordering::SeqCst) != 0) {
        super::shared_files::host_shrank();
    }
}

/// The CPU about to hide the pages of files that shrank takes the monitor's word (a later
/// shrink sets it again).
pub fn files_shrank_taken() {
    if let Some(ch) = channel() {
        ch.header.files_shrank.store(0, Ordering::SeqCst);
    }
}

/// Wakes this CPU's threads whose slots are done (the completion interrupt, the idle loop).
fn reap() {
    let Some(ch) = channel() else { return };
    let cpu = crate::cpu::id();
    if SLEEPERS[cpu].load(Ordering::SeqCst) == 0 {
        return;
    }
    let mut woke = false;
    for (w, word) in SLEEPING_ON[cpu].iter().enumerate() {
        let mut bits = word.load(Ordering::SeqCst);
        while bits != 0 {
            let idx = w * 64 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if ch.slots[idx].state.load(Ordering::SeqCst) != DONE {
                continue;
            }
            let t = SLEEPER[idx].swap(null_mut(), Ordering::SeqCst);
            if !t.is_null() {
                word.fetch_and(!(1 << (idx % 64)), Ordering::SeqCst);
                SLEEPERS[cpu].fetch_sub(1, Ordering::SeqCst);
                // SAFETY: a thread registered as a sleeper is alive until it is woken and has
                // unregistered (it cannot exit while asleep here).
                unsafe { crate::sched::wake(t) };
                woke = true;
            }
        }
    }
    if woke {
        crate::sched::woken_by_interrupt();
    }
}

/// The idle loop's part: while it polls (`polling`), it says so and reaps answers itself, so the
/// monitor need not interrupt it; before it stops polling (to run a thread or halt) it clears
/// the flag and reaps once more, so an answer is either seen here or interrupts the CPU.
fn idle_hook(polling: bool) {
    let Some(ch) = channel() else { return };
    // An idle CPU hides the pages of a file another process shrank as well (so the monitor
    // finds its word taken, `files_shrank`, while every thread sleeps).
    super::shared_files::after_host_shrink();
    let flag = &ch.header.idle_polling[crate::cpu::id()];
    if polling {
        if flag.load(Ordering::Relaxed) == 0 {
            flag.store(1, Ordering::SeqCst);
        }
    } else if flag.load(Ordering::Relaxed) != 0 {
        flag.store(0, Ordering::SeqCst);
    }
    reap();
}

/// Per CPU: counted in the channel's `halted_cpus` (so that only a CPU that counted itself
/// in counts itself out, whenever the channel was registered).
static HALTED: [AtomicBool; MAX_CPUS] = [const { AtomicBool::new(false) }; MAX_CPUS];

/// Keeps the channel's count of halted CPUs, which tells the monitor's pollers that a host
/// CPU is free for them to spin on.
fn halt_hook(halting: bool) {
    count_halted(crate::cpu::id(), halting);
}

/// Counts CPU `cpu` in (`halted`) or out of the channel's halted CPUs. A forked child's
/// dormant CPUs count as halted until they start: their host CPUs are as free for the
/// monitor's pollers, which then spin on after a call instead of sleeping (each of the
/// child's calls then cost a doorbell exit, ~12 for an exec of `/bin/true`).
pub fn count_halted(cpu: usize, halting: bool) {
    let Some(ch) = channel() else { return };
    let here = &HALTED[cpu];
    // Whoever flips the CPU's flag counts it, once: the CPU itself, or `count_asleep_cpus`
    // on another CPU while this one wakes.
    if halting {
        ch.header.cpu_halted[cpu].store(1, Ordering::SeqCst);
        if !here.swap(true, Ordering::SeqCst) {
            ch.header.halted_cpus.fetch_add(1, Ordering::SeqCst);
        }
    } else if here.swap(false, Ordering::SeqCst) {
        ch.header.cpu_halted[cpu].store(0, Ordering::SeqCst);
        ch.header.halted_cpus.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Counts the CPUs already asleep in their halt when the channel starts: they halted before
/// its halt hook existed (a program with an OpenMP runtime has every vCPU started at boot,
/// and the idle ones halt within a millisecond), and uncounted they told the monitor's
/// pollers that every vCPU ran. With the vCPUs outnumbering the host's CPUs the pollers then
/// slept 50 us after each call, and a program writing its output 4 KiB at a time rang the
/// doorbell (a VM exit, ~30 us) for nearly every write (Rodinia's pathfinder on `--cpus 4`
/// over 2 host CPUs: 4,935 doorbells for 5,035 writes, 0.62 s against 0.42 on `--cpus 2`).
pub fn count_asleep_cpus() {
    for c in 0..crate::cpu::count() {
        let asleep = || crate::sched::on_cpu(c).asleep.load(Ordering::SeqCst);
        if asleep() {
            count_halted(c, true);
            // Woken meanwhile: its own count-out may have come before the count-in.
            if !asleep() {
                count_halted(c, false);
            }
        }
    }
}

/// A forked child: requests in flight were the parent's other threads' (or are served by the
/// parent's monitor), so the channel starts empty and is registered with the child's monitor.
/// `monitor_did_it`: the child's monitor zeroed and registered the channel placed at boot
/// already (`fork_ready::CHANNEL`).
///
/// The resets write only what is set: this memory is the parent's until written, and each
/// page the child writes is a copy-on-write and a shadow-paging fault (~10 us on a PVM host);
/// writing every word was 10 such pages of these tables and 33 of the channel.
pub fn after_fork(monitor_did_it: bool) {
    let p = CHANNEL.load(Ordering::Acquire);
    if p.is_null() {
        return;
    }
    ENABLED.store(false, Ordering::SeqCst);
    HOST_SIGNALS_HELD.store(true, Ordering::SeqCst);
    for w in TAKEN.iter().chain(&EVICT) {
        clear(w);
    }
    for l in &LINES {
        clear(&l.next);
        clear(&l.turn);
    }
    for s in &SLEEPER {
        if !s.load(Ordering::Relaxed).is_null() {
            s.store(null_mut(), Ordering::SeqCst);
        }
    }
    // A CPU's row has bits set only while it counts sleepers.
    for (row, n) in SLEEPING_ON.iter().zip(&SLEEPERS) {
        if n.load(Ordering::Relaxed) != 0 {
            row.iter().for_each(clear);
            n.store(0, Ordering::SeqCst);
        }
    }
    // The zeroed channel counts no CPU halted.
    for h in &HALTED {
        if h.load(Ordering::Relaxed) {
            h.store(false, Ordering::SeqCst);
        }
    }
    let bytes = core::mem::size_of::<Channel>();
    let phys = crate::mem::virt_to_phys(p as *const u8);
    let placed = crate::bootinfo::get().channel;
    if monitor_did_it && placed.base == phys && placed.size == bytes as u64 {
        take_host_signals();
        // The zeroed status block learns the stack's strings again (the child's title).
        stack_built();
        ENABLED.store(true, Ordering::Release);
        return;
    }
    super::usermem::zero(phys, bytes as u64);
    take_host_signals();
    if crate::arch::hypercall::call(hrt_abi::nr::CHANNEL, &[phys, bytes as u64]) != 0 {
        // Forwarded calls then use hypercalls.
        CHANNEL.store(null_mut(), Ordering::Release);
        return;
    }
    stack_built();
    ENABLED.store(true, Ordering::Release);
}

/// Zeroes `w` unless it is zero already (no write, no copy of the page: see `after_fork`).
fn clear(w: &AtomicU64) {
    if w.load(Ordering::Relaxed) != 0 {
        w.store(0, Ordering::SeqCst);
    }
}
