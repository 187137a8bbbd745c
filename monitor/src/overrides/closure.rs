//! The shared libraries a dynamically linked program loads at its start (the closure of its
//! DT_NEEDED entries), found where glibc's ld.so would look: the loading object's DT_RPATH
//! (when it has no DT_RUNPATH) and the executable's, `LD_LIBRARY_PATH`, the loading object's
//! DT_RUNPATH, the directories of /etc/ld.so.conf (and the files it includes), then the
//! default ones. `$ORIGIN` is the loading object's directory. ld.so's cache
//! (/etc/ld.so.cache) is not read: it lists what those directories hold.
//!
//! Written here rather than taken from a crate (`lddtree` does the same walk): that one parses
//! every library whole (every symbol and string table, ~ms per large library at every start of
//! an OpenMP program) and reads `hrt`'s own `LD_LIBRARY_PATH`; this walk reads headers and the
//! dynamic section only (`elf_look`), and callers look at one symbol table (`elf_headers`).

use std::path::{Path, PathBuf};

use crate::elf_headers::{self, DT_RPATH, DT_RUNPATH};
use crate::elf_look::Looker;

/// The most libraries a walk reads (a program's closure is a few dozen at most; ffmpeg's 207).
const MAX_LIBRARIES: usize = 512;
/// An object's DT_RPATH or DT_RUNPATH directories, shared by the names it needs.
type SearchList = std::rc::Rc<Vec<PathBuf>>;

/// The most directories one search list gives (beyond them a hostile RUNPATH would cost a
/// failed open per library each).
const MAX_SEARCH_DIRS: usize = 256;
/// Libraries of the C and C++ runtimes (glibc's, gcc's), which call no OpenMP runtime: not
/// read, nor what they load (each other), ~0.8 ms of every start of a dynamic OpenMP program
/// that libc's 2 MB alone cost.
const RUNTIME_LIBRARIES: &[&str] = &[
    "libc.so.6",
    "libm.so.6",
    "libmvec.so.1",
    "ld-linux-x86-64.so.2",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libresolv.so.2",
    "libutil.so.1",
    "libgcc_s.so.1",
    "libstdc++.so.6",
];
/// One library of the closure: its DT_NEEDED name, where it was found, and its bytes as far
/// as its headers, dynamic section and (when asked) dynamic symbols go (`elf_look`; zero
/// elsewhere), valid while the walk's visit sees it.
pub struct Library<'a> {
    pub name: String,
    pub path: PathBuf,
    pub bytes: &'a [u8],
}

/// Whether the program loads the library named `soname` at start, through any of its
/// libraries (the walk stops there).
pub fn loads(bytes: &[u8], path: &Path, ld_library_path: Option<&str>, soname: &str) -> bool {
    let mut seen = false;
    let _ = walk(bytes, path, ld_library_path, false, |lib| {
        seen = lib.name == soname;
        seen
    });
    seen
}

/// Meets the libraries the program (`bytes`, at host path `path`) loads at start, each once,
/// in the order ld.so's breadth-first walk meets them, but the C and C++ runtimes' own
/// (`RUNTIME_LIBRARIES`), until `visit` returns true; a name found nowhere is left out (ld.so
/// would fail to start the program, which then is not ours to judge). `ld_library_path`: the
/// program's `LD_LIBRARY_PATH`. `symbols`: each library's bytes include its dynamic symbols.
/// Err (why) when the walk could not see everything ld.so would load: a library whose
/// tables the look cannot read (ld.so may still load it), or past `MAX_LIBRARIES`; callers
/// then decide as if an unseen library could use anything.
pub fn walk(
    bytes: &[u8],
    path: &Path,
    ld_library_path: Option<&str>,
    symbols: bool,
    mut visit: impl FnMut(&Library) -> bool,
) -> Result<(), String> {
    use std::rc::Rc;
    let Ok(elf) = elf_headers::headers(bytes, false) else { return Err("cannot read the program's headers".into()) };
    let exe_dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
    let exe_rpath = search_list(&elf_headers::dynamic_strings(bytes, &elf, DT_RPATH), &exe_dir);
    let exe_runpath = Rc::new(search_list(&elf_headers::dynamic_strings(bytes, &elf, DT_RUNPATH), &exe_dir));
    let env: Vec<PathBuf> = ld_library_path.map(|p| search_list(&[p], &exe_dir)).unwrap_or_default();
    let system = system_dirs();
    // (name, the loading object's RPATH, its RUNPATH): the lists shared by all the names one
    // object needs (a copy each made a hostile library of 1,000 names and a 20,000-entry
    // RUNPATH cost 1.1 GB and 1.5 s).
    let exe_rpath = Rc::new(exe_rpath);
    let mut queue: std::collections::VecDeque<(String, SearchList, SearchList)> =
        elf_headers::needed_libraries(bytes, &elf)
            .into_iter()
            .map(|n| (n.to_string(), exe_rpath.clone(), exe_runpath.clone()))
            .collect();
    let mut seen: Vec<String> = Vec::new();
    let mut looker = Looker::new();
    let mut complete = Ok(());
    while let Some((name, rpath, runpath)) = queue.pop_front() {
        if seen.contains(&name) || RUNTIME_LIBRARIES.contains(&name.as_str()) {
            continue;
        }
        if seen.len() >= MAX_LIBRARIES {
            return Err(format!("it loads more than {MAX_LIBRARIES} libraries"));
        }
        seen.push(name.clone());
        let candidates: Vec<PathBuf> = if name.contains('/') {
            vec![PathBuf::from(&name)]
        } else {
            // ld.so: DT_RPATH (of the object, then of the executable) only when the object has
            // no DT_RUNPATH; then LD_LIBRARY_PATH, DT_RUNPATH, the system's directories.
            let rpaths: Vec<&PathBuf> =
                if runpath.is_empty() { rpath.iter().chain(exe_rpath.iter()).collect() } else { Vec::new() };
            let listed = system.iter().filter(|d| d.may_hold(&name)).map(|d| &d.path);
            rpaths.into_iter().chain(&env).chain(runpath.iter()).chain(listed).map(|d| d.join(&name)).collect()
        };
        // The first candidate that is a 64-bit x86 ELF file (ld.so skips others).
        let Some(path) = candidates.into_iter().find(|p| is_x86_64_elf(p)) else { continue };
        let Some(lib) = look_at(&path, &mut looker, symbols) else {
            if complete.is_ok() {
                complete = Err(format!("the tables of {} cannot be read", path.display()));
            }
            continue;
        };
        if let Ok(lelf) = elf_headers::headers(lib, false) {
            let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
            let rp = Rc::new(search_list(&elf_headers::dynamic_strings(lib, &lelf, DT_RPATH), &dir));
            let rn = Rc::new(search_list(&elf_headers::dynamic_strings(lib, &lelf, DT_RUNPATH), &dir));
            for next in elf_headers::needed_libraries(lib, &lelf) {
                if !seen.iter().any(|s| s == next) {
                    queue.push_back((next.to_string(), rp.clone(), rn.clone()));
                }
            }
        }
        if visit(&Library { name, path, bytes: lib }) {
            return complete;
        }
    }
    complete
}

/// Opens the regular file at `path` without waiting (a FIFO or a device named like a
/// library would wait for a writer at the open, or act on the device): the type is asked
/// before the open and after it.
fn open_regular(path: &Path) -> Option<(std::fs::File, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let opened = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path);
    let file = opened.ok()?;
    let meta = file.metadata().ok()?;
    let len = meta.len();
    meta.is_file().then_some((file, len))
}

/// Whether the file at `path` is a 64-bit x86 ELF file, by its first 64 bytes, as ld.so
/// chooses among the candidates.
fn is_x86_64_elf(path: &Path) -> bool {
    use std::os::unix::fs::FileExt;
    let Some((file, _)) = open_regular(path) else { return false };
    let mut header = [0u8; 64];
    if file.read_exact_at(&mut header, 0).is_err() {
        return false;
    }
    header[..4] == *b"\x7fELF" && header[4] == 2 && header[5] == 1 && u16::from_le_bytes([header[18], header[19]]) == 62
}

/// The bytes of the library at `path` as far as `Looker` reads them; None where it cannot
/// (tables out of the file, too large).
fn look_at<'a>(path: &Path, looker: &'a mut Looker, symbols: bool) -> Option<&'a [u8]> {
    let (file, len) = open_regular(path)?;
    looker.look(&file, len, symbols)
}

/// The directories of colon-separated `lists`, `$ORIGIN` (and `${ORIGIN}`) as `origin`; an
/// empty entry is the current directory, as for ld.so.
fn search_list(lists: &[&str], origin: &Path) -> Vec<PathBuf> {
    let origin = origin.to_string_lossy();
    let mut dirs: Vec<PathBuf> = Vec::new();
    // Each directory once, as ld.so keeps them (a list of 20,000 empty entries is one "."),
    // and at most `MAX_SEARCH_DIRS` of them.
    let mut seen = std::collections::HashSet::new();
    for d in lists.iter().flat_map(|l| l.split(':')) {
        let d =
            if d.is_empty() { ".".to_string() } else { d.replace("${ORIGIN}", &origin).replace("$ORIGIN", &origin) };
        if seen.insert(d.clone()) {
            dirs.push(PathBuf::from(d));
            if dirs.len() >= MAX_SEARCH_DIRS {
                break;
            }
        }
    }
    dirs
}

/// A directory of the system's search list, with the names it holds where they are few
/// (/usr/local/lib, fakeroot's directory) or none (a directory that does not exist): a
/// library not there then costs no failed open. ffmpeg's 207 libraries were ~600 failed opens
/// in the three directories ld.so.conf puts before Debian's own.
struct SystemDir {
    path: PathBuf,
    /// None: a large or unreadable directory, asked file by file.
    names: Option<std::collections::HashSet<std::ffi::OsString>>,
}

/// A directory listed whole when it holds at most this many names.
const LISTED_NAMES: usize = 256;

impl SystemDir {
    fn new(path: PathBuf) -> SystemDir {
        let names = match std::fs::read_dir(&path) {
            Ok(entries) => {
                let names: std::collections::HashSet<_> =
                    entries.take(LISTED_NAMES + 1).flatten().map(|e| e.file_name()).collect();
                (names.len() <= LISTED_NAMES).then_some(names)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(Default::default()),
            Err(_) => None,
        };
        SystemDir { path, names }
    }

    /// Whether a file named `name` may be in the directory.
    fn may_hold(&self, name: &str) -> bool {
        self.names.as_ref().is_none_or(|n| n.contains(std::ffi::OsStr::new(name)))
    }
}

/// /etc/ld.so.conf's directories, then glibc's defaults for x86-64 (Debian's multiarch ones
/// first).
fn system_dirs() -> Vec<SystemDir> {
    let mut dirs = Vec::new();
    read_conf(Path::new("/etc/ld.so.conf"), &mut dirs, 0);
    for d in ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"] {
        dirs.push(PathBuf::from(d));
    }
    let mut unique = Vec::new();
    for d in dirs {
        if !unique.contains(&d) {
            unique.push(d);
        }
    }
    unique.into_iter().map(SystemDir::new).collect()
}

/// The directories of one ld.so.conf-style file, following `include` lines (a path or a
/// `DIR/*SUFFIX` pattern, relative ones to the file's directory) a few levels deep.
fn read_conf(file: &Path, dirs: &mut Vec<PathBuf>, depth: u32) {
    let Ok(text) = std::fs::read_to_string(file) else { return };
    let here = file.parent().unwrap_or(Path::new("/"));
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if let Some(pattern) = line.strip_prefix("include").filter(|r| r.starts_with([' ', '\t'])) {
            if depth >= 4 {
                continue;
            }
            for pat in pattern.split_whitespace() {
                let pat = here.join(pat);
                for f in matching(&pat) {
                    read_conf(&f, dirs, depth + 1);
                }
            }
        } else if line.starts_with('/') {
            dirs.push(PathBuf::from(line));
        }
    }
}

/// The files `pattern` names: itself, or for `DIR/PREFIX*SUFFIX` those of DIR that match, in
/// name order (as glob(3) sorts them).
fn matching(pattern: &Path) -> Vec<PathBuf> {
    let name = pattern.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    let Some((prefix, suffix)) = name.split_once('*') else { return vec![pattern.to_path_buf()] };
    let dir = pattern.parent().unwrap_or(Path::new("/"));
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n.len() >= prefix.len() + suffix.len() && n.starts_with(prefix) && n.ends_with(suffix)
        })
        .map(|e| e.path())
        .collect();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory under target/, removed when the test ends, passed or not.
    struct Scratch(PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A program's libraries are found where `ldd` finds them: gcc's libgomp for a program
    /// built with `-fopenmp`, the C runtime's left out. gcc builds every test program here, so
    /// a failed build fails the test.
    #[test]
    fn a_programs_libraries_are_found_where_ld_so_finds_them() {
        let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
        let scratch = Scratch(target.join(format!("closure-test-{}", std::process::id())));
        std::fs::create_dir_all(&scratch.0).unwrap();
        let (src, exe) = (scratch.0.join("p.c"), scratch.0.join("p"));
        std::fs::write(&src, "int main(void) {\n#pragma omp parallel\n;\nreturn 0; }\n").unwrap();
        let built = std::process::Command::new("gcc").arg("-fopenmp").arg("-o").arg(&exe).arg(&src).status();
        assert!(built.as_ref().is_ok_and(|s| s.success()), "gcc -fopenmp: {built:?}");
        let mut found = Vec::new();
        let _ = walk(&std::fs::read(&exe).unwrap(), &exe, None, true, |l| {
            found.push((l.name.clone(), l.path.clone()));
            false
        });
        let names: Vec<&str> = found.iter().map(|l| l.0.as_str()).collect();
        assert_eq!(names, ["libgomp.so.1"], "{names:?}");
        let ldd = std::process::Command::new("ldd").arg(&exe).output().unwrap();
        let ldd = String::from_utf8_lossy(&ldd.stdout).to_string();
        let line = ldd.lines().find(|l| l.trim_start().starts_with("libgomp.so.1")).expect("ldd lists libgomp");
        let ldd_path = line.split("=>").nth(1).and_then(|r| r.split_whitespace().next()).unwrap();
        assert_eq!(
            std::fs::canonicalize(&found[0].1).unwrap(),
            std::fs::canonicalize(ldd_path).unwrap(),
            "libgomp found at {:?}, ldd says {ldd_path}",
            found[0].1
        );
        // A program that does not load libgomp itself, but whose library (found by its
        // RUNPATH, $ORIGIN) does: `loads` finds it; a plain program's walk does not.
        let lib_src = scratch.0.join("l.c");
        std::fs::write(
            &lib_src,
            "int work(void) { int n = 0;\n#pragma omp parallel reduction(+:n)\nn++;\nreturn n; }\n",
        )
        .unwrap();
        std::fs::create_dir_all(scratch.0.join("lib")).unwrap();
        let lib = scratch.0.join("lib/libwork.so");
        let built = std::process::Command::new("gcc")
            .args(["-fopenmp", "-shared", "-fPIC", "-o"])
            .arg(&lib)
            .arg(&lib_src)
            .status();
        assert!(built.as_ref().is_ok_and(|s| s.success()), "gcc -shared: {built:?}");
        std::fs::write(&src, "int work(void);\nint main(void) { return work() > 0 ? 0 : 1; }\n").unwrap();
        let built = std::process::Command::new("gcc")
            .arg("-o")
            .arg(&exe)
            .arg(&src)
            .arg(format!("-L{}", scratch.0.join("lib").display()))
            .args(["-lwork", "-Wl,--enable-new-dtags,-rpath,$ORIGIN/lib"])
            .status();
        assert!(built.as_ref().is_ok_and(|s| s.success()), "gcc -lwork: {built:?}");
        let bytes = std::fs::read(&exe).unwrap();
        assert!(loads(&bytes, &exe, None, "libgomp.so.1"), "libwork.so's libgomp not found");
        assert!(!loads(&bytes, &exe, None, "libnothing.so.1"));
    }

    /// Each directory once, as ld.so keeps them: a hostile RUNPATH of 20,000 empty entries
    /// is one directory, not 20,000 copies for each library the object needs.
    #[test]
    fn a_search_list_names_each_directory_once() {
        let list = search_list(&[&":".repeat(20_000), "/a:/b:/a"], Path::new("/x"));
        let want: Vec<PathBuf> = [".", "/a", "/b"].iter().map(PathBuf::from).collect();
        assert_eq!(list, want);
        let many: String = (0..1000).map(|i| format!("/d{i}:")).collect();
        assert_eq!(search_list(&[&many], Path::new("/x")).len(), MAX_SEARCH_DIRS);
    }

    #[test]
    fn origin_and_empty_entries_expand_as_for_ld_so() {
        let list = search_list(&["$ORIGIN/../lib:${ORIGIN}/x", ":/opt/y"], Path::new("/a/bin"));
        let want: Vec<PathBuf> = ["/a/bin/../lib", "/a/bin/x", ".", "/opt/y"].iter().map(PathBuf::from).collect();
        assert_eq!(list, want);
    }
}
