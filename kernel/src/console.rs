//! The kernel log: formatted text sent to the monitor, which prints it on stderr.
//!
//! Each `kprintln!` is formatted into a per-call stack buffer and sent as one hypercall, so lines
//! from different CPUs never interleave mid-line and a line costs one VM exit.

use core::fmt::{self, Write};

use crate::arch::hypercall;

const LINE_MAX: usize = 512;

struct LineBuffer {
    buf: [u8; LINE_MAX],
    len: usize,
}

impl LineBuffer {
    fn flush(&mut self) {
        if self.len > 0 {
            hypercall::console_write(&self.buf[..self.len]);
            self.len = 0;
        }
    }
}

impl Write for LineBuffer {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // Whole-slice copies: on emulated ring 0 every instruction counts.
        let mut bytes = s.as_bytes();
        while !bytes.is_empty() {
            if self.len == LINE_MAX {
                self.flush();
            }
            let n = bytes.len().min(LINE_MAX - self.len);
            self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
            self.len += n;
            bytes = &bytes[n..];
        }
        Ok(())
    }
}

static QUIET: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Silences `kinfo!` lines.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, core::sync::atomic::Ordering::Relaxed);
}

pub fn quiet() -> bool {
    QUIET.load(core::sync::atomic::Ordering::Relaxed)
}

#[doc(hidden)]
pub fn print_args(args: fmt::Arguments) {
    let mut line = LineBuffer { buf: [0; LINE_MAX], len: 0 };
    let _ = line.write_fmt(args);
    line.flush();
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
