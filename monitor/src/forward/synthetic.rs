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
