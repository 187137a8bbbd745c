//! `timer_arm`: what arming this CPU's one-shot timer costs (the TSC-deadline write; on PVM
//! a ring-0 entry), the price every sleep that needs an interrupt and every preemption clock
//! pays once. The sample re-arms the deadline the scheduler already has, so nothing it
//! expects is lost.

use super::stats::{report, Plan};
use crate::time::ticks;

pub fn timer_arm(plan: &Plan) {
    let s = plan.run(|| {
        let t0 = ticks();
        crate::sched::rearm_timer_as_is();
        ticks() - t0
    });
    report("timer_arm", &s, "threads=1 note=hrt_only");
}
