//! The `teams` construct on the host, as libgomp runs it: the initial thread runs the teams
//! one after another, each as the initial task of its team (so `omp_get_team_num` counts up and
//! a parallel region inside gets a team of its own each time). A task keeps its teams region's
//! number and size (`Ctx::team_num`, `num_teams`), and so do the threads of a parallel region
//! inside.

#![allow(non_snake_case)]

use core::sync::atomic::Ordering;

use super::icv::{NUM_TEAMS, TEAMS_THREAD_LIMIT};
use super::team::Outlined;
use super::thread;

/// How many teams a `teams` construct without `num_teams` makes on the host when
/// OMP_NUM_TEAMS is unset (libgomp's choice).
const DEFAULT_HOST_TEAMS: u32 = 3;

/// A thread_limit clause's value as thread-limit-var holds it (beyond INT_MAX: no limit,
/// UINT_MAX as in libgomp).
fn limit(v: u32) -> u32 {
    if v > i32::MAX as u32 {
        u32::MAX
    } else {
        v
    }
}

/// GOMP_teams_reg: a `teams` region outside `target` (gcc 11+).
pub extern "C" fn GOMP_teams_reg(f: Outlined, data: *mut u8, num_teams: u32, thread_limit: u32, _flags: u32) {
    let tl = if thread_limit == 0 { TEAMS_THREAD_LIMIT.load(Ordering::Relaxed) } else { thread_limit };
    let n = match (num_teams, NUM_TEAMS.load(Ordering::Relaxed)) {
        (0, 0) => DEFAULT_HOST_TEAMS,
        (0, env) => env,
        (n, _) => n,
    };
    let c = thread::ctx();
    let saved = (c.icv.thread_limit, c.num_teams, c.team_num);
    if tl != 0 {
        c.icv.thread_limit = limit(tl);
    }
    for i in 0..n {
        let c = thread::ctx();
        (c.num_teams, c.team_num) = (n, i);
        f(data);
    }
    let c = thread::ctx();
    (c.icv.thread_limit, c.num_teams, c.team_num) = saved;
}

/// GOMP_teams4: a `teams` region inside `target` (gcc 12), a loop in the compiler's code: the
/// first call (`first`) starts the first team, each later one the next, until it returns false.
pub extern "C" fn GOMP_teams4(num_teams_low: u32, _num_teams_high: u32, thread_limit: u32, first: bool) -> bool {
    let c = thread::ctx();
    if first {
        if thread_limit != 0 {
            c.icv.thread_limit = limit(thread_limit);
        }
        (c.num_teams, c.team_num) = (num_teams_low.max(1), 0);
        return true;
    }
    if c.team_num + 1 >= c.num_teams {
        return false;
    }
    c.team_num += 1;
    true
}

/// GOMP_teams: the gcc 4.9-10 `teams` inside `target`, one team on the host.
pub extern "C" fn GOMP_teams(_num_teams: u32, thread_limit: u32) {
    if thread_limit != 0 {
        thread::ctx().icv.thread_limit = limit(thread_limit);
    }
}

pub extern "C" fn omp_get_num_teams() -> i32 {
    thread::ctx().num_teams as i32
}
pub extern "C" fn omp_get_team_num() -> i32 {
    thread::ctx().team_num as i32
}
