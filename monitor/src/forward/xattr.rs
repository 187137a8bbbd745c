//! Reading extended attributes: getxattr, lgetxattr, fgetxattr, listxattr, llistxattr,
//! flistxattr (`ls -l` asks for ACLs and security labels of every file). Setting and removing
//! them stay unimplemented (ENOSYS).

use std::ffi::CString;

use super::errno::{Errno, SysResult};
use super::guest_mem::Guest;
use super::host::{ptr, uint};
use super::paths::At;
use super::Forwarder;

/// The largest attribute value or name list Linux hands out (XATTR_SIZE_MAX, XATTR_LIST_MAX).
const XATTR_MAX: u64 = 65536;

/// A host path for `at` usable without a directory descriptor.
fn plain_path(at: &At) -> SysResult<CString> {
    if at.dirfd == libc::AT_FDCWD {
        return Ok(at.path.clone());
    }
    let mut p = format!("/proc/self/fd/{}", at.dirfd).into_bytes();
    if !at.path.as_bytes().is_empty() {
        p.push(b'/');
        p.extend_from_slice(at.path.as_bytes());
    }
    CString::new(p).map_err(|_| Errno::EINVAL)
}

/// The guest buffer of `size` bytes (NULL when `size` is 0: only the length is asked for).
fn out_buffer(g: Guest, addr: u64, size: u64) -> SysResult<(*mut u8, u64)> {
    let size = size.min(XATTR_MAX);
    if size == 0 {
        return Ok((std::ptr::null_mut(), 0));
    }
    Ok((g.range(addr, size)?, size))
}

impl Forwarder {
    /// getxattr (`nr` SYS_getxattr) and lgetxattr (SYS_lgetxattr).
    pub(super) fn getxattr(
        &self,
        g: Guest,
        nr: libc::c_long,
        path: u64,
        name: u64,
        value: u64,
        size: u64,
    ) -> SysResult<i64> {
        let at = self.path(g, path)?;
        let host = plain_path(&at)?;
        let name = g.read_path(name)?;
        let (out, size) = out_buffer(g, value, size)?;
        // SAFETY: host C strings and a `size`-byte guest buffer (or NULL with size 0).
        unsafe { self.sys(nr, &[ptr(host.as_ptr()), ptr(name.as_ptr()), ptr(out), uint(size)]) }
    }

    pub(super) fn fgetxattr(&self, g: Guest, fd: u64, name: u64, value: u64, size: u64) -> SysResult<i64> {
        let h = self.fds.get(fd)?;
        let name = g.read_path(name)?;
        let (out, size) = out_buffer(g, value, size)?;
        // SAFETY: a host C string and a `size`-byte guest buffer (or NULL with size 0).
        unsafe { self.sys(libc::SYS_fgetxattr, &[h.raw() as libc::c_long, ptr(name.as_ptr()), ptr(out), uint(size)]) }
    }

    /// listxattr (`nr` SYS_listxattr) and llistxattr (SYS_llistxattr).
    pub(super) fn listxattr(&self, g: Guest, nr: libc::c_long, path: u64, list: u64, size: u64) -> SysResult<i64> {
        let at = self.path(g, path)?;
        let host = plain_path(&at)?;
        let (out, size) = out_buffer(g, list, size)?;
        // SAFETY: a host C string and a `size`-byte guest buffer (or NULL with size 0).
        unsafe { self.sys(nr, &[ptr(host.as_ptr()), ptr(out), uint(size)]) }
    }

    pub(super) fn flistxattr(&self, g: Guest, fd: u64, list: u64, size: u64) -> SysResult<i64> {
        let h = self.fds.get(fd)?;
        let (out, size) = out_buffer(g, list, size)?;
        // SAFETY: a `size`-byte guest buffer (or NULL with size 0).
        unsafe { self.sys(libc::SYS_flistxattr, &[h.raw() as libc::c_long, ptr(out), uint(size)]) }
    }
}
