//! Owners, file-system statistics and groups: chown, fchown, lchown, fchownat, statfs, fstatfs,
//! getgroups (performed on the host as the user running `hrt`, who is the program's user).

use super::errno::{Errno, SysResult};
use super::guest_mem::Guest;
use super::host::{int, ptr, uint};
use super::Forwarder;

/// sizeof(struct statfs) on x86-64 Linux.
const STATFS_SIZE: u64 = 120;

impl Forwarder {
    /// chown, lchown (`flags` AT_SYMLINK_NOFOLLOW) and fchownat. uid/gid are 32-bit; -1 keeps one.
    pub(super) fn fchownat(&self, g: Guest, dirfd: u64, path: u64, uid: u64, gid: u64, flags: u64) -> SysResult<i64> {
        // Linux refuses an unknown flag (an int) before the path.
        if flags as u32 & !((libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH) as u32) != 0 {
            return Err(Errno::EINVAL);
        }
        let follow = flags & libc::AT_SYMLINK_NOFOLLOW as u64 == 0;
        let at = self.path_at(g, dirfd, path, follow)?;
        // The walk checked the last name: never follow a link swapped in since.
        let flags = if at.nofollow { flags | libc::AT_SYMLINK_NOFOLLOW as u64 } else { flags };
        let args = [at.dirfd as libc::c_long, ptr(at.path.as_ptr()), uint(uid), uint(gid), int(flags)];
        // SAFETY: a host C string, owned by `at`.
        unsafe { self.sys(libc::SYS_fchownat, &args) }
    }

    pub(super) fn fchown(&self, fd: u64, uid: u64, gid: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        // SAFETY: no pointers.
        unsafe { self.sys(libc::SYS_fchown, &[h.raw() as libc::c_long, uint(uid), uint(gid)]) }
    }

    pub(super) fn statfs(&self, g: Guest, path: u64, buf: u64) -> SysResult<i64> {
        let at = self.path(g, path, true)?;
        let out = g.range_mut(buf, STATFS_SIZE)?;
        // statfs takes no directory fd: open the walk's result as a path-only descriptor
        // relative to the directory the walk ended in, and ask fstatfs.
        let nofollow = if at.nofollow { libc::O_NOFOLLOW } else { 0 };
        // SAFETY: a host C string owned by `at`.
        let fd = unsafe { libc::openat(at.dirfd, at.path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC | nofollow) };
        if fd < 0 {
            return Err(Errno::last());
        }
        // SAFETY: a statfs-sized buffer in guest memory; `fd` is ours and closed right after.
        let r = unsafe { self.sys(libc::SYS_fstatfs, &[fd as libc::c_long, ptr(out)]) };
        // SAFETY: closing the descriptor opened above.
        unsafe { libc::close(fd) };
        r
    }

    pub(super) fn fstatfs(&self, g: Guest, fd: u64, buf: u64) -> SysResult<i64> {
        let h = self.fds().get(fd)?;
        let out = g.range_mut(buf, STATFS_SIZE)?;
        // SAFETY: a statfs-sized buffer in guest memory.
        unsafe { self.sys(libc::SYS_fstatfs, &[h.raw() as libc::c_long, ptr(out)]) }
    }

    /// getgroups(size, list): the user's supplementary groups (size 0: only how many).
    pub(super) fn getgroups(&self, g: Guest, size: u64, list: u64) -> SysResult<i64> {
        let size = size as u32 as i32;
        if size < 0 {
            return Err(Errno::EINVAL);
        }
        let out = if size == 0 { std::ptr::null_mut() } else { g.range_mut(list, size as u64 * 4)? };
        // SAFETY: NULL (size 0) or `size` gid_t slots in guest memory.
        unsafe { self.sys(libc::SYS_getgroups, &[size as libc::c_long, ptr(out)]) }
    }

    /// capget(header, data): the capabilities of a process as the host has them (the program's
    /// pid is `hrt`'s host pid, so its own are `hrt`'s, as they are natively for a program the
    /// same user starts). Linux's version handshake: an unknown version is answered with the
    /// preferred one in the header (EINVAL, or 0 without a data pointer).
    pub(super) fn capget(&self, g: Guest, header: u64, data: u64) -> SysResult<i64> {
        let mut hdr: [u32; 2] = g.read(header)?;
        let asked = hdr;
        // The program's own pid: this thread's capabilities, which follow the program's capset
        // (`caps::catch_up`); `hrt`'s main thread may not have yet (LTP's capget01 read back the
        // CAP_NET_RAW it had dropped).
        if hdr[1] == std::process::id() {
            hdr[1] = 0;
        }
        let mut local = [0u32; 6];
        let out = if data == 0 { std::ptr::null_mut() } else { local.as_mut_ptr() };
        // SAFETY: `hdr` is a header; `out` is NULL or room for two capability records.
        let r = unsafe { self.sys(libc::SYS_capget, &[ptr(hdr.as_mut_ptr()), ptr(out)]) };
        hdr[1] = asked[1];
        // The host may have put its preferred version in the header.
        g.write(header, &hdr)?;
        let r = r?;
        if data != 0 {
            /// _LINUX_CAPABILITY_VERSION_1: one record; the later versions: two.
            const V1: u32 = 0x1998_0330;
            let records = if hdr[0] == V1 { 3 } else { 6 };
            g.write_bytes(data, &u32_bytes(&local[..records]))?;
        }
        Ok(r)
    }

    /// capset(header, data) for the program (its kernel checked the header's pid): the host
    /// decides on this thread, and every thread of `hrt` follows (`caps`).
    pub(super) fn capset(&self, g: Guest, header: u64, data: u64) -> SysResult<i64> {
        spawn_child_keeps_ids()?;
        let [version, _pid]: [u32; 2] = g.read(header)?;
        if !super::caps::known_version(version) {
            return Err(Errno::EINVAL);
        }
        let records = if version == super::caps::VERSION_1 { 3 } else { 6 };
        let bytes = g.read_bytes(data, records as u64 * 4)?;
        let mut sets = [0u32; 6];
        for (to, c) in sets.iter_mut().zip(bytes.chunks_exact(4)) {
            *to = u32::from_ne_bytes([c[0], c[1], c[2], c[3]]);
        }
        super::caps::set(sets).map(|()| 0).map_err(Errno)
    }
}

/// The program's own process as `getpriority`/`setpriority` (`process` PRIO_PROCESS) or
/// `ioprio_get`/`ioprio_set` (IOPRIO_WHO_PROCESS) name it: `who` 0 or its pid (the kernel
/// turns one of its thread ids into 0).
fn own_process(which: u64, who: u64, process: u64, pid: &str) -> bool {
    which as u32 as u64 == process && (who as u32 == 0 || who.to_string() == pid)
}

/// A vfork child (a spawn child, before its exec) shares `hrt`'s host process with the
/// program: a change of ids there would be the program's too, so it is ENOSYS with a line.
fn spawn_child_keeps_ids() -> SysResult<()> {
    if !super::procs::in_spawn_child() {
        return Ok(());
    }
    super::sockets::report_once(
        "a vfork child's change of its ids is not implemented (it would change the parent's): ENOSYS".into(),
    );
    Err(Errno::ENOSYS)
}

const PRIO_PROCESS: u64 = 0;
const IOPRIO_WHO_PROCESS: u64 = 1;

impl Forwarder {
    /// getpriority (and ioprio_get): the program's niceness is `hrt`'s main thread's (the raw call's 20 - nice,
    /// as Linux returns it); anything else is the host's answer.
    pub(super) fn getpriority(&self, nr: libc::c_long, which: u64, who: u64) -> SysResult<i64> {
        let process = if nr == libc::SYS_getpriority { PRIO_PROCESS } else { IOPRIO_WHO_PROCESS };
        let who = if own_process(which, who, process, &self.host_pid) { std::process::id() as u64 } else { who };
        // SAFETY: no pointers.
        unsafe { self.sys(nr, &[int(which), who as u32 as libc::c_long]) }
    }

    /// sched_getattr(pid, attr, size, flags): the program's own scheduling attributes are its
    /// host process's (`hrt`'s main thread's, whose niceness is the program's; the kernel turns
    /// one of the program's thread ids into 0); the host checks the arguments and fills the
    /// record, of which the program gets the `size` bytes Linux writes.
    /// clock_gettime or clock_getres (`nr`) of another process's CPU clock (its kernel asks for
    /// no other clock: a pid in the clock id, not per thread, not the program's): the host's.
    pub(super) fn process_clock(&self, g: Guest, nr: libc::c_long, clock: u64, tp: u64) -> SysResult<i64> {
        const PERTHREAD: i32 = 4;
        const KIND: i32 = 3;
        let c = clock as i32;
        let id = !(c >> 3) as u32;
        if c >= 0 || c & KIND == KIND || c & PERTHREAD != 0 || id == 0 || id == std::process::id() {
            return Err(Errno::EINVAL);
        }
        let mut t = [0i64; 2];
        // SAFETY: `t` is a timespec of the monitor's.
        let r = unsafe { self.sys(nr, &[c as libc::c_long, ptr(t.as_mut_ptr())]) }?;
        if tp != 0 || nr == libc::SYS_clock_gettime {
            g.write(tp, &t)?;
        }
        Ok(r)
    }

    /// adjtimex(buf) and clock_adjtime(clock, buf) (`clock` None: adjtimex) that only read the
    /// host's clock state (modes 0 or ADJ_OFFSET_SS_READ, as glibc's `ntp_gettime` and
    /// `adjtimex` queries use): the host's answer. Changing the clock is ENOSYS with a line: the
    /// program's clocks count from the host's at its start, so a change would not reach them.
    pub(super) fn adjtimex(&self, g: Guest, clock: Option<u64>, buf: u64) -> SysResult<i64> {
        const TIMEX: usize = 208;
        const ADJ_OFFSET_SS_READ: u32 = 0xa001;
        let mut t: [u8; TIMEX] = g.read(buf)?;
        let modes = u32::from_ne_bytes([t[0], t[1], t[2], t[3]]);
        if modes != 0 && modes != ADJ_OFFSET_SS_READ {
            super::sockets::report_once(format!(
                "adjtimex with modes {modes:#x} (a change of the clock) is not implemented: ENOSYS"
            ));
            return Err(Errno::ENOSYS);
        }
        // SAFETY: `t` is a struct timex of the monitor's.
        let r = unsafe {
            match clock {
                None => self.sys(libc::SYS_adjtimex, &[ptr(t.as_mut_ptr())]),
                Some(c) => self.sys(libc::SYS_clock_adjtime, &[int(c), ptr(t.as_mut_ptr())]),
            }
        }?;
        g.write(buf, &t)?;
        Ok(r)
    }

    /// clock_settime(CLOCK_REALTIME, tp) for the program: the host's clock is the program's
    /// (its kernel then counts its realtime clock from the new time); the host decides (EPERM
    /// without CAP_SYS_TIME, EINVAL). Only the realtime clock: the kernel answers the others.
    pub(super) fn clock_settime(&self, g: Guest, clock: u64, tp: u64) -> SysResult<i64> {
        if clock != libc::CLOCK_REALTIME as u64 {
            return Err(Errno::EINVAL);
        }
        let t: [i64; 2] = g.read(tp)?;
        // SAFETY: `t` is a struct timespec of the monitor's.
        unsafe { self.sys(libc::SYS_clock_settime, &[int(clock), ptr(t.as_ptr())]) }
    }

    /// settimeofday(tv, tz) for the program, as `clock_settime` (either may be NULL).
    pub(super) fn settimeofday(&self, g: Guest, tv: u64, tz: u64) -> SysResult<i64> {
        let tv: Option<[i64; 2]> = if tv != 0 { Some(g.read(tv)?) } else { None };
        let tz: Option<[i32; 2]> = if tz != 0 { Some(g.read(tz)?) } else { None };
        let tv_ptr = tv.as_ref().map_or(std::ptr::null(), |t| t.as_ptr());
        let tz_ptr = tz.as_ref().map_or(std::ptr::null(), |t| t.as_ptr());
        // SAFETY: a struct timeval and a struct timezone of the monitor's, or NULL.
        unsafe { self.sys(libc::SYS_settimeofday, &[ptr(tv_ptr), ptr(tz_ptr)]) }
    }

    /// The set-id calls (setuid, setreuid, setresuid, their group forms; `nr`, `a`) for the
    /// program, which is `hrt`'s host process: made through glibc's wrappers, which change every
    /// thread of `hrt` (its setxid broadcast), so that the vCPU threads and the forwarding
    /// workers all act with the new ids. The host applies Linux's rules (EPERM).
    pub(super) fn set_ids(&self, nr: libc::c_long, a: &[u64; 6]) -> SysResult<i64> {
        spawn_child_keeps_ids()?;
        let users = matches!(nr, libc::SYS_setuid | libc::SYS_setreuid | libc::SYS_setresuid);
        super::caps::changing_ids(|| {
            // First on this thread alone, whose capabilities are the program's: a refusal
            // (EPERM) ends here. glibc's broadcast aborts the process when its threads'
            // answers differ.
            // SAFETY: a plain call on this thread's credentials, no pointers.
            let first = unsafe { libc::syscall(nr, a[0] as libc::c_long, a[1] as libc::c_long, a[2] as libc::c_long) };
            if first < 0 {
                return Err(Errno::last());
            }
            // The ids this thread has now, which every thread gets, given explicitly: the same
            // call repeated on the others could differ from its effect here, where it may have
            // made this thread privileged (setuid(0) back to a saved 0 set all three ids here,
            // only the effective one on the others: threads with different ids).
            let mut ids = [0u32; 3];
            let get = if users { libc::SYS_getresuid } else { libc::SYS_getresgid };
            // SAFETY: three u32 of ours.
            unsafe { libc::syscall(get, ids.as_mut_ptr(), ids.as_mut_ptr().add(1), ids.as_mut_ptr().add(2)) };
            // SAFETY: plain calls on this process's credentials, no pointers.
            let r = unsafe {
                if users {
                    libc::setresuid(ids[0], ids[1], ids[2])
                } else {
                    libc::setresgid(ids[0], ids[1], ids[2])
                }
            };
            if r < 0 {
                Err(Errno::last())
            } else {
                Ok(0)
            }
        })
    }

    /// setfsuid or setfsgid (`nr`) of `id` for the program: on every thread of `hrt` (Linux
    /// keeps them per thread; any thread of `hrt` may serve the program's file calls), with
    /// the capabilities a new file-system uid leaves (Linux clears or restores the file
    /// capabilities) as the program's latest. The previous id, as Linux answers, also when the
    /// host refuses the change; -1 only asks.
    pub(super) fn set_fs_id(&self, nr: libc::c_long, id: u64) -> SysResult<i64> {
        let id = id as u32;
        if id == u32::MAX {
            // SAFETY: a plain call that changes nothing.
            return Ok(unsafe { libc::syscall(nr, id) });
        }
        spawn_child_keeps_ids()?;
        // SAFETY: a call on the calling thread's credentials, no pointers.
        Ok(super::caps::changing_ids(|| unsafe { crate::every_thread::everywhere(nr, [id as u64, 0, 0]) }))
    }

    /// setgroups(size, list) for the program (every thread of `hrt`, as `set_ids`).
    pub(super) fn setgroups(&self, g: Guest, size: u64, list: u64) -> SysResult<i64> {
        spawn_child_keeps_ids()?;
        let size = size as u32 as usize;
        if size > 65_536 {
            return Err(Errno::EINVAL);
        }
        let bytes = g.read_bytes(list, size as u64 * 4)?;
        let groups: Vec<libc::gid_t> =
            bytes.chunks_exact(4).map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect();
        // SAFETY: `groups` holds `size` gids.
        if unsafe { libc::setgroups(size, groups.as_ptr()) } < 0 {
            Err(Errno::last())
        } else {
            Ok(0)
        }
    }

    /// getresuid or getresgid (`nr`): the host's ids of `hrt`, which are the program's.
    pub(super) fn get_res_ids(&self, g: Guest, nr: libc::c_long, a: &[u64; 6]) -> SysResult<i64> {
        let mut ids = [0u32; 3];
        let p = ids.as_mut_ptr();
        // SAFETY: three u32 of the monitor's.
        unsafe { self.sys(nr, &[ptr(p), ptr(p.wrapping_add(1)), ptr(p.wrapping_add(2))]) }?;
        for (i, id) in ids.iter().enumerate() {
            g.write(a[i], id)?;
        }
        Ok(0)
    }

    /// sched_rr_get_interval(pid, tp): the program's (its kernel passes 0 for a thread of its
    /// own) is `hrt`'s main thread's time slice, SCHED_OTHER's as the program's policy says;
    /// another process's is the host's answer.
    pub(super) fn sched_rr_get_interval(&self, g: Guest, pid: u64, tp: u64) -> SysResult<i64> {
        let pid = if own_process(0, pid, 0, &self.host_pid) { std::process::id() as u64 } else { pid };
        let mut t = [0i64; 2];
        // SAFETY: `t` is a timespec of the monitor's.
        let r = unsafe {
            self.sys(libc::SYS_sched_rr_get_interval, &[pid as u32 as i32 as libc::c_long, ptr(t.as_mut_ptr())])
        }?;
        g.write(tp, &t)?;
        Ok(r)
    }

    pub(super) fn sched_getattr(&self, g: Guest, pid: u64, attr: u64, size: u64, flags: u64) -> SysResult<i64> {
        let pid = if own_process(0, pid, 0, &self.host_pid) { std::process::id() as u64 } else { pid };
        let mut local = [0u8; 4096];
        let size = size as u32;
        let attr_arg = if attr == 0 { 0 } else { ptr(local.as_mut_ptr()) };
        // SAFETY: NULL (refused by the host) or `local`, room for the largest record Linux
        // accepts (a page); `size` beyond it is EINVAL there.
        let r = unsafe {
            self.sys(libc::SYS_sched_getattr, &[pid as u32 as libc::c_long, attr_arg, int(size as u64), int(flags)])
        }?;
        g.write_bytes(attr, &local[..(size as usize).min(local.len())])?;
        Ok(r)
    }

    /// sched_setscheduler, sched_setparam or sched_setattr (`nr`) of another process (the kernel
    /// keeps the program's own policy): the host's call with the program's record, so its
    /// checks and answers are Linux's (ESRCH, EINVAL, EPERM for another user's process without
    /// the capability). For another HRT process that sets its `hrt`'s main thread, which the
    /// other program's own sched_getscheduler does not show (its kernel keeps its policy).
    /// Never the monitor's own process or one of its threads, which the program has no name
    /// for: ESRCH.
    pub(super) fn sched_set_other(&self, g: Guest, nr: libc::c_long, a: &[u64; 6]) -> SysResult<i64> {
        let pid = a[0] as u32;
        if nr == libc::SYS_sched_setscheduler && pid.to_string() == self.host_pid {
            return own_policy(a[1]);
        }
        if pid == 0
            || pid.to_string() == self.host_pid
            || std::path::Path::new(&format!("/proc/self/task/{pid}")).exists()
        {
            return Err(Errno::ESRCH);
        }
        let record = if nr == libc::SYS_sched_setattr {
            // The kernel checked the size (48 to a page, zeros past what it knows).
            let size = g.read::<u32>(a[1])?.clamp(48, 4096);
            g.read_bytes(a[1], size as u64)?
        } else {
            let param = if nr == libc::SYS_sched_setscheduler { a[2] } else { a[1] };
            g.read::<i32>(param)?.to_ne_bytes().to_vec()
        };
        let rec = ptr(record.as_ptr());
        let args: &[libc::c_long] = match nr {
            libc::SYS_sched_setscheduler => &[pid as libc::c_long, a[1] as i32 as libc::c_long, rec],
            libc::SYS_sched_setparam => &[pid as libc::c_long, rec],
            _ => &[pid as libc::c_long, rec, int(a[2])],
        };
        // SAFETY: the record is the monitor's copy, as long as the host reads it.
        unsafe { self.sys(nr, args) }
    }

    /// setpriority (and ioprio_set): for the program's own process every thread of `hrt` takes the value (they
    /// all run the program: its vCPUs, the forwarding threads, the spawner of its children), the
    /// main thread first, whose refusal (EACCES, EPERM) is the answer; anything else is the
    /// host's call, with its permission checks.
    pub(super) fn setpriority(&self, nr: libc::c_long, which: u64, who: u64, prio: u64) -> SysResult<i64> {
        let process = if nr == libc::SYS_setpriority { PRIO_PROCESS } else { IOPRIO_WHO_PROCESS };
        let one = |tid: u64| {
            // SAFETY: no pointers.
            unsafe { self.sys(nr, &[int(which), tid as u32 as libc::c_long, int(prio)]) }
        };
        if !own_process(which, who, process, &self.host_pid) {
            return one(who);
        }
        let me = std::process::id() as u64;
        one(me)?;
        let tasks = std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten();
        for tid in tasks.filter_map(|e| e.file_name().to_str()?.parse::<u64>().ok()) {
            if tid != me {
                // A thread that ended meanwhile is no matter.
                let _ = one(tid);
            }
        }
        Ok(0)
    }
}

/// `u32`s as their bytes.
fn u32_bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

/// The program set its own policy (SCHED_OTHER, BATCH or IDLE; the kernel keeps it and sends
/// it here with the program's pid, which no other call names): every thread of `hrt` takes it
/// on the host, as they all run the program (its vCPUs, the forwarding threads, the spawner of
/// its children, which inherit it), and threads made later inherit it from their makers. The
/// main thread's refusal is the answer (the kernel does not look at it).
fn own_policy(policy: u64) -> SysResult<i64> {
    const SCHED_BATCH: u64 = 3;
    const SCHED_IDLE: u64 = 5;
    if !matches!(policy, 0 | SCHED_BATCH | SCHED_IDLE) {
        return Err(Errno::EINVAL);
    }
    let param = libc::sched_param { sched_priority: 0 };
    let set = |tid: i64| {
        // SAFETY: a param on this stack; sched_setscheduler only reads it.
        unsafe { libc::syscall(libc::SYS_sched_setscheduler, tid, policy as libc::c_long, &param) }
    };
    let main = std::process::id() as i64;
    if set(main) < 0 {
        return Err(Errno::last());
    }
    let tasks = std::fs::read_dir("/proc/self/task").map_err(|_| Errno::ESRCH)?;
    for tid in tasks.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i64>().ok()) {
        if tid != main {
            set(tid);
        }
    }
    Ok(0)
}
