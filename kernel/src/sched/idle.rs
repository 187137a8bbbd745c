//! The idle loop every CPU runs when it has no ready thread: it runs queued tasks, hands the
//! CPU to threads as they become ready, and otherwise polls (default: lowest wake-up latency
//! on a dedicated core) or halts until an interrupt (`--idle halt`).

use core::sync::atomic::Ordering;

use crate::arch::irq;

pub fn idle_loop() -> ! {
    let s = &crate::cpu::this().sched;
    irq::enable();
    loop {
        super::task::run_pending();
        if s.runnable() > 0 {
            super::idle_run_next();
            continue;
        }
        if super::idle_halts() {
            irq::disable();
            s.halted.store(true, Ordering::SeqCst);
            if s.runnable() == 0 && !super::task::pending() {
                // A kick sent after the checks above still ends the wait.
                irq::wait_for_interrupt();
            }
            irq::enable();
            s.halted.store(false, Ordering::SeqCst);
        } else {
            core::hint::spin_loop();
        }
    }
}
