//! Overrides for a dynamically linked program, whose libgomp is a shared library: the program's
//! own imports decide beforehand (it must not use a libgomp function the kernel lacks), and the
//! entries are worked out per file when ld.so maps it (`nr::FILE_OVERRIDES`): the group's
//! library (by `DT_SONAME`) gets its exported functions overridden, and whichever library
//! exports the group's imports (libc's `pthread_create`, ...) gives their addresses.
//! Entries name file offsets, since only the mapping tells where the file lies in memory.

use std::collections::HashMap;
use std::sync::Mutex;

use goblin::elf::{program_header::PT_LOAD, sym, Elf};
use hrt_abi::overrides::{self as abi, Entry, Group};

use super::{Decision, LibraryUse, Reach};
use crate::elf_look::Looker;
use crate::file_bytes::FileBytes;

/// Decides group `group` for a dynamically linked program: it must load the group's library,
/// and none of its undefined symbols may be an entry point the kernel does not provide; nor
/// may those of the libraries it loads at start (`closure`), where `at` (the program's host
/// path and `LD_LIBRARY_PATH`) is given: a library's call of a function the kernel lacks would
/// reach the program's own libgomp, whose state the kernel's runtime never sets up (OpenACC's
/// `GOACC_parallel_keyed`, say). Where the group's library is found, only names it exports
/// count: a program importing its own `acc_sum` from a library of its own uses no OpenACC.
/// `reach` beyond `Program`: the closure is read also when the program does not load the
/// group's library itself; where one of its libraries loads it (ImageMagick's libMagickCore
/// loads libgomp, `convert` does not), the library is overridden as the program's own would
/// be; with `Everything`, also where none does (one may be opened later).
pub fn plan_dynamic(bytes: &[u8], group: u8, at: Option<(&std::path::Path, Option<&str>)>, reach: Reach) -> Decision {
    let g: &Group = &abi::GROUPS[group as usize];
    let elf = match crate::elf_headers::parse_bounded(bytes) {
        Ok(e) => e,
        Err(e) => return Decision::Skip(format!("cannot read the program's ELF: {e}")),
    };
    let loads_itself = elf.libraries.contains(&g.soname);
    // Each library's imports that may be the group's (by prefix), and the group library's
    // exports, gathered in one walk: a library's bytes last only while the walk shows it.
    let mut closure: Vec<(String, std::path::PathBuf, Vec<String>)> = Vec::new();
    let mut exports = None;
    let mut complete = Ok(());
    let mut impostor = None;
    if let Some((path, ld_library_path)) = at.filter(|_| loads_itself || reach != Reach::Program) {
        complete = super::closure::walk(bytes, path, ld_library_path, true, |lib| {
            if lib.name == g.soname {
                // The file ld.so finds by that name may be another runtime's (LLVM's libomp
                // linked as libgomp.so.1): its own name says.
                if !is_named(lib.bytes, g.soname) {
                    impostor = Some(lib.path.clone());
                }
                exports = Some(exported_names(lib.bytes));
            } else {
                let imports = imports_named(lib.bytes, g.entry_prefixes);
                closure.push((lib.name.clone(), lib.path.clone(), imports));
            }
            false
        });
    }
    let loads_library = loads_itself || exports.is_some();
    if let Some(path) = impostor {
        return Decision::Skip(format!(
            "the {} it loads ({}) is another OpenMP runtime, not GNU's libgomp",
            g.soname,
            path.display()
        ));
    }
    if let (true, Err(why)) = (loads_library, &complete) {
        // A library ld.so may load but the walk could not read could use a libgomp function
        // the kernel lacks (a hostile one could hide its OpenACC imports so).
        return Decision::Skip(format!("not every library it loads could be checked: {why}"));
    }
    let of_library = |name: &str| {
        g.entry_prefixes.iter().any(|p| name.starts_with(p)) && exports.as_ref().is_none_or(|e| e.contains(name))
    };
    // Undefined symbols (section index SHN_UNDEF, 0) are what the program imports.
    for s in elf.dynsyms.iter().filter(|s| s.st_shndx == 0) {
        let name = elf.dynstrtab.get_at(s.st_name).unwrap_or("");
        if !of_library(name) {
            continue;
        }
        if !loads_library {
            // From another library (LLVM's libomp, say): nothing the kernel could redirect.
            let other = elf.libraries.iter().find(|l| l.starts_with("libomp") || l.starts_with("libiomp"));
            return Decision::Skip(match other {
                Some(lib) => {
                    format!("the program uses {name} from {lib} (LLVM's or Intel's OpenMP runtime), not {}", g.soname)
                }
                None => format!("the program uses {name} but does not load {}", g.soname),
            });
        }
        if !g.overrides.contains(&name) {
            return Decision::Skip(format!("the program uses {name}, which the kernel's runtime does not provide"));
        }
    }
    if !loads_library && reach != Reach::Everything {
        // Built with -fopenmp but calling no runtime function (gcc then links no libgomp): as
        // for such a static program, there is nothing to redirect and it runs as it is.
        return Decision::Apply(Vec::new());
    }
    // `Everything` and no libgomp at start: one may come with a library the program opens later
    // (Python's numpy loads OpenBLAS's OpenMP build with dlopen), and is overridden when it
    // is mapped, as at start. Such a library's own imports are not checked beforehand (nor
    // are those of a library a program that loads libgomp at start opens later).
    for (name, path, imports) in &closure {
        if let Some(function) = imports.iter().find(|n| of_library(n) && !g.overrides.contains(&n.as_str())) {
            return Decision::Skip(format!(
                "the program loads {name} ({}), which uses {function}, a function the kernel's runtime does not provide",
                path.display()
            ));
        }
    }
    Decision::Library
}

/// The symbols the library `bytes` imports whose names start with one of `prefixes`.
fn imports_named(bytes: &[u8], prefixes: &[&str]) -> Vec<String> {
    let Ok(elf) = crate::elf_headers::headers(bytes, true) else { return Vec::new() };
    let found = std::cell::RefCell::new(Vec::new());
    crate::elf_headers::any_symbol(bytes, &elf, goblin::elf::section_header::SHT_DYNSYM, |s| {
        if s.shndx == 0 && prefixes.iter().any(|p| s.name.starts_with(p.as_bytes())) {
            if let Ok(name) = std::str::from_utf8(s.name) {
                found.borrow_mut().push(name.to_string());
            }
        }
        false
    });
    found.into_inner()
}

/// The names the library `bytes` defines in its dynamic symbol table.
fn exported_names(bytes: &[u8]) -> std::collections::HashSet<String> {
    let names = std::cell::RefCell::new(std::collections::HashSet::new());
    if let Ok(elf) = crate::elf_headers::headers(bytes, true) {
        crate::elf_headers::any_symbol(bytes, &elf, goblin::elf::section_header::SHT_DYNSYM, |s| {
            if s.shndx != 0 {
                if let Ok(n) = std::str::from_utf8(s.name) {
                    names.borrow_mut().insert(n.to_string());
                }
            }
            false
        });
    }
    names.into_inner()
}

/// A file's entries, or why its library cannot be overridden.
type FilePlan = Result<Vec<Entry>, String>;

/// The entries of each file the program maps, worked out once per file.
pub struct LibraryPlans {
    group: u8,
    purpose: LibraryUse,
    /// `-v` or `--omp kernel`: say why a library cannot be overridden.
    report: bool,
    by_file: Mutex<HashMap<(u64, u64), FilePlan>>,
    /// Reads the tables `has_no_entries` looks at (only under `by_file`'s lock).
    looker: Mutex<Looker>,
}

/// The largest library read to find its symbols.
const MAX_LIBRARY: u64 = 256 << 20;

impl LibraryPlans {
    pub fn new(group: u8, purpose: LibraryUse, report: bool) -> LibraryPlans {
        LibraryPlans { group, purpose, report, by_file: Mutex::new(HashMap::new()), looker: Mutex::new(Looker::new()) }
    }

    /// Plans for the same group and purpose, none made yet (a forked child's).
    pub fn same_purpose(&self) -> LibraryPlans {
        LibraryPlans::new(self.group, self.purpose, self.report)
    }

    /// What the plans are for.
    pub fn purpose(&self) -> LibraryUse {
        self.purpose
    }

    /// The entries for host file `fd` (borrowed) whose file offsets lie in `[off, off + len)`;
    /// Err when the file is the group's library but cannot be overridden.
    pub fn entries(&self, fd: i32, off: u64, len: u64) -> Result<Vec<Entry>, ()> {
        // SAFETY: fstat writes only the struct it is given.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd, &mut st) } != 0 || st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Ok(Vec::new());
        }
        let key = (st.st_dev, st.st_ino);
        let mut cache = self.by_file.lock().unwrap_or_else(|e| e.into_inner());
        let plan = cache.entry(key).or_insert_with(|| {
            let soname = abi::GROUPS[self.group as usize].soname;
            // A quick look first: most files a program maps have nothing for either purpose.
            let nothing = |b: &[u8]| match self.purpose {
                LibraryUse::SpinTests => !is_named(b, soname),
                LibraryUse::Override { .. } => has_no_entries(b, self.group),
            };
            match self.looks_like(fd, st.st_size as u64, true, nothing) {
                Some(true) => return Ok(Vec::new()),
                Some(false) => {}
                None => {
                    // Tables the look cannot read (out of the file, too large) are not parsed
                    // further (a hostile library's made the full parse take gigabytes). The
                    // group's library, by its name, then cannot be overridden; any other file
                    // has nothing to give.
                    let named = self.looks_like(fd, st.st_size as u64, false, |b| is_named(b, soname));
                    let plan = match (named, self.purpose) {
                        (Some(true), LibraryUse::Override { .. }) => Err("its tables cannot be read".to_string()),
                        _ => Ok(Vec::new()),
                    };
                    if let (Err(why), true) = (&plan, self.report) {
                        eprintln!("hrt: --omp: {soname}: {why}");
                    }
                    return plan;
                }
            }
            let bytes = read_file(fd, st.st_size as u64);
            if self.purpose == LibraryUse::SpinTests {
                return bytes.map(|b| spin_entries(&b, soname, self.report));
            }
            let plan = bytes.and_then(|b| file_entries(&b, self.group));
            if let (Err(why), true) = (&plan, self.report) {
                eprintln!("hrt: --omp: {soname}: {why}");
            }
            plan
        });
        match plan {
            Ok(all) => {
                // The spin tests' variable lies outside the text; it goes with the tests.
                let inside = |e: &&Entry| e.addr >= off && e.addr + e.size as u64 <= off + len;
                let mut chosen: Vec<Entry> = all.iter().filter(inside).copied().collect();
                if chosen.iter().any(|e| e.kind == abi::KIND_SPIN_SITE) {
                    chosen.extend(all.iter().filter(|e| e.kind == abi::KIND_SPIN_CPUS));
                }
                Ok(chosen)
            }
            Err(_) => Err(()),
        }
    }
}

/// The spin tests of the group's library (`spin_sites::plan_library`), none in other files.
fn spin_entries(bytes: &[u8], soname: &str, report: bool) -> Vec<Entry> {
    if crate::elf_headers::parse_bounded(bytes).ok().and_then(|e| e.soname) != Some(soname) {
        return Vec::new();
    }
    match super::spin_sites::plan_library(bytes) {
        Ok(entries) => {
            if report {
                eprintln!("hrt: {soname}: {} spin test(s) will count the host's CPUs", entries.len() - 1);
            }
            entries
        }
        Err(why) => {
            if report {
                eprintln!("hrt: {soname} keeps its spin as it is: {why}");
            }
            Vec::new()
        }
    }
}

impl LibraryPlans {
    /// Whether `pred` holds for host file `fd` (borrowed; `len` bytes) as far as `elf_look`
    /// reads it (headers, dynamic section and symbols): whether a look without the full
    /// parse of `file_entries` (every table of the file, read whole) can tell that it has no
    /// entries. That parse cost ~1 ms a library at each start (ImageMagick's `convert` maps
    /// ~60: 66-72 ms a start became 119-136 under `--omp kernel`, which asks for every mapped
    /// library). None where the look cannot read the file.
    fn looks_like(&self, fd: i32, len: u64, symbols: bool, pred: impl Fn(&[u8]) -> bool) -> Option<bool> {
        use std::os::fd::BorrowedFd;
        // SAFETY: the caller's descriptor stays open for this call; a duplicate is taken at once.
        let own = unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned().ok()?;
        let mut looker = self.looker.lock().unwrap_or_else(|e| e.into_inner());
        looker.look(&std::fs::File::from(own), len, symbols).map(pred)
    }
}

/// Whether the library `bytes` names itself `soname` (DT_SONAME).
fn is_named(bytes: &[u8], soname: &str) -> bool {
    const DT_SONAME: u64 = 14;
    crate::elf_headers::headers(bytes, false)
        .is_ok_and(|elf| crate::elf_headers::dynamic_strings(bytes, &elf, DT_SONAME).first() == Some(&soname))
}

/// Whether the library `bytes` (as far as `elf_look` reads it) is neither the group's library
/// nor one that exports an import of the group.
fn has_no_entries(bytes: &[u8], group: u8) -> bool {
    use goblin::elf::section_header::SHT_DYNSYM;
    let g: &Group = &abi::GROUPS[group as usize];
    let Ok(elf) = crate::elf_headers::headers(bytes, true) else { return false };
    if is_named(bytes, g.soname) {
        return false;
    }
    let exports_an_import =
        |s: &crate::elf_headers::SymbolView| s.shndx != 0 && g.imports.iter().any(|name| name.as_bytes() == s.name);
    crate::elf_headers::any_symbol(bytes, &elf, SHT_DYNSYM, exports_an_import) == Some(false)
}

/// The bytes of host file `fd` (borrowed), mapped where the host lets it (`FileBytes`): the
/// plans look at a few tables of each library the program maps.
fn read_file(fd: i32, size: u64) -> Result<FileBytes, String> {
    use std::os::fd::BorrowedFd;
    if size > MAX_LIBRARY {
        // Neither libgomp nor the C library (a few MiB each): nothing to override or import
        // there. An error would stop a program under `--omp kernel` that maps a large library
        // (PyTorch's libtorch_cpu.so is ~500 MiB), OpenMP or not.
        return Ok(FileBytes::from(Vec::new()));
    }
    // SAFETY: the caller's descriptor stays open for this call; a duplicate is taken at once.
    let own = unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned().map_err(|_| "cannot read the file")?;
    FileBytes::for_a_look(std::fs::File::from(own), size).map_err(|_| "cannot read the file".into())
}

/// The exported functions of a shared library, by name: (file offset, size), default versions
/// only (an old version of a symbol, e.g. `omp_init_lock@OMP_1.0`, keeps the library's code).
fn exports(elf: &Elf) -> HashMap<String, (u64, u64)> {
    let mut out = HashMap::new();
    for (i, s) in elf.dynsyms.iter().enumerate() {
        let is_function = s.st_type() == sym::STT_FUNC || s.st_type() == sym::STT_GNU_IFUNC;
        if !is_function || s.st_shndx == 0 /* SHN_UNDEF */ || s.st_bind() == sym::STB_LOCAL {
            continue;
        }
        if elf.versym.as_ref().and_then(|v| v.get_at(i)).is_some_and(|v| v.is_hidden()) {
            continue;
        }
        let seg = elf.program_headers.iter().find(|p| {
            p.p_type == PT_LOAD
                && p.is_executable()
                && s.st_value >= p.p_vaddr
                && s.st_value + s.st_size <= p.p_vaddr + p.p_filesz
        });
        if let (Some(p), Some(name)) = (seg, elf.dynstrtab.get_at(s.st_name)) {
            out.insert(name.to_string(), (s.st_value - p.p_vaddr + p.p_offset, s.st_size));
        }
    }
    out
}

/// A symbol version the group's real library defines (GNU libgomp's first, `GOMP_1.0`): a file
/// that only takes its name (`DT_SONAME`) is not overridden, its own functions run.
fn library_version(group: u8) -> Option<&'static str> {
    (abi::GROUPS[group as usize].soname == "libgomp.so.1").then_some("GOMP_1.0")
}

/// Whether the library defines symbol version `name` (`.gnu.version_d`).
fn defines_version(elf: &Elf, name: &str) -> bool {
    let Some(verdef) = &elf.verdef else { return false };
    verdef.iter().any(|d| d.iter().any(|a| elf.dynstrtab.get_at(a.vda_name) == Some(name)))
}

/// The entries of one library file for group `group`: overrides when it is the group's
/// library, imports when it exports them, none otherwise.
fn file_entries(bytes: &[u8], group: u8) -> Result<Vec<Entry>, String> {
    let g: &Group = &abi::GROUPS[group as usize];
    let elf = crate::elf_headers::parse_bounded(bytes).map_err(|e| format!("cannot read it: {e}"))?;
    let exported = exports(&elf);
    let mut entries = Vec::new();
    if elf.soname == Some(g.soname) {
        if let Some(version) = library_version(group) {
            if !defines_version(&elf, version) {
                return Err(format!("it is not GNU's libgomp (it defines no symbol version {version})"));
            }
        }
        let mut patched = std::collections::HashSet::new();
        for (i, name) in g.overrides.iter().enumerate() {
            let Some(&(offset, size)) = exported.get(*name) else { continue };
            if size < abi::PATCH_LEN as u64 {
                return Err(format!("{name} is too small ({size} bytes) to redirect"));
            }
            if patched.insert(offset) {
                entries.push(Entry {
                    addr: offset,
                    size: size as u32,
                    index: i as u16,
                    kind: abi::KIND_OVERRIDE,
                    group,
                });
            }
        }
        if entries.is_empty() {
            return Err("it exports none of the functions the kernel's runtime provides".into());
        }
    }
    for (i, name) in g.imports.iter().enumerate() {
        if let Some(&(offset, size)) = exported.get(*name) {
            entries.push(Entry { addr: offset, size: size as u32, index: i as u16, kind: abi::KIND_IMPORT, group });
        }
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host's libgomp and libc, as gcc links them.
    fn host_library(name: &str) -> Option<Vec<u8>> {
        let out = std::process::Command::new("gcc").arg(format!("-print-file-name={name}")).output().ok()?;
        let path = String::from_utf8(out.stdout).ok()?;
        std::fs::read(path.trim()).ok()
    }

    /// A library larger than any libgomp (a sparse file here) has nothing to override: it
    /// must not count as one that cannot be overridden, which stops an `--omp kernel` program.
    #[test]
    fn a_library_too_large_to_read_has_no_entries() {
        use std::os::unix::io::AsRawFd;
        let path = std::env::temp_dir().join(format!("hrt-large-library-{}", std::process::id()));
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(MAX_LIBRARY + 4096).unwrap();
        let plans = LibraryPlans::new(abi::OMP_GROUP, LibraryUse::Override { required: true }, false);
        let got = plans.entries(file.as_raw_fd(), 0, 4096);
        let _ = std::fs::remove_file(&path);
        assert!(matches!(got, Ok(ref e) if e.is_empty()), "{:?}", got.map(|e| e.len()));
    }

    #[test]
    fn libgomp_gets_overrides_and_libc_gives_the_imports() {
        let (Some(gomp), Some(libc)) = (host_library("libgomp.so.1"), host_library("libc.so.6")) else {
            eprintln!("no host libgomp.so.1/libc.so.6: skipped");
            return;
        };
        let o = file_entries(&gomp, abi::OMP_GROUP).expect("libgomp cannot be overridden");
        assert!(o.iter().filter(|e| e.kind == abi::KIND_OVERRIDE).count() > 50, "too few overrides");
        let i = file_entries(&libc, abi::OMP_GROUP).expect("libc");
        assert_eq!(i.iter().filter(|e| e.kind == abi::KIND_IMPORT).count(), abi::OMP.imports.len());
        assert!(i.iter().all(|e| e.kind == abi::KIND_IMPORT), "libc is not libgomp");
        // The quick look leaves both to the full parse, and finds nothing in libm.
        assert!(!has_no_entries(&gomp, abi::OMP_GROUP) && !has_no_entries(&libc, abi::OMP_GROUP));
        if let Some(libm) = host_library("libm.so.6") {
            assert!(has_no_entries(&libm, abi::OMP_GROUP), "libm");
            assert!(file_entries(&libm, abi::OMP_GROUP).expect("libm").is_empty(), "libm");
        }
    }
}
