//! The program's private file mappings (`MAP_PRIVATE` of a file, made by `mmap`): which
//! descriptor and file offset each range was read from.
//!
//! `mmap` reads such a mapping at once, so its pages look like anonymous memory, but Linux
//! treats them as the file's: `madvise(MADV_DONTNEED)` drops the program's private copy (the
//! pages read the file again, not zero), and MADV_FREE, MADV_WIPEONFORK and MADV_REMOVE
//! refuse them. madvise asks here which parts of a range are file pages.
//!
//! Reading the file again needs the file: the descriptor names it until the program closes or
//! replaces it (only close, close_range, dup2 and dup3 can; all are forwarded, and
//! `after_forward` sees them), after which the mapping is remembered without one: its pages are
//! still the file's, but out of reach.
//!
//! Records go with the memory: `release` (munmap, a mapping replacing them, exec) and `moved`
//! (mremap). The program's own image and ld.so, which the kernel loads itself, are not here.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::sync::IrqSpinLock;

/// One private file mapping (or what is left of it).
#[derive(Clone, Copy)]
struct Mapping {
    end: u64,
    /// The descriptor it was read from, while it still names that file.
    fd: Option<u64>,
    /// The file offset of the first page.
    off: u64,
}

static MAPPINGS: IrqSpinLock<BTreeMap<u64, Mapping>> = IrqSpinLock::new(BTreeMap::new());

/// A part of a range that is a private file mapping: where, and the descriptor and file offset
/// its first page was read from (no descriptor once the program closed it).
pub struct Part {
    pub start: u64,
    pub end: u64,
    pub fd: Option<u64>,
    pub off: u64,
}

/// `mmap` read `[start, start + len)` from `fd` at `off` (private). Replaces what was
/// remembered there (the caller released the range first).
pub fn record(start: u64, len: u64, fd: u64, off: u64) {
    MAPPINGS.lock().insert(start, Mapping { end: start + len, fd: Some(fd), off });
}

/// `[start, end)` is being unmapped or replaced: its mappings are forgotten.
pub fn release(start: u64, end: u64) {
    let mut map = MAPPINGS.lock();
    if map.is_empty() {
        return;
    }
    for (s, _) in cut(&mut map, start, end) {
        map.remove(&s);
    }
}

/// Splits the mappings that stick out of `[start, end)` and returns those inside it.
fn cut(map: &mut BTreeMap<u64, Mapping>, start: u64, end: u64) -> Vec<(u64, Mapping)> {
    for at in [start, end] {
        if let Some((&s, &m)) = map.range(..at).next_back().filter(|(_, m)| m.end > at) {
            map.insert(s, Mapping { end: at, ..m });
            map.insert(at, Mapping { off: m.off + (at - s), ..m });
        }
    }
    map.range(start..end).map(|(&s, &m)| (s, m)).collect()
}

/// The private file mappings in `[start, end)`, cut to it, in address order.
pub fn parts(start: u64, end: u64) -> Vec<Part> {
    let map = MAPPINGS.lock();
    map.range(..end)
        .rev()
        .take_while(|(_, m)| m.end > start)
        .map(|(&s, m)| Part { start: s.max(start), end: m.end.min(end), fd: m.fd, off: m.off + (s.max(start) - s) })
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect()
}

/// mremap moved `[old, old + old_len)` to `new` (the old range is unmapped next, which forgets
/// it there); only the old length holds file pages (Linux's grown part is the file's next
/// pages, but HRT gives it zero memory: see `mremap`).
pub fn moved(old: u64, old_len: u64, new: u64) {
    let mut map = MAPPINGS.lock();
    if map.is_empty() || new == old {
        return;
    }
    for (s, m) in cut(&mut map, old, old + old_len) {
        let at = new + (s - old);
        map.insert(at, Mapping { end: at + (m.end - s), ..m });
    }
}

/// After forwarded call `nr` with `args` answered `ret`: a descriptor it closed or replaced no
/// longer names a mapping's file.
#[allow(non_upper_case_globals)] // linux-raw-sys names the numbers __NR_close etc.
pub fn after_forward(nr: u64, args: &[u64; 6], ret: i64) {
    use linux_raw_sys::general::{__NR_close, __NR_close_range, __NR_dup2, __NR_dup3};
    /// close_range's flag that marks the descriptors close-on-exec instead of closing them.
    const CLOSE_RANGE_CLOEXEC: u64 = 1 << 2;
    let (first, last) = match nr as u32 {
        // A failed close may still have closed the descriptor (EINTR, EIO): forget it anyway.
        __NR_close => (args[0], args[0]),
        __NR_dup2 | __NR_dup3 if ret >= 0 => (args[1], args[1]),
        __NR_close_range if ret >= 0 && args[2] & CLOSE_RANGE_CLOEXEC == 0 => (args[0], args[1]),
        _ => return,
    };
    let mut map = MAPPINGS.lock();
    for m in map.values_mut() {
        if m.fd.is_some_and(|fd| (first..=last).contains(&fd)) {
            m.fd = None;
        }
    }
}
