//! `--children hrt`: the `hrt run` options a child of the program runs with. A child is an HRT
//! process like its parent, so it gets the parent's options, with three exceptions:
//! `--clear-env` (the child's environment is the one its `execve` passed), `--omp kernel`
//! (becomes `auto`: a child that is no OpenMP program, a shell or `cat`, must not be refused)
//! and the hidden per-program `--argv0`, `--execfn` and `--fexecve` (the spawner adds the child's own). Paths (`--sandbox`,
//! `--kernel`) are made absolute here: the child may start in another directory. The struct
//! patterns below are exhaustive, so a new option cannot be forgotten.

use std::ffi::OsString;

use crate::cli::{RunArgs, VmArgs};
use crate::error::{err, Result};
use crate::overrides::OmpChoice;

/// `hrt run OPTIONS --as-child` for a child of the program run with `args` (what follows is
/// `--argv0 NAME --execfn NAME [--fexecve] -- PATH ARGS`, added per child).
pub fn child_command(args: &RunArgs) -> Result<Vec<OsString>> {
    let RunArgs {
        app_ring,
        strace,
        no_rewrite,
        no_channel,
        exact_brk,
        // Only the program run by the user is profiled: children's reports would pile up.
        profile: _,
        service_threads,
        service_spin,
        clear_env: _,
        verbose,
        sandbox,
        omp,
        children,
        argv0: _,
        execfn: _,
        fexecve: _,
        as_child: _,
        close_fd: _,
        kvm_fd: _,
        vm,
        command: _,
    } = args;
    let mut out: Vec<OsString> = vec!["hrt".into(), "run".into()];
    let mut opt = |name: &str, value: Option<OsString>| {
        out.push(format!("--{name}").into());
        out.extend(value);
    };
    if let Some(r) = app_ring {
        opt("app-ring", Some(r.to_string().into()));
    }
    for (on, name) in [
        (*strace, "strace"),
        (*no_rewrite, "no-rewrite"),
        (*no_channel, "no-channel"),
        (*exact_brk, "exact-brk"),
        (*verbose, "verbose"),
    ] {
        if on {
            opt(name, None);
        }
    }
    if let Some(n) = service_threads {
        opt("service-threads", Some(n.to_string().into()));
    }
    if let Some(us) = service_spin {
        opt("service-spin", Some(us.to_string().into()));
    }
    if let Some(dir) = sandbox {
        opt("sandbox", Some(absolute(dir, "--sandbox")?));
    }
    let omp = if *omp == OmpChoice::Kernel { OmpChoice::Auto } else { *omp };
    opt("omp", Some(name(&omp)));
    opt("children", Some(name(children)));
    let VmArgs {
        cpus,
        mem,
        kernel,
        idle,
        pin,
        overcommit,
        preempt,
        platform,
        kernel_ring,
        numa,
        no_seccomp,
        host_pages,
    } = vm;
    if let Some(n) = cpus {
        opt("cpus", Some(n.to_string().into()));
    }
    if let Some(bytes) = mem {
        opt("mem", Some(bytes.to_string().into()));
    }
    if let Some(k) = kernel {
        opt("kernel", Some(absolute(k, "--kernel")?));
    }
    opt("idle", Some(name(idle)));
    if *pin {
        opt("pin", None);
    }
    opt("overcommit", Some(name(overcommit)));
    if let Some(us) = preempt {
        opt("preempt", Some(us.to_string().into()));
    }
    opt("platform", Some(name(platform)));
    if let Some(r) = kernel_ring {
        opt("kernel-ring", Some(r.into()));
    }
    opt("numa", Some(numa.to_string().into()));
    if *no_seccomp {
        opt("no-seccomp", None);
    }
    opt("host-pages", Some(name(host_pages)));
    opt("as-child", None);
    Ok(out)
}

/// An option's value as the command line names it.
fn name(value: &impl clap::ValueEnum) -> OsString {
    value.to_possible_value().map_or_else(OsString::new, |v| v.get_name().into())
}

/// `path` made absolute against `hrt`'s working directory (not resolved further: a sandbox
/// directory that is a symbolic link stays one, as given).
fn absolute(path: &std::path::Path, option: &str) -> Result<OsString> {
    std::path::absolute(path).map(|p| p.into_os_string()).map_err(|e| err!("{option} {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;
    use crate::cli::{ChildrenMode, Cli, Command, HostPages, IdleMode, Overcommit};

    fn run_args(line: &[&str]) -> RunArgs {
        match Cli::try_parse_from(line).expect("parses").command {
            Command::Run(a) => a,
            _ => unreachable!(),
        }
    }

    /// The options given to a child, parsed back, are the parent's (but for what changes).
    #[test]
    fn round_trip() {
        let parent = run_args(&[
            "hrt",
            "run",
            "--app-ring",
            "3",
            "--strace",
            "--no-rewrite",
            "--no-channel",
            "--exact-brk",
            "--service-threads",
            "2",
            "--service-spin",
            "77",
            "--clear-env",
            "-v",
            "--sandbox",
            "rel/dir",
            "--omp",
            "kernel",
            "--children",
            "hrt",
            "--cpus",
            "3",
            "--mem",
            "1536M",
            "--kernel",
            "/k.elf",
            "--idle",
            "halt",
            "--pin",
            "--overcommit",
            "spread",
            "--preempt",
            "500",
            "--platform",
            "pvm",
            "--kernel-ring",
            "0",
            "--numa",
            "2",
            "--no-seccomp",
            "--host-pages",
            "4k",
            "--argv0",
            "x",
            "--execfn",
            "/x",
            "--fexecve",
            "--",
            "prog",
            "a",
        ]);
        let mut line: Vec<OsString> = child_command(&parent).unwrap();
        line.extend(["--".into(), "/bin/child".into()]);
        let child = match Cli::try_parse_from(&line).expect("parses").command {
            Command::Run(a) => a,
            _ => unreachable!(),
        };
        assert_eq!(child.app_ring, Some(3));
        assert!(
            child.strace && child.no_rewrite && child.no_channel && child.exact_brk && child.verbose && child.as_child
        );
        assert!(!child.clear_env && child.argv0.is_none() && child.execfn.is_none() && !child.fexecve);
        assert_eq!((child.service_threads, child.service_spin), (Some(2), Some(77)));
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(child.sandbox, Some(cwd.join("rel/dir")));
        assert!(child.omp == OmpChoice::Auto && child.children == ChildrenMode::Hrt);
        let vm = &child.vm;
        assert_eq!((vm.cpus, vm.mem, vm.preempt, vm.numa), (Some(3), Some(1536 << 20), Some(500), 2));
        assert_eq!(vm.kernel.as_deref(), Some(std::path::Path::new("/k.elf")));
        assert!(vm.idle == IdleMode::Halt && vm.pin && vm.overcommit == Overcommit::Spread);
        assert!(vm.platform == parent.vm.platform && vm.kernel_ring.as_deref() == Some("0"));
        assert!(vm.no_seccomp && vm.host_pages == HostPages::Small);
        assert_eq!(child.command, ["/bin/child"]);
    }

    /// Without options the child gets the defaults, and only the marker that it is a child.
    #[test]
    fn defaults_stay_defaults() {
        let line: Vec<OsString> = child_command(&run_args(&["hrt", "run", "prog"])).unwrap();
        let child = run_args(&line.iter().map(|s| s.to_str().unwrap()).chain(["prog"]).collect::<Vec<_>>());
        assert!(child.as_child && child.omp == OmpChoice::Auto && child.children == ChildrenMode::Host);
        assert!(child.vm.cpus.is_none() && child.vm.mem.is_none() && child.vm.preempt.is_none());
    }
}
