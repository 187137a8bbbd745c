//! Task reductions as gcc 9+ lowers them (`taskgroup task_reduction`, `in_reduction` on tasks,
//! `reduction(task, ...)` on parallel and work-sharing constructs, taskloop `reduction`).
//!
//! The compiler describes the variables in an array of words and initialises and combines the
//! private copies itself (one per thread of the team, by `omp_get_num_threads`); the runtime
//! allocates the copies, remembers which descriptor belongs to the current taskgroup, and maps
//! an original variable (or any thread's copy of it) to the calling thread's copy. The layout
//! of a descriptor `d` (libgomp's ABI):
//!
//! - `d[0]` number of variables, `d[1]` bytes of one thread's copies, `d[2]` their alignment
//!   (replaced by the runtime with the address of the copies), `d[3]` allocator,
//!   `d[4]` next descriptor registered with it (the runtime links the previous registration
//!   of the taskgroup there), `d[5]`/`d[6]` the runtime's (here: non-zero on the first
//!   descriptor of a registration; end of the copies);
//! - then per variable `[address of the original, offset in a thread's copies, descriptor]`.

use alloc::collections::BTreeMap;
use core::alloc::Layout;
use core::sync::atomic::Ordering;

use super::tasks;
use super::thread::{self, Ctx};
use crate::sync::SpinLock;

const CNT: usize = 0;
const SIZE: usize = 1;
const ARRAY: usize = 2;
const NEXT: usize = 4;
const HEAD: usize = 5;
const END: usize = 6;
const ENTRIES: usize = 7;

/// The layouts of the copies allocated, by address (to free them).
static ALLOCATED: SpinLock<BTreeMap<usize, Layout>> = SpinLock::new(BTreeMap::new());

/// Forgets the copies of an image that exec'd (left allocated: a thread of it may have ended
/// using one).
pub fn forget() {
    ALLOCATED.lock().clear();
}

/// A descriptor word.
///
/// SAFETY (for callers): `d` is a descriptor the compiler made, with at least `i + 1` words.
unsafe fn word(d: *mut usize, i: usize) -> *mut usize {
    d.add(i)
}

/// The descriptors of a registration chain from `d` on, to the end (older registrations too).
fn chain(d: *mut usize) -> impl Iterator<Item = *mut usize> {
    // SAFETY: registered descriptors link to registered descriptors or null.
    core::iter::successors((!d.is_null()).then_some(d), |&d| {
        let next = unsafe { *word(d, NEXT) } as *mut usize;
        (!next.is_null()).then_some(next)
    })
}

/// Registers the descriptors at `data` for a team of `nthreads` on top of `old` (the
/// taskgroup's earlier registration): allocates zeroed copies, or with `orig` (the first
/// thread's descriptors of the same work-sharing construct) shares that thread's.
///
/// SAFETY: `data` (and `orig`, `old` when not null) are descriptors laid out as above.
unsafe fn register(data: *mut usize, old: *mut usize, mut orig: *mut usize, nthreads: u32) {
    let mut d = data;
    loop {
        if !orig.is_null() {
            *word(d, ARRAY) = *word(orig, ARRAY);
            *word(d, END) = *word(orig, END);
            orig = *word(orig, NEXT) as *mut usize;
        } else {
            let size = (*word(d, SIZE) * nthreads as usize).max(1);
            let Ok(layout) = Layout::from_size_align(size, (*word(d, ARRAY)).max(1)) else {
                super::team::fatal("a task reduction has an impossible size or alignment");
            };
            let p = alloc::alloc::alloc_zeroed(layout);
            if p.is_null() {
                super::team::fatal("out of memory for task reduction copies");
            }
            ALLOCATED.lock().insert(p as usize, layout);
            *word(d, ARRAY) = p as usize;
            *word(d, END) = p as usize + size;
        }
        *word(d, HEAD) = 0;
        for j in 0..*word(d, CNT) {
            *word(d, ENTRIES + 3 * j + 2) = d as usize;
        }
        let next = *word(d, NEXT) as *mut usize;
        if next.is_null() {
            *word(d, NEXT) = old as usize;
            break;
        }
        d = next;
    }
    *word(data, HEAD) = 1;
}

/// Registers `data` in the current task's innermost taskgroup.
fn register_in_group(c: &Ctx, data: *mut usize, orig: *mut usize) {
    let Some(g) = &c.group else {
        super::team::fatal("task reduction outside a taskgroup");
    };
    let old = g.reductions.load(Ordering::Acquire) as *mut usize;
    // SAFETY: the compiler's descriptor; `old` and `orig` were registered the same way.
    unsafe { register(data, old, orig, c.nthreads) };
    g.reductions.store(data as usize, Ordering::Release);
}

/// GOMP_taskgroup_reduction_register (after GOMP_taskgroup_start).
pub fn taskgroup_register(data: *mut usize) {
    let c = thread::ctx();
    if c.group.is_none() {
        tasks::taskgroup_start();
    }
    register_in_group(thread::ctx(), data, core::ptr::null_mut());
}

/// GOMP_taskgroup_reduction_unregister: frees the copies of the registration at `data`.
pub fn unregister(data: *mut usize) {
    for d in chain(data) {
        // SAFETY: a registered descriptor.
        unsafe {
            if d != data && *word(d, HEAD) != 0 {
                break; // an older registration
            }
            let p = *word(d, ARRAY);
            if let Some(layout) = ALLOCATED.lock().remove(&p) {
                alloc::alloc::dealloc(p as *mut u8, layout);
            }
        }
    }
}

/// GOMP_task_reduction_remap: each of `ptrs[0..cnt]` (an original variable, or some thread's
/// copy of one) becomes the calling thread's copy; for `i < cntorig`, `ptrs[cnt + i]` gets
/// the original's address.
pub fn remap(cnt: usize, cntorig: usize, ptrs: *mut usize) {
    let c = thread::ctx();
    let data = c.group.as_ref().map_or(0, |g| g.reductions.load(Ordering::Acquire)) as *mut usize;
    let id = c.id as usize;
    for i in 0..cnt {
        // SAFETY: the compiler's array of `cnt + cntorig` pointers; registered descriptors.
        unsafe {
            let p = *ptrs.add(i);
            let found = find(data, |d, e| *word(d, ENTRIES + 3 * e) == p).or_else(|| {
                let d = chain(data).find(|&d| p >= *word(d, ARRAY) && p < *word(d, END))?;
                let off = (p - *word(d, ARRAY)) % *word(d, SIZE);
                find(d, |dd, e| dd == d && *word(d, ENTRIES + 3 * e + 1) == off)
            });
            let Some((d, e)) = found else {
                super::team::fatal("no task reduction matches a variable of in_reduction");
            };
            let off = *word(d, ENTRIES + 3 * e + 1);
            *ptrs.add(i) = *word(d, ARRAY) + id * *word(d, SIZE) + off;
            if i < cntorig {
                *ptrs.add(cnt + i) = *word(d, ENTRIES + 3 * e);
            }
        }
    }
}

/// The first (descriptor, variable) of the chain from `data` that `hit` accepts.
fn find(data: *mut usize, hit: impl Fn(*mut usize, usize) -> bool) -> Option<(*mut usize, usize)> {
    chain(data).find_map(|d| {
        // SAFETY: a registered descriptor.
        let n = unsafe { *word(d, CNT) };
        (0..n).find(|&e| hit(d, e)).map(|e| (d, e))
    })
}

/// The start of a work-sharing construct with task reductions (`red` not null): a taskgroup of
/// the thread's own, registered before (`first`) or after the construct is described.
pub fn workshare_begin(red: *mut usize) {
    if !red.is_null() {
        tasks::workshare_group_start();
    }
}

/// Registers a work-sharing construct's task reductions: the thread that describes the
/// construct allocates them, the others share its copies (`orig`).
pub fn workshare_register(red: *mut usize, orig: *mut usize) {
    if !red.is_null() {
        register_in_group(thread::ctx(), red, orig);
    }
}

/// GOMP_workshare_task_reduction_unregister: ends the construct's taskgroup; thread 0 frees the
/// copies; then the construct's barrier unless it was cancelled.
pub fn workshare_end(cancelled: bool) {
    let c = thread::ctx();
    let data = c.group.as_ref().map_or(0, |g| g.reductions.load(Ordering::Acquire)) as *mut usize;
    tasks::taskgroup_end();
    let c = thread::ctx();
    if !cancelled && !c.team.is_null() {
        // SAFETY: teams are never freed.
        unsafe { (*c.team).barrier_wait() };
    }
    if c.id == 0 && !data.is_null() {
        unregister(data);
    }
}

/// GOMP_parallel_reductions: registers the region's reductions (the first word of `data`
/// points to them) for a team of `nthreads`, in a taskgroup every implicit task starts in.
pub fn parallel_group(data: *mut u8, nthreads: u32) -> alloc::sync::Arc<tasks::Group> {
    // SAFETY: the compiler passes the descriptor's address as the first word of the region's data.
    let rdata = unsafe { *(data as *mut *mut usize) };
    // SAFETY: the compiler's descriptor.
    unsafe { register(rdata, core::ptr::null_mut(), core::ptr::null_mut(), nthreads) };
    tasks::Group::with_reductions(rdata as usize)
}
