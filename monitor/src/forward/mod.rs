//! Forwarded system calls: the program's calls that touch host resources (files, terminal,
//! pipes, sockets), performed by the monitor on the host.
//!
//! The guest kernel sends a Linux x86-64 system-call number and six arguments; [`Forwarder::call`]
//! returns the Linux result (a negated errno on failure). Guest addresses in the arguments are
//! guest-physical (equal to the program's virtual addresses): every pointer and length, and every
//! pointer inside a structure (iovec arrays, pollfd arrays, fd_sets, timeouts), is checked
//! against guest memory (EFAULT otherwise) before the host sees it. Descriptors go through the
//! monitor's own table ([`fd_table`]): guest fd numbers are the guest's (lowest free, as Linux
//! allocates them), never the host's.
//!
//! Decisions:
//! - Guest fds 0/1/2 start as the host's 0/1/2 — those the monitor inherited (open and without
//!   FD_CLOEXEC: a descriptor inherited across exec never has it, and everything the monitor
//!   opens itself has it, so a closed standard descriptor reused by KVM is not mistaken for it).
//!   They are borrowed: the guest closing its fd 2 (or dup2-ing over it) removes only its own
//!   mapping, and the host descriptor stays open for the monitor's messages.
//! - Host descriptors are always opened with O_CLOEXEC; the guest's FD_CLOEXEC is kept per guest
//!   fd (F_GETFD/F_SETFD, O_CLOEXEC, dup3, F_DUPFD_CLOEXEC). F_GETFL never shows O_CLOEXEC on
//!   Linux, so the host flag is invisible.
//! - The guest's descriptor limit is the monitor's RLIMIT_NOFILE soft limit at start-up.
//! - ppoll/pselect6/epoll_pwait/epoll_pwait2 signal masks are checked (EFAULT, EINVAL for a
//!   wrong size, as Linux does); the guest kernel applies them for the wait.
//! - A host call interrupted by a signal aimed at the monitor is restarted (timeouts continue
//!   with the time left), unless [`Forwarder::shutdown`] was called: then the call returns EINTR,
//!   so the monitor can free a vCPU thread blocked in a forwarded read by calling shutdown() and
//!   then signalling that thread.
//! - Blocking calls (read on a pipe or terminal, poll) block the calling vCPU thread.

pub mod async_fds;
mod blocking;
pub mod caps;
pub mod child_state;
mod cpu_dirs;
pub mod cross_memory;
mod epoll;
mod errno;
mod exec;
pub use exec::{write_busy, PROBE_ARGV as EXEC_PROBE_ARGV};
pub mod exec_marks;
mod fadvise;
mod fd_dirs;
mod fd_table;
mod fds;
mod file_space;
mod files;
mod forked;
mod host_procs;
pub use host_procs::note_root as note_program_root;
pub use procs::{
    lift_cpu_soft_limit, lift_descriptor_soft_limit, lift_process_limit, note_no_new_privs, note_pdeath_signal,
    note_program_limit, note_rss_before_program, note_vcpus, program_limit,
};
#[cfg(test)]
pub(crate) mod fuzz;
pub mod guest_copy;
mod guest_mem;
mod host;
mod host_exec;
mod hrt_children;
mod inherit;
mod inotify;
mod io;
mod kept_files;
pub mod meminfo;
mod openat2;
pub mod own_maps;
pub mod own_status;
pub mod own_title;
mod owners;
mod paths;
mod poll;
mod posix_mq;
mod proc_cpus;
mod procs;
mod real_ids;
mod remote_pages;
#[cfg(test)]
mod routing_tests;
mod same_file;
mod seccomp_filters;
mod shared_futex;
mod sockets;
mod stand_ins;
mod synthetic;
mod sysv_ipc;
mod sysv_shm;
pub mod task_dir;
#[cfg(test)]
mod tests;
mod timerfd;
pub mod tty_stop;
mod walk;
mod xattr;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub use blocking::Tried;
use epoll::Wait;
use errno::{to_ret, Errno, SysResult};
use fd_table::{FdTable, HostFd};
pub use fds::FORWARDED_IOCTLS;
pub use forked::ForkSetup;
use guest_mem::Guest;
pub use guest_mem::{mapped_len_in, unmarked_len_in, GuestMemory};
pub use host::{runs_a_vcpu, with_cancel};
pub use hrt_children::run_children_as_hrt;
pub use paths::exe_path;
pub use procs::leave_out_monitors_children;
pub use xattr::{SYS_GETXATTRAT, SYS_LISTXATTRAT, SYS_REMOVEXATTRAT, SYS_SETXATTRAT};

/// AT_FDCWD as a system-call argument.
const CWD: u64 = libc::AT_FDCWD as u32 as u64;

/// Calls of [`HANDLED`] that the kernel's table routes to handlers of its own, which forward
/// them after a look of their own (getpriority and setpriority: a program thread's id becomes
/// the program's process; the id calls).
pub const FORWARDED_BY_KERNEL_HANDLERS: &[libc::c_long] =
    &joined::<{ KERNEL_HANDLED.len() + ID_CALLS.len() }>(KERNEL_HANDLED, ID_CALLS);

/// The user and group id calls: the kernel answers the get calls and the set calls that change
/// nothing itself, and forwards the others (owners.rs); `capset` after its checks (caps.rs).
const ID_CALLS: &[libc::c_long] = &[
    libc::SYS_setuid,
    libc::SYS_setreuid,
    libc::SYS_setresuid,
    libc::SYS_setgid,
    libc::SYS_setregid,
    libc::SYS_setresgid,
    libc::SYS_setgroups,
    libc::SYS_getresuid,
    libc::SYS_getresgid,
    libc::SYS_capset,
    libc::SYS_setfsuid,
    libc::SYS_setfsgid,
];

/// `a` then `b`, as one array of `N` (their lengths' sum): lists made of shared parts.
const fn joined<const N: usize>(a: &[libc::c_long], b: &[libc::c_long]) -> [libc::c_long; N] {
    assert!(a.len() + b.len() == N);
    let mut out = [0; N];
    let mut i = 0;
    while i < N {
        out[i] = if i < a.len() { a[i] } else { b[i - a.len()] };
        i += 1;
    }
    out
}

/// `FORWARDED_BY_KERNEL_HANDLERS` but the id calls.
const KERNEL_HANDLED: &[libc::c_long] = &[
    libc::SYS_getppid,
    libc::SYS_getpriority,
    libc::SYS_setpriority,
    libc::SYS_ioprio_get,
    libc::SYS_ioprio_set,
    libc::SYS_sched_getattr,
    libc::SYS_sched_setattr,
    libc::SYS_sched_setscheduler,
    libc::SYS_sched_setparam,
    libc::SYS_sched_rr_get_interval,
    libc::SYS_clock_gettime,
    libc::SYS_clock_getres,
    // After the kernel's checks, which then moves the program's clock (calls/time.rs).
    libc::SYS_clock_settime,
    libc::SYS_settimeofday,
    libc::SYS_timerfd_settime,
    libc::SYS_pidfd_send_signal,
    // A thread's id is the kernel's to answer (calls/procs.rs).
    libc::SYS_pidfd_open,
    libc::SYS_rt_sigqueueinfo,
    libc::SYS_tgkill,
    libc::SYS_rt_tgsigqueueinfo,
    libc::SYS_sethostname,
    libc::SYS_setdomainname,
    libc::SYS_prlimit64,
];

/// Every call the forwarder performs (Linux x86-64 numbers). The kernel's table must route
/// exactly these here (routing_tests.rs), and the vCPU threads' seccomp filter allows them
/// (vm/seccomp.rs).
pub const HANDLED: &[libc::c_long] =
    &joined::<{ FORWARDED.len() + FORWARDED_BY_KERNEL_HANDLERS.len() }>(FORWARDED, FORWARDED_BY_KERNEL_HANDLERS);

/// The calls of [`HANDLED`] that the kernel's table forwards as they are (`F`).
const FORWARDED: &[libc::c_long] = &[
    libc::SYS_read,
    libc::SYS_write,
    libc::SYS_readv,
    libc::SYS_writev,
    libc::SYS_pread64,
    libc::SYS_pwrite64,
    libc::SYS_preadv,
    libc::SYS_pwritev,
    libc::SYS_preadv2,
    libc::SYS_pwritev2,
    libc::SYS_sendfile,
    libc::SYS_copy_file_range,
    libc::SYS_splice,
    libc::SYS_tee,
    libc::SYS_vmsplice,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_open,
    libc::SYS_creat,
    libc::SYS_openat,
    libc::SYS_openat2,
    libc::SYS_close,
    libc::SYS_close_range,
    libc::SYS_umask,
    libc::SYS_inotify_init,
    libc::SYS_inotify_init1,
    libc::SYS_inotify_add_watch,
    libc::SYS_inotify_rm_watch,
    libc::SYS_fallocate,
    libc::SYS_sync,
    libc::SYS_syncfs,
    libc::SYS_vhangup,
    libc::SYS_memfd_create,
    libc::SYS_fstat,
    libc::SYS_stat,
    libc::SYS_lstat,
    libc::SYS_newfstatat,
    libc::SYS_statx,
    libc::SYS_name_to_handle_at,
    libc::SYS_lseek,
    libc::SYS_access,
    libc::SYS_faccessat,
    libc::SYS_faccessat2,
    libc::SYS_getcwd,
    libc::SYS_chdir,
    libc::SYS_fchdir,
    libc::SYS_mkdir,
    libc::SYS_mkdirat,
    libc::SYS_rmdir,
    libc::SYS_unlink,
    libc::SYS_unlinkat,
    libc::SYS_rename,
    libc::SYS_renameat,
    libc::SYS_renameat2,
    libc::SYS_link,
    libc::SYS_linkat,
    libc::SYS_symlink,
    libc::SYS_symlinkat,
    libc::SYS_readlink,
    libc::SYS_readlinkat,
    libc::SYS_getdents,
    libc::SYS_getdents64,
    libc::SYS_fcntl,
    libc::SYS_ioctl,
    libc::SYS_dup,
    libc::SYS_dup2,
    libc::SYS_dup3,
    libc::SYS_pipe,
    libc::SYS_pipe2,
    libc::SYS_truncate,
    libc::SYS_ftruncate,
    libc::SYS_fsync,
    libc::SYS_fdatasync,
    libc::SYS_flock,
    libc::SYS_chmod,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    libc::SYS_fchmodat2,
    libc::SYS_utimensat,
    libc::SYS_utime,
    libc::SYS_utimes,
    libc::SYS_futimesat,
    libc::SYS_poll,
    libc::SYS_ppoll,
    libc::SYS_select,
    libc::SYS_pselect6,
    libc::SYS_chown,
    libc::SYS_fchown,
    libc::SYS_lchown,
    libc::SYS_fchownat,
    libc::SYS_statfs,
    libc::SYS_fstatfs,
    libc::SYS_getgroups,
    libc::SYS_capget,
    libc::SYS_capset,
    libc::SYS_adjtimex,
    libc::SYS_clock_adjtime,
    libc::SYS_clock_settime,
    libc::SYS_settimeofday,
    libc::SYS_getxattr,
    libc::SYS_lgetxattr,
    libc::SYS_fgetxattr,
    libc::SYS_listxattr,
    libc::SYS_llistxattr,
    libc::SYS_flistxattr,
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_fsetxattr,
    libc::SYS_removexattr,
    libc::SYS_lremovexattr,
    libc::SYS_fremovexattr,
    libc::SYS_mknod,
    libc::SYS_mknodat,
    libc::SYS_fadvise64,
    libc::SYS_readahead,
    libc::SYS_sync_file_range,
    libc::SYS_epoll_create,
    libc::SYS_epoll_create1,
    libc::SYS_epoll_ctl,
    libc::SYS_epoll_wait,
    libc::SYS_epoll_pwait,
    libc::SYS_epoll_pwait2,
    libc::SYS_eventfd,
    libc::SYS_eventfd2,
    libc::SYS_timerfd_create,
    libc::SYS_timerfd_gettime,
    libc::SYS_pidfd_getfd,
    libc::SYS_socket,
    libc::SYS_socketpair,
    libc::SYS_bind,
    libc::SYS_listen,
    libc::SYS_accept,
    libc::SYS_accept4,
    libc::SYS_connect,
    libc::SYS_sendto,
    libc::SYS_recvfrom,
    libc::SYS_sendmsg,
    libc::SYS_recvmsg,
    libc::SYS_sendmmsg,
    libc::SYS_recvmmsg,
    libc::SYS_shutdown,
    libc::SYS_getsockname,
    libc::SYS_getpeername,
    libc::SYS_getsockopt,
    libc::SYS_setsockopt,
    libc::SYS_shmget,
    libc::SYS_shmctl,
    libc::SYS_semget,
    libc::SYS_semop,
    libc::SYS_semtimedop,
    libc::SYS_semctl,
    libc::SYS_msgget,
    libc::SYS_msgsnd,
    libc::SYS_msgrcv,
    libc::SYS_msgctl,
    libc::SYS_mq_open,
    libc::SYS_mq_unlink,
    libc::SYS_mq_timedsend,
    libc::SYS_mq_timedreceive,
    libc::SYS_mq_notify,
    libc::SYS_mq_getsetattr,
];

/// Performs the program's forwarded system calls. Shared by all vCPU threads.
pub struct Forwarder {
    fds: FdTable,
    /// What the program's own /proc/self files describe (changed by its execve).
    described: std::sync::Mutex<Described>,
    /// The program's execve under way (exec.rs).
    exec: std::sync::Mutex<Option<exec::PendingExec>>,
    /// The program files placed in guest RAM without their large segments, which
    /// `nr::MEM_COPY` copies from the files (`placed_image`).
    pub placed: crate::placed_image::PlacedImages,
    /// The monitor's pid as text (`/proc/<pid>` is `/proc/self`).
    host_pid: String,
    /// Set by shutdown(): interrupted host calls are no longer restarted.
    stopping: AtomicBool,
    /// The working directory is under /proc or /dev, or in the VM's CPU or node directories
    /// (relative paths are then checked, see `paths::cwd_is_special`).
    cwd_special: AtomicBool,
    /// The working directory as the program named it, when that is in the VM's CPU or node
    /// directories: the host's working directory is then the directory standing in for it
    /// (a vCPU the host lacks is its `cpu0`), so relative paths and getcwd go by this name.
    cwd_vm: std::sync::Mutex<Option<Arc<[u8]>>>,
    /// The working directory as an O_PATH descriptor (`Forwarder::cwd_fd`); changed with the
    /// directory itself, under this lock.
    cwd: std::sync::Mutex<Option<Arc<HostFd>>>,
    /// The VM's vCPUs (what the synthetic /sys CPU lists answer).
    cpus: u32,
    /// Its child processes (procs.rs).
    children: procs::Children,
    /// `--omp` for the images the program execs (None: not chosen, a VM without a program).
    exec_omp: Option<crate::overrides::choice::ExecPolicy>,
    /// The plans for the shared libraries ld.so maps (`nr::FILE_OVERRIDES`): made for the
    /// first image, or for the first exec'd one whose libgomp is a shared library.
    pub library_plans: std::sync::OnceLock<crate::overrides::LibraryPlans>,
}

/// The program as its own /proc/self shows it.
#[derive(Default, Clone)]
struct Described {
    /// What readlink("/proc/self/exe") answers: the program's absolute host path.
    exe: Vec<u8>,
    /// Its argv (its /proc/self/cmdline).
    argv: Vec<Vec<u8>>,
    /// The path whose last component is its name (comm, status): argv[0] as `hrt run` got
    /// it, or the file name its last execve got.
    name: Vec<u8>,
    /// Its memory, guest addresses [start, end) (its /proc/self/maps).
    mem: (u64, u64),
    /// Its interpreter's path as the program names it (empty for a static program).
    interp: Vec<u8>,
    /// The (device, inode) of its executable and interpreter: Linux refuses to open them for
    /// writing while they run (ETXTBSY), as the host would if it ran them (`running_image`).
    running: Vec<(u64, u64)>,
    /// The executable, opened O_PATH when it was described: /proc/self/exe reaches it through
    /// this descriptor, as Linux's magic link reaches the file without walking its path (a
    /// program that dropped root could not exec /proc/self/exe from a directory only root may
    /// search).
    exe_fd: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
}

impl Described {
    fn note_running(&mut self) {
        let ids = |p: &[u8]| {
            use std::os::unix::ffi::OsStrExt;
            std::fs::metadata(std::ffi::OsStr::from_bytes(p)).ok().map(|m| {
                use std::os::unix::fs::MetadataExt;
                (m.dev(), m.ino())
            })
        };
        self.running = [&self.exe, &self.interp].into_iter().filter(|p| !p.is_empty()).filter_map(|p| ids(p)).collect();
        self.exe_fd = std::ffi::CString::new(self.exe.clone()).ok().and_then(|path| {
            use std::os::fd::FromRawFd;
            // SAFETY: open(2) of a C string; the descriptor is ours.
            let fd = unsafe { libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
            // SAFETY: a fresh descriptor we own.
            (fd >= 0).then(|| std::sync::Arc::new(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
        });
    }
}

/// The descriptor limit the guest gets: the monitor's own soft RLIMIT_NOFILE as it started
/// (`procs::lift_descriptor_soft_limit`).
fn fd_limit() -> usize {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct we pass.
    let host = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } == 0 { rl.rlim_cur } else { 1024 };
    let cur = procs::program_descriptor_limit().unwrap_or(host);
    // At least the standard three (the table holds them whatever the limit, as Linux keeps
    // descriptors above a lowered limit open).
    cur.clamp(3, 1 << 20) as usize
}

/// Reserves the standard descriptor numbers (0, 1, 2) the monitor was started without
/// (`hrt run ... >&-`): each closed one gets /dev/null with FD_CLOEXEC, so the monitor's own
/// files (KVM, the program) never take those numbers, and the guest's table, which maps only
/// inherited descriptors (no FD_CLOEXEC), gives the program EBADF for them, as Linux would.
///
/// It runs from `.init_array`, before Rust's runtime start-up, which would otherwise put
/// /dev/null *without* FD_CLOEXEC there, indistinguishable from an inherited descriptor.
extern "C" fn reserve_closed_standard_fds() {
    for fd in 0..3 {
        // SAFETY: F_GETFD only reads descriptor flags.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0 {
            continue;
        }
        // SAFETY: opening /dev/null; the lowest free number is `fd` (lower ones are open).
        let got = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if got >= 0 && got != fd {
            // SAFETY: moving our own fresh descriptor onto the free number, then closing it.
            unsafe {
                libc::dup3(got, fd, libc::O_CLOEXEC);
                libc::close(got);
            }
        }
    }
}

#[used]
#[link_section = ".init_array"]
static RESERVE_STANDARD_FDS: extern "C" fn() = reserve_closed_standard_fds;

/// Whether host descriptor `fd` is one the monitor inherited (open, without FD_CLOEXEC).
fn inherited(fd: i32) -> bool {
    // SAFETY: F_GETFD only reads descriptor flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    flags >= 0 && flags & libc::FD_CLOEXEC == 0
}

impl Forwarder {
    /// `exe`: the program's host path (for readlink("/proc/self/exe")).
    pub fn new(exe: PathBuf, cpus: u32) -> Forwarder {
        let fds = FdTable::new(fd_limit());
        for fd in 0..3 {
            if inherited(fd) {
                // Cannot fail: 0..3 is below the limit (at least 3).
                let _ = fds.replace(fd as usize, Arc::new(HostFd::borrowed(fd)), false);
            }
        }
        Forwarder {
            fds,
            described: std::sync::Mutex::new(Described { exe: paths::exe_path(&exe), ..Described::default() }),
            exec: std::sync::Mutex::new(None),
            placed: Default::default(),
            exec_omp: None,
            library_plans: std::sync::OnceLock::new(),
            host_pid: std::process::id().to_string(),
            stopping: AtomicBool::new(false),
            cwd_special: AtomicBool::new(paths::cwd_is_special()),
            cwd_vm: std::sync::Mutex::new(None),
            cwd: std::sync::Mutex::new(paths::open_cwd()),
            cpus,
            children: procs::Children::default(),
        }
    }

    /// `--omp` for the images the program execs.
    pub fn set_exec_omp(&mut self, policy: crate::overrides::choice::ExecPolicy) {
        self.exec_omp = Some(policy);
    }

    /// What the program's own /proc/self files describe: its argv and its memory.
    pub fn describe_program(&mut self, argv: Vec<Vec<u8>>, program_mem: (u64, u64), interp: Vec<u8>) {
        let d = self.described.get_mut().unwrap();
        d.name = argv.first().cloned().unwrap_or_default();
        d.argv = argv;
        d.mem = program_mem;
        d.interp = interp;
        d.note_running();
    }

    /// After the program's execve: its new executable, argv, name and interpreter.
    fn describe_exec(&self, exe: Vec<u8>, argv: Vec<Vec<u8>>, name: Vec<u8>, interp: Vec<u8>) {
        let mut d = self.described.lock().unwrap();
        (d.exe, d.argv, d.name, d.interp) = (exe, argv, name, interp);
        d.note_running();
    }

    /// Whether the file `st` describes is the program's executable or interpreter.
    fn running_image(&self, st: &libc::stat) -> bool {
        self.described.lock().unwrap().running.contains(&(st.st_dev, st.st_ino))
    }

    /// What readlink("/proc/self/exe") answers.
    pub fn exe(&self) -> Vec<u8> {
        self.described.lock().unwrap().exe.clone()
    }

    /// The descriptor kept for the program's executable (`Described::exe_fd`).
    fn exe_descriptor(&self) -> Option<i32> {
        use std::os::fd::AsRawFd;
        self.described.lock().unwrap().exe_fd.as_ref().map(|fd| fd.as_raw_fd())
    }

    /// The path that reaches the program's executable as /proc/self/exe does: through the
    /// descriptor kept for it (`Described::exe_fd`), else its host path.
    fn exe_to_open(&self) -> Vec<u8> {
        match self.exe_descriptor() {
            Some(fd) => format!("/proc/self/fd/{fd}").into_bytes(),
            None => self.exe(),
        }
    }

    /// The contents of the program's `/proc/self/<name>` (one of walk::SYNTHESIZED).
    fn synthesize(&self, name: &[u8], whose: synthetic::Who) -> Vec<u8> {
        let d = self.described.lock().unwrap();
        if let Some(form) = own_maps::Form::of(name) {
            let file = |kind: u32, n: u64| {
                let fd = match kind {
                    hrt_abi::channel::maps_kind::FILE_FD => self.fds.get(n).ok()?,
                    _ => self.fds.kept().get(n).ok()?,
                };
                own_maps::Named::of_fd(fd.raw(), fd.vm_path())
            };
            return own_maps::contents(d.mem, &own_maps::Names { exe: &d.exe, interp: &d.interp, file: &file }, form);
        }
        synthetic::own_proc_file(name, &d.argv, &d.name, d.mem, whose, self.cpus)
    }

    /// The program set its RLIMIT_NOFILE: its descriptors must stay below the soft limit, and
    /// the host programs it starts get both limits.
    pub fn set_descriptor_limit(&self, soft: u64, hard: u64) {
        // Linux's own ceiling (fs.nr_open's default): a table that large is never allocated.
        self.fds.set_limit(soft.min(1 << 20) as usize);
        procs::note_program_limit(libc::RLIMIT_NOFILE, soft, hard);
    }

    /// The host descriptor behind the program's descriptor `fd`.
    pub fn host_fd(&self, fd: u64) -> Option<Arc<HostFd>> {
        self.fds.get(fd).ok()
    }

    /// Performs forwarded system call `nr` for the guest; returns the Linux return value.
    /// Called concurrently from several vCPU threads.
    /// A call a spawn child makes before its exec carries the child's context in the number's
    /// high bits (`hrt_abi::process`): it acts on the child's descriptor table.
    pub fn call(&self, mem: &dyn GuestMemory, nr: u64, args: [u64; 6]) -> i64 {
        before_call();
        let r = self.in_context(nr, |nr| self.dispatch(Guest::new(mem), nr, &args));
        to_ret(r.unwrap_or(Err(Errno::ENOSYS)))
    }

    /// Whether `nr` is one this forwarder handles (the kernel's table decides routing; this is
    /// for consistency checks).
    #[cfg(test)]
    pub fn handles(nr: u64) -> bool {
        HANDLED.iter().any(|&h| h as u64 == nr)
    }

    /// The run is ending: a host call interrupted from now on returns EINTR instead of being
    /// made again (`host::restarting`), so that `shutdown` can interrupt calls still blocked.
    pub fn stop_restarting(&self) {
        self.stopping.store(true, Ordering::Relaxed);
    }

    /// Closes everything (end of run). Calls still blocked on the host return EINTR if their
    /// thread is signalled; later calls find no descriptors (EBADF).
    pub fn shutdown(&self) {
        self.stop_restarting();
        for slot in self.fds.take_all() {
            let _ = slot.close();
        }
    }

    /// One raw host system call with up to six arguments, restarted after EINTR (see the module
    /// documentation).
    ///
    /// # Safety
    /// Every pointer among `args` must be valid for what system call `nr` does with it.
    unsafe fn sys(&self, nr: libc::c_long, args: &[libc::c_long]) -> SysResult<i64> {
        let mut a = [0 as libc::c_long; 6];
        for (d, s) in a.iter_mut().zip(args) {
            *d = *s;
        }
        // SAFETY: the caller vouches for the pointer arguments.
        host::restarting(&self.stopping, || unsafe { libc::syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]) })
    }

    fn dispatch(&self, g: Guest, nr: u64, a: &[u64; 6]) -> SysResult<i64> {
        let Ok(nr) = libc::c_long::try_from(nr) else { return Err(Errno::ENOSYS) };
        match nr {
            libc::SYS_read => self.terminal_read(a[0], || self.read(g, a[0], a[1], a[2])),
            libc::SYS_write => self.write(g, a[0], a[1], a[2]),
            libc::SYS_readv => self.terminal_read(a[0], || self.readv(g, a[0], a[1], a[2])),
            libc::SYS_writev => self.writev(g, a[0], a[1], a[2]),
            libc::SYS_pread64 => self.pread64(g, a[0], a[1], a[2], a[3]),
            libc::SYS_pwrite64 => self.pwrite64(g, a[0], a[1], a[2], a[3]),
            libc::SYS_preadv => self.preadv(g, a[0], a[1], a[2], a[3], a[4]),
            libc::SYS_pwritev => self.pwritev(g, a[0], a[1], a[2], a[3], a[4]),
            nr @ (libc::SYS_preadv2 | libc::SYS_pwritev2) => self.rwv(g, nr, a[0], a[1], a[2], [a[3], a[4]], a[5]),
            libc::SYS_sendfile => self.sendfile(g, a[0], a[1], a[2], a[3]),
            nr @ (libc::SYS_copy_file_range | libc::SYS_splice) => self.copy_between(g, nr, a),
            libc::SYS_tee => self.tee(a[0], a[1], a[2], a[3]),
            libc::SYS_vmsplice => self.vmsplice(g, a[0], a[1], a[2], a[3]),
            nr @ (libc::SYS_process_vm_readv | libc::SYS_process_vm_writev) => self.process_vm(g, nr, a),
            libc::SYS_open => self.openat(g, CWD, a[0], a[1], a[2]),
            libc::SYS_creat => self.openat(g, CWD, a[0], (libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC) as u64, a[1]),
            libc::SYS_openat => self.openat(g, a[0], a[1], a[2], a[3]),
            libc::SYS_openat2 => self.openat2(g, a[0], a[1], a[2], a[3]),
            libc::SYS_close => self.close(a[0]),
            libc::SYS_close_range => self.close_range(a[0], a[1], a[2]),
            libc::SYS_inotify_init => self.inotify_init1(0),
            libc::SYS_inotify_init1 => self.inotify_init1(a[0]),
            libc::SYS_inotify_add_watch => self.inotify_add_watch(g, a[0], a[1], a[2]),
            libc::SYS_inotify_rm_watch => self.inotify_rm_watch(a[0], a[1]),
            libc::SYS_fallocate => self.fallocate(a[0], a[1], a[2], a[3]),
            libc::SYS_sync => self.sync(),
            libc::SYS_syncfs => self.syncfs(a[0]),
            libc::SYS_vhangup => self.vhangup(),
            libc::SYS_memfd_create => self.memfd_create(g, a[0], a[1]),
            // The program's umask is `hrt`'s (process-wide on the host), which the host applies
            // to every file, directory, FIFO and socket the program creates.
            // SAFETY: no pointers.
            libc::SYS_umask => unsafe { self.sys(libc::SYS_umask, &[(a[0] & 0o777) as libc::c_long]) },
            libc::SYS_fstat => self.fstat(g, a[0], a[1]),
            libc::SYS_stat => self.fstatat(g, CWD, a[0], a[1], 0),
            libc::SYS_lstat => self.fstatat(g, CWD, a[0], a[1], libc::AT_SYMLINK_NOFOLLOW as u64),
            libc::SYS_newfstatat => self.fstatat(g, a[0], a[1], a[2], a[3]),
            libc::SYS_statx => self.statx(g, a[0], a[1], a[2], a[3], a[4]),
            libc::SYS_name_to_handle_at => self.name_to_handle_at(g, a[0], a[1], a[2], a[3], a[4]),
            libc::SYS_lseek => self.lseek(a[0], a[1], a[2]),
            libc::SYS_access => self.faccessat(g, CWD, a[0], a[1], None),
            libc::SYS_faccessat => self.faccessat(g, a[0], a[1], a[2], None),
            libc::SYS_faccessat2 => self.faccessat(g, a[0], a[1], a[2], Some(a[3])),
            libc::SYS_getcwd => self.getcwd(g, a[0], a[1]),
            libc::SYS_chdir => self.chdir(g, a[0]),
            libc::SYS_fchdir => self.fchdir(a[0]),
            libc::SYS_mkdir => self.mkdirat(g, CWD, a[0], a[1]),
            libc::SYS_mkdirat => self.mkdirat(g, a[0], a[1], a[2]),
            libc::SYS_rmdir => self.unlinkat(g, CWD, a[0], libc::AT_REMOVEDIR as u64),
            libc::SYS_unlink => self.unlinkat(g, CWD, a[0], 0),
            libc::SYS_unlinkat => self.unlinkat(g, a[0], a[1], a[2]),
            libc::SYS_rename => self.renameat(g, CWD, a[0], CWD, a[1], None),
            libc::SYS_renameat => self.renameat(g, a[0], a[1], a[2], a[3], None),
            libc::SYS_renameat2 => self.renameat(g, a[0], a[1], a[2], a[3], Some(a[4])),
            libc::SYS_link => self.linkat(g, CWD, a[0], CWD, a[1], 0),
            libc::SYS_linkat => self.linkat(g, a[0], a[1], a[2], a[3], a[4]),
            libc::SYS_symlink => self.symlinkat(g, a[0], CWD, a[1]),
            libc::SYS_symlinkat => self.symlinkat(g, a[0], a[1], a[2]),
            libc::SYS_readlink => self.readlinkat(g, CWD, a[0], a[1], a[2]),
            libc::SYS_readlinkat => self.readlinkat(g, a[0], a[1], a[2], a[3]),
            libc::SYS_getdents64 => self.getdents64(g, a[0], a[1], a[2]),
            libc::SYS_getdents => self.getdents(g, a[0], a[1], a[2]),
            libc::SYS_fcntl => self.fcntl(g, a[0], a[1], a[2]),
            libc::SYS_ioctl => self.ioctl(g, a[0], a[1], a[2]),
            libc::SYS_dup => self.dup(a[0]),
            libc::SYS_dup2 => self.dup2(a[0], a[1]),
            libc::SYS_dup3 => self.dup3(a[0], a[1], a[2]),
            libc::SYS_pipe => self.pipe2(g, a[0], 0),
            libc::SYS_pipe2 => self.pipe2(g, a[0], a[1]),
            libc::SYS_truncate => self.truncate(g, a[0], a[1]),
            libc::SYS_ftruncate => self.ftruncate(a[0], a[1]),
            libc::SYS_fsync => self.fd_only(libc::SYS_fsync, a[0]),
            libc::SYS_fdatasync => self.fd_only(libc::SYS_fdatasync, a[0]),
            libc::SYS_flock => self.flock(a[0], a[1]),
            libc::SYS_chmod => self.fchmodat(g, CWD, a[0], a[1]),
            libc::SYS_fchmod => self.fchmod(a[0], a[1]),
            libc::SYS_fchmodat => self.fchmodat(g, a[0], a[1], a[2]),
            libc::SYS_fchmodat2 => self.fchmodat2(g, a[0], a[1], a[2], a[3]),
            libc::SYS_utimensat => self.utimensat(g, a[0], a[1], a[2], a[3]),
            libc::SYS_utime => self.utime(g, a[0], a[1]),
            libc::SYS_utimes => self.futimesat(g, libc::AT_FDCWD as u32 as u64, a[0], a[1]),
            libc::SYS_futimesat => self.futimesat(g, a[0], a[1], a[2]),
            libc::SYS_poll => self.poll(g, a[0], a[1], a[2]),
            libc::SYS_ppoll => self.ppoll(g, a[0], a[1], a[2], a[3], a[4]),
            libc::SYS_select => self.select(g, a[0], a[1], a[2], a[3], a[4]),
            libc::SYS_pselect6 => self.pselect6(g, a),
            libc::SYS_chown => self.fchownat(g, CWD, a[0], a[1], a[2], 0),
            libc::SYS_lchown => self.fchownat(g, CWD, a[0], a[1], a[2], libc::AT_SYMLINK_NOFOLLOW as u64),
            libc::SYS_fchownat => self.fchownat(g, a[0], a[1], a[2], a[3], a[4]),
            libc::SYS_fchown => self.fchown(a[0], a[1], a[2]),
            libc::SYS_statfs => self.statfs(g, a[0], a[1]),
            libc::SYS_fstatfs => self.fstatfs(g, a[0], a[1]),
            libc::SYS_getgroups => self.getgroups(g, a[0], a[1]),
            libc::SYS_capget => self.capget(g, a[0], a[1]),
            libc::SYS_capset => self.capset(g, a[0], a[1]),
            // `hrt`'s parent is the program's: a shell, or a forked parent's `hrt`; 1 (or a
            // subreaper) once that has died, as the host reparents `hrt`.
            // SAFETY: getppid takes no arguments.
            libc::SYS_getppid => unsafe { self.sys(libc::SYS_getppid, &[]) },
            nr @ (libc::SYS_getpriority | libc::SYS_ioprio_get) => self.getpriority(nr, a[0], a[1]),
            nr @ (libc::SYS_setpriority | libc::SYS_ioprio_set) => self.setpriority(nr, a[0], a[1], a[2]),
            libc::SYS_sched_getattr => self.sched_getattr(g, a[0], a[1], a[2], a[3]),
            libc::SYS_sched_rr_get_interval => self.sched_rr_get_interval(g, a[0], a[1]),
            n @ (libc::SYS_sched_setscheduler | libc::SYS_sched_setparam | libc::SYS_sched_setattr) => {
                self.sched_set_other(g, n, a)
            }
            n @ (libc::SYS_clock_gettime | libc::SYS_clock_getres) => self.process_clock(g, n, a[0], a[1]),
            libc::SYS_adjtimex => self.adjtimex(g, None, a[0]),
            n @ (libc::SYS_setuid
            | libc::SYS_setreuid
            | libc::SYS_setresuid
            | libc::SYS_setgid
            | libc::SYS_setregid
            | libc::SYS_setresgid) => self.set_ids(n, a),
            libc::SYS_setgroups => self.setgroups(g, a[0], a[1]),
            n @ (libc::SYS_setfsuid | libc::SYS_setfsgid) => self.set_fs_id(n, a[0]),
            n @ (libc::SYS_getresuid | libc::SYS_getresgid) => self.get_res_ids(g, n, a),
            libc::SYS_clock_adjtime => self.adjtimex(g, Some(a[0]), a[1]),
            libc::SYS_clock_settime => self.clock_settime(g, a[0], a[1]),
            libc::SYS_settimeofday => self.settimeofday(g, a[0], a[1]),
            libc::SYS_getxattr | libc::SYS_lgetxattr => self.getxattr(g, nr, a[0], a[1], a[2], a[3]),
            libc::SYS_fgetxattr => self.fgetxattr(g, a[0], a[1], a[2], a[3]),
            libc::SYS_listxattr | libc::SYS_llistxattr => self.listxattr(g, nr, a[0], a[1], a[2]),
            libc::SYS_flistxattr => self.flistxattr(g, a[0], a[1], a[2]),
            libc::SYS_setxattr | libc::SYS_lsetxattr => self.setxattr(g, nr, a[0], a[1], a[2], a[3], a[4]),
            libc::SYS_fsetxattr => self.fsetxattr(g, a[0], a[1], a[2], a[3], a[4]),
            libc::SYS_removexattr | libc::SYS_lremovexattr => self.removexattr(g, nr, a[0], a[1]),
            libc::SYS_fremovexattr => self.fremovexattr(g, a[0], a[1]),
            libc::SYS_mknod => self.mknodat(g, CWD, a[0], a[1], a[2]),
            libc::SYS_mknodat => self.mknodat(g, a[0], a[1], a[2], a[3]),
            libc::SYS_fadvise64 => self.fadvise64(a[0], a[1], a[2], a[3]),
            libc::SYS_readahead => self.readahead(a[0], a[1], a[2]),
            libc::SYS_sync_file_range => self.sync_file_range(a[0], a[1], a[2], a[3]),
            libc::SYS_epoll_create => self.epoll_create(a[0]),
            libc::SYS_epoll_create1 => self.epoll_create1(a[0]),
            libc::SYS_epoll_ctl => self.epoll_ctl(g, a[0], a[1], a[2], a[3]),
            libc::SYS_epoll_wait => self.epoll_pwait(g, a[0], a[1], a[2], Wait::Ms(a[3]), 0, 0),
            libc::SYS_epoll_pwait => self.epoll_pwait(g, a[0], a[1], a[2], Wait::Ms(a[3]), a[4], a[5]),
            libc::SYS_epoll_pwait2 => self.epoll_pwait(g, a[0], a[1], a[2], Wait::Timespec(a[3]), a[4], a[5]),
            libc::SYS_eventfd => self.eventfd2(a[0], 0),
            libc::SYS_eventfd2 => self.eventfd2(a[0], a[1]),
            libc::SYS_timerfd_create => self.timerfd_create(a[0], a[1]),
            libc::SYS_timerfd_settime => self.timerfd_settime(g, a[0], a[1], a[2], a[3], a[4], a[5]),
            libc::SYS_timerfd_gettime => self.timerfd_gettime(g, a[0], a[1]),
            libc::SYS_pidfd_open => self.pidfd_open(a[0], a[1]),
            libc::SYS_pidfd_getfd => self.pidfd_getfd(a[0], a[1], a[2]),
            libc::SYS_pidfd_send_signal => self.pidfd_send_signal(g, a[0], a[1], a[2], a[3]),
            libc::SYS_prlimit64 => self.prlimit_other(g, a[0], a[1], a[2], a[3]),
            libc::SYS_rt_sigqueueinfo => self.rt_sigqueueinfo(g, a[0], a[1], a[2]),
            libc::SYS_tgkill => self.thread_signal(g, a[0], a[1], a[2], None),
            nr @ (libc::SYS_sethostname | libc::SYS_setdomainname) => self.set_uts_name(g, nr, a[0], a[1]),
            libc::SYS_rt_tgsigqueueinfo => self.thread_signal(g, a[0], a[1], a[2], Some(a[3])),
            libc::SYS_socket => self.socket(a[0], a[1], a[2]),
            libc::SYS_socketpair => self.socketpair(g, a[0], a[1], a[2], a[3]),
            libc::SYS_bind => self.bind(g, a[0], a[1], a[2]),
            libc::SYS_listen => self.listen(a[0], a[1]),
            libc::SYS_accept => self.accept4(g, a[0], a[1], a[2], 0),
            libc::SYS_accept4 => self.accept4(g, a[0], a[1], a[2], a[3]),
            libc::SYS_connect => self.connect(g, a[0], a[1], a[2]),
            libc::SYS_sendto => self.sendto(g, a),
            libc::SYS_recvfrom => self.recvfrom(g, a),
            libc::SYS_sendmsg => self.sendmsg(g, a[0], a[1], a[2]),
            libc::SYS_recvmsg => self.recvmsg(g, a[0], a[1], a[2]),
            libc::SYS_sendmmsg => self.sendmmsg(g, a[0], a[1], a[2], a[3]),
            libc::SYS_recvmmsg => self.recvmmsg(g, a[0], a[1], a[2], a[3], a[4]),
            libc::SYS_shutdown => self.shutdown_socket(a[0], a[1]),
            nr @ (libc::SYS_getsockname | libc::SYS_getpeername) => self.sock_name(g, nr, a[0], a[1], a[2]),
            libc::SYS_getsockopt => self.getsockopt(g, a[0], a[1], a[2], a[3], a[4]),
            libc::SYS_setsockopt => self.setsockopt(g, a[0], a[1], a[2], a[3], a[4]),
            libc::SYS_shmget => self.shmget(a[0], a[1], a[2]),
            libc::SYS_shmctl => self.shmctl(g, a[0], a[1], a[2]),
            libc::SYS_semget => self.semget(a[0], a[1], a[2]),
            libc::SYS_semop => self.semtimedop(g, a[0], a[1], a[2], 0),
            libc::SYS_semtimedop => self.semtimedop(g, a[0], a[1], a[2], a[3]),
            libc::SYS_semctl => self.semctl(g, a[0], a[1], a[2], a[3]),
            libc::SYS_msgget => self.msgget(a[0], a[1]),
            libc::SYS_msgsnd => self.msgsnd(g, a[0], a[1], a[2], a[3]),
            libc::SYS_msgrcv => self.msgrcv(g, a[0], a[1], a[2], a[3], a[4]),
            libc::SYS_msgctl => self.msgctl(g, a[0], a[1], a[2]),
            libc::SYS_mq_open => self.mq_open(g, a[0], a[1], a[2], a[3]),
            libc::SYS_mq_unlink => self.mq_unlink(g, a[0]),
            libc::SYS_mq_timedsend => self.mq_timedsend(g, a),
            libc::SYS_mq_timedreceive => self.mq_timedreceive(g, a),
            libc::SYS_mq_notify => self.mq_notify(g, a[0], a[1]),
            libc::SYS_mq_getsetattr => self.mq_getsetattr(g, a[0], a[1], a[2]),
            nr if (hrt_abi::process::FIRST..=hrt_abi::process::LAST).contains(&(nr as u64)) => {
                self.process_call(g, nr as u64, a)
            }
            _ => Err(Errno::ENOSYS),
        }
    }
}

/// What every forwarded call catches up with first, on the thread that serves it (also one
/// tried without waiting, `try_without_waiting`): the program's capabilities, if it changed
/// them (an open's permission checks use them), and a process title it wrote over its
/// argument strings, for the host's `ps` (`own_title`).
pub(crate) fn before_call() {
    caps::catch_up();
    own_title::follow();
}

/// The forwarder's global locks, taken without waiting for a fork (`vm::fork`): false if
/// another thread holds one (those taken stay in `held`, which the caller gives back).
pub(crate) fn hold_for_fork(held: &mut crate::vm::fork::Held) -> bool {
    caps::hold_for_fork(held)
        && child_state::hold_for_fork(held)
        && seccomp_filters::hold_for_fork(held)
        && own_status::hold_for_fork(held)
        && own_maps::hold_for_fork(held)
        && cpu_dirs::hold_for_fork(held)
        && sockets::hold_for_fork(held)
}
