//! Explicit tasks, run when they are created (undeferred): the OpenMP specification lets an
//! implementation run a task at once at its task construct, and a task's dependences are then
//! met by construction (its predecessors are earlier siblings, already done). `taskwait`,
//! `taskgroup` and `taskyield` have nothing left to wait for.
//!
//! The cost: tasks do not run in parallel with their creator. Deferred tasks with a team queue
//! are the next step (see the README's OpenMP section).

use alloc::vec;

use super::thread;

pub const FLAG_FINAL: u32 = 1 << 1;
pub const FLAG_UP: u32 = 1 << 8;
pub const FLAG_GRAINSIZE: u32 = 1 << 9;
pub const FLAG_STRICT: u32 = 1 << 14;

pub type TaskFn = extern "C" fn(*mut u8);
pub type CopyFn = Option<extern "C" fn(*mut u8, *mut u8)>;

/// Runs `f` on its own copy of the arguments when the task has a copy constructor, as a task
/// must (firstprivate objects are constructed for it), else on `data` itself.
fn run(f: TaskFn, data: *mut u8, cpyfn: CopyFn, arg_size: usize, arg_align: usize, final_task: bool) {
    let c = thread::ctx();
    let was_final = c.in_final;
    c.in_final |= final_task;
    match cpyfn {
        Some(copy) => {
            let align = arg_align.max(1);
            let mut buf = vec![0u8; arg_size + align];
            let p = buf.as_mut_ptr();
            let arg = p.wrapping_add(p.align_offset(align));
            copy(arg, data);
            f(arg);
        }
        None => f(data),
    }
    thread::ctx().in_final = was_final;
}

/// GOMP_task.
pub fn task(f: TaskFn, data: *mut u8, cpyfn: CopyFn, arg_size: i64, arg_align: i64, flags: u32) {
    run(f, data, cpyfn, arg_size.max(0) as usize, arg_align.max(1) as usize, flags & FLAG_FINAL != 0);
}

/// A taskloop's iteration space in task-sized pieces: (number of tasks, iterations of each of
/// the first `extra` tasks is `per + 1`, of the rest `per`).
fn split(n: u64, flags: u32, num_tasks: u64, nthreads: u64) -> (u64, u64, u64) {
    let tasks = if flags & FLAG_GRAINSIZE != 0 {
        let g = num_tasks.max(1);
        if flags & FLAG_STRICT != 0 {
            n.div_ceil(g)
        } else {
            (n / g).max(1)
        }
    } else if num_tasks == 0 {
        nthreads.max(1)
    } else {
        num_tasks
    };
    let tasks = tasks.clamp(1, n.max(1));
    if flags & FLAG_GRAINSIZE != 0 && flags & FLAG_STRICT != 0 {
        // Every task but the last gets exactly the grain size.
        return (tasks, 0, num_tasks.max(1));
    }
    (tasks, n % tasks, n / tasks)
}

/// GOMP_taskloop and GOMP_taskloop_ull: each task gets a copy of the arguments whose first two
/// words are its first and end values of the loop variable.
#[allow(clippy::too_many_arguments)]
pub fn taskloop(
    f: TaskFn,
    data: *mut u8,
    cpyfn: CopyFn,
    arg_size: i64,
    arg_align: i64,
    flags: u32,
    num_tasks: u64,
    bounds: (u64, u64, u64),
    signed: bool,
) {
    let (start, end, step) = bounds;
    let n = if signed {
        let (s, e, d) = (start as i64 as i128, end as i64 as i128, step as i64 as i128);
        if d > 0 && e > s {
            ((e - s + d - 1) / d) as u64
        } else if d < 0 && s > e {
            ((s - e - d - 1) / -d) as u64
        } else {
            0
        }
    } else if flags & FLAG_UP != 0 {
        if end > start {
            ((end - start) as u128).div_ceil(step as u128) as u64
        } else {
            0
        }
    } else if start > end {
        ((start - end) as u128).div_ceil(step.wrapping_neg() as u128) as u64
    } else {
        0
    };
    if n == 0 {
        return;
    }
    let value = |i: u64| -> u64 {
        if signed {
            (start as i64 as i128 + i as i128 * step as i64 as i128) as i64 as u64
        } else {
            start.wrapping_add(i.wrapping_mul(step))
        }
    };
    let (tasks, extra, per) = split(n, flags, num_tasks, thread::ctx().nthreads as u64);
    let size = (arg_size.max(16)) as usize;
    let align = arg_align.max(8) as usize;
    let mut buf = vec![0u8; size + align];
    let p = buf.as_mut_ptr();
    let arg = p.wrapping_add(p.align_offset(align));
    let mut lo = 0u64;
    for t in 0..tasks {
        let len = if t < extra { per + 1 } else { per };
        let hi = if t + 1 == tasks { n } else { (lo + len).min(n) };
        match cpyfn {
            Some(copy) => copy(arg, data),
            // SAFETY: `data` holds `arg_size` bytes (the compiler's argument block); `arg` has room.
            None => unsafe { core::ptr::copy_nonoverlapping(data, arg, arg_size.max(0) as usize) },
        }
        let words = arg as *mut u64;
        // SAFETY: the block's first two words are the task's bounds (gcc's taskloop layout).
        unsafe {
            *words = value(lo);
            *words.add(1) = if hi == n { end } else { value(hi) };
        }
        run(f, arg, None, 0, 1, false);
        lo = hi;
        if lo >= n {
            break;
        }
    }
}
