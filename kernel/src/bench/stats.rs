//! Sampling with a repetition target and a time budget, and the `RESULT` line.

use alloc::string::String;
use alloc::vec::Vec;

/// How many samples a benchmark wants and how long it may take.
#[derive(Clone, Copy)]
pub struct Plan {
    /// The repetition target (1,000; 200 with `quick`).
    pub reps: usize,
    /// Wall-clock budget in TSC ticks, counted from the first sample and including untimed
    /// work between samples. Where the kernel runs natively, `reps` is reached long before.
    pub budget: u64,
}

/// Fewest samples kept even when the budget is spent (a median needs a few).
const MIN_SAMPLES: usize = 3;

/// Sorted samples of one benchmark.
pub struct Samples {
    values: Vec<u64>,
    wanted: usize,
    /// Each sample covers this many operations (the line reports per-operation figures).
    per: u64,
}

impl Samples {
    /// Wraps samples collected elsewhere (by a thread that shares the plan).
    pub fn from_values(mut values: Vec<u64>, plan: &Plan, per: u64) -> Samples {
        values.sort_unstable();
        Samples { values, wanted: plan.reps, per: per.max(1) }
    }

    /// The same samples, each covering `per` operations.
    pub fn per_op(self, per: u64) -> Samples {
        Samples { per: per.max(1), ..self }
    }
}

impl Plan {
    /// True when sample number `taken` (already collected) is enough, given the start TSC.
    pub fn done(&self, taken: usize, start: u64) -> bool {
        taken >= self.reps || (taken >= MIN_SAMPLES && crate::time::ticks().wrapping_sub(start) > self.budget)
    }

    /// Calls `one` until the plan is met; `one` returns one sample in TSC cycles.
    pub fn run(&self, mut one: impl FnMut() -> u64) -> Samples {
        let mut values = Vec::with_capacity(self.reps.min(4096));
        let start = crate::time::ticks();
        while !self.done(values.len(), start) {
            values.push(one());
        }
        Samples::from_values(values, self, 1)
    }
}

/// Prints `RESULT suite=micro name=NAME unit=cycles min= median= max= n= EXTRA`, preceded by
/// a `#` line when the time budget cut the repetitions short.
pub fn report(name: &str, s: &Samples, extra: &str) {
    let n = s.values.len();
    if n == 0 {
        kprintln!("# {name}: no samples");
        return;
    }
    if n < s.wanted {
        kprintln!(
            "# {name}: n={n} of {} repetitions: the time budget ran out (kernel code is slow here; see the platform line)",
            s.wanted
        );
    }
    let fmt = |v: u64| -> String {
        if s.per == 1 {
            alloc::format!("{v}")
        } else {
            let tenths = v * 10 / s.per;
            alloc::format!("{}.{}", tenths / 10, tenths % 10)
        }
    };
    kprintln!(
        "RESULT suite=micro name={name} unit=cycles min={} median={} max={} n={n}{}{}",
        fmt(s.values[0]),
        fmt(s.values[n / 2]),
        fmt(s.values[n - 1]),
        if extra.is_empty() { "" } else { " " },
        extra
    );
}
