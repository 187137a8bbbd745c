//! Threads, fork, FPU state, tasks.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::TestResult;
use crate::ensure;
use crate::sched::{self, task, Fork, ThreadOptions};

pub fn threads_1000() -> TestResult {
    const N: usize = 1000;
    let ncpu = crate::cpu::count();
    kprintln!("  {N} threads placed over {ncpu} CPU(s) (least loaded first), created in batches of 100, then joined");
    static RAN_ON: [AtomicUsize; hrt_abi::MAX_CPUS] = [const { AtomicUsize::new(0) }; hrt_abi::MAX_CPUS];
    for c in RAN_ON.iter() {
        c.store(0, Ordering::Relaxed);
    }
    fn body(arg: u64) -> u64 {
        RAN_ON[crate::cpu::id()].fetch_add(1, Ordering::Relaxed);
        arg * 3 + 1
    }
    let mut done = 0;
    while done < N {
        let batch: Vec<_> = (done..(done + 100).min(N))
            .map(|i| sched::create(body, i as u64, ThreadOptions::named("worker")).map(|h| (i, h)))
            .collect::<Result<_, _>>()
            .map_err(|e| alloc::format!("create failed: {e:?}"))?;
        for (i, h) in batch {
            let v = h.join();
            ensure!(v == i as u64 * 3 + 1, "thread {i} returned {v}");
            done += 1;
        }
    }
    for (c, count) in RAN_ON.iter().take(ncpu).enumerate() {
        let n = count.load(Ordering::Relaxed);
        // Balanced placement: every CPU gets a fair share (the busy CPU 0 somewhat less).
        ensure!(n >= N / (2 * ncpu), "CPU {c} ran only {n} of {N} threads");
    }
    Ok(())
}

/// Create+join round trips to a thread on another CPU (the same CPU with one vCPU).
pub fn create_join_cycles() -> TestResult {
    const N: usize = 1000;
    let target = if crate::cpu::count() > 1 { 1 } else { 0 };
    fn body(arg: u64) -> u64 {
        arg
    }
    let mut cycles = Vec::with_capacity(N);
    for i in 0..N {
        let t0 = crate::time::ticks();
        let h = sched::create(body, i as u64, ThreadOptions::named("cj").on_cpu(target))
            .map_err(|e| alloc::format!("create failed: {e:?}"))?;
        let v = h.join();
        cycles.push(crate::time::ticks() - t0);
        ensure!(v == i as u64, "thread returned {v}, want {i}");
    }
    cycles.sort_unstable();
    kprintln!(
        "  {N} create+join cycles on CPU 0 -> CPU {target}: min {} median {} max {} TSC cycles (median {} us)",
        cycles[0],
        cycles[N / 2],
        cycles[N - 1],
        crate::time::ticks_to_ns(cycles[N / 2]) / 1000
    );
    Ok(())
}

#[inline(never)]
fn forking(seed: u64) -> u64 {
    // Values live in callee-saved registers or the frame across the fork.
    let a = core::hint::black_box(seed * 7);
    let b = core::hint::black_box(seed + 11);
    match sched::fork() {
        Ok(Fork::Child) => a + b + 1000, // the child's exit value
        Ok(Fork::Parent(child)) => {
            let from_child = child.join();
            if from_child == a + b + 1000 {
                a + b
            } else {
                u64::MAX
            }
        }
        Err(_) => u64::MAX - 1,
    }
}

pub fn fork_join() -> TestResult {
    const N: u64 = 50;
    kprintln!("  {N} forks, each child returns into the forking frame and exits through it");
    for seed in 0..N {
        let r = forking(seed);
        ensure!(r != u64::MAX - 1, "fork failed");
        ensure!(r == seed * 7 + seed + 11, "seed {seed}: got {r:#x}");
    }
    Ok(())
}

/// Byte offsets of xmm0, xmm7 and xmm15 in an FXSAVE/XSAVE legacy area.
const XMM_OFFSETS: [usize; 3] = [160, 160 + 7 * 16, 160 + 15 * 16];

#[repr(C, align(64))]
struct Area([u8; crate::arch::fpu::AREA_MAX]);

/// Loads `v` into xmm0, xmm7 and xmm15 through FXRSTOR/XRSTOR rather than SSE instructions:
/// emulated ring 0 (PVM hosts) cannot execute SSE, but the save/restore path is what this
/// test checks.
fn set_xmm(v: u64) {
    let mut area = Area([0; crate::arch::fpu::AREA_MAX]);
    // SAFETY: a 64-byte aligned area of the size the FPU code uses.
    unsafe {
        crate::arch::fpu::init_area(area.0.as_mut_ptr());
        crate::arch::fpu::save(area.0.as_mut_ptr());
    }
    for off in XMM_OFFSETS {
        area.0[off..off + 8].copy_from_slice(&v.to_le_bytes());
    }
    if crate::arch::fpu::uses_xsave() {
        area.0[512] |= 0x2; // XSTATE_BV: SSE state present
    }
    // SAFETY: the area holds a state written by `save`, with only register values changed.
    unsafe { crate::arch::fpu::restore(area.0.as_ptr()) };
}

fn get_xmm() -> [u64; 3] {
    let mut area = Area([0; crate::arch::fpu::AREA_MAX]);
    // SAFETY: as above.
    unsafe { crate::arch::fpu::save(area.0.as_mut_ptr()) };
    XMM_OFFSETS.map(|off| u64::from_le_bytes(area.0[off..off + 8].try_into().unwrap()))
}

pub fn fpu_state() -> TestResult {
    const ROUNDS: u64 = 50;
    kprintln!("  2 threads per CPU x {ROUNDS} yields, each checking its own xmm0/xmm7/xmm15");
    let mut handles = Vec::new();
    for cpu in 0..crate::cpu::count() {
        for k in 0..2u64 {
            let tag = ((cpu as u64) << 32) | (k << 16);
            let h = sched::spawn(ThreadOptions::named("fpu").on_cpu(cpu), move || {
                for r in 0..ROUNDS {
                    set_xmm(tag | r);
                    sched::yield_now();
                    if get_xmm() != [tag | r; 3] {
                        return 1;
                    }
                }
                0
            })
            .map_err(|e| alloc::format!("{e:?}"))?;
            handles.push(h);
        }
    }
    let bad: u64 = handles.into_iter().map(|h| h.join()).sum();
    ensure!(bad == 0, "{bad} thread(s) saw another thread's SSE registers");
    Ok(())
}

pub fn tasks() -> TestResult {
    const PER_CPU: u64 = 20;
    let ncpu = crate::cpu::count();
    kprintln!("  {PER_CPU} tasks pinned to each of {ncpu} CPU(s) and {PER_CPU} for any CPU");
    let mut pinned = Vec::new();
    for cpu in 0..ncpu {
        for i in 0..PER_CPU {
            pinned.push((cpu, i, task::submit(Some(cpu), move || ((crate::cpu::id() as u64) << 32) | i)));
        }
    }
    let any: Vec<_> = (0..PER_CPU).map(|i| (i, task::submit(None, move || i * i))).collect();
    for (cpu, i, h) in pinned {
        let v = h.wait();
        ensure!(v == ((cpu as u64) << 32) | i, "task {i} for CPU {cpu} returned {v:#x}");
    }
    for (i, h) in any {
        ensure!(h.wait() == i * i, "any-CPU task {i} returned a wrong value");
        ensure!(h.is_done(), "task not marked done");
    }
    Ok(())
}
