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
