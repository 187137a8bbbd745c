//! The program's `MAP_SHARED` mappings: of files, of System V segments, and anonymous ones.
//! A file's or a segment's pages are the host's own: the monitor maps the file over the guest
//! RAM the mapping got (`nr::MAP_SHARED_FILE`), so stores reach the file and other processes
//! mapping it, under `hrt` or not, share them (MPI's shared-memory transport between ranks in
//! different VMs). Anonymous shared memory stays private guest RAM (huge pages, no VM exit)
//! until the program forks: then, before the host fork, the monitor makes it host shared memory
//! with the same bytes (`nr::SHARE_ANONYMOUS`, see `share_anonymous`), which the host fork keeps
//! shared between parent and child, and every later fork too. The kernel remembers where they
//! are, because such memory must never be treated as the program's private memory:
//! - given back (munmap, a mapping replacing it, mremap shrinking it), host pages are first
//!   made anonymous RAM again (`nr::UNMAP_SHARED_FILE`); zeroing them before would zero the
//!   file (or the memory a forked process shares);
//! - `madvise(MADV_DONTNEED)` leaves it alone (Linux drops the pages, which then read the
//!   file's or the shared memory's contents again: the same bytes);
//! - `mprotect` adds PROT_WRITE only if the descriptor was open for writing (EACCES), as on
//!   Linux;
//! - the kernel never writes into it (system-call rewriting, `--omp` patches, reused file bytes):
//!   code rewrites ask `overlaps` under the memory lock, and a file's range is recorded before
//!   the monitor maps the file there, so that no rewrite finds the file's bytes unrecorded (a
//!   program that mapped its own executable's text over itself, `MAP_SHARED` from a descriptor
//!   open for writing, had the rewritten calls written into the file until stop 98).

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use super::errno::Errno;
use crate::arch::hypercall;
use crate::sync::IrqSpinLock;

/// One shared range: its end, whether it may be made writable, and what it is.
#[derive(Clone, Copy)]
struct Range {
    end: u64,
    may_write: bool,
    kind: Kind,
    /// Which mapping (made or moved) this range is part of, a number never reused: parts of
    /// one mapping that mprotect split apart join again once their protections agree, as
    /// Linux's VMAs merge (mremap of the whole then works).
    origin: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A file's pages, mapped by the monitor. Those from `file_end` on (past the end of the file
    /// when last looked at) are hidden: not present, whatever the protection `prot` the program
    /// gave them, which they get back once the file has grown over them (`fault_past_end`).
    File { file_end: u64, prot: u64 },
    /// An attached System V segment (what `shmdt` detaches).
    Segment,
    /// Anonymous shared memory; `on_host` once the monitor made it host shared memory (at a
    /// fork), guest RAM before.
    Anonymous { on_host: bool },
}

impl Kind {
    /// Whether the pages are the host's shared pages (not the guest's private RAM).
    fn on_host(self) -> bool {
        self != Kind::Anonymous { on_host: false }
    }
}

static SHARED: IrqSpinLock<BTreeMap<u64, Range>> = IrqSpinLock::new(BTreeMap::new());

/// Maps descriptor `fd`'s file from `off` over program memory `[start, start + len)` (already
/// the program's, page-aligned), shared with the host. On failure the memory is as before
/// (anonymous, zero) and the caller gives it back. The pages past the end of the file are
/// not the file's: the caller hides them (`hide_past_end`) once it has set the protection.
pub fn map(fd: u64, start: u64, len: u64, off: u64, prot: u64) -> Result<(), Errno> {
    // Recorded first (see the module comment), as read-only with no bytes of the file yet.
    record(0, start, len, Kind::File { file_end: start, prot })?;
    let ret = hypercall::call(hrt_abi::nr::MAP_SHARED_FILE, &[fd, start, len, off, prot]);
    if ret < 0 {
        SHARED.lock().remove(&start);
        return Err((-ret) as u32);
    }
    // The answer: the bytes the file covers, plus 1 if the mapping may be made writable.
    let covered = (ret as u64 & !1).min(len);
    record(ret & 1, start, len, Kind::File { file_end: start + covered, prot })
}

/// `mmap` or `mprotect` gave `[start, end)` protection `prot`: the pages of shared file
/// mappings there past the end of their file keep it for later but stay inaccessible, so that
/// touching them raises SIGBUS (`fault_past_end`), as on Linux, and calls with buffers there
/// fail with EFAULT.
pub fn hide_past_end(start: u64, end: u64, prot: u64) {
    let mut hide = Vec::new();
    {
        let mut map = SHARED.lock();
        // Each part keeps its own protection, as Linux splits a mapping that mprotect changes
        // in part (and only then: a mapping mremap grows must stay one): one protection for
        // the whole mapping gave pages the program left read-only write or execute access
        // once its file grew over them (until stop 98).
        let changes = |r: &Range| matches!(r.kind, Kind::File { prot: kept, .. } if kept != prot);
        if overlapping(&map, start, end).iter().any(|(_, _, r)| changes(r)) {
            split_at(&mut map, start);
            split_at(&mut map, end);
        }
        for (s, e, _) in overlapping(&map, start, end) {
            let (_, r) = map.range_mut(..=s).next_back().expect("overlapping range");
            if let Kind::File { file_end, prot: ref mut kept } = r.kind {
                *kept = prot;
                if file_end.max(s) < e {
                    hide.push((file_end.max(s), e));
                }
            }
        }
        let inside: Vec<u64> = map.range(start..end).map(|(&s, _)| s).collect();
        for at in inside.into_iter().chain([end]) {
            join_at(&mut map, at);
        }
    }
    for (s, e) in hide {
        super::protect::set(s, e, 0);
        super::usermem::access_changed(s, e, false);
    }
}

/// A page fault at `addr` (a write if `write`): None if it is no page of a shared file mapping
/// past the end of its file, or one whose protection forbids the access (SIGSEGV, as Linux
/// checks that first); Some(true) if it is (SIGBUS); Some(false) if the file has grown over the
/// page since: the pages up to it get their protection back and the program touches them again.
pub fn fault_past_end(addr: u64, write: bool) -> Option<bool> {
    let page = addr & !(super::usermem::PAGE - 1);
    let end = page + super::usermem::PAGE;
    let (start, file_end, prot) = {
        let map = SHARED.lock();
        match overlapping(&map, page, end).first() {
            Some(&(_, _, Range { kind: Kind::File { file_end, prot }, .. }))
                if page >= file_end
                    && prot & super::protect::PROT_READ != 0
                    && (!write || prot & super::protect::PROT_WRITE != 0) =>
            {
                let (&rs, _) = map.range(..=page).next_back().expect("overlapping range");
                (rs, file_end, prot)
            }
            _ => return None,
        }
    };
    if covered(page, super::usermem::PAGE) == 0 {
        return Some(true);
    }
    if let Some(Range { kind: Kind::File { file_end: e, .. }, .. }) = SHARED.lock().get_mut(&start) {
        *e = (*e).max(end);
    }
    let from = file_end.max(start);
    super::protect::set(from, end, prot);
    super::usermem::access_changed(from, end, prot & super::protect::ALL != 0);
    Some(false)
}

/// How many bytes of the shared file pages `[start, start + len)` (one mapping) its file
/// covers now (page-aligned; none if the monitor cannot tell).
fn covered(start: u64, len: u64) -> u64 {
    u64::try_from(hypercall::call(hrt_abi::nr::SHARED_FILE_PAGE, &[start, len])).map_or(0, |c| c.min(len))
}

/// After a call of the program's that may have shrunk a file (`may_shrink_files`): the pages
/// of its shared file mappings that the file no longer covers are hidden again, so that
/// touching them raises SIGBUS as on Linux. (Left present, the host's page fault on them would
/// fail inside KVM, which retries it for ever: the program would spin instead of getting
/// SIGBUS. A file shrunk by another process: `host_shrank`.)
pub fn recheck_file_ends() {
    recheck(|from, to| {
        super::protect::set(from, to, 0);
        super::usermem::access_changed(from, to, false);
    })
}

/// Hides, with `hide`, the pages of shared file mappings that their file no longer covers.
fn recheck(hide: impl Fn(u64, u64)) {
    let files: Vec<(u64, u64)> = SHARED
        .lock()
        .iter()
        .filter_map(|(&s, r)| match r.kind {
            Kind::File { file_end, .. } if file_end > s => Some((s, file_end.min(r.end))),
            _ => None,
        })
        .collect();
    for (s, end) in files {
        let new_end = s + covered(s, end - s);
        if new_end >= end {
            continue;
        }
        // Hidden up to the old end, but never past this mapping's: `file_end` may lie beyond
        // it (a mapping cut by an unmap keeps its file's end), where other memory may be now
        // (an anonymous page put over part of the mapping was hidden with it until stop 98).
        let shrunk = match SHARED.lock().get_mut(&s) {
            Some(Range { end: r_end, kind: Kind::File { file_end, .. }, .. }) if *file_end > new_end => {
                let old = core::mem::replace(file_end, new_end);
                Some((new_end, old.min(*r_end)))
            }
            _ => None,
        };
        if let Some((from, to)) = shrunk {
            hide(from, to);
        }
    }
}

/// Set once the program has mapped a file shared (never cleared): until then `vanished` costs
/// one load.
static ANY_FILE: AtomicBool = AtomicBool::new(false);

/// Whether part of `[start, end)` (program memory the page map says is mapped) lies in shared
/// file pages the host no longer has: another process shrank the file, and the pages are not
/// hidden yet (the monitor tells within a quarter second, `host_shrank`). The kernel's own
/// access there would spin inside KVM; its caller answers EFAULT instead, as Linux does. Asks
/// the host (a hypercall) only for a range in a shared file mapping.
pub fn vanished(start: u64, end: u64) -> bool {
    if !ANY_FILE.load(Ordering::Relaxed) || start >= end {
        return false;
    }
    let page = super::usermem::PAGE;
    let map = SHARED.lock();
    // Held across the look (a hypercall, short), so that no copy of the ranges is needed.
    let mut parts = map.range(..end).rev().take_while(|(_, r)| r.end > start);
    parts.any(|(&s, r)| match r.kind {
        // Pages from `file_end` on are hidden already (the page map refuses them).
        Kind::File { file_end, .. } => {
            let from = s.max(start) & !(page - 1);
            let to = end.min(r.end).min(file_end).next_multiple_of(page);
            from < to && covered(from, to - from) < to - from
        }
        _ => false,
    })
}

/// Set when the monitor found a file shrunk by another process (`host_shrank`) until a CPU
/// hides its pages; `RECHECKING` is held meanwhile.
static SHRANK: AtomicBool = AtomicBool::new(false);
static RECHECKING: AtomicBool = AtomicBool::new(false);

/// The monitor's interrupt: another process shrank a file the program maps shared (the monitor
/// looks every quarter second). A thread touching a page now gone spins inside KVM, which
/// retries the host's failing fault for ever; it takes this interrupt, and on its way back to
/// the program (`after_host_shrink`) the pages are hidden, so that its access, retried, faults
/// in the guest: SIGBUS, as on Linux.
pub fn host_shrank() {
    SHRANK.store(true, Ordering::SeqCst);
}

/// A forked child: a recheck another CPU of the parent was in the middle of (holding
/// `RECHECKING`, perhaps in a forwarded call) is not going on here; copied held, it would make
/// every way back to the program spin. The child does it again itself.
pub fn after_fork() {
    if RECHECKING.swap(false, Ordering::SeqCst) {
        SHRANK.store(true, Ordering::SeqCst);
    }
}

/// On every way back to the program (the signal layer's return hook, after any interrupt or
/// call) and in the idle loop: hides the pages of a file another process shrank, once the
/// monitor said so. A CPU that finds another doing it waits for it, so that its thread's
/// retried access finds the pages hidden. Runs on the way back from interrupts, where no TLB
/// shootdown may start: the pages are hidden without one (`protect::hide_vanished` says why
/// none is needed).
#[inline]
pub fn after_host_shrink() {
    if !SHRANK.load(Ordering::SeqCst) && !RECHECKING.load(Ordering::SeqCst) {
        return;
    }
    while RECHECKING.swap(true, Ordering::Acquire) {
        core::hint::spin_loop();
    }
    crate::sync::spinlock::raw_lock_taken();
    if SHRANK.swap(false, Ordering::SeqCst) {
        // Taken before the look: a CPU whose interrupt finds the word clear finds this one
        // holding `RECHECKING`, or done.
        super::channel::files_shrank_taken();
        recheck(|from, to| {
            super::protect::hide_vanished(from, to);
            super::usermem::access_changed(from, to, false);
        });
    }
    RECHECKING.store(false, Ordering::Release);
    crate::sync::spinlock::raw_lock_released();
}

/// Whether forwarded call `nr` with `args`, having succeeded, may have made a file shorter:
/// ftruncate, truncate, fallocate (collapsing a range), creat, and opens with O_TRUNC.
#[allow(non_upper_case_globals)] // linux-raw-sys names the numbers __NR_open etc.
pub fn may_shrink_files(nr: u64, args: &[u64; 6]) -> bool {
    use linux_raw_sys::general::{
        __NR_creat, __NR_fallocate, __NR_ftruncate, __NR_open, __NR_openat, __NR_truncate, O_TRUNC,
    };
    let trunc = |flags: u64| flags & O_TRUNC as u64 != 0;
    match nr as u32 {
        __NR_ftruncate | __NR_truncate | __NR_fallocate | __NR_creat => true,
        __NR_open => trunc(args[1]),
        __NR_openat => trunc(args[2]),
        _ => false,
    }
}

/// Whether the program has shared file mappings.
pub fn any_files() -> bool {
    SHARED.lock().values().any(|r| matches!(r.kind, Kind::File { .. }))
}

/// Records the shared range `[start, start + len)` after the monitor's answer `ret` (1: it may
/// be made writable, 0: not, negative: the errno, nothing mapped).
fn record(ret: i64, start: u64, len: u64, kind: Kind) -> Result<(), Errno> {
    if ret < 0 {
        return Err((-ret) as u32);
    }
    if matches!(kind, Kind::File { .. }) {
        ANY_FILE.store(true, Ordering::Relaxed);
    }
    SHARED.lock().insert(start, Range { end: start + len, may_write: ret == 1, kind, origin: next_origin() });
    Ok(())
}

/// Program memory `[start, start + len)` (already the program's, fresh) is anonymous shared
/// memory: guest RAM until the program forks (`share_anonymous`).
pub fn add_anonymous(start: u64, len: u64) {
    let _ = record(1, start, len, Kind::Anonymous { on_host: false });
}

/// fork, with every other CPU frozen: the anonymous shared memory still in guest RAM becomes
/// host shared memory with the same bytes, which the host fork then keeps shared with the
/// child (and later children). Fails (ENOMEM) if the host has no memory for it; what was done
/// stays done (it is shared memory either way).
pub fn share_anonymous() -> Result<(), Errno> {
    let todo: Vec<(u64, u64)> =
        SHARED.lock().iter().filter(|(_, r)| !r.kind.on_host()).map(|(&s, r)| (s, r.end)).collect();
    for (s, e) in todo {
        share(s, e)?;
    }
    Ok(())
}

/// Makes the anonymous shared memory recorded at `[start, end)` (one record, in guest RAM) host
/// shared memory with the same bytes: at a fork (`share_anonymous`), and for an mremap that
/// keeps the old range (MREMAP_DONTUNMAP: both ranges show the same pages, as on Linux).
pub fn share(start: u64, end: u64) -> Result<(), Errno> {
    let ret = hypercall::call(hrt_abi::nr::SHARE_ANONYMOUS, &[start, end - start]);
    if ret < 0 {
        return Err((-ret) as u32);
    }
    if let Some(r) = SHARED.lock().get_mut(&start) {
        r.kind = Kind::Anonymous { on_host: true };
    }
    Ok(())
}

/// What mremap finds in `[start, end)`.
pub enum Remap {
    /// No shared memory: the program's private memory.
    Private,
    /// Wholly one anonymous shared mapping still in guest RAM: it grows and moves as private
    /// memory does, its record with it (`anonymous_moved`).
    GuestAnonymous,
    /// Wholly host pages of one mapping (a file, a segment, anonymous memory shared at a
    /// fork): the host's mapping moves or grows (`remap_host`).
    Host,
    /// Part shared memory, part not, or parts of two shared mappings: more than one mapping
    /// (Linux: EFAULT).
    Mixed,
}

pub fn remap_kind(start: u64, end: u64) -> Remap {
    let parts = overlapping(&SHARED.lock(), start, end);
    match parts.as_slice() {
        [] => Remap::Private,
        [(s, e, r)] if *s == start && *e == end => match r.kind.on_host() {
            true => Remap::Host,
            false => Remap::GuestAnonymous,
        },
        _ => Remap::Mixed,
    }
}

/// mremap moved or grew the anonymous shared memory `[old, old + old_len)` (in guest RAM) to
/// `[new, new + new_len)` (the same start when it grew in place); the old range is about to be
/// given back as private memory.
pub fn anonymous_moved(old: u64, old_len: u64, new: u64, new_len: u64) {
    release(old, old + old_len);
    add_anonymous(new, new_len);
}

/// What mremap needs of the host shared mapping at `start` (`Remap::Host`): whether it may grow
/// (a file's, past its end too, as on Linux; a segment or shared anonymous memory keeps its
/// size: Linux's grown part would raise SIGBUS, refused here), and the protection its moved or
/// grown pages take (a file mapping's is the program's even where pages past the file's end
/// are hidden).
pub fn host_mapping(start: u64) -> Option<(bool, Option<u64>)> {
    let map = SHARED.lock();
    let (_, r) = map.range(..=start).next_back().filter(|(_, r)| r.end > start)?;
    Some(match r.kind {
        Kind::File { prot, .. } => (true, Some(prot)),
        _ => (false, None),
    })
}

/// The shared mapping holding `addr`: its start, its end, and whether its pages are the host's.
pub fn containing(addr: u64) -> Option<(u64, u64, bool)> {
    let map = SHARED.lock();
    let (&s, r) = map.range(..=addr).next_back().filter(|(_, r)| r.end > addr)?;
    Some((s, r.end, r.kind.on_host()))
}

/// mremap of host shared pages `[old, old + old_len)` (one mapping): the monitor makes them, and
/// for a file the pages after them, appear at `[new, new + new_len)` (program memory the caller
/// took; `new == old`: grown in place), whose record follows the old one's. The old range keeps
/// its pages and record until the caller gives it up (or keeps it: MREMAP_DONTUNMAP). The
/// caller then sets the protection (`hide_past_end` hides pages past the file's end).
pub fn remap_host(old: u64, old_len: u64, new: u64, new_len: u64) -> Result<(), Errno> {
    let ret = hypercall::call(hrt_abi::nr::REMAP_SHARED, &[old, old_len, new, new_len]);
    if ret < 0 {
        return Err((-ret) as u32);
    }
    let covered = (ret as u64).min(new_len);
    let mut map = SHARED.lock();
    let Some((_, &r)) = map.range(..=old).next_back().filter(|(_, r)| r.end > old) else {
        return Ok(());
    };
    let kind = match r.kind {
        // Grown in place over a file's hidden pages: they stay hidden until touched
        // (`fault_past_end` shows them if the file covers them by then).
        Kind::File { file_end, prot } if new == old && file_end < old + old_len => Kind::File { file_end, prot },
        Kind::File { prot, .. } => Kind::File { file_end: new + covered, prot },
        k => k,
    };
    if new == old {
        // Grown in place: the record ends at `old + old_len` (the pages after it were free).
        forget(&mut map, old, old + old_len);
    }
    map.insert(new, Range { end: new + new_len, may_write: r.may_write, kind, origin: next_origin() });
    Ok(())
}

/// The size of System V segment `id` (the host's).
pub fn segment_size(id: u64) -> Result<u64, Errno> {
    let ret = hypercall::call(hrt_abi::nr::SHM_SEGMENT_SIZE, &[id]);
    u64::try_from(ret).map_err(|_| (-ret) as u32)
}

/// Attaches System V segment `id` over program memory `[start, start + len)` (`len` its size
/// in pages), like `map`.
pub fn attach_segment(id: u64, start: u64, len: u64, read_only: bool) -> Result<(), Errno> {
    let ret = hypercall::call(hrt_abi::nr::SHM_ATTACH, &[id, start, len, read_only as u64]);
    record(ret, start, len, Kind::Segment)
}

/// The pieces of the System V attachment whose first page is at `start`, in address order
/// (munmap and mprotect may have cut it apart): Linux's shmdt detaches every one of them (only
/// the first was detached, the segment staying attached).
pub fn segment_pieces(start: u64) -> Option<Vec<(u64, u64)>> {
    let map = SHARED.lock();
    let origin = map.get(&start).filter(|r| r.kind == Kind::Segment)?.origin;
    Some(
        map.range(start..)
            .filter(|(_, r)| r.kind == Kind::Segment && r.origin == origin)
            .map(|(&s, r)| (s, r.end))
            .collect(),
    )
}

/// The shared ranges overlapping `[start, end)`, cut to it, in address order.
fn overlapping(map: &BTreeMap<u64, Range>, start: u64, end: u64) -> Vec<(u64, u64, Range)> {
    let mut v: Vec<(u64, u64, Range)> = map
        .range(..end)
        .rev()
        .take_while(|(_, r)| r.end > start)
        .map(|(&s, &r)| (s.max(start), r.end.min(end), r))
        .collect();
    v.reverse();
    v
}

/// The shared mappings in `[start, end)`, cut to it, in address order, each with whether its
/// pages are the host's (false: anonymous shared memory still in guest RAM).
pub fn parts(start: u64, end: u64) -> Vec<(u64, u64, bool)> {
    overlapping(&SHARED.lock(), start, end).into_iter().map(|(s, e, r)| (s, e, r.kind.on_host())).collect()
}

/// Whether any of `[start, end)` is shared memory of any kind: code there is never rewritten,
/// since the bytes would reach the file, or processes that share them and may not run under
/// hrt (the rewritten calls and jumps lead into this kernel's gate and slots).
pub fn overlaps(start: u64, end: u64) -> bool {
    let map = SHARED.lock();
    !map.is_empty() && map.range(..end).next_back().is_some_and(|(_, r)| r.end > start)
}

/// The pages of shared file mappings in `[start, end)` hidden past the end of their file, with
/// the protection the program gave them (what /proc/self/maps shows for them, as Linux's).
pub fn hidden_prots(start: u64, end: u64) -> Vec<(u64, u64, u64)> {
    let map = SHARED.lock();
    if map.is_empty() {
        return Vec::new();
    }
    overlapping(&map, start, end)
        .into_iter()
        .filter_map(|(s, e, r)| match r.kind {
            Kind::File { file_end, prot } if file_end.max(s) < e => Some((file_end.max(s), e, prot)),
            _ => None,
        })
        .collect()
}

/// Whether `addr` is in host shared pages (which other processes may share).
pub fn on_host(addr: u64) -> bool {
    let map = SHARED.lock();
    !map.is_empty() && overlapping(&map, addr, addr + 1).iter().any(|(_, _, r)| r.kind.on_host())
}

/// Whether any of the program's memory is host shared pages (other processes may see it).
pub fn any_on_host() -> bool {
    SHARED.lock().values().any(|r| r.kind.on_host())
}

/// The shared mappings in `[start, end)` are forgotten, and their host pages become anonymous
/// memory again (reading zero): called before the range is zeroed and freed or replaced.
pub fn release(start: u64, end: u64) {
    let cut = {
        let mut map = SHARED.lock();
        if map.is_empty() {
            return;
        }
        forget(&mut map, start, end)
    };
    for (s, e, _) in cut.into_iter().filter(|(_, _, r)| r.kind.on_host()) {
        hypercall::call(hrt_abi::nr::UNMAP_SHARED_FILE, &[s, e - s]);
    }
}

/// Forgets `[start, end)` of the records, keeping what sticks out on either side; returns the
/// parts forgotten.
/// A fresh `Range::origin`.
fn next_origin() -> u64 {
    static NEXT: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Joins the range starting at `at` to the one ending there if both are parts of one mapping
/// with the same record (see `Range::origin`).
fn join_at(map: &mut BTreeMap<u64, Range>, at: u64) {
    let Some(&next) = map.get(&at) else { return };
    let Some((&rs, &r)) = map.range(..at).next_back() else { return };
    if r.end == at && r.origin == next.origin && r.kind == next.kind && r.may_write == next.may_write {
        map.remove(&at);
        map.insert(rs, Range { end: next.end, ..r });
    }
}

/// Splits the range holding `at` inside it in two, with the same record.
fn split_at(map: &mut BTreeMap<u64, Range>, at: u64) {
    let Some((&rs, &r)) = map.range(..at).next_back() else { return };
    if r.end > at {
        map.insert(rs, Range { end: at, ..r });
        map.insert(at, r);
    }
}

fn forget(map: &mut BTreeMap<u64, Range>, start: u64, end: u64) -> Vec<(u64, u64, Range)> {
    let cut = overlapping(map, start, end);
    for &(s, e, r) in &cut {
        // The whole range containing [s, e): remove it, keep what sticks out.
        let (&rs, _) = map.range(..=s).next_back().expect("overlapping range");
        map.remove(&rs);
        if rs < s {
            map.insert(rs, Range { end: s, ..r });
        }
        if r.end > e {
            map.insert(e, r);
        }
    }
    cut
}

/// mprotect's check: PROT_WRITE on a shared mapping whose descriptor was not open for writing
/// is EACCES. Where the first such mapping in `[start, end)` starts, if there is one: Linux has
/// changed the mappings before it when it refuses (mapping after mapping).
pub fn write_refused_from(start: u64, end: u64, prot: u64) -> Option<u64> {
    if prot & super::protect::PROT_WRITE == 0 {
        return None;
    }
    let map = SHARED.lock();
    overlapping(&map, start, end).iter().find(|(_, _, r)| !r.may_write).map(|&(s, _, _)| s)
}

/// Calls `f` on each part of `[start, end)` that is guest RAM, not the host's shared pages, in
/// order: what must be zeroed when it is given back or replaced (anonymous shared memory not
/// yet shared with another process included).
pub fn for_each_guest_owned(start: u64, end: u64, f: impl FnMut(u64, u64)) {
    for_each_outside(start, end, |r| r.kind.on_host(), f)
}

/// Calls `f` on each part of `[start, end)` outside the shared ranges that `skip` selects.
fn for_each_outside(start: u64, end: u64, skip: impl Fn(&Range) -> bool, mut f: impl FnMut(u64, u64)) {
    let shared = overlapping(&SHARED.lock(), start, end);
    let mut cur = start;
    for (s, e, _) in shared.into_iter().filter(|(_, _, r)| skip(r)) {
        if cur < s {
            f(cur, s);
        }
        cur = e;
    }
    if cur < end {
        f(cur, end);
    }
}

/// msync over `[start, end)` (mapped): the host's msync on the file pages in it; anonymous
/// memory and segments have nothing to write back.
pub fn sync(start: u64, end: u64, flags: u64) -> Result<(), Errno> {
    let files: Vec<(u64, u64, Range)> = overlapping(&SHARED.lock(), start, end)
        .into_iter()
        .filter(|(_, _, r)| matches!(r.kind, Kind::File { .. }))
        .collect();
    for (s, e, _) in files {
        let ret = hypercall::call(hrt_abi::nr::MSYNC, &[s, e - s, flags]);
        if ret < 0 {
            return Err((-ret) as u32);
        }
    }
    Ok(())
}
