//! `hrt run --sandbox DIR`: a Landlock file sandbox (as uhyve offers) around the threads that
//! perform the program's forwarded calls. Applied to the monitor's main thread just before the
//! vCPU threads start (they inherit it), once the monitor has opened what it needs itself (KVM,
//! the program, the kernel image): from then on files may be opened, created, written, removed
//! or truncated only under DIR, plus reading /dev/null, /dev/zero, /dev/urandom, /dev/random
//! and the time-zone files and writing /dev/null (what C libraries open on their own). Looking
//! names up, stat and readlink are not restricted by Landlock; the standard descriptors stay
//! as they were.

use std::path::Path;

use landlock::{
    path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetError, RulesetStatus, ABI,
};

use crate::error::err;
use crate::error::Result;

/// Read-only files outside DIR the program may open.
const READ_ONLY: &[&str] =
    &["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/etc/localtime", "/usr/share/zoneinfo"];

/// Restricts the calling thread (and the threads it starts later) to DIR.
pub fn restrict(dir: &Path) -> Result<()> {
    if !dir.is_dir() {
        return Err(err!("--sandbox {}: not a directory", dir.display()));
    }
    let fail = |e: RulesetError| err!("--sandbox: cannot set up Landlock: {e}");
    let abi = ABI::V5;
    let all = AccessFs::from_all(abi);
    let existing: Vec<&str> = READ_ONLY.iter().copied().filter(|p| Path::new(p).exists()).collect();
    let status = Ruleset::default()
        .handle_access(all)
        .map_err(fail)?
        .create()
        .map_err(fail)?
        .add_rules(path_beneath_rules([dir], all))
        .map_err(fail)?
        .add_rules(path_beneath_rules(existing, AccessFs::from_read(abi)))
        .map_err(fail)?
        .add_rules(path_beneath_rules(["/dev/null"], AccessFs::WriteFile))
        .map_err(fail)?
        .restrict_self()
        .map_err(fail)?;
    match status.ruleset {
        RulesetStatus::NotEnforced => Err(err!(
            "--sandbox: this host's kernel does not enforce Landlock (Linux 5.13 or later with Landlock enabled: \
             CONFIG_SECURITY_LANDLOCK and `landlock` in the lsm= boot parameter); run without --sandbox"
        )),
        RulesetStatus::PartiallyEnforced | RulesetStatus::FullyEnforced => Ok(()),
    }
}
