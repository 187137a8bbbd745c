//! The one environment variable `hrt` adds for an MPI rank, and why.
//!
//! UCX (the transport layer under Debian's MPICH, ch4:ucx) shares a `/dev/shm` file between
//! ranks by default through `/proc/<pid>/fd/<fd>` of its creator ("proc link" mode): the peer
//! opens the creator's descriptor by number. Under `hrt` the program's descriptor numbers are
//! its own, not `hrt`'s host numbers, so that path names some other file of the other `hrt`
//! and the rank's start fails (`mmap ... No such device`). With `UCX_POSIX_USE_PROC_LINK=n`
//! UCX opens the file by its name instead, which every rank can (the mapping is then shared
//! through `hrt`'s MAP_SHARED support). `hrt` sets it only for a program started by an MPI
//! process manager (PMI or PMIx variables present) and only when the user has not set it.

/// Variables a process manager gives every rank: Hydra and Slurm's PMI-1/PMI-2, PMIx.
const RANK_MARKERS: &[&[u8]] = &[b"PMI_RANK=", b"PMI_FD=", b"PMI_PORT=", b"PMIX_RANK="];
const PROC_LINK: &[u8] = b"UCX_POSIX_USE_PROC_LINK";

/// Adds `UCX_POSIX_USE_PROC_LINK=n` to an MPI rank's environment `envp` unless it is set;
/// returns whether it did.
pub fn adjust(envp: &mut Vec<Vec<u8>>) -> bool {
    let rank = envp.iter().any(|e| RANK_MARKERS.iter().any(|m| e.starts_with(m)));
    let set = envp.iter().any(|e| e.starts_with(PROC_LINK) && e.get(PROC_LINK.len()) == Some(&b'='));
    if !rank || set {
        return false;
    }
    envp.push([PROC_LINK, b"=n"].concat());
    true
}

#[cfg(test)]
mod tests {
    use super::adjust;

    fn env(v: &[&str]) -> Vec<Vec<u8>> {
        v.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn only_ranks_without_the_variable_get_it() {
        let mut plain = env(&["HOME=/root", "PMI_RANKS=x"]);
        assert!(!adjust(&mut plain));
        assert_eq!(plain, env(&["HOME=/root", "PMI_RANKS=x"]));
        let mut rank = env(&["PMI_FD=6", "PMI_RANK=1"]);
        assert!(adjust(&mut rank));
        assert_eq!(rank.last().unwrap(), b"UCX_POSIX_USE_PROC_LINK=n");
        let mut chosen = env(&["PMIX_RANK=0", "UCX_POSIX_USE_PROC_LINK=y"]);
        assert!(!adjust(&mut chosen));
        assert_eq!(chosen.len(), 2);
    }
}
