//! Function overrides at load time (`--omp`): decides whether a group of the program's
//! library functions can be replaced by the kernel's implementation, and lists the entries
//! the kernel patches (see `hrt_abi::overrides`). All or nothing per group: if the program is
//! stripped or uses a function of the library the kernel does not provide, the group is not
//! applied and the reason says which symbol decided. A dynamically linked program's library is
//! overridden when ld.so maps it (`library`).

pub mod choice;
mod closure;
mod library;
pub mod parallel;
mod references;
pub mod spin_sites;
mod symbols;
pub mod yielding_runtime;

pub use library::LibraryPlans;

use hrt_abi::overrides::{self as abi, Entry, Group};

/// `--omp`: which OpenMP runtime the program runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OmpChoice {
    /// The kernel's own runtime where the override applies, else the program's libgomp
    Auto,
    /// The kernel's own runtime; refuse to run when it cannot replace the program's libgomp
    Kernel,
    /// The program's own libgomp, on the kernel's Linux system calls
    Libgomp,
}

/// What the monitor answers for each file a dynamically linked program maps executable
/// (`nr::FILE_OVERRIDES`), chosen before the program starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LibraryUse {
    /// The shared libgomp's functions jump to the kernel's runtime; `required` (`--omp
    /// kernel`): the program stops when they cannot.
    Override { required: bool },
    /// The program keeps its shared libgomp on more vCPUs than host CPUs: its spin tests
    /// count the host's CPUs (`spin_sites::plan_library`).
    SpinTests,
}

/// The outcome for one group.
#[derive(Debug)]
pub enum Decision {
    /// Patch these entries.
    Apply(Vec<Entry>),
    /// A dynamically linked program: override the shared library when it is mapped.
    Library,
    /// Not applied, and why (one line, for `-v` or the `--omp kernel` error).
    Skip(String),
}

/// How far `plan_omp` looks for a libgomp that a dynamically linked program does not load
/// itself but one of its libraries does (ImageMagick's libMagickCore under `convert`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The program's own `DT_NEEDED` entries only.
    Program,
    /// Also the libraries it loads at start (`--omp auto`): one that loads libgomp puts the
    /// program on the kernel's runtime as its own libgomp would.
    StartLibraries,
    /// Also libraries it may open later (`--omp kernel`): every dynamic program then asks for
    /// each file it maps, so that a libgomp `dlopen` brings (numpy's OpenBLAS) is overridden.
    Everything,
}

/// Decides the OpenMP group for the program file `bytes`; `at`: where the file is and the
/// program's `LD_LIBRARY_PATH`, for a dynamic program whose libraries must be checked too
/// (`library::plan_dynamic`). `reach`: how far a dynamic program that does not load libgomp
/// itself is looked at.
pub fn plan_omp(bytes: &[u8], at: Option<(&std::path::Path, Option<&str>)>, reach: Reach) -> Decision {
    let dynamic = || {
        crate::elf_headers::headers(bytes, false)
            .is_ok_and(|e| e.program_headers.iter().any(|p| p.p_type == goblin::elf::program_header::PT_INTERP))
    };
    if reach == Reach::Everything && at.is_some() && dynamic() {
        return library::plan_dynamic(bytes, abi::OMP_GROUP, at, reach);
    }
    if let Some(d) = plain_program(bytes, abi::OMP_GROUP) {
        // A dynamic program without libgomp of its own: its start-up libraries may load one.
        // Their headers and dynamic sections only (~2-6 ms for `convert`'s ~60); the full
        // decision, which parses the program whole, only where one of them is libgomp.
        if let (Reach::StartLibraries, Some((path, ld_library_path))) = (reach, at) {
            let soname = abi::GROUPS[abi::OMP_GROUP as usize].soname;
            if dynamic() && closure::loads(bytes, path, ld_library_path, soname) {
                return library::plan_dynamic(bytes, abi::OMP_GROUP, at, reach);
            }
        }
        return d;
    }
    if dynamic() {
        return library::plan_dynamic(bytes, abi::OMP_GROUP, at, Reach::Program);
    }
    plan(bytes, abi::OMP_GROUP)
}

/// The decision for a program that has nothing of group `group`'s library, found from its
/// headers and a walk over one symbol table: a static program with a symbol table but none of
/// the library's internal functions, a dynamic one that neither loads the library nor imports
/// one of its entry points. `plan` and `library::plan_dynamic` decide the same for it
/// (`Apply` with nothing to patch), but their full parse of the file (`goblin`'s, every
/// symbol and string table) cost every `hrt run` of such a program ~0.3 ms (a small static
/// program) to tens of ms (Node.js's 99 MB executable) once `--omp auto` became the default.
/// None where the full decision is needed.
fn plain_program(bytes: &[u8], group: u8) -> Option<Decision> {
    use goblin::elf::section_header::{SHT_DYNSYM, SHT_SYMTAB};
    let g: &Group = &abi::GROUPS[group as usize];
    let elf = crate::elf_headers::headers(bytes, true).ok()?;
    let dynamic = elf.program_headers.iter().any(|p| p.p_type == goblin::elf::program_header::PT_INTERP);
    let has_any = |prefixes: &[&str], name: &[u8]| prefixes.iter().any(|p| name.starts_with(p.as_bytes()));
    let uses_library = if dynamic {
        crate::elf_headers::needed_libraries(bytes, &elf).contains(&g.soname)
            || crate::elf_headers::any_symbol(bytes, &elf, SHT_DYNSYM, |s| {
                s.shndx == 0 && has_any(g.entry_prefixes, s.name)
            })
            .unwrap_or(false)
    } else {
        // No symbol table (stripped): `plan` says why it cannot decide.
        crate::elf_headers::any_symbol(bytes, &elf, SHT_SYMTAB, |s| {
            s.value != 0 && has_any(g.internal_prefixes, s.name)
        })?
    };
    (!uses_library).then(|| Decision::Apply(Vec::new()))
}

/// Decides group `group` for the program file `bytes`.
pub fn plan(bytes: &[u8], group: u8) -> Decision {
    let g: &Group = &abi::GROUPS[group as usize];
    let table = match symbols::Table::read(bytes, g) {
        Ok(t) => t,
        Err(why) => return Decision::Skip(why),
    };
    if !table.library_linked {
        // No libgomp: functions named `omp_*` are the program's own (serial stand-ins), and it
        // runs as it is (until 2026-12-03 they were redirected to the kernel's runtime, which
        // answered for a team the program never makes).
        return Decision::Apply(Vec::new());
    }
    // A program built with -fopenmp that calls none of the runtime's functions (it only tests
    // `_OPENMP`, say) runs as it is: there is nothing to redirect, and nothing it could miss.
    let mut entries = Vec::new();
    let mut patched = std::collections::HashSet::new();
    for (i, name) in g.overrides.iter().enumerate() {
        let Some(f) = table.function(name) else { continue };
        if f.size < abi::PATCH_LEN as u64 {
            return Decision::Skip(format!("{name} is too small ({} bytes) to redirect", f.size));
        }
        // Aliases share an address: one jump serves them all.
        if patched.insert(f.addr) {
            entries.push(Entry { addr: f.addr, size: f.size as u32, index: i as u16, kind: abi::KIND_OVERRIDE, group });
        }
    }
    // The imports serve the functions that make teams; a static program without them (one that
    // only reads `omp_get_wtime`, say) links no `pthread_create` either, and needs none.
    let makes_teams =
        g.overrides.iter().filter(|n| n.starts_with(g.team_maker_prefix)).any(|n| table.function(n).is_some());
    for (i, name) in g.imports.iter().enumerate() {
        let found = if i < g.required_imports { table.function(name) } else { table.global_or_only_local(name) };
        let Some(f) = found else {
            if !makes_teams || i >= g.required_imports {
                continue;
            }
            return Decision::Skip(format!("the program has no {name}, which the kernel's runtime needs"));
        };
        entries.push(Entry { addr: f.addr, size: f.size as u32, index: i as u16, kind: abi::KIND_IMPORT, group });
    }
    let overridden: std::collections::HashSet<u64> = patched;
    if let Some(name) = references::first_unprovided_use(&table, g, &overridden) {
        return Decision::Skip(format!("the program uses {name}, which the kernel's runtime does not provide"));
    }
    Decision::Apply(entries)
}

/// The override entries as the kernel reads them (`BootInfo::overrides`).
pub fn encode(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(std::mem::size_of_val(entries));
    for e in entries {
        out.extend_from_slice(&e.addr.to_le_bytes());
        out.extend_from_slice(&e.size.to_le_bytes());
        out.extend_from_slice(&e.index.to_le_bytes());
        out.push(e.kind);
        out.push(e.group);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Programs without libgomp are decided from their headers, as the full parse decides them;
    /// others (and files the quick look cannot read) go on to the full decision.
    #[test]
    fn plain_programs_are_decided_as_the_full_parse_decides() {
        let is_plain = |d: &Option<Decision>| matches!(d, Some(Decision::Apply(e)) if e.is_empty());
        for path in ["/proc/self/exe", "/bin/sh", "/usr/bin/env"] {
            let bytes = std::fs::read(path).unwrap();
            let quick = plain_program(&bytes, abi::OMP_GROUP);
            assert!(is_plain(&quick), "{path}: {quick:?}");
            let elf = goblin::elf::Elf::parse(&bytes).unwrap();
            let full = if elf.interpreter.is_some() {
                library::plan_dynamic(&bytes, abi::OMP_GROUP, None, Reach::Program)
            } else {
                plan(&bytes, abi::OMP_GROUP)
            };
            assert!(matches!(full, Decision::Apply(ref e) if e.is_empty()), "{path}: {full:?}");
        }
        assert!(plain_program(b"not an ELF file", abi::OMP_GROUP).is_none());
        // gcc's shared libgomp, which a dynamic OpenMP program loads: not plain.
        if let Ok(lib) = std::fs::read("/usr/lib/x86_64-linux-gnu/libgomp.so.1") {
            // A library, not a program: it defines the entry points rather than importing them,
            // and its static table is stripped; the quick look must not call it plain.
            assert!(!is_plain(&plain_program(&lib, abi::OMP_GROUP)));
        }
    }
}
