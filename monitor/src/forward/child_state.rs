//! A forked child's state as its parent sees it in `/proc/<pid>/stat` and `status`. The child is
//! another `hrt` on the host, whose own state says nothing of the program's: S while its VM is
//! being set up, R while an idle vCPU polls. A parent that waits for its child to show S before
//! it signals it (LTP's `TST_PROCESS_STATE_WAIT`: `msgrcv05`, `pause01`, `semctl01`) signalled
//! too early, and the child then waited for good. The child's kernel names its leader thread's
//! state word in the channel header (`ChannelHeader::leader_state`); the child's memory has the
//! same host addresses as this process's (it is a fork of it), so the parent reads the word with
//! the host's process_vm_readv: S while the leader waits in its kernel, R otherwise (and while
//! the child is set up, as Linux's new child is runnable). A leader waiting for a forwarded
//! call (`ChannelHeader::leader_slot`) sleeps only once a worker thread of the child's monitor
//! has taken the call (`ChannelHeader::worker_busy`): until then
//! the host call has not started, and a parent acting on S (removing the semaphore set the
//! child's semop is to wait on) came first. Other host states (zombie, stopped) are the host's.

use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Mutex;

use hrt_abi::channel::{LEADER_BLOCKING, LEADER_WAITING};

use super::own_maps::RamRange;

static LEADER: AtomicPtr<AtomicU64> = AtomicPtr::new(std::ptr::null_mut());
static LEADER_SLOT: AtomicPtr<AtomicU64> = AtomicPtr::new(std::ptr::null_mut());
/// The channel header's `worker_busy` bits.
static BUSY: Mutex<(usize, usize)> = Mutex::new((0, 0));
static RAM: Mutex<Option<RamRange>> = Mutex::new(None);

/// The channel's `leader_state`, `leader_slot` and `worker_busy` words, and guest RAM
/// (registration of the channel).
pub fn attach([state, slot]: [&'static AtomicU64; 2], busy: &[AtomicU64], ram: RamRange) {
    LEADER.store(state as *const AtomicU64 as *mut AtomicU64, Ordering::Release);
    LEADER_SLOT.store(slot as *const AtomicU64 as *mut AtomicU64, Ordering::Release);
    *BUSY.lock().unwrap_or_else(|e| e.into_inner()) = (busy.as_ptr() as usize, busy.len());
    *RAM.lock().unwrap_or_else(|e| e.into_inner()) = Some(ram);
}

/// Whether the forwarded call the leader of child `pid` waits for has a worker there (true
/// when it waits for no forwarded call).
fn call_taken(pid: i32) -> Option<bool> {
    let slot_word = LEADER_SLOT.load(Ordering::Acquire);
    if slot_word.is_null() {
        return Some(true);
    }
    let slot: u64 = read_in(pid, slot_word as u64)?;
    if slot == 0 {
        return Some(true);
    }
    let (busy, len) = *BUSY.lock().unwrap_or_else(|e| e.into_inner());
    let idx = usize::try_from(slot - 1).ok().filter(|&i| i / 64 < len)?;
    let word: u64 = read_in(pid, (busy + idx / 64 * std::mem::size_of::<AtomicU64>()) as u64)?;
    Some(word & 1 << (idx % 64) != 0)
}

/// Reads a plain value at host address `at` in process `pid` (None if it cannot be read).
fn read_in<T: Copy + Default>(pid: i32, at: u64) -> Option<T> {
    let mut v = T::default();
    let len = std::mem::size_of::<T>();
    let got = super::cross_memory::read_remote(pid, &mut [(&mut v as *mut T as *mut u8, len, at)]).ok()?;
    (got == len).then_some(v)
}

/// Whether the leader thread of forked child `pid` waits in its kernel (None: not known).
fn leader_waits(pid: i32) -> Option<bool> {
    let word = LEADER.load(Ordering::Acquire);
    if word.is_null() {
        return None;
    }
    let guest: u64 = read_in(pid, word as u64)?;
    if guest == 0 {
        return Some(false);
    }
    let host = RAM.lock().unwrap_or_else(|e| e.into_inner()).as_ref()?(guest, 4)?;
    let state: u32 = read_in(pid, host as u64)?;
    Some((state == LEADER_WAITING || state == LEADER_BLOCKING) && call_taken(pid)?)
}

/// The host's `/proc/<pid>/stat` (`status`: its `status`) of forked child `pid`, with the state
/// its kernel has for its leader where the host's is running or sleeping.
pub fn proc_file(pid: i32, status: bool) -> Option<Vec<u8>> {
    let host = std::fs::read(format!("/proc/{pid}/{}", if status { "status" } else { "stat" })).ok()?;
    let waits = leader_waits(pid)?;
    Some(if status { in_status(&host, waits) } else { in_stat(&host, waits) })
}

/// `stat`'s third field (after the name in parentheses, which may hold any byte).
fn in_stat(text: &[u8], waits: bool) -> Vec<u8> {
    let mut out = text.to_vec();
    if let Some(close) = out.iter().rposition(|&b| b == b')') {
        if let Some(c) = out.get_mut(close + 2).filter(|c| matches!(**c, b'R' | b'S' | b'D')) {
            *c = if waits { b'S' } else { b'R' };
        }
    }
    out
}

/// `status`'s `State:` line.
fn in_status(text: &[u8], waits: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for line in text.split_inclusive(|&b| b == b'\n') {
        let ours = line.strip_prefix(b"State:\t").is_some_and(|v| matches!(v.first(), Some(b'R' | b'S' | b'D')));
        if ours {
            out.extend_from_slice(if waits { b"State:\tS (sleeping)\n" } else { b"State:\tR (running)\n" });
        } else {
            out.extend_from_slice(line);
        }
    }
    out
}

/// This module's global locks, taken without waiting for a fork (`vm::fork`): false if
/// another thread holds one.
pub(crate) fn hold_for_fork(held: &mut crate::vm::fork::Held) -> bool {
    crate::vm::fork::try_hold(held, &BUSY) && crate::vm::fork::try_hold(held, &RAM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_field_follows_the_name_whatever_it_holds() {
        let stat = b"42 (a) b) S 1 42 42 0 -1\n";
        assert_eq!(in_stat(stat, false), b"42 (a) b) R 1 42 42 0 -1\n".to_vec());
        assert_eq!(in_stat(b"42 (x) Z 1\n", true), b"42 (x) Z 1\n".to_vec());
        let status = b"Name:\tx\nState:\tR (running)\nTgid:\t42\n";
        assert_eq!(in_status(status, true), b"Name:\tx\nState:\tS (sleeping)\nTgid:\t42\n".to_vec());
    }
}
