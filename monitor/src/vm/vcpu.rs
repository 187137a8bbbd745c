//! vCPU set-up (64-bit mode from the first instruction) and the per-vCPU run loops. Each vCPU
//! thread serves its own exits, so hypercalls from different CPUs never wait on each other.

use std::sync::mpsc;
use std::sync::{Condvar, Mutex};

use kvm_bindings::{kvm_fpu, kvm_mp_state, kvm_segment, CpuId, KVM_MP_STATE_RUNNABLE};
use kvm_ioctls::{VcpuExit, VcpuFd, VmFd};
use std::sync::Arc;

use super::boot_info::BootLayout;
use super::hypercall::{self, Outcome};
use super::memory::GuestRam;
use crate::error::err;
use crate::error::Result;
use hrt_abi::layout;

/// How the VM ended.
#[derive(Debug, Clone, Copy)]
pub enum Exit {
    /// The kernel shut down with this status.
    Status(i32),
    /// A kernel panic or a VM failure, already reported on stderr.
    Failure(u8),
}

pub struct Shared {
    pub ram: GuestRam,
    /// Performs the program's forwarded system calls (`hrt run` only).
    pub forwarder: Option<crate::forward::Forwarder>,
    /// The program's memory: forwarded calls may only name addresses in it.
    pub program_mem: (u64, u64),
    /// The kernel's map of the program's mapped pages (`nr::USER_MAP`), once it has sent it.
    pub user_map: std::sync::OnceLock<hrt_abi::UserMap>,
    /// The forwarding channel's service (`hrt run` unless `--no-channel`).
    pub channel: std::sync::OnceLock<Arc<super::channel::Service>>,
    /// The memory slots of the program's pool and of the kernel's share, given to KVM as the
    /// kernel asks (`nr::RAM_READY`, `nr::KERNEL_RAM_READY`);
    /// unset where all of RAM was given at once (a forked child's VM, tests).
    pub pool_slots: std::sync::OnceLock<Arc<super::pool_slots::PoolSlots>>,
    started: Mutex<bool>,
    start: Condvar,
    /// A forked child's secondary vCPUs are created when its kernel first starts them
    /// (`run_all`): the request goes to the thread that creates them.
    starter: Mutex<Option<mpsc::Sender<Event>>>,
    /// Requests for the main thread (the one that waits for the vCPUs), set from before the
    /// first vCPU runs until it stops waiting.
    main_thread: Mutex<Option<mpsc::Sender<Event>>>,
}

/// What `run_all`'s thread hears from the vCPU threads.
enum Event {
    Ended(Exit),
    /// The kernel started its secondary CPUs: create them (the sender is for their threads).
    StartCpus(mpsc::Sender<Event>),
    /// Work for the main thread (`nr::HOST_PRCTL`), with where to send its answer.
    OnMain(Box<dyn FnOnce() -> i64 + Send>, mpsc::Sender<i64>),
}

impl Shared {
    /// `nr::HOST_PRCTL`: PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE (who may
    /// open `hrt`'s /proc/<pid> entries), PR_CAPBSET_READ (the
    /// whole bounding set, see below) are made by the main thread, which lives as long as `hrt` (the parent-death signal is a property of the
    /// thread that set it, and the vCPU threads may not call most prctl options: seccomp.rs),
    /// and the security bits, keep-caps flag, bounding and ambient sets read and changed
    /// (PR_GET_SECUREBITS, PR_SET_SECUREBITS, PR_GET_KEEPCAPS, PR_SET_KEEPCAPS,
    /// PR_CAPBSET_DROP, PR_CAP_AMBIENT) with the program's capabilities, each change on every
    /// thread of `hrt` (`every_thread`: they are per thread on Linux), and the speculation
    /// mitigations read (PR_GET_SPECULATION_CTRL); PR_SET_NAME (args[1..3]: the program's name,
    /// 16 bytes) names the process (host_name.rs); PR_SET_NO_NEW_PRIVS is noted for the host
    /// programs the spawner starts; PR_SET_TIMERSLACK and PR_GET_TIMERSLACK are the main
    /// thread's (the program's main thread's slack, which its /proc/<pid> shows).
    pub fn host_prctl(&self, args: &[u64]) -> i64 {
        const PR_SET_PDEATHSIG: u64 = 1;
        const PR_SET_DUMPABLE: u64 = 4;
        const PR_SET_NAME: u64 = 15;
        const PR_CAPBSET_READ: u64 = 23;
        const PR_SET_CHILD_SUBREAPER: u64 = 36;
        const PR_SET_NO_NEW_PRIVS: u64 = 38;
        const PR_GET_SECUREBITS: u64 = 27;
        const PR_SET_SECUREBITS: u64 = 28;
        const PR_CAPBSET_DROP: u64 = 24;
        const PR_CAP_AMBIENT: u64 = 47;
        const PR_CAP_AMBIENT_IS_SET: u64 = 1;
        const PR_GET_KEEPCAPS: u64 = 7;
        const PR_SET_KEEPCAPS: u64 = 8;
        const PR_GET_SPECULATION_CTRL: u64 = 52;
        const PR_SET_SECCOMP: u64 = 22;
        const PR_SET_TIMERSLACK: u64 = 29;
        const PR_GET_TIMERSLACK: u64 = 30;
        let work: Box<dyn FnOnce() -> i64 + Send> = match args[0] {
            PR_SET_NO_NEW_PRIVS => {
                crate::forward::note_no_new_privs();
                return 0;
            }
            PR_SET_PDEATHSIG | PR_SET_CHILD_SUBREAPER | PR_SET_DUMPABLE => {
                let (option, arg) = (args[0] as i32, args[1]);
                if option == PR_SET_CHILD_SUBREAPER as i32 && arg != 0 {
                    super::late_teardown::note_subreaper();
                }
                let pdeath = option == PR_SET_PDEATHSIG as i32;
                Box::new(move || {
                    // SAFETY: a prctl with integer arguments.
                    if unsafe { libc::prctl(option, arg as libc::c_ulong, 0, 0, 0) } == 0 {
                        if pdeath {
                            crate::forward::note_pdeath_signal(arg as i32);
                        }
                        0
                    } else {
                        -(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL) as i64)
                    }
                })
            }
            // Whether the program may install a seccomp filter without no_new_privs: 1 if
            // `hrt`'s host process has CAP_SYS_ADMIN in its effective set (Linux's rule).
            PR_SET_SECCOMP => Box::new(|| {
                const CAP_SYS_ADMIN: u32 = 21;
                // struct __user_cap_header_struct (_LINUX_CAPABILITY_VERSION_3, this process)
                // and two __user_cap_data_struct (effective, permitted, inheritable).
                let mut header: [u32; 2] = [0x2008_0522, 0];
                let mut data = [[0u32; 3]; 2];
                // SAFETY: capget writes the two data structs version 3 asks for.
                let r = unsafe { libc::syscall(libc::SYS_capget, header.as_mut_ptr(), data.as_mut_ptr()) };
                (r == 0 && data[0][0] & (1 << CAP_SYS_ADMIN) != 0) as i64
            }),
            // The program's main thread's timer slack is `hrt`'s main thread's, which
            // /proc/<pid>/timerslack_ns shows (linux/calls/prctl.rs): set to the value the
            // kernel decided (never 0, whose default would be the host's), or read.
            PR_SET_TIMERSLACK | PR_GET_TIMERSLACK => {
                let option = args[0] as i32;
                let arg = if args[0] == PR_SET_TIMERSLACK { args[1].max(1) } else { 0 };
                Box::new(move || {
                    // SAFETY: a prctl with integer arguments.
                    match unsafe { libc::prctl(option, arg as libc::c_ulong, 0, 0, 0) } {
                        r if r >= 0 => r as i64,
                        _ => -(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL) as i64),
                    }
                })
            }
            PR_GET_SECUREBITS
            | PR_SET_SECUREBITS
            | PR_GET_KEEPCAPS
            | PR_SET_KEEPCAPS
            | PR_CAPBSET_DROP
            | PR_CAP_AMBIENT
            | PR_GET_SPECULATION_CTRL => {
                let (option, op, cap) = (args[0] as i32, args[1], args[2]);
                let change = matches!(args[0], PR_SET_SECUREBITS | PR_SET_KEEPCAPS | PR_CAPBSET_DROP)
                    || args[0] == PR_CAP_AMBIENT && op != PR_CAP_AMBIENT_IS_SET;
                // With the program's capabilities (`on_main`): a change needs CAP_SETPCAP.
                Box::new(move || {
                    if change {
                        // SAFETY: a prctl with integer arguments (the kernel checked the
                        // operation) that changes the calling thread's credentials.
                        let r = unsafe { crate::every_thread::everywhere(libc::SYS_prctl, [option as u64, op, cap]) };
                        if r >= 0 {
                            crate::forward::caps::prctl_changed(option, op);
                        }
                        return r.min(0);
                    }
                    // SAFETY: a prctl with integer arguments (the kernel checked the operation).
                    match unsafe { libc::prctl(option, op as libc::c_ulong, cap as libc::c_ulong, 0, 0) } {
                        r if r >= 0 => r as i64,
                        _ => -(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL) as i64),
                    }
                })
            }
            PR_CAPBSET_READ => Box::new(|| {
                // The whole bounding set at once: bit i for capability i (i < 48), and how many
                // capabilities the host knows (the first that reads EINVAL) from bit 48.
                let mut mask = 0i64;
                let mut known = 0i64;
                for cap in 0..48 {
                    // SAFETY: a prctl with integer arguments that only reads.
                    match unsafe { libc::prctl(libc::PR_CAPBSET_READ, cap as libc::c_ulong, 0, 0, 0) } {
                        1 => mask |= 1 << cap,
                        0 => {}
                        _ => break,
                    }
                    known = cap + 1;
                }
                mask | known << 48
            }),
            PR_SET_NAME => {
                let mut name = [0u8; 16];
                name[..8].copy_from_slice(&args[1].to_le_bytes());
                name[8..].copy_from_slice(&args[2].to_le_bytes());
                crate::host_name::set_comm(name);
                return 0;
            }
            _ => return -(libc::EINVAL as i64),
        };
        self.on_main(work)
    }

    /// `nr::HOST_RLIMIT`: args resource, soft, hard. RLIMIT_NOFILE limits the descriptor
    /// table (and the host programs the program starts), the others are noted for those
    /// programs; RLIMIT_FSIZE is set on `hrt`'s host
    /// process by the main thread (the vCPU threads' seccomp filter forbids setrlimit), so
    /// that forwarded writes past it fail with EFBIG and SIGXFSZ, as the program's would.
    pub fn host_rlimit(&self, args: &[u64]) -> i64 {
        let (resource, soft, hard) = (args[0], args[1], args[2]);
        if soft > hard {
            return -(libc::EINVAL as i64);
        }
        match resource as u32 {
            libc::RLIMIT_NOFILE => {
                if let Some(f) = &self.forwarder {
                    f.set_descriptor_limit(soft, hard);
                }
                0
            }
            libc::RLIMIT_CPU | libc::RLIMIT_AS => {
                crate::forward::note_program_limit(resource as u32, soft, hard);
                0
            }
            // Limits the host enforces in calls it makes for the program (forwarded writes,
            // mq_open), which `hrt` itself never meets otherwise: set on `hrt`.
            libc::RLIMIT_FSIZE | libc::RLIMIT_MSGQUEUE => self.on_main(Box::new(move || {
                let limit = libc::rlimit { rlim_cur: soft, rlim_max: hard };
                // SAFETY: setrlimit reads the struct we pass.
                if unsafe { libc::setrlimit(resource as u32, &limit) } == 0 {
                    crate::forward::note_program_limit(resource as u32, soft, hard);
                    0
                } else {
                    -(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL) as i64)
                }
            })),
            // Limits the kernel keeps, which the host programs the program starts inherit.
            r if (r as usize) < hrt_abi::RLIMITS => {
                crate::forward::note_program_limit(r, soft, hard);
                0
            }
            _ => -(libc::EINVAL as i64),
        }
    }

    /// Runs `work` on `hrt`'s main thread (no seccomp filter there) and returns its answer.
    fn on_main(&self, work: Box<dyn FnOnce() -> i64 + Send>) -> i64 {
        let Some(main) = self.main_thread.lock().unwrap().clone() else { return -(libc::EAGAIN as i64) };
        let (tx, rx) = mpsc::channel();
        // The main thread acts with the program's capabilities too (PR_CAPBSET_READ, the
        // CAP_SYS_ADMIN check of PR_SET_SECCOMP, other processes' view of `hrt`'s).
        let work: Box<dyn FnOnce() -> i64 + Send> = Box::new(move || {
            crate::forward::caps::catch_up();
            work()
        });
        if send_to_main(&main, Event::OnMain(work, tx)).is_err() {
            return -(libc::EAGAIN as i64);
        }
        rx.recv().unwrap_or(-(libc::EAGAIN as i64))
    }

    pub fn new(ram: GuestRam, forwarder: Option<crate::forward::Forwarder>, program_mem: (u64, u64)) -> Shared {
        Shared {
            ram,
            forwarder,
            program_mem,
            user_map: std::sync::OnceLock::new(),
            channel: std::sync::OnceLock::new(),
            pool_slots: std::sync::OnceLock::new(),
            started: Mutex::new(false),
            start: Condvar::new(),
            starter: Mutex::new(None),
            main_thread: Mutex::new(None),
        }
    }

    /// Lets the secondary vCPUs enter the guest (the boot CPU asks once it is ready), and
    /// has them created first where they were not (a forked child's).
    pub fn release_secondaries(&self) {
        *self.started.lock().unwrap() = true;
        self.start.notify_all();
        if let Some(tx) = self.starter.lock().unwrap().take() {
            let _ = send_to_main(&tx, Event::StartCpus(tx.clone()));
        }
    }

    fn wait_for_release(&self) {
        let mut s = self.started.lock().unwrap();
        while !*s {
            s = self.start.wait(s).unwrap();
        }
    }
}

fn segment(selector: u16, code: bool) -> kvm_segment {
    kvm_segment {
        base: 0,
        limit: 0xffff_ffff,
        selector,
        type_: if code { 0xb } else { 0x3 },
        present: 1,
        dpl: 0,
        db: if code { 0 } else { 1 },
        s: 1,
        l: if code { 1 } else { 0 },
        g: 1,
        avl: 0,
        unusable: 0,
        padding: 0,
    }
}

/// What `run_all` needs to start a VM's vCPUs.
#[derive(Clone)]
pub struct VcpuPlan {
    pub cpus: u32,
    pub pin: bool,
    /// vCPU threads run under the seccomp filter (see seccomp.rs).
    pub seccomp: bool,
    /// `--sandbox DIR` (see sandbox.rs).
    pub sandbox: Option<std::path::PathBuf>,
    pub entry: u64,
    pub boot: BootLayout,
    /// A forked child (fork.rs): the kernel's fork record, and the guest TSC to continue from.
    pub resume: Option<(u64, u64)>,
    /// The kernel starts the CPUs but its first when it first places a thread on one (a
    /// program's kernel, as a forked child's: `nr::START_CPUS`): their vCPUs are made then.
    pub cpus_on_demand: bool,
}

/// The XCR0 a vCPU starts with: the host's (what XSAVE in guest ring 3 runs on), limited to
/// the components KVM offers the guest (CPUID leaf 0xD, with x87 and SSE); None without XSAVE.
/// (Leaf 0xD decides: this PVM host's KVM leaves leaf 1's XSAVE bit out of what it reports as
/// supported, yet shows it to the guest and takes CR4.OSXSAVE.)
fn guest_xcr0(cpuid: &CpuId) -> Option<u64> {
    let offered = cpuid.as_slice().iter().find(|e| e.function == 0xd && e.index == 0)?;
    let offered = (offered.edx as u64) << 32 | offered.eax as u64;
    let (lo, hi): (u32, u32);
    // SAFETY: XGETBV of XCR0 only reads a register; a host whose KVM offers XSAVE runs with
    // CR4.OSXSAVE set.
    unsafe { std::arch::asm!("xgetbv", in("ecx") 0, out("eax") lo, out("edx") hi, options(nomem, nostack)) };
    let xcr0 = ((hi as u64) << 32 | lo as u64) & offered;
    // x87 and SSE at least (KVM refuses an XCR0 without x87).
    (xcr0 & 3 == 3).then_some(xcr0)
}

/// IA32_TSC: writing it sets the vCPU's time-stamp counter.
const MSR_IA32_TSC: u32 = 0x10;

fn setup_vcpu(vcpu: &VcpuFd, id: u32, cpuid: &CpuId, plan: &VcpuPlan) -> Result<()> {
    let (entry, boot) = (plan.entry, plan.boot);
    let fail = |what: &str, e: kvm_ioctls::Error| err!("vCPU {id}: cannot set {what}: {e}");
    vcpu.set_cpuid2(&super::cpuid::for_vcpu(cpuid, id, plan.cpus)).map_err(|e| fail("CPUID", e))?;

    let mut sregs = vcpu.get_sregs().map_err(|e| fail("special registers", e))?;
    sregs.cs = segment(0x08, true);
    let data = segment(0x10, false);
    sregs.ds = data;
    sregs.es = data;
    sregs.fs = data;
    sregs.gs = data;
    sregs.ss = data;
    sregs.tr = kvm_segment { base: 0, limit: 0x67, selector: 0, type_: 11, present: 1, ..Default::default() };
    sregs.cr3 = layout::BOOT_PML4;
    sregs.cr4 = (1 << 5) | (1 << 9) | (1 << 10); // PAE, OSFXSR, OSXMMEXCPT
    if let Some(xcr0) = guest_xcr0(cpuid) {
        // The program's CPUID shows OSXSAVE only while the guest's CR4 has it (KVM derives the
        // bit from CR4), and without it glibc and libgcc take AVX, AVX2 and AVX-512 for
        // unusable (glibc's string functions then run their SSE2 forms). The kernel in ring 3
        // never sets it (its XSETBV would fault there; XSAVE runs on the host's CR4 and XCR0),
        // so the vCPU starts with it, and with an XCR0 of the host's components that KVM
        // offers, in case KVM loads the guest's XCR0 at each entry (the ring-0 kernel sets
        // its own with XSETBV).
        let mut xcrs = vcpu.get_xcrs().map_err(|e| fail("XCR0", e))?;
        xcrs.nr_xcrs = 1;
        xcrs.xcrs[0].xcr = 0;
        xcrs.xcrs[0].value = xcr0;
        if vcpu.set_xcrs(&xcrs).is_ok() {
            sregs.cr4 |= 1 << 18; // OSXSAVE
        }
    }
    sregs.cr0 = 0x8005_0033; // PG, WP, NE, ET, MP, PE
    sregs.efer = (1 << 0) | (1 << 8) | (1 << 10); // SCE, LME, LMA
    let first = vcpu.set_sregs(&sregs);
    if first.is_err() && sregs.cr4 & (1 << 18) != 0 {
        // A KVM that refuses OSXSAVE: without it, as before.
        sregs.cr4 &= !(1 << 18);
        vcpu.set_sregs(&sregs).map_err(|e| fail("special registers", e))?;
    } else {
        first.map_err(|e| fail("special registers", e))?;
    }

    let fpu = kvm_fpu { fcw: 0x37f, mxcsr: 0x1f80, ..Default::default() };
    vcpu.set_fpu(&fpu).map_err(|e| fail("FPU state", e))?;

    let mut regs = vcpu.get_regs().map_err(|e| fail("registers", e))?;
    regs.rip = entry;
    regs.rsp = boot.boot_stacks + (id as u64 + 1) * layout::BOOT_STACK_SIZE;
    regs.rdi = layout::BOOT_INFO;
    regs.rsi = id as u64;
    regs.rflags = 0x2;
    // rdx at reset holds the processor's signature; the kernel reads it as the fork record.
    regs.rdx = 0;
    if let Some((record, tsc)) = plan.resume {
        // The kernel resumes the forked process (its entry reads rdx), with guest time going on
        // from where the parent's was.
        regs.rdx = record;
        let msrs = kvm_bindings::Msrs::from_entries(&[kvm_bindings::kvm_msr_entry {
            index: MSR_IA32_TSC,
            data: tsc,
            ..Default::default()
        }])
        .map_err(|_| err!("vCPU {id}: cannot build the TSC MSR list"))?;
        vcpu.set_msrs(&msrs).map_err(|e| fail("the TSC", e))?;
    }
    vcpu.set_regs(&regs).map_err(|e| fail("registers", e))?;

    if id != 0 {
        // With the in-kernel LAPIC, secondary vCPUs would wait for INIT/SIPI; the monitor
        // starts them directly in 64-bit mode instead.
        vcpu.set_mp_state(kvm_mp_state { mp_state: KVM_MP_STATE_RUNNABLE }).map_err(|e| fail("run state", e))?;
    }
    Ok(())
}

/// The host CPUs `hrt` was started on (its affinity mask: what `taskset`, `mpirun`'s binding or
/// Slurm gave it), in increasing order. Read once, before any thread pins itself: the first
/// caller is a thread about to be pinned, still with the mask it inherited.
pub fn allowed_host_cpus() -> &'static [usize] {
    static CPUS: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();
    CPUS.get_or_init(|| {
        // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its size.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above, for this thread's mask.
        let ok = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } == 0;
        // SAFETY: CPU_ISSET reads the set.
        let cpus: Vec<usize> =
            (0..libc::CPU_SETSIZE as usize).filter(|&c| ok && unsafe { libc::CPU_ISSET(c, &set) }).collect();
        if cpus.is_empty() {
            vec![0]
        } else {
            cpus
        }
    })
}

/// Pins the calling thread to the `id`-th of the host CPUs `hrt` may use (round robin).
pub(super) fn pin_to_host_cpu(id: u32) {
    let cpus = allowed_host_cpus();
    // SAFETY: cpu_set_t is plain data; sched_setaffinity(0) affects only this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpus[id as usize % cpus.len()], &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn describe_crash(vcpu: &VcpuFd, id: u32, what: &str) -> String {
    match (vcpu.get_regs(), vcpu.get_sregs()) {
        (Ok(r), Ok(s)) => format!(
            "{what} on vCPU {id}: rip={:#x} rsp={:#x} cr2={:#x} cr3={:#x} rflags={:#x}",
            r.rip, r.rsp, s.cr2, s.cr3, r.rflags
        ),
        _ => format!("{what} on vCPU {id}"),
    }
}

/// Whether the kernel runs in the program's ring (ring 3 on PVM), where it keeps its per-CPU
/// base in GS, which the program can write.
static KERNEL_IN_PROGRAM_RING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Notes the ring the kernel runs in (set before the vCPUs run; a forked child inherits it).
pub fn note_kernel_ring(in_program_ring: bool) {
    KERNEL_IN_PROGRAM_RING.store(in_program_ring, std::sync::atomic::Ordering::Relaxed);
}

/// The GS base of a vCPU that stopped for good, if it is not the kernel's: outside the kernel's
/// image (zero or in the program's memory before the image is known). The kernel in ring 3
/// reaches its per-CPU data through GS, which lies in its image's static data; a program's
/// WRGSBASE (which PVM lets ring 3 run) leaves the next kernel entry without it, and the VM
/// triple-faults.
fn program_gs_base(vcpu: &VcpuFd, shared: &Shared) -> Option<u64> {
    if !KERNEL_IN_PROGRAM_RING.load(std::sync::atomic::Ordering::Relaxed) {
        // In ring 0 the kernel swaps GS on entry: a crash may stop with either base.
        return None;
    }
    let base = vcpu.get_sregs().ok()?.gs.base;
    let (lo, hi) = super::memory::kernel_span();
    if lo < hi {
        return (!(lo..hi).contains(&base)).then_some(base);
    }
    let (lo, hi) = shared.program_mem;
    (base == 0 || (lo..hi).contains(&base)).then_some(base)
}

/// The end of a run whose program set the GS base (`base`) with WRGSBASE: seen by a kernel
/// entry (`nr::PROGRAM_GS_BASE`) or by the triple fault that followed one.
pub fn program_set_gs_base(base: u64) -> Exit {
    eprintln!(
        "hrt: Illegal instruction: the program set the GS base to {base:#x} (WRGSBASE), \
         which the kernel keeps for its per-CPU data when it runs in the program's ring; \
         hrt does not offer FSGSBASE (AT_HWCAP2) nor ARCH_SET_GS"
    );
    super::fork::note_end_signal(libc::SIGILL as u64);
    Exit::Status(128 + libc::SIGILL)
}

/// True if the vCPU stopped in the program's code while the program runs in ring 0.
fn program_in_ring0(vcpu: &VcpuFd, shared: &Shared) -> bool {
    let (lo, hi) = shared.program_mem;
    match (vcpu.get_regs(), vcpu.get_sregs()) {
        (Ok(r), Ok(s)) => s.cs.dpl == 0 && lo < hi && (lo..hi).contains(&r.rsp),
        _ => false,
    }
}

/// On a PVM host guest ring 0 is emulated instruction by instruction, and KVM's emulator stops
/// at instructions it lacks (SSE ones, which every libc uses): the program's own code, not a
/// kernel fault. Says so, with the instruction bytes (program memory is identity-mapped).
fn describe_unemulated(vcpu: &VcpuFd, shared: &Shared) -> String {
    let rip = vcpu.get_regs().map(|r| r.rip).unwrap_or(0);
    let bytes = shared.ram.slice(rip, 8).map(|b| format!(" ({b:02x?})")).unwrap_or_default();
    format!(
        "the program's instruction at {rip:#x}{bytes} cannot run in guest ring 0 here: this host emulates \
         guest ring 0 and its emulator lacks the instruction (SSE, as in libc); run the program in ring 3 \
         (--app-ring 3, the default here)"
    )
}

fn run_loop(mut vcpu: VcpuFd, id: u32, shared: &Shared) -> Exit {
    let mut said_where = 0;
    loop {
        let exit = match vcpu.run() {
            Ok(exit) => exit,
            Err(e) if e.errno() == libc::EINTR || e.errno() == libc::EAGAIN => {
                if said_where != super::stuck::asked() {
                    said_where = super::stuck::asked();
                    // SAFETY: getpid has no preconditions.
                    let pid = unsafe { libc::getpid() };
                    eprintln!("hrt[{pid}]: {}", describe_crash(&vcpu, id, "where the vCPU was"));
                    if super::stuck::debugging() {
                        if let Ok(r) = vcpu.get_regs() {
                            let code = super::stuck::kernel_code_on_stack(&shared.ram, r.rsp);
                            eprintln!("hrt[{pid}]: vCPU {id} kernel code on its stack: {code}");
                        }
                    }
                }
                continue;
            }
            Err(e) => {
                eprintln!("hrt: vCPU {id}: KVM_RUN failed: {e}");
                return Exit::Failure(1);
            }
        };
        match exit {
            VcpuExit::IoOut(port, data) if port == hrt_abi::HYPERCALL_PORT && data.len() == 4 => {
                let addr = u32::from_le_bytes([data[0], data[1], data[2], data[3]]) as u64;
                if let Outcome::Stop(e) = hypercall::serve(shared, addr) {
                    return e;
                }
            }
            VcpuExit::IoOut(..) => {}
            VcpuExit::IoIn(_, data) => data.fill(0xff),
            VcpuExit::MmioRead(addr, _) | VcpuExit::MmioWrite(addr, _) if shared.ram.host_ptr(addr, 1).is_some() => {
                // RAM that KVM does not know yet: the kernel touched the program's pool or its
                // own share of RAM before it asked for it (`nr::RAM_READY`,
                // `nr::KERNEL_RAM_READY`). Never answer with made-up bytes.
                eprintln!(
                    "hrt: {}",
                    describe_crash(
                        &vcpu,
                        id,
                        &format!("the kernel touched guest RAM at {addr:#x} before its memory slot was registered")
                    )
                );
                return Exit::Failure(hrt_abi::PANIC_STATUS as u8);
            }
            VcpuExit::MmioRead(_, data) => data.fill(0xff),
            VcpuExit::MmioWrite(..) => {}
            VcpuExit::Hlt => {
                eprintln!("hrt: {}", describe_crash(&vcpu, id, "the guest halted with interrupts off"));
                return Exit::Failure(1);
            }
            VcpuExit::Shutdown => {
                if let Some(base) = program_gs_base(&vcpu, shared) {
                    return program_set_gs_base(base);
                }
                eprintln!(
                    "hrt: {}",
                    describe_crash(&vcpu, id, "the guest triple-faulted (kernel crash before its fault handlers)")
                );
                return Exit::Failure(hrt_abi::PANIC_STATUS as u8);
            }
            VcpuExit::InternalError => {
                // An entry that ran on with the program's GS base can also end here (an
                // emulation failure in the wild jump that followed: seen with `wrgsbase low
                // spin`, whose interrupt entry took its stack from the program's memory).
                if let Some(base) = program_gs_base(&vcpu, shared) {
                    return program_set_gs_base(base);
                }
                let what = if program_in_ring0(&vcpu, shared) {
                    describe_unemulated(&vcpu, shared)
                } else {
                    describe_crash(&vcpu, id, "unexpected VM exit InternalError")
                };
                eprintln!("hrt: {what}");
                return Exit::Failure(1);
            }
            other => {
                let what = format!("unexpected VM exit {other:?}");
                eprintln!("hrt: {}", describe_crash(&vcpu, id, &what));
                return Exit::Failure(1);
            }
        }
    }
}

/// Creates and starts every vCPU, then waits for the first one to end the VM. A forked
/// child's secondary vCPUs are created only when its kernel starts them (its CPUs stay
/// dormant until a thread goes to one; most children exec or exit first): each costs the
/// KVM vCPU, a thread and its seccomp filter (~1 ms of host CPU time, on a host whose CPUs
/// the child's parent and the child's own set-up need at the same moment).
pub fn run_all(vm: &VmFd, cpuid: &CpuId, shared: Arc<Shared>, config: &VcpuPlan) -> Result<u8> {
    let filter = if config.seccomp {
        super::seccomp::install_report_handler();
        Some(super::seccomp::filter()?)
    } else {
        None
    };
    // The vCPU threads inherit the file sandbox from this thread.
    if let Some(dir) = config.sandbox.as_deref() {
        super::sandbox::restrict(dir)?;
    }
    let (tx, rx) = mpsc::channel::<Event>();
    main_wake()?;
    let mut threads = Vec::new();
    // Each vCPU's thread starts as soon as the vCPU exists: the boot CPU boots while the others
    // are made (they wait for the boot CPU's `START_CPUS`, and it for them to come online).
    // The thread first, then its vCPU: the thread installs its seccomp filter (~140 us here,
    // the filter compiled for each thread) while this one makes and sets up the vCPU (~0.2-0.3
    // ms of ioctls), instead of after it, before the vCPU's first run.
    let start = |id: u32, tx: &mpsc::Sender<Event>| -> Result<std::thread::JoinHandle<()>> {
        let (give, take) = mpsc::channel::<VcpuFd>();
        let (tx, shared_t, pin, filter) = (tx.clone(), shared.clone(), config.pin, filter.clone());
        let thread = std::thread::Builder::new()
            .name(format!("vcpu{id}"))
            .spawn(move || {
                crate::forward::runs_a_vcpu();
                if pin {
                    pin_to_host_cpu(id);
                }
                // From here on, this thread makes only the host calls the filter allows.
                if let Some(Err(e)) = filter.as_ref().map(super::seccomp::install) {
                    eprintln!("hrt: {e}");
                    let _ = send_to_main(&tx, Event::Ended(Exit::Failure(1)));
                    return;
                }
                // No vCPU: its making failed, and the main thread reports that.
                let Ok(vcpu) = take.recv() else { return };
                if id != 0 {
                    shared_t.wait_for_release();
                }
                super::stuck::register_vcpu_thread();
                let _ = send_to_main(&tx, Event::Ended(run_loop(vcpu, id, &shared_t)));
            })
            .map_err(|e| err!("cannot start a vCPU thread: {e}"))?;
        let vcpu = vm.create_vcpu(id as u64).map_err(|e| err!("cannot create vCPU {id}: {e}"))?;
        setup_vcpu(&vcpu, id, cpuid, config)?;
        if id == 0 && config.resume.is_none() {
            // The host clocks at a known guest TSC, as late as possible before the boot.
            super::host_clocks::sample_at_boot(&vcpu, &shared.ram);
            super::cpuid::write_answers(&vcpu, &shared.ram);
        }
        // A thread that could not install its filter has said why and ended the VM already.
        let _ = give.send(vcpu);
        Ok(thread)
    };
    // The channel's service before any vCPU: a forked child's CPU runs at once and may ring
    // the doorbell with a blocking call, which its vCPU thread hands to a worker; with no
    // spawner registered yet, no worker ever came and the call's thread slept for good (the
    // child's open of a FIFO, 1 run in ~50 on a loaded host: calls_fs_nodes).
    if let Some(svc) = shared.channel.get() {
        svc.start(&shared, filter.clone(), config.pin)?;
    }
    let now = if config.resume.is_some() || config.cpus_on_demand { 1 } else { config.cpus };
    // Before any vCPU runs: the boot CPU may start the others at once (a request with no
    // starter registered would be lost, and the kernel wait for them for good).
    if now < config.cpus {
        *shared.starter.lock().unwrap() = Some(tx.clone());
    }
    if config.resume.is_none() {
        // What `hrt` holds now is the monitor's and the boot's, not the program's (getrusage).
        crate::forward::note_rss_before_program();
    }
    // Before any vCPU runs, too: a forked child's CPU resumes the program at once, and its
    // first call may be one for this thread (`on_main`). Registered after them, a prctl
    // (PR_SET_PDEATHSIG right after fork) made while this thread was descheduled between the
    // two failed with EAGAIN, which the program rarely looks at: the parent-death signal was
    // never set on the host and never came (1 fork in ~50 on a loaded host).
    *shared.main_thread.lock().unwrap() = Some(tx.clone());
    for id in 0..now {
        threads.push(start(id, &tx)?);
    }
    drop(tx);
    // While waiting, look now and then for a signal the kernel does not take (a stuck vCPU),
    // and for files the program maps shared that another process shrank.
    let mut next_watch = std::time::Instant::now() + super::host_signals::WATCH_PERIOD;
    let mut say_where_at = super::stuck::debug_deadline();
    let exit = loop {
        let event = match rx.try_recv() {
            Ok(event) => Ok(event),
            Err(mpsc::TryRecvError::Disconnected) => Err(mpsc::RecvTimeoutError::Disconnected),
            Err(mpsc::TryRecvError::Empty) => match next_watch.checked_duration_since(std::time::Instant::now()) {
                Some(left) if !left.is_zero() => {
                    wait_on_main(left);
                    continue;
                }
                _ => {
                    next_watch = std::time::Instant::now() + super::host_signals::WATCH_PERIOD;
                    Err(mpsc::RecvTimeoutError::Timeout)
                }
            },
        };
        match event {
            Ok(Event::Ended(exit)) => break Ok(exit),
            Ok(Event::StartCpus(tx)) => {
                // The kernel waits for them: a vCPU that cannot be made ends the VM.
                if let Err(e) = (now..config.cpus).try_for_each(|id| start(id, &tx).map(|t| threads.push(t))) {
                    break Err(e);
                }
            }
            Ok(Event::OnMain(work, reply)) => {
                let _ = reply.send(work());
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // (A vCPU thread that panicked sent nothing; the starter keeps the channel.) A
                // thread may have sent its result and ended since the look above: that result
                // first (a fork's child once said "every vCPU thread ended without a result"
                // and ended with status 1 as its program exited).
                if threads.iter().all(|t| t.is_finished()) {
                    let sent = std::iter::from_fn(|| rx.try_recv().ok()).find_map(|e| match e {
                        Event::Ended(exit) => Some(exit),
                        _ => None,
                    });
                    break sent.ok_or_else(|| err!("every vCPU thread ended without a result"));
                }
                super::host_signals::watch();
                if say_where_at.is_some_and(|at| std::time::Instant::now() >= at) {
                    say_where_at = Some(std::time::Instant::now() + std::time::Duration::from_secs(1));
                    super::stuck::say_where_vcpus_are();
                }
                crate::taken_signals::take_own_pending();
                super::shared_file_ends::watch(&shared);
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break Err(err!("every vCPU thread ended without a result")),
        }
    };
    shared.main_thread.lock().unwrap().take();
    if let Some(svc) = shared.channel.get() {
        svc.stop();
        svc.report_profile(&shared);
    }
    let exit = exit?;
    Ok(match exit {
        Exit::Status(s) => s.clamp(0, 255) as u8,
        Exit::Failure(code) => code,
    })
}

/// The eventfd that wakes the main thread's wait (`wait_on_main`) for an event sent to it
/// (`send_to_main`); made once per process and kept (a late sender must never write to a
/// reused descriptor number), also across a fork (`vm::fork` keeps it).
static MAIN_WAKE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// `MAIN_WAKE`, made if this process has none yet.
fn main_wake() -> Result<i32> {
    use std::sync::atomic::Ordering;
    let fd = MAIN_WAKE.load(Ordering::SeqCst);
    // SAFETY: F_GETFD only asks whether the descriptor is open.
    if fd >= 0 && unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0 {
        return Ok(fd);
    }
    // SAFETY: a new eventfd of ours.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(err!("cannot make an eventfd for the main thread: {}", std::io::Error::last_os_error()));
    }
    MAIN_WAKE.store(fd, Ordering::SeqCst);
    Ok(fd)
}

/// In a forked child: a new eventfd under `MAIN_WAKE`'s number. The inherited one is the
/// parent's eventfd object, whose wake-ups the parent's main thread took as often as the
/// child's: a child's main thread slept through its vCPUs' end until its wait's 250 ms ran
/// out (a fork, `_exit` and `waitpid` took ~260 ms instead of ~5).
pub fn renew_main_wake_in_child() -> Result<()> {
    use std::sync::atomic::Ordering;
    let old = MAIN_WAKE.load(Ordering::SeqCst);
    if old < 0 {
        return Ok(());
    }
    // SAFETY: a new eventfd of ours.
    let fresh = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fresh < 0 {
        return Err(err!("cannot make an eventfd for the main thread: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: `old` is this process's copy of the inherited descriptor, replaced in place
    // (no other thread of the new process uses it yet); `fresh` is ours and closed after.
    unsafe {
        libc::dup3(fresh, old, libc::O_CLOEXEC);
        libc::close(fresh);
    }
    Ok(())
}

/// The descriptor a forked child keeps (`vm::fork`).
pub fn main_wake_descriptor() -> Option<i32> {
    let fd = MAIN_WAKE.load(std::sync::atomic::Ordering::SeqCst);
    (fd >= 0).then_some(fd)
}

/// Sends `event` to the main thread and wakes its wait.
fn send_to_main(tx: &mpsc::Sender<Event>, event: Event) -> std::result::Result<(), mpsc::SendError<Event>> {
    tx.send(event)?;
    if let Some(fd) = main_wake_descriptor() {
        let one = 1u64;
        // SAFETY: writes 8 bytes of ours to the eventfd (a full counter only fails, EAGAIN).
        unsafe { libc::write(fd, &one as *const u64 as *const libc::c_void, 8) };
    }
    Ok(())
}

/// The main thread waits at most `left` for an event (`send_to_main`) or for a signal that
/// is its own or the process's (`taken_signals`): a signal another process sends to the main
/// thread in particular (tgkill to the program's pid) is passed on at once, not at the next
/// periodic look.
fn wait_on_main(left: std::time::Duration) {
    let wake = main_wake_descriptor().unwrap_or(-1);
    let signals = crate::taken_signals::host_descriptor().unwrap_or(-1);
    let mut fds = [
        libc::pollfd { fd: wake, events: libc::POLLIN, revents: 0 },
        libc::pollfd { fd: signals, events: libc::POLLIN, revents: 0 },
    ];
    let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
    // SAFETY: two pollfds of ours (a negative descriptor is skipped).
    let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
    if n <= 0 {
        return;
    }
    if fds[0].revents & libc::POLLIN != 0 {
        let mut count = 0u64;
        // SAFETY: reads the 8-byte counter into ours (EAGAIN if another read emptied it).
        unsafe { libc::read(wake, &mut count as *mut u64 as *mut libc::c_void, 8) };
    }
    if fds[1].revents & libc::POLLIN != 0 {
        crate::taken_signals::take_own_pending();
    }
}

/// Closes the program's host descriptors once its vCPUs have stopped. Calls still blocked on
/// the host in workers are interrupted first (`Service::interrupt_workers`): closing a
/// descriptor under one can wait for good.
pub fn end_forwarding(shared: &Shared) {
    let Some(f) = &shared.forwarder else { return };
    f.stop_restarting();
    if let Some(svc) = shared.channel.get() {
        svc.interrupt_workers();
    }
    f.shutdown();
}
