//! Definitions shared by the HRT kernel and the `hrt` monitor.
//!
//! Everything that crosses the guest/host boundary is defined here once: the physical memory
//! layout at boot, the boot-info block, and the hypercall request block with its numbers.
//! All structures are `#[repr(C)]` with fixed-width fields so both sides agree on layout.
#![no_std]

pub mod channel;
pub mod mpi_env;
pub mod overrides;

/// The robust futex lists of the program's threads (`set_robust_list`), kept by the kernel in
/// guest memory the monitor knows: when `hrt` itself is killed (SIGKILL, where no kernel code
/// runs), the process that holds the VM's memory after it (the monitor's late teardown) walks
/// the lists as Linux's exit does, so that processes sharing robust mutexes with the program
/// see FUTEX_OWNER_DIED instead of waiting forever. The kernel walks them itself on every
/// other end and then empties the table.
pub mod robust_heads {
    /// One thread's list: its tid (0: a free entry) and its list head's address.
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct Head {
        pub tid: u32,
        pub _pad: u32,
        pub head: u64,
    }

    /// Threads kept; a program's threads beyond these are not walked when `hrt` is killed.
    pub const ENTRIES: usize = 4095;

    /// The table: `used` is one past the highest entry ever taken (entries are taken lowest
    /// first, so a reader looks at `heads[..used]` only).
    #[repr(C)]
    pub struct Table {
        pub used: u64,
        pub _pad: u64,
        pub heads: [Head; ENTRIES],
    }

    /// The table's size: 64 KiB, of which a program touches the first page or two.
    pub const BYTES: u64 = core::mem::size_of::<Table>() as u64;
    const _: () = assert!(BYTES == 64 << 10);
}

/// Bumped whenever a structure below changes incompatibly.
pub const ABI_VERSION: u32 = 71;

/// Identifies a valid boot-info block ("HRTBOOT1").
pub const BOOT_MAGIC: u64 = 0x3154_4f4f_4254_5248;

/// Largest number of vCPUs the kernel supports (x2APIC IDs 0..MAX_CPUS).
pub const MAX_CPUS: usize = 256;
/// Largest number of memory zones (NUMA nodes) the boot-info block can describe.
pub const MAX_ZONES: usize = 8;
/// Largest number of guest RAM ranges the boot-info block can describe (below and above the
/// hole under 4 GiB).
pub const MAX_RAM_RANGES: usize = 2;
/// Largest number of reserved physical ranges the boot-info block can describe.
pub const MAX_RESERVED: usize = 8;
/// Bytes of kernel command line.
pub const CMDLINE_LEN: usize = 512;

/// Physical layout at boot. Page 0 stays unused so the kernel can leave it unmapped.
pub mod layout {
    /// The boot-info block (one 4 KiB page).
    pub const BOOT_INFO: u64 = 0x1000;
    /// The monitor's boot page tables: PML4, PDPT, then one PD per GiB of guest memory in
    /// `[BOOT_PD, BOOT_PD_END)`, identity-mapping all of it with 2 MiB pages until the kernel
    /// has built its own tables.
    pub const BOOT_PML4: u64 = 0x2000;
    pub const BOOT_PDPT: u64 = 0x3000;
    pub const BOOT_PD: u64 = 0x4000;
    pub const BOOT_PD_END: u64 = 0x10_0000;
    /// Highest guest-physical address (exclusive) the boot tables can map (one PD per GiB).
    pub const MAX_PHYS_END: u64 = ((BOOT_PD_END - BOOT_PD) / 0x1000) << 30;
    /// Largest guest memory: everything up to `MAX_PHYS_END` except the hole.
    pub const MAX_MEM: u64 = MAX_PHYS_END - (HIGH_RAM_BASE - LOW_RAM_END);
    /// The program's pool is given to KVM in chunks of this size, aligned to it in
    /// guest-physical addresses, as the kernel first makes memory in them present
    /// ([`crate::nr::RAM_READY`]).
    pub const POOL_CHUNK: u64 = 64 << 20;

    /// Guest RAM below 4 GiB ends here; `[LOW_RAM_END, HIGH_RAM_BASE)` is the hole every PC
    /// leaves for devices (the IOAPIC at 0xFEC00000, the local APIC at 0xFEE00000, ...): no
    /// RAM is mapped there, so no memory access ever reaches an emulated device by accident.
    /// 3 GiB, 1 GiB-aligned so both parts map with 1 GiB pages.
    pub const LOW_RAM_END: u64 = 0xC000_0000;
    /// Where a PC's IOAPIC sits (the local APIC is at 0xFEE00000), inside the hole. The VM has
    /// none: KVM's split interrupt controller gives each vCPU its local APIC only.
    pub const IOAPIC_BASE: u64 = 0xFEC0_0000;
    /// Guest RAM beyond the first `LOW_RAM_END` bytes continues here (4 GiB).
    pub const HIGH_RAM_BASE: u64 = 1 << 32;

    /// The guest-physical ranges `(base, size)` of `mem` bytes of guest RAM: `[0, LOW_RAM_END)`
    /// and the rest from `HIGH_RAM_BASE`. The second is empty when `mem <= LOW_RAM_END`.
    pub const fn ram_ranges(mem: u64) -> [(u64, u64); 2] {
        let low = if mem < LOW_RAM_END { mem } else { LOW_RAM_END };
        [(0, low), (HIGH_RAM_BASE, mem - low)]
    }

    /// The guest-physical address of byte `offset` of guest RAM counted without the hole
    /// (offset `LOW_RAM_END` is `HIGH_RAM_BASE`).
    pub const fn ram_phys(offset: u64) -> u64 {
        if offset < LOW_RAM_END {
            offset
        } else {
            offset + (HIGH_RAM_BASE - LOW_RAM_END)
        }
    }

    /// The guest-physical end of the first `offset` bytes of guest RAM (exclusive: offset
    /// `LOW_RAM_END` ends at `LOW_RAM_END`, before the hole).
    pub const fn ram_phys_end(offset: u64) -> u64 {
        if offset <= LOW_RAM_END {
            offset
        } else {
            offset + (HIGH_RAM_BASE - LOW_RAM_END)
        }
    }
    /// Everything below this address is reserved for the monitor's boot structures.
    pub const LOW_RESERVED_END: u64 = 0x10_0000;
    /// The kernel image is linked here (see kernel/linker.ld).
    pub const KERNEL_BASE: u64 = 0x10_0000;
    /// The kernel image must end below this address; static executables linked at 0x400000
    /// (gcc's default) keep their link address in the identity map.
    pub const KERNEL_LIMIT: u64 = 0x40_0000;
    /// `hrt run`: where the program's memory pool starts (the first 2 MiB page above the
    /// kernel image area).
    pub const USER_POOL_BASE: u64 = KERNEL_LIMIT;
    /// Size of each vCPU's boot stack (the stack `_start` runs on; each CPU's idle thread).
    pub const BOOT_STACK_SIZE: u64 = 64 << 10;
}

/// The block the monitor writes at `layout::BOOT_INFO` before the first instruction runs.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BootInfo {
    pub magic: u64,
    pub version: u32,
    /// Number of vCPUs; vCPU i has x2APIC ID i.
    pub num_cpus: u32,
    /// Bytes of guest RAM in all, laid out as `ram` says.
    pub mem_size: u64,
    /// TSC frequency in kHz as KVM reports it.
    pub tsc_khz: u64,
    /// Host CLOCK_REALTIME in ns and the guest TSC read at the same moment (0: not read; the
    /// clocks were then sampled while the block was built, a few ms before the kernel's time
    /// zero). `monotonic_ns`, `boottime_ns` and `monotonic_raw_ns` are the host's
    /// CLOCK_MONOTONIC, CLOCK_BOOTTIME and CLOCK_MONOTONIC_RAW at that moment: the program's
    /// clocks are the host's, as other processes' are.
    pub wallclock_ns: u64,
    pub wallclock_tsc: u64,
    pub monotonic_ns: u64,
    pub boottime_ns: u64,
    pub monotonic_raw_ns: u64,
    /// The host's CLOCK_TAI less its CLOCK_REALTIME, in whole seconds (0 unless the host's
    /// time keeper set the offset: leap seconds).
    pub tai_offset_s: u64,
    /// The resolution of the host's coarse clocks (CLOCK_REALTIME_COARSE, CLOCK_MONOTONIC_COARSE:
    /// its timer tick) in nanoseconds, which clock_getres answers for them.
    pub coarse_res_ns: u64,
    /// `flags::*`.
    pub flags: u64,
    /// `features::*` the monitor's guest CPUID offers. Authoritative: on PVM the CPUID
    /// instruction runs on the host CPU and reports features the VM does not support.
    pub features: u64,
    /// `Platform` as u32.
    pub platform: u32,
    pub num_zones: u32,
    /// Each zone's guest-physical span; a span may contain the hole below 4 GiB, which is
    /// never RAM (only the `ram` ranges are).
    pub zones: [Zone; MAX_ZONES],
    /// NUMA node of each CPU.
    pub cpu_zone: [u8; MAX_CPUS],
    pub num_reserved: u32,
    pub _pad: u32,
    /// Physical ranges the kernel must not hand out (besides its own image and the low MiB).
    pub reserved: [Range; MAX_RESERVED],
    /// Guest RAM: `num_ram` ranges, sorted, not touching (`layout::ram_ranges`). Everything
    /// else (the hole below 4 GiB, anything above the last range) is not memory.
    pub num_ram: u32,
    pub _pad5: u32,
    pub ram: [Range; MAX_RAM_RANGES],
    /// Physical base of the boot stacks; CPU i's stack is
    /// `[boot_stacks + i*BOOT_STACK_SIZE, boot_stacks + (i+1)*BOOT_STACK_SIZE)`.
    pub boot_stacks: u64,
    /// Timer preemption quantum in microseconds; 0 means no preemption (the default).
    pub preempt_us: u64,
    /// `hrt run`: the program file's bytes, placed in reserved guest memory by the monitor.
    pub program: Range,
    /// `hrt run` of a fixed-address (ET_EXEC) program: its 2 MiB-aligned link span, reserved
    /// (also listed in `reserved`) so the loader can place the program at its link address.
    pub program_fixed: Range,
    /// `hrt run`: the span the program's allocations come from (2 MiB aligned, reserved
    /// from the kernel's allocator, its RAM mapped user-accessible; it may contain the hole,
    /// which stays unmapped). Contains `program_fixed`.
    pub user_pool: Range,
    /// `hrt run`: argv then envp as NUL-terminated strings, `argc` and `envc` of them.
    pub args: Range,
    pub argc: u32,
    pub envc: u32,
    /// Privilege ring of the program: 0 (hybrid runtime) or 3 (user mode).
    pub app_ring: u32,
    /// With `flags::HOST_OVERCOMMITTED`: how many vCPUs, the first ones, the kernel places
    /// threads on unless told otherwise (the host's CPU count; 0: all).
    pub pack_on: u32,
    /// The identity of the user running `hrt` (the program's getuid etc.).
    pub uid: u32,
    pub gid: u32,
    /// `hrt`'s own pid: the program's getpid (the program is `hrt`'s process on the host, so a
    /// launcher, an MPI peer or `/proc/<pid>` on the host names it by this pid).
    pub host_pid: u32,
    /// `hrt`'s parent's pid: the program's getppid.
    pub host_ppid: u32,
    /// NUL-padded kernel command line, e.g. `selftest filter=thread`.
    pub cmdline_len: u32,
    pub _pad2: u32,
    pub cmdline: [u8; CMDLINE_LEN],
    /// `hrt run` of a dynamically linked program: its interpreter's file (PT_INTERP, e.g.
    /// ld-linux-x86-64.so.2) read from the host, placed in reserved guest memory like
    /// `program`; empty for a static program.
    pub interp: Range,
    /// The host's uname (sysname, nodename, release, version, machine, domainname; each
    /// NUL-padded to 65 bytes): the program sees the host's, as a container does.
    pub uname: [[u8; UTS_LEN]; 6],
    /// `hrt run`: the program's function overrides and imports (`overrides::Entry`, packed),
    /// placed in reserved guest memory like `args`; empty when no group applies.
    pub overrides: Range,
    /// `hrt run`: the signals `hrt` was started with ignored (bit `sig - 1`): the program starts
    /// with them ignored and the rest at their defaults, as an exec'd program does.
    pub sig_ignored: u64,
    /// `hrt run`: the signal mask `hrt` was started with: the program's main thread's mask.
    pub sig_mask: u64,
    /// `hrt run`: the resource limits `hrt` was started with (soft, hard; RLIMIT_CPU to
    /// RLIMIT_RTTIME), which the program inherits as an exec'd program does. All zero: the
    /// kernel's defaults.
    pub rlimits: [[u64; 2]; RLIMITS],
    /// `hrt run`: the part of the kernel's share of RAM (the top of RAM above `user_pool`) that
    /// KVM does not know yet (2 MiB aligned; it may contain the hole below 4 GiB, which is not
    /// RAM). The monitor registers only the top of the share at start, and the rest in growing
    /// pieces, downward, as the kernel asks ([`nr::KERNEL_RAM_READY`]): the kernel must not
    /// touch any of it, nor give it to its allocator, until then. Empty: all of it is KVM's.
    pub kernel_lazy: Range,
    /// `hrt run`: the length of what readlink("/proc/self/exe") answers for the program (its
    /// absolute host path), which follows envp in `args` with a NUL; 0: none there.
    pub exe_len: u32,
    /// `hrt run`: the length of the file name the program's exec named (AT_EXECFN, its
    /// command name), which follows the `exe_len` string in `args` with a NUL; 0: none there
    /// (argv[0] is).
    pub execfn_len: u32,
    /// 32 bytes of the host's `getrandom`: the key the kernel's own random generator starts
    /// from (getrandom, AT_RANDOM). All zero: none given; the kernel asks the host each time.
    pub seed: [u8; SEED_LEN],
    /// `hrt run`: the kernel's page map of the program's pool, placed by the monitor in memory
    /// KVM knows from the start and nothing has written (it reads zero; also listed in
    /// `reserved`), and known to the monitor from the start, as if announced with
    /// [`nr::USER_MAP`]. All zero: the kernel allocates its own and announces it.
    pub page_map: UserMap,
    /// `hrt run`: the forwarding channel ([`channel::Channel`]), placed likewise and served by
    /// the monitor from the start, as if registered with [`nr::CHANNEL`]. Empty: the kernel
    /// allocates and registers its own (none with [`flags::NO_CHANNEL`]).
    pub channel: Range,
    /// What the host can give this VM's memory, in bytes: its RAM, or `hrt`'s cgroup memory
    /// limit if smaller (0: unknown). The pool is a reservation and may be larger; the memory
    /// the program is told it has (`sysinfo`, `/proc/meminfo`) is capped at this.
    pub host_memory: u64,
    /// How many of `cpuid` hold answers.
    pub cpuid_count: u32,
    /// `hrt run`: the length of the program's command name (`comm`), which follows the
    /// `execfn_len` string in `args` with a NUL; 0: none there (from AT_EXECFN).
    pub comm_len: u32,
    /// What the vCPUs' CPUID answers for the leaves [`cpuid_seedable`] names, as the monitor
    /// gave them to KVM: the kernel answers the program's rewritten CPUID sites from these
    /// without asking the CPU (a CPUID traps to the host on a PVM host).
    pub cpuid: [CpuidAnswer; CPUID_ANSWERS],
    /// `hrt run`: the table of the program's threads' robust futex lists
    /// ([`robust_heads::Table`]), placed like `channel` (it reads zero). Empty: none kept.
    pub robust_heads: Range,
}

/// One CPUID answer: the leaf (eax), the subleaf (ecx; 0 for leaves that ignore it), and eax,
/// ebx, ecx, edx.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuidAnswer {
    pub leaf: u32,
    pub subleaf: u32,
    pub regs: [u32; 4],
}

/// Room for CPUID answers in [`BootInfo::cpuid`].
pub const CPUID_ANSWERS: usize = 48;

/// Whether the monitor passes its CPUID answer for `leaf`/`subleaf` in [`BootInfo::cpuid`]:
/// answers that are the same on every vCPU for the whole run, as KVM holds them once the boot
/// vCPU's registers are set, but for the APIC ID in leaves 1, 0xb and 0x1f (the boot vCPU's
/// here; the kernel's stub puts in the current vCPU's). 1 (OSXSAVE), 7/0 (OSPKE) and 0xd/0-1
/// (sizes) follow CR4 and XCR0, which the monitor sets before it reads them and the kernel in
/// ring 3 never changes (it cannot); 0x8000_0007 loses its invariant-TSC bit only under
/// Hyper-V emulation, which `hrt` does not ask for.
pub fn cpuid_seedable(leaf: u32, _subleaf: u32) -> bool {
    matches!(leaf, 0 | 1 | 2 | 4 | 7 | 0xb | 0xd | 0x14 | 0x19 | 0x1f | 0x8000_0000..=0x8000_0008)
}

/// Subleaves of leaf 0xd (the XSAVE state components 2-9, which glibc's start-up asks about
/// one by one) whose answer is all zeros when the CPU's table has no entry for them (a
/// component the CPU does not have): the monitor passes those zeros too.
pub const CPUID_XSAVE_COMPONENTS: core::ops::RangeInclusive<u32> = 2..=9;

/// Length of a random-generator seed the monitor hands the kernel (`BootInfo::seed`,
/// [`ForkAnswer::seed`]).
pub const SEED_LEN: usize = 32;

/// What a forked child's monitor writes at the start of the kernel's fork record
/// ([`nr::FORK`]) before the child's vCPUs run.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ForkAnswer {
    /// The child's host pid: its pid.
    pub child_pid: u64,
    /// Fresh host random bytes: the child's generator starts from these, not from the copy of
    /// its parent's state, so the two never hand out the same bytes.
    pub seed: [u8; SEED_LEN],
    /// What the child's monitor has set up already ([`fork_ready`] bits): the kernel's own
    /// set-up skips it (each step it did was a VM exit, and its writes copy-on-write faults).
    pub ready: u64,
}

/// Bits of [`ForkAnswer::ready`].
pub mod fork_ready {
    /// The forwarding channel that [`super::BootInfo::channel`] names is zeroed and registered
    /// with the child's monitor, as [`super::nr::CHANNEL`] would.
    pub const CHANNEL: u64 = 1 << 0;
    /// The page map that [`super::BootInfo::page_map`] names is the child's monitor's, as
    /// [`super::nr::USER_MAP`] would make it.
    pub const USER_MAP: u64 = 1 << 1;
}

/// Number of resource limits Linux has (RLIMIT_CPU .. RLIMIT_RTTIME).
pub const RLIMITS: usize = 16;

/// Length of each uname field, its NUL included (Linux's `__NEW_UTS_LEN + 1`).
pub const UTS_LEN: usize = 65;

impl BootInfo {
    pub const fn zeroed() -> Self {
        BootInfo {
            magic: 0,
            version: 0,
            num_cpus: 0,
            mem_size: 0,
            tsc_khz: 0,
            wallclock_ns: 0,
            wallclock_tsc: 0,
            monotonic_ns: 0,
            boottime_ns: 0,
            monotonic_raw_ns: 0,
            tai_offset_s: 0,
            coarse_res_ns: 0,
            flags: 0,
            features: 0,
            platform: 0,
            num_zones: 0,
            zones: [Zone { base: 0, size: 0 }; MAX_ZONES],
            cpu_zone: [0; MAX_CPUS],
            num_reserved: 0,
            _pad: 0,
            reserved: [Range { base: 0, size: 0 }; MAX_RESERVED],
            num_ram: 0,
            _pad5: 0,
            ram: [Range { base: 0, size: 0 }; MAX_RAM_RANGES],
            boot_stacks: 0,
            preempt_us: 0,
            program: Range { base: 0, size: 0 },
            program_fixed: Range { base: 0, size: 0 },
            user_pool: Range { base: 0, size: 0 },
            args: Range { base: 0, size: 0 },
            argc: 0,
            envc: 0,
            app_ring: 3,
            pack_on: 0,
            uid: 0,
            gid: 0,
            host_pid: 0,
            host_ppid: 0,
            cmdline_len: 0,
            _pad2: 0,
            cmdline: [0; CMDLINE_LEN],
            interp: Range { base: 0, size: 0 },
            uname: [[0; UTS_LEN]; 6],
            overrides: Range { base: 0, size: 0 },
            sig_ignored: 0,
            sig_mask: 0,
            rlimits: [[0; 2]; RLIMITS],
            kernel_lazy: Range { base: 0, size: 0 },
            exe_len: 0,
            execfn_len: 0,
            seed: [0; SEED_LEN],
            page_map: UserMap { bitmap: 0, bytes: 0, base: 0, pages: 0, read_only: 0, unreadable: 0 },
            channel: Range { base: 0, size: 0 },
            host_memory: 0,
            cpuid_count: 0,
            comm_len: 0,
            cpuid: [CpuidAnswer { leaf: 0, subleaf: 0, regs: [0; 4] }; CPUID_ANSWERS],
            robust_heads: Range { base: 0, size: 0 },
        }
    }

    /// The command line as a string (empty if it is not UTF-8).
    pub fn cmdline(&self) -> &str {
        let len = (self.cmdline_len as usize).min(CMDLINE_LEN);
        core::str::from_utf8(&self.cmdline[..len]).unwrap_or("")
    }
}

/// A physical memory range.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub base: u64,
    pub size: u64,
}

/// One NUMA node's memory.
pub type Zone = Range;

/// Bits of `BootInfo::flags`.
pub mod flags {
    /// Idle CPUs halt (and are woken by IPI) instead of polling.
    pub const IDLE_HALT: u64 = 1 << 0;
    /// Guest RAM is all zero at boot (fresh anonymous memory), so the kernel may skip zeroing.
    pub const MEMORY_ZEROED: u64 = 1 << 1;
    /// `hrt run --strace`: log every system call of the program.
    pub const STRACE: u64 = 1 << 2;
    /// Keep the kernel's informational boot lines off the console (`hrt run` without
    /// --verbose), so the program's stderr is its own.
    pub const QUIET: u64 = 1 << 3;
    /// Keep the kernel in ring 0 on a PVM host instead of running it in ring 3 with the
    /// program (`--kernel-ring 0`).
    pub const KERNEL_RING0: u64 = 1 << 4;
    /// Never rewrite the program's `syscall` instructions into calls (`--no-rewrite`).
    pub const NO_REWRITE: u64 = 1 << 5;
    /// Forward system calls by hypercall only, never through the channel (`--no-channel`).
    pub const NO_CHANNEL: u64 = 1 << 6;
    /// Idle CPUs poll for 1 ms and then halt (`--idle auto` when the vCPUs take every host CPU
    /// and the forwarding channel's service thread needs one now and then).
    pub const IDLE_HALT_LATE: u64 = 1 << 7;
    /// `--omp`: the program is dynamically linked and its libgomp is a shared library: the
    /// kernel asks the monitor which functions to override (or import) in each file it maps
    /// executable ([`super::nr::FILE_OVERRIDES`]).
    pub const OMP_LIBRARY: u64 = 1 << 8;
    /// `--omp kernel`: overriding the shared libgomp must succeed, or the program stops.
    pub const OMP_REQUIRED: u64 = 1 << 9;
    /// The vCPUs outnumber the host's CPUs: a vCPU that spins waiting for another may hold
    /// the host CPU that one needs (the kernel's OpenMP runtime then spins briefly, as libgomp
    /// does when its threads outnumber the CPUs).
    pub const HOST_OVERCOMMITTED: u64 = 1 << 10;
    /// The program is a child process of another HRT program (`hrt run --children hrt`): like
    /// a forked child, a fatal signal ends it without the shell-style report on stderr (whoever
    /// waits for it reports it, as a shell does), and `hrt` dies of that signal.
    pub const CHILD_PROCESS: u64 = 1 << 11;
    /// The vCPUs outnumber the host's CPUs and the program's OpenMP runtime yields in its
    /// spin waits but counts the vCPUs as CPUs (LLVM's libomp): its threads go to as many
    /// vCPUs as the host has CPUs, where a yield hands the vCPU to the thread waited for.
    pub const PACK_THREADS: u64 = 1 << 12;
    /// A program's kernel starts every CPU at boot: the program has an OpenMP runtime, whose
    /// first parallel region would otherwise start them. Without it a program starts on the
    /// boot CPU alone, the others dormant until it first places a thread on one.
    pub const CPUS_AT_BOOT: u64 = 1 << 13;
    /// Idle CPUs poll for 10 ms and then halt (`--idle auto` when every vCPU has a host CPU
    /// and one to spare): an idle program (a server waiting for requests) leaves the host CPU
    /// alone, and the wake-up's IPI is well under 1 % of the idle period it ends.
    pub const IDLE_HALT_LONG: u64 = 1 << 14;
    /// `hrt run --profile`: the kernel keeps the samples the monitor's [`PROFILE_VECTOR`]
    /// interrupts take (`ChannelHeader::profile_area`).
    ///
    /// [`PROFILE_VECTOR`]: crate::channel::PROFILE_VECTOR
    pub const PROFILE: u64 = 1 << 15;
    /// `hrt run --exact-brk`: a lowered break always makes its pages not present, however often
    /// it shrinks and grows again (by default a break that keeps doing so keeps them).
    pub const EXACT_BRK: u64 = 1 << 16;
}

/// Bits of `BootInfo::features`.
pub mod features {
    pub const X2APIC: u64 = 1 << 0;
    pub const TSC_DEADLINE: u64 = 1 << 1;
    pub const XSAVE: u64 = 1 << 2;
    pub const AVX: u64 = 1 << 3;
    pub const PAGES_1G: u64 = 1 << 4;
    pub const RDTSCP: u64 = 1 << 5;
    /// KVM's steal-time record (CPUID 0x4000_0001 EAX bit 5): the host writes into guest
    /// memory how long each vCPU waited for a host CPU, and whether it waits now.
    pub const STEAL_TIME: u64 = 1 << 6;
}

/// What the guest kernel runs on; decides which privilege model is fast.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Platform {
    /// VT-x / AMD-V: guest ring 0 runs natively.
    HardwareVirt = 0,
    /// KVM served by kvm_pvm for a guest that does not speak PVM: ring 0 is emulated.
    PvmEmulated = 1,
}

impl Platform {
    pub fn from_u32(v: u32) -> Platform {
        match v {
            1 => Platform::PvmEmulated,
            _ => Platform::HardwareVirt,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Platform::HardwareVirt => "hardware virtualization (guest ring 0 native)",
            Platform::PvmEmulated => "PVM, emulated supervisor mode (guest ring 0 ~1000x slower)",
        }
    }
}

/// The I/O port the guest writes the physical address of a [`Hypercall`] block to (32-bit OUT).
/// Each vCPU owns its block, so requests from different CPUs never share state.
pub const HYPERCALL_PORT: u16 = 0x0510;

/// A request from the guest to the monitor. The monitor validates every guest address in it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Hypercall {
    /// `nr::*`
    pub nr: u64,
    /// Seven so that a forwarded system call fits: its number and its six arguments.
    pub args: [u64; 7],
    /// Written by the monitor: a non-negative result or a negated errno.
    pub ret: i64,
}

/// Hypercall numbers.
pub mod nr {
    /// Write bytes to the console (stderr). args: guest physical address, length.
    pub const CONSOLE_WRITE: u64 = 1;
    /// Power off; the monitor exits with args[0] as its status. args[1]: the signal that ended
    /// the program (0: it exited), which a forked child's monitor dies of, so that the parent's
    /// `wait4` sees what Linux would show.
    pub const SHUTDOWN: u64 = 2;
    /// Release the secondary vCPUs (they do not run until the boot CPU is ready for them).
    pub const START_CPUS: u64 = 3;
    /// A kernel panic: args[0..2] is the message (address, length) already printed;
    /// the monitor records it and exits with [`super::PANIC_STATUS`].
    pub const PANIC: u64 = 4;
    /// A Linux system call the monitor performs on the host for the program:
    /// args[0] = Linux system-call number, args[1..7] = its arguments (guest addresses are
    /// guest-physical, which equals the program's virtual addresses). `ret` is the Linux
    /// return value (negated errno on failure).
    pub const SYSCALL: u64 = 5;
    /// Copy guest memory at host speed: args dst, src, len (physical; ranges checked).
    /// The loader copies every segment of [`SEGMENT_COPY_BY_HOST`] bytes or more of the boot
    /// program this way; the monitor leaves those parts of the placed file out of guest RAM
    /// and copies them from its own view of the file.
    pub const MEM_COPY: u64 = 6;
    /// See [`MEM_COPY`].
    pub const SEGMENT_COPY_BY_HOST: u64 = 1 << 20;
    /// Zero guest memory at host speed: args addr, len, and [`MEM_ZERO_DROP`],
    /// [`MEM_ZERO_KEEP`] (with a fourth), [`MEM_ZERO_STAY_SMALL`] or 0.
    pub const MEM_ZERO: u64 = 7;
    /// `MEM_ZERO`'s third argument: every whole 4 KiB page of the range goes back to the host,
    /// none is cleared in place (which keeps a host huge page whole, but copies a page a forked
    /// process still shares with its parent before clearing it). For memory the program will
    /// not touch again soon: an exec's old image.
    pub const MEM_ZERO_DROP: u64 = 1;
    /// `MEM_ZERO`'s third argument: the 4 KiB pages the host has are cleared in place, up to
    /// the fourth argument's number of bytes, and the rest is given back as with
    /// [`MEM_ZERO_DROP`]; the call returns the bytes it cleared in place. For memory that the
    /// program will touch again at once and that it does not share with another process (an
    /// exec's old image, where the new one is loaded): a page given back costs the host a fresh
    /// page and KVM a new mapping at the next touch.
    pub const MEM_ZERO_KEEP: u64 = 2;
    /// `MEM_ZERO`'s third argument: as 0, but the whole 2 MiB pages of the range keep the small
    /// host pages [`SMALL_HOST_PAGES`] gave them (0 makes them huge-page memory again). For a
    /// thread stack's top that the kernel will give to the next thread stack.
    pub const MEM_ZERO_STAY_SMALL: u64 = 3;
    /// `hrt run`: where the kernel keeps its map of the program's mapped pages (see
    /// [`super::UserMap`]). Sent once, before the program starts; later calls are refused.
    /// args: bitmap guest-physical address, its length in bytes, first address covered, number
    /// of 4 KiB pages covered, the read-only bitmap's address (same length and shape), the
    /// unreadable bitmap's address (same length and shape).
    pub const USER_MAP: u64 = 8;
    /// Fill `[addr, addr + len)` of guest memory with the host's `getrandom` bytes (args: addr,
    /// len). Returns len or a negated errno.
    pub const RANDOM: u64 = 9;
    /// `hrt run`: the forwarding channel (see [`super::channel`]) is at guest-physical args[0],
    /// args[1] bytes long. Sent once, before the program starts; returns 0 if the monitor
    /// serves it, a negated errno if forwarded calls must keep using `SYSCALL`.
    pub const CHANNEL: u64 = 10;
    /// The channel's service threads are asleep and a request waits: wake them. No arguments.
    pub const DOORBELL: u64 = 11;
    /// A stop signal's default action: the monitor stops its own process with that signal
    /// (args[0]: SIGTSTP, SIGTTIN or SIGTTOU; anything else stops with SIGSTOP), as a stopped
    /// Linux process would be, and returns 0 when it is continued.
    pub const STOP: u64 = 12;
    /// The program changed what SIGTTIN, SIGTTOU or SIGCHLD does (args[0] = the signal,
    /// args[1] = one of [`super::signal_action`]): the monitor gives its own process the same
    /// disposition, so that the host's terminal answers a background job's access as it would
    /// the program (stops `hrt`, EIO or the write going through, or the program's handler with
    /// EINTR), and the host reaps the program's ended children at once where the program
    /// ignores SIGCHLD or set SA_NOCLDWAIT.
    pub const HOST_SIGNAL_ACTION: u64 = 13;
    /// The program's prctl(args[0], args[1]) for an option that is a property of `hrt`'s host
    /// process: PR_SET_PDEATHSIG (the host signals `hrt` when its parent ends, and `hrt` passes
    /// the signal on), PR_SET_CHILD_SUBREAPER (orphans below become `hrt`'s children, which
    /// the program waits for), PR_SET_NO_NEW_PRIVS (the host programs it starts get it) and
    /// PR_SET_NAME by the main thread (args[1], args[2]: the 16 bytes of the name; other
    /// processes see it as the process's name), PR_CAPBSET_READ (the whole bounding set:
    /// bit i for capability i < 48, from bit 48 how many capabilities the host knows),
    /// PR_GET_SECUREBITS, PR_SET_SECUREBITS and PR_CAPBSET_DROP (args[1]), PR_CAP_AMBIENT
    /// (args[1] its operation, args[2] the capability), PR_GET_SPECULATION_CTRL (args[1],
    /// args[2]), answered by the host with the program's capabilities (ABI 68), PR_SET_TIMERSLACK (args[1], at least 1) and PR_GET_TIMERSLACK
    /// of `hrt`'s main thread (the program's main thread's slack; ABI 67).
    /// Returns 0 (the set for PR_CAPBSET_READ, the slack for PR_GET_TIMERSLACK) or a negated
    /// errno.
    pub const HOST_PRCTL: u64 = 14;
    /// With [`super::flags::OMP_LIBRARY`]: the program mapped file descriptor args[0] from file
    /// offset args[1], args[2] bytes, executable. The monitor writes the override and import
    /// entries (`overrides::Entry`, `addr` a file offset) that fall in that part of the file to
    /// the kernel's buffer at guest-physical args[3] (args[4] bytes) and returns their number,
    /// 0 for a file that is neither the group's library nor provides its imports, or a negated
    /// errno (EOPNOTSUPP: the library cannot be overridden; the monitor has said why).
    pub const FILE_OVERRIDES: u64 = 16;
    /// `hrt run`: a `MAP_SHARED` mapping of the program's file descriptor args[0]: the monitor
    /// puts the host file's pages, from file offset args[3], under guest-physical
    /// `[args[1], args[1] + args[2])` (page-aligned, inside the program's pool), so the program,
    /// the host and other processes mapping the file share them, also past the end of the
    /// file (the kernel hides those pages: SIGBUS, `SHARED_FILE_PAGE`). Returns how many bytes from
    /// `args[1]` the file covers (page-aligned: the pages before its end) plus 1 if the mapping
    /// may be made writable (the descriptor is open for writing), or a negated errno (EACCES,
    /// ENODEV, EBADF, EINVAL as mmap answers).
    pub const MAP_SHARED_FILE: u64 = 17;
    /// `hrt run`: the shared file pages under guest-physical `[args[0], args[0] + args[1])` are
    /// given up: the range is anonymous guest RAM again and reads zero.
    pub const UNMAP_SHARED_FILE: u64 = 18;
    /// `hrt run`: the size in bytes of the host's System V shared memory segment args[0] (its
    /// `shm_segsz`), or a negated errno (EINVAL, EIDRM, EACCES as shmctl answers).
    pub const SHM_SEGMENT_SIZE: u64 = 19;
    /// `hrt run`: attach the host's System V segment args[0] under guest-physical
    /// `[args[1], args[1] + args[2])` (page-aligned, inside the program's pool, exactly the
    /// segment's size rounded up to pages), read-only if args[3] is 1. Returns 1 if the
    /// attachment is writable, 0 if not, or a negated errno. Detached with `UNMAP_SHARED_FILE`.
    pub const SHM_ATTACH: u64 = 20;
    /// `fork()`: the program's process is copied into a new VM in a new host process over a
    /// copy-on-write copy of guest RAM (the host's own fork). args[0] = guest-physical address
    /// of the kernel's fork record (kernel memory, outside the program's), args[1] = the guest
    /// TSC now, args[2] = the forking spawn child's context (`process::CONTEXT_SHIFT`), 0 for
    /// the program itself: the new process then starts with that child's descriptor table,
    /// working directory, process group and session. args[3..=6]: advice, up to four 2 MiB
    /// pages of the program's memory (guest-physical, 2 MiB aligned; 0 for none) that both
    /// processes are about to use: the monitor may copy them for the child at once rather than
    /// share them copy-on-write (pages it cannot copy so, it shares). The child's VM gets memory slots for the
    /// chunks of the pool the parent's had (`RAM_READY`), and its kernel asks for more as the
    /// parent's does. Returns the
    /// child's host pid (or a negated errno) to the parent. The child's
    /// monitor writes a [`ForkAnswer`] (that pid and a fresh seed) at the record's start and
    /// starts every vCPU at the kernel's entry with rdx = the record's address (0 on a normal
    /// boot).
    pub const FORK: u64 = 21;
    /// `fork()`, before [`FORK`]: the program's anonymous `MAP_SHARED` memory at guest-physical
    /// `[args[0], args[0] + args[1])` (page-aligned, inside the program's pool), private guest
    /// RAM so far, becomes host shared memory with the same contents (the monitor copies it),
    /// so that the host fork keeps it shared with the child. Returns 0 or a negated errno
    /// (ENOMEM, EINVAL); on failure the range is as before. Given up with `UNMAP_SHARED_FILE`.
    pub const SHARE_ANONYMOUS: u64 = 22;
    /// `msync` of the shared file pages at guest-physical `[args[0], args[0] + args[1])`
    /// (page-aligned, inside the program's pool) with Linux's flags args[2]: the host's msync
    /// on that part of guest RAM's host mapping. Returns 0 or a negated errno.
    pub const MSYNC: u64 = 23;
    /// How many bytes of `MAP_SHARED_FILE` pages from guest-physical page args[0] on (args[1]
    /// bytes at most, page-aligned, one mapping) the file covers now: asked at a page fault past
    /// the end the file had (it may have grown: the page shows its bytes; if not, SIGBUS) and
    /// after the program's calls that may shrink a file (the pages past its new end are hidden
    /// again). Page-aligned, or a negated errno.
    pub const SHARED_FILE_PAGE: u64 = 24;
    /// Fill guest memory at host speed with an arithmetic run of u64s: args addr (8-byte
    /// aligned), count, first value, step; entry `i` becomes `first + i * step` (wrapping).
    /// Builds page tables where the kernel's loop would run emulated (ring 0 on PVM), and
    /// fills bitmaps. Returns 0 or -EFAULT (the range is not all guest RAM, or misaligned).
    pub const MEM_FILL: u64 = 25;
    /// A vCPU whose program thread spins gives its host CPU away: the monitor's `sched_yield`.
    pub const HOST_YIELD: u64 = 26;
    /// The host backs guest RAM `[args[0], args[0] + args[1])` (whole 2 MiB pages) with 4 KiB
    /// pages instead of transparent huge pages, until a [`MEM_ZERO`] gives those 2 MiB pages
    /// back (they are huge-page memory again then). For the top of a thread stack, of which a
    /// thread mostly touches a few KiB: a fresh host huge page costs the host a 2 MiB clear
    /// (0.1 ms, several ms when the host's own host has not backed it yet). Returns 0, or a
    /// negated errno (EFAULT: not guest RAM; EINVAL: not 2 MiB aligned). args[2]: 0 also makes
    /// the range's top 64 KiB at once (a stack's top, which its thread touches first);
    /// [`SMALL_HOST_PAGES_BARE`] only changes the page size.
    pub const SMALL_HOST_PAGES: u64 = 27;
    /// [`SMALL_HOST_PAGES`]'s third argument: no page is made now (a 2 MiB page that mappings
    /// share, of which the program may touch little: `linux::sparse_pages`).
    pub const SMALL_HOST_PAGES_BARE: u64 = 1;
    /// Several [`MEM_FILL`]s in one exit, applied in order: args[0] the guest address of an
    /// array of args[1] (at most [`MEM_FILLS_MAX`]) fills, each four u64s (addr, count, first,
    /// step). The boot queues its page tables' fills (ring 0 on PVM, where each hypercall is
    /// an exit and ~90 emulated instructions). Returns 0, or -EFAULT at the first fill (or a
    /// list) outside guest RAM, -EINVAL for too many; the fills before it are done.
    pub const MEM_FILLS: u64 = 28;
    /// The most fills one [`MEM_FILLS`] takes.
    pub const MEM_FILLS_MAX: u64 = 64;
    /// Makes the program's pool guest memory KVM knows in `[args[0], args[1])` at least: the
    /// monitor gives the pool to KVM in chunks of [`crate::layout::POOL_CHUNK`] as the kernel
    /// needs them (KVM's bookkeeping takes ~1 ms per GiB to set up and ~0.3 to tear down, so
    /// only the chunks a program uses), and a chunk right above a registered run of them at
    /// least doubles that run (a growing heap asks a few times). The kernel asks before it
    /// makes pool memory present; a touch of pool memory KVM does not know is an MMIO exit,
    /// which the monitor reports as a fault of the kernel. Returns the end of the registered
    /// run that holds args[0] (i64::MAX where all RAM is KVM's); the monitor stops the VM if it
    /// cannot register a chunk. The chunk holding the pool's first byte (where the program is
    /// loaded and its break starts) is KVM's before any vCPU runs: the kernel need not ask.
    /// args[2]: 0, or a 2 MiB page of guest memory to give 4 KiB host pages as
    /// [`SMALL_HOST_PAGES`] does (a new stack's top, in the exit that registers its chunk).
    pub const RAM_READY: u64 = 29;
    /// Makes the kernel's share of RAM guest memory KVM knows from guest address args[0] up
    /// at least (`BootInfo::kernel_lazy`: the monitor gives it to KVM in growing pieces,
    /// downward from the top, as the kernel's allocator needs them; an address below the span
    /// asks for all of it, one above it for nothing). Returns the lowest address from which the
    /// share is KVM's (0 where all RAM is); the monitor stops the VM if it cannot register a
    /// piece. A touch of the share below that address is an MMIO exit, which the monitor
    /// reports as a fault of the kernel.
    pub const KERNEL_RAM_READY: u64 = 30;
    /// The program set resource limit args[0] (Linux's RLIMIT_* number) to soft args[1] and
    /// hard args[2] (u64::MAX: unlimited), one that `hrt` enforces for it: RLIMIT_NOFILE (the
    /// descriptor table's limit: EMFILE, EBADF, EINVAL; the host programs it starts get it) and
    /// RLIMIT_FSIZE (set on `hrt`'s host process: forwarded writes past it fail with EFBIG and
    /// the kernel raises SIGXFSZ); RLIMIT_CPU and RLIMIT_AS are the kernel's to enforce, noted
    /// for the host programs the program starts. Returns 0 or a negated errno (EINVAL for another resource).
    pub const HOST_RLIMIT: u64 = 31;
    /// `madvise(MADV_REMOVE)` of the host shared pages at guest-physical `[args[0], args[0] +
    /// args[1])` (page-aligned, inside the program's pool: a `MAP_SHARED_FILE` mapping, a
    /// segment, or anonymous shared memory made the host's at a fork): the host's madvise on
    /// that part of guest RAM's host mapping punches a hole in the file or memory behind it,
    /// which then reads zero, through the mapping and the file. Returns 0 or a negated errno
    /// (EOPNOTSUPP where the file system cannot punch holes, EBADF, EACCES).
    pub const REMOVE_SHARED: u64 = 32;
    /// The program is ending of a signal whose default action dumps core: args[0] is the
    /// guest address of a [`super::CoreRecord`] in the kernel's memory, args[1] its size. The
    /// monitor writes the program's core file where the host's `core_pattern` names it (a plain
    /// pattern; a `|` pipe gets none), within the program's RLIMIT_CORE: an ELF core with the
    /// ending thread's registers and the program's mapped memory. Returns 1 if it wrote one, 0
    /// if none was due (core limit 0, a pipe pattern), or a negated errno.
    pub const CORE_DUMP: u64 = 33;
    /// `hrt run --profile`: the program mapped `[args[2], args[2] + args[3])` of its file
    /// descriptor args[0] from file offset args[1], executable (ld.so mapping a library): the
    /// monitor keeps the file, to name the samples taken there. Returns 0 (a negated errno
    /// for a descriptor it does not know). Also a `MONITOR_OP` of the channel.
    pub const PROFILE_FILE: u64 = 34;
    /// `mremap` of host shared pages (a `MAP_SHARED_FILE` mapping, a segment, anonymous shared
    /// memory made the host's at a fork) at guest-physical `[args[0], args[0] + args[1])`:
    /// the same pages, and for a file those at the following offsets, appear at
    /// `[args[2], args[2] + args[3])` (page-aligned, inside the program's pool; args[2] ==
    /// args[0]: the mapping grows in place over the pages after it, which the kernel took for
    /// it), replacing the guest RAM there in one step (never a hole a vCPU could touch). The
    /// old range stays mapped (the kernel gives it up with `UNMAP_SHARED_FILE`, or keeps it:
    /// MREMAP_DONTUNMAP). Returns how many bytes from args[2] the file covers (page-aligned; the
    /// kernel hides the pages past its end: SIGBUS), or a negated errno (EINVAL, EFAULT, ENOMEM:
    /// only a regular file's mapping grows past what covers it).
    pub const REMAP_SHARED: u64 = 35;
    /// A kernel entry found the GS base not the kernel's (the program ran WRGSBASE, which the
    /// kernel in the program's ring cannot survive): args[0] is the base. Made from a static
    /// block, not the CPU's. The monitor ends the run as a program killed by SIGILL.
    pub const PROGRAM_GS_BASE: u64 = 36;
}

/// What [`nr::CORE_DUMP`] is given: the ending thread and process, as the notes of a Linux
/// core file carry them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CoreRecord {
    /// The signal, its `si_code` and its address (the fault's; 0 for others).
    pub signo: u64,
    pub code: u64,
    pub addr: u64,
    pub pid: u64,
    pub tid: u64,
    pub ppid: u64,
    pub pgrp: u64,
    pub sid: u64,
    /// Whether `regs` hold the thread's registers at the fault or signal (0: unknown, zeros).
    pub regs_known: u64,
    /// `struct user_regs_struct` of x86-64, in its order: r15 r14 r13 r12 rbp rbx r11 r10 r9
    /// r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss fs_base gs_base ds es fs gs.
    pub regs: [u64; 27],
    /// The program's name (comm), NUL-padded.
    pub comm: [u8; 16],
    /// Where its auxiliary vector is in its memory (address, bytes; 0 if unknown).
    pub auxv: [u64; 2],
    /// The program's other threads, stopped for the dump: an array of [`CoreThread`] in the
    /// kernel's memory (address, count; count 0 if they could not be stopped).
    pub others: [u64; 2],
}

/// One of the other threads of [`CoreRecord::others`]: its tid and registers (the same order
/// as [`CoreRecord::regs`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CoreThread {
    pub tid: u64,
    pub regs: [u64; 27],
}

/// The most other threads [`nr::CORE_DUMP`] takes.
pub const CORE_THREADS_MAX: u64 = 4096;

/// Process calls (child processes run on the host, `--children host`): the kernel sends them
/// to the monitor like forwarded system calls, with numbers above every Linux number. A call a
/// spawn child makes before its `execve` (a `vfork` or `clone(CLONE_VM|CLONE_VFORK)` child,
/// what `posix_spawn` makes) carries the child's id in bits [`process::CONTEXT_SHIFT`] and up
/// of the number, Linux calls included: the monitor then acts on the child's own copy of the
/// descriptor table, working directory and process-group requests.
pub mod process {
    /// The child context of a forwarded call: `nr >> CONTEXT_SHIFT` (0: the program itself).
    pub const CONTEXT_SHIFT: u32 = 32;
    /// Set in a forwarded Linux call's number when the calling thread blocks SIGTTOU: the
    /// monitor blocks it too while it makes the call, so that a background process's
    /// `tcsetpgrp`, `tcsetattr` or TOSTOP write goes through as on Linux instead of stopping
    /// `hrt` (bash blocks SIGTTOU in each job before it hands it the terminal).
    pub const TTOU_BLOCKED: u64 = 1 << 31;
    /// Set in a forwarded Linux call's number when the calling thread blocks SIGTTIN: a
    /// background read of the terminal then fails with EIO, as on Linux, where `hrt` would
    /// stop with SIGTTIN for a program that keeps its default action (forward/tty_stop.rs).
    /// (Bit 30 is the channel's `MONITOR_OP`.)
    pub const TTIN_BLOCKED: u64 = 1 << 29;
    /// Set in a forwarded call's number when the program may see when a signal came (it has a
    /// handler for, or the calling thread blocks, a signal the monitor passes on): before it
    /// answers, the monitor passes on every signal that reached `hrt` on the host so far, so
    /// that a signal another process sent before the message this call reads is pending when
    /// the call returns, as on Linux (monitor/src/taken_signals.rs).
    pub const SIGNALS_WATCHED: u64 = 1 << 28;
    /// A spawn child begins (the monitor copies the program's descriptor table for it).
    pub const CHILD_BEGIN: u64 = 0x2000;
    /// A spawn child ended before exec (its table copy is dropped).
    pub const CHILD_END: u64 = 0x2001;
    /// The child's signal state for its exec: (ignored signals, signal mask), bit `sig - 1`,
    /// and the CPUs the program allows the thread (three words of guest CPU bits).
    pub const SIGNALS: u64 = 0x2002;
    /// execveat(dirfd, path, argv, envp, flags, seccomp filters) in a spawn child: the host pid
    /// on success. The filters: [`SECCOMP_FILTER`]'s id, 0 for none.
    pub const EXEC: u64 = 0x2003;
    /// wait4(pid, status, options, rusage) for the program's host children.
    pub const WAIT4: u64 = 0x2004;
    /// waitid(idtype, id, infop, options, rusage).
    pub const WAITID: u64 = 0x2005;
    /// kill(pid, sig) to a host child or a process group.
    pub const KILL: u64 = 0x2006;
    /// setpgid(pid, pgid), getpgid(pid), setsid(), getsid(pid); pid 0 is the caller.
    pub const SETPGID: u64 = 0x2007;
    pub const GETPGID: u64 = 0x2008;
    pub const SETSID: u64 = 0x2009;
    pub const GETSID: u64 = 0x200a;
    /// execveat(dirfd, path, flags) in the program itself: the monitor resolves the path like
    /// open's, checks the file as execve does (a regular file with execute permission, not on
    /// a noexec mount), follows `#!` lines, reads the ELF program and its interpreter, and
    /// keeps them as one blob (see [`exec_blob`]). Answers the blob's length or a negated errno.
    pub const EXEC_OPEN: u64 = 0x200b;
    /// (addr, len): copies the pending blob into the program's memory at `addr`.
    pub const EXEC_READ: u64 = 0x200c;
    /// (argv block, its length, argc): the exec passed its point of no return: descriptors
    /// with FD_CLOEXEC are closed, `/proc/self` describes the new program, the blob goes.
    pub const EXEC_COMMIT: u64 = 0x200d;
    /// The exec failed before its point of no return: the blob goes, nothing else changes.
    pub const EXEC_ABORT: u64 = 0x200e;
    /// (addr, 0 = wait / 1 = wake, val, timeout in ns or u64::MAX, bitset): a futex on host
    /// shared memory (a file's, a segment's, anonymous memory shared at a fork), which other
    /// processes' futexes on the same pages reach: the host's FUTEX_WAIT_BITSET while the word
    /// holds `val` (relative timeout), or FUTEX_WAKE_BITSET of at most `val` waiters (the
    /// number woken); a bitset of 0 means every bit (FUTEX_WAIT, FUTEX_WAKE).
    /// (addr, 2, nwake, nmove, addr2, compare): the host's FUTEX_REQUEUE from `addr` to
    /// shared word `addr2`, or FUTEX_CMP_REQUEUE against the low 32 bits of `compare` when
    /// it has `SHARED_FUTEX_COMPARE` set (the number woken plus the number moved).
    pub const SHARED_FUTEX: u64 = 0x200f;
    /// See `SHARED_FUTEX`.
    pub const SHARED_FUTEX_COMPARE: u64 = 1 << 32;
    /// (which): the CPU time, in microseconds, of the program's host children that ended and
    /// were waited for (the host's `getrusage(RUSAGE_CHILDREN)` of `hrt`, whose children are
    /// all the program's): user time for `which` 0, system time for 1.
    pub const CHILDREN_TIME: u64 = 0x2010;
    /// (who): the largest resident set, in KiB, of the program (`who` 0: `hrt`'s host process
    /// less what it held when the VM was about to start, which is the monitor's and the
    /// guest's own) or of its ended and waited-for children (1: the largest of theirs, less the
    /// same), as getrusage's ru_maxrss.
    pub const MAX_RSS: u64 = 0x2011;
    /// (fd_a, fd_b): 1 if the two descriptors of the caller's table share one open file
    /// description (the host's kcmp KCMP_FILE of their host descriptors), else 0; EBADF if
    /// either is none. The kernel tells by it a signalfd that came back in an SCM_RIGHTS
    /// message (a host eventfd, to the host) from a plain eventfd.
    pub const SAME_FILE: u64 = 0x2012;
    /// (fd, close): the program is about to close or replace descriptor `fd`, which private
    /// file mappings were read from: the monitor keeps its open file (a new host descriptor of
    /// it) under a new handle (answered) that no descriptor number names, so that
    /// `madvise(MADV_DONTNEED)` can read the file again as Linux's mapping, which holds its
    /// file, does; with `close` 1 it also closes `fd` (the program's `close`, done in the same
    /// call). EBADF, EMFILE, or ENFILE when the monitor keeps too many already.
    pub const KEEP_FILE: u64 = 0x2013;
    /// (handle, buf, count, pos): pread64 from a kept file.
    pub const KEPT_PREAD: u64 = 0x2014;
    /// (handle): no mapping names the kept file any more; it closes with its last descriptor.
    pub const DROP_KEPT: u64 = 0x2015;
    /// (child pid, wait status): `clone(CLONE_PIDFD)` of a spawn child that ended before its
    /// exec, which no host process is: the monitor makes a host process that has exited as the
    /// child did (a stand-in, with no exit signal: the kernel sent the child's) and answers a
    /// close-on-exec pidfd of it in the program's table. Waits that reap the stand-in answer
    /// with the child's pid.
    pub const STAND_IN_PIDFD: u64 = 0x2016;
    /// (child pid, only ask): the kernel took its own record of the child; the monitor reaps the
    /// child's stand-in if it still has one (nothing else: the child's pid is no host
    /// process's). With `only ask` 1 it reaps nothing. Answers 1 if the stand-in was there.
    pub const REAP_STAND_IN: u64 = 0x2017;
    /// (dirfd | flags << 32, path, argv, envp, ignored signals, signal mask): execveat in the
    /// program itself, asked first. In a forked child whose child processes run as host
    /// programs (`--children host`) the monitor resolves and checks the exec as a spawn
    /// child's, reads argv and envp, keeps them and answers 1: [`EXEC_HOST_GO`] then starts
    /// the host program in the child's own host process. Answers 0 where the exec belongs in
    /// this VM (the `hrt run`'s own program, `--children hrt`), or a negated errno.
    pub const EXEC_HOST: u64 = 0x2018;
    /// (ITIMER_REAL's time left, its interval in nanoseconds; seccomp filters as [`EXEC`]'s):
    /// the host program that
    /// [`EXEC_HOST`] prepared replaces the forked child's `hrt` (same pid, descriptors without
    /// FD_CLOEXEC at their numbers, ignored signals and mask, and the alarm, which an exec
    /// keeps; args: the alarm's time left and interval, the seccomp filters, and three words
    /// of guest CPU bits the thread may run on, which it keeps too). Never answers if it started; a negated errno if the host's execve failed
    /// (nothing changed).
    pub const EXEC_HOST_GO: u64 = 0x2019;
    /// (fd, buf, count, pos): the first pread64 of a private file mapping's contents, after
    /// Linux's checks of the descriptor for `mmap`: EBADF for none (or an O_PATH one), EACCES
    /// if it is not open for reading, ENODEV for a file that cannot be mapped (a directory, a
    /// pipe, a socket, a character device other than /dev/zero, a /proc file). For /dev/zero
    /// the whole count, with nothing written: the kernel maps fresh memory, which reads zero.
    pub const MAP_PREAD: u64 = 0x201a;
    /// (flags: EFD_NONBLOCK, EFD_CLOEXEC): a new eventfd in the program's table to stand for a
    /// signalfd (kernel/src/linux/signalfd): the monitor knows it for one, so `poll`, `select`
    /// and epoll never find it writable and its /proc/self/fd link reads
    /// `anon_inode:[signalfd]`.
    pub const SIGNALFD_EVENTFD: u64 = 0x201b;
    /// (loads): writes the host's three load averages, as `sysinfo` gives them (fixed point,
    /// 1 << 16 = 1.0), to three u64 words of program memory at `loads`: the program's
    /// `sysinfo` (glibc's `getloadavg`, libgomp's OMP_DYNAMIC) agrees with the /proc/loadavg
    /// it reads from the host.
    pub const HOST_LOADS: u64 = 0x201c;
    /// (older filters' id, program, instruction count): the program installed a seccomp
    /// filter (`struct sock_filter` array in its memory, which the kernel has checked) over
    /// the filters `older` names (0: none). The monitor keeps a copy and answers an id (never
    /// 0) naming it and the older ones; [`EXEC`]'s sixth argument and [`EXEC_HOST_GO`]'s third
    /// name the exec'ing thread's filters (0: none), which the host program gets before its
    /// `execve`. ENOMEM past the monitor's limit on kept instructions.
    pub const SECCOMP_FILTER: u64 = 0x201d;
    /// (id): the kernel no longer holds the filter [`SECCOMP_FILTER`] answered `id` for; the
    /// monitor drops its copy once no newer kept filter names it either.
    pub const SECCOMP_RELEASE: u64 = 0x201e;
    /// (): answers 0 once every signal that reached `hrt` on the host before the call is the
    /// kernel's (in the channel's word or queue): `sigpending`, a `sigtimedwait` about to
    /// answer EAGAIN and a signalfd read about to answer EAGAIN ask first.
    pub const SYNC_SIGNALS: u64 = 0x201f;
    /// (pid): whether the program may change the CPU mask of host process `pid` (Linux's
    /// rule: the same effective uid as the process's real or effective one, or CAP_SYS_NICE):
    /// 0, EPERM, or ESRCH for no such process. Nothing is changed.
    pub const AFFINITY_ALLOWED: u64 = 0x2020;
    /// (pending signals, ITIMER_VIRTUAL's time left and interval, ITIMER_PROF's, in
    /// nanoseconds): between [`EXEC_HOST`] and [`EXEC_HOST_GO`], what else the exec keeps on
    /// Linux: the signals pending for the thread or the process that its mask blocks (bit
    /// `sig - 1`), raised again for the host program, and the CPU-time interval timers.
    pub const EXEC_HOST_CARRY: u64 = 0x2021;
    /// (fd, offset, length): how many entries [`super::nr::FILE_OVERRIDES`] has for the part
    /// of file `fd` the program maps executable; a negated EOPNOTSUPP when the file is the
    /// group's library but cannot be overridden. Asked through the channel first, so that
    /// only a file with entries (libgomp, the C library) costs that hypercall's VM exit:
    /// ffmpeg maps 207 libraries, each one exit before.
    pub const FILE_ENTRY_COUNT: u64 = 0x2022;
    /// Lowest and highest process-call numbers.
    pub const FIRST: u64 = CHILD_BEGIN;
    pub const LAST: u64 = FILE_ENTRY_COUNT;
}

/// The blob of [`process::EXEC_OPEN`]: a header of [`exec_blob::HEADER_WORDS`] little-endian
/// u64 words, then the strings, then the program's file and its interpreter's, each at a page
/// boundary. The strings are `PREFIX_COUNT` NUL-terminated arguments that replace argv[0]
/// (a script's interpreter, its optional argument and the script's name; none for an ELF
/// program), then the file name as execve got it (AT_EXECFN), then the new program's command
/// name (comm), each NUL-terminated.
/// Then the function overrides the monitor chose for the new program under `--omp`
/// ([`overrides::Entry`]s, encoded; none when it keeps its own runtime), and in `W_OMP_FLAGS`
/// the [`flags::OMP_LIBRARY`] bit when its shared libgomp is to be handled when ld.so maps it.
pub mod exec_blob {
    pub const MAGIC: u64 = 0x6578_6563_626c_6f62;
    pub const HEADER_WORDS: usize = 11;
    // Word indices.
    pub const W_MAGIC: usize = 0;
    pub const W_PROGRAM_OFF: usize = 1;
    pub const W_PROGRAM_LEN: usize = 2;
    pub const W_INTERP_OFF: usize = 3;
    /// 0 for a program without an interpreter (static).
    pub const W_INTERP_LEN: usize = 4;
    pub const W_STRINGS_OFF: usize = 5;
    pub const W_PREFIX_COUNT: usize = 6;
    pub const W_STRINGS_LEN: usize = 7;
    pub const W_OVERRIDES_OFF: usize = 8;
    pub const W_OVERRIDES_LEN: usize = 9;
    pub const W_OMP_FLAGS: usize = 10;
}

/// The dispositions of [`nr::HOST_SIGNAL_ACTION`].
pub mod signal_action {
    pub const DEFAULT: u64 = 0;
    pub const IGNORE: u64 = 1;
    pub const HANDLER: u64 = 2;
    /// Or'ed into DEFAULT or HANDLER for SIGCHLD: SA_NOCLDWAIT (ended children are reaped).
    pub const NO_CHILD_WAIT: u64 = 1 << 8;
    /// Or'ed into DEFAULT or HANDLER for SIGCHLD: SA_NOCLDSTOP (no SIGCHLD when a child stops
    /// or continues).
    pub const NO_CHILD_STOP: u64 = 1 << 9;
}

/// The program's page map (`nr::USER_MAP`): bit `i % 8` of byte `i / 8` is set while the 4 KiB
/// page at `base + i * USER_MAP_PAGE` is mapped in the program; in the `read_only` bitmap while
/// it lacks PROT_WRITE (the monitor then writes no forwarded call's answer there: EFAULT); in the
/// `unreadable` bitmap while it is mapped without PROT_READ (execute-only, write-only: the
/// hardware reads such pages, Linux's cross-memory attach does not; a bit may stay set on a
/// page that is not mapped, so it counts only where the page is). It lives in kernel memory the
/// program cannot write; the kernel updates it on every mmap, munmap, mremap and brk, and the
/// monitor reads it to check every range a forwarded call names (EFAULT where Linux would give
/// it, for ranges that leave the program's mappings).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserMap {
    pub bitmap: u64,
    pub bytes: u64,
    pub base: u64,
    pub pages: u64,
    pub read_only: u64,
    pub unreadable: u64,
}

/// Page size of [`UserMap`].
pub const USER_MAP_PAGE: u64 = 4096;

/// `hrt` exit status after a kernel panic.
pub const PANIC_STATUS: i32 = 101;

// The boot-info block is one page.
const _: () = assert!(core::mem::size_of::<BootInfo>() <= 4096);
