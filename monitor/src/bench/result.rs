//! One `RESULT` line (notes/bench-format.md) and where it came from.

use super::host_state::Round;

/// Which system produced a measurement.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Side {
    /// The program run natively on the host (Linux).
    Linux,
    /// HRT: the in-kernel suite, or the program under `hrt run`.
    Hrt,
}

/// How the HRT side ran.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Via {
    /// Natively on the host.
    Native,
    /// In the kernel, booted by `hrt bench-kernel`.
    Kernel,
    /// The same program under `hrt run --omp libgomp` (OpenMP programs on their own libgomp).
    Run,
    /// The same program under `hrt run --omp kernel` (on the kernel's OpenMP runtime).
    RunOmpKernel,
}

impl Via {
    pub fn label(self) -> &'static str {
        match self {
            Via::Native => "native",
            Via::Kernel => "kernel",
            Via::Run => "hrt run",
            Via::RunOmpKernel => "hrt run --omp kernel",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Measurement {
    pub suite: String,
    pub name: String,
    pub unit: String,
    pub min: f64,
    pub median: f64,
    pub max: f64,
    pub n: u64,
    /// Optional keys in line order (threads, class, verified, note, p999, spread, ...).
    pub extra: Vec<(String, String)>,
}

impl Measurement {
    /// Parses `RESULT suite=.. name=.. unit=.. min=.. median=.. max=.. n=.. [k=v ...]`.
    pub fn parse(line: &str) -> Option<Measurement> {
        let mut words = line.split_whitespace();
        if words.next()? != "RESULT" {
            return None;
        }
        let mut m = Measurement {
            suite: String::new(),
            name: String::new(),
            unit: String::new(),
            min: f64::NAN,
            median: f64::NAN,
            max: f64::NAN,
            n: 0,
            extra: Vec::new(),
        };
        for w in words {
            let (k, v) = w.split_once('=')?;
            match k {
                "suite" => m.suite = v.to_string(),
                "name" => m.name = v.to_string(),
                "unit" => m.unit = v.to_string(),
                "min" => m.min = v.parse().ok()?,
                "median" => m.median = v.parse().ok()?,
                "max" => m.max = v.parse().ok()?,
                "n" => m.n = v.parse().ok()?,
                _ => m.extra.push((k.to_string(), v.to_string())),
            }
        }
        let complete = !m.suite.is_empty() && !m.name.is_empty() && !m.unit.is_empty();
        (complete && m.median.is_finite() && m.min.is_finite() && m.max.is_finite()).then_some(m)
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.extra.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    pub fn threads(&self) -> Option<u32> {
        self.get("threads").and_then(|t| t.parse().ok())
    }
}

/// Every `RESULT` line of a program's output.
pub fn parse_all(text: &str) -> Vec<Measurement> {
    text.lines().filter_map(|l| Measurement::parse(l.trim_end())).collect()
}

/// A measurement with its origin.
#[derive(Clone, Debug)]
pub struct Record {
    pub m: Measurement,
    pub side: Side,
    pub via: Via,
    /// Privilege ring the measured code ran in (3 natively on Linux).
    pub ring: u32,
    /// Each round this record merges (its median and the host's state), in round order (one
    /// before `merge`).
    pub rounds: Vec<Round>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_line() {
        let m = Measurement::parse(
            "RESULT suite=apps name=ep.S unit=s min=0.1 median=0.2 max=0.3 n=3 threads=2 class=S verified=yes",
        )
        .unwrap();
        assert_eq!((m.suite.as_str(), m.name.as_str(), m.n), ("apps", "ep.S", 3));
        assert_eq!(m.median, 0.2);
        assert_eq!(m.threads(), Some(2));
        assert_eq!(m.get("verified"), Some("yes"));
        assert!(Measurement::parse("# comment").is_none());
        assert!(Measurement::parse("RESULT suite=micro name=x unit=cycles min=1 median=x max=3 n=1").is_none());
    }
}
