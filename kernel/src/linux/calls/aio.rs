//! Linux's native asynchronous I/O (io_setup, io_submit, io_getevents, io_pgetevents,
//! io_cancel, io_destroy), as libaio, fio's `libaio` engine and databases use it.
//!
//! Each request is performed when it is submitted: a forwarded pread, pwrite, preadv2,
//! pwritev2, fsync or fdatasync, whose answer becomes the request's completion event. Linux
//! does the same for buffered I/O on files without asynchronous support (its `io_submit`
//! waits for the read or write), so only O_DIRECT I/O, which Linux could overlap with the
//! program, completes sooner there. The events wait in the context's queue for
//! `io_getevents`; a context holds as many unreaped ones as Linux's ring would (io_submit
//! then answers EAGAIN).
//!
//! The context's id is the address of pages mapped in the program, as Linux's completion
//! ring is; its header names the context (`id`, checked as Linux's lookup checks it) but does
//! not carry Linux's ring magic, so libaio and fio reap with the system call rather than from
//! the ring, which is never filled. A context is not inherited by a forked child (its pages
//! are not copied) and ends at exec.
//!
//! IOCB_CMD_POLL is served when the descriptor is ready at submission; one that would wait
//! fails with EINVAL and a trace line.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use linux_raw_sys::general::{
    __NR_fdatasync, __NR_fsync, __NR_poll, __NR_pread64, __NR_preadv2, __NR_pwrite64, __NR_pwritev2, __NR_read,
    __NR_readlinkat, __NR_write, AT_FDCWD, MAP_ANONYMOUS, MAP_PRIVATE, PROT_READ, PROT_WRITE,
};

use crate::arch::traps::TrapFrame;
use crate::linux::errno::{SysResult, EAGAIN, EBADF, EFAULT, EINTR, EINVAL, EOPNOTSUPP, ESPIPE};
use crate::linux::syscall::forward;
use crate::linux::uaccess;
use crate::linux::usermem::{with_scratch, PAGE};
use crate::sync::IrqSpinLock;

const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;
const IOCB_CMD_FSYNC: u16 = 2;
const IOCB_CMD_FDSYNC: u16 = 3;
const IOCB_CMD_POLL: u16 = 5;
const IOCB_CMD_PREADV: u16 = 7;
const IOCB_CMD_PWRITEV: u16 = 8;
const IOCB_FLAG_RESFD: u32 = 1;

/// /proc/sys/fs/aio-max-nr's default: the most requests a context may be made for.
const AIO_MAX_NR: u64 = 65_536;
/// The most iovecs a vectored request may have.
const UIO_MAXIOV: u64 = 1024;
/// Linux's `struct aio_ring` header, and a `struct io_event`.
const RING_HEADER: u64 = 32;
const EVENT: u64 = 32;

/// struct iocb.
#[derive(Clone, Copy)]
#[repr(C)]
struct Iocb {
    data: u64,
    key: u32,
    rw_flags: u32,
    opcode: u16,
    reqprio: i16,
    fd: u32,
    buf: u64,
    nbytes: u64,
    offset: i64,
    reserved2: u64,
    flags: u32,
    resfd: u32,
}

/// struct io_event: the request's `aio_data`, the iocb's address, the result, 0.
type Event = [u64; 4];

struct Context {
    /// The id in the ring's header (Linux's lookup reads it there).
    id: u32,
    /// Bytes mapped for the ring.
    len: u64,
    /// Events plus requests in flight allowed at once (Linux's `reqs_available`).
    capacity: usize,
    in_flight: usize,
    done: VecDeque<Event>,
}

/// The contexts, by id (the ring's address).
static CONTEXTS: IrqSpinLock<BTreeMap<u64, Context>> = IrqSpinLock::new(BTreeMap::new());
static NEXT_ID: AtomicU32 = AtomicU32::new(1);
/// Counts completions (and destroyed contexts): what `io_getevents` sleeps on.
static COMPLETIONS: AtomicU32 = AtomicU32::new(0);

/// The context `ctx` names: registered here and still named by its ring's header.
fn lookup<R>(ctx: u64, f: impl FnOnce(&mut Context) -> R) -> Result<R, u32> {
    let mut map = CONTEXTS.lock();
    let c = map.get_mut(&ctx).ok_or(EINVAL)?;
    match uaccess::read::<u32>(ctx) {
        Ok(id) if id == c.id => Ok(f(c)),
        _ => Err(EINVAL),
    }
}

/// io_setup(nr_events, ctxp).
pub fn io_setup(frame: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (nr_events, ctxp) = (a[0] as u32, a[1]);
    if uaccess::read::<u64>(ctxp)? != 0 || nr_events == 0 {
        return Err(EINVAL);
    }
    // Linux's sizing (ioctx_alloc): at least four requests per CPU, doubled for its per-CPU
    // counts, the ring rounded up to whole pages.
    let n = (nr_events as u64).max(crate::cpu::count() as u64 * 4) * 2;
    if n > 0x1000_0000 / EVENT {
        return Err(EINVAL);
    }
    if nr_events as u64 > AIO_MAX_NR {
        return Err(EAGAIN);
    }
    let len = (RING_HEADER + n * EVENT).div_ceil(PAGE) * PAGE;
    let slots = (len - RING_HEADER) / EVENT;
    let prot = (PROT_READ | PROT_WRITE) as u64;
    let ring = super::memory::mmap(frame, [0, len, prot, (MAP_PRIVATE | MAP_ANONYMOUS) as u64, u64::MAX, 0])?;
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    // id, nr, head, tail, magic (none: see the module's comment), compat and incompat
    // features, header length.
    let header: [u32; 8] = [id, slots as u32, 0, 0, 0, 1, 0, RING_HEADER as u32];
    let answer = uaccess::write(ring, header).and_then(|()| uaccess::write(ctxp, ring));
    if let Err(e) = answer {
        let _ = super::memory::munmap(frame, [ring, len, 0, 0, 0, 0]);
        return Err(e);
    }
    // Not copied into a forked child, as Linux's ring (VM_DONTCOPY).
    crate::linux::fork_advice::change(
        ring,
        ring + len,
        crate::linux::fork_advice::Change { wipe: None, dont_fork: Some(true) },
    );
    let context = Context { id, len, capacity: slots as usize - 1, in_flight: 0, done: VecDeque::new() };
    CONTEXTS.lock().insert(ring, context);
    Ok(0)
}

/// io_destroy(ctx).
pub fn io_destroy(frame: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let ctx = a[0];
    let len = lookup(ctx, |c| c.len)?;
    CONTEXTS.lock().remove(&ctx);
    let _ = super::memory::munmap(frame, [ctx, len, 0, 0, 0, 0]);
    COMPLETIONS.fetch_add(1, Ordering::SeqCst);
    crate::linux::futex::wake_word(&COMPLETIONS, u64::MAX);
    Ok(0)
}

/// io_submit(ctx, nr, iocbpp): performs the requests in order; the number submitted, or the
/// first one's error when none was.
pub fn io_submit(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (ctx, nr, list) = (a[0], a[1] as i64, a[2]);
    lookup(ctx, |_| ())?;
    if nr < 0 {
        return Err(EINVAL);
    }
    let mut submitted = 0;
    for i in 0..nr as u64 {
        let r = uaccess::read::<u64>(list + i * 8).map_err(|_| EFAULT).and_then(|user| submit_one(ctx, user));
        match r {
            Ok(()) => submitted += 1,
            Err(e) if submitted == 0 => return Err(e),
            Err(_) => break,
        }
    }
    Ok(submitted)
}

/// One request at program address `user`.
fn submit_one(ctx: u64, user: u64) -> Result<(), u32> {
    let cb = uaccess::read::<Iocb>(user).map_err(|_| EFAULT)?;
    if cb.reserved2 != 0 || (cb.nbytes as i64) < 0 {
        return Err(EINVAL);
    }
    // A slot for its event, or EAGAIN.
    lookup(ctx, |c| {
        if c.done.len() + c.in_flight >= c.capacity {
            return Err(EAGAIN);
        }
        c.in_flight += 1;
        Ok(())
    })??;
    let r = perform(user, &cb);
    let mut map = CONTEXTS.lock();
    let Some(c) = map.get_mut(&ctx) else { return r.map(|_| ()) };
    c.in_flight -= 1;
    let res = r?;
    c.done.push_back([cb.data, user, res as u64, 0]);
    drop(map);
    COMPLETIONS.fetch_add(1, Ordering::SeqCst);
    crate::linux::futex::wake_word(&COMPLETIONS, u64::MAX);
    if cb.flags & IOCB_FLAG_RESFD != 0 {
        signal_eventfd(cb.resfd);
    }
    Ok(())
}

/// Checks request `cb` (at `user`) as Linux's submission does and performs it: Err for what
/// Linux's io_submit answers itself, Ok with the event's result otherwise.
fn perform(user: u64, cb: &Iocb) -> Result<i64, u32> {
    if cb.flags & IOCB_FLAG_RESFD != 0 {
        check_eventfd(cb.resfd)?;
    }
    // The request's key, which io_cancel checks (Linux's KIOCB_KEY is 0).
    uaccess::write::<u32>(user + 8, 0).map_err(|_| EFAULT)?;
    let fd = cb.fd as u64;
    let ret = match cb.opcode {
        IOCB_CMD_PREAD | IOCB_CMD_PWRITE if cb.rw_flags == 0 => {
            let write = cb.opcode == IOCB_CMD_PWRITE;
            let (at, here) = if write { (__NR_pwrite64, __NR_write) } else { (__NR_pread64, __NR_read) };
            match forward(at as u64, [fd, cb.buf, cb.nbytes, cb.offset as u64, 0, 0]) {
                // A pipe or socket: Linux's request reads or writes it at its own position.
                r if r == -(ESPIPE as i64) => forward(here as u64, [fd, cb.buf, cb.nbytes, 0, 0, 0]),
                r => r,
            }
        }
        IOCB_CMD_PREAD | IOCB_CMD_PWRITE => {
            let v = if cb.opcode == IOCB_CMD_PWRITE { __NR_pwritev2 } else { __NR_preadv2 };
            with_scratch(|iov| {
                if uaccess::write(iov, [cb.buf, cb.nbytes]).is_err() {
                    return -(EFAULT as i64);
                }
                vectored(v as u64, fd, iov, 1, cb)
            })
        }
        IOCB_CMD_PREADV | IOCB_CMD_PWRITEV => {
            // The iovec array is read at submission (a bad buffer is the event's EFAULT).
            if cb.nbytes > UIO_MAXIOV {
                return Err(EINVAL);
            }
            uaccess::check(cb.buf, cb.nbytes * 16).map_err(|_| EFAULT)?;
            let nr = if cb.opcode == IOCB_CMD_PWRITEV { __NR_pwritev2 } else { __NR_preadv2 };
            vectored(nr as u64, fd, cb.buf, cb.nbytes, cb)
        }
        IOCB_CMD_FSYNC | IOCB_CMD_FDSYNC => {
            if cb.buf != 0 || cb.offset != 0 || cb.nbytes != 0 || cb.rw_flags != 0 {
                return Err(EINVAL);
            }
            let nr = if cb.opcode == IOCB_CMD_FSYNC { __NR_fsync } else { __NR_fdatasync };
            forward(nr as u64, [fd, 0, 0, 0, 0, 0])
        }
        IOCB_CMD_POLL => return poll_now(fd, cb),
        _ => return Err(EINVAL),
    };
    // What Linux finds before it starts the I/O (the descriptor, its access mode, the
    // flags) is io_submit's answer; the rest (a buffer that faults too) is the event's.
    match ret {
        r if r == -(EBADF as i64) || r == -(EOPNOTSUPP as i64) => Err(-r as u32),
        r => Ok(r),
    }
}

/// preadv2/pwritev2 `nr` of `count` iovecs at `iov`, at the request's offset (at the
/// descriptor's own position for a pipe or socket).
fn vectored(nr: u64, fd: u64, iov: u64, count: u64, cb: &Iocb) -> i64 {
    let flags = cb.rw_flags as u64;
    match forward(nr, [fd, iov, count, cb.offset as u64, 0, flags]) {
        r if r == -(ESPIPE as i64) => forward(nr, [fd, iov, count, u64::MAX, u64::MAX, flags]),
        r => r,
    }
}

/// IOCB_CMD_POLL: the ready events of `fd` among those asked (the low 16 bits of `buf`) if
/// some are ready now; a poll that would wait is not supported.
fn poll_now(fd: u64, cb: &Iocb) -> Result<i64, u32> {
    if cb.offset != 0 || cb.nbytes != 0 || cb.rw_flags != 0 || cb.buf >> 16 != 0 {
        return Err(EINVAL);
    }
    // POLLERR and POLLHUP are always reported, as Linux's aio poll.
    let events = cb.buf as u32 | 0x18;
    let r = with_scratch(|page| {
        if uaccess::write(page, [fd as u32, events]).is_err() {
            return -(EFAULT as i64);
        }
        match forward(__NR_poll as u64, [page, 1, 0, 0, 0, 0]) {
            1 => uaccess::read::<[u16; 4]>(page).map_or(-(EFAULT as i64), |p| (p[3] as u32 & events) as i64),
            r => r,
        }
    });
    if r == 0 {
        static SAID: AtomicBool = AtomicBool::new(false);
        if !SAID.swap(true, Ordering::Relaxed) {
            kprintln!("hrt: an IOCB_CMD_POLL request that would wait is not supported: io_submit returns EINVAL (reported once)");
        }
        return Err(EINVAL);
    }
    if r < 0 {
        return Err(-r as u32);
    }
    Ok(r)
}

/// IOCB_FLAG_RESFD's descriptor must be an eventfd: EBADF if it is not open, EINVAL if it is
/// something else.
fn check_eventfd(fd: u32) -> Result<(), u32> {
    const WANT: &[u8] = b"anon_inode:[eventfd]";
    let r = with_scratch(|page| {
        let path = alloc::format!("/proc/self/fd/{}\0", fd as i32);
        let link = page + 64;
        if uaccess::write_bytes(page, path.as_bytes()).is_err() {
            return -(EFAULT as i64);
        }
        let n = forward(__NR_readlinkat as u64, [AT_FDCWD as u64, page, link, 64, 0, 0]);
        if n < 0 {
            return -(EBADF as i64);
        }
        match uaccess::slice(link, n as u64) {
            Ok(name) if name == WANT => 0,
            _ => -(EINVAL as i64),
        }
    });
    if r < 0 {
        Err(-r as u32)
    } else {
        Ok(())
    }
}

/// Adds 1 to eventfd `fd`'s count, as Linux's completion does for IOCB_FLAG_RESFD, when the
/// count has room. A write to a full count would wait (a blocking eventfd: io_submit hung for
/// good) where Linux's completion never waits: it then leaves the count at its maximum, which
/// a write cannot reach, so here the completion adds nothing (LTP's eventfd06 sees the
/// count one short of the overflow and no POLLERR).
fn signal_eventfd(fd: u32) {
    with_scratch(|page| {
        // struct pollfd { fd, events: POLLOUT, revents } at the page's start, the count after.
        const POLLOUT: u64 = 4;
        if uaccess::write::<u64>(page, u64::from(fd) | POLLOUT << 32).is_err()
            || uaccess::write::<u64>(page + 8, 1).is_err()
        {
            return 0;
        }
        let ready = forward(__NR_poll as u64, [page, 1, 0, 0, 0, 0]);
        let revents = uaccess::read::<u64>(page).map_or(0, |w| w >> 48);
        if ready != 1 || revents & POLLOUT == 0 {
            return 0;
        }
        forward(__NR_write as u64, [fd as u64, page + 8, 8, 0, 0, 0])
    });
}

/// io_getevents(ctx, min_nr, nr, events, timeout).
pub fn io_getevents(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    get_events(a[0], a[1] as i64, a[2] as i64, a[3], a[4])
}

/// io_pgetevents(ctx, min_nr, nr, events, timeout, usig): with `usig`'s signal mask (a
/// { sigset_t *, size } pair) while it waits.
pub fn io_pgetevents(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let mask = match a[5] {
        0 => None,
        usig => match uaccess::read::<[u64; 2]>(usig).map_err(|_| EFAULT)? {
            [0, _] => None,
            [_, size] if size != 8 => return Err(EINVAL),
            [set, _] => Some(uaccess::read::<u64>(set).map_err(|_| EFAULT)?),
        },
    };
    if let Some(m) = mask {
        super::signal::begin_wait_with_mask(m);
    }
    let r = get_events(a[0], a[1] as i64, a[2] as i64, a[3], a[4]);
    if mask.is_some() {
        super::signal::end_masked_wait(match r {
            Ok(n) => n as i64,
            Err(e) => -(e as i64),
        });
    }
    r
}

fn get_events(ctx: u64, min_nr: i64, nr: i64, events: u64, timeout: u64) -> SysResult {
    lookup(ctx, |_| ())?;
    if min_nr < 0 || min_nr > nr {
        return Err(EINVAL);
    }
    let until = match timeout {
        0 => None,
        // Not checked for a valid nanosecond count, as Linux's; a negative time is past.
        t => {
            let [s, ns] = uaccess::read::<[i64; 2]>(t).map_err(|_| EFAULT)?;
            let total = (s.max(0) as u64).saturating_mul(1_000_000_000).saturating_add(ns.max(0) as u64);
            Some(crate::time::ticks().saturating_add(crate::time::ns_to_ticks(total)))
        }
    };
    loop {
        let seen = COMPLETIONS.load(Ordering::SeqCst);
        let ready = lookup(ctx, |c| c.done.len())?;
        let timed_out = until.is_some_and(|d| crate::time::ticks() >= d);
        if ready as i64 >= min_nr || timed_out {
            return take(ctx, nr as u64, events);
        }
        match crate::linux::futex::sleep_while(&COMPLETIONS, seen, until) {
            Err(e) if e == EINTR || e == crate::linux::signal::ERESTARTSYS => {
                // Interrupted: what has come, or EINTR (never restarted, as Linux).
                return match take(ctx, nr as u64, events)? {
                    0 => Err(EINTR),
                    n => Ok(n),
                };
            }
            _ => continue,
        }
    }
}

/// Moves up to `nr` events of context `ctx` to the program's array at `events`.
fn take(ctx: u64, nr: u64, events: u64) -> SysResult {
    let got: Vec<Event> = lookup(ctx, |c| {
        let n = (nr as usize).min(c.done.len());
        // Taken only if the program can have them (EFAULT keeps them queued).
        uaccess::check_write(events, n as u64 * EVENT).map(|()| c.done.drain(..n).collect())
    })??;
    for (i, e) in got.iter().enumerate() {
        uaccess::write(events + i as u64 * EVENT, *e)?;
    }
    Ok(got.len() as u64)
}

/// io_cancel(ctx, iocb, result): every request has completed by the time io_submit returns,
/// so there is none to cancel (EINVAL), after Linux's checks of the context and the iocb's key.
pub fn io_cancel(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let key = uaccess::read::<u32>(a[1].wrapping_add(8)).map_err(|_| EFAULT)?;
    if key != 0 {
        return Err(EINVAL);
    }
    lookup(a[0], |_| ())?;
    Err(EINVAL)
}

/// A forked child has no contexts (their pages were not copied, `fork_advice`).
pub fn after_fork() {
    CONTEXTS.lock().clear();
}

/// An exec ends every context with the old image.
pub fn after_exec() {
    CONTEXTS.lock().clear();
}
