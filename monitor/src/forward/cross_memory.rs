//! `process_vm_readv` and `process_vm_writev` (Linux's cross-memory attach, UCX's `cma`
//! transport: one rank copies a large message straight out of the other rank's memory).
//!
//! The program names the other process by pid (for a program under `hrt`, its `hrt`'s host
//! pid) and gives addresses in that process's memory. Under `hrt` those are guest addresses of
//! another VM, which the host knows nothing of: every monitor running a program therefore
//! publishes a *RAM directory* at one fixed host address (`DIRECTORY`): its pid and, for each
//! guest RAM range, the part of the program's memory pool in it and its host address. The
//! forwarder reads the other process's directory (itself with `process_vm_readv`) and turns
//! the remote guest addresses into host addresses there; a process without a directory is a
//! native one, whose addresses are used as they are. The program's own pid (the directory
//! read back is this monitor's) is translated through this monitor's own directory, never
//! one another process wrote, so the program never reaches the monitor's memory or its
//! kernel's. The host performs the copy, with its own
//! permission check (ptrace access, as for a native caller).
//!
//! Another VM's memory is reachable only inside its program pool, and there only where its
//! program has the pages mapped (and, for a write, writable): the directory also names the
//! host addresses of that VM's page maps (the kernel's bitmaps of mapped, of read-only and of
//! unreadable pages, `hrt_abi::UserMap`), which the forwarder reads for the pages a call names
//! (`remote_pages`); a read needs PROT_READ, a write PROT_WRITE. As Linux, the copy stops at the first remote page that faults: the call
//! returns the bytes copied before it, EFAULT only if there were none.

use std::sync::atomic::{AtomicBool, Ordering};

use super::errno::{Errno, SysResult};
use super::guest_mem::Guest;
use super::host::ptr;
use super::io::{guest_iovecs, GuestIovec};
use super::Forwarder;

/// The host address of every monitor's RAM directory page (far below where the host puts
/// mappings and programs; mapped with MAP_FIXED_NOREPLACE, so never over anything).
const DIRECTORY: usize = 0x4852_5400_0000;
const MAGIC: u64 = u64::from_le_bytes(*b"HRT-RAM2");
/// Guest RAM comes in at most two ranges (below the hole at 3 GiB and above 4 GiB).
const MAX_RANGES: usize = 4;

/// One guest range of the program's pool: guest address, length, host address.
#[derive(Clone, Copy, Default)]
#[repr(C)]
struct Range {
    guest: u64,
    len: u64,
    host: u64,
}

/// Where the program's page maps are (`hrt_abi::UserMap`, with host addresses): all zero
/// until the kernel has sent them (nothing counts as mapped then).
#[derive(Clone, Copy, Default)]
#[repr(C)]
pub struct PageMaps {
    /// Host addresses of the bitmaps of mapped pages, of read-only ones and of unreadable ones.
    pub mapped: u64,
    pub read_only: u64,
    pub unreadable: u64,
    /// Guest address of the first page covered, and the number of pages.
    pub base: u64,
    pub pages: u64,
}

#[derive(Clone, Copy, Default)]
#[repr(C)]
struct Directory {
    magic: u64,
    pid: u64,
    count: u64,
    ranges: [Range; MAX_RANGES],
    maps: PageMaps,
}

/// Whether this monitor's directory is in place (else the calls answer EPERM, as for a process
/// the caller may not trace: a pid of the monitor itself could not be told from a native one).
static PUBLISHED: AtomicBool = AtomicBool::new(false);

/// Publishes this monitor's directory: `ranges` are (guest address, length, host address) of
/// the program's pool. Returns false (and the calls answer EPERM) if the page cannot be mapped.
pub fn publish(ranges: &[(u64, u64, u64)]) -> bool {
    let mut dir = Directory { magic: MAGIC, pid: std::process::id() as u64, ..Directory::default() };
    for (slot, &(guest, len, host)) in dir.ranges.iter_mut().zip(ranges.iter().take(MAX_RANGES)) {
        *slot = Range { guest, len, host };
        dir.count += 1;
    }
    let size = std::mem::size_of::<Directory>();
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE;
    // SAFETY: a fresh anonymous page at an address nothing else uses (NOREPLACE refuses one).
    let got =
        unsafe { libc::mmap(DIRECTORY as *mut libc::c_void, size, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0) };
    if got as usize != DIRECTORY {
        if got != libc::MAP_FAILED {
            // SAFETY: an old kernel ignoring NOREPLACE gave another address: ours to unmap.
            unsafe { libc::munmap(got, size) };
        }
        return false;
    }
    // SAFETY: the page was just mapped read-write and holds a Directory.
    unsafe { std::ptr::write(DIRECTORY as *mut Directory, dir) };
    PUBLISHED.store(true, Ordering::SeqCst);
    true
}

/// Publishes where the program's page maps are (host addresses of the kernel's bitmaps), once
/// the kernel has sent them (`nr::USER_MAP`; again in a forked child, with the same values).
pub fn publish_page_maps(maps: PageMaps) {
    if PUBLISHED.load(Ordering::SeqCst) {
        // SAFETY: the published page holds a Directory; other processes read it with
        // process_vm_readv and take a torn value for no map or a bitmap they cannot read.
        unsafe { std::ptr::write_volatile(&raw mut (*(DIRECTORY as *mut Directory)).maps, maps) };
    }
}

/// In a forked monitor: the directory page is a private copy; it names the new pid.
pub fn republish_pid(pid: i32) {
    if PUBLISHED.load(Ordering::SeqCst) {
        // SAFETY: the published page (inherited across fork) holds a Directory.
        unsafe { (*(DIRECTORY as *mut Directory)).pid = pid as u64 };
    }
}

/// This monitor's directory (callers checked PUBLISHED).
fn own_directory() -> Directory {
    // SAFETY: the published page holds a Directory.
    unsafe { std::ptr::read_volatile(DIRECTORY as *const Directory) }
}

/// What `pid` is: an `hrt` (this one or another: its directory) or a native process.
enum Peer {
    Vm(Directory),
    Native,
}

fn peer(pid: i32) -> SysResult<Peer> {
    let mut dir = Directory::default();
    let size = std::mem::size_of::<Directory>();
    let got = match read_remote(pid, &mut [(&mut dir as *mut Directory as *mut u8, size, DIRECTORY as u64)]) {
        Ok(n) => n,
        Err(Errno(libc::EFAULT)) => return Ok(Peer::Native),
        Err(e) => return Err(e),
    };
    if got != size || dir.magic != MAGIC || dir.count as usize > MAX_RANGES {
        return Ok(Peer::Native);
    }
    // This monitor's own directory, never one that only claims its pid.
    let own = own_directory();
    Ok(Peer::Vm(if dir.pid == own.pid { own } else { dir }))
}

/// Copies from `pid`'s memory with the host's process_vm_readv: each part is (local buffer,
/// length, remote host address). Returns the bytes copied (short at the first remote fault).
pub(super) fn read_remote(pid: i32, parts: &mut [(*mut u8, usize, u64)]) -> SysResult<usize> {
    let local: Vec<libc::iovec> =
        parts.iter().map(|&(p, len, _)| libc::iovec { iov_base: p as *mut libc::c_void, iov_len: len }).collect();
    let remote: Vec<libc::iovec> =
        parts.iter().map(|&(_, len, at)| libc::iovec { iov_base: at as *mut libc::c_void, iov_len: len }).collect();
    // Every argument a full register (the call is variadic: an int's upper half is undefined).
    let args: [libc::c_long; 6] =
        [pid as libc::c_long, ptr(local.as_ptr()), local.len() as _, ptr(remote.as_ptr()), remote.len() as _, 0];
    // SAFETY: writes at most each part's length into its buffer (the caller's, `&mut`); the
    // remote side is the host's to check.
    let got =
        unsafe { libc::syscall(libc::SYS_process_vm_readv, args[0], args[1], args[2], args[3], args[4], args[5]) };
    if got < 0 {
        return Err(Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)));
    }
    Ok(got as usize)
}

/// The remote iovecs as host iovecs in `dir`'s VM (process `pid`), as far as Linux's copy
/// of `wanted` bytes would get: each must lie in one range of the pool, in pages its program
/// has mapped (and writable, for `write`); the vector ends at the first page that is not, with
/// the part before it. EFAULT if the copy would fault before its first byte.
fn translate(
    pid: i32,
    dir: &Directory,
    remote: &[GuestIovec],
    wanted: u64,
    write: bool,
) -> SysResult<Vec<libc::iovec>> {
    let ranges = &dir.ranges[..dir.count as usize];
    let mut out = Vec::with_capacity(remote.len());
    let mut left = wanted;
    for v in remote.iter().filter(|v| v.len > 0) {
        if left == 0 {
            break;
        }
        let inside = ranges.iter().find(|r| v.base >= r.guest && v.base - r.guest < r.len);
        // Pages past what the local side takes are never reached (nor checked) by Linux.
        let want = v.len.min(left);
        // (Another process's directory: no sum of its values may overflow.)
        let in_range = inside.map_or(0, |r| want.min(r.len - (v.base - r.guest)));
        let usable = super::remote_pages::usable_len(pid, &dir.maps, v.base, in_range, write)?;
        if let Some(r) = inside.filter(|_| usable > 0) {
            let host = r.host.wrapping_add(v.base - r.guest);
            out.push(libc::iovec { iov_base: host as *mut libc::c_void, iov_len: usable as usize });
        }
        if usable < want {
            if out.is_empty() {
                return Err(Errno::EFAULT);
            }
            break;
        }
        left -= usable;
    }
    Ok(out)
}

impl Forwarder {
    /// process_vm_readv/process_vm_writev(pid, local_iov, liovcnt, remote_iov, riovcnt, flags).
    pub(super) fn process_vm(&self, g: Guest, nr: libc::c_long, a: &[u64; 6]) -> SysResult<i64> {
        if a[5] != 0 {
            return Err(Errno::EINVAL);
        }
        let reading = nr == libc::SYS_process_vm_readv;
        // As Linux: the local side first; nothing to copy is 0 before anything else is looked at.
        let local = self.iovecs(g, a[1], a[2], reading, true)?;
        let wanted: u64 = local.iter().map(|v| v.iov_len as u64).sum();
        if wanted == 0 {
            return Ok(0);
        }
        let remote = guest_iovecs(g, a[3], a[4])?;
        // Linux looks the process up only if some remote iovec has a page to copy.
        if remote.iter().all(|v| v.len == 0) {
            return Ok(0);
        }
        if !PUBLISHED.load(Ordering::Relaxed) {
            return Err(Errno(libc::EPERM));
        }
        let mut pid = a[0] as i32;
        let remote = match peer(pid)? {
            Peer::Vm(dir) => {
                // The host copies within this monitor (`pid` may be one of its threads).
                if dir.pid == own_directory().pid {
                    pid = dir.pid as i32;
                }
                translate(pid, &dir, &remote, wanted, !reading)?
            }
            Peer::Native => remote
                .iter()
                .map(|v| libc::iovec { iov_base: v.base as *mut libc::c_void, iov_len: v.len as usize })
                .collect(),
        };
        let args = [
            pid as libc::c_long,
            ptr(local.as_ptr()),
            local.len() as libc::c_long,
            ptr(remote.as_ptr()),
            remote.len() as libc::c_long,
            0,
        ];
        // SAFETY: the local iovecs cover checked guest memory; the remote ones are another
        // process's (the host checks them) or this program's own, checked likewise.
        unsafe { self.sys(nr, &args) }
    }
}

#[cfg(test)]
#[path = "cross_memory_tests.rs"]
mod tests;
