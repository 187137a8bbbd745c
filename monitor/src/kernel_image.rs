//! The kernel ELF: the one built into `hrt`, or `--kernel PATH`; loaded at its physical
//! addresses.

use std::borrow::Cow;
use std::path::Path;

use goblin::elf::{header, program_header::PT_LOAD};
use hrt_abi::layout;

use crate::error::err;
use crate::error::Result;

static BUILTIN: &[u8] = include_bytes!(env!("HRT_KERNEL_IMAGE"));

/// A validated kernel image.
pub struct KernelImage {
    /// The built-in image is borrowed, not copied: a copy faulted in all 6 MB of it (debug line
    /// tables included) at every start, where loading touches the ~1 MB of its segments.
    bytes: Cow<'static, [u8]>,
    pub entry: u64,
    /// (physical address, file offset, file size, memory size) of each PT_LOAD segment.
    pub segments: Vec<(u64, usize, usize, usize)>,
    /// `[start, end)` of each PT_LOAD segment the kernel never writes (code, read-only data),
    /// page-rounded inwards.
    pub read_only: Vec<(u64, u64)>,
}

impl KernelImage {
    pub fn load(path: Option<&Path>) -> Result<KernelImage> {
        let (bytes, name) = match path {
            None => (Cow::Borrowed(BUILTIN), "built-in kernel".to_string()),
            Some(p) => {
                let b = std::fs::read(p)
                    .map_err(|e| err!("cannot read kernel image {}: {}", p.display(), io_reason(&e)))?;
                (Cow::Owned(b), p.display().to_string())
            }
        };
        Self::parse(bytes, &name)
    }

    fn parse(bytes: Cow<'static, [u8]>, name: &str) -> Result<KernelImage> {
        if bytes.len() < 4 || &bytes[..4] != b"\x7fELF" {
            return Err(err!("{name} is not an ELF file"));
        }
        let elf =
            crate::elf_headers::headers(&bytes, false).map_err(|e| err!("{name} is not a valid ELF file: {e}"))?;
        if !elf.is_64 || elf.header.e_machine != header::EM_X86_64 {
            return Err(err!("{name} is not an x86-64 ELF64 kernel"));
        }
        let mut segments = Vec::new();
        let mut read_only = Vec::new();
        for ph in elf.program_headers.iter().filter(|p| p.p_type == PT_LOAD) {
            let (addr, off, filesz, memsz) =
                (ph.p_paddr, ph.p_offset as usize, ph.p_filesz as usize, ph.p_memsz as usize);
            if addr < layout::KERNEL_BASE || addr + memsz as u64 > layout::KERNEL_LIMIT {
                return Err(err!(
                    "{name}: segment at {addr:#x} (+{memsz:#x}) is outside the kernel area {:#x}..{:#x}",
                    layout::KERNEL_BASE,
                    layout::KERNEL_LIMIT
                ));
            }
            if off.checked_add(filesz).is_none_or(|end| end > bytes.len()) || filesz > memsz {
                return Err(err!("{name}: a segment lies outside the file"));
            }
            segments.push((addr, off, filesz, memsz));
            if ph.p_flags & goblin::elf::program_header::PF_W == 0 {
                let (start, end) = (addr.next_multiple_of(4096), (addr + memsz as u64) & !4095);
                if start < end {
                    read_only.push((start, end));
                }
            }
        }
        if segments.is_empty() {
            return Err(err!("{name} has no loadable segments"));
        }
        let entry = elf.entry;
        Ok(KernelImage { bytes, entry, segments, read_only })
    }

    /// The whole ELF image (its symbols name `--profile`'s samples).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn segment_bytes(&self, off: usize, len: usize) -> &[u8] {
        &self.bytes[off..off + len]
    }

    /// First byte after the image in physical memory.
    pub fn end(&self) -> u64 {
        self.segments.iter().map(|s| s.0 + s.3 as u64).max().unwrap_or(layout::KERNEL_BASE)
    }
}

/// The OS error text without Rust's " (os error N)" suffix.
pub fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use goblin::elf::Elf;

    /// The built-in kernel: what the full parse finds, the headers-only parse finds too.
    #[test]
    fn headers_only_parse_finds_what_the_full_parse_does() {
        let t0 = std::time::Instant::now();
        let full = Elf::parse(BUILTIN).unwrap();
        let t1 = std::time::Instant::now();
        let quick = crate::elf_headers::headers(BUILTIN, false).unwrap();
        let t2 = std::time::Instant::now();
        eprintln!("full parse {:?}, headers only {:?}", t1 - t0, t2 - t1);
        assert_eq!(full.entry, quick.entry);
        assert_eq!(full.is_64, quick.is_64);
        assert_eq!(full.header.e_machine, quick.header.e_machine);
        assert_eq!(full.program_headers, quick.program_headers);
    }
}
