//! `--json FILE`: the machine, the run, and every result with both sides.

use std::fmt::Write as _;

use super::machine::Machine;
use super::report::{geomean, Row};
use super::result::Record;

/// A JSON string literal.
fn s(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON number (null when not finite).
fn n(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".into()
    }
}

fn side(r: &Option<Record>, platform: &str) -> String {
    let Some(r) = r else { return "null".into() };
    let extra: Vec<String> = r.m.extra.iter().map(|(k, v)| format!("{}: {}", s(k), s(v))).collect();
    let platform = if r.via == super::result::Via::Native { "host (native Linux)" } else { platform };
    format!(
        "{{\"via\": {}, \"platform\": {}, \"ring\": {}, \"unit\": {}, \"min\": {}, \"median\": {}, \"max\": {}, \"n\": {}, \"extra\": {{{}}}}}",
        s(r.via.label()),
        s(platform),
        r.ring,
        s(&r.m.unit),
        n(r.m.min),
        n(r.m.median),
        n(r.m.max),
        r.m.n,
        extra.join(", ")
    )
}

pub struct RunInfo<'a> {
    pub machine: &'a Machine,
    pub date: &'a str,
    pub command: &'a str,
    pub cpus: u32,
    pub quick: bool,
    pub app_ring: u32,
    pub failures: &'a [String],
}

pub fn render(info: &RunInfo, rows: &[Row]) -> String {
    let m = info.machine;
    let mut o = String::from("{\n");
    let _ = writeln!(
        o,
        "  \"machine\": {{\"hostname\": {}, \"cpu\": {}, \"host_cpus\": {}, \"mem_mib\": {}, \"kernel\": {}, \"gcc\": {}, \"kvm_module\": {}, \"tsc_mhz\": {}}},",
        s(&m.hostname),
        s(&m.cpu_model),
        m.host_cpus,
        m.mem_mib,
        s(&m.kernel),
        s(&m.gcc),
        s(&m.kvm_module),
        m.tsc_mhz.map(n).unwrap_or_else(|| "null".into())
    );
    let _ = writeln!(o, "  \"date\": {},", s(info.date));
    let _ = writeln!(o, "  \"command\": {},", s(info.command));
    let _ = writeln!(o, "  \"platform\": {},", s(&m.platform));
    let _ = writeln!(o, "  \"ring\": {{\"kernel\": 0, \"program\": {}}},", info.app_ring);
    let _ = writeln!(o, "  \"cpus\": {},", info.cpus);
    let _ = writeln!(o, "  \"quick\": {},", info.quick);
    let geo: Vec<String> = ["micro", "omp", "apps"]
        .iter()
        .flat_map(|suite| {
            [(suite.to_string(), false), (format!("{suite} --omp kernel"), true)].map(|(k, o)| (suite, k, o))
        })
        .filter_map(|(suite, key, omp_kernel)| {
            geomean(rows, suite, omp_kernel).map(|g| format!("{}: {}", s(&key), n(g)))
        })
        .collect();
    let _ = writeln!(o, "  \"geomean\": {{{}}},", geo.join(", "));
    let fails: Vec<String> = info.failures.iter().map(|f| s(f)).collect();
    let _ = writeln!(o, "  \"failures\": [{}],", fails.join(", "));
    o.push_str("  \"results\": [\n");
    let items: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "    {{\"suite\": {}, \"name\": {}, \"threads\": {}, \"unit\": {}, \"ratio\": {}, \"note\": {}, \"linux\": {}, \"hrt\": {}}}",
                s(&r.suite),
                s(&r.name),
                r.threads.map(|t| t.to_string()).unwrap_or_else(|| "null".into()),
                s(&r.unit),
                r.ratio().map(n).unwrap_or_else(|| "null".into()),
                s(&r.note()),
                side(&r.linux, &m.platform),
                side(&r.hrt, &m.platform)
            )
        })
        .collect();
    o.push_str(&items.join(",\n"));
    o.push_str("\n  ]\n}\n");
    o
}
