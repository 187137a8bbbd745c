//! `MAP_SHARED` file mappings (`nr::MAP_SHARED_FILE`, `nr::UNMAP_SHARED_FILE`): the monitor
//! maps the host file itself over the part of guest RAM the kernel chose for the mapping
//! (`mmap(MAP_SHARED | MAP_FIXED)` over that part of the RAM's host mapping). KVM follows the
//! host mapping through its MMU notifier, so the program's pages *are* the file's page-cache
//! pages: its stores reach the file, other processes (natively or under `hrt`) mapping the same
//! file see them at once, and it sees theirs. This is what MPI's shared-memory transport needs
//! between ranks in different VMs (`/dev/shm` files mapped by every rank).
//!
//! Anonymous `MAP_SHARED` memory becomes host shared memory (a memory file's pages) when the
//! program forks (`nr::SHARE_ANONYMOUS`): the host fork keeps it shared between the two `hrt`
//! processes.
//!
//! Given up (munmap, a replacing mapping), the range becomes anonymous RAM again, reading zero,
//! as the kernel expects of its free memory.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::vcpu::Shared;

const PAGE: u64 = 4096;

/// The host address of guest `[addr, addr + len)` when it is a non-empty, page-aligned range of
/// the program's pool inside one RAM range (never the kernel's memory).
pub(super) fn program_range(shared: &Shared, addr: u64, len: u64) -> Option<*mut u8> {
    let (lo, hi) = shared.program_mem;
    let end = addr.checked_add(len)?;
    if len == 0 || !addr.is_multiple_of(PAGE) || !len.is_multiple_of(PAGE) || addr < lo || end > hi {
        return None;
    }
    shared.ram.host_ptr(addr, len)
}

/// The host ranges of guest RAM that are host shared memory now (a file, a memory file, a
/// SysV segment mapped over them), start to end. Kept so that a forked child's exit can let go
/// of them before its parent hears of it (`release_all`).
static HOST_SHARED: Mutex<BTreeMap<usize, usize>> = Mutex::new(BTreeMap::new());

/// Notes that `[host, host + len)` is host shared memory now (`shared` true) or anonymous RAM
/// again, cutting the ranges noted before.
fn note(host: *mut u8, len: u64, shared: bool) {
    let (start, end) = (host as usize, host as usize + len as usize);
    let mut map = HOST_SHARED.lock().unwrap_or_else(|e| e.into_inner());
    let overlapping: Vec<(usize, usize)> =
        map.range(..end).rev().take_while(|(_, &e)| e > start).map(|(&s, &e)| (s, e)).collect();
    for (s, e) in overlapping {
        map.remove(&s);
        if s < start {
            map.insert(s, start);
        }
        if e > end {
            map.insert(end, e);
        }
    }
    if shared {
        map.insert(start, end);
    }
}

/// Whether any of host range `[host, host + len)` of guest RAM is host shared memory now.
pub fn any_host_shared(host: *mut u8, len: u64) -> bool {
    let (start, end) = (host as usize, host as usize + len as usize);
    let map = HOST_SHARED.lock().unwrap_or_else(|e| e.into_inner());
    map.range(..end).next_back().is_some_and(|(_, &e)| e > start)
}

/// A forked child's `hrt` is about to exit: its host shared mappings become anonymous RAM
/// now, because its memory outlives it until its parent has been told (late_teardown.rs), and
/// meanwhile the mappings would still count: the parent's F_SEAL_WRITE of a memory file the
/// child had mapped failed with EBUSY, a SysV segment showed the child still attached.
pub fn release_all() {
    let ranges = std::mem::take(&mut *HOST_SHARED.lock().unwrap_or_else(|e| e.into_inner()));
    for (start, end) in ranges {
        make_anonymous(start as *mut u8, (end - start) as u64);
    }
}

/// The late teardown's holder (late_teardown.rs), `hrt` gone or exec'd: unmaps the host shared
/// ranges at once, so that segments and files are no longer attached while the rest of the
/// memory is torn down. The threads that kept the map died anywhere: a lock one of them held
/// leaves the ranges to the teardown. No allocation, raw calls only.
pub fn unmap_all_without_waiting() {
    let Ok(map) = HOST_SHARED.try_lock() else { return };
    for (&start, &end) in map.iter() {
        // SAFETY: a range of guest RAM's host mapping in this (dying) memory, which nothing
        // uses any more.
        unsafe { crate::raw_sys::syscall3(libc::SYS_munmap, start as u64, (end - start) as u64, 0) };
    }
}

/// Host mappings kept for the monitor's own (its threads' stacks, libraries, the channel).
const RESERVED_VMAS: usize = 4096;

/// Whether a new shared mapping would leave too few of the host's mappings. Each one splits
/// the guest RAM mapping (up to two more host mappings), and the host's `vm.max_map_count`
/// bounds them: past it the shared mapping's MAP_FIXED fails, and so does the anonymous memory
/// put back when a shared mapping goes, which on Linux has already taken the old pages (a hole
/// in guest RAM: "the program's memory is damaged"; Open POSIX mmap 24-1, which maps until
/// ENOMEM). So a new one is ENOMEM, Linux's answer for a process with too many mappings, once
/// the shared ranges would need more than what `RESERVED_VMAS` leaves.
fn too_many_mappings() -> bool {
    static MAX: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let max = *MAX.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/vm/max_map_count").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(65_530)
    });
    let ranges = HOST_SHARED.lock().unwrap_or_else(|e| e.into_inner()).len();
    (ranges + 1) * 2 > max.saturating_sub(RESERVED_VMAS)
}

fn errno() -> i64 {
    -(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO) as i64)
}

/// Makes `[host, host + len)` of guest RAM private anonymous memory again (zero, huge pages
/// requested as for all guest RAM).
fn make_anonymous(host: *mut u8, len: u64) -> i64 {
    note(host, len, false);
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED | libc::MAP_NORESERVE;
    // SAFETY: replaces part of our own guest RAM mapping (checked by program_range) with fresh
    // anonymous memory at the same address: every pointer into it stays valid.
    let got = unsafe {
        libc::mmap(host as *mut libc::c_void, len as usize, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0)
    };
    if got == libc::MAP_FAILED {
        let e = errno();
        eprintln!("hrt: cannot give guest RAM back its anonymous memory ({e}): the program's memory is damaged");
        return e;
    }
    // SAFETY: advice on the range just mapped; failure only means no huge pages.
    unsafe { libc::madvise(host as *mut libc::c_void, len as usize, libc::MADV_HUGEPAGE) };
    0
}

/// The most of one shared mapping `populate` makes present.
const POPULATE_MAX: u64 = 64 << 20;

/// Maps the host pages of the first `POPULATE_MAX` bytes of shared memory `[host, host + len)`
/// (memory pages: a memory file, a SysV segment) in the host's page tables now, allocating
/// those a first touch would. Why: on a PVM host KVM's shadow MMU resolves the program's first
/// touch of each 4 KiB page the host has not mapped with an exit and a host page fault (~29 us);
/// where the host has mapped it, the exit for one page also maps up to 7 mapped neighbours
/// (KVM's PTE prefetch). A 4 MiB `/dev/shm` file mapped and touched page by page: 29-32 ms
/// before, 1.6-2.9 ms here plus 3.9-4.0 ms of touches (Linux 1.3-1.5 ms); MPICH's `MPI_Init`
/// touches two such segments. The cost: holes of the first 64 MiB take memory at `mmap`, not at
/// the first touch (a hint only: a full `/dev/shm` leaves them to the touch, which then fails
/// as on Linux).
fn populate(host: *mut u8, len: u64) {
    const MADV_POPULATE_READ: i32 = 22;
    // SAFETY: advice on our own guest RAM mapping (a range the caller just mapped); it reads
    // nothing into our memory and failing changes nothing.
    unsafe { libc::madvise(host as *mut libc::c_void, len.min(POPULATE_MAX) as usize, MADV_POPULATE_READ) };
}

/// Whether `fd`'s file lives in memory (tmpfs: `/dev/shm`, a memory file), so that `populate`
/// costs no disk reads.
fn in_memory_file_system(fd: i32) -> bool {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    // SAFETY: fstatfs writes only the struct we own.
    unsafe {
        let mut fs: libc::statfs = std::mem::zeroed();
        libc::fstatfs(fd, &mut fs) == 0 && fs.f_type as i64 == TMPFS_MAGIC
    }
}

/// Whether memory file `fd` is sealed against writes through new shared mappings.
fn write_sealed(fd: i32) -> bool {
    // SAFETY: F_GET_SEALS only reads the descriptor's state (EINVAL for other files).
    let seals = unsafe { libc::fcntl(fd, libc::F_GET_SEALS) };
    seals > 0 && seals & (libc::F_SEAL_WRITE | libc::F_SEAL_FUTURE_WRITE) != 0
}

/// `nr::MAP_SHARED_FILE`: args fd, addr, len, file offset, the program's `prot`.
pub fn map(shared: &Shared, a: &[u64]) -> i64 {
    let (fd, addr, len, off, prot) = (a[0], a[1], a[2], a[3], a[4]);
    let Some(host) = program_range(shared, addr, len) else { return -(libc::EINVAL as i64) };
    if too_many_mappings() {
        return -(libc::ENOMEM as i64);
    }
    if !off.is_multiple_of(PAGE) || i64::try_from(off).is_err() {
        return -(libc::EINVAL as i64);
    }
    let Some(file) = shared.forwarder.as_ref().and_then(|f| f.host_fd(fd)) else { return -(libc::EBADF as i64) };
    // SAFETY: F_GETFL only reads the descriptor's flags.
    if unsafe { libc::fcntl(file.raw(), libc::F_GETFL) } & libc::O_PATH != 0 {
        // An O_PATH descriptor is no file to map (Linux's fget refuses it).
        return -(libc::EBADF as i64);
    }
    if !file.mappable() {
        return -(libc::ENODEV as i64);
    }
    let raw = file.raw();
    // SAFETY: F_GETFL and fstat only read the descriptor's state into our own struct.
    let (mode, st) = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fcntl(raw, libc::F_GETFL), (libc::fstat(raw, &mut st) == 0).then_some(st))
    };
    let Some(st) = st.filter(|_| mode >= 0) else { return errno() };
    // As Linux: writable only through a descriptor open for reading and writing (the program
    // may mprotect it writable later, so the host mapping is writable whenever it may be).
    let mut writable = mode & libc::O_ACCMODE == libc::O_RDWR;
    if prot & libc::PROT_WRITE as u64 != 0 && !writable {
        return -(libc::EACCES as i64);
    }
    // A memory file sealed against writes (F_SEAL_WRITE, F_SEAL_FUTURE_WRITE) maps shared only
    // read-only, and never becomes writable (Linux clears VM_MAYWRITE): a writable host mapping
    // would be EPERM. A writable request stays EPERM, from the host.
    if writable && prot & libc::PROT_WRITE as u64 == 0 && write_sealed(raw) {
        writable = false;
    }
    // A regular file's pages past its end are mapped too, so that they show the file once it
    // grows, but touching them raises SIGBUS in whoever touches them (KVM, the monitor): the
    // kernel keeps the program from them until the file covers them (`file_page`).
    let covered = if st.st_mode & libc::S_IFMT == libc::S_IFREG {
        (st.st_size as u64).saturating_sub(off).next_multiple_of(PAGE).min(len)
    } else {
        len
    };
    // The answer: the bytes the file covers, and whether the mapping may be writable.
    let answer = (covered | writable as u64) as i64;
    // Another process may shrink the file under the mapping: the forwarder's copies must then
    // fail with EFAULT, not kill `hrt` (SIGBUS).
    crate::forward::guest_copy::install();
    let host_prot = libc::PROT_READ | if writable { libc::PROT_WRITE } else { 0 };
    // SAFETY: replaces part of our own guest RAM mapping (checked above) with the file's pages
    // at the same address; pointers into guest RAM stay valid.
    let got = unsafe {
        libc::mmap(
            host as *mut libc::c_void,
            len as usize,
            host_prot,
            libc::MAP_SHARED | libc::MAP_FIXED,
            raw,
            off as libc::off_t,
        )
    };
    if got == libc::MAP_FAILED {
        let e = errno();
        make_anonymous(host, len);
        return e;
    }
    note(host, len, true);
    if st.st_mode & libc::S_IFMT == libc::S_IFREG {
        super::shared_file_ends::mapped(addr, len, covered);
        if in_memory_file_system(raw) {
            populate(host, covered);
        }
    }
    answer
}

/// `nr::REMAP_SHARED`: args old, old_len, new, new_len. The host shared pages at guest `old`
/// (and for a file the pages at the offsets after them) appear at `[new, new + new_len)`:
/// `new == old` grows the mapping in place. Two host `mremap`s, each of which replaces what is
/// at its target in one step: the first makes a second mapping of the same pages (a shared
/// mapping's `old_size == 0` form) at a place of the host's choosing, the second moves that
/// over the guest RAM at the target. So no part of guest RAM is ever a hole (a vCPU touching
/// one would fail KVM_RUN, a copy of the monitor's fault). The old range stays as it is: the
/// kernel gives it up (`unmap`) or keeps it (MREMAP_DONTUNMAP). Returns the bytes from `new`
/// the file covers, or a negated errno.
pub fn remap(shared: &Shared, a: &[u64]) -> i64 {
    let (old, old_len, new, new_len) = (a[0], a[1], a[2], a[3]);
    let (Some(host_old), Some(host_new)) = (program_range(shared, old, old_len), program_range(shared, new, new_len))
    else {
        return -(libc::EINVAL as i64);
    };
    if too_many_mappings() {
        return -(libc::ENOMEM as i64);
    }
    let in_place = new == old;
    let overlaps = new < old + old_len && old < new + new_len;
    if !is_noted(host_old, old_len) || (overlaps && !in_place) {
        return -(libc::EINVAL as i64);
    }
    // SAFETY: a second mapping of the shared pages at `host_old`, at an address the host
    // picks (outside guest RAM); nothing of ours is replaced.
    let temp = unsafe { libc::mremap(host_old as *mut libc::c_void, 0, new_len as usize, libc::MREMAP_MAYMOVE) };
    if temp == libc::MAP_FAILED {
        return errno();
    }
    let temp = temp as *mut u8;
    let drop_temp = || {
        // SAFETY: the mapping made above, ours alone.
        unsafe { libc::munmap(temp as *mut libc::c_void, new_len as usize) };
    };
    let covered = match Probe::new() {
        Ok(probe) => probe.covered_len(temp, new_len),
        Err(e) => {
            drop_temp();
            return e;
        }
    };
    let regular_file = super::shared_file_ends::is_mapped(old);
    // Pages past what backs a segment or shared anonymous memory would never be there (the
    // host raises SIGBUS; KVM would retry the program's touch for ever): only a file's
    // mapping grows past its end, whose pages the kernel hides until the file covers them.
    if covered < new_len && !regular_file {
        drop_temp();
        return -(libc::ENOMEM as i64);
    }
    let flags = libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED;
    // SAFETY: moves our second mapping over guest RAM checked above (the program's pool),
    // replacing what is there at once; pointers into guest RAM stay valid.
    let got = unsafe { libc::mremap(temp as *mut libc::c_void, new_len as usize, new_len as usize, flags, host_new) };
    if got == libc::MAP_FAILED {
        let e = errno();
        drop_temp();
        return e;
    }
    note(host_new, new_len, true);
    if regular_file {
        super::shared_file_ends::mapped(new, new_len, covered);
    }
    covered as i64
}

/// Whether all of `[host, host + len)` is noted host shared memory.
fn is_noted(host: *mut u8, len: u64) -> bool {
    let (start, end) = (host as usize, host as usize + len as usize);
    let map = HOST_SHARED.lock().unwrap_or_else(|e| e.into_inner());
    let mut cur = start;
    for (&s, &e) in map.range(..end).filter(|(_, &e)| e > start) {
        if s > cur {
            return false;
        }
        cur = cur.max(e);
    }
    cur >= end
}

/// `nr::SHARED_FILE_PAGE`: args page, len. How many bytes from `page` (`len` at most) the
/// shared file mapped there covers now (`Probe::covered_len`).
pub fn file_page(shared: &Shared, a: &[u64]) -> i64 {
    let (page, len) = (a[0], a[1]);
    let Some(host) = program_range(shared, page, len) else { return -(libc::EINVAL as i64) };
    match Probe::new() {
        Ok(probe) => probe.covered_len(host, len) as i64,
        Err(e) => e,
    }
}

/// Asks the host whether shared file pages are still there, without touching them: a page is
/// if the host can read its first byte, which it tries by writing it into a pipe (a page past
/// the end of the file makes the write fail with EFAULT where touching it would raise SIGBUS).
/// A pipe of its own each time: a kept one would not survive a fork's closing of `hrt`'s
/// descriptors in the child. Used for a few dozen one-byte writes at most, well within a
/// pipe's capacity.
pub(super) struct Probe {
    fds: [i32; 2],
}

impl Probe {
    pub(super) fn new() -> Result<Probe, i64> {
        let mut fds = [0i32; 2];
        // SAFETY: pipe2 writes two descriptors into our array; `drop` closes them.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } != 0 {
            return Err(errno());
        }
        Ok(Probe { fds })
    }

    /// Whether the page at `host` (in our guest RAM mapping) is there.
    pub(super) fn present(&self, host: *const u8) -> bool {
        // SAFETY: the host reads one byte of our own memory into our own pipe; a page past the
        // end of its file fails with EFAULT, no signal.
        unsafe { libc::write(self.fds[1], host as *const libc::c_void, 1) == 1 }
    }

    /// How many bytes of the shared file pages at `host` (`len`, page-aligned, one mapping)
    /// the file covers now. The covered pages are a prefix of a mapping (one file, contiguous
    /// offsets), so a binary search finds its end.
    pub(super) fn covered_len(&self, host: *mut u8, len: u64) -> u64 {
        // SAFETY (of the pointer arithmetic): page `i < len / PAGE` lies inside the range.
        let covered = |i: u64| self.present(unsafe { host.add((i * PAGE) as usize) });
        // Pages [0, lo) are covered, pages [hi, n) are not.
        let (mut lo, mut hi) = (0, len / PAGE);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if covered(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo * PAGE
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        // SAFETY: closing the descriptors `new` made.
        unsafe {
            libc::close(self.fds[0]);
            libc::close(self.fds[1]);
        }
    }
}

/// `nr::UNMAP_SHARED_FILE`: args addr, len.
pub fn unmap(shared: &Shared, a: &[u64]) -> i64 {
    match program_range(shared, a[0], a[1]) {
        Some(host) => {
            super::shared_file_ends::unmapped(a[0], a[1]);
            make_anonymous(host, a[1])
        }
        None => -(libc::EINVAL as i64),
    }
}

/// `nr::SHARE_ANONYMOUS`: args addr, len. The program's anonymous shared memory there, private
/// guest RAM so far, becomes host shared memory holding the same bytes (the kernel asks at a
/// fork, its other CPUs stopped), so the host fork keeps it shared: a memory file gets the
/// range's non-zero pages (written, not touched page by page: zero pages cost neither a copy
/// nor host memory), then is mapped over the range in one `mmap(MAP_FIXED)`, so the range is
/// never unmapped meanwhile.
pub fn share_anonymous(shared: &Shared, a: &[u64]) -> i64 {
    let (addr, len) = (a[0], a[1]);
    let Some(host) = program_range(shared, addr, len) else { return -(libc::EINVAL as i64) };
    // SAFETY: creates a descriptor of our own, closed below.
    let fd = unsafe { libc::memfd_create(c"hrt-shared-anonymous".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return errno();
    }
    // SAFETY: the range is `len` bytes of our own guest RAM mapping (checked above); the
    // guest's other CPUs are stopped, so nothing changes it meanwhile.
    let bytes = unsafe { std::slice::from_raw_parts(host as *const u8, len as usize) };
    let ret = match fill(fd, bytes) {
        // SAFETY: maps the memory file over part of our own guest RAM mapping, replacing it at
        // the same address: pointers into guest RAM stay valid.
        Ok(()) => match unsafe {
            let prot = libc::PROT_READ | libc::PROT_WRITE;
            libc::mmap(host as *mut libc::c_void, len as usize, prot, libc::MAP_SHARED | libc::MAP_FIXED, fd, 0)
        } {
            libc::MAP_FAILED => errno(),
            _ => {
                note(host, len, true);
                populate(host, len);
                0
            }
        },
        Err(e) => e,
    };
    // SAFETY: our own descriptor; the mapping keeps the memory file.
    unsafe { libc::close(fd) };
    ret
}

/// Sizes memory file `fd` to `bytes` and writes their non-zero pages into it.
fn fill(fd: i32, bytes: &[u8]) -> Result<(), i64> {
    // SAFETY: plain calls on our own descriptor.
    if unsafe { libc::ftruncate(fd, bytes.len() as libc::off_t) } != 0 {
        return Err(errno());
    }
    let zero = |p: &[u8]| p.chunks_exact(8).all(|w| u64::from_ne_bytes(w.try_into().unwrap()) == 0);
    let page = PAGE as usize;
    let mut off = 0;
    while off < bytes.len() {
        if zero(&bytes[off..off + page]) {
            off += page;
            continue;
        }
        let mut end = off + page;
        while end < bytes.len() && !zero(&bytes[end..end + page]) {
            end += page;
        }
        while off < end {
            let run = &bytes[off..end];
            // SAFETY: writes from our own memory into our own descriptor.
            let n = unsafe { libc::pwrite(fd, run.as_ptr() as *const libc::c_void, run.len(), off as libc::off_t) };
            if n <= 0 {
                return Err(if n == 0 { -(libc::EIO as i64) } else { errno() });
            }
            off += n as usize;
        }
    }
    Ok(())
}

/// `nr::MSYNC`: args addr, len, Linux's msync flags (the kernel checked them).
pub fn msync(shared: &Shared, a: &[u64]) -> i64 {
    let (addr, len, flags) = (a[0], a[1], a[2]);
    let Some(host) = program_range(shared, addr, len) else { return -(libc::EINVAL as i64) };
    let known = libc::MS_SYNC | libc::MS_ASYNC | libc::MS_INVALIDATE;
    let Ok(flags) = i32::try_from(flags).map(|f| f & known) else { return -(libc::EINVAL as i64) };
    // SAFETY: msync of part of our own guest RAM mapping (checked above); it only writes pages
    // back or drops clean cached ones.
    match unsafe { libc::msync(host as *mut libc::c_void, len as usize, flags) } {
        0 => 0,
        _ => errno(),
    }
}

/// `nr::REMOVE_SHARED`: args addr, len. The program's `madvise(MADV_REMOVE)` of shared pages:
/// the host's own on the same pages of our mapping, so the hole is punched in the file (or the
/// memory file of a segment or of shared anonymous memory) that every sharer sees.
pub fn remove(shared: &Shared, a: &[u64]) -> i64 {
    let Some(host) = program_range(shared, a[0], a[1]) else { return -(libc::EINVAL as i64) };
    // SAFETY: madvise of part of our own guest RAM mapping (checked above), which the kernel
    // says holds host shared pages: only their contents are dropped (they read zero).
    match unsafe { libc::madvise(host as *mut libc::c_void, a[1] as usize, libc::MADV_REMOVE) } {
        0 => 0,
        _ => errno(),
    }
}

/// The size of System V segment `id`, from the host's IPC_STAT.
fn segment_size(id: u64) -> Result<u64, i64> {
    // SAFETY: IPC_STAT writes a shmid_ds into our own struct.
    let mut ds: libc::shmid_ds = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::shmctl(id as u32 as i32, libc::IPC_STAT, &mut ds) } < 0 {
        return Err(errno());
    }
    Ok(ds.shm_segsz as u64)
}

/// `nr::SHM_SEGMENT_SIZE`: args id.
pub fn shm_segment_size(a: &[u64]) -> i64 {
    match segment_size(a[0]) {
        Ok(n) => i64::try_from(n).unwrap_or(i64::MAX),
        Err(e) => e,
    }
}

/// `nr::SHM_ATTACH`: args id, addr, len, read-only.
pub fn shm_attach(shared: &Shared, a: &[u64]) -> i64 {
    let (id, addr, len, read_only) = (a[0], a[1], a[2], a[3] == 1);
    let Some(host) = program_range(shared, addr, len) else { return -(libc::EINVAL as i64) };
    if too_many_mappings() {
        return -(libc::ENOMEM as i64);
    }
    // shmat maps the whole segment: it must fit the range the guest named. (Segment ids carry a
    // sequence number, so the id cannot name a bigger segment between this check and shmat.)
    match segment_size(id) {
        Ok(size) if size.next_multiple_of(PAGE) == len => {}
        Ok(_) => return -(libc::EINVAL as i64),
        Err(e) => return e,
    }
    let flags = libc::SHM_REMAP | if read_only { libc::SHM_RDONLY } else { 0 };
    // SAFETY: attaches the segment over part of our own guest RAM mapping (checked above, the
    // segment's size equal to it), replacing it at the same address.
    let got = unsafe { libc::shmat(id as u32 as i32, host as *const libc::c_void, flags) };
    if got as isize == -1 {
        let e = errno();
        make_anonymous(host, len);
        return e;
    }
    note(host, len, true);
    populate(host, len);
    !read_only as i64
}

/// This module's global locks, taken without waiting for a fork (`vm::fork`): false if
/// another thread holds one.
pub(crate) fn hold_for_fork(held: &mut crate::vm::fork::Held) -> bool {
    crate::vm::fork::try_hold(held, &HOST_SHARED)
}
