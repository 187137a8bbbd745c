//! Linux error numbers as the forwarder returns them.

/// A positive Linux errno; a forwarded call returns its negation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub i32);

pub type SysResult<T> = Result<T, Errno>;

impl Errno {
    pub const ENOENT: Errno = Errno(libc::ENOENT);
    pub const EINTR: Errno = Errno(libc::EINTR);
    pub const EBADF: Errno = Errno(libc::EBADF);
    pub const EACCES: Errno = Errno(libc::EACCES);
    pub const EXDEV: Errno = Errno(libc::EXDEV);
    pub const EFAULT: Errno = Errno(libc::EFAULT);
    pub const EINVAL: Errno = Errno(libc::EINVAL);
    pub const EAGAIN: Errno = Errno(libc::EAGAIN);
    pub const EOPNOTSUPP: Errno = Errno(libc::EOPNOTSUPP);
    pub const EMFILE: Errno = Errno(libc::EMFILE);
    pub const ENFILE: Errno = Errno(libc::ENFILE);
    pub const ENOTTY: Errno = Errno(libc::ENOTTY);
    pub const ERANGE: Errno = Errno(libc::ERANGE);
    pub const ENAMETOOLONG: Errno = Errno(libc::ENAMETOOLONG);
    pub const ENOSYS: Errno = Errno(libc::ENOSYS);
    pub const ELOOP: Errno = Errno(libc::ELOOP);
    pub const ENOTDIR: Errno = Errno(libc::ENOTDIR);
    pub const EISDIR: Errno = Errno(libc::EISDIR);
    pub const ENOTSOCK: Errno = Errno(libc::ENOTSOCK);
    pub const ENOPROTOOPT: Errno = Errno(libc::ENOPROTOOPT);
    pub const EAFNOSUPPORT: Errno = Errno(libc::EAFNOSUPPORT);
    pub const EMSGSIZE: Errno = Errno(libc::EMSGSIZE);
    pub const ENOBUFS: Errno = Errno(libc::ENOBUFS);
    pub const ECONNREFUSED: Errno = Errno(libc::ECONNREFUSED);
    pub const ESRCH: Errno = Errno(libc::ESRCH);
    pub const EPERM: Errno = Errno(libc::EPERM);
    pub const E2BIG: Errno = Errno(libc::E2BIG);
    pub const EIO: Errno = Errno(libc::EIO);
    pub const ENOEXEC: Errno = Errno(libc::ENOEXEC);
    pub const ENOMSG: Errno = Errno(libc::ENOMSG);
    pub const ETIMEDOUT: Errno = Errno(libc::ETIMEDOUT);
    pub const ENODEV: Errno = Errno(libc::ENODEV);
    pub const EBUSY: Errno = Errno(libc::EBUSY);

    /// The calling thread's errno after a failed host call.
    pub fn last() -> Errno {
        Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
    }
}

/// The value a forwarded call returns to the guest.
pub fn to_ret(r: SysResult<i64>) -> i64 {
    match r {
        Ok(v) => v,
        Err(Errno(e)) => -(e as i64),
    }
}
