//! Which of the program's descriptors are signalfds: one object per `signalfd` call (its mask,
//! whether its eventfd has been made readable), named by every descriptor that duplicates it.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use crate::sync::IrqSpinLock;

struct Object {
    mask: u64,
    /// The notifier has written to the eventfd since it was last emptied.
    armed: bool,
    /// The signals of the mask pending at the last write (less those taken since): a signal
    /// that becomes pending beside them is written again, a new edge for an EPOLLET waiter,
    /// as Linux's signalfd wakes its waiters for each signal that becomes pending.
    armed_with: u64,
    fds: Vec<i32>,
}

static OBJECTS: IrqSpinLock<Vec<Option<Object>>> = IrqSpinLock::new(Vec::new());

/// How many objects exist: calls look at nothing else while it is 0.
pub static LIVE: AtomicU64 = AtomicU64::new(0);

/// The union of the masks: a signal outside it wakes no notifier.
pub static UNION: AtomicU64 = AtomicU64::new(0);

/// The descriptor the notifier is writing to (-1: none). Forgetting that descriptor waits
/// until the write is done, so that it never reaches a file that took the number after a close.
static NOTIFYING: AtomicI64 = AtomicI64::new(-1);

fn update_union(objs: &[Option<Object>]) {
    let u = objs.iter().flatten().fold(0, |u, o| u | o.mask);
    UNION.store(u, Ordering::SeqCst);
}

fn find(objs: &[Option<Object>], fd: i32) -> Option<usize> {
    objs.iter().position(|o| o.as_ref().is_some_and(|o| o.fds.contains(&fd)))
}

/// Records descriptor `fd`, a new eventfd, as a signalfd with `mask`.
pub fn create(fd: i32, mask: u64) {
    let mut objs = OBJECTS.lock();
    let obj = Object { mask, armed: false, armed_with: 0, fds: alloc::vec![fd] };
    match objs.iter().position(|o| o.is_none()) {
        Some(i) => objs[i] = Some(obj),
        None => objs.push(Some(obj)),
    }
    LIVE.fetch_add(1, Ordering::SeqCst);
    update_union(&objs);
}

/// The mask of signalfd `fd`, if it is one.
pub fn mask_of(fd: i32) -> Option<u64> {
    let objs = OBJECTS.lock();
    find(&objs, fd).and_then(|i| objs[i].as_ref()).map(|o| o.mask)
}

/// Gives signalfd `fd` a new mask; false if `fd` is not a signalfd.
pub fn set_mask(fd: i32, mask: u64) -> bool {
    let mut objs = OBJECTS.lock();
    let Some(i) = find(&objs, fd) else { return false };
    if let Some(o) = objs[i].as_mut() {
        o.mask = mask;
    }
    update_union(&objs);
    true
}

/// `new` is a duplicate of `old`: if `old` is a signalfd, so is `new`.
pub fn alias(old: i32, new: i32) {
    let mut objs = OBJECTS.lock();
    if let Some(o) = find(&objs, old).and_then(|i| objs[i].as_mut()) {
        if !o.fds.contains(&new) {
            o.fds.push(new);
        }
    }
}

/// Descriptor `fd` is about to be closed: it names no signalfd any more (the object goes with
/// its last descriptor). Returns once the notifier is not writing to it.
pub fn forget(fd: i32) {
    {
        let mut objs = OBJECTS.lock();
        let Some(i) = find(&objs, fd) else { return };
        if let Some(o) = objs[i].as_mut() {
            o.fds.retain(|&f| f != fd);
            if o.fds.is_empty() {
                objs[i] = None;
                LIVE.fetch_sub(1, Ordering::SeqCst);
            }
        }
        update_union(&objs);
    }
    while NOTIFYING.load(Ordering::SeqCst) == fd as i64 {
        crate::sched::yield_now();
        core::hint::spin_loop();
    }
}

/// Every descriptor that names a signalfd.
pub fn all_fds() -> Vec<i32> {
    OBJECTS.lock().iter().flatten().flat_map(|o| o.fds.iter().copied()).collect()
}

/// For the notifier: a descriptor of a signalfd that has a signal of its mask in `pending` and
/// is not armed, or was armed before that signal became pending (`armed_with`), now armed and
/// marked as being written (`done_notifying` ends that).
pub fn next_to_arm(pending: u64) -> Option<i32> {
    let mut objs = OBJECTS.lock();
    let o = objs.iter_mut().flatten().find_map(|o| {
        let now = o.mask & pending;
        o.armed_with &= now;
        (now != 0 && !o.fds.is_empty() && (!o.armed || now & !o.armed_with != 0)).then_some(o)
    })?;
    o.armed = true;
    o.armed_with = o.mask & pending;
    let fd = o.fds[0];
    NOTIFYING.store(fd as i64, Ordering::SeqCst);
    Some(fd)
}

/// For the notifier: a descriptor of a signalfd that is armed but has no signal of its mask
/// in `pending` (another way took it: a handler, `sigtimedwait`, another signalfd), now
/// disarmed, for the caller to empty its eventfd.
pub fn next_to_disarm(pending: u64) -> Option<i32> {
    let mut objs = OBJECTS.lock();
    let o = objs.iter_mut().flatten().find(|o| o.armed && o.mask & pending == 0 && !o.fds.is_empty())?;
    o.armed = false;
    o.armed_with = 0;
    Some(o.fds[0])
}

pub fn done_notifying() {
    NOTIFYING.store(-1, Ordering::SeqCst);
}

/// For a reader that found no signal of `fd`'s mask pending in `pending`: the signalfd is
/// disarmed (true), to be emptied; false if a signal is pending after all or `fd` is gone.
pub fn disarm_if_idle(fd: i32, pending: u64) -> bool {
    let mut objs = OBJECTS.lock();
    let Some(o) = find(&objs, fd).and_then(|i| objs[i].as_mut()) else { return false };
    if o.mask & pending != 0 {
        return false;
    }
    o.armed = false;
    o.armed_with = 0;
    true
}

/// Disarms signalfd `fd` so that the notifier arms it again (its eventfd was emptied while a
/// signal of its mask became pending).
pub fn rearm(fd: i32) {
    let mut objs = OBJECTS.lock();
    if let Some(o) = find(&objs, fd).and_then(|i| objs[i].as_mut()) {
        o.armed = false;
        o.armed_with = 0;
    }
}

/// A forked child: its descriptors are copies of the parent's, each eventfd as readable as it
/// was; nothing is being written.
pub fn after_fork() {
    NOTIFYING.store(-1, Ordering::SeqCst);
    for o in OBJECTS.lock().iter_mut().flatten() {
        o.armed = false;
        o.armed_with = 0;
    }
}

/// The descriptors of each object.
pub fn objects_fds() -> Vec<Vec<i32>> {
    OBJECTS.lock().iter().flatten().map(|o| o.fds.clone()).collect()
}
