//! Files whose host contents describe the host rather than the VM. glibc's
//! `sysconf(_SC_NPROCESSORS_ONLN/CONF)` and `get_nprocs` read these; the program must see the
//! VM's vCPUs, so opening them gives an in-memory file with the VM's answer.

use std::io::Write;
use std::os::fd::{FromRawFd, IntoRawFd};

/// The contents the program sees at `path`, if the path is one of the synthetic files.
pub fn contents(path: &[u8], cpus: u32) -> Option<Vec<u8>> {
    match path {
        b"/sys/devices/system/cpu/online"
        | b"/sys/devices/system/cpu/possible"
        | b"/sys/devices/system/cpu/present" => {
            Some(if cpus <= 1 { b"0\n".to_vec() } else { format!("0-{}\n", cpus - 1).into_bytes() })
        }
        _ => None,
    }
}

/// The program's own `/proc/self/<name>`: `cmdline` (its argv, NUL-separated), `comm` and
/// `status` (its name, as Linux shows the first 15 bytes of the last component of `path`, and the
/// process identities, see [`own_status`]), `maps` (one line: the program's memory, every page of which
/// is readable, writable and executable since protections are not enforced).
pub fn own_proc_file(name: &[u8], argv: &[Vec<u8>], path: &[u8], mem: (u64, u64)) -> Vec<u8> {
    let comm: Vec<u8> = {
        let base = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
        base.iter().copied().take(15).collect()
    };
    match name {
        b"cmdline" => argv.iter().flat_map(|a| a.iter().copied().chain([0])).collect(),
        b"comm" => [comm.as_slice(), b"\n"].concat(),
        b"status" => own_status(&comm),
        b"stat" => own_stat(&comm),
        b"maps" => format!("{:08x}-{:08x} rwxp 00000000 00:00 0 \n", mem.0, mem.1).into_bytes(),
        _ => Vec::new(),
    }
}

/// Lines of `hrt`'s own `/proc/self/status` that hold for the program too: its pid is `hrt`'s
/// (and so are its parent, process group, session and credentials). Memory, threads, signals,
/// capabilities and CPU affinity describe `hrt`, not the program, and are left out.
const STATUS_KEPT: &[&[u8]] = &[
    b"Tgid",
    b"Ngid",
    b"Pid",
    b"PPid",
    b"TracerPid",
    b"Uid",
    b"Gid",
    b"Groups",
    b"NStgid",
    b"NSpid",
    b"NSpgid",
    b"NSsid",
];

/// `/proc/self/status`: the program's name and state, then the [`STATUS_KEPT`] lines of `hrt`'s own
/// (`ps` reads its own pid and identities there).
fn own_status(comm: &[u8]) -> Vec<u8> {
    let mut s = b"Name:\t".to_vec();
    s.extend_from_slice(comm);
    // The program reading its status is running (`hrt`'s main thread may be waiting).
    s.extend_from_slice(b"\nState:\tR (running)\n");
    let host = std::fs::read("/proc/self/status").unwrap_or_default();
    for line in host.split_inclusive(|&b| b == b'\n') {
        let key = line.split(|&b| b == b':').next().unwrap_or_default();
        if STATUS_KEPT.contains(&key) {
            s.extend_from_slice(line);
        }
    }
    s
}

/// `/proc/self/stat`: the host's line for `hrt`'s process (the program's pid is `hrt`'s, so its
/// start time, which MPI libraries such as UCX compare with what peers read from
/// `/proc/<pid>/stat`, is `hrt`'s too), with the program's name.
fn own_stat(comm: &[u8]) -> Vec<u8> {
    let host = std::fs::read("/proc/self/stat").unwrap_or_default();
    // The name is between the first '(' and the last ')' (it may contain either).
    match (host.iter().position(|&b| b == b'('), host.iter().rposition(|&b| b == b')')) {
        (Some(open), Some(close)) if open < close => [&host[..=open], comm, &host[close..]].concat(),
        _ => host,
    }
}

/// A host descriptor reading `data` from its start (a sealed-size memfd).
pub fn open_memory_file(data: &[u8]) -> std::io::Result<i32> {
    // SAFETY: a plain memfd_create with a static NUL-terminated name.
    let fd = unsafe { libc::memfd_create(c"hrt-synthetic".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor we own.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.write_all(data)?;
    // SAFETY: rewinding our own descriptor.
    unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
    Ok(file.into_raw_fd())
}

#[cfg(test)]
mod tests {
    use super::contents;

    #[test]
    fn cpu_lists() {
        assert_eq!(contents(b"/sys/devices/system/cpu/online", 1).unwrap(), b"0\n");
        assert_eq!(contents(b"/sys/devices/system/cpu/possible", 4).unwrap(), b"0-3\n");
        assert!(contents(b"/etc/passwd", 4).is_none());
    }
}
