//! access() and faccessat() without AT_EACCESS check with the real ids, for the whole path
//! walk, as Linux's `access_override_creds` does: the file-system ids become the real ones and
//! the effective capabilities are cleared for a non-root real uid, or become the permitted ones
//! for root. The monitor walks the path itself (walk.rs) before the host's faccessat sees the
//! last name, and walked it with the effective ids: after seteuid(1000) a file under a
//! directory only root may search was EACCES (Linux: accessible, the real uid is 0), and after
//! setresuid(1000, 0, 0) it was accessible (Linux: EACCES).

/// Runs `f` on the calling thread with the credentials access() checks with, then puts the
/// thread's own back. Three reads and no change in the usual cases (real and effective ids
/// alike, and the effective capabilities what the override would make them).
pub fn as_real_ids<R>(f: impl FnOnce() -> R) -> R {
    let (mut u, mut g) = ([0u32; 3], [0u32; 3]);
    let header: [u32; 2] = [0x2008_0522, 0];
    let mut caps = [[0u32; 3]; 2];
    // SAFETY: three u32 each, two capability records (version 3) of ours.
    let read = unsafe {
        libc::syscall(libc::SYS_getresuid, u.as_mut_ptr(), u.as_mut_ptr().add(1), u.as_mut_ptr().add(2)) == 0
            && libc::syscall(libc::SYS_getresgid, g.as_mut_ptr(), g.as_mut_ptr().add(1), g.as_mut_ptr().add(2)) == 0
            && libc::syscall(libc::SYS_capget, header.as_ptr(), caps.as_mut_ptr()) == 0
    };
    if !read {
        return f();
    }
    let (real_uid, real_gid) = (u[0], g[0]);
    // struct __user_cap_data_struct: effective, permitted, inheritable.
    let mut checked = caps;
    for record in &mut checked {
        record[0] = if real_uid == 0 { record[1] } else { 0 };
    }
    if u[0] == u[1] && g[0] == g[1] && checked == caps {
        return f();
    }
    // SAFETY: per-thread credential calls on this thread (raw: glibc's wrappers would not
    // broadcast these, but say so plainly), with values it had or is allowed (fs ids among
    // its real, effective and saved ones; an effective set within the permitted one).
    let (old_fsuid, old_fsgid) = unsafe {
        let fsuid = libc::syscall(libc::SYS_setfsuid, real_uid);
        let fsgid = libc::syscall(libc::SYS_setfsgid, real_gid);
        libc::syscall(libc::SYS_capset, header.as_ptr(), checked.as_ptr());
        (fsuid, fsgid)
    };
    let out = f();
    // SAFETY: as above: the thread's own values back.
    unsafe {
        libc::syscall(libc::SYS_setfsuid, old_fsuid);
        libc::syscall(libc::SYS_setfsgid, old_fsgid);
        libc::syscall(libc::SYS_capset, header.as_ptr(), caps.as_ptr());
    }
    out
}
