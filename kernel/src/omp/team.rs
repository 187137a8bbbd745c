//! Teams: fork and join of parallel regions, the team barrier, and the pool of worker threads.
//!
//! A master keeps the team it led at each nesting level (and its workers) for the next region,
//! so a region in a loop costs the master one store per worker to start them and one counter to
//! wait on: no allocation, no lock, no system call. Workers come from the pool of idle ones or
//! are made with the program's `pthread_create`; each is pinned to the CPU `master + i`.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::barrier::Barrier;
use super::tasks::Queue;
use super::thread::{self, Ctx};
use super::wait::Word;
use super::work::{WorkShare, SLOTS};
use crate::sync::SpinLock;

pub type Outlined = extern "C" fn(*mut u8);

/// A thread that runs regions for masters. On cache lines of its own: the master writes it to
/// start a region and the worker polls it, so heap data beside it would move with it.
#[repr(align(128))]
pub struct Worker {
    /// Bumped by the master to start a region (after it set `team` and `id`).
    go: Word,
    team: UnsafeCell<*const Team>,
    id: UnsafeCell<u32>,
    cpu: UnsafeCell<usize>,
    /// The team whose tasks the worker watches after its part of a region (`linger`), where it
    /// may sleep on that team's task word instead of `go`; null before its first region. It is
    /// not cleared when the worker stops lingering: a stale team costs the next `start` one
    /// look at that team's sleepers (and at worst a spurious wake-up), where clearing it cost
    /// the worker a locked store on the line the master had just written, before it could
    /// start its part of the region.
    lingering: AtomicPtr<Team>,
}

// SAFETY: `team`, `id` and `cpu` are written by the master only while the worker waits for `go`
// (or lingers), and read by the worker only after it saw `go` change (release/acquire on `go`).
unsafe impl Sync for Worker {}
unsafe impl Send for Worker {}

impl Worker {
    /// Bumps `go`, and wakes the worker if it sleeps lingering on a team's task word.
    fn start(&self) {
        self.go.bump();
        // After the bump (both SeqCst): a worker that registers to linger after this load sees
        // `go` changed before it sleeps (`linger`).
        let t = self.lingering.load(Ordering::SeqCst);
        if !t.is_null() {
            // SAFETY: teams are never freed.
            let team: &Team = unsafe { &*t };
            team.tasks.signal.nudge();
        }
    }
}

/// `Team::remaining`'s word: the workers still in the region (low bits) and the region's
/// generation. A worker that has left may come back to help with tasks the region still makes
/// (`linger`) only while the region is the one it left: a compare-and-swap on the whole word,
/// which fails once the master has started another region on the team (`fork` changes the
/// generation). Between the master's join and that fork nobody queues tasks on the team.
///
/// On cache lines of its own: lingering workers read it while the master prepares the team's
/// other fields for the next region (`fork`); next to them, the EPCC `parallel` row went from
/// 0.34-0.38 to 0.41-1.55 us.
#[repr(align(128))]
struct Presence(Word);

impl core::ops::Deref for Presence {
    type Target = Word;
    fn deref(&self) -> &Word {
        &self.0
    }
}

mod presence {
    pub const COUNT: u32 = (1 << 17) - 1;
    pub const GENERATION: u32 = !COUNT;
    pub const GENERATION_ONE: u32 = 1 << 17;
}

/// Idle workers that belong to no team.
static POOL: SpinLock<Vec<usize>> = SpinLock::new(Vec::new());
/// Teams of nesting levels beyond the kept ones, with their workers, for the next such region.
/// Never freed: a worker may still touch its last team's counter after the master moved on.
static SPARE_TEAMS: SpinLock<Vec<usize>> = SpinLock::new(Vec::new());

/// Ends the idle workers a thread outside any region can reach (`omp_pause_resource` at level
/// 0): those of the teams it keeps, of the spare teams and of the pool. Their threads return
/// from `worker_main` (the program's pthread ends, and its TLS, threadprivate data, with it);
/// the next region makes new ones.
pub fn end_idle_workers() {
    end_kept_workers(thread::this());
    for &t in SPARE_TEAMS.lock().iter() {
        // SAFETY: a spare team has no master and runs no region; its workers wait for `go`.
        end_workers(unsafe { &mut (*(t as *mut Team)).workers });
    }
    let pool = core::mem::take(&mut *POOL.lock());
    for w in pool {
        // SAFETY: pool entries are leaked workers, alive for good, idle.
        stop(unsafe { &*(w as *const Worker) });
    }
}

/// The current program thread ends (`exit`, the program goes on): the workers of the teams
/// it kept end too, as libgomp ends an exiting thread's pool of workers, so that their threads
/// return and their thread-local objects are destroyed (a `std::thread` that ran a region and
/// was joined left its workers waiting for good, their `thread_local` destructors never run).
/// Not while the thread is inside a region: a thread that ends there leaves its team as it is.
pub fn end_workers_of_exiting_thread() {
    let t = crate::sched::current();
    // SAFETY: the current thread's record; only this thread uses its `omp` field.
    if unsafe { (*t).omp.is_null() } {
        return;
    }
    let st = thread::this();
    if !st.outside_regions() {
        return;
    }
    end_kept_workers(st);
    for &t in st.device_hot.iter().filter(|t| !t.is_null()) {
        // SAFETY: as in `end_kept_workers`: this thread runs no region of its kept teams.
        end_workers(unsafe { &mut (*t).workers });
    }
}

/// Ends the workers of the teams the current thread `st` keeps (it runs no region of them).
fn end_kept_workers(st: &mut thread::OmpThread) {
    for &t in st.hot.iter().filter(|t| !t.is_null()) {
        // SAFETY: this thread leads its kept teams and runs none of their regions now.
        end_workers(unsafe { &mut (*t).workers });
    }
}

fn end_workers(workers: &mut Vec<&'static Worker>) {
    for w in workers.drain(..) {
        stop(w);
    }
}

/// Tells an idle worker to end: a null team.
fn stop(w: &Worker) {
    // SAFETY: the worker is idle (it waits for `go`), see `Worker`.
    unsafe { *w.team.get() = core::ptr::null() };
    w.start();
}

/// A forked child: the pooled workers and spare teams were the parent's threads.
pub fn forget_workers() {
    POOL.lock().clear();
    SPARE_TEAMS.lock().clear();
}

/// `Team::single`'s 128 bytes.
#[repr(align(128))]
pub struct Single(pub AtomicU64);

pub struct Team {
    pub nthreads: u32,
    pub level: u32,
    pub active_level: u32,
    func: Option<Outlined>,
    data: *mut u8,
    /// The task that encountered the region.
    pub parent: *const Ctx,
    /// ICVs of the team's implicit tasks.
    pub icv: super::icv::Icv,
    pub barrier: Barrier,
    /// Deferred tasks of the region.
    pub tasks: Queue,
    /// Workers that have not finished the region yet (the master waits for 0), with the
    /// region's generation (`presence`).
    remaining: Presence,
    /// Singles won so far: on a line of its own, since every single's winner writes it and
    /// the fields around it are read by every thread.
    pub single: Single,
    pub work: [WorkShare; SLOTS],
    /// Work shares of constructs whose ring slot was still in use (see work.rs).
    pub overflow: super::work::Overflow,
    workers: Vec<&'static Worker>,
    /// The first work share was described by the master (a combined parallel construct).
    pub prepared: bool,
    /// How the team's threads are placed (the proc_bind clause, else the encountering task's
    /// bind-var; `places::BIND_*`).
    pub placement: u32,
    /// Its threads show their affinity lines as they start (OMP_DISPLAY_AFFINITY, see
    /// `affinity::team_shows`).
    pub show_affinity: bool,
    /// The taskgroup the implicit tasks start in (a region with task reductions).
    pub group: Option<alloc::sync::Arc<super::tasks::Group>>,
    /// The region is cancelled (`cancel parallel`, see `cancel`).
    pub cancelled: AtomicBool,
    /// The loop or sections construct cancelled: 1 + the number of barriers its threads had
    /// passed when it was (0: none). Those that pass the construct's closing barrier then
    /// count past it, so a stale mark never needs clearing (see `cancel`).
    pub ws_cancelled: AtomicU32,
    /// A team of one that defers its tasks: every region's team of one, as libgomp's (not the
    /// work-sharing team outside any region, where libgomp has no team and runs tasks at
    /// once). Its barriers and its end run them.
    pub defers_tasks: AtomicBool,
    /// Its contention group's busy count, and the threads the team added to it (`join` gives
    /// them back).
    busy: *const AtomicU32,
    reserved: u32,
}

impl Team {
    fn new() -> Box<Team> {
        let t = Box::new(Team {
            nthreads: 1,
            level: 0,
            active_level: 0,
            func: None,
            data: core::ptr::null_mut(),
            parent: core::ptr::null(),
            icv: super::icv::initial(),
            barrier: Barrier::new(),
            tasks: Queue::new(),
            remaining: Presence(Word::new(0)),
            single: Single(AtomicU64::new(0)),
            work: [const { WorkShare::new() }; SLOTS],
            overflow: super::work::Overflow::new(),
            workers: Vec::new(),
            prepared: false,
            group: None,
            placement: 0,
            show_affinity: false,
            cancelled: AtomicBool::new(false),
            ws_cancelled: AtomicU32::new(0),
            defers_tasks: AtomicBool::new(false),
            busy: core::ptr::null(),
            reserved: 0,
        });
        super::work::reset(&t.work);
        t
    }

    /// The team's barrier: returns when every thread has arrived and every task is done.
    pub fn barrier_wait(&self) {
        self.wait_at_barrier(None);
    }

    /// A cancellable barrier: as `barrier_wait`, but returns early, with true, when the region
    /// is cancelled.
    pub fn barrier_wait_cancel(&self) -> bool {
        self.wait_at_barrier(Some(&self.cancelled))
    }

    fn wait_at_barrier(&self, cancelled: Option<&AtomicBool>) -> bool {
        let c = thread::ctx();
        c.barriers = c.barriers.wrapping_add(1);
        if self.nthreads > 1 {
            self.barrier.wait(c.id, self.nthreads, &self.tasks, cancelled)
        } else {
            if self.defers_tasks.load(Ordering::Relaxed) {
                self.tasks.drain();
            }
            cancelled.is_some_and(|f| f.load(Ordering::Relaxed))
        }
    }
}

/// The number of threads a region asked for `requested` (0: nthreads-var) gets, and how many
/// it added to the busy count of its contention group (`busy`).
///
/// thread-limit-var bounds the threads of a contention group (its initial thread and those of
/// every team inside): with a limit, the team gets no more than the limit less the threads
/// already busy in the group's other teams (the specification's ThreadsAvailable; libgomp
/// gives that many too when a region asks for more).
fn team_size(outer: &Ctx, requested: u32, busy: &AtomicU32) -> (u32, u32) {
    if outer.active_level >= outer.icv.max_active_levels {
        return (1, 0);
    }
    let mut n = if requested == 0 { outer.icv.nthreads } else { requested };
    if outer.icv.dynamic {
        // dyn-var: libgomp's adjustment (gomp_dynamic_max_threads) gives no more threads than
        // processors, nor than nthreads-var; the host's load average, which libgomp also
        // subtracts, says nothing about the VM's own CPUs.
        n = n.min(super::icv::num_procs().min(outer.icv.nthreads).max(1));
    }
    let limit = outer.icv.thread_limit.max(1);
    let n = n.clamp(1, limit);
    if limit >= i32::MAX as u32 || n == 1 {
        return (n, 0);
    }
    let mut b = busy.load(Ordering::Relaxed);
    loop {
        // The group's initial thread counts too: the limit less it and the busy ones.
        let extra = (n - 1).min(limit.saturating_sub(1).saturating_sub(b));
        match busy.compare_exchange_weak(b, b + extra, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return (extra + 1, extra),
            Err(now) => b = now,
        }
    }
}

/// Starts a region running `func(data)` on a team of `requested` threads (0: nthreads-var),
/// placed by the `proc_bind` clause in the low 3 bits of `flags` (libgomp's GOMP_parallel
/// flags; 0: bind-var);
/// the caller runs thread 0's part with `run_master` and ends it with `join`. `prepare` sets
/// up the team's first work share before the workers start (combined parallel loops).
pub fn fork(
    func: Outlined,
    data: *mut u8,
    requested: u32,
    flags: u32,
    prepare: impl FnOnce(&mut Team, &Ctx) -> bool,
) -> *mut Team {
    let st = thread::this();
    let outer: &Ctx = thread::ctx();
    let busy = thread::busy_of(outer);
    let (mut n, mut reserved) = team_size(outer, requested, busy);
    let lvl = outer.level as usize;
    let team_ptr = match st.hot.get(lvl) {
        Some(&t) if !t.is_null() => t,
        Some(_) => {
            let t = Box::into_raw(Team::new());
            st.hot[lvl] = t;
            t
        }
        None => match SPARE_TEAMS.lock().pop() {
            Some(t) => t as *mut Team,
            None => Box::into_raw(Team::new()),
        },
    };
    // SAFETY: this master owns the team; its previous region has been joined.
    let team = unsafe { &mut *team_ptr };
    if n > 1 {
        // Fewer threads than asked for when no more can be made (the specification leaves that
        // to the implementation, and EPCC-style tests accept it): the program's memory is
        // resident here, so thread stacks are real memory, where Linux only reserves them.
        let made = gather_workers(team, n as usize - 1) as u32 + 1;
        if made < n {
            let shed = (n - made).min(reserved);
            if shed != 0 {
                busy.fetch_sub(shed, Ordering::AcqRel);
                reserved -= shed;
            }
            n = made;
        }
    }
    open_region(team, n);
    // Fields are written only when they change: a region in a loop (same function, data and
    // team) then leaves the team's lines shared in the workers' caches, and a worker's start
    // reads them without waiting for a line from the master's CPU.
    let level = outer.level + 1;
    let active_level = outer.active_level + (n > 1) as u32;
    // As libgomp: the proc_bind clause counts only when bind-var is not false, and it is the
    // new implicit tasks' bind-var too, unless OMP_PROC_BIND's list names one for their level.
    let placement = if flags & 7 != 0 && outer.icv.bind != 0 { flags & 7 } else { outer.icv.bind };
    let mut icv = outer.icv;
    (icv.nthreads, icv.bind) = super::icv::level_defaults(level, outer.icv.nthreads, placement);
    let show_affinity = super::affinity::display_on()
        && super::affinity::team_shows(level, n, || {
            // The threads' places, as `member` will give them.
            let (bind, place, part) = (placement, outer.place, outer.part);
            let bound = super::places::count() > 0 && bind != 0 && place != super::places::NONE;
            (0..n).map(
                move |id| {
                    if bound {
                        super::places::assign(bind, place, part, n, id).0
                    } else {
                        super::places::NONE
                    }
                },
            )
        });
    set(&mut team.nthreads, n);
    set(&mut team.busy, busy as *const AtomicU32);
    set(&mut team.reserved, reserved);
    set(&mut team.level, level);
    set(&mut team.active_level, active_level);
    set(&mut team.func, Some(func));
    set(&mut team.data, data);
    set(&mut team.parent, outer as *const Ctx);
    set(&mut team.placement, placement);
    set(&mut team.icv, icv);
    set(&mut team.show_affinity, show_affinity);
    if *team.single.0.get_mut() != 0 {
        *team.single.0.get_mut() = 0;
    }
    super::work::reset(&team.work);
    team.overflow.reset();
    if team.group.is_some() {
        team.group = None;
    }
    if *team.cancelled.get_mut() {
        *team.cancelled.get_mut() = false;
    }
    if *team.ws_cancelled.get_mut() != 0 {
        *team.ws_cancelled.get_mut() = 0;
    }
    // A team of one defers its tasks as libgomp's does (its barriers and its end run them), so
    // that a program of one thread sees its tasks in libgomp's order: code after a `task`
    // before the task, a `taskwait`'s children newest first, a barrier's tasks oldest first.
    set(team.defers_tasks.get_mut(), n == 1);
    team.tasks.set_solo(n == 1);
    team.barrier.prepare(n as usize);
    let prepared = prepare(team, outer);
    set(&mut team.prepared, prepared);
    if n > 1 {
        place_workers(team);
        for (i, w) in team.workers.iter().take(n as usize - 1).enumerate() {
            // SAFETY: the worker is idle (it waits for `go`, or lingers), see `Worker`.
            unsafe {
                set(&mut *w.team.get(), team_ptr as *const Team);
                set(&mut *w.id.get(), i as u32 + 1);
            }
            w.start();
        }
    }
    team_ptr
}

/// Stores `value` in `field` unless it holds it already (see `fork`).
fn set<T: PartialEq>(field: &mut T, value: T) {
    if *field != value {
        *field = value;
    }
}

/// Starts a new generation of `team`'s presence word with its `n - 1` workers counted in,
/// before anything of the team changes: a worker that came back into the last region after
/// its join (it saw that region's task just before the master ran it) is waited for first,
/// and one still lingering cannot come back into this region (`linger`).
fn open_region(team: &Team, n: u32) {
    if n - 1 > presence::COUNT {
        // (Its worker threads could not all be made anyway: 16 KiB kernel stacks alone.)
        fatal("a team of more than 131,072 threads");
    }
    let word = &team.remaining.value;
    loop {
        let v = word.load(Ordering::Acquire);
        if v & presence::COUNT != 0 {
            super::wait::wait_until(&team.remaining.0, || word.load(Ordering::Acquire) & presence::COUNT == 0);
            continue;
        }
        let generation = v.wrapping_add(presence::GENERATION_ONE) & presence::GENERATION;
        if word.compare_exchange(v, generation | (n - 1), Ordering::SeqCst, Ordering::Acquire).is_ok() {
            return;
        }
    }
}

/// Runs thread 0's part of the region and waits for the others.
pub fn run_master_and_join(team_ptr: *mut Team) {
    // SAFETY: the team stays alive while its master runs the region.
    let team = unsafe { &*team_ptr };
    let st = thread::this();
    let outer = st.task();
    let mut me = member(team, 0);
    st.set_task(&mut me);
    if team.show_affinity {
        super::affinity::display(&super::affinity::format());
    }
    if let Some(f) = team.func {
        f(team.data);
    }
    join(team_ptr, outer);
}

/// Ends a region started by `fork` (thread 0's part done): waits for the workers, restores the
/// master's task, and frees a team beyond the kept levels.
pub fn join(team_ptr: *mut Team, outer: *mut Ctx) {
    // SAFETY: as in run_master_and_join.
    let team = unsafe { &*team_ptr };
    team.barrier.leave(0);
    if team.nthreads > 1 {
        team.tasks.drain();
        // A worker that came back to help (`linger`) is counted in again: waited for too.
        let word = &team.remaining.value;
        super::wait::wait_until(&team.remaining.0, || word.load(Ordering::Acquire) & presence::COUNT == 0);
        if team.cancelled.load(Ordering::Relaxed) {
            team.barrier.reset();
        }
    } else if team.defers_tasks.load(Ordering::Relaxed) {
        team.tasks.drain();
    }
    if team.reserved != 0 {
        // SAFETY: see `Ctx::busy`.
        unsafe { (*team.busy).fetch_sub(team.reserved, Ordering::AcqRel) };
    }
    let st = thread::this();
    st.set_task(outer);
    // SAFETY: `outer` is the master's enclosing task, alive.
    let lvl = unsafe { (*outer).level } as usize;
    if lvl >= st.hot.len() {
        SPARE_TEAMS.lock().push(team_ptr as usize);
    }
}

/// Gives up kept teams (their master no longer leads them): they become spare teams for
/// anyone's next region.
pub fn retire(teams: &[*mut Team]) {
    let mut spare = SPARE_TEAMS.lock();
    spare.extend(teams.iter().filter(|t| !t.is_null()).map(|&t| t as usize));
}

/// The implicit task record of thread `id` of `team`. Built from the team alone: every
/// thread of every region makes one, and `Ctx::initial` reads the defaults under a lock that
/// all of them would then pass around (a line moved between the CPUs at each start).
pub fn member(team: &Team, id: u32) -> Ctx {
    // SAFETY: the encountering task is alive while its region runs.
    let outer = unsafe { &*team.parent };
    let (place, part) = if super::places::count() > 0 && team.placement != 0 && outer.place != super::places::NONE {
        super::places::assign(team.placement, outer.place, outer.part, team.nthreads, id)
    } else {
        (super::places::NONE, super::places::Partition { first: 0, len: 0 })
    };
    let (ws_seq, cur) =
        if team.prepared { (1, super::work::prepared_cursor(team, id)) } else { (0, super::work::Cursor::NONE) };
    Ctx {
        team,
        id,
        nthreads: team.nthreads,
        level: team.level,
        active_level: team.active_level,
        parent: team.parent,
        icv: team.icv,
        ws_seq,
        single_seq: 0,
        barriers: 0,
        cur,
        in_final: false,
        node: None,
        group: team.group.clone(),
        place,
        part,
        // A parallel region inside a `teams` region belongs to the encountering team.
        num_teams: outer.num_teams,
        team_num: outer.team_num,
        busy: team.busy,
        lock_owner: core::ptr::null_mut(),
    }
}

/// A team of one for work sharing outside any parallel region (one per thread that asks).
pub fn solo() -> *const Team {
    Box::into_raw(Team::new())
}

/// Gives the team up to `needed` workers (from the pool, or new threads); returns how many it
/// has, fewer only when no more threads can be made.
fn gather_workers(team: &mut Team, needed: usize) -> usize {
    if team.workers.len() < needed && POOL.lock().len() < needed - team.workers.len() {
        // New threads are made below (the program's `pthread_create`: its stack's mapping and
        // protection, ~0.5 ms on a PVM host): wake the halted vCPUs they go to now, so that
        // the host has them running by the time their threads are queued.
        let (home, ncpu) = (crate::cpu::id(), crate::sched::placement_cpus());
        for i in 0..needed.min(ncpu.saturating_sub(1)) {
            crate::sched::kick_if_halted((home + i + 1) % ncpu);
        }
    }
    while team.workers.len() < needed {
        let w = POOL.lock().pop().map(|p| p as *const Worker);
        let w = match w {
            // SAFETY: pool entries are leaked workers, alive for good.
            Some(p) => unsafe { &*p },
            None => {
                let capped = worker_cap_reached();
                let made = if capped { None } else { spawn_worker() };
                match made.or_else(take_spare_worker) {
                    Some(w) => w,
                    None => {
                        CAPPED.store(true, Ordering::Relaxed);
                        if capped {
                            no_more_workers(
                                "the program's memory would fall below a quarter free (worker stacks are resident)",
                            );
                        }
                        break;
                    }
                }
            }
        };
        team.workers.push(w);
    }
    team.workers.len().min(needed)
}

/// An idle worker of a spare team (a team of a nesting level beyond the kept ones, which no
/// master leads now: see `join`), taken from it when no new worker can be made. After a burst
/// of deep nesting, the spare teams held every worker the cap allowed, and a later team got
/// fewer threads than asked with most workers idle (a 3x2 nested region ran 4 threads after a
/// 2x3x5x8 one). The worker may still linger on its old team; `open_region` waits for such
/// a worker, whatever team it now serves, before that team's next region.
fn take_spare_worker() -> Option<&'static Worker> {
    let spare = SPARE_TEAMS.lock();
    spare.iter().find_map(|&t| {
        // SAFETY: a spare team has no master and runs no region; its worker list is changed
        // only under this lock while it is spare (a master takes the team out first).
        unsafe { (*(t as *mut Team)).workers.pop() }
    })
}

/// A team got fewer workers than asked because no more could be made (memory, or
/// `pthread_create` refused): from then on a worker
/// that ends its part of a region gives the workers of the teams it leads (idle now) back to
/// the pool, so that they serve whichever team needs them next. Without it, after a burst of
/// deep nesting the workers sat in the idle nested teams of idle workers, and a later team
/// got fewer threads than asked with most workers idle (a 3x2 nested region ran 4 threads
/// after a 2x3x5x8 one).
static CAPPED: AtomicBool = AtomicBool::new(false);

/// Gives the workers of the teams the current worker thread `st` leads (it runs none of their
/// regions now) to the pool (see `CAPPED`).
fn pool_led_workers(st: &mut thread::OmpThread) {
    let mut pool = POOL.lock();
    for &t in st.hot.iter().filter(|t| !t.is_null()) {
        // SAFETY: this thread leads its kept teams and runs none of their regions now; a
        // worker still lingering on one is waited for by that team's next `open_region`.
        pool.extend(unsafe { (*t).workers.drain(..) }.map(|w| w as *const Worker as usize));
    }
}

/// Whether the workers made so far are past the first ones and a new one would leave less
/// than a quarter of the program's memory free.
fn worker_cap_reached() -> bool {
    let anyway = WORKERS_ANYWAY.max(4 * crate::cpu::count());
    if WORKERS_MADE.load(Ordering::Relaxed) < anyway {
        return false;
    }
    let (total, free) = crate::linux::usermem::shown_bytes();
    free < total / WORKERS_LEAVE_FREE
}

/// Places the team's workers on the CPUs after the master's (among the scheduler's placement
/// CPUs, unless the team is bound to places).
fn place_workers(team: &mut Team) {
    let home = crate::cpu::id();
    let ncpu = crate::sched::placement_cpus();
    // SAFETY: the encountering task is alive while its region runs.
    let outer = unsafe { &*team.parent };
    let bound = super::places::count() > 0 && team.placement != 0 && outer.place != super::places::NONE;
    for (i, w) in team.workers.iter().take(team.nthreads as usize - 1).enumerate() {
        let id = i as u32 + 1;
        // With more vCPUs than host CPUs the team is packed on the first `ncpu` vCPUs, a bound
        // one too: its place's vCPU folded onto them (a thread keeps its place, which is what
        // the program sees; spread over every vCPU, its waits cost the host's scheduling of
        // the awaited vCPU: CloverLeaf at `--cpus 4` on 2 host CPUs with
        // OMP_PROC_BIND=spread OMP_PLACES=cores took 275 s, 4.8 s unbound).
        let by_place = bound
            .then(|| super::places::cpu_for(team.placement, outer.place, outer.part, team.nthreads, id))
            .flatten()
            .map(|c| c % ncpu);
        // SAFETY: idle worker, see `Worker`.
        unsafe { set(&mut *w.cpu.get(), by_place.unwrap_or((home + i + 1) % ncpu)) };
    }
}

type PthreadCreate = extern "C" fn(*mut u64, *const u8, extern "C" fn(*mut u8) -> *mut u8, *mut u8) -> i32;
type AttrFn = extern "C" fn(*mut u8) -> i32;
type AttrSetStack = extern "C" fn(*mut u8, usize) -> i32;

/// Beyond the first `WORKERS_ANYWAY` workers (or 4 per CPU, if more), a new worker must leave
/// a quarter of the program's memory free (`usermem::shown_bytes`: capped at the host's): its
/// stack is resident, and a team of thousands would otherwise take what the program needs
/// next. The first ones are made whenever `pthread_create` can (a program that filled its
/// memory before its first region still gets its teams).
const WORKERS_ANYWAY: usize = 64;
const WORKERS_LEAVE_FREE: u64 = 4;
/// Workers made so far.
static WORKERS_MADE: AtomicUsize = AtomicUsize::new(0);

/// Makes a worker thread with the program's own `pthread_create`, so it has the program's TLS.
/// None if it cannot be made (`pthread_create` failed). The caller checks the memory first
/// (`worker_cap_reached`).
fn spawn_worker() -> Option<&'static Worker> {
    let w: &'static Worker = Box::leak(Box::new(Worker {
        go: Word::new(0),
        team: UnsafeCell::new(core::ptr::null()),
        id: UnsafeCell::new(0),
        cpu: UnsafeCell::new(usize::MAX),
        lingering: AtomicPtr::new(core::ptr::null_mut()),
    }));
    let create = super::import(super::IMPORT_PTHREAD_CREATE);
    if create == 0 {
        // The monitor lets a program without pthread_create through only when it has no
        // function that makes a team.
        fatal("a team needs the program's pthread_create, which it does not have");
    }
    // pthread_attr_t is 56 bytes in glibc and musl.
    let mut attr = [0u64; 8];
    let stack = super::icv::stack_size();
    let mut tid = 0u64;
    // SAFETY: the addresses are the program's own functions (the loader checked the imports),
    // called with the C ABI and arguments of the right types; `worker_main` runs in the
    // program's ring like the rest of this runtime.
    let rc = unsafe {
        let attr_ptr = if stack != 0 {
            let init: AttrFn = core::mem::transmute(super::import(super::IMPORT_ATTR_INIT) as usize);
            let set: AttrSetStack = core::mem::transmute(super::import(super::IMPORT_ATTR_SETSTACKSIZE) as usize);
            init(attr.as_mut_ptr() as *mut u8);
            set(attr.as_mut_ptr() as *mut u8, stack as usize);
            attr.as_ptr() as *const u8
        } else {
            core::ptr::null()
        };
        let create: PthreadCreate = core::mem::transmute(create as usize);
        let rc = create(&mut tid, attr_ptr, worker_main, w as *const Worker as *mut u8);
        if stack != 0 {
            let destroy: AttrFn = core::mem::transmute(super::import(super::IMPORT_ATTR_DESTROY) as usize);
            destroy(attr.as_mut_ptr() as *mut u8);
        }
        rc
    };
    if rc != 0 {
        // SAFETY: made above and seen by no thread (none was created).
        drop(unsafe { Box::from_raw(w as *const Worker as *mut Worker) });
        no_more_workers("pthread_create failed");
        return None;
    }
    WORKERS_MADE.fetch_add(1, Ordering::Relaxed);
    Some(w)
}

/// Says once that teams now get fewer threads than asked (the specification allows it; a
/// program that splits its work by the number it asked for rather than `omp_get_num_threads`
/// would compute less than it thinks, so it must not happen silently).
fn no_more_workers(why: &str) {
    static SAID: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        let made = WORKERS_MADE.load(Ordering::Relaxed);
        kprintln!(
            "hrt: OpenMP runtime: no worker thread beyond {made}: {why}; teams get fewer threads than asked (reported once)"
        );
    }
}

/// Ends the program with a message, as libgomp does on an error it cannot report.
pub fn fatal(what: &str) -> ! {
    kprintln!("hrt: OpenMP runtime: {what}");
    crate::linux::process::exit_program(1)
}

/// A worker's life: wait for a region, run its part, report done, repeat.
extern "C" fn worker_main(arg: *mut u8) -> *mut u8 {
    // SAFETY: `arg` is the leaked Worker this thread was made for.
    let w = unsafe { &*(arg as *const Worker) };
    let st = thread::this();
    let idle = st.task();
    let mut seen = 0;
    loop {
        seen = w.go.wait_while(seen);
        // SAFETY: set by the master before it bumped `go`.
        let (team_ptr, id, cpu) = unsafe { (*w.team.get(), *w.id.get(), *w.cpu.get()) };
        if team_ptr.is_null() {
            // Ended (`end_idle_workers`): so are the workers of the teams it led.
            end_kept_workers(st);
            return core::ptr::null_mut();
        }
        if super::icv::pin() && cpu < crate::cpu::count() && cpu != crate::cpu::id() {
            pin_to(cpu);
        } else if !super::icv::pin() && crate::cpu::id() >= crate::sched::placement_cpus() {
            // Unbound (OMP_PROC_BIND=false), but the team is packed on the first vCPUs
            // (`place_workers`): a worker made on another vCPU joins them, without a mask.
            move_to(cpu);
        }
        // SAFETY: the team lives until its master has seen every worker finish.
        let team = unsafe { &*team_ptr };
        let mut me = member(team, id);
        st.set_task(&mut me);
        if team.show_affinity {
            super::affinity::display(&super::affinity::format());
        }
        if let Some(f) = team.func {
            f(team.data);
        }
        team.tasks.drain();
        team.barrier.leave(id);
        st.set_task(idle);
        // After this the master may end the region and reuse the team: the worker only
        // watches its tasks, and comes back in only through `linger`'s compare-and-swap.
        if CAPPED.load(Ordering::Relaxed) {
            pool_led_workers(st);
        }
        let left = team.remaining.value.fetch_sub(1, Ordering::AcqRel);
        team.remaining.wake();
        linger(w, team, (&mut me, idle), left & presence::GENERATION, seen);
    }
}

/// A worker that has done its part of a region helps with the tasks the region's other threads
/// still make, until the master starts it again (`go` changes from `seen`) or starts another
/// region on the team. `me` is the worker's task record in the region, `idle` its own.
///
/// The region's end waits for every thread only through the master's join: a worker that
/// found no task left when its own part ended leaves at once (the common case, and the
/// master then waits for no one), but a master that makes tasks after that (`omp master`
/// with tasks, a taskloop in `single nowait`) ran them all alone (EPCC's taskloop rows took
/// the whole loop's time on one thread). So the worker watches the team's queue while it
/// waits for its next region, and comes back into the region's count to run what appears.
fn linger(w: &Worker, team: &Team, (me, idle): (&mut Ctx, *mut Ctx), generation: u32, seen: u32) {
    let word = &team.remaining.value;
    let started = || w.go.load() != seen;
    let ended = || word.load(Ordering::Acquire) & presence::GENERATION != generation;
    // The presence word is looked at once in 64 rounds only: the master's next fork writes it
    // just before `go`, and a worker that read it at every round stalled on that line first,
    // then on `go`'s (one more transfer between the CPUs before its part of the region could
    // start). Nothing waits for a worker to see that the region ended: it then only stops
    // watching the team's tasks, to wait for `go` alone.
    let rounds = core::cell::Cell::new(0u32);
    let ended_now_and_then = || {
        rounds.set(rounds.get().wrapping_add(1));
        rounds.get().is_multiple_of(64) && ended()
    };
    loop {
        w.lingering.store(team as *const Team as *mut Team, Ordering::SeqCst);
        super::wait::until(&team.tasks.signal, || started() || team.tasks.has_queued() || ended_now_and_then());
        if started() {
            return;
        }
        let mut v = word.load(Ordering::Acquire);
        loop {
            if v & presence::GENERATION != generation {
                // Another region: this worker joins it only through `go`.
                return;
            }
            match word.compare_exchange_weak(v, v + 1, Ordering::SeqCst, Ordering::Acquire) {
                Ok(_) => break,
                Err(now) => v = now,
            }
        }
        let st = thread::this();
        st.set_task(me);
        team.tasks.drain();
        st.set_task(idle);
        word.fetch_sub(1, Ordering::AcqRel);
        team.remaining.wake();
    }
}

/// Moves the current (unbound) thread to `cpu` if its CPU mask allows it, leaving the mask.
fn move_to(cpu: usize) {
    crate::sched::balance::keep_placed();
    let t = crate::sched::current();
    // SAFETY: the current thread's record.
    let mask = unsafe { (*t).affinity() };
    if cpu < crate::cpu::count() && (mask == [0; 4] || mask[cpu / 64] & (1 << (cpu % 64)) != 0) {
        crate::sched::migrate_current(cpu);
    }
}

/// Moves the current thread to `cpu` and keeps it there.
fn pin_to(cpu: usize) {
    crate::sched::balance::keep_placed();
    let t = crate::sched::current();
    let mut mask = [0; 4];
    mask[cpu / 64] |= 1 << (cpu % 64);
    // SAFETY: the current thread's record.
    unsafe { (*t).set_affinity(mask) };
    crate::sched::migrate_current(cpu);
}
