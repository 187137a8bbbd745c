//! The kernel log: formatted text sent to the monitor, which prints it on stderr.
//!
//! Each `kprintln!` is formatted into a per-call stack buffer and sent as one hypercall, so lines
//! from different CPUs never interleave mid-line and a line costs one VM exit.
//!
//! `--strace` lines are many (one per system call) and a VM exit each made tracing slow (~165 us
//! per line on a PVM host: MPICH's `MPI_Init`, 2,500 calls, ran in ~0.5 s traced against ~0.08 s
//! untraced), so they are held (`hold_line`) and sent together (`flush_held`): when 16 KiB
//! wait, before any other kernel line (which keeps their order), before the program writes to
//! its standard output or error (`syscall`), whenever a CPU goes idle (a program that waits
//! shows its last calls), before a fork, and at the end.

use core::fmt::{self, Write};

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::arch::{hypercall, instr, irq};

const LINE_MAX: usize = 512;

/// Text on its way to the monitor: a line being formatted (`N` = `LINE_MAX`), or the held
/// lines (`HELD_MAX`). Sent when full and by `flush`.
struct LineBuffer<const N: usize = LINE_MAX> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> LineBuffer<N> {
    const fn new() -> Self {
        LineBuffer { buf: [0; N], len: 0 }
    }

    fn flush(&mut self) {
        if self.len > 0 {
            hypercall::console_write(&self.buf[..self.len]);
            self.len = 0;
        }
    }
}

impl<const N: usize> Write for LineBuffer<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // Whole-slice copies: on emulated ring 0 every instruction counts.
        let mut bytes = s.as_bytes();
        while !bytes.is_empty() {
            if self.len == N {
                self.flush();
            }
            let n = bytes.len().min(N - self.len);
            self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
            self.len += n;
            bytes = &bytes[n..];
        }
        Ok(())
    }
}

static QUIET: AtomicBool = AtomicBool::new(false);

/// Silences `kinfo!` lines.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

#[doc(hidden)]
pub fn print_args(args: fmt::Arguments) {
    // Held lines first. Not if some CPU holds them: a panic while sending them, or another
    // CPU in the middle of sending (that line then may come first; nothing is lost).
    if HELD_ANY.load(Ordering::Acquire) && !HELD.busy.load(Ordering::Relaxed) {
        flush_held();
    }
    let mut line = LineBuffer::<LINE_MAX>::new();
    let _ = line.write_fmt(args);
    line.flush();
}

/// Bytes of held lines sent in one go.
const HELD_MAX: usize = 16 << 10;

/// Lines waiting to be sent (`hold_line`), in the order they were made, behind a lock of their
/// own (the console lies below `sync`): a flag taken with interrupts off, so that a line
/// printed from an interrupt never waits for its own CPU.
struct Held {
    busy: AtomicBool,
    lines: UnsafeCell<LineBuffer<HELD_MAX>>,
}

// SAFETY: `lines` is touched only by the CPU that set `busy` (`with_held`).
unsafe impl Sync for Held {}

static HELD: Held = Held { busy: AtomicBool::new(false), lines: UnsafeCell::new(LineBuffer::new()) };
/// Whether any line is held (read without the lock).
static HELD_ANY: AtomicBool = AtomicBool::new(false);
/// When the oldest held line was made (TSC; meaningful while `HELD_ANY`).
static HELD_SINCE: AtomicU64 = AtomicU64::new(0);

/// Runs `f` on the held lines, alone.
fn with_held<R>(f: impl FnOnce(&mut LineBuffer<HELD_MAX>) -> R) -> R {
    let were = irq::save_and_disable();
    while HELD.busy.swap(true, Ordering::Acquire) {
        core::hint::spin_loop();
    }
    // SAFETY: `busy` gives this CPU the only access until it is cleared below.
    let r = f(unsafe { &mut *HELD.lines.get() });
    HELD.busy.store(false, Ordering::Release);
    irq::restore(were);
    r
}

/// Formats a line (with its newline) and holds it to be sent with others (see the module
/// comment).
pub fn hold_line(args: fmt::Arguments) {
    let mut line = LineBuffer::<LINE_MAX>::new();
    let _ = line.write_fmt(format_args!("{args}\n"));
    with_held(|held| {
        if held.len + line.len > HELD_MAX {
            // Whole lines per send: another CPU's kernel line may come between two sends.
            held.flush();
        }
        let at = held.len;
        held.buf[at..at + line.len].copy_from_slice(&line.buf[..line.len]);
        held.len += line.len;
        if at == 0 {
            HELD_SINCE.store(instr::rdtsc(), Ordering::Relaxed);
        }
        HELD_ANY.store(true, Ordering::Release);
    });
}

/// `flush_held` if the oldest held line waits for `ticks` TSC ticks or more: an idle CPU sends
/// them, but not each line as it comes (its sending would hold up the CPU that makes them).
pub fn flush_held_after(ticks: u64) {
    if HELD_ANY.load(Ordering::Acquire) && instr::rdtsc().wrapping_sub(HELD_SINCE.load(Ordering::Relaxed)) >= ticks {
        flush_held();
    }
}

/// Sends the held lines now (a load when there are none).
pub fn flush_held() {
    if HELD_ANY.load(Ordering::Acquire) {
        with_held(|held| {
            held.flush();
            HELD_ANY.store(false, Ordering::Release);
        });
    }
}

/// Prints to the kernel log (the monitor's stderr).
#[macro_export]
macro_rules! kprint {
    ($($arg:tt)*) => ($crate::console::print_args(format_args!($($arg)*)));
}

/// Prints an informational line (boot progress), unless the monitor asked for quiet.
#[macro_export]
macro_rules! kinfo {
    ($($arg:tt)*) => {
        if !$crate::console::quiet() {
            $crate::kprintln!($($arg)*);
        }
    };
}

/// Prints a line to the kernel log (the monitor's stderr).
#[macro_export]
macro_rules! kprintln {
    () => ($crate::kprint!("\n"));
    ($($arg:tt)*) => ($crate::console::print_args(format_args!("{}\n", format_args!($($arg)*))));
}
