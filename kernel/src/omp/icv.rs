//! Internal control variables: the defaults libgomp takes from the `OMP_*` environment, read
//! once before the program starts, and the per-task copy each implicit task carries.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

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
#[derive(Clone, Copy)]
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
    nthreads_list: [u32; 8],
    nthreads_list_len: usize,
}

static DEFAULTS: SpinLock<Defaults> = SpinLock::new(Defaults {
    icv: Icv {
        nthreads: 1,
        run_sched: SCHED_DYNAMIC,
        run_chunk: 1,
        dynamic: false,
        max_active_levels: 1,
        bind: 0,
        allocator: super::allocators::DEFAULT_MEM_ALLOC,
        thread_limit: i32::MAX as u32,
        default_device: 0,
    },
    nthreads_list: [0; 8],
    nthreads_list_len: 0,
});
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

/// nthreads-var for the implicit tasks of a team at `level` (OMP_NUM_THREADS's list), else
/// the encountering task's.
pub fn nthreads_at(level: u32, inherited: u32) -> u32 {
    let d = DEFAULTS.lock();
    let l = level as usize;
    if l < d.nthreads_list_len {
        d.nthreads_list[l]
    } else {
        inherited
    }
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

pub static SHOWN: SpinLock<Shown> = SpinLock::new(Shown {
    bind_list: alloc::vec::Vec::new(),
    active_wait: false,
    spin_count: 300_000,
    offload: "DEFAULT",
    display: 0,
});

/// The initial ICVs and OMP_NUM_THREADS's list (for OMP_DISPLAY_ENV).
pub fn defaults() -> (Icv, alloc::vec::Vec<u32>) {
    let d = DEFAULTS.lock();
    (d.icv, d.nthreads_list[..d.nthreads_list_len].to_vec())
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

fn parse_u64(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    v.iter().try_fold(0u64, |a, &d| a.checked_mul(10)?.checked_add((d - b'0') as u64))
}

fn parse_bool(v: &[u8]) -> Option<bool> {
    let v = v.trim_ascii();
    if v.eq_ignore_ascii_case(b"true") {
        Some(true)
    } else if v.eq_ignore_ascii_case(b"false") {
        Some(false)
    } else {
        None
    }
}

/// OMP_SCHEDULE: `[monotonic:|nonmonotonic:]kind[,chunk]`.
fn parse_schedule(v: &[u8]) -> Option<(u32, u32)> {
    let v = v.trim_ascii();
    let (modifier, rest) = match v.iter().position(|&b| b == b':') {
        Some(i) => (&v[..i], &v[i + 1..]),
        None => (&b""[..], v),
    };
    let monotonic = if modifier.trim_ascii().eq_ignore_ascii_case(b"monotonic") { SCHED_MONOTONIC } else { 0 };
    let (kind, chunk) = match rest.iter().position(|&b| b == b',') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let kind = match kind.trim_ascii().to_ascii_lowercase().as_slice() {
        b"static" => SCHED_STATIC,
        b"dynamic" => SCHED_DYNAMIC,
        b"guided" => SCHED_GUIDED,
        b"auto" => SCHED_AUTO,
        _ => return None,
    };
    let chunk = match chunk {
        Some(c) => parse_u64(c)?.min(i32::MAX as u64) as u32,
        None => 0,
    };
    let chunk = if chunk == 0 && kind != SCHED_STATIC { 1 } else { chunk };
    Some((kind | monotonic, chunk))
}

/// GOMP_SPINCOUNT: a number with an optional k, M, G or T suffix (powers of 1000).
fn parse_count(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    let (digits, unit) = match v.last()? {
        b'k' | b'K' => (&v[..v.len() - 1], 1_000),
        b'M' => (&v[..v.len() - 1], 1_000_000),
        b'G' => (&v[..v.len() - 1], 1_000_000_000),
        b'T' => (&v[..v.len() - 1], 1_000_000_000_000),
        _ => (v, 1),
    };
    parse_u64(digits)?.checked_mul(unit)
}

/// OMP_STACKSIZE: a number with an optional B, K, M or G suffix (K by default).
fn parse_size(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    let (digits, unit) = match v.last()?.to_ascii_uppercase() {
        b'B' => (&v[..v.len() - 1], 1),
        b'K' => (&v[..v.len() - 1], 1 << 10),
        b'M' => (&v[..v.len() - 1], 1 << 20),
        b'G' => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1 << 10),
    };
    parse_u64(digits)?.checked_mul(unit)
}

pub fn init<'a>(env: impl Iterator<Item = &'a [u8]>) {
    let mut d = DEFAULTS.lock();
    d.icv.nthreads = num_procs().max(1);
    let mut max_active: Option<u32> = None;
    let mut nested: Option<bool> = None;
    let mut bind_list_len = 0;
    let mut bind_set = false;
    let mut places: Option<&[u8]> = None;
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
    let mut spin_count: Option<u64> = None;
    let mut shown = SHOWN.lock();
    for e in env {
        let Some(eq) = e.iter().position(|&b| b == b'=') else { continue };
        let (k, v) = (&e[..eq], &e[eq + 1..]);
        match k {
            b"OMP_NUM_THREADS" => {
                let mut n = 0;
                for item in v.split(|&b| b == b',') {
                    match parse_u64(item) {
                        Some(x) if x > 0 && n < d.nthreads_list.len() => {
                            d.nthreads_list[n] = x.min(u32::MAX as u64) as u32;
                            n += 1;
                        }
                        _ => break,
                    }
                }
                if n > 0 {
                    d.icv.nthreads = d.nthreads_list[0];
                    d.nthreads_list_len = n;
                }
            }
            b"OMP_SCHEDULE" => {
                if let Some((kind, chunk)) = parse_schedule(v) {
                    d.icv.run_sched = kind;
                    d.icv.run_chunk = chunk;
                }
            }
            b"OMP_DYNAMIC" => d.icv.dynamic = parse_bool(v).unwrap_or(false),
            b"OMP_NESTED" => nested = parse_bool(v),
            b"OMP_CANCELLATION" => {
                if let Some(b) = parse_bool(v) {
                    CANCELLATION.store(b as u32, Ordering::Relaxed);
                }
            }
            b"OMP_MAX_ACTIVE_LEVELS" => max_active = parse_u64(v).map(|x| x.min(SUPPORTED_ACTIVE_LEVELS as u64) as u32),
            b"OMP_THREAD_LIMIT" => {
                if let Some(x) = parse_u64(v).filter(|&x| x > 0) {
                    d.icv.thread_limit = x.min(i32::MAX as u64) as u32;
                }
            }
            b"OMP_DEFAULT_DEVICE" => {
                if let Some(x) = parse_u64(v) {
                    d.icv.default_device = x.min(i32::MAX as u64) as i32;
                }
            }
            b"OMP_NUM_TEAMS" | b"OMP_TEAMS_THREAD_LIMIT" => {
                let var = if k == b"OMP_NUM_TEAMS" { &NUM_TEAMS } else { &TEAMS_THREAD_LIMIT };
                if let Some(x) = parse_u64(v).filter(|&x| x > 0) {
                    var.store(x.min(i32::MAX as u64) as u32, Ordering::Relaxed);
                }
            }
            b"OMP_MAX_TASK_PRIORITY" => {
                if let Some(x) = parse_u64(v) {
                    MAX_TASK_PRIORITY.store(x.min(i32::MAX as u64) as u32, Ordering::Relaxed);
                }
            }
            b"OMP_STACKSIZE" | b"GOMP_STACKSIZE" => {
                if let Some(x) = parse_size(v) {
                    STACK_SIZE.store(x, Ordering::Relaxed);
                }
            }
            b"OMP_WAIT_POLICY" => {
                if v.trim_ascii().eq_ignore_ascii_case(b"passive") {
                    spin_rounds = 0;
                    throttled = 0;
                    shown.spin_count = 0;
                } else if v.trim_ascii().eq_ignore_ascii_case(b"active") {
                    spin_rounds = if overcommitted { 1_000 } else { 30_000_000_000 };
                    throttled = 1_000;
                    shown.spin_count = 30_000_000_000;
                    shown.active_wait = true;
                }
            }
            b"OMP_ALLOCATOR" => d.icv.allocator = super::allocators::parse_env(v).unwrap_or(d.icv.allocator),
            b"OMP_AFFINITY_FORMAT" | b"OMP_DISPLAY_AFFINITY" => super::affinity::init_env(k, v, parse_bool(v)),
            b"OMP_DISPLAY_ENV" => {
                let v = v.trim_ascii();
                shown.display =
                    if v.eq_ignore_ascii_case(b"verbose") { 2 } else { parse_bool(v).unwrap_or(false) as u8 };
            }
            b"OMP_TARGET_OFFLOAD" => {
                let v = v.trim_ascii();
                shown.offload = if v.eq_ignore_ascii_case(b"disabled") {
                    "DISABLED"
                } else if v.eq_ignore_ascii_case(b"mandatory") {
                    OFFLOAD_MANDATORY.store(true, Ordering::Relaxed);
                    "MANDATORY"
                } else {
                    "DEFAULT"
                };
            }
            b"GOMP_SPINCOUNT" => {
                spin_count =
                    if v.trim_ascii().eq_ignore_ascii_case(b"infinity") { Some(u64::MAX) } else { parse_count(v) };
            }
            b"OMP_PROC_BIND" => {
                let first = v.split(|&b| b == b',').next().unwrap_or(b"");
                let first = first.trim_ascii().to_ascii_lowercase();
                let kind = |name: &[u8]| match name.trim_ascii().to_ascii_lowercase().as_slice() {
                    b"false" => Some(places::BIND_FALSE),
                    b"true" => Some(places::BIND_TRUE),
                    b"master" | b"primary" => Some(places::BIND_PRIMARY),
                    b"close" => Some(places::BIND_CLOSE),
                    b"spread" => Some(places::BIND_SPREAD),
                    _ => None,
                };
                d.icv.bind = kind(&first).unwrap_or(d.icv.bind);
                shown.bind_list = v.split(|&b| b == b',').map_while(kind).collect();
                bind_list_len = v.split(|&b| b == b',').count();
                bind_set = true;
            }
            b"OMP_PLACES" => places = Some(v),
            _ => {}
        }
    }
    // libgomp's default for max-active-levels: nesting only when asked for, or when the
    // thread-count or binding lists name more than one level (then as many levels as it
    // supports, as gcc 12's libgomp answers).
    d.icv.max_active_levels = match (max_active, nested) {
        (Some(m), _) => m,
        (None, Some(true)) => SUPPORTED_ACTIVE_LEVELS,
        (None, Some(false)) => 1,
        (None, None) if d.nthreads_list_len > 1 || bind_list_len > 1 => SUPPORTED_ACTIVE_LEVELS,
        _ => 1,
    };
    SPIN_ROUNDS.store(spin_count.unwrap_or(spin_rounds), Ordering::Relaxed);
    if let Some(n) = spin_count {
        throttled = n.min(1_000);
    }
    THROTTLED_SPIN_ROUNDS.store(throttled.min(spin_count.unwrap_or(spin_rounds)), Ordering::Relaxed);
    if let Some(n) = spin_count {
        shown.spin_count = n;
    }
    let display = shown.display;
    drop(shown);
    let places = places.filter(|v| {
        let ok = super::places::valid(v, num_procs());
        if !ok {
            crate::kprintln!("hrt: OpenMP runtime: OMP_PLACES is not a place list it can read; ignored");
        }
        ok
    });
    // A place list without OMP_PROC_BIND binds threads (libgomp: proc-bind-var true).
    if places.is_some() && !bind_set {
        d.icv.bind = places::BIND_TRUE;
    }
    if bind_set {
        PIN.store((d.icv.bind != 0) as u32, Ordering::Relaxed);
    }
    super::places::init(places, d.icv.bind != 0, num_procs());
    drop(d);
    if display != 0 {
        super::display_env::show(display == 2);
    }
}
