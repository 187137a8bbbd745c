//! `fork()` of the program (`nr::FORK`): the child is a new VM in a new host process, over a
//! copy-on-write copy of guest RAM that the host's own `fork` makes (guest RAM is private
//! anonymous memory, but for the kernel's code, which is shared from the first fork on: `GuestRam::share_unwritten`). The kernel has stopped its other CPUs at safe points before asking, so the
//! copy holds consistent kernel structures; the child's kernel resumes only the forking thread.
//!
//! The fork is made by the fork thread, created at start-up without the seccomp filter (the
//! vCPU threads may not create processes) and holding no lock of the monitor's. Its copy in the
//! new process builds a fresh VM over the same host addresses (now the child's copy), fresh
//! vCPUs, a fresh channel service, and a forwarder whose descriptor table copies the parent's
//! (the host fork inherited every descriptor, so the numbers stay valid; every other descriptor
//! of the monitor is closed there), then runs the VM; the new `hrt` process exits with the
//! program's status, which the parent's `wait4` sees as it sees any host child's.

use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use kvm_bindings::CpuId;

use super::channel::{self, ChannelConfig};
use super::memory::GuestRam;
use super::vcpu::{self, Shared, VcpuPlan};
use crate::forward::{ForkSetup, Forwarder};

/// What a forked child needs to build its VM, fixed at start-up.
pub struct Base {
    /// The /dev/kvm descriptor (the child inherits it and creates its VM with it).
    pub kvm_fd: i32,
    pub cpuid: CpuId,
    pub plan: VcpuPlan,
    /// The forwarding channel's service, unless `--no-channel`.
    pub channel: Option<ChannelConfig>,
    pub tsc_khz: u32,
    /// Where the monitor placed the kernel's page map and channel at boot
    /// (`BootInfo::page_map`, `BootInfo::channel`): the same in every process of the program,
    /// each a copy of the first's memory. A child's monitor sets them up itself.
    pub page_map: Option<hrt_abi::UserMap>,
    pub channel_at: Option<hrt_abi::Range>,
}

/// One fork to make.
struct Job {
    ram: GuestRam,
    /// The parent's forwarder for a fork of the program itself (context 0), whose table the
    /// fork thread copies again with it locked across the host fork; None for a spawn child's.
    parent: Option<ParentForwarder>,
    /// The child's forwarder, a copy of the parent's taken on the asking vCPU thread, and
    /// what a forking spawn child asked for itself.
    forwarder: Forwarder,
    setup: ForkSetup,
    program_mem: (u64, u64),
    /// The parts of the pool that are KVM's in the parent's VM (`pool_slots`); None: all RAM.
    pool_runs: Option<Vec<(u64, u64)>>,
    /// The kernel's share is KVM's from this address up in the parent's VM (`pool_slots`; 0:
    /// all of it). The child's kernel memory is a copy of the parent's, anywhere in there.
    kernel_from: u64,
    /// The kernel's fork record (guest-physical) and the guest TSC when it asked.
    record: u64,
    /// The kernel's advice: 2 MiB pages of the program that both processes use next
    /// (`fork_private`), unchecked.
    busy: [u64; 4],
    tsc: u64,
    asked: Instant,
    reply: mpsc::Sender<i64>,
}

/// The forking VM's forwarder, seen from the fork thread.
struct ParentForwarder(*const Forwarder);

// SAFETY: `serve` waits for the fork thread's answer before it returns, so the forwarder
// (the VM's, which lives as long as its vCPUs) outlives every use; `Forwarder` is Sync.
unsafe impl Send for ParentForwarder {}

static BASE: OnceLock<Base> = OnceLock::new();
/// This process is a forked child's `hrt`.
static IS_CHILD: AtomicBool = AtomicBool::new(false);
/// The signal that ended the program (`nr::SHUTDOWN`), 0 if none.
static END_SIGNAL: AtomicU64 = AtomicU64::new(0);

/// Whether this `hrt` runs a forked child.
pub fn is_child() -> bool {
    IS_CHILD.load(Ordering::Relaxed)
}

/// `nr::SHUTDOWN`'s signal.
pub fn note_end_signal(sig: u64) {
    if (1..65).contains(&sig) {
        END_SIGNAL.store(sig, Ordering::SeqCst);
    }
}

/// The signal that ended the program, if one did.
pub fn end_signal() -> Option<i32> {
    match END_SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig as i32),
    }
}

/// A forked child ends as the program did: killed by its signal, so the parent's `wait4` sees
/// what Linux shows, the core-dump flag included. Where the program would leave a core file
/// (a dumping signal and a core limit above 0), the host dumps `hrt` with no memory in it
/// (`coredump_filter` 0; guest RAM is never dumped, `GuestRam::map`): the file is `hrt`'s
/// registers, not the program's image, but it lands where the program's would and the status
/// carries the flag. Otherwise the core limit goes to 0 first.
pub fn die_of(sig: i32) -> ! {
    let limit = crate::forward::program_limit(libc::RLIMIT_CORE);
    // SAFETY: plain calls on this process's own limits, dispositions, mask and proc file.
    unsafe {
        let mut own = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        let limit = limit.unwrap_or_else(|| {
            libc::getrlimit(libc::RLIMIT_CORE, &mut own);
            own
        });
        if dumps_core(sig) && limit.rlim_cur > 0 && drop_memory_from_core() {
            libc::setrlimit(libc::RLIMIT_CORE, &limit);
        } else {
            let none = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
        }
        crate::shared_signals::raise_default(sig);
        libc::_exit(128 + sig)
    }
}

/// Whether `sig`'s default action dumps core (signal(7)).
fn dumps_core(sig: i32) -> bool {
    matches!(
        sig,
        libc::SIGQUIT
            | libc::SIGILL
            | libc::SIGTRAP
            | libc::SIGABRT
            | libc::SIGBUS
            | libc::SIGFPE
            | libc::SIGSEGV
            | libc::SIGXCPU
            | libc::SIGXFSZ
            | libc::SIGSYS
    )
}

/// Leaves every mapping's memory out of this process's core file (`coredump_filter` 0: the
/// guest's shared files and System V segments over guest RAM, `hrt`'s heap). False if that failed.
fn drop_memory_from_core() -> bool {
    let path = c"/proc/self/coredump_filter";
    // SAFETY: open/write/close on a NUL-terminated path and a 2-byte buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let wrote = libc::write(fd, b"0\n".as_ptr().cast(), 2) == 2;
        libc::close(fd);
        wrote
    }
}
static FORKER: Mutex<Option<mpsc::Sender<Job>>> = Mutex::new(None);

/// Held by the fork thread across the host fork, and by whoever starts a thread while the
/// program runs (the forwarding workers: `channel::workers`) until that thread runs its own
/// code. Rust's runtime registers every new thread under a lock of its own (the table of its
/// stack-overflow handler), and a fork made while a worker was starting copied that lock held:
/// every thread the child then started (vCPU, channel, spawner) blocked for good at its start
/// (a fork_threads child on a loaded host, all its threads in that lock's futex).
pub(crate) static THREAD_STARTS: Mutex<()> = Mutex::new(());

/// Guards of global locks taken for a fork, whatever they guard.
pub(crate) type Held = Vec<Box<dyn std::any::Any>>;

/// Takes `m` into `held` without waiting; false if another thread holds it.
pub(crate) fn try_hold<T: 'static>(held: &mut Held, m: &'static Mutex<T>) -> bool {
    match m.try_lock() {
        Ok(g) => held.push(Box::new(g)),
        Err(std::sync::TryLockError::Poisoned(p)) => held.push(Box::new(p.into_inner())),
        Err(std::sync::TryLockError::WouldBlock) => return false,
    }
    true
}

/// Every global lock of the monitor (and Rust's stderr and stdout locks), held by the fork
/// thread across `fork()`. The child is a copy with one thread: a lock another thread of the
/// parent held at that moment stays held there for good, and the child waited on it (a child
/// stuck before its first vCPU ran, in `host_signals::watch`, once in ~16 forks of a program
/// that forked while its parent's main thread looked at signals). All or none: a lock another
/// thread holds makes this one give back what it took and try again shortly, so a thread that
/// holds one lock and waits for another cannot deadlock with it.
fn hold_global_locks() -> Held {
    loop {
        let mut held = Held::new();
        let all = try_hold(&mut held, &THREAD_STARTS)
            && try_hold(&mut held, &FORKER)
            && super::stuck::hold_for_fork(&mut held)
            && super::shared_files::hold_for_fork(&mut held)
            && super::fork_private::hold_for_fork(&mut held)
            && super::shared_file_ends::hold_for_fork(&mut held)
            && super::channel::host_signals::hold_for_fork(&mut held)
            && crate::forward::hold_for_fork(&mut held)
            && crate::every_thread::hold_for_fork(&mut held);
        if all {
            // Nothing holds these while it waits for one of the monitor's locks.
            held.push(Box::new(std::io::stderr().lock()));
            held.push(Box::new(std::io::stdout().lock()));
            return held;
        }
        drop(held);
        std::thread::sleep(Duration::from_micros(50));
    }
}

/// Starts the fork thread. Call it from a thread without the seccomp filter.
pub fn start(base: Base) -> std::io::Result<()> {
    let _ = BASE.set(base);
    start_thread()
}

fn start_thread() -> std::io::Result<()> {
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new().name("hrt-fork".into()).spawn(move || {
        while let Ok(job) = rx.recv() {
            let (reply, ram) = (job.reply.clone(), job.ram.clone());
            let _ = reply.send(fork(job));
            // Off the next fork's path: its copies' host memory.
            super::fork_private::prepare_next(&ram);
        }
    })?;
    *FORKER.lock().unwrap() = Some(tx);
    Ok(())
}

fn errno() -> i64 {
    -(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EAGAIN) as i64)
}

/// `nr::FORK` on the asking vCPU thread: hands the fork to the fork thread and returns the
/// child's host pid (recorded as a child of the program), or a negated errno. `ctx`: the
/// forking spawn child's context (0: the program); `busy`: the kernel's advice (`nr::FORK`).
pub fn serve(shared: &Shared, record: u64, tsc: u64, ctx: u64, busy: [u64; 4]) -> i64 {
    let Some(f) = shared.forwarder.as_ref() else { return -(libc::ENOSYS as i64) };
    // The record is kernel memory: whole guest RAM, outside the program's memory.
    let (lo, hi) = shared.program_mem;
    let len = std::mem::size_of::<hrt_abi::ForkAnswer>() as u64;
    let outside = record.checked_add(len).is_some_and(|end| end <= lo || record >= hi);
    if !outside || shared.ram.slice(record, len).is_none() {
        return -(libc::EINVAL as i64);
    }
    let Some((forwarder, setup)) = u32::try_from(ctx).ok().and_then(|c| f.fork_copy(c)) else {
        return -(libc::EINVAL as i64);
    };
    let Some(tx) = FORKER.lock().unwrap().clone() else { return -(libc::EAGAIN as i64) };
    let (reply, answer) = mpsc::channel();
    let job = Job {
        ram: shared.ram.clone(),
        parent: (ctx == 0).then_some(ParentForwarder(f as *const Forwarder)),
        forwarder,
        setup,
        program_mem: shared.program_mem,
        pool_runs: shared.pool_slots.get().map(|p| p.registered_runs()),
        kernel_from: shared.pool_slots.get().map_or(0, |p| p.kernel_from()),
        record,
        busy,
        tsc,
        asked: Instant::now(),
        reply,
    };
    if tx.send(job).is_err() {
        return -(libc::EAGAIN as i64);
    }
    let pid = answer.recv().unwrap_or(-(libc::EAGAIN as i64));
    if pid > 0 {
        f.adopt(pid as i32);
    }
    pid
}

/// The fork thread: forks the monitor; the parent gets the child's pid, the child runs the VM.
fn fork(job: Job) -> i64 {
    if let Err(e) = super::memory::share_code_before_fork(&job.ram) {
        say(&format!("hrt: fork: {e}\n"));
        return -(libc::ENOMEM as i64);
    }
    let kept_out = super::fork_private::snapshot(&job.ram, &kept_out_pages(&job));
    // SAFETY: all-zero sigsets are valid; the masks are our own.
    let (all, mut old) = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        (all, std::mem::zeroed::<libc::sigset_t>())
    };
    // The monitor's signal handlers must not run in the child before its VM exists: signals
    // stay blocked across the fork (the child unblocks them once set up).
    // SAFETY: masks we own.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old) };
    // The child's threads start from this one's capabilities: the program's.
    crate::forward::caps::catch_up();

    let walked_pipe = super::robust_walk::pipe_for_fork();
    let mut job = job;
    // SAFETY: the child runs only this thread's code; every global lock is this thread's (no
    // other thread of the parent holds one the child would wait on for good); the child ends
    // with _exit.
    let host_fork = || unsafe { libc::fork() };
    let (held, pid) = loop {
        let held = hold_global_locks();
        let pid = match &job.parent {
            // SAFETY: see `ParentForwarder`.
            Some(parent) => unsafe { &*parent.0 }.fork_with_table_held(&mut job.forwarder, host_fork),
            None => Some(host_fork()),
        };
        match pid {
            Some(pid) => break (held, pid),
            None => {
                // Another thread uses the table: give back the locks it may wait for.
                drop(held);
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    };
    // In the child too: this thread held them there, and the child starts threads.
    drop(held);
    if pid == 0 {
        if let Some((_, write_end)) = walked_pipe {
            super::robust_walk::forked_child(write_end);
        }
        child(job, kept_out, &old)
    }
    if let Some(pipe) = walked_pipe {
        super::robust_walk::forked_parent(pid as i64, pipe);
    }
    kept_out.release();
    let ret = if pid < 0 { errno() } else { pid as i64 };
    // SAFETY: restoring our own mask.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    ret
}

/// What the fork leaves out and copies for the child (`fork_private`): the kernel's static
/// data, and the 2 MiB pages of the busy ones the kernel named that lie in the program's pool
/// and hold no host shared memory (a copy would unshare it).
fn kept_out_pages(job: &Job) -> Vec<(u64, u64)> {
    const HUGE: u64 = 2 << 20;
    let (lo, hi) = job.program_mem;
    let mut pages = vec![super::memory::kernel_data_pages()];
    for &page in &job.busy {
        let fits = page.is_multiple_of(HUGE) && page >= lo && page.checked_add(HUGE).is_some_and(|end| end <= hi);
        let host = fits.then(|| job.ram.host_ptr(page, HUGE)).flatten();
        if host.is_some_and(|h| !super::shared_files::any_host_shared(h, HUGE)) && !pages.contains(&(page, page + HUGE))
        {
            pages.push((page, page + HUGE));
        }
    }
    pages
}

/// Writes `msg` to stderr with one write(2): nothing of the parent's stderr lock is used.
fn say(msg: &str) {
    // SAFETY: writes the bytes of a live string.
    unsafe { libc::write(2, msg.as_ptr() as *const libc::c_void, msg.len()) };
}

/// The new host process: runs the child's VM and exits with the program's status.
fn child(job: Job, kept_out: super::fork_private::Snapshot, mask: &libc::sigset_t) -> ! {
    IS_CHILD.store(true, Ordering::SeqCst);
    // This thread is the new process's main thread: the program's name, not the fork thread's.
    crate::host_name::after_fork();
    let placed = kept_out.install();
    let status = match placed.and_then(|placed| run_child(job, placed, mask)) {
        Ok(s) => s,
        Err(e) => {
            say(&format!("hrt: fork: the child cannot start: {e}\n"));
            1
        }
    };
    super::shared_files::release_all();
    let sig = END_SIGNAL.load(Ordering::SeqCst);
    if sig != 0 {
        die_of(sig as i32)
    }
    // SAFETY: ends this process; the program's output is already on the host descriptors.
    unsafe { libc::_exit(status as i32) }
}

fn run_child(job: Job, placed: super::fork_private::Placed, mask: &libc::sigset_t) -> crate::error::Result<u8> {
    let base = BASE.get().ok_or_else(|| crate::error::err!("no fork base"))?;
    let mut keep = job.forwarder.host_descriptors();
    keep.extend([0, 1, 2, base.kvm_fd]);
    keep.extend(job.setup.host_descriptors());
    // The signalfd the child's taker of the program's signals waits on (`taken_signals`).
    keep.extend(crate::taken_signals::host_descriptor());
    // The main thread's wake-up (`vcpu::send_to_main`).
    keep.extend(super::vcpu::main_wake_descriptor());
    // The pipe the holder closes once it has walked the robust lists (robust_walk.rs).
    keep.extend(super::robust_walk::walked_descriptor());
    close_all_but(keep);
    super::vcpu::renew_main_wake_in_child()?;
    job.setup.apply(&job.forwarder);
    channel::host_signals::detach();
    // SAFETY: restoring the mask the fork thread had.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, mask, std::ptr::null_mut()) };
    crate::taken_signals::take_in_order()?;
    // SAFETY: the inherited /dev/kvm descriptor, owned by this process from now on.
    let kvm = unsafe { kvm_ioctls::Kvm::from_raw_fd(base.kvm_fd) };
    let vm = Arc::new(super::kvm::create_vm_without_irqchip(&kvm)?);
    // As in the parent (`vm::run`): the teardown after this process has been reported.
    let teardown = super::late_teardown::start(vm.as_raw_fd());
    // As in the parent (`vm::run`): the chunks of the pool the parent's VM had, before any of
    // the child's CPUs runs (its kernel's chunk map, a copy of the parent's, says they are
    // KVM's), the rest as the child's kernel asks. The kernel's share: all the parent's VM had
    // of it (the child's kernel memory, a copy of the parent's, may be anywhere there), the
    // rest as the child's kernel asks, as in the parent's. Above the pool's end, where the
    // share's lazy span starts.
    let pool_end = job.program_mem.1;
    let kernel = (pool_end, job.kernel_from.max(pool_end));
    let pool = match &job.pool_runs {
        Some(runs) => Some((runs, job.ram.give_to_except(&vm, (job.program_mem.0, kernel.1))?)),
        None => {
            job.ram.give_to(&vm)?;
            None
        }
    };
    super::kvm::create_irqchip(&vm)?;
    let top = job.ram.phys_end();
    let pool = pool
        .map(|(runs, ranges)| {
            super::pool_slots::PoolSlots::start(vm.clone(), ranges, job.program_mem, kernel, top, runs)
        })
        .transpose()?;
    // SAFETY: getpid has no arguments.
    let pid = unsafe { libc::getpid() };
    let mut forwarder = job.forwarder;
    forwarder.become_child(pid);
    if let Err(e) = forwarder.start_process_spawner() {
        say(&format!("hrt: cannot start the process spawner thread ({e}): the program's execve will fail\n"));
    }
    let shared = Arc::new(Shared::new(job.ram, Some(forwarder), job.program_mem));
    if let Some(pool) = pool {
        let _ = shared.pool_slots.set(pool);
    }
    if let Some(cfg) = base.channel {
        let _ = shared.channel.set(Arc::new(channel::Service::new(cfg, base.plan.cpus, Some(vm.clone()))));
    }
    let ready = prepare_kernel_tables(&shared, base);
    let answer = hrt_abi::ForkAnswer { child_pid: pid as u64, seed: super::seed::fresh(), ready };
    shared.ram.write_obj(job.record, &answer)?;
    if let Err(e) = start_thread() {
        say(&format!("hrt: cannot start the fork thread ({e}): the program's fork will fail\n"));
    }
    // Guest time goes on from the parent's, plus the time the fork took.
    let elapsed_ticks = job.asked.elapsed().as_nanos() as u64 * base.tsc_khz as u64 / 1_000_000;
    let plan = VcpuPlan { resume: Some((job.record, job.tsc + elapsed_ticks)), ..base.plan.clone() };
    teardown.finish();
    placed.own();
    let status = vcpu::run_all(&vm, &base.cpuid, shared.clone(), &plan);
    vcpu::end_forwarding(&shared);
    status
}

/// What the child's kernel would otherwise announce with a VM exit each: the page map (the
/// parent's, in this copy of its memory) and the forwarding channel, which starts empty. The
/// channel's pages are given back to the host rather than cleared (`guest_zero`): the copy's
/// pages are the parent's until written, and a guest write to each was a copy-on-write fault
/// and a shadow-paging fault (~10 us here), 33 of them. Returns the `fork_ready` bits.
fn prepare_kernel_tables(shared: &Shared, base: &Base) -> u64 {
    let mut ready = 0;
    if let Some(map) = base.page_map {
        if super::hypercall::accept_user_map(shared, map) == 0 {
            ready |= hrt_abi::fork_ready::USER_MAP;
        }
    }
    if let (Some(at), Some(svc)) = (base.channel_at, shared.channel.get()) {
        if let Some(p) = shared.ram.host_ptr(at.base, at.size) {
            // SAFETY: the range lies in guest RAM (checked), which no vCPU runs on yet.
            unsafe { super::guest_zero::zero_dropping(p, at.size as usize) };
            if svc.register(&shared.ram, shared.program_mem, at.base, at.size) == 0 {
                ready |= hrt_abi::fork_ready::CHANNEL;
            }
        }
    }
    ready
}

/// Closes every descriptor of this process but those in `keep` (the parent's VM, vCPU and
/// service descriptors are of no use here).
fn close_all_but(mut keep: Vec<i32>) {
    keep.sort_unstable();
    keep.dedup();
    let mut from: u32 = 0;
    for k in keep.into_iter().filter(|&k| k >= 0) {
        let k = k as u32;
        if k > from {
            // SAFETY: closes descriptors of this process that nothing here uses.
            unsafe { libc::syscall(libc::SYS_close_range, from, k - 1, 0) };
        }
        from = k + 1;
    }
    // SAFETY: as above.
    unsafe { libc::syscall(libc::SYS_close_range, from, u32::MAX, 0) };
}
