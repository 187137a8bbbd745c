//! Hostile programs about the program's memory: what it gets must read zero, ranges it does not
//! own give EFAULT or SIGSEGV as on Linux. Each is compared with the same program run natively.

mod common;
use common::hostile::{
    assert_same, assert_same_on_1_and_2_cpus, build, build_dynamic, hrt, native, native_then_hrt,
    passes_natively_and_same_on, passes_natively_and_same_on_1_and_2_cpus, repo_root,
};

#[test]
fn fresh_brk_and_calloc_memory_reads_zero() {
    passes_natively_and_same_on_1_and_2_cpus("brk_zero", None);
}

/// mmap, mremap growth, MAP_FIXED over an old mapping, munmap + mmap reuse, madvise(DONTNEED),
/// brk shrink and regrow, several threads recycling memory, calloc after free: every byte the
/// program gets reads zero, and recycled memory carries data to and from the host intact.
#[test]
fn recycled_memory_reads_zero() {
    passes_natively_and_same_on_1_and_2_cpus("mem_zero_reuse", None);
}

/// Anonymous PROT_NONE mappings (tests/programs/hostile/prot_none_maps.c): they stay not
/// present from the free pool on (the kernel no longer makes them present first), so a touch
/// faults, `mprotect` makes them read zero, and recycled memory mapped PROT_NONE again faults
/// and reads zero: plain, MAP_STACK and small mappings, as natively.
#[test]
fn prot_none_mappings_fault_until_opened_and_read_zero() {
    passes_natively_and_same_on_1_and_2_cpus("prot_none_maps", Some("MAP_STACK: faults before 2"));
}

/// Two paths a fuzzer found to take the kernel down (tests/programs/hostile/prot_none_moves.c):
/// `mremap` moving a PROT_NONE mapping (its bytes were copied where the program maps them, not
/// present) keeps its bytes; a call to address 2^64-1 while lazily opened memory exists, and a
/// signal handler or an ELF entry point at a non-canonical address, are the program's SIGSEGV,
/// not a kernel panic, as natively.
#[test]
fn prot_none_moves_and_wild_jumps_are_the_programs_business() {
    passes_natively_and_same_on_1_and_2_cpus("prot_none_moves", Some("shared: moved 1, bytes kept 1"));
    let prog = build("prot_none_moves", &[]);
    for wild in ["jump", "handler"] {
        let linux = native(&prog, &[wild]);
        assert_eq!(linux.code(), 139, "{wild} natively: {linux:?}");
        assert_same_on_1_and_2_cpus(&format!("prot_none_moves {wild}"), &prog, &[wild], &linux);
    }
    // An ELF entry point outside the user half (e_entry at offset 24): SIGSEGV at once.
    let mut elf = std::fs::read(&prog).expect("reading the test program");
    elf[24..32].copy_from_slice(&0x0000_8000_0000_1234u64.to_le_bytes());
    let bad = prog.with_file_name("prot_none_moves-bad-entry");
    std::fs::write(&bad, &elf).expect("writing the patched program");
    std::fs::set_permissions(&bad, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let linux = native(&bad, &[]);
    assert_eq!(linux.code(), 139, "bad entry natively: {linux:?}");
    assert_same_on_1_and_2_cpus("bad entry", &bad, &[], &linux);
}

/// A 32 MiB PROT_NONE reservation opened by `mprotect` (tests/programs/hostile/
/// opened_reservation.c): HRT leaves its untouched 2 MiB pages not present until first used,
/// and the program must not see it. System calls read and write untouched parts, parts are
/// closed, made read-only, unmapped and moved before anyone touched them, two threads touch
/// the same untouched pages at once, a thread runs on a stack there, a forked child touches
/// what its parent never did: all as natively.
#[test]
fn an_opened_reservation_is_mapped_memory_before_it_is_touched() {
    passes_natively_and_same_on_1_and_2_cpus("opened_reservation", Some("thread on an untouched stack: sum 48"));
}

/// The break moved while another thread changes protections (tests/programs/hostile/
/// brk_while_protecting.c): on one vCPU the changer is preempted mid-change, and brk, which
/// masks interrupts while it changes pages, must not wait for it for ever (it spun on the
/// protections' lock for good before that lock masked interrupts too). On two vCPUs every
/// protection change shoots down the other vCPU's TLB; before that interrupt had a short path
/// (about 245 emulated instructions each, 0.25 ms) the break mover got so few turns that the
/// program did not finish within 120 s (docs/benchmarks.md, "Memory calls from two threads").
#[test]
fn the_break_moves_while_another_thread_changes_protections() {
    let prog = build("brk_while_protecting", &[]);
    let linux = native(&prog, &[]);
    assert!(linux.code() == 0 && linux.stdout.contains("protection rounds done: yes"), "natively: {linux:?}");
    for cpus in ["1", "2"] {
        let got = hrt(&["--cpus", cpus], &prog, &[]);
        assert_same(&format!("brk_while_protecting --cpus {cpus}"), &linux, &got);
    }
}

/// Small mappings (1-4 pages) that a thread pinned to the other vCPU reads or writes, then
/// loses to the main thread's munmap or mprotect (tests/programs/hostile/small_maps_other_cpu.c):
/// its next access faults every time, as natively. The kernel makes the leaves of small
/// mappings present with the accessed bit clear and shoots down only leaves a page walk marked,
/// so this is what shows a TLB fill that left the bit clear. With the shootdown skipped for
/// such ranges, 0-1 of 150 accesses faulted in each line.
#[test]
fn small_mappings_lost_on_one_vcpu_fault_on_the_other() {
    passes_natively_and_same_on("small_maps_other_cpu", Some("small maps on the other CPU: done"), &["2", "4"]);
}

/// MAP_FIXED at the last page of the address space, munmap/mremap/madvise with SIZE_MAX, brk at
/// the top: the same errno as Linux, nothing mapped or unmapped.
#[test]
fn memory_calls_at_the_end_of_the_address_space_fail_as_on_linux() {
    let (linux, got) = native_then_hrt("mem_bounds", &[], |linux| linux.code() == 0);
    assert_same("mem_bounds", &linux, &got);
}

/// 1 MiB mallocs reach at least 75% of a 2 GiB VM (they stopped near half when every run was
/// rounded up to a 2 MiB buddy block), and 1 GiB mallocs succeed at least twice in 4 GiB.
#[test]
fn mallocs_use_most_of_the_vm_memory() {
    let prog = build("mem_capacity", &[]);
    let cases: [(&str, &str, &str); 2] = [("2G", "1m", "1536"), ("4G", "1g", "2")];
    for (mem, size, cap) in cases {
        let linux = native(&prog, &[size, cap]);
        assert_eq!(linux.code(), 0, "natively: {linux:?}");
        let got = hrt(&["--cpus", "2", "--mem", mem], &prog, &[size, cap]);
        assert_same(&format!("mem_capacity {size} {cap} under --mem {mem}"), &linux, &got);
    }
}

/// More kernel memory than the first piece of the kernel's share (tests/programs/hostile/
/// kernel_growth.c): the monitor registers the share's top at start and the rest as the
/// kernel's allocator runs out, downward. Thousands of threads alive at once (a 16 KiB kernel
/// stack and a record each), in the program and in a child forked while they live (its VM has
/// what the parent's had of the share, its kernel memory may be anywhere there, and grows on
/// its own), must all run and be joined, as natively. A piece the kernel touched before it
/// was registered would stop the VM (an MMIO exit in RAM).
#[test]
fn kernel_memory_beyond_the_first_piece_is_registered_as_needed() {
    passes_natively_and_same_on_1_and_2_cpus("kernel_growth", Some("8000 threads: checksum"));
}

/// Small VMs still boot and run a program (a hundred threads, with a fork): at 96 MiB and 256
/// MiB the kernel's share is its first piece (nothing is left to register later); at 1100 MiB
/// a little is; at 3200 MiB the share straddles the hole below 4 GiB, its first piece above the
/// hole and the rest on both sides, which 2000 threads make the kernel ask for. 64 MiB is too
/// small for a program, as it was.
#[test]
fn small_vms_boot_and_grow_the_kernels_share() {
    let prog = build("kernel_growth", &[]);
    let linux = native(&prog, &["100"]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    for mem in ["96M", "256M", "1100M", "3200M"] {
        for cpus in ["1", "2"] {
            let got = hrt(&["--cpus", cpus, "--mem", mem], &prog, &["100"]);
            assert_same(&format!("kernel_growth 100 under --mem {mem} --cpus {cpus}"), &linux, &got);
        }
    }
    let got = hrt(&["--cpus", "2", "--mem", "3200M"], &prog, &["2000"]);
    assert_same("kernel_growth 2000 under --mem 3200M", &native(&prog, &["2000"]), &got);
    let got = hrt(&["--mem", "64M"], &prog, &["1"]);
    assert_eq!(got.code(), 1, "--mem 64M: {got:?}");
    assert!(got.stderr.contains("use a larger --mem"), "--mem 64M: {got:?}");
}

/// Runs `hrt run ARGS` and returns its exit status and peak resident memory in bytes (the
/// child's `ru_maxrss` from wait4, which also reaps it: std's `wait` would not give the rusage).
#[allow(clippy::zombie_processes)]
fn hrt_peak_rss(args: &[&str]) -> (i32, u64) {
    let child = common::hostile::hrt_cmd()
        .arg("run")
        .args(args)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("starting hrt");
    let mut status = 0;
    // SAFETY: rusage is plain data that wait4 fills in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, whose pid std gave us; `child` is not waited for again.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4: {}", std::io::Error::last_os_error());
    (libc::WEXITSTATUS(status), usage.ru_maxrss as u64 * 1024)
}

/// Untouched guest memory costs the host nothing: mapping 6 GiB under --mem 100G and touching
/// none of it, or one page in 128 MiB, keeps hrt's peak host memory below 300 MB (it was 6.7 GB
/// when mmap zeroed eagerly and the allocator wrote links into free memory). The stride is wide
/// because guest RAM asks the host for transparent huge pages: a touched page costs the host its
/// whole 2 MiB page (one page per 2 MiB over 6 GiB measured 6.4 GB; 24 MB without huge pages).
#[test]
fn untouched_memory_costs_the_host_nothing() {
    let prog = build("mem_untouched", &[]);
    let prog = prog.to_str().expect("a UTF-8 path");
    const LIMIT: u64 = 300 << 20;
    for stride_mib in ["0", "128"] {
        let (status, rss) = hrt_peak_rss(&["--cpus", "2", "--mem", "100G", "--", prog, "6", stride_mib]);
        assert_eq!(status, 0, "mem_untouched 6 {stride_mib} failed under hrt");
        assert!(rss < LIMIT, "mem_untouched 6 {stride_mib}: hrt's peak host memory is {} MB", rss >> 20);
    }
}

/// Memory the program unmapped faults as on Linux: after munmap (whole, middle, tail, a 2 MiB
/// page inside a larger mapping, 64 MiB), mremap shrinking or moving, and free of a 1 MiB malloc
/// block, a read or write there is SIGSEGV with SEGV_MAPERR at the address (also on a thread
/// whose CPU touched the page before the unmap), forwarded and local system calls given a pointer
/// there answer EFAULT, and a new fixed mapping at the same addresses reads zero.
#[test]
fn unmapped_memory_faults() {
    let prog = build("mem_unmapped", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    let faults = linux.stdout.matches("SIGSEGV si_code 1 addr ok").count();
    assert!(
        faults >= 25 && linux.stdout.contains("remapped at the same address, reads zero 1"),
        "natively: {}",
        linux.stdout
    );
    assert_same_on_1_and_2_cpus("mem_unmapped", &prog, &[], &linux);
}

/// `--host-pages 4k` backs guest RAM with 4 KiB host pages: touching one byte every 2 MiB over
/// 1 GiB keeps hrt's peak host memory below 300 MB (measured 18 MB; with the default
/// transparent huge pages each touch costs the host 2 MiB, 1.09 GB in all), with the program's
/// output as natively.
#[test]
fn small_host_pages_cost_only_what_is_touched() {
    let prog = build("mem_untouched", &[]);
    let linux = native(&prog, &["1", "2"]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    let got = hrt(&["--cpus", "1", "--host-pages", "4k"], &prog, &["1", "2"]);
    assert_same("mem_untouched 1 2 --host-pages 4k", &linux, &got);
    let prog = prog.to_str().expect("a UTF-8 path");
    let (status, rss) = hrt_peak_rss(&["--cpus", "1", "--host-pages", "4k", "--", prog, "1", "2"]);
    assert_eq!(status, 0, "mem_untouched 1 2 failed under hrt --host-pages 4k");
    assert!(rss < 300 << 20, "mem_untouched 1 2 --host-pages 4k: hrt's peak host memory is {} MB", rss >> 20);
}

/// Many small mappings touched a little (2,000 of 1 MiB, one byte written in each): they pack
/// into shared 2 MiB pages, and past 256 such pages (`linux::sparse_pages::HUGE_BUDGET`, 512
/// MiB) the host backs the pages they find free with 4 KiB pages, so hrt's peak host memory
/// stays below 768 MB (measured 557 MB; 2.07 GB before, a 2 MiB host page per 2 MiB the
/// program touched at all; natively 9 MB), with the data written, kept and reading zero after
/// munmap and mmap as natively.
#[test]
fn many_sparse_small_mappings_cost_the_host_a_bounded_amount() {
    let prog = build("sparse_small_maps", &[]);
    let linux = native(&prog, &["2000", "1024"]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert_same_on_1_and_2_cpus("sparse_small_maps 2000 1024", &prog, &["2000", "1024"], &linux);
    let prog = prog.to_str().expect("a UTF-8 path");
    let (status, rss) = hrt_peak_rss(&["--cpus", "1", "--", prog, "2000", "1024"]);
    assert_eq!(status, 0, "sparse_small_maps failed under hrt");
    assert!(rss < 768 << 20, "sparse_small_maps 2000 1024: hrt's peak host memory is {} MB", rss >> 20);
}

/// The program's own segments carry their ELF permissions, as execve maps them: a store into
/// .text, .rodata or the RELRO part of the data ends in SIGSEGV with SEGV_ACCERR at the address
/// stored to, .rodata does not execute, system calls asked to write there answer EFAULT, and
/// mprotect makes .text writable for a patch and read-only again (static and static-pie).
#[test]
fn elf_segments_keep_their_permissions() {
    for flags in [&[][..], &["-static-pie"][..]] {
        let prog = build("elf_protect", flags);
        let linux = native(&prog, &[]);
        assert_eq!(linux.code(), 0, "natively: {linux:?}");
        assert!(linux.stdout.contains(".text write: SIGSEGV si_code 2 addr ok"), "natively: {}", linux.stdout);
        assert_same_on_1_and_2_cpus(&format!("elf_protect {flags:?}"), &prog, &[], &linux);
    }
}

/// The gaps between the program's segments (linked with 64 KiB segment alignment, so there
/// are some) are unmapped, as Linux's execve leaves them: a read or write there is SIGSEGV with
/// SEGV_MAPERR at the address, forwarded (write, read) and local (clock_gettime) system calls
/// given a pointer there answer EFAULT, mincore and mprotect ENOMEM, munmap 0, and a
/// MAP_FIXED_NOREPLACE mapping may take a gap's page. Static, static-pie (loaded anywhere, as
/// ld.so is) and dynamic PIE programs.
#[test]
fn gaps_between_elf_segments_are_unmapped() {
    let align = "-Wl,-z,max-page-size=0x10000";
    let source = repo_root().join("tests/programs/hostile/elf_gaps.c");
    let progs = [
        build("elf_gaps", &[align]),
        build("elf_gaps", &["-static-pie", align]),
        build_dynamic(&source, "elf_gaps", &[align]),
    ];
    for prog in &progs {
        let linux = native(prog, &[]);
        assert_eq!(linux.code(), 0, "natively: {linux:?}");
        let gaps = linux.stdout.lines().filter(|l| l.ends_with("first page read: SIGSEGV si_code 1 addr ok")).count();
        assert!(gaps >= 2 && linux.stdout.contains("write from the gap: -1 errno 14"), "natively: {}", linux.stdout);
        let got = hrt(&["--cpus", "2"], prog, &[]);
        assert_same(&format!("{}", prog.display()), &linux, &got);
    }
}

/// A page two segments share (the code segment's last page, where the data segment starts)
/// gets the later segment's permissions, as Linux maps each segment over the one before: the
/// store there works, the code segment's function on that page does not run (SIGSEGV, 139).
#[test]
fn a_page_two_segments_share_takes_the_later_ones_permissions() {
    let script = common::hostile::repo_root().join("tests/programs/hostile/elf_shared_page.ld");
    let link = format!("-Wl,-T,{}", script.display());
    let prog = build("elf_shared_page", &["-nostdlib", "-no-pie", &link]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 139, "natively: {linux:?}");
    assert!(linux.stdout.starts_with("data and code share a page"), "natively: {}", linux.stdout);
    let got = hrt(&["--cpus", "1"], &prog, &[]);
    assert_same("elf_shared_page", &linux, &got);
    // Without rewriting too: the code patcher's CR0 writes once reset the host's shadow page
    // tables, which hid a missing flush (the page kept its old permissions in the TLB).
    let got = hrt(&["--cpus", "1", "--no-rewrite"], &prog, &[]);
    assert_same("elf_shared_page --no-rewrite", &linux, &got);
}

/// MAP_FIXED (and MAP_FIXED_NOREPLACE) in the hole below 4 GiB: Linux grants it; HRT cannot
/// (the program's addresses are guest-physical and the hole holds no RAM) and answers ENOMEM,
/// says so on stderr, and changes nothing: a request from RAM below the hole into it keeps the
/// page below as it was, and the hole still faults. Every other line is as on Linux.
#[test]
fn map_fixed_in_the_memory_hole_fails_whole_and_says_so() {
    let prog = build("mem_fixed_hole", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    // What HRT must answer: Linux's output with ENOMEM for the fixed requests Linux granted.
    let mut expected = String::new();
    for line in linux.stdout.lines() {
        match line.strip_suffix(": 0").filter(|case| case.starts_with("map in the hole")) {
            Some(case) => expected += &format!("{case}: -1 errno 12\n"),
            None => expected += &format!("{line}\n"),
        }
    }
    assert_eq!(
        expected.matches("errno 12").count(),
        linux.stdout.matches("errno 12").count() + 3,
        "natively: {}",
        linux.stdout
    );
    let wanted = common::hostile::Outcome { stdout: expected, stderr: String::new(), ..linux };
    for cpus in ["1", "2"] {
        let got = hrt(&["--cpus", cpus, "--mem", "4G"], &prog, &[]);
        assert_same(&format!("mem_fixed_hole --cpus {cpus}"), &wanted, &got);
        assert!(got.stderr.contains("outside the guest RAM"), "no note on stderr: {}", got.stderr);
    }
}

/// Memory the program was never given faults as on Linux (SIGSEGV, SEGV_MAPERR, the address):
/// the NULL page (read, write, a call through NULL) and the rest of the low 64 KiB, pool memory
/// no mapping ever covered, and memory above a lowered break (brk inside a page keeps that page,
/// sbrk back across 2 MiB); regrown memory reads zero. mmap(MAP_FIXED) at 0 is EPERM.
#[test]
fn memory_never_given_faults() {
    let prog = build("mem_never_given", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    let faults = linux.stdout.matches("SIGSEGV si_code 1 addr ok").count();
    assert!(
        faults >= 19
            && linux.stdout.contains("mmap MAP_FIXED at 0: -1 errno 1\n")
            && linux.stdout.contains("an unmapped address near a mapping: found"),
        "natively: {}",
        linux.stdout
    );
    assert_same_on_1_and_2_cpus("mem_never_given", &prog, &[], &linux);
}

/// A MAP_SHARED file mapping longer than its file: the pages past the end raise SIGBUS
/// (BUS_ADRERR, the address) on reads and writes, after mprotect too (SIGSEGV where the
/// protection forbids the access), a call with a buffer there is EFAULT, and a page the file
/// grows over is the file's, as on Linux; MAP_HUGETLB of a file is EINVAL.
#[test]
fn shared_file_pages_past_the_end_raise_sigbus() {
    passes_natively_and_same_on_1_and_2_cpus("shared_file_end", Some("write past the end: signal 7 code 2"));
}

/// A MAP_SHARED file mapping whose file another process (a forked child: another `hrt`)
/// shrinks (tests/programs/hostile/shared_file_shrunk_elsewhere.c): calls with a buffer in a
/// page past the new end are EFAULT (the monitor's own copies of such a buffer, the iovec array
/// of a writev, killed `hrt` with SIGBUS; calls the kernel serves itself, a nanosleep's timespec
/// and a private futex word there, spun inside KVM), touching such a page raises SIGBUS (BUS_ADRERR, the
/// address; the vCPU spun inside KVM for good until the monitor's quarter-second look told the
/// kernel to hide the pages), and pages the file grows over again read zero, as on Linux.
#[test]
fn a_shared_file_shrunk_by_another_process_raises_sigbus() {
    passes_natively_and_same_on_1_and_2_cpus(
        "shared_file_shrunk_elsewhere",
        Some("read past the new end: signal 7 code 2, address right"),
    );
}

/// A MAP_PRIVATE file mapping longer than its file (tests/programs/hostile/mmap_past_eof.c):
/// the tail of the page holding the end of the file reads zero, a page wholly past the end
/// raises SIGBUS (BUS_ADRERR, the address) on reads and writes, after mprotect too (SIGSEGV
/// where the protection forbids the access), a call with a buffer there is EFAULT, and once the
/// file grows over the page (pwrite and ftruncate) it holds the file's new bytes; mremap
/// shrinking, regrowing and moving the mapping keeps the pages past the end raising SIGBUS; so
/// does a page touched right after mmap, before any other call (HRT asks the host which file
/// it is only then), and a MAP_FIXED mapping over memory in use; the MAP_SHARED case; a forked
/// child without a handler dies of SIGBUS. With `die`, the program itself touches such a page
/// without a handler: status 135, as natively.
#[test]
fn private_file_pages_past_the_end_raise_sigbus() {
    passes_natively_and_same_on_1_and_2_cpus(
        "mmap_past_eof",
        Some("read past the end: signal 7 code 2, address right"),
    );
    let (linux, got) = native_then_hrt("mmap_past_eof", &["die"], |linux| linux.code() == 135);
    assert_same("mmap_past_eof die", &linux, &got);
    assert!(got.stderr.contains("Bus error (address"), "no report on stderr: {}", got.stderr);
}

/// Memory far into the pool (tests/programs/hostile/pool_growth.c): the monitor gives the pool
/// to KVM in growing pieces as the kernel first makes them present, so a 6 GiB mapping across
/// the guest's hole below 4 GiB, threads mapping memory while it grows, a fixed mapping at 12
/// GiB and mremap growth each reach pieces that exist only once asked for. A piece the kernel
/// touched before asking would stop the VM (an MMIO exit in RAM); every byte must read zero
/// and keep what was written, as natively.
#[test]
fn memory_far_into_the_pool_reads_zero_and_keeps_its_data() {
    passes_natively_and_same_on_1_and_2_cpus("pool_growth", Some("mremap to 7 GiB: 96 of 96 kept"));
}

/// madvise on every kind of memory (tests/programs/hostile/madvise_kinds.c): the errno of each
/// advice Linux knows (and EINVAL for the ones it does not) on private anonymous, private file,
/// shared anonymous, shared file, PROT_NONE and partly unmapped ranges; DONTNEED makes a private
/// file mapping read its file again (its current bytes, SIGBUS past its end still), REMOVE
/// punches a hole in a memfd, WIPEONFORK zeroes a forked child's copy (and a grandchild's),
/// DONTFORK leaves the range unmapped in the child, the undoing advice undoes them, the
/// advice goes with the memory (munmap, mremap), and POPULATE_READ of memory without PROT_READ
/// (write-only, execute-only: readable in the page tables) is EINVAL: as natively.
#[test]
fn madvise_answers_and_acts_as_on_linux_for_each_kind_of_memory() {
    passes_natively_and_same_on_1_and_2_cpus("madvise_kinds", Some("madvise kinds: done"));
}

/// MADV_DONTNEED on a private file mapping whose descriptor was closed, replaced by dup2 or
/// closed by close_range (tests/programs/hostile/madvise_closed_file.c): the pages read the
/// file's current bytes again, as Linux's mapping holds its file, also after unlink, after
/// mremap moved the mapping, in a forked child, and after 6,000 mappings came and went (more
/// than the monitor keeps at once: each kept file must be let go with its last mapping).
#[test]
fn madvise_reads_a_closed_descriptors_file_again_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("madvise_closed_file", Some("madvise closed file: done"));
}

/// mremap with MREMAP_FIXED and MREMAP_DONTUNMAP (tests/programs/hostile/
/// mremap_fixed_dontunmap.c): EINVAL for each bad combination (no MAYMOVE, DONTUNMAP resizing,
/// an unaligned or overlapping new address, unknown flags), EFAULT for an unmapped old range;
/// FIXED moves (shrinking, same size, growing) onto free space or over another mapping, which
/// it replaces; DONTUNMAP leaves the old range mapped, reading zero (anonymous) or the file
/// again (a private file mapping), with and without FIXED; a private file mapping grown maps
/// the file's next pages (they read zero before): as natively.
#[test]
fn mremap_fixed_and_dontunmap_move_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("mremap_fixed_dontunmap", Some("mremap fixed dontunmap: done"));
}

/// mremap of MAP_SHARED mappings (tests/programs/hostile/mremap_shared.c): a file's mapping
/// grown after the file grew (Python's `mmap.resize`), grown in place, grown past the file's end
/// (SIGBUS there until the file covers it), moved with MREMAP_FIXED and MREMAP_DONTUNMAP, in
/// part, read-only (still EACCES for PROT_WRITE), shrunk; anonymous shared memory kept by
/// MREMAP_DONTUNMAP (both ranges the same memory) and moved after a fork (still shared with the
/// child), an old length of 0 (a second mapping of shared memory, as Linux makes one; a copy
/// before; private memory EINVAL); EFAULT across two mappings, ENOMEM in place without room.
/// Stores through the new range reach the file. All but shrinking were ENOMEM before.
#[test]
fn shared_mappings_grow_and_move_with_mremap_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("mremap_shared", Some("mremap shared: done"));
}

/// A program that reserves more than the program's memory (`--mem`) holds gets ENOMEM, as Linux
/// answers when its address space is full, and hrt says once on stderr why (Linux would have
/// granted reservations it does not back: a program with ~1,500 threads alive at once has 12 GiB
/// of 8 MiB stacks).
#[test]
fn a_full_program_memory_is_enomem_said_once() {
    let prog = build("map_until_full", &[]);
    let out = hrt(&["--mem", "512M", "--cpus", "1"], &prog, &["4096"]);
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.contains("then Cannot allocate memory"), "{out:?}");
    let said = out.stderr.matches("found no free range that large in the program's memory").count();
    assert_eq!(said, 1, "{out:?}");
    let linux = native(&prog, &["1024"]);
    assert!(linux.stdout.contains("mapped 1024 MiB, then stopped"), "natively: {linux:?}");
}

/// The line about a full program memory is kept for a request Linux would grant: a 64 TiB
/// reservation (refused natively too) does not take it from the 1 GiB one that differs, and a
/// 64 GiB PROT_NONE one, which Linux grants whatever its size, gets it (it got none).
#[test]
fn the_full_memory_line_names_a_request_linux_grants() {
    let prog = build("enomem_note", &[]);
    let out = natively_then_in_512m(&prog, &[], "64 TiB: ENOMEM");
    assert!(out.stdout.contains("64 TiB: ENOMEM\n1 GiB: ENOMEM"), "{out:?}");
    assert!(out.stderr.contains("mmap of 1073741824 bytes found no free range"), "{out:?}");
    // Linux reserves PROT_NONE (and MAP_NORESERVE) whatever its size: the line is said.
    let out = natively_then_in_512m(&prog, &["none"], "64 GiB PROT_NONE: mapped");
    assert!(out.stdout.contains("64 GiB PROT_NONE: ENOMEM"), "{out:?}");
    assert!(out.stderr.contains("mmap of 68719476736 bytes found no free range"), "{out:?}");
}

/// Threads the kernel's share of memory has no room for fail with EAGAIN, and `hrt` says why
/// once (it said nothing: 16 KiB-stack threads stopped at ~2,200 under `--mem 512M`).
#[test]
fn threads_past_the_kernels_memory_are_eagain_said_once() {
    let prog = build("threads_until_full", &[]);
    let out = natively_then_in_512m(&prog, &[], "5000 threads started");
    assert!(out.status.success() && out.stdout.contains("Resource temporarily unavailable"), "{out:?}");
    let said = out.stderr.matches("the kernel's share of memory has no room for another thread").count();
    assert_eq!(said, 1, "{out:?}");
}

/// `prog ARGS` natively, whose stdout must hold `natively` (else the host, not hrt, is at
/// fault), then under `hrt run --mem 512M --cpus 1`, where the program's memory runs out:
/// hrt's outcome.
#[track_caller]
fn natively_then_in_512m(prog: &std::path::Path, args: &[&str], natively: &str) -> common::hostile::Outcome {
    let linux = native(prog, args);
    assert!(linux.stdout.contains(natively), "natively: {linux:?}");
    hrt(&["--mem", "512M", "--cpus", "1"], prog, args)
}

/// mmap with an address hint and no MAP_FIXED (tests/programs/hostile/mmap_hints.c): placed at
/// the hint, rounded down to a page, where that memory is free (anonymous, PROT_NONE, stack and
/// private file mappings), elsewhere when any of it is in use, as on Linux (hints were ignored).
#[test]
fn address_hints_are_honoured_where_the_memory_is_free() {
    passes_natively_and_same_on_1_and_2_cpus("mmap_hints", Some("the new one reads zero: 0"));
}

/// A thread writing a page while another unmaps it and maps a fresh one at the same address
/// (tests/programs/hostile/remap_under_writer.c): the writer faults in the gap or writes the
/// new page, and the program goes on. A fault on a stale TLB entry ran INVLPG in ring 3 (a
/// KERNEL PANIC in most runs at --cpus 2 and 4).
#[test]
fn a_page_unmapped_and_mapped_again_under_a_writer() {
    passes_natively_and_same_on("remap_under_writer", Some("mapped again at its address 50 times"), &["1", "2", "4"]);
}

/// The program break beside fixed mappings (tests/programs/hostile/brk_beside_mapping.c): the
/// space above the break is free for MAP_FIXED_NOREPLACE (it was EEXIST), the break refuses to
/// grow over a mapping (it grew over one, and lowered again unmapped it) and grows up to a page
/// below one.
#[test]
fn the_break_grows_up_to_mappings_but_not_over_them() {
    passes_natively_and_same_on_1_and_2_cpus("brk_beside_mapping", Some("its byte after the break went back down: F"));
}

/// Mappings until mmap fails stop at Linux's vm.max_map_count with ENOMEM, and an munmap that
/// would split an area is then ENOMEM too (tests/programs/hostile/map_count_limit.c, LTP's
/// munmap04: mmap went on, past the program's own table of them). One vCPU count only: the
/// 65,000 unmaps take seconds here.
#[test]
fn mappings_stop_at_the_map_count_limit_as_on_linux() {
    passes_natively_and_same_on(
        "map_count_limit",
        Some("munmap of a page in the middle of one: Cannot allocate"),
        &["2"],
    );
}

/// Locked memory (tests/programs/hostile/memory_locks.c): VmLck after mlock, mlock2, munlock,
/// MAP_LOCKED, mremap, mlockall with MCL_FUTURE (later mappings and the break) and munlockall;
/// a locked part of a mapping is an area of its own with smaps' Locked, `lo` and for a lock on
/// fault `lf`, in Linux's order (`lo` before `ac`: it came after, and `lf` was missing, which
/// Linux's mm mlock2-tests selftest reads); madvise that
/// drops pages is EINVAL on it; a forked child has no locks; RLIMIT_MEMLOCK binds without
/// CAP_IPC_LOCK (ENOMEM, EAGAIN, EPERM at 0); msync MS_INVALIDATE of it EBUSY. mlock kept
/// nothing before (LTP's mlock201, mlock203, mmap14, madvise02, mlock02, mlock05, munlockall01,
/// mlockall02/03).
#[test]
fn memory_locks_are_kept_and_limited_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus(
        "memory_locks",
        Some("mlock 2 more                                 Cannot allocate"),
    );
}

/// A break lowered and grown again many times (tests/programs/hostile/brk_trims.c: sbrk cycles,
/// malloc's own trims, a read-only part of the heap given back, a fixed mapping above the
/// break): once the pattern repeats, HRT keeps the lowered pages present instead of flushing
/// TLBs at each trim, so memory the break grows over must be zeroed by other means (with that
/// zeroing taken out: 3.4 MB of non-zero bytes), and the pages above the break must still be no
/// mapping to mprotect, madvise, mincore and forwarded calls (ENOMEM, EFAULT) while a fixed
/// mapping may take them, fresh.
#[test]
fn a_break_trimmed_and_grown_again_gives_zeroed_memory() {
    passes_natively_and_same_on_1_and_2_cpus("brk_trims", Some("mprotect above the break: Cannot allocate"));
}

/// Memory just above the break (tests/programs/hostile/above_the_break.c), which HRT keeps
/// mapped for the break to grow into, is no mapping to the program: msync, mincore, mprotect,
/// madvise, mlock and munlock of it are ENOMEM (all but mincore succeeded, and mprotect changed
/// it); PROT_NONE memory is a mapping (mlock ENOMEM as Linux's populate fails, munlock takes
/// it) whose pages mincore shows not resident.
#[test]
fn memory_above_the_break_is_no_mapping_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus(
        "above_the_break",
        Some("mprotect above the break             Cannot allocate"),
    );
}

/// RLIMIT_DATA (tests/programs/hostile/data_limit.c): the break and private writable mappings
/// are refused past the soft limit as on Linux (nothing was), with Linux's exception for a soft
/// limit of 0 under a higher hard one, and the break's growth counts the private writable
/// mappings too (it did not: 80 MiB mapped and an 80 MiB break under 100 MiB); then private mappings of /dev/zero fill the address
/// space: the break may no longer grow (it grew into its window), and the fill costs no memory
/// (it was read, zeros written into every page: at the default `--mem` the host ran out of
/// memory, hence `--mem 4G` here).
#[test]
fn rlimit_data_and_a_filled_address_space_stop_the_break_as_on_linux() {
    let prog = build("data_limit", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert!(linux.stdout.contains("soft 0, hard 0: private read-write 1 MiB: Cannot allocate memory"), "{linux:?}");
    assert!(linux.stdout.contains("sbrk(1 MiB) Cannot allocate memory, resident memory grew less"), "{linux:?}");
    assert!(linux.stdout.contains("80 MiB mapped: sbrk(80 MiB) Cannot allocate memory"), "{linux:?}");
    for cpus in ["1", "2"] {
        let got = hrt(&["--cpus", cpus, "--mem", "4G"], &prog, &[]);
        assert_same(&format!("data_limit --cpus {cpus}"), &linux, &got);
    }
}

/// Shared memory a forked child mapped is let go before its parent hears of its exit
/// (tests/programs/hostile/shared_after_child_exit.c): the parent's F_SEAL_WRITE of a memory
/// file the child had mapped succeeds (it was EBUSY), a SysV segment counts only the parent.
#[test]
fn a_reaped_childs_shared_mappings_are_gone() {
    passes_natively_and_same_on_1_and_2_cpus(
        "shared_after_child_exit",
        Some("sealed after the child: 5 of 5; only the parent attached: 5 of 5"),
    );
}

/// mprotect with PROT_GROWSDOWN/PROT_GROWSUP (tests/programs/hostile/mprotect_grows.c): EINVAL
/// with the protection unchanged except GROWSDOWN on the main stack (it was applied to any
/// mapping: a read-only page, or PROT_NONE with both flags); across a hole, ENOMEM with the
/// part before it changed (nothing changed before).
#[test]
fn mprotect_grows_flags_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("mprotect_grows", Some("the stack still usable: 7"));
}

/// mmap's type and flag checks (tests/programs/hostile/mmap_type_flags.c): MAP_SHARED_VALIDATE
/// of anonymous memory EINVAL, of a file with flags Linux does not know or MAP_SYNC
/// EOPNOTSUPP, a file offset past the largest file EOVERFLOW (all mapped or EINVAL before).
#[test]
fn mmap_type_and_flags_are_checked_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("mmap_type_flags", Some("private file offset 2^62"));
}

/// In ring-3 mode the program shares the kernel's page tables, so it can reach the kernel's
/// share of RAM; the part KVM does not know yet (registered as the kernel's allocator needs
/// it) is not present there until then. A read, a write or a system call's buffer at the
/// bottom, in the middle and at the top of that part is SIGSEGV at the address or EFAULT, as
/// at the same addresses natively (where nothing is mapped); until 2026-12-03 the access was
/// an MMIO exit that stopped the VM (exit 101). `-v` says where the part is. The same for the
/// kernel's alias of a part of the program's pool that KVM does not know yet.
#[test]
fn the_kernels_unregistered_memory_faults_for_the_program() {
    let prog = build("stray_kernel_span", &[]);
    let shown = hrt(&["--cpus", "1", "--mem", "8G", "-v"], &prog, &[]);
    assert_eq!(shown.code(), 0, "hrt -v: {shown:?}");
    // "kernel: mem: 446 MiB more of the kernel's share as it is needed, below 0x23be00000"
    let line = shown.stderr.lines().find(|l| l.contains("of the kernel's share as it is needed")).expect("-v line");
    let mib: u64 = line.split("mem: ").nth(1).and_then(|s| s.split(' ').next()).and_then(|s| s.parse().ok()).unwrap();
    let top = u64::from_str_radix(line.rsplit("0x").next().unwrap().trim(), 16).unwrap();
    let bottom = top - (mib << 20);
    let middle = (bottom + (top - bottom) / 2) & !((2 << 20) - 1);
    // And the kernel's second view of the program's pool (`paging::POOL_ALIAS_BASE`, 32 TiB
    // up) at 6 GiB, a chunk of the pool this program never uses, so KVM does not know it.
    let alias = (1u64 << 45) + (6 << 30);
    let addrs = [bottom, middle, top - 8, alias].map(|a| format!("{a:x}"));
    let args: Vec<&str> = addrs.iter().map(String::as_str).collect();
    let linux = native(&prog, &args);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert_eq!(linux.stdout.matches("SIGSEGV si_code 1 addr ok").count(), 8, "natively: {}", linux.stdout);
    assert_eq!(linux.stdout.matches("errno 14").count(), 8, "natively: {}", linux.stdout);
    for cpus in ["1", "2"] {
        let got = hrt(&["--cpus", cpus, "--mem", "8G"], &prog, &args);
        assert_same(&format!("stray_kernel_span --cpus {cpus}"), &linux, &got);
    }
}

/// Only memory mapped executable runs as code, as on Linux with NX: a `ret` in a fresh
/// read-write mapping, on the stack, in the heap and in .data is SIGSEGV (SEGV_ACCERR); in a
/// read-write-execute mapping, after mprotect to read-execute and after mremap moved an
/// executable mapping it runs, and a read-only mapping stays read-only when moved. A program
/// linked with `-z execstack` gets an executable stack (and still no executable heap); with
/// the personality READ_IMPLIES_EXEC, mmap and mprotect with PROT_READ make code. Until
/// 2026-12-03 every program page ran as code and a moved mapping became read-write.
#[test]
fn only_executable_memory_runs_as_code() {
    let linux =
        passes_natively_and_same_on_1_and_2_cpus("exec_protections", Some("mprotect to read-execute             runs"));
    assert!(linux.stdout.contains("heap                                 SIGSEGV code 2"), "natively: {}", linux.stdout);
    let prog = build("exec_protections", &["-Wl,-z,execstack"]);
    let linux = native(&prog, &["stack"]);
    assert!(
        linux.code() == 0 && linux.stdout.contains("stack (-z execstack)                 runs"),
        "natively: {linux:?}"
    );
    assert_same_on_1_and_2_cpus("exec_protections -z execstack", &prog, &["stack"], &linux);
}

/// A blocking read whose buffer another thread unmaps before the data comes: memory the program
/// maps afterwards reads zero, wherever it lies (the monitor wrote the late data into the pages
/// the buffer had, and the next mapping got them back with it; those pages now stay out of use
/// until the read has ended, then are zeroed). Found by the host-safety sweep.
#[test]
fn memory_unmapped_under_a_blocked_read_comes_back_zero() {
    common::hostile::passes_natively_and_same_on_1_and_2_cpus(
        "unmap_during_read",
        Some("fresh memory read zero after a read into unmapped memory: yes"),
    );
}

/// Shared mappings made until mmap says ENOMEM: every one shows the file, private memory keeps
/// its bytes, and after unmapping them all a new one works (hrt left holes in guest RAM once
/// the host's mapping limit was reached: "the program's memory is damaged").
#[test]
fn shared_mappings_until_enomem_leave_memory_whole() {
    passes_natively_and_same_on("many_shared_maps", Some("many shared maps: done"), &["2"]);
}

/// A mapping made with MAP_GROWSDOWN grows down to a touched page below it, within
/// RLIMIT_STACK and 256 pages above an accessible mapping (SIGSEGV past those), on a thread's
/// stack too (LTP's mmap18), in a forked child's copy; PROT_GROWSDOWN reaches its start; shared
/// anonymous memory cannot grow down. Before, no touch below one grew it (SIGSEGV).
#[test]
fn mappings_that_grow_down_grow_as_on_linux() {
    common::hostile::passes_natively_and_same_on_1_and_2_cpus("grows_down", Some("faults caught: done"));
}

/// MADV_DONTNEED on the program's own image (tests/programs/hostile/image_dontneed.c), which
/// Linux maps from its file: changed initialized data reads the file's values again, .bss zero,
/// the text runs on (its rewritten system calls too), a function patched after mprotect is the
/// file's again; static, static-PIE and dynamic, at 1 and 2 vCPUs, as natively. Until stop 98
/// the kernel, which loads the image itself, zeroed it all (a SIGSEGV at the next instruction).
#[test]
fn dontneed_on_the_programs_own_image_reads_its_file_again() {
    common::hostile::same_in_every_link_on_1_and_2_cpus("image_dontneed", "after DONTNEED (0): answer 42");
}

/// MADV_DONTNEED on the pages the kernel puts in the program (tests/programs/hostile/
/// kernel_pages_dontneed.c): [vvar] EINVAL and [vdso] kept, as Linux answers, and the near
/// table kept; vDSO and system calls work after, static, static-PIE and dynamic, at 1 and 2
/// vCPUs. Until stop 98 they were zeroed, and the next vDSO call crashed.
#[test]
fn dontneed_on_the_kernels_pages_in_the_program_keeps_them() {
    common::hostile::same_in_every_link_on_1_and_2_cpus("kernel_pages_dontneed", "calls after: 2000");
}

/// Shared file mappings cut, refused, shrunk and grown (found by a differential fuzzer of the
/// memory calls, stop 98): a refused MAP_FIXED (EACCES, ENODEV, EBADF) keeps what it would
/// have replaced (tests/programs/hostile/shared_fixed_refused.c, fixed_map_refused.c);
/// anonymous memory put over part of such a mapping stays the program's when the file shrinks
/// (shared_file_cut.c, by mremap, mmap and munmap then mmap); pages keep their own protection across a truncate and regrowth
/// (shared_file_regrown.c, shared_file_prot_none.c) and across an mremap that moves part of the mapping
/// (shared_file_moved.c); mprotect refused at a shared page has changed the pages before it
/// (mprotect_refused_part.c); a MREMAP_DONTUNMAP's old range keeps its wipe-on-fork advice
/// (dontunmap_fork_advice.c); /proc/self/maps lists pages hidden past the end of their file
/// with their protection (maps_past_eof.c, shared_file_regrown.c, mremap_grown_file_maps.c).
/// As natively at 1 and 2 vCPUs.
#[test]
fn shared_file_mappings_keep_their_parts_apart() {
    let runs: [(&str, &[&str]); 16] = [
        ("fixed_map_refused", &[]),
        ("shared_file_prot_none", &[]),
        ("maps_past_eof", &[]),
        ("shared_file_regrown", &["exec"]),
        ("mremap_grown_file_maps", &[]),
        ("mprotect_refused_part", &[]),
        ("dontunmap_fork_advice", &["0"]),
        ("dontunmap_fork_advice", &["1"]),
        ("shared_fixed_refused", &[]),
        ("shared_file_cut", &["0"]),
        ("shared_file_cut", &["1"]),
        ("shared_file_cut", &["2"]),
        ("shared_file_regrown", &["write"]),
        ("shared_file_moved", &["1", "0"]),
        ("shared_file_moved", &["1", "1"]),
        ("shared_file_moved", &["0", "1"]),
    ];
    for (name, args) in runs {
        let prog = build(name, &[]);
        let want = native(&prog, args);
        assert_eq!(want.code(), 0, "{name} {args:?} natively: {want:?}");
        for cpus in ["1", "2"] {
            let out = hrt(&["--cpus", cpus, "--mem", "4G"], &prog, args);
            assert_same(&format!("{name} {args:?} at --cpus {cpus}"), &want, &out);
        }
    }
}

/// Memory calls a differential fuzzer found different (tests/programs/hostile/mapping_checks.c):
/// a PROT_NONE mapping moved or grown by mremap stays PROT_NONE (it became read-write: a guard
/// page gone), growth across two protections is EFAULT, and mmap, mprotect and
/// MADV_POPULATE_* check their arguments in Linux's order with Linux's errors.
#[test]
fn mapping_calls_keep_protections_and_check_as_on_linux() {
    common::hostile::passes_natively_and_same_on_1_and_2_cpus("mapping_checks", Some("mapping checks: done"));
}

/// Mappings a little over 2 MiB pack as on Linux, which aligns only whole 2 MiB pages' worth:
/// 1,500 of 2 MiB + 4 KiB fit in `--mem 4G` (hrt aligned each and stopped at 956).
#[test]
fn mappings_just_over_2_mib_pack() {
    common::hostile::passes_natively_and_same_with(
        "mmap_just_over_2m",
        Some("2 MiB + 4 KiB mappings: 1500 of 1500"),
        &["1", "2"],
        &["--mem", "4G"],
    );
}
