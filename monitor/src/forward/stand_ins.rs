//! Stand-ins for pidfds of spawn children that ended before their exec.
//!
//! A `vfork` or `clone(CLONE_VM | CLONE_VFORK)` child runs in the program's kernel until its
//! exec; one that exits first never was a host process, so the host has no pidfd for it, yet
//! `clone(CLONE_PIDFD)` on Linux gives one that reports the child's end (Go's start-up probe
//! is such a child, and used to print an `hrt:` line and fall back). The stand-in is a real
//! host process made for it: a vfork of `hrt` that exits at once with the child's exit code,
//! whose host pidfd the program gets. It has no exit signal (the kernel raised the child's
//! SIGCHLD already), so only waits with `__WALL` see it: those the monitor makes for it. `poll` sees it ended, and a
//! wait on it (`waitid(P_PIDFD)`) reaps the stand-in and answers with the child's pid, never
//! the stand-in's; when the kernel takes its own record of the child (`wait4` of its pid, or
//! of any child), it has the stand-in reaped (`process::REAP_STAND_IN`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use super::errno::{Errno, SysResult};
use super::fd_table::HostFd;

/// At most this many stand-ins wait to be reaped at once (each is a host zombie of `hrt`'s):
/// a program that never waits for such children cannot fill the host's process table
/// through `hrt`; past it the kernel stores -1 and says so.
pub const MAX_UNREAPED: usize = 4096;

/// Stand-in pid -> the child's pid (the program's); the stand-ins' pidfds.
#[derive(Default)]
pub struct StandIns {
    by_host: Mutex<HashMap<i32, i32>>,
    pidfds: Mutex<Vec<Weak<HostFd>>>,
}

impl StandIns {
    /// Whether another stand-in may be made (`MAX_UNREAPED`).
    pub fn has_room(&self) -> bool {
        self.by_host.lock().unwrap().len() < MAX_UNREAPED
    }

    pub fn add(&self, host: i32, child: i32, pidfd: &Arc<HostFd>) {
        self.by_host.lock().unwrap().insert(host, child);
        let mut fds = self.pidfds.lock().unwrap();
        fds.retain(|w| w.strong_count() > 0);
        fds.push(Arc::downgrade(pidfd));
    }

    /// Whether `fd` is a stand-in's pidfd: a wait on it takes `__WALL`, since a stand-in made
    /// for a child without an exit signal is a "clone" child to the host, which the program's
    /// wait (a pidfd names one child) need not say.
    pub fn is_pidfd(&self, fd: &Arc<HostFd>) -> bool {
        self.pidfds.lock().unwrap().iter().any(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(fd)))
    }

    /// Whether host pid `pid` is a stand-in (which has no exit signal: the kernel raised the
    /// child's SIGCHLD, if it had one).
    pub fn is_stand_in(&self, pid: i32) -> bool {
        self.by_host.lock().unwrap().contains_key(&pid)
    }

    /// The stand-in of child `child`, if it has one.
    pub fn host_of(&self, child: i32) -> Option<i32> {
        self.by_host.lock().unwrap().iter().find(|(_, &c)| c == child).map(|(&h, _)| h)
    }

    /// What the program sees of host pid `pid` that a wait reported: the child's pid for a
    /// stand-in (forgotten if the wait reaped it), else `pid`.
    pub fn shown(&self, pid: i32, reaped: bool) -> i32 {
        let mut map = self.by_host.lock().unwrap();
        match map.get(&pid).copied() {
            Some(child) => {
                if reaped {
                    map.remove(&pid);
                }
                child
            }
            None => pid,
        }
    }
}

/// Makes a host process that has already exited with `code`, without an exit signal:
/// (pidfd, pid). Call it from a thread without the seccomp filter (the process spawner).
pub fn exited_process(code: i32) -> SysResult<(i32, i32)> {
    const CLONE_PIDFD: u64 = 0x1000;
    let flags = libc::CLONE_VM as u64 | libc::CLONE_VFORK as u64 | CLONE_PIDFD;
    let mut pidfd: i32 = -1;
    // The child shares this thread's stack until it exits: no signal handler may run in it.
    // SAFETY: all-zero and filled signal sets; this thread's own mask, restored below.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
    }
    let ret: i64;
    // SAFETY: clone(CLONE_VM | CLONE_VFORK) with the same stack: this thread waits until the
    // child has exited, and the child runs only the instructions up to its exit system call,
    // touching no memory (its exit code is in a register); the kernel writes the pidfd at
    // `pidfd`. rcx and r11 are the system call's.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "mov edi, r9d",
            "mov eax, 60",
            "syscall",
            "ud2",
            "2:",
            inlateout("rax") libc::SYS_clone => ret,
            in("rdi") flags,
            in("rsi") 0u64,
            in("rdx") &mut pidfd as *mut i32,
            in("r10") 0u64,
            in("r8") 0u64,
            in("r9") code as u64,
            lateout("rcx") _,
            lateout("r11") _,
        );
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
    if ret < 0 {
        return Err(Errno((-ret) as i32));
    }
    Ok((pidfd, ret as i32))
}
