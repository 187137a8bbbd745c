//! The seccomp filter of the vCPU threads (defence in depth): the threads that run the guest
//! and perform its forwarded system calls may make only the host calls that forwarding,
//! KVM_RUN and Rust's runtime need. Should a bug in the forwarder let the program steer the
//! monitor into anything else (exec, ptrace, mounting, an ioctl other than the few expected),
//! the kernel stops it: the call raises SIGSYS, whose handler prints the call's number and ends
//! `hrt` with status 159 (128 + SIGSYS). `--no-seccomp` runs without the filter.

use seccompiler::BpfProgram;

use crate::error::err;
use crate::error::Result;

/// Exit status after a forbidden call: as if killed by SIGSYS.
pub const FORBIDDEN_STATUS: i32 = 128 + libc::SIGSYS;

/// Host calls allowed with any arguments besides the forwarded calls themselves
/// (`forward::HANDLED`, except `ioctl`, which is limited to its requests): the forwarder's path
/// walk and synthetic files (O_PATH lookups, statfs, memfd), identities, and what Rust's runtime
/// does on these threads (memory, futexes, signals, thread exit, stderr).
const HOST_ONLY: &[libc::c_long] = &[
    // The path walk and the synthetic files.
    libc::SYS_statfs,
    libc::SYS_openat2,
    // The attribute calls by directory and name (forward/xattr.rs, Linux 6.13).
    crate::forward::SYS_SETXATTRAT,
    crate::forward::SYS_GETXATTRAT,
    crate::forward::SYS_LISTXATTRAT,
    crate::forward::SYS_REMOVEXATTRAT,
    // The channel's non-waiting tries of reads and writes (RWF_NOWAIT).
    libc::SYS_preadv2,
    libc::SYS_pwritev2,
    libc::SYS_fstatfs,
    libc::SYS_memfd_create,
    libc::SYS_getuid,
    libc::SYS_geteuid,
    libc::SYS_getgid,
    libc::SYS_getegid,
    // access() checks with the real ids (forward/real_ids.rs).
    libc::SYS_setfsuid,
    libc::SYS_setfsgid,
    // Rust's runtime on these threads.
    libc::SYS_futex,
    libc::SYS_mmap,
    // System V segments attached over guest RAM (vm/shared_files.rs; shmctl is forwarded).
    libc::SYS_shmat,
    libc::SYS_munmap,
    libc::SYS_mremap,
    libc::SYS_madvise,
    // nr::MEM_ZERO: which pages of a partly cleared huge page the host has (vm/guest_zero.rs).
    libc::SYS_mincore,
    // nr::MSYNC: the program's msync of its shared file pages.
    libc::SYS_msync,
    libc::SYS_mprotect,
    libc::SYS_brk,
    libc::SYS_rt_sigprocmask,
    libc::SYS_rt_sigreturn,
    // nr::HOST_SIGNAL_ACTION: SIGTTIN's, SIGTTOU's and SIGCHLD's disposition follows the program's.
    libc::SYS_rt_sigaction,
    libc::SYS_sigaltstack,
    libc::SYS_restart_syscall,
    libc::SYS_sched_yield,
    libc::SYS_sched_getaffinity,
    // A vCPU thread waking the channel's pollers keeps them off its own host CPU
    // (channel/placement.rs); sched_getcpu's fallback when the vDSO lacks it.
    libc::SYS_sched_setaffinity,
    libc::SYS_getcpu,
    libc::SYS_getpid,
    libc::SYS_gettid,
    libc::SYS_tgkill,
    libc::SYS_clock_gettime,
    libc::SYS_clock_nanosleep,
    libc::SYS_nanosleep,
    libc::SYS_getrandom,
    libc::SYS_exit,
    libc::SYS_exit_group,
    // The program's host children (forward/procs.rs): waiting, signals, process groups, times.
    libc::SYS_wait4,
    libc::SYS_waitid,
    // A wait that reported a child passes on the SIGCHLD the host has for it (`host_signals`).
    libc::SYS_rt_sigtimedwait,
    // A forwarded call's answer waits for the program's signals that came (taken_signals.rs).
    libc::SYS_rt_sigpending,
    libc::SYS_kill,
    libc::SYS_setpgid,
    libc::SYS_getpgid,
    libc::SYS_setsid,
    libc::SYS_getsid,
    libc::SYS_getrusage,
    // process::HOST_LOADS (forward/procs.rs).
    libc::SYS_sysinfo,
    // process::SAME_FILE: two of the monitor's own descriptors compared (forward/same_file.rs).
    libc::SYS_kcmp,
];

/// Every call allowed with any arguments: the forwarded calls (but `ioctl`) and `HOST_ONLY`.
fn allowed() -> Vec<libc::c_long> {
    let forwarded = crate::forward::HANDLED.iter().filter(|&&nr| nr != libc::SYS_ioctl);
    forwarded.chain(HOST_ONLY).copied().collect()
}

/// `_IOR(KVMIO, nr, T)`.
const fn kvm_ior(nr: u64, size: usize) -> u64 {
    (2 << 30) | ((size as u64) << 16) | (0xae << 8) | nr
}

/// `_IOW(KVMIO, nr, T)`.
const fn kvm_iow(nr: u64, size: usize) -> u64 {
    (1 << 30) | ((size as u64) << 16) | (0xae << 8) | nr
}

/// The ioctl requests these threads make: KVM_RUN and the register reads of a crash report,
/// the forwarding channel's completion interrupts, the requests the forwarder passes on
/// (`forward::FORWARDED_IOCTLS`), and its own foreground check.
fn ioctl_requests() -> Vec<u64> {
    vec![
        0xae80,                                                      // KVM_RUN
        kvm_iow(0xa5, std::mem::size_of::<kvm_bindings::kvm_msi>()), // KVM_SIGNAL_MSI
        kvm_ior(0x81, std::mem::size_of::<kvm_bindings::kvm_regs>()),
        kvm_ior(0x83, std::mem::size_of::<kvm_bindings::kvm_sregs>()),
        // Whether `hrt` is in its terminal's background (forward/tty_stop.rs).
        libc::TIOCGPGRP,
    ]
    .into_iter()
    .chain(crate::forward::FORWARDED_IOCTLS.iter().copied())
    .collect()
}

/// The options of `prctl` these threads make: the credential changes every thread of `hrt`
/// makes when the program makes one (`every_thread`): PR_SET_KEEPCAPS, PR_CAPBSET_DROP,
/// PR_SET_SECUREBITS, PR_CAP_AMBIENT; and what an exec reads to compute the new program's
/// capabilities (`caps::exec_done`): PR_CAPBSET_READ, PR_GET_SECUREBITS.
const PRCTL_OPTIONS: [u64; 6] = [8, 23, 24, 27, 28, 47];

/// The calls allowed only with some values of one argument: `ioctl`'s requests, `prctl`'s
/// options, and `execveat` with the unmapped argument vector of the exec's check for
/// writers (`forward::exec::write_busy`: it always fails).
fn filtered() -> [super::seccomp_tree::Filtered; 3] {
    use super::seccomp_tree::Filtered;
    [
        Filtered { nr: libc::SYS_ioctl, arg: 1, values: ioctl_requests() },
        Filtered { nr: libc::SYS_prctl, arg: 0, values: PRCTL_OPTIONS.to_vec() },
        Filtered { nr: libc::SYS_execveat, arg: 2, values: vec![crate::forward::EXEC_PROBE_ARGV] },
    ]
}

/// The compiled filter (built once, installed by each vCPU thread on itself): a binary search
/// over the allowed calls (`seccomp_tree`).
pub fn filter() -> Result<BpfProgram> {
    // Compiled once: a forked child's monitor (a copy of this process) finds it made (~50 us
    // of every fork's start).
    static COMPILED: std::sync::OnceLock<BpfProgram> = std::sync::OnceLock::new();
    Ok(COMPILED.get_or_init(|| super::seccomp_tree::compile(&allowed(), &filtered())).clone())
}

/// Installs `filter` on the calling thread (only: other threads keep theirs).
pub fn install(filter: &BpfProgram) -> Result<()> {
    seccompiler::apply_filter(filter)
        .map_err(|e| err!("cannot install the seccomp filter ({e}); --no-seccomp runs without it"))
}

extern "C" fn forbidden_call(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    if crate::shared_signals::from_another_process(info) {
        // Not a forbidden call: another process's SIGSYS, the program's.
        crate::shared_signals::pass_on(sig, info, ctx);
        return;
    }
    // struct siginfo for SIGSYS: signo, errno, code (3 ints, padded to 16 bytes), then
    // `void *_call_addr; int _syscall; unsigned _arch;`.
    // SAFETY: the kernel passes a valid siginfo_t; reading an int at offset 24 of it.
    let nr = unsafe { std::ptr::read_unaligned((info as *const u8).add(24) as *const i32) };
    let mut digits = [0u8; 20];
    crate::signal_safe::write_stderr(&[
        b"hrt: the monitor made host system call ",
        crate::signal_safe::decimal(nr as u64, &mut digits),
        b", which its seccomp filter forbids (a bug in hrt; --no-seccomp runs without the filter)\n",
    ]);
    // SAFETY: _exit is async-signal-safe.
    unsafe { libc::_exit(FORBIDDEN_STATUS) };
}

/// Installs the process-wide SIGSYS handler that reports a forbidden call.
pub fn install_report_handler() {
    // SAFETY: sigaction with a zeroed struct, our handler and SA_SIGINFO.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = forbidden_call as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO;
        libc::sigaction(libc::SIGSYS, &sa, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::seccomp_tree::{run, AUDIT_ARCH_X86_64, RET_ALLOW, RET_TRAP};

    /// The compiled program allows every listed call and ioctl request, and nothing else of
    /// the first 600 call numbers.
    #[test]
    fn the_filter_allows_the_lists_and_nothing_else() {
        let bpf = filter().unwrap();
        let (calls, requests) = (allowed(), ioctl_requests());
        for nr in 0..600u32 {
            let want = if calls.contains(&(nr as i64)) { RET_ALLOW } else { RET_TRAP };
            let arg = if nr == libc::SYS_ioctl as u32 { 0x1234_5678 } else { 0 };
            assert_eq!(run(&bpf, nr, AUDIT_ARCH_X86_64, arg).0, want, "call {nr}");
        }
        for req in requests {
            assert_eq!(run(&bpf, libc::SYS_ioctl as u32, AUDIT_ARCH_X86_64, req).0, RET_ALLOW, "ioctl {req:#x}");
        }
        for option in PRCTL_OPTIONS {
            assert_eq!(run(&bpf, libc::SYS_prctl as u32, AUDIT_ARCH_X86_64, option).0, RET_ALLOW, "prctl {option}");
        }
        for option in [libc::PR_SET_PDEATHSIG, libc::PR_SET_NAME, libc::PR_SET_DUMPABLE, libc::PR_SET_SECCOMP] {
            assert_eq!(
                run(&bpf, libc::SYS_prctl as u32, AUDIT_ARCH_X86_64, option as u64).0,
                RET_TRAP,
                "prctl {option}"
            );
        }
        for forbidden in [libc::SYS_execve, libc::SYS_ptrace, libc::SYS_fork, libc::SYS_clone, libc::SYS_acct] {
            assert_eq!(run(&bpf, forbidden as u32, AUDIT_ARCH_X86_64, 0).0, RET_TRAP);
        }
        // execveat only with the write check's unmapped argument vector, which always fails.
        let probe = crate::forward::EXEC_PROBE_ARGV;
        assert_eq!(run(&bpf, libc::SYS_execveat as u32, AUDIT_ARCH_X86_64, probe).0, RET_ALLOW);
        assert_eq!(run(&bpf, libc::SYS_execveat as u32, AUDIT_ARCH_X86_64, 0x7fff_0000).0, RET_TRAP);
    }

    /// A forbidden call in a filtered thread ends the process with the message and status 159;
    /// an allowed one works. Runs in a child process (fork), which installs the filter on
    /// itself.
    #[test]
    fn forbidden_call_is_reported_and_fatal() {
        let bpf = filter().unwrap();
        let mut pipe = [0i32; 2];
        // SAFETY: a two-int array.
        assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
        // SAFETY: the child makes only async-signal-safe calls (sigaction, seccomp, write,
        // acct, _exit) and never returns into the test harness.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: see above.
            unsafe {
                libc::dup2(pipe[1], 2);
                install_report_handler();
                if seccompiler::apply_filter(&bpf).is_err() {
                    libc::_exit(3);
                }
                if libc::write(2, b"allowed\n".as_ptr() as *const libc::c_void, 8) != 8 {
                    libc::_exit(4);
                }
                libc::syscall(libc::SYS_acct, 0);
                libc::_exit(0);
            }
        }
        // SAFETY: closing our copy of the write end; reading the child's stderr.
        unsafe { libc::close(pipe[1]) };
        let mut status = 0;
        // SAFETY: waiting for our child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        let mut out = vec![0u8; 4096];
        // SAFETY: reading into our buffer.
        let n = unsafe { libc::read(pipe[0], out.as_mut_ptr() as *mut libc::c_void, out.len()) };
        out.truncate(n.max(0) as usize);
        let text = String::from_utf8_lossy(&out);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == FORBIDDEN_STATUS, "status {status:#x}: {text}");
        let want = format!("allowed\nhrt: the monitor made host system call {}, ", libc::SYS_acct);
        assert!(text.starts_with(&want), "{text}");
    }
}
