//! futex_waitv: one thread waits on up to 128 futex words at once and returns the index of
//! one that was woken (Wine's and Proton's wait for several objects). Each word gets a waiter
//! record of its own on its bucket (`futex`), all naming the same thread: a wake of any of them
//! wakes the thread, which then takes the others off their lists.
//!
//! A word in memory shared with other processes (`shared_files::on_host`) is waited on here
//! too, so only this process's wake-ups reach it (another process's wake is the host's
//! futex): said once on stderr.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use super::errno::{SysResult, EAGAIN, EFAULT, EINVAL, ETIMEDOUT};
use super::futex::{enqueue_if, settle, user_atomic, Waiter, BITSET_ANY};
use super::uaccess;
use crate::arch::traps::TrapFrame;
use crate::sched::{self, thread::BLOCKING};

const FUTEX_WAITV_MAX: u64 = 128;
/// `struct futex_waitv` flags: the word's size (only 32 bits is a futex word here), private.
const FUTEX2_SIZE_MASK: u32 = 3;
const FUTEX2_SIZE_U32: u32 = 2;
const FUTEX2_PRIVATE: u32 = 128;
const CLOCK_REALTIME: u64 = 0;
const CLOCK_MONOTONIC: u64 = 1;

/// struct futex_waitv.
#[derive(Clone, Copy)]
#[repr(C)]
struct WaitvEntry {
    val: u64,
    uaddr: u64,
    flags: u32,
    reserved: u32,
}

/// futex_waitv(waiters, nr_futexes, flags, timeout, clockid): the timeout is absolute on
/// `clockid` (CLOCK_MONOTONIC or CLOCK_REALTIME).
pub fn futex_waitv(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (list, n, flags, timeout, clock) = (a[0], a[1], a[2], a[3], a[4]);
    if flags != 0 || n == 0 || n > FUTEX_WAITV_MAX || list == 0 {
        return Err(EINVAL);
    }
    let deadline = match timeout {
        0 => None,
        t => {
            if clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME {
                return Err(EINVAL);
            }
            super::futex::deadline(t, true, clock == CLOCK_REALTIME)?
        }
    };
    let mut words = Vec::with_capacity(n as usize);
    for i in 0..n {
        let e =
            uaccess::read::<WaitvEntry>(list + i * core::mem::size_of::<WaitvEntry>() as u64).map_err(|_| EFAULT)?;
        let known = FUTEX2_SIZE_MASK | FUTEX2_PRIVATE;
        if e.flags & !known != 0 || e.reserved != 0 || e.flags & FUTEX2_SIZE_MASK != FUTEX2_SIZE_U32 {
            return Err(EINVAL);
        }
        let val = u32::try_from(e.val).map_err(|_| EINVAL)?;
        if e.flags & FUTEX2_PRIVATE == 0 && super::shared_files::on_host(e.uaddr) {
            static SAID: AtomicBool = AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                kprintln!("hrt: futex_waitv on memory shared with other processes is woken by this process's threads only (reported once)");
            }
        }
        // A private word's key is its address (aligned, in user space); a shared one's page must
        // be there. Whether a private word can be read is found as the values are compared, in
        // order: a mismatch before an unreadable word is EAGAIN, as Linux's.
        if e.flags & FUTEX2_PRIVATE != 0 {
            super::futex::private_key(e.uaddr)?;
        } else {
            user_atomic(e.uaddr)?;
        }
        words.push((e.uaddr, val));
    }
    loop {
        match wait_once(&words, deadline) {
            // Woken by none of its words (a signal another thread took): wait again, as Linux.
            Err(ETIMEDOUT) if deadline.is_none_or(|d| crate::time::ticks() < d) => continue,
            r => return r,
        }
    }
}

/// Lists a waiter on every word, sleeps until one is woken, a signal or `deadline`, and takes
/// the others off: the index of a woken word, or EAGAIN (a word no longer held its value),
/// ERESTARTSYS (a signal) or ETIMEDOUT.
fn wait_once(words: &[(u64, u32)], deadline: Option<u64>) -> SysResult {
    let me = sched::current();
    let mut nodes: Vec<Waiter> =
        words.iter().map(|&(addr, _)| Waiter { addr, bitset: BITSET_ANY, thread: me, woken: false }).collect();
    // Records do not move from here on (the vector is never grown): their addresses are listed.
    let ptrs: Vec<*mut Waiter> = nodes.iter_mut().map(|n| n as *mut Waiter).collect();
    // BLOCKING before the first waiter is listed: a wake-up from then on makes the block
    // below return at once.
    // SAFETY: the current thread's record is alive.
    unsafe { (*me).state.store(BLOCKING, Ordering::SeqCst) };
    let mut listed = 0;
    let mut changed = false;
    let mut unreadable = false;
    for (p, &(addr, val)) in ptrs.iter().zip(words) {
        let Ok(w) = user_atomic(addr) else {
            unreadable = true;
            break;
        };
        if !enqueue_if(*p, w, val) {
            changed = true;
            break;
        }
        listed += 1;
    }
    let interrupted = if changed || unreadable {
        false
    } else {
        super::signal::state::interruptible_begin();
        match deadline {
            Some(d) => sched::block_until(d),
            None => sched::block(),
        }
        super::signal::state::interruptible_end()
    };
    // SAFETY: as above; no block follows, whatever a wake-up did to the state.
    unsafe { (*me).state.store(sched::thread::RUNNING, Ordering::SeqCst) };
    // The last word woken is the answer, as Linux's (a thread woken through several).
    let mut woken = None;
    for (i, p) in ptrs[..listed].iter().enumerate() {
        if settle(*p) {
            woken = Some(i as u64);
        }
    }
    drop(nodes);
    match woken {
        Some(i) => Ok(i),
        None if unreadable => Err(EFAULT),
        None if changed => Err(EAGAIN),
        None if interrupted => Err(super::signal::ERESTARTSYS),
        None => Err(ETIMEDOUT),
    }
}
