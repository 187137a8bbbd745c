//! The `omp_*` API (OpenMP 5.1 routines a C program calls), on the current task's state.
//! Values match libgomp's where the specification leaves them to the implementation.

use core::sync::atomic::Ordering;

use super::icv::{
    self, SCHED_AUTO, SCHED_DYNAMIC, SCHED_GUIDED, SCHED_MONOTONIC, SCHED_STATIC, SUPPORTED_ACTIVE_LEVELS,
};
use super::lock::{self, NestLock};
use super::places;
use super::thread::{self, Ctx};

pub extern "C" fn omp_set_num_threads(n: i32) {
    thread::ctx().icv.nthreads = n.max(1) as u32;
}
pub extern "C" fn omp_get_num_threads() -> i32 {
    thread::ctx().nthreads as i32
}
pub extern "C" fn omp_get_max_threads() -> i32 {
    thread::ctx().icv.nthreads as i32
}
pub extern "C" fn omp_get_thread_num() -> i32 {
    thread::ctx().id as i32
}
pub extern "C" fn omp_get_num_procs() -> i32 {
    icv::num_procs() as i32
}
pub extern "C" fn omp_in_parallel() -> i32 {
    (thread::ctx().active_level > 0) as i32
}
pub extern "C" fn omp_set_dynamic(v: i32) {
    thread::ctx().icv.dynamic = v != 0;
}
pub extern "C" fn omp_get_dynamic() -> i32 {
    thread::ctx().icv.dynamic as i32
}
/// As libgomp 12: enabling nesting sets max-active-levels to the most supported, whatever it
/// was (0 included); disabling it lowers a larger one to 1.
pub extern "C" fn omp_set_nested(v: i32) {
    let icv = &mut thread::ctx().icv;
    if v != 0 {
        icv.max_active_levels = SUPPORTED_ACTIVE_LEVELS;
    } else if icv.max_active_levels > 1 {
        icv.max_active_levels = 1;
    }
}
pub extern "C" fn omp_get_nested() -> i32 {
    let c = thread::ctx();
    (c.icv.max_active_levels > 1 && c.icv.max_active_levels > c.active_level) as i32
}
pub extern "C" fn omp_set_schedule(kind: u32, chunk: i32) {
    let icv = &mut thread::ctx().icv;
    match kind & !SCHED_MONOTONIC {
        SCHED_STATIC => icv.run_chunk = chunk.max(0) as u32,
        SCHED_DYNAMIC | SCHED_GUIDED => icv.run_chunk = chunk.max(1) as u32,
        SCHED_AUTO => {}
        _ => return,
    }
    icv.run_sched = kind;
}
/// # Safety
/// The program's two out pointers.
pub unsafe extern "C" fn omp_get_schedule(kind: *mut u32, chunk: *mut i32) {
    let icv = &thread::ctx().icv;
    // SAFETY: the caller's out arguments.
    unsafe {
        *kind = icv.run_sched;
        *chunk = icv.run_chunk as i32;
    }
}
pub extern "C" fn omp_get_thread_limit() -> i32 {
    thread::ctx().icv.thread_limit.min(i32::MAX as u32) as i32
}
pub extern "C" fn omp_set_max_active_levels(n: i32) {
    if n >= 0 {
        thread::ctx().icv.max_active_levels = (n as u32).min(SUPPORTED_ACTIVE_LEVELS);
    }
}
pub extern "C" fn omp_get_max_active_levels() -> i32 {
    thread::ctx().icv.max_active_levels as i32
}
pub extern "C" fn omp_get_supported_active_levels() -> i32 {
    SUPPORTED_ACTIVE_LEVELS as i32
}
pub extern "C" fn omp_get_level() -> i32 {
    thread::ctx().level as i32
}
pub extern "C" fn omp_get_active_level() -> i32 {
    thread::ctx().active_level as i32
}

/// The task at nesting `level` on the current task's ancestry.
fn ancestor(level: i32) -> Option<&'static Ctx> {
    let mut c: *const Ctx = thread::ctx();
    if level < 0 {
        return None;
    }
    // SAFETY: the ancestry of a running task is alive (each is on a stack below).
    unsafe {
        while !c.is_null() && (*c).level as i32 > level {
            c = (*c).parent;
        }
        (!c.is_null() && (*c).level as i32 == level).then(|| &*c)
    }
}
pub extern "C" fn omp_get_ancestor_thread_num(level: i32) -> i32 {
    ancestor(level).map_or(-1, |c| c.id as i32)
}
pub extern "C" fn omp_get_team_size(level: i32) -> i32 {
    ancestor(level).map_or(-1, |c| c.nthreads as i32)
}
pub extern "C" fn omp_in_final() -> i32 {
    thread::ctx().in_final as i32
}
pub extern "C" fn omp_get_cancellation() -> i32 {
    icv::cancellation() as i32
}
pub extern "C" fn omp_get_proc_bind() -> i32 {
    thread::ctx().icv.bind as i32
}
pub extern "C" fn omp_get_num_places() -> i32 {
    places::count() as i32
}
pub extern "C" fn omp_get_place_num_procs(place: i32) -> i32 {
    u32::try_from(place).map_or(0, |p| places::procs(p).len() as i32)
}
pub extern "C" fn omp_get_place_proc_ids(place: i32, ids: *mut i32) {
    for (i, cpu) in u32::try_from(place).map(places::procs).unwrap_or_default().into_iter().enumerate() {
        // SAFETY: the program's array of omp_get_place_num_procs(place) ints.
        unsafe { *ids.add(i) = cpu as i32 };
    }
}
pub extern "C" fn omp_get_place_num() -> i32 {
    let p = thread::ctx().place;
    if p == places::NONE {
        -1
    } else {
        p as i32
    }
}
pub extern "C" fn omp_get_partition_num_places() -> i32 {
    let c = thread::ctx();
    if c.place == places::NONE {
        0
    } else {
        c.part.len as i32
    }
}
pub extern "C" fn omp_get_partition_place_nums(ids: *mut i32) {
    let c = thread::ctx();
    if c.place == places::NONE {
        return;
    }
    let total = places::count().max(1);
    for i in 0..c.part.len {
        // SAFETY: the program's array of omp_get_partition_num_places() ints.
        unsafe { *ids.add(i as usize) = ((c.part.first + i) % total) as i32 };
    }
}
pub extern "C" fn omp_get_max_task_priority() -> i32 {
    icv::max_task_priority() as i32
}
/// `omp_pause_resource(kind, device)`: the host is the only device (`omp_get_initial_device()`).
/// Both kinds end the idle worker threads (as libgomp: threadprivate data of threads other than
/// the initial one starts anew in the next region); as libgomp, a pause from inside a parallel
/// region fails.
pub extern "C" fn omp_pause_resource(kind: i32, device: i32) -> i32 {
    if device != super::device::omp_get_initial_device() {
        return -1;
    }
    omp_pause_resource_all(kind)
}
pub extern "C" fn omp_pause_resource_all(_kind: i32) -> i32 {
    if omp_get_level() > 0 {
        return -1;
    }
    super::team::end_idle_workers();
    0
}
// As libgomp, the setters take 0 (the ICVs' "unset") and ignore negative values.
pub extern "C" fn omp_set_num_teams(n: i32) {
    if n >= 0 {
        icv::NUM_TEAMS.store(n as u32, Ordering::Relaxed);
    }
}
pub extern "C" fn omp_get_max_teams() -> i32 {
    icv::NUM_TEAMS.load(Ordering::Relaxed) as i32
}
pub extern "C" fn omp_set_teams_thread_limit(n: i32) {
    if n >= 0 {
        icv::TEAMS_THREAD_LIMIT.store(n as u32, Ordering::Relaxed);
    }
}
pub extern "C" fn omp_get_teams_thread_limit() -> i32 {
    icv::TEAMS_THREAD_LIMIT.load(Ordering::Relaxed) as i32
}

/// CLOCK_MONOTONIC in nanoseconds, for omp_get_wtime (converted to seconds in `gomp::wtime`),
/// as libgomp reads it: the host's clock, so that a program's times agree with another
/// process's and with its own `clock_gettime` (IQ-TREE keeps them in its checkpoints); the
/// kernel's time since boot made them small numbers of their own.
pub extern "C" fn wtime_ns() -> u64 {
    crate::linux::calls::time::monotonic_ns()
}

// Locks. The program's omp_lock_t is libgomp's (one int), omp_nest_lock_t libgomp's 16 bytes.

/// # Safety
/// `l` is the program's omp_lock_t.
pub unsafe extern "C" fn omp_init_lock(l: *mut u8) {
    // SAFETY: the caller's lock.
    unsafe { lock::word_at(l) }.store(0, Ordering::Relaxed);
}
/// # Safety
/// As omp_init_lock.
pub unsafe extern "C" fn omp_init_lock_with_hint(l: *mut u8, _hint: i32) {
    // SAFETY: forwarded contract.
    unsafe { omp_init_lock(l) }
}
pub extern "C" fn omp_destroy_lock(_: *mut u8) {}
crate::arch::word_lock::lock_word_entry!(
    /// Frameless (`arch::word_lock`): a program may call it in its innermost loop.
    ///
    /// # Safety
    /// As omp_init_lock.
    pub fn omp_set_lock(word_at), contended = lock::lock_contended_at
);
crate::arch::word_lock::unlock_word_entry!(
    /// # Safety
    /// As omp_init_lock.
    pub fn omp_unset_lock(word_at), wake = lock::wake_one_at
);
/// # Safety
/// As omp_init_lock.
pub unsafe extern "C" fn omp_test_lock(l: *mut u8) -> i32 {
    // SAFETY: the caller's lock.
    lock::try_lock(unsafe { lock::word_at(l) }) as i32
}
/// # Safety
/// `l` is the program's omp_nest_lock_t.
pub unsafe extern "C" fn omp_init_nest_lock(l: *mut NestLock) {
    // SAFETY: the caller's lock.
    unsafe {
        (*l).lock.store(0, Ordering::Relaxed);
        (*l).count = 0;
        (*l).owner = core::ptr::null_mut();
    }
}
/// # Safety
/// As omp_init_nest_lock.
pub unsafe extern "C" fn omp_init_nest_lock_with_hint(l: *mut NestLock, _hint: i32) {
    // SAFETY: forwarded contract.
    unsafe { omp_init_nest_lock(l) }
}
pub extern "C" fn omp_destroy_nest_lock(_: *mut NestLock) {}
/// # Safety
/// As omp_init_nest_lock.
pub unsafe extern "C" fn omp_set_nest_lock(l: *mut NestLock) {
    let me = lock::owner();
    // SAFETY: the caller's lock; `owner` and `count` change only while it is held.
    unsafe {
        if (*l).owner != me {
            lock::lock(&(*l).lock);
            (*l).owner = me;
        }
        (*l).count += 1;
    }
}
/// # Safety
/// As omp_init_nest_lock.
pub unsafe extern "C" fn omp_unset_nest_lock(l: *mut NestLock) {
    // SAFETY: as in omp_set_nest_lock; the caller holds it.
    unsafe {
        (*l).count -= 1;
        if (*l).count == 0 {
            (*l).owner = core::ptr::null_mut();
            lock::unlock(&(*l).lock);
        }
    }
}
/// # Safety
/// As omp_init_nest_lock.
pub unsafe extern "C" fn omp_test_nest_lock(l: *mut NestLock) -> i32 {
    let me = lock::owner();
    // SAFETY: as in omp_set_nest_lock.
    unsafe {
        if (*l).owner == me {
            (*l).count += 1;
            return (*l).count;
        }
        if lock::try_lock(&(*l).lock) {
            (*l).owner = me;
            (*l).count = 1;
            return 1;
        }
    }
    0
}
