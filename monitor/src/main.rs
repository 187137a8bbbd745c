//! `hrt`: boots the HRT kernel in a KVM virtual machine.
mod bench;
mod child_args;
mod cli;
mod elf_headers;
mod elf_look;
mod error;
mod every_thread;
mod file_bytes;
mod forward;
mod host_cpus;
mod host_load;
mod host_name;
mod info;
mod inherited_signals;
mod interp;
mod kept_signals;
mod kernel_image;
mod mpi_env;
mod overrides;
mod placed_image;
mod platform;
mod profile_report;
mod program;
mod program_path;
mod raw_sys;
mod run;
mod run_memory;
mod script;
mod selftest;
mod shared_signals;
mod signal_safe;
mod stop_signal;
mod taken_signals;
mod terminal_modes;
mod vm;
mod vm_args;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return cli::report_parse_error(e),
    };
    let result = match cli.command {
        cli::Command::Selftest(args) => selftest::run(&args),
        cli::Command::Info(args) => info::print(&args),
        cli::Command::Run(args) => run::run(&args),
        cli::Command::Bench(args) => bench::run(&args),
        cli::Command::BenchKernel(args) => bench::run_kernel_suite(&args),
    };
    match result {
        Ok(status) => ExitCode::from(status),
        Err(e) => {
            eprintln!("hrt: {e}");
            ExitCode::from(e.exit_status())
        }
    }
}
