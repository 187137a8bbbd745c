//! `hrt run`'s default guest memory: 128 GiB (less only where the host's commit limit or an
//! address-space limit leaves less room).
//!
//! Why more than the host may have: the kernel has no demand paging, so thread stacks are guest
//! memory (glibc's 8 MiB stacks take 10 MiB of the pool each with their guard page and 2 MiB
//! alignment), and programs that keep thousands of threads alive at once (INNCABS's fib and
//! nqueens with std::async: ~1,500-2,200 stacks, 15-22 GiB) ran out of a 16 GiB pool where
//! Linux only reserves their address space, and OpenMP_VV's `num_threads(10000)` tests (10,000
//! stacks, ~98 GiB) out of the 64 GiB that was the default until 2026-12-02. Untouched guest memory costs the host nothing, and
//! neither boot nor KVM's bookkeeping costs time per GiB the program does not use (the pool is
//! given to KVM in pieces as it is first used: `vm/pool_slots.rs`; `hello` takes the same time
//! at 16 and 128 GiB). The guest's memory is reserved, not committed, so a program that touches
//! more than the host has meets the host's OOM killer as it would natively; and the memory the
//! program is told it has (`sysinfo`, `/proc/meminfo`) is capped at the host's
//! (`BootInfo::host_memory`), so a program that sizes itself by it does not over-commit the
//! host. The cap bounds the kernel's share (a sixteenth) and its page map on large hosts
//! (`--mem` goes up to 251 GiB).

const FLOOR: u64 = 128 << 30;
const CAP: u64 = 128 << 30;

/// What `hrt` itself takes of its address space besides the guest's memory: its binary, its
/// threads' stacks, KVM's per-vCPU mappings, the C library's malloc arenas (64 MiB of address
/// space each, capped at two under a limit: six made it ~410 MiB). Measured with two arenas:
/// 87 MiB, 140 at its peak, with 1 to 8 vCPUs; the rest is room.
pub const OWN_ADDRESS_SPACE: u64 = 256 << 20;
/// Per vCPU, beyond that: a thread's stack and its `kvm_run` area.
const PER_VCPU_ADDRESS_SPACE: u64 = 8 << 20;

/// The program's RLIMIT_AS and RLIMIT_DATA soft limits when `hrt` lifted its own (0: not
/// lifted): what the program starts with (the boot-info block's limits, `original_limit`).
static ORIGINAL_AS_SOFT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static ORIGINAL_DATA_SOFT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Under an address-space limit (`ulimit -v`) or a data limit (`ulimit -d`), each of which
/// counts the guest's whole memory (reserved, not used: a private writable mapping) besides
/// `hrt`'s own mappings: lifts `hrt`'s soft limits to the hard ones (the program keeps its soft
/// limits, which its children inherit) and answers how much guest memory fits under the lower
/// hard one with `cpus` vCPUs; None without a limit. (Until 2026-12-03 any data limit below
/// the default guest memory made `hrt run` fail to start.)
pub fn address_space_budget(cpus: u32) -> Option<u64> {
    let a = lifted_budget(libc::RLIMIT_AS, &ORIGINAL_AS_SOFT, cpus);
    let d = lifted_budget(libc::RLIMIT_DATA, &ORIGINAL_DATA_SOFT, cpus);
    match (a, d) {
        (Some(a), Some(d)) => Some(a.min(d)),
        (a, d) => a.or(d),
    }
}

/// `address_space_budget` for one limit, `resource`, noting the program's soft limit in
/// `original`.
fn lifted_budget(
    resource: libc::__rlimit_resource_t,
    original: &std::sync::atomic::AtomicU64,
    cpus: u32,
) -> Option<u64> {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct we pass.
    if unsafe { libc::getrlimit(resource, &mut rl) } != 0 || rl.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    if rl.rlim_cur < rl.rlim_max {
        original.store(rl.rlim_cur, std::sync::atomic::Ordering::Relaxed);
        crate::forward::note_program_limit(resource, rl.rlim_cur, rl.rlim_max);
        let lifted = libc::rlimit { rlim_cur: rl.rlim_max, rlim_max: rl.rlim_max };
        // SAFETY: setrlimit reads the struct we pass; raising a soft limit to the hard one is
        // allowed.
        unsafe { libc::setrlimit(resource, &lifted) };
    }
    if rl.rlim_max == libc::RLIM_INFINITY {
        return None;
    }
    // SAFETY: mallopt only sets a malloc parameter; fewer arenas, less address space.
    unsafe { libc::mallopt(libc::M_ARENA_MAX, 2) };
    Some(rl.rlim_max.saturating_sub(OWN_ADDRESS_SPACE + PER_VCPU_ADDRESS_SPACE * cpus as u64))
}

/// The program's soft limit of `resource` (RLIMIT_AS, RLIMIT_DATA) if `hrt` lifted its own
/// (`address_space_budget`).
pub fn original_limit(resource: libc::__rlimit_resource_t) -> Option<u64> {
    let slot = match resource {
        libc::RLIMIT_AS => &ORIGINAL_AS_SOFT,
        libc::RLIMIT_DATA => &ORIGINAL_DATA_SOFT,
        _ => return None,
    };
    match slot.load(std::sync::atomic::Ordering::Relaxed) {
        0 => None,
        soft => Some(soft),
    }
}

/// The default `--mem` of `hrt run` on this host.
pub fn default_run_mem() -> u64 {
    let default = from_available(crate::vm::host_memory::available());
    match strict_commit_room() {
        Some(room) => default.min(room).max(crate::vm::MIN_MEM),
        None => default,
    }
}

/// Under strict overcommit accounting (`vm.overcommit_memory = 2`) the host counts the whole
/// reservation against its commit limit, `MAP_NORESERVE` or not, so a default larger than what
/// the limit has left would make `hrt` fail to start: the default then takes at most three
/// quarters of that room (rounded down to 2 MiB). None under the other modes.
fn strict_commit_room() -> Option<u64> {
    let mode = std::fs::read_to_string("/proc/sys/vm/overcommit_memory").ok()?;
    if mode.trim() != "2" {
        return None;
    }
    room_in(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// Three quarters of `CommitLimit` less `Committed_AS` in meminfo text, 2 MiB-aligned.
fn room_in(meminfo: &str) -> Option<u64> {
    let kb = |name: &str| {
        meminfo.lines().find_map(|l| l.strip_prefix(name)?.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    let room = kb("CommitLimit:")?.saturating_sub(kb("Committed_AS:")?) * 1024;
    Some((room / 4 * 3) & !((2 << 20) - 1))
}

fn from_available(available: Option<u64>) -> u64 {
    available.map_or(FLOOR, |bytes| bytes.clamp(FLOOR, CAP))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn strict_overcommit_leaves_room() {
        let info = "MemTotal:       24683584 kB\nCommitLimit:    12341792 kB\nCommitted_AS:    2097152 kB\n";
        let room = room_in(info).unwrap();
        assert_eq!(room, ((12341792 - 2097152) * 1024 / 4 * 3) & !((2 << 20) - 1));
        assert!(room < 8 * GIB && room > 7 * GIB, "{room}");
        assert_eq!(room_in("CommitLimit: 1 kB\nCommitted_AS: 5 kB\n"), Some(0));
        assert_eq!(room_in("MemTotal: 5 kB\n"), None);
    }

    #[test]
    fn the_default_is_128_gib_whatever_the_host_has() {
        assert_eq!(from_available(Some(24 * GIB)), 128 * GIB);
        assert_eq!(from_available(Some(2 * GIB)), 128 * GIB);
        assert_eq!(from_available(Some(512 * GIB)), 128 * GIB);
        assert_eq!(from_available(None), 128 * GIB);
        // Less only where the commit limit leaves less room.
        let here = default_run_mem();
        assert!(here == 128 * GIB || strict_commit_room().is_some(), "{here}");
    }
}
