//! Spin-wait loops in program code that yield their vCPU by themselves.
//!
//! A thread waiting for a flag in a plain-load loop (`while (flag[i-1] == 0) { #pragma omp
//! flush }`, NPB LU's pipeline; PRK's `p2p`) while the thread it waits for is ready on the
//! same vCPU (threads packed on fewer vCPUs than threads, `sched::thread`) keeps the vCPU
//! until a look (`sched::spin_look`: a timer interrupt through emulated ring 0, ~100 us here)
//! finds it spinning and switches. A pipeline needs that at every step: NPB 3.0 LU class W,
//! 4 threads at `--cpus 4` on 2 host CPUs, ~75,000 looks, 7.5 s against 1.0 with 2 threads.
//!
//! So the first look that finds a thread spinning in such a loop (`arch::spin_loop::find`:
//! every round only loads, computes in registers, compares and branches, and keeps nothing
//! for the next round) while another thread waits for its vCPU rewrites the loop: a few of its
//! instructions (the window, 5-15 bytes of straight-line code every round passes, at its head
//! or, in a loop entered in its middle, after that entry) become a `jmp` to a slot
//! (`arch::slot_table::Then::Yield`) that calls the yield stub (`arch::spin_yield`: it enters
//! the kernel only when a thread waits in this vCPU's run queue), replays the window and jumps
//! back after it. Each round then hands the vCPU over at once where a thread is ready, and
//! costs a few dozen cycles more where none is. What the program can observe does not change:
//! the stub keeps every register and the flags, its call writes below the red zone (as a
//! signal frame would), and the loop's rounds still read what they read.
//!
//! Conditions (else the loop is left to the looks, and not examined again):
//! - rewriting is on (`rewrite::enabled`, no `--no-rewrite`);
//! - the loop lies in a function the symbol or unwind table names, decoded there on the same
//!   instruction boundaries, with no indirect jump (whose targets could not be known);
//! - the window is straight-line code inside the loop, and no branch of the function lands
//!   inside it but at its start;
//! - the thread found spinning is in no restartable sequence (rseq) whose critical section
//!   holds the loop: a switch there must send the thread to the section's abort address,
//!   which a yield from the slot, outside the section, would not;
//! - a slot is in reach (±2 GiB) and the other CPUs stop within the freeze's timeout.
//!
//! The patch is made with every other CPU stopped at a safe point (`sched::freeze`, as
//! `regsite` does). A thread stopped inside the window (an old instruction start that is no
//! new one) resumes at the loop's head (`rewrite::record_interior`, applied by
//! `regsite::fix_resume_point`): the round starts again, which the loop's purity makes the
//! same as going on (every register a round writes it writes before it reads it).

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use iced_x86::{FlowControl, Instruction};

use crate::arch::slot_table::{self, Fixup, Replayed, Then};
use crate::arch::traps::TrapFrame;
use crate::sync::SpinLock;

/// Loops examined (patched or not), at most.
const MAX_LOOPS: usize = 64;
/// A window's bytes: at least the `jmp rel32`, at most 15 (what a slot holds beside its call
/// and jump back, `slot_table`'s 32 bytes less 23, decides: a back branch there takes 2).
const JMP_LEN: u64 = 5;
const MAX_WINDOW: u64 = 15;
/// How long the patching CPU waits for the others; if they do not stop in time, the loop is
/// left to the looks (a CPU that waits for this one, which has interrupts masked here, stops
/// only at the timeout).
const FREEZE_TIMEOUT_NS: u64 = 20_000_000;
/// A slot's length (`slot_table`'s window slots).
const SLOT_LEN: u64 = slot_table::WINDOW_SLOT as u64;

/// The loops examined: head, end (of the back branch) and slot (0: left as it was).
struct Loop {
    start: AtomicU64,
    end: AtomicU64,
    slot: AtomicU64,
    /// Where the window starts, where it ends (`back`), and how many bytes its copy takes in
    /// the slot (`body`): what `on_signal` needs.
    at: AtomicU64,
    back: AtomicU64,
    body: AtomicU64,
    /// The window's original bytes (at most `MAX_WINDOW`), put back if the program makes the
    /// code writable (`restore_writable`).
    original: [AtomicU64; 2],
}

static LOOPS: [Loop; MAX_LOOPS] = [const {
    Loop {
        start: AtomicU64::new(0),
        end: AtomicU64::new(0),
        slot: AtomicU64::new(0),
        at: AtomicU64::new(0),
        back: AtomicU64::new(0),
        body: AtomicU64::new(0),
        original: [AtomicU64::new(0), AtomicU64::new(0)],
    }
}; MAX_LOOPS];

/// A rewritten loop's slot and window (`Loop`).
#[derive(Clone, Copy, Default)]
struct Rewritten {
    slot: u64,
    at: u64,
    back: u64,
    body: u64,
    original: [u8; 16],
}
/// Entries of `LOOPS` in use.
static USED: AtomicUsize = AtomicUsize::new(0);
/// Serialises `remember` (a refusal is recorded without a freeze).
static REMEMBER: SpinLock<()> = SpinLock::new(());
static PATCHED: AtomicUsize = AtomicUsize::new(0);
static YIELDS: AtomicU64 = AtomicU64::new(0);

/// Registers the look's hooks (`sched::spin_look`), with rewriting on.
pub fn init() {
    if super::rewrite::enabled() {
        crate::sched::spin_look::set_spin_site_hooks(on_spinning, is_patched);
    }
}

/// How many loops were rewritten to yield, and how many times their rounds yielded (`-v`).
pub fn counts() -> (usize, u64) {
    (PATCHED.load(Ordering::Relaxed), YIELDS.load(Ordering::Relaxed))
}

/// A rewritten loop's round found a thread ready on this CPU (the yield stub's call, which the
/// dispatcher recognised): that thread runs.
pub fn yield_round() {
    YIELDS.fetch_add(1, Ordering::Relaxed);
    crate::sched::yield_for_spin_site();
}

/// Whether `rip` is in a rewritten loop, its slot or the yield stub: a thread spinning there
/// (with no thread ready on its vCPU, so the stub returns at once).
fn is_patched(rip: u64) -> bool {
    if PATCHED.load(Ordering::Relaxed) == 0 {
        return false;
    }
    crate::arch::spin_yield::in_stub(rip)
        || LOOPS[..USED.load(Ordering::Acquire).min(MAX_LOOPS)].iter().any(|l| {
            let slot = l.slot.load(Ordering::Relaxed);
            slot != 0
                && ((l.start.load(Ordering::Relaxed)..l.end.load(Ordering::Relaxed)).contains(&rip)
                    || (slot..slot + SLOT_LEN).contains(&rip))
        })
}

/// The loops examined so far (head, end, whether rewritten), for `-v`.
pub fn examined_loops() -> Vec<(u64, u64, bool)> {
    LOOPS[..USED.load(Ordering::Acquire).min(MAX_LOOPS)]
        .iter()
        .map(|l| (l.start.load(Ordering::Relaxed), l.end.load(Ordering::Relaxed), l.slot.load(Ordering::Relaxed) != 0))
        .filter(|&(start, ..)| start != u64::MAX)
        .collect()
}

fn examined(start: u64) -> bool {
    LOOPS[..USED.load(Ordering::Acquire).min(MAX_LOOPS)].iter().any(|l| l.start.load(Ordering::Relaxed) == start)
}

/// The look found the program at `frame` spinning in a loop without PAUSE while another thread
/// waits for this vCPU (ring 3, interrupts masked, no lock held): rewrites the loop the first
/// time (see the module comment).
fn on_spinning(frame: &mut TrapFrame) {
    let Some((start, end)) = crate::arch::spin_loop::find(frame.rip) else { return };
    if examined(start) || USED.load(Ordering::Acquire) >= MAX_LOOPS {
        return;
    }
    if super::rseq::section_overlaps(start, end) {
        // A restartable sequence's critical section: a thread switched away inside it must
        // resume at its abort address, which a yield from the slot (outside the section)
        // would not see.
        remember(start, end, Rewritten::default());
        return;
    }
    let Some(window) = window(start, end) else {
        remember(start, end, Rewritten::default());
        return;
    };
    if !crate::sched::freeze::freeze_others(FREEZE_TIMEOUT_NS, crate::sched::freeze::Halted::AreStopped) {
        remember(start, end, Rewritten::default());
        return;
    }
    // Another CPU may have examined it while this one waited to freeze.
    if !examined(start) && USED.load(Ordering::Acquire) < MAX_LOOPS {
        let slot = super::usermem::while_mapped_and(start, end, |mapped| patch(start, &window, mapped)).flatten();
        let body =
            window.replay.iter().map(|r| if matches!(r.fixup, Fixup::Branch(..)) { 2 } else { r.len }).sum::<usize>();
        let rewritten = slot.map(|slot| Rewritten {
            slot,
            at: window.at,
            back: window.at + window.len,
            body: body as u64,
            original: window.original,
        });
        remember(start, end, rewritten.unwrap_or_default());
        if slot.is_some() {
            PATCHED.fetch_add(1, Ordering::Relaxed);
        }
    }
    if frame.rip > window.at && frame.rip < window.at + window.len {
        frame.rip = start;
    }
    crate::sched::freeze::thaw();
}

/// Records a loop examined (`slot` 0: left as it was; a refusal may be recorded twice by a
/// race, harmless).
fn remember(start: u64, end: u64, how: Rewritten) {
    let _serial = REMEMBER.lock();
    let n = USED.load(Ordering::Acquire);
    if n >= MAX_LOOPS {
        return;
    }
    let l = &LOOPS[n];
    l.start.store(start, Ordering::Relaxed);
    l.end.store(end, Ordering::Relaxed);
    l.slot.store(how.slot, Ordering::Relaxed);
    l.at.store(how.at, Ordering::Relaxed);
    l.back.store(how.back, Ordering::Relaxed);
    l.body.store(how.body, Ordering::Relaxed);
    for (word, bytes) in l.original.iter().zip(how.original.chunks_exact(8)) {
        word.store(u64::from_le_bytes(bytes.try_into().unwrap_or_default()), Ordering::Relaxed);
    }
    USED.store(n + 1, Ordering::Release);
}

/// A signal handler's frame is about to be built from `frame`: a thread stopped in a rewritten
/// loop's slot or in the yield stub goes back to the loop's own code first, so that the frame
/// (what the handler, an unwinder or a debugger reads) names an instruction of the program, as
/// without the rewrite: asynchronous cancellation and `-fnon-call-exceptions` unwind from it,
/// and found no unwind entry for the slot (the cancelled thread's destructors did not run; a
/// C++ exception thrown from a SIGSEGV in the loop's load ended in `terminate`). In the stub,
/// the registers it saved come back from the stack and the stack pointer is the loop's; the
/// thread resumes where the slot's `jmp` is, a round that starts again (which the loop's purity
/// makes the same). In the slot's copy of the window, at the loop's head, for the same reason.
pub fn on_signal(frame: &mut TrapFrame) {
    if PATCHED.load(Ordering::Relaxed) == 0 {
        return;
    }
    let rip = frame.rip;
    let used = &LOOPS[..USED.load(Ordering::Acquire).min(MAX_LOOPS)];
    let slot_of = |addr: u64| used.iter().find(|l| l.slot.load(Ordering::Relaxed) == addr && addr != 0);
    if let Some(depth) = crate::arch::spin_yield::stub_depth(rip) {
        // The words the stub pushed (flags, rax, rcx, rdx, r11, in that order), then the
        // slot's return address.
        let sp = frame.rsp;
        let word = |i: u64| super::uaccess::read::<u64>(sp + 8 * i).ok();
        let Some(ret) = word(depth) else { return };
        let Some(l) = slot_of(ret.wrapping_sub(slot_table::YIELD_CALL_RETURN)) else { return };
        let mut saved = [0u64; 5];
        for (i, w) in saved.iter_mut().enumerate().take(depth as usize) {
            let Some(v) = word(depth - 1 - i as u64) else { return };
            *w = v;
        }
        let depth = depth as usize;
        if depth > 0 {
            frame.rflags = (frame.rflags & !USER_FLAGS) | (saved[0] & USER_FLAGS);
        }
        for (i, reg) in [&mut frame.rax, &mut frame.rcx, &mut frame.rdx, &mut frame.r11].into_iter().enumerate() {
            if depth > i + 1 {
                *reg = saved[i + 1];
            }
        }
        frame.rsp = sp + 8 * (depth as u64 + 1) + slot_table::RED_ZONE;
        frame.rip = l.at.load(Ordering::Relaxed);
        return;
    }
    for l in used {
        let slot = l.slot.load(Ordering::Relaxed);
        if slot == 0 || !(slot..slot + SLOT_LEN).contains(&rip) {
            continue;
        }
        let (at, back, body) =
            (l.at.load(Ordering::Relaxed), l.back.load(Ordering::Relaxed), l.body.load(Ordering::Relaxed));
        let offset = rip - slot;
        let replay = slot_table::YIELD_REPLAY_AT;
        if offset < slot_table::YIELD_CALL_RETURN {
            // Before the call (rsp lowered once past the first `lea`).
            if offset > 0 {
                frame.rsp += slot_table::RED_ZONE;
            }
            frame.rip = at;
        } else if offset < replay {
            frame.rsp += slot_table::RED_ZONE;
            frame.rip = at;
        } else if offset < replay + body {
            frame.rip = l.start.load(Ordering::Relaxed);
        } else if offset == replay + body {
            frame.rip = back;
        } else if let Ok(jmp) = super::uaccess::read::<[u8; 5]>(rip) {
            // A branch's stub: `jmp target`.
            if jmp[0] == 0xe9 {
                let rel = i32::from_le_bytes([jmp[1], jmp[2], jmp[3], jmp[4]]);
                frame.rip = (rip + 5).wrapping_add(rel as i64 as u64);
            }
        }
        return;
    }
}

/// The flags a program's code sets (CF, PF, AF, ZF, SF, DF, OF): what the stub's `pushfq` kept.
const USER_FLAGS: u64 = 0xcd5;

/// The window of the loop `[start, end)`: straight-line instructions inside it, as the
/// function decodes them, at least `JMP_LEN` bytes, where every round that goes on passes
/// (the first such run from the head that no branch enters but at its first instruction: a
/// loop entered in its middle, as compilers rotate them, has its window after that entry).
struct Window {
    /// Its first instruction.
    at: u64,
    len: u64,
    /// Its bytes as the program has them.
    original: [u8; 16],
    replay: Vec<Replayed>,
    /// Old instruction starts inside it other than `at`: a thread stopped there starts the
    /// round again at the loop's head (the window's first instructions may have overwritten
    /// their own inputs, `imul %eax, %ecx`, so not at `at`).
    interiors: Vec<u64>,
}

fn window(start: u64, end: u64) -> Option<Window> {
    let (fstart, fend) = super::symbols::function_at(start)?;
    let instrs: Vec<Instruction> = super::rewrite::decode_function(fstart, fend)?;
    if instrs.iter().any(|i| i.flow_control() == FlowControl::IndirectBranch) {
        return None;
    }
    let first = instrs.iter().position(|i| i.ip() == start)?;
    let last = instrs.iter().position(|i| i.next_ip() == end)?;
    let lands = |at: u64| instrs.iter().any(|i| i.flow_control() != FlowControl::Next && i.near_branch_target() == at);
    'candidates: for k in first..last {
        let mut len = 0;
        let mut taken = Vec::new();
        for (n, i) in instrs[k..=last].iter().enumerate() {
            if len >= JMP_LEN {
                break;
            }
            // The back branch may end a window that starts at the head (`while (*p == 0);` is
            // 4 bytes before it): the slot's copy goes to the slot's own start.
            let back_to_head = k + n == last
                && k == first
                && i.flow_control() == FlowControl::ConditionalBranch
                && i.near_branch_target() == start;
            if !back_to_head && (i.flow_control() != FlowControl::Next || i.has_segment_prefix()) {
                continue 'candidates;
            }
            len += i.len() as u64;
            taken.push(*i);
        }
        if !(JMP_LEN..=MAX_WINDOW).contains(&len) {
            continue;
        }
        let interiors: Vec<u64> = taken[1..].iter().map(|i| i.ip()).collect();
        if interiors.iter().any(|&at| lands(at)) {
            continue;
        }
        let at = instrs[k].ip();
        let code = super::uaccess::slice(at, len).ok()?;
        let replay = slot_table::replay_of(code, at)?;
        let mut original = [0u8; 16];
        original[..code.len()].copy_from_slice(code);
        return Some(Window { at, len, original, replay, interiors });
    }
    None
}

/// With the other CPUs stopped and the code mapped: if the window's bytes are still the ones
/// decoded, writes `jmp slot` over its start (int3 after it) and returns the slot's address.
/// `start` is the loop's head.
fn patch(start: u64, window: &Window, mapped: &dyn Fn(u64, u64) -> bool) -> Option<u64> {
    if super::shared_files::overlaps(window.at, window.at + window.len) {
        return None;
    }
    let old = super::uaccess::slice(window.at, window.len).ok()?;
    let mut at = 0;
    for r in &window.replay {
        if old[at..at + r.len] != r.bytes[..r.len] {
            return None;
        }
        at += r.len;
    }
    let back = window.at + window.len;
    let then = Then::Yield { back, head: start };
    let rel = slot_table::window_call(&window.replay, window.at + JMP_LEN, mapped, then)?;
    // Recorded before the bytes change: a saved rip inside the window resumes at the head.
    for &at in &window.interiors {
        super::rewrite::record_interior(at, at - start)?;
    }
    super::regsite::note_window(start, back);
    let mut new = [0xccu8; MAX_WINDOW as usize];
    new[0] = 0xe9; // jmp rel32
    new[1..5].copy_from_slice(&rel.to_le_bytes());
    crate::arch::call_gate::write_code(window.at, &new[..window.len as usize]);
    Some((window.at + JMP_LEN).wrapping_add(rel as i64 as u64))
}

/// The program makes `[start, end)` writable (mprotect): a rewritten loop there gets its
/// bytes back, with the other CPUs stopped, and is not rewritten again. A program that
/// patches its own code (a hot-patching framework, a test of its own bytes) then finds what
/// it wrote there; the slot's copy, which threads in it finish, jumps back after the window.
pub fn restore_writable(start: u64, end: u64) {
    if PATCHED.load(Ordering::Relaxed) == 0 {
        return;
    }
    let used = &LOOPS[..USED.load(Ordering::Acquire).min(MAX_LOOPS)];
    let hit = |l: &Loop| {
        let at = l.at.load(Ordering::Relaxed);
        l.slot.load(Ordering::Relaxed) != 0 && at < end && start < l.back.load(Ordering::Relaxed)
    };
    if !used.iter().any(hit) {
        return;
    }
    // Until the others stop: a CPU that waits for this one's interrupts cannot park, and the
    // timeout ends the attempt, which is made again after this CPU took its interrupts.
    let was = loop {
        let was = crate::arch::irq::save_and_disable();
        if crate::sched::freeze::freeze_others(FREEZE_TIMEOUT_NS, crate::sched::freeze::Halted::AreStopped) {
            break was;
        }
        crate::arch::irq::restore(was);
        core::hint::spin_loop();
    };
    for l in used.iter().filter(|l| hit(l)) {
        let (at, back) = (l.at.load(Ordering::Relaxed), l.back.load(Ordering::Relaxed));
        let mut bytes = [0u8; 16];
        for (chunk, word) in bytes.chunks_exact_mut(8).zip(&l.original) {
            chunk.copy_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
        }
        let len = ((back - at) as usize).min(bytes.len());
        let restore = || {
            if !super::shared_files::overlaps(at, back) {
                crate::arch::call_gate::write_code(at, &bytes[..len]);
            }
        };
        let written = super::usermem::while_mapped(at, back, restore);
        if written.is_some() {
            l.slot.store(0, Ordering::Relaxed);
            RESTORED.fetch_add(1, Ordering::Relaxed);
        }
    }
    crate::sched::freeze::thaw();
    crate::arch::irq::restore(was);
}

/// Loops given their bytes back (`restore_writable`).
static RESTORED: AtomicUsize = AtomicUsize::new(0);

/// An exec replaced the program's image (its other threads are gone): no loop is known.
pub fn reset() {
    let _serial = REMEMBER.lock();
    USED.store(0, Ordering::Release);
}

/// Program memory in `[start, end)` is unmapped: loops there are no longer the program's.
pub fn forget(start: u64, end: u64) {
    for l in &LOOPS[..USED.load(Ordering::Acquire).min(MAX_LOOPS)] {
        if (start..end).contains(&l.start.load(Ordering::Relaxed)) {
            l.slot.store(0, Ordering::Relaxed);
            l.start.store(u64::MAX, Ordering::Relaxed);
        }
    }
}
