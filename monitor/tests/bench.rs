//! `hrt bench --quick --suite micro,apps`: the report's structure, never its timings. Every
//! expected benchmark is present with both sides (HRT only where there is no Linux
//! equivalent), numbers are positive, applications verified, the JSON and SVG files written.
//! The omp suite is left out for time (it runs the same way as a program of the other two);
//! about 75 s on a 2-core PVM host.

use std::process::Command;

/// The in-kernel benchmarks, paired with bench/micro/micro.c on Linux (2 vCPUs).
const MICRO: &[&str] = &[
    "thread_create",
    "thread_create_seq.1",
    "thread_create_seq.2",
    "thread_create_seq.4",
    "thread_create_seq.8",
    "thread_create_seq.16",
    "thread_create_seq.32",
    "thread_create_seq.64",
    "thread_create_seq.128",
    "thread_create_seq.256",
    "create_join",
    "cond_wakeup.poll",
    "cond_wakeup.halt",
    "spin_uncontended",
    "spin_contended",
    "barrier",
    "forkjoin.1",
    "forkjoin.2",
];
const APPS: &[&str] = &["ep.S", "cg.S", "is.S", "mg.S", "ft.S"];

/// The value of `"key": ` in `text` (up to the next comma or brace), quotes removed.
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("\"{key}\": ");
    let rest = &text[text.find(&pat)? + pat.len()..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim().trim_matches('"'))
}

/// One result line of the JSON file (the report writes one result per line).
struct Result<'a> {
    line: &'a str,
}

impl<'a> Result<'a> {
    fn get(&self, key: &str) -> Option<&'a str> {
        field(self.line, key)
    }

    /// The `linux` or `hrt` object, None when null.
    fn side(&self, side: &str) -> Option<&'a str> {
        let pat = format!("\"{side}\": ");
        let rest = &self.line[self.line.find(&pat)? + pat.len()..];
        if rest.starts_with("null") {
            return None;
        }
        let end = rest.find("}}").map(|e| e + 2).unwrap_or(rest.len());
        Some(&rest[..end])
    }
}

fn assert_positive(side: &str, what: &str) {
    for key in ["min", "median", "max", "n"] {
        let v: f64 = field(side, key).and_then(|v| v.parse().ok()).unwrap_or(-1.0);
        assert!(v > 0.0, "{what}: {key} is not a positive number in {side}");
    }
}

#[test]
fn bench_quick_structure() {
    let dir = std::env::temp_dir().join(format!("hrt-bench-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, svg) = (dir.join("bench.json"), dir.join("bench.svg"));
    // `timeout` (with the process group it makes) ends a run that hangs.
    let out = Command::new("timeout")
        .args(["-s", "KILL", "1200"])
        .arg(env!("CARGO_BIN_EXE_hrt"))
        .args(["bench", "--quick", "--suite", "micro,apps", "--cpus", "2", "--json"])
        .arg(&json)
        .arg("--plot")
        .arg(&svg)
        .output()
        .expect("cannot run hrt");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "hrt bench failed ({:?}); stdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    for suite in ["micro", "apps"] {
        assert!(stdout.contains(&format!("== suite {suite} ==")), "no {suite} table in:\n{stdout}");
    }
    // The apps run on libgomp and on the kernel's OpenMP runtime, each with its geomean.
    for geomean in ["micro", "apps, libgomp", "apps, --omp kernel"] {
        assert!(stdout.contains(&format!("geometric mean of Linux/HRT ratios ({geomean}): ")), "no {geomean} geomean");
    }

    let text = std::fs::read_to_string(&json).expect("no JSON file");
    for key in ["machine", "date", "command", "platform", "ring", "results"] {
        assert!(text.contains(&format!("\"{key}\": ")), "JSON lacks {key}:\n{text}");
    }
    let results: Vec<Result> = text.lines().filter(|l| l.contains("\"suite\": ")).map(|line| Result { line }).collect();
    let find = |suite: &str, name: &str, via: Option<&str>| -> Vec<&Result> {
        results
            .iter()
            .filter(|r| r.get("suite") == Some(suite) && r.get("name") == Some(name))
            .filter(|r| via.is_none_or(|v| r.side("hrt").and_then(|h| field(h, "via")) == Some(v)))
            .collect()
    };
    for name in MICRO {
        let rows = find("micro", name, Some("kernel"));
        assert_eq!(rows.len(), 1, "micro {name}: want one in-kernel result in {text}");
        let r = rows[0];
        assert_positive(r.side("hrt").unwrap(), name);
        let linux = r.side("linux").unwrap_or_else(|| panic!("micro {name}: no Linux side: {}", r.line));
        assert_positive(linux, name);
        assert!(r.get("ratio").and_then(|v| v.parse::<f64>().ok()).is_some_and(|v| v > 0.0), "{name}: no ratio");
    }
    let ipi = find("micro", "ipi_roundtrip", Some("kernel"));
    assert_eq!(ipi.len(), 1, "no ipi_roundtrip");
    assert_positive(ipi[0].side("hrt").unwrap(), "ipi_roundtrip");
    assert_eq!(field(ipi[0].side("hrt").unwrap(), "note"), Some("hrt_only"), "ipi_roundtrip is not marked hrt_only");
    // micro.c itself under hrt run, paired with its native run.
    let run = find("micro", "create_join", Some("hrt run"));
    assert_eq!(run.len(), 1, "create_join of micro.c under hrt run");
    assert_positive(run[0].side("linux").expect("create_join: Linux side"), "create_join");
    // Applications: class S on 1 and 2 threads, verified on both sides, on either runtime.
    for (name, via) in APPS.iter().flat_map(|n| [(n, "hrt run"), (n, "hrt run --omp kernel")]) {
        let rows = find("apps", name, Some(via));
        let threads: Vec<&str> = rows.iter().filter_map(|r| r.get("threads")).collect();
        assert!(threads.contains(&"1") && threads.contains(&"2"), "{name} ({via}): threads {threads:?}");
        for r in rows {
            for side in ["linux", "hrt"] {
                let s = r.side(side).unwrap_or_else(|| panic!("{name}: no {side} side: {}", r.line));
                assert_positive(s, name);
                assert_eq!(field(s, "verified"), Some("yes"), "{name} {side} not verified: {}", r.line);
            }
        }
    }

    let plot = std::fs::read_to_string(&svg).expect("no SVG file");
    assert!(plot.trim_start().starts_with("<svg"), "the plot does not start with <svg");
    assert!(plot.trim_end().ends_with("</svg>"), "the plot does not end with </svg>");
    assert_eq!(plot.matches("<svg").count(), 1);
    assert!(plot.contains("<rect") && plot.contains("<polyline"), "no bars or lines in the plot");
    let _ = std::fs::remove_dir_all(&dir);
}
