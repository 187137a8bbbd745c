//! Files the program maps `MAP_SHARED` that another process shrinks.
//!
//! The pages of such a mapping are the host file's (`shared_files`). When another process
//! shrinks the file, the pages past its new end are gone from the host: a program touching one
//! makes KVM's fault on it fail, and on this kind of host KVM retries that fault for ever (its
//! asynchronous page fault completes, and the guest's access faults again), so the vCPU spins
//! where Linux would raise SIGBUS. The kernel hides such pages (not present: touching them is a
//! guest page fault, SIGBUS) when the program's own calls shrink a file, but it cannot see
//! another process's. So `watch` (every quarter second, from the thread that waits for the
//! vCPUs) asks each regular file's mapping how much of it the file still covers, and when that
//! shrank tells the kernel (`Service::files_shrank`): an interrupt on every CPU, after which the
//! kernel hides the pages the host no longer has. The spinning vCPU takes the interrupt, and its
//! access, retried, faults in the guest: SIGBUS, as on Linux, a quarter second late at most.
//! Costs nothing to a program without shared file mappings; with them, a pipe and a few
//! one-byte writes per mapping every quarter second.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::shared_files::Probe;
use super::vcpu::Shared;

const PAGE: u64 = 4096;

/// A regular file's shared mapping at a guest address: its length, and how many bytes from its
/// start the file covered when last looked at.
#[derive(Clone, Copy)]
struct Mapping {
    len: u64,
    covered: u64,
}

/// By guest address. A host fork's child inherits them with the mappings.
static MAPPINGS: Mutex<BTreeMap<u64, Mapping>> = Mutex::new(BTreeMap::new());

/// `nr::MAP_SHARED_FILE` mapped a regular file over `[addr, addr + len)`, which the file covers
/// for `covered` bytes.
pub fn mapped(addr: u64, len: u64, covered: u64) {
    let mut map = MAPPINGS.lock().unwrap_or_else(|e| e.into_inner());
    cut(&mut map, addr, addr + len);
    map.insert(addr, Mapping { len, covered });
}

/// Whether guest `addr` is in a regular file's shared mapping.
pub fn is_mapped(addr: u64) -> bool {
    let map = MAPPINGS.lock().unwrap_or_else(|e| e.into_inner());
    map.range(..=addr).next_back().is_some_and(|(&s, m)| addr < s + m.len)
}

/// `[addr, addr + len)` is no longer a shared mapping.
pub fn unmapped(addr: u64, len: u64) {
    let mut map = MAPPINGS.lock().unwrap_or_else(|e| e.into_inner());
    if !map.is_empty() {
        cut(&mut map, addr, addr + len);
    }
}

/// Forgets `[start, end)` of the mappings, keeping what sticks out on either side.
fn cut(map: &mut BTreeMap<u64, Mapping>, start: u64, end: u64) {
    let inside: Vec<(u64, Mapping)> =
        map.range(..end).rev().take_while(|(&s, m)| s + m.len > start).map(|(&s, &m)| (s, m)).collect();
    for (s, m) in inside {
        map.remove(&s);
        if s < start {
            map.insert(s, Mapping { len: start - s, covered: m.covered.min(start - s) });
        }
        let e = s + m.len;
        if e > end {
            let covered = (s + m.covered).saturating_sub(end);
            map.insert(end, Mapping { len: e - end, covered });
        }
    }
}

/// Looks whether a file shrank under one of the mappings since the last look, and if so tells
/// the kernel (see the module comment). One or two one-byte probes per mapping when nothing
/// changed: the last page the file covered and the one after it.
pub fn watch(shared: &Shared) {
    if let Some(svc) = shared.channel.get() {
        stuck_check(svc.files_shrank_pending());
    }
    let mut shrank = false;
    {
        let mut map = MAPPINGS.lock().unwrap_or_else(|e| e.into_inner());
        if map.is_empty() {
            return;
        }
        let Ok(probe) = Probe::new() else { return };
        for (&addr, m) in map.iter_mut() {
            let Some(host) = super::shared_files::program_range(shared, addr, m.len) else { continue };
            // SAFETY (of the pointer arithmetic): both pages lie inside the mapping.
            let page = |off: u64| unsafe { host.add(off as usize) as *const u8 };
            let last_kept = m.covered == 0 || probe.present(page(m.covered - PAGE));
            let none_more = m.covered == m.len || !probe.present(page(m.covered));
            if last_kept && none_more {
                continue;
            }
            let now = probe.covered_len(host, m.len);
            shrank |= now < m.covered;
            m.covered = now;
        }
    }
    if shrank {
        let told = shared.channel.get().is_some_and(|svc| svc.files_shrank());
        if !told {
            eprintln!(
                "hrt: another process shrank a file the program maps shared; without the forwarding \
                 channel the kernel cannot be told, and touching its pages past the new end hangs"
            );
        }
    }
}

/// Looks in a row at which the kernel had not taken the word `files_shrank`.
static UNTAKEN: Mutex<u32> = Mutex::new(0);
/// After this many looks (two seconds) a kernel that has not taken it is stuck: every CPU of
/// it is in its own code, which takes the word on its way back to the program and when idle.
/// The one way that happens is a vCPU spinning on a gone page inside KVM for the kernel's own
/// access for a call of the program's (its checks ask the host first, so only a file shrunk
/// between its check and its access).
const STUCK_AFTER: u32 = 8;

/// Ends `hrt` as SIGBUS would end the program when the kernel is stuck (see `STUCK_AFTER`),
/// with a line that says why, rather than hang for good.
fn stuck_check(pending: bool) {
    let mut untaken = UNTAKEN.lock().unwrap_or_else(|e| e.into_inner());
    *untaken = if pending { *untaken + 1 } else { 0 };
    if *untaken < STUCK_AFTER {
        return;
    }
    eprintln!(
        "hrt: the kernel is stuck on a page of a file the program maps shared, which another process \
         shrank (for two seconds): it ends the program as SIGBUS would"
    );
    if crate::vm::is_fork_child() {
        crate::vm::die_of(libc::SIGBUS);
    }
    // SAFETY: _exit ends the process at once; the monitor buffers no output.
    unsafe { libc::_exit(128 + libc::SIGBUS) }
}

/// This module's global locks, taken without waiting for a fork (`vm::fork`): false if
/// another thread holds one.
pub(crate) fn hold_for_fork(held: &mut crate::vm::fork::Held) -> bool {
    crate::vm::fork::try_hold(held, &MAPPINGS) && crate::vm::fork::try_hold(held, &UNTAKEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutting_keeps_what_sticks_out() {
        let mut map = BTreeMap::new();
        map.insert(0x1000, Mapping { len: 0x5000, covered: 0x3000 });
        cut(&mut map, 0x2000, 0x3000);
        let got: Vec<(u64, u64, u64)> = map.iter().map(|(&s, m)| (s, m.len, m.covered)).collect();
        assert_eq!(got, [(0x1000, 0x1000, 0x1000), (0x3000, 0x3000, 0x1000)]);
        cut(&mut map, 0, 0x10000);
        assert!(map.is_empty());
    }
}
