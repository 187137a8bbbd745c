//! The kernel's own random bytes (getrandom, AT_RANDOM), made where the program runs instead of
//! asked of the host: a `nr::RANDOM` exit cost 50-57 us a call on a PVM host, Linux's getrandom
//! 0.6 us.
//!
//! ChaCha20 (`chacha`) with fast key erasure, as Linux's generator does: every request first
//! makes a block with the current key, whose first half becomes the next key and whose second
//! half is the answer (up to 32 bytes) or the key of the request's own stream; so bytes handed
//! out cannot be worked out from any later state. The
//! first key is 32 bytes of the host's getrandom that the monitor puts in the boot block
//! (`BootInfo::seed`); a forked child starts from fresh host bytes too (`ForkAnswer::seed`), so
//! parent and child never hand out the same bytes. The state lies in kernel memory, which a
//! ring-3 program could read: the bytes are that program's alone, as they are from Linux.
//!
//! Without a seed (all zero), and where the kernel runs emulated (ring 0 on a PVM host, where
//! each instruction costs thousands of cycles), the host fills every request as before.

mod chacha;

use core::sync::atomic::{AtomicBool, Ordering};

use crate::sync::SpinLock;

const KEY_LEN: usize = hrt_abi::SEED_LEN;

static KEY: SpinLock<[u8; KEY_LEN]> = SpinLock::new([0; KEY_LEN]);
static SEEDED: AtomicBool = AtomicBool::new(false);

/// Starts the generator from `seed` (the boot block's, or a forked child's own); all zero
/// means the monitor had none to give, and every request goes to the host.
pub fn seed(seed: &[u8; KEY_LEN]) {
    *KEY.lock() = *seed;
    SEEDED.store(seed.iter().any(|&b| b != 0), Ordering::Release);
}

/// Fills `out` with random bytes: the kernel's own, or the host's (`nr::RANDOM`, at the
/// buffer's address, which must be memory the host may write: program memory checked by the
/// caller, or the kernel's own).
pub fn fill(out: &mut [u8]) -> Result<(), u32> {
    if out.is_empty() {
        return Ok(());
    }
    if !SEEDED.load(Ordering::Acquire) || crate::arch::ring3::runs_emulated() {
        let ret = crate::arch::hypercall::call(hrt_abi::nr::RANDOM, &[out.as_mut_ptr() as u64, out.len() as u64]);
        return if ret < 0 { Err((-ret) as u32) } else { Ok(()) };
    }
    let first = {
        let mut key = KEY.lock();
        let first = chacha::block(&key, [0; 4]);
        key.copy_from_slice(&first[..KEY_LEN]);
        first
    };
    let rest = &first[KEY_LEN..];
    if out.len() <= rest.len() {
        out.copy_from_slice(&rest[..out.len()]);
        return Ok(());
    }
    // A larger request: its own stream, made without the lock.
    let own: &[u8; KEY_LEN] = rest.try_into().expect("half a block is a key");
    for (i, chunk) in out.chunks_mut(chacha::BLOCK_LEN).enumerate() {
        let block = chacha::block(own, [i as u32, (i as u64 >> 32) as u32, 0, 0]);
        chunk.copy_from_slice(&block[..chunk.len()]);
    }
    Ok(())
}

/// The block function against RFC 8439's test vector (section 2.3.2: key 00..1f, counter 1,
/// nonce 00000009 0000004a 00000000), for `hrt selftest`.
pub fn check_block_function() -> Result<(), &'static str> {
    let key: [u8; 32] = core::array::from_fn(|i| i as u8);
    let got = chacha::block(&key, [1, 0x0900_0000, 0x4a00_0000, 0]);
    const WANT: [u8; 64] = [
        0x10, 0xf1, 0xe7, 0xe4, 0xd1, 0x3b, 0x59, 0x15, 0x50, 0x0f, 0xdd, 0x1f, 0xa3, 0x20, 0x71, 0xc4, //
        0xc7, 0xd1, 0xf4, 0xc7, 0x33, 0xc0, 0x68, 0x03, 0x04, 0x22, 0xaa, 0x9a, 0xc3, 0xd4, 0x6c, 0x4e, //
        0xd2, 0x82, 0x64, 0x46, 0x07, 0x9f, 0xaa, 0x09, 0x14, 0xc2, 0xd7, 0x05, 0xd9, 0x8b, 0x02, 0xa2, //
        0xb5, 0x12, 0x9c, 0xd1, 0xde, 0x16, 0x4e, 0xb9, 0xcb, 0xd0, 0x83, 0xe8, 0xa2, 0x50, 0x3c, 0x4e,
    ];
    if got != WANT {
        return Err("the ChaCha20 block differs from RFC 8439's test vector");
    }
    Ok(())
}
