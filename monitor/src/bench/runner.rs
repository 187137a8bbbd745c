//! Runs one job and returns its measurements.
//!
//! The HRT side runs as child processes of this `hrt` (`hrt bench-kernel ...` and
//! `hrt run --cpus N -- PROG ARGS`), not in-process: a program's output goes to `hrt`'s own
//! stdout, which a child lets us capture without redirecting our descriptors; a VM that
//! panics or hangs ends one child (and is reported) instead of the harness; and every VM
//! starts from a fresh process, as a user's `hrt run` would.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use super::host_state::Round;
use super::plan::{Job, Work};
use super::process;
use super::result::{parse_all, Record, Side, Via};
use super::sources::Built;
use crate::error::err;
use crate::error::Result;

/// Longest any one job may take (class A applications on one thread are the slowest).
const LIMIT: Duration = Duration::from_secs(900);
/// The same with `--quick`, whose longest job (micro.c under `hrt run`) takes ~20 s here: a
/// stuck job fails within minutes instead of a quarter of an hour.
const QUICK_LIMIT: Duration = Duration::from_secs(180);

pub struct Context<'a> {
    pub built: &'a Built,
    pub hrt: PathBuf,
    pub cpus: u32,
    pub quick: bool,
    /// Ring of a program under `hrt run` on this platform.
    pub app_ring: u32,
    /// Extra options for `hrt run` (`--run-option`).
    pub run_options: &'a [String],
}

/// The job's measurements, and an error when it failed (results printed before a failure,
/// such as an application's `verified=no`, are kept).
pub fn run(job: &Job, cx: &Context) -> (Vec<Record>, Option<crate::error::Error>) {
    match run_inner(job, cx) {
        Ok(r) => r,
        Err(e) => (Vec::new(), Some(e)),
    }
}

fn run_inner(job: &Job, cx: &Context) -> Result<(Vec<Record>, Option<crate::error::Error>)> {
    let label = job.label();
    let (mut cmd, ring) = match &job.work {
        Work::Kernel { halt } => {
            let mut c = Command::new(&cx.hrt);
            c.args(["bench-kernel", "--cpus", &cx.cpus.to_string(), "--idle", if *halt { "halt" } else { "poll" }]);
            if cx.quick {
                c.arg("--quick");
            }
            (c, 0)
        }
        Work::Program { program, args, threads } => {
            let path = cx.built.path(program).ok_or_else(|| err!("{program} was not compiled"))?;
            let mut c = match job.side {
                Side::Linux => Command::new(path),
                Side::Hrt => {
                    let mut c = Command::new(&cx.hrt);
                    c.args(["run", "--cpus", &cx.cpus.to_string()]).args(cx.run_options);
                    // Each side names its runtime: `hrt run`'s default (`auto`) would put an
                    // OpenMP program on the kernel's runtime in both columns.
                    c.args(["--omp", if job.via == Via::RunOmpKernel { "kernel" } else { "libgomp" }]);
                    c.arg("--").arg(path);
                    c
                }
            };
            c.args(args).env("OMP_NUM_THREADS", threads.to_string());
            (c, if job.side == Side::Linux { 3 } else { cx.app_ring })
        }
    };
    let out = process::run(&mut cmd, &label, if cx.quick { QUICK_LIMIT } else { LIMIT })?;
    // The kernel prints on the console (stderr); programs print on stdout.
    let text = if matches!(job.work, Work::Kernel { .. }) { &out.stderr } else { &out.stdout };
    let records: Vec<Record> = parse_all(text)
        .into_iter()
        .map(|m| Record { rounds: vec![Round::of(&m)], m, side: job.side, via: job.via, ring })
        .collect();
    let failure = if out.status != Some(0) {
        let status = out.status.map(|s| s.to_string()).unwrap_or_else(|| "a signal".into());
        Some(err!("{label} failed (exit status {status}): {}", out.error_summary()))
    } else if records.is_empty() {
        Some(err!("{label} printed no RESULT line"))
    } else {
        None
    };
    Ok((records, failure))
}
