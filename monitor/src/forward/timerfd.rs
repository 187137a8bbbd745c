//! timerfd: timerfd_create, timerfd_settime, timerfd_gettime. Each timer is a host timerfd in
//! the program's descriptor table, so reading it (a forwarded read, which may wait and so goes
//! to a worker thread), poll, select and epoll treat it beside the program's other host
//! descriptors, as on Linux. Relative times and the times `timerfd_gettime` and the old value
//! report (time left, interval) mean the same on both sides. An absolute deadline is on the
//! program's clocks, which are the host's read at boot and counted on from the guest TSC
//! (vm/host_clocks.rs), so they may drift from the host's by what the two counts differ. The
//! kernel passes its monotonic and real-time "now" with the call (kernel/src/linux/calls/
//! time.rs), and the deadline moves to the host clock of that timer by the difference, read
//! at the call: the timer then expires when the program's clock reaches the deadline (give or
//! take the microseconds the call took to arrive), and a real-time timer stays absolute on
//! the host, so `TFD_TIMER_CANCEL_ON_SET` still sees the host's clock being set.

use std::sync::Arc;

use super::errno::{Errno, SysResult};
use super::fd_table::HostFd;
use super::guest_mem::Guest;
use super::host::{int, ptr};
use super::Forwarder;

const TFD_TIMER_ABSTIME: u64 = 1;
const TFD_TIMER_CANCEL_ON_SET: u64 = 2;
const NS: i128 = 1_000_000_000;

/// `struct itimerspec`: interval, then value, each seconds and nanoseconds.
type ItimerSpec = [i64; 4];

/// The clocks a timerfd may count (Linux's list; the alarm clocks need CAP_WAKE_ALARM, which
/// the host checks).
fn valid_clock(clock: i32) -> bool {
    matches!(
        clock,
        libc::CLOCK_REALTIME
            | libc::CLOCK_MONOTONIC
            | libc::CLOCK_BOOTTIME
            | libc::CLOCK_REALTIME_ALARM
            | libc::CLOCK_BOOTTIME_ALARM
    )
}

/// The clock of host timerfd `fd`, from the host's fdinfo of it.
fn clock_of(fd: i32) -> SysResult<i32> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).map_err(|_| Errno::EINVAL)?;
    info.lines().find_map(|l| l.strip_prefix("clockid:").and_then(|v| v.trim().parse().ok())).ok_or(Errno::EINVAL)
}

/// The host's time on `clock`, in nanoseconds.
fn host_now(clock: i32) -> i128 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // The alarm clocks read as their base clocks.
    let base = match clock {
        libc::CLOCK_REALTIME_ALARM => libc::CLOCK_REALTIME,
        libc::CLOCK_BOOTTIME_ALARM => libc::CLOCK_BOOTTIME,
        c => c,
    };
    // SAFETY: `ts` is a valid timespec to write.
    unsafe { libc::clock_gettime(base, &mut ts) };
    ts.tv_sec as i128 * NS + ts.tv_nsec as i128
}

impl Forwarder {
    /// timerfd_create(clock, flags).
    pub(super) fn timerfd_create(&self, clock: u64, flags: u64) -> SysResult<i64> {
        let flags = int(flags);
        let cloexec = libc::TFD_CLOEXEC as libc::c_long;
        if !valid_clock(clock as i32)
            || clock >> 32 != 0
            || flags & !(cloexec | libc::TFD_NONBLOCK as libc::c_long) != 0
        {
            return Err(Errno::EINVAL);
        }
        // SAFETY: no pointer arguments.
        let fd = unsafe { self.sys(libc::SYS_timerfd_create, &[clock as i32 as libc::c_long, flags | cloexec])? };
        self.fds().insert(Arc::new(HostFd::owned(fd as i32, false)), flags & cloexec != 0, 0)
    }

    /// timerfd_settime(fd, flags, new, old) with the program's monotonic and real-time "now"
    /// (`guest_mono`, `guest_real`, nanoseconds) from its kernel.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn timerfd_settime(
        &self,
        g: Guest,
        fd: u64,
        flags: u64,
        new: u64,
        old: u64,
        guest_mono: u64,
        guest_real: u64,
    ) -> SysResult<i64> {
        // Linux's order: the new value read (EFAULT), the flags and the value checked (EINVAL),
        // then the descriptor (EBADF, EINVAL for another kind).
        let mut spec: ItimerSpec = g.read(new)?;
        if flags & !(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET) != 0 {
            return Err(Errno::EINVAL);
        }
        if spec.iter().any(|&v| v < 0) || spec[1] >= NS as i64 || spec[3] >= NS as i64 {
            return Err(Errno::EINVAL);
        }
        let h = self.fds().get(fd)?;
        let armed = spec[2] != 0 || spec[3] != 0;
        if flags & TFD_TIMER_ABSTIME != 0 && armed {
            let clock = clock_of(h.raw())?;
            let guest_now = match clock {
                libc::CLOCK_REALTIME | libc::CLOCK_REALTIME_ALARM => guest_real as i128,
                // The program's boot time is its monotonic time plus the host's difference
                // between the two (both were read together at boot).
                libc::CLOCK_BOOTTIME | libc::CLOCK_BOOTTIME_ALARM => {
                    guest_mono as i128 + host_now(libc::CLOCK_BOOTTIME) - host_now(libc::CLOCK_MONOTONIC)
                }
                _ => guest_mono as i128,
            };
            let deadline = spec[2] as i128 * NS + spec[3] as i128 - guest_now + host_now(clock);
            // A deadline already passed expires at once, as on Linux (0 would disarm).
            let deadline = deadline.clamp(1, i64::MAX as i128);
            spec[2] = (deadline / NS) as i64;
            spec[3] = (deadline % NS) as i64;
        }
        let mut before: ItimerSpec = [0; 4];
        // SAFETY: `spec` and `before` are itimerspecs of this frame.
        let r = unsafe {
            self.sys(
                libc::SYS_timerfd_settime,
                &[h.raw() as libc::c_long, int(flags), ptr(spec.as_ptr()), ptr(before.as_mut_ptr())],
            )?
        };
        // As Linux: the timer is set even when `old` is not writable (EFAULT then).
        if old != 0 {
            g.write(old, &before)?;
        }
        Ok(r)
    }

    /// timerfd_gettime(fd, value): time left and interval, the same on both sides.
    pub(super) fn timerfd_gettime(&self, g: Guest, fd: u64, value: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        let mut spec: ItimerSpec = [0; 4];
        // SAFETY: `spec` is an itimerspec of this frame.
        let r = unsafe { self.sys(libc::SYS_timerfd_gettime, &[h.raw() as libc::c_long, ptr(spec.as_mut_ptr())])? };
        g.write(value, &spec)?;
        Ok(r)
    }
}
