//! The kernel's random generator (`crate::random`).

use alloc::string::String;

use super::TestResult;

/// The block function gives RFC 8439's test vector; requests of every size path (one block,
/// a stream of its own) give bytes that differ from call to call.
pub fn generator() -> TestResult {
    crate::random::check_block_function().map_err(String::from)?;
    for len in [1usize, 16, 32, 33, 64, 1000] {
        let (mut a, mut b) = ([0u8; 1000], [0u8; 1000]);
        crate::random::fill(&mut a[..len]).map_err(|e| alloc::format!("fill of {len} bytes: errno {e}"))?;
        crate::random::fill(&mut b[..len]).map_err(|e| alloc::format!("fill of {len} bytes: errno {e}"))?;
        // Two 8-byte (or longer) draws agree by chance once in 2^64.
        if len >= 8 && a[..len] == b[..len] {
            return Err(alloc::format!("two requests of {len} bytes gave the same bytes"));
        }
        if len >= 128 && a[64..128] == a[..64] {
            return Err(alloc::format!("a request of {len} bytes repeats its first block"));
        }
    }
    kprintln!("  ChaCha20 matches RFC 8439; requests of 1-1000 bytes differ");
    Ok(())
}
