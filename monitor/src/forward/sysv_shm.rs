//! System V shared memory, forwarded: `shmget` and `shmctl` act on the host's segments (so a
//! segment id means the same in every process, under `hrt` or not). Attaching one (`shmat`) is
//! the kernel's: it gives the program memory and asks the monitor (`nr::SHM_ATTACH`) to put
//! the segment's host pages there (vm/shared_files.rs).

use super::errno::{Errno, SysResult};
use super::guest_mem::Guest;
use super::host::{int, ptr};
use super::Forwarder;

/// shmctl commands, as Linux numbers them (`IPC_64`, 0x100, may be or-ed in by old libcs).
const IPC_64: i32 = 0x100;
const SHM_STAT: i32 = 13;
const SHM_INFO: i32 = 14;
const SHM_STAT_ANY: i32 = 15;

/// Sizes of the structures shmctl copies (x86-64): shmid_ds, shminfo, shm_info.
const SHMID_DS: u64 = std::mem::size_of::<libc::shmid_ds>() as u64;
const SHMINFO: u64 = 72;
const SHM_INFO_SIZE: u64 = 48;

impl Forwarder {
    pub(super) fn shmget(&self, key: u64, size: u64, flags: u64) -> SysResult<i64> {
        // SAFETY: no pointers.
        unsafe { self.sys(libc::SYS_shmget, &[int(key), size as libc::c_long, int(flags)]) }
    }

    pub(super) fn shmctl(&self, g: Guest, id: u64, cmd: u64, buf: u64) -> SysResult<i64> {
        let c = int(cmd) as i32 & !IPC_64;
        // (bytes the host writes into the program, bytes it reads from it)
        let (out, input) = match c {
            libc::IPC_RMID | libc::SHM_LOCK | libc::SHM_UNLOCK => (0, 0),
            libc::IPC_STAT | SHM_STAT | SHM_STAT_ANY => (SHMID_DS, 0),
            libc::IPC_SET => (0, SHMID_DS),
            libc::IPC_INFO => (SHMINFO, 0),
            SHM_INFO => (SHM_INFO_SIZE, 0),
            _ => return Err(Errno::EINVAL),
        };
        let p = match (out, input) {
            (0, 0) => std::ptr::null_mut(),
            (0, n) => g.range(buf, n)?,
            (n, _) => g.range_mut(buf, n)?,
        };
        // SAFETY: `p` is null or covers the structure the command copies, in guest memory.
        unsafe { self.sys(libc::SYS_shmctl, &[int(id), c as libc::c_long, ptr(p)]) }
    }
}
