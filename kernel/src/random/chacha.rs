//! The ChaCha20 block function (RFC 8439, section 2.3), scalar.
//!
//! Written here rather than taken from a crate: the kernel target has no SSE (the program's
//! vector registers are live while the kernel runs in its ring), where the crates fall back to
//! emulated vectors (rand_chacha: 2.0 us a 16-byte getrandom, about twice this), and they make
//! four blocks at a time where a small request needs one.

/// "expand 32-byte k".
const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

pub const BLOCK_LEN: usize = 64;

/// The block for `key` and the last four state words (`position`: the block counter and
/// nonce, which the RFC's variant splits 32/96 and the original 64/64).
pub fn block(key: &[u8; 32], position: [u32; 4]) -> [u8; BLOCK_LEN] {
    let mut input = [0u32; 16];
    input[..4].copy_from_slice(&SIGMA);
    for (word, bytes) in input[4..12].iter_mut().zip(key.chunks_exact(4)) {
        *word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    }
    input[12..].copy_from_slice(&position);
    let mut x = input;
    for _ in 0..10 {
        quarter_round(&mut x, 0, 4, 8, 12);
        quarter_round(&mut x, 1, 5, 9, 13);
        quarter_round(&mut x, 2, 6, 10, 14);
        quarter_round(&mut x, 3, 7, 11, 15);
        quarter_round(&mut x, 0, 5, 10, 15);
        quarter_round(&mut x, 1, 6, 11, 12);
        quarter_round(&mut x, 2, 7, 8, 13);
        quarter_round(&mut x, 3, 4, 9, 14);
    }
    let mut out = [0u8; BLOCK_LEN];
    for (i, bytes) in out.chunks_exact_mut(4).enumerate() {
        bytes.copy_from_slice(&x[i].wrapping_add(input[i]).to_le_bytes());
    }
    out
}

#[inline(always)]
fn quarter_round(x: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(16);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(12);
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(8);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(7);
}
