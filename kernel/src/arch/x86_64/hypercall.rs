//! Requests to the monitor: one `out` to `HYPERCALL_PORT` carrying the physical address of this
//! CPU's request block. The vCPU stops until the monitor has served it, so the block can be
//! reused as soon as `out` returns.

use core::sync::atomic::{AtomicU64, Ordering};

use hrt_abi::{nr, Hypercall, HYPERCALL_PORT, MAX_CPUS};

use super::instr::outl;
use crate::arch::PerCpuCell;

static BLOCKS: [PerCpuCell<Hypercall>; MAX_CPUS] =
    [const { PerCpuCell::new(Hypercall { nr: 0, args: [0; 7], ret: 0 }) }; MAX_CPUS];

/// Hypercalls made, by number (the last counts every larger number): each is a VM exit, which
/// costs 15-35 us on a PVM host, so `-v` lists them.
static MADE: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];

/// (number, count) of every hypercall number used so far.
pub fn made() -> impl Iterator<Item = (usize, u64)> {
    MADE.iter().enumerate().map(|(nr, n)| (nr, n.load(Ordering::Relaxed))).filter(|&(_, n)| n > 0)
}

/// Performs hypercall `nr` with `args` and returns the monitor's result.
pub fn call(nr: u64, args: &[u64]) -> i64 {
    MADE[(nr as usize).min(MADE.len() - 1)].fetch_add(1, Ordering::Relaxed);
    let cpu = super::percpu::cpu_id();
    let was = super::irq::save_and_disable();
    // SAFETY: interrupts are off and the block belongs to this CPU, so nothing else touches it.
    let ret = unsafe {
        let block = &mut *BLOCKS[cpu].get();
        block.nr = nr;
        let n = args.len().min(7);
        block.args[..n].copy_from_slice(&args[..n]);
        // The rest read zero, not an earlier call's: a call may take optional arguments.
        block.args[n..].fill(0);
        block.ret = 0;
        let block = block as *mut Hypercall;
        // Identity-mapped kernel below 4 GiB: the address fits the 32-bit port write.
        outl(HYPERCALL_PORT, block as u64 as u32);
        core::ptr::read_volatile(&(*block).ret)
    };
    super::irq::restore(was);
    ret
}

pub fn console_write(bytes: &[u8]) {
    call(nr::CONSOLE_WRITE, &[bytes.as_ptr() as u64, bytes.len() as u64]);
}

pub fn shutdown(status: i32) -> ! {
    shutdown_by(status, 0)
}

/// Power off with `status`, saying that signal `sig` ended the program (0: none).
pub fn shutdown_by(status: i32, sig: u64) -> ! {
    loop {
        call(nr::SHUTDOWN, &[status as u32 as u64, sig]);
    }
}

/// Asks the monitor to write the program's core file (`nr::CORE_DUMP`): 1 if it wrote one.
pub fn core_dump(record: &hrt_abi::CoreRecord) -> i64 {
    let at = record as *const hrt_abi::CoreRecord as u64;
    call(nr::CORE_DUMP, &[at, core::mem::size_of::<hrt_abi::CoreRecord>() as u64])
}

/// Lets the host run another of its threads on this vCPU's host CPU (`sched_yield`).
pub fn host_yield() {
    call(nr::HOST_YIELD, &[]);
}

pub fn start_cpus() {
    call(nr::START_CPUS, &[]);
}

pub fn report_panic() -> ! {
    loop {
        call(nr::PANIC, &[]);
    }
}
