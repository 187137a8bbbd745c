//! The stub that rewritten spin-wait loops call at every round (`linux::spin_sites`): from the
//! second round of a wait on (`LastCall`), when a thread waits in this CPU's run queue, it
//! enters the kernel to yield to it; otherwise it returns at once (a few dozen cycles). A loop found spinning while another thread of its
//! vCPU waits (threads packed on fewer vCPUs, NPB LU's pipeline) otherwise keeps the vCPU
//! until the next look, an interrupt through emulated ring 0 (~100 us here).
//!
//! The stub lives in the user-executable trampoline page (`syscall`), next to the CPUID stub:
//! program code, for the trap handlers. It changes no register and no flag: it saves the
//! flags, rax, rcx, rdx and r11, and enters as a rewritten system-call site does, by a call to the
//! ring-3 entry (a SYSCALL instruction costs ~33 K cycles here, the call a few hundred), which
//! the dispatcher recognises by its return address (`is_yield_call`) before anything else
//! looks at the call (no `--strace` line, no seccomp filter: the program made no system
//! call). The slot that calls it has moved rsp below the red zone.

use core::sync::atomic::{AtomicU64, Ordering};

use hrt_abi::MAX_CPUS;

/// Per CPU: the address of its count of threads waiting in its run queue (a `usize`), set by
/// the scheduler at boot (0: none, never yield).
pub static HRT_SPIN_YIELD_READY: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];

/// Per CPU, on a line of its own (the stub writes it at every call): the return address of
/// the stub's last call there and the TSC then. A loop's first round (a thread that arrives
/// at a wait, whose flag may be set already) must not yield: only a call from the same place
/// within `ROUND_TICKS` of the last one, a second round, does.
#[repr(C, align(128))]
pub struct LastCall {
    site: AtomicU64,
    tsc: AtomicU64,
}

// The stub finds a CPU's record at its index shifted by 7.
const _: () = assert!(core::mem::size_of::<LastCall>() == 128);

pub static HRT_SPIN_YIELD_LAST: [LastCall; MAX_CPUS] =
    [const { LastCall { site: AtomicU64::new(0), tsc: AtomicU64::new(0) } }; MAX_CPUS];

/// The longest a round of a rewritten loop takes between two calls of the stub, in TSC ticks:
/// a round with the stub and a full fence takes ~100-300 here; a thread that left the loop,
/// worked and came back (NPB LU's next plane, PRK p2p's next row: microseconds) takes longer.
/// A thread that yielded on its first round gave its vCPU to a thread that may spin itself
/// until a look, ~0.5 ms (PRK p2p, 2 threads at `--cpus 1`: 2 s per iteration against 0.02).
pub const ROUND_TICKS: u64 = 1000;

/// Tells the stub where CPU `cpu` counts the threads waiting in its run queue.
pub fn set_ready_count(cpu: usize, count: *const usize) {
    HRT_SPIN_YIELD_READY[cpu].store(count as u64, Ordering::Relaxed);
}

/// The stub's code, for the trampoline page's `global_asm!` (`syscall`), with operands `ready`
/// (`HRT_SPIN_YIELD_READY`), `last` (`HRT_SPIN_YIELD_LAST`), `round` (`ROUND_TICKS`),
/// `cpu_id` (`PerCpu::id`'s offset from GS) and `nr` (the number rax holds, `sched_yield`,
/// should the call ever reach the ordinary dispatcher). `xchg` with memory is locked, but
/// the line is this CPU's own.
macro_rules! spin_yield_stub_asm {
    () => {
        concat!(
            ".global hrt_spin_yield_stub\n",
            "hrt_spin_yield_stub:\n",
            "    pushfq\n",
            ".global hrt_spin_yield_d1\n",
            "hrt_spin_yield_d1:\n",
            "    push rax\n",
            ".global hrt_spin_yield_d2\n",
            "hrt_spin_yield_d2:\n",
            "    push rcx\n",
            ".global hrt_spin_yield_d3\n",
            "hrt_spin_yield_d3:\n",
            "    push rdx\n",
            ".global hrt_spin_yield_d4\n",
            "hrt_spin_yield_d4:\n",
            "    rdtsc\n",
            "    shl rdx, 32\n",
            "    or rax, rdx\n",
            "    mov rcx, gs:[{cpu_id}]\n",
            "    shl rcx, 7\n",
            "    lea rdx, [rip + {last}]\n",
            "    add rdx, rcx\n",
            "    mov rcx, [rsp + 32]\n", // the return address into the slot
            "    cmp rcx, [rdx]\n",
            "    mov [rdx], rcx\n",
            "    mov rcx, rax\n",
            "    xchg rax, [rdx + 8]\n",
            "    jne 2f\n", // another place's call: this loop's first round
            "    sub rcx, rax\n",
            "    cmp rcx, {round}\n",
            "    jae 2f\n", // long after the last: a new arrival at the loop
            "    mov rax, gs:[{cpu_id}]\n",
            "    lea rcx, [rip + {ready}]\n",
            "    mov rax, [rcx + rax * 8]\n",
            "    test rax, rax\n",
            "    jz 2f\n",
            "    cmp qword ptr [rax], 0\n",
            "    je 2f\n",
            "    push r11\n",
            ".global hrt_spin_yield_d5\n",
            "hrt_spin_yield_d5:\n",
            "    mov eax, {nr}\n",
            "    call hrt_syscall_call_entry\n",
            ".global hrt_spin_yield_return\n",
            "hrt_spin_yield_return:\n",
            "    pop r11\n",
            ".global hrt_spin_yield_p4\n",
            "hrt_spin_yield_p4:\n",
            "2:  pop rdx\n",
            ".global hrt_spin_yield_p3\n",
            "hrt_spin_yield_p3:\n",
            "    pop rcx\n",
            ".global hrt_spin_yield_p2\n",
            "hrt_spin_yield_p2:\n",
            "    pop rax\n",
            ".global hrt_spin_yield_p1\n",
            "hrt_spin_yield_p1:\n",
            "    popfq\n",
            ".global hrt_spin_yield_p0\n",
            "hrt_spin_yield_p0:\n",
            "    ret\n",
            ".global hrt_spin_yield_stub_end\n",
            "hrt_spin_yield_stub_end:\n",
        )
    };
}
pub(super) use spin_yield_stub_asm;

extern "C" {
    fn hrt_spin_yield_stub();
    fn hrt_spin_yield_d1();
    fn hrt_spin_yield_d2();
    fn hrt_spin_yield_d3();
    fn hrt_spin_yield_d4();
    fn hrt_spin_yield_d5();
    fn hrt_spin_yield_return();
    fn hrt_spin_yield_p4();
    fn hrt_spin_yield_p3();
    fn hrt_spin_yield_p2();
    fn hrt_spin_yield_p1();
    fn hrt_spin_yield_p0();
    fn hrt_spin_yield_stub_end();
}

/// If `rip` lies in the stub: how many words it has pushed there (flags, rax, rcx, rdx, r11,
/// in that order), above which lies its return address into the slot.
pub fn stub_depth(rip: u64) -> Option<u64> {
    let at = |f: unsafe extern "C" fn()| f as *const () as u64;
    // Each region, from its first instruction, with the words pushed while rip is in it.
    let regions = [
        (at(hrt_spin_yield_stub), 0),
        (at(hrt_spin_yield_d1), 1),
        (at(hrt_spin_yield_d2), 2),
        (at(hrt_spin_yield_d3), 3),
        (at(hrt_spin_yield_d4), 4),
        (at(hrt_spin_yield_d5), 5),
        (at(hrt_spin_yield_return), 5),
        (at(hrt_spin_yield_p4), 4),
        (at(hrt_spin_yield_p3), 3),
        (at(hrt_spin_yield_p2), 2),
        (at(hrt_spin_yield_p1), 1),
        (at(hrt_spin_yield_p0), 0),
    ];
    if !in_stub(rip) {
        return None;
    }
    regions.iter().rev().find(|&&(start, _)| rip >= start).map(|&(_, depth)| depth)
}

/// Where the stub starts (the target of `slot_table::Then::Yield` slots).
pub fn stub_address() -> u64 {
    hrt_spin_yield_stub as *const () as u64
}

/// Whether a call's return address is the stub's own: a yield, not the program's call.
pub fn is_yield_call(return_address: u64) -> bool {
    return_address == hrt_spin_yield_return as *const () as u64
}

/// Whether `rip` lies in the stub.
pub fn in_stub(rip: u64) -> bool {
    (stub_address()..hrt_spin_yield_stub_end as *const () as u64).contains(&rip)
}
