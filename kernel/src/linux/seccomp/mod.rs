//! seccomp: strict mode and BPF filters over the program's system calls, as Linux applies them.
//!
//! Each thread has a chain of filters (newest first, shared with the threads that inherited
//! it: `Arc` nodes, one reference in each thread's record). Every system call that enters the
//! dispatcher runs the caller's chain over its `seccomp_data` (number, AUDIT_ARCH_X86_64, the
//! address after the call, six arguments); the most restrictive answer wins, the newest filter
//! among equals, and decides: ALLOW and LOG run the call; ERRNO returns its data as an error;
//! TRAP sends SIGSYS (SYS_SECCOMP, the call's address, number and architecture, si_errno the
//! data) with the call not made and rax still the number, as Linux's rollback leaves it;
//! KILL_THREAD ends the thread (the process when it is the last), KILL_PROCESS and unknown
//! actions end the process with SIGSYS; TRACE and USER_NOTIF, with no tracer or listener
//! here, return ENOSYS as Linux does without one. Strict mode allows read, write, exit and
//! rt_sigreturn and kills the thread with SIGKILL on anything else.
//!
//! The fast path of rewritten calls (`fastcall`: getpid, gettid, futex wake-ups) runs the
//! filters too and serves the call only when they allow it; every other answer is decided on
//! the full path. Calls served without entering the kernel (the vDSO's clock calls) are not seen, as
//! on Linux.
//!
//! Filters follow the program across clone, fork and exec within the VM (kernel memory). A
//! host program it starts (a spawn child's exec, a forked child's exec with `--children host`)
//! gets the same filters from the monitor before its `execve`: each filter is registered with
//! the monitor when it is installed (`process::SECCOMP_FILTER`, which answers an id naming it
//! and its older filters), and the exec names the caller's newest.

pub mod bpf;

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bpf::Insn;
use hrt_abi::process as op;

use crate::arch::traps::TrapFrame;
use crate::linux::errno::{SysResult, EACCES, EFAULT, EINVAL, ENOMEM, ENOSYS, EOPNOTSUPP, ESRCH};
use crate::linux::process::{self, PROCESS};
use crate::linux::signal::{self, SigInfo};
use crate::linux::uaccess;
use crate::sched::Thread;
use crate::sync::IrqSpinLock;

const SECCOMP_SET_MODE_STRICT: u64 = 0;
const SECCOMP_SET_MODE_FILTER: u64 = 1;
const SECCOMP_GET_ACTION_AVAIL: u64 = 2;
const SECCOMP_GET_NOTIF_SIZES: u64 = 3;

const FLAG_TSYNC: u64 = 1;
const FLAG_LOG: u64 = 2;
const FLAG_SPEC_ALLOW: u64 = 4;
const FLAG_NEW_LISTENER: u64 = 8;
const FLAG_TSYNC_ESRCH: u64 = 16;
const FLAG_WAIT_KILLABLE_RECV: u64 = 32;
const FLAGS_KNOWN: u64 =
    FLAG_TSYNC | FLAG_LOG | FLAG_SPEC_ALLOW | FLAG_NEW_LISTENER | FLAG_TSYNC_ESRCH | FLAG_WAIT_KILLABLE_RECV;

const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_KILL_THREAD: u32 = 0;
const RET_TRAP: u32 = 0x0003_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_USER_NOTIF: u32 = 0x7fc0_0000;
const RET_TRACE: u32 = 0x7ff0_0000;
const RET_LOG: u32 = 0x7ffc_0000;
const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ACTION: u32 = 0xffff_0000;
const RET_DATA: u32 = 0xffff;
const KNOWN_ACTIONS: [u32; 8] =
    [RET_KILL_PROCESS, RET_KILL_THREAD, RET_TRAP, RET_ERRNO, RET_USER_NOTIF, RET_TRACE, RET_LOG, RET_ALLOW];

/// AUDIT_ARCH_X86_64, seccomp_data's `arch`.
const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
/// Linux's MAX_INSNS_PER_PATH: a chain's instructions, each filter counted 4 more.
const MAX_PATH: usize = 32768;
/// SIGSYS's si_code for a seccomp trap.
const SYS_SECCOMP: i32 = 1;
const SIGKILL: i32 = 9;
const SIGSYS: i32 = 31;
const MAX_ERRNO: u32 = 4095;

/// One filter of a chain (or strict mode, which has no program).
struct Filter {
    /// The older filters.
    prev: Option<Arc<Filter>>,
    prog: bpf::Program,
    /// Linux's count of the chain's length up to this filter (MAX_PATH): each filter's
    /// length as Linux converts it (`bpf::converted_len`), 4 more per filter.
    path_len: usize,
    /// The monitor's name for this filter and the older ones (`op::SECCOMP_FILTER`).
    host_id: u64,
    strict: bool,
}

impl Drop for Filter {
    /// Gives the monitor's copy back (at the next install: no forwarded call here, where a
    /// lock may be held), and drops the older filters no thread holds one by one: a chain of
    /// thousands of filters dropped by recursion overflowed the kernel stack.
    fn drop(&mut self) {
        if self.host_id != 0 {
            RELEASED.lock().push(self.host_id);
        }
        let mut older = self.prev.take();
        while let Some(f) = older {
            older = match Arc::try_unwrap(f) {
                // The last reference: its own drop, at the end of this arm, finds no `prev`.
                Ok(mut last) => last.prev.take(),
                Err(_) => None,
            };
        }
    }
}

/// The monitor's ids of filters no thread holds any more, to give back (`release_pending`).
static RELEASED: IrqSpinLock<Vec<u64>> = IrqSpinLock::new(Vec::new());

/// Tells the monitor which kept filters are no longer needed (`op::SECCOMP_RELEASE`).
fn release_pending() {
    let ids = core::mem::take(&mut *RELEASED.lock());
    for id in ids {
        let _ = crate::linux::calls::procs::call(op::SECCOMP_RELEASE, [id, 0, 0, 0, 0, 0]);
    }
}

/// Some thread has had a filter or strict mode: the dispatcher looks (`check`).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Held while a chain is installed, a thread inherits one, or TSYNC changes other threads'.
static INSTALL: IrqSpinLock<()> = IrqSpinLock::new(());

/// Whether the dispatcher must run the callers' filters (and the fast path stay off).
#[inline]
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

fn current() -> &'static mut Thread {
    // SAFETY: the current thread's record is alive while it runs.
    unsafe { &mut *crate::sched::current() }
}

/// Thread `t`'s chain, borrowed: alive while `t` keeps its reference (only TSYNC replaces it
/// from outside, with a chain that holds the old one as an ancestor).
fn chain_of(t: &Thread) -> Option<&Filter> {
    let p = t.seccomp.load(Ordering::Acquire);
    // SAFETY: a non-zero value is an `Arc<Filter>` turned into a raw pointer, whose reference
    // the thread holds.
    (p != 0).then(|| unsafe { &*(p as *const Filter) })
}

/// A new reference to the chain at `p` (non-zero).
fn share(p: usize) -> Arc<Filter> {
    // SAFETY: `p` came from `Arc::into_raw` and its reference is still held by its thread.
    unsafe {
        Arc::increment_strong_count(p as *const Filter);
        Arc::from_raw(p as *const Filter)
    }
}

/// Gives thread `t` chain `f`, dropping the reference to its old one.
fn set_chain(t: &Thread, f: Option<Arc<Filter>>) {
    let new = f.map_or(0, |f| Arc::into_raw(f) as usize);
    let old = t.seccomp.swap(new, Ordering::AcqRel);
    if old != 0 {
        // SAFETY: the reference `t` held.
        drop(unsafe { Arc::from_raw(old as *const Filter) });
    }
}

/// A new program thread `t` takes its creator's (the current thread's) chain. The guard keeps
/// TSYNC out until the caller has registered the thread.
pub fn inherit(t: &Thread) -> Option<crate::sync::spinlock::IrqSpinGuard<'static, ()>> {
    if !active() {
        return None;
    }
    let held = INSTALL.lock();
    let p = current().seccomp.load(Ordering::Acquire);
    set_chain(t, (p != 0).then(|| share(p)));
    Some(held)
}

/// In a forked child: the forking thread's new record keeps the chain it had (kernel memory
/// came along with the fork).
pub fn adopt_after_fork(t: &Thread, p: usize) {
    set_chain(t, (p != 0).then(|| share(p)));
}

/// The current thread ends: its reference goes (after it was unregistered, so TSYNC no longer
/// finds it).
pub fn thread_exits() {
    if active() {
        let _held = INSTALL.lock();
        set_chain(current(), None);
    }
}

/// The monitor's id of the current thread's filters, for an exec that starts a host program
/// (0: none).
pub fn host_chain() -> u64 {
    chain_of(current()).map_or(0, |f| f.host_id)
}

/// Thread `t`'s seccomp mode (0 none, 1 strict, 2 filters) and, from bit 8, its filters'
/// count, for /proc's status (`ProgramStatus::seccomp`).
pub fn status_word(t: &Thread) -> u64 {
    let Some(mut f) = chain_of(t) else { return 0 };
    if f.strict {
        return 1;
    }
    let mut count = 1;
    while let Some(p) = f.prev.as_deref() {
        (f, count) = (p, count + 1);
    }
    2 | count << 8
}

/// What the dispatcher does with a call after the filters.
pub enum Verdict {
    /// Make the call.
    Allow,
    /// Do not make it; return this.
    Return(i64),
    /// Do not make it; a SIGSYS is pending and rax keeps the number.
    Trapped,
}

/// Runs the current thread's filters over call `nr`; only when `active()`.
pub fn check(frame: &TrapFrame, nr: u64, args: &[u64; 6]) -> Verdict {
    let t = current();
    if t.kernel_call {
        return Verdict::Allow;
    }
    let Some(chain) = chain_of(t) else {
        return Verdict::Allow;
    };
    if chain.strict {
        if strict_allows(nr) {
            return Verdict::Allow;
        }
        kill_thread(SIGKILL);
    }
    let ret = run_chain(chain, nr, args, frame.rip);
    let code = ret & RET_DATA;
    match ret & RET_ACTION {
        RET_ALLOW | RET_LOG => Verdict::Allow,
        RET_ERRNO => Verdict::Return(-(code.min(MAX_ERRNO) as i64)),
        RET_TRACE | RET_USER_NOTIF => Verdict::Return(-(ENOSYS as i64)),
        RET_TRAP => {
            trap(frame.rip, nr, code);
            Verdict::Trapped
        }
        RET_KILL_THREAD => kill_thread(SIGSYS),
        _ => crate::linux::fault::terminate(SIGSYS, None),
    }
}

/// Whether strict mode allows call `nr`.
fn strict_allows(nr: u64) -> bool {
    use linux_raw_sys::general::{__NR_exit, __NR_read, __NR_rt_sigreturn, __NR_write};
    [__NR_read, __NR_write, __NR_exit, __NR_rt_sigreturn].contains(&(nr as u32))
}

/// The answer of filter chain `chain` (not strict) for call `nr` made at `ip`: the most
/// restrictive of its filters' answers, the newest filter's among equals.
fn run_chain(chain: &Filter, nr: u64, args: &[u64; 6], ip: u64) -> u32 {
    // struct seccomp_data as little-endian words: nr, arch, instruction_pointer, args[6].
    let mut data = [0u32; 16];
    (data[0], data[1]) = (nr as u32, AUDIT_ARCH_X86_64);
    (data[2], data[3]) = (ip as u32, (ip >> 32) as u32);
    for (i, a) in args.iter().enumerate() {
        (data[4 + 2 * i], data[5 + 2 * i]) = (*a as u32, (*a >> 32) as u32);
    }
    let mut ret = RET_ALLOW;
    let mut f = Some(chain);
    while let Some(filter) = f {
        let r = bpf::run(&filter.prog, &data);
        if ((r & RET_ACTION) as i32) < ((ret & RET_ACTION) as i32) {
            ret = r;
        }
        f = filter.prev.as_deref();
    }
    ret
}

/// For the fast path of rewritten calls (`fastcall`): whether the current thread's filters
/// let call `nr` from `ip` (the address after the call, as the full path sees it) run as it
/// is (ALLOW or LOG). Anything else takes the full path, which decides again.
pub fn allows_fast(nr: u64, args: &[u64; 6], ip: u64) -> bool {
    match chain_of(current()) {
        None => true,
        Some(c) if c.strict => strict_allows(nr),
        Some(c) => matches!(run_chain(c, nr, args, ip) & RET_ACTION, RET_ALLOW | RET_LOG),
    }
}

/// SIGSYS for a trapped call, forced as Linux forces it: blocked or ignored, it kills.
fn trap(ip: u64, nr: u64, data: u32) {
    let t = current();
    let sig = SIGSYS as u64;
    if signal::handler(sig) <= signal::SIG_IGN || t.sigmask & signal::bit(sig) != 0 {
        crate::linux::fault::terminate(SIGSYS, None);
    }
    let info = SigInfo {
        signo: SIGSYS,
        code: SYS_SECCOMP,
        errno: data as i32,
        w16: ip,
        w24: nr as u32 as u64 | (AUDIT_ARCH_X86_64 as u64) << 32,
        ..SigInfo::EMPTY
    };
    if signal::send_thread(t.tid, info).is_err() {
        crate::linux::fault::terminate(SIGSYS, None);
    }
}

/// Ends the calling thread as killed by `sig`: the process when it is the last thread.
fn kill_thread(sig: i32) -> ! {
    if PROCESS.live_threads.load(Ordering::SeqCst) <= 1 || crate::linux::calls::procs::child_ctx().is_some() {
        crate::linux::fault::terminate(sig, None);
    }
    let mut frame = TrapFrame::ZERO;
    let _ = crate::linux::calls::thread::exit(&mut frame, [0; 6]);
    unreachable!("a thread's exit returned")
}

/// `seccomp(operation, flags, args)`.
pub fn seccomp(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    match a[0] {
        SECCOMP_SET_MODE_STRICT if a[1] == 0 && a[2] == 0 => set_strict(),
        SECCOMP_SET_MODE_FILTER => set_filter(a[1], a[2]),
        SECCOMP_GET_ACTION_AVAIL if a[1] == 0 => {
            let action: u32 = uaccess::read(a[2])?;
            if KNOWN_ACTIONS.contains(&action) {
                Ok(0)
            } else {
                Err(EOPNOTSUPP)
            }
        }
        SECCOMP_GET_NOTIF_SIZES if a[1] == 0 => {
            // struct seccomp_notif, seccomp_notif_resp, seccomp_data.
            uaccess::write::<[u16; 3]>(a[2], [80, 24, bpf::DATA_LEN as u16])?;
            Ok(0)
        }
        _ => Err(EINVAL),
    }
}

/// prctl(PR_SET_SECCOMP, mode, filter).
pub fn prctl_set(mode: u64, filter: u64) -> SysResult {
    match mode {
        1 => set_strict(),
        2 => set_filter(0, filter),
        _ => Err(EINVAL),
    }
}

/// prctl(PR_GET_SECCOMP): 0 none, 2 filters (strict mode never gets here: prctl kills).
pub fn prctl_get() -> SysResult {
    Ok(if chain_of(current()).is_some() { 2 } else { 0 })
}

fn set_strict() -> SysResult {
    let _held = INSTALL.lock();
    let t = current();
    match chain_of(t) {
        Some(f) if f.strict => return Ok(0),
        Some(_) => return Err(EINVAL),
        None => {}
    }
    let strict = Filter { prev: None, prog: bpf::Program::empty(), path_len: 0, host_id: 0, strict: true };
    set_chain(t, Some(Arc::new(strict)));
    ACTIVE.store(true, Ordering::SeqCst);
    Ok(0)
}

/// Whether `hrt`'s host process has CAP_SYS_ADMIN now, the program's too (asked each time: a
/// program may have given up its privileges since): what Linux asks of a new namespace of any
/// kind but a user namespace.
pub fn host_has_sys_admin() -> bool {
    const PR_SET_SECCOMP: u64 = 22;
    crate::arch::hypercall::call(hrt_abi::nr::HOST_PRCTL, &[PR_SET_SECCOMP]) == 1
}

/// The host process may install a filter without no_new_privs (CAP_SYS_ADMIN): asked once.
fn host_may_filter() -> bool {
    static ANSWER: AtomicU64 = AtomicU64::new(0);
    let mut a = ANSWER.load(Ordering::Relaxed);
    if a == 0 {
        const PR_SET_SECCOMP: u64 = 22;
        let r = crate::arch::hypercall::call(hrt_abi::nr::HOST_PRCTL, &[PR_SET_SECCOMP]);
        a = if r == 1 { 1 } else { 2 };
        ANSWER.store(a, Ordering::Relaxed);
    }
    a == 1
}

/// SECCOMP_FILTER_FLAG_NEW_LISTENER was reported as not implemented.
static REPORTED_LISTENER: AtomicBool = AtomicBool::new(false);

fn set_filter(flags: u64, uargs: u64) -> SysResult {
    if flags & !FLAGS_KNOWN != 0
        || flags & FLAG_NEW_LISTENER != 0 && flags & FLAG_TSYNC != 0 && flags & FLAG_TSYNC_ESRCH == 0
        || flags & FLAG_WAIT_KILLABLE_RECV != 0 && flags & FLAG_NEW_LISTENER == 0
    {
        return Err(EINVAL);
    }
    // struct sock_fprog: u16 len, then the pointer at offset 8.
    let [len, ptr] = uaccess::read::<[u64; 2]>(uargs)?;
    let len = (len & 0xffff) as usize;
    if len == 0 || len > bpf::MAX_INSNS {
        return Err(EINVAL);
    }
    if !crate::linux::calls::prctl::no_new_privs() && !host_may_filter() {
        return Err(EACCES);
    }
    let bytes = uaccess::slice(ptr, (len * 8) as u64)?;
    let prog: Vec<Insn> = bytes
        .chunks_exact(8)
        .map(|c| Insn {
            code: u16::from_le_bytes([c[0], c[1]]),
            jt: c[2],
            jf: c[3],
            k: u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
        })
        .collect();
    let cost = bpf::converted_len(&prog);
    let prog = bpf::compile(&prog)?;
    // Refused only here, for a real filter: libseccomp asks which flags the kernel knows with
    // a null program, where Linux answers EFAULT for a flag it knows.
    if flags & FLAG_NEW_LISTENER != 0 {
        if !REPORTED_LISTENER.swap(true, Ordering::Relaxed) {
            kprintln!("hrt: seccomp's SECCOMP_FILTER_FLAG_NEW_LISTENER (user notification) is not implemented: returning ENOSYS (reported once)");
        }
        return Err(ENOSYS);
    }
    release_pending();
    loop {
        // Registered with the monitor outside the lock (a forwarded call waits); if another
        // thread's TSYNC changed this thread's chain meanwhile, again over the new one.
        let t = current();
        let before = t.seccomp.load(Ordering::Acquire);
        // Past Linux's length: refused before the monitor keeps a copy.
        if cost + chain_of(t).map_or(0, |f| f.path_len) > MAX_PATH {
            return Err(ENOMEM);
        }
        let prev_id = chain_of(t).map_or(0, |f| f.host_id);
        let host_id = crate::linux::calls::procs::call(op::SECCOMP_FILTER, [prev_id, ptr, len as u64, 0, 0, 0])
            .map_err(|e| if e == EFAULT { EFAULT } else { ENOMEM })?;
        let held = INSTALL.lock();
        if t.seccomp.load(Ordering::Acquire) != before {
            drop(held);
            RELEASED.lock().push(host_id);
            continue;
        }
        let prev = (before != 0).then(|| share(before));
        let prev_len = prev.as_ref().map_or(0, |p| p.path_len);
        let refused = if prev.as_ref().is_some_and(|p| p.strict) {
            Some(Err(EINVAL))
        } else if cost + prev_len > MAX_PATH {
            Some(Err(ENOMEM))
        } else if flags & FLAG_TSYNC != 0 {
            unsynchronisable(t.tid, before)
                .map(|tid| if flags & FLAG_TSYNC_ESRCH != 0 { Err(ESRCH) } else { Ok(tid as u64) })
        } else {
            None
        };
        if let Some(answer) = refused {
            drop(prev);
            drop(held);
            RELEASED.lock().push(host_id);
            return answer;
        }
        let path_len = cost + 4 + prev_len;
        let new = Arc::new(Filter { prev, prog, path_len, host_id, strict: false });
        if flags & FLAG_TSYNC != 0 {
            let mut tids = Vec::new();
            signal::state::live_tids(process::pid(), |_, tid| tids.push(tid));
            for tid in tids.into_iter().filter(|&tid| tid != t.tid) {
                signal::state::with_thread(tid, |other| set_chain(other, Some(new.clone())));
            }
        }
        set_chain(t, Some(new));
        ACTIVE.store(true, Ordering::SeqCst);
        drop(held);
        return Ok(0);
    }
}

/// For TSYNC: a thread other than `me` whose chain is neither none nor an ancestor of (or
/// equal to) `mine`, which TSYNC cannot move to the new filter.
fn unsynchronisable(me: u32, mine: usize) -> Option<u32> {
    let mut tids = Vec::new();
    signal::state::live_tids(process::pid(), |_, tid| tids.push(tid));
    tids.into_iter().filter(|&tid| tid != me).find(|&tid| {
        signal::state::with_thread(tid, |other| {
            let theirs = other.seccomp.load(Ordering::Acquire);
            if theirs == 0 {
                return false;
            }
            let mut f = (mine != 0).then_some(mine as *const Filter);
            while let Some(p) = f {
                if p as usize == theirs {
                    return false;
                }
                // SAFETY: the caller's chain, held by the caller.
                f = unsafe { (*p).prev.as_ref().map(Arc::as_ptr) };
            }
            true
        })
        .unwrap_or(false)
    })
}
