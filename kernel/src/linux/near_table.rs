//! The program's own slot table (`arch::slot_table`): register and `syscall()` function sites
//! reach theirs with `call rel32` (±2 GiB), and programs in the pool above 4 GiB (static-PIE
//! and dynamically linked ones) lie beyond that from the gate's. Each loaded program image
//! gets a copy among its memory, read and execute only, whose slots jump on to the entry.

use super::protect::{self, PROT_EXEC, PROT_READ};
use super::usermem::{self, PAGE};
use crate::arch::slot_table::{self, NEAR_TABLE_LEN};

/// Bytes of program memory a near table takes (0 without rewriting, which needs none).
pub fn len() -> u64 {
    if super::rewrite::enabled() {
        (NEAR_TABLE_LEN as u64).div_ceil(PAGE) * PAGE
    } else {
        0
    }
}

/// Where the near table sites call now is ((0, 0): none).
pub fn range() -> (u64, u64) {
    let at = slot_table::near();
    if at == 0 {
        (0, 0)
    } else {
        (at, at + len())
    }
}

/// Maps a near table for the image just loaded (rewriting on), the one sites call from now on,
/// at `place` (`len()` bytes of fresh program memory) or in memory of its own; without memory
/// for it, far sites keep SYSCALL.
pub fn map(place: Option<u64>) {
    let len = len();
    if len == 0 {
        return;
    }
    let at = match place {
        Some(at) => at,
        None => match usermem::alloc(len, PAGE) {
            Ok(at) => at,
            Err(_) => return,
        },
    };
    // SAFETY: `len` bytes of freshly allocated program memory, not yet the program's to use.
    slot_table::write_near(unsafe { core::slice::from_raw_parts_mut(at as *mut u8, NEAR_TABLE_LEN) }, at);
    protect::set(at, at + len, PROT_READ | PROT_EXEC);
    slot_table::set_near(at);
}
