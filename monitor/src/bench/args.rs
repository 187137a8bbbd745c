//! Command-line arguments of `hrt bench` and of its internal in-kernel suite command.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::cli::VmArgs;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum SuiteChoice {
    /// Kernel primitives in HRT against threads and system calls on Linux (micro.c)
    Micro,
    /// OpenMP construct overheads (EPCC method, epcc.c)
    Omp,
    /// Application kernels: ep, cg, is, mg, ft, for 1..=CPUs threads
    Apps,
    /// Everything above
    All,
}

/// A problem class of the application kernels (the NAS sizes).
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum AppClass {
    /// Sample: milliseconds
    #[value(name = "S")]
    S,
    /// Workstation: tenths of a second
    #[value(name = "W")]
    W,
    /// A: about a second on one thread here; arrays of tens to hundreds of MiB
    #[value(name = "A")]
    A,
    /// B: seconds to a minute on one thread here (cg.B ~1 min, ep.B ~25 s); not run unless asked
    #[value(name = "B")]
    B,
}

impl AppClass {
    /// The class letter the programs take.
    pub fn letter(self) -> &'static str {
        match self {
            AppClass::S => "S",
            AppClass::W => "W",
            AppClass::A => "A",
            AppClass::B => "B",
        }
    }
}

/// Which OpenMP runtimes the HRT side of the omp and apps suites uses.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum OmpColumns {
    /// The programs' own libgomp (`hrt run --omp libgomp`)
    Libgomp,
    /// The kernel's OpenMP runtime (`hrt run --omp kernel`)
    Kernel,
    /// Both, a row each
    Both,
}

impl BenchArgs {
    /// Whether `--suite` selects `suite`.
    pub fn includes(&self, suite: &str) -> bool {
        self.suite.iter().any(|c| match c {
            SuiteChoice::All => true,
            SuiteChoice::Micro => suite == "micro",
            SuiteChoice::Omp => suite == "omp",
            SuiteChoice::Apps => suite == "apps",
        })
    }
}

#[derive(Args, Clone)]
pub struct BenchArgs {
    /// Which benchmarks to run (several separated by commas, e.g. micro,apps)
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    pub suite: Vec<SuiteChoice>,
    /// Fewer repetitions and the small application class only (under 2 minutes on 2 cores)
    #[arg(long)]
    pub quick: bool,
    /// Application classes to run (several separated by commas, e.g. A,B) [default: S,W,A;
    /// S with --quick]
    #[arg(long, value_enum, value_delimiter = ',', value_name = "CLASS", ignore_case = true)]
    pub class: Vec<AppClass>,
    /// Write every result, with the machine and platform, as JSON to FILE
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write an SVG plot (Linux/HRT ratios; application time against threads) to FILE
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// vCPUs of the HRT side and threads of the Linux side [default: the host's CPU count]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub cpus: Option<u32>,
    /// OpenMP runtime(s) of the HRT side of the omp and apps suites: each is a row next to
    /// the same Linux result
    #[arg(long, value_enum, default_value = "both")]
    pub omp: OmpColumns,
    /// An option for the programs' `hrt run` (repeatable), e.g. `--run-option=--idle=poll` or
    /// `--run-option=--kernel-ring=0`; the in-kernel rows are not affected
    #[arg(long, value_name = "OPT", allow_hyphen_values = true)]
    pub run_option: Vec<String>,
}

/// The internal command the harness runs to boot the in-kernel suite (hidden from --help).
#[derive(Args, Clone)]
pub struct KernelBenchArgs {
    /// 200 repetitions instead of 1,000, and a smaller time budget on slow platforms
    #[arg(long)]
    pub quick: bool,
    #[command(flatten)]
    pub vm: VmArgs,
}
