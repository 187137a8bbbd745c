//! The program's `/proc/self/maps`. The kernel describes its memory before the open
//! (`ChannelHeader::maps`: each mapping cut by protection and by what it is, see the kernel's
//! `linux/maps.rs`); this formats the lines as Linux does and names the files: the program's
//! executable and interpreter, and a private file mapping's file by the descriptor it was
//! read from or the handle the monitor keeps of it; shared memory by the host's own line for
//! its pages (a file, `/SYSV...`, the monitor's memory file shown as `/dev/zero (deleted)`).
//!
//! Until the kernel has described it (and where a description cannot be read), the memory is
//! one readable, writable and executable range with the main stack, its guard and the vDSO cut
//! out, where the kernel has published them (`ChannelHeader::main_stack`). glibc's
//! `pthread_getattr_np` finds the main thread's stack in this file: in one range reaching far
//! above the stack it computed a stack of about a gigabyte (all of memory below the stack),
//! where Linux gives RLIMIT_STACK; programs that size their recursion by it (CPython 3.14,
//! Ruby) then overrun the real stack.

use std::collections::HashMap;
use std::fmt::Write;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Mutex;

use hrt_abi::channel::{maps_kind, MapsEntry, MAPS_LOCKED, MAPS_LOCKED_ON_FAULT, MAPS_MAX};

static MAIN_STACK: AtomicPtr<[AtomicU64; 4]> = AtomicPtr::new(std::ptr::null_mut());
static MAPS: AtomicPtr<[AtomicU64; 2]> = AtomicPtr::new(std::ptr::null_mut());
/// Where guest RAM's range `[addr, addr + len)` is in this process (None if it is not all
/// guest RAM): the kernel's description lies there.
pub type RamRange = Box<dyn Fn(u64, u64) -> Option<*mut u8> + Send + Sync>;
static RAM: Mutex<Option<RamRange>> = Mutex::new(None);

/// The channel's `main_stack` and `maps` words, and guest RAM (registration of the channel).
pub fn attach(stack: &'static [AtomicU64; 4], maps: &'static [AtomicU64; 2], ram: RamRange) {
    MAIN_STACK.store(stack as *const [AtomicU64; 4] as *mut [AtomicU64; 4], Ordering::Release);
    MAPS.store(maps as *const [AtomicU64; 2] as *mut [AtomicU64; 2], Ordering::Release);
    *RAM.lock().unwrap() = Some(ram);
}

/// (guard, stack bottom, stack top, vDSO end) if the kernel published them and they are in
/// order inside `mem` (numbers from the guest: only displayed, and checked first).
fn published(mem: (u64, u64)) -> Option<[u64; 4]> {
    let p = MAIN_STACK.load(Ordering::Acquire);
    if p.is_null() {
        return None;
    }
    // SAFETY: `attach` takes words that live as long as the process (guest RAM stays mapped).
    let words = unsafe { &*p };
    let w = [0, 1, 2, 3].map(|i| words[i].load(Ordering::Relaxed));
    let ordered = mem.0 <= w[0] && w[0] <= w[1] && w[1] < w[2] && w[2] <= w[3] && w[3] <= mem.1;
    ordered.then_some(w)
}

/// The main stack's size in bytes (0 before the kernel published it), for VmStk.
pub fn stack_bytes(mem: (u64, u64)) -> u64 {
    published(mem).map_or(0, |[_, bottom, top, _]| top - bottom)
}

/// The kernel's description of the program's memory, copied out of guest RAM (None if it has
/// made none, or it is not where guest RAM is). Entries that are not ranges are left out.
fn described() -> Option<Vec<MapsEntry>> {
    let p = MAPS.load(Ordering::Acquire);
    if p.is_null() {
        return None;
    }
    // SAFETY: as `published`'s.
    let words = unsafe { &*p };
    let count = words[1].load(Ordering::Acquire);
    let addr = words[0].load(Ordering::Relaxed);
    if count == 0 || count > MAPS_MAX {
        return None;
    }
    let bytes = count * std::mem::size_of::<MapsEntry>() as u64;
    let src = RAM.lock().unwrap().as_ref()?(addr, bytes)?;
    let mut entries = vec![MapsEntry::default(); count as usize];
    // SAFETY: `src` is `bytes` bytes of guest RAM (checked by host_ptr), copied with the
    // routine that survives a vanished page; `entries` is ours and as long; plain data.
    unsafe { crate::forward::guest_copy::copy(entries.as_mut_ptr() as *mut u8, src, bytes as usize) }.ok()?;
    entries.retain(|e| e.start < e.end);
    Some(entries)
}

/// A file a line names: its path, device and inode.
#[derive(Clone)]
pub struct Named {
    pub path: Vec<u8>,
    pub dev: u64,
    pub ino: u64,
}

impl Named {
    /// The file at `path` (its device and inode by stat; 0 if it cannot be read).
    pub fn at_path(path: &[u8]) -> Named {
        let st = std::fs::metadata(std::ffi::OsStr::from_bytes(path)).ok();
        let real = std::fs::canonicalize(std::ffi::OsStr::from_bytes(path)).ok();
        Named {
            path: real.map_or_else(|| path.to_vec(), |p| p.as_os_str().as_bytes().to_vec()),
            dev: st.as_ref().map_or(0, std::os::unix::fs::MetadataExt::dev),
            ino: st.as_ref().map_or(0, std::os::unix::fs::MetadataExt::ino),
        }
    }

    /// The file open as host descriptor `fd` (its path as the host's /proc shows it, or
    /// `vm_path` where the program knows it by another name).
    pub fn of_fd(fd: i32, vm_path: Option<&[u8]>) -> Option<Named> {
        // SAFETY: an all-zero `stat` is a valid value of this plain C struct.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat writes only the local struct it is given.
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return None;
        }
        let path = match vm_path {
            Some(p) => p.to_vec(),
            None => std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?.as_os_str().as_bytes().to_vec(),
        };
        Some(Named { path, dev: st.st_dev, ino: st.st_ino })
    }
}

/// A line of `hrt`'s own host `/proc/self/maps`: where shared memory is the host's (a file
/// mapped over guest RAM, a System V segment, anonymous shared memory in a memory file), the
/// host's line names it.
struct HostLine {
    from: u64,
    to: u64,
    offset: u64,
    named: Named,
}

/// `hrt`'s own mappings that name something.
fn host_lines() -> Vec<HostLine> {
    let Ok(text) = std::fs::read("/proc/self/maps") else { return Vec::new() };
    let hex = |s: &[u8]| u64::from_str_radix(std::str::from_utf8(s).ok()?, 16).ok();
    text.split(|&b| b == b'\n')
        .filter_map(|l| {
            let mut f = l.splitn(6, |&b| b == b' ');
            let (range, _, offset, dev, ino) = (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
            let name = f.next()?.trim_ascii_start();
            let (from, to) = range.split_at(range.iter().position(|&b| b == b'-')?);
            let (major, minor) = dev.split_at(dev.iter().position(|&b| b == b':')?);
            let dev = libc::makedev(hex(major)? as u32, hex(&minor[1..])? as u32);
            let ino = std::str::from_utf8(ino).ok()?.parse().ok()?;
            if name.is_empty() {
                return None;
            }
            let (from, to, offset) = (hex(from)?, hex(&to[1..])?, hex(offset)?);
            Some(HostLine { from, to, offset, named: Named { path: name.to_vec(), dev, ino } })
        })
        .collect()
}

/// The name and file offset of the shared memory at guest `addr`, from the host's line of its
/// host address (the monitor's memory file for anonymous shared memory is Linux's
/// `/dev/zero (deleted)`).
fn shared_name(addr: u64, host: &[HostLine]) -> Option<(Named, u64)> {
    const ANONYMOUS: &[u8] = b"/dev/zero (deleted)";
    let at = RAM.lock().unwrap().as_ref()?(addr, 1)? as u64;
    let Some(line) = host.iter().find(|l| l.from <= at && at < l.to) else {
        // Anonymous shared memory that is still the guest's own RAM (until a fork).
        return Some((Named { path: ANONYMOUS.to_vec(), dev: 0, ino: 0 }, 0));
    };
    let mut named = line.named.clone();
    if named.path.starts_with(b"/memfd:hrt-shared-anonymous") {
        named.path = ANONYMOUS.to_vec();
    }
    Some((named, line.offset + (at - line.from)))
}

/// What names the files of the lines: the executable's and interpreter's paths, and the file
/// behind a private mapping's descriptor (`FILE_FD`) or kept handle (`FILE_KEPT`).
pub struct Names<'a> {
    pub exe: &'a [u8],
    pub interp: &'a [u8],
    pub file: &'a dyn Fn(u32, u64) -> Option<Named>,
}

/// One line as Linux prints it: the name, if any, from column 74.
fn line(out: &mut String, from: u64, to: u64, perms: &str, name: &str) {
    file_line(out, (from, to), perms, 0, None, name);
}

/// `line` with a file's offset, device and inode.
fn file_line(out: &mut String, (from, to): (u64, u64), perms: &str, offset: u64, file: Option<&Named>, name: &str) {
    if from >= to {
        return;
    }
    let start = out.len();
    let (dev, ino) = file.map_or((0, 0), |f| (f.dev, f.ino));
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let _ = write!(out, "{from:08x}-{to:08x} {perms} {offset:08x} {major:02x}:{minor:02x} {ino} ");
    if !name.is_empty() {
        while out.len() - start < 73 {
            out.push(' ');
        }
        out.push_str(name);
    }
    out.push('\n');
}

/// Which file: `maps`, `smaps` (each line followed by its figures) or `smaps_rollup` (the
/// figures summed, under one line spanning all).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Form {
    Maps,
    Smaps,
    Rollup,
}

impl Form {
    pub fn of(name: &[u8]) -> Option<Form> {
        match name {
            b"maps" => Some(Form::Maps),
            b"smaps" => Some(Form::Smaps),
            b"smaps_rollup" => Some(Form::Rollup),
            _ => None,
        }
    }
}

/// An area's figures in bytes, as `smaps` shows them: its size, what of it the host holds in
/// memory (its resident set: the program's pages are its own, private and dirty to Linux's
/// eyes, shared ones shared), and what of that is anonymous.
#[derive(Default, Clone, Copy)]
struct Figures {
    size: u64,
    rss: u64,
    shared: u64,
    anonymous: u64,
    /// What of its resident set is locked (all of it, or none).
    locked: u64,
}

impl Figures {
    fn of(e: &MapsEntry) -> Figures {
        let rss = super::own_status::resident_bytes((e.start, e.end));
        let shared = if e.kind == maps_kind::SHARED { rss } else { 0 };
        let file =
            matches!(e.kind, maps_kind::PROGRAM | maps_kind::INTERPRETER | maps_kind::FILE_FD | maps_kind::FILE_KEPT);
        let locked = if e.prot & MAPS_LOCKED != 0 { rss } else { 0 };
        Figures { size: e.end - e.start, rss, shared, anonymous: if file || shared != 0 { 0 } else { rss }, locked }
    }

    fn add(&mut self, o: Figures) {
        self.size += o.size;
        self.rss += o.rss;
        self.shared += o.shared;
        self.anonymous += o.anonymous;
        self.locked += o.locked;
    }

    /// The figure lines, as Linux prints them (`Name:` in 16 columns, the value in 8, kB); the
    /// rollup has no size and splits its Pss.
    fn write(&self, out: &mut String, rollup: bool) {
        let kb = |v: u64| v / 1024;
        let private = self.rss - self.shared;
        let mut put = |name: &str, v: u64| {
            let _ = writeln!(out, "{:<16}{:>8} kB", format!("{name}:"), kb(v));
        };
        if !rollup {
            put("Size", self.size);
            put("KernelPageSize", 4096);
            put("MMUPageSize", 4096);
        }
        put("Rss", self.rss);
        put("Pss", self.rss);
        put("Pss_Dirty", self.rss);
        if rollup {
            put("Pss_Anon", self.anonymous);
            put("Pss_File", self.rss - self.anonymous - self.shared);
            put("Pss_Shmem", self.shared);
        }
        for (name, v) in [
            ("Shared_Clean", 0),
            ("Shared_Dirty", self.shared),
            ("Private_Clean", 0),
            ("Private_Dirty", private),
            ("Referenced", self.rss),
            ("Anonymous", self.anonymous),
        ] {
            put(name, v);
        }
        for name in ["KSM", "LazyFree", "AnonHugePages", "ShmemPmdMapped", "FilePmdMapped", "Shared_Hugetlb"] {
            put(name, 0);
        }
        for name in ["Private_Hugetlb", "Swap", "SwapPss"] {
            put(name, 0);
        }
        put("Locked", self.locked);
    }
}

/// An area's `VmFlags` line: what it allows now (rd, wr, ex, sh), may be given (mr, mw, me,
/// ms), grows down (gd: the main stack), is locked (lo, and lf on fault) and is accounted (ac:
/// private and writable), in Linux's order (that of the flags' bits).
fn vm_flags(out: &mut String, e: &MapsEntry) {
    let shared = e.kind == maps_kind::SHARED;
    let mut flags = String::from("VmFlags: ");
    for (on, name) in [
        (e.prot & 1 != 0, "rd"),
        (e.prot & 2 != 0, "wr"),
        (e.prot & 4 != 0, "ex"),
        (shared, "sh"),
        (true, "mr"),
        (true, "mw"),
        (true, "me"),
        (shared, "ms"),
        (e.kind == maps_kind::STACK, "gd"),
        (e.prot & MAPS_LOCKED != 0, "lo"),
        (e.prot & MAPS_LOCKED_ON_FAULT != 0, "lf"),
        (!shared && e.prot & 2 != 0, "ac"),
    ] {
        if on {
            flags.push_str(name);
            flags.push(' ');
        }
    }
    out.push_str(&flags);
    out.push('\n');
}

/// The file's contents for the program's memory `mem` ([start, end)).
pub fn contents(mem: (u64, u64), names: &Names, form: Form) -> Vec<u8> {
    let mut out = String::new();
    if form == Form::Rollup {
        let Some(entries) = described() else { return out.into_bytes() };
        let mut sum = Figures::default();
        entries.iter().for_each(|e| sum.add(Figures::of(e)));
        let span = (entries.first().map_or(0, |e| e.start), entries.last().map_or(0, |e| e.end));
        line(&mut out, span.0, span.1, "---p", "[rollup]");
        sum.write(&mut out, true);
        return out.into_bytes();
    }
    if let Some(entries) = described() {
        let mut known: HashMap<(u32, u64), Option<Named>> = HashMap::new();
        let host = if entries.iter().any(|e| e.kind == maps_kind::SHARED) { host_lines() } else { Vec::new() };
        for mut e in entries {
            let host_named = (e.kind == maps_kind::SHARED).then(|| shared_name(e.start, &host)).flatten();
            let p = |bit: u32, c: char| if e.prot & bit != 0 { c } else { '-' };
            let shared = if e.kind == maps_kind::SHARED { 's' } else { 'p' };
            let perms: String = [p(1, 'r'), p(2, 'w'), p(4, 'x'), shared].iter().collect();
            if let Some((_, offset)) = &host_named {
                e.offset = *offset;
            }
            let file = match host_named {
                Some((named, _)) => Some(named),
                None => known
                    .entry((e.kind, e.file))
                    .or_insert_with(|| match e.kind {
                        maps_kind::PROGRAM if !names.exe.is_empty() => Some(Named::at_path(names.exe)),
                        maps_kind::INTERPRETER if !names.interp.is_empty() => Some(Named::at_path(names.interp)),
                        maps_kind::FILE_FD | maps_kind::FILE_KEPT => (names.file)(e.kind, e.file),
                        _ => None,
                    })
                    .clone(),
            };
            let name = match e.kind {
                maps_kind::HEAP => "[heap]".to_string(),
                maps_kind::STACK => "[stack]".to_string(),
                // Its data page, which Linux maps apart.
                maps_kind::VDSO if e.prot & 4 == 0 => "[vvar]".to_string(),
                maps_kind::VDSO => "[vdso]".to_string(),
                _ => file.as_ref().map_or(String::new(), |f| String::from_utf8_lossy(&f.path).into_owned()),
            };
            let offset = if file.is_some() { e.offset } else { 0 };
            file_line(&mut out, (e.start, e.end), &perms, offset, file.as_ref(), &name);
            if form == Form::Smaps {
                Figures::of(&e).write(&mut out, false);
                let _ = writeln!(out, "{:<16}{:>8}", "THPeligible:", 0);
                vm_flags(&mut out, &e);
            }
        }
        return out.into_bytes();
    }
    match published(mem) {
        Some([guard, bottom, top, vdso_end]) => {
            line(&mut out, mem.0, guard, "rwxp", "");
            line(&mut out, guard, bottom, "---p", "");
            line(&mut out, bottom, top, "rw-p", "[stack]");
            line(&mut out, top, vdso_end, "r-xp", "[vdso]");
            line(&mut out, vdso_end, mem.1, "rwxp", "");
        }
        None => line(&mut out, mem.0, mem.1, "rwxp", ""),
    }
    out.into_bytes()
}

/// This module's global locks, taken without waiting for a fork (`vm::fork`): false if
/// another thread holds one.
pub(crate) fn hold_for_fork(held: &mut crate::vm::fork::Held) -> bool {
    crate::vm::fork::try_hold(held, &RAM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_linuxs_shape() {
        let mut s = String::new();
        line(&mut s, 0x1000, 0x2000, "rw-p", "[stack]");
        assert_eq!(s.find("[stack]"), Some(73));
        assert!(s.starts_with("00001000-00002000 rw-p 00000000 00:00 0 "));
        let mut t = String::new();
        line(&mut t, 0x1000, 0x2000, "rwxp", "");
        assert_eq!(t, "00001000-00002000 rwxp 00000000 00:00 0 \n");
    }
}
