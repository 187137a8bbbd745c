//! The benchmark programs: their C sources are built into `hrt` (see monitor/build/) and
//! compiled here with the system gcc into a temporary directory, removed when done.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::err;
use crate::error::Result;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/bench_sources.rs"));
}

/// Program name and its main source, relative to bench/.
pub const PROGRAMS: &[(&str, &str)] = &[
    ("micro", "micro/micro.c"),
    ("epcc", "omp/epcc.c"),
    ("ep", "apps/ep.c"),
    ("cg", "apps/cg.c"),
    ("is", "apps/is.c"),
    ("mg", "apps/mg.c"),
    ("ft", "apps/ft.c"),
];

/// Whether this `hrt` carries the source of `program`.
pub fn available(program: &str) -> bool {
    source_of(program).is_some_and(|src| embedded::SOURCES.iter().any(|(p, _)| *p == src))
}

fn source_of(program: &str) -> Option<&'static str> {
    PROGRAMS.iter().find(|(p, _)| *p == program).map(|(_, s)| *s)
}

/// Compiled programs in a temporary directory (deleted on drop).
pub struct Built {
    dir: PathBuf,
    programs: BTreeMap<String, PathBuf>,
}

impl Built {
    pub fn path(&self, program: &str) -> Option<&Path> {
        self.programs.get(program).map(PathBuf::as_path)
    }
}

impl Drop for Built {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn check_gcc() -> Result<()> {
    match Command::new("gcc").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status() {
        Ok(s) if s.success() => Ok(()),
        Ok(_) => Err(err!("gcc --version failed; hrt bench compiles its C benchmarks with gcc")),
        Err(_) => Err(err!(
            "gcc not found: hrt bench compiles its C benchmarks with the system gcc (Debian: apt-get install build-essential)"
        )),
    }
}

/// Writes every embedded source under a fresh temporary directory and compiles `programs`
/// there, all at once: `gcc -O2 -fopenmp -pthread -static -o NAME SRC -lm`.
pub fn build(programs: &[&str]) -> Result<Built> {
    let dir = std::env::temp_dir().join(format!("hrt-bench-{}", std::process::id()));
    let mut built = Built { dir: dir.clone(), programs: BTreeMap::new() };
    if programs.is_empty() {
        return Ok(built);
    }
    check_gcc()?;
    for (rel, text) in embedded::SOURCES {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap_or(&dir))
            .and_then(|_| std::fs::write(&path, text))
            .map_err(|e| err!("cannot write {}: {e}", path.display()))?;
    }
    std::fs::create_dir_all(dir.join("bin")).map_err(|e| err!("cannot create {}: {e}", dir.display()))?;
    let mut jobs = Vec::new();
    for &program in programs {
        let src = source_of(program).ok_or_else(|| err!("no benchmark program '{program}'"))?;
        let out = dir.join("bin").join(program);
        let child = Command::new("gcc")
            .current_dir(&dir)
            .args(["-O2", "-fopenmp", "-pthread", "-static", "-o"])
            .arg(&out)
            .arg(src)
            .arg("-lm")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| err!("cannot run gcc: {e}"))?;
        jobs.push((program, src, out, child));
    }
    for (program, src, out, child) in jobs {
        let result = child.wait_with_output().map_err(|e| err!("waiting for gcc: {e}"))?;
        if !result.status.success() {
            let text = String::from_utf8_lossy(&result.stderr);
            // The first line that says what went wrong (not a warning, a context line or
            // collect2's summary).
            let first = text
                .lines()
                .find(|l| !l.contains("warning") && !l.contains("In function") && !l.starts_with("collect2"))
                .or_else(|| text.lines().next())
                .unwrap_or("");
            return Err(err!("compiling bench/{src} failed: {}", first.trim()));
        }
        built.programs.insert(program.to_string(), out);
    }
    Ok(built)
}
