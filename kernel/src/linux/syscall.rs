//! System-call dispatch from the ring-3 entry: route through the table, run a local handler or
//! forward to the monitor, trace with `--strace`.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::errno::{to_ret, EFBIG, ENOSYS, EPIPE};
use super::table::{route, Route};
use crate::arch::traps::TrapFrame;

static STRACE: AtomicBool = AtomicBool::new(false);

pub fn set_strace(on: bool) {
    STRACE.store(on, Ordering::Relaxed);
}

/// Forwards system call `nr` to the monitor, which performs it on the host: through the shared
/// channel without a VM exit, or by hypercall where there is none (`--no-channel`). Files
/// mapped since the last forwarded call are identified first, while their descriptors still
/// name them (`past_eof::identify`).
pub fn forward(nr: u64, a: [u64; 6]) -> i64 {
    forward_then(nr, a, super::past_eof::before_forward)
}

/// `forward` without identifying mapped files first: `past_eof`'s own `fstat`, made while it
/// identifies them.
pub fn forward_unhooked(nr: u64, a: [u64; 6]) -> i64 {
    forward_then(nr, a, || {})
}

/// Counts the call as started (`filemap`), runs `first`, then forwards it.
fn forward_then(nr: u64, a: [u64; 6], first: impl FnOnce()) -> i64 {
    super::filemap::forward_started();
    first();
    let ret = loop {
        let ret = match super::channel::call(nr, a) {
            Some(ret) => ret,
            None => {
                let nr = nr | call_flags(nr);
                crate::arch::hypercall::call(hrt_abi::nr::SYSCALL, &[nr, a[0], a[1], a[2], a[3], a[4], a[5]])
            }
        };
        // Signals another process sent before this call's answer (the monitor passed them on
        // before it answered a `SIGNALS_WATCHED` call) are pending before the program sees
        // the answer, as on Linux: raised now rather than by CPU 0's interrupt, later.
        super::channel::raise_waiting_host_signals();
        if ret != -hrt_abi::channel::SIGNAL_CAME_FIRST || answers_itself(nr) {
            break ret;
        }
        // A signal sent to `hrt` interrupted the host call first: taken now, it ends the call
        // as Linux would if it is for this thread (EINTR or a restart, by its action);
        // otherwise the call is made again. SIGCHLD does not count (as for a wait).
        super::channel::raise_host_signals();
        if super::signal::state::deliverable_here_besides(super::signal::SIGCHLD) {
            break -(super::signal::ERESTARTSYS as i64);
        }
    };
    super::filemap::forward_done();
    ret
}

/// Whether the caller of forwarded call `nr` answers `SIGNAL_CAME_FIRST` itself: a wait, whose
/// answer for a signal that came first must not look at the children again
/// (`calls::procs::wait_after_signals`).
fn answers_itself(nr: u64) -> bool {
    use hrt_abi::process as op;
    let plain = nr & ((1 << op::CONTEXT_SHIFT) - 1);
    plain == op::WAIT4 || plain == op::WAITID
}

/// The flags forwarded call `nr` carries in its number: `ttou_flag`'s, and
/// `process::SIGNALS_WATCHED` while the program may see when a signal came
/// (`signal::state::signals_watched`) and the call's answer may tell it what another process
/// did (not `only_sends`).
pub fn call_flags(nr: u64) -> u64 {
    // SAFETY: the current thread's record is alive while it runs; only it changes its mask.
    let mask = unsafe { (*crate::sched::current()).sigmask };
    let watched = super::signal::state::signals_watched(mask) && !only_sends(nr);
    ttou_flag(nr) | if watched { hrt_abi::process::SIGNALS_WATCHED } else { 0 }
}

/// Whether forwarded call `nr` only sends or lets go (writes, sends, close, lseek, fsync): its
/// answer tells nothing of what another process did since its signal, so it need not wait
/// for the monitor to pass that signal on (~0.3 us a call on the AMD host).
#[allow(non_upper_case_globals)] // linux-raw-sys names the numbers __NR_write etc.
fn only_sends(nr: u64) -> bool {
    use linux_raw_sys::general::*;
    matches!(
        nr as u32,
        __NR_write
            | __NR_writev
            | __NR_pwrite64
            | __NR_pwritev
            | __NR_pwritev2
            | __NR_sendto
            | __NR_sendmsg
            | __NR_sendmmsg
            | __NR_close
            | __NR_lseek
            | __NR_fsync
            | __NR_fdatasync
    )
}

/// `process::TTOU_BLOCKED` and `process::TTIN_BLOCKED` for forwarded Linux call `nr` if the
/// calling thread blocks SIGTTOU or SIGTTIN (the monitor then blocks SIGTTOU while it makes
/// the call, or answers a background read of the terminal with EIO), else 0.
pub fn ttou_flag(nr: u64) -> u64 {
    const SIGTTIN: u64 = 21;
    const SIGTTOU: u64 = 22;
    let linux_call = nr & ((1 << hrt_abi::process::CONTEXT_SHIFT) - 1) < hrt_abi::process::CHILD_BEGIN;
    if !linux_call {
        return 0;
    }
    // SAFETY: the current thread's record is alive while it runs; only it changes its mask.
    let mask = unsafe { (*crate::sched::current()).sigmask };
    let blocks = |sig: u64| mask & (1 << (sig - 1)) != 0;
    (if blocks(SIGTTOU) { hrt_abi::process::TTOU_BLOCKED } else { 0 })
        | (if blocks(SIGTTIN) { hrt_abi::process::TTIN_BLOCKED } else { 0 })
}

/// Whether forwarded call `nr` with `args`, which failed with EPIPE, raises SIGPIPE: writes to
/// a pipe without readers (vmsplice and tee too), and writes and sends (without MSG_NOSIGNAL)
/// on a stream socket; a datagram or sequenced-packet socket's EPIPE raises none, as Linux's
/// `unix_dgram_sendmsg` (`broken_pipe::signals`).
#[allow(non_upper_case_globals)] // linux-raw-sys names the numbers __NR_write etc.
fn raises_sigpipe(nr: u64, args: &[u64; 6]) -> bool {
    use linux_raw_sys::general::*;
    const MSG_NOSIGNAL: u64 = 0x4000;
    let written = match nr as u32 {
        __NR_vmsplice | __NR_tee => return true,
        __NR_write | __NR_writev | __NR_pwrite64 | __NR_pwritev | __NR_sendfile => args[0],
        __NR_splice => args[2],
        __NR_sendto | __NR_sendmmsg if args[3] & MSG_NOSIGNAL == 0 => args[0],
        __NR_sendmsg if args[2] & MSG_NOSIGNAL == 0 => args[0],
        _ => return false,
    };
    super::calls::broken_pipe::signals(written)
}

/// A forwarded call, made for the program: a wait with its own signal mask (ppoll, pselect6,
/// epoll_pwait) holds it meanwhile, EPIPE raises SIGPIPE where Linux does, and a duplicated
/// signalfd stays one.
fn forward_call(nr: u64, args: &[u64; 6]) -> (i64, char) {
    if let Some(ret) = super::private_files::before_forward(nr, args) {
        return (ret, 'F');
    }
    let masked = super::calls::signal::begin_masked_wait(nr, args);
    let wait = super::calls::time_left::begin(nr, args);
    let ret = forward(super::calls::procs::tagged(nr), *args);
    if let Some(w) = wait {
        super::calls::time_left::end(w, ret);
    }
    if masked {
        super::calls::signal::end_masked_wait(ret);
    }
    if ret == -(EPIPE as i64) && raises_sigpipe(nr, args)
        || ret > 0 && super::calls::short_pipe_write::readers_left(nr, args, ret)
    {
        super::calls::signal::broken_pipe();
    }
    if ret == -(EFBIG as i64) && super::calls::info::file_size_limited() {
        // Past RLIMIT_FSIZE (the monitor's host process has the program's): SIGXFSZ for the
        // writing thread, as Linux sends it. (The host's, sent to `hrt`, is dropped there.)
        super::calls::signal::file_too_big();
    }
    super::signalfd::after_forward(nr, args, ret);
    super::private_files::after_forward(nr, args, ret);
    if ret >= 0 && super::shared_files::may_shrink_files(nr, args) && super::shared_files::any_files() {
        super::shared_files::recheck_file_ends();
    }
    (ret, 'F')
}

/// Called by the SYSCALL entry with the program's registers; leaves the result in rax.
pub extern "C" fn dispatch(frame: &mut TrapFrame) {
    let by_call = crate::arch::ring3::entered_by_call();
    crate::arch::irq::enable();
    if by_call && crate::arch::spin_yield::is_yield_call(frame.rip) {
        // A rewritten spin-wait loop's round found a thread ready on this CPU
        // (`spin_sites`): not the program's call.
        super::spin_sites::yield_round();
        // Perhaps moved meanwhile: rseq's CPU.
        super::rseq::at_syscall_end();
        return;
    }
    if !super::rewrite::on_syscall(frame, by_call) {
        super::rewrite::null_call_fault(frame);
        return;
    }
    if let Some(ret) = super::fastcall::take_stash() {
        // Served by the fast path, which found a signal to deliver on the way back.
        frame.rax = ret as u64;
        return;
    }
    // Linux takes the number as an int: the upper 32 bits of rax select nothing
    // ((1 << 32) | __NR_read is read; x86 selftest syscall_numbering).
    let nr = frame.rax as u32 as u64;
    let args = [frame.rdi, frame.rsi, frame.rdx, frame.r10, frame.r8, frame.r9];
    let (name, nargs, how) = route(nr);
    let tracing = STRACE.load(Ordering::Relaxed);
    if super::seccomp::active() {
        match super::seccomp::check(frame, nr, &args) {
            super::seccomp::Verdict::Allow => {}
            super::seccomp::Verdict::Return(ret) => {
                if tracing {
                    trace(nr, name, &args[..nargs], ret, 'S', None);
                }
                frame.rax = ret as u64;
                return;
            }
            // rax keeps the number, as Linux's rollback leaves it for the SIGSYS handler.
            super::seccomp::Verdict::Trapped => return,
        }
    }
    let start = if tracing { crate::time::ticks() } else { 0 };
    if tracing {
        if matches!(how, Route::Forward) && writes_standard_output(nr, &args) {
            // The program's own output comes after the lines of the calls before it.
            crate::console::flush_held();
        } else {
            // A program that calls now and then on a CPU that never idles shows its calls
            // within 20 ms of the next one.
            crate::console::flush_held_after(crate::time::ns_to_ticks(20_000_000));
        }
    }
    super::cputime::call_begin();
    let (ret, kind) = match how {
        Route::Local(handler) => {
            let ret = to_ret(handler(frame, args));
            super::signalfd::after_local_call();
            super::private_files::flush_drops();
            (ret, 'L')
        }
        Route::Forward => match super::signalfd::intercept(nr, &args) {
            Some(ret) => (ret, 'F'),
            None => match super::own_exe::intercept(nr, &args).or_else(|| super::thread_self::intercept(nr, &args)) {
                Some(ret) => (ret, 'L'),
                None => forward_call(nr, &args),
            },
        },
        Route::Unimplemented => {
            report_unimplemented(nr, name);
            (-(ENOSYS as i64), 'L')
        }
    };
    let ret = if ret == -(super::signal::ERESTARTSYS as i64) {
        // Interrupted by a signal: the return path restarts it or makes it EINTR.
        super::signal::state::note_restart(super::process::current_tid(), nr);
        -(super::errno::EINTR as i64)
    } else if ret == -(super::signal::ERESTARTNOINTR as i64) {
        // Interrupted by a signal: the return path restarts it, handler or not.
        super::signal::state::note_restart(super::process::current_tid(), nr | super::signal::RESTART_ALWAYS);
        -(super::errno::EINTR as i64)
    } else {
        ret
    };
    if tracing {
        // With -v (the console not quiet), how long the call took: a forwarded call's round
        // trip to the host, a local call's time in the kernel.
        let took =
            (!crate::console::quiet()).then(|| crate::time::ticks_to_ns(crate::time::ticks().wrapping_sub(start)));
        trace(nr, name, &args[..nargs], ret, kind, took);
    }
    super::cputime::call_end();
    frame.rax = ret as u64;
    // Another thread gave this one a CPU mask that excludes its CPU (sched_setaffinity of
    // another tid) while it was in or blocked in this call.
    crate::sched::move_if_asked();
    // An idle CPU asked for it while it waited behind another thread (`sched::balance`).
    crate::sched::balance::move_if_taken();
    // Moved meanwhile: rseq's CPU (`rseq`).
    super::rseq::at_syscall_end();
}

/// The `--strace` line of a call that does not return to the program (a vfork child's
/// successful exec or its exit, which end its guest thread).
pub fn trace_final(nr: u64, args: &[u64], ret: i64, kind: char) {
    if STRACE.load(Ordering::Relaxed) {
        trace(nr, route(nr).0, args, ret, kind, None);
    }
}

/// Calls already reported as unimplemented, one bit per number (numbers past the table share
/// the last bit).
static REPORTED: [AtomicU64; 8] = [const { AtomicU64::new(0) }; 8];

/// Says once per call (not once per use) that it is not implemented, with its name.
pub fn report_unimplemented(nr: u64, name: &str) {
    let slot = nr.min(REPORTED.len() as u64 * 64 - 1);
    let bit = 1u64 << (slot % 64);
    if REPORTED[(slot / 64) as usize].fetch_or(bit, Ordering::Relaxed) & bit != 0 {
        return;
    }
    if name.is_empty() {
        kprintln!("hrt: system call {nr} (no such Linux call) is not implemented: returning ENOSYS");
    } else {
        kprintln!("hrt: system call {nr} ({name}) is not implemented: returning ENOSYS (reported once)");
    }
}

/// Whether forwarded call `nr` writes to the program's standard output or error (descriptors 1
/// and 2), which may be the terminal `--strace` prints on.
#[allow(non_upper_case_globals)] // linux-raw-sys names the numbers __NR_write etc.
fn writes_standard_output(nr: u64, args: &[u64; 6]) -> bool {
    use linux_raw_sys::general::{__NR_pwrite64, __NR_pwritev, __NR_pwritev2, __NR_sendfile, __NR_write, __NR_writev};
    matches!(nr as u32, __NR_write | __NR_writev | __NR_pwrite64 | __NR_pwritev | __NR_pwritev2 | __NR_sendfile)
        && matches!(args[0], 1 | 2)
}

/// One `--strace` line; with `-v`, the call's time in microseconds (for a forwarded call, its
/// round trip to the host).
fn trace(nr: u64, name: &str, args: &[u64], ret: i64, kind: char, round_trip_ns: Option<u64>) {
    use core::fmt::Write;
    let mut line = alloc::string::String::with_capacity(96);
    let _ = write!(line, "[{}] ", super::process::current_tid());
    if name.is_empty() {
        let _ = write!(line, "syscall_{nr}(");
    } else {
        let _ = write!(line, "{name}(");
    }
    for (i, a) in args.iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        if *a < 4096 || (*a as i64) < 0 && (*a as i64) > -4096 {
            let _ = write!(line, "{sep}{}", *a as i64);
        } else {
            let _ = write!(line, "{sep}{a:#x}");
        }
    }
    if (-4095..0).contains(&ret) {
        let _ = write!(line, ") = -1 errno {} {kind}", -ret);
    } else if ret.unsigned_abs() < 1 << 20 {
        let _ = write!(line, ") = {ret} {kind}");
    } else {
        let _ = write!(line, ") = {ret:#x} {kind}");
    }
    if let Some(ns) = round_trip_ns {
        // And when it returned, in ms since boot: the gaps between a thread's lines are the
        // time its program code ran (or waited for a CPU).
        let at = crate::time::now_ns() / 1000;
        let _ = write!(line, " <{}.{:03} us> @{}.{:03} ms", ns / 1000, ns % 1000, at / 1000, at % 1000);
    }
    crate::console::hold_line(format_args!("{line}"));
}
