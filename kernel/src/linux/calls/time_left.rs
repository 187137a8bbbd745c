//! The time left that select, pselect6 and ppoll write back over their timeout, counted from
//! the program's own clock. The monitor's host call starts later than the program's call (the
//! channel, a hand-off to a worker thread, a loaded host) and ends before the program runs
//! again, so the host's time left plus the time the program measured came to up to 2.5 ms
//! more than the timeout; Linux's never does. The smaller of the two is kept.

use linux_raw_sys::general::{__NR_ppoll, __NR_pselect6, __NR_select};

use crate::linux::errno::EINTR;
use crate::linux::uaccess;

/// A wait with a timeout, as the call began.
pub struct Wait {
    addr: u64,
    /// A timeval (select) rather than a timespec.
    micros: bool,
    timeout_ns: u64,
    start_ns: u64,
}

/// Before forwarded call `nr`: the wait it makes, if it is one of the three with a timeout
/// the program can read back. Timeouts the monitor refuses (EINVAL) are left to it.
pub fn begin(nr: u64, a: &[u64; 6]) -> Option<Wait> {
    #[allow(non_upper_case_globals)] // linux-raw-sys's names
    let (addr, micros) = match u32::try_from(nr).ok()? {
        __NR_select => (a[4], true),
        __NR_pselect6 => (a[4], false),
        __NR_ppoll => (a[2], false),
        _ => return None,
    };
    if addr == 0 {
        return None;
    }
    let [sec, sub] = uaccess::read::<[i64; 2]>(addr).ok()?;
    let sub_ns = if micros { sub.checked_mul(1000)? } else { sub };
    // select's microseconds past a second carry into the seconds (as Linux's and the
    // monitor's); a timespec's must stay below a second.
    if sec < 0 || sub_ns < 0 || !micros && sub_ns >= 1_000_000_000 {
        return None;
    }
    let timeout_ns = (sec as u64).checked_mul(1_000_000_000)?.checked_add(sub_ns as u64)?;
    Some(Wait { addr, micros, timeout_ns, start_ns: crate::time::now_ns() })
}

/// After the call (result `ret`): where the monitor wrote the time left back (a result, or
/// EINTR), the time left by the program's clock if that is less.
pub fn end(w: Wait, ret: i64) {
    if ret < 0 && ret != -(EINTR as i64) {
        return;
    }
    let left = w.timeout_ns.saturating_sub(crate::time::now_ns().saturating_sub(w.start_ns));
    let Ok([sec, sub]) = uaccess::read::<[i64; 2]>(w.addr) else { return };
    let unit = if w.micros { 1000 } else { 1 };
    let written = (sec.max(0) as u64).saturating_mul(1_000_000_000).saturating_add((sub.max(0) as u64) * unit);
    if left < written {
        let ours = [(left / 1_000_000_000) as i64, ((left % 1_000_000_000) / unit) as i64];
        // Linux ignores a failure to write the time left back.
        let _ = uaccess::write::<[i64; 2]>(w.addr, ours);
    }
}
