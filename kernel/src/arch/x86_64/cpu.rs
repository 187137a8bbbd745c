//! Per-CPU state of this layer (the scheduler keeps its own, `sched::CpuSched`). Each CPU's
//! `PerCpu` sits in a static array and is reached through GS (see `percpu`), so finding it
//! costs one instruction. The layers above reach it as `crate::cpu`.

use core::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};

use hrt_abi::MAX_CPUS;

use super::gdt::{Gdt, Tss};
use super::percpu;
use crate::arch::PerCpuCell;

#[repr(C)]
pub struct PerCpu {
    /// Fields read from assembly through GS; offsets in `arch::percpu`.
    self_ptr: usize,
    id: usize,
    /// Kernel stack top of the running thread (for entries from ring 3).
    pub kernel_rsp: AtomicU64,
    /// Scratch slot for the ring-3 system-call entry.
    pub user_rsp: AtomicU64,
    /// Ring-3 mode: interrupts are masked on this CPU (the software interrupt flag).
    pub irq_off: AtomicU64,
    /// Ring-3 mode: interrupt vectors that arrived while masked, one bit each.
    pub irq_pending: [AtomicU64; 4],
    pub zone: AtomicUsize,
    /// The running thread (the scheduler's, as a plain address): every OpenMP runtime call
    /// starts from it, so it is one GS read away (`percpu::current_thread`).
    pub current_thread: AtomicU64,
    /// Plain spinlocks taken minus released on this CPU (`sync::spinlock`), written only by
    /// `percpu::add_spinlocks_held`; only the sum over the CPUs means anything.
    pub spinlocks_held: AtomicI64,
    /// Ring-3 mode: where the last interrupt noted for later found the CPU, for the handlers
    /// of vectors that sample it (`traps::register_sampling`), run later in ring 3.
    pub noted_rip: AtomicU64,
    /// Counted by `ring3::trap_ring3_relocate`'s short paths (`counters::line` adds them to
    /// `Stat::Eois` and `Stat::Irqs`).
    pub noted_irqs: AtomicU64,
    pub deferred_irqs: AtomicU64,
    /// Scratch of `ring3::syscall_entry` (the flags of a call-entered system call).
    pub entry_flags: AtomicU64,
    /// `percpu::MAGIC`, which the ring-3 entries compare first: a GS base the program set
    /// (WRGSBASE) has none (`ring3::syscall_entry`).
    pub magic: u64,
    pub online: AtomicBool,
    pub gdt: PerCpuCell<Gdt>,
    pub tss: PerCpuCell<Tss>,
}

impl PerCpu {
    const fn new() -> Self {
        PerCpu {
            self_ptr: 0,
            id: 0,
            kernel_rsp: AtomicU64::new(0),
            user_rsp: AtomicU64::new(0),
            irq_off: AtomicU64::new(0),
            irq_pending: [const { AtomicU64::new(0) }; 4],
            zone: AtomicUsize::new(0),
            current_thread: AtomicU64::new(0),
            spinlocks_held: AtomicI64::new(0),
            noted_rip: AtomicU64::new(0),
            noted_irqs: AtomicU64::new(0),
            deferred_irqs: AtomicU64::new(0),
            entry_flags: AtomicU64::new(0),
            magic: percpu::MAGIC as u64,
            online: AtomicBool::new(false),
            gdt: PerCpuCell::new(Gdt::new()),
            tss: PerCpuCell::new(Tss::new()),
        }
    }
}

struct PerCpuArray([PerCpuCell<PerCpu>; MAX_CPUS]);

static CPUS: PerCpuArray = PerCpuArray([const { PerCpuCell::new(PerCpu::new()) }; MAX_CPUS]);
static NUM_CPUS: AtomicUsize = AtomicUsize::new(1);

/// Points GS at CPU `id`'s record. First thing every CPU does.
pub fn init_this_cpu(id: usize, zone: usize) {
    let cpu = CPUS.0[id].get();
    // SAFETY: during early boot only CPU `id` touches its own record; GS then makes it the
    // current CPU's record for the lifetime of the kernel.
    unsafe {
        (*cpu).self_ptr = cpu as usize;
        (*cpu).id = id;
        (*cpu).zone.store(zone, Ordering::Relaxed);
        percpu::set_base(cpu as u64);
    }
}

/// A forked child's kernel: CPU `id`'s record as before boot (the parent's stacks, interrupt
/// state and running thread mean nothing here); `init_this_cpu` follows. The GDT and TSS stay
/// the parent's: their contents are the same for every boot of this CPU, and `gdt::load`
/// rewrites the TSS descriptor that the parent's `ltr` marked busy. (Writing the whole record
/// was ~70 instructions that a PVM host emulates in ring 0.)
///
/// # Safety
/// Only CPU `id` may call it, before anything uses its record.
pub unsafe fn reset(id: usize) {
    // SAFETY: the caller's contract: nothing else uses the record now.
    let cpu = unsafe { &mut *CPUS.0[id].get() };
    cpu.kernel_rsp = AtomicU64::new(0);
    cpu.user_rsp = AtomicU64::new(0);
    cpu.irq_off = AtomicU64::new(0);
    cpu.irq_pending = [const { AtomicU64::new(0) }; 4];
    cpu.current_thread = AtomicU64::new(0);
    cpu.online = AtomicBool::new(false);
}

pub fn set_count(n: usize) {
    NUM_CPUS.store(n, Ordering::Relaxed);
}

/// Number of CPUs in the VM.
pub fn count() -> usize {
    NUM_CPUS.load(Ordering::Relaxed)
}

/// Index of the CPU running this code.
#[inline(always)]
pub fn id() -> usize {
    percpu::cpu_id()
}

/// The running thread's record (see `PerCpu::current_thread`).
#[inline(always)]
pub fn current_thread() -> usize {
    percpu::current_thread()
}

/// The current CPU's record.
#[inline(always)]
pub fn this() -> &'static PerCpu {
    // SAFETY: GS:0 holds a pointer to this CPU's static record.
    unsafe { &*(percpu::self_ptr() as *const PerCpu) }
}

/// CPU `id`'s record (shared fields only: atomics and locks).
pub fn get(id: usize) -> &'static PerCpu {
    // SAFETY: records are static; callers only use their synchronised fields.
    unsafe { &*CPUS.0[id].get() }
}

/// Whether CPU `id` has come online (set by the CPU itself at the end of its set-up).
pub fn is_online(id: usize) -> bool {
    get(id).online.load(Ordering::Acquire)
}

/// Some CPU is dormant: a forked child's kernel starts its other CPUs only when a thread is
/// first placed on one of them (`ensure_online`). A child that execs or exits at once (most
/// forks) never starts them: on a PVM host each start costs ~600 emulated ring-0 instructions
/// and a vCPU that then polls a host CPU the child's other work needs, ~3 ms of a ~20 ms fork.
static SOME_DORMANT: AtomicBool = AtomicBool::new(false);
/// The dormant CPUs have been asked to start (`nr::START_CPUS`). Set with interrupts masked
/// right before the hypercall, so no code of this CPU sees it set before the CPUs start.
static STARTING: AtomicBool = AtomicBool::new(false);

/// Makes every CPU but this one dormant: offline, running nothing, until `ensure_online`.
/// A forked child's boot CPU, before any thread runs and before the others are started.
pub fn make_others_dormant() {
    let me = id();
    for c in (0..count()).filter(|&c| c != me) {
        get(c).online.store(false, Ordering::SeqCst);
        get(c).current_thread.store(0, Ordering::SeqCst);
        // Interrupts the parent's CPU had noted (one woken in its halt while memory was
        // copied, `sched::freeze`) are not this CPU's.
        for w in &get(c).irq_pending {
            w.store(0, Ordering::SeqCst);
        }
    }
    STARTING.store(false, Ordering::SeqCst);
    SOME_DORMANT.store(count() > 1, Ordering::SeqCst);
}

/// Whether CPU `c` is dormant (never started in this VM). Call `settle` first where a CPU
/// that is starting must not count as dormant.
pub fn is_dormant(c: usize) -> bool {
    SOME_DORMANT.load(Ordering::Acquire) && !is_online(c)
}

/// Waits until no CPU is between its start and coming online: afterwards each CPU is online
/// or dormant, and a dormant one stays so until this CPU asks (`ensure_online`). TLB
/// shootdowns and freezes skip dormant CPUs, which hold no translations and run nothing;
/// a starting one may already hold translations.
pub fn settle() {
    while SOME_DORMANT.load(Ordering::Acquire) && STARTING.load(Ordering::Acquire) && !all_online() {
        core::hint::spin_loop();
    }
}

fn all_online() -> bool {
    (0..count()).all(is_online)
}

/// Starts the dormant CPUs if CPU `c` is one, and waits until they are all online: call it
/// before placing a thread on `c`.
pub fn ensure_online(c: usize) {
    if !is_dormant(c) {
        return;
    }
    let was = super::irq::save_and_disable();
    if !STARTING.swap(true, Ordering::AcqRel) {
        super::hypercall::start_cpus();
    }
    super::irq::restore(was);
    while !all_online() {
        core::hint::spin_loop();
    }
    SOME_DORMANT.store(false, Ordering::SeqCst);
}

/// The interrupts CPU `cpu`'s entry short paths noted for later and deferred to ring 3.
pub fn short_path_irqs(cpu: usize) -> (u64, u64) {
    let c = get(cpu);
    (c.noted_irqs.load(Ordering::Relaxed), c.deferred_irqs.load(Ordering::Relaxed))
}

/// NUMA zone of the current CPU.
pub fn current_zone() -> usize {
    this().zone.load(Ordering::Relaxed)
}

pub fn zone_of(cpu: usize) -> usize {
    get(cpu).zone.load(Ordering::Relaxed)
}

/// APIC ID of CPU `cpu` (the monitor numbers them identically).
pub fn apic_id(cpu: usize) -> u32 {
    cpu as u32
}

// The assembly entry paths read these fields at fixed GS offsets.
const _: () = {
    assert!(core::mem::offset_of!(PerCpu, kernel_rsp) == percpu::OFF_KERNEL_RSP);
    assert!(core::mem::offset_of!(PerCpu, user_rsp) == percpu::OFF_USER_RSP);
    assert!(core::mem::offset_of!(PerCpu, irq_off) == percpu::OFF_IRQ_OFF);
    assert!(core::mem::offset_of!(PerCpu, irq_pending) == percpu::OFF_IRQ_PENDING);
    // The vDSO's getcpu reads the zone (NUMA node) at this offset (kernel/vdso/vdso.c).
    assert!(core::mem::offset_of!(PerCpu, zone) == 72);
    assert!(core::mem::offset_of!(PerCpu, current_thread) == percpu::OFF_CURRENT_THREAD);
    assert!(core::mem::offset_of!(PerCpu, spinlocks_held) == percpu::OFF_SPINLOCKS_HELD);
    assert!(core::mem::offset_of!(PerCpu, noted_rip) == percpu::OFF_NOTED_RIP);
    assert!(core::mem::offset_of!(PerCpu, noted_irqs) == percpu::OFF_NOTED_IRQS);
    assert!(core::mem::offset_of!(PerCpu, deferred_irqs) == percpu::OFF_DEFERRED_IRQS);
    assert!(core::mem::offset_of!(PerCpu, entry_flags) == percpu::OFF_ENTRY_FLAGS);
    assert!(core::mem::offset_of!(PerCpu, magic) == percpu::OFF_MAGIC);
};
