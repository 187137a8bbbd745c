//! Which file a remembered mapping comes from, asked only when it is needed.
//!
//! A fault on a hidden page must know the mapping's file (is it still what the descriptor
//! names?), and whether it is a regular file at all: that takes a forwarded `fstat`. The
//! descriptor names the mapped file until a forwarded call closes or replaces it (only
//! forwarded calls open, close or replace descriptors: see `filemap`), so the question can wait
//! until just before the next forwarded call (`before_forward`, in `syscall::forward`) or the
//! first fault on a hidden page, whichever comes first. By then ld.so has usually mapped its
//! segments over the span it mapped first, and the pages past the end are gone: no `fstat`.
//!
//! Pieces of the file's own pages matter only when mremap grows them (the pages after them
//! are the file's next ones): a piece that still ends where the file's pages ended is worth
//! the `fstat`, one that no longer does (the first segment of a library, the rest of the span
//! mapped over) is forgotten instead, as any private file mapping that fits its file is, once
//! no piece of its descriptor that needs the answer is left (when pieces are released, or at
//! the next forwarded call). So after ld.so's segments nothing is owed: no `fstat`, and a
//! forwarded call costs one look at a flag.
//!
//! A thread about to forward a call while another identifies waits for it: its call might
//! close the descriptor before the other's `fstat` reaches the host.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use super::{Piece, State, PIECES};
use crate::linux::protect::{self, ALL, PROT_READ, PROT_WRITE};
use crate::linux::usermem;

/// Set (under the pieces' lock) while some piece's file may not be identified yet.
static OWED: AtomicBool = AtomicBool::new(false);
/// Held by the thread identifying files.
static BUSY: AtomicBool = AtomicBool::new(false);

/// A forked child: no thread of it is identifying files, but BUSY was copied set if one of the
/// parent's was, inside its forwarded `fstat` (a blocked thread does not delay a fork), and
/// every forwarded call of the child with a file still owed would wait for it for good (as
/// signalfd's ARMING did).
pub fn after_fork() {
    BUSY.store(false, Ordering::Release);
}

/// A piece whose file is not identified yet was just remembered (the pieces' lock is held).
pub(super) fn owe() {
    OWED.store(true, Ordering::SeqCst);
}

/// Run before every forwarded call, once it counts as started (`filemap`): a mapping's file
/// that may be needed later is identified while its descriptor still names it.
#[inline]
pub fn before_forward() {
    if OWED.load(Ordering::SeqCst) {
        identify();
    }
}

/// Identifies the files of the pieces that need it (an `fstat` per descriptor); a descriptor
/// that is no regular file (or no longer open) shows its hidden pages again: they read zero.
pub fn identify() {
    while OWED.load(Ordering::SeqCst) {
        if BUSY.swap(true, Ordering::Acquire) {
            // Another thread asks: its answer must come before this thread's call goes out.
            crate::sched::yield_now();
            core::hint::spin_loop();
            continue;
        }
        crate::sync::spinlock::raw_lock_taken();
        let fds = needed();
        let found: Vec<(u64, Option<(u64, u64)>)> =
            fds.into_iter().map(|fd| (fd, super::fill::regular_file(fd))).collect();
        let shown = settle(&found);
        BUSY.store(false, Ordering::Release);
        crate::sync::spinlock::raw_lock_released();
        for (s, e, prot) in shown {
            show(s, e, prot);
        }
    }
}

/// Whether piece `p` (starting at `s`) needs its file identified: hidden, or the file's pages
/// up to where they ended when mapped.
fn needs_file(s: u64, p: &Piece) -> bool {
    p.state != State::Present || p.off + (p.end - s) == p.eof
}

/// The descriptors to ask about.
fn needed() -> Vec<u64> {
    forget_unneeded(&mut PIECES.lock())
}

/// Forgets the pieces not identified yet whose descriptor no such piece needs identified, and
/// returns the descriptors that are needed. Also run when pieces are released (ld.so mapping
/// over the pages past the end of a library), so that a forwarded call that follows finds
/// nothing owed.
pub(super) fn forget_unneeded(map: &mut BTreeMap<u64, Piece>) -> Vec<u64> {
    let mut fds = Vec::new();
    for (&s, p) in map.iter() {
        if p.file.id.is_none() && needs_file(s, p) && !fds.contains(&p.file.fd) {
            fds.push(p.file.fd);
        }
    }
    map.retain(|_, p| p.file.id.is_some() || fds.contains(&p.file.fd));
    if fds.is_empty() {
        OWED.store(false, Ordering::SeqCst);
    }
    fds
}

/// Whether some piece may not be identified yet.
pub(super) fn owed() -> bool {
    OWED.load(Ordering::SeqCst)
}

/// Gives the pieces of each descriptor in `found` their file, or forgets them if it is no
/// regular file (returning their hidden ranges, with their protection, to show). Pieces mapped
/// meanwhile by another thread with the same descriptor get the same answer (no call could be
/// forwarded meanwhile: each waits for this one).
fn settle(found: &[(u64, Option<(u64, u64)>)]) -> Vec<(u64, u64, u64)> {
    let mut map = PIECES.lock();
    let mut shown = Vec::new();
    map.retain(|&s, p| {
        if p.file.id.is_some() {
            return true;
        }
        match found.iter().find(|(fd, _)| *fd == p.file.fd) {
            None => true, // Mapped meanwhile: the next round.
            Some(&(_, Some(id))) => {
                p.file.id = Some(id);
                true
            }
            Some(&(_, None)) => {
                if p.state == State::Hidden {
                    shown.push((s, p.end, p.prot));
                }
                false
            }
        }
    });
    OWED.store(map.values().any(|p| p.file.id.is_none()), Ordering::SeqCst);
    shown
}

/// Makes hidden `[start, end)` of a device's mapping what mmap would have made it: present with
/// protection `prot` (PROT_NONE stays not present), reading zero. Memory unmapped meanwhile by
/// another thread is left alone.
fn show(start: u64, end: u64, prot: u64) {
    if prot & ALL == 0 || !usermem::is_mapped(start, end) {
        return;
    }
    if prot & ALL == PROT_READ | PROT_WRITE {
        protect::reset(start, end);
    } else {
        protect::set(start, end, prot);
    }
    usermem::access_changed(start, end, true);
}
