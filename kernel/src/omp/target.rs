//! `target` constructs on the host device, as libgomp runs them when it has no offload device
//! (gcc 12 here builds no offload code, so every target region falls back to the host).
//!
//! A target region runs on the encountering thread as the initial thread of a new contention
//! group: a fresh initial task with the initial ICVs (the `OMP_*` environment, not the
//! encountering task's settings), level 0, no team, thread 0, not in a `teams` region, and its
//! own kept teams for the parallel regions inside; the encountering task is back when it ends.
//! Data-mapping constructs do nothing, since the host device shares the host's memory; only
//! `firstprivate` variables, which gcc passes by address, get a copy of their own for the region.
//! A `nowait` region is a task (deferred when the team can run it, with its `depend` clauses as
//! dependences); without `nowait` its dependences are waited for first.

#![allow(non_snake_case)]

use alloc::vec;
use alloc::vec::Vec;

use super::device::check_construct;
use super::tasks;
use super::team::{self, Outlined};
use super::thread::{self, Ctx};

/// gcc's map kinds (gomp-constants.h): the low byte is the kind, the high byte the log2 of the
/// variable's alignment.
const MAP_FIRSTPRIVATE: u16 = 12;
/// GOMP_TARGET_FLAG_NOWAIT.
const FLAG_NOWAIT: u32 = 1;

// Target arguments (GOMP_TARGET_ARG_*): a word names the device (low 7 bits, 0 for all), says
// whether the value follows in the next word, and names the argument (bits 8-15); a value that
// fits is in the word's upper bits.
const ARG_DEVICE_MASK: usize = 0x7f;
const ARG_SUBSEQUENT_PARAM: usize = 1 << 7;
const ARG_ID_MASK: usize = 0xff << 8;
const ARG_THREAD_LIMIT: usize = 2 << 8;
const ARG_VALUE_SHIFT: u32 = 16;

/// The `thread_limit` a target construct passes for every device (0: none).
fn thread_limit_arg(mut args: *const usize) -> u32 {
    if args.is_null() {
        return 0;
    }
    // SAFETY: gcc's argument array, ended by a null word.
    unsafe {
        while *args != 0 {
            let id = *args;
            args = args.add(1);
            let value = if id & ARG_SUBSEQUENT_PARAM != 0 {
                let v = *args as isize;
                args = args.add(1);
                v
            } else {
                (id as isize) >> ARG_VALUE_SHIFT
            };
            if id & ARG_DEVICE_MASK == 0 && id & ARG_ID_MASK == ARG_THREAD_LIMIT {
                return value.clamp(0, i32::MAX as isize) as u32;
            }
        }
    }
    0
}

/// Runs target region `f(hostaddrs)` on this thread as a new initial thread (see the module
/// comment); `thread_limit` (0: none) is its thread-limit-var.
fn run_region(f: Outlined, hostaddrs: *mut u8, thread_limit: u32) {
    let st = thread::this();
    let outer = st.task();
    let inner_hot = core::mem::replace(&mut st.device_hot, [core::ptr::null_mut(); 4]);
    let outer_hot = core::mem::replace(&mut st.hot, inner_hot);
    let mut c = Ctx::initial();
    if thread_limit != 0 {
        c.icv.thread_limit = thread_limit;
    }
    // A contention group of its own.
    let busy = core::sync::atomic::AtomicU32::new(0);
    c.busy = &busy;
    st.set_task(&mut c);
    f(hostaddrs);
    let st = thread::this();
    st.set_task(outer);
    let inner_hot = core::mem::replace(&mut st.hot, outer_hot);
    // A target region inside a target region has left its own teams here: they go spare.
    team::retire(&core::mem::replace(&mut st.device_hot, inner_hot));
}

/// What a target region needs, in one block a task can copy: [function, entry count,
/// thread_limit], then per map entry [value, is_offset] (a firstprivate entry's value is the
/// offset of its copy in the block), then the firstprivate copies.
struct Region {
    buf: Vec<u8>,
    start: usize,
    len: usize,
    align: usize,
}

const HEADER_WORDS: usize = 3;

/// gcc's array of `n` map entries (which may be a null pointer when there are none).
///
/// # Safety
/// `p` points to `n` values when `n` is not 0.
unsafe fn entries_at<'a, T>(p: *const T, n: usize) -> &'a [T] {
    if n == 0 {
        return &[];
    }
    // SAFETY: see above.
    unsafe { core::slice::from_raw_parts(p, n) }
}

impl Region {
    /// # Safety
    /// `hostaddrs`, `sizes` and `kinds` are gcc's arrays of `mapnum` entries.
    unsafe fn new(
        f: Outlined,
        mapnum: usize,
        hostaddrs: *const usize,
        sizes: *const usize,
        kinds: *const u16,
        thread_limit: u32,
    ) -> Region {
        // SAFETY: the caller's arrays.
        let (addrs, sizes, kinds) =
            unsafe { (entries_at(hostaddrs, mapnum), entries_at(sizes, mapnum), entries_at(kinds, mapnum)) };
        let firstprivate = |i: usize| kinds[i] & 0xff == MAP_FIRSTPRIVATE && addrs[i] != 0;
        let align_of = |i: usize| 1usize << (kinds[i] >> 8).min(12);
        let mut entries = Vec::with_capacity(HEADER_WORDS + 2 * mapnum);
        entries.extend_from_slice(&[f as usize, mapnum, thread_limit as usize]);
        let mut len = (HEADER_WORDS + 2 * mapnum) * 8;
        let mut align = 8;
        let mut copies = Vec::new();
        for i in 0..mapnum {
            if firstprivate(i) {
                let a = align_of(i);
                align = align.max(a);
                len = len.next_multiple_of(a);
                entries.extend_from_slice(&[len, 1]);
                copies.push((len, i));
                len += sizes[i];
            } else {
                entries.extend_from_slice(&[addrs[i], 0]);
            }
        }
        let mut buf = vec![0u8; len + align];
        let start = buf.as_ptr().align_offset(align);
        let block = &mut buf[start..start + len];
        for (k, w) in entries.iter().enumerate() {
            block[k * 8..k * 8 + 8].copy_from_slice(&w.to_ne_bytes());
        }
        for (off, i) in copies {
            // SAFETY: a firstprivate entry is the address of a variable of sizes[i] bytes.
            let src = unsafe { core::slice::from_raw_parts(addrs[i] as *const u8, sizes[i]) };
            block[off..off + sizes[i]].copy_from_slice(src);
        }
        Region { buf, start, len, align }
    }

    fn ptr(&mut self) -> *mut u8 {
        self.buf[self.start..].as_mut_ptr()
    }
}

/// Runs the target region a `Region` block describes (a task function: the block may be a
/// deferred task's copy).
extern "C" fn run_block(block: *mut u8) {
    let words = block as *const usize;
    // SAFETY: a block made by Region::new (8-aligned), or a byte copy of one.
    let (f, mapnum, thread_limit) = unsafe { (*words, *words.add(1), *words.add(2) as u32) };
    let mut hostaddrs: Vec<usize> = (0..mapnum)
        .map(|i| {
            // SAFETY: as above: the entries follow the header.
            let (value, is_offset) =
                unsafe { (*words.add(HEADER_WORDS + 2 * i), *words.add(HEADER_WORDS + 2 * i + 1)) };
            if is_offset != 0 {
                block as usize + value
            } else {
                value
            }
        })
        .collect();
    // SAFETY: the function pointer gcc passed, stored as a word.
    let f: Outlined = unsafe { core::mem::transmute(f) };
    run_region(f, hostaddrs.as_mut_ptr() as *mut u8, thread_limit);
}

/// GOMP_target_ext (gcc 4.9+'s `target`).
#[allow(clippy::too_many_arguments)]
pub extern "C" fn GOMP_target_ext(
    device: i32,
    f: Outlined,
    mapnum: usize,
    hostaddrs: *const usize,
    sizes: *const usize,
    kinds: *const u16,
    flags: u32,
    depend: *const usize,
    args: *const usize,
) {
    check_construct(device);
    // SAFETY: gcc's arrays of `mapnum` entries.
    let mut region = unsafe { Region::new(f, mapnum, hostaddrs, sizes, kinds, thread_limit_arg(args)) };
    let task_flags = if depend.is_null() { 0 } else { tasks::FLAG_DEPEND };
    let deferrable = flags & FLAG_NOWAIT != 0;
    tasks::task(
        run_block,
        region.ptr(),
        None,
        region.len as i64,
        region.align as i64,
        deferrable,
        task_flags,
        depend,
        0,
        core::ptr::null_mut(),
    );
}

/// GOMP_target (the gcc 4.9 ABI: no firstprivate, no nowait).
pub extern "C" fn GOMP_target(
    device: i32,
    f: Outlined,
    _unused: *const u8,
    _mapnum: usize,
    hostaddrs: *mut u8,
    _sizes: *const usize,
    _kinds: *const u8,
) {
    check_construct(device);
    run_region(f, hostaddrs, 0);
}

/// `target update`, `target enter data` and `target exit data` (GOMP_target_update_ext,
/// GOMP_target_enter_exit_data): nothing to copy; their dependences are waited for.
#[allow(clippy::too_many_arguments)]
pub extern "C" fn GOMP_target_update_ext(
    device: i32,
    _mapnum: usize,
    _hostaddrs: *const usize,
    _sizes: *const usize,
    _kinds: *const u16,
    _flags: u32,
    depend: *const usize,
) {
    check_construct(device);
    if !depend.is_null() {
        tasks::taskwait_depend(depend);
    }
}

/// `target data` (GOMP_target_data_ext, GOMP_target_data) and the old `target update`
/// (GOMP_target_update): nothing to map on the host device; `device` is their first argument.
pub extern "C" fn GOMP_target_data_ext(device: i32) {
    check_construct(device);
}

/// The end of `target data` (GOMP_target_end_data).
pub extern "C" fn GOMP_target_end_data() {}
