//! The program `hrt run` starts: checked to be an x86-64 Linux executable (static, or dynamic with a readable interpreter) before any VM
//! exists, so that mistakes get one clear line.

use std::path::{Path, PathBuf};

use goblin::elf::{header, program_header, Elf};

use crate::err;
use crate::error::Result;
use crate::kernel_image::io_reason;

const LARGE_PAGE: u64 = 2 << 20;

pub struct Program {
    /// The path as the user gave it (argv[0], AT_EXECFN).
    pub given: String,
    /// Absolute host path (readlink /proc/self/exe).
    pub host_path: PathBuf,
    pub bytes: Vec<u8>,
    /// For ET_EXEC: the 2 MiB-aligned span the program must occupy at its link address.
    pub fixed_span: Option<(u64, u64)>,
    /// Bytes of memory its segments need.
    pub mem_needed: u64,
    /// A dynamically linked program's interpreter (ld.so), loaded beside it.
    pub interp: Option<crate::interp::Interp>,
}

impl Program {
    pub fn open(given: &str) -> Result<Program> {
        let path = Path::new(given);
        let bytes = std::fs::read(path).map_err(|e| err!("{given}: {}", io_reason(&e)))?;
        if bytes.len() < 4 || &bytes[..4] != b"\x7fELF" {
            return Err(err!("{given} is not an ELF executable"));
        }
        if bytes.get(4) == Some(&1) {
            return Err(err!("{given} is a 32-bit ELF; HRT runs x86-64 (ELF64) programs"));
        }
        let elf = Elf::parse(&bytes).map_err(|e| err!("{given} is not a valid ELF file: {e}"))?;
        if elf.header.e_machine != header::EM_X86_64 {
            return Err(err!("{given} is built for {}, not x86-64", header::machine_to_str(elf.header.e_machine)));
        }
        let interp = elf.interpreter.map(|path| crate::interp::read(given, path)).transpose()?;
        let loads: Vec<_> = elf.program_headers.iter().filter(|p| p.p_type == program_header::PT_LOAD).collect();
        if loads.is_empty() {
            return Err(err!("{given} has no loadable segments"));
        }
        let lo = loads.iter().map(|p| p.p_vaddr).min().unwrap_or(0);
        let hi = loads.iter().map(|p| p.p_vaddr.saturating_add(p.p_memsz)).max().unwrap_or(0);
        let fixed_span = match elf.header.e_type {
            header::ET_EXEC => {
                let (start, end) = (lo & !(LARGE_PAGE - 1), hi.div_ceil(LARGE_PAGE) * LARGE_PAGE);
                if start < hrt_abi::layout::KERNEL_LIMIT {
                    return Err(err!(
                        "{given} is linked at {lo:#x}, inside the kernel's area below {:#x}; link it higher or build it with -static-pie",
                        hrt_abi::layout::KERNEL_LIMIT
                    ));
                }
                Some((start, end))
            }
            header::ET_DYN => None,
            _ => return Err(err!("{given} is not an executable (ELF type {})", elf.header.e_type)),
        };
        let host_path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let mem_needed = hi - lo + interp.as_ref().map_or(0, |i| i.mem_needed);
        Ok(Program { given: given.to_string(), host_path, mem_needed, fixed_span, bytes, interp })
    }
}
