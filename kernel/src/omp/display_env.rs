//! OMP_DISPLAY_ENV and `omp_display_env`: the OpenMP version and the initial ICVs as
//! environment settings, on stderr, in libgomp's (gcc 12) layout and spelling, so a program
//! (or a person) comparing them sees the same lines.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::Ordering;

use super::icv::{self, SCHED_AUTO, SCHED_DYNAMIC, SCHED_GUIDED, SCHED_MONOTONIC, SCHED_STATIC};
use super::places;

fn flag(b: bool) -> &'static str {
    if b {
        "TRUE"
    } else {
        "FALSE"
    }
}

fn bind_name(b: u32) -> &'static str {
    match b {
        places::BIND_TRUE => "TRUE",
        places::BIND_PRIMARY => "MASTER",
        places::BIND_CLOSE => "CLOSE",
        places::BIND_SPREAD => "SPREAD",
        _ => "FALSE",
    }
}

fn join(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(",")
}

fn schedule(kind: u32, chunk: u32) -> String {
    let base = kind & !SCHED_MONOTONIC;
    let name = match base {
        SCHED_STATIC => "STATIC",
        SCHED_DYNAMIC => "DYNAMIC",
        SCHED_GUIDED => "GUIDED",
        SCHED_AUTO => "AUTO",
        _ => "DYNAMIC",
    };
    // libgomp names the modifier that is not the kind's default: static is monotonic unless
    // OMP_SCHEDULE said `nonmonotonic:`, the others nonmonotonic unless it said `monotonic:`.
    let modifier = match (kind & SCHED_MONOTONIC != 0, base == SCHED_STATIC) {
        (true, false) => "MONOTONIC:",
        (false, true) => "NONMONOTONIC:",
        _ => "",
    };
    let default_chunk = if base == SCHED_STATIC { 0 } else { 1 };
    let mut s = alloc::format!("{modifier}{name}");
    if chunk != default_chunk && base != SCHED_AUTO {
        let _ = write!(s, ",{}", chunk as i32);
    }
    s
}

/// A place as libgomp writes it: runs of consecutive processors as `first:count`.
fn place(cpus: &mut [u32]) -> String {
    cpus.sort_unstable();
    let parts: Vec<String> = places::runs(cpus)
        .into_iter()
        .map(|(first, n)| if n > 1 { alloc::format!("{first}:{n}") } else { alloc::format!("{first}") })
        .collect();
    alloc::format!("{{{}}}", parts.join(","))
}

/// The block libgomp prints; `verbose` adds its GOMP_* settings.
pub fn show(verbose: bool) {
    let (icv0, list) = icv::defaults();
    let shown = icv::SHOWN.lock();
    let threads = if list.is_empty() {
        alloc::format!("{}", icv0.nthreads)
    } else {
        join(list.iter().map(|n| alloc::format!("{n}")))
    };
    let bind = if shown.bind_list.is_empty() {
        bind_name(icv0.bind).into()
    } else {
        join(shown.bind_list.iter().map(|&b| bind_name(b).into()))
    };
    let places = join((0..places::count()).map(|p| place(&mut places::procs(p))));
    let limit = icv0.thread_limit;
    let stack = icv::stack_size();
    let rows: [(&str, String); 20] = [
        ("_OPENMP", "201511".into()),
        ("OMP_DYNAMIC", flag(icv0.dynamic).into()),
        ("OMP_NESTED", flag(icv0.max_active_levels > 1).into()),
        ("OMP_NUM_THREADS", threads),
        ("OMP_SCHEDULE", schedule(icv0.run_sched, icv0.run_chunk)),
        ("OMP_PROC_BIND", bind),
        ("OMP_PLACES", places),
        ("OMP_STACKSIZE", alloc::format!("{stack}")),
        ("OMP_WAIT_POLICY", (if shown.active_wait { "ACTIVE" } else { "PASSIVE" }).into()),
        ("OMP_THREAD_LIMIT", alloc::format!("{limit}")),
        ("OMP_MAX_ACTIVE_LEVELS", alloc::format!("{}", icv0.max_active_levels)),
        ("OMP_NUM_TEAMS", alloc::format!("{}", icv::NUM_TEAMS.load(Ordering::Relaxed))),
        ("OMP_TEAMS_THREAD_LIMIT", alloc::format!("{}", icv::TEAMS_THREAD_LIMIT.load(Ordering::Relaxed))),
        ("OMP_CANCELLATION", flag(icv::cancellation()).into()),
        ("OMP_DEFAULT_DEVICE", alloc::format!("{}", icv0.default_device)),
        ("OMP_MAX_TASK_PRIORITY", alloc::format!("{}", icv::max_task_priority())),
        ("OMP_DISPLAY_AFFINITY", flag(super::affinity::display_on()).into()),
        ("OMP_AFFINITY_FORMAT", String::from_utf8_lossy(&super::affinity::format()).into_owned()),
        ("OMP_ALLOCATOR", super::allocators::name(icv0.allocator).into()),
        ("OMP_TARGET_OFFLOAD", shown.offload.into()),
    ];
    let mut out = String::from("\nOPENMP DISPLAY ENVIRONMENT BEGIN\n");
    for (name, value) in rows.iter() {
        let _ = writeln!(out, "  {name} = '{value}'");
    }
    if verbose {
        let _ = writeln!(out, "  GOMP_CPU_AFFINITY = ''");
        let _ = writeln!(out, "  GOMP_STACKSIZE = '{stack}'");
        let _ = writeln!(out, "  GOMP_SPINCOUNT = '{}'", shown.spin_count);
    }
    out.push_str("OPENMP DISPLAY ENVIRONMENT END\n");
    drop(shown);
    super::output::stderr(out.as_bytes());
}

pub extern "C" fn omp_display_env(verbose: i32) {
    show(verbose != 0);
}
