//! A file's bytes in memory (the program's, its interpreter's, an exec's).
//!
//! A file of 256 KiB or more is mapped from the host's page cache, read-only and private: its
//! bytes cost no fresh host memory. Reading it into memory of `hrt`'s own cost a fresh host
//! page per 2 MiB, which the host clears (0.3-3 ms each here, on a host that is itself a
//! VM): for Node.js's 99 MB executable, ~50 pages before the program was even placed. A
//! mapping would raise SIGBUS in `hrt` if another process truncated the file meanwhile, so a
//! SIGBUS in a mapping made here is repaired: the rest of the mapping becomes zero pages and
//! the read goes on (what the kernel then loads is zeros there; natively the program itself
//! would get the SIGBUS). Where the host refuses the mapping, the file is read into one
//! transparent huge page where the host allows it (one fault, one 2 MiB clear), a smaller file
//! into a `Vec`.

use std::io::Read;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// 2 MiB: the huge page a file is read into where it cannot be mapped.
const HUGE: usize = 2 << 20;
/// Smaller files go into a `Vec`: a few 4 KiB faults cost less than a mapping's set-up or a
/// huge page's clearing (ld.so's 240 KiB and a dynamic program's few KiB: 0.1-0.4 ms more in
/// huge pages here).
const HUGE_FROM: usize = 256 << 10;
const PAGE: usize = 4096;

pub enum FileBytes {
    /// `[ptr, ptr + len)`: the file, mapped private and read-only (`mapped` bytes at `ptr`).
    File {
        ptr: *mut u8,
        len: usize,
        mapped: usize,
    },
    /// Read into `[ptr, ptr + len)` of an anonymous mapping of `mapped` bytes at `ptr`.
    Mapped {
        ptr: *mut u8,
        len: usize,
        mapped: usize,
    },
    Owned(Vec<u8>),
}

// SAFETY: the mapping is owned by this value alone, like a Vec's buffer.
unsafe impl Send for FileBytes {}
// SAFETY: shared access only reads it.
unsafe impl Sync for FileBytes {}

impl FileBytes {
    /// Reads at most `limit` bytes of `file` (a regular file, whose size is `limit`).
    pub fn read(file: std::fs::File, limit: u64) -> std::io::Result<FileBytes> {
        if let Some(mapped) = map_file(&file, limit) {
            return Ok(mapped);
        }
        let Some(mut buf) = HugeBuffer::new(limit as usize) else {
            let mut bytes = Vec::with_capacity(limit.min(1 << 30) as usize);
            file.take(limit).read_to_end(&mut bytes)?;
            return Ok(FileBytes::Owned(bytes));
        };
        let mut file = file.take(limit);
        let mut len = 0;
        while len < buf.capacity {
            // SAFETY: `[len, capacity)` of the mapping is writable memory this value owns.
            let room = unsafe { std::slice::from_raw_parts_mut(buf.ptr.add(len), buf.capacity - len) };
            match file.read(room) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let (ptr, mapped) = (buf.ptr, buf.mapped);
        buf.ptr = std::ptr::null_mut();
        Ok(FileBytes::Mapped { ptr, len, mapped })
    }

    /// The bytes of `file` (a regular file, `len` bytes) for reading its tables (the libgomp or
    /// C library that `--omp` overrides or takes functions from): mapped where the host lets
    /// it, else read into a `Vec`, never into a huge page, whose clearing would cost more than
    /// the reading. Reads at offsets: the file's position is not moved (it may be one of the
    /// program's open files).
    pub fn for_a_look(file: std::fs::File, len: u64) -> std::io::Result<FileBytes> {
        use std::os::unix::fs::FileExt;
        if let Some(mapped) = map_file(&file, len) {
            return Ok(mapped);
        }
        let mut bytes = vec![0u8; len.min(1 << 30) as usize];
        file.read_exact_at(&mut bytes, 0)?;
        Ok(FileBytes::Owned(bytes))
    }

    /// Reads the whole file at `path`.
    pub fn read_path(path: &str) -> std::io::Result<FileBytes> {
        let file = std::fs::File::open(path)?;
        let len = file.metadata()?.len();
        FileBytes::read(file, len)
    }
}

/// `limit` bytes of `file` mapped private and read-only, registered for repair; None for a
/// small or absurd size, where the host refuses the mapping, or when every repair slot is
/// taken.
fn map_file(file: &std::fs::File, limit: u64) -> Option<FileBytes> {
    use std::os::fd::AsRawFd;
    if !(HUGE_FROM as u64..=1 << 30).contains(&limit) {
        return None;
    }
    let (len, mapped) = (limit as usize, (limit as usize).next_multiple_of(PAGE));
    install_repair();
    // SAFETY: a fresh read-only private mapping of an open file; no existing memory changes.
    let at =
        unsafe { libc::mmap(std::ptr::null_mut(), mapped, libc::PROT_READ, libc::MAP_PRIVATE, file.as_raw_fd(), 0) };
    if at == libc::MAP_FAILED {
        return None;
    }
    let ptr = at as *mut u8;
    if !register(ptr as usize, ptr as usize + mapped) {
        // SAFETY: the mapping just made, not used.
        unsafe { libc::munmap(at, mapped) };
        return None;
    }
    Some(FileBytes::File { ptr, len, mapped })
}

/// The file mappings a SIGBUS is repaired in: `[start, end)` per slot, start 0 when free.
static SPANS: [(AtomicUsize, AtomicUsize); 32] = [const { (AtomicUsize::new(0), AtomicUsize::new(0)) }; 32];

fn register(start: usize, end: usize) -> bool {
    for (s, e) in &SPANS {
        if s.compare_exchange(0, start, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            e.store(end, Ordering::SeqCst);
            return true;
        }
    }
    false
}

fn unregister(start: usize) {
    for (s, e) in &SPANS {
        if s.load(Ordering::SeqCst) == start {
            e.store(0, Ordering::SeqCst);
            s.store(0, Ordering::SeqCst);
            return;
        }
    }
}

/// The SIGBUS disposition `install_repair` replaced (handler, flags), chained to for any other
/// SIGBUS.
static PREVIOUS: (AtomicUsize, AtomicU64) = (AtomicUsize::new(0), AtomicU64::new(0));

/// Puts `on_sigbus` in front of `hrt`'s SIGBUS disposition, once.
fn install_repair() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: zeroed sigactions are valid; the handler makes only async-signal-safe calls.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sigbus as *const () as libc::sighandler_t;
            // SA_ONSTACK: Rust's stack-overflow report, chained to, needs its alternate stack.
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            // Every signal blocked meanwhile: on the small alternate stack a burst of signals
            // sent by another process nested a frame each and overflowed it (shared_signals.rs).
            libc::sigfillset(&mut sa.sa_mask);
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) != 0 {
                return;
            }
            PREVIOUS.0.store(old.sa_sigaction, Ordering::SeqCst);
            PREVIOUS.1.store(old.sa_flags as u64, Ordering::SeqCst);
            libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
        }
    });
}

/// A SIGBUS inside a registered file mapping (the file shrank since it was mapped): the
/// mapping from the faulting page on becomes zero pages, and the read is retried. Any other
/// SIGBUS goes to the disposition this replaced.
extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    if code > 0 {
        for (s, e) in &SPANS {
            let (start, end) = (s.load(Ordering::SeqCst), e.load(Ordering::SeqCst));
            if start != 0 && (start..end).contains(&addr) {
                let page = addr & !(PAGE - 1);
                // SAFETY: replaces the rest of a read-only mapping this module made and still
                // owns with zero pages of the same protection.
                let r = unsafe {
                    libc::mmap(
                        page as *mut libc::c_void,
                        end - page,
                        libc::PROT_READ,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                        -1,
                        0,
                    )
                };
                if r != libc::MAP_FAILED {
                    return;
                }
            }
        }
    }
    crate::shared_signals::call_previous(
        sig,
        info,
        ctx,
        PREVIOUS.0.load(Ordering::SeqCst),
        PREVIOUS.1.load(Ordering::SeqCst),
    );
}

impl From<Vec<u8>> for FileBytes {
    fn from(bytes: Vec<u8>) -> FileBytes {
        FileBytes::Owned(bytes)
    }
}

impl Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            // SAFETY: `len` bytes were read or mapped there; the mapping lives as long as self.
            FileBytes::Mapped { ptr, len, .. } | FileBytes::File { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts(*ptr, *len)
            },
            FileBytes::Owned(v) => v,
        }
    }
}

impl Drop for FileBytes {
    fn drop(&mut self) {
        match *self {
            FileBytes::File { ptr, mapped, .. } => {
                unregister(ptr as usize);
                // SAFETY: the mapping made by `map_file`, unmapped once.
                unsafe { libc::munmap(ptr as *mut libc::c_void, mapped) };
            }
            FileBytes::Mapped { ptr, mapped, .. } => {
                // SAFETY: the mapping made by `HugeBuffer::new`, unmapped once.
                unsafe { libc::munmap(ptr as *mut libc::c_void, mapped) };
            }
            FileBytes::Owned(_) => {}
        }
    }
}

/// An anonymous mapping with room for `capacity` bytes, 2 MiB aligned and advised
/// `MADV_HUGEPAGE`; unmapped on drop unless taken (`ptr` set to null).
struct HugeBuffer {
    ptr: *mut u8,
    capacity: usize,
    mapped: usize,
}

impl HugeBuffer {
    /// None for a small or absurd size, or where the host refuses the mapping.
    fn new(capacity: usize) -> Option<HugeBuffer> {
        if !(HUGE_FROM..=1 << 30).contains(&capacity) {
            return None;
        }
        let size = capacity.div_ceil(HUGE) * HUGE;
        let span = size + HUGE;
        // SAFETY: a fresh anonymous private mapping; no existing memory is affected.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                span,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if at == libc::MAP_FAILED {
            return None;
        }
        // Keep the aligned 2 MiB run; give back the rest.
        let base = at as usize;
        let aligned = base.div_ceil(HUGE) * HUGE;
        // SAFETY: both trimmed parts lie in the mapping just made and are not used.
        unsafe {
            if aligned > base {
                libc::munmap(at, aligned - base);
            }
            let tail = base + span - (aligned + size);
            if tail > 0 {
                libc::munmap((aligned + size) as *mut libc::c_void, tail);
            }
            // Advice only: without huge pages the read still works, page by page.
            libc::madvise(aligned as *mut libc::c_void, size, libc::MADV_HUGEPAGE);
        }
        Some(HugeBuffer { ptr: aligned as *mut u8, capacity, mapped: size })
    }
}

impl Drop for HugeBuffer {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: the mapping made by `new`, not taken.
            unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.mapped) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_file_whole_and_no_more() {
        let dir = std::env::temp_dir().join(format!("hrt-file-bytes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let data: Vec<u8> = (0..3_000_001u32).map(|i| (i * 7 + i / 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let got = FileBytes::read_path(path.to_str().unwrap()).unwrap();
        assert!(matches!(got, FileBytes::File { .. }));
        assert_eq!(&got[..], &data[..]);
        // A limit below the size reads that much.
        let file = std::fs::File::open(&path).unwrap();
        let part = FileBytes::read(file, 1000).unwrap();
        assert_eq!(&part[..], &data[..1000]);
        // An empty file.
        std::fs::write(&path, b"").unwrap();
        assert!(FileBytes::read_path(path.to_str().unwrap()).unwrap().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A mapped file that another process truncates: its lost part reads zero, and `hrt` is
    /// not killed by SIGBUS.
    #[test]
    fn a_file_truncated_while_mapped_reads_zero_past_its_new_end() {
        let dir = std::env::temp_dir().join(format!("hrt-file-bytes-cut-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let data = vec![0x5au8; 3 << 20];
        std::fs::write(&path, &data).unwrap();
        let got = FileBytes::read_path(path.to_str().unwrap()).unwrap();
        assert!(matches!(got, FileBytes::File { .. }));
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(1 << 20).unwrap();
        let sum: u64 = got.iter().map(|&b| b as u64).sum();
        assert_eq!(sum, 0x5a * (1 << 20), "the first MiB as it was, the rest zero");
        assert_eq!(got.len(), 3 << 20);
        drop(got);
        // The repair slot is free again: many files in turn keep mapping.
        for _ in 0..100 {
            assert!(matches!(FileBytes::read_path(path.to_str().unwrap()).unwrap(), FileBytes::File { .. }));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
