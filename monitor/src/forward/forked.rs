//! The forwarder of a forked child (vm/fork.rs): a copy of the parent's, taken before the host
//! fork, whose descriptor table names the same host descriptors (the fork inherits them, so the
//! numbers stay valid in the child and its copy shares each open file as Linux's fork does).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use super::Forwarder;

impl Forwarder {
    /// The child's forwarder: the same descriptors (FD_CLOEXEC kept: the child's own execve
    /// closes them), working directory state, program description; no children of its own and
    /// no exec under way.
    pub fn fork_copy(&self) -> Forwarder {
        Forwarder {
            fds: self.fds.duplicate(),
            described: Mutex::new(self.described.lock().unwrap().clone()),
            // An exec under way is another thread's of the parent (that thread is not forked).
            exec: Mutex::new(None),
            host_pid: self.host_pid.clone(),
            stopping: AtomicBool::new(false),
            cwd_special: AtomicBool::new(self.cwd_special.load(Ordering::Relaxed)),
            cpus: self.cpus,
            children: Default::default(),
        }
    }

    /// In the child's process: `/proc/<pid>` is now `/proc/self`, and the descriptors are its
    /// own (see `FdTable::unshared`).
    pub fn become_child(&mut self, pid: i32) {
        self.host_pid = pid.to_string();
        self.fds = self.fds.unshared();
    }

    /// The host descriptors the program's table holds.
    pub fn host_descriptors(&self) -> Vec<i32> {
        self.fds.snapshot().into_iter().map(|(_, h, _)| h.raw()).collect()
    }

    /// A forked child, now one of the program's host children (wait4, kill).
    pub fn adopt(&self, pid: i32) {
        self.children.adopt(pid);
    }
}
