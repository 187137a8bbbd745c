//! A look at a shared library's dynamic linking tables without reading the file whole.
//!
//! `--omp` asks, for each library a program loads (ffmpeg: 214 of them, 283 MB), what it
//! needs (DT_NEEDED, its search paths), what it is called (DT_SONAME) and which symbols it
//! imports or exports. Reading each file whole, or mapping it, cost ffmpeg's start 20-35 ms
//! (the copies, fresh pages to put them in, page faults, and inside `hrt` mapping calls that
//! wait for the vCPU threads' faults on guest memory). A `Looker` reads only the ELF header,
//! the program and section headers, the dynamic segment and, when asked, the dynamic symbol
//! table and its strings, each with one `pread`, at their offsets in one buffer the size of
//! the file: the `elf_headers` functions then read the file's bytes there as in the file.
//! Everything else in the buffer reads zero. The buffer is an address range reserved once
//! (pages the host gives only where parts are read), cleared part by part for the next file.

use std::os::unix::fs::FileExt;

/// The largest file looked at (an address range reserved, not memory: only the parts read
/// take host pages). PyTorch's pip wheels carry a 500 MB libtorch_cpu.so.
pub const MAX_FILE: u64 = 2 << 30;
/// The most bytes of tables read from one file (a library's dynamic symbols and strings are a
/// few MB at most; beyond this the look gives up and the caller reads the file whole).
const MAX_PARTS: u64 = 64 << 20;

const EHDR_SIZE: u64 = 64;
const PHDR_SIZE: u64 = 56;
const SHDR_SIZE: u64 = 64;
const PT_DYNAMIC: u32 = 2;
const SHT_DYNSYM: u32 = 11;

/// Reads files' tables into one reserved buffer, file after file.
pub struct Looker {
    /// `MAX_FILE` bytes reserved (`MAP_NORESERVE`), or null before the first look.
    base: *mut u8,
    /// The parts read for the last file, cleared before the next one is read.
    filled: Vec<(usize, usize)>,
}

// SAFETY: the reservation is owned by this value alone.
unsafe impl Send for Looker {}

impl Default for Looker {
    fn default() -> Self {
        Looker::new()
    }
}

impl Looker {
    pub fn new() -> Looker {
        Looker { base: std::ptr::null_mut(), filled: Vec::new() }
    }

    /// The bytes of `file` (a regular file of `len` bytes) as far as its ELF64 headers, its
    /// dynamic segment and, with `symbols`, its dynamic symbol table and strings go; zero
    /// elsewhere. None when the file is no little-endian ELF64 file, is larger than
    /// `MAX_FILE`, has tables out of its bounds, or cannot be read: the caller then reads it
    /// whole, or skips it, as it would have.
    pub fn look(&mut self, file: &std::fs::File, len: u64, symbols: bool) -> Option<&[u8]> {
        if !(EHDR_SIZE..=MAX_FILE).contains(&len) {
            return None;
        }
        self.reserve()?;
        self.clear();
        let mut budget = MAX_PARTS;
        let head = len.min(4096);
        self.read(file, 0, head, &mut budget)?;
        let bytes = self.bytes(len);
        if bytes[..4] != *b"\x7fELF" || bytes[4] != 2 /* ELFCLASS64 */ || bytes[5] != 1
        /* ELFDATA2LSB */
        {
            return None;
        }
        let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]) as u64;
        let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default());
        let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
        let (phoff, phnum) = (u64_at(bytes, 32), u16_at(bytes, 56));
        let (shoff, shnum) = (u64_at(bytes, 40), u16_at(bytes, 60));
        self.read_part(file, len, phoff, phnum * PHDR_SIZE, head, &mut budget)?;
        self.read_part(file, len, shoff, shnum * SHDR_SIZE, head, &mut budget)?;
        let mut wanted = Vec::new();
        let bytes = self.bytes(len);
        for i in 0..phnum as usize {
            let p = phoff as usize + i * PHDR_SIZE as usize;
            if u32_at(bytes, p) == PT_DYNAMIC {
                wanted.push((u64_at(bytes, p + 8), u64_at(bytes, p + 32)));
            }
        }
        if symbols {
            for i in 0..shnum as usize {
                let s = shoff as usize + i * SHDR_SIZE as usize;
                if u32_at(bytes, s + 4) != SHT_DYNSYM {
                    continue;
                }
                wanted.push((u64_at(bytes, s + 24), u64_at(bytes, s + 32)));
                let link = u32_at(bytes, s + 40) as u64;
                if link < shnum {
                    let l = (shoff + link * SHDR_SIZE) as usize;
                    wanted.push((u64_at(bytes, l + 24), u64_at(bytes, l + 32)));
                }
            }
        }
        for &(offset, size) in &wanted {
            self.read_part(file, len, offset, size, head, &mut budget)?;
        }
        // The dynamic section names its strings by address (DT_STRTAB, DT_STRSZ): the
        // libraries it needs and its search paths are there (the same bytes as `.dynstr`,
        // already read with the symbols).
        if let Some((offset, size)) = self.dynamic_strings(len) {
            self.read_part(file, len, offset, size, head, &mut budget)?;
        }
        Some(self.bytes(len))
    }

    /// Where the dynamic section's strings lie in the file (offset, size), if it says.
    fn dynamic_strings(&self, len: u64) -> Option<(u64, u64)> {
        const DT_STRTAB: u64 = 5;
        const DT_STRSZ: u64 = 10;
        let bytes = self.bytes(len);
        let elf = crate::elf_headers::headers(bytes, false).ok()?;
        let dynamic = elf.program_headers.iter().find(|p| p.p_type == PT_DYNAMIC)?;
        let entries = bytes.get(dynamic.p_offset as usize..dynamic.p_offset.checked_add(dynamic.p_filesz)? as usize)?;
        let value = |tag: u64| {
            entries.chunks_exact(16).find_map(|e| {
                let t = u64::from_le_bytes(e[..8].try_into().unwrap_or_default());
                (t == tag).then(|| u64::from_le_bytes(e[8..16].try_into().unwrap_or_default()))
            })
        };
        let (addr, size) = (value(DT_STRTAB)?, value(DT_STRSZ)?);
        let load = elf.program_headers.iter().find(|p| {
            p.p_type == goblin::elf::program_header::PT_LOAD && addr >= p.p_vaddr && addr - p.p_vaddr < p.p_filesz
        })?;
        Some((load.p_offset.checked_add(addr - load.p_vaddr)?, size))
    }

    /// Reads `[offset, offset + size)` unless the first page holds it; None when it lies
    /// outside the file or the parts grow past their budget.
    fn read_part(
        &mut self,
        file: &std::fs::File,
        len: u64,
        offset: u64,
        size: u64,
        head: u64,
        budget: &mut u64,
    ) -> Option<()> {
        let end = offset.checked_add(size)?;
        if end > len {
            return None;
        }
        if end <= head || size == 0 {
            return Some(());
        }
        self.read(file, offset, size, budget)
    }

    fn read(&mut self, file: &std::fs::File, offset: u64, size: u64, budget: &mut u64) -> Option<()> {
        *budget = budget.checked_sub(size)?;
        // SAFETY: `[offset, offset + size)` lies in the reservation (`offset + size` is within
        // the file, at most `MAX_FILE`), which only this value uses.
        let part = unsafe { std::slice::from_raw_parts_mut(self.base.add(offset as usize), size as usize) };
        self.filled.push((offset as usize, size as usize));
        file.read_exact_at(part, offset).ok()
    }

    /// The first `len` bytes of the buffer.
    fn bytes(&self, len: u64) -> &[u8] {
        // SAFETY: the reservation holds `MAX_FILE >= len` bytes, readable (zero where unread).
        unsafe { std::slice::from_raw_parts(self.base, len as usize) }
    }

    /// Zeroes the parts the last look read: in place, but a very large one (only a hostile
    /// library's) by giving its pages back, so that a looker kept for a program's life
    /// (`LibraryPlans`) holds at most a few MB of host memory between looks. Not every large
    /// one: `madvise` in `hrt`, whose other threads run vCPUs, costs a TLB shootdown that
    /// interrupts them (~0.5 ms a library mapped here, ffmpeg's start 387 -> 502 ms).
    fn clear(&mut self) {
        const PAGE: usize = 4096;
        for (offset, size) in self.filled.drain(..) {
            if size < 8 << 20 {
                // SAFETY: a part read before, inside the reservation.
                unsafe { std::ptr::write_bytes(self.base.add(offset), 0, size) };
                continue;
            }
            let (start, end) = (offset / PAGE * PAGE, (offset + size).div_ceil(PAGE) * PAGE);
            // SAFETY: whole pages of the reservation, which only this value uses; every part
            // in them is being cleared, and private anonymous pages read zero after this.
            let done = unsafe { libc::madvise(self.base.add(start).cast(), end - start, libc::MADV_DONTNEED) };
            if done != 0 {
                // SAFETY: as for a small part.
                unsafe { std::ptr::write_bytes(self.base.add(offset), 0, size) };
            }
        }
    }

    fn reserve(&mut self) -> Option<()> {
        if !self.base.is_null() {
            return Some(());
        }
        // SAFETY: a fresh anonymous private mapping; no existing memory is affected.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                MAX_FILE as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if at == libc::MAP_FAILED {
            return None;
        }
        self.base = at as *mut u8;
        Some(())
    }
}

impl Drop for Looker {
    fn drop(&mut self) {
        if !self.base.is_null() {
            // SAFETY: the reservation made by `reserve`, unmapped once.
            unsafe { libc::munmap(self.base as *mut libc::c_void, MAX_FILE as usize) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elf_headers;

    /// What a look finds in the host's libraries is what the whole file gives: needed
    /// libraries, search paths, the name, every dynamic symbol; one looker serves many files.
    #[test]
    fn a_look_finds_what_the_whole_file_gives() {
        let mut looker = Looker::new();
        let mut seen = 0;
        for dir in ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"] {
            let Ok(entries) = std::fs::read_dir(dir) else { continue };
            for entry in entries.flatten().take(400) {
                let path = entry.path();
                let Ok(file) = std::fs::File::open(&path) else { continue };
                let Ok(meta) = file.metadata() else { continue };
                if !meta.is_file() || meta.len() > 32 << 20 || !path.to_string_lossy().contains(".so") {
                    continue;
                }
                let whole = std::fs::read(&path).unwrap();
                let Ok(elf) = elf_headers::headers(&whole, true) else { continue };
                let looked = looker.look(&file, meta.len(), true).map(<[u8]>::to_vec);
                let Some(looked) = looked else { continue };
                let lelf = elf_headers::headers(&looked, true).unwrap();
                assert_eq!(lelf.program_headers, elf.program_headers, "{path:?}");
                for tag in [1, 14, 15, 29] {
                    assert_eq!(
                        elf_headers::dynamic_strings(&looked, &lelf, tag),
                        elf_headers::dynamic_strings(&whole, &elf, tag),
                        "{path:?} tag {tag}"
                    );
                }
                let names = |bytes: &[u8], elf: &goblin::elf::Elf| {
                    let v = std::cell::RefCell::new(Vec::new());
                    elf_headers::any_symbol(bytes, elf, SHT_DYNSYM, |s| {
                        v.borrow_mut().push((s.name.to_vec(), s.value, s.shndx));
                        false
                    });
                    v.into_inner()
                };
                assert_eq!(names(&looked, &lelf), names(&whole, &elf), "{path:?}");
                seen += 1;
            }
        }
        assert!(seen > 10, "only {seen} libraries looked at");
        // Not an ELF file.
        let me = std::fs::File::open("/etc/hostname").or_else(|_| std::fs::File::open("/etc/passwd")).unwrap();
        let len = me.metadata().unwrap().len();
        assert!(looker.look(&me, len, true).is_none());
    }
}
