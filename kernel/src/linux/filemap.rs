//! File contents already in memory, reused by a fixed file mapping instead of read again.
//!
//! ld.so maps a shared library in two steps: one mapping of the library's whole extent from
//! its first segment (read-only), then each further segment `MAP_FIXED` over its place in that
//! extent, from its offset in the file. The extent and the segments lie at the same distance
//! from the file offsets, so each segment's bytes are already there: without this, every
//! segment is zeroed (a VM exit) and read from the host a second time. `mmap` remembers the
//! last read-only file mapping it read; a later fixed mapping of the same descriptor whose
//! pages sit at the same place relative to the file keeps the bytes in memory.
//!
//! The bytes are still the file's only while nothing could have changed them or the
//! descriptor, so the record is dropped or shrunk:
//! - the pages never were writable or executable since the read (PROT_WRITE would let the
//!   program change them, PROT_EXEC would let the kernel rewrite system calls in them): a
//!   reused part that becomes either is cut off the record with everything below it (ld.so
//!   maps segments in ascending order);
//! - no call was forwarded to the host since the read, and none was under way when it ended
//!   (so the descriptor still names the same open file: only forwarded calls close, replace
//!   or open descriptors);
//! - no other memory call (munmap, mremap, mprotect, madvise, brk, another mapping) ran since:
//!   each of them forgets the record.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::sync::IrqSpinLock;

/// Forwarded calls started and finished (every forwarded call goes through
/// `syscall::forward`, which counts it).
static STARTED: AtomicU64 = AtomicU64::new(0);
static FINISHED: AtomicU64 = AtomicU64::new(0);

/// Counts a forwarded call about to start; `forward_done` when it returned.
pub fn forward_started() {
    STARTED.fetch_add(1, Ordering::SeqCst);
}

pub fn forward_done() {
    FINISHED.fetch_add(1, Ordering::SeqCst);
}

/// The count of forwarded calls started, if none is under way: while it stays the same, no
/// call was forwarded (so no descriptor was closed, replaced or opened).
pub fn quiet_forwarding() -> Option<u64> {
    let started = STARTED.load(Ordering::SeqCst);
    (FINISHED.load(Ordering::SeqCst) == started).then_some(started)
}

/// Program memory `[start, end)` holding descriptor `fd`'s file from offset `off` on (bytes
/// past what the read returned are zero, as a fresh read would leave them).
#[derive(Clone, Copy)]
struct Clean {
    start: u64,
    end: u64,
    fd: u64,
    off: u64,
    /// `STARTED` when the read ended.
    forwarded: u64,
}

static LAST: IrqSpinLock<Option<Clean>> = IrqSpinLock::new(None);

/// Remembers `[start, start + len)`, just read from `fd` at `off` and mapped with `prot`,
/// when no one can change it (neither writable nor executable) and no other forwarded call
/// is under way; otherwise forgets what was remembered.
pub fn remember(start: u64, len: u64, fd: u64, off: u64, prot: u64) {
    use super::protect::{PROT_EXEC, PROT_WRITE};
    let clean = match quiet_forwarding() {
        Some(forwarded) if prot & (PROT_WRITE | PROT_EXEC) == 0 => {
            Some(Clean { start, end: start + len, fd, off, forwarded })
        }
        _ => None,
    };
    *LAST.lock() = clean;
}

/// Forgets the remembered mapping (some other call changed memory).
pub fn forget() {
    *LAST.lock() = None;
}

/// Whether a fixed mapping of `[addr, addr + len)` from `fd` at `off` finds its bytes already
/// there. The record stays for the next segment, shrunk above this one if the mapping makes
/// it writable or executable (`prot`).
pub fn reuse(addr: u64, len: u64, fd: u64, off: u64, prot: u64) -> bool {
    use super::protect::{PROT_EXEC, PROT_WRITE};
    let mut last = LAST.lock();
    let Some(c) = *last else { return false };
    let end = addr.checked_add(len);
    let fits = addr >= c.start
        && end.is_some_and(|e| e <= c.end)
        && fd == c.fd
        && off.checked_sub(c.off) == Some(addr - c.start)
        && quiet_forwarding() == Some(c.forwarded);
    if !fits {
        *last = None;
        return false;
    }
    if prot & (PROT_WRITE | PROT_EXEC) != 0 {
        let end = addr + len;
        *last = (end < c.end).then_some(Clean { start: end, off: c.off + (end - c.start), ..c });
    }
    true
}
