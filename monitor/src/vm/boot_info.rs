//! The boot-info block and the boot page tables the kernel starts on.

use hrt_abi::{flags, layout, BootInfo, Range, UserMap, ABI_VERSION, BOOT_MAGIC, MAX_CPUS, MAX_RAM_RANGES};

use super::memory::{GuestRam, GRANULE};
use super::VmConfig;
use crate::error::Result;
use crate::kernel_image::KernelImage;

const PRESENT_WRITABLE: u64 = 0x3;
const LARGE: u64 = 0x80;
const USER: u64 = 0x4;

/// Where things landed, for the vCPU set-up.
#[derive(Clone, Copy)]
pub struct BootLayout {
    pub boot_stacks: u64,
    /// The program's memory pool (empty without a program): all the forwarder may touch.
    pub user_pool: (u64, u64),
    /// The part of the kernel's share that KVM gets only as the kernel asks (`pool_slots`;
    /// empty without a program): from the pool's end up to the share's first piece.
    pub kernel_lazy: (u64, u64),
    /// The kernel's page map and forwarding channel where the monitor placed them
    /// (`BootInfo::page_map`, `BootInfo::channel`), to be known from the start.
    pub page_map: Option<UserMap>,
    pub channel: Option<Range>,
    /// The kernel's table of robust lists (`BootInfo::robust_heads`), walked if `hrt` is killed.
    pub robust_heads: Option<Range>,
    /// Where the program's file lies in guest RAM (0 without a program): its large segments
    /// are left out there (`placed_image`).
    pub program_image: u64,
}

/// The kernel's share of RAM registered at start: this much RAM below the reserved span at its
/// top (the program's file, arguments and the boot stacks). The rest, down to the pool's end,
/// is registered as the kernel asks (`pool_slots`): KVM's bookkeeping of a slot costs ~1 ms
/// per GiB to set up and ~0.3 ms to tear down, and most programs use a few MiB of the share
/// (4 GiB at the default 64 GiB). Enough for the boot: the allocators' metadata, the page
/// tables and every vCPU's stacks.
const KERNEL_FIRST_PIECE: u64 = 64 << 20;

pub fn write(
    ram: &GuestRam,
    config: &VmConfig,
    image: &KernelImage,
    cpuid: &kvm_bindings::CpuId,
    tsc_khz: u64,
) -> Result<BootLayout> {
    write_page_tables(ram)?;
    let mut info = BootInfo::zeroed();
    info.magic = BOOT_MAGIC;
    info.version = ABI_VERSION;
    info.num_cpus = config.cpus;
    info.mem_size = ram.size;
    info.host_memory = super::host_memory::available().unwrap_or(0);
    for (i, (base, size)) in ram.ranges().into_iter().take(MAX_RAM_RANGES).enumerate() {
        info.ram[i] = Range { base, size };
        info.num_ram = i as u32 + 1;
    }
    info.platform = config.platform as u32;
    info.flags = flags::MEMORY_ZEROED | if config.idle_halt { flags::IDLE_HALT } else { 0 };
    if config.kernel_ring0 {
        info.flags |= flags::KERNEL_RING0;
    }
    if config.overcommitted {
        info.flags |= flags::HOST_OVERCOMMITTED;
    }
    info.pack_on = config.pack_on;
    info.seed = super::seed::fresh();
    // Only a program's forwarded calls need the channel's service thread.
    if config.idle_halt_late && config.program.as_ref().is_some_and(|p| !p.no_channel) {
        info.flags |= flags::IDLE_HALT_LATE;
    }
    // A program's idle CPUs only: `hrt selftest` and the in-kernel benchmarks measure polling.
    if config.idle_halt_long && config.program.is_some() {
        info.flags |= flags::IDLE_HALT_LONG;
    }
    info.preempt_us = config.preempt_us;
    info.tsc_khz = tsc_khz;
    info.features = guest_features(cpuid);
    // Refined with the guest TSC just before the boot CPU runs (`host_clocks::sample_at_boot`).
    [info.wallclock_ns, info.monotonic_ns, info.boottime_ns, info.monotonic_raw_ns] = super::host_clocks::now();
    info.tai_offset_s = super::host_clocks::tai_offset_s();
    info.coarse_res_ns = super::host_clocks::coarse_resolution_ns();

    // Boot stacks at the top of memory (with the program's file and arguments below them),
    // out of the way of programs linked at low addresses; all in one RAM range.
    let stacks = config.cpus as u64 * layout::BOOT_STACK_SIZE;
    let program_bytes = config.program.as_ref().map_or(0, program_top_bytes);
    let top_end = top_range_end(ram, stacks + program_bytes, image.end()).ok_or_else(|| {
        crate::error::err!(
            "--mem {} MiB leaves no room for {} boot stacks and the program",
            ram.size >> 20,
            config.cpus
        )
    })?;
    info.boot_stacks = (top_end - stacks) & !0xfff;

    // Zones: RAM split evenly (2 MiB granules, counted without the hole), CPUs split evenly.
    let zones = config.numa as u64;
    let per_zone = (ram.size / zones) & !(GRANULE - 1);
    info.num_zones = config.numa;
    for z in 0..zones {
        let start = z * per_zone;
        let end = if z == zones - 1 { ram.size } else { start + per_zone };
        let base = layout::ram_phys(start);
        info.zones[z as usize] = Range { base, size: layout::ram_phys_end(end) - base };
    }
    for cpu in 0..config.cpus.min(MAX_CPUS as u32) {
        info.cpu_zone[cpu as usize] = (cpu as u64 * zones / config.cpus as u64) as u8;
    }
    if let Some(setup) = &config.program {
        place_program(ram, &mut info, setup)?;
    }
    let cmd = config.cmdline.as_bytes();
    info.cmdline[..cmd.len()].copy_from_slice(cmd);
    info.cmdline_len = cmd.len() as u32;
    ram.write_obj(layout::BOOT_INFO, &info)?;
    let pool = (info.user_pool.base, info.user_pool.base + info.user_pool.size);
    let lazy = (info.kernel_lazy.base, info.kernel_lazy.base + info.kernel_lazy.size);
    Ok(BootLayout {
        boot_stacks: info.boot_stacks,
        user_pool: pool,
        kernel_lazy: lazy,
        page_map: (info.page_map.pages > 0).then_some(info.page_map),
        channel: (info.channel.size > 0).then_some(info.channel),
        robust_heads: (info.robust_heads.size > 0).then_some(info.robust_heads),
        program_image: info.program.base,
    })
}

/// The argv/envp block: every string NUL-terminated, argv then envp.
fn args_block(setup: &super::ProgramSetup) -> Vec<u8> {
    let mut block = Vec::new();
    let comm = comm_view(setup);
    for s in setup.argv.iter().chain(setup.envp.iter()).chain([&exe_view(setup), &setup.execfn, &comm]) {
        block.extend_from_slice(s);
        block.push(0);
    }
    block
}

/// The program's command name without its padding.
fn comm_view(setup: &super::ProgramSetup) -> Vec<u8> {
    setup.comm.iter().copied().take_while(|&b| b != 0).collect()
}

/// What readlink("/proc/self/exe") answers for the program, as the forwarder answers it: the
/// kernel answers it itself until an execve (`BootInfo::exe_len`).
fn exe_view(setup: &super::ProgramSetup) -> Vec<u8> {
    crate::forward::exe_path(&setup.program.host_path)
}

/// Bytes the program's file, its interpreter's file and the argument block take below the
/// boot stacks, with alignment.
fn program_top_bytes(setup: &super::ProgramSetup) -> u64 {
    let image = (setup.program.bytes.len() as u64).div_ceil(GRANULE) * GRANULE;
    let interp = interp_len(setup).div_ceil(4096) * 4096;
    let args = args_block(setup).len() as u64;
    let overrides = setup.overrides.len() as u64;
    GRANULE + image + interp + args.div_ceil(4096) * 4096 + overrides.div_ceil(4096) * 4096
}

/// Bytes of a dynamic program's interpreter file (0 for a static program).
fn interp_len(setup: &super::ProgramSetup) -> u64 {
    setup.program.interp.as_ref().map_or(0, |i| i.bytes.len() as u64)
}

/// The end of the highest RAM range that can hold `bytes` at its top, above `floor` (the
/// kernel image's end): the boot stacks and the program's file must not straddle the hole.
fn top_range_end(ram: &GuestRam, bytes: u64, floor: u64) -> Option<u64> {
    ram.ranges()
        .into_iter()
        .rev()
        .find(|&(base, size)| size >= bytes && base + size - bytes >= floor.max(base))
        .map(|(base, size)| base + size)
}

/// Puts the program file, its interpreter's file and its argv/envp block below the boot
/// stacks, reserves them and the program's fixed link span, and checks that everything fits.
fn place_program(ram: &GuestRam, info: &mut BootInfo, setup: &super::ProgramSetup) -> Result<()> {
    let p = &setup.program;
    let block = args_block(setup);
    let align = GRANULE;
    let image_len = p.bytes.len() as u64;
    let interp_len = interp_len(setup);
    let args_len = block.len() as u64;
    let overrides_len = setup.overrides.len() as u64;
    // The files and the argument block right below the boot stacks, page-aligned: a small
    // program's all share the top 2 MiB page, which the host clears once when first touched
    // (a fresh 2 MiB page cost 0.3-1.4 ms here).
    let top = info.boot_stacks & !0xfff;
    let needed = image_len.div_ceil(align) * align
        + interp_len.div_ceil(4096) * 4096
        + args_len.div_ceil(4096) * 4096
        + overrides_len.div_ceil(4096) * 4096
        + p.mem_needed
        + (64 << 20);
    if needed > ram.size {
        return Err(crate::error::err!(
            "{} needs about {} MiB but the VM has {} MiB: use a larger --mem",
            p.given,
            needed >> 20,
            ram.size >> 20
        ));
    }
    let image_base = (top - image_len) & !0xfff;
    // The interpreter's file (if any) right below the program's, then the argument block.
    let interp_base = (image_base - interp_len) & !0xfff;
    let args_base = (interp_base - args_len) & !0xfff;
    // The override list (if any) below the argument block; the reserved span starts there.
    let low_base = (args_base - overrides_len) & !0xfff;
    // Without the large segments, which the monitor copies from its own view of the file
    // (`placed_image`).
    for (off, part) in crate::placed_image::kept_parts(&p.bytes, &p.left_out) {
        ram.write(image_base + off, part)?;
    }
    if overrides_len > 0 {
        ram.write(low_base, &setup.overrides)?;
        info.overrides = Range { base: low_base, size: overrides_len };
    }
    if let Some(interp) = &p.interp {
        ram.write(interp_base, &interp.bytes)?;
        info.interp = Range { base: interp_base, size: interp_len };
    }
    ram.write(args_base, &block)?;
    info.program = Range { base: image_base, size: image_len };
    info.args = Range { base: args_base, size: args_len };
    info.argc = setup.argv.len() as u32;
    info.envc = setup.envp.len() as u32;
    info.exe_len = exe_view(setup).len() as u32;
    info.execfn_len = setup.execfn.len() as u32;
    info.comm_len = comm_view(setup).len() as u32;
    info.app_ring = setup.app_ring;
    // SAFETY: plain identity queries.
    unsafe {
        info.uid = libc::getuid();
        info.gid = libc::getgid();
    }
    info.host_pid = std::process::id();
    // SAFETY: getppid cannot fail.
    info.host_ppid = unsafe { libc::getppid() } as u32;
    info.uname = host_uname();
    if setup.no_channel {
        info.flags |= flags::NO_CHANNEL;
    }
    if setup.no_rewrite {
        info.flags |= flags::NO_REWRITE;
    }
    if setup.exact_brk {
        info.flags |= flags::EXACT_BRK;
    }
    if setup.strace {
        info.flags |= flags::STRACE;
    }
    if setup.profile_hz > 0 {
        info.flags |= flags::PROFILE;
    }
    match setup.omp_library {
        Some(crate::overrides::LibraryUse::Override { required }) => {
            info.flags |= flags::OMP_LIBRARY | if required { flags::OMP_REQUIRED } else { 0 };
        }
        Some(crate::overrides::LibraryUse::SpinTests) => info.flags |= flags::OMP_LIBRARY,
        None => {}
    }
    if !setup.verbose {
        info.flags |= flags::QUIET;
    }
    info.sig_ignored = setup.sig_ignored;
    info.sig_mask = setup.sig_mask;
    info.rlimits = host_rlimits();
    if setup.pack_threads {
        info.flags |= flags::PACK_THREADS;
    }
    if setup.child_process {
        info.flags |= flags::CHILD_PROCESS;
    }
    if setup.cpus_at_boot {
        info.flags |= flags::CPUS_AT_BOOT;
    }
    // The program's pool: everything from USER_POOL_BASE up to the kernel's share at the top
    // (image, args and boot stacks included), which keeps max(64 MiB, 1/16 of memory) of RAM.
    // The span may contain the hole below 4 GiB; only its RAM is the program's.
    let kernel_share = (ram.size / 16).max(64 << 20);
    let pool_end = low_base.min(layout::ram_phys(ram.size - kernel_share)) & !(align - 1);
    let pool_base = layout::USER_POOL_BASE;
    let pool_ram = ram_bytes_in(ram, pool_base, pool_end);
    if pool_end <= pool_base || pool_ram <= p.mem_needed {
        return Err(crate::error::err!(
            "{} needs {} MiB; the VM's {} MiB is too small: use a larger --mem",
            p.given,
            p.mem_needed >> 20,
            ram.size >> 20
        ));
    }
    info.user_pool = Range { base: pool_base, size: pool_end - pool_base };
    let (lazy_lo, lazy_hi) = kernel_lazy_span(pool_end, low_base);
    info.kernel_lazy = Range { base: lazy_lo, size: lazy_hi - lazy_lo };
    let mut reserved = vec![Range { base: low_base, size: top - low_base }, info.user_pool];
    reserved.extend(place_kernel_tables(ram, info, lazy_hi, low_base, !setup.no_channel));
    if let Some((start, end)) = p.fixed_span {
        if end > pool_end {
            return Err(crate::error::err!(
                "{} is linked at {start:#x}..{end:#x}, beyond the VM's {} MiB: use a larger --mem",
                p.given,
                ram.size >> 20
            ));
        }
        if ram_bytes_in(ram, start, end) != end - start {
            return Err(crate::error::err!(
                "{} is linked at {start:#x}..{end:#x}, in the hole below 4 GiB ({:#x}..{:#x}) where no RAM is: link it elsewhere or build it with -static-pie",
                p.given,
                layout::LOW_RAM_END,
                layout::HIGH_RAM_BASE
            ));
        }
        info.program_fixed = Range { base: start, size: end - start };
    }
    for r in reserved {
        info.reserved[info.num_reserved as usize] = r;
        info.num_reserved += 1;
    }
    Ok(())
}

/// The kernel's page map of the pool, its forwarding channel (without `--no-channel`) and its
/// table of robust lists (`hrt_abi::robust_heads`), at
/// the bottom of the kernel's first piece `[from, to)`: memory KVM knows from the start that
/// nothing has written, so it reads zero. The kernel then neither allocates nor clears them,
/// and the monitor knows them from the start: no `USER_MAP` and `CHANNEL` exits, and no
/// `KERNEL_RAM_READY` exit with its memory slot made while the vCPUs run, for the page map
/// (the three took 0.4-1.5 ms of an empty program's start here, in the guest's view). Returns
/// the span to keep out of the kernel's allocator; None leaves both to the kernel, as where
/// the piece is too small.
fn place_kernel_tables(ram: &GuestRam, info: &mut BootInfo, from: u64, to: u64, channel: bool) -> Option<Range> {
    const PAGE: u64 = hrt_abi::USER_MAP_PAGE;
    let pages = info.user_pool.size / PAGE;
    let bytes = pages.div_ceil(64) * 8;
    let stride = bytes.next_multiple_of(PAGE);
    let channel_bytes = if channel { std::mem::size_of::<hrt_abi::channel::Channel>() as u64 } else { 0 };
    let robust_at = 3 * stride + channel_bytes.next_multiple_of(PAGE);
    let size = robust_at + hrt_abi::robust_heads::BYTES;
    let end = from.checked_add(size)?;
    if end > to || ram_bytes_in(ram, from, end) != size {
        return None;
    }
    // Bits for the pool's pages and the channel's slots: a start touches a handful of their
    // 4 KiB pages (the bits of the few MiB the program maps, the slots of a few calls).
    ram.sparse(from, size);
    info.page_map = UserMap {
        bitmap: from,
        bytes,
        base: info.user_pool.base,
        pages,
        read_only: from + stride,
        unreadable: from + 2 * stride,
    };
    if channel {
        info.channel = Range { base: from + 3 * stride, size: channel_bytes };
    }
    info.robust_heads = Range { base: from + robust_at, size: hrt_abi::robust_heads::BYTES };
    Some(Range { base: from, size })
}

/// The part of the kernel's share, `[pool_end, low_base)` and the reserved span above, that
/// KVM gets only as the kernel asks: all but the first piece, KERNEL_FIRST_PIECE of RAM
/// (counted without the hole, which the share straddles at some sizes of --mem) below the
/// reserved span, in whole 2 MiB pages. Empty when the share is no larger than that.
fn kernel_lazy_span(pool_end: u64, low_base: u64) -> (u64, u64) {
    let first = layout::ram_phys(ram_offset(low_base).saturating_sub(KERNEL_FIRST_PIECE)) & !(GRANULE - 1);
    (pool_end, first.max(pool_end))
}

/// The offset in guest RAM, counted without the hole below 4 GiB, of guest-physical `addr`
/// (`layout::ram_phys`'s inverse; an address in the hole counts as the hole's start).
pub fn ram_offset(addr: u64) -> u64 {
    if addr < layout::HIGH_RAM_BASE {
        addr.min(layout::LOW_RAM_END)
    } else {
        addr - (layout::HIGH_RAM_BASE - layout::LOW_RAM_END)
    }
}

/// Bytes of RAM in the guest-physical span `[start, end)`.
fn ram_bytes_in(ram: &GuestRam, start: u64, end: u64) -> u64 {
    ram.ranges().into_iter().map(|(base, size)| (base + size).min(end).saturating_sub(base.max(start))).sum()
}

fn guest_features(cpuid: &kvm_bindings::CpuId) -> u64 {
    use super::cpuid::has;
    use hrt_abi::features::*;
    [
        (has(cpuid, 1, 'c', 21), X2APIC),
        (has(cpuid, 1, 'c', 24), TSC_DEADLINE),
        (has(cpuid, 1, 'c', 26), XSAVE),
        (has(cpuid, 1, 'c', 28), AVX),
        (has(cpuid, 0x8000_0001, 'd', 26), PAGES_1G),
        (has(cpuid, 0x8000_0001, 'd', 27), RDTSCP),
        (kvm_leaves(cpuid) && has(cpuid, 0x4000_0001, 'a', 5), STEAL_TIME),
    ]
    .into_iter()
    .filter_map(|(on, bit)| on.then_some(bit))
    .fold(0, |a, b| a | b)
}

/// Whether the CPUID has KVM's paravirtual leaves (signature "KVMKVMKVM" at 0x4000_0000).
fn kvm_leaves(cpuid: &kvm_bindings::CpuId) -> bool {
    cpuid
        .as_slice()
        .iter()
        .any(|e| e.function == 0x4000_0000 && e.ebx == 0x4b4d_564b && e.ecx == 0x564b_4d56 && e.edx == 0x4d)
}

/// Identity-maps all guest RAM with 2 MiB pages: PML4 -> one PDPT -> one PD per GiB of
/// guest-physical space up to the end of RAM (the hole below 4 GiB stays unmapped). User-
/// accessible: in ring-3 mode (PVM) the boot CPU leaves ring 0 on these tables and builds the
/// kernel's own natively (kernel `boot::boot_cpu_in_ring3`); ring 0 ignores the bit (no SMEP or
/// SMAP until the kernel's tables are loaded).
fn write_page_tables(ram: &GuestRam) -> Result<()> {
    const PRESENT_WRITABLE: u64 = self::PRESENT_WRITABLE | USER;
    ram.write_obj(layout::BOOT_PML4, &(layout::BOOT_PDPT | PRESENT_WRITABLE))?;
    let gibs = ram.phys_end().div_ceil(1 << 30);
    let mut pdpt = vec![0u64; 512];
    let mut pds = vec![0u64; gibs as usize * 512];
    for (base, size) in ram.ranges() {
        for page in (base..base + size).step_by(GRANULE as usize) {
            pds[(page >> 21) as usize] = page | PRESENT_WRITABLE | LARGE;
            pdpt[(page >> 30) as usize] = (layout::BOOT_PD + (page >> 30) * 4096) | PRESENT_WRITABLE;
        }
    }
    ram.write(layout::BOOT_PDPT, as_bytes(&pdpt))?;
    ram.write(layout::BOOT_PD, as_bytes(&pds))
}

fn as_bytes(v: &[u64]) -> &[u8] {
    // SAFETY: u64s viewed as bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len() * 8) }
}

/// The host's uname fields, as the program's uname reports them.
fn host_uname() -> [[u8; hrt_abi::UTS_LEN]; 6] {
    let mut out = [[0u8; hrt_abi::UTS_LEN]; 6];
    // SAFETY: utsname is plain data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return out;
    }
    let fields = [&u.sysname, &u.nodename, &u.release, &u.version, &u.machine, &u.domainname];
    for (dst, src) in out.iter_mut().zip(fields) {
        for (d, &c) in dst.iter_mut().zip(src.iter()).take(hrt_abi::UTS_LEN - 1) {
            *d = c as u8;
        }
    }
    out
}

/// `hrt`'s own resource limits, which the program inherits (its `getrlimit` answers them).
fn host_rlimits() -> [[u64; 2]; hrt_abi::RLIMITS] {
    let mut out = [[0u64; 2]; hrt_abi::RLIMITS];
    for (r, slot) in out.iter_mut().enumerate() {
        let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit writes the struct we pass; an unknown resource fails (left zero).
        if unsafe { libc::getrlimit(r as libc::__rlimit_resource_t, &mut rl) } == 0 {
            *slot = [rl.rlim_cur, rl.rlim_max];
        }
    }
    // `hrt` lifted its own soft address-space and data limits; the program's are the ones it
    // was given.
    for resource in [libc::RLIMIT_AS, libc::RLIMIT_DATA] {
        if let (Some(soft), Some(slot)) = (crate::run_memory::original_limit(resource), out.get_mut(resource as usize))
        {
            slot[0] = soft;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    #[test]
    fn the_kernel_share_keeps_its_first_piece_below_the_reserved_span() {
        // 16 GiB: the share is [16 GiB, 17 GiB) physical; the top 66 MiB stay registered.
        let (pool_end, low_base) = (16 * GIB, 17 * GIB - 3 * MIB + 4096);
        assert_eq!(kernel_lazy_span(pool_end, low_base), (pool_end, 17 * GIB - 68 * MIB));
        // A share no larger than the first piece: nothing is left for later.
        assert_eq!(kernel_lazy_span(960 * MIB, 1022 * MIB), (960 * MIB, 960 * MIB));
        // 3200 MiB: the share straddles the hole; the first piece is counted in RAM.
        let high = layout::HIGH_RAM_BASE;
        assert_eq!(kernel_lazy_span(3000 * MIB, high + 100 * MIB), (3000 * MIB, high + 36 * MIB));
        assert_eq!(kernel_lazy_span(3000 * MIB, high + 20 * MIB), (3000 * MIB, layout::LOW_RAM_END - 44 * MIB));
        assert_eq!(ram_offset(layout::HIGH_RAM_BASE + 20 * MIB), layout::LOW_RAM_END + 20 * MIB);
        assert_eq!(ram_offset(layout::LOW_RAM_END + MIB), layout::LOW_RAM_END);
    }
}
