//! The Fortran `omp_*_` entry points that gfortran programs call (libgomp's Fortran ABI, the
//! `omp_lib` module's external names). Arguments come by reference: INTEGER(4) as `*const i32`,
//! and `_8_` forms for INTEGER(8) arguments (`-fdefault-integer-8`), which libgomp clamps to a
//! C int. A routine without arguments, or whose arguments are the C routine's pointers, has the
//! C routine's ABI and is served by it.
//!
//! Locks: on x86-64 Linux `omp_lock_kind` is 4, the size of the C lock, so a Fortran lock is
//! the C lock itself. `omp_nest_lock_kind` is 8, smaller than the C nest lock, so a Fortran
//! nest lock holds the address of a C nest lock allocated by `omp_init_nest_lock_` (as
//! libgomp's does; here from the runtime's heap, which the program's ring reaches) and freed by
//! `omp_destroy_nest_lock_`.

use alloc::vec;

use super::api::*;
use super::detach::omp_fulfill_event;
use super::device::*;
use super::gomp::{hrt_omp_get_wtick, hrt_omp_get_wtime};
use super::lock::NestLock;
use super::teams::{omp_get_num_teams, omp_get_team_num};
use super::{affinity, allocators, display_env};

/// An INTEGER(8) argument as libgomp passes it on to the C routine.
fn to_int(v: i64) -> i32 {
    v.clamp(i32::MIN as i64, i32::MAX as i64) as i32
}

/// Setters taking one integer by reference: `name` (INTEGER(4)) and `name8` (INTEGER(8)).
macro_rules! setters {
    ($($name:ident, $name8:ident => $c:ident;)*) => {$(
        /// # Safety
        /// `v` points to the program's INTEGER(4) argument.
        unsafe extern "C" fn $name(v: *const i32) {
            // SAFETY: the caller's argument.
            $c(unsafe { *v } as _)
        }
        /// # Safety
        /// `v` points to the program's INTEGER(8) argument.
        unsafe extern "C" fn $name8(v: *const i64) {
            // SAFETY: the caller's argument.
            $c(to_int(unsafe { *v }) as _)
        }
    )*};
}
setters! {
    omp_set_num_threads_, omp_set_num_threads_8_ => omp_set_num_threads;
    omp_set_dynamic_, omp_set_dynamic_8_ => omp_set_dynamic;
    omp_set_nested_, omp_set_nested_8_ => omp_set_nested;
    omp_set_max_active_levels_, omp_set_max_active_levels_8_ => omp_set_max_active_levels;
    omp_set_default_device_, omp_set_default_device_8_ => omp_set_default_device;
    omp_set_num_teams_, omp_set_num_teams_8_ => omp_set_num_teams;
    omp_set_teams_thread_limit_, omp_set_teams_thread_limit_8_ => omp_set_teams_thread_limit;
}

/// Queries taking one integer by reference, returning INTEGER(4).
macro_rules! queries {
    ($($name:ident, $name8:ident => $c:ident;)*) => {$(
        /// # Safety
        /// `v` points to the program's INTEGER(4) argument.
        unsafe extern "C" fn $name(v: *const i32) -> i32 {
            // SAFETY: the caller's argument.
            $c(unsafe { *v })
        }
        /// # Safety
        /// `v` points to the program's INTEGER(8) argument.
        unsafe extern "C" fn $name8(v: *const i64) -> i32 {
            // SAFETY: the caller's argument.
            $c(to_int(unsafe { *v }))
        }
    )*};
}
queries! {
    omp_get_ancestor_thread_num_, omp_get_ancestor_thread_num_8_ => omp_get_ancestor_thread_num;
    omp_get_team_size_, omp_get_team_size_8_ => omp_get_team_size;
    omp_get_place_num_procs_, omp_get_place_num_procs_8_ => omp_get_place_num_procs;
}

/// # Safety
/// The program's INTEGER(kind=omp_sched_kind) and INTEGER(4) arguments.
unsafe extern "C" fn omp_set_schedule_(kind: *const i32, chunk: *const i32) {
    // SAFETY: the caller's arguments.
    unsafe { omp_set_schedule(*kind as u32, *chunk) }
}
/// # Safety
/// As omp_set_schedule_, with an INTEGER(8) chunk.
unsafe extern "C" fn omp_set_schedule_8_(kind: *const i32, chunk: *const i64) {
    // SAFETY: the caller's arguments.
    unsafe { omp_set_schedule(*kind as u32, to_int(*chunk)) }
}
/// # Safety
/// The program's two out arguments, INTEGER(kind=omp_sched_kind) and INTEGER(8).
unsafe extern "C" fn omp_get_schedule_8_(kind: *mut u32, chunk: *mut i64) {
    let mut c = 0i32;
    // SAFETY: `kind` is the caller's; `c` is ours.
    unsafe {
        omp_get_schedule_(kind, &mut c);
        *chunk = c as i64;
    }
}
/// # Safety
/// The program's two out arguments, INTEGER(kind=omp_sched_kind) and INTEGER(4). libgomp's
/// Fortran routine leaves the monotonic modifier out (OpenMP 4.5 code compares the kind with
/// `omp_sched_static` and the like); the C routine keeps it.
unsafe extern "C" fn omp_get_schedule_(kind: *mut u32, chunk: *mut i32) {
    // SAFETY: the caller's out arguments.
    unsafe {
        omp_get_schedule(kind, chunk);
        *kind &= !super::icv::SCHED_MONOTONIC;
    }
}

/// # Safety
/// `place` is the program's INTEGER(4); `ids` its array of omp_get_place_num_procs(place).
unsafe extern "C" fn omp_get_place_proc_ids_(place: *const i32, ids: *mut i32) {
    // SAFETY: the caller's arguments.
    omp_get_place_proc_ids(unsafe { *place }, ids)
}
/// # Safety
/// As omp_get_place_proc_ids_, with INTEGER(8) argument and array.
unsafe extern "C" fn omp_get_place_proc_ids_8_(place: *const i64, ids: *mut i64) {
    // SAFETY: the caller's argument.
    let place = to_int(unsafe { *place });
    let mut narrow = vec![0i32; omp_get_place_num_procs(place).max(0) as usize];
    omp_get_place_proc_ids(place, narrow.as_mut_ptr());
    for (i, v) in narrow.into_iter().enumerate() {
        // SAFETY: the program's array has room for every proc of the place.
        unsafe { *ids.add(i) = v as i64 };
    }
}
/// # Safety
/// `ids` is the program's INTEGER(8) array of omp_get_partition_num_places() elements.
unsafe extern "C" fn omp_get_partition_place_nums_8_(ids: *mut i64) {
    let mut narrow = vec![0i32; omp_get_partition_num_places().max(0) as usize];
    omp_get_partition_place_nums(narrow.as_mut_ptr());
    for (i, v) in narrow.into_iter().enumerate() {
        // SAFETY: the program's array has room for every place of the partition.
        unsafe { *ids.add(i) = v as i64 };
    }
}

// Affinity format, OMP_DISPLAY_ENV and allocators. A CHARACTER argument comes as a pointer
// with its length as a hidden argument after the others; an output string is padded with
// blanks, as Fortran assigns one.

/// The program's CHARACTER argument of `len` bytes.
///
/// # Safety
/// `p` points to `len` bytes of the program's.
unsafe fn chars<'a>(p: *const u8, len: usize) -> &'a [u8] {
    if p.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: the caller's string.
    unsafe { core::slice::from_raw_parts(p, len) }
}

/// Copies `s` into the program's CHARACTER variable of `len` bytes (truncated, blank-padded);
/// returns the length of `s`.
///
/// # Safety
/// `p` points to `len` writable bytes of the program's.
unsafe fn fill_chars(s: &[u8], p: *mut u8, len: usize) -> i32 {
    if !p.is_null() {
        let n = s.len().min(len);
        // SAFETY: the caller's variable of `len` bytes.
        unsafe {
            core::ptr::copy_nonoverlapping(s.as_ptr(), p, n);
            core::ptr::write_bytes(p.add(n), b' ', len - n);
        }
    }
    s.len() as i32
}

/// # Safety
/// `f` is the program's CHARACTER(len) argument.
unsafe extern "C" fn omp_set_affinity_format_(f: *const u8, len: usize) {
    // SAFETY: the caller's argument.
    affinity::set_format(unsafe { chars(f, len) });
}
/// # Safety
/// `buf` is the program's CHARACTER(len) variable.
unsafe extern "C" fn omp_get_affinity_format_(buf: *mut u8, len: usize) -> i32 {
    // SAFETY: the caller's variable.
    unsafe { fill_chars(&affinity::format(), buf, len) }
}
/// # Safety
/// `f` is the program's CHARACTER(len) argument.
unsafe extern "C" fn omp_display_affinity_(f: *const u8, len: usize) {
    // SAFETY: the caller's argument.
    affinity::display(&affinity::or_default(unsafe { chars(f, len) }));
}
/// # Safety
/// `buf` and `f` are the program's CHARACTER(buf_len) variable and CHARACTER(f_len) argument.
unsafe extern "C" fn omp_capture_affinity_(buf: *mut u8, f: *const u8, buf_len: usize, f_len: usize) -> i32 {
    // SAFETY: the caller's arguments.
    unsafe { fill_chars(&affinity::expand(&affinity::or_default(chars(f, f_len))), buf, buf_len) }
}
/// # Safety
/// `verbose` points to the program's LOGICAL(4).
unsafe extern "C" fn omp_display_env_(verbose: *const i32) {
    // SAFETY: the caller's argument.
    display_env::omp_display_env(unsafe { *verbose })
}
/// # Safety
/// `verbose` points to the program's LOGICAL(8).
unsafe extern "C" fn omp_display_env_8_(verbose: *const i64) {
    // SAFETY: the caller's argument.
    display_env::omp_display_env((unsafe { *verbose } != 0) as i32)
}
/// # Safety
/// The program's memspace handle, INTEGER(4) count and array of omp_alloctrait.
unsafe extern "C" fn omp_init_allocator_(space: *const usize, n: *const i32, traits: *const [usize; 2]) -> usize {
    // SAFETY: the caller's arguments.
    allocators::omp_init_allocator(unsafe { *space }, unsafe { *n }, traits)
}
/// # Safety
/// As omp_init_allocator_, with an INTEGER(8) count.
unsafe extern "C" fn omp_init_allocator_8_(space: *const usize, n: *const i64, traits: *const [usize; 2]) -> usize {
    // SAFETY: the caller's arguments.
    allocators::omp_init_allocator(unsafe { *space }, to_int(unsafe { *n }), traits)
}
/// # Safety
/// `a` points to the program's allocator handle.
unsafe extern "C" fn omp_destroy_allocator_(a: *const usize) {
    // SAFETY: the caller's argument.
    allocators::omp_destroy_allocator(unsafe { *a })
}
/// # Safety
/// `a` points to the program's allocator handle.
unsafe extern "C" fn omp_set_default_allocator_(a: *const usize) {
    // SAFETY: the caller's argument.
    allocators::omp_set_default_allocator(unsafe { *a })
}

/// A Fortran nest lock: the address of its C lock.
type FortranNestLock = *mut *mut NestLock;

/// # Safety
/// `l` is the program's `omp_nest_lock_kind` variable.
unsafe extern "C" fn omp_init_nest_lock_(l: FortranNestLock) {
    let lock = alloc::boxed::Box::into_raw(alloc::boxed::Box::new(NestLock {
        lock: core::sync::atomic::AtomicU32::new(0),
        count: 0,
        owner: core::ptr::null_mut(),
    }));
    // SAFETY: the caller's variable.
    unsafe { *l = lock };
}
/// # Safety
/// `l` holds a lock made by omp_init_nest_lock_, not yet destroyed.
unsafe extern "C" fn omp_destroy_nest_lock_(l: FortranNestLock) {
    // SAFETY: made by omp_init_nest_lock_ with Box::into_raw; destroyed once.
    unsafe {
        drop(alloc::boxed::Box::from_raw(*l));
        *l = core::ptr::null_mut();
    }
}
/// # Safety
/// As omp_destroy_nest_lock_.
unsafe extern "C" fn omp_set_nest_lock_(l: FortranNestLock) {
    // SAFETY: the caller's lock.
    unsafe { omp_set_nest_lock(*l) }
}
/// # Safety
/// As omp_destroy_nest_lock_.
unsafe extern "C" fn omp_unset_nest_lock_(l: FortranNestLock) {
    // SAFETY: the caller's lock.
    unsafe { omp_unset_nest_lock(*l) }
}
/// # Safety
/// As omp_destroy_nest_lock_.
unsafe extern "C" fn omp_test_nest_lock_(l: FortranNestLock) -> i32 {
    // SAFETY: the caller's lock.
    unsafe { omp_test_nest_lock(*l) }
}

/// # Safety
/// `kind` and `device` point to the program's INTEGER(4) arguments.
unsafe extern "C" fn omp_pause_resource_(kind: *const i32, device: *const i32) -> i32 {
    // SAFETY: the caller's arguments.
    omp_pause_resource(unsafe { *kind }, unsafe { *device })
}
/// # Safety
/// `kind` points to the program's INTEGER(4) argument.
unsafe extern "C" fn omp_pause_resource_all_(kind: *const i32) -> i32 {
    // SAFETY: the caller's argument.
    omp_pause_resource_all(unsafe { *kind })
}

/// The kernel's function for the Fortran entry point `name`.
pub fn entry_point(name: &str) -> Option<u64> {
    let f: usize = entry_points!(name;
        omp_set_affinity_format_,
        omp_get_affinity_format_,
        omp_display_affinity_,
        omp_capture_affinity_,
        omp_display_env_,
        omp_display_env_8_,
        omp_init_allocator_,
        omp_init_allocator_8_,
        omp_destroy_allocator_,
        omp_set_default_allocator_,
        omp_init_nest_lock_,
        omp_destroy_nest_lock_,
        omp_set_nest_lock_,
        omp_unset_nest_lock_,
        omp_test_nest_lock_,
        omp_pause_resource_,
        omp_pause_resource_all_,
        omp_set_num_threads_,
        omp_set_num_threads_8_,
        omp_set_dynamic_,
        omp_set_dynamic_8_,
        omp_set_nested_,
        omp_set_nested_8_,
        omp_set_max_active_levels_,
        omp_set_max_active_levels_8_,
        omp_set_default_device_,
        omp_set_default_device_8_,
        omp_set_num_teams_,
        omp_set_num_teams_8_,
        omp_set_teams_thread_limit_,
        omp_set_teams_thread_limit_8_,
        omp_get_ancestor_thread_num_,
        omp_get_ancestor_thread_num_8_,
        omp_get_team_size_,
        omp_get_team_size_8_,
        omp_get_place_num_procs_,
        omp_get_place_num_procs_8_,
        omp_set_schedule_,
        omp_set_schedule_8_,
        omp_get_schedule_8_,
        omp_get_schedule_,
        omp_get_place_proc_ids_,
        omp_get_place_proc_ids_8_,
        omp_get_partition_place_nums_8_,
        ;
        // The same ABI as the C routine: no arguments, or the C routine's pointers.
        "omp_get_num_threads_" => omp_get_num_threads,
        "omp_get_max_threads_" => omp_get_max_threads,
        "omp_get_thread_num_" => omp_get_thread_num,
        "omp_get_num_procs_" => omp_get_num_procs,
        "omp_in_parallel_" => omp_in_parallel,
        "omp_get_dynamic_" => omp_get_dynamic,
        "omp_get_nested_" => omp_get_nested,
        "omp_get_thread_limit_" => omp_get_thread_limit,
        "omp_get_max_active_levels_" => omp_get_max_active_levels,
        "omp_get_supported_active_levels_" => omp_get_supported_active_levels,
        "omp_get_level_" => omp_get_level,
        "omp_get_active_level_" => omp_get_active_level,
        "omp_in_final_" => omp_in_final,
        "omp_get_cancellation_" => omp_get_cancellation,
        "omp_get_default_allocator_" => allocators::omp_get_default_allocator,
        "omp_get_proc_bind_" => omp_get_proc_bind,
        "omp_get_num_places_" => omp_get_num_places,
        "omp_get_place_num_" => omp_get_place_num,
        "omp_get_partition_num_places_" => omp_get_partition_num_places,
        "omp_get_partition_place_nums_" => omp_get_partition_place_nums,
        "omp_get_max_task_priority_" => omp_get_max_task_priority,
        "omp_get_default_device_" => omp_get_default_device,
        "omp_get_num_devices_" => omp_get_num_devices,
        "omp_get_initial_device_" => omp_get_initial_device,
        "omp_is_initial_device_" => omp_is_initial_device,
        // omp_lib declares the event handle `value`: the C routine's ABI.
        "omp_fulfill_event_" => omp_fulfill_event,
        "omp_get_num_teams_" => omp_get_num_teams,
        "omp_get_team_num_" => omp_get_team_num,
        "omp_get_device_num_" => omp_get_device_num,
        "omp_get_max_teams_" => omp_get_max_teams,
        "omp_get_teams_thread_limit_" => omp_get_teams_thread_limit,
        "omp_get_wtime_" => hrt_omp_get_wtime,
        "omp_get_wtick_" => hrt_omp_get_wtick,
        // omp_lock_kind is the C lock: the argument is the C routine's pointer (a hint, by
        // reference here, is ignored as in C).
        "omp_init_lock_" => omp_init_lock,
        "omp_init_lock_with_hint_" => omp_init_lock_with_hint,
        "omp_init_lock_with_hint_8_" => omp_init_lock_with_hint,
        "omp_destroy_lock_" => omp_destroy_lock,
        "omp_set_lock_" => omp_set_lock,
        "omp_unset_lock_" => omp_unset_lock,
        "omp_test_lock_" => omp_test_lock,
    );
    Some(f as u64)
}
