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
    for p in ["src", "Cargo.toml", "linker.ld", ".cargo/config.toml"] {
        println!("cargo:rerun-if-changed={}", kernel_dir.join(p).display());
    }
    println!("cargo:rerun-if-changed={}", root.join("abi/src").display());
    println!("cargo:rerun-if-env-changed=HRT_SKIP_KERNEL_BUILD");

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
