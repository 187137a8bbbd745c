//! Signalfds that come back in an SCM_RIGHTS message. The host sees a signalfd as the eventfd
//! behind it, so a message that carries one brings a new descriptor of that eventfd, which read
//! as an eventfd (8 bytes) unless it is known to be the signalfd: each descriptor a received
//! message brought is compared with the program's signalfds (`process::SAME_FILE`) and becomes
//! a duplicate of the one it shares its file with.
//!
//! Not alike: a signalfd made by another process (a forked child's, or one of another program)
//! is not known here and reads as an eventfd.

use hrt_abi::process as op;
use linux_raw_sys::general::__NR_recvmmsg;

use super::registry;
use crate::linux::syscall::forward;
use crate::linux::uaccess;

/// sizeof(struct mmsghdr) and sizeof(struct cmsghdr) on x86-64.
const MMSGHDR: u64 = 64;
const CMSG_HDR: u64 = 16;
/// Offsets of msg_control and msg_controllen in struct msghdr.
const CONTROL_AT: u64 = 32;
const CONTROLLEN_AT: u64 = 40;
const SOL_SOCKET: i32 = 1;
const SCM_RIGHTS: i32 = 1;

/// After a recvmsg (`nr`) or recvmmsg that answered `ret` (>= 0): the signalfds among the
/// descriptors its messages brought become known as such.
pub fn after_receive(nr: u64, a: &[u64; 6], ret: i64) {
    let messages = if nr == __NR_recvmmsg as u64 { ret as u64 } else { 1 };
    for i in 0..messages {
        let msghdr = a[1] + i * MMSGHDR;
        let (Ok(control), Ok(len)) =
            (uaccess::read::<u64>(msghdr + CONTROL_AT), uaccess::read::<u64>(msghdr + CONTROLLEN_AT))
        else {
            return;
        };
        for fd in rights(control, len) {
            recognize(fd);
        }
    }
}

/// The descriptors in the SCM_RIGHTS messages of the control data at `control` (`len` bytes,
/// as the call wrote it), walked as Linux's CMSG_NXTHDR walks it.
fn rights(control: u64, len: u64) -> alloc::vec::Vec<i32> {
    let mut fds = alloc::vec::Vec::new();
    let mut at = 0;
    while at + CMSG_HDR <= len {
        let (Ok(cmsg_len), Ok(level), Ok(kind)) = (
            uaccess::read::<u64>(control + at),
            uaccess::read::<i32>(control + at + 8),
            uaccess::read::<i32>(control + at + 12),
        ) else {
            break;
        };
        if cmsg_len < CMSG_HDR || cmsg_len > len - at {
            break;
        }
        if level == SOL_SOCKET && kind == SCM_RIGHTS {
            for k in 0..(cmsg_len - CMSG_HDR) / 4 {
                match uaccess::read::<i32>(control + at + CMSG_HDR + 4 * k) {
                    Ok(fd) => fds.push(fd),
                    Err(_) => break,
                }
            }
        }
        at += cmsg_len.next_multiple_of(8);
    }
    fds
}

/// Makes received descriptor `fd` a duplicate of the signalfd whose file it shares, if any.
fn recognize(fd: i32) {
    for fds in registry::objects_fds() {
        let Some(&known) = fds.first() else { continue };
        let tagged = crate::linux::calls::procs::tagged(op::SAME_FILE);
        match forward(tagged, [fd as u64, known as u64, 0, 0, 0, 0]) {
            1 => {
                registry::alias(known, fd);
                return;
            }
            0 => {}
            err => {
                say_once(err);
                return;
            }
        }
    }
}

/// The monitor could not compare descriptors (the host lacks kcmp): said once, as a received
/// signalfd then reads as an eventfd.
fn say_once(err: i64) {
    use core::sync::atomic::{AtomicBool, Ordering};
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        crate::kprintln!(
            "hrt: cannot tell a received descriptor from a signalfd (errno {}): a signalfd passed in an SCM_RIGHTS message reads as an eventfd (reported once)",
            -err
        );
    }
}
