//! The kernel's `memcpy`, in place of the one `compiler_builtins` gives a target without a C
//! library: that one is three `rep movs` (an aligning `rep movsb`, `rep movsq`, a tail `rep
//! movsb`) whatever the length, each with a start-up cost of its own, and most of the kernel's
//! copies are a few words (a task's argument block, a system call's structure, a record moved
//! into the heap). Up to 64 bytes: word loads and stores from both ends (they may overlap),
//! all loads first; beyond: one `rep movsb` (fast strings on every CPU this kernel boots on).
//! The pieces are fixed-size unaligned accesses, which the compiler emits as moves, never as a
//! call to `memcpy` itself.

use core::arch::asm;

/// Copies `n` bytes from `src` to `dst` (the C function: the ranges must not overlap).
///
/// # Safety
/// `src` must be readable and `dst` writable for `n` bytes, and they must not overlap.
#[no_mangle]
pub unsafe extern "C" fn memcpy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: the caller's contract; every access below lies within the `n` bytes.
    unsafe {
        match n {
            0 => {}
            1 => *dst = *src,
            2..=3 => {
                let (a, b) = (read::<u16>(src, 0), read::<u16>(src, n - 2));
                write(dst, 0, a);
                write(dst, n - 2, b);
            }
            4..=7 => {
                let (a, b) = (read::<u32>(src, 0), read::<u32>(src, n - 4));
                write(dst, 0, a);
                write(dst, n - 4, b);
            }
            8..=16 => {
                let (a, b) = (read::<u64>(src, 0), read::<u64>(src, n - 8));
                write(dst, 0, a);
                write(dst, n - 8, b);
            }
            17..=32 => {
                let (a, b) = (read::<u64>(src, 0), read::<u64>(src, 8));
                let (c, d) = (read::<u64>(src, n - 16), read::<u64>(src, n - 8));
                write(dst, 0, a);
                write(dst, 8, b);
                write(dst, n - 16, c);
                write(dst, n - 8, d);
            }
            33..=64 => {
                let (a, b, c, d) =
                    (read::<u64>(src, 0), read::<u64>(src, 8), read::<u64>(src, 16), read::<u64>(src, 24));
                let (e, f, g, h) = (
                    read::<u64>(src, n - 32),
                    read::<u64>(src, n - 24),
                    read::<u64>(src, n - 16),
                    read::<u64>(src, n - 8),
                );
                write(dst, 0, a);
                write(dst, 8, b);
                write(dst, 16, c);
                write(dst, 24, d);
                write(dst, n - 32, e);
                write(dst, n - 24, f);
                write(dst, n - 16, g);
                write(dst, n - 8, h);
            }
            _ => asm!(
                "rep movsb",
                inout("rcx") n => _,
                inout("rdi") dst => _,
                inout("rsi") src => _,
                options(nostack, preserves_flags)
            ),
        }
    }
    dst
}

/// Copies `words` 8-byte words from `src` to `dst` with one `rep movsq`. For copies in
/// emulated ring 0 (the boot on a PVM host): the host emulates each iteration of a string
/// instruction, ~1 us each, so the boot-info block (~1.5 KB) took ~3 ms as `memcpy`'s
/// `rep movsb` and takes an eighth of that in words.
///
/// # Safety
/// `src` must be readable and `dst` writable for `words * 8` bytes; no overlap.
pub unsafe fn copy_words(dst: *mut u64, src: *const u64, words: usize) {
    // SAFETY: the caller's contract.
    unsafe {
        asm!(
            "rep movsq",
            inout("rcx") words => _,
            inout("rdi") dst => _,
            inout("rsi") src => _,
            options(nostack, preserves_flags)
        )
    };
}

/// # Safety
/// `p + at` must be readable for `size_of::<T>()` bytes.
#[inline(always)]
unsafe fn read<T>(p: *const u8, at: usize) -> T {
    // SAFETY: the caller's contract.
    unsafe { (p.add(at) as *const T).read_unaligned() }
}

/// # Safety
/// `p + at` must be writable for `size_of::<T>()` bytes.
#[inline(always)]
unsafe fn write<T>(p: *mut u8, at: usize, v: T) {
    // SAFETY: the caller's contract.
    unsafe { (p.add(at) as *mut T).write_unaligned(v) }
}
