//! Sockets forwarded to the host (tests/programs/hostile/calls_sockets.c): each case compared
//! with the program's native run, with one vCPU and with two; a server under `hrt run` talking
//! to a native peer; AF_UNIX names in the monitor's own /proc refused.

mod common;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;

use common::hostile::{
    assert_same_on_1_and_2_cpus, build, hrt, hrt_cmd, native, passes_natively_and_same_on_1_and_2_cpus,
};

/// TCP echo between two threads, UDP, sendmmsg/recvmmsg, SCM_RIGHTS passing a pipe and a file
/// (MSG_CMSG_CLOEXEC, a control buffer too small), AF_UNIX names relative to the working
/// directory and abstract ones, socket options, EFAULT/EINVAL/EBADF/ENOTSOCK in Linux's order,
/// accept interrupted by a signal (EINTR; restarted under SA_RESTART), epoll over several
/// connections, readv/writev/poll on sockets, SIGPIPE from send (EPIPE when ignored or with
/// MSG_NOSIGNAL, death by it by default: 141).
#[test]
fn sockets_behave_as_on_linux() {
    let prog = build("calls_sockets", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 141, "natively: {linux:?}");
    assert_same_on_1_and_2_cpus("calls_sockets", &prog, &[], &linux);
}

/// The program's server (under hrt) and a native client: the port it prints is reachable from
/// the host, and the answer comes back.
#[test]
fn a_server_under_hrt_serves_a_native_client() {
    let prog = build("calls_sockets", &[]);
    for cpus in ["1", "2"] {
        let mut child = hrt_cmd()
            .args(["run", "--cpus", cpus, "--"])
            .arg(&prog)
            .arg("server")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting hrt");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let port: u16 = line.trim().strip_prefix("port ").and_then(|p| p.parse().ok()).unwrap_or_else(|| {
            let _ = child.kill();
            panic!("no port line from the server: {line:?}")
        });
        let mut peer = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connecting to the server under hrt");
        peer.write_all(b"hello from the host\n").unwrap();
        let mut answer = String::new();
        peer.read_to_string(&mut answer).unwrap();
        assert_eq!(answer, "HELLO FROM THE HOST\n");
        let mut rest = String::new();
        out.read_to_string(&mut rest).unwrap();
        let status = child.wait().unwrap();
        assert!(status.success(), "--cpus {cpus}: {status}, stdout {rest}");
        assert_eq!(rest, "served 20 bytes\n");
    }
}

/// connect, sendto and bind with AF_UNIX names in the monitor's own /proc: EACCES (13), as
/// for open; natively these name the program's own entries and fail otherwise. A bind there,
/// which creates a name no process directory has, is ENOENT (2), as natively.
#[test]
fn unix_names_in_the_monitor_proc_are_refused() {
    let prog = build("calls_sockets", &[]);
    let got = hrt(&["--cpus", "1"], &prog, &["proc"]);
    assert_eq!(got.code(), 0, "{got:?}");
    let lines: Vec<&str> = got.stdout.lines().collect();
    assert_eq!(lines.len(), 7, "{}", got.stdout);
    for l in lines {
        let want = if l.starts_with("bind ") { "-1 errno 2" } else { "-1 errno 13" };
        assert!(l.ends_with(want), "not refused: {l}\n{}", got.stdout);
    }
    let linux = native(&prog, &["proc"]);
    assert!(linux.stdout.contains("bind /proc/self/sock: -1 errno 2"), "natively: {linux:?}");
}

/// Socket calls are tried without waiting first (MSG_DONTWAIT) and handed to a waiting thread
/// only if the host says EAGAIN: MSG_WAITALL, SO_RCVLOWAT, a stream send or write larger than
/// the socket's buffer (its first part sent at once, the rest by a worker: all bytes arrive in
/// order; a signal that interrupts it answers the part sent) and a datagram receive with
/// nothing queued still wait as on Linux, and queued data comes back at once
/// (tests/programs/hostile/socket_waits.c).
#[test]
fn socket_calls_that_must_wait_still_wait() {
    waits_as_natively("socket_waits");
}

/// Program `name` (threaded) exits 0 natively and prints the same under `hrt run`.
fn waits_as_natively(name: &str) {
    let prog = build(name, &["-pthread"]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert_same_on_1_and_2_cpus(name, &prog, &[], &linux);
}

/// poll, ppoll, select, pselect and epoll waits are made with a zero timeout first, and reads
/// of an eventfd or a timerfd with RWF_NOWAIT, and handed to a waiting thread only if nothing
/// is ready: a wait with nothing ready still waits (for a peer, or its timeout) with the sets
/// the program gave (the try leaves them alone), what is ready comes back at once with the
/// time left as Linux leaves it, an edge-triggered event is reported once, a non-blocking
/// eventfd says EAGAIN (tests/programs/hostile/poll_waits.c).
#[test]
fn poll_and_epoll_waits_still_wait() {
    waits_as_natively("poll_waits");
}

/// Multipath TCP's MPTCP_INFO on both ends of a loopback connection, as Go's net
/// TestMultiPathTCP asks it (tests/programs/hostile/mptcp_info.c): the level (SOL_MPTCP) was not
/// forwarded (ENOPROTOOPT), which Go reads as a connection that fell back to TCP.
#[test]
fn mptcp_info_is_the_hosts() {
    passes_natively_and_same_on_1_and_2_cpus("mptcp_info", Some("mptcp: done"));
}

/// A network interface's settings (SIOCSIF*) as LTP's sockioctl01 checks them
/// (tests/programs/hostile/interface_writes.c): EFAULT for an unreadable ifreq, EPERM without
/// CAP_NET_ADMIN, as Linux answers before the change (hrt never makes it); they were ENOTTY.
#[test]
fn interface_writes_are_refused_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("interface_writes", Some("interface writes: done"));
}

/// AF_VSOCK sockets and /dev/vsock's context id, as Python's test_socket uses them
/// (tests/programs/hostile/vsock_socket.c): made, bound, listening and named as natively (or
/// refused the same way on a host without the device). The family was EAFNOSUPPORT and the
/// ioctl ENOTTY.
#[test]
fn vsock_sockets_are_the_hosts() {
    passes_natively_and_same_on_1_and_2_cpus("vsock_socket", Some("vsock: done"));
}

/// socket() of a family hrt does not forward answers what the host answers where the host
/// cannot make it either (tests/programs/hostile/socket_families.c: AF_VSOCK without its
/// device was EAFNOSUPPORT where Linux says ENODEV), and EAFNOSUPPORT where the host could.
/// AF_VSOCK (40) is forwarded since stop 85: as natively, made or refused.
#[test]
fn sockets_of_families_not_forwarded_fail_as_on_the_host() {
    let prog = build("socket_families", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    let got = hrt(&["--cpus", "1"], &prog, &[]);
    assert_eq!(got.code(), 0, "hrt: {got:?}");
    let (ours, theirs): (Vec<&str>, Vec<&str>) = (got.stdout.lines().collect(), linux.stdout.lines().collect());
    assert_eq!(ours.len(), theirs.len(), "hrt:\n{}\nnatively:\n{}", got.stdout, linux.stdout);
    for (o, n) in ours.iter().zip(&theirs) {
        if n.ends_with(": made") && !n.starts_with("family 40 ") {
            assert!(o.ends_with("Address family not supported by protocol"), "{o} (natively {n})");
        } else {
            assert_eq!(o, n);
        }
    }
}

/// AF_UNIX calls in Linux's order (tests/programs/hostile/unix_socket_orders.c): a missing
/// peer pathname no longer wins over the socket's own answers (a connected sequenced-packet
/// socket sends), a descriptor the program lacks in SCM_RIGHTS is EBADF where Linux says so,
/// recvmmsg answers a pending error first, and a received epoll instance can be waited on.
#[test]
fn unix_socket_calls_answer_in_linuxs_order() {
    passes_natively_and_same_on_1_and_2_cpus("unix_socket_orders", Some("unix socket orders: done"));
}

/// TCP's MSG_TRUNC with a NULL buffer discards the bytes; SIOCOUTQNSD, SIOCGIFMETRIC and
/// SIOCGIFMAP answer, SIOCGSKNS gives a descriptor (all were EFAULT or ENOTTY).
#[test]
fn tcp_discards_and_socket_requests_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus(
        "inet_socket_edges",
        Some("TCP recv(NULL, 3, MSG_TRUNC): 3 (discarded), then recv: def"),
    );
}
