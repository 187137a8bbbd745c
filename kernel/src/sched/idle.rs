//! The idle loop every CPU runs when it has no ready thread: it runs queued tasks, hands the
//! CPU to threads as they become ready, and otherwise polls (lowest wake-up latency on a
//! dedicated core) or, with `--idle halt` (the default when vCPUs outnumber host CPUs), polls
//! for a while (`sched::halt_after_ns`) and then halts until an interrupt: waking a halted vCPU
//! costs an IPI (21-56 us on a PVM host), so short gaps are better spent spinning.

use core::sync::atomic::Ordering;

use crate::arch::irq;
use crate::counters::{self, Stat};

pub fn idle_loop() -> ! {
    let s = super::this_sched();
    // How long this CPU polls before it halts; asked again after each thread it ran and while
    // it would poll for good (the answer changes once the program forks, `sched::note_forked`).
    let halting = || {
        let halt_after = super::halt_after_ns_here();
        let halts = halt_after != u64::MAX;
        (halts, if halts { crate::time::ns_to_ticks(halt_after) } else { u64::MAX })
    };
    let (mut halts, mut spin_ticks) = halting();
    // Within that time, how long it polls now: halved after a halt that lasted longer than
    // the whole time (the wait was a long one: polling it was a host CPU taken from others,
    // e.g. the forked child this program waits for), doubled after one that ended within it
    // (polling would have caught the wake-up), as KVM's halt polling adapts.
    let min_window = crate::time::ns_to_ticks(super::HALT_AFTER_NS_HALTING);
    let mut window = spin_ticks;
    let mut idle_since = crate::time::ticks();
    irq::enable();
    // While idle, TLB shootdowns pass this CPU by (it flushes before running a thread).
    crate::arch::tlb::idle_begins();
    loop {
        super::freeze::check();
        // `--strace` lines of a program that now waits: out while it waits.
        crate::console::flush_held_after(crate::time::ns_to_ticks(20_000_000));
        super::task::run_pending();
        if super::sleep::due(s) {
            // Sleeps end from the TSC here, without a timer interrupt.
            super::sleep::wake_expired(s);
        }
        super::run_idle_hook(true);
        if s.runnable() > 0 {
            counters::add(Stat::PollTicks, crate::time::ticks().wrapping_sub(idle_since));
            super::run_idle_hook(false);
            crate::arch::tlb::idle_ends();
            super::idle_run_next();
            crate::arch::tlb::idle_begins();
            (halts, spin_ticks) = halting();
            idle_since = crate::time::ticks();
            continue;
        }
        // A thread waiting behind another on a busy CPU: asked to move here.
        super::balance::look(crate::cpu::id());
        if !halts {
            // A CPU that polls for good looks again (the program may have forked meanwhile).
            (halts, spin_ticks) = halting();
        }
        // A sleeper due within the polling time is woken from the TSC rather than by the
        // timer's interrupt after a halt: on PVM the halt, the interrupt and its EOI cost more
        // ring-0 work than the wait (Go's sysmon sleeps 20 us at a time).
        window = window.clamp(min_window.min(spin_ticks), spin_ticks);
        if halts && crate::time::ticks().wrapping_sub(idle_since) >= window && !super::sleep::due_within(s, spin_ticks)
        {
            super::run_idle_hook(false);
            // Sleepers of a polling CPU armed no timer (the loop ends their sleeps from the
            // TSC): it must wake the CPU now. A look armed for the last thread, or a timer
            // left armed early (`program_timer`), would wake it for nothing.
            super::spin_look::cancel(s);
            super::arm_timer_exact(s);
            // A halt may last: the held `--strace` lines go out first.
            crate::console::flush_held();
            irq::disable();
            s.halted.store(true, Ordering::SeqCst);
            let halt_at = crate::time::ticks();
            counters::add(Stat::PollTicks, halt_at.wrapping_sub(idle_since));
            if s.runnable() == 0 && !super::task::pending() {
                super::run_halt_hook(true);
                // A kick sent after the checks above still ends the wait.
                s.asleep.store(true, Ordering::SeqCst);
                irq::wait_for_interrupt();
                // Awake, interrupts still masked: a freeze that counted this CPU as stopped
                // while it slept (`freeze::Halted::MustPark` in ring-3 mode) holds it here
                // before anything is written or any noted interrupt is handled.
                s.asleep.store(false, Ordering::SeqCst);
                super::freeze::check();
                super::run_halt_hook(false);
                counters::add(Stat::Halts, 1);
                let slept = crate::time::ticks().wrapping_sub(halt_at);
                counters::add(Stat::HaltTicks, slept);
                window = if slept > spin_ticks { window / 2 } else { window.saturating_mul(2) };
            }
            irq::enable();
            s.halted.store(false, Ordering::SeqCst);
            idle_since = crate::time::ticks();
        } else {
            core::hint::spin_loop();
        }
    }
}
