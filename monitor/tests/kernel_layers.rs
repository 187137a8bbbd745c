//! The kernel's dependencies run one way (issue 14, "layering you can see"): every top-level
//! module of kernel/src may name only modules in lower layers, so that there are no import
//! circles. This reads the source (`crate::X` paths, `use crate::{X, ...}` groups and the
//! crate's exported macros, comments ignored) and fails on any reference against the order,
//! naming the file and line. The layers, lowest first:
//!
//! - `bootinfo`: the boot-info block;
//! - `arch`: the hardware (it calls upward only through handlers the layers above install);
//! - `cpu`, `time`, `console`: per-CPU records, the clock, the console;
//! - `sync`: spinlocks; `counters`: the per-CPU wait counters' names and printing (their
//!   storage is in `arch`, which counts its own events);
//! - `mem`: physical pages and the heap; `random`: the kernel's random generator;
//! - `sched`: threads, and everything that blocks them (wait queues, condition variables);
//! - `linux`: the Linux system-call layer;
//! - `omp`: the kernel's OpenMP runtime (it installs itself into the Linux loader);
//! - `bench`, `selftest`: the in-kernel suites;
//! - `panic`, then `boot`, which puts everything together.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Lowest first; modules in one layer may not name each other.
const LAYERS: &[&[&str]] = &[
    &["bootinfo"],
    &["arch"],
    &["cpu", "time", "console"],
    &["sync", "counters"],
    &["mem", "random"],
    &["sched"],
    &["linux"],
    &["omp"],
    &["bench", "selftest"],
    &["panic"],
    &["boot"],
];

/// The crate root declares the modules; it may name any of them.
const ROOT: &str = "main";

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// One reference against the order.
#[derive(Debug, PartialEq)]
struct Violation {
    file: String,
    line: usize,
    from: String,
    to: String,
}

/// Source with comments and the contents of string and character literals blanked out (line
/// structure kept).
fn strip_comments(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &src[i..];
        let skip_to = if rest.starts_with("//") {
            rest.find('\n').map_or(b.len(), |e| i + e)
        } else if let Some(body) = rest.strip_prefix("/*") {
            body.find("*/").map_or(b.len(), |e| i + 2 + e + 2)
        } else if rest.starts_with('"') {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            (j + 1).min(b.len())
        } else if let Some(len) = char_literal(rest) {
            i + len
        } else {
            out.push(rest.chars().next().unwrap());
            i += rest.chars().next().unwrap().len_utf8();
            continue;
        };
        out.extend(src[i..skip_to].chars().filter(|&c| c == '\n'));
        out.push(' ');
        i = skip_to;
    }
    out
}

/// The length of a character literal at the start of `s` ('x', '\n', '\''), None for anything
/// else (a lifetime).
fn char_literal(s: &str) -> Option<usize> {
    let mut chars = s.char_indices();
    if chars.next()?.1 != '\'' {
        return None;
    }
    let (_, c) = chars.next()?;
    if c == '\\' {
        chars.next()?;
    }
    let (end, close) = chars.next()?;
    (close == '\'').then_some(end + 1)
}

fn ident_at(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// The first path segment of each item of a `use crate::{...}` group starting at `s` (after
/// the brace), and the group's length.
fn group_heads(s: &str) -> (Vec<&str>, usize) {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut item_start = true;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return (heads, i),
            '}' => depth -= 1,
            ',' if depth == 0 => item_start = true,
            c if item_start && depth == 0 && (c.is_ascii_alphanumeric() || c == '_') => {
                heads.push(ident_at(&s[i..]));
                item_start = false;
            }
            _ => {}
        }
    }
    (heads, s.len())
}

/// The top-level modules (or exported macros, by name) that `src` names, with their lines.
fn references(src: &str, macros: &BTreeMap<String, String>) -> Vec<(usize, String)> {
    let code = strip_comments(src);
    let line_of = |pos: usize| code[..pos].matches('\n').count() + 1;
    let mut refs = Vec::new();
    for (pos, _) in code.match_indices("crate::") {
        if pos > 0 && code[..pos].ends_with('$') {
            continue; // `$crate::` inside a macro: the defining module itself
        }
        let rest = &code[pos + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            for head in group_heads(group).0 {
                refs.push((line_of(pos), head.to_string()));
            }
        } else {
            let name = ident_at(rest);
            let target = macros.get(name).cloned().unwrap_or_else(|| name.to_string());
            refs.push((line_of(pos), target));
        }
    }
    // Exported macros are in scope everywhere without a path.
    for (name, module) in macros {
        let call = format!("{name}!");
        for (pos, _) in code.match_indices(&call) {
            let before = code[..pos].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            refs.push((line_of(pos), module.clone()));
        }
    }
    refs
}

/// The references of one file of module `from` that the layer order forbids.
fn check_file(file: &str, from: &str, src: &str, macros: &BTreeMap<String, String>) -> Vec<Violation> {
    let mut found = Vec::new();
    for (line, to) in references(src, macros) {
        if to == from || from == ROOT {
            continue;
        }
        let allowed = match (layer_of(from), layer_of(&to)) {
            (Some(a), Some(b)) => b < a,
            // A name that is not a top-level module (a crate-root item, say) is no edge; a
            // module missing from LAYERS fails in `every_module_has_a_layer`.
            _ => true,
        };
        if !allowed {
            found.push(Violation { file: file.to_string(), line, from: from.to_string(), to });
        }
    }
    found
}

fn kernel_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernel/src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("reading kernel/src") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to: its first folder under kernel/src, or its stem.
fn module_of(rel: &Path) -> String {
    let first = rel.components().next().expect("a relative path").as_os_str().to_string_lossy().into_owned();
    first.strip_suffix(".rs").map(str::to_string).unwrap_or(first)
}

/// Every kernel source file: (path relative to kernel/src, module, text).
fn sources() -> Vec<(PathBuf, String, String)> {
    let root = kernel_src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&root).unwrap().to_path_buf();
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
            let module = module_of(&rel);
            (rel, module, text)
        })
        .collect()
}

/// `#[macro_export]` macros by name, with the module that defines them.
fn exported_macros(sources: &[(PathBuf, String, String)]) -> BTreeMap<String, String> {
    let mut macros = BTreeMap::new();
    for (_, module, text) in sources {
        let lines: Vec<&str> = text.lines().collect();
        for pair in lines.windows(2) {
            if pair[0].trim() == "#[macro_export]" {
                if let Some(rest) = pair[1].trim().strip_prefix("macro_rules!") {
                    macros.insert(ident_at(rest.trim()).to_string(), module.clone());
                }
            }
        }
    }
    macros
}

#[test]
fn kernel_dependencies_run_one_way() {
    let sources = sources();
    let macros = exported_macros(&sources);
    assert!(macros.contains_key("kprintln"), "the console's macros were not found: {macros:?}");
    let mut violations = Vec::new();
    for (rel, module, text) in &sources {
        violations.extend(check_file(&format!("kernel/src/{}", rel.display()), module, text, &macros));
    }
    let report: Vec<String> = violations
        .iter()
        .map(|v| format!("{}:{}: `{}` names `{}`, which is not in a lower layer", v.file, v.line, v.from, v.to))
        .collect();
    assert!(report.is_empty(), "kernel layering (monitor/tests/kernel_layers.rs):\n{}", report.join("\n"));
}

#[test]
fn every_module_has_a_layer() {
    for (rel, module, _) in sources() {
        assert!(
            module == ROOT || layer_of(&module).is_some(),
            "kernel/src/{}: module `{module}` is in no layer of monitor/tests/kernel_layers.rs",
            rel.display()
        );
    }
}

/// The checker itself finds what it must, and only that.
#[test]
fn the_checker_sees_paths_groups_and_macros_but_not_comments() {
    let macros = BTreeMap::from([("kprintln".to_string(), "console".to_string())]);
    let src = "//! uses crate::linux in a comment\n\
               use crate::{sync::SpinLock, sched::{self, Thread}};\n\
               fn f() { crate::linux::start(); /* crate::omp */ kprintln!(\"crate::omp\"); }\n";
    let found = check_file("x.rs", "mem", src, &macros);
    let got: Vec<(usize, &str)> = found.iter().map(|v| (v.line, v.to.as_str())).collect();
    assert_eq!(got, [(2, "sched"), (3, "linux")]);
    assert!(check_file("x.rs", "arch", "use crate::cpu::this;", &macros).len() == 1);
    assert!(check_file("x.rs", "cpu", "use crate::arch::percpu;", &macros).is_empty());
    assert!(check_file("x.rs", "time", "use crate::cpu;", &macros).len() == 1, "same layer");
}
