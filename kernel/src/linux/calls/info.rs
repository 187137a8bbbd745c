//! System information, limits, identity, randomness.

use crate::arch::traps::TrapFrame;
use crate::linux::errno::{SysResult, EINVAL, EPERM};
use crate::linux::process::{self, PROCESS};
use crate::linux::{uaccess, usermem};
use crate::sync::SpinLock;

pub fn uname(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    // The host's answer (the monitor put it in the boot-info block), as a container shows it,
    // with the node and domain names the program set since.
    let mut u = crate::bootinfo::get().uname;
    for (field, name) in [(NODENAME, &NODE), (DOMAINNAME, &DOMAIN)] {
        if let Some(n) = *name.lock() {
            u[field] = n;
        }
    }
    // The PER_LINUX32 execution domain names a 32-bit machine, as Linux's uname answers it
    // (`setarch i686`, `linux32`).
    if PERSONA.load(core::sync::atomic::Ordering::Relaxed) & PER_MASK == PER_LINUX32 {
        u[MACHINE] = [0; 65];
        u[MACHINE][..4].copy_from_slice(b"i686");
    }
    uaccess::write(a[0], u)?;
    Ok(0)
}

/// chroot(path): Linux's answers before the change (the path's own errors, ENOTDIR, EACCES
/// without search permission, EPERM without CAP_SYS_CHROOT), then ENOSYS with a line: the
/// program's paths would have to resolve below the new root, which the monitor's walk does
/// not do. (It was ENOSYS whatever the path: a missing directory gave ENOSYS, not ENOENT.)
pub fn chroot(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    use linux_raw_sys::general::{__NR_close, __NR_faccessat2, __NR_openat, AT_EACCESS, AT_EMPTY_PATH, AT_FDCWD};
    const O_PATH_DIRECTORY_CLOEXEC: u64 = 0o10_000_000 | 0o200_000 | 0o2_000_000;
    const X_OK: u64 = 1;
    const CAP_SYS_CHROOT: u32 = 18;
    let forward = crate::linux::syscall::forward;
    let fd = forward(__NR_openat as u64, [AT_FDCWD as u32 as u64, a[0], O_PATH_DIRECTORY_CLOEXEC, 0, 0, 0]);
    if fd < 0 {
        return Err((-fd) as u32);
    }
    let searchable = usermem::with_scratch(|page| {
        // SAFETY: a fresh page of program memory only we know: an empty path.
        unsafe { (page as *mut u8).write(0) };
        forward(__NR_faccessat2 as u64, [fd as u64, page, X_OK, (AT_EMPTY_PATH | AT_EACCESS) as u64, 0, 0])
    });
    forward(__NR_close as u64, [fd as u64, 0, 0, 0, 0, 0]);
    if searchable < 0 {
        return Err((-searchable) as u32);
    }
    if !super::ids::capable(CAP_SYS_CHROOT) {
        return Err(EPERM);
    }
    crate::linux::syscall::report_unimplemented(linux_raw_sys::general::__NR_chroot as u64, "chroot");
    Err(linux_raw_sys::errno::ENOSYS)
}

/// uname's fields for the node and the domain name.
const NODENAME: usize = 1;
const MACHINE: usize = 4;
const DOMAINNAME: usize = 5;
/// The node and domain names the program set (`sethostname`, `setdomainname`), None until it
/// does: a forked child keeps its parent's, as a copy of this memory.
static NODE: SpinLock<Option<[u8; hrt_abi::UTS_LEN]>> = SpinLock::new(None);
static DOMAIN: SpinLock<Option<[u8; hrt_abi::UTS_LEN]>> = SpinLock::new(None);

/// sethostname(name, len) and setdomainname: the host's, which makes Linux's checks (EPERM
/// without CAP_SYS_ADMIN, EINVAL above 64 bytes, EFAULT); then uname shows the new name.
pub fn sethostname(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    set_uts_name(linux_raw_sys::general::__NR_sethostname, &NODE, a)
}

pub fn setdomainname(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    set_uts_name(linux_raw_sys::general::__NR_setdomainname, &DOMAIN, a)
}

/// reboot(magic1, magic2, cmd, arg): Linux's refusals, EPERM without CAP_SYS_BOOT, then
/// EINVAL for magic numbers that are not its; a program allowed past them does not restart
/// or halt the host from under `hrt`: ENOSYS with a line.
pub fn reboot(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    const CAP_SYS_BOOT: u32 = 22;
    const MAGIC1: u32 = 0xfee1_dead;
    const MAGIC2: [u32; 4] = [672_274_793, 85_072_278, 369_367_448, 537_993_216];
    if !super::ids::capable(CAP_SYS_BOOT) {
        return Err(linux_raw_sys::errno::EPERM);
    }
    if a[0] as u32 != MAGIC1 || !MAGIC2.contains(&(a[1] as u32)) {
        return Err(linux_raw_sys::errno::EINVAL);
    }
    kprintln!("hrt: reboot (command {:#x}) is not made for a program under hrt: returning ENOSYS", a[2] as u32);
    Err(linux_raw_sys::errno::ENOSYS)
}

fn set_uts_name(nr: u32, kept: &SpinLock<Option<[u8; hrt_abi::UTS_LEN]>>, a: [u64; 6]) -> SysResult {
    let r = crate::linux::syscall::forward(nr as u64, a);
    if r < 0 {
        return Err((-r) as u32);
    }
    // The host took it: `len` is at most 64 and the bytes readable.
    let len = (a[1] as usize).min(hrt_abi::UTS_LEN - 1);
    let mut name = [0u8; hrt_abi::UTS_LEN];
    name[..len].copy_from_slice(uaccess::slice(a[0], len as u64)?);
    *kept.lock() = Some(name);
    Ok(0)
}

/// The execution domain and flags `personality` set (PER_LINUX, 0, at start); kept across
/// exec and fork as Linux keeps it.
static PERSONA: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
/// ADDR_NO_RANDOMIZE (`setarch -R`): nothing to do, the kernel places the program's memory
/// without randomization anyway.
const ADDR_NO_RANDOMIZE: u32 = 0x0040000;
/// The execution domain (the low byte) PER_LINUX32: uname's machine is i686.
const PER_MASK: u32 = 0xff;
const PER_LINUX32: u32 = 0x0008;
/// READ_IMPLIES_EXEC (`setarch -X`): `mmap` and `mprotect` with PROT_READ add PROT_EXEC
/// (`with_implied_exec`), as Linux does.
const READ_IMPLIES_EXEC: u32 = 0x0400000;

/// `prot` with PROT_EXEC added where it has PROT_READ and the personality has
/// READ_IMPLIES_EXEC (Linux's mmap and mprotect).
pub fn with_implied_exec(prot: u64) -> u64 {
    use crate::linux::protect::{PROT_EXEC, PROT_READ};
    let implied = PERSONA.load(core::sync::atomic::Ordering::Relaxed) & READ_IMPLIES_EXEC != 0;
    if implied && prot & PROT_READ != 0 {
        prot | PROT_EXEC
    } else {
        prot
    }
}

/// personality(persona): 0xffffffff asks; anything else sets it and answers the old one. Only
/// PER_LINUX and PER_LINUX32 with ADDR_NO_RANDOMIZE and READ_IMPLIES_EXEC mean here what they
/// mean on Linux; any other domain or flag
/// is kept and answered back but changes nothing, which a line says once.
pub fn personality(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    use core::sync::atomic::{AtomicBool, Ordering};
    static SAID: AtomicBool = AtomicBool::new(false);
    let persona = a[0] as u32;
    if persona == 0xffff_ffff {
        return Ok(PERSONA.load(Ordering::Relaxed) as u64);
    }
    let honoured = persona & PER_MASK == PER_LINUX32
        && persona & !(PER_MASK | ADDR_NO_RANDOMIZE | READ_IMPLIES_EXEC) == 0
        || persona & !(ADDR_NO_RANDOMIZE | READ_IMPLIES_EXEC) == 0;
    if !honoured && !SAID.swap(true, Ordering::Relaxed) {
        kprintln!("hrt: personality {persona:#x}: only PER_LINUX, PER_LINUX32 (uname's machine), ADDR_NO_RANDOMIZE and READ_IMPLIES_EXEC are honoured (the rest is kept, not acted on; reported once)");
    }
    Ok(PERSONA.swap(persona, Ordering::Relaxed) as u64)
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Sysinfo {
    uptime: i64,
    loads: [u64; 3],
    totalram: u64,
    freeram: u64,
    sharedram: u64,
    bufferram: u64,
    totalswap: u64,
    freeswap: u64,
    procs: u16,
    pad: u16,
    pad2: u32,
    totalhigh: u64,
    freehigh: u64,
    mem_unit: u32,
    reserved: [u8; 4],
}

pub fn sysinfo(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (totalram, freeram) = usermem::shown_bytes();
    let info = Sysinfo {
        // The host's, as CLOCK_BOOTTIME is.
        uptime: (super::time::boottime_ns() / 1_000_000_000) as i64,
        // The host's (below): what /proc/loadavg, read from the host, says too.
        loads: [0; 3],
        totalram,
        freeram,
        sharedram: 0,
        bufferram: 0,
        totalswap: 0,
        freeswap: 0,
        procs: 1,
        pad: 0,
        pad2: 0,
        totalhigh: 0,
        freehigh: 0,
        mem_unit: 1,
        reserved: [0; 4],
    };
    uaccess::write(a[0], info)?;
    // The loads follow the uptime (a `long`): left zero if the monitor cannot say.
    let _ = crate::linux::syscall::forward(hrt_abi::process::HOST_LOADS, [a[0] + 8, 0, 0, 0, 0, 0]);
    Ok(0)
}

fn rlimit_index(resource: u64) -> Result<usize, u32> {
    if resource < 16 {
        Ok(resource as usize)
    } else {
        Err(EINVAL)
    }
}

pub fn getrlimit(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let r = PROCESS.rlimits.lock()[rlimit_index(a[0])?];
    uaccess::write::<[u64; 2]>(a[1], [r.0, r.1])?;
    Ok(0)
}

const RLIMIT_CPU: usize = 0;
const RLIMIT_FSIZE: usize = 1;
const RLIMIT_AS: usize = 9;

/// Whether the program has a file size limit (RLIMIT_FSIZE's soft limit is not infinite).
pub fn file_size_limited() -> bool {
    PROCESS.rlimits.lock()[RLIMIT_FSIZE].0 != u64::MAX
}

fn set_limit(resource: usize, new: [u64; 2]) -> SysResult {
    let old = PROCESS.rlimits.lock()[resource];
    if new[0] > new[1] {
        return Err(EINVAL);
    }
    if new[1] > old.1 {
        return Err(EPERM);
    }
    if (new[0], new[1]) != old {
        // Limits the monitor enforces (the descriptor table's size, the size of the files
        // forwarded writes make) or passes on to the host programs the program starts (all
        // the others, such as the stack's size for a program a forked child execs; the CPU
        // and address-space limits are enforced here too): nr::HOST_RLIMIT. (Two threads
        // setting one at once may leave the monitor with either value.)
        let ret = crate::arch::hypercall::call(hrt_abi::nr::HOST_RLIMIT, &[resource as u64, new[0], new[1]]);
        if ret < 0 {
            return Err((-ret) as u32);
        }
    }
    PROCESS.rlimits.lock()[resource] = (new[0], new[1]);
    if resource == RLIMIT_CPU && (new[0], new[1]) != old {
        crate::linux::signal::timers::set_cpu_limit(new[0], new[1])?;
    }
    Ok(0)
}

/// RLIMIT_AS: mapping `extra` more bytes would take the program's address space past its soft
/// limit (ENOMEM, as Linux's mmap, brk and mremap answer). The program's address space is its
/// mappings, the break's window counted only up to the break.
pub fn address_space_allows(extra: u64) -> Result<(), u32> {
    if PROCESS.rlimits.lock()[RLIMIT_AS].0 == u64::MAX {
        return Ok(());
    }
    address_space_allows_with(&PROCESS.brk.lock(), extra)
}

/// The program's address space in bytes, as RLIMIT_AS counts it and `/proc/self/status` shows
/// it (VmSize): its mappings, the break's window only up to the break, the main stack as far
/// as Linux's would have grown (`loader::main_stack_uncounted`). Takes no lock (the
/// break's mirror, `process::UNUSED_BREAK`): while another thread moves the break it may be
/// off by that move.
pub fn address_space() -> u64 {
    let unused = crate::linux::process::UNUSED_BREAK.load(core::sync::atomic::Ordering::Relaxed);
    let stack = crate::linux::loader::main_stack_uncounted();
    crate::linux::usermem::mapped_bytes().saturating_sub(unused).saturating_sub(stack)
}

/// `address_space_allows` with the break `b` locked by the caller.
pub fn address_space_allows_with(b: &crate::linux::process::Brk, extra: u64) -> Result<(), u32> {
    let soft = PROCESS.rlimits.lock()[RLIMIT_AS].0;
    if soft == u64::MAX {
        return Ok(());
    }
    let stack = crate::linux::loader::main_stack_uncounted();
    let used = crate::linux::usermem::mapped_bytes().saturating_sub(b.unused()).saturating_sub(stack);
    match used.checked_add(extra) {
        Some(total) if total <= soft => Ok(()),
        _ => Err(crate::linux::errno::ENOMEM),
    }
}

/// Arms RLIMIT_CPU's signals if the program has a CPU limit (at start, in a forked child).
pub fn arm_cpu_limit() {
    let (soft, hard) = PROCESS.rlimits.lock()[RLIMIT_CPU];
    if (soft, hard) != (u64::MAX, u64::MAX) {
        // Only fails if no kernel thread can be started for it: the program then runs unlimited.
        let _ = crate::linux::signal::timers::set_cpu_limit(soft, hard);
    }
}

/// RLIMIT_CPU's soft limit was reached and SIGXCPU sent: one second more before the next, which
/// the program reads back, as on Linux (up to the hard limit).
pub fn cpu_soft_limit_passed() {
    let mut limits = PROCESS.rlimits.lock();
    let (soft, hard) = limits[RLIMIT_CPU];
    if soft < hard {
        limits[RLIMIT_CPU].0 = soft + 1;
    }
}

pub fn setrlimit(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let r = rlimit_index(a[0])?;
    set_limit(r, uaccess::read::<[u64; 2]>(a[1])?)
}

pub fn prlimit64(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (pid, resource, new, old) = (a[0] as i32, a[1], a[2], a[3]);
    if pid != 0 && pid as u32 != process::pid() && !crate::linux::signal::state::is_program_thread(pid as u32) {
        // Another process: the host's limits of it, as the program's user gets them (the
        // monitor checks the pointers). A forked child under `hrt` answers its `hrt`'s host
        // limits, not those its own kernel keeps.
        let r = crate::linux::syscall::forward(linux_raw_sys::general::__NR_prlimit64 as u64, a);
        return if r < 0 { Err((-r) as u32) } else { Ok(r as u64) };
    }
    let r = rlimit_index(resource)?;
    if old != 0 {
        let cur = PROCESS.rlimits.lock()[r];
        uaccess::write::<[u64; 2]>(old, [cur.0, cur.1])?;
    }
    if new != 0 {
        set_limit(r, uaccess::read::<[u64; 2]>(new)?)?;
    }
    Ok(0)
}

const RUSAGE_SELF: i64 = 0;
const RUSAGE_CHILDREN: i64 = -1;
const RUSAGE_THREAD: i64 = 1;

/// (user, system) nanoseconds of `who`: the program (user time its own code, system time the
/// time inside its system calls, linux::cputime), the calling thread, or its ended and
/// waited-for children (the host's count for `hrt`'s children, which are all the program's).
fn usage_ns(who: i64) -> Result<(u64, u64), u32> {
    use crate::linux::cputime::{user_sys_ns, CpuClock};
    Ok(match who {
        RUSAGE_SELF => user_sys_ns(CpuClock::Process).unwrap_or((0, 0)),
        RUSAGE_THREAD => user_sys_ns(CpuClock::Thread(crate::linux::process::current_tid())).unwrap_or((0, 0)),
        RUSAGE_CHILDREN => super::procs::children_time_ns(),
        _ => return Err(EINVAL),
    })
}

/// getrusage: user and system time (see `usage_ns`) and the largest resident set (the host's
/// for `hrt` less what the monitor and the boot held: `op::MAX_RSS`, asked at most once a
/// millisecond, see `max_rss`); no page faults or other counts.
pub fn getrusage(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let who = a[0] as i32 as i64;
    let (user, sys) = usage_ns(who)?;
    let mut usage = [0i64; 18];
    for (i, ns) in [user, sys].into_iter().enumerate() {
        usage[2 * i] = (ns / 1_000_000_000) as i64;
        usage[2 * i + 1] = ((ns % 1_000_000_000) / 1000) as i64;
    }
    // ru_maxrss, after the two timevals: the process's for RUSAGE_THREAD too, as on Linux.
    usage[4] = if who == RUSAGE_CHILDREN {
        super::procs::call(hrt_abi::process::MAX_RSS, [1, 0, 0, 0, 0, 0]).unwrap_or(0) as i64
    } else {
        super::max_rss::of_program()
    };
    uaccess::write(a[1], usage)?;
    Ok(0)
}

/// times: the program's and its children's user and system time in clock ticks (100 a second).
pub fn times(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    const NS_PER_TICK: u64 = 10_000_000;
    // Ticks since the host booted (CLOCK_BOOTTIME, as Linux counts its jiffies from boot): a
    // count from the VM's start was 0 at first, which a program may take for no time at all.
    let ticks = super::time::clock_ns(7).unwrap_or_else(crate::time::now_ns) / NS_PER_TICK;
    if a[0] != 0 {
        let (user, sys) = usage_ns(RUSAGE_SELF)?;
        let (cuser, csys) = usage_ns(RUSAGE_CHILDREN)?;
        uaccess::write::<[i64; 4]>(a[0], [user, sys, cuser, csys].map(|ns| (ns / NS_PER_TICK) as i64))?;
    }
    Ok(ticks)
}

pub fn getuid(_: &mut TrapFrame, _: [u64; 6]) -> SysResult {
    Ok(super::ids::ruid() as u64)
}

pub fn geteuid(_: &mut TrapFrame, _: [u64; 6]) -> SysResult {
    Ok(super::ids::euid() as u64)
}

pub fn getgid(_: &mut TrapFrame, _: [u64; 6]) -> SysResult {
    Ok(super::ids::rgid() as u64)
}

pub fn getegid(_: &mut TrapFrame, _: [u64; 6]) -> SysResult {
    Ok(super::ids::egid() as u64)
}

const GRND_NONBLOCK: u64 = 1;
const GRND_RANDOM: u64 = 2;
const GRND_INSECURE: u64 = 4;
/// Linux never transfers more than this in one call.
const MAX_RW_COUNT: u64 = 0x7fff_f000;

/// getrandom: the kernel's generator (`crate::random`) fills the program's buffer. As on
/// Linux, a buffer that runs into unmapped memory gets the bytes before it (EFAULT if there are
/// none), and the generator is always ready (GRND_NONBLOCK and GRND_RANDOM never wait).
pub fn getrandom(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (buf, len, flags) = (a[0], a[1].min(MAX_RW_COUNT), a[2]);
    if flags & !(GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE) != 0
        || flags & (GRND_RANDOM | GRND_INSECURE) == GRND_RANDOM | GRND_INSECURE
    {
        return Err(EINVAL);
    }
    if len == 0 {
        return Ok(0);
    }
    let mapped = crate::linux::usermap::mapped_len(buf, len);
    // The part it may write: a read-only page ends it as an unmapped one does (Linux's copy
    // stops at the first page it cannot write; it was EFAULT for the whole call).
    let mut n = 0;
    while n < mapped {
        let page_end = ((buf + n) | (crate::linux::usermem::PAGE - 1)) + 1;
        let end = (buf + mapped).min(page_end);
        if !crate::linux::protect::allows(buf + n, end, true) {
            break;
        }
        n = end - buf;
    }
    crate::random::fill(uaccess::slice_mut(buf, n.max(1))?)?;
    Ok(n)
}

const PRIO_PROCESS: u64 = 0;
const IOPRIO_WHO_PROCESS: u64 = 1;

/// getpriority and setpriority (and the I/O priority calls, ioprio_get and ioprio_set),
/// performed by the host: the program's niceness is its host process's (`hrt`'s, whose threads
/// run the program and do its I/O), and other processes, groups and users are the host's. A
/// program thread named by its tid means the program (the monitor applies the program's value
/// to all of `hrt`'s threads; Linux's is per thread).
fn priority(nr: u32, a: [u64; 6]) -> SysResult {
    let mut a = a;
    let process = if nr == linux_raw_sys::general::__NR_getpriority || nr == linux_raw_sys::general::__NR_setpriority {
        PRIO_PROCESS
    } else {
        IOPRIO_WHO_PROCESS
    };
    if a[0] == process && a[1] as u32 != 0 && super::super::signal::is_program_thread(a[1] as u32) {
        a[1] = 0;
    }
    let r = crate::linux::syscall::forward(nr as u64, a);
    if r < 0 {
        Err((-r) as u32)
    } else {
        Ok(r as u64)
    }
}

pub fn getpriority(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    priority(linux_raw_sys::general::__NR_getpriority, a)
}

pub fn setpriority(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    priority(linux_raw_sys::general::__NR_setpriority, a)
}

pub fn ioprio_get(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    priority(linux_raw_sys::general::__NR_ioprio_get, a)
}

pub fn ioprio_set(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    priority(linux_raw_sys::general::__NR_ioprio_set, a)
}
