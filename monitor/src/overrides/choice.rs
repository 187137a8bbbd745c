//! The `--omp` decision for one program image: the first program `hrt run` starts, and every
//! image the program later execs (`forward::exec`), which gets the same choice.

use super::{Decision, LibraryUse, OmpChoice};
use crate::program::Program;

/// What `--omp` gives a program image: the entries the kernel patches while it loads it, and
/// what to do with its shared libgomp when ld.so maps it.
pub struct OmpPlan {
    pub entries: Vec<u8>,
    pub library: Option<LibraryUse>,
}

/// The plan for `program`. `one_ring`: the kernel and the program run in one ring (the
/// kernel's functions can only be called from the program then). `packed`: the vCPUs
/// outnumber the host's CPUs and threads are packed on as many (`--overcommit pack`); a program
/// that keeps its libgomp then gets its spin sites. Err(why) when `--omp kernel` cannot
/// replace the program's libgomp.
pub fn for_program(
    choice: OmpChoice,
    program: &Program,
    one_ring: bool,
    packed: bool,
    verbose: bool,
) -> Result<OmpPlan, String> {
    if choice == OmpChoice::Libgomp {
        if verbose {
            eprintln!("hrt: --omp libgomp: {}: the program runs on its own OpenMP runtime", program.given);
        }
        return Ok(own_runtime(program, packed, verbose));
    }
    let decision = if !one_ring {
        Decision::Skip(String::from(
            "the kernel and the program run in different rings (see --app-ring, --kernel-ring)",
        ))
    } else {
        // The program's environment is hrt's (but under --clear-env, where ld.so then finds
        // fewer libraries than this looks at: the check only errs on the side of libgomp).
        let ld_path = std::env::var("LD_LIBRARY_PATH").ok();
        // A libgomp that one of the program's libraries loads (ImageMagick's libMagickCore,
        // OpenBLAS's OpenMP build) is overridden too: `--omp auto` looks at the libraries
        // loaded at start, `--omp kernel` also stands ready for one opened later, at the cost
        // of a look at every file each dynamic program maps.
        let reach = match choice {
            OmpChoice::Kernel => super::Reach::Everything,
            _ => super::Reach::StartLibraries,
        };
        super::plan_omp(&program.bytes, Some((&program.host_path, ld_path.as_deref())), reach)
    };
    match decision {
        Decision::Apply(entries) => {
            let functions = entries.iter().filter(|e| e.kind == hrt_abi::overrides::KIND_OVERRIDE).count();
            if verbose && functions > 0 {
                eprintln!(
                    "hrt: --omp: {}: the kernel's OpenMP runtime replaces libgomp ({functions} functions)",
                    program.given
                );
            } else if verbose {
                eprintln!("hrt: --omp: {}: no OpenMP functions to replace", program.given);
            }
            Ok(OmpPlan { entries: super::encode(&entries), library: None })
        }
        Decision::Library => {
            if verbose {
                eprintln!(
                    "hrt: --omp: {}: the kernel's OpenMP runtime replaces the shared libgomp when it is loaded",
                    program.given
                );
            }
            Ok(OmpPlan {
                entries: Vec::new(),
                library: Some(LibraryUse::Override { required: choice == OmpChoice::Kernel }),
            })
        }
        Decision::Skip(why) if choice == OmpChoice::Kernel => Err(why),
        Decision::Skip(why) => {
            if verbose {
                let own = match super::yielding_runtime::libomp_in(&program.bytes) {
                    Some(_) => "OpenMP runtime, LLVM's libomp",
                    None if why.contains("another OpenMP runtime") => "OpenMP runtime",
                    None => "libgomp",
                };
                eprintln!("hrt: --omp auto: {}: the program runs on its own {own}: {why}", program.given);
            }
            Ok(own_runtime(program, packed, verbose))
        }
    }
}

/// A program on its own libgomp: with more vCPUs than host CPUs, the places where its libgomp
/// chooses its spin count (`spin_sites`), for the kernel to make it count the host's CPUs as it
/// would natively; a dynamically linked program's are found when ld.so maps its libgomp.
pub fn own_runtime(program: &Program, packed: bool, verbose: bool) -> OmpPlan {
    if !packed {
        return OmpPlan { entries: Vec::new(), library: None };
    }
    if program.interp.is_some() {
        return OmpPlan { entries: Vec::new(), library: Some(LibraryUse::SpinTests) };
    }
    let entries = match super::spin_sites::plan(&program.bytes) {
        Ok(entries) => {
            if verbose {
                eprintln!("hrt: the program's libgomp: {} spin test(s) will count the host's CPUs", entries.len() - 1);
            }
            super::encode(&entries)
        }
        Err(why) => {
            if verbose {
                eprintln!("hrt: the program's libgomp keeps its spin as it is: {why}");
            }
            Vec::new()
        }
    };
    OmpPlan { entries, library: None }
}

/// `--omp` for the images the program execs. `--omp kernel` acts as `--omp auto` there: a
/// program the first one runs (a shell, `env`, a job launcher) need not be an OpenMP program,
/// and the exec cannot be refused for it; where an OpenMP program keeps its own runtime, a line
/// on stderr says why.
#[derive(Clone, Copy, Debug)]
pub struct ExecPolicy {
    pub choice: OmpChoice,
    pub one_ring: bool,
    pub packed: bool,
    pub verbose: bool,
}

impl ExecPolicy {
    pub fn plan(&self, program: &Program) -> OmpPlan {
        match for_program(self.choice, program, self.one_ring, self.packed, self.verbose) {
            Ok(plan) => plan,
            Err(why) => {
                eprintln!("hrt: --omp kernel: {}: {why}; it runs on its own libgomp", program.given);
                own_runtime(program, self.packed, self.verbose)
            }
        }
    }
}
