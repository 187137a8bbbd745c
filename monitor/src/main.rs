//! `hrt`: boots the HRT kernel in a KVM virtual machine.
mod cli;
mod error;
mod info;
mod kernel_image;
mod platform;
mod vm;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let result = match cli.command {
        cli::Command::Selftest(args) => vm::run_selftest(&args),
        cli::Command::Info(args) => info::print(&args),
    };
    match result {
        Ok(status) => ExitCode::from(status),
        Err(e) => {
            eprintln!("hrt: {e}");
            ExitCode::from(e.exit_status())
        }
    }
}
