//! Command-line interface.

use crate::platform::PlatformChoice;
use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(name = "hrt", version, about = "HRT: run parallel runtimes as the kernel, on KVM")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Boot the kernel and run its in-kernel self-tests
    Selftest(SelftestArgs),
    /// Print what a VM would get on this host (platform, vCPUs, memory, CPU features, TSC)
    Info(VmArgs),
    /// Run a static Linux x86-64 program as the kernel: hrt run [OPTIONS] -- PROG [ARGS...]
    Run(RunArgs),
    /// Benchmarks, Linux and HRT side by side: hrt bench [--suite S] [--quick] [--json F] [--plot F]
    Bench(crate::bench::BenchArgs),
    /// Boot the kernel's in-kernel benchmark suite (used by `hrt bench`)
    #[command(hide = true)]
    BenchKernel(crate::bench::KernelBenchArgs),
}

#[derive(Args, Clone)]
pub struct RunArgs {
    /// Privilege ring of the program [default: 3 on PVM hosts, 0 where guest ring 0 is native]
    #[arg(long, value_name = "RING", value_parser = clap::value_parser!(u32).range(0..=3))]
    pub app_ring: Option<u32>,
    /// Print every system call of the program (thread, name, arguments, result, L or F)
    #[arg(long)]
    pub strace: bool,
    /// Never rewrite the program's `syscall` instructions into calls into the kernel (with the
    /// kernel in ring 3, a site that ran once becomes `call *%rax`; see README)
    #[arg(long)]
    pub no_rewrite: bool,
    /// Forward each system call the host performs by a VM exit (hypercall) instead of through
    /// the shared-memory channel served by hrt's polling threads
    #[arg(long)]
    pub no_channel: bool,
    /// Make the pages above the break fault at once however the break moves (by default, after
    /// the 4th regrowth a lowering keeps up to 64 MiB of them present, and after 16 growths a
    /// growth makes the rest of the 2 MiB page it grows into present; both are zeroed when the
    /// break grows over them: a trimmed or small-stepped malloc heap then costs no TLB flush per
    /// trim and one fault per 2 MiB; see README, "Memory never given faults")
    #[arg(long)]
    pub exact_brk: bool,
    /// Sample where every vCPU is HZ times a second (1000 with `--profile` alone) and print the
    /// busiest functions, the program's and the kernel's, when the program ends (the host's
    /// `perf` cannot see into a PVM guest)
    #[arg(long, value_name = "HZ", num_args = 0..=1, require_equals = true, default_missing_value = "1000",
          value_parser = clap::value_parser!(u32).range(1..=20000))]
    pub profile: Option<u32>,
    /// Polling threads that serve forwarded calls from the shared-memory channel
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub service_threads: Option<u32>,
    /// How long (microseconds) a polling thread spins after the last forwarded call before it
    /// sleeps [default: 1000 with a host CPU to spare beyond the vCPUs, else 50]
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub service_spin: Option<u64>,
    /// Start the program with an empty environment instead of hrt's own
    #[arg(long)]
    pub clear_env: bool,
    /// Show the kernel's boot lines (quiet by default, so stderr is the program's own)
    #[arg(long, short)]
    pub verbose: bool,
    /// Let the program open files only under DIR (Landlock; a few /dev and time-zone files too)
    #[arg(long, value_name = "DIR")]
    pub sandbox: Option<std::path::PathBuf>,
    /// Which OpenMP runtime an OpenMP program runs on: the kernel's own (its libgomp entry
    /// points redirected to the kernel), its own libgomp, or the kernel's where it applies
    #[arg(long, value_enum, default_value = "auto", value_name = "RUNTIME")]
    pub omp: crate::overrides::OmpChoice,
    /// How the program's child processes run (vfork/posix_spawn then execve): `host`, as host
    /// processes of their own; `hrt`, each as an HRT process of its own (`hrt run` with this
    /// run's options)
    #[arg(long, value_enum, default_value = "host", value_name = "MODE")]
    pub children: ChildrenMode,
    /// argv[0] for the program instead of PROG (a script: its path among its interpreter's
    /// arguments), as execve gives it; used by `--children hrt`
    #[arg(long, value_name = "NAME", hide = true)]
    pub argv0: Option<std::ffi::OsString>,
    /// The file name the program's exec named (AT_EXECFN, its command name) instead of the
    /// path PROG was found at; used by `--children hrt`
    #[arg(long, value_name = "NAME", hide = true)]
    pub execfn: Option<std::ffi::OsString>,
    /// The program was exec'd through a descriptor (fexecve): its command name is the file's
    /// own; used by `--children hrt`
    #[arg(long, hide = true)]
    pub fexecve: bool,
    /// This `hrt` runs a child of another HRT program (`--children hrt`): a program killed by a
    /// signal is not reported here and `hrt` dies of that signal, so the parent's wait sees it
    #[arg(long, hide = true)]
    pub as_child: bool,
    /// `--children hrt`: descriptor FD holds the program's file for an fexecve of a
    /// close-on-exec descriptor: closed once the program is read, so the program does not
    /// inherit it (as the exec would have closed it)
    #[arg(long, value_name = "FD", hide = true)]
    pub close_fd: Option<i32>,
    /// `--children hrt`: descriptor FD is the parent `hrt`'s /dev/kvm, which this `hrt` uses
    /// (a program that changed its ids may no longer open the device) and closes at once
    #[arg(long, value_name = "FD", hide = true)]
    pub kvm_fd: Option<i32>,
    #[command(flatten)]
    pub vm: VmArgs,
    /// The program and its arguments
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "PROG [ARGS]")]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Args, Clone)]
pub struct SelftestArgs {
    /// Run only the tests whose names contain NAME ('-' boots and exits without tests)
    #[arg(long, value_name = "NAME")]
    pub filter: Option<String>,
    #[command(flatten)]
    pub vm: VmArgs,
}

/// `--children`: where the program's child processes run.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ChildrenMode {
    /// A child's `execve` starts the host program as a host process (McKernel-style delegation)
    Host,
    /// A child's `execve` starts `hrt run` with the program: an HRT process of its own (a new VM)
    Hrt,
}

/// The host pages backing guest RAM.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HostPages {
    /// Transparent huge pages where the host allows them: a touched 4 KiB guest page costs the
    /// host up to 2 MiB, memory-bound programs run faster
    #[value(name = "2m")]
    Huge,
    /// Ordinary 4 KiB pages: the host commits only what the program touches
    #[value(name = "4k")]
    Small,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IdleMode {
    /// Poll while every vCPU has a host CPU of its own, halt when vCPUs outnumber host CPUs
    /// (spinning vCPUs would take host time from the ones with work); an idle vCPU of `hrt run`
    /// halts after 1 ms of polling when the vCPUs take every host CPU, else after 10 ms
    Auto,
    /// Idle CPUs spin (lowest wake-up latency)
    Poll,
    /// Idle CPUs spin briefly, then halt until an interrupt (saves host CPU time)
    Halt,
}

/// Where the kernel's OpenMP runtime puts its threads when the vCPUs outnumber the host's CPUs.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Overcommit {
    /// On as many vCPUs as the host has CPUs: threads that wait for each other take turns
    /// there, the other vCPUs stay halted; a team bound to places (OMP_PROC_BIND, OMP_PLACES)
    /// too, each thread keeping its place number with the packed vCPU as its CPU mask
    Pack,
    /// Over every vCPU, each a host thread that the host schedules
    Spread,
}

/// Options common to every command that creates a VM.
#[derive(Args, Clone)]
pub struct VmArgs {
    /// Number of vCPUs [default: the host's CPU count]
    #[arg(long, value_name = "N")]
    pub cpus: Option<u32>,
    /// Guest memory, e.g. 512M or 4G [default: 1G for selftest and info; for run 64G, or the host's memory up to 128G]
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub mem: Option<u64>,
    /// Kernel image to boot instead of the one built into hrt
    #[arg(long, value_name = "PATH")]
    pub kernel: Option<std::path::PathBuf>,
    /// What idle vCPUs do
    #[arg(long, value_enum, default_value = "auto")]
    pub idle: IdleMode,
    /// Pin each vCPU thread to its own host CPU
    #[arg(long)]
    pub pin: bool,
    /// With more vCPUs than host CPUs: where the program's threads go (those it binds go where
    /// it binds them)
    #[arg(long, value_enum, default_value = "pack")]
    pub overcommit: Overcommit,
    /// Preempt a thread after US microseconds while others wait for its CPU; 0: never
    /// [default: 10000 for `hrt run`, none for `selftest` and `bench`]
    #[arg(long, value_name = "US")]
    pub preempt: Option<u64>,
    /// Where the kernel's ring 0 runs: auto-detected, or forced
    #[arg(long, value_enum, default_value = "auto")]
    pub platform: PlatformChoice,
    /// Ring of the kernel's hot paths on a PVM host: 3 (default: with the program, system calls
    /// without a mode switch) or 0 (separated from the program, at emulated ring 0's cost)
    #[arg(long, value_name = "RING", value_parser = clap::builder::PossibleValuesParser::new(["0", "3"]))]
    pub kernel_ring: Option<String>,
    /// Split guest memory and vCPUs into N NUMA zones (emulated layout)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub numa: u32,
    /// Run the vCPU threads without their seccomp filter (the host calls they may make)
    #[arg(long)]
    pub no_seccomp: bool,
    /// Host pages behind guest RAM: 2m (transparent huge pages) or 4k
    #[arg(long, value_enum, default_value = "2m", value_name = "SIZE")]
    pub host_pages: HostPages,
}

/// Prints a command-line error as one `hrt: ...` line (help and version print as usual).
pub fn report_parse_error(e: clap::Error) -> std::process::ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            std::process::ExitCode::from(if e.use_stderr() { 2 } else { 0 })
        }
        _ => {
            let text = e.to_string();
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("invalid command line");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("hrt: {first} (see hrt --help)");
            std::process::ExitCode::from(2)
        }
    }
}

/// Parses sizes like 512M, 4G, 65536, 2g, 1.5G.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M') => (&t[..t.len() - 1], 1 << 20),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        Some('T') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    let value: f64 = num.parse().map_err(|_| format!("'{s}' is not a size (examples: 512M, 4G)"))?;
    if value.is_nan() || value <= 0.0 {
        return Err(format!("'{s}' is not a positive size"));
    }
    Ok((value * mult as f64) as u64)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("4g"), Ok(4 << 30));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("0").is_err());
        assert!(parse_size("-1G").is_err());
    }
}
