//! execve in the program itself (issues 10 and 13): tests/programs/hostile/exec_self.c, static
//! and dynamic, compared with its native run with one vCPU and with two (every failing exec's
//! errno with the program going on, then an exec from a thread that is not the main one while
//! two other threads run, with descriptors, signals, timers and memory checked in the new
//! image); an exec chain from a static program into a dynamic one (`/bin/sh`); and
//! `#!/usr/bin/env sh` and `#!/usr/bin/env python3` scripts under `hrt run`, whose `env` execs
//! the interpreter.

mod common;
use std::path::Path;
use std::process::Command;

use common::hostile::{assert_same, assert_same_on_1_and_2_cpus, build, build_dynamic, hrt, native, repo_root, run};

#[test]
fn exec_replaces_a_static_program_as_on_linux() {
    let prog = build("exec_self", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 42, "natively: {linux:?}");
    assert!(linux.stdout.contains("still running: 1") && linux.stdout.contains("leader: 1"), "{}", linux.stdout);
    assert_same_on_1_and_2_cpus("exec_self", &prog, &[], &linux);
}

#[test]
fn exec_replaces_a_dynamic_program_as_on_linux() {
    let source = repo_root().join("tests/programs/hostile/exec_self.c");
    let prog = build_dynamic(&source, "exec_self", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 42, "natively: {linux:?}");
    assert_same_on_1_and_2_cpus("dynamic exec_self", &prog, &[], &linux);
}

/// A static program execs a dynamic one (the shell) with an argument vector and an
/// environment of its own; the shell's exit status is the program's.
#[test]
fn a_chain_into_a_dynamic_program_passes_args_env_and_status() {
    let prog = build("exec_self", &[]);
    let args = ["run", "/bin/sh", "-c", "echo \"sh: $HRT_EXEC_TEST $0 $#\"; exit 3", "zero", "one"];
    let linux = native(&prog, &args);
    assert_eq!(linux.code(), 3, "natively: {linux:?}");
    assert_same_on_1_and_2_cpus("exec into /bin/sh", &prog, &args, &linux);
}

/// execveat(fd, "", AT_EMPTY_PATH) on a descriptor of the program's file (as fexecve makes it),
/// then a chain on into the shell.
#[test]
fn execveat_of_a_descriptor_runs_its_file() {
    let prog = build("exec_self", &[]);
    let args = ["fexec", "run", "/bin/sh", "-c", "echo \"$HRT_EXEC_TEST\"; exit 6"];
    let linux = native(&prog, &args);
    assert_eq!(linux.code(), 6, "natively: {linux:?}");
    assert_same_on_1_and_2_cpus("execveat AT_EMPTY_PATH", &prog, &args, &linux);
}

/// An exec of programs whose segments of 1 MiB and more are left out of the staged file and
/// copied by the monitor from its own view of it (monitor/src/placed_image.rs): static-pie,
/// static at 0x400000, and static linked at 0x41000000, where the exec's staging area lies
/// with this layout (so the kernel moves it first, and the file's place moves along).
#[test]
fn an_exec_of_large_segments_reads_them_as_initialized() {
    let prog = build("exec_self", &[]);
    for flags in [&["-static-pie"][..], &[], &["-Wl,-Ttext-segment=0x41000000"]] {
        let big = build("layout_big_rodata", flags);
        let args = ["run", big.to_str().unwrap()];
        let linux = native(&prog, &args);
        assert_eq!(linux.code(), 0, "natively ({flags:?}): {linux:?}");
        assert!(linux.stdout.contains(", 0 differ"), "natively ({flags:?}): {linux:?}");
        assert_same_on_1_and_2_cpus(&format!("exec of layout_big_rodata {flags:?}"), &prog, &args, &linux);
    }
}

/// An executable script in target/programs/scripts.
fn script(name: &str, text: &str) -> std::path::PathBuf {
    let dir = repo_root().join("target/programs/scripts");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `path ARGS` natively and under `hrt run`, with a PATH of the system's directories only (so
/// `env` finds the system's interpreters, not a user's wrappers, which may fork).
fn compare_with_system_path(label: &str, path: &Path, args: &[&str]) {
    let system_path = "/usr/local/bin:/usr/bin:/bin";
    let mut cmd = Command::new(path);
    cmd.args(args).env("PATH", system_path);
    let linux = run(cmd, None);
    for cpus in ["1", "2"] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
        cmd.args(["run", "--cpus", cpus, "--"]).arg(path).args(args).env("PATH", system_path);
        assert_same(&format!("{label} --cpus {cpus}"), &linux, &run(cmd, None));
    }
}

#[test]
fn env_sh_scripts_run() {
    let path = script("env_sh", "#!/usr/bin/env sh\necho \"sh: $# $1 $2\"\nexit 7\n");
    compare_with_system_path("#!/usr/bin/env sh", &path, &["a", "b c"]);
}

#[test]
fn env_python3_scripts_run() {
    if !Path::new("/usr/bin/python3").exists() {
        eprintln!("no /usr/bin/python3 here: skipped");
        return;
    }
    let text = "#!/usr/bin/env python3\nimport sys\nprint('py', sys.argv[1:])\nsys.exit(int(sys.argv[1]))\n";
    let path = script("env_python3", text);
    compare_with_system_path("#!/usr/bin/env python3", &path, &["5", "x"]);
}

/// A script exec'd by the program itself (not by `hrt run`): binfmt_script's argument vector.
#[test]
fn the_program_execs_a_script() {
    let prog = build("exec_self", &[]);
    let interp = build("script_interp", &[]);
    let path = script("exec_interp", &format!("#!{} -x\n", interp.display()));
    let path = path.to_str().unwrap();
    let linux = native(&prog, &["run", path, "one"]);
    assert_eq!(linux.code(), 4, "natively: {linux:?}");
    let got = hrt(&["--cpus", "1"], &prog, &["run", path, "one"]);
    assert_same("exec of a script", &linux, &got);
}

/// AT_EXECFN and the command name of a program `hrt run` starts, as a shell's exec gives them:
/// a name found in PATH has the path it was found at (it had the bare name), a script its own
/// path and name (it had its interpreter's).
#[test]
fn a_program_found_in_path_or_run_as_a_script_sees_the_exec_file_name() {
    // Given three arguments, it prints its AT_EXECFN and command name.
    let prog = build("fexecve_children", &[]);
    let dir = repo_root().join("target/programs/execfn-path");
    std::fs::create_dir_all(&dir).unwrap();
    let found = dir.join("execfn-found");
    std::fs::copy(&prog, &found).unwrap();
    script("execfn-script", &format!("#!{}\n", prog.display()));
    let path = format!("{}:{}:/usr/bin:/bin", dir.display(), repo_root().join("target/programs/scripts").display());
    for name in ["execfn-found", "execfn-script"] {
        let mut cmd = Command::new(name);
        cmd.args(["from PATH", "100", "101"]).env("PATH", &path);
        let linux = run(cmd, None);
        assert!(linux.stdout.contains("execfn /"), "natively: {linux:?}");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
        cmd.args(["run", "--cpus", "1", "--", name, "from PATH", "100", "101"]).env("PATH", &path);
        assert_same(&format!("{name} from PATH"), &linux, &run(cmd, None));
    }
}
