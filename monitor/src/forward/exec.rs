//! `execve`/`execveat` in the program itself: the monitor's part (the kernel's is
//! kernel/src/linux/exec.rs). The monitor resolves the path like open's (relative to the
//! program's directory or `dirfd`, nothing of `hrt`'s own /proc), checks the file as Linux's
//! execve does (a regular file, execute permission, not on a noexec mount), follows `#!` lines
//! as binfmt_script does (up to 5 scripts deep, then ELOOP), checks the ELF program and
//! its interpreter with the same code `hrt run` uses (program.rs, interp.rs), and keeps the
//! result as one blob (`hrt_abi::exec_blob`) that the kernel copies into guest memory. Only when
//! the kernel has passed its point of no return does `EXEC_COMMIT` close the FD_CLOEXEC
//! descriptors and make `/proc/self` describe the new program; every error before leaves the
//! old program as it was.

use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use hrt_abi::exec_blob as blob;

use super::errno::{Errno, SysResult};
use super::guest_mem::Guest;
use super::host::ptr;
use super::Forwarder;
use crate::file_bytes::FileBytes;

/// How many scripts an exec may pass through before it reaches a binary: 5, as Linux's
/// exec_binprm allows (its sixth rewrite is ELOOP).
const SCRIPT_DEPTH_MAX: usize = 5;
/// Larger program files are refused (ENOMEM): they are held whole in host memory (mapped).
const FILE_MAX: u64 = 1 << 30;
const PAGE: usize = 4096;

/// An exec the kernel is carrying out: its blob, and what `/proc/self` shows once it is done.
/// The blob is kept in its parts and written into guest memory piece by piece (`exec_read`):
/// a copy of the whole (7 MB for python3) cost a host allocation and a copy per exec.
pub struct PendingExec {
    blob: Blob,
    /// The new program's executable as `/proc/self/exe` shows it.
    exe: Vec<u8>,
    /// Its command name (`comm`, NUL-padded).
    comm: [u8; 16],
    /// Its interpreter's path (empty for a static program).
    interp: Vec<u8>,
}

/// A file read for an exec: its bytes and its host path.
struct ExecFile {
    bytes: FileBytes,
    host_path: PathBuf,
}

impl Forwarder {
    /// `EXEC_OPEN(dirfd, path, flags)`: the blob's length.
    pub(super) fn exec_open(&self, g: Guest, a: &[u64; 6]) -> SysResult<i64> {
        let (dirfd, path, flags) = (a[0], a[1], a[2]);
        if flags & !((libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW) as u64) != 0 {
            return Err(Errno::EINVAL);
        }
        let raw = g.read_path(path)?.into_bytes();
        if raw.is_empty() && flags & libc::AT_EMPTY_PATH as u64 == 0 {
            return Err(Errno::ENOENT);
        }
        // The name Linux gives the file (bprm->filename): the path, or /dev/fd/N[/path] when
        // it is relative to a descriptor.
        let at_cwd = dirfd as u32 as i32 == libc::AT_FDCWD;
        let raw_empty = raw.is_empty();
        let filename = match (raw.first(), at_cwd) {
            (Some(b'/'), _) | (Some(_), true) => raw.clone(),
            (None, _) => format!("/dev/fd/{}", dirfd as u32 as i32).into_bytes(),
            (Some(_), false) => [format!("/dev/fd/{}/", dirfd as u32 as i32).as_bytes(), &raw].concat(),
        };
        // Relative to a close-on-exec descriptor, the name is gone once the exec is done: a
        // script's interpreter could not open it (Linux: ENOENT, BINPRM_FLAGS_PATH_INACCESSIBLE).
        let inaccessible = !at_cwd && raw.first() != Some(&b'/') && self.fds().cloexec(dirfd).unwrap_or(false);
        let follow = flags & libc::AT_SYMLINK_NOFOLLOW as u64 == 0;
        let mut file = self.exec_file(dirfd, raw, follow)?;
        // Scripts: each level's argv[0] is replaced by [interpreter, argument?, its file name].
        let mut prefix: Vec<Vec<u8>> = Vec::new();
        let mut name = filename.clone();
        for depth in 0.. {
            let given = String::from_utf8_lossy(&name).into_owned();
            let head = &file.bytes[..file.bytes.len().min(256)];
            let Some(interp) = crate::script::parse(&given, head).map_err(|_| Errno(libc::ENOEXEC))? else { break };
            if depth == 0 && inaccessible {
                return Err(Errno::ENOENT);
            }
            if depth == SCRIPT_DEPTH_MAX {
                return Err(Errno::ELOOP);
            }
            let mut level = vec![interp.path.as_bytes().to_vec()];
            level.extend(interp.arg.map(String::into_bytes));
            level.push(name);
            if !prefix.is_empty() {
                prefix.remove(0);
            }
            level.append(&mut prefix);
            prefix = level;
            name = interp.path.into_bytes();
            file = self.exec_file(libc::AT_FDCWD as u32 as u64, name.clone(), true)?;
        }
        let given = String::from_utf8_lossy(&name).into_owned();
        let exe = super::paths::exe_path(&file.host_path);
        // The command name: from the file's own name for an exec of a descriptor (the file
        // that runs: a script's interpreter, as Linux's `bprm->file` is by then).
        let comm = match raw_empty {
            true => crate::host_name::comm_of_file(file.host_path.as_os_str().as_bytes()),
            false => crate::host_name::comm_of(&filename),
        };
        let mut interp_error = None;
        let program = crate::program::Program::from_bytes(&given, file.host_path, file.bytes, |p| {
            let f = self.exec_file(libc::AT_FDCWD as u32 as u64, p.as_bytes().to_vec(), true).inspect_err(|&e| {
                interp_error = Some(e);
            });
            let f = f.map_err(|e| crate::error::err!("{p}: {e:?}"))?;
            crate::interp::check(&given, p, f.bytes).inspect_err(|_| interp_error = Some(Errno(libc::ELIBBAD)))
        });
        // A missing (or unreadable) interpreter is its open's error, an invalid one ELIBBAD,
        // anything wrong with the program itself ENOEXEC, as Linux answers.
        let program = program.map_err(|_| interp_error.unwrap_or(Errno(libc::ENOEXEC)))?;
        let (overrides, omp_flags) = self.exec_omp_plan(&program);
        let interp = program.interp.as_ref().map(|i| i.path.clone()).unwrap_or_default();
        let blob = make_blob(
            &prefix,
            (&filename, &comm),
            (program.bytes, program.left_out),
            program.interp.map(|i| i.bytes),
            (&overrides, omp_flags),
        );
        let len = blob.len as i64;
        *self.exec.lock().unwrap() = Some(PendingExec { blob, exe, comm, interp });
        Ok(len)
    }

    /// `--omp` for the new image, as for the program `hrt run` started (`ExecPolicy`): the
    /// entries the kernel patches while it loads it, and the blob's `W_OMP_FLAGS`. A shared
    /// libgomp is handled when the plans for the shared libraries (made for the first image
    /// that needed them) serve the same purpose.
    fn exec_omp_plan(&self, program: &crate::program::Program) -> (Vec<u8>, u64) {
        let Some(policy) = self.exec_omp else { return (Vec::new(), 0) };
        let plan = policy.plan(program);
        let flags = match plan.library {
            None => 0,
            Some(purpose) => {
                let plans = self.library_plans.get_or_init(|| {
                    crate::overrides::LibraryPlans::new(hrt_abi::overrides::OMP_GROUP, purpose, policy.verbose)
                });
                if plans.purpose() == purpose {
                    hrt_abi::flags::OMP_LIBRARY
                } else {
                    0
                }
            }
        };
        (plan.entries, flags)
    }

    /// `EXEC_READ(addr, len)`: the pending blob into the program's memory.
    pub(super) fn exec_read(&self, g: Guest, a: &[u64; 6]) -> SysResult<i64> {
        let pending = self.exec.lock().unwrap();
        let p = pending.as_ref().ok_or(Errno::EINVAL)?;
        if a[1] != p.blob.len as u64 {
            return Err(Errno::EINVAL);
        }
        // The gaps between the parts are left as they are: the kernel stages the blob in
        // memory that reads zero.
        g.write_bytes(a[0], &p.blob.head)?;
        for BlobFile { off, bytes, left_out } in &p.blob.files {
            for (at, part) in crate::placed_image::kept_parts(bytes, left_out) {
                g.write_bytes(a[0] + (*off as u64) + at, part)?;
            }
        }
        // The program file's large segments are copied from the file (`nr::MEM_COPY`).
        if let Some(BlobFile { off, bytes, .. }) = p.blob.files.first() {
            self.placed.add_exec(a[0] + *off as u64, bytes.clone());
        }
        Ok(0)
    }

    /// `EXEC_COMMIT(argv block, len, argc)`: the exec is done.
    pub(super) fn exec_commit(&self, g: Guest, a: &[u64; 6]) -> SysResult<i64> {
        let p = self.exec.lock().unwrap().take().ok_or(Errno::EINVAL)?;
        self.placed.end_exec();
        for slot in self.fds.take_cloexec() {
            let _ = slot.close();
        }
        let block = g.read_bytes(a[0], a[1])?;
        let argv: Vec<Vec<u8>> = block.split(|&b| b == 0).take(a[2] as usize).map(<[u8]>::to_vec).collect();
        let comm: Vec<u8> = p.comm.iter().copied().take_while(|&b| b != 0).collect();
        // Other processes see the new program (host_name.rs).
        crate::host_name::set_comm(p.comm);
        crate::host_name::set_cmdline(&argv);
        // Its parent's setpgid on it is EACCES from now on (exec_marks.rs).
        super::exec_marks::mark_self();
        super::caps::exec_done();
        self.describe_exec(p.exe, argv, comm, p.interp);
        Ok(0)
    }

    /// `EXEC_ABORT`: the exec failed before its point of no return.
    pub(super) fn exec_abort(&self) -> SysResult<i64> {
        self.exec.lock().unwrap().take();
        self.placed.end_exec();
        Ok(0)
    }

    /// Opens and reads a file for an exec, checked as execve checks it.
    fn exec_file(&self, dirfd: u64, raw: Vec<u8>, follow: bool) -> SysResult<ExecFile> {
        let empty = raw.is_empty();
        let at = self.resolve(dirfd, raw, follow)?;
        // The program's synthesized /proc/self files are not executables.
        if at.synthetic.is_some() {
            return Err(Errno::EACCES);
        }
        let flags = (libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK) as libc::c_long;
        let fd = if empty {
            // AT_EMPTY_PATH: the descriptor's file, opened again for reading. Not a regular
            // file (a socket, a pipe): EACCES, as execve checks it, before the reopen (which
            // fails otherwise: ENXIO for a socket; the Linux kernel's exec selftest non-regular).
            let h = self.fds().get(dirfd)?;
            // SAFETY: fstat writes the struct we pass.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: as above, on the program's host descriptor.
            if unsafe { libc::fstat(h.raw(), &mut st) } == 0 && st.st_mode & libc::S_IFMT != libc::S_IFREG {
                // An O_PATH descriptor of a symbolic link itself: ELOOP, as the exec's open
                // refuses to follow it.
                let link = st.st_mode & libc::S_IFMT == libc::S_IFLNK;
                return Err(if link { Errno(libc::ELOOP) } else { Errno::EACCES });
            }
            let p = CString::new(format!("/proc/self/fd/{}", h.raw())).map_err(|_| Errno::ENOENT)?;
            // SAFETY: a host C string.
            unsafe { self.sys(libc::SYS_openat, &[libc::AT_FDCWD as libc::c_long, ptr(p.as_ptr()), flags])? }
        } else {
            // SAFETY: a host C string.
            unsafe {
                self.sys(libc::SYS_openat, &[at.dirfd as libc::c_long, ptr(at.path.as_ptr()), at.open_flags(flags)])?
            }
        };
        // SAFETY: a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        check_executable(&fd)?;
        self.refuse_open_for_writing(&fd)?;
        let host_path = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).map_err(|_| Errno::ENOENT)?;
        Ok(ExecFile { bytes: read_all(fd)?, host_path })
    }
}

/// The argument vector of `write_busy`'s exec: an address no process maps, so that the exec
/// always fails, after the host has looked for writers and before it reads the vector. The
/// vCPU threads' seccomp filter allows `execveat` with this vector only.
pub const PROBE_ARGV: u64 = 8;

/// Whether some process has `file` open for writing (Linux's execve answers ETXTBSY then):
/// asked of the host by an exec of the file that cannot succeed (`PROBE_ARGV`), which
/// answers ETXTBSY before it would read its arguments' EFAULT.
pub fn write_busy(file: std::os::fd::BorrowedFd<'_>) -> bool {
    // SAFETY: an exec of a descriptor we own whose argument vector is unmapped: it fails
    // without replacing this process (EFAULT at the latest); the empty path is a C string.
    let r = unsafe {
        libc::syscall(
            libc::SYS_execveat,
            file.as_raw_fd(),
            c"".as_ptr(),
            PROBE_ARGV as *const *const libc::c_char,
            std::ptr::null::<*const libc::c_char>(),
            libc::AT_EMPTY_PATH,
        )
    };
    r < 0 && Errno::last() == Errno(libc::ETXTBSY)
}

impl Forwarder {
    /// ETXTBSY if `file` is open for writing: Linux refuses to run a file open for writing by
    /// anyone. The program's own descriptors are looked at (where a program writes a file and
    /// then runs it, or fexecve's an O_RDWR one), then the host's (`write_busy`: another
    /// process; LTP's execve04 ran the file under `--children hrt`).
    fn refuse_open_for_writing(&self, file: &OwnedFd) -> SysResult<()> {
        let id = |fd: i32| {
            // SAFETY: fstat writes the struct we pass.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: as above.
            (unsafe { libc::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
        };
        let Some(wanted) = id(file.as_raw_fd()) else { return Ok(()) };
        for (_, h, _) in self.fds().snapshot() {
            if id(h.raw()) != Some(wanted) {
                continue;
            }
            // A memory file's descriptor from memfd_create is no writer to Linux (it opens the
            // file without taking write access): fexecve of one runs.
            let memfd = std::fs::read_link(format!("/proc/self/fd/{}", h.raw()))
                .is_ok_and(|p| p.as_os_str().as_bytes().starts_with(b"/memfd:"));
            // SAFETY: F_GETFL only reads the descriptor's status flags.
            let fl = unsafe { libc::fcntl(h.raw(), libc::F_GETFL) };
            if !memfd && fl >= 0 && fl & libc::O_PATH == 0 && fl & libc::O_ACCMODE != libc::O_RDONLY {
                return Err(Errno(libc::ETXTBSY));
            }
        }
        if write_busy(file.as_fd()) {
            return Err(Errno(libc::ETXTBSY));
        }
        Ok(())
    }
}

/// The checks execve makes on an opened file: a regular file (EACCES), with execute
/// permission (EACCES), not on a file system mounted noexec (EACCES).
fn check_executable(fd: &OwnedFd) -> SysResult<()> {
    // SAFETY: fstat and fstatfs write the structs we pass.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(Errno::last());
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(Errno::EACCES);
    }
    let p = CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).map_err(|_| Errno::ENOENT)?;
    // SAFETY: a host C string; access only reads it.
    if unsafe { libc::access(p.as_ptr(), libc::X_OK) } != 0 {
        return Err(Errno::last());
    }
    // SAFETY: as above.
    let mut fs: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above (glibc's fstatvfs makes an fstatfs call).
    if unsafe { libc::fstatvfs(fd.as_raw_fd(), &mut fs) } == 0 && fs.f_flag & libc::ST_NOEXEC != 0 {
        return Err(Errno::EACCES);
    }
    Ok(())
}

/// The whole file, up to the size it has now (mapped from the page cache where it is large:
/// `FileBytes`).
fn read_all(fd: OwnedFd) -> SysResult<FileBytes> {
    // SAFETY: fstat writes the struct we pass.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(Errno::last());
    }
    let size = st.st_size as u64;
    if size > FILE_MAX {
        return Err(Errno(libc::ENOMEM));
    }
    FileBytes::read(std::fs::File::from(fd), size).map_err(|e| Errno(e.raw_os_error().unwrap_or(libc::EIO)))
}

/// The blob `hrt_abi::exec_blob` describes.
/// The blob `hrt_abi::exec_blob` describes, in parts: the header, strings and overrides, then
/// the program and interpreter files at their (page-aligned) offsets; `len` bytes in all.
struct Blob {
    head: Vec<u8>,
    files: Vec<BlobFile>,
    len: usize,
}

/// A file in the blob: its offset there, its bytes, and the file ranges left out of guest
/// RAM (`placed_image`).
struct BlobFile {
    off: usize,
    bytes: std::sync::Arc<FileBytes>,
    left_out: Vec<(u64, u64)>,
}

impl Blob {
    /// The whole blob in one buffer, zeros in the gaps (what the kernel reads once staged).
    #[cfg(test)]
    fn whole(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.len];
        out[..self.head.len()].copy_from_slice(&self.head);
        for BlobFile { off, bytes, .. } in &self.files {
            out[*off..*off + bytes.len()].copy_from_slice(bytes);
        }
        out
    }
}

fn make_blob(
    prefix: &[Vec<u8>],
    (filename, comm): (&[u8], &[u8; 16]),
    (program, left_out): (std::sync::Arc<FileBytes>, Vec<(u64, u64)>),
    interp: Option<FileBytes>,
    (overrides, omp_flags): (&[u8], u64),
) -> Blob {
    let mut strings = Vec::new();
    let comm = &comm[..comm.iter().position(|&b| b == 0).unwrap_or(comm.len())];
    for s in prefix.iter().map(Vec::as_slice).chain([filename, comm]) {
        strings.extend_from_slice(s);
        strings.push(0);
    }
    let strings_off = blob::HEADER_WORDS * 8;
    let overrides_off = (strings_off + strings.len()).next_multiple_of(8);
    let program_off = (overrides_off + overrides.len()).next_multiple_of(PAGE);
    let interp_off = (program_off + program.len()).next_multiple_of(PAGE);
    let interp_len = interp.as_ref().map_or(0, |i| i.len());
    let mut header = [0u64; blob::HEADER_WORDS];
    header[blob::W_MAGIC] = blob::MAGIC;
    header[blob::W_PROGRAM_OFF] = program_off as u64;
    header[blob::W_PROGRAM_LEN] = program.len() as u64;
    header[blob::W_INTERP_OFF] = interp_off as u64;
    header[blob::W_INTERP_LEN] = interp_len as u64;
    header[blob::W_STRINGS_OFF] = strings_off as u64;
    header[blob::W_PREFIX_COUNT] = prefix.len() as u64;
    header[blob::W_STRINGS_LEN] = strings.len() as u64;
    header[blob::W_OVERRIDES_OFF] = overrides_off as u64;
    header[blob::W_OVERRIDES_LEN] = overrides.len() as u64;
    header[blob::W_OMP_FLAGS] = omp_flags;
    let mut head = vec![0u8; overrides_off + overrides.len()];
    for (i, w) in header.iter().enumerate() {
        head[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
    }
    head[strings_off..strings_off + strings.len()].copy_from_slice(&strings);
    head[overrides_off..].copy_from_slice(overrides);
    let mut files = vec![BlobFile { off: program_off, bytes: program, left_out }];
    files.extend(interp.map(|i| BlobFile { off: interp_off, bytes: std::sync::Arc::new(i), left_out: Vec::new() }));
    Blob { head, files, len: interp_off + interp_len }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(b: &[u8], w: usize) -> usize {
        u64::from_le_bytes(b[w * 8..w * 8 + 8].try_into().unwrap()) as usize
    }

    /// The parts land where the header says, with zeros between them, as the one buffer did.
    #[test]
    fn the_blob_in_parts_is_the_blob_the_header_describes() {
        let program: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8 + 1).collect();
        let interp: Vec<u8> = (0..300u32).map(|i| (i % 13) as u8 + 1).collect();
        let prefix = vec![b"/bin/sh".to_vec()];
        let b = make_blob(
            &prefix,
            (b"./script", &crate::host_name::comm_of(b"script")),
            (std::sync::Arc::new(FileBytes::Owned(program.clone())), Vec::new()),
            Some(FileBytes::Owned(interp.clone())),
            (b"ovr", 7),
        );
        let whole = b.whole();
        assert_eq!(word(&whole, blob::W_MAGIC) as u64, blob::MAGIC);
        let (p, i) = (word(&whole, blob::W_PROGRAM_OFF), word(&whole, blob::W_INTERP_OFF));
        assert_eq!((p % PAGE, i % PAGE), (0, 0));
        assert_eq!(&whole[p..p + word(&whole, blob::W_PROGRAM_LEN)], &program[..]);
        assert_eq!(&whole[i..i + word(&whole, blob::W_INTERP_LEN)], &interp[..]);
        assert_eq!(whole.len(), i + interp.len());
        let s = word(&whole, blob::W_STRINGS_OFF);
        assert_eq!(&whole[s..s + word(&whole, blob::W_STRINGS_LEN)], b"/bin/sh\0./script\0script\0");
        let o = word(&whole, blob::W_OVERRIDES_OFF);
        assert_eq!(&whole[o..o + word(&whole, blob::W_OVERRIDES_LEN)], b"ovr");
        assert_eq!(word(&whole, blob::W_OMP_FLAGS), 7);
        assert!(whole[p + program.len()..i].iter().all(|&x| x == 0), "the gap reads zero");
        // No interpreter: the blob ends at the page after the program.
        let b = make_blob(
            &[],
            (b"/x", &[0; 16]),
            (std::sync::Arc::new(FileBytes::Owned(program.clone())), Vec::new()),
            None,
            (b"", 0),
        );
        let whole = b.whole();
        assert_eq!(word(&whole, blob::W_INTERP_LEN), 0);
        assert_eq!(whole.len(), (word(&whole, blob::W_PROGRAM_OFF) + program.len()).next_multiple_of(PAGE));
    }
}
