//! Which forwarded calls may block on the host for as long as another party pleases (a read
//! from an idle pipe or terminal, a poll, a lock wait, opening a FIFO). The channel's polling
//! service thread performs every other call itself and hands these to threads of their own, so
//! one blocked call never stops the others (see vm/channel). Before it hands a read or a
//! write on a pipe or socket over, it tries it without waiting (`RWF_NOWAIT`; for the socket
//! calls, MSG_DONTWAIT; for poll, ppoll, select and epoll waits, a zero timeout; for System V
//! semaphores and messages, IPC_NOWAIT; for POSIX message queues, a time limit already past):
//! data that is already there,
//! room in the pipe, or a descriptor ready costs no hand-off. A blocking send or write on a
//! stream socket, or a blocking write of more than PIPE_BUF bytes to a pipe, sends what fits at
//! once and hands only the rest over (`Tried::Sent`).

use super::errno::{Errno, SysResult};
use super::fd_table::FdKind;
use super::guest_mem::{Guest, GuestMemory};
use super::io::MAX_RW_COUNT;
use super::Forwarder;

/// A pipe write of at most this many bytes is atomic: a non-waiting attempt writes all of it or
/// nothing (EAGAIN), never part.
const PIPE_BUF: u64 = 4096;

/// What trying a call that may wait found (`Forwarder::try_without_waiting`).
#[derive(Debug, PartialEq, Eq)]
pub enum Tried {
    /// Its answer.
    Done(i64),
    /// It would wait: a worker thread makes it (after the channel tried it again for a moment,
    /// where `worth_retrying`).
    Waits,
    /// It cannot be tried without waiting (a FIFO that takes no RWF_NOWAIT, a large writev, a
    /// call with MSG_WAITALL, one no try exists for): a worker thread makes it at once.
    Untried,
    /// A blocking send on a stream socket sent `sent` bytes at once and would wait for room for
    /// the rest: a worker makes the call `rest` (the same call for the bytes left), and the
    /// answer is `sent` plus what that sends, or `sent` if it fails or a signal interrupts it
    /// (a blocking send interrupted after some bytes answers those, as on Linux).
    Sent { sent: i64, rest: [u64; 6] },
    /// A blocking `writev` of more than PIPE_BUF bytes to a pipe wrote `sent` bytes at once and
    /// would wait for room for the rest, which is no single call: the rest of the iovec the
    /// part ended in, then the iovecs after it. A worker makes them (`writev_tail`, `rest`:
    /// fd, that rest's address and length, the next iovec's address and the count left), and
    /// the answer is `sent` plus what they write, as for `Sent`.
    SentWritev { sent: i64, rest: [u64; 6] },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Read,
    Write,
}

/// The longest write to a terminal the polling thread makes itself when the terminal polls
/// writable (`write_may_wait`): within the one buffer chunk (up to 2 KiB, twice this with
/// ONLCR's "\r\n") that Linux's POLLOUT promises room for.
const TERMINAL_INLINE_WRITE: u64 = 1024;

impl Forwarder {
    /// True if forwarded call `nr` with `args` may wait on the host for an unbounded time.
    /// Errs on the side of "may block": the cost of a wrong "yes" is a thread hand-off.
    pub fn may_block(&self, nr: u64, args: &[u64; 6]) -> bool {
        self.in_context(nr, |nr| self.may_block_in(nr, args)).unwrap_or(false)
    }

    fn may_block_in(&self, nr: u64, args: &[u64; 6]) -> bool {
        use hrt_abi::process as op;
        // Starting a host program waits for its exec; waiting for a child waits for it.
        if nr == op::EXEC || nr == op::WAIT4 && args[2] & libc::WNOHANG as u64 == 0 || nr == op::WAITID {
            return true;
        }
        // A futex wait on shared memory waits for another process.
        if nr == op::SHARED_FUTEX {
            return args[1] == 0;
        }
        let Ok(nr) = libc::c_long::try_from(nr) else { return false };
        match nr {
            libc::SYS_read | libc::SYS_readv | libc::SYS_pread64 | libc::SYS_preadv | libc::SYS_preadv2 => {
                self.may_wait(args[0])
            }
            libc::SYS_write | libc::SYS_pwrite64 => self.write_may_wait(args[0], args[2]),
            libc::SYS_writev
            | libc::SYS_pwritev
            | libc::SYS_pwritev2
            | libc::SYS_ftruncate
            | libc::SYS_fsync
            | libc::SYS_fdatasync => self.may_wait(args[0]),
            // sendfile(out, in, ..); tee(in, out, ..); copy_file_range and splice (in, off, out, ..).
            libc::SYS_sendfile => self.may_wait(args[0]) || self.may_wait(args[1]),
            libc::SYS_tee => self.may_wait(args[0]) || self.may_wait(args[1]),
            // vmsplice into a full pipe waits for room (io.rs), out of an empty one for bytes:
            // made on the polling service thread, its wait held every other call up.
            libc::SYS_vmsplice => self.may_wait(args[0]),
            libc::SYS_copy_file_range | libc::SYS_splice => self.may_wait(args[0]) || self.may_wait(args[2]),
            libc::SYS_fcntl => matches!(args[1] as i32, libc::F_SETLKW | libc::F_OFD_SETLKW),
            // System V semaphores and messages wait unless told not to (a semop's flags are in its
            // array: tried first, `semop_now`).
            libc::SYS_semop | libc::SYS_semtimedop => true,
            libc::SYS_msgsnd => args[3] & libc::IPC_NOWAIT as u64 == 0,
            libc::SYS_msgrcv => args[4] & libc::IPC_NOWAIT as u64 == 0,
            // A POSIX message queue waits unless it is non-blocking (O_NONBLOCK, mq_setattr).
            libc::SYS_mq_timedsend | libc::SYS_mq_timedreceive => !self.nonblocking(args[0]),
            // Opening a FIFO waits for its other end.
            libc::SYS_open | libc::SYS_openat | libc::SYS_openat2 | libc::SYS_creat => true,
            // An epoll wait with a zero timeout only looks.
            libc::SYS_epoll_wait | libc::SYS_epoll_pwait => super::host::int(args[3]) != 0,
            libc::SYS_poll
            | libc::SYS_ppoll
            | libc::SYS_select
            | libc::SYS_pselect6
            | libc::SYS_epoll_pwait2
            | libc::SYS_flock
            | libc::SYS_accept
            | libc::SYS_accept4
            | libc::SYS_connect
            | libc::SYS_recvfrom
            | libc::SYS_recvmsg
            | libc::SYS_recvmmsg
            | libc::SYS_sendto
            | libc::SYS_sendmsg
            | libc::SYS_sendmmsg
            | libc::SYS_wait4
            | libc::SYS_waitid => true,
            _ => false,
        }
    }

    /// Whether a call `may_block` said may wait, and that `try_without_waiting` found waiting,
    /// is worth trying again for a moment before a worker takes it (vm/channel/retries.rs):
    /// reads and writes of pipes and sockets, and polls without a time limit, whose waits are
    /// often short (the other side of the pipe or socket answers). Not the waits for a child,
    /// a lock, a connection or a FIFO's other end, nor polls with a time limit (each try
    /// would add to the time they wait).
    pub fn worth_retrying(&self, nr: u64, args: &[u64; 6]) -> bool {
        self.in_context(nr, |nr| {
            let Ok(nr) = libc::c_long::try_from(nr) else { return false };
            let streams = |fd: u64| self.fds().get(fd).is_ok_and(|h| matches!(h.kind(), FdKind::Pipe | FdKind::Socket));
            match nr {
                libc::SYS_read
                | libc::SYS_readv
                | libc::SYS_write
                | libc::SYS_writev
                | libc::SYS_recvfrom
                | libc::SYS_recvmsg
                | libc::SYS_sendto
                | libc::SYS_sendmsg => streams(args[0]),
                libc::SYS_poll => super::host::int(args[2]) < 0,
                libc::SYS_epoll_wait | libc::SYS_epoll_pwait => super::host::int(args[3]) < 0,
                _ => false,
            }
        })
        .unwrap_or(false)
    }

    /// Whether a write of `len` bytes to the program's descriptor `fd` may wait. To a
    /// terminal: not if it is short and the terminal polls writable, which on Linux means its
    /// buffer takes at least one more chunk (a pseudo-terminal's peer port has room, output
    /// is not stopped with ^S). Such writes are made by the polling thread itself (~15 us
    /// under hrt, a hand-off ~100 us); a longer one, or one to a full terminal, goes to a
    /// worker, since the polling thread blocked in it served nothing else: a program
    /// that writes 8 KiB at a time into a pseudo-terminal it reads itself (libuv's
    /// tty_pty_partial test) hung for good, every forwarded call waiting behind the write.
    fn write_may_wait(&self, fd: u64, len: u64) -> bool {
        let Ok(host) = self.fds().get(fd) else { return false };
        if host.kind() != FdKind::Terminal {
            return self.may_wait(fd);
        }
        if len > TERMINAL_INLINE_WRITE {
            return true;
        }
        let mut p = libc::pollfd { fd: host.raw(), events: libc::POLLOUT, revents: 0 };
        // SAFETY: one pollfd of our own, a zero timeout.
        let ready = unsafe { libc::poll(&mut p, 1, 0) } == 1;
        !(ready && p.revents & libc::POLLOUT != 0)
    }

    /// Whether I/O on the program's descriptor `fd` may wait for another party.
    /// Unknown descriptors are EBADF, which is quick.
    fn may_wait(&self, fd: u64) -> bool {
        let Ok(host) = self.fds().get(fd) else { return false };
        match host.kind() {
            FdKind::Quick | FdKind::Epoll => false,
            // Reads wait for the user; writes to a terminal that cannot take them wait for its
            // reader (`write_may_wait`).
            FdKind::Terminal => true,
            FdKind::Pipe | FdKind::Socket | FdKind::Other => true,
        }
    }

    /// For a call `may_block` said may wait: performs it now if it can finish without waiting
    /// (a `read` of a pipe or socket that holds data or is at its end, a `write` to a pipe with
    /// room for it, a send on a stream socket with room, an open of a regular file or
    /// directory); or the part of a stream send or large pipe write that fits now.
    pub fn try_without_waiting(&self, mem: &dyn GuestMemory, nr: u64, args: &[u64; 6]) -> Tried {
        super::before_call();
        let tried = self.in_context(nr, |call| {
            let g = Guest::new(mem);
            match self
                .stream_send_without_waiting(g, call, args)
                .or_else(|| self.pipe_write_without_waiting(g, call, args))
                .or_else(|| self.pipe_writev_without_waiting(g, call, args))
            {
                Some(t) => t,
                None => self.try_in_context(mem, call, args),
            }
        });
        tried.unwrap_or(Tried::Untried)
    }

    /// A blocking `write` of more than PIPE_BUF bytes to a pipe: Linux does not keep it in one
    /// piece (other writers' data may come between its parts, and a signal may end it after a
    /// part), so the part that fits now is written at once and only the rest goes to a worker
    /// (`Tried::Sent`, as a stream send). All of it fitting, as while the reader keeps up, costs
    /// no hand-off: every 8 KiB write of `dd | cat` went to a worker thread before (~40 us each,
    /// 0.55 s against Linux's 0.02 for 100 MiB). A non-blocking pipe answers the part or
    /// EAGAIN, as the program's own write does.
    fn pipe_write_without_waiting(&self, g: Guest, nr: u64, a: &[u64; 6]) -> Option<Tried> {
        if libc::c_long::try_from(nr).ok()? != libc::SYS_write || a[2] <= PIPE_BUF {
            return None;
        }
        if self.fds().get(a[0]).ok()?.kind() != FdKind::Pipe {
            return None;
        }
        let blocking = !self.nonblocking(a[0]);
        Some(match self.nowait(g, a[0], a[1], a[2], Direction::Write) {
            Ok(n) if blocking && n > 0 && (n as u64) < a[2].min(MAX_RW_COUNT) => {
                let mut rest = *a;
                (rest[1], rest[2]) = (a[1] + n as u64, a[2] - n as u64);
                Tried::Sent { sent: n, rest }
            }
            // Full: a worker waits for room (after the channel tried again for a moment).
            Err(Errno::EAGAIN) if blocking => Tried::Waits,
            // A FIFO that takes no RWF_NOWAIT.
            Err(Errno::EOPNOTSUPP) => Tried::Untried,
            done => Tried::Done(super::errno::to_ret(done)),
        })
    }

    /// A blocking `writev` of more than PIPE_BUF bytes in all to a pipe, as `pipe_write_without_waiting`
    /// for `write`: the part that fits now, the rest to a worker (`Tried::SentWritev`). musl's
    /// stdio writes its buffer and a large `fwrite`'s data with one `writev`: each went to a
    /// worker (16 KiB `writev`s into `| cat`: 0.61 s against Linux's 0.03).
    fn pipe_writev_without_waiting(&self, g: Guest, nr: u64, a: &[u64; 6]) -> Option<Tried> {
        if libc::c_long::try_from(nr).ok()? != libc::SYS_writev {
            return None;
        }
        if self.fds().get(a[0]).ok()?.kind() != FdKind::Pipe {
            return None;
        }
        let iovecs = super::io::guest_iovecs(g, a[1], a[2]).ok()?;
        let total = iovecs.iter().try_fold(0u64, |sum, v| sum.checked_add(v.len))?;
        if total <= PIPE_BUF || total > MAX_RW_COUNT {
            return None;
        }
        let blocking = !self.nonblocking(a[0]);
        // Offset -1: the current position.
        let tried = self.rwv(g, libc::SYS_pwritev2, a[0], a[1], a[2], [u64::MAX, u64::MAX], libc::RWF_NOWAIT as u64);
        Some(match tried {
            Ok(n) if blocking && n > 0 && (n as u64) < total => {
                // Where the part ended: iovec `k`, `off` bytes into it.
                let (mut k, mut before) = (0usize, 0u64);
                while k < iovecs.len() && before + iovecs[k].len <= n as u64 {
                    before += iovecs[k].len;
                    k += 1;
                }
                let Some(v) = iovecs.get(k) else { return Some(Tried::Done(n)) };
                let off = n as u64 - before;
                let next = a[1] + (k as u64 + 1) * std::mem::size_of::<super::io::GuestIovec>() as u64;
                let left = a[2] - k as u64 - 1;
                Tried::SentWritev { sent: n, rest: [a[0], v.base + off, v.len - off, next, left, 0] }
            }
            Err(Errno::EAGAIN) if blocking => Tried::Waits,
            Err(Errno::EOPNOTSUPP) => Tried::Untried,
            done => Tried::Done(super::errno::to_ret(done)),
        })
    }

    /// The rest of a `writev` (`Tried::SentWritev`), in a worker: the rest of the iovec the first
    /// part ended in, then the iovecs after it, each waiting for room as the program's call
    /// would; the bytes written (stopping at the first short write or error), or the error if
    /// none was.
    pub fn writev_tail(&self, mem: &dyn GuestMemory, nr: u64, rest: &[u64; 6]) -> i64 {
        let g = Guest::new(mem);
        let done = self.in_context(nr, |_| {
            let first = self.dispatch(g, libc::SYS_write as u64, &[rest[0], rest[1], rest[2], 0, 0, 0]);
            match first {
                Ok(n) if n as u64 == rest[2] && rest[4] > 0 => {
                    match self.dispatch(g, libc::SYS_writev as u64, &[rest[0], rest[3], rest[4], 0, 0, 0]) {
                        Ok(m) => Ok(n + m),
                        Err(_) => Ok(n),
                    }
                }
                other => other,
            }
        });
        super::errno::to_ret(done.unwrap_or(Err(Errno::ENOSYS)))
    }

    fn try_in_context(&self, mem: &dyn GuestMemory, nr: u64, args: &[u64; 6]) -> Tried {
        let g = Guest::new(mem);
        const CWD: u64 = libc::AT_FDCWD as u32 as u64;
        // The tries that answer None when the call would wait.
        let waits = |now: Option<i64>| now.map_or(Tried::Waits, Tried::Done);
        let Ok(nr) = libc::c_long::try_from(nr) else { return Tried::Untried };
        let result = match nr {
            libc::SYS_read => self.nowait(g, args[0], args[1], args[2], Direction::Read),
            libc::SYS_write => self.nowait(g, args[0], args[1], args[2], Direction::Write),
            libc::SYS_readv => self.nowait_vectored(g, args[0], args[1], args[2], Direction::Read),
            libc::SYS_writev => self.nowait_vectored(g, args[0], args[1], args[2], Direction::Write),
            // An open that would wait is a FIFO's: a worker waits for the other end at once.
            libc::SYS_openat => {
                let now = self.openat_without_waiting(g, args[0], args[1], args[2], args[3]);
                return now.map_or(Tried::Untried, |r| Tried::Done(super::errno::to_ret(r)));
            }
            libc::SYS_open => {
                let now = self.openat_without_waiting(g, CWD, args[0], args[1], args[2]);
                return now.map_or(Tried::Untried, |r| Tried::Done(super::errno::to_ret(r)));
            }
            libc::SYS_creat => {
                let flags = (libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC) as u64;
                let now = self.openat_without_waiting(g, CWD, args[0], flags, args[1]);
                return now.map_or(Tried::Untried, |r| Tried::Done(super::errno::to_ret(r)));
            }
            nr @ (libc::SYS_sendto | libc::SYS_sendmsg | libc::SYS_recvfrom | libc::SYS_recvmsg) => {
                return self.socket_without_waiting(g, nr, args)
            }
            libc::SYS_poll => return waits(self.ready_now(g, libc::SYS_poll, args, 2)),
            n @ (libc::SYS_ppoll | libc::SYS_select | libc::SYS_pselect6) => {
                return waits(self.select_or_ppoll_now(g, n, args))
            }
            n @ (libc::SYS_epoll_wait | libc::SYS_epoll_pwait) => return waits(self.ready_now(g, n, args, 3)),
            libc::SYS_epoll_pwait2 => return waits(self.epoll_pwait2_now(g, args)),
            libc::SYS_semop | libc::SYS_semtimedop => return waits(self.semop_now(g, args[0], args[1], args[2])),
            n @ (libc::SYS_msgsnd | libc::SYS_msgrcv) => return waits(self.msg_now(g, n, args)),
            n @ (libc::SYS_mq_timedsend | libc::SYS_mq_timedreceive) => return waits(self.mq_now(g, n, args)),
            _ => return Tried::Untried,
        };
        match result {
            // The host said the call would wait: final for a non-blocking descriptor.
            Err(Errno::EAGAIN) if self.nonblocking(args[0]) => Tried::Done(-(libc::EAGAIN as i64)),
            Err(Errno::EAGAIN) => Tried::Waits,
            // Not a call or descriptor to try (`nowait`): a worker makes it.
            Err(Errno::EOPNOTSUPP) | Err(Errno::EINVAL) => Tried::Untried,
            other => Tried::Done(super::errno::to_ret(other)),
        }
    }

    /// poll, epoll_wait or epoll_pwait (`nr`, `args`, the timeout in milliseconds at
    /// `timeout_at`) made now with a zero timeout: what is ready already (or an error) is the
    /// answer the waiting call would give at once, without the hand-off to a worker thread
    /// (~95 us). None if nothing is ready and the program's timeout is not zero: then it waits.
    fn ready_now(&self, g: Guest, nr: libc::c_long, args: &[u64; 6], timeout_at: usize) -> Option<i64> {
        let mut now = *args;
        now[timeout_at] = 0;
        match self.dispatch(g, nr as u64, &now) {
            Ok(0) if args[timeout_at] as i32 != 0 => None,
            done => Some(super::errno::to_ret(done)),
        }
    }

    /// `ready_now` for epoll_pwait2, whose timeout is a `struct timespec` (NULL: none). Events
    /// already there are the answer, as for epoll_pwait: a worker's wait let a signal the
    /// call's mask unblocks end it with EINTR although events were ready (2-32 calls in 200;
    /// Linux looks for events first). A timeout that is zero, invalid or unreadable goes to
    /// the call itself, which answers at once.
    fn epoll_pwait2_now(&self, g: Guest, args: &[u64; 6]) -> Option<i64> {
        if args[3] != 0 {
            let waits = g.read::<libc::timespec>(args[3]).is_ok_and(|t| {
                t.tv_sec >= 0 && (0..1_000_000_000).contains(&t.tv_nsec) && (t.tv_sec, t.tv_nsec) != (0, 0)
            });
            if !waits {
                return Some(super::errno::to_ret(self.dispatch(g, libc::SYS_epoll_pwait2 as u64, args)));
            }
        }
        match self.epoll_pwait(g, args[0], args[1], args[2], super::epoll::Wait::Ms(0), args[4], args[5]) {
            Ok(0) => None,
            done => Some(super::errno::to_ret(done)),
        }
    }

    /// Whether the program's descriptor `fd` is in non-blocking mode (O_NONBLOCK on the host's
    /// file), so that a call the host says would wait answers EAGAIN at once, as the program's
    /// own call does, instead of going to a worker thread to be told the same (~95 us).
    pub(super) fn nonblocking(&self, fd: u64) -> bool {
        let Ok(h) = self.fds().get(fd) else { return false };
        // SAFETY: F_GETFL only reads the descriptor's flags.
        let flags = unsafe { libc::fcntl(h.raw(), libc::F_GETFL) };
        flags >= 0 && flags & libc::O_NONBLOCK != 0
    }

    /// `readv`, or a `writev` of at most PIPE_BUF bytes in all to a pipe (all or nothing, so
    /// never a part that would leave the rest to express), as one `preadv2`/`pwritev2` with
    /// RWF_NOWAIT; EOPNOTSUPP if the call is not one to try. musl's stdio writes its 1 KiB buffer
    /// with writev: each went to a worker thread before (300,000 lines into `| cat`: 0.52 s
    /// against Linux's 0.05).
    fn nowait_vectored(&self, g: Guest, fd: u64, iov: u64, count: u64, dir: Direction) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        match (h.kind(), dir) {
            (FdKind::Pipe | FdKind::Socket | FdKind::Other, Direction::Read) => {}
            (FdKind::Pipe, Direction::Write) => {
                let total = super::io::guest_iovecs(g, iov, count)?
                    .iter()
                    .try_fold(0u64, |sum, v| sum.checked_add(v.len))
                    .ok_or(Errno::EINVAL)?;
                if total > PIPE_BUF {
                    return Err(Errno::EOPNOTSUPP);
                }
            }
            _ => return Err(Errno::EOPNOTSUPP),
        }
        let nr = if dir == Direction::Read { libc::SYS_preadv2 } else { libc::SYS_pwritev2 };
        // Offset -1: the current position, as readv and writev use.
        self.rwv(g, nr, fd, iov, count, [u64::MAX, u64::MAX], libc::RWF_NOWAIT as u64)
    }

    /// One `preadv2`/`pwritev2` with RWF_NOWAIT at the current position; EAGAIN if it would wait,
    /// EOPNOTSUPP if the descriptor is not one to try.
    fn nowait(&self, g: Guest, fd: u64, buf: u64, count: u64, dir: Direction) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        match (h.kind(), dir) {
            // Other kinds (an eventfd, a timerfd, a character device) answer EOPNOTSUPP where
            // the host file does not take RWF_NOWAIT (no FMODE_NOWAIT), and then go to a worker.
            // A zero-length read is answered by `preadv2` without asking the file (0), where
            // an eventfd or a timerfd refuses it (EINVAL): made as it is, by a worker.
            (FdKind::Other, Direction::Read) if count == 0 => return Err(Errno::EOPNOTSUPP),
            (FdKind::Pipe | FdKind::Socket | FdKind::Other, Direction::Read) => {}
            // Larger writes come from `pipe_write_without_waiting`, which takes a part.
            (FdKind::Pipe, Direction::Write) => {}
            _ => return Err(Errno::EOPNOTSUPP),
        }
        let into_program = dir == Direction::Read;
        let usable = if into_program { g.usable_len_mut(buf, count) } else { g.usable_len(buf, count) };
        // A buffer unusable from its first byte: the full call (`io::rw_unusable`) lets the
        // host answer EAGAIN or 0 before EFAULT, as Linux does.
        let usable = match usable {
            Err(Errno::EFAULT) => return Err(Errno::EOPNOTSUPP),
            r => r?,
        };
        // (A write here is to a pipe: see `io::short_write_len`.)
        let count = if usable < count && !into_program {
            super::io::short_write_len(h.kind(), || false, usable)?
        } else {
            usable
        }
        .min(MAX_RW_COUNT);
        let p = if into_program { g.range_mut(buf, count)? } else { g.range(buf, count)? };
        let iov = libc::iovec { iov_base: p as *mut libc::c_void, iov_len: count as usize };
        let nr = if dir == Direction::Read { libc::SYS_preadv2 } else { libc::SYS_pwritev2 };
        // SAFETY: the iovec covers `count` checked bytes of guest memory; offset -1 is the current
        // position (pos_l, pos_h = -1, -1), as read/write use.
        let tried = unsafe {
            self.sys(
                nr,
                &[h.raw() as libc::c_long, super::host::ptr(&iov), 1, -1, -1, libc::RWF_NOWAIT as libc::c_long],
            )
        };
        match (tried, h.kind(), dir) {
            // A pipe opened by a path (a FIFO, bash's `<(...)`) takes no RWF_NOWAIT: a read
            // through a non-blocking description of it takes what it holds or says EAGAIN.
            // Every read went to a worker thread before (~95 us each: `tail -c 5 <(head -c
            // 100M /dev/zero)` 1.9 s against 0.26 s from an unnamed pipe).
            (Err(Errno::EOPNOTSUPP), FdKind::Pipe, Direction::Read) => match h.nonblocking_reader() {
                // SAFETY: as above, the same checked bytes.
                Some(fd) => unsafe {
                    self.sys(libc::SYS_read, &[fd as libc::c_long, p as libc::c_long, count as libc::c_long])
                },
                None => Err(Errno::EOPNOTSUPP),
            },
            (tried, ..) => tried,
        }
    }
}
