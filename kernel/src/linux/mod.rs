//! Running an unmodified static Linux x86-64 program as the kernel's application (the
//! process-in-kernel path): loader, system-call table, local calls, forwarding, faults.

pub mod calls;
pub mod channel;
pub mod core_dump;
pub mod cpuid_sites;
pub mod cputime;
pub mod eh_frame;
pub mod elf;
pub mod errno;
pub mod exec;
pub mod fastcall;
pub mod fault;
pub mod filemap;
pub mod fork_advice;
pub mod futex;
pub mod futex2;
pub mod futex_waitv;
pub mod grows_down;
pub mod loader;
pub mod local_links;
pub mod locked;
pub mod maps;
pub mod names;
pub mod near_table;
pub mod overrides;
pub mod own_exe;
pub mod past_eof;
pub mod patch_defer;
pub mod pi_futex;
pub mod private_files;
pub mod process;
pub mod profile;
pub mod protect;
pub mod range_map;
pub mod regsite;
pub mod rewrite;
pub mod robust;
pub mod rseq;
pub mod seccomp;
pub mod shared_files;
pub mod shared_futex;
pub mod signal;
pub mod signalfd;
pub mod small_tops;
pub mod sparse_pages;
pub mod spin_sites;
pub mod spin_throttle;
pub mod stack_guard;
pub mod status;
pub mod symbols;
pub mod syscall;
pub mod sysfunc;
pub mod table;
pub mod thread_names;
pub mod thread_self;
pub mod uaccess;
pub mod usermap;
pub mod usermem;
pub mod varsite;
pub mod vdso;

/// Starts the program described by the boot-info block. Its threads then run on their own;
/// the VM ends when the program exits (exit_group, the last thread's exit, or a fatal signal).
pub fn start() {
    let boot = crate::bootinfo::get();
    signal::init();
    rseq::init();
    channel::init();
    // Dormant CPUs (`boot::finish_boot`) count as halted for the channel's pollers: their host
    // CPUs are free.
    for c in (1..crate::cpu::count()).filter(|&c| crate::cpu::is_dormant(c)) {
        channel::count_halted(c, true);
    }
    channel::count_asleep_cpus();
    fastcall::init(boot.flags & hrt_abi::flags::STRACE != 0);
    spin_sites::init();
    crate::arch::traps::set_syscall_handler(|frame| syscall::dispatch(frame));
    crate::arch::traps::set_user_exception_handler(fault::user_exception);
    if let Err(msg) = loader::start_program(boot) {
        kprintln!("hrt: cannot start the program: {msg}");
        // Found but not runnable: 126, as `hrt run` reports the programs it refuses itself.
        crate::arch::hypercall::shutdown(126);
    }
}
