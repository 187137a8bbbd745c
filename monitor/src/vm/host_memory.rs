//! What the host can give this process's memory: its RAM, or its cgroup's memory limit if that
//! is smaller. `hrt run`'s default `--mem` is sized from it (`run_memory`), and the memory the
//! program is told it has is capped at it (`BootInfo::host_memory`): the guest's pool is a
//! reservation that may be larger than the host.

use std::sync::OnceLock;

/// The host's RAM, or this process's cgroup memory limit if smaller; None if neither can be
/// read. Read once (the answer does not change while `hrt` runs, and a forked child's VM is
/// given its parent's).
pub fn available() -> Option<u64> {
    static ONCE: OnceLock<Option<u64>> = OnceLock::new();
    *ONCE.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let (pages, page) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
        let ram = (pages as u64).checked_mul(page as u64).filter(|_| pages > 0 && page > 0)?;
        Some(cgroup_limit().map_or(ram, |limit| limit.min(ram)))
    })
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
