//! `#!` scripts (issue 10): `hrt run ./script` runs the script's interpreter with the argument
//! vector Linux's binfmt_script builds (interpreter, its optional argument, the script path,
//! the script's arguments), and a missing interpreter is refused with bash's status (127). An
//! executable text file without `#!` runs with /bin/sh, as execvp runs it; a binary that is no
//! ELF file is refused.

mod common;
use common::hostile::{assert_same, build, hrt, native};

fn script(name: &str, line: &str) -> std::path::PathBuf {
    let dir = common::hostile::repo_root().join("target/programs/scripts");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("{line}\nthe rest is not read\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn scripts_run_their_interpreter_as_on_linux() {
    let interp = build("script_interp", &[]);
    let interp = interp.to_str().unwrap();
    for (name, line, argc) in [
        ("plain", format!("#!{interp}"), 4),
        ("with_arg", format!("#!{interp} -x"), 5),
        ("blanks", format!("#!  {interp}   -a  b  "), 5),
    ] {
        let path = script(name, &line);
        let native_out = native(&path, &["one", "two"]);
        assert_eq!(native_out.code(), argc, "{}", native_out.stdout);
        assert_same(&format!("script {name}"), &native_out, &hrt(&[], &path, &["one", "two"]));
    }
}

#[test]
fn a_missing_interpreter_is_refused_with_127() {
    let path = script("missing", "#!/nonexistent/interpreter");
    let out = hrt(&[], &path, &[]);
    assert_eq!(out.code(), 127, "{}", out.stderr);
    assert!(out.stderr.contains("bad interpreter"), "{}", out.stderr);
}

/// A text file without `#!` runs with /bin/sh, as env (glibc's execvp) runs it: same output,
/// arguments and status; one whose first line holds a NUL byte is refused (126) with one line.
#[test]
fn a_script_without_an_interpreter_line_runs_with_sh_as_execvp_runs_it() {
    let path = script("no_line", "echo \"$0 got $# args: $*\"; exit 3");
    let mut env = std::process::Command::new("env");
    env.arg(&path).args(["a", "b c"]);
    let native_out = common::hostile::run(env, None);
    assert_eq!(native_out.code(), 3, "natively: {native_out:?}");
    assert!(native_out.stdout.contains("got 2 args: a b c"), "natively: {native_out:?}");
    assert_same("a script without #!", &native_out, &hrt(&[], &path, &["a", "b c"]));

    let dir = common::hostile::repo_root().join("target/programs/scripts");
    let binary = dir.join("not_elf_binary");
    std::fs::write(&binary, b"\x01\x02\x00\x03 not a script\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = hrt(&[], &binary, &[]);
    assert_eq!(out.code(), 126, "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("not an ELF executable"), "{}", out.stderr);
}

/// The program's own exec of scripts: through 5 scripts to its binary (the sixth is ELOOP; hrt
/// said ELOOP at the fifth), and a `#!` line past 256 bytes whose interpreter's name ends
/// early runs with its argument cut (hrt said ENOEXEC).
#[test]
fn an_exec_reads_deep_scripts_and_long_lines_as_linux_does() {
    common::hostile::passes_natively_and_same_on_1_and_2_cpus(
        "script_depth_and_long_lines",
        Some("5 scripts deep: ran with 7 arguments"),
    );
}
