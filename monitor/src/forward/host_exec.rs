//! `execve` in a forked child when child processes run as host programs (`--children host`, the
//! default): the host program replaces the child's `hrt` in its own host process, as a spawn
//! child's exec starts one (procs.rs). The pid stays (the parent's `fork` returned it, its
//! `wait4` and `kill` name it), and so do the process group, session, working directory,
//! limits and umask, which are the host process's already.
//!
//! Why: the exec in the child's VM (the program's own, linux/exec.rs in the kernel) reads the
//! new program, copies it into guest memory and starts it on a VM whose shadow page tables are
//! empty, ~8 ms on this host against ~0.5 for Linux's; a shell's `$(...)` and pipelines then
//! took 10-14 ms a command. And a host tool (`cat`, `sed`, a compiler) gains nothing from
//! running as a kernel, which is why spawn children run on the host.
//!
//! How: `EXEC_HOST` checks the exec as a spawn child's (path walk, execute permission, E2BIG)
//! and keeps it; `EXEC_HOST_GO` has the process spawner (a thread without the seccomp filter,
//! which the new program must not inherit) make a thread of this process with a copy of the
//! descriptor table (`clone` without CLONE_FILES), so that it can put the program's
//! descriptors at their numbers and close the rest without touching the monitor's table. Its
//! `execve` ends every other thread, the VM with them. Signal dispositions are shared by the
//! threads: those the program ignores are set ignored, and those `hrt` ignores but the program
//! does not are set default, just before (handled ones become default by the exec itself). If
//! the host's execve fails, the thread reports why and ends, the dispositions and limits are
//! put back, and the program gets the error.

use std::sync::atomic::{AtomicI32, Ordering};

use super::errno::{Errno, SysResult};
use super::guest_mem::Guest;
use super::procs::{self, Prepared, Spawn, Work, CHILD_LIMITS, NO_NEW_PRIVS, PDEATH_SIGNAL};
use super::Forwarder;
use crate::raw_sys::{exit_thread, syscall3, syscall6};

impl Forwarder {
    /// `EXEC_HOST(dirfd | flags << 32, path, argv, envp, ignored, mask)`: 1 once the exec is
    /// checked and kept for `EXEC_HOST_GO`, 0 where it belongs in the VM.
    pub(super) fn exec_host(&self, g: Guest, a: &[u64; 6]) -> SysResult<i64> {
        if !self.children.forked_self.load(Ordering::Relaxed) || !super::hrt_children::host_mode() {
            return Ok(0);
        }
        let (dirfd, flags) = (a[0] as u32 as u64, a[0] >> 32);
        if flags & libc::AT_EMPTY_PATH as u64 != 0 && g.read_path(a[1]).is_ok_and(|p| p.is_empty()) {
            // fexecve: the descriptor's file may have no path the host can exec (a memfd, a
            // file removed since); the VM reads it through the descriptor.
            return Ok(0);
        }
        let target = self.exec_target(g, [dirfd, a[1], a[2], a[3], flags], None)?;
        let job = Spawn {
            target,
            fds: self.fds.inherited(),
            cwd: None,
            pgid: None,
            setsid: false,
            ctty: None,
            ignored: a[4],
            mask: a[5],
            real_timer: [0, 0],
            pending: 0,
            cpu_timers: [0; 4],
            filters: Vec::new(),
            affinity: None,
        };
        *self.children.replacement.lock().unwrap() = Some(job);
        // From here on the kernel waits only for the exec: signals wait for it too.
        crate::vm::host_signals::begin_exec();
        Ok(1)
    }

    /// `EXEC_HOST_CARRY(pending, cpu timers)`: kept for the exec `EXEC_HOST` prepared. Pending
    /// signals the program's mask lets through (they came during its execve) are raised on the
    /// exec thread too, where the new program's dispositions meet them, but only those whose
    /// disposition the exec sets (`Dispositions::for_exec`): not `hrt`'s own fault signals,
    /// whose handlers must not run on that thread.
    pub(super) fn exec_host_carry(&self, pending: u64, cpu_timers: [u64; 4]) -> SysResult<i64> {
        let mut job = self.children.replacement.lock().unwrap();
        let job = job.as_mut().ok_or(Errno::EINVAL)?;
        let through = (1..=64)
            .filter(|&s| {
                crate::kept_signals::passed_on(s) || [libc::SIGPIPE, libc::SIGTTIN, libc::SIGTTOU].contains(&s)
            })
            .fold(0u64, |m, s| m | 1 << (s - 1));
        (job.pending, job.cpu_timers) = (pending & (job.mask | through), cpu_timers);
        Ok(0)
    }

    /// `EXEC_HOST_GO`: answers only if the host's execve failed. Made on the thread that
    /// serves the call, not handed to a worker (the first blocking call of a forked child
    /// starts one, ~1 ms): it waits only for the exec, which ends every thread of `hrt`.
    pub(super) fn exec_host_go(&self, real_timer: [u64; 2], filters: u64, affinity: [u64; 3]) -> SysResult<i64> {
        let failed = self.exec_host_go_inner(real_timer, filters, affinity);
        // Only here if the program did not start: the signals that came go to it.
        crate::vm::host_signals::end_exec();
        failed
    }

    fn exec_host_go_inner(&self, real_timer: [u64; 2], filters: u64, affinity: [u64; 3]) -> SysResult<i64> {
        let mut job = self.children.replacement.lock().unwrap().take().ok_or(Errno::EINVAL)?;
        job.real_timer = real_timer;
        job.affinity = procs::host_affinity(affinity, self.cpus);
        job.filters = procs::exec_filters(filters)?;
        self.children.on_spawner(Work::Replace(job))
    }
}

/// On the process spawner: starts the thread that execs `job`'s program in this process, and
/// answers only if its execve failed (with everything changed put back).
pub(super) fn replace(job: &Spawn) -> SysResult<i64> {
    let ready = procs::prepare(job)?;
    let prep = &ready.prep;
    let limits = Limits::save();
    let dispositions = Dispositions::for_exec(job.ignored, job.mask);
    // The parent's setpgid on this process is EACCES from now on, as after any exec.
    super::exec_marks::mark_self();
    procs::take_programs_niceness();
    let all = procs::sigset(u64::MAX);
    // SAFETY: an all-zero sigset is a valid buffer for the old mask.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // The new thread starts with every signal blocked (no handler of the monitor may run on
    // its borrowed TLS) and takes the program's mask just before its execve.
    // SAFETY: masks we own.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old) };
    let mut stack = vec![0u8; 64 << 10];
    // SAFETY: the stack's end, 16-byte aligned below.
    let top = unsafe { stack.as_mut_ptr().add(stack.len()) } as usize & !15;
    // Its tid while it lives: the kernel clears it and wakes its futex when the thread ends.
    let tid = AtomicI32::new(0);
    let flags = libc::CLONE_VM
        | libc::CLONE_FS
        | libc::CLONE_SIGHAND
        | libc::CLONE_THREAD
        | libc::CLONE_SYSVSEM
        | libc::CLONE_PARENT_SETTID
        | libc::CLONE_CHILD_CLEARTID;
    // SAFETY: a thread of this process on its own stack, with its own copy of the descriptor
    // table (no CLONE_FILES); `exec_thread` makes raw system calls on `prep`, which outlives it
    // (this thread waits below for it to end, unless its execve replaces the process).
    let made = unsafe {
        libc::clone(
            exec_thread,
            top as *mut libc::c_void,
            flags,
            prep as *const Prepared as *mut libc::c_void,
            tid.as_ptr(),
            std::ptr::null_mut::<libc::c_void>(),
            tid.as_ptr(),
        )
    };
    let clone_error = Errno::last();
    if made > 0 {
        loop {
            let t = tid.load(Ordering::Acquire);
            if t == 0 {
                break;
            }
            // SAFETY: waits on a word of ours while it holds `t` (the thread's exit clears it).
            unsafe { libc::syscall(libc::SYS_futex, tid.as_ptr(), libc::FUTEX_WAIT, t, std::ptr::null::<u8>()) };
        }
    }
    // Only here if the program did not start.
    // SAFETY: restoring our own mask.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    dispositions.restore();
    limits.restore();
    let timers = [libc::ITIMER_REAL, libc::ITIMER_VIRTUAL, libc::ITIMER_PROF];
    for (which, t) in timers.into_iter().zip([&prep.real_timer, &prep.cpu_timers[0], &prep.cpu_timers[1]]) {
        if t.it_value.tv_sec != 0 || t.it_value.tv_usec != 0 {
            // The program's timers are the program's again (the kernel's): none for this process.
            let off: libc::itimerval = libc::itimerval {
                it_interval: libc::timeval { tv_sec: 0, tv_usec: 0 },
                it_value: libc::timeval { tv_sec: 0, tv_usec: 0 },
            };
            // SAFETY: setitimer reads the struct we pass.
            unsafe { libc::setitimer(which, &off, std::ptr::null_mut()) };
        }
    }
    // SAFETY: getpid has no preconditions.
    super::exec_marks::forget(unsafe { libc::getpid() });
    drop(stack);
    if made <= 0 {
        return Err(clone_error);
    }
    Err(Errno(prep.error.load(Ordering::SeqCst).max(1)))
}

/// The thread that becomes the host program: raw system calls only (it runs on the spawner's
/// TLS), on its own copy of the descriptor table.
extern "C" fn exec_thread(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: the spawner passed its `Prepared`, alive until this thread ends or execs.
    let p = unsafe { &*(arg as *const Prepared) };
    let fail = |r: i64| -> ! {
        p.error.store((-r).max(1) as i32, Ordering::SeqCst);
        // SAFETY: nothing runs on this thread's stack afterwards.
        unsafe { exit_thread(127) }
    };
    // SAFETY: every call takes values prepared before the clone, on this thread's own table.
    unsafe {
        // Signals that came since the exec began are raised on this thread, which blocks them.
        crate::vm::host_signals::exec_thread_runs(syscall3(libc::SYS_gettid, 0, 0, 0) as i32);
        if let Err(e) = procs::place_descriptors(p) {
            fail(-(e as i64));
        }
        // The program's CPUs, which an exec keeps (a refusal leaves this thread's).
        if let Some(set) = &p.affinity {
            let size = std::mem::size_of::<libc::cpu_set_t>() as u64;
            syscall6(libc::SYS_sched_setaffinity, [0, size, set as *const libc::cpu_set_t as u64, 0, 0, 0]);
        }
        let pdeath = PDEATH_SIGNAL.load(Ordering::Relaxed);
        if pdeath != 0 {
            syscall6(libc::SYS_prctl, [libc::PR_SET_PDEATHSIG as u64, pdeath as u64, 0, 0, 0, 0]);
        }
        if NO_NEW_PRIVS.load(Ordering::Relaxed) {
            let r = syscall6(libc::SYS_prctl, [libc::PR_SET_NO_NEW_PRIVS as u64, 1, 0, 0, 0, 0]);
            if r < 0 {
                fail(r);
            }
        }
        for (resource, l) in &CHILD_LIMITS {
            let limit = libc::rlimit { rlim_cur: l[0].load(Ordering::Relaxed), rlim_max: l[1].load(Ordering::Relaxed) };
            if procs::limit_known(&limit) {
                let r = syscall6(libc::SYS_prlimit64, [0, *resource as u64, &limit as *const _ as u64, 0, 0, 0]);
                if r < 0 {
                    fail(r);
                }
            }
        }
        // The program's pending signals, which the exec keeps: raised for this thread while
        // it blocks every signal, so that no other thread of `hrt` takes one; those the
        // program's mask, set next, lets through act then with the new program's
        // dispositions. (If the execve fails they end with the thread; the kernel still has
        // them.)
        let (pid, tid) = (syscall3(libc::SYS_getpid, 0, 0, 0), syscall3(libc::SYS_gettid, 0, 0, 0));
        for sig in (1..=64u64).filter(|s| p.pending & 1 << (s - 1) != 0) {
            syscall3(libc::SYS_tgkill, pid as u64, tid as u64, sig);
        }
        syscall6(libc::SYS_rt_sigprocmask, [libc::SIG_SETMASK as u64, &p.mask as *const _ as u64, 0, 8, 0, 0]);
        if p.real_timer.it_value.tv_sec != 0 || p.real_timer.it_value.tv_usec != 0 {
            // The program's alarm, which the exec keeps (ITIMER_REAL is the process's: if it
            // fires before the execve, SIGALRM has the disposition set for the program).
            syscall6(libc::SYS_setitimer, [libc::ITIMER_REAL as u64, &p.real_timer as *const _ as u64, 0, 0, 0, 0]);
        }
        for (which, t) in [libc::ITIMER_VIRTUAL, libc::ITIMER_PROF].into_iter().zip(&p.cpu_timers) {
            if t.it_value.tv_sec != 0 || t.it_value.tv_usec != 0 {
                // The program's CPU-time timers, which the exec keeps (the process's CPU time
                // goes on counting from what `hrt` used).
                syscall6(libc::SYS_setitimer, [which as u64, t as *const _ as u64, 0, 0, 0, 0]);
            }
        }
        if let Err(e) = super::seccomp_filters::install(&p.filters) {
            fail(-(e as i64));
        }
        let r = syscall3(libc::SYS_execve, p.path.as_ptr() as u64, p.argv.as_ptr() as u64, p.envp.as_ptr() as u64);
        fail(r)
    }
}

/// The limits the exec thread sets for the program (`CHILD_LIMITS`), as the monitor had them:
/// limits are the process's, so a failed exec puts them back.
struct Limits(Vec<(u32, libc::rlimit)>);

impl Limits {
    fn save() -> Limits {
        let mut saved = Vec::new();
        for (resource, _) in &CHILD_LIMITS {
            let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            // SAFETY: getrlimit writes the struct we pass.
            if unsafe { libc::getrlimit(*resource, &mut rl) } == 0 {
                saved.push((*resource, rl));
            }
        }
        Limits(saved)
    }

    fn restore(&self) {
        for (resource, rl) in &self.0 {
            // SAFETY: setrlimit reads the struct we pass (a limit this process had).
            unsafe { libc::setrlimit(*resource, rl) };
        }
    }
}

/// The signal dispositions changed for the exec, with what they were (glibc's own signals 32
/// and 33, which libc's sigaction refuses, through the raw call).
struct Dispositions(Vec<(i32, libc::sigaction)>, Vec<(i32, crate::raw_sys::KernelSigaction)>);

impl Dispositions {
    /// Ignored where the program ignores the signal; default where `hrt` ignores it and the
    /// program does not (SIGPIPE: a host program writing to a closed pipe must die of it), and
    /// where `hrt` passes it on to the program and the program's mask (`mask`) lets it through:
    /// a signal that comes from now on acts as on the new program, whose handlers an exec
    /// resets (SIGTERM ends it), instead of going to a kernel that only waits for the execve
    /// (`host_signals::begin_exec`). Blocked ones keep `hrt`'s handler, which leaves them
    /// pending on the exec thread.
    fn for_exec(ignored: u64, mask: u64) -> Dispositions {
        let mut changed = Vec::new();
        for sig in 1..=64 {
            if sig == libc::SIGKILL || sig == libc::SIGSTOP {
                continue;
            }
            // SAFETY: an all-zero sigaction is a valid buffer; sigaction reads the current one.
            let mut now: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: as above (the signals glibc keeps for itself answer EINVAL: skipped).
            if unsafe { libc::sigaction(sig, std::ptr::null(), &mut now) } != 0 {
                continue;
            }
            let program_ignores = ignored & (1 << (sig - 1)) != 0;
            let passed_through = crate::kept_signals::passed_on(sig) && mask & (1 << (sig - 1)) == 0;
            let handled = now.sa_sigaction != libc::SIG_IGN && now.sa_sigaction != libc::SIG_DFL;
            let want = match (program_ignores, now.sa_sigaction == libc::SIG_IGN) {
                (true, false) => libc::SIG_IGN,
                (false, true) => libc::SIG_DFL,
                (false, false) if handled && passed_through => libc::SIG_DFL,
                _ => continue,
            };
            // SAFETY: as above.
            let mut set: libc::sigaction = unsafe { std::mem::zeroed() };
            set.sa_sigaction = want;
            // SAFETY: sets a disposition from a struct we own.
            if unsafe { libc::sigaction(sig, &set, std::ptr::null_mut()) } == 0 {
                changed.push((sig, now));
            }
        }
        // A program that ignores glibc's signals (raw rt_sigaction, or a libc that does not
        // keep them): its exec'd program finds them ignored, as on Linux. Until the execve
        // `hrt`'s own threads would lose them (glibc's set*id broadcast), a moment at most.
        let mut raw = Vec::new();
        for sig in [32, 33] {
            if ignored & (1 << (sig - 1)) == 0 {
                continue;
            }
            let ign = crate::raw_sys::KernelSigaction { handler: 1, ..Default::default() };
            // SAFETY: SIG_IGN is a valid disposition; the old one is kept to be put back.
            if let Ok(old) = unsafe { crate::raw_sys::rt_sigaction(sig, Some(&ign)) } {
                raw.push((sig, old));
            }
        }
        Dispositions(changed, raw)
    }

    fn restore(&self) {
        for (sig, old) in &self.0 {
            // SAFETY: puts back a disposition this process had.
            unsafe { libc::sigaction(*sig, old, std::ptr::null_mut()) };
        }
        for (sig, old) in &self.1 {
            // SAFETY: puts back a disposition this process had (glibc's own handler).
            let _ = unsafe { crate::raw_sys::rt_sigaction(*sig, Some(old)) };
        }
    }
}
