//! fork() (a new VM in a host-forked `hrt` over a copy-on-write copy of guest
//! RAM, but for the kernel's static data, which the parent copies for the child): tests/programs/hostile/procs_fork.c (exit statuses, separate memory, pipes both ways,
//! getpid/getppid/gettid, inherited FPU mode, TLS, signal mask and handlers, a child killed by
//! SIGTERM and one by SIGSEGV, nested, repeated and concurrent children, forks from a
//! multithreaded program and from a second thread, a child and grandchild that use far more
//! memory than the parent did), static, static-PIE and dynamic, compared
//! with its native run at one and two vCPUs; procs_fork_omp.c (an OpenMP program forking, on
//! both OpenMP runtimes); bash, whose subshells, command substitutions and pipelines of
//! builtins fork; fork + exec: procs_fork_exec.c (a child that execs /bin/echo into a pipe,
//! the program itself, a missing file; FD_CLOEXEC; a MAP_SHARED file mapping and a System V
//! segment the child writes),
//! and bash running host programs in `$(...)`, pipelines and plain commands;
//! procs_fork_exec_state.c (what a forked child's exec, a host program in its place, carries
//! over, against native and `--children hrt`); shared memory:
//! procs_fork_shared.c (anonymous MAP_SHARED and /dev/zero memory shared with children and
//! grandchildren, atomics, a process-shared mutex and semaphore in it; msync's answers);
//! procs_fork_cma.c (process_vm_readv/writev between parent and child); procs_fork_cma_faults.c
//! (the same where Linux faults: unmapped, PROT_NONE, read-only pages, partial iovecs);
//! fork_sleepers.c (forks while other threads sleep and wake on halting vCPUs);
//! fork_shared_beside_busy.c (shared memory in the pages a fork copies for the child).

mod common;
use common::hostile::{
    assert_same, assert_same_on_1_and_2_cpus, build, build_dynamic, hrt, native,
    passes_natively_and_same_on_1_and_2_cpus, repo_root,
};
use std::path::Path;

#[test]
fn forked_children_behave_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("procs_fork", Some("killed: killed by 15"));
}

/// Four threads on two vCPUs forking at once, preempted while they hold the other CPUs frozen:
/// a second forker on the same vCPU must yield to the first, not park the only CPU that can
/// thaw the rest (before, 1 run in 6 failed fork with EAGAIN after the 2 s freeze timeout);
/// and a child must run only the forking thread (a copy of another thread blocked in `wait4`
/// was woken in the child by a CPU that reached its idle loop before the child's state was
/// reset, and ended the child with status 0: a wrong status in about 1 run in 10; 0 in 30 after).
/// Forked children SIGTERMed as they exit (tests/programs/hostile/term_at_exit.c, 200 times,
/// the signal at varying moments): each ends, exited or killed, as on Linux. A child whose end
/// waited for the host (waking robust-list waiters of its shared memory) took the signal as a
/// second end, found the end claimed and spun for good; its parent hung in waitpid (Python's
/// `Pool.terminate` hung one run in ~40 at `--cpus 1`).
#[test]
fn a_child_signalled_while_it_exits_still_ends() {
    passes_natively_and_same_on_1_and_2_cpus("term_at_exit", Some("200 ended with status 0 or SIGTERM"));
}

/// Forks while two threads keep changing page protections (tests/programs/hostile/
/// fork_while_protecting.c): every child runs and ends. A thread preempted during a TLB
/// shootdown on the forking thread's CPU left the shootdown's request flag held in the child's
/// copy of the kernel, and the child's first mprotect spun for good (3 runs in 3 hung at
/// `--cpus 2` before; nix's test_unistd hung 3 runs in 25 so).
#[test]
fn a_fork_while_other_threads_change_protections_gives_a_child_that_runs() {
    passes_natively_and_same_on_1_and_2_cpus(
        "fork_while_protecting",
        Some("150 children forked while 2 threads changed protections: 150 exited with 7"),
    );
}

#[test]
fn threads_of_one_vcpu_fork_at_the_same_time() {
    let prog = build("fork_threads", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    for round in 0..3 {
        assert_same(&format!("fork_threads --cpus 2 (run {round})"), &linux, &hrt(&["--cpus", "2"], &prog, &[]));
    }
}

/// Forks while three other threads sleep 20-34 us at a time (their idle vCPUs halt, and
/// their timers may wake them during the host's copy, which no longer waits for halted vCPUs
/// to be woken and parked): every child must find the heap, a mutex and thread creation
/// working. At 1, 2 and 4 vCPUs, and with `--idle halt`.
#[test]
fn children_forked_while_other_cpus_sleep_and_wake_work() {
    let prog = build("fork_sleepers", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    for options in [&["--cpus", "1"][..], &["--cpus", "2"], &["--cpus", "4"], &["--cpus", "2", "--idle", "halt"]] {
        assert_same(&format!("fork_sleepers {options:?}"), &linux, &hrt(options, &prog, &[]));
    }
}

/// Signals sent to a child as soon as fork returns, while its VM is still starting
/// (tests/programs/hostile/fork_early_signals.c): a handler inherited from the parent catches
/// them, a default action ends the child by the signal, an ignored one does nothing, as on
/// Linux (the child `hrt` used to die of every one of them).
#[test]
fn signals_sent_right_after_fork_act_as_the_childs_dispositions_say() {
    passes_natively_and_same_on_1_and_2_cpus("fork_early_signals", Some("fork early signals: done"));
}

/// An orphan's getppid (tests/programs/hostile/orphan_ppid.c): a grandchild whose parent exits
/// sees its parent id change, as on Linux (it kept the dead parent's pid); a vfork child's
/// parent is the program.
#[test]
fn an_orphans_parent_id_changes_when_its_parent_dies() {
    passes_natively_and_same_on_1_and_2_cpus("orphan_ppid", Some("then changed: yes"));
}

/// clone with CLONE_PIDFD (tests/programs/hostile/clone_pidfd.c): fork-style and
/// vfork-style (exec'd) children's pidfds poll, reap with their status and take signals as
/// on Linux; with CLONE_PARENT_SETTID it is EINVAL for clone, and clone3 gives both the pidfd
/// and the pid at `parent_tid` (it was ENOSYS; Linux's pidfd_wait selftest uses it).
#[test]
fn clone_with_clone_pidfd_gives_the_childs_pidfd() {
    passes_natively_and_same_on_1_and_2_cpus("clone_pidfd", Some("clone pidfd: done"));
}

#[test]
fn a_static_pie_program_forks() {
    let prog = build("procs_fork", &["-static-pie"]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert_same("static-pie procs_fork", &linux, &hrt(&["--cpus", "2"], &prog, &[]));
}

/// The kernel's static data reaches a child as a copy the parent makes at the fork
/// (monitor/src/vm/fork_private.rs), not through the host's fork: with 4 KiB host pages that
/// copy has them too. Children, grandchildren (whose parent's copy is itself such a copy) and
/// great-grandchildren run and report as natively; a repeated fork reuses the copy made ahead.
#[test]
fn forks_with_small_host_pages() {
    let bash = Path::new("/bin/bash");
    let script = r#"for i in 1 2 3; do x=$(echo "a$(echo "b$( (echo c$i) )")"); echo "$x"; done
(exit 3); echo "subshell: $?"; ( ( exit 4 ) ); echo "nested: $?""#;
    let linux = native(bash, &["-c", script]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert!(linux.stdout.contains("abc3"), "natively: {}", linux.stdout);
    for pages in ["4k", "2m"] {
        let under = hrt(&["--cpus", "2", "--host-pages", pages], bash, &["-c", script]);
        assert_same(&format!("bash -c --host-pages {pages}"), &linux, &under);
    }
}

/// A MAP_SHARED page in the 2 MiB page of the code that forks and one in the heap's: the
/// pages the kernel names for the monitor to copy for the child (fork_private.rs) are shared
/// memory's too, and stay shared, through 20 children and a grandchild
/// (tests/programs/hostile/fork_shared_beside_busy.c; with the check for shared memory taken
/// out, both words read "LOST"). Static and dynamic.
#[test]
fn shared_memory_beside_the_pages_a_fork_copies_stays_shared() {
    passes_natively_and_same_on_1_and_2_cpus("fork_shared_beside_busy", Some("heap page's shared word: every"));
    let source = repo_root().join("tests/programs/hostile/fork_shared_beside_busy.c");
    let prog = build_dynamic(&source, "fork_shared_beside_busy", &[]);
    let linux = native(&prog, &[]);
    assert!(linux.stdout.contains("code page's shared word: every"), "natively: {linux:?}");
    assert_same("dynamic fork_shared_beside_busy", &linux, &hrt(&["--cpus", "2"], &prog, &[]));
}

#[test]
fn a_dynamic_program_forks() {
    let source = repo_root().join("tests/programs/hostile/procs_fork.c");
    let prog = build_dynamic(&source, "procs_fork", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    for cpus in ["1", "2"] {
        assert_same(&format!("dynamic procs_fork --cpus {cpus}"), &linux, &hrt(&["--cpus", cpus], &prog, &[]));
    }
}

/// bash forks for `$(...)`, `( )`, pipelines and `&`; with builtins only, no exec is needed.
#[test]
fn bash_subshells_and_substitutions_run_as_on_linux() {
    let bash = Path::new("/bin/bash");
    let script = r#"echo $(echo hi); y=$(echo a; echo b); echo "${#y}"; (exit 3); echo "subshell: $?"
f() { echo in-f; return 4; }; echo "$(f)" | while read -r l; do echo "got $l"; done
x=$( (echo nested) ); echo "$x"; echo one | { read -r w; echo "read $w"; }
sleep_less() { local i=0; while [ $i -lt 3 ]; do i=$((i+1)); done; echo "loop $i"; }
sleep_less & wait $!; echo "background: $?"; false | true; echo "pipeline: $? ${PIPESTATUS[*]}"
exit 5"#;
    let linux = native(bash, &["-c", script]);
    assert_eq!(linux.code(), 5, "natively: {linux:?}");
    assert!(linux.stdout.contains("got in-f"), "natively: {}", linux.stdout);
    assert_same_on_1_and_2_cpus("bash -c", bash, &["-c", script], &linux);
}

/// An OpenMP program forks before and after a parallel region; the child runs one (before) or
/// keeps the parent's settings (after), on the kernel's runtime and on the program's libgomp.
#[test]
fn an_openmp_program_forks() {
    let prog = build("procs_fork_omp", &["-fopenmp"]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert!(linux.stdout.contains("child's region: 3"), "natively: {}", linux.stdout);
    for omp in ["kernel", "libgomp"] {
        for cpus in ["1", "2"] {
            let got = hrt(&["--cpus", cpus, "--omp", omp], &prog, &[]);
            assert_same(&format!("procs_fork_omp --omp {omp} --cpus {cpus}"), &linux, &got);
        }
    }
}

/// fork + execve in the child: a dynamic /bin/echo whose output comes back through a pipe, the
/// program itself (its getppid is the parent's pid; FD_CLOEXEC descriptors are gone), a failing
/// exec, and a MAP_SHARED file mapping and a System V segment that stay shared in the child.
#[test]
fn forked_children_exec() {
    let prog = build("procs_fork_exec", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert!(linux.stdout.contains("parent reads \"child wrote this\""), "natively: {}", linux.stdout);
    assert_same_on_1_and_2_cpus("procs_fork_exec", &prog, &[], &linux);
    let source = repo_root().join("tests/programs/hostile/procs_fork_exec.c");
    let dynamic = build_dynamic(&source, "procs_fork_exec", &[]);
    assert_same_on_1_and_2_cpus("dynamic procs_fork_exec", &dynamic, &[], &native(&dynamic, &[]));
}

/// A forked child's exec under `--children host` (the default) starts the host program in the
/// child's own host process (forward/host_exec.rs): the pid and parent, working directory,
/// descriptors (FD_CLOEXEC ones closed), ignored signals, handled ones default, SIGPIPE default
/// (the new program dies of a write to a closed pipe), mask, umask, RLIMIT_NOFILE and exit
/// status carry over as Linux's exec carries them, in a child and a grandchild; execs that fail
/// (ENOENT, EACCES, ENOEXEC) return their error; a memfd's `fexecve` (no path the host could
/// exec: it stays an exec in the child's VM) runs. The new program sees the host's CPUs, as
/// natively; with `--children hrt` it runs in the child's VM and sees its vCPUs.
#[test]
fn a_forked_childs_exec_starts_the_host_program_in_its_place() {
    let linux = passes_natively_and_same_on_1_and_2_cpus("procs_fork_exec_state", Some("child (pipe): killed by 13"));
    if linux.stdout.contains("report: 1 CPUs") {
        return; // a one-CPU host: the VM's CPUs look the same
    }
    let in_vm = hrt(&["--cpus", "1", "--children", "hrt"], &build("procs_fork_exec_state", &[]), &[]);
    assert_eq!(in_vm.code(), 0, "--children hrt: {in_vm:?}");
    assert!(in_vm.stdout.contains("report: 1 CPUs, may run on 1"), "--children hrt: {}", in_vm.stdout);
}

/// bash forks and execs host programs for `$(...)`, pipelines and plain commands.
#[test]
fn bash_runs_host_commands_as_on_linux() {
    let bash = Path::new("/bin/bash");
    let script = r#"x=$(/bin/cat /etc/hostname); echo ${#x}; ls / | wc -l; echo a b c | tr a-z A-Z
y=$(printf '%s\n' 3 1 2 | sort | head -n 2 | tr '\n' ' '); echo "sorted: $y"
/bin/sh -c 'exit 7'; echo "sh: $?"; env true; echo "env: $?"; exit 4"#;
    let linux = native(bash, &["-c", script]);
    assert_eq!(linux.code(), 4, "natively: {linux:?}");
    assert!(linux.stdout.contains("sorted: 1 2"), "natively: {}", linux.stdout);
    assert_same_on_1_and_2_cpus("bash -c with host commands", bash, &["-c", script], &linux);
}

/// Anonymous MAP_SHARED memory (and /dev/zero's) is shared with forked children both ways, with
/// a process-shared mutex and semaphore in it, through nested forks, partial munmap, mremap
/// and MADV_DONTNEED; a child's file mapping shows the file once it grows; msync answers as
/// Linux does.
#[test]
fn shared_anonymous_memory_is_shared_with_children() {
    let prog = build("procs_fork_shared", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert!(linux.stdout.contains("shared anonymous: atomic 10000, locked 10000"), "natively: {}", linux.stdout);
    assert!(linux.stdout.contains("parent reads 42, child exited 7"), "natively: {}", linux.stdout);
    assert_same_on_1_and_2_cpus("procs_fork_shared", &prog, &[], &linux);
    let source = repo_root().join("tests/programs/hostile/procs_fork_shared.c");
    let dynamic = build_dynamic(&source, "procs_fork_shared", &[]);
    assert_same("dynamic procs_fork_shared", &native(&dynamic, &[]), &hrt(&["--cpus", "2"], &dynamic, &[]));
}

/// fork() from a vfork child before its exec (ENOSYS before): the new process copies the vfork
/// child (memory shared with its parent, its own descriptors, directory and SIGUSR1 action),
/// the child waits for it, the parent keeps its own; a grandchild that execs /bin/echo. At 1
/// and 2 vCPUs against native.
#[test]
fn a_vfork_child_forks() {
    passes_natively_and_same_on_1_and_2_cpus("procs_vfork_fork", Some("grandchild: survived SIGUSR1"));
}

/// clone without CLONE_VM but with CLONE_FILES (a process sharing its descriptor table) is not
/// supported: ENOSYS and one line naming the flags, where Linux makes the child.
#[test]
fn a_clone_sharing_more_than_fork_fails_loudly() {
    let prog = build("procs_vfork_fork", &[]);
    let linux = native(&prog, &["sharing"]);
    assert_eq!(linux.stdout, "clone(CLONE_FILES): child exited 0\n", "natively: {linux:?}");
    let got = hrt(&["--cpus", "1"], &prog, &["sharing"]);
    assert_eq!((got.code(), got.stdout.as_str()), (0, "clone(CLONE_FILES): errno 38\n"), "{got:?}");
    let lines: Vec<&str> = got.stderr.lines().filter(|l| l.contains("not supported")).collect();
    assert!(lines.len() == 1 && lines[0].contains("flags 0x411"), "{}", got.stderr);
}

/// process_vm_readv/writev between a parent and its forked child (procs_fork_cma.c): the child
/// reads the parent's bytes changed after the fork (the parent's VM, not its own copy), reads
/// itself, and writes into the parent, which checks after wait.
#[test]
fn cross_memory_attach_between_parent_and_child() {
    let prog = build("procs_fork_cma", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert_eq!(linux.stdout.matches("differences from").count(), 3, "natively: {}", linux.stdout);
    assert_same_on_1_and_2_cpus("procs_fork_cma", &prog, &[], &linux);
}

/// process_vm_readv/writev from a forked child into its parent's pages that Linux refuses
/// (procs_fork_cma_faults.c): never mapped, unmapped after the fork, PROT_NONE, read-only,
/// execute-only and write-only (Linux reads neither),
/// cut off by mremap, above the break, the code; several iovecs that fault part of the way
/// (the bytes before the first fault, EFAULT only if none). Before the parent's page maps were
/// read, such reads gave zeros and such writes went through (into free or read-only memory).
#[test]
fn cross_memory_attach_faults_as_on_linux() {
    let prog = build("procs_fork_cma_faults", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    // The native run must itself show the faults and the partial counts the test is about.
    let expected = [
        "read PROT_NONE page: -1 EFAULT",
        "read execute-only page: -1 EFAULT",
        "write read-only page: -1 EFAULT",
        "readv plain, unmapped, plain: 100",
    ];
    for line in expected {
        assert!(linux.stdout.contains(line), "natively, no `{line}`: {}", linux.stdout);
    }
    assert_same_on_1_and_2_cpus("procs_fork_cma_faults", &prog, &[], &linux);
}

/// clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD) of a child that exits before any exec (Go's
/// start-up probe; tests/programs/hostile/pidfd_before_exec.c): a pidfd that polls readable
/// and whose wait, or the pid's, reports the child once, with one SIGCHLD or none as the exit
/// signal says; and no line from `hrt` (it used to store -1 and say so, which every Go program
/// that started a process printed).
#[test]
fn a_child_that_exits_before_its_exec_has_a_pidfd() {
    let prog = build("pidfd_before_exec", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert!(linux.stdout.contains("waitid(P_PIDFD) 0: pid the child's, code CLD_EXITED, status 3"), "{}", linux.stdout);
    for cpus in ["1", "2"] {
        let got = hrt(&["--cpus", cpus], &prog, &[]);
        assert_same(&format!("pidfd_before_exec --cpus {cpus}"), &linux, &got);
        assert!(got.stderr.is_empty(), "--cpus {cpus}: hrt said:\n{}", got.stderr);
    }
}
