//! Files whose host contents describe the host rather than the VM. glibc's
//! `sysconf(_SC_NPROCESSORS_ONLN/CONF)` and `get_nprocs` read the CPU lists; libgomp reads the
//! per-CPU topology, cache and node files for `OMP_PLACES=cores|sockets|ll_caches|numa_domains`.
//! The program must see the VM's vCPUs, so opening them gives an in-memory file with the VM's
//! answer, and a CPU directory of a vCPU the VM does not have is absent. The VM's topology is
//! the one the kernel's OpenMP runtime uses (kernel/src/omp/places.rs): every vCPU is a core
//! with one hardware thread and its own level-1 and level-2 caches, and all share one socket,
//! one last-level cache and one memory node (also with `--numa`, whose zones are emulated).
//! `/proc/cpuinfo` and `/proc/stat` list the vCPUs (proc_cpus.rs), and so do the listings of
//! the CPU and node directories and of node 0's directory (cpu_dirs.rs). The cgroup cpusets
//! (`cpuset.cpus`, `cpuset.mems` and their effective forms, v1 and v2) are the VM's CPUs and
//! node too: hwloc, and so Open MPI and lstopo, shows only the CPUs of the caller's cpuset.
//! A PCI device's `local_cpus` and `local_cpulist` name every vCPU.

use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;

use super::cpu_dirs::Listing;
use super::proc_cpus;

const CPU_DIR: &[u8] = b"/sys/devices/system/cpu/";
const NODE_DIR: &[u8] = b"/sys/devices/system/node/";
const NODE0_DIR: &[u8] = b"/sys/devices/system/node/node0/";
const CGROUP_DIR: &[u8] = b"/sys/fs/cgroup/";

/// The contents the program sees at `path`, if the path is one of the synthetic files.
pub fn contents(path: &[u8], cpus: u32) -> Option<Vec<u8>> {
    let all = cpu_list(0, cpus);
    // Made from the host's file; if it cannot be read (`--sandbox`), opening it fails as it does.
    match path {
        b"/proc/cpuinfo" => return std::fs::read("/proc/cpuinfo").ok().map(|h| proc_cpus::cpuinfo(&h, cpus)),
        b"/proc/stat" => return std::fs::read("/proc/stat").ok().map(|h| proc_cpus::stat(&h, cpus)),
        b"/proc/meminfo" => return std::fs::read("/proc/meminfo").ok().and_then(|h| super::meminfo::contents(&h)),
        _ => {}
    }
    if let Some(local) = device_cpus(path, cpus) {
        return Some(local);
    }
    if let Some(name) = path.strip_prefix(CPU_DIR) {
        return match name {
            b"online" | b"possible" | b"present" | b"enabled" => Some(all),
            b"offline" => Some(b"\n".to_vec()),
            // The largest CPU number the kernel could have (Linux's NR_CPUS - 1).
            b"kernel_max" => Some(format!("{}\n", hrt_abi::MAX_CPUS - 1).into_bytes()),
            _ => {
                let (cpu, rest) = numbered(name, b"cpu")?;
                (cpu < cpus).then(|| cpu_file(cpu, cpus, rest)).flatten()
            }
        };
    }
    if let Some(name) = path.strip_prefix(CGROUP_DIR) {
        return match name.rsplit(|&b| b == b'/').next()? {
            b"cpuset.cpus" | b"cpuset.effective_cpus" | b"cpuset.cpus.effective" => Some(all),
            b"cpuset.mems" | b"cpuset.effective_mems" | b"cpuset.mems.effective" => Some(b"0\n".to_vec()),
            _ => None,
        };
    }
    match path.strip_prefix(NODE_DIR)? {
        b"online" | b"possible" | b"has_cpu" | b"has_memory" | b"has_normal_memory" => Some(b"0\n".to_vec()),
        b"node0/cpulist" => Some(all),
        b"node0/cpumap" => Some(cpu_mask(0, cpus, cpus)),
        b"node0/meminfo" => {
            std::fs::read("/sys/devices/system/node/node0/meminfo").ok().and_then(|h| super::meminfo::node_contents(&h))
        }
        _ => None,
    }
}

/// A device's CPUs (`local_cpus`, `local_cpulist` of a PCI device, reached through
/// /sys/bus/pci/devices, /sys/class/*/*/device or /sys/devices): the host's CPUs near the
/// device; in the VM every vCPU is, as for a device of the VM's one node. hwloc (lstopo, Open
/// MPI) otherwise hung the host bridge under the vCPUs the host numbers as its own.
fn device_cpus(path: &[u8], cpus: u32) -> Option<Vec<u8>> {
    if !path.starts_with(b"/sys/") {
        return None;
    }
    let file = match path.rsplit(|&b| b == b'/').next()? {
        b"local_cpus" => cpu_mask(0, cpus, cpus),
        b"local_cpulist" => cpu_list(0, cpus),
        _ => return None,
    };
    // Only where the host has the file: elsewhere opening it fails as it does.
    std::path::Path::new(std::ffi::OsStr::from_bytes(path)).exists().then_some(file)
}

/// Where a path through node 0's link to a vCPU (`node0/cpu<K>`, `../../cpu/cpu<K>`) leads,
/// for a vCPU the VM has: the CPU directory's `cpu<K>` and the rest of the path, when the link
/// is followed (a path below it, or a call that follows the last link). `normalized`: absolute,
/// without `.`, `..` or repeated slashes.
pub fn through_node_link(normalized: &[u8], cpus: u32, follow: bool) -> Option<Vec<u8>> {
    let (cpu, rest) = numbered(normalized.strip_prefix(NODE0_DIR)?, b"cpu")?;
    if cpu >= cpus || (rest.is_empty() && !follow) {
        return None;
    }
    let mut out = [CPU_DIR, format!("cpu{cpu}").as_bytes()].concat();
    if !rest.is_empty() {
        out.push(b'/');
        out.extend_from_slice(rest);
    }
    Some(out)
}

/// For node 0's link to a vCPU the host does not have (`node0/cpu<K>` itself, not followed):
/// the host's `node0/cpu0` link, which stands in for it, and the text the link reads.
pub fn node_link_stand_in(normalized: &[u8], cpus: u32) -> Option<(Vec<u8>, Vec<u8>)> {
    let (cpu, rest) = numbered(normalized.strip_prefix(NODE0_DIR)?, b"cpu")?;
    if cpu == 0 || cpu >= cpus || !rest.is_empty() || host_has(normalized) {
        return None;
    }
    Some(([NODE0_DIR, b"cpu0"].concat(), format!("../../cpu/cpu{cpu}").into_bytes()))
}

/// Whether `path` lies in the directory of a vCPU or memory node the VM does not have (it is
/// absent, whatever the host has there).
pub fn beyond_vm(path: &[u8], cpus: u32) -> bool {
    let numbered_past = |dir: &[u8], prefix: &[u8], count: u32| {
        path.strip_prefix(dir).and_then(|name| numbered(name, prefix)).is_some_and(|(n, _)| n >= count)
    };
    numbered_past(CPU_DIR, b"cpu", cpus)
        || numbered_past(NODE_DIR, b"node", 1)
        || numbered_past(NODE0_DIR, b"cpu", cpus)
}

/// Whether `path` (normalized) is the CPU, node or cgroup directory or lies below one.
pub fn in_vm_tree(path: &[u8]) -> bool {
    [CPU_DIR, NODE_DIR, CGROUP_DIR].iter().any(|dir| path.starts_with(dir) || path == &dir[..dir.len() - 1])
}

/// How the entries of the directory at `path` are listed, if the VM answers them: the CPU
/// directory and node 0's list the vCPUs, the node directory the VM's one node.
pub fn listing(path: &[u8], cpus: u32) -> Option<Listing> {
    match path.strip_suffix(b"/").unwrap_or(path) {
        p if p == &CPU_DIR[..CPU_DIR.len() - 1] => Some(Listing { prefix: b"cpu", count: cpus }),
        p if p == &NODE0_DIR[..NODE0_DIR.len() - 1] => Some(Listing { prefix: b"cpu", count: cpus }),
        p if p == &NODE_DIR[..NODE_DIR.len() - 1] => Some(Listing { prefix: b"node", count: 1 }),
        _ => None,
    }
}

/// `path` (absolute, as written) with each directory of a vCPU the host does not have
/// replaced by the host's `cpu0`, which stands in for it (its synthetic files still answer for
/// the vCPU; the others, such as cpufreq's, are cpu0's); None if there is none. Which directory
/// a component names is decided lexically, as for [`contents`]; the walk then follows the
/// replaced path, `..` and links included, as the host resolves it.
pub fn stand_in(path: &[u8], cpus: u32) -> Option<Vec<u8>> {
    let cpu_dir: Vec<&[u8]> = CPU_DIR.split(|&b| b == b'/').filter(|c| !c.is_empty()).collect();
    let mut lexical: Vec<&[u8]> = Vec::new();
    let mut out = Vec::with_capacity(path.len());
    let mut replaced = false;
    for (i, c) in path.split(|&b| b == b'/').enumerate() {
        let mut c = c;
        match c {
            b"" | b"." => {}
            b".." => {
                lexical.pop();
            }
            _ => {
                lexical.push(c);
                let missing = lexical.len() == cpu_dir.len() + 1
                    && lexical.starts_with(&cpu_dir)
                    && numbered(c, b"cpu").is_some_and(|(cpu, rest)| {
                        rest.is_empty() && cpu > 0 && cpu < cpus && !host_has(&[CPU_DIR, c].concat())
                    });
                if missing {
                    c = b"cpu0";
                    replaced = true;
                }
            }
        }
        if i > 0 {
            out.push(b'/');
        }
        out.extend_from_slice(c);
    }
    replaced.then_some(out)
}

fn host_has(path: &[u8]) -> bool {
    std::fs::symlink_metadata(std::ffi::OsStr::from_bytes(path)).is_ok()
}

/// `cpu<N>` or `cpu<N>/rest` (for `prefix` "cpu"): N and the rest ("" for the directory).
pub(super) fn numbered<'a>(name: &'a [u8], prefix: &[u8]) -> Option<(u32, &'a [u8])> {
    let tail = name.strip_prefix(prefix)?;
    let digits = tail.iter().take_while(|b| b.is_ascii_digit()).count();
    let (number, rest) = tail.split_at(digits);
    if digits == 0 || (digits > 1 && number[0] == b'0') || !(rest.is_empty() || rest[0] == b'/') {
        return None;
    }
    let n = std::str::from_utf8(number).ok()?.parse().ok()?;
    Some((n, rest.strip_prefix(b"/").unwrap_or(rest)))
}

/// A file of vCPU `cpu`'s directory (`rest` below it), if the VM answers it.
fn cpu_file(cpu: u32, cpus: u32, rest: &[u8]) -> Option<Vec<u8>> {
    let own = || cpu_list(cpu, 1);
    let line = |v: u32| format!("{v}\n").into_bytes();
    // Every vCPU but the boot one can be taken offline on Linux, so it has an `online` file (a
    // vCPU the host lacks stands in as the host's cpu0, which has none).
    if rest == b"online" {
        return (cpu > 0).then(|| line(1));
    }
    if let Some(name) = rest.strip_prefix(b"topology/") {
        return match name {
            // A cluster is the CPUs that share an L2 on x86 Linux: each vCPU's own here, with
            // the "no cluster id" Linux shows in a VM like this host (65535).
            b"thread_siblings_list" | b"core_cpus_list" | b"cluster_cpus_list" => Some(own()),
            b"thread_siblings" | b"core_cpus" | b"cluster_cpus" => Some(cpu_mask(cpu, 1, cpus)),
            b"core_siblings_list" | b"package_cpus_list" | b"die_cpus_list" => Some(cpu_list(0, cpus)),
            b"core_siblings" | b"package_cpus" | b"die_cpus" => Some(cpu_mask(0, cpus, cpus)),
            b"core_id" => Some(line(cpu)),
            b"cluster_id" => Some(line(65535)),
            b"physical_package_id" | b"die_id" => Some(line(0)),
            _ => None,
        };
    }
    // cache/index0..3: L1 data, L1 instruction, L2 (the vCPU's own), L3 (shared by all).
    let (index, file) = numbered(rest.strip_prefix(b"cache/")?, b"index")?;
    let level = [1, 1, 2, 3].get(index as usize).copied()?;
    let (first, count) = if level == 3 { (0, cpus) } else { (cpu, 1) };
    match file {
        b"level" => Some(line(level)),
        // The cache's number among those of its level (lscpu -e, hwloc): the vCPU's own, or 0.
        b"id" => Some(line(first)),
        b"shared_cpu_list" => Some(cpu_list(first, count)),
        b"shared_cpu_map" => Some(cpu_mask(first, count, cpus)),
        _ => None,
    }
}

/// Linux's list form of CPUs `first .. first + count`: "3", "0-3".
pub(super) fn cpu_list(first: u32, count: u32) -> Vec<u8> {
    let last = first + count.max(1) - 1;
    if last == first { format!("{first}\n") } else { format!("{first}-{last}\n") }.into_bytes()
}

/// Linux's mask form of CPUs `first .. first + count` among `cpus`: hexadecimal, one digit per
/// four CPUs, a comma between groups of 32 ("f", "00000001,ffffffff").
pub(super) fn cpu_mask(first: u32, count: u32, cpus: u32) -> Vec<u8> {
    let digits = cpus.max(1).div_ceil(4) as usize;
    let mut text = Vec::new();
    for d in (0..digits).rev() {
        let nibble = (0..4).filter(|b| (first..first + count).contains(&(d as u32 * 4 + b))).fold(0, |m, b| m | 1 << b);
        text.push(b"0123456789abcdef"[nibble as usize]);
        if d % 8 == 0 && d > 0 {
            text.push(b',');
        }
    }
    text.push(b'\n');
    text
}

/// Which process or thread a synthesized `/proc` file is about: the program (`/proc/self`,
/// `/proc/<pid>`), the thread that opens it (`/proc/thread-self`) or thread N (`task/N`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Who {
    Process,
    Caller,
    Thread(u32),
}

/// The program's own `/proc/self/<name>`: `cmdline` (its argv, NUL-separated), `comm` (its
/// name, as Linux shows the first 15 bytes of the last component of `path`), `status`, `stat`,
/// `statm`, `limits`, `environ` and `auxv` (see `own_status`); `maps` is
/// `Forwarder::synthesize`'s (see `own_maps`).
pub fn own_proc_file(name: &[u8], argv: &[Vec<u8>], path: &[u8], mem: (u64, u64), whose: Who, cpus: u32) -> Vec<u8> {
    // The name the program (or the thread) set, as the kernel published it, else the
    // executable's, which Linux's exec sets.
    let comm: Vec<u8> = super::own_status::comm(whose).unwrap_or_else(|| {
        let base = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
        base.iter().copied().take(15).collect()
    });
    match name {
        // The program's argument area as it is now (a title it set shows), else its argv.
        b"cmdline" => super::own_status::cmdline()
            .unwrap_or_else(|| argv.iter().flat_map(|a| a.iter().copied().chain([0])).collect()),
        b"comm" => [comm.as_slice(), b"\n"].concat(),
        b"status" => super::own_status::status(&comm, whose, mem, cpus),
        b"stat" => super::own_status::stat(&comm, whose, mem),
        b"statm" => super::own_status::statm(mem),
        b"limits" => super::own_status::limits(),
        b"environ" => super::own_status::environ(),
        b"auxv" => super::own_status::auxv(),
        _ => Vec::new(),
    }
}

/// A host descriptor reading `data` from its start: a memfd, opened again read-only, so that
/// writes (and splices into it, which waited for their pipe's data) are EBADF as for the /proc
/// file it stands for. The memfds of the last few contents are kept (`Templates`): an open of
/// the same contents again (glibc's `get_nprocs` opens /sys/devices/system/cpu/online at every
/// `sysconf(_SC_NPROCESSORS_ONLN)`) is only the read-only open, ~4 us on the host where making
/// the memfd, filling it and closing it added ~10.
pub fn open_memory_file(data: &[u8]) -> std::io::Result<i32> {
    // Never waits for the lock: a forked child's monitor may have inherited it held by a
    // thread that does not exist there.
    let mut templates = match TEMPLATES.try_lock() {
        Ok(t) => t,
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return reopen_read_only(&filled_memfd(data)?),
    };
    if data.len() > TEMPLATE_MAX {
        return reopen_read_only(&filled_memfd(data)?);
    }
    templates.for_this_process();
    if let Some(template) = templates.find(data) {
        match template.reopen() {
            Some(fd) => return Ok(fd),
            // Not the memfd it was (cannot happen while the process keeps its descriptors):
            // start again.
            None => templates.forget_all(),
        }
    }
    let file = filled_memfd(data)?;
    let fd = reopen_read_only(&file)?;
    templates.keep(data, file);
    Ok(fd)
}

/// A memfd holding `data`.
fn filled_memfd(data: &[u8]) -> std::io::Result<std::fs::File> {
    // SAFETY: a plain memfd_create with a static NUL-terminated name.
    let fd = unsafe { libc::memfd_create(c"hrt-synthetic".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor we own.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.write_all(data)?;
    Ok(file)
}

/// A new read-only open of `file` (its own offset), through the monitor's /proc.
fn reopen_read_only(file: &std::fs::File) -> std::io::Result<i32> {
    let path = std::ffi::CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())).unwrap_or_default();
    // SAFETY: a host C string; `file` stays open during the call.
    let read_only = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if read_only < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(read_only)
}

/// The memfds of recent synthetic contents, most recent first: at most `TEMPLATES_KEPT`, each
/// of at most `TEMPLATE_MAX` bytes, so a program that opens many different files (each
/// `/proc/self/stat` differs) holds at most 16 x 64 KiB of host memory here. A larger content
/// is made afresh each time and not kept. Templates are never written after they are filled.
/// A forked child's monitor closes every descriptor it does not know (`fork::close_all_but`),
/// these too, so a process uses only the templates it made itself (`for_this_process`), and a
/// reopened template must still be the memfd it was (`Template::reopen`): a descriptor number
/// taken by another file would otherwise hand the program that file.
struct Templates {
    pid: u32,
    kept: Vec<Template>,
}

struct Template {
    data: Vec<u8>,
    file: std::fs::File,
    /// The memfd's device and inode.
    id: (u64, u64),
}

const TEMPLATES_KEPT: usize = 16;
const TEMPLATE_MAX: usize = 64 << 10;

static TEMPLATES: std::sync::Mutex<Templates> = std::sync::Mutex::new(Templates { pid: 0, kept: Vec::new() });

impl Templates {
    /// Drops the templates another process (the parent of a forked monitor) made: their
    /// descriptors are not this process's any more.
    fn for_this_process(&mut self) {
        let pid = std::process::id();
        if self.pid != pid {
            self.forget_all();
            self.pid = pid;
        }
    }

    /// Drops every template without closing its descriptor (whose number may be another
    /// file's now).
    fn forget_all(&mut self) {
        for t in self.kept.drain(..) {
            std::mem::forget(t.file);
        }
    }

    /// The template holding `data`, moved to the front.
    fn find(&mut self, data: &[u8]) -> Option<&Template> {
        let at = self.kept.iter().position(|t| t.data.as_slice() == data)?;
        let entry = self.kept.remove(at);
        self.kept.insert(0, entry);
        self.kept.first()
    }

    /// Keeps `file` (holding `data`) as the most recent template; the least recent one past
    /// `TEMPLATES_KEPT` is closed.
    fn keep(&mut self, data: &[u8], file: std::fs::File) {
        let Some(id) = identity(file.as_raw_fd()) else { return };
        self.kept.truncate(TEMPLATES_KEPT - 1);
        self.kept.insert(0, Template { data: data.to_vec(), file, id });
    }
}

impl Template {
    /// A read-only open of the template, if it is still the memfd it was.
    fn reopen(&self) -> Option<i32> {
        let fd = reopen_read_only(&self.file).ok()?;
        if identity(fd) == Some(self.id) {
            return Some(fd);
        }
        // SAFETY: fd was just opened here and is not shared.
        unsafe { libc::close(fd) };
        None
    }
}

/// The device and inode of host descriptor `fd`.
fn identity(fd: i32) -> Option<(u64, u64)> {
    // SAFETY: libc::stat is plain data, for which all zeros is a value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a plain fstat into a local buffer.
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
}

#[cfg(test)]
mod tests {
    use super::{beyond_vm, contents, in_vm_tree, listing, stand_in, through_node_link};
    use crate::forward::cpu_dirs::Listing;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn cpu_lists() {
        assert_eq!(contents(b"/sys/devices/system/cpu/online", 1).unwrap(), b"0\n");
        assert_eq!(contents(b"/sys/devices/system/cpu/possible", 4).unwrap(), b"0-3\n");
        assert!(contents(b"/etc/passwd", 4).is_none());
    }

    /// What libgomp reads for OMP_PLACES=cores, sockets, ll_caches and numa_domains.
    #[test]
    fn topology_of_the_vm() {
        let cpu = |p: &str| contents(format!("/sys/devices/system/cpu/{p}").as_bytes(), 4);
        assert_eq!(cpu("cpu3/topology/thread_siblings_list").unwrap(), b"3\n");
        assert_eq!(cpu("cpu2/topology/core_siblings_list").unwrap(), b"0-3\n");
        assert_eq!(cpu("cpu1/topology/thread_siblings").unwrap(), b"2\n");
        assert_eq!(cpu("cpu1/topology/package_cpus").unwrap(), b"f\n");
        assert_eq!(cpu("cpu2/topology/cluster_cpus_list").unwrap(), b"2\n");
        assert_eq!(cpu("cpu2/topology/cluster_id").unwrap(), b"65535\n");
        assert_eq!(cpu("cpu0/cache/index3/level").unwrap(), b"3\n");
        assert_eq!(cpu("cpu1/cache/index2/shared_cpu_list").unwrap(), b"1\n");
        assert_eq!(cpu("cpu1/cache/index3/shared_cpu_list").unwrap(), b"0-3\n");
        assert_eq!(cpu("cpu3/cache/index0/id").unwrap(), b"3\n");
        assert_eq!(cpu("cpu3/cache/index3/id").unwrap(), b"0\n");
        assert!(cpu("cpu0/cache/index4/level").is_none());
        assert_eq!(cpu("cpu3/online").unwrap(), b"1\n");
        assert!(cpu("cpu0/online").is_none());
        assert!(cpu("cpu4/topology/core_id").is_none());
        assert!(cpu("cpu01/topology/core_id").is_none());
        assert_eq!(contents(b"/sys/devices/system/node/node0/cpulist", 4).unwrap(), b"0-3\n");
        assert_eq!(contents(b"/sys/devices/system/node/online", 4).unwrap(), b"0\n");
        assert_eq!(contents(b"/sys/devices/system/cpu/cpu0/topology/core_siblings", 40).unwrap(), b"ff,ffffffff\n");
    }

    /// Node 0's `cpu<K>` links lead to the CPU directory's entries when followed.
    #[test]
    fn node_links_lead_to_the_vcpus() {
        let node =
            |p: &str, follow| through_node_link(format!("/sys/devices/system/node/node0/{p}").as_bytes(), 4, follow);
        assert_eq!(node("cpu3/topology/core_id", false).unwrap(), b"/sys/devices/system/cpu/cpu3/topology/core_id");
        assert_eq!(node("cpu2", true).unwrap(), b"/sys/devices/system/cpu/cpu2");
        assert!(node("cpu2", false).is_none(), "the link itself");
        assert!(node("cpu4/online", true).is_none(), "beyond the VM");
        assert!(node("cpulist", true).is_none());
    }

    /// A PCI device's CPUs are the VM's, where the host has the file.
    #[test]
    fn devices_are_near_every_vcpu() {
        let Some(dev) = std::fs::read_dir("/sys/bus/pci/devices").ok().and_then(|mut d| d.next()).and_then(|e| e.ok())
        else {
            return; // a host without PCI devices in sysfs
        };
        let dev = dev.path();
        let at = |f: &str| contents(dev.join(f).as_os_str().as_bytes(), 4);
        assert_eq!(at("local_cpus").unwrap(), b"f\n");
        assert_eq!(at("local_cpulist").unwrap(), b"0-3\n");
        assert!(contents(b"/sys/devices/none-such-device/local_cpus", 4).is_none());
        assert!(contents(b"/tmp/local_cpus", 4).is_none());
    }

    /// The cgroup cpusets, v1 and v2, at any depth, are the VM's CPUs and node.
    #[test]
    fn cpusets_are_the_vms() {
        let cg = |p: &str| contents(format!("/sys/fs/cgroup/{p}").as_bytes(), 4);
        assert_eq!(cg("cpuset/cpuset.cpus").unwrap(), b"0-3\n");
        assert_eq!(cg("cpuset/a/b/cpuset.effective_cpus").unwrap(), b"0-3\n");
        assert_eq!(cg("user.slice/cpuset.cpus.effective").unwrap(), b"0-3\n");
        assert_eq!(cg("cpuset.mems.effective").unwrap(), b"0\n");
        assert!(cg("cpu/cpu.cfs_quota_us").is_none());
        assert!(in_vm_tree(b"/sys/fs/cgroup/cpuset"));
    }

    #[test]
    fn cpus_and_nodes_beyond_the_vm_are_absent() {
        assert!(beyond_vm(b"/sys/devices/system/cpu/cpu2", 2));
        assert!(beyond_vm(b"/sys/devices/system/cpu/cpu7/topology/core_id", 4));
        assert!(!beyond_vm(b"/sys/devices/system/cpu/cpu3/online", 4));
        assert!(!beyond_vm(b"/sys/devices/system/cpu/cpufreq", 1));
        assert!(beyond_vm(b"/sys/devices/system/node/node1/cpulist", 4));
        assert!(beyond_vm(b"/sys/devices/system/node/node0/cpu4", 4));
        assert!(!beyond_vm(b"/sys/devices/system/node/node0/cpu3", 4));
        assert!(!beyond_vm(b"/sys/devices/system/node/node0", 4));
    }

    #[test]
    fn the_cpu_and_node_directories_list_the_vm() {
        assert_eq!(listing(b"/sys/devices/system/cpu", 4), Some(Listing { prefix: b"cpu", count: 4 }));
        assert_eq!(listing(b"/sys/devices/system/node/", 4), Some(Listing { prefix: b"node", count: 1 }));
        assert_eq!(listing(b"/sys/devices/system/cpu/cpu0", 4), None);
        assert!(in_vm_tree(b"/sys/devices/system/cpu") && in_vm_tree(b"/sys/devices/system/node/node0"));
        assert!(!in_vm_tree(b"/sys/devices/system/cpufreq") && !in_vm_tree(b"/sys/devices/system"));
    }

    /// vCPUs past the host's own (one past its `possible` list) are its cpu0, whatever the spelling.
    #[test]
    fn a_vcpu_the_host_lacks_stands_in_for_cpu0() {
        let possible = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap();
        let last: u32 = possible.trim().rsplit(['-', ',']).next().unwrap().parse().unwrap();
        let (lacking, cpus) = (last + 1, last + 3);
        let path = |p: String| stand_in(p.as_bytes(), cpus).map(|v| String::from_utf8(v).unwrap());
        assert_eq!(
            path(format!("/sys/devices/system/cpu/cpu{lacking}/topology/core_id")).unwrap(),
            "/sys/devices/system/cpu/cpu0/topology/core_id"
        );
        assert_eq!(
            path(format!("/sys//devices/system/cpu/./cpu{lacking}/../cpu{lacking}")).unwrap(),
            "/sys//devices/system/cpu/./cpu0/../cpu0"
        );
        assert_eq!(path(format!("/sys/devices/system/cpu/cpu{}/cache", cpus)), None);
        assert_eq!(path("/sys/devices/system/cpu/cpu0/topology".into()), None);
        assert_eq!(path(format!("/sys/devices/system/cpu/cpu0/cpu{lacking}")), None);
        assert_eq!(path(format!("/tmp/sys/devices/system/cpu/cpu{lacking}")), None);
    }

    #[test]
    fn cpu_lists_beyond_the_per_cpu_files() {
        assert_eq!(contents(b"/sys/devices/system/cpu/offline", 4).unwrap(), b"\n");
        assert_eq!(contents(b"/sys/devices/system/cpu/enabled", 4).unwrap(), b"0-3\n");
        assert_eq!(contents(b"/sys/devices/system/cpu/kernel_max", 4).unwrap(), b"255\n");
        let cpuinfo = String::from_utf8(contents(b"/proc/cpuinfo", 3).unwrap()).unwrap();
        assert_eq!(cpuinfo.lines().filter(|l| l.starts_with("processor")).count(), 3);
        let stat = String::from_utf8(contents(b"/proc/stat", 3).unwrap()).unwrap();
        assert_eq!(stat.lines().filter(|l| l.starts_with("cpu")).count(), 4);
    }
}
