//! Hostile programs about system calls: pointers and lengths that leave the program's mappings,
//! values that must not reach a privileged register, signals (SIGPIPE, blocked signals),
//! routing of every call the forwarder implements. Each is compared with the same program run
//! natively (exit status, errno, output).

mod common;
use common::hostile::{
    assert_same, assert_same_on_1_and_2_cpus, build, hrt, hrt_cmd, native, native_then_hrt,
    passes_natively_and_same_on, passes_natively_and_same_on_1_and_2_cpus, passes_natively_and_same_with, run,
    same_in_every_link_on_1_and_2_cpus,
};

/// Builds `name`, runs it natively and under `hrt run --cpus 1`, and compares.
fn same_as_linux(name: &str, args: &[&str]) {
    let prog = build(name, &[]);
    let linux = native(&prog, args);
    let got = hrt(&["--cpus", "1"], &prog, args);
    assert_same(name, &linux, &got);
}

/// read/write/poll/readv/getrandom and others with ranges that run out of the program's
/// mappings, and pointers into just-munmapped memory: the same short counts and EFAULTs as
/// Linux (the monitor checks forwarded ranges against the kernel's page map, the kernel its own).
#[test]
fn ranges_past_the_mappings_fault_as_on_linux() {
    same_as_linux("calls_ranges", &[]);
}

/// An unimplemented call made 50 times is reported once, with its name (also for calls the
/// kernel's table does not list), and an unknown number once.
#[test]
fn unimplemented_calls_are_reported_once_by_name() {
    let prog = build("calls_enosys", &[]);
    let linux = native(&prog, &[]);
    let got = hrt(&["--cpus", "1"], &prog, &[]);
    assert_same("calls_enosys", &linux, &got);
    let lines: Vec<&str> = got.stderr.lines().filter(|l| l.contains("is not implemented")).collect();
    assert_eq!(lines.len(), 2, "one line per call expected:\n{}", got.stderr);
    assert!(lines.iter().any(|l| l.contains("system call 163 (acct)")), "{}", got.stderr);
    assert!(lines.iter().any(|l| l.contains("system call 1000 (no such Linux call)")), "{}", got.stderr);
}

/// creat, link, linkat, symlink, symlinkat, preadv, pwritev and fchmodat reach the forwarder
/// (they answered ENOSYS before) and behave as on Linux.
#[test]
fn forwarded_file_calls_behave_as_on_linux() {
    same_as_linux("calls_forwarded", &[]);
}

/// fchmodat2 (ENOSYS before; glibc 2.39's fchmodat with flags calls it): plain, with
/// AT_SYMLINK_NOFOLLOW on a file and on a link (EOPNOTSUPP), AT_EMPTY_PATH, an unknown flag,
/// a missing file (tests/programs/hostile/fchmodat2.c), and the inode-flag ioctls (lsattr,
/// chattr: ENOTTY before), as on Linux.
#[test]
fn fchmodat2_and_inode_flags_behave_as_on_linux() {
    same_as_linux("fchmodat2", &[]);
}

/// FICLONE and FICLONERANGE (ENOTTY before; rustix's `ioctl_ficlone` test): the source
/// descriptor is the program's, and the answers are Linux's: EBADF, EISDIR, EFAULT, and the
/// file system's for a real clone (tests/programs/hostile/ficlone.c).
#[test]
fn file_clone_ioctls_behave_as_on_linux() {
    same_as_linux("ficlone", &[]);
}

/// copy_file_range, splice and tee (ENOSYS before) and sendfile: positions and offsets written
/// back, flags, bad pointers and descriptors, pipes, SIGPIPE and EPIPE, as on Linux.
#[test]
fn copies_between_descriptors_behave_as_on_linux() {
    same_as_linux("calls_copy", &[]);
}

/// User and system time: getrusage (self, thread, children), times() and the CPU clock agree
/// (user + system is the clock's total), system calls add system time and computation user
/// time (all was user time before), and a waited-for child's time shows in RUSAGE_CHILDREN
/// (it showed the program's own time). With 1 and 2 vCPUs.
#[test]
fn user_and_system_time_split_as_on_linux() {
    let prog = build("time_split", &[]);
    let linux = native(&prog, &[]);
    assert!(!linux.stdout.contains(": no"), "natively:\n{}", linux.stdout);
    assert_same_on_1_and_2_cpus("time_split", &prog, &[], &linux);
}

/// Non-canonical and kernel-half values for the TLS base (arch_prctl, clone's CLONE_SETTLS:
/// these panicked the kernel through the FS_BASE MSR), futex words, robust lists, sigaltstack,
/// timeouts: EPERM, EFAULT, EINVAL as on Linux. A thread started on a non-canonical stack dies of
/// SIGBUS (#SS), one on a kernel-half stack of SIGSEGV, taking the process with it.
#[test]
fn privileged_values_are_refused_as_on_linux() {
    let prog = build("calls_privileged", &[]);
    for mode in ["all", "stack", "kstack"] {
        let linux = native(&prog, &[mode]);
        let got = hrt(&["--cpus", "1"], &prog, &[mode]);
        assert_same(&format!("calls_privileged {mode}"), &linux, &got);
    }
}

/// Robust mutexes whose owner ends holding them (tests/programs/hostile/robust_mutex.c): a
/// thread that exits, with the next taker already waiting or not; a forked child that `_exit`s
/// holding a process-shared one in MAP_SHARED memory, with the parent waiting or not; and a
/// child's second thread holding one at the child's exit_group; a child's two threads holding
/// one each when one of them execs. The next taker gets
/// EOWNERDEAD and recovers it with pthread_mutex_consistent, as on Linux (it hung before: the
/// robust list was never walked). With 1 and 2 vCPUs.
#[test]
fn robust_mutexes_of_a_dead_owner_report_eownerdead() {
    let prog = build("robust_mutex", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    for case in ["1", "2 waiter", "3", "4", "5", "6 main's", "6 thread's"] {
        let line = format!("{case}: lock after the owner died: EOWNERDEAD");
        assert!(linux.stdout.contains(&line), "natively, no `{line}`:\n{}", linux.stdout);
    }
    assert_same_on_1_and_2_cpus("robust_mutex", &prog, &[], &linux);
}

/// Robust lists built by hand and left by a thread's raw exit (tests/programs/hostile/
/// robust_lists.c): the pending entry (marked; left alone with no owner), the waiters bit,
/// another owner's word, a bad next pointer, a misaligned or read-only word (each ends the
/// walk), a cycle and a 3000-entry list (2048 entries walked, then the pending one), a PI
/// entry, an unreadable head: each futex word as Linux leaves it. With 1 and 2 vCPUs.
#[test]
fn hand_built_robust_lists_are_walked_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("robust_lists", Some("robust lists: done"));
}

/// A blocked SIGTERM sent to oneself (kill, and SIGUSR1 by tgkill) stays pending while the
/// program carries on, shows in sigpending, is dropped when it becomes ignored, and ends the
/// program (143) when unblocked; it terminated at once before.
#[test]
fn blocked_signals_to_oneself_stay_pending() {
    same_as_linux("calls_blocked", &[]);
}

/// epoll (over pipes, eventfds, another epoll instance, stdin) and eventfd behave as on Linux:
/// level- and edge-triggered and one-shot events, MOD/DEL, the data word back unchanged, every
/// error case, eventfd's counter and semaphore modes, a thread blocked in epoll_wait woken by
/// another thread's writes, and a signal ending epoll_wait with EINTR (with SA_RESTART too).
/// With one vCPU and with two.
#[test]
fn epoll_and_eventfd_behave_as_on_linux() {
    let prog = build("calls_epoll", &[]);
    let linux = native(&prog, &[]);
    assert_same_on_1_and_2_cpus("calls_epoll", &prog, &[], &linux);
    // Stdin, a pipe the test fills and closes, watched until its end.
    let input = vec![b'x'; 200_000];
    let mut cmd = std::process::Command::new(&prog);
    cmd.arg("stdin");
    let linux = run(cmd, Some(&input));
    assert!(linux.stdout.contains("200000 bytes"), "{}", linux.stdout);
    let mut cmd = hrt_cmd();
    cmd.args(["run", "--cpus", "2", "--"]).arg(&prog).arg("stdin");
    let got = run(cmd, Some(&input));
    assert_same("calls_epoll stdin", &linux, &got);
}

/// `PROG | head -1`: runs `cmd` with stdout piped, reads one line, closes the pipe and waits
/// (killed after 120 s: then `None`, a hang). Returns the exit status as a shell shows it.
fn first_line_then_close(mut cmd: std::process::Command) -> Option<(i32, String)> {
    use std::io::BufRead;
    use std::os::unix::process::ExitStatusExt;
    use std::time::{Duration, Instant};
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).stdin(std::process::Stdio::null());
    let mut child = cmd.spawn().expect("spawning");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).expect("reading a line");
    // The reader is dropped here: the pipe has no reader any more.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = child.try_wait().expect("waiting") {
            let code = status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
            return Some((code, line));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `PROG | head -1` ends as on Linux: without a SIGPIPE handler the program dies of SIGPIPE
/// (141; before, `hrt run -- yes | head -1` never ended), with SIGPIPE ignored or blocked its
/// write fails with EPIPE (and a blocked one is pending), with a handler too.
#[test]
fn writing_to_a_closed_pipe_raises_sigpipe() {
    let prog = build("calls_sigpipe", &[]);
    for mode in ["default", "ignore", "blocked", "handler"] {
        let mut native_cmd = std::process::Command::new(&prog);
        native_cmd.arg(mode);
        let linux = first_line_then_close(native_cmd).expect("natively the program ends");
        let mut hrt_cmd = common::hostile::hrt_cmd();
        hrt_cmd.args(["run", "--cpus", "1", "--"]).arg(&prog).arg(mode);
        let got = first_line_then_close(hrt_cmd);
        assert_eq!(got, Some(linux.clone()), "calls_sigpipe {mode}: hrt (None: hung) differs from Linux {linux:?}");
    }
}

/// EPIPE with or without SIGPIPE by descriptor kind (tests/programs/hostile/sigpipe_kinds.c):
/// sequenced-packet and datagram sockets raised SIGPIPE under hrt (Linux sends none: a
/// program with the default action died of it), vmsplice to a pipe without readers did not.
#[test]
fn sigpipe_comes_with_epipe_where_linux_sends_it() {
    passes_natively_and_same_on_1_and_2_cpus("sigpipe_kinds", Some("sigpipe kinds: done"));
}

/// Writes of more than PIPE_BUF bytes to pipes (HRT writes the part that fits at once and hands
/// only the rest to a worker): a blocking one gives all its bytes in order to a slow reader, a
/// non-blocking one the part that fits then EAGAIN, a signal ends one with its first part's
/// count, a reader that goes away ends one with a part and then EPIPE, as on Linux.
#[test]
fn big_pipe_writes_behave_as_on_linux() {
    common::hostile::passes_natively_and_same_on_1_and_2_cpus("pipe_big_writes", Some("pipe big writes: done"));
}

/// Reads, polls and waits on pipes and sockets that end within HRT's moment of trying them
/// again (vm/channel/retries.rs) and after it: every byte arrives in order, a signal without
/// SA_RESTART ends a blocked read with EINTR and one with it does not, poll and epoll_wait
/// without a limit return when data comes, and two threads of the program talk over a
/// socketpair, as on Linux.
#[test]
fn short_waits_on_pipes_and_sockets_behave_as_on_linux() {
    common::hostile::passes_natively_and_same_on_1_and_2_cpus("short_waits", Some("short waits: done"));
}

/// A program that fills its descriptor table with RLIMIT_NOFILE's soft limit equal to its hard
/// one (`ulimit -n 200`) leaves the monitor what it needs: `stat`, `access` and `open` by path
/// work (EMFILE before: the path walk's own lookups), an open after a close gets a descriptor,
/// and threads on a second vCPU start (before, `hrt` ended: "cannot create vCPU 1"), as on
/// Linux. (The table may hold up to 64 descriptors fewer than the limit where `hrt` cannot raise
/// its own hard limit: the program prints no count.)
#[test]
fn a_full_descriptor_table_leaves_the_monitor_its_descriptors() {
    let prog = common::hostile::build("fd_exhaustion", &[]);
    let under_limit = |args: Vec<&std::ffi::OsStr>| {
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c").arg("ulimit -n 200 && exec \"$0\" \"$@\"").args(args);
        common::hostile::run(cmd, None)
    };
    let linux = under_limit(vec![prog.as_os_str()]);
    assert!(linux.code() == 5 && linux.stdout.contains("fd exhaustion: done"), "natively: {linux:?}");
    let hrt = std::ffi::OsString::from(env!("CARGO_BIN_EXE_hrt"));
    for cpus in ["1", "2"] {
        let got =
            under_limit(vec![hrt.as_os_str(), "run".as_ref(), "--cpus".as_ref(), cpus.as_ref(), prog.as_os_str()]);
        common::hostile::assert_same(&format!("fd_exhaustion --cpus {cpus}"), &linux, &got);
    }
}

/// Descriptor numbers up to the soft limit raised to the hard one
/// (tests/programs/hostile/dup2_near_limit.c; CPython's test_selectors, rustix's select test):
/// dup2 to the last two numbers and F_DUPFD_CLOEXEC from the last work as on Linux. The last
/// 64 were EBADF/EINVAL under hrt, whose own descriptors need room below the host's limit:
/// that room now bounds how many may be open, not their numbers.
#[test]
fn descriptor_numbers_reach_the_limit_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("dup2_near_limit", Some("both held at once: yes"));
}

/// chown, fchown, lchown, fchownat, statfs, fstatfs and getgroups (issue 10) are forwarded and
/// behave as on Linux, bad pointers and descriptors included.
#[test]
fn owner_statfs_and_group_calls_behave_as_on_linux() {
    same_as_linux("calls_owners", &[]);
}

/// uname gives the host's sysname, node name, release, version, machine and domain name, as
/// a container would (it invented "hrt" and "6.1.0-hrt" before).
#[test]
fn uname_is_the_hosts() {
    same_as_linux("calls_uname", &[]);
}

/// PROT_NONE memory is off limits to forwarded calls too (EFAULT, a read stops before it), and
/// open to them again after mprotect.
#[test]
fn forwarded_calls_respect_prot_none() {
    same_as_linux("calls_prot_none", &[]);
}

/// Forwarded calls that write into the program (read, pread, readv, fstat, pipe, readlink,
/// getcwd) give EFAULT on pages without PROT_WRITE, from mmap or mprotect, and a read running
/// into one stops before it; readv stops at its first unusable buffer with a short count.
/// (Before, the monitor wrote into read-only pages: the pipe read "succeeded" and the next
/// read of the pipe blocked forever.)
#[test]
fn forwarded_calls_respect_read_only_pages() {
    same_as_linux("calls_read_only", &[]);
}

/// get_mempolicy and set_mempolicy as a one-node machine answers them (the test host has one
/// node, and so has the VM by default), with 1 and 2 vCPUs; with `--numa 2` a policy that
/// chooses nodes is refused loudly (the program's memory is placed when the VM starts).
#[test]
fn memory_policies_behave_as_on_a_one_node_machine() {
    let prog = build("calls_mempolicy", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert!(linux.stdout.contains("after bind node 0"), "natively: {}", linux.stdout);
    assert_same_on_1_and_2_cpus("calls_mempolicy", &prog, &[], &linux);
    let two = hrt(&["--cpus", "2", "--numa", "2"], &prog, &[]);
    assert_eq!(two.code(), 0, "{two:?}");
    let line = two.stdout.lines().find(|l| l.starts_with("set bind node 0")).unwrap_or_default();
    assert!(line.contains("Function not implemented"), "{}", two.stdout);
    assert!(two.stderr.contains("set_mempolicy mode 2 with several NUMA nodes"), "{}", two.stderr);
    assert!(two.stdout.contains("mems allowed                             0 mode=0 mask=0x3,0"), "{}", two.stdout);
}

/// move_pages and migrate_pages (tests/programs/hostile/numa_page_moves.c): they were ENOSYS;
/// now answered as on a one-node machine, with 1 and 2 vCPUs. With `--numa 2` a query gives
/// each page's node and a move to another node is refused loudly (memory never moves).
#[test]
fn page_moves_behave_as_on_a_one_node_machine() {
    let linux = passes_natively_and_same_on_1_and_2_cpus("numa_page_moves", Some("numa page moves: done"));
    assert!(linux.stdout.contains("query 0: 0 0 -14 0 0 -14"), "natively: {}", linux.stdout);
    let two = hrt(&["--cpus", "2", "--numa", "2"], &build("numa_page_moves", &[]), &[]);
    assert_eq!(two.code(), 0, "{two:?}");
    assert!(two.stdout.contains("numa page moves: done"), "{}", two.stdout);
    assert!(two.stderr.contains("move_pages to another NUMA node (--numa) is not implemented"), "{}", two.stderr);
}

/// restart_syscall called by the program with nothing to resume: EINTR as Linux's (was ENOSYS;
/// tests/programs/hostile/calls_restart_syscall.c).
#[test]
fn restart_syscall_without_a_call_to_resume_is_eintr() {
    passes_natively_and_same_on_1_and_2_cpus("calls_restart_syscall", Some("restart syscall: done"));
}

/// Descriptor numbers against RLIMIT_NOFILE and the table (tests/programs/hostile/
/// fd_numbers_and_limits.c): the soft limit bounds numbers, not how many are open; select
/// looks as far as Linux's table reaches, not the soft limit; an open with no number free is
/// EMFILE before its name is walked; a dup2 that fails leaves a signalfd target a signalfd.
#[test]
fn descriptor_numbers_follow_linuxs_table_and_limit() {
    passes_natively_and_same_on_1_and_2_cpus("fd_numbers_and_limits", Some("fd numbers and limits: done"));
}

/// Signal-call details a differential fuzzer found (tests/programs/hostile/signal_call_details.c):
/// rt_sigprocmask's unknown `how` wrote the old mask first, sigaction kept flags Linux drops,
/// an SS_AUTODISARM stack stayed armed in a handler without SA_ONSTACK, a thread could queue
/// a kill-like siginfo to the process, and real-time signals stopped queueing at 4,096.
#[test]
fn signal_calls_answer_in_linuxs_details() {
    passes_natively_and_same_on_1_and_2_cpus("signal_call_details", Some("signal call details: done"));
}

/// A siginfo the program queues itself arrives whole (tests/programs/hostile/siginfo_whole.c):
/// its words at 32-47 were dropped, an SI_TIMER one was taken for the kernel's own timer's
/// (merged, overrun summed, thrown away by timer_delete), and signalfd records lacked
/// ssi_errno, SIGPOLL's band and fd, a child's times and a machine check's addr_lsb.
#[test]
fn queued_siginfo_arrives_whole() {
    passes_natively_and_same_on_1_and_2_cpus("siginfo_whole", Some("siginfo whole: done"));
}

/// Zero-length reads and buffers (tests/programs/hostile/zero_length_io.c): an eventfd's or
/// timerfd's read of 0 bytes and an eventfd writev with an empty first buffer are EINVAL, as on
/// Linux (hrt answered 0 and 8); pipes and files take them, and a bad buffer still faults.
#[test]
fn zero_length_io_is_answered_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("zero_length_io", Some("zero length io: done"));
}

/// The error that wins when a descriptor and another argument are both bad
/// (tests/programs/hostile/bad_fd_and_argument.c): ftruncate, splice, timerfd_settime and
/// sendfile check in Linux's order (hrt said EBADF first).
#[test]
fn bad_descriptors_lose_to_earlier_checks_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("bad_fd_and_argument", Some("bad fd and argument: done"));
}

/// Arguments Linux checks before a path (tests/programs/hostile/path_argument_checks.c):
/// renameat2's and unlinkat's flags, truncate's length, utimensat with both times omitted
/// (hrt walked the path first: ENOENT, EBADF).
#[test]
fn path_calls_check_arguments_before_the_path_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("path_argument_checks", Some("path argument checks: done"));
}

/// Last names Linux never creates (tests/programs/hostile/path_last_names.c): a creat through
/// a link to "a/x/." with x missing made the file a/x; "missing/." with O_CREAT was EISDIR;
/// a mkdir at /proc/self/fd/N/m/, m a dangling link, made the link's target; O_CREAT of
/// "name/" is EISDIR right after the directory part's walk (a link loop there was ELOOP).
#[test]
fn names_followed_by_a_dot_or_a_slash_are_not_created() {
    passes_natively_and_same_on_1_and_2_cpus("path_last_names", Some("path last names: done"));
}

/// An empty path with a closed directory descriptor (tests/programs/hostile/
/// empty_path_closed_dirfd.c): ENOENT as on Linux, EBADF with AT_EMPTY_PATH (hrt said EBADF).
#[test]
fn an_empty_path_is_refused_before_its_directory_descriptor() {
    passes_natively_and_same_on_1_and_2_cpus("empty_path_closed_dirfd", Some("empty path closed dirfd: done"));
}

/// Links in the program's tree into /proc or /dev (tests/programs/hostile/proc_links_in_tree.c)
/// mean the program's entries (hrt said EACCES: its walk met the monitor's /proc/self); calls
/// on a directory entry that is one of the program's /proc entries get procfs's errors
/// (`unlink("/proc/self/exe")` removed the program's executable, `rename(f, "/proc/self/exe")`
/// replaced it); link's and rename's checks come in Linux's order.
#[test]
fn links_into_proc_and_proc_entries_behave_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("proc_links_in_tree", Some("proc links in tree: done"));
}

/// Process calls in Linux's details (tests/programs/hostile/process_id_checks.c): setuid(-1)
/// is EINVAL, kill and tgkill look the target up before the signal number, a thread's id
/// names its process for getpgid and getsid (EINVAL for setpgid, ENOENT for pidfd_open),
/// pidfd_send_signal takes the PIDFD_SIGNAL_* flags and pidfd_getfd duplicates the program's
/// own descriptors (it was ENOSYS).
#[test]
fn process_calls_check_ids_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("process_id_checks", Some("process id checks: done"));
}

/// read and write with buffers the program may not use (tests/programs/hostile/
/// buffer_checks.c) answer in Linux's order: the descriptor's checks, ESPIPE, a negative
/// position, 0 at the end and EAGAIN before EFAULT (hrt said EFAULT first); zero-length
/// transfers past the user address space are EFAULT; mmap of an O_PATH descriptor is EBADF.
#[test]
fn unusable_buffers_are_answered_in_linuxs_order() {
    passes_natively_and_same_on_1_and_2_cpus("buffer_checks", Some("buffer checks: done"));
}

/// Timer details (tests/programs/hostile/timer_details.c): a periodic ITIMER_REAL waits for
/// its pending SIGALRM to be taken (getitimer and alarm say 0 meanwhile), a zero value clears a
/// POSIX timer's interval and keeps the CPU-time itimers', and a deleted timer's id is not
/// given to the next timer at once.
#[test]
fn timers_rearm_and_number_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("timer_details", Some("timer details: done"));
}

/// TIOCSIG on a pseudo-terminal master signals the slave's foreground group; TIOCNOTTY's
/// SIGHUP ends a session leader before the ioctl returns to it (it ran on in some rounds);
/// FIGETBSZ and FIOQSIZE answer; an epoll instance answers an unknown request with EINVAL.
/// (All but the last were ENOTTY without asking the host.)
#[test]
fn terminal_and_file_requests_reach_the_host() {
    passes_natively_and_same_on_1_and_2_cpus(
        "terminal_and_file_ioctls",
        Some("TIOCSIG: 0 (Success), the child got signal 2"),
    );
}

/// The running executable cannot be opened for writing, truncated by an open or by truncate:
/// ETXTBSY as on Linux (all three succeeded under hrt, whose host does not execute it).
#[test]
fn the_running_executable_is_not_written() {
    passes_natively_and_same_on_1_and_2_cpus("running_image_writes", Some("truncate of it: Text file busy"));
}

/// RLIMIT_RTTIME survives a forked child's exec, RLIMIT_MSGQUEUE limits mq_open, F_DUPFD at a
/// soft RLIMIT_NOFILE of 0-2 is EINVAL, and equal soft and hard CPU limits end the program
/// with SIGKILL, as on Linux.
#[test]
fn resource_limits_act_at_their_edges_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("rlimit_edges", Some("RLIMIT_CPU 1/1: the busy child ended by signal 9"));
}

/// A file call given a bad flag or argument and a bad descriptor or path answers the
/// argument's error first, as Linux's checks come (tests/programs/hostile/
/// file_call_argument_order.c; hrt said EBADF or ENOTDIR); fstatat of a NULL path with
/// AT_EMPTY_PATH is the descriptor (EFAULT), vmsplice refuses unknown flags, and sendfile,
/// splice and copy_file_range refuse counts negative or past 2^64 (all three copied data).
#[test]
fn file_call_arguments_are_checked_in_linux_order() {
    passes_natively_and_same_on_1_and_2_cpus(
        "file_call_argument_order",
        Some("renameat2(f, \"e\", AT_FDCWD, \"\", RENAME_EXCHANGE): -1 (Not a directory)"),
    );
}

/// Futex calls at their edges: a wake of 0 wakes one, the wake-op shift is taken modulo 32, a
/// requeue onto itself keeps the order, futex_waitv answers the last word woken and EAGAIN
/// before a later unmapped word, and wake bitsets hold across processes.
#[test]
fn futex_calls_at_their_edges_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("futex_edges", Some("FUTEX_WAKE of 0 woke 1, FUTEX_WAKE_OP of 0 woke 1"));
}

/// The futex2 calls (futex_wake, futex_wait, futex_requeue), ENOSYS until stop 101: masks
/// between threads and processes, a strict count of 0, a requeue, and their argument checks.
#[test]
fn futex2_calls_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("futex2_calls", Some("futex_wake, mask 2 (the second waiter's): 1"));
}

/// The set-id calls after capset dropped CAP_SETUID/CAP_SETGID answer EPERM (hrt died of
/// SIGABRT in glibc's set-id broadcast), and change the ids with the capabilities.
#[test]
fn set_id_calls_without_the_capability_answer_eperm() {
    passes_natively_and_same_on_1_and_2_cpus(
        "setid_without_capability",
        Some("setresuid without the capability: -1 (Operation not permitted)"),
    );
}

/// kcmp within the program: KCMP_FILE compares two descriptors' open files, the threads share
/// their resources, and Linux's EBADF, EINVAL and ESRCH (it was ENOSYS).
#[test]
fn kcmp_within_the_program_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("kcmp_own", Some("KCMP_FILE of a descriptor and its dup: the same"));
}

/// A SIGPROF handler's stack walk from inside the vDSO's clock_gettime reaches main, static,
/// static-PIE and dynamic (the vDSO had no unwind tables nor PT_GNU_EH_FRAME: every such walk
/// stopped there, so profilers' stacks were cut).
#[test]
fn a_stack_walk_from_the_vdso_reaches_main() {
    same_in_every_link_on_1_and_2_cpus("vdso_stack_walk", "samples in the vDSO whose stack walk reached main: all");
}

/// epoll_pwait2 with an event ready and a pending signal its mask unblocks returns the event
/// and leaves the signal pending, as Linux (and hrt's epoll_pwait) does; it ended with EINTR in
/// 31-47 calls of 200.
#[test]
fn epoll_pwait2_answers_ready_events_before_signals() {
    passes_natively_and_same_on_1_and_2_cpus(
        "epoll_pwait2_ready_first",
        Some("no timeout: events 200, EINTR 0, handler ran 200 times"),
    );
}

/// A signalfd in an edge-triggered epoll set gives an edge for each signal of its mask that
/// becomes pending, none for one already pending (hrt's eventfd was written once until
/// emptied: a second signal beside the first woke no EPOLLET waiter).
#[test]
fn a_signalfd_gives_an_edge_per_new_signal() {
    passes_natively_and_same_on_1_and_2_cpus("signalfd_edges", Some("SIGUSR2 beside it: 1 edge"));
}

/// shmdt detaches every piece of an attachment munmap or mprotect cut apart, and message queue
/// descriptors are close-on-exec whatever mq_open's flags, as on Linux (the first piece only,
/// the segment staying attached; queue descriptors open across exec).
#[test]
fn segments_detach_whole_and_queues_close_on_exec() {
    passes_natively_and_same_on_1_and_2_cpus("ipc_detach_cloexec", Some("after exec: the queue descriptor is closed"));
}

/// Set-id calls leave every thread with the same credentials: setuid(0) back to a saved 0
/// changes only the effective id, a capset's dropped capability stays dropped after
/// seteuid(1000), setgroups keeps duplicates (hrt's threads disagreed: 0 0 0 on some,
/// root's powers at euid 1000 on others; a list equal to the current one as a set was kept).
#[test]
fn set_id_calls_leave_every_thread_alike() {
    passes_natively_and_same_on_1_and_2_cpus(
        "setid_threads_agree",
        Some("capset then seteuid(1000): 0; of 80 asks, 0 saw effective capabilities, 0 opened a root-only file"),
    );
}

/// msg_lrpid after a msgrcv that waited for a forked child's message names the receiving
/// process (it named the monitor's worker thread that made the wait).
#[test]
fn a_waiting_receiver_is_the_queues_last_receiver() {
    passes_natively_and_same_on_1_and_2_cpus(
        "msg_blocking_pids",
        Some("last receiver is this process: 1, last sender the child: 1"),
    );
}

/// poll and ppoll on a descriptor another thread closes while they wait answer POLLNVAL when
/// they return, as Linux's last look finds it (the held host descriptor stayed open: 0).
#[test]
fn a_descriptor_closed_during_poll_is_pollnval() {
    passes_natively_and_same_on_1_and_2_cpus(
        "poll_fd_closed_meanwhile",
        Some("ppoll of a pipe closed meanwhile: 1, revents 0x20"),
    );
}

/// Credential changes are every thread's (`every_thread`): PR_SET_KEEPCAPS keeps the permitted
/// set over setuid(1000) (it was kept in the guest only: the host's setuid dropped it); a
/// bounding-set drop reaches a host program a forked child starts from another thread (it kept
/// CAP_SYS_ADMIN); capsets served by different threads of the monitor, then setuid(1000) (glibc's
/// set-id broadcast met a thread at an older capset's sets, whose refusal aborted `hrt` with
/// SIGABRT in about 1 run in 6 on the stop-102 binary).
#[test]
fn credential_changes_are_every_threads() {
    same_in_every_link_on_1_and_2_cpus(
        "caps_every_thread",
        "keepcaps 0 1, setuid 0, CAP_SETUID kept 1, capset 0, setuid(0) 0",
    );
}

/// The same from a directory only root may search (a fresh clone under `mktemp -d`, mode 0700):
/// after setuid(1000) the exec of /proc/self/exe reaches the file through the descriptor kept for
/// it, as Linux's magic link does without walking the path (it was EACCES under hrt).
#[test]
fn proc_self_exe_execs_from_a_private_directory_after_setuid() {
    use std::os::unix::fs::PermissionsExt;
    let prog = build("caps_at_exec", &[]);
    let dir = prog.parent().unwrap().join("private-caps-at-exec");
    let _ = std::fs::create_dir(&dir);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let copy = dir.join("caps_at_exec");
    std::fs::copy(&prog, &copy).unwrap();
    let linux = native(&copy, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    let got = hrt(&["--cpus", "1", "--children", "hrt"], &copy, &[]);
    assert_same("caps_at_exec from a private directory", &linux, &got);
}

/// Capabilities and saved ids across the kernel's own exec (`--children hrt`: a forked child's
/// exec stays inside `hrt`), as Linux's execve computes them: a dropped bounding-set capability
/// leaves root's permitted set, root gets its effective set back, keep-caps and a non-root
/// user's permitted set go, the ambient set stays, the saved uid becomes the effective one (the
/// stop-102 binary kept the old program's capabilities and ids in 4 of 6 cases).
#[test]
fn capabilities_across_an_exec_inside_hrt() {
    passes_natively_and_same_with(
        "caps_at_exec",
        Some("ambient CHOWN, setuid 1000   eff 00000000001 prm 00000000001"),
        &["1", "2"],
        &["--children", "hrt"],
    );
}

/// PR_SET_DUMPABLE after setuid(1000) gives the process's /proc/<pid> entries back to the user
/// (the flag was the guest's only: `hrt`'s stayed root's and the program's opens were refused).
#[test]
fn dumpable_again_after_setuid() {
    passes_natively_and_same_on_1_and_2_cpus(
        "dumpable_after_setuid",
        Some("after PR_SET_DUMPABLE 1: dumpable 1, /proc/<pid>/status owner 1000, oom_score_adj for writing opened"),
    );
}

/// setfsuid/setfsgid: file calls use the file-system ids (a root-only file refused, a new
/// file owned by them), and the process becomes undumpable (they were left at the effective
/// ids, with a line).
#[test]
fn file_system_ids_decide_file_access() {
    passes_natively_and_same_on_1_and_2_cpus(
        "file_system_ids",
        Some("open a root 0600 file: Permission denied\na new file's owner 1000 group 2000\ndumpable 0"),
    );
}

/// writev to a thread's comm file renames it (the last buffer), as write() does, and pwrite or
/// pwritev there is ESPIPE (both were EBADF and the name stayed: musl's fopen/fputs/fclose of
/// /proc/self/comm lost the rename).
#[test]
fn vectored_writes_rename_threads() {
    same_in_every_link_on_1_and_2_cpus("comm_vectored", "writev to another thread's comm 8, its name worker-b");
}

/// FS_IOC_FIEMAP maps a sparse file's extents as natively (it was a silent ENOTTY: the request
/// was not forwarded).
#[test]
fn file_extents_are_mapped() {
    passes_natively_and_same_on_1_and_2_cpus("file_extents", Some("FIEMAP of 8: 0"));
}

/// A sleep for 1 ms of process CPU time does not end while nothing runs (the
/// sleeper's own wake-up checks counted as process CPU time: it woke itself after ~1 s).
#[test]
fn a_cpu_clock_sleep_does_not_wake_itself() {
    passes_natively_and_same_on_1_and_2_cpus("cpu_clock_sleep", Some("woken while nothing ran: no"));
}

/// A priority-inheritance mutex shared between processes: exact counter from three processes,
/// EBUSY and ETIMEDOUT while another process holds it (FUTEX_LOCK_PI on shared memory was
/// ENOSYS, which glibc does not check: a timed lock answered EINVAL, and processes could be
/// inside the lock together).
#[test]
fn pi_mutexes_between_processes() {
    passes_natively_and_same_on_1_and_2_cpus(
        "pi_mutex_processes",
        Some("counter: 60000 of 60000\ntrylock while another process holds it: Device or resource busy\ntimed lock: Connection timed out"),
    );
}

/// Children started under a descriptor limit of 64 (soft and hard) have room for their
/// descriptors: the monitor of a child `hrt` kept 64 for itself, so ld.so could not open libc.
#[test]
fn children_under_a_descriptor_limit_of_64_run() {
    for children in ["hrt", "host"] {
        passes_natively_and_same_with(
            "low_nofile_children",
            Some("the copy opened at least 16 descriptors: yes, then EMFILE"),
            &["1", "2"],
            &["--children", children],
        );
    }
}

/// A CPU-time timer's signal (ITIMER_PROF, ITIMER_VIRTUAL, a timer on the process CPU clock)
/// goes to the thread that runs, not to a sleeping one (whose nanosleep it broke at 2 vCPUs).
#[test]
fn cpu_timer_signals_go_to_the_running_thread() {
    passes_natively_and_same_on_1_and_2_cpus(
        "cpu_timer_thread",
        Some("the sleeping main thread took fewer than 5: yes, its sleeps interrupted fewer than 5 times: yes"),
    );
}

/// The main stack counts in RLIMIT_AS and VmSize as far as Linux's has grown, not the whole
/// reservation (a 10 MiB mapping under a 16 MiB RLIMIT_AS was ENOMEM).
#[test]
fn the_main_stack_counts_in_the_address_space_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus(
        "stack_address_space",
        Some("a 10 MiB mapping under a 16 MiB RLIMIT_AS: mapped"),
    );
}

/// SCHED_BATCH and SCHED_IDLE reach the program's children (a forked child's exec, a spawned
/// child) and other processes reading the program's policy by pid (they saw SCHED_OTHER).
#[test]
fn scheduling_policies_reach_children_and_other_processes() {
    for children in ["hrt", "host"] {
        passes_natively_and_same_with(
            "policy_children",
            Some("a spawned child: policy 5"),
            &["1", "2"],
            &["--children", children],
        );
    }
}

/// Under a small RLIMIT_NPROC a program that dropped root still has its blocking calls answered:
/// `hrt`'s own host threads count against the limit, and a worker thread that could not start
/// left the call waiting for good (a blocking `read` hung `hrt`). Where the host lets `hrt`
/// lift its own limit the copy reads its byte as natively; elsewhere (no CAP_SYS_RESOURCE, as
/// here) the read fails with EAGAIN and `hrt` says why. One vCPU: at two, the copy's second
/// vCPU thread, started when the program starts its thread, cannot start either there, and
/// `hrt` ends with status 1 and a line (README, "Limits").
#[test]
fn a_blocking_call_under_a_small_process_limit_is_answered() {
    let prog = build("process_limit_after_setuid", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    if linux.stdout.contains("needs root") {
        return;
    }
    assert!(linux.stdout.contains("read: 1 byte, x\nthe copy: spawn Success, status 0"), "natively: {linux:?}");
    let got = hrt(&["--cpus", "1", "--children", "hrt"], &prog, &[]);
    assert!(!got.hung, "hrt hung; stderr:\n{}", got.stderr);
    let refused = got.stdout.contains("read: Resource temporarily unavailable")
        && got.stderr.contains("hrt: cannot start a thread for a blocking forwarded call");
    assert!(
        got.code() == 0 && (got.stdout == linux.stdout || refused),
        "status {} stdout:\n{}\nstderr:\n{}",
        got.code(),
        got.stdout,
        got.stderr
    );
}

/// The processor's name (CPUID leaves 0x8000_0002-4: `lscpu`, 7-Zip's benchmark header) and
/// the ring-3 features of leaf 0x8000_0001 that programs check before use (RDTSCP, LZCNT,
/// SSE4A) as natively, on every vCPU: this PVM host's KVM reports the name leaves empty and
/// leaves those bits out, and GROMACS's mdrun refused to run without RDTSCP.
#[test]
fn the_processors_name_and_ring3_features_are_the_hosts() {
    let linux = passes_natively_and_same_on_1_and_2_cpus("cpu_announced", Some("cpu name on the last CPU: ["));
    assert!(!linux.stdout.contains("[]"), "natively: {}", linux.stdout);
}

/// The processor topology in CPUID (leaf 0xB's levels, AMD's 0x8000001E and core count, leaf
/// 1's count) describes the VM's CPUs, one x2APIC ID each, at 1, 2 and 4 vCPUs: this PVM
/// host's KVM leaves those leaves empty, and hwloc's x86 backend refused the data.
#[test]
fn cpuid_describes_the_vms_processor_topology() {
    passes_natively_and_same_on("cpu_topology", Some("every CPU has its own x2APIC ID: yes"), &["1", "2", "4"]);
}

/// Cpus_allowed_list in the status files follows each thread's CPU mask (it showed every
/// vCPU): the process's, `thread-self`'s and another thread's, on two vCPUs as on two CPUs.
#[test]
fn status_shows_each_threads_cpu_mask() {
    passes_natively_and_same_on("status_affinity", Some("worker pinned to 0: Cpus_allowed_list:\t0\n"), &["2"]);
}

/// SIGFPE's si_code for each floating-point exception, SSE and x87 (overflow, underflow,
/// invalid, division by zero, inexact), as Linux gives it: HRT said invalid for all but
/// division by zero, and SBCL raised the wrong condition for an overflow.
#[test]
fn floating_point_signals_name_their_exception_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("fpe_codes", Some("x87-res  si_code 6"));
}

/// flock reaches the host's open file descriptions: conflicts, shared duplicates, a forked
/// child, errors (it was ENOSYS: Java's start-up uses it).
#[test]
fn flock_behaves_as_on_linux() {
    same_as_linux("calls_flock", &[]);
}

/// ioctl requests of pipes and terminals (FIONBIO, which Node.js's libuv uses; terminal
/// attributes, window size and flushing on a pseudo-terminal pair the program opens; the
/// wrong-kind and bad-pointer errors), capget's version handshake and the protection-key calls
/// of a CPU without protection keys, with 1 and 2 vCPUs.
#[test]
fn terminal_ioctls_capget_and_pkeys_behave_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_ioctl_tty", Some("got: hello"));
}

/// Route netlink as `ip` uses it: its socket options (they were ENOPROTOOPT) and the interface
/// list through getifaddrs, as natively.
#[test]
fn route_netlink_behaves_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_netlink", Some("get NETLINK_EXT_ACK"));
}

/// NETLINK_SOCK_DIAG (tests/programs/hostile/calls_sock_diag.c), through which `ss` lists
/// sockets: the program finds its own listening socket and its backlog among the host's, as
/// natively (the socket was EAFNOSUPPORT, and `ss` fell back to /proc, without backlogs).
#[test]
fn sock_diag_lists_the_programs_sockets_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_sock_diag", Some("our listener found: 1, its backlog: 77"));
}

/// Netlink's NETLINK_USERSOCK (a message to the socket's own port), NETLINK_KOBJECT_UEVENT (a
/// device-event listener's bind) and NETLINK_GENERIC (nlctrl's family id): as natively
/// (tests/programs/hostile/netlink_families.c; each was EAFNOSUPPORT, rustix's netlink tests).
#[test]
fn more_netlink_families_behave_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("netlink_families", Some("generic: nlctrl's family id"));
}

/// netdevice(7)'s interface queries on a socket (SIOCGIFINDEX, NAME, FLAGS, MTU, HWADDR, ADDR,
/// NETMASK of the loopback interface; ENODEV, EFAULT, ENOTTY on a pipe), as UCX's TCP layer asks
/// them of every interface at MPI_Init: they were ENOTTY under hrt (found with MPICH programs,
/// TeaLeaf and miniAMR, whose UCX then knew no interface's MTU or address).
#[test]
fn interface_ioctls_behave_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_ioctl_ifreq", Some("mtu"));
}

/// Signal-driven I/O and sockios requests (tests/programs/hostile/calls_ioctl_async.c):
/// FIOASYNC (nginx's master refused to start its workers when it was ENOTTY), the SIGIO owner
/// set and read with FIOSETOWN/SIOCSPGRP and FIOGETOWN/SIOCGPGRP, SIGIO arriving, SIOCATMARK,
/// SIOCGSTAMP, SIOCGIFCONF with and without a buffer, as natively.
#[test]
fn signal_driven_io_and_socket_requests_act_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus(
        "calls_ioctl_async",
        Some("SIGIO after the peer wrote                   1"),
    );
}

/// Calls on a directory entry with a trailing slash or a final "." or ".." at a symbolic
/// link, and O_CREAT|O_EXCL at a dangling one, as on Linux (tests/programs/hostile/path_entries.c):
/// `rmdir link/` is ENOTDIR and leaves the link's target, `rmdir d/.` EINVAL, `rename d/. x`
/// EBUSY, an exclusive create at a link EEXIST; each case's tree compared.
#[test]
fn calls_on_directory_entries_never_follow_the_last_link() {
    passes_natively_and_same_on_1_and_2_cpus("path_entries", Some("rmdir L/                           ENOTDIR"));
}

/// An I/O signal's siginfo as on Linux: SI_KERNEL for a plain SIGIO; with F_SETSIG the POLL_*
/// reason, si_band and si_fd as the program numbers the descriptor (the host's number, or
/// nothing, before 2026-12-03: every code was SI_USER), for a pipe and a socket pair set up
/// with fcntl and with ioctl FIOASYNC (tests/programs/hostile/io_signal_info.c).
#[test]
fn io_signals_carry_their_reason_band_and_descriptor() {
    passes_natively_and_same_on_1_and_2_cpus("io_signal_info", Some("fd is the read end: 1"));
}

/// fcntl's owner and signal commands (O_ASYNC's SIGIO, F_SETSIG, F_SETOWN_EX, another thread
/// as the owner), F_NOTIFY,
/// leases and memory-file seals, as on Linux (tests/programs/hostile/calls_fcntl_owner.c).
#[test]
fn fcntl_owners_signals_leases_and_seals_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_fcntl_owner", Some("SIGRTMIN+1 for the pipe                  1"));
}

/// stat of the program's /proc/self/fd (size: its open descriptors) and /proc/self/task (links:
/// 2 and one per thread), every way of asking (tests/programs/hostile/own_proc_dir_figures.c);
/// they counted hrt's own descriptors and threads.
#[test]
fn own_proc_directories_count_the_programs_descriptors_and_threads() {
    passes_natively_and_same_on_1_and_2_cpus("own_proc_dir_figures", Some("links 2 + 3 threads: 1"));
}

/// /proc/self/maps shows write-only and write-and-execute mappings as they were asked for
/// (tests/programs/hostile/proc_maps_write_only.c, LTP's mmap04): they showed `rw`, what the
/// page tables hold.
#[test]
fn proc_maps_shows_write_only_mappings() {
    passes_natively_and_same_on_1_and_2_cpus("proc_maps_write_only", Some("write-only private: -w-p"));
}

/// The program's /proc/self/maps lists its mappings as Linux does: in order, cut where the
/// protection changes, with the executable's and a private file mapping's file, offset and
/// inode, [heap], [stack] and [vdso] (tests/programs/hostile/proc_maps.c); it was one range
/// of all memory, readable, writable and executable, around the stack.
#[test]
fn proc_maps_lists_the_programs_mappings() {
    passes_natively_and_same_on_1_and_2_cpus("proc_maps", Some("  with its offset, inode and r--p: yes"));
}

/// The program's descriptor directories (/proc/self/fd, /dev/fd, /proc/self/fdinfo) list its
/// own descriptors, read whole or in pieces, rewound, relative to the directory, after fchdir
/// and in a forked child, and by a program closing each descriptor it reads (every one goes,
/// since a listing resumes at a position keyed by descriptor number, as Linux's)
/// (tests/programs/hostile/proc_fd_dir.c); listing them was EACCES.
#[test]
fn the_descriptor_directories_list_the_programs_descriptors() {
    passes_natively_and_same_on_1_and_2_cpus("proc_fd_dir", Some("/proc/self/fd: 0 1 2 3 4 5 -1 12"));
}

/// CLOCK_TAI and the clocks' resolutions as on Linux (tests/programs/hostile/clocks_tai_res.c).
#[test]
fn clock_tai_and_resolutions_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("clocks_tai_res", Some("timer_create(TAI): 0"));
}

/// Time never goes back from one thread to another (tests/programs/hostile/clocks_cross_thread.c):
/// four threads publish and compare time stamps, at 2 and 4 vCPUs. The vDSO's TSC read had no
/// fence, and CLOCK_MONOTONIC went back 4-25 ns in most runs at `--cpus 4`.
#[test]
fn clocks_never_go_back_between_threads() {
    passes_natively_and_same_on("clocks_cross_thread", Some("monotonic vdso: 0 readings went back"), &["2", "4"]);
}

/// select, ppoll and pselect6 that a signal ends write back the time left, as Linux does
/// (tests/programs/hostile/wait_time_left.c); they wrote it only when the wait ended otherwise.
#[test]
fn waits_a_signal_ends_write_back_the_time_left() {
    passes_natively_and_same_on_1_and_2_cpus(
        "wait_time_left",
        Some("select: -1 Interrupted system call, time left shorter and not negative: 1"),
    );
}

/// readahead and sync_file_range as on Linux (tests/programs/hostile/calls_file_hints.c).
#[test]
fn file_page_hints_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus(
        "calls_file_hints",
        Some("sync_file_range(pipe)                -1 ESPIPE"),
    );
}

/// Runs `cmd` with resource limits (resource, soft, hard) set in the child before its exec.
fn run_with_limits(mut cmd: std::process::Command, limits: &'static [(u32, u64, u64)]) -> common::hostile::Outcome {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe; the child lowers its own limits.
    unsafe {
        cmd.pre_exec(move || {
            for &(resource, soft, hard) in limits {
                libc::setrlimit(resource, &libc::rlimit { rlim_cur: soft, rlim_max: hard });
            }
            Ok(())
        })
    };
    run(cmd, None)
}

/// Runs `prog ARGS` natively under resource limits `limits` (it must exit 0 and print
/// `marker`), then under `hrt run --cpus 1` and `--cpus 2` with the same limits set on `hrt`,
/// and compares.
#[track_caller]
fn same_under_limits(
    label: &str,
    prog: &std::path::Path,
    args: &[&str],
    limits: &'static [(u32, u64, u64)],
    marker: &str,
) {
    let mut native = std::process::Command::new(prog);
    native.args(args);
    let linux = run_with_limits(native, limits);
    assert!(linux.code() == 0 && linux.stdout.contains(marker), "{label} natively: {linux:?}");
    for cpus in ["1", "2"] {
        let mut h = hrt_cmd();
        h.args(["run", "--cpus", cpus, "--"]).arg(prog).args(args);
        assert_same(&format!("{label} --cpus {cpus}"), &linux, &run_with_limits(h, limits));
    }
}

/// The program inherits the resource limits `hrt` was started with, as an exec'd program
/// does: the test lowers the descriptor and stack limits before starting both runs.
#[test]
fn resource_limits_are_inherited() {
    let prog = build("calls_rlimits", &[]);
    const LIMITS: &[(u32, u64, u64)] =
        &[(libc::RLIMIT_NOFILE, 300, 700), (libc::RLIMIT_STACK, 12 << 20, libc::RLIM_INFINITY)];
    let limited = |cmd| run_with_limits(cmd, LIMITS);
    let linux = limited(std::process::Command::new(&prog));
    assert!(linux.code() == 0 && linux.stdout.contains(" 7: 0 300 700"), "natively: {linux:?}");
    let mut h = hrt_cmd();
    h.args(["run", "--cpus", "1", "--"]).arg(&prog);
    assert_same("calls_rlimits", &linux, &limited(h));
}

/// Under an address-space limit (`ulimit -v`, 1 GiB here, set before both runs) `hrt` fits
/// the guest's memory beside its own, and the program's RLIMIT_AS is enforced on its mappings
/// as on Linux (tests/programs/hostile/rlimit_as.c): mmap, mremap and sbrk fail with ENOMEM
/// past it, in a forked child too, and a started program reads it back; with 1 and 2 vCPUs.
#[test]
fn the_address_space_limit_is_hrts_and_the_programs() {
    let prog = build("rlimit_as", &[]);
    const LIMITS: &[(u32, u64, u64)] = &[(libc::RLIMIT_AS, 1 << 30, 1 << 30)];
    same_under_limits("rlimit_as", &prog, &[], LIMITS, "mremap to 300 MiB: failed ENOMEM");
}

/// Under a data limit (`ulimit -d`: soft 1 GiB, hard 2 GiB, set before both runs), which
/// counts the guest's memory reservation, `hrt` starts with its guest memory fitted under the
/// hard limit, and the program reads back the limits it was given (until 2026-12-03 `hrt run`
/// failed: "cannot reserve 131072 MiB of guest memory").
#[test]
fn a_data_limit_leaves_hrt_room_and_the_program_its_limit() {
    let prog = build("calls_rlimits", &[]);
    const LIMITS: &[(u32, u64, u64)] = &[(libc::RLIMIT_DATA, 1 << 30, 2 << 30)];
    same_under_limits("calls_rlimits under RLIMIT_DATA", &prog, &[], LIMITS, " 2: 0 1073741824 2147483648");
}

/// Under a soft RLIMIT_NOFILE below the hard one (50 and 700 here), files the program maps
/// privately and closes take none of its descriptors, as on Linux (`hrt` keeps a host
/// descriptor for each, beyond the program's limit: until 2026-12-03 those took its room, and
/// 60 mappings left it 0 of its 46 opens).
#[test]
fn privately_mapped_files_take_none_of_the_programs_descriptors() {
    let prog = build("nofile_mapped", &[]);
    let dir = std::env::temp_dir().join(format!("hrt-nofile-mapped-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    const LIMITS: &[(u32, u64, u64)] = &[(libc::RLIMIT_NOFILE, 50, 700)];
    // How many it opens depends on the descriptors the test inherits; both runs compare it.
    let marker = "60 files mapped, highest 49, then EMFILE";
    same_under_limits("nofile_mapped", &prog, &[dir.to_str().unwrap()], LIMITS, marker);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The main stack ends at the soft RLIMIT_STACK it starts with, as on Linux: with 256 KiB and
/// 1 MiB a recursion overflows within the last 48 KiB below the limit (until 2026-12-03 a
/// limit below 2 MiB gave a 2 MiB stack).
#[test]
fn the_main_stack_ends_at_its_limit() {
    let prog = build("stack_limit", &[]);
    const LIMITS: [&[(u32, u64, u64)]; 2] = [
        &[(libc::RLIMIT_STACK, 256 << 10, libc::RLIM_INFINITY)],
        &[(libc::RLIMIT_STACK, 1 << 20, libc::RLIM_INFINITY)],
    ];
    for limits in LIMITS {
        same_under_limits(&format!("stack_limit {}", limits[0].1), &prog, &[], limits, "last 48 KiB: 1");
    }
}

/// Limits the program sets are enforced (tests/programs/hostile/rlimit_enforced.c): below
/// RLIMIT_NOFILE new descriptors get EMFILE, dup2 EBADF, F_DUPFD and poll EINVAL, in a forked
/// child and a started program too; past RLIMIT_FSIZE writes are cut, then fail with EFBIG
/// and SIGXFSZ before they return (without a handler it kills), as on Linux.
#[test]
fn resource_limits_the_program_sets_are_enforced() {
    passes_natively_and_same_on_1_and_2_cpus("rlimit_enforced", Some("write at the limit: -1 EFBIG, signals 1"));
}

/// RLIMIT_CPU (tests/programs/hostile/rlimit_cpu.c): SIGXCPU at the soft limit of the
/// program's own CPU time, the soft limit one second higher after it, a forked child's own
/// time counted, SIGKILL at the hard limit, as on Linux. About 3 s of CPU time per run.
#[test]
fn the_cpu_time_limit_signals_and_kills_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("rlimit_cpu", Some("SIGXCPU ignored: killed by 9"));
}

/// getpriority and setpriority on the program itself (by 0, pid or a thread's id), on nobody,
/// with bad arguments, and the niceness a child inherits, with 1 and 2 vCPUs.
#[test]
fn niceness_behaves_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_priority", Some("self after                       5"));
}

/// User and group ids: the get calls and the set calls that keep each id (they were ENOSYS, and
/// GNU make stopped: "make: gcc: Function not implemented"), and setgroups with the program's own
/// list and with too many groups (EPERM first without CAP_SETGID, as on Linux).
#[test]
fn ids_kept_as_they_are_behave_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_ids", Some("setresuid(-1, euid, -1)      0"));
}

/// Ids changed as a daemon dropping root changes them (tests/programs/hostile/ids_change.c): in
/// a forked child, the group list and the group and user ids become nobody's; read back, a file
/// only root may read is EACCES (also from a thread started later: every host thread of `hrt`
/// changed), a new file is nobody's, going back to root is EPERM; the parent keeps its ids.
/// They were ENOSYS with a line. Without root every change is EPERM, natively too. The
/// file-system ids (setfsuid/setfsgid, ENOSYS before: read as -1) follow the effective ones.
#[test]
fn ids_changed_behave_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("ids_change", Some("ids change: done"));
}

/// GNU make under hrt builds a five-file C program with two jobs (its recipes run as host
/// children), and the program runs.
#[test]
fn make_builds_a_program_under_hrt() {
    let dir = std::env::temp_dir().join(format!("hrt-make-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for i in 1..=4 {
        std::fs::write(dir.join(format!("f{i}.c")), format!("int f{i}(void) {{ return {i}; }}\n")).unwrap();
    }
    std::fs::write(
        dir.join("m.c"),
        "int f1(void), f2(void), f3(void), f4(void);\nint main(void) { return f1() + f2() + f3() + f4(); }\n",
    )
    .unwrap();
    std::fs::write(dir.join("Makefile"), "prog: m.o f1.o f2.o f3.o f4.o\n\tgcc -o $@ $^\n%.o: %.c\n\tgcc -O2 -c $<\n")
        .unwrap();
    let mut h = hrt_cmd();
    h.args(["run", "--cpus", "2", "--", "make", "-s", "-j2", "-C"]).arg(&dir);
    let out = run(h, None);
    assert_eq!(out.code(), 0, "{out:?}");
    let status = std::process::Command::new(dir.join("prog")).status().unwrap();
    assert_eq!(status.code(), Some(10), "the program make built");
    let _ = std::fs::remove_dir_all(&dir);
}

/// signalfd (it was ENOSYS): blocked signals read through the descriptor (raise, kill,
/// sigqueue's value, a forked child's SIGCHLD), two records in one read, O_NONBLOCK's EAGAIN,
/// SFD_CLOEXEC, a new mask for an existing descriptor, dup and close, a blocking read woken by
/// another thread, poll and select on it, and epoll with a pipe and the signalfd in one set;
/// the error cases (sizemask, flags, a pipe, no descriptor). With one vCPU and with two.
#[test]
fn signalfd_behaves_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_signalfd", Some("epoll after another thread's kill: 1 first 222"));
}

/// A signalfd stops being readable once its signal is taken another way (sigtimedwait, a
/// handler, another signalfd's read, SIG_IGN), as on Linux: poll, select and epoll say so at
/// once and a read is EAGAIN (until 2026-12-03 it stayed readable until a read found nothing).
#[test]
fn a_signalfd_is_not_readable_once_its_signal_is_taken_elsewhere() {
    passes_natively_and_same_on_1_and_2_cpus("signalfd_taken", Some("after the handler took it          poll 0"));
}

/// A signalfd inherited across fork reads the reader's own signals: a child's own raise (its
/// first system call after the fork) and kill make the child's copy readable to poll and epoll,
/// never the parent's (hrt armed the eventfd the two still shared); a signal pending in the
/// parent at the fork stays the parent's; a child's kill of its parent reaches the parent's
/// copy; a signalfd the child makes itself works beside the inherited one.
#[test]
fn an_inherited_signalfd_reads_the_readers_own_signals() {
    passes_natively_and_same_on_1_and_2_cpus("signalfd_fork", Some("child: poll after its own raise              1"));
}

/// A signalfd passed to the same process in an SCM_RIGHTS message stays a signalfd (it read as
/// the eventfd behind it: 8 bytes): records, poll, a mask shared with the original, life after
/// the original's close, recvmsg and recvmmsg, beside a pipe; a plain eventfd stays an eventfd.
#[test]
fn a_signalfd_passed_in_a_message_stays_a_signalfd() {
    passes_natively_and_same_on_1_and_2_cpus(
        "signalfd_passed",
        Some("received: read                               128 bytes, sig 10"),
    );
}

/// sched_getattr and sched_setattr (they were ENOSYS; chrt and some runtimes call them): the
/// program's attributes as the host has them for `hrt` (SCHED_OTHER, its niceness), the
/// record's size rules and the error cases, a niceness set through sched_setattr (clamped as
/// Linux clamps it) that nice(0) and getpriority then see, and the policy calls chrt makes
/// (priority ranges, sched_setscheduler and sched_setparam keeping SCHED_OTHER); a live
/// child's policy and niceness set by its parent, and another user's process refused (EPERM).
#[test]
fn sched_attributes_behave_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_sched_attr", Some("sched_setattr(OTHER, nice 3)   0"));
}

/// close_range (it was ENOSYS; Python's subprocess calls it in its children): a range of the
/// program's descriptors closed or marked FD_CLOEXEC, ranges past the last one and to ~0U
/// (the standard descriptors left alone when below the range), the error cases.
#[test]
fn close_range_behaves_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_close_range", Some("close_range(8, 9, CLOEXEC)       0"));
}

/// The umask applies to what the program creates (it was the kernel's own and the host never
/// applied it: a file made under umask 077 was 0644), FIFOs and other nodes (mknod, mknodat,
/// mkfifo; they were ENOSYS) and a FIFO used between two processes, and setting and removing
/// extended attributes (they were ENOSYS; `cp -a` said so), with their error cases; file
/// handles by name, link and descriptor (name_to_handle_at was ENOSYS).
#[test]
fn umask_nodes_and_setting_xattrs_behave_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_fs_nodes", Some("fifo read: through the fifo"));
}

/// Opens that the channel makes without a thread of their own (a regular file, a directory,
/// /dev/null: made with O_NONBLOCK against waiting, which must not show in F_GETFL) and path
/// lookups that the forwarder resolves in one host call when they stay on one mount: the
/// status flags of each kind of open, a FIFO's open waiting for its writer while plain opens
/// and stats go on, and lookups of every shape (links followed or not, dangling, `.`/`..`
/// endings, a file as a directory, a link into /proc/self), the same as natively.
#[test]
fn opens_and_lookups_behave_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus(
        "calls_open_kinds",
        Some("fifo read                                1 'x'"),
    );
}

/// inotify (it was ENOSYS: `tail -f` fell back to polling, Node.js's fs.watch threw): events of
/// creating, writing, renaming and deleting with their masks and names, poll, IN_DONT_FOLLOW,
/// IN_ONLYDIR, removing a watch, and the error cases.
#[test]
fn inotify_behaves_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_inotify", Some("rm_watch file                      ok"));
}

/// memfd_create with a shared mapping a forked child writes, fallocate, sync, syncfs, and the
/// mlock calls (all were ENOSYS; program memory is resident, so locking is already done), with
/// their error cases.
#[test]
fn memfd_file_space_and_mlock_behave_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_memfd_mlock", Some("child's write: from the child"));
}

/// timerfd (it was ENOSYS): periodic and one-shot timers read by count, absolute deadlines on
/// the monotonic, boot-time and real-time clocks (the program's monotonic clocks count from
/// its kernel's boot, so the monitor moves the deadline to the host's clock: without that the
/// 30 ms wait would end at once), poll and epoll beside a pipe, gettime, the old value, EAGAIN,
/// and the errors, with 1 and 2 vCPUs.
#[test]
fn timerfd_behaves_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_timerfd", Some("epoll: 1, data 7"));
}

/// utime, utimes and futimesat (they were ENOSYS): the times stat reports after each, "now"
/// for NULL, and the errors of out-of-range microseconds, bad pointers, missing files and bad
/// descriptors, with 1 and 2 vCPUs.
#[test]
fn old_time_setting_calls_behave_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_utimes", Some("mtime 1500000000.999999000"));
}

/// preadv2 and pwritev2 (they were ENOSYS): offsets and the descriptor's own position (-1),
/// RWF_APPEND, RWF_NOWAIT on a pipe, unknown flags, bad buffers, arrays and descriptors, with
/// 1 and 2 vCPUs.
#[test]
fn preadv2_and_pwritev2_behave_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_rwv2", Some("read: [world], position now 11"));
}

/// getrandom and AT_RANDOM come from the kernel's own generator (ChaCha20, seeded by the
/// host): every size, uniform-looking bytes, different bytes in a forked child and its parent
/// (each child is seeded afresh) and in threads drawing at once, the flags checked as Linux
/// checks them; static and static-PIE, at 1 and 2 vCPUs. Two runs must not start from the same
/// bytes (the program's first getrandom bytes and AT_RANDOM, on stderr), nor from the native run's.
#[test]
fn random_bytes_are_fresh_in_every_run_and_process() {
    let mut seen = vec![];
    for extra in [&[][..], &["-static-pie"]] {
        let prog = build("random_bytes", extra);
        let linux = native(&prog, &[]);
        assert_eq!(linux.code(), 0, "natively: {linux:?}");
        assert!(linux.stdout.contains("all checks passed"), "natively: {}", linux.stdout);
        seen.push(linux.stderr.clone());
        for cpus in ["1", "2"] {
            let got = hrt(&["--cpus", cpus], &prog, &[]);
            assert_same(&format!("random_bytes {extra:?} --cpus {cpus}"), &linux, &got);
            seen.push(got.stderr.clone());
        }
    }
    let fingerprints: Vec<&str> =
        seen.iter().filter_map(|s| s.lines().find(|l| l.starts_with("fingerprint "))).collect();
    assert_eq!(fingerprints.len(), seen.len(), "a run printed no fingerprint: {seen:?}");
    let mut halves: Vec<&str> = fingerprints.iter().flat_map(|f| f.split(' ').skip(1)).collect();
    let all = halves.len();
    halves.sort_unstable();
    halves.dedup();
    assert_eq!(halves.len(), all, "two runs began with the same random bytes: {fingerprints:?}");
}

/// A private, read-only mapping of a sparse file of 2 GiB and 8 KiB holds the file's bytes
/// everywhere (tests/programs/hostile/big_private_map.c). The kernel reads such a mapping
/// through the monitor, and one host read stops at 0x7ffff000 bytes: everything past it read
/// as zeros before.
#[test]
fn private_file_mappings_past_2_gib_hold_the_files_bytes() {
    let dir = std::env::temp_dir().join(format!("hrt-bigmap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let arg = dir.to_str().unwrap();
    let (linux, got) = native_then_hrt("big_private_map", &[arg], |linux| linux.code() == 0);
    assert_same("big_private_map", &linux, &got);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A program that writes into a pseudo-terminal it reads itself, in chunks of 100 bytes to 64
/// KiB (tests/programs/hostile/pty_own_reader.c; libuv's tty_pty_partial): every byte arrives,
/// then EIO. A write the terminal could not take blocked the thread serving the program's
/// calls, and the program hung for good; writes to a terminal that may not fit now go to a
/// worker (forward/blocking.rs, `write_may_wait`).
///
/// Linux itself now and then loses the end of a chunk when the slave closes while the host is
/// loaded (natively "chunks of 8192: wrote 65536, read 56832, then EIO" once in a CI run beside
/// other work), and hrt's terminal is the host's: a run whose reads came short is made again,
/// up to three times on each side; a hang or a difference in every run still fails.
#[test]
fn a_program_reading_its_own_pty_while_writing_it_does_not_hang() {
    let prog = build("pty_own_reader", &[]);
    let whole = |out: &common::hostile::Outcome| {
        out.code() == 0
            && out.stdout.contains("pty own reader: done")
            && out.stdout.lines().filter(|l| l.contains("wrote 65536, read 65536, then EIO")).count() == 5
    };
    let linux = (0..3).map(|_| native(&prog, &[])).find(whole).expect("natively, three runs read short or failed");
    for cpus in ["1", "2"] {
        let mut got = hrt(&["--cpus", cpus], &prog, &[]);
        for _ in 0..2 {
            if got.hung || whole(&got) {
                break;
            }
            got = hrt(&["--cpus", cpus], &prog, &[]);
        }
        assert_same(&format!("pty_own_reader --cpus {cpus}"), &linux, &got);
    }
}

/// A read of a pseudo-terminal's master side after its slave side closed fails with EIO, as on
/// Linux (tests/programs/hostile/pty_master_eof.c). `hrt`, which stops itself for a background
/// job's read of its own terminal (forward/tty_stop.rs), stopped itself for good here: the
/// master answers the slave's foreground group, never `hrt`'s.
#[test]
fn a_pty_masters_read_after_the_slave_closed_fails_as_on_linux() {
    let (linux, got) = native_then_hrt("pty_master_eof", &[], |linux| linux.stdout.contains("EIO after"));
    assert_same("pty_master_eof", &linux, &got);
}

/// prctl's name, dumpable flag, seccomp mode, security bits, ambient capabilities, keep
/// capabilities, timer slack, THP-disable, PR_MCE_KILL and PR_GET_AUXV (was EINVAL with a line; rustix
/// reads the auxiliary vector with it) answer as on Linux (tests/programs/hostile/calls_prctl.c),
/// and an option hrt does not implement fails with a line on stderr, once however often it is
/// used (it failed silently with EINVAL before).
#[test]
fn prctl_answers_as_on_linux_and_says_what_it_lacks() {
    let (linux, got) = native_then_hrt("calls_prctl", &[], |linux| linux.code() == 0);
    assert_eq!(got.stdout, linux.stdout, "{got:?}");
    assert_eq!(got.code(), 0, "{got:?}");
    let lines: Vec<&str> = got.stderr.lines().filter(|l| l.contains("is not implemented")).collect();
    assert_eq!(lines.len(), 2, "one line per option expected:\n{}", got.stderr);
    assert!(lines.iter().any(|l| l.contains("prctl option 62 (PR_SCHED_CORE)")), "{}", got.stderr);
    assert!(lines.iter().any(|l| l.contains("prctl option 1000 is")), "{}", got.stderr);
}

/// The prctl options that are the host process's: a parent-death signal reaches a grandchild
/// whose parent ended, a subreaper waits for its orphaned grandchild (and for nothing else of
/// `hrt`'s), and no-new-privileges is reported and passed to a spawned program
/// (tests/programs/hostile/prctl_host.c).
#[test]
fn prctl_parent_death_signal_subreaper_and_no_new_privs_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("prctl_host", Some("then a grandchild reaped: 1, status 5"));
}

/// personality answers and keeps what `setarch -R` sets, across fork and exec (it was ENOSYS).
#[test]
fn personality_is_kept_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_personality", Some("after exec: 0x40000"));
}

/// PR_SET_VMA (names for anonymous memory, which Go's runtime sets at start) answers as a Linux
/// without CONFIG_ANON_VMA_NAME does (this project's hosts), and without a line on stderr: it
/// was reported as unimplemented in every Go program.
#[test]
fn naming_anonymous_memory_answers_as_a_linux_without_the_option() {
    let (linux, got) = native_then_hrt("calls_vma_name", &[], |linux| linux.code() == 0);
    if linux.stdout.contains("named: 0") {
        eprintln!("this host's Linux names anonymous memory; hrt answers as one that does not");
        return;
    }
    assert_same("calls_vma_name", &linux, &got);
    assert!(!got.stderr.contains("not implemented"), "{}", got.stderr);
}

/// pidfd_open, pidfd_send_signal (to a child, and to ourselves: delivered before the call
/// returns), poll and waitid(P_PIDFD) on a pidfd, and their errors, as on Linux (both calls
/// were ENOSYS).
#[test]
fn pidfds_behave_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("pidfd_calls", Some("pid matches 1, code 2"));
}

/// pidfd_send_signal through a /proc/<pid> directory descriptor (it was EBADF: hrt looked for a
/// pidfd's `Pid:` line in the descriptor's fdinfo): a child stopped, continued and killed, an
/// exec'd child killed, the caller's own /proc/self and /proc/<pid> (pending before the call
/// returns); a task directory, other /proc files and an O_PATH descriptor refused as on Linux.
#[test]
fn a_proc_directory_serves_as_a_pidfd_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus(
        "pidfd_proc_dir",
        Some("exec'd child                                 killed by 9"),
    );
}

/// fcntl(F_CREATED_QUERY) answers whether the descriptor's open created its file (it was
/// EINVAL), and socket calls on an O_PATH descriptor are EBADF (they were ENOTSOCK), as on
/// Linux (LTP's fcntl40 and accept03).
#[test]
fn created_query_and_socket_calls_on_o_path_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_created_opath", Some("accept on O_PATH: Bad file descriptor"));
}

/// getrusage's ru_maxrss follows the memory the program touches, its own and its children's
/// (it was always 0).
///
/// Natively the program is started by a small shell that forks it: started straight from
/// this test process (posix_spawn, a vfork), Linux's exec records the test process's own
/// resident peak as the program's (`setmax_mm_hiwater_rss` of the mm it leaves), tens of MiB
/// while many tests run, and the native run failed its "below 32 MiB at start".
#[test]
fn getrusage_reports_the_largest_resident_set() {
    let prog = build("rusage_maxrss", &[]);
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c").arg("\"$0\"; exit $?").arg(&prog);
    let linux = run(cmd, None);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert!(linux.stdout.contains("grew by 64 MiB give or take 8: 1"), "natively: {}", linux.stdout);
    assert_same_on_1_and_2_cpus("rusage_maxrss", &prog, &[], &linux);
    // `hrt` started by posix_spawn from a process whose peak was 256 MiB: Linux carries that
    // peak into `hrt`'s own ru_maxrss, which the program's figures were measured against
    // (start 4 KiB, grown 0; in CI, the test runner's peak: grown 39 MiB of 64).
    let launcher = build("spawn_after_peak", &[]);
    let mut cmd = std::process::Command::new(&launcher);
    cmd.arg(env!("CARGO_BIN_EXE_hrt")).args(["run", "--cpus", "1"]).arg(&prog);
    let got = run(cmd, None);
    assert_eq!(got.stdout, linux.stdout, "hrt started after a large peak: {}", got.stderr);
}

/// A vfork child's setsid and TIOCSCTTY before its exec (Go's Setsid + Setctty, os/signal
/// TestTerminalSignal; tests/programs/hostile/ctty_in_spawn_child.c): the exec'd program has the
/// pseudo-terminal as its controlling terminal; EPERM before the setsid, ENOTTY on a file. The
/// ioctl was made in `hrt`'s process, which leads no session: EPERM.
#[test]
fn a_spawn_child_takes_a_controlling_terminal() {
    passes_natively_and_same_on_1_and_2_cpus("ctty_in_spawn_child", Some("ctty in spawn child: done, status 0"));
}

/// A POSIX lock stays its owner's while a vfork child or posix_spawn dup2s the locked
/// descriptor and execs (Go's syscall TestFcntlFlock; tests/programs/hostile/lock_across_spawn.c):
/// the exec'd program and a later checker find the range locked by the parent. The child's
/// dup2 was a host descriptor in `hrt`'s process, whose close released the parent's lock.
#[test]
fn a_lock_survives_a_spawn_childs_dup2() {
    passes_natively_and_same_on_1_and_2_cpus("lock_across_spawn", Some("lock across spawn: done"));
}

/// Symbolic links whose target ends in "/" and paths ending in "/." (Go's os.Root tests;
/// tests/programs/hostile/symlink_trailing_slash.c): a link "f/" to a file is ENOTDIR for
/// open, stat, chmod and access, "l/." through a link to a file too, and O_CREAT through a
/// dangling "nosuch/" is EISDIR. hrt followed "f/" to the file and created "nosuch".
#[test]
fn a_links_trailing_slash_asks_for_a_directory() {
    passes_natively_and_same_on_1_and_2_cpus("symlink_trailing_slash", Some("trailing slash: done"));
}

/// The CPUs a program set are kept by the programs it starts, after fork + execve and through
/// posix_spawn (tests/programs/hostile/affinity_exec.c; BusyBox's taskset test): both got all of
/// the host's CPUs under the default `--children host`. vCPU i stands for the i-th host CPU
/// `hrt` may use.
#[test]
fn a_programs_cpus_are_kept_across_exec_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("affinity_exec", Some("spawned: 1 CPU(s), CPU 0 among them: yes"));
}

/// sched_setaffinity of another process as LTP's sched_setaffinity01 checks it
/// (tests/programs/hostile/affinity_other_process.c): root may, a child that became nobody gets
/// EPERM for its parent, a pid no process has ESRCH. hrt accepted the other user's change.
#[test]
fn another_processs_affinity_is_refused_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("affinity_other_process", Some("affinity of others: done, child 0"));
}

/// The security bits, the bounding set and the speculation mitigations as LTP's prctl02 uses
/// them (tests/programs/hostile/calls_capbits.c): PR_CAPBSET_DROP drops (PR_CAPBSET_READ then
/// reads 0), PR_SET_SECUREBITS sets, both EPERM once CAP_SETPCAP is dropped, and
/// PR_GET_SPECULATION_CTRL answers the host's state; all three were "not implemented" (EINVAL).
#[test]
fn capability_bits_change_and_refuse_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_capbits", Some("capbits: done"));
}

/// PR_CAPBSET_READ answers the host's bounding set, without a line on stderr (every procps tool
/// under hrt printed that the option was not implemented).
#[test]
fn the_capability_bounding_set_reads_as_the_hosts() {
    let (linux, got) = native_then_hrt("calls_capbset", &[], |linux| linux.code() == 0);
    assert_same("calls_capbset", &linux, &got);
    assert!(!got.stderr.contains("not implemented"), "{}", got.stderr);
}

/// The host's CLOCK_REALTIME, CLOCK_MONOTONIC and CLOCK_BOOTTIME now, in nanoseconds.
fn host_clocks() -> [i128; 4] {
    [libc::CLOCK_REALTIME, libc::CLOCK_MONOTONIC, libc::CLOCK_BOOTTIME, libc::CLOCK_MONOTONIC_RAW].map(|clock| {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid timespec to write.
        unsafe { libc::clock_gettime(clock, &mut ts) };
        ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128
    })
}

/// The program's clocks are the host's, as every process's are on Linux: each reading (vDSO and
/// system call, main program and forked child) lies between the host's just before the run and
/// just after it. Before, the monotonic and boot-time clocks of each `hrt run` started at zero,
/// and later CLOCK_MONOTONIC_RAW was the host's CLOCK_MONOTONIC.
#[test]
fn the_programs_clocks_are_the_hosts() {
    let prog = build("clocks_shared", &[]);
    let check = |what: &str, run: &dyn Fn() -> common::hostile::Outcome| {
        let before = host_clocks();
        let got = run();
        let after = host_clocks();
        assert_eq!(got.code(), 0, "{what}: {got:?}");
        let mut readings = 0;
        for line in got.stdout.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            let i = match f[0] {
                "realtime" => 0,
                "monotonic" => 1,
                "boottime" => 2,
                "monotonic_raw" => 3,
                _ => {
                    assert!(line.ends_with(": 1"), "{what}: {line}");
                    continue;
                }
            };
            let v: i128 = f[2].parse().unwrap();
            assert!(before[i] <= v && v <= after[i], "{what}: {line} not within {} .. {}", before[i], after[i]);
            readings += 1;
        }
        assert_eq!(readings, 16, "{what}: {}", got.stdout);
    };
    check("natively", &|| native(&prog, &[]));
    for cpus in ["1", "2"] {
        check(&format!("hrt --cpus {cpus}"), &|| hrt(&["--cpus", cpus], &prog, &[]));
    }
}

/// membarrier (it was ENOSYS): QUERY's list, EPERM for the PRIVATE_EXPEDITED commands before
/// their REGISTER, EINVAL for bad flags and commands, registrations kept by a forked child and
/// dropped by exec, and a two-thread asymmetric Dekker whose slow side's membarrier makes the
/// other thread's store visible (no round where both loads miss).
#[test]
fn membarrier_answers_and_orders_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus(
        "calls_membarrier",
        Some("dekker rounds where both loads missed        0 of 500"),
    );
}

/// System V semaphores and message queues (tests/programs/hostile/sysv_sem_msg.c): values,
/// IPC_NOWAIT, timed and woken waits, EINTR under SA_RESTART, a forked child's SEM_UNDO, a
/// child's message, short receive buffers and bad pointers, as natively.
#[test]
fn system_v_semaphores_and_message_queues_act_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("sysv_sem_msg", Some("sysv sem msg: done"));
}

/// POSIX message queues (tests/programs/hostile/posix_mq.c): priorities, O_NONBLOCK, timed and
/// woken receives, restarts under SA_RESTART, poll, a child's message, notification by signal
/// and by thread, short buffers and bad pointers, names, as natively.
#[test]
fn posix_message_queues_act_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("posix_mq", Some("posix mq: done"));
}

/// F_GETFL and /proc/self/fdinfo show the program's flags: not the O_NOFOLLOW hrt's walk adds
/// to its opens, not the O_CLOEXEC every monitor descriptor has, but the program's own.
#[test]
fn descriptor_flags_are_the_programs() {
    passes_natively_and_same_on_1_and_2_cpus("fd_flags", Some("fd flags: done"));
}

/// mmap of each kind of descriptor answers as Linux's checks do: EACCES for one not open for
/// reading, ENODEV for pipes, sockets, directories, character devices other than /dev/zero and
/// /proc files (also the ones hrt makes itself), EBADF for O_PATH.
#[test]
fn only_mappable_files_map() {
    passes_natively_and_same_on_1_and_2_cpus("mmap_kinds", Some("mmap kinds: done"));
}

/// openat2: each RESOLVE_* restriction as the host kernel enforces it, `struct open_how`
/// checked as Linux does, and /proc/self reached through it the program's own.
#[test]
fn openat2_resolves_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_openat2", Some("openat2: done"));
}

/// Thread calls Linux refuses (futex's realtime clock outside the absolute waits, a requeue's
/// negative counts, tgkill's int ids, clone's flag combinations), another thread's robust
/// list, pids no process has, and a thread's /proc/self/task entries alive and ended.
#[test]
fn thread_calls_refuse_and_answer_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_thread_errnos", Some("thread errnos: done"));
}

/// PTHREAD_PRIO_INHERIT mutexes (the PI futex operations): exclusion under contention, try,
/// timed and clock locks, error checking, a robust owner's death, and a waiter whose handler
/// ran goes on waiting (tests/programs/hostile/pi_mutexes.c).
#[test]
fn priority_inheritance_mutexes_lock_as_on_linux() {
    passes_natively_and_same_on("pi_mutexes", Some("pi mutexes: done"), &["1", "2", "4"]);
}

/// futex(2)'s argument checks in Linux's order (tests/programs/hostile/futex_argument_checks.c):
/// FUTEX_CLOCK_REALTIME on a private wake was EINVAL from the fast path (ENOSYS), a requeue
/// to an unmapped word EFAULT (0: only a key), a PI trylock of a word whose owner no thread
/// is EAGAIN (ESRCH, with the waiters bit set as Linux sets it).
#[test]
fn futex_arguments_are_checked_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("futex_argument_checks", Some("futex argument checks: done"));
}

/// arch_prctl's CPUID and extended-state codes (tests/programs/hostile/calls_arch_prctl.c):
/// answered as Linux does on a CPU without CPUID faulting or AMX (they were EINVAL). The
/// guest's CPU has no CPUID faulting whatever the host's has (a CPUID site the kernel did not
/// rewrite goes to the host, which the guest cannot make fault), so ARCH_SET_CPUID is ENODEV
/// under hrt also where the host's Linux turns it on (0). On a host with AMX, Linux offers its
/// tile data (supported, permitted on request: the two masks differ, and the request gives 0);
/// hrt does not set up the guest's extended-feature permission, so it answers as Linux on a CPU
/// without AMX, which a program reads as "no AMX here" before it uses any.
#[test]
fn arch_prctl_cpuid_and_xstate_as_on_linux() {
    let prog = build("calls_arch_prctl", &[]);
    let mut linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert!(linux.stdout.contains("x87 and SSE kept: 1, the same both ways: "), "natively: {}", linux.stdout);
    let on = format!("{:<26} 0 \n", "ARCH_SET_CPUID 0");
    linux.stdout = linux.stdout.replace(&on, &format!("{:<26} -1 ENODEV\n", "ARCH_SET_CPUID 0"));
    let amx = format!("{:<26} 0 \n", "ARCH_REQ_XCOMP_PERM AMX");
    if linux.stdout.contains(&amx) {
        linux.stdout = linux
            .stdout
            .replace(&amx, &format!("{:<26} -1 EOPNOTSUPP\n", "ARCH_REQ_XCOMP_PERM AMX"))
            .replace("the same both ways: 0", "the same both ways: 1");
    }
    assert!(linux.stdout.contains("x87 and SSE kept: 1, the same both ways: 1"), "natively: {}", linux.stdout);
    assert_same_on_1_and_2_cpus("calls_arch_prctl", &prog, &[], &linux);
}

/// A program's WRGSBASE (tests/programs/hostile/wrgsbase.c), which Linux runs where the CPU has
/// FSGSBASE: not supported, since the kernel keeps its per-CPU data behind GS in the program's
/// ring (AT_HWCAP2 has no FSGSBASE, ARCH_SET_GS is EINVAL). The VM triple-faults at the next
/// kernel entry; the run must end as a program killed by SIGILL (status 132) with one line
/// naming the instruction and the base, not as a kernel crash (status 101, "triple-faulted"),
/// for a base in the program's memory and for a kernel-half one (Linux's x86
/// syscall_arg_fault selftest). With "spin" the kernel is next entered by the timer interrupt
/// that preempts the program for its other thread on one vCPU: a kernel-half base made the
/// interrupt's entry fault at the base, again and again, until stop 98 (a hang).
#[test]
fn a_program_that_writes_its_gs_base_ends_with_sigill_and_says_why() {
    let prog = build("wrgsbase", &[]);
    let runs = [
        ("1", &[][..]),
        ("2", &[][..]),
        ("1", &["high"][..]),
        ("1", &["low", "spin"][..]),
        ("1", &["high", "spin"][..]),
    ];
    for (cpus, args) in runs {
        // Natively the base is written and read back (a CPU without FSGSBASE fails here).
        let linux = native(&prog, args);
        let same = linux.code() == 0 && linux.stdout.contains("GS base read back: the same");
        assert!(same, "natively, {args:?}: {linux:?}");
        let got = hrt(&["--cpus", cpus], &prog, args);
        assert_eq!(got.code(), 128 + 4, "--cpus {cpus} {args:?}: {got:?}");
        assert!(got.stdout.contains("setting the GS base"), "--cpus {cpus} {args:?}: {got:?}");
        assert!(
            got.stderr.contains("Illegal instruction: the program set the GS base to 0x")
                && got.stderr.contains("(WRGSBASE)"),
            "--cpus {cpus}: {got:?}"
        );
    }
}

/// sysinfo's load averages are the host's, as /proc/loadavg (read from the host) says; they were
/// zeros until 2026-12-03, so glibc's getloadavg (and with it libgomp's OMP_DYNAMIC) saw an idle
/// machine while /proc/loadavg showed the real load.
#[test]
fn sysinfo_loads_agree_with_proc_loadavg() {
    passes_natively_and_same_on_1_and_2_cpus("sysinfo_loads", Some("agree with /proc/loadavg: 1"));
}

/// A FIFO opened by its path, read while a forked child writes 200 KiB in bursts: every byte
/// in order, then EOF; a writer whose reader closes after one read gets EPIPE, as on Linux (hrt
/// reads such a FIFO through a second, non-blocking open of it, which must go with the first).
#[test]
fn a_fifo_reads_in_order_and_its_writer_sees_the_reader_go() {
    let prog = build("fifo_read", &[]);
    let dir = std::env::temp_dir().join(format!("hrt-fifo-read-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let linux = native(&prog, &[d]);
    assert!(linux.code() == 0 && linux.stdout.contains("read 204800 bytes, 0 wrong, then 0"), "natively: {linux:?}");
    assert!(linux.stdout.contains("writer: EPIPE"), "natively: {linux:?}");
    assert_same_on_1_and_2_cpus("fifo_read", &prog, &[d], &linux);
    let _ = std::fs::remove_dir_all(&dir);
}

/// seccomp as on Linux (tests/programs/hostile/seccomp_filters.c): strict mode; BPF filters
/// with ERRNO (also on getpid, which the fast path of rewritten calls serves without them),
/// TRAP (SIGSYS's siginfo and a handler that emulates the call), TRAP while blocked,
/// KILL_PROCESS, KILL_THREAD alone and among two, TRACE and USER_NOTIF without a tracer or
/// listener, LOG; precedence among filters; TSYNC, its conflict answer and new threads'
/// inheritance; the programs Linux refuses; chains filled to Linux's limit (counted as Linux
/// counts it) by a thread that then ends (its 3,641 filters were once dropped by recursion,
/// which overflowed the kernel stack), and 300 threads that each install a 4,096-instruction
/// filter and end (the monitor's copies were once never given back: ENOMEM after 64); and the
/// filters' reach into host programs
/// (system(), fork + exec) and an exec of the program itself. At 1 and 2 vCPUs, and nothing
/// said on hrt's stderr.
#[test]
fn seccomp_filters_act_as_on_linux() {
    let prog = build("seccomp_filters", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert!(linux.stdout.contains("uname after fork + exec: 1"), "natively: {}", linux.stdout);
    for cpus in ["1", "2"] {
        let got = hrt(&["--cpus", cpus], &prog, &[]);
        assert_same(&format!("seccomp_filters --cpus {cpus}"), &linux, &got);
        assert!(!got.stderr.contains("hrt:"), "hrt said: {}", got.stderr);
    }
}

/// A signal whose default action ends the process, sent by the program to itself (kill,
/// tgkill, sigqueue) while the sender blocks it and a sleeping thread does not, ends the
/// program inside the sender's call, as Linux does (tests/programs/hostile/fatal_signal_to_self.c).
/// It was taken by the sleeping thread on its way back, so the sender ran on ("after the
/// signal" printed) and its own exit ended the program with status 0 in 3-4 of 10 runs.
#[test]
fn a_fatal_signal_to_itself_ends_the_program_at_once() {
    passes_natively_and_same_on_1_and_2_cpus("fatal_signal_to_self", Some("sigqueue: killed by SIGUSR2 10 times"));
}

/// A signal that reaches the program before its child ends interrupts the program's wait for
/// it (wait4, waitid: EINTR; with SA_RESTART the restarted wait returns the child), as on Linux
/// (tests/programs/hostile/signal_before_child_end.c). The host's wait returned the child
/// first in 2-3 of 10 rounds, because the kernel took the host's signal after the child's end
/// reached the monitor: `timeout -s TERM 1 hrt run make -j2` printed "wait: No child
/// processes" where make natively reports each job terminated.
#[test]
fn a_signal_before_a_childs_end_interrupts_the_wait() {
    passes_natively_and_same_on_1_and_2_cpus(
        "signal_before_child_end",
        Some("wait4 without SA_RESTART: EINTR in 10 of 10 rounds"),
    );
}

/// capset as on Linux (tests/programs/hostile/capabilities.c): its checks (EINVAL with the
/// preferred version written back, EPERM for another process and for raising the permitted
/// set, EFAULT) and its effects on the program's file accesses, its forked child and
/// /proc/self/status. It was ENOSYS: ping stopped at "cap_set_proc: Function not implemented".
#[test]
fn capset_changes_what_the_program_may_do_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("capabilities", Some("forked child: DAC permitted"));
}

/// Socket filters as on Linux (tests/programs/hostile/socket_filters.c): SO_ATTACH_FILTER's
/// program decides which datagrams arrive, SO_DETACH_FILTER, Linux's checks (size, 4,096
/// instructions, EFAULT, an invalid program), and raw sockets' ICMP_FILTER. Both options were
/// refused with ENOPROTOOPT (ping warned that it could not install its filter).
#[test]
fn socket_filters_act_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("socket_filters", Some("keep-k: k1 k3 (then"));
}

/// A vfork child before its exec ends as the process it is on Linux
/// (tests/programs/hostile/vfork_child_ends.c): its own fault (NULL write, ud2, abort) ends
/// only it and its parent's wait reports the signal (hrt ended the whole program); a legacy
/// clone's exit signal above 64 is sent to nobody (hrt's kernel panicked); clone3 refuses an
/// exit signal above 64, a stack outside user space, set_tid without a size (EINVAL) and an
/// unwritable CLONE_PIDFD address (EFAULT) before it makes anything.
#[test]
fn a_vfork_childs_fault_ends_only_the_child() {
    passes_natively_and_same_on_1_and_2_cpus("vfork_child_ends", Some("NULL write: child killed by signal 11"));
}

/// vmsplice of more than a pipe holds hands over what fits after waiting for room once
/// (tests/programs/hostile/vmsplice_partial.c; it waited until all was written, for good, in
/// a program that reads only after each vmsplice, LTP's vmsplice01).
#[test]
fn vmsplice_hands_over_what_fits() {
    passes_natively_and_same_on_1_and_2_cpus("vmsplice_partial", Some("same bytes: 1"));
}

/// Answers LTP's system-call tests check, as Linux gives them (tests/programs/hostile/
/// calls_ltp_errnos.c): wait4(INT_MIN), scheduling queries of a process that does not exist,
/// timer_settime without a setting, a raw SIGEV_THREAD timer, sigqueue and kill to a thread's
/// id, a vfork child's pending signals, getsockopt of a level TCP does not know.
#[test]
fn errors_and_answers_ltp_checks_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_ltp_errnos", Some("vfork child has it pending: 0"));
}

/// Each of 55 threads waiting on a futex shows S in /proc/PID/task/TID/stat
/// (tests/programs/hostile/proc_task_states.c): only the first 32 threads' states were
/// published, the others showed the monitor's R (LTP's futex tests waited for them forever).
#[test]
fn every_threads_proc_state_shows_its_wait() {
    passes_natively_and_same_on_1_and_2_cpus("proc_task_states", Some("55 of 55 waiting threads show S"));
}

/// A handler frame on an alternate stack another thread keeps making read-only (LTP's
/// signal06; tests/programs/hostile/altstack_read_only_race.c): Linux's force_sigsegv, a
/// SIGSEGV to the program's handler, and the program goes on (it died of SIGSEGV; with two
/// vCPUs the frame's write after its check could fault in the kernel, a kernel panic).
#[test]
fn a_frame_on_a_read_only_alternate_stack_is_a_sigsegv_to_its_handler() {
    passes_natively_and_same_on_1_and_2_cpus(
        "altstack_read_only_race",
        Some("20000 signals handled, floating-point value intact"),
    );
}

/// The alternate signal stack as on Linux (tests/programs/hostile/altstack_frames.c): the
/// frame's uc_stack flags as set, rt_sigreturn restoring the stack from uc_stack, a stack of
/// `sysconf(_SC_MINSIGSTKSZ)` bytes holding a frame (AT_MINSIGSTKSZ was 2,048, less than the
/// AVX-512 frame: SIGSEGV), SIGSEGV when nested handlers overflow it (hrt hung), and SIGSYS
/// among the synchronous signals taken first.
#[test]
fn the_alternate_signal_stack_acts_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("altstack_frames", Some("alternate stack overflow: killed by signal 11"));
}

/// `int n` as on Linux (tests/programs/hostile/int_n.c): SIGSEGV naming the gate, SIGTRAP for
/// `int $3`, where PVM's #UD made them SIGILL.
#[test]
fn int_n_raises_what_linux_raises() {
    passes_natively_and_same_on_1_and_2_cpus("int_n", Some("signal 11 code 128 trapno 13 err 0x20a"));
}

/// Real-time signals from other processes arrive once each and in order, as Linux queues them
/// (tests/programs/hostile/realtime_signals_queued.c): 2,000 sigqueues to a handler, 1,100 of
/// two signals interleaved to sigwaitinfo, 1,000 to a forked child, rt_tgsigqueueinfo to
/// another process's main thread. The channel kept one bit per signal: 2-8 of 50-300 arrived
/// and the program waited for the rest for good; two host threads could also swap two.
#[test]
fn realtime_signals_from_other_processes_all_arrive_in_order() {
    passes_natively_and_same_on_1_and_2_cpus(
        "realtime_signals_queued",
        Some("handler: 2000 of 2000 arrived, 0 out of order"),
    );
}

/// Setting the realtime clock, as Python's test_time does (tests/programs/hostile/calls_clock_set.c:
/// clock_settime and settimeofday to the time just read): it succeeds with CAP_SYS_TIME and
/// the host's clock is set; the program's clocks (vDSO, system call, gettimeofday, time) still
/// agree with the host's. It was ENOSYS.
#[test]
fn the_realtime_clock_is_set_on_the_host_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_clock_set", Some("clock_set: done"));
}

/// Setting the clock answers what Linux answers up to the change itself
/// (tests/programs/hostile/clock_set.c: clocks that cannot be set, CPU-time clocks, bad
/// pointers, times and zones out of range, EPERM without CAP_SYS_TIME); it was ENOSYS for
/// every call (`date -s` said "Function not implemented" where Linux refuses).
#[test]
fn setting_the_clock_is_refused_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus(
        "clock_set",
        Some("clock_settime REALTIME, no capability        -1 Operation not permitted"),
    );
}

/// chroot refuses as Linux does before the change (tests/programs/hostile/chroot_checks.c:
/// missing, file, empty, bad pointer, EPERM without CAP_SYS_CHROOT); it was ENOSYS for all.
#[test]
fn chroot_refuses_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus(
        "chroot_checks",
        Some("chroot /tmp, no capability           -1 Operation not permitted"),
    );
}

/// Threads that idle vCPUs may take from busy ones keep their thread-local storage, errno,
/// vector registers and stack across the move (tests/programs/hostile/threads_moved.c: six
/// threads of forwarded calls, yields and short sleeps at one and two vCPUs).
#[test]
fn threads_keep_their_state_when_idle_cpus_take_them() {
    passes_natively_and_same_on("threads_moved", Some("thread 5: sum"), &["1", "2", "3"]);
}

/// Threads created with a CPU mask (pthread_attr_setaffinity_np; libgomp's bound teams) start
/// on their CPU, and the creator's sched_setaffinity does not wait on a new thread that blocks
/// on glibc's start lock (it waited out its 1 s bound ~8 times in 2,000 creations at --cpus 4,
/// saying so on stderr: tests/programs/hostile/threads_born_masked.c).
#[test]
fn threads_born_with_a_cpu_mask_start_there_without_stalling_their_creator() {
    let prog = build("threads_born_masked", &[]);
    let linux = native(&prog, &[]);
    assert!(linux.stdout.contains("0 started elsewhere"), "natively: {linux:?}");
    for n in ["2", "4"] {
        let got = hrt(&["--cpus", n], &prog, &[]);
        assert_same(&format!("threads_born_masked --cpus {n}"), &linux, &got);
        assert!(
            !got.stderr.contains("did not move"),
            "--cpus {n}: a creator waited for a blocked thread:\n{}",
            got.stderr
        );
    }
}

/// `hrt run --profile` names where the vCPUs were: the program's busy function first among
/// its own (its symbol table; static, static-PIE and dynamic), the kernel's idle loop or a
/// halt on the other vCPU (the kernel's own symbols), a shared libc's memset by the library's name, the
/// image a shell exec'd by its own symbols, with the program's output and status as natively.
#[test]
fn profile_names_the_programs_busy_function_and_the_kernels_idle_loop() {
    let prog = build("profile_target", &[]);
    let linux = native(&prog, &[]);
    assert!(linux.stdout.contains("sum positive"), "natively: {linux:?}");
    let source = common::hostile::repo_root().join("tests/programs/hostile/profile_target.c");
    let dynamic = common::hostile::build_dynamic(&source, "profile_target", &[]);
    for link in ["-static", "-static-pie", "dynamic"] {
        let prog = match link {
            "dynamic" => dynamic.clone(),
            "-static" => build("profile_target", &[]),
            _ => build("profile_target", &[link]),
        };
        let got = hrt(&["--cpus", "2", "--profile=2000"], &prog, &[]);
        assert_same(&format!("profile_target {link:?}"), &linux, &got);
        let lines: Vec<&str> = got.stderr.lines().collect();
        let head = lines.iter().position(|l| l.starts_with("hrt: profile: ")).unwrap_or_else(|| {
            panic!("{link:?}: no profile on stderr:\n{}", got.stderr);
        });
        // The idle vCPU's samples (idle loop, halts) may outnumber the busy one's on a loaded
        // host: the program's own busiest function is the loop.
        assert!(
            lines[head + 1..]
                .iter()
                .find(|l| !l.contains("[kernel]") && !l.contains("[halted: "))
                .is_some_and(|l| l.ends_with("  spins_in_this_function")),
            "{link:?}: the program's busiest function is not its loop:\n{}",
            got.stderr
        );
        // The idle vCPU polls (the kernel's idle loop), then halts (counted, not interrupted).
        assert!(
            lines[head..]
                .iter()
                .any(|l| l.ends_with("[kernel] hrt_kernel::sched::idle::idle_loop") || l.contains("[halted: ")),
            "{link:?}: the idle vCPU's samples are not named:\n{}",
            got.stderr
        );
        if link == "-static" {
            // Started by a shell that execs it: the samples since are named with its symbols.
            let exec = format!("exec {}", prog.display());
            let got = hrt(&["--cpus", "1", "--profile=2000"], std::path::Path::new("/bin/sh"), &["-c", &exec]);
            assert_same("profile_target after an exec", &linux, &got);
            assert!(
                got.stderr.contains("(the program exec'd ")
                    && got
                        .stderr
                        .lines()
                        .find(|l| l.starts_with("hrt: ")
                            && l.contains('%')
                            && !l.contains("[kernel]")
                            && !l.contains("[halted: "))
                        .is_some_and(|l| l.ends_with("  spins_in_this_function")),
                "after an exec: {}",
                got.stderr
            );
        }
        if link == "dynamic" {
            // The shared C library ld.so mapped: its samples carry its name.
            assert!(
                lines[head..].iter().any(|l| l.contains("  [libc.so.6] ")),
                "{link:?}: no samples named in libc.so.6:\n{}",
                got.stderr
            );
        }
    }
}

/// Linux native AIO (io_setup, io_submit, io_getevents, io_pgetevents, io_cancel, io_destroy):
/// reads, writes, vectored and synced requests, pipes, eventfd completions, every error
/// io_submit answers itself against those its events carry, a full context, a forked child;
/// a completion to a blocking eventfd whose count is full (io_submit waited for good).
#[test]
fn linux_aio_behaves_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_aio", Some("aio: done"));
}

/// futex_waitv: argument checks, EAGAIN, absolute timeouts on both clocks, the index of the
/// word another thread wakes among up to 128, and EINTR from a signal without SA_RESTART.
#[test]
fn futex_waitv_behaves_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("futex_waitv", Some("futex_waitv: done"));
}

/// Calls that never wait (lseek, fstat, a read of /dev/zero) in a process another process keeps
/// signalling: none fails with EINTR, as on Linux (the forwarded call gave up when the signal
/// came through the host first; found by the stress-ng sweep).
#[test]
fn quick_calls_finish_under_signals_from_another_process() {
    passes_natively_and_same_on_1_and_2_cpus("quick_calls_signalled", Some("quick calls under signals: child exit 0"));
}

/// getdents, the old directory record (was ENOSYS): the same names and types as getdents64, in
/// small reads too, and the error cases, as on Linux.
#[test]
fn old_getdents_lists_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_getdents", Some("getdents: done"));
}

/// The timer slack per thread, as on Linux (tests/programs/hostile/calls_timerslack.c, LTP's
/// prctl08): /proc/self/timerslack_ns shows the main thread's (it showed `hrt`'s, which never
/// changed), a new thread starts from its creator's, and a forked child's default is the
/// forking thread's slack (it was Linux's 50 us).
#[test]
fn the_timer_slack_is_per_thread_and_shown_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_timerslack", Some("timerslack: done"));
}

/// A signal another process sent before its message is there when the message is read
/// (tests/programs/hostile/signal_before_message.c): the handler has run when `read` returns,
/// `sigpending` lists a blocked one, a `sigtimedwait` that does not wait takes it, a queued
/// real-time signal with its value. The signal reached the child's kernel whenever a host
/// thread of `hrt` ran its handler: ~30 of 400 rounds wrong at `--cpus 2`, and every queued
/// value after the first late one off by one.
#[test]
fn a_signal_sent_before_a_message_is_there_when_the_message_is_read() {
    passes_natively_and_same_on_1_and_2_cpus("signal_before_message", Some("every signal there first"));
}

/// A child that blocks every signal is sent all of them by its parent (LTP's sighold02;
/// tests/programs/hostile/signals_all_blocked.c): all stay pending, but SIGCONT, which the
/// SIGTSTP sent after it drops as on Linux (it stayed pending), and the child lives (the
/// monitor's handlers nested a frame per signal on their small alternate stack, which the
/// host ended with SIGSEGV).
#[test]
fn a_child_blocking_every_signal_keeps_them_pending_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("signals_all_blocked", Some("signals_all_blocked: done"));
}

/// Namespaces asked for without CAP_SYS_ADMIN (tests/programs/hostile/calls_namespaces.c,
/// LTP's clone11 and unshare02): EPERM from unshare and clone for every kind but a user
/// namespace, EINVAL for a flag unshare does not know, as on Linux (all were ENOSYS).
#[test]
fn unprivileged_namespaces_are_refused_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("calls_namespaces", Some("namespaces: done"));
}

/// A system-call number with the upper 32 bits of rax set selects the call in its lower 32
/// bits, as Linux takes it (tests/programs/hostile/syscall_number_high_bits.c; the Linux
/// kernel's x86 selftest syscall_numbering). read, write, readv and writev so returned ENOSYS
/// under hrt, while getpid worked.
#[test]
fn system_call_numbers_ignore_the_upper_bits_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus(
        "syscall_number_high_bits",
        Some("writev with upper bits 0xffffffff: 1\ngetpid with upper bits: the pid"),
    );
}

/// readlink("/proc/thread-self") names the calling thread as the program knows it, and the
/// directory it names is that thread's (tests/programs/hostile/proc_thread_self_link.c). It
/// named the monitor's host thread that served the call (the kernel's proc selftest
/// thread-self).
#[test]
fn proc_thread_self_names_the_calling_thread_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus(
        "proc_thread_self_link",
        Some("side-thread: link names this thread, its comm side-thread"),
    );
}

/// mmap's MAP_32BIT places the mapping within the lowest 2 GiB, as Linux does
/// (tests/programs/hostile/mmap_32bit.c). hrt ignored the flag: with `--mem 4G` every such
/// mapping landed at 4 GiB and up (the default pool happened to place small ones low).
#[test]
fn map_32bit_mappings_lie_in_the_lowest_2_gib_as_on_linux() {
    passes_natively_and_same_with(
        "mmap_32bit",
        Some("6 of them within the lowest 2 GiB"),
        &["1", "2"],
        &["--mem", "4G"],
    );
}

/// Names under /proc/self/fd, /proc/self/fdinfo and /dev/fd that are no descriptor's number
/// are not there (ENOENT), as procfs says (tests/programs/hostile/proc_fd_names.c; the
/// kernel's proc selftest fd-001-lookup): a leading zero named a descriptor, and junk gave
/// EACCES.
#[test]
fn proc_fd_names_that_are_no_number_are_missing_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("proc_fd_names", Some("/proc/self/fd/01             ENOENT"));
}

/// System calls made with TF, NT or AC set in the program's flags return, as on Linux
/// (tests/programs/hostile/syscall_with_user_flags.c; the Linux kernel's x86 selftest
/// syscall_nt). Once the site was rewritten into a direct call, the kernel ran with those
/// flags and panicked (#DB after its first instruction, #GP at its IRETQ with NT).
#[test]
fn system_calls_made_with_tf_nt_or_ac_set_return_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus(
        "syscall_with_user_flags",
        Some("NT|AC|TF  40 calls, 40 returned the pid\nsingle-step traps taken: some"),
    );
}

/// A signal frame names the selectors the program runs with, CS 0x33 and SS 0x2b as on Linux
/// (tests/programs/hostile/signal_frame_selectors.c; the Linux kernel's x86 selftest
/// sigreturn). It said 0x23 and 0x1b, the kernel entry's own view, which reads as 32-bit code.
#[test]
fn signal_frames_name_the_programs_selectors_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus(
        "signal_frame_selectors",
        Some("frame cs 0x33 ss 0x2b, the same as the live ones: 1"),
    );
}

/// Returning from a handler to a non-canonical instruction pointer raises a SIGSEGV that a
/// handler catches, at that address, as on Linux (tests/programs/hostile/sigreturn_bad_rip.c;
/// the Linux kernel's x86 selftest sysret_rip). The program was ended.
#[test]
fn a_sigreturn_to_a_non_canonical_address_raises_a_catchable_sigsegv_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus(
        "sigreturn_bad_rip",
        Some("at rip 0x8000000000000000\nback in main, the handler saw the address: 1"),
    );
}

/// fexecve and execveat(AT_EMPTY_PATH) of a socket, a pipe or a directory fail with EACCES, as
/// on Linux (tests/programs/hostile/fexecve_non_regular.c; the Linux kernel's exec selftest
/// non-regular). A socket gave ENXIO, from the monitor's reopen of it.
#[test]
fn fexecve_of_a_non_regular_file_is_eacces_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus(
        "fexecve_non_regular",
        Some("execveat(a socket, \"\", AT_EMPTY_PATH) = -1 EACCES"),
    );
}

/// rseq(2) as Linux 6.3 keeps it (tests/programs/hostile/rseq_sections.c): glibc's
/// registration, the CPU the area names after moves and in a forked child, critical sections
/// aborted by a signal, a preemption, a move and membarrier's RSEQ fence, the registration's
/// errors, and SIGSEGV for a bad descriptor. It was ENOSYS (glibc went on without it). Two
/// CPUs at least: the moves and the fence need a second one.
#[test]
fn rseq_keeps_the_cpu_and_aborts_critical_sections_as_on_linux() {
    passes_natively_and_same_on("rseq_sections", Some("fenced in a section: aborted"), &["2", "4"]);
}

/// Per-CPU counters incremented in rseq critical sections by 8 threads on fewer CPUs
/// (tests/programs/hostile/rseq_percpu_counters.c): an increment is lost wherever a preemption
/// or a move between the section's load and its committing store did not abort it.
#[test]
fn rseq_per_cpu_counters_lose_no_increment() {
    passes_natively_and_same_on_1_and_2_cpus("rseq_percpu_counters", Some("sum 40000000 expected 40000000 equal"));
}

/// Paths through the program's own /proc/self/cwd and /proc/self/root links, also under
/// thread-self, the pid and task/<tid> (tests/programs/hostile/proc_cwd_root_links.c): opens,
/// creation, stat, unlink and listings below them, ENOENT for a thread that does not exist,
/// and ELOOP where Linux stops following links. Every path below them was EACCES (they are
/// the monitor's own magic links, which the walk refuses).
#[test]
fn paths_through_the_programs_cwd_and_root_links_resolve_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("proc_cwd_root_links", Some("links done"));
}

/// clone3's CLONE_CLEAR_SIGHAND (tests/programs/hostile/clone3_clear_sighand.c): a fork-like
/// and a vfork-like child see SIG_DFL for a handled signal and SIG_IGN kept, without flags or
/// mask; the parent's actions stay; CLONE_SIGHAND with it is EINVAL; the legacy clone reads
/// the bit as nothing. It was ENOSYS.
#[test]
fn clone3_clear_sighand_clears_the_childs_handlers_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("clone3_clear_sighand", Some("clear_sighand done"));
}
