//! The interpreter of a dynamically linked program (its PT_INTERP, e.g.
//! /lib64/ld-linux-x86-64.so.2): read from the host file system and checked here, so the
//! kernel's loader can map it beside the program and start there, as Linux's execve does.

use goblin::elf::{header, program_header, Elf};

use crate::error::{Error, Result, CANNOT_EXECUTE, NOT_FOUND};
use crate::file_bytes::FileBytes;
use crate::kernel_image::io_reason;

/// An interpreter that exists but cannot be used: 126, as for the program itself.
macro_rules! refuse {
    ($($arg:tt)*) => { Error::with_status(format!($($arg)*), CANNOT_EXECUTE) };
}

pub struct Interp {
    pub bytes: FileBytes,
    /// Its path as the program names it (its `/proc/self/maps` lines show it).
    pub path: Vec<u8>,
    /// Bytes of memory its segments span.
    pub mem_needed: u64,
}

/// Reads and checks the interpreter `path` that the program `given` names.
pub fn read(given: &str, path: &str) -> Result<Interp> {
    // A missing interpreter is "not found" (127), as a shell reports execve's ENOENT.
    let bytes = FileBytes::read_path(path).map_err(|e| {
        let status = if e.kind() == std::io::ErrorKind::NotFound { NOT_FOUND } else { CANNOT_EXECUTE };
        Error::with_status(
            format!("{given} needs the interpreter {path}, which cannot be read: {}", io_reason(&e)),
            status,
        )
    })?;
    check(given, path, bytes)
}

/// Checks the interpreter file `bytes` (`path`, named by the program `given`).
pub fn check(given: &str, path: &str, bytes: FileBytes) -> Result<Interp> {
    let elf =
        Elf::parse(&bytes).map_err(|e| refuse!("{given}: its interpreter {path} is not a valid ELF file: {e}"))?;
    if !elf.is_64 || elf.header.e_machine != header::EM_X86_64 {
        return Err(refuse!("{given}: its interpreter {path} is not an x86-64 ELF64 file"));
    }
    // Linux loads an ET_EXEC interpreter at its link address too, but every ld.so is ET_DYN;
    // the kernel places this one anywhere.
    if elf.header.e_type != header::ET_DYN {
        return Err(refuse!(
            "{given}: its interpreter {path} is not position-independent (ELF type {})",
            elf.header.e_type
        ));
    }
    let loads: Vec<_> = elf.program_headers.iter().filter(|p| p.p_type == program_header::PT_LOAD).collect();
    let lo = loads
        .iter()
        .map(|p| p.p_vaddr)
        .min()
        .ok_or_else(|| refuse!("{given}: its interpreter {path} has no loadable segments"))?;
    let hi = loads.iter().map(|p| p.p_vaddr.saturating_add(p.p_memsz)).max().unwrap_or(0);
    if loads.iter().any(|p| p.p_offset.saturating_add(p.p_filesz) > bytes.len() as u64 || p.p_filesz > p.p_memsz) {
        return Err(refuse!("{given}: its interpreter {path} has a segment outside the file"));
    }
    Ok(Interp { mem_needed: hi - lo, bytes, path: path.as_bytes().to_vec() })
}
