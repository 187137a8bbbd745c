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

/// The fewest bytes an overridden function must have: a `jmp rel32` (to the kernel, or to a
/// far jump the kernel places in the dead body of a larger overridden function).
pub const PATCH_LEN: u32 = 5;

/// A set of library functions the kernel replaces together.
pub struct Group {
    pub name: &'static str,
    /// Functions the kernel implements, by symbol name.
    pub overrides: &'static [&'static str],
    /// Functions of the program the kernel's implementation calls; all must be present when
    /// the program has a function named with `team_maker_prefix`.
    pub imports: &'static [&'static str],
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
    /// The shared library's name (`DT_SONAME`) when a dynamically linked program loads it:
    /// its exported functions are overridden when ld.so maps its code (see
    /// [`crate::nr::FILE_OVERRIDES`]).
    pub soname: &'static str,
}

/// The groups, by index.
pub const GROUPS: &[Group] = &[OMP];

/// Index of the OpenMP group in [`GROUPS`].
pub const OMP_GROUP: u8 = 0;

/// The OpenMP runtime: gcc's libgomp ABI (what gcc 12 emits for OpenMP C code) and the
/// `omp_*` API. Offloading (`GOMP_target*`, `GOMP_teams*`), OpenACC,
/// detachable tasks and memory allocators are not provided: a program that uses them runs on
/// its own libgomp.
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
        // Work-sharing loops over `long`.
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
    ],
    imports: &["pthread_create", "pthread_attr_init", "pthread_attr_setstacksize", "pthread_attr_destroy"],
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
