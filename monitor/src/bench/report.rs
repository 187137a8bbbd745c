//! Pairs Linux and HRT measurements into rows and prints one table per suite.

use super::host_state;
use super::result::{Measurement, Record, Side, Via};

/// One benchmark, both sides.
pub struct Row {
    pub suite: String,
    pub name: String,
    pub threads: Option<u32>,
    pub unit: String,
    pub linux: Option<Record>,
    pub hrt: Option<Record>,
}

impl Row {
    /// Linux time over HRT time: above 1, HRT is faster. Only for times (not counts). When
    /// both sides ran the same interleaved rounds, the median of the rounds' ratios (each
    /// round's sides ran back to back, at the same host speed) over the rounds that ran at one
    /// host state (`compared_rounds`); else the medians' ratio.
    pub fn ratio(&self) -> Option<f64> {
        if self.unit == "count" {
            return None;
        }
        let (l, h) = (self.linux.as_ref()?, self.hrt.as_ref()?);
        if l.rounds.len() > 1 && l.rounds.len() == h.rounds.len() {
            let pairs: Vec<(f64, f64)> =
                self.compared_rounds().into_iter().map(|i| (l.rounds[i].median, h.rounds[i].median)).collect();
            if pairs.iter().all(|&(a, b)| a > 0.0 && b > 0.0) {
                let per_round: Vec<f64> = pairs.iter().map(|(a, b)| a / b).collect();
                return Some(super::merge::median(&per_round));
            }
        }
        let (l, h) = (l.m.median, h.m.median);
        (l > 0.0 && h > 0.0).then(|| l / h)
    }

    /// The rounds whose Linux and HRT runs the ratio compares: those at one host state
    /// (`host_state::comparable`), or every round when the host changed state in all of them
    /// (`note` says so).
    fn compared_rounds(&self) -> Vec<usize> {
        let (Some(l), Some(h)) = (&self.linux, &self.hrt) else { return Vec::new() };
        let same = host_state::comparable(&l.rounds, &h.rounds);
        if same.is_empty() {
            (0..l.rounds.len().min(h.rounds.len())).collect()
        } else {
            same
        }
    }

    /// "k of n rounds at one host state" when the ratio left rounds out.
    fn state_note(&self) -> Option<String> {
        let (l, h) = (self.linux.as_ref()?, self.hrt.as_ref()?);
        let n = l.rounds.len();
        if n < 2 || n != h.rounds.len() {
            return None;
        }
        match host_state::comparable(&l.rounds, &h.rounds).len() {
            0 => Some("no round at one host state".into()),
            k if k < n => Some(format!("{k} of {n} rounds at one host state")),
            _ => None,
        }
    }

    /// Whether the HRT side ran on the kernel's OpenMP runtime.
    pub fn omp_kernel(&self) -> bool {
        self.hrt.as_ref().is_some_and(|h| h.via == Via::RunOmpKernel)
    }

    /// How the HRT side ran, and the programs' own notes (hrt_only, verified=no, ...).
    pub fn note(&self) -> String {
        let mut parts = Vec::new();
        if let Some(h) = &self.hrt {
            parts.push(h.via.label().to_string());
        }
        parts.extend(self.state_note());
        for r in [&self.linux, &self.hrt].into_iter().flatten() {
            if let Some(n) = r.m.get("note") {
                parts.push(n.to_string());
            }
            if r.m.get("verified") == Some("no") {
                parts.push(format!("{} not verified", if r.side == Side::Linux { "Linux" } else { "HRT" }));
            }
        }
        if self.linux.is_none() && !parts.iter().any(|p| p == "hrt_only") {
            parts.push("no Linux result".into());
        }
        if self.hrt.is_none() && !parts.iter().any(|p| p == "linux_only") {
            parts.push("no HRT result".into());
        }
        parts.dedup();
        parts.join(", ")
    }
}

/// The name the Linux side uses: `cond_wakeup.poll` and `.halt` both pair with `cond_wakeup`.
fn linux_name(name: &str) -> &str {
    name.strip_suffix(".poll").or_else(|| name.strip_suffix(".halt")).unwrap_or(name)
}

/// Applications report the same name for every thread count, so threads are part of their key.
fn same_benchmark(linux: &Measurement, hrt: &Measurement) -> bool {
    linux.suite == hrt.suite
        && (linux.name == hrt.name || linux.name == linux_name(&hrt.name))
        && (linux.suite != "apps" || linux.threads() == hrt.threads())
}

/// Rows in the order results arrived: each HRT result with its Linux counterpart, then the
/// Linux results nothing paired with.
pub fn pair(records: &[Record]) -> Vec<Row> {
    let linux: Vec<&Record> = records.iter().filter(|r| r.side == Side::Linux).collect();
    let mut used = vec![false; linux.len()];
    let mut rows = Vec::new();
    for h in records.iter().filter(|r| r.side == Side::Hrt) {
        let found = linux.iter().position(|l| same_benchmark(&l.m, &h.m));
        if let Some(i) = found {
            used[i] = true;
        }
        rows.push(Row {
            suite: h.m.suite.clone(),
            name: h.m.name.clone(),
            threads: h.m.threads(),
            unit: h.m.unit.clone(),
            linux: found.map(|i| linux[i].clone()),
            hrt: Some(h.clone()),
        });
    }
    for (l, _) in linux.iter().zip(used).filter(|(_, u)| !u) {
        rows.push(Row {
            suite: l.m.suite.clone(),
            name: l.m.name.clone(),
            threads: l.m.threads(),
            unit: l.m.unit.clone(),
            linux: Some((*l).clone()),
            hrt: None,
        });
    }
    // Keep the kernel rows of a benchmark next to its `hrt run` row, and a benchmark's
    // `--omp kernel` row right after its libgomp row.
    let first = |r: &Row| rows.iter().position(|o| o.suite == r.suite && o.name == r.name && o.threads == r.threads);
    let keys: Vec<_> = rows
        .iter()
        .map(|r| {
            let in_kernel = r.hrt.as_ref().is_some_and(|h| h.via == Via::Kernel);
            (suite_order(&r.suite), !in_kernel, first(r), r.omp_kernel())
        })
        .collect();
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&i| keys[i]);
    let mut slots: Vec<Option<Row>> = rows.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

fn suite_order(s: &str) -> usize {
    ["micro", "omp", "apps"].iter().position(|x| *x == s).unwrap_or(3)
}

/// Geometric mean of the ratios of `suite`'s rows that have both sides, over the rows run on
/// the kernel's OpenMP runtime (`omp_kernel`) or over the others.
pub fn geomean(rows: &[Row], suite: &str, omp_kernel: bool) -> Option<f64> {
    let logs: Vec<f64> = rows
        .iter()
        .filter(|r| r.suite == suite && r.omp_kernel() == omp_kernel)
        .filter_map(Row::ratio)
        .map(f64::ln)
        .collect();
    (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

/// A number in at most 4 significant digits (or an integer when large).
pub fn num(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{v:.0}")
    } else if v >= 100.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

fn triple(r: &Option<Record>) -> String {
    match r {
        Some(r) => format!("{} / {} / {}", num(r.m.min), num(r.m.median), num(r.m.max)),
        None => "-".into(),
    }
}

pub fn display_name(r: &Row) -> String {
    match (r.suite.as_str(), r.threads) {
        ("apps", Some(t)) => format!("{} t={t}", r.name),
        _ => r.name.clone(),
    }
}

/// Prints one table per suite that has rows, with the geometric mean of its ratios.
pub fn print_tables(rows: &[Row]) {
    for suite in ["micro", "omp", "apps"] {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.suite == suite).collect();
        if mine.is_empty() {
            continue;
        }
        let cells: Vec<[String; 6]> = mine
            .iter()
            .map(|r| {
                [
                    display_name(r),
                    r.unit.clone(),
                    triple(&r.linux),
                    triple(&r.hrt),
                    r.ratio().map(num).unwrap_or_else(|| "-".into()),
                    r.note(),
                ]
            })
            .collect();
        let head = ["benchmark", "unit", "Linux min / median / max", "HRT min / median / max", "Linux/HRT", "note"];
        let widths: Vec<usize> =
            (0..6).map(|i| cells.iter().map(|c| c[i].len()).chain([head[i].len()]).max().unwrap_or(0)).collect();
        let line = |c: &[String]| {
            let text: Vec<String> = c.iter().zip(&widths).map(|(s, w)| format!("{s:<w$}")).collect();
            println!("{}", text.join("  ").trim_end());
        };
        println!("\n== suite {suite} ==");
        line(&head.map(String::from));
        for c in &cells {
            line(c);
        }
        let both_runtimes = mine.iter().any(|r| r.omp_kernel()) && mine.iter().any(|r| !r.omp_kernel());
        for omp_kernel in [false, true] {
            if !mine.iter().any(|r| r.omp_kernel() == omp_kernel) {
                continue;
            }
            let label = match (omp_kernel, both_runtimes) {
                (true, _) => format!("{suite}, --omp kernel"),
                (false, true) => format!("{suite}, libgomp"),
                (false, false) => suite.to_string(),
            };
            match geomean(rows, suite, omp_kernel) {
                Some(g) => println!("geometric mean of Linux/HRT ratios ({label}): {} (above 1: HRT faster)", num(g)),
                None => println!("geometric mean of Linux/HRT ratios ({label}): - (no benchmark with both sides)"),
            }
        }
    }
}
