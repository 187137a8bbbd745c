//! A file's bytes in memory (the program's, its interpreter's), read into one transparent huge
//! page where the host allows it.
//!
//! `hrt run` reads the program before anything else. Into a plain `Vec` (4 KiB pages), the
//! host's page faults were most of the cost: 0.6-1.2 ms to read a 760 KiB static program here
//! (one fault per 4 KiB page), against ~0.03 ms into an anonymous mapping advised
//! `MADV_HUGEPAGE` (one fault, one 2 MiB clear). The file is read, not mapped: a mapping of
//! it would fault (SIGBUS) if another process truncated the file meanwhile.

use std::io::Read;
use std::ops::Deref;

/// 2 MiB: the huge page the bytes are read into.
const HUGE: usize = 2 << 20;
/// Smaller files go into a `Vec`: a few 4 KiB faults cost less than clearing a huge page
/// (ld.so's 240 KiB and a dynamic program's few KiB: 0.1-0.4 ms more in huge pages here).
const HUGE_FROM: usize = 256 << 10;

pub enum FileBytes {
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

    /// Reads the whole file at `path`.
    pub fn read_path(path: &str) -> std::io::Result<FileBytes> {
        let file = std::fs::File::open(path)?;
        let len = file.metadata()?.len();
        FileBytes::read(file, len)
    }
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
            // SAFETY: `len` bytes were read there; the mapping lives as long as self.
            FileBytes::Mapped { ptr, len, .. } => unsafe { std::slice::from_raw_parts(*ptr, *len) },
            FileBytes::Owned(v) => v,
        }
    }
}

impl Drop for FileBytes {
    fn drop(&mut self) {
        if let FileBytes::Mapped { ptr, mapped, .. } = *self {
            // SAFETY: the mapping made by `HugeBuffer::new`, unmapped once.
            unsafe { libc::munmap(ptr as *mut libc::c_void, mapped) };
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
        assert!(matches!(got, FileBytes::Mapped { .. }));
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
}
