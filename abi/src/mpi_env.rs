//! The one environment variable `hrt` adds for an MPI rank, and why: shared by the monitor
//! (a rank `hrt run` starts) and the kernel (a rank a process manager running inside the VM
//! execs, `--children hrt`).
//!
//! UCX (the transport layer under Debian's MPICH, ch4:ucx) shares a `/dev/shm` file between
//! ranks by default through `/proc/<pid>/fd/<fd>` of its creator ("proc link" mode): the peer
//! opens the creator's descriptor by number. Under `hrt` the program's descriptor numbers are
//! its own, not `hrt`'s host numbers, so that path names some other file of the other `hrt`
//! (or is refused) and the rank's start fails. With `UCX_POSIX_USE_PROC_LINK=n` UCX opens the
//! file by its name instead, which every rank can (the mapping is then shared through `hrt`'s
//! MAP_SHARED support). Added only for a program started by an MPI process manager (PMI or
//! PMIx variables present) and only when the user has not set it.

/// Variables a process manager gives every rank: Hydra and Slurm's PMI-1/PMI-2, PMIx.
const RANK_MARKERS: &[&[u8]] = &[b"PMI_RANK=", b"PMI_FD=", b"PMI_PORT=", b"PMIX_RANK="];
const PROC_LINK: &[u8] = b"UCX_POSIX_USE_PROC_LINK";

/// The variable an MPI rank gets.
pub const PROC_LINK_OFF: &[u8] = b"UCX_POSIX_USE_PROC_LINK=n";

/// Whether an environment (`NAME=value` strings) is an MPI rank's that does not choose UCX's
/// proc-link mode itself: it gets `PROC_LINK_OFF`.
pub fn wants_proc_link_off<'a>(env: impl Iterator<Item = &'a [u8]> + Clone) -> bool {
    let rank = env.clone().any(|e| RANK_MARKERS.iter().any(|m| e.starts_with(m)));
    rank && !env.into_iter().any(|e| e.starts_with(PROC_LINK) && e.get(PROC_LINK.len()) == Some(&b'='))
}
