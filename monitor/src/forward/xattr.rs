//! Extended attributes: reading them (getxattr, lgetxattr, fgetxattr, listxattr, llistxattr,
//! flistxattr: `ls -l` asks for ACLs and security labels of every file), setting and removing
//! them (setxattr, lsetxattr, fsetxattr, removexattr, lremovexattr, fremovexattr: `cp -a`,
//! `tar --xattrs`, `rsync -X` copy them). A name and a set's flags and value are checked here
//! first, as Linux checks them before the path or descriptor; the host checks permissions.

use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};

use super::errno::{Errno, SysResult};
use super::guest_mem::Guest;
use super::host::{ptr, uint};
use super::paths::At;
use super::Forwarder;

/// The largest attribute value or name list Linux hands out (XATTR_SIZE_MAX, XATTR_LIST_MAX).
const XATTR_MAX: u64 = 65536;

/// Linux 6.13's calls that name the object relative to a directory descriptor (x86-64
/// numbers; the libc crate has none yet). With them an attribute call is one host call on the
/// walk's result instead of three (an O_PATH open, the call through that descriptor's
/// /proc/self/fd name, which the host walks again, and a close): ~17 against ~11 us a
/// `getxattr` under `hrt run` here. Older hosts take the three.
pub const SYS_SETXATTRAT: libc::c_long = 463;
pub const SYS_GETXATTRAT: libc::c_long = 464;
pub const SYS_LISTXATTRAT: libc::c_long = 465;
pub const SYS_REMOVEXATTRAT: libc::c_long = 466;

/// `struct xattr_args` of setxattrat and getxattrat.
#[repr(C)]
struct XattrArgs {
    value: u64,
    size: u32,
    flags: u32,
}

/// Whether the host has the *xattrat calls: asked once, with a lookup of an attribute nobody
/// sets on "/" (a host that has them answers ENODATA or EOPNOTSUPP; one without, ENOSYS, or
/// EPERM from a container's filter).
fn have_xattrat() -> bool {
    static HAVE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAVE.get_or_init(|| {
        let args = XattrArgs { value: 0, size: 0, flags: 0 };
        // SAFETY: C strings and an xattr_args of the size passed; no buffer (size 0).
        let r = unsafe {
            libc::syscall(
                SYS_GETXATTRAT,
                libc::AT_FDCWD,
                c"/".as_ptr(),
                0,
                c"user.hrt-probe".as_ptr(),
                &args as *const XattrArgs,
                std::mem::size_of::<XattrArgs>(),
            )
        };
        r >= 0 || !matches!(Errno::last().0, libc::ENOSYS | libc::EPERM)
    })
}

/// The *xattrat flags for the walk's result: never follow a link the walk found not to be one
/// (or one the call does not follow).
fn at_flags(at: &At, follow: bool) -> libc::c_long {
    if at.nofollow || !follow {
        libc::AT_SYMLINK_NOFOLLOW as libc::c_long
    } else {
        0
    }
}

/// An O_PATH descriptor for the object the walk found (`follow`: a final symbolic link is
/// followed), and its name under /proc/self/fd: the xattr calls take no directory descriptor,
/// and the walk's result must be used as it was checked.
pub(super) fn open_object(at: &At, follow: bool) -> SysResult<(OwnedFd, CString)> {
    let nofollow = if at.nofollow || !follow { libc::O_NOFOLLOW } else { 0 };
    // SAFETY: a host C string owned by `at`.
    let fd = unsafe { libc::openat(at.dirfd, at.path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC | nofollow) };
    if fd < 0 {
        return Err(Errno::last());
    }
    // SAFETY: `fd` was just opened and is ours alone.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let name = CString::new(format!("/proc/self/fd/{fd}")).map_err(|_| Errno::EINVAL)?;
    Ok((owned, name))
}

/// The guest buffer of `size` bytes (NULL when `size` is 0: only the length is asked for).
fn out_buffer(g: Guest, addr: u64, size: u64) -> SysResult<(*mut u8, u64)> {
    let size = size.min(XATTR_MAX);
    if size == 0 {
        return Ok((std::ptr::null_mut(), 0));
    }
    Ok((g.range_mut(addr, size)?, size))
}

impl Forwarder {
    /// The object `path` names, walked to look at it (`inspect`) or to change it, opened; and
    /// its /proc/self/fd name.
    fn named_object(&self, g: Guest, path: u64, follow: bool, inspect: bool) -> SysResult<(OwnedFd, CString)> {
        let at = if inspect {
            self.path_at_to_inspect(g, libc::AT_FDCWD as u32 as u64, path, follow)?
        } else {
            self.path(g, path, follow)?
        };
        open_object(&at, follow)
    }

    /// getxattr (`nr` SYS_getxattr) and lgetxattr (SYS_lgetxattr). Both are made as getxattr
    /// of the object's /proc/self/fd name, which reaches the object itself (for lgetxattr a
    /// symbolic link opened without following it).
    pub(super) fn getxattr(
        &self,
        g: Guest,
        nr: libc::c_long,
        path: u64,
        name: u64,
        value: u64,
        size: u64,
    ) -> SysResult<i64> {
        let follow = nr == libc::SYS_getxattr;
        let name = xattr_name(g, name)?;
        if have_xattrat() {
            let at = self.path_at_to_inspect(g, libc::AT_FDCWD as u32 as u64, path, follow)?;
            let (out, size) = out_buffer(g, value, size)?;
            let args = XattrArgs { value: out as u64, size: size as u32, flags: 0 };
            let call = [at.dirfd as libc::c_long, ptr(at.path.as_ptr()), at_flags(&at, follow), ptr(name.as_ptr())];
            let args =
                [call[0], call[1], call[2], call[3], ptr(&raw const args), std::mem::size_of::<XattrArgs>() as _];
            // SAFETY: host C strings and an xattr_args naming a `size`-byte guest buffer (or
            // NULL with size 0).
            return unsafe { self.sys(SYS_GETXATTRAT, &args) };
        }
        let (_object, host) = self.named_object(g, path, follow, true)?;
        let (out, size) = out_buffer(g, value, size)?;
        // SAFETY: host C strings and a `size`-byte guest buffer (or NULL with size 0).
        unsafe { self.sys(libc::SYS_getxattr, &[ptr(host.as_ptr()), ptr(name.as_ptr()), ptr(out), uint(size)]) }
    }

    pub(super) fn fgetxattr(&self, g: Guest, fd: u64, name: u64, value: u64, size: u64) -> SysResult<i64> {
        let name = xattr_name(g, name)?;
        let h = self.fds().get(fd)?;
        let (out, size) = out_buffer(g, value, size)?;
        // SAFETY: a host C string and a `size`-byte guest buffer (or NULL with size 0).
        unsafe { self.sys(libc::SYS_fgetxattr, &[h.raw() as libc::c_long, ptr(name.as_ptr()), ptr(out), uint(size)]) }
    }

    /// listxattr (`nr` SYS_listxattr) and llistxattr (SYS_llistxattr), as getxattr.
    pub(super) fn listxattr(&self, g: Guest, nr: libc::c_long, path: u64, list: u64, size: u64) -> SysResult<i64> {
        let follow = nr == libc::SYS_listxattr;
        let at = self.path_at_to_inspect(g, libc::AT_FDCWD as u32 as u64, path, follow)?;
        if have_xattrat() {
            let (out, size) = out_buffer(g, list, size)?;
            let args = [at.dirfd as libc::c_long, ptr(at.path.as_ptr()), at_flags(&at, follow), ptr(out), uint(size)];
            // SAFETY: a host C string and a `size`-byte guest buffer (or NULL with size 0).
            return unsafe { self.sys(SYS_LISTXATTRAT, &args) };
        }
        let (_object, host) = open_object(&at, follow)?;
        let (out, size) = out_buffer(g, list, size)?;
        // SAFETY: a host C string and a `size`-byte guest buffer (or NULL with size 0).
        unsafe { self.sys(libc::SYS_listxattr, &[ptr(host.as_ptr()), ptr(out), uint(size)]) }
    }

    pub(super) fn flistxattr(&self, g: Guest, fd: u64, list: u64, size: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        let (out, size) = out_buffer(g, list, size)?;
        // SAFETY: a `size`-byte guest buffer (or NULL with size 0).
        unsafe { self.sys(libc::SYS_flistxattr, &[h.raw() as libc::c_long, ptr(out), uint(size)]) }
    }

    /// setxattr (`nr` SYS_setxattr) and lsetxattr (SYS_lsetxattr), made on the object the walk
    /// found, as getxattr. The value (at most XATTR_SIZE_MAX bytes: E2BIG beyond) is read from
    /// the program's memory.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn setxattr(
        &self,
        g: Guest,
        nr: libc::c_long,
        path: u64,
        name: u64,
        value: u64,
        size: u64,
        flags: u64,
    ) -> SysResult<i64> {
        let follow = nr == libc::SYS_setxattr;
        let (name, value) = set_arguments(g, name, value, size, flags)?;
        if have_xattrat() {
            let at = self.path(g, path, follow)?;
            // The flags are an int, as for setxattr.
            let args = XattrArgs { value: value.as_ptr() as u64, size: size as u32, flags: flags as u32 };
            let call = [at.dirfd as libc::c_long, ptr(at.path.as_ptr()), at_flags(&at, follow), ptr(name.as_ptr())];
            let args =
                [call[0], call[1], call[2], call[3], ptr(&raw const args), std::mem::size_of::<XattrArgs>() as _];
            // SAFETY: host C strings and an xattr_args naming a `size`-byte buffer of ours.
            return unsafe { self.sys(SYS_SETXATTRAT, &args) };
        }
        let (_object, host) = self.named_object(g, path, follow, false)?;
        // SAFETY: host C strings and a `size`-byte buffer of ours.
        unsafe {
            self.sys(
                libc::SYS_setxattr,
                &[ptr(host.as_ptr()), ptr(name.as_ptr()), ptr(value.as_ptr()), uint(size), uint(flags)],
            )
        }
    }

    pub(super) fn fsetxattr(&self, g: Guest, fd: u64, name: u64, value: u64, size: u64, flags: u64) -> SysResult<i64> {
        let (name, value) = set_arguments(g, name, value, size, flags)?;
        let h = self.fds().get(fd)?;
        // SAFETY: a host C string and a `size`-byte buffer of ours.
        unsafe {
            self.sys(
                libc::SYS_fsetxattr,
                &[h.raw() as libc::c_long, ptr(name.as_ptr()), ptr(value.as_ptr()), uint(size), uint(flags)],
            )
        }
    }

    /// removexattr (`nr` SYS_removexattr) and lremovexattr (SYS_lremovexattr), as setxattr.
    pub(super) fn removexattr(&self, g: Guest, nr: libc::c_long, path: u64, name: u64) -> SysResult<i64> {
        let follow = nr == libc::SYS_removexattr;
        let name = xattr_name(g, name)?;
        if have_xattrat() {
            let at = self.path(g, path, follow)?;
            let args = [at.dirfd as libc::c_long, ptr(at.path.as_ptr()), at_flags(&at, follow), ptr(name.as_ptr())];
            // SAFETY: host C strings.
            return unsafe { self.sys(SYS_REMOVEXATTRAT, &args) };
        }
        let (_object, host) = self.named_object(g, path, follow, false)?;
        // SAFETY: host C strings.
        unsafe { self.sys(libc::SYS_removexattr, &[ptr(host.as_ptr()), ptr(name.as_ptr())]) }
    }

    pub(super) fn fremovexattr(&self, g: Guest, fd: u64, name: u64) -> SysResult<i64> {
        let name = xattr_name(g, name)?;
        let h = self.fds().get(fd)?;
        // SAFETY: a host C string.
        unsafe { self.sys(libc::SYS_fremovexattr, &[h.raw() as libc::c_long, ptr(name.as_ptr())]) }
    }
}

/// The attribute name at `name`, read before the path or descriptor as Linux does: empty or
/// longer than XATTR_NAME_MAX (255 bytes) is ERANGE.
fn xattr_name(g: Guest, name: u64) -> SysResult<CString> {
    const XATTR_NAME_MAX: usize = 255;
    match g.read_cstr(name, XATTR_NAME_MAX + 1) {
        Ok(n) if n.is_empty() => Err(Errno::ERANGE),
        Err(Errno::ENAMETOOLONG) => Err(Errno::ERANGE),
        r => r,
    }
}

/// A set call's arguments in Linux's order, all before the path or descriptor: the flags
/// (XATTR_CREATE, XATTR_REPLACE; else EINVAL), the name, the value.
fn set_arguments(g: Guest, name: u64, value: u64, size: u64, flags: u64) -> SysResult<(CString, Vec<u8>)> {
    if flags as u32 & !((libc::XATTR_CREATE | libc::XATTR_REPLACE) as u32) != 0 {
        return Err(Errno::EINVAL);
    }
    let name = xattr_name(g, name)?;
    Ok((name, in_buffer(g, value, size)?))
}

/// A value to set: `size` bytes of the program's memory, copied (E2BIG past XATTR_SIZE_MAX).
fn in_buffer(g: Guest, addr: u64, size: u64) -> SysResult<Vec<u8>> {
    if size > XATTR_MAX {
        return Err(Errno::E2BIG);
    }
    if size == 0 {
        return Ok(Vec::new());
    }
    g.read_bytes(addr, size)
}
