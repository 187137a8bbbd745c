//! User and group ids. The program runs as `hrt`'s host process, with its ids: at start the
//! boot-info block's `uid` and `gid`, real, effective and saved alike, and its supplementary
//! groups (the host's `getgroups`). Calls that set an id (or the group list) to the value it
//! already has succeed here at once, as on Linux: GNU make, for one, sets its effective ids to
//! their own values before it runs a command. Any other change is made by the monitor on `hrt`'s
//! host process (glibc's wrappers there change every one of its threads, the vCPU threads and
//! the forwarding workers among them, so the program's file accesses happen with the new ids),
//! which also applies Linux's rules (EPERM without CAP_SETUID/CAP_SETGID, as the host's
//! `capget` reports `hrt`'s); the ids are then read back from the host (`refresh`).

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use crate::arch::traps::TrapFrame;
use linux_raw_sys::general::{
    __NR_capget, __NR_capset, __NR_getgroups, __NR_getresgid, __NR_getresuid, __NR_setfsgid, __NR_setfsuid,
    __NR_setgid, __NR_setgroups, __NR_setregid, __NR_setresgid, __NR_setresuid, __NR_setreuid, __NR_setuid,
};

use crate::linux::errno::{SysResult, EINVAL, ENOSYS, EPERM};
use crate::linux::process::current_tid;
use crate::linux::syscall::forward;
use crate::linux::uaccess;
use crate::linux::usermem::with_scratch;

/// Linux's NGROUPS_MAX.
const NGROUPS_MAX: u64 = 65536;

/// "Leave this id as it is" in the set calls.
const UNCHANGED: u32 = u32::MAX;

/// Real, effective and saved user ids, then group ids (valid once `READ` is set).
static IDS: [AtomicU32; 6] = [const { AtomicU32::new(0) }; 6];
static READ: AtomicBool = AtomicBool::new(false);
const RUID: usize = 0;
const EUID: usize = 1;
const RGID: usize = 3;
const EGID: usize = 4;

fn ids() -> [u32; 6] {
    if !READ.load(Ordering::Acquire) {
        let boot = crate::bootinfo::get();
        for (i, id) in IDS.iter().enumerate() {
            id.store(if i < 3 { boot.uid } else { boot.gid }, Ordering::Relaxed);
        }
        READ.store(true, Ordering::Release);
    }
    core::array::from_fn(|i| IDS[i].load(Ordering::Relaxed))
}

/// The real user id (what signals the program sends carry, and `getuid`).
pub fn ruid() -> u32 {
    ids()[RUID]
}

/// The effective user id.
pub fn euid() -> u32 {
    ids()[EUID]
}

/// The real group id.
pub fn rgid() -> u32 {
    ids()[RGID]
}

/// The effective group id.
pub fn egid() -> u32 {
    ids()[EGID]
}

const CAP_SETGID: u32 = 6;

/// Whether `hrt`'s host process has capability `cap` in its effective set.
pub fn capable(cap: u32) -> bool {
    const VERSION_3: u64 = 0x2008_0522;
    let r = with_scratch(|page| {
        // SAFETY: `page` is a fresh page of program memory only we know: the header (version,
        // pid 0), then the two data records.
        unsafe { (page as *mut u64).write(VERSION_3) };
        let r = forward(__NR_capget as u64, [page, page + 8, 0, 0, 0, 0]);
        // SAFETY: as above; the first record's first word is the effective set's low half.
        if r < 0 {
            r
        } else {
            unsafe { ((page + 8) as *const u32).read() as i64 }
        }
    });
    r >= 0 && r as u64 & 1 << cap != 0
}

/// A vfork child before its exec (a spawn child) runs in the program's VM and `hrt`'s host
/// process: a change of its ids would be the parent's too, so it is not made: ENOSYS with a
/// line on stderr.
fn vfork_child_keeps_ids() -> Result<(), u32> {
    if super::procs::child_ctx().is_none() {
        return Ok(());
    }
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        crate::kprintln!("hrt: a vfork child's change of its ids or capabilities is not implemented (it would be its parent's): returning ENOSYS (reported once)");
    }
    Err(ENOSYS)
}

/// After an exec: the monitor made the saved ids the effective ones (as Linux's execve), so
/// they are read back if they differed.
pub fn after_exec() {
    let now = ids();
    if now[2] != now[EUID] || now[5] != now[EGID] {
        refresh();
    }
}

/// Reads the ids back from the host after a change.
fn refresh() {
    with_scratch(|page| {
        for (call, at) in [(__NR_getresuid, 0), (__NR_getresgid, 3)] {
            if forward(call as u64, [page, page + 4, page + 8, 0, 0, 0]) == 0 {
                for i in 0..3 {
                    // SAFETY: the host wrote three ids at the start of our scratch page.
                    let id = unsafe { ((page + 4 * i as u64) as *const u32).read() };
                    IDS[at + i].store(id, Ordering::Relaxed);
                }
            }
        }
        0
    });
    READ.store(true, Ordering::Release);
}

/// Ok at once if every id in `asked` is UNCHANGED or the one the three ids at `first` (real,
/// effective, saved) all are; else the host makes call `nr` (and decides), and the ids are
/// read back.
fn set(nr: u32, a: [u64; 6], count: usize, first: usize) -> SysResult {
    let now = ids();
    let same = now[first] == now[first + 1] && now[first] == now[first + 2];
    if same && a[..count].iter().all(|&x| x as u32 == UNCHANGED || x as u32 == now[first]) {
        return Ok(0);
    }
    vfork_child_keeps_ids()?;
    let r = forward(nr as u64, a);
    refresh();
    let after = ids();
    if after[EUID] != now[EUID] || after[EGID] != now[EGID] {
        // A new effective user or group id: Linux makes the process undumpable (its
        // fs.suid_dumpable, 0 by default): no core file, PR_GET_DUMPABLE 0.
        super::prctl::credentials_changed();
    }
    if r < 0 {
        Err((-r) as u32)
    } else {
        Ok(r as u64)
    }
}

/// setfsuid and setfsgid: made by the host on every thread of `hrt` (Linux keeps them per
/// thread; any of `hrt`'s threads may serve the program's file calls), which answers the
/// previous id, also when it refuses the change (Linux's answer; a caller sees a refusal with
/// a second call, `setfsuid(-1)`). A new file-system id makes the process undumpable, as a new
/// effective id does. They were left at the effective ids, with a line.
pub fn setfsuid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    file_system_id(__NR_setfsuid, a[0] as u32)
}

pub fn setfsgid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    file_system_id(__NR_setfsgid, a[0] as u32)
}

fn file_system_id(nr: u32, asked: u32) -> SysResult {
    if asked != UNCHANGED {
        vfork_child_keeps_ids()?;
    }
    let before = forward(nr as u64, [asked as u64, 0, 0, 0, 0, 0]);
    if before < 0 {
        return Err((-before) as u32);
    }
    if asked != UNCHANGED
        && before as u32 != asked
        && forward(nr as u64, [UNCHANGED as u64, 0, 0, 0, 0, 0]) == asked as i64
    {
        super::prctl::credentials_changed();
    }
    Ok(before as u64)
}

pub fn getresuid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let ids = ids();
    for (p, id) in a[..3].iter().zip(&ids[..3]) {
        uaccess::write(*p, *id)?;
    }
    Ok(0)
}

pub fn getresgid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let ids = ids();
    for (p, id) in a[..3].iter().zip(&ids[3..]) {
        uaccess::write(*p, *id)?;
    }
    Ok(0)
}

pub fn setuid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    // -1 is no id (Linux's uid_valid): EINVAL, where the set- forms take it as "unchanged".
    if a[0] as u32 == UNCHANGED {
        return Err(EINVAL);
    }
    set(__NR_setuid, a, 1, 0)
}

pub fn setreuid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    set(__NR_setreuid, a, 2, 0)
}

pub fn setresuid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    set(__NR_setresuid, a, 3, 0)
}

pub fn setgid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    if a[0] as u32 == UNCHANGED {
        return Err(EINVAL);
    }
    set(__NR_setgid, a, 1, 3)
}

pub fn setregid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    set(__NR_setregid, a, 2, 3)
}

pub fn setresgid(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    set(__NR_setresgid, a, 3, 3)
}

/// setgroups(size, list): Linux asks for CAP_SETGID first (EPERM), then a size up to
/// NGROUPS_MAX (EINVAL) and a readable list (EFAULT). The list the program already has (sorted,
/// as Linux keeps it) is kept at once; another is the host's to set.
pub fn setgroups(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (size, list) = (a[0] as u32 as u64, a[1]);
    if !capable(CAP_SETGID) {
        return Err(EPERM);
    }
    if size > NGROUPS_MAX {
        return Err(EINVAL);
    }
    let asked = uaccess::slice(list, size * 4)?;
    let asked: alloc::vec::Vec<u32> =
        asked.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let mut same = false;
    with_scratch(|page| {
        let room = crate::linux::usermem::PAGE / 4;
        let n = forward(__NR_getgroups as u64, [room, page, 0, 0, 0, 0]);
        if n >= 0 {
            // SAFETY: the host wrote `n` (at most `room`) gids into our scratch page.
            let have = unsafe { core::slice::from_raw_parts(page as *const u32, n as usize) };
            // Linux keeps the list sorted, duplicates and all (getgroups shows them).
            let mut sorted = asked.clone();
            sorted.sort_unstable();
            same = sorted == have;
        }
        0
    });
    if same {
        return Ok(0);
    }
    vfork_child_keeps_ids()?;
    let r = forward(__NR_setgroups as u64, [size, list, 0, 0, 0, 0]);
    if r < 0 {
        Err((-r) as u32)
    } else {
        Ok(r as u64)
    }
}

/// capset(header, data): Linux's checks in its order (a readable header, EFAULT; a known
/// version, else EINVAL with the preferred version written back; the calling thread's own
/// capabilities, pid 0 or its tid, else EPERM), then the monitor sets the sets on `hrt`'s host
/// process, whose rules decide (EPERM for a set beyond the permitted one), on every thread of
/// `hrt` (forward/caps.rs), since any of them may serve this program's calls or start its
/// children. Linux's capabilities are per thread: here one thread's change is the whole
/// program's. Not in a vfork child before its exec (it shares `hrt`'s process): ENOSYS.
pub fn capset(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    const VERSIONS: [u32; 3] = [0x1998_0330, 0x2007_1026, 0x2008_0522];
    let [version, pid] = uaccess::read::<[u32; 2]>(a[0])?;
    if !VERSIONS.contains(&version) {
        uaccess::write::<u32>(a[0], VERSIONS[2])?;
        return Err(EINVAL);
    }
    if pid != 0 && pid != current_tid() {
        return Err(EPERM);
    }
    vfork_child_keeps_ids()?;
    let r = forward(__NR_capset as u64, [a[0], a[1], 0, 0, 0, 0]);
    if r < 0 {
        Err((-r) as u32)
    } else {
        Ok(r as u64)
    }
}
