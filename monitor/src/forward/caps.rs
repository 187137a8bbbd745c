//! The program's capabilities (`capset`) on every thread of `hrt`. Linux keeps capabilities per
//! thread, but any thread of `hrt` may serve the program's calls (the forwarding workers, the
//! polling service thread, the vCPU threads), start its host programs (the spawner, the exec
//! thread) or fork it (the fork thread): a `capset` is made on every thread at once
//! (`every_thread`), so that a program that dropped a capability (ping drops all but
//! CAP_NET_RAW at start) is refused what it would be refused natively, and its children start
//! with the sets it left them. One program thread's `capset` is thus the whole program's.
//! A thread that missed it (one that blocked every signal for seconds) still applies the
//! program's latest sets before it next acts for the program (`catch_up`).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// `_LINUX_CAPABILITY_VERSION_1` (one 32-bit record) and `_3` (two records).
pub const VERSION_1: u32 = 0x1998_0330;
const VERSION_2: u32 = 0x2007_1026;
pub const VERSION_3: u32 = 0x2008_0522;

/// The program's latest sets as `capset` version 3 takes them: (effective, permitted,
/// inheritable) for capabilities 0-31, then for 32-63.
static LATEST: Mutex<[u32; 6]> = Mutex::new([0; 6]);
/// How many times the program set them (0: never; every thread has `hrt`'s own).
static GENERATION: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The generation this thread applied.
    static APPLIED: Cell<u64> = const { Cell::new(0) };
}

/// Whether `version` is one `capset` knows.
pub fn known_version(version: u32) -> bool {
    [VERSION_1, VERSION_2, VERSION_3].contains(&version)
}

/// The host's `capset` on the calling thread.
fn set_this_thread(data: &[u32; 6]) -> Result<(), i32> {
    let header: [u32; 2] = [VERSION_3, 0];
    // SAFETY: a version-3 header (this thread) and the two records it reads.
    let r = unsafe { libc::syscall(libc::SYS_capset, header.as_ptr(), data.as_ptr()) };
    if r < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EPERM))
    } else {
        Ok(())
    }
}

/// Sets the program's capabilities to `data` (version 3's layout): the host decides on this
/// thread (an errno if it refuses), and every other thread makes the same change.
pub fn set(data: [u32; 6]) -> Result<(), i32> {
    let mut latest = LATEST.lock().unwrap_or_else(|e| e.into_inner());
    catch_up_locked(&latest);
    let header: [u32; 2] = [VERSION_3, 0];
    // SAFETY: a version-3 header (the calling thread) and the two records it reads, both alive
    // until every thread made the call.
    let r =
        unsafe { crate::every_thread::everywhere(libc::SYS_capset, [header.as_ptr() as u64, data.as_ptr() as u64, 0]) };
    if r < 0 {
        return Err(-r as i32);
    }
    CHANGED.store(true, Ordering::SeqCst);
    *latest = data;
    let generation = GENERATION.fetch_add(1, Ordering::AcqRel) + 1;
    APPLIED.with(|a| a.set(generation));
    Ok(())
}

/// Runs `change` (a set-id call, which glibc makes on every thread) with this module's lock
/// held, after the calling thread caught up: no `capset` runs meanwhile. Then the capabilities
/// the change left (Linux's set-id rules change them: a non-zero effective uid clears the
/// effective set, ...) are the program's latest: a thread that missed an earlier `capset` must
/// not apply that one later, over what the change cleared (a program that dropped a
/// capability and then its effective uid got its effective set back there and opened
/// /etc/shadow after seteuid(1000)).
pub fn changing_ids<R>(change: impl FnOnce() -> R) -> R {
    let mut latest = LATEST.lock().unwrap_or_else(|e| e.into_inner());
    catch_up_locked(&latest);
    let r = change();
    CHANGED.store(true, Ordering::SeqCst);
    ids_changed(&mut latest);
    r
}

/// The calling thread's capabilities are the program's latest (after a change of ids).
fn ids_changed(latest: &mut [u32; 6]) {
    if GENERATION.load(Ordering::Acquire) == 0 {
        // Never set: every thread made the same change from `hrt`'s own sets.
        return;
    }
    let header: [u32; 2] = [VERSION_3, 0];
    let mut d = [[0u32; 3]; 2];
    // SAFETY: capget writes the two records version 3 asks for.
    if unsafe { libc::syscall(libc::SYS_capget, header.as_ptr(), d.as_mut_ptr()) } < 0 {
        return;
    }
    *latest = [d[0][0], d[0][1], d[0][2], d[1][0], d[1][1], d[1][2]];
    let generation = GENERATION.fetch_add(1, Ordering::AcqRel) + 1;
    APPLIED.with(|a| a.set(generation));
}

/// Whether the program changed its credentials (capabilities, ids, security bits, bounding or
/// ambient sets): an exec recomputes them only then (`exec_done`; `hrt`'s own are what an exec
/// gives).
static CHANGED: AtomicBool = AtomicBool::new(false);

/// Whether the program may have set the keep-caps flag (PR_SET_KEEPCAPS 1, or
/// SECBIT_KEEP_CAPS with PR_SET_SECUREBITS), which an exec clears.
static KEEP_CAPS_MAYBE: AtomicBool = AtomicBool::new(false);

/// prctl `option` with argument `value` changed every thread's credentials.
pub fn prctl_changed(option: i32, value: u64) {
    CHANGED.store(true, Ordering::SeqCst);
    const SECBIT_KEEP_CAPS: u64 = 1 << 4;
    if option == libc::PR_SET_KEEPCAPS && value == 1
        || option == libc::PR_SET_SECUREBITS && value & SECBIT_KEEP_CAPS != 0
    {
        KEEP_CAPS_MAYBE.store(true, Ordering::SeqCst);
    }
}

/// The program exec'd (the kernel's own exec, inside `hrt`): its capabilities and saved ids
/// become what Linux's execve gives a program file without capabilities (capabilities(7)):
/// permitted' = ambient, or inheritable | bounding | ambient for root (a real or effective uid
/// 0, without SECBIT_NOROOT); effective' = permitted' if the effective uid is 0, else ambient;
/// the saved ids become the effective ones; keep-caps is cleared. Every thread makes the
/// change. What root would get back and the program dropped, `hrt` cannot raise (a thread
/// cannot gain capabilities): said once on stderr.
pub fn exec_done() {
    const SECBIT_NOROOT: i32 = 1;
    if !CHANGED.load(Ordering::SeqCst) {
        return;
    }
    let mut latest = LATEST.lock().unwrap_or_else(|e| e.into_inner());
    catch_up_locked(&latest);
    if KEEP_CAPS_MAYBE.swap(false, Ordering::SeqCst) {
        // SAFETY: a prctl with integer arguments on this process's credentials.
        unsafe { crate::every_thread::everywhere(libc::SYS_prctl, [libc::PR_SET_KEEPCAPS as u64, 0, 0]) };
    }
    let (mut uids, mut gids) = ([0u32; 3], [0u32; 3]);
    // SAFETY: three u32 of ours each.
    unsafe {
        libc::getresuid(&mut uids[0], &mut uids[1], &mut uids[2]);
        libc::getresgid(&mut gids[0], &mut gids[1], &mut gids[2]);
    }
    let header: [u32; 2] = [VERSION_3, 0];
    let mut d = [[0u32; 3]; 2];
    // SAFETY: capget writes the two records version 3 asks for.
    if unsafe { libc::syscall(libc::SYS_capget, header.as_ptr(), d.as_mut_ptr()) } < 0 {
        return;
    }
    let both = |i: usize| d[0][i] as u64 | (d[1][i] as u64) << 32;
    let (effective, permitted, inheritable) = (both(0), both(1), both(2));
    // SAFETY (both): a prctl that only reads.
    let in_bounding = |cap: u64| unsafe { libc::prctl(libc::PR_CAPBSET_READ, cap as libc::c_ulong, 0, 0, 0) == 1 };
    let in_ambient = |cap: u64| unsafe {
        libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_IS_SET as libc::c_ulong, cap as libc::c_ulong, 0, 0) == 1
    };
    let bounding: u64 = (0..64).filter(|&cap| in_bounding(cap)).fold(0, |set, cap| set | 1 << cap);
    let ambient: u64 = (0..64).filter(|&cap| in_ambient(cap)).fold(0, |set, cap| set | 1 << cap);
    // SAFETY: a prctl that only reads.
    let securebits = unsafe { libc::prctl(libc::PR_GET_SECUREBITS, 0, 0, 0, 0) }.max(0);
    let root = securebits & SECBIT_NOROOT == 0 && (uids[0] == 0 || uids[1] == 0);
    let wanted = if root { inheritable | bounding | ambient } else { ambient };
    let new_permitted = wanted & permitted;
    let new_effective = if root && uids[1] == 0 { new_permitted } else { ambient & new_permitted };
    if wanted & !permitted != 0 {
        static SAID: AtomicBool = AtomicBool::new(false);
        if !SAID.swap(true, Ordering::Relaxed) {
            eprintln!(
                "hrt: exec: the new program does not get back capabilities {:#x} its predecessor dropped (a root program's exec inside hrt cannot raise them)",
                wanted & !permitted
            );
        }
    }
    if (new_effective, new_permitted) != (effective, permitted) {
        let data = [
            new_effective as u32,
            new_permitted as u32,
            inheritable as u32,
            (new_effective >> 32) as u32,
            (new_permitted >> 32) as u32,
            (inheritable >> 32) as u32,
        ];
        // SAFETY: a version-3 header (the calling thread) and the two records it reads, both
        // alive until every thread made the call.
        let r = unsafe {
            crate::every_thread::everywhere(libc::SYS_capset, [header.as_ptr() as u64, data.as_ptr() as u64, 0])
        };
        if r == 0 {
            *latest = data;
            let generation = GENERATION.fetch_add(1, Ordering::AcqRel) + 1;
            APPLIED.with(|a| a.set(generation));
        }
    }
    // The saved ids become the effective ones (glibc's set-id calls change every thread).
    // SAFETY: plain calls on this process's credentials, no pointers.
    unsafe {
        if uids[2] != uids[1] {
            libc::setresuid(u32::MAX, u32::MAX, uids[1]);
        }
        if gids[2] != gids[1] {
            libc::setresgid(u32::MAX, u32::MAX, gids[1]);
        }
    }
}

/// Gives the calling thread the program's latest capabilities if it does not have them yet
/// (one load when nothing changed).
pub fn catch_up() {
    let generation = GENERATION.load(Ordering::Acquire);
    if generation == 0 || APPLIED.with(|a| a.get()) == generation {
        return;
    }
    let latest = LATEST.lock().unwrap_or_else(|e| e.into_inner());
    catch_up_locked(&latest);
}

fn catch_up_locked(latest: &[u32; 6]) {
    let generation = GENERATION.load(Ordering::Acquire);
    if generation == 0 || APPLIED.with(|a| a.get()) == generation {
        return;
    }
    // The same sets this process's threads all reached from `hrt`'s own, each step allowed
    // there: allowed here too.
    let _ = set_this_thread(latest);
    APPLIED.with(|a| a.set(generation));
}

/// The program's sets as `/proc/<pid>/status` shows them (CapInh, CapPrm, CapEff), if it set
/// them.
pub fn shown() -> Option<[u64; 3]> {
    if GENERATION.load(Ordering::Acquire) == 0 {
        return None;
    }
    let d = *LATEST.lock().unwrap_or_else(|e| e.into_inner());
    let both = |i: usize| d[i] as u64 | (d[i + 3] as u64) << 32;
    Some([both(2), both(1), both(0)])
}

/// This module's global locks, taken without waiting for a fork (`vm::fork`): false if
/// another thread holds one.
pub(crate) fn hold_for_fork(held: &mut crate::vm::fork::Held) -> bool {
    crate::vm::fork::try_hold(held, &LATEST)
}

/// Whether the calling thread (which acts with the program's capabilities once it caught up)
/// has capability `cap` in its effective set.
pub fn effective(cap: u32) -> bool {
    catch_up();
    // struct __user_cap_header_struct (_LINUX_CAPABILITY_VERSION_3, this thread) and two
    // __user_cap_data_struct (effective, permitted, inheritable).
    let mut header: [u32; 2] = [0x2008_0522, 0];
    let mut data = [[0u32; 3]; 2];
    // SAFETY: capget writes the two data structs version 3 asks for.
    let r = unsafe { libc::syscall(libc::SYS_capget, header.as_mut_ptr(), data.as_mut_ptr()) };
    r == 0 && cap < 64 && data[cap as usize / 32][0] & (1 << (cap % 32)) != 0
}
