//! The program's private file mappings (`MAP_PRIVATE` of a file, made by `mmap`): which
//! descriptor and file offset each range was read from.
//!
//! `mmap` reads such a mapping at once, so its pages look like anonymous memory, but Linux
//! treats them as the file's: `madvise(MADV_DONTNEED)` drops the program's private copy (the
//! pages read the file again, not zero), and MADV_FREE, MADV_WIPEONFORK and MADV_REMOVE
//! refuse them. madvise asks here which parts of a range are file pages.
//!
//! Reading the file again needs the file: the descriptor names it until the program closes or
//! replaces it (only close, close_range, dup2 and dup3 can; all are forwarded). Before such a
//! call (`before_forward`) the monitor is asked to keep the descriptor's file under a handle of
//! its own (`process::KEEP_FILE`), as Linux's mapping holds its file; the mappings then read
//! through the handle, and the handle goes back (`process::DROP_KEPT`) when the last of them
//! is unmapped. Only if the monitor cannot keep it (too many kept) is a mapping left without
//! its file (`after_forward`): its pages are still the file's, but out of reach.
//!
//! Records go with the memory: `release` (munmap, a mapping replacing them, exec) and `moved`
//! (mremap). The program's own image and ld.so, which the kernel loads itself, are here too
//! (`File::Image`, `record_image`): their pages are the files' to Linux as well (MADV_DONTNEED
//! on a program's own text read zero until stop 98, and it crashed).
//! A spawn child (vfork) before its exec shares this memory with the program but has its own
//! descriptors: its closes change nothing here.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use hrt_abi::process as op;

use crate::linux::range_map::{RangeMap, Value};
use crate::linux::syscall::forward;
use crate::sync::IrqSpinLock;

/// Where a mapping's file is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum File {
    /// The program's descriptor it was read from, which still names that file.
    Fd(u64),
    /// The monitor's handle of it (`process::KEEP_FILE`).
    Kept(u64),
    /// Out of reach: the descriptor was closed and the monitor could not keep the file.
    Gone,
    /// A loaded image's file (`maps_kind::PROGRAM` or `INTERPRETER`), whose bytes the loader
    /// keeps where it has them (`loader::image_file`).
    Image(u32),
}

/// One private file mapping (or what is left of it).
#[derive(Clone, Copy)]
struct Mapping {
    file: File,
    /// The file offset of the first page.
    off: u64,
    /// Whether the program may have written its pages: mapped writable or not executable (data
    /// `mmap` read, which reads the file's current bytes again at MADV_DONTNEED, as Linux's
    /// page cache shows them), or made writable since. Code never writable (a library's text,
    /// the image's) holds the file's bytes already, but for the kernel's rewrites of it, which
    /// must stay: MADV_DONTNEED leaves it as it is.
    written: bool,
}

impl Value for Mapping {
    fn skip(self, delta: u64) -> Self {
        Mapping { off: self.off + delta, ..self }
    }
}

static MAPPINGS: IrqSpinLock<RangeMap<Mapping>> = IrqSpinLock::new(RangeMap::new());

/// Handles no mapping names any more, given back to the monitor at the next system call
/// (`flush_drops`): `release` runs under the memory map's lock, where no call can be made.
static DROPS: IrqSpinLock<Vec<u64>> = IrqSpinLock::new(Vec::new());
static ANY_DROPS: AtomicBool = AtomicBool::new(false);

/// A part of a range that is a private file mapping: where, the file and file offset its
/// first page was read from, and whether the program may have written it (`Mapping::written`).
pub struct Part {
    pub start: u64,
    pub end: u64,
    pub file: File,
    pub off: u64,
    pub written: bool,
}

/// `mmap` read `[start, start + len)` from `fd` at `off` (private); `written`: the program may
/// write it (see `Mapping::written`). Replaces what was remembered there (the caller released
/// the range first).
pub fn record(start: u64, len: u64, fd: u64, off: u64, written: bool) {
    MAPPINGS.lock().insert(start, start + len, Mapping { file: File::Fd(fd), off, written });
}

/// The loader put a segment's file-backed pages `[start, end)` of image `kind` there, read
/// from file offset `off`; `writable`: the segment is (PF_W).
pub fn record_image(start: u64, end: u64, off: u64, kind: u32, writable: bool) {
    MAPPINGS.lock().insert(start, end, Mapping { file: File::Image(kind), off, written: writable });
}

/// mprotect made `[start, end)` writable: an image's pages there may differ from its file
/// from now on (see `Mapping::written`).
pub fn note_writable(start: u64, end: u64) {
    let mut map = MAPPINGS.lock();
    if map.is_empty() {
        return;
    }
    for (s, e, m) in map.cut(start, end) {
        if !m.written {
            map.insert(s, e, Mapping { written: true, ..m });
        }
    }
}

/// `[start, end)` is being unmapped or replaced: its mappings are forgotten.
pub fn release(start: u64, end: u64) {
    let mut map = MAPPINGS.lock();
    if map.is_empty() {
        return;
    }
    let mut handles = Vec::new();
    for (_, _, m) in map.take(start, end) {
        if let File::Kept(h) = m.file {
            handles.push(h);
        }
    }
    handles.dedup();
    handles.retain(|&h| !map.iter().any(|(_, _, m)| m.file == File::Kept(h)));
    if !handles.is_empty() {
        DROPS.lock().extend(handles);
        ANY_DROPS.store(true, Ordering::Release);
    }
}

/// Gives back the handles no mapping names (see `DROPS`). Called at every system call; a
/// load when there are none.
pub fn flush_drops() {
    if !ANY_DROPS.load(Ordering::Acquire) {
        return;
    }
    ANY_DROPS.store(false, Ordering::Relaxed);
    let drops = core::mem::take(&mut *DROPS.lock());
    for h in drops {
        // Fails only for a handle the monitor does not have: nothing to give back then.
        let _ = forward(op::DROP_KEPT, [h, 0, 0, 0, 0, 0]);
    }
}

/// Whether all of `[start, end)` is private mappings read from descriptor `fd` (ld.so's segments
/// over the extent it mapped first: the descriptor was fit to map then).
pub fn all_from(start: u64, end: u64, fd: u64) -> bool {
    let map = MAPPINGS.lock();
    let mut cur = start;
    for (s, e, m) in map.overlapping(start, end) {
        if s != cur || m.file != File::Fd(fd) {
            return false;
        }
        cur = e;
    }
    cur == end
}

/// The private file mappings in `[start, end)`, cut to it, in address order.
pub fn parts(start: u64, end: u64) -> Vec<Part> {
    let map = MAPPINGS.lock();
    map.overlapping(start, end)
        .into_iter()
        .map(|(s, e, m)| Part { start: s, end: e, file: m.file, off: m.off, written: m.written })
        .collect()
}

/// mremap grew the mapping at `base` from `old_len` to `new_len` (in place or moved there): if
/// its last page is a private file mapping, what it grew by is the file's next pages, as on
/// Linux. Records them and returns them, for the caller to read.
pub fn grown(base: u64, old_len: u64, new_len: u64) -> Option<Part> {
    let old_end = base + old_len;
    let mut map = MAPPINGS.lock();
    let (s, e, m) = map.overlapping(old_end - 1, old_end).into_iter().next()?;
    if e != old_end || new_len <= old_len {
        return None;
    }
    let grown = Mapping { off: m.off + (old_end - s), ..m };
    map.insert(old_end, base + new_len, grown);
    Some(Part { start: old_end, end: base + new_len, file: grown.file, off: grown.off, written: true })
}

/// mremap with MREMAP_DONTUNMAP moved `[old, old + old_len)` to `new` and keeps the old range
/// mapped: both are the file's.
pub fn copied(old: u64, old_len: u64, new: u64) {
    let mut map = MAPPINGS.lock();
    if !map.is_empty() && new != old {
        map.carry(old, old_len, new, old_len, true);
    }
}

/// mremap moved `[old, old + old_len)` to `new` (the old range is unmapped next, which forgets
/// it there); what it grew by is recorded by `grown`.
pub fn moved(old: u64, old_len: u64, new: u64) {
    let mut map = MAPPINGS.lock();
    if map.is_empty() || new == old {
        return;
    }
    for (s, e, m) in map.cut(old, old + old_len) {
        let at = new + (s - old);
        map.insert(at, at + (e - s), m);
    }
}

/// The descriptors forwarded call `nr` with `args` closes or replaces (if it succeeds).
#[allow(non_upper_case_globals)] // linux-raw-sys names the numbers __NR_close etc.
fn closed_by(nr: u64, args: &[u64; 6]) -> Option<(u64, u64)> {
    use linux_raw_sys::general::{__NR_close, __NR_close_range, __NR_dup2, __NR_dup3};
    /// close_range's flag that marks the descriptors close-on-exec instead of closing them.
    const CLOSE_RANGE_CLOEXEC: u64 = 1 << 2;
    match nr as u32 {
        __NR_close => Some((args[0], args[0])),
        // dup2 of a descriptor onto itself closes nothing.
        __NR_dup2 | __NR_dup3 if args[0] as u32 != args[1] as u32 => Some((args[1], args[1])),
        __NR_close_range if args[2] & CLOSE_RANGE_CLOEXEC == 0 => Some((args[0], args[1])),
        _ => None,
    }
}

/// Before forwarded call `nr` with `args`: the files of descriptors it may close or replace
/// that mappings were read from are kept by the monitor, and the mappings name them by
/// handle from now on (if the call then fails, the handle still names the same file). A
/// `close` of such a descriptor the monitor does in the same call: its answer is returned,
/// and the call must not be forwarded again.
pub fn before_forward(nr: u64, args: &[u64; 6]) -> Option<i64> {
    flush_drops();
    let (first, last) = closed_by(nr, args)?;
    if crate::linux::calls::procs::child_ctx().is_some() {
        return None;
    }
    let mut fds: Vec<u64> = {
        let map = MAPPINGS.lock();
        if map.is_empty() {
            return None;
        }
        map.iter()
            .filter_map(|(_, _, m)| match m.file {
                File::Fd(fd) if (first..=last).contains(&fd) => Some(fd),
                _ => None,
            })
            .collect()
    };
    fds.sort_unstable();
    fds.dedup();
    let close = nr == linux_raw_sys::general::__NR_close as u64;
    for &fd in &fds {
        let handle = forward(op::KEEP_FILE, [fd, close as u64, 0, 0, 0, 0]);
        if handle < 0 {
            say_not_kept(handle);
            return None;
        }
        let mut map = MAPPINGS.lock();
        for m in map.values_mut().filter(|m| m.file == File::Fd(fd)) {
            m.file = File::Kept(handle as u64);
        }
    }
    // A close of a mapped descriptor was done with the keeping.
    (close && !fds.is_empty()).then_some(0)
}

/// After forwarded call `nr` with `args` answered `ret`: a descriptor it closed or replaced
/// that still names a mapping's file (the monitor could not keep it) no longer does.
pub fn after_forward(nr: u64, args: &[u64; 6], ret: i64) {
    use linux_raw_sys::general::__NR_close;
    // A failed close may still have closed the descriptor (EINTR, EIO): forget it anyway.
    let Some((first, last)) = closed_by(nr, args).filter(|_| ret >= 0 || nr == __NR_close as u64) else { return };
    if crate::linux::calls::procs::child_ctx().is_some() {
        return;
    }
    let mut map = MAPPINGS.lock();
    for m in map.values_mut() {
        if matches!(m.file, File::Fd(fd) if (first..=last).contains(&fd)) {
            m.file = File::Gone;
        }
    }
}

/// The monitor could not keep a mapped file (ENFILE: it keeps too many): said once; that
/// mapping's pages then cannot read their file again.
fn say_not_kept(err: i64) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        crate::kprintln!("hrt: the monitor could not keep a closed descriptor's file for its private mappings (errno {}): MADV_DONTNEED there will fail with EINVAL (reported once)", -err);
    }
}
