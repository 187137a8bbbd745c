//! Command-line interface.

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
}

#[derive(Args, Clone)]
pub struct SelftestArgs {
    /// Run only the tests whose names contain NAME ('-' boots and exits without tests)
    #[arg(long, value_name = "NAME")]
    pub filter: Option<String>,
    #[command(flatten)]
    pub vm: VmArgs,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IdleMode {
    /// Idle CPUs spin (lowest wake-up latency)
    Poll,
    /// Idle CPUs halt until an interrupt (saves host CPU time)
    Halt,
}

/// Options common to every command that creates a VM.
#[derive(Args, Clone)]
pub struct VmArgs {
    /// Number of vCPUs [default: the host's CPU count]
    #[arg(long, value_name = "N")]
    pub cpus: Option<u32>,
    /// Guest memory, e.g. 512M or 4G
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = parse_size)]
    pub mem: u64,
    /// Kernel image to boot instead of the one built into hrt
    #[arg(long, value_name = "PATH")]
    pub kernel: Option<std::path::PathBuf>,
    /// What idle vCPUs do
    #[arg(long, value_enum, default_value = "poll")]
    pub idle: IdleMode,
    /// Pin each vCPU thread to its own host CPU
    #[arg(long)]
    pub pin: bool,
    /// Preempt threads every US microseconds (default: no preemption)
    #[arg(long, value_name = "US")]
    pub preempt: Option<u64>,
    /// Split guest memory and vCPUs into N NUMA zones (emulated layout)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub numa: u32,
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
