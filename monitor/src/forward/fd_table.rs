//! The guest's file descriptors: a table the monitor owns, from guest fd numbers to host
//! descriptors. The guest names only what is in this table, so descriptors the monitor opened for
//! itself (KVM, memory) are never reachable.
//!
//! Guest fds that are duplicates of each other (dup, dup2, F_DUPFD) are host duplicates too:
//! each has its own host descriptor, all sharing one open file description, as on Linux. So
//! what Linux keys by descriptor number sees distinct numbers on the host as well: two of them
//! can be added to one epoll instance (each with its own data word). Each host descriptor is
//! held through an `Arc`: a call in progress holds its own reference, so a concurrent close()
//! from another guest thread never lets the host number be reused under it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::errno::{Errno, SysResult};
use super::kept_files::KeptFiles;

/// One host descriptor.
#[derive(Debug)]
pub struct HostFd {
    fd: i32,
    /// Whether the forwarder opened it (and closes it). The host's standard descriptors 0/1/2
    /// are the monitor's too (its own messages go to stderr): they are only borrowed.
    owned: bool,
    /// Opened under /proc or /dev: relative paths below it are checked (see paths.rs).
    special: bool,
    /// What kind of file it is, as far as waiting goes (found once: a descriptor's file type
    /// cannot change while it is open).
    kind: std::sync::OnceLock<FdKind>,
    /// For a file under /sys/devices/system/cpu or .../node, its path as the program named it
    /// (normalized): paths relative to it and its listing are the VM's (synthetic.rs,
    /// cpu_dirs.rs), also when the host file is a stand-in.
    vm_path: Option<Arc<[u8]>>,
    /// Whether it is on procfs (found once: an open file's file system never changes), which
    /// decides how paths relative to it are walked (walk.rs).
    procfs: std::sync::OnceLock<bool>,
    /// Status flags the forwarder's open added that the program did not ask for (O_NOFOLLOW,
    /// where the walk found no link at the last name): F_GETFL and fdinfo leave them out.
    hidden: i32,
    /// Contents the monitor made (the program's /proc/self/status, ...): like the /proc file it
    /// stands for, it cannot be mapped (ENODEV).
    synthesized: bool,
    /// The eventfd under one of the program's signalfds (`process::SIGNALFD_EVENTFD`).
    signalfd: bool,
    /// For a pipe or FIFO whose file does not take RWF_NOWAIT (one opened by a path: a FIFO,
    /// `/dev/fd/N` of a pipe, bash's process substitution), a second open file description of
    /// it, read-only and non-blocking, made once (`nonblocking_reader`).
    nowait_reader: std::sync::OnceLock<Option<std::os::fd::OwnedFd>>,
    /// For a socket, its SO_DOMAIN and SO_TYPE (found once: they never change for a socket).
    /// Every `recv` asked for the type twice, ~1,300 cycles each through the filter.
    socket_ids: std::sync::OnceLock<(i32, i32)>,
    /// For a socket, its SO_RCVLOWAT as last asked, with the count of the program's SO_RCVLOWAT
    /// changes it was asked at (`rcvlowat`).
    rcvlowat: std::sync::atomic::AtomicU64,
}

/// How long I/O on a descriptor may wait, by its file type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FdKind {
    /// Regular file, directory, block device, memory character device (/dev/null, zero, full,
    /// random, urandom): I/O never waits for another party.
    Quick,
    /// A terminal: writes finish (unless output is stopped with ^S), reads wait for the user.
    Terminal,
    /// A pipe or FIFO: waits for the other end; `RWF_NOWAIT` tries without waiting.
    Pipe,
    /// A socket: as a pipe, but a non-waiting write may be partial.
    Socket,
    /// An epoll instance (one the program created: the forwarder knows it without asking).
    /// Reading or writing it fails at once; waiting on it is epoll_wait's business.
    Epoll,
    /// Anything else: may wait.
    Other,
}

impl HostFd {
    /// A descriptor the forwarder opened; closed when dropped.
    pub fn owned(fd: i32, special: bool) -> HostFd {
        HostFd {
            fd,
            owned: true,
            special,
            kind: std::sync::OnceLock::new(),
            vm_path: None,
            procfs: std::sync::OnceLock::new(),
            hidden: 0,
            synthesized: false,
            signalfd: false,
            nowait_reader: std::sync::OnceLock::new(),
            socket_ids: std::sync::OnceLock::new(),
            rcvlowat: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// A descriptor the forwarder opened whose kind it knows; closed when dropped.
    pub fn with_kind(fd: i32, kind: FdKind) -> HostFd {
        HostFd {
            fd,
            owned: true,
            special: false,
            kind: std::sync::OnceLock::from(kind),
            vm_path: None,
            procfs: std::sync::OnceLock::new(),
            hidden: 0,
            synthesized: false,
            signalfd: false,
            nowait_reader: std::sync::OnceLock::new(),
            socket_ids: std::sync::OnceLock::new(),
            rcvlowat: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// One of the host's standard descriptors, never closed by the forwarder.
    pub fn borrowed(fd: i32) -> HostFd {
        HostFd {
            fd,
            owned: false,
            special: false,
            kind: std::sync::OnceLock::new(),
            vm_path: None,
            procfs: std::sync::OnceLock::new(),
            hidden: 0,
            synthesized: false,
            signalfd: false,
            nowait_reader: std::sync::OnceLock::new(),
            socket_ids: std::sync::OnceLock::new(),
            rcvlowat: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The socket's (SO_DOMAIN, SO_TYPE), found by `find` on first use.
    pub fn socket_ids(&self, find: impl FnOnce() -> Option<(i32, i32)>) -> Option<(i32, i32)> {
        if let Some(ids) = self.socket_ids.get() {
            return Some(*ids);
        }
        let ids = find()?;
        Some(*self.socket_ids.get_or_init(|| ids))
    }

    /// The socket's SO_RCVLOWAT, asked of the host by `ask` unless it was asked since the
    /// program last changed any socket's (`changes`, which only grows: a change through
    /// another descriptor of the same socket, a `dup`, is seen too).
    pub fn rcvlowat(&self, changes: u32, ask: impl FnOnce() -> Option<i32>) -> Option<i32> {
        use std::sync::atomic::Ordering;
        let seen = self.rcvlowat.load(Ordering::Acquire);
        // High half: 1 + the count of changes it was asked at (0: never asked).
        if seen >> 32 == changes as u64 + 1 {
            return Some(seen as u32 as i32);
        }
        let v = ask()?;
        self.rcvlowat.store((changes as u64 + 1) << 32 | v as u32 as u64, Ordering::Release);
        Some(v)
    }

    /// A read-only, non-blocking second open file description of this pipe or FIFO (None if it
    /// cannot be opened): reads through it take what the pipe holds or answer EAGAIN, where
    /// `preadv2` with RWF_NOWAIT is EOPNOTSUPP (a FIFO opened by a path). It counts as one more
    /// reader of the pipe only while this descriptor is open.
    pub fn nonblocking_reader(&self) -> Option<i32> {
        use std::os::fd::{AsRawFd, FromRawFd};
        self.nowait_reader
            .get_or_init(|| {
                let path = std::ffi::CString::new(format!("/proc/self/fd/{}", self.fd)).ok()?;
                // SAFETY: a NUL-terminated path; the descriptor returned is ours.
                let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC) };
                // SAFETY: `fd` was just opened and is owned by nobody else.
                (fd >= 0).then(|| unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
            })
            .as_ref()
            .map(|f| f.as_raw_fd())
    }

    pub fn raw(&self) -> i32 {
        self.fd
    }

    /// Marks the eventfd under a signalfd (see `signalfd`).
    pub fn for_signalfd(mut self) -> HostFd {
        self.signalfd = true;
        self
    }

    /// Whether it stands for a signalfd: never writable, its link `anon_inode:[signalfd]`.
    pub fn is_signalfd(&self) -> bool {
        self.signalfd
    }

    pub fn special(&self) -> bool {
        self.special
    }

    /// This descriptor, with the path the program named it by (see `vm_path`).
    pub fn named(mut self, vm_path: Option<Arc<[u8]>>) -> HostFd {
        self.vm_path = vm_path;
        self
    }

    /// This descriptor, whose status flags `flags` the program did not ask for (see `hidden`).
    pub fn hiding(mut self, flags: i32) -> HostFd {
        self.hidden = flags;
        self
    }

    /// Whether it was opened with O_PATH: Linux's calls that act on an open file (ioctl, the
    /// socket calls) do not look behind such a descriptor (EBADF). Asked of the host, only on
    /// the way to an error.
    pub fn path_only(&self) -> bool {
        // SAFETY: F_GETFL only reads the descriptor's flags.
        let flags = unsafe { libc::fcntl(self.fd, libc::F_GETFL) };
        flags >= 0 && flags & libc::O_PATH != 0
    }

    /// The status flags the program did not ask for (F_GETFL and fdinfo leave them out).
    pub fn hidden(&self) -> i32 {
        self.hidden
    }

    /// This descriptor, a file of contents the monitor made (see `synthesized`).
    pub fn synthesized(mut self) -> HostFd {
        self.synthesized = true;
        self
    }

    /// Whether mmap may map the file: not a /proc file, nor contents the monitor made for one.
    pub fn mappable(&self) -> bool {
        !self.synthesized && !self.on_procfs()
    }

    /// This descriptor, whose kind the caller found out (from an fstat of it).
    pub fn known_kind(self, kind: FdKind) -> HostFd {
        let _ = self.kind.set(kind);
        self
    }

    pub fn vm_path(&self) -> Option<&[u8]> {
        self.vm_path.as_deref()
    }

    /// Whether the descriptor is on procfs.
    pub fn on_procfs(&self) -> bool {
        *self.procfs.get_or_init(|| super::walk::on_procfs(self.fd))
    }

    /// The descriptor's kind as far as waiting goes.
    pub fn kind(&self) -> FdKind {
        *self.kind.get_or_init(|| {
            // SAFETY: fstat writes into the struct we pass; the descriptor is ours while `self` lives.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: as above.
            if unsafe { libc::fstat(self.fd, &mut st) } != 0 {
                return FdKind::Other;
            }
            match st.st_mode & libc::S_IFMT {
                libc::S_IFREG | libc::S_IFDIR | libc::S_IFBLK => FdKind::Quick,
                libc::S_IFCHR if libc::major(st.st_rdev) == 1 => FdKind::Quick,
                // SAFETY: isatty only queries the descriptor.
                libc::S_IFCHR if unsafe { libc::isatty(self.fd) } == 1 => FdKind::Terminal,
                libc::S_IFIFO => FdKind::Pipe,
                libc::S_IFSOCK => FdKind::Socket,
                // An epoll instance the program did not create here (received in an
                // SCM_RIGHTS message, taken with pidfd_getfd): its anonymous inode says so.
                _ if std::fs::read_link(format!("/proc/self/fd/{}", self.fd))
                    .is_ok_and(|l| l.as_os_str() == "anon_inode:[eventpoll]") =>
                {
                    FdKind::Epoll
                }
                _ => FdKind::Other,
            }
        })
    }

    /// A new host descriptor for the same open file description (the host's `F_DUPFD_CLOEXEC`),
    /// owned, of the same kind; for a guest dup.
    pub fn duplicate(&self) -> SysResult<HostFd> {
        // SAFETY: F_DUPFD_CLOEXEC takes an integer and creates a descriptor, owned below.
        let fd = unsafe { libc::fcntl(self.fd, libc::F_DUPFD_CLOEXEC, 0) };
        if fd < 0 {
            return Err(Errno::last());
        }
        Ok(HostFd {
            fd,
            owned: true,
            special: self.special,
            kind: self.kind.clone(),
            vm_path: self.vm_path.clone(),
            procfs: self.procfs.clone(),
            hidden: self.hidden,
            synthesized: self.synthesized,
            signalfd: self.signalfd,
            nowait_reader: std::sync::OnceLock::new(),
            socket_ids: self.socket_ids.clone(),
            rcvlowat: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Closes the host descriptor now and reports the host's answer (close can report a write
    /// error). The descriptor is gone whatever the answer, as on Linux.
    pub fn close(mut self) -> SysResult<i64> {
        let (fd, owned) = (self.fd, self.owned);
        // The second reader of a pipe goes with it (a writer then sees no reader, as on Linux).
        drop(self.nowait_reader.take());
        std::mem::forget(self);
        if !owned {
            return Ok(0);
        }
        // SAFETY: closing a descriptor this value owned; nothing else refers to it.
        if unsafe { libc::close(fd) } < 0 {
            let e = Errno::last();
            // EINTR: the descriptor is closed anyway (Linux semantics); do not report it.
            return if e == Errno::EINTR { Ok(0) } else { Err(e) };
        }
        Ok(0)
    }
}

impl Drop for HostFd {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: this value owns the descriptor.
            unsafe { libc::close(self.fd) };
        }
    }
}

/// One guest fd: its host descriptor and its own FD_CLOEXEC flag.
pub struct Slot {
    pub host: Arc<HostFd>,
    pub cloexec: bool,
}

impl Slot {
    /// Drops this guest fd's reference; closes the host descriptor if it was the last one and
    /// returns the host's answer.
    pub fn close(self) -> SysResult<i64> {
        match Arc::into_inner(self.host) {
            Some(h) => h.close(),
            None => Ok(0),
        }
    }
}

/// How many descriptors a table may hold open at once: what the monitor's own hard limit
/// leaves it (`procs::table_limit`). The program's limit bounds the numbers of new descriptors
/// alone, as Linux's RLIMIT_NOFILE does: with fds 3-29 open, 8 closed and the soft limit
/// lowered to 20, an open gets 8 (it was EMFILE, 29 open counting against 20).
fn open_limit() -> usize {
    super::procs::table_limit(u64::MAX) as usize
}

pub struct FdTable {
    slots: Mutex<Vec<Option<Slot>>>,
    /// Guest fds are below this (the descriptor limit the guest sees: EMFILE, EBADF, EINVAL):
    /// the program's RLIMIT_NOFILE soft limit, which it may change.
    limit: AtomicUsize,
    /// How many may be open at once (`procs::table_limit`: what `hrt`'s own descriptors leave
    /// below the host's limit).
    open_limit: AtomicUsize,
    /// Files closed here that private file mappings still name (kept_files.rs).
    kept: KeptFiles,
    /// The size Linux's table of such a process would have (`max_fds`): it grows with the
    /// highest descriptor ever made and never shrinks. select looks no further (a bit for a
    /// closed descriptor beyond it is ignored, below it EBADF), whatever RLIMIT_NOFILE says.
    table_size: AtomicUsize,
}

/// Linux's first descriptor table (NR_OPEN_DEFAULT).
const FIRST_TABLE_SIZE: usize = 64;

/// The size Linux's `alloc_fdtable` gives a table that must hold descriptor `fd`: whole 1 KiB
/// arrays of pointers (128 descriptors), a power of two of them.
fn table_size_for(fd: usize) -> usize {
    const PER_KIB: usize = 1024 / 8;
    (fd / PER_KIB + 1).next_power_of_two() * PER_KIB
}

impl FdTable {
    pub fn new(limit: usize) -> FdTable {
        FdTable {
            slots: Mutex::new(Vec::new()),
            limit: AtomicUsize::new(limit),
            open_limit: AtomicUsize::new(open_limit()),
            kept: KeptFiles::default(),
            table_size: AtomicUsize::new(FIRST_TABLE_SIZE),
        }
    }

    /// The files kept for the program's private file mappings.
    pub fn kept(&self) -> &KeptFiles {
        &self.kept
    }

    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// How far select looks (`table_size`).
    pub fn table_size(&self) -> usize {
        self.table_size.load(Ordering::Relaxed)
    }

    /// Descriptor `n` is being made: Linux's table would grow to hold it.
    fn grow_to_hold(&self, n: usize) {
        if n >= self.table_size() {
            self.table_size.fetch_max(table_size_for(n), Ordering::Relaxed);
        }
    }

    /// The program set its RLIMIT_NOFILE soft limit: descriptors already at or above it stay
    /// open, new ones must be below it (as on Linux).
    pub fn set_limit(&self, limit: usize) {
        self.limit.store(limit, Ordering::Relaxed);
        self.open_limit.store(open_limit(), Ordering::Relaxed);
    }

    /// Whether `slots` may take one more open descriptor at `n` (EMFILE if not): always while
    /// the table is no longer than the open limit; past it, counted.
    fn room_for_one_more(&self, slots: &[Option<Slot>], n: usize) -> bool {
        let open_limit = self.open_limit.load(Ordering::Relaxed);
        if slots.get(n).is_some_and(|s| s.is_some()) || slots.len().max(n + 1) <= open_limit {
            return true;
        }
        slots.iter().filter(|s| s.is_some()).count() < open_limit
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Option<Slot>>> {
        // A panic elsewhere while holding the lock leaves the table consistent (every update is
        // one assignment): keep going.
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Guest fd number from a system-call argument (Linux takes the low 32 bits: `unsigned int`
    /// or `int`); negative numbers are EBADF.
    pub fn number(arg: u64) -> SysResult<usize> {
        let n = arg as u32 as i32;
        if n < 0 {
            return Err(Errno::EBADF);
        }
        Ok(n as usize)
    }

    /// The open guest fds, in order.
    pub fn numbers(&self) -> Vec<usize> {
        self.lock().iter().enumerate().filter(|(_, s)| s.is_some()).map(|(n, _)| n).collect()
    }

    /// The host descriptor behind guest fd `arg` (EBADF if none).
    pub fn get(&self, arg: u64) -> SysResult<Arc<HostFd>> {
        let n = Self::number(arg)?;
        let slots = self.lock();
        match slots.get(n) {
            Some(Some(slot)) => Ok(slot.host.clone()),
            _ => Err(Errno::EBADF),
        }
    }

    /// Like `get` for a guest fd already known to be non-negative; None if absent.
    pub fn lookup(&self, n: usize) -> Option<Arc<HostFd>> {
        self.lock().get(n).and_then(|s| s.as_ref()).map(|s| s.host.clone())
    }

    /// Adds `host` at the lowest free guest fd at or above `min` (EMFILE when none is below the
    /// limit; the host descriptor is then released with `host`).
    pub fn insert(&self, host: Arc<HostFd>, cloexec: bool, min: usize) -> SysResult<i64> {
        let mut slots = self.lock();
        let start = min.min(slots.len());
        let free = slots[start..].iter().position(|s| s.is_none()).map(|i| i + start);
        let n = match free {
            Some(n) if n >= min => n,
            _ => slots.len().max(min),
        };
        if n >= self.limit() || !self.room_for_one_more(&slots, n) {
            return Err(Errno::EMFILE);
        }
        if n >= slots.len() {
            slots.resize_with(n + 1, || None);
        }
        self.grow_to_hold(n);
        slots[n] = Some(Slot { host, cloexec });
        Ok(n as i64)
    }

    /// Whether a new descriptor would find a number (what `insert` with no minimum takes).
    pub fn has_room(&self) -> bool {
        let slots = self.lock();
        let n = slots.iter().position(|s| s.is_none()).unwrap_or(slots.len());
        n < self.limit() && self.room_for_one_more(&slots, n)
    }

    /// Adds two new descriptors (a pipe's ends, a socket pair) at the lowest free guest fds; if
    /// the second finds no room, the first is taken out again (EMFILE, both released).
    pub fn insert_pair(&self, a: Arc<HostFd>, b: Arc<HostFd>, cloexec: bool) -> SysResult<(i64, i64)> {
        let ga = self.insert(a, cloexec, 0)?;
        match self.insert(b, cloexec, 0) {
            Ok(gb) => Ok((ga, gb)),
            Err(e) => {
                let _ = self.remove(ga as u64);
                Err(e)
            }
        }
    }

    /// Puts `host` at guest fd `n`, returning what was there (the caller closes it outside the
    /// lock). EBADF if `n` is at or above the limit (dup2/dup3 semantics).
    pub fn replace(&self, n: usize, host: Arc<HostFd>, cloexec: bool) -> SysResult<Option<Slot>> {
        if n >= self.limit() {
            return Err(Errno::EBADF);
        }
        let mut slots = self.lock();
        if !self.room_for_one_more(&slots, n) {
            return Err(Errno::EMFILE);
        }
        if n >= slots.len() {
            slots.resize_with(n + 1, || None);
        }
        self.grow_to_hold(n);
        Ok(slots[n].replace(Slot { host, cloexec }))
    }

    /// Removes guest fd `arg` (EBADF if absent).
    pub fn remove(&self, arg: u64) -> SysResult<Slot> {
        let n = Self::number(arg)?;
        let mut slots = self.lock();
        let slot = slots.get_mut(n).and_then(|s| s.take()).ok_or(Errno::EBADF)?;
        while matches!(slots.last(), Some(None)) {
            slots.pop();
        }
        Ok(slot)
    }

    pub fn cloexec(&self, arg: u64) -> SysResult<bool> {
        let n = Self::number(arg)?;
        match self.lock().get(n) {
            Some(Some(slot)) => Ok(slot.cloexec),
            _ => Err(Errno::EBADF),
        }
    }

    pub fn set_cloexec(&self, arg: u64, on: bool) -> SysResult<()> {
        let n = Self::number(arg)?;
        match self.lock().get_mut(n) {
            Some(Some(slot)) => {
                slot.cloexec = on;
                Ok(())
            }
            _ => Err(Errno::EBADF),
        }
    }

    /// A copy of the table for a new process (vfork): the same host descriptors, shared as a
    /// fork shares open files, with the same FD_CLOEXEC flags.
    pub fn duplicate(&self) -> FdTable {
        self.duplicate_of(&self.lock())
    }

    /// The table's lock without waiting (None: another thread holds it), for the fork thread,
    /// which copies the table again with it held and keeps it across the host fork: no other
    /// thread's call then changes the table between the copy and the memory the child gets
    /// (a descriptor another thread opened meanwhile was open in the child's memory but
    /// neither in its table nor kept by the child's process: EBADF, 1 fork in 6 to 300 of a
    /// program whose threads open and close pipes).
    pub fn try_hold(&self) -> Option<MutexGuard<'_, Vec<Option<Slot>>>> {
        match self.slots.try_lock() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// A copy of this table whose slots are `held` (this table's, under its lock).
    pub fn duplicate_of(&self, held: &[Option<Slot>]) -> FdTable {
        let slots =
            held.iter().map(|s| s.as_ref().map(|s| Slot { host: s.host.clone(), cloexec: s.cloexec })).collect();
        FdTable {
            slots: Mutex::new(slots),
            limit: AtomicUsize::new(self.limit()),
            open_limit: AtomicUsize::new(self.open_limit.load(Ordering::Relaxed)),
            kept: self.kept.mapped(Arc::clone),
            table_size: AtomicUsize::new(self.table_size()),
        }
    }

    /// In a forked child's process: a table of its own `HostFd` values for the same host
    /// descriptors (which the fork inherited), so that the child closing one closes it here;
    /// the values it copies are the parent's, never dropped in the child. Guest dups of one
    /// descriptor keep sharing one value.
    pub fn unshared(&self) -> FdTable {
        let mut made: Vec<(*const HostFd, Arc<HostFd>)> = Vec::new();
        let mut own = |h: &Arc<HostFd>| -> Arc<HostFd> {
            if let Some((_, o)) = made.iter().find(|(k, _)| *k == Arc::as_ptr(h)) {
                return o.clone();
            }
            let o = Arc::new(HostFd {
                fd: h.fd,
                owned: h.owned,
                special: h.special,
                kind: h.kind.clone(),
                vm_path: h.vm_path.clone(),
                procfs: h.procfs.clone(),
                hidden: h.hidden,
                synthesized: h.synthesized,
                signalfd: h.signalfd,
                // The fork inherited the second reader too: the child's value closes it.
                nowait_reader: match h.nowait_reader.get() {
                    Some(Some(r)) => {
                        use std::os::fd::{AsRawFd, FromRawFd};
                        // SAFETY: the fork's copy of the parent's descriptor, which the parent's
                        // value (never dropped in the child) does not close here.
                        std::sync::OnceLock::from(Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(r.as_raw_fd()) }))
                    }
                    _ => std::sync::OnceLock::new(),
                },
                socket_ids: h.socket_ids.clone(),
                rcvlowat: std::sync::atomic::AtomicU64::new(0),
            });
            made.push((Arc::as_ptr(h), o.clone()));
            o
        };
        let slots =
            self.lock().iter().map(|s| s.as_ref().map(|s| Slot { host: own(&s.host), cloexec: s.cloexec })).collect();
        // Kept files (host duplicates the fork inherited too) become the child's own likewise.
        let kept = self.kept.mapped(own);
        FdTable {
            slots: Mutex::new(slots),
            limit: AtomicUsize::new(self.limit()),
            open_limit: AtomicUsize::new(self.open_limit.load(Ordering::Relaxed)),
            kept,
            table_size: AtomicUsize::new(self.table_size()),
        }
    }

    /// Every guest fd: (number, host descriptor, FD_CLOEXEC).
    pub fn snapshot(&self) -> Vec<(usize, Arc<HostFd>, bool)> {
        let slots = self.lock();
        slots.iter().enumerate().filter_map(|(n, s)| s.as_ref().map(|s| (n, s.host.clone(), s.cloexec))).collect()
    }

    /// Removes the guest fds from `first` to `last` (close_range), returning them (the caller
    /// closes them outside the lock).
    pub fn take_range(&self, first: usize, last: usize) -> Vec<Slot> {
        let mut slots = self.lock();
        let end = slots.len().min(last.saturating_add(1));
        let taken = slots.get_mut(first..end).into_iter().flatten().filter_map(|s| s.take()).collect();
        while matches!(slots.last(), Some(None)) {
            slots.pop();
        }
        taken
    }

    /// Sets FD_CLOEXEC on the guest fds from `first` to `last` (close_range's CLOSE_RANGE_CLOEXEC).
    pub fn set_cloexec_range(&self, first: usize, last: usize) {
        let mut slots = self.lock();
        let end = slots.len().min(last.saturating_add(1));
        for s in slots.get_mut(first..end).into_iter().flatten().flatten() {
            s.cloexec = true;
        }
    }

    /// Removes every descriptor with FD_CLOEXEC (an exec), returning them (the caller closes
    /// them outside the lock).
    pub fn take_cloexec(&self) -> Vec<Slot> {
        let mut slots = self.lock();
        let taken = slots.iter_mut().filter_map(|s| s.take_if(|s| s.cloexec)).collect();
        while matches!(slots.last(), Some(None)) {
            slots.pop();
        }
        taken
    }

    /// Empties the table, returning every slot (the caller drops them outside the lock).
    pub fn take_all(&self) -> Vec<Slot> {
        std::mem::take(&mut *self.lock()).into_iter().flatten().collect()
    }
}
