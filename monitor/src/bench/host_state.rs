//! The host's state while a round ran, as the program measured it, and which rounds of two
//! sides may be compared.
//!
//! This machine's host moves its vCPUs: a cache line's round trip between two of them is
//! 60-140 ns at some times and 340-420 ns at others, switching every few seconds to a minute,
//! and cheap OpenMP constructs cost what the line costs (EPCC atomic 0.002 against 0.086 us,
//! critical 0.005 against 0.09 us, barrier 0.19 against 0.45 us on Linux). A round whose Linux run had one state
//! and whose HRT run the other compares the host, not the systems, so a row's ratio leaves it
//! out. `epcc` prints `xfer=A-B`, the round trip (ns) right before and after the row.

use super::result::Measurement;

/// Two round trips further apart than this factor are different states (the two states are
/// 2.5-7x apart; within one, the round trip moves by up to ~1.3x between runs).
const SAME_STATE: f64 = 1.5;

fn close(a: f64, b: f64) -> bool {
    a > 0.0 && b > 0.0 && a.max(b) / a.min(b) <= SAME_STATE
}

/// The round trip while the measurement ran: the geometric mean of `xfer=A-B` when A and B are
/// in one state, `None` when the program measured none or the state changed during the row.
pub fn xfer(m: &Measurement) -> Option<f64> {
    let (a, b) = m.get("xfer")?.split_once('-')?;
    let (a, b): (f64, f64) = (a.parse().ok()?, b.parse().ok()?);
    close(a, b).then(|| (a * b).sqrt())
}

/// Whether `m` carries a host state at all (steady or not).
pub fn tagged(m: &Measurement) -> bool {
    m.get("xfer").is_some()
}

/// One round of a side: its median, and the host's state (`xfer`), if known and steady.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Round {
    pub median: f64,
    pub xfer: Option<f64>,
    /// Whether the program measured the state (a tagged round without `xfer` changed state).
    pub tagged: bool,
}

impl Round {
    pub fn of(m: &Measurement) -> Round {
        Round { median: m.median, xfer: xfer(m), tagged: tagged(m) }
    }
}

/// Indices of the rounds whose two sides may be compared: all of them when no round of
/// either side carries a state; else those where both sides held one state, the same.
pub fn comparable(l: &[Round], h: &[Round]) -> Vec<usize> {
    let any_tag = l.iter().chain(h).any(|r| r.tagged);
    (0..l.len().min(h.len()))
        .filter(|&i| {
            !any_tag
                || match (l[i].xfer, h[i].xfer) {
                    (Some(a), Some(b)) => close(a, b),
                    _ => false,
                }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(xfer: &str) -> Measurement {
        Measurement::parse(&format!("RESULT suite=omp name=x unit=us min=1 median=2 max=3 n=5 threads=2 {xfer}"))
            .unwrap()
    }

    #[test]
    fn reads_a_steady_state_and_rejects_a_change() {
        assert_eq!(xfer(&m("xfer=100-100")), Some(100.0));
        assert_eq!(xfer(&m("xfer=90-111")).map(f64::round), Some(100.0));
        assert_eq!(xfer(&m("xfer=80-360")), None, "the state changed during the row");
        assert_eq!(xfer(&m("")), None);
        assert!(tagged(&m("xfer=80-360")) && !tagged(&m("")));
    }

    #[test]
    fn compares_rounds_of_one_state_only() {
        let r = |x: &str| Round::of(&m(&format!("xfer={x}")));
        let linux = [r("80-80"), r("80-80"), r("360-360"), r("80-360")];
        let hrt = [r("90-90"), r("360-360"), r("350-370"), r("80-80")];
        assert_eq!(comparable(&linux, &hrt), vec![0, 2]);
        let plain = |median: f64| Round { median, xfer: None, tagged: false };
        assert_eq!(
            comparable(&[plain(1.0), plain(2.0)], &[plain(1.0), plain(3.0)]),
            vec![0, 1],
            "untagged: every round"
        );
    }
}
