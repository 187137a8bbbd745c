//! Work sharing: loops (static, dynamic, guided, runtime; `long` and `unsigned long long`;
//! ordered), sections and single. A team has a ring of `SLOTS` work shares; construct number k
//! of a region uses slot k % SLOTS while that slot's previous construct is over. A thread that
//! runs further ahead of the slowest (more than `SLOTS - 1` `nowait` constructs) finds the slot
//! still in use and puts its construct in an overflow work share of the team's instead
//! (`Overflow`), as libgomp allocates a new work share: no thread ever waits for another to
//! catch up (one spinning on a flag the others set after nine `nowait` loops hung). The
//! slot's tag records how many of its next constructs went to the overflow, so that every
//! thread finds each construct in one place. The first thread to reach a construct describes
//! it; a loop is an iteration space 0..n handed out as index ranges, mapped back to the
//! program's loop variable only when a chunk is returned (no overflow for any start, end and
//! step).

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicI64, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use super::doacross::Doacross;
use super::icv::{SCHED_AUTO, SCHED_DYNAMIC, SCHED_GUIDED, SCHED_MONOTONIC, SCHED_STATIC};
use super::steal::{self, Lane};
use super::team::Team;
use super::thread::{self, Ctx};
use super::wait::{self, Word};
use crate::sync::SpinLock;

pub const SLOTS: usize = 8;

/// A work share's tag: construct number k (offset by `SLOTS`, so that the numbers before a
/// region's first, which `reset` uses, stay positive) * 2, plus 1 once described; and, from
/// bit `DIVERTED_SHIFT`, how many of a ring slot's next constructs went to the overflow.
const DIVERTED_SHIFT: u32 = 40;

fn pack(k: i64, ready: bool, diverted: i64) -> i64 {
    (diverted << DIVERTED_SHIFT) | ((k + SLOTS as i64) << 1) | ready as i64
}

/// (construct number, ready, constructs diverted) of tag `t`.
fn unpack(t: i64) -> (i64, bool, i64) {
    (((t & ((1 << DIVERTED_SHIFT) - 1)) >> 1) - SLOTS as i64, t & 1 != 0, t >> DIVERTED_SHIFT)
}

/// A loop in iteration-index space, and how to map an index back.
#[derive(Clone, Copy)]
struct Desc {
    n: u64,
    chunk: u64,
    kind: u32,
    start: u64,
    incr: u64,
    end: u64,
    /// Indices map with 128-bit signed arithmetic (`long` loops) or wrapping (`ull` loops).
    signed: bool,
    /// A nonmonotonic dynamic loop whose chunks the threads' lanes hold (`steal`).
    steal: bool,
}

impl Desc {
    const EMPTY: Desc =
        Desc { n: 0, chunk: 1, kind: SCHED_STATIC, start: 0, incr: 1, end: 0, signed: true, steal: false };

    /// Chunks of a dynamic loop.
    fn nchunks(&self) -> u64 {
        self.n.div_ceil(self.chunk)
    }

    fn value(&self, i: u64) -> u64 {
        if i >= self.n {
            return self.end;
        }
        if self.signed {
            (self.start as i64 as i128 + i as i128 * self.incr as i64 as i128) as i64 as u64
        } else {
            self.start.wrapping_add(i.wrapping_mul(self.incr))
        }
    }
}

/// Iterations of `for (i = start; i < end (or > end); i += incr)` over `long`.
fn count_signed(start: i64, end: i64, incr: i64) -> u64 {
    let (s, e, d) = (start as i128, end as i128, incr as i128);
    let n = if d > 0 && e > s {
        (e - s + d - 1) / d
    } else if d < 0 && s > e {
        (s - e - d - 1) / -d
    } else {
        0
    };
    n.min(u64::MAX as i128 / 2) as u64
}

/// Iterations of an `unsigned long long` loop counting up or down.
fn count_unsigned(up: bool, start: u64, end: u64, incr: u64) -> u64 {
    let n = if up && end > start && incr != 0 {
        ((end - start) as u128).div_ceil(incr as u128)
    } else if !up && start > end && incr != 0 {
        let d = incr.wrapping_neg() as u128;
        ((start - end) as u128).div_ceil(d)
    } else {
        0
    };
    n.min(u64::MAX as u128 / 2) as u64
}

#[repr(align(128))]
struct Claimed(AtomicU64);

/// In declaration order (`repr(C)`): the per-construct words and the description share the
/// first line (a joining thread reads the tag, then the description, both just written by the
/// describer), and the counter sits at offset 128 in a block of its own. Measured, not
/// derived: with the compiler's order (counter at offset 0, the description at 128) 4,096
/// back-to-back `dynamic,1` chunks of two threads took ~122k TSC cycles, with the counter
/// first in declaration order ~127k, with this order ~110k (natively ~101-103k).
#[repr(C)]
pub struct WorkShare {
    /// Construct number * 2, plus 1 once described (ready to join).
    tag: AtomicI64,
    /// Threads that have not left the construct.
    left: AtomicU32,
    /// Bumped when the slot becomes ready or free.
    changed: Word,
    desc: UnsafeCell<Desc>,
    /// The next unclaimed iteration of a dynamic or guided loop: every chunk writes it, so
    /// it has a cache line of its own (not the description every chunk reads). A stealing
    /// loop's final chunk is taken when this goes from 0 to 1.
    next: Claimed,
    /// A stealing loop's lanes, one per thread (as many as the team has threads; the vector
    /// only grows, so a lane stays where it is while its loop runs).
    lanes: UnsafeCell<Vec<Lane>>,
    /// The iteration index whose chunk may run its ordered regions now.
    ordered: AtomicU64,
    ordered_moved: Word,
    /// `single copyprivate`: the winner's data.
    copy: AtomicPtr<u8>,
    /// GOMP_loop_start's shared scratch memory (pointer, bytes).
    mem: UnsafeCell<(*mut u8, usize)>,
    /// The describing thread's task reduction descriptors (the others share its copies).
    task_reductions: AtomicPtr<usize>,
    /// A doacross loop's progress (kept until the slot is described again: a loop ends
    /// without a barrier and threads may still wait on it).
    doacross: UnsafeCell<Option<Box<Doacross>>>,
    /// One of the team's overflow work shares (not a ring slot): the last thread to leave
    /// gives it back (`Overflow::release`).
    overflow: bool,
}

// SAFETY: `desc` and `mem` are written only by the thread that claimed the slot, before it
// publishes the tag (release), and read by others after they saw it (acquire).
unsafe impl Sync for WorkShare {}

impl WorkShare {
    pub const fn new() -> WorkShare {
        WorkShare {
            tag: AtomicI64::new(0),
            left: AtomicU32::new(0),
            changed: Word::new(0),
            desc: UnsafeCell::new(Desc::EMPTY),
            next: Claimed(AtomicU64::new(0)),
            ordered: AtomicU64::new(0),
            ordered_moved: Word::new(0),
            copy: AtomicPtr::new(core::ptr::null_mut()),
            mem: UnsafeCell::new((core::ptr::null_mut(), 0)),
            task_reductions: AtomicPtr::new(core::ptr::null_mut()),
            doacross: UnsafeCell::new(None),
            lanes: UnsafeCell::new(Vec::new()),
            overflow: false,
        }
    }

    fn desc(&self) -> &Desc {
        // SAFETY: see the Sync impl: read after the tag was seen ready.
        unsafe { &*self.desc.get() }
    }

    /// The lanes of the stealing loop described here.
    pub fn lanes(&self) -> &[Lane] {
        // SAFETY: see the Sync impl: read after the tag was seen ready.
        unsafe { &*self.lanes.get() }
    }

    /// Describes the construct for a team of `nthreads` (a stealing loop: one lane each, the
    /// chunks dealt among them).
    fn describe(&self, d: Desc, nthreads: u32) {
        if d.steal {
            // SAFETY: this thread claimed the slot and has not published it; every thread
            // left the slot's previous construct, so no lane is in use.
            let lanes = unsafe { &mut *self.lanes.get() };
            let me = self as *const WorkShare;
            let n = nthreads as usize;
            if lanes.len() < n {
                let have = lanes.len();
                lanes.extend((have..n).map(|i| Lane::new(me, i)));
            } else {
                lanes.truncate(n);
            }
            steal::deal(lanes, d.nchunks());
        }
        // SAFETY: this thread claimed the slot and has not published it.
        unsafe { *self.desc.get() = d };
        self.next.0.store(0, Ordering::Relaxed);
        self.ordered.store(0, Ordering::Relaxed);
        self.copy.store(core::ptr::null_mut(), Ordering::Relaxed);
    }
}

/// Where a thread is in its current loop or sections construct.
#[derive(Clone, Copy)]
pub struct Cursor {
    slot: *const WorkShare,
    lo: u64,
    hi: u64,
    has: bool,
    trip: u64,
    ordered: bool,
    /// An unordered dynamic loop: `next` serves it from the thread record's `omp_hot`.
    fast: bool,
    /// In a stealing loop: this thread's lane (else null).
    lane: *const Lane,
}

impl Cursor {
    pub const NONE: Cursor = Cursor {
        slot: core::ptr::null(),
        lo: 0,
        hi: 0,
        has: false,
        trip: 0,
        ordered: false,
        fast: false,
        lane: core::ptr::null(),
    };

    /// The cursor of a thread (`id`) that has just entered the loop or sections construct in
    /// `slot`.
    fn entered(slot: &WorkShare, id: u32, ordered: bool) -> Cursor {
        let d = slot.desc();
        let lane = if d.steal { &slot.lanes()[id as usize] as *const Lane } else { core::ptr::null() };
        Cursor { slot, ordered, fast: is_fast(d, ordered), lane, ..Cursor::NONE }
    }
}

/// `omp_hot`'s low bit: the word is a stealing loop's lane, not a work share (both are
/// 128-byte aligned).
const LANE_TAG: u64 = 1;

/// What the thread record's `omp_hot` holds for a task whose cursor is `cur`
/// (`thread::set_hot`): this thread's lane (tagged) in a stealing loop, the loop's work share
/// if `next` may serve it from its shared counter, else 0.
pub fn fast_slot(cur: &Cursor) -> u64 {
    if !cur.lane.is_null() {
        cur.lane as u64 | LANE_TAG
    } else if cur.fast {
        cur.slot as u64
    } else {
        0
    }
}

/// Whether a loop described as `d` is served by `next`'s shared-counter fast path.
fn is_fast(d: &Desc, ordered: bool) -> bool {
    d.kind == SCHED_DYNAMIC && !ordered && !d.steal
}

/// Makes the slots of a team ready for a new region (whose constructs count from 1): each
/// slot as if the construct `SLOTS` before its first one had ended there.
pub fn reset(slots: &[WorkShare; SLOTS]) {
    for (i, s) in slots.iter().enumerate() {
        let first = if i == 0 { SLOTS } else { i } as i64;
        // Only what changed (see `team::fork`): a region that shared no work writes nothing.
        let tag = pack(first - SLOTS as i64, true, 0);
        if s.tag.load(Ordering::Relaxed) != tag {
            s.tag.store(tag, Ordering::Relaxed);
        }
        if s.left.load(Ordering::Relaxed) != 0 {
            s.left.store(0, Ordering::Relaxed);
        }
    }
}

/// The team the current task shares work with: a team of one outside any region.
fn team_of(c: &mut Ctx) -> &'static Team {
    if c.team.is_null() {
        c.team = super::team::solo();
    }
    // SAFETY: teams are never freed.
    unsafe { &*c.team }
}

/// Enters the next work-sharing construct; returns its slot and whether this thread must
/// describe it (then `publish` it).
fn enter(c: &mut Ctx) -> (&'static WorkShare, bool) {
    let team = team_of(c);
    c.ws_seq += 1;
    let k = c.ws_seq as i64;
    let slot = &team.work[c.ws_seq as usize % SLOTS];
    loop {
        let t = slot.tag.load(Ordering::Acquire);
        let (j, ready, diverted) = unpack(t);
        if j == k {
            if ready {
                return (slot, false);
            }
            // Another thread describes it.
            let seen = slot.changed.load();
            if slot.tag.load(Ordering::Acquire) == t {
                slot.changed.wait_while(seen);
            }
            continue;
        }
        // The slot holds an earlier construct j; those after it up to `decided` went to the
        // overflow. Every thread passed construct k - SLOTS, so k <= decided + SLOTS.
        let decided = j + SLOTS as i64 * diverted;
        if k <= decided {
            return (team.overflow.find(k), false);
        }
        if ready && slot.left.load(Ordering::Acquire) == 0 {
            // Construct j is over: k takes the slot.
            if slot.tag.compare_exchange(t, pack(k, false, 0), Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                return (slot, true);
            }
            continue;
        }
        // Construct j is still under way: k goes to the overflow, which this thread records.
        if slot.tag.compare_exchange(t, pack(j, ready, diverted + 1), Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            return (team.overflow.make(k), true);
        }
    }
}

fn publish(c: &Ctx, slot: &WorkShare) {
    slot.left.store(c.nthreads, Ordering::Relaxed);
    // Ready; the count of diverted constructs that other threads may have raised meanwhile
    // stays.
    debug_assert_eq!(unpack(slot.tag.load(Ordering::Relaxed)).0, c.ws_seq as i64);
    slot.tag.fetch_or(1, Ordering::Release);
    slot.changed.bump();
}

fn leave(team: &Team, slot: &WorkShare) {
    if slot.left.fetch_sub(1, Ordering::AcqRel) == 1 {
        slot.changed.bump();
        if slot.overflow {
            team.overflow.release(slot);
        }
    }
}

/// A team's overflow work shares: those of constructs whose ring slot was still in use when
/// the first thread reached them, by construct number, and the spare ones.
pub struct Overflow(SpinLock<OverflowShares>);

pub struct OverflowShares {
    live: Vec<(i64, Box<WorkShare>)>,
    /// Boxed as the live ones: a work share moves between the lists without moving in memory
    /// (threads hold its address) and without a new allocation.
    #[allow(clippy::vec_box)]
    spare: Vec<Box<WorkShare>>,
}

impl Overflow {
    pub const fn new() -> Overflow {
        Overflow(SpinLock::new(OverflowShares { live: Vec::new(), spare: Vec::new() }))
    }

    /// A work share for construct `k`, claimed by the caller (which describes it).
    fn make(&self, k: i64) -> &'static WorkShare {
        let mut shares = self.0.lock();
        let ws = shares.spare.pop().unwrap_or_else(|| {
            let mut ws = Box::new(WorkShare::new());
            ws.overflow = true;
            ws
        });
        ws.tag.store(pack(k, false, 0), Ordering::Relaxed);
        ws.left.store(0, Ordering::Relaxed);
        let p: *const WorkShare = &*ws;
        shares.live.push((k, ws));
        // SAFETY: a boxed work share stays where it is until `release`, after every thread
        // of the team left it; teams are never freed.
        unsafe { &*p }
    }

    /// The work share of construct `k`, which another thread diverted here, once described.
    fn find(&self, k: i64) -> &'static WorkShare {
        loop {
            let found = self.0.lock().live.iter().find(|(n, _)| *n == k).map(|(_, ws)| &**ws as *const WorkShare);
            if let Some(p) = found {
                // SAFETY: as in `make`: this thread has not left it, so it is not released.
                let ws = unsafe { &*p };
                loop {
                    let seen = ws.changed.load();
                    if ws.tag.load(Ordering::Acquire) & 1 != 0 {
                        return ws;
                    }
                    ws.changed.wait_while(seen);
                }
            }
            // The diverting thread records the construct, then adds its work share.
            core::hint::spin_loop();
        }
    }

    /// Every thread left `ws`: it becomes spare.
    fn release(&self, ws: &WorkShare) {
        let mut shares = self.0.lock();
        if let Some(i) = shares.live.iter().position(|(_, b)| core::ptr::eq(&**b, ws)) {
            let b = shares.live.swap_remove(i).1;
            shares.spare.push(b);
        }
    }

    /// A new region: no construct is under way (each was left before the last barrier).
    pub fn reset(&self) {
        let mut shares = self.0.lock();
        if !shares.live.is_empty() {
            let live = core::mem::take(&mut shares.live);
            shares.spare.extend(live.into_iter().map(|(_, b)| b));
        }
    }
}

/// A `Loop` kind bit: the construct lets chunks go in any order (gcc's `nonmonotonic` entry
/// points: `schedule(dynamic)` without `monotonic:` since OpenMP 5.0, and
/// `schedule(runtime)` then gets the modifier of run-sched-var). Never in an ICV.
pub const NONMONOTONIC: u32 = 0x4000_0000;

/// A loop's schedule: `kind` 0 means runtime (with `NONMONOTONIC` or `SCHED_MONOTONIC` bits).
pub struct Loop {
    pub kind: u32,
    pub chunk: u64,
    pub start: u64,
    pub end: u64,
    pub incr: u64,
    pub signed: bool,
    /// For an unsigned loop: counting up.
    pub up: bool,
    pub ordered: bool,
}

/// Describes loop `l` of a team of `nthreads` (run-sched-var from `c`); `doacross`: a
/// doacross loop, whose chunks must go in order.
fn describe(c: &Ctx, l: &Loop, nthreads: u32, doacross: bool) -> Desc {
    // A runtime schedule is run-sched-var's, monotonic if that says so.
    let (sched, chunk) = if l.kind & !(NONMONOTONIC | SCHED_MONOTONIC) == 0 {
        (c.icv.run_sched | (l.kind & (NONMONOTONIC | SCHED_MONOTONIC)), c.icv.run_chunk as u64)
    } else {
        (l.kind, l.chunk)
    };
    let kind = sched & !(NONMONOTONIC | SCHED_MONOTONIC);
    let kind = if kind == SCHED_AUTO { SCHED_STATIC } else { kind };
    let n = if l.signed {
        count_signed(l.start as i64, l.end as i64, l.incr as i64)
    } else {
        count_unsigned(l.up, l.start, l.end, l.incr)
    };
    let chunk = if kind == SCHED_STATIC { chunk } else { chunk.max(1) };
    let mut d = Desc {
        n,
        chunk: chunk.min(n.max(1)),
        kind,
        start: l.start,
        incr: l.incr,
        end: l.end,
        signed: l.signed,
        steal: false,
    };
    // Stealing hands a thread chunks out of order: only where the construct allows it, and
    // only where a team shares the chunks (one thread's shared counter is uncontended).
    d.steal = kind == SCHED_DYNAMIC
        && sched & NONMONOTONIC != 0
        && sched & SCHED_MONOTONIC == 0
        && !l.ordered
        && !doacross
        && nthreads > 1
        && n > 0
        && d.nchunks() <= steal::MAX_CHUNKS;
    d
}

/// Starts a loop construct and hands out the first chunk (see `next`). With `istart` null it
/// only enters the construct (GOMP_loop_start does so for combined constructs).
/// `red` (not null): the construct's task reductions.
pub fn start(l: &Loop, istart: *mut u64, iend: *mut u64, mem: *mut *mut u8, red: *mut usize) -> bool {
    start_with(l, None, istart, iend, mem, red)
}

/// Starts a doacross loop over 0..counts[0] (`counts`: iterations of each loop of the nest).
pub fn start_doacross(
    l: &Loop,
    counts: &[u64],
    istart: *mut u64,
    iend: *mut u64,
    mem: *mut *mut u8,
    red: *mut usize,
) -> bool {
    start_with(l, Some(counts), istart, iend, mem, red)
}

/// The doacross state of the current loop (None outside a doacross loop).
pub fn doacross() -> Option<&'static Doacross> {
    let c = thread::ctx();
    if c.cur.slot.is_null() {
        return None;
    }
    // SAFETY: the current construct's slot, published (see WorkShare's Sync impl).
    unsafe { (*(*c.cur.slot).doacross.get()).as_deref() }
}

fn start_with(
    l: &Loop,
    counts: Option<&[u64]>,
    istart: *mut u64,
    iend: *mut u64,
    mem: *mut *mut u8,
    red: *mut usize,
) -> bool {
    super::reductions::workshare_begin(red);
    let c = thread::ctx();
    let (slot, first) = enter(c);
    if !first {
        super::reductions::workshare_register(red, slot.task_reductions.load(Ordering::Acquire));
    } else {
        super::reductions::workshare_register(red, core::ptr::null_mut());
        slot.task_reductions.store(red, Ordering::Relaxed);
        slot.describe(describe(c, l, c.nthreads, counts.is_some()), c.nthreads);
        // SAFETY: claimed, unpublished slot; every thread left its previous construct.
        unsafe { *slot.doacross.get() = counts.map(|n| Box::new(Doacross::new(n))) };
        if !mem.is_null() {
            // SAFETY: `mem` is the program's pointer-sized in/out argument.
            let want = unsafe { *mem } as usize;
            // SAFETY: claimed, unpublished slot (see WorkShare's Sync impl).
            let held = unsafe { &mut *slot.mem.get() };
            if held.1 < want {
                let layout = core::alloc::Layout::from_size_align(want.max(64), 64).unwrap();
                // SAFETY: a non-zero size; the old block (if any) no thread uses any more.
                unsafe {
                    if !held.0.is_null() {
                        alloc::alloc::dealloc(
                            held.0,
                            core::alloc::Layout::from_size_align(held.1.max(64), 64).unwrap(),
                        );
                    }
                    held.0 = alloc::alloc::alloc_zeroed(layout);
                }
                held.1 = want;
            } else if !held.0.is_null() {
                // SAFETY: as above; the block holds `held.1` bytes.
                unsafe { core::ptr::write_bytes(held.0, 0, held.1) };
            }
        }
        publish(c, slot);
    }
    if !mem.is_null() {
        // SAFETY: published slot; the program's out argument.
        unsafe { *mem = (*slot.mem.get()).0 };
    }
    c.cur = Cursor::entered(slot, c.id, l.ordered);
    thread::set_hot(fast_slot(&c.cur));
    if istart.is_null() {
        return true;
    }
    next(istart, iend)
}

/// Describes the first construct of a team before its threads start (combined parallel loops
/// and sections): every member starts with it entered.
pub fn prepare(team: &Team, outer: &Ctx, l: &Loop) {
    let slot = &team.work[1];
    slot.describe(describe(outer, l, team.nthreads, false), team.nthreads);
    // SAFETY: the team's threads are idle (the master prepares before it starts them).
    unsafe { *slot.doacross.get() = None };
    slot.left.store(team.nthreads, Ordering::Relaxed);
    slot.tag.store(pack(1, true, 0), Ordering::Release);
}

/// The cursor member `id` of a team whose first construct was prepared starts with.
pub fn prepared_cursor(team: &Team, id: u32) -> Cursor {
    Cursor::entered(&team.work[1], id, false)
}

/// The next chunk of the current loop for this thread: writes its first and end values.
/// An unordered dynamic loop's chunk (EPCC's `dynamic,1` takes 128 per thread and loop) is
/// served inline: its lane or work share two loads away in the thread record (`omp_hot`),
/// the fetch-add and the two values, no cursor to keep and no frame to build; a stealing
/// loop's empty lane goes to `refill`, every other schedule through `next_range`.
#[inline(always)]
pub fn next(istart: *mut u64, iend: *mut u64) -> bool {
    let hot = thread::hot_slot();
    if hot & LANE_TAG != 0 {
        return next_lane(istart, iend, hot);
    }
    // SAFETY: `omp_hot` is now 0 or the current task's loop's slot (`thread::set_hot`),
    // published (see WorkShare's Sync impl) and alive with its team.
    if let Some(slot) = unsafe { (hot as *const WorkShare).as_ref() } {
        // The description is read into registers before the fetch-add: a locked instruction
        // holds back every later load until the counter's line has come from the other CPU,
        // so loads after it (as before: the bound, the start, the step) lengthen every
        // contended chunk by their latency.
        let d = *slot.desc();
        let lo = slot.next.0.fetch_add(d.chunk, Ordering::Relaxed);
        if lo >= d.n {
            return false;
        }
        // SAFETY: the program's out arguments (8 bytes each).
        unsafe {
            *istart = d.value(lo);
            *iend = d.value((lo + d.chunk).min(d.n));
        }
        return true;
    }
    next_general(istart, iend)
}

/// GOMP_loop_*_next: `next` in assembly for the shared-counter case, jumping to `next_lane`
/// or `next_general` for the rest. The kernel keeps frame pointers, so the Rust `next` pays a
/// push, mov and pop around its one `lock xadd`; with two threads taking `dynamic,1` chunks
/// back to back, every instruction between a thread's fetch-adds is time the counter's line
/// may leave for the other CPU (4,096 contended chunks: ~30 TSC cycles each against libgomp's
/// ~25.5). Same steps as `next`: `omp_hot` from the current thread's record, the description
/// into registers before the fetch-add (a locked instruction holds back later loads until
/// the line is here), first value `start + lo * incr` (`Desc::value`: the low 64 bits of the
/// 128-bit product, signed or not), end value the same for `lo + chunk` or `end` past `n`.
/// A step of 1 skips the multiplies (4,096 back-to-back chunks of two threads: 14-16 TSC
/// cycles a chunk with them, 13.4-14.7 without, libgomp under `hrt` 13.4-15.0, stop 105).
#[unsafe(naked)]
pub extern "C" fn loop_next_entry(_istart: *mut u64, _iend: *mut u64) -> bool {
    core::arch::naked_asm!(
        "mov rax, gs:[{cur}]",
        "mov rdx, [rax + {hot}]",
        "test dl, 1",
        "jnz {lane}",
        "test rdx, rdx",
        "jz {general}",
        "mov r8, [rdx + {n}]",
        "mov rcx, [rdx + {chunk}]",
        "mov r9, [rdx + {start}]",
        "mov r10, [rdx + {incr}]",
        "mov rax, rcx",
        "lock xadd [rdx + {next}], rax",
        "cmp rax, r8",
        "jae 3f",
        // A step of 1 (most loops): the values are the start plus the indices, without the
        // multiplies' latency between the fetch-add and the program's next look at them.
        "cmp r10, 1",
        "jne 4f",
        "lea r11, [rax + r9]",
        "mov [rdi], r11",
        "add rax, rcx",
        "cmp rax, r8",
        "jae 2f",
        "add rax, r9",
        "mov [rsi], rax",
        "mov eax, 1",
        "ret",
        "4:",
        "mov r11, rax",
        "imul r11, r10",
        "add r11, r9",
        "mov [rdi], r11",
        "add rax, rcx",
        "cmp rax, r8",
        "jae 2f",
        "imul rax, r10",
        "add rax, r9",
        "mov [rsi], rax",
        "mov eax, 1",
        "ret",
        "2:",
        "mov rax, [rdx + {end}]",
        "mov [rsi], rax",
        "mov eax, 1",
        "ret",
        "3:",
        "xor eax, eax",
        "ret",
        cur = const crate::arch::percpu::OFF_CURRENT_THREAD,
        hot = const core::mem::offset_of!(crate::sched::Thread, omp_hot),
        next = const core::mem::offset_of!(WorkShare, next.0),
        n = const core::mem::offset_of!(WorkShare, desc) + core::mem::offset_of!(Desc, n),
        chunk = const core::mem::offset_of!(WorkShare, desc) + core::mem::offset_of!(Desc, chunk),
        start = const core::mem::offset_of!(WorkShare, desc) + core::mem::offset_of!(Desc, start),
        incr = const core::mem::offset_of!(WorkShare, desc) + core::mem::offset_of!(Desc, incr),
        end = const core::mem::offset_of!(WorkShare, desc) + core::mem::offset_of!(Desc, end),
        lane = sym next_lane,
        general = sym next_general,
    )
}

/// A stealing loop's next chunk (`omp_hot` tagged): out of line, so that the shared-counter
/// path above stays a leaf with no registers to save (inlined here, this path's call to
/// `refill` gave every dynamic chunk a frame of four pushes and pops).
#[inline(never)]
extern "C" fn next_lane(istart: *mut u64, iend: *mut u64, hot: u64) -> bool {
    // SAFETY: a tagged `omp_hot` is this thread's lane in its current task's loop
    // (`fast_slot`), alive with its team.
    let lane = unsafe { &*((hot & !LANE_TAG) as *const Lane) };
    let got = match lane.take() {
        Some(k) => Some(k),
        None => refill(lane),
    };
    let Some(k) = got else {
        return false;
    };
    let d = lane.share().desc();
    let lo = k * d.chunk;
    // SAFETY: the program's out arguments (8 bytes each).
    unsafe {
        *istart = d.value(lo);
        *iend = d.value((lo + d.chunk).min(d.n));
    }
    true
}

#[inline(never)]
extern "C" fn next_general(istart: *mut u64, iend: *mut u64) -> bool {
    let c = thread::ctx();
    match next_range(c) {
        Some((lo, hi)) => {
            // SAFETY: the slot is entered.
            let d = unsafe { (*c.cur.slot).desc() };
            // SAFETY: the program's out arguments (8 bytes each).
            unsafe {
                *istart = d.value(lo);
                *iend = d.value(hi);
            }
            true
        }
        None => false,
    }
}

fn next_range(c: &mut Ctx) -> Option<(u64, u64)> {
    if c.cur.slot.is_null() {
        return None;
    }
    // SAFETY: the current construct's slot, alive with its team.
    let slot = unsafe { &*c.cur.slot };
    if c.cur.ordered && c.cur.has {
        pass_ordered(slot, c.cur.lo, c.cur.hi);
    }
    let d = slot.desc();
    let got = match d.kind {
        SCHED_DYNAMIC if d.steal => {
            // SAFETY: a stealing loop's cursor has this thread's lane (`Cursor::entered`).
            let lane = unsafe { &*c.cur.lane };
            lane.take().or_else(|| refill(lane)).map(|k| (k * d.chunk, (k * d.chunk + d.chunk).min(d.n)))
        }
        SCHED_DYNAMIC => dynamic_range(slot, d),
        SCHED_GUIDED => guided_range(slot, d, c.nthreads as u64),
        _ => static_range(d, c.id as u64, c.nthreads as u64, &mut c.cur.trip),
    };
    match got {
        Some((lo, hi)) => {
            c.cur.lo = lo;
            c.cur.hi = hi;
            c.cur.has = true;
        }
        None => c.cur.has = false,
    }
    got
}

/// The chunk of a stealing loop when this thread's lane is empty (`steal::refill`).
#[inline(never)]
fn refill(lane: &Lane) -> Option<u64> {
    let slot = lane.share();
    steal::refill(lane, slot.lanes(), slot.desc().nchunks(), &slot.next.0)
}

/// The next dynamic chunk (of an ordered loop, or a sections construct's next section).
fn dynamic_range(slot: &WorkShare, d: &Desc) -> Option<(u64, u64)> {
    let lo = slot.next.0.fetch_add(d.chunk, Ordering::Relaxed);
    (lo < d.n).then(|| (lo, (lo + d.chunk).min(d.n)))
}

/// The next guided chunk: a share of what remains, at least `chunk`.
#[inline(never)]
fn guided_range(slot: &WorkShare, d: &Desc, nth: u64) -> Option<(u64, u64)> {
    let mut lo = slot.next.0.load(Ordering::Relaxed);
    loop {
        if lo >= d.n {
            return None;
        }
        let q = (d.n - lo).div_ceil(nth).max(d.chunk);
        let hi = (lo + q).min(d.n);
        match slot.next.0.compare_exchange_weak(lo, hi, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return Some((lo, hi)),
            Err(v) => lo = v,
        }
    }
}

/// Thread `t` of `nth`'s `trip`-th static chunk.
#[inline(never)]
fn static_range(d: &Desc, t: u64, nth: u64, trip: &mut u64) -> Option<(u64, u64)> {
    // A team of one (an orphaned loop, or `num_threads(1)`) gets the whole range as one chunk
    // whatever the chunk size, as libgomp gives it (`gomp_iter_static_next`): gcc's lowering
    // of some clauses computes their values once per chunk (a `linear` variable of an
    // `ordered` loop is set at each chunk's start and not stepped inside it), so the chunking
    // shows in the program's results.
    if d.chunk == 0 || nth == 1 {
        if *trip > 0 {
            return None;
        }
        *trip = 1;
        let (q, r) = (d.n / nth, d.n % nth);
        let lo = t * q + t.min(r);
        let hi = lo + q + (t < r) as u64;
        return (lo < hi).then_some((lo, hi));
    }
    let i = (*trip as u128 * nth as u128 + t as u128) * d.chunk as u128;
    if i >= d.n as u128 {
        return None;
    }
    *trip += 1;
    let lo = i as u64;
    Some((lo, (lo + d.chunk).min(d.n)))
}

/// Waits until the chunk starting at `lo` is the oldest unfinished one, then hands the
/// ordered turn to the chunk after it. Out of line: the chunk path of unordered loops stays
/// short.
#[inline(never)]
fn pass_ordered(slot: &WorkShare, lo: u64, hi: u64) {
    wait::wait_until(&slot.ordered_moved, || slot.ordered.load(Ordering::Acquire) == lo);
    slot.ordered.store(hi, Ordering::Release);
    slot.ordered_moved.bump();
}

/// GOMP_ordered_start: waits for this thread's chunk's turn.
pub fn ordered_start() {
    let c = thread::ctx();
    if c.cur.slot.is_null() || !c.cur.has {
        return;
    }
    // SAFETY: the current construct's slot.
    let slot = unsafe { &*c.cur.slot };
    let lo = c.cur.lo;
    wait::wait_until(&slot.ordered_moved, || slot.ordered.load(Ordering::Acquire) == lo);
}

/// Ends the current loop or sections construct; `barrier` unless `nowait`.
pub fn end(barrier: bool) {
    let c = leave_construct();
    if barrier {
        team_of(c).barrier_wait();
    }
}

/// Ends the current loop or sections construct in a cancellable region (GOMP_loop_end_cancel):
/// its barrier is cancellable; true if the region is cancelled.
pub fn end_cancel() -> bool {
    let c = leave_construct();
    team_of(c).barrier_wait_cancel()
}

fn leave_construct() -> &'static mut Ctx {
    let c = thread::ctx();
    if !c.cur.slot.is_null() {
        // SAFETY: the current construct's slot.
        let slot = unsafe { &*c.cur.slot };
        if c.cur.ordered && c.cur.has {
            pass_ordered(slot, c.cur.lo, c.cur.hi);
        }
        c.cur = Cursor::NONE;
        thread::set_hot(fast_slot(&c.cur));
        leave(team_of(c), slot);
    }
    c
}

/// A sections construct of `count` sections is a dynamic loop over 1..=count, one at a time.
pub fn sections_loop(count: u32) -> Loop {
    Loop {
        kind: SCHED_DYNAMIC,
        chunk: 1,
        start: 1,
        end: count as u64 + 1,
        incr: 1,
        signed: true,
        up: true,
        ordered: false,
    }
}

/// GOMP_sections_start: enters a sections construct of `count` sections and returns the
/// number (from 1) of the first this thread runs, 0 for none.
pub fn sections_start(count: u32, mem: *mut *mut u8, red: *mut usize) -> u32 {
    let l = sections_loop(count);
    let mut first = 0u64;
    let mut end = 0u64;
    if start(&l, &mut first, &mut end, mem, red) {
        first as u32
    } else {
        0
    }
}

/// GOMP_sections_next.
pub fn sections_next() -> u32 {
    let mut first = 0u64;
    let mut end = 0u64;
    if next(&mut first, &mut end) {
        first as u32
    } else {
        0
    }
}

/// GOMP_single_start: true for the first thread of the team to reach this single.
pub fn single_start() -> bool {
    let c = thread::ctx();
    let team = team_of(c);
    c.single_seq += 1;
    let s = c.single_seq;
    team.single.0.compare_exchange(s - 1, s, Ordering::AcqRel, Ordering::Relaxed).is_ok()
}

/// GOMP_single_copy_start: null for the thread that runs the single; the others wait for it
/// and get its data.
pub fn single_copy_start() -> *mut u8 {
    let c = thread::ctx();
    let (slot, first) = enter(c);
    if first {
        publish(c, slot);
        c.cur = Cursor { slot, ..Cursor::NONE };
        thread::set_hot(fast_slot(&c.cur));
        return core::ptr::null_mut();
    }
    team_of(c).barrier_wait();
    let data = slot.copy.load(Ordering::Acquire);
    leave(team_of(c), slot);
    data
}

/// GOMP_single_copy_end: the single's thread hands `data` to the others.
pub fn single_copy_end(data: *mut u8) {
    let c = thread::ctx();
    let slot = c.cur.slot;
    if slot.is_null() {
        return;
    }
    // SAFETY: the slot this thread entered in single_copy_start.
    let slot = unsafe { &*slot };
    slot.copy.store(data, Ordering::Release);
    c.cur = Cursor::NONE;
    thread::set_hot(fast_slot(&c.cur));
    team_of(c).barrier_wait();
    leave(team_of(c), slot);
}
