//! POSIX message queues, forwarded: the queues are the host's (its mqueue namespace, shared with
//! every process, under `hrt` or not) and a queue descriptor is a host descriptor in the
//! program's table, so `poll`, `epoll`, `close`, `dup` and `fork` treat it as any other.
//!
//! `mq_notify` registers the monitor's host process, which is the program's: a SIGEV_SIGNAL
//! notification arrives as a host signal and reaches the program with its SI_MESGQ code, sender
//! and value (vm/channel/host_siginfo.rs); SIGEV_THREAD (glibc's notification thread reads a
//! netlink socket) names the program's socket and cookie, both translated here.
//!
//! Checks as in `sysv_ipc.rs`: a pointer outside the program's memory goes to the host as one
//! that faults there, after the host's own argument checks (EMSGSIZE, EINVAL before EFAULT), and
//! a receive buffer shorter than `msg_len` works as natively (a buffer of the monitor's as large
//! as the queue's message size, then a checked copy).

use std::sync::Arc;

use super::errno::{Errno, SysResult};
use super::fd_table::HostFd;
use super::guest_mem::{Guest, PATH_MAX};
use super::host::{int, ptr, uint};
use super::sysv_ipc::{or_fault, FAULTS};
use super::Forwarder;

/// struct mq_attr (four longs and four reserved ones).
const MQ_ATTR: u64 = 64;
/// struct sigevent.
const SIGEVENT: u64 = 64;
const TIMESPEC: u64 = 16;
/// The cookie glibc's SIGEV_THREAD notification has the host send on its netlink socket.
const NOTIFY_COOKIE_LEN: u64 = 32;
const SIGEV_THREAD: i32 = 2;
/// The largest message a queue may hold on Linux (HARD_MSGSIZEMAX).
const MSGSIZE_MAX: u64 = 16 << 20;

/// NULL stays NULL (it means "none" to every call here); else the checked pointer.
fn optional(addr: u64, p: impl FnOnce() -> SysResult<*mut u8>) -> *mut u8 {
    if addr == 0 {
        std::ptr::null_mut()
    } else {
        or_fault(p())
    }
}

impl Forwarder {
    /// mq_open(name, oflag, mode, attr): the name without libc's leading slash.
    pub(super) fn mq_open(&self, g: Guest, name: u64, oflag: u64, mode: u64, attr: u64) -> SysResult<i64> {
        let name = g.read_cstr(name, PATH_MAX)?;
        let creates = int(oflag) & libc::O_CREAT as libc::c_long != 0;
        let a = if creates { optional(attr, || g.range(attr, MQ_ATTR)) } else { std::ptr::null_mut() };
        let cloexec = libc::O_CLOEXEC as libc::c_long;
        // SAFETY: a host C string and NULL or a checked (or faulting) mq_attr.
        let fd =
            unsafe { self.sys(libc::SYS_mq_open, &[ptr(name.as_ptr()), int(oflag) | cloexec, uint(mode), ptr(a)])? };
        // Close-on-exec whatever the flags say, as Linux's mq_open makes every queue descriptor.
        self.fds().insert(Arc::new(HostFd::owned(fd as i32, false)), true, 0)
    }

    pub(super) fn mq_unlink(&self, g: Guest, name: u64) -> SysResult<i64> {
        let name = g.read_cstr(name, PATH_MAX)?;
        // SAFETY: a host C string.
        unsafe { self.sys(libc::SYS_mq_unlink, &[ptr(name.as_ptr())]) }
    }

    /// mq_timedsend(fd, msg, len, prio, abs_timeout).
    pub(super) fn mq_timedsend(&self, g: Guest, a: &[u64; 6]) -> SysResult<i64> {
        self.mq_send_with(g, a, optional(a[4], || g.range(a[4], TIMESPEC)))
    }

    /// mq_timedsend or mq_timedreceive (`nr`) made now: with a time limit already past, a
    /// queue with room or a message answers at once and one without says ETIMEDOUT, which
    /// means the program's call waits (None). A timeout of the program's that Linux refuses
    /// (EINVAL, EFAULT: checked before anything else) is the call's own answer at once.
    pub(super) fn mq_now(&self, g: Guest, nr: libc::c_long, a: &[u64; 6]) -> Option<i64> {
        static PAST: libc::timespec = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // Checked before the descriptor, as Linux's `prepare_timeout` is.
        if a[4] != 0 {
            match g.read::<[i64; 2]>(a[4]) {
                Err(_) => return Some(-(libc::EFAULT as i64)),
                Ok([s, ns]) if s < 0 || !(0..1_000_000_000).contains(&ns) => return Some(-(libc::EINVAL as i64)),
                Ok(_) => {}
            }
        }
        let past = &PAST as *const libc::timespec as *mut u8;
        let r =
            if nr == libc::SYS_mq_timedsend { self.mq_send_with(g, a, past) } else { self.mq_receive_with(g, a, past) };
        match r {
            Err(Errno::ETIMEDOUT) => None,
            r => Some(super::errno::to_ret(r)),
        }
    }

    /// mq_timedsend with the time limit at host address `t` (NULL: none).
    fn mq_send_with(&self, g: Guest, a: &[u64; 6], t: *mut u8) -> SysResult<i64> {
        let h = self.fds().get(a[0])?;
        let msg = or_fault(g.range(a[1], a[2]));
        // SAFETY: the message and timeout are checked guest ranges, faulting pointers or NULL.
        unsafe {
            self.sys(
                libc::SYS_mq_timedsend,
                &[h.raw() as libc::c_long, ptr(msg), a[2] as libc::c_long, uint(a[3]), ptr(t)],
            )
        }
    }

    /// mq_timedreceive(fd, msg, len, prio, abs_timeout): writes the message and its priority.
    pub(super) fn mq_timedreceive(&self, g: Guest, a: &[u64; 6]) -> SysResult<i64> {
        self.mq_receive_with(g, a, optional(a[4], || g.range(a[4], TIMESPEC)))
    }

    /// mq_timedreceive with the time limit at host address `t` (NULL: none).
    fn mq_receive_with(&self, g: Guest, a: &[u64; 6], t: *mut u8) -> SysResult<i64> {
        let h = self.fds().get(a[0])?;
        let prio = optional(a[3], || g.range_mut(a[3], 4));
        let call = |msg: *mut u8, len: u64| {
            let args = [h.raw() as libc::c_long, ptr(msg), len as libc::c_long, ptr(prio), ptr(t)];
            // SAFETY: `msg` holds `len` bytes; the others are checked, faulting or NULL.
            unsafe { self.sys(libc::SYS_mq_timedreceive, &args) }
        };
        if let Ok(msg) = g.range_mut(a[1], a[2]) {
            return call(msg, a[2]);
        }
        // A buffer shorter than `len`: received here (no message is longer than the queue's
        // message size), then copied; EFAULT if it does not fit, the message gone as on Linux.
        let mut attr = [0i64; 8];
        // SAFETY: `attr` is an mq_attr of the monitor's.
        unsafe { self.sys(libc::SYS_mq_getsetattr, &[h.raw() as libc::c_long, 0, ptr(attr.as_mut_ptr())]) }?;
        let size = a[2].min(attr[2] as u64).min(MSGSIZE_MAX);
        if size < attr[2] as u64 {
            // Shorter than a message may be: EMSGSIZE, before any wait.
            return call(FAULTS as *mut u8, a[2]);
        }
        let mut buf = vec![0u8; size as usize];
        let n = call(buf.as_mut_ptr(), size)?;
        g.write_bytes(a[1], &buf[..n as usize])?;
        Ok(n)
    }

    /// mq_notify(fd, sigevent): NULL unregisters.
    pub(super) fn mq_notify(&self, g: Guest, fd: u64, sev: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        if sev == 0 {
            // SAFETY: no pointers.
            return unsafe { self.sys(libc::SYS_mq_notify, &[h.raw() as libc::c_long, 0]) };
        }
        let mut ev: [u8; SIGEVENT as usize] = g.read(sev)?;
        let word = |ev: &[u8], at: usize| i32::from_ne_bytes(ev[at..at + 4].try_into().unwrap_or([0; 4]));
        // The socket that holds the notification's socket, kept open over the call.
        let mut _sock = None;
        if word(&ev, 12) == SIGEV_THREAD {
            // sigev_signo is the netlink socket's descriptor, sigev_value the cookie's address.
            let sock = self.fds().get(word(&ev, 8) as u32 as u64)?;
            let cookie = u64::from_ne_bytes(ev[0..8].try_into().unwrap_or([0; 8]));
            let at = or_fault(g.range(cookie, NOTIFY_COOKIE_LEN)) as u64;
            ev[0..8].copy_from_slice(&at.to_ne_bytes());
            ev[8..12].copy_from_slice(&sock.raw().to_ne_bytes());
            _sock = Some(sock);
        }
        // SAFETY: `ev` is the monitor's sigevent; its cookie pointer is checked or faulting.
        unsafe { self.sys(libc::SYS_mq_notify, &[h.raw() as libc::c_long, ptr(ev.as_ptr())]) }
    }

    /// mq_getsetattr(fd, new, old).
    pub(super) fn mq_getsetattr(&self, g: Guest, fd: u64, new: u64, old: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        let n = optional(new, || g.range(new, MQ_ATTR));
        let o = optional(old, || g.range_mut(old, MQ_ATTR));
        // SAFETY: NULL, checked or faulting mq_attr pointers.
        unsafe { self.sys(libc::SYS_mq_getsetattr, &[h.raw() as libc::c_long, ptr(n), ptr(o)]) }
    }
}
