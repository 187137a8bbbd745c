//! Signals sent to `hrt` (Ctrl-C, SIGTERM, SIGHUP) go to the program once its kernel can take
//! them: the signal handler sets the signal's bit in the channel header and interrupts CPU 0;
//! the kernel raises it in the program (a handler runs; the default action ends the program
//! with 128 + signal). Before that (or with `--no-channel`) they stop the VM at once.
//!
//! A forked child's program has its parent's dispositions from the start: a signal that comes
//! after the host fork but before the child's kernel can take it (its VM is being made, its
//! kernel resumes) waits for the kernel, in `EARLY` until the channel is attached and then in
//! the channel's word, which the kernel looks at when it says it is ready. (Before, the child
//! `hrt` died of it, also when the program had a handler for it.)
//!
//! A kernel that never takes a signal (a vCPU stuck with interrupts masked: a kernel bug, or a
//! program that wrote the kernel's per-CPU interrupt flag, which one ring lets it do) would
//! leave `hrt` unkillable but by SIGKILL. So a signal whose default action ends the program
//! and which the kernel has not taken for `STUCK_AFTER` ends `hrt` itself, as before the
//! program ran (`watch`, from the thread that waits for the vCPUs): a healthy kernel takes a
//! signal within microseconds, and what the program then does with it is up to the program.

use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use hrt_abi::channel::{Channel, HostSigInfo, SignalQueue, TakenSignal, HOST_SIGNAL_VECTOR};

static WORD: AtomicPtr<AtomicU64> = AtomicPtr::new(std::ptr::null_mut());
/// The header's `signals_ready`: signals wait for the kernel's handler (set with `WORD`).
static READY: AtomicPtr<AtomicU32> = AtomicPtr::new(std::ptr::null_mut());
/// The header's `host_siginfo` (set with `WORD`): each signal's siginfo for the kernel.
static INFO: AtomicPtr<HostSigInfo> = AtomicPtr::new(std::ptr::null_mut());
/// The channel's queue of real-time signals (set with `WORD`): each instance kept, in order.
static QUEUE: AtomicPtr<SignalQueue> = AtomicPtr::new(std::ptr::null_mut());
static VM_FD: AtomicI32 = AtomicI32::new(-1);
/// Signals a forked child received before its channel was attached (bits as in the word).
static EARLY: AtomicU64 = AtomicU64::new(0);
/// How many signals besides SIGCHLD came to be passed to the program: a wait that sees it
/// change knows a signal came before the child it found (`passed_besides_sigchld`).
static PASSED: AtomicU64 = AtomicU64::new(0);
/// Per signal: how many deliveries set its bit in `WORD` (each a new wait for the kernel).
static DELIVERIES: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];
/// How often `watch` looks, and after how many looks at the same delivery still untaken the
/// kernel counts as stuck. Counted in looks, not wall time, so that the time `hrt` spends
/// stopped (Ctrl-Z) does not count.
pub const WATCH_PERIOD: std::time::Duration = std::time::Duration::from_millis(250);
const STUCK_AFTER: u32 = 8;
pub use crate::kept_signals::passed_on;

/// The first real-time signal (Linux's SIGRTMIN; the C library keeps the first two or three
/// for itself and calls the next one SIGRTMIN).
const REALTIME_FIRST: i32 = 32;

/// Signal `sig`'s bit in the channel's word: bit `sig`, and bit 0 for signal 64.
fn bit(sig: i32) -> u64 {
    1 << (sig & 63)
}

/// Whether `sig`'s default action ends a process (it is not ignored, a stop or a continue).
pub fn ends_by_default(sig: i32) -> bool {
    use libc::*;
    ![SIGCHLD, SIGCONT, SIGURG, SIGWINCH, SIGTSTP, SIGTTIN, SIGTTOU, SIGSTOP].contains(&sig)
}

/// The program has ended (its kernel reported its status): a signal sent to `hrt` from then on
/// finds a process that has exited, as on Linux it would find a zombie, and changes nothing;
/// before, a forked child's `hrt` died of it and its parent saw a killed child instead of the
/// program's exit status.
static PROGRAM_ENDED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Notes that the program has ended (`nr::SHUTDOWN`).
pub fn note_program_ended() {
    PROGRAM_ENDED.store(true, Ordering::SeqCst);
}

/// Whether the program has ended (see `PROGRAM_ENDED`).
pub fn program_ended() -> bool {
    PROGRAM_ENDED.load(Ordering::SeqCst)
}

/// `KVM_SIGNAL_MSI`: `_IOW(KVMIO, 0xa5, struct kvm_msi)`.
const KVM_SIGNAL_MSI: u64 =
    (1 << 30) | ((std::mem::size_of::<kvm_bindings::kvm_msi>() as u64) << 16) | (0xae << 8) | 0xa5;

/// From now on signals go to the program: `channel` is the registered channel, `vm_fd` the
/// VM's descriptor (both valid until `detach`).
pub fn attach(channel: &Channel, vm_fd: i32) {
    let header = &channel.header;
    VM_FD.store(vm_fd, Ordering::SeqCst);
    QUEUE.store(&channel.rt_signals as *const SignalQueue as *mut SignalQueue, Ordering::SeqCst);
    READY.store(&header.signals_ready as *const AtomicU32 as *mut AtomicU32, Ordering::SeqCst);
    INFO.store(header.host_siginfo.as_ptr() as *mut HostSigInfo, Ordering::SeqCst);
    WORD.store(&header.host_signals as *const AtomicU64 as *mut AtomicU64, Ordering::SeqCst);
    // After the store: a handler from now on finds the word; one before left its bit here
    // (its siginfo is lost: the program sees SI_USER from pid 0).
    let early = EARLY.swap(0, Ordering::SeqCst);
    if early != 0 {
        header.host_signals.fetch_or(early, Ordering::SeqCst);
        if header.signals_ready.load(Ordering::SeqCst) != 0 {
            // A kernel that said it is ready before the channel was attached (one that placed
            // the channel itself) has looked at the word already.
            interrupt();
        }
    }
}

/// Interrupts the kernel's CPU 0 with the host-signal vector; false if KVM refused.
fn interrupt() -> bool {
    let msi = kvm_bindings::kvm_msi { address_lo: 0xfee0_0000, data: HOST_SIGNAL_VECTOR as u32, ..Default::default() };
    // SAFETY: KVM_SIGNAL_MSI reads the struct we pass; the descriptor is the VM's.
    unsafe { libc::ioctl(VM_FD.load(Ordering::SeqCst), KVM_SIGNAL_MSI as _, &msi) >= 0 }
}

/// The VM is ending: signals stop it again.
pub fn detach() {
    WORD.store(std::ptr::null_mut(), Ordering::SeqCst);
}

/// Called from the signal handler: passes `sig` to the program, with what the program may see
/// of the host's `info` (may be null: `host_siginfo::words`); false if the program cannot take
/// it (then the caller stops the VM). Async-signal-safe: atomics and one ioctl.
pub fn deliver(sig: i32, info: *const libc::siginfo_t) -> bool {
    if let Some(child) = ended_child(sig, info) {
        // The hand-shake with a wait that may have passed this child's end on already
        // (`pass_reaped_sigchld`): noted first, then dropped if that wait left it to us to drop.
        note(&ENDS_PASSED, &ENDS_PASSED_NEXT, child);
        if take(&ENDS_MADE, child) {
            return true;
        }
    }
    deliver_now(sig, info)
}

/// The child whose end `info` reports, for SIGCHLD with CLD_EXITED, CLD_KILLED or CLD_DUMPED.
fn ended_child(sig: i32, info: *const libc::siginfo_t) -> Option<i32> {
    if sig != libc::SIGCHLD || info.is_null() {
        return None;
    }
    // SAFETY: a whole siginfo_t from the host or `pass_reaped_sigchld`: si_code at 8, si_pid
    // at 16.
    let (code, pid) = unsafe {
        let p = info as *const u8;
        ((p.add(8) as *const i32).read_unaligned(), (p.add(16) as *const i32).read_unaligned())
    };
    ((1..=3).contains(&code) && pid > 0).then_some(pid)
}

/// Children whose end's SIGCHLD a handler passed on (`ENDS_PASSED`), and those a wait passed on
/// in the host's stead (`ENDS_MADE`): rings of pids (0: free), oldest overwritten. A note
/// overwritten before the wait for its child (more than `ENDS` children ended meanwhile) makes
/// that wait pass on a second SIGCHLD for it, as if one more child had ended.
const ENDS: usize = 256;
static ENDS_PASSED: [AtomicI32; ENDS] = [const { AtomicI32::new(0) }; ENDS];
static ENDS_PASSED_NEXT: AtomicU32 = AtomicU32::new(0);
static ENDS_MADE: [AtomicI32; ENDS] = [const { AtomicI32::new(0) }; ENDS];
static ENDS_MADE_NEXT: AtomicU32 = AtomicU32::new(0);

fn note(ring: &[AtomicI32; ENDS], next: &AtomicU32, pid: i32) {
    let at = next.fetch_add(1, Ordering::SeqCst) as usize % ENDS;
    ring[at].store(pid, Ordering::SeqCst);
}

fn take(ring: &[AtomicI32; ENDS], pid: i32) -> bool {
    // (A plain load first: a failed compare-exchange is a locked write all the same.)
    ring.iter().any(|e| {
        e.load(Ordering::SeqCst) == pid && e.compare_exchange(pid, 0, Ordering::SeqCst, Ordering::SeqCst).is_ok()
    })
}

fn noted(ring: &[AtomicI32; ENDS], pid: i32) -> bool {
    ring.iter().any(|e| e.load(Ordering::SeqCst) == pid)
}

/// A wait took host child `pid`, which ended with `code` (CLD_EXITED, CLD_KILLED, CLD_DUMPED)
/// and `status`: its SIGCHLD goes to the program now, before the wait returns, as on Linux,
/// where it was pending before the child could be waited for. The host's is passed on if it
/// waits (`pass_pending_sigchld`); if a thread of `hrt` took it and has not passed it on yet
/// (preempted between the two on a loaded host: ~1 wait in 100), it is made here and the late
/// one dropped. Exactly once: the handler notes the end before it looks for a made one to
/// drop; the wait puts its mark before it looks for the note, and makes the signal unless it
/// saw the note and took its mark back itself (`deliver`).
pub fn pass_reaped_sigchld(pid: i32, code: i32, status: i32) {
    pass_pending_sigchld();
    if WORD.load(Ordering::SeqCst).is_null() || program_ended() || pid <= 0 {
        return;
    }
    note(&ENDS_MADE, &ENDS_MADE_NEXT, pid);
    if noted(&ENDS_PASSED, pid) && take(&ENDS_MADE, pid) {
        return;
    }
    // The siginfo the host's would have: si_code, then si_pid, si_uid and si_status.
    let mut words = [0u64; 16];
    words[0] = libc::SIGCHLD as u64;
    words[1] = code as u32 as u64;
    // SAFETY: getuid has no preconditions.
    words[2] = pid as u32 as u64 | (unsafe { libc::getuid() } as u64) << 32;
    words[3] = status as u32 as u64;
    deliver_now(libc::SIGCHLD, words.as_ptr() as *const libc::siginfo_t);
}

/// A forked child's program is in an exec of a host program (forward/host_exec.rs), from the
/// monitor's check (`EXEC_HOST`) until the host's execve or its failure. A signal that came
/// then went to a kernel that had sent the program's pending signals already and waited only
/// for the execve, which then dropped it: SIGTERM sent right after a fork, as `timeout` or a
/// shell's `kill $!` do, was lost in 3-5 rounds of 60 (the exec'd program ran on). Such signals
/// are kept in `LATE` instead and raised on the thread that execs (`EXEC_TID`, once it runs),
/// which blocks them: one the program blocks stays pending through the execve, as Linux keeps
/// it; the others have the new program's dispositions by then (`host_exec::Dispositions`) and
/// act as they would on it.
static EXEC_WINDOW: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// Signals (bit `sig - 1`) that came during the exec and are not raised yet.
static LATE: AtomicU64 = AtomicU64::new(0);
/// The exec thread's tid (0 until it runs).
static EXEC_TID: AtomicI32 = AtomicI32::new(0);
/// Signals raised on the exec thread, which the program gets back if the execve fails.
static RAISED: AtomicU64 = AtomicU64::new(0);

/// The monitor kept an exec of a host program (`EXEC_HOST`): signals wait for it (`LATE`).
pub fn begin_exec() {
    LATE.store(0, Ordering::SeqCst);
    RAISED.store(0, Ordering::SeqCst);
    EXEC_TID.store(0, Ordering::SeqCst);
    EXEC_WINDOW.store(true, Ordering::SeqCst);
    // Those that came before and wait in the channel for a kernel that is in the exec now
    // (its thread waits for this call's answer): theirs too (1 SIGTERM in 40 rounds was lost so).
    sweep_word_into_late();
    sweep_queue_into_late();
}

/// Moves the real-time signals waiting in the channel's queue to `LATE` (each instance is
/// taken once, by this or the kernel; instances of one signal merge there, and each is raised
/// on the exec thread with `tgkill`'s siginfo).
fn sweep_queue_into_late() {
    let queue = QUEUE.load(Ordering::SeqCst);
    if queue.is_null() {
        return;
    }
    // SAFETY: `attach` stored it, in guest RAM mapped until the process ends.
    let queue = unsafe { &*queue };
    // Bounded: a program could keep writing the queue's words.
    for _ in 0..hrt_abi::channel::RT_QUEUED {
        let Some(s) = queue.pop() else { break };
        if (1..=64).contains(&s.signo) {
            LATE.fetch_or(1 << (s.signo - 1), Ordering::SeqCst);
        }
    }
}

/// Moves the signals waiting in the channel's word to `LATE` (each bit once: the swap).
fn sweep_word_into_late() {
    let word = WORD.load(Ordering::SeqCst);
    if !word.is_null() {
        // SAFETY: `attach` stored it, in guest RAM mapped until the process ends.
        let bits = unsafe { (*word).swap(0, Ordering::SeqCst) };
        // Bit n of the word is signal n, bit 0 signal 64; LATE's bit n is signal n + 1.
        LATE.fetch_or(bits >> 1 | (bits & 1) << 63, Ordering::SeqCst);
    }
}

/// On the exec thread (raw system calls only, as there): it runs as `tid`, every signal
/// blocked; the signals that came meanwhile are raised on it.
pub fn exec_thread_runs(tid: i32) {
    EXEC_TID.store(tid, Ordering::SeqCst);
    raise_late();
}

/// Raises what `LATE` holds on the exec thread, if it runs. Called by it and by every handler
/// after it noted a signal, so that one of the two raises each.
fn raise_late() {
    let tid = EXEC_TID.load(Ordering::SeqCst);
    if tid == 0 {
        return;
    }
    let bits = LATE.swap(0, Ordering::SeqCst);
    if bits == 0 {
        return;
    }
    RAISED.fetch_or(bits, Ordering::SeqCst);
    // SAFETY: getpid and tgkill of a thread of this process; async-signal-safe raw calls.
    unsafe {
        let pid = crate::raw_sys::syscall3(libc::SYS_getpid, 0, 0, 0) as u64;
        for sig in (1..=64u64).filter(|s| bits & 1 << (s - 1) != 0) {
            crate::raw_sys::syscall3(libc::SYS_tgkill, pid, tid as u64, sig);
        }
    }
}

/// The exec failed (the program goes on in this VM) or never started: the signals that came
/// during it go to the program.
pub fn end_exec() {
    EXEC_WINDOW.store(false, Ordering::SeqCst);
    EXEC_TID.store(0, Ordering::SeqCst);
    let bits = LATE.swap(0, Ordering::SeqCst) | RAISED.swap(0, Ordering::SeqCst);
    for sig in (1..=64).filter(|s| bits & 1 << (s - 1) != 0) {
        deliver_now(sig, std::ptr::null());
    }
}

/// `deliver` without the hand-shake for children's ends.
fn deliver_now(sig: i32, info: *const libc::siginfo_t) -> bool {
    if !(1..=64).contains(&sig) {
        return false;
    }
    if EXEC_WINDOW.load(Ordering::SeqCst) {
        LATE.fetch_or(1 << (sig - 1), Ordering::SeqCst);
        raise_late();
        return true;
    }
    if sig != libc::SIGCHLD {
        PASSED.fetch_add(1, Ordering::SeqCst);
    }
    let forked = crate::vm::is_fork_child();
    let word = WORD.load(Ordering::SeqCst);
    if word.is_null() {
        if forked {
            // Not attached yet: `attach` passes it on.
            EARLY.fetch_or(bit(sig), Ordering::SeqCst);
        }
        return forked;
    }
    // SAFETY: `attach` stored it with `word`, in the same channel header.
    let ready = || unsafe { (*READY.load(Ordering::SeqCst)).load(Ordering::SeqCst) } != 0;
    if !forked && !ready() {
        // The kernel does not take the interrupt yet, and the program has not run.
        return false;
    }
    // A real-time signal keeps each instance, in the queue while it has room (each is then
    // raised, as Linux queues them); a full queue merges it into the word's one.
    if sig >= REALTIME_FIRST {
        let (code, w16, w24) = super::host_siginfo::words(sig, info);
        // SAFETY: `attach` stored it with `word`, into guest RAM mapped until the process ends.
        let queue = unsafe { &*QUEUE.load(Ordering::SeqCst) };
        if queue.push(TakenSignal { signo: sig, code, w16, w24 }) {
            // An exec began since the look above: as for the word below, `begin_exec` swept
            // the queue before the signal was in it, or sweeps it after.
            if EXEC_WINDOW.load(Ordering::SeqCst) {
                sweep_queue_into_late();
                raise_late();
                return true;
            }
            return !ready() || interrupt();
        }
    }
    // The siginfo goes in first, and only while the bit is clear: the kernel reads it before it
    // clears the bit, so it never sees one half written. A signal that comes again before the
    // kernel took the first keeps the first's siginfo (one instance, as a standard signal
    // pending twice on Linux).
    // SAFETY: `attach` stored pointers into guest RAM, mapped until the process ends; the
    // array has 64 entries.
    unsafe {
        if (*word).load(Ordering::SeqCst) & bit(sig) == 0 {
            let (code, w16, w24) = super::host_siginfo::words(sig, info);
            let slot = &*INFO.load(Ordering::SeqCst).add((sig & 63) as usize);
            slot.code.store(code, Ordering::SeqCst);
            slot.w16.store(w16, Ordering::SeqCst);
            slot.w24.store(w24, Ordering::SeqCst);
        }
    }
    // SAFETY: as above.
    let before = unsafe { (*word).fetch_or(bit(sig), Ordering::SeqCst) };
    if before & bit(sig) == 0 {
        DELIVERIES[(sig & 63) as usize].fetch_add(1, Ordering::SeqCst);
    }
    // An exec began between the look at EXEC_WINDOW above and the bit: `begin_exec` swept the
    // word before the bit was in it, and no kernel reads it now (a blocked SIGUSR1 sent while
    // a forked child exec'd a host program was lost about once in 1,000 children). Either its
    // sweep took the bit or this one does (it set the flag before it swept).
    if EXEC_WINDOW.load(Ordering::SeqCst) {
        sweep_word_into_late();
        raise_late();
        return true;
    }
    // A forked child's kernel that is not ready yet looks at the word when it is (it sets
    // `signals_ready` before it looks, as this sets the bit before it reads the flag).
    if !ready() {
        return true;
    }
    interrupt()
}

/// Passes on at once, from the calling thread, a SIGCHLD that the host has for `hrt` and no
/// thread has taken yet (what `deliver` does for it in the handler). A wait calls it after it
/// looked at the children: on Linux a child's SIGCHLD is pending before the child can be
/// waited for, so the parent's handler has run by the time its waitpid returns the child; here
/// the host's signal reached the program whenever a thread of `hrt` got to it, on a loaded
/// host after the wait had returned, and then cancelled the program's next wait (the kernel
/// raises what the channel holds before the wait returns: `linux::calls::procs`).
pub fn pass_pending_sigchld() {
    if WORD.load(Ordering::SeqCst).is_null() || program_ended() {
        return;
    }
    // SAFETY: an empty set, then one signal added; a zero timeout only looks (Linux takes a
    // pending signal of the set whether or not this thread blocks it).
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let none = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        if libc::sigtimedwait(&set, &mut info, &none) == libc::SIGCHLD {
            deliver(libc::SIGCHLD, &info);
        }
    }
}

/// How many signals other than SIGCHLD `hrt` received for the program so far. A child's
/// SIGCHLD comes with its being waitable, as on Linux; any other signal seen to come during a
/// wait came before the child the wait then found (`forward::procs`).
pub fn passed_besides_sigchld() -> u64 {
    PASSED.load(Ordering::SeqCst)
}

/// Whether a signal other than SIGCHLD reached `hrt` and still waits for the kernel to take it
/// (in the word or the queue). A wait that finds a child while one does answers for the
/// signal first (`forward::procs`), also when the signal came before the wait started: on a
/// loaded host the kernel's CPU may take it long after it reached `hrt`.
pub fn untaken_besides_sigchld() -> bool {
    let word = WORD.load(Ordering::SeqCst);
    if word.is_null() {
        return false;
    }
    // SAFETY: `attach` stored both, into guest RAM mapped until the process ends.
    let (bits, queue) = unsafe { ((*word).load(Ordering::SeqCst), &*QUEUE.load(Ordering::SeqCst)) };
    bits & !bit(libc::SIGCHLD) != 0 || queue.has_signals()
}

/// What `watch` saw of each terminating signal: the delivery it waits on, and for how many
/// looks. Only the waiting thread uses it.
static SEEN: std::sync::Mutex<[(u64, u32); 64]> = std::sync::Mutex::new([(0, 0); 64]);

/// Looks at the signals passed to the kernel (every `WATCH_PERIOD`, from the thread that waits
/// for the vCPUs): one that ends the program and that the kernel has left untaken for
/// `STUCK_AFTER` looks ends `hrt` as the signal would have before the program ran, with a line
/// that says why.
pub fn watch() {
    let word = WORD.load(Ordering::SeqCst);
    if word.is_null() {
        return;
    }
    // SAFETY: as in `deliver`.
    let bits = unsafe { (*word).load(Ordering::SeqCst) };
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    for sig in (1..=64).filter(|&s| crate::kept_signals::reaches_program(s) && ends_by_default(s)) {
        let entry = &mut seen[(sig & 63) as usize];
        if bits & bit(sig) == 0 {
            *entry = (0, 0);
            continue;
        }
        let delivery = DELIVERIES[(sig & 63) as usize].load(Ordering::SeqCst);
        *entry = if entry.0 == delivery { (delivery, entry.1 + 1) } else { (delivery, 1) };
        if entry.1 >= STUCK_AFTER {
            end_stuck(sig);
        }
    }
    drop(seen);
    // SAFETY: `attach` stored it with `word`, into guest RAM mapped until the process ends.
    let queue = unsafe { &*QUEUE.load(Ordering::SeqCst) };
    let mut seen = QUEUE_SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if !queue.has_signals() {
        *seen = (0, 0);
        return;
    }
    // The oldest signal in the queue (every real-time signal ends a program by default).
    let oldest = queue.dequeue.load(Ordering::SeqCst);
    *seen = if seen.0 == oldest && seen.1 > 0 { (oldest, seen.1 + 1) } else { (oldest, 1) };
    if seen.1 >= STUCK_AFTER {
        let sig = queue.cells[oldest as usize % hrt_abi::channel::RT_QUEUED].signo.load(Ordering::SeqCst);
        if (REALTIME_FIRST..=64).contains(&sig) && crate::kept_signals::reaches_program(sig) {
            end_stuck(sig);
        }
    }
}

/// What `watch` saw of the queue: the position of its oldest signal, and for how many looks.
static QUEUE_SEEN: std::sync::Mutex<(u64, u32)> = std::sync::Mutex::new((0, 0));

/// Ends `hrt` for signal `sig`, which the kernel has not taken (`watch`).
fn end_stuck(sig: i32) -> ! {
    say_stuck(sig);
    crate::vm::say_where_vcpus_are();
    if crate::vm::is_fork_child() || crate::run::ends_by_sigint(sig) {
        crate::vm::die_of(sig);
    }
    // SAFETY: _exit ends the process at once; the monitor buffers no output.
    unsafe { libc::_exit(128 + sig) }
}

/// One line on stderr, without allocating.
fn say_stuck(sig: i32) {
    let mut digits = [0u8; 20];
    crate::signal_safe::write_stderr(&[
        b"hrt: the kernel has not taken signal ",
        crate::signal_safe::decimal(sig as u64, &mut digits),
        b" for two seconds (a vCPU stuck?): it ends hrt\n",
    ]);
}

/// This module's global locks, taken without waiting for a fork (`vm::fork`): false if
/// another thread holds one.
pub(crate) fn hold_for_fork(held: &mut crate::vm::fork::Held) -> bool {
    crate::vm::fork::try_hold(held, &SEEN) && crate::vm::fork::try_hold(held, &QUEUE_SEEN)
}
