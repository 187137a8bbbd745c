//! prctl: the process's name, its dumpable flag, and the options that are properties of
//! `hrt`'s host process (the parent-death signal, child subreaper, no new privileges: the
//! monitor sets them on the host, nr::HOST_PRCTL; the capability bounding set, read there). Every other option fails with EINVAL, the
//! answer Linux gives an option it does not know, and says so once per option on hrt's stderr:
//! the program would have got it on Linux.

use core::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use crate::arch::traps::TrapFrame;
use crate::linux::errno::{SysResult, EINVAL, EPERM};
use crate::linux::uaccess;

const PR_SET_PDEATHSIG: u64 = 1;
const PR_GET_PDEATHSIG: u64 = 2;
const PR_GET_DUMPABLE: u64 = 3;
const PR_CAPBSET_READ: u64 = 23;
const PR_CAPBSET_DROP: u64 = 24;
const PR_SET_CHILD_SUBREAPER: u64 = 36;
const PR_GET_CHILD_SUBREAPER: u64 = 37;
const PR_SET_NO_NEW_PRIVS: u64 = 38;
/// PR_SET_VMA (PR_SET_VMA_ANON_NAME names anonymous memory).
const PR_SET_VMA: u64 = 0x5356_4d41;
const PR_GET_NO_NEW_PRIVS: u64 = 39;
const PR_SET_DUMPABLE: u64 = 4;
const PR_SET_NAME: u64 = 15;
const PR_GET_NAME: u64 = 16;
const PR_GET_KEEPCAPS: u64 = 7;
const PR_SET_KEEPCAPS: u64 = 8;
const PR_GET_SECCOMP: u64 = 21;
const PR_SET_SECCOMP: u64 = 22;
const PR_GET_SECUREBITS: u64 = 27;
const PR_SET_SECUREBITS: u64 = 28;
const PR_SET_TIMERSLACK: u64 = 29;
const PR_GET_TIMERSLACK: u64 = 30;
const PR_SET_THP_DISABLE: u64 = 41;
const PR_GET_THP_DISABLE: u64 = 42;
const PR_CAP_AMBIENT: u64 = 47;
const PR_SET_MM: u64 = 35;
const PR_GET_MDWE: u64 = 66;
const PR_GET_MEMORY_MERGE: u64 = 68;
const PR_GET_SPECULATION_CTRL: u64 = 52;
const PR_GET_AUXV: u64 = 0x4155_5856;
const PR_GET_TID_ADDRESS: u64 = 40;
const PR_GET_TIMING: u64 = 13;
const PR_TASK_PERF_EVENTS_DISABLE: u64 = 31;
const PR_TASK_PERF_EVENTS_ENABLE: u64 = 32;
const PR_SET_TIMING: u64 = 14;
const PR_TIMING_STATISTICAL: u64 = 0;
const PR_SET_IO_FLUSHER: u64 = 57;
const PR_GET_IO_FLUSHER: u64 = 58;
const CAP_SYS_RESOURCE: u32 = 24;
const PR_MCE_KILL: u64 = 33;
const PR_GET_TSC: u64 = 25;
const PR_SET_TSC: u64 = 26;
const PR_TSC_ENABLE: u64 = 1;
const PR_TSC_SIGSEGV: u64 = 2;
const PR_MCE_KILL_GET: u64 = 34;
/// PR_MCE_KILL's policies: LATE 0, EARLY 1, DEFAULT 2 (the system's).
const PR_MCE_KILL_DEFAULT: u64 = 2;
/// PR_CAP_AMBIENT's operations: IS_SET, RAISE, LOWER, CLEAR_ALL.
const PR_CAP_AMBIENT_OPS: core::ops::RangeInclusive<u64> = 1..=4;

/// The dumpable flag (PR_SET_DUMPABLE): 1 (SUID_DUMP_USER) at start, as Linux gives a process
/// that did not exec a set-user-ID program. 0 means no core file (`core_dump`); nothing can
/// trace the program either way. Set on `hrt`'s host process as well (its /proc/<pid> owner).
static DUMPABLE: AtomicU8 = AtomicU8::new(1);

/// The program's effective user or group id changed: not dumpable any more, as Linux's
/// commit_creds leaves a process (fs.suid_dumpable's default, 0).
pub fn credentials_changed() {
    DUMPABLE.store(0, Ordering::Relaxed);
}

/// Whether the program may leave a core file (PR_SET_DUMPABLE not 0).
pub fn dumpable() -> bool {
    DUMPABLE.load(Ordering::Relaxed) != 0
}
/// The machine-check kill policy PR_MCE_KILL set (no machine check ever reaches the program:
/// only kept and answered).
static MCE_KILL: AtomicU8 = AtomicU8::new(PR_MCE_KILL_DEFAULT as u8);
/// PR_SET_PDEATHSIG's signal, PR_SET_CHILD_SUBREAPER's flag and PR_SET_NO_NEW_PRIVS, as the
/// program set them (the host has them too). A forked child starts without the first two, as
/// on Linux, and keeps the third.
static PDEATHSIG: AtomicU64 = AtomicU64::new(0);
static SUBREAPER: AtomicU64 = AtomicU64::new(0);
static NO_NEW_PRIVS: AtomicU64 = AtomicU64::new(0);

/// Whether the program set PR_SET_NO_NEW_PRIVS (seccomp filters need it, or CAP_SYS_ADMIN).
pub fn no_new_privs() -> bool {
    NO_NEW_PRIVS.load(Ordering::Relaxed) != 0
}
/// A flag that changes nothing here but reads back as set, as on Linux: PR_SET_THP_DISABLE
/// (huge pages are the guest's own choice).
static THP_DISABLE: AtomicU64 = AtomicU64::new(0);

/// The timer slack (PR_SET_TIMERSLACK): per thread, as on Linux, and changing nothing here
/// (sleeps end on time: the slack is Linux's permission to end them later). A new thread's
/// current and default slack are its creator's current one; a forked child's default is its
/// current one. The program's main thread is `hrt`'s main thread to the host, whose slack
/// `/proc/<pid>/timerslack_ns` shows: the main thread's changes are made there too
/// (`nr::HOST_PRCTL`). A thread's slack 0 stands for the process's initial one, `hrt`'s own
/// at its start (its default too: what its parent had), asked of the host when first needed
/// and always before the first change made there.
static INITIAL_SLACK: AtomicU64 = AtomicU64::new(0);

/// The process's initial timer slack (asked once).
fn initial_slack() -> u64 {
    match INITIAL_SLACK.load(Ordering::Relaxed) {
        0 => {
            // Linux's default where the host does not answer.
            let v = host_value(&[PR_GET_TIMERSLACK]).ok().filter(|&v| v != 0).unwrap_or(50_000);
            INITIAL_SLACK.store(v, Ordering::Relaxed);
            v
        }
        v => v,
    }
}

/// A thread's slack field as a value.
fn slack_value(field: u64) -> u64 {
    if field == 0 {
        initial_slack()
    } else {
        field
    }
}

/// The current and default slack of a thread the calling thread creates.
pub fn slack_for_new_thread() -> [u64; 2] {
    let now = crate::sched::current();
    // SAFETY: the calling thread's own record; only it writes its slack.
    let current = unsafe { (*now).timer_slack[0] };
    [current, current]
}

/// PR_SET_TIMERSLACK for the calling thread: `ns`, or its default for 0.
fn set_slack(ns: u64) -> SysResult {
    let t = crate::sched::current();
    // SAFETY: the calling thread's own record; only it writes its slack.
    let slack = unsafe { &mut (*t).timer_slack };
    let new = if ns == 0 { slack[1] } else { ns };
    if is_main_thread() {
        // The host's slack becomes the thread's: the initial one known before it changes.
        initial_slack();
        host_value(&[PR_SET_TIMERSLACK, slack_value(new)])?;
    }
    slack[0] = new;
    Ok(0)
}

/// Whether the caller is the program's main thread (its tid the process id).
fn is_main_thread() -> bool {
    // SAFETY: the calling thread's own record.
    unsafe { (*crate::sched::current()).tid == crate::linux::process::pid() }
}

/// The host's capability bounding set of `hrt` (which the program's is), asked once (procps
/// tools read it at start): bit i for capability i, from bit 48 how many capabilities the host
/// knows; bit 63 set once asked.
static CAPBSET: AtomicU64 = AtomicU64::new(0);

/// PR_CAPBSET_READ(cap): 1 or 0, EINVAL for a capability the host does not know.
fn capbset_read(cap: u64) -> SysResult {
    let mut set = CAPBSET.load(Ordering::Relaxed);
    if set == 0 {
        let r = crate::arch::hypercall::call(hrt_abi::nr::HOST_PRCTL, &[PR_CAPBSET_READ]);
        if r < 0 {
            return Err((-r) as u32);
        }
        set = r as u64 | 1 << 63;
        CAPBSET.store(set, Ordering::Relaxed);
    }
    let known = (set >> 48) & 0x7f;
    if cap >= known {
        return Err(EINVAL);
    }
    Ok((set >> cap) & 1)
}

/// In a forked child: no parent-death signal, not a subreaper (Linux clears both at fork), and
/// the host's timer slack of its main thread.
pub fn after_fork(timer_slack: u64) {
    PDEATHSIG.store(0, Ordering::Relaxed);
    SUBREAPER.store(0, Ordering::Relaxed);
    // The forking thread, whose current slack this is, becomes the child's main thread (with
    // that slack as its default too: fork.rs), and the child's `hrt` is a copy of the parent's
    // fork thread, whose slack is the process's initial one: made the thread's if it differs.
    if timer_slack != 0 {
        initial_slack();
        let _ = host_value(&[PR_SET_TIMERSLACK, timer_slack]);
    }
}

/// Sets `option` on `hrt`'s host process, then notes `value` in `at`.
fn on_host(option: u64, value: u64, at: &AtomicU64) -> SysResult {
    let r = crate::arch::hypercall::call(hrt_abi::nr::HOST_PRCTL, &[option, value]);
    if r < 0 {
        return Err((-r) as u32);
    }
    at.store(value, Ordering::Relaxed);
    Ok(0)
}

/// An option answered by `hrt`'s host process (nr::HOST_PRCTL with `args`).
fn host_value(args: &[u64]) -> SysResult {
    let r = crate::arch::hypercall::call(hrt_abi::nr::HOST_PRCTL, args);
    u64::try_from(r).map_err(|_| (-r) as u32)
}

/// Options already reported as unimplemented, one bit each (options 0-127).
static REPORTED: [AtomicU64; 2] = [const { AtomicU64::new(0) }; 2];

pub fn prctl(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    match a[0] {
        PR_SET_NAME => {
            let s = uaccess::read_cstr(a[1], 4096).or_else(|_| uaccess::slice(a[1], 16))?;
            // The calling thread's name, as on Linux: another thread's rename leaves the main
            // thread's (the process's) as it was.
            crate::linux::thread_names::set_own(crate::linux::thread_names::from_bytes(s));
            Ok(0)
        }
        PR_GET_NAME => {
            let name = crate::linux::thread_names::own();
            uaccess::write(a[1], name)?;
            Ok(0)
        }
        // Linux's valid_signal: 0 (none) to 64.
        PR_SET_PDEATHSIG if a[1] <= 64 => on_host(PR_SET_PDEATHSIG, a[1], &PDEATHSIG),
        PR_SET_PDEATHSIG => Err(EINVAL),
        PR_GET_PDEATHSIG => {
            uaccess::write::<i32>(a[1], PDEATHSIG.load(Ordering::Relaxed) as i32)?;
            Ok(0)
        }
        PR_SET_CHILD_SUBREAPER => on_host(PR_SET_CHILD_SUBREAPER, (a[1] != 0) as u64, &SUBREAPER),
        PR_GET_CHILD_SUBREAPER => {
            uaccess::write::<i32>(a[1], SUBREAPER.load(Ordering::Relaxed) as i32)?;
            Ok(0)
        }
        // Only 1, with the other arguments 0; it cannot be cleared.
        PR_SET_NO_NEW_PRIVS if a[1] == 1 && a[2] == 0 && a[3] == 0 && a[4] == 0 => {
            on_host(PR_SET_NO_NEW_PRIVS, 1, &NO_NEW_PRIVS)
        }
        PR_SET_NO_NEW_PRIVS => Err(EINVAL),
        PR_GET_NO_NEW_PRIVS if a[1] == 0 && a[2] == 0 && a[3] == 0 && a[4] == 0 => {
            Ok(NO_NEW_PRIVS.load(Ordering::Relaxed))
        }
        PR_GET_NO_NEW_PRIVS => Err(EINVAL),
        // Names for anonymous memory (Go's runtime asks at start): answered as a Linux built
        // without CONFIG_ANON_VMA_NAME answers, as this project's hosts are; the names would
        // only label /proc/self/maps, and callers take EINVAL as "not offered".
        PR_SET_VMA => Err(EINVAL),
        PR_CAPBSET_READ => capbset_read(a[1]),
        // The program's own filters (`linux::seccomp`; the monitor's vCPU threads have
        // `hrt`'s, which are not the program's).
        PR_GET_SECCOMP => crate::linux::seccomp::prctl_get(),
        PR_SET_SECCOMP => crate::linux::seccomp::prctl_set(a[1], a[2]),
        // Properties of `hrt`'s host process, which the programs it starts inherit: the
        // security bits and the ambient capabilities, read and changed there.
        PR_GET_SECUREBITS => host_value(&[PR_GET_SECUREBITS]),
        // Changed there too, with the host's checks (EPERM without CAP_SETPCAP, EINVAL for an
        // unknown capability or bit); the bounding set is asked again afterwards.
        PR_SET_SECUREBITS => host_value(&[PR_SET_SECUREBITS, a[1], 0]),
        // The host's mitigation state of `hrt`'s process (the program's), which the host
        // checks (EINVAL for an unknown `which` or a nonzero unused argument).
        PR_GET_SPECULATION_CTRL if a[3] | a[4] == 0 => host_value(&[PR_GET_SPECULATION_CTRL, a[1], a[2]]),
        PR_GET_SPECULATION_CTRL => Err(EINVAL),
        PR_GET_AUXV if a[3] | a[4] == 0 => get_auxv(a[1], a[2]),
        // The program has no performance counters to switch (perf_event_open is ENOSYS with a
        // line here): Linux answers 0 for a task without any too.
        PR_TASK_PERF_EVENTS_DISABLE | PR_TASK_PERF_EVENTS_ENABLE => Ok(0),
        // Linux times processes statistically only: PR_SET_TIMING takes nothing else.
        PR_GET_TIMING => Ok(PR_TIMING_STATISTICAL),
        PR_SET_TIMING if a[1] as u32 == PR_TIMING_STATISTICAL as u32 => Ok(0),
        PR_SET_TIMING => Err(EINVAL),
        // Linux asks for CAP_SYS_RESOURCE before anything else (hrt keeps no I/O-flusher
        // flag: a program that has the capability gets the line below).
        PR_SET_IO_FLUSHER | PR_GET_IO_FLUSHER if !crate::linux::calls::ids::capable(CAP_SYS_RESOURCE) => {
            Err(linux_raw_sys::errno::EPERM)
        }
        PR_GET_TID_ADDRESS => {
            // SAFETY: the calling thread's own record.
            let tid_address = unsafe { (*crate::sched::current()).clear_child_tid };
            uaccess::write::<u64>(a[1], tid_address)?;
            Ok(0)
        }
        PR_GET_AUXV => Err(EINVAL),
        PR_CAPBSET_DROP => {
            let r = host_value(&[PR_CAPBSET_DROP, a[1], 0]);
            CAPBSET.store(0, Ordering::Relaxed);
            r
        }
        // Linux refuses a fourth or fifth argument first (EINVAL).
        PR_CAP_AMBIENT if PR_CAP_AMBIENT_OPS.contains(&a[1]) && a[3] == 0 && a[4] == 0 => {
            host_value(&[PR_CAP_AMBIENT, a[1], a[2]])
        }
        PR_CAP_AMBIENT => Err(EINVAL),
        // Whether `hrt`'s threads keep their permitted capabilities over a change of user id
        // (the set-id calls are made there): a security bit of the host's, changed on every
        // thread (EINVAL above 1, EPERM when SECBIT_KEEP_CAPS_LOCKED).
        PR_GET_KEEPCAPS => host_value(&[PR_GET_KEEPCAPS, 0, 0]),
        PR_SET_KEEPCAPS => host_value(&[PR_SET_KEEPCAPS, a[1], 0]),
        // SAFETY: the calling thread's own record.
        PR_GET_TIMERSLACK => Ok(slack_value(unsafe { (*crate::sched::current()).timer_slack[0] })),
        PR_SET_TIMERSLACK => set_slack(a[1]),
        // RDTSC is always allowed: trapping it (CR4.TSD) is the host's on PVM.
        PR_GET_TSC => {
            uaccess::write::<i32>(a[1], PR_TSC_ENABLE as i32)?;
            Ok(0)
        }
        PR_SET_TSC if a[1] == PR_TSC_ENABLE => Ok(0),
        PR_SET_TSC if a[1] == PR_TSC_SIGSEGV => {
            static SAID: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                kprintln!("hrt: prctl PR_SET_TSC with PR_TSC_SIGSEGV (RDTSC faulting) is not supported: returning EINVAL (reported once)");
            }
            Err(EINVAL)
        }
        PR_SET_TSC => Err(EINVAL),
        // Linux's: the other arguments must be 0 (LTP's prctl02).
        PR_GET_THP_DISABLE if a[1..5] == [0; 4] => Ok(THP_DISABLE.load(Ordering::Relaxed)),
        PR_GET_THP_DISABLE => Err(EINVAL),
        PR_SET_THP_DISABLE if a[2] == 0 && a[3] == 0 && a[4] == 0 => {
            THP_DISABLE.store((a[1] != 0) as u64, Ordering::Relaxed);
            Ok(0)
        }
        PR_SET_THP_DISABLE => Err(EINVAL),
        PR_GET_DUMPABLE => Ok(DUMPABLE.load(Ordering::Relaxed) as u64),
        PR_SET_DUMPABLE => match a[1] {
            0 | 1 => {
                DUMPABLE.store(a[1] as u8, Ordering::Relaxed);
                // `hrt`'s host process too: who may open its /proc/<pid> entries (owned by
                // root while not dumpable, as after a change of ids) follows the flag.
                let _ = host_value(&[PR_SET_DUMPABLE, a[1], 0]);
                Ok(0)
            }
            _ => Err(EINVAL),
        },
        // PR_MCE_KILL_CLEAR (back to the default) or PR_MCE_KILL_SET of a policy.
        PR_MCE_KILL if a[3] == 0 && a[4] == 0 && (a[1] == 0 && a[2] == 0 || a[1] == 1 && a[2] <= 2) => {
            MCE_KILL.store(if a[1] == 0 { PR_MCE_KILL_DEFAULT as u8 } else { a[2] as u8 }, Ordering::Relaxed);
            Ok(0)
        }
        PR_MCE_KILL => Err(EINVAL),
        PR_MCE_KILL_GET if a[1] == 0 && a[2] == 0 && a[3] == 0 && a[4] == 0 => {
            Ok(MCE_KILL.load(Ordering::Relaxed) as u64)
        }
        PR_MCE_KILL_GET => Err(EINVAL),
        // No memory-deny-write-execute policy and no KSM merging here: none to report.
        PR_GET_MDWE | PR_GET_MEMORY_MERGE if a[1] == 0 && a[2] == 0 && a[3] == 0 && a[4] == 0 => Ok(0),
        PR_GET_MDWE | PR_GET_MEMORY_MERGE => Err(EINVAL),
        PR_SET_MM => set_mm(a[1], a[2], a[3], a[4]),
        option => {
            report_once(option);
            Err(EINVAL)
        }
    }
}

/// PR_SET_MM(opt, addr, arg4, arg5) in Linux's order: EINVAL for extra arguments; the size
/// of `struct prctl_mm_map` for PR_SET_MM_MAP_SIZE; EPERM without CAP_SYS_RESOURCE; the
/// changes themselves (checkpoint/restore tools) are not made (EINVAL with a line).
fn set_mm(opt: u64, addr: u64, arg4: u64, arg5: u64) -> SysResult {
    const AUXV: u64 = 12;
    const MAP: u64 = 14;
    const MAP_SIZE: u64 = 15;
    const PRCTL_MM_MAP_SIZE: u32 = 104;
    if arg5 != 0 || arg4 != 0 && !matches!(opt, AUXV | MAP | MAP_SIZE) {
        return Err(EINVAL);
    }
    if opt == MAP_SIZE {
        uaccess::write::<u32>(addr, PRCTL_MM_MAP_SIZE)?;
        return Ok(0);
    }
    if !crate::linux::calls::ids::capable(CAP_SYS_RESOURCE) {
        return Err(EPERM);
    }
    report_once(PR_SET_MM);
    Err(EINVAL)
}

/// PR_GET_AUXV: the first `len` bytes of the saved auxiliary vector to `addr`; the saved
/// vector's size whatever `len` is, as Linux answers.
fn get_auxv(addr: u64, len: u64) -> SysResult {
    use crate::linux::loader::{SAVED_AUXV, SAVED_AUXV_WORDS};
    let mut bytes = [0u8; SAVED_AUXV_WORDS * 8];
    for (chunk, word) in bytes.chunks_exact_mut(8).zip(SAVED_AUXV.iter()) {
        chunk.copy_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
    }
    let size = (len as usize).min(bytes.len());
    if size != 0 {
        uaccess::write_bytes(addr, &bytes[..size])?;
    }
    Ok(bytes.len() as u64)
}

fn report_once(option: u64) {
    if option < 128 {
        let bit = 1u64 << (option % 64);
        if REPORTED[option as usize / 64].fetch_or(bit, Ordering::Relaxed) & bit != 0 {
            return;
        }
    }
    match name(option) {
        Some(name) => {
            kprintln!("hrt: prctl option {option} ({name}) is not implemented: returning EINVAL (reported once)")
        }
        None => kprintln!("hrt: prctl option {option} is not implemented: returning EINVAL (reported once)"),
    }
}

/// Linux's names of the prctl options (include/uapi/linux/prctl.h).
fn name(option: u64) -> Option<&'static str> {
    const NAMES: [&str; 72] = [
        "",
        "PR_SET_PDEATHSIG",
        "PR_GET_PDEATHSIG",
        "PR_GET_DUMPABLE",
        "PR_SET_DUMPABLE",
        "PR_GET_UNALIGN",
        "PR_SET_UNALIGN",
        "PR_GET_KEEPCAPS",
        "PR_SET_KEEPCAPS",
        "PR_GET_FPEMU",
        "PR_SET_FPEMU",
        "PR_GET_FPEXC",
        "PR_SET_FPEXC",
        "PR_GET_TIMING",
        "PR_SET_TIMING",
        "PR_SET_NAME",
        "PR_GET_NAME",
        "",
        "",
        "PR_GET_ENDIAN",
        "PR_SET_ENDIAN",
        "PR_GET_SECCOMP",
        "PR_SET_SECCOMP",
        "PR_CAPBSET_READ",
        "PR_CAPBSET_DROP",
        "PR_GET_TSC",
        "PR_SET_TSC",
        "PR_GET_SECUREBITS",
        "PR_SET_SECUREBITS",
        "PR_SET_TIMERSLACK",
        "PR_GET_TIMERSLACK",
        "PR_TASK_PERF_EVENTS_DISABLE",
        "PR_TASK_PERF_EVENTS_ENABLE",
        "PR_MCE_KILL",
        "PR_MCE_KILL_GET",
        "PR_SET_MM",
        "PR_SET_CHILD_SUBREAPER",
        "PR_GET_CHILD_SUBREAPER",
        "PR_SET_NO_NEW_PRIVS",
        "PR_GET_NO_NEW_PRIVS",
        "PR_GET_TID_ADDRESS",
        "PR_SET_THP_DISABLE",
        "PR_GET_THP_DISABLE",
        "PR_MPX_ENABLE_MANAGEMENT",
        "PR_MPX_DISABLE_MANAGEMENT",
        "PR_SET_FP_MODE",
        "PR_GET_FP_MODE",
        "PR_CAP_AMBIENT",
        "",
        "",
        "PR_SVE_SET_VL",
        "PR_SVE_GET_VL",
        "PR_GET_SPECULATION_CTRL",
        "PR_SET_SPECULATION_CTRL",
        "PR_PAC_RESET_KEYS",
        "PR_SET_TAGGED_ADDR_CTRL",
        "PR_GET_TAGGED_ADDR_CTRL",
        "PR_SET_IO_FLUSHER",
        "PR_GET_IO_FLUSHER",
        "PR_SET_SYSCALL_USER_DISPATCH",
        "PR_PAC_SET_ENABLED_KEYS",
        "PR_PAC_GET_ENABLED_KEYS",
        "PR_SCHED_CORE",
        "PR_SME_SET_VL",
        "PR_SME_GET_VL",
        "PR_SET_MDWE",
        "PR_GET_MDWE",
        "PR_SET_MEMORY_MERGE",
        "PR_GET_MEMORY_MERGE",
        "PR_RISCV_V_SET_CONTROL",
        "PR_RISCV_V_GET_CONTROL",
        "PR_RISCV_SET_ICACHE_FLUSH_CTX",
    ];
    NAMES.get(option as usize).copied().filter(|n| !n.is_empty()).or(match option {
        0x5961_6d61 => Some("PR_SET_PTRACER"),
        0x5356_4d41 => Some("PR_SET_VMA"),
        0x4155_5856 => Some("PR_GET_AUXV"),
        _ => None,
    })
}
