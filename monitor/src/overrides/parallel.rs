//! Whether a program has an OpenMP runtime (libgomp, LLVM's libomp or Intel's libiomp5,
//! linked in or loaded): its kernel then starts every CPU at boot (`flags::CPUS_AT_BOOT`).
//!
//! Other programs start on one CPU, the others dormant until a thread is first placed on one
//! (`cpu::ensure_online` in the kernel): most programs never make a thread, and a CPU's start
//! is ~300 emulated ring-0 instructions and a vCPU the host must run, 0.5-3 ms of an empty
//! program's start-up here. An OpenMP program's first parallel region would pay that instead
//! (2.5-7 ms against 0.4-1.9), and benchmarks that calibrate on their first region (EPCC's)
//! would choose their repetitions from it.

/// Functions a compiler's OpenMP code calls to start a parallel region: gcc's (libgomp, old
/// and new) and clang's (libomp, libiomp5).
const REGION_STARTS: [&str; 3] = ["GOMP_parallel", "GOMP_parallel_start", "__kmpc_fork_call"];

/// Whether the program loads an OpenMP runtime (`DT_NEEDED`) or has one linked in, or calls one
/// (a symbol naming a region start, defined or imported).
pub fn has_openmp(bytes: &[u8]) -> bool {
    let Ok(elf) = crate::elf_headers::headers(bytes, true) else { return false };
    let runtime = |l: &&str| l.starts_with("libgomp") || l.starts_with("libomp") || l.starts_with("libiomp");
    crate::elf_headers::needed_libraries(bytes, &elf).iter().any(runtime)
        || crate::elf_headers::has_symbol_named(bytes, &elf, &REGION_STARTS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_without_openmp_has_none() {
        let me = std::fs::read("/proc/self/exe").unwrap();
        assert!(!has_openmp(&me));
        assert!(!has_openmp(b"not an ELF file"));
    }
}
