//! The system-call table: every Linux x86-64 system call is *local* (served in the kernel),
//! *forwarded* (performed by the monitor on the host) or *unimplemented* (ENOSYS and a trace
//! line). One match, readable at a glance; numbers not listed are unimplemented. Every call
//! the monitor's forwarder performs must be routed `F` here: a host test
//! (monitor/src/forward/routing_tests.rs) reads this file and checks it.

use linux_raw_sys::general::*;

use super::calls::{info, memory, residency, signal, thread, time};
use super::errno::SysResult;
use super::signal::timers;
use crate::arch::traps::TrapFrame;

pub type Handler = fn(&mut TrapFrame, [u64; 6]) -> SysResult;

pub enum Route {
    Local(Handler),
    Forward,
    Unimplemented,
}

use Route::{Forward as F, Local as L, Unimplemented as U};

/// (name, number of arguments to trace, route) of system call `nr`.
#[allow(non_upper_case_globals)] // linux-raw-sys names the numbers __NR_read etc.
pub fn route(nr: u64) -> (&'static str, usize, Route) {
    let nr = nr as u32;
    match nr {
        // Files, terminal, pipes: forwarded.
        __NR_read => ("read", 3, F),
        __NR_write => ("write", 3, F),
        __NR_readv => ("readv", 3, F),
        __NR_writev => ("writev", 3, F),
        __NR_pread64 => ("pread64", 4, F),
        __NR_pwrite64 => ("pwrite64", 4, F),
        __NR_open => ("open", 3, F),
        __NR_openat => ("openat", 4, F),
        __NR_close => ("close", 1, F),
        __NR_fstat => ("fstat", 2, F),
        __NR_stat => ("stat", 2, F),
        __NR_lstat => ("lstat", 2, F),
        __NR_newfstatat => ("newfstatat", 4, F),
        __NR_statx => ("statx", 5, F),
        __NR_lseek => ("lseek", 3, F),
        __NR_access => ("access", 2, F),
        __NR_faccessat => ("faccessat", 3, F),
        __NR_faccessat2 => ("faccessat2", 4, F),
        __NR_getcwd => ("getcwd", 2, F),
        __NR_chdir => ("chdir", 1, F),
        __NR_fchdir => ("fchdir", 1, F),
        __NR_mkdir => ("mkdir", 2, F),
        __NR_mkdirat => ("mkdirat", 3, F),
        __NR_rmdir => ("rmdir", 1, F),
        __NR_unlink => ("unlink", 1, F),
        __NR_unlinkat => ("unlinkat", 3, F),
        __NR_rename => ("rename", 2, F),
        __NR_renameat => ("renameat", 4, F),
        __NR_renameat2 => ("renameat2", 5, F),
        __NR_readlink => ("readlink", 3, F),
        __NR_readlinkat => ("readlinkat", 4, F),
        __NR_getdents64 => ("getdents64", 3, F),
        __NR_fcntl => ("fcntl", 3, F),
        __NR_ioctl => ("ioctl", 3, F),
        __NR_dup => ("dup", 1, F),
        __NR_dup2 => ("dup2", 2, F),
        __NR_dup3 => ("dup3", 3, F),
        __NR_pipe => ("pipe", 1, F),
        __NR_pipe2 => ("pipe2", 2, F),
        __NR_ftruncate => ("ftruncate", 2, F),
        __NR_truncate => ("truncate", 2, F),
        __NR_fsync => ("fsync", 1, F),
        __NR_fdatasync => ("fdatasync", 1, F),
        __NR_poll => ("poll", 3, F),
        __NR_ppoll => ("ppoll", 4, F),
        __NR_select => ("select", 5, F),
        __NR_pselect6 => ("pselect6", 6, F),
        __NR_chmod => ("chmod", 2, F),
        __NR_fchmod => ("fchmod", 2, F),
        __NR_utimensat => ("utimensat", 4, F),
        __NR_sendfile => ("sendfile", 4, F),
        __NR_preadv => ("preadv", 5, F),
        __NR_pwritev => ("pwritev", 5, F),
        __NR_creat => ("creat", 2, F),
        __NR_link => ("link", 2, F),
        __NR_linkat => ("linkat", 5, F),
        __NR_symlink => ("symlink", 2, F),
        __NR_symlinkat => ("symlinkat", 3, F),
        __NR_fchmodat => ("fchmodat", 3, F),
        __NR_chown => ("chown", 3, F),
        __NR_fchown => ("fchown", 3, F),
        __NR_lchown => ("lchown", 3, F),
        __NR_fchownat => ("fchownat", 5, F),
        __NR_statfs => ("statfs", 2, F),
        __NR_fstatfs => ("fstatfs", 2, F),
        __NR_getgroups => ("getgroups", 2, F),
        __NR_getxattr => ("getxattr", 4, F),
        __NR_lgetxattr => ("lgetxattr", 4, F),
        __NR_fgetxattr => ("fgetxattr", 4, F),
        __NR_listxattr => ("listxattr", 3, F),
        __NR_llistxattr => ("llistxattr", 3, F),
        __NR_flistxattr => ("flistxattr", 3, F),
        __NR_fadvise64 => ("fadvise64", 4, F),
        __NR_epoll_create => ("epoll_create", 1, F),
        __NR_epoll_create1 => ("epoll_create1", 1, F),
        __NR_epoll_ctl => ("epoll_ctl", 4, F),
        __NR_epoll_wait => ("epoll_wait", 4, F),
        __NR_epoll_pwait => ("epoll_pwait", 6, F),
        __NR_epoll_pwait2 => ("epoll_pwait2", 6, F),
        __NR_eventfd => ("eventfd", 1, F),
        __NR_eventfd2 => ("eventfd2", 2, F),

        // Memory.
        __NR_brk => ("brk", 1, L(memory::brk)),
        __NR_mmap => ("mmap", 6, L(memory::mmap)),
        __NR_munmap => ("munmap", 2, L(memory::munmap)),
        __NR_mremap => ("mremap", 5, L(memory::mremap)),
        __NR_mprotect => ("mprotect", 3, L(memory::mprotect)),
        __NR_madvise => ("madvise", 3, L(memory::madvise)),
        __NR_mincore => ("mincore", 3, L(residency::mincore)),

        // Threads, identity, scheduling.
        __NR_clone => ("clone", 5, L(thread::clone)),
        __NR_clone3 => ("clone3", 2, L(thread::clone3)),
        __NR_fork => ("fork", 0, U),
        __NR_vfork => ("vfork", 0, U),
        __NR_execve => ("execve", 3, U),
        __NR_exit => ("exit", 1, L(thread::exit)),
        __NR_exit_group => ("exit_group", 1, L(thread::exit_group)),
        __NR_futex => ("futex", 6, L(super::futex::futex)),
        __NR_set_tid_address => ("set_tid_address", 1, L(thread::set_tid_address)),
        __NR_set_robust_list => ("set_robust_list", 2, L(thread::set_robust_list)),
        __NR_get_robust_list => ("get_robust_list", 3, L(thread::get_robust_list)),
        __NR_rseq => ("rseq", 4, L(thread::rseq)),
        __NR_gettid => ("gettid", 0, L(thread::gettid)),
        __NR_getpid => ("getpid", 0, L(thread::getpid)),
        __NR_getppid => ("getppid", 0, L(thread::getppid)),
        __NR_tkill => ("tkill", 2, L(signal::tkill)),
        __NR_tgkill => ("tgkill", 3, L(signal::tgkill)),
        __NR_rt_sigqueueinfo => ("rt_sigqueueinfo", 3, L(signal::rt_sigqueueinfo)),
        __NR_rt_tgsigqueueinfo => ("rt_tgsigqueueinfo", 4, L(signal::rt_tgsigqueueinfo)),
        __NR_kill => ("kill", 2, L(signal::kill)),
        __NR_sched_yield => ("sched_yield", 0, L(thread::sched_yield)),
        __NR_sched_getaffinity => ("sched_getaffinity", 3, L(thread::sched_getaffinity)),
        __NR_sched_setaffinity => ("sched_setaffinity", 3, L(thread::sched_setaffinity)),
        __NR_getcpu => ("getcpu", 3, L(thread::getcpu)),
        __NR_arch_prctl => ("arch_prctl", 2, L(thread::arch_prctl)),
        __NR_sched_getparam => ("sched_getparam", 2, L(info::sched_getparam)),
        __NR_sched_getscheduler => ("sched_getscheduler", 1, L(info::sched_getscheduler)),

        // Time.
        __NR_clock_gettime => ("clock_gettime", 2, L(time::clock_gettime)),
        __NR_clock_getres => ("clock_getres", 2, L(time::clock_getres)),
        __NR_gettimeofday => ("gettimeofday", 2, L(time::gettimeofday)),
        __NR_time => ("time", 1, L(time::time)),
        __NR_nanosleep => ("nanosleep", 2, L(time::nanosleep)),
        __NR_clock_nanosleep => ("clock_nanosleep", 4, L(time::clock_nanosleep)),

        // System information, limits, identity.
        __NR_getrandom => ("getrandom", 3, L(info::getrandom)),
        __NR_uname => ("uname", 1, L(info::uname)),
        __NR_sysinfo => ("sysinfo", 1, L(info::sysinfo)),
        __NR_getrlimit => ("getrlimit", 2, L(info::getrlimit)),
        __NR_setrlimit => ("setrlimit", 2, L(info::setrlimit)),
        __NR_prlimit64 => ("prlimit64", 4, L(info::prlimit64)),
        __NR_getrusage => ("getrusage", 2, L(info::getrusage)),
        __NR_times => ("times", 1, L(info::times)),
        __NR_getuid => ("getuid", 0, L(info::getuid)),
        __NR_geteuid => ("geteuid", 0, L(info::getuid)),
        __NR_getgid => ("getgid", 0, L(info::getgid)),
        __NR_getegid => ("getegid", 0, L(info::getgid)),
        __NR_umask => ("umask", 1, L(info::umask)),
        __NR_prctl => ("prctl", 5, L(info::prctl)),

        // Signals: delivered to handlers on the way back to the program (linux::signal).
        __NR_rt_sigaction => ("rt_sigaction", 4, L(signal::rt_sigaction)),
        __NR_rt_sigprocmask => ("rt_sigprocmask", 4, L(signal::rt_sigprocmask)),
        __NR_rt_sigpending => ("rt_sigpending", 2, L(signal::rt_sigpending)),
        __NR_sigaltstack => ("sigaltstack", 2, L(signal::sigaltstack)),
        __NR_rt_sigreturn => ("rt_sigreturn", 0, L(signal::rt_sigreturn)),
        __NR_rt_sigsuspend => ("rt_sigsuspend", 2, L(signal::rt_sigsuspend)),
        __NR_rt_sigtimedwait => ("rt_sigtimedwait", 4, L(signal::rt_sigtimedwait)),
        __NR_pause => ("pause", 0, L(signal::pause)),
        __NR_alarm => ("alarm", 1, L(timers::alarm)),
        __NR_setitimer => ("setitimer", 3, L(timers::setitimer)),
        __NR_getitimer => ("getitimer", 2, L(timers::getitimer)),
        __NR_timer_create => ("timer_create", 3, L(timers::timer_create)),
        __NR_timer_settime => ("timer_settime", 4, L(timers::timer_settime)),
        __NR_timer_gettime => ("timer_gettime", 2, L(timers::timer_gettime)),
        __NR_timer_getoverrun => ("timer_getoverrun", 1, L(timers::timer_getoverrun)),
        __NR_timer_delete => ("timer_delete", 1, L(timers::timer_delete)),

        _ => (super::names::name(nr as u64), 6, U),
    }
}
