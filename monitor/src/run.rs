//! `hrt run`: boot the kernel with a program to run as its application.

use std::os::unix::ffi::{OsStrExt, OsStringExt};

use crate::cli::RunArgs;
use crate::error::err;
use crate::error::Result;
use crate::kernel_image::KernelImage;
use crate::program::Program;
use crate::vm::{self, ProgramSetup};

/// Preemption quantum of `hrt run` unless `--preempt` says otherwise (0: never).
const DEFAULT_RUN_PREEMPT_US: u64 = 10_000;

/// `--as-child`: this `hrt` runs a child of another HRT program (`--children hrt`).
static AS_CHILD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Signals sent to `hrt` (all but those it keeps, `host_signals::passed_on`: Ctrl-C, SIGTERM,
/// SIGHUP, Ctrl-Z's SIGTSTP, SIGCONT, SIGCHLD, real-time signals, ...) go to the program once
/// its kernel runs: it may handle them, and
/// their default actions act on it (end it with 128 + signal, stop it, nothing). Before that
/// they act on `hrt` as they would on the program: the terminating ones stop the VM at once and
/// `hrt` exits as a shell reports a program killed by them (130, 143, 129, ...). Installed with
/// SA_SIGINFO: the program sees the sender's pid, uid and value, or a child's SIGCHLD
/// information, as Linux gives them (`vm::channel::host_siginfo`).
extern "C" fn stop_on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    if crate::vm::host_signals::program_ended() {
        // `hrt` is only exiting with the program's status now.
        return;
    }
    if sig == libc::SIGCONT {
        crate::forward::tty_stop::note_continued();
    }
    if crate::vm::host_signals::deliver(sig, info) {
        return;
    }
    if sig == libc::SIGTSTP || sig == libc::SIGTTIN || sig == libc::SIGTTOU {
        // Not yet running the program: `hrt` stops as it would, with the same signal.
        crate::stop_signal::stop_with(sig);
        return;
    }
    if !crate::vm::host_signals::ends_by_default(sig) {
        return;
    }
    if crate::inherited_signals::was_ignored(sig) {
        // Not yet running the program, which starts with this signal ignored.
        return;
    }
    if crate::vm::is_fork_child() || AS_CHILD.load(std::sync::atomic::Ordering::Relaxed) {
        // Not yet running the program: a forked (or spawned) child dies of the signal, as it
        // would on Linux.
        crate::vm::die_of(sig)
    }
    if ends_by_sigint(sig) {
        crate::vm::die_of(sig)
    }
    // SAFETY: _exit is async-signal-safe; the program's output is already on the host
    // descriptors (the monitor buffers nothing).
    unsafe { libc::_exit(128 + sig) }
}

/// Whether `hrt` dies of signal `sig` that ended the program, rather than exiting with 128 +
/// `sig` (every other signal: a shell shows the same status, and `hrt`'s own report of a crash
/// stays the only one): SIGINT, since a shell script goes on after a child that exited with 130
/// (it handled the Ctrl-C) but ends itself after one that died of it, as after the program
/// natively (bash's rule; a loop of `hrt run` commands could not be stopped with Ctrl-C).
pub fn ends_by_sigint(sig: i32) -> bool {
    sig == libc::SIGINT
}

/// SIGXFSZ: one the host raised because a forwarded write went past the file size limit comes
/// from `hrt` itself (SI_USER with `hrt`'s pid, Linux's send_sig): the program's kernel raises
/// its own, in the writing thread before the write returns, as Linux does, so this one is
/// dropped. One sent by another process is passed on as every other signal is.
extern "C" fn on_file_size_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler; getpid is
    // async-signal-safe.
    let own = unsafe { (*info).si_code == libc::SI_USER && (*info).si_pid() == libc::getpid() };
    if !own {
        stop_on_signal(sig, info, std::ptr::null_mut());
    }
}

/// `nr::HOST_SIGNAL_ACTION`: `hrt` takes the program's disposition of SIGTTIN, SIGTTOU or
/// SIGCHLD (`action`: a `hrt_abi::signal_action`). The host's terminal consults the first two
/// when the program, in a background job, reads it or writes it (with TOSTOP): the default
/// stops `hrt` with that signal (continued, it passes SIGCONT on, see `stop_on_signal`);
/// ignored, the read fails with EIO and the write goes through; a handler passes the signal on
/// to the program and, being installed without SA_RESTART, makes the host call fail with
/// EINTR, which the program sees. SIGCHLD ignored or with SA_NOCLDWAIT makes the host reap the
/// program's ended children (`hrt`'s host children) at once, as Linux would the program's; with
/// SA_NOCLDSTOP the host sends no SIGCHLD when one of them stops or continues, as Linux would
/// send none to the program.
/// Returns 0, or a negated errno.
pub fn mirror_signal_action(sig: libc::c_int, action: u64) -> i64 {
    use hrt_abi::signal_action::{DEFAULT, HANDLER, IGNORE, NO_CHILD_STOP, NO_CHILD_WAIT};
    let failed = || -(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL) as i64);
    if sig == libc::SIGCHLD {
        // SAFETY: a zeroed sigaction with an empty mask, then the handler and flags.
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = match action & !(NO_CHILD_WAIT | NO_CHILD_STOP) {
            IGNORE => libc::SIG_IGN,
            DEFAULT | HANDLER => stop_on_signal as *const () as libc::sighandler_t,
            _ => return -(libc::EINVAL as i64),
        };
        sa.sa_flags = libc::SA_RESTART
            | libc::SA_SIGINFO
            | if action & NO_CHILD_WAIT != 0 { libc::SA_NOCLDWAIT } else { 0 }
            | if action & NO_CHILD_STOP != 0 { libc::SA_NOCLDSTOP } else { 0 };
        // SAFETY: installs the disposition built above; the handler is async-signal-safe.
        return if unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) } == 0 { 0 } else { failed() };
    }
    if sig != libc::SIGTTIN && sig != libc::SIGTTOU {
        return -(libc::EINVAL as i64);
    }
    if sig == libc::SIGTTIN {
        // The default: ignored by `hrt`, which stops itself (forward/tty_stop.rs).
        let r = crate::forward::tty_stop::manage(action == DEFAULT);
        if action == DEFAULT {
            return if r == 0 { 0 } else { failed() };
        }
    }
    // SAFETY: a zeroed sigaction with an empty mask and no flags, then the handler field.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = match action {
        DEFAULT => libc::SIG_DFL,
        IGNORE => libc::SIG_IGN,
        HANDLER => stop_on_signal as *const () as libc::sighandler_t,
        _ => return -(libc::EINVAL as i64),
    };
    if action == HANDLER {
        sa.sa_flags = libc::SA_SIGINFO;
    }
    // SAFETY: installs the disposition built above; the handler is async-signal-safe.
    if unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) } != 0 {
        return failed();
    }
    0
}

fn install_stop_handlers() {
    // Every signal but those `hrt` keeps for itself (`host_signals::passed_on`): Ctrl-C,
    // SIGTERM, SIGHUP, a host child's SIGCHLD (forward/procs.rs), a forwarded descriptor's
    // SIGIO and SIGURG, and whatever another process sends, real-time signals included (but
    // not the SIGXFSZ of a forwarded write past the file size limit: `on_file_size_signal`).
    for sig in (1..=64).filter(|&s| crate::vm::host_signals::passed_on(s)) {
        if sig == libc::SIGCHLD && crate::inherited_signals::was_ignored(sig) {
            // Started with SIGCHLD ignored: the program's children are reaped as they end, as
            // they would be natively (`mirror_signal_action`).
            continue;
        }
        if sig == libc::SIGXFSZ {
            // SAFETY: a zeroed sigaction with an empty mask, then the handler and flags.
            let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
            sa.sa_sigaction = on_file_size_signal as *const () as libc::sighandler_t;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            // SAFETY: installs a handler that makes only async-signal-safe calls.
            unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) };
            continue;
        }
        // SAFETY: a zeroed sigaction with an empty mask, then the handler and flags (those
        // signal(3) gives, and SA_SIGINFO).
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = stop_on_signal as *const () as libc::sighandler_t;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        // SAFETY: installing a handler that makes only async-signal-safe calls.
        unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) };
    }
    // A background job's terminal reads: while SIGTTIN has its default action (unless `hrt`
    // was started with it ignored: the program then inherits that), `hrt` ignores it and stops
    // itself (forward/tty_stop.rs).
    // SAFETY: an all-zero sigaction is valid; sigaction with a NULL new action only reads.
    let mut ttin: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::sigaction(libc::SIGTTIN, std::ptr::null(), &mut ttin) } == 0 && ttin.sa_sigaction == libc::SIG_DFL
    {
        crate::forward::tty_stop::manage(true);
    }
    // A forwarded write into a pipe whose reader quit must fail with EPIPE (the kernel then
    // raises SIGPIPE for the program), never kill hrt itself. Rust's runtime ignores SIGPIPE
    // already; say so here rather than rely on it.
    // SAFETY: setting a signal's disposition to SIG_IGN.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    // Credential calls made on every thread (capset, the security bits, ...).
    crate::every_thread::install();
    // The signals `hrt` uses itself go to the program too when another process sends them.
    crate::shared_signals::install(stop_on_signal);
}

/// `--omp` for the program `hrt run` starts (`overrides::choice`): entries for the kernel to
/// patch at load (a static program), and what to do with a dynamically linked program's
/// shared libgomp when ld.so maps it; `--omp kernel` is refused, with the reason, where it
/// cannot apply.
fn omp_overrides(
    args: &RunArgs,
    program: &Program,
    one_ring: bool,
    packed: bool,
) -> Result<(Vec<u8>, Option<crate::overrides::LibraryUse>)> {
    crate::overrides::choice::for_program(args.omp, program, one_ring, packed, args.verbose)
        .map(|plan| (plan.entries, plan.library))
        .map_err(|why| err!("--omp kernel: {}: {why}; run it with --omp libgomp (on its own runtime)", program.given))
}

/// With more vCPUs than host CPUs (`pack_on` of them take threads): whether the program's
/// OpenMP runtime is LLVM's libomp, whose threads then go to the first `pack_on` vCPUs
/// (`overrides::yielding_runtime`).
fn packs_libomp(args: &RunArgs, program: &Program, pack_on: u32) -> bool {
    let Some(lib) = crate::overrides::yielding_runtime::libomp_in(&program.bytes) else { return false };
    if args.verbose {
        eprintln!(
            "hrt: the program's OpenMP runtime is LLVM's ({lib}), which counts the CPUs of its mask and yields in its spin waits: its threads go to the first {pack_on} vCPUs, which its CPU mask names (sched_getaffinity), as a cpuset would"
        );
    }
    true
}

pub fn run(args: &RunArgs) -> Result<u8> {
    let (prog, rest) = args.command.split_first().ok_or_else(|| err!("no program given: hrt run -- PROG [ARGS]"))?;
    let given = prog.to_str().ok_or_else(|| err!("the program path is not valid UTF-8"))?;
    // As a shell does: a name without a slash is looked up in PATH; argv[0] stays as given.
    let found = crate::program_path::resolve(given).ok_or_else(|| {
        crate::error::Error::with_status(format!("{given}: command not found in PATH"), crate::error::NOT_FOUND)
    })?;
    let found_str = found.to_str().unwrap_or(given);
    // A `#!` script runs its interpreter with the script's path (as found) as an argument.
    let script = crate::script::interpreter(given, &found)?;
    let program = match &script {
        // A missing interpreter is 127, as bash reports it; one that cannot run is 126.
        Some(interp) => Program::open(&interp.path).map_err(|e| {
            let missing = e.exit_status() == crate::error::NOT_FOUND;
            let why = if missing { "No such file or directory" } else { "not runnable" };
            let status = if missing { crate::error::NOT_FOUND } else { crate::error::CANNOT_EXECUTE };
            crate::error::Error::with_status(format!("{given}: {}: bad interpreter: {why}", interp.path), status)
        })?,
        None => Program::open(found_str)?,
    };
    // An exec of a descriptor names the process after the file: its link, read before the
    // descriptor is closed below.
    let fexecve_file = args.fexecve.then(|| std::fs::read_link(found_str).ok()).flatten();
    if let Some(fd) = args.close_fd.filter(|&fd| fd > 2) {
        // SAFETY: closes a descriptor the parent `hrt` placed for this exec only (the program
        // was read through a descriptor of its own), before anything of ours could take it.
        unsafe { libc::close(fd) };
    }
    // A child of another HRT program (`--children hrt`) uses its parent's /dev/kvm: the
    // program may have changed its ids to ones that may not open the device (a daemon that
    // dropped root and then spawned a program got "no permission to open /dev/kvm").
    let kvm = match args.kvm_fd {
        Some(fd) => vm::kvm_from_inherited(fd).map_or_else(vm::open_kvm, Ok)?,
        None => vm::open_kvm()?,
    };
    // The VM and KVM's CPUID, made while the rest of the start goes on (vm/prepare.rs).
    let prepared = vm::prepare::start(&kvm);
    let mut vm_args = args.vm.clone();
    // Untouched guest memory costs the host nothing; thread stacks and HPC codes' static
    // arrays need plenty (run_memory.rs).
    // Under `ulimit -v` or `ulimit -d` the guest's memory must fit beside hrt's own mappings.
    let cpus_asked = vm_args.cpus.unwrap_or_else(crate::host_cpus::count);
    match (vm_args.mem, crate::run_memory::address_space_budget(cpus_asked)) {
        (_, Some(budget)) if budget < crate::vm::MIN_MEM => {
            return Err(err!(
                "the address-space or data limit (ulimit -v, ulimit -d) is too small for hrt: its own mappings and the guest's \
                 memory need at least {} MiB; raise the limit",
                (crate::vm::MIN_MEM + crate::run_memory::OWN_ADDRESS_SPACE) >> 20
            ))
        }
        (Some(mem), Some(budget)) if mem > budget => {
            return Err(err!(
                "--mem {} MiB does not fit the address-space or data limit (ulimit -v, ulimit -d) of hrt: at most {} MiB do, \
                 besides what hrt needs itself; give less memory or raise the limit",
                mem >> 20,
                budget >> 20
            ))
        }
        (None, Some(budget)) => vm_args.mem = Some(crate::run_memory::default_run_mem().min(budget)),
        _ => {}
    }
    vm_args.mem.get_or_insert_with(crate::run_memory::default_run_mem);
    // Programs get preemption while threads wait for a CPU (the kernel arms the tick only
    // then): spin-waiting threads that outnumber the vCPUs would otherwise never hand over.
    vm_args.preempt.get_or_insert(DEFAULT_RUN_PREEMPT_US);
    let mut config = crate::vm_args::config(&vm_args, &kvm, String::from("run"))?;
    let app_ring = args.app_ring.unwrap_or(if config.platform == hrt_abi::Platform::PvmEmulated { 3 } else { 0 });
    if app_ring != 0 && app_ring != 3 {
        return Err(err!("--app-ring {app_ring}: the program runs in ring 0 or ring 3"));
    }
    let mut argv: Vec<Vec<u8>> = match &script {
        Some(interp) => {
            let mut v = vec![interp.path.as_bytes().to_vec()];
            v.extend(interp.arg.iter().map(|a| a.as_bytes().to_vec()));
            v.push(args.argv0.as_ref().map_or(found_str.as_bytes(), |a| a.as_bytes()).to_vec());
            v
        }
        None => vec![args.argv0.as_ref().map_or(given.as_bytes(), |a| a.as_bytes()).to_vec()],
    };
    argv.extend(rest.iter().map(|a| a.as_bytes().to_vec()));
    // Other processes see the program here, not `hrt run ...` (host_name.rs).
    // AT_EXECFN and the command name, as a shell's exec of the path found gives them (or the
    // parent's exec, `--children hrt`).
    let execfn = args.execfn.as_ref().map_or(found_str.as_bytes(), |n| n.as_bytes()).to_vec();
    let comm = match fexecve_file {
        Some(file) => crate::host_name::comm_of_file(file.as_os_str().as_bytes()),
        None => crate::host_name::comm_of(&execfn),
    };
    crate::host_name::become_program(comm, &argv);
    let mut envp: Vec<Vec<u8>> = if args.clear_env {
        Vec::new()
    } else {
        std::env::vars_os()
            .map(|(k, v)| {
                let mut e = k.as_bytes().to_vec();
                e.push(b'=');
                e.extend_from_slice(v.as_bytes());
                e
            })
            .collect()
    };
    if crate::mpi_env::adjust(&mut envp) && args.verbose {
        eprintln!("hrt: an MPI rank: UCX_POSIX_USE_PROC_LINK=n added to its environment (UCX's /proc/<pid>/fd/<fd> links name host descriptors, not the program's)");
    }
    let kernel_in_ring3 = config.platform == hrt_abi::Platform::PvmEmulated && !config.kernel_ring0;
    let one_ring = app_ring == 0 || kernel_in_ring3;
    let (overrides, omp_library) = omp_overrides(args, &program, one_ring, config.pack_on > 0)?;
    let pack_threads = config.pack_on > 0 && packs_libomp(args, &program, config.pack_on);
    // An OpenMP program's first parallel region would otherwise start the other CPUs.
    let cpus_at_boot = config.cpus > 1 && crate::overrides::parallel::has_openmp(&program.bytes);
    if args.verbose && config.cpus > 1 {
        eprintln!(
            "hrt: {}",
            if cpus_at_boot {
                "the program has an OpenMP runtime: its kernel starts every vCPU at boot"
            } else {
                "the program starts on vCPU 0; the others start when it first places a thread on one"
            }
        );
    }
    if args.profile.is_some() && args.no_channel {
        return Err(err!("--profile needs the forwarding channel, which --no-channel turns off"));
    }
    config.program = Some(ProgramSetup {
        program,
        argv,
        envp,
        execfn,
        comm,
        app_ring,
        strace: args.strace,
        no_rewrite: args.no_rewrite,
        no_channel: args.no_channel,
        exact_brk: args.exact_brk,
        profile_hz: args.profile.unwrap_or(0),
        service_threads: args.service_threads,
        service_spin_us: args.service_spin,
        verbose: args.verbose,
        sandbox: args.sandbox.clone(),
        overrides,
        omp_library,
        exec_omp: crate::overrides::choice::ExecPolicy {
            choice: args.omp,
            one_ring,
            packed: config.pack_on > 0,
            verbose: args.verbose,
        },
        child_process: args.as_child,
        pack_threads,
        cpus_at_boot,
        sig_ignored: crate::inherited_signals::ignored(),
        sig_mask: crate::inherited_signals::mask(),
    });
    if args.children == crate::cli::ChildrenMode::Hrt {
        let command = crate::child_args::child_command(args)?;
        // Command-line arguments hold no NUL byte.
        let command = command.into_iter().filter_map(|a| std::ffi::CString::new(a.into_vec()).ok()).collect();
        crate::forward::run_children_as_hrt(command, std::os::unix::io::AsRawFd::as_raw_fd(&kvm));
    }
    let image = KernelImage::load(args.vm.kernel.as_deref())?;
    AS_CHILD.store(args.as_child, std::sync::atomic::Ordering::Relaxed);
    // The program starts with the mask `hrt` inherited; `hrt` must see every host signal.
    crate::inherited_signals::unblock_all();
    install_stop_handlers();
    crate::taken_signals::take_in_order()?;
    crate::terminal_modes::save();
    crate::forward::exec_marks::init();
    if !args.as_child {
        // Before the program can fork: its forked children may signal it (`kill`).
        crate::forward::note_program_root();
    }
    let status = vm::run_prepared(kvm, prepared, config, &image)?;
    // As a forked child's `hrt` does: its memory outlives it until the late teardown, and its
    // System V segments stayed attached meanwhile (`ipcs` right after `hrt` returned still
    // listed a segment the program had removed).
    vm::release_shared_memory();
    match vm::end_signal() {
        // A spawned child dies of the signal that ended its program, as a forked one does; so
        // does `hrt` itself for SIGINT (`ends_by_sigint`).
        Some(sig) if args.as_child || ends_by_sigint(sig) => vm::die_of(sig),
        Some(_) => {
            crate::terminal_modes::restore_after_signal_death();
            Ok(status)
        }
        None => Ok(status),
    }
}
