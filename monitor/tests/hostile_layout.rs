//! Hostile programs about the guest's physical layout: RAM stops below the hole under 4 GiB
//! (IOAPIC 0xFEC00000, local APIC 0xFEE00000) and continues above 4 GiB, so no program buffer
//! and no program file ever lands on a device page. Each is compared with the same program run
//! natively.

mod common;
use common::hostile::{assert_same, build, hrt, hrt_cmd, native, run};

/// Chunks of 256 MiB the program takes under each --mem: most of its memory (the rest is the
/// kernel's share, the break's window, the stack and the program).
const CASES: &[(&str, &[&str], &str)] = &[
    // 8 GiB: 3 GiB below the hole, 5 above; the pool holds 25 chunks next to the break window.
    ("--mem 8G", &["--cpus", "1", "--mem", "8G"], "24"),
    // 6 GiB in two NUMA zones (the first ends below the hole, the second is all above 4 GiB).
    ("--mem 6G --numa 2", &["--cpus", "2", "--numa", "2", "--mem", "6G"], "17"),
];

#[test]
fn kernel_and_forwarded_writes_land_in_every_chunk_of_a_large_vm() {
    let prog = build("layout_chunks", &[]);
    for (what, options, chunks) in CASES {
        let linux = native(&prog, &[chunks]);
        assert_eq!(linux.code(), 0, "natively: {linux:?}");
        let got = hrt(options, &prog, &[chunks]);
        assert_same(&format!("layout_chunks {what}"), &linux, &got);
        // Most chunks came from above 4 GiB, none from the hole.
        let line = got.stderr.lines().find(|l| l.starts_with("layout:")).unwrap_or_default().to_string();
        assert!(line.contains(" 0 in 3-4 GiB"), "{what}: a chunk in the hole: {line}");
        assert!(!line.contains(" 0 above 4 GiB"), "{what}: no chunk above 4 GiB: {line}");
    }
}

/// NUMA zones of a large VM: the kernel's share lies at the top of RAM, so the first zones
/// hold none of the kernel's memory; the boot took the identity map's tables from zone 0 alone
/// and stopped with "out of memory for page tables" from 48 GiB with `--numa 2` (the default
/// `--mem` is 128G). The program runs as natively, and stderr is its own.
#[test]
fn numa_zones_of_a_large_vm_boot() {
    let prog = build("layout_chunks", &[]);
    let linux = native(&prog, &["4"]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    for options in [&["--cpus", "2", "--numa", "2"][..], &["--cpus", "4", "--numa", "4", "--mem", "128G"]] {
        let got = hrt(options, &prog, &["4"]);
        assert_eq!(got.stdout, linux.stdout, "{options:?}: {got:?}");
        assert!(got.stderr.lines().all(|l| l.starts_with("layout:")), "{options:?}: {got:?}");
        assert_eq!(got.code(), 0, "{options:?}: {got:?}");
    }
}

#[test]
fn a_15_mib_program_file_loads() {
    let prog = build("layout_big_data", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    // --mem 4G (once the default) put the file just below 4 GiB, over the APIC pages; 8G as well.
    let sizes = [
        &["--cpus", "1"][..],
        &["--cpus", "1", "--mem", "4G"],
        &["--cpus", "1", "--mem", "8G"],
        &["--cpus", "1", "--mem", "3074M"],
    ];
    for options in sizes {
        let got = hrt(options, &prog, &[]);
        assert_same(&format!("layout_big_data {options:?}"), &linux, &got);
    }
}

/// Segments of 1 MiB and more are left out of the guest's copy of the program file and copied
/// into place by the monitor from its own view of the file (monitor/src/placed_image.rs):
/// every word of a 2 MiB read-only and a 1.5 MiB writable table, each word different, reads
/// as initialized, with the file at either end of a small and a large VM, static-pie and
/// static (ET_EXEC at its link address).
#[test]
fn large_segments_copied_by_the_monitor_read_as_initialized() {
    for (flags, name) in [(&["-static-pie"][..], "static-pie"), (&[][..], "static")] {
        let prog = build("layout_big_rodata", flags);
        let linux = native(&prog, &[]);
        assert_eq!(linux.code(), 0, "natively ({name}): {linux:?}");
        assert!(linux.stdout.contains(", 0 differ"), "natively ({name}): {linux:?}");
        for options in [&["--cpus", "1"][..], &["--cpus", "2", "--mem", "3074M"]] {
            let got = hrt(options, &prog, &[]);
            assert_same(&format!("layout_big_rodata {name} {options:?}"), &linux, &got);
        }
    }
}

/// `--mem` sizes that are not a multiple of 2 MiB, or far larger than the host's memory
/// (untouched guest memory costs the host nothing), still run the program.
#[test]
fn odd_and_huge_memory_sizes_run() {
    let prog = build("layout_big_data", &[]);
    let linux = native(&prog, &[]);
    for mem in ["1000000001", "3073M", "4097M", "100G"] {
        let got = hrt(&["--cpus", "1", "--mem", mem], &prog, &[]);
        assert_same(&format!("layout_big_data --mem {mem}"), &linux, &got);
    }
}

/// 200 vCPUs under --mem 4G (once the default): the kernel's share of memory used to sit just
/// below 4 GiB, over the local APIC page, and with this many CPUs per-CPU data landed on it (the
/// VM hung with polling idle CPUs, read a garbage command line with halting ones). And under
/// the default.
#[test]
fn two_hundred_vcpus_boot_and_run_a_program() {
    let prog = build("layout_many_cpus", &[]);
    let linux = native(&prog, &[]);
    for mem in [&["--mem", "4G"][..], &[]] {
        let got = hrt(&[&["--cpus", "200", "--idle", "halt"], mem].concat(), &prog, &[]);
        assert_same(&format!("layout_many_cpus --cpus 200 {mem:?}"), &linux, &got);
        assert!(got.stderr.contains("affinity: 200 CPUs"), "stderr:\n{}", got.stderr);
    }
}

/// The hole is nobody's memory: system calls given an address in it fail with EFAULT (the
/// kernel's and the forwarder's checks) and a store there is a segmentation fault.
#[test]
fn the_hole_below_4_gib_is_not_program_memory() {
    let prog = build("layout_hole", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 139, "natively: {linux:?}");
    let got = hrt(&["--cpus", "1", "--mem", "8G"], &prog, &[]);
    assert_same("layout_hole --mem 8G", &linux, &got);
}

/// The kernel's own view: its self-tests over 8 GiB (the paging test checks that the hole is
/// not mapped and that both RAM ranges end where they should) and the buddy allocator over two
/// NUMA zones that meet at the hole.
#[test]
fn selftests_over_the_split_memory() {
    for (filter, options) in [
        ("paging", &["--cpus", "1", "--mem", "8G"][..]),
        ("buddy_stress", &["--cpus", "2", "--numa", "2", "--mem", "6G"]),
    ] {
        let out = run(
            {
                let mut cmd = hrt_cmd();
                cmd.args(["selftest", "--filter", filter]).args(options);
                cmd
            },
            None,
        );
        assert!(!out.hung && out.code() == 0, "selftest {filter} {options:?}: {out:?}");
        assert!(out.stderr.contains(&format!("test {filter} ok")), "selftest {filter}: {}", out.stderr);
        if filter == "paging" {
            assert!(out.stderr.contains("the hole [0xc0000000, 0x100000000) is not mapped"), "{}", out.stderr);
        }
    }
}
