//! epoll and eventfd: epoll_create, epoll_create1, epoll_ctl, epoll_wait, epoll_pwait,
//! epoll_pwait2, eventfd, eventfd2. Each epoll instance and eventfd is a host one behind a guest
//! descriptor. `epoll_ctl` names the watched descriptor by its host number; the event's data
//! word is the program's own and goes to the host and back unchanged, so `epoll_wait` writes
//! the host's events straight into the program's buffer (`struct epoll_event` is packed, 12
//! bytes, on the host as in the program).
//! Linux keys an interest list by file and descriptor number; guest fds that are dups of one
//! another have host descriptors of their own (fd_table.rs), so each can be added with its own
//! data word, as on Linux. `epoll_pwait2` waits with the host's `epoll_pwait2` and its
//! nanosecond timeout (on hosts before Linux 5.11, which lack it, with `epoll_wait` and the
//! timeout rounded up to milliseconds).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::errno::{Errno, SysResult};
use super::fd_table::{FdKind, HostFd};
use super::guest_mem::{Guest, USER_END};
use super::host::{int, ptr, restarting};
use super::poll::{check_sigmask, ms_left};
use super::Forwarder;

/// sizeof(struct epoll_event) on x86-64 (packed: u32 events, u64 data).
const EVENT_SIZE: u64 = 12;
/// Linux's EP_MAX_EVENTS: more is EINVAL.
const MAX_EVENTS: u64 = i32::MAX as u64 / EVENT_SIZE;
/// At most this many events per host call (a program asking for more gets them in later calls).
const EVENTS_PER_CALL: u64 = 1 << 16;

/// How long an epoll wait may wait.
#[derive(Clone, Copy)]
pub(super) enum Wait {
    /// epoll_wait and epoll_pwait: milliseconds, negative for no limit.
    Ms(u64),
    /// epoll_pwait2: a guest `struct timespec`, NULL for no limit.
    Timespec(u64),
}

/// The host has no `epoll_pwait2` (Linux before 5.11): found on the first try.
static PWAIT2_MISSING: AtomicBool = AtomicBool::new(false);

/// The host's timespec for a wait of `d`.
fn timespec(d: Duration) -> libc::timespec {
    libc::timespec { tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t, tv_nsec: d.subsec_nanos() as _ }
}

/// One host wait of at most `left` (None: no limit) to the nanosecond: `epoll_pwait2` for `n`
/// events into `p`, or, with no room for events, `ppoll` on the instance itself (`nowhere`).
/// Returns the host's answer (-1 with errno).
fn wait_precise(ep: i32, p: *mut u8, n: u64, nowhere: *mut libc::pollfd, left: Option<Duration>) -> libc::c_long {
    let ts = left.map(timespec);
    let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `p` covers `n` writable events of guest memory, `nowhere` is one pollfd, `tsp`
    // is null or points at `ts`; no signal mask is passed.
    unsafe {
        if n == 0 {
            libc::syscall(libc::SYS_ppoll, ptr(nowhere), 1, ptr(tsp), 0, 0)
        } else {
            libc::syscall(libc::SYS_epoll_pwait2, ep, ptr(p), n as libc::c_long, ptr(tsp), 0, 0)
        }
    }
}

impl Forwarder {
    pub(super) fn epoll_create(&self, size: u64) -> SysResult<i64> {
        if int(size) <= 0 {
            return Err(Errno::EINVAL);
        }
        self.epoll_create1(0)
    }

    pub(super) fn epoll_create1(&self, flags: u64) -> SysResult<i64> {
        let flags = int(flags);
        let cloexec = libc::EPOLL_CLOEXEC as libc::c_long;
        if flags & !cloexec != 0 {
            return Err(Errno::EINVAL);
        }
        // SAFETY: no pointer arguments.
        let fd = unsafe { self.sys(libc::SYS_epoll_create1, &[cloexec])? };
        self.fds().insert(Arc::new(HostFd::with_kind(fd as i32, FdKind::Epoll)), flags != 0, 0)
    }

    pub(super) fn epoll_ctl(&self, g: Guest, epfd: u64, op: u64, fd: u64, event: u64) -> SysResult<i64> {
        let op = int(op);
        // As Linux: the event is read first (EFAULT), except for EPOLL_CTL_DEL, which ignores it.
        let ev = if op == libc::EPOLL_CTL_DEL as libc::c_long {
            [0u8; EVENT_SIZE as usize]
        } else {
            g.read::<[u8; EVENT_SIZE as usize]>(event)?
        };
        let ep = self.fds().get(epfd)?;
        let target = self.fds().get(fd)?;
        let mut ev = ev;
        if target.is_signalfd() {
            // A signalfd is never writable (its eventfd is).
            let events = u32::from_ne_bytes(ev[..4].try_into().unwrap_or_default()) & !(libc::EPOLLOUT as u32);
            ev[..4].copy_from_slice(&events.to_ne_bytes());
        }
        // SAFETY: `ev` is a host copy of one epoll_event.
        unsafe {
            self.sys(
                libc::SYS_epoll_ctl,
                &[ep.raw() as libc::c_long, op, target.raw() as libc::c_long, ptr(ev.as_ptr())],
            )
        }
    }

    /// epoll_pwait and epoll_pwait2 (epoll_wait is epoll_pwait without a mask). The signal mask
    /// is checked as Linux checks it; the guest kernel applies it, as for ppoll.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn epoll_pwait(
        &self,
        g: Guest,
        epfd: u64,
        events: u64,
        maxevents: u64,
        wait: Wait,
        mask: u64,
        size: u64,
    ) -> SysResult<i64> {
        // Linux's order: the timeout, the mask, maxevents, the buffer's range, the descriptor.
        let limit = match wait {
            Wait::Ms(ms) => (int(ms) >= 0).then(|| Duration::from_millis(int(ms) as u64)),
            Wait::Timespec(0) => None,
            Wait::Timespec(addr) => {
                let t = g.read::<libc::timespec>(addr)?;
                if t.tv_sec < 0 || !(0..1_000_000_000).contains(&t.tv_nsec) {
                    return Err(Errno::EINVAL);
                }
                Some(Duration::new(t.tv_sec as u64, t.tv_nsec as u32))
            }
        };
        check_sigmask(g, mask, size)?;
        let max = int(maxevents);
        if max <= 0 || max as u64 > MAX_EVENTS {
            return Err(Errno::EINVAL);
        }
        let len = max as u64 * EVENT_SIZE;
        if events.checked_add(len).is_none_or(|end| end > USER_END) {
            return Err(Errno::EFAULT);
        }
        let ep = self.fds().get(epfd)?;
        if ep.kind() != FdKind::Epoll {
            return Err(Errno::EINVAL);
        }
        // Only as many events as the buffer's writable part holds: Linux's copy stops there too,
        // and an event the host hands over is never lost. With no room at all, Linux fails only
        // once an event is there to copy (EFAULT) and returns 0 when the time runs out: wait for
        // the instance to be readable (it is while it has events) and take none.
        let n = g.usable_len_mut(events, len).map_or(0, |u| u / EVENT_SIZE).min(EVENTS_PER_CALL);
        let p = g.range_mut(events, n * EVENT_SIZE)?;
        let mut nowhere = libc::pollfd { fd: ep.raw(), events: libc::POLLIN, revents: 0 };
        let nowhere = std::ptr::addr_of_mut!(nowhere);
        let deadline = limit.map(|d| Instant::now().checked_add(d));
        let precise = matches!(wait, Wait::Timespec(_)) && !PWAIT2_MISSING.load(Ordering::Relaxed);
        // Restarted after a signal aimed at the monitor with the time left.
        let got = restarting(&self.stopping, || {
            if precise {
                let left = match deadline {
                    None => None,
                    Some(None) => Some(Duration::from_millis(i32::MAX as u64)),
                    Some(Some(d)) => Some(d.saturating_duration_since(Instant::now())),
                };
                let ret = wait_precise(ep.raw(), p, n, nowhere, left);
                if ret >= 0 || Errno::last() != Errno::ENOSYS {
                    return ret;
                }
                PWAIT2_MISSING.store(true, Ordering::Relaxed);
            }
            let ms = match deadline {
                None => -1,
                Some(None) => i32::MAX as libc::c_long,
                Some(Some(d)) => ms_left(d),
            };
            // SAFETY: `p` covers `n` writable events of guest memory; `nowhere` is one pollfd.
            unsafe {
                if n == 0 {
                    libc::syscall(libc::SYS_poll, ptr(nowhere), 1, ms)
                } else {
                    libc::syscall(libc::SYS_epoll_wait, ep.raw(), ptr(p), n as libc::c_long, ms)
                }
            }
        })?;
        if n == 0 && got > 0 {
            return Err(Errno::EFAULT);
        }
        Ok(got)
    }

    /// `process::SIGNALFD_EVENTFD`: an eventfd that stands for a signalfd (kernel/src/linux/
    /// signalfd), known as one here.
    pub(super) fn signalfd_eventfd(&self, flags: u64) -> SysResult<i64> {
        let flags = int(flags);
        let cloexec = libc::EFD_CLOEXEC as libc::c_long;
        if flags & !(cloexec | libc::EFD_NONBLOCK as libc::c_long) != 0 {
            return Err(Errno::EINVAL);
        }
        // SAFETY: no pointer arguments.
        let fd = unsafe { self.sys(libc::SYS_eventfd2, &[0, flags | cloexec])? };
        self.fds().insert(Arc::new(HostFd::owned(fd as i32, false).for_signalfd()), flags & cloexec != 0, 0)
    }

    pub(super) fn eventfd2(&self, count: u64, flags: u64) -> SysResult<i64> {
        let flags = int(flags);
        let cloexec = libc::EFD_CLOEXEC as libc::c_long;
        if flags & !(cloexec | (libc::EFD_NONBLOCK | libc::EFD_SEMAPHORE) as libc::c_long) != 0 {
            return Err(Errno::EINVAL);
        }
        // SAFETY: no pointer arguments. The counter's start is an unsigned int.
        let fd = unsafe { self.sys(libc::SYS_eventfd2, &[count as u32 as libc::c_long, flags | cloexec])? };
        self.fds().insert(Arc::new(HostFd::owned(fd as i32, false)), flags & cloexec != 0, 0)
    }
}
