//! The host's CPU count as `hrt` may use them (affinity and cgroup quota, as
//! `std::thread::available_parallelism` reads them), asked once: each ask reads the cgroup
//! files again (~12 system calls), and a start asked five times.

use std::sync::OnceLock;

pub fn count() -> u32 {
    static COUNT: OnceLock<u32> = OnceLock::new();
    *COUNT.get_or_init(|| std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1))
}
