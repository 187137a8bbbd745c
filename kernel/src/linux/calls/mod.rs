//! Local system calls, grouped by subject.
pub mod fork;
pub mod ids;
pub mod info;
pub mod madvise;
pub mod max_rss;
pub mod membarrier;
pub mod memory;
pub mod mremap;
pub mod numa;
pub mod prctl;
pub mod procs;
pub mod residency;
pub mod sched;
pub mod signal;
pub mod sysv_shm;
pub mod thread;
pub mod time;
