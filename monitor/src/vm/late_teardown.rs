//! The VM's teardown after `hrt` has exited, so that the process waiting for `hrt` (a shell,
//! `hrt`'s own parent VM for a forked child) does not wait for it.
//!
//! Why: when the last thread of `hrt` exits, Linux tears down the address space and closes the
//! VM's descriptor, and only then tells the parent. Both steps end in `synchronize_srcu` on the
//! MMU notifiers' SRCU (`exit_mmap` through `mmu_notifier_release`, then `kvm_destroy_vm`
//! through `mmu_notifier_unregister`), and KVM stops its `kvm-nx-lpage-recovery` task, whose
//! exit runs the first one, just before it starts the second. The second then finds a grace
//! period in progress or just ended and takes the slow path, a few timer ticks: in 4-9 of 20
//! runs of an empty program its parent saw the exit 10-14 ms late (perf: `hrt-spawn` asleep
//! in `mmu_notifier_unregister` <- `kvm_destroy_vm` <- `__fput` <- `do_exit`).
//!
//! What: a small process that shares `hrt`'s memory (`CLONE_VM`) keeps a copy of the VM's
//! descriptor and nothing else, and waits for `hrt` to end (a pidfd). `hrt`'s exit then
//! neither frees its memory nor destroys the VM: that process does both once `hrt` has been
//! reported, and exits. It is made by a short-lived intermediate, so it is nobody's child
//! here (a program's `wait4(-1, __WALL)` never sees it) and init reaps it; signals stay
//! blocked in it (a terminal's Ctrl-C or Ctrl-Z is for `hrt`), and it makes a session of its
//! own (a kill of the program's process group finds only the program's processes). Where it cannot be made (no
//! pidfd: Linux before 5.3), `hrt` tears the VM down itself at exit, as before.
//!
//! A forked child whose exec starts a host program in its place (forward/host_exec.rs) keeps
//! its process: the holder then keeps the VM and the old memory until that program ends, and
//! the exec does not wait for the VM's teardown either (the exec's thread closes its copies of
//! the VM's descriptors before its execve; the holder's keeps the VM alive through the exec).

use std::os::unix::io::RawFd;

/// The stacks of the intermediate (upper half, below its arguments) and of the holder (lower
/// half): they make a handful of system calls, nothing else.
const STACK_BYTES: usize = 64 * 1024;

/// The program made itself a child subreaper (PR_SET_CHILD_SUBREAPER) in this process or an
/// ancestor `hrt` of the program's tree before forking it: an orphaned holder would then come
/// to the program, whose `wait` would report it, so forked children tear their VMs down
/// themselves. (A child forked before the prctl still makes one.)
static SUBREAPER_ABOVE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Notes PR_SET_CHILD_SUBREAPER (see `SUBREAPER_ABOVE`).
pub fn note_subreaper() {
    SUBREAPER_ABOVE.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// The intermediate that `start` made, reaped by `finish`.
#[must_use = "the intermediate must be reaped (`finish`) before the program runs"]
pub struct Started {
    /// Its pid, 0 if none was made.
    pid: libc::pid_t,
}

/// Starts the process that will destroy the VM of `vm_fd` after this process has exited. Its
/// intermediate runs meanwhile: the caller goes on setting the VM up and reaps it with
/// `Started::finish` before the program runs (a forked child waited 0.1-1.6 ms for it here,
/// most of it for the intermediate to get a host CPU, before that wait moved to `finish`).
pub fn start(vm_fd: RawFd) -> Started {
    // A forked child's pipe to its parent (robust_walk.rs): the holder closes its copy once it
    // has walked the robust lists, this process its own at once.
    let walked_fd = super::robust_walk::take_walked_descriptor();
    // A forked child's exec of a host program ends `hrt`'s use of the memory too (see
    // `exec_pipe`).
    let exec_fd = if super::is_fork_child() { exec_pipe() } else { -1 };
    let started = start_holder(vm_fd, walked_fd, exec_fd);
    for fd in [walked_fd, exec_fd] {
        if fd >= 0 {
            // SAFETY: this process's copy; the intermediate has its own.
            unsafe { libc::close(fd) };
        }
    }
    started
}

/// The write end this process keeps of the pipe the holder reads (`exec_pipe`).
static EXEC_WRITE_END: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// A pipe whose read end the holder polls besides the pidfd and whose write end only this
/// process keeps, close-on-exec: its end of file comes when this process exits or execs a host
/// program (forward/host_exec.rs), whose process goes on under the same pid (the pidfd stays
/// quiet until that program ends). The holder then lets the memory go at once: the program's
/// host shared mappings (System V segments, shared files) were attached until that program
/// ended (a segment's nattch 2 in the exec'd program and after its parent's waitpid; a memory
/// file's F_SEAL_WRITE EBUSY). Returns the read end, -1 if none.
fn exec_pipe() -> RawFd {
    let mut fds = [-1; 2];
    // SAFETY: pipe2 writes two descriptors into our array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return -1;
    }
    // (A forked `hrt`'s copy of its parent's write end is closed with the parent's other
    // descriptors, `fork::close_all_but`: the number stored before is stale here.)
    EXEC_WRITE_END.store(fds[1], std::sync::atomic::Ordering::SeqCst);
    fds[0]
}

fn start_holder(vm_fd: RawFd, walked_fd: RawFd, exec_fd: RawFd) -> Started {
    let none = Started { pid: 0 };
    if super::is_fork_child() && SUBREAPER_ABOVE.load(std::sync::atomic::Ordering::Relaxed) {
        return none;
    }
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) } as i64;
    if pidfd < 0 {
        return none;
    }
    let pidfd = pidfd as RawFd;
    // SAFETY: a fresh anonymous mapping for the two stacks and the arguments; never unmapped
    // (the holder runs on it after this process has exited: the mapping is its memory too).
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            STACK_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    let mut pid = 0;
    if stack != libc::MAP_FAILED {
        // The arguments at the top of the mapping, the intermediate's stack below them: they
        // stay there while it runs, however long after this function returned.
        let top = stack as usize + STACK_BYTES - ARGS_BYTES;
        let arg = top as *mut Args;
        // SAFETY: `arg` is inside the fresh mapping, aligned (ARGS_BYTES is a multiple of 16,
        // the mapping page aligned) and used by nothing else.
        unsafe { arg.write(Args { vm_fd, pidfd, walked_fd, exec_fd, holder_stack: stack as usize + STACK_BYTES / 2 }) };
        // Both start with every signal blocked: a handler of this process must never run on
        // their stacks (they share this thread's TLS).
        // SAFETY: sigfillset initialises the set; pthread_sigmask swaps this thread's mask.
        let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        unsafe {
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        }
        // SAFETY: the intermediate runs `detach` on its stack below the arguments in this
        // memory, reads `arg` (never freed), makes only raw system calls and glibc's clone (no
        // TLS, no allocation, no locks) and exits; no exit signal: `__WCLONE` reaps it.
        pid = unsafe { libc::clone(detach, top as *mut libc::c_void, libc::CLONE_VM, arg as *mut libc::c_void) };
        // SAFETY: restores the mask saved above (the intermediate has its own copy).
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    }
    // SAFETY: this process's copy of the pidfd; the intermediate has its own.
    unsafe { libc::close(pidfd) };
    Started { pid: pid.max(0) }
}

impl Started {
    /// Reaps the intermediate; whether the holder started. Before the program runs: until
    /// then the intermediate is this process's child, which a program's `wait4(-1, __WALL)`
    /// would see.
    pub fn finish(self) -> bool {
        if self.pid <= 0 {
            return false;
        }
        let mut status = 1;
        // SAFETY: reaps the intermediate (a clone child of this process).
        if unsafe { libc::waitpid(self.pid, &mut status, libc::__WCLONE) } != self.pid {
            status = 1;
        }
        // Its time is the monitor's, not the program's children's (`getrusage`, `times`).
        crate::forward::leave_out_monitors_children();
        status == 0
    }
}

/// Bytes at the top of the mapping for the intermediate's arguments.
const ARGS_BYTES: usize = 64;
const _: () = assert!(std::mem::size_of::<Args>() <= ARGS_BYTES && ARGS_BYTES.is_multiple_of(16));

struct Args {
    vm_fd: RawFd,
    pidfd: RawFd,
    /// -1: none (robust_walk.rs).
    walked_fd: RawFd,
    /// -1: none (`exec_pipe`).
    exec_fd: RawFd,
    holder_stack: usize,
}

/// The intermediate: keeps only the VM's descriptor, the pidfd and the walk's pipe (the holder inherits this
/// table: a pipe's write end kept there would hold back its reader's end of file until the VM
/// is gone), makes the holder and exits, leaving it to init.
extern "C" fn detach(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `start` placed the Args in memory that is never unmapped.
    let a = unsafe { &*(arg as *const Args) };
    // SAFETY: raw system calls on this process itself.
    unsafe {
        raw::prctl_name(b"hrt-teardown\0");
        // Out of the program's process group at once, as the holder: a forked child killed
        // before it reaped this process (`Started::finish`; LTP's kill11 kills its children
        // as they start) leaves it to init as a zombie, which a kill of the child's group
        // (`kill(-pgid, 0)`) found until init reaped it, where Linux finds the group empty
        // (this host's init never reaps: such a group stayed non-empty for good).
        raw::setsid();
    }
    let mut kept = [a.vm_fd, a.pidfd, a.walked_fd, a.exec_fd];
    kept.sort_unstable();
    // The gaps between the kept descriptors (-1 keeps nothing).
    let mut first = 0u64;
    // SAFETY: raw system calls on this process's own descriptors; glibc's clone wrapper is
    // assembly that touches no TLS but on failure (errno; the caller then looks at nothing).
    unsafe {
        for fd in kept.into_iter().filter(|&fd| fd >= 0).map(|fd| fd as u64) {
            if fd > first {
                raw::close_range(first, fd - 1);
            }
            first = fd + 1;
        }
        raw::close_range(first, u32::MAX as u64);
        let holder = libc::clone(hold, a.holder_stack as *mut libc::c_void, libc::CLONE_VM, arg);
        i32::from(holder <= 0)
    }
}

/// The holder: waits for `hrt` to end, walks the robust lists left (robust_walk.rs), then
/// exits, which closes the VM and frees the memory.
extern "C" fn hold(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `start` placed the Args in memory that is never unmapped.
    let a = unsafe { &*(arg as *const Args) };
    // SAFETY: raw system calls on this process's own descriptors and stack.
    unsafe {
        raw::prctl_name(b"hrt-teardown\0");
        // Out of the program's session and process group: a kill of the group (`kill(-pgid,
        // 0)`, a shell's job control) must find it empty once the program's processes are
        // gone, as on Linux, not this process that outlives them (its signals are blocked).
        raw::setsid();
        // This process shares `hrt`'s memory, so it shows the program's command line: `pidof`
        // finds it besides `hrt`, and a service script's `kill $(pidof -s server)` may pick
        // it. The signals sent to it (all blocked) go on to `hrt`, which takes them as sent
        // to the program (SIGKILL and SIGSTOP cannot be: a `kill -9` of this pid ends only
        // this process, and `hrt` then tears its VM down itself), unless the same sender
        // gave `hrt` one too (`kill $(pidof server)` names both): a second SIGTERM is "stop
        // now" to many servers.
        let all_signals: u64 = !0;
        let signals = raw::signalfd(&all_signals);
        // The pidfd is readable once every thread of `hrt` has exited; the pipe's end of file
        // also comes when it execs a host program (`exec_pipe`). Negative descriptors (no
        // pipe, no signalfd) are left out by poll.
        let mut pfds = [
            libc::pollfd { fd: a.pidfd, events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: a.exec_fd, events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: signals, events: libc::POLLIN, revents: 0 },
        ];
        loop {
            if raw::poll(&mut pfds) < 0 {
                continue;
            }
            if pfds[0].revents != 0 || pfds[1].revents != 0 {
                break;
            }
            if pfds[2].revents != 0 {
                let mut info = [0u8; 128];
                match raw::read(signals, &mut info) {
                    128 => {
                        let signo = u32::from_ne_bytes([info[0], info[1], info[2], info[3]]);
                        let sender = u32::from_ne_bytes([info[12], info[13], info[14], info[15]]);
                        if !passed_to_hrt_too(signo, sender, &mut pfds[..2]) {
                            raw::pidfd_send_signal(a.pidfd, signo);
                        }
                    }
                    // Never again a busy loop on a descriptor that fails.
                    _ => pfds[2].fd = -1,
                }
            }
        }
        // Robust mutexes of threads that died with `hrt` (killed), for other processes; then
        // the parent `hrt` may report the death (robust_walk.rs).
        super::robust_walk::walk_left_lists();
        // The program's host shared memory goes first, before the slow rest of the teardown.
        super::shared_files::unmap_all_without_waiting();
        if a.walked_fd >= 0 {
            raw::close_range(a.walked_fd as u64, a.walked_fd as u64);
        }
        raw::exit(0)
    }
}

/// Whether `hrt` passed on signal `signo` from `sender` too: in the second before this process
/// got it, or within 20 ms after (the sender's kill of `hrt` may come second; `ends`, the
/// pidfd and the exec pipe, cut the wait short, without being consumed). Reads `hrt`'s record
/// (`shared_signals::PASSED_FROM`), in the memory this process shares.
fn passed_to_hrt_too(signo: u32, sender: u32, ends: &mut [libc::pollfd]) -> bool {
    use std::sync::atomic::Ordering;
    let i = signo as usize;
    if !(1..=64).contains(&i) {
        return false;
    }
    let got = crate::shared_signals::monotonic_ns();
    let seen = || {
        let at = crate::shared_signals::PASSED_AT[i].load(Ordering::SeqCst);
        crate::shared_signals::PASSED_FROM[i].load(Ordering::SeqCst) == sender as u64
            && at.saturating_add(1_000_000_000) >= got
    };
    if seen() {
        return true;
    }
    // SAFETY: poll on the caller's pollfds with a timeout.
    unsafe { raw::poll_for(ends, 20) };
    seen()
}

/// System calls without libc: the holder runs with this process's TLS, where libc's wrappers
/// would write `errno`.
mod raw {
    use crate::raw_sys::{syscall3, syscall6};

    /// Closes descriptors `first..=last` (close_range, Linux 5.9; one by one before that).
    pub unsafe fn close_range(first: u64, last: u64) {
        // SAFETY: closing descriptors of this process.
        if unsafe { syscall3(libc::SYS_close_range, first, last, 0) } < 0 {
            for fd in first..=last.min(4095) {
                // SAFETY: as above.
                unsafe { syscall3(libc::SYS_close, fd, 0, 0) };
            }
        }
    }

    pub unsafe fn poll(pfds: &mut [libc::pollfd]) -> i64 {
        // SAFETY: pollfds on the caller's stack, no timeout.
        unsafe { syscall3(libc::SYS_poll, pfds.as_mut_ptr() as u64, pfds.len() as u64, u64::MAX) }
    }

    /// poll with a timeout in ms.
    pub unsafe fn poll_for(pfds: &mut [libc::pollfd], ms: u64) -> i64 {
        // SAFETY: pollfds on the caller's stack.
        unsafe { syscall3(libc::SYS_poll, pfds.as_mut_ptr() as u64, pfds.len() as u64, ms) }
    }

    pub unsafe fn setsid() {
        // SAFETY: makes this process (not a group leader: a fresh clone) a session of its own.
        unsafe { syscall3(libc::SYS_setsid, 0, 0, 0) };
    }

    /// A signalfd of the signals in `mask` (close-on-exec), or -1.
    pub unsafe fn signalfd(mask: &u64) -> i32 {
        // SAFETY: signalfd4 reads the 8-byte kernel signal set.
        let fd = unsafe {
            syscall6(libc::SYS_signalfd4, [u64::MAX, mask as *const u64 as u64, 8, libc::SFD_CLOEXEC as u64, 0, 0])
        };
        if fd < 0 {
            -1
        } else {
            fd as i32
        }
    }

    pub unsafe fn read(fd: i32, buf: &mut [u8]) -> i64 {
        // SAFETY: reads into the caller's buffer, at most its length.
        unsafe { syscall3(libc::SYS_read, fd as u64, buf.as_mut_ptr() as u64, buf.len() as u64) }
    }

    /// Sends `signo` to the process of `pidfd` (as a kill(2) from this process).
    pub unsafe fn pidfd_send_signal(pidfd: i32, signo: u32) {
        // SAFETY: no siginfo (null): the kernel fills in a kill's.
        unsafe { syscall6(libc::SYS_pidfd_send_signal, [pidfd as u64, signo as u64, 0, 0, 0, 0]) };
    }

    pub unsafe fn prctl_name(name: &[u8]) {
        // SAFETY: PR_SET_NAME reads a NUL-terminated name of at most 16 bytes.
        unsafe { syscall3(libc::SYS_prctl, libc::PR_SET_NAME as u64, name.as_ptr() as u64, 0) };
    }

    pub unsafe fn exit(status: u64) -> ! {
        // SAFETY: the caller's promise (nothing runs on this task afterwards).
        unsafe { crate::raw_sys::exit_thread(status) }
    }
}
