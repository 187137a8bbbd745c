//! The vDSO: a small shared object (built from kernel/vdso/vdso.c) mapped into the program,
//! answering clock_gettime, gettimeofday, time and getcpu from the TSC without entering the
//! kernel. Its data page (`Vvar`, just below the image) holds the clock parameters.

use super::usermem::{self, PAGE};

static IMAGE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/vdso.so"));

/// Must match `struct hrt_vvar` in vdso.c.
#[repr(C)]
#[derive(Clone, Copy)]
struct Vvar {
    boot_tsc: u64,
    ns_mult: u64,
    wall_ns: u64,
    rdtscp: u64,
    mono_ns: u64,
    boot_ns: u64,
    raw_ns: u64,
}

/// Where the program's vDSO data page is (0: none mapped).
static VVAR_AT: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// The program set the realtime clock: its vDSO counts from `wall_ns` too. (The data page is
/// read-only to the program, as Linux's [vvar]; the kernel writes it through the pool's alias.)
pub fn set_wall_base(wall_ns: u64) {
    let at = VVAR_AT.load(core::sync::atomic::Ordering::Relaxed);
    if at == 0 {
        return;
    }
    let field = at + core::mem::offset_of!(Vvar, wall_ns) as u64;
    // Written while the page is still mapped (`forget` clears VVAR_AT when it goes).
    usermem::while_mapped(field, field + 8, || usermem::copy(field, &wall_ns as *const u64 as u64, 8));
}

/// `[start, end)` is unmapped or replaced: if the data page was there, it is gone, and nothing
/// may write the memory that takes its place.
pub fn forget(start: u64, end: u64) {
    let at = VVAR_AT.load(core::sync::atomic::Ordering::Relaxed);
    if at != 0 && (start..end).contains(&at) {
        VVAR_AT.store(0, core::sync::atomic::Ordering::Relaxed);
    }
}

/// Where the vDSO is: its data page's start and its image's end ((0, 0): none mapped).
pub fn range() -> (u64, u64) {
    let at = VVAR_AT.load(core::sync::atomic::Ordering::Relaxed);
    if at == 0 {
        (0, 0)
    } else {
        (at, at + len())
    }
}

/// Bytes of program memory the vDSO takes: its data page and its image, whole pages.
pub fn len() -> u64 {
    PAGE + (IMAGE.len() as u64).div_ceil(PAGE) * PAGE
}

/// Maps the vDSO and its data page into the program, at `place` (`len()` bytes of fresh program
/// memory) or in memory of its own; returns the image's address (AT_SYSINFO_EHDR), or None if
/// there is no memory for it.
pub fn map(place: Option<u64>) -> Option<u64> {
    let base = match place {
        Some(at) => at,
        None => usermem::alloc(len(), PAGE).ok()?,
    };
    let (boot_tsc, ns_mult) = crate::time::tsc_parameters();
    // The host's clocks at time zero (calls/time.rs).
    let bases = super::calls::time::host_bases();
    let vvar = Vvar {
        boot_tsc,
        ns_mult,
        // Moved if the program set the clock (calls/time.rs).
        wall_ns: super::calls::time::wall_base_ns(),
        // getcpu: from GS when the kernel runs in ring 3 (RDTSCP would give the host's CPU
        // there), else from RDTSCP's TSC_AUX where offered, else a system call.
        // On PVM TSC_AUX is the host's in any ring (the kernel does not write it there).
        rdtscp: if crate::arch::ring3::active() {
            2
        } else {
            let pvm = crate::bootinfo::get().platform == hrt_abi::Platform::PvmEmulated as u32;
            (crate::arch::features::has(crate::arch::features::RDTSCP) && !pvm) as u64
        },
        mono_ns: bases[1],
        boot_ns: bases[2],
        raw_ns: bases[3],
    };
    VVAR_AT.store(base, core::sync::atomic::Ordering::Relaxed);
    // SAFETY: both ranges are freshly allocated program memory.
    unsafe {
        (base as *mut Vvar).write(vvar);
        core::ptr::copy_nonoverlapping(IMAGE.as_ptr(), (base + PAGE) as *mut u8, IMAGE.len());
    }
    // Its functions' extents, so that its fallback `syscall`s (the CPU-time clocks, a
    // gettimeofday with a time zone) are rewritten into calls like the program's: built with
    // -mno-red-zone, they qualify. Without this every CPU-clock read took the SYSCALL path
    // (~22 us on a PVM host against ~0.2 us through the gate).
    super::symbols::load(IMAGE, base + PAGE);
    // Code: read and execute (fresh program memory is not executable). Rewriting its sites
    // later writes through the kernel's alias of the pool.
    super::protect::set(base + PAGE, base + len(), super::protect::PROT_READ | super::protect::PROT_EXEC);
    // Data: read-only, as Linux's [vvar] (a program's store there is SIGSEGV).
    super::protect::set(base, base + PAGE, super::protect::PROT_READ);
    Some(base + PAGE)
}
