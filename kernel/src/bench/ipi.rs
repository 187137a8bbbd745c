//! `ipi_roundtrip`: an IPI from CPU 0 to another CPU, whose handler acknowledges it in
//! memory; the sample is send to acknowledgement seen, over every other CPU in turn.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use super::stats::{report, Plan};
use crate::arch::{apic, traps};
use crate::time::ticks;

const BENCH_VECTOR: u8 = 0x41;

static ACKS: [AtomicU64; hrt_abi::MAX_CPUS] = [const { AtomicU64::new(0) }; hrt_abi::MAX_CPUS];

fn acknowledge(_: &mut traps::TrapFrame) {
    ACKS[crate::cpu::id()].fetch_add(1, Ordering::Release);
}

pub fn ipi_roundtrip(plan: &Plan) {
    let ncpu = crate::cpu::count();
    if ncpu < 2 {
        kprintln!("# ipi_roundtrip: needs 2 CPUs, skipped");
        return;
    }
    traps::register(BENCH_VECTOR, acknowledge);
    let me = crate::cpu::id();
    let targets: Vec<usize> = (0..ncpu).filter(|&c| c != me).collect();
    let mut next = 0;
    let s = plan.run(|| {
        let cpu = targets[next % targets.len()];
        next += 1;
        let before = ACKS[cpu].load(Ordering::Acquire);
        let t0 = ticks();
        apic::send_ipi(crate::cpu::apic_id(cpu), BENCH_VECTOR);
        while ACKS[cpu].load(Ordering::Acquire) == before {
            core::hint::spin_loop();
        }
        ticks() - t0
    });
    report("ipi_roundtrip", &s, &alloc::format!("threads={ncpu} note=hrt_only"));
}
