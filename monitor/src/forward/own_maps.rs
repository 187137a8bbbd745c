//! The program's `/proc/self/maps`: its memory as one readable, writable and executable range
//! (the kernel keeps no per-mapping record the host could read), with the main stack, its
//! guard and the vDSO cut out as Linux shows them, where the kernel has published them
//! (`ChannelHeader::main_stack`). glibc's `pthread_getattr_np` finds the main thread's stack
//! in this file: in one range reaching far above the stack it computed a stack of about a
//! gigabyte (all of memory below the stack), where Linux gives RLIMIT_STACK; programs that
//! size their recursion by it (CPython 3.14, Ruby) then overrun the real stack.

use std::fmt::Write;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

static MAIN_STACK: AtomicPtr<[AtomicU64; 4]> = AtomicPtr::new(std::ptr::null_mut());

/// The channel's `main_stack` words (registration of the channel).
pub fn attach(words: &'static [AtomicU64; 4]) {
    MAIN_STACK.store(words as *const [AtomicU64; 4] as *mut [AtomicU64; 4], Ordering::Release);
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

/// One line as Linux prints it: the name, if any, from column 74.
fn line(out: &mut String, from: u64, to: u64, perms: &str, name: &str) {
    if from >= to {
        return;
    }
    let start = out.len();
    let _ = write!(out, "{from:08x}-{to:08x} {perms} 00000000 00:00 0 ");
    if !name.is_empty() {
        while out.len() - start < 73 {
            out.push(' ');
        }
        out.push_str(name);
    }
    out.push('\n');
}

/// The file's contents for the program's memory `mem` ([start, end)).
pub fn contents(mem: (u64, u64)) -> Vec<u8> {
    let mut out = String::new();
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
