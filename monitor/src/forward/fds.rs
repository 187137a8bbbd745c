//! Descriptor operations: dup, dup2, dup3, pipe, pipe2, fcntl, ioctl.

use std::sync::Arc;

use super::errno::{Errno, SysResult};
use super::fd_table::{FdTable, HostFd};
use super::guest_mem::Guest;
use super::host::{int, ptr, uint};
use super::Forwarder;

/// sizeof(struct flock) on x86-64.
const FLOCK_SIZE: u64 = 32;
/// The kernel's struct termios (what TCGETS writes; not glibc's larger one).
const TERMIOS_SIZE: u64 = 36;
/// struct winsize.
const WINSIZE_SIZE: u64 = 8;
/// struct ifreq (netdevice(7)): an interface name and a 24-byte union.
const IFREQ_SIZE: u64 = 40;
const _: () = assert!(IFREQ_SIZE as usize == std::mem::size_of::<libc::ifreq>());
/// The largest argument a forwarded request reads or writes.
const LARGEST_ARG: usize = larger(larger(larger(TERMIOS_SIZE, TERMIOS2_SIZE), IFREQ_SIZE), FS_SYSFS_PATH_SIZE) as usize;

const fn larger(a: u64, b: u64) -> u64 {
    if a > b {
        a
    } else {
        b
    }
}

/// A guest dup of `h`: a host dup of its own (see fd_table.rs), but in a spawn child (a vfork
/// child before its exec, which runs in `hrt`'s host process) the same host descriptor. The
/// host releases a process's POSIX locks (F_SETLK) on a file when the process closes any
/// descriptor of it: a host dup the child made (posix_spawn's and Go's dup2 of an inherited
/// descriptor before the exec), closed when the child's table went, released the program's
/// own locks (Go's syscall TestFcntlFlock: the exec'd child found the file unlocked).
fn guest_dup(h: &Arc<HostFd>) -> SysResult<Arc<HostFd>> {
    if super::procs::in_spawn_child() {
        return Ok(h.clone());
    }
    Ok(Arc::new(h.duplicate()?))
}

impl Forwarder {
    pub(super) fn dup(&self, fd: u64) -> SysResult<i64> {
        let h = guest_dup(&self.fds().get(fd)?)?;
        self.fds().insert(h, false, 0)
    }

    pub(super) fn dup2(&self, old: u64, new: u64) -> SysResult<i64> {
        let h = self.fds().get(old)?;
        let n = FdTable::number(new)?;
        if FdTable::number(old)? == n {
            return Ok(n as i64);
        }
        // Whatever was at `new` is closed silently, as dup2 does.
        drop(self.fds().replace(n, guest_dup(&h)?, false)?);
        Ok(n as i64)
    }

    pub(super) fn dup3(&self, old: u64, new: u64, flags: u64) -> SysResult<i64> {
        let flags = int(flags);
        if flags & !(libc::O_CLOEXEC as libc::c_long) != 0 || old as u32 == new as u32 {
            return Err(Errno::EINVAL);
        }
        let n = FdTable::number(new)?;
        let h = self.fds().get(old)?;
        drop(self.fds().replace(n, guest_dup(&h)?, flags != 0)?);
        Ok(n as i64)
    }

    pub(super) fn pipe2(&self, g: Guest, fds: u64, flags: u64) -> SysResult<i64> {
        g.range_mut(fds, 8)?;
        let flags = int(flags);
        let mut host = [0i32; 2];
        // SAFETY: `host` holds two ints.
        unsafe { self.sys(libc::SYS_pipe2, &[ptr(host.as_mut_ptr()), flags | libc::O_CLOEXEC as libc::c_long])? };
        let [r, w] = host.map(|fd| Arc::new(HostFd::owned(fd, false)));
        let (gr, gw) = self.fds().insert_pair(r, w, flags & libc::O_CLOEXEC as libc::c_long != 0)?;
        g.write(fds, &[gr as i32, gw as i32])?;
        Ok(0)
    }

    pub(super) fn fcntl(&self, g: Guest, fd: u64, cmd: u64, arg: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        let raw = h.raw() as libc::c_long;
        match int(cmd) as libc::c_int {
            c @ (libc::F_DUPFD | libc::F_DUPFD_CLOEXEC) => {
                let min = arg as u32 as usize;
                if min >= self.fds().limit() {
                    return Err(Errno::EINVAL);
                }
                self.fds().insert(guest_dup(&h)?, c == libc::F_DUPFD_CLOEXEC, min)
            }
            libc::F_GETFD => Ok(if self.fds().cloexec(fd)? { libc::FD_CLOEXEC as i64 } else { 0 }),
            libc::F_SETFD => {
                self.fds().set_cloexec(fd, arg & libc::FD_CLOEXEC as u64 != 0)?;
                Ok(0)
            }
            libc::F_GETFL => {
                // SAFETY: F_GETFL takes no argument.
                let flags = unsafe { self.sys(libc::SYS_fcntl, &[raw, libc::F_GETFL as libc::c_long])? };
                Ok(flags & !(h.hidden() as i64))
            }
            c @ (libc::F_SETFL | libc::F_GETPIPE_SZ | libc::F_SETPIPE_SZ) => {
                if c == libc::F_SETFL && arg & libc::O_ASYNC as u64 != 0 {
                    super::async_fds::note(h.raw(), fd);
                }
                // SAFETY: these take an integer argument.
                unsafe { self.sys(libc::SYS_fcntl, &[raw, c as libc::c_long, arg as libc::c_long]) }
            }
            c @ (libc::F_GETLK
            | libc::F_SETLK
            | libc::F_SETLKW
            | libc::F_OFD_GETLK
            | libc::F_OFD_SETLK
            | libc::F_OFD_SETLKW) => {
                // The GETLK forms write the answer back.
                let getlk = matches!(c, libc::F_GETLK | libc::F_OFD_GETLK);
                let p = if getlk { g.range_mut(arg, FLOCK_SIZE)? } else { g.range(arg, FLOCK_SIZE)? };
                // SAFETY: `p` covers a struct flock in guest memory.
                unsafe { self.sys(libc::SYS_fcntl, &[raw, c as libc::c_long, ptr(p)]) }
            }
            // The host file's own: a memory file's seals, a lease, whether its open created it,
            // directory notification, and
            // who gets the signal for I/O readiness and with which signal. The host signals the
            // owner, `hrt`, which passes the signal on to the program (with si_band, and si_fd
            // as the program's number: `async_fds`).
            c @ (libc::F_ADD_SEALS
            | libc::F_GET_SEALS
            | libc::F_SETLEASE
            | libc::F_GETLEASE
            | F_CREATED_QUERY
            | libc::F_NOTIFY
            | libc::F_GETOWN
            | F_GETSIG) => {
                // SAFETY: these take an integer argument.
                unsafe { self.sys(libc::SYS_fcntl, &[raw, c as libc::c_long, arg as libc::c_long]) }
            }
            F_SETSIG => {
                let sig = arg as u32 as i32;
                if sig != 0 && !crate::kept_signals::passed_on(sig) {
                    // One `hrt` keeps for itself: it would never reach the program.
                    say_refused_signal(sig);
                    return Err(Errno::EINVAL);
                }
                super::async_fds::note(h.raw(), fd);
                // SAFETY: an integer argument.
                unsafe { self.sys(libc::SYS_fcntl, &[raw, F_SETSIG as libc::c_long, sig as libc::c_long]) }
            }
            libc::F_SETOWN => {
                let who = program_thread_as_process(arg as u32 as i32);
                check_owner(who)?;
                // SAFETY: an integer argument.
                unsafe { self.sys(libc::SYS_fcntl, &[raw, libc::F_SETOWN as libc::c_long, who as libc::c_long]) }
            }
            F_GETOWN_EX => {
                let mut owner = [0i32; 2];
                // SAFETY: `owner` is a struct f_owner_ex.
                unsafe { self.sys(libc::SYS_fcntl, &[raw, F_GETOWN_EX as libc::c_long, ptr(owner.as_mut_ptr())])? };
                g.write(arg, &owner)?;
                Ok(0)
            }
            F_SETOWN_EX => {
                let [kind, who]: [i32; 2] = g.read(arg)?;
                let owner = match kind {
                    // Owner 0 clears the owner, as F_GETOWN_EX of a fresh descriptor reads
                    // it (LTP fcntl31 restored that and got ESRCH).
                    F_OWNER_TID | F_OWNER_PID | F_OWNER_PGRP if who == 0 => [kind, 0],
                    // The program's thread ids are not the host's: the process gets the signal,
                    // and the kernel gives it to one of its threads.
                    // SAFETY: getpid takes no arguments.
                    F_OWNER_TID if program_thread_as_process(who) != who || who == unsafe { libc::getpid() } => {
                        [F_OWNER_PID, program_thread_as_process(who)]
                    }
                    F_OWNER_TID => return Err(Errno::ESRCH),
                    F_OWNER_PID => {
                        check_owner(who)?;
                        [kind, who]
                    }
                    F_OWNER_PGRP => {
                        check_owner(-who)?;
                        [kind, who]
                    }
                    _ => return Err(Errno::EINVAL),
                };
                // SAFETY: `owner` is a struct f_owner_ex.
                unsafe { self.sys(libc::SYS_fcntl, &[raw, F_SETOWN_EX as libc::c_long, ptr(owner.as_ptr())]) }
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// ioctl: the requests programs make of terminals, pipes and sockets (see [`ioctl_kind`]);
    /// any other is ENOTTY. An answer goes to a local buffer first and is copied to the program
    /// after, so a descriptor of the wrong kind gives ENOTTY before the argument is looked at
    /// (Linux's order: `ioctl(file, TCGETS, NULL)` is ENOTTY, not EFAULT); an argument the
    /// program hands in is read first, and if it cannot be, the host is asked with a null
    /// pointer, which again gives ENOTTY for the wrong kind and EFAULT otherwise.
    pub(super) fn ioctl(&self, g: Guest, fd: u64, cmd: u64, arg: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        let cmd = uint(cmd) as u32 as libc::Ioctl;
        let raw = h.raw() as libc::c_long;
        let kind = match cmd {
            // An O_PATH descriptor: EBADF for any request (these two and the ones not
            // forwarded would not ask the host).
            libc::FIOCLEX | libc::FIONCLEX if h.path_only() => return Err(Errno::EBADF),
            cmd if ioctl_kind(cmd).is_none() && h.path_only() => return Err(Errno::EBADF),
            libc::FIOCLEX | libc::FIONCLEX => {
                self.fds().set_cloexec(fd, cmd == libc::FIOCLEX)?;
                return Ok(0);
            }
            FIOSETOWN | SIOCSPGRP => {
                // F_SETOWN's owner, checked as F_SETOWN checks it (the host answers ENOTTY for
                // a descriptor that is not a socket first).
                let who: i32 = g.read(arg)?;
                check_owner(who)?;
                // SAFETY: `who` is the int the request reads.
                return unsafe { self.sys(libc::SYS_ioctl, &[raw, cmd as libc::c_long, ptr(&who as *const i32)]) };
            }
            libc::SIOCGIFCONF => return self.ioctl_ifconf(g, raw, arg),
            FS_IOC_FIEMAP => return self.ioctl_fiemap(g, raw, arg),
            USERFAULTFD_IOC_NEW => {
                // /dev/userfaultfd's way to a userfaultfd (the call itself is ENOSYS with a
                // line): not offered either, and said so (it was a silent ENOTTY).
                super::sockets::report_once(
                    "userfaultfd (USERFAULTFD_IOC_NEW of /dev/userfaultfd) is not implemented: ENOSYS".into(),
                );
                return Err(Errno::ENOSYS);
            }
            FICLONE => {
                // The source is a descriptor of the program's: the host's for it (EBADF if
                // there is none, as on Linux).
                let src = self.fds().get(uint(arg) as u32 as i32 as i64 as u64)?;
                // SAFETY: the argument is a value.
                return unsafe { self.sys(libc::SYS_ioctl, &[raw, cmd as libc::c_long, src.raw() as libc::c_long]) };
            }
            FICLONERANGE => {
                // struct file_clone_range { s64 src_fd; u64 src_offset, src_length, dest_offset }:
                // its source descriptor the host's.
                let mut range: [u64; 4] = g.read(arg)?;
                let src = self.fds().get(range[0] as i32 as i64 as u64)?;
                range[0] = src.raw() as u64;
                // SAFETY: `range` is the struct the request reads.
                return unsafe { self.sys(libc::SYS_ioctl, &[raw, cmd as libc::c_long, ptr(range.as_ptr())]) };
            }
            libc::TIOCSCTTY if super::procs::in_spawn_child() => {
                return super::procs::defer_ctty(&h, fd, arg).unwrap_or(Err(Errno::EPERM));
            }
            SIOCGSKNS => {
                // A socket's network namespace, as a new descriptor of the program's.
                // SAFETY: the argument is unused.
                let ns = unsafe { self.sys(libc::SYS_ioctl, &[raw, cmd as libc::c_long, 0])? };
                let host = Arc::new(HostFd::owned(ns as i32, false));
                return self.fds().insert(host, true, 0);
            }
            TIOCGPTPEER => {
                // A pseudo-terminal master's slave, opened with the flags in `arg` (O_RDWR,
                // O_NOCTTY, O_NONBLOCK, O_CLOEXEC): a new descriptor of the program's, close-on-
                // exec on the host as every one is (the program's flag is the table's).
                let flags = uint(arg) as libc::c_int;
                let host_flags = (flags | libc::O_CLOEXEC) as libc::c_long;
                // SAFETY: the argument is a value.
                let slave = unsafe { self.sys(libc::SYS_ioctl, &[raw, cmd as libc::c_long, host_flags])? };
                let host = Arc::new(HostFd::owned(slave as i32, false));
                return self.fds().insert(host, flags & libc::O_CLOEXEC != 0, 0);
            }
            libc::FIOASYNC => {
                super::async_fds::note(h.raw(), fd);
                Ioctl::In(INT)
            }
            cmd if INTERFACE_WRITES.contains(&cmd) && h.kind() == super::fd_table::FdKind::Socket => {
                // Not made (they change the host's interfaces), but answered as Linux answers
                // before the change: EFAULT for an ifreq it cannot read, EPERM without
                // CAP_NET_ADMIN (LTP's sockioctl01); then ENOTTY with a line.
                g.read_bytes(arg, IFREQ_SIZE)?;
                const CAP_NET_ADMIN: u32 = 12;
                if !super::caps::effective(CAP_NET_ADMIN) {
                    return Err(Errno::EPERM);
                }
                super::sockets::report_once(format!(
                    "ioctl {cmd:#x} (a network interface's setting) is not forwarded: ENOTTY"
                ));
                return Err(Errno::ENOTTY);
            }
            // An epoll instance answers requests it does not know with EINVAL (its own ioctl
            // handler, Linux 6.9), every other descriptor here with ENOTTY.
            cmd if ioctl_kind(cmd).is_none() && h.kind() == super::fd_table::FdKind::Epoll => {
                return Err(Errno::EINVAL)
            }
            cmd => ioctl_kind(cmd).ok_or(Errno::ENOTTY)?,
        };
        let mut local = [0u8; LARGEST_ARG];
        match kind {
            Ioctl::Out(size) => {
                // SAFETY: `local` is larger than any of these answers.
                let r = unsafe { self.sys(libc::SYS_ioctl, &[raw, cmd as libc::c_long, ptr(local.as_mut_ptr())])? };
                g.write_bytes(arg, &local[..size as usize])?;
                Ok(r)
            }
            Ioctl::In(size) | Ioctl::InOut(size) => match g.read_bytes(arg, size) {
                Ok(v) => {
                    local[..v.len()].copy_from_slice(&v);
                    // SAFETY: `local` holds the argument the request reads (and, for InOut,
                    // has room for what it writes back: the same size).
                    let r = unsafe { self.sys(libc::SYS_ioctl, &[raw, cmd as libc::c_long, ptr(local.as_mut_ptr())])? };
                    if let Ioctl::InOut(size) = kind {
                        g.write_bytes(arg, &local[..size as usize])?;
                    }
                    Ok(r)
                }
                Err(e) => {
                    // SAFETY: a null argument: the host answers ENOTTY or EFAULT.
                    let r = unsafe { self.sys(libc::SYS_ioctl, &[raw, cmd as libc::c_long, 0]) };
                    Err(r.err().unwrap_or(e))
                }
            },
            Ioctl::Value => {
                // SAFETY: the argument is a plain value.
                let r = unsafe { self.sys(libc::SYS_ioctl, &[raw, cmd as libc::c_long, arg as libc::c_long]) };
                if matches!(cmd, libc::TIOCNOTTY | TIOCSIG | TIOCVHANGUP) {
                    // The host sent its signals (SIGHUP and SIGCONT to the foreground group,
                    // TIOCSIG's) before the call returned: if `hrt` is among those it sent them
                    // to, the program gets them before it runs on, as on Linux (it went on for a
                    // while, and a SIGHUP after TIOCNOTTY came after its `_exit`).
                    crate::taken_signals::sync();
                }
                r
            }
        }
    }
}

impl super::Forwarder {
    /// FS_IOC_FIEMAP: struct fiemap (fm_start, fm_length, fm_flags, fm_mapped_extents,
    /// fm_extent_count, fm_reserved: 32 bytes) and fm_extent_count extents of 56 bytes after it,
    /// which the host fills in a buffer of `hrt`'s (at most `FIEMAP_MAX_EXTENTS`: a larger count
    /// gets that many, the answer's fm_mapped_extents says how many) copied back.
    fn ioctl_fiemap(&self, g: Guest, raw: libc::c_long, arg: u64) -> SysResult<i64> {
        const HEADER: usize = 32;
        const EXTENT: usize = 56;
        const FIEMAP_MAX_EXTENTS: u32 = 4096;
        let mut header = [0u8; HEADER];
        header.copy_from_slice(&g.read_bytes(arg, HEADER as u64)?);
        let asked = u32::from_ne_bytes([header[24], header[25], header[26], header[27]]);
        let count = asked.min(FIEMAP_MAX_EXTENTS);
        // The whole array must be the program's to write, as Linux checks it first.
        let array = arg.checked_add(HEADER as u64).ok_or(Errno::EFAULT)?;
        g.usable_len_mut(array, asked as u64 * EXTENT as u64)
            .ok()
            .filter(|&n| n == asked as u64 * EXTENT as u64)
            .ok_or(Errno::EFAULT)?;
        header[24..28].copy_from_slice(&count.to_ne_bytes());
        let mut local = vec![0u8; HEADER + count as usize * EXTENT];
        local[..HEADER].copy_from_slice(&header);
        // SAFETY: `local` holds the header and room for `count` extents, as the header says.
        let r = unsafe { self.sys(libc::SYS_ioctl, &[raw, FS_IOC_FIEMAP as libc::c_long, ptr(local.as_mut_ptr())]) };
        if r.is_ok() || r == Err(Errno(libc::EBADR)) {
            // The extents, or (EBADR) the flags the file system does not support, written back;
            // the program's count as it gave it.
            let mapped = u32::from_ne_bytes([local[20], local[21], local[22], local[23]]).min(count) as usize;
            local[24..28].copy_from_slice(&asked.to_ne_bytes());
            g.write_bytes(arg, &local[..HEADER + mapped * EXTENT])?;
        }
        r
    }

    /// SIOCGIFCONF: struct ifconf { int len; struct ifreq *buf } names a buffer of the program's
    /// (at most `IFCONF_MAX` bytes are filled here): the host fills one of `hrt`'s, copied back
    /// with the length it used. A null `buf` asks for the length all records need.
    fn ioctl_ifconf(&self, g: Guest, raw: libc::c_long, arg: u64) -> SysResult<i64> {
        let conf: [u64; 2] = g.read(arg)?;
        let (len, buf) = ((conf[0] as u32 as i32).max(0) as u64, conf[1]);
        let mut local = vec![0u8; len.min(IFCONF_MAX) as usize];
        let mut host: [u64; 2] = [local.len() as u64, if buf == 0 { 0 } else { ptr(local.as_mut_ptr()) as u64 }];
        // SAFETY: `host` is a struct ifconf naming `local` (or no buffer), whose length it holds.
        let r =
            unsafe { self.sys(libc::SYS_ioctl, &[raw, libc::SIOCGIFCONF as libc::c_long, ptr(host.as_mut_ptr())])? };
        let used = (host[0] as u32 as u64).min(local.len() as u64);
        if buf != 0 {
            g.write_bytes(buf, &local[..used as usize])?;
        }
        let out_len = if buf == 0 { host[0] as u32 as u64 } else { used };
        g.write(arg, &[(conf[0] & !0xffff_ffff) | out_len])?;
        Ok(r)
    }
}

/// fcntl commands the libc crate lacks (Linux's asm-generic/fcntl.h).
const F_SETSIG: libc::c_int = 10;
const F_GETSIG: libc::c_int = 11;
/// Whether the descriptor's open created its file (Linux 6.12; libc 0.2 lacks the name).
const F_CREATED_QUERY: libc::c_int = 1028;
const F_SETOWN_EX: libc::c_int = 15;
const F_GETOWN_EX: libc::c_int = 16;
/// struct f_owner_ex's types.
const F_OWNER_TID: i32 = 0;
const F_OWNER_PID: i32 = 1;
const F_OWNER_PGRP: i32 = 2;

/// F_SETOWN's owner (a pid, or a negated process group): nobody (0), the program itself (its
/// pid is `hrt`'s) or its own process group. The host would signal any other process itself
/// when the descriptor becomes ready, which `hrt` allows the program only within its tree
/// (EPERM; Linux accepts the owner and checks permission at each signal).
fn check_owner(who: i32) -> SysResult<()> {
    // SAFETY: getpid takes no arguments, getpgid an integer (getpgrp is not among the calls
    // the vCPU threads' seccomp filter allows).
    let (pid, pgrp) = unsafe { (libc::getpid(), libc::getpgid(0)) };
    if who == 0 || who == pid || who == -pgrp {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

/// `who` as an owner of I/O signals: one of the program's threads (ids the host does not
/// know, but the main thread's) stands for the program, whose kernel gives the signal to one
/// of its threads (Linux would give it to that thread); any other id is itself.
fn program_thread_as_process(who: i32) -> i32 {
    // SAFETY: getpid takes no arguments.
    let pid = unsafe { libc::getpid() };
    if who > 0 && super::task_dir::thread_ids(pid as u32).contains(&(who as u32)) {
        pid
    } else {
        who
    }
}

/// Says once that F_SETSIG asked for a signal `hrt` keeps for itself.
fn say_refused_signal(sig: i32) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!("hrt: fcntl F_SETSIG {sig}: hrt keeps that signal for itself; answering EINVAL");
    }
}

/// How an ioctl request passes its argument.
#[derive(Clone, Copy)]
enum Ioctl {
    /// The host writes this many bytes at the pointer.
    Out(u64),
    /// The host reads this many bytes at the pointer.
    In(u64),
    /// The host reads this many bytes at the pointer and writes its answer over them.
    InOut(u64),
    /// The argument is a value, not a pointer.
    Value,
}

const INT: u64 = std::mem::size_of::<libc::c_int>() as u64;

/// Every request [`ioctl_kind`] forwards (the seccomp filter allows these).
pub const FORWARDED_IOCTLS: &[libc::Ioctl] = &[
    libc::TCGETS,
    libc::TCSETS,
    libc::TCSETSW,
    libc::TCSETSF,
    libc::TIOCGWINSZ,
    libc::TIOCSWINSZ,
    libc::FIONREAD,
    libc::TIOCOUTQ,
    libc::TIOCGPGRP,
    libc::TIOCGSID,
    libc::TIOCGPTN,
    libc::FIONBIO,
    libc::TIOCSPGRP,
    libc::TIOCSPTLCK,
    libc::TCFLSH,
    libc::TCXONC,
    libc::TCSBRK,
    libc::TCSBRKP,
    libc::TIOCSCTTY,
    libc::TIOCNOTTY,
    libc::FS_IOC_GETFLAGS,
    libc::FS_IOC_SETFLAGS,
    libc::FS_IOC_GETVERSION,
    libc::SIOCGIFNAME,
    libc::SIOCGIFINDEX,
    libc::SIOCGIFFLAGS,
    libc::SIOCGIFMTU,
    libc::SIOCGIFHWADDR,
    libc::SIOCGIFADDR,
    libc::SIOCGIFNETMASK,
    libc::SIOCGIFBRDADDR,
    libc::SIOCGIFDSTADDR,
    libc::SIOCGIFTXQLEN,
    libc::FIOASYNC,
    FIOSETOWN,
    SIOCSPGRP,
    FIOGETOWN,
    SIOCGPGRP,
    SIOCATMARK,
    SIOCGSTAMP,
    SIOCGSTAMPNS,
    libc::SIOCGIFCONF,
    TFD_IOC_SET_TICKS,
    TCGETS2,
    TCSETS2,
    TCSETSW2,
    TCSETSF2,
    TCGETA,
    TCSETA,
    TCSETAW,
    TCSETAF,
    TIOCGETD,
    TIOCSETD,
    TIOCEXCL,
    TIOCNXCL,
    TIOCGEXCL,
    TIOCGLCKTRMIOS,
    TIOCGSOFTCAR,
    TIOCSSOFTCAR,
    TIOCGDEV,
    TIOCSBRK,
    TIOCCBRK,
    TIOCPKT,
    TIOCGPKT,
    TIOCGPTLCK,
    TIOCGPTPEER,
    FICLONE,
    FICLONERANGE,
    IOCTL_VM_SOCKETS_GET_LOCAL_CID,
    TIOCSTI,
    TIOCSLCKTRMIOS,
    TIOCSIG,
    TIOCVHANGUP,
    FIBMAP,
    FIGETBSZ,
    FIOQSIZE,
    FS_IOC_FSGETXATTR,
    FS_IOC_FSSETXATTR,
    FS_IOC_GETFSUUID,
    FS_IOC_FIEMAP,
    FS_IOC_GETFSSYSFSPATH,
    EPIOCSPARAMS,
    EPIOCGPARAMS,
    SIOCGIFMETRIC,
    SIOCGIFMAP,
    SIOCGIFPFLAGS,
    SIOCGIFSLAVE,
    SIOCOUTQNSD,
    SIOCGSKNS,
];

/// More of netdevice(7)'s reads of one interface (its metric, hardware map, private flags,
/// bonding slave: a struct ifreq in and out), a TCP socket's unsent bytes (an int out), and
/// a socket's network namespace (a new descriptor, close-on-exec as Linux makes it).
const SIOCGIFMETRIC: libc::Ioctl = 0x891d;
const SIOCGIFMAP: libc::Ioctl = 0x8970;
const SIOCGIFPFLAGS: libc::Ioctl = 0x8935;
const SIOCGIFSLAVE: libc::Ioctl = 0x8929;
const SIOCOUTQNSD: libc::Ioctl = 0x894b;
const SIOCGSKNS: libc::Ioctl = 0x894c;

/// A terminal's input typed in (one byte; CAP_SYS_ADMIN on Linux 6.2 and later), its locked
/// attributes set (CAP_SYS_ADMIN), a signal to a pseudo-terminal master's foreground group
/// (`_IOW` in name, the signal number by value), and a hangup of the terminal
/// (CAP_SYS_TTY_CONFIG): the host checks the permissions, as for a native program.
const TIOCSTI: libc::Ioctl = 0x5412;
const TIOCSLCKTRMIOS: libc::Ioctl = 0x5457;
const TIOCSIG: libc::Ioctl = 0x4004_5436;
const TIOCVHANGUP: libc::Ioctl = 0x5437;
/// Requests on any file (do_vfs_ioctl's own): a block's disk address (CAP_SYS_RAWIO), the
/// file system's block size, the space the file takes.
const FIBMAP: libc::Ioctl = 1;
const FIGETBSZ: libc::Ioctl = 2;
const FIOQSIZE: libc::Ioctl = 0x5460;
/// A file's extended attributes (struct fsxattr, 28 bytes: `xfs_io`, `lsattr -p`), its file
/// system's UUID (struct fsuuid2, 17 bytes) and sysfs directory (struct fs_sysfs_path, 129).
const FS_IOC_FSGETXATTR: libc::Ioctl = 0x801c_581f;
const FS_IOC_FSSETXATTR: libc::Ioctl = 0x401c_5820;
const FS_IOC_GETFSUUID: libc::Ioctl = 0x8011_1500;
/// _IOWR('f', 11, struct fiemap).
const FS_IOC_FIEMAP: libc::Ioctl = 0xc020_660b;
/// _IO(0xAA, 0x00): a new userfaultfd from /dev/userfaultfd.
const USERFAULTFD_IOC_NEW: libc::Ioctl = 0xaa00;
const FS_IOC_GETFSSYSFSPATH: libc::Ioctl = 0x8081_1501;
const FSXATTR_SIZE: u64 = 28;
const FSUUID2_SIZE: u64 = 17;
const FS_SYSFS_PATH_SIZE: u64 = 129;
/// An epoll instance's busy-poll parameters (struct epoll_params, 8 bytes; Linux 6.9).
const EPIOCSPARAMS: libc::Ioctl = 0x4008_8a01;
const EPIOCGPARAMS: libc::Ioctl = 0x8008_8a02;

/// /dev/vsock's request for the machine's context id (`_IO(7, 0xb9)`; an unsigned int out),
/// which AF_VSOCK programs ask before they bind (sockets.rs forwards the family).
const IOCTL_VM_SOCKETS_GET_LOCAL_CID: libc::Ioctl = 0x7b9;

/// netdevice(7)'s writes of an interface's settings (SIOCSIFFLAGS, SIOCSIFADDR,
/// SIOCSIFDSTADDR, SIOCSIFBRDADDR, SIOCSIFNETMASK, SIOCSIFMETRIC, SIOCSIFMTU, SIOCSIFNAME,
/// SIOCSIFHWADDR, SIOCSIFTXQLEN): checked, never made (`ioctl`).
const INTERFACE_WRITES: [libc::Ioctl; 10] =
    [0x8914, 0x8916, 0x8918, 0x891a, 0x891c, 0x891e, 0x8922, 0x8923, 0x8924, 0x8943];

/// Terminal requests the libc crate lacks or names only for some targets (Linux's
/// asm-generic/ioctls.h): termios2's attributes with any speed (glibc's `tcsetattr` from 2.42
/// uses them), the old System V `termio` ones, the line discipline, exclusive mode, the locked
/// attributes, software carrier, the device number, break on and off, and a pseudo-terminal
/// master's packet mode, lock state and slave.
const TCGETS2: libc::Ioctl = 0x802c_542a;
const TCSETS2: libc::Ioctl = 0x402c_542b;
const TCSETSW2: libc::Ioctl = 0x402c_542c;
const TCSETSF2: libc::Ioctl = 0x402c_542d;
const TCGETA: libc::Ioctl = 0x5405;
const TCSETA: libc::Ioctl = 0x5406;
const TCSETAW: libc::Ioctl = 0x5407;
const TCSETAF: libc::Ioctl = 0x5408;
const TIOCGETD: libc::Ioctl = 0x5424;
const TIOCSETD: libc::Ioctl = 0x5423;
const TIOCEXCL: libc::Ioctl = 0x540c;
const TIOCNXCL: libc::Ioctl = 0x540d;
const TIOCGEXCL: libc::Ioctl = 0x8004_5440;
const TIOCGLCKTRMIOS: libc::Ioctl = 0x5456;
const TIOCGSOFTCAR: libc::Ioctl = 0x5419;
const TIOCSSOFTCAR: libc::Ioctl = 0x541a;
const TIOCGDEV: libc::Ioctl = 0x8004_5432;
const TIOCSBRK: libc::Ioctl = 0x5427;
const TIOCCBRK: libc::Ioctl = 0x5428;
const TIOCPKT: libc::Ioctl = 0x5420;
const TIOCGPKT: libc::Ioctl = 0x8004_5438;
const TIOCGPTLCK: libc::Ioctl = 0x8004_5439;
const TIOCGPTPEER: libc::Ioctl = 0x5441;
/// Copy-on-write copies of a whole file and of a range (ioctl_ficlone(2)): `cp --reflink`,
/// rustix's `ioctl_ficlone`.
const FICLONE: libc::Ioctl = 0x4004_9409;
const FICLONERANGE: libc::Ioctl = 0x4020_940d;
/// struct termios2 (termios with c_ispeed and c_ospeed) and struct termio, on x86-64.
const TERMIOS2_SIZE: u64 = 44;
const TERMIO_SIZE: u64 = 18;

/// Socket requests the libc crate lacks (Linux's uapi/asm-generic/sockios.h): the owner that
/// gets SIGIO and SIGURG (set and read, two names each), whether the socket is at the urgent
/// mark, and the last packet's time stamp.
const FIOSETOWN: libc::Ioctl = 0x8901;
const SIOCSPGRP: libc::Ioctl = 0x8902;
const FIOGETOWN: libc::Ioctl = 0x8903;
const SIOCGPGRP: libc::Ioctl = 0x8904;
const SIOCATMARK: libc::Ioctl = 0x8905;
const SIOCGSTAMP: libc::Ioctl = 0x8906;
const SIOCGSTAMPNS: libc::Ioctl = 0x8907;
/// A timerfd's expiry count, set (checkpoint/restore tools; the host's timerfd answers ENOTTY
/// for any other descriptor).
const TFD_IOC_SET_TICKS: libc::Ioctl = 0x4008_5400;
/// struct timeval and struct timespec on x86-64.
const TIME_SIZE: u64 = 16;
/// The most interface records SIOCGIFCONF returns here (each a struct ifreq).
const IFCONF_MAX: u64 = 1024 * IFREQ_SIZE;

/// The requests forwarded: terminal attributes, window size, job control and flow control of a
/// terminal (shells, editors, pagers, `script` and pseudo-terminal masters), bytes readable or
/// queued, non-blocking mode (libuv sets it with FIONBIO), a file's inode flags and generation
/// (`lsattr`, `chattr`: FS_IOC_GETFLAGS and SETFLAGS, which read and write an int whatever
/// their encoding says, and GETVERSION), and a socket's questions about one network interface
/// (netdevice(7)'s SIOCGIF* reads: index, name, flags, MTU, hardware and protocol addresses,
/// queue length; UCX's TCP transport, which MPICH loads at MPI_Init, asks them of every
/// interface; the SIOCSIF* writes are checked, never made: `INTERFACE_WRITES`). None of them reaches beyond the descriptor's
/// own file, the process's own terminal, which is the program's (`hrt`'s host process is the
/// program's), and the interface facts any unprivileged process reads (as the forwarded
/// NETLINK_ROUTE sockets already give them, and SIOCGIFCONF lists them: `ioctl_ifconf`). Also
/// signal-driven I/O (FIOASYNC, as `fcntl(F_SETFL, O_ASYNC)`: nginx's master sets it on the
/// socket pair to each worker and refused to start them without it) and the SIGIO/SIGURG
/// owner (FIOSETOWN and SIOCSPGRP as F_SETOWN, checked the same way; FIOGETOWN, SIOCGPGRP),
/// a socket's urgent mark and its last packet's time stamp. The other terminal requests of
/// the descriptor's own terminal too (termios2, termio, line discipline, exclusive mode,
/// break, packet mode: `terminal requests` above), and typing into it, its locked attributes, a
/// signal to a pseudo-terminal's foreground group and a hangup, which the host allows a
/// program as it would natively. Requests any file takes (block size, space, a block's
/// address), a file's fsxattr and its file system's UUID and sysfs path, an epoll instance's
/// busy-poll parameters. Left out: TIOCCONS (the host's console output). TIOCGPTPEER opens a master's slave as a
/// new descriptor of the program's (`ioctl`).
fn ioctl_kind(cmd: libc::Ioctl) -> Option<Ioctl> {
    Some(match cmd {
        libc::TCGETS | TIOCGLCKTRMIOS => Ioctl::Out(TERMIOS_SIZE),
        libc::TCSETS | libc::TCSETSW | libc::TCSETSF => Ioctl::In(TERMIOS_SIZE),
        TCGETS2 => Ioctl::Out(TERMIOS2_SIZE),
        TCSETS2 | TCSETSW2 | TCSETSF2 => Ioctl::In(TERMIOS2_SIZE),
        TCGETA => Ioctl::Out(TERMIO_SIZE),
        TCSETA | TCSETAW | TCSETAF => Ioctl::In(TERMIO_SIZE),
        TIOCGETD | TIOCGEXCL | TIOCGSOFTCAR | TIOCGDEV | TIOCGPKT | TIOCGPTLCK => Ioctl::Out(INT),
        TIOCSETD | TIOCSSOFTCAR | TIOCPKT => Ioctl::In(INT),
        TIOCEXCL | TIOCNXCL | TIOCSBRK | TIOCCBRK | TIOCSIG | TIOCVHANGUP => Ioctl::Value,
        TIOCSTI => Ioctl::In(1),
        TIOCSLCKTRMIOS => Ioctl::In(TERMIOS_SIZE),
        FIGETBSZ => Ioctl::Out(INT),
        FIBMAP => Ioctl::InOut(INT),
        FIOQSIZE => Ioctl::Out(8),
        FS_IOC_FSGETXATTR => Ioctl::Out(FSXATTR_SIZE),
        FS_IOC_FSSETXATTR => Ioctl::In(FSXATTR_SIZE),
        FS_IOC_GETFSUUID => Ioctl::Out(FSUUID2_SIZE),
        FS_IOC_GETFSSYSFSPATH => Ioctl::Out(FS_SYSFS_PATH_SIZE),
        EPIOCSPARAMS => Ioctl::In(8),
        EPIOCGPARAMS => Ioctl::Out(8),
        libc::TIOCGWINSZ => Ioctl::Out(WINSIZE_SIZE),
        libc::TIOCSWINSZ => Ioctl::In(WINSIZE_SIZE),
        libc::FIONREAD | libc::TIOCOUTQ | libc::TIOCGPGRP | libc::TIOCGSID | libc::TIOCGPTN => Ioctl::Out(INT),
        IOCTL_VM_SOCKETS_GET_LOCAL_CID => Ioctl::Out(INT),
        libc::FS_IOC_GETFLAGS | libc::FS_IOC_GETVERSION => Ioctl::Out(INT),
        libc::FIONBIO | libc::TIOCSPGRP | libc::TIOCSPTLCK | libc::FS_IOC_SETFLAGS | libc::FIOASYNC => Ioctl::In(INT),
        FIOGETOWN | SIOCGPGRP | SIOCATMARK => Ioctl::Out(INT),
        SIOCGSTAMP | SIOCGSTAMPNS => Ioctl::Out(TIME_SIZE),
        TFD_IOC_SET_TICKS => Ioctl::In(8),
        libc::TCFLSH | libc::TCXONC | libc::TCSBRK | libc::TCSBRKP | libc::TIOCSCTTY | libc::TIOCNOTTY => Ioctl::Value,
        libc::SIOCGIFNAME
        | libc::SIOCGIFINDEX
        | libc::SIOCGIFFLAGS
        | libc::SIOCGIFMTU
        | libc::SIOCGIFHWADDR
        | libc::SIOCGIFADDR
        | libc::SIOCGIFNETMASK
        | libc::SIOCGIFBRDADDR
        | libc::SIOCGIFDSTADDR
        | libc::SIOCGIFTXQLEN
        | SIOCGIFMETRIC
        | SIOCGIFMAP
        | SIOCGIFPFLAGS
        | SIOCGIFSLAVE => Ioctl::InOut(IFREQ_SIZE),
        SIOCOUTQNSD => Ioctl::Out(INT),
        _ => return None,
    })
}
