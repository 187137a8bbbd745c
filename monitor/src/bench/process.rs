//! Runs one benchmark process with a time limit and captures its output.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::err;
use crate::error::Result;

pub struct Output {
    /// Exit status (None when killed by a signal).
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// What stderr says about a failure, for error messages: its kernel panic report (the
    /// panic line and the register lines after it) if it has one, else its last non-empty line.
    pub fn error_summary(&self) -> String {
        let lines: Vec<&str> = self.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        if let Some(at) = lines.iter().rposition(|l| l.contains("KERNEL PANIC")) {
            return lines[at..].iter().take(4).map(|l| l.trim()).collect::<Vec<_>>().join(" | ");
        }
        lines.last().map_or_else(|| "no message".to_string(), |l| l.to_string())
    }
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Runs `cmd` (stdin empty), killing it after `limit`.
pub fn run(cmd: &mut Command, what: &str, limit: Duration) -> Result<Output> {
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| err!("cannot start {what}: {e}"))?;
    let out = drain(child.stdout.take());
    let errs = drain(child.stderr.take());
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| err!("waiting for {what}: {e}"))? {
            break s;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(err!("{what} did not finish within {} s and was stopped", limit.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ok(Output {
        status: status.code(),
        stdout: out.join().unwrap_or_default(),
        stderr: errs.join().unwrap_or_default(),
    })
}
