//! What `hrt bench` runs: one job per process, for the chosen suites.

use super::args::{BenchArgs, OmpColumns};
use super::result::{Side, Via};

/// The application kernels, each run for 1..=CPUs threads on both sides.
pub const APPS: &[&str] = &["ep", "cg", "is", "mg"];

pub enum Work {
    /// Boot the in-kernel suite with polling or halting idle CPUs.
    Kernel { halt: bool },
    /// Run a compiled program natively (Linux side) or under `hrt run` (HRT side).
    Program { program: &'static str, args: Vec<String>, threads: u32 },
}

pub struct Job {
    pub side: Side,
    pub via: Via,
    pub work: Work,
}

impl Job {
    pub fn label(&self) -> String {
        match &self.work {
            Work::Kernel { halt } => format!("in-kernel suite, idle {}", if *halt { "halt" } else { "poll" }),
            Work::Program { program, args, threads } => {
                let side = match self.via {
                    Via::RunOmpKernel => "HRT, --omp kernel",
                    _ if self.side == Side::Linux => "Linux",
                    _ => "HRT",
                };
                format!("{program} {} ({threads} threads, {side})", args.join(" "))
            }
        }
    }

    pub fn program(&self) -> Option<&'static str> {
        match &self.work {
            Work::Program { program, .. } => Some(program),
            Work::Kernel { .. } => None,
        }
    }
}

/// Both sides of one program run: Linux, and HRT once per way in `hrt`.
fn both(program: &'static str, args: Vec<String>, threads: u32, hrt: &[Via]) -> Vec<Job> {
    let work = |args: &Vec<String>| Work::Program { program, args: args.clone(), threads };
    let mut jobs = vec![Job { side: Side::Linux, via: Via::Native, work: work(&args) }];
    jobs.extend(hrt.iter().map(|&via| Job { side: Side::Hrt, via, work: work(&args) }));
    jobs
}

/// The HRT runs of an OpenMP program.
fn omp_ways(choice: OmpColumns) -> &'static [Via] {
    match choice {
        OmpColumns::Libgomp => &[Via::Run],
        OmpColumns::Kernel => &[Via::RunOmpKernel],
        OmpColumns::Both => &[Via::Run, Via::RunOmpKernel],
    }
}

/// Application classes: S with --quick; S, W and A otherwise. Class A takes the longest
/// (about a minute per run of cg or mg on one thread of this 2-core host).
pub fn classes(quick: bool) -> &'static [&'static str] {
    if quick {
        &["S"]
    } else {
        &["S", "W", "A"]
    }
}

pub fn jobs(args: &BenchArgs, cpus: u32) -> Vec<Job> {
    let quick_flag = || if args.quick { vec!["--quick".to_string()] } else { Vec::new() };
    let mut jobs = Vec::new();
    if args.includes("micro") {
        for halt in [false, true] {
            jobs.push(Job { side: Side::Hrt, via: Via::Kernel, work: Work::Kernel { halt } });
        }
        jobs.extend(both("micro", quick_flag(), cpus, &[Via::Run]));
    }
    if args.includes("omp") {
        jobs.extend(both("epcc", quick_flag(), cpus, omp_ways(args.omp)));
    }
    if args.includes("apps") {
        let reps = if args.quick { "1" } else { "3" };
        for class in classes(args.quick) {
            for app in APPS {
                for t in 1..=cpus {
                    jobs.extend(both(app, vec![class.to_string(), reps.to_string()], t, omp_ways(args.omp)));
                }
            }
        }
    }
    jobs
}

/// Every program the jobs need, once.
pub fn programs(jobs: &[Job]) -> Vec<&'static str> {
    let mut p: Vec<&'static str> = jobs.iter().filter_map(Job::program).collect();
    p.sort_unstable();
    p.dedup();
    p
}
