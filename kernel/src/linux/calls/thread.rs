//! clone and thread exit, identity, affinity, TLS.

use core::sync::atomic::Ordering;

use crate::arch::syscall as user;
use crate::arch::traps::TrapFrame;
use crate::linux::errno::{SysResult, E2BIG, EINVAL, ENOSYS, EPERM, ESRCH};
use crate::linux::process::{self, PROCESS};
use crate::linux::{futex, signal, uaccess};
use crate::sched::{self, Thread, ThreadOptions};

const CLONE_VM: u64 = 0x100;
const CLONE_SIGHAND: u64 = 0x800;
const CLONE_THREAD: u64 = 0x1_0000;
const CLONE_SETTLS: u64 = 0x8_0000;
const CLONE_PARENT_SETTID: u64 = 0x10_0000;
const CLONE_CHILD_CLEARTID: u64 = 0x20_0000;
const CLONE_CHILD_SETTID: u64 = 0x100_0000;

/// Kernel memory that thread creation leaves free (page tables, heap, forwarding buffers).
const KERNEL_MEMORY_KEPT: usize = 8 << 20;

fn current() -> &'static mut Thread {
    // SAFETY: the current thread's record is alive while it runs, and only it touches these
    // fields.
    unsafe { &mut *sched::current() }
}

const CLONE_PIDFD: u64 = 0x1000;
/// CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID,
/// CLONE_NEWNET.
const CLONE_NEW_ANY: u64 = 0x2_0000 | 0x0200_0000 | 0x0400_0000 | 0x0800_0000 | 0x1000_0000 | 0x2000_0000 | 0x4000_0000;

/// Linux's checks of a clone's flags, which come before anything else (copy_process): a
/// thread shares the signal handlers, which only a task sharing the memory may; a new mount or
/// user namespace cannot share the file-system root; a thread cannot have a user or pid
/// namespace of its own; a new IPC namespace cannot share System V semaphore undos.
fn invalid_combination(flags: u64) -> bool {
    const CLONE_FS: u64 = 0x200;
    const CLONE_NEWNS: u64 = 0x2_0000;
    const CLONE_SYSVSEM: u64 = 0x4_0000;
    const CLONE_NEWIPC: u64 = 0x0800_0000;
    const CLONE_NEWUSER: u64 = 0x1000_0000;
    const CLONE_NEWPID: u64 = 0x2000_0000;
    let both = |x: u64, y: u64| flags & (x | y) == x | y;
    flags & CLONE_THREAD != 0 && flags & CLONE_SIGHAND == 0
        || flags & CLONE_SIGHAND != 0 && flags & CLONE_VM == 0
        || both(CLONE_NEWNS, CLONE_FS)
        || both(CLONE_NEWUSER, CLONE_FS)
        || flags & CLONE_THREAD != 0 && flags & (CLONE_NEWUSER | CLONE_NEWPID) != 0
        || both(CLONE_NEWIPC, CLONE_SYSVSEM)
        // CLONE_DETACHED is kept from CLONE_PIDFD's company (Linux's copy_process).
        || both(CLONE_PIDFD, 0x40_0000)
}

/// CLONE_NEWTIME (unshare's and clone3's).
const CLONE_NEWTIME: u64 = 0x80;

/// Whether `flags` ask for a new namespace that needs CAP_SYS_ADMIN the caller lacks: every
/// kind but a user namespace, unless a new user namespace comes with them (in which the
/// caller has it). Linux's EPERM, which comes before HRT's ENOSYS for namespaces.
pub(super) fn namespaces_forbidden(flags: u64) -> bool {
    const CLONE_NEWUSER: u64 = 0x1000_0000;
    flags & (CLONE_NEW_ANY | CLONE_NEWTIME) & !CLONE_NEWUSER != 0
        && flags & CLONE_NEWUSER == 0
        && !crate::linux::seccomp::host_has_sys_admin()
}

/// clone(flags, newsp, parent_tid, child_tid, tls): threads (CLONE_VM | CLONE_THREAD), forks
/// and vfork-style children. Its flags are an int's worth, as Linux reads them: clone3's
/// flags beyond (CLONE_CLEAR_SIGHAND) come only through `clone_with`.
pub fn clone(frame: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    clone_with(frame, [a[0] as u32 as u64, a[1], a[2], a[3], a[4], a[5]])
}

fn clone_with(frame: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (flags, newsp, ptid, ctid, tls) = (a[0], a[1], a[2], a[3], a[4]);
    if invalid_combination(flags) {
        return Err(EINVAL);
    }
    if flags & CLONE_THREAD == 0 {
        return super::procs::clone_process(frame, flags, newsp, [ptid, ctid, tls]);
    }
    let needed = CLONE_VM | CLONE_THREAD | CLONE_SIGHAND;
    if flags & needed != needed {
        kprintln!("hrt: clone with flags {flags:#x} would create a process; HRT runs one process: returning ENOSYS");
        return Err(ENOSYS);
    }
    if flags & (CLONE_NEW_ANY | CLONE_PIDFD) != 0 {
        kprintln!("hrt: clone of a thread with new namespaces or a pidfd (flags {flags:#x}) is not implemented: returning ENOSYS");
        return Err(ENOSYS);
    }
    let mut child = *frame;
    child.rax = 0;
    if newsp != 0 {
        child.rsp = newsp;
    }
    // A stack that is not writable program memory: on Linux the child faults on its first
    // push and SIGSEGV ends the process. Here the child reports that fault instead of
    // running (in ring 0 its pushes could otherwise land in kernel memory).
    let bad_stack = newsp != 0 && !writable_stack(newsp);
    let parent = current();
    let fs_base = if flags & CLONE_SETTLS != 0 { user_fs_base(tls)? } else { parent.fs_base };
    let sigmask = parent.sigmask;
    // And its name as it is now (a later rename of either is its own).
    let comm = crate::linux::thread_names::inherited();
    // Linux threads inherit their creator's CPU mask: place the child inside it.
    let affinity = parent.affinity();
    let mut options = ThreadOptions::named("clone").user();
    let in_mask = |c: usize| affinity == [0; 4] || affinity[c / 64] & (1 << (c % 64)) != 0;
    crate::linux::spin_throttle::before_first_thread(sched::placement_cpus());
    if crate::linux::spin_throttle::packs_threads() || sched::placement_cpus() < crate::cpu::count() {
        // More vCPUs than host CPUs (`--overcommit pack`): the program's threads take turns on
        // as many vCPUs as the host has CPUs, as the host's scheduler would run them on its
        // CPUs natively; a wait hands the vCPU to another thread (a switch in the guest, and
        // the kernel's looks at spinning threads, `sched::spin_look`), where spread over every
        // vCPU each wait halted a vCPU and each wake-up kicked one through emulated ring 0.
        // INNCABS `fib 15` async at `--cpus 4` on 2 host CPUs: 1.8-2.0 -> 0.9-1.0 s; four
        // threads in a spinning barrier: 0.35 -> 0.19 s (natively 0.91). A libgomp whose spins
        // hrt rewrote (`spin_throttle`) or LLVM's libomp are packed so too.
        let packed = sched::placement_cpus();
        options.cpu = sched::thread::least_loaded(|c| c < packed && in_mask(c));
    }
    let packed_only = options.cpu.is_some() && affinity == [0; 4];
    if affinity != [0; 4] && options.cpu.is_none() {
        options.cpu = sched::thread::least_loaded(in_mask);
    }
    // Each thread takes a kernel stack and record from the kernel's share of memory; refuse
    // (EAGAIN, as Linux does at its limits) while some is left for everything else, rather
    // than fail an allocation deep inside the kernel.
    if crate::mem::total_free_bytes() < KERNEL_MEMORY_KEPT {
        return Err(threads_full());
    }
    let mut tid = 0u32;
    PROCESS.live_threads.fetch_add(1, Ordering::SeqCst);
    let spawned = sched::spawn_with(
        options,
        |t| {
            tid = start_program_thread(t, fs_base, sigmask, affinity);
            t.packed = packed_only;
            t.comm = Some(comm);
            if flags & CLONE_CHILD_CLEARTID != 0 {
                t.clear_child_tid = ctid;
            }
            // Written before the child can run, as Linux does.
            if flags & CLONE_PARENT_SETTID != 0 {
                let _ = uaccess::write::<u32>(ptid, t.tid);
            }
            if flags & CLONE_CHILD_SETTID != 0 {
                let _ = uaccess::write::<u32>(ctid, t.tid);
            }
        },
        move || {
            // Its creator may have given it a CPU mask before it first ran (glibc's
            // pthread_create with an affinity attribute), or an idle CPU asked for it.
            sched::move_if_asked();
            sched::balance::move_if_taken();
            if bad_stack {
                let push = newsp.wrapping_sub(8);
                // A non-canonical stack faults with #SS, which Linux reports as SIGBUS.
                let canonical = matches!((push as i64) >> 47, 0 | -1);
                if canonical {
                    crate::linux::fault::terminate(11, Some((push, child.rip)));
                }
                crate::linux::fault::terminate(7, Some((0, child.rip)));
            }
            let top = sched::thread::stack_top(current());
            // SAFETY: our own kernel stack; the frame is the parent's, with the child's stack.
            unsafe { user::return_to_user(&child, top) }
        },
    );
    match spawned {
        Ok(h) => {
            h.detach();
            Ok(tid as u64)
        }
        Err(_) => {
            PROCESS.live_threads.fetch_sub(1, Ordering::SeqCst);
            Err(threads_full())
        }
    }
}

/// EAGAIN for a thread the kernel's share of memory has no room for (its stack and record),
/// said once on `hrt`'s stderr: Linux's limit is elsewhere (a program that starts 5,000
/// threads with 16 KiB stacks under `--mem 1G` stopped at ~2,200 with no word why).
fn threads_full() -> u32 {
    static SAID: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        kprintln!(
            "hrt: clone: the kernel's share of memory has no room for another thread's stack and record ({} threads alive): returning EAGAIN (reported once; a larger --mem may help)",
            PROCESS.live_threads.load(Ordering::Relaxed)
        );
    }
    linux_raw_sys::errno::EAGAIN
}

/// Whether the word below `sp` (where a new thread's first push goes) is mapped, writable
/// program memory.
fn writable_stack(sp: u64) -> bool {
    let Some(lo) = sp.checked_sub(8) else { return false };
    crate::linux::usermem::is_mapped(lo, sp) && uaccess::check_write(lo, 8).is_ok()
}

/// clone3(args, size): `struct clone_args` checked as Linux checks it, then made as the
/// `clone` it describes (flags with the exit signal, the stack's top, the tid and TLS
/// pointers; CLONE_PIDFD's descriptor goes to `args.pidfd`; CLONE_CLEAR_SIGHAND clears the new
/// process's signal actions; with CLONE_PARENT_SETTID too, the parent gets the pid at
/// `args.parent_tid`). Not provided, ENOSYS with a line (glibc and musl then use `clone`):
/// `set_tid`, CLONE_INTO_CGROUP, and CLONE_PIDFD with CLONE_PARENT_SETTID for a child that
/// shares the memory (CLONE_VM: the pid must be there before the child runs).
pub fn clone3(frame: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    const CLONE_DETACHED: u64 = 0x40_0000;
    const CLONE_PARENT: u64 = 0x8000;
    const CLONE_NEWTIME: u64 = 0x80;
    const CLONE_CLEAR_SIGHAND: u64 = 0x1_0000_0000;
    const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
    const CSIGNAL: u64 = 0xff;
    /// CLONE_ARGS_SIZE_VER0 (up to `tls`), VER2 (up to `cgroup`, the size this kernel knows).
    const VER0: u64 = 64;
    const KNOWN: u64 = 88;
    /// The end of user space (Linux's TASK_SIZE_MAX): a stack must lie below it.
    const USER_TOP: u64 = (1 << 47) - 4096;
    let (uargs, size) = (a[0], a[1]);
    if size > 4096 {
        return Err(E2BIG);
    }
    if size < VER0 {
        return Err(EINVAL);
    }
    // The struct as Linux copies it: the fields this kernel knows (a partial last field
    // counts, zero-filled), and a newer caller's fields must be zero.
    let known = size.min(KNOWN);
    let mut bytes = [0u8; KNOWN as usize];
    bytes[..known as usize].copy_from_slice(uaccess::slice(uargs, known)?);
    if size > KNOWN && uaccess::slice(uargs + KNOWN, size - KNOWN)?.iter().any(|&b| b != 0) {
        return Err(E2BIG);
    }
    let w: [u64; (KNOWN / 8) as usize] =
        core::array::from_fn(|i| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("8 bytes")));
    let [flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup] = w;
    // copy_clone_args_from_user's checks, then clone3_args_valid's, in Linux's order.
    if set_tid_size > 32
        || set_tid == 0 && set_tid_size != 0
        || set_tid != 0 && set_tid_size == 0
        || exit_signal & !CSIGNAL != 0
        || exit_signal > 64
        || flags & CLONE_INTO_CGROUP != 0 && (cgroup > i32::MAX as u64 || size < KNOWN)
    {
        return Err(EINVAL);
    }
    if set_tid_size != 0 {
        uaccess::slice(set_tid, set_tid_size * 4)?;
    }
    let stack_valid = if stack == 0 {
        stack_size == 0
    } else {
        stack_size != 0 && stack.checked_add(stack_size).is_some_and(|end| end <= USER_TOP)
    };
    if flags & !(0xffff_ffff | CLONE_CLEAR_SIGHAND | CLONE_INTO_CGROUP) != 0
        || flags & (CLONE_DETACHED | (CSIGNAL & !CLONE_NEWTIME)) != 0
        || flags & (CLONE_SIGHAND | CLONE_CLEAR_SIGHAND) == CLONE_SIGHAND | CLONE_CLEAR_SIGHAND
        || flags & (CLONE_THREAD | CLONE_PARENT) != 0 && exit_signal != 0
        || !stack_valid
        || invalid_combination(flags)
    {
        return Err(EINVAL);
    }
    // CLONE_PIDFD's descriptor is written before the child runs: an unwritable one is EFAULT,
    // no child made.
    if flags & CLONE_PIDFD != 0 {
        uaccess::check_write(pidfd, 4)?;
    }
    let unprovided = if set_tid_size != 0 {
        Some("set_tid")
    } else if flags & CLONE_INTO_CGROUP != 0 {
        Some("CLONE_INTO_CGROUP")
    } else if flags & CLONE_NEWTIME != 0 {
        Some("CLONE_NEWTIME")
    } else if flags & CLONE_PIDFD != 0 && flags & CLONE_PARENT_SETTID != 0 && flags & CLONE_VM != 0 {
        Some("CLONE_PIDFD with CLONE_PARENT_SETTID and CLONE_VM")
    } else {
        None
    };
    if let Some(what) = unprovided {
        kprintln!("hrt: clone3 with {what} is not implemented: returning ENOSYS (the C library then uses clone)");
        return Err(ENOSYS);
    }
    let newsp = if stack != 0 { stack + stack_size } else { 0 };
    if flags & CLONE_PIDFD != 0 && flags & CLONE_PARENT_SETTID != 0 {
        // Two addresses here, one in `clone`: the pidfd goes through `clone`'s, and the parent
        // (its own memory: no CLONE_VM, so the child has its copy) gets the child's pid once
        // it exists, as Linux stores it after copying the process (a failed store is ignored).
        let flags = flags & !CLONE_PARENT_SETTID;
        let pid = clone_with(frame, [flags | exit_signal, newsp, pidfd, child_tid, tls, 0])?;
        let _ = uaccess::write::<u32>(parent_tid, pid as u32);
        return Ok(pid);
    }
    let ptid = if flags & CLONE_PIDFD != 0 { pidfd } else { parent_tid };
    clone_with(frame, [flags | exit_signal, newsp, ptid, child_tid, tls, 0])
}

/// Ends the calling thread: marks the robust mutexes it holds (`robust`), clears and wakes
/// CLONE_CHILD_CLEARTID (what pthread_join waits on), in that order as on Linux; the last
/// thread's exit ends the program.
pub fn exit(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    super::procs::exit_if_child(a[0]);
    if PROCESS.live_threads.load(Ordering::SeqCst) > 1 {
        crate::linux::overrides::omp_thread_exits();
    }
    crate::linux::robust::thread_exits();
    let t = current();
    super::signal::thread_exited(t.tid);
    crate::linux::seccomp::thread_exits();
    if t.clear_child_tid != 0 && uaccess::write::<u32>(t.clear_child_tid, 0).is_ok() {
        futex::wake_address(t.clear_child_tid, 1);
    }
    if PROCESS.live_threads.fetch_sub(1, Ordering::SeqCst) == 1 {
        process::exit_program((a[0] & 0xff) as i32);
    }
    sched::exit(0)
}

pub fn exit_group(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    super::procs::exit_if_child(a[0]);
    process::exit_program((a[0] & 0xff) as i32)
}

pub fn set_tid_address(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let t = current();
    t.clear_child_tid = a[0];
    Ok(t.tid as u64)
}

pub fn set_robust_list(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    if a[1] != crate::linux::robust::HEAD_SIZE {
        return Err(EINVAL);
    }
    crate::linux::robust::register(a[0]);
    Ok(0)
}

pub fn get_robust_list(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    // Another thread's list too; another process's only with ptrace rights (EPERM), or ESRCH.
    let tid = a[0] as u32;
    let list = if tid == 0 {
        current().robust_list
    } else {
        match signal::state::with_thread(tid, |t| t.robust_list) {
            Some(list) => list,
            None if super::procs::host_process_exists(tid) => return Err(EPERM),
            None => return Err(ESRCH),
        }
    };
    uaccess::write::<u64>(a[1], list)?;
    uaccess::write::<u64>(a[2], crate::linux::robust::HEAD_SIZE)?;
    Ok(0)
}

/// unshare(flags): what a process of one thread already has alone (its descriptor table, its
/// file-system root and working directory, its signal handlers, its memory) succeeds, as
/// Linux's does, and so does detaching from System V semaphore undo lists (the host keeps
/// them) and flags 0. A descriptor table or working directory of one thread among several,
/// or a new namespace, is not provided: ENOSYS with a line.
pub fn unshare(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    const CLONE_FS: u64 = 0x200;
    const CLONE_FILES: u64 = 0x400;
    const CLONE_SYSVSEM: u64 = 0x4_0000;
    let flags = a[0];
    let known = CLONE_FS | CLONE_FILES | CLONE_SYSVSEM | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM;
    // Linux's check_unshare_flags: a flag unshare does not know is EINVAL, first.
    if flags & !(known | CLONE_NEW_ANY | CLONE_NEWTIME) != 0 {
        return Err(EINVAL);
    }
    let alone = signal::state::live_tids(process::pid(), |_, _| {}) <= 1;
    if flags & (CLONE_THREAD | CLONE_SIGHAND | CLONE_VM) != 0 && !alone {
        return Err(EINVAL);
    }
    if namespaces_forbidden(flags) {
        return Err(EPERM);
    }
    if flags & !known == 0 && (alone || flags & (CLONE_FS | CLONE_FILES) == 0) {
        return Ok(0);
    }
    kprintln!(
        "hrt: unshare with flags {flags:#x} is not implemented (one process, one descriptor table): returning ENOSYS"
    );
    Err(ENOSYS)
}

pub fn gettid(_: &mut TrapFrame, _: [u64; 6]) -> SysResult {
    Ok(process::current_tid() as u64)
}

pub fn getpid(_: &mut TrapFrame, _: [u64; 6]) -> SysResult {
    Ok(process::pid() as u64)
}

/// The host's answer for `hrt`, whose parent is the program's: it changes when that parent
/// dies (the host reparents `hrt`), which a cached value would not show. A spawn child's
/// parent is the program.
pub fn getppid(_: &mut TrapFrame, _: [u64; 6]) -> SysResult {
    if super::procs::child_ctx().is_some() {
        return Ok(process::pid() as u64);
    }
    let r = crate::linux::syscall::forward(linux_raw_sys::general::__NR_getppid as u64, [0; 6]);
    if r > 0 {
        Ok(r as u64)
    } else {
        Ok(process::parent_pid() as u64)
    }
}

pub fn sched_yield(_: &mut TrapFrame, _: [u64; 6]) -> SysResult {
    sched::yield_for_program();
    Ok(0)
}

/// Bytes of the CPU mask this VM reports: whole 64-bit words, as Linux does.
fn mask_bytes() -> u64 {
    (crate::cpu::count() as u64).div_ceil(64) * 8
}

/// The CPUs a thread that set no mask of its own may run on: every vCPU, or, while LLVM's
/// libomp has its threads packed (`flags::PACK_THREADS`), the packed ones, as a cpuset would
/// restrict them. libomp takes its CPU count from this mask, and with more threads than that
/// count it yields at every spin of its waits, as it does natively on this host; counting
/// every vCPU, it yielded only every few hundred spins, and each hand-over to a thread packed
/// on the same vCPU waited that long (LLVM's `omp_single` test, 4 threads at `--cpus 4` on 2
/// host CPUs: 0.75 s against 0.11 s natively; 0.16 s with the packed mask).
fn default_cpus() -> usize {
    let all = crate::cpu::count();
    if crate::bootinfo::get().flags & hrt_abi::flags::PACK_THREADS != 0 {
        sched::placement_cpus().min(all)
    } else {
        all
    }
}

/// A thread's CPU mask: the one it (or another thread for it) set, else the CPUs it may run on
/// (`default_cpus`). Another process gets the default mask; a pid no process has, ESRCH.
pub fn sched_getaffinity(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (pid, len, mask) = (a[0], a[1], a[2]);
    let bytes = mask_bytes();
    if len < bytes {
        return Err(EINVAL);
    }
    if (pid as i32) < 0 {
        // No process has a negative id.
        return Err(ESRCH);
    }
    let tid = if pid == 0 { current().tid } else { pid as u32 };
    let set = match signal::state::with_thread(tid, |t| t.affinity()) {
        Some(set) => set,
        // Another process (a child: its own kernel, out of reach) gets the default mask.
        None if super::procs::host_process_exists(tid) => [0; 4],
        None => return Err(ESRCH),
    };
    let out = uaccess::slice_mut(mask, bytes)?;
    out.fill(0);
    let default = default_cpus();
    for cpu in 0..crate::cpu::count() {
        let allowed = if set != [0; 4] { set[cpu / 64] & (1 << (cpu % 64)) != 0 } else { cpu < default };
        if allowed {
            out[cpu / 8] |= 1 << (cpu % 8);
        }
    }
    Ok(bytes)
}

/// Whether sched_setaffinity of a pid that is none of the program's threads was reported.
static REPORTED_OTHER_PID: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// How long sched_setaffinity waits at most for another running thread to move.
const MOVE_WAIT_NS: u64 = 1_000_000_000;
/// How often it interrupts that thread again meanwhile.
const MOVE_KICK_NS: u64 = 1_000_000;
/// How long it spins before it sleeps between looks, and each sleep.
const MOVE_SPIN_NS: u64 = 200_000;
const MOVE_SLEEP_NS: u64 = 100_000;

/// Sets a thread's CPU mask: the caller's (pid 0 or its own tid: pthread_setaffinity_np,
/// libgomp's binding of its first thread) or another thread's of the program (glibc's
/// pthread_create with an affinity attribute sets the new thread's from its creator, as
/// libgomp's bound teams do). A thread on a CPU its new mask excludes moves to an allowed one:
/// the caller at once, another thread at its next safe point (`sched::ask_to_move`); while
/// the program's threads are packed onto fewer vCPUs than the VM has, another thread whose
/// mask names none of those stays on one of them. A pid that is none of the program's threads
/// (another process) is accepted and ignored, with a line the first time, once the host says
/// the program may (else EPERM, as Linux: `process::AFFINITY_ALLOWED`); one no process has is
/// ESRCH.
/// Whether the program has set a thread's CPUs (`sched_setaffinity` of one of its own): from
/// then on the host programs it starts keep the exec'ing thread's CPUs (`exec_affinity`).
static AFFINITY_SET: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// The CPUs the calling thread may run on, as three words of guest CPU bits for a host program
/// it starts (an exec keeps the affinity); zero while the program has set no thread's, so that
/// its host programs get `hrt`'s own host CPUs, not only the vCPUs' (a `--cpus 1` run's
/// `make -j`).
pub fn exec_affinity() -> [u64; 3] {
    if !AFFINITY_SET.load(Ordering::Relaxed) {
        return [0; 3];
    }
    let [a0, a1, a2, _] = current().affinity();
    [a0, a1, a2]
}

pub fn sched_setaffinity(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (pid, len, mask) = (a[0], a[1], a[2]);
    let given = uaccess::slice(mask, len.min(32))?;
    let mut set = [0u64; 4];
    for (i, &b) in given.iter().enumerate() {
        set[i / 8] |= (b as u64) << ((i % 8) * 8);
    }
    let n = crate::cpu::count();
    let allowed = |cpu: usize| set[cpu / 64] & (1 << (cpu % 64)) != 0;
    if (pid as i32) < 0 {
        return Err(ESRCH);
    }
    let Some(first) = (0..n).find(|&c| allowed(c)) else {
        return Err(EINVAL);
    };
    let packed = sched::placement_cpus();
    let packs = crate::linux::spin_throttle::packs_threads();
    if pid != 0 && pid != current().tid as u64 {
        let tid = pid as u32;
        let running_elsewhere = signal::state::with_thread(tid, |t| {
            AFFINITY_SET.store(true, Ordering::Relaxed);
            t.set_affinity(set);
            let target = if packs {
                // The program's threads are packed onto as many vCPUs as the host has CPUs
                // (`spin_throttle`): a thread bound elsewhere stays on a packed vCPU, one of
                // its mask if there is one. Spread over every vCPU, a bound team's spinning
                // vCPUs outnumber the host CPUs that run them: cg.W with OMP_PROC_BIND=true, 4
                // threads at --cpus 4 on 2 host CPUs, took 11.9 s, against 0.14 s packed.
                if t.cpu < packed && (allowed(t.cpu) || !(0..packed).any(allowed)) {
                    return false;
                }
                sched::thread::least_loaded(|c| c < packed && allowed(c))
                    .or_else(|| sched::thread::least_loaded(|c| c < packed))
                    .unwrap_or(0)
            } else {
                if allowed(t.cpu) {
                    return false;
                }
                sched::thread::least_loaded(allowed).unwrap_or(first)
            };
            // SAFETY: a registered thread's record is alive while the signal lock lends it.
            unsafe { sched::ask_to_move(t as *const _ as *mut _, target) }
        });
        if running_elsewhere.is_none() {
            // Another process: ESRCH if there is none, EPERM where Linux would refuse.
            super::procs::call(hrt_abi::process::AFFINITY_ALLOWED, [tid as u64, 0, 0, 0, 0, 0])?;
        }
        if running_elsewhere.is_none() && !REPORTED_OTHER_PID.swap(true, Ordering::Relaxed) {
            // Another process (a child: its own kernel, out of reach): accepted, as before,
            // but said once.
            kprintln!("hrt: sched_setaffinity of pid {tid}, none of the program's threads: ignored (reported once)");
        }
        if running_elsewhere == Some(true) {
            // Linux returns once a running thread has moved: the caller may rely on it (a
            // thread told to report its CPU next). Interrupted, it moves within tens of
            // microseconds, unless the host keeps its vCPU waiting (more vCPUs than host CPUs
            // on a loaded host: tens of milliseconds); after a short spin this vCPU sleeps
            // between looks, so as not to hold a host CPU that vCPU may need. Bounded, should
            // the thread never reach a point where it can move.
            let start = crate::time::ticks();
            let spin = crate::time::ns_to_ticks(MOVE_SPIN_NS);
            let (deadline, again) = (crate::time::ns_to_ticks(MOVE_WAIT_NS), crate::time::ns_to_ticks(MOVE_KICK_NS));
            let mut kicked = start;
            // Only while it runs or waits to: a thread that blocks (a new thread of glibc's
            // waiting for its creator, which sets its mask first, to release it) moves at the
            // end of its system call, before any more of its code runs.
            let on_cpu = |t: &Thread| {
                let state = t.state.load(Ordering::SeqCst);
                sched::move_pending(t) && (state == sched::thread::RUNNING || state == sched::thread::READY)
            };
            while let Some((true, on)) = signal::state::with_thread(tid, |t| (on_cpu(t), t.cpu)) {
                let now = crate::time::ticks();
                if now.wrapping_sub(start) > deadline {
                    kprintln!("hrt: thread {tid} did not move to a CPU of its new mask within 1 s");
                    break;
                }
                if now.wrapping_sub(kicked) > again {
                    // Not acted on yet (it was between safe points): once more.
                    sched::interrupt_to_move(on);
                    kicked = now;
                }
                if now.wrapping_sub(start) > spin {
                    sched::sleep::sleep_ns(MOVE_SLEEP_NS);
                } else {
                    core::hint::spin_loop();
                }
            }
        }
        return Ok(0);
    }
    AFFINITY_SET.store(true, Ordering::Relaxed);
    current().set_affinity(set);
    if !allowed(crate::cpu::id()) {
        sched::migrate_current(first);
    } else if packed < n && crate::cpu::id() >= packed {
        // With the threads packed on the first vCPUs (more vCPUs than host CPUs: the kernel's
        // OpenMP runtime, and a program's own libgomp or libomp, `spin_throttle::packs_threads`)
        // a thread returns to them when its mask lets it: libomp's start, and hwloc's topology
        // discovery (MPICH's `MPI_Init`), bind the first thread to each vCPU in turn, then give
        // it the whole mask back. Left on the last vCPU, outside the packed ones, that thread
        // (the team's master) competed for the host's CPUs with the packed vCPUs its team
        // waited on: LLNL's AMG at `--cpus 4` on 2 host CPUs took 100-300 s against 1 s. For
        // libgomp, whether its threads are packed is known only at its first thread, after
        // hwloc's probe: they are packed then or not at all, and either way the first thread
        // is best on one of the first vCPUs.
        if let Some(cpu) = sched::thread::least_loaded(|c| c < packed && allowed(c)) {
            sched::migrate_current(cpu);
        }
    }
    Ok(0)
}

pub fn getcpu(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    if a[0] != 0 {
        uaccess::write::<u32>(a[0], crate::cpu::id() as u32)?;
    }
    if a[1] != 0 {
        uaccess::write::<u32>(a[1], crate::cpu::current_zone() as u32)?;
    }
    Ok(0)
}

const ARCH_SET_GS: u64 = 0x1001;
const ARCH_SET_FS: u64 = 0x1002;
const ARCH_GET_FS: u64 = 0x1003;
const ARCH_GET_GS: u64 = 0x1004;
const ARCH_GET_CPUID: u64 = 0x1011;
const ARCH_SET_CPUID: u64 = 0x1012;
const ARCH_GET_XCOMP_SUPP: u64 = 0x1021;
const ARCH_GET_XCOMP_PERM: u64 = 0x1022;
const ARCH_REQ_XCOMP_PERM: u64 = 0x1023;

/// A TLS base the program asks for (ARCH_SET_FS, CLONE_SETTLS): it goes into the FS_BASE MSR,
/// where a non-canonical value raises #GP in the kernel, so only user addresses are accepted,
/// as on Linux (EPERM at or above its user address-space end).
fn user_fs_base(v: u64) -> Result<u64, u32> {
    if v >= crate::linux::uaccess::USER_END {
        return Err(EPERM);
    }
    Ok(v)
}

pub fn arch_prctl(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    match a[0] {
        ARCH_SET_FS => {
            let base = user_fs_base(a[1])?;
            current().fs_base = base;
            user::set_fs_base(base);
            Ok(0)
        }
        ARCH_GET_FS => {
            uaccess::write::<u64>(a[1], current().fs_base)?;
            Ok(0)
        }
        // CPUID runs (1); making it fault needs CPUID faulting, which the VM's CPUs lack.
        ARCH_GET_CPUID => Ok(1),
        ARCH_SET_CPUID => Err(crate::linux::errno::ENODEV),
        // The state components the kernel keeps for each thread. None of them is one that
        // needs asking for (AMX tile data), and Linux refuses a request for any other.
        ARCH_GET_XCOMP_SUPP | ARCH_GET_XCOMP_PERM => {
            uaccess::write::<u64>(a[1], crate::arch::fpu::xcr0())?;
            Ok(0)
        }
        ARCH_REQ_XCOMP_PERM if a[1] < 64 => Err(crate::linux::errno::EOPNOTSUPP),
        ARCH_SET_GS | ARCH_GET_GS => {
            // The kernel's per-CPU data: the program cannot have the GS base (Linux's answer
            // here would be 0).
            static SAID: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                crate::kprintln!("hrt: arch_prctl ARCH_SET_GS/ARCH_GET_GS: the kernel keeps the GS base for itself: returning EINVAL (reported once)");
            }
            Err(EINVAL)
        }
        _ => Err(EINVAL),
    }
}

/// Sets up a new thread of the program before it first runs (a `clone` thread, or a `vfork`
/// child): its Linux tid, TLS base, signal mask and CPUs; returns the tid.
pub(super) fn start_program_thread(
    t: &mut sched::thread::Thread,
    fs_base: u64,
    sigmask: u64,
    affinity: [u64; 4],
) -> u32 {
    t.tid = process::tid_for(t.id);
    t.fs_base = fs_base;
    t.sigmask = sigmask;
    t.timer_slack = super::prctl::slack_for_new_thread();
    t.set_affinity(affinity);
    // The creator's seccomp filters, under the lock TSYNC takes, until the thread is
    // registered where TSYNC looks for threads.
    let _held = crate::linux::seccomp::inherit(t);
    super::signal::thread_started(t);
    t.tid
}
