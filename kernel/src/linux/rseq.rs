//! rseq(2), restartable sequences, as Linux 6.3 and later keep them. A thread registers a
//! `struct rseq` in its own memory (glibc does at every thread's start); the kernel keeps its
//! `cpu_id_start`, `cpu_id`, `node_id` and `mm_cid` true whenever the thread runs program code
//! (glibc's `sched_getcpu` reads `cpu_id`), and a thread that is preempted, moved or given a
//! signal inside a critical section its `rseq_cs` describes resumes at the section's abort
//! address instead.
//!
//! Where: the CPU is written when the thread moves (`migrated`, the scheduler's hook), when it
//! registers, and in a forked child; a critical section is looked at where the program resumes
//! after a trap that switched the thread away (`at_edge`, with `run_seq` as the sign of a
//! switch) and before a signal frame is built (`on_signal`); a system call's end writes only
//! the CPU (`at_syscall_end`). A bad descriptor or
//! an area the kernel cannot write ends the program with SIGSEGV, as Linux's force_sigsegv.
//!
//! `mm_cid` is the CPU number: unique among the threads running at once, as Linux's, but not
//! compacted to the lowest free numbers.

use core::sync::atomic::{AtomicBool, Ordering};

use crate::arch::traps::TrapFrame;
use crate::sched::thread::Rseq;

use super::errno::{SysResult, EBUSY, EFAULT, EINVAL, EPERM};
use super::uaccess;

const FLAG_UNREGISTER: u32 = 1;
/// The original `struct rseq`'s size and alignment.
const ORIG_SIZE: u32 = 32;
/// `offsetof(struct rseq, end)`: the fields this kernel fills (AT_RSEQ_FEATURE_SIZE).
pub const FEATURE_SIZE: u64 = 28;
/// `__alignof__(struct rseq)` (AT_RSEQ_ALIGN).
pub const ALIGN: u64 = 32;
/// `cpu_id` of an area no longer registered.
const CPU_ID_UNINITIALIZED: u32 = u32::MAX;
/// Linux's TASK_SIZE_MAX on x86-64 (4-level paging): the end of user addresses.
const TASK_SIZE: u64 = 0x7fff_ffff_f000;

// Field offsets in `struct rseq`.
const OFF_CPU_ID_START: u64 = 0;
const OFF_RSEQ_CS: u64 = 8;
const OFF_FLAGS: u64 = 16;
const OFF_NODE_ID: u64 = 20;

/// `struct rseq_cs`, the critical section a thread is in.
#[derive(Clone, Copy, Default)]
#[repr(C)]
struct CriticalSection {
    version: u32,
    flags: u32,
    start_ip: u64,
    post_commit_offset: u64,
    abort_ip: u64,
}

fn current() -> &'static mut crate::sched::Thread {
    // SAFETY: the current thread's record is alive while it runs; only it changes `rseq`.
    unsafe { &mut *crate::sched::current() }
}

/// Registers the scheduler's hook; once, at boot.
pub fn init() {
    crate::sched::set_after_migrate_hook(migrated);
    crate::arch::traps::set_program_resumes_hook(at_edge);
}

/// rseq(rseq, rseq_len, flags, sig): Linux's checks in Linux's order.
pub fn rseq(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (area, len, flags, sig) = (a[0], a[1] as u32, a[2] as u32, a[3] as u32);
    let t = current();
    if flags & FLAG_UNREGISTER != 0 {
        if flags & !FLAG_UNREGISTER != 0 || t.rseq.area == 0 || t.rseq.area != area || len != t.rseq.len {
            return Err(EINVAL);
        }
        if sig != t.rseq.sig {
            return Err(EPERM);
        }
        write_ids(area, [0, CPU_ID_UNINITIALIZED], [0, 0])?;
        t.rseq = Rseq::default();
        return Ok(0);
    }
    if flags != 0 {
        return Err(EINVAL);
    }
    if t.rseq.area != 0 {
        if area != t.rseq.area || len != t.rseq.len {
            return Err(EINVAL);
        }
        if sig != t.rseq.sig {
            return Err(EPERM);
        }
        return Err(EBUSY);
    }
    let aligned = |to: u64| area % to == 0;
    if len < ORIG_SIZE
        || (len == ORIG_SIZE && !aligned(ORIG_SIZE as u64))
        || (len != ORIG_SIZE && (!aligned(ALIGN) || (len as u64) < FEATURE_SIZE))
    {
        return Err(EINVAL);
    }
    // access_ok: a user-space range, mapped or not (a bad area ends the program at its first
    // update, as on Linux).
    if area.checked_add(len as u64).is_none_or(|end| end > TASK_SIZE) {
        return Err(EFAULT);
    }
    let seen = t.run_seq.load(Ordering::Relaxed);
    t.rseq = Rseq { area, len, sig, cpu: u32::MAX, seen };
    update_cpu(t);
    Ok(0)
}

/// Writes `cpu_id_start` and `cpu_id`, then `node_id` and `mm_cid`.
fn write_ids(area: u64, cpu: [u32; 2], node_cid: [u32; 2]) -> Result<(), super::errno::Errno> {
    uaccess::write(area + OFF_CPU_ID_START, cpu)?;
    uaccess::write(area + OFF_NODE_ID, node_cid)
}

/// Tells the thread's area the CPU it runs on, if it does not say so already.
fn update_cpu(t: &mut crate::sched::Thread) {
    let cpu = crate::cpu::id() as u32;
    if t.rseq.area == 0 || t.rseq.cpu == cpu {
        return;
    }
    let node = crate::cpu::current_zone() as u32;
    if write_ids(t.rseq.area, [cpu, cpu], [node, cpu]).is_err() {
        fail("its rseq area cannot be written");
    }
    t.rseq.cpu = cpu;
}

/// The scheduler's hook: the current thread has just moved to another CPU.
fn migrated() {
    let t = current();
    if t.is_user {
        update_cpu(t);
    }
}

/// The program resumes at `frame` after a trap of its code or a system call: a thread switched
/// away meanwhile leaves its critical section for the abort address.
pub fn at_edge(frame: &mut TrapFrame) {
    // A plain load first: this runs at every return to the program from a trap or a full
    // system call, and a locked exchange there cost ~10 % of a futex hand-over.
    let fence = &FENCE[crate::cpu::id()];
    let fenced = fence.load(Ordering::Relaxed) && fence.swap(false, Ordering::AcqRel);
    let t = current();
    if t.rseq.area == 0 {
        return;
    }
    update_cpu(t);
    let seq = t.run_seq.load(Ordering::Relaxed);
    if seq != t.rseq.seen || fenced {
        t.rseq.seen = seq;
        fixup(t, frame);
    }
}

/// The end of a system call: its site is not inside a critical section (a call made in one is
/// the program's bug, which Linux only catches with CONFIG_DEBUG_RSEQ), so a switch during
/// the call needs only the CPU written, not the look at `rseq_cs` that `at_edge` makes (a
/// checked read of program memory at every blocking call's return: ~10 % of a futex
/// hand-over between two threads).
pub fn at_syscall_end() {
    let fence = &FENCE[crate::cpu::id()];
    if fence.load(Ordering::Relaxed) {
        fence.store(false, Ordering::Release);
    }
    let t = current();
    if t.rseq.area == 0 {
        return;
    }
    update_cpu(t);
    t.rseq.seen = t.run_seq.load(Ordering::Relaxed);
}

/// Per CPU: membarrier's RSEQ fence asks the thread running there to leave its critical
/// section (`fence_others`).
static FENCE: [AtomicBool; hrt_abi::MAX_CPUS] = [const { AtomicBool::new(false) }; hrt_abi::MAX_CPUS];

/// Whether this CPU's thread has a fence to pass before it continues the program.
pub fn fence_due() -> bool {
    FENCE[crate::cpu::id()].load(Ordering::Relaxed)
}

/// MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, before its barrier's IPIs: every other CPU's thread
/// leaves a critical section it is in before it runs program code again. The IPI that stops
/// program code returns through ring 3 (`fence_due`), where `at_edge` looks; a thread already
/// on its way back to the program from a trap, interrupts masked, passes `at_edge` in the
/// return's drain (`request_return_look`); one in kernel code otherwise looks at its next
/// return to the program from a trap or a system call.
pub fn fence_others() {
    let me = crate::cpu::id();
    for (c, f) in FENCE.iter().enumerate().take(crate::cpu::count()) {
        if c != me {
            f.store(true, Ordering::Release);
            crate::arch::traps::request_return_look(c);
        }
    }
}

/// A signal handler's frame is about to be built from `frame`: a critical section it was in
/// is left for the abort address first, which the frame then saves (Linux's
/// rseq_signal_deliver).
pub fn on_signal(frame: &mut TrapFrame) {
    let t = current();
    if t.rseq.area == 0 {
        return;
    }
    update_cpu(t);
    fixup(t, frame);
}

/// Linux's rseq_ip_fixup: reads the thread's `rseq_cs`; outside the section it is cleared,
/// inside it the thread continues at `abort_ip` (after the signature there is checked).
fn fixup(t: &mut crate::sched::Thread, frame: &mut TrapFrame) {
    let area = t.rseq.area;
    let Ok(ptr) = uaccess::read::<u64>(area + OFF_RSEQ_CS) else {
        fail("its rseq area cannot be read");
    };
    if ptr == 0 {
        return;
    }
    if ptr >= TASK_SIZE {
        fail("its rseq_cs points outside user space");
    }
    let Ok(cs) = uaccess::read::<CriticalSection>(ptr) else {
        fail("its rseq_cs descriptor cannot be read");
    };
    let end = cs.start_ip.checked_add(cs.post_commit_offset);
    if cs.version > 0
        || cs.start_ip >= TASK_SIZE
        || end.is_none_or(|e| e >= TASK_SIZE)
        || cs.abort_ip >= TASK_SIZE
        || cs.abort_ip.wrapping_sub(cs.start_ip) < cs.post_commit_offset
    {
        fail("its rseq_cs descriptor is invalid");
    }
    match cs.abort_ip.checked_sub(4).map(uaccess::read::<u32>) {
        Some(Ok(sig)) if sig == t.rseq.sig => {}
        _ => fail("the signature before its rseq abort address does not match"),
    }
    let inside = frame.rip.wrapping_sub(cs.start_ip) < cs.post_commit_offset;
    if inside {
        // Deprecated or unknown flags (in the area or the descriptor): EINVAL, SIGSEGV.
        let area_flags = uaccess::read::<u32>(area + OFF_FLAGS).unwrap_or(0);
        if area_flags != 0 || cs.flags != 0 {
            fail("its rseq flags are set (deprecated or unknown)");
        }
    }
    if uaccess::write::<u64>(area + OFF_RSEQ_CS, 0).is_err() {
        fail("its rseq area cannot be written");
    }
    if inside {
        frame.rip = cs.abort_ip;
    }
}

/// Whether the current thread's `rseq_cs` names a critical section that overlaps `[start,
/// end)` (a descriptor that cannot be read counts as one: the code is left as it is).
pub fn section_overlaps(start: u64, end: u64) -> bool {
    let area = current().rseq.area;
    if area == 0 {
        return false;
    }
    match uaccess::read::<u64>(area + OFF_RSEQ_CS) {
        Ok(0) => false,
        Ok(ptr) => match uaccess::read::<CriticalSection>(ptr) {
            Ok(cs) => cs.start_ip < end && start < cs.start_ip.saturating_add(cs.post_commit_offset),
            Err(_) => true,
        },
        Err(_) => true,
    }
}

/// Ends the program with SIGSEGV (Linux's force_sigsegv), saying why.
fn fail(why: &str) -> ! {
    crate::kprintln!("hrt: the program's thread {} gets SIGSEGV (11): {why}", current().tid);
    super::fault::terminate_at(11, None, None)
}

/// A forked child's copy of the forking thread: its registration is kept, its CPU written
/// again at its first return to the program (`at_edge`).
pub fn forked(parent: &Rseq) -> Rseq {
    Rseq { cpu: u32::MAX, ..*parent }
}
