//! Whether the host has a CPU to spare right now: its count of runnable threads (the fourth
//! field of /proc/loadavg, "running/total") against the CPUs `hrt` may use. The channel's
//! pollers spin long after the last request only while a CPU is spare: a halted vCPU of this
//! VM leaves its host CPU free unless another program (another `hrt`, a build) takes it, and
//! two `hrt run`s joined by a pipe on two host CPUs each spun 1 ms after every request,
//! four spinning threads on two CPUs (`head -c 100M /dev/zero | tail -c 5` with both under
//! `hrt`: 3.1 s, 1.0 with the short spin; natively 0.05).

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long one look at the host's load holds.
const LOOK_EVERY: Duration = Duration::from_millis(1);

pub struct HostLoad {
    /// /proc/loadavg, opened once (before the pollers' seccomp filter), read with `pread`.
    file: Option<std::fs::File>,
    epoch: Instant,
    /// When the last look was (ns since `epoch`, plus 1; 0: never).
    looked: AtomicU64,
    spare: AtomicBool,
}

impl HostLoad {
    fn open() -> HostLoad {
        HostLoad {
            file: std::fs::File::open("/proc/loadavg").ok(),
            epoch: Instant::now(),
            looked: AtomicU64::new(0),
            spare: AtomicBool::new(true),
        }
    }

    /// Whether the host's runnable threads (the caller among them) number at most `cpus`,
    /// as last seen within `LOOK_EVERY`. True where /proc/loadavg cannot be read.
    pub fn spare(&self, cpus: u32) -> bool {
        let now = self.epoch.elapsed().as_nanos() as u64 + 1;
        let looked = self.looked.load(Ordering::Relaxed);
        if looked != 0 && now - looked < LOOK_EVERY.as_nanos() as u64 {
            return self.spare.load(Ordering::Relaxed);
        }
        // One thread looks; the others keep the last answer meanwhile.
        if self.looked.compare_exchange(looked, now, Ordering::Relaxed, Ordering::Relaxed).is_err() {
            return self.spare.load(Ordering::Relaxed);
        }
        let spare = self.runnable().is_none_or(|n| n <= cpus);
        self.spare.store(spare, Ordering::Relaxed);
        spare
    }

    /// The host's runnable threads now.
    fn runnable(&self) -> Option<u32> {
        let file = self.file.as_ref()?;
        let mut buf = [0u8; 128];
        // SAFETY: reads at most `buf.len()` bytes into `buf`.
        let n = unsafe { libc::pread(file.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        let text = std::str::from_utf8(buf.get(..usize::try_from(n).ok()?)?).ok()?;
        running_field(text)
    }
}

/// "0.52 0.58 0.59 3/467 12345" -> 3.
fn running_field(text: &str) -> Option<u32> {
    text.split_whitespace().nth(3)?.split('/').next()?.parse().ok()
}

/// The process's one `HostLoad`, its file opened at the first call (make it before any
/// seccomp filter).
pub fn get() -> &'static HostLoad {
    static LOAD: OnceLock<HostLoad> = OnceLock::new();
    LOAD.get_or_init(HostLoad::open)
}

#[cfg(test)]
mod tests {
    use super::running_field;

    #[test]
    fn the_running_count_is_the_fourth_field() {
        assert_eq!(running_field("0.52 0.58 0.59 3/467 12345\n"), Some(3));
        assert_eq!(running_field("0.00 0.01 0.05 12/1024 1"), Some(12));
        assert_eq!(running_field("0.00 0.01"), None);
        assert_eq!(running_field(""), None);
    }
}
