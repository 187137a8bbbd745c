//! The one environment variable `hrt` adds for an MPI rank it starts (`hrt_abi::mpi_env` says
//! which and why; the kernel adds it to a rank exec'd inside the VM).

/// Adds `UCX_POSIX_USE_PROC_LINK=n` to an MPI rank's environment `envp` unless it is set;
/// returns whether it did.
pub fn adjust(envp: &mut Vec<Vec<u8>>) -> bool {
    if !hrt_abi::mpi_env::wants_proc_link_off(envp.iter().map(Vec::as_slice)) {
        return false;
    }
    envp.push(hrt_abi::mpi_env::PROC_LINK_OFF.to_vec());
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
