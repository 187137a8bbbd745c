//! The kernel in the program's ring (issue 14): on a PVM host the kernel runs in ring 3 by
//! default, and `--kernel-ring 0` keeps the old split. Both modes must boot, pass the kernel's
//! self-tests and run programs with the same results as Linux; `getcpu` must name the vCPU the
//! thread is pinned to, not the host CPU (RDTSCP's answer in ring 3 on PVM).

mod common;
use common::hostile::{assert_same, build, hrt, hrt_cmd, native, passes_natively_and_same_on_1_and_2_cpus, run};

/// True if this host runs guest ring 0 emulated (PVM), where the two modes differ.
fn pvm_host() -> bool {
    let out = run(
        {
            let mut c = hrt_cmd();
            c.arg("info");
            c
        },
        None,
    );
    out.stdout.contains("PVM")
}

fn selftest(options: &[&str]) -> common::hostile::Outcome {
    let mut cmd = hrt_cmd();
    cmd.arg("selftest").args(options);
    run(cmd, None)
}

#[test]
fn the_kernel_runs_in_ring_3_on_pvm_and_in_ring_0_when_asked() {
    let default = selftest(&["--cpus", "2"]);
    assert_eq!(default.code(), 0, "{}", default.stderr);
    assert!(default.stderr.contains("17 passed, 0 failed") || default.stderr.contains(" passed, 0 failed"));
    let ring0 = selftest(&["--cpus", "2", "--kernel-ring", "0"]);
    assert_eq!(ring0.code(), 0, "{}", ring0.stderr);
    assert!(ring0.stderr.contains("kernel in ring 0"), "{}", ring0.stderr);
    if pvm_host() {
        assert!(default.stderr.contains("kernel in ring 3"), "{}", default.stderr);
    }
}

#[test]
fn getcpu_names_the_pinned_vcpu() {
    let prog = build("ring_getcpu", &[]);
    for cpus in ["1", "2", "4"] {
        let out = hrt(&["--cpus", cpus], &prog, &[]);
        assert_eq!(out.code(), 0, "{}", out.stderr);
        let n: usize = cpus.parse().unwrap();
        let want: String =
            (0..n).rev().map(|c| format!("pinned to {c}: sched_getcpu {c}, getcpu system call {c}\n")).collect();
        assert_eq!(out.stdout, want, "--cpus {cpus}");
    }
    // And as on Linux with as many CPUs as the host has (at most 2 here).
    let native_out = native(&prog, &["2"]);
    assert_same("ring_getcpu 2", &native_out, &hrt(&["--cpus", "2"], &prog, &["2"]));
}

#[test]
fn programs_give_the_same_results_in_both_kernel_rings() {
    let prog = build("ring_getcpu", &[]);
    let native_out = native(&prog, &["1"]);
    for ring in ["0", "3"] {
        for cpus in ["1", "2"] {
            let out = hrt(&["--kernel-ring", ring, "--cpus", cpus], &prog, &["1"]);
            assert_same(&format!("--kernel-ring {ring} --cpus {cpus}"), &native_out, &out);
        }
    }
}

/// Rewriting `syscall` sites into calls keeps every result and fault Linux gives: red-zone
/// values survive (the site stays SYSCALL), concurrent rewriting of a hot site, registers
/// across the fast path, a signal reaching a thread that makes only fast calls, a NULL call
/// and a NULL write still end in SIGSEGV. Also with `--no-rewrite` and `--cpus 1`.
#[test]
fn rewritten_system_calls_change_nothing_the_program_sees() {
    let prog = build("ring_rewrite", &[]);
    for case in ["redzone", "plain", "regs", "signal", "nullcall", "nullwrite"] {
        let native_out = native(&prog, &[case]);
        for opts in [&["--cpus", "2"][..], &["--cpus", "1"], &["--cpus", "2", "--no-rewrite"]] {
            let out = hrt(opts, &prog, &[case]);
            assert_same(&format!("ring_rewrite {case} {opts:?}"), &native_out, &out);
        }
    }
}

/// With the kernel in ring 3 the site of `plain_getpid` is rewritten and the red-zone one is
/// not (`-v` reports the counts at exit); `--no-rewrite` rewrites none.
#[test]
fn hot_sites_are_rewritten_unless_asked_not_to() {
    if !pvm_host() {
        return;
    }
    let prog = build("ring_rewrite", &[]);
    let counts = |opts: &[&str]| -> (u64, u64) {
        let mut all = vec!["-v"];
        all.extend_from_slice(opts);
        let out = hrt(&all, &prog, &["plain"]);
        assert_eq!(out.code(), 0, "{}", out.stderr);
        let line = out.stderr.lines().find(|l| l.contains("system-call site(s) rewritten"));
        let Some(line) = line else { return (0, 0) };
        let words: Vec<&str> = line.split_whitespace().collect();
        (words[1].parse().unwrap(), words[7].parse().unwrap())
    };
    let (rewritten, _) = counts(&[]);
    assert!(rewritten >= 1, "no site rewritten");
    assert_eq!(counts(&["--no-rewrite"]), (0, 0));
}

/// Register sites (`mov %rX, %eax; syscall`, the number hoisted into a register, as libgomp's
/// futex calls have it) and the generic `syscall()` function's site (`mov 0x8(%rsp), %r9;
/// syscall`) rewritten into calls change nothing the program sees: results from two threads
/// while the sites get rewritten, blocking reads through either kind restarted after a
/// SA_RESTART handler (the first of each kind restarts after its site was patched under it), a
/// handler sending the thread back to a rewritten site's `syscall` (the middle of the call now:
/// the kernel moves it back to the call), signals to threads spinning on such sites while they
/// are patched, and through `syscall()` six arguments, errno returns and a futex wake. With the
/// kernel in ring 3 (`-v` reports the counts) the register sites of `calls` and the
/// `syscall()` site are rewritten (also in a static-PIE build and in libc.so), none with
/// `--no-rewrite`.
#[test]
fn register_sites_are_rewritten_and_change_nothing() {
    let prog = build("ring_regsite", &[]);
    let pie = build("ring_regsite", &["-static-pie"]);
    for case in ["calls", "restart", "resume", "spin", "generic"] {
        let native_out = native(&prog, &[case]);
        for opts in [&["--cpus", "2"][..], &["--cpus", "1"], &["--cpus", "2", "--no-rewrite"]] {
            let out = hrt(opts, &prog, &[case]);
            assert_same(&format!("ring_regsite {case} {opts:?}"), &native_out, &out);
        }
        let out = hrt(&["--cpus", "2"], &pie, &[case]);
        assert_same(&format!("ring_regsite (static-pie) {case}"), &native(&pie, &[case]), &out);
    }
    if !pvm_host() {
        return;
    }
    // (register sites, generic `syscall()` sites) rewritten, from the `-v` line at exit.
    let rewritten = |prog: &std::path::Path, opts: &[&str], case: &str| -> (u64, u64) {
        let mut all = vec!["-v"];
        all.extend_from_slice(opts);
        let out = hrt(&all, prog, &[case]);
        assert_eq!(out.code(), 0, "{}", out.stderr);
        let line = out.stderr.lines().find(|l| l.contains("with the number in a register")).unwrap_or_default();
        let count = |after: &str| -> u64 {
            line.rsplit_once(after).and_then(|(_, w)| w.split_whitespace().next()?.parse().ok()).unwrap_or(0)
        };
        (count("("), count("in a register, "))
    };
    // reg_getppid (r9d) and reg_gettid (r10), both hand-written register sites, and syscall():
    // also in the static-PIE build and in libc.so, loaded beyond a `call rel32`'s reach of the
    // gate (their calls go through the program's near slot table).
    let dynamic = common::hostile::build_dynamic(
        &common::hostile::repo_root().join("tests/programs/hostile/ring_regsite.c"),
        "ring_regsite",
        &[],
    );
    for prog in [&prog, &pie, &dynamic] {
        let (registers, generic) = rewritten(prog, &[], "calls");
        assert!(registers >= 2, "{}: the register sites were not rewritten", prog.display());
        assert_eq!(generic, 1, "{}: the syscall() site was not rewritten", prog.display());
    }
    for case in ["restart", "generic"] {
        assert_same(&format!("dynamic ring_regsite {case}"), &native(&dynamic, &[case]), &hrt(&[], &dynamic, &[case]));
    }
    assert_eq!(rewritten(&prog, &["--no-rewrite"], "calls"), (0, 0));
}

/// A register site's patch stops the other vCPUs, which costs one that runs the program an
/// interrupt through emulated ring 0 and the wait: a site called a few times while another
/// thread computes keeps SYSCALL, and is patched at a call that finds the other vCPUs idle.
#[test]
fn register_sites_wait_to_be_patched_while_other_vcpus_compute() {
    let prog = build("ring_regsite", &[]);
    let registers = |args: &[&str]| -> u64 {
        let out = hrt(&["-v", "--cpus", "2"], &prog, args);
        assert_eq!(out.code(), 0, "{}", out.stderr);
        assert_same(&format!("ring_regsite {args:?}"), &native(&prog, args), &out);
        let line = out.stderr.lines().find(|l| l.contains("with the number in a register")).unwrap_or_default();
        line.rsplit_once("(").and_then(|(_, w)| w.split_whitespace().next()?.parse().ok()).unwrap_or(0)
    };
    if !pvm_host() {
        return;
    }
    assert_eq!(registers(&["busy"]), 0, "patched while the other vCPU computed");
    assert_eq!(registers(&["busy", "idle"]), 1, "not patched once the other vCPU was idle");
}

/// Threads passing a token by spinning on plain loads (tests/programs/hostile/
/// spin_token_ring.c), more of them than vCPUs: the looks find the loops and rewrite them to
/// yield their vCPU at every round (`linux::spin_sites`), a RIP-relative load (`global`), a
/// two-instruction head with sentinels in every other register (`registers`: rcx and r11,
/// which the kernel's entry clobbers, and vector registers), all unchanged across the waits,
/// a 4-byte loop whose window takes its back branch too (`short`), and a loop whose code the
/// program then makes writable and patches (`patch`: the patch takes effect, as natively).
/// Same output as natively at 1, 2 and 4 vCPUs; the loops were rewritten and yielded with
/// rewriting on, and not with `--no-rewrite` (where the looks hand the vCPUs over).
#[test]
fn spin_wait_loops_are_rewritten_to_yield_and_change_nothing() {
    let prog = build("spin_token_ring", &[]);
    let rewritten = |out: &common::hostile::Outcome| -> (u64, u64) {
        let line =
            out.stderr.lines().find_map(|l| l.strip_prefix("kernel: ")?.split_once(" spin-wait loop(s) rewritten"));
        line.and_then(|(loops, rest)| {
            let yields = rest.strip_prefix(" to yield their vCPU, ")?.strip_suffix(" yield(s) from them")?;
            Some((loops.parse().ok()?, yields.parse().ok()?))
        })
        .unwrap_or_default()
    };
    for shape in ["global", "registers", "short", "patch"] {
        // Natively 4 threads on this host's 2 CPUs take a time slice per hand-over: few rounds.
        let args = [shape, "4", "100"];
        let want = native(&prog, &args);
        assert_eq!(want.code(), 0, "natively: {want:?}");
        for cpus in ["1", "2", "4"] {
            let mut out = hrt(&["-v", "--cpus", cpus], &prog, &args);
            assert_same(&format!("spin_token_ring {shape} at --cpus {cpus}"), &want, &out);
            if pvm_host() && cpus != "4" {
                // The loops are found by the kernel's looks at spinning threads, which a loaded
                // host may starve of vCPU time for a whole run: up to three runs (each one's
                // output checked) for one that rewrote them.
                for _ in 0..2 {
                    let (loops, yields) = rewritten(&out);
                    if loops >= 1 && yields > 0 {
                        break;
                    }
                    out = hrt(&["-v", "--cpus", cpus], &prog, &args);
                    assert_same(&format!("spin_token_ring {shape} at --cpus {cpus}, again"), &want, &out);
                }
                let (loops, yields) = rewritten(&out);
                assert!(loops >= 1 && yields > 0, "{shape} --cpus {cpus}: not rewritten in 3 runs:\n{}", out.stderr);
            }
        }
        let out = hrt(&["-v", "--cpus", "1", "--no-rewrite"], &prog, &args);
        assert_same(&format!("spin_token_ring {shape} --no-rewrite"), &want, &out);
        assert_eq!(rewritten(&out), (0, 0), "{shape} --no-rewrite:\n{}", out.stderr);
    }
}

/// Unwinding out of rewritten spin-wait loops (tests/programs/hostile/spin_unwind.cc, g++
/// with `-fnon-call-exceptions`): threads cancelled asynchronously while they spin run their
/// destructors, and a SIGSEGV in a loop's load thrown as a C++ exception is caught after the
/// destructors ran. A signal frame built while a thread was in the rewritten loop's slot or the
/// yield stub named code without an unwind entry: no destructor ran, and the exception ended
/// in `terminate` (`linux::spin_sites::on_signal` now gives the frame the loop's own address).
#[test]
fn unwinding_out_of_rewritten_spin_loops_runs_every_destructor() {
    let source = common::hostile::repo_root().join("tests/programs/hostile/spin_unwind.cc");
    let prog = common::hostile::build_with(
        "g++",
        &source,
        "spin_unwind",
        &["-O2", "-fnon-call-exceptions", "-static", "-pthread"],
    );
    for case in ["cancel", "segv"] {
        let want = native(&prog, &["4", case]);
        assert!(want.code() == 0 && want.stdout.contains("all unwound"), "natively: {want:?}");
        for cpus in ["1", "2"] {
            let out = hrt(&["-v", "--cpus", cpus], &prog, &["4", case]);
            assert_same(&format!("spin_unwind {case} at --cpus {cpus}"), &want, &out);
            if pvm_host() {
                assert!(
                    !out.stderr.contains("kernel: 0 spin-wait loop(s) rewritten"),
                    "{case} --cpus {cpus}: no loop rewritten:\n{}",
                    out.stderr
                );
            }
        }
    }
}

/// `--strace` shows every call made through the rewritten `syscall()` site (tracing keeps
/// the rewriting on and takes every call down the full path).
#[test]
fn strace_sees_every_call_through_the_rewritten_syscall_function() {
    if !pvm_host() {
        return;
    }
    let prog = build("ring_regsite", &[]);
    let out = hrt(&["-v", "--strace"], &prog, &["generic"]);
    assert_eq!(out.code(), 0, "{}", out.stderr);
    assert!(out.stderr.contains("1 in the generic syscall function"), "{}", out.stderr);
    let getppid = out.stderr.lines().filter(|l| l.contains("] getppid() = ")).count();
    // The program's own getppid() (the wrapper) and seven through syscall().
    assert_eq!(getppid, 8, "{}", out.stderr);
}

/// All 256 bits of every ymm register survive thread switches on a shared CPU, through a
/// system call (sched_yield) and through timer preemption: with the kernel in ring 3 switches
/// use XSAVE (FXSAVE lost the upper halves: 400 of 400 rounds wrong before).
#[test]
fn vector_registers_survive_thread_switches() {
    let prog = build("ring_avx", &["-mavx2"]);
    let native_out = native(&prog, &["yield"]);
    for (opts, case) in [
        (&["--cpus", "1"][..], "yield"),
        (&["--cpus", "1", "--preempt", "1000"], "yield"),
        (&["--cpus", "1", "--preempt", "1000"], "preempt"),
    ] {
        let out = hrt(opts, &prog, &[case]);
        assert_same(&format!("ring_avx {case} {opts:?}"), &native_out, &out);
    }
}

/// The vector extensions a program finds usable through libgcc's checks (CPUID, its OSXSAVE
/// bit, XCR0) are the host's (tests/programs/hostile/cpu_features.c), at 1 and 2 vCPUs. On
/// PVM, KVM shows OSXSAVE only while the guest's CR4 has it; the ring-3 kernel never set it,
/// so programs under hrt took AVX, AVX2 and AVX-512 for unusable (glibc's string functions ran
/// their SSE2 forms) until the vCPUs started with it.
#[test]
fn programs_see_the_hosts_vector_extensions() {
    passes_natively_and_same_on_1_and_2_cpus("cpu_features", Some("cpu features: done"));
}

/// AVX-512 state (zmm0-31 in full, k0-7) survives thread switches of every kind (yield, futex
/// wait, preemption) with more threads than vCPUs, and signal handlers that overwrite it:
/// switches save every component XCR0 enables, and handler frames carry the whole XSAVE area
/// (also frames built in ring 0, for a fault or a signal that arrives on an interrupt). Before,
/// only x87/SSE/AVX were kept: up to 600 of 600 rounds wrong, and glibc's EVEX string
/// functions corrupted data (a crash in `__ctype_init` with preemption).
#[test]
fn avx512_registers_survive_switches_and_handlers() {
    let prog = build("ring_avx512", &["-mavx512f", "-mavx512bw"]);
    for (opts, case) in [
        (&["--cpus", "1"][..], "yield"),
        (&["--cpus", "1"], "futex"),
        (&["--cpus", "1", "--preempt", "1000"], "preempt"),
        (&["--cpus", "1"], "signal"),
        (&["--cpus", "1"], "fault"),
        (&["--cpus", "2"], "kick"),
        (&["--cpus", "2"], "fault"),
    ] {
        let native_out = native(&prog, &[case]);
        let out = hrt(opts, &prog, &[case]);
        assert_same(&format!("ring_avx512 {case} {opts:?}"), &native_out, &out);
    }
}

/// A dynamically linked program's system calls are in libc.so, which has no symbol table the
/// kernel reads: their functions are found in the library's unwind table (`eh_frame`), so its
/// sites are rewritten too, and the program's results stay the same as natively (the
/// rewrite-hazard cases, built dynamically; `regs` and `signal` exercise the fast path).
#[test]
fn shared_library_sites_are_rewritten() {
    if !pvm_host() {
        return;
    }
    let source = common::hostile::repo_root().join("tests/programs/hostile/ring_rewrite.c");
    let prog = common::hostile::build_dynamic(&source, "ring_rewrite", &[]);
    for case in ["plain", "regs", "signal", "nullcall"] {
        let native_out = native(&prog, &[case]);
        let out = hrt(&["--cpus", "2"], &prog, &[case]);
        assert_same(&format!("dynamic ring_rewrite {case}"), &native_out, &out);
    }
    // Sites in libc (write, exit_group, futex, ...): more than the program's own three.
    let out = hrt(&["-v"], &prog, &["plain"]);
    let line = out.stderr.lines().find(|l| l.contains("system-call site(s) rewritten")).unwrap_or_default();
    let rewritten: u64 = line.split_whitespace().nth(1).and_then(|w| w.parse().ok()).unwrap_or(0);
    assert!(rewritten > 3, "libc's sites were not rewritten: {line:?}\n{}", out.stderr);
}

/// The vDSO exports what Linux's x86-64 vDSO does under LINUX_2.6, `__vdso_clock_getres`
/// included (tests/programs/hostile/vdso_symbols.c: it was missing and rustix's vDSO test
/// failed), and its clock_getres answers as the system call for every clock.
#[test]
fn vdso_exports_linuxs_functions() {
    passes_natively_and_same_on_1_and_2_cpus("vdso_symbols", Some("__vdso_clock_getres: there"));
}

/// The vDSO's own `syscall`s (the CPU-time clocks and clock(), a gettimeofday with a time
/// zone, an unknown clock) are rewritten like the program's once they are hot: the vDSO's
/// functions are known to the rewriter (it is built without a red zone), so a `clock()` costs a
/// call, not SYSCALL's trip (~22 us on a PVM host). Results as natively with and without
/// rewriting, static and static-PIE, at 1 and 2 vCPUs; with the kernel in ring 3 (`-v`
/// counts) a run making those calls rewrites at least two sites more than one making none.
#[test]
fn vdso_system_calls_are_rewritten_and_change_nothing() {
    let prog = build("ring_vdso_calls", &[]);
    let pie = build("ring_vdso_calls", &["-static-pie"]);
    for p in [&prog, &pie] {
        let native_out = native(p, &["clocks"]);
        assert!(!native_out.stdout.contains(": 0"), "natively: {}", native_out.stdout);
        for opts in [&["--cpus", "2"][..], &["--cpus", "1"], &["--cpus", "2", "--no-rewrite"]] {
            let out = hrt(opts, p, &["clocks"]);
            assert_same(&format!("ring_vdso_calls {} {opts:?}", p.display()), &native_out, &out);
        }
    }
    if !pvm_host() {
        return;
    }
    let rewritten = |case: &str| -> u64 {
        let out = hrt(&["-v", "--cpus", "2"], &prog, &[case]);
        assert_eq!(out.code(), 0, "{}", out.stderr);
        let line = out.stderr.lines().find(|l| l.contains("system-call site(s) rewritten")).unwrap_or_default();
        line.split_whitespace().nth(1).and_then(|w| w.parse().ok()).unwrap_or(0)
    };
    let (with_clocks, without) = (rewritten("clocks"), rewritten("none"));
    assert!(with_clocks >= without + 2, "vDSO sites not rewritten: {with_clocks} against {without}");
    // No site of the vDSO (its image is under two pages) kept SYSCALL: its CPU-clock site,
    // where the compiler put it, straddled a cache line and was kept (clock() ~33 us).
    let out = hrt(&["-v", "--cpus", "2"], &prog, &["clocks-where"]);
    assert_no_site_kept_in(&out, &out.stdout, "vdso at 0x", 0x2000, "the vDSO");
}

/// Variable-number sites (a `syscall` whose number is in a register nobody can prove constant,
/// after a window of register loads: libgomp's futex calls, syscall() wrappers) rewritten into
/// a call to a slot replaying the window change nothing the program sees: twelve window shapes
/// (5 to 24 bytes: one move, an lea, two moves, a load of a global, a loop whose branch lands
/// on the window's first instruction, a test and a branch out of the window whose taken path
/// must find its stack as the old code left it, glibc's read() with its compare of a global
/// and branch or its load from the stack frame, glibc's futex-flag `xor $0x80, %sil` on a
/// register the window set by a move or a load through another register, glibc's
/// sched_getaffinity `cmp; cmovbe` clamp, musl's syscall() whose last load overwrites the
/// register it loads through) with different numbers through one site from
/// two threads while they get rewritten, blocking reads restarted after a SA_RESTART handler that
/// zeroes what the window loads the length from (Linux makes the `syscall` again with the
/// length already loaded: the restart must not replay the window; also with the site patched
/// while the read waits in the handler's frame, at the old `syscall`), a handler sending the
/// thread into a rewritten window (the kernel moves it back to the window's start or the
/// call, or past a branch), signals to threads spinning on such sites. With the kernel in
/// ring 3 (`-v` reports the counts) the twelve sites are rewritten (musl's shape kept SYSCALL
/// until stop 84: ~30 us a call), also in a static-PIE and a dynamically linked build (through
/// the near table), none with `--no-rewrite`; an OpenMP program (libgomp's
/// barrier and lock futex calls are such sites) gives the same output with its sites
/// rewritten; `--strace` shows every call made through them.
#[test]
fn variable_number_sites_are_rewritten_and_change_nothing() {
    let prog = build("ring_varsite", &[]);
    let pie = build("ring_varsite", &["-static-pie"]);
    let root = common::hostile::repo_root();
    let dynamic =
        common::hostile::build_dynamic(&root.join("tests/programs/hostile/ring_varsite.c"), "ring_varsite", &[]);
    for case in ["calls", "restart", "restart_patched", "resume", "spin"] {
        let native_out = native(&prog, &[case]);
        for opts in [&["--cpus", "2"][..], &["--cpus", "1"], &["--cpus", "2", "--no-rewrite"]] {
            let out = hrt(opts, &prog, &[case]);
            assert_same(&format!("ring_varsite {case} {opts:?}"), &native_out, &out);
        }
        for (what, build) in [("static-pie", &pie), ("dynamic", &dynamic)] {
            let out = hrt(&["--cpus", "2"], build, &[case]);
            assert_same(&format!("ring_varsite ({what}) {case}"), &native(build, &[case]), &out);
        }
    }
    let omp = common::hostile::build_dynamic(
        &root.join("tests/programs/openmp.c"),
        "varsite-openmp",
        &["-O2", "-fopenmp", "-static"],
    );
    // The CPU counts it prints are the host's natively.
    let without_cpu_counts = |s: &str| {
        s.lines().filter(|l| !l.contains("num_procs") && !l.contains("max_threads")).collect::<Vec<_>>().join("\n")
    };
    let omp_native = native(&omp, &[]);
    assert_eq!(omp_native.code(), 0, "{}", omp_native.stdout);
    if !pvm_host() {
        return;
    }
    // Sites rewritten with a replayed window, from the `-v` line at exit.
    let variable = |prog: &std::path::Path, opts: &[&str], args: &[&str]| -> u64 {
        let mut all = vec!["-v", "--cpus", "2"];
        all.extend_from_slice(opts);
        let out = hrt(&all, prog, args);
        assert_eq!(out.code(), 0, "{}", out.stderr);
        if prog == omp.as_path() {
            assert_eq!(without_cpu_counts(&out.stdout), without_cpu_counts(&omp_native.stdout), "openmp.c");
        }
        let line = out.stderr.lines().find(|l| l.contains("with a replayed window")).unwrap_or_default();
        line.rsplit_once("function, ").and_then(|(_, w)| w.split_whitespace().next()?.parse().ok()).unwrap_or(0)
    };
    for prog in [&prog, &pie, &dynamic] {
        assert!(
            variable(prog, &[], &["calls"]) >= 12,
            "{}: the twelve variable sites were not rewritten",
            prog.display()
        );
    }
    assert_eq!(variable(&prog, &["--no-rewrite"], &["calls"]), 0);
    // On its own libgomp (the kernel's runtime, `--omp auto`'s choice, makes no futex calls).
    assert!(variable(&omp, &["--omp", "libgomp"], &[]) >= 1, "no libgomp site rewritten");
    // `--strace` sees every call through the rewritten windows: as many getpid lines as
    // without rewriting.
    let traced = |opts: &[&str]| {
        let mut all = vec!["--strace"];
        all.extend_from_slice(opts);
        let out = hrt(&all, &prog, &["resume"]);
        assert_eq!(out.code(), 0, "{}", out.stderr);
        out.stderr.lines().filter(|l| l.contains("] getpid() = ")).count()
    };
    let (rewritten, kept) = (traced(&["-v"]), traced(&["--no-rewrite"]));
    assert!(rewritten >= 12, "{rewritten} getpid calls traced");
    assert_eq!(rewritten, kept, "getpid calls traced with and without rewriting");
}

/// `ring_cpuid apic`'s output with every APIC ID the vCPU's number, the rest as it is: what
/// the table answers. A CPUID the program makes itself (`--no-rewrite`) gives the vCPU's ID
/// where KVM answers it, but where the hypervisor below the host does (one of this project's
/// PVM hosts), it gives the ID of the host CPU the vCPU happens to run on.
fn apic_ids_as_vcpus(out: &common::hostile::Outcome) -> common::hostile::Outcome {
    let mut stdout = String::new();
    for line in out.stdout.lines() {
        let fixed = match (line.strip_prefix("cpu "), line.find(": leaf 1 apic "), line.find(", ebx ")) {
            (Some(rest), Some(at), Some(tail)) => {
                let cpu = rest.split_whitespace().next().unwrap_or("?");
                format!("{}: leaf 1 apic {cpu}, 0xb/0 {cpu}, 0xb/1 {cpu}{}", &line[..at], &line[tail..])
            }
            _ => line.to_string(),
        };
        stdout.push_str(&fixed);
        stdout.push('\n');
    }
    common::hostile::Outcome { status: out.status, stdout, stderr: out.stderr.clone(), hung: out.hung }
}

/// CPUID sites rewritten into jumps to a slot that answers from the kernel's table
/// (`linux::cpuid_sites`, `arch::cpuid_cache`) change nothing the program sees: every answer
/// for a list of leaves and subleaves (asked twice: the second time from the table) is the
/// one a real CPUID gives (`--no-rewrite`), a leaf function's red zone, caller-saved registers
/// and carry flag survive its CPUID, and answers stay the same while signal handlers ask too
/// (APIC IDs are the vCPU's: `apic_ids_as_vcpus`);
/// static, static-PIE (its slots in the near table) and dynamically linked (ld.so's sites).
/// With the kernel in ring 3 (`-v`) the program's two sites are rewritten, none with
/// `--no-rewrite`.
#[test]
fn rewritten_cpuid_sites_answer_as_the_cpu() {
    let prog = build("ring_cpuid", &[]);
    let pie = build("ring_cpuid", &["-static-pie"]);
    let dynamic = common::hostile::build_dynamic(
        &common::hostile::repo_root().join("tests/programs/hostile/ring_cpuid.c"),
        "ring_cpuid",
        &["-pthread"],
    );
    for p in [&prog, &pie, &dynamic] {
        for case in ["leaves", "apic", "redzone", "signals"] {
            let real = hrt(&["--cpus", "2", "--no-rewrite"], p, &[case]);
            assert_eq!(real.code(), 0, "{}", real.stderr);
            let out = hrt(&["--cpus", "2"], p, &[case]);
            assert_same(&format!("ring_cpuid {case} ({})", p.display()), &apic_ids_as_vcpus(&real), &out);
        }
        for case in ["redzone", "signals"] {
            assert_same(&format!("ring_cpuid {case} natively"), &native(p, &[case]), &hrt(&[], p, &[case]));
        }
    }
    if !pvm_host() {
        return;
    }
    let rewritten = |prog: &std::path::Path, opts: &[&str]| -> u64 {
        let mut all = vec!["-v"];
        all.extend_from_slice(opts);
        let out = hrt(&all, prog, &["redzone"]);
        assert_eq!(out.code(), 0, "{}", out.stderr);
        let line = out.stderr.lines().find(|l| l.contains("CPUID site(s) rewritten")).unwrap_or_default();
        line.split_whitespace().nth(1).and_then(|w| w.parse().ok()).unwrap_or(0)
    };
    for p in [&prog, &pie, &dynamic] {
        assert!(rewritten(p, &[]) >= 2, "{}: the program's CPUID sites were not rewritten", p.display());
    }
    assert_eq!(rewritten(&prog, &["--no-rewrite"]), 0);
    // The APIC IDs on four vCPUs (the leaves' answers come from the table with the current
    // CPU's ID put in).
    let real = hrt(&["--cpus", "4", "--no-rewrite"], &prog, &["apic"]);
    assert_eq!(real.code(), 0, "{}", real.stderr);
    assert_same("ring_cpuid apic at --cpus 4", &apic_ids_as_vcpus(&real), &hrt(&["--cpus", "4"], &prog, &["apic"]));
    // A function that dispatches through a jump table keeps no site the same function without
    // one has rewritten (the table's targets are read, and none lands in the site's window);
    // also one with two tables back to back (`two_tables`, whose answers "leaves" prints).
    let without_tables = build("ring_cpuid", &["-DNO_JUMP_TABLES"]);
    assert_eq!(
        rewritten(&prog, &[]),
        rewritten(&without_tables, &[]),
        "a CPUID site in a function with a jump table was kept"
    );
}

/// The C library's signal restorer (`mov $15, %rax; syscall`, behind an unwind entry that starts
/// a byte early in libc.so and behind a symbol without a size in a static glibc program) is
/// rewritten into a call once hot, like the program's other sites: 2,000 signals give the
/// native output, static, static-PIE and dynamic, with and without rewriting, and under `-v`
/// the restorer's site is not among those that kept SYSCALL (it cost ~19 us a signal). Its last
/// handler makes its own frame's pages read-only before it returns: the rewritten `call` cannot
/// push there and is taken as the SYSCALL it replaced (the program died of SIGSEGV without
/// that; an alternate stack another thread made read-only hit it 1 run in 5).
#[test]
fn the_signal_restorer_is_rewritten_and_changes_nothing() {
    let source = common::hostile::repo_root().join("tests/programs/hostile/ring_restorer.c");
    let dynamic = common::hostile::build_dynamic(&source, "ring_restorer", &[]);
    let programs = [build("ring_restorer", &[]), build("ring_restorer", &["-static-pie"]), dynamic];
    for p in &programs {
        let native_out = native(p, &[]);
        assert!(native_out.stdout.contains("restorer: done"), "natively: {}", native_out.stdout);
        for opts in [&["--cpus", "1"][..], &["--cpus", "2", "--no-rewrite"]] {
            let out = hrt(opts, p, &[]);
            assert_eq!(out.stdout, native_out.stdout, "{} {opts:?}: {}", p.display(), out.stderr);
        }
        if !pvm_host() {
            continue;
        }
        let out = hrt(&["-v", "--cpus", "1"], p, &[]);
        assert_eq!(out.stdout, native_out.stdout, "{}: {}", p.display(), out.stderr);
        assert_no_site_kept_in(&out, &out.stderr, "restorer at 0x", 16, &format!("{}: the restorer", p.display()));
    }
}

/// Copies of rewritten system-call sites (tests/programs/hostile/relocated_sites.c): two
/// wrappers' `mov $N, %eax; syscall` prologues, copied elsewhere once hot, as an inline hook's
/// trampoline does, are `mov $GATE+N, %eax; call *%rax` under hrt. The copies make the same
/// calls (getppid 1,000 times; a read from a pipe interrupted by an SA_RESTART alarm and
/// restarted from the copy) at 1 and 2 vCPUs and without rewriting; `--strace` shows every
/// copied call. Until stop 98 the first one ended as a stray call into the gate (SIGSEGV).
#[test]
fn copies_of_rewritten_sites_make_the_same_calls() {
    let out = passes_natively_and_same_on_1_and_2_cpus("relocated_sites", Some("copied getppid: 1000 of 1000"));
    assert!(out.stdout.contains("'x', after the alarm"), "{out:?}");
    let prog = build("relocated_sites", &[]);
    let want = native(&prog, &[]);
    let out = hrt(&["--cpus", "1", "--no-rewrite"], &prog, &[]);
    assert_same("relocated_sites --no-rewrite", &want, &out);
    let out = hrt(&["--cpus", "1", "--strace"], &prog, &[]);
    let calls = out.stderr.lines().filter(|l| l.contains("] getppid() = ")).count();
    assert!(calls >= 2001, "{calls} getppid lines under --strace:\n{}", out.stderr);
}

/// A program single-stepping itself (its own TF, tests/programs/hostile/single_step.c) over
/// libc's getppid and write once their sites are rewritten calls: natively each step goes over
/// the SYSCALL, so the trap count and every trap's place (the program's files) are as natively,
/// static, static-PIE and dynamic, at 1 and 2 vCPUs. Until stop 98 the steps went on into the
/// kernel's gate (~40 traps a call at addresses the program never mapped), and stopped there.
#[test]
fn single_stepping_over_rewritten_calls_is_as_over_syscall() {
    common::hostile::same_in_every_link_on_1_and_2_cpus("single_step", "outside the program's files: 0");
}

/// New code over a page where a function of the program was (tests/programs/hostile/
/// code_over_function.c): a `syscall` inside the old symbol's extent, the red-zone store and
/// load around it outside. The unmap must forget the old function, so that the site keeps
/// SYSCALL: the same output as natively at 1 and 2 vCPUs (right 1 time in 3,000 until stop 98).
#[test]
fn code_put_over_an_old_function_is_not_taken_for_it() {
    passes_natively_and_same_on_1_and_2_cpus("code_over_function", Some("right 3000 of 3000"));
}

/// A program that moves its own text into fresh memory at the same address (tests/programs/
/// hostile/text_remap.c, the huge-page trick): the copy carries rewritten sites, which the unmap
/// forgot; a copied `call` into a slot is adopted as a register site and makes its call, static,
/// static-PIE and dynamic, at 1 and 2 vCPUs (a stray-call SIGSEGV until stop 98).
#[test]
fn text_moved_into_fresh_memory_keeps_its_calls() {
    common::hostile::same_in_every_link_on_1_and_2_cpus("text_remap", "sums 900 900");
}

/// The C library's clone and clone3 wrappers end their unwind entries right before their
/// `syscall` (the child must not unwind into the parent's frames), so in libc.so, whose
/// functions the rewriter knows from those entries, both kept SYSCALL (~19 us a thread on a
/// PVM host). A site right at an entry's end now joins that function up to the next entry:
/// 300 vfork-style clone() children and 300 threads give the native output at 1 and 2 vCPUs,
/// with and without rewriting, and under `-v` no kept site lies in `clone`.
#[test]
fn clone_wrappers_in_shared_libraries_are_rewritten() {
    let source = common::hostile::repo_root().join("tests/programs/hostile/ring_clone.c");
    let prog = common::hostile::build_dynamic(&source, "ring_clone", &["-pthread"]);
    let native_out = native(&prog, &[]);
    assert!(native_out.stdout.contains("0 failed"), "natively: {}", native_out.stdout);
    for opts in [&["--cpus", "1"][..], &["--cpus", "2"], &["--cpus", "2", "--no-rewrite"]] {
        let out = hrt(opts, &prog, &[]);
        assert_eq!(out.stdout, native_out.stdout, "{opts:?}: {}", out.stderr);
    }
    if !pvm_host() {
        return;
    }
    let out = hrt(&["-v", "--cpus", "2"], &prog, &[]);
    assert_eq!(out.stdout, native_out.stdout, "{}", out.stderr);
    assert_no_site_kept_in(&out, &out.stderr, "clone at 0x", 0x60, "clone");
}

/// Asserts that none of the sites `hrt -v` lists as having kept SYSCALL (in `out`'s stderr) lies
/// in the `len` bytes of `what`, whose address `text` gives after `prefix`.
fn assert_no_site_kept_in(out: &common::hostile::Outcome, text: &str, prefix: &str, len: u64, what: &str) {
    let at = address_after(text, prefix).unwrap_or_else(|| panic!("no address of {what}: {text}"));
    let kept = kept_sites(&out.stderr);
    assert!(
        !kept.iter().any(|&k| (at..at + len).contains(&k)),
        "{what} at {at:#x} kept SYSCALL: {kept:x?}\n{}",
        out.stderr
    );
}

/// The hexadecimal address on the first line of `text` that starts with `prefix`.
fn address_after(text: &str, prefix: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix(prefix)).and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
}

/// The sites `hrt -v` lists as having kept SYSCALL.
fn kept_sites(stderr: &str) -> Vec<u64> {
    stderr
        .lines()
        .filter_map(|l| l.split("sites that kept SYSCALL:").nth(1))
        .flat_map(|l| l.split_whitespace().filter_map(|w| u64::from_str_radix(w.trim_start_matches("0x"), 16).ok()))
        .collect()
}
