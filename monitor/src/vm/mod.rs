//! A KVM virtual machine running the HRT kernel: creation, boot, vCPU threads, hypercalls.

mod boot_info;
mod channel;
mod core_file;
mod cpuid;
pub(crate) mod fork;
mod fork_private;
mod guest_zero;
mod host_clocks;
pub mod host_memory;
mod hypercall;
mod kvm;
mod late_teardown;
mod memory;
mod pool_slots;
mod prefault;
pub mod prepare;
mod robust_walk;
mod sandbox;
mod seccomp;
mod seccomp_tree;
mod seed;
mod shared_file_ends;
mod shared_files;
mod stuck;
mod vcpu;

use std::os::unix::io::AsRawFd;
use std::sync::Arc;

use crate::error::Result;
use crate::kernel_image::KernelImage;

pub use channel::host_signals;
pub use fork::{die_of, end_signal, is_child as is_fork_child};
pub use kvm::{kvm_from_inherited, open_kvm};
pub use memory::MIN_MEM;
pub use robust_walk::child_reaped;
pub use shared_files::release_all as release_shared_memory;
pub use stuck::say_where_vcpus_are;
pub use vcpu::allowed_host_cpus;

/// What `hrt run` adds to a VM: the program, its argv/envp, and how to run it.
pub struct ProgramSetup {
    pub program: crate::program::Program,
    pub argv: Vec<Vec<u8>>,
    pub envp: Vec<Vec<u8>>,
    /// The file name its exec named (AT_EXECFN, the command name): as a shell execs it, the
    /// path a name was found at in PATH, a script's path; with `--children hrt`, the parent's
    /// exec's.
    pub execfn: Vec<u8>,
    /// Its command name (`comm`, NUL-padded).
    pub comm: [u8; 16],
    pub app_ring: u32,
    pub strace: bool,
    /// `--no-rewrite`: system-call sites stay SYSCALL instructions.
    pub no_rewrite: bool,
    pub verbose: bool,
    /// `--sandbox DIR` (see sandbox.rs).
    pub sandbox: Option<std::path::PathBuf>,
    /// `--no-channel`: forwarded calls are hypercalls (one VM exit each), as before the channel.
    pub no_channel: bool,
    /// `--exact-brk`: a lowered break always unmaps (`flags::EXACT_BRK`).
    pub exact_brk: bool,
    /// `--profile=HZ` (0: none).
    pub profile_hz: u32,
    /// `--service-threads`, `--service-spin` (microseconds); None: the defaults.
    pub service_threads: Option<u32>,
    pub service_spin_us: Option<u64>,
    /// Function overrides for the kernel to apply (`hrt_abi::overrides::Entry`, encoded).
    pub overrides: Vec<u8>,
    /// A dynamically linked program whose shared libgomp is overridden, or has its spin tests
    /// changed, when ld.so maps it.
    pub omp_library: Option<crate::overrides::LibraryUse>,
    /// `--omp` for the images the program execs.
    pub exec_omp: crate::overrides::choice::ExecPolicy,
    /// `--as-child`: the program is a child of another HRT program (`flags::CHILD_PROCESS`).
    pub child_process: bool,
    /// Its threads go to the first vCPUs, as many as the host has CPUs (`flags::PACK_THREADS`).
    pub pack_threads: bool,
    /// Its kernel starts every CPU at boot (`flags::CPUS_AT_BOOT`: it has an OpenMP runtime);
    /// else the others only when it first places a thread on one.
    pub cpus_at_boot: bool,
    /// The signals the program starts with ignored, and its mask (bit `sig - 1`).
    pub sig_ignored: u64,
    pub sig_mask: u64,
}

/// Validated VM shape, derived from the command line and the host.
pub struct VmConfig {
    pub cpus: u32,
    pub mem: u64,
    pub idle_halt: bool,
    /// The vCPUs outnumber the host's CPUs.
    pub overcommitted: bool,
    /// With `overcommitted`: how many vCPUs the kernel places its OpenMP runtime's threads on
    /// (the host's CPU count; 0: all, `--overcommit spread`).
    pub pack_on: u32,
    /// `--idle auto` with no host CPU to spare beyond the vCPUs: a program run (whose forwarded
    /// calls need the channel's service thread) halts idle vCPUs after 1 ms of polling.
    pub idle_halt_late: bool,
    /// `--idle auto` with a host CPU to spare: idle CPUs halt after 10 ms
    /// (`flags::IDLE_HALT_LONG`).
    pub idle_halt_long: bool,
    /// `--kernel-ring 0`: keep the kernel in ring 0 on a PVM host.
    pub kernel_ring0: bool,
    pub pin: bool,
    pub preempt_us: u64,
    pub numa: u32,
    pub cmdline: String,
    pub program: Option<ProgramSetup>,
    pub platform: hrt_abi::Platform,
    /// vCPU threads run under the seccomp filter (see seccomp.rs).
    pub seccomp: bool,
    /// Guest RAM asks the host for transparent huge pages (`--host-pages 2m`).
    pub huge_pages: bool,
}

/// The vCPU count a VM gets: `requested` if KVM allows it, else the host's CPU count.
pub fn check_cpus(requested: Option<u32>, kvm: &kvm_ioctls::Kvm) -> Result<u32> {
    kvm::check_cpus(requested, kvm)
}

/// Guest memory of `requested` bytes (default 1 GiB) if it is a size the VM can have.
pub fn check_mem(requested: Option<u64>) -> Result<u64> {
    memory::check_size(requested.unwrap_or(memory::DEFAULT_MEM))
}

/// Creates the VM, boots `image`, and waits for the kernel to shut down.
pub fn run(kvm: kvm_ioctls::Kvm, config: VmConfig, image: &KernelImage) -> Result<u8> {
    run_prepared(kvm, None, config, image)
}

/// As `run`, with the VM and KVM's CPUID made on `prepared`'s thread meanwhile.
pub fn run_prepared(
    kvm: kvm_ioctls::Kvm,
    prepared: Option<prepare::Prepared>,
    config: VmConfig,
    image: &KernelImage,
) -> Result<u8> {
    // Before the program's descriptor table is made: vCPUs made on demand take descriptors
    // after the program may have filled it (`forward::note_vcpus`).
    crate::forward::note_vcpus(config.cpus);
    let mem = memory::GuestRam::map(config.mem, config.huge_pages)?;
    memory::load_kernel(&mem, image)?;
    let made = prepared.map(prepare::Prepared::take);
    let (early_vm, early_cpuid, early_tsc_khz) = match made {
        Some(m) => (m.vm, m.cpuid, m.tsc_khz),
        None => (None, None, None),
    };
    let vm = Arc::new(match early_vm {
        Some(vm) => vm,
        None => kvm::create_vm_without_irqchip(&kvm)?,
    });
    // The VM's teardown after this process's exit, off its parent's wait (late_teardown.rs).
    let teardown = late_teardown::start(vm.as_raw_fd());
    let cpuid = match early_cpuid {
        Some(cpuid) => cpuid,
        None => cpuid::guest_cpuid(&kvm, config.cpus)?,
    };
    // xAPIC IDs are 8 bits and 0xFF is the broadcast address: more CPUs need x2APIC.
    if config.cpus > 255 && !cpuid::has(&cpuid, 1, 'c', 21) {
        return Err(crate::error::err!(
            "--cpus {} needs x2APIC, which KVM does not offer here: at most 255 vCPUs",
            config.cpus
        ));
    }
    let tsc_khz = early_tsc_khz
        .or_else(|| tsc_khz(&kvm, &vm))
        .ok_or_else(|| crate::error::err!("KVM does not report the TSC frequency"))?;
    let boot = boot_info::write(&mem, &config, image, &cpuid, tsc_khz as u64)?;
    if let Some(table) = boot.robust_heads.and_then(|r| mem.host_ptr(r.base, r.size)) {
        let ram: Vec<(u64, u64, *mut u8)> =
            mem.ranges().into_iter().filter_map(|(base, size)| Some((base, size, mem.host_ptr(base, size)?))).collect();
        robust_walk::note(table, boot.user_pool, &ram);
    }
    if let Some(p) = config.program.as_ref() {
        prefault::start(&mem, &prefault::segment_ranges(&p.program, boot.user_pool.0));
    }
    // The kernel has the program's CPU limit now, and enforces it on the program's own time.
    crate::forward::lift_cpu_soft_limit();
    // The boot block has the program's process limit; `hrt`'s own threads get room beyond it.
    crate::forward::lift_process_limit(config.cpus);
    // The boot block has the program's descriptor limit; `hrt`'s own host descriptors (kept
    // files among them) get room beyond it.
    crate::forward::lift_descriptor_soft_limit();
    // The program's pool is given to KVM chunk by chunk as the kernel needs it (`pool_slots`),
    // the kernel's share above it in pieces but for its top piece (`boot.kernel_lazy`).
    let lazy = (boot.user_pool.0, boot.user_pool.1.max(boot.kernel_lazy.1));
    let pool = mem.give_to_except(&vm, lazy)?;
    kvm::create_irqchip(&vm)?;
    let top = mem.phys_end();
    const POOL_CHUNK: u64 = hrt_abi::layout::POOL_CHUNK;
    // The chunk that holds the pool's start at once: the kernel loads the program there first
    // thing, and its break starts there. The kernel counts on it (`nr::RAM_READY`).
    let first_chunk = (boot.user_pool.0, (boot.user_pool.0 / POOL_CHUNK + 1) * POOL_CHUNK);
    let pool = pool_slots::PoolSlots::start(vm.clone(), pool, boot.user_pool, boot.kernel_lazy, top, &[first_chunk])?;
    let forwarder = config.program.as_ref().map(|p| {
        let mut f = crate::forward::Forwarder::new(p.program.host_path.clone(), config.cpus);
        f.describe_program(
            p.argv.clone(),
            boot.user_pool,
            p.program.interp.as_ref().map(|i| i.path.clone()).unwrap_or_default(),
        );
        f.placed.add_boot(boot.program_image, p.program.bytes.clone());
        f.set_exec_omp(p.exec_omp);
        if let Some(purpose) = p.omp_library {
            let required = purpose == crate::overrides::LibraryUse::Override { required: true };
            let report = required || p.verbose;
            let plans = crate::overrides::LibraryPlans::new(hrt_abi::overrides::OMP_GROUP, purpose, report);
            let _ = f.library_plans.set(plans);
        }
        if !crate::forward::cross_memory::publish(&mem.host_ranges_within(boot.user_pool)) && p.verbose {
            eprintln!("hrt: cannot publish the RAM directory: process_vm_readv/writev will answer EPERM");
        }
        let inherited = f.inherit_descriptors();
        if p.verbose && inherited > 0 {
            eprintln!(
                "hrt: the program inherits {inherited} descriptor(s) above 2 (e.g. a process manager's PMI socket)"
            );
        }
        // Created here, by a thread without the seccomp filter: it starts host programs.
        if let Err(e) = f.start_process_spawner() {
            eprintln!("hrt: cannot start the process spawner thread ({e}): the program's execve will fail with EAGAIN");
        }
        f
    });
    let shared = Arc::new(vcpu::Shared::new(mem, forwarder, boot.user_pool));
    vcpu::note_kernel_ring(config.platform == hrt_abi::Platform::PvmEmulated && !config.kernel_ring0);
    let _ = shared.pool_slots.set(pool);
    if let Some(p) = config.program.as_ref().filter(|p| !p.no_channel) {
        let cfg = channel::ChannelConfig::defaults(config.cpus, p.service_spin_us, p.service_threads);
        if p.verbose {
            eprintln!("{}", cfg.describe(config.cpus));
        }
        let svc = Arc::new(channel::Service::new(cfg, config.cpus, Some(vm.clone())));
        if p.profile_hz > 0 {
            svc.profile_with(channel::ProfileSetup {
                hz: p.profile_hz,
                program: p.program.bytes.clone(),
                kernel: image.bytes().to_vec(),
                files: std::sync::Mutex::new(Vec::new()),
                execed: std::sync::atomic::AtomicBool::new(false),
                halted: std::sync::atomic::AtomicU64::new(0),
            });
        }
        let _ = shared.channel.set(svc);
    }
    // What the monitor placed for the kernel (`boot_info::place_kernel_tables`), known before
    // the kernel runs.
    if let Some(map) = boot.page_map {
        hypercall::accept_user_map(&shared, map);
    }
    if let (Some(ch), Some(svc)) = (boot.channel, shared.channel.get()) {
        if svc.register(&shared.ram, shared.program_mem, ch.base, ch.size) != 0 {
            return Err(crate::error::err!(
                "internal error: the forwarding channel placed at {:#x} was refused",
                ch.base
            ));
        }
    }
    let plan = vcpu::VcpuPlan {
        cpus: config.cpus,
        pin: config.pin,
        seccomp: config.seccomp,
        sandbox: config.program.as_ref().and_then(|p| p.sandbox.clone()),
        entry: image.entry,
        boot,
        resume: None,
        // As the kernel does (`boot::finish_boot`): a program starts on one CPU, unless it has an
        // OpenMP runtime.
        cpus_on_demand: config.program.as_ref().is_some_and(|p| !p.cpus_at_boot),
    };
    if let Some(p) = config.program.as_ref() {
        let channel = (!p.no_channel)
            .then(|| channel::ChannelConfig::defaults(config.cpus, p.service_spin_us, p.service_threads));
        // Created here, by a thread without the seccomp filter: it forks the monitor.
        let base = fork::Base {
            kvm_fd: kvm.as_raw_fd(),
            cpuid: cpuid.clone(),
            plan: plan.clone(),
            channel,
            tsc_khz,
            page_map: boot.page_map,
            channel_at: boot.channel,
        };
        if let Err(e) = fork::start(base) {
            eprintln!("hrt: cannot start the fork thread ({e}): the program's fork will fail with EAGAIN");
        }
    }
    teardown.finish();
    let status = vcpu::run_all(&vm, &cpuid, shared.clone(), &plan);
    vcpu::end_forwarding(&shared);
    let verbose = config.program.as_ref().is_some_and(|p| p.verbose);
    if let Some(slots) = shared.pool_slots.get().filter(|_| verbose) {
        let runs = slots.registered_runs();
        let mib = runs.iter().map(|(s, e)| e - s).sum::<u64>() >> 20;
        eprintln!("hrt: {mib} MiB of the program's pool were given to KVM, in {} run(s)", runs.len());
    }
    status
}

pub use cpuid::has as cpuid_has;

/// `KVM_GET_TSC_KHZ`: `_IO(KVMIO, 0xa3)`; on a VM's descriptor (Linux 5.18 and later) the
/// frequency its vCPUs get.
const KVM_GET_TSC_KHZ: u64 = 0xaea3;

/// The TSC frequency `vm`'s vCPUs get, in kHz: asked of the VM, or where the host's KVM is
/// older than that, of a vCPU of a VM made for the purpose (~1.5 ms of host time to make and
/// destroy here).
pub fn tsc_khz(kvm: &kvm_ioctls::Kvm, vm: &kvm_ioctls::VmFd) -> Option<u32> {
    // SAFETY: KVM_GET_TSC_KHZ takes no argument and writes nothing; the descriptor is a VM's.
    let khz = unsafe { libc::ioctl(vm.as_raw_fd(), KVM_GET_TSC_KHZ as _) };
    if khz > 0 {
        return Some(khz as u32);
    }
    probe_tsc_khz(kvm)
}

/// The TSC frequency a vCPU would get, in kHz.
pub fn probe_tsc_khz(kvm: &kvm_ioctls::Kvm) -> Option<u32> {
    let vm = kvm::create_vm(kvm).ok()?;
    let vcpu = vm.create_vcpu(0).ok()?;
    vcpu.get_tsc_khz().ok()
}
