//! `execve`/`execveat` in the program itself (not in a vfork child, whose exec starts a host
//! program: calls/procs.rs): the program image in this VM is replaced by the new one, as Linux
//! does it.
//!
//! Everything that can fail comes before the point of no return, so the old program goes on
//! with the error: the flags, argv and envp (every pointer checked, E2BIG as Linux), and the
//! file, which the monitor resolves, checks, follows through `#!` lines and reads
//! (`hrt_abi::process::EXEC_OPEN`, monitor/src/forward/exec.rs) into a staging area of the
//! program's memory, where the kernel checks it again (the ELF headers, a fixed link span
//! inside the program's memory). Then: every other thread ends (it is sent SIGKILL and ends on
//! its way back to the program, without ending the program); handled signals become default,
//! ignored ones stay, the mask and pending signals stay, the alternate stack goes, POSIX timers
//! are deleted (setitimer and alarm stay); all the old memory is unmapped (zeroed and given
//! back); the new image is loaded by the loader boot uses (`loader::load_image`): segments,
//! break, interpreter, stack and auxiliary vector; the calling thread gets the pid as its tid
//! and starts at the new entry with a clean register and FPU state. A failure after that point
//! ends the program with SIGSEGV, as on Linux. The monitor then closes the FD_CLOEXEC
//! descriptors and describes the new program in `/proc/self` (`EXEC_COMMIT`).

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use hrt_abi::{exec_blob as blob, process as op};

use super::calls::procs::call;
use super::elf::{Elf, ET_DYN, ET_EXEC, PT_LOAD};
use super::errno::{Errno, SysResult, E2BIG, EFAULT, EINTR, EINVAL, ENAMETOOLONG, ENOEXEC, ENOMEM};
use super::loader::{self, Image};
use super::process::{self, PROCESS};
use super::signal::{self as sig, SIG_DFL, SIG_IGN};
use super::{uaccess, usermem};
use crate::arch::syscall as user;
use crate::arch::traps::TrapFrame;
use crate::sched;

const AT_EMPTY_PATH: u64 = 0x1000;
const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
/// Linux's limit on one argument or environment string, with its NUL.
const MAX_ARG_STRLEN: usize = 32 * 4096;
/// Linux's floor for all of them (ARG_MAX), whatever the stack limit.
const ARG_MIN_LIMIT: u64 = 128 << 10;
/// ... and its ceiling (3/4 of _STK_LIM).
const ARG_MAX_LIMIT: u64 = 6 << 20;
const LARGE_PAGE: u64 = 2 << 20;
const SIGSEGV: i32 = 11;

/// The thread carrying out an exec past its point of no return (0: none). Every other thread
/// ends on its way back to the program (`ends_for_exec`).
static EXECUTING: AtomicU32 = AtomicU32::new(0);

fn current() -> &'static mut sched::Thread {
    // SAFETY: the current thread's record is alive while it runs, and only it touches these
    // fields.
    unsafe { &mut *sched::current() }
}

/// argv and envp, copied out of the old image.
struct Args {
    /// Every string with its NUL, argv's then envp's.
    bytes: Vec<u8>,
    argc: usize,
    envc: usize,
}

impl Args {
    /// `filename`: the length of the name Linux copies onto the new stack first (the path,
    /// or /dev/fd/N[/path] for one relative to a descriptor), which counts towards the limit.
    fn read(argv: u64, envp: u64, filename: u64) -> Result<Args, Errno> {
        let soft = PROCESS.rlimits.lock()[3].0;
        let limit = (soft / 4).clamp(ARG_MIN_LIMIT, ARG_MAX_LIMIT);
        let mut args = Args { bytes: Vec::new(), argc: 0, envc: 0 };
        let mut used = filename + 1;
        args.argc = args.read_array(argv, &mut used, limit)?;
        args.envc = args.read_array(envp, &mut used, limit)?;
        // A rank an MPI process manager inside the VM starts (`--children hrt`) gets the
        // variable `hrt run` gives one it starts (`hrt_abi::mpi_env`): a rank's start failed
        // at MPI_Init.
        let env = args.bytes.split(|&b| b == 0).skip(args.argc).take(args.envc);
        if hrt_abi::mpi_env::wants_proc_link_off(env) {
            args.bytes.extend_from_slice(hrt_abi::mpi_env::PROC_LINK_OFF);
            args.bytes.push(0);
            args.envc += 1;
        }
        Ok(args)
    }

    /// Appends the strings of a NULL-terminated array (NULL itself: none); their count.
    fn read_array(&mut self, mut at: u64, used: &mut u64, limit: u64) -> Result<usize, Errno> {
        let mut n = 0;
        if at == 0 {
            return Ok(0);
        }
        loop {
            let p: u64 = uaccess::read(at)?;
            if p == 0 {
                return Ok(n);
            }
            let s = uaccess::read_cstr(p, MAX_ARG_STRLEN).map_err(|e| if e == ENAMETOOLONG { E2BIG } else { e })?;
            // Each string costs its bytes and its pointer on the new stack.
            *used += s.len() as u64 + 1 + 8;
            if *used > limit {
                return Err(E2BIG);
            }
            self.bytes.extend_from_slice(s);
            self.bytes.push(0);
            n += 1;
            at = at.checked_add(8).ok_or(EFAULT)?;
        }
    }

    fn strings(&self) -> impl Iterator<Item = &[u8]> {
        self.bytes.split(|&b| b == 0).take(self.argc + self.envc)
    }
}

/// The length of the file name an exec of `path` from `dirfd` gives the new program
/// (bprm->filename): the path from the current directory or an absolute one, else
/// `/dev/fd/N/path`, or `/dev/fd/N` for the descriptor itself. (An unreadable path counts
/// nothing: the exec fails on it later.)
fn filename_len(dirfd: u64, path: u64) -> u64 {
    const AT_FDCWD: i32 = -100;
    let given = uaccess::read_cstr(path, 4096).map_or(0, |p| p.len() as u64);
    let fd_digits = {
        let mut n = dirfd as u32 as i32 as i64;
        let mut d = if n < 0 { 2 } else { 1 };
        while n.abs() >= 10 {
            n /= 10;
            d += 1;
        }
        d
    };
    let starts_at_root = uaccess::read::<u8>(path).is_ok_and(|b| b == b'/');
    match (given, dirfd as u32 as i32 == AT_FDCWD || starts_at_root) {
        (_, true) => given,
        (0, false) => "/dev/fd/".len() as u64 + fd_digits,
        (_, false) => "/dev/fd/".len() as u64 + fd_digits + 1 + given,
    }
}

/// The new program as staged in the program's memory: `[addr, addr + len)`.
struct Staged {
    addr: u64,
    len: u64,
}

impl Staged {
    fn bytes(&self) -> &'static [u8] {
        // SAFETY: program memory the kernel allocated for the staging area (it stays until
        // `release`); the program's other threads could write it, and every read below is
        // bounds-checked.
        unsafe { core::slice::from_raw_parts(self.addr as *const u8, self.len as usize) }
    }

    fn word(&self, i: usize) -> u64 {
        let b = self.bytes();
        u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]))
    }

    /// `[off, off + len)` of the staged blob, if inside it.
    fn part(&self, off_word: usize, len_word: usize) -> Option<&'static [u8]> {
        let (off, len) = (self.word(off_word) as usize, self.word(len_word) as usize);
        self.bytes().get(off..off.checked_add(len)?)
    }

    fn release(&self) {
        usermem::unmap(self.addr, usermem::page_up(self.addr + self.len));
    }
}

/// The parts of a staged blob, checked.
struct Checked {
    program: &'static [u8],
    interp: Option<&'static [u8]>,
    /// Arguments replacing argv[0] (a script's interpreter line and name).
    prefix: Vec<&'static [u8]>,
    filename: &'static [u8],
    /// The new program's command name (the monitor's choice: see `exec_blob`).
    comm: &'static [u8],
    /// An ET_EXEC program's page-rounded link span.
    fixed: Option<(u64, u64)>,
    /// The new program's function overrides (`--omp`) and library mode (see `loader::Image`).
    overrides: &'static [u8],
    omp_flags: u64,
}

fn check(s: &Staged) -> Result<Checked, Errno> {
    if s.len < (blob::HEADER_WORDS * 8) as u64 || s.word(blob::W_MAGIC) != blob::MAGIC {
        return Err(EINVAL);
    }
    let program = s.part(blob::W_PROGRAM_OFF, blob::W_PROGRAM_LEN).ok_or(EINVAL)?;
    let interp = s.part(blob::W_INTERP_OFF, blob::W_INTERP_LEN).ok_or(EINVAL)?;
    let strings = s.part(blob::W_STRINGS_OFF, blob::W_STRINGS_LEN).ok_or(EINVAL)?;
    let overrides = s.part(blob::W_OVERRIDES_OFF, blob::W_OVERRIDES_LEN).ok_or(EINVAL)?;
    let omp_flags = s.word(blob::W_OMP_FLAGS);
    let count = s.word(blob::W_PREFIX_COUNT) as usize;
    let mut parts: Vec<&[u8]> = strings.split(|&b| b == 0).collect();
    // n strings with their NULs split into n + 1 pieces, the last one empty.
    if parts.len() != count + 3 {
        return Err(EINVAL);
    }
    parts.pop();
    let comm = parts.pop().unwrap_or(b"");
    let filename = parts.pop().unwrap_or(b"");
    let elf = Elf::parse(program).ok_or(ENOEXEC)?;
    let loads = || elf.program_headers().filter(|p| p.kind == PT_LOAD);
    let fixed = match elf.kind {
        ET_EXEC => {
            let lo = loads().map(|p| p.vaddr).min().ok_or(ENOEXEC)? & !(usermem::PAGE - 1);
            let hi = loads().map(|p| p.vaddr.saturating_add(p.memsz)).max().unwrap_or(0);
            let hi = usermem::page_up(hi);
            // Linux would map it anywhere; here memory is the pool's.
            if !usermem::is_user_range(lo, hi) {
                return Err(ENOMEM);
            }
            Some((lo, hi))
        }
        ET_DYN => None,
        _ => return Err(ENOEXEC),
    };
    let interp = match interp {
        [] => None,
        i => Some(Elf::parse(i).filter(|e| e.kind == ET_DYN).map(|_| i).ok_or(ENOEXEC)?),
    };
    Ok(Checked { program, interp, prefix: parts, filename, comm, fixed, overrides, omp_flags })
}

/// The exec of a forked child whose child processes run as host programs (`--children host`):
/// the host program replaces the child's `hrt` in its host process, as a spawn child's exec
/// starts one (same pid; descriptors, ignored signals and mask carried over by the monitor).
/// None where the exec belongs in this VM (the monitor said so: the `hrt run`'s own program,
/// `--children hrt`); else its error, or nothing at all once the host program runs.
///
/// Why: a forked child's exec in its VM copies the new program in and starts it on a VM that
/// shares nothing with the host's page cache (~8 ms against ~0.5 natively on this host), and
/// a shell's commands gain nothing from running as kernels.
pub fn exec_on_host(nr: u32, [dirfd, path, argv, envp, flags]: [u64; 5]) -> Option<SysResult> {
    if flags & !(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0 {
        return Some(Err(EINVAL));
    }
    let ignored = {
        let table = PROCESS.sigactions.lock();
        (1..65).filter(|&s| table[s][0] == SIG_IGN).fold(0u64, |m, s| m | 1 << (s - 1))
    };
    let mask = current().sigmask;
    let first = dirfd as u32 as u64 | flags << 32;
    match call(op::EXEC_HOST, [first, path, argv, envp, ignored, mask]) {
        Ok(0) => return None,
        Err(e) => return Some(Err(e)),
        Ok(_) => {}
    }
    // What the program sees: exec does not return (the line goes out before the host program
    // starts; a host execve that still fails adds the failing call's own line).
    let shown: &[u64] =
        if nr == linux_raw_sys::general::__NR_execve { &[path, argv, envp] } else { &[dirfd, path, argv, envp, flags] };
    super::syscall::trace_final(nr as u64, shown, 0, 'F');
    crate::console::flush_held();
    // As at the exit of every thread: robust mutexes they hold are marked for their waiters
    // (Linux's exec kills the other threads and releases the caller's).
    super::robust::process_exits();
    // The alarm goes with it, as an exec keeps it (the host program's timer, armed for what
    // is left of this one's).
    let (left, interval) = sig::timers::real_timer();
    // And the signals pending, and the CPU-time interval timers: an exec keeps both. Those the
    // mask lets through came during this execve (the others would have been taken before it):
    // the new program meets them with its own dispositions, as on Linux, where they are taken
    // after the exec (a SIGTERM then ends it).
    let pending = sig::state::pending_for(current().tid);
    let [virt, virt_interval, prof, prof_interval] = sig::timers::cpu_itimers();
    let _ = call(op::EXEC_HOST_CARRY, [pending, virt, virt_interval, prof, prof_interval, 0]);
    // And the thread's seccomp filters (`linux::seccomp`).
    let filters = crate::linux::seccomp::host_chain();
    // And the CPUs the program allows this thread, which an exec keeps.
    let [a0, a1, a2] = super::calls::thread::exec_affinity();
    if process::ending() {
        // A fatal signal taken before the monitor began to hold signals for the exec ends the
        // program: no host program starts in its place (it ran on, the signal lost).
        return Some(Err(EINTR));
    }
    Some(call(op::EXEC_HOST_GO, [left, interval, filters, a0, a1, a2]).map(|_| 0))
}

/// execveat(dirfd, path, argv, envp, flags) of the program itself. Returns only on an error
/// before the point of no return; on success `frame` starts the new program.
pub fn exec_self(frame: &mut TrapFrame, [dirfd, path, argv, envp, flags]: [u64; 5]) -> SysResult {
    if flags & !(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0 {
        return Err(EINVAL);
    }
    let args = Args::read(argv, envp, filename_len(dirfd, path))?;
    let len = call(op::EXEC_OPEN, [dirfd, path, flags, 0, 0, 0])?;
    let staged = stage(len).inspect_err(|_| {
        let _ = call(op::EXEC_ABORT, [0; 6]);
    })?;
    let checked = check(&staged).inspect_err(|_| {
        staged.release();
        let _ = call(op::EXEC_ABORT, [0; 6]);
    })?;
    let me = process::current_tid();
    if EXECUTING.compare_exchange(0, me, Ordering::SeqCst, Ordering::SeqCst).is_err() {
        // Another thread's exec won: this thread ends, as Linux's de_thread kills it.
        staged.release();
        let _ = call(op::EXEC_ABORT, [0; 6]);
        ends_for_exec(me);
    }
    // The point of no return.
    end_other_threads(me);
    // The robust mutexes the thread holds are released as at its exit (Linux's
    // `exec_mm_release`), while the old image is still there.
    super::robust::thread_exits();
    reset_signals();
    super::overrides::omp_after_exec();
    let staged = release_old_image(staged, checked.fixed);
    // The blob moved if it was in the new program's link span.
    let Ok(checked) = check(&staged) else { super::fault::terminate(SIGSEGV, None) };
    // argv: a script's interpreter line replaces argv[0] (Linux gives an empty argv an empty
    // argv[0] first).
    let mut strings: Vec<&[u8]> = args.strings().collect();
    let mut argc = args.argc;
    if argc == 0 {
        strings.insert(0, b"");
        argc = 1;
    }
    if !checked.prefix.is_empty() {
        strings.splice(0..1, checked.prefix.iter().copied());
        argc += checked.prefix.len() - 1;
    }
    let img = Image {
        program: checked.program,
        interp: checked.interp,
        strings: &strings,
        argc,
        execfn: checked.filename,
        overrides: checked.overrides,
        library_mode: checked.omp_flags,
    };
    let start = loader::load_image(&img, None);
    let name = loader::comm_name(checked.comm);
    let described = describe(&strings[..argc]);
    staged.release();
    let Ok(start) = start else { super::fault::terminate(SIGSEGV, None) };
    let _ = call(op::EXEC_COMMIT, [described.0, described.1, argc as u64, 0, 0, 0]);
    super::signalfd::after_exec();
    super::calls::ids::after_exec();
    super::calls::membarrier::after_exec();
    super::locked::after_exec();
    super::calls::aio::after_exec();
    // The thread that execs is the leader now (the others are gone).
    // SAFETY: the current thread's record is alive.
    super::channel::publish_leader(Some(unsafe { &*crate::sched::current() }));
    usermem::unmap(described.0, usermem::page_up(described.0 + described.1.max(1)));
    *PROCESS.name.lock() = name;
    let t = current();
    // The thread that exec'd is the new image's main thread: the process's name is its name.
    t.comm = None;
    let (old, pid) = (t.tid, process::pid());
    t.tid = pid;
    sig::state::exec_rekey(old, pid);
    t.fs_base = 0;
    user::set_fs_base(0);
    t.clear_child_tid = 0;
    // The new image registers its own (glibc at start-up), as after Linux's execve.
    t.rseq = crate::sched::thread::Rseq::default();
    crate::arch::x86_64::fpu::restore_initial();
    EXECUTING.store(0, Ordering::SeqCst);
    if start.entry >= super::uaccess::USER_END {
        // An ELF entry point outside the user half (a hostile header): IRETQ there would fault
        // in the kernel; Linux's exec succeeds and the program dies of SIGSEGV at once.
        super::fault::terminate(11, None);
    }
    *frame = user::initial_user_frame(start.entry, start.sp);
    Ok(0)
}

/// Copies the monitor's blob of `len` bytes into a fresh staging area.
fn stage(len: u64) -> Result<Staged, Errno> {
    let addr = usermem::alloc(len, LARGE_PAGE)?;
    let staged = Staged { addr, len };
    call(op::EXEC_READ, [addr, len, 0, 0, 0, 0]).inspect_err(|_| staged.release())?;
    Ok(staged)
}

/// The new argv, NUL-separated, in program memory for the monitor (`/proc/self/cmdline`):
/// (address, length); (0, 0) if there is no memory for it.
fn describe(argv: &[&[u8]]) -> (u64, u64) {
    let len: usize = argv.iter().map(|a| a.len() + 1).sum();
    let Ok(addr) = usermem::alloc(len.max(1) as u64, usermem::PAGE) else { return (0, 0) };
    let mut at = addr;
    for a in argv {
        usermem::copy(at, a.as_ptr() as u64, a.len() as u64);
        at += a.len() as u64 + 1;
    }
    (addr, len as u64)
}

/// Ends every other thread of the program and waits until they are gone: each is sent SIGKILL,
/// which wakes it from any wait, and ends on its way back to the program (`ends_for_exec`).
fn end_other_threads(me: u32) {
    while PROCESS.live_threads.load(Ordering::SeqCst) > 1 {
        let others: Vec<u32> = sig::state::SIGNALS
            .lock()
            .threads
            .iter()
            .filter(|(&tid, t)| tid != me && !t.thread.is_null())
            .map(|(&tid, _)| tid)
            .collect();
        // A vfork child is no thread of the program: its parent waits for it.
        let others = others.into_iter().filter(|&tid| !super::calls::procs::is_child(tid));
        for tid in others {
            let _ = sig::state::send_thread(tid, sig::SigInfo::from_user(sig::SIGKILL, sig::SI_KERNEL));
        }
        sig::state::kick_all();
        sched::yield_now();
    }
}

/// Whether a thread is carrying out an exec past its point of no return (every other thread
/// is about to end).
pub fn underway() -> bool {
    EXECUTING.load(Ordering::SeqCst) != 0
}

/// Called on the way back to the program: a thread other than the one carrying out an exec
/// ends here (its pending signals die with it).
pub fn ends_for_exec(tid: u32) {
    let execing = EXECUTING.load(Ordering::SeqCst);
    if execing == 0 || execing == tid || super::calls::procs::child_ctx().is_some() {
        return;
    }
    // What the return path would have settled (a suspended caller's mask, an interrupted
    // call) goes with the thread, and the counts that make the return path look.
    if sig::state::SIGNALS.lock().thread(tid).saved_mask.take().is_some() {
        sig::deliver::SUSPENDED.fetch_sub(1, Ordering::SeqCst);
    }
    let _ = sig::state::take_restart(tid);
    super::robust::thread_exits();
    super::calls::signal::thread_exited(tid);
    PROCESS.live_threads.fetch_sub(1, Ordering::SeqCst);
    sched::exit(0)
}

/// Handled signals become default (ignored ones stay ignored; flags and masks go), as on
/// Linux; POSIX timers are deleted.
fn reset_signals() {
    let mut table = PROCESS.sigactions.lock();
    for (signo, act) in table.iter_mut().enumerate().skip(1) {
        let old = *act;
        *act = [if old[0] == SIG_IGN { SIG_IGN } else { SIG_DFL }, 0, 0, 0];
        // `hrt` shares some dispositions with the program (see rt_sigaction).
        sig::host_mirror::after_exec_reset(signo, &old, act);
    }
    sig::state::note_handlers(&table);
    drop(table);
    sig::timers::delete_posix_timers();
}

/// How much of the old image an exec clears in place rather than gives back (bytes the host
/// has; `usermem::release_all_but`). A dynamically linked program's image (program, ld.so,
/// libc, heap) is a few 2 MiB pages; clearing one costs ~0.2 ms, and the new image's first
/// touch of a page given back cost 0.3-3 ms here (an exec of a dynamic program: 11.0-11.4 ms
/// giving everything back, 6.3-6.6 ms clearing in place).
const CLEAR_IN_PLACE: u64 = 16 << 20;

/// Whether the program's memory may still be shared with a parent (a forked child that has
/// not exec'd yet): the host's fork left the pages copy-on-write.
static SHARES_PARENT_MEMORY: AtomicBool = AtomicBool::new(false);

/// A forked child, before any of its threads runs: its pages are its parent's until written.
pub fn after_fork() {
    SHARES_PARENT_MEMORY.store(true, Ordering::Relaxed);
}

/// Unmaps all of the old image but the staging area, and moves that out of the new program's
/// link span `fixed` if it lies in it. Returns where it is now.
fn release_old_image(staged: Staged, fixed: Option<(u64, u64)>) -> Staged {
    let end = usermem::page_up(staged.addr + staged.len);
    let shared = SHARES_PARENT_MEMORY.swap(false, Ordering::Relaxed);
    usermem::release_all_but(staged.addr, end, if shared { 0 } else { CLEAR_IN_PLACE });
    // The new image's address space has its own peak, as Linux's new mm does.
    super::status::forget_peak();
    super::filemap::forget();
    super::symbols::clear();
    super::spin_sites::reset();
    super::own_exe::forget();
    let Some((_, hi)) = fixed.filter(|&(lo, hi)| staged.addr < hi && lo < end) else { return staged };
    let to = hi.max(end).next_multiple_of(LARGE_PAGE);
    if usermem::alloc_fixed(to, staged.len).is_err() {
        super::fault::terminate(SIGSEGV, None);
    }
    usermem::copy(to, staged.addr, staged.len);
    staged.release();
    Staged { addr: to, len: staged.len }
}
