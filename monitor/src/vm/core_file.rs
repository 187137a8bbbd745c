//! The program's core file (`nr::CORE_DUMP`): an ELF core as Linux writes one, so that
//! `gdb prog core` shows where a crashed program was. The program's memory is every page the
//! kernel's page map marks mapped (read-only ones without PF_W; read-only runs also carry
//! PF_X, since the map does not say which are code), pages of zeros left as holes; the notes
//! are the ending thread's NT_PRSTATUS, NT_PRPSINFO, NT_SIGINFO, NT_AUXV and the other
//! threads' NT_PRSTATUS (the kernel stopped them) (gdb relocates a
//! PIE program by it; the copy on the program's stack). Pages the host never made are holes
//! too, without being read. The file goes where the host's `core_pattern` says, relative to the
//! program's working directory (`hrt`'s own), with the common `%` specifiers; a `|` pattern
//! (a host collector such as systemd-coredump) gets nothing, nor does a core limit of 0.
//! Past the program's RLIMIT_CORE the file stops, as Linux's does, and counts as not written.

use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;

use hrt_abi::{CoreRecord, CoreThread};

use super::vcpu::Shared;

const PAGE: u64 = hrt_abi::USER_MAP_PAGE;

/// `nr::CORE_DUMP`: writes the core file the record at guest `at` (of `len` bytes) asks for.
pub fn serve(shared: &Shared, at: u64, len: u64) -> i64 {
    if len != std::mem::size_of::<CoreRecord>() as u64 {
        return -(libc::EINVAL as i64);
    }
    let Some(record) = shared.ram.read_obj::<CoreRecord>(at) else { return -(libc::EFAULT as i64) };
    let limit = core_limit();
    if limit == 0 {
        return 0;
    }
    let Some(path) = core_path(&record, limit) else { return 0 };
    let runs = mapped_runs(shared);
    match write_core(shared, &record, &runs, &path, limit) {
        Ok(true) => 1,
        Ok(false) => 0,
        Err(e) => -(e.raw_os_error().unwrap_or(libc::EIO) as i64),
    }
}

/// The program's soft core limit: the one it set, else `hrt`'s own (the host's).
fn core_limit() -> u64 {
    if let Some(l) = crate::forward::program_limit(libc::RLIMIT_CORE) {
        return l.rlim_cur;
    }
    let mut own = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_CORE, &mut own) } != 0 {
        return 0;
    }
    own.rlim_cur
}

/// The file name `core_pattern` gives (None for a pipe pattern or an unreadable one).
fn core_path(r: &CoreRecord, limit: u64) -> Option<Vec<u8>> {
    let pattern = std::fs::read("/proc/sys/kernel/core_pattern").ok()?;
    let pattern = pattern.strip_suffix(b"\n").unwrap_or(&pattern);
    let uses_pid = std::fs::read("/proc/sys/kernel/core_uses_pid").is_ok_and(|v| v.first() == Some(&b'1'));
    expand(pattern, r, limit, uses_pid)
}

/// `pattern` with its specifiers filled in (core(5)); None for an empty or `|` pattern.
fn expand(pattern: &[u8], r: &CoreRecord, limit: u64, uses_pid: bool) -> Option<Vec<u8>> {
    if pattern.is_empty() || pattern[0] == b'|' {
        return None;
    }
    let comm: Vec<u8> = r.comm.iter().copied().take_while(|&b| b != 0).collect();
    let mut out = Vec::new();
    let mut has_pid = false;
    let mut i = 0;
    while i < pattern.len() {
        let c = pattern[i];
        i += 1;
        if c != b'%' {
            out.push(c);
            continue;
        }
        let Some(&spec) = pattern.get(i) else { break };
        i += 1;
        let text = match spec {
            b'%' => "%".to_string(),
            b'p' | b'P' => {
                has_pid = true;
                r.pid.to_string()
            }
            b'i' | b'I' => r.tid.to_string(),
            b's' => r.signo.to_string(),
            // SAFETY: plain calls without arguments.
            b'u' => unsafe { libc::getuid() }.to_string(),
            // SAFETY: as above.
            b'g' => unsafe { libc::getgid() }.to_string(),
            b'c' => {
                if limit == u64::MAX {
                    "18446744073709551615".into()
                } else {
                    limit.to_string()
                }
            }
            b'd' => "1".to_string(),
            b't' => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
                .to_string(),
            b'h' => node_name(),
            // The program's name stands for its executable's (%E, %f) too.
            b'e' | b'f' | b'E' => String::from_utf8_lossy(&comm).replace('/', "!"),
            _ => String::new(),
        };
        out.extend_from_slice(text.as_bytes());
    }
    if uses_pid && !has_pid {
        out.extend_from_slice(format!(".{}", r.pid).as_bytes());
    }
    Some(out)
}

/// The host's node name (`uname -n`).
fn node_name() -> String {
    // SAFETY: uname fills the struct we pass; its fields are NUL-terminated.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return String::new();
        }
        std::ffi::CStr::from_ptr(u.nodename.as_ptr()).to_string_lossy().into_owned()
    }
}

/// A run of mapped pages: [start, end), and whether they are read-only.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Run {
    start: u64,
    end: u64,
    read_only: bool,
}

/// The program's mapped pages as runs of equal protection, from the kernel's page maps.
fn mapped_runs(shared: &Shared) -> Vec<Run> {
    let Some(map) = shared.user_map.get() else { return Vec::new() };
    let (Some(mapped), Some(read_only)) =
        (shared.ram.slice(map.bitmap, map.bytes), shared.ram.slice(map.read_only, map.bytes))
    else {
        return Vec::new();
    };
    let pages = map.pages.min(map.bytes * 8);
    let bit = |bits: &[u8], page: u64| bits[(page / 8) as usize] & (1 << (page % 8)) != 0;
    let mut runs: Vec<Run> = Vec::new();
    let mut page = 0;
    while page < pages {
        // Whole empty bytes at once: most of a large pool is free.
        if page % 8 == 0 && mapped[(page / 8) as usize] == 0 {
            page += 8;
            continue;
        }
        if bit(mapped, page) {
            let start = map.base + page * PAGE;
            let ro = bit(read_only, page);
            match runs.last_mut() {
                Some(last) if last.end == start && last.read_only == ro => last.end += PAGE,
                _ => runs.push(Run { start, end: start + PAGE, read_only: ro }),
            }
        }
        page += 1;
    }
    runs
}

const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
const NT_PRSTATUS: u32 = 1;
const NT_PRPSINFO: u32 = 3;
const NT_AUXV: u32 = 6;
const NT_SIGINFO: u32 = 0x5349_4749;

/// One note: header, "CORE\0" padded to 4, the descriptor padded to 4.
fn note(out: &mut Vec<u8>, kind: u32, desc: &[u8]) {
    out.extend_from_slice(&5u32.to_le_bytes());
    out.extend_from_slice(&(desc.len() as u32).to_le_bytes());
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(b"CORE\0\0\0\0");
    out.extend_from_slice(desc);
    out.resize(out.len().next_multiple_of(4), 0);
}

fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
    buf[at..at + bytes.len()].copy_from_slice(bytes);
}

/// `struct elf_prstatus` of x86-64 (336 bytes) for thread `tid` with registers `regs`.
fn prstatus(signo: u64, tid: u64, regs: &[u64; 27], ids: [u32; 3]) -> Vec<u8> {
    let mut d = vec![0u8; 336];
    put(&mut d, 0, &(signo as i32).to_le_bytes());
    put(&mut d, 12, &(signo as i16).to_le_bytes());
    put(&mut d, 32, &(tid as i32).to_le_bytes());
    put(&mut d, 36, &ids[0].to_le_bytes());
    put(&mut d, 40, &ids[1].to_le_bytes());
    put(&mut d, 44, &ids[2].to_le_bytes());
    for (i, reg) in regs.iter().enumerate() {
        put(&mut d, 112 + 8 * i, &reg.to_le_bytes());
    }
    d
}

/// `struct elf_prpsinfo` of x86-64 (136 bytes).
fn prpsinfo(r: &CoreRecord, ids: [u32; 3]) -> Vec<u8> {
    let mut d = vec![0u8; 136];
    d[1] = b'R';
    // SAFETY: plain calls without arguments.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    put(&mut d, 16, &uid.to_le_bytes());
    put(&mut d, 20, &gid.to_le_bytes());
    put(&mut d, 24, &(r.pid as u32).to_le_bytes());
    put(&mut d, 28, &ids[0].to_le_bytes());
    put(&mut d, 32, &ids[1].to_le_bytes());
    put(&mut d, 36, &ids[2].to_le_bytes());
    put(&mut d, 40, &r.comm);
    let name_len = r.comm.iter().position(|&b| b == 0).unwrap_or(16);
    put(&mut d, 56, &r.comm[..name_len]);
    d
}

/// `siginfo_t` (128 bytes): number, errno, code, and the fault's address.
fn siginfo(r: &CoreRecord) -> Vec<u8> {
    let mut d = vec![0u8; 128];
    put(&mut d, 0, &(r.signo as i32).to_le_bytes());
    put(&mut d, 8, &(r.code as i32).to_le_bytes());
    put(&mut d, 16, &r.addr.to_le_bytes());
    d
}

/// The notes' bytes.
fn notes(shared: &Shared, r: &CoreRecord) -> Vec<u8> {
    // SAFETY: plain calls without arguments (`hrt` is the program's host process).
    let ids = unsafe { [r.ppid as u32, libc::getpgid(0) as u32, libc::getsid(0) as u32] };
    let mut out = Vec::new();
    // The ending thread first: gdb's current thread.
    note(&mut out, NT_PRSTATUS, &prstatus(r.signo, r.tid, &r.regs, ids));
    note(&mut out, NT_PRPSINFO, &prpsinfo(r, ids));
    note(&mut out, NT_SIGINFO, &siginfo(r));
    // Program memory (checked against the pool), as the program's stack holds it.
    let (at, len) = (r.auxv[0], r.auxv[1].min(4096));
    let in_program = at >= shared.program_mem.0 && at.checked_add(len).is_some_and(|end| end <= shared.program_mem.1);
    if let Some(auxv) = shared.ram.slice(at, len).filter(|a| in_program && !a.is_empty()) {
        note(&mut out, NT_AUXV, auxv);
    }
    for t in other_threads(shared, r) {
        note(&mut out, NT_PRSTATUS, &prstatus(r.signo, t.tid, &t.regs, ids));
    }
    out
}

/// The other threads the record lists (none if the list is not in guest RAM).
fn other_threads(shared: &Shared, r: &CoreRecord) -> Vec<CoreThread> {
    let [at, count] = r.others;
    let count = count.min(hrt_abi::CORE_THREADS_MAX);
    (0..count)
        .map_while(|i| shared.ram.read_obj::<CoreThread>(at + i * std::mem::size_of::<CoreThread>() as u64))
        .collect()
}

/// The ELF header and program headers: the notes' segment first, then one PT_LOAD per run,
/// each run's data at a page-aligned offset.
fn headers(runs: &[Run], notes_len: u64) -> (Vec<u8>, Vec<u64>) {
    let phnum = 1 + runs.len() as u64;
    let notes_at = 64 + 56 * phnum;
    let mut at = (notes_at + notes_len).next_multiple_of(PAGE);
    let mut h = Vec::with_capacity(notes_at as usize);
    h.extend_from_slice(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0");
    h.extend_from_slice(&4u16.to_le_bytes()); // ET_CORE
    h.extend_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    h.extend_from_slice(&1u32.to_le_bytes());
    h.extend_from_slice(&0u64.to_le_bytes()); // e_entry
    h.extend_from_slice(&64u64.to_le_bytes()); // e_phoff
    h.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
    h.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    h.extend_from_slice(&64u16.to_le_bytes());
    h.extend_from_slice(&56u16.to_le_bytes());
    h.extend_from_slice(&(phnum.min(0xffff) as u16).to_le_bytes());
    h.extend_from_slice(&[0; 6]); // e_shentsize, e_shnum, e_shstrndx
    let mut phdr = |kind: u32, flags: u32, off: u64, vaddr: u64, size: u64, align: u64| {
        h.extend_from_slice(&kind.to_le_bytes());
        h.extend_from_slice(&flags.to_le_bytes());
        h.extend_from_slice(&off.to_le_bytes());
        h.extend_from_slice(&vaddr.to_le_bytes());
        h.extend_from_slice(&0u64.to_le_bytes()); // p_paddr
        h.extend_from_slice(&size.to_le_bytes()); // p_filesz
        h.extend_from_slice(&size.to_le_bytes()); // p_memsz
        h.extend_from_slice(&align.to_le_bytes());
    };
    phdr(PT_NOTE, 0, notes_at, 0, notes_len, 4);
    let mut offsets = Vec::with_capacity(runs.len());
    for run in runs {
        let flags = if run.read_only { 4 | 1 } else { 4 | 2 };
        phdr(PT_LOAD, flags, at, run.start, run.end - run.start, PAGE);
        offsets.push(at);
        at += run.end - run.start;
    }
    (h, offsets)
}

/// Writes the file; Ok(false) if the limit cut it short.
fn write_core(shared: &Shared, r: &CoreRecord, runs: &[Run], path: &[u8], limit: u64) -> std::io::Result<bool> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path));
    // As Linux: a file already there is replaced, never written through (O_EXCL, no links).
    let _ = std::fs::remove_file(path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let notes = notes(shared, r);
    let (head, offsets) = headers(runs, notes.len() as u64);
    if !emit(&mut file, &head, 0, limit)? || !emit(&mut file, &notes, head.len() as u64, limit)? {
        return Ok(false);
    }
    let zeros = [0u8; PAGE as usize];
    for (run, &off) in runs.iter().zip(&offsets) {
        let mut present = Residency::default();
        for addr in (run.start..run.end).step_by(PAGE as usize) {
            let at = off + (addr - run.start);
            if !present.of(shared, addr, run.end) {
                // Never touched on the host: reads zero, left as a hole without reading it (a
                // program that mapped most of its 128 GiB would have the host map it all).
                continue;
            }
            let Some(bytes) = shared.ram.slice(addr, PAGE) else { continue };
            if at + PAGE > limit {
                // Cut short at the limit, as Linux's dump stops there.
                emit(&mut file, bytes, at, limit)?;
                file.set_len(limit)?;
                return Ok(false);
            }
            // A page of zeros is a hole, as Linux leaves pages never touched.
            if bytes != zeros {
                emit(&mut file, bytes, at, limit)?;
            }
        }
    }
    let end = offsets.last().zip(runs.last()).map_or(0, |(o, r)| o + (r.end - r.start));
    file.set_len(end.max(head.len() as u64 + notes.len() as u64))?;
    Ok(true)
}

/// Which pages of guest RAM the host holds (`mincore`), asked 2 MiB at a time.
#[derive(Default)]
struct Residency {
    /// The chunk asked last: its first address and one byte per page.
    from: u64,
    pages: Vec<u8>,
}

impl Residency {
    const CHUNK: u64 = 2 << 20;

    /// Whether the host holds guest page `addr` (true where it cannot tell); `end` bounds the
    /// chunk asked.
    fn of(&mut self, shared: &Shared, addr: u64, end: u64) -> bool {
        let inside = addr >= self.from && addr < self.from + self.pages.len() as u64 * PAGE;
        if !inside {
            let len = (Self::CHUNK - addr % Self::CHUNK).min(end - addr);
            self.from = addr;
            self.pages = vec![1; len.div_ceil(PAGE) as usize];
            if let Some(host) = shared.ram.host_ptr(addr, len) {
                // SAFETY: `host` maps `len` bytes of guest RAM, page-aligned (guest pages are
                // host pages of the mapping); mincore writes one byte per page into `pages`.
                let r = unsafe { libc::mincore(host.cast(), len as usize, self.pages.as_mut_ptr()) };
                if r != 0 {
                    self.pages.fill(1);
                }
            }
        }
        self.pages[((addr - self.from) / PAGE) as usize] & 1 != 0
    }
}

/// Writes `bytes` at file offset `at`, but nothing past `limit`; false if it cut them short.
fn emit(file: &mut std::fs::File, bytes: &[u8], at: u64, limit: u64) -> std::io::Result<bool> {
    let take = (bytes.len() as u64).min(limit.saturating_sub(at)) as usize;
    if take > 0 {
        file.seek(SeekFrom::Start(at))?;
        file.write_all(&bytes[..take])?;
    }
    Ok(take == bytes.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> CoreRecord {
        let mut r = CoreRecord { signo: 11, pid: 42, tid: 43, ..Default::default() };
        r.comm[..4].copy_from_slice(b"prog");
        r
    }

    #[test]
    fn patterns_expand_as_core_5_says() {
        let r = record();
        let e = |p: &str, uses_pid| expand(p.as_bytes(), &r, 100, uses_pid).map(|v| String::from_utf8(v).unwrap());
        assert_eq!(e("core", false).as_deref(), Some("core"));
        assert_eq!(e("core", true).as_deref(), Some("core.42"));
        assert_eq!(e("/tmp/core.%e.%p.%s.%%", true).as_deref(), Some("/tmp/core.prog.42.11.%"));
        assert_eq!(e("core.%i.%c.%q", false).as_deref(), Some("core.43.100."));
        assert_eq!(e("|/usr/lib/systemd/systemd-coredump %P", false), None);
        assert_eq!(e("", false), None);
        assert_eq!(e("core%", false).as_deref(), Some("core"));
    }

    #[test]
    fn headers_place_each_run_at_a_page_after_the_notes() {
        let runs = [
            Run { start: 0x40_0000, end: 0x40_2000, read_only: true },
            Run { start: 0x50_0000, end: 0x50_1000, read_only: false },
        ];
        let (h, offsets) = headers(&runs, 100);
        assert_eq!(h.len(), 64 + 56 * 3);
        assert_eq!(&h[..4], b"\x7fELF");
        assert_eq!(u16::from_le_bytes([h[16], h[17]]), 4);
        assert_eq!(u16::from_le_bytes([h[56], h[57]]), 3);
        assert_eq!(offsets, vec![0x1000, 0x3000]);
    }

    #[test]
    fn notes_are_padded_to_four_bytes() {
        let mut out = Vec::new();
        note(&mut out, NT_AUXV, &[1, 2, 3, 4, 5]);
        assert_eq!(out.len(), 12 + 8 + 8);
        assert_eq!(u32::from_le_bytes(out[4..8].try_into().unwrap()), 5);
    }
}
