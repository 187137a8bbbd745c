//! Thread names (Linux's `comm`): each thread has its own (PR_SET_NAME names the caller), a new
//! thread starts with its creator's, and the main thread's is the process's, which `hrt`'s
//! host process takes too (`ps` on the host shows it). Another thread may rename one: glibc's
//! `pthread_setname_np` of another thread writes `/proc/self/task/<tid>/comm`, which the
//! monitor passes on through the channel header (`ChannelHeader::rename`). Names change and are
//! read under the signal lock, which lends other threads' records.

use core::sync::atomic::Ordering;

use super::process::{self, PROCESS};
use super::signal::state::{with_thread, SIGNALS};
use crate::sched::Thread;

const PR_SET_NAME: u64 = 15;

/// A name from the bytes a program gave: at most 15, then NUL.
pub fn from_bytes(s: &[u8]) -> [u8; 16] {
    let mut name = [0u8; 16];
    let s = &s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())];
    let n = s.len().min(15);
    name[..n].copy_from_slice(&s[..n]);
    name
}

/// Thread `t`'s name, the signal lock held by the caller.
pub fn of_locked(t: &Thread) -> [u8; 16] {
    t.comm.unwrap_or_else(|| *PROCESS.name.lock())
}

/// Thread `t`'s name.
pub fn of(t: &Thread) -> [u8; 16] {
    let _names = SIGNALS.lock();
    of_locked(t)
}

/// The calling thread's name.
pub fn own() -> [u8; 16] {
    // SAFETY: the current thread's record is alive while it runs.
    of(unsafe { &*crate::sched::current() })
}

/// Names the calling thread.
pub fn set_own(name: [u8; 16]) {
    set(process::current_tid(), name);
}

/// Names thread `tid` of the program (nothing if there is none).
pub fn set(tid: u32, name: [u8; 16]) {
    let main = tid == process::pid();
    let found = with_thread(tid, |t| {
        // Names change only under the signal lock: `with_thread` holds it while it lends
        // another thread's record, and it is taken here for the caller's own.
        let _names = (tid == process::current_tid()).then(|| SIGNALS.lock());
        let t = t as *const Thread as *mut Thread;
        let comm = if main {
            *PROCESS.name.lock() = name;
            None
        } else {
            Some(name)
        };
        // SAFETY: the record is alive while lent (`with_thread`), and its name is written
        // under the signal lock, as every reader of another thread's name reads it.
        unsafe { (*t).comm = comm };
    });
    if main && found.is_some() {
        // The process's name, which other processes see on the host: `hrt` takes it (one exit).
        let word = |i: usize| u64::from_le_bytes(name[i..i + 8].try_into().unwrap_or([0; 8]));
        crate::arch::hypercall::call(hrt_abi::nr::HOST_PRCTL, &[PR_SET_NAME, word(0), word(8)]);
    }
}

/// A new thread's name: its creator's as it is now (a later rename of either is its own).
pub fn inherited() -> [u8; 16] {
    own()
}

/// After a forwarded call: a rename the monitor passed on (a write to a thread's `comm`).
pub fn take_rename(words: &[core::sync::atomic::AtomicU64; 3]) {
    if words[0].load(Ordering::Acquire) == 0 {
        return;
    }
    let tid = words[0].swap(0, Ordering::AcqRel);
    if tid == 0 {
        return;
    }
    let mut name = [0u8; 16];
    for (i, w) in words[1..].iter().enumerate() {
        name[i * 8..i * 8 + 8].copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
    }
    set(tid as u32, from_bytes(&name));
}
