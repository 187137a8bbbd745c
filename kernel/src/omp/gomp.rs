//! libgomp's entry points (the ABI gcc 12 emits for OpenMP C code), each a thin `extern "C"`
//! function over the runtime, and the table the loader's overrides redirect the program's
//! functions to (`entry_point`, by the names of `hrt_abi::overrides::OMP`).

#![allow(non_snake_case)]

use alloc::boxed::Box;
use core::sync::atomic::AtomicU32;

use super::affinity::{omp_capture_affinity, omp_display_affinity, omp_get_affinity_format, omp_set_affinity_format};
use super::allocators::*;
use super::api::*;
use super::cancel;
use super::detach::omp_fulfill_event;
use super::device::*;
use super::display_env::omp_display_env;
use super::icv::{SCHED_DYNAMIC, SCHED_GUIDED, SCHED_STATIC};
use super::lock;
use super::reductions;
use super::target::*;
use super::tasks::{self, CopyFn, TaskFn};
use super::team::{self, Outlined};
use super::teams::*;
use super::thread;
use super::work::{self, Loop, NONMONOTONIC};

use crate::arch::word_lock::{lock_word_entry, unlock_word_entry};

static CRITICAL: lock::Padded = lock::Padded(AtomicU32::new(0));
static ATOMIC: lock::Padded = lock::Padded(AtomicU32::new(0));

/// Frees the unnamed critical section's and the atomic fallback's locks (a program that
/// exec'd: a thread of the old image may have ended holding one).
pub fn reset_locks() {
    CRITICAL.0.store(0, core::sync::atomic::Ordering::Release);
    ATOMIC.0.store(0, core::sync::atomic::Ordering::Release);
}

// omp_get_wtime and omp_get_wtick return a double in xmm0, which the kernel's soft-float
// target cannot express: the conversion is two SSE instructions here.
core::arch::global_asm!(
    ".global hrt_omp_get_wtime",
    "hrt_omp_get_wtime:",
    "push rbp",
    "mov rbp, rsp",
    "and rsp, -16",
    "call {ns}",
    "mov rsp, rbp",
    "pop rbp",
    "cvtsi2sd xmm0, rax",
    "divsd xmm0, qword ptr [rip + hrt_omp_billion]",
    "ret",
    ".global hrt_omp_get_wtick",
    "hrt_omp_get_wtick:",
    "movsd xmm0, qword ptr [rip + hrt_omp_nano]",
    "ret",
    ".balign 8",
    "hrt_omp_billion: .quad 0x41cdcd6500000000",
    "hrt_omp_nano: .quad 0x3e112e0be826d695",
    ns = sym wtime_ns,
);

extern "C" {
    pub(super) fn hrt_omp_get_wtime();
    pub(super) fn hrt_omp_get_wtick();
}

// Parallel regions.

extern "C" fn GOMP_parallel(f: Outlined, data: *mut u8, num_threads: u32, flags: u32) {
    let t = team::fork(f, data, num_threads, flags, |_, _| false);
    team::run_master_and_join(t);
}

extern "C" fn GOMP_parallel_start(f: Outlined, data: *mut u8, num_threads: u32) {
    enter_started(team::fork(f, data, num_threads, 0, |_, _| false));
}

/// The master's part of a region started by the old (GOMP_1.0) `_start` entry points: it runs
/// it itself, between that call and GOMP_parallel_end; its task for the region lives on the
/// heap until then.
fn enter_started(t: *mut team::Team) {
    let st = thread::this();
    // SAFETY: just made by fork.
    let me = Box::into_raw(Box::new(team::member(unsafe { &*t }, 0)));
    st.set_task(me);
}

extern "C" fn GOMP_parallel_end() {
    let st = thread::this();
    let me = st.task();
    // SAFETY: set by GOMP_parallel_start, which this call ends.
    let (t, outer) = unsafe { ((*me).team as *mut team::Team, (*(*me).team).parent as *mut thread::Ctx) };
    team::join(t, outer);
    // SAFETY: made by GOMP_parallel_start with Box::into_raw.
    drop(unsafe { Box::from_raw(me) });
}

fn parallel_loop(f: Outlined, data: *mut u8, num_threads: u32, flags: u32, l: Loop) {
    let t = team::fork(f, data, num_threads, flags, |team, outer| {
        work::prepare(team, outer, &l);
        true
    });
    team::run_master_and_join(t);
}

fn signed_loop(kind: u32, start: i64, end: i64, incr: i64, chunk: i64, ordered: bool) -> Loop {
    Loop {
        kind,
        chunk: chunk.max(0) as u64,
        start: start as u64,
        end: end as u64,
        incr: incr as u64,
        signed: true,
        up: true,
        ordered,
    }
}

fn unsigned_loop(kind: u32, up: bool, start: u64, end: u64, incr: u64, chunk: u64, ordered: bool) -> Loop {
    Loop { kind, chunk, start, end, incr, signed: false, up, ordered }
}

extern "C" fn GOMP_parallel_loop_static(f: Outlined, d: *mut u8, n: u32, s: i64, e: i64, i: i64, c: i64, fl: u32) {
    parallel_loop(f, d, n, fl, signed_loop(SCHED_STATIC, s, e, i, c, false));
}
extern "C" fn GOMP_parallel_loop_dynamic(f: Outlined, d: *mut u8, n: u32, s: i64, e: i64, i: i64, c: i64, fl: u32) {
    parallel_loop(f, d, n, fl, signed_loop(SCHED_DYNAMIC, s, e, i, c, false));
}
extern "C" fn GOMP_parallel_loop_guided(f: Outlined, d: *mut u8, n: u32, s: i64, e: i64, i: i64, c: i64, fl: u32) {
    parallel_loop(f, d, n, fl, signed_loop(SCHED_GUIDED, s, e, i, c, false));
}
extern "C" fn GOMP_parallel_loop_runtime(f: Outlined, d: *mut u8, n: u32, s: i64, e: i64, i: i64, fl: u32) {
    parallel_loop(f, d, n, fl, signed_loop(0, s, e, i, 0, false));
}
// The nonmonotonic forms (`schedule(dynamic)` and `schedule(runtime)` without a modifier
// since OpenMP 5.0): chunks may go in any order (`steal`).
#[rustfmt::skip]
extern "C" fn GOMP_parallel_loop_nonmonotonic_dynamic(f: Outlined, d: *mut u8, n: u32, s: i64, e: i64, i: i64, c: i64, fl: u32) {
    parallel_loop(f, d, n, fl, signed_loop(NONMONOTONIC | SCHED_DYNAMIC, s, e, i, c, false));
}
extern "C" fn GOMP_parallel_loop_nonmonotonic_runtime(
    f: Outlined,
    d: *mut u8,
    n: u32,
    s: i64,
    e: i64,
    i: i64,
    fl: u32,
) {
    parallel_loop(f, d, n, fl, signed_loop(NONMONOTONIC, s, e, i, 0, false));
}

/// A combined parallel construct of the old ABI (gcc before 4.9): starts the region with its
/// first work share described; the master then runs its part and calls GOMP_parallel_end.
fn parallel_start_with(f: Outlined, data: *mut u8, num_threads: u32, l: Loop) {
    enter_started(team::fork(f, data, num_threads, 0, |team, outer| {
        work::prepare(team, outer, &l);
        true
    }));
}
extern "C" fn GOMP_parallel_loop_static_start(f: Outlined, d: *mut u8, n: u32, s: i64, e: i64, i: i64, c: i64) {
    parallel_start_with(f, d, n, signed_loop(SCHED_STATIC, s, e, i, c, false));
}
extern "C" fn GOMP_parallel_loop_dynamic_start(f: Outlined, d: *mut u8, n: u32, s: i64, e: i64, i: i64, c: i64) {
    parallel_start_with(f, d, n, signed_loop(SCHED_DYNAMIC, s, e, i, c, false));
}
extern "C" fn GOMP_parallel_loop_guided_start(f: Outlined, d: *mut u8, n: u32, s: i64, e: i64, i: i64, c: i64) {
    parallel_start_with(f, d, n, signed_loop(SCHED_GUIDED, s, e, i, c, false));
}
extern "C" fn GOMP_parallel_loop_runtime_start(f: Outlined, d: *mut u8, n: u32, s: i64, e: i64, i: i64) {
    parallel_start_with(f, d, n, signed_loop(0, s, e, i, 0, false));
}
extern "C" fn GOMP_parallel_sections_start(f: Outlined, data: *mut u8, n: u32, count: u32) {
    parallel_start_with(f, data, n, work::sections_loop(count));
}

// Barriers and cancellation (`cancel`): the `_cancel` forms are cancellable barriers, which
// gcc emits in regions that contain a `cancel`; they return true when the region is cancelled.

extern "C" fn GOMP_barrier() {
    let c = thread::ctx();
    if !c.team.is_null() {
        // SAFETY: teams are never freed.
        unsafe { (*c.team).barrier_wait() };
    }
}
extern "C" fn GOMP_barrier_cancel() -> bool {
    let c = thread::ctx();
    // SAFETY: teams are never freed.
    !c.team.is_null() && unsafe { (*c.team).barrier_wait_cancel() }
}
extern "C" fn GOMP_cancel(which: i32, do_cancel: bool) -> bool {
    cancel::cancel(which, do_cancel)
}
extern "C" fn GOMP_cancellation_point(which: i32) -> bool {
    cancel::cancellation_point(which)
}

// Mutual exclusion.

// Frameless (`arch::word_lock`): the program calls these once per construct.
lock_word_entry!(fn GOMP_critical_start, word = CRITICAL, contended = lock::lock_contended_at);
unlock_word_entry!(fn GOMP_critical_end, word = CRITICAL, wake = lock::wake_one_at);
// A named critical's lock word is the first half of the pointer-sized variable gcc made for
// the name (libgomp does the same).
lock_word_entry!(fn GOMP_critical_name_start(word_at), contended = lock::lock_contended_at);
unlock_word_entry!(fn GOMP_critical_name_end(word_at), wake = lock::wake_one_at);
lock_word_entry!(fn GOMP_atomic_start, word = ATOMIC, contended = lock::lock_contended_at);
unlock_word_entry!(fn GOMP_atomic_end, word = ATOMIC, wake = lock::wake_one_at);

// Single and ordered.

extern "C" fn GOMP_single_start() -> bool {
    work::single_start()
}
extern "C" fn GOMP_single_copy_start() -> *mut u8 {
    work::single_copy_start()
}
extern "C" fn GOMP_single_copy_end(data: *mut u8) {
    work::single_copy_end(data)
}
extern "C" fn GOMP_ordered_start() {
    work::ordered_start()
}
extern "C" fn GOMP_ordered_end() {}

// Loops over long.

fn start_signed(l: Loop, istart: *mut i64, iend: *mut i64) -> bool {
    work::start(&l, istart as *mut u64, iend as *mut u64, core::ptr::null_mut(), core::ptr::null_mut())
}

/// The `long` loop entry points with a chunk argument, and those of `schedule(runtime)`.
macro_rules! signed_starts {
    ($($name:ident: $kind:expr, $ordered:expr;)*) => {$(
        extern "C" fn $name(s: i64, e: i64, i: i64, c: i64, is: *mut i64, ie: *mut i64) -> bool {
            start_signed(signed_loop($kind, s, e, i, c, $ordered), is, ie)
        }
    )*};
}
macro_rules! signed_runtime_starts {
    ($($name:ident: $kind:expr, $ordered:expr;)*) => {$(
        extern "C" fn $name(s: i64, e: i64, i: i64, is: *mut i64, ie: *mut i64) -> bool {
            start_signed(signed_loop($kind, s, e, i, 0, $ordered), is, ie)
        }
    )*};
}
signed_starts! {
    GOMP_loop_static_start: SCHED_STATIC, false;
    GOMP_loop_dynamic_start: SCHED_DYNAMIC, false;
    GOMP_loop_nonmonotonic_dynamic_start: NONMONOTONIC | SCHED_DYNAMIC, false;
    GOMP_loop_guided_start: SCHED_GUIDED, false;
    GOMP_loop_ordered_static_start: SCHED_STATIC, true;
    GOMP_loop_ordered_dynamic_start: SCHED_DYNAMIC, true;
    GOMP_loop_ordered_guided_start: SCHED_GUIDED, true;
}
signed_runtime_starts! {
    GOMP_loop_runtime_start: 0, false;
    GOMP_loop_nonmonotonic_runtime_start: NONMONOTONIC, false;
    GOMP_loop_ordered_runtime_start: 0, true;
}

/// The schedule argument of GOMP_loop_start (libgomp's GFS_*) as a `Loop` kind. gcc 12
/// passes GFS_DYNAMIC (2) for `schedule(dynamic)` without a modifier (nonmonotonic since
/// OpenMP 5.0), GFS_RUNTIME (0) for `runtime` without one, GFS_AUTO (4) for
/// `nonmonotonic:runtime`, and sets bit 31 for `monotonic:` (`auto` and `static` come as
/// monotonic static).
fn sched_kind(sched: i64) -> u32 {
    let sched = sched as u64 as u32;
    match sched {
        0 | 4 => NONMONOTONIC,
        SCHED_DYNAMIC => NONMONOTONIC | SCHED_DYNAMIC,
        _ => sched,
    }
}

/// GOMP_loop_start and GOMP_loop_ordered_start (gcc 9+): the schedule is an argument.
macro_rules! generic_signed_starts {
    ($($name:ident: $ordered:expr;)*) => {$(
        #[allow(clippy::too_many_arguments)]
        extern "C" fn $name(s: i64, e: i64, i: i64, sched: i64, c: i64, is: *mut i64, ie: *mut i64, red: *mut u8, mem: *mut *mut u8) -> bool {
            work::start(&signed_loop(sched_kind(sched), s, e, i, c, $ordered), is as *mut u64, ie as *mut u64, mem, red as *mut usize)
        }
    )*};
}
generic_signed_starts! {
    GOMP_loop_start: false;
    GOMP_loop_ordered_start: true;
}
/// Every GOMP_loop_*_next (`entry_point`): frameless, see `work::loop_next_entry`.
use work::loop_next_entry as GOMP_loop_next;
extern "C" fn GOMP_loop_end() {
    work::end(true)
}
extern "C" fn GOMP_loop_end_nowait() {
    work::end(false)
}
extern "C" fn GOMP_loop_end_cancel() -> bool {
    work::end_cancel()
}

// Loops over unsigned long long.

/// The `unsigned long long` loop entry points with a chunk argument, and the runtime ones.
macro_rules! unsigned_starts {
    ($($name:ident: $kind:expr, $ordered:expr;)*) => {$(
        extern "C" fn $name(up: bool, s: u64, e: u64, i: u64, c: u64, is: *mut u64, ie: *mut u64) -> bool {
            work::start(&unsigned_loop($kind, up, s, e, i, c, $ordered), is, ie, core::ptr::null_mut(), core::ptr::null_mut())
        }
    )*};
}
macro_rules! unsigned_runtime_starts {
    ($($name:ident: $kind:expr, $ordered:expr;)*) => {$(
        extern "C" fn $name(up: bool, s: u64, e: u64, i: u64, is: *mut u64, ie: *mut u64) -> bool {
            work::start(&unsigned_loop($kind, up, s, e, i, 0, $ordered), is, ie, core::ptr::null_mut(), core::ptr::null_mut())
        }
    )*};
}
unsigned_starts! {
    GOMP_loop_ull_static_start: SCHED_STATIC, false;
    GOMP_loop_ull_dynamic_start: SCHED_DYNAMIC, false;
    GOMP_loop_ull_nonmonotonic_dynamic_start: NONMONOTONIC | SCHED_DYNAMIC, false;
    GOMP_loop_ull_guided_start: SCHED_GUIDED, false;
    GOMP_loop_ull_ordered_static_start: SCHED_STATIC, true;
    GOMP_loop_ull_ordered_dynamic_start: SCHED_DYNAMIC, true;
    GOMP_loop_ull_ordered_guided_start: SCHED_GUIDED, true;
}
unsigned_runtime_starts! {
    GOMP_loop_ull_runtime_start: 0, false;
    GOMP_loop_ull_nonmonotonic_runtime_start: NONMONOTONIC, false;
    GOMP_loop_ull_ordered_runtime_start: 0, true;
}

/// GOMP_loop_ull_start and GOMP_loop_ull_ordered_start.
macro_rules! generic_unsigned_starts {
    ($($name:ident: $ordered:expr;)*) => {$(
        #[allow(clippy::too_many_arguments)]
        extern "C" fn $name(up: bool, s: u64, e: u64, i: u64, sched: i64, c: u64, is: *mut u64, ie: *mut u64, red: *mut u8, mem: *mut *mut u8) -> bool {
            work::start(&unsigned_loop(sched_kind(sched), up, s, e, i, c, $ordered), is, ie, mem, red as *mut usize)
        }
    )*};
}
generic_unsigned_starts! {
    GOMP_loop_ull_start: false;
    GOMP_loop_ull_ordered_start: true;
}

// Doacross loops: a loop over 0..counts[0] with step 1, plus the nest's progress.

/// The nest's iteration counts (`ncounts` of them at `counts`).
fn doacross_counts<'a>(ncounts: u32, counts: *const u64) -> &'a [u64] {
    if ncounts == 0 {
        super::team::fatal("a doacross loop nest of no loops");
    }
    // SAFETY: gcc's array of `ncounts` iteration counts.
    unsafe { core::slice::from_raw_parts(counts, ncounts as usize) }
}

#[allow(clippy::too_many_arguments)]
fn doacross_start(
    kind: u32,
    ncounts: u32,
    counts: *const u64,
    chunk: u64,
    is: *mut u64,
    ie: *mut u64,
    red: *mut u8,
    mem: *mut *mut u8,
) -> bool {
    let n = doacross_counts(ncounts, counts);
    let l = unsigned_loop(kind, true, 0, n[0], 1, chunk, false);
    work::start_doacross(&l, n, is, ie, mem, red as *mut usize)
}

/// The doacross start entry points with a chunk argument, and the runtime ones (the
/// `unsigned long long` ones are aliases: counts are never negative, so the bits are the same).
macro_rules! doacross_starts {
    ($($name:ident: $kind:expr;)*) => {$(
        extern "C" fn $name(ncounts: u32, counts: *const u64, c: u64, is: *mut u64, ie: *mut u64) -> bool {
            doacross_start($kind, ncounts, counts, c, is, ie, core::ptr::null_mut(), core::ptr::null_mut())
        }
    )*};
}
macro_rules! doacross_runtime_starts {
    ($($name:ident;)*) => {$(
        extern "C" fn $name(ncounts: u32, counts: *const u64, is: *mut u64, ie: *mut u64) -> bool {
            doacross_start(0, ncounts, counts, 0, is, ie, core::ptr::null_mut(), core::ptr::null_mut())
        }
    )*};
}
macro_rules! doacross_generic_starts {
    ($($name:ident;)*) => {$(
        #[allow(clippy::too_many_arguments)]
        extern "C" fn $name(ncounts: u32, counts: *const u64, sched: i64, c: u64, is: *mut u64, ie: *mut u64, red: *mut u8, mem: *mut *mut u8) -> bool {
            doacross_start(sched_kind(sched), ncounts, counts, c, is, ie, red, mem)
        }
    )*};
}
doacross_starts! {
    GOMP_loop_doacross_static_start: SCHED_STATIC;
    GOMP_loop_doacross_dynamic_start: SCHED_DYNAMIC;
    GOMP_loop_doacross_guided_start: SCHED_GUIDED;
}
doacross_runtime_starts! {
    GOMP_loop_doacross_runtime_start;
}
doacross_generic_starts! {
    GOMP_loop_doacross_start;
}

/// `depend(source)`: the current iteration vector (also GOMP_doacross_ull_post).
extern "C" fn GOMP_doacross_post(v: *const u64) {
    if let Some(d) = work::doacross() {
        // SAFETY: gcc's vector, one number per loop of the nest, and `post` reads no more.
        d.post(|i| unsafe { *v.add(i) });
    }
}

// `depend(sink: ...)` (also GOMP_doacross_ull_wait: the same bits): the vector, one number per
// loop of the nest, comes as variadic arguments, which the x86-64 ABI passes like fixed ones:
// the first six in registers, the rest on the stack above the return address. This stub
// stores the six registers in its frame and passes both places to `doacross_wait`.
core::arch::global_asm!(
    ".global hrt_GOMP_doacross_wait",
    "hrt_GOMP_doacross_wait:",
    "push rbp",
    "mov rbp, rsp",
    "sub rsp, 48",
    "mov [rsp], rdi",
    "mov [rsp + 8], rsi",
    "mov [rsp + 16], rdx",
    "mov [rsp + 24], rcx",
    "mov [rsp + 32], r8",
    "mov [rsp + 40], r9",
    "mov rdi, rsp",
    "lea rsi, [rbp + 16]",
    "call {wait}",
    "leave",
    "ret",
    wait = sym doacross_wait,
);

extern "C" {
    fn hrt_GOMP_doacross_wait();
}

/// The `depend(sink: ...)` vector: `regs` holds its first six numbers, `stack` the rest.
extern "C" fn doacross_wait(regs: *const u64, stack: *const u64) {
    if let Some(d) = work::doacross() {
        // SAFETY: the stub's six saved registers, then the caller's stack arguments: gcc passes
        // one number per loop of the nest, and `wait` reads no more.
        d.wait(|i| unsafe {
            if i < 6 {
                *regs.add(i)
            } else {
                *stack.add(i - 6)
            }
        });
    }
}

/// `scope` with task reductions (gcc 12): enters a work-sharing construct only to share the
/// reductions, and leaves it at once (gcc ends it with
/// GOMP_workshare_task_reduction_unregister, which never leaves a work share).
extern "C" fn GOMP_scope_start(red: *mut u8) {
    let nothing = unsigned_loop(SCHED_STATIC, true, 0, 0, 1, 0, false);
    work::start(&nothing, core::ptr::null_mut(), core::ptr::null_mut(), core::ptr::null_mut(), red as *mut usize);
    work::end(false);
}

// Sections.

extern "C" fn GOMP_sections_start(count: u32) -> u32 {
    work::sections_start(count, core::ptr::null_mut(), core::ptr::null_mut())
}
extern "C" fn GOMP_sections2_start(count: u32, red: *mut u8, mem: *mut *mut u8) -> u32 {
    work::sections_start(count, mem, red as *mut usize)
}
extern "C" fn GOMP_sections_next() -> u32 {
    work::sections_next()
}
extern "C" fn GOMP_sections_end_cancel() -> bool {
    work::end_cancel()
}
extern "C" fn GOMP_parallel_sections(f: Outlined, data: *mut u8, n: u32, count: u32, flags: u32) {
    parallel_loop(f, data, n, flags, work::sections_loop(count));
}

// Tasks.

#[allow(clippy::too_many_arguments)]
extern "C" fn GOMP_task(
    f: TaskFn,
    data: *mut u8,
    cpyfn: CopyFn,
    size: i64,
    align: i64,
    if_clause: bool,
    flags: u32,
    depend: *mut u8,
    priority: i32,
    detach: *mut u8,
) {
    if cancel::new_task_discarded() {
        return;
    }
    let detach = if flags & tasks::FLAG_DETACH != 0 { detach as *mut usize } else { core::ptr::null_mut() };
    if tasks::run_if_included(f, data, cpyfn, if_clause, flags, detach) {
        return;
    }
    let priority = tasks::priority(flags, priority);
    tasks::task(f, data, cpyfn, size, align, if_clause, flags, depend as *const usize, priority, detach);
}
extern "C" fn GOMP_taskwait_depend(depend: *mut u8) {
    tasks::taskwait_depend(depend as *const usize);
}
extern "C" fn GOMP_taskwait() {
    tasks::taskwait();
}
extern "C" fn GOMP_taskyield() {
    tasks::taskyield();
}
extern "C" fn GOMP_taskgroup_start() {
    tasks::taskgroup_start();
}
extern "C" fn GOMP_taskgroup_end() {
    tasks::taskgroup_end();
}

// Task reductions.

extern "C" fn GOMP_taskgroup_reduction_register(data: *mut usize) {
    reductions::taskgroup_register(data);
}
extern "C" fn GOMP_taskgroup_reduction_unregister(data: *mut usize) {
    reductions::unregister(data);
}
extern "C" fn GOMP_task_reduction_remap(cnt: usize, cntorig: usize, ptrs: *mut usize) {
    reductions::remap(cnt, cntorig, ptrs);
}
extern "C" fn GOMP_workshare_task_reduction_unregister(cancelled: bool) {
    reductions::workshare_end(cancelled);
}
extern "C" fn GOMP_parallel_reductions(f: Outlined, data: *mut u8, num_threads: u32, flags: u32) -> u32 {
    let t = team::fork(f, data, num_threads, flags, |team, _| {
        team.group = Some(reductions::parallel_group(data, team.nthreads));
        false
    });
    // SAFETY: just made by fork; the master owns it.
    let n = unsafe { (*t).nthreads };
    team::run_master_and_join(t);
    n
}
/// GOMP_taskloop (`long` bounds) and GOMP_taskloop_ull.
macro_rules! taskloops {
    ($($name:ident: $t:ty, $signed:expr;)*) => {$(
        #[allow(clippy::too_many_arguments)]
        extern "C" fn $name(f: TaskFn, data: *mut u8, cpyfn: CopyFn, size: i64, align: i64, flags: u32, num_tasks: u64, priority: i32, s: $t, e: $t, step: $t) {
            let priority = tasks::priority(flags, priority);
            tasks::taskloop(f, data, cpyfn, size, align, flags, num_tasks, priority, (s as u64, e as u64, step as u64), $signed);
        }
    )*};
}
taskloops! {
    GOMP_taskloop: i64, true;
    GOMP_taskloop_ull: u64, false;
}

/// The `error` directive at run time: its message, libgomp's line on stderr. `len` is the
/// message's length, or usize::MAX for a NUL-terminated one.
fn error_directive_line(severity: &[u8], msg: *const u8, len: usize) -> alloc::vec::Vec<u8> {
    let mut out = alloc::vec::Vec::from(&b"\nlibgomp: "[..]);
    out.extend_from_slice(severity);
    out.extend_from_slice(b"error directive encountered");
    if !msg.is_null() {
        out.extend_from_slice(b": ");
        // SAFETY: gcc's message: `len` bytes, or a NUL-terminated string.
        let text = unsafe {
            if len == usize::MAX {
                core::ffi::CStr::from_ptr(msg as *const core::ffi::c_char).to_bytes()
            } else {
                core::slice::from_raw_parts(msg, len)
            }
        };
        out.extend_from_slice(text);
    }
    out.push(b'\n');
    out
}

/// `error` with `severity(warning)`: the line, and the program goes on.
extern "C" fn GOMP_warning(msg: *const u8, len: usize) {
    super::output::stderr(&error_directive_line(b"", msg, len));
}

/// `error` with `severity(fatal)`: the line, then the program ends with status 1 through its C
/// library's `exit` (atexit handlers run and stdio is flushed, as after libgomp's), or, for a
/// program without one, at once.
extern "C" fn GOMP_error(msg: *const u8, len: usize) {
    super::output::stderr(&error_directive_line(b"fatal error: ", msg, len));
    super::exit_through_program(1)
}

/// The kernel's function for the libgomp entry point `name`.
pub fn entry_point(name: &str) -> Option<u64> {
    if name.starts_with("GOMP_loop_") && name.ends_with("_next") {
        return Some(GOMP_loop_next as *const () as u64);
    }
    let f: usize = entry_points!(name;
        GOMP_parallel,
        GOMP_parallel_start,
        GOMP_parallel_end,
        GOMP_barrier,
        GOMP_barrier_cancel,
        GOMP_cancel,
        GOMP_cancellation_point,
        GOMP_critical_start,
        GOMP_critical_end,
        GOMP_critical_name_start,
        GOMP_critical_name_end,
        GOMP_atomic_start,
        GOMP_atomic_end,
        GOMP_single_start,
        GOMP_single_copy_start,
        GOMP_single_copy_end,
        GOMP_ordered_start,
        GOMP_ordered_end,
        GOMP_scope_start,
        GOMP_loop_doacross_static_start,
        GOMP_loop_doacross_dynamic_start,
        GOMP_loop_doacross_guided_start,
        GOMP_loop_doacross_runtime_start,
        GOMP_loop_doacross_start,
        GOMP_doacross_post,
        GOMP_loop_ordered_static_start,
        GOMP_loop_static_start,
        GOMP_loop_dynamic_start,
        GOMP_loop_nonmonotonic_dynamic_start,
        GOMP_loop_guided_start,
        GOMP_loop_runtime_start,
        GOMP_loop_nonmonotonic_runtime_start,
        GOMP_loop_ordered_dynamic_start,
        GOMP_loop_ordered_guided_start,
        GOMP_loop_ordered_runtime_start,
        GOMP_loop_start,
        GOMP_loop_ordered_start,
        GOMP_loop_end,
        GOMP_loop_end_nowait,
        GOMP_loop_end_cancel,
        GOMP_loop_ull_static_start,
        GOMP_loop_ull_dynamic_start,
        GOMP_loop_ull_nonmonotonic_dynamic_start,
        GOMP_loop_ull_guided_start,
        GOMP_loop_ull_runtime_start,
        GOMP_loop_ull_nonmonotonic_runtime_start,
        GOMP_loop_ull_ordered_static_start,
        GOMP_loop_ull_ordered_dynamic_start,
        GOMP_loop_ull_ordered_guided_start,
        GOMP_loop_ull_ordered_runtime_start,
        GOMP_loop_ull_start,
        GOMP_loop_ull_ordered_start,
        GOMP_parallel_loop_static,
        GOMP_parallel_loop_dynamic,
        GOMP_parallel_loop_guided,
        GOMP_parallel_loop_runtime,
        GOMP_parallel_loop_nonmonotonic_dynamic,
        GOMP_parallel_loop_nonmonotonic_runtime,
        GOMP_parallel_loop_static_start,
        GOMP_parallel_loop_dynamic_start,
        GOMP_parallel_loop_guided_start,
        GOMP_parallel_loop_runtime_start,
        GOMP_parallel_sections_start,
        GOMP_sections_start,
        GOMP_sections2_start,
        GOMP_sections_next,
        GOMP_sections_end_cancel,
        GOMP_parallel_sections,
        GOMP_task,
        GOMP_taskwait_depend,
        GOMP_taskwait,
        GOMP_taskyield,
        GOMP_taskgroup_start,
        GOMP_taskgroup_end,
        GOMP_taskgroup_reduction_register,
        GOMP_taskgroup_reduction_unregister,
        GOMP_task_reduction_remap,
        GOMP_workshare_task_reduction_unregister,
        GOMP_parallel_reductions,
        GOMP_taskloop,
        GOMP_taskloop_ull,
        GOMP_alloc,
        GOMP_free,
        GOMP_target_ext,
        GOMP_target,
        GOMP_target_update_ext,
        GOMP_target_data_ext,
        GOMP_teams_reg,
        GOMP_teams4,
        GOMP_teams,
        GOMP_warning,
        GOMP_error,
        omp_fulfill_event,
        omp_set_num_threads,
        omp_get_num_threads,
        omp_get_max_threads,
        omp_get_thread_num,
        omp_get_num_procs,
        omp_in_parallel,
        omp_set_dynamic,
        omp_get_dynamic,
        omp_set_nested,
        omp_get_nested,
        omp_set_schedule,
        omp_get_schedule,
        omp_get_thread_limit,
        omp_set_max_active_levels,
        omp_get_max_active_levels,
        omp_get_supported_active_levels,
        omp_get_level,
        omp_get_ancestor_thread_num,
        omp_get_team_size,
        omp_get_active_level,
        omp_in_final,
        omp_get_cancellation,
        omp_get_proc_bind,
        omp_get_num_places,
        omp_get_place_num,
        omp_get_partition_num_places,
        omp_get_place_num_procs,
        omp_get_place_proc_ids,
        omp_get_partition_place_nums,
        omp_get_max_task_priority,
        omp_pause_resource,
        omp_pause_resource_all,
        omp_get_default_device,
        omp_set_default_device,
        omp_get_num_devices,
        omp_get_initial_device,
        omp_is_initial_device,
        omp_get_num_teams,
        omp_get_team_num,
        omp_get_device_num,
        omp_target_alloc,
        omp_target_free,
        omp_target_is_present,
        omp_target_memcpy,
        omp_target_memcpy_rect,
        omp_target_associate_ptr,
        omp_target_disassociate_ptr,
        omp_set_num_teams,
        omp_get_max_teams,
        omp_set_teams_thread_limit,
        omp_get_teams_thread_limit,
        omp_init_lock,
        omp_init_lock_with_hint,
        omp_destroy_lock,
        omp_set_lock,
        omp_unset_lock,
        omp_test_lock,
        omp_init_nest_lock,
        omp_init_nest_lock_with_hint,
        omp_destroy_nest_lock,
        omp_set_nest_lock,
        omp_unset_nest_lock,
        omp_test_nest_lock,
        omp_set_affinity_format,
        omp_get_affinity_format,
        omp_display_affinity,
        omp_capture_affinity,
        omp_display_env,
        omp_init_allocator,
        omp_destroy_allocator,
        omp_set_default_allocator,
        omp_get_default_allocator,
        omp_alloc,
        omp_aligned_alloc,
        omp_calloc,
        omp_aligned_calloc,
        omp_realloc,
        omp_free,
        ;
        "GOMP_loop_nonmonotonic_guided_start" => GOMP_loop_guided_start,
        "GOMP_loop_maybe_nonmonotonic_runtime_start" => GOMP_loop_nonmonotonic_runtime_start,
        "GOMP_sections_end_nowait" => GOMP_loop_end_nowait,
        "GOMP_loop_ull_doacross_static_start" => GOMP_loop_doacross_static_start,
        "GOMP_loop_ull_doacross_dynamic_start" => GOMP_loop_doacross_dynamic_start,
        "GOMP_loop_ull_doacross_guided_start" => GOMP_loop_doacross_guided_start,
        "GOMP_loop_ull_doacross_runtime_start" => GOMP_loop_doacross_runtime_start,
        "GOMP_loop_ull_doacross_start" => GOMP_loop_doacross_start,
        "GOMP_doacross_ull_post" => GOMP_doacross_post,
        "GOMP_doacross_wait" => hrt_GOMP_doacross_wait,
        "GOMP_doacross_ull_wait" => hrt_GOMP_doacross_wait,
        "GOMP_loop_ull_nonmonotonic_guided_start" => GOMP_loop_ull_guided_start,
        "GOMP_loop_ull_maybe_nonmonotonic_runtime_start" => GOMP_loop_ull_nonmonotonic_runtime_start,
        "GOMP_parallel_loop_nonmonotonic_guided" => GOMP_parallel_loop_guided,
        "GOMP_parallel_loop_maybe_nonmonotonic_runtime" => GOMP_parallel_loop_nonmonotonic_runtime,
        "GOMP_sections_end" => GOMP_loop_end,
        "GOMP_target_enter_exit_data" => GOMP_target_update_ext,
        "GOMP_target_data" => GOMP_target_data_ext,
        "GOMP_target_end_data" => GOMP_target_end_data,
        "GOMP_target_update" => GOMP_target_data_ext,
        "omp_get_wtime" => hrt_omp_get_wtime,
        "omp_get_wtick" => hrt_omp_get_wtick,
    );
    Some(f as u64)
}
