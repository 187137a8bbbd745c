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

/// Logical CPU numbers a place may name (libgomp's CPU set holds 1024).
const CPU_LIMIT: u64 = 1024;

/// OMP_PLACES, read as libgomp 12 reads it: an abstract name with an optional count
/// (`threads`, `cores`, `ll_caches`, `numa_domains`, `sockets`, e.g. `cores(2)`), or a
/// comma-separated list of places, each `{items}` or a bare CPU number, optionally followed by
/// `:count[:stride]` (a place interval; the stride may be negative) or preceded by `!` (which
/// removes an equal place listed before); an item is `cpu[:len[:stride]]`, or `!cpu` (taken
/// out of the place). CPUs beyond the VM's are dropped from their places, and places left
/// empty from the list. None: not a list libgomp accepts (libgomp's own start-up code says why
/// on stderr; this runtime then ignores the variable, as libgomp does).
fn parse(v: &[u8], ncpus: u32) -> Option<Vec<Vec<u32>>> {
    use super::icv::{skip_ws, strtoul};
    let v = skip_ws(v);
    if v.is_empty() {
        return None;
    }
    let names: [(&[u8], bool); 5] =
        [(b"threads", true), (b"cores", true), (b"sockets", false), (b"ll_caches", false), (b"numa_domains", false)];
    for (name, per_cpu_level) in names {
        if v.len() >= name.len() && v[..name.len()].eq_ignore_ascii_case(name) {
            let mut rest = skip_ws(&v[name.len()..]);
            let mut count = u64::MAX;
            if !rest.is_empty() {
                rest = skip_ws(rest.strip_prefix(b"(")?);
                let (n, r) = strtoul(rest)?;
                rest = skip_ws(r).strip_prefix(b")")?;
                if !skip_ws(rest).is_empty() {
                    return None;
                }
                count = n;
            }
            // libgomp finds no topology level with no place in it.
            if count == 0 {
                return None;
            }
            let limit = count.min(u32::MAX as u64) as u32;
            return Some(if per_cpu_level { per_cpu(ncpus, limit) } else { alloc::vec![(0..ncpus).collect()] });
        }
    }
    let mut list: Vec<Vec<u32>> = Vec::new();
    let mut rest = v;
    let mut count = 0u64;
    loop {
        let (Written { cpus: place, negate, len, stride }, after) = one_place(rest)?;
        count += if negate { 1 } else { len };
        if count > 65536 {
            return None;
        }
        if negate {
            let i = list.iter().position(|p| *p == place)?;
            list.remove(i);
        } else {
            for k in 0..len as i64 {
                let mut shifted = Vec::with_capacity(place.len());
                for &c in &place {
                    let c = c as i64 + k * stride;
                    if !(0..CPU_LIMIT as i64).contains(&c) {
                        return None;
                    }
                    shifted.push(c as u32);
                }
                list.push(shifted);
            }
        }
        if after.is_empty() {
            break;
        }
        rest = after.strip_prefix(b",")?;
    }
    // The CPUs this process may use are the VM's.
    let list: Vec<Vec<u32>> = list
        .into_iter()
        .map(|p| p.into_iter().filter(|&c| c < ncpus).collect::<Vec<u32>>())
        .filter(|p| !p.is_empty())
        .collect();
    (!list.is_empty()).then_some(list)
}

/// `:count[:stride]` after a place or an item (`count` must not be 0), if there.
fn interval_suffix(v: &[u8]) -> Option<(u64, i64, &[u8])> {
    use super::icv::{skip_ws, strtol, strtoul};
    let Some(r) = v.strip_prefix(b":") else { return Some((1, 1, v)) };
    let (len, r) = strtoul(skip_ws(r)).unwrap_or((0, r));
    if len == 0 {
        return None;
    }
    let mut rest = skip_ws(r);
    let mut stride = 1;
    if let Some(r) = rest.strip_prefix(b":") {
        let (s, r) = strtol(skip_ws(r))?;
        stride = s;
        rest = skip_ws(r);
    }
    Some((len, stride, rest))
}

/// One place of an explicit list as written: its CPUs (sorted), whether it is negated (`!`),
/// and its interval's count and stride (1 and 1 without one).
struct Written {
    cpus: Vec<u32>,
    negate: bool,
    len: u64,
    stride: i64,
}

/// One place of an explicit list, and what follows it.
fn one_place(v: &[u8]) -> Option<(Written, &[u8])> {
    use super::icv::{skip_ws, strtoul};
    let mut set: Vec<u32> = Vec::new();
    let mut rest = skip_ws(v);
    let negate = rest.first() == Some(&b'!');
    if negate {
        rest = skip_ws(&rest[1..]);
    }
    if let Some(r) = rest.strip_prefix(b"{") {
        rest = skip_ws(r);
        let mut removed: Vec<u64> = Vec::new();
        loop {
            let item_negate = rest.first() == Some(&b'!');
            if item_negate {
                rest = skip_ws(&rest[1..]);
            }
            let (num, r) = strtoul(rest)?;
            rest = skip_ws(r);
            if item_negate && rest.first() == Some(&b':') {
                return None;
            }
            let (len, stride, r) = interval_suffix(rest)?;
            rest = r;
            if item_negate {
                removed.push(num);
            } else {
                for k in 0..len {
                    let c = (num as i64).wrapping_add((k as i64).wrapping_mul(stride));
                    if !(0..CPU_LIMIT as i64).contains(&c) {
                        return None;
                    }
                    set.push(c as u32);
                }
            }
            if let Some(r) = rest.strip_prefix(b"}") {
                rest = r;
                break;
            }
            rest = skip_ws(rest.strip_prefix(b",")?);
        }
        set.sort_unstable();
        set.dedup();
        for cpu in removed {
            // libgomp: "Logical CPU n to be removed is not in the set".
            let i = set.iter().position(|&c| c as u64 == cpu)?;
            set.remove(i);
        }
    } else {
        let (num, r) = strtoul(rest)?;
        if num >= CPU_LIMIT {
            return None;
        }
        set.push(num as u32);
        rest = r;
    }
    rest = skip_ws(rest);
    if negate && rest.first() == Some(&b':') {
        return None;
    }
    let (len, stride, rest) = interval_suffix(rest)?;
    if len >= 65536 {
        return None;
    }
    Some((Written { cpus: set, negate, len, stride }, rest))
}

/// Where thread `id` of a team of `n` goes: its place and place partition, for proc-bind-var
/// `bind`, the encountering task's place `master` and partition `part` (spec 5.x "Controlling
/// OpenMP Thread Affinity"), laid out as libgomp 12 lays them out (`gomp_team_start`), `true`
/// being `close`:
/// - `close` with T <= P threads: thread i on the i-th place from the master's; with T > P,
///   S = T / P consecutive threads per place from the master's, and the T % P threads left
///   over one per place again from the master's.
/// - `spread` with T <= P: the partition cut into T subpartitions, the first P % T of them one
///   place longer, counted from the partition's start; thread 0 keeps the master's place and
///   gets the subpartition holding it, each further thread the first place of the next
///   subpartition (wrapping); with T > P, as `close`, each thread's partition its place.
pub fn assign(bind: u32, master: u32, part: Partition, n: u32, id: u32) -> (u32, Partition) {
    let total = count().max(1);
    let p = part.len.max(1);
    // The master's position in its partition.
    let m = (master + total - part.first) % total % p;
    let abs = |rel: u32| (part.first + rel % p) % total;
    // Close (and spread with more threads than places): the place offset from the master's.
    let close_offset = || {
        if n <= p {
            id
        } else {
            let (s, rest) = (n / p, n % p);
            if id < n - rest {
                id / s
            } else {
                id - (n - rest)
            }
        }
    };
    match bind {
        BIND_PRIMARY => (master, part),
        BIND_SPREAD if n <= p => {
            let (s, rest) = (p / n, p % n);
            let long_end = (s + 1) * rest;
            let len_at = |q: u32| if q < long_end { s + 1 } else { s };
            let first = if m < long_end { m - m % (s + 1) } else { m - (m - long_end) % s };
            if id == 0 {
                return (master, Partition { first: abs(first), len: len_at(first) });
            }
            let mut q = first;
            for _ in 0..id {
                q += len_at(q);
                if q == p {
                    q = 0;
                }
            }
            (abs(q), Partition { first: abs(q), len: len_at(q) })
        }
        BIND_SPREAD => {
            let place = abs(m + close_offset());
            (place, Partition { first: place, len: 1 })
        }
        _ => (abs(m + close_offset()), part),
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
