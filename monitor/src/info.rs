//! `hrt info`: what a VM would get on this host.

use crate::cli::VmArgs;
use crate::error::Result;
use crate::vm;

pub fn print(args: &VmArgs) -> Result<u8> {
    let kvm = vm::open_kvm()?;
    let config = crate::vm_args::config(args, &kvm, String::new())?;
    let platform = config.platform;
    let cpuid = kvm
        .get_supported_cpuid(kvm_bindings::KVM_MAX_CPUID_ENTRIES)
        .map_err(|e| crate::error::err!("cannot read KVM's CPUID: {e}"))?;
    let has = |f, r, b| vm::cpuid_has(&cpuid, f, r, b);
    let features: Vec<&str> = [
        (has(1, 'c', 21), "x2apic"),
        (has(1, 'c', 24), "tsc-deadline"),
        (has(1, 'c', 26), "xsave"),
        (has(1, 'c', 28), "avx"),
        (has(7, 'b', 5), "avx2"),
        (has(7, 'b', 16), "avx512f"),
        (has(7, 'b', 0), "fsgsbase"),
        (has(1, 'c', 3), "monitor/mwait"),
        (has(0x8000_0001, 'd', 26), "1g-pages"),
        (has(0x8000_0001, 'd', 20), "nx"),
        (has(1, 'd', 25), "sse"),
        (has(1, 'd', 26), "sse2"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect();
    let missing: Vec<&str> = ["x2apic", "tsc-deadline", "xsave", "avx", "fsgsbase", "monitor/mwait", "1g-pages"]
        .into_iter()
        .filter(|f| !features.contains(f))
        .collect();
    let tsc = vm::probe_tsc_khz(&kvm);
    println!("platform:     {} (module {})", platform.describe(), crate::platform::kvm_module());
    println!("PVM interface: {}", crate::platform::describe_interface(crate::platform::pvm_interface(&kvm)));
    let ring = if platform == hrt_abi::Platform::PvmEmulated { 3 } else { 0 };
    println!("app ring:     {ring}");
    println!("kernel ring:  {ring} (hot paths; --kernel-ring 0 keeps the kernel in ring 0)");
    println!(
        "vCPUs:        {} (KVM allows up to {}, recommends {})",
        config.cpus,
        kvm.get_max_vcpus(),
        kvm.get_nr_vcpus()
    );
    let ranges: Vec<String> = hrt_abi::layout::ram_ranges(config.mem)
        .into_iter()
        .filter(|&(_, size)| size > 0)
        .map(|(base, size)| format!("{base:#x}-{:#x}", base + size))
        .collect();
    println!("memory:       {} MiB in {} zone(s), guest-physical {}", config.mem >> 20, config.numa, ranges.join(" "));
    println!(
        "TSC:          {}",
        tsc.map(|k| format!("{:.3} MHz", k as f64 / 1000.0)).unwrap_or_else(|| "unknown".into())
    );
    println!("guest CPU:    {}", features.join(" "));
    println!("not offered:  {}", if missing.is_empty() { "-".into() } else { missing.join(" ") });
    println!("idle:         {}", if config.idle_halt { "halt" } else { "poll" });
    Ok(0)
}
