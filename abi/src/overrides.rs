//! Function overrides (Multiverse's term): at load time the monitor finds some of the
//! program's library functions in its symbol table, and the kernel redirects each one to its
//! own implementation (a `jmp` written over the function's first bytes), so an unmodified
//! binary runs on the kernel's code instead of the library's. The kernel's code may in turn
//! need a few of the program's own functions (imports), e.g. its libc's `pthread_create`.
//!
//! Overrides come in groups that apply all or nothing: the OpenMP group replaces libgomp.
//! The monitor decides (it has the file and the user's options) and passes the kernel a list
//! of [`Entry`] in the block `BootInfo::overrides` names; the kernel checks and applies it.

/// One override or import: a function of the program at link address `addr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The function's link address (the loader adds the program's load bias).
    pub addr: u64,
    /// Bytes the symbol table gives the function (an override needs room for its jump).
    pub size: u32,
    /// Index into the group's [`Group::overrides`] or [`Group::imports`] list.
    pub index: u16,
    /// `KIND_OVERRIDE` or `KIND_IMPORT`.
    pub kind: u8,
    /// Index of the group in [`GROUPS`].
    pub group: u8,
}

pub const KIND_OVERRIDE: u8 = 1;
pub const KIND_IMPORT: u8 = 2;
/// Not a function: where the program's own libgomp decides how long to spin
/// (`mov gomp_managed_threads(%rip), %reg; cmp %reg, gomp_available_cpus(%rip); jb throttled`),
/// at the `cmp`; `size` covers the `cmp` and the `jb`. Sent only when the vCPUs outnumber the
/// host's CPUs and the program keeps its libgomp: the kernel makes the comparison count the
/// host's CPUs, as libgomp natively would (see the kernel's `linux::spin_throttle`).
pub const KIND_SPIN_SITE: u8 = 3;
/// Not a function: libgomp's `gomp_available_cpus` (8 bytes), read once its constructor has
/// run (at the program's first thread creation).
pub const KIND_SPIN_CPUS: u8 = 4;

/// The fewest bytes an overridden function must have: a `jmp rel32` (to the kernel, or to a
/// far jump the kernel places in the dead body of a larger overridden function).
pub const PATCH_LEN: u32 = 5;

/// A set of library functions the kernel replaces together.
pub struct Group {
    pub name: &'static str,
    /// Functions the kernel implements, by symbol name.
    pub overrides: &'static [&'static str],
    /// Functions of the program the kernel's implementation calls; the first
    /// `required_imports` must be present when the program has a function named with
    /// `team_maker_prefix`, the others are used when present.
    pub imports: &'static [&'static str],
    pub required_imports: usize,
    /// Names the overrides whose implementation may call the imports (those that make teams).
    pub team_maker_prefix: &'static str,
    /// Prefixes of the library's own function names (its code, which is not the program's).
    pub library_prefixes: &'static [&'static str],
    /// Prefixes of the library's entry points: a reference to such a function that the group
    /// does not override, from code outside the library, means the program uses a part of the
    /// library the kernel does not provide, and the group is not applied.
    pub entry_prefixes: &'static [&'static str],
    /// Object files of the static library (their STT_FILE names): their local functions are
    /// the library's own code, not the program's.
    pub library_objects: &'static [&'static str],
    /// Prefixes of names only the library's internals have (functions and data): a static
    /// program with none of them does not link the library, and its functions named like the
    /// library's entry points are its own (serial stand-ins for `omp_get_thread_num` and the
    /// like, under `#ifndef _OPENMP`), which the group leaves alone.
    pub internal_prefixes: &'static [&'static str],
    /// The shared library's name (`DT_SONAME`) when a dynamically linked program loads it:
    /// its exported functions are overridden when ld.so maps its code (see
    /// [`crate::nr::FILE_OVERRIDES`]).
    pub soname: &'static str,
}

/// The groups, by index.
pub const GROUPS: &[Group] = &[OMP];

/// Index of the OpenMP group in [`GROUPS`].
pub const OMP_GROUP: u8 = 0;

/// The OpenMP runtime: gcc's libgomp ABI (what gcc 12 emits for OpenMP C and Fortran code)
/// and the `omp_*` API, with its Fortran `omp_*_` forms; `target` and
/// `teams` as libgomp runs them without an offload device (on the host), and the device memory
/// routines for the host. OpenACC is not provided: a program that uses it runs on its own
/// libgomp.
pub const OMP: Group = Group {
    name: "omp",
    overrides: &[
        "GOMP_parallel",
        "GOMP_parallel_start",
        "GOMP_parallel_end",
        "GOMP_barrier",
        "GOMP_barrier_cancel",
        "GOMP_cancel",
        "GOMP_cancellation_point",
        "GOMP_critical_start",
        "GOMP_critical_end",
        "GOMP_critical_name_start",
        "GOMP_critical_name_end",
        "GOMP_atomic_start",
        "GOMP_atomic_end",
        "GOMP_single_start",
        "GOMP_single_copy_start",
        "GOMP_single_copy_end",
        "GOMP_ordered_start",
        "GOMP_scope_start",
        "GOMP_loop_doacross_static_start",
        "GOMP_loop_doacross_dynamic_start",
        "GOMP_loop_doacross_guided_start",
        "GOMP_loop_doacross_runtime_start",
        "GOMP_loop_doacross_start",
        "GOMP_loop_ull_doacross_static_start",
        "GOMP_loop_ull_doacross_dynamic_start",
        "GOMP_loop_ull_doacross_guided_start",
        "GOMP_loop_ull_doacross_runtime_start",
        "GOMP_loop_ull_doacross_start",
        "GOMP_doacross_post",
        "GOMP_doacross_wait",
        "GOMP_doacross_ull_post",
        "GOMP_doacross_ull_wait",
        "GOMP_ordered_end",
        // Work-sharing loops over `long`. Order matters: libgomp defines the `nonmonotonic`
        // and `maybe_nonmonotonic` entry points as aliases of the plain ones (one address),
        // and the monitor patches an address once, with the first name listed for it; the
        // plain (monotonic) name comes first, so an aliased address gets the kernel's
        // monotonic function (`monotonic_names_come_before_their_aliases`).
        "GOMP_loop_static_start",
        "GOMP_loop_static_next",
        "GOMP_loop_dynamic_start",
        "GOMP_loop_dynamic_next",
        "GOMP_loop_guided_start",
        "GOMP_loop_guided_next",
        "GOMP_loop_runtime_start",
        "GOMP_loop_runtime_next",
        "GOMP_loop_nonmonotonic_dynamic_start",
        "GOMP_loop_nonmonotonic_dynamic_next",
        "GOMP_loop_nonmonotonic_guided_start",
        "GOMP_loop_nonmonotonic_guided_next",
        "GOMP_loop_nonmonotonic_runtime_start",
        "GOMP_loop_nonmonotonic_runtime_next",
        "GOMP_loop_maybe_nonmonotonic_runtime_start",
        "GOMP_loop_maybe_nonmonotonic_runtime_next",
        "GOMP_loop_ordered_static_start",
        "GOMP_loop_ordered_static_next",
        "GOMP_loop_ordered_dynamic_start",
        "GOMP_loop_ordered_dynamic_next",
        "GOMP_loop_ordered_guided_start",
        "GOMP_loop_ordered_guided_next",
        "GOMP_loop_ordered_runtime_start",
        "GOMP_loop_ordered_runtime_next",
        "GOMP_loop_start",
        "GOMP_loop_ordered_start",
        "GOMP_loop_end",
        "GOMP_loop_end_nowait",
        "GOMP_loop_end_cancel",
        // Work-sharing loops over `unsigned long long`.
        "GOMP_loop_ull_static_start",
        "GOMP_loop_ull_static_next",
        "GOMP_loop_ull_dynamic_start",
        "GOMP_loop_ull_dynamic_next",
        "GOMP_loop_ull_guided_start",
        "GOMP_loop_ull_guided_next",
        "GOMP_loop_ull_runtime_start",
        "GOMP_loop_ull_runtime_next",
        "GOMP_loop_ull_nonmonotonic_dynamic_start",
        "GOMP_loop_ull_nonmonotonic_dynamic_next",
        "GOMP_loop_ull_nonmonotonic_guided_start",
        "GOMP_loop_ull_nonmonotonic_guided_next",
        "GOMP_loop_ull_nonmonotonic_runtime_start",
        "GOMP_loop_ull_nonmonotonic_runtime_next",
        "GOMP_loop_ull_maybe_nonmonotonic_runtime_start",
        "GOMP_loop_ull_maybe_nonmonotonic_runtime_next",
        "GOMP_loop_ull_ordered_static_start",
        "GOMP_loop_ull_ordered_static_next",
        "GOMP_loop_ull_ordered_dynamic_start",
        "GOMP_loop_ull_ordered_dynamic_next",
        "GOMP_loop_ull_ordered_guided_start",
        "GOMP_loop_ull_ordered_guided_next",
        "GOMP_loop_ull_ordered_runtime_start",
        "GOMP_loop_ull_ordered_runtime_next",
        "GOMP_loop_ull_start",
        "GOMP_loop_ull_ordered_start",
        // Combined parallel loops.
        "GOMP_parallel_loop_static",
        "GOMP_parallel_loop_dynamic",
        "GOMP_parallel_loop_guided",
        "GOMP_parallel_loop_runtime",
        "GOMP_parallel_loop_nonmonotonic_dynamic",
        "GOMP_parallel_loop_nonmonotonic_guided",
        "GOMP_parallel_loop_nonmonotonic_runtime",
        "GOMP_parallel_loop_maybe_nonmonotonic_runtime",
        // The old ABI's (gcc before 4.9) combined constructs, ended by GOMP_parallel_end.
        "GOMP_parallel_loop_static_start",
        "GOMP_parallel_loop_dynamic_start",
        "GOMP_parallel_loop_guided_start",
        "GOMP_parallel_loop_runtime_start",
        "GOMP_parallel_sections_start",
        // Sections.
        "GOMP_sections_start",
        "GOMP_sections2_start",
        "GOMP_sections_next",
        "GOMP_sections_end",
        "GOMP_sections_end_nowait",
        "GOMP_sections_end_cancel",
        "GOMP_parallel_sections",
        // Tasks.
        "GOMP_task",
        "GOMP_taskwait",
        "omp_fulfill_event",
        "omp_fulfill_event_",
        "GOMP_taskwait_depend",
        "GOMP_taskyield",
        "GOMP_taskgroup_start",
        "GOMP_taskgroup_end",
        "GOMP_taskloop",
        "GOMP_taskloop_ull",
        "GOMP_taskgroup_reduction_register",
        "GOMP_taskgroup_reduction_unregister",
        "GOMP_task_reduction_remap",
        "GOMP_workshare_task_reduction_unregister",
        "GOMP_parallel_reductions",
        // The allocate clause.
        "GOMP_alloc",
        "GOMP_free",
        // Offloading constructs on the host device, and teams.
        "GOMP_target_ext",
        "GOMP_target",
        "GOMP_target_data_ext",
        "GOMP_target_data",
        "GOMP_target_end_data",
        "GOMP_target_update_ext",
        "GOMP_target_update",
        "GOMP_target_enter_exit_data",
        "GOMP_teams_reg",
        "GOMP_teams4",
        "GOMP_teams",
        // The error directive at run time.
        "GOMP_warning",
        "GOMP_error",
        // The omp_* API.
        "omp_set_num_threads",
        "omp_get_num_threads",
        "omp_get_max_threads",
        "omp_get_thread_num",
        "omp_get_num_procs",
        "omp_in_parallel",
        "omp_set_dynamic",
        "omp_get_dynamic",
        "omp_set_nested",
        "omp_get_nested",
        "omp_set_schedule",
        "omp_get_schedule",
        "omp_get_thread_limit",
        "omp_set_max_active_levels",
        "omp_get_max_active_levels",
        "omp_get_supported_active_levels",
        "omp_get_level",
        "omp_get_ancestor_thread_num",
        "omp_get_team_size",
        "omp_get_active_level",
        "omp_in_final",
        "omp_get_cancellation",
        "omp_get_proc_bind",
        "omp_get_num_places",
        "omp_get_place_num",
        "omp_get_partition_num_places",
        "omp_get_place_num_procs",
        "omp_get_place_proc_ids",
        "omp_get_partition_place_nums",
        "omp_get_max_task_priority",
        "omp_pause_resource",
        "omp_pause_resource_all",
        "omp_get_default_device",
        "omp_set_default_device",
        "omp_get_num_devices",
        "omp_get_initial_device",
        "omp_is_initial_device",
        "omp_get_num_teams",
        "omp_get_team_num",
        "omp_get_device_num",
        "omp_target_alloc",
        "omp_target_free",
        "omp_target_is_present",
        "omp_target_memcpy",
        "omp_target_memcpy_rect",
        "omp_target_associate_ptr",
        "omp_target_disassociate_ptr",
        "omp_set_num_teams",
        "omp_get_max_teams",
        "omp_set_teams_thread_limit",
        "omp_get_teams_thread_limit",
        "omp_get_wtime",
        "omp_get_wtick",
        "omp_init_lock",
        "omp_init_lock_with_hint",
        "omp_destroy_lock",
        "omp_set_lock",
        "omp_unset_lock",
        "omp_test_lock",
        "omp_init_nest_lock",
        "omp_init_nest_lock_with_hint",
        "omp_destroy_nest_lock",
        "omp_set_nest_lock",
        "omp_unset_nest_lock",
        "omp_test_nest_lock",
        "omp_set_affinity_format",
        "omp_get_affinity_format",
        "omp_display_affinity",
        "omp_capture_affinity",
        "omp_display_env",
        "omp_init_allocator",
        "omp_destroy_allocator",
        "omp_set_default_allocator",
        "omp_get_default_allocator",
        "omp_alloc",
        "omp_aligned_alloc",
        "omp_calloc",
        "omp_aligned_calloc",
        "omp_realloc",
        "omp_free",
        // The Fortran omp_lib routines (gfortran programs): arguments by reference.
        "omp_set_num_threads_",
        "omp_set_num_threads_8_",
        "omp_set_dynamic_",
        "omp_set_dynamic_8_",
        "omp_set_nested_",
        "omp_set_nested_8_",
        "omp_set_max_active_levels_",
        "omp_set_max_active_levels_8_",
        "omp_set_default_device_",
        "omp_set_default_device_8_",
        "omp_set_num_teams_",
        "omp_set_num_teams_8_",
        "omp_set_teams_thread_limit_",
        "omp_set_teams_thread_limit_8_",
        "omp_get_ancestor_thread_num_",
        "omp_get_ancestor_thread_num_8_",
        "omp_get_team_size_",
        "omp_get_team_size_8_",
        "omp_get_place_num_procs_",
        "omp_get_place_num_procs_8_",
        "omp_set_schedule_",
        "omp_set_schedule_8_",
        "omp_get_schedule_8_",
        "omp_get_place_proc_ids_",
        "omp_get_place_proc_ids_8_",
        "omp_get_partition_place_nums_8_",
        "omp_get_num_threads_",
        "omp_get_max_threads_",
        "omp_get_thread_num_",
        "omp_get_num_procs_",
        "omp_in_parallel_",
        "omp_get_dynamic_",
        "omp_get_nested_",
        "omp_get_schedule_",
        "omp_get_thread_limit_",
        "omp_get_max_active_levels_",
        "omp_get_supported_active_levels_",
        "omp_get_level_",
        "omp_get_active_level_",
        "omp_in_final_",
        "omp_get_cancellation_",
        "omp_get_proc_bind_",
        "omp_get_num_places_",
        "omp_get_place_num_",
        "omp_get_partition_num_places_",
        "omp_get_partition_place_nums_",
        "omp_get_max_task_priority_",
        "omp_get_default_device_",
        "omp_get_num_devices_",
        "omp_get_initial_device_",
        "omp_is_initial_device_",
        "omp_get_num_teams_",
        "omp_get_team_num_",
        "omp_get_device_num_",
        "omp_get_max_teams_",
        "omp_get_teams_thread_limit_",
        "omp_get_wtime_",
        "omp_get_wtick_",
        "omp_init_lock_",
        "omp_init_lock_with_hint_",
        "omp_init_lock_with_hint_8_",
        "omp_destroy_lock_",
        "omp_set_lock_",
        "omp_unset_lock_",
        "omp_test_lock_",
        "omp_set_affinity_format_",
        "omp_get_affinity_format_",
        "omp_display_affinity_",
        "omp_capture_affinity_",
        "omp_display_env_",
        "omp_display_env_8_",
        "omp_init_allocator_",
        "omp_init_allocator_8_",
        "omp_destroy_allocator_",
        "omp_set_default_allocator_",
        "omp_get_default_allocator_",
        "omp_init_nest_lock_",
        "omp_destroy_nest_lock_",
        "omp_set_nest_lock_",
        "omp_unset_nest_lock_",
        "omp_test_nest_lock_",
        "omp_pause_resource_",
        "omp_pause_resource_all_",
    ],
    // The C library's `exit` ends the program after a fatal `error` directive, as libgomp does
    // (running atexit handlers, flushing stdio); without it the kernel ends the program itself.
    imports: &["pthread_create", "pthread_attr_init", "pthread_attr_setstacksize", "pthread_attr_destroy", "exit"],
    required_imports: 4,
    team_maker_prefix: "GOMP_parallel",
    soname: "libgomp.so.1",
    library_prefixes: &[
        "GOMP_",
        "omp_",
        "gomp_",
        "GOACC_",
        "goacc_",
        "_goacc_",
        "acc_",
        "prio_splay_tree_",
        "splay_tree_",
        "priority_queue_",
        "priority_tree_",
        "lookup_goacc_",
        "get_goacc_",
    ],
    entry_prefixes: &["GOMP_", "omp_", "GOACC_", "acc_"],
    internal_prefixes: &["gomp_"],
    library_objects: &[
        "affinity-fmt.o",
        "affinity.o",
        "alloc.o",
        "allocator.o",
        "atomic.o",
        "bar.o",
        "barrier.o",
        "critical.o",
        "env.o",
        "error.o",
        "fortran.o",
        "icv-device.o",
        "icv.o",
        "iter.o",
        "iter_ull.o",
        "lock.o",
        "loop.o",
        "loop_ull.o",
        "mutex.o",
        "oacc-async.o",
        "oacc-cuda.o",
        "oacc-host.o",
        "oacc-init.o",
        "oacc-mem.o",
        "oacc-parallel.o",
        "oacc-plugin.o",
        "oacc-profiling.o",
        "ordered.o",
        "parallel.o",
        "pool.o",
        "priority_queue.o",
        "proc.o",
        "ptrlock.o",
        "scope.o",
        "sections.o",
        "sem.o",
        "single.o",
        "splay-tree.o",
        "target.o",
        "task.o",
        "team.o",
        "teams.o",
        "time.o",
        "work.o",
    ],
};

/// Index of `name` in `list`.
pub fn index_of(list: &[&str], name: &str) -> Option<usize> {
    list.iter().position(|&n| n == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An address libgomp shares between a monotonic entry point and its nonmonotonic aliases
    /// must get the kernel's monotonic function: the plain name is listed first.
    #[test]
    fn monotonic_names_come_before_their_aliases() {
        let list = OMP.overrides;
        for (i, name) in list.iter().enumerate() {
            for modifier in ["maybe_nonmonotonic_", "nonmonotonic_"] {
                let Some(at) = name.find(modifier) else { continue };
                let (head, tail) = (&name[..at], &name[at + modifier.len()..]);
                let plain = list
                    .iter()
                    .position(|n| n.len() == head.len() + tail.len() && n.starts_with(head) && n.ends_with(tail));
                let j = plain.unwrap_or_else(|| panic!("{name} has no plain form"));
                assert!(j < i, "the plain form of {name} must come before it");
                break;
            }
        }
    }
}
