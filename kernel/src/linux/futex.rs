//! Futexes: kernel wait queues keyed by the program's address. Waiters sit in one of 64
//! hashed buckets; each waiter's record lives on its own kernel stack while it waits. Each
//! bucket also counts its waiters, so that a wake-up with nobody to wake (what OpenMP and
//! pthread barriers and mutexes issue most) is one fence and one load, without the lock
//! (see `Bucket::has_waiters`).

use alloc::vec::Vec;
use core::sync::atomic::{fence, AtomicU32, Ordering};

use super::errno::{SysResult, EAGAIN, EFAULT, EINVAL, ENOSYS, ETIMEDOUT};
use super::uaccess;
use crate::arch::traps::TrapFrame;
use crate::sched::{self, thread::BLOCKING, Thread};
use crate::sync::IrqSpinLock;

const FUTEX_WAIT: u64 = 0;
const FUTEX_WAKE: u64 = 1;
const FUTEX_REQUEUE: u64 = 3;
pub(super) const FUTEX_CMP_REQUEUE: u64 = 4;
const FUTEX_WAKE_OP: u64 = 5;
pub(super) const FUTEX_WAIT_BITSET: u64 = 9;
pub(super) const FUTEX_WAKE_BITSET: u64 = 10;
const FUTEX_LOCK_PI: u64 = 6;
const FUTEX_UNLOCK_PI: u64 = 7;
const FUTEX_TRYLOCK_PI: u64 = 8;
const FUTEX_LOCK_PI2: u64 = 13;
pub(super) const FUTEX_PRIVATE_FLAG: u64 = 128;
pub(super) const FUTEX_CLOCK_REALTIME: u64 = 256;
pub(super) const BITSET_ANY: u32 = u32::MAX;

pub(super) struct Waiter {
    pub(super) addr: u64,
    pub(super) bitset: u32,
    pub(super) thread: *mut Thread,
    pub(super) woken: bool,
}

struct Waiters(Vec<*mut Waiter>);

// SAFETY: waiter pointers are only dereferenced under the bucket lock, while their owners wait.
unsafe impl Send for Waiters {}

/// A hash bucket: its waiters, and how many there are. A cache line each: a thread waking on
/// one bucket does not disturb the lock of another.
#[repr(align(64))]
struct Bucket {
    /// The length of `list`, changed only under its lock, read by wakers without it.
    waiting: AtomicU32,
    list: IrqSpinLock<Waiters>,
}

impl Bucket {
    /// Whether a wake-up must look at the list. Called after the caller (or the program that
    /// made the call) changed the futex word.
    ///
    /// Ordering: a waiter counts itself (a SeqCst read-modify-write, under the lock) before
    /// it reads the word (SeqCst), and sleeps only if the word still holds its value. A waker
    /// changes the word, then runs a SeqCst fence, then reads the count. In the single total
    /// order of SeqCst operations either the waiter's count comes before the fence, and the
    /// load after the fence sees it (the waker then takes the lock, which the waiter holds
    /// from before counting until it is listed, so the waker finds it), or the fence comes
    /// before the count, and then the word change (before the fence in the waker's program
    /// order) is visible to the waiter's later read of the word, which then differs from its
    /// value: the waiter does not sleep. So a waker that reads 0 never misses a sleeper. On
    /// x86 the fence is what keeps the program's store to the word from being passed by this
    /// load (a store may wait in the store buffer while a later load completes).
    fn has_waiters(&self) -> bool {
        fence(Ordering::SeqCst);
        self.waiting.load(Ordering::Relaxed) != 0
    }
}

static BUCKETS: [Bucket; 64] =
    [const { Bucket { waiting: AtomicU32::new(0), list: IrqSpinLock::new(Waiters(Vec::new())) } }; 64];

fn bucket(addr: u64) -> &'static Bucket {
    &BUCKETS[((addr >> 2) ^ (addr >> 8)) as usize % 64]
}

pub(super) fn user_atomic(addr: u64) -> Result<&'static AtomicU32, u32> {
    user_word(addr)?;
    // The kernel touches it: a shared file page another process took away is EFAULT.
    if super::shared_files::vanished(addr, addr + 4) {
        return Err(super::errno::EFAULT);
    }
    // SAFETY: checked, aligned program memory.
    Ok(unsafe { &*(addr as *const AtomicU32) })
}

/// Checks that `addr` is an aligned futex word of the program's memory (EINVAL, EFAULT).
pub(super) fn user_word(addr: u64) -> Result<(), u32> {
    if !addr.is_multiple_of(4) {
        return Err(EINVAL);
    }
    uaccess::check(addr, 4)
}

/// Waits on `addr` while it holds `val`, until woken or until TSC `deadline`.
fn wait(addr: u64, val: u32, bitset: u32, deadline: Option<u64>) -> SysResult {
    if bitset == 0 {
        return Err(EINVAL);
    }
    let word = user_atomic(addr)?;
    // A lock's word often changes within a microsecond (its holder's critical section ends):
    // look a while before sleeping, as a wait that came through SYSCALL did by the time it
    // read the word (~1 us on PVM). Without it glibc's contended mutexes slept and were woken
    // at nearly every hand-over once their futex calls became plain calls.
    let until = crate::time::ticks() + crate::time::ns_to_ticks(WAIT_LOOK_NS);
    while word.load(Ordering::Relaxed) == val {
        if crate::time::ticks() >= until {
            return wait_on(word, val, bitset, deadline);
        }
        core::hint::spin_loop();
    }
    Err(EAGAIN)
}

/// How long a program's futex wait looks at its word before it sleeps.
const WAIT_LOOK_NS: u64 = 1000;

/// The kernel's own futex wait (the OpenMP runtime's): sleeps while `word` holds `val`, until
/// a `wake_word` or a signal. The word is the caller's (kernel or checked program memory).
pub fn wait_word(word: &AtomicU32, val: u32) {
    let _ = wait_on(word, val, BITSET_ANY, None);
}

/// Wakes up to `n` threads sleeping in `wait_word` (or a program's futex wait) on `word`.
pub fn wake_word(word: &AtomicU32, n: u64) -> u64 {
    wake_address(word as *const AtomicU32 as u64, n)
}

/// Sleeps while `word` holds `val`, until woken, a signal (ERESTARTSYS, EINTR with a
/// deadline) or `deadline` (ETIMEDOUT); EAGAIN if the word differs already. For the PI
/// futexes (`pi_futex`), which share the wait queues.
pub(super) fn sleep_while(word: &AtomicU32, val: u32, deadline: Option<u64>) -> SysResult {
    wait_on(word, val, BITSET_ANY, deadline)
}

/// Whether anybody waits on `addr` (under its bucket's lock, so a waiter being listed is seen
/// or sees what the caller changes afterwards), and `f`'s answer, `f` run under that lock.
pub(super) fn with_waiters<R>(addr: u64, f: impl FnOnce(bool) -> R) -> R {
    let b = bucket(addr);
    let list = b.list.lock();
    // SAFETY: listed waiters are alive (their owners wait for this lock to leave).
    let any = list.0.iter().any(|&w| unsafe { (*w).addr == addr });
    f(any)
}

/// Waits as `wait_on_once`, again after a wake-up that was none of the three (a process signal
/// that woke every waiter and that another thread took first: Linux restarts such a wait).
fn wait_on(word: &AtomicU32, val: u32, bitset: u32, deadline: Option<u64>) -> SysResult {
    loop {
        match wait_on_once(word, val, bitset, deadline) {
            Err(ETIMEDOUT) if deadline.is_none_or(|d| crate::time::ticks() < d) => continue,
            r => return r,
        }
    }
}

fn wait_on_once(word: &AtomicU32, val: u32, bitset: u32, deadline: Option<u64>) -> SysResult {
    let addr = word as *const AtomicU32 as u64;
    let me = sched::current();
    let mut node = Waiter { addr, bitset, thread: me, woken: false };
    let node_ptr: *mut Waiter = &mut node;
    {
        let b = bucket(addr);
        let mut list = b.list.lock();
        // Counted before the word is read: see `Bucket::has_waiters`.
        b.waiting.fetch_add(1, Ordering::SeqCst);
        if word.load(Ordering::SeqCst) != val {
            b.waiting.fetch_sub(1, Ordering::Relaxed);
            return Err(EAGAIN);
        }
        list.0.push(node_ptr);
        // SAFETY: the current thread's record is alive.
        unsafe { (*me).state.store(BLOCKING, Ordering::SeqCst) };
    }
    // A signal the thread does not block ends the wait (EINTR, or a restart with SA_RESTART).
    super::signal::state::interruptible_begin();
    match deadline {
        Some(d) => sched::block_until(d),
        None => sched::block(),
    }
    let interrupted = super::signal::state::interruptible_end();
    if settle(node_ptr) {
        return Ok(0);
    }
    Err(match (interrupted, deadline) {
        (true, None) => super::signal::ERESTARTSYS,
        (true, Some(_)) => super::errno::EINTR,
        (false, _) => ETIMEDOUT,
    })
}

/// After a wait (woken, timed out, interrupted, or requeued and then one of those): true if
/// waiter `node` was woken, else takes it off its bucket's list.
pub(super) fn settle(node: *mut Waiter) -> bool {
    loop {
        // SAFETY: `node` is the caller's; `addr` only changes under the lock of the bucket
        // holding it.
        let at = unsafe { core::ptr::read_volatile(&(*node).addr) };
        let b = bucket(at);
        let mut list = b.list.lock();
        // SAFETY: as above, now under that bucket's lock.
        if unsafe { (*node).woken } {
            return true;
        }
        if let Some(i) = list.0.iter().position(|&w| w == node) {
            list.0.swap_remove(i);
            b.waiting.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        // Requeued meanwhile to another bucket: look again.
    }
}

/// Lists waiter `node` (on the current thread, whose state the caller has set to BLOCKING)
/// on its address's bucket if `word` still holds `val`; false (not listed) if it does not.
pub(super) fn enqueue_if(node: *mut Waiter, word: &AtomicU32, val: u32) -> bool {
    // SAFETY: `node` is the caller's and listed nowhere yet.
    let b = bucket(unsafe { (*node).addr });
    let mut list = b.list.lock();
    // Counted before the word is read: see `Bucket::has_waiters`.
    b.waiting.fetch_add(1, Ordering::SeqCst);
    if word.load(Ordering::SeqCst) != val {
        b.waiting.fetch_sub(1, Ordering::Relaxed);
        return false;
    }
    list.0.push(node);
    true
}

/// Wakes up to `n` waiters of `addr` whose bitset matches; returns how many. One pass over
/// the bucket (removing woken waiters one by one would make a broadcast to n waiters O(n^2)).
pub(super) fn wake_in_bucket(addr: u64, n: u64, bitset: u32) -> u64 {
    let b = bucket(addr);
    if !b.has_waiters() {
        return 0;
    }
    wake_in(b, &mut b.list.lock(), addr, n, bitset)
}

/// Wakes as `wake_in_bucket`, `list` being `b`'s list, locked.
fn wake_in(b: &Bucket, list: &mut Waiters, addr: u64, n: u64, bitset: u32) -> u64 {
    let mut woken = 0;
    list.0.retain(|&w| {
        if woken >= n {
            return true;
        }
        // SAFETY: listed waiters are alive (their owners wait for this lock to leave).
        unsafe {
            if (*w).addr == addr && (*w).bitset & bitset != 0 {
                (*w).woken = true;
                // Under the lock: the waiter cannot return (and exit) before this.
                sched::wake((*w).thread);
                woken += 1;
                return false;
            }
        }
        true
    });
    if woken != 0 {
        b.waiting.fetch_sub(woken as u32, Ordering::Relaxed);
    }
    woken
}

/// Wakes up to `n` waiters of `addr` (thread exit's CLONE_CHILD_CLEARTID wake-up).
pub fn wake_address(addr: u64, n: u64) -> u64 {
    wake_in_bucket(addr, n, BITSET_ANY)
}

/// FUTEX_WAKE and FUTEX_WAKE_BITSET (also the system-call fast path's). A wake-up never
/// touches the word, and for a private futex Linux checks only that the address is aligned
/// and starts in user space (its key is the address itself, `get_futex_key`; `access_ok` of
/// Linux 6.x checks the start only): so does this, so an unmapped page is no error. A shared
/// one must be mapped memory (EFAULT otherwise, as Linux's page lookup).
fn wake(addr: u64, n: u64, bitset: u32, private: bool) -> SysResult {
    if bitset == 0 {
        return Err(EINVAL);
    }
    // Linux counts a wake-up before it compares with the count: 0 wakes one.
    let n = n.max(1);
    if private {
        private_key(addr)?;
    } else {
        user_atomic(addr)?;
    }
    Ok(wake_in_bucket(addr, n, bitset))
}

/// What Linux checks of a private futex address it does not read: aligned (EINVAL) and in
/// user space (EFAULT); whether it is mapped does not matter.
pub(super) fn private_key(addr: u64) -> Result<(), u32> {
    if !addr.is_multiple_of(4) {
        return Err(EINVAL);
    }
    if addr > uaccess::USER_END {
        return Err(EFAULT);
    }
    Ok(())
}

/// The fast path's futex call (`is_wake_only`): a private wake-up, with no trap frame.
pub fn fast_wake(a: [u64; 6]) -> SysResult {
    let bitset = if a[1] & 0x7f == FUTEX_WAKE { BITSET_ANY } else { a[5] as u32 };
    wake(a[0], a[2] as u32 as u64, bitset, true)
}

fn requeue(addr: u64, addr2: u64, nwake: u64, nmove: u64, expect: Option<u32>, private: bool) -> SysResult {
    // Only CMP_REQUEUE reads the word; otherwise a private futex's addresses are only keys, as
    // Linux's (a shared one's key is its page, which must be mapped).
    let word = if expect.is_some() { Some(user_atomic(addr)?) } else { None };
    for a in [addr, addr2] {
        if private {
            private_key(a)?;
        } else {
            user_atomic(a)?;
        }
    }
    let (b1, b2) = (bucket(addr), bucket(addr2));
    let same = core::ptr::eq(b1, b2);
    // Lock in address order so two requeues cannot deadlock.
    let (first, second) = if (b1 as *const _ as usize) <= (b2 as *const _ as usize) { (b1, b2) } else { (b2, b1) };
    let mut g1 = first.list.lock();
    let mut g2 = if same { None } else { Some(second.list.lock()) };
    if let (Some(v), Some(word)) = (expect, word) {
        if word.load(Ordering::SeqCst) != v {
            return Err(EAGAIN);
        }
    }
    let src: &mut Waiters = if core::ptr::eq(first, b1) { &mut g1 } else { g2.as_mut().unwrap() };
    let woken = wake_in(b1, src, addr, nwake, BITSET_ANY);
    if addr == addr2 {
        // Requeued onto itself: counted, left where they wait (Linux moves a waiter only
        // between hash buckets; the order of wake-ups stays first come, first woken).
        // SAFETY: listed waiters are alive; we hold the bucket's lock.
        let here = src.0.iter().filter(|&&w| unsafe { (*w).addr } == addr).count() as u64;
        return Ok(woken + here.min(nmove));
    }
    let mut moved = Vec::new();
    src.0.retain(|&w| {
        // SAFETY: listed waiters are alive; we hold the locks of both buckets.
        unsafe {
            if (moved.len() as u64) < nmove && (*w).addr == addr {
                (*w).addr = addr2;
                moved.push(w);
                return false;
            }
        }
        true
    });
    let n = moved.len() as u64;
    b1.waiting.fetch_sub(n as u32, Ordering::Relaxed);
    b2.waiting.fetch_add(n as u32, Ordering::Relaxed);
    let dst: &mut Waiters = if same || core::ptr::eq(first, b2) { &mut g1 } else { g2.as_mut().unwrap() };
    dst.0.extend(moved);
    Ok(woken + n)
}

fn sign_extend_12(v: u32) -> i32 {
    ((v << 20) as i32) >> 20
}

/// FUTEX_WAKE_OP: applies the encoded operation to `addr2`, then wakes up to `n` waiters of
/// `addr` and, if the old value of `addr2` met the encoded condition, up to `n2` of `addr2`,
/// each through `wake_at` (this kernel's queues, or also the host's for shared memory).
pub(super) fn wake_op_with(
    addr: u64,
    addr2: u64,
    n: u64,
    n2: u64,
    encoded: u32,
    wake_at: impl Fn(u64, u64) -> SysResult,
) -> SysResult {
    user_atomic(addr)?;
    let word2 = user_atomic(addr2)?;
    // The kernel writes this word: it must be writable (a read-only page would fault here).
    uaccess::check_write(addr2, 4)?;
    let op = (encoded >> 28) & 0xf;
    let cmp = (encoded >> 24) & 0xf;
    let mut oparg = sign_extend_12((encoded >> 12) & 0xfff) as u32;
    let cmparg = sign_extend_12(encoded & 0xfff);
    if op & 8 != 0 {
        // FUTEX_OP_OPARG_SHIFT: Linux takes the shift modulo 32 (it was 0 past 31 here).
        oparg = 1u32 << (oparg & 31);
    }
    let apply = |old: u32| match op & 7 {
        0 => Some(oparg),
        1 => Some(old.wrapping_add(oparg)),
        2 => Some(old | oparg),
        3 => Some(old & !oparg),
        4 => Some(old ^ oparg),
        _ => None,
    };
    let mut old = word2.load(Ordering::SeqCst);
    loop {
        let new = apply(old).ok_or(ENOSYS)?;
        match word2.compare_exchange(old, new, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => break,
            Err(v) => old = v,
        }
    }
    let o = old as i32;
    let cond = match cmp {
        0 => o == cmparg,
        1 => o != cmparg,
        2 => o < cmparg,
        3 => o <= cmparg,
        4 => o > cmparg,
        5 => o >= cmparg,
        _ => return Err(ENOSYS),
    };
    // Each count wakes one at least, as Linux counts a wake-up before it compares.
    let mut woken = wake_at(addr, n.max(1))?;
    if cond {
        woken += wake_at(addr2, n2.max(1))?;
    }
    Ok(woken)
}

fn wake_op(addr: u64, addr2: u64, n: u64, n2: u64, encoded: u32) -> SysResult {
    wake_op_with(addr, addr2, n, n2, encoded, |a, n| Ok(wake_address(a, n)))
}

/// A TSC deadline from a timeout: relative for FUTEX_WAIT, absolute for FUTEX_WAIT_BITSET.
pub(super) fn deadline(timeout: u64, absolute: bool, realtime: bool) -> Result<Option<u64>, u32> {
    if timeout == 0 {
        return Ok(None);
    }
    let [s, ns] = uaccess::read::<[i64; 2]>(timeout).map_err(|_| EFAULT)?;
    if s < 0 || !(0..1_000_000_000).contains(&ns) {
        return Err(EINVAL);
    }
    let t = (s as u64).saturating_mul(1_000_000_000).saturating_add(ns as u64);
    let rel = if absolute {
        let now = if realtime { super::calls::time::realtime_ns() } else { super::calls::time::monotonic_ns() };
        t.saturating_sub(now)
    } else {
        t
    };
    Ok(Some(crate::time::ticks().saturating_add(crate::time::ns_to_ticks(rel))))
}

/// True if futex operation `op` only wakes (never waits) within the process: what the fast
/// path may serve (a shared futex may be another process's, see `shared_futex`).
pub fn is_wake_only(op: u64) -> bool {
    // FUTEX_CLOCK_REALTIME on a wake is ENOSYS (`futex`'s first check): not the fast path's.
    matches!(op & !FUTEX_PRIVATE_FLAG, FUTEX_WAKE | FUTEX_WAKE_BITSET) && op & FUTEX_PRIVATE_FLAG != 0
}

/// futex(uaddr, op, val, timeout/val2, uaddr2, val3)
pub fn futex(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (addr, op, val, timeout, addr2, val3) = (a[0], a[1], a[2] as u32, a[3], a[4], a[5] as u32);
    let realtime = op & FUTEX_CLOCK_REALTIME != 0;
    // As Linux: the realtime clock only for the waits that take an absolute time.
    const FUTEX_WAIT_REQUEUE_PI: u64 = 11;
    if realtime && !matches!(op & 0x7f, FUTEX_WAIT_BITSET | FUTEX_WAIT_REQUEUE_PI | FUTEX_LOCK_PI2) {
        return Err(ENOSYS);
    }
    // A requeue's counts are ints; a negative one is EINVAL.
    if matches!(op & 0x7f, FUTEX_REQUEUE | FUTEX_CMP_REQUEUE) && ((val as i32) < 0 || (timeout as i32) < 0) {
        return Err(EINVAL);
    }
    if op & FUTEX_PRIVATE_FLAG == 0 && op & 0x7f != FUTEX_LOCK_PI && op & 0x7f != FUTEX_LOCK_PI2 {
        shared_key(addr)?;
        if matches!(op & 0x7f, FUTEX_REQUEUE | FUTEX_CMP_REQUEUE) {
            shared_key(addr2)?;
        }
    }
    // A shared futex on the host's pages is the host's; so is a requeue or wake-op whose
    // second word is (its waiters may be other processes').
    let second_word = matches!(op & 0x7f, FUTEX_REQUEUE | FUTEX_CMP_REQUEUE | FUTEX_WAKE_OP);
    if op & FUTEX_PRIVATE_FLAG == 0
        && (super::shared_files::on_host(addr) || second_word && super::shared_files::on_host(addr2))
    {
        return super::shared_futex::futex(addr, op & 0x7f, val, timeout, addr2, val3, realtime);
    }
    match op & 0x7f {
        FUTEX_WAIT => wait(addr, val, BITSET_ANY, deadline(timeout, false, realtime)?),
        FUTEX_WAIT_BITSET => wait(addr, val, val3, deadline(timeout, true, realtime)?),
        FUTEX_WAKE => wake(addr, val as u64, BITSET_ANY, op & FUTEX_PRIVATE_FLAG != 0),
        FUTEX_WAKE_BITSET => wake(addr, val as u64, val3, op & FUTEX_PRIVATE_FLAG != 0),
        FUTEX_REQUEUE => requeue(addr, addr2, val as u64, timeout, None, op & FUTEX_PRIVATE_FLAG != 0),
        FUTEX_CMP_REQUEUE => requeue(addr, addr2, val as u64, timeout, Some(val3), op & FUTEX_PRIVATE_FLAG != 0),
        FUTEX_WAKE_OP => wake_op(addr, addr2, val as u64, timeout, val3),
        // LOCK_PI's timeout is absolute on CLOCK_REALTIME, LOCK_PI2's on CLOCK_MONOTONIC
        // unless FUTEX_CLOCK_REALTIME.
        FUTEX_LOCK_PI => super::pi_futex::lock(addr, deadline(timeout, true, true)?),
        FUTEX_LOCK_PI2 => super::pi_futex::lock(addr, deadline(timeout, true, realtime)?),
        FUTEX_TRYLOCK_PI => super::pi_futex::try_lock(addr),
        FUTEX_UNLOCK_PI => super::pi_futex::unlock(addr),
        other => {
            kprintln!("hrt: futex operation {other} is not implemented: returning ENOSYS");
            Err(ENOSYS)
        }
    }
}

/// Linux keys a shared futex by its page, looked up for writing first: a read-only page of
/// private anonymous memory has no key ("a read-only anonymous page will never change"):
/// EFAULT. Pages of files (not written since they were read) and shared memory have one.
fn shared_key(addr: u64) -> Result<(), u32> {
    use super::protect::{prot_at, PROT_WRITE};
    if prot_at(addr).is_none_or(|p| p & PROT_WRITE != 0) || super::shared_files::containing(addr).is_some() {
        return Ok(());
    }
    let page = addr & !(super::usermem::PAGE - 1);
    let parts = super::private_files::parts(page, page + super::usermem::PAGE);
    match parts.iter().any(|p| !p.written) {
        true => Ok(()),
        false => Err(EFAULT),
    }
}

/// A forked child: the waiters were the parent's other threads, which do not exist here.
pub fn after_fork() {
    for b in &BUCKETS {
        b.list.lock().0.clear();
        b.waiting.store(0, Ordering::Relaxed);
    }
}
