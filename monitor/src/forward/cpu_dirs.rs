//! Listing /sys/devices/system/cpu and /sys/devices/system/node: the host's entries, with its
//! `cpu<K>` (`node<K>`) entries replaced by the VM's `cpu0 .. cpu<N-1>` (`node0`).
//!
//! Design: the program's descriptor is the host directory itself (so fstat, fchdir and *at
//! calls relative to it behave as on the host), marked with a [`Listing`]; its getdents64 is
//! answered from a listing built on each call from the host's entries, and the position in that
//! listing is kept as the host descriptor's file offset. The offset belongs to the host's open
//! file description, so duplicates and a forked child's copy share it, and lseek (passed
//! through: the host's sysfs accepts any offset) rewinds or seeks it with the `d_off` values
//! given here (entry `i`'s `d_off` is `i + 1`). An added `cpu<K>` that the host lacks has
//! `cpu0`'s inode and type: paths below it are served from the host's `cpu0`
//! (synthetic::stand_in), so stat agrees with the listing.

use std::sync::Mutex;

use super::errno::{Errno, SysResult};
use super::synthetic::numbered;

/// A directory whose numbered entries (`prefix` followed by a number) are the VM's `0..count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Listing {
    pub prefix: &'static [u8],
    pub count: u32,
}

/// One directory entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub ino: u64,
    pub kind: u8,
    pub name: Vec<u8>,
}

/// Size of `struct linux_dirent64` before the name.
const HEADER: usize = 19;

impl Listing {
    /// The VM's entries from the host's: numbered entries at or past `count` dropped, the
    /// missing ones below it added (after the host's entries) as copies of `<prefix>0`; nothing
    /// is added when the host has no `<prefix>0`.
    pub fn vm_entries(&self, host: Vec<Entry>) -> Vec<Entry> {
        let number = |e: &Entry| numbered(&e.name, self.prefix).filter(|(_, rest)| rest.is_empty()).map(|(n, _)| n);
        let mut present = vec![false; self.count as usize];
        let mut model = None;
        let mut kept: Vec<Entry> = Vec::with_capacity(host.len());
        for e in host {
            match number(&e) {
                Some(n) if n >= self.count => continue,
                Some(n) => {
                    present[n as usize] = true;
                    if n == 0 {
                        model = Some(e.clone());
                    }
                }
                None => {}
            }
            kept.push(e);
        }
        if let Some(model) = model {
            for (n, _) in present.iter().enumerate().filter(|(_, p)| !**p) {
                let mut name = self.prefix.to_vec();
                name.extend_from_slice(n.to_string().as_bytes());
                kept.push(Entry { name, ..model.clone() });
            }
        }
        kept
    }
}

/// `struct linux_dirent64` records of `entries`, which carry their own positions (ascending;
/// each record's `d_off`, the offset after it, is its position + 1): those at `from` or later,
/// as many as fit in `count` bytes, and the offset after the last one written (`from` if none
/// are left). EINVAL if the first does not fit (as on Linux).
pub fn records_at<'a>(
    entries: impl Iterator<Item = (u64, &'a Entry)>,
    from: u64,
    count: usize,
) -> SysResult<(Vec<u8>, u64)> {
    let mut out = Vec::new();
    let mut next = from;
    let mut left = false;
    for (pos, e) in entries.filter(|(pos, _)| *pos >= from) {
        let reclen = (HEADER + e.name.len() + 1).next_multiple_of(8);
        if out.len() + reclen > count {
            left = true;
            break;
        }
        out.extend_from_slice(&e.ino.to_ne_bytes());
        out.extend_from_slice(&(pos as i64 + 1).to_ne_bytes());
        out.extend_from_slice(&(reclen as u16).to_ne_bytes());
        out.push(e.kind);
        out.extend_from_slice(&e.name);
        out.resize(out.len() + reclen - HEADER - e.name.len(), 0);
        next = pos + 1;
    }
    if out.is_empty() && left {
        return Err(Errno::EINVAL);
    }
    Ok((out, next))
}

/// The host's entries of the directory open at `fd` (read through a new description, so the
/// program's offset is untouched).
fn host_entries(fd: i32) -> SysResult<Vec<Entry>> {
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
    // SAFETY: a static NUL-terminated path relative to a descriptor the caller holds.
    let dir = unsafe { libc::openat(fd, c".".as_ptr(), flags) };
    if dir < 0 {
        return Err(Errno::last());
    }
    // SAFETY: `dir` is a fresh descriptor we own.
    let dir = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(dir) };
    let mut buf = vec![0u8; 32 * 1024];
    let mut entries = Vec::new();
    loop {
        // SAFETY: `buf` is buf.len() writable bytes.
        let n = unsafe {
            libc::syscall(libc::SYS_getdents64, std::os::fd::AsRawFd::as_raw_fd(&dir), buf.as_mut_ptr(), buf.len())
        };
        if n < 0 {
            return Err(Errno::last());
        }
        if n == 0 {
            return Ok(entries);
        }
        parse(&buf[..n as usize], &mut entries);
    }
}

/// Appends the records of a host getdents64 answer to `entries`.
fn parse(mut data: &[u8], entries: &mut Vec<Entry>) {
    while data.len() >= HEADER {
        let reclen = u16::from_ne_bytes([data[16], data[17]]) as usize;
        if reclen < HEADER || reclen > data.len() {
            return;
        }
        let name = &data[HEADER..reclen];
        let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
        let ino = u64::from_ne_bytes(data[..8].try_into().expect("8 bytes"));
        entries.push(Entry { ino, kind: data[18], name: name.to_vec() });
        data = &data[reclen..];
    }
}

/// Serializes the listings' reads and offset updates, as Linux's per-file position lock does.
static POSITION: Mutex<()> = Mutex::new(());

/// getdents64 on host directory `fd` listed as `listing`: at most `count` bytes of records,
/// given to `write` (which copies them to the program), and the byte count.
pub fn getdents(fd: i32, listing: Listing, count: usize, write: impl FnOnce(&[u8]) -> SysResult<()>) -> SysResult<i64> {
    getdents_of(fd, || Ok(listing.vm_entries(host_entries(fd)?)), count, write)
}

/// getdents64 on host directory `fd`, whose entries `entries` gives (built on each call), the
/// position in them kept as the descriptor's file offset (see the module's comment).
pub fn getdents_of(
    fd: i32,
    entries: impl FnOnce() -> SysResult<Vec<Entry>>,
    count: usize,
    write: impl FnOnce(&[u8]) -> SysResult<()>,
) -> SysResult<i64> {
    let positioned = || Ok(entries()?.into_iter().enumerate().map(|(i, e)| (i as u64, e)).collect());
    getdents_positioned(fd, positioned, count, write)
}

/// `getdents_of` for entries with positions of their own (`records_at`): a listing whose
/// entries come and go between calls (/proc/self/fd, where a program closes what it reads)
/// resumes after the last position returned, as Linux's does, not at an index that moved.
pub fn getdents_positioned(
    fd: i32,
    entries: impl FnOnce() -> SysResult<Vec<(u64, Entry)>>,
    count: usize,
    write: impl FnOnce(&[u8]) -> SysResult<()>,
) -> SysResult<i64> {
    // SAFETY: F_GETFL only reads the descriptor's flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || flags & libc::O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    let _held = POSITION.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: lseek takes no pointers.
    let at = unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) };
    if at < 0 {
        return Err(Errno::last());
    }
    let entries = entries()?;
    let (data, next) = records_at(entries.iter().map(|(pos, e)| (*pos, e)), at as u64, count)?;
    write(&data)?;
    // SAFETY: lseek takes no pointers.
    if unsafe { libc::lseek(fd, next as libc::off_t, libc::SEEK_SET) } < 0 {
        return Err(Errno::last());
    }
    Ok(data.len() as i64)
}

/// This module's global locks, taken without waiting for a fork (`vm::fork`): false if
/// another thread holds one.
pub(crate) fn hold_for_fork(held: &mut crate::vm::fork::Held) -> bool {
    crate::vm::fork::try_hold(held, &POSITION)
}

#[cfg(test)]
mod tests {
    use super::{parse, records_at, Entry, Listing};
    use crate::forward::errno::SysResult;

    /// `records_at` with positions that are indexes.
    fn records(entries: &[Entry], from: usize, count: usize) -> SysResult<(Vec<u8>, usize)> {
        let (data, next) = records_at(entries.iter().enumerate().map(|(i, e)| (i as u64, e)), from as u64, count)?;
        Ok((data, next as usize))
    }

    fn entry(name: &str, ino: u64) -> Entry {
        Entry { ino, kind: libc::DT_DIR, name: name.as_bytes().to_vec() }
    }

    fn names(entries: &[Entry]) -> Vec<String> {
        entries.iter().map(|e| String::from_utf8_lossy(&e.name).into_owned()).collect()
    }

    fn host() -> Vec<Entry> {
        ["..", ".", "cpuidle", "cpu1", "possible", "cpu0", "cpu01", "cpufreq"]
            .iter()
            .enumerate()
            .map(|(i, n)| entry(n, 10 + i as u64))
            .collect()
    }

    #[test]
    fn fewer_vcpus_drop_the_hosts_others() {
        let vm = Listing { prefix: b"cpu", count: 1 }.vm_entries(host());
        assert_eq!(names(&vm), ["..", ".", "cpuidle", "possible", "cpu0", "cpu01", "cpufreq"]);
    }

    #[test]
    fn more_vcpus_are_added_as_copies_of_cpu0() {
        let vm = Listing { prefix: b"cpu", count: 4 }.vm_entries(host());
        assert_eq!(names(&vm), ["..", ".", "cpuidle", "cpu1", "possible", "cpu0", "cpu01", "cpufreq", "cpu2", "cpu3"]);
        assert_eq!(vm[9], Entry { ino: 15, kind: libc::DT_DIR, name: b"cpu3".to_vec() });
        let no_cpu0: Vec<Entry> = host().into_iter().filter(|e| e.name != b"cpu0").collect();
        assert_eq!(names(&Listing { prefix: b"cpu", count: 4 }.vm_entries(no_cpu0)).len(), 7);
    }

    #[test]
    fn records_resume_where_the_offset_says() {
        let entries = Listing { prefix: b"node", count: 1 }.vm_entries(vec![entry("node0", 1), entry("node1", 2)]);
        assert_eq!(names(&entries), ["node0"]);
        let entries = host();
        let (all, next) = records(&entries, 0, 4096).unwrap();
        assert_eq!(next, entries.len());
        let mut back = Vec::new();
        parse(&all, &mut back);
        assert_eq!(back, entries);
        // 24 bytes hold "..", "." and nothing more; d_off of the second is 2.
        let (two, next) = records(&entries, 0, 48).unwrap();
        assert_eq!((two.len(), next), (48, 2));
        assert_eq!(i64::from_ne_bytes(two[32..40].try_into().unwrap()), 2);
        let (rest, _) = records(&entries, next, 4096).unwrap();
        assert_eq!([two, rest].concat(), all);
        assert!(records(&entries, 0, 20).is_err());
        assert_eq!(records(&entries, entries.len(), 4096).unwrap(), (Vec::new(), entries.len()));
        // Positions with gaps: resumed after the last one returned, whatever left meanwhile.
        let sparse: Vec<(u64, Entry)> =
            [(0, "."), (1, ".."), (5, "3"), (9, "7")].into_iter().map(|(p, n)| (p, entry(n, p))).collect();
        let (first, next) = records_at(sparse.iter().map(|(p, e)| (*p, e)), 0, 72).unwrap();
        assert_eq!((first.len(), next), (72, 6));
        let (rest, next) = records_at(sparse.iter().map(|(p, e)| (*p, e)), next, 4096).unwrap();
        let mut back = Vec::new();
        parse(&rest, &mut back);
        assert_eq!((names(&back), next), (vec!["7".to_string()], 10));
    }
}
