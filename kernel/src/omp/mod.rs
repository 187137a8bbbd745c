//! The kernel's own OpenMP runtime (runtime-in-kernel): gcc's libgomp ABI and the `omp_*` API
//! implemented on the kernel's threads, futex words and atomics. An unmodified OpenMP binary
//! is switched onto it at load time by function overrides (`hrt run --omp kernel`,
//! `linux::overrides`): each libgomp entry point in the program jumps here instead. The
//! functions run in the program's thread, in the program's ring (ring 3 with the kernel on
//! PVM, ring 0 with `--app-ring 0`), as plain calls: a fork, a barrier or a loop chunk makes no
//! system call.
//!
//! Threads: a team's workers are the program's own threads, made once with its libc's
//! `pthread_create` (an import: they need the program's TLS, errno and stack guard), pinned
//! one per CPU from the master's, and kept warm between regions; they wait by spinning, then
//! sleep on a futex word the master bumps. Explicit tasks are deferred to a team queue that
//! threads serve at barriers, `taskwait` and taskgroup ends (`tasks`), with dependences and
//! task reductions (`reductions`).

/// The `match` that maps an entry point's name to the kernel's function: functions named as the
/// entry point they implement, then entry points served by a function of another name; any
/// other name returns None from the enclosing function.
macro_rules! entry_points {
    ($name:expr; $($same:ident),* $(,)?; $($alias:literal => $f:path),* $(,)?) => {
        match $name {
            $(stringify!($same) => $same as *const () as usize,)*
            $($alias => $f as *const () as usize,)*
            _ => return None,
        }
    };
}

mod affinity;
mod allocators;
mod api;
mod barrier;
mod cancel;
mod detach;
mod device;
mod display_env;
mod doacross;
mod fortran;
mod gomp;
mod icv;
mod lock;
mod output;
mod places;
mod reductions;
mod steal;
mod target;
mod task_args;
mod tasks;
mod team;
mod teams;
mod thread;
mod wait;
mod work;

use core::sync::atomic::{AtomicU64, Ordering};

/// The kernel's function for the libgomp entry point `name` (C or Fortran).
pub fn entry_point(name: &str) -> Option<u64> {
    gomp::entry_point(name).or_else(|| fortran::entry_point(name))
}

/// The program's functions the runtime calls (`hrt_abi::overrides::OMP.imports`, same order).
static IMPORTS: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];
const IMPORT_PTHREAD_CREATE: usize = 0;
const IMPORT_ATTR_INIT: usize = 1;
const IMPORT_ATTR_SETSTACKSIZE: usize = 2;
const IMPORT_ATTR_DESTROY: usize = 3;
/// Optional: 0 when the program has none.
const IMPORT_EXIT: usize = 4;

/// Records import `index` of the OpenMP group at `addr` (the loader, before the program runs).
pub fn set_import(index: usize, addr: u64) {
    if let Some(slot) = IMPORTS.get(index) {
        slot.store(addr, Ordering::Relaxed);
    }
}

fn import(index: usize) -> u64 {
    IMPORTS[index].load(Ordering::Relaxed)
}

/// Ends the program with `status` as libgomp's fatal errors do: through its C library's `exit`
/// (atexit handlers run and stdio is flushed: output a program printed into a pipe's or file's
/// buffer before the error is not lost), or, for a program without one, at once.
fn exit_through_program(status: i32) -> ! {
    let exit = import(IMPORT_EXIT);
    if exit != 0 {
        // SAFETY: the program's own `exit` (the loader checked the import), called with the C
        // ABI in the program's thread and ring; it does not return.
        let exit: extern "C" fn(i32) -> ! = unsafe { core::mem::transmute(exit as usize) };
        exit(status);
    }
    crate::linux::process::exit_program(status)
}

/// Reads the `OMP_*` environment of the program (its envp strings) before it starts.
pub fn init<'a>(env: impl Iterator<Item = &'a [u8]>) {
    icv::init(env);
}

/// This runtime as the Linux layer's loader uses it.
static RUNTIME: crate::linux::overrides::Runtime = crate::linux::overrides::Runtime {
    entry_point,
    set_import,
    init: |env| init(env),
    after_fork,
    after_exec,
    thread_exits: team::end_workers_of_exiting_thread,
};

/// Offers this runtime to the Linux layer (which overrides libgomp with it); once, at boot.
pub fn register() {
    crate::linux::overrides::set_omp_runtime(&RUNTIME);
}

/// A forked child (`linux::calls::fork`): the forking thread keeps its OpenMP state `state`
/// (a thread's `omp` field: ICVs, current task) but not its teams, whose workers were the
/// parent's threads, and the idle workers are gone too. Returns the state to keep.
fn after_fork(state: *mut u8) -> *mut u8 {
    thread::forget_teams(state);
    team::forget_workers();
    state
}

/// The program exec'd (`linux::exec`; its other threads are gone): everything of the old
/// image goes (its teams and workers are leaked, as after a fork), and the settings are the
/// ones before any environment was read, so that the new image, if its libgomp is redirected
/// here, starts the runtime as a first image does (`init` with its own environment).
fn after_exec() {
    team::forget_workers();
    thread::forget_current();
    gomp::reset_locks();
    icv::reset();
    affinity::reset();
    reductions::forget();
    for slot in &IMPORTS {
        slot.store(0, Ordering::Relaxed);
    }
}
