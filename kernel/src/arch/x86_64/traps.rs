//! Trap dispatch: exceptions (with a readable panic), registered interrupt handlers, and
//! fault probes that let self-tests provoke a fault and inspect how it was reported.

use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use super::{apic, instr};

/// Registers saved by `idt::trap_common`, then what the stub and the CPU pushed.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TrapFrame {
    pub r15: u64,
    pub r14: u64,
    pub r13: u64,
    pub r12: u64,
    pub r11: u64,
    pub r10: u64,
    pub r9: u64,
    pub r8: u64,
    pub rbp: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub rdx: u64,
    pub rcx: u64,
    pub rbx: u64,
    pub rax: u64,
    pub vector: u64,
    pub error: u64,
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
}

pub const VEC_PAGE_FAULT: u64 = 14;

pub fn exception_name(vector: u64) -> &'static str {
    match vector {
        0 => "Divide error (#DE)",
        1 => "Debug (#DB)",
        2 => "Non-maskable interrupt",
        3 => "Breakpoint (#BP)",
        4 => "Overflow (#OF)",
        5 => "Bound range exceeded (#BR)",
        6 => "Invalid opcode (#UD)",
        7 => "Device not available (#NM)",
        8 => "Double fault (#DF)",
        10 => "Invalid TSS (#TS)",
        11 => "Segment not present (#NP)",
        12 => "Stack-segment fault (#SS)",
        13 => "General protection fault (#GP)",
        14 => "Page fault (#PF)",
        16 => "x87 floating-point error (#MF)",
        17 => "Alignment check (#AC)",
        18 => "Machine check (#MC)",
        19 => "SIMD floating-point exception (#XM)",
        20 => "Virtualization exception (#VE)",
        21 => "Control protection exception (#CP)",
        _ => "Reserved exception",
    }
}

/// An interrupt handler: runs with interrupts disabled, on the interrupted thread's stack (or,
/// in ring-3 mode, later from `run_deferred` with a frame that holds only the vector).
pub type Handler = fn(&mut TrapFrame);

/// Handler per vector (0 = none), stored as `usize` so the table can be a lock-free static.
static HANDLERS: [AtomicUsize; 256] = [const { AtomicUsize::new(0) }; 256];
/// Vectors whose handlers run at once even when ring-3 mode defers interrupts: they take no
/// lock and touch no scheduler state (TLB shootdowns, whose initiator waits for them).
pub(super) static IMMEDIATE: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];

/// Installs `handler` for `vector` (>= 32) and makes the gate present.
pub fn register(vector: u8, handler: Handler) {
    assert!(vector >= 32, "vector {vector} is an exception");
    HANDLERS[vector as usize].store(handler as usize, Ordering::Release);
    super::idt::set_gate(vector, 0, false);
}

/// Vectors whose handler wants the interrupted instruction's address even when ring-3 mode
/// runs it later, in ring 3 (`register_sampling`).
static KEEPS_ADDRESS: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];

/// Like `register`, for a handler that samples where the interrupt found the CPU: in ring-3
/// mode, where the handler runs later with a frame that holds only the vector, the address
/// noted with the interrupt (`PerCpu::noted_rip`: by ring 0 for a masked one, from the kept
/// frame for one deferred to ring 3) is in the frame's `rip`. Run at once
/// in emulated ring 0 instead (`register_immediate`), `--profile`'s handler cost ~0.4 ms of
/// the vCPU's time per interrupt on PVM, against ~0.1 ms this way.
pub fn register_sampling(vector: u8, handler: Handler) {
    KEEPS_ADDRESS[vector as usize / 64].fetch_or(1 << (vector % 64), Ordering::AcqRel);
    register(vector, handler);
}

fn keeps_address(v: usize) -> bool {
    KEEPS_ADDRESS[v / 64].load(Ordering::Relaxed) & (1 << (v % 64)) != 0
}

/// Like `register`, for a handler that may run wherever the interrupt arrives, even while
/// ring-3 mode masks interrupts (see `IMMEDIATE`).
pub fn register_immediate(vector: u8, handler: Handler) {
    IMMEDIATE[vector as usize / 64].fetch_or(1 << (vector % 64), Ordering::AcqRel);
    register(vector, handler);
}

/// Hooks the upper layers install, so that this layer needs to know neither the Linux ABI nor
/// the scheduler. 0 = none.
static USER_RETURN_HOOK: AtomicUsize = AtomicUsize::new(0);
static SYSCALL_HANDLER: AtomicUsize = AtomicUsize::new(0);
static USER_EXCEPTION_HANDLER: AtomicUsize = AtomicUsize::new(0);
static AFTER_INTERRUPT_HOOK: AtomicUsize = AtomicUsize::new(0);
static RING3_WORK_QUERY: AtomicUsize = AtomicUsize::new(0);
static RING3_WORK_HOOK: AtomicUsize = AtomicUsize::new(0);
static PROGRAM_INTERRUPTED_HOOK: AtomicUsize = AtomicUsize::new(0);
static PROGRAM_RESUMES_HOOK: AtomicUsize = AtomicUsize::new(0);

/// Installs the function run with the program's registers whenever a trap (system call,
/// exception, interrupt) returns to the program.
pub fn set_user_return_hook(hook: Handler) {
    USER_RETURN_HOOK.store(hook as usize, Ordering::Release);
}

/// Installs the handler of the program's system calls (the frame holds its registers).
pub fn set_syscall_handler(handler: Handler) {
    SYSCALL_HANDLER.store(handler as usize, Ordering::Release);
}

/// A program's exception: the frame and the faulting address (CR2 for page faults).
pub type ExceptionHandler = fn(&mut TrapFrame, u64);

/// Installs the handler of exceptions raised by program code.
pub fn set_user_exception_handler(handler: ExceptionHandler) {
    USER_EXCEPTION_HANDLER.store(handler as usize, Ordering::Release);
}

/// Ring-3 mode: installs work that a trap handled in ring 0 may leave for ring 3 (what ring 0
/// must not execute, such as XSAVE): when `wanted` says so, the trap returns to the program
/// through ring 3, where `hook` runs with the program's registers first.
pub fn set_ring3_work_hook(wanted: fn() -> bool, hook: Handler) {
    RING3_WORK_HOOK.store(hook as usize, Ordering::Release);
    RING3_WORK_QUERY.store(wanted as usize, Ordering::Release);
}

/// Ring-3 mode: installs the function run in ring 3 with the program's registers when an
/// interrupt that stopped program code returns through ring 3 (`set_resched_query` asked for
/// it): the scheduler looks there at where the program was.
pub fn set_program_interrupted_hook(hook: Handler) {
    PROGRAM_INTERRUPTED_HOOK.store(hook as usize, Ordering::Release);
}

/// Installs the function run with the program's registers when an interrupt or exception of
/// program code has been handled, after the scheduler's preemption point: the thread may have
/// been switched away and moved meanwhile (the Linux layer's rseq looks there).
pub fn set_program_resumes_hook(hook: Handler) {
    PROGRAM_RESUMES_HOOK.store(hook as usize, Ordering::Release);
}

/// An exception in the kernel's own code: reports it and stops (the frame and CR2).
pub type KernelExceptionHandler = fn(&TrapFrame, u64) -> !;

static KERNEL_EXCEPTION_HANDLER: AtomicUsize = AtomicUsize::new(0);

/// Installs the report of exceptions in the kernel's own code (the panic module's).
pub fn set_kernel_exception_handler(handler: KernelExceptionHandler) {
    KERNEL_EXCEPTION_HANDLER.store(handler as usize, Ordering::Release);
}

/// Installs the function run at the end of every interrupt (the scheduler's preemption point).
pub fn set_after_interrupt_hook(hook: fn()) {
    AFTER_INTERRUPT_HOOK.store(hook as usize, Ordering::Release);
}

fn load_handler(slot: &AtomicUsize) -> Option<Handler> {
    let h = slot.load(Ordering::Acquire);
    // SAFETY: only the setters above store non-zero values in these slots, and they are
    // `Handler`s.
    (h != 0).then(|| unsafe { core::mem::transmute::<usize, Handler>(h) })
}

fn after_interrupt() {
    let h = AFTER_INTERRUPT_HOOK.load(Ordering::Acquire);
    if h != 0 {
        // SAFETY: only `set_after_interrupt_hook` stores it, and it is a `fn()`.
        let hook: fn() = unsafe { core::mem::transmute::<usize, fn()>(h) };
        hook();
    }
}

/// True if the trap interrupted (or, for a system call, came from) program code.
fn from_program(frame: &TrapFrame) -> bool {
    if frame.vector == super::syscall::SYSCALL_VECTOR {
        return true;
    }
    if frame.cs & 3 == 3 {
        return !super::ring3::active() || !super::ring3::is_kernel_code(frame.rip) && !in_entry_window(frame);
    }
    super::ring0::interrupted_program(frame)
}

fn in_entry_window(frame: &TrapFrame) -> bool {
    super::ring3::active() && super::ring3::in_entry_window(frame.rip)
}

/// Called by `trap_common` for every trap, with interrupts disabled. Returns non-zero when
/// the interrupted thread should give up its CPU before it continues: in ring-3 mode that
/// happens in ring 3 (`hrt_preempt_ring3`), never in ring 0, so that thread switches (and the
/// XSAVE they do) always run in ring 3.
pub extern "C" fn dispatch(frame: &mut TrapFrame) -> u64 {
    if deferrable_exception(frame) && defer_fault_to_ring3(frame) {
        return 1;
    }
    if frame.vector >= 32 && frame.vector != super::syscall::SYSCALL_VECTOR && super::ring3::active() {
        if defer_to_ring3(frame) {
            return 1;
        }
        if interrupt_ring3(frame) {
            return 0;
        }
    } else {
        dispatch_trap(frame);
    }
    if from_program(frame) {
        if let Some(hook) = load_handler(&USER_RETURN_HOOK) {
            hook(frame);
        }
        if !super::ring3::active() {
            if let Some(hook) = load_handler(&PROGRAM_RESUMES_HOOK) {
                hook(frame);
            }
        }
        if super::ring3::active() {
            // The program runs with interrupts enabled, whatever the handlers left.
            super::irq::enable();
        }
    }
    if !super::ring3::active() {
        return 0;
    }
    let in_ring0 = super::ring3::in_ring0();
    let ring3_next = in_ring0 && frame.cs & 3 == 3 && (query(&RESCHED_QUERY) || query(&RING3_WORK_QUERY));
    if ring3_next || !in_ring0 {
        // The rest of this trap's path runs in ring 3 (the preemption below, or a system call
        // or a thread resumed after a switch in ring 0): masked until the return path's
        // window unmasks, so that interrupts arriving meanwhile are noted, not stacked.
        super::cpu::this().irq_off.store(1, Ordering::Relaxed);
    }
    ring3_next as u64
}

/// Whether interrupts that stop unmasked ring-3 code run their handlers in ring 3
/// (`defer_to_ring3`).
pub(super) static HANDLE_IN_RING3: AtomicBool = AtomicBool::new(false);
/// Per CPU: the trap on its way to `preempt_in_ring3` was deferred by `defer_to_ring3`.
pub(super) static DEFERRED: [AtomicBool; hrt_abi::MAX_CPUS] = [const { AtomicBool::new(false) }; hrt_abi::MAX_CPUS];

/// Ring-3 mode: from now on, an interrupt that stops ring-3 code with interrupts enabled is
/// only noted in ring 0, and its handler runs in ring 3 (emulated ring 0 costs thousands of
/// cycles per instruction). Boot turns it on in ring-3 mode.
pub fn handle_interrupts_in_ring3() {
    HANDLE_IN_RING3.store(true, Ordering::Release);
}

/// See `handle_interrupts_in_ring3`: notes the interrupt (as a masked one is noted), masks,
/// and has `dispatch` continue in ring 3 (`preempt_in_ring3` runs the handler there).
fn defer_to_ring3(frame: &TrapFrame) -> bool {
    if !HANDLE_IN_RING3.load(Ordering::Relaxed) {
        return false;
    }
    let v = frame.vector as usize;
    let cpu = super::cpu::this();
    if frame.cs & 3 == 0
        || cpu.irq_off.load(Ordering::Relaxed) != 0
        || in_entry_window(frame)
        || v == apic::SPURIOUS_VECTOR as usize
        || IMMEDIATE[v / 64].load(Ordering::Relaxed) & (1 << (v % 64)) != 0
    {
        return false;
    }
    cpu.irq_pending[v / 64].fetch_or(1 << (v % 64), Ordering::AcqRel);
    crate::arch::counters::add(crate::arch::counters::Stat::Irqs, 1);
    apic::eoi();
    cpu.irq_off.store(1, Ordering::Relaxed);
    DEFERRED[super::percpu::cpu_id()].store(true, Ordering::Relaxed);
    true
}

/// The exceptions of the program that `user_exception` turns into signals and that need
/// nothing of ring 0 but CR2: page faults, #DE, #OF, #BR, #UD (not the system-call
/// trampoline's, `syscall_from_trampoline`), #SS, #GP, #MF, #AC and #XM. Debug traps, #NM and
/// the aborts stay in ring 0.
fn deferrable_exception(frame: &TrapFrame) -> bool {
    match frame.vector {
        VEC_PAGE_FAULT | 0 | 4 | 5 | 12 | 13 | 16 | 17 | 19 => true,
        6 => frame.rip != super::syscall::trampoline_page(),
        _ => false,
    }
}

/// Per CPU: the program's exception on its way to `preempt_in_ring3`, and a page fault's
/// address (CR2, which only ring 0 can read).
static FAULT_DEFERRED: [AtomicBool; hrt_abi::MAX_CPUS] = [const { AtomicBool::new(false) }; hrt_abi::MAX_CPUS];
static FAULT_ADDRESS: [AtomicU64; hrt_abi::MAX_CPUS] = [const { AtomicU64::new(0) }; hrt_abi::MAX_CPUS];

/// Ring-3 mode: a page fault (or another `deferrable_exception`) of the program is handled in
/// ring 3, as interrupts are (`defer_to_ring3`): ring 0 only reads CR2 and leaves. In emulated
/// ring 0 the handler's instructions cost thousands of cycles each: making one lazy 2 MiB page
/// present there took ~0.9 M cycles (`linux::protect`), a signal's delivery as much again (a
/// SIGILL or SIGSEGV from #GP caught with siglongjmp: ~2.5 M cycles).
fn defer_fault_to_ring3(frame: &TrapFrame) -> bool {
    if !HANDLE_IN_RING3.load(Ordering::Relaxed)
        || frame.cs & 3 != 3
        || !super::ring3::in_ring0()
        || !from_program(frame)
    {
        return false;
    }
    let cpu = super::percpu::cpu_id();
    let cr2 = if frame.vector == VEC_PAGE_FAULT { instr::read_cr2() } else { 0 };
    FAULT_ADDRESS[cpu].store(cr2, Ordering::Relaxed);
    FAULT_DEFERRED[cpu].store(true, Ordering::Relaxed);
    // Masked until the return path's window, as for a deferred interrupt.
    super::cpu::this().irq_off.store(1, Ordering::Relaxed);
    true
}

/// `exception` for an exception of the program, in ring 3 (`defer_fault_to_ring3`).
fn program_exception(frame: &mut TrapFrame, cr2: u64) {
    if frame.vector == VEC_PAGE_FAULT && super::paging::retry_spurious_fault(cr2, frame.error) {
        return;
    }
    user_exception(frame, cr2);
}

/// Ring 3, on the interrupted thread's stack just below its trap frame, interrupts masked: the
/// program's exception or the handlers `defer_to_ring3` left, the work left for ring 3 and
/// the preemption that `dispatch` asked for (`hrt_preempt_ring3` then returns through the
/// frame).
extern "C" fn preempt_in_ring3(frame: &mut TrapFrame) {
    let cpu = super::percpu::cpu_id();
    let fault = FAULT_DEFERRED[cpu].swap(false, Ordering::Relaxed);
    if fault {
        program_exception(frame, FAULT_ADDRESS[cpu].load(Ordering::Relaxed));
    }
    // The fault's handler may have slept (a file page read from the host) and woken elsewhere.
    let cpu = super::percpu::cpu_id();
    let deferred = HANDLE_IN_RING3.load(Ordering::Relaxed) && DEFERRED[cpu].swap(false, Ordering::Relaxed);
    if deferred {
        // The interrupt that brought us here stopped the code at the frame's address (the
        // ring-3 entry's short path and `defer_to_ring3` both keep the frame).
        super::cpu::this().noted_rip.store(frame.rip, Ordering::Relaxed);
        // Handlers only: the preemption point comes below, after the hooks (the scheduler's
        // look at the program must see what the timer's handler asked for).
        run_noted_handlers(super::cpu::this());
    }
    if from_program(frame) {
        if deferred || fault {
            if let Some(hook) = load_handler(&USER_RETURN_HOOK) {
                hook(frame);
            }
        }
        if let Some(hook) = load_handler(&RING3_WORK_HOOK) {
            hook(frame);
        }
        let interrupt = frame.vector >= 32 && frame.vector != super::syscall::SYSCALL_VECTOR;
        if let Some(hook) = load_handler(&PROGRAM_INTERRUPTED_HOOK).filter(|_| interrupt) {
            hook(frame);
        }
    }
    after_interrupt();
    if from_program(frame) {
        if let Some(hook) = load_handler(&PROGRAM_RESUMES_HOOK) {
            hook(frame);
        }
    }
    // Still masked (`dispatch`): the return path unmasks.
}

/// Asks a `fn() -> bool` installed in `slot` (false when none is).
fn query(slot: &AtomicUsize) -> bool {
    let h = slot.load(Ordering::Acquire);
    // SAFETY: only `set_resched_query` and `set_ring3_work_hook` store these, and they are
    // `fn() -> bool`s.
    h != 0 && unsafe { core::mem::transmute::<usize, fn() -> bool>(h) }()
}

static RESCHED_QUERY: AtomicUsize = AtomicUsize::new(0);

/// Installs the scheduler's "does this CPU want to switch threads" test, asked before a trap
/// returns to ring 3 in ring-3 mode.
pub fn set_resched_query(query: fn() -> bool) {
    RESCHED_QUERY.store(query as usize, Ordering::Release);
}

core::arch::global_asm!(
    ".section .text",
    ".global hrt_preempt_ring3",
    "hrt_preempt_ring3:",
    "    mov rbx, rsp",
    "    mov rdi, rsp",
    "    and rsp, -16",
    "    call {preempt}",
    "    mov rsp, rbx",
    "    jmp hrt_trap_return",
    preempt = sym preempt_in_ring3,
);

/// An interrupt in ring-3 mode. Returns true if it was only noted (the interrupted code had
/// interrupts masked, was in ring 0, or was in the system-call entry's first instructions):
/// then nothing else may run before the return.
fn interrupt_ring3(frame: &mut TrapFrame) -> bool {
    let v = frame.vector as usize;
    let cpu = super::cpu::this();
    let masked = frame.cs & 3 == 0 || cpu.irq_off.load(Ordering::Relaxed) != 0 || in_entry_window(frame);
    let immediate = IMMEDIATE[v / 64].load(Ordering::Relaxed) & (1 << (v % 64)) != 0;
    if masked && !immediate {
        if v != apic::SPURIOUS_VECTOR as usize {
            cpu.noted_rip.store(frame.rip, Ordering::Relaxed);
            cpu.irq_pending[v / 64].fetch_or(1 << (v % 64), Ordering::AcqRel);
            apic::eoi();
        }
        return true;
    }
    let was_off = cpu.irq_off.swap(1, Ordering::Relaxed);
    run_handler(frame);
    if v != apic::SPURIOUS_VECTOR as usize {
        apic::eoi();
    }
    if masked {
        // Immediate handler inside masked code: back at once, mask unchanged.
        cpu.irq_off.store(was_off, Ordering::Relaxed);
        return true;
    }
    // The scheduler's preemption point (it waits for ring 3 when called in ring 0).
    after_interrupt();
    super::irq::enable();
    false
}

fn run_handler(frame: &mut TrapFrame) {
    if let Some(handler) = load_handler(&HANDLERS[frame.vector as usize]) {
        handler(frame);
    }
}

/// Ring-3 mode: handles the interrupts noted while this CPU masked them, as if they arrived
/// now (they were acknowledged when noted). Called by `irq::enable` when bits are pending.
pub fn run_deferred() {
    let cpu = super::cpu::this();
    loop {
        cpu.irq_off.store(1, Ordering::Relaxed);
        run_noted(cpu);
        cpu.irq_off.store(0, Ordering::Relaxed);
        if !super::irq::pending(cpu) {
            return;
        }
    }
}

/// The ring-3 trap return's drain (`idt.rs`): runs the noted interrupts with the mask kept on;
/// the return path checks again inside its window and unmasks there. Returning to the
/// program, the program-resumes hook runs after them: their preemption point may have switched
/// the thread away, and a `request_return_look` comes this way.
pub extern "C" fn drain_noted_masked(frame: &mut TrapFrame) {
    let cpu = super::cpu::this();
    cpu.irq_off.store(1, Ordering::Relaxed);
    run_noted(cpu);
    if from_program(frame) {
        if let Some(hook) = load_handler(&PROGRAM_RESUMES_HOOK) {
            hook(frame);
        }
    }
}

/// A vector noted, never sent, with no work of its own: see `request_return_look`.
const RETURN_LOOK_VECTOR: u8 = 0xf3;

/// Makes CPU `cpu`'s next return to program code from a trap pass the program-resumes hook
/// (`set_program_resumes_hook`), even one already on its way back with interrupts masked:
/// notes a vector there, which the ring-3 return's window drains. The caller then interrupts
/// `cpu` (an interrupt inside that window is taken as if at the program, which passes the
/// hook as well).
pub fn request_return_look(cpu: usize) {
    static REGISTERED: AtomicBool = AtomicBool::new(false);
    if !REGISTERED.swap(true, Ordering::AcqRel) {
        register(RETURN_LOOK_VECTOR, |_| {});
    }
    let v = RETURN_LOOK_VECTOR as usize;
    super::cpu::get(cpu).irq_pending[v / 64].fetch_or(1 << (v % 64), Ordering::AcqRel);
}

/// Runs the handlers of the vectors noted on `cpu` (mask on), then the scheduler's
/// preemption point if there were any.
fn run_noted(cpu: &super::cpu::PerCpu) {
    if run_noted_handlers(cpu) {
        after_interrupt();
    }
}

/// Runs the handlers of the vectors noted on `cpu` (mask on); true if there were any.
fn run_noted_handlers(cpu: &super::cpu::PerCpu) -> bool {
    let mut any = false;
    for (word, bits) in cpu.irq_pending.iter().enumerate() {
        let mut bits = bits.swap(0, Ordering::AcqRel);
        while bits != 0 {
            let bit = bits.trailing_zeros() as u64;
            bits &= bits - 1;
            let mut frame = TrapFrame::for_vector(word as u64 * 64 + bit);
            if keeps_address(frame.vector as usize) {
                frame.rip = cpu.noted_rip.load(Ordering::Relaxed);
            }
            run_handler(&mut frame);
            any = true;
        }
    }
    any
}

impl TrapFrame {
    /// Every register zero.
    pub const ZERO: TrapFrame = TrapFrame {
        r15: 0,
        r14: 0,
        r13: 0,
        r12: 0,
        r11: 0,
        r10: 0,
        r9: 0,
        r8: 0,
        rbp: 0,
        rdi: 0,
        rsi: 0,
        rdx: 0,
        rcx: 0,
        rbx: 0,
        rax: 0,
        vector: 0,
        error: 0,
        rip: 0,
        cs: 0,
        rflags: 0,
        rsp: 0,
        ss: 0,
    };

    /// A frame that carries only a vector (for handlers run after the fact).
    fn for_vector(vector: u64) -> TrapFrame {
        TrapFrame { vector, ..TrapFrame::ZERO }
    }
}

/// Runs the installed system-call handler on `frame`.
pub(super) fn syscall(frame: &mut TrapFrame) {
    if let Some(handler) = load_handler(&SYSCALL_HANDLER) {
        handler(frame);
    }
}

fn dispatch_trap(frame: &mut TrapFrame) {
    if frame.vector == super::syscall::SYSCALL_VECTOR {
        syscall(frame);
        return;
    }
    if frame.vector < 32 {
        exception(frame);
        return;
    }
    run_handler(frame);
    if frame.vector != apic::SPURIOUS_VECTOR as u64 {
        apic::eoi();
    }
    after_interrupt();
}

/// A rewritten system-call site enters the kernel by `call`, which keeps the program's flags
/// where SYSCALL clears them by its mask. With the trap flag set, kernel code took #DB after
/// its first instruction; with AC, #AC at its first misaligned access; with NT, #GP at its
/// IRETQ; and each was a kernel panic (the Linux kernel's x86 selftest syscall_nt). Such an
/// exception in kernel code (or page 0, where the gate once was) clears that flag and the code
/// goes on. The program gets back the flags the entry saved after that: AC stays cleared after
/// such a call (Linux keeps it), NT comes back through the IRETQ's frame. TF traps first in the
/// gate, which is program-executable: the upper layer turns that step into the system call
/// with TF kept (`linux::rewrite::single_step_into_gate`), as a step over SYSCALL.
fn program_flags_in_kernel(frame: &mut TrapFrame) -> bool {
    const TF: u64 = 1 << 8;
    const NT: u64 = 1 << 14;
    const AC: u64 = 1 << 18;
    let flag = match frame.vector {
        1 => TF,
        13 => NT,
        17 => AC,
        _ => return false,
    };
    let in_kernel = frame.rip < 4096 || !from_program(frame);
    if !in_kernel || frame.rflags & flag == 0 {
        return false;
    }
    frame.rflags &= !flag;
    true
}

/// An exception the kernel cannot handle: the upper layer's report (`set_kernel_exception_handler`),
/// or, before there is one, the bare panic hypercall.
fn kernel_exception(frame: &TrapFrame, cr2: u64) -> ! {
    let h = KERNEL_EXCEPTION_HANDLER.load(Ordering::Acquire);
    if h == 0 {
        super::hypercall::report_panic();
    }
    // SAFETY: only `set_kernel_exception_handler` stores it, and it is a `KernelExceptionHandler`.
    let handler = unsafe { core::mem::transmute::<usize, KernelExceptionHandler>(h) };
    handler(frame, cr2)
}

fn user_exception(frame: &mut TrapFrame, cr2: u64) {
    let h = USER_EXCEPTION_HANDLER.load(Ordering::Acquire);
    if h == 0 {
        kernel_exception(frame, cr2);
    }
    // SAFETY: only `set_user_exception_handler` stores it, and it is an `ExceptionHandler`.
    let handler: ExceptionHandler = unsafe { core::mem::transmute::<usize, ExceptionHandler>(h) };
    handler(frame, cr2);
}

fn exception(frame: &mut TrapFrame) {
    let cr2 = if frame.vector == VEC_PAGE_FAULT { instr::read_cr2() } else { 0 };
    if probe_recover(frame, cr2) {
        return;
    }
    if frame.vector == VEC_PAGE_FAULT && super::paging::retry_spurious_fault(cr2, frame.error) {
        return;
    }
    if copy_recover(frame) {
        return;
    }
    if program_flags_in_kernel(frame) {
        return;
    }
    if frame.cs & 3 == 3 {
        if frame.vector == 6 && frame.rip == super::syscall::trampoline_page() {
            super::syscall::syscall_from_trampoline(frame);
            return;
        }
        if from_program(frame) {
            user_exception(frame, cr2);
            return;
        }
        kernel_exception(frame, cr2);
    }
    if super::ring0::interrupted_program(frame) {
        user_exception(frame, cr2);
        return;
    }
    kernel_exception(frame, cr2);
}

/// What a caught fault looked like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultInfo {
    pub vector: u64,
    pub error: u64,
    pub address: u64,
    pub rip: u64,
}

/// The fault most recently caught by a probe on each CPU.
static LAST_FAULT: [crate::arch::PerCpuCell<Option<FaultInfo>>; hrt_abi::MAX_CPUS] =
    [const { crate::arch::PerCpuCell::new(None) }; hrt_abi::MAX_CPUS];

core::arch::global_asm!(
    ".section .text",
    ".global hrt_probe_read",
    "hrt_probe_read:",
    "    mov rax, [rdi]",
    "    xor edx, edx",
    "    ret",
    ".global hrt_probe_read_fixup",
    "hrt_probe_read_fixup:",
    "    mov edx, 1",
    "    ret",
    ".global hrt_probe_ud2",
    "hrt_probe_ud2:",
    "    ud2",
    "    xor edx, edx",
    "    ret",
    ".global hrt_probe_ud2_fixup",
    "hrt_probe_ud2_fixup:",
    "    mov edx, 1",
    "    ret",
    // copy(dst, src, len): the bytes left when a fault stopped it (0: all copied).
    ".global hrt_copy_catching",
    "hrt_copy_catching:",
    "    mov rcx, rdx",
    ".global hrt_copy_catching_movsb",
    "hrt_copy_catching_movsb:",
    "    rep movsb",
    ".global hrt_copy_catching_fixup",
    "hrt_copy_catching_fixup:",
    "    mov rax, rcx",
    "    ret",
);

extern "C" {
    fn hrt_probe_read(addr: u64);
    fn hrt_probe_read_fixup();
    fn hrt_probe_ud2(unused: u64);
    fn hrt_probe_ud2_fixup();
    fn hrt_copy_catching(dst: *mut u8, src: *const u8, len: usize) -> usize;
    fn hrt_copy_catching_movsb();
    fn hrt_copy_catching_fixup();
}

/// Copies `len` bytes from `src` to `dst`, either of which may be program memory that another
/// CPU unmaps or write-protects meanwhile (the checks before a copy cannot see that): a page
/// fault on the way ends the copy instead of the kernel. False if it did; what was copied
/// until then stays.
///
/// # Safety
/// `dst` and `src` are valid for `len` bytes but for such concurrent changes of the program's
/// memory, and do not overlap.
pub unsafe fn copy_catching_faults(dst: *mut u8, src: *const u8, len: usize) -> bool {
    // SAFETY: the caller's promise; a fault inside is turned into an early return by
    // `copy_recover`.
    unsafe { hrt_copy_catching(dst, src, len) == 0 }
}

/// If a page fault stopped `copy_catching_faults`, resumes after its copy (rcx holds the bytes
/// left, which it returns). Faults a stale TLB entry caused were retried before this.
fn copy_recover(frame: &mut TrapFrame) -> bool {
    if frame.vector != VEC_PAGE_FAULT || frame.rip != hrt_copy_catching_movsb as *const () as u64 {
        return false;
    }
    frame.rip = hrt_copy_catching_fixup as *const () as u64;
    true
}

/// If the fault happened at a probe instruction, records it and resumes at the fixup.
fn probe_recover(frame: &mut TrapFrame, cr2: u64) -> bool {
    let fixup = if frame.rip == hrt_probe_read as *const () as u64 {
        hrt_probe_read_fixup as *const () as u64
    } else if frame.rip == hrt_probe_ud2 as *const () as u64 {
        hrt_probe_ud2_fixup as *const () as u64
    } else {
        return false;
    };
    let info = FaultInfo { vector: frame.vector, error: frame.error, address: cr2, rip: frame.rip };
    // SAFETY: interrupts are off and the slot belongs to this CPU.
    unsafe { *LAST_FAULT[super::percpu::cpu_id()].get() = Some(info) };
    frame.rip = fixup;
    true
}

fn probe(f: unsafe extern "C" fn(u64), arg: u64) -> Result<u64, FaultInfo> {
    let was = super::irq::save_and_disable();
    let value: u64;
    let faulted: u64;
    // SAFETY: the probe functions follow the C ABI but report the fault flag in rdx; a fault
    // inside them is turned into a return through the fixup by `probe_recover`.
    unsafe {
        core::arch::asm!("call {f}", f = in(reg) f, in("rdi") arg, lateout("rax") value,
                         lateout("rdx") faulted, clobber_abi("C"));
    }
    // SAFETY: interrupts are still off; the slot belongs to this CPU.
    let info = unsafe { (*LAST_FAULT[super::percpu::cpu_id()].get()).take() };
    super::irq::restore(was);
    if faulted != 0 {
        Err(info.expect("probe fault without a record"))
    } else {
        Ok(value)
    }
}

/// Reads 8 bytes at `addr`, catching the fault if there is one.
pub fn probe_read(addr: u64) -> Result<u64, FaultInfo> {
    probe(hrt_probe_read, addr)
}

/// Executes `ud2` and returns the #UD it raised.
pub fn probe_invalid_opcode() -> Result<u64, FaultInfo> {
    probe(hrt_probe_ud2, 0)
}

/// Where `probe_invalid_opcode`'s ud2 sits, for tests comparing the reported rip.
pub fn invalid_opcode_probe_address() -> u64 {
    hrt_probe_ud2 as *const () as u64
}
