//! A progress bar on stderr: redrawn in place on a terminal, one line per step otherwise.

use std::io::Write as _;
use std::time::Instant;

pub struct Progress {
    total: usize,
    done: usize,
    tty: bool,
    started: Instant,
}

const BAR: usize = 24;

impl Progress {
    pub fn new(total: usize) -> Progress {
        // SAFETY: isatty only inspects the descriptor.
        let tty = unsafe { libc::isatty(2) } == 1;
        Progress { total, done: 0, tty, started: Instant::now() }
    }

    /// Shows that the next step, `label`, is running.
    pub fn step(&mut self, label: &str) {
        let filled = (self.done * BAR).checked_div(self.total).unwrap_or(BAR);
        let bar = format!("[{}{}]", "#".repeat(filled), ".".repeat(BAR - filled));
        let secs = self.started.elapsed().as_secs();
        let text = format!("hrt bench {bar} {}/{} {secs:>4}s {label}", self.done + 1, self.total);
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r{text}\x1b[K");
        } else {
            let _ = writeln!(err, "{text}");
        }
        let _ = err.flush();
        self.done += 1;
    }

    pub fn finish(&self) {
        let secs = self.started.elapsed().as_secs_f64();
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[K");
        }
        let _ = writeln!(err, "hrt bench: {} runs in {secs:.1} s", self.total);
    }
}
