//! The program's `/proc/self/status`, `/proc/self/stat` and `/proc/self/statm`. The program's
//! pid is `hrt`'s, so the lines about the process's identity, credentials and the host kernel's
//! view of it (Umask, Uid, FDSize, capabilities, NoNewPrivs, speculation mitigations)
//! are `hrt`'s own, in the host's order; Seccomp and Seccomp_filters are the thread's filters
//! in the kernel. Its threads, signal state and address space are the
//! kernel's (`ChannelHeader::status`, published before each open that may be of these files),
//! and its resident memory is measured here:
//!
//! - **VmRSS** (and RssAnon; statm's resident, stat's rss): the pages the program has mapped
//!   (the kernel's page map: accessible memory, PROT_NONE reservations and the break's unused
//!   window not counted) that the host holds in memory (`mincore` on guest RAM): memory the
//!   program touched, or the kernel wrote for it (a file mapping's bytes, which Linux would count
//!   as RssFile). Guest RAM is backed by 2 MiB host pages where the host allows, so one touched
//!   byte can count up to 2 MiB (thread stacks' tops excepted, which get 4 KiB pages).
//! - **VmHWM**: the host's peak resident set of `hrt` less what `hrt` held before the program
//!   started (what getrusage's ru_maxrss answers), and at least any VmRSS shown before: the
//!   kernel's own touches during the boot stay in it.
//! - **VmSize** and **VmPeak**: the kernel's address space (every mapping, PROT_NONE included,
//!   the break's window up to the break), and the largest it has been since the last exec (the
//!   kernel notes it wherever it may shrink).
//! - **VmStk**: the 132 KiB Linux's main stack starts with (at most what the kernel reserved,
//!   RLIMIT_STACK's size: the kernel counts in VmSize only what Linux's stack would have,
//!   `loader::main_stack_uncounted`; deeper use is not seen); **VmData**: VmSize less VmStk. The kernel keeps no
//!   record of which mappings hold code, so VmExe and VmLib are 0, as are RssFile and RssShmem
//!   (file pages are read into the program's own memory), VmPTE (the program's page tables are
//!   guest memory) and VmPin. **VmLck**: what the program locked (the kernel's `locked`).
//! - **Threads**, **SigQ**, **SigPnd**, **ShdPnd**, **SigBlk**, **SigIgn**, **SigCgt**: the
//!   kernel's. SigPnd and SigBlk are the main thread's in `/proc/self/status`, the caller's in
//!   `/proc/thread-self/status`, thread N's in `task/N/status` (for the first
//!   `hrt_abi::channel::STATUS_THREADS` threads; others show the main thread's).
//! - **Cpus_allowed** and its list: the VM's vCPUs; **Mems_allowed**: its one node.
//! - The context-switch counts are 0: the kernel does not count them.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Mutex;

use hrt_abi::channel::{ProgramStatus, STATUS_THREADS};

use super::synthetic::Who;

static STATUS: AtomicPtr<ProgramStatus> = AtomicPtr::new(std::ptr::null_mut());

/// The channel's status block (registration of the channel).
pub fn attach(block: &'static ProgramStatus) {
    STATUS.store(block as *const ProgramStatus as *mut ProgramStatus, Ordering::Release);
}

/// The program's page map and its pool as host memory (see [`attach_memory`]).
struct Resident {
    /// Host address of the page map's bitmap.
    bitmap: u64,
    base: u64,
    pages: u64,
    /// (guest address, length, host address) of the pool's RAM.
    ranges: Vec<(u64, u64, u64)>,
}

static RESIDENT: Mutex<Option<Resident>> = Mutex::new(None);

/// Where the program's page map (`bitmap`, host address, `bytes` long, covering `pages` pages
/// from guest address `base`) and its pool's RAM (`ranges`: guest address, length, host address) are; all
/// of it lives as long as guest RAM.
/// Only whole aligned words of the bitmap are read: `bytes` of it, from an 8-byte boundary.
pub fn attach_memory(bitmap: u64, bytes: u64, base: u64, pages: u64, ranges: Vec<(u64, u64, u64)>) {
    let pages = pages.min(bytes / 8 * 64);
    let usable = bitmap != 0 && bitmap.is_multiple_of(8);
    *RESIDENT.lock().unwrap() = usable.then_some(Resident { bitmap, base, pages, ranges });
}

/// Bytes of the program's mapped pages in guest `[from, to)` that the host holds in memory
/// (VmRSS), 0 before the kernel sent its page map. The map is read a word (64 pages) at a time,
/// skipping empty words, over the span the kernel says its mappings lie in: the whole map of a
/// 16 GiB pool is 65,536 words (~0.2 ms), a program's span far fewer.
pub(super) fn resident_bytes((from, to): (u64, u64)) -> u64 {
    const PAGE: u64 = hrt_abi::USER_MAP_PAGE;
    const CHUNK: u64 = 2 << 20;
    let r = RESIDENT.lock().unwrap();
    let Some(r) = r.as_ref() else { return 0 };
    let word = |page: u64| {
        // SAFETY: page < pages, so the word lies in the bitmap (guest RAM, mapped for good,
        // whole words: the kernel keeps it as u64s from a page boundary); the guest may change
        // it meanwhile, hence the volatile read.
        unsafe { std::ptr::read_volatile((r.bitmap as *const u64).add((page / 64) as usize)) }
    };
    let host = |addr: u64| {
        r.ranges.iter().find(|&&(g, len, _)| (g..g + len).contains(&addr)).map(|&(g, len, h)| (h + addr - g, g + len))
    };
    let mut vec = vec![0u8; (CHUNK / PAGE) as usize];
    let mut total = 0;
    let mut page = from.saturating_sub(r.base) / PAGE;
    let last = to.saturating_sub(r.base).div_ceil(PAGE).min(r.pages);
    while page < last {
        let bits = word(page) >> (page % 64);
        if bits == 0 {
            page = (page / 64 + 1) * 64;
            continue;
        }
        page += bits.trailing_zeros() as u64;
        if page >= last {
            break;
        }
        // A run of mapped pages, at most up to the next 2 MiB boundary and within one RAM range.
        let addr = r.base + page * PAGE;
        let Some((at, range_end)) = host(addr) else {
            page += 1;
            continue;
        };
        let stop = ((addr / CHUNK + 1) * CHUNK).min(range_end).saturating_sub(r.base) / PAGE;
        let stop = stop.min(last);
        let mut end = page;
        while end < stop {
            let off = end % 64;
            let ones = (!(word(end) >> off)).trailing_zeros() as u64;
            end += ones.min(64 - off);
            if ones < 64 - off {
                break;
            }
        }
        let end = end.clamp(page + 1, stop.max(page + 1));
        let n = (end - page) as usize;
        // SAFETY: mincore reads no memory: it writes one byte per page of [at, at + n pages)
        // (host memory of guest RAM) into `vec`, which holds CHUNK / PAGE >= n bytes.
        if unsafe { libc::mincore(at as *mut libc::c_void, n * PAGE as usize, vec.as_mut_ptr()) } == 0 {
            total += vec[..n].iter().filter(|&&b| b & 1 != 0).count() as u64 * PAGE;
        }
        page = end;
    }
    total
}

/// `len` bytes of guest memory at `addr`, if they lie in one range of the program's pool (the
/// program may change them meanwhile: they are read as they are).
fn guest_bytes(addr: u64, len: u64) -> Option<Vec<u8>> {
    let r = RESIDENT.lock().unwrap();
    let r = r.as_ref()?;
    let end = addr.checked_add(len)?;
    let &(g, _, h) = r.ranges.iter().find(|&&(g, l, _)| addr >= g && end <= g + l)?;
    let mut out = vec![0u8; len as usize];
    // SAFETY: `[addr, end)` lies in one range of guest RAM, mapped at `h` for as long as guest
    // RAM lives; a copy of plain bytes, which the guest may be writing.
    unsafe { std::ptr::copy_nonoverlapping((h + addr - g) as *const u8, out.as_mut_ptr(), out.len()) };
    Some(out)
}

/// The most of the environment or argument area `/proc/self/environ` and `cmdline` show (the
/// areas are the strings execve copied, at most a quarter of the stack limit on Linux).
const AREA_MAX: u64 = 4 << 20;

/// The most of a title (see `cmdline`) Linux shows: one page.
const TITLE_MAX: u64 = 4096;

/// The program's memory from `start` to `end` as it is now, at most `AREA_MAX` bytes; empty
/// if it does not lie in the program's memory.
fn area(start: u64, end: u64) -> Vec<u8> {
    if start == 0 || end <= start {
        return Vec::new();
    }
    guest_bytes(start, (end - start).min(AREA_MAX)).unwrap_or_default()
}

/// The program's `/proc/self/environ`: its environment area (the strings execve copied, on the
/// main stack) as it is now, as Linux shows it: a string the program changed in place shows
/// changed, `setenv`'s new ones do not show. Empty before the kernel has published a stack.
pub fn environ() -> Vec<u8> {
    let Some(s) = published() else { return Vec::new() };
    area(word(&s.environ[0]), word(&s.environ[1]))
}

/// The program's `/proc/self/cmdline` as Linux's `get_mm_cmdline` makes it from its argument
/// area as it is now: the whole area while its last byte is a NUL; once the program wrote over
/// that byte (a setproctitle that ran on into the environment area), its title: the bytes from
/// the area's start up to and with the first NUL within a page. None before the kernel has
/// published a stack.
pub fn cmdline() -> Option<Vec<u8>> {
    let s = block()?;
    let (start, end) = (word(&s.args[0]), word(&s.args[1]));
    if start == 0 || end <= start {
        return None;
    }
    let args = area(start, end);
    if args.last().is_some_and(|&b| b != 0) {
        // Linux reads on into the environment area only when it follows the arguments.
        let (env_start, env_end) = (word(&s.environ[0]), word(&s.environ[1]));
        let limit = if env_start == end && env_end >= env_start { env_end } else { end };
        let mut title = area(start, limit.min(start + TITLE_MAX));
        if let Some(n) = title.iter().position(|&b| b == 0) {
            title.truncate(n + 1);
        }
        return Some(title);
    }
    Some(args)
}

/// The program's `/proc/self/auxv`: its auxiliary vector as its kernel built it (key and value
/// words, up to and with AT_NULL). Empty before the kernel has published a stack.
pub fn auxv() -> Vec<u8> {
    let Some(s) = published() else { return Vec::new() };
    guest_bytes(word(&s.auxv[0]), word(&s.auxv[1]).min(4096)).unwrap_or_default()
}

/// Linux's names and units of the resource limits, by resource number (fs/proc/base.c).
const LIMITS: [(&str, &str); hrt_abi::RLIMITS] = [
    ("Max cpu time", "seconds"),
    ("Max file size", "bytes"),
    ("Max data size", "bytes"),
    ("Max stack size", "bytes"),
    ("Max core file size", "bytes"),
    ("Max resident set", "bytes"),
    ("Max processes", "processes"),
    ("Max open files", "files"),
    ("Max locked memory", "bytes"),
    ("Max address space", "bytes"),
    ("Max file locks", "locks"),
    ("Max pending signals", "signals"),
    ("Max msgqueue size", "bytes"),
    ("Max nice priority", ""),
    ("Max realtime priority", ""),
    ("Max realtime timeout", "us"),
];

/// The program's `/proc/self/limits`: its kernel's limits (`ProgramStatus::rlimits`), in
/// Linux's layout; where the kernel has published none (`--no-channel`), `hrt`'s own, which
/// the program started with.
pub fn limits() -> Vec<u8> {
    let Some(s) = published() else { return std::fs::read("/proc/self/limits").unwrap_or_default() };
    let mut out = format!("{:<25} {:<20} {:<20} {:<10}\n", "Limit", "Soft Limit", "Hard Limit", "Units");
    let value = |v: u64| if v == u64::MAX { String::from("unlimited") } else { v.to_string() };
    for ((name, units), l) in LIMITS.iter().zip(s.rlimits.iter()) {
        let _ = write!(out, "{name:<25} {:<20} {:<20} ", value(word(&l[0])), value(word(&l[1])));
        if units.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "{units:<10}");
        }
    }
    out.into_bytes()
}

/// What the kernel published, if it has.
fn published() -> Option<&'static ProgramStatus> {
    block().filter(|s| s.valid.load(Ordering::Acquire) != 0)
}

/// The channel's status block, whatever the kernel has written into it so far (its stack's
/// areas as soon as it has built the stack: `status::publish_areas` in the kernel).
fn block() -> Option<&'static ProgramStatus> {
    let p = STATUS.load(Ordering::Acquire);
    // SAFETY: `attach` takes a block that lives as long as the process (guest RAM stays mapped).
    (!p.is_null()).then(|| unsafe { &*p })
}

/// Where the program's argument strings are (arg_start, arg_end) and how far its title may run
/// on (`cmdline`: into the environment strings where they follow, at most `TITLE_MAX` bytes
/// from the start); None before the kernel has built a stack.
pub(super) fn title_area() -> Option<(u64, u64, u64)> {
    let s = block()?;
    let (start, end) = (word(&s.args[0]), word(&s.args[1]));
    if start == 0 || end <= start {
        return None;
    }
    let (env_start, env_end) = (word(&s.environ[0]), word(&s.environ[1]));
    let limit = if env_start == end && env_end >= env_start { env_end } else { end };
    let end = end.min(start + AREA_MAX);
    Some((start, end, limit.min(start + TITLE_MAX).max(end)))
}

/// The host address of the program's memory `[addr, addr + len)`, if it lies in one range of
/// the program's pool (mapped there for as long as guest RAM lives).
pub(super) fn host_span(addr: u64, len: u64) -> Option<u64> {
    let r = RESIDENT.lock().unwrap();
    let end = addr.checked_add(len)?;
    let &(g, _, h) = r.as_ref()?.ranges.iter().find(|&&(g, l, _)| addr >= g && end <= g + l)?;
    Some(h + addr - g)
}

/// The thread id `whose` names (the main thread's, the pid, for the process), if known: the
/// caller's is what the kernel published with this open.
pub fn tid_of(whose: Who) -> Option<u32> {
    match whose {
        Who::Process => Some(std::process::id()),
        Who::Thread(t) => Some(t),
        Who::Caller => published().and_then(|s| u32::try_from(word(&s.caller)).ok()).filter(|&t| t != 0),
    }
}

/// The name `comm` shows for `whose` (a thread's own, else the process's), if the kernel
/// published names: at most 15 bytes, up to the first NUL.
pub fn comm(whose: Who) -> Option<Vec<u8>> {
    let s = published()?;
    let main = std::process::id() as u64;
    let tid = match whose {
        Who::Process => main,
        Who::Caller => word(&s.caller),
        Who::Thread(t) => t as u64,
    };
    let listed = (word(&s.listed) as usize).min(STATUS_THREADS);
    let words = (0..listed).find(|&i| word(&s.tids[i]) == tid).map_or(&s.process_name, |i| &s.names[i]);
    let bytes: Vec<u8> = words.iter().flat_map(|w| word(w).to_le_bytes()).take(15).collect();
    let name: Vec<u8> = bytes.into_iter().take_while(|&b| b != 0).collect();
    (!name.is_empty()).then_some(name)
}

fn word(w: &AtomicU64) -> u64 {
    w.load(Ordering::Relaxed)
}

/// The main stack Linux's execve makes: the arguments and environment and 128 KiB below them,
/// 132 KiB for a usual environment (VmStk; the kernel counts the same in VmSize).
const LINUX_START_STACK: u64 = 132 << 10;

/// The program's figures for one status or stat file.
struct Figures {
    threads: u64,
    /// SigPnd and SigBlk of the thread the file is about; ShdPnd, SigIgn, SigCgt.
    pending: u64,
    blocked: u64,
    shared: u64,
    ignored: u64,
    caught: u64,
    queued: u64,
    /// Bytes.
    size: u64,
    peak: u64,
    rss: u64,
    hwm: u64,
    stack: u64,
    locked: u64,
    /// The thread's tid when the file is a thread's (Pid and NSpid show it).
    tid: Option<u32>,
    /// Its state: 'S' while it waits in the kernel, else 'R' (the main thread's for the
    /// process, as Linux shows the thread-group leader's).
    state: u8,
    /// The thread's seccomp mode and filter count (`ProgramStatus::seccomp`).
    seccomp: u64,
    /// The thread's CPU mask (`ProgramStatus::affinity`).
    affinity: [u64; 4],
}

/// The largest VmRSS this process has shown the program, `rss` (shown now) included. VmHWM is
/// never below it: the host's peak (`ru_maxrss`) follows its resident set lazily (its high-water
/// mark is taken when a mapping goes, not when guest RAM is given back with MADV_DONTNEED), so a
/// program that read VmRSS at its peak, freed the memory and read VmHWM could find it lower
/// (once in a CI run). A forked `hrt` starts again from what it shows (the owner pid differs).
/// The peak shown, and by which process (see `peak_seen`).
static PEAK: Mutex<(u32, u64)> = Mutex::new((0, 0));

fn peak_seen(rss: u64) -> u64 {
    let me = std::process::id();
    let mut peak = PEAK.lock().unwrap_or_else(|e| e.into_inner());
    if peak.0 != me {
        *peak = (me, 0);
    }
    peak.1 = peak.1.max(rss);
    peak.1
}

fn figures(whose: Who, mem: (u64, u64)) -> Figures {
    // The span of the program's mappings, if the kernel published it (else all of its memory).
    let span = published()
        .map(|s| (word(&s.mapped_span[0]), word(&s.mapped_span[1])))
        .filter(|&(lo, hi)| lo < hi)
        .unwrap_or((0, u64::MAX));
    let rss = resident_bytes(span);
    let hwm = (super::procs::max_rss(0).unwrap_or(0) as u64 * 1024).max(peak_seen(rss));
    let stack = super::own_maps::stack_bytes(mem).min(LINUX_START_STACK);
    let mut f = Figures {
        threads: 1,
        pending: 0,
        blocked: 0,
        shared: 0,
        ignored: 0,
        caught: 0,
        queued: 0,
        size: 0,
        peak: 0,
        rss,
        hwm,
        stack,
        locked: 0,
        tid: None,
        state: b'R',
        seccomp: 0,
        affinity: [0; 4],
    };
    let Some(s) = published() else { return f };
    f.threads = word(&s.threads).max(1);
    (f.shared, f.ignored, f.caught, f.queued) =
        (word(&s.shared_pending), word(&s.ignored), word(&s.caught), word(&s.queued));
    f.size = word(&s.vm_size);
    f.peak = word(&s.vm_peak).max(f.size);
    f.locked = word(&s.vm_locked);
    let main = std::process::id() as u64;
    let tid = match whose {
        Who::Process => main,
        Who::Caller => word(&s.caller),
        Who::Thread(t) => t as u64,
    };
    if whose != Who::Process {
        f.tid = u32::try_from(tid).ok();
    }
    let listed = (word(&s.listed) as usize).min(STATUS_THREADS);
    let at = |t: u64| (0..listed).find(|&i| word(&s.tids[i]) == t);
    if let Some(i) = at(tid).or_else(|| at(main)) {
        (f.pending, f.blocked) = (word(&s.pending[i]), word(&s.blocked[i]));
        f.seccomp = word(&s.seccomp[i]);
        f.affinity = [0, 1, 2, 3].map(|w| word(&s.affinity[i][w]));
        if word(&s.states[i]) == b'S' as u64 {
            f.state = b'S';
        }
    }
    f
}

/// Whether vCPU `cpu` is in `set` (a thread's CPU mask; all zero: every vCPU).
fn allowed(set: [u64; 4], cpu: u32) -> bool {
    set == [0; 4] || set[cpu as usize / 64] & (1 << (cpu % 64)) != 0
}

/// Linux's Cpus_allowed: hexadecimal, one digit per four of `cpus`, a comma between groups of 32.
fn allowed_mask(set: [u64; 4], cpus: u32) -> String {
    let digits = cpus.clamp(1, 256).div_ceil(4);
    let mut text = String::new();
    for d in (0..digits).rev() {
        let nibble = (0..4).filter(|b| d * 4 + b < cpus && allowed(set, d * 4 + b)).fold(0, |m, b| m | 1 << b);
        text.push(char::from(b"0123456789abcdef"[nibble as usize]));
        if d % 8 == 0 && d > 0 {
            text.push(',');
        }
    }
    text
}

/// Linux's Cpus_allowed_list: ranges, comma-separated (`0-2,5`).
fn allowed_list(set: [u64; 4], cpus: u32) -> String {
    let mut parts = Vec::new();
    let mut cpu = 0;
    while cpu < cpus.min(256) {
        if !allowed(set, cpu) {
            cpu += 1;
            continue;
        }
        let first = cpu;
        while cpu + 1 < cpus.min(256) && allowed(set, cpu + 1) {
            cpu += 1;
        }
        parts.push(if cpu == first { format!("{first}") } else { format!("{first}-{cpu}") });
        cpu += 1;
    }
    parts.join(",")
}

fn kib(bytes: u64) -> String {
    format!("{:>8} kB", bytes / 1024)
}

/// Linux's Mems_allowed for node 0 alone, in the shape of the host's line (`00000000,...,00000001`).
fn node0_mask(host_value: &str) -> String {
    let mut v: Vec<u8> = host_value.bytes().map(|b| if b.is_ascii_hexdigit() { b'0' } else { b }).collect();
    if let Some(last) = v.iter().rposition(|b| *b == b'0') {
        v[last] = b'1';
    }
    String::from_utf8(v).unwrap_or_else(|_| "1".into())
}

/// `/proc/self/status` (or a thread's) for program `comm`, its memory `mem` and `cpus` vCPUs.
pub fn status(comm: &[u8], whose: Who, mem: (u64, u64), cpus: u32) -> Vec<u8> {
    let f = figures(whose, mem);
    let host = std::fs::read("/proc/self/status").unwrap_or_default();
    let host = String::from_utf8_lossy(&host);
    let mut out = b"Name:\t".to_vec();
    out.extend_from_slice(comm);
    out.push(b'\n');
    let mut s = String::new();
    for line in host.lines() {
        let Some((key, value)) = line.split_once(':') else { continue };
        let value = value.trim_start_matches('\t');
        let mine = match key {
            "Name" => continue,
            // The kernel's (`hrt`'s main thread may be waiting whatever the program does).
            "State" => if f.state == b'S' { "S (sleeping)" } else { "R (running)" }.to_string(),
            "Pid" | "NSpid" => match f.tid {
                Some(t) => t.to_string(),
                None => value.to_string(),
            },
            "VmPeak" => kib(f.peak),
            "VmSize" => kib(f.size),
            "VmHWM" => kib(f.hwm),
            "VmRSS" | "RssAnon" => kib(f.rss),
            "VmData" => kib(f.size.saturating_sub(f.stack)),
            "VmStk" => kib(f.stack),
            "VmLck" => kib(f.locked),
            "VmPin" | "RssFile" | "RssShmem" | "VmExe" | "VmLib" | "VmPTE" | "VmSwap" | "HugetlbPages" => kib(0),
            "Threads" => f.threads.to_string(),
            // Pending instances / RLIMIT_SIGPENDING's soft limit: the program's if it set one
            // (the kernel keeps it), else the host's (`hrt`'s, which the program started with).
            "SigQ" => match super::procs::program_limit(libc::RLIMIT_SIGPENDING) {
                Some(l) => format!("{}/{}", f.queued, l.rlim_cur),
                None => format!("{}/{}", f.queued, value.split_once('/').map_or("0", |(_, l)| l)),
            },
            "SigPnd" => format!("{:016x}", f.pending),
            "ShdPnd" => format!("{:016x}", f.shared),
            "SigBlk" => format!("{:016x}", f.blocked),
            "SigIgn" => format!("{:016x}", f.ignored),
            "SigCgt" => format!("{:016x}", f.caught),
            "Cpus_allowed" => allowed_mask(f.affinity, cpus),
            "Cpus_allowed_list" => allowed_list(f.affinity, cpus),
            "Mems_allowed" => node0_mask(value),
            "Mems_allowed_list" => "0".to_string(),
            "voluntary_ctxt_switches" | "nonvoluntary_ctxt_switches" => "0".to_string(),
            // The program's sets once it changed them (`caps`).
            "CapInh" | "CapPrm" | "CapEff" if super::caps::shown().is_some() => {
                let [inh, prm, eff] = super::caps::shown().unwrap_or_default();
                format!(
                    "{:016x}",
                    if key == "CapInh" {
                        inh
                    } else if key == "CapPrm" {
                        prm
                    } else {
                        eff
                    }
                )
            }
            // Set by the program on whichever thread of `hrt` served its prctl; noted here.
            // The program's own filters (`hrt`'s vCPU threads have `hrt`'s).
            "Seccomp" => (f.seccomp & 0xff).to_string(),
            "Seccomp_filters" => (f.seccomp >> 8).to_string(),
            "NoNewPrivs" if super::procs::NO_NEW_PRIVS.load(std::sync::atomic::Ordering::Relaxed) => "1".to_string(),
            _ => value.to_string(),
        };
        let _ = writeln!(s, "{key}:\t{mine}");
    }
    out.extend_from_slice(s.as_bytes());
    out
}

/// `/proc/self/stat`: the host's line for `hrt`'s process (the program's pid is `hrt`'s, so its
/// start time, which MPI libraries such as UCX compare with what peers read from
/// `/proc/<pid>/stat`, and its times are `hrt`'s too), with the program's name, state R, and
/// its thread count, address space, resident pages, signal sets and argument and environment
/// areas (fields 20, 23, 24, 31-34, 48-51).
pub fn stat(comm: &[u8], whose: Who, mem: (u64, u64)) -> Vec<u8> {
    let host = std::fs::read("/proc/self/stat").unwrap_or_default();
    // The name is between the first '(' and the last ')' (it may contain either).
    let (Some(open), Some(close)) = (host.iter().position(|&b| b == b'('), host.iter().rposition(|&b| b == b')'))
    else {
        return host;
    };
    if open >= close {
        return host;
    }
    let f = figures(whose, mem);
    let rest = String::from_utf8_lossy(&host[close + 1..]);
    // Field 3 (state) is the first after the name.
    let mut fields: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
    let mut put = |n: usize, v: String| {
        if let Some(slot) = fields.get_mut(n - 3) {
            *slot = v;
        }
    };
    put(3, (f.state as char).to_string());
    put(20, f.threads.to_string());
    put(23, f.size.to_string());
    put(24, (f.rss / 4096).to_string());
    // Linux shows the first 31 signals of each set here (the fields predate real-time ones).
    let low = |set: u64| (set & 0x7fff_ffff).to_string();
    put(31, low(f.pending | f.shared));
    put(32, low(f.blocked));
    put(33, low(f.ignored));
    put(34, low(f.caught));
    // The program's argument and environment areas (setproctitle implementations look here),
    // not `hrt`'s.
    if let Some(s) = published() {
        let area = [&s.args[0], &s.args[1], &s.environ[0], &s.environ[1]];
        for (n, w) in (48..).zip(area) {
            put(n, word(w).to_string());
        }
    }
    // A thread's stat starts with its tid.
    let head = match f.tid {
        Some(t) => format!("{t} ").into_bytes(),
        None => host[..open].to_vec(),
    };
    let mut out = head;
    out.push(b'(');
    out.extend_from_slice(comm);
    out.push(b')');
    out.push(b' ');
    out.extend_from_slice(fields.join(" ").as_bytes());
    out.push(b'\n');
    out
}

/// `/proc/self/statm`: size, resident, shared, text, lib, data and dt, in pages, from the figures
/// of `status`.
pub fn statm(mem: (u64, u64)) -> Vec<u8> {
    let f = figures(Who::Process, mem);
    let p = |b: u64| b / 4096;
    format!("{} {} 0 0 0 {} 0\n", p(f.size), p(f.rss), p(f.size.saturating_sub(f.stack))).into_bytes()
}

/// This module's global locks, taken without waiting for a fork (`vm::fork`): false if
/// another thread holds one.
pub(crate) fn hold_for_fork(held: &mut crate::vm::fork::Held) -> bool {
    crate::vm::fork::try_hold(held, &RESIDENT) && crate::vm::fork::try_hold(held, &PEAK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_masks_read_as_linuxs() {
        assert_eq!((allowed_list([0; 4], 4), allowed_mask([0; 4], 4)), ("0-3".to_string(), "f".to_string()));
        assert_eq!(
            (allowed_list([0b1011, 0, 0, 0], 4), allowed_mask([0b1011, 0, 0, 0], 4)),
            ("0-1,3".into(), "b".into())
        );
        let high = [1, 0, 0, 0];
        assert_eq!((allowed_list(high, 40), allowed_mask(high, 40)), ("0".into(), "00,00000001".into()));
    }

    #[test]
    fn mems_allowed_keeps_the_hosts_shape() {
        assert_eq!(node0_mask("00000000,00000003"), "00000000,00000001");
        assert_eq!(node0_mask("1"), "1");
    }

    /// Before the kernel published anything: the host's lines in the host's order, the
    /// program's name first.
    #[test]
    fn status_has_linuxs_lines_in_order() {
        let s = String::from_utf8(status(b"prog", Who::Process, (0, 0), 4)).unwrap();
        assert!(s.starts_with("Name:\tprog\n"));
        let keys: Vec<&str> = s.lines().filter_map(|l| l.split_once(':')).map(|(k, _)| k).collect();
        let host = std::fs::read_to_string("/proc/self/status").unwrap();
        let host_keys: Vec<&str> = host.lines().filter_map(|l| l.split_once(':')).map(|(k, _)| k).collect();
        assert_eq!(keys, host_keys);
        assert!(s.contains("Cpus_allowed_list:\t0-3\n"));
        assert!(s.contains("Cpus_allowed:\tf\n"));
        assert!(s.contains("Threads:\t1\n"));
    }

    #[test]
    fn stat_has_the_programs_name_and_fields() {
        let s = String::from_utf8(stat(b"a b) c", Who::Process, (0, 0))).unwrap();
        let close = s.rfind(')').unwrap();
        assert!(s.contains("(a b) c)"));
        let fields: Vec<&str> = s[close + 2..].split_whitespace().collect();
        assert_eq!(fields[0], "R");
        assert_eq!(fields[20 - 3], "1");
        assert!(fields.len() >= 50);
    }
}
