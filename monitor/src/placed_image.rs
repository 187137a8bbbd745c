//! The boot program's file as the kernel sees it in guest RAM, without its large segments.
//!
//! The monitor puts the program's file below the boot stacks and the kernel's loader copies
//! each PT_LOAD segment from there to where the program runs. Every segment of
//! `SEGMENT_COPY_BY_HOST` bytes or more is copied by the monitor (`nr::MEM_COPY`), so those
//! parts of the file need not be in guest RAM at all: the monitor leaves them out and copies
//! them from its own view of the file (`FileBytes`, the host's page cache). For Node.js's
//! 99 MB executable that is ~95 MB of guest RAM the host no longer clears and fills (each
//! fresh 2 MiB host page cost 0.3-3 ms here) and one copy fewer. What the kernel reads from
//! the placed file itself stays: the ELF and program headers, the small segments, the section
//! headers and every section that is not loaded (the symbol table).

use std::sync::Arc;

use goblin::elf::{program_header::PT_LOAD, section_header::SHF_ALLOC, Elf};

use crate::file_bytes::FileBytes;

const PAGE: u64 = 4096;

/// `[start, end)` file ranges, whole pages, that the kernel never reads from the placed file:
/// the insides of the segments it has the monitor copy.
pub fn left_out(elf: &Elf, file_len: u64) -> Vec<(u64, u64)> {
    let by_host =
        |p: &goblin::elf::ProgramHeader| p.p_type == PT_LOAD && p.p_filesz >= hrt_abi::nr::SEGMENT_COPY_BY_HOST;
    let loads: Vec<_> = elf.program_headers.iter().filter(|p| p.p_type == PT_LOAD).collect();
    // What must stay: the headers, the segments the kernel copies itself, the section
    // headers and the sections that are not loaded.
    let h = &elf.header;
    let mut kept: Vec<(u64, u64)> = vec![(0, h.e_phoff.saturating_add(h.e_phnum as u64 * 56).max(h.e_ehsize as u64))];
    kept.extend(loads.iter().filter(|p| !by_host(p)).map(|p| (p.p_offset, p.p_offset.saturating_add(p.p_filesz))));
    kept.push((h.e_shoff, h.e_shoff.saturating_add(h.e_shnum as u64 * h.e_shentsize as u64)));
    kept.extend(
        elf.section_headers
            .iter()
            .filter(|s| s.sh_flags & SHF_ALLOC as u64 == 0)
            .map(|s| (s.sh_offset, s.sh_offset.saturating_add(s.sh_size))),
    );
    let mut out = Vec::new();
    for p in loads.iter().filter(|p| by_host(p)) {
        let (start, end) = (p.p_offset.next_multiple_of(PAGE), (p.p_offset + p.p_filesz).min(file_len) & !(PAGE - 1));
        let mut pieces = vec![(start, end)];
        for &(ks, ke) in &kept {
            let (ks, ke) = (ks & !(PAGE - 1), ke.next_multiple_of(PAGE));
            pieces = pieces
                .into_iter()
                .flat_map(|(s, e)| [(s, e.min(ks)), (s.max(ke), e)])
                .filter(|&(s, e)| s < e)
                .collect();
        }
        out.extend(pieces);
    }
    out.sort_unstable();
    // Overlapping segments' pieces, merged.
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (s, e) in out {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
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

/// The placed file: where in guest RAM, and the monitor's view of its bytes.
pub struct PlacedImage {
    pub base: u64,
    pub bytes: Arc<FileBytes>,
}

impl PlacedImage {
    /// The file's bytes behind guest-physical `[addr, addr + len)` when the range lies inside
    /// the placed file.
    pub fn bytes_at(&self, addr: u64, len: u64) -> Option<&[u8]> {
        let off = addr.checked_sub(self.base)?;
        let end = off.checked_add(len)?;
        self.bytes.get(off as usize..usize::try_from(end).ok()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_what_is_read_and_leaves_out_large_segments() {
        // /proc/self/exe: the test binary, whose text segment is over 1 MiB.
        let bytes = std::fs::read("/proc/self/exe").unwrap();
        let elf = Elf::parse(&bytes).unwrap();
        let out = left_out(&elf, bytes.len() as u64);
        let big: u64 = elf
            .program_headers
            .iter()
            .filter(|p| p.p_type == PT_LOAD && p.p_filesz >= hrt_abi::nr::SEGMENT_COPY_BY_HOST)
            .map(|p| p.p_filesz)
            .sum();
        let left: u64 = out.iter().map(|(s, e)| e - s).sum();
        assert!(big > 0 && left > big / 2 && left <= big, "left out {left} of {big}");
        // Nothing the kernel reads is left out.
        let h = &elf.header;
        let phdrs = (h.e_phoff, h.e_phoff + h.e_phnum as u64 * 56);
        let shdrs = (h.e_shoff, h.e_shoff + h.e_shnum as u64 * 64);
        for &(s, e) in &out {
            assert_eq!(s % PAGE, 0);
            assert_eq!(e % PAGE, 0);
            for (ks, ke) in [phdrs, shdrs] {
                assert!(e <= ks || s >= ke, "{s:#x}..{e:#x} overlaps {ks:#x}..{ke:#x}");
            }
        }
        // The kept parts and the left-out ranges make up the file.
        let kept: u64 = kept_parts(&bytes, &out).iter().map(|(_, b)| b.len() as u64).sum();
        assert_eq!(kept + left, bytes.len() as u64);
    }

    #[test]
    fn kept_parts_of_a_file_with_gaps() {
        let bytes: Vec<u8> = (0..10u8).collect();
        let parts = kept_parts(&bytes, &[(2, 4), (6, 20)]);
        assert_eq!(parts, vec![(0, &bytes[0..2]), (4, &bytes[4..6])]);
        assert_eq!(kept_parts(&bytes, &[]), vec![(0, &bytes[..])]);
    }
}
