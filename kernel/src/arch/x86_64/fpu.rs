//! FPU/SSE state. The kernel itself is built soft-float and never touches these registers, so
//! state only has to be switched between threads: FXSAVE/FXRSTOR, or XSAVE/XRSTOR with every
//! component the CPU enables where XSAVE is offered.
//!
//! With the kernel in ring 3 on a PVM host (`ring3`), XSAVE of x87, SSE and AVX is used
//! whatever CPUID offers: ring 3 runs on the host's XCR0 (AVX-512 too here), so a program may
//! use AVX, and FXSAVE would lose the upper halves of its ymm registers across a switch.
//! Ring 0 must not execute XSAVE there (the emulator stops the VM); switches happen in ring 3
//! (preemption is deferred to it), and a save in ring 0 falls back to FXSAVE.

use core::arch::asm;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::instr::{cpuid, read_cr4, write_cr4};

static USE_XSAVE: AtomicBool = AtomicBool::new(false);
static AREA_SIZE: AtomicUsize = AtomicUsize::new(512);
static XCR0: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

const CR4_OSFXSR: u64 = 1 << 9;
const CR4_OSXMMEXCPT: u64 = 1 << 10;
const CR4_OSXSAVE: u64 = 1 << 18;

/// Decides FXSAVE or XSAVE and the save-area size; boot CPU, once, after `ring3::choose`.
pub fn detect() {
    if super::ring3::active() {
        // The host's XCR0 applies in ring 3 (CPUID leaf 0xD describes it). Switches save x87,
        // SSE and AVX (832 bytes): saving the AVX-512 components too made every OpenMP
        // barrier 4x slower here (EPCC barrier 0.13 -> 0.5 us, with no switch in the loop),
        // so their state is not kept across switches (as before ring-3 mode).
        let (eax, _, _, _) = cpuid(0xd, 0);
        let xcr0 = eax as u64 & SWITCHED;
        if xcr0 & 0x3 == 0x3 {
            XCR0.store(xcr0, Ordering::Relaxed);
            AREA_SIZE.store(if xcr0 & 0x4 != 0 { 832 } else { 576 }, Ordering::Relaxed);
            USE_XSAVE.store(true, Ordering::Relaxed);
        }
        return;
    }
    if super::features::has(super::features::XSAVE) {
        let (eax, _, _, edx) = cpuid(0xd, 0);
        let supported = ((edx as u64) << 32) | eax as u64;
        // x87, SSE, and AVX where offered: the state a Linux program may use.
        let avx = if super::features::has(super::features::AVX) { 0x4 } else { 0 };
        let xcr0 = supported & (0x3 | avx);
        XCR0.store(xcr0, Ordering::Relaxed);
        USE_XSAVE.store(true, Ordering::Relaxed);
    }
}

/// The largest save area threads have room for (`sched::thread::FpuArea`).
pub const AREA_MAX: usize = 1024;

/// State components switched with XSAVE in ring-3 mode: x87, SSE, AVX.
const SWITCHED: u64 = 0x7;

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

/// Fills the initial state; boot CPU, after `detect` and `init_cpu`.
pub fn prepare_initial() {
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

/// The state components XSAVE saves (XCR0); 0 without XSAVE.
pub fn xcr0() -> u64 {
    XCR0.load(Ordering::Relaxed)
}

pub fn uses_xsave() -> bool {
    USE_XSAVE.load(Ordering::Relaxed)
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
    if USE_XSAVE.load(Ordering::Relaxed) && !(super::ring3::active() && super::ring3::in_ring0()) {
        // SAFETY: forwarded; eax:edx = all enabled components.
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
    if USE_XSAVE.load(Ordering::Relaxed) && !(super::ring3::active() && super::ring3::in_ring0()) {
        // SAFETY: forwarded.
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
