//! A deterministic fuzz run of the forwarding decoder, as an ordinary test (so CI runs it):
//! random system-call numbers and argument words, pointers near and across the edges of guest
//! memory, iovec / pollfd / fd_set / timespec / epoll_event arrays with bad inner pointers and lengths,
//! starting from the seeds in `fuzz_seeds.txt` and mutating them.
//!
//! Guest memory is a small host mapping with a canary page on each side and an inaccessible
//! guard page beyond each canary: a forwarder access outside guest memory either faults (the
//! guard: the test process dies) or changes a canary (checked after every call). A panic fails
//! the test. `HRT_FUZZ_INPUTS=N` changes the number of inputs (default 200,000).
//!
//! The host calls are real, so they are kept harmless: the run happens in a child process (this
//! test binary again, running only `fuzz_child`) whose working directory is a scratch directory
//! (emptied every few hundred inputs), so no other test sees it; every path argument the program would
//! pass is checked before the call and replaced by a plain name unless it is one (no `/`, no
//! `.`), so nothing outside the scratch directory is named; symbolic-link targets likewise;
//! the inherited descriptors 0/1/2 are closed for the guest first; blocking is impossible
//! (pipes, eventfds and sockets non-blocking, MSG_DONTWAIT, zero timeouts, no waiting locks);
//! sockets are AF_UNIX only, with plain names (nothing reaches the network or the host's
//! abstract names); nodes are regular files, inotify instances non-blocking, preallocations
//! small, `sync` a `syncfs`; System V shared memory is only looked up and read (no segment is created,
//! changed or removed: they are the host's).

use super::guest_mem::GuestMemory;
use super::{Forwarder, HANDLED};

const PAGE: usize = 4096;
/// Guest memory: 16 pages at this guest address.
const LO: u64 = 0x10000;
const PAGES: usize = 16;
const HI: u64 = LO + (PAGES * PAGE) as u64;
const CANARY: u8 = 0xc5;

/// Guest memory between canaries and guard pages.
struct Guarded {
    /// The whole mapping: guard, canary, memory, canary, guard.
    base: *mut u8,
    len: usize,
}

// SAFETY: a plain mapping, accessed through raw pointers only.
unsafe impl Sync for Guarded {}

impl Guarded {
    fn new() -> Guarded {
        let len = (PAGES + 4) * PAGE;
        // SAFETY: a fresh anonymous mapping.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        let base = base as *mut u8;
        // SAFETY: inside the mapping: the first and last pages become inaccessible; the canary
        // pages are filled.
        unsafe {
            libc::mprotect(base as *mut libc::c_void, PAGE, libc::PROT_NONE);
            libc::mprotect(base.add(len - PAGE) as *mut libc::c_void, PAGE, libc::PROT_NONE);
            std::ptr::write_bytes(base.add(PAGE), CANARY, PAGE);
            std::ptr::write_bytes(base.add(len - 2 * PAGE), CANARY, PAGE);
        }
        Guarded { base, len }
    }

    fn mem(&self) -> *mut u8 {
        // SAFETY: inside the mapping.
        unsafe { self.base.add(2 * PAGE) }
    }

    fn canaries_intact(&self) -> bool {
        // SAFETY: the canary pages are readable parts of the mapping.
        let (a, b) = unsafe {
            (
                std::slice::from_raw_parts(self.base.add(PAGE), PAGE),
                std::slice::from_raw_parts(self.base.add(self.len - 2 * PAGE), PAGE),
            )
        };
        a.iter().chain(b).all(|&x| x == CANARY)
    }

    fn put(&self, addr: u64, data: &[u8]) {
        assert!(addr >= LO && addr + data.len() as u64 <= HI);
        // SAFETY: inside guest memory (checked).
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.mem().add((addr - LO) as usize), data.len()) };
    }

    /// The byte at guest `addr`, if it lies in guest memory.
    fn byte(&self, addr: u64) -> Option<u8> {
        // SAFETY: inside guest memory (checked).
        (LO..HI).contains(&addr).then(|| unsafe { *self.mem().add((addr - LO) as usize) })
    }

    /// The NUL-terminated string at guest `addr`, if it lies in guest memory.
    fn c_string(&self, addr: u64) -> Option<Vec<u8>> {
        let mut v = Vec::new();
        let mut a = addr;
        while (LO..HI).contains(&a) {
            // SAFETY: inside guest memory (checked).
            let b = unsafe { *self.mem().add((a - LO) as usize) };
            if b == 0 {
                return Some(v);
            }
            v.push(b);
            a += 1;
        }
        None
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // SAFETY: our own mapping.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

impl GuestMemory for Guarded {
    fn host_range(&self, addr: u64, len: u64) -> Option<*mut u8> {
        let end = addr.checked_add(len)?;
        if addr < LO || end > HI {
            return None;
        }
        // SAFETY: inside guest memory (checked).
        Some(unsafe { self.mem().add((addr - LO) as usize) })
    }

    /// Every page is mapped but one in the middle (`UNMAPPED_PAGE`), so the program's page
    /// map is fuzzed too: ranges across it are shortened or refused.
    fn mapped_len(&self, addr: u64, len: u64) -> u64 {
        let hole = LO + (UNMAPPED_PAGE * PAGE) as u64;
        if !(LO..HI).contains(&addr) || (hole..hole + PAGE as u64).contains(&addr) {
            return 0;
        }
        let limit = if addr < hole { hole } else { HI };
        len.min(limit - addr)
    }
}

/// The one page of the test memory the program has not mapped.
const UNMAPPED_PAGE: usize = PAGES / 2;

/// xorshift64*: deterministic, so a failure names its input number and reproduces. Also used
/// by the hypercall decoder's fuzz run (vm/hypercall.rs).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u64) as usize]
    }
}

/// Fixed places in guest memory the seeds and the generator point at.
mod at {
    use super::LO;
    /// A plain name ("fz0").
    pub const NAME: u64 = LO + 0x100;
    /// Another plain name ("fz1").
    pub const NAME2: u64 = LO + 0x110;
    /// A message queue's name no queue has ("hrt-fuzz-none").
    pub const MQ_NAME: u64 = LO + 0x130;
    /// A zero timespec / timeval (16 bytes).
    pub const ZERO_TIME: u64 = LO + 0x120;
    /// An iovec array (8 entries).
    pub const IOV: u64 = LO + 0x200;
    /// A pollfd array (16 entries).
    pub const POLLFD: u64 = LO + 0x300;
    /// Three fd_sets (1024 bits each).
    pub const FDSET: u64 = LO + 0x400;
    /// Where random bytes and buffers live.
    pub const DATA: u64 = LO + 0x1000;
}

/// Interesting argument words: pointers at and across the edges, lengths that overflow.
fn edge_word(r: &mut Rng) -> u64 {
    let off = r.below(33).wrapping_sub(16);
    match r.below(16) {
        0 => LO.wrapping_add(off),
        1 => HI.wrapping_add(off),
        2 => HI - r.below(64),
        3 => r.below(8),
        4 => r.pick(&[u64::MAX, u64::MAX - 7, 1 << 63, isize::MAX as u64, u32::MAX as u64, 0x7fff_f000]),
        5 => r.pick(&[0, 1, 8, 16, 4095, 4096, 4097, HI - LO, HI]),
        6 => r.pick(&[at::NAME, at::NAME2, at::ZERO_TIME, at::IOV, at::POLLFD, at::FDSET, at::DATA]),
        7 => (libc::AT_FDCWD as u32) as u64,
        8 => r.below(4096),
        9 => 0,
        10 => r.pick(&[0xffff_ffff_ffff_ff9c, 0x8000_0000, 0xffff_ffff]),
        11..=13 => LO + r.below(HI - LO),
        _ => r.next(),
    }
}

/// Fills guest memory: plain names, a zero time, arrays whose inner pointers and lengths cross
/// the edges, and random bytes from an alphabet without `/` and `.` elsewhere.
fn fill(mem: &Guarded, r: &mut Rng) {
    let mut data = vec![0u8; (HI - LO) as usize];
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789_\0\0\0\0";
    for b in data.iter_mut() {
        *b = ALPHABET[r.below(ALPHABET.len() as u64) as usize];
    }
    mem.put(LO, &data);
    mem.put(at::NAME, b"fz0\0");
    mem.put(at::NAME2, b"fz1\0");
    mem.put(at::ZERO_TIME, &[0u8; 16]);
    mem.put(at::MQ_NAME, b"hrt-fuzz-none\0");
    for i in 0..8u64 {
        let (base, len) = (edge_word(r), edge_word(r));
        mem.put(at::IOV + 16 * i, &base.to_ne_bytes());
        mem.put(at::IOV + 16 * i + 8, &len.to_ne_bytes());
    }
    for i in 0..16u64 {
        let fd = if r.below(4) == 0 { r.next() as i32 } else { r.below(12) as i32 - 1 };
        mem.put(at::POLLFD + 8 * i, &fd.to_ne_bytes());
        mem.put(at::POLLFD + 8 * i + 4, &(r.next() as u32).to_ne_bytes());
    }
    for i in 0..48u64 {
        mem.put(at::FDSET + 8 * i, &(r.next() & r.next()).to_ne_bytes());
    }
}

/// A System V key no segment has (shmget looks it up and fails).
const FUZZ_SHM_KEY: u64 = 0x4852_5446;

/// Which arguments of forwarded call `nr` are paths (and symlink targets).
fn path_args(nr: i64) -> &'static [usize] {
    match nr {
        libc::SYS_open
        | libc::SYS_creat
        | libc::SYS_stat
        | libc::SYS_lstat
        | libc::SYS_access
        | libc::SYS_chdir
        | libc::SYS_mkdir
        | libc::SYS_rmdir
        | libc::SYS_unlink
        | libc::SYS_readlink
        | libc::SYS_truncate
        | libc::SYS_chmod
        | libc::SYS_mknod
        | libc::SYS_utime
        | libc::SYS_utimes
        | libc::SYS_getxattr
        | libc::SYS_lgetxattr
        | libc::SYS_listxattr
        | libc::SYS_llistxattr
        | libc::SYS_setxattr
        | libc::SYS_lsetxattr
        | libc::SYS_removexattr
        | libc::SYS_lremovexattr => &[0],
        libc::SYS_rename | libc::SYS_link | libc::SYS_symlink => &[0, 1],
        libc::SYS_openat
        | libc::SYS_newfstatat
        | libc::SYS_statx
        | libc::SYS_name_to_handle_at
        | libc::SYS_faccessat
        | libc::SYS_faccessat2
        | libc::SYS_mkdirat
        | libc::SYS_unlinkat
        | libc::SYS_readlinkat
        | libc::SYS_fchmodat
        | libc::SYS_utimensat
        | libc::SYS_futimesat
        | libc::SYS_mknodat
        | libc::SYS_inotify_add_watch => &[1],
        libc::SYS_renameat | libc::SYS_renameat2 | libc::SYS_linkat => &[1, 3],
        libc::SYS_symlinkat => &[0, 2],
        _ => &[],
    }
}

/// Makes one call harmless for the host (see the module documentation); returns the call to
/// make (pipe becomes a non-blocking pipe2).
fn tame(mem: &Guarded, nr: i64, a: &mut [u64; 6]) -> i64 {
    // Earlier calls may have written over it.
    mem.put(at::ZERO_TIME, &[0u8; 16]);
    for &i in path_args(nr) {
        // NULL stays NULL (EFAULT, or the descriptor itself for utimensat/statx); a string
        // outside memory stays (EFAULT); anything but a plain name becomes one.
        if a[i] == 0 {
            continue;
        }
        if let Some(s) = mem.c_string(a[i]) {
            if s.is_empty() || s.iter().any(|&b| b == b'/' || b == b'.') {
                a[i] = at::NAME;
            }
        }
    }
    match nr {
        libc::SYS_poll => a[2] = 0,
        libc::SYS_ppoll => a[2] = at::ZERO_TIME,
        libc::SYS_select => a[4] = at::ZERO_TIME,
        libc::SYS_pselect6 => a[4] = at::ZERO_TIME,
        libc::SYS_epoll_wait | libc::SYS_epoll_pwait => a[3] = 0,
        libc::SYS_epoll_pwait2 => a[3] = at::ZERO_TIME,
        // Reads of an empty eventfd and writes to a full one would wait.
        libc::SYS_eventfd => {
            a[1] = libc::EFD_NONBLOCK as u64;
            return libc::SYS_eventfd2;
        }
        libc::SYS_eventfd2 => a[1] |= libc::EFD_NONBLOCK as u64,
        // A read of a timer not yet expired (or disarmed) would wait.
        libc::SYS_timerfd_create => a[1] |= libc::TFD_NONBLOCK as u64,
        libc::SYS_pipe => {
            a[1] = libc::O_NONBLOCK as u64;
            return libc::SYS_pipe2;
        }
        libc::SYS_pipe2 => a[1] |= libc::O_NONBLOCK as u64,
        libc::SYS_splice => a[5] |= libc::SPLICE_F_NONBLOCK as u64,
        libc::SYS_tee => a[3] |= libc::SPLICE_F_NONBLOCK as u64,
        libc::SYS_fcntl => match a[1] as u32 as i32 {
            libc::F_SETLKW => a[1] = libc::F_SETLK as u64,
            libc::F_OFD_SETLKW => a[1] = libc::F_OFD_SETLK as u64,
            // Signal-driven I/O would end the test process (SIGIO's default action) once an
            // owner is set: never asked for.
            libc::F_SETFL => a[2] = (a[2] | libc::O_NONBLOCK as u64) & !(libc::O_ASYNC as u64),
            _ => {}
        },
        // The same through ioctl: asynchronous mode off, no owner (a zero int).
        libc::SYS_ioctl if [libc::FIOASYNC, 0x8901, 0x8902].contains(&(a[1] as u32 as u64)) => a[2] = at::ZERO_TIME,
        // Opening a pipe end again through a path cannot happen (no paths into /proc); new
        // descriptors are made non-blocking.
        libc::SYS_open => a[1] |= libc::O_NONBLOCK as u64,
        libc::SYS_openat => a[2] |= libc::O_NONBLOCK as u64,
        // Sockets: AF_UNIX only (nothing reaches the network), never waiting, and every
        // address a plain name in the scratch directory (no abstract names: they are the
        // host's).
        libc::SYS_socket => {
            a[0] = libc::AF_UNIX as u64;
            a[1] |= libc::SOCK_NONBLOCK as u64;
        }
        libc::SYS_socketpair => a[1] |= libc::SOCK_NONBLOCK as u64,
        // System V segments are the host's, shared by every process: look up only (IPC_PRIVATE
        // and IPC_CREAT would create segments that outlive the run), and only read them.
        libc::SYS_shmget => {
            if a[0] as u32 == 0 {
                a[0] = FUZZ_SHM_KEY;
            }
            a[2] &= !(libc::IPC_CREAT as u64);
        }
        // Semaphore sets and message queues too: look up only, by a key no set or queue has.
        libc::SYS_semget | libc::SYS_msgget => {
            a[0] = FUZZ_SHM_KEY;
            let at = if nr == libc::SYS_semget { 2 } else { 1 };
            a[at] &= !(libc::IPC_CREAT as u64);
        }
        // The host's sets and queues belong to other processes too: every operation names an
        // id none has (-1, EINVAL after the monitor's own checks of the pointers); the info
        // commands, which ignore the id, only read.
        libc::SYS_semop
        | libc::SYS_semtimedop
        | libc::SYS_semctl
        | libc::SYS_msgsnd
        | libc::SYS_msgrcv
        | libc::SYS_msgctl => a[0] = u32::MAX as u64,
        // The fuzzing process's own ids stay: every set-id call asks for no change, and a group
        // list is too long (EINVAL).
        libc::SYS_setuid
        | libc::SYS_setreuid
        | libc::SYS_setresuid
        | libc::SYS_setgid
        | libc::SYS_setregid
        | libc::SYS_setresgid
        | libc::SYS_setfsuid
        | libc::SYS_setfsgid => *a = [u32::MAX as u64; 6],
        libc::SYS_setgroups => a[0] = u32::MAX as u64,
        // The fuzzing process's capabilities stay: no data to set them from (EFAULT).
        libc::SYS_capset => a[1] = 0,
        // Signals to another process, and pidfds to signal one through: a process no one is
        // (ESRCH), never the host's init or a neighbour.
        libc::SYS_tgkill | libc::SYS_rt_tgsigqueueinfo | libc::SYS_rt_sigqueueinfo | libc::SYS_pidfd_open => {
            a[0] = 0x3fff_fff0
        }
        // Scheduling policies of another process, or of the fuzzing process itself (its own
        // pid sets every thread's): a process no one is (ESRCH), never the host's init.
        libc::SYS_sched_setscheduler | libc::SYS_sched_setparam | libc::SYS_sched_setattr => a[0] = 0x3fff_fff0,
        // The host's clock stays: a clock the monitor refuses to set (EINVAL), and nothing to
        // set (no time, no zone: a no-op).
        libc::SYS_clock_settime => a[0] = libc::CLOCK_MONOTONIC as u64,
        libc::SYS_settimeofday => (a[0], a[1]) = (0, 0),
        // The host's names stay: a length Linux refuses (EINVAL; EPERM without the capability).
        libc::SYS_sethostname | libc::SYS_setdomainname => a[1] = 65,
        // POSIX message queues are the host's too: look up one no program has, never create,
        // unlink only that name.
        libc::SYS_mq_open => {
            a[0] = at::MQ_NAME;
            a[1] &= !(libc::O_CREAT as u64);
        }
        libc::SYS_mq_unlink => a[0] = at::MQ_NAME,
        // Reading commands only: IPC_STAT, IPC_INFO, SHM_STAT, SHM_INFO, SHM_STAT_ANY.
        libc::SYS_shmctl if ![libc::IPC_STAT, libc::IPC_INFO, 13, 14, 15].contains(&(a[1] as u32 as i32 & !0x100)) => {
            a[1] = libc::IPC_STAT as u64;
        }
        libc::SYS_accept => {
            a[3] = libc::SOCK_NONBLOCK as u64;
            return libc::SYS_accept4;
        }
        libc::SYS_accept4 => a[3] |= libc::SOCK_NONBLOCK as u64,
        libc::SYS_bind | libc::SYS_connect => tame_sockaddr(mem, a[1]),
        libc::SYS_sendto => {
            a[3] |= libc::MSG_DONTWAIT as u64;
            tame_sockaddr(mem, a[4]);
        }
        libc::SYS_recvfrom => a[3] |= libc::MSG_DONTWAIT as u64,
        libc::SYS_sendmsg => {
            a[2] |= libc::MSG_DONTWAIT as u64;
            tame_msg_name(mem, a[1]);
        }
        libc::SYS_recvmsg => a[2] |= libc::MSG_DONTWAIT as u64,
        libc::SYS_sendmmsg => {
            a[2] = a[2].min(4);
            a[3] |= libc::MSG_DONTWAIT as u64;
            for i in 0..a[2] {
                tame_msg_name(mem, a[1].wrapping_add(64 * i));
            }
        }
        libc::SYS_recvmmsg => a[3] |= libc::MSG_DONTWAIT as u64,
        // Regular files only: as root a device node would reach a host device, and `creat` of
        // a FIFO would wait for a reader.
        libc::SYS_mknod => a[1] = a[1] & 0o777 | libc::S_IFREG as u64,
        libc::SYS_mknodat => a[2] = a[2] & 0o777 | libc::S_IFREG as u64,
        // Reads of an inotify instance without events would wait.
        libc::SYS_inotify_init => {
            a[0] = libc::IN_NONBLOCK as u64;
            return libc::SYS_inotify_init1;
        }
        libc::SYS_inotify_init1 => a[0] |= libc::IN_NONBLOCK as u64,
        // Small extents only (the scratch directory's disk is the host's).
        libc::SYS_fallocate => {
            a[2] = a[2].min(1 << 20);
            a[3] = a[3].min(1 << 20);
        }
        // Not the whole host's page cache, over and over.
        libc::SYS_sync => return libc::SYS_syncfs,
        // Never a hangup of the terminal of whoever runs the tests (the child is in its session).
        libc::SYS_vhangup => return libc::SYS_getppid,
        // dup2/dup3 onto 0..2 are fine: the guest's table only.
        _ => {}
    }
    nr
}

/// Makes the AF_UNIX address at `addr` (what of it lies in guest memory) a plain name: no
/// `/`, no `.`, not abstract.
fn tame_sockaddr(mem: &Guarded, addr: u64) {
    for i in 2..110u64 {
        let at = addr.wrapping_add(i);
        let Some(b) = mem.byte(at) else { continue };
        if (i == 2 && b == 0) || b == b'/' || b == b'.' {
            mem.put(at, b"z");
        }
    }
}

/// tame_sockaddr for the name of the msghdr at `msg`.
fn tame_msg_name(mem: &Guarded, msg: u64) {
    let name: Vec<u8> = (0..8).filter_map(|i| mem.byte(msg.wrapping_add(i))).collect();
    if let Ok(bytes) = <[u8; 8]>::try_from(name.as_slice()) {
        tame_sockaddr(mem, u64::from_ne_bytes(bytes));
    }
}

/// One seed: a call with symbolic arguments (see fuzz_seeds.txt).
fn parse_seeds(text: &str) -> Vec<(i64, [u64; 6])> {
    let word = |w: &str| -> u64 {
        let named = |n: &str| match n {
            "LO" => Some(LO),
            "HI" => Some(HI),
            "NAME" => Some(at::NAME),
            "NAME2" => Some(at::NAME2),
            "ZERO_TIME" => Some(at::ZERO_TIME),
            "IOV" => Some(at::IOV),
            "POLLFD" => Some(at::POLLFD),
            "FDSET" => Some(at::FDSET),
            "DATA" => Some(at::DATA),
            "CWD" => Some(libc::AT_FDCWD as u32 as u64),
            "MAX" => Some(u64::MAX),
            _ => None,
        };
        let num = |n: &str| match n.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).ok(),
            None => n.parse().ok(),
        };
        if let Some((l, r)) = w.split_once('+') {
            return named(l).or_else(|| num(l)).unwrap().wrapping_add(num(r).unwrap());
        }
        if let Some((l, r)) = w.split_once('-') {
            return named(l).or_else(|| num(l)).unwrap().wrapping_sub(num(r).unwrap());
        }
        named(w).or_else(|| num(w)).unwrap_or_else(|| panic!("seed word {w}"))
    };
    text.lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut it = l.split_whitespace();
            let name = it.next().unwrap();
            let nr = syscall_number(name).unwrap_or_else(|| panic!("seed call {name}"));
            let mut a = [0u64; 6];
            for (slot, w) in a.iter_mut().zip(it) {
                *slot = word(w);
            }
            (nr, a)
        })
        .collect()
}

fn syscall_number(name: &str) -> Option<i64> {
    Some(match name {
        "read" => libc::SYS_read,
        "write" => libc::SYS_write,
        "readv" => libc::SYS_readv,
        "writev" => libc::SYS_writev,
        "pread64" => libc::SYS_pread64,
        "pwritev" => libc::SYS_pwritev,
        "preadv" => libc::SYS_preadv,
        "open" => libc::SYS_open,
        "openat" => libc::SYS_openat,
        "close" => libc::SYS_close,
        "fstat" => libc::SYS_fstat,
        "newfstatat" => libc::SYS_newfstatat,
        "statx" => libc::SYS_statx,
        "getcwd" => libc::SYS_getcwd,
        "readlink" => libc::SYS_readlink,
        "getdents64" => libc::SYS_getdents64,
        "fcntl" => libc::SYS_fcntl,
        "ioctl" => libc::SYS_ioctl,
        "dup2" => libc::SYS_dup2,
        "dup3" => libc::SYS_dup3,
        "pipe2" => libc::SYS_pipe2,
        "poll" => libc::SYS_poll,
        "ppoll" => libc::SYS_ppoll,
        "select" => libc::SYS_select,
        "pselect6" => libc::SYS_pselect6,
        "epoll_create1" => libc::SYS_epoll_create1,
        "epoll_ctl" => libc::SYS_epoll_ctl,
        "epoll_wait" => libc::SYS_epoll_wait,
        "epoll_pwait" => libc::SYS_epoll_pwait,
        "epoll_pwait2" => libc::SYS_epoll_pwait2,
        "eventfd2" => libc::SYS_eventfd2,
        "sendfile" => libc::SYS_sendfile,
        "copy_file_range" => libc::SYS_copy_file_range,
        "splice" => libc::SYS_splice,
        "tee" => libc::SYS_tee,
        "utimensat" => libc::SYS_utimensat,
        "symlinkat" => libc::SYS_symlinkat,
        "renameat2" => libc::SYS_renameat2,
        "mkdir" => libc::SYS_mkdir,
        "truncate" => libc::SYS_truncate,
        "socket" => libc::SYS_socket,
        "socketpair" => libc::SYS_socketpair,
        "bind" => libc::SYS_bind,
        "listen" => libc::SYS_listen,
        "accept4" => libc::SYS_accept4,
        "connect" => libc::SYS_connect,
        "sendto" => libc::SYS_sendto,
        "recvfrom" => libc::SYS_recvfrom,
        "sendmsg" => libc::SYS_sendmsg,
        "recvmsg" => libc::SYS_recvmsg,
        "sendmmsg" => libc::SYS_sendmmsg,
        "recvmmsg" => libc::SYS_recvmmsg,
        "getsockname" => libc::SYS_getsockname,
        "getsockopt" => libc::SYS_getsockopt,
        "setsockopt" => libc::SYS_setsockopt,
        n => return n.parse().ok(),
    })
}

/// What a run did.
struct Stats {
    inputs: u64,
    /// Calls that succeeded (returned 0 or more).
    succeeded: u64,
    /// Distinct handled calls that succeeded at least once.
    calls_that_worked: usize,
}

/// Runs the forwarder on `inputs` inputs in scratch directory `scratch`.
fn run(scratch: &std::path::Path, inputs: u64, seed: u64) -> Stats {
    let mut succeeded = 0;
    let mut worked = std::collections::BTreeSet::new();
    let reset = || {
        let _ = std::fs::remove_dir_all(scratch);
        std::fs::create_dir_all(scratch).unwrap();
        std::env::set_current_dir(scratch).unwrap();
    };
    reset();
    let mem = Guarded::new();
    let mut fwd = Forwarder::new(std::path::PathBuf::from("/bin/true"), 2);
    fwd.describe_program(vec![b"fuzz".to_vec()], (LO, HI), Vec::new());
    let close_std = |f: &Forwarder| {
        for fd in 0..3 {
            f.call(&mem, libc::SYS_close as u64, [fd, 0, 0, 0, 0, 0]);
        }
    };
    close_std(&fwd);
    let seeds = parse_seeds(include_str!("fuzz_seeds.txt"));
    let mut r = Rng(seed | 1);
    fill(&mem, &mut r);
    for n in 0..inputs {
        if n % 256 == 0 && n > 0 {
            // Fresh descriptors, files and memory contents now and then.
            fwd.shutdown();
            fwd = Forwarder::new(std::path::PathBuf::from("/bin/true"), 2);
            close_std(&fwd);
            reset();
            fill(&mem, &mut r);
        }
        let (nr, mut a) = match r.below(4) {
            // A seed, some of its words mutated.
            0 | 1 => {
                let (nr, mut a) = seeds[r.below(seeds.len() as u64) as usize];
                for _ in 0..r.below(3) {
                    a[r.below(6) as usize] = edge_word(&mut r);
                }
                (nr, a)
            }
            // A handled call with edge words.
            2 => (r.pick(HANDLED), std::array::from_fn(|_| edge_word(&mut r))),
            // Anything.
            _ => {
                (if r.below(2) == 0 { r.below(512) as i64 } else { r.next() as i64 }, std::array::from_fn(|_| r.next()))
            }
        };
        let nr = tame(&mem, nr, &mut a);
        let ret = fwd.call(&mem, nr as u64, a);
        assert!(ret >= -4095, "input {n}: {nr}({a:x?}) returned {ret}");
        if ret >= 0 {
            succeeded += 1;
            worked.insert(nr);
        }
        assert!(mem.canaries_intact(), "input {n}: {nr}({a:x?}) wrote outside guest memory");
    }
    fwd.shutdown();
    Stats { inputs, succeeded, calls_that_worked: worked.len() }
}

const CHILD_SCRATCH: &str = "HRT_FUZZ_SCRATCH";

/// The fuzz run itself, in the child process `forwarder_survives_hostile_inputs` starts (it
/// does nothing unless started that way, inside its scratch directory).
#[test]
#[ignore = "run by forwarder_survives_hostile_inputs in a child process"]
fn fuzz_child() {
    let Some(scratch) = std::env::var_os(CHILD_SCRATCH) else { return };
    let scratch = std::path::PathBuf::from(scratch);
    assert_eq!(std::env::current_dir().unwrap(), scratch.canonicalize().unwrap());
    let inputs = std::env::var("HRT_FUZZ_INPUTS").ok().and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let start = std::time::Instant::now();
    let s = run(&scratch, inputs, 0x9e37_79b9_7f4a_7c15);
    println!(
        "fuzz: {} inputs ({} succeeded, {} different calls succeeded), no panic, no access outside guest memory ({:.1} s)",
        s.inputs,
        s.succeeded,
        s.calls_that_worked,
        start.elapsed().as_secs_f64()
    );
}

#[test]
fn forwarder_survives_hostile_inputs() {
    let scratch = std::env::temp_dir().join(format!("hrt-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "forward::fuzz::fuzz_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_SCRATCH, &scratch)
        .current_dir(&scratch)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&scratch);
    let text = String::from_utf8_lossy(&out.stdout);
    let report = text.lines().find_map(|l| l.find("fuzz: ").map(|i| &l[i..]));
    assert!(
        out.status.success() && report.is_some(),
        "the fuzz run failed ({}):\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{}", report.unwrap());
}

#[test]
fn seeds_parse() {
    let seeds = parse_seeds(include_str!("fuzz_seeds.txt"));
    assert!(seeds.len() >= 20);
}
