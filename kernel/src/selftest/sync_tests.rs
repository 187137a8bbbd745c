//! Spinlocks, condition variables, barriers, wait queues, IPIs.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::TestResult;
use crate::arch::{apic, traps};
use crate::ensure;
use crate::sched::{self, ThreadHandle, ThreadOptions};
use crate::sched::{Barrier, CondVar, WaitQueue};
use crate::sync::{IrqSpinLock, SpinLock};

fn one_per_cpu<F>(name: &str, f: F) -> Result<Vec<ThreadHandle>, alloc::string::String>
where
    F: Fn(usize) -> u64 + Send + Sync + Clone + 'static,
{
    (0..crate::cpu::count())
        .map(|cpu| {
            let f = f.clone();
            sched::spawn(ThreadOptions::named(name).on_cpu(cpu), move || f(cpu)).map_err(|e| alloc::format!("{e:?}"))
        })
        .collect()
}

pub fn spinlock_counter() -> TestResult {
    const PER_CPU: u64 = 2000;
    let ncpu = crate::cpu::count() as u64;
    kprintln!("  {ncpu} CPU(s) x {PER_CPU} increments, SpinLock and IrqSpinLock");
    let plain = Arc::new(SpinLock::new(0u64));
    let irq = Arc::new(IrqSpinLock::new(0u64));
    let (p, q) = (plain.clone(), irq.clone());
    let handles = one_per_cpu("spin", move |_| {
        for _ in 0..PER_CPU {
            *p.lock() += 1;
            *q.lock() += 1;
        }
        0
    })?;
    handles.into_iter().for_each(|h| {
        h.join();
    });
    let (a, b) = (*plain.lock(), *irq.lock());
    ensure!(a == ncpu * PER_CPU, "SpinLock counter {a}, want {}", ncpu * PER_CPU);
    ensure!(b == ncpu * PER_CPU, "IrqSpinLock counter {b}, want {}", ncpu * PER_CPU);
    Ok(())
}

/// A fork's freeze waits for a thread switched out inside a plain `SpinLock`'s critical
/// section (as a preempted one is: here it yields there, on the freezing thread's CPU, ready to
/// run on): copied held, the lock would stay held in the child for good. Ordered by flags,
/// not by time.
pub fn fork_waits_for_lock_holders() -> TestResult {
    use crate::linux::calls::fork::{freeze_without_locks_held, LOCK_WAITS};
    use crate::sync::spinlock::held_anywhere;
    kprintln!("  a thread switched out holding a SpinLock while another of its CPU freezes the others for a fork");
    ensure!(held_anywhere() == 0, "{} SpinLock(s) held before the test", held_anywhere());
    let lock = Arc::new(SpinLock::new(0u64));
    let holding = Arc::new(AtomicBool::new(false));
    let waits = LOCK_WAITS.load(Ordering::SeqCst);
    let (l, h) = (lock.clone(), holding.clone());
    let holder = sched::spawn(ThreadOptions::named("holder").on_cpu(0), move || {
        let mut g = l.lock();
        h.store(true, Ordering::SeqCst);
        // Holds the lock, switched out, until the freeze has found it held at least once.
        while LOCK_WAITS.load(Ordering::SeqCst) == waits {
            sched::yield_now();
        }
        *g += 1;
        0
    })
    .map_err(|e| alloc::format!("{e:?}"))?;
    let freezer = sched::spawn(ThreadOptions::named("freezer").on_cpu(0), move || {
        while !holding.load(Ordering::SeqCst) {
            sched::yield_now();
        }
        let counted = held_anywhere();
        let Ok(was) = freeze_without_locks_held() else {
            return u64::MAX;
        };
        let (held, value) = (held_anywhere(), lock.try_lock().map(|g| *g));
        sched::freeze::thaw();
        crate::arch::irq::restore(was);
        // Counted while the holder held it; none held once frozen; the holder's write done.
        (counted >= 1) as u64 | ((held == 0) as u64) << 1 | ((value == Some(1)) as u64) << 2
    })
    .map_err(|e| alloc::format!("{e:?}"))?;
    let checks = freezer.join();
    holder.join();
    ensure!(checks != u64::MAX, "the freeze failed (EAGAIN after 2 s)");
    ensure!(checks & 1 != 0, "the held SpinLock was not counted");
    ensure!(LOCK_WAITS.load(Ordering::SeqCst) > waits, "the freeze did not wait for the holder");
    ensure!(checks == 7, "frozen with a SpinLock still held, or before the holder's write (checks {checks:#b})");
    Ok(())
}

struct PingPong {
    turn: SpinLock<u64>,
    cv: CondVar,
}

pub fn condvar_pingpong() -> TestResult {
    const ROUNDS: u64 = 20;
    let ncpu = crate::cpu::count();
    let pairs: Vec<(usize, usize)> = if ncpu == 1 {
        alloc::vec![(0, 0)]
    } else {
        (0..ncpu).flat_map(|a| (0..ncpu).filter(move |&b| b != a).map(move |b| (a, b))).collect()
    };
    kprintln!("  {} CPU pair(s) x {ROUNDS} round trips through one condition variable", pairs.len());
    for (a, b) in pairs {
        let pp = Arc::new(PingPong { turn: SpinLock::new(0), cv: CondVar::new() });
        let mut hs = Vec::new();
        for (side, cpu) in [(0u64, a), (1u64, b)] {
            let pp = pp.clone();
            let h = sched::spawn(ThreadOptions::named("pingpong").on_cpu(cpu), move || {
                for round in 0..ROUNDS {
                    let mut turn = pp.turn.lock();
                    while *turn != round * 2 + side {
                        turn = pp.cv.wait(turn);
                    }
                    *turn += 1;
                    drop(turn);
                    pp.cv.broadcast();
                }
                0
            })
            .map_err(|e| alloc::format!("{e:?}"))?;
            hs.push(h);
        }
        hs.into_iter().for_each(|h| {
            h.join();
        });
        let t = *pp.turn.lock();
        ensure!(t == ROUNDS * 2, "CPUs {a}<->{b}: turn counter {t}, want {}", ROUNDS * 2);
    }
    Ok(())
}

pub fn barrier_rounds() -> TestResult {
    const ROUNDS: usize = 1000;
    let ncpu = crate::cpu::count();
    kprintln!("  {ncpu} thread(s), one per CPU, {ROUNDS} barrier rounds");
    let barrier = Arc::new(Barrier::new(ncpu));
    let arrived = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicUsize::new(0));
    let (b, a, e) = (barrier.clone(), arrived.clone(), errors.clone());
    let hs = one_per_cpu("barrier", move |_| {
        for round in 0..ROUNDS {
            a.fetch_add(1, Ordering::AcqRel);
            b.wait();
            // Everyone has arrived for this round, and nobody can be two rounds ahead.
            let seen = a.load(Ordering::Acquire);
            if seen < (round + 1) * ncpu || seen > (round + 2) * ncpu {
                e.fetch_add(1, Ordering::Relaxed);
            }
            b.wait();
        }
        0
    })?;
    hs.into_iter().for_each(|h| {
        h.join();
    });
    let errs = errors.load(Ordering::Relaxed);
    ensure!(errs == 0, "{errs} thread-rounds passed the barrier early");
    ensure!(arrived.load(Ordering::Relaxed) == ROUNDS * ncpu, "arrivals lost");
    Ok(())
}

pub fn waitqueue() -> TestResult {
    const WAITERS_PER_CPU: usize = 3;
    let ncpu = crate::cpu::count();
    kprintln!("  {} waiters over {ncpu} CPU(s) woken by one wake_all", WAITERS_PER_CPU * ncpu);
    let wq = Arc::new(WaitQueue::new());
    let go = Arc::new(AtomicBool::new(false));
    let mut hs = Vec::new();
    for cpu in 0..ncpu {
        for _ in 0..WAITERS_PER_CPU {
            let (wq, go) = (wq.clone(), go.clone());
            hs.push(
                sched::spawn(ThreadOptions::named("waiter").on_cpu(cpu), move || {
                    wq.wait_until(|| go.load(Ordering::Acquire));
                    1
                })
                .map_err(|e| alloc::format!("{e:?}"))?,
            );
        }
    }
    sched::sleep_ns(1_000_000);
    go.store(true, Ordering::Release);
    wq.wake_all();
    let woke: u64 = hs.into_iter().map(|h| h.join()).sum();
    ensure!(woke as usize == WAITERS_PER_CPU * ncpu, "{woke} waiters finished");
    Ok(())
}

static IPI_ACKS: [AtomicUsize; hrt_abi::MAX_CPUS] = [const { AtomicUsize::new(0) }; hrt_abi::MAX_CPUS];
const TEST_VECTOR: u8 = 0x40;

fn ipi_handler(_: &mut traps::TrapFrame) {
    IPI_ACKS[crate::cpu::id()].fetch_add(1, Ordering::AcqRel);
}

fn wait_acks(cpu: usize, want: usize) -> bool {
    let deadline = crate::time::now_ns() + 2_000_000_000;
    while IPI_ACKS[cpu].load(Ordering::Acquire) < want {
        if crate::time::now_ns() > deadline {
            return false;
        }
        core::hint::spin_loop();
    }
    true
}

pub fn ipi_all() -> TestResult {
    let ncpu = crate::cpu::count();
    kprintln!("  IPI to each of {} other CPU(s) one by one, then to all others at once, then to self", ncpu - 1);
    traps::register(TEST_VECTOR, ipi_handler);
    for a in IPI_ACKS.iter() {
        a.store(0, Ordering::Relaxed);
    }
    let me = crate::cpu::id();
    for cpu in (0..ncpu).filter(|&c| c != me) {
        apic::send_ipi(crate::cpu::apic_id(cpu), TEST_VECTOR);
        ensure!(wait_acks(cpu, 1), "CPU {cpu} did not acknowledge a directed IPI");
    }
    apic::send_ipi_all_others(TEST_VECTOR);
    for cpu in (0..ncpu).filter(|&c| c != me) {
        ensure!(wait_acks(cpu, 2), "CPU {cpu} did not acknowledge the broadcast IPI");
    }
    apic::send_ipi(crate::cpu::apic_id(me), TEST_VECTOR);
    ensure!(wait_acks(me, 1), "self-IPI not delivered");
    Ok(())
}
