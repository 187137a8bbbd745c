//! Puts the rounds of an interleaved benchmark back together: one record per benchmark and
//! side, with the minimum and maximum over every sample, the median of the rounds' medians,
//! and each round's median and host state kept for per-round ratios (`report::Row::ratio`).

use super::result::Record;

fn same(a: &Record, b: &Record) -> bool {
    a.side == b.side
        && a.via == b.via
        && a.m.suite == b.m.suite
        && a.m.name == b.m.name
        && a.m.threads() == b.m.threads()
        && a.m.get("class") == b.m.get("class")
}

pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// One record per benchmark and side, in the order each first appeared.
pub fn rounds(records: Vec<Record>) -> Vec<Record> {
    let mut merged: Vec<Record> = Vec::new();
    for r in records {
        match merged.iter_mut().find(|m| same(m, &r)) {
            Some(m) => {
                m.m.min = m.m.min.min(r.m.min);
                m.m.max = m.m.max.max(r.m.max);
                m.m.n += r.m.n;
                m.rounds.extend(&r.rounds);
                m.m.median = median(&m.rounds.iter().map(|r| r.median).collect::<Vec<_>>());
                // The host state is each round's own (kept in `rounds`).
                m.m.extra.retain(|(k, _)| k != "xfer");
                // A round that failed to verify marks the whole record.
                if r.m.get("verified") == Some("no") {
                    m.m.extra.retain(|(k, _)| k != "verified");
                    m.m.extra.push(("verified".into(), "no".into()));
                }
            }
            None => merged.push(r),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::host_state::Round;
    use crate::bench::result::{Measurement, Side, Via};

    fn rec(line: &str, side: Side) -> Record {
        let m = Measurement::parse(line).unwrap();
        Record { rounds: vec![Round::of(&m)], m, side, via: Via::Native, ring: 3 }
    }

    #[test]
    fn merges_rounds_of_one_side() {
        let a = "RESULT suite=omp name=x unit=us min=1 median=2 max=3 n=5 threads=2";
        let b = "RESULT suite=omp name=x unit=us min=0.5 median=4 max=9 n=5 threads=2";
        let c = "RESULT suite=omp name=x unit=us min=1 median=3 max=4 n=5 threads=2";
        let other = "RESULT suite=omp name=y unit=us min=1 median=1 max=1 n=5 threads=2";
        let out = rounds(vec![rec(a, Side::Linux), rec(other, Side::Linux), rec(b, Side::Linux), rec(c, Side::Linux)]);
        assert_eq!(out.len(), 2);
        let x = &out[0].m;
        assert_eq!((x.min, x.median, x.max, x.n), (0.5, 3.0, 9.0, 15));
        assert_eq!(out[0].rounds.iter().map(|r| r.median).collect::<Vec<_>>(), vec![2.0, 4.0, 3.0]);
        let hrt = rounds(vec![rec(a, Side::Hrt), rec(b, Side::Linux)]);
        assert_eq!(hrt.len(), 2, "sides are never merged");
    }
}
