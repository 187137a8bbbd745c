//! What `hrt bench` runs: one job per process, for the chosen suites.
//!
//! A program's sides (Linux, HRT on libgomp, HRT on the kernel's runtime) are interleaved:
//! each round runs every side once, for a share of the samples, and the rounds repeat (the
//! first side changes from round to round), so a change of the host's speed during the run
//! hits every column alike. `merge` puts a side's rounds back together.

use super::args::{BenchArgs, OmpColumns};
use super::result::{Side, Via};

/// The application kernels, each run for 1..=CPUs threads on both sides.
pub const APPS: &[&str] = &["ep", "cg", "is", "mg", "ft"];

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
    /// Which round of its program's interleaved runs (0 for the in-kernel suite).
    pub round: u32,
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
                format!("{program} {} ({threads} threads, {side}, round {})", args.join(" "), self.round + 1)
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

/// Every side of one program, `rounds` times: Linux, and HRT once per way in `hrt`, each
/// round starting one side later than the round before.
fn interleaved(program: &'static str, args: Vec<String>, threads: u32, hrt: &[Via], rounds: u32) -> Vec<Job> {
    let mut sides = vec![(Side::Linux, Via::Native)];
    sides.extend(hrt.iter().map(|&via| (Side::Hrt, via)));
    let mut jobs = Vec::new();
    for round in 0..rounds {
        for k in 0..sides.len() {
            let (side, via) = sides[(k + round as usize) % sides.len()];
            let work = Work::Program { program, args: args.clone(), threads };
            jobs.push(Job { side, via, work, round });
        }
    }
    jobs
}

/// Rounds of the omp suite, and EPCC samples per row in each (a row's samples in all: 16 with
/// --quick, 160 otherwise, and four times that for critical, lock and atomic; a sample is a
/// test and its own reference, 0.5 ms each, 0.25 ms with --quick). Eight rounds, not six: a
/// round whose sides ran at different host states does not count in a row's ratio
/// (`host_state`), and runs where the host switched state lost one to three rounds of six.
fn omp_rounds(quick: bool) -> (u32, u32) {
    if quick {
        (2, 8)
    } else {
        (8, 20)
    }
}

/// Rounds of the apps suite, one timed run of the application in each.
fn app_rounds(quick: bool) -> u32 {
    if quick {
        1
    } else {
        3
    }
}

/// Timed runs of an application in each process (its RESULT line gives their median): one,
/// but for the class-S kernels whose run is a few milliseconds (natively on this host: is.S
/// ~0.5-1 ms, mg.S ~2-3 ms, cg.S ~20-30 ms). A single such run per round moved the suite's
/// geometric mean by several percent from one full run to the next (is.S 0.54-1.53, mg.S
/// 0.59-1.09 per row in runs with the same code).
fn app_reps(app: &str, class: &str) -> u32 {
    match (app, class) {
        ("is", "S") => 31,
        ("mg", "S") => 11,
        ("cg", "S") => 3,
        _ => 1,
    }
}

/// The HRT runs of an OpenMP program.
fn omp_ways(choice: OmpColumns) -> &'static [Via] {
    match choice {
        OmpColumns::Libgomp => &[Via::Run],
        OmpColumns::Kernel => &[Via::RunOmpKernel],
        OmpColumns::Both => &[Via::Run, Via::RunOmpKernel],
    }
}

/// Application classes: those `--class` names, else S with --quick and S, W and A otherwise.
/// Class B takes the longest (about a minute per run of cg on one thread of this 2-core host).
pub fn classes(args: &BenchArgs) -> Vec<&'static str> {
    if !args.class.is_empty() {
        let mut chosen: Vec<&'static str> = args.class.iter().map(|c| c.letter()).collect();
        chosen.dedup();
        chosen
    } else if args.quick {
        vec!["S"]
    } else {
        vec!["S", "W", "A"]
    }
}

pub fn jobs(args: &BenchArgs, cpus: u32) -> Vec<Job> {
    let quick_flag = || if args.quick { vec!["--quick".to_string()] } else { Vec::new() };
    let mut jobs = Vec::new();
    if args.includes("micro") {
        for halt in [false, true] {
            jobs.push(Job { side: Side::Hrt, via: Via::Kernel, work: Work::Kernel { halt }, round: 0 });
        }
        jobs.extend(interleaved("micro", quick_flag(), cpus, &[Via::Run], 1));
    }
    if args.includes("omp") {
        let (rounds, samples) = omp_rounds(args.quick);
        let mut epcc_args = quick_flag();
        epcc_args.extend(["--samples".to_string(), samples.to_string()]);
        jobs.extend(interleaved("epcc", epcc_args, cpus, omp_ways(args.omp), rounds));
    }
    if args.includes("apps") {
        for class in classes(args) {
            for app in APPS {
                for t in 1..=cpus {
                    let app_args = vec![class.to_string(), app_reps(app, class).to_string()];
                    jobs.extend(interleaved(app, app_args, t, omp_ways(args.omp), app_rounds(args.quick)));
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::classes;
    use crate::cli::{Cli, Command};

    fn classes_of(line: &[&str]) -> Vec<&'static str> {
        let mut argv = vec!["hrt", "bench"];
        argv.extend_from_slice(line);
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Bench(args) => classes(&args),
            _ => panic!("not a bench command"),
        }
    }

    #[test]
    fn application_classes_default_quick_and_chosen() {
        assert_eq!(classes_of(&[]), ["S", "W", "A"]);
        assert_eq!(classes_of(&["--quick"]), ["S"]);
        assert_eq!(classes_of(&["--class", "B"]), ["B"]);
        assert_eq!(classes_of(&["--quick", "--class", "a,B"]), ["A", "B"]);
        assert!(Cli::try_parse_from(["hrt", "bench", "--class", "C"]).is_err());
    }
}
