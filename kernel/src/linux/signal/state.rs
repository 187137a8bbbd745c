//! Pending signals and alternate stacks. A signal sent to a thread (tgkill, raise, a fault's
//! SIGPIPE) waits in that thread's set; one sent to the process (kill) in the shared set, taken
//! by whichever thread returns to the program first without blocking it. Standard signals do not
//! queue: a second one while pending is merged, as on Linux. Real-time signals (32-64) queue:
//! each instance sent is delivered, with its own siginfo, in the order sent (a POSIX timer's
//! signal is the exception: while one of its expiries is pending, the next is merged with it).

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use super::{SIG_DFL, SIG_IGN};
use crate::linux::process::PROCESS;
use crate::sched::Thread;
use crate::sync::IrqSpinLock;

/// The part of a siginfo_t that signals use: si_signo, si_errno, si_code and the four words at
/// offsets 16 to 47 (si_pid/si_uid, si_addr, si_tid/si_overrun + si_value; a child's
/// si_status, si_utime and si_stime; what a program's own rt_sigqueueinfo puts there).
#[derive(Clone, Copy, Default, Debug)]
pub struct SigInfo {
    pub signo: i32,
    /// si_errno (SIGSYS from a seccomp trap carries the filter's data there).
    pub errno: i32,
    pub code: i32,
    pub w16: u64,
    pub w24: u64,
    /// The words at offsets 32 and 40.
    pub w32: [u64; 2],
    /// One of the kernel's own POSIX timers sent it (never given to the program): its expiries
    /// merge and count overruns. A program's own rt_sigqueueinfo with SI_TIMER is not one.
    pub timer: bool,
}

impl SigInfo {
    /// No signal: every field 0.
    pub const EMPTY: SigInfo = SigInfo { signo: 0, errno: 0, code: 0, w16: 0, w24: 0, w32: [0, 0], timer: false };

    /// A signal sent by this process with kill (SI_USER) or tgkill/tkill (SI_TKILL).
    pub fn from_user(sig: u64, code: i32) -> Self {
        let pid = crate::linux::process::pid() as u64;
        let uid = crate::linux::calls::ids::ruid() as u64;
        SigInfo { signo: sig as i32, code, w16: pid | uid << 32, ..SigInfo::EMPTY }
    }

    /// The 128-byte siginfo_t.
    pub fn bytes(&self) -> [u8; 128] {
        let mut b = [0u8; 128];
        b[0..4].copy_from_slice(&self.signo.to_le_bytes());
        b[4..8].copy_from_slice(&self.errno.to_le_bytes());
        b[8..12].copy_from_slice(&self.code.to_le_bytes());
        b[16..24].copy_from_slice(&self.w16.to_le_bytes());
        b[24..32].copy_from_slice(&self.w24.to_le_bytes());
        b[32..40].copy_from_slice(&self.w32[0].to_le_bytes());
        b[40..48].copy_from_slice(&self.w32[1].to_le_bytes());
        b
    }
}

pub fn bit(sig: u64) -> u64 {
    1 << (sig - 1)
}

/// Signals whose default action is to do nothing (SIGCHLD, SIGCONT, SIGURG, SIGWINCH).
pub fn ignored_by_default(sig: u64) -> bool {
    matches!(sig, 17 | 18 | 23 | 28)
}

/// The signal state the program starts with, as an exec'd program inherits it: the signals
/// `ignored` (bit `sig - 1`) ignored, the rest at their defaults. Returns the main thread's
/// mask from `mask` (SIGKILL and SIGSTOP can be neither ignored nor blocked).
pub fn start_state(ignored: u64, mask: u64) -> u64 {
    let unstoppable = bit(super::SIGKILL) | bit(super::SIGSTOP);
    let mut acts = PROCESS.sigactions.lock();
    for sig in 1..65u64 {
        if ignored & !unstoppable & bit(sig) != 0 {
            acts[sig as usize][0] = SIG_IGN;
        }
    }
    mask & !unstoppable
}

/// The signals the program has a handler for (bit `sig - 1`; one whose SA_RESETHAND handler
/// ran stays): `signals_watched`' view, without a lock.
static HANDLED: AtomicU64 = AtomicU64::new(0);

/// Sets `HANDLED` from the table of actions `acts` (after a sigaction, an exec's reset, in a
/// forked child), which the caller holds locked.
pub fn note_handlers(acts: &[[u64; 4]; 65]) {
    let handled = (1..65u64).filter(|&s| acts[s as usize][0] > SIG_IGN).fold(0, |m, s| m | bit(s));
    HANDLED.store(handled, Ordering::Relaxed);
}

/// Whether the program may see when a signal another process sent came, for a thread whose
/// mask is `mask`: it has a handler for, or the thread blocks (sigpending, sigwait, signalfd),
/// a signal that `hrt` passes on from the host (not SIGCHLD, which the waits order, nor those
/// the monitor keeps for itself: faults, SIGPIPE, SIGXFSZ, terminal stops, the C library's 32
/// and 33). Its forwarded calls are then `process::SIGNALS_WATCHED`.
pub fn signals_watched(mask: u64) -> bool {
    const NOT_WATCHED: [u64; 16] = [4, 5, 6, 7, 8, 9, 11, 13, 17, 19, 21, 22, 25, 31, 32, 33];
    let watched = !NOT_WATCHED.iter().fold(0, |m, &s| m | bit(s));
    (HANDLED.load(Ordering::Relaxed) | mask) & watched != 0
}

/// The handler recorded for `sig` (SIG_DFL, SIG_IGN or an address).
pub fn handler(sig: u64) -> u64 {
    PROCESS.sigactions.lock()[sig as usize][0]
}

/// Whether `addr` is the restorer (`sa_restorer`, with SA_RESTORER) of a signal the program
/// handles.
pub fn is_restorer(addr: u64) -> bool {
    const SA_RESTORER: u64 = 0x0400_0000;
    PROCESS.sigactions.lock().iter().any(|a| a[0] > 1 && a[1] & SA_RESTORER != 0 && a[2] == addr)
}

/// The signals whose action now is to do nothing (ignored explicitly or by default): pending,
/// they end no wait (Linux discards them as the woken thread looks, and restarts the call).
fn ignored_now() -> u64 {
    let acts = PROCESS.sigactions.lock();
    (1..65u64)
        .filter(|&sig| {
            let h = acts[sig as usize][0];
            sig != super::SIGKILL && sig != super::SIGSTOP && (h == SIG_IGN || h == SIG_DFL && ignored_by_default(sig))
        })
        .fold(0, |set, sig| set | bit(sig))
}

/// True if sending `sig` now would be discarded (ignored explicitly or by default). A blocked
/// signal is kept either way, as Linux does: sigwait and sigtimedwait may take it.
fn discarded(sig: u64, blocked: bool) -> bool {
    if blocked {
        return false;
    }
    let h = handler(sig);
    sig != super::SIGKILL && (h == SIG_IGN || h == SIG_DFL && ignored_by_default(sig))
}

/// The first real-time signal (the kernel's SIGRTMIN; the C library keeps a few for itself).
pub const SIGRTMIN: u64 = 32;
/// How many further instances of real-time signals one set holds: a bound on the kernel's
/// memory (32 bytes each, 8 MiB a set), above the RLIMIT_SIGPENDING that bounds sigqueue's
/// (96,367 on a 24 GiB host; the limit was 4,096 here, so the 4,097th sigqueue failed with
/// EAGAIN and kill's instances beyond it were dropped, where Linux queues them: its
/// `override_rlimit` for a non-negative si_code).
const MAX_QUEUED: usize = 1 << 18;

/// The program's soft RLIMIT_SIGPENDING.
fn sigpending_limit() -> u64 {
    const RLIMIT_SIGPENDING: usize = 11;
    crate::linux::process::PROCESS.rlimits.lock()[RLIMIT_SIGPENDING].0
}

/// A set of pending signals with the information of each.
pub struct Pending {
    pub set: u64,
    /// The first pending instance of each signal.
    pub info: [SigInfo; 64],
    /// The further instances of pending real-time signals, in the order sent.
    queued: Vec<SigInfo>,
}

impl Pending {
    const fn new() -> Self {
        Pending { set: 0, info: [SigInfo::EMPTY; 64], queued: Vec::new() }
    }

    /// Adds an instance: Ok(true) when it is a new pending instance, Ok(false) when merged with
    /// the pending one (a standard signal, a timer's repeated expiry, or a real-time signal
    /// from kill beyond the queue's limit, as Linux loses it), EAGAIN when a real-time signal
    /// with its own information (sigqueue, tgkill) finds the queue full.
    fn add(&mut self, info: SigInfo) -> Result<bool, u32> {
        let sig = info.signo as u64;
        // A real-time signal with information of its own (sigqueue, tgkill: a negative code)
        // takes a queue entry, which RLIMIT_SIGPENDING bounds (the program's pending signals
        // here, the user's on Linux); kill's and the kernel's are not refused.
        if sig >= SIGRTMIN && info.code < 0 && PENDING_COUNT.load(Ordering::SeqCst) >= sigpending_limit() {
            return Err(crate::linux::errno::EAGAIN);
        }
        if self.set & bit(sig) == 0 {
            self.set |= bit(sig);
            self.info[sig as usize - 1] = info;
            return Ok(true);
        }
        if info.timer {
            // The timer expired again while its signal is pending: one signal, whose si_overrun
            // counts the expiries beyond the first (Linux's send_sigqueue on a queued sigqueue).
            let timer = |i: &SigInfo| i.timer && i.signo == info.signo && i.w16 as u32 == info.w16 as u32;
            let first = &mut self.info[sig as usize - 1];
            let pending = if timer(first) { Some(first) } else { self.queued.iter_mut().find(|i| timer(i)) };
            if let Some(p) = pending {
                p.w16 = super::timers::with_overrun(p.w16, 1 + (info.w16 >> 32));
                return Ok(false);
            }
        }
        if sig < SIGRTMIN {
            return Ok(false);
        }
        if self.queued.len() >= MAX_QUEUED {
            return if info.code == super::SI_USER { Ok(false) } else { Err(crate::linux::errno::EAGAIN) };
        }
        self.queued.push(info);
        Ok(true)
    }

    /// The number of pending instances.
    fn count(&self) -> u64 {
        self.set.count_ones() as u64 + self.queued.len() as u64
    }

    /// Drops every pending instance of `sig`; returns how many there were.
    fn remove_all(&mut self, sig: u64) -> u64 {
        if self.set & bit(sig) == 0 {
            return 0;
        }
        self.set &= !bit(sig);
        let before = self.queued.len();
        self.queued.retain(|i| i.signo as u64 != sig);
        1 + (before - self.queued.len()) as u64
    }

    /// Drops every pending instance of POSIX timer `id`'s signal; returns how many there were.
    fn remove_timer(&mut self, id: u32) -> u64 {
        let of_timer = |i: &SigInfo| i.timer && i.w16 as u32 == id;
        let before = self.queued.len();
        self.queued.retain(|i| !of_timer(i));
        let mut dropped = (before - self.queued.len()) as u64;
        let mut set = self.set;
        while set != 0 {
            let sig = set.trailing_zeros() as usize;
            set &= set - 1;
            if of_timer(&self.info[sig]) {
                dropped += 1;
                match self.queued.iter().position(|i| i.signo as usize == sig + 1) {
                    Some(next) => self.info[sig] = self.queued.remove(next),
                    None => self.set &= !(1 << sig),
                }
            }
        }
        dropped
    }

    /// Takes the lowest pending signal not in `mask`, synchronous ones (SEGV, BUS, ILL, TRAP,
    /// FPE, SYS) first as Linux does.
    pub fn take(&mut self, mask: u64) -> Option<SigInfo> {
        let ready = self.set & !mask;
        if ready == 0 {
            return None;
        }
        let sync = ready & (bit(11) | bit(7) | bit(4) | bit(5) | bit(8) | bit(31));
        let pick = if sync != 0 { sync } else { ready };
        let sig = pick.trailing_zeros() as usize;
        let mut taken = self.info[sig];
        if taken.timer {
            taken.w16 = super::timers::with_overrun(taken.w16, super::timers::catch_up(taken.w16));
            super::timers::delivered(taken.w16);
        }
        // A timer whose expiry merged into this instance runs again (Linux re-arms its timers
        // as their signal is taken).
        super::timers::signal_taken(sig as u64 + 1);
        // A real-time signal's next instance becomes the pending one.
        match self.queued.iter().position(|i| i.signo as usize == sig + 1) {
            Some(next) => self.info[sig] = self.queued.remove(next),
            None => self.set &= !(1 << sig),
        }
        Some(taken)
    }
}

/// One thread's signal state.
pub struct ThreadSignals {
    pub pending: Pending,
    /// The alternate stack: (sp, size, flags) with size 0 = none.
    pub alt: [u64; 3],
    /// The mask to restore once a handler is set up (rt_sigsuspend's caller mask).
    pub saved_mask: Option<u64>,
    /// The thread record, while it waits for a signal (rt_sigsuspend, rt_sigtimedwait) or
    /// sleeps interruptibly.
    pub waiter: *mut Thread,
    /// Signals that do not wake the waiter: its mask while it waits, and in an interruptible
    /// block also the signals it would discard (`interruptible_begin`).
    pub wait_mask: u64,
    /// The number of a system call interrupted by a signal (ERESTARTSYS): restarted after a
    /// handler with SA_RESTART (or when no handler runs), EINTR otherwise.
    pub restart: Option<u64>,
    /// The thread's record once registered (clone, or its first signal call): tgkill's target.
    pub thread: *mut Thread,
    /// A handler frame set up in ring 0 (ring-3 mode) whose fpstate, at this address, still has
    /// to be saved from ring 3 (`fpstate::complete_in_ring3`).
    pub fpstate_due: Option<u64>,
}

// SAFETY: `waiter` and `thread` are only dereferenced under the THREADS lock while the thread is registered,
// and a thread unregisters itself before it can exit.
unsafe impl Send for ThreadSignals {}

pub struct Signals {
    pub shared: Pending,
    pub threads: BTreeMap<u32, Box<ThreadSignals>>,
}

impl Signals {
    /// The state of thread `tid`, created on first use.
    pub fn thread(&mut self, tid: u32) -> &mut ThreadSignals {
        self.threads.entry(tid).or_insert_with(|| {
            Box::new(ThreadSignals {
                pending: Pending::new(),
                alt: [0; 3],
                saved_mask: None,
                waiter: core::ptr::null_mut(),
                wait_mask: 0,
                restart: None,
                thread: core::ptr::null_mut(),
                fpstate_due: None,
            })
        })
    }
}

pub static SIGNALS: IrqSpinLock<Signals> =
    IrqSpinLock::new(Signals { shared: Pending::new(), threads: BTreeMap::new() });

/// How many signals are pending anywhere: the return path looks at nothing else while it is 0.
pub static PENDING_COUNT: AtomicU64 = AtomicU64::new(0);

/// Sends `info` to thread `tid` (it acts when the thread next returns to the program).
/// EAGAIN when a real-time signal finds the queue full (see `Pending::add`).
pub fn send_thread(tid: u32, info: SigInfo) -> Result<(), u32> {
    send_thread_noting(tid, info, |_| {})
}

/// `send_thread`, with `merged` told under the signal lock whether the signal merged into an
/// instance already pending (not called for a discarded one): a timer then waits for that
/// instance to be taken (`timers::signal_taken`).
pub fn send_thread_noting(tid: u32, info: SigInfo, merged: impl FnOnce(bool)) -> Result<(), u32> {
    let sig = info.signo as u64;
    let mut s = SIGNALS.lock();
    let flushed = flush_stop_or_continue(&mut s, sig);
    let t = s.thread(tid);
    // SAFETY: registered threads are alive (they unregister before exiting).
    let blocked = !t.thread.is_null() && unsafe { (*t.thread).sigmask } & bit(sig) != 0;
    if discarded(sig, blocked) {
        drop(s);
        flushed_away(flushed);
        return Ok(());
    }
    let added = t.pending.add(info);
    let new = match added {
        Ok(new) => new,
        Err(e) => {
            drop(s);
            flushed_away(flushed);
            return Err(e);
        }
    };
    if new {
        PENDING_COUNT.fetch_add(1, Ordering::SeqCst);
    }
    merged(!new);
    wake_waiter(t, bit(sig));
    drop(s);
    flushed_away(flushed);
    crate::linux::signalfd::pending_added(bit(sig));
    Ok(())
}

/// Linux's prepare_signal: a stop signal (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU) being sent
/// drops a pending SIGCONT, and SIGCONT drops the pending stop signals, everywhere in the
/// program, blocked, handled or not. A program that blocked everything and was sent every
/// signal had SIGCONT pending under hrt, where Linux had dropped it at the SIGTSTP after it
/// (LTP's sighold02 sends them so). Returns the signals dropped (bits).
fn flush_stop_or_continue(s: &mut Signals, sig: u64) -> u64 {
    const SIGCONT: u64 = 18;
    let victims: u64 = if super::stops_by_default(sig) {
        bit(SIGCONT)
    } else if sig == SIGCONT {
        (19..=22).fold(0, |m, v| m | bit(v))
    } else {
        return 0;
    };
    let pending = s.threads.values().fold(s.shared.set, |all, t| all | t.pending.set) & victims;
    if pending == 0 {
        return 0;
    }
    let mut dropped = 0;
    for v in (1..=64).filter(|&v| pending & bit(v) != 0) {
        dropped += s.shared.remove_all(v);
        for t in s.threads.values_mut() {
            dropped += t.pending.remove_all(v);
        }
    }
    PENDING_COUNT.fetch_sub(dropped, Ordering::SeqCst);
    pending
}

/// `flush_stop_or_continue` for a stop signal that stops the program at once, pending nowhere.
pub fn flush_for_stop(sig: u64) {
    let flushed = flush_stop_or_continue(&mut SIGNALS.lock(), sig);
    flushed_away(flushed);
}

/// After `flush_stop_or_continue` dropped `set` (the signal lock released): a timer waiting
/// for such an instance to be taken runs on, and signalfds see them gone.
fn flushed_away(set: u64) {
    for sig in (1..=64).filter(|&v| set & bit(v) != 0) {
        super::timers::signal_taken(sig);
    }
    if set != 0 {
        crate::linux::signalfd::pending_removed(set);
    }
}

/// Linux's rule for a signal the program sends itself whose action is the default one that
/// ends a process (not one ignored or stopping by default, no handler): once a thread that
/// does not block it is there to take it (thread `target`, or any thread for a signal to the
/// process), the whole program ends with it at once, in the sender's `kill` (Linux's
/// complete_signal kills every thread then). Taking it later, on that thread's way back,
/// let the sender run on meanwhile, and an `exit` of its own could end the program first
/// with status 0. Not from a spawn child, whose signal actions are its own.
pub fn end_if_fatal(sig: u64, target: Option<u32>) {
    if sig == 0
        || handler(sig) != super::SIG_DFL
        || ignored_by_default(sig)
        || super::stops_by_default(sig)
        || crate::linux::calls::procs::child_ctx().is_some()
    {
        return;
    }
    let takes = {
        let s = SIGNALS.lock();
        let live = s.threads.iter().filter(|(_, t)| !t.thread.is_null());
        // SAFETY: registered threads are alive (they unregister before exiting).
        let mut takers = live.filter(|(_, t)| unsafe { (*t.thread).sigmask } & bit(sig) == 0);
        match target {
            Some(tid) => takers.any(|(&t, _)| t == tid),
            None => takers.next().is_some(),
        }
    };
    if takes {
        crate::linux::fault::terminate(sig as i32, None);
    }
}

/// Whether some thread of the program blocks `sig`.
pub fn blocked_anywhere(sig: u64) -> bool {
    let s = SIGNALS.lock();
    s.threads
        .values()
        .filter(|t| !t.thread.is_null())
        // SAFETY: registered threads are alive (they unregister before exiting).
        .any(|t| unsafe { (*t.thread).sigmask } & bit(sig) != 0)
}

/// Sends `info` to the process: the first thread to return to the program without blocking it
/// takes it; threads waiting for signals are woken to look. EAGAIN as `send_thread`.
pub fn send_process(info: SigInfo) -> Result<(), u32> {
    send_process_noting(info, |_| {})
}

/// `send_process`, with `merged` as for `send_thread_noting`.
pub fn send_process_noting(info: SigInfo, merged: impl FnOnce(bool)) -> Result<(), u32> {
    send_process_waking(info, merged, false)
}

/// As `send_process_noting`, for a signal that a thread running now should take where one
/// does not block it (a CPU-time timer's: Linux sends it from the thread whose time made it
/// expire, and its complete_signal keeps it there): no waiting thread is woken for it then.
pub fn send_process_to_runners(info: SigInfo, merged: impl FnOnce(bool)) -> Result<(), u32> {
    send_process_waking(info, merged, true)
}

fn send_process_waking(info: SigInfo, merged: impl FnOnce(bool), prefer_running: bool) -> Result<(), u32> {
    let sig = info.signo as u64;
    if !(1..=64).contains(&sig) {
        return Err(linux_raw_sys::errno::EINVAL);
    }
    let mut s = SIGNALS.lock();
    let flushed = flush_stop_or_continue(&mut s, sig);
    let blocked = s
        .threads
        .values()
        .filter(|t| !t.thread.is_null())
        // SAFETY: as above.
        .any(|t| unsafe { (*t.thread).sigmask } & bit(sig) != 0);
    if discarded(sig, blocked) {
        drop(s);
        flushed_away(flushed);
        return Ok(());
    }
    // A CPU-time timer's signal goes to a thread that runs, into its own queue, as Linux's
    // complete_signal gives it to the thread whose tick found the expiry. Left in the shared
    // queue, whichever thread came back to the program first took it: on a loaded host, a
    // thread waking from a sleep (which fires due timers on its way back) before the busy
    // thread's vCPU ran again. Another runner than the caller first: the caller may be the one
    // that just woke; busy threads still share the signals, each finding some expiries.
    let runner = prefer_running.then(|| running_thread_for(&s, sig)).flatten();
    let queue = match runner {
        Some(tid) => match s.threads.get_mut(&tid) {
            Some(t) => &mut t.pending,
            None => &mut s.shared,
        },
        None => &mut s.shared,
    };
    let new = match queue.add(info) {
        Ok(new) => new,
        Err(e) => {
            drop(s);
            flushed_away(flushed);
            return Err(e);
        }
    };
    if new {
        PENDING_COUNT.fetch_add(1, Ordering::SeqCst);
    }
    merged(!new);
    if runner.is_some() {
        drop(s);
        flushed_away(flushed);
        crate::linux::signalfd::pending_added(bit(sig));
        return Ok(());
    }
    // One waiter is woken to take it, as Linux's complete_signal picks one thread: each woken
    // thread saw it pending and ended its wait with EINTR, though only one ran the handler
    // (8 threads in nanosleep, one kill: EINTR in 2-3 of them in some rounds).
    let runner = prefer_running
        && s.threads.values().any(|t| {
            // SAFETY: as above.
            t.waiter.is_null() && !t.thread.is_null() && unsafe { (*t.thread).sigmask } & bit(sig) == 0
        });
    if let Some(t) = s.threads.values_mut().find(|t| !runner && !t.waiter.is_null() && t.wait_mask & bit(sig) == 0) {
        wake_waiter(t, bit(sig));
    }
    drop(s);
    flushed_away(flushed);
    crate::linux::signalfd::pending_added(bit(sig));
    Ok(())
}

/// A thread of the program that runs (waits for nothing) and does not block `sig`: another
/// than the caller where there is one, else the caller.
fn running_thread_for(s: &Signals, sig: u64) -> Option<u32> {
    let me = crate::linux::process::current_tid();
    // SAFETY: registered threads are alive (they unregister under the signal lock, held here).
    let runs =
        |t: &ThreadSignals| t.waiter.is_null() && !t.thread.is_null() && unsafe { (*t.thread).sigmask } & bit(sig) == 0;
    let mut runners = s.threads.iter().filter(|(_, t)| runs(t)).map(|(&tid, _)| tid);
    let first = runners.next()?;
    if first != me {
        return Some(first);
    }
    Some(runners.next().unwrap_or(first))
}

/// Whether the program's main thread waits interruptibly (a blocking call, a sleep, a signal
/// wait) for signals that include `sig`, which it does not block: Linux's complete_signal gives
/// a signal sent to the process to that thread first (it wants it), so a `kill` of the
/// program by another of its threads interrupts the main thread's blocking call. Here a
/// process signal is anyone's, and the sending thread took it on its way back from `kill`:
/// the main thread's `read` never ended (`calls::signal::kill` sends it to the thread then).
pub fn main_thread_waits_for(sig: u64) -> Option<u32> {
    let main = crate::linux::process::pid();
    let s = SIGNALS.lock();
    let t = s.threads.get(&main)?;
    // SAFETY: a registered thread's record is alive (it unregisters under this lock).
    let blocked = !t.thread.is_null() && unsafe { (*t.thread).sigmask } & bit(sig) != 0;
    (!t.waiter.is_null() && t.wait_mask & bit(sig) == 0 && !blocked && s.shared.set & bit(sig) == 0).then_some(main)
}

/// The signals pending anywhere in the program: for the process or for any of its threads
/// (what makes a signalfd readable here, see `linux::signalfd`).
pub fn pending_anywhere() -> u64 {
    let s = SIGNALS.lock();
    s.threads.values().fold(s.shared.set, |all, t| all | t.pending.set)
}

/// Takes a pending signal of `set` for thread `tid`: its own first, then the process's (the
/// order of Linux's dequeue_signal).
pub fn take_for(tid: u32, set: u64) -> Option<SigInfo> {
    let mut s = SIGNALS.lock();
    let own = s.thread(tid).pending.take(!set);
    let got = own.or_else(|| s.shared.take(!set));
    if got.is_some() {
        PENDING_COUNT.fetch_sub(1, Ordering::SeqCst);
    }
    got
}

fn wake_waiter(t: &mut ThreadSignals, b: u64) {
    if !t.waiter.is_null() && t.wait_mask & b == 0 {
        // SAFETY: a registered waiter is alive (it unregisters itself under this lock before
        // it goes on).
        unsafe { crate::sched::wake(t.waiter) };
    }
}

/// Drops pending instances of `sig` (it became ignored).
pub fn discard(sig: u64) {
    remove_everywhere(|p| p.remove_all(sig));
    // A timer waiting for such an instance to be taken runs on (`timers::signal_taken`).
    super::timers::signal_taken(sig);
    crate::linux::signalfd::pending_removed(bit(sig));
}

/// Drops the pending signals of POSIX timer `id`, which is being re-armed, disarmed or deleted:
/// recent Linux (6.18 on the test host; older kernels delivered them) no longer does then.
pub fn discard_timer(id: u32) {
    remove_everywhere(|p| p.remove_timer(id));
}

/// Applies `remove` to the process's and every thread's pending signals, which returns how
/// many instances it dropped.
fn remove_everywhere(remove: impl Fn(&mut Pending) -> u64) {
    let mut s = SIGNALS.lock();
    let mut dropped = remove(&mut s.shared);
    for t in s.threads.values_mut() {
        dropped += remove(&mut t.pending);
    }
    PENDING_COUNT.fetch_sub(dropped, Ordering::SeqCst);
}

/// The pending signals of thread `tid` and of the process.
pub fn pending_for(tid: u32) -> u64 {
    let mut s = SIGNALS.lock();
    let shared = s.shared.set;
    s.thread(tid).pending.set | shared
}

/// Thread `tid`'s alternate stack (sp, size, flags).
pub fn alt_stack(tid: u32) -> [u64; 3] {
    SIGNALS.lock().threads.get(&tid).map_or([0; 3], |t| t.alt)
}

pub fn set_alt_stack(tid: u32, alt: [u64; 3]) {
    SIGNALS.lock().thread(tid).alt = alt;
}

const SS_ONSTACK: u64 = 1;
/// The flags Linux keeps for a disabled (or disarmed) alternate stack.
pub const SS_DISABLE: u64 = 2;
pub const SS_AUTODISARM: u64 = 1 << 31;
const MINSIGSTKSZ: u64 = 2048;

/// Gives thread `tid`, whose stack pointer is `sp`, the alternate stack `new` (a `stack_t`:
/// sp, flags, size) with Linux's rules (`do_sigaltstack`): EPERM while `sp` is on the current
/// one, EINVAL for unknown flags, ENOMEM below MINSIGSTKSZ. sigaltstack, and rt_sigreturn with
/// the frame's `uc_stack`.
pub fn change_alt_stack(tid: u32, sp: u64, new: [u64; 3]) -> Result<(), u32> {
    let [cur_sp, cur_size, _] = alt_stack(tid);
    if cur_size != 0 && sp > cur_sp && sp - cur_sp <= cur_size {
        return Err(linux_raw_sys::errno::EPERM);
    }
    let [ss_sp, flags, size] = new;
    let flags = flags & 0xffff_ffff;
    let value = match flags & !SS_AUTODISARM {
        SS_DISABLE => [0, 0, SS_DISABLE],
        0 | SS_ONSTACK if size < MINSIGSTKSZ => return Err(linux_raw_sys::errno::ENOMEM),
        0 | SS_ONSTACK => [ss_sp, size, flags & SS_AUTODISARM],
        _ => return Err(linux_raw_sys::errno::EINVAL),
    };
    set_alt_stack(tid, value);
    Ok(())
}

/// execve: the exec'ing thread's state moves from `old` to `tid` (it becomes the thread-group
/// leader, with the pid), keeping its pending signals; its alternate stack is cleared.
pub fn exec_rekey(old: u32, tid: u32) {
    threads_changed();
    let mut s = SIGNALS.lock();
    let mut t = s.threads.remove(&old);
    if let Some(t) = t.as_mut() {
        t.alt = [0; 3];
    }
    // The old leader's state, if any, died with it (thread_exited).
    if let Some(t) = t {
        s.threads.insert(tid, t);
    }
}

/// Forgets an exiting thread's state (its pending signals die with it, as on Linux).
/// Whether `tid` is one of the program's live threads.
pub fn is_program_thread(tid: u32) -> bool {
    SIGNALS.lock().threads.contains_key(&tid)
}

pub fn thread_exited(tid: u32) {
    threads_changed();
    let mut s = SIGNALS.lock();
    if let Some(t) = s.threads.remove(&tid) {
        if !t.thread.is_null() {
            // SAFETY: the thread unregisters itself here; its record is alive.
            crate::linux::cputime::add_exited(unsafe { &*t.thread });
        }
        PENDING_COUNT.fetch_sub(t.pending.count(), Ordering::SeqCst);
        drop(s);
        // Its pending signals go with it: a timer waiting for one of them to be taken runs on.
        let mut set = t.pending.set;
        while set != 0 {
            let sig = set.trailing_zeros() as u64 + 1;
            set &= set - 1;
            super::timers::signal_taken(sig);
        }
    }
}

/// Interrupts CPU `cpu` so that a thread running the program there passes the return path
/// (and takes a signal just sent to it).
pub fn kick(cpu: usize) {
    if cpu != crate::cpu::id() {
        crate::arch::x86_64::apic::send_ipi(crate::cpu::apic_id(cpu), crate::arch::x86_64::apic::KICK_VECTOR);
    }
}

/// Kicks every other CPU that runs one of the program's threads now (after a process-directed
/// signal: whichever runs a thread that does not block it takes it). A waiting thread was woken
/// when the signal was queued and a ready one takes it on its way back, as for `kick_thread`.
/// An interrupt to every other CPU cost each process-directed signal an ICR write through
/// emulated ring 0 on PVM even with no other CPU running the program (`kill` of the program
/// itself: 82 us against `tgkill`'s 20 at `--cpus 1`).
pub fn kick_all() {
    let mut cpus = [0u64; hrt_abi::MAX_CPUS / 64];
    {
        let s = SIGNALS.lock();
        for t in s.threads.values().filter(|t| !t.thread.is_null()) {
            // SAFETY: registered threads are alive (they unregister under this lock).
            let cpu = unsafe { (*t.thread).cpu };
            if cpu < hrt_abi::MAX_CPUS && crate::cpu::get(cpu).current_thread.load(Ordering::SeqCst) == t.thread as u64
            {
                cpus[cpu / 64] |= 1 << (cpu % 64);
            }
        }
    }
    for (word, bits) in cpus.iter().enumerate() {
        let mut bits = *bits;
        while bits != 0 {
            let cpu = word * 64 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            kick(cpu);
        }
    }
}

/// `f` of the record of the program's thread `tid` (the caller's own too), None if no such
/// thread runs the program. Another thread's record is lent under the signal lock, which it
/// takes to unregister before it exits.
pub fn with_thread<R>(tid: u32, f: impl FnOnce(&Thread) -> R) -> Option<R> {
    let me = crate::sched::current();
    // SAFETY: the current thread's record is alive.
    if unsafe { (*me).tid } == tid {
        // SAFETY: as above.
        return Some(f(unsafe { &*me }));
    }
    let s = SIGNALS.lock();
    let t = s.threads.get(&tid).map(|t| t.thread).filter(|t| !t.is_null())?;
    // SAFETY: registered threads are alive (they unregister, under this lock, before exiting).
    Some(f(unsafe { &*t }))
}

/// Bumped whenever the program's threads change (`threads_changed`): the channel republishes
/// their ids for `/proc/self/task` when it moved (`linux::channel`).
pub static THREADS_GENERATION: AtomicU64 = AtomicU64::new(0);

/// The program's threads came or went.
pub fn threads_changed() {
    THREADS_GENERATION.fetch_add(1, Ordering::Release);
}

/// Calls `f` with the ids of the program's live threads, the main thread's (`pid`) first if
/// it lives; returns how many there are.
pub fn live_tids(pid: u32, mut f: impl FnMut(usize, u32)) -> usize {
    let s = SIGNALS.lock();
    let live = |tid: u32, t: &ThreadSignals| (!t.thread.is_null()).then_some(tid);
    let main = s.threads.get(&pid).and_then(|t| live(pid, t));
    let others = s.threads.iter().filter_map(|(&tid, t)| live(tid, t)).filter(|&tid| tid != pid);
    let mut n = 0;
    for tid in main.into_iter().chain(others) {
        f(n, tid);
        n += 1;
    }
    n
}

/// Kicks the CPU of thread `tid`, if registered.
pub fn kick_thread(tid: u32) {
    let target = SIGNALS.lock().threads.get(&tid).filter(|t| !t.thread.is_null()).map(|t| {
        // SAFETY: as above.
        (unsafe { (*t.thread).cpu }, t.thread as u64)
    });
    // Only a thread running now needs the interrupt: a waiting one was woken when the signal
    // was queued (`wake_waiter`), and a ready one takes it on its way back to the program.
    // Both stores come first (the signal's under the lock, the CPU's current thread at each
    // switch, both SeqCst), so either the look here sees it running or its return sees the
    // signal. Each kick is an IPI through emulated ring 0 on PVM: 64 threads with 1 ms timers
    // at `--cpus 2` sent ~68,000 a run and woke up to 2.2 s late (26 ms natively).
    if let Some((cpu, thread)) = target {
        if crate::cpu::get(cpu).current_thread.load(Ordering::SeqCst) == thread {
            kick(cpu);
        }
    }
}

/// Makes the current thread's coming block interruptible by signals it does not block: called
/// after it set itself BLOCKING and registered with its waker, before `sched::block`. A signal
/// already pending cancels the block at once.
pub fn interruptible_begin() {
    let me = crate::sched::current();
    // SAFETY: the current thread's record is alive.
    let (tid, mask) = unsafe { ((*me).tid, (*me).sigmask) };
    // A signal pending only because another thread blocks it (kept for that thread) does not
    // end the wait if this thread would only discard it: a default-ignored SIGCHLD from a child
    // cut a sleep short with EINTR when another thread blocked SIGCHLD.
    let quiet = mask | ignored_now();
    let mut s = SIGNALS.lock();
    let shared = s.shared.set;
    let t = s.thread(tid);
    t.waiter = me;
    t.wait_mask = quiet;
    if (t.pending.set | shared) & !quiet != 0 {
        // SAFETY: our own record; BLOCKING becomes READY and the block returns at once.
        unsafe { crate::sched::wake(me) };
    }
}

/// Whether a signal is pending that the current thread takes on its way back to the program
/// (its own or the process's, not blocked by its mask). One load while none is pending.
pub fn deliverable_here() -> bool {
    deliverable_here_besides(0)
}

/// `deliverable_here`, not counting signal `sig` (0: none).
pub fn deliverable_here_besides(sig: u64) -> bool {
    if PENDING_COUNT.load(Ordering::SeqCst) == 0 {
        return false;
    }
    let me = crate::sched::current();
    // SAFETY: the current thread's record is alive.
    let (tid, mask, user) = unsafe { ((*me).tid, (*me).sigmask, (*me).is_user) };
    if !user {
        return false;
    }
    let mut s = SIGNALS.lock();
    let shared = s.shared.set;
    let besides = if sig == 0 { 0 } else { bit(sig) };
    (s.thread(tid).pending.set | shared) & !mask & !besides != 0
}

/// The information of `sig` when it is the only signal pending that the current thread does
/// not block (in the thread's set or the process's).
pub fn only_deliverable_here(sig: u64) -> Option<SigInfo> {
    let me = crate::sched::current();
    // SAFETY: the current thread's record is alive.
    let (tid, mask) = unsafe { ((*me).tid, (*me).sigmask) };
    let mut s = SIGNALS.lock();
    let shared = (s.shared.set, s.shared.info[sig as usize - 1]);
    let own = &s.thread(tid).pending;
    if (own.set | shared.0) & !mask != bit(sig) {
        return None;
    }
    Some(if own.set & bit(sig) != 0 { own.info[sig as usize - 1] } else { shared.1 })
}

/// Ends an interruptible block; true if a signal the thread does not block is pending (the
/// call should stop with EINTR or ERESTARTSYS).
pub fn interruptible_end() -> bool {
    let me = crate::sched::current();
    // SAFETY: the current thread's record is alive.
    let tid = unsafe { (*me).tid };
    let mut s = SIGNALS.lock();
    let shared = s.shared.set;
    let t = s.thread(tid);
    t.waiter = core::ptr::null_mut();
    // (`interruptible_begin`'s mask and ignored signals.)
    (t.pending.set | shared) & !t.wait_mask != 0
}

/// Records that the current system call `nr` was interrupted (see `ThreadSignals::restart`).
pub fn note_restart(tid: u32, nr: u64) {
    if SIGNALS.lock().thread(tid).restart.replace(nr).is_none() {
        RESTARTS.fetch_add(1, Ordering::SeqCst);
    }
}

/// Threads with an interrupted system call to settle on their way back.
pub static RESTARTS: AtomicU64 = AtomicU64::new(0);

/// Takes the current thread's interrupted system call, if any.
pub fn take_restart(tid: u32) -> Option<u64> {
    let nr = SIGNALS.lock().thread(tid).restart.take();
    if nr.is_some() {
        RESTARTS.fetch_sub(1, Ordering::SeqCst);
    }
    nr
}

/// A forked child (`calls::fork`): only the forking thread lives on, as `tid`, with its
/// alternate stack; nothing is pending (Linux does not pass pending signals on to a child).
pub fn after_fork(tid: u32, alt: [u64; 3]) {
    threads_changed();
    let mut s = SIGNALS.lock();
    s.shared = Pending::new();
    s.threads = BTreeMap::new();
    s.thread(tid).alt = alt;
    PENDING_COUNT.store(0, Ordering::SeqCst);
    RESTARTS.store(0, Ordering::SeqCst);
    super::deliver::SUSPENDED.store(0, Ordering::SeqCst);
}
