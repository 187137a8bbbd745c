//! Embeds the benchmark programs' C sources (every .c and .h under bench/) into `hrt`, which
//! compiles them with the system gcc when `hrt bench` runs. Writes `$OUT_DIR/bench_sources.rs`:
//! `pub static SOURCES: &[(&str, &str)]`, (path relative to bench/, text) sorted by path.

use std::path::{Path, PathBuf};

fn collect(dir: &Path, root: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, root, out);
        } else if matches!(path.extension().and_then(|e| e.to_str()), Some("c" | "h")) {
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            out.push((rel, path));
        }
    }
}

pub fn generate(repo_root: &Path, out_dir: &Path) {
    let bench = repo_root.join("bench");
    println!("cargo:rerun-if-changed={}", bench.display());
    let mut files = Vec::new();
    collect(&bench, &bench, &mut files);
    files.sort();
    let mut code = String::from("pub static SOURCES: &[(&str, &str)] = &[\n");
    for (rel, path) in files {
        code.push_str(&format!("    ({rel:?}, include_str!({:?})),\n", path.display().to_string()));
    }
    code.push_str("];\n");
    std::fs::write(out_dir.join("bench_sources.rs"), code).expect("cannot write bench_sources.rs");
}
