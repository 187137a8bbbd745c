//! A task's copy of its arguments (the compiler's argument block, with the task's firstprivate
//! variables).

use alloc::vec;
use alloc::vec::Vec;

use super::tasks::CopyFn;

/// Bytes of arguments kept inside the task's own record: five words, so that the record is
/// two cache lines (a deferred task's record is written on one CPU and read on another, a line
/// handed over per line it spans).
pub const INLINE: usize = 40;

#[repr(C, align(8))]
pub struct Inline(pub [u8; INLINE]);

/// A block on the stack for a task's arguments (undeferred taskloop tasks, which also carry
/// their bounds).
pub const STACK_BLOCK: usize = 64;

#[repr(C, align(16))]
pub struct StackBlock(pub [u8; STACK_BLOCK]);

pub enum Args {
    /// Copied bytewise, at most `INLINE` bytes aligned to at most 8 (most tasks: a few
    /// pointers): inside the task's record, one allocation per task instead of two.
    Inline(Inline),
    /// Made by a copy constructor, larger, or aligned more: a block of its own, with the
    /// arguments at the offset. Constructed objects never move (a C++ object may point into
    /// itself, as a short `std::string` does).
    Block(Vec<u8>, usize),
}

impl Args {
    /// Copies the block at `data` (`size` bytes): with the copy constructor when there is one
    /// (firstprivate objects are constructed for the task), else bytewise. The copy gets
    /// `room` bytes (at least `size`), zero beyond the copied ones.
    pub fn copy(data: *mut u8, cpyfn: CopyFn, size: usize, align: usize, room: usize) -> Args {
        let room = room.max(size);
        if cpyfn.is_none() && room <= INLINE && align <= 8 {
            let mut inline = Inline([0; INLINE]);
            // SAFETY: `data` holds `size` bytes (the compiler's argument block); `inline` has room.
            unsafe { core::ptr::copy_nonoverlapping(data, inline.0.as_mut_ptr(), size) };
            return Args::Inline(inline);
        }
        let align = align.max(1);
        let mut buf = vec![0u8; room + align];
        let off = buf.as_ptr().align_offset(align);
        let arg = buf[off..].as_mut_ptr();
        match cpyfn {
            Some(copy) => copy(arg, data),
            // SAFETY: as above; `buf` has `room` bytes from `off`.
            None => unsafe { core::ptr::copy_nonoverlapping(data, arg, size) },
        }
        Args::Block(buf, off)
    }

    /// Where the arguments are (valid until `self` moves, for inline ones).
    pub fn ptr(&mut self) -> *mut u8 {
        match self {
            Args::Inline(inline) => inline.0.as_mut_ptr(),
            Args::Block(buf, off) => buf[*off..].as_mut_ptr(),
        }
    }
}
