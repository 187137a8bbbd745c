//! Applies the function overrides the monitor chose (`hrt_abi::overrides`): each overridden
//! function of the program gets a jump to the kernel's implementation over its first bytes
//! (see `plan`), and each import is handed to the group that needs it. Done while the program's
//! segments are being loaded, before any of its code runs. All or nothing: if any entry cannot
//! be applied (the kernel lacks the function, no jump fits), none is.

use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use hrt_abi::overrides::{self as abi, Entry};

use crate::sync::SpinLock;

/// The block of entries the monitor placed for the program at boot (`BootInfo::overrides`).
pub fn boot_entries(boot: &hrt_abi::BootInfo) -> &'static [u8] {
    let r = boot.overrides;
    if r.size == 0 {
        return &[];
    }
    let ptr = crate::mem::phys_to_virt(r.base) as *const u8;
    // SAFETY: the monitor placed the block there and reserved the range for good.
    unsafe { core::slice::from_raw_parts(ptr, r.size as usize) }
}

/// The running program's `hrt_abi::flags::OMP_LIBRARY` and `OMP_REQUIRED` bits: whether its
/// shared libgomp is handled when ld.so maps it (`apply_file`), and whether that must succeed.
/// From the boot flags for the first program, from the exec blob for a program it execs.
static LIBRARY_MODE: AtomicU64 = AtomicU64::new(0);

/// The running program's environment strings as its image started with them, NUL-separated:
/// the kernel's OpenMP runtime reads its `OMP_*` variables when it is first switched on, which
/// for a shared libgomp is when ld.so maps it.
static PROGRAM_ENV: SpinLock<Vec<u8>> = SpinLock::new(Vec::new());

/// A new program image (at boot, or the program's own execve): its environment strings and
/// its library mode (see `LIBRARY_MODE`).
pub fn set_program(env: &[&[u8]], library_mode: u64) {
    use hrt_abi::flags;
    let mut block = Vec::with_capacity(env.iter().map(|e| e.len() + 1).sum());
    for e in env {
        block.extend_from_slice(e);
        block.push(0);
    }
    *PROGRAM_ENV.lock() = block;
    LIBRARY_MODE.store(library_mode & (flags::OMP_LIBRARY | flags::OMP_REQUIRED), Ordering::Relaxed);
}

/// Whether the running program's shared libgomp is handled when it is mapped.
pub fn library_mode_on() -> bool {
    LIBRARY_MODE.load(Ordering::Relaxed) & hrt_abi::flags::OMP_LIBRARY != 0
}

/// Whether the part of file `fd` a program maps executable may have entries for
/// `apply_file`: most files have none, and are asked through the channel (a few microseconds),
/// where `apply_file`'s hypercall is a VM exit on PVM and the range's protections reset for
/// the patches cost more (a program mapping 207 libraries started ~0.5 ms a library later).
pub fn file_may_have_entries(fd: u64, off: u64, len: u64) -> bool {
    library_mode_on()
        && crate::linux::syscall::forward(hrt_abi::process::FILE_ENTRY_COUNT, [fd, off, len, 0, 0, 0]) != 0
}

/// Entries as the monitor encodes them (`overrides::encode` there).
fn decode(bytes: &[u8]) -> impl Iterator<Item = Entry> + '_ {
    bytes.chunks_exact(core::mem::size_of::<Entry>()).map(|b| Entry {
        addr: u64::from_le_bytes(b[0..8].try_into().unwrap()),
        size: u32::from_le_bytes(b[8..12].try_into().unwrap()),
        index: u16::from_le_bytes(b[12..14].try_into().unwrap()),
        kind: b[14],
        group: b[15],
    })
}

/// The kernel's function for override `e`.
fn target(e: &Entry) -> Option<u64> {
    let group = abi::GROUPS.get(e.group as usize)?;
    let name = group.overrides.get(e.index as usize)?;
    match e.group {
        abi::OMP_GROUP => omp_runtime().and_then(|r| (r.entry_point)(name)),
        _ => None,
    }
}

/// The `jmp rel32` from `site` to `to`, if in reach.
fn jump(site: u64, to: u64) -> Option<[u8; 5]> {
    let rel = i32::try_from(to as i64 - (site as i64 + 5)).ok()?;
    let r = rel.to_le_bytes();
    Some([0xe9, r[0], r[1], r[2], r[3]])
}

/// Bytes of `jmp *0(%rip)` followed by the 8-byte target: reaches anywhere.
const FAR_LEN: u64 = 14;

fn far_jump(to: u64) -> Vec<u8> {
    let mut code = vec![0xff, 0x25, 0, 0, 0, 0];
    code.extend_from_slice(&to.to_le_bytes());
    code
}

/// The code to write: (address, bytes), for every override. A function in reach of the kernel
/// (the program lies within 2 GiB of it, as a non-PIE program does) gets a `jmp rel32`; one
/// out of reach gets a far jump if it has room, and the rest of its body (dead once it is
/// overridden) holds far jumps for the small functions out of reach, which `jmp rel32` there.
fn plan(entries: &[Entry], bias: u64, lo: u64, hi: u64) -> Result<Vec<(u64, Vec<u8>)>, &'static str> {
    let mut writes = Vec::new();
    let mut spare: Vec<(u64, u64)> = Vec::new();
    let mut small: Vec<(u64, u64)> = Vec::new();
    for e in entries {
        let site = bias.wrapping_add(e.addr);
        if site < lo || site.saturating_add(e.size as u64) > hi || e.size < abi::PATCH_LEN {
            return Err("an override lies outside the program");
        }
        if e.kind != abi::KIND_OVERRIDE {
            continue;
        }
        let to = target(e).ok_or("an override names a function the kernel does not have")?;
        if let Some(code) = jump(site, to) {
            writes.push((site, code.to_vec()));
        } else if e.size as u64 >= FAR_LEN {
            writes.push((site, far_jump(to)));
            if e.size as u64 >= 2 * FAR_LEN {
                spare.push((site + FAR_LEN, site + e.size as u64));
            }
        } else {
            small.push((site, to));
        }
    }
    for (site, to) in small {
        let slot = spare.iter_mut().find(|(a, b)| *b - *a >= FAR_LEN && jump(site, *a).is_some());
        let Some(slot) = slot else {
            return Err("an overridden function is out of the kernel's reach");
        };
        let at = slot.0;
        slot.0 += FAR_LEN;
        writes.push((at, far_jump(to)));
        writes.push((site, jump(site, at).unwrap_or([0xcc; 5]).to_vec()));
    }
    Ok(writes)
}

/// Applies the overrides `block` (encoded entries) to the program loaded `bias` bytes above its
/// link addresses, whose loaded span is `[lo, hi)`. Returns how many functions now jump into
/// the kernel.
pub fn apply(block: &[u8], bias: u64, lo: u64, hi: u64) -> Result<usize, &'static str> {
    if block.is_empty() {
        return Ok(0);
    }
    let list: Vec<Entry> = decode(block).collect();
    if list.iter().any(|e| matches!(e.kind, abi::KIND_SPIN_SITE | abi::KIND_SPIN_CPUS)) {
        // The program keeps its libgomp (the monitor sends no functions then).
        let host = crate::sched::placement_cpus();
        if host < crate::cpu::count() {
            super::spin_throttle::apply(&list, bias, lo, hi, host);
        }
        return Ok(0);
    }
    write(&list, bias, lo, hi)
}

/// Whether the block names functions to redirect (not only libgomp's spin tests).
pub fn redirects_functions(block: &[u8]) -> bool {
    decode(block).any(|e| matches!(e.kind, abi::KIND_OVERRIDE | abi::KIND_IMPORT))
}

/// Patches the functions `list` names (at `bias` + their address, all in `[lo, hi)`, which
/// nothing runs yet and which is still writable) and hands over the imports; returns how many
/// functions now jump into the kernel.
fn write(list: &[Entry], bias: u64, lo: u64, hi: u64) -> Result<usize, &'static str> {
    let writes = plan(list, bias, lo, hi)?;
    for (at, code) in &writes {
        // SAFETY: inside the freshly copied code (checked by `plan`), which nothing runs yet.
        unsafe { core::ptr::copy_nonoverlapping(code.as_ptr(), *at as *mut u8, code.len()) };
    }
    let mut count = 0;
    for e in list {
        match e.kind {
            abi::KIND_OVERRIDE => count += 1,
            abi::KIND_IMPORT if e.group == abi::OMP_GROUP => {
                if let Some(r) = omp_runtime() {
                    (r.set_import)(e.index as usize, bias + e.addr);
                }
            }
            _ => {}
        }
    }
    Ok(count)
}

/// Room for the entries of one mapped file (libgomp has about 130 overridden functions).
const FILE_ENTRIES_MAX: usize = 512;

/// A dynamically linked program mapped `[start, start + len)` of file descriptor `fd` from
/// file offset `off`, executable, and the contents are in place but not yet protected: asks
/// the monitor which functions in that part of the file to override or import
/// (`nr::FILE_OVERRIDES`), and applies them; or, for a program that keeps its shared libgomp
/// on more vCPUs than host CPUs, which of its spin tests to rewrite (`spin_throttle`). All or nothing for the file: when the library
/// cannot be overridden, `--omp kernel` stops the program; `--omp auto` leaves it as it is.
pub fn apply_file(fd: u64, off: u64, start: u64, len: u64) {
    use hrt_abi::flags;
    let mode = LIBRARY_MODE.load(Ordering::Relaxed);
    if mode & flags::OMP_LIBRARY == 0 {
        return;
    }
    let buf = vec![0u8; FILE_ENTRIES_MAX * core::mem::size_of::<Entry>()];
    let phys = crate::mem::virt_to_phys(buf.as_ptr());
    let n = crate::arch::hypercall::call(hrt_abi::nr::FILE_OVERRIDES, &[fd, off, len, phys, buf.len() as u64]);
    let result = match n {
        0 => return,
        n if n < 0 => Err("the monitor could not override it"),
        n => {
            let list: Vec<Entry> = decode(&buf[..n as usize * core::mem::size_of::<Entry>()]).collect();
            if list.iter().any(|e| matches!(e.kind, abi::KIND_SPIN_SITE | abi::KIND_SPIN_CPUS)) {
                // The program keeps its shared libgomp (the monitor sends no functions then).
                let host = crate::sched::placement_cpus();
                if host < crate::cpu::count() {
                    super::spin_throttle::apply(&list, start.wrapping_sub(off), start, start + len, host);
                }
                return;
            }
            write(&list, start.wrapping_sub(off), start, start + len)
        }
    };
    match result {
        Ok(0) => {}
        Ok(count) => {
            start_runtime();
            kinfo!("hrt: {count} functions of the shared libgomp run on the kernel's OpenMP runtime");
        }
        Err(why) if mode & flags::OMP_REQUIRED != 0 => {
            crate::kprintln!("hrt: --omp kernel: the shared libgomp: {why}; run it with --omp libgomp");
            crate::linux::process::exit_program(1);
        }
        Err(why) => kinfo!("hrt: --omp auto: the program runs on its shared libgomp: {why}"),
    }
}

/// Gives the kernel's OpenMP runtime the program's environment (once per program image,
/// before its first OpenMP call).
pub fn start_runtime() {
    let block = PROGRAM_ENV.lock().clone();
    let mut env = block.split(|&b| b == 0).filter(|e| !e.is_empty());
    if let Some(r) = omp_runtime() {
        (r.init)(&mut env);
    }
}

/// The program has exec'd (its other threads are gone): the kernel's OpenMP runtime forgets
/// the old image's state (teams, workers, locks, the `OMP_*` settings), so that the new image
/// starts it as a program's first image does.
pub fn omp_after_exec() {
    if let Some(r) = omp_runtime() {
        (r.after_exec)();
    }
}

/// A program thread ends (its `exit`, before its CLONE_CHILD_CLEARTID wake-up, where libgomp
/// ends the thread's pool in its key destructor): the runtime ends the workers of the teams
/// the thread led.
pub fn omp_thread_exits() {
    if let Some(r) = omp_runtime() {
        (r.thread_exits)();
    }
}

/// The kernel's OpenMP runtime as the loader sees it: the layer above (`omp`) installs it at
/// boot (`set_omp_runtime`), so this layer needs no knowledge of it.
pub struct Runtime {
    /// The kernel's function for an overridden name.
    pub entry_point: fn(&str) -> Option<u64>,
    /// Records import `index` of the group at `addr` (before the program runs).
    pub set_import: fn(usize, u64),
    /// Reads the program's environment strings (before its first OpenMP call).
    pub init: fn(&mut dyn Iterator<Item = &[u8]>),
    /// A forked child: given the forking thread's OpenMP state (its `omp` field), forgets what
    /// belonged to the parent's other threads and returns the state to keep.
    pub after_fork: fn(*mut u8) -> *mut u8,
    /// An exec: forgets everything of the old image (see `omp_after_exec`).
    pub after_exec: fn(),
    /// The current thread ends while the program goes on (see `omp_thread_exits`).
    pub thread_exits: fn(),
}

static OMP_RUNTIME: AtomicPtr<Runtime> = AtomicPtr::new(core::ptr::null_mut());

/// Installs the OpenMP runtime; once, at boot.
pub fn set_omp_runtime(runtime: &'static Runtime) {
    OMP_RUNTIME.store(runtime as *const Runtime as *mut Runtime, Ordering::Release);
}

fn omp_runtime() -> Option<&'static Runtime> {
    // SAFETY: only `set_omp_runtime` stores it, from a `&'static Runtime`.
    unsafe { OMP_RUNTIME.load(Ordering::Acquire).as_ref() }
}

/// A forked child: the forking thread's OpenMP state `state`, without what belonged to the
/// parent's other threads (see `Runtime::after_fork`).
pub fn omp_after_fork(state: *mut u8) -> *mut u8 {
    match omp_runtime() {
        Some(r) => (r.after_fork)(state),
        None => state,
    }
}
