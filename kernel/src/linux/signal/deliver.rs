//! Delivery on the way back to the program: the default action, or a handler frame on the
//! program's (or the alternate) stack exactly as Linux x86-64 builds it; rt_sigreturn undoes it.

use core::sync::atomic::{AtomicU64, Ordering};

use super::fpstate;
use super::frame::{self, FaultRegs, UContext};
use super::state::{self, SigInfo, PENDING_COUNT, SIGNALS};
use super::*;
use crate::arch::traps::TrapFrame;
use crate::arch::x86_64::fpu;
use crate::linux::errno::SysResult;
use crate::linux::process::PROCESS;
use crate::linux::{fault, uaccess};
use crate::sched;

const SS_AUTODISARM: u64 = 1 << 31;

/// Threads inside rt_sigsuspend (their caller's mask waits in `saved_mask`).
pub static SUSPENDED: AtomicU64 = AtomicU64::new(0);

fn current() -> &'static mut crate::sched::Thread {
    // SAFETY: the current thread's record is alive while it runs; only it changes its mask.
    unsafe { &mut *sched::current() }
}

/// Called on every return to the program (after a system call, a fault or an interrupt):
/// acts on the pending signals the thread does not block, setting up handler frames.
pub fn on_return(frame: &mut TrapFrame) {
    // A safe point for another CPU's fork (see sched::freeze).
    crate::sched::freeze::check();
    // Pages of a file another process shrank are hidden before the program touches them again.
    crate::linux::shared_files::after_host_shrink();
    // A register site patched meanwhile (the safe point above is where the other CPUs wait
    // while a site is patched) may have this thread's rip in the middle of its new `call`.
    crate::linux::regsite::fix_resume_point(frame);
    super::timers::fire_due();
    if PENDING_COUNT.load(Ordering::SeqCst) == 0
        && SUSPENDED.load(Ordering::SeqCst) == 0
        && state::RESTARTS.load(Ordering::SeqCst) == 0
    {
        return;
    }
    let t = current();
    let tid = t.tid;
    if !t.is_user {
        return;
    }
    // Another thread's execve ends this one.
    crate::linux::exec::ends_for_exec(tid);
    // A vfork child before its exec takes no signal sent to the program.
    let spawn_child = crate::linux::calls::procs::child_ctx().is_some();
    loop {
        let taken = {
            let mut s = SIGNALS.lock();
            let own = s.thread(tid).pending.take(t.sigmask);
            if spawn_child {
                own
            } else {
                own.or_else(|| s.shared.take(t.sigmask))
            }
        };
        let Some(info) = taken else { break };
        PENDING_COUNT.fetch_sub(1, Ordering::SeqCst);
        let sig = info.signo as u64;
        crate::linux::signalfd::pending_removed(state::bit(sig));
        let act = PROCESS.sigactions.lock()[sig as usize];
        match act[0] {
            SIG_IGN if sig != SIGKILL && sig != super::SIGSTOP => {}
            SIG_DFL | SIG_IGN if super::stops_by_default(sig) => super::stop_process(sig),
            SIG_DFL | SIG_IGN if sig == SIGKILL || !ignored_by_default(sig) => {
                let stop = crate::linux::core_dump::Stop { frame, code: info.code };
                fault::terminate_at(sig as i32, None, Some(stop))
            }
            SIG_DFL => {}
            _ => setup(frame, info, act, FaultRegs::default()),
        }
    }
    // A call interrupted for a signal no handler took (another thread took it, or it was
    // ignored meanwhile) starts again, as on Linux.
    if let Some(nr) = state::take_restart(tid) {
        restart(frame, nr & !super::RESTART_ALWAYS);
    }
    // rt_sigsuspend's caller mask comes back once no handler took it over.
    let mut s = SIGNALS.lock();
    if let Some(mask) = s.thread(tid).saved_mask.take() {
        t.sigmask = mask;
        SUSPENDED.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A synchronous signal from a fault: runs the handler if there is one and the thread does not
/// block the signal (Linux forces the default action otherwise). Returns false when the caller
/// must end the program.
pub fn deliver_fault(frame: &mut TrapFrame, info: SigInfo, regs: FaultRegs) -> bool {
    let sig = info.signo as u64;
    let act = PROCESS.sigactions.lock()[sig as usize];
    if act[0] <= SIG_IGN || current().sigmask & bit(sig) != 0 {
        return false;
    }
    setup(frame, info, act, regs);
    true
}

/// Sets up a handler for `info`: builds the rt_sigframe and points the registers at the
/// handler (rdi = signal, rsi = &siginfo, rdx = &ucontext, rsp = frame with the return address
/// sa_restorer). A frame that cannot be set up (no sa_restorer, no room on the alternate
/// stack, memory that cannot be written) is Linux's `force_sigsegv`: the signal is lost and a
/// SIGSEGV goes to its handler if the program has one (LTP's signal06 toggles its alternate
/// stack read-only while handlers run: its SIGSEGV handler runs, the program goes on), and
/// for a SIGSEGV's own frame ends the program.
fn setup(regs: &mut TrapFrame, info: SigInfo, act: [u64; 4], fault: FaultRegs) {
    let t = current();
    let sig = info.signo as u64;
    let flags = act[1];
    // An interrupted system call: EINTR (already in rax), or restarted after the handler.
    if let Some(nr) = state::take_restart(t.tid) {
        if nr & super::RESTART_ALWAYS != 0 || flags & SA_RESTART != 0 && restarts_after_handler(nr) {
            restart(regs, nr & !super::RESTART_ALWAYS);
        }
    }
    // A rewritten spin-wait loop's slot or stub: the frame names the loop's own code.
    crate::linux::spin_sites::on_signal(regs);
    // A critical section the signal interrupted is left for its abort address, which the
    // frame saves (Linux's rseq_signal_deliver).
    crate::linux::rseq::on_signal(regs);
    let (saved, [ss_sp, ss_size, ss_flags]) = {
        let mut s = SIGNALS.lock();
        let ts = s.thread(t.tid);
        let saved = ts.saved_mask.take();
        if saved.is_some() {
            SUSPENDED.fetch_sub(1, Ordering::SeqCst);
        }
        (saved, ts.alt)
    };
    let on_alt = ss_size != 0 && regs.rsp > ss_sp && regs.rsp - ss_sp <= ss_size;
    let mut sp = regs.rsp.wrapping_sub(128); // the red zone
    let entering = flags & SA_ONSTACK != 0 && ss_size != 0 && !on_alt;
    if entering {
        sp = ss_sp + ss_size;
    }
    // The frame keeps the flags as they were set, as Linux's does (0 for a stack never set).
    let uc_stack_flags = ss_flags;
    let xsave = fpu::uses_xsave();
    let math = fpstate::frame_size();
    let fp = sp.wrapping_sub(math) & !63;
    let addr = (fp.wrapping_sub(frame::FRAME_SIZE) & !15).wrapping_sub(8);
    let len = fp + math - addr;
    // A frame on the alternate stack that does not fit on it: SIGSEGV, as Linux's
    // get_sigframe (nested handlers ran on below its bottom, over live frames, and hung).
    let fits_alt = addr > ss_sp && addr - ss_sp <= ss_size;
    if (on_alt || entering) && !fits_alt {
        return frame_failed(regs, sig);
    }
    if flags & SA_RESTORER == 0 || uaccess::check_write(addr, len).and(uaccess::still_there(addr, len)).is_err() {
        return frame_failed(regs, sig);
    }
    if regs.cs & 3 == 3 && act[0] >= uaccess::USER_END {
        // IRETQ to a non-canonical handler would fault in the kernel (a KERNEL PANIC, #NP on
        // PVM); Linux's IRET fault ends the program with SIGSEGV.
        fault::terminate(11, None);
    }
    let old_mask = saved.unwrap_or(t.sigmask);
    let uc = UContext {
        flags: frame::UC_SIGCONTEXT_SS | frame::UC_STRICT_RESTORE_SS | if xsave { frame::UC_FP_XSTATE } else { 0 },
        stack: [ss_sp, uc_stack_flags, ss_size],
        regs,
        fault,
        fpstate: fp,
        mask: old_mask,
    };
    // The handler starts with a clean FPU, as on Linux (`save_to_frame`).
    let written = uaccess::write(addr, act[2])
        .and_then(|_| uaccess::write_bytes(addr + frame::UC_OFFSET, &uc.bytes()))
        .and_then(|_| uaccess::write_bytes(addr + frame::INFO_OFFSET, &info.bytes()))
        .and_then(|_| fpstate::save_to_frame(t.tid, fp));
    if written.is_err() {
        return frame_failed(regs, sig);
    }
    // Delivered: an SS_AUTODISARM stack is disarmed for the handler whether or not it runs on
    // it (Linux's `signal_delivered`); the frame keeps it for sigreturn to restore.
    if ss_flags & SS_AUTODISARM != 0 {
        state::set_alt_stack(t.tid, [0, 0, state::SS_DISABLE]);
    }
    let mut mask = t.sigmask | act[3];
    if flags & SA_NODEFER == 0 {
        mask |= bit(sig);
    }
    t.sigmask = mask & !UNBLOCKABLE;
    if flags & SA_RESETHAND != 0 {
        PROCESS.sigactions.lock()[sig as usize][0] = SIG_DFL;
    }
    regs.rdi = sig;
    regs.rsi = addr + frame::INFO_OFFSET;
    regs.rdx = addr + frame::UC_OFFSET;
    regs.rax = 0;
    regs.rip = act[0];
    regs.rsp = addr;
    regs.rflags &= !(0x100 | 0x400 | 0x1_0000); // TF, DF, RF
}

/// Linux's `force_sigsegv(sig)` after the frame for `sig` could not be set up: SIGSEGV
/// (SI_KERNEL) to its handler where there is one and the thread does not block it, else (and
/// for SIGSEGV's own frame) the end of the program.
fn frame_failed(regs: &mut TrapFrame, sig: u64) {
    const SIGSEGV: u64 = 11;
    let info = SigInfo { signo: SIGSEGV as i32, code: SI_KERNEL, ..SigInfo::EMPTY };
    if sig == SIGSEGV || !deliver_fault(regs, info, FaultRegs::default()) {
        fault::terminate(SIGSEGV as i32, None);
    }
}

/// Whether call `nr`, interrupted for a handler with SA_RESTART, starts again. Linux never
/// restarts the descriptor waits after a handler, whatever SA_RESTART says (signal(7)): poll,
/// select, epoll_wait and their variants answer EINTR, and so do the System V waits (semop,
/// semtimedop, msgsnd, msgrcv).
#[allow(non_upper_case_globals)] // linux-raw-sys names the numbers __NR_poll etc.
fn restarts_after_handler(nr: u64) -> bool {
    use linux_raw_sys::general::*;
    !matches!(
        nr as u32,
        __NR_poll
            | __NR_ppoll
            | __NR_select
            | __NR_pselect6
            | __NR_epoll_wait
            | __NR_epoll_pwait
            | __NR_epoll_pwait2
            | __NR_semop
            | __NR_semtimedop
            | __NR_msgsnd
            | __NR_msgrcv
    )
}

/// Points the program back at system call `nr` (the site before rip, of whichever kind).
fn restart(regs: &mut TrapFrame, nr: u64) {
    crate::linux::rewrite::restart(regs, nr);
}

/// rt_sigreturn: restores the registers, mask and FPU state saved in (and perhaps changed
/// through) the ucontext at the stack pointer (the handler's `ret` popped the return address).
pub fn sigreturn(regs: &mut TrapFrame) -> SysResult {
    let Ok(uc) = uaccess::read::<[u8; frame::UC_SIZE]>(regs.rsp) else { fault::terminate(11, None) };
    let r = frame::parse(&uc);
    let (rsp, rip) = (r.gregs[15], r.gregs[16]);
    let frame_sp = regs.rsp;
    // IRETQ to a non-canonical address would fault in the kernel. Linux's return faults too,
    // and the fault is the program's, at the restored registers: a SIGSEGV (bad rip) or SIGBUS
    // (bad rsp) its handler may catch (the Linux kernel's x86 selftest sysret_rip); it ended
    // the program here.
    let bad = regs.cs & 3 == 3 && (rip >= uaccess::USER_END || rsp >= uaccess::USER_END);
    frame::restore_regs(regs, &r.gregs);
    current().sigmask = r.mask & !UNBLOCKABLE;
    // The alternate stack comes back as uc_stack says, with sigaltstack's rules at the stack
    // pointer of the return, the frame's (Linux's restore_altstack; its refusals change
    // nothing): an SS_AUTODISARM stack disarmed for the handler, a change the handler made, or
    // one it wrote into uc_stack; a handler running on the alternate stack changes nothing
    // (EPERM), as natively.
    let _ = state::change_alt_stack(current().tid, frame_sp, r.stack);
    fpstate::restore_from_frame(r.fpstate);
    if bad {
        // A canonical address in the kernel's half: the return succeeds and the fetch there
        // faults (SEGV_MAPERR at it); a non-canonical one: the return's #GP (SI_KERNEL).
        const SEGV_MAPERR: i32 = 1;
        let canonical = ((rip as i64) << 16 >> 16) as u64 == rip;
        let (sig, code, addr, fault) = if rip < uaccess::USER_END {
            (7, SI_KERNEL, 0, FaultRegs { err: 0, trapno: 12, cr2: 0 })
        } else if canonical {
            (11, SEGV_MAPERR, rip, FaultRegs { err: 0x14, trapno: 14, cr2: rip })
        } else {
            (11, SI_KERNEL, 0, FaultRegs { err: 0, trapno: 13, cr2: 0 })
        };
        let info = SigInfo { signo: sig, code, w16: addr, ..SigInfo::EMPTY };
        if !deliver_fault(regs, info, fault) {
            fault::terminate(sig, None);
        }
    }
    Ok(regs.rax)
}
