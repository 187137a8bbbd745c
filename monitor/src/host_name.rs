//! The program's name on the host: `hrt`'s process is the program's, so other processes
//! should see the program there (`ps`, `pgrep` and `pkill` by name, `top`, a parent reading
//! `/proc/<pid>/cmdline`), not `hrt run ...`. The process's name (`comm`) becomes the
//! program's at start, at each exec and at the program's PR_SET_NAME (nr::HOST_PRCTL), and in
//! a forked child; the command line becomes the program's argv, written over `hrt`'s own
//! argument area (which at start holds the program's arguments and more, so they fit; a
//! later exec's longer command line is cut), the rest of the area NUL bytes, which `ps` and
//! `pgrep` ignore. Both are set from any thread: /proc/self/comm names the process's main
//! thread, and the area is plain memory.

use std::sync::atomic::{AtomicU64, Ordering};

/// The program's name as it was last set, 16 bytes in two words (a forked `hrt` sets its own
/// from it; atomics, not a lock, since a fork may come while another thread holds one).
static COMM: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];
/// `hrt`'s argument area: start and length (0: not found).
static AREA: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// A process name (`comm`) from a path: its last component, at most 15 bytes, as Linux's
/// exec sets it.
pub fn comm_of(path: &[u8]) -> [u8; 16] {
    let base = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    let mut name = [0u8; 16];
    let n = base.len().min(15);
    name[..n].copy_from_slice(&base[..n]);
    name
}

/// The process name an exec of a descriptor gives (execveat with AT_EMPTY_PATH, fexecve): the
/// file's own name, as Linux 6.13 and later set it, not the `N` of `/dev/fd/N`. `target`: the
/// descriptor's link (`/memfd:name (deleted)`, a path).
pub fn comm_of_file(target: &[u8]) -> [u8; 16] {
    comm_of(target.strip_suffix(b" (deleted)").unwrap_or(target))
}

/// Names the process `name` and remembers it for forked children.
pub fn set_comm(name: [u8; 16]) {
    let mut name = name;
    name[15] = 0;
    for (word, bytes) in COMM.iter().zip(name.chunks_exact(8)) {
        word.store(u64::from_le_bytes(bytes.try_into().unwrap()), Ordering::Relaxed);
    }
    // The main thread names itself directly: /proc/self/comm is root's once the program has
    // changed its uid (the process is no longer dumpable), so a forked child of a program that
    // had dropped root kept the fork thread's name, `hrt-fork` (postgres's children under
    // `setpriv --reuid`). Another thread can only write the file.
    // SAFETY: gettid and getpid take no arguments.
    if unsafe { libc::gettid() == libc::getpid() } {
        // SAFETY: PR_SET_NAME reads a NUL-terminated name of at most 16 bytes.
        unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
        return;
    }
    let len = name.iter().position(|&b| b == 0).unwrap_or(15);
    // The process's main thread's name, whichever thread writes it.
    let _ = std::fs::write("/proc/self/comm", &name[..len]);
}

/// In a forked `hrt`: the program's name again (the fork thread's name came with it).
pub fn after_fork() {
    let mut name = [0u8; 16];
    for (word, bytes) in COMM.iter().zip(name.chunks_exact_mut(8)) {
        bytes.copy_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
    }
    if name[0] != 0 {
        set_comm(name);
    }
}

/// At start: the program's name and command line (`argv`).
pub fn become_program(comm: [u8; 16], argv: &[Vec<u8>]) {
    if let Some((start, end)) = own_arg_area() {
        AREA[0].store(start, Ordering::Relaxed);
        AREA[1].store(end - start, Ordering::Relaxed);
    }
    set_comm(comm);
    set_cmdline(argv);
}

/// The command line other processes read becomes `argv` (cut to the area, NUL-terminated).
pub fn set_cmdline(argv: &[Vec<u8>]) {
    let line: Vec<u8> = argv.iter().flat_map(|a| a.iter().copied().chain([0])).collect();
    set_cmdline_bytes(&line);
}

/// The command line other processes read becomes `line` as it is (NUL-separated words, or a
/// process title: `forward::own_title`), cut to the area and NUL-terminated.
pub fn set_cmdline_bytes(line: &[u8]) {
    let (start, len) = (AREA[0].load(Ordering::Relaxed), AREA[1].load(Ordering::Relaxed) as usize);
    if start == 0 || len == 0 {
        return;
    }
    let mut line = line[..line.len().min(len)].to_vec();
    line.resize(len, 0);
    line[len - 1] = 0;
    // SAFETY: [start, start + len) is this process's argument area (from its own
    // /proc/self/stat), mapped and writable for its whole life; `hrt` has parsed its
    // arguments already and keeps no pointer into it (Rust's `env::args` would read it: only
    // `hrt bench` does, which does not come here).
    unsafe { std::ptr::copy_nonoverlapping(line.as_ptr(), start as *mut u8, len) };
}

/// This process's argument area, from fields 48 and 49 of /proc/self/stat.
fn own_arg_area() -> Option<(u64, u64)> {
    let stat = std::fs::read("/proc/self/stat").ok()?;
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    // Field 3 (state) is the first after the command; arg_start is field 48.
    let mut fields = rest.split_ascii_whitespace().skip(48 - 3);
    let start: u64 = fields.next()?.parse().ok()?;
    let end: u64 = fields.next()?.parse().ok()?;
    (start != 0 && end > start).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_last_component_cut_to_15_bytes() {
        assert_eq!(&comm_of(b"/usr/bin/python3")[..8], b"python3\0");
        assert_eq!(&comm_of(b"a-very-long-program-name")[..16], b"a-very-long-pro\0");
        assert_eq!(&comm_of(b"prog")[..5], b"prog\0");
    }

    #[test]
    fn the_argument_area_is_found() {
        let (start, end) = own_arg_area().expect("arg_start and arg_end");
        assert!(end > start);
    }
}
