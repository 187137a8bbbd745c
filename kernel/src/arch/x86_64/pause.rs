//! Whether an interrupted program was spinning: a PAUSE (F3 90) within a few bytes of where it
//! stopped. Spin-wait loops (libgomp's, glibc's spin locks, most hand-written ones) are a few
//! instructions around a PAUSE, which takes most of each round's time, so an interrupt that
//! lands in one finds a PAUSE close by. A guess (the two bytes may belong to other
//! instructions): whatever follows from it must be harmless when wrong.

/// How far around the interrupted instruction pointer to look, in bytes, each way.
const WINDOW: u64 = 16;
const PAUSE: [u8; 2] = [0xf3, 0x90];

/// True if the program's code near `rip` holds a PAUSE. Reads only inside `rip`'s page, and
/// through fault probes: another thread may have unmapped the code meanwhile.
pub fn near(rip: u64) -> bool {
    let page = rip & !0xfff;
    let lo = rip.saturating_sub(WINDOW).max(page) & !7;
    let hi = rip.saturating_add(WINDOW).min(page + 0x1000);
    let mut bytes = [0u8; (2 * WINDOW as usize) + 16];
    let Some(len) = copy_code(lo, hi, &mut bytes) else { return false };
    bytes[..len].windows(2).any(|w| w == PAUSE)
}

/// Copies the program's bytes from `lo` (8-byte aligned) up to `hi` into `out` (which must
/// hold them, rounded up to 8) through fault probes; their count, or None if a read faulted.
pub(super) fn copy_code(lo: u64, hi: u64, out: &mut [u8]) -> Option<usize> {
    let mut len = 0;
    let mut addr = lo;
    while addr < hi {
        let word = super::traps::probe_read(addr).ok()?;
        out[len..len + 8].copy_from_slice(&word.to_le_bytes());
        len += 8;
        addr += 8;
    }
    Some(len)
}
