//! The kernel's own OpenMP runtime (`hrt run --omp kernel`): OpenMP programs built with gcc and
//! its static libgomp run with their libgomp entry points redirected into the kernel, and must
//! print what the same program prints natively on libgomp, with 1, 2 and 4 vCPUs and
//! OMP_NUM_THREADS below, equal to and above the vCPU count. A program using what the kernel's
//! runtime lacks is refused by `--omp kernel` and runs on its own libgomp under `--omp auto`.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::hostile::{assert_same, build_dynamic, repo_root, run, Outcome};

/// Builds tests/programs/NAME.c with `gcc -O2 -fopenmp` and `link` (-static or -static-pie), or
/// NAME.cc with g++ when there is one.
fn build(name: &str, link: &str) -> PathBuf {
    let root = repo_root();
    let mut source = root.join("tests/programs").join(format!("{name}.c"));
    let mut compiler = "gcc";
    if !source.exists() {
        source.set_extension("cc");
        compiler = "g++";
    }
    let out = root.join("target/programs").join(format!("omp-{name}{link}"));
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    // Tests run in threads of one process, and two may build the same program.
    static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = out.with_extension(format!("tmp{}-{n}", std::process::id()));
    let result = Command::new(compiler)
        .args(["-O2", "-g", "-fopenmp", link, "-o"])
        .arg(&tmp)
        .arg(&source)
        .output()
        .unwrap_or_else(|e| panic!("cannot run gcc: {e}"));
    assert!(result.status.success(), "building {}: {}", source.display(), String::from_utf8_lossy(&result.stderr));
    std::fs::rename(&tmp, &out).unwrap();
    out
}

fn native(prog: &Path, threads: Option<&str>) -> Outcome {
    let mut cmd = Command::new(prog);
    if let Some(n) = threads {
        cmd.env("OMP_NUM_THREADS", n);
    }
    run(cmd, None)
}

fn hrt(options: &[&str], prog: &Path, threads: Option<&str>) -> Outcome {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
    cmd.arg("run").args(options).arg("--").arg(prog);
    if let Some(n) = threads {
        cmd.env("OMP_NUM_THREADS", n);
    }
    run(cmd, None)
}

/// The native run the hrt runs are compared with. libgomp 12 is not always clean itself: once in
/// a fresh-clone CI run `omp_target` ended natively with SIGABRT after printing "all checks
/// passed" (glibc's heap checks write their message to the terminal, so nothing said why; 600
/// runs alone and under load did not repeat it). A native run killed by a signal is run again,
/// twice at most, so that a fault of the reference does not count as one of hrt's.
fn native_reference(prog: &Path, threads: Option<&str>) -> Outcome {
    for _ in 0..2 {
        let o = native(prog, threads);
        if o.status.signal().is_none() {
            return o;
        }
        eprintln!("{}: the native run ended with status {}; running it again", prog.display(), o.code());
    }
    native(prog, threads)
}

/// Runs tests/programs/NAME.c (linked with `link`) natively and under `--omp kernel` with 1, 2
/// and 4 vCPUs, for each OMP_NUM_THREADS value, and compares.
fn same_as_libgomp_linked(name: &str, link: &str, thread_counts: &[Option<&str>]) {
    let prog = build(name, link);
    for &threads in thread_counts {
        let want = native_reference(&prog, threads);
        assert!(want.stdout.contains("all checks passed"), "native run failed:\n{}", want.stdout);
        for cpus in ["1", "2", "4"] {
            let got = hrt(&["--omp", "kernel", "--cpus", cpus], &prog, threads);
            assert_same(&format!("{name} {link}, --cpus {cpus}, OMP_NUM_THREADS={threads:?}"), &want, &got);
        }
    }
}

fn same_as_libgomp(name: &str, thread_counts: &[Option<&str>]) {
    same_as_libgomp_linked(name, "-static", thread_counts);
}

#[test]
fn kernel_runtime_runs_the_constructs_as_libgomp_does() {
    same_as_libgomp("omp_kernel", &[None, Some("1"), Some("2"), Some("6")]);
}

/// `target` (maps, firstprivate, data constructs, nowait with depend), `teams` with
/// distribute, the device API and the device memory routines, on the host device.
#[test]
fn kernel_runtime_runs_target_and_teams_on_the_host_as_libgomp_does() {
    same_as_libgomp("omp_target", &[Some("1"), Some("3")]);
    same_as_libgomp_linked("omp_target", "-pie", &[Some("3")]);
}

/// fork() while the team's workers spin for their next region (OMP_WAIT_POLICY=active) and
/// while a thread spins for an OpenMP lock the forking thread holds
/// (tests/programs/omp_fork_spinning.c): the kernel runtime's waiters spun in its own code,
/// which passed no safe point for the fork, and every fork gave up after 2 s with EAGAIN. At
/// 2 vCPUs with 2 and 4 threads, as natively.
#[test]
fn fork_works_while_the_kernel_runtimes_waiters_spin() {
    let prog = build("omp_fork_spinning", "-static");
    for threads in ["2", "4"] {
        let mut native_cmd = Command::new(&prog);
        let mut hrt_cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
        hrt_cmd.args(["run", "--omp", "kernel", "--cpus", "2", "--"]).arg(&prog);
        for cmd in [&mut native_cmd, &mut hrt_cmd] {
            cmd.env("OMP_NUM_THREADS", threads).env("OMP_WAIT_POLICY", "active");
        }
        let want = run(native_cmd, None);
        assert!(want.stdout.contains("done, failures 0"), "natively: {want:?}");
        assert_same(&format!("omp_fork_spinning with {threads} threads"), &want, &run(hrt_cmd, None));
    }
}

/// A region asking for 10,000 threads (OpenMP_VV's num_threads and thread_limit tests ask
/// for that many): a worker's stack is resident memory under hrt, so the team gets as many as
/// leave a quarter of the program's memory free (2,131 on a 24 GiB host), where the kernel's runtime
/// ended the program before; every thread runs, the barrier and a reduction hold, and the
/// program's memory is there afterwards.
#[test]
fn a_team_larger_than_memory_allows_gets_fewer_threads() {
    same_as_libgomp("omp_bigteam", &[None]);
}

/// After a burst of deep nesting made as many workers as memory allows (`--mem 1G`), later
/// nested regions get all their threads again (tests/programs/omp_nested_burst.c): the burst's
/// workers, idle in the nested teams of idle workers, were not given back (a 3x2 region ran 4
/// threads for the rest of the run).
#[test]
fn workers_of_a_deep_burst_serve_later_teams() {
    let prog = build("omp_nested_burst", "-static");
    let want = native_reference(&prog, None);
    assert_eq!(want.code(), 0, "natively: {want:?}");
    for cpus in ["1", "2"] {
        let got = hrt(&["--omp", "kernel", "--mem", "1G", "--cpus", cpus], &prog, None);
        assert_eq!(got.stdout, want.stdout, "--cpus {cpus}: {got:?}");
        assert_eq!(got.code(), 0, "--cpus {cpus}: {got:?}");
    }
}

#[test]
fn kernel_runtime_defers_tasks_as_the_specification_allows() {
    same_as_libgomp("omp_tasks", &[None, Some("1"), Some("3"), Some("6")]);
}

/// The task shapes of the task-parallel suites (BOTS): untied recursion through taskwait,
/// firstprivate VLAs (GOMP_task's copy function), mergeable and final tasks, taskyield, tasks
/// generated from a dynamic loop; static and static-PIE.
#[test]
fn kernel_runtime_runs_untied_mergeable_and_copied_tasks_as_libgomp_does() {
    same_as_libgomp("omp_untied", &[None, Some("1"), Some("3"), Some("6")]);
    same_as_libgomp_linked("omp_untied", "-static-pie", &[Some("3")]);
}

/// Dynamic loops of every kind gcc 12 emits (nonmonotonic by default, `monotonic:`, combined
/// `parallel for`, with task reductions through GOMP_loop_start): each iteration exactly once,
/// chunks aligned to the chunk size, monotonic chunks in increasing order per thread.
#[test]
fn kernel_runtime_runs_dynamic_loops_exactly_once_in_aligned_chunks() {
    same_as_libgomp("omp_dynamic", &[Some("1"), Some("2"), Some("3")]);
}

/// Dynamic loops whose chunks the kernel's runtime may steal between threads (nonmonotonic:
/// those GOMP_loop_start names so, and the nonmonotonic entry points where a library does not
/// alias them to the monotonic ones): every iteration once, `lastprivate`, `linear` and the
/// loop variable as after the loop's last iteration, `monotonic:` chunks in order, loops after
/// a `cancel for`, team sizes 1 to 7 and OMP_NUM_THREADS around the vCPU count.
#[test]
fn kernel_runtime_steals_nonmonotonic_chunks_keeping_lastprivate_and_monotonic_order() {
    same_as_libgomp("omp_steal", &[Some("2"), Some("5")]);
    let prog = build("omp_steal", "-static");
    same_with_cancellation("omp_steal", &prog, "true", Some("3"));
}

/// A program without an OpenMP runtime starts on vCPU 0 alone, its other vCPUs made and started
/// when it first places a thread on one; an OpenMP program's kernel starts every vCPU at boot
/// (its first parallel region would wait for them). Each computes what it does natively (200
/// threads in batches, a condition variable, barriers; the OpenMP constructs), at 2 and 3
/// vCPUs, and `-v` says which start it had.
#[test]
fn only_an_openmp_program_starts_every_vcpu_at_boot() {
    for (name, said) in [
        ("omp_kernel", "the program has an OpenMP runtime: its kernel starts every vCPU at boot"),
        ("pthreads", "the program starts on vCPU 0; the others start when it first places a thread on one"),
    ] {
        let prog = build(name, "-static");
        let want = native_reference(&prog, Some("2"));
        for cpus in ["2", "3"] {
            let got = hrt(&["--cpus", cpus, "-v"], &prog, Some("2"));
            assert_same(&format!("{name} --cpus {cpus}"), &want, &got);
            assert!(got.stderr.contains(said), "{name} --cpus {cpus}: -v does not say \"{said}\":\n{}", got.stderr);
        }
    }
}

/// More vCPUs than host CPUs (host CPUs + 2: 4 on the 2-CPU test host): the kernel halts the
/// vCPUs of program threads it finds spinning (`kernel/src/sched/spin_look.rs`). A program
/// whose threads mostly spin (libgomp's barriers, a hand-written PAUSE handoff) prints what it
/// prints natively on both runtimes, and `-v` says the looks are on, and off at one vCPU.
#[test]
fn spinning_threads_on_more_vcpus_than_host_cpus_compute_what_they_do_natively() {
    const ON: &str = "spinning program threads give their host CPU away";
    let prog = build("omp_spin_waits", "-static");
    with_more_vcpus_than_host_cpus(&prog, |cpus, threads, want| {
        for omp in ["libgomp", "kernel"] {
            let got = hrt(&["--omp", omp, "--cpus", cpus, "-v"], &prog, threads);
            assert_same(&format!("omp_spin_waits --omp {omp} --cpus {cpus}, OMP_NUM_THREADS={threads:?}"), want, &got);
            assert!(got.stderr.contains(ON), "-v does not say the looks are on:\n{}", got.stderr);
        }
    });
    let one = hrt(&["--cpus", "1", "-v"], &prog, Some("3"));
    assert!(one.stdout.contains("all checks passed") && !one.stderr.contains(ON), "{}\n{}", one.stdout, one.stderr);
}

/// More vCPUs than host CPUs: the kernel's runtime packs its team on as many vCPUs as the host
/// has CPUs (`--overcommit pack`, the default) or spreads it over all (`spread`); both must
/// compute what libgomp does natively, and `-v` says which, with the per-vCPU counters.
#[test]
fn packed_and_spread_teams_compute_what_they_do_natively() {
    const PACKED: &str = "puts its threads on the first";
    let prog = build("omp_kernel", "-static");
    with_more_vcpus_than_host_cpus(&prog, |cpus, threads, want| {
        for how in ["pack", "spread"] {
            let got = hrt(&["--omp", "kernel", "--cpus", cpus, "--overcommit", how, "-v"], &prog, threads);
            let what = format!("omp_kernel --cpus {cpus} --overcommit {how}, OMP_NUM_THREADS={threads:?}");
            assert_same(&what, want, &got);
            assert_eq!(got.stderr.contains(PACKED), how == "pack", "{what}: -v says:\n{}", got.stderr);
            assert!(got.stderr.contains("kernel: cpu 0: halts"), "{what}: no counters with -v:\n{}", got.stderr);
        }
    });
}

/// Runs `check(cpus, threads, native outcome)` with 2 vCPUs more than the host has CPUs, for
/// OMP_NUM_THREADS equal to that and 3.
fn with_more_vcpus_than_host_cpus(prog: &Path, check: impl Fn(&str, Option<&str>, &Outcome)) {
    let host = std::thread::available_parallelism().map_or(2, |n| n.get());
    let cpus = (host + 2).to_string();
    for threads in [Some(cpus.as_str()), Some("3")] {
        let want = native(prog, threads);
        assert!(want.stdout.contains("all checks passed"), "native run failed:\n{}", want.stdout);
        check(&cpus, threads, &want);
    }
}

/// With waits that sleep at once (OMP_WAIT_POLICY=passive), a doacross post wakes a thread
/// that went to sleep just then (it hung 2 runs in 3 when the post's store could pass the look
/// at the sleepers), and an allocator's pool counts blocks as libgomp does.
#[test]
fn passive_waits_wake_and_pools_count_as_libgomp_does() {
    same_as_libgomp("omp_passive_waits", &[Some("2"), Some("3")]);
}

/// Threads run 40 `nowait` constructs ahead of one that waits for them (the ring of eight
/// work shares made the ninth wait for it: a hang); three regions reuse the overflow shares.
#[test]
fn threads_run_any_number_of_nowait_constructs_ahead() {
    same_as_libgomp("omp_far_ahead", &[Some("1"), Some("3"), Some("6")]);
}

#[test]
fn kernel_runtime_runs_doacross_loops_and_scope() {
    same_as_libgomp("omp_doacross", &[Some("1"), Some("2"), Some("4")]);
}

#[test]
fn kernel_runtime_replaces_a_dynamically_linked_programs_shared_libgomp() {
    // gcc's default output: libgomp.so.1 is overridden when ld.so maps it.
    same_as_libgomp_linked("omp_kernel", "-pie", &[None, Some("3")]);
    same_as_libgomp_linked("omp_tasks", "-pie", &[None, Some("3")]);
    let prog = build("omp_tasks", "-pie");
    let got = hrt(&["--omp", "kernel", "--cpus", "2", "-v"], &prog, None);
    assert!(
        got.stderr.contains("functions of the shared libgomp run on the kernel's OpenMP runtime"),
        "{}",
        got.stderr
    );
}

#[test]
fn a_dynamic_program_using_what_the_kernel_lacks_keeps_its_shared_libgomp() {
    let prog = build("omp_unprovided", "-pie");
    let refused = hrt(&["--omp", "kernel", "--cpus", "2"], &prog, None);
    assert_ne!(refused.code(), 0, "--omp kernel ran a program it cannot serve");
    assert!(
        refused.stderr.contains("acc_get_num_devices"),
        "the refusal does not name the symbol:\n{}",
        refused.stderr
    );
    let want = native(&prog, None);
    let auto = hrt(&["--omp", "auto", "--cpus", "2", "-v"], &prog, None);
    assert_eq!((auto.code(), &auto.stdout), (want.code(), &want.stdout));
    assert!(auto.stderr.contains("runs on its own libgomp"), "-v does not say why:\n{}", auto.stderr);
}

/// A library the program loads that imports a libgomp function the kernel lacks (OpenACC's
/// `GOACC_parallel_keyed`: tests/programs/hostile/omp_acc_lib.c, loaded by omp_acc_main.c, whose own
/// imports the kernel all provides): under the default `--omp auto` the program keeps its own
/// libgomp and `-v` names the library and the function; `--omp kernel` refuses to run it.
#[test]
fn a_library_using_what_the_kernel_lacks_keeps_the_programs_libgomp() {
    let source = |name: &str| repo_root().join(format!("tests/programs/hostile/{name}.c"));
    let lib = build_dynamic(&source("omp_acc_lib"), "acc/libomp_acc_lib.so", &["-shared", "-fPIC", "-fopenacc"]);
    let dir = lib.parent().expect("the library's directory").to_str().expect("a UTF-8 path").to_string();
    let rpath = format!("-Wl,-rpath,{dir}");
    let prog =
        build_dynamic(&source("omp_acc_main"), "acc/omp_acc_main", &["-fopenmp", "-L", &dir, "-lomp_acc_lib", &rpath]);
    let want = native(&prog, None);
    assert_eq!(want.code(), 0, "natively: {want:?}");
    assert!(want.stdout.contains("openacc: 5050"), "natively: {}", want.stdout);
    let auto = hrt(&["--cpus", "2", "-v"], &prog, None);
    assert_eq!((auto.code(), &auto.stdout), (want.code(), &want.stdout), "{}", auto.stderr);
    assert!(
        auto.stderr.contains("loads libomp_acc_lib.so (") && auto.stderr.contains("which uses GOACC_parallel_keyed"),
        "-v does not name the library and the function:\n{}",
        auto.stderr
    );
    let refused = hrt(&["--omp", "kernel", "--cpus", "2"], &prog, None);
    assert_ne!(refused.code(), 0, "--omp kernel ran a program it cannot serve");
    assert!(refused.stderr.contains("GOACC_parallel_keyed"), "{}", refused.stderr);
}

/// A library, not the program, loads libgomp (ImageMagick's libMagickCore under `convert`,
/// OpenBLAS's OpenMP build under numpy): linked to the program or opened with dlopen, its
/// libgomp runs on the kernel's runtime under `--omp kernel`, with the native run's results
/// (tests/programs/hostile/omp_indirect_{lib,main}.c). Both ran on the program's libgomp, `-v`
/// saying "no OpenMP functions to replace". `--omp auto` leaves them so (it does not read every
/// library of every dynamic program's start).
#[test]
fn a_libgomp_that_a_library_loads_runs_on_the_kernels_runtime() {
    let source = |name: &str| repo_root().join(format!("tests/programs/hostile/{name}.c"));
    let lib =
        build_dynamic(&source("omp_indirect_lib"), "indirect/libomp_indirect.so", &["-shared", "-fPIC", "-fopenmp"]);
    let dir = lib.parent().expect("the library's directory").to_str().expect("a UTF-8 path").to_string();
    let rpath = format!("-Wl,-rpath,{dir}");
    let linked =
        build_dynamic(&source("omp_indirect_main"), "indirect/linked", &["-L", &dir, "-lomp_indirect", &rpath]);
    let path = format!("-DLIB_PATH=\"{}\"", lib.display());
    let opened = build_dynamic(&source("omp_indirect_main"), "indirect/opened", &[&path, "-ldl"]);
    for prog in [&linked, &opened] {
        for threads in [None, Some("3")] {
            let want = native(prog, threads);
            assert_eq!(want.code(), 0, "natively: {want:?}");
            assert!(want.stdout.contains("sum 332833500, every iteration once: yes"), "natively: {}", want.stdout);
            let got = hrt(&["--omp", "kernel", "--cpus", "2", "-v"], prog, threads);
            assert_eq!((got.code(), &got.stdout), (want.code(), &want.stdout), "{}", got.stderr);
            assert!(
                got.stderr.contains("functions of the shared libgomp run on the kernel's OpenMP runtime"),
                "{}: {}",
                prog.display(),
                got.stderr
            );
            // The default, `--omp auto`, overrides a libgomp that a library loads at start;
            // one opened later (`dlopen`) stays the program's own, with the same results.
            let got = hrt(&["--cpus", "2", "-v"], prog, threads);
            assert_eq!((got.code(), &got.stdout), (want.code(), &want.stdout), "{}", got.stderr);
            let kernels = got.stderr.contains("functions of the shared libgomp run on the kernel's OpenMP runtime");
            assert_eq!(kernels, prog == &linked, "{}: {}", prog.display(), got.stderr);
        }
    }
}

#[test]
fn places_and_binding_follow_omp_places_and_omp_proc_bind_on_both_runtimes() {
    // The native run sees the host's CPUs: the VM gets as many, so the place lists match.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()).to_string();
    let prog = build("omp_places", "-static");
    let settings: &[&[(&str, &str)]] = &[
        &[],
        &[("OMP_PROC_BIND", "true")],
        &[("OMP_PLACES", "cores"), ("OMP_PROC_BIND", "spread")],
        &[("OMP_PLACES", "{0},{1}"), ("OMP_PROC_BIND", "close")],
        &[("OMP_PLACES", "{0:2}")],
        &[("OMP_PLACES", "threads(1)")],
        &[("OMP_PLACES", "sockets"), ("OMP_PROC_BIND", "primary")],
        &[("OMP_PLACES", "{1},{0}")],
        &[("OMP_PLACES", "{0}:2"), ("OMP_PROC_BIND", "spread,close")],
        &[("OMP_PLACES", "not a list")],
    ];
    let sorted = |o: &Outcome| {
        let mut lines: Vec<&str> = o.stdout.lines().collect();
        lines.sort_unstable();
        lines.join("\n")
    };
    // Both runtimes: the program's own libgomp binds a new thread through glibc's
    // pthread_create, which sets the thread's mask from its creator (sched_setaffinity of
    // another tid); its first team's lines say whether each thread runs on its place.
    for runtime in ["kernel", "libgomp"] {
        for env in settings {
            let mut native_cmd = Command::new(&prog);
            let mut hrt_cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
            hrt_cmd.args(["run", "--omp", runtime, "--cpus", &cpus, "--"]).arg(&prog);
            for (k, v) in env.iter() {
                native_cmd.env(k, v);
                hrt_cmd.env(k, v);
            }
            let (want, got) = (run(native_cmd, None), run(hrt_cmd, None));
            assert_eq!(
                (got.code(), sorted(&got)),
                (want.code(), sorted(&want)),
                "omp_places --omp {runtime} with {env:?}:\n{}",
                got.stderr
            );
        }
    }
}

/// The program's own libgomp builds OMP_PLACES=cores, sockets, ll_caches and numa_domains
/// from the host's /sys topology files; under hrt they describe the VM (forward/synthetic.rs),
/// so on 1 and 4 vCPUs (fewer and more than this host's CPUs) it gets the kernel runtime's places.
#[test]
fn own_libgomp_sees_the_vms_topology_in_sys() {
    let prog = build("omp_places", "-static");
    // Not whether a bound thread runs on its place: with more vCPUs than host CPUs the kernel
    // runtime packs bound teams onto the first vCPUs by design (`--overcommit`), while the
    // program's libgomp has its threads where it bound them.
    let sorted = |o: &Outcome| {
        let mut lines: Vec<String> =
            o.stdout.lines().map(|l| l.replace(" (on it)", "").replace(" (elsewhere)", "")).collect();
        lines.sort_unstable();
        lines.join("\n")
    };
    for cpus in ["1", "4"] {
        for places in ["cores", "sockets", "ll_caches", "numa_domains", "threads(2)"] {
            let run_with = |omp: &str| {
                let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
                cmd.args(["run", "--omp", omp, "--cpus", cpus, "--"]).arg(&prog);
                cmd.env("OMP_PLACES", places).env("OMP_PROC_BIND", "spread");
                run(cmd, None)
            };
            let (kernel, own) = (run_with("kernel"), run_with("libgomp"));
            assert_eq!(kernel.code(), 0, "--omp kernel, {places} on {cpus}:\n{}", kernel.stderr);
            assert_eq!(
                (own.code(), sorted(&own)),
                (kernel.code(), sorted(&kernel)),
                "OMP_PLACES={places} on --cpus {cpus}: the program's libgomp against the kernel runtime:\n{}",
                own.stderr
            );
            if places == "cores" {
                let want = format!("places {cpus}");
                assert!(own.stdout.lines().any(|l| l.starts_with(&want)), "{places} on {cpus}:\n{}", own.stdout);
            }
        }
    }
}

/// The directories and /proc files that list CPUs describe the VM on 1 and 4 vCPUs (fewer and
/// more than this host's CPUs; tests/programs/vm_cpus.c): /sys/devices/system/cpu lists cpu0 to
/// cpu<N-1> besides the host's other entries, each of them a directory with the VM's topology
/// files (read relative to the directory; also from inside the last vCPU's own directory, which
/// getcwd names, after a fchdir and in a forked child), the node directory lists node0 only, getdents64
/// resumes and rewinds as on Linux, node 0's directory links to each vCPU and its meminfo is
/// the program's memory, the cgroup cpuset and a PCI device's CPUs (where the host has them)
/// are the vCPUs, and
/// /proc/cpuinfo and /proc/stat have one entry per vCPU.
#[test]
fn the_cpu_listings_and_proc_files_describe_the_vm() {
    let prog = build("vm_cpus", "-static");
    let native_run = native(&prog, None);
    let has_cpuset = !native_run.stdout.contains("cpuset: none");
    let has_device = !native_run.stdout.contains("device cpus: none");
    let host_names = |dir: &str| -> Vec<String> {
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect()
    };
    let numbered = |name: &str, prefix: &str| name.strip_prefix(prefix).is_some_and(|n| n.parse::<u32>().is_ok());
    let topology = host_names("/sys/devices/system/cpu/cpu0/topology").len();
    for cpus in [1u32, 4] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
        cmd.args(["run", "--cpus", &cpus.to_string(), "--"]).arg(&prog);
        let got = run(cmd, None);
        assert_eq!(got.code(), 0, "--cpus {cpus}:\n{}", got.stderr);
        let lines: Vec<&str> = got.stdout.lines().collect();
        let listing = |dir: &str, prefix: &str, count: u32| {
            let mut names: Vec<String> = host_names(dir).into_iter().filter(|n| !numbered(n, prefix)).collect();
            names.extend((0..count).map(|k| format!("{prefix}{k}")));
            names.sort_unstable();
            names
        };
        let mut want = vec![
            format!("cpu: {}", listing("/sys/devices/system/cpu", "cpu", cpus).join(" ")),
            format!("node: {}", listing("/sys/devices/system/node", "node", 1).join(" ")),
        ];
        want.extend((0..cpus).map(|k| format!("cpu{k}: dir 1 same inode 1 topology entries {topology} core_id {k}")));
        want.push("getdents: pieces 1 resume 1 too small 1".into());
        want.push("cwd: same listing 1 core_ids 1".into());
        let last = cpus - 1;
        let online = if last == 0 { "none" } else { "1" };
        let dir = format!("/sys/devices/system/cpu/cpu{last}");
        want.push(format!("cpu cwd: {dir} core_id {last} online {online} back {dir} child same"));
        let node_cpus: Vec<String> = (0..cpus).map(|k| format!(" cpu{k}")).collect();
        want.push(format!("node0 cpus:{}", node_cpus.concat()));
        want.extend((0..cpus).map(|k| format!("node0/cpu{k}: link ../../cpu/cpu{k} core_id {k}")));
        want.push("node0 meminfo: MemTotal is sysinfo's 1".into());
        let all = if cpus == 1 { "0".to_string() } else { format!("0-{}", cpus - 1) };
        want.push(format!("cpuset: {}", if has_cpuset { all.as_str() } else { "none" }));
        want.push(format!("device cpus: {}", if has_device { all.as_str() } else { "none" }));
        assert_eq!(lines[..want.len()], want, "--cpus {cpus}:\n{}", got.stdout);
        // One /proc/cpuinfo block per vCPU: each its own core of socket 0, its APIC ID its index.
        let blocks: Vec<&str> = lines.iter().copied().filter(|l| l.starts_with("cpuinfo")).collect();
        assert_eq!(blocks.len(), cpus as usize, "--cpus {cpus}:\n{}", got.stdout);
        for (k, block) in blocks.iter().enumerate() {
            let mut fields: Vec<&str> = block.split("cpuinfo ").map(str::trim).filter(|f| !f.is_empty()).collect();
            fields.sort_unstable();
            let mut want = vec![
                format!("apicid={k}"),
                format!("core id={k}"),
                format!("cpu cores={cpus}"),
                format!("initial apicid={k}"),
                "physical id=0".to_string(),
                format!("processor={k}"),
                format!("siblings={cpus}"),
            ];
            want.sort_unstable();
            assert_eq!(fields, want, "--cpus {cpus}, /proc/cpuinfo block {k}");
        }
        let stat: Vec<String> = (0..cpus).map(|k| format!(" cpu{k}")).collect();
        assert_eq!(lines.last(), Some(&format!("stat:{}", stat.concat()).as_str()), "--cpus {cpus}");
    }
}

#[test]
fn kernel_runtime_runs_a_static_pie_program() {
    let prog = build("omp_kernel", "-static-pie");
    let want = native(&prog, None);
    let got = hrt(&["--omp", "kernel", "--cpus", "2", "-v"], &prog, None);
    assert_same("omp_kernel static-pie", &want, &got);
    assert!(got.stderr.contains("run on the kernel's runtime"), "-v does not say so:\n{}", got.stderr);
}

/// The program prints the CPU count it may use; everything else must match.
fn without_cpu_counts(s: &str) -> String {
    s.lines()
        .filter(|l| !l.starts_with("omp_get_num_procs") && !l.starts_with("omp_get_max_threads"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_openmp_test_program_runs_on_the_kernel_runtime() {
    // openmp.c uses task reductions (a taskloop reduction) among much else.
    let prog = build("openmp", "-static");
    let want = native(&prog, None);
    assert_eq!(want.code(), 0, "native run failed:\n{}", want.stdout);
    for cpus in ["1", "2", "4"] {
        let got = hrt(&["--omp", "kernel", "--cpus", cpus], &prog, None);
        assert_eq!(got.code(), want.code(), "openmp.c --cpus {cpus}:\n{}", got.stderr);
        assert_eq!(without_cpu_counts(&got.stdout), without_cpu_counts(&want.stdout), "openmp.c --cpus {cpus}");
    }
}

/// `--omp kernel` refuses `prog`, naming `what` it lacks and the way out (`--omp libgomp`).
fn assert_refused_naming(prog: &Path, what: &str) {
    let refused = hrt(&["--omp", "kernel", "--cpus", "2"], prog, None);
    assert_ne!(refused.code(), 0, "--omp kernel ran a program it cannot serve");
    assert!(
        refused.stderr.contains(what) && refused.stderr.contains("--omp libgomp"),
        "the refusal does not name {what:?} and the way out:\n{}",
        refused.stderr
    );
}

#[test]
fn a_program_using_what_the_kernel_lacks_keeps_its_libgomp() {
    // omp_unprovided.c calls an OpenACC routine, which the kernel's runtime does not provide.
    let prog = build("omp_unprovided", "-static");
    assert_refused_naming(&prog, "acc_get_num_devices");
    let want = native(&prog, None);
    let auto = hrt(&["--omp", "auto", "--cpus", "2", "-v"], &prog, None);
    assert_eq!(auto.code(), want.code());
    assert!(auto.stderr.contains("runs on its own libgomp"), "-v does not say why:\n{}", auto.stderr);
    assert_eq!(auto.stdout, want.stdout);
}

/// A program without libgomp that defines its own `omp_*` stand-ins keeps them under
/// `--omp kernel` and `auto` (until 2026-12-03 they were redirected to the kernel's runtime
/// and answered for a team of OMP_NUM_THREADS threads).
#[test]
fn a_programs_own_omp_functions_are_left_alone() {
    let prog = build("omp_serial_stubs", "-static");
    let linux = native(&prog, Some("4"));
    assert!(linux.code() == 0 && linux.stdout.contains("thread 0 of 1, max 1, procs 1"), "natively: {linux:?}");
    for omp in ["kernel", "auto"] {
        let got = hrt(&["--omp", omp, "--cpus", "2"], &prog, Some("4"));
        assert_same(&format!("omp_serial_stubs --omp {omp}"), &linux, &got);
    }
}

#[test]
fn a_stripped_program_keeps_its_libgomp() {
    let prog = build("omp_kernel", "-static");
    let stripped = prog.with_file_name("omp-omp_kernel-stripped");
    let status = Command::new("strip").arg("-o").arg(&stripped).arg(&prog).status().expect("running strip");
    assert!(status.success());
    let refused = hrt(&["--omp", "kernel", "--cpus", "1"], &stripped, None);
    assert_ne!(refused.code(), 0);
    assert!(refused.stderr.contains("stripped"), "{}", refused.stderr);
}

/// A Fortran program built by tests/programs/build.sh (`NAME-static`, `NAME-pie`): fails with
/// what to install when gfortran is missing (build.sh then skips the Fortran programs). The
/// script runs once per test binary: two runs at once would share its temporary files.
fn fortran_program(name: &str, variant: &str) -> PathBuf {
    static BUILT: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let root = repo_root();
    let script = root.join("tests/programs/build.sh");
    let built = BUILT.get_or_init(|| {
        let out =
            Command::new("bash").arg(&script).output().map_err(|e| format!("running {}: {e}", script.display()))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("{} failed:\n{}", script.display(), String::from_utf8_lossy(&out.stderr)))
        }
    });
    if let Err(why) = built {
        panic!("{why}");
    }
    let prog = root.join("target/programs").join(format!("{name}-{variant}"));
    assert!(
        prog.exists(),
        "{} was not built: install gfortran (apt-get install gfortran, as .ci/run does)",
        prog.display()
    );
    prog
}

/// gfortran programs call the Fortran entry points (`omp_get_num_threads_`, arguments by
/// reference, INTEGER(8) forms): the kernel's runtime serves them, with 1, 2 and 4 vCPUs,
/// static and static-PIE, as libgomp does natively.
#[test]
fn kernel_runtime_runs_fortran_programs() {
    for variant in ["static", "pie"] {
        let prog = fortran_program("omp_fortran", variant);
        for threads in [None, Some("3")] {
            let want = native(&prog, threads);
            assert!(want.stdout.contains("all checks passed"), "native run failed:\n{}", want.stdout);
            for cpus in ["1", "2", "4"] {
                let got = hrt(&["--omp", "kernel", "--cpus", cpus], &prog, threads);
                assert_same(&format!("omp_fortran-{variant}, --cpus {cpus}, OMP_NUM_THREADS={threads:?}"), &want, &got);
            }
        }
    }
}

/// Runs `prog` natively and under `--omp kernel --cpus 2` with the environment `env` and
/// compares; the kernel's runtime must not refuse it.
fn same_with_env(prog: &Path, env: &[(&str, &str)]) {
    let mut native_cmd = Command::new(prog);
    let mut hrt_cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
    hrt_cmd.args(["run", "--omp", "kernel", "--cpus", "2", "--"]).arg(prog);
    for (k, v) in env {
        native_cmd.env(k, v);
        hrt_cmd.env(k, v);
    }
    let (want, got) = (run(native_cmd, None), run(hrt_cmd, None));
    assert_eq!(want.code(), 0, "native run of {} failed:\n{}", prog.display(), want.stderr);
    assert_same(&format!("{} with {env:?}", prog.display()), &want, &got);
}

#[test]
fn a_program_that_makes_no_team_runs_on_the_kernel_runtime() {
    // Statically linked, omp_no_team.c has omp_get_wtime but no pthread_create (libgomp's
    // team code is not linked); hello.c built with -fopenmp has no runtime function at all.
    for link in ["-static", "-static-pie"] {
        same_with_env(&build("omp_no_team", link), &[]);
        same_with_env(&build("hello", link), &[]);
    }
    // Linked dynamically, hello.c loads no libgomp.so.1 at all (refused before: OpenMP_VV's
    // simd tests are such programs).
    let dynamic = build("hello", "-pie");
    let elf = std::fs::read(&dynamic).unwrap();
    assert!(!elf.windows(12).any(|w| w == b"libgomp.so.1"), "{} names libgomp.so.1", dynamic.display());
    same_with_env(&dynamic, &[]);
}

/// Fortran nest locks (a pointer to a C nest lock the runtime allocates),
/// `omp_pause_resource(_all)` and detachable tasks (`omp_fulfill_event` takes the handle by
/// value), static and static-PIE, with 1, 2 and 4 vCPUs.
#[test]
fn fortran_nest_locks_pause_and_detach_match_libgomp() {
    for (name, variant) in [("omp_fortran_nest", "static"), ("omp_fortran_nest", "pie"), ("omp_fortran_detach", "pie")]
    {
        same_as_native_on_1_2_and_4_vcpus(&format!("{name}-{variant}"), &fortran_program(name, variant));
    }
}

/// Runs `prog` natively (it must succeed) and under `--omp kernel` with 1, 2 and 4 vCPUs, and
/// compares.
fn same_as_native_on_1_2_and_4_vcpus(what: &str, prog: &Path) {
    same_as_native_on_1_2_and_4_vcpus_with(what, prog, &[]);
}

/// `same_as_native_on_1_2_and_4_vcpus` with the environment `env` on every side.
fn same_as_native_on_1_2_and_4_vcpus_with(what: &str, prog: &Path, env: &[(&str, &str)]) {
    let want = run(with_env(Command::new(prog), env), None);
    assert_eq!(want.code(), 0, "native {what} with {env:?}: {want:?}");
    for cpus in ["1", "2", "4"] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
        cmd.args(["run", "--omp", "kernel", "--cpus", cpus, "--"]).arg(prog);
        let got = run(with_env(cmd, env), None);
        assert_same(&format!("{what} with {env:?}, --cpus {cpus}"), &want, &got);
    }
}

fn with_env(mut cmd: Command, env: &[(&str, &str)]) -> Command {
    cmd.envs(env.iter().copied());
    cmd
}

/// The order in which a team of one runs its tasks, deterministic in libgomp and seen by a
/// program of one thread (and by every region at `--cpus 1`): deferred, newest first at
/// `taskwait` and a taskgroup's end, oldest first at a barrier, higher priorities first when
/// OMP_MAX_TASK_PRIORITY allows them, at once past the queue's limit; and a task that waits for
/// its creator finishes (run at once, it would wait for good).
#[test]
fn a_team_of_one_runs_its_tasks_in_libgomps_order() {
    let prog = build("omp_task_order", "-static");
    same_as_native_on_1_2_and_4_vcpus("omp_task_order", &prog);
    same_as_native_on_1_2_and_4_vcpus_with("omp_task_order", &prog, &[("OMP_MAX_TASK_PRIORITY", "9")]);
}

/// A team's task counts and a `taskwait` that stops looking in the queues once its children
/// have all started: recursive tasks in teams of one, two and four, a maker whose children
/// other threads ran, and a team of one whose detachable task a pthread fulfils while the team
/// makes and finishes tasks (both finish the team's tasks at once).
#[test]
fn task_counts_hold_in_teams_of_one_and_with_events_fulfilled_elsewhere() {
    let prog = build("omp_task_counts", "-static");
    same_as_native_on_1_2_and_4_vcpus("omp_task_counts", &prog);
}

/// omp_get_wtime is CLOCK_MONOTONIC in every thread, static and dynamic, as libgomp's (the
/// kernel's runtime counted from the VM's boot), with OMP_NUM_THREADS=3.
#[test]
fn omp_get_wtime_reads_the_monotonic_clock() {
    for link in ["-static", "-pie"] {
        let prog = build("omp_wtime", link);
        same_as_native_on_1_2_and_4_vcpus_with("omp_wtime", &prog, &[("OMP_NUM_THREADS", "3")]);
    }
}

#[test]
fn the_openmp_5_host_routines_answer_as_libgomp_does() {
    let prog = build("omp_api_extras", "-static");
    same_with_env(&prog, &[]);
    same_with_env(&prog, &[("OMP_MAX_TASK_PRIORITY", "42"), ("OMP_NUM_TEAMS", "3"), ("OMP_TEAMS_THREAD_LIMIT", "4")]);
}

/// `cancel` and `cancellation point` for parallel, for (four schedules, combined and orphaned),
/// sections and taskgroup, with cancel-var true and false: nothing passes a cancellation
/// point after a cancel when it is true, everything when false; regions after cancelled ones
/// run normally.
#[test]
fn cancellation_follows_omp_cancellation() {
    let prog = build("omp_cancel", "-static");
    for cancellation in ["true", "false"] {
        for threads in [None, Some("1"), Some("3"), Some("6")] {
            same_with_cancellation("omp_cancel", &prog, cancellation, threads);
        }
    }
}

/// Runs `prog` natively (it must print "all checks passed") and under `--omp kernel` with 1, 2
/// and 4 vCPUs, with OMP_CANCELLATION and OMP_NUM_THREADS (None: unset), and compares.
fn same_with_cancellation(what: &str, prog: &Path, cancellation: &str, threads: Option<&str>) {
    let set_env = |cmd: &mut Command| {
        cmd.env_remove("OMP_NUM_THREADS").env("OMP_CANCELLATION", cancellation);
        if let Some(n) = threads {
            cmd.env("OMP_NUM_THREADS", n);
        }
    };
    let mut native_cmd = Command::new(prog);
    set_env(&mut native_cmd);
    let want = run(native_cmd, None);
    assert!(want.stdout.contains("all checks passed"), "native run failed:\n{}", want.stdout);
    for cpus in ["1", "2", "4"] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
        cmd.args(["run", "--omp", "kernel", "--cpus", cpus, "--"]).arg(prog);
        set_env(&mut cmd);
        let what = format!("{what}, OMP_CANCELLATION={cancellation}, --cpus {cpus}, OMP_NUM_THREADS={threads:?}");
        assert_same(&what, &want, &run(cmd, None));
    }
}

/// The affinity-format routines and omp_display_env print what libgomp prints (stdout and
/// stderr), with the default format and OMP_AFFINITY_FORMAT, and OMP_DISPLAY_ENV at start.
#[test]
fn affinity_format_and_display_env_match_libgomp() {
    let prog = build("omp_affinity", "-static");
    same_with_env(&prog, &[("OMP_NUM_THREADS", "2")]);
    same_with_env(
        &prog,
        &[
            ("OMP_NUM_THREADS", "3,2"),
            ("OMP_AFFINITY_FORMAT", "env %n:%N"),
            ("OMP_CANCELLATION", "true"),
            ("OMP_DISPLAY_ENV", "verbose"),
            ("OMP_SCHEDULE", "monotonic:guided,4"),
            ("OMP_PROC_BIND", "spread,close"),
            ("OMP_STACKSIZE", "4M"),
        ],
    );
}

/// Affinity formats the runtime cannot expand end the program as libgomp ends it: status 1 and
/// libgomp's message, naming the bad field (before: "hrt: OpenMP runtime: unsupported type in
/// affinity format" for all of `%{foobar}` and `%X`). Found running LLVM's affinity-format tests.
/// What the program printed before is not lost (the runtime ends it through its `exit`).
#[test]
fn bad_affinity_formats_fail_as_in_libgomp() {
    let prog = build("omp_affinity_bad", "-static");
    for format in ["%{foobar}", "%X", "%{thread_num", "%018n", "%0.n", "%.n"] {
        let want = run(
            {
                let mut c = Command::new(&prog);
                c.arg(format);
                c
            },
            None,
        );
        assert_eq!(want.code(), 1, "natively {format}: {want:?}");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
        cmd.args(["run", "--omp", "kernel", "--cpus", "2", "--"]).arg(&prog).arg(format);
        let got = run(cmd, None);
        assert_same(&format!("affinity format {format}"), &want, &got);
        assert_eq!(want.stderr, got.stderr, "affinity format {format}: stderr");
    }
}

/// OMP_TARGET_OFFLOAD=mandatory and a device routine given no device: status 1, libgomp's
/// message, and what the program printed before (the runtime's end went past its `exit`).
#[test]
fn a_missing_mandatory_device_ends_the_program_as_libgomp_does() {
    let prog = build("omp_offload_mandatory", "-static");
    let mut cmd = Command::new(&prog);
    cmd.env("OMP_TARGET_OFFLOAD", "mandatory");
    let want = run(cmd, None);
    assert_eq!(want.code(), 1, "natively: {want:?}");
    assert!(want.stdout.contains("before the device routine"), "natively: {want:?}");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
    cmd.args(["run", "--omp", "kernel", "--cpus", "2", "--"]).arg(&prog).env("OMP_TARGET_OFFLOAD", "mandatory");
    let got = run(cmd, None);
    assert_same("OMP_TARGET_OFFLOAD=mandatory", &want, &got);
    assert_eq!(want.stderr, got.stderr, "stderr");
}

/// The OMP_* variables, in the syntaxes the libgomp manual gives and invalid ones (which libgomp
/// reports and ignores, in whole or in part), read as libgomp reads them: `omp_env`'s ICVs,
/// team sizes, places, partitions and bind-var per nesting level, schedule(runtime) chunks,
/// stack size, OMP_DISPLAY_ENV's block and the affinity lines, on the kernel's runtime and on
/// the program's libgomp under `hrt run` with the same vCPUs. Each setting but one (the second
/// GOMP_STACKSIZE one, which keeps its precedence rule honest) once found the two differing, in
/// a differential run over the manual's values.
#[test]
fn environment_variables_are_read_as_libgomp_reads_them() {
    // The environment, and the program's arguments.
    type Setting<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);
    let prog = build("omp_env", "-static");
    let display = ("OMP_DISPLAY_ENV", "verbose");
    let nested = ("OMP_NUM_THREADS", "2,2");
    let settings: &[Setting] = &[
        // a list longer than 8 levels; a list with a bad entry is ignored whole; a sign
        (&[("OMP_NUM_THREADS", "2,2,2,2,2,2,2,2,2,2"), display], &[]),
        (&[("OMP_NUM_THREADS", "3,x"), display], &[]),
        (&[("OMP_NUM_THREADS", "3,0"), display], &[]),
        (&[("OMP_NUM_THREADS", "3,"), display], &[]),
        (&[("OMP_NUM_THREADS", "+3"), display], &[]),
        // static is monotonic; the kind counts even when the chunk is bad
        (&[("OMP_SCHEDULE", "static"), ("OMP_NUM_THREADS", "3"), display], &[]),
        (&[("OMP_SCHEDULE", "nonmonotonic:static,2"), ("OMP_NUM_THREADS", "3"), display], &[]),
        (&[("OMP_SCHEDULE", "static,x"), ("OMP_NUM_THREADS", "3"), display], &[]),
        (&[("OMP_SCHEDULE", "static,-1"), ("OMP_NUM_THREADS", "3"), display], &[]),
        (&[("OMP_SCHEDULE", "static,3000000000"), ("OMP_NUM_THREADS", "3"), display], &[]),
        (&[("OMP_SCHEDULE", "static;3"), ("OMP_NUM_THREADS", "3"), display], &[]),
        // a boolean that starts right is stored though reported
        (&[("OMP_CANCELLATION", "truex"), display], &[]),
        // bind-var per nesting level; invalid lists; an invalid OMP_PROC_BIND leaves binding
        // to OMP_PLACES
        (&[("OMP_PROC_BIND", "spread,close"), nested, display], &[]),
        (&[("OMP_PROC_BIND", "close,spread,primary"), nested, display], &[]),
        (&[("OMP_PROC_BIND", "false,close"), nested, display], &[]),
        (&[("OMP_PROC_BIND", "true,close"), nested, display], &[]),
        (&[("OMP_PROC_BIND", "spread,true"), nested, display], &[]),
        (&[("OMP_PROC_BIND", "garbage"), ("OMP_PLACES", "threads"), display], &[]),
        (&[("OMP_PROC_BIND", "false"), ("OMP_PLACES", "threads"), display], &[]),
        // place lists: a count of 0, removals, bare numbers, negative strides, nothing usable
        (&[("OMP_PLACES", "cores(0)"), nested, display], &[]),
        (&[("OMP_PLACES", "{0},{1},!{1}"), nested, display], &[]),
        (&[("OMP_PLACES", "{0:2,!1}"), nested, display], &[]),
        (&[("OMP_PLACES", "0,1"), nested, display], &[]),
        (&[("OMP_PLACES", "{1}:2:-1"), nested, display], &[]),
        (&[("OMP_PLACES", "{5}"), nested, display], &[]),
        (&[("OMP_PLACES", "garbage"), nested, display], &[]),
        // more threads than places, and spread's subpartitions
        (&[("OMP_PLACES", "{0},{1},{0},{1},{0}"), ("OMP_PROC_BIND", "spread"), ("OMP_NUM_THREADS", "3,2")], &[]),
        (&[("OMP_PLACES", "{0},{1},{0},{1},{0}"), ("OMP_PROC_BIND", "close"), ("OMP_NUM_THREADS", "5,3")], &[]),
        (
            &[
                ("OMP_PLACES", "{1},{0},{1},{0},{1},{0},{1}"),
                ("OMP_PROC_BIND", "spread,close"),
                ("OMP_NUM_THREADS", "7"),
            ],
            &[],
        ),
        (&[("OMP_PLACES", "{0},{1}"), ("OMP_PROC_BIND", "spread"), ("OMP_NUM_THREADS", "3,2")], &[]),
        // GOMP_STACKSIZE counts only without a valid OMP_STACKSIZE
        (&[("OMP_STACKSIZE", "1M"), ("GOMP_STACKSIZE", "16M"), display], &["stack", "100"]),
        (&[("OMP_STACKSIZE", "bad"), ("GOMP_STACKSIZE", "2M"), display], &["stack", "100"]),
        (&[("GOMP_SPINCOUNT", "2m"), display], &[]),
        (&[("GOMP_SPINCOUNT", "infinite"), display], &[]),
        (&[("GOMP_SPINCOUNT", "99999999999999999T"), display], &[]),
        // ints above INT_MAX are invalid, not clamped
        (&[("OMP_DEFAULT_DEVICE", "2147483648"), ("OMP_MAX_TASK_PRIORITY", "2147483648"), display], &[]),
        (&[("OMP_NUM_TEAMS", "2147483648"), ("OMP_TEAMS_THREAD_LIMIT", "2147483648"), display], &[]),
        // INT_MAX itself is kept (shown as given); beyond it is no limit (UINT_MAX)
        (&[("OMP_THREAD_LIMIT", "2147483647"), display], &[]),
        (&[("OMP_THREAD_LIMIT", "2147483648"), display], &[]),
        (&[("OMP_ALLOCATOR", "OMP_LOW_LAT_MEM_ALLOC"), display], &[]),
        // affinity lines: which teams show them
        (&[("OMP_DISPLAY_AFFINITY", "true"), ("OMP_AFFINITY_FORMAT", "T %0.3n of %N lvl %L anc %a aff %A")], &[]),
    ];
    // At 4 vCPUs, more than this host's CPUs: explicit lists, and abstract names (libgomp under
    // hrt reads the VM's topology in /sys, see `own_libgomp_sees_the_vms_topology_in_sys`).
    let four: &[Setting] = &[
        (&[("OMP_PLACES", "cores"), ("OMP_PROC_BIND", "spread,close"), ("OMP_NUM_THREADS", "3,2")], &[]),
        (&[("OMP_PLACES", "sockets(1)"), ("OMP_PROC_BIND", "close"), display], &[]),
        (&[("OMP_PLACES", "ll_caches"), ("OMP_PROC_BIND", "spread"), display], &[]),
        (&[("OMP_PLACES", "numa_domains"), ("OMP_PROC_BIND", "close"), display], &[]),
        (&[("OMP_PLACES", "{0},{1},{2},{3}"), ("OMP_PROC_BIND", "spread,close"), ("OMP_NUM_THREADS", "3,2")], &[]),
        (&[("OMP_PLACES", "{3},{2},{1},{0}"), ("OMP_PROC_BIND", "close,spread"), ("OMP_NUM_THREADS", "5,3")], &[]),
        (&[("OMP_PLACES", "{0},{1},{2},{3}"), ("OMP_PROC_BIND", "spread"), ("OMP_NUM_THREADS", "3,2")], &[]),
    ];
    let sorted = |s: &str| {
        let mut lines: Vec<&str> = s.lines().collect();
        lines.sort_unstable();
        lines.join("\n")
    };
    for (cpus, cases) in [("2", settings), ("4", four)] {
        for (env, args) in cases.iter() {
            let on = |omp: &str| {
                let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
                cmd.args(["run", "--omp", omp, "--cpus", cpus, "--"]).arg(&prog).args(args.iter());
                for (k, v) in env.iter() {
                    cmd.env(k, v);
                }
                run(cmd, None)
            };
            let (want, got) = (on("libgomp"), on("kernel"));
            assert_eq!(want.code(), 0, "omp_env on libgomp with {env:?}:\n{}", want.stderr);
            assert_eq!(
                (got.code(), got.stdout.as_str(), sorted(&got.stderr)),
                (want.code(), want.stdout.as_str(), sorted(&want.stderr)),
                "omp_env with {env:?} {args:?}, --cpus {cpus}"
            );
        }
    }
}

/// The memory allocators (predefined ones, traits, fallbacks, OMP_ALLOCATOR, every thread
/// allocating) answer as libgomp's.
#[test]
fn memory_allocators_answer_as_libgomp_does() {
    let prog = build("omp_alloc", "-static");
    same_with_env(&prog, &[("OMP_NUM_THREADS", "3")]);
    same_with_env(&prog, &[("OMP_ALLOCATOR", "omp_low_lat_mem_alloc"), ("OMP_NUM_THREADS", "1")]);
}

/// The Fortran forms of the affinity-format, omp_display_env and allocator routines.
#[test]
fn fortran_display_and_allocator_routines_match_libgomp() {
    for variant in ["static", "pie"] {
        same_with_env(&fortran_program("omp_fortran_display", variant), &[("OMP_NUM_THREADS", "2")]);
    }
}

/// What GCC's libgomp testsuite found the kernel's runtime doing differently from libgomp
/// (omp_gomp_semantics.c: task-owned nest locks, deep doacross nests, repeated dependences,
/// realloc in a pool, `cancel taskgroup` from a work-sharing task reduction, pause, the
/// contention group's thread limit, the old ABI's combined constructs), with 1, 2 and 4 vCPUs.
#[test]
fn libgomp_testsuite_behaviours_match_libgomp() {
    let prog = build("omp_gomp_semantics", "-static");
    let envs: [&[(&str, &str)]; 4] = [
        &[],
        &[("OMP_NUM_THREADS", "1")],
        &[("OMP_NUM_THREADS", "3"), ("OMP_CANCELLATION", "true")],
        &[("OMP_THREAD_LIMIT", "4"), ("OMP_NUM_THREADS", "4")],
    ];
    for env in envs {
        let mut native_cmd = Command::new(&prog);
        native_cmd.env_remove("OMP_NUM_THREADS").envs(env.iter().copied());
        let want = run(native_cmd, None);
        assert!(want.stdout.contains("all checks passed"), "native run failed with {env:?}:\n{}", want.stdout);
        for cpus in ["1", "2", "4"] {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
            cmd.args(["run", "--omp", "kernel", "--cpus", cpus, "--"]).arg(&prog);
            cmd.env_remove("OMP_NUM_THREADS").envs(env.iter().copied());
            assert_same(&format!("omp_gomp_semantics with {env:?}, --cpus {cpus}"), &want, &run(cmd, None));
        }
    }
}

/// C++ programs (g++): tasks' firstprivate objects made by copy constructors are destroyed when
/// a cancelled taskgroup discards their tasks (libgomp runs such tasks), exceptions inside
/// regions and tasks, user-defined reductions over a class, member functions, templates,
/// iterator loops, taskloop copies, a region in a static constructor; with 1, 2 and 4 vCPUs,
/// static and static-PIE, cancellation on and off.
#[test]
fn cxx_programs_run_as_with_libgomp() {
    for link in ["-static", "-static-pie"] {
        let prog = build("omp_cxx", link);
        for cancellation in ["true", "false"] {
            for threads in [None, Some("1"), Some("3")] {
                same_with_cancellation(&format!("omp_cxx {link}"), &prog, cancellation, threads);
            }
        }
    }
}

/// OMP_TARGET_OFFLOAD=mandatory: target regions asked to run on the host do; one on a device
/// that does not exist ends the program with libgomp's message and status; without the
/// setting it runs on the host.
#[test]
fn mandatory_offload_ends_the_program_as_libgomp_does() {
    let prog = build("omp_gomp_semantics", "-static");
    for offload in [None, Some("mandatory")] {
        let mut native_cmd = Command::new(&prog);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
        cmd.args(["run", "--omp", "kernel", "--cpus", "2", "--"]).arg(&prog);
        native_cmd.arg("target");
        cmd.arg("target");
        if let Some(v) = offload {
            native_cmd.env("OMP_TARGET_OFFLOAD", v);
            cmd.env("OMP_TARGET_OFFLOAD", v);
        }
        let (want, got) = (run(native_cmd, None), run(cmd, None));
        assert_eq!(want.code(), if offload.is_some() { 1 } else { 0 }, "native: {}", want.stderr);
        assert_same(&format!("target regions with OMP_TARGET_OFFLOAD={offload:?}"), &want, &got);
        assert_eq!(want.stderr, got.stderr, "OMP_TARGET_OFFLOAD={offload:?}");
    }
}

/// The `error` directive at run time: `severity(warning)` prints libgomp's line and goes on;
/// `severity(fatal)` prints its line and ends the program with status 1 through the C
/// library's `exit`, so the output the program had buffered is written, as natively.
#[test]
fn the_error_directive_ends_the_program_as_libgomp_does() {
    for link in ["-static", "-static-pie"] {
        let prog = build("omp_gomp_semantics", link);
        let mut native_cmd = Command::new(&prog);
        native_cmd.arg("error");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
        cmd.args(["run", "--omp", "kernel", "--cpus", "2", "--"]).arg(&prog).arg("error");
        let (want, got) = (run(native_cmd, None), run(cmd, None));
        assert_eq!(want.code(), 1, "native: {}", want.stderr);
        assert!(want.stdout.contains("before the fatal error"), "native: {}", want.stdout);
        assert_same(&format!("the error directive, {link}"), &want, &got);
        assert_eq!(want.stderr, got.stderr, "the error directive, {link}");
    }
}

/// A signal sent to the program while every thread that can take it waits inside the kernel's
/// runtime (at a barrier, for a lock) reaches one of them, and its handler, which is what ends
/// the wait, runs, as on libgomp, whose waits are futex calls a signal interrupts. (The
/// runtime's waiters took no signal: an interrupt of kernel code delivers none, and such a
/// program hung; found with the OpenMP examples' `task_detach.2.c`, whose handler calls
/// `omp_fulfill_event`.)
#[test]
fn signals_reach_threads_waiting_in_the_runtime() {
    same_as_libgomp_linked("omp_signal_wait", "-static-pie", &[None, Some("1"), Some("3"), Some("5")]);
}

/// The frameless lock entry points (`kernel/src/arch/x86_64/word_lock.rs`) under contention,
/// with waiters that spin and with waiters that sleep at once (`GOMP_SPINCOUNT=0`), so that
/// unlocks must wake them: no update is lost, as natively.
#[test]
fn kernel_runtime_locks_lose_no_update_when_waiters_sleep() {
    for link in ["-static", "-pie"] {
        let prog = build("omp_locks_contended", link);
        for spin in [None, Some("0")] {
            let with_spin = |cmd: &mut Command| {
                cmd.env("OMP_NUM_THREADS", "4");
                if let Some(s) = spin {
                    cmd.env("GOMP_SPINCOUNT", s);
                }
            };
            let mut native = Command::new(&prog);
            with_spin(&mut native);
            let want = run(native, None);
            assert!(want.stdout.contains("all checks passed"), "native run failed:\n{}", want.stdout);
            for cpus in ["1", "2", "4"] {
                let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
                cmd.args(["run", "--omp", "kernel", "--cpus", cpus, "--"]).arg(&prog);
                with_spin(&mut cmd);
                let got = run(cmd, None);
                assert_same(
                    &format!("omp_locks_contended {link}, --cpus {cpus}, GOMP_SPINCOUNT={spin:?}"),
                    &want,
                    &got,
                );
            }
        }
    }
}

/// `--omp` holds for the images a program execs, as for the one `hrt run` starts: omp_exec.c
/// execs itself with new OMP_* values from inside a region whose other thread holds the
/// unnamed critical section; both images run on the kernel's runtime (`-v` says so once per
/// image) and print what they print natively (a runtime that kept the old image's lock,
/// settings or teams hangs or prints other values). An OpenMP program started through `env`
/// (not an OpenMP program itself) runs on the kernel's runtime too.
#[test]
fn programs_that_a_program_execs_run_on_the_kernel_runtime_too() {
    const SAYS: &str = "of the program's OpenMP functions run on the kernel's runtime";
    let prog = build("omp_exec", "-static-pie");
    let env = [("OMP_NUM_THREADS", "2"), ("OMP_SCHEDULE", "static,3"), ("OMP_CANCELLATION", "true")];
    let mut native_cmd = Command::new(&prog);
    native_cmd.envs(env);
    let want = run(native_cmd, None);
    assert!(want.stdout.contains("stage 2: team 3"), "native run failed:\n{}", want.stdout);
    for cpus in ["1", "2", "4"] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
        cmd.args(["run", "--omp", "kernel", "-v", "--cpus", cpus, "--"]).arg(&prog).envs(env);
        let got = run(cmd, None);
        assert_same(&format!("omp_exec --cpus {cpus}"), &want, &got);
        assert_eq!(got.stderr.matches(SAYS).count(), 2, "--cpus {cpus}: -v does not say so twice:\n{}", got.stderr);
    }
    let prog = build("omp_kernel", "-static");
    let mut native_cmd = Command::new("env");
    native_cmd.arg("OMP_NUM_THREADS=3").arg(&prog);
    let want = run(native_cmd, None);
    assert!(want.stdout.contains("all checks passed"), "native run failed:\n{}", want.stdout);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
    cmd.args(["run", "--omp", "kernel", "-v", "--cpus", "2", "--", "env", "OMP_NUM_THREADS=3"]).arg(&prog);
    let got = run(cmd, None);
    assert_same("env OMP_NUM_THREADS=3 omp_kernel", &want, &got);
    assert!(
        got.stderr.contains(SAYS),
        "-v does not say the exec'd program runs on the kernel's runtime:\n{}",
        got.stderr
    );
    // An exec'd program the kernel's runtime cannot take runs on its own libgomp (the exec
    // is not refused), and hrt says why even without -v.
    let prog = build("omp_unprovided", "-static");
    let mut native_cmd = Command::new("env");
    native_cmd.arg(&prog);
    let want = run(native_cmd, None);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
    cmd.args(["run", "--omp", "kernel", "--cpus", "2", "--", "env"]).arg(&prog);
    let got = run(cmd, None);
    assert_same("env omp_unprovided", &want, &got);
    let says = got.stderr.contains("acc_get_num_devices") && got.stderr.contains("it runs on its own libgomp");
    assert!(says, "hrt does not say why the exec'd program keeps its libgomp:\n{}", got.stderr);
}

/// The nesting setters as libgomp 12 answers them (tests/programs/omp_icv_setters.c):
/// `omp_set_nested(1)` sets max-active-levels to the most supported whatever it was (under
/// the kernel's runtime it did nothing from 0 and kept 3), `omp_set_nested(0)` lowers a
/// larger one to 1; compared with the native run at 1, 2 and 4 vCPUs.
#[test]
fn nesting_setters_act_as_libgomp_does() {
    same_as_native_on_1_2_and_4_vcpus("omp_icv_setters", &build("omp_icv_setters", "-static"));
}

/// dyn-var (tests/programs/omp_dynamic_teams.c with OMP_DYNAMIC=true, OMP_NUM_THREADS=8): as
/// libgomp, a region gets at most as many threads as the VM has vCPUs (libgomp also subtracts
/// the host's load average, so its native answer varies with the host's load: the kernel's
/// runtime is checked against the rule); dyn-var off gives what was asked. It never shrank a
/// team before.
#[test]
fn dynamic_teams_get_at_most_one_thread_per_vcpu() {
    let prog = build("omp_dynamic_teams", "-static");
    for cpus in [1u32, 2, 4] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
        cmd.args(["run", "--omp", "kernel", "--cpus", &cpus.to_string(), "--"]).arg(&prog);
        cmd.env("OMP_NUM_THREADS", "8").env("OMP_DYNAMIC", "true");
        let got = run(cmd, None);
        let want = format!(
            "dynamic 1, procs {cpus}, max threads 8\ndefault team {0}, asked 8: {0}, asked 3: {1}\ndynamic off: asked 8: 8\n",
            cpus.min(8),
            cpus.min(3)
        );
        assert_eq!(got.code(), 0, "--cpus {cpus}: {got:?}");
        assert_eq!(got.stdout, want, "--cpus {cpus}: {got:?}");
    }
}

/// Fortran's omp_get_schedule leaves the monotonic modifier out of the kind, as libgomp's does
/// (tests/programs/omp_fortran_schedule.f90; the kernel's runtime returned the C routine's
/// kind, so `kind == omp_sched_static` was false), with OMP_SCHEDULE static, monotonic guided
/// and dynamic, static and static-PIE.
#[test]
fn fortran_schedule_kinds_match_libgomp() {
    for variant in ["static", "pie"] {
        let prog = fortran_program("omp_fortran_schedule", variant);
        for schedule in ["static", "monotonic:guided,5", "dynamic,2"] {
            let mut native_cmd = Command::new(&prog);
            native_cmd.env("OMP_SCHEDULE", schedule);
            let want = run(native_cmd, None);
            assert_eq!(want.code(), 0, "native: {want:?}");
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
            cmd.args(["run", "--omp", "kernel", "--cpus", "2", "--"]).arg(&prog).env("OMP_SCHEDULE", schedule);
            assert_same(&format!("omp_fortran_schedule-{variant} OMP_SCHEDULE={schedule}"), &want, &run(cmd, None));
        }
    }
}

/// GOMP_CPU_AFFINITY (tests/programs/omp_cpu_affinity.c): one place per CPU it lists, in its
/// order, binding on unless OMP_PROC_BIND is false, OMP_PLACES winning when valid, an invalid
/// value ignored; as libgomp natively at `--cpus 2` (the kernel's runtime ignored the variable).
#[test]
fn gomp_cpu_affinity_sets_places_as_libgomp_does() {
    let prog = build("omp_cpu_affinity", "-static");
    for env in [
        &[("GOMP_CPU_AFFINITY", "0-1")][..],
        &[("GOMP_CPU_AFFINITY", "1,0")],
        &[("GOMP_CPU_AFFINITY", "1")],
        &[("GOMP_CPU_AFFINITY", "0x1_0")],
        &[("GOMP_CPU_AFFINITY", "1 0"), ("OMP_PLACES", "threads")],
        &[("GOMP_CPU_AFFINITY", "1,0"), ("OMP_PROC_BIND", "false")],
        &[("GOMP_CPU_AFFINITY", "1,0"), ("OMP_PROC_BIND", "spread")],
    ] {
        same_with_env(&prog, env);
    }
}

/// The workers of a team end with the thread that started it (a joined `std::thread`), as
/// libgomp ends that thread's pool: their `thread_local` destructors run (until 2026-12-03 the
/// kernel's runtime kept them waiting for good: 1 destructor of 4), and a later region from
/// another thread still gets its team (tests/programs/omp_master_thread_exit.cc).
#[test]
fn workers_end_with_the_thread_that_started_their_team() {
    same_as_libgomp("omp_master_thread_exit", &[None]);
}

/// Threads that wait for each other in program code (tests/programs/omp_flag_pipeline.c: a
/// wavefront whose threads spin on their neighbour's flag, its index computed each round from
/// a shared team size, as PRK's p2p and NPB LU wait), four of them on one or two vCPUs: each
/// wait needs the vCPU handed to the awaited thread. The look did not take a loop that
/// computes its flag's address for a spin (0 of 59 looks found one; the waits ended with the
/// 10 ms quantum, 490 ms against 115 natively). Since 2026-12-06 the first look that finds
/// such a loop rewrites it to yield by itself at every round (`linux::spin_sites`; NPB LU
/// class W with 4 threads at `--cpus 4`: 7.5 -> 1.1 s). Same output as natively; with
/// rewriting the loops were rewritten and yielded, with `--no-rewrite` the looks found
/// spinning threads.
#[test]
fn threads_spinning_on_computed_flags_hand_their_vcpu_over() {
    let prog = build("omp_flag_pipeline", "-static");
    let want = native(&prog, Some("4"));
    assert!(want.stdout.contains("all checks passed"), "natively: {want:?}");
    for cpus in ["1", "2"] {
        let rewritten = |got: &Outcome| {
            got.stderr
                .lines()
                .find_map(|l| {
                    l.strip_prefix("kernel: ")?.split_once(" spin-wait loop(s) rewritten to yield their vCPU, ")
                })
                .and_then(|(loops, rest)| {
                    Some((loops.parse::<u64>().ok()?, rest.strip_suffix(" yield(s) from them")?.parse::<u64>().ok()?))
                })
                .is_some_and(|(loops, yields)| loops > 0 && yields > 0)
        };
        // The loops are found by the kernel's looks at spinning threads, which a loaded host
        // may starve of vCPU time for a whole run: up to three runs (each one's output
        // checked) for one that rewrote them.
        let mut got = hrt(&["-v", "--omp", "kernel", "--cpus", cpus], &prog, Some("4"));
        assert_same(&format!("omp_flag_pipeline with 4 threads at --cpus {cpus}"), &want, &got);
        for _ in 0..2 {
            if rewritten(&got) {
                break;
            }
            got = hrt(&["-v", "--omp", "kernel", "--cpus", cpus], &prog, Some("4"));
            assert_same(&format!("omp_flag_pipeline with 4 threads at --cpus {cpus}, again"), &want, &got);
        }
        assert!(
            rewritten(&got),
            "--cpus {cpus}: no spin-wait loop rewritten, or none yielded in 3 runs:\n{}",
            got.stderr
        );
        let got = hrt(&["-v", "--no-rewrite", "--omp", "kernel", "--cpus", cpus], &prog, Some("4"));
        assert_same(&format!("omp_flag_pipeline with 4 threads at --cpus {cpus} --no-rewrite"), &want, &got);
        let spinning = got
            .stderr
            .lines()
            .find_map(|l| l.strip_prefix("kernel: ")?.split_once(" look(s) at running program threads, "))
            .and_then(|(_, rest)| rest.strip_suffix(" found spinning")?.parse::<u64>().ok());
        assert!(
            spinning.is_some_and(|n| n > 0),
            "--cpus {cpus} --no-rewrite: no look found a spinning thread:\n{}",
            got.stderr
        );
    }
}
