//! Child processes on the host (`--children host`): the monitor side of kernel/src/linux/calls/
//! procs.rs. A spawn child (vfork, posix_spawn) gets a context of its own here, named by its
//! guest tid: a copy of the program's descriptor table (the same host descriptors, shared as
//! a fork shares open files) and what it asked for its exec (working directory, process group,
//! session, ignored signals and signal mask). Its forwarded calls carry the context in their
//! number (`hrt_abi::process::CONTEXT_SHIFT`) and act on that copy. Its `execve` starts the host
//! program from the process spawner, a thread without the seccomp filter created at start-up
//! (the filtered threads may not create processes): `clone(CLONE_VM|CLONE_VFORK)` as glibc's
//! `posix_spawn` does, so nothing of the monitor's memory is copied, then in the new process
//! the descriptors are put at the child's numbers, the rest closed, and `execve` runs.
//!
//! Waiting (`wait4`, `waitid`), `kill`, and process groups are host calls on the monitor's own
//! children, which are all the program's; `kill` reaches only the program's own tree of
//! processes and the process groups they are in (forward/host_procs.rs).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use hrt_abi::process as op;

use super::errno::{Errno, SysResult};
use super::fd_table::{FdTable, HostFd};
use super::guest_mem::Guest;
use super::host::{int, ptr};
use super::Forwarder;
use crate::raw_sys::syscall3;

/// Linux's limits on an exec's arguments: one string, and all of them with their pointers.
const MAX_ARG_STRLEN: usize = 32 * 4096;
const ARG_MAX: usize = 2 << 20;
/// Spawn children alive at once (a program cannot make the monitor keep more tables).
const MAX_CONTEXTS: usize = 1024;
/// waitid's idtype for a pidfd.
const P_PIDFD: u32 = 3;

/// A spawn child before its exec.
pub struct ChildCtx {
    fds: FdTable,
    state: Mutex<ExecState>,
}

#[derive(Default)]
struct ExecState {
    /// Its working directory, if it changed it (an O_PATH descriptor).
    cwd: Option<Arc<HostFd>>,
    /// setpgid(0, pgid): Some(0) for a group of its own.
    pgid: Option<i32>,
    setsid: bool,
    /// TIOCSCTTY after its setsid (`defer_ctty`): (descriptor number, argument).
    ctty: Option<(i32, i32)>,
    /// Signals it ignores and its mask (bit `sig - 1`), sent just before exec.
    ignored: u64,
    mask: u64,
    /// The CPUs the program allows the exec'ing thread (guest CPU bits), sent with them.
    affinity: [u64; 3],
}

/// A checked exec: the host path to run, the path as the program gave it (relative to its
/// directory), or `path` if it named a directory descriptor (`--children hrt` gives it to a
/// script's interpreter), argv and envp.
pub(super) struct ExecTarget {
    path: CString,
    name: CString,
    /// The file name Linux gives the new program (AT_EXECFN): the path as given from the
    /// current directory, `/dev/fd/N/PATH` from a directory descriptor, `/dev/fd/N` for the
    /// descriptor itself.
    execfn: CString,
    argv: Vec<CString>,
    envp: Vec<CString>,
    /// fexecve (AT_EMPTY_PATH): the program's descriptor number and a host copy of it (close
    /// on exec), for the new process to exec the descriptor's file at that number; the file
    /// may have no path the host can exec (a memfd, a file removed since).
    by_fd: Option<(i32, OwnedFd)>,
    /// The path as given, where the host finds the same file by it (from the exec's
    /// directory): a host program (`--children host`) is started by it, so that its AT_EXECFN,
    /// command name and a script interpreter's argument are what Linux gives (they were the
    /// walk's resolved path, `/home/u/bin/prog` for `./link`).
    host_name: Option<CString>,
}

/// One host program to start.
pub(super) struct Spawn {
    pub(super) target: ExecTarget,
    /// (guest fd number, host descriptor) for each descriptor the program keeps.
    pub(super) fds: Vec<(i32, Arc<HostFd>)>,
    pub(super) cwd: Option<Arc<HostFd>>,
    pub(super) pgid: Option<i32>,
    pub(super) setsid: bool,
    /// The controlling terminal to take after the setsid (`ExecState::ctty`).
    pub(super) ctty: Option<(i32, i32)>,
    pub(super) ignored: u64,
    pub(super) mask: u64,
    /// ITIMER_REAL's (time left, interval) in nanoseconds for a forked child's exec (an exec
    /// keeps the alarm); zero for a spawn child, which starts without one.
    pub(super) real_timer: [u64; 2],
    /// For a forked child's exec, what else it keeps (`process::EXEC_HOST_CARRY`): the blocked
    /// signals pending (bit `sig - 1`), and ITIMER_VIRTUAL's and ITIMER_PROF's (time left,
    /// interval) in nanoseconds; zero for a spawn child.
    pub(super) pending: u64,
    pub(super) cpu_timers: [u64; 4],
    /// The exec'ing thread's seccomp filters, oldest first (`seccomp_filters`).
    pub(super) filters: Vec<Vec<libc::sock_filter>>,
    /// The host CPUs for the CPUs the program allows the exec'ing thread (`host_affinity`;
    /// None: not known): the new program keeps them, as an exec keeps the affinity on Linux.
    pub(super) affinity: Option<libc::cpu_set_t>,
}

/// What the process spawner does: start a program, or make a stand-in (`stand_ins`).
pub(super) enum Work {
    Spawn(Spawn),
    StandIn {
        code: i32,
    },
    /// A forked child's exec: the host program replaces this process (host_exec.rs).
    Replace(Spawn),
}

type Job = (Work, mpsc::Sender<SysResult<i64>>);

/// The program's children: contexts of spawn children, host pids started, and the spawner.
#[derive(Default)]
pub struct Children {
    ctxs: Mutex<HashMap<u32, Arc<ChildCtx>>>,
    pids: Mutex<HashSet<i32>>,
    /// Those of `pids` that are forked `hrt`s (their resident sets carry `hrt`'s own share).
    forked: Mutex<HashSet<i32>>,
    spawner: Mutex<Option<mpsc::Sender<Job>>>,
    stand_ins: super::stand_ins::StandIns,
    /// This `hrt` runs a forked child (`become_child`): its exec may start a host program in
    /// its place (host_exec.rs).
    pub(super) forked_self: std::sync::atomic::AtomicBool,
    /// The host program an `EXEC_HOST` prepared, for its `EXEC_HOST_GO`.
    pub(super) replacement: Mutex<Option<Spawn>>,
}

impl Children {
    /// Whether `pid` is a forked `hrt` of this process's not yet reaped.
    pub(super) fn is_forked(&self, pid: i32) -> bool {
        self.forked.lock().unwrap().contains(&pid)
    }

    /// Has the process spawner do `work` (it starts processes: the filtered threads may not)
    /// and waits for its answer.
    pub(super) fn on_spawner(&self, work: Work) -> SysResult<i64> {
        let spawner = self.spawner.lock().unwrap().clone().ok_or(Errno::EAGAIN)?;
        let (tx, rx) = mpsc::channel();
        spawner.send((work, tx)).map_err(|_| Errno::EAGAIN)?;
        rx.recv().map_err(|_| Errno::EAGAIN)?
    }

    /// A child started elsewhere (a forked one): the program may wait for and signal it.
    pub(super) fn adopt(&self, pid: i32) {
        // A mark left by an earlier process of that pid (reaped unseen: SIGCHLD ignored).
        super::exec_marks::forget(pid);
        self.pids.lock().unwrap().insert(pid);
        self.forked.lock().unwrap().insert(pid);
    }
}

thread_local! {
    /// The spawn child whose call this thread performs (None: the program itself).
    static CURRENT: RefCell<Option<Arc<ChildCtx>>> = const { RefCell::new(None) };
}

/// The descriptor table a call acts on: the program's or a spawn child's copy.
pub enum Fds<'a> {
    Own(&'a FdTable),
    Child(Arc<ChildCtx>),
}

impl std::ops::Deref for Fds<'_> {
    type Target = FdTable;
    fn deref(&self) -> &FdTable {
        match self {
            Fds::Own(t) => t,
            Fds::Child(c) => &c.fds,
        }
    }
}

/// Restores the thread's context when a call ends (also on a panic).
struct Restore(Option<Arc<ChildCtx>>);

impl Drop for Restore {
    fn drop(&mut self) {
        let prev = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = prev);
    }
}

/// Whether the call being made is a spawn child's (a vfork child before its exec).
pub(super) fn in_spawn_child() -> bool {
    current_child().is_some()
}

/// TIOCSCTTY(fd, arg) of a spawn child, which runs in `hrt`'s host process: that process
/// leads no session (the child's setsid is noted for its exec), so the host refused it
/// (EPERM; Go's os/signal TestTerminalSignal, `SysProcAttr.Setctty`). Noted too, and made by
/// the new process after its setsid, before the exec (whose failure is then the exec's).
/// None outside a spawn child. ENOTTY for a descriptor that is no terminal, EPERM before a
/// setsid (the child leads no session), as Linux answers.
pub(super) fn defer_ctty(h: &HostFd, fd: u64, arg: u64) -> Option<SysResult<i64>> {
    let c = current_child()?;
    // SAFETY: isatty only queries the descriptor.
    if unsafe { libc::isatty(h.raw()) } != 1 {
        return Some(Err(Errno::ENOTTY));
    }
    let mut st = c.state.lock().unwrap();
    if !st.setsid {
        return Some(Err(Errno::EPERM));
    }
    st.ctty = Some((fd as i32, arg as i32));
    Some(Ok(0))
}

fn current_child() -> Option<Arc<ChildCtx>> {
    CURRENT.with(|c| c.borrow().clone())
}

impl Forwarder {
    /// The descriptor table of the call being performed.
    pub(super) fn fds(&self) -> Fds<'_> {
        match current_child() {
            Some(c) => Fds::Child(c),
            None => Fds::Own(&self.fds),
        }
    }

    /// Runs `f` with the Linux call number of forwarded call `nr`, in its child context (if it
    /// names one). None when it names a context that does not exist.
    pub(super) fn in_context<R>(&self, nr: u64, f: impl FnOnce(u64) -> R) -> Option<R> {
        if nr & op::TTOU_BLOCKED != 0 {
            // The caller blocks SIGTTOU: so does this thread while it makes the call.
            let _blocked = super::tty_stop::TtouBlocked::new();
            return self.in_context(nr & !op::TTOU_BLOCKED, f);
        }
        if nr & op::SIGNALS_WATCHED != 0 {
            // Acted on where the call is answered (`taken_signals::sync`).
            return self.in_context(nr & !op::SIGNALS_WATCHED, f);
        }
        if nr & op::TTIN_BLOCKED != 0 {
            // The caller blocks SIGTTIN: a background read of the terminal fails with EIO.
            let _blocked = super::tty_stop::TtinBlocked::new();
            return self.in_context(nr & !op::TTIN_BLOCKED, f);
        }
        let ctx = (nr >> op::CONTEXT_SHIFT) as u32;
        let nr = nr & ((1 << op::CONTEXT_SHIFT) - 1);
        if ctx == 0 {
            return Some(f(nr));
        }
        let child = self.children.ctxs.lock().unwrap().get(&ctx).cloned()?;
        let prev = CURRENT.with(|c| c.borrow_mut().replace(child));
        let _restore = Restore(prev);
        Some(f(nr))
    }

    /// Starts the process spawner thread. Call it from a thread without the seccomp filter,
    /// before the filtered threads exist.
    pub fn start_process_spawner(&self) -> std::io::Result<()> {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new().name("hrt-procs".into()).spawn(move || {
            while let Ok((work, reply)) = rx.recv() {
                // What the program starts gets its capabilities.
                super::caps::catch_up();
                let answer = match work {
                    Work::Spawn(job) => spawn(&job),
                    Work::Replace(job) => super::host_exec::replace(&job),
                    Work::StandIn { code } => super::stand_ins::exited_process(code)
                        .map(|(pidfd, pid)| (pid as i64) << 32 | pidfd as u32 as i64),
                };
                let _ = reply.send(answer);
            }
        })?;
        *self.children.spawner.lock().unwrap() = Some(tx);
        Ok(())
    }

    /// A process call (`hrt_abi::process`).
    pub(super) fn process_call(&self, g: Guest, nr: u64, a: &[u64; 6]) -> SysResult<i64> {
        let child = current_child();
        match (nr, child) {
            (op::CHILD_BEGIN, None) => self.child_begin(a[0] as u32),
            (op::CHILD_END, None) => {
                self.children.ctxs.lock().unwrap().remove(&(a[0] as u32));
                Ok(0)
            }
            (op::SIGNALS, Some(c)) => {
                let mut st = c.state.lock().unwrap();
                (st.ignored, st.mask, st.affinity) = (a[0], a[1], [a[2], a[3], a[4]]);
                Ok(0)
            }
            (op::EXEC, Some(c)) => self.exec(g, &c, a),
            (op::EXEC_HOST, None) => self.exec_host(g, a),
            (op::EXEC_HOST_CARRY, None) => self.exec_host_carry(a[0], [a[1], a[2], a[3], a[4]]),
            (op::EXEC_HOST_GO, None) => self.exec_host_go([a[0], a[1]], a[2], [a[3], a[4], a[5]]),
            (op::EXEC_OPEN, None) => self.exec_open(g, a),
            (op::EXEC_READ, None) => self.exec_read(g, a),
            (op::EXEC_COMMIT, None) => self.exec_commit(g, a),
            (op::EXEC_ABORT, None) => self.exec_abort(),
            (op::WAIT4, None) => self.wait4(g, a),
            (op::WAITID, None) => self.waitid(g, a),
            (op::KILL, None) => self.kill(a[0] as i32, a[1]),
            (op::CHILDREN_TIME, None) => children_time(a[0]),
            (op::MAX_RSS, None) => max_rss(a[0]),
            (op::SAME_FILE, _) => self.same_file(a[0], a[1]),
            (op::KEEP_FILE, None) => self.keep_file(a[0], a[1] != 0),
            (op::KEPT_PREAD, None) => self.kept_pread(g, a),
            (op::MAP_PREAD, _) => self.map_pread(g, a),
            (op::FILE_ENTRY_COUNT, None) => self.file_entry_count(a),
            (op::SIGNALFD_EVENTFD, _) => self.signalfd_eventfd(a[0]),
            (op::SECCOMP_FILTER, _) => super::seccomp_filters::register(g, a),
            (op::SECCOMP_RELEASE, _) => super::seccomp_filters::release(a[0]),
            (op::HOST_LOADS, _) => host_loads(g, a[0]),
            (op::AFFINITY_ALLOWED, _) => affinity_allowed(a[0]),
            (op::SYNC_SIGNALS, _) => {
                crate::taken_signals::sync();
                // A child's SIGCHLD the host holds for `hrt` too (its handler may not have run
                // yet): sigpending and a draining sigtimedwait saw none while the child was
                // already waitable, and the wait then raised it (late, after the drain).
                crate::vm::host_signals::pass_pending_sigchld();
                Ok(0)
            }
            (op::DROP_KEPT, None) => self.fds().kept().drop_handle(a[0]),
            (op::STAND_IN_PIDFD, None) => self.stand_in_pidfd(a[0] as i32, a[1] as u32),
            (op::REAP_STAND_IN, None) => self.reap_stand_in(a[0] as i32, a[1] != 0),
            (op::SETPGID, Some(c)) if a[0] == 0 => {
                c.state.lock().unwrap().pgid = Some(int(a[1]) as i32);
                Ok(0)
            }
            (op::SETSID, Some(c)) => {
                c.state.lock().unwrap().setsid = true;
                Ok(0)
            }
            (op::GETPGID, Some(c)) if a[0] == 0 => match c.state.lock().unwrap().pgid {
                Some(p) if p > 0 => Ok(p as i64),
                _ => self.on_process(libc::SYS_getpgid, 0, &[]),
            },
            // A forked child that has exec'd (in its own VM: the host saw no exec).
            (op::SETPGID, _)
                if self.children.forked.lock().unwrap().contains(&(a[0] as i32))
                    && super::exec_marks::execd(a[0] as i32) =>
            {
                Err(Errno::EACCES)
            }
            (op::SETPGID, _) => self.on_process(libc::SYS_setpgid, a[0] as i32, &[int(a[1])]),
            (op::GETPGID, _) => self.query_process(libc::SYS_getpgid, a[0] as i32),
            (op::GETSID, _) => self.query_process(libc::SYS_getsid, a[0] as i32),
            // SAFETY: no pointers.
            (op::SETSID, None) => unsafe { self.sys(libc::SYS_setsid, &[]) },
            (op::SHARED_FUTEX, _) => self.shared_futex(g, a),
            _ => Err(Errno::EINVAL),
        }
    }

    /// A spawn child begins: its own copy of the program's descriptor table.
    fn child_begin(&self, ctx: u32) -> SysResult<i64> {
        let mut ctxs = self.children.ctxs.lock().unwrap();
        if ctx == 0 || ctxs.len() >= MAX_CONTEXTS {
            return Err(Errno::EAGAIN);
        }
        let child = ChildCtx { fds: self.fds.duplicate(), state: Mutex::new(ExecState::default()) };
        ctxs.insert(ctx, Arc::new(child));
        Ok(0)
    }

    /// A forking spawn child's descriptor table (a copy) and what it asked for its exec.
    pub(super) fn child_fork_state(&self, ctx: u32) -> Option<(FdTable, super::forked::ForkSetup)> {
        let c = self.children.ctxs.lock().unwrap().get(&ctx).cloned()?;
        let st = c.state.lock().unwrap();
        Some((c.fds.duplicate(), super::forked::ForkSetup { cwd: st.cwd.clone(), pgid: st.pgid, setsid: st.setsid }))
    }

    /// The directory a spawn child changed to, if the call is one of its and it did.
    pub(super) fn child_cwd(&self) -> Option<Arc<HostFd>> {
        current_child()?.state.lock().unwrap().cwd.clone()
    }

    /// chdir/fchdir in a spawn child: remembered for its exec (the monitor's own directory is
    /// the program's). `dir` is an O_PATH descriptor of the directory.
    pub(super) fn child_chdir(&self, dir: &Arc<HostFd>) -> Option<SysResult<i64>> {
        let c = current_child()?;
        c.state.lock().unwrap().cwd = Some(dir.clone());
        Some(Ok(0))
    }

    /// A host call on the monitor itself (`pid` 0) or on one of the program's host children.
    fn on_process(&self, nr: libc::c_long, pid: i32, rest: &[libc::c_long]) -> SysResult<i64> {
        if pid < 0 || pid > 0 && !self.children.pids.lock().unwrap().contains(&pid) {
            return Err(Errno::ESRCH);
        }
        let mut args = vec![pid as libc::c_long];
        args.extend_from_slice(rest);
        // SAFETY: no pointers.
        unsafe { self.sys(nr, &args) }
    }

    /// kill from the program to another process or a group: within the program's own tree
    /// (forward/host_procs.rs: the `hrt run` at its top and that process's descendants, so
    /// a forked child's parent and a fork server's workers) and the groups a process of the
    /// tree is in; ESRCH for any other process (`hrt` signals nothing outside the program), but
    /// signal 0, which only asks whether a process exists, may name any.
    /// pid 0, and a group that holds `hrt` itself, are signalled member by member without
    /// `hrt`, and the answer is 1: the kernel then delivers the program's own copy before
    /// `kill` returns. pid -1 is every other process of the tree (on Linux: every process the
    /// caller may signal but itself).
    /// pidfd_open(pid, flags): a host pidfd in the program's table, for any process (waiting
    /// for one's end is harmless; `pidfd_send_signal` signals only the program's tree). Always
    /// close-on-exec, as on Linux. Its `poll`, `epoll` and `waitid(P_PIDFD)` are the host's.
    pub(super) fn pidfd_open(&self, pid: u64, flags: u64) -> SysResult<i64> {
        // PIDFD_NONBLOCK (O_NONBLOCK) and PIDFD_THREAD (O_EXCL), as the host takes them.
        if flags & !(libc::O_NONBLOCK | libc::O_EXCL) as u64 != 0 {
            return Err(Errno::EINVAL);
        }
        let pid = pid as i32;
        if pid <= 0 {
            return Err(Errno::EINVAL);
        }
        // SAFETY: no pointers.
        let fd = unsafe { self.sys(libc::SYS_pidfd_open, &[pid as libc::c_long, int(flags)])? };
        self.fds().insert(Arc::new(HostFd::owned(fd as i32, false)), true, 0)
    }

    /// pidfd_getfd(pidfd, targetfd, flags): a new descriptor (close-on-exec, as Linux makes
    /// it) of another process's open file. The program's own process: its descriptor
    /// `targetfd`, duplicated. A host program: the host's call. Another `hrt` (a forked child):
    /// refused (EPERM, said once), since its numbers are its program's, not its own, and the
    /// host would hand over the monitor's descriptor of that number (its KVM's, say).
    pub(super) fn pidfd_getfd(&self, pidfd: u64, target: u64, flags: u64) -> SysResult<i64> {
        let h = self.fds().get(pidfd)?;
        if flags != 0 {
            return Err(Errno::EINVAL);
        }
        let pid = self.signal_target(h.raw())?;
        if pid == std::process::id() as i32 {
            let file = self.fds().get(target)?;
            return self.fds().insert(Arc::new(file.duplicate()?), true, 0);
        }
        if super::walk::monitor_of(pid as u32).is_some() {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                eprintln!("hrt: pidfd_getfd from another hrt process is not supported: returning EPERM (reported once)")
            });
            return Err(Errno(libc::EPERM));
        }
        // SAFETY: no pointers.
        let fd = unsafe { self.sys(libc::SYS_pidfd_getfd, &[h.raw() as libc::c_long, int(target), 0])? };
        self.fds().insert(Arc::new(HostFd::owned(fd as i32, false)), true, 0)
    }

    /// `process::STAND_IN_PIDFD`: a pidfd in the program's table of a host process made to have
    /// exited as spawn child `child` did (`stand_ins`).
    fn stand_in_pidfd(&self, child: i32, status: u32) -> SysResult<i64> {
        if !self.children.stand_ins.has_room() {
            return Err(Errno::EAGAIN);
        }
        let made = self.children.on_spawner(Work::StandIn { code: ((status >> 8) & 0xff) as i32 })?;
        let (pid, pidfd) = ((made >> 32) as i32, made as u32 as i32);
        let host = Arc::new(HostFd::owned(pidfd, false));
        self.children.stand_ins.add(pid, child, &host);
        self.fds().insert(host, true, 0)
    }

    /// `process::REAP_STAND_IN`: reaps child `child`'s stand-in (unless `only_ask`), if it has
    /// one; 1 if it had.
    fn reap_stand_in(&self, child: i32, only_ask: bool) -> SysResult<i64> {
        let Some(host) = self.children.stand_ins.host_of(child) else { return Ok(0) };
        if only_ask {
            return Ok(1);
        }
        // SAFETY: no pointers; the stand-in has exited, so WNOHANG finds it.
        let r = unsafe {
            self.sys(libc::SYS_wait4, &[host as libc::c_long, 0, (libc::WNOHANG | libc::__WALL) as libc::c_long, 0])
        };
        self.children.stand_ins.shown(host, true);
        r.map(|p| (p > 0) as i64)
    }

    /// prlimit64(pid, resource, new, old) of another process (the kernel answers for the
    /// program's own pid and its threads' ids): the host's call for the program's user, so it
    /// reads and, where the host allows, sets that process's limits. `hrt`'s own process,
    /// under whichever of its host ids, is refused with ESRCH (the program's is its kernel's
    /// business), as are ids that are no pid (0 and below).
    pub(super) fn prlimit_other(&self, g: Guest, pid: u64, resource: u64, new: u64, old: u64) -> SysResult<i64> {
        let pid = pid as u32 as i32;
        if pid <= 0 || super::walk::is_ours(pid as u32) {
            return Err(Errno::ESRCH);
        }
        let limit: [u64; 2] = if new != 0 { g.read(new)? } else { [0; 2] };
        let mut was = [0u64; 2];
        let new_ptr = if new != 0 { ptr(limit.as_ptr()) } else { 0 };
        let old_ptr = if old != 0 { ptr(was.as_mut_ptr()) } else { 0 };
        // SAFETY: the pointers are this frame's buffers of two u64s each (or none).
        unsafe { self.sys(libc::SYS_prlimit64, &[pid as libc::c_long, int(resource), new_ptr, old_ptr])? };
        if old != 0 {
            g.write(old, &was)?;
        }
        Ok(0)
    }

    /// pidfd_send_signal(pidfd, sig, info, flags) through the host's pidfd (or `/proc/<pid>`
    /// directory, which Linux takes as well), with the program's siginfo if it gave one (the
    /// host applies Linux's rule on it). A pidfd of `hrt` itself answers 1: the kernel delivers
    /// the program's own signal before the call returns, as `kill` does.
    pub(super) fn pidfd_send_signal(&self, g: Guest, fd: u64, sig: u64, info: u64, flags: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        // PIDFD_SIGNAL_THREAD, _THREAD_GROUP, _PROCESS_GROUP (Linux 6.9): one at most.
        const THREAD: u64 = 1;
        const PROCESS_GROUP: u64 = 4;
        if ![0, THREAD, 2, PROCESS_GROUP].contains(&flags) {
            return Err(Errno::EINVAL);
        }
        let target = self.signal_target(h.raw())?;
        if target == std::process::id() as i32 {
            if flags == PROCESS_GROUP {
                // The program's own group: the other members from here, its own copy from its
                // kernel (1), as kill(0) sends it.
                return self.kill(0, sig);
            }
            // The process, or its main thread (PIDFD_SIGNAL_THREAD: sent to the process here,
            // which its main thread takes unless it blocks the signal).
            return Ok(1);
        }
        // Any process may be waited for through a pidfd, and signalled as `kill` may.
        let known = self.children.pids.lock().unwrap().contains(&target);
        if sig != 0 && !(known || super::host_procs::signals_reach_outside()) {
            return Err(Errno::ESRCH);
        }
        let mut si = [0u8; 128];
        if info != 0 {
            si = g.read(info)?;
        }
        let si_ptr = if info != 0 { ptr(si.as_ptr()) } else { 0 };
        // SAFETY: `si` is a siginfo buffer of this frame (or no pointer).
        unsafe {
            self.sys(libc::SYS_pidfd_send_signal, &[h.raw() as libc::c_long, int(sig), si_ptr, flags as libc::c_long])
        }
    }

    /// The host process that pidfd_send_signal's descriptor `fd` names: a pidfd's (the `Pid:`
    /// of its fdinfo), or a `/proc/<pid>` directory's (psmisc's `killall` sends through one),
    /// which the host's own answer to signal 0 tells from other files: EBADF for those, and for
    /// a thread's `/proc/<pid>/task/<tid>`, as Linux answers.
    fn signal_target(&self, fd: i32) -> SysResult<i32> {
        let pid = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}"))
            .ok()
            .and_then(|t| t.lines().find_map(|l| l.strip_prefix("Pid:").and_then(|v| v.trim().parse::<i32>().ok())));
        if let Some(pid) = pid {
            return Ok(pid);
        }
        // SAFETY: no pointers; signal 0 only asks whether the process may be signalled.
        unsafe { self.sys(libc::SYS_pidfd_send_signal, &[fd as libc::c_long, 0, 0, 0])? };
        super::host_procs::pid_of_proc_dir(fd).ok_or_else(|| {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                eprintln!(
                    "hrt: pidfd_send_signal through a /proc/<pid> directory of a procfs other than hrt's own /proc is not supported: returning EBADF (reported once)"
                )
            });
            Errno::EBADF
        })
    }

    /// rt_sigqueueinfo(pid, sig, info) to another process (the kernel keeps the program's own),
    /// as `kill` may reach it: the host's, with the program's siginfo, whose rule on forged
    /// codes the host applies.
    pub(super) fn rt_sigqueueinfo(&self, g: Guest, pid: u64, sig: u64, info: u64) -> SysResult<i64> {
        let pid = pid as i32;
        let known = self.children.pids.lock().unwrap().contains(&pid);
        if pid <= 0 || sig != 0 && !(known || super::host_procs::signals_reach_outside()) {
            return Err(Errno::ESRCH);
        }
        let si: [u8; 128] = g.read(info)?;
        // SAFETY: `si` is a siginfo buffer of this frame.
        unsafe { self.sys(libc::SYS_rt_sigqueueinfo, &[pid as libc::c_long, int(sig), ptr(si.as_ptr())]) }
    }

    /// tgkill(tgid, tid, sig) or, with `info`, rt_tgsigqueueinfo to a thread of another
    /// process (the kernel keeps the program's own), as `kill` may reach the process: the
    /// host's. A thread of another HRT program is its `hrt`'s; the one whose tid is the pid
    /// passes the signal on to that program (`taken_signals::take_own_pending`).
    pub(super) fn thread_signal(&self, g: Guest, tgid: u64, tid: u64, sig: u64, info: Option<u64>) -> SysResult<i64> {
        let (tgid, tid) = (tgid as i32, tid as i32);
        if tgid <= 0 || tid <= 0 {
            return Err(Errno::EINVAL);
        }
        // SAFETY: getpid takes no arguments.
        let known = self.children.pids.lock().unwrap().contains(&tgid) && tgid != unsafe { libc::getpid() };
        if sig != 0 && !(known || super::host_procs::signals_reach_outside()) {
            return Err(Errno::ESRCH);
        }
        let Some(info) = info else {
            // SAFETY: no pointers.
            return unsafe { self.sys(libc::SYS_tgkill, &[tgid as libc::c_long, tid as libc::c_long, int(sig)]) };
        };
        let si: [u8; 128] = g.read(info)?;
        // SAFETY: `si` is a siginfo buffer of this frame.
        unsafe {
            self.sys(
                libc::SYS_rt_tgsigqueueinfo,
                &[tgid as libc::c_long, tid as libc::c_long, int(sig), ptr(si.as_ptr())],
            )
        }
    }

    /// sethostname or setdomainname (`nr`): the host's, which makes Linux's checks in Linux's
    /// order (EPERM without CAP_SYS_ADMIN before EINVAL above 64 bytes before EFAULT), as a
    /// root program changes the host's names natively; under `--sandbox` (no host /proc) EPERM.
    pub(super) fn set_uts_name(&self, g: Guest, nr: libc::c_long, name: u64, len: u64) -> SysResult<i64> {
        if !super::host_procs::signals_reach_outside() {
            return Err(Errno(libc::EPERM));
        }
        let len = len as i32;
        // Bytes the host may read: none when the length is refused anyway or unreadable (the
        // host's null then gives EFAULT after its own checks).
        let bytes = if (0..=64).contains(&len) { g.read_bytes(name, len as u64).ok() } else { Some(Vec::new()) };
        let p = bytes.as_ref().map_or(0, |b| ptr(b.as_ptr()));
        // SAFETY: `p` is null or holds `len` bytes (when `len` is refused, none are read).
        unsafe { self.sys(nr, &[p, len as libc::c_long]) }
    }

    /// getpgid or getsid of any host process (0: `hrt`'s, which is the program's): Linux answers
    /// them for every process of the namespace, and they change nothing (a shell asks for its
    /// parent's session).
    fn query_process(&self, nr: libc::c_long, pid: i32) -> SysResult<i64> {
        if pid < 0 {
            return Err(Errno::ESRCH);
        }
        // SAFETY: no pointers.
        unsafe { self.sys(nr, &[pid as libc::c_long]) }
    }

    fn kill(&self, pid: i32, sig: u64) -> SysResult<i64> {
        use super::host_procs::{program_tree, signals_reach_outside};
        // SAFETY: getpid and getpgid(0) have no pointers.
        let (me, my_group) = unsafe { (libc::getpid(), libc::getpgid(0)) };
        // Its own children, and any process or group the host lets `hrt` signal, as natively
        // (not under `--sandbox`); kill(-1) only the program's tree (below).
        let known = |p: i32| self.children.pids.lock().unwrap().contains(&p) || signals_reach_outside();
        let send = |p: i32| {
            // SAFETY: no pointers.
            unsafe { self.sys(libc::SYS_kill, &[p as libc::c_long, int(sig)]) }
        };
        match pid {
            // Signal 0 only asks whether the process exists (`kill -0 $PPID`): anyone's.
            p if sig == 0 && !(-1..=0).contains(&p) => send(p),
            p if p > 0 && known(p) => send(p),
            0 => self.kill_own_group(my_group, me, &send),
            p if p < -1 && -p == my_group => self.kill_own_group(my_group, me, &send),
            p if p < -1 && known(-p) => send(p),
            -1 => {
                let others: Vec<i32> = program_tree().into_iter().filter(|&p| p != me).collect();
                // Linux: success if any process could be signalled.
                let sent = others.iter().filter(|&&p| send(p).is_ok()).count();
                if sent > 0 {
                    Ok(0)
                } else if others.is_empty() {
                    Err(Errno::ESRCH)
                } else {
                    Err(Errno(libc::EPERM))
                }
            }
            _ => Err(Errno::ESRCH),
        }
    }

    /// The program's own process group: every member but `hrt` (whose program gets its copy
    /// from its kernel); 1 says so. Where the host's /proc cannot be read (`--sandbox`), the
    /// host signals the whole group, `hrt` included, and the program's copy comes from there,
    /// after `kill` has returned.
    fn kill_own_group(&self, group: i32, me: i32, send: &dyn Fn(i32) -> SysResult<i64>) -> SysResult<i64> {
        let Some(members) = super::host_procs::group_members(group) else { return send(-group) };
        for member in members {
            if member != me {
                // A member that went or may not be signalled does not fail the call (the caller
                // itself was).
                let _ = send(member);
            }
        }
        Ok(1)
    }

    /// The host reaped child `pid` (or reported how it ended): it may no longer be signalled.
    fn reaped(&self, pid: i64) {
        self.children.pids.lock().unwrap().remove(&(pid as i32));
        super::exec_marks::forget(pid as i32);
    }

    /// A waited-for child's ru_maxrss as the program's: a forked `hrt`'s less `hrt`'s own
    /// share (`program_rss`), a host program's as it is; the largest so far is the program's
    /// RUSAGE_CHILDREN figure (`max_rss`). `reaped`: the wait took the child.
    fn child_rss(&self, pid: i64, host_kib: libc::c_long, reaped: bool) -> libc::c_long {
        let forked = self.children.forked.lock().unwrap();
        let kib = if forked.contains(&(pid as i32)) { program_rss(host_kib) } else { host_kib };
        drop(forked);
        if reaped {
            self.children.forked.lock().unwrap().remove(&(pid as i32));
            CHILDREN_MAX_RSS_KIB.fetch_max(kib, std::sync::atomic::Ordering::Relaxed);
        }
        kib
    }

    /// Blocks until a child that `waitid(idtype, id, options)` selects can be waited for,
    /// leaving it waitable (WNOWAIT), so that the wait can still answer for a signal that came
    /// first: the host's signal reaches the program only once the kernel takes it, tens of
    /// microseconds or more after it reached `hrt`, and a child killed by the same `kill(0,
    /// SIGTERM)` (timeout(1), a shell's Ctrl-C) ended in that gap. The host's wait4 then gave
    /// make the child where Linux's gave EINTR, and make's handler found its children gone
    /// ("wait: No child processes"). Err(`SIGNAL_CAME_FIRST`) when a signal other than
    /// SIGCHLD reached `hrt` since `first` (`host_signals::passed_besides_sigchld`) or still
    /// waits for the kernel (`host_signals::untaken_besides_sigchld`); EINTR
    /// when the kernel cancelled the wait for another reason (a signal within the program).
    fn until_waitable(&self, idtype: u32, id: libc::c_long, options: libc::c_long, first: u64) -> SysResult<()> {
        // SAFETY: an all-zero siginfo is valid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let peek = (options & !(libc::WNOHANG as libc::c_long)) | libc::WNOWAIT as libc::c_long;
        // SAFETY: a pointer to our own local; no rusage.
        let r = unsafe { self.sys(libc::SYS_waitid, &[idtype as libc::c_long, id, ptr(&raw mut info), peek, 0]) };
        let came_first = crate::vm::host_signals::passed_besides_sigchld() != first
            || crate::vm::host_signals::untaken_besides_sigchld();
        if came_first && matches!(r, Ok(_) | Err(Errno::EINTR)) {
            return Err(Errno(hrt_abi::channel::SIGNAL_CAME_FIRST as i32));
        }
        r.map(|_| ())
    }

    /// `until_waitable` for a blocking wait: Ok(false) once a child is waitable, Ok(true) if
    /// the kernel cancelled the wait (a child already waitable is still the answer, as Linux
    /// looks at the children before it looks for signals).
    fn wait_interrupted(&self, idtype: u32, id: libc::c_long, options: libc::c_long, first: u64) -> SysResult<bool> {
        match self.until_waitable(idtype, id, options, first) {
            Ok(()) => Ok(false),
            Err(Errno::EINTR) => Ok(true),
            Err(e) => Err(e),
        }
    }

    /// The wait (`nr`, with WNOHANG in `args`) that takes the child a blocking wait saw, or
    /// answers a WNOHANG wait. Made directly, never given up for a cancel (`host::restarting`
    /// would answer EINTR at once): a WNOHANG wait does not sleep, and Linux looks at the
    /// children before it looks for signals. The child's own SIGCHLD, raised in the program
    /// between the blocking look and this one, cancelled the call: the program's waitpid
    /// failed with EINTR where Linux returns the child (kill_group at `--cpus 1` on a loaded
    /// host, 5 runs in 300), and the kernel's second, WNOHANG try was cancelled the same way.
    ///
    /// # Safety
    /// The pointer arguments are valid for the call.
    unsafe fn look_for_child(&self, nr: libc::c_long, args: &[libc::c_long]) -> SysResult<i64> {
        let mut a = [0 as libc::c_long; 5];
        a[..args.len()].copy_from_slice(args);
        // SAFETY: the caller vouches for the pointers.
        let r = super::host::ret(unsafe { libc::syscall(nr, a[0], a[1], a[2], a[3], a[4]) });
        crate::vm::host_signals::pass_pending_sigchld();
        r
    }

    /// wait4. A blocking wait first waits for a child without taking it (`until_waitable`).
    /// A wait the program's signal interrupted (the caller's kernel cancelled it, perhaps
    /// before the host call began) still reports a child that is already waitable, as Linux,
    /// which looks at the children before it looks for a signal, does: the SIGCHLD of the
    /// very child waited for (passed on by the host) made the program's waitpid fail with
    /// EINTR where Linux returns the child (kill_group's grandchild, 2 runs in 40 on a loaded
    /// host).
    fn wait4(&self, g: Guest, a: &[u64; 6]) -> SysResult<i64> {
        let (pid, status, options, rusage) = (int(a[0]), a[1], a[2], a[3]);
        let allowed = (libc::WNOHANG | libc::WUNTRACED | libc::WCONTINUED | libc::__WALL | libc::__WCLONE) as u64;
        if options & !(allowed | 0x2000_0000) != 0 {
            return Err(Errno::EINVAL);
        }
        let blocking = options & libc::WNOHANG as u64 == 0;
        // waitid's view of the same wait (process group 0 is the caller's, as for wait4).
        let (idtype, id) = match pid {
            -1 => (libc::P_ALL, 0),
            p if p <= 0 => (libc::P_PGID, -p),
            p => (libc::P_PID, p),
        };
        let first = crate::vm::host_signals::passed_besides_sigchld();
        let mut st: libc::c_int = 0;
        // SAFETY: an all-zero rusage is valid.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let r = loop {
            let waited = int(options) | libc::WEXITED as libc::c_long;
            let interrupted = blocking && self.wait_interrupted(idtype, id, waited, first)?;
            let look = [pid, ptr(&raw mut st), int(options) | libc::WNOHANG as libc::c_long, ptr(&raw mut ru)];
            // SAFETY: pointers to our own locals; WNOHANG does not block.
            let r = unsafe { self.look_for_child(libc::SYS_wait4, &look) };
            if interrupted && !r.is_ok_and(|p| p > 0) {
                return Err(Errno::EINTR);
            }
            // Zero after a child was seen: another of the program's threads took it.
            let r = r?;
            if r > 0 || !blocking {
                break r;
            }
        };
        if r > 0 {
            let ended = libc::WIFEXITED(st) || libc::WIFSIGNALED(st);
            if ended {
                crate::vm::child_reaped(r as i32, libc::WIFSIGNALED(st), super::exec_marks::execd(r as i32));
                self.reaped(r);
                let (code, status) = if libc::WIFEXITED(st) {
                    (libc::CLD_EXITED, libc::WEXITSTATUS(st))
                } else {
                    (if libc::WCOREDUMP(st) { libc::CLD_DUMPED } else { libc::CLD_KILLED }, libc::WTERMSIG(st))
                };
                if !self.children.stand_ins.is_stand_in(r as i32) {
                    crate::vm::host_signals::pass_reaped_sigchld(r as i32, code, status);
                }
            }
            ru.ru_maxrss = self.child_rss(r, ru.ru_maxrss, ended);
            if status != 0 {
                g.write(status, &st)?;
            }
            if rusage != 0 {
                g.write(rusage, &ru)?;
            }
            return Ok(self.children.stand_ins.shown(r as i32, ended) as i64);
        }
        Ok(r)
    }

    fn waitid(&self, g: Guest, a: &[u64; 6]) -> SysResult<i64> {
        let (idtype, id, infop, options, rusage) = (a[0] as u32, int(a[1]), a[2], int(a[3]), a[4]);
        // The program's pidfd is one of its descriptors: the host's waits on the host's. A
        // stand-in's (`stand_ins`) may be a "clone" child to the host: __WALL.
        let mut options = options;
        let id = if idtype == P_PIDFD {
            let h = self.fds().get(a[1])?;
            if self.children.stand_ins.is_pidfd(&h) {
                options |= libc::__WALL as libc::c_long;
            }
            h.raw() as libc::c_long
        } else {
            id
        };
        if ![libc::P_ALL, libc::P_PID, libc::P_PGID, P_PIDFD].contains(&idtype) {
            return Err(Errno::EINVAL);
        }
        let blocking = options & libc::WNOHANG as libc::c_long == 0;
        let first = crate::vm::host_signals::passed_besides_sigchld();
        let mut info: libc::siginfo_t;
        // SAFETY: an all-zero rusage is valid.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // As wait4: a blocking wait waits for a child without taking it first.
        let r = loop {
            let interrupted = blocking && self.wait_interrupted(idtype, id, options, first)?;
            // SAFETY: all-zero siginfo is valid.
            info = unsafe { std::mem::zeroed() };
            let look = [
                idtype as libc::c_long,
                id,
                ptr(&raw mut info),
                options | libc::WNOHANG as libc::c_long,
                ptr(&raw mut ru),
            ];
            // SAFETY: pointers to our own locals; WNOHANG does not block.
            let r = unsafe { self.look_for_child(libc::SYS_waitid, &look) };
            // SAFETY: waitid filled in the siginfo, or it is still zero.
            let seen = unsafe { info.si_pid() } != 0;
            if interrupted && !(r.is_ok() && seen) {
                return Err(Errno::EINTR);
            }
            // No child after one was seen: another of the program's threads took it.
            if !blocking || seen {
                break r?;
            }
        };
        // SAFETY: waitid filled in the siginfo (zero pid: nothing to report).
        let pid = unsafe { info.si_pid() };
        let ended = pid > 0 && options & libc::WNOWAIT as libc::c_long == 0 && matches!(info.si_code, 1..=3);
        if ended {
            // CLD_EXITED, CLD_KILLED, CLD_DUMPED.
            crate::vm::child_reaped(pid, info.si_code != libc::CLD_EXITED, super::exec_marks::execd(pid));
            self.reaped(pid as i64);
            if !self.children.stand_ins.is_stand_in(pid) {
                // SAFETY: waitid filled in the siginfo.
                crate::vm::host_signals::pass_reaped_sigchld(pid, info.si_code, unsafe { info.si_status() });
            }
        }
        if pid > 0 {
            ru.ru_maxrss = self.child_rss(pid as i64, ru.ru_maxrss, ended);
            let shown = self.children.stand_ins.shown(pid, ended);
            // SAFETY: si_pid of SIGCHLD's siginfo is the int at byte 16, inside the struct.
            unsafe { std::ptr::write_unaligned((&raw mut info as *mut u8).add(16) as *mut i32, shown) };
        }
        if infop != 0 {
            g.write(infop, &info)?;
        }
        if rusage != 0 {
            g.write(rusage, &ru)?;
        }
        Ok(r)
    }

    /// Reads a NULL-terminated array of string pointers (argv, envp) from the program.
    fn string_array(g: &Guest, mut at: u64, total: &mut usize) -> SysResult<Vec<CString>> {
        let mut out = Vec::new();
        if at == 0 {
            return Ok(out);
        }
        loop {
            let p: u64 = g.read(at)?;
            if p == 0 {
                return Ok(out);
            }
            let s =
                g.read_cstr(p, MAX_ARG_STRLEN).map_err(|e| if e == Errno::ENAMETOOLONG { Errno::E2BIG } else { e })?;
            *total += s.as_bytes().len() + 1 + 8;
            if *total > ARG_MAX {
                return Err(Errno::E2BIG);
            }
            out.push(s);
            at = at.checked_add(8).ok_or(Errno::EFAULT)?;
        }
    }

    /// execveat(dirfd, path, argv, envp, flags) in spawn child `c`: starts the host program.
    fn exec(&self, g: Guest, c: &Arc<ChildCtx>, a: &[u64; 6]) -> SysResult<i64> {
        let cwd = c.state.lock().unwrap().cwd.clone();
        let target = self.exec_target(g, [a[0], a[1], a[2], a[3], a[4]], cwd.as_ref())?;
        let filters = exec_filters(a[5])?;
        let st = c.state.lock().unwrap();
        let job = Spawn {
            target,
            fds: c.fds.inherited(),
            cwd: st.cwd.clone(),
            pgid: st.pgid,
            setsid: st.setsid,
            ctty: st.ctty,
            ignored: st.ignored,
            mask: st.mask,
            real_timer: [0, 0],
            pending: 0,
            cpu_timers: [0; 4],
            filters,
            affinity: host_affinity(st.affinity, self.cpus),
        };
        drop(st);
        let pid = self.children.on_spawner(Work::Spawn(job))?;
        self.children.pids.lock().unwrap().insert(pid as i32);
        // The child is now the host process: its context (and its table copy) goes.
        let ctx = self.children.ctxs.lock().unwrap().iter().find(|(_, v)| Arc::ptr_eq(v, c)).map(|(k, _)| *k);
        if let Some(k) = ctx {
            self.children.ctxs.lock().unwrap().remove(&k);
        }
        Ok(pid)
    }

    /// What execveat(dirfd, path, argv, envp, flags) would run, checked as Linux's exec checks
    /// it: the host path the checked walk reached, the path as given, argv and envp (E2BIG as
    /// Linux). `cwd`: a spawn child's own working directory, if it changed it.
    pub(super) fn exec_target(&self, g: Guest, a: [u64; 5], cwd: Option<&Arc<HostFd>>) -> SysResult<ExecTarget> {
        let (dirfd, path, flags) = (a[0], a[1], a[4]);
        if flags & !((libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW) as u64) != 0 {
            return Err(Errno::EINVAL);
        }
        let raw = g.read_path(path)?.into_bytes();
        let given = (dirfd as u32 as i32 == libc::AT_FDCWD && !raw.is_empty()).then(|| raw.clone());
        let execfn = match (&given, raw.first()) {
            (Some(g), _) => g.clone(),
            (None, Some(b'/')) => raw.clone(),
            (None, Some(_)) => [format!("/dev/fd/{}/", dirfd as u32 as i32).into_bytes(), raw.clone()].concat(),
            (None, None) => format!("/dev/fd/{}", dirfd as u32 as i32).into_bytes(),
        };
        let execfn = CString::new(execfn).map_err(|_| Errno::ENOENT)?;
        let mut by_fd = None;
        let mut host_name = None;
        let path = if raw.is_empty() {
            if flags & libc::AT_EMPTY_PATH as u64 == 0 {
                return Err(Errno::ENOENT);
            }
            let h = self.fds().get(dirfd)?;
            let (path, copy) = self.executable(&self.resolve(dirfd, Vec::new(), true)?, Some(h))?;
            by_fd = Some((dirfd as u32 as i32, copy));
            path
        } else {
            // A relative path in a child that changed its directory starts there.
            let raw = match (cwd, raw.first(), dirfd as u32 as i32 == libc::AT_FDCWD) {
                (Some(d), Some(&b), true) if b != b'/' => {
                    let mut p = std::fs::read_link(format!("/proc/self/fd/{}", d.raw()))
                        .map_err(|_| Errno::ENOENT)?
                        .into_os_string()
                        .into_encoded_bytes();
                    p.push(b'/');
                    p.extend_from_slice(&raw);
                    p
                }
                _ => raw,
            };
            let follow = flags & libc::AT_SYMLINK_NOFOLLOW as u64 == 0;
            let (path, file) = self.executable(&self.resolve(dirfd, raw, follow)?, None)?;
            host_name = given.as_deref().filter(|g| same_file_by_name(cwd, g, follow, &file)).map(<[u8]>::to_vec);
            path
        };
        let mut total = 0;
        let argv = Self::string_array(&g, a[2], &mut total)?;
        let envp = Self::string_array(&g, a[3], &mut total)?;
        let name = match given {
            Some(g) => CString::new(g).map_err(|_| Errno::ENOENT)?,
            None => path.clone(),
        };
        let host_name = host_name.map(CString::new).transpose().map_err(|_| Errno::ENOENT)?;
        Ok(ExecTarget { path, name, execfn, argv, envp, by_fd, host_name })
    }

    /// The host path to exec for a resolved path: what the walk found, as the host names it
    /// (`/proc/self/fd/N` of an O_PATH descriptor, read back), so the exec reaches the file the
    /// checked walk reached; and a host descriptor of it (close on exec). `held`: the
    /// descriptor itself (AT_EMPTY_PATH).
    fn executable(&self, at: &super::paths::At, held: Option<Arc<HostFd>>) -> SysResult<(CString, OwnedFd)> {
        if at.synthetic.is_some() {
            return Err(Errno::EACCES);
        }
        let fd = match held {
            Some(h) => {
                // SAFETY: F_DUPFD_CLOEXEC on a descriptor we hold.
                let fd = unsafe {
                    self.sys(libc::SYS_fcntl, &[h.raw() as libc::c_long, libc::F_DUPFD_CLOEXEC as libc::c_long, 0])?
                };
                // SAFETY: a fresh descriptor we own.
                unsafe { OwnedFd::from_raw_fd(fd as i32) }
            }
            None => {
                let flags = at.open_flags((libc::O_PATH | libc::O_CLOEXEC) as libc::c_long);
                // SAFETY: a host C string.
                let fd =
                    unsafe { self.sys(libc::SYS_openat, &[at.dirfd as libc::c_long, ptr(at.path.as_ptr()), flags])? };
                // SAFETY: a fresh descriptor we own.
                unsafe { OwnedFd::from_raw_fd(fd as i32) }
            }
        };
        // SAFETY: fstat writes the struct we pass.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(Errno::last());
        }
        // O_PATH with O_NOFOLLOW opens a link itself, which an exec that does not follow it
        // refuses with ELOOP (its open has no O_PATH).
        if st.st_mode & libc::S_IFMT == libc::S_IFLNK {
            return Err(Errno(libc::ELOOP));
        }
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(Errno::EACCES);
        }
        let p = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).map_err(|_| Errno::ENOENT)?;
        Ok((CString::new(p.into_os_string().into_encoded_bytes()).map_err(|_| Errno::ENOENT)?, fd))
    }
}

/// Whether `given` (a path the program gave, relative to `cwd` or the monitor's directory,
/// which is the program's) names for the host the file the checked walk opened (`file`): the
/// same device and inode, reached outside the trees the walk treats as the program's own
/// (`/proc`, `/dev`). A host exec by the name then runs what the walk checked (a link swapped
/// in later could only lead to what the exec's thread could open itself: its descriptors are
/// the program's by then).
fn same_file_by_name(cwd: Option<&Arc<HostFd>>, given: &[u8], follow: bool, file: &OwnedFd) -> bool {
    if given.starts_with(b"/proc") || given.starts_with(b"/dev") || given.contains(&0) {
        return false;
    }
    let Ok(name) = CString::new(given) else { return false };
    let dir = cwd.map_or(libc::AT_FDCWD, |d| d.raw());
    let flags = if follow { 0 } else { libc::AT_SYMLINK_NOFOLLOW };
    // SAFETY: fstatat and fstat write only the structs we own; the name is a C string.
    unsafe {
        let (mut a, mut b): (libc::stat, libc::stat) = (std::mem::zeroed(), std::mem::zeroed());
        libc::fstatat(dir, name.as_ptr(), &mut a, flags) == 0
            && libc::fstat(file.as_raw_fd(), &mut b) == 0
            && (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
    }
}

impl FdTable {
    /// The descriptors a spawned program keeps: every one without FD_CLOEXEC.
    pub(super) fn inherited(&self) -> Vec<(i32, Arc<HostFd>)> {
        self.snapshot().into_iter().filter(|(_, _, cloexec)| !cloexec).map(|(n, h, _)| (n as i32, h)).collect()
    }
}

/// What the new process does between clone and exec (prepared before the clone: it may only
/// make system calls, sharing the monitor's memory as a vfork child does).
pub(super) struct Prepared {
    pub(super) path: CString,
    pub(super) argv: Vec<*const libc::c_char>,
    pub(super) envp: Vec<*const libc::c_char>,
    /// (source, target): the program's host descriptors and their numbers in the new program.
    pub(super) moves: Vec<(i32, i32)>,
    /// Where each source is first duplicated to (at `above` or higher, in the new process's
    /// own table: duplicated in the monitor's, shared by its threads, the table's growth waited
    /// for an RCU grace period, ~13 ms here), so that no source is overwritten before it moved.
    pub(super) temps: Vec<AtomicI32>,
    /// Runs `[first, last]` of numbers below `above` that are not targets (closed with one
    /// close_range each).
    pub(super) gaps: Vec<(u32, u32)>,
    /// Above every source and target: everything from here up is closed before the exec.
    pub(super) above: i32,
    pub(super) cwd: i32,
    pub(super) pgid: Option<i32>,
    pub(super) setsid: bool,
    pub(super) ctty: Option<(i32, i32)>,
    pub(super) ignored: u64,
    pub(super) mask: libc::sigset_t,
    /// ITIMER_REAL for the new program (all zero: none).
    pub(super) real_timer: libc::itimerval,
    /// Signals to leave pending for it (bit `sig - 1`, blocked by `mask`), and its
    /// ITIMER_VIRTUAL and ITIMER_PROF (all zero: none): a forked child's exec keeps them.
    pub(super) pending: u64,
    pub(super) cpu_timers: [libc::itimerval; 2],
    /// The seccomp filters to install last, oldest first (pointing into the `Spawn`'s).
    pub(super) filters: Vec<libc::sock_fprog>,
    /// fexecve: the descriptor number to exec with execveat(AT_EMPTY_PATH), or -1 (`path`);
    /// with `close_exec_at`, one placed for the exec only, made close-on-exec before it.
    pub(super) exec_at: i32,
    pub(super) close_exec_at: bool,
    /// The host CPUs the new program may run on (`host_affinity`), if the program's are known.
    pub(super) affinity: Option<libc::cpu_set_t>,
    /// The errno of the step that failed, 0 if exec succeeded.
    pub(super) error: AtomicI32,
}

/// The host CPUs that the guest CPUs in `guest` (bit i: vCPU i) run on: vCPU i is pinned to
/// the i-th of the host CPUs `hrt` may use, round robin (`vm::vcpu::pin_to_host_cpu`). None
/// for an empty mask: the kernel sends none while the program has set no thread's CPUs, and
/// its host programs then get `hrt`'s own CPUs (a `--cpus 1` run's `make -j` keeps the
/// host's).
pub(super) fn host_affinity(guest: [u64; 3], vcpus: u32) -> Option<libc::cpu_set_t> {
    let vcpus = vcpus.min(192) as usize;
    let host = crate::vm::allowed_host_cpus();
    if host.is_empty() {
        return None;
    }
    // SAFETY: cpu_set_t is plain data; all zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let mut any = false;
    for cpu in (0..vcpus).filter(|&c| guest[c / 64] & 1 << (c % 64) != 0) {
        // SAFETY: CPU_SET writes inside the set (host CPU numbers are below CPU_SETSIZE).
        unsafe { libc::CPU_SET(host[cpu % host.len()], &mut set) };
        any = true;
    }
    any.then_some(set)
}

pub(super) fn sigset(bits: u64) -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset fill the set we own.
    unsafe {
        let mut s: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut s);
        for sig in 1..=64 {
            if bits & (1 << (sig - 1)) != 0 {
                libc::sigaddset(&mut s, sig);
            }
        }
        s
    }
}

/// The program set PR_SET_NO_NEW_PRIVS: the host programs it starts get it too (as Linux's
/// children inherit it). A forked `hrt` keeps it with its memory.
pub(super) static NO_NEW_PRIVS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The parent-death signal the program asked for in this process (PR_SET_PDEATHSIG; 0: none):
/// a forked child's exec, which starts the host program from a new thread (host_exec.rs), sets
/// it again there, as Linux's exec keeps it. A forked child starts without one, as on Linux.
pub(super) static PDEATH_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Notes PR_SET_PDEATHSIG (see `PDEATH_SIGNAL`).
pub fn note_pdeath_signal(sig: i32) {
    PDEATH_SIGNAL.store(sig, Ordering::Relaxed);
}

/// Notes PR_SET_NO_NEW_PRIVS (see `NO_NEW_PRIVS`).
pub fn note_no_new_privs() {
    NO_NEW_PRIVS.store(true, Ordering::Relaxed);
}

/// The program's limits that `hrt`'s own host process does not carry, (soft, hard) once known
/// (`unknown_limit` before): RLIMIT_NOFILE (`hrt`'s descriptors are not the program's), RLIMIT_CPU
/// (`hrt`'s CPU time is the monitor's too: its soft limit is lifted, `lift_cpu_soft_limit`),
/// RLIMIT_AS and RLIMIT_DATA (`hrt`'s address space holds the guest's whole memory, a private
/// writable mapping: lifted likewise, `run_memory::address_space_budget`), and every other limit the program sets, which the
/// kernel keeps for itself (RLIMIT_STACK sizes the stack of a program it execs; RLIMIT_FSIZE
/// alone is set on `hrt` itself, where forwarded writes meet it).
/// The host programs the program starts get them, as Linux's children inherit them. A forked
/// `hrt` keeps them with its memory.
pub(super) static CHILD_LIMITS: [(u32, [std::sync::atomic::AtomicU64; 2]); 15] = [
    (libc::RLIMIT_NOFILE, unknown_limit()),
    (libc::RLIMIT_CPU, unknown_limit()),
    (libc::RLIMIT_AS, unknown_limit()),
    (libc::RLIMIT_STACK, unknown_limit()),
    (libc::RLIMIT_DATA, unknown_limit()),
    (libc::RLIMIT_CORE, unknown_limit()),
    (libc::RLIMIT_RSS, unknown_limit()),
    (libc::RLIMIT_NPROC, unknown_limit()),
    (libc::RLIMIT_MEMLOCK, unknown_limit()),
    (libc::RLIMIT_LOCKS, unknown_limit()),
    (libc::RLIMIT_SIGPENDING, unknown_limit()),
    (libc::RLIMIT_MSGQUEUE, unknown_limit()),
    (libc::RLIMIT_NICE, unknown_limit()),
    (libc::RLIMIT_RTPRIO, unknown_limit()),
    // A forked child's host exec reset it to unlimited until stop 101.
    (libc::RLIMIT_RTTIME, unknown_limit()),
];

/// A `CHILD_LIMITS` entry not known yet: (1, 0), a soft limit above the hard one, which no
/// real limit has. ((0, 0) was the mark until 2026-12-03, and a program's `ulimit -c 0`, a
/// real (0, 0), left its children the host's core limit.)
const fn unknown_limit() -> [std::sync::atomic::AtomicU64; 2] {
    [std::sync::atomic::AtomicU64::new(1), std::sync::atomic::AtomicU64::new(0)]
}

/// Whether a `CHILD_LIMITS` entry holds a limit (`unknown_limit` otherwise).
pub(super) fn limit_known(limit: &libc::rlimit) -> bool {
    limit.rlim_cur <= limit.rlim_max
}

/// The program's limit `resource` where it differs from `hrt`'s own (see `CHILD_LIMITS`): None
/// while the program has not set it, when `hrt`'s own limit is the program's.
pub fn program_limit(resource: u32) -> Option<libc::rlimit> {
    let (_, l) = CHILD_LIMITS.iter().find(|(r, _)| *r == resource)?;
    let limit = libc::rlimit { rlim_cur: l[0].load(Ordering::Relaxed), rlim_max: l[1].load(Ordering::Relaxed) };
    limit_known(&limit).then_some(limit)
}

/// Notes the program's limit `resource` (see `CHILD_LIMITS`; others are the host's already).
pub fn note_program_limit(resource: u32, soft: u64, hard: u64) {
    if let Some((_, l)) = CHILD_LIMITS.iter().find(|(r, _)| *r == resource) {
        l[0].store(soft, Ordering::Relaxed);
        l[1].store(hard, Ordering::Relaxed);
    }
}

/// `hrt run` starts the program with `hrt`'s own CPU limit, which the kernel enforces on the
/// program's CPU time (SIGXCPU at the soft limit, SIGKILL at the hard one). The host would
/// count `hrt`'s time, the monitor's threads and idle vCPUs included: its soft limit is lifted
/// to the hard one, which only root could lift (the host then still kills `hrt` once all its
/// threads together have used that much).
pub fn lift_cpu_soft_limit() {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_CPU, &mut rl) } != 0 || rl.rlim_cur == rl.rlim_max {
        return;
    }
    note_program_limit(libc::RLIMIT_CPU, rl.rlim_cur, rl.rlim_max);
    let lifted = libc::rlimit { rlim_cur: rl.rlim_max, rlim_max: rl.rlim_max };
    // SAFETY: setrlimit reads the struct we pass; raising a soft limit to the hard one is allowed.
    unsafe { libc::setrlimit(libc::RLIMIT_CPU, &lifted) };
}

/// Host threads `hrt` may run per process of the program besides its vCPU threads: the main,
/// fork, poller, spawner and signal threads, and forwarding workers for blocking calls.
const MONITOR_THREADS: u64 = 24;

/// RLIMIT_NPROC counts host threads, and `hrt` runs a dozen or more of its own for each of the
/// program's processes: under `ulimit -u 30` a program that dropped root (`setuid`, where the
/// limit starts to apply) could start none of its forked children's vCPU threads ("fork: the
/// child cannot start", its fork having answered a pid), nor a worker for a blocking `read`.
/// `hrt`'s own limit becomes the program's times the threads an `hrt` process may have (where
/// the host allows it: CAP_SYS_RESOURCE; else the hard limit), so a fork bomb stays bounded;
/// the program keeps its own limit (`getrlimit`, and the host programs it starts get it).
pub fn lift_process_limit(cpus: u32) {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut rl) } != 0 || rl.rlim_cur == libc::RLIM_INFINITY {
        return;
    }
    note_program_limit(libc::RLIMIT_NPROC, rl.rlim_cur, rl.rlim_max);
    let per_process = MONITOR_THREADS + cpus as u64;
    let wanted = rl.rlim_max.saturating_mul(per_process);
    for lifted in [
        libc::rlimit { rlim_cur: wanted, rlim_max: wanted.max(rl.rlim_max) },
        libc::rlimit { rlim_cur: rl.rlim_max, rlim_max: rl.rlim_max },
    ] {
        // SAFETY: setrlimit reads the struct we pass; raising the hard limit needs
        // CAP_SYS_RESOURCE (EPERM otherwise), raising the soft one up to it does not.
        if unsafe { libc::setrlimit(libc::RLIMIT_NPROC, &lifted) } == 0 {
            return;
        }
    }
}

/// The program's RLIMIT_NOFILE soft limit when `hrt` lifted or raised its own (0: neither).
static ORIGINAL_NOFILE_SOFT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// `hrt`'s host descriptors are the program's (one per descriptor of its table) and its own:
/// the KVM ones, and one per file the program maps privately (kept for its pages). Under the
/// program's soft RLIMIT_NOFILE they took room from the program (python3 at `ulimit -Sn 50`
/// opened 24 files, natively 46), so `hrt`'s soft limit is lifted to the hard one; the
/// program's table keeps the program's limit (`program_descriptor_limit`), and the programs it
/// starts get it. Where soft and hard are the same (`ulimit -n 200`, and this host's default),
/// a program that filled its table left the monitor none: the path walk's lookups failed with
/// EMFILE (`stat` of any file), and so did the next vCPU (`hrt` ended with status 1). Then
/// both limits are raised by `MONITOR_FDS` where the host allows it (CAP_SYS_RESOURCE, up to
/// fs.nr_open), else the program's table stops that many short of its limit.
pub fn lift_descriptor_soft_limit() {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 || rl.rlim_cur > rl.rlim_max {
        return;
    }
    note_program_limit(libc::RLIMIT_NOFILE, rl.rlim_cur, rl.rlim_max);
    if rl.rlim_cur < rl.rlim_max {
        ORIGINAL_NOFILE_SOFT.store(rl.rlim_cur.max(1), Ordering::Relaxed);
        let lifted = libc::rlimit { rlim_cur: rl.rlim_max, rlim_max: rl.rlim_max };
        // SAFETY: setrlimit reads the struct we pass; raising a soft limit to the hard one is allowed.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lifted) };
        return;
    }
    let raised = rl.rlim_max.saturating_add(MONITOR_FDS);
    let room = libc::rlimit { rlim_cur: raised, rlim_max: raised };
    // SAFETY: setrlimit reads the struct we pass; refused unless the host allows the raise.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &room) };
    ORIGINAL_NOFILE_SOFT.store(rl.rlim_cur.max(1), Ordering::Relaxed);
}

/// Descriptors kept for the monitor beyond the program's table (`table_limit`).
const MONITOR_FDS: u64 = 64;

/// The VM's vCPUs (`note_vcpus`).
static VCPUS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Notes how many vCPUs the VM may make (each takes a descriptor when it is made).
pub fn note_vcpus(n: u32) {
    VCPUS.store(u64::from(n), Ordering::Relaxed);
}

/// What the monitor keeps for itself under a hard RLIMIT_NOFILE of `hard` it cannot raise:
/// `MONITOR_FDS`, but only a quarter of a small limit, and not less than its own few
/// descriptors, one per vCPU and 16 for the files the program maps (a dynamic program with a
/// locale maps ~13). With all 64 kept, `ulimit -n 64` left the program 3 descriptors and
/// ld.so could not open libc (status 127, natively the program ran).
fn monitor_reserve(hard: u64) -> u64 {
    MONITOR_FDS.min((hard / 4).max(24 + 2 * VCPUS.load(Ordering::Relaxed)))
}

/// How many descriptors the program's table may hold open at once for a soft RLIMIT_NOFILE of
/// `soft`: that many, unless the monitor's own hard limit leaves fewer than its reserve
/// (`monitor_reserve`) beyond, then that many short of it (its soft limit is its hard one:
/// `lift_descriptor_soft_limit`). Their numbers may go up to `soft` all the same (a guest
/// number is not a host one): `dup2` to 19,999 under a limit of 20,000 works as on Linux
/// (CPython's test_selectors and rustix's select test asked for it; it was EBADF).
pub fn table_limit(soft: u64) -> u64 {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return soft;
    }
    soft.min(rl.rlim_max.saturating_sub(monitor_reserve(rl.rlim_max))).max(3)
}

/// The program's RLIMIT_NOFILE soft limit if `hrt` lifted its own (`lift_descriptor_soft_limit`).
pub fn program_descriptor_limit() -> Option<u64> {
    match ORIGINAL_NOFILE_SOFT.load(Ordering::Relaxed) {
        0 => None,
        soft => Some(soft),
    }
}

/// What the new process (or, for a forked child's exec, the new thread: `host_exec`) does
/// between clone and exec, prepared here, with the file's arguments (`args`, which
/// `Prepared::argv` points into).
pub(super) struct Ready {
    pub prep: Prepared,
    _args: Vec<CString>,
}

/// The seccomp filters `id` names (`process::SECCOMP_FILTER`) for an exec that starts a host
/// program. With `--children hrt` that program would be `hrt`, which the filters would hold
/// instead of the program: ENOSYS, said once.
pub(super) fn exec_filters(id: u64) -> SysResult<Vec<Vec<libc::sock_filter>>> {
    if id != 0 && !super::hrt_children::host_mode() {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            eprintln!("hrt: an exec under seccomp filters with --children hrt is not implemented (the filters would hold hrt): returning ENOSYS")
        });
        return Err(Errno::ENOSYS);
    }
    super::seccomp_filters::chain(id)
}

/// Prepares `job`; its descriptors must stay open until the new process has exec'd.
pub(super) fn prepare(job: &Spawn) -> SysResult<Ready> {
    let mut moves: Vec<(i32, i32)> = job.fds.iter().map(|(n, h)| (h.raw(), *n)).collect();
    let mut targets: HashSet<i32> = job.fds.iter().map(|&(n, _)| n).collect();
    // fexecve: the descriptor goes to the program's number (AT_EXECFN is then `/dev/fd/N` with
    // the program's N, as on Linux). A descriptor the program keeps is there already; a
    // close-on-exec one is put there for the exec only. In host mode the new process execs it
    // (execveat); with `--children hrt` the child `hrt` reads the program through it.
    let mut placed = false;
    if let Some((n, copy)) = &job.target.by_fd {
        if targets.insert(*n) {
            moves.push((copy.as_raw_fd(), *n));
            placed = true;
        }
    }
    let host_mode = super::hrt_children::host_mode();
    // `--children hrt`: the parent's /dev/kvm goes just above the program's descriptors, for
    // the child `hrt` (which closes it before it looks at what it inherited).
    let kvm_at = super::hrt_children::kvm_descriptor().map(|kvm| {
        let at = targets.iter().max().map_or(3, |&n| n + 1).max(3);
        moves.push((kvm, at));
        targets.insert(at);
        at
    });
    let by_fd = job.target.by_fd.as_ref().map(|(n, copy)| (*n, copy.as_raw_fd(), placed));
    // `--children hrt`: `hrt run ... -- PATH ARGS` instead.
    let exec_path = match &job.target.host_name {
        Some(name) if host_mode => name,
        _ => &job.target.path,
    };
    let (path, args) = super::hrt_children::command(
        exec_path,
        &job.target.argv,
        (&job.target.name, &job.target.execfn),
        by_fd,
        kvm_at,
    )?;
    let (exec_at, close_exec_at) = match by_fd {
        Some((n, _, placed)) if host_mode => (n, placed),
        _ => (-1, false),
    };
    let above = moves.iter().map(|&(src, dst)| src.max(dst)).max().unwrap_or(2).max(2) + 1;
    let argv: Vec<*const libc::c_char> = args.iter().map(|s| s.as_ptr()).chain([std::ptr::null()]).collect();
    let envp: Vec<*const libc::c_char> = job.target.envp.iter().map(|s| s.as_ptr()).chain([std::ptr::null()]).collect();
    let prep = Prepared {
        path,
        argv,
        envp,
        temps: moves.iter().map(|_| AtomicI32::new(-1)).collect(),
        moves,
        gaps: gap_runs(above, &targets),
        above,
        cwd: job.cwd.as_ref().map_or(-1, |d| d.raw()),
        pgid: job.pgid,
        setsid: job.setsid,
        ctty: job.ctty,
        ignored: job.ignored,
        mask: sigset(job.mask),
        real_timer: itimerval(job.real_timer),
        pending: job.pending & job.mask,
        cpu_timers: [
            itimerval([job.cpu_timers[0], job.cpu_timers[1]]),
            itimerval([job.cpu_timers[2], job.cpu_timers[3]]),
        ],
        filters: super::seccomp_filters::programs(&job.filters),
        exec_at,
        close_exec_at,
        affinity: job.affinity,
        error: AtomicI32::new(0),
    };
    Ok(Ready { prep, _args: args })
}

/// An itimerval of (time left, interval) in nanoseconds, rounded up to microseconds (a timer
/// with time left stays armed).
fn itimerval([left, interval]: [u64; 2]) -> libc::itimerval {
    let tv = |ns: u64| {
        let us = ns.div_ceil(1000);
        libc::timeval { tv_sec: (us / 1_000_000) as libc::time_t, tv_usec: (us % 1_000_000) as libc::suseconds_t }
    };
    libc::itimerval { it_interval: tv(interval), it_value: tv(left) }
}

/// The runs of numbers in `0..above` that are not in `targets`, as inclusive ranges.
fn gap_runs(above: i32, targets: &HashSet<i32>) -> Vec<(u32, u32)> {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for n in (0..above).filter(|n| !targets.contains(n)).map(|n| n as u32) {
        match runs.last_mut() {
            Some(last) if last.1 + 1 == n => last.1 = n,
            _ => runs.push((n, n)),
        }
    }
    runs
}

/// Starts `job` on the host; its pid, or the errno of the step that failed.
fn spawn(job: &Spawn) -> SysResult<i64> {
    let ready = prepare(job)?;
    let prep = &ready.prep;
    take_programs_niceness();
    let mut stack = vec![0u8; 64 << 10];
    // SAFETY: the stack's end, 16-byte aligned below.
    let top = unsafe { stack.as_mut_ptr().add(stack.len()) } as usize & !15;
    let all = sigset(u64::MAX);
    // SAFETY: an all-zero sigset is a valid buffer for the old mask.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // Signals stay blocked until the new process has reset its dispositions (the monitor's
    // handlers must not run in it).
    // SAFETY: masks we own.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old) };
    // SAFETY: CLONE_VM|CLONE_VFORK: this thread waits until the new process execs or exits;
    // `child` only makes system calls on `prep`, which outlives that, on its own stack.
    let pid = unsafe {
        libc::clone(
            child,
            top as *mut libc::c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            prep as *const Prepared as *mut libc::c_void,
        )
    };
    let clone_error = Errno::last();
    // SAFETY: restoring our own mask.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    drop(stack);
    if pid < 0 {
        return Err(clone_error);
    }
    let e = prep.error.load(Ordering::SeqCst);
    if e != 0 {
        // The new process reported why, then exited: reap it.
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        return Err(Errno(e));
    }
    Ok(pid as i64)
}

/// The new process, from clone to exec: system calls only (it shares the monitor's memory).
extern "C" fn child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: the spawner passed its `Prepared`, alive until this process execs or exits.
    let p = unsafe { &*(arg as *const Prepared) };
    let fail = |p: &Prepared| -> libc::c_int {
        // SAFETY: errno of this thread.
        p.error.store(unsafe { *libc::__errno_location() }.max(1), Ordering::SeqCst);
        // SAFETY: ends this process only.
        unsafe { libc::_exit(127) }
    };
    // SAFETY: every call below takes values prepared before the clone; none allocates.
    unsafe {
        // Raw: libc's sigaction refuses signals 32 and 33, which the program may ignore too.
        for sig in 1..=64 {
            if sig == libc::SIGKILL || sig == libc::SIGSTOP {
                continue;
            }
            let ignore = p.ignored & (1 << (sig - 1)) != 0;
            let sa = crate::raw_sys::KernelSigaction { handler: ignore as u64, ..Default::default() };
            let _ = crate::raw_sys::rt_sigaction(sig, Some(&sa));
        }
        // The program's CPUs, which an exec keeps (a refusal leaves the spawner's).
        if let Some(set) = &p.affinity {
            libc::syscall(libc::SYS_sched_setaffinity, 0, std::mem::size_of::<libc::cpu_set_t>(), set);
        }
        if p.cwd >= 0 && libc::fchdir(p.cwd) != 0 {
            return fail(p);
        }
        if let Err(e) = place_descriptors(p) {
            *libc::__errno_location() = e;
            return fail(p);
        }
        if p.setsid && libc::setsid() < 0 {
            return fail(p);
        }
        if let Some((fd, arg)) = p.ctty {
            if libc::ioctl(fd, libc::TIOCSCTTY, arg as libc::c_long) != 0 {
                return fail(p);
            }
        }
        if let Some(g) = p.pgid {
            if libc::setpgid(0, g) != 0 {
                return fail(p);
            }
        }
        if NO_NEW_PRIVS.load(Ordering::Relaxed) && libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return fail(p);
        }
        for (resource, l) in &CHILD_LIMITS {
            let limit = libc::rlimit { rlim_cur: l[0].load(Ordering::Relaxed), rlim_max: l[1].load(Ordering::Relaxed) };
            if limit_known(&limit) && libc::setrlimit(*resource, &limit) != 0 {
                return fail(p);
            }
        }
        libc::sigprocmask(libc::SIG_SETMASK, &p.mask, std::ptr::null_mut());
        if let Err(e) = super::seccomp_filters::install(&p.filters) {
            *libc::__errno_location() = e;
            return fail(p);
        }
        exec_prepared(p);
        fail(p)
    }
}

/// The new process's execve of `p` (returns only if it failed): by path, or for fexecve by
/// descriptor (`Prepared::exec_at`).
///
/// # Safety
/// Between clone and exec, after `place_descriptors`: raw system calls on prepared values.
unsafe fn exec_prepared(p: &Prepared) {
    // SAFETY: the caller's promise; the pointers are the prepared strings and arrays.
    unsafe {
        if p.exec_at < 0 {
            libc::execve(p.path.as_ptr(), p.argv.as_ptr(), p.envp.as_ptr());
            return;
        }
        if p.close_exec_at {
            syscall3(libc::SYS_fcntl, p.exec_at as u64, libc::F_SETFD as u64, libc::FD_CLOEXEC as u64);
        }
        let args = [p.exec_at as u64, c"".as_ptr() as u64, p.argv.as_ptr() as u64, p.envp.as_ptr() as u64];
        crate::raw_sys::syscall6(
            libc::SYS_execveat,
            [args[0], args[1], args[2], args[3], libc::AT_EMPTY_PATH as u64, 0],
        );
    }
}

/// In the new process (or thread) between clone and exec, on its own copy of the descriptor
/// table: the program's descriptors at their numbers, every other one closed. Raw system
/// calls only; the errno of the step that failed.
///
/// # Safety
/// The caller's descriptor table must be its own (a clone without CLONE_FILES).
pub(super) unsafe fn place_descriptors(p: &Prepared) -> Result<(), i32> {
    let check = |r: i64| if r < 0 { Err((-r) as i32) } else { Ok(r) };
    // SAFETY: descriptor calls on this task's own table (the caller's promise).
    unsafe {
        for (&(src, _), temp) in p.moves.iter().zip(&p.temps) {
            let t = check(syscall3(libc::SYS_fcntl, src as u64, libc::F_DUPFD as u64, p.above as u64))?;
            temp.store(t as i32, Ordering::Relaxed);
        }
        for (&(_, dst), temp) in p.moves.iter().zip(&p.temps) {
            check(syscall3(libc::SYS_dup2, temp.load(Ordering::Relaxed) as u64, dst as u64, 0))?;
        }
        for &(first, last) in &p.gaps {
            syscall3(libc::SYS_close_range, first as u64, last as u64, 0);
        }
        syscall3(libc::SYS_close_range, p.above as u64, libc::c_uint::MAX as u64, 0);
    }
    Ok(())
}

/// Gives this (spawning) thread the program's niceness and I/O priority, its main thread's, which a `renice`
/// from another process changes alone, so the child about to be cloned from this thread
/// inherits what it would natively. A refusal (a less nice value without the privilege) keeps
/// this thread's.
pub(super) fn take_programs_niceness() {
    // SAFETY: no pointers; the raw call answers 20 - nice (1 to 40), or -1.
    let raw = unsafe { libc::syscall(libc::SYS_getpriority, libc::PRIO_PROCESS, std::process::id()) };
    if raw > 0 {
        // SAFETY: no pointers; 0 names this thread.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, (20 - raw) as libc::c_int) };
    }
    // The I/O priority likewise (IOPRIO_WHO_PROCESS is 1).
    // SAFETY: no pointers.
    let io = unsafe { libc::syscall(libc::SYS_ioprio_get, 1, std::process::id()) };
    if io >= 0 {
        // SAFETY: no pointers; 0 names this thread.
        unsafe { libc::syscall(libc::SYS_ioprio_set, 1, 0, io) };
    }
}

/// The user and system time, in microseconds, of `hrt`'s own ended children that are not the
/// program's (`vm::late_teardown`'s intermediate), left out of `children_time`.
static MONITORS_CHILDREN_US: [std::sync::atomic::AtomicI64; 2] =
    [std::sync::atomic::AtomicI64::new(0), std::sync::atomic::AtomicI64::new(0)];

/// `hrt`'s ended and waited-for children's user (`which` 0) or system (1) time, in
/// microseconds.
fn waited_children_us(which: u64) -> SysResult<i64> {
    // SAFETY: rusage is plain integers; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes the struct we pass.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return Err(Errno::last());
    }
    let tv = match which {
        0 => ru.ru_utime,
        1 => ru.ru_stime,
        _ => return Err(Errno::EINVAL),
    };
    Ok(tv.tv_sec * 1_000_000 + tv.tv_usec)
}

/// Called once the monitor has reaped a child of its own: the time of every child ended so
/// far is not the program's (a forked `hrt` starts from zero, before its program's children).
pub fn leave_out_monitors_children() {
    for which in 0..2 {
        if let Ok(us) = waited_children_us(which) {
            MONITORS_CHILDREN_US[which as usize].store(us, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// The user (`which` 0) or system (1) time of the program's ended and waited-for children (its
/// host children are `hrt`'s), in microseconds.
fn children_time(which: u64) -> SysResult<i64> {
    let own = MONITORS_CHILDREN_US.get(which as usize).map_or(0, |t| t.load(std::sync::atomic::Ordering::Relaxed));
    Ok((waited_children_us(which)? - own).max(0))
}

/// `hrt`'s own largest resident set when its VM was about to start, in KiB: the monitor's and
/// the boot's share, which getrusage leaves out of the program's (`max_rss`). A forked `hrt`
/// keeps its parent's.
static RSS_BEFORE_KIB: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// Notes `hrt`'s largest resident set so far as the part that is not the program's.
pub fn note_rss_before_program() {
    if let Some(kib) = own_peak_kib() {
        RSS_BEFORE_KIB.store(kib, std::sync::atomic::Ordering::Relaxed);
    }
}

/// `hrt`'s own largest resident set in KiB: the VmHWM of its own memory. Not getrusage's
/// ru_maxrss, which also counts the peak of the memory a process left at its exec (Linux's
/// `signal->maxrss`): `hrt` started by `posix_spawn` from a large process (the test runner,
/// tens of MiB while many tests run) carried that process's peak, and the program's figures
/// came out that much too low (64 MiB touched read as 39). getrusage's where /proc cannot be
/// read (`--sandbox`).
fn own_peak_kib() -> Option<libc::c_long> {
    let from_status = std::fs::read("/proc/self/status").ok().and_then(|status| {
        let line = status.split(|&b| b == b'\n').find(|l| l.starts_with(b"VmHWM:"))?;
        let digits: Vec<u8> =
            line.iter().copied().skip_while(|b| !b.is_ascii_digit()).take_while(u8::is_ascii_digit).collect();
        std::str::from_utf8(&digits).ok()?.parse().ok()
    });
    from_status.or_else(|| {
        // SAFETY: rusage is plain integers; getrusage fills it.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: getrusage writes the struct we pass.
        (unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } == 0).then_some(ru.ru_maxrss)
    })
}

/// The largest ru_maxrss of the program's waited-for children, as `child_rss` counted them.
static CHILDREN_MAX_RSS_KIB: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// In a forked `hrt`: the process has waited for no child yet, whatever its parent's copy of
/// these counts said (RUSAGE_CHILDREN's ru_maxrss was the parent's children's: LTP getrusage03),
/// and the host's own count of its children starts from zero.
pub fn forget_parents_children() {
    CHILDREN_MAX_RSS_KIB.store(0, std::sync::atomic::Ordering::Relaxed);
    for t in &MONITORS_CHILDREN_US {
        t.store(0, std::sync::atomic::Ordering::Relaxed);
    }
}

/// `op::MAX_RSS`: the program's (`who` 0) largest resident set in KiB, `hrt`'s own
/// (`own_peak_kib`) less `RSS_BEFORE_KIB` (at least 4 KiB: a program that ran had a page), or the largest of its
/// waited-for children's (1).
pub(super) fn max_rss(who: u64) -> SysResult<i64> {
    match who {
        0 => Ok(program_rss(own_peak_kib().ok_or(Errno::EIO)?)),
        1 => Ok(CHILDREN_MAX_RSS_KIB.load(std::sync::atomic::Ordering::Relaxed)),
        _ => Err(Errno::EINVAL),
    }
}

/// A host ru_maxrss of `hrt` (or of a child `hrt`) as the program's: less `RSS_BEFORE_KIB`, at
/// least 4 KiB (0 stays 0: nothing was measured). wait4's and waitid's rusage say the same.
fn program_rss(host_kib: libc::c_long) -> libc::c_long {
    if host_kib == 0 {
        return 0;
    }
    (host_kib - RSS_BEFORE_KIB.load(std::sync::atomic::Ordering::Relaxed)).max(4)
}

/// `process::AFFINITY_ALLOWED`: whether the program (this thread acts with its ids and
/// capabilities) may set host process `pid`'s CPU mask, by Linux's rule (`check_same_owner`,
/// else CAP_SYS_NICE), read from the process's status: nothing is changed.
fn affinity_allowed(pid: u64) -> SysResult<i64> {
    let pid = pid as u32 as i32;
    if pid <= 0 {
        return Err(Errno::ESRCH);
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|_| Errno::ESRCH)?;
    let ids: Vec<u32> = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .map(|rest| rest.split_whitespace().filter_map(|v| v.parse().ok()).collect())
        .unwrap_or_default();
    super::caps::catch_up();
    // SAFETY: geteuid has no arguments.
    let euid = unsafe { libc::geteuid() };
    const CAP_SYS_NICE: u32 = 23;
    if ids.len() >= 2 && (euid == ids[0] || euid == ids[1]) || super::caps::effective(CAP_SYS_NICE) {
        Ok(0)
    } else {
        Err(Errno::EPERM)
    }
}

/// `process::HOST_LOADS`: the host's load averages, from its `sysinfo`, into program memory.
fn host_loads(g: Guest, at: u64) -> SysResult<i64> {
    // SAFETY: an all-zero sysinfo is a valid value, which the call fills.
    let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a struct sysinfo.
    if unsafe { libc::sysinfo(&mut info) } != 0 {
        return Err(Errno::last());
    }
    g.write(at, &info.loads)?;
    Ok(0)
}
