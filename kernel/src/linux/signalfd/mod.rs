//! signalfd: a descriptor that reads the program's pending signals as `signalfd_siginfo`
//! records.
//!
//! Signals are the guest kernel's business, but a signalfd must be pollable beside host
//! descriptors: `poll`, `select` and `epoll_wait` are performed by the host, and a program
//! puts a signalfd into the same epoll set as its sockets and pipes. So each signalfd is a host
//! eventfd (made by the monitor, `process::SIGNALFD_EVENTFD`, which knows it for one: never
//! writable to `poll`, its link `anon_inode:[signalfd]`; a descriptor of the program's table like any
//! other: `dup`, `close`, `fcntl`, `FD_CLOEXEC`, `O_NONBLOCK` are the host's) that the kernel
//! keeps readable while a signal of its mask is pending:
//! - `registry` records which of the program's descriptors are signalfds, with their masks
//!   (one object per `signalfd` call, shared by its duplicates);
//! - when a signal becomes pending (`signal::state::send_*`, which runs in any context, the
//!   host-signal interrupt included) `pending_added` wakes the `notify` kernel thread, which
//!   writes 1 to the eventfd of each signalfd whose mask has a pending signal (through a scratch
//!   page of program memory, as the forwarder reads only that);
//! - `read` of a signalfd is served here (`intercept`): it takes pending signals of the mask
//!   (the calling thread's, then the process's, as Linux dequeues them), and once none is left
//!   empties the eventfd; with none pending it answers EAGAIN under `O_NONBLOCK`, else waits in
//!   a host `ppoll` on the eventfd, which a signal with a handler interrupts as any host call.
//!
//! - a signal taken another way (a handler, `sigwaitinfo`, another signalfd's read, a discard)
//!   wakes the notifier too (`pending_removed`), which empties the eventfd of each signalfd
//!   left with nothing to read; the caller's next forwarded call (a `poll`) or local call
//!   settles that first.
//!
//! Not alike: readiness is the process's (a signal pending for another thread makes the
//! descriptor readable, where Linux looks at the polling thread's own); writes are EINVAL, as Linux's; `fstat` and
//! fdinfo show an eventfd;
//! `readv` reads the eventfd itself; a host child (`--children host`) inherits an eventfd; a
//! signalfd received in an SCM_RIGHTS message is one only if this process made it (`received`).

mod notify;
mod read;
mod received;
mod registry;

use core::sync::atomic::Ordering;

use linux_raw_sys::general::{
    __NR_close, __NR_close_range, __NR_dup, __NR_dup2, __NR_dup3, __NR_fcntl, __NR_pwrite64, __NR_pwritev,
    __NR_pwritev2, __NR_read, __NR_recvmmsg, __NR_recvmsg, __NR_write, __NR_writev,
};

pub use notify::{after_fork, after_local_call, pending_added, pending_removed};
pub use read::{signalfd, signalfd4};

const F_DUPFD: u64 = 0;
const F_DUPFD_CLOEXEC: u64 = 1030;
const CLOSE_RANGE_CLOEXEC: u64 = 4;

/// Before forwarded call `nr`: the answer, if this module serves it (a read of a signalfd);
/// forgets a signalfd descriptor that `close` or `close_range` is about to close (`dup2` and
/// `dup3` replace theirs only if they succeed: `after_forward`).
#[allow(non_upper_case_globals)] // linux-raw-sys names the numbers __NR_read etc.
pub fn intercept(nr: u64, a: &[u64; 6]) -> Option<i64> {
    if registry::LIVE.load(Ordering::Relaxed) == 0 {
        return None;
    }
    notify::ensure_started();
    // Readiness a handler or `sigtimedwait` changed, settled before the host looks (a poll).
    notify::sync_now();
    match nr as u32 {
        __NR_read if registry::mask_of(a[0] as i32).is_some() => {
            Some(crate::linux::errno::to_ret(read::read(a[0] as i32, a[1], a[2])))
        }
        // A signalfd cannot be written (Linux has no write for it); the eventfd under it could.
        __NR_write | __NR_writev | __NR_pwrite64 | __NR_pwritev | __NR_pwritev2
            if registry::mask_of(a[0] as i32).is_some() =>
        {
            Some(-(crate::linux::errno::EINVAL as i64))
        }
        __NR_close => {
            registry::forget(a[0] as i32);
            None
        }
        __NR_close_range if a[2] & !6 == 0 && a[2] & CLOSE_RANGE_CLOEXEC == 0 && a[0] as u32 <= a[1] as u32 => {
            for fd in registry::all_fds() {
                if (a[0] as u32..=a[1] as u32).contains(&(fd as u32)) {
                    registry::forget(fd);
                }
            }
            None
        }
        _ => None,
    }
}

/// After forwarded call `nr` answered `ret`: a duplicate of a signalfd is one too, also one
/// that came back in an SCM_RIGHTS message.
#[allow(non_upper_case_globals)]
pub fn after_forward(nr: u64, a: &[u64; 6], ret: i64) {
    if registry::LIVE.load(Ordering::Relaxed) == 0 || ret < 0 {
        return;
    }
    let new = match nr as u32 {
        __NR_recvmsg | __NR_recvmmsg => return received::after_receive(nr, a, ret),
        __NR_dup => ret,
        __NR_dup2 | __NR_dup3 if a[0] == a[1] => return,
        // The target was closed and replaced: whatever it was, it is the source's now. (A
        // failed dup2, EBADF for a closed source, leaves it as it was.)
        __NR_dup2 | __NR_dup3 => {
            registry::forget(a[1] as i32);
            a[1] as i64
        }
        __NR_fcntl if a[1] == F_DUPFD || a[1] == F_DUPFD_CLOEXEC => ret,
        _ => return,
    };
    registry::alias(a[0] as i32, new as i32);
}

/// After an execve: the host closed the `FD_CLOEXEC` descriptors; their signalfds go.
pub fn after_exec() {
    for fd in registry::all_fds() {
        if crate::linux::syscall::forward(__NR_fcntl as u64, [fd as u64, 1, 0, 0, 0, 0]) < 0 {
            registry::forget(fd);
        }
    }
}
