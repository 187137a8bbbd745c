//! `hrt run`'s default guest memory: 16 GiB, or half of what the host can give this process
//! (its RAM, or its cgroup's memory limit if smaller) where that is more, up to 32 GiB.
//!
//! Why so much: the kernel has no demand paging, so thread stacks are guest memory (glibc's
//! 8 MiB stacks take 10 MiB of the pool each with their guard page and 2 MiB alignment: 1,000
//! threads, as OpenMP tests ask for, need about 10 GiB), yet untouched guest memory costs the
//! host nothing, and neither boot nor KVM's bookkeeping costs time per GiB the program does not
//! use (the pool is given to KVM in pieces as it is first used: `vm/pool_slots.rs`).
//! The floor holds on small hosts too, as the old 4 GiB default did: the guest's memory is
//! reserved, not committed, so a program that touches more than the host has meets the host's
//! OOM killer as it would natively. Half the host's memory on larger ones leaves room for the
//! host and a second process (`mpirun -np 2`); the cap bounds boot and exit time and that
//! bookkeeping on large hosts (`--mem` goes up to 251 GiB).

const FLOOR: u64 = 16 << 30;
const CAP: u64 = 32 << 30;

/// What `hrt` itself takes of its address space besides the guest's memory: its binary, its
/// threads' stacks, KVM's per-vCPU mappings, the C library's malloc arenas (64 MiB of address
/// space each, capped at two under a limit: six made it ~410 MiB). Measured with two arenas:
/// 87 MiB, 140 at its peak, with 1 to 8 vCPUs; the rest is room.
pub const OWN_ADDRESS_SPACE: u64 = 256 << 20;
/// Per vCPU, beyond that: a thread's stack and its `kvm_run` area.
const PER_VCPU_ADDRESS_SPACE: u64 = 8 << 20;

/// The program's RLIMIT_AS soft limit when `hrt` lifted its own (0: not lifted): what the
/// program starts with (the boot-info block's limits, `original_address_space_limit`).
static ORIGINAL_AS_SOFT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Under an address-space limit (`ulimit -v`), which counts `hrt`'s own mappings and the guest's
/// whole memory (reserved, not used): lifts `hrt`'s soft limit to the hard one (the program
/// keeps its soft limit: the kernel enforces it on the program's mappings) and answers how much
/// guest memory fits under the hard one with `cpus` vCPUs; None without a limit.
pub fn address_space_budget(cpus: u32) -> Option<u64> {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut rl) } != 0 || rl.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    if rl.rlim_cur < rl.rlim_max {
        ORIGINAL_AS_SOFT.store(rl.rlim_cur, std::sync::atomic::Ordering::Relaxed);
        crate::forward::note_program_limit(libc::RLIMIT_AS, rl.rlim_cur, rl.rlim_max);
        let lifted = libc::rlimit { rlim_cur: rl.rlim_max, rlim_max: rl.rlim_max };
        // SAFETY: setrlimit reads the struct we pass; raising a soft limit to the hard one is
        // allowed.
        unsafe { libc::setrlimit(libc::RLIMIT_AS, &lifted) };
    }
    if rl.rlim_max == libc::RLIM_INFINITY {
        return None;
    }
    // SAFETY: mallopt only sets a malloc parameter; fewer arenas, less address space.
    unsafe { libc::mallopt(libc::M_ARENA_MAX, 2) };
    Some(rl.rlim_max.saturating_sub(OWN_ADDRESS_SPACE + PER_VCPU_ADDRESS_SPACE * cpus as u64))
}

/// The program's RLIMIT_AS soft limit if `hrt` lifted its own (`address_space_budget`).
pub fn original_address_space_limit() -> Option<u64> {
    match ORIGINAL_AS_SOFT.load(std::sync::atomic::Ordering::Relaxed) {
        0 => None,
        soft => Some(soft),
    }
}

/// The default `--mem` of `hrt run` on this host.
pub fn default_run_mem() -> u64 {
    from_available(available_memory())
}

fn from_available(available: Option<u64>) -> u64 {
    available.map_or(FLOOR, |bytes| (bytes / 2).clamp(FLOOR, CAP))
}

/// The host's RAM, or this process's cgroup (v2) memory limit if that is smaller.
fn available_memory() -> Option<u64> {
    // SAFETY: sysconf has no preconditions.
    let (pages, page) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    let ram = (pages as u64).checked_mul(page as u64).filter(|_| pages > 0 && page > 0)?;
    Some(cgroup_limit().map_or(ram, |limit| limit.min(ram)))
}

/// This process's cgroup memory limit: `memory.max` (cgroup v2) or `memory.limit_in_bytes`
/// (v1's memory controller); None without one ("max", no such file).
fn cgroup_limit() -> Option<u64> {
    let groups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    groups.lines().find_map(|line| {
        let (_, rest) = line.split_once(':')?;
        let (controllers, path) = rest.split_once(':')?;
        let path = path.trim_end_matches('/');
        let file = if controllers.is_empty() {
            format!("/sys/fs/cgroup{path}/memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes")
        } else {
            return None;
        };
        std::fs::read_to_string(file).ok()?.trim().parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn half_the_host_between_16_and_32_gib() {
        assert_eq!(from_available(Some(24 * GIB)), 16 * GIB);
        assert_eq!(from_available(Some(2 * GIB)), 16 * GIB);
        assert_eq!(from_available(Some(48 * GIB)), 24 * GIB);
        assert_eq!(from_available(Some(512 * GIB)), 32 * GIB);
        assert_eq!(from_available(None), 16 * GIB);
        let here = default_run_mem();
        assert!((16 * GIB..=32 * GIB).contains(&here), "{here}");
    }
}
