//! Listing the program's own descriptor directories, `/proc/self/fd` (also `/dev/fd`) and
//! `/proc/self/fdinfo`: the monitor's are `hrt`'s descriptors (KVM's among them), so their
//! names come from the program's descriptor table instead.
//!
//! The program's descriptor is the monitor's own directory, opened for it (so fstat and fchdir
//! behave as on Linux), marked with its VM path; its getdents64 is answered here
//! (cpu_dirs::getdents_of keeps the position as the host descriptor's offset). Nothing is
//! looked up through it on the host: a path relative to it (`openat(dir, "3")`) is resolved
//! from its VM path, as `/proc/self/fd/3`, which names the program's descriptor 3 (paths.rs),
//! and everything else in the monitor's /proc directories stays refused (walk.rs).

use super::cpu_dirs::Entry;

/// The VM paths of the listed directories: (path, entries are fdinfo files).
const DIRS: [(&[u8], bool); 2] = [(b"/proc/self/fd", false), (b"/proc/self/fdinfo", true)];

/// The VM path of the descriptor directory (`info`: fdinfo's).
pub fn path(info: bool) -> &'static [u8] {
    DIRS.iter().find(|d| d.1 == info).map(|d| d.0).expect("both directories are listed")
}

/// Whether `vm_path` is one of the listed directories, and then whether it is fdinfo's.
pub fn listed(vm_path: &[u8]) -> Option<bool> {
    let p = vm_path.strip_suffix(b"/").unwrap_or(vm_path);
    DIRS.iter().find(|d| d.0 == p).map(|d| d.1)
}

/// The entries with their positions: "." (0), ".." (1), then one per open descriptor, in order,
/// at its number + 2 as on Linux (so a program that closes descriptors while it reads the
/// directory in parts, as CPython's subprocess may, sees every one): a symbolic link (fd) or a
/// regular file (fdinfo) named by its number.
pub fn entries(numbers: impl Iterator<Item = usize>, info: bool) -> Vec<(u64, Entry)> {
    let dir = |name: &[u8], ino| Entry { ino, kind: libc::DT_DIR, name: name.to_vec() };
    let kind = if info { libc::DT_REG } else { libc::DT_LNK };
    let mut out = vec![(0, dir(b".", 1)), (1, dir(b"..", 2))];
    out.extend(numbers.map(|n| (n as u64 + 2, Entry { ino: 3 + n as u64, kind, name: n.to_string().into_bytes() })));
    out
}

/// The host's fdinfo text `host` for one of the program's descriptors, with the `flags:` line
/// as the program's: without the flags its open did not ask for (`hidden`), with O_CLOEXEC as
/// the program's descriptor has it (every host descriptor of the monitor has it).
pub fn program_fdinfo(host: &[u8], hidden: i32, cloexec: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(host.len());
    for line in host.split_inclusive(|&b| b == b'\n') {
        let flags = line
            .strip_prefix(b"flags:")
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(|v| i64::from_str_radix(v.trim(), 8).ok());
        match flags {
            Some(f) => {
                let f =
                    f & !(hidden as i64 | libc::O_CLOEXEC as i64) | if cloexec { libc::O_CLOEXEC as i64 } else { 0 };
                out.extend_from_slice(format!("flags:\t0{f:o}\n").as_bytes());
            }
            None => out.extend_from_slice(line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fdinfo_flags_are_the_programs() {
        let host = b"pos:\t0\nflags:\t02500000\nmnt_id:\t25\n";
        let nofollow = libc::O_NOFOLLOW;
        assert_eq!(program_fdinfo(host, nofollow, false), b"pos:\t0\nflags:\t0100000\nmnt_id:\t25\n");
        assert_eq!(program_fdinfo(host, 0, true), b"pos:\t0\nflags:\t02500000\nmnt_id:\t25\n");
        assert_eq!(program_fdinfo(b"flags:\t02\n", 0, false), b"flags:\t02\n");
    }

    #[test]
    fn lists_dot_dotdot_then_the_numbers() {
        let e = entries([0, 1, 7].into_iter(), false);
        let names: Vec<&[u8]> = e.iter().map(|e| e.1.name.as_slice()).collect();
        assert_eq!(names, [&b"."[..], b"..", b"0", b"1", b"7"]);
        assert_eq!(e.iter().map(|e| e.0).collect::<Vec<_>>(), [0, 1, 2, 3, 9]);
        assert_eq!(e[4].1.kind, libc::DT_LNK);
        assert_eq!(entries([2].into_iter(), true)[2].1.kind, libc::DT_REG);
        assert_eq!(listed(b"/proc/self/fd/"), Some(false));
        assert_eq!(listed(b"/proc/self/fdinfo"), Some(true));
        assert_eq!(listed(b"/proc/self/fd/3"), None);
        assert_eq!(path(true), b"/proc/self/fdinfo");
    }
}
