//! Private file mappings (`MAP_PRIVATE` of a regular file) that reach past the end of their file.
//!
//! `mmap` reads a private file mapping at once (there is no demand paging), so without this
//! the pages wholly past the end of the file would read zero. On Linux touching them raises
//! SIGBUS (BUS_ADRERR, the address), and programs rely on it (a file truncated by another
//! process, databases that map more than the file holds, tests catching SIGBUS); only the tail
//! of the page holding the end of the file reads zero. So those pages are hidden here: not
//! present, whatever protection the program gave them (kept for later), and not mapped for the
//! monitor (a forwarded call with a buffer there is EFAULT, as on Linux).
//!
//! A mapping with such pages is remembered whole, as pieces in address order: each piece
//! knows its file (descriptor and identity), the file offset it starts at, its protection and
//! whether it is hidden. The in-file pieces matter only when mremap grows the mapping again: the
//! new pages are the file's pages that follow, hidden too. A fault on a hidden page
//! (`fault`, through `fill`) asks the host for the file's current size: a page the file has
//! grown over since is read in and given its protection, as Linux would read it at that touch;
//! otherwise the fault is SIGBUS. Records go with the memory: munmap, a mapping replacing them
//! (`release`), mprotect (`protect`), mremap (`remapped`).
//!
//! The file's identity (and whether it is a regular file at all) is asked for only when needed,
//! before the next forwarded call (`identify`): ld.so maps each library's whole span first,
//! past the end of the file, and then its segments over it, so the hidden pages are gone before
//! anything else reaches the host, and the start of every dynamic program pays for nothing.
//! mmap leaves those pages not present from the start (`usermem::alloc_unfilled`): hiding
//! present pages would cost a TLB flush.

mod fill;
mod identify;

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::usermem::PAGE;
use crate::sync::IrqSpinLock;

pub use fill::fault;
pub use identify::{after_fork, before_forward};

/// The file a mapping was made from: the descriptor, and the file's device and inode when it
/// was mapped (the descriptor may name another file by the time a page is touched).
#[derive(Clone, Copy, PartialEq, Eq)]
struct File {
    fd: u64,
    /// Device and inode; None until `identify` asked (the descriptor names the file until the
    /// next forwarded call, which asks first).
    id: Option<(u64, u64)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// The file's bytes (read at mmap time, or once the file grew over them).
    Present,
    /// Past the end of the file when last looked at: not present.
    Hidden,
    /// Being read in by a fault (`fill`): another thread touching it retries.
    Filling,
}

#[derive(Clone, Copy)]
struct Piece {
    end: u64,
    file: File,
    /// The file offset of the piece's first page.
    off: u64,
    /// The file offset of the first page that was wholly past the end of the file when mapped.
    eof: u64,
    /// The protection the program gave it (hidden pages get it back once filled).
    prot: u64,
    state: State,
}

static PIECES: IrqSpinLock<BTreeMap<u64, Piece>> = IrqSpinLock::new(BTreeMap::new());

/// Splits the piece containing `at` (if it straddles `at`) in two at `at`.
fn split_at(map: &mut BTreeMap<u64, Piece>, at: u64) {
    let Some((&s, &p)) = map.range(..at).next_back() else { return };
    if p.end > at {
        map.insert(s, Piece { end: at, ..p });
        map.insert(at, Piece { off: p.off + (at - s), ..p });
    }
}

/// The starts of the pieces inside `[start, end)`, after splitting those that stick out.
fn cut_to(map: &mut BTreeMap<u64, Piece>, start: u64, end: u64) -> Vec<u64> {
    split_at(map, start);
    split_at(map, end);
    map.range(start..end).map(|(&s, _)| s).collect()
}

/// Makes `[start, end)` not present, for the program and for the monitor's forwarded calls.
fn hide(start: u64, end: u64) {
    super::protect::set(start, end, 0);
    super::usermem::access_changed(start, end, false);
}

/// A private mapping of `[start, end)` from descriptor `fd` at file offset `off`, with
/// protection `prot`, whose read stopped at the end of the file: `[past, end)` lies wholly
/// past it (`past < end`).
pub struct Mapped {
    pub start: u64,
    pub past: u64,
    pub end: u64,
    pub fd: u64,
    pub off: u64,
    pub prot: u64,
}

/// mmap made `m`: its pages past the end of the file are hidden (`absent`: they never were
/// present, so only the monitor's page map changes) and the mapping remembered. Whether the
/// file is a regular one (a device read short keeps reading zero: its pages are shown again)
/// and which file it is are asked before the next forwarded call (`identify`), or now if a
/// call was forwarded since the read ended (the count `quiet`, see `filemap`) or is under way:
/// the descriptor may name another file by then.
pub fn mapped(m: Mapped, absent: bool, quiet: Option<u64>) {
    if absent {
        super::usermem::access_changed(m.past, m.end, false);
    } else {
        hide(m.past, m.end);
    }
    let (file, eof) = (File { fd: m.fd, id: None }, m.off + (m.past - m.start));
    let piece = |end, off, state| Piece { end, file, off, eof, prot: m.prot, state };
    {
        let mut map = PIECES.lock();
        if m.past > m.start {
            map.insert(m.start, piece(m.past, m.off, State::Present));
        }
        map.insert(m.past, piece(m.end, eof, State::Hidden));
        identify::owe();
    }
    if quiet.is_none() || crate::linux::filemap::quiet_forwarding() != quiet {
        identify::identify();
    }
}

/// The hidden pieces in `[start, end)`, cut to it, with the protection the program gave them
/// (what /proc/self/maps shows for them, as Linux's mapping has it).
pub fn hidden_prots(start: u64, end: u64) -> Vec<(u64, u64, u64)> {
    let map = PIECES.lock();
    if map.is_empty() {
        return Vec::new();
    }
    let mut v: Vec<(u64, u64, u64)> = map
        .range(..end)
        .rev()
        .take_while(|(_, p)| p.end > start)
        .filter(|(_, p)| p.state != State::Present)
        .map(|(&s, p)| (s.max(start), p.end.min(end), p.prot))
        .collect();
    v.reverse();
    v
}

/// `[start, end)` is being unmapped or replaced: its pieces are forgotten.
pub fn release(start: u64, end: u64) {
    let mut map = PIECES.lock();
    if map.is_empty() {
        return;
    }
    for s in cut_to(&mut map, start, end) {
        map.remove(&s);
    }
    if identify::owed() {
        identify::forget_unneeded(&mut map);
    }
}

/// mprotect gave `[start, end)` protection `prot`: the pieces there keep it, and their hidden
/// pages stay hidden (touching them is still SIGBUS, or SIGSEGV where `prot` forbids it).
pub fn protect(start: u64, end: u64, prot: u64) {
    let mut again = Vec::new();
    {
        let mut map = PIECES.lock();
        if map.is_empty() {
            return;
        }
        for s in cut_to(&mut map, start, end) {
            let p = map.get_mut(&s).expect("a piece just listed");
            p.prot = prot;
            if p.state != State::Present {
                again.push((s, p.end));
            }
        }
    }
    for (s, e) in again {
        hide(s, e);
    }
}

/// Calls `f` on each part of `[start, end)` that is not hidden, in order: what mremap copies
/// when it moves a mapping (a hidden page is not present, and reads zero anyway).
pub fn for_each_present(start: u64, end: u64, mut f: impl FnMut(u64, u64)) {
    let hidden: Vec<(u64, u64)> = {
        let map = PIECES.lock();
        map.range(..end)
            .rev()
            .take_while(|(_, p)| p.end > start)
            .filter(|(_, p)| p.state != State::Present)
            .map(|(&s, p)| (s.max(start), p.end.min(end)))
            .collect()
    };
    let mut cur = start;
    for (s, e) in hidden.into_iter().rev() {
        if cur < s {
            f(cur, s);
        }
        cur = e;
    }
    if cur < end {
        f(cur, end);
    }
}

/// mremap made `[old, old + old_len)` into `[new, new + new_len)` (grown in place when
/// `new == old`, or moved; the old range is unmapped next, which forgets its pieces). The
/// pieces move with the memory, and if the mapping was remembered to its end, what it grew by is
/// the file's next pages: hidden, read in when touched if the file covers them by then.
pub fn remapped(old: u64, old_len: u64, new: u64, new_len: u64) {
    let old_end = old + old_len;
    let mut hidden = Vec::new();
    {
        let mut map = PIECES.lock();
        if map.is_empty() {
            return;
        }
        let starts = cut_to(&mut map, old, old_end);
        let moved: Vec<(u64, Piece)> = starts.iter().map(|s| (*s, map[s])).collect();
        if new != old {
            for &(s, p) in &moved {
                let at = new + (s - old);
                let state = if p.state == State::Filling { State::Hidden } else { p.state };
                map.insert(at, Piece { end: p.end - s + at, state, ..p });
                if state == State::Hidden {
                    hidden.push((at, at + (p.end - s)));
                }
            }
        }
        if let Some(&(s, last)) = moved.last().filter(|(_, p)| p.end == old_end && new_len > old_len) {
            let at = new + old_len;
            let off = last.off + (old_end - s);
            map.insert(at, Piece { end: new + new_len, off, state: State::Hidden, ..last });
            hidden.push((at, new + new_len));
        }
    }
    for (s, e) in hidden {
        hide(s, e);
    }
}

/// What a fault on `page` finds: the piece's file (maybe not identified yet), the page's file
/// offset and the protection, if the page is hidden and `prot` allows the access (a write if
/// `write`, an instruction fetch if `exec`); Err(()) if another thread is reading the page in
/// (the program touches it again).
fn hidden_page(page: u64, write: bool, exec: bool) -> Option<Result<(File, u64, u64), ()>> {
    use super::protect::{PROT_EXEC, PROT_READ, PROT_WRITE};
    let map = PIECES.lock();
    let (&s, p) = map.range(..=page).next_back().filter(|(_, p)| p.end > page)?;
    let allowed = p.prot & PROT_READ != 0 && (!write || p.prot & PROT_WRITE != 0) && (!exec || p.prot & PROT_EXEC != 0);
    match p.state {
        State::Present => None,
        _ if !allowed => None,
        State::Filling => Some(Err(())),
        State::Hidden => Some(Ok((p.file, p.off + (page - s), p.prot))),
    }
}

/// Marks hidden `page` as being read in (if it still is hidden: not unmapped, replaced or
/// filled meanwhile). Returns whether it was.
fn claim(page: u64) -> bool {
    let mut map = PIECES.lock();
    let Some(&s) = cut_to(&mut map, page, page + PAGE).first() else { return false };
    let p = map.get_mut(&s).expect("a piece just listed");
    if p.state != State::Hidden {
        return false;
    }
    p.state = State::Filling;
    true
}

/// The protection to give the page claimed by `claim`, if it is still being read in (not
/// unmapped or replaced meanwhile).
fn filling(page: u64) -> Option<u64> {
    PIECES.lock().get(&page).filter(|p| p.state == State::Filling).map(|p| p.prot)
}

/// The page claimed by `claim` holds the file's bytes now, and is present.
fn filled(page: u64) {
    if let Some(p) = PIECES.lock().get_mut(&page).filter(|p| p.state == State::Filling) {
        p.state = State::Present;
    }
}
