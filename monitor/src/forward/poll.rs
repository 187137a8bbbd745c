//! Waiting on descriptors: poll, ppoll, select, pselect6. Guest descriptor numbers are
//! translated to host ones going in and back coming out; timeouts are read from guest memory
//! and (as Linux does for select, pselect6 and ppoll) the time left is written back.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::errno::{Errno, SysResult};
use super::fd_table::HostFd;
use super::guest_mem::Guest;
use super::host::{int, ptr, restarting};
use super::Forwarder;

/// sizeof(struct pollfd); revents is at offset 6.
const POLLFD_SIZE: u64 = 8;
const REVENTS_OFFSET: u64 = 6;

/// The time left until `deadline` in poll's milliseconds, rounded up.
pub(super) fn ms_left(deadline: Instant) -> libc::c_long {
    let left = deadline.saturating_duration_since(Instant::now());
    left.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_long
}

/// Checks a ppoll/pselect6/epoll_pwait signal mask the way Linux does (EFAULT, EINVAL for a
/// wrong size). The guest kernel applies it for the wait (linux/calls/signal.rs).
pub(super) fn check_sigmask(g: Guest, mask: u64, size: u64) -> SysResult<()> {
    if mask != 0 {
        if size != 8 {
            return Err(Errno::EINVAL);
        }
        g.read::<u64>(mask)?;
    }
    Ok(())
}

/// A guest fd_set of `words` 64-bit words, or None for NULL.
fn read_set(g: Guest, addr: u64, words: usize) -> SysResult<Option<Vec<u64>>> {
    if addr == 0 {
        return Ok(None);
    }
    let bytes = g.read_bytes(addr, words as u64 * 8)?;
    Ok(Some(bytes.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default())).collect()))
}

fn bit(set: &[u64], n: usize) -> bool {
    set.get(n / 64).is_some_and(|w| w & (1 << (n % 64)) != 0)
}

fn set_bit(set: &mut [u64], n: usize) {
    if let Some(w) = set.get_mut(n / 64) {
        *w |= 1 << (n % 64);
    }
}

/// A pollfd entry as the call found it: a descriptor the program does not have (POLLNVAL at
/// once), or the program's descriptor (negative: none, ignored).
#[derive(Clone, Copy, PartialEq)]
enum Polled {
    Unknown,
    Guest(i32),
}

impl Forwarder {
    /// The guest's pollfd array, translated: host pollfds (unknown guest fds become -1, ignored
    /// by the host), which entries were unknown (POLLNVAL; else the guest descriptor, -1 for
    /// none), and the descriptors held.
    #[allow(clippy::type_complexity)]
    fn pollfds(&self, g: Guest, fds: u64, nfds: u64) -> SysResult<(Vec<libc::pollfd>, Vec<Polled>, Vec<Arc<HostFd>>)> {
        let nfds = nfds as u32 as u64;
        // Against the limit the program knows (its table may stop short of it: procs::table_limit).
        let limit = super::procs::program_limit(libc::RLIMIT_NOFILE).map_or(self.fds().limit() as u64, |l| l.rlim_cur);
        if nfds > limit {
            return Err(Errno::EINVAL);
        }
        let raw = g.read_bytes(fds, nfds * POLLFD_SIZE)?;
        let mut host = Vec::with_capacity(nfds as usize);
        let mut nval = Vec::with_capacity(nfds as usize);
        let mut hold = Vec::new();
        for c in raw.chunks_exact(POLLFD_SIZE as usize) {
            // SAFETY: `c` is exactly one struct pollfd of plain integers.
            let p: libc::pollfd = unsafe { std::ptr::read_unaligned(c.as_ptr() as *const libc::pollfd) };
            let mut events = p.events;
            let (fd, bad) = if p.fd < 0 {
                (-1, false)
            } else {
                match self.fds().lookup(p.fd as usize) {
                    Some(h) => {
                        let fd = h.raw();
                        if h.is_signalfd() {
                            // Never writable (its eventfd is).
                            events &= !(libc::POLLOUT | libc::POLLWRNORM | libc::POLLWRBAND);
                        }
                        hold.push(h);
                        (fd, false)
                    }
                    None => (-1, true),
                }
            };
            host.push(libc::pollfd { fd, events, revents: 0 });
            nval.push(if bad { Polled::Unknown } else { Polled::Guest(p.fd) });
        }
        Ok((host, nval, hold))
    }

    /// Writes the revents back; returns the count of ready entries (POLLNVAL ones included). A
    /// descriptor another thread closed while the call waited is POLLNVAL, as Linux's last look
    /// at the descriptors finds it (the held host descriptor stayed open: the call timed out with
    /// 0 where Linux answers 1 and POLLNVAL).
    fn poll_results(&self, g: Guest, fds: u64, host: &[libc::pollfd], nval: &[Polled]) -> SysResult<i64> {
        let mut ready = 0;
        for (i, (p, &entry)) in host.iter().zip(nval).enumerate() {
            let closed = |fd: i32| fd >= 0 && self.fds().lookup(fd as usize).is_none();
            let revents = match entry {
                Polled::Unknown => libc::POLLNVAL,
                Polled::Guest(fd) if closed(fd) => libc::POLLNVAL,
                Polled::Guest(_) => p.revents,
            };
            if revents != 0 {
                ready += 1;
            }
            g.write(fds + i as u64 * POLLFD_SIZE + REVENTS_OFFSET, &revents)?;
        }
        Ok(ready)
    }

    pub(super) fn poll(&self, g: Guest, fds: u64, nfds: u64, timeout: u64) -> SysResult<i64> {
        let (mut host, nval, _hold) = self.pollfds(g, fds, nfds)?;
        let timeout = int(timeout);
        // An unknown fd is an event: Linux does not wait then.
        let timeout = if nval.contains(&Polled::Unknown) { 0 } else { timeout };
        let deadline = (timeout > 0).then(|| Instant::now() + Duration::from_millis(timeout as u64));
        let (p, n) = (host.as_mut_ptr(), host.len());
        // Restarted after a signal with the time left.
        restarting(&self.stopping, || {
            let t = deadline.map_or(timeout, ms_left);
            // SAFETY: `p` points to `n` host pollfds.
            unsafe { libc::syscall(libc::SYS_poll, ptr(p), n as libc::c_long, t) }
        })?;
        self.poll_results(g, fds, &host, &nval)
    }

    pub(super) fn ppoll(&self, g: Guest, fds: u64, nfds: u64, tsp: u64, mask: u64, size: u64) -> SysResult<i64> {
        self.ppoll_with(g, [fds, nfds, tsp, mask, size], false).map(|r| r.unwrap_or(0))
    }

    /// ppoll(fds, nfds, tsp, mask, size); with `now_only`, made with a zero timeout and None
    /// (nothing written back) if nothing is ready and the program's timeout is not zero: the
    /// call would wait (`ready_now`).
    fn ppoll_with(&self, g: Guest, [fds, nfds, tsp, mask, size]: [u64; 5], now_only: bool) -> SysResult<Option<i64>> {
        let mut ts = if tsp == 0 { None } else { Some(g.read::<libc::timespec>(tsp)?) };
        if ts.is_some_and(|t| !valid_timeout(t.tv_sec, t.tv_nsec)) {
            return Err(Errno::EINVAL);
        }
        check_sigmask(g, mask, size)?;
        let (mut host, nval, _hold) = self.pollfds(g, fds, nfds)?;
        // An unknown fd is an event: Linux does not wait then (and the time left is all of it).
        let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        let waits = ts.is_none_or(|t| t.tv_sec != 0 || t.tv_nsec != 0);
        let immediate = nval.contains(&Polled::Unknown) || now_only;
        let given = ts;
        if immediate {
            ts = Some(zero);
        }
        let tp = ts.as_mut().map_or(std::ptr::null_mut(), |t| t as *mut libc::timespec);
        // SAFETY: host pollfds and NULL or a host timespec (the host writes the time left there,
        // so a restart continues with it).
        let got =
            unsafe { self.sys(libc::SYS_ppoll, &[ptr(host.as_mut_ptr()), host.len() as libc::c_long, ptr(tp), 0, 8]) };
        let ready = match got {
            Err(Errno::EINTR) if !immediate => {
                // A signal ended the wait: the time left is written back all the same (Linux's
                // poll_select_finish), so that a restart continues with it.
                if let (Some(t), true) = (ts, tsp != 0) {
                    let _ = g.write(tsp, &t);
                }
                return Err(Errno::EINTR);
            }
            got => got?,
        };
        if now_only && ready == 0 && waits && !nval.contains(&Polled::Unknown) {
            return Ok(None);
        }
        // The time left: what the host left, or all of it when the call did not wait.
        let left = if immediate { given } else { ts };
        if let (Some(t), true) = (left, tsp != 0) {
            // Linux ignores a failure to write back the time left.
            let _ = g.write(tsp, &t);
        }
        self.poll_results(g, fds, &host, &nval).map(Some)
    }

    /// ppoll, select or pselect6 (`nr`, `a`) made now, without waiting: the answer if one is
    /// there already (something ready, or an error), None if the call would wait (`ready_now`
    /// does the same for poll and epoll: the hand-off to a worker thread costs ~95 us).
    pub(super) fn select_or_ppoll_now(&self, g: Guest, nr: libc::c_long, a: &[u64; 6]) -> Option<i64> {
        let got = match nr {
            libc::SYS_ppoll => self.ppoll_with(g, [a[0], a[1], a[2], a[3], a[4]], true),
            libc::SYS_select => self.select_with(g, [a[0], a[1], a[2], a[3]], Timeout::Val(a[4]), true),
            libc::SYS_pselect6 => self.pselect6_with(g, [a[0], a[1], a[2], a[3], a[4], a[5]], true),
            _ => return None,
        };
        match got {
            Ok(None) => None,
            done => Some(super::errno::to_ret(done.map(|r| r.unwrap_or(0)))),
        }
    }

    /// select and pselect6 after their timeout and mask handling: `call(nfds, [read, write,
    /// except])` performs the host call on host fd_sets (null pointers for absent sets).
    fn select_sets(
        &self,
        g: Guest,
        nfds: u64,
        sets: [u64; 3],
        now_only: bool,
        call: impl FnOnce(libc::c_long, [*mut u64; 3]) -> SysResult<i64>,
    ) -> SysResult<Option<i64>> {
        let n = int(nfds);
        if n < 0 {
            return Err(Errno::EINVAL);
        }
        // Linux looks no further than its descriptor table (its size, not RLIMIT_NOFILE).
        let n = (n as usize).min(self.fds().table_size());
        let words = n.div_ceil(64);
        let mut guest = Vec::with_capacity(3);
        for &addr in &sets {
            guest.push(read_set(g, addr, words)?);
        }
        // Every guest fd named in any set, and its host descriptor (EBADF for an unknown one).
        let mut map: Vec<(usize, Arc<HostFd>)> = Vec::new();
        for fd in 0..n {
            if guest.iter().flatten().any(|s| bit(s, fd)) {
                map.push((fd, self.fds().lookup(fd).ok_or(Errno::EBADF)?));
            }
        }
        let host_n = map.iter().map(|(_, h)| h.raw() as usize + 1).max().unwrap_or(0);
        let host_words = host_n.div_ceil(64).max(1);
        let mut host: Vec<Option<Vec<u64>>> =
            guest.iter().map(|s| s.as_ref().map(|_| vec![0u64; host_words])).collect();
        for (fd, h) in &map {
            for (set, (gs, hs)) in guest.iter().zip(host.iter_mut()).enumerate() {
                if let (Some(gs), Some(hs)) = (gs, hs) {
                    // A signalfd is never writable (its eventfd is): not asked in the write set.
                    if bit(gs, *fd) && !(set == 1 && h.is_signalfd()) {
                        set_bit(hs, h.raw() as usize);
                    }
                }
            }
        }
        let ptrs: Vec<*mut u64> =
            host.iter_mut().map(|s| s.as_mut().map_or(std::ptr::null_mut(), |v| v.as_mut_ptr())).collect();
        if call(host_n as libc::c_long, [ptrs[0], ptrs[1], ptrs[2]])? == 0 && now_only {
            // Nothing ready: the sets stay as the program gave them, for the call that waits.
            return Ok(None);
        }
        // Back to guest numbers; the count is of guest bits (dup'ed fds share a host one).
        let mut ready = 0;
        for ((addr, gs), hs) in sets.iter().zip(&guest).zip(&host) {
            let (Some(gs), Some(hs)) = (gs, hs) else { continue };
            let mut out = vec![0u64; words];
            for (fd, h) in &map {
                if bit(gs, *fd) && bit(hs, h.raw() as usize) {
                    set_bit(&mut out, *fd);
                    ready += 1;
                }
            }
            let bytes: Vec<u8> = out.iter().flat_map(|w| w.to_ne_bytes()).collect();
            g.write_bytes(*addr, &bytes)?;
        }
        Ok(Some(ready))
    }

    pub(super) fn select(&self, g: Guest, nfds: u64, r: u64, w: u64, e: u64, tv: u64) -> SysResult<i64> {
        self.select_with(g, [nfds, r, w, e], Timeout::Val(tv), false).map(|r| r.unwrap_or(0))
    }

    /// pselect6(nfds, read, write, except, timespec, {mask, size}).
    pub(super) fn pselect6(&self, g: Guest, a: &[u64; 6]) -> SysResult<i64> {
        self.pselect6_with(g, *a, false).map(|r| r.unwrap_or(0))
    }

    fn pselect6_with(&self, g: Guest, [nfds, r, w, e, tsp, sig]: [u64; 6], now_only: bool) -> SysResult<Option<i64>> {
        // Linux checks the timeout before the signal mask.
        if tsp != 0 {
            let [sec, nsec] = g.read::<[i64; 2]>(tsp)?;
            if !valid_timeout(sec, nsec) {
                return Err(Errno::EINVAL);
            }
        }
        if sig != 0 {
            // { const sigset_t *ss; size_t ss_len; }
            let [mask, size] = g.read::<[u64; 2]>(sig)?;
            check_sigmask(g, mask, size)?;
        }
        self.select_with(g, [nfds, r, w, e], Timeout::Spec(tsp), now_only)
    }

    /// select (a timeval) or pselect6 (a timespec) over the sets `[nfds, read, write, except]`;
    /// with `now_only`, made with a zero timeout and None (the sets and the time untouched) if
    /// nothing is ready and the program's timeout is not zero.
    fn select_with(
        &self,
        g: Guest,
        [nfds, r, w, e]: [u64; 4],
        timeout: Timeout,
        now_only: bool,
    ) -> SysResult<Option<i64>> {
        let (addr, is_spec) = match timeout {
            Timeout::Val(a) => (a, false),
            Timeout::Spec(a) => (a, true),
        };
        // Both are two words, seconds then micro- or nanoseconds.
        let mut t = if addr == 0 { None } else { Some(g.read::<[i64; 2]>(addr)?) };
        // An invalid timeout is EINVAL even where a descriptor is ready (select's microseconds
        // past a second carry into the seconds, as Linux's).
        let valid = |[sec, sub]: [i64; 2]| {
            if is_spec {
                valid_timeout(sec, sub)
            } else {
                sub >= 0 && valid_timeout(sec.saturating_add(sub / 1_000_000), sub % 1_000_000 * 1000)
            }
        };
        if t.is_some_and(|t| !valid(t)) {
            return Err(Errno::EINVAL);
        }
        let waits = t.is_none_or(|t| t != [0, 0]);
        let mut zero = [0i64; 2];
        let tp = match (now_only, t.as_mut()) {
            (true, _) => zero.as_mut_ptr(),
            (false, Some(t)) => t.as_mut_ptr(),
            (false, None) => std::ptr::null_mut(),
        };
        let nr = if is_spec { libc::SYS_pselect6 } else { libc::SYS_select };
        let got = self.select_sets(g, nfds, [r, w, e], now_only && waits, |n, s| {
            // SAFETY: host fd_sets of at least `n` bits or NULL, and NULL or a host timeval or
            // timespec (the host writes the time left there, so a restart continues with it);
            // pselect6's sixth argument (no signal mask) is 0, which select ignores.
            unsafe { self.sys(nr, &[n, ptr(s[0]), ptr(s[1]), ptr(s[2]), ptr(tp), 0]) }
        });
        // The time left (all of it when the call was made without waiting), also when a signal
        // ended the wait, as Linux's poll_select_finish writes it: a restart continues with it.
        if let (Some(t), Ok(Some(_)) | Err(Errno::EINTR)) = (t, &got) {
            if !now_only || got.is_ok() {
                let _ = g.write(addr, &t);
            }
        }
        got
    }
}

/// Whether a timeout of `sec` seconds and `nsec` nanoseconds is one Linux takes
/// (timespec64_valid).
fn valid_timeout(sec: i64, nsec: i64) -> bool {
    sec >= 0 && (0..1_000_000_000).contains(&nsec)
}

/// Where select's or pselect6's timeout is: a timeval or a timespec (0: none).
enum Timeout {
    Val(u64),
    Spec(u64),
}
