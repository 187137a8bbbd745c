//! `hrt run --profile`: a thread interrupts every vCPU `hz` times a second with
//! `PROFILE_VECTOR` (the kernel notes the instruction each was at, `kernel/src/linux/profile.rs`),
//! and once the program has ended the samples are read from the kernel's area and reported by
//! function (`profile_report`).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hrt_abi::channel::{PROFILE_EXECED, PROFILE_GENERATION_SHIFT, PROFILE_VECTOR};

use super::Service;
use crate::file_bytes::FileBytes;
use crate::profile_report::{Image, Symbols};
use crate::vm::vcpu::Shared;

/// The most samples per vCPU the monitor reads, whatever the guest's header says (the kernel
/// keeps as many): at most 32 MiB of the host's memory for 64 vCPUs.
const MAX_CAPACITY: u64 = 1 << 16;

/// The most executable file mappings kept (ld.so maps one or two per library), the most
/// distinct files among them (each holds a descriptor of the monitor's), and the largest file
/// read for its symbols.
const MAX_FILES: usize = 4096;
const MAX_DISTINCT_FILES: usize = 256;
const MAX_FILE_BYTES: u64 = 1 << 30;

/// What the report needs: the rate, and the images whose symbols name the samples.
pub struct ProfileSetup {
    pub hz: u32,
    pub program: Arc<FileBytes>,
    pub kernel: Vec<u8>,
    /// Executable file mappings the program made (`nr::PROFILE_FILE`).
    pub files: Mutex<Vec<MappedFile>>,
    /// The program exec'd: the samples are of the image its path names now.
    pub execed: std::sync::atomic::AtomicBool,
    /// Ticks that found a vCPU halted (not interrupted: the wake-up would cost it ~0.1 ms and
    /// change what it does), since the last exec.
    pub halted: std::sync::atomic::AtomicU64,
}

/// One executable mapping of a file: where, from which offset, and the file (a descriptor of
/// the monitor's own, read only for the report).
pub struct MappedFile {
    pub start: u64,
    pub len: u64,
    pub off: u64,
    pub name: String,
    pub file: Arc<std::fs::File>,
}

impl Service {
    /// Profiles this run (before `start`).
    pub fn profile_with(&self, setup: ProfileSetup) {
        let _ = self.profile.set(setup);
    }

    /// Starts the interrupting thread, if profiling; it installs `filter` on itself.
    pub(super) fn start_profiler(
        self: &Arc<Self>,
        filter: Option<seccompiler::BpfProgram>,
    ) -> crate::error::Result<()> {
        let Some(hz) = self.profile.get().map(|p| p.hz) else { return Ok(()) };
        let svc = self.clone();
        std::thread::Builder::new()
            .name("hrt-profile".into())
            .spawn(move || {
                if let Some(Err(e)) = filter.as_ref().map(crate::vm::seccomp::install) {
                    eprintln!("hrt: {e}");
                    return;
                }
                let period = Duration::from_secs(1) / hz;
                let mut next = Instant::now() + period;
                while !svc.stopping.load(Ordering::Relaxed) {
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                    // A late tick (the host ran something else) is not made up for.
                    next = (next + period).max(Instant::now());
                    let Some(ch) = svc.channel() else { continue };
                    if ch.header.profile_area.load(Ordering::Acquire) == 0 {
                        continue;
                    }
                    for cpu in 0..svc.cpus {
                        if ch.header.cpu_halted.get(cpu as usize).is_some_and(|h| h.load(Ordering::Relaxed) != 0) {
                            if let Some(p) = svc.profile.get() {
                                p.halted.fetch_add(1, Ordering::Relaxed);
                            }
                            continue;
                        }
                        let _ = svc.send(cpu, PROFILE_VECTOR);
                    }
                }
            })
            .map_err(|e| crate::error::err!("cannot start the profiling thread: {e}"))?;
        Ok(())
    }

    /// `nr::PROFILE_FILE` (a monitor operation or a hypercall): keeps the file the program
    /// mapped executable at `[args[2], args[2] + args[3])` from offset args[1] of its
    /// descriptor args[0], to name the samples there.
    pub fn profile_file(&self, shared: &Shared, args: &[u64]) -> i64 {
        let Some(setup) = self.profile.get() else { return 0 };
        if args[0] == PROFILE_EXECED {
            // The old image's libraries are gone; the program is the file it exec'd.
            // (Its path is known once the exec is committed, after the load: read at the end.)
            setup.files.lock().unwrap_or_else(|e| e.into_inner()).clear();
            setup.execed.store(true, Ordering::Relaxed);
            setup.halted.store(0, Ordering::Relaxed);
            return 0;
        }
        let Some(host) = shared.forwarder.as_ref().and_then(|f| f.host_fd(args[0])) else {
            return -(libc::EBADF as i64);
        };
        let mut files = setup.files.lock().unwrap_or_else(|e| e.into_inner());
        if files.len() >= MAX_FILES {
            return 0;
        }
        let name = std::fs::read_link(format!("/proc/self/fd/{}", host.raw()))
            .map(|p| p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|_| format!("fd {}", args[0]));
        // The same file again (its other segments): one descriptor for all.
        let same = files.iter().find(|f| f.name == name).map(|f| f.file.clone());
        let file = match same {
            Some(f) => f,
            None if distinct_files(&files) >= MAX_DISTINCT_FILES => return 0,
            None => {
                // SAFETY: dup of a descriptor the forwarder keeps open; the copy is ours.
                let fd = unsafe { libc::fcntl(host.raw(), libc::F_DUPFD_CLOEXEC, 0) };
                if fd < 0 {
                    return 0;
                }
                // SAFETY: `fd` is a fresh descriptor nobody else owns.
                Arc::new(unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) })
            }
        };
        files.push(MappedFile { start: args[2], len: args[3], off: args[1], name, file });
        0
    }

    /// Prints the profile (the program has ended); nothing if this run was not profiled.
    pub fn report_profile(&self, shared: &Shared) {
        let ram = &shared.ram;
        let (Some(setup), Some(ch)) = (self.profile.get(), self.channel()) else { return };
        let area = ch.header.profile_area.load(Ordering::Acquire);
        let capacity = ch.header.profile_capacity.load(Ordering::Relaxed).min(MAX_CAPACITY);
        let part = (capacity + 1) * 8;
        let Some(ptr) = (area != 0).then(|| ram.host_ptr(area, part * self.cpus as u64)).flatten() else {
            eprintln!("hrt: profile: the kernel kept no samples");
            return;
        };
        let generation = ch.header.profile_generation.load(Ordering::Relaxed);
        let (mut samples, mut dropped) = (Vec::new(), 0);
        for cpu in 0..self.cpus as u64 {
            // SAFETY: `host_ptr` checked that the whole area lies in guest RAM, which stays
            // mapped while the monitor runs; the guest has stopped (and its words are only
            // numbers to us).
            unsafe {
                let words = ptr.add((cpu * part) as usize) as *const u64;
                let word = words.read_volatile();
                // A CPU that took no sample since the last exec still counts an older image's.
                let taken = if word >> PROFILE_GENERATION_SHIFT == generation {
                    word & ((1 << PROFILE_GENERATION_SHIFT) - 1)
                } else {
                    0
                };
                let kept = taken.min(capacity);
                dropped += taken - kept;
                samples.extend((0..kept).map(|i| words.add(1 + i as usize).read_volatile()));
            }
        }
        let execed = setup
            .execed
            .load(Ordering::Relaxed)
            .then(|| shared.forwarder.as_ref().map(|f| String::from_utf8_lossy(&f.exe()).into_owned()))
            .flatten();
        let program = match &execed {
            Some(path) => match FileBytes::read_path(path) {
                Ok(bytes) => Arc::new(bytes),
                Err(e) => {
                    eprintln!("hrt: profile: cannot read {path}, which the program exec'd, for its symbols: {e}");
                    Arc::new(FileBytes::from(Vec::new()))
                }
            },
            None => setup.program.clone(),
        };
        let images = images(setup, &program, &ch.header);
        let vdso = (ch.header.main_stack[2].load(Ordering::Relaxed), ch.header.main_stack[3].load(Ordering::Relaxed));
        // A halted vCPU's ticks, counted without interrupting it, as samples of their own.
        samples
            .extend(std::iter::repeat_n(crate::profile_report::HALTED, setup.halted.load(Ordering::Relaxed) as usize));
        let mut lines = crate::profile_report::report(&samples, dropped, setup.hz, self.cpus, &images, vdso);
        if let Some(path) = execed {
            lines.insert(1, format!("hrt: (the program exec'd {path}: only the samples taken since, of that image)"));
        }
        for line in lines {
            eprintln!("{line}");
        }
    }
}

/// How many descriptors the mappings in `files` hold.
fn distinct_files(files: &[MappedFile]) -> usize {
    let mut held: Vec<*const std::fs::File> = files.iter().map(|f| Arc::as_ptr(&f.file)).collect();
    held.sort();
    held.dedup();
    held.len()
}

/// The images that name the samples, in the order they are tried: the kernel, the program,
/// its interpreter, the files it mapped executable.
fn images(setup: &ProfileSetup, program: &[u8], header: &hrt_abi::channel::ChannelHeader) -> Vec<Image> {
    let mut images = vec![
        Image { label: "kernel".into(), symbols: Symbols::of(&setup.kernel, 0) },
        Image {
            label: String::new(),
            symbols: Symbols::of(program, header.profile_program_base.load(Ordering::Relaxed)),
        },
    ];
    let interp_base = header.profile_interp_base.load(Ordering::Relaxed);
    let interp = goblin::elf::Elf::parse(program).ok().and_then(|e| e.interpreter.map(str::to_string));
    if let (Some(path), true) = (interp, interp_base != 0) {
        if let Ok(bytes) = FileBytes::read_path(&path) {
            let label = path.rsplit('/').next().unwrap_or(&path).to_string();
            images.push(Image { label, symbols: Symbols::of(&bytes, interp_base) });
        }
    }
    let files = setup.files.lock().unwrap_or_else(|e| e.into_inner());
    let mut read: Vec<(String, Arc<FileBytes>)> = Vec::new();
    for f in files.iter() {
        let bytes = match read.iter().find(|(n, _)| *n == f.name) {
            Some((_, b)) => b.clone(),
            None => {
                let Some(b) = f.file.try_clone().ok().and_then(|file| {
                    let len = file.metadata().ok()?.len();
                    (len <= MAX_FILE_BYTES).then(|| FileBytes::read(file, len).ok()).flatten()
                }) else {
                    continue;
                };
                let b = Arc::new(b);
                read.push((f.name.clone(), b.clone()));
                b
            }
        };
        let symbols = Symbols::of_mapping(&bytes, f.start, f.len, f.off);
        images.push(Image { label: f.name.clone(), symbols });
    }
    images
}
