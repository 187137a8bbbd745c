//! The program `hrt run` starts: checked to be an x86-64 Linux executable (static, or dynamic
//! with a readable interpreter) before any VM exists, so that mistakes get one clear line.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use goblin::elf::{header, program_header, Elf};

use crate::error::{Error, Result, CANNOT_EXECUTE, NOT_FOUND};
use crate::file_bytes::FileBytes;
use crate::kernel_image::io_reason;

/// sizeof(Elf64_Phdr): Linux refuses any other e_phentsize (ENOEXEC).
const PHDR_SIZE: u64 = 56;
/// Linux refuses a program-header table larger than this (`elf_read_phdrs`).
const PHDRS_MAX: u64 = 65536;

/// A program that exists but cannot be run: exit status 126, as a shell reports it.
macro_rules! refuse {
    ($($arg:tt)*) => { Error::with_status(format!($($arg)*), CANNOT_EXECUTE) };
}

/// Reads the program file as execve would accept it: it must exist (127 otherwise), be a
/// regular file with execute permission (Linux: EACCES) — checked before opening, so a FIFO
/// without a writer or a device never blocks or streams — and it is read up to the size it had
/// when opened (`/dev/zero` is refused, not read until the host runs out of memory).
fn read_program(given: &str, path: &Path) -> Result<FileBytes> {
    let io_err = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => Error::with_status(format!("{given}: {}", io_reason(&e)), NOT_FOUND),
        _ if e.raw_os_error() == Some(libc::ENOTDIR) => {
            Error::with_status(format!("{given}: {}", io_reason(&e)), NOT_FOUND)
        }
        _ => refuse!("{given}: {}", io_reason(&e)),
    };
    let meta = std::fs::metadata(path).map_err(io_err)?;
    let not_regular = |t: std::fs::FileType| {
        let what = if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        refuse!("{given}: Permission denied ({what}, not a regular file)")
    };
    if !meta.file_type().is_file() {
        return Err(not_regular(meta.file_type()));
    }
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| refuse!("{given}: invalid path"))?;
    // SAFETY: a C string; access only reads it.
    if unsafe { libc::access(c.as_ptr(), libc::X_OK) } != 0 {
        return Err(refuse!("{given}: Permission denied (no execute permission)"));
    }
    // O_NONBLOCK: should the file have been replaced by a FIFO since, opening does not block.
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(io_err)?;
    let meta = file.metadata().map_err(io_err)?;
    if !meta.file_type().is_file() {
        return Err(not_regular(meta.file_type()));
    }
    // A file some process has open for writing does not run (a shell says "Text file busy").
    if crate::forward::write_busy(std::os::fd::AsFd::as_fd(&file)) {
        return Err(refuse!("{given}: Text file busy"));
    }
    FileBytes::read(file, meta.len()).map_err(io_err)
}

/// The checks Linux's ELF loader makes on the program headers (ENOEXEC, "Exec format error"),
/// and that the kernel's loader relies on: a wrong e_phentsize, a table or a segment outside
/// the file, a segment whose file part is larger than its memory.
fn check_headers(given: &str, bytes: &[u8], elf: &Elf) -> Result<()> {
    let h = &elf.header;
    let invalid = |why: String| refuse!("{given} is not a valid executable (Exec format error): {why}");
    if h.e_phentsize as u64 != PHDR_SIZE {
        return Err(invalid(format!("program headers of {} bytes, not {PHDR_SIZE}", h.e_phentsize)));
    }
    let table = h.e_phnum as u64 * PHDR_SIZE;
    if table == 0 || table > PHDRS_MAX || h.e_phoff.checked_add(table).is_none_or(|end| end > bytes.len() as u64) {
        return Err(invalid(format!("{} program headers at offset {:#x}, outside the file", h.e_phnum, h.e_phoff)));
    }
    for p in elf.program_headers.iter().filter(|p| p.p_type == program_header::PT_LOAD) {
        if p.p_offset.checked_add(p.p_filesz).is_none_or(|end| end > bytes.len() as u64) {
            return Err(invalid(format!("a segment at file offset {:#x} lies outside the file", p.p_offset)));
        }
        if p.p_filesz > p.p_memsz || p.p_vaddr.checked_add(p.p_memsz).is_none() {
            return Err(invalid(format!("a segment at {:#x} has inconsistent sizes", p.p_vaddr)));
        }
    }
    Ok(())
}

const LARGE_PAGE: u64 = 2 << 20;

pub struct Program {
    /// The path as the user gave it (argv[0], AT_EXECFN).
    pub given: String,
    /// Absolute host path (readlink /proc/self/exe).
    pub host_path: PathBuf,
    pub bytes: std::sync::Arc<FileBytes>,
    /// File ranges the kernel's loader never reads from the placed file (`placed_image`).
    pub left_out: Vec<(u64, u64)>,
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
        let bytes = read_program(given, path)?;
        let host_path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        Program::from_bytes(given, host_path, bytes, |interp| crate::interp::read(given, interp))
    }

    /// Checks the file `bytes` (read from `host_path`) as an x86-64 executable, as Linux's ELF
    /// loader would; `read_interp` reads and checks the interpreter a dynamic program names.
    /// Shared by `hrt run` and the program's own execve (forward/exec.rs).
    pub fn from_bytes(
        given: &str,
        host_path: PathBuf,
        bytes: FileBytes,
        read_interp: impl FnOnce(&str) -> Result<crate::interp::Interp>,
    ) -> Result<Program> {
        if bytes.len() < 4 || &bytes[..4] != b"\x7fELF" {
            return Err(refuse!("{given} is not an ELF executable"));
        }
        if bytes.get(4) == Some(&1) {
            return Err(refuse!("{given} is a 32-bit ELF; HRT runs x86-64 (ELF64) programs"));
        }
        // The headers only: the symbol tables are not the loader's business (`elf_headers`).
        let elf =
            crate::elf_headers::headers(&bytes, true).map_err(|e| refuse!("{given} is not a valid ELF file: {e}"))?;
        if elf.header.e_machine != header::EM_X86_64 {
            return Err(refuse!("{given} is built for {}, not x86-64", header::machine_to_str(elf.header.e_machine)));
        }
        check_headers(given, &bytes, &elf)?;
        let interp = elf.interpreter.map(read_interp).transpose()?;
        let loads: Vec<_> = elf.program_headers.iter().filter(|p| p.p_type == program_header::PT_LOAD).collect();
        if loads.is_empty() {
            return Err(refuse!("{given} has no loadable segments"));
        }
        let lo = loads.iter().map(|p| p.p_vaddr).min().unwrap_or(0);
        let hi = loads.iter().map(|p| p.p_vaddr.saturating_add(p.p_memsz)).max().unwrap_or(0);
        let fixed_span = match elf.header.e_type {
            header::ET_EXEC => {
                let (start, end) = (lo & !(LARGE_PAGE - 1), hi.div_ceil(LARGE_PAGE) * LARGE_PAGE);
                if start < hrt_abi::layout::KERNEL_LIMIT {
                    return Err(refuse!(
                        "{given} is linked at {lo:#x}, inside the kernel's area below {:#x}; link it higher or build it with -static-pie",
                        hrt_abi::layout::KERNEL_LIMIT
                    ));
                }
                Some((start, end))
            }
            header::ET_DYN => None,
            _ => return Err(refuse!("{given} is not an executable (ELF type {})", elf.header.e_type)),
        };
        let mem_needed = hi - lo + interp.as_ref().map_or(0, |i| i.mem_needed);
        let left_out = crate::placed_image::left_out(&elf, bytes.len() as u64);
        drop(elf);
        let bytes = std::sync::Arc::new(bytes);
        Ok(Program { given: given.to_string(), host_path, mem_needed, fixed_span, bytes, left_out, interp })
    }
}
