//! Descriptors above 2 that `hrt` inherited from whoever started it: the program gets them at
//! the same numbers, as an exec'd program would. A process manager hands its child a socket
//! this way and names its number in the environment (MPICH's Hydra: `PMI_FD=6`; Slurm's PMI
//! does the same), so `mpirun -np 2 hrt run ./prog` reaches each rank's launcher.
//!
//! Inherited means open without FD_CLOEXEC: everything `hrt` opens itself has the flag (Rust's
//! standard library and the forwarder open with O_CLOEXEC), and an exec never leaves a
//! descriptor open with it.

use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

use super::fd_table::HostFd;
use super::{inherited, paths, Forwarder};

/// The host descriptors above 2 this process inherited, in increasing order.
fn inherited_above_standard() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else { return Vec::new() };
    let mut fds: Vec<i32> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| std::str::from_utf8(e.file_name().as_bytes()).ok()?.parse().ok())
        .filter(|&fd| fd > 2 && inherited(fd))
        .collect();
    fds.sort_unstable();
    fds
}

impl Forwarder {
    /// Puts the descriptors above 2 that `hrt` inherited into the program's table at their own
    /// numbers (without FD_CLOEXEC, as they were inherited). Each becomes the program's: its
    /// `close` closes it on the host. Returns how many (for `-v`). Not done by `new`, so that the
    /// forwarder's own tests never hand their harness's descriptors to a guest.
    pub fn inherit_descriptors(&self) -> usize {
        let mut count = 0;
        for fd in inherited_above_standard() {
            let special = paths::fd_path(fd).is_some_and(|p| paths::special_path(&p));
            // A number at or above the limit stays out of the guest's reach (it cannot name it).
            if self.fds.replace(fd as usize, Arc::new(HostFd::owned(fd, special)), false).is_ok() {
                count += 1;
            }
        }
        count
    }
}
