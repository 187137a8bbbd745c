//! The program's `/proc/self/maps`, as the kernel knows its memory: its mappings, cut where
//! the protection changes and where a named part (its executable's and interpreter's file
//! pages, the break, the main stack, the vDSO, a private file mapping, shared memory) begins
//! or ends, with neighbours of the same kind joined as Linux joins its areas. Published in
//! the channel (`ChannelHeader::maps`) before a forwarded open of `maps`, `smaps` or
//! `smaps_rollup`; the monitor formats the lines and names the files.
//!
//! Not shown, as on Linux: the break's window above the break and the stack's guard gap.
//! Kept by the kernel only, shown as anonymous memory: the near table above the vDSO (the
//! targets of rewritten system calls).

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use hrt_abi::channel::{maps_kind, MapsEntry, MAPS_LOCKED, MAPS_LOCKED_ON_FAULT};

use super::private_files::File;
use super::process::PROCESS;
use super::usermem::page_up;
use crate::sync::IrqSpinLock;

/// The last snapshot, which the monitor reads while the open that asked for it is forwarded.
/// Another thread's snapshot may replace it meanwhile: the monitor then formats a mix of the
/// two (numbers it only displays).
static SNAPSHOT: IrqSpinLock<Vec<MapsEntry>> = IrqSpinLock::new(Vec::new());

/// Whether a forwarded open of the program's `path` may be of a `maps`, `smaps` or
/// `smaps_rollup` file (its last component): only then is the snapshot made.
pub fn may_be_maps(path: u64) -> bool {
    super::uaccess::read_cstr(path, 4096).is_ok_and(|p| {
        let name = p.rsplit(|&b| b == b'/').next().unwrap_or(&[]);
        [&b"maps"[..], b"smaps", b"smaps_rollup"].contains(&name)
    })
}

/// Makes the snapshot and publishes it in `to` (address, count).
pub fn publish(to: &[AtomicU64; 2]) {
    let entries = snapshot();
    let mut s = SNAPSHOT.lock();
    *s = entries;
    to[0].store(s.as_ptr() as u64, Ordering::Relaxed);
    to[1].store(s.len() as u64, Ordering::Release);
}

/// A named part of memory: `[start, end)`, its kind, and for a file its offset at `start` and
/// which file.
#[derive(Clone, Copy)]
struct Named {
    start: u64,
    end: u64,
    kind: u32,
    offset: u64,
    file: u64,
}

/// The program's memory as `/proc/self/maps` lists it (RLIMIT_DATA measures it from these).
pub fn entries() -> Vec<MapsEntry> {
    snapshot()
}

fn snapshot() -> Vec<MapsEntry> {
    let named = named_parts();
    let (brk_window, guard) = hidden_parts();
    let mut areas = Areas { out: Vec::new(), last_part: None };
    for (start, end) in super::usermem::regions() {
        for (s, e) in without(start, end, &[brk_window, guard]) {
            for (ps, pe, prot) in with_hidden_prots(super::protect::runs(s, e)) {
                // Write-only and execute-only pages are readable in the page tables: the page
                // map says they were mapped without PROT_READ.
                for (rs, re, unreadable) in super::usermap::readability_runs(ps, pe) {
                    let prot = if unreadable { prot & !super::protect::PROT_READ } else { prot };
                    // Linux's areas end where locking changes (a flag of theirs).
                    for (ls, le, lock) in super::locked::runs(rs, re) {
                        let prot = prot as u32
                            | match lock {
                                Some(l) if l.on_fault => MAPS_LOCKED | MAPS_LOCKED_ON_FAULT,
                                Some(_) => MAPS_LOCKED,
                                None => 0,
                            };
                        areas.label(ls, le, prot, &named);
                    }
                }
            }
        }
    }
    areas.out
}

/// The protections the program gave `[start, end)` (page-aligned), as runs `(start, end,
/// prot)` in address order, neighbours of one protection merged: pages hidden past the end of
/// their file count with the protection they were given, pages not present otherwise are
/// PROT_NONE (0).
pub fn program_prots(start: u64, end: u64) -> Vec<(u64, u64, u64)> {
    let mut out: Vec<(u64, u64, u64)> = Vec::new();
    for (s, e, prot) in with_hidden_prots(super::protect::runs(start, end)) {
        match out.last_mut() {
            Some(last) if last.1 == s && last.2 == prot => last.1 = e,
            _ => out.push((s, e, prot)),
        }
    }
    out
}

/// Protection runs, where pages of file mappings hidden past the end of their file (not
/// present, protection 0) show the protection the program gave them, as Linux lists them.
fn with_hidden_prots(runs: Vec<(u64, u64, u64)>) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::with_capacity(runs.len());
    for (s, e, prot) in runs {
        if prot != 0 {
            out.push((s, e, prot));
            continue;
        }
        let mut hidden = super::shared_files::hidden_prots(s, e);
        hidden.extend(super::past_eof::hidden_prots(s, e));
        hidden.sort_unstable_by_key(|h| h.0);
        let mut cur = s;
        for (hs, he, kept) in hidden {
            if hs < cur {
                continue;
            }
            if cur < hs {
                out.push((cur, hs, 0));
            }
            out.push((hs, he, kept));
            cur = he;
        }
        if cur < e {
            out.push((cur, e, 0));
        }
    }
    out
}

/// The entries made so far, and which named part the last one belongs to.
struct Areas {
    out: Vec<MapsEntry>,
    last_part: Option<usize>,
}

impl Areas {
    /// Adds `[start, end)` with protection `prot`, cut by the named parts it overlaps.
    fn label(&mut self, start: u64, end: u64, prot: u32, named: &[Named]) {
        let mut cur = start;
        while cur < end {
            // The named part at `cur` (the last to start at or before it), else anonymous
            // memory up to the next one.
            let after = named.partition_point(|n| n.start <= cur);
            let here = after.checked_sub(1).filter(|&i| cur < named[i].end);
            let (to, kind, offset, file) = match here.map(|i| &named[i]) {
                Some(n) => (n.end.min(end), n.kind, n.offset + (cur - n.start), n.file),
                None => {
                    let next = named.get(after).map_or(end, |n| n.start);
                    (next.min(end), maps_kind::ANONYMOUS, 0, 0)
                }
            };
            self.join(MapsEntry { start: cur, end: to, offset, file, prot, kind }, here);
            cur = to;
        }
    }

    /// Appends `e` (of named part `part`), joined to the last entry when Linux would show them
    /// as one area: adjacent, the same protection and kind, and for a file's pages the same
    /// part (one `mmap`, or one segment the loader mapped), not merely the next offset of the
    /// same file: Linux keeps a library's RELRO pages, which relocation wrote, apart from the
    /// read-only pages before them.
    fn join(&mut self, e: MapsEntry, part: Option<usize>) {
        let same_part = part == self.last_part;
        self.last_part = part;
        if let Some(last) = self.out.last_mut() {
            let continues = match e.kind {
                maps_kind::ANONYMOUS | maps_kind::HEAP | maps_kind::STACK | maps_kind::VDSO => true,
                _ => same_part && last.file == e.file && last.offset + (last.end - last.start) == e.offset,
            };
            if last.end == e.start && last.prot == e.prot && last.kind == e.kind && continues {
                last.end = e.end;
                return;
            }
        }
        self.out.push(e);
    }
}

/// The parts of memory with a name, in address order (they do not overlap).
fn named_parts() -> Vec<Named> {
    let mut named = Vec::new();
    let [_, bottom, top, vdso_end] = super::loader::main_stack();
    named.push(Named { start: bottom, end: top, kind: maps_kind::STACK, offset: 0, file: 0 });
    named.push(Named { start: top, end: vdso_end, kind: maps_kind::VDSO, offset: 0, file: 0 });
    {
        let b = PROCESS.brk.lock();
        named.push(Named {
            start: b.start,
            end: page_up(b.cur).max(b.start),
            kind: maps_kind::HEAP,
            offset: 0,
            file: 0,
        });
    }
    for p in super::private_files::parts(0, u64::MAX) {
        let (kind, file) = match p.file {
            File::Fd(fd) => (maps_kind::FILE_FD, fd),
            File::Kept(h) => (maps_kind::FILE_KEPT, h),
            File::Gone => (maps_kind::ANONYMOUS, 0),
            File::Image(kind) => (kind, 0),
        };
        named.push(Named { start: p.start, end: p.end, kind, offset: p.off, file });
    }
    for (start, end, _) in super::shared_files::parts(0, u64::MAX) {
        named.push(Named { start, end, kind: maps_kind::SHARED, offset: 0, file: 0 });
    }
    named.retain(|n| n.start < n.end);
    named.sort_by_key(|n| n.start);
    named
}

/// What Linux does not list: the break's window above the break, and the main stack's guard.
fn hidden_parts() -> ((u64, u64), (u64, u64)) {
    let window = {
        let b = PROCESS.brk.lock();
        (page_up(b.cur).max(b.start), b.mapped_end)
    };
    let [guard, bottom, _, _] = super::loader::main_stack();
    (window, (guard, bottom))
}

/// `[start, end)` without the ranges `cut`.
fn without(start: u64, end: u64, cut: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut parts = alloc::vec![(start, end)];
    for &(cs, ce) in cut.iter().filter(|(s, e)| s < e) {
        parts = parts.into_iter().flat_map(|(s, e)| [(s, e.min(cs)), (s.max(ce), e)]).filter(|(s, e)| s < e).collect();
    }
    parts
}
