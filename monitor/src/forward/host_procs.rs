//! The host's process table as `kill` needs it (forward/procs.rs): which processes descend
//! from `hrt` and which are in a process group, read from the host's `/proc/<pid>/stat`.
//!
//! `hrt` sends a program's signal only within the program's own tree of processes: the `hrt
//! run` that started it (the root, `note_root`), that process's descendants (forked children,
//! which are `hrt` processes too, and the host programs they started) and the groups one of
//! them is in. So a forked child may signal its parent and a fork server's workers may be
//! signalled by the process above it, and nothing outside is touched. A group that holds the
//! calling `hrt` itself is signalled member by member, skipping it: the program's kernel
//! delivers its own copy before `kill` returns, as Linux does, and a host copy would arrive a
//! second time, later.
//!
//! What is read is a snapshot: a process that joins a group or is born while the table is
//! read may be missed, as `pkill` may miss it.

use std::fs;
use std::sync::atomic::{AtomicI32, Ordering};

/// The `hrt run` process at the top of the program's tree (0: not noted; then each `hrt` is
/// the root of its own).
static ROOT: AtomicI32 = AtomicI32::new(0);

/// Notes the calling process as the program tree's root: called by `hrt run` before the
/// program can fork (a forked child keeps its parent's root).
pub fn note_root() {
    ROOT.store(std::process::id() as i32, Ordering::Relaxed);
}

/// The program tree's root (see `note_root`).
pub fn root() -> i32 {
    match ROOT.load(Ordering::Relaxed) {
        0 => std::process::id() as i32,
        r => r,
    }
}

/// Whether the program may signal host processes outside its own children: as natively, any
/// the host lets `hrt` signal (the host applies Linux's permission rule; `kill -HUP` of a
/// daemon, `nginx -s reload`, `pg_ctl reload`) where the host's /proc can be read; under
/// `--sandbox`, where it cannot, none.
pub fn signals_reach_outside() -> bool {
    fs::read_dir("/proc").is_ok()
}

/// Processes read at most per table walk (a host with more gets the first this many).
const MAX_PROCESSES: usize = 1 << 16;

/// A host process's parent and process group, or None if it is gone (or not readable).
pub fn parent_and_group(pid: i32) -> Option<(i32, i32)> {
    let stat = fs::read(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&stat)
}

/// The parent and group fields of a `/proc/<pid>/stat` line: "pid (comm) state ppid pgrp ...",
/// where the command may itself hold spaces and parentheses.
fn parse_stat(stat: &[u8]) -> Option<(i32, i32)> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    let mut fields = rest.split_ascii_whitespace().skip(1);
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((ppid, pgrp))
}

/// The process a `/proc/<pid>` directory open as host descriptor `fd` describes: the first
/// field of its `stat`. None unless that number names the very directory in `hrt`'s own /proc,
/// which the tree checks read (a procfs of another PID namespace numbers processes otherwise).
pub fn pid_of_proc_dir(fd: i32) -> Option<i32> {
    use std::os::unix::fs::MetadataExt;
    let dir = format!("/proc/self/fd/{fd}");
    let stat = fs::read(format!("{dir}/stat")).ok()?;
    let end = stat.iter().position(|&b| b == b' ')?;
    let pid: i32 = std::str::from_utf8(&stat[..end]).ok()?.parse().ok()?;
    let (a, b) = (fs::metadata(&dir).ok()?, fs::metadata(format!("/proc/{pid}")).ok()?);
    (a.dev() == b.dev() && a.ino() == b.ino()).then_some(pid)
}

/// Every host process as (pid, parent, group); None where the host's /proc cannot be read
/// (`--sandbox`).
fn read_table() -> Option<Vec<(i32, i32, i32)>> {
    let dir = fs::read_dir("/proc").ok()?;
    let table: Vec<_> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .take(MAX_PROCESSES)
        .filter_map(|pid| parent_and_group(pid).map(|(ppid, pgrp)| (pid, ppid, pgrp)))
        .collect();
    // This process is always there to read.
    (!table.is_empty()).then_some(table)
}

fn table() -> Vec<(i32, i32, i32)> {
    read_table().unwrap_or_default()
}

/// `ancestor`'s descendants, from one read of the table.
pub fn descendants(ancestor: i32) -> Vec<i32> {
    descendants_in(&table(), ancestor)
}

fn descendants_in(table: &[(i32, i32, i32)], ancestor: i32) -> Vec<i32> {
    let mut found = vec![ancestor];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        let children: Vec<i32> =
            table.iter().filter(|&&(pid, ppid, _)| ppid == parent && !found.contains(&pid)).map(|t| t.0).collect();
        found.extend(children);
        i += 1;
    }
    found.remove(0);
    found
}

/// The members of host process group `pgid`; None if the host's /proc cannot be read.
pub fn group_members(pgid: i32) -> Option<Vec<i32>> {
    Some(read_table()?.into_iter().filter(|&(_, _, g)| g == pgid).map(|t| t.0).collect())
}

/// The program's tree: its root and the root's descendants.
pub fn program_tree() -> Vec<i32> {
    let root = root();
    let mut tree = descendants(root);
    tree.push(root);
    tree
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_with_odd_command_names() {
        assert_eq!(parse_stat(b"42 (a b) c) S 7 9 9 0 -1"), Some((7, 9)));
        assert_eq!(parse_stat(b"1 (init) S 0 1 1"), Some((0, 1)));
        assert_eq!(parse_stat(b"garbage"), None);
    }

    #[test]
    fn descendants_follow_every_generation() {
        let t = [(10, 1, 10), (11, 10, 10), (12, 11, 12), (13, 1, 13), (14, 12, 12)];
        let mut d = descendants_in(&t, 10);
        d.sort();
        assert_eq!(d, vec![11, 12, 14]);
        assert!(descendants_in(&t, 13).is_empty());
    }

    #[test]
    fn this_process_reads_its_own_parent_and_group() {
        let me = std::process::id() as i32;
        // SAFETY: getppid and getpgid(0) have no arguments that point anywhere.
        let (ppid, pgrp) = unsafe { (libc::getppid(), libc::getpgid(0)) };
        assert_eq!(parent_and_group(me), Some((ppid, pgrp)));
        assert!(group_members(pgrp).unwrap().contains(&me));
    }
}
