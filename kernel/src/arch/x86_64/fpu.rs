//! FPU/SSE/AVX/AVX-512 state. The kernel itself is built soft-float and never touches these
//! registers, so state only has to be switched between threads: FXSAVE/FXRSTOR, or XSAVE/XRSTOR
//! of every user state component the CPU enables where XSAVE is offered.
//!
//! With the kernel in ring 3 on a PVM host (`ring3`), XSAVE is used whatever CPUID offers: ring
//! 3 runs on the host's XCR0 (x87, SSE, AVX and AVX-512 here), so a program may use all of it
//! (glibc's EVEX string functions keep data in ymm16-31), and a switch that saved less would hand
//! one thread another's registers. Ring 0 must not execute XSAVE or XGETBV there (the emulator
//! stops the VM): switches happen in ring 3 (preemption is deferred to it), signal frames built
//! in ring 0 get their vector state in ring 3 (`can_save_now`), and a save in ring 0 falls back
//! to FXSAVE.
//!
//! Cost (this host, AMD EPYC, save + restore of one thread): FXSAVE 170 cycles, XSAVE of
//! x87/SSE/AVX 310, of everything (0xe7, 2,432 bytes) 340; XSAVEOPT and XSAVEC were no faster.
//! What made switches expensive earlier was saving and restoring at every switch to and from
//! the idle thread: now the registers stay with their owner until another thread needs them.

use core::arch::asm;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use super::instr::{cpuid, read_cr4, write_cr4};

static USE_XSAVE: AtomicBool = AtomicBool::new(false);
static AREA_SIZE: AtomicUsize = AtomicUsize::new(512);
static XCR0: AtomicU64 = AtomicU64::new(0);

const CR4_OSFXSR: u64 = 1 << 9;
const CR4_OSXMMEXCPT: u64 = 1 << 10;
const CR4_OSXSAVE: u64 = 1 << 18;

/// Decides FXSAVE or XSAVE and the save-area size; boot CPU, once, after `ring3::choose`.
pub fn detect() {
    if super::ring3::active() {
        // The host's XCR0 applies in ring 3: every user component CPUID offers (leaf 0xD) that
        // fits a thread's area; `prepare_initial` narrows it to what XCR0 enables.
        let (components, size) = fitting(supported());
        if components & 0x3 == 0x3 {
            XCR0.store(components, Ordering::Relaxed);
            AREA_SIZE.store(size, Ordering::Relaxed);
            USE_XSAVE.store(true, Ordering::Relaxed);
        }
        return;
    }
    if super::features::has(super::features::XSAVE) {
        // x87, SSE, and AVX where offered: the state a Linux program may use.
        let avx = if super::features::has(super::features::AVX) { 0x4 } else { 0 };
        XCR0.store(supported() & (0x3 | avx), Ordering::Relaxed);
        USE_XSAVE.store(true, Ordering::Relaxed);
    }
}

/// The user state components XCR0 may enable on this CPU (CPUID leaf 0xD, sub-leaf 0).
fn supported() -> u64 {
    let (eax, _, _, edx) = cpuid(0xd, 0);
    ((edx as u64) << 32) | eax as u64
}

/// The components of `wanted` whose standard-format place ends within `AREA_MAX`, and the area
/// size they need (64-byte multiple).
fn fitting(wanted: u64) -> (u64, usize) {
    let mut components = wanted & 0x3;
    let mut end = 576; // legacy area + XSAVE header
                       // Only the components offered: at boot this runs in ring 0, which a PVM host emulates
                       // instruction by instruction, and a loop over all 61 bits cost ~550 of them (~2 ms).
    let mut rest = wanted & !0x3 & !(1 << 63);
    while rest != 0 {
        let i = rest.trailing_zeros();
        rest &= rest - 1;
        // In ring 3 (`prepare_initial`), from the kernel's table (no trap).
        let (size, offset, _, _) =
            if super::ring3::in_ring0() { cpuid(0xd, i) } else { super::cpuid_cache::answer(0xd, i) };
        let last = offset as usize + size as usize;
        if last <= AREA_MAX {
            components |= 1 << i;
            end = end.max(last);
        }
    }
    (components, end.next_multiple_of(64))
}

/// The largest save area threads have room for (`sched::thread::FpuArea`): x87, SSE, AVX,
/// AVX-512 and PKRU in the standard format (2,696 bytes on Intel, 2,432 on AMD).
pub const AREA_MAX: usize = 2752;

#[repr(C, align(64))]
struct InitialState(core::cell::UnsafeCell<[u8; AREA_MAX]>);

// SAFETY: written once by the boot CPU before any thread exists, then only read.
unsafe impl Sync for InitialState {}

/// The state every new thread starts with (masked exceptions, zeroed registers).
static INITIAL: InitialState = InitialState(core::cell::UnsafeCell::new([0; AREA_MAX]));

/// Loads the initial FPU/SSE state (a new thread's first switch-in).
pub fn restore_initial() {
    // SAFETY: INITIAL holds a valid state from `prepare_initial`.
    unsafe { restore(INITIAL.0.get() as *const u8) };
}

/// The initial state's save area (`area_size()` bytes).
pub fn initial_state() -> &'static [u8] {
    // SAFETY: INITIAL is only written by `prepare_initial`, before any thread runs.
    unsafe { core::slice::from_raw_parts(INITIAL.0.get() as *const u8, area_size()) }
}

/// Fills the initial state; boot CPU, after `detect` and `init_cpu` (in ring 3 in ring-3 mode,
/// where XGETBV tells which of the offered components the host's XCR0 enables).
pub fn prepare_initial() {
    if uses_xsave() && super::ring3::active() && !super::ring3::in_ring0() {
        let (lo, hi): (u32, u32);
        // SAFETY: XGETBV of XCR0 in ring 3 with the host's CR4.OSXSAVE set (XSAVE works here).
        unsafe { asm!("xgetbv", in("ecx") 0, out("eax") lo, out("edx") hi, options(nomem, nostack)) };
        let enabled = ((hi as u64) << 32) | lo as u64;
        let (components, size) = fitting(XCR0.load(Ordering::Relaxed) & enabled);
        XCR0.store(components, Ordering::Relaxed);
        AREA_SIZE.store(size, Ordering::Relaxed);
    }
    // SAFETY: nothing reads INITIAL before this returns (no thread runs yet).
    unsafe { init_area(INITIAL.0.get() as *mut u8) };
}

/// Enables SSE (and XSAVE where used) on this CPU and sets the area size.
pub fn init_cpu() {
    let mut cr4 = read_cr4() | CR4_OSFXSR | CR4_OSXMMEXCPT;
    if super::ring3::active() {
        // XSAVE runs on the host's CR4 and XCR0 in ring 3; ring-0 XSETBV would fault.
        // SAFETY: enabling SSE, which every x86-64 CPU has.
        unsafe { write_cr4(cr4) };
        return;
    }
    if USE_XSAVE.load(Ordering::Relaxed) {
        cr4 |= CR4_OSXSAVE;
    }
    // SAFETY: enabling features CPUID reported.
    unsafe { write_cr4(cr4) };
    if USE_XSAVE.load(Ordering::Relaxed) {
        let xcr0 = XCR0.load(Ordering::Relaxed);
        // SAFETY: OSXSAVE is on and xcr0 only holds supported components with x87 set.
        unsafe { asm!("xsetbv", in("ecx") 0, in("eax") xcr0 as u32, in("edx") (xcr0 >> 32) as u32) };
        let (_, ebx, _, _) = cpuid(0xd, 0);
        AREA_SIZE.store(ebx as usize, Ordering::Relaxed);
    }
}

/// The state components XSAVE saves (XCR0's user components); 0 without XSAVE.
pub fn xcr0() -> u64 {
    XCR0.load(Ordering::Relaxed)
}

pub fn uses_xsave() -> bool {
    USE_XSAVE.load(Ordering::Relaxed)
}

/// True if `save` keeps the whole state here: false in ring 0 in ring-3 mode, where only FXSAVE
/// may run (x87 and SSE).
#[inline(always)]
pub fn can_save_now() -> bool {
    !(super::ring3::active() && super::ring3::in_ring0())
}

#[inline(always)]
fn use_xsave_now() -> bool {
    USE_XSAVE.load(Ordering::Relaxed) && can_save_now()
}

/// Bytes of a save area (64-byte aligned).
pub fn area_size() -> usize {
    AREA_SIZE.load(Ordering::Relaxed)
}

/// Writes a clean initial state (default MXCSR and x87 control word) into `area`.
///
/// # Safety
/// `area` must be `area_size()` writable bytes, 64-byte aligned.
pub unsafe fn init_area(area: *mut u8) {
    // SAFETY: forwarded to the caller's contract.
    unsafe {
        core::ptr::write_bytes(area, 0, area_size());
        (area as *mut u16).write(0x037f); // FCW: all exceptions masked
        (area.add(24) as *mut u32).write(0x1f80); // MXCSR: all exceptions masked
    }
}

/// # Safety
/// `area` must be a save area as for `init_area`.
#[inline(always)]
pub unsafe fn save(area: *mut u8) {
    if use_xsave_now() {
        let mask = XCR0.load(Ordering::Relaxed);
        // SAFETY: forwarded; eax:edx = the components the kernel switches.
        unsafe {
            asm!("xsave64 [{}]", in(reg) area, in("eax") mask as u32, in("edx") (mask >> 32) as u32, options(nostack))
        };
    } else {
        // SAFETY: forwarded.
        unsafe { asm!("fxsave64 [{}]", in(reg) area, options(nostack)) };
        if USE_XSAVE.load(Ordering::Relaxed) {
            // Ring 0 in ring-3 mode: a header saying "x87 and SSE only", so that a later
            // XRSTOR takes those from the legacy area and resets the rest.
            // SAFETY: the area is `area_size()` >= 576 bytes (legacy area + header).
            unsafe {
                (area.add(512) as *mut u64).write(0x3);
                (area.add(520) as *mut u64).write(0);
            }
        }
    }
}

/// # Safety
/// `area` must hold state written by `save` or `init_area`.
#[inline(always)]
pub unsafe fn restore(area: *const u8) {
    if use_xsave_now() {
        let mask = XCR0.load(Ordering::Relaxed);
        // SAFETY: forwarded.
        unsafe {
            asm!("xrstor64 [{}]", in(reg) area, in("eax") mask as u32, in("edx") (mask >> 32) as u32, options(nostack))
        };
    } else {
        // SAFETY: forwarded.
        unsafe { asm!("fxrstor64 [{}]", in(reg) area, options(nostack)) };
    }
}
