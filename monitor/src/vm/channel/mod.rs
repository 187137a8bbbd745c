//! The monitor's side of the forwarding channel (`hrt_abi::channel`): forwarded system calls
//! arrive as requests in guest memory and are served without a VM exit.
//!
//! Policy:
//! - `--service-threads N` polling threads (default 1) take requests while they arrive and
//!   spin `--service-spin` microseconds after the last one before they sleep; the default spin
//!   is long (1 ms) when the host has a core to spare beyond the vCPUs (of every MPI rank on
//!   this host, under `mpirun`), short (50 us) when the vCPUs already take every core, where a
//!   spinning thread would slow the guest. Outside MPI, halted vCPUs leave their cores free
//!   (the kernel counts them in `ChannelHeader::halted_cpus`): while one is, the short spin
//!   becomes the long one (`idle_spin`). A single-threaded program on `--cpus 2` of a
//!   two-core host that reads a block every ~65 us (md5sum) otherwise rang the doorbell, one
//!   VM exit, for 5,371 of its 6,198 reads.
//! - A request that finds them asleep rings the doorbell (one VM exit). The vCPU thread that
//!   takes that exit serves the pending requests itself, as a hypercall would, and wakes the
//!   pollers only if doorbells come close together (a burst), so a program that makes a call
//!   now and then costs what it cost before the channel and no host CPU between calls. Nor
//!   while the wake-ups are futile: pollers that, woken, went back to sleep without catching a
//!   call (the calls come further apart than their spin) would only take a host CPU from the
//!   vCPUs; every `PROBE`th such doorbell wakes them again to see whether the calls came closer.
//!   (Two MPI ranks on two cores, one `process_vm_readv` per message ~100 us apart: 85-200 us
//!   per message with the futile wake-ups, ~40-50 without; docs/benchmarks.md, OSU.)
//!   The waking vCPU thread keeps the pollers off its own host CPU first (`placement`), where
//!   the host scheduler would put them to preempt the very caller they are to serve.
//! - A call that may block for as long as another party pleases (`Forwarder::may_block`: reads
//!   and writes on pipes, terminals and sockets, polls, lock waits, opens) is handed to a
//!   worker thread of its own, created on demand (at most one per slot), so it never holds up
//!   the others; the guest thread that made it sleeps in the guest scheduler meanwhile. A
//!   read or write of a pipe or socket, or a poll without a time limit, that would wait is
//!   first tried again on every polling round for up to 200 us (`retries`): most such waits
//!   are short, and a worker's wake-up on the host cost more than the wait.
//! - The answer wakes a sleeping guest thread through its CPU's idle loop, or, when that CPU
//!   runs something else or halts, through an interrupt the monitor sends (KVM_SIGNAL_MSI).

mod host_siginfo;
pub mod host_signals;
mod placement;
mod profiler;
mod retries;
mod service;
mod workers;

use crate::forward::Tried;
use crate::kept_signals::wake_signal;
use std::os::unix::io::AsRawFd;

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use hrt_abi::channel::{
    Channel, ChannelSlot, COMPLETION_VECTOR, DONE, FILES_SHRANK_VECTOR, MONITOR_OP, SLOTS, SUBMITTED,
};
use hrt_abi::nr;
use kvm_ioctls::VmFd;

use super::memory::GuestRam;
use super::vcpu::Shared;
pub use profiler::ProfileSetup;

/// How the channel is served (`hrt run` options).
#[derive(Clone, Copy, Debug)]
pub struct ChannelConfig {
    /// Polling service threads.
    pub threads: u32,
    /// How long a polling thread spins after the last request before it sleeps.
    pub spin: Duration,
    /// The spin while fewer vCPUs run than the host has CPUs (the others halted).
    pub idle_spin: Duration,
    /// Whether a vCPU thread that wakes the pollers keeps them off its own host CPU
    /// (`placement`): not when the other cores run the vCPUs of this job's other MPI ranks,
    /// which a poller there would preempt.
    pub steer: bool,
    /// The host has a CPU to spare beyond the vCPUs (of every local MPI rank).
    pub spare: bool,
    /// The spin chosen by default, not by `--service-spin`: a long one then holds only while
    /// the host has a CPU to spare now (`host_load`), else it is the short one.
    pub adaptive: bool,
}

impl ChannelConfig {
    /// The defaults for `cpus` vCPUs on this host (see the module comment).
    pub fn defaults(cpus: u32, spin_us: Option<u64>, threads: Option<u32>) -> ChannelConfig {
        let host = crate::host_cpus::count();
        let ranks = local_ranks();
        let spare = host > cpus.saturating_mul(ranks);
        let spin = Duration::from_micros(spin_us.unwrap_or(if spare { LONG_SPIN_US } else { SHORT_SPIN_US }));
        // Other ranks' vCPUs, which this VM cannot see halt, may need the cores.
        let idle_spin = if spin_us.is_none() && ranks == 1 { Duration::from_micros(LONG_SPIN_US) } else { spin };
        let steer = spare || ranks == 1;
        let adaptive = spin_us.is_none();
        ChannelConfig { threads: threads.unwrap_or(1).max(1), spin, idle_spin, steer, spare, adaptive }
    }

    /// What `-v` says of the spin `defaults` chose for `cpus` vCPUs and why.
    pub fn describe(&self, cpus: u32) -> String {
        let host = crate::host_cpus::count();
        let ranks = local_ranks();
        let idle = if self.idle_spin != self.spin {
            format!(", {} µs while a vCPU is halted", self.idle_spin.as_micros())
        } else {
            String::new()
        };
        format!(
            "hrt: the channel's polling thread spins {} µs after the last request{idle} ({host} host CPU(s) for {ranks} local MPI rank(s) of {cpus} vCPU(s)){}",
            self.spin.as_micros(),
            if self.steer { "; a vCPU that wakes it keeps it off its own host CPU" } else { "" }
        )
    }
}

/// How many MPI ranks of this job run on this host (each in a VM like this one), as the MPI
/// launcher says (MPICH's Hydra, Open MPI); 1 outside MPI. Their vCPUs share the host's cores:
/// `mpirun -np 2 hrt run --cpus 1` on two cores leaves no core to spare for a spinning poller.
fn local_ranks() -> u32 {
    ["MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse::<u32>().ok())
        .unwrap_or(1)
        .max(1)
}

/// The pollers' spin after the last request with a host CPU to spare, and without.
const LONG_SPIN_US: u64 = 1000;
const SHORT_SPIN_US: u64 = 50;

/// Doorbells closer together than this wake the polling threads.
const BURST: Duration = Duration::from_millis(1);
/// Futile wake-ups in a row after which doorbells stop waking the pollers.
const FUTILE: u32 = 2;
/// While they are futile, one doorbell in this many wakes them anyway.
const PROBE: u32 = 8;

/// The registered channel: a pointer into guest RAM, valid for the VM's life.
#[derive(Clone, Copy)]
struct Area(*const Channel);

// SAFETY: the area is guest RAM mapped for the whole run; every access goes through atomics.
unsafe impl Send for Area {}
// SAFETY: as above.
unsafe impl Sync for Area {}

/// A request as copied out of its slot (the guest may change the slot meanwhile).
#[derive(Clone, Copy)]
pub(crate) struct Request {
    idx: usize,
    nr: u64,
    args: [u64; 6],
    /// Bytes a stream send already sent before it was handed to a worker for the rest
    /// (`Tried::Sent`): added to the worker's answer.
    sent: i64,
    /// The request is the rest of a pipe `writev` (`Tried::SentWritev`, `Forwarder::writev_tail`).
    writev_tail: bool,
}

pub struct Service {
    area: OnceLock<Area>,
    config: ChannelConfig,
    cpus: u32,
    /// The host's CPUs.
    host_cpus: u32,
    /// The VM, for completion interrupts (None in unit tests).
    vm: Option<Arc<VmFd>>,
    /// Rung (incremented) to wake the polling threads.
    bell: Mutex<u64>,
    bell_cv: Condvar,
    /// When the last doorbell rang (ns since `epoch`).
    last_bell: AtomicU64,
    /// Poller wake-ups in a row that caught no call before the poller slept again.
    futile_wakes: AtomicU32,
    /// Burst doorbells that did not wake the pollers since the last that did.
    skipped_bells: AtomicU32,
    epoch: std::time::Instant,
    workers: workers::Workers,
    /// Requests that would wait, tried again for a moment before a worker takes them.
    retries: retries::Retries,
    stopping: AtomicBool,
    msi_failed: AtomicBool,
    /// When each slot's worker was last signalled for a cancel (ns since `epoch`).
    last_kick: Vec<AtomicU64>,
    /// The polling threads, kept off the host CPU of a vCPU that wakes them.
    pollers: placement::Pollers,
    /// Whether the host has a CPU to spare now, of the given count (`host_load`; tests
    /// replace it).
    host_spare: fn(u32) -> bool,
    /// `--profile`: the rate and the images that name the samples.
    profile: OnceLock<ProfileSetup>,
}

impl Service {
    pub fn new(config: ChannelConfig, cpus: u32, vm: Option<Arc<VmFd>>) -> Service {
        Service {
            area: OnceLock::new(),
            config,
            cpus,
            host_cpus: {
                // Opened here, before the pollers' seccomp filter.
                crate::host_load::get();
                crate::host_cpus::count()
            },
            vm,
            bell: Mutex::new(0),
            bell_cv: Condvar::new(),
            last_bell: AtomicU64::new(0),
            futile_wakes: AtomicU32::new(0),
            skipped_bells: AtomicU32::new(0),
            epoch: std::time::Instant::now(),
            workers: workers::Workers::new(hrt_abi::channel::SLOTS),
            retries: Default::default(),
            stopping: AtomicBool::new(false),
            msi_failed: AtomicBool::new(false),
            last_kick: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
            pollers: placement::Pollers::new(),
            host_spare: |cpus| crate::host_load::get().spare(cpus),
            profile: OnceLock::new(),
        }
    }

    /// Starts the polling threads and the worker spawner. `filter` is the seccomp filter each
    /// of those threads installs on itself (the spawner keeps none: it must create threads).
    /// With `pin` (`--pin`), polling threads go to host CPUs the vCPUs do not use, if the host
    /// has any; otherwise the host scheduler places them.
    pub fn start(
        self: &Arc<Self>,
        shared: &Arc<Shared>,
        filter: Option<seccompiler::BpfProgram>,
        pin: bool,
    ) -> crate::error::Result<()> {
        install_wake_handler();
        test_start_delay();
        // The spawner first: a polling thread that hands a blocking call off before the
        // spawner is registered leaves it queued with no worker to come, and its caller
        // asleep for good (seen in a forked child on a loaded host, whose vCPU ran and called
        // while this thread was descheduled between the two).
        workers::start_spawner(self.clone(), shared.clone(), filter.clone())?;
        self.start_profiler(filter.clone())?;
        let host = crate::host_cpus::count();
        for i in 0..self.config.threads {
            let (svc, shared, filter) = (self.clone(), shared.clone(), filter.clone());
            let spare = self.cpus + i % host.saturating_sub(self.cpus).max(1);
            let pin_to = (pin && host > self.cpus).then_some(spare);
            std::thread::Builder::new()
                .name(format!("hrt-serve{i}"))
                .spawn(move || {
                    match pin_to {
                        Some(cpu) => super::vcpu::pin_to_host_cpu(cpu),
                        None if svc.config.steer => svc.pollers.add_self(),
                        None => {}
                    }
                    if let Some(Err(e)) = filter.as_ref().map(super::seccomp::install) {
                        eprintln!("hrt: {e}");
                        return;
                    }
                    service::poll_loop(&svc, &shared);
                })
                .map_err(|e| crate::error::err!("cannot start a forwarding service thread: {e}"))?;
        }
        // Tests: this thread descheduled right after the pollers started (see above).
        test_start_delay();
        Ok(())
    }

    /// `nr::CHANNEL`: accepts the guest's channel once if it is whole guest RAM outside the
    /// program's memory (the kernel's own).
    pub fn register(&self, ram: &GuestRam, program_mem: (u64, u64), addr: u64, len: u64) -> i64 {
        let size = std::mem::size_of::<Channel>() as u64;
        let outside = addr.checked_add(size).is_some_and(|end| end <= program_mem.0 || addr >= program_mem.1);
        if len != size || !addr.is_multiple_of(4096) || !outside {
            return -(libc::EINVAL as i64);
        }
        let Some(p) = ram.host_ptr(addr, size) else { return -(libc::EFAULT as i64) };
        if self.area.set(Area(p as *const Channel)).is_err() {
            return -(libc::EPERM as i64);
        }
        // SAFETY: as in `channel`; the channel lives as long as guest RAM.
        let channel = unsafe { &*(p as *const Channel) };
        let header = &channel.header;
        header.pollers_spare.store(self.config.spare as u32, Ordering::Relaxed);
        if let Some(vm) = &self.vm {
            host_signals::attach(channel, vm.as_raw_fd());
        }
        crate::forward::meminfo::attach(&header.program_memory);
        let ram_range = ram.clone();
        crate::forward::own_maps::attach(
            &header.main_stack,
            &header.maps,
            Box::new(move |a, l| ram_range.host_ptr(a, l)),
        );
        crate::forward::own_status::attach(&header.status);
        let ram_range = ram.clone();
        crate::forward::child_state::attach(
            [&header.leader_state, &header.leader_slot],
            &header.worker_busy,
            Box::new(move |a, l| ram_range.host_ptr(a, l)),
        );
        crate::forward::task_dir::attach(&header.thread_count, &header.thread_ids);
        crate::forward::task_dir::attach_rename(&header.rename);
        self.ring();
        0
    }

    /// How long a poller spins after the last request now: the long spin while the vCPUs that
    /// run (the guest counts the halted ones; a hostile count only moves the spin between the
    /// two bounds) leave a host CPU free, and no other program takes it (`host_load`).
    fn spin_now(&self, ch: &Channel) -> Duration {
        let spin = if self.config.idle_spin == self.config.spin {
            self.config.spin
        } else {
            let halted = ch.header.halted_cpus.load(Ordering::Relaxed).min(self.cpus);
            if self.cpus - halted < self.host_cpus {
                self.config.idle_spin
            } else {
                self.config.spin
            }
        };
        let short = Duration::from_micros(SHORT_SPIN_US);
        if self.config.adaptive && spin > short && !(self.host_spare)(self.host_cpus) {
            return short;
        }
        spin
    }

    fn channel(&self) -> Option<&Channel> {
        // SAFETY: the pointer covers a whole `Channel` in guest RAM (checked at registration);
        // guest RAM stays mapped while any thread of the monitor runs; the fields are atomics.
        self.area.get().map(|a| unsafe { &*a.0 })
    }

    /// `nr::DOORBELL`, on the vCPU thread that took the exit: serve what is pending now, and
    /// wake the polling threads if requests come in a burst.
    pub fn doorbell(&self, shared: &Shared) {
        let now = self.epoch.elapsed().as_nanos() as u64;
        let last = self.last_bell.swap(now, Ordering::Relaxed);
        self.sweep(shared);
        let cancels = self.channel().is_some_and(|ch| ch.header.cancel.iter().any(|w| w.load(Ordering::Relaxed) != 0));
        if cancels || (now.saturating_sub(last) < BURST.as_nanos() as u64 && self.wake_worthwhile()) {
            self.pollers.keep_off_this_cpu();
            self.ring();
        }
    }

    /// Whether a burst doorbell should wake the pollers: not while their wake-ups are futile,
    /// except one in `PROBE`.
    fn wake_worthwhile(&self) -> bool {
        if self.futile_wakes.load(Ordering::Relaxed) < FUTILE {
            return true;
        }
        let skipped = self.skipped_bells.fetch_add(1, Ordering::Relaxed) + 1;
        if skipped < PROBE {
            return false;
        }
        self.skipped_bells.store(0, Ordering::Relaxed);
        true
    }

    /// A poller goes to sleep: `caught` whether it took any call since it woke.
    fn poller_sleeps(&self, caught: bool) {
        if caught {
            self.futile_wakes.store(0, Ordering::Relaxed);
        } else {
            self.futile_wakes.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn ring(&self) {
        *self.bell.lock().unwrap() += 1;
        self.bell_cv.notify_all();
    }

    /// Ends the service (the VM has stopped): polling threads return.
    pub fn stop(&self) {
        host_signals::detach();
        self.stopping.store(true, Ordering::SeqCst);
        self.ring();
    }

    /// Interrupts the host calls the workers still make at the end of a run (the forwarder no
    /// longer restarts them), again every millisecond for up to 200 ms while any is there (a
    /// signal may arrive just before its worker enters the call). Closing a descriptor under
    /// such a call can wait for good: a splice from a datagram socket holds its pipe's lock,
    /// and closing the pipe left `hrt` in `close` (state D) after a SIGTERM.
    pub fn interrupt_workers(&self) {
        for _ in 0..200 {
            let mut any = false;
            for busy in &self.workers.busy {
                let thread = busy.load(Ordering::SeqCst);
                if thread != 0 {
                    any = true;
                    // SAFETY: as in `cancel_requested`: a live worker of ours, a no-op handler.
                    unsafe { libc::pthread_kill(thread as libc::pthread_t, wake_signal()) };
                }
            }
            if !any {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Takes every pending request and serves it (or hands it to a worker). True if there was one.
    fn sweep(&self, shared: &Shared) -> bool {
        let Some(ch) = self.channel() else { return false };
        let mut any = ch.header.cancel.iter().any(|w| w.load(Ordering::Relaxed) != 0) && self.cancel_requested(ch);
        for (w, word) in ch.header.pending.iter().enumerate() {
            if word.load(Ordering::Relaxed) == 0 {
                continue;
            }
            let mut bits = word.swap(0, Ordering::AcqRel);
            while bits != 0 {
                let idx = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                any = true;
                if let Some(req) = take(&ch.slots[idx], idx) {
                    self.dispatch(shared, req);
                }
            }
        }
        any | self.try_kept_again(shared, ch)
    }

    /// Tries the kept requests (`retries`) again: an answer completes one; one whose caller
    /// was cancelled (a signal) or whose time is up goes to a worker, which deals with it as
    /// with any call it takes. True if one was settled.
    fn try_kept_again(&self, shared: &Shared, ch: &Channel) -> bool {
        let Some(f) = shared.forwarder.as_ref() else { return false };
        self.retries.try_again(|req, expired| {
            let cancelled = ch.header.cancel[req.idx / 64].load(Ordering::SeqCst) & (1 << (req.idx % 64)) != 0;
            if cancelled || expired {
                self.workers.hand_off(*req);
                return retries::Again::Settled;
            }
            let view = super::hypercall::program_view(shared);
            match f.try_without_waiting(&view, req.nr, &req.args) {
                Tried::Done(ret) => self.complete_after_wait(req.idx, ret),
                Tried::Sent { sent, rest } => self.workers.hand_off(Request { args: rest, sent, ..*req }),
                Tried::SentWritev { sent, rest } => {
                    self.workers.hand_off(Request { args: rest, sent, writev_tail: true, ..*req })
                }
                Tried::Untried => self.workers.hand_off(*req),
                Tried::Waits => return retries::Again::Waits,
            }
            retries::Again::Settled
        })
    }

    /// A polling thread goes to sleep: the requests it kept to try again go to workers.
    fn hand_off_kept(&self) {
        for req in self.retries.take_all() {
            self.workers.hand_off(req);
        }
    }

    fn dispatch(&self, shared: &Shared, req: Request) {
        if req.nr & MONITOR_OP != 0 {
            // One of the monitor's own operations, asked without a VM exit (`MONITOR_OP`).
            let ret = match req.nr ^ MONITOR_OP {
                nr::MEM_ZERO => {
                    super::hypercall::zero_guest(&shared.ram, req.args[0], req.args[1], req.args[2], req.args[3])
                }
                nr::PROFILE_FILE => self.profile_file(shared, &req.args),
                nr::SMALL_HOST_PAGES => {
                    // The stack's top pages after the answer: the guest goes on meanwhile
                    // (a fresh stack's mmap took ~83 us at --cpus 1 waiting for them, ~12 without).
                    let ret = shared.ram.small_pages_only(req.args[0], req.args[1]);
                    self.complete(req.idx, ret);
                    if ret == 0 && req.args[2] != nr::SMALL_HOST_PAGES_BARE {
                        shared.ram.populate_stack_top(req.args[0], req.args[1]);
                    }
                    return;
                }
                _ => -(libc::ENOSYS as i64),
            };
            return self.complete(req.idx, ret);
        }
        let Some(f) = shared.forwarder.as_ref() else { return self.complete(req.idx, -(libc::ENOSYS as i64)) };
        if !f.may_block(req.nr, &req.args) {
            return self.serve(shared, req);
        }
        let view = super::hypercall::program_view(shared);
        match f.try_without_waiting(&view, req.nr, &req.args) {
            Tried::Done(ret) => self.complete(req.idx, ret),
            // A wait that may be short (a read of a pipe or socket, a poll without a time
            // limit) is tried again for a moment first (`retries`), by a polling thread only:
            // it tries the kept requests on every round and hands them to workers before it
            // sleeps (a vCPU thread serving a doorbell does not come back to them).
            Tried::Waits if service::polls_here() && f.worth_retrying(req.nr, &req.args) && self.retries.keep(req) => {}
            Tried::Waits | Tried::Untried => self.workers.hand_off(req),
            Tried::Sent { sent, rest } => self.workers.hand_off(Request { args: rest, sent, ..req }),
            Tried::SentWritev { sent, rest } => {
                self.workers.hand_off(Request { args: rest, sent, writev_tail: true, ..req })
            }
        }
    }

    /// Performs one request that may block, in a worker: a host call still waiting when the
    /// guest cancels it (its caller took a signal) returns EINTR.
    /// The worker says which host thread performs the call (`workers.busy`) while it does, and
    /// withdraws before it answers: once answered, the guest may reuse the slot for a call that
    /// another worker takes, whose entry a late withdrawal would erase (its cancel would then
    /// never interrupt it: the rare hang of ring_regsite `restart` under load).
    fn serve_cancellable(&self, shared: &Shared, req: Request) {
        let Some(ch) = self.channel() else { return };
        let word = &ch.header.cancel[req.idx / 64];
        let busy = &self.workers.busy[req.idx];
        // SAFETY: pthread_self has no preconditions.
        busy.store(unsafe { libc::pthread_self() } as u64, Ordering::SeqCst);
        // For a parent reading the program's state (forward/child_state.rs).
        let taken = &ch.header.worker_busy[req.idx / 64];
        taken.fetch_or(1 << (req.idx % 64), Ordering::SeqCst);
        let ret = crate::forward::with_cancel(word, 1 << (req.idx % 64), false, || {
            match (&shared.forwarder, req.writev_tail) {
                (Some(f), true) => f.writev_tail(&super::hypercall::program_view(shared), req.nr, &req.args),
                _ => super::hypercall::forward_call(shared, req.nr, req.args),
            }
        });
        busy.store(0, Ordering::SeqCst);
        taken.fetch_and(!(1 << (req.idx % 64)), Ordering::SeqCst);
        if self.stopping.load(Ordering::SeqCst) {
            // The run has ended (`interrupt_workers` may have cut this call short): no answer,
            // so that a program thread still on a vCPU never sees the interruption's EINTR.
            return;
        }
        // The rest of a stream send: what was sent before counts, whatever the rest met.
        let ret = match req.sent {
            0 if ret == -(libc::EINTR as i64)
                && shared.forwarder.as_ref().is_some_and(|f| f.interrupted_for_good(req.nr, &req.args)) =>
            {
                -hrt_abi::channel::EINTR_FOR_GOOD
            }
            0 => ret,
            sent => sent + ret.max(0),
        };
        self.complete_after_wait(req.idx, ret);
    }

    /// Interrupts the host calls of slots whose callers the guest cancelled: their workers get
    /// the wake-up signal, again every 200 us while the call is still there (the first may have
    /// arrived just before the worker entered its host call). True while any is outstanding:
    /// the polling thread then keeps polling.
    fn cancel_requested(&self, ch: &Channel) -> bool {
        let now = self.epoch.elapsed().as_nanos() as u64;
        let mut outstanding = false;
        for (w, word) in ch.header.cancel.iter().enumerate() {
            let mut bits = word.load(Ordering::SeqCst);
            while bits != 0 {
                let idx = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let thread = self.workers.busy[idx].load(Ordering::SeqCst);
                // Not in a worker (yet): a queued call sees the cancel when it starts.
                if thread == 0 || ch.slots[idx].state.load(Ordering::SeqCst) == DONE {
                    continue;
                }
                outstanding = true;
                if now.saturating_sub(self.last_kick[idx].load(Ordering::Relaxed)) < 200_000 {
                    continue;
                }
                self.last_kick[idx].store(now, Ordering::Relaxed);
                // SAFETY: `thread` is a live worker of ours (workers never exit); the signal's
                // handler does nothing. A worker that moved on to another call meanwhile at
                // worst sees one EINTR, which it restarts (its call is not cancelled).
                unsafe { libc::pthread_kill(thread as libc::pthread_t, wake_signal()) };
            }
        }
        outstanding
    }

    /// Performs one request and answers it.
    fn serve(&self, shared: &Shared, req: Request) {
        let Some(ch) = self.channel() else { return };
        // Cancellable too: a quick call can still meet a signal of the program's on the host.
        // A background job's terminal write or tcsetattr with a handler for SIGTTOU fails with
        // EINTR each time the host raises it; restarted until the guest cancels, it would
        // otherwise be restarted for good (100 % of a host CPU, the handler never ran).
        let word = &ch.header.cancel[req.idx / 64];
        let ret = crate::forward::with_cancel(word, 1 << (req.idx % 64), true, || {
            super::hypercall::forward_call(shared, req.nr, req.args)
        });
        self.complete(req.idx, ret);
    }

    /// Writes the answer of slot `idx` and wakes its caller if it sleeps where nothing polls.
    fn complete(&self, idx: usize, ret: i64) {
        self.answer(idx, ret, false)
    }

    /// `complete` for a call that waited (a worker's, or one tried again): every program's.
    fn complete_after_wait(&self, idx: usize, ret: i64) {
        self.answer(idx, ret, true)
    }

    /// `complete`; the signals another process sent before the answer are passed on first
    /// (`taken_signals::sync`, one rt_sigpending when none came) if the call is
    /// `SIGNALS_WATCHED` or `waited`: a message that ends a wait (a read, a poll, a wait for a
    /// child or a lock) comes after the signal sent before it, as on Linux, also for a program
    /// that leaves the signal its default action (it ends before it reads the message).
    fn answer(&self, idx: usize, ret: i64, waited: bool) {
        let Some(ch) = self.channel() else { return };
        let slot = &ch.slots[idx];
        if waited || slot.nr.load(Ordering::Relaxed) & hrt_abi::process::SIGNALS_WATCHED != 0 {
            crate::taken_signals::sync();
        }
        slot.ret.store(ret, Ordering::Relaxed);
        slot.state.store(DONE, Ordering::SeqCst);
        let cpu = slot.sleeper_cpu.load(Ordering::SeqCst);
        if cpu < self.cpus && ch.header.idle_polling[cpu as usize].load(Ordering::SeqCst) == 0 {
            self.interrupt(cpu);
        }
    }

    /// Sends the completion interrupt to vCPU `cpu` (x2APIC ID = index; fixed delivery).
    fn interrupt(&self, cpu: u32) {
        if let Err(e) = self.send(cpu, COMPLETION_VECTOR) {
            if !self.msi_failed.swap(true, Ordering::Relaxed) {
                eprintln!("hrt: cannot interrupt vCPU {cpu} for a forwarded call's answer: {e}");
            }
        }
    }

    /// Sends interrupt `vector` to vCPU `cpu` (x2APIC ID = index; fixed delivery).
    fn send(&self, cpu: u32, vector: u8) -> Result<(), kvm_ioctls::Error> {
        let msi = kvm_bindings::kvm_msi {
            address_lo: 0xfee0_0000 | (cpu << 12),
            address_hi: 0,
            data: vector as u32,
            ..Default::default()
        };
        match &self.vm {
            Some(vm) => vm.signal_msi(msi).map(|_| ()),
            None => Ok(()),
        }
    }

    /// Whether the kernel has not yet taken the word `files_shrank` set (no CPU of its has
    /// hidden the pages).
    pub fn files_shrank_pending(&self) -> bool {
        self.channel().is_some_and(|ch| ch.header.files_shrank.load(Ordering::SeqCst) != 0)
    }

    /// A file the program maps shared shrank (`shared_file_ends::watch`): the kernel is told, and
    /// every CPU interrupted, so that the one whose thread touches a page now gone (spinning
    /// inside KVM) hides the pages first. False if the kernel cannot be told (no channel yet).
    pub fn files_shrank(&self) -> bool {
        let Some(ch) = self.channel() else { return false };
        ch.header.files_shrank.store(1, Ordering::SeqCst);
        // A CPU not started yet has nothing to hide; the first that takes it does the work.
        let mut sent = false;
        for cpu in 0..self.cpus {
            sent |= self.send(cpu, FILES_SHRANK_VECTOR).is_ok();
        }
        sent
    }
}

/// The wake signal: `hrt`'s own does nothing (it only interrupts a host call); one another
/// process sent is the program's (`shared_signals`).
extern "C" fn on_wake(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    if crate::shared_signals::from_another_process(info) {
        crate::shared_signals::pass_on(sig, info, ctx);
    }
}

/// Installs the wake signal's handler, without SA_RESTART, so a blocked host call it hits
/// returns EINTR.
fn install_wake_handler() {
    // SAFETY: sigaction with a zeroed struct, SA_SIGINFO and an async-signal-safe handler.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_wake as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO;
        libc::sigaction(wake_signal(), &sa, std::ptr::null_mut());
    }
}

/// Copies the request out of `slot` if it holds one.
fn take(slot: &ChannelSlot, idx: usize) -> Option<Request> {
    if slot.state.load(Ordering::Acquire) != SUBMITTED {
        return None;
    }
    let mut args = [0u64; 6];
    for (a, from) in args.iter_mut().zip(&slot.args) {
        *a = from.load(Ordering::Relaxed);
    }
    Some(Request { idx, nr: slot.nr.load(Ordering::Relaxed), args, sent: 0, writev_tail: false })
}

/// `HRT_TEST_SERVICE_START_DELAY_MS` (tests only): the thread that starts the service waits
/// this long before it starts anything and again after the polling threads start, as a thread
/// descheduled there on a loaded host would (`monitor/tests/channel.rs`).
fn test_start_delay() {
    if let Some(ms) = std::env::var("HRT_TEST_SERVICE_START_DELAY_MS").ok().and_then(|v| v.parse().ok()) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// Burst doorbells wake the pollers until their wake-ups go futile, then one in `PROBE`, and
/// all again once a woken poller catches a call.
#[cfg(test)]
mod wake_policy {
    use super::*;

    #[test]
    fn futile_wake_ups_stop_the_waking_until_one_catches_a_call() {
        let svc = Service::new(ChannelConfig::defaults(1, None, None), 1, None);
        assert!(svc.wake_worthwhile(), "no history: wake");
        for _ in 0..FUTILE - 1 {
            svc.poller_sleeps(false);
        }
        assert!(svc.wake_worthwhile(), "fewer than FUTILE futile wake-ups: still wake");
        svc.poller_sleeps(false);
        let woken: Vec<bool> = (0..3 * PROBE).map(|_| svc.wake_worthwhile()).collect();
        assert_eq!(woken.iter().filter(|&&w| w).count(), 3, "one doorbell in PROBE while futile: {woken:?}");
        assert!(woken[PROBE as usize - 1] && !woken[0], "the PROBEth, not the first: {woken:?}");
        svc.poller_sleeps(true);
        assert!((0..PROBE).all(|_| svc.wake_worthwhile()), "a caught call: every burst doorbell wakes again");
    }

    /// The pollers spin long while the vCPUs that run leave a host CPU free (the others halted,
    /// as the guest counts them; a count beyond the vCPUs is taken as all of them) and no other
    /// program takes it, short otherwise, and always as told with `--service-spin`.
    #[test]
    fn halted_vcpus_lengthen_the_spin() {
        let config = ChannelConfig {
            threads: 1,
            spin: Duration::from_micros(SHORT_SPIN_US),
            idle_spin: Duration::from_micros(LONG_SPIN_US),
            steer: true,
            spare: false,
            adaptive: true,
        };
        let mut svc = Service::new(config, 4, None);
        svc.host_cpus = 2;
        svc.host_spare = |_| true;
        let layout = std::alloc::Layout::new::<Channel>();
        // SAFETY: a zeroed Channel is valid (atomics and integers); freed below with its layout.
        let ch = unsafe { std::alloc::alloc_zeroed(layout) as *mut Channel };
        // SAFETY: allocated above, not yet freed.
        let header = unsafe { &(*ch).header };
        let spin_with = |svc: &Service, halted: u32| {
            header.halted_cpus.store(halted, Ordering::Relaxed);
            // SAFETY: as above.
            svc.spin_now(unsafe { &*ch }).as_micros() as u64
        };
        assert_eq!(spin_with(&svc, 0), SHORT_SPIN_US, "4 vCPUs running on 2 host CPUs");
        assert_eq!(spin_with(&svc, 2), SHORT_SPIN_US, "2 running: no host CPU free");
        assert_eq!(spin_with(&svc, 3), LONG_SPIN_US, "1 running");
        assert_eq!(spin_with(&svc, u32::MAX), LONG_SPIN_US, "a count beyond the vCPUs");
        svc.host_spare = |_| false;
        assert_eq!(spin_with(&svc, 3), SHORT_SPIN_US, "1 running, but other programs take the host's CPUs");
        svc.config = ChannelConfig::defaults(1, None, None);
        svc.host_cpus = 2;
        assert_eq!(svc.config.spin.as_micros() as u64, LONG_SPIN_US, "a host CPU beyond the vCPU");
        assert_eq!(spin_with(&svc, 0), SHORT_SPIN_US, "which other programs take");
        svc.host_spare = |_| true;
        assert_eq!(spin_with(&svc, 0), LONG_SPIN_US, "which nothing else takes");
        svc.config = ChannelConfig::defaults(4, Some(70), None);
        svc.host_spare = |_| false;
        assert_eq!(spin_with(&svc, 3), 70, "--service-spin decides");
        // SAFETY: allocated above with this layout; no reference to it outlives this line.
        unsafe { std::alloc::dealloc(ch as *mut u8, layout) };
    }
}

/// A bounded, deterministic fuzz run of the channel's decoder: the guest may write anything into
/// the channel (slot states, numbers, arguments, sleeper CPUs, pending bits, also for slots it
/// never filled). Nothing may panic, every slot that held a request is answered (ENOSYS: no
/// forwarder here), and registration refuses areas that are misplaced.
#[cfg(test)]
mod fuzz {
    use super::*;
    use crate::forward::fuzz::Rng;

    const RAM: u64 = 8 << 20;
    const AT: u64 = 1 << 20;
    const POOL: (u64, u64) = (4 << 20, 8 << 20);

    #[test]
    fn registration_refuses_misplaced_areas() {
        let ram = GuestRam::map(RAM, true).expect("guest RAM");
        let size = std::mem::size_of::<Channel>() as u64;
        let svc = Service::new(ChannelConfig::defaults(1, None, None), 1, None);
        let einval = -(libc::EINVAL as i64);
        assert_eq!(svc.register(&ram, POOL, AT + 8, size), einval, "unaligned");
        assert_eq!(svc.register(&ram, POOL, AT, size - 1), einval, "wrong size");
        assert_eq!(svc.register(&ram, POOL, POOL.0, size), einval, "inside the program's memory");
        assert_eq!(svc.register(&ram, POOL, POOL.0 - 4096, size), einval, "overlapping it");
        assert_eq!(svc.register(&ram, POOL, !4095, size), einval, "wrapping");
        assert_eq!(svc.register(&ram, (0, 0), RAM, size), -(libc::EFAULT as i64), "outside RAM");
        assert_eq!(svc.register(&ram, POOL, AT, size), 0);
        assert_eq!(svc.register(&ram, POOL, AT, size), -(libc::EPERM as i64), "twice");
    }

    #[test]
    fn random_channel_contents_never_escape() {
        let ram = GuestRam::map(RAM, true).expect("guest RAM");
        let size = std::mem::size_of::<Channel>() as u64;
        let shared = Shared::new(ram, None, POOL);
        let svc = Service::new(ChannelConfig::defaults(4, None, None), 4, None);
        assert_eq!(svc.register(&shared.ram, POOL, AT, size), 0);
        let ch = svc.channel().expect("registered");
        let mut rng = Rng(0x00c4_a22e_1f00_d5ee);
        let rounds = std::env::var("HRT_FUZZ_INPUTS").ok().and_then(|s| s.parse().ok()).unwrap_or(3_000u64);
        let mut answered = 0u64;
        for _ in 0..rounds {
            let mut submitted = Vec::new();
            for (idx, slot) in ch.slots.iter().enumerate() {
                if !rng.next().is_multiple_of(8) {
                    continue;
                }
                let state = match rng.next() % 4 {
                    0 => rng.next() as u32,
                    1 => DONE,
                    _ => SUBMITTED,
                };
                slot.state.store(state, Ordering::Relaxed);
                slot.nr.store(rng.next(), Ordering::Relaxed);
                for a in &slot.args {
                    a.store(rng.next(), Ordering::Relaxed);
                }
                slot.sleeper_cpu.store(rng.next() as u32 % 8, Ordering::Relaxed);
                let bit = rng.next().is_multiple_of(2);
                if bit {
                    ch.header.pending[idx / 64].fetch_or(1 << (idx % 64), Ordering::Relaxed);
                    if state == SUBMITTED {
                        submitted.push(idx);
                    }
                }
            }
            // Pending bits for slots nobody filled, too.
            ch.header.pending[(rng.next() % (SLOTS / 64) as u64) as usize].fetch_or(rng.next(), Ordering::Relaxed);
            svc.sweep(&shared);
            for idx in submitted {
                let slot = &ch.slots[idx];
                assert_eq!(slot.state.load(Ordering::Relaxed), DONE, "slot {idx} not answered");
                assert_eq!(slot.ret.load(Ordering::Relaxed), -(libc::ENOSYS as i64));
                answered += 1;
            }
            assert!(ch.header.pending.iter().all(|w| w.load(Ordering::Relaxed) == 0));
        }
        eprintln!("channel fuzz: {rounds} rounds, {answered} requests answered");
        assert!(answered > rounds);
    }
}
