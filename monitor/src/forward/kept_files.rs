//! Files the program's private file mappings still name after it closed their descriptors
//! (`process::KEEP_FILE`, `KEPT_PREAD`, `DROP_KEPT`).
//!
//! Linux's mapping holds its file: `madvise(MADV_DONTNEED)` of a private file mapping reads the
//! file again long after `mmap`'s descriptor was closed (ld.so and most readers close it at
//! once). The kernel reads such a mapping when `mmap` is called, so it needs the file again only
//! then; before the program closes or replaces a descriptor that mappings were read from, it
//! asks the monitor to keep that descriptor's host file here, under a handle the program cannot
//! name, and gives the handle back when the last such mapping is gone.
//!
//! A kept file is a host duplicate of the descriptor: the same open file description (flock
//! locks stay, as Linux's mapping keeps them), while the guest's own host descriptor is closed
//! with the guest fd (POSIX record locks go, as Linux's close releases them).

use std::sync::{Arc, Mutex};

use super::errno::{Errno, SysResult};
use super::fd_table::HostFd;
use super::Forwarder;

/// At most this many kept files (each holds a host descriptor of `hrt`'s): ENFILE beyond,
/// which the kernel reports once and treats as before (the mapping's file out of reach).
const MAX_KEPT: usize = 4096;

#[derive(Default)]
pub struct KeptFiles {
    files: Mutex<Vec<Option<Arc<HostFd>>>>,
}

impl KeptFiles {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Option<Arc<HostFd>>>> {
        // Every update is one assignment: a panic elsewhere leaves the list consistent.
        self.files.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `host` under a new handle.
    pub fn keep(&self, host: Arc<HostFd>) -> SysResult<i64> {
        let mut files = self.lock();
        let handle = match files.iter().position(Option::is_none) {
            Some(free) => free,
            None if files.len() < MAX_KEPT => {
                files.push(None);
                files.len() - 1
            }
            None => return Err(Errno::ENFILE),
        };
        files[handle] = Some(host);
        Ok(handle as i64)
    }

    /// The file kept under `handle` (EBADF if none).
    pub fn get(&self, handle: u64) -> SysResult<Arc<HostFd>> {
        let files = self.lock();
        usize::try_from(handle).ok().and_then(|h| files.get(h)).and_then(Clone::clone).ok_or(Errno::EBADF)
    }

    /// Lets `handle` go (EBADF if none): its host descriptor closes with its last holder.
    pub fn drop_handle(&self, handle: u64) -> SysResult<i64> {
        let taken = {
            let mut files = self.lock();
            let slot = usize::try_from(handle).ok().and_then(|h| files.get_mut(h)).ok_or(Errno::EBADF)?;
            let taken = slot.take().ok_or(Errno::EBADF)?;
            while matches!(files.last(), Some(None)) {
                files.pop();
            }
            taken
        };
        // Closed (if last) outside the lock.
        drop(taken);
        Ok(0)
    }

    /// A copy whose handles name `own(file)` for each file (a fork's table: the same handles).
    pub fn mapped(&self, mut own: impl FnMut(&Arc<HostFd>) -> Arc<HostFd>) -> KeptFiles {
        let files = self.lock().iter().map(|f| f.as_ref().map(&mut own)).collect();
        KeptFiles { files: Mutex::new(files) }
    }

    /// The host descriptors kept (a forked child must keep them open).
    pub fn raw(&self) -> Vec<i32> {
        self.lock().iter().flatten().map(|f| f.raw()).collect()
    }
}

impl Forwarder {
    /// `process::KEEP_FILE` (fd, close): keeps a duplicate of guest fd `fd`'s host descriptor;
    /// with `close`, then closes `fd` (its answer is lost: a kept regular file's close reports
    /// nothing the program could act on). Answers the handle.
    pub(super) fn keep_file(&self, fd: u64, close: bool) -> SysResult<i64> {
        let host = self.fds().get(fd)?;
        let handle = self.fds().kept().keep(Arc::new(host.duplicate()?))?;
        if close {
            let _ = self.close(fd);
        }
        Ok(handle)
    }
}
