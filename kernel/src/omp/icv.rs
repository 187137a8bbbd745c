//! Internal control variables: the defaults libgomp takes from the `OMP_*` environment, read
//! once before the program starts, and the per-task copy each implicit task carries.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use super::places;
use crate::sync::SpinLock;

/// Schedule kinds, as `omp_sched_t` and libgomp's `GFS_*` number them.
pub const SCHED_STATIC: u32 = 1;
pub const SCHED_DYNAMIC: u32 = 2;
pub const SCHED_GUIDED: u32 = 3;
pub const SCHED_AUTO: u32 = 4;
/// The `monotonic` modifier bit of `omp_sched_t`.
pub const SCHED_MONOTONIC: u32 = 0x8000_0000;

/// What `omp_get_supported_active_levels` answers (libgomp's limit).
pub const SUPPORTED_ACTIVE_LEVELS: u32 = 255;

/// The data-environment ICVs of one task.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Icv {
    pub nthreads: u32,
    pub run_sched: u32,
    pub run_chunk: u32,
    pub dynamic: bool,
    pub max_active_levels: u32,
    pub bind: u32,
    /// def-allocator-var (an omp_allocator_handle_t).
    pub allocator: usize,
    /// thread-limit-var: the most threads a team made here may have (`teams` and `target`
    /// set it for their regions).
    pub thread_limit: u32,
    /// default-device-var (OMP_DEFAULT_DEVICE, `omp_set_default_device`).
    pub default_device: i32,
}

struct Defaults {
    icv: Icv,
    /// OMP_NUM_THREADS as a list: entry i is nthreads-var inside a team at level i.
    nthreads_list: alloc::vec::Vec<u32>,
    /// OMP_PROC_BIND as a list: entry i is bind-var inside a team at level i.
    bind_list: alloc::vec::Vec<u32>,
}

/// The defaults before the environment is read.
const PRISTINE: Defaults = Defaults {
    icv: Icv {
        nthreads: 1,
        run_sched: SCHED_DYNAMIC,
        run_chunk: 1,
        dynamic: false,
        max_active_levels: 1,
        bind: 0,
        allocator: super::allocators::DEFAULT_MEM_ALLOC,
        thread_limit: u32::MAX,
        default_device: 0,
    },
    nthreads_list: alloc::vec::Vec::new(),
    bind_list: alloc::vec::Vec::new(),
};

static DEFAULTS: SpinLock<Defaults> = SpinLock::new(PRISTINE);
/// Whether OMP_NUM_THREADS or OMP_PROC_BIND gave a list for the levels (`level_defaults`).
static LEVEL_LISTS: AtomicBool = AtomicBool::new(false);
static STACK_SIZE: AtomicU64 = AtomicU64::new(0);
static SPIN_ROUNDS: AtomicU64 = AtomicU64::new(0);
/// The spin of a waiter whose CPU has other threads ready to run (libgomp's throttled spin
/// count, which it uses while its threads outnumber the CPUs).
static THROTTLED_SPIN_ROUNDS: AtomicU64 = AtomicU64::new(0);
static PIN: AtomicU32 = AtomicU32::new(1);
static MAX_TASK_PRIORITY: AtomicU32 = AtomicU32::new(0);
/// cancel-var (OMP_CANCELLATION, false by default): whether `cancel` constructs take effect.
static CANCELLATION: AtomicU32 = AtomicU32::new(0);
/// nteams-var and teams-thread-limit-var (OMP_NUM_TEAMS, OMP_TEAMS_THREAD_LIMIT; 0: unset),
/// which a `teams` construct without the clauses takes (`teams`).
pub static NUM_TEAMS: AtomicU32 = AtomicU32::new(0);
pub static TEAMS_THREAD_LIMIT: AtomicU32 = AtomicU32::new(0);

/// The initial task's ICVs.
pub fn initial() -> Icv {
    DEFAULTS.lock().icv
}

/// nthreads-var and bind-var for the implicit tasks of a team at `level`: the entries of
/// OMP_NUM_THREADS's and OMP_PROC_BIND's lists for that level, else `nthreads` and `bind`.
pub fn level_defaults(level: u32, nthreads: u32, bind: u32) -> (u32, u32) {
    // Without lists (the common case) no lock: every region's start asks.
    if !LEVEL_LISTS.load(Ordering::Relaxed) {
        return (nthreads, bind);
    }
    let d = DEFAULTS.lock();
    let l = level as usize;
    (d.nthreads_list.get(l).copied().unwrap_or(nthreads), d.bind_list.get(l).copied().unwrap_or(bind))
}

/// max-task-priority-var (OMP_MAX_TASK_PRIORITY, 0 by default).
pub fn max_task_priority() -> u32 {
    MAX_TASK_PRIORITY.load(Ordering::Relaxed)
}

/// What OMP_DISPLAY_ENV shows beyond the ICVs: settings as given (`display_env`).
pub struct Shown {
    /// OMP_PROC_BIND's list (`places::BIND_*`), empty when unset.
    pub bind_list: alloc::vec::Vec<u32>,
    pub active_wait: bool,
    /// GOMP_SPINCOUNT as libgomp shows it (what was given, else the wait policy's default).
    pub spin_count: u64,
    pub offload: &'static str,
    /// OMP_DISPLAY_ENV: 0 false, 1 true, 2 verbose.
    pub display: u8,
}

/// OMP_TARGET_OFFLOAD=mandatory (`device::check_construct`).
pub static OFFLOAD_MANDATORY: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

const SHOWN_PRISTINE: Shown = Shown {
    bind_list: alloc::vec::Vec::new(),
    active_wait: false,
    spin_count: 300_000,
    offload: "DEFAULT",
    display: 0,
};

pub static SHOWN: SpinLock<Shown> = SpinLock::new(SHOWN_PRISTINE);

/// Puts every setting back as it was before `init` read an environment (a program that
/// exec'd: the new image reads its own).
pub fn reset() {
    *DEFAULTS.lock() = PRISTINE;
    LEVEL_LISTS.store(false, Ordering::Relaxed);
    *SHOWN.lock() = SHOWN_PRISTINE;
    STACK_SIZE.store(0, Ordering::Relaxed);
    SPIN_ROUNDS.store(0, Ordering::Relaxed);
    THROTTLED_SPIN_ROUNDS.store(0, Ordering::Relaxed);
    PIN.store(1, Ordering::Relaxed);
    MAX_TASK_PRIORITY.store(0, Ordering::Relaxed);
    CANCELLATION.store(0, Ordering::Relaxed);
    NUM_TEAMS.store(0, Ordering::Relaxed);
    TEAMS_THREAD_LIMIT.store(0, Ordering::Relaxed);
    OFFLOAD_MANDATORY.store(false, Ordering::Relaxed);
}

/// The initial ICVs and OMP_NUM_THREADS's list (for OMP_DISPLAY_ENV).
pub fn defaults() -> (Icv, alloc::vec::Vec<u32>) {
    let d = DEFAULTS.lock();
    (d.icv, d.nthreads_list.clone())
}

/// cancel-var.
pub fn cancellation() -> bool {
    CANCELLATION.load(Ordering::Relaxed) != 0
}

/// OMP_STACKSIZE in bytes, 0 for the libc's default.
pub fn stack_size() -> u64 {
    STACK_SIZE.load(Ordering::Relaxed)
}

/// How many rounds (one PAUSE each) a waiting thread spins before it sleeps.
pub fn spin_rounds() -> u64 {
    SPIN_ROUNDS.load(Ordering::Relaxed)
}

/// How many rounds a waiting thread spins once it has seen other threads ready on its CPU.
pub fn throttled_spin_rounds() -> u64 {
    THROTTLED_SPIN_ROUNDS.load(Ordering::Relaxed)
}

/// Whether workers are pinned to CPUs (unless OMP_PROC_BIND=false).
pub fn pin() -> bool {
    PIN.load(Ordering::Relaxed) != 0
}

pub fn num_procs() -> u32 {
    crate::cpu::count() as u32
}

// The readers below take the `OMP_*` values as libgomp 12 does (libgomp/env.c): C's `isspace`
// around the parts, `strtoul`'s numbers (a sign allowed, a negative one wrapping), prefixes
// compared without case. The program's own libgomp reads the same environment in its
// start-up code, which runs under this runtime too, and prints its "libgomp: Invalid value
// for environment variable ..." lines; so these readers print nothing and only decide what
// libgomp keeps.

/// GOMP_CPU_AFFINITY, read as libgomp 12 reads it (`parse_affinity`): CPUs separated by commas
/// or white space, each `cpu`, `first-last` or `first-last:stride` (C's `strtoul` with base
/// 0: hex and octal too, each below 65536), one place per CPU in the order given. CPUs the VM
/// lacks are left out, as from OMP_PLACES (libgomp keeps them here, in places of their own
/// where binding then fails). As an OMP_PLACES list (`{a},{b},...`) for `places::init`; None
/// when the value is invalid (libgomp's start-up code says so) or names no CPU of the VM.
fn cpu_affinity_places(v: &[u8], ncpus: u32) -> Option<alloc::vec::Vec<u8>> {
    fn number(v: &[u8]) -> Option<(u64, &[u8])> {
        let v = skip_ws(v);
        let (radix, digits) = match v {
            [b'0', b'x' | b'X', rest @ ..] if rest.first().is_some_and(|b| b.is_ascii_hexdigit()) => (16, rest),
            [b'0', ..] => (8, v),
            _ => (10, v),
        };
        let n = digits.iter().take_while(|&&b| (b as char).is_digit(radix)).count();
        if n == 0 {
            return None;
        }
        let x = digits[..n]
            .iter()
            .try_fold(0u64, |a, &d| a.checked_mul(radix as u64)?.checked_add((d as char).to_digit(radix)? as u64))?;
        (x < 65536).then_some((x, &digits[n..]))
    }
    let mut out = alloc::vec::Vec::new();
    let mut v = v;
    loop {
        let (first, rest) = number(v)?;
        let (mut last, mut stride, mut rest) = (first, 1, rest);
        if let Some(r) = rest.strip_prefix(b"-") {
            let (l, r) = number(r)?;
            if l < first {
                return None;
            }
            (last, rest) = (l, r);
            if let Some(r) = rest.strip_prefix(b":") {
                let (s, r) = number(r)?;
                if s == 0 {
                    return None;
                }
                (stride, rest) = (s, r);
            }
        }
        let mut cpu = first;
        while cpu <= last {
            if cpu < ncpus as u64 {
                if !out.is_empty() {
                    out.push(b',');
                }
                out.extend_from_slice(alloc::format!("{{{cpu}}}").as_bytes());
            }
            cpu += stride;
        }
        let rest = skip_ws(rest);
        match rest {
            [] => break,
            [b',', r @ ..] => v = r,
            _ => v = rest,
        }
    }
    (!out.is_empty()).then_some(out)
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `v` without its leading white space.
pub fn skip_ws(v: &[u8]) -> &[u8] {
    let n = v.iter().take_while(|&&b| is_space(b)).count();
    &v[n..]
}

/// C's `strtoul(v, &end, 10)` on 64 bits: the value and what follows, None when there are no
/// digits or the value overflows (ERANGE).
pub fn strtoul(v: &[u8]) -> Option<(u64, &[u8])> {
    let v = skip_ws(v);
    let (neg, v) = match v.first() {
        Some(b'-') => (true, &v[1..]),
        Some(b'+') => (false, &v[1..]),
        _ => (false, v),
    };
    let n = v.iter().take_while(|b| b.is_ascii_digit()).count();
    if n == 0 {
        return None;
    }
    let x = v[..n].iter().try_fold(0u64, |a, &d| a.checked_mul(10)?.checked_add((d - b'0') as u64))?;
    Some((if neg { x.wrapping_neg() } else { x }, &v[n..]))
}

/// C's `strtol(v, &end, 10)` on 64 bits.
pub fn strtol(v: &[u8]) -> Option<(i64, &[u8])> {
    let t = skip_ws(v);
    let neg = t.first() == Some(&b'-');
    let (x, rest) = strtoul(v)?;
    let ok = if neg { x == 0 || x >= 1 << 63 } else { x < 1 << 63 };
    ok.then_some((x as i64, rest))
}

/// Whether `v` starts with `word`, case aside; what follows if so.
fn prefix<'a>(v: &'a [u8], word: &[u8]) -> Option<&'a [u8]> {
    (v.len() >= word.len() && v[..word.len()].eq_ignore_ascii_case(word)).then(|| &v[word.len()..])
}

/// libgomp's `parse_unsigned_long`: one number, above 0 (or at least 0 with `allow_zero`)
/// taken as a signed long.
fn parse_ulong(v: &[u8], allow_zero: bool) -> Option<u64> {
    let v = skip_ws(v);
    if v.is_empty() {
        return None;
    }
    let (x, rest) = strtoul(v)?;
    if (x as i64) < (!allow_zero) as i64 || !skip_ws(rest).is_empty() {
        return None;
    }
    Some(x)
}

/// libgomp's `parse_int`: as `parse_ulong`, at most INT_MAX.
fn parse_int(v: &[u8], allow_zero: bool) -> Option<u32> {
    parse_ulong(v, allow_zero).filter(|&x| x <= i32::MAX as u64).map(|x| x as u32)
}

/// libgomp's `parse_unsigned_long_list` (OMP_NUM_THREADS): numbers above 0, comma-separated;
/// one bad entry and the whole list is ignored.
fn parse_ulong_list(v: &[u8]) -> Option<alloc::vec::Vec<u64>> {
    let mut rest = skip_ws(v);
    let mut out = alloc::vec::Vec::new();
    loop {
        if skip_ws(rest).is_empty() {
            return None;
        }
        let (x, r) = strtoul(rest)?;
        if x as i64 <= 0 {
            return None;
        }
        out.push(x);
        let r = skip_ws(r);
        if r.is_empty() {
            return Some(out);
        }
        rest = r.strip_prefix(b",")?;
    }
}

/// libgomp's `parse_boolean`: (the value it stores, whether the whole value was valid). A
/// value that starts with `true` or `false` is stored even when more follows (invalid).
fn parse_boolean(v: &[u8]) -> (Option<bool>, bool) {
    let v = skip_ws(v);
    let (value, rest) = if let Some(r) = prefix(v, b"true") {
        (Some(true), r)
    } else if let Some(r) = prefix(v, b"false") {
        (Some(false), r)
    } else {
        (None, &b"X"[..])
    };
    (value, skip_ws(rest).is_empty())
}

/// libgomp's `parse_schedule`: applies OMP_SCHEDULE to `kind` and `chunk` as libgomp does,
/// which sets the kind before it looks at the chunk (so `static,x` is `static` with the chunk
/// unchanged). A kind without a modifier is nonmonotonic, except `static`, which is monotonic.
fn parse_schedule(v: &[u8], kind: &mut u32, chunk: &mut u32) {
    let mut v = skip_ws(v);
    let mut monotonic = 0;
    if let Some(r) = prefix(v, b"monotonic") {
        (monotonic, v) = (1, r);
    } else if let Some(r) = prefix(v, b"nonmonotonic") {
        (monotonic, v) = (-1, r);
    }
    if monotonic != 0 {
        let Some(r) = skip_ws(v).strip_prefix(b":") else { return };
        v = skip_ws(r);
    }
    let kinds: [(&[u8], u32); 4] =
        [(b"static", SCHED_STATIC), (b"dynamic", SCHED_DYNAMIC), (b"guided", SCHED_GUIDED), (b"auto", SCHED_AUTO)];
    let Some((k, r)) = kinds.iter().find_map(|&(name, k)| prefix(v, name).map(|r| (k, r))) else { return };
    *kind = k;
    if monotonic == 1 || (monotonic == 0 && k == SCHED_STATIC) {
        *kind |= SCHED_MONOTONIC;
    }
    let v = skip_ws(r);
    if v.is_empty() {
        *chunk = (k != SCHED_STATIC) as u32;
        return;
    }
    let Some(v) = v.strip_prefix(b",") else { return };
    let v = skip_ws(v);
    if v.is_empty() {
        return;
    }
    let Some((x, rest)) = strtoul(v) else { return };
    // libgomp keeps a chunk whose value survives the round trip through int.
    if !skip_ws(rest).is_empty() || x as i32 as i64 as u64 != x {
        return;
    }
    *chunk = if x == 0 && k != SCHED_STATIC { 1 } else { x as u32 };
}

/// libgomp's `parse_spincount` (GOMP_SPINCOUNT): a number with an optional k, M, G or T suffix
/// (powers of 1000, either case), saturating; or `infinite`/`infinity`.
fn parse_count(v: &[u8]) -> Option<u64> {
    let v = skip_ws(v);
    if v.is_empty() {
        return None;
    }
    if let Some(r) = prefix(v, b"infinite").or_else(|| prefix(v, b"infinity")) {
        return skip_ws(r).is_empty().then_some(u64::MAX);
    }
    let (x, suffix) = number_and_suffix(v)?;
    let mult: u64 = match suffix {
        None => 1,
        Some(b'k') => 1_000,
        Some(b'm') => 1_000_000,
        Some(b'g') => 1_000_000_000,
        Some(b't') => 1_000_000_000_000,
        _ => return None,
    };
    Some(x.saturating_mul(mult))
}

/// libgomp's `parse_stacksize` (OMP_STACKSIZE, GOMP_STACKSIZE): a number with an optional B,
/// K, M or G suffix, either case (K by default).
fn parse_size(v: &[u8]) -> Option<u64> {
    let (x, suffix) = number_and_suffix(v)?;
    let shift = match suffix {
        None | Some(b'k') => 10,
        Some(b'b') => 0,
        Some(b'm') => 20,
        Some(b'g') => 30,
        _ => return None,
    };
    ((x << shift) >> shift == x).then_some(x << shift)
}

/// A number (`strtoul`) and an optional one-letter suffix (lower-cased), with blanks around
/// either and nothing else; None when empty or anything follows.
fn number_and_suffix(v: &[u8]) -> Option<(u64, Option<u8>)> {
    let v = skip_ws(v);
    if v.is_empty() {
        return None;
    }
    let (x, rest) = strtoul(v)?;
    let rest = skip_ws(rest);
    match rest.split_first() {
        None => Some((x, None)),
        Some((&c, after)) => skip_ws(after).is_empty().then_some((x, Some(c.to_ascii_lowercase()))),
    }
}

/// libgomp's `parse_bind_var` (OMP_PROC_BIND): one of false, true, master, primary, close and
/// spread, or a list of the last four (the first may be master, primary, close or spread).
fn parse_bind(v: &[u8]) -> Option<alloc::vec::Vec<u32>> {
    let kinds: [(&[u8], u32); 6] = [
        (b"false", places::BIND_FALSE),
        (b"true", places::BIND_TRUE),
        (b"master", places::BIND_PRIMARY),
        (b"primary", places::BIND_PRIMARY),
        (b"close", places::BIND_CLOSE),
        (b"spread", places::BIND_SPREAD),
    ];
    let mut v = skip_ws(v);
    let mut out = alloc::vec::Vec::new();
    loop {
        let allowed = if out.is_empty() { &kinds[..] } else { &kinds[2..] };
        let (k, r) = allowed.iter().find_map(|&(name, k)| prefix(v, name).map(|r| (k, r)))?;
        out.push(k);
        let r = skip_ws(r);
        if r.is_empty() {
            return Some(out);
        }
        if out[0] == places::BIND_FALSE || out[0] == places::BIND_TRUE {
            return None;
        }
        v = skip_ws(r.strip_prefix(b",")?);
    }
}

/// The value of variable `name` as `getenv` gives it (the first one in the environment).
fn getenv<'a>(env: &[&'a [u8]], name: &[u8]) -> Option<&'a [u8]> {
    env.iter().find_map(|e| e.strip_prefix(name)?.strip_prefix(b"="))
}

pub fn init<'a>(env: impl Iterator<Item = &'a [u8]>) {
    let env: alloc::vec::Vec<&[u8]> = env.collect();
    let get = |name: &[u8]| getenv(&env, name);
    let mut d = DEFAULTS.lock();
    d.icv.nthreads = num_procs().max(1);
    // libgomp's spin counts: 300,000 rounds by default (about 7 ms on the PVM test host),
    // practically forever when active, none when passive; GOMP_SPINCOUNT sets it. libgomp spins
    // only 100 rounds (1,000 when active) while its threads outnumber the CPUs, so that a
    // waiting thread soon gives its CPU to the one it waits for. The kernel's threads never
    // outnumber its vCPUs that way (a waiter yields to a runnable thread of its CPU), but the
    // vCPUs may outnumber the host's CPUs, where a spinning vCPU keeps the host CPU from the
    // vCPU it waits for: then the same short spin, and a sleeping waiter's vCPU halts. Unless
    // the team is packed on as many vCPUs as the host has CPUs (`sched::placement_cpus`):
    // a waiter yields to the threads of its own vCPU, and spinning only keeps the host CPU
    // that vCPU has in effect (cg.S at 4 vCPUs on 2 host CPUs, 4 alternating runs: 0.26-1.13 s
    // with 100 rounds, 0.02-0.27 s with the full spin).
    let overcommitted = crate::bootinfo::get().flags & hrt_abi::flags::HOST_OVERCOMMITTED != 0
        && crate::sched::placement_cpus() == crate::cpu::count();
    let mut spin_rounds: u64 = if overcommitted { 100 } else { 300_000 };
    // libgomp: 100 throttled rounds by default, 1,000 when active, none when passive, and
    // GOMP_SPINCOUNT's value up to 1,000.
    let mut throttled: u64 = 100;
    let mut shown = SHOWN.lock();
    // In libgomp's order (`initialize_env`), each variable as libgomp reads it.
    if let Some(v) = get(b"OMP_SCHEDULE") {
        let (mut kind, mut chunk) = (d.icv.run_sched, d.icv.run_chunk);
        parse_schedule(v, &mut kind, &mut chunk);
        (d.icv.run_sched, d.icv.run_chunk) = (kind, chunk);
    }
    if let Some(b) = get(b"OMP_DYNAMIC").and_then(|v| parse_boolean(v).0) {
        d.icv.dynamic = b;
    }
    if let Some(b) = get(b"OMP_CANCELLATION").and_then(|v| parse_boolean(v).0) {
        CANCELLATION.store(b as u32, Ordering::Relaxed);
    }
    if let Some(b) = get(b"OMP_DISPLAY_AFFINITY").and_then(|v| parse_boolean(v).0) {
        super::affinity::init_env(b"OMP_DISPLAY_AFFINITY", b"", Some(b));
    }
    if let Some(x) = get(b"OMP_DEFAULT_DEVICE").and_then(|v| parse_int(v, true)) {
        d.icv.default_device = x as i32;
    }
    if let Some(v) = get(b"OMP_TARGET_OFFLOAD") {
        let v = skip_ws(v);
        let kinds: [(&[u8], &str); 3] =
            [(b"default", "DEFAULT"), (b"mandatory", "MANDATORY"), (b"disabled", "DISABLED")];
        if let Some((name, _)) =
            kinds.iter().find_map(|&(w, name)| prefix(v, w).map(|r| (name, r))).filter(|(_, r)| skip_ws(r).is_empty())
        {
            shown.offload = name;
            OFFLOAD_MANDATORY.store(name == "MANDATORY", Ordering::Relaxed);
        }
    }
    if let Some(x) = get(b"OMP_MAX_TASK_PRIORITY").and_then(|v| parse_int(v, true)) {
        MAX_TASK_PRIORITY.store(x, Ordering::Relaxed);
    }
    if let Some(v) = get(b"OMP_ALLOCATOR") {
        d.icv.allocator = super::allocators::parse_env(v).unwrap_or(super::allocators::DEFAULT_MEM_ALLOC);
    }
    if let Some(x) = get(b"OMP_THREAD_LIMIT").and_then(|v| parse_ulong(v, false)) {
        // As libgomp: beyond INT_MAX is no limit (UINT_MAX, which OMP_DISPLAY_ENV shows).
        d.icv.thread_limit = if x > i32::MAX as u64 { u32::MAX } else { x as u32 };
    }
    if let Some(list) = get(b"OMP_NUM_THREADS").and_then(parse_ulong_list) {
        d.nthreads_list = list.iter().map(|&x| x.min(u32::MAX as u64) as u32).collect();
        d.icv.nthreads = d.nthreads_list[0];
        if d.nthreads_list.len() == 1 {
            d.nthreads_list.clear();
        }
    }
    if let Some(x) = get(b"OMP_NUM_TEAMS").and_then(|v| parse_int(v, false)) {
        NUM_TEAMS.store(x, Ordering::Relaxed);
    }
    if let Some(x) = get(b"OMP_TEAMS_THREAD_LIMIT").and_then(|v| parse_int(v, false)) {
        TEAMS_THREAD_LIMIT.store(x, Ordering::Relaxed);
    }
    let bind = get(b"OMP_PROC_BIND").and_then(parse_bind);
    if let Some(list) = &bind {
        d.icv.bind = list[0];
        shown.bind_list = list.clone();
        if list.len() > 1 {
            d.bind_list = list.clone();
        }
    }
    // libgomp's default for max-active-levels: nesting only when asked for, or when the
    // thread-count or binding lists name more than one level (then as many levels as it
    // supports, as gcc 12's libgomp answers).
    if let Some(m) = get(b"OMP_MAX_ACTIVE_LEVELS").and_then(|v| parse_ulong(v, true)) {
        d.icv.max_active_levels = m.min(SUPPORTED_ACTIVE_LEVELS as u64) as u32;
    } else {
        match get(b"OMP_NESTED").map(parse_boolean) {
            Some((Some(nested), true)) => {
                d.icv.max_active_levels = if nested { SUPPORTED_ACTIVE_LEVELS } else { 1 };
            }
            _ if d.nthreads_list.len() > 1 || d.bind_list.len() > 1 => {
                d.icv.max_active_levels = SUPPORTED_ACTIVE_LEVELS;
            }
            _ => {}
        }
    }
    // A place list is read unless OMP_PROC_BIND is false; one that is read turns binding on
    // when OMP_PROC_BIND did not.
    LEVEL_LISTS.store(!d.nthreads_list.is_empty() || !d.bind_list.is_empty(), Ordering::Relaxed);
    let places = if d.icv.bind == places::BIND_FALSE && bind.is_some() { None } else { get(b"OMP_PLACES") };
    let places = places.filter(|v| super::places::valid(v, num_procs()));
    // GOMP_CPU_AFFINITY (libgomp's own) gives one place per CPU it lists, when OMP_PLACES gave
    // none and OMP_PROC_BIND is not false.
    let affinity = match (&places, d.icv.bind == places::BIND_FALSE && bind.is_some()) {
        (None, false) => get(b"GOMP_CPU_AFFINITY").and_then(|v| cpu_affinity_places(v, num_procs())),
        _ => None,
    };
    let places = places.map(alloc::vec::Vec::from).or(affinity);
    if places.is_some() && d.icv.bind == places::BIND_FALSE {
        d.icv.bind = places::BIND_TRUE;
    }
    if bind.is_some() {
        PIN.store((d.icv.bind != 0) as u32, Ordering::Relaxed);
    }
    if let Some(v) = get(b"OMP_AFFINITY_FORMAT") {
        super::affinity::init_env(b"OMP_AFFINITY_FORMAT", v, None);
    }
    let wait_policy = get(b"OMP_WAIT_POLICY").and_then(|v| {
        let v = skip_ws(v);
        let (active, rest) = match (prefix(v, b"active"), prefix(v, b"passive")) {
            (Some(r), _) => (true, r),
            (_, Some(r)) => (false, r),
            _ => return None,
        };
        skip_ws(rest).is_empty().then_some(active)
    });
    match wait_policy {
        Some(false) => {
            spin_rounds = 0;
            throttled = 0;
            shown.spin_count = 0;
        }
        Some(true) => {
            spin_rounds = if overcommitted { 1_000 } else { 30_000_000_000 };
            throttled = 1_000;
            shown.spin_count = 30_000_000_000;
            shown.active_wait = true;
        }
        None => {}
    }
    let spin_count = get(b"GOMP_SPINCOUNT").and_then(parse_count);
    SPIN_ROUNDS.store(spin_count.unwrap_or(spin_rounds), Ordering::Relaxed);
    if let Some(n) = spin_count {
        throttled = n.min(1_000);
        shown.spin_count = n;
    }
    THROTTLED_SPIN_ROUNDS.store(throttled.min(spin_count.unwrap_or(spin_rounds)), Ordering::Relaxed);
    // GOMP_STACKSIZE counts only when OMP_STACKSIZE is unset or invalid.
    if let Some(x) = get(b"OMP_STACKSIZE").and_then(parse_size).or_else(|| get(b"GOMP_STACKSIZE").and_then(parse_size))
    {
        STACK_SIZE.store(x, Ordering::Relaxed);
    }
    if let Some(v) = get(b"OMP_DISPLAY_ENV") {
        let v = skip_ws(v);
        shown.display = if prefix(v, b"true").is_some() {
            1
        } else if prefix(v, b"verbose").is_some() {
            2
        } else {
            0
        };
    }
    let display = shown.display;
    drop(shown);
    super::places::init(places.as_deref(), d.icv.bind != 0, num_procs());
    drop(d);
    if display != 0 {
        super::display_env::show(display == 2);
    }
}
