//! The forwarder of a forked child (vm/fork.rs): a copy of the parent's, taken before the host
//! fork, whose descriptor table names the same host descriptors (the fork inherits them, so the
//! numbers stay valid in the child and its copy shares each open file as Linux's fork does).
//! When a spawn child (vfork) forks before its exec, the copy is of that child's table, and the
//! new process takes the directory, process group and session the child asked for.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::fd_table::HostFd;
use super::Forwarder;

/// What a forking spawn child asked for itself before its exec, done in the new process
/// before its VM runs (the program's own fork needs nothing: the host fork keeps all of it).
#[derive(Default)]
pub struct ForkSetup {
    /// Its working directory, an O_PATH descriptor, if it changed it.
    pub(super) cwd: Option<Arc<HostFd>>,
    /// setpgid(0, pgid), Some(0) for a group of its own.
    pub(super) pgid: Option<i32>,
    pub(super) setsid: bool,
}

impl ForkSetup {
    /// The host descriptors the new process must keep open for `apply`.
    pub fn host_descriptors(&self) -> Vec<i32> {
        self.cwd.iter().map(|c| c.raw()).collect()
    }

    /// In the new process: its directory, session and process group.
    pub fn apply(&self, f: &Forwarder) {
        // SAFETY: plain calls on this process with a descriptor it holds; errors are left as
        // they are (the exec these stood for would have failed in the child instead).
        unsafe {
            if let Some(dir) = &self.cwd {
                libc::fchdir(dir.raw());
            }
            if self.setsid {
                libc::setsid();
            } else if let Some(pgid) = self.pgid {
                libc::setpgid(0, pgid);
            }
        }
        f.cwd_special.store(super::paths::cwd_is_special(), Ordering::Relaxed);
    }
}

impl Forwarder {
    /// The child's forwarder: the same descriptors (FD_CLOEXEC kept: the child's own execve
    /// closes them), working directory state, program description; no children of its own and
    /// no exec under way. `ctx`: the forking spawn child's context, 0 for the program; None
    /// when there is no such child.
    pub fn fork_copy(&self, ctx: u32) -> Option<(Forwarder, ForkSetup)> {
        let (fds, setup) = match ctx {
            0 => (self.fds.duplicate(), ForkSetup::default()),
            _ => self.child_fork_state(ctx)?,
        };
        let f = Forwarder {
            fds,
            described: Mutex::new(self.described.lock().unwrap().clone()),
            // An exec under way is another thread's of the parent (that thread is not forked).
            exec: Mutex::new(None),
            placed: Default::default(),
            host_pid: self.host_pid.clone(),
            stopping: AtomicBool::new(false),
            cwd_special: AtomicBool::new(self.cwd_special.load(Ordering::Relaxed)),
            // A spawn child that changed directory has its own; else the parent's.
            cwd_vm: Mutex::new(match &setup.cwd {
                Some(dir) => dir.vm_path().map(Into::into),
                None => self.cwd_vm.lock().unwrap().clone(),
            }),
            // The parent's descriptor is closed in the new process: it opens its own
            // (`become_child`).
            cwd: Mutex::new(None),
            cpus: self.cpus,
            children: Default::default(),
            exec_omp: self.exec_omp,
            library_plans: match self.library_plans.get() {
                Some(p) => p.same_purpose().into(),
                None => Default::default(),
            },
        };
        Some((f, setup))
    }

    /// Runs `fork` (the host fork) with this forwarder's descriptor table locked, after
    /// copying the table again into `child`, the forwarder of the child a fork of the program
    /// (context 0) makes: no other thread's call changes the table between the copy and the
    /// host fork (a descriptor another thread opened meanwhile was open in the child's memory
    /// but in neither its table nor its process: EBADF, in 1-49 of 300 forks of a program whose
    /// threads open and close pipes). None, without running it, when another thread holds the
    /// table (the fork thread gives back its other locks and tries again).
    pub fn fork_with_table_held<R>(&self, child: &mut Forwarder, fork: impl FnOnce() -> R) -> Option<R> {
        let held = self.fds.try_hold()?;
        child.fds = self.fds.duplicate_of(&held);
        let r = fork();
        drop(held);
        Some(r)
    }

    /// In the child's process: `/proc/<pid>` is now `/proc/self`, and the descriptors are its
    /// own (see `FdTable::unshared`).
    pub fn become_child(&mut self, pid: i32) {
        self.host_pid = pid.to_string();
        // After `ForkSetup::apply`: the new process's directory.
        *self.cwd.lock().unwrap() = super::paths::open_cwd();
        super::cross_memory::republish_pid(pid);
        self.fds = self.fds.unshared();
        self.children.forked_self.store(true, std::sync::atomic::Ordering::Relaxed);
        super::procs::PDEATH_SIGNAL.store(0, std::sync::atomic::Ordering::Relaxed);
        super::procs::forget_parents_children();
    }

    /// The host descriptors the program's table holds.
    pub fn host_descriptors(&self) -> Vec<i32> {
        let mut raw: Vec<i32> = self.fds.snapshot().into_iter().map(|(_, h, _)| h.raw()).collect();
        raw.extend(self.fds.kept().raw());
        raw.extend(self.exe_descriptor());
        raw
    }

    /// A forked child, now one of the program's host children (wait4, kill).
    pub fn adopt(&self, pid: i32) {
        self.children.adopt(pid);
    }
}
