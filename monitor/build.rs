//! Builds the kernel (a separate crate for x86_64-unknown-none) and hands its path to the
//! monitor, which embeds the image. The kernel is always built optimised: on hosts that
//! emulate guest ring 0, every kernel instruction costs about a microsecond.

use std::env;
use std::path::PathBuf;
use std::process::Command;

#[path = "build/bench_sources.rs"]
mod bench_sources;

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.parent().unwrap().to_path_buf();
    bench_sources::generate(&root, &PathBuf::from(env::var("OUT_DIR").unwrap()));
    let kernel_dir = root.join("kernel");
    let target_dir = root.join("target").join("kernel");
    for p in ["src", "vdso", "build.rs", "Cargo.toml", "linker.ld", ".cargo/config.toml"] {
        println!("cargo:rerun-if-changed={}", kernel_dir.join(p).display());
    }
    println!("cargo:rerun-if-changed={}", root.join("abi/src").display());
    println!("cargo:rerun-if-env-changed=HRT_SKIP_KERNEL_BUILD");

    ensure_kernel_target();
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&kernel_dir)
        .args(["build", "--release", "--target", "x86_64-unknown-none"])
        .arg("--target-dir")
        .arg(&target_dir);
    // The outer build's flags and wrappers are for the host target, not the kernel.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status().expect("failed to run cargo for the kernel");
    if !status.success() {
        panic!("building the kernel failed (is the target installed? rustup target add x86_64-unknown-none)");
    }
    let image = target_dir.join("x86_64-unknown-none/release/hrt-kernel");
    println!("cargo:rustc-env=HRT_KERNEL_IMAGE={}", image.display());
}

/// Installs the kernel's target through rustup when the toolchain lacks it, so that a machine
/// with only rustup and a C compiler builds HRT with one `cargo build` (rust-toolchain.toml
/// names the target too, but rustup adds it only when it installs a toolchain, not to one that
/// is already there).
fn ensure_kernel_target() {
    const TARGET: &str = "x86_64-unknown-none";
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let Some(sysroot) = sysroot else { return };
    if sysroot.join("lib/rustlib").join(TARGET).exists() {
        return;
    }
    let mut cmd = Command::new("rustup");
    cmd.args(["target", "add", TARGET]);
    if let Ok(toolchain) = env::var("RUSTUP_TOOLCHAIN") {
        cmd.args(["--toolchain", &toolchain]);
    }
    eprintln!("installing the kernel's Rust target: rustup target add {TARGET}");
    match cmd.status() {
        Ok(s) if s.success() => {}
        // The kernel build below fails with the message that says what to do.
        _ => eprintln!("rustup target add {TARGET} failed"),
    }
}
