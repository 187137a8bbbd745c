//! Bring-up after `_start`: the boot CPU initialises memory, paging, descriptor tables, LAPIC,
//! time and the scheduler, releases the other CPUs, then runs the kernel's main thread. In
//! ring-3 mode it leaves ring 0 first and does most of that natively (`boot_cpu_in_ring3`).

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use alloc::string::String;
use hrt_abi::{BootInfo, Platform, ABI_VERSION, BOOT_MAGIC};

use crate::arch::{apic, fpu, gdt, hypercall, idt, paging};
use crate::{cpu, mem, sched, time};

static CPUS_ONLINE: AtomicUsize = AtomicUsize::new(0);
/// A CPU's IST stacks and ring-3 entry stack, one allocation.
const CPU_STACKS_BYTES: usize = (gdt::IST_COUNT + 1) * gdt::IST_STACK_SIZE;
/// The stacks of CPUs that have not booted yet, allocated by the boot CPU (0: none).
static PREPARED_STACKS: [AtomicU64; hrt_abi::MAX_CPUS] = [const { AtomicU64::new(0) }; hrt_abi::MAX_CPUS];
/// Each booted CPU's stacks. A forked child's CPU takes those of the parent's CPU of the same
/// number (in its copy of the parent's memory, used by nobody else there) instead of
/// allocating in emulated ring 0.
static CPU_STACKS: [AtomicU64; hrt_abi::MAX_CPUS] = [const { AtomicU64::new(0) }; hrt_abi::MAX_CPUS];

/// Entered from `_start` (`arch`'s entry code, by this link name) on every CPU. `fork_record`
/// is 0 on a boot, or in a forked child's VM the address of the kernel's fork record (see
/// `linux::calls::fork`).
#[unsafe(no_mangle)]
pub extern "C" fn hrt_kernel_entry(boot_info: u64, cpu_index: u64, fork_record: u64) -> ! {
    let cpu_index = cpu_index as usize;
    // SAFETY: the monitor passes the address of the block it wrote.
    let boot: &'static BootInfo = unsafe { &*(boot_info as *const BootInfo) };
    if fork_record != 0 {
        resume_forked(cpu_index, fork_record)
    }
    cpu::init_this_cpu(cpu_index, boot.cpu_zone[cpu_index] as usize);
    if cpu_index == 0 {
        boot_cpu(boot)
    } else {
        // A program's CPU started late (`cpu::ensure_online`): no longer counted as halted.
        crate::linux::channel::count_halted(cpu_index, false);
        secondary_cpu()
    }
}

fn boot_cpu(boot: &'static BootInfo) -> ! {
    if boot.magic != BOOT_MAGIC || boot.version != ABI_VERSION {
        kprintln!(
            "hrt: boot-info block has magic {:#x} version {} (want version {})",
            boot.magic,
            boot.version,
            ABI_VERSION
        );
        hypercall::shutdown(1);
    }
    crate::bootinfo::set_copied_by(|dst| {
        const WORDS: usize = core::mem::size_of::<BootInfo>() / 8;
        const _: () = assert!(core::mem::size_of::<BootInfo>().is_multiple_of(8));
        // SAFETY: `dst` is the kernel's copy, `boot` the monitor's block; both BootInfos.
        unsafe { crate::arch::memcpy::copy_words(dst as *mut u64, boot as *const BootInfo as *const u64, WORDS) }
    });
    // From here on the kernel's copy: the monitor's block is not mapped once the kernel's
    // page tables are active.
    let boot = crate::bootinfo::get();
    cpu::set_count(boot.num_cpus as usize);
    crate::console::set_quiet(boot.flags & hrt_abi::flags::QUIET != 0);
    crate::arch::features::init(boot.features);
    crate::arch::ring3::choose(kernel_in_ring3(boot));
    // Masked (in software, ring-3 mode) until this CPU drops to ring 3: see `irq::unmask_for_ring3`.
    crate::arch::irq::disable();
    if crate::arch::ring3::active() {
        // Handlers of interrupts that stop ring-3 code run in ring 3, natively: in emulated
        // ring 0 a timer or completion handler costs hundreds of instructions at 1-3 K cycles.
        crate::arch::traps::handle_interrupts_in_ring3();
        boot_cpu_in_ring3(boot)
    }
    time::init(boot.tsc_khz);
    let rewrite = memory_and_page_tables(boot, false);
    crate::arch::ring0::init(boot);
    crate::arch::traps::set_kernel_exception_handler(crate::panic::exception_panic);
    idt::init();
    configure_scheduler(boot);
    init_this_cpu();
    mem::finish_init();
    finish_boot(boot, rewrite)
}

/// Ring-3 mode (a PVM host, where ring 0 is emulated one instruction at a time): the boot CPU
/// leaves ring 0 as soon as its descriptor tables and entry points are in place, still on the
/// monitor's boot page tables (identity, user-accessible), and does the rest natively: the
/// allocator, the kernel's own page tables, and one ring-0 call to load them and enable its
/// local APIC. Building them in ring 0 was ~3,500 of the boot's ~5,500 emulated
/// instructions (~2.5 us each).
fn boot_cpu_in_ring3(boot: &'static BootInfo) -> ! {
    crate::arch::ring0::init(boot);
    crate::arch::traps::set_kernel_exception_handler(crate::panic::exception_panic);
    idt::init_for_boot();
    // No allocator yet: this CPU's IST and entry stacks are static.
    let stacks = BOOT_CPU_STACKS.0.get() as u64;
    load_cpu_tables(stacks);
    cpu_entry_points();
    let size = gdt::IST_STACK_SIZE as u64;
    crate::arch::ring3::init_cpu(stacks + gdt::IST_COUNT as u64 * size + size);
    crate::arch::irq::unmask_for_ring3();
    // SAFETY: the boot page tables map all RAM user-accessible; the entry stack, the ring-3
    // gates and SYSCALL entry are in place.
    unsafe { crate::arch::ring3::enter() };
    // Ring 3, natively, on the monitor's page tables: the exception gates and the clock first
    // (the time's divisions are a 128-bit division routine, ~40 emulated instructions).
    idt::init();
    time::init(boot.tsc_khz);
    let rewrite = memory_and_page_tables(boot, true);
    crate::arch::ring3::privileged(load_kernel_tables, 0, 0, 0);
    configure_scheduler(boot);
    sched::init_cpu();
    cpu::this().online.store(true, Ordering::Release);
    CPUS_ONLINE.fetch_add(1, Ordering::AcqRel);
    mem::finish_init();
    finish_boot(boot, rewrite)
}

/// The allocator, CPU features, the rewriting decision (returned) and the kernel's page tables
/// (`ring3`: kernel memory user-accessible), not yet loaded.
fn memory_and_page_tables(boot: &BootInfo, ring3: bool) -> bool {
    mem::init(boot);
    apic::detect();
    fpu::detect();
    let user = (boot.user_pool.size > 0).then(|| (boot.user_pool.base, boot.user_pool.base + boot.user_pool.size));
    let rewrite = crate::linux::rewrite::choose(boot);
    // Zone 0 first; with `--numa` the kernel's share (the top of RAM) may lie wholly in a later
    // zone, leaving zone 0 no room for the identity map's runs of tables at 48 GiB and more.
    paging::set_page_source(mem::table_pages::alloc_page, |pages| {
        (0..mem::num_zones()).find_map(|z| mem::table_pages::alloc_run(pages, z))
    });
    let absent = mem::unregistered();
    paging::build_identity_map(mem::ram_ranges(), !apic::is_x2apic(), user, ring3, absent);
    // What the monitor registered while the tables took their pages.
    paging::now_present(mem::unregistered().1, absent.1);
    rewrite
}

/// The boot CPU's IST stacks and ring-3 entry stack in ring-3 mode (`boot_cpu_in_ring3`).
#[repr(C, align(4096))]
struct BootCpuStacks(core::cell::UnsafeCell<[u8; (gdt::IST_COUNT + 1) * gdt::IST_STACK_SIZE]>);
// SAFETY: only the boot CPU uses them, as its exception and entry stacks.
unsafe impl Sync for BootCpuStacks {}
static BOOT_CPU_STACKS: BootCpuStacks =
    BootCpuStacks(core::cell::UnsafeCell::new([0; (gdt::IST_COUNT + 1) * gdt::IST_STACK_SIZE]));

/// The scheduler's settings from the boot-info block.
fn configure_scheduler(boot: &BootInfo) {
    sched::configure(
        boot.flags & hrt_abi::flags::IDLE_HALT != 0,
        boot.flags & hrt_abi::flags::IDLE_HALT_LATE != 0,
        boot.flags & hrt_abi::flags::IDLE_HALT_LONG != 0,
        boot.preempt_us,
        (boot.flags & hrt_abi::flags::HOST_OVERCOMMITTED != 0).then_some(boot.pack_on),
    );
}

/// The boot's common end: the system-call gate, the boot lines, the other CPUs, the main thread.
fn finish_boot(boot: &BootInfo, rewrite: bool) -> ! {
    crate::random::seed(&boot.seed);
    if rewrite {
        // Written in ring 3 (rewriting needs ring-3 mode): in emulated ring 0 its ~20,000
        // instructions cost 20-40 ms on a PVM host, more than the rest of the boot. No other
        // CPU runs yet, nor the program.
        crate::arch::call_gate::install();
    }
    fpu::prepare_initial();
    kinfo!(
        "kernel: up: {} CPUs, {} MiB in {} zone(s), {} pages, {}, TSC {} MHz{}, idle {}{}, kernel in ring {}",
        boot.num_cpus,
        boot.mem_size >> 20,
        boot.num_zones,
        if paging::has_1g_pages() { "1 GiB" } else { "2 MiB" },
        if apic::is_x2apic() { "x2APIC" } else { "xAPIC" },
        boot.tsc_khz / 1000,
        if crate::arch::features::has(crate::arch::features::STEAL_TIME) { ", steal time" } else { "" },
        if sched::idle_halts() { "halt" } else { "poll" },
        if boot.preempt_us > 0 { ", preemptive" } else { "" },
        if crate::arch::ring3::active() { 3 } else { 0 },
    );
    kinfo!(
        "kernel: platform: {}; PVM signature (synthetic CPUID 0x40000002): {}",
        Platform::from_u32(boot.platform).describe(),
        if crate::arch::pvm::signature_present() { "present" } else { "absent" }
    );
    if boot.num_cpus > 1 {
        // What the other CPUs would allocate in ring 0 (emulated on PVM), made here.
        for (id, prepared) in PREPARED_STACKS.iter().enumerate().take(boot.num_cpus as usize).skip(1) {
            let stacks = mem::alloc_pages(mem::order_for(CPU_STACKS_BYTES), Some(cpu::zone_of(id)));
            prepared.store(stacks.unwrap_or(0), Ordering::Release);
            sched::prepare_cpu(id);
        }
        if boot.program.size != 0 && boot.flags & hrt_abi::flags::CPUS_AT_BOOT == 0 {
            // A program starts on this CPU alone, the others dormant until a thread is placed
            // on one (`cpu::ensure_online`), as in a forked child: most programs never make a
            // thread, and starting a CPU is ~300 emulated ring-0 instructions, a vCPU the host
            // must run (0.5-3 ms of an empty program's start on a quiet host, more on a busy
            // one) and a host CPU its idle loop then polls. An OpenMP program's CPUs start here
            // (`flags::CPUS_AT_BOOT`): its first region would wait for them (2.5-7 ms).
            cpu::make_others_dormant();
        } else {
            hypercall::start_cpus();
            while CPUS_ONLINE.load(Ordering::Acquire) < boot.num_cpus as usize {
                core::hint::spin_loop();
            }
        }
    }
    let main = sched::spawn(sched::ThreadOptions::named("main").on_cpu(0), kernel_main)
        .expect("cannot create the main thread");
    main.detach();
    sched::idle::idle_loop()
}

/// One ring: on a PVM host (emulated ring 0) the kernel runs in ring 3 with the program,
/// unless the program runs in ring 0 (`--app-ring 0`) or `--kernel-ring 0` asks otherwise.
fn kernel_in_ring3(boot: &BootInfo) -> bool {
    boot.platform == Platform::PvmEmulated as u32
        && (boot.program.size == 0 || boot.app_ring != 0)
        && boot.flags & hrt_abi::flags::KERNEL_RING0 == 0
}

/// A forked child's VM: memory is the parent's at the fork (allocator, page tables, heap and the
/// program as they were); the boot CPU redoes only its hardware set-up and resumes the forking
/// thread alone. The other CPUs stay dormant until a thread is placed on one of them
/// (`cpu::ensure_online`): then each runs this from the start too.
fn resume_forked(cpu_index: usize, record: u64) -> ! {
    // The kernel's copy (the parent's, in this copy of its memory): the monitor's block is not
    // mapped once the kernel's page tables are active.
    let boot = crate::bootinfo::get();
    // SAFETY: nothing has used this CPU's record in this VM yet.
    unsafe { cpu::reset(cpu_index) };
    cpu::init_this_cpu(cpu_index, boot.cpu_zone[cpu_index] as usize);
    if cpu_index != 0 {
        // Its scheduler state was forgotten by the boot CPU when it made it dormant (below):
        // nothing to reset here, in emulated ring 0 (~250 instructions with the locks).
        // Started at last (`cpu::ensure_online`): no longer counted as halted.
        crate::linux::channel::count_halted(cpu_index, false);
        secondary_cpu()
    }
    CPUS_ONLINE.store(0, Ordering::SeqCst);
    if crate::arch::ring3::active() {
        resume_boot_cpu_in_ring3();
    } else {
        sched::reset_cpu_after_fork();
        init_this_cpu();
    }
    // From here in ring 3 where the kernel runs there (interrupts still masked, no other CPU
    // started): the resets sweep whole tables (the channel's per-slot and per-CPU words, the
    // futex buckets, the freeze and load records), ~4,700 instructions a fork, which emulated
    // ring 0 ran at ~1 us each.
    sched::reset_after_fork();
    // The other CPUs stay dormant until a thread is placed on one (`cpu::ensure_online`).
    // Made so before `prepare_child`: its unmapping of MADV_DONTFORK ranges shoots down TLBs,
    // and a CPU still marked online as the parent's was (busy, not idle) would be sent an IPI
    // that no vCPU of this VM ever answers (node's child hung so at `--cpus 2`).
    cpu::make_others_dormant();
    crate::linux::calls::fork::prepare_child(record);
    for c in (1..boot.num_cpus as usize).filter(|&c| cpu::is_dormant(c)) {
        sched::forget_dormant_cpu(c);
        crate::arch::steal_time::forget(c);
        crate::linux::channel::count_halted(c, true);
    }
    crate::linux::calls::fork::resume_child(record);
    sched::idle::idle_loop()
}

/// A forked child's boot CPU in ring-3 mode, as `boot_cpu_in_ring3`: in ring 0 only the
/// descriptor tables and entry points (on the monitor's boot page tables, which map all RAM
/// user-accessible), then ring 3, natively, for the rest, with one ring-0 call to load the
/// kernel's page tables and set up the local APIC. Done wholly in ring 0 the resume was ~850
/// instructions that a PVM host emulates at ~3 us each (~2.5 ms of every fork); the
/// scheduler's reset with its locks was ~250 of them and the IST stacks' allocation ~130.
fn resume_boot_cpu_in_ring3() {
    crate::arch::irq::disable();
    // The parent's boot CPU had its static stacks (`boot_cpu_in_ring3`); this copy of them is
    // the child's.
    let stacks = BOOT_CPU_STACKS.0.get() as u64;
    load_cpu_tables(stacks);
    cpu_entry_points();
    let size = gdt::IST_STACK_SIZE as u64;
    crate::arch::ring3::init_cpu(stacks + gdt::IST_COUNT as u64 * size + size);
    // SAFETY: the boot page tables map all RAM user-accessible; the entry stack, the ring-3
    // gates (the parent's IDT, in this copy) and SYSCALL entry are in place.
    unsafe { crate::arch::ring3::enter() };
    // Natively from here, still masked in software until the scheduler has its idle thread.
    crate::arch::ring3::privileged(load_kernel_tables, 0, 0, 0);
    sched::reset_cpu_after_fork();
    sched::init_cpu();
    crate::arch::irq::enable();
    cpu::this().online.store(true, Ordering::Release);
    CPUS_ONLINE.fetch_add(1, Ordering::AcqRel);
}

/// Ring 0, called from ring 3 (`ring3::privileged`): loads the kernel's page tables and
/// enables this CPU's local APIC.
extern "C" fn load_kernel_tables(_: u64, _: u64, _: u64) -> u64 {
    paging::activate();
    apic::init_cpu();
    0
}

fn secondary_cpu() -> ! {
    init_this_cpu();
    sched::idle::idle_loop()
}

/// Per-CPU set-up common to every CPU.
fn init_this_cpu() {
    // Masked in software (ring-3 mode) until the drop to ring 3, as on the boot CPU.
    crate::arch::irq::disable();
    paging::activate();
    let this = cpu::this();
    // The IST stacks and the ring-3 entry stack, one allocation, made ahead by the boot CPU
    // (natively) where it could: each buddy allocation here is ~150 instructions of ring 0,
    // which a PVM host emulates one by one.
    let size = gdt::IST_STACK_SIZE;
    let stacks = match PREPARED_STACKS[cpu::id()].swap(0, Ordering::AcqRel) {
        0 => match CPU_STACKS[cpu::id()].load(Ordering::Acquire) {
            0 => mem::alloc_pages(mem::order_for(CPU_STACKS_BYTES), None).expect("no memory for IST stacks"),
            parents => parents,
        },
        prepared => prepared,
    };
    CPU_STACKS[cpu::id()].store(stacks, Ordering::Release);
    load_cpu_tables(stacks);
    cpu_entry_points();
    apic::init_cpu();
    if crate::arch::ring3::active() {
        let entry_stack = stacks + (gdt::IST_COUNT * size) as u64;
        crate::arch::ring3::init_cpu(entry_stack + size as u64);
        // SAFETY: everything ring 3 needs is in place: user-accessible kernel memory, the
        // entry stack, the ring-3 gates and SYSCALL entry.
        unsafe { crate::arch::ring3::enter() };
        // Natively from here, still masked in software: the scheduler's idle thread first,
        // then whatever interrupt was noted meanwhile.
        sched::init_cpu();
        crate::arch::irq::enable();
    } else {
        sched::init_cpu();
    }
    this.online.store(true, Ordering::Release);
    CPUS_ONLINE.fetch_add(1, Ordering::AcqRel);
}

/// This CPU's GDT and TSS (its IST stacks the first `IST_COUNT` of `stacks`) and the IDT.
fn load_cpu_tables(stacks: u64) {
    let this = cpu::this();
    let size = gdt::IST_STACK_SIZE;
    // SAFETY: the IST stacks belong to this CPU's TSS forever.
    unsafe {
        let tss = &mut *this.tss.get();
        for slot in 0..gdt::IST_COUNT {
            tss.ist[slot] = stacks + ((slot + 1) * size) as u64;
        }
        gdt::load(&mut *this.gdt.get(), &*this.tss.get());
    }
    idt::load();
}

/// This CPU's SYSCALL entry, TSC_AUX and FPU control bits (ring 0).
fn cpu_entry_points() {
    crate::arch::syscall::init_cpu();
    crate::arch::steal_time::init_cpu(cpu::id());
    // On PVM the program's RDTSCP reads the host's TSC_AUX whatever the guest writes (the
    // vDSO's getcpu reads GS there): no emulated MSR write for nothing.
    let pvm = crate::bootinfo::get().platform == hrt_abi::Platform::PvmEmulated as u32;
    if crate::arch::features::has(crate::arch::features::RDTSCP) && !pvm {
        // RDTSCP (the vDSO's getcpu) reads TSC_AUX: cpu | node << 12, as on Linux.
        let aux = (cpu::id() as u64) | ((cpu::current_zone() as u64) << 12);
        // SAFETY: TSC_AUX only changes what RDTSCP/RDPID report.
        unsafe { crate::arch::instr::wrmsr(0xc000_0103, aux) };
    }
    fpu::init_cpu();
}

/// The kernel's main thread: runs what the command line asks for, then shuts down.
fn kernel_main() -> u64 {
    let cmdline = String::from(crate::bootinfo::get().cmdline());
    let mut words = cmdline.split_whitespace();
    let status = match words.next() {
        Some("selftest") => {
            let filter = words.find_map(|w| w.strip_prefix("filter="));
            crate::selftest::run_all(filter)
        }
        Some("bench") => crate::bench::run(words),
        Some("run") => {
            crate::linux::syscall::set_strace(crate::bootinfo::get().flags & hrt_abi::flags::STRACE != 0);
            // The program's threads run on; the VM ends when the program exits.
            crate::omp::register();
            crate::linux::start();
            return 0;
        }
        Some(other) => {
            kprintln!("hrt: unknown kernel command '{other}'");
            2
        }
        None => 0,
    };
    crate::console::flush_held();
    hypercall::shutdown(status)
}
