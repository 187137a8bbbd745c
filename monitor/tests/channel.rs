//! The forwarding channel (issue 11): forwarded calls travel through shared memory served by
//! hrt's own threads, so a call that blocks on the host (a read from an empty pipe) holds
//! neither a vCPU nor the other calls, and the program still ends when it exits.

mod common;
use common::hostile::{assert_same, build, hrt, hrt_cmd, native, run};

fn same_as_native(mode: &str, cpus: &[&str], extra: &[&str]) {
    let prog = build("chan_blocked", &[]);
    let native_out = native(&prog, &[mode]);
    for cpus in cpus {
        let mut options = vec!["--cpus", cpus];
        options.extend_from_slice(extra);
        let out = hrt(&options, &prog, &[mode]);
        assert_same(&format!("chan_blocked {mode} --cpus {cpus} {extra:?}"), &native_out, &out);
    }
}

/// 1,500 threads blocked in reads of one pipe at once, then fed by main: every blocked call
/// holds a slot of the channel, and main's write needs one more. With every slot held it
/// waited for good (at 600 readers when the channel had 256 slots; now 1,024): a caller that
/// finds no slot now evicts a blocked read, which is made again later.
#[test]
fn more_blocked_calls_than_the_channel_has_slots_are_served() {
    same_as_native("readers", &["1", "2"], &[]);
}

/// The same with a pipe per reader, fed from the last reader started to the first: the
/// readers that found no slot, and each of main's writes, need the slots of readers whose
/// bytes come last.
#[test]
fn blocked_calls_take_turns_in_the_slots_when_they_outnumber_them() {
    same_as_native("pipes", &["1", "2"], &[]);
}

/// One thread blocks in read() while two others compute and make forwarded calls; with one
/// vCPU this hangs when a blocked host call holds its vCPU (as with `--no-channel`).
#[test]
fn a_blocked_host_call_does_not_hold_the_cpu() {
    same_as_native("compute", &["1", "2"], &[]);
}

/// The same with the service thread asleep between calls (no spinning at all): every request
/// goes through the doorbell.
#[test]
fn requests_are_served_when_the_service_sleeps() {
    same_as_native("compute", &["1"], &["--service-spin", "0"]);
}

/// A blocking call handed to the service while the thread starting it is still at work (the
/// test makes it linger after starting the polling threads): the call must find the thread
/// that creates the workers. Hung when the spawner was registered after the pollers.
#[test]
fn a_blocking_call_made_while_the_service_starts_is_served() {
    same_with_test_delay("chan_blocked", "compute", "1", ("HRT_TEST_SERVICE_START_DELAY_MS", "300"));
}

/// Forked children whose first call blocks on the host (a read of an empty pipe), with the
/// start of each child's service delayed (as a descheduled thread on a loaded host would
/// delay it): a child's CPU ran before its service started, handed the call to a worker
/// that nobody created, and slept for good (1 fork in ~700 under load; with the delay, every
/// time).
#[test]
fn a_forked_childs_first_blocking_call_is_served() {
    same_with_test_delay("chan_blocked", "forks", "1", ("HRT_TEST_SERVICE_START_DELAY_MS", "15"));
    same_as_native("forks", &["2"], &[]);
}

/// A signal for a thread blocked in a host `read` arrives while the polling thread is falling
/// asleep (the test makes it linger, still counted awake, between its last look and its
/// sleep): the guest's cancel finds the poller "awake" and rings no doorbell, so the poller
/// must see the cancel itself and interrupt the worker; the handler then runs and the read
/// restarts (ring_varsite `restart`). Hung when the poller looked only for new requests;
/// without the delay, about 1 fresh-clone CI run in 20.
#[test]
fn a_cancel_made_while_the_poller_falls_asleep_is_served() {
    same_with_test_delay("ring_varsite", "restart", "2", ("HRT_TEST_POLLER_SLEEP_DELAY_MS", "50"));
}

/// Runs test program `name` `mode` natively and under `hrt run --cpus CPUS` with one of the
/// monitor's test delays set (`delay`: the variable and its milliseconds), and compares.
fn same_with_test_delay(name: &str, mode: &str, cpus: &str, delay: (&str, &str)) {
    let prog = build(name, &[]);
    let linux = native(&prog, &[mode]);
    let mut cmd = hrt_cmd();
    cmd.env(delay.0, delay.1).args(["run", "--cpus", cpus, "--"]).arg(&prog).arg(mode);
    assert_same(&format!("{name} {mode} with {}={}", delay.0, delay.1), &linux, &run(cmd, None));
}

#[test]
fn the_program_ends_while_a_thread_is_blocked_on_the_host() {
    same_as_native("forever", &["1", "2"], &[]);
}

/// 300 threads write at once: more requests than slots; every line arrives whole, each
/// thread's in order.
#[test]
fn more_callers_than_slots() {
    same_as_native("many", &["2"], &[]);
}

#[test]
fn a_threads_calls_keep_their_order() {
    same_as_native("order", &["1", "2"], &[]);
    same_as_native("order", &["2"], &["--service-threads", "2"]);
}

/// 8 threads append to one file at once: no record lost, torn or repeated.
#[test]
fn concurrent_appends_lose_no_byte() {
    same_as_native("file8", &["1", "2"], &[]);
}

/// A signal with a handler interrupts a read blocked on the host: EINTR without SA_RESTART, a
/// restarted read with it, also when another thread sends it.
#[test]
fn signals_interrupt_calls_blocked_on_the_host() {
    same_as_native("eintr", &["1", "2"], &[]);
    same_as_native("restart", &["1", "2"], &[]);
    same_as_native("tkill", &["1", "2"], &[]);
}

/// `--no-channel` keeps the old path (one VM exit per forwarded call) working.
#[test]
fn hypercall_forwarding_still_works() {
    same_as_native("order", &["2"], &["--no-channel"]);
}

/// The same under a CPU-time limit, a finite one as batch systems set and one too large to be
/// reached (as this project's hosts hand out): the kernel's timer threads that watch the limit sleep on
/// the boot CPU without counting in placement. They were placed like program threads, on the
/// second vCPU, so the writer thread went to the reader's vCPU, which a blocked read held.
#[test]
fn hypercall_forwarding_works_under_a_cpu_time_limit() {
    let prog = build("chan_blocked", &[]);
    let native_out = native(&prog, &["order"]);
    for seconds in ["100000", "3996722990829041530"] {
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c").arg(format!("ulimit -t {seconds} && exec \"$0\" \"$@\""));
        cmd.arg(env!("CARGO_BIN_EXE_hrt")).args(["run", "--cpus", "2", "--no-channel", "--"]).arg(&prog).arg("order");
        assert_same(&format!("chan_blocked order, ulimit -t {seconds}"), &native_out, &run(cmd, None));
    }
}

/// `--strace` still marks forwarded calls with F; with `-v` each also shows its round trip and
/// when it returned.
#[test]
fn strace_shows_round_trips_with_verbose() {
    let prog = build("chan_blocked", &[]);
    let traced = |options: &[&str]| {
        let mut all = vec!["--strace", "--cpus", "1"];
        all.extend_from_slice(options);
        let out = hrt(&all, &prog, &["usage"]);
        assert_eq!(out.code(), 2, "stderr: {}", out.stderr);
        out.stderr.lines().find(|l| l.contains("] write(2,")).map(str::to_owned).unwrap_or_default()
    };
    let plain = traced(&[]);
    assert!(plain.ends_with(" F"), "no traced forwarded write: {plain:?}");
    let timed = traced(&["-v"]);
    let (call, time) = timed.rsplit_once(" F <").unwrap_or_else(|| panic!("no round trip in {timed:?}"));
    assert!(call.contains("] write(2,"), "{timed:?}");
    let (took, at) = time.split_once(" us> @").unwrap_or_else(|| panic!("no return time in {timed:?}"));
    let us: f64 = took.parse().unwrap_or_else(|_| panic!("bad time in {timed:?}"));
    assert!(us > 0.0, "{timed:?}");
    // When it returned, in ms after boot: after the boot itself, and within the run.
    let ms: f64 = at.trim_end_matches(" ms").parse().unwrap_or_else(|_| panic!("bad return time in {timed:?}"));
    assert!(ms > 0.0 && ms < 60_000.0, "{timed:?}");
}

/// `--strace` holds its lines and sends them in batches (one VM exit per line made a traced
/// program several times slower): the program's own writes to stderr still come after the
/// lines of the calls before them, a forked child does not repeat the parent's held lines, and
/// the last line (a call just before the end) is not lost.
#[test]
fn strace_lines_keep_their_order_with_the_program_output() {
    let prog = build("strace_order", &[]);
    for cpus in ["1", "2"] {
        let out = hrt(&["--strace", "--cpus", cpus], &prog, &[]);
        assert_eq!(out.code(), 0, "stderr: {}", out.stderr);
        let at = |needle: &str| {
            let found: Vec<usize> =
                out.stderr.lines().enumerate().filter(|(_, l)| l.contains(needle)).map(|(i, _)| i).collect();
            assert_eq!(found.len(), 1, "{needle:?} once on stderr (--cpus {cpus}):\n{}", out.stderr);
            found[0]
        };
        let order =
            [at("first"), at("umask(1)"), at("second"), at("umask(2)"), at("umask(3)"), at("third"), at("umask(4)")];
        assert!(order.windows(2).all(|w| w[0] < w[1]), "out of order {order:?} (--cpus {cpus}):\n{}", out.stderr);
    }
}

/// A program with an OpenMP runtime has every vCPU started at boot, and the idle ones halted
/// before the channel existed: uncounted, they told the monitor's pollers that every vCPU ran,
/// so with the vCPUs outnumbering the host's CPUs the pollers slept after each call and nearly
/// every write of a serial part rang the doorbell, a VM exit (Rodinia's pathfinder on
/// `--cpus 4` over 2 host CPUs: 4,935 doorbells for 5,035 writes, 0.62 s against 0.42). Two
/// vCPUs more than the host has CPUs, `--idle halt`: output as natively, and at the program's
/// exit every vCPU but the exiting one counted halted (the doorbells themselves depend on
/// the host's load, which a test cannot fix).
#[test]
fn vcpus_halted_before_the_channel_started_count_as_halted() {
    let prog = build("omp_serial_output", &["-fopenmp"]);
    let linux = native(&prog, &["200"]);
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get()) + 2;
    for threads in ["1", "2"] {
        let mut cmd = hrt_cmd();
        cmd.args(["run", "-v", "--idle", "halt", "--cpus", &cpus.to_string(), "--"]).arg(&prog).arg("200");
        cmd.env("OMP_NUM_THREADS", threads);
        let got = run(cmd, None);
        let what = format!("omp_serial_output, {threads} thread(s), --cpus {cpus} --idle halt");
        assert_same(&what, &linux, &got);
        let halted = got
            .stderr
            .lines()
            .find_map(|l| l.split("; ").nth(1)?.strip_suffix(" vCPU(s) counted halted at exit"))
            .unwrap_or_else(|| panic!("{what}: no count of halted vCPUs in -v's output:\n{}", got.stderr));
        assert_eq!(halted, (cpus - 1).to_string(), "{what}: vCPUs the channel counted halted at exit");
    }
}
