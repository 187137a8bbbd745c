//! Signal state and delivery: pending signals (per thread and process-wide), the alternate
//! stacks, and delivery to handlers on the way back to the program (an rt_sigframe laid out as
//! Linux x86-64 builds it, see `frame`), rt_sigreturn, and the default actions.

pub mod deliver;
pub mod fpstate;
pub mod frame;
pub mod host;
pub mod host_mirror;
pub mod state;
pub mod timers;

pub use deliver::{deliver_fault, on_return, sigreturn};
pub use state::{
    alt_stack, bit, handler, ignored_by_default, is_program_thread, send_process, send_thread, set_alt_stack,
    start_state, thread_exited, SigInfo,
};

pub const SIG_DFL: u64 = 0;
pub const SIG_IGN: u64 = 1;
pub const SIGKILL: u64 = 9;
pub const SIGPIPE: u64 = 13;
pub const SIGCHLD: u64 = 17;
pub const SIGSTOP: u64 = 19;
pub const SIGXFSZ: u64 = 25;

pub const SA_SIGINFO: u64 = 4;
pub const SA_ONSTACK: u64 = 0x0800_0000;
pub const SA_RESTART: u64 = 0x1000_0000;
pub const SA_NODEFER: u64 = 0x4000_0000;
pub const SA_RESETHAND: u64 = 0x8000_0000;
pub const SA_RESTORER: u64 = 0x0400_0000;

/// Returned by an interrupted system call that SA_RESTART restarts (EINTR otherwise); never
/// seen by the program.
pub const ERESTARTSYS: u32 = 512;

/// Returned by an interrupted system call that starts again after the handler whatever
/// SA_RESTART says (FUTEX_LOCK_PI: a lock call never answers EINTR); never seen by the program.
pub const ERESTARTNOINTR: u32 = 513;

/// Set in the number `state::note_restart` keeps for a call interrupted with ERESTARTNOINTR.
pub const RESTART_ALWAYS: u64 = 1 << 63;

/// si_code values.
pub const SI_USER: i32 = 0;
pub const SI_KERNEL: i32 = 0x80;
pub const SI_TKILL: i32 = -6;
pub const SI_TIMER: i32 = -2;

/// Whether `sig`'s default action stops the process (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU).
pub fn stops_by_default(sig: u64) -> bool {
    matches!(sig, 19..=22)
}

/// Stops the program as Linux stops a process on stop signal `sig`: `hrt` stops itself on the
/// host with the same signal (so the shell sees a job stopped by it, and every vCPU stops with
/// it) and the call returns once it is continued (SIGCONT), which then also reaches the
/// program like any signal sent to `hrt`.
pub fn stop_process(sig: u64) {
    crate::arch::hypercall::call(hrt_abi::nr::STOP, &[sig]);
}

/// Signals that can be neither caught, blocked nor ignored.
pub const UNBLOCKABLE: u64 = (1 << (SIGKILL - 1)) | (1 << (SIGSTOP - 1));

/// For kernel code that waits on the program's behalf in its thread and on its stack (the
/// OpenMP runtime's spins and sleeps): delivers the signals the thread would take on its way
/// back to the program, as a program blocked in a futex wait takes them (the wait ends, the
/// handler runs, the program waits again). A signal's handler may be what ends the wait
/// (`omp_fulfill_event` from a handler ends a detached task). Interrupts do not deliver signals
/// in kernel code, so this makes a system call (getpid) whose way back delivers them.
pub fn take_while_waiting() {
    if state::deliverable_here() {
        // SAFETY: the current thread's record is alive while it runs; only it sets the flag.
        let t = unsafe { &mut *crate::sched::current() };
        t.kernel_call = true;
        crate::arch::syscall::call_as_program(linux_raw_sys::general::__NR_getpid as u64);
        t.kernel_call = false;
    }
}

/// Whether a trap of program code must return through ring 3: an fpstate to write, or an
/// rseq fence to pass (`rseq::at_edge` runs there).
fn ring3_work_due() -> bool {
    fpstate::due() || crate::linux::rseq::fence_due()
}

/// Registers the delivery hook with the trap code; once, at boot.
pub fn init() {
    crate::arch::traps::set_user_return_hook(on_return);
    crate::arch::traps::set_ring3_work_hook(ring3_work_due, fpstate::complete_in_ring3);
}
