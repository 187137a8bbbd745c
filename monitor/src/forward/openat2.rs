//! openat2(dirfd, path, how, size): openat with a `struct open_how` whose RESOLVE_* flags
//! restrict the path's resolution (below the directory, no symbolic links, no mount crossing).
//!
//! The host checks `how` as Linux does, before it looks at the path: a probe with an empty
//! path answers ENOENT for a valid `how`, else the error the program's call gets (EINVAL,
//! E2BIG, EAGAIN for RESOLVE_CACHED with O_CREAT). Then:
//! - without a restricting flag the call is openat's (the forwarder's own walk, files.rs);
//! - with one, the host resolves the path from the program's directory with the program's
//!   flags plus RESOLVE_NO_MAGICLINKS (which BENEATH, IN_ROOT and NO_SYMLINKS imply already), so
//!   the restriction is the host kernel's own. What it opens under /proc, /sys or /dev, or from
//!   a starting directory there, is opened again through the forwarder's walk instead, which
//!   gives the program its own /proc/self and the VM's CPUs; such paths keep the checks the
//!   host's resolution made, not the ones the walk would repeat.

use super::errno::{Errno, SysResult};
use super::fd_table::HostFd;
use super::guest_mem::Guest;
use super::host::ptr;
use super::Forwarder;
use std::sync::Arc;

/// `struct open_how`'s first version (flags, mode, resolve: three u64s).
const OPEN_HOW_SIZE_VER0: u64 = 24;
/// Linux refuses a larger `how` (E2BIG), as it does any struct larger than a page.
const OPEN_HOW_MAX: u64 = 4096;

const RESOLVE_NO_XDEV: u64 = 0x01;
const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_NO_SYMLINKS: u64 = 0x04;
const RESOLVE_BENEATH: u64 = 0x08;
const RESOLVE_IN_ROOT: u64 = 0x10;
/// The flags that change how the path resolves (RESOLVE_CACHED only makes the call fail with
/// EAGAIN where the lookup would not be cached: the walk's plain open never fails so).
const RESTRICTING: u64 =
    RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_IN_ROOT;

impl Forwarder {
    pub(super) fn openat2(&self, g: Guest, dirfd: u64, path: u64, how: u64, size: u64) -> SysResult<i64> {
        if size < OPEN_HOW_SIZE_VER0 {
            return Err(Errno::EINVAL);
        }
        if size > OPEN_HOW_MAX {
            return Err(Errno::E2BIG);
        }
        let bytes = g.read_bytes(how, size)?;
        let word = |i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        let (flags, mode, resolve) = (word(0), word(1), word(2));
        // The host checks `how` (and the bytes past the fields it knows) before the path.
        // SAFETY: an empty host C string and `size` bytes of our own copy of `how`.
        let probe = unsafe {
            libc::syscall(libc::SYS_openat2, libc::AT_FDCWD, c"".as_ptr(), bytes.as_ptr(), size as libc::size_t)
        };
        if probe >= 0 {
            // SAFETY: closes the descriptor the probe opened (it cannot, but never leak one).
            unsafe { libc::close(probe as i32) };
        } else {
            match Errno::last() {
                Errno::ENOENT => {}
                e => return Err(e),
            }
        }
        if resolve & RESTRICTING == 0 {
            return self.openat(g, dirfd, path, flags, mode);
        }
        match self.open_restricted(g, dirfd, path, [flags, mode, resolve])? {
            Some(fd) => Ok(fd),
            // Under /proc, /sys or /dev: the walk's open (the host checked the restrictions).
            None => self.openat(g, dirfd, path, flags, mode),
        }
    }

    /// The host's openat2 from the program's directory `dirfd`; None where the start or the
    /// file opened lies under /proc, /sys or /dev (see the module comment).
    fn open_restricted(
        &self,
        g: Guest,
        dirfd: u64,
        path: u64,
        [flags, mode, resolve]: [u64; 3],
    ) -> SysResult<Option<i64>> {
        let text = g.read_path(path)?;
        let start: Option<Arc<HostFd>> =
            if dirfd as u32 as i32 == libc::AT_FDCWD { None } else { Some(self.fds().get(dirfd)?) };
        let start_raw = start.as_ref().map_or(libc::AT_FDCWD, |h| h.raw());
        if start.as_ref().is_some_and(|h| h.vm_path().is_some()) || in_special_tree(start_raw) {
            return Ok(None);
        }
        // struct open_how's first version: flags, mode, resolve.
        let host_how: [u64; 3] = [flags | libc::O_CLOEXEC as u64, mode, resolve | RESOLVE_NO_MAGICLINKS];
        // SAFETY: a host directory descriptor, a host C string and a host open_how.
        let fd = unsafe {
            self.sys(
                libc::SYS_openat2,
                &[
                    start_raw as libc::c_long,
                    ptr(text.as_ptr()),
                    ptr(host_how.as_ptr()),
                    OPEN_HOW_SIZE_VER0 as libc::c_long,
                ],
            )
        };
        // A magic link the program did not forbid (only RESOLVE_NO_XDEV given): the walk's.
        let fd = match fd {
            Err(Errno::ELOOP) if resolve & (RESTRICTING & !RESOLVE_NO_XDEV) == 0 => return Ok(None),
            fd => fd? as i32,
        };
        let host = HostFd::owned(fd, false);
        if in_special_tree(fd) {
            drop(host);
            return Ok(None);
        }
        let cloexec = flags & libc::O_CLOEXEC as u64 != 0;
        self.fds().insert(Arc::new(host), cloexec, 0).map(Some)
    }
}

/// Whether host descriptor `fd` (AT_FDCWD: the working directory) names a file under /proc,
/// /sys or /dev, where the program's view is the forwarder's, not the host's.
fn in_special_tree(fd: i32) -> bool {
    let link = if fd == libc::AT_FDCWD { "/proc/self/cwd".to_string() } else { format!("/proc/self/fd/{fd}") };
    match std::fs::read_link(link) {
        Ok(p) => {
            let p = p.as_os_str().as_encoded_bytes();
            super::paths::special_path(p) || p == b"/sys" || p.starts_with(b"/sys/")
        }
        // Not a path (an anonymous file) or gone: let the walk decide.
        Err(_) => true,
    }
}
