//! Builds the vDSO (vdso/vdso.c, a tiny shared object the kernel maps into programs) with the
//! system C compiler, and tells the linker where the kernel's linker script is.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    for f in ["vdso/vdso.c", "vdso/vdso.lds", "vdso/vdso.map"] {
        println!("cargo:rerun-if-changed={f}");
    }
    let cc = env::var("HRT_VDSO_CC").unwrap_or_else(|_| "cc".into());
    let so = out.join("vdso.so");
    let status = Command::new(&cc)
        .args([
            "-O2",
            "-fPIC",
            "-nostdlib",
            "-shared",
            "-ffreestanding",
            // Unwind tables and their index (PT_GNU_EH_FRAME), as Linux's vDSO has: a profiler's
            // or crash handler's stack walk from a signal taken in the vDSO reaches the caller.
            "-fasynchronous-unwind-tables",
            "-Wl,--eh-frame-hdr",
            "-fno-stack-protector",
            "-mno-red-zone",
            "-Wl,-T,vdso/vdso.lds",
            "-Wl,--version-script=vdso/vdso.map",
            "-Wl,--hash-style=both",
            "-Wl,--build-id=none",
            "-Wl,-soname=linux-vdso.so.1",
            "-Wl,-z,max-page-size=4096",
            "-o",
        ])
        .arg(&so)
        .arg("vdso/vdso.c")
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler '{cc}' to build the vDSO: {e} (install gcc)"));
    assert!(status.success(), "building the vDSO failed");
}
