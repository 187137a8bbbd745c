//! The boot-info block and the boot page tables the kernel starts on.

use hrt_abi::{flags, layout, BootInfo, Range, ABI_VERSION, BOOT_MAGIC, MAX_CPUS};

use super::memory::GuestRam;
use super::VmConfig;
use crate::error::Result;
use crate::kernel_image::KernelImage;

const PRESENT_WRITABLE: u64 = 0x3;
const LARGE: u64 = 0x80;

/// Where things landed, for the vCPU set-up.
#[derive(Clone, Copy)]
pub struct BootLayout {
    pub boot_stacks: u64,
    /// The program's memory pool (empty without a program): all the forwarder may touch.
    pub user_pool: (u64, u64),
}

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
    info.platform = config.platform as u32;
    info.flags = flags::MEMORY_ZEROED | if config.idle_halt { flags::IDLE_HALT } else { 0 };
    info.preempt_us = config.preempt_us;
    info.tsc_khz = tsc_khz;
    info.features = guest_features(cpuid);
    info.wallclock_ns =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);

    // Boot stacks at the top of memory, out of the way of programs linked at low addresses.
    let stacks = config.cpus as u64 * layout::BOOT_STACK_SIZE;
    info.boot_stacks = (ram.size - stacks) & !0xfff;
    if info.boot_stacks < image.end() {
        return Err(crate::err!("--mem {} MiB leaves no room for {} boot stacks", ram.size >> 20, config.cpus));
    }

    // Zones: memory split evenly (2 MiB granules), CPUs split evenly.
    let zones = config.numa as u64;
    let granule = 2u64 << 20;
    let per_zone = (ram.size / zones) & !(granule - 1);
    info.num_zones = config.numa;
    for z in 0..zones {
        let base = z * per_zone;
        let size = if z == zones - 1 { ram.size - base } else { per_zone };
        info.zones[z as usize] = Range { base, size };
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
    Ok(BootLayout { boot_stacks: info.boot_stacks, user_pool: pool })
}

/// Puts the program file, its interpreter's file and its argv/envp block below the boot stacks, reserves them and the
/// program's fixed link span, and checks that everything fits.
fn place_program(ram: &GuestRam, info: &mut BootInfo, setup: &super::ProgramSetup) -> Result<()> {
    let p = &setup.program;
    let mut block = Vec::new();
    for s in setup.argv.iter().chain(setup.envp.iter()) {
        block.extend_from_slice(s);
        block.push(0);
    }
    let align = 2u64 << 20;
    let image_len = p.bytes.len() as u64;
    let interp_len = p.interp.as_ref().map_or(0, |i| i.bytes.len() as u64);
    let args_len = block.len() as u64;
    let top = info.boot_stacks & !(align - 1);
    let needed = image_len.div_ceil(align) * align
        + interp_len.div_ceil(4096) * 4096
        + args_len.div_ceil(4096) * 4096
        + p.mem_needed
        + (64 << 20);
    if needed > top {
        return Err(crate::err!(
            "{} needs about {} MiB but the VM has {} MiB: use a larger --mem",
            p.given,
            needed >> 20,
            ram.size >> 20
        ));
    }
    let image_base = (top - image_len) & !(align - 1);
    // The interpreter's file (if any) right below the program's, then the argument block.
    let interp_base = (image_base - interp_len) & !0xfff;
    let args_base = (interp_base - args_len) & !0xfff;
    ram.write(image_base, &p.bytes)?;
    if let Some(interp) = &p.interp {
        ram.write(interp_base, &interp.bytes)?;
        info.interp = Range { base: interp_base, size: interp_len };
    }
    ram.write(args_base, &block)?;
    info.program = Range { base: image_base, size: image_len };
    info.args = Range { base: args_base, size: args_len };
    info.argc = setup.argv.len() as u32;
    info.envc = setup.envp.len() as u32;
    info.app_ring = setup.app_ring;
    // SAFETY: plain identity queries.
    unsafe {
        info.uid = libc::getuid();
        info.gid = libc::getgid();
    }
    info.host_pid = std::process::id();
    if setup.strace {
        info.flags |= flags::STRACE;
    }
    if !setup.verbose {
        info.flags |= flags::QUIET;
    }
    // The program's pool: everything from USER_POOL_BASE up to the kernel's share at the top
    // (image, args and boot stacks included), which keeps max(64 MiB, 1/16 of memory).
    let kernel_share = (ram.size / 16).max(64 << 20);
    let pool_end = (args_base.min(ram.size - kernel_share)) & !(align - 1);
    let pool_base = layout::USER_POOL_BASE;
    if pool_end <= pool_base + p.mem_needed {
        return Err(crate::err!(
            "{} needs {} MiB; the VM's {} MiB is too small: use a larger --mem",
            p.given,
            p.mem_needed >> 20,
            ram.size >> 20
        ));
    }
    info.user_pool = Range { base: pool_base, size: pool_end - pool_base };
    let reserved = vec![Range { base: args_base, size: top - args_base }, info.user_pool];
    if let Some((start, end)) = p.fixed_span {
        if end > pool_end {
            return Err(crate::err!(
                "{} is linked at {start:#x}..{end:#x}, beyond the VM's {} MiB: use a larger --mem",
                p.given,
                ram.size >> 20
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
    ]
    .into_iter()
    .filter_map(|(on, bit)| on.then_some(bit))
    .fold(0, |a, b| a | b)
}

/// Identity-maps all guest RAM with 2 MiB pages: PML4 -> one PDPT -> one PD per GiB.
fn write_page_tables(ram: &GuestRam) -> Result<()> {
    ram.write_obj(layout::BOOT_PML4, &(layout::BOOT_PDPT | PRESENT_WRITABLE))?;
    let gibs = ram.size.div_ceil(1 << 30);
    let mut pdpt = vec![0u64; 512];
    for (g, entry) in pdpt.iter_mut().enumerate().take(gibs as usize) {
        *entry = (layout::BOOT_PD + g as u64 * 4096) | PRESENT_WRITABLE;
    }
    ram.write(layout::BOOT_PDPT, as_bytes(&pdpt))?;
    let large_pages = ram.size.div_ceil(2 << 20);
    let pds: Vec<u64> =
        (0..gibs * 512).map(|i| if i < large_pages { (i << 21) | PRESENT_WRITABLE | LARGE } else { 0 }).collect();
    ram.write(layout::BOOT_PD, as_bytes(&pds))
}

fn as_bytes(v: &[u64]) -> &[u8] {
    // SAFETY: u64s viewed as bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len() * 8) }
}
