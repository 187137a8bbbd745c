//! Each CLI error of `hrt` is one line, `hrt: ...`, on stderr, with a non-zero exit status.
//! None of these boots a VM: `--filter -` makes a selftest boot-only in case a check were missing.

mod common;
use common::elf_header;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::process::Command;

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn hrt_env(args: &[&str], env: &[(&str, &str)]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_hrt")).args(args).envs(env.iter().copied()).output().expect("run hrt");
    Out {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn hrt(args: &[&str]) -> Out {
    hrt_env(args, &[])
}

/// Asserts a non-zero exit and exactly one stderr line `hrt: ...` containing every one of
/// `facts`; returns that line.
fn assert_one_line_error(out: &Out, facts: &[&str]) -> String {
    assert!(matches!(out.code, Some(c) if c != 0), "exit status {:?}; stderr:\n{}", out.code, out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "stderr is not one line:\n{}", out.stderr);
    let line = lines[0];
    assert!(line.starts_with("hrt: "), "the error does not start with `hrt: `: {line}");
    for fact in facts {
        assert!(line.contains(fact), "the error does not mention `{fact}`: {line}");
    }
    assert!(out.stdout.is_empty(), "an error run printed to stdout:\n{}", out.stdout);
    line.to_string()
}

/// A file in the temporary directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, bytes: &[u8]) -> TempFile {
        let path = std::env::temp_dir().join(format!("hrt-cli-test-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        TempFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn cpus_zero() {
    let line = assert_one_line_error(&hrt(&["selftest", "--cpus", "0", "--filter", "-"]), &["--cpus 0"]);
    assert!(line.contains("at least one"), "{line}");
}

#[test]
fn cpus_zero_info() {
    assert_one_line_error(&hrt(&["info", "--cpus", "0"]), &["--cpus 0"]);
}

#[test]
fn cpus_beyond_kvm_limit() {
    assert_one_line_error(&hrt(&["selftest", "--cpus", "100000", "--filter", "-"]), &["--cpus 100000", "allows"]);
}

#[test]
fn mem_too_small() {
    assert_one_line_error(&hrt(&["selftest", "--mem", "8M", "--filter", "-"]), &["--mem", "8 MiB", "too small"]);
}

#[test]
fn mem_not_a_size() {
    // A clap parse error: not necessarily one line, but it must fail and name the value.
    let out = hrt(&["selftest", "--mem", "lots", "--filter", "-"]);
    assert!(matches!(out.code, Some(c) if c != 0), "exit status {:?}; stderr:\n{}", out.code, out.stderr);
    assert!(out.stderr.contains("lots"), "stderr:\n{}", out.stderr);
    assert!(out.stderr.contains("--mem"), "stderr:\n{}", out.stderr);
}

#[test]
fn kernel_missing() {
    assert_one_line_error(
        &hrt(&["selftest", "--kernel", "/nonexistent", "--filter", "-"]),
        &["/nonexistent", "No such file"],
    );
}

#[test]
fn kernel_not_elf() {
    let file = TempFile::new("not-elf", b"#!/bin/sh\necho this is not a kernel\n");
    assert_one_line_error(&hrt(&["selftest", "--kernel", file.path(), "--filter", "-"]), &[file.path(), "not an ELF"]);
}

#[test]
fn kernel_elf32() {
    let file = TempFile::new("elf32", &elf_header(1, 3)); // EM_386
    assert_one_line_error(&hrt(&["selftest", "--kernel", file.path(), "--filter", "-"]), &[file.path(), "x86-64"]);
}

#[test]
fn kernel_elf64_not_x86() {
    let file = TempFile::new("elf64-aarch64", &elf_header(2, 183)); // EM_AARCH64
    assert_one_line_error(&hrt(&["selftest", "--kernel", file.path(), "--filter", "-"]), &[file.path(), "x86-64"]);
}

#[test]
fn kvm_device_missing() {
    let line = assert_one_line_error(&hrt_env(&["info"], &[("HRT_KVM_DEVICE", "/nonexistent")]), &["/nonexistent"]);
    assert!(line.contains("no KVM"), "does not say there is no KVM: {line}");
    assert!(line.contains("modprobe"), "does not say how to fix it: {line}");
}

#[test]
fn kvm_device_not_kvm() {
    assert_one_line_error(&hrt_env(&["info"], &[("HRT_KVM_DEVICE", "/dev/null")]), &["/dev/null", "not a KVM device"]);
}

/// No permission on the KVM device. As root, runs a copy of hrt as user `nobody` through setpriv
/// (skipped, with a note, when that is impossible).
#[test]
fn kvm_device_no_permission() {
    let device = TempFile::new("kvm-no-permission", b"");
    let euid = std::fs::metadata("/proc/self").unwrap().uid();
    let out = if euid == 0 {
        std::fs::set_permissions(&device.0, std::fs::Permissions::from_mode(0o600)).unwrap();
        let have_setpriv = Command::new("setpriv").arg("--version").output().is_ok_and(|o| o.status.success());
        if !have_setpriv {
            eprintln!("skipped: running as root and setpriv is not installed");
            return;
        }
        // A world-readable copy, since the build tree may sit in a directory only root can enter.
        let binary = TempFile::new("hrt", &std::fs::read(env!("CARGO_BIN_EXE_hrt")).unwrap());
        std::fs::set_permissions(&binary.0, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", binary.path(), "info"])
            .env("HRT_KVM_DEVICE", device.path())
            .output()
            .expect("run setpriv");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if stderr.starts_with("setpriv:") || out.status.code() == Some(126) {
            eprintln!("skipped: user nobody cannot run hrt here: {stderr}");
            return;
        }
        Out { code: out.status.code(), stdout: String::from_utf8_lossy(&out.stdout).into_owned(), stderr }
    } else {
        std::fs::set_permissions(&device.0, std::fs::Permissions::from_mode(0o000)).unwrap();
        hrt_env(&["info"], &[("HRT_KVM_DEVICE", device.path())])
    };
    let line = assert_one_line_error(&out, &[device.path(), "permission"]);
    assert!(line.contains("kvm group"), "does not say how to fix it: {line}");
}

#[test]
fn info_succeeds() {
    let out = hrt(&["info"]);
    assert_eq!(out.code, Some(0), "stderr:\n{}", out.stderr);
    assert!(out.stdout.lines().any(|l| l.starts_with("platform:")), "no `platform:` line:\n{}", out.stdout);
}

/// `--platform pvm` is refused with the reason on every host this project has: not kvm_pvm, or
/// a kvm_pvm that refuses the PVM specification's MSRs (docs/pvm.md). `hrt info` says which.
#[test]
fn platform_pvm_refused_with_reason() {
    let info = hrt(&["info"]);
    assert_eq!(info.code, Some(0), "stderr:\n{}", info.stderr);
    let interface = info.stdout.lines().find(|l| l.starts_with("PVM interface:")).expect("no `PVM interface:` line");
    let expected = if std::path::Path::new("/sys/module/kvm_pvm").exists() {
        if interface.contains("not offered") {
            "does not offer the PVM specification's interface"
        } else {
            "does not speak it yet"
        }
    } else {
        assert!(interface.contains("not a PVM host"), "{interface}");
        "not kvm_pvm"
    };
    assert_one_line_error(&hrt(&["info", "--platform", "pvm"]), &["--platform pvm", expected]);
}

#[test]
fn platform_native_overrides_detection() {
    let out = hrt(&["info", "--platform", "native"]);
    assert_eq!(out.code, Some(0), "stderr:\n{}", out.stderr);
    assert!(out.stdout.contains("platform:     hardware virtualization"), "{}", out.stdout);
    assert!(out.stdout.contains("app ring:     0"), "{}", out.stdout);
}
