//! The program's `/proc/self/task` (also `/proc/<pid>/task`, `/proc/thread-self/..`): the
//! monitor's own lists `hrt`'s threads (the vCPUs, the service threads), so its entries come
//! from the program's thread ids, which the kernel publishes in the channel header
//! (`ChannelHeader::thread_ids`). As for the descriptor directories (fd_dirs.rs), the
//! program's descriptor is the monitor's own directory opened for it, marked with this VM
//! path, and its getdents64 is answered here. Paths below an entry (`task/<tid>/status`) mean
//! the process's own files (paths.rs).

use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hrt_abi::channel::LISTED_THREADS;

use super::cpu_dirs::Entry;

/// The VM path of the listed directory.
pub const PATH: &[u8] = b"/proc/self/task";

struct Published {
    count: &'static AtomicU32,
    ids: &'static [AtomicU32; LISTED_THREADS],
}

static PUBLISHED: AtomicPtr<Published> = AtomicPtr::new(std::ptr::null_mut());

/// The channel header's thread words (registration of the channel).
pub fn attach(count: &'static AtomicU32, ids: &'static [AtomicU32; LISTED_THREADS]) {
    let p = Box::into_raw(Box::new(Published { count, ids }));
    if PUBLISHED.compare_exchange(std::ptr::null_mut(), p, Ordering::AcqRel, Ordering::Acquire).is_err() {
        // SAFETY: made just above and published nowhere.
        drop(unsafe { Box::from_raw(p) });
    }
}

static RENAME: AtomicPtr<[AtomicU64; 3]> = AtomicPtr::new(std::ptr::null_mut());

/// The channel header's rename words (registration of the channel).
pub fn attach_rename(words: &'static [AtomicU64; 3]) {
    RENAME.store(words as *const [AtomicU64; 3] as *mut [AtomicU64; 3], Ordering::Release);
}

/// The VM path that marks the program's descriptor of thread `tid`'s `comm` file: a write to
/// it renames the thread (`rename`).
pub fn comm_path(tid: u32) -> Vec<u8> {
    format!("/proc/self/task/{tid}/comm").into_bytes()
}

/// The thread whose `comm` file `vm_path` marks, if it does.
pub fn comm_of(vm_path: &[u8]) -> Option<u32> {
    let rest = vm_path.strip_prefix(b"/proc/self/task/")?.strip_suffix(b"/comm")?;
    if rest.is_empty() || rest.len() > 10 || !rest.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(rest).ok()?.parse().ok()
}

/// A write of `bytes` to thread `tid`'s `comm`: as Linux, the first 15 bytes name it. Passed
/// to the kernel in the channel header, which it takes when the write returns. ESRCH for an
/// id that is no live thread of the program's; EAGAIN if the kernel has not taken the previous
/// rename within a second (it takes one after every forwarded call).
pub fn rename(pid: u32, tid: u32, bytes: &[u8]) -> Result<(), i32> {
    if !thread_ids(pid).contains(&tid) {
        return Err(libc::ESRCH);
    }
    let p = RENAME.load(Ordering::Acquire);
    if p.is_null() {
        return Err(libc::EAGAIN);
    }
    // SAFETY: `attach_rename` takes words that live as long as guest RAM.
    let words = unsafe { &*p };
    let mut name = [0u8; 16];
    let n = bytes.len().min(15);
    name[..n].copy_from_slice(&bytes[..n]);
    let until = Instant::now() + Duration::from_secs(1);
    loop {
        // Claimed with a value no tid has, filled, then published with the tid.
        if words[0].compare_exchange(0, u64::MAX, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            break;
        }
        if Instant::now() > until {
            return Err(libc::EAGAIN);
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    for (w, chunk) in words[1..].iter().zip(name.chunks_exact(8)) {
        w.store(u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8])), Ordering::Relaxed);
    }
    words[0].store(tid as u64, Ordering::Release);
    Ok(())
}

/// Whether `vm_path` is the listed directory.
pub fn listed(vm_path: &[u8]) -> bool {
    vm_path.strip_suffix(b"/").unwrap_or(vm_path) == PATH
}

/// The program's thread ids as published (`pid` alone before the kernel published any: the
/// main thread is the only one until the first forwarded open).
pub fn thread_ids(pid: u32) -> Vec<u32> {
    let p = PUBLISHED.load(Ordering::Acquire);
    if p.is_null() {
        return vec![pid];
    }
    // SAFETY: `attach` leaks the words' record, and the words live as long as guest RAM.
    let words = unsafe { &*p };
    let n = (words.count.load(Ordering::Acquire) as usize).min(LISTED_THREADS);
    let ids: Vec<u32> = words.ids[..n].iter().map(|w| w.load(Ordering::Relaxed)).filter(|&t| t != 0).collect();
    if ids.is_empty() {
        vec![pid]
    } else {
        ids
    }
}

/// The entries: ".", "..", then one directory per thread id.
pub fn entries(ids: &[u32]) -> Vec<Entry> {
    let dir = |name: Vec<u8>, ino| Entry { ino, kind: libc::DT_DIR, name };
    let mut out = vec![dir(b".".to_vec(), 1), dir(b"..".to_vec(), 2)];
    out.extend(ids.iter().map(|&t| dir(t.to_string().into_bytes(), 3 + t as u64)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_dot_dotdot_then_the_threads() {
        let e = entries(&[40, 1005, 1006]);
        let names: Vec<&[u8]> = e.iter().map(|e| e.name.as_slice()).collect();
        assert_eq!(names, [&b"."[..], b"..", b"40", b"1005", b"1006"]);
        assert!(e.iter().all(|e| e.kind == libc::DT_DIR));
        assert!(listed(b"/proc/self/task/"));
        assert!(!listed(b"/proc/self/task/40"));
        assert_eq!(comm_of(&comm_path(1005)), Some(1005));
        assert_eq!(comm_of(b"/proc/self/task//comm"), None);
        assert_eq!(comm_of(b"/proc/self/task/12/status"), None);
    }
}
