//! The boot-info block the monitor wrote: one read-only record every layer may consult, kept
//! apart from the bring-up code (`boot`) so that nothing above the architecture layer depends
//! on how the kernel started.

use core::sync::atomic::{AtomicUsize, Ordering};

use hrt_abi::BootInfo;

static BOOT_INFO: AtomicUsize = AtomicUsize::new(0);

/// Publishes the block; the boot CPU, once, before anything reads it.
pub fn set(block: &'static BootInfo) {
    BOOT_INFO.store(block as *const BootInfo as usize, Ordering::Release);
}

/// The boot-info block.
pub fn get() -> &'static BootInfo {
    // SAFETY: set once by the boot CPU before anything reads it; the block is never written
    // again and its page is reserved.
    unsafe { &*(BOOT_INFO.load(Ordering::Acquire) as *const BootInfo) }
}
