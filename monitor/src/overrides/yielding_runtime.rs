//! Whether the program's OpenMP runtime is LLVM's libomp (or Intel's libiomp5, the same code).
//!
//! libomp counts the CPUs it may run on (the VM's vCPUs) and, with no more threads than that,
//! believes each has a CPU of its own: its waits spin, calling `sched_yield` now and then, and
//! its queuing lock hands over in arrival order. With more vCPUs than host CPUs each hand-over
//! then waits for a vCPU the host may not be running (`--cpus 4` on 2 host CPUs: 10-500 times
//! the native time). Unlike libgomp's (`spin_sites`), libomp's CPU count is a hidden symbol,
//! so the program's view cannot be kept while its spin test changes. What works without
//! touching libomp: its threads go to as many vCPUs as the host has CPUs, two or more to a
//! vCPU, where its `sched_yield` hands the vCPU to the thread waited for, as the host's own
//! scheduler does for it natively (`flags::PACK_THREADS`).

/// A function every libomp has, and a compiler's OpenMP code calls (`#pragma omp parallel`).
const LIBOMP_FUNCTION: &str = "__kmpc_fork_call";

/// The libomp the program uses, by name, or None: a shared library it loads (`DT_NEEDED`
/// `libomp.so*` or `libiomp5.so`), or one linked in (a defined `__kmpc_fork_call`).
pub fn libomp_in(bytes: &[u8]) -> Option<String> {
    let elf = crate::elf_headers::parse_bounded(bytes).ok()?;
    if let Some(lib) = elf.libraries.iter().find(|l| l.starts_with("libomp") || l.starts_with("libiomp")) {
        return Some(lib.to_string());
    }
    elf.syms
        .iter()
        .any(|s| s.st_shndx != 0 && elf.strtab.get_at(s.st_name) == Some(LIBOMP_FUNCTION))
        .then(|| String::from("a libomp linked in"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_without_libomp_has_none() {
        let me = std::fs::read("/proc/self/exe").unwrap();
        assert_eq!(libomp_in(&me), None);
        assert_eq!(libomp_in(b"not an ELF file"), None);
    }
}
