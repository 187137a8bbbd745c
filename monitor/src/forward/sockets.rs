//! Sockets: socket, socketpair, bind, listen, accept, accept4, connect, sendto, recvfrom,
//! sendmsg, recvmsg, sendmmsg, recvmmsg, shutdown, getsockname, getpeername, getsockopt,
//! setsockopt. Each socket is a host one behind a guest descriptor (AF_UNIX, AF_INET,
//! AF_INET6, AF_VSOCK, and AF_NETLINK's NETLINK_ROUTE for interface queries,
//! NETLINK_SOCK_DIAG for socket lists, NETLINK_GENERIC, NETLINK_KOBJECT_UEVENT and
//! NETLINK_USERSOCK: `forwarded_family`; other families are
//! EAFNOSUPPORT with one line saying so).
//!
//! Addresses are copied between the program and a host buffer the way Linux copies them
//! (`move_addr_to_kernel`, `move_addr_to_user`: EINVAL for a length past `sockaddr_storage`,
//! EFAULT, the full length written back). An AF_UNIX address that names a file is looked up
//! with the same walk as `open` (walk.rs, relative to the program's working directory, which
//! is the monitor's): nothing in the monitor's own /proc is reachable. `connect` and `sendto`
//! then name the socket file as `/proc/self/fd/N` of the looked-up object, so a name swapped
//! after the check is not followed; `bind` creates the name as given (or, for the program's
//! own /proc and /dev spellings, in the looked-up directory).
//!
//! SCM_RIGHTS messages carry the program's descriptors: on send each guest fd is replaced by
//! its host descriptor; on receive each host descriptor the message brought is put in the
//! guest's table (FD_CLOEXEC there if the program asked with MSG_CMSG_CLOEXEC; on the host
//! always) and its guest number written in its place.
//!
//! Host sends always carry MSG_NOSIGNAL; the guest kernel raises SIGPIPE itself for an EPIPE
//! unless the program passed MSG_NOSIGNAL (kernel/src/linux/syscall.rs).
//!
//! Socket options with host pointers or descriptors inside (BPF filters, netfilter tables,
//! TCP zero-copy, pidfds) and levels other than the socket, IP, IPv6, TCP and UDP ones are not
//! forwarded: ENOPROTOOPT with one line saying so.

use std::collections::BTreeSet;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::blocking::Tried;
use super::errno::{Errno, SysResult};
use super::fd_table::{FdKind, HostFd};
use super::guest_mem::{Guest, USER_END};
use super::host::{int, ptr};
use super::io::MAX_RW_COUNT;

/// How many times the program has set a socket's SO_RCVLOWAT (`HostFd::rcvlowat`).
static RCVLOWAT_CHANGES: AtomicU32 = AtomicU32::new(0);
use super::paths::At;
use super::Forwarder;

/// sizeof(struct sockaddr_storage): the longest address Linux copies.
const ADDR_MAX: usize = 128;
/// sizeof(struct sockaddr_un).
const SUN_LEN: usize = 110;
/// sizeof(struct cmsghdr) on x86-64.
const CMSG_HDR: usize = 16;
/// The most control data the host gets for one message (Linux's default optmem limit is
/// smaller: more is ENOBUFS there too).
const CONTROL_MAX: u64 = 1 << 20;
/// SOCK_TYPE_MASK: the flags live above it.
const TYPE_MASK: i32 = 0xf;

/// One guest `struct msghdr` (x86-64 layout).
#[derive(Clone, Copy)]
#[repr(C)]
struct GuestMsghdr {
    name: u64,
    namelen: i32,
    _pad: u32,
    iov: u64,
    iovlen: u64,
    control: u64,
    controllen: u64,
    flags: i32,
    _pad2: u32,
}

/// sizeof(struct mmsghdr): a msghdr and the `unsigned int msg_len` the call fills in.
const MMSGHDR_SIZE: u64 = 64;
/// Offsets of `msg_controllen` and `msg_flags` in struct msghdr.
const CONTROLLEN_AT: u64 = 40;
const FLAGS_AT: u64 = 48;
const NAMELEN_AT: u64 = 8;

/// A socket address as the host call gets it, and what must stay open while it is used.
struct SockAddr {
    buf: [u8; ADDR_MAX],
    len: usize,
    /// The lookup a rewritten path names a directory of, or the object it names.
    _at: Option<At>,
    _obj: Option<OwnedFd>,
    /// Why the pathname could not be looked up (the host was given `NOWHERE`).
    lookup_error: Option<Errno>,
}

/// A pathname no lookup finds: procfs's descriptor directory has names of digits only.
const NOWHERE: &[u8] = b"/proc/self/fd/-";

impl SockAddr {
    fn empty() -> SockAddr {
        SockAddr { buf: [0; ADDR_MAX], len: 0, _at: None, _obj: None, lookup_error: None }
    }

    /// The host's answer to a call with this address: its ENOENT for `NOWHERE` is the error
    /// of the program's own name.
    fn answer(&self, r: SysResult<i64>) -> SysResult<i64> {
        match (r, self.lookup_error) {
            (Err(Errno::ENOENT), Some(e)) => Err(e),
            (r, _) => r,
        }
    }

    fn family(&self) -> i32 {
        if self.len < 2 {
            return -1;
        }
        u16::from_ne_bytes([self.buf[0], self.buf[1]]) as i32
    }

    /// The host pointer and length for a call (NULL and 0 for no address).
    fn arg(&self) -> (libc::c_long, libc::c_long) {
        if self.len == 0 {
            (0, 0)
        } else {
            (ptr(self.buf.as_ptr()), self.len as libc::c_long)
        }
    }
}

/// Says once per kind of request that it is not forwarded.
/// What `report_once` has said.
static REPORTED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

pub(super) fn report_once(what: String) {
    let mut seen = REPORTED.lock().unwrap_or_else(|e| e.into_inner());
    if seen.insert(what.clone()) {
        eprintln!("hrt: {what} (reported once)");
    }
}

/// Whether socket option (`level`, `name`) may go to the host (`set`: setsockopt). Options
/// whose value holds a pointer or descriptor of the caller's are never forwarded.
/// SOL_RAW, the level of raw sockets' options (not in the libc crate).
const SOL_RAW: i32 = 255;
/// Multipath TCP's option level (linux/socket.h), which the libc crate lacks.
const SOL_MPTCP: i32 = 284;

/// A classic BPF program (`struct sock_fprog`) as SO_ATTACH_FILTER and
/// SO_ATTACH_REUSEPORT_CBPF take it: its instructions copied from guest memory (`at`, `len`
/// bytes, the struct's own size checked by the host) and a host struct pointing at them, which
/// the caller keeps alive. EFAULT if the program cannot read them; EINVAL past Linux's
/// BPF_MAXINSNS (4,096).
fn host_filter(g: &Guest, at: u64, len: u64) -> SysResult<Option<(Vec<u8>, [u64; 2])>> {
    if len != 16 {
        // The host answers the wrong size (EINVAL).
        return Ok(None);
    }
    let fprog: [u64; 2] = g.read(at)?;
    let count = fprog[0] & 0xffff;
    if count > 4096 {
        return Err(Errno::EINVAL);
    }
    let insns = g.read_bytes(fprog[1], count * 8)?;
    let host = [count, insns.as_ptr() as u64];
    Ok(Some((insns, host)))
}

fn option_forwarded(level: i32, name: i32, set: bool) -> bool {
    match level {
        libc::SOL_SOCKET => {
            let refused: &[i32] = if set {
                // SO_ATTACH_BPF, SO_ATTACH_REUSEPORT_EBPF (a descriptor of eBPF's), SO_DEVMEM_*.
                // SO_ATTACH_FILTER and SO_ATTACH_REUSEPORT_CBPF carry a pointer: copied
                // (`host_filter`).
                &[50, 52, 78, 79, 80]
            } else {
                // SO_PEERPIDFD (a new descriptor), SO_DEVMEM_*.
                &[77, 78, 79, 80]
            };
            !refused.contains(&name)
        }
        // Below 64: IP's own options; 80: SO_ORIGINAL_DST. Netfilter's tables live between.
        libc::IPPROTO_IP => !(64..80).contains(&name) && name <= 80,
        // 66, 67: IPV6_RECVTCLASS, IPV6_TCLASS; 70 to 80: IPv6's later options and
        // IP6T_SO_ORIGINAL_DST; 64, 65, 68, 69: netfilter.
        libc::IPPROTO_IPV6 => name < 64 || matches!(name, 66 | 67 | 70..=80),
        // TCP_ZEROCOPY_RECEIVE holds an address.
        libc::IPPROTO_TCP => name != 35,
        libc::IPPROTO_UDP => true,
        // Netlink's flags and group memberships (`ip` sets NETLINK_EXT_ACK and
        // NETLINK_GET_STRICT_CHK); not the memory-mapped rings (6, 7) of old kernels.
        libc::SOL_NETLINK => !matches!(name, 6 | 7),
        // Raw sockets' ICMP_FILTER (ping) and ICMPv6's ICMP6_FILTER (ping6): plain masks.
        SOL_RAW | libc::IPPROTO_ICMPV6 => true,
        // Multipath TCP's MPTCP_INFO, MPTCP_TCPINFO and MPTCP_SUBFLOW_ADDRS (Go asks the first
        // whether a connection is MPTCP); not MPTCP_FULL_INFO, whose struct holds addresses.
        SOL_MPTCP => matches!(name, 1..=3),
        _ => false,
    }
}

/// The (offset, length) of each SCM_RIGHTS message in control data `buf`, walked as Linux's
/// `for_each_cmsghdr` walks it. Stops at a malformed header (the host then answers EINVAL).
fn rights(buf: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at + CMSG_HDR <= buf.len() {
        let len = u64::from_ne_bytes(buf[at..at + 8].try_into().unwrap_or_default()) as usize;
        if len < CMSG_HDR || len > buf.len() - at {
            break;
        }
        if get_i32(buf, at + 8) == libc::SOL_SOCKET && get_i32(buf, at + 12) == libc::SCM_RIGHTS {
            out.push((at, len));
        }
        at += len.next_multiple_of(8);
    }
    out
}

fn get_i32(buf: &[u8], at: usize) -> i32 {
    i32::from_ne_bytes(buf[at..at + 4].try_into().unwrap_or_default())
}

impl Forwarder {
    /// The host socket behind guest fd `fd`: EBADF, also for an O_PATH descriptor (which
    /// Linux's socket calls do not look behind), or ENOTSOCK for another kind of file.
    fn socket_fd(&self, fd: u64) -> SysResult<Arc<HostFd>> {
        let h = self.fds().get(fd)?;
        if h.kind() != FdKind::Socket {
            return Err(if h.path_only() { Errno::EBADF } else { Errno::ENOTSOCK });
        }
        Ok(h)
    }

    /// The error for an option `option_forwarded` refuses. An AF_UNIX socket has no options
    /// beyond SOL_SOCKET's, so Linux answers EOPNOTSUPP for every other level without looking
    /// at the option; anything else is an option not forwarded (ENOPROTOOPT, said once).
    fn option_refused(&self, h: &HostFd, call: &str, level: i32, name: i32) -> Errno {
        if level != libc::SOL_SOCKET && self.sock_int(h, libc::SO_DOMAIN) == Ok(libc::AF_UNIX) {
            return Errno::EOPNOTSUPP;
        }
        // A level the socket's protocols do not know is EOPNOTSUPP on Linux (an inet socket
        // passes any level but its own and SOL_IP's on): asked of the host with no room for an
        // answer, which it checks the level before (SOL_SOCKET's options are never asked: one
        // of them makes a descriptor).
        if call == "getsockopt" && level != libc::SOL_SOCKET {
            let mut len: libc::socklen_t = 0;
            let mut none = 0u8;
            // SAFETY: a zero-length buffer and its length, both ours.
            let r = unsafe { self.host_getsockopt(h, level, name, ptr(std::ptr::addr_of_mut!(none)), &mut len) };
            if r == Err(Errno::EOPNOTSUPP) {
                return Errno::EOPNOTSUPP;
            }
        }
        report_once(format!("{call} level {level} option {name} is not forwarded: ENOPROTOOPT"));
        Errno::ENOPROTOOPT
    }

    /// Whether forwarded call `nr` (`args`), interrupted by a signal, is EINTR whatever
    /// SA_RESTART says: a socket call that waits with a time limit (SO_RCVTIMEO for receiving
    /// and accepting, SO_SNDTIMEO for sending and connecting), as Linux's `sock_intr_errno`.
    pub fn interrupted_for_good(&self, nr: u64, args: &[u64; 6]) -> bool {
        self.in_context(nr, |nr| {
            let Ok(nr) = libc::c_long::try_from(nr) else { return false };
            let option = match nr {
                libc::SYS_read
                | libc::SYS_readv
                | libc::SYS_recvfrom
                | libc::SYS_recvmsg
                | libc::SYS_recvmmsg
                | libc::SYS_accept
                | libc::SYS_accept4 => libc::SO_RCVTIMEO,
                libc::SYS_write
                | libc::SYS_writev
                | libc::SYS_sendto
                | libc::SYS_sendmsg
                | libc::SYS_sendmmsg
                | libc::SYS_connect => libc::SO_SNDTIMEO,
                _ => return false,
            };
            let Ok(h) = self.socket_fd(args[0]) else { return false };
            let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
            let mut len = std::mem::size_of::<libc::timeval>() as libc::socklen_t;
            // SAFETY: getsockopt writes at most `len` bytes into `tv`.
            let r = unsafe {
                libc::getsockopt(h.raw(), libc::SOL_SOCKET, option, &mut tv as *mut _ as *mut libc::c_void, &mut len)
            };
            r == 0 && (tv.tv_sec != 0 || tv.tv_usec != 0)
        })
        .unwrap_or(false)
    }

    /// Socket `h`'s SO_RCVLOWAT, asked of the host only after the program set some socket's
    /// (every blocking `recv` asked before it tried without waiting). A process sharing the
    /// socket (a forked child, another program) that changes it is not seen: only the program's
    /// own setting is one it can count on.
    fn rcvlowat(&self, h: &HostFd) -> Option<i32> {
        h.rcvlowat(RCVLOWAT_CHANGES.load(Ordering::Acquire), || self.sock_int(h, libc::SO_RCVLOWAT).ok())
    }

    /// An `int` socket option of host socket `h` (SO_DOMAIN, SO_TYPE, SO_RCVLOWAT). The domain
    /// and type are asked once per socket (`HostFd::socket_ids`).
    fn sock_int(&self, h: &HostFd, name: i32) -> SysResult<i32> {
        if name == libc::SO_DOMAIN || name == libc::SO_TYPE {
            let mut failed = Errno::EBADF;
            let find = || match (self.sock_int_asked(h, libc::SO_DOMAIN), self.sock_int_asked(h, libc::SO_TYPE)) {
                (Ok(d), Ok(t)) => Some((d, t)),
                (Err(e), _) | (_, Err(e)) => {
                    failed = e;
                    None
                }
            };
            let (domain, ty) = h.socket_ids(find).ok_or(failed)?;
            return Ok(if name == libc::SO_DOMAIN { domain } else { ty });
        }
        self.sock_int_asked(h, name)
    }

    /// An `int` socket option of host socket `h`, asked of the host.
    fn sock_int_asked(&self, h: &HostFd, name: i32) -> SysResult<i32> {
        let mut v: i32 = 0;
        let mut len: libc::socklen_t = 4;
        // SAFETY: an int and its length, both ours.
        unsafe { self.host_getsockopt(h, libc::SOL_SOCKET, name, ptr(std::ptr::addr_of_mut!(v)), &mut len)? };
        Ok(v)
    }

    /// The host's getsockopt of `h` into `val` (an address), `len` in and out.
    ///
    /// # Safety
    /// `val` is NULL or covers `*len` writable bytes; `len` is valid.
    unsafe fn host_getsockopt(
        &self,
        h: &HostFd,
        level: i32,
        name: i32,
        val: libc::c_long,
        len: *mut libc::socklen_t,
    ) -> SysResult<i64> {
        // SAFETY: the caller's promise.
        unsafe {
            self.sys(
                libc::SYS_getsockopt,
                &[h.raw() as libc::c_long, level as libc::c_long, name as libc::c_long, val, ptr(len)],
            )
        }
    }

    /// Puts a new host socket in the guest's table.
    fn insert_socket(&self, fd: i32, cloexec: bool) -> SysResult<i64> {
        self.fds().insert(Arc::new(HostFd::with_kind(fd, FdKind::Socket)), cloexec, 0)
    }

    pub(super) fn socket(&self, domain: u64, kind: u64, protocol: u64) -> SysResult<i64> {
        let (domain, kind) = (int(domain) as i32, int(kind) as i32);
        let flags = kind & !TYPE_MASK;
        if flags & !(libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK) != 0 {
            return Err(Errno::EINVAL);
        }
        let host_kind = (kind | libc::SOCK_CLOEXEC) as libc::c_long;
        // SAFETY: no pointer arguments.
        let fd = unsafe { self.sys(libc::SYS_socket, &[domain as libc::c_long, host_kind, int(protocol)])? };
        if !forwarded_family(domain, Some(int(protocol) as i32)) {
            // The host's refusal stands as Linux's (a family this host lacks: EAFNOSUPPORT,
            // ENODEV or EPROTONOSUPPORT as natively); one it could make, hrt does not forward.
            // SAFETY: the descriptor just made, closed once.
            unsafe { libc::close(fd as i32) };
            return not_forwarded(domain);
        }
        self.insert_socket(fd as i32, flags & libc::SOCK_CLOEXEC != 0)
    }

    pub(super) fn socketpair(&self, g: Guest, domain: u64, kind: u64, protocol: u64, sv: u64) -> SysResult<i64> {
        let (domain, kind) = (int(domain) as i32, int(kind) as i32);
        let flags = kind & !TYPE_MASK;
        if flags & !(libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK) != 0 {
            return Err(Errno::EINVAL);
        }
        // Linux hands out the descriptors (and writes them) before it makes the sockets.
        g.range_mut(sv, 8)?;
        if !forwarded_family(domain, None) {
            return not_forwarded(domain);
        }
        let mut host = [0i32; 2];
        let host_kind = (kind | libc::SOCK_CLOEXEC) as libc::c_long;
        // SAFETY: `host` holds two ints.
        unsafe {
            self.sys(libc::SYS_socketpair, &[domain as libc::c_long, host_kind, int(protocol), ptr(host.as_mut_ptr())])?
        };
        let [a, b] = host.map(|fd| Arc::new(HostFd::with_kind(fd, FdKind::Socket)));
        let (ga, gb) = self.fds().insert_pair(a, b, flags & libc::SOCK_CLOEXEC != 0)?;
        g.write(sv, &[ga as i32, gb as i32])?;
        Ok(0)
    }

    /// Linux's `move_addr_to_kernel`: EINVAL for a length below 0 or past sockaddr_storage,
    /// EFAULT for memory the program cannot read.
    fn addr_in(&self, g: Guest, addr: u64, len: u64) -> SysResult<SockAddr> {
        let len = int(len);
        if !(0..=ADDR_MAX as libc::c_long).contains(&len) {
            return Err(Errno::EINVAL);
        }
        let mut a = SockAddr::empty();
        let bytes = g.read_bytes(addr, len as u64)?;
        a.buf[..bytes.len()].copy_from_slice(&bytes);
        a.len = bytes.len();
        Ok(a)
    }

    /// Linux's `move_addr_to_user`: `addr[..]` to the program's buffer, at most the length it
    /// says it has (read from `ulen`), then the full length to `ulen`.
    fn addr_out(&self, g: Guest, addr: &[u8], uaddr: u64, ulen: u64) -> SysResult<()> {
        let len = g.read::<i32>(ulen)?;
        let len = len.min(addr.len() as i32);
        if len < 0 {
            return Err(Errno::EINVAL);
        }
        g.write_bytes(uaddr, &addr[..len as usize])?;
        g.write(ulen, &(addr.len() as i32))
    }

    /// The pathname of an AF_UNIX address for host socket `h`, if it has one.
    fn unix_path(&self, h: &HostFd, a: &SockAddr) -> SysResult<Option<Vec<u8>>> {
        // Unnamed (family only), abstract (a leading NUL) and over-long addresses go to the
        // host as they are (it checks them).
        if a.family() != libc::AF_UNIX || a.len <= 2 || a.len > SUN_LEN || a.buf[2] == 0 {
            return Ok(None);
        }
        if self.sock_int(h, libc::SO_DOMAIN)? != libc::AF_UNIX {
            return Ok(None);
        }
        let path = &a.buf[2..a.len];
        let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
        Ok(Some(path[..end].to_vec()))
    }

    /// For bind: an AF_UNIX pathname is looked up as open would look it up (EACCES for the
    /// monitor's own /proc); the host creates it as the program spelled it, unless the
    /// spelling names the program's own descriptors (/dev/fd/N/...), which the host would take
    /// for its own: then in the directory the lookup found.
    fn bind_addr(&self, h: &HostFd, mut a: SockAddr) -> SysResult<SockAddr> {
        let Some(path) = self.unix_path(h, &a)? else { return Ok(a) };
        let at = self.resolve(libc::AT_FDCWD as u32 as u64, path, false)?;
        if at.rewritten || at.synthetic.is_some() {
            let text = if at.dirfd == libc::AT_FDCWD {
                at.path.as_bytes().to_vec()
            } else {
                [format!("/proc/self/fd/{}/", at.dirfd).as_bytes(), at.path.as_bytes()].concat()
            };
            set_path(&mut a, &text)?;
            // The looked-up directory must stay open while the host binds.
            a._at = Some(at);
        }
        Ok(a)
    }

    /// For connect and sendto: an AF_UNIX pathname is looked up as open would look it up, and
    /// the host is given `/proc/self/fd/N` of the object found. A lookup that fails gives the
    /// host a name that is never there instead (`NOWHERE`): its answer comes where Linux's
    /// would (EISCONN, EPIPE, a sequenced-packet socket that ignores the address and sends, an
    /// autobind with SO_PASSCRED before the lookup), and its ENOENT becomes the lookup's error
    /// (`SockAddr::answer`).
    fn peer_addr(&self, h: &HostFd, mut a: SockAddr) -> SysResult<SockAddr> {
        let Some(path) = self.unix_path(h, &a)? else { return Ok(a) };
        let looked_up = self.resolve(libc::AT_FDCWD as u32 as u64, path, true).and_then(|at| {
            if at.synthetic.is_some() {
                return Ok(Err(Errno::ECONNREFUSED));
            }
            let flags = at.open_flags((libc::O_PATH | libc::O_CLOEXEC) as libc::c_long);
            // SAFETY: a host C string.
            unsafe { self.sys(libc::SYS_openat, &[at.dirfd as libc::c_long, ptr(at.path.as_ptr()), flags]) }.map(Ok)
        });
        let fd = match looked_up {
            Ok(Ok(fd)) => fd,
            Ok(Err(e)) => return Err(e),
            Err(e) => {
                set_path(&mut a, NOWHERE)?;
                a.lookup_error = Some(e);
                return Ok(a);
            }
        };
        // SAFETY: a descriptor just opened, owned by nobody else.
        let obj = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        set_path(&mut a, format!("/proc/self/fd/{}", obj.as_raw_fd()).as_bytes())?;
        a._obj = Some(obj);
        Ok(a)
    }

    pub(super) fn bind(&self, g: Guest, fd: u64, addr: u64, len: u64) -> SysResult<i64> {
        let h = self.socket_fd(fd)?;
        let a = self.addr_in(g, addr, len)?;
        let a = self.bind_addr(&h, a)?;
        let (p, l) = a.arg();
        // SAFETY: `a` is a host buffer of `l` bytes.
        unsafe { self.sys(libc::SYS_bind, &[h.raw() as libc::c_long, p, l]) }
    }

    pub(super) fn connect(&self, g: Guest, fd: u64, addr: u64, len: u64) -> SysResult<i64> {
        // Linux's order: the descriptor, the address, then whether it is a socket.
        let h = self.fds().get(fd)?;
        let a = self.addr_in(g, addr, len)?;
        let h = self.socket_fd(fd).map(|_| h)?;
        let a = self.peer_addr(&h, a)?;
        let (p, l) = a.arg();
        // SAFETY: `a` is a host buffer of `l` bytes.
        let r = unsafe { self.sys(libc::SYS_connect, &[h.raw() as libc::c_long, p, l]) };
        a.answer(r)
    }

    pub(super) fn listen(&self, fd: u64, backlog: u64) -> SysResult<i64> {
        let h = self.socket_fd(fd)?;
        // SAFETY: no pointers.
        unsafe { self.sys(libc::SYS_listen, &[h.raw() as libc::c_long, int(backlog)]) }
    }

    pub(super) fn shutdown_socket(&self, fd: u64, how: u64) -> SysResult<i64> {
        let h = self.socket_fd(fd)?;
        // SAFETY: no pointers.
        unsafe { self.sys(libc::SYS_shutdown, &[h.raw() as libc::c_long, int(how)]) }
    }

    pub(super) fn accept4(&self, g: Guest, fd: u64, addr: u64, len: u64, flags: u64) -> SysResult<i64> {
        let flags = int(flags) as i32;
        if flags & !(libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK) != 0 {
            return Err(Errno::EINVAL);
        }
        let h = self.socket_fd(fd)?;
        let mut peer = [0u8; ADDR_MAX];
        let mut peer_len = ADDR_MAX as libc::socklen_t;
        let host_flags = (flags & libc::SOCK_NONBLOCK) | libc::SOCK_CLOEXEC;
        // SAFETY: a host address buffer and its length.
        let new = unsafe {
            self.sys(
                libc::SYS_accept4,
                &[
                    h.raw() as libc::c_long,
                    ptr(peer.as_mut_ptr()),
                    ptr(std::ptr::addr_of_mut!(peer_len)),
                    host_flags as libc::c_long,
                ],
            )?
        };
        let new = Arc::new(HostFd::with_kind(new as i32, FdKind::Socket));
        // As Linux: the peer's address is copied out after the connection was taken (a bad
        // pointer loses it).
        if addr != 0 {
            self.addr_out(g, &peer[..(peer_len as usize).min(ADDR_MAX)], addr, len)?;
        }
        self.fds().insert(new, flags & libc::SOCK_CLOEXEC != 0, 0)
    }

    /// getsockname and getpeername.
    pub(super) fn sock_name(&self, g: Guest, nr: libc::c_long, fd: u64, addr: u64, len: u64) -> SysResult<i64> {
        let h = self.socket_fd(fd)?;
        let mut buf = [0u8; ADDR_MAX];
        let mut l = ADDR_MAX as libc::socklen_t;
        // SAFETY: a host address buffer and its length.
        unsafe { self.sys(nr, &[h.raw() as libc::c_long, ptr(buf.as_mut_ptr()), ptr(std::ptr::addr_of_mut!(l))])? };
        self.addr_out(g, &buf[..(l as usize).min(ADDR_MAX)], addr, len)?;
        Ok(0)
    }

    /// The part of a send or receive buffer the host may use: Linux checks the range against
    /// the user address space first (EFAULT before anything else); a stream socket then receives
    /// into the bytes before the first unusable page, or sends whole chunks of those
    /// (`io::short_write_len`); any other fails (EFAULT) unless all are usable.
    fn sock_buf(g: Guest, buf: u64, len: u64, into_program: bool, stream: bool) -> SysResult<(*mut u8, u64)> {
        let len = len.min(MAX_RW_COUNT);
        let mut usable = if into_program { g.usable_len_mut(buf, len)? } else { g.usable_len(buf, len)? };
        if usable < len && !stream {
            return Err(Errno::EFAULT);
        }
        if usable < len && !into_program {
            usable = super::io::short_write_len(FdKind::Socket, || true, usable)?;
        }
        let p = if into_program { g.range_mut(buf, usable)? } else { g.range(buf, usable)? };
        Ok((p, usable))
    }

    /// sendto, sendmsg, recvfrom or recvmsg (`nr`, `a`) made at once with MSG_DONTWAIT, where the
    /// host can answer without waiting (data there to receive, room for a datagram): handed to
    /// a worker thread, each cost ~95 us (MPICH's `MPI_Init` asks netlink for the interfaces in
    /// 56 such calls). `Waits` if it would wait (EAGAIN: nothing happened) and the socket is
    /// blocking (a non-blocking one answers EAGAIN, as natively); `Untried` where MSG_DONTWAIT
    /// could change the answer: a stream socket's send (it may send part where the waiting
    /// call sends all), MSG_WAITALL, a stream socket with SO_RCVLOWAT above 1. Errors are the
    /// call's own, which the waiting call would give at once too.
    pub(super) fn socket_without_waiting(&self, g: Guest, nr: libc::c_long, a: &[u64; 6]) -> Tried {
        self.socket_try(g, nr, a).unwrap_or(Tried::Untried)
    }

    /// `socket_without_waiting`; None: not a call to try.
    fn socket_try(&self, g: Guest, nr: libc::c_long, a: &[u64; 6]) -> Option<Tried> {
        let (send, flags_at) = match nr {
            libc::SYS_sendto => (true, 3),
            libc::SYS_sendmsg => (true, 2),
            libc::SYS_recvfrom => (false, 3),
            libc::SYS_recvmsg => (false, 2),
            _ => return None,
        };
        if a[flags_at] & libc::MSG_DONTWAIT as u64 != 0 {
            // The program's own MSG_DONTWAIT: the call cannot wait.
            return Some(Tried::Done(super::errno::to_ret(self.dispatch(g, nr as u64, a))));
        }
        if a[flags_at] & libc::MSG_WAITALL as u64 != 0 {
            return None;
        }
        let h = self.socket_fd(a[0]).ok()?;
        if self.is_stream(&h).ok()? && (send || self.rcvlowat(&h)? > 1) {
            return None;
        }
        let mut now = *a;
        now[flags_at] |= libc::MSG_DONTWAIT as u64;
        Some(match self.dispatch(g, nr as u64, &now) {
            Err(Errno::EAGAIN) if self.nonblocking(a[0]) => Tried::Done(-(libc::EAGAIN as i64)),
            Err(Errno::EAGAIN) => Tried::Waits,
            done => Tried::Done(super::errno::to_ret(done)),
        })
    }

    /// A blocking `write` or `sendto` (no address, no MSG_WAITALL) on a stream socket, tried
    /// with MSG_DONTWAIT: all of it sent is the answer, a part sent leaves the rest to a worker
    /// (`Tried::Sent`), nothing sent (EAGAIN) is a hand-off as before. Stream sockets only: a
    /// datagram's send is all or nothing (`socket_without_waiting`). None: not such a call.
    pub(super) fn stream_send_without_waiting(&self, g: Guest, nr: u64, a: &[u64; 6]) -> Option<Tried> {
        let flags = match libc::c_long::try_from(nr).ok()? {
            libc::SYS_write => 0,
            libc::SYS_sendto if a[4] == 0 => a[3],
            _ => return None,
        };
        let wait_all = (libc::MSG_DONTWAIT | libc::MSG_WAITALL) as u64;
        if flags & wait_all != 0 || a[2] == 0 {
            return None;
        }
        let h = self.fds().get(a[0]).ok()?;
        if h.kind() != FdKind::Socket || !self.is_stream(&h).ok()? {
            return None;
        }
        let now = [a[0], a[1], a[2], flags | libc::MSG_DONTWAIT as u64, 0, 0];
        Some(match self.dispatch(g, libc::SYS_sendto as u64, &now) {
            // A non-blocking descriptor's send answers the part, as the program's own would.
            Ok(n) if n > 0 && (n as u64) < a[2].min(MAX_RW_COUNT) && !self.nonblocking(a[0]) => {
                let mut rest = *a;
                (rest[1], rest[2]) = (a[1] + n as u64, a[2] - n as u64);
                Tried::Sent { sent: n, rest }
            }
            Err(Errno::EAGAIN) if !self.nonblocking(a[0]) => Tried::Waits,
            done => Tried::Done(super::errno::to_ret(done)),
        })
    }

    pub(super) fn is_stream(&self, h: &HostFd) -> SysResult<bool> {
        Ok(self.sock_int(h, libc::SO_TYPE)? == libc::SOCK_STREAM)
    }

    /// The socket of a sendto or recvfrom (`a`: its arguments) after Linux's first check, that
    /// the buffer lies in the user address space (EFAULT before the descriptor is looked at).
    fn transfer_socket(&self, a: &[u64; 6]) -> SysResult<Arc<HostFd>> {
        if a[1].checked_add(a[2].min(MAX_RW_COUNT)).is_none_or(|end| end > USER_END) {
            return Err(Errno::EFAULT);
        }
        self.socket_fd(a[0])
    }

    /// sendto(fd, buf, len, flags, addr, addrlen).
    pub(super) fn sendto(&self, g: Guest, a: &[u64; 6]) -> SysResult<i64> {
        let h = self.transfer_socket(a)?;
        let to = if a[4] == 0 { SockAddr::empty() } else { self.peer_addr(&h, self.addr_in(g, a[4], a[5])?)? };
        let (p, n) = Self::sock_buf(g, a[1], a[2], false, self.is_stream(&h)?)?;
        let (ap, al) = to.arg();
        let flags = uint_flags(a[3]) | libc::MSG_NOSIGNAL as libc::c_long;
        // SAFETY: `p` covers `n` checked bytes of guest memory; `to` is a host buffer.
        let r =
            unsafe { self.sys(libc::SYS_sendto, &[h.raw() as libc::c_long, ptr(p), n as libc::c_long, flags, ap, al]) };
        to.answer(r)
    }

    /// recvfrom(fd, buf, len, flags, addr, addrlen).
    pub(super) fn recvfrom(&self, g: Guest, a: &[u64; 6]) -> SysResult<i64> {
        let h = self.transfer_socket(a)?;
        let stream = self.is_stream(&h)?;
        // TCP's MSG_TRUNC discards what it reads without touching the buffer (NULL is the
        // usual one): the host gets none either (the buffer's check said EFAULT).
        let discards = stream
            && a[3] & libc::MSG_TRUNC as u64 != 0
            && matches!(self.sock_int(&h, libc::SO_DOMAIN)?, libc::AF_INET | libc::AF_INET6);
        let (p, n) = match discards {
            true => (std::ptr::null_mut(), a[2].min(MAX_RW_COUNT)),
            false => Self::sock_buf(g, a[1], a[2], true, stream)?,
        };
        let (addr, alen, flags) = (a[4], a[5], a[3]);
        let mut from = [0u8; ADDR_MAX];
        let mut from_len = ADDR_MAX as libc::socklen_t;
        let (fp, fl) = if addr == 0 { (0, 0) } else { (ptr(from.as_mut_ptr()), ptr(std::ptr::addr_of_mut!(from_len))) };
        // SAFETY: `p` covers `n` checked writable bytes of guest memory; `from` is ours.
        let got = unsafe {
            self.sys(
                libc::SYS_recvfrom,
                &[h.raw() as libc::c_long, ptr(p), n as libc::c_long, uint_flags(flags), fp, fl],
            )?
        };
        // As Linux: a protocol that gives no address (a connected stream) writes length 0.
        if addr != 0 {
            self.addr_out(g, &from[..(from_len as usize).min(ADDR_MAX)], addr, alen)?;
        }
        Ok(got)
    }

    /// Reads the program's msghdr at `msg` as Linux's `copy_msghdr_from_user` does: EFAULT,
    /// EINVAL for a negative name length (longer ones are cut to sockaddr_storage), EMSGSIZE
    /// for more than UIO_MAXIOV buffers.
    fn msghdr_in(g: Guest, msg: u64) -> SysResult<GuestMsghdr> {
        let mut m = g.read::<GuestMsghdr>(msg)?;
        if m.name == 0 {
            m.namelen = 0;
        }
        if m.namelen < 0 {
            return Err(Errno::EINVAL);
        }
        m.namelen = m.namelen.min(ADDR_MAX as i32);
        if m.iovlen > libc::UIO_MAXIOV as u64 {
            return Err(Errno::EMSGSIZE);
        }
        Ok(m)
    }

    pub(super) fn sendmsg(&self, g: Guest, fd: u64, msg: u64, flags: u64) -> SysResult<i64> {
        let h = self.socket_fd(fd)?;
        self.sendmsg_one(g, &h, msg, uint_flags(flags))
    }

    fn sendmsg_one(&self, g: Guest, h: &HostFd, msg: u64, flags: libc::c_long) -> SysResult<i64> {
        // Linux's order: the header, the name, the buffers, the control data and its
        // descriptors, then the protocol (an AF_UNIX peer's lookup).
        let m = Self::msghdr_in(g, msg)?;
        let a = if m.namelen == 0 { SockAddr::empty() } else { self.addr_in(g, m.name, m.namelen as u64)? };
        let iov = self.iovecs(g, m.iov, m.iovlen, false, false)?;
        if m.controllen > CONTROL_MAX {
            return Err(Errno::ENOBUFS);
        }
        let mut control = g.read_bytes(m.control, m.controllen)?;
        // The program's descriptors become the host's, held open until the host has them.
        let mut held = Vec::new();
        if !control.is_empty() && self.sock_int(h, libc::SO_DOMAIN)? == libc::AF_UNIX {
            for (at, len) in rights(&control) {
                for i in (at + CMSG_HDR..at + len).step_by(4).take_while(|i| i + 4 <= at + len) {
                    // A descriptor the program does not have goes as -1: the host says EBADF
                    // where Linux does (a sequenced-packet socket's ENOTCONN and pending
                    // error come first).
                    let host = self.fds().get(get_i32(&control, i) as u32 as u64).ok();
                    let raw = host.as_ref().map_or(-1, |h| h.raw());
                    control[i..i + 4].copy_from_slice(&raw.to_ne_bytes());
                    held.extend(host);
                }
            }
        }
        let a = if a.len == 0 { a } else { self.peer_addr(h, a)? };
        let (ap, al) = a.arg();
        let hdr = host_msghdr(ap as *mut libc::c_void, al as libc::socklen_t, &iov, &mut control);
        let flags = flags | libc::MSG_NOSIGNAL as libc::c_long;
        // SAFETY: the iovecs cover checked guest memory; name and control are host buffers.
        let r = unsafe { self.sys(libc::SYS_sendmsg, &[h.raw() as libc::c_long, ptr(&hdr), flags]) };
        drop(held);
        a.answer(r)
    }

    pub(super) fn recvmsg(&self, g: Guest, fd: u64, msg: u64, flags: u64) -> SysResult<i64> {
        let h = self.socket_fd(fd)?;
        self.recvmsg_one(g, &h, msg, uint_flags(flags))
    }

    fn recvmsg_one(&self, g: Guest, h: &HostFd, msg: u64, flags: libc::c_long) -> SysResult<i64> {
        let m = Self::msghdr_in(g, msg)?;
        let iov = self.iovecs(g, m.iov, m.iovlen, true, false)?;
        let mut name = [0u8; ADDR_MAX];
        let mut control = vec![0u8; m.controllen.min(CONTROL_MAX) as usize];
        let (np, nl) = if m.name == 0 { (std::ptr::null_mut(), 0) } else { (name.as_mut_ptr(), ADDR_MAX) };
        let mut hdr = host_msghdr(np as *mut libc::c_void, nl as libc::socklen_t, &iov, &mut control);
        let cloexec = flags & libc::MSG_CMSG_CLOEXEC as libc::c_long != 0;
        let host_flags = flags | libc::MSG_CMSG_CLOEXEC as libc::c_long;
        // SAFETY: the iovecs cover checked writable guest memory; name and control are ours.
        let got = unsafe {
            self.sys(libc::SYS_recvmsg, &[h.raw() as libc::c_long, ptr(std::ptr::addr_of_mut!(hdr)), host_flags])?
        };
        let clen = hdr.msg_controllen.min(control.len());
        // The host call's own MSG_CMSG_CLOEXEC shows in msg_flags, as the program's would.
        let mut out_flags = hdr.msg_flags & !libc::MSG_CMSG_CLOEXEC | (flags as i32 & libc::MSG_CMSG_CLOEXEC);
        // Received host descriptors: owned now; into the guest's table if the control buffer
        // can take their numbers (else dropped, MSG_CTRUNC, as Linux does when it cannot
        // write them).
        let writable = g.range_mut(m.control, clen as u64).is_ok();
        let mut ctrunc = !writable;
        for (at, len) in rights(&control[..clen]) {
            let mut i = at + CMSG_HDR;
            let mut kept = at + CMSG_HDR;
            while i + 4 <= at + len {
                let host = Arc::new(HostFd::owned(get_i32(&control, i), false));
                i += 4;
                if !writable {
                    continue;
                }
                match self.fds().insert(host, cloexec, 0) {
                    Ok(n) => {
                        control[kept..kept + 4].copy_from_slice(&(n as i32).to_ne_bytes());
                        kept += 4;
                    }
                    Err(_) => ctrunc = true,
                }
            }
            if kept != i {
                control[at..at + 8].copy_from_slice(&((kept - at) as u64).to_ne_bytes());
            }
        }
        let clen = if writable { clen } else { 0 };
        if ctrunc {
            out_flags |= libc::MSG_CTRUNC;
        }
        g.write_bytes(m.control, &control[..clen])?;
        if m.name != 0 {
            let l = (hdr.msg_namelen as usize).min(ADDR_MAX);
            self.addr_out(g, &name[..l], m.name, msg + NAMELEN_AT)?;
        }
        g.write(msg + FLAGS_AT, &out_flags)?;
        g.write(msg + CONTROLLEN_AT, &(clen as u64))?;
        Ok(got)
    }

    pub(super) fn sendmmsg(&self, g: Guest, fd: u64, vec: u64, vlen: u64, flags: u64) -> SysResult<i64> {
        let h = self.socket_fd(fd)?;
        let flags = uint_flags(flags);
        let n = (vlen as u32 as u64).min(libc::UIO_MAXIOV as u64);
        self.each_mmsg(g, vec, n, |entry| self.sendmsg_one(g, &h, entry, flags))
    }

    pub(super) fn recvmmsg(&self, g: Guest, fd: u64, vec: u64, vlen: u64, flags: u64, timeout: u64) -> SysResult<i64> {
        let deadline = if timeout == 0 {
            None
        } else {
            let t = g.read::<libc::timespec>(timeout)?;
            if t.tv_sec < 0 || !(0..1_000_000_000).contains(&t.tv_nsec) {
                return Err(Errno::EINVAL);
            }
            // A time too far to represent never expires (it panicked hrt before).
            Instant::now().checked_add(Duration::new(t.tv_sec as u64, t.tv_nsec as u32))
        };
        let h = self.socket_fd(fd)?;
        let mut flags = uint_flags(flags);
        // As Linux: an error the socket holds (a reset peer) is taken and answered before
        // anything is read, even with data queued (recvmsg reads the data first).
        if flags & libc::MSG_ERRQUEUE as libc::c_long == 0 {
            match self.sock_int(&h, libc::SO_ERROR)? {
                0 => {}
                e => return Err(Errno(e)),
            }
        }
        let n = (vlen as u32 as u64).min(libc::UIO_MAXIOV as u64);
        let mut expired = false;
        let got = self.each_mmsg(g, vec, n, |entry| {
            if expired {
                return Err(Errno::EAGAIN);
            }
            let r = self.recvmsg_one(g, &h, entry, flags)?;
            if flags & libc::MSG_WAITFORONE as libc::c_long != 0 {
                flags |= libc::MSG_DONTWAIT as libc::c_long;
            }
            // As Linux: the time limit is looked at between messages only.
            expired = deadline.is_some_and(|d| Instant::now() >= d);
            Ok(r)
        })?;
        if let Some(d) = deadline {
            let left = d.saturating_duration_since(Instant::now());
            let t = libc::timespec { tv_sec: left.as_secs() as i64, tv_nsec: left.subsec_nanos() as i64 };
            g.write(timeout, &t)?;
        }
        Ok(got)
    }

    /// Runs `one` on each of `n` mmsghdr entries at `vec`, writing each result to its
    /// `msg_len`; stops at the first error. The number done, or the first error if none was.
    fn each_mmsg(&self, g: Guest, vec: u64, n: u64, mut one: impl FnMut(u64) -> SysResult<i64>) -> SysResult<i64> {
        let mut done = 0u64;
        while done < n {
            let entry = vec.wrapping_add(done * MMSGHDR_SIZE);
            let r = match one(entry) {
                Ok(r) => r,
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
            };
            if g.write(entry + 56, &(r as u32)).is_err() {
                break;
            }
            done += 1;
        }
        Ok(done as i64)
    }

    pub(super) fn setsockopt(&self, g: Guest, fd: u64, level: u64, name: u64, val: u64, len: u64) -> SysResult<i64> {
        if int(len) < 0 {
            return Err(Errno::EINVAL);
        }
        let h = self.socket_fd(fd)?;
        let (level, name) = (int(level) as i32, int(name) as i32);
        if !option_forwarded(level, name, true) {
            return Err(self.option_refused(&h, "setsockopt", level, name));
        }
        // SO_ATTACH_FILTER, SO_ATTACH_REUSEPORT_CBPF: the program's instructions, copied.
        let filter = match (level, name) {
            (libc::SOL_SOCKET, 26 | 51) => host_filter(&g, val, len)?,
            _ => None,
        };
        // A value the program cannot read goes to the host as NULL: it fails (EFAULT) where
        // Linux would, after the same length checks.
        let p = match &filter {
            Some((_, host)) => ptr(host.as_ptr()),
            None => g.range(val, len as u32 as u64).map_or(0, |p| ptr(p)),
        };
        // SAFETY: `p` is NULL, covers `len` checked bytes of guest memory, or is a 16-byte
        // sock_fprog of ours whose instructions `filter` holds.
        let set = unsafe {
            self.sys(
                libc::SYS_setsockopt,
                &[h.raw() as libc::c_long, level as libc::c_long, name as libc::c_long, p, int(len)],
            )
        };
        if level == libc::SOL_SOCKET && name == libc::SO_RCVLOWAT {
            // After the call: a value asked before it was asked at the count before this.
            RCVLOWAT_CHANGES.fetch_add(1, Ordering::AcqRel);
        }
        set
    }

    pub(super) fn getsockopt(&self, g: Guest, fd: u64, level: u64, name: u64, val: u64, ulen: u64) -> SysResult<i64> {
        let h = self.socket_fd(fd)?;
        let (level, name) = (int(level) as i32, int(name) as i32);
        if !option_forwarded(level, name, false) {
            return Err(self.option_refused(&h, "getsockopt", level, name));
        }
        let mut len = g.read::<i32>(ulen)?;
        let p = if len > 0 { g.range_mut(val, len as u64).map_or(0, |p| ptr(p)) } else { 0 };
        // SAFETY: `p` is NULL or covers `len` checked writable bytes of guest memory; `len` is ours.
        unsafe { self.host_getsockopt(&h, level, name, p, std::ptr::addr_of_mut!(len) as *mut libc::socklen_t)? };
        g.write(ulen, &len)?;
        Ok(0)
    }
}

/// A host msghdr over a name buffer, host iovecs and a control buffer (NULL when empty).
fn host_msghdr(
    name: *mut libc::c_void,
    namelen: libc::socklen_t,
    iov: &[libc::iovec],
    control: &mut [u8],
) -> libc::msghdr {
    let control_ptr = if control.is_empty() { std::ptr::null_mut() } else { control.as_mut_ptr() as *mut libc::c_void };
    libc::msghdr {
        msg_name: name,
        msg_namelen: namelen,
        msg_iov: iov.as_ptr() as *mut libc::iovec,
        msg_iovlen: iov.len(),
        msg_control: control_ptr,
        msg_controllen: control.len(),
        msg_flags: 0,
    }
}

/// The flags argument of a send or receive (`unsigned int`).
fn uint_flags(flags: u64) -> libc::c_long {
    flags as u32 as libc::c_long
}

/// Families the forwarder makes sockets of; others are the host's refusal, or EAFNOSUPPORT,
/// said once, where the host makes them (`not_forwarded`). AF_NETLINK
/// only for `socket` with NETLINK_ROUTE (`protocol` Some(0)): glibc's `getifaddrs` and
/// `if_nameindex` ask the host's interfaces that way; and NETLINK_SOCK_DIAG, through which
/// `ss` lists sockets (the program's are the host's); NETLINK_GENERIC (taskstats, ethtool,
/// nl80211 and other families a name resolves to), NETLINK_KOBJECT_UEVENT (device events, as
/// libudev's monitor reads them) and NETLINK_USERSOCK (a protocol of user programs' own).
/// Their messages carry no pointers, and changing routes, devices or sockets needs the
/// privileges it would need natively.
/// AF_VSOCK (a virtual machine's sockets to its hypervisor and other machines): its address
/// (`sockaddr_vm`, a context id and a port) carries no pointer either.
fn forwarded_family(domain: i32, protocol: Option<i32>) -> bool {
    [libc::AF_UNIX, libc::AF_INET, libc::AF_INET6, libc::AF_VSOCK].contains(&domain)
        || (domain == libc::AF_NETLINK
            && matches!(
                protocol,
                Some(
                    libc::NETLINK_ROUTE
                        | libc::NETLINK_SOCK_DIAG
                        | libc::NETLINK_GENERIC
                        | libc::NETLINK_KOBJECT_UEVENT
                        | libc::NETLINK_USERSOCK
                )
            ))
}

/// EAFNOSUPPORT for a family the forwarder does not make sockets of, said once.
fn not_forwarded(domain: i32) -> SysResult<i64> {
    report_once(format!(
        "socket family {domain} is not forwarded (only AF_UNIX, AF_INET, AF_INET6, AF_VSOCK, AF_NETLINK's ROUTE, SOCK_DIAG, GENERIC, KOBJECT_UEVENT and USERSOCK): EAFNOSUPPORT"
    ));
    Err(Errno::EAFNOSUPPORT)
}

/// Replaces the path of AF_UNIX address `a` with `path` (ENAMETOOLONG if it does not fit).
fn set_path(a: &mut SockAddr, path: &[u8]) -> SysResult<()> {
    if 2 + path.len() + 1 > SUN_LEN {
        return Err(Errno::ENAMETOOLONG);
    }
    a.buf[2..2 + path.len()].copy_from_slice(path);
    a.buf[2 + path.len()] = 0;
    a.len = 2 + path.len() + 1;
    Ok(())
}

/// This module's global locks, taken without waiting for a fork (`vm::fork`): false if
/// another thread holds one.
pub(crate) fn hold_for_fork(held: &mut crate::vm::fork::Held) -> bool {
    crate::vm::fork::try_hold(held, &REPORTED)
}
