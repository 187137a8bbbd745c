//! `signalfd`/`signalfd4` and `read` of a signalfd.

use linux_raw_sys::general::{__NR_fcntl, __NR_ppoll, __NR_read};

use super::notify::poke;
use super::registry;
use crate::arch::traps::TrapFrame;
use crate::linux::errno::{SysResult, EAGAIN, EBADF, EFAULT, EINVAL};
use crate::linux::signal::state::{pending_anywhere, take_for};
use crate::linux::signal::{SigInfo, SI_TIMER, SI_USER, UNBLOCKABLE};
use crate::linux::syscall::forward;
use crate::linux::uaccess;
use crate::linux::usermem::with_scratch;

const SFD_NONBLOCK: u64 = 0o4000;
const SFD_CLOEXEC: u64 = 0o2000000;
/// sizeof(struct signalfd_siginfo).
const RECORD: u64 = 128;
const SIGCHLD: i32 = 17;
const POLLIN: u64 = 1;

fn result(r: i64) -> SysResult {
    if r < 0 {
        Err((-r) as u32)
    } else {
        Ok(r as u64)
    }
}

/// signalfd(fd, mask, sizemask): signalfd4 without flags.
pub fn signalfd(frame: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    signalfd4(frame, [a[0], a[1], a[2], 0, 0, 0])
}

/// signalfd4(fd, mask, sizemask, flags): a new signalfd (fd -1) or a new mask for one.
pub fn signalfd4(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (fd, mask, size, flags) = (a[0] as i32, a[1], a[2], a[3]);
    if size != 8 || flags & !(SFD_NONBLOCK | SFD_CLOEXEC) != 0 {
        return Err(EINVAL);
    }
    let mask = uaccess::read::<u64>(mask)? & !UNBLOCKABLE;
    if fd == -1 {
        let new = result(forward(hrt_abi::process::SIGNALFD_EVENTFD, [flags, 0, 0, 0, 0, 0]))?;
        registry::create(new as i32, mask);
        super::notify::ensure_started();
        poke();
        return Ok(new);
    }
    if registry::set_mask(fd, mask) {
        poke();
        return Ok(fd as u64);
    }
    // Not a signalfd: EBADF if it is no descriptor at all.
    result(forward(__NR_fcntl as u64, [fd as u64, 1, 0, 0, 0, 0]))?;
    Err(EINVAL)
}

/// read(fd, buf, len) of signalfd `fd`: as many pending signals of its mask as `len` holds
/// records, at least one (waiting for it unless O_NONBLOCK).
pub fn read(fd: i32, buf: u64, len: u64) -> SysResult {
    if len < RECORD {
        return Err(EINVAL);
    }
    let room = len / RECORD;
    uaccess::check_write(buf, room * RECORD).and(uaccess::still_there(buf, room * RECORD)).map_err(|_| EFAULT)?;
    let tid = crate::linux::process::current_tid();
    // Whether the fcntl below, which made the monitor pass on the signals another process sent
    // so far (a forwarded call of a thread that blocks them), was followed by another look.
    let mut looked_again = false;
    loop {
        let mask = registry::mask_of(fd).ok_or(EBADF)?;
        let mut n = 0;
        while n < room {
            let Some(info) = take_for(tid, mask) else { break };
            uaccess::write_bytes(buf + n * RECORD, &record(&info))?;
            n += 1;
        }
        settle(fd);
        if n > 0 {
            // Other signalfds of the same signals may have nothing left now.
            super::notify::pending_removed(mask);
            return Ok(n * RECORD);
        }
        let fl = result(forward(__NR_fcntl as u64, [fd as u64, 3, 0, 0, 0, 0]))?;
        if fl & SFD_NONBLOCK != 0 {
            if looked_again {
                return Err(EAGAIN);
            }
            looked_again = true;
            continue;
        }
        // Wait until the eventfd is readable; a signal with a handler interrupts the wait as
        // it interrupts any host call (ERESTARTSYS: restarted under SA_RESTART).
        result(poll(fd, true))?;
    }
}

/// Whether signalfd `fd`'s eventfd is readable now (`wait`: once it is).
fn poll(fd: i32, wait: bool) -> i64 {
    with_scratch(|page| {
        // SAFETY: `page` is a fresh page of program memory that only we know: a pollfd, then a
        // zero timespec.
        unsafe {
            (page as *mut u64).write(fd as u32 as u64 | POLLIN << 32);
            ((page + 16) as *mut [u64; 2]).write([0, 0]);
        }
        let timeout = if wait { 0 } else { page + 16 };
        forward(__NR_ppoll as u64, [page, 1, timeout, 0, 8, 0])
    })
}

/// Empties signalfd `fd`'s eventfd (not readable afterwards). Under `notify::exclusively`.
pub(super) fn empty(fd: i32) {
    if poll(fd, false) > 0 {
        let _ = with_scratch(|page| forward(__NR_read as u64, [fd as u64, page, 8, 0, 0, 0]));
    }
}

/// After a read: once no signal of the mask is pending, the eventfd is emptied (and armed
/// again if one became pending meanwhile).
fn settle(fd: i32) {
    let Some(mask) = registry::mask_of(fd) else { return };
    let emptied = super::notify::exclusively(|| {
        if !registry::disarm_if_idle(fd, pending_anywhere()) {
            return false;
        }
        empty(fd);
        true
    });
    if emptied && pending_anywhere() & mask != 0 {
        registry::rearm(fd);
        poke();
    }
}

/// The `struct signalfd_siginfo` of `i`, filled as Linux fills it for the signal's kind. A
/// SIGCHLD the host raised gets the child's information, looked at without reaping it, as
/// Linux's SIGCHLD carries it (util-linux's `script` waits for its child only on CLD_EXITED or
/// CLD_KILLED): all of it for one without (SI_USER from pid 0), the CPU times (which the host's
/// siginfo had but the monitor does not pass on) for one with CLD_* and that child's pid.
fn record(i: &SigInfo) -> [u8; RECORD as usize] {
    let from_host = i.code == SI_USER && i.w16 == 0 || (1..=6).contains(&i.code);
    if i.signo == SIGCHLD && from_host {
        let same_child = |child: &[u8]| i.code == SI_USER || child[16..20] == (i.w16 as u32).to_le_bytes();
        if let Some(child) = crate::linux::calls::procs::peek_child_change().filter(|c| same_child(c)) {
            let mut r = [0u8; RECORD as usize];
            r[0..4].copy_from_slice(&i.signo.to_le_bytes());
            r[8..12].copy_from_slice(&child[8..12]); // ssi_code: CLD_*
            r[12..20].copy_from_slice(&child[16..24]); // ssi_pid, ssi_uid
            r[40..44].copy_from_slice(&child[24..28]); // ssi_status
            r[56..64].copy_from_slice(&child[32..40]); // ssi_utime
            r[64..72].copy_from_slice(&child[40..48]); // ssi_stime
            return r;
        }
    }
    let mut r = [0u8; RECORD as usize];
    let mut put = |off: usize, bytes: &[u8]| r[off..off + bytes.len()].copy_from_slice(bytes);
    put(0, &i.signo.to_le_bytes());
    put(4, &i.errno.to_le_bytes());
    put(8, &i.code.to_le_bytes());
    let (lo, hi) = (i.w16 as u32, (i.w16 >> 32) as u32);
    let fault = matches!(i.signo, 4 | 5 | 7 | 8 | 11);
    // Linux's `siginfo_layout`: a kernel code (1-6) of a signal without codes of its own, and
    // SI_SIGIO, are SIGPOLL's (band, fd).
    const SI_SIGIO: i32 = -5;
    let poll = i.code == SI_SIGIO || (1..=6).contains(&i.code) && !fault && !matches!(i.signo, SIGCHLD | 31);
    if i.code == SI_TIMER {
        put(24, &lo.to_le_bytes()); // ssi_tid: the timer's id
        put(32, &hi.to_le_bytes()); // ssi_overrun
        put(44, &(i.w24 as u32).to_le_bytes()); // ssi_int
        put(48, &i.w24.to_le_bytes()); // ssi_ptr
    } else if i.code > 0 && i.code < 0x80 && fault {
        put(72, &i.w16.to_le_bytes()); // ssi_addr
        if i.signo == 7 && matches!(i.code, 4 | 5) {
            put(80, &(i.w24 as u16).to_le_bytes()); // ssi_addr_lsb of BUS_MCEERR_AR/AO
        }
    } else if poll {
        put(28, &(i.w16 as u32).to_le_bytes()); // ssi_band
        put(20, &(i.w24 as u32).to_le_bytes()); // ssi_fd
    } else {
        put(12, &lo.to_le_bytes()); // ssi_pid
        put(16, &hi.to_le_bytes()); // ssi_uid
        if i.code > 0 && i.code < 0x80 && i.signo == SIGCHLD {
            put(40, &(i.w24 as u32).to_le_bytes()); // ssi_status
            put(56, &i.w32[0].to_le_bytes()); // ssi_utime
            put(64, &i.w32[1].to_le_bytes()); // ssi_stime
        } else if i.code < 0 {
            put(44, &(i.w24 as u32).to_le_bytes()); // ssi_int
            put(48, &i.w24.to_le_bytes()); // ssi_ptr
        }
    }
    r
}
