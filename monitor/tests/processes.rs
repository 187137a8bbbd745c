//! Child processes (`--children host`): tests/programs/hostile/procs_spawn.c (system, popen,
//! posix_spawn with file actions and attributes, vfork, wait4/waitid, kill, process groups,
//! SIGCHLD, CLOEXEC, exec errors), procs_hostile.c (exec with bad pointers from a vfork
//! child, /proc/self/exe), kill_group.c (kill(0), kill(-pgrp), kill(-1), signals between
//! parent, child and grandchild, SIGCHLD ignored or SA_NOCLDWAIT), child_stop_sigchld.c
//! (SA_NOCLDSTOP), sigchld_before_wait_returns.c (a late SIGCHLD and a later wait) and
//! fexecve_children.c (fexecve of memfds from vfork and fork children), each
//! compared with its native run with one vCPU and with two; a process sharing the descriptor
//! table refused with one line (fork itself: fork.rs).

mod common;
use common::hostile::{
    assert_same, build, build_dynamic, hrt, native, passes_natively_and_same_on_1_and_2_cpus,
    passes_natively_and_same_with, repo_root,
};

#[test]
fn spawned_children_behave_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("procs_spawn", Some("SIGCHLD handler ran: 1"));
}

/// The same program linked dynamically (glibc's shared posix_spawn, system and popen).
#[test]
fn spawned_children_of_a_dynamic_program() {
    let source = repo_root().join("tests/programs/hostile/procs_spawn.c");
    let prog = build_dynamic(&source, "procs_spawn", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    let got = hrt(&["--cpus", "2"], &prog, &[]);
    assert_same("dynamic procs_spawn", &linux, &got);
}

#[test]
fn exec_checks_the_programs_pointers() {
    passes_natively_and_same_on_1_and_2_cpus("procs_hostile", Some("argv entry unmapped: exited 14"));
}

/// `/proc/<hrt's pid>/exe` is the program's own /proc/self/exe: exec runs the program, never hrt.
#[test]
fn exec_of_the_monitors_proc_entry_runs_the_program() {
    let prog = build("procs_hostile", &[]);
    let got = hrt(&["--cpus", "1"], &prog, &["monitor-proc"]);
    assert_eq!(got.code(), 0, "{got:?}");
    assert_eq!(got.stdout, "exe child: argc 2\nmonitor's exe: exited 6\n", "{got:?}");
}

/// A child process sharing the parent's descriptor table (CLONE_FILES without CLONE_VM) is not
/// supported: ENOSYS, said once on stderr.
#[test]
fn a_process_sharing_descriptors_is_refused_with_one_line() {
    let prog = build("procs_hostile", &[]);
    let got = hrt(&["--cpus", "1"], &prog, &["clone-files"]);
    assert_eq!(got.code(), 0, "{got:?}");
    assert_eq!(got.stdout, "clone-files: -1 errno 38\nclone-files again: -1 errno 38\n");
    assert_eq!(got.stderr.matches("is not supported: returning ENOSYS").count(), 1, "{}", got.stderr);
}

/// kill(0) and kill(-own group) reach the caller before they return and its children too; a
/// grandchild and a forked child's parent may be signalled; real-time signals, SIGURG and
/// SIGPROF from another process reach the program; SIGCHLD ignored or with SA_NOCLDWAIT leaves
/// no zombie.
#[test]
fn kill_of_groups_and_family_and_child_reaping_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("kill_group", Some("SIG_DFL again: status 4"));
}

/// A child's exec (fork, vfork after a chdir, posix_spawn; through links and a `#!` script)
/// starts a host program that sees AT_EXECFN, its command name and the script's name as Linux
/// gives them (they were hrt's resolved path), and its inherited descriptor's F_GETFL without
/// hrt's own O_NOFOLLOW.
#[test]
fn a_childs_exec_names_the_program_as_given_and_keeps_its_flags() {
    passes_natively_and_same_on_1_and_2_cpus("exec_names_and_flags", Some("fork: arg x, AT_EXECFN ./link, comm link"));
}

/// An exec keeps the blocked signals pending (an ignored one too) and the CPU-time interval
/// timers, from a forked child (whose exec runs a host program, which lost both) and from the
/// program's own exec.
#[test]
fn an_exec_keeps_pending_signals_and_cpu_timers() {
    passes_natively_and_same_on_1_and_2_cpus(
        "exec_keeps_pending_and_cpu_timers",
        Some("forked child's exec: pending SIGTERM 1, SIGUSR1 1, SIGUSR2 (ignored) 1"),
    );
}

/// The argument limit of an exec counts the file name (4,000 bytes here) as Linux's does: E2BIG
/// from the program's own exec and from a forked child's (both ran the program).
#[test]
fn an_exec_counts_its_file_name_towards_the_argument_limit() {
    passes_natively_and_same_on_1_and_2_cpus(
        "exec_counts_its_filename",
        Some("the program's exec with a long name: Argument list too long"),
    );
}

/// A forked child starts without the parent's tid address and robust list, as on Linux (its
/// main thread's exit cleared its copy of the parent's tid word).
#[test]
fn a_forked_child_starts_without_tid_address_and_robust_list() {
    passes_natively_and_same_on_1_and_2_cpus(
        "fork_resets_thread_words",
        Some("forked child: robust list none 1, its tid word after its main thread's exit kept"),
    );
}

/// setpgid(child, getpid()) is EPERM while the caller leads no group of that id and joins the
/// child to the caller's group once it does (hrt gave the child a group of its own).
#[test]
fn setpgid_to_the_callers_pid_names_the_callers_group() {
    passes_natively_and_same_on_1_and_2_cpus(
        "setpgid_own_pid_group",
        Some("not a group leader: setpgid(child, own pid) -1 (Operation not permitted)"),
    );
}

/// The program's own exec refuses a file one of its descriptors has open for writing
/// (ETXTBSY), a script named through a close-on-exec descriptor (ENOENT) and an O_PATH
/// descriptor of a link (ELOOP), as Linux does (hrt ran the first two, said EACCES).
#[test]
fn an_exec_by_descriptor_refuses_as_linux_does() {
    passes_natively_and_same_on_1_and_2_cpus(
        "exec_by_descriptor_edges",
        Some("a file open for reading and writing: Text file busy"),
    );
}

/// A forked child SIGKILLed while its threads hold robust process-shared mutexes: the parent's
/// lock returns EOWNERDEAD (the child's `hrt` died without the kernel's walk of the robust
/// lists; the parent waited forever). The late teardown's holder walks them now.
#[test]
fn robust_mutexes_of_a_killed_child_are_marked_owner_dead() {
    passes_natively_and_same_on_1_and_2_cpus("robust_owner_killed", Some("waiting when killed: mutex 1: EOWNERDEAD"));
}

/// A blocked signal sent to a child right after fork stays pending in it (its kernel raised
/// it before the child's thread existed, found no thread blocking it, and the default action
/// ended the child).
#[test]
fn a_blocked_signal_sent_right_after_fork_stays_pending() {
    passes_natively_and_same_on_1_and_2_cpus(
        "fork_early_blocked_signal",
        Some("a blocked SIGUSR1 sent right after fork: pending in 20 of 20 children"),
    );
}

/// Signals sent to a forked child while it execs a program act on the new program: SIGTERM
/// ends it, a blocked SIGUSR1 is pending in it (the exec of a host program dropped those that
/// came while it started: SIGTERM lost in 3-5 rounds of 60, the program ran on).
#[test]
fn signals_sent_during_a_childs_exec_reach_the_new_program() {
    passes_natively_and_same_on_1_and_2_cpus(
        "exec_window_signals",
        Some("blocked SIGUSR1 around the exec: 40 of 40 children had it pending"),
    );
}

/// A forked child's exec detaches its System V segments and shared mappings: after the
/// parent's waitpid the segment counts one attachment and a memory file can be sealed (the
/// exec of a host program kept them until the late teardown: 0 of 10 rounds).
#[test]
fn an_exec_detaches_the_childs_shared_memory() {
    passes_natively_and_same_on_1_and_2_cpus(
        "exec_detaches_shared",
        Some("segment attached once in 10 of 10 rounds, memory file sealed in 10"),
    );
}

/// With `--children hrt`, a program that dropped root and then spawns a program: the child
/// `hrt` uses its parent's /dev/kvm (it opened the device with nobody's ids: "no permission to
/// open /dev/kvm", status 1).
#[test]
fn a_child_hrt_after_setuid_runs() {
    passes_natively_and_same_with(
        "spawn_after_setuid",
        Some("65534\nposix_spawn 0, status 0"),
        &["1", "2"],
        &["--children", "hrt"],
    );
}

/// A process group whose members all ended and were reaped is empty: `kill(-pgid, 0)` is
/// ESRCH (a forked child's VM teardown holder stayed in the group and answered; so did the
/// holder's intermediate, a zombie, when the child was killed as it started: LTP's kill11).
#[test]
fn a_reaped_group_is_empty() {
    passes_natively_and_same_on_1_and_2_cpus("kill_reaped_group", Some("that group after its end: kill(-group, 0) -1"));
}

/// An exec of a file another process has open for writing is ETXTBSY, and runs once the writer
/// closed it: also under `--children hrt`, where the exec ran the file (only the program's
/// own descriptors were looked at; LTP's execve04).
#[test]
fn an_exec_of_a_file_open_for_writing_is_text_file_busy() {
    for children in ["hrt", "host"] {
        passes_natively_and_same_with(
            "exec_write_busy",
            Some("another process writing it: exec failed: Text file busy"),
            &["1", "2"],
            &["--children", children],
        );
    }
}

/// A forked child of a program that dropped root keeps the program's name for other processes
/// (`ps`, `pgrep`): it was `hrt-fork`, the name of its hrt's fork thread.
#[test]
fn a_forked_child_after_setuid_keeps_the_programs_name() {
    passes_natively_and_same_on_1_and_2_cpus(
        "fork_name_after_setuid",
        Some("parent: hostile-fork_na\nchild: hostile-fork_na\nchild ended: 0"),
    );
}

/// A process found by its command line (`pidof -s`, `pgrep -f`) stops at SIGTERM: under `--children
/// hrt` the newest such process is usually the child's VM teardown holder, which shares its
/// `hrt`'s memory and command line and ignored the signal (memcached under hrt ran on after a
/// service script's `kill $(pidof -s memcached)`); it now passes its signals on to `hrt`, but
/// not a second copy of one the sender gave `hrt` too (`kill $(pidof prog)`: one SIGTERM).
#[test]
fn a_kill_of_the_process_found_by_its_command_line_reaches_the_program() {
    passes_natively_and_same_with(
        "kill_by_command_line",
        Some("waiter: SIGTERM\nwaiter ended: 0\ncounter: 1 SIGTERM"),
        &["1", "2"],
        &["--children", "hrt"],
    );
}

/// A process title written over the argument strings (postgres's and nginx's setproctitle) is
/// what another process reads in /proc/<pid>/cmdline (`ps`, `pgrep -f`), as on Linux, also
/// one that runs on into the environment strings, and a forked child's own: the host saw
/// `hrt`'s area with the program's first argv for good.
#[test]
fn a_process_title_written_over_the_arguments_is_what_others_see() {
    passes_natively_and_same_on_1_and_2_cpus("process_title", Some("child's title: title: child\ndone"));
}

/// fexecve of a memfd (no path the host could exec) from a vfork child and a fork child: the
/// new program starts, keeps the descriptor unless it is close-on-exec, and sees AT_EXECFN
/// `/dev/fd/N`; a pipe is refused with EACCES. (A vfork child's exec went by the memfd's host
/// path and failed with ENOENT.)
#[test]
fn fexecve_of_a_memfd_from_children_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("fexecve_children", Some("vfork + fexecve of a pipe: status 13"));
}

/// `--children hrt`: fexecve of a memfd from a vfork child starts the child `hrt` from the
/// descriptor (it was ENOENT: a memory file has no path to start it by), with the kept
/// descriptor open and the close-on-exec one closed in the new program, as on Linux; its
/// AT_EXECFN is `/dev/fd/N`, and an exec by path with another argv[0] gets the path as
/// AT_EXECFN and command name (both were argv[0] in that mode).
#[test]
fn fexecve_of_a_memfd_from_children_run_as_hrt() {
    let prog = build("fexecve_children", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert!(linux.stdout.contains("exec by path: execfn /"), "natively: {linux:?}");
    for cpus in ["1", "2"] {
        let got = hrt(&["--cpus", cpus, "--children", "hrt"], &prog, &[]);
        assert_same(&format!("fexecve_children --children hrt --cpus {cpus}"), &linux, &got);
    }
}

/// A child's SIGCHLD is handled before the wait that took the child returns, once, as on Linux:
/// the host's signal, passed on late on a loaded host, came after that wait, and then made a
/// later wait for another child fail with EINTR. Fails only when the host delays the signal
/// (1 round in ~100 on a loaded host), so it runs many rounds.
#[test]
fn sigchld_is_handled_once_before_the_wait_returns() {
    let prog = build("sigchld_before_wait_returns", &[]);
    let linux = native(&prog, &["100"]);
    assert_eq!(
        linux.stdout,
        "100 rounds, 0 failed waits, 0 with the handler not run when the wait returned, handler runs two a round\n",
        "natively: {linux:?}"
    );
    for cpus in ["1", "2"] {
        let got = hrt(&["--cpus", cpus], &prog, &["100"]);
        assert_same(&format!("sigchld_before_wait_returns --cpus {cpus}"), &linux, &got);
    }
}

/// SA_NOCLDSTOP: no SIGCHLD when a child stops or continues, one when it ends (hrt ran the
/// handler for all three: only SA_NOCLDWAIT reached the host's disposition, and the program's
/// SIGCHLDs about its children are the host's); without it one for each; with a handler or the
/// default action, blocked and taken by sigtimedwait or run, and in a forked child that
/// inherited the flag.
#[test]
fn sa_nocldstop_silences_stops_and_continues_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus(
        "child_stop_sigchld",
        Some("handler runs with SA_NOCLDSTOP: after stop 0, continue 0, kill 1"),
    );
}

/// kill(-1) signals every other process of the program's tree and not the caller. Natively it
/// would signal every process of the user (root's: the whole host), so the native run is made
/// in a PID namespace of its own; without one (not root) the test says so and passes.
#[test]
fn kill_minus_one_reaches_the_programs_other_processes() {
    let prog = build("kill_group", &[]);
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["--pid", "--fork", "--mount-proc"]).arg(&prog).arg("minus1");
    let linux = common::hostile::run(cmd, None);
    if linux.code() != 0 {
        eprintln!("no PID namespace here ({}): kill(-1) not compared", linux.stderr.trim());
        return;
    }
    assert!(linux.stdout.contains("caller signalled 0, child status 7"), "natively: {linux:?}");
    for cpus in ["1", "2"] {
        let got = hrt(&["--cpus", cpus], &prog, &["minus1"]);
        assert_same(&format!("kill(-1) on {cpus} vCPUs"), &linux, &got);
    }
}

/// psmisc's `killall` run by the program (an exec in a forked child: under hrt, where a
/// vfork'd simple command would run on the host) kills the program's other processes by name:
/// it signals through /proc/<pid> directory descriptors, which hrt answered with EBADF. Run in
/// a PID namespace of its own, natively and under hrt, so that only the test's own `sleep`s
/// are in reach; without one (not root) or without killall the test says so and passes.
#[test]
fn killall_kills_the_programs_processes_by_name() {
    if !std::path::Path::new("/usr/bin/killall").exists() {
        eprintln!("no /usr/bin/killall here: not compared");
        return;
    }
    let script = concat!(
        "sleep 100 & a=$!; sleep 101 & b=$!; ",
        "for p in $a $b; do until [ \"$(cat /proc/$p/comm 2>/dev/null)\" = sleep ]; do sleep 0.05; done; done; ",
        "(exec /usr/bin/killall sleep); echo \"killall: $?\"; ",
        "wait $a; echo \"first: $?\"; wait $b; echo \"second: $?\"; ",
        "(exec /usr/bin/killall -q sleep); echo \"again: $?\"; ",
        "(exec /usr/bin/killall -s USR1 nosuch) 2>&1; echo \"none: $?\""
    );
    let in_namespace = |hrt: Option<&str>| {
        let mut cmd = std::process::Command::new("unshare");
        cmd.args(["--pid", "--fork", "--mount-proc"]);
        if let Some(cpus) = hrt {
            cmd.arg(env!("CARGO_BIN_EXE_hrt")).args(["run", "--cpus", cpus, "--"]);
        }
        cmd.args(["/bin/sh", "-c", script]);
        common::hostile::run(cmd, None)
    };
    let linux = in_namespace(None);
    if linux.code() != 0 {
        eprintln!("no PID namespace here ({}): killall not compared", linux.stderr.trim());
        return;
    }
    assert!(linux.stdout.contains("killall: 0\nfirst: 143\nsecond: 143\nagain: 1"), "natively: {linux:?}");
    for cpus in ["1", "2"] {
        let got = in_namespace(Some(cpus));
        assert_same(&format!("killall on {cpus} vCPUs"), &linux, &got);
    }
}

/// What other processes see of the program on the host (its /proc/<pid>/comm and cmdline, read
/// by spawned host programs): the program's name and arguments, after PR_SET_NAME, in a forked
/// child and after an exec, as natively; before, `hrt` and `hrt run ...` (`ps`, `pgrep`).
#[test]
fn other_processes_see_the_programs_name_and_command_line() {
    passes_natively_and_same_on_1_and_2_cpus("host_names", Some("after exec: cmdline names again x"));
}

/// A child that has exited is a zombie: a signal sent to it at once changes nothing and the
/// parent sees its exit status (under hrt, 4 of 20 such children were reported killed: the
/// child `hrt` died of the signal on its way out).
#[test]
fn a_signal_to_a_child_that_has_exited_changes_nothing() {
    passes_natively_and_same_on_1_and_2_cpus("exit_then_signal", Some("exited with 3: 20, killed: 0"));
}

/// sigqueue reaches a child of the program (it was ESRCH), and signal 0, which only asks whether
/// a process exists, reaches processes outside the program's tree (`kill -0 $PPID`).
#[test]
fn sigqueue_to_a_child_and_existence_checks_outside_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("sigqueue_other", Some("sigqueue to a child: 0, child status 7"));
}

/// kill of a process outside the program's tree (a daemon's `kill -HUP`, `nginx -s reload`,
/// `pg_ctl reload`): it reaches the process, as natively (it was ESRCH); `/bin/kill` under
/// `hrt run` ends a `sleep` the test started, for each of SIGTERM and SIGUSR1, and its
/// process group with `kill -- -PGID`.
#[test]
fn kill_reaches_processes_outside_the_program_as_on_linux() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    for (args, signal) in [(&["-TERM"][..], 15), (&["-USR1"], 10), (&["-KILL", "--"], 9)] {
        let mut sleeper = std::process::Command::new("sleep").arg("60").process_group(0).spawn().unwrap();
        let pid = sleeper.id().to_string();
        let target = if args.contains(&"--") { format!("-{pid}") } else { pid };
        let out = common::hostile::hrt_cmd()
            .args(["run", "--cpus", "1", "/bin/kill"])
            .args(args)
            .arg(&target)
            .output()
            .unwrap();
        let ended = sleeper.wait().unwrap();
        assert!(out.status.success(), "kill {args:?} {target}: {out:?}");
        assert_eq!(ended.signal(), Some(signal), "kill {args:?} {target}: {out:?}");
    }
}

/// setpgid on a forked child after it has exec'd is EACCES, as on Linux (the child's exec runs
/// in its own VM, so the host saw none and let the call through); before the exec it moves the
/// child, and the exec'd child may still move itself.
#[test]
fn setpgid_on_a_child_after_its_exec_is_eacces() {
    passes_natively_and_same_on_1_and_2_cpus(
        "setpgid_after_exec",
        Some("after exec: setpgid(child, child)        -1 Permission denied"),
    );
}

/// prlimit64 of another process (tests/programs/hostile/prlimit_other.c): the parent's limits
/// and a forked child's, read and set, and the errors, as natively; the program's own pid and
/// its threads' tids still answer its own limits. Before, every other pid was ESRCH
/// (`prlimit -p $$`).
#[test]
fn prlimit_of_other_processes_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("prlimit_other", Some("child's CORE read back: 0, 4096"));
}

/// A parent that waits for its forked child to show S in /proc/<pid>/stat or status before it
/// signals it (tests/programs/hostile/child_sleep_state.c, LTP's TST_PROCESS_STATE_WAIT) finds
/// the child in pause(): the state is the child's kernel's for its leader thread. The host's
/// view of the child's `hrt` showed S while its VM was set up (1 of 5 rounds went right). A child
/// whose vmsplice waits for room shows S too (LTP vmsplice04: the call waited on the polling
/// service thread, and the child showed R), and one in a semop only once the host's semop
/// waits (LTP semop03: the set removed before, its semop found none: EINVAL for EIDRM).
#[test]
fn a_forked_childs_state_is_its_kernels() {
    passes_natively_and_same_on_1_and_2_cpus("child_sleep_state", Some("20 of 20 children woke"));
}
