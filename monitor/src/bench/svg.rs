//! `--plot FILE`: an SVG written by hand. Top: the Linux/HRT ratio of every benchmark as a
//! bar on a log scale, with a line at 1.0 (bars to the right: HRT faster). Below: for each
//! application and class, median time against threads, Linux and HRT lines.

use std::fmt::Write as _;

use super::report::{display_name, Row};
use super::result::Side;

const WIDTH: f64 = 960.0;
const LABEL_W: f64 = 300.0;
const ROW_H: f64 = 16.0;
const CHART_W: f64 = 300.0;
const CHART_H: f64 = 200.0;
const LINUX_COLOR: &str = "#1f77b4";
const HRT_COLOR: &str = "#ff7f0e";
const HRT_KERNEL_OMP_COLOR: &str = "#2ca02c";

fn esc(t: &str) -> String {
    t.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Ratio bars; returns the height used.
fn ratio_panel(o: &mut String, rows: &[Row], top: f64) -> f64 {
    let bars: Vec<(String, f64)> = rows.iter().filter_map(|r| r.ratio().map(|x| (bar_label(r), x))).collect();
    let _ = writeln!(
        o,
        r#"<text x="10" y="{}" font-size="15" font-weight="bold">Linux/HRT ratio of medians (log scale; right of 1.0: HRT faster)</text>"#,
        top + 16.0
    );
    if bars.is_empty() {
        return 30.0;
    }
    let logs = bars.iter().map(|(_, r)| r.log10());
    let lo = logs.clone().fold(0.0f64, f64::min).floor();
    let hi = logs.fold(0.0f64, f64::max).ceil().max(lo + 1.0);
    let (x0, x1) = (LABEL_W, WIDTH - 20.0);
    let x = |l: f64| x0 + (l - lo) / (hi - lo) * (x1 - x0);
    let y0 = top + 30.0;
    let height = bars.len() as f64 * ROW_H;
    let mut p = lo as i32;
    while p as f64 <= hi {
        let xp = x(p as f64);
        let _ = writeln!(
            o,
            r##"<line x1="{xp:.1}" y1="{y0}" x2="{xp:.1}" y2="{:.1}" stroke="#ddd"/><text x="{xp:.1}" y="{:.1}" font-size="10" text-anchor="middle">1e{p}</text>"##,
            y0 + height,
            y0 + height + 12.0
        );
        p += 1;
    }
    for (i, (label, r)) in bars.iter().enumerate() {
        let y = y0 + i as f64 * ROW_H;
        let (a, b) = (x(0.0), x(r.log10()));
        let color = if *r >= 1.0 { "#2ca02c" } else { "#d62728" };
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text><rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}"><title>{} = {r:.4}</title></rect>"#,
            x0 - 6.0,
            y + ROW_H - 4.0,
            esc(label),
            a.min(b),
            y + 2.0,
            (b - a).abs().max(1.0),
            ROW_H - 4.0,
            esc(label)
        );
    }
    let one = x(0.0);
    let _ = writeln!(
        o,
        r#"<line x1="{one:.1}" y1="{:.1}" x2="{one:.1}" y2="{:.1}" stroke="black" stroke-width="1.5"/>"#,
        y0 - 4.0,
        y0 + height
    );
    30.0 + height + 24.0
}

/// (threads, median) points of one application name on one side, sorted by threads.
/// An application's (threads, median) points: Linux's, or HRT's on libgomp or (`omp_kernel`)
/// on the kernel's OpenMP runtime.
fn series(rows: &[Row], name: &str, side: Side, omp_kernel: bool) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = rows
        .iter()
        .filter(|r| r.suite == "apps" && r.name == name)
        .filter(|r| side == Side::Linux || r.omp_kernel() == omp_kernel)
        .filter_map(|r| {
            let rec = if side == Side::Linux { r.linux.as_ref() } else { r.hrt.as_ref() }?;
            Some((rec.m.threads()? as f64, rec.m.median))
        })
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts.dedup_by(|a, b| a.0 == b.0);
    pts
}

fn app_chart(o: &mut String, rows: &[Row], name: &str, left: f64, top: f64) {
    let lin = series(rows, name, Side::Linux, false);
    let hrt = series(rows, name, Side::Hrt, false);
    let kernel = series(rows, name, Side::Hrt, true);
    let all = lin.iter().chain(&hrt).chain(&kernel);
    let tmax = all.clone().map(|p| p.0).fold(1.0f64, f64::max);
    let ymax = all.map(|p| p.1).fold(0.0f64, f64::max).max(1e-9) * 1.1;
    let (px0, px1, py0, py1) = (left + 50.0, left + CHART_W - 10.0, top + CHART_H - 30.0, top + 25.0);
    let x = |t: f64| if tmax > 1.0 { px0 + (t - 1.0) / (tmax - 1.0) * (px1 - px0) } else { (px0 + px1) / 2.0 };
    let y = |v: f64| py0 - v / ymax * (py0 - py1);
    let _ = writeln!(
        o,
        r#"<text x="{:.1}" y="{:.1}" font-size="13" font-weight="bold">{} (median s vs threads)</text>"#,
        left + 10.0,
        top + 15.0,
        esc(name)
    );
    let _ = writeln!(
        o,
        r#"<line x1="{px0}" y1="{py0}" x2="{px1}" y2="{py0}" stroke="black"/><line x1="{px0}" y1="{py0}" x2="{px0}" y2="{py1}" stroke="black"/>"#
    );
    let _ = writeln!(
        o,
        r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{:.3}</text><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">0</text>"#,
        px0 - 4.0,
        py1 + 4.0,
        ymax,
        px0 - 4.0,
        py0
    );
    for t in 1..=tmax as u32 {
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle">{t}</text>"#,
            x(t as f64),
            py0 + 12.0
        );
    }
    let lines = [
        (&lin, LINUX_COLOR, "Linux", 0.0),
        (&hrt, HRT_COLOR, "HRT", 12.0),
        (&kernel, HRT_KERNEL_OMP_COLOR, "HRT --omp kernel", 24.0),
    ];
    for (pts, color, label, dy) in lines.into_iter().filter(|l| !l.0.is_empty()) {
        let path: Vec<String> = pts.iter().map(|&(t, v)| format!("{:.1},{:.1}", x(t), y(v))).collect();
        let _ = writeln!(o, r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#, path.join(" "));
        for &(t, v) in pts.iter() {
            let _ = writeln!(o, r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"/>"#, x(t), y(v));
        }
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}" font-size="10" fill="{color}">{label}</text>"#,
            px1 - 90.0,
            py1 + dy
        );
    }
}

pub fn render(rows: &[Row], title: &str) -> String {
    let mut body = String::new();
    let _ = writeln!(body, r#"<text x="10" y="20" font-size="16" font-weight="bold">{}</text>"#, esc(title));
    let mut top = 30.0;
    top += ratio_panel(&mut body, rows, top);
    let mut apps: Vec<&str> = Vec::new();
    for r in rows.iter().filter(|r| r.suite == "apps") {
        if !apps.contains(&r.name.as_str()) {
            apps.push(&r.name);
        }
    }
    let per_row = (WIDTH / CHART_W).floor().max(1.0) as usize;
    for (i, name) in apps.iter().enumerate() {
        let (col, row) = ((i % per_row) as f64, (i / per_row) as f64);
        app_chart(&mut body, rows, name, 10.0 + col * CHART_W, top + row * CHART_H);
    }
    let height = top + apps.len().div_ceil(per_row) as f64 * CHART_H + 10.0;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height:.0}\" viewBox=\"0 0 {WIDTH} {height:.0}\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n{body}</svg>\n"
    )
}

/// A bar's label: suite, name and, for the micro suite (where the same name is measured both
/// in the kernel and under `hrt run`), how the HRT side ran.
fn bar_label(r: &super::report::Row) -> String {
    match (&r.hrt, r.suite.as_str()) {
        (Some(h), "micro") => format!("{}: {} ({})", r.suite, display_name(r), h.via.label()),
        (Some(h), _) if h.via == super::result::Via::RunOmpKernel => {
            format!("{}: {} ({})", r.suite, display_name(r), h.via.label())
        }
        _ => format!("{}: {}", r.suite, display_name(r)),
    }
}
