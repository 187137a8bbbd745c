//! Signals `hrt` uses itself that another process may also send: a fault of `hrt`'s own
//! threads (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP), `abort`'s SIGABRT, a forwarded write's
//! SIGPIPE, the C library's 32 and 33 (33 is glibc's set*id broadcast), the channel's wake
//! signal and the seccomp filter's SIGSYS (32 is also `hrt`'s credentials signal,
//! `every_thread`). Sent by another process (`kill -SEGV`, `kill -33`,
//! `sigqueue` of SIGRTMIN+2) they are the program's, as they would be natively: the program's
//! handler runs or its default action ends it. Before, `hrt` kept them: the program ran on
//! (SIGSEGV, SIGPIPE, 33 and the wake signal were swallowed) where natively it ended.
//!
//! What tells them apart is the siginfo: a fault has a positive `si_code` (SEGV_MAPERR,
//! SYS_SECCOMP, ...); what `hrt` sends itself (`abort`, glibc's set*id, the wake signal) and
//! the host kernel's SIGPIPE carry `hrt`'s own pid. A signal with `si_code <= 0` (SI_USER,
//! SI_QUEUE, SI_TKILL) from another pid is the program's. `install` puts a handler in front of
//! whatever `hrt` had for each signal, and chains to it for `hrt`'s own; the wake signal's and
//! SIGSYS's handlers ask `from_another_process` themselves.
//!
//! Installed with the raw system call: glibc's `sigaction` refuses 32 and 33.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The kernel's `struct sigaction` on x86-64 (what `rt_sigaction` takes).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct KernelAction {
    handler: usize,
    flags: u64,
    restorer: usize,
    mask: u64,
}

const SA_RESTORER: u64 = 0x0400_0000;

/// Per signal: the handler `hrt` had before `install` (0 is SIG_DFL, 1 SIG_IGN) and its flags.
static PREVIOUS: [AtomicUsize; 65] = [const { AtomicUsize::new(0) }; 65];
static PREVIOUS_FLAGS: [AtomicU64; 65] = [const { AtomicU64::new(0) }; 65];

/// A signal handler's signature (SA_SIGINFO).
pub type Handler = extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void);

/// What passes a signal on to the program (`run`'s handler, given to `install`): kept here so
/// that the VM's handlers below `run` reach it without depending on `run`.
static PASS_ON: AtomicUsize = AtomicUsize::new(0);

/// Per signal: who last sent one to `hrt` that went on to the program (its pid, 0: none yet)
/// and when (CLOCK_MONOTONIC ns). The VM's teardown holder, which shares this memory, reads
/// them so as not to pass on a second copy of a signal a sender gave both processes
/// (`kill $(pidof prog)` names both: vm/late_teardown.rs).
pub static PASSED_FROM: [AtomicU64; 65] = [const { AtomicU64::new(0) }; 65];
pub static PASSED_AT: [AtomicU64; 65] = [const { AtomicU64::new(0) }; 65];

/// CLOCK_MONOTONIC in ns, by the raw system call (async-signal-safe, no `errno`: the teardown
/// holder calls it on a borrowed TLS).
pub fn monotonic_ns() -> u64 {
    let mut ts = [0i64; 2];
    // SAFETY: clock_gettime writes the two words of a timespec we own.
    unsafe {
        crate::raw_sys::syscall3(libc::SYS_clock_gettime, libc::CLOCK_MONOTONIC as u64, ts.as_mut_ptr() as u64, 0)
    };
    (ts[0] as u64).wrapping_mul(1_000_000_000).wrapping_add(ts[1] as u64)
}

/// Passes a signal another process sent on to the program, as `run`'s handler does every
/// signal `hrt` does not use itself. Async-signal-safe.
pub fn pass_on(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    if (1..=64).contains(&sig) && !info.is_null() {
        // SAFETY: a siginfo the caller vouches for.
        let from = unsafe { (*info).si_pid() } as u32 as u64;
        PASSED_AT[sig as usize].store(monotonic_ns(), Ordering::SeqCst);
        PASSED_FROM[sig as usize].store(from, Ordering::SeqCst);
    }
    let f = PASS_ON.load(Ordering::SeqCst);
    if f != 0 {
        // SAFETY: only `install` stores it, from a `Handler`.
        let f: Handler = unsafe { std::mem::transmute(f) };
        f(sig, info, ctx);
    }
}

/// Whether `info` says another process sent the signal (see the module's comment).
/// Async-signal-safe.
pub fn from_another_process(info: *const libc::siginfo_t) -> bool {
    if info.is_null() {
        return false;
    }
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler; getpid is
    // async-signal-safe.
    unsafe { (*info).si_code <= 0 && (*info).si_pid() != libc::getpid() }
}

/// Whether `sig` is ignored (the raw query, which also answers for 32 and 33).
pub fn is_ignored(sig: i32) -> bool {
    action(sig, None).is_some_and(|a| a.handler == libc::SIG_IGN)
}

/// Gives `sig` its default action, also 32 and 33 (which glibc's `signal` refuses).
/// Async-signal-safe.
pub fn set_default(sig: i32) {
    action(sig, Some(&KernelAction::default()));
}

/// Ends this process with `sig`'s default action, unblocked: by the raw calls, since glibc's
/// `sigaddset`, `pthread_sigmask` and `raise` refuse or drop 32 and 33. Returns only if the
/// default action does not end the process. Async-signal-safe.
pub fn raise_default(sig: i32) {
    set_default(sig);
    let unblock: u64 = 1 << (sig - 1);
    // SAFETY: rt_sigprocmask reads an 8-byte set; tgkill to this thread; no pointers kept.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_UNBLOCK,
            &unblock as *const u64,
            std::ptr::null_mut::<u64>(),
            8,
        );
        libc::syscall(libc::SYS_tgkill, libc::getpid(), libc::gettid(), sig);
    }
}

fn action(sig: i32, new: Option<&KernelAction>) -> Option<KernelAction> {
    let mut old = KernelAction::default();
    let new_ptr = new.map_or(std::ptr::null(), |a| a as *const KernelAction);
    // SAFETY: rt_sigaction reads `new` (if any) and writes `old`, both the kernel's layout,
    // with an 8-byte signal set.
    let r = unsafe { libc::syscall(libc::SYS_rt_sigaction, sig, new_ptr, &mut old as *mut KernelAction, 8) };
    (r == 0).then_some(old)
}

/// Gives signal `sig` the handler `handler` (SA_SIGINFO, SA_RESTART) by the raw call, which
/// also takes 32 and 33, with the restorer of `run`'s handlers (see `install`); false if there
/// is none yet. Call before `install`, which puts the pass-on test in front of it.
pub fn set_own_handler(sig: i32, handler: Handler) -> bool {
    let Some(restorer) = action(libc::SIGTERM, None).map(|a| a.restorer).filter(|&r| r != 0) else {
        return false;
    };
    let ours = KernelAction {
        handler: handler as usize,
        flags: libc::SA_SIGINFO as u64 | SA_RESTORER | libc::SA_RESTART as u64,
        restorer,
        mask: 0,
    };
    action(sig, Some(&ours)).is_some()
}

/// Puts the pass-on test in front of `hrt`'s own disposition of each shared signal but the
/// wake signal and SIGSYS; `passer` passes a signal on to the program. Called once, after
/// `run`'s handlers (whose restorer it borrows: the raw call needs one, and glibc's is the one
/// its own handlers return through).
pub fn install(passer: Handler) {
    PASS_ON.store(passer as usize, Ordering::SeqCst);
    let Some(restorer) = action(libc::SIGTERM, None).map(|a| a.restorer).filter(|&r| r != 0) else {
        return;
    };
    use libc::*;
    for sig in [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT, SIGPIPE, 32, 33] {
        let Some(old) = action(sig, None) else { continue };
        PREVIOUS[sig as usize].store(old.handler, Ordering::SeqCst);
        PREVIOUS_FLAGS[sig as usize].store(old.flags, Ordering::SeqCst);
        // SA_ONSTACK kept: Rust's stack-overflow report for SIGSEGV/SIGBUS needs its
        // alternate stack. No SA_RESTART for a signal that had none (33: glibc's).
        let keep = old.flags & (SA_ONSTACK as u64 | SA_RESTART as u64);
        // Every signal blocked while it runs: on the alternate stack (Rust's, a few KiB),
        // each other signal another process sent meanwhile would nest a frame there too,
        // and a burst of them overflowed it, which the host ends with SIGSEGV: a child
        // program that blocked every signal while its parent sent it all of them died so
        // (LTP's sighold02). They are handled, one at a time, once it returns.
        let ours = KernelAction {
            handler: on_shared_signal as *const () as usize,
            flags: SA_SIGINFO as u64 | SA_RESTORER | keep,
            restorer,
            mask: u64::MAX,
        };
        action(sig, Some(&ours));
    }
}

extern "C" fn on_shared_signal(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    if from_another_process(info) {
        pass_on(sig, info, ctx);
        return;
    }
    let idx = sig as usize;
    call_previous(sig, info, ctx, PREVIOUS[idx].load(Ordering::SeqCst), PREVIOUS_FLAGS[idx].load(Ordering::SeqCst));
}

/// Does what the disposition `previous` (a handler, or 0 for SIG_DFL, 1 for SIG_IGN) with
/// `flags` would have done with a signal a handler in front of it got. Async-signal-safe.
pub fn call_previous(
    sig: libc::c_int,
    info: *mut libc::siginfo_t,
    ctx: *mut libc::c_void,
    previous: usize,
    flags: u64,
) {
    match previous {
        0 => {
            // The default action, as without this handler: back to SIG_DFL, then a fault
            // happens again when its instruction runs again, and a sent signal is sent again.
            // SAFETY: info is valid (as above).
            if unsafe { (*info).si_code } <= 0 {
                raise_default(sig);
            } else {
                set_default(sig);
            }
        }
        1 => {}
        handler if flags & libc::SA_SIGINFO as u64 != 0 => {
            // SAFETY: the previous three-argument handler, called as the kernel would.
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { std::mem::transmute(handler) };
            f(sig, info, ctx);
        }
        handler => {
            // SAFETY: the previous one-argument handler, called as the kernel would.
            let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(handler) };
            f(sig);
        }
    }
}
