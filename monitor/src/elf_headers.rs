//! An ELF file's headers without its symbol and string tables.
//!
//! `goblin`'s `Elf::parse` also reads every symbol and string table, checking that each name is
//! UTF-8 and sorting them: for Node.js's 99 MB executable (185,000 symbols, 13 MB of names)
//! that was ~30 ms of `hrt run`'s start, twice (the program's checks, and the question whether
//! it has an OpenMP runtime). What the monitor needs of most programs is their headers and, at
//! most, whether a symbol of a given name exists; both are read here directly.

use goblin::container::{Container, Ctx, Endian};
use goblin::elf::{program_header, section_header, Elf, ProgramHeader, SectionHeader};

/// The ELF header, the program headers, the section headers (those only when `sections`) and
/// the interpreter (PT_INTERP); no symbols, no string tables, no dynamic section.
pub fn headers(bytes: &[u8], sections: bool) -> goblin::error::Result<Elf<'_>> {
    let header = Elf::parse_header(bytes)?;
    let mut elf = Elf::lazy_parse(header)?;
    let ctx = ctx_of(&elf);
    elf.program_headers = ProgramHeader::parse(bytes, header.e_phoff as usize, header.e_phnum as usize, ctx)?;
    elf.interpreter = elf
        .program_headers
        .iter()
        .find(|p| p.p_type == program_header::PT_INTERP && p.p_filesz != 0)
        .and_then(|p| bytes.get(p.p_offset as usize..(p.p_offset + p.p_filesz - 1) as usize))
        .and_then(|b| std::str::from_utf8(b).ok());
    if sections {
        elf.section_headers = SectionHeader::parse(bytes, header.e_shoff as usize, header.e_shnum as usize, ctx)?;
    }
    Ok(elf)
}

/// The most NUL bytes the string tables of a file `parse_bounded` parses may hold in all:
/// goblin's full parse keeps an entry (24 bytes) for each, and a hostile file whose string
/// table is 64 MB of zeros made it take 1.7 GB of `hrt`'s memory. Node.js's 99 MB executable
/// has ~0.2 M names.
const MAX_STRING_NULS: usize = 4 << 20;

/// `goblin`'s full parse (every symbol and string table) of a program or library the monitor
/// did not make, refused when its string tables hold more than `MAX_STRING_NULS` names, or
/// lie outside the file.
pub fn parse_bounded(bytes: &[u8]) -> goblin::error::Result<Elf<'_>> {
    let elf = headers(bytes, true)?;
    let mut nuls = 0;
    for s in elf.section_headers.iter().filter(|s| s.sh_type == section_header::SHT_STRTAB) {
        let Some(table) = section_bytes(bytes, s) else {
            return Err(goblin::error::Error::Malformed("a string table lies outside the file".into()));
        };
        nuls += table.iter().filter(|&&b| b == 0).count();
        if nuls > MAX_STRING_NULS {
            return Err(goblin::error::Error::Malformed("its string tables are too large to read".into()));
        }
    }
    Elf::parse(bytes)
}

fn ctx_of(elf: &Elf) -> Ctx {
    let container = if elf.is_64 { Container::Big } else { Container::Little };
    let endian = if elf.little_endian { Endian::Little } else { Endian::Big };
    Ctx::new(container, endian)
}

/// Whether a symbol of the static or the dynamic symbol table (ELF64) of the file `bytes`,
/// whose section headers `elf` holds, is named one of `names`.
pub fn has_symbol_named(bytes: &[u8], elf: &Elf, names: &[&str]) -> bool {
    const SYM_SIZE: usize = 24;
    let tables = elf
        .section_headers
        .iter()
        .filter(|s| s.sh_type == section_header::SHT_SYMTAB || s.sh_type == section_header::SHT_DYNSYM);
    for table in tables {
        let Some(syms) = section_bytes(bytes, table) else { continue };
        let Some(strings) = elf.section_headers.get(table.sh_link as usize).and_then(|s| section_bytes(bytes, s))
        else {
            continue;
        };
        for sym in syms.chunks_exact(SYM_SIZE) {
            let at = u32::from_le_bytes([sym[0], sym[1], sym[2], sym[3]]) as usize;
            // The first byte first: most names differ there, without a call to compare.
            let Some(&first) = strings.get(at) else { continue };
            let named = |n: &&str| {
                let n = n.as_bytes();
                n.first() == Some(&first)
                    && strings.get(at..at + n.len() + 1).is_some_and(|s| s[..n.len()] == *n && s[n.len()] == 0)
            };
            if names.iter().any(named) {
                return true;
            }
        }
    }
    false
}

/// One symbol of a table, as `any_symbol` shows it: its name's bytes, value and section index.
pub struct SymbolView<'a> {
    pub name: &'a [u8],
    pub value: u64,
    pub shndx: u16,
}

/// Whether the file has a table of `kind` (`SHT_SYMTAB` or `SHT_DYNSYM`, ELF64) with at least
/// one entry, and whether `pred` holds for one of its symbols (`None`: no such table).
pub fn any_symbol(bytes: &[u8], elf: &Elf, kind: u32, pred: impl Fn(&SymbolView) -> bool) -> Option<bool> {
    const SYM_SIZE: usize = 24;
    let mut found_table = false;
    for table in elf.section_headers.iter().filter(|s| s.sh_type == kind) {
        let Some(syms) = section_bytes(bytes, table) else { continue };
        let Some(strings) = elf.section_headers.get(table.sh_link as usize).and_then(|s| section_bytes(bytes, s))
        else {
            continue;
        };
        found_table |= syms.len() >= SYM_SIZE;
        for sym in syms.chunks_exact(SYM_SIZE) {
            let at = u32::from_le_bytes([sym[0], sym[1], sym[2], sym[3]]) as usize;
            let shndx = u16::from_le_bytes([sym[6], sym[7]]);
            let value = u64::from_le_bytes(sym[8..16].try_into().unwrap_or_default());
            let Some(rest) = strings.get(at..) else { continue };
            let name = &rest[..rest.iter().position(|&b| b == 0).unwrap_or(rest.len())];
            if pred(&SymbolView { name, value, shndx }) {
                return Some(true);
            }
        }
    }
    found_table.then_some(false)
}

/// The libraries the file names in its dynamic section (DT_NEEDED), found through its program
/// headers (PT_DYNAMIC, DT_STRTAB), as the dynamic loader finds them.
pub fn needed_libraries<'a>(bytes: &'a [u8], elf: &Elf) -> Vec<&'a str> {
    dynamic_strings(bytes, elf, DT_NEEDED)
}

/// The dynamic section's DT_NEEDED tag.
pub const DT_NEEDED: u64 = 1;
/// Its DT_RPATH and DT_RUNPATH tags (colon-separated directory lists).
pub const DT_RPATH: u64 = 15;
pub const DT_RUNPATH: u64 = 29;

/// The strings of the dynamic section's entries tagged `tag` (DT_NEEDED, DT_RPATH, ...), in
/// order, found through the program headers (PT_DYNAMIC, DT_STRTAB) as the dynamic loader
/// finds them.
pub fn dynamic_strings<'a>(bytes: &'a [u8], elf: &Elf, tag: u64) -> Vec<&'a str> {
    const DT_NULL: u64 = 0;
    const DT_STRTAB: u64 = 5;
    let Some(dynamic) = elf.program_headers.iter().find(|p| p.p_type == program_header::PT_DYNAMIC) else {
        return Vec::new();
    };
    let Some(entries) = bytes.get(dynamic.p_offset as usize..(dynamic.p_offset + dynamic.p_filesz) as usize) else {
        return Vec::new();
    };
    let words = |e: &[u8]| {
        (
            u64::from_le_bytes(e[..8].try_into().unwrap_or_default()),
            u64::from_le_bytes(e[8..16].try_into().unwrap_or_default()),
        )
    };
    let entries: Vec<(u64, u64)> = entries.chunks_exact(16).map(words).take_while(|&(t, _)| t != DT_NULL).collect();
    let Some(strtab) = entries.iter().find(|e| e.0 == DT_STRTAB).and_then(|&(_, addr)| file_offset(elf, addr)) else {
        return Vec::new();
    };
    entries
        .iter()
        .filter(|e| e.0 == tag)
        .filter_map(|&(_, at)| {
            let name = bytes.get(strtab.checked_add(at)? as usize..)?;
            std::str::from_utf8(&name[..name.iter().position(|&b| b == 0)?]).ok()
        })
        .collect()
}

/// The file offset of the virtual address `addr`, through the PT_LOAD segment holding it.
fn file_offset(elf: &Elf, addr: u64) -> Option<u64> {
    let p = elf
        .program_headers
        .iter()
        .find(|p| p.p_type == program_header::PT_LOAD && addr >= p.p_vaddr && addr - p.p_vaddr < p.p_filesz)?;
    Some(p.p_offset + (addr - p.p_vaddr))
}

fn section_bytes<'a>(bytes: &'a [u8], s: &SectionHeader) -> Option<&'a [u8]> {
    if s.sh_type == section_header::SHT_NOBITS {
        return None;
    }
    bytes.get(s.sh_offset as usize..s.sh_offset.checked_add(s.sh_size)? as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A string table of millions of names (a hostile file's zeros) is refused before the full
    /// parse, which keeps an entry per name; the file as built parses.
    #[test]
    fn a_string_table_of_millions_of_names_is_refused() {
        let mut bytes = std::fs::read("/proc/self/exe").unwrap();
        assert!(parse_bounded(&bytes).is_ok());
        let elf = headers(&bytes, true).unwrap();
        let (shoff, index) = (
            elf.header.e_shoff as usize,
            elf.section_headers.iter().position(|s| s.sh_type == section_header::SHT_STRTAB).unwrap(),
        );
        let zeros = bytes.len() as u64;
        bytes.resize(bytes.len() + (MAX_STRING_NULS + 4096), 0);
        let at = shoff + index * 64;
        bytes[at + 24..at + 32].copy_from_slice(&zeros.to_le_bytes());
        bytes[at + 32..at + 40].copy_from_slice(&((MAX_STRING_NULS + 4096) as u64).to_le_bytes());
        assert!(parse_bounded(&bytes).is_err());
    }

    /// What the full parse finds, found here: headers, interpreter, libraries, symbol names.
    #[test]
    fn finds_what_the_full_parse_does() {
        for path in ["/proc/self/exe", "/bin/sh", "/usr/bin/env"] {
            let bytes = std::fs::read(path).unwrap();
            let full = Elf::parse(&bytes).unwrap();
            let quick = headers(&bytes, true).unwrap();
            assert_eq!(quick.header, full.header, "{path}");
            assert_eq!(quick.program_headers, full.program_headers, "{path}");
            assert_eq!(quick.section_headers, full.section_headers, "{path}");
            assert_eq!(quick.interpreter, full.interpreter, "{path}");
            assert_eq!(needed_libraries(&bytes, &quick), full.libraries, "{path}");
            // Names that are there (a static and a dynamic symbol, when the file has them)
            // and one that is not; a name that is only the start of a symbol's is not it.
            let sym = full.syms.iter().filter_map(|s| full.strtab.get_at(s.st_name)).find(|n| n.len() > 3);
            let dynsym = full.dynsyms.iter().filter_map(|s| full.dynstrtab.get_at(s.st_name)).find(|n| n.len() > 3);
            for name in sym.into_iter().chain(dynsym) {
                assert!(has_symbol_named(&bytes, &quick, &["no_such_symbol_here", name]), "{path}: {name}");
                assert!(
                    !has_symbol_named(&bytes, &quick, &[&name[..name.len() - 1]]) || {
                        let short = &name[..name.len() - 1];
                        full.syms.iter().any(|s| full.strtab.get_at(s.st_name) == Some(short))
                            || full.dynsyms.iter().any(|s| full.dynstrtab.get_at(s.st_name) == Some(short))
                    }
                );
            }
            assert!(!has_symbol_named(&bytes, &quick, &["no_such_symbol_here"]), "{path}");
        }
    }
}
