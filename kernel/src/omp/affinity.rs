//! Thread affinity display (OpenMP 5.1, 6.14 and 3.9): the affinity-format-var
//! (OMP_AFFINITY_FORMAT, `omp_set/get_affinity_format`), `omp_display_affinity`,
//! `omp_capture_affinity`, and display-affinity-var (OMP_DISPLAY_AFFINITY: each thread shows
//! its line when it starts a region and what it shows has changed).
//!
//! A format is text with fields `%[0[.]][size]type`: `type` one letter or `{long_name}`;
//! `.` right-justifies in `size` columns, `0.` with leading zeros; left-justified by default.
//! Fields and defaults as libgomp's; an unknown field ends the program, as libgomp does.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::places;
use super::thread::{self, Ctx};
use crate::sync::SpinLock;

const DEFAULT_FORMAT: &[u8] = b"level %L thread %i affinity %A";

static FORMAT: SpinLock<Vec<u8>> = SpinLock::new(Vec::new());
static FORMAT_SET: AtomicBool = AtomicBool::new(false);
static DISPLAY: AtomicBool = AtomicBool::new(false);

/// affinity-format-var.
pub fn format() -> Vec<u8> {
    if FORMAT_SET.load(Ordering::Acquire) {
        FORMAT.lock().clone()
    } else {
        DEFAULT_FORMAT.to_vec()
    }
}

pub fn set_format(f: &[u8]) {
    *FORMAT.lock() = f.to_vec();
    FORMAT_SET.store(true, Ordering::Release);
}

/// OMP_AFFINITY_FORMAT and OMP_DISPLAY_AFFINITY (`icv::init`).
pub fn init_env(name: &[u8], value: &[u8], display: Option<bool>) {
    match name {
        b"OMP_AFFINITY_FORMAT" => set_format(value),
        b"OMP_DISPLAY_AFFINITY" => DISPLAY.store(display.unwrap_or(false), Ordering::Relaxed),
        _ => {}
    }
}

/// Back to the settings before any environment was read (a program that exec'd).
pub fn reset() {
    FORMAT.lock().clear();
    FORMAT_SET.store(false, Ordering::Release);
    DISPLAY.store(false, Ordering::Relaxed);
    LAST_TOP.store(0, Ordering::Relaxed);
}

/// display-affinity-var.
pub fn display_on() -> bool {
    DISPLAY.load(Ordering::Relaxed)
}

/// The processors a thread may run on, as libgomp writes a CPU set: ranges `a-b` and single
/// numbers, comma-separated.
fn cpu_list(cpus: &[u32]) -> String {
    let mut out = String::new();
    for (first, n) in places::runs(cpus) {
        if !out.is_empty() {
            out.push(',');
        }
        let _ = if n > 1 { write!(out, "{}-{}", first, first + n - 1) } else { write!(out, "{first}") };
    }
    out
}

/// The thread's processors: its place's when it is bound to one, else every CPU.
fn affinity_of(c: &Ctx) -> String {
    let mut cpus: Vec<u32> =
        if c.place != places::NONE { places::procs(c.place) } else { (0..super::icv::num_procs()).collect() };
    cpus.sort_unstable();
    cpus.dedup();
    cpu_list(&cpus)
}

fn host_name() -> String {
    let name = &crate::bootinfo::get().uname[1];
    let len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    String::from_utf8_lossy(&name[..len]).into_owned()
}

/// The value of field `name` (one letter or a long name) for the task `c`; None if unknown.
fn field(name: &[u8], c: &Ctx) -> Option<(String, bool)> {
    let num = |v: i64| Some((alloc::format!("{v}"), true));
    match name {
        b"t" | b"team_num" => num(0),
        b"T" | b"num_teams" => num(1),
        b"L" | b"nesting_level" => num(c.level as i64),
        b"n" | b"thread_num" => num(c.id as i64),
        b"N" | b"num_threads" => num(c.nthreads as i64),
        b"a" | b"ancestor_tnum" => num(super::api::omp_get_ancestor_thread_num(c.level as i32 - 1) as i64),
        b"H" | b"host" => Some((host_name(), false)),
        b"P" | b"process_id" => num(crate::linux::process::pid() as i64),
        // pthread_self: the thread's TLS base, as glibc and musl define it.
        // SAFETY: the current thread's record.
        b"i" | b"native_thread_id" => {
            Some((alloc::format!("{:#x}", unsafe { (*crate::sched::current()).fs_base }), false))
        }
        b"A" | b"thread_affinity" => Some((affinity_of(c), false)),
        _ => None,
    }
}

/// An affinity format the runtime cannot expand: the program ends as libgomp ends it, with
/// libgomp's message (its `gomp_fatal`: a newline, "libgomp: ", the message) and status 1.
fn bad_format(what: core::fmt::Arguments) -> ! {
    crate::kprintln!("\nlibgomp: {what}");
    super::exit_through_program(1)
}

/// Expands `fmt` for the current task.
pub fn expand(fmt: &[u8]) -> Vec<u8> {
    let c = thread::ctx();
    let mut out = Vec::new();
    let mut i = 0;
    while i < fmt.len() {
        if fmt[i] != b'%' {
            out.push(fmt[i]);
            i += 1;
            continue;
        }
        i += 1;
        if fmt.get(i) == Some(&b'%') {
            out.push(b'%');
            i += 1;
            continue;
        }
        let zeros = fmt.get(i) == Some(&b'0');
        if zeros {
            i += 1;
            if fmt.get(i) != Some(&b'.') {
                bad_format(format_args!("leading zero not followed by dot in affinity format"));
            }
        }
        let right = fmt.get(i) == Some(&b'.');
        if right {
            i += 1;
        }
        let digits = fmt[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        let size =
            fmt[i..i + digits].iter().fold(0usize, |a, &d| a.saturating_mul(10).saturating_add((d - b'0') as usize));
        i += digits;
        if right && digits == 0 {
            bad_format(format_args!("leading zero or right justification in affinity format requires size"));
        }
        let long = fmt.get(i) == Some(&b'{');
        let name: &[u8] = if long {
            let Some(len) = fmt[i + 1..].iter().position(|&b| b == b'}') else {
                let name = core::str::from_utf8(&fmt[i + 1..]).unwrap_or("?");
                bad_format(format_args!("unterminated long type name '{name}' in affinity format"));
            };
            let n = &fmt[i + 1..i + 1 + len];
            i += len + 2;
            n
        } else {
            let n = fmt.get(i..i + 1).unwrap_or(b"");
            i += 1;
            n
        };
        let Some((value, numeric)) = field(name, c) else {
            let shown = core::str::from_utf8(name).unwrap_or("?");
            if long {
                bad_format(format_args!("unsupported long type name '{shown}' in affinity format"));
            }
            bad_format(format_args!("unsupported type {shown} in affinity format"));
        };
        let value = value.into_bytes();
        let pad = size.saturating_sub(value.len());
        if !right {
            out.extend_from_slice(&value);
            out.resize(out.len() + pad, b' ');
        } else if zeros {
            let (sign, digits) = if numeric && value.first() == Some(&b'-') {
                (&value[..1], &value[1..])
            } else {
                (&value[..0], &value[..])
            };
            out.extend_from_slice(sign);
            out.resize(out.len() + pad, b'0');
            out.extend_from_slice(digits);
        } else {
            out.resize(out.len() + pad, b' ');
            out.extend_from_slice(&value);
        }
    }
    out
}

/// Copies `s` to the program's `buf` of `size` bytes, truncated and NUL-terminated; returns
/// the length of `s` (as the routines that fill a buffer answer).
fn copy_out(s: &[u8], buf: *mut u8, size: usize) -> usize {
    if !buf.is_null() && size > 0 {
        let n = s.len().min(size - 1);
        // SAFETY: the program's buffer of `size` bytes.
        unsafe {
            core::ptr::copy_nonoverlapping(s.as_ptr(), buf, n);
            *buf.add(n) = 0;
        }
    }
    s.len()
}

/// The program's NUL-terminated string at `p` (empty for null).
fn c_string<'a>(p: *const u8) -> &'a [u8] {
    if p.is_null() {
        return &[];
    }
    // SAFETY: a C string of the program.
    unsafe { core::ffi::CStr::from_ptr(p as *const core::ffi::c_char) }.to_bytes()
}

/// The format a routine was given, or affinity-format-var for an empty one.
pub fn or_default(f: &[u8]) -> Vec<u8> {
    if f.is_empty() {
        format()
    } else {
        f.to_vec()
    }
}

/// The format a C routine was given, or affinity-format-var for null or "".
fn given_or_default(p: *const u8) -> Vec<u8> {
    or_default(c_string(p))
}

/// Shows the current thread's line for `fmt` on stderr.
pub fn display(fmt: &[u8]) {
    let mut line = expand(fmt);
    line.push(b'\n');
    super::output::stderr(&line);
}

/// The last team made outside any region: a digest of its size and places (0: none yet).
static LAST_TOP: AtomicU64 = AtomicU64::new(0);
/// OMP_DISPLAY_AFFINITY: whether the threads of a new team at `level` of `n` threads show
/// their lines, as libgomp 12 decides (`gomp_team_start`): every thread of a nested team of
/// more than one; the threads of a team made outside any region when its size or its threads'
/// places (`places`, thread by thread) differ from the previous such team's, or when it is
/// the first; never those of a team of one (libgomp's initial thread has its place from the
/// start, and a team of one has no other thread).
pub fn team_shows<I: Iterator<Item = u32>>(level: u32, n: u32, places: impl FnOnce() -> I) -> bool {
    if n == 1 {
        return false;
    }
    if level > 1 {
        return true;
    }
    let mut digest = n as u64;
    for p in places() {
        digest = digest.wrapping_mul(0x100_0000_01b3) ^ p as u64;
    }
    // 0 means no team yet.
    let digest = digest.max(1);
    LAST_TOP.swap(digest, Ordering::Relaxed) != digest
}

pub extern "C" fn omp_set_affinity_format(f: *const u8) {
    set_format(c_string(f));
}
pub extern "C" fn omp_get_affinity_format(buf: *mut u8, size: usize) -> usize {
    copy_out(&format(), buf, size)
}
pub extern "C" fn omp_display_affinity(f: *const u8) {
    display(&given_or_default(f));
}
pub extern "C" fn omp_capture_affinity(buf: *mut u8, size: usize, f: *const u8) -> usize {
    copy_out(&expand(&given_or_default(f)), buf, size)
}
