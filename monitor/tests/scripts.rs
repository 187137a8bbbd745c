//! `#!` scripts (issue 10): `hrt run ./script` runs the script's interpreter with the argument
//! vector Linux's binfmt_script builds (interpreter, its optional argument, the script path,
//! the script's arguments), and a missing interpreter is refused with bash's status (127).

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
