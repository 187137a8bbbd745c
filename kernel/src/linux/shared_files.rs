//! The program's `MAP_SHARED` file mappings. Their pages are the host file's own pages: the
//! monitor maps the file over the guest RAM the mapping got (`nr::MAP_SHARED_FILE`), so stores
//! reach the file and other processes mapping it, under `hrt` or not, share them (MPI's
//! shared-memory transport between ranks in different VMs). The kernel remembers where they
//! are, because such memory must never be treated as the program's private memory:
//! - given back (munmap, a mapping replacing it, mremap shrinking it), the monitor first makes
//!   it anonymous RAM again (`nr::UNMAP_SHARED_FILE`); zeroing it before would zero the file;
//! - `madvise(MADV_DONTNEED)` leaves it alone (Linux drops the pages, which then read the
//!   file's contents again: the same bytes);
//! - `mprotect` adds PROT_WRITE only if the descriptor was open for writing (EACCES), as on
//!   Linux;
//! - the kernel never writes into it (system-call rewriting, `--omp` patches, reused file bytes).

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::errno::{Errno, EACCES};
use crate::arch::hypercall;
use crate::sync::IrqSpinLock;

/// One shared range: its end, whether it may be made writable, and whether it is an attached
/// System V segment (what `shmdt` detaches).
#[derive(Clone, Copy)]
struct Range {
    end: u64,
    may_write: bool,
    segment: bool,
}

static SHARED: IrqSpinLock<BTreeMap<u64, Range>> = IrqSpinLock::new(BTreeMap::new());

/// Maps descriptor `fd`'s file from `off` over program memory `[start, start + len)` (already
/// the program's, page-aligned), shared with the host. On failure the memory is as before
/// (anonymous, zero) and the caller gives it back.
pub fn map(fd: u64, start: u64, len: u64, off: u64, prot: u64) -> Result<(), Errno> {
    let ret = hypercall::call(hrt_abi::nr::MAP_SHARED_FILE, &[fd, start, len, off, prot]);
    record(ret, start, len, false)
}

/// Records the shared range `[start, start + len)` after the monitor's answer `ret` (1: it may
/// be made writable, 0: not, negative: the errno, nothing mapped).
fn record(ret: i64, start: u64, len: u64, segment: bool) -> Result<(), Errno> {
    if ret < 0 {
        return Err((-ret) as u32);
    }
    SHARED.lock().insert(start, Range { end: start + len, may_write: ret == 1, segment });
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
    record(ret, start, len, true)
}

/// The end of the System V segment attached at `start`, if one is.
pub fn segment_at(start: u64) -> Option<u64> {
    SHARED.lock().get(&start).filter(|r| r.segment).map(|r| r.end)
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

/// Whether any of `[start, end)` is a shared file mapping.
pub fn any_in(start: u64, end: u64) -> bool {
    let map = SHARED.lock();
    !map.is_empty() && !overlapping(&map, start, end).is_empty()
}

/// The shared file pages in `[start, end)` become anonymous memory again (reading zero): called
/// before the range is zeroed and freed or replaced.
pub fn release(start: u64, end: u64) {
    let cut = {
        let mut map = SHARED.lock();
        if map.is_empty() {
            return;
        }
        let cut = overlapping(&map, start, end);
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
    };
    for (s, e, _) in cut {
        hypercall::call(hrt_abi::nr::UNMAP_SHARED_FILE, &[s, e - s]);
    }
}

/// mprotect's check: PROT_WRITE on a shared mapping whose descriptor was not open for writing
/// is EACCES.
pub fn check_protect(start: u64, end: u64, prot: u64) -> Result<(), Errno> {
    if prot & super::protect::PROT_WRITE == 0 {
        return Ok(());
    }
    let map = SHARED.lock();
    match overlapping(&map, start, end).iter().all(|(_, _, r)| r.may_write) {
        true => Ok(()),
        false => Err(EACCES),
    }
}

/// Calls `f` on each part of `[start, end)` that is not a shared file mapping, in order.
pub fn for_each_private(start: u64, end: u64, mut f: impl FnMut(u64, u64)) {
    let shared = overlapping(&SHARED.lock(), start, end);
    let mut cur = start;
    for (s, e, _) in shared {
        if cur < s {
            f(cur, s);
        }
        cur = e;
    }
    if cur < end {
        f(cur, end);
    }
}
