//! Where a static program's own libgomp decides how long a waiting thread spins, for
//! `hrt run --cpus N` with more vCPUs than host CPUs (see the kernel's `linux::spin_throttle`).
//!
//! libgomp spins `gomp_spin_count_var` rounds (300,000 by default) before it sleeps, or
//! `gomp_throttled_spin_count_var` (100) while its threads outnumber the CPUs it found at
//! start (`gomp_available_cpus`). Every inlined copy of that test (`do_spin` in its
//! config/linux/wait.h) compiles to the same three instructions, which this finds by their bytes:
//! `mov gomp_managed_threads(%rip), %reg; cmp %reg, gomp_available_cpus(%rip); jb throttled`.
//! In a static program both RIP-relative operands must resolve to the two variables the symbol
//! table names, so nothing else matches. A shared libgomp.so names neither (they are hidden, and
//! only `.dynsym` is kept): there every copy of the shape must name the same two variables in
//! its writable segment (`plan_library`), or none is used. A stripped static program has no
//! symbol table at all: then there are no sites, and libgomp keeps its full spin.

use goblin::elf::{program_header::PT_INTERP, program_header::PT_LOAD, sym};
use hrt_abi::overrides::{self as abi, Entry};

/// The spin sites and the `gomp_available_cpus` entry of the static program `bytes`, or why
/// there are none.
pub fn plan(bytes: &[u8]) -> Result<Vec<Entry>, &'static str> {
    let elf = crate::elf_headers::parse_bounded(bytes).map_err(|_| "not an ELF file, or one too large to read")?;
    if elf.program_headers.iter().any(|p| p.p_type == PT_INTERP) {
        return Err("the program is dynamically linked (its libgomp.so has no symbol table)");
    }
    let object = |name: &str| {
        elf.syms
            .iter()
            .find(|s| s.st_type() == sym::STT_OBJECT && s.st_size == 8 && elf.strtab.get_at(s.st_name) == Some(name))
            .map(|s| s.st_value)
    };
    let (Some(managed), Some(available)) = (object("gomp_managed_threads"), object("gomp_available_cpus")) else {
        return Err("no libgomp variables in the symbol table (stripped, or no libgomp)");
    };
    let mut entries = Vec::new();
    for p in elf.program_headers.iter().filter(|p| p.p_type == PT_LOAD && p.is_executable()) {
        let Some(code) = bytes.get(p.p_offset as usize..(p.p_offset + p.p_filesz) as usize) else { continue };
        for at in find(code, p.p_vaddr, managed, available) {
            let jcc = if code[at + 14] == 0x72 { 2 } else { 6 };
            let addr = p.p_vaddr + at as u64 + 7;
            entries.push(Entry { addr, size: 7 + jcc, index: 0, kind: abi::KIND_SPIN_SITE, group: abi::OMP_GROUP });
        }
    }
    if entries.is_empty() {
        return Err("no spin test found in the program's libgomp");
    }
    entries.push(Entry { addr: available, size: 8, index: 0, kind: abi::KIND_SPIN_CPUS, group: abi::OMP_GROUP });
    Ok(entries)
}

/// The spin sites and the `gomp_available_cpus` entry of the shared library `bytes`
/// (libgomp.so), as file offsets (the kernel adds where the text segment was mapped), or why
/// there are none. Without names, the shape decides: every `mov X(%rip), %reg; cmp %reg,
/// Y(%rip); jb` in the library must name the same X and Y, both 8-byte variables in its
/// writable segment.
pub fn plan_library(bytes: &[u8]) -> Result<Vec<Entry>, &'static str> {
    let elf = crate::elf_headers::parse_bounded(bytes).map_err(|_| "not an ELF file, or one too large to read")?;
    let mut texts = elf.program_headers.iter().filter(|p| p.p_type == PT_LOAD && p.is_executable());
    let (Some(text), None) = (texts.next(), texts.next()) else {
        return Err("not one executable segment");
    };
    let code = bytes.get(text.p_offset as usize..(text.p_offset + text.p_filesz) as usize).ok_or("a truncated file")?;
    let found = tests(code, text.p_vaddr);
    let Some(&(_, managed, available)) = found.first() else {
        return Err("no spin test found in the shared libgomp");
    };
    if found.iter().any(|&(_, m, a)| (m, a) != (managed, available)) {
        return Err("its spin-test shapes name different variables");
    }
    let writable = |v: u64| {
        elf.program_headers.iter().any(|p| {
            p.p_type == PT_LOAD
                && p.is_write()
                && !p.is_executable()
                && v >= p.p_vaddr
                && v + 8 <= p.p_vaddr + p.p_memsz
        })
    };
    if managed == available || !writable(managed) || !writable(available) {
        return Err("its spin test does not compare two variables");
    }
    // File offset of a link address, counted from the text segment (ld.so keeps the layout).
    let offset = |v: u64| v.wrapping_sub(text.p_vaddr).wrapping_add(text.p_offset);
    let mut entries: Vec<Entry> = found
        .iter()
        .map(|&(at, _, _)| {
            let jcc = if code[at + 14] == 0x72 { 2 } else { 6 };
            Entry {
                addr: offset(text.p_vaddr + at as u64 + 7),
                size: 7 + jcc,
                index: 0,
                kind: abi::KIND_SPIN_SITE,
                group: abi::OMP_GROUP,
            }
        })
        .collect();
    entries.push(Entry {
        addr: offset(available),
        size: 8,
        index: 0,
        kind: abi::KIND_SPIN_CPUS,
        group: abi::OMP_GROUP,
    });
    Ok(entries)
}

/// Offsets in `code` (loaded at `vaddr`) of `mov managed(%rip), %reg; cmp %reg,
/// available(%rip); jb`, with REX.W and the same register in both.
fn find(code: &[u8], vaddr: u64, managed: u64, available: u64) -> Vec<usize> {
    tests(code, vaddr).into_iter().filter(|&(_, m, a)| m == managed && a == available).map(|(at, _, _)| at).collect()
}

/// Every `mov X(%rip), %reg; cmp %reg, Y(%rip); jb` in `code` (loaded at `vaddr`), with REX.W
/// and the same register in both: (offset, X, Y).
fn tests(code: &[u8], vaddr: u64) -> Vec<(usize, u64, u64)> {
    let target = |at: usize| {
        let disp = i32::from_le_bytes(code[at + 3..at + 7].try_into().unwrap());
        (vaddr + at as u64 + 7).wrapping_add(disp as i64 as u64)
    };
    let rip_relative = |modrm: u8| modrm & 0xc7 == 0x05;
    (0..code.len().saturating_sub(20))
        .filter(|&at| {
            let (rex, modrm) = (code[at], code[at + 2]);
            (rex == 0x48 || rex == 0x4c)
                && code[at + 1] == 0x8b
                && rip_relative(modrm)
                && code[at + 7] == rex
                && code[at + 8] == 0x39
                && code[at + 9] == modrm
                && (code[at + 14] == 0x72 || code[at + 14..at + 16] == [0x0f, 0x82])
        })
        .map(|at| (at, target(at), target(at + 7)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{find, plan_library};

    /// The host's libgomp.so (Debian's keeps only `.dynsym`): its spin tests are found by shape.
    #[test]
    fn finds_the_spin_tests_of_the_shared_libgomp() {
        let Ok(out) = std::process::Command::new("gcc").arg("-print-file-name=libgomp.so.1").output() else {
            eprintln!("no gcc: skipped");
            return;
        };
        let Ok(bytes) = std::fs::read(String::from_utf8_lossy(&out.stdout).trim()) else {
            eprintln!("no host libgomp.so.1: skipped");
            return;
        };
        let entries = plan_library(&bytes).expect("no spin tests in the host's libgomp.so.1");
        let sites = entries.iter().filter(|e| e.kind == hrt_abi::overrides::KIND_SPIN_SITE).count();
        assert!(sites >= 2, "{sites} spin test(s)");
        assert_eq!(entries.last().map(|e| e.kind), Some(hrt_abi::overrides::KIND_SPIN_CPUS));
    }

    /// gcc 12's libgomp (gomp_barrier_wait_end in a static program): the three instructions
    /// at 0x40f207, with the two variables at 0x4e1250 and 0x4e1258.
    #[test]
    fn finds_the_spin_test_and_nothing_near_it() {
        let mut code = vec![0x90; 8];
        code.extend_from_slice(&[0x48, 0x8b, 0x05, 0x42, 0x20, 0x0d, 0x00]); // mov managed, %rax
        code.extend_from_slice(&[0x48, 0x39, 0x05, 0x43, 0x20, 0x0d, 0x00]); // cmp %rax, available
        code.extend_from_slice(&[0x72, 0x69]); // jb
        code.extend_from_slice(&[0x90; 16]);
        let vaddr = 0x40f207 - 8;
        assert_eq!(find(&code, vaddr, 0x4e1250, 0x4e1258), vec![8]);
        // Other variables, or the operands the other way round: no site.
        assert!(find(&code, vaddr, 0x4e1258, 0x4e1250).is_empty());
        assert!(find(&code, vaddr + 1, 0x4e1250, 0x4e1258).is_empty());
        let mut other_register = code.clone();
        other_register[8 + 9] = 0x15; // cmp %rdx, available
        assert!(find(&other_register, vaddr, 0x4e1250, 0x4e1258).is_empty());
    }
}
