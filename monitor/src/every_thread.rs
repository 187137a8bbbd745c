//! Credential calls made on every thread of `hrt`. Linux keeps credentials per thread (ids,
//! capabilities, the security bits with keep-caps, the bounding and ambient sets), but the
//! program is `hrt`'s whole host process: any of its threads may serve the program's calls
//! (the forwarding workers, the polling threads, the vCPU threads), start its host programs or
//! fork it, and each must act with the program's credentials. glibc makes the set*id calls on
//! every thread itself (its SIGSETXID broadcast), and aborts the process when two threads
//! answer differently; capset and the prctl options act on the calling thread only.
//!
//! `everywhere` makes such a call on the calling thread first (its answer is the program's),
//! then on every other thread, one after another: a signal whose handler makes the same call
//! and says so. It lists /proc/self/task again until a pass finds no thread it has not asked:
//! a thread started meanwhile got its creator's credentials, and its creator either had the
//! change already or is asked in a later pass. Before, capset was made on one thread and the
//! others applied "the latest sets" lazily when they next acted for the program; a thread that
//! had caught up with one capset but not the next made glibc's setuid broadcast fail there and
//! abort `hrt` (SIGABRT), and the prctl options stayed where they were made.
//!
//! The handler is async-signal-safe (raw calls, atomics, no locks); it is installed with
//! SA_RESTART, so an interrupted host call resumes.

use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::raw_sys::syscall6;

/// One broadcast at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
/// The call the asked thread makes: its number and three arguments.
static CALL_NR: AtomicI64 = AtomicI64::new(-1);
static CALL_ARGS: [AtomicU64; 3] = [const { AtomicU64::new(0) }; 3];
/// The thread asked now (0: none): a late signal for a thread asked before does nothing.
static ASKED: AtomicI32 = AtomicI32::new(0);
/// The asked thread's id once it made the call (a futex word), and its raw answer.
static ANSWERED: AtomicI32 = AtomicI32::new(0);
static ANSWER: AtomicI64 = AtomicI64::new(0);

/// How long a thread may take to answer before the change goes on without it (a thread that
/// blocked every signal for that long; said on stderr).
const PATIENCE: Duration = Duration::from_secs(3);

/// The signal that asks a thread (one `hrt` keeps, `kept_signals::passed_on`).
pub fn signal() -> libc::c_int {
    crate::kept_signals::credentials_signal()
}

/// Installs the handler; once per process, before its threads start (a forked child inherits
/// it), and before `shared_signals::install`, which puts the test for another process's
/// signal in front of it.
pub fn install() {
    if !crate::shared_signals::set_own_handler(signal(), on_ask) {
        eprintln!("hrt: cannot install the credentials signal's handler: credential changes stay on one thread");
    }
}

extern "C" fn on_ask(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    if crate::shared_signals::from_another_process(info) {
        // The program's: another process sent this signal number.
        crate::shared_signals::pass_on(sig, info, ctx);
        return;
    }
    // SAFETY: gettid has no arguments.
    let me = unsafe { syscall6(libc::SYS_gettid, [0; 6]) } as i32;
    if ASKED.load(Ordering::SeqCst) != me {
        return;
    }
    let nr = CALL_NR.load(Ordering::SeqCst);
    let a = [0, 1, 2].map(|i| CALL_ARGS[i].load(Ordering::SeqCst));
    // SAFETY: the call `everywhere` made on its own thread, with its arguments (pointers into
    // the memory of the thread that waits for this answer).
    let r = unsafe { syscall6(nr, [a[0], a[1], a[2], 0, 0, 0]) };
    ANSWER.store(r, Ordering::SeqCst);
    ANSWERED.store(me, Ordering::SeqCst);
    // SAFETY: FUTEX_WAKE on a static word; no errno is touched (raw call).
    unsafe { syscall6(libc::SYS_futex, [ANSWERED.as_ptr() as u64, libc::FUTEX_WAKE as u64, 1, 0, 0, 0]) };
}

/// Makes call `nr` with `args` on the calling thread, and if it succeeds, on every other thread
/// of this process. The calling thread's answer (a negated errno on failure) is the result; a
/// thread that answers differently is said on stderr (the threads had different credentials).
///
/// # Safety
/// `nr` with `args` must be valid on any thread of `hrt` (pointers to memory that lives until
/// this returns), and change only the calling thread's credentials.
pub unsafe fn everywhere(nr: libc::c_long, args: [u64; 3]) -> i64 {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: (caller) valid on this thread.
    let first = unsafe { syscall6(nr, [args[0], args[1], args[2], 0, 0, 0]) };
    if first < 0 {
        return first;
    }
    CALL_NR.store(nr, Ordering::SeqCst);
    for (slot, a) in CALL_ARGS.iter().zip(args) {
        slot.store(a, Ordering::SeqCst);
    }
    // SAFETY: no arguments.
    let (pid, me) = unsafe { (libc::getpid(), libc::gettid()) };
    let mut asked = vec![me];
    loop {
        let fresh: Vec<i32> = threads().into_iter().filter(|t| !asked.contains(t)).collect();
        if fresh.is_empty() {
            break;
        }
        for tid in fresh {
            asked.push(tid);
            match ask(pid, tid) {
                Some(r) if r != first => eprintln!(
                    "hrt: thread {tid} answered {r} where thread {me} answered {first} to credential call {nr}"
                ),
                Some(_) => {}
                None if thread_alive(pid, tid) => eprintln!(
                    "hrt: thread {tid} did not make credential call {nr} within {PATIENCE:?}: its credentials may differ"
                ),
                None => {}
            }
        }
    }
    ASKED.store(0, Ordering::SeqCst);
    first
}

/// Asks thread `tid` and waits for its answer; None if it ended or did not answer in time.
fn ask(pid: i32, tid: i32) -> Option<i64> {
    ANSWERED.store(0, Ordering::SeqCst);
    ASKED.store(tid, Ordering::SeqCst);
    // SAFETY: a signal to a thread of this process, whose handler `install` set.
    if unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, signal()) } < 0 {
        return None;
    }
    let deadline = Instant::now() + PATIENCE;
    loop {
        if ANSWERED.load(Ordering::SeqCst) == tid {
            return Some(ANSWER.load(Ordering::SeqCst));
        }
        if !thread_alive(pid, tid) || Instant::now() > deadline {
            ASKED.store(0, Ordering::SeqCst);
            // It may have answered just now.
            return (ANSWERED.load(Ordering::SeqCst) == tid).then(|| ANSWER.load(Ordering::SeqCst));
        }
        let wait = libc::timespec { tv_sec: 0, tv_nsec: 20_000_000 };
        // SAFETY: FUTEX_WAIT on a static word while it is 0, with a timeout of ours.
        unsafe {
            libc::syscall(libc::SYS_futex, ANSWERED.as_ptr(), libc::FUTEX_WAIT, 0, &wait as *const libc::timespec)
        };
    }
}

fn thread_alive(pid: i32, tid: i32) -> bool {
    // SAFETY: signal 0 only asks whether the thread exists.
    unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, 0) == 0 }
}

/// The ids of this process's threads, but the host kernel's workers among them (KVM's
/// "kvm-nx-lpage-recovery" thread, which takes no signal).
fn threads() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).filter(|&tid| !host_worker(tid)).collect()
}

/// Whether thread `tid` of this process is one the host kernel runs for it (PF_USER_WORKER in
/// the flags, the ninth field of /proc/<pid>/task/<tid>/stat).
fn host_worker(tid: i32) -> bool {
    const PF_USER_WORKER: u64 = 0x4000;
    let Ok(stat) = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")) else { return false };
    // The name (second field, in parentheses) may hold spaces: the flags are the seventh field
    // after it.
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    after_name.split_whitespace().nth(6).and_then(|f| f.parse::<u64>().ok()).is_some_and(|f| f & PF_USER_WORKER != 0)
}

/// This module's global lock, taken without waiting for a fork (`vm::fork`): false if another
/// thread holds it.
pub(crate) fn hold_for_fork(held: &mut crate::vm::fork::Held) -> bool {
    crate::vm::fork::try_hold(held, &ONE_AT_A_TIME)
}
