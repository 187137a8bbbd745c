//! `hrt bench`: runs each benchmark on Linux (natively on the host) and on HRT (in the kernel
//! for kernel primitives, under `hrt run` for programs) and prints them side by side.

mod args;
mod host_state;
mod json;
mod kernel_suite;
mod machine;
mod merge;
mod plan;
mod process;
mod progress;
mod report;
mod result;
mod runner;
mod sources;
mod svg;

pub use args::{BenchArgs, KernelBenchArgs};
pub use kernel_suite::run as run_kernel_suite;

use crate::error::err;
use crate::error::Result;

fn write_file(path: &std::path::Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| err!("cannot write {}: {e}", path.display()))
}

pub fn run(args: &BenchArgs) -> Result<u8> {
    // Fail early, with the usual message, when KVM is missing or not accessible.
    drop(crate::vm::open_kvm()?);
    let host_cpus = crate::host_cpus::count();
    let cpus = args.cpus.unwrap_or(host_cpus);
    let hrt = std::env::current_exe().map_err(|e| err!("cannot find the hrt executable: {e}"))?;
    let platform = crate::platform::detect();
    let app_ring = if platform == hrt_abi::Platform::PvmEmulated { 3 } else { 0 };

    let mut jobs = plan::jobs(args, cpus);
    let mut failures: Vec<String> = Vec::new();
    for p in plan::programs(&jobs) {
        if !sources::available(p) {
            failures.push(format!("the source of '{p}' is not built into this hrt; its benchmarks were skipped"));
        }
    }
    jobs.retain(|j| j.program().is_none_or(sources::available));
    let built = sources::build(&plan::programs(&jobs))?;
    let cx = runner::Context { built: &built, hrt, cpus, quick: args.quick, app_ring, run_options: &args.run_option };

    let mut progress = progress::Progress::new(jobs.len());
    let mut records = Vec::new();
    for job in &jobs {
        progress.step(&job.label());
        let (recs, failure) = runner::run(job, &cx);
        records.extend(recs);
        if let Some(e) = failure {
            failures.push(e.to_string());
        }
    }
    progress.finish();

    let machine = machine::describe();
    let date = machine::now_utc();
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let rows = report::pair(&merge::rounds(records));
    println!("hrt bench: {} ({} vCPUs / threads), {date}", machine.platform, cpus);
    println!("host: {}, {} CPUs, {} MiB, {}", machine.cpu_model, machine.host_cpus, machine.mem_mib, machine.kernel);
    println!("HRT side: kernel primitives and programs under hrt run in guest ring {app_ring} (one ring)");
    report::print_tables(&rows);
    if let Some(path) = &args.json {
        let info = json::RunInfo {
            machine: &machine,
            date: &date,
            command: &command,
            cpus,
            quick: args.quick,
            app_ring,
            failures: &failures,
        };
        write_file(path, &json::render(&info, &rows))?;
    }
    if let Some(path) = &args.plot {
        let title = format!("hrt bench on {} ({cpus} CPUs), {date}", machine.cpu_model);
        write_file(path, &svg::render(&rows, &title))?;
    }
    for f in &failures {
        eprintln!("hrt: bench: {f}");
    }
    Ok(if failures.is_empty() { 0 } else { 1 })
}
