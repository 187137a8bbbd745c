//! Which forwarded calls may block on the host for as long as another party pleases (a read
//! from an idle pipe or terminal, a poll, a lock wait, opening a FIFO). The channel's polling
//! service thread performs every other call itself and hands these to threads of their own, so
//! one blocked call never stops the others (see vm/channel).

use super::Forwarder;

impl Forwarder {
    /// True if forwarded call `nr` with `args` may wait on the host for an unbounded time.
    /// Errs on the side of "may block": the cost of a wrong "yes" is a thread hand-off.
    pub fn may_block(&self, nr: u64, args: &[u64; 6]) -> bool {
        let Ok(nr) = libc::c_long::try_from(nr) else { return false };
        match nr {
            libc::SYS_read
            | libc::SYS_write
            | libc::SYS_readv
            | libc::SYS_writev
            | libc::SYS_pread64
            | libc::SYS_pwrite64
            | libc::SYS_preadv
            | libc::SYS_pwritev
            | libc::SYS_preadv2
            | libc::SYS_pwritev2
            | libc::SYS_ftruncate
            | libc::SYS_fsync
            | libc::SYS_fdatasync => !self.never_blocks(args[0]),
            // Output goes to args[0] and input comes from args[1].
            libc::SYS_sendfile | libc::SYS_copy_file_range | libc::SYS_splice | libc::SYS_tee => {
                !(self.never_blocks(args[0]) && self.never_blocks(args[1]))
            }
            libc::SYS_fcntl => matches!(args[1] as i32, libc::F_SETLKW | libc::F_OFD_SETLKW),
            // Opening a FIFO waits for its other end.
            libc::SYS_open | libc::SYS_openat | libc::SYS_openat2 | libc::SYS_creat => true,
            libc::SYS_poll
            | libc::SYS_ppoll
            | libc::SYS_select
            | libc::SYS_pselect6
            | libc::SYS_epoll_wait
            | libc::SYS_epoll_pwait
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

    /// True if the program's descriptor `fd` names a regular file, a directory, a block device
    /// or one of the memory character devices (/dev/null, zero, full, random, urandom): reads
    /// and writes on those finish without waiting for anybody. Unknown descriptors are EBADF,
    /// which is quick too.
    fn never_blocks(&self, fd: u64) -> bool {
        let Ok(host) = self.fds.get(fd) else { return true };
        host.never_blocks()
    }
}
