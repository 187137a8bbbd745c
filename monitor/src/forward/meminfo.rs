//! `/proc/meminfo` as the program sees it: the program's memory in the VM, not the host's.
//!
//! The kernel publishes the size of the program's memory and what of it is free in the channel
//! header (`ChannelHeader::program_memory`), refreshed before each forwarded open; `sysinfo`
//! (glibc's `sysconf(_SC_PHYS_PAGES)`) answers the same numbers in the kernel. The host's file
//! gives the layout (its lines, in its order): the memory lines become the VM's, the host
//! kernel's properties (page and vmalloc sizes) stay, and everything else (page cache, swap,
//! slab, huge-page pools) is 0, as the VM has none of it. The VM's one memory node's
//! `/sys/devices/system/node/node0/meminfo` (numactl, hwloc) is made the same way: its lines
//! are the host's node 0's, each after a `Node 0 ` prefix.

use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

static PROGRAM_MEMORY: AtomicPtr<[AtomicU64; 2]> = AtomicPtr::new(std::ptr::null_mut());

/// The channel's `program_memory` words (registration of the channel).
pub fn attach(words: &'static [AtomicU64; 2]) {
    PROGRAM_MEMORY.store(words as *const [AtomicU64; 2] as *mut [AtomicU64; 2], Ordering::Release);
}

/// (total, free) bytes of the program's memory, once the kernel has published them.
fn published() -> Option<(u64, u64)> {
    let p = PROGRAM_MEMORY.load(Ordering::Acquire);
    if p.is_null() {
        return None;
    }
    // SAFETY: `attach` takes words that live as long as the process (guest RAM stays mapped).
    let words = unsafe { &*p };
    let total = words[0].load(Ordering::Relaxed);
    // A number from the guest: shown only, and kept within the total.
    (total != 0).then(|| (total, words[1].load(Ordering::Relaxed).min(total)))
}

/// The program's `/proc/meminfo` made from the host's, if the kernel has published its numbers.
pub fn contents(host: &[u8]) -> Option<Vec<u8>> {
    published().map(|(total, free)| rewrite(host, total, free, b""))
}

/// The VM's `node0/meminfo` made from the host's node 0's, once the kernel has published its
/// numbers.
pub fn node_contents(host: &[u8]) -> Option<Vec<u8>> {
    published().map(|(total, free)| rewrite(host, total, free, b"Node 0 "))
}

/// `host`'s lines (each after `prefix`) with the amounts of memory the program's.
fn rewrite(host: &[u8], total: u64, free: u64, prefix: &[u8]) -> Vec<u8> {
    let (total_kb, free_kb) = (total / 1024, free / 1024);
    let used_kb = total_kb - free_kb;
    let mut out = Vec::with_capacity(host.len());
    for line in host.split_inclusive(|&b| b == b'\n') {
        let colon = line.iter().position(|&b| b == b':').filter(|&c| line.starts_with(prefix) && c >= prefix.len());
        let Some(colon) = colon else {
            out.extend_from_slice(line);
            continue;
        };
        let name = &line[prefix.len()..colon];
        let value = match name {
            b"MemTotal" | b"CommitLimit" => Some(total_kb),
            b"MemFree" | b"MemAvailable" => Some(free_kb),
            b"Active" | b"Active(anon)" | b"AnonPages" | b"Committed_AS" | b"MemUsed" => Some(used_kb),
            // Properties of the host's kernel, not amounts.
            b"Hugepagesize" | b"VmallocTotal" => None,
            _ => Some(0),
        };
        match value {
            None => out.extend_from_slice(line),
            Some(v) => {
                let kb = line.ends_with(b" kB\n") || line.ends_with(b" kB");
                let field = format!("{}:", String::from_utf8_lossy(name));
                let text = if kb { format!("{field:<15} {v:>8} kB\n") } else { format!("{field:<15} {v:>8}\n") };
                out.extend_from_slice(prefix);
                out.extend_from_slice(text.as_bytes());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    const HOST: &[u8] = b"MemTotal:       24683816 kB\nMemFree:        22698348 kB\nMemAvailable:   24180540 kB\n\
Buffers:          112336 kB\nCached:          1700488 kB\nSwapTotal:             0 kB\nActive(anon):     100 kB\n\
AnonPages:        400 kB\nHugePages_Total:       0\nHugepagesize:       2048 kB\nVmallocTotal:   34359738367 kB\n";

    fn value(text: &str, name: &str) -> String {
        let line = text.lines().find(|l| l.starts_with(&format!("{name}:"))).unwrap();
        line[name.len() + 1..].trim().to_string()
    }

    /// Memory lines are the program's (2 GiB, 1 GiB free), host-only amounts 0, the host
    /// kernel's sizes as they were; every host line kept, in order.
    #[test]
    fn lines_describe_the_programs_memory() {
        let out = String::from_utf8(rewrite(HOST, 2 << 30, 1 << 30, b"")).unwrap();
        for (name, want) in [
            ("MemTotal", "2097152 kB"),
            ("MemFree", "1048576 kB"),
            ("MemAvailable", "1048576 kB"),
            ("AnonPages", "1048576 kB"),
            ("Active(anon)", "1048576 kB"),
            ("Buffers", "0 kB"),
            ("Cached", "0 kB"),
            ("HugePages_Total", "0"),
            ("Hugepagesize", "2048 kB"),
            ("VmallocTotal", "34359738367 kB"),
        ] {
            assert_eq!(value(&out, name), want, "{name}");
        }
        assert_eq!(out.lines().count(), 11, "every host line, in order");
    }

    /// The node file: the same amounts after each line's `Node 0 ` prefix, which stays.
    #[test]
    fn node_lines_describe_the_programs_memory() {
        let host = b"Node 0 MemTotal:       11626272 kB\nNode 0 MemFree:        10556460 kB\n\
Node 0 MemUsed:         1069812 kB\nNode 0 FilePages:        762156 kB\nNode 0 HugePages_Total:     0\n";
        let out = String::from_utf8(rewrite(host, 2 << 30, 1 << 30, b"Node 0 ")).unwrap();
        assert_eq!(
            out,
            "Node 0 MemTotal:        2097152 kB\nNode 0 MemFree:         1048576 kB\n\
Node 0 MemUsed:         1048576 kB\nNode 0 FilePages:             0 kB\nNode 0 HugePages_Total:        0\n"
        );
    }
}
