//! Hostile programs against the host: the monitor's own /proc entries, programs that are not
//! regular executables, closed standard descriptors. Each runs natively and under `hrt run`.

mod common;
use common::hostile::{assert_same, build, hrt, native};

/// A scratch directory with the symbolic links host_proc follows.
struct Links(std::path::PathBuf);

impl Links {
    fn new() -> Links {
        let dir = std::env::temp_dir().join(format!("hrt-host-proc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink("/proc/self/mem", dir.join("mem")).unwrap();
        std::os::unix::fs::symlink("/proc/self", dir.join("p")).unwrap();
        std::os::unix::fs::symlink("/proc", dir.join("proc")).unwrap();
        Links(dir)
    }
}

impl Drop for Links {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Natively /proc/self is the program ("own"); under hrt it would be the monitor, so every
/// spelling must be refused, and the program's own view (cmdline, comm, status, maps) must
/// describe the program on both sides.
#[test]
fn monitor_proc_entries_are_unreachable() {
    let prog = build("host_proc", &[]);
    let links = Links::new();
    let dir = links.0.to_str().unwrap();
    let linux = native(&prog, &[dir]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert!(!linux.stdout.contains("FOREIGN"), "natively: {}", linux.stdout);
    let got = hrt(&["--cpus", "2"], &prog, &[dir]);
    assert_eq!(got.code(), 0, "hrt: {got:?}");
    let mut cases = 0;
    for line in got.stdout.lines() {
        let (case, result) = line.split_once(": ").expect("case: result");
        match result {
            "yes" | "0" => {}
            "refused" => cases += 1,
            _ => panic!("hrt: `{case}` gave `{result}` (the monitor's own /proc was reached)\n{}", got.stdout),
        }
    }
    assert!(cases >= 12, "every memory case ran:\n{}", got.stdout);
    // The view lines are the same as natively.
    let view =
        |s: &str| s.lines().filter(|l| l.ends_with(": yes") || l.starts_with("kvm")).collect::<Vec<_>>().join("\n");
    assert_eq!(view(&linux.stdout), view(&got.stdout));
    let _ = assert_same;
}
