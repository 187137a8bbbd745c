//! Places (`OMP_PLACES`) and thread affinity (`OMP_PROC_BIND`), as the OpenMP specification
//! defines them and libgomp implements them: the place list (CPU sets), each implicit task's
//! place and place partition, and which CPU a team's thread is pinned to.
//!
//! Every vCPU is a core with one hardware thread, and all share one socket and memory node, so
//! `threads` and `cores` are one place per CPU, `sockets`, `ll_caches` and `numa_domains` one
//! place of all CPUs.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};

use crate::sync::SpinLock;

/// The place list: each place a set of CPU numbers. Empty: no places (binding not asked for).
/// Set once before the program starts.
static PLACES: SpinLock<Vec<Vec<u32>>> = SpinLock::new(Vec::new());
/// Its length, read without the lock (every region start asks).
static COUNT: AtomicU32 = AtomicU32::new(0);

/// No place: the thread is not bound.
pub const NONE: u32 = u32::MAX;

/// `proc-bind-var` values (omp_proc_bind_t).
pub const BIND_FALSE: u32 = 0;
pub const BIND_TRUE: u32 = 1;
pub const BIND_PRIMARY: u32 = 2;
pub const BIND_CLOSE: u32 = 3;
pub const BIND_SPREAD: u32 = 4;

/// A place partition: `len` consecutive places of the list from `first` (wrapping).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    pub first: u32,
    pub len: u32,
}

pub fn count() -> u32 {
    COUNT.load(Ordering::Relaxed)
}

/// The CPUs of place `p`.
pub fn procs(p: u32) -> Vec<u32> {
    PLACES.lock().get(p as usize).cloned().unwrap_or_default()
}

/// The place holding `cpu`, if any.
pub fn of_cpu(cpu: u32) -> Option<u32> {
    if count() == 0 {
        return None;
    }
    PLACES.lock().iter().position(|p| p.contains(&cpu)).map(|i| i as u32)
}

/// Whether OMP_PLACES value `v` is a place list this runtime reads (else it is ignored, as
/// libgomp ignores it).
pub fn valid(v: &[u8], ncpus: u32) -> bool {
    parse(v, ncpus).is_some()
}

/// Sets the place list from a valid OMP_PLACES (None: unset) for `ncpus` CPUs; with binding
/// asked for and no list, one place per core.
pub fn init(value: Option<&[u8]>, binding: bool, ncpus: u32) {
    let list = match value.and_then(|v| parse(v, ncpus)) {
        Some(l) => l,
        None if binding => per_cpu(ncpus, ncpus),
        None => Vec::new(),
    };
    COUNT.store(list.len() as u32, Ordering::Relaxed);
    *PLACES.lock() = list;
}

fn per_cpu(ncpus: u32, limit: u32) -> Vec<Vec<u32>> {
    (0..ncpus.min(limit)).map(|c| alloc::vec![c]).collect()
}

/// OMP_PLACES: an abstract name with an optional count (`threads`, `cores`, `ll_caches`,
/// `numa_domains`, `sockets`, e.g. `cores(2)`), or a list of places, each `{cpus}` or
/// `{cpus}:count[:stride]`, where cpus are `a`, `a:len` or `a:len:stride`, comma-separated.
/// CPUs beyond the VM's are dropped.
fn parse(v: &[u8], ncpus: u32) -> Option<Vec<Vec<u32>>> {
    let v = v.trim_ascii();
    if v.first() != Some(&b'{') {
        let (name, limit) = match v.iter().position(|&b| b == b'(') {
            Some(i) if v.last() == Some(&b')') => (&v[..i], number(&v[i + 1..v.len() - 1])?),
            Some(_) => return None,
            None => (v, u32::MAX),
        };
        let name = name.trim_ascii().to_ascii_lowercase();
        return match name.as_slice() {
            b"threads" | b"cores" => Some(per_cpu(ncpus, limit)),
            b"ll_caches" | b"numa_domains" | b"sockets" => Some(alloc::vec![(0..ncpus).collect()]),
            _ => None,
        };
    }
    let mut places = Vec::new();
    let mut rest = v;
    while !rest.is_empty() {
        rest = rest.strip_prefix(b"{")?;
        let close = rest.iter().position(|&b| b == b'}')?;
        let mut place = Vec::new();
        for item in rest[..close].split(|&b| b == b',') {
            let (a, len, stride) = interval(item)?;
            for k in 0..len {
                place.push(a.checked_add(k.checked_mul(stride)?)?);
            }
        }
        rest = &rest[close + 1..];
        // A place interval: {place}:count[:stride] repeats it, shifted by stride CPUs.
        let (count, stride, after) = match rest.strip_prefix(b":") {
            Some(r) => {
                let end = r.iter().position(|&b| b == b',').unwrap_or(r.len());
                let mut it = r[..end].split(|&b| b == b':');
                let count = number(it.next()?)?;
                let stride = it.next().map_or(Some(1), number)?;
                if it.next().is_some() {
                    return None;
                }
                (count, stride, &r[end..])
            }
            None => (1, 0, rest),
        };
        for k in 0..count {
            let shifted: Vec<u32> = place.iter().map(|&c| c + k * stride).filter(|&c| c < ncpus).collect();
            if !shifted.is_empty() {
                places.push(shifted);
            }
        }
        rest = after.strip_prefix(b",").unwrap_or(after).trim_ascii_start();
    }
    (!places.is_empty()).then_some(places)
}

fn number(v: &[u8]) -> Option<u32> {
    let v = v.trim_ascii();
    (!v.is_empty() && v.iter().all(u8::is_ascii_digit)).then(|| core::str::from_utf8(v).ok()?.parse().ok())?
}

/// `a`, `a:len` or `a:len:stride`.
fn interval(v: &[u8]) -> Option<(u32, u32, u32)> {
    let mut parts = v.split(|&b| b == b':');
    let a = number(parts.next()?)?;
    let len = parts.next().map_or(Some(1), number)?;
    let stride = parts.next().map_or(Some(1), number)?;
    parts.next().is_none().then_some((a, len, stride))
}

/// Where thread `id` of a team of `n` goes: its place and place partition, for proc-bind-var
/// `bind`, the encountering task's place `master` and partition `part` (spec 5.x "Controlling
/// OpenMP Thread Affinity"; `true` is `close`, as in libgomp).
pub fn assign(bind: u32, master: u32, part: Partition, n: u32, id: u32) -> (u32, Partition) {
    let total = count().max(1);
    let p = part.len.max(1);
    // The master's position in its partition.
    let m = (master + total - part.first) % total % p;
    let at = |offset: u32| (part.first + (m + offset) % p) % total;
    match bind {
        BIND_PRIMARY => (master, part),
        BIND_SPREAD if n <= p => {
            // T subpartitions of P/T places (the first P % T one longer), the master's first.
            let start = id * p / n;
            let len = (id + 1) * p / n - start;
            let place = at(start);
            (place, Partition { first: place, len })
        }
        BIND_SPREAD => {
            let place = at(id * p / n);
            (place, Partition { first: place, len: 1 })
        }
        _ if n <= p => (at(id), part),
        _ => (at(id * p / n), part),
    }
}

/// The CPU thread `id` of such a team is pinned to: the first CPU of its place not taken by
/// an earlier thread of the team in the same place (wrapping).
pub fn cpu_for(bind: u32, master: u32, part: Partition, n: u32, id: u32) -> Option<usize> {
    let (place, _) = assign(bind, master, part, n, id);
    let before = (0..id).filter(|&j| assign(bind, master, part, n, j).0 == place).count();
    let cpus = procs(place);
    (!cpus.is_empty()).then(|| cpus[before % cpus.len()] as usize)
}

/// The whole place list as a partition.
pub fn all() -> Partition {
    Partition { first: 0, len: count() }
}

/// Sorted processor numbers as runs of consecutive ones: (first, count) each, for the
/// notations that print CPU sets (`0-3`, `{0:4}`).
pub fn runs(cpus: &[u32]) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for &c in cpus {
        match out.last_mut() {
            Some((first, n)) if *first + *n == c => *n += 1,
            _ => out.push((c, 1)),
        }
    }
    out
}
