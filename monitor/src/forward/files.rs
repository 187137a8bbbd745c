//! Files and directories: open, close, stat, seek, access, cwd, directories, names, links,
//! modes, times, truncation, sync.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::errno::{Errno, SysResult};
use super::fd_table::HostFd;
use super::guest_mem::Guest;
use super::host::{int, ptr, uint};
use super::paths::At;
use super::{paths, Forwarder};

/// sizeof(struct stat) and sizeof(struct statx) on x86-64 Linux.
const STAT_SIZE: u64 = 144;
const STATX_SIZE: u64 = 256;
/// Where `st_mode` (u32) lies in struct stat, and `stx_mode` (u16) in struct statx.
const STAT_MODE_OFFSET: u64 = 24;
const STATX_MODE_OFFSET: u64 = 28;
/// Two struct timespec (utimensat).
const TIMES_SIZE: u64 = 32;
/// Where the link count and the size lie in struct stat (u64, i64) and struct statx (u32, u64).
const STAT_NLINK_OFFSET: u64 = 16;
const STAT_SIZE_OFFSET: u64 = 48;
const STATX_NLINK_OFFSET: u64 = 16;
const STATX_SIZE_OFFSET: u64 = 40;

/// The layout a stat call wrote.
#[derive(Clone, Copy)]
enum StatLayout {
    Stat,
    Statx,
}

/// The flags Linux's fstatat and statx take: AT_SYMLINK_NOFOLLOW, AT_NO_AUTOMOUNT,
/// AT_EMPTY_PATH and the AT_STATX_SYNC_TYPE bits (others: EINVAL before the path).
const STAT_AT_FLAGS: libc::c_long =
    (libc::AT_SYMLINK_NOFOLLOW | libc::AT_NO_AUTOMOUNT | libc::AT_EMPTY_PATH | 0x6000) as libc::c_long;

/// Whether *at `flags` follow a symbolic link in the last component.
fn follows(flags: libc::c_long) -> bool {
    flags & libc::AT_SYMLINK_NOFOLLOW as libc::c_long == 0
}

impl Forwarder {
    pub(super) fn openat(&self, g: Guest, dirfd: u64, path: u64, flags: u64, mode: u64) -> SysResult<i64> {
        self.open_at(g, dirfd, path, flags, mode, false).map(|fd| fd.expect("a waiting open always opens"))
    }

    /// The channel's try of an open before it hands it to a thread of its own: opens of what
    /// cannot make an open wait (a regular file, a directory, a memory device such as /dev/null,
    /// a name not there) are made now. A FIFO's open waits for its other end (and a lease's
    /// holder can hold up any open), so the open is made with O_NONBLOCK, which fails instead
    /// of waiting, and cleared afterwards (an O_PATH open opens nothing and is made as it is).
    /// An open that would wait, or that met something else than it looked for (the name
    /// replaced meanwhile), is left to the thread (None). A thread's hand-off cost ~90 us per
    /// open on this host: a plain open through it took 104 us against 3 natively.
    pub(super) fn openat_without_waiting(
        &self,
        g: Guest,
        dirfd: u64,
        path: u64,
        flags: u64,
        mode: u64,
    ) -> Option<SysResult<i64>> {
        self.open_at(g, dirfd, path, flags, mode, true).transpose()
    }

    /// openat; with `now`, only if it cannot wait (`openat_without_waiting`), else Ok(None).
    fn open_at(&self, g: Guest, dirfd: u64, path: u64, flags: u64, mode: u64, now: bool) -> SysResult<Option<i64>> {
        let flags = int(flags);
        // O_CREAT|O_EXCL never follows a link at the last name: one there, even dangling, is
        // EEXIST (what lock files and mkstemp rely on).
        let excl = (libc::O_CREAT | libc::O_EXCL) as libc::c_long;
        let follow = flags & libc::O_NOFOLLOW as libc::c_long == 0 && flags & excl != excl;
        // Linux checks the flags before it reads the name (EINVAL before EFAULT or EBADF).
        check_open_flags(flags)?;
        // Linux takes the descriptor number after reading the name and before the walk: with
        // none free, a missing file is EMFILE, not ENOENT.
        let name = g.read_path(path)?;
        if !self.fds().has_room() {
            return Err(Errno::EMFILE);
        }
        if flags & libc::O_CREAT as libc::c_long != 0 && name.to_bytes().ends_with(b"/") {
            // O_CREAT of "name/": Linux walks the directory part, then says EISDIR without
            // looking at the last name (a link loop there is no ELOOP).
            self.path_at_entry(g, dirfd, path)?;
            return Err(Errno::EISDIR);
        }
        let at = self.path_at(g, dirfd, path, follow)?;
        if let Some(data) = &at.synthetic {
            // The procfs file is there: an exclusive create is EEXIST.
            if flags & excl == excl {
                return Err(Errno(libc::EEXIST));
            }
            let fd = super::synthetic::open_memory_file(data)
                .map_err(|e| super::errno::Errno(e.raw_os_error().unwrap_or(libc::EMFILE)))?;
            let host = Arc::new(HostFd::owned(fd, false).named(at.vm_path.clone()).synthesized());
            return self.fds().insert(host, flags & libc::O_CLOEXEC as libc::c_long != 0, 0).map(Some);
        }
        let nonblock = libc::O_NONBLOCK as libc::c_long;
        let mut host_flags = at.open_flags(flags | libc::O_CLOEXEC as libc::c_long);
        // An O_PATH open opens nothing (a FIFO's included): it never waits. Nor does an
        // O_DIRECTORY open: only a directory opens (anything else is ENOTDIR before any open
        // of it), and directories take no leases (`find` and `ls -R` open each one so).
        let now = now && flags & (libc::O_PATH | libc::O_DIRECTORY) as libc::c_long == 0;
        // An open that may write (or truncate) the program's own executable or interpreter is
        // ETXTBSY, as Linux refuses it for a file it runs (here the host does not run it);
        // after the permission check, as Linux's order is; not for O_CREAT|O_EXCL (EEXIST).
        let writes = flags & libc::O_PATH as libc::c_long == 0
            && (flags & libc::O_ACCMODE as libc::c_long != libc::O_RDONLY as libc::c_long
                || flags & libc::O_TRUNC as libc::c_long != 0)
            && flags & excl != excl;
        let st = (now || writes).then(|| stat_at(at.dirfd, &at.path, at.at_flags(0)));
        if let (true, Some(Ok(st))) = (writes, &st) {
            self.refuse_running_image(&at, st)?;
        }
        if now {
            match st {
                Some(Ok(st)) if !opens_at_once(&st) => return Ok(None),
                _ => {}
            }
            host_flags |= nonblock;
        }
        // Where the walk wants no link followed at the last name (a single name, see
        // `At::nofollow`) and the program did not ask for O_NOFOLLOW, openat2's
        // RESOLVE_NO_SYMLINKS refuses a link swapped in there just as O_NOFOLLOW would, but
        // leaves no O_NOFOLLOW in the open file's status flags: a host program the descriptor
        // is handed to at an exec (`--children host`) saw it in F_GETFL.
        // (openat2 refuses what openat ignores: unknown flags, O_PATH with other flags, a mode
        // without O_CREAT or with more than the permission bits; those keep O_NOFOLLOW.)
        let added = (host_flags & !flags) & libc::O_NOFOLLOW as libc::c_long;
        let strict = openat2_takes(host_flags & !added, mode);
        let opened = if added != 0 && strict.is_some() {
            const RESOLVE_NO_SYMLINKS: u64 = 0x04;
            // struct open_how's first version: flags, mode, resolve.
            let how: [u64; 3] = [(host_flags & !added) as u32 as u64, strict.unwrap_or(0), RESOLVE_NO_SYMLINKS];
            // SAFETY: the path is a host C string, `how` a host open_how of the size given.
            unsafe {
                self.sys(libc::SYS_openat2, &[at.dirfd as libc::c_long, ptr(at.path.as_ptr()), ptr(how.as_ptr()), 24])
            }
        } else {
            // SAFETY: the path is a host C string.
            unsafe {
                self.sys(libc::SYS_openat, &[at.dirfd as libc::c_long, ptr(at.path.as_ptr()), host_flags, uint(mode)])
            }
        };
        let fd = match opened {
            Err(Errno::EAGAIN) if now => return Ok(None),
            r => r? as i32,
        };
        let hidden = if strict.is_some() { 0 } else { added as i32 };
        let mut host = HostFd::owned(fd, at.special).named(at.vm_path.clone()).hiding(hidden);
        if now {
            let st = stat_at(fd, c"", libc::AT_EMPTY_PATH as libc::c_long)?;
            if !opens_at_once(&st) {
                return Ok(None);
            }
            // Its kind for the reads and writes to come (`HostFd::kind`), known without asking
            // again: a regular file or a directory never waits.
            if matches!(st.st_mode & libc::S_IFMT, libc::S_IFREG | libc::S_IFDIR) {
                host = host.known_kind(super::fd_table::FdKind::Quick);
            }
            if flags & nonblock == 0 {
                // F_SETFL sets only the status flags (O_APPEND, O_NONBLOCK, O_DIRECT, O_NOATIME,
                // O_ASYNC): those of the open, without O_NONBLOCK. (O_ASYNC is set where the
                // open set it: unchanged, F_SETFL does not start signal-driven I/O.)
                let status = host_flags & !nonblock;
                // SAFETY: fcntl on our own descriptor.
                unsafe { self.sys(libc::SYS_fcntl, &[fd as libc::c_long, libc::F_SETFL as libc::c_long, status])? };
            }
        }
        self.fds().insert(Arc::new(host), flags & libc::O_CLOEXEC as libc::c_long != 0, 0).map(Some)
    }

    pub(super) fn close(&self, fd: u64) -> SysResult<i64> {
        self.fds().remove(fd)?.close()
    }

    /// close_range(first, last, flags): the program's descriptors from `first` to `last` (the
    /// table's, never the monitor's own) are closed, or marked FD_CLOEXEC with
    /// CLOSE_RANGE_CLOEXEC; CLOSE_RANGE_UNSHARE changes nothing (the table is the program's
    /// alone). Closing errors are ignored, as Linux ignores them here.
    pub(super) fn close_range(&self, first: u64, last: u64, flags: u64) -> SysResult<i64> {
        const UNSHARE: u64 = 2;
        const CLOEXEC: u64 = 4;
        let (first, last) = (first as u32, last as u32);
        if flags & !(UNSHARE | CLOEXEC) != 0 || first > last {
            return Err(Errno::EINVAL);
        }
        if flags & CLOEXEC != 0 {
            self.fds().set_cloexec_range(first as usize, last as usize);
        } else {
            for slot in self.fds().take_range(first as usize, last as usize) {
                let _ = slot.close();
            }
        }
        Ok(0)
    }

    pub(super) fn fstat(&self, g: Guest, fd: u64, buf: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        let p = g.range_mut(buf, STAT_SIZE)?;
        // SAFETY: `p` covers a struct stat in guest memory.
        let r = unsafe { self.sys(libc::SYS_fstat, &[h.raw() as libc::c_long, ptr(p)]) }?;
        self.own_dir_figures(g, buf, h.vm_path(), StatLayout::Stat)?;
        Ok(r)
    }

    /// The program's descriptor and thread directories are the monitor's own (fd_dirs.rs,
    /// task_dir.rs), whose figures count `hrt`'s descriptors and threads: a stat of
    /// `/proc/self/fd` gave the size 11 where Linux (6.2 on) gives the program's 5 open
    /// descriptors, and `/proc/self/task` 12 links for a program with three threads (Linux: 2
    /// and one per thread). Writes the program's figures over the host's in the answer at
    /// `buf` (a host that gives no size for the descriptor directory keeps 0).
    fn own_dir_figures(&self, g: Guest, buf: u64, vm_path: Option<&[u8]>, layout: StatLayout) -> SysResult<()> {
        let Some(vm_path) = vm_path else { return Ok(()) };
        let (nlink_at, size_at) = match layout {
            StatLayout::Stat => (STAT_NLINK_OFFSET, STAT_SIZE_OFFSET),
            StatLayout::Statx => (STATX_NLINK_OFFSET, STATX_SIZE_OFFSET),
        };
        if super::fd_dirs::listed(vm_path) == Some(false) && g.read::<u64>(buf + size_at)? != 0 {
            g.write(buf + size_at, &(self.fds().numbers().len() as u64))?;
        } else if super::task_dir::listed(vm_path) {
            let threads = super::task_dir::thread_ids(self.host_pid.parse().unwrap_or(0)).len();
            match layout {
                StatLayout::Stat => g.write(buf + nlink_at, &(2 + threads as u64))?,
                StatLayout::Statx => g.write(buf + nlink_at, &(2 + threads as u32))?,
            }
        }
        Ok(())
    }

    /// stat, lstat, newfstatat. The last name is stat'ed without following first (see
    /// `path_at_to_stat`); only a link found there, to be followed, takes the full walk.
    pub(super) fn fstatat(&self, g: Guest, dirfd: u64, path: u64, buf: u64, flags: u64) -> SysResult<i64> {
        let flags = int(flags);
        let empty = flags & libc::AT_EMPTY_PATH as libc::c_long != 0;
        // Linux 6.11+: a NULL path with AT_EMPTY_PATH and a descriptor is fstat of it (no
        // flag looked at); with AT_FDCWD, the working directory.
        if path == 0 && empty && int(dirfd) >= 0 {
            return self.fstat(g, dirfd, buf);
        }
        // Linux's order: the flags, the path, the answer's buffer last (EFAULT).
        if flags & !STAT_AT_FLAGS != 0 {
            return Err(Errno::EINVAL);
        }
        let p = g.range_mut(buf, STAT_SIZE).unwrap_or(super::io::poison::KERNEL_HALF as *mut u8);
        let stat = |at: &At| {
            // SAFETY: a host C string and a struct stat in guest memory.
            unsafe {
                self.sys(
                    libc::SYS_newfstatat,
                    &[at.dirfd as libc::c_long, ptr(at.path.as_ptr()), ptr(p), at.at_flags(flags)],
                )
            }
        };
        let mut at = if path == 0 && empty {
            self.empty_path_at(dirfd)?
        } else {
            self.path_at_to_stat(g, dirfd, path, follows(flags))?
        };
        let mut r = stat(&at);
        if at.unlooked && r.is_ok() && g.read::<u32>(buf + STAT_MODE_OFFSET)? & libc::S_IFMT == libc::S_IFLNK {
            at = self.path_at_to_inspect(g, dirfd, path, follows(flags))?;
            r = stat(&at);
        }
        if r.is_ok() {
            self.own_dir_figures(g, buf, at.vm_path.as_deref(), StatLayout::Stat)?;
        }
        r
    }

    pub(super) fn statx(&self, g: Guest, dirfd: u64, path: u64, flags: u64, mask: u64, buf: u64) -> SysResult<i64> {
        const STATX_RESERVED: u32 = 0x8000_0000;
        const AT_STATX_SYNC_TYPE: u32 = 0x6000;
        // Linux's order: the mask and the sync type, the descriptor (a NULL path with
        // AT_EMPTY_PATH) or the other flags and the path, the answer's buffer last (EFAULT).
        if mask as u32 & STATX_RESERVED != 0 || flags as u32 & AT_STATX_SYNC_TYPE == AT_STATX_SYNC_TYPE {
            return Err(Errno::EINVAL);
        }
        let empty = int(flags) & libc::AT_EMPTY_PATH as libc::c_long != 0;
        // (The descriptor itself is looked at without the flag check, as Linux's do_statx_fd.)
        let fd_itself = path == 0 && empty && int(dirfd) >= 0;
        if !fd_itself && int(flags) & !STAT_AT_FLAGS != 0 {
            return Err(Errno::EINVAL);
        }
        let p = g.range_mut(buf, STATX_SIZE).unwrap_or(super::io::poison::KERNEL_HALF as *mut u8);
        if path == 0 && empty {
            // Linux 6.11+: a NULL path with AT_EMPTY_PATH means the descriptor itself (or the
            // working directory); older hosts answer EFAULT themselves.
            let (dfd, _hold) = self.dirfd(dirfd)?;
            // SAFETY: a NULL path and a struct statx in guest memory.
            return unsafe { self.sys(libc::SYS_statx, &[dfd as libc::c_long, 0, int(flags), uint(mask), ptr(p)]) };
        }
        let statx = |at: &At| {
            let flags = at.at_flags(int(flags));
            // SAFETY: a host C string and a struct statx in guest memory.
            unsafe {
                self.sys(libc::SYS_statx, &[at.dirfd as libc::c_long, ptr(at.path.as_ptr()), flags, uint(mask), ptr(p)])
            }
        };
        // As fstatat: a link to follow found at the last name takes the full walk; so does an
        // answer whose mask has no file type (the host did not say what it found).
        let mut at = self.path_at_to_stat(g, dirfd, path, follows(int(flags)))?;
        let mut r = statx(&at);
        if at.unlooked && r.is_ok() {
            let typed = g.read::<u32>(buf)? & libc::STATX_TYPE != 0;
            let mode = g.read::<u16>(buf + STATX_MODE_OFFSET)? as u32;
            if !typed || mode & libc::S_IFMT == libc::S_IFLNK {
                at = self.path_at_to_inspect(g, dirfd, path, follows(int(flags)))?;
                r = statx(&at);
            }
        }
        if r.is_ok() {
            self.own_dir_figures(g, buf, at.vm_path.as_deref(), StatLayout::Statx)?;
        }
        r
    }

    /// name_to_handle_at: the host's handle and mount id of the file the walk resolves. (Its
    /// counterpart `open_by_handle_at` stays unimplemented: opening by handle would skip the
    /// walk and `--sandbox`.)
    pub(super) fn name_to_handle_at(
        &self,
        g: Guest,
        dirfd: u64,
        path: u64,
        handle: u64,
        mount_id: u64,
        flags: u64,
    ) -> SysResult<i64> {
        const AT_HANDLE_FID: libc::c_long = 0x200;
        const AT_HANDLE_MNT_ID_UNIQUE: libc::c_long = 0x001;
        // A handle that can be reconnected to a path (Linux 6.13); the host decides.
        const AT_HANDLE_CONNECTABLE: libc::c_long = 0x002;
        // A file handle's header (handle_bytes, handle_type) and Linux's largest handle.
        const HEADER: u64 = 8;
        const MAX_HANDLE_SZ: u32 = 128;
        let flags = int(flags);
        let known = libc::AT_SYMLINK_FOLLOW as libc::c_long
            | libc::AT_EMPTY_PATH as libc::c_long
            | AT_HANDLE_FID
            | AT_HANDLE_MNT_ID_UNIQUE
            | AT_HANDLE_CONNECTABLE;
        if flags & !known != 0 {
            return Err(Errno::EINVAL);
        }
        let follow = flags & libc::AT_SYMLINK_FOLLOW as libc::c_long != 0;
        let at = self.path_at_to_inspect(g, dirfd, path, follow)?;
        let bytes = g.read::<u32>(handle)?;
        let h = g.range_mut(handle, HEADER + u64::from(bytes.min(MAX_HANDLE_SZ)))?;
        let id_size = if flags & AT_HANDLE_MNT_ID_UNIQUE != 0 { 8 } else { 4 };
        let m = g.range_mut(mount_id, id_size)?;
        // The walk looked at the last name and found no link: not following is the same
        // (and the host call takes no AT_SYMLINK_NOFOLLOW).
        let host_flags = if at.nofollow { flags & !(libc::AT_SYMLINK_FOLLOW as libc::c_long) } else { flags };
        // SAFETY: a host C string; the handle's header and `bytes` (at most Linux's largest
        // handle) and the mount id are checked guest memory.
        unsafe {
            self.sys(
                libc::SYS_name_to_handle_at,
                &[at.dirfd as libc::c_long, ptr(at.path.as_ptr()), ptr(h), ptr(m), host_flags],
            )
        }
    }

    pub(super) fn lseek(&self, fd: u64, offset: u64, whence: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        // SAFETY: no pointers.
        unsafe { self.sys(libc::SYS_lseek, &[h.raw() as libc::c_long, offset as libc::c_long, uint(whence)]) }
    }

    /// faccessat (flags None) or faccessat2.
    pub(super) fn faccessat(&self, g: Guest, dirfd: u64, path: u64, mode: u64, flags: Option<u64>) -> SysResult<i64> {
        let flags = flags.map(int);
        // Linux refuses a mode beyond R_OK | W_OK | X_OK and an unknown flag before the path.
        let known = (libc::AT_EACCESS | libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH) as libc::c_long;
        if int(mode) & !7 != 0 || flags.is_some_and(|f| f & !known != 0) {
            return Err(Errno::EINVAL);
        }
        let check = || {
            let at = self.path_at(g, dirfd, path, follows(flags.unwrap_or(0)))?;
            let args = |f| [at.dirfd as libc::c_long, ptr(at.path.as_ptr()), int(mode), f];
            let with_flags = at.at_flags(flags.unwrap_or(0));
            if flags.is_none() && with_flags == 0 {
                // SAFETY: a host C string.
                return unsafe { self.sys(libc::SYS_faccessat, &args(0)) };
            }
            // SAFETY: a host C string.
            match unsafe { self.sys(libc::SYS_faccessat2, &args(with_flags)) } {
                // A host without faccessat2 (before Linux 5.8): the 3-argument form.
                Err(Errno::ENOSYS) if flags.is_none() => unsafe { self.sys(libc::SYS_faccessat, &args(0)) },
                r => r,
            }
        };
        // The whole walk with the real ids, unless AT_EACCESS asks for the effective ones.
        if flags.unwrap_or(0) & libc::AT_EACCESS as libc::c_long != 0 {
            check()
        } else {
            super::real_ids::as_real_ids(check)
        }
    }

    /// getcwd: the length written, NUL included (the system call's answer, not libc's).
    pub(super) fn getcwd(&self, g: Guest, buf: u64, size: u64) -> SysResult<i64> {
        if let Some(named) = self.cwd_vm.lock().unwrap().clone() {
            let mut text = named.to_vec();
            text.push(0);
            if text.len() as u64 > size {
                return Err(Errno::ERANGE);
            }
            g.write_bytes(buf, &text)?;
            return Ok(text.len() as i64);
        }
        let mut local = vec![0u8; libc::PATH_MAX as usize];
        // SAFETY: `local` is PATH_MAX bytes.
        let n = unsafe { self.sys(libc::SYS_getcwd, &[ptr(local.as_mut_ptr()), local.len() as libc::c_long])? };
        if n as u64 > size {
            return Err(Errno::ERANGE);
        }
        g.write_bytes(buf, &local[..n as usize])?;
        Ok(n)
    }

    /// After a change of directory: whether relative paths need checking, and the name the
    /// program gave a directory in the VM's CPU or node tree (`cwd_vm`).
    fn note_cwd(&self, named: Option<std::sync::Arc<[u8]>>) {
        self.cwd_special.store(paths::cwd_is_special(), Ordering::Relaxed);
        *self.cwd_vm.lock().unwrap() = named;
    }

    /// chdir: the directory the walk found is opened (O_PATH) and entered with fchdir, so the
    /// working directory is the object that was checked.
    pub(super) fn chdir(&self, g: Guest, path: u64) -> SysResult<i64> {
        let at = self.path(g, path, true)?;
        let flags = at.open_flags((libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) as libc::c_long);
        // SAFETY: a host C string.
        let fd = unsafe { self.sys(libc::SYS_openat, &[at.dirfd as libc::c_long, ptr(at.path.as_ptr()), flags])? };
        let dir = std::sync::Arc::new(HostFd::owned(fd as i32, false).named(at.vm_path.clone()));
        if let Some(r) = self.child_chdir(&dir) {
            return r;
        }
        // SAFETY: no pointers.
        let r =
            self.change_cwd(Some(dir.clone()), || unsafe { self.sys(libc::SYS_fchdir, &[dir.raw() as libc::c_long]) });
        if r.is_ok() {
            self.note_cwd(at.vm_path.clone());
        }
        r
    }

    pub(super) fn fchdir(&self, fd: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        if let Some(r) = self.child_chdir(&h) {
            return r;
        }
        // SAFETY: no pointers. The program's descriptor is held, not reopened: it stays open
        // (as the host's own working directory reference does) if the program closes it.
        let r = self.change_cwd(Some(h.clone()), || unsafe { self.sys(libc::SYS_fchdir, &[h.raw() as libc::c_long]) });
        if r.is_ok() {
            self.note_cwd(h.vm_path().map(Into::into));
        }
        r
    }

    pub(super) fn mkdirat(&self, g: Guest, dirfd: u64, path: u64, mode: u64) -> SysResult<i64> {
        let at = self.path_at_entry(g, dirfd, path)?;
        // SAFETY: a host C string.
        unsafe { self.sys(libc::SYS_mkdirat, &[at.dirfd as libc::c_long, ptr(at.path.as_ptr()), uint(mode)]) }
    }

    /// mknodat (and mknod): a FIFO, regular file or socket node where the walk allows (the
    /// host decides on device nodes, with `hrt`'s privileges, and the sandbox's rules).
    pub(super) fn mknodat(&self, g: Guest, dirfd: u64, path: u64, mode: u64, dev: u64) -> SysResult<i64> {
        // Linux checks the type (of a umode_t) before the path: a directory is EPERM, a type
        // it does not know EINVAL.
        match mode as u16 as u32 & libc::S_IFMT {
            0 | libc::S_IFREG | libc::S_IFCHR | libc::S_IFBLK | libc::S_IFIFO | libc::S_IFSOCK => {}
            libc::S_IFDIR => return Err(Errno::EPERM),
            _ => return Err(Errno::EINVAL),
        }
        let at = self.path_at_entry(g, dirfd, path)?;
        // SAFETY: a host C string.
        unsafe {
            self.sys(libc::SYS_mknodat, &[at.dirfd as libc::c_long, ptr(at.path.as_ptr()), uint(mode), uint(dev)])
        }
    }

    pub(super) fn unlinkat(&self, g: Guest, dirfd: u64, path: u64, flags: u64) -> SysResult<i64> {
        // Linux refuses unknown flags before it looks at the path.
        if flags & !(libc::AT_REMOVEDIR as u64) != 0 {
            return Err(Errno::EINVAL);
        }
        let at = self.path_at_entry(g, dirfd, path)?;
        // The root itself (a path of slashes only) has no entry to remove: Linux says EBUSY
        // (the walk's entry for it, ".", would be EINVAL).
        let root = |p: &[u8]| !p.is_empty() && p.iter().all(|&b| b == b'/');
        if flags & libc::AT_REMOVEDIR as u64 != 0 && root(g.read_path(path)?.to_bytes()) {
            return Err(Errno::EBUSY);
        }
        // SAFETY: a host C string.
        unsafe { self.sys(libc::SYS_unlinkat, &[at.dirfd as libc::c_long, ptr(at.path.as_ptr()), int(flags)]) }
    }

    /// renameat (flags None) or renameat2.
    pub(super) fn renameat(
        &self,
        g: Guest,
        olddir: u64,
        old: u64,
        newdir: u64,
        new: u64,
        flags: Option<u64>,
    ) -> SysResult<i64> {
        let nr = if flags.is_some() { libc::SYS_renameat2 } else { libc::SYS_renameat };
        // Linux's flag checks come before the paths: an unknown flag, or EXCHANGE with
        // NOREPLACE or WHITEOUT, is EINVAL.
        let f = flags.unwrap_or(0) as u32;
        let (noreplace, exchange, whiteout) = (libc::RENAME_NOREPLACE, libc::RENAME_EXCHANGE, libc::RENAME_WHITEOUT);
        if f & !(noreplace | exchange | whiteout) != 0 || f & exchange != 0 && f & (noreplace | whiteout) != 0 {
            return Err(Errno::EINVAL);
        }
        self.two_paths(g, nr, (olddir, old, None), (newdir, new), flags.map_or(0, uint))
    }

    /// A host call of the form `nr(olddirfd, oldpath, newdirfd, newpath, last)`; the new path
    /// names a directory entry, the old one too (rename: `old.2` None) or an object looked up
    /// (link: whether a link there is followed).
    fn two_paths(
        &self,
        g: Guest,
        nr: libc::c_long,
        old: (u64, u64, Option<bool>),
        new: (u64, u64),
        last: libc::c_long,
    ) -> SysResult<i64> {
        let from = match old.2 {
            None => self.path_at_entry(g, old.0, old.1)?,
            Some(follow) => {
                let from = self.path_at(g, old.0, old.1, follow)?;
                // link looks the old object up whole before it walks the new path (a missing
                // old name is ENOENT even where the new path's walk would fail): ask the host
                // the same question first. AT_EMPTY_PATH is the call's own (`last`).
                let mut flags = if follow { 0 } else { libc::AT_SYMLINK_NOFOLLOW };
                flags |= last as i32 & libc::AT_EMPTY_PATH;
                let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
                // SAFETY: a host C string and a host struct stat.
                unsafe {
                    self.sys(
                        libc::SYS_newfstatat,
                        &[
                            from.dirfd as libc::c_long,
                            ptr(from.path.as_ptr()),
                            ptr(st.as_mut_ptr()),
                            flags as libc::c_long,
                        ],
                    )?
                };
                from
            }
        };
        let to = match self.path_at_entry(g, new.0, new.1) {
            Ok(to) => to,
            // Linux walks to the old name's directory before the new name, and the walk here
            // leaves some of that to the host (an old descriptor that is no directory: ENOTDIR).
            // For a rename, the host is asked with an empty new name, which it refuses (ENOENT)
            // only after the old walk. (link looked the old object up above.)
            Err(e) if old.2.is_none() => {
                let (cwd, empty) = (libc::AT_FDCWD as libc::c_long, ptr(c"".as_ptr()));
                // SAFETY: host C strings; an empty new name is never renamed to.
                let r =
                    unsafe { self.sys(nr, &[from.dirfd as libc::c_long, ptr(from.path.as_ptr()), cwd, empty, last]) };
                return Err(match r {
                    Err(first) if first != Errno::ENOENT => first,
                    _ => e,
                });
            }
            Err(e) => return Err(e),
        };
        let args = [
            from.dirfd as libc::c_long,
            ptr(from.path.as_ptr()),
            to.dirfd as libc::c_long,
            ptr(to.path.as_ptr()),
            last,
        ];
        // SAFETY: the paths are host C strings that live until the call returns.
        unsafe { self.sys(nr, &args) }
    }

    pub(super) fn linkat(&self, g: Guest, olddir: u64, old: u64, newdir: u64, new: u64, flags: u64) -> SysResult<i64> {
        // Linux refuses unknown flags before it looks at either path.
        if flags & !((libc::AT_SYMLINK_FOLLOW | libc::AT_EMPTY_PATH) as u64) != 0 {
            return Err(Errno::EINVAL);
        }
        let follow = int(flags) & libc::AT_SYMLINK_FOLLOW as libc::c_long != 0;
        self.two_paths(g, libc::SYS_linkat, (olddir, old, Some(follow)), (newdir, new), int(flags))
    }

    /// symlinkat: the target is stored as text, never resolved.
    pub(super) fn symlinkat(&self, g: Guest, target: u64, newdir: u64, new: u64) -> SysResult<i64> {
        let target = g.read_path(target)?;
        // An empty body is refused before the new name's walk.
        if target.is_empty() {
            return Err(Errno::ENOENT);
        }
        let to = self.path_at_entry(g, newdir, new)?;
        // SAFETY: host C strings.
        unsafe {
            self.sys(libc::SYS_symlinkat, &[ptr(target.as_ptr()), to.dirfd as libc::c_long, ptr(to.path.as_ptr())])
        }
    }

    /// readlinkat; `/proc/self/exe` answers the program's host path.
    pub(super) fn readlinkat(&self, g: Guest, dirfd: u64, path: u64, buf: u64, size: u64) -> SysResult<i64> {
        let size = int(size);
        if size <= 0 {
            return Err(Errno::EINVAL);
        }
        let at = self.path_at_to_inspect(g, dirfd, path, false)?;
        if at.exe {
            let exe = self.exe();
            let n = exe.len().min(size as usize);
            g.write_bytes(buf, &exe[..n])?;
            return Ok(n as i64);
        }
        if let Some(text) = &at.link_text {
            let n = text.len().min(size as usize);
            g.write_bytes(buf, &text[..n])?;
            return Ok(n as i64);
        }
        let p = g.range_mut(buf, size as u64)?;
        // SAFETY: a host C string and `size` bytes of guest memory.
        unsafe { self.sys(libc::SYS_readlinkat, &[at.dirfd as libc::c_long, ptr(at.path.as_ptr()), ptr(p), size]) }
    }

    pub(super) fn getdents64(&self, g: Guest, fd: u64, buf: u64, count: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        let count = uint(count);
        if count > i32::MAX as libc::c_long {
            // Linux compares each record with the count as an int, negative here, before it
            // writes anything: EINVAL while an entry is left, 0 at the end, wherever the buffer
            // is. A 1-byte host buffer gives the same answer.
            let mut one = 0u8; // the host may write into it
                               // SAFETY: a 1-byte host buffer of ours.
            return unsafe { self.sys(libc::SYS_getdents64, &[h.raw() as libc::c_long, ptr(&raw mut one), 1]) };
        }
        let p = g.range_mut(buf, count as u64)?;
        if let Some(listing) = h.vm_path().and_then(|p| super::synthetic::listing(p, self.cpus)) {
            return super::cpu_dirs::getdents(h.raw(), listing, count as usize, |data| g.write_bytes(buf, data));
        }
        if h.vm_path().is_some_and(super::task_dir::listed) {
            let pid = self.host_pid.parse().unwrap_or(0);
            let entries = || Ok(super::task_dir::entries(&super::task_dir::thread_ids(pid)));
            return super::cpu_dirs::getdents_of(h.raw(), entries, count as usize, |data| g.write_bytes(buf, data));
        }
        if let Some(info) = h.vm_path().and_then(super::fd_dirs::listed) {
            let entries = || Ok(super::fd_dirs::entries(self.fds().numbers().into_iter(), info));
            return super::cpu_dirs::getdents_positioned(h.raw(), entries, count as usize, |data| {
                g.write_bytes(buf, data)
            });
        }
        // SAFETY: `count` bytes of guest memory.
        unsafe { self.sys(libc::SYS_getdents64, &[h.raw() as libc::c_long, ptr(p), count]) }
    }

    /// getdents (the old record, `struct linux_dirent`, which old C libraries' readdir asks
    /// for): getdents64's records rewritten in place, as both records of a name are the same
    /// length: the name one byte earlier, the type in the record's last byte.
    pub(super) fn getdents(&self, g: Guest, fd: u64, buf: u64, count: u64) -> SysResult<i64> {
        const NAME: usize = 19;
        let n = self.getdents64(g, fd, buf, count)?;
        if n <= 0 {
            return Ok(n);
        }
        let mut data = g.read_bytes(buf, n as u64)?;
        let mut at = 0;
        while at + NAME < data.len() {
            let reclen = u16::from_ne_bytes([data[at + 16], data[at + 17]]) as usize;
            if reclen <= NAME || at + reclen > data.len() {
                break;
            }
            let kind = data[at + NAME - 1];
            data.copy_within(at + NAME..at + reclen, at + NAME - 1);
            data[at + reclen - 1] = kind;
            at += reclen;
        }
        g.write_bytes(buf, &data)?;
        Ok(n)
    }

    /// ETXTBSY if `at` (which `st` describes) is the program's executable or interpreter and
    /// the caller may write it: Linux refuses a write access to a file it runs after the
    /// permission check (EACCES first), and the host, which does not run it, would allow it.
    fn refuse_running_image(&self, at: &super::paths::At, st: &libc::stat) -> SysResult<()> {
        if st.st_mode & libc::S_IFMT != libc::S_IFREG || !self.running_image(st) {
            return Ok(());
        }
        // SAFETY: a C string and plain flags; faccessat reads only.
        match unsafe { libc::faccessat(at.dirfd, at.path.as_ptr(), libc::W_OK, libc::AT_EACCESS) } {
            0 => Err(Errno(libc::ETXTBSY)),
            _ => Ok(()),
        }
    }

    pub(super) fn truncate(&self, g: Guest, path: u64, len: u64) -> SysResult<i64> {
        // A negative length is EINVAL before the path is looked up, as on Linux.
        if (len as i64) < 0 {
            return Err(Errno::EINVAL);
        }
        let at = self.path(g, path, true)?;
        if let Ok(st) = stat_at(at.dirfd, &at.path, at.at_flags(0)) {
            self.refuse_running_image(&at, &st)?;
        }
        // truncate takes no directory fd: name the walk's directory through our /proc/self/fd.
        let full = if at.dirfd == libc::AT_FDCWD || at.path.as_bytes().starts_with(b"/") {
            at.path.clone()
        } else {
            let mut p = format!("/proc/self/fd/{}/", at.dirfd).into_bytes();
            p.extend_from_slice(at.path.as_bytes());
            std::ffi::CString::new(p).map_err(|_| Errno::EINVAL)?
        };
        // SAFETY: a host C string.
        unsafe { self.sys(libc::SYS_truncate, &[ptr(full.as_ptr()), len as libc::c_long]) }
    }

    pub(super) fn ftruncate(&self, fd: u64, len: u64) -> SysResult<i64> {
        // A negative length is EINVAL before the descriptor is looked at, as on Linux.
        if (len as i64) < 0 {
            return Err(Errno::EINVAL);
        }
        let h = self.fds().get(fd)?;
        // SAFETY: no pointers.
        unsafe { self.sys(libc::SYS_ftruncate, &[h.raw() as libc::c_long, len as libc::c_long]) }
    }

    /// A call whose only argument is a descriptor (fsync, fdatasync).
    pub(super) fn fd_only(&self, nr: libc::c_long, fd: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        // SAFETY: no pointers.
        unsafe { self.sys(nr, &[h.raw() as libc::c_long]) }
    }

    /// flock: the lock belongs to the host's open file description, which the program's
    /// descriptor and its duplicates (and a forked child's) share, as on Linux; other processes
    /// of the host see it.
    pub(super) fn flock(&self, fd: u64, op: u64) -> SysResult<i64> {
        const LOCK_MAND: u32 = 32;
        // Before the descriptor, Linux ignores a LOCK_MAND request (0) and refuses an operation
        // other than LOCK_SH, LOCK_EX or LOCK_UN (with or without LOCK_NB).
        let op32 = op as u32;
        if op32 & LOCK_MAND != 0 {
            return Ok(0);
        }
        if !matches!(op32 & !(libc::LOCK_NB as u32), 1 | 2 | 8) {
            return Err(Errno::EINVAL);
        }
        let h = self.fds().get(fd)?;
        // SAFETY: no pointers.
        unsafe { self.sys(libc::SYS_flock, &[h.raw() as libc::c_long, uint(op)]) }
    }

    pub(super) fn fchmod(&self, fd: u64, mode: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        // SAFETY: no pointers.
        unsafe { self.sys(libc::SYS_fchmod, &[h.raw() as libc::c_long, uint(mode)]) }
    }

    pub(super) fn fchmodat(&self, g: Guest, dirfd: u64, path: u64, mode: u64) -> SysResult<i64> {
        let at = self.path_at(g, dirfd, path, true)?;
        // SAFETY: a host C string.
        unsafe { self.sys(libc::SYS_fchmodat, &[at.dirfd as libc::c_long, ptr(at.path.as_ptr()), uint(mode)]) }
    }

    /// fchmodat2(dirfd, path, mode, flags) (Linux 6.6; glibc 2.39's fchmodat with flags):
    /// AT_SYMLINK_NOFOLLOW changes a link's own mode (the host's file systems refuse that with
    /// EOPNOTSUPP, as Linux's do), AT_EMPTY_PATH the descriptor's file; other flags EINVAL.
    pub(super) fn fchmodat2(&self, g: Guest, dirfd: u64, path: u64, mode: u64, flags: u64) -> SysResult<i64> {
        let (nofollow, empty) = (libc::AT_SYMLINK_NOFOLLOW as u64, libc::AT_EMPTY_PATH as u64);
        if flags & !(nofollow | empty) != 0 {
            return Err(Errno::EINVAL);
        }
        let at = self.path_at(g, dirfd, path, flags & nofollow == 0)?;
        // The walk checked the last name: never follow a link swapped in since.
        let flags = if at.nofollow { flags | nofollow } else { flags };
        let args = [at.dirfd as libc::c_long, ptr(at.path.as_ptr()), uint(mode), int(flags)];
        // SAFETY: a host C string, owned by `at`.
        unsafe { self.sys(libc::SYS_fchmodat2, &args) }
    }

    /// utimensat: a NULL path means the descriptor itself, NULL times means now.
    pub(super) fn utimensat(&self, g: Guest, dirfd: u64, path: u64, times: u64, flags: u64) -> SysResult<i64> {
        let t = if times == 0 { std::ptr::null_mut() } else { g.range(times, TIMES_SIZE)? };
        if times != 0 {
            // Both UTIME_OMIT: nothing to do, and Linux does not even look at the path.
            let [_, a_ns, _, m_ns]: [i64; 4] = g.read(times)?;
            if a_ns == libc::UTIME_OMIT && m_ns == libc::UTIME_OMIT {
                return Ok(0);
            }
        }
        self.utimensat_with(g, dirfd, path, t, flags)
    }

    /// futimesat(dirfd, path, times) and utimes(path, times) (`dirfd` AT_FDCWD): two
    /// `struct timeval`s (microseconds; 0 to 999,999, else EINVAL) or NULL for now, made as
    /// utimensat with the same times.
    pub(super) fn futimesat(&self, g: Guest, dirfd: u64, path: u64, times: u64) -> SysResult<i64> {
        if times == 0 {
            return self.utimensat_with(g, dirfd, path, std::ptr::null_mut(), 0);
        }
        let [a_s, a_us, m_s, m_us]: [i64; 4] = g.read(times)?;
        if !(0..1_000_000).contains(&a_us) || !(0..1_000_000).contains(&m_us) {
            return Err(Errno::EINVAL);
        }
        let mut ts: [i64; 4] = [a_s, a_us * 1000, m_s, m_us * 1000];
        self.utimensat_with(g, dirfd, path, ts.as_mut_ptr() as *mut u8, 0)
    }

    /// utime(path, times): a `struct utimbuf` (access and modification time in seconds) or
    /// NULL for now, made as utimensat.
    pub(super) fn utime(&self, g: Guest, path: u64, times: u64) -> SysResult<i64> {
        let cwd = libc::AT_FDCWD as u32 as u64;
        if times == 0 {
            return self.utimensat_with(g, cwd, path, std::ptr::null_mut(), 0);
        }
        let [a_s, m_s]: [i64; 2] = g.read(times)?;
        let mut ts: [i64; 4] = [a_s, 0, m_s, 0];
        self.utimensat_with(g, cwd, path, ts.as_mut_ptr() as *mut u8, 0)
    }

    /// utimensat with the two timespecs at `t` (guest memory already checked, a buffer of the
    /// caller's, or NULL).
    fn utimensat_with(&self, g: Guest, dirfd: u64, path: u64, t: *mut u8, flags: u64) -> SysResult<i64> {
        // Linux's flag checks come before the descriptor or the path: a descriptor's own times
        // (a NULL path) take no flag, a path AT_SYMLINK_NOFOLLOW and AT_EMPTY_PATH.
        let allowed = match path == 0 && int(dirfd) != libc::AT_FDCWD as libc::c_long {
            true => 0,
            false => (libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH) as libc::c_long,
        };
        if int(flags) & !allowed != 0 {
            return Err(Errno::EINVAL);
        }
        let (dfd, path_ptr, _at, _hold) = if path == 0 {
            let (dfd, hold) = self.dirfd(dirfd)?;
            (dfd, std::ptr::null(), None, hold)
        } else {
            let at = self.path_at(g, dirfd, path, follows(int(flags)))?;
            (at.dirfd, at.path.as_ptr(), Some(at), None)
        };
        let flags = _at.as_ref().map_or(int(flags), |a| a.at_flags(int(flags)));
        // SAFETY: a host C string (owned by `_at`, alive until the end) or NULL, and NULL or two
        // timespecs (in guest memory or the caller's buffer).
        unsafe { self.sys(libc::SYS_utimensat, &[dfd as libc::c_long, ptr(path_ptr), ptr(t), flags]) }
    }
}

/// Linux's checks of openat's flags (build_open_flags): O_CREAT with O_DIRECTORY is EINVAL,
/// and so is O_TMPFILE without O_DIRECTORY or without write access; O_PATH keeps only
/// O_DIRECTORY, O_NOFOLLOW and O_CLOEXEC of the rest.
fn check_open_flags(flags: libc::c_long) -> SysResult<()> {
    const TMPFILE_ONLY: libc::c_long = libc::O_TMPFILE as libc::c_long & !(libc::O_DIRECTORY as libc::c_long);
    let (dir, creat) = (libc::O_DIRECTORY as libc::c_long, libc::O_CREAT as libc::c_long);
    let mut f = flags;
    if f & libc::O_PATH as libc::c_long != 0 {
        f &= (libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) as libc::c_long;
    }
    let read_only = f & libc::O_ACCMODE as libc::c_long == libc::O_RDONLY as libc::c_long;
    if f & (dir | creat) == dir | creat || f & TMPFILE_ONLY != 0 && (f & dir == 0 || read_only) {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// fstatat(dir, path, flags) on the host.
fn stat_at(dir: i32, path: &std::ffi::CStr, flags: libc::c_long) -> SysResult<libc::stat> {
    // SAFETY: fstatat writes the struct we pass; a C string and plain flags.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstatat(dir, path.as_ptr(), &mut st, flags as libc::c_int) } != 0 {
        return Err(Errno::last());
    }
    Ok(st)
}

/// Whether opening what `st` describes never waits for another party: a regular file, a
/// directory, a memory device (/dev/null, zero, full, random, urandom: major 1).
fn opens_at_once(st: &libc::stat) -> bool {
    match st.st_mode & libc::S_IFMT {
        libc::S_IFREG | libc::S_IFDIR => true,
        libc::S_IFCHR => libc::major(st.st_rdev) == 1,
        _ => false,
    }
}

/// The mode openat2 takes for an open with `flags` and `mode` as openat takes them (0 unless
/// the open may create), or None where openat2 would refuse what openat accepts.
fn openat2_takes(flags: libc::c_long, mode: u64) -> Option<u64> {
    const VALID: libc::c_long = (libc::O_ACCMODE
        | libc::O_CREAT
        | libc::O_EXCL
        | libc::O_NOCTTY
        | libc::O_TRUNC
        | libc::O_APPEND
        | libc::O_NONBLOCK
        | libc::O_SYNC
        | libc::O_DSYNC
        | libc::O_ASYNC
        | libc::O_DIRECT
        | libc::O_LARGEFILE
        | libc::O_DIRECTORY
        | libc::O_NOFOLLOW
        | libc::O_NOATIME
        | libc::O_CLOEXEC
        | libc::O_TMPFILE) as libc::c_long;
    let flags = flags as u32 as libc::c_long;
    if flags & !VALID != 0 || flags & libc::O_PATH as libc::c_long != 0 {
        return None;
    }
    let creates = flags & libc::O_CREAT as libc::c_long != 0
        || flags & libc::O_TMPFILE as libc::c_long == libc::O_TMPFILE as libc::c_long;
    match creates {
        false => Some(0),
        true if mode & !0o7777 == 0 => Some(mode),
        true => None,
    }
}
