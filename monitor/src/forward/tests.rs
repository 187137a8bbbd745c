//! Host tests of the forwarder (no VM): guest memory is a host buffer.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::guest_mem::{VecMemory, PATH_MAX};
use super::{Forwarder, CWD, HANDLED};

const MEM: usize = 1 << 20;
const EFAULT: i64 = -(libc::EFAULT as i64);
const EBADF: i64 = -(libc::EBADF as i64);
const EINVAL: i64 = -(libc::EINVAL as i64);
const ENOENT: i64 = -(libc::ENOENT as i64);

/// Tests that change the process's working directory take this.
static CWD_LOCK: Mutex<()> = Mutex::new(());

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "hrt-forward-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A forwarder, guest memory and a bump allocator in it.
struct T {
    mem: VecMemory,
    fwd: Forwarder,
    next: AtomicU64,
}

impl T {
    fn new() -> T {
        T {
            mem: VecMemory::new(MEM),
            fwd: Forwarder::new(PathBuf::from("/bin/true"), 2),
            next: AtomicU64::new(0x10000),
        }
    }

    fn call(&self, nr: libc::c_long, args: &[u64]) -> i64 {
        let mut a = [0u64; 6];
        a[..args.len()].copy_from_slice(args);
        self.fwd.call(&self.mem, nr as u64, a)
    }

    fn alloc(&self, len: u64) -> u64 {
        let len = (len + 15) & !15;
        let a = self.next.fetch_add(len, Ordering::Relaxed);
        assert!(a + len < self.mem.len() - 0x10000, "test memory exhausted");
        a
    }

    fn bytes(&self, data: &[u8]) -> u64 {
        let a = self.alloc(data.len() as u64);
        self.mem.put(a, data);
        a
    }

    fn path(&self, p: &Path) -> u64 {
        let c = CString::new(p.as_os_str().as_bytes()).unwrap();
        self.bytes(c.as_bytes_with_nul())
    }

    fn str(&self, s: &str) -> u64 {
        self.bytes(CString::new(s).unwrap().as_bytes_with_nul())
    }

    fn open(&self, p: &Path, flags: i32) -> i64 {
        let a = self.path(p);
        self.call(libc::SYS_openat, &[CWD, a, flags as u64, 0o600])
    }

    fn read_u64(&self, addr: u64) -> u64 {
        u64::from_ne_bytes(self.mem.get(addr, 8).try_into().unwrap())
    }
}

fn is_open_on_host(fd: i32) -> bool {
    // SAFETY: F_GETFD only reads flags.
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

#[test]
fn file_round_trip() {
    let t = T::new();
    let dir = TempDir::new("rt");
    let fd = t.open(&dir.join("f"), libc::O_CREAT | libc::O_RDWR);
    assert!(fd >= 0, "openat: {fd}");
    let data = t.bytes(b"hello, forwarded world\n");
    assert_eq!(t.call(libc::SYS_write, &[fd as u64, data, 23]), 23);
    assert_eq!(t.call(libc::SYS_lseek, &[fd as u64, 0, libc::SEEK_SET as u64]), 0);
    let buf = t.alloc(64);
    assert_eq!(t.call(libc::SYS_read, &[fd as u64, buf, 64]), 23);
    assert_eq!(t.mem.get(buf, 23), b"hello, forwarded world\n");
    assert_eq!(t.call(libc::SYS_pread64, &[fd as u64, buf, 5, 7]), 5);
    assert_eq!(t.mem.get(buf, 5), b"forwa");
    let st = t.alloc(144);
    assert_eq!(t.call(libc::SYS_fstat, &[fd as u64, st]), 0);
    // SAFETY: 144 bytes are a struct stat.
    let stat: libc::stat = unsafe { std::ptr::read_unaligned(t.mem.get(st, 144).as_ptr() as *const libc::stat) };
    assert_eq!(stat.st_size, 23);
    assert_eq!(stat.st_mode & libc::S_IFMT, libc::S_IFREG);
    // stat by name and statx agree.
    let p = t.path(&dir.join("f"));
    assert_eq!(t.call(libc::SYS_stat, &[p, st]), 0);
    let stx = t.alloc(256);
    assert_eq!(t.call(libc::SYS_statx, &[CWD, p, 0, libc::STATX_SIZE as u64, stx]), 0);
    assert_eq!(t.read_u64(stx + 40), 23, "statx stx_size");
    // ftruncate, then the size shows.
    assert_eq!(t.call(libc::SYS_ftruncate, &[fd as u64, 5]), 0);
    assert_eq!(t.call(libc::SYS_fsync, &[fd as u64]), 0);
    assert_eq!(std::fs::read(dir.join("f")).unwrap(), b"hello");
    assert_eq!(t.call(libc::SYS_close, &[fd as u64]), 0);
    assert_eq!(t.call(libc::SYS_close, &[fd as u64]), EBADF);
    assert_eq!(t.call(libc::SYS_read, &[fd as u64, buf, 1]), EBADF);
}

#[test]
fn readv_writev() {
    let t = T::new();
    let dir = TempDir::new("iov");
    let fd = t.open(&dir.join("v"), libc::O_CREAT | libc::O_RDWR) as u64;
    let parts: [&[u8]; 3] = [b"abc", b"", b"defgh"];
    let iov = t.alloc(48);
    for (i, p) in parts.iter().enumerate() {
        let base = if p.is_empty() { 0 } else { t.bytes(p) }; // a NULL base with length 0 is fine
        t.mem.put(iov + 16 * i as u64, &base.to_ne_bytes());
        t.mem.put(iov + 16 * i as u64 + 8, &(p.len() as u64).to_ne_bytes());
    }
    assert_eq!(t.call(libc::SYS_writev, &[fd, iov, 3]), 8);
    assert_eq!(std::fs::read(dir.join("v")).unwrap(), b"abcdefgh");
    // Read back into two buffers.
    let (b1, b2) = (t.alloc(16), t.alloc(16));
    let riov = t.alloc(32);
    t.mem.put(riov, &b1.to_ne_bytes());
    t.mem.put(riov + 8, &2u64.to_ne_bytes());
    t.mem.put(riov + 16, &b2.to_ne_bytes());
    t.mem.put(riov + 24, &16u64.to_ne_bytes());
    assert_eq!(t.call(libc::SYS_preadv, &[fd, riov, 2, 0, 0]), 8);
    assert_eq!(t.mem.get(b1, 2), b"ab");
    assert_eq!(t.mem.get(b2, 6), b"cdefgh");
    // The second iovec runs outside guest memory: as Linux's copy stops at the fault, the
    // first buffer's bytes are read (a short count); with the first one outside, EFAULT.
    t.mem.put(riov + 16, &(MEM as u64 - 8).to_ne_bytes());
    assert_eq!(t.call(libc::SYS_lseek, &[fd, 0, 0]), 0);
    assert_eq!(t.call(libc::SYS_readv, &[fd, riov, 2]), 2);
    t.mem.put(riov, &(MEM as u64 + 4096).to_ne_bytes());
    assert_eq!(t.call(libc::SYS_readv, &[fd, riov, 2]), EFAULT);
    // The array itself outside memory; too many entries; a negative length.
    assert_eq!(t.call(libc::SYS_writev, &[fd, MEM as u64 - 16, 2]), EFAULT);
    assert_eq!(t.call(libc::SYS_writev, &[fd, iov, 1025]), EINVAL);
    t.mem.put(iov + 8, &u64::MAX.to_ne_bytes());
    assert_eq!(t.call(libc::SYS_writev, &[fd, iov, 1]), EINVAL);
    assert_eq!(t.call(libc::SYS_writev, &[fd, iov, 0]), 0);
    // Plain read/write buffers outside memory, overflowing, or in the NULL page.
    assert_eq!(t.call(libc::SYS_write, &[fd, MEM as u64 - 4, 8]), EFAULT);
    assert_eq!(t.call(libc::SYS_write, &[fd, u64::MAX - 2, 8]), EFAULT);
    assert_eq!(t.call(libc::SYS_read, &[fd, 0, 8]), EFAULT);
    assert_eq!(t.call(libc::SYS_write, &[fd, 0, 0]), 0);
}

#[test]
fn bad_paths() {
    let t = T::new();
    let st = t.alloc(144);
    // Outside memory, in the NULL page, overflowing.
    assert_eq!(t.call(libc::SYS_stat, &[MEM as u64 + 100, st]), EFAULT);
    assert_eq!(t.call(libc::SYS_open, &[0, 0, 0]), EFAULT);
    assert_eq!(t.call(libc::SYS_open, &[u64::MAX, 0, 0]), EFAULT);
    // Unterminated at the very end of memory.
    let end = MEM as u64 - 5;
    t.mem.put(end, b"/tmpx");
    assert_eq!(t.call(libc::SYS_stat, &[end, st]), EFAULT);
    // Terminated at the very end: read fine (and the host says whether it exists).
    t.mem.put(end, b"/nox\0");
    assert_eq!(t.call(libc::SYS_stat, &[end, st]), ENOENT);
    // No NUL within PATH_MAX bytes.
    let long = t.bytes(&vec![b'a'; PATH_MAX + 10]);
    assert_eq!(t.call(libc::SYS_stat, &[long, st]), -(libc::ENAMETOOLONG as i64));
    // Exactly PATH_MAX - 1 characters and a NUL: accepted ("/" then "./" repeated is "/").
    let mut ok = b"/".to_vec();
    while ok.len() < PATH_MAX - 1 {
        ok.extend_from_slice(b"./");
    }
    ok.truncate(PATH_MAX - 1);
    ok.push(0);
    let ok = t.bytes(&ok);
    assert_eq!(t.call(libc::SYS_stat, &[ok, st]), 0);
    // stat buffer outside memory.
    let root = t.str("/");
    assert_eq!(t.call(libc::SYS_stat, &[root, MEM as u64 - 100]), EFAULT);
}

#[test]
fn directories_rename_unlink() {
    let t = T::new();
    let dir = TempDir::new("dir");
    for name in ["alpha", "beta"] {
        std::fs::write(dir.join(name), name).unwrap();
    }
    let sub = t.path(&dir.join("sub"));
    assert_eq!(t.call(libc::SYS_mkdir, &[sub, 0o755]), 0);
    assert_eq!(t.call(libc::SYS_mkdir, &[sub, 0o755]), -(libc::EEXIST as i64));
    let fd = t.open(&dir.0, libc::O_RDONLY | libc::O_DIRECTORY) as u64;
    let buf = t.alloc(4096);
    let mut names = Vec::new();
    loop {
        let n = t.call(libc::SYS_getdents64, &[fd, buf, 4096]);
        assert!(n >= 0, "getdents64: {n}");
        if n == 0 {
            break;
        }
        let data = t.mem.get(buf, n as u64);
        let mut off = 0;
        while off < data.len() {
            let reclen = u16::from_ne_bytes([data[off + 16], data[off + 17]]) as usize;
            let name = &data[off + 19..off + reclen];
            let name = &name[..name.iter().position(|&b| b == 0).unwrap()];
            names.push(String::from_utf8(name.to_vec()).unwrap());
            off += reclen;
        }
    }
    names.sort();
    assert_eq!(names, [".", "..", "alpha", "beta", "sub"]);
    assert_eq!(t.call(libc::SYS_getdents64, &[fd, MEM as u64 - 10, 4096]), EFAULT);
    // *at calls relative to a guest directory fd.
    let (alpha, gamma) = (t.str("alpha"), t.str("gamma"));
    assert_eq!(t.call(libc::SYS_renameat, &[fd, alpha, fd, gamma]), 0);
    let st = t.alloc(144);
    assert_eq!(t.call(libc::SYS_newfstatat, &[fd, gamma, st, 0]), 0);
    assert_eq!(t.call(libc::SYS_newfstatat, &[fd, alpha, st, 0]), ENOENT);
    assert_eq!(t.call(libc::SYS_faccessat, &[fd, gamma, libc::R_OK as u64]), 0);
    // Path forms.
    let (beta, delta) = (t.path(&dir.join("beta")), t.path(&dir.join("delta")));
    assert_eq!(t.call(libc::SYS_rename, &[beta, delta]), 0);
    assert!(dir.join("delta").exists() && !dir.join("beta").exists());
    assert_eq!(t.call(libc::SYS_access, &[delta, libc::F_OK as u64]), 0);
    assert_eq!(t.call(libc::SYS_chmod, &[delta, 0o640]), 0);
    assert_eq!(t.call(libc::SYS_truncate, &[delta, 2]), 0);
    assert_eq!(std::fs::read(dir.join("delta")).unwrap(), b"be");
    assert_eq!(t.call(libc::SYS_unlink, &[delta]), 0);
    assert_eq!(t.call(libc::SYS_unlink, &[delta]), ENOENT);
    assert_eq!(t.call(libc::SYS_unlinkat, &[fd, gamma, 0]), 0);
    assert_eq!(t.call(libc::SYS_rmdir, &[sub]), 0);
    assert!(!dir.join("sub").exists());
    // A bad dirfd with a relative path is EBADF; with an absolute one it is not looked at.
    let abs = t.path(&dir.0);
    assert_eq!(t.call(libc::SYS_newfstatat, &[77, gamma, st, 0]), EBADF);
    assert_eq!(t.call(libc::SYS_newfstatat, &[77, abs, st, 0]), 0);
}

#[test]
fn dup_family_and_fcntl() {
    let t = T::new();
    let dir = TempDir::new("dup");
    let a = t.open(&dir.join("a"), libc::O_CREAT | libc::O_RDWR | libc::O_CLOEXEC) as u64;
    let b = t.open(&dir.join("b"), libc::O_CREAT | libc::O_RDWR) as u64;
    assert_eq!(t.call(libc::SYS_fcntl, &[a, libc::F_GETFD as u64]), libc::FD_CLOEXEC as i64);
    assert_eq!(t.call(libc::SYS_fcntl, &[b, libc::F_GETFD as u64]), 0);
    // dup2 onto an open fd: b now names file a (and is not close-on-exec).
    assert_eq!(t.call(libc::SYS_dup2, &[a, b]), b as i64);
    assert_eq!(t.call(libc::SYS_fcntl, &[b, libc::F_GETFD as u64]), 0);
    let x = t.bytes(b"xy");
    assert_eq!(t.call(libc::SYS_write, &[b, x, 2]), 2);
    assert_eq!(std::fs::read(dir.join("a")).unwrap(), b"xy");
    assert_eq!(std::fs::read(dir.join("b")).unwrap(), b"");
    // Shared file offset (one open file description), as on Linux.
    assert_eq!(t.call(libc::SYS_lseek, &[a, 0, libc::SEEK_CUR as u64]), 2);
    // dup2 onto itself; onto a bad fd; from a bad fd; beyond the limit.
    assert_eq!(t.call(libc::SYS_dup2, &[a, a]), a as i64);
    assert_eq!(t.call(libc::SYS_dup2, &[999, a]), EBADF);
    assert_eq!(t.call(libc::SYS_dup2, &[a, u32::MAX as u64]), EBADF);
    assert_eq!(t.call(libc::SYS_dup2, &[a, 1 << 30]), EBADF);
    // dup3.
    assert_eq!(t.call(libc::SYS_dup3, &[a, a, 0]), EINVAL);
    assert_eq!(t.call(libc::SYS_dup3, &[a, 40, libc::O_NONBLOCK as u64]), EINVAL);
    assert_eq!(t.call(libc::SYS_dup3, &[a, 40, libc::O_CLOEXEC as u64]), 40);
    assert_eq!(t.call(libc::SYS_fcntl, &[40, libc::F_GETFD as u64]), libc::FD_CLOEXEC as i64);
    // dup: lowest free.
    assert_eq!(t.call(libc::SYS_close, &[b]), 0);
    assert_eq!(t.call(libc::SYS_dup, &[a]), b as i64);
    // F_DUPFD with a minimum, F_DUPFD_CLOEXEC, F_SETFD, F_GETFL/F_SETFL.
    assert_eq!(t.call(libc::SYS_fcntl, &[a, libc::F_DUPFD as u64, 10]), 10);
    assert_eq!(t.call(libc::SYS_fcntl, &[a, libc::F_DUPFD as u64, 10]), 11);
    assert_eq!(t.call(libc::SYS_fcntl, &[a, libc::F_DUPFD_CLOEXEC as u64, 10]), 12);
    assert_eq!(t.call(libc::SYS_fcntl, &[12, libc::F_GETFD as u64]), libc::FD_CLOEXEC as i64);
    assert_eq!(t.call(libc::SYS_fcntl, &[12, libc::F_SETFD as u64, 0]), 0);
    assert_eq!(t.call(libc::SYS_fcntl, &[12, libc::F_GETFD as u64]), 0);
    assert_eq!(t.call(libc::SYS_fcntl, &[a, libc::F_DUPFD as u64, 1 << 30]), EINVAL);
    let fl = t.call(libc::SYS_fcntl, &[a, libc::F_GETFL as u64]);
    assert_eq!(fl & libc::O_ACCMODE as i64, libc::O_RDWR as i64);
    assert_eq!(fl & libc::O_CLOEXEC as i64, 0, "the host's O_CLOEXEC does not show");
    assert_eq!(t.call(libc::SYS_fcntl, &[a, libc::F_SETFL as u64, libc::O_APPEND as u64]), 0);
    assert_ne!(t.call(libc::SYS_fcntl, &[a, libc::F_GETFL as u64]) & libc::O_APPEND as i64, 0);
    assert_eq!(t.call(libc::SYS_fcntl, &[a, 0x7777]), EINVAL);
    assert_eq!(t.call(libc::SYS_fcntl, &[555, libc::F_GETFD as u64]), EBADF);
    // Record locks pass through (struct flock checked).
    let fl = t.alloc(32);
    t.mem.put(fl, &(libc::F_WRLCK as i16).to_ne_bytes());
    assert_eq!(t.call(libc::SYS_fcntl, &[a, libc::F_SETLK as u64, fl]), 0);
    assert_eq!(t.call(libc::SYS_fcntl, &[a, libc::F_SETLK as u64, MEM as u64 - 8]), EFAULT);
}

#[test]
fn pipe_poll_select() {
    let t = T::new();
    let fds = t.alloc(8);
    assert_eq!(t.call(libc::SYS_pipe2, &[fds, libc::O_CLOEXEC as u64]), 0);
    let m = t.mem.get(fds, 8);
    let r = i32::from_ne_bytes(m[..4].try_into().unwrap()) as u64;
    let w = i32::from_ne_bytes(m[4..].try_into().unwrap()) as u64;
    assert_eq!(t.call(libc::SYS_fcntl, &[r, libc::F_GETFD as u64]), libc::FD_CLOEXEC as i64);
    // poll: nothing to read yet; the write end is writable; an unknown fd is POLLNVAL; a
    // negative fd is ignored.
    let pfd = t.alloc(32);
    let entries: [(i32, i16); 4] = [(r as i32, libc::POLLIN), (w as i32, libc::POLLOUT), (300, libc::POLLIN), (-1, 1)];
    for (i, (fd, ev)) in entries.iter().enumerate() {
        t.mem.put(pfd + 8 * i as u64, &fd.to_ne_bytes());
        t.mem.put(pfd + 8 * i as u64 + 4, &ev.to_ne_bytes());
        t.mem.put(pfd + 8 * i as u64 + 6, &0x5555i16.to_ne_bytes());
    }
    let revents = |i: u64| i16::from_ne_bytes(t.mem.get(pfd + 8 * i + 6, 2).try_into().unwrap());
    assert_eq!(t.call(libc::SYS_poll, &[pfd, 4, 1000]), 2, "returns at once: fd 300 is POLLNVAL");
    assert_eq!((revents(0), revents(1), revents(2), revents(3)), (0, libc::POLLOUT, libc::POLLNVAL, 0));
    assert_eq!(t.call(libc::SYS_poll, &[pfd, 1, 0]), 0);
    let data = t.bytes(b"ping");
    assert_eq!(t.call(libc::SYS_write, &[w, data, 4]), 4);
    assert_eq!(t.call(libc::SYS_poll, &[pfd, 2, u64::MAX]), 2);
    assert_eq!(revents(0), libc::POLLIN);
    // ppoll with a timeout and a (ignored) signal mask; a mask of the wrong size is EINVAL.
    let ts = t.bytes(&[0u8; 16]);
    let mask = t.bytes(&[0u8; 8]);
    assert_eq!(t.call(libc::SYS_ppoll, &[pfd, 2, ts, mask, 8]), 2);
    assert_eq!(t.call(libc::SYS_ppoll, &[pfd, 2, ts, mask, 4]), EINVAL);
    assert_eq!(t.call(libc::SYS_poll, &[MEM as u64 - 4, 1, 0]), EFAULT);
    // FIONREAD on the pipe.
    let n = t.alloc(4);
    assert_eq!(t.call(libc::SYS_ioctl, &[r, libc::FIONREAD, n]), 0);
    assert_eq!(t.mem.get(n, 4), 4i32.to_ne_bytes());

    // select: guest fd numbers in, guest fd numbers out, whatever the host numbers are.
    let set = |fds: &[u64]| {
        let mut words = [0u64; 16];
        for &fd in fds {
            words[fd as usize / 64] |= 1 << (fd % 64);
        }
        t.bytes(&words.iter().flat_map(|w| w.to_ne_bytes()).collect::<Vec<_>>())
    };
    let get = |addr: u64| -> Vec<u64> {
        let b = t.mem.get(addr, 128);
        (0..1024).filter(|&fd| b[fd as usize / 8] & (1 << (fd % 8)) != 0).collect()
    };
    let (rs, ws) = (set(&[r]), set(&[w]));
    let tv = t.bytes(&[0u8; 16]);
    assert_eq!(t.call(libc::SYS_select, &[1024, rs, ws, 0, tv]), 2);
    assert_eq!((get(rs), get(ws)), (vec![r], vec![w]));
    // Drain the pipe: only the write end is ready; the read set comes back empty.
    let buf = t.alloc(8);
    assert_eq!(t.call(libc::SYS_read, &[r, buf, 8]), 4);
    let (rs, ws) = (set(&[r]), set(&[w]));
    // 20 ms timeout: the time left is written back.
    t.mem.put(tv + 8, &20_000i64.to_ne_bytes());
    assert_eq!(t.call(libc::SYS_select, &[1024, rs, ws, 0, tv]), 1);
    assert_eq!((get(rs), get(ws)), (vec![], vec![w]));
    let rs = set(&[r]);
    assert_eq!(t.call(libc::SYS_select, &[1024, rs, 0, 0, tv]), 0, "times out");
    assert_eq!(t.mem.get(tv, 16), [0u8; 16], "no time left");
    // pselect6 with a sigmask argument pack.
    let (rs, ws) = (set(&[r]), set(&[w]));
    let ts = t.bytes(&[0u8; 16]);
    let pack = t.alloc(16);
    t.mem.put(pack, &mask.to_ne_bytes());
    t.mem.put(pack + 8, &8u64.to_ne_bytes());
    assert_eq!(t.call(libc::SYS_pselect6, &[1024, rs, ws, 0, ts, pack]), 1);
    assert_eq!(get(ws), vec![w]);
    // An fd in a set that the guest does not have: EBADF within Linux's table (64 descriptors
    // here), ignored beyond it; negative nfds: EINVAL; a set outside memory: EFAULT.
    let bad = set(&[r, 40]);
    assert_eq!(t.call(libc::SYS_select, &[1024, bad, 0, 0, tv]), EBADF);
    let beyond = set(&[r, 200]);
    assert_eq!(t.call(libc::SYS_select, &[1024, beyond, 0, 0, tv]), 0, "times out");
    assert_eq!(t.call(libc::SYS_select, &[u64::MAX, rs, 0, 0, tv]), EINVAL);
    // (Only the table's 64 bits are read, as by Linux: the set must cross the end within them.)
    assert_eq!(t.call(libc::SYS_select, &[1024, MEM as u64 - 4, 0, 0, tv]), EFAULT);
    // Closing the write end: the read end sees EOF.
    assert_eq!(t.call(libc::SYS_close, &[w]), 0);
    assert_eq!(t.call(libc::SYS_read, &[r, buf, 8]), 0);
    assert_eq!(t.call(libc::SYS_pipe, &[MEM as u64 - 4]), EFAULT);
}

#[test]
fn blocking_read_on_a_pipe_from_another_thread() {
    let t = T::new();
    let fds = t.alloc(8);
    assert_eq!(t.call(libc::SYS_pipe, &[fds]), 0);
    let m = t.mem.get(fds, 8);
    let r = i32::from_ne_bytes(m[..4].try_into().unwrap()) as u64;
    let w = i32::from_ne_bytes(m[4..].try_into().unwrap()) as u64;
    let buf = t.alloc(16);
    let data = t.bytes(b"late");
    std::thread::scope(|s| {
        let reader = s.spawn(|| t.call(libc::SYS_read, &[r, buf, 16]));
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(t.call(libc::SYS_write, &[w, data, 4]), 4);
        assert_eq!(reader.join().unwrap(), 4);
    });
    assert_eq!(t.mem.get(buf, 4), b"late");
}

#[test]
fn readlink_proc_self() {
    let t = T::new();
    let buf = t.alloc(4096);
    let exe = t.str("/proc/self/exe");
    let n = t.call(libc::SYS_readlink, &[exe, buf, 4096]);
    let want = std::fs::canonicalize("/bin/true").unwrap();
    assert_eq!(n, want.as_os_str().len() as i64);
    assert_eq!(t.mem.get(buf, n as u64), want.as_os_str().as_bytes());
    // The *at form with AT_FDCWD, a short buffer (truncated), a bad size, the other spellings.
    assert_eq!(t.call(libc::SYS_readlinkat, &[CWD, exe, buf, 3]), 3);
    assert_eq!(t.call(libc::SYS_readlinkat, &[CWD, exe, buf, 0]), EINVAL);
    let exe2 = t.str("/proc/./self/../thread-self/exe");
    assert_eq!(t.call(libc::SYS_readlinkat, &[CWD, exe2, buf, 4096]), n);
    let exe3 = t.str(&format!("/proc/{}/exe", std::process::id()));
    assert_eq!(t.call(libc::SYS_readlink, &[exe3, buf, 4096]), n);
    // stat of /proc/self/exe is the program's file.
    let st = t.alloc(144);
    assert_eq!(t.call(libc::SYS_stat, &[exe, st]), 0);

    // /proc/self/fd/N is the guest's fd N.
    let dir = TempDir::new("fdlink");
    let fd = t.open(&dir.join("target"), libc::O_CREAT | libc::O_RDWR);
    let link = t.str(&format!("/proc/self/fd/{fd}"));
    let n = t.call(libc::SYS_readlink, &[link, buf, 4096]);
    assert_eq!(t.mem.get(buf, n as u64), dir.join("target").as_os_str().as_bytes());
    let devfd = t.str(&format!("/dev/fd/{fd}"));
    assert_eq!(t.call(libc::SYS_readlink, &[devfd, buf, 4096]), n);
    // A host descriptor the guest does not have is not reachable through /proc.
    let host = std::fs::File::open("/dev/null").unwrap();
    let hostfd = std::os::fd::AsRawFd::as_raw_fd(&host);
    if t.call(libc::SYS_fcntl, &[hostfd as u64, libc::F_GETFD as u64]) == EBADF {
        let p = t.str(&format!("/proc/self/fd/{hostfd}"));
        assert_eq!(t.call(libc::SYS_open, &[p, libc::O_RDONLY as u64]), ENOENT);
        assert_eq!(t.call(libc::SYS_readlink, &[p, buf, 4096]), ENOENT);
    }
    let mem = t.str("/proc/self/mem");
    assert_eq!(t.call(libc::SYS_open, &[mem, libc::O_RDONLY as u64]), -(libc::EACCES as i64));
    // The monitor's /proc/self directory itself can be opened (ps stats it), but nothing
    // harmful can be reached through it; relative to /proc, the program's spellings still work.
    let eacces = -(libc::EACCES as i64);
    let self_dir = t.open(Path::new("/proc/self"), libc::O_RDONLY | libc::O_DIRECTORY);
    assert!(self_dir >= 0, "{self_dir}");
    for name in ["mem", "pagemap", "task/../mem", "./mem"] {
        let rel = t.str(name);
        assert_eq!(t.call(libc::SYS_openat, &[self_dir as u64, rel, libc::O_RDONLY as u64]), eacces, "{name}");
    }
    let rel = t.str("exe");
    assert_eq!(t.call(libc::SYS_readlinkat, &[self_dir as u64, rel, buf, 4096]), want.as_os_str().len() as i64);
    let proc_dir = t.open(Path::new("/proc"), libc::O_RDONLY | libc::O_DIRECTORY) as u64;
    let rel = t.str("self/exe");
    assert_eq!(t.call(libc::SYS_readlinkat, &[proc_dir, rel, buf, 4096]), want.as_os_str().len() as i64);
    // Other spellings of the monitor's memory: a dirfd of "/", through cwd, a thread's id.
    let root = t.open(Path::new("/"), libc::O_RDONLY | libc::O_DIRECTORY) as u64;
    let rel = t.str("proc/self/mem");
    assert_eq!(t.call(libc::SYS_openat, &[root, rel, libc::O_RDWR as u64]), eacces);
    // The program's cwd and root links lead to its directories, not the monitor's links: from
    // this test's working directory (no proc/ in it) and from `/`.
    let via_cwd = t.str("/proc/self/cwd/proc/self/mem");
    assert_eq!(t.call(libc::SYS_open, &[via_cwd, libc::O_RDONLY as u64]), ENOENT);
    let via_root = t.str("/proc/self/root/proc/self/mem");
    assert_eq!(t.call(libc::SYS_open, &[via_root, libc::O_RDONLY as u64]), eacces);
    let via_both = t.str("/proc/self/root/proc/thread-self/cwd/../../../../../../../../proc/self/mem");
    assert_eq!(t.call(libc::SYS_open, &[via_both, libc::O_RDONLY as u64]), eacces);
    // SAFETY: gettid has no arguments.
    let tid = unsafe { libc::gettid() };
    let by_tid = t.str(&format!("/proc/{tid}/mem"));
    assert_eq!(t.call(libc::SYS_open, &[by_tid, libc::O_RDONLY as u64]), eacces);
    let kvm_like = t.str(&format!("/proc/{tid}/fd/{hostfd}"));
    assert_eq!(t.call(libc::SYS_open, &[kvm_like, libc::O_RDONLY as u64]), eacces);
    // The program's own cmdline.
    let cmdline = t.str("/proc/self/cmdline");
    let fd = t.call(libc::SYS_open, &[cmdline, libc::O_RDONLY as u64]);
    assert!(fd >= 0);
    assert_eq!(t.call(libc::SYS_read, &[fd as u64, buf, 4096]), 0, "no argv described: empty");
}

#[test]
fn ioctl_on_non_tty() {
    let t = T::new();
    let dir = TempDir::new("ioctl");
    let fd = t.open(&dir.join("f"), libc::O_CREAT | libc::O_RDWR) as u64;
    let buf = t.alloc(64);
    let enotty = -(libc::ENOTTY as i64);
    assert_eq!(t.call(libc::SYS_ioctl, &[fd, libc::TCGETS, buf]), enotty);
    assert_eq!(t.call(libc::SYS_ioctl, &[fd, libc::TIOCGWINSZ, buf]), enotty);
    assert_eq!(t.call(libc::SYS_ioctl, &[fd, 0x1234, buf]), enotty);
    // Linux looks at the descriptor first: ENOTTY even with a bad pointer...
    assert_eq!(t.call(libc::SYS_ioctl, &[fd, libc::TCGETS, MEM as u64 - 8]), enotty);
    assert_eq!(t.call(libc::SYS_ioctl, &[fd, libc::TCGETS, 0]), enotty);
    // ...and EFAULT where the request applies (FIONREAD on a pipe).
    let fds = t.alloc(8);
    assert_eq!(t.call(libc::SYS_pipe2, &[fds, 0]), 0);
    let rd = u32::from_ne_bytes(t.mem.get(fds, 4).try_into().unwrap()) as u64;
    assert_eq!(t.call(libc::SYS_ioctl, &[rd, libc::FIONREAD, MEM as u64 - 2]), EFAULT);
    assert_eq!(t.call(libc::SYS_ioctl, &[rd, libc::FIONREAD, buf]), 0);
    assert_eq!(t.call(libc::SYS_ioctl, &[99, libc::TCGETS, buf]), EBADF);
    assert_eq!(t.call(libc::SYS_ioctl, &[fd, libc::FIOCLEX, 0]), 0);
    assert_eq!(t.call(libc::SYS_fcntl, &[fd, libc::F_GETFD as u64]), libc::FD_CLOEXEC as i64);
}

#[test]
fn bad_fds_and_unknown_calls() {
    let t = T::new();
    let buf = t.alloc(16);
    for fd in [99u64, u64::MAX, u32::MAX as u64, 1 << 31, (1 << 40) | 99] {
        assert_eq!(t.call(libc::SYS_read, &[fd, buf, 1]), EBADF, "fd {fd:#x}");
    }
    assert_eq!(t.call(libc::SYS_close, &[1000]), EBADF);
    assert_eq!(t.call(libc::SYS_fstat, &[1000, buf]), EBADF);
    assert_eq!(t.call(libc::SYS_lseek, &[1000, 0, 0]), EBADF);
    let enosys = -(libc::ENOSYS as i64);
    assert_eq!(t.call(1000, &[]), enosys);
    assert_eq!(t.call(libc::SYS_mmap, &[]), enosys);
    assert_eq!(t.fwd.call(&t.mem, u64::MAX, [0; 6]), enosys);
    assert!(!Forwarder::handles(libc::SYS_clone as u64) && !Forwarder::handles(u64::MAX));
}

#[test]
fn every_handled_call_is_dispatched() {
    let t = T::new();
    for &nr in HANDLED {
        assert!(Forwarder::handles(nr as u64));
        if nr == libc::SYS_vhangup {
            // Not made: it takes no arguments to make it fail, and would hang up the
            // terminal of whoever runs the tests.
            continue;
        }
        if nr == libc::SYS_umask {
            // Never fails; all ones would take every permission from this process's new files
            // (the other tests'): the usual 022, then whatever it was.
            let old = t.call(nr, &[0o022]);
            assert!(old >= 0, "umask: {old}");
            t.call(nr, &[old as u64]);
            continue;
        }
        if nr == libc::SYS_sync {
            assert_eq!(t.call(nr, &[]), 0, "sync never fails");
            continue;
        }
        if [libc::SYS_setreuid, libc::SYS_setresuid, libc::SYS_setregid, libc::SYS_setresgid].contains(&nr) {
            // All ones leaves every id as it is: a success that changes nothing, as on Linux.
            assert_eq!(t.call(nr, &[u64::MAX; 6]), 0, "nr {nr}");
            continue;
        }
        if nr == libc::SYS_msgget {
            // All ones is key 0xffffffff with IPC_CREAT | IPC_EXCL: a new queue, as on Linux
            // (EEXIST if another run left one). Removed again: queues outlive processes.
            let r = t.call(nr, &[u64::MAX; 6]);
            assert!(r >= 0 || r == -(libc::EEXIST as i64), "msgget: {r}");
            if r >= 0 {
                t.call(libc::SYS_msgctl, &[r as u64, libc::IPC_RMID as u64, 0]);
            }
            continue;
        }
        // All-ones arguments: bad fds, bad pointers, bad sizes — never ENOSYS, never a panic.
        let r = t.call(nr, &[u64::MAX; 6]);
        let never_fails = [
            libc::SYS_eventfd,
            libc::SYS_inotify_init,
            libc::SYS_getppid,
            libc::SYS_flock,
            libc::SYS_setfsuid,
            libc::SYS_setfsgid,
        ];
        if never_fails.contains(&nr) {
            // eventfd's one argument is a start count, and all ones is a valid one (as on
            // Linux); inotify_init and getppid take none; flock ignores an operation with
            // LOCK_MAND before it looks at the descriptor (0, as on Linux); setfsuid and
            // setfsgid of all ones only ask (the previous id).
            assert!(r >= 0, "nr {nr}: {r}");
            continue;
        }
        assert!(r < 0 && r != -(libc::ENOSYS as i64), "nr {nr}: {r}");
    }
}

#[test]
fn guest_fds_are_the_guests_own() {
    // Hold host descriptors with large numbers (as the monitor's KVM and memory ones may be).
    let dev_null = std::fs::File::open("/dev/null").unwrap();
    let held: Vec<std::os::fd::OwnedFd> = (0..8)
        .filter_map(|i| {
            // SAFETY: F_DUPFD creates a new descriptor, owned below.
            let fd = unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&dev_null), libc::F_DUPFD, 200 + i) };
            // SAFETY: `fd` is a fresh descriptor nobody else owns.
            (fd >= 0).then(|| unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) })
        })
        .collect();
    let t = T::new();
    let dir = TempDir::new("dense");
    let mut guest = Vec::new();
    for i in 0..5 {
        guest.push(t.open(&dir.join(&format!("f{i}")), libc::O_CREAT | libc::O_RDWR));
    }
    let first = guest[0];
    assert!((0..=3).contains(&first), "the first guest open gets a small number: {first}");
    assert_eq!(guest, (first..first + 5).collect::<Vec<_>>(), "lowest free, dense");
    // Host descriptors the guest did not open are EBADF to it.
    let buf = t.alloc(8);
    for f in &held {
        let h = std::os::fd::AsRawFd::as_raw_fd(f) as u64;
        assert!(h >= 200);
        assert_eq!(t.call(libc::SYS_read, &[h, buf, 1]), EBADF, "host fd {h}");
    }
    // A closed slot is reused first.
    assert_eq!(t.call(libc::SYS_close, &[guest[1] as u64]), 0);
    assert_eq!(t.open(&dir.join("again"), libc::O_CREAT | libc::O_RDWR), guest[1]);
    // shutdown closes every host descriptor the forwarder opened.
    t.fwd.shutdown();
    assert_eq!(t.call(libc::SYS_read, &[guest[0] as u64, buf, 1]), EBADF);
}

#[test]
fn standard_fds_are_borrowed() {
    let t = T::new();
    if t.call(libc::SYS_fcntl, &[2, libc::F_GETFD as u64]) < 0 {
        return; // the test process has no inherited stderr
    }
    assert_eq!(t.call(libc::SYS_close, &[2]), 0);
    assert_eq!(t.call(libc::SYS_fcntl, &[2, libc::F_GETFD as u64]), EBADF);
    assert!(is_open_on_host(2), "the host's stderr stays open for the monitor");
    // The next guest descriptor takes the freed number 2.
    let dir = TempDir::new("std");
    assert!((0..=2).contains(&t.open(&dir.join("e"), libc::O_CREAT | libc::O_WRONLY)));
    t.fwd.shutdown();
    assert!(is_open_on_host(2));
}

#[test]
fn cwd_calls() {
    let _lock = CWD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let saved = std::env::current_dir().unwrap();
    let t = T::new();
    let dir = TempDir::new("cwd");
    let real = std::fs::canonicalize(&dir.0).unwrap();
    let p = t.path(&dir.0);
    assert_eq!(t.call(libc::SYS_chdir, &[p]), 0);
    let buf = t.alloc(4096);
    let n = t.call(libc::SYS_getcwd, &[buf, 4096]);
    assert_eq!(n as usize, real.as_os_str().len() + 1, "length with the NUL");
    assert_eq!(t.mem.get(buf, n as u64 - 1), real.as_os_str().as_bytes());
    assert_eq!(t.call(libc::SYS_getcwd, &[buf, 2]), -(libc::ERANGE as i64));
    assert_eq!(t.call(libc::SYS_getcwd, &[MEM as u64 - 2, 4096]), EFAULT);
    // Relative paths resolve against it.
    let rel = t.str("made-here");
    let fd = t.call(libc::SYS_creat, &[rel, 0o600]);
    assert!(fd >= 0);
    assert!(dir.join("made-here").exists());
    // fchdir back via a guest directory fd.
    let root = t.open(Path::new("/"), libc::O_RDONLY | libc::O_DIRECTORY) as u64;
    assert_eq!(t.call(libc::SYS_fchdir, &[root]), 0);
    assert_eq!(t.call(libc::SYS_getcwd, &[buf, 4096]), 2);
    // A relative /proc path from inside /proc is checked too.
    let proc_ = t.str("/proc");
    assert_eq!(t.call(libc::SYS_chdir, &[proc_]), 0);
    let rel_exe = t.str("self/exe");
    let n = t.call(libc::SYS_readlink, &[rel_exe, buf, 4096]);
    assert_eq!(t.mem.get(buf, n as u64), std::fs::canonicalize("/bin/true").unwrap().as_os_str().as_bytes());
    std::env::set_current_dir(saved).unwrap();
}

#[test]
fn links_times_sendfile() {
    let t = T::new();
    let dir = TempDir::new("misc");
    std::fs::write(dir.join("src"), b"0123456789").unwrap();
    let (src, hard, soft) = (t.path(&dir.join("src")), t.path(&dir.join("hard")), t.path(&dir.join("soft")));
    assert_eq!(t.call(libc::SYS_link, &[src, hard]), 0);
    assert_eq!(t.call(libc::SYS_symlink, &[t.str("src"), soft]), 0);
    let buf = t.alloc(64);
    assert_eq!(t.call(libc::SYS_readlink, &[soft, buf, 64]), 3);
    assert_eq!(t.mem.get(buf, 3), b"src");
    let st = t.alloc(144);
    assert_eq!(t.call(libc::SYS_lstat, &[soft, st]), 0);
    // utimensat: NULL times (now), explicit times, through a NULL path on a descriptor.
    assert_eq!(t.call(libc::SYS_utimensat, &[CWD, src, 0, 0]), 0);
    let times = t.bytes(&[[5i64, 0], [7, 0]].iter().flatten().flat_map(|v| v.to_ne_bytes()).collect::<Vec<_>>());
    assert_eq!(t.call(libc::SYS_utimensat, &[CWD, src, times, 0]), 0);
    assert_eq!(std::fs::metadata(dir.join("src")).map(|m| std::os::unix::fs::MetadataExt::mtime(&m)).unwrap(), 7);
    let fd = t.open(&dir.join("src"), libc::O_RDONLY) as u64;
    assert_eq!(t.call(libc::SYS_utimensat, &[fd, 0, 0, 0]), 0);
    assert_eq!(t.call(libc::SYS_fchmod, &[fd, 0o600]), 0);
    // sendfile with an offset in guest memory.
    let out = t.open(&dir.join("copy"), libc::O_CREAT | libc::O_WRONLY) as u64;
    let off = t.bytes(&3i64.to_ne_bytes());
    assert_eq!(t.call(libc::SYS_sendfile, &[out, fd, off, 4]), 4);
    assert_eq!(t.read_u64(off), 7);
    assert_eq!(std::fs::read(dir.join("copy")).unwrap(), b"3456");
    assert_eq!(t.call(libc::SYS_sendfile, &[out, fd, MEM as u64 - 4, 4]), EFAULT);
}

#[test]
fn concurrent_callers() {
    let t = T::new();
    let dir = TempDir::new("conc");
    std::thread::scope(|s| {
        for i in 0..4 {
            let (t, dir) = (&t, &dir);
            s.spawn(move || {
                let buf = t.alloc(16);
                for j in 0..100 {
                    let fd = t.open(&dir.join(&format!("t{i}")), libc::O_CREAT | libc::O_RDWR | libc::O_TRUNC);
                    assert!(fd >= 0);
                    let d = t.bytes(format!("{i}:{j:03}").as_bytes());
                    assert_eq!(t.call(libc::SYS_write, &[fd as u64, d, 5]), 5);
                    assert_eq!(t.call(libc::SYS_pread64, &[fd as u64, buf, 16, 0]), 5);
                    assert_eq!(t.mem.get(buf, 5), format!("{i}:{j:03}").as_bytes());
                    assert_eq!(t.call(libc::SYS_close, &[fd as u64]), 0);
                }
            });
        }
    });
}

/// A spawn child's calls (their number tagged with its context) act on its own copy of the
/// descriptor table: its close and dup2 leave the program's descriptors alone; an unknown
/// context is ENOSYS; the program's own process calls need no context, a child's need one.
#[test]
fn a_spawn_child_has_its_own_descriptor_table() {
    use hrt_abi::process as op;
    let t = T::new();
    let fds = t.alloc(8);
    assert_eq!(t.call(libc::SYS_pipe2, &[fds, 0]), 0);
    let (r, w) = (t.mem.get(fds, 4), t.mem.get(fds + 4, 4));
    let (r, w) = (u32::from_le_bytes(r.try_into().unwrap()) as u64, u32::from_le_bytes(w.try_into().unwrap()) as u64);
    let ctx = 1234u64 << op::CONTEXT_SHIFT;
    assert_eq!(t.fwd.call(&t.mem, ctx | libc::SYS_close as u64, [r, 0, 0, 0, 0, 0]), -(libc::ENOSYS as i64));
    assert_eq!(t.call(op::CHILD_BEGIN as libc::c_long, &[1234]), 0);
    let child = |nr: libc::c_long, a: [u64; 6]| t.fwd.call(&t.mem, ctx | nr as u64, a);
    assert_eq!(child(libc::SYS_close, [r, 0, 0, 0, 0, 0]), 0);
    assert_eq!(child(libc::SYS_close, [r, 0, 0, 0, 0, 0]), -(libc::EBADF as i64));
    assert_eq!(child(libc::SYS_dup2, [w, 40, 0, 0, 0, 0]), 40);
    // The program still has its read end, and no fd 40.
    assert_eq!(t.call(libc::SYS_fcntl, &[r, libc::F_GETFD as u64]), 0);
    assert_eq!(t.call(libc::SYS_fcntl, &[40, libc::F_GETFD as u64]), -(libc::EBADF as i64));
    // Exec-only calls are refused outside a child, and wait needs no context.
    assert_eq!(t.call(op::EXEC as libc::c_long, &[0; 6]), -(libc::EINVAL as i64));
    assert_eq!(child(op::WAIT4 as libc::c_long, [0; 6]), -(libc::EINVAL as i64));
    // kill reaches any process the host lets `hrt` signal, as natively (SIGCONT to init:
    // harmless), and signal 0 only asks whether a process exists.
    let r = t.call(op::KILL as libc::c_long, &[1, libc::SIGCONT as u64]);
    assert!(r == 0 || r == -(libc::EPERM as i64), "kill(1, SIGCONT): {r}");
    assert_eq!(t.call(op::KILL as libc::c_long, &[1, 0]), 0);
    assert_eq!(t.call(op::CHILD_END as libc::c_long, &[1234]), 0);
    assert_eq!(child(libc::SYS_close, [w, 0, 0, 0, 0, 0]), -(libc::ENOSYS as i64));
    assert_eq!(t.call(libc::SYS_close, &[w]), 0);
}

/// Links in the program's tree whose bodies lead into /proc or /dev mean the program's
/// entries there, as a path given that way does (they met the monitor's own /proc/self:
/// EACCES for `ln -s /proc/self/fd/3 x; cat x`), and still never reach the monitor's.
#[test]
fn links_into_proc_mean_the_programs_entries() {
    let t = T::new();
    let dir = TempDir::new("proclinks");
    std::fs::create_dir(dir.join("d")).unwrap();
    std::fs::write(dir.join("d/f"), b"12345").unwrap();
    let dfd = t.open(&dir.join("d"), libc::O_RDONLY | libc::O_DIRECTORY);
    let ffd = t.open(&dir.join("d/f"), libc::O_RDONLY);
    assert!(dfd >= 0 && ffd >= 0);
    let link = |name: &str, body: String| std::os::unix::fs::symlink(body, dir.join(name)).unwrap();
    link("pd", format!("/proc/self/fd/{dfd}"));
    link("pf", format!("/dev/fd/{ffd}"));
    link("mem", "/proc/self/mem".to_string());
    link("loop", format!("/proc/self/fd/{dfd}/../loop"));
    let st = t.alloc(144);
    let stat_size = |p: &str| match t.call(libc::SYS_stat, &[t.path(&dir.join(p)), st]) {
        0 => t.read_u64(st + 48) as i64,
        e => e,
    };
    assert_eq!(stat_size("pf"), 5, "a link to /dev/fd/N is the program's descriptor N");
    assert_eq!(stat_size("pd/f"), 5, "below a link to /proc/self/fd/N");
    assert_eq!(t.call(libc::SYS_mkdir, &[t.path(&dir.join("pd/new")), 0o755]), 0);
    assert!(dir.join("d/new").is_dir());
    let eacces = -(libc::EACCES as i64);
    assert_eq!(t.open(&dir.join("mem"), libc::O_RDONLY), eacces, "the monitor's memory stays out of reach");
    assert_eq!(stat_size("loop"), -(libc::ELOOP as i64));
    // A call on the directory entry /proc/self/fd/N itself meets a procfs entry, as on Linux.
    let own = t.str(&format!("/proc/self/fd/{ffd}"));
    assert_eq!(t.call(libc::SYS_mkdir, &[own, 0o755]), -(libc::EEXIST as i64));
    assert_eq!(t.call(libc::SYS_unlink, &[own]), -(libc::EPERM as i64));
    let missing = t.str("/proc/self/fd/999");
    assert_eq!(t.call(libc::SYS_rename, &[t.path(&dir.join("d/f")), missing]), -(libc::EXDEV as i64));
    assert!(dir.join("d/f").exists());
}
