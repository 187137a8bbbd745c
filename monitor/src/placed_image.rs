//! A program's file as the kernel sees it in guest RAM, without its large segments.
//!
//! The monitor puts the program's file below the boot stacks (the boot program) or into the
//! staging area of an execve (`forward/exec.rs`), and the kernel's loader copies each PT_LOAD
//! segment from there to where the program runs. Every segment of
//! `SEGMENT_COPY_BY_HOST` bytes or more is copied by the monitor (`nr::MEM_COPY`), so those
//! parts of the file need not be in guest RAM at all: the monitor leaves them out and copies
//! them from its own view of the file (`FileBytes`, the host's page cache). For Node.js's
//! 99 MB executable that is ~95 MB of guest RAM the host no longer clears and fills (each
//! fresh 2 MiB host page cost 0.3-3 ms here) and one copy fewer. Nor do the sections that are
//! not loaded (debug information) go in. What the kernel reads from the placed file itself
//! stays: the ELF and program headers, the small segments, the section headers and the symbol
//! table.

use std::sync::{Arc, Mutex};

use goblin::elf::{program_header::PT_LOAD, Elf};

use crate::file_bytes::FileBytes;

const PAGE: u64 = 4096;

/// `[start, end)` file ranges, whole pages, that the kernel never reads from the placed file:
/// all but the ELF and program headers, the segments it copies itself (under
/// `SEGMENT_COPY_BY_HOST` bytes), the section headers and the symbol table (`.symtab`, whose
/// functions the system-call rewriter looks up). So the large segments, which the monitor
/// copies, and the sections that are not loaded (debug information, `.strtab`, ...) stay out.
pub fn left_out(elf: &Elf, file_len: u64) -> Vec<(u64, u64)> {
    const SHT_SYMTAB: u32 = 2;
    let h = &elf.header;
    let mut kept: Vec<(u64, u64)> = vec![(0, h.e_phoff.saturating_add(h.e_phnum as u64 * 56).max(h.e_ehsize as u64))];
    kept.extend(
        elf.program_headers
            .iter()
            .filter(|p| p.p_type == PT_LOAD && p.p_filesz < hrt_abi::nr::SEGMENT_COPY_BY_HOST)
            .map(|p| (p.p_offset, p.p_offset.saturating_add(p.p_filesz))),
    );
    kept.push((h.e_shoff, h.e_shoff.saturating_add(h.e_shnum as u64 * h.e_shentsize as u64)));
    kept.extend(
        elf.section_headers
            .iter()
            .filter(|s| s.sh_type == SHT_SYMTAB)
            .map(|s| (s.sh_offset, s.sh_offset.saturating_add(s.sh_size))),
    );
    // Whole pages: what is kept rounded out, so the rest is rounded in.
    let mut kept: Vec<(u64, u64)> = kept
        .into_iter()
        .map(|(s, e)| (s & !(PAGE - 1), e.min(file_len).next_multiple_of(PAGE)))
        .filter(|&(s, e)| s < e)
        .collect();
    kept.sort_unstable();
    let mut out = Vec::new();
    let mut at = 0;
    for (s, e) in kept {
        if s > at {
            out.push((at, s));
        }
        at = at.max(e);
    }
    let end = file_len & !(PAGE - 1);
    if end > at {
        out.push((at, end));
    }
    out
}

/// The parts of `bytes` that go into guest RAM: all but `left_out` (sorted, disjoint).
pub fn kept_parts<'a>(bytes: &'a [u8], left_out: &[(u64, u64)]) -> Vec<(u64, &'a [u8])> {
    let mut parts = Vec::new();
    let mut at = 0u64;
    for &(s, e) in left_out.iter().chain([&(bytes.len() as u64, bytes.len() as u64)]) {
        let s = s.min(bytes.len() as u64);
        if s > at {
            parts.push((at, &bytes[at as usize..s as usize]));
        }
        at = at.max(e.min(bytes.len() as u64));
    }
    parts
}

/// A placed file: where in guest RAM, and the monitor's view of its bytes.
struct PlacedImage {
    base: u64,
    bytes: Arc<FileBytes>,
    /// An execve's (in its staging area, which the kernel frees), not the boot program's
    /// (in memory reserved for good).
    exec: bool,
}

/// The files placed without their large segments: the boot program's, and the one of an
/// execve under way.
#[derive(Default)]
pub struct PlacedImages(Mutex<Vec<PlacedImage>>);

impl PlacedImages {
    /// The boot program's file at `base` (reserved memory, never reused).
    pub fn add_boot(&self, base: u64, bytes: Arc<FileBytes>) {
        self.0.lock().unwrap().push(PlacedImage { base, bytes, exec: false });
    }

    /// An execve's program file at `base` of its staging area, until `end_exec`.
    pub fn add_exec(&self, base: u64, bytes: Arc<FileBytes>) {
        let mut images = self.0.lock().unwrap();
        images.retain(|i| !i.exec);
        images.push(PlacedImage { base, bytes, exec: true });
    }

    /// The execve is done or abandoned: its staging area is free memory again.
    pub fn end_exec(&self) {
        self.0.lock().unwrap().retain(|i| !i.exec);
    }

    /// `nr::MEM_COPY`'s source: a placed file's bytes where guest-physical `[src, src + len)`
    /// lies inside one, else None (the copy reads guest RAM). A copy of guest RAM that holds
    /// a whole placed file (the kernel moving a staging area) moves the file's place along.
    pub fn copy_source(&self, src: u64, len: u64, dst: u64) -> Option<(Arc<FileBytes>, usize)> {
        let mut images = self.0.lock().unwrap();
        for i in images.iter_mut() {
            let Some(off) = src.checked_sub(i.base) else { continue };
            if off.checked_add(len).is_some_and(|end| end <= i.bytes.len() as u64) {
                return Some((i.bytes.clone(), off as usize));
            }
        }
        for i in images.iter_mut() {
            if i.base >= src && i.base + i.bytes.len() as u64 <= src.saturating_add(len) {
                i.base = i.base - src + dst;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_what_is_read_and_leaves_out_large_segments() {
        // /proc/self/exe: the test binary, whose text segment is over 1 MiB and which has
        // debug information and a symbol table.
        let bytes = std::fs::read("/proc/self/exe").unwrap();
        let elf = Elf::parse(&bytes).unwrap();
        let out = left_out(&elf, bytes.len() as u64);
        let is_out = |at: u64| out.iter().any(|&(s, e)| (s..e).contains(&at));
        let big: Vec<_> = elf
            .program_headers
            .iter()
            .filter(|p| p.p_type == PT_LOAD && p.p_filesz >= hrt_abi::nr::SEGMENT_COPY_BY_HOST)
            .collect();
        assert!(!big.is_empty());
        for p in big {
            let mid = (p.p_offset + p.p_filesz / 2) & !(PAGE - 1);
            assert!(is_out(mid), "the middle of the segment at {:#x} is kept", p.p_offset);
        }
        let debug = elf.section_headers.iter().find(|s| elf.shdr_strtab.get_at(s.sh_name) == Some(".debug_info"));
        let debug = debug.expect("the test binary has .debug_info");
        assert!(is_out((debug.sh_offset + debug.sh_size / 2) & !(PAGE - 1)), ".debug_info kept");
        // Nothing the kernel reads is left out.
        let h = &elf.header;
        let mut read = vec![(0, h.e_phoff + h.e_phnum as u64 * 56), (h.e_shoff, h.e_shoff + h.e_shnum as u64 * 64)];
        read.extend(
            elf.section_headers.iter().filter(|s| s.sh_type == 2).map(|s| (s.sh_offset, s.sh_offset + s.sh_size)),
        );
        read.extend(
            elf.program_headers
                .iter()
                .filter(|p| p.p_type == PT_LOAD && p.p_filesz < hrt_abi::nr::SEGMENT_COPY_BY_HOST)
                .map(|p| (p.p_offset, p.p_offset + p.p_filesz)),
        );
        assert!(read.len() >= 3, "no symbol table or small segment: {read:x?}");
        for &(s, e) in &out {
            assert_eq!((s % PAGE, e % PAGE), (0, 0));
            for &(ks, ke) in &read {
                assert!(e <= ks || s >= ke, "{s:#x}..{e:#x} overlaps {ks:#x}..{ke:#x}");
            }
        }
        // The kept parts and the left-out ranges make up the file.
        let left: u64 = out.iter().map(|(s, e)| e - s).sum();
        let kept: u64 = kept_parts(&bytes, &out).iter().map(|(_, b)| b.len() as u64).sum();
        assert_eq!(kept + left, bytes.len() as u64);
    }

    #[test]
    fn copies_from_a_placed_file_and_follows_its_move() {
        let bytes = Arc::new(FileBytes::Owned((0..8192u32).map(|i| i as u8).collect()));
        let images = PlacedImages::default();
        images.add_boot(0x10_0000, bytes.clone());
        images.add_exec(0x20_0000, bytes.clone());
        let off = |r: Option<(Arc<FileBytes>, usize)>| r.map(|(_, o)| o);
        assert_eq!(off(images.copy_source(0x10_0010, 16, 0)), Some(0x10));
        assert_eq!(off(images.copy_source(0x20_1000, 4096, 0)), Some(0x1000));
        // Past a file's end, or across it: guest RAM.
        assert_eq!(off(images.copy_source(0x20_1001, 4096, 0)), None);
        assert_eq!(off(images.copy_source(0x1f_ffff, 2, 0)), None);
        // A copy that holds the exec's whole file moves it.
        assert_eq!(off(images.copy_source(0x1f_f000, 0x4000, 0x80_0000)), None);
        assert_eq!(off(images.copy_source(0x20_0000, 16, 0)), None);
        assert_eq!(off(images.copy_source(0x80_1000 + 8, 16, 0)), Some(8));
        // The exec ends: its place is free memory again; the boot program's stays.
        images.end_exec();
        assert_eq!(off(images.copy_source(0x80_1008, 16, 0)), None);
        assert_eq!(off(images.copy_source(0x10_0000, 8192, 0)), Some(0));
    }

    #[test]
    fn kept_parts_of_a_file_with_gaps() {
        let bytes: Vec<u8> = (0..10u8).collect();
        let parts = kept_parts(&bytes, &[(2, 4), (6, 20)]);
        assert_eq!(parts, vec![(0, &bytes[0..2]), (4, &bytes[4..6])]);
        assert_eq!(kept_parts(&bytes, &[]), vec![(0, &bytes[..])]);
    }
}
