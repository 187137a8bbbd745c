//! The boot-info block the monitor wrote: one read-only record every layer may consult, kept
//! apart from the bring-up code (`boot`) so that nothing above the architecture layer depends
//! on how the kernel started.
//!
//! The kernel keeps its own copy: the monitor's block lies in the low 64 KiB, which the
//! kernel's page tables leave not present (as Linux's `vm.mmap_min_addr` keeps it unmapped), so
//! that a program's NULL-based reads fault there as on Linux.

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, Ordering};

use hrt_abi::BootInfo;

struct Copy(UnsafeCell<MaybeUninit<BootInfo>>);

// SAFETY: written once by the boot CPU in `set` before `READY` is published; read-only after.
unsafe impl Sync for Copy {}

static COPY: Copy = Copy(UnsafeCell::new(MaybeUninit::uninit()));
static READY: AtomicBool = AtomicBool::new(false);

/// Copies the monitor's block; the boot CPU, once, before anything reads it.
/// `copy` writes the block to the pointer it gets (the caller chooses how: the boot, in
/// emulated ring 0, copies it in words).
pub fn set_copied_by(copy: impl FnOnce(*mut BootInfo)) {
    // Nothing reads the copy before `READY` is set below.
    copy(COPY.0.get() as *mut BootInfo);
    READY.store(true, Ordering::Release);
}

/// The boot-info block (the kernel's copy).
pub fn get() -> &'static BootInfo {
    debug_assert!(READY.load(Ordering::Acquire), "boot info read before it was set");
    // SAFETY: `set` initialised the copy before anything calls this (the boot CPU sets it
    // first thing; a forked child's memory holds the parent's copy).
    unsafe { (*COPY.0.get()).assume_init_ref() }
}
