//! The vector state in a handler frame (the "fpstate" that uc_mcontext points at), as Linux
//! x86-64 writes it: the whole XSAVE area of every component XCR0 enables (x87, SSE, AVX,
//! AVX-512 ...), fpx_sw_bytes at +464 and FP_XSTATE_MAGIC2 right after the area; FXSAVE's 512
//! bytes without XSAVE. rt_sigreturn loads it back, so a handler cannot change the registers of
//! the code it interrupted unless it edits the frame.
//!
//! In ring-3 mode a frame may be built in ring 0 (a fault, or a signal noticed on an interrupt),
//! where XSAVE must not run: the frame's fpstate is then written from ring 3, on the way back to
//! the program (`complete_in_ring3`), before anything else touches the registers.

use alloc::alloc::{alloc_zeroed, dealloc, handle_alloc_error, Layout};
use core::sync::atomic::{AtomicUsize, Ordering};

use super::frame;
use super::state::SIGNALS;
use crate::arch::traps::TrapFrame;
use crate::arch::x86_64::fpu;
use crate::linux::errno::Errno;
use crate::linux::{fault, uaccess};

/// Threads with a frame whose fpstate ring 3 still has to write.
static DUE: AtomicUsize = AtomicUsize::new(0);

/// Bytes the fpstate takes in a frame (the XSAVE area and MAGIC2, or the FXSAVE area).
pub fn frame_size() -> u64 {
    let size = fpu::area_size() as u64;
    if fpu::uses_xsave() {
        size + 4
    } else {
        size
    }
}

/// Writes the thread's vector state into the frame's fpstate at `fp` (already checked to be
/// writable) and starts the handler with a clean state, as Linux does. In ring 0 of ring-3
/// mode the first frame of this return is left for ring 3; a second one (two handlers set up at
/// once: the later runs first) gets the clean state the earlier handler will start with.
pub fn save_to_frame(tid: u32, fp: u64) -> Result<(), Errno> {
    if fpu::can_save_now() || !fpu::uses_xsave() {
        write_live(fp)?;
        fpu::restore_initial();
        return Ok(());
    }
    {
        let mut s = SIGNALS.lock();
        let ts = s.thread(tid);
        if ts.fpstate_due.is_none() {
            ts.fpstate_due = Some(fp);
            DUE.fetch_add(1, Ordering::SeqCst);
            return Ok(());
        }
    }
    write_area(fp, &mut fpu::initial_state().to_vec())
}

/// True if some thread's frame waits for its fpstate (the trap code then returns through ring 3).
pub fn due() -> bool {
    DUE.load(Ordering::SeqCst) != 0
}

/// Ring 3, before the program continues: writes the fpstate `save_to_frame` left for it.
pub fn complete_in_ring3(_frame: &mut TrapFrame) {
    // SAFETY: the current thread's record is alive while it runs.
    let t = unsafe { &*crate::sched::current() };
    if !t.is_user {
        return;
    }
    let Some(fp) = SIGNALS.lock().thread(t.tid).fpstate_due.take() else { return };
    DUE.fetch_sub(1, Ordering::SeqCst);
    if write_live(fp).is_err() {
        fault::terminate(11, None);
    }
    fpu::restore_initial();
}

/// Saves the live registers into a frame's fpstate at `fp`.
fn write_live(fp: u64) -> Result<(), Errno> {
    let mut area = FpuBuf::new();
    // SAFETY: a 64-byte aligned area of the save size; the live FPU state is this thread's
    // (the kernel never uses the FPU).
    unsafe { fpu::save(area.ptr) };
    write_area(fp, area.bytes())
}

/// Writes a saved area as a frame's fpstate, with Linux's description of it.
fn write_area(fp: u64, b: &mut [u8]) -> Result<(), Errno> {
    if !fpu::uses_xsave() {
        return uaccess::write_bytes(fp, b);
    }
    let size = b.len() as u64;
    b[464..468].copy_from_slice(&frame::FP_XSTATE_MAGIC1.to_le_bytes());
    b[468..472].copy_from_slice(&((size + 4) as u32).to_le_bytes());
    b[472..480].copy_from_slice(&fpu::xcr0().to_le_bytes());
    b[480..484].copy_from_slice(&(size as u32).to_le_bytes());
    uaccess::write_bytes(fp, b)?;
    uaccess::write(fp + size, frame::FP_XSTATE_MAGIC2)
}

/// rt_sigreturn: loads the registers from the fpstate at `fp` (0: none, a clean state).
pub fn restore_from_frame(fp: u64) {
    if fp == 0 {
        fpu::restore_initial();
        return;
    }
    let mut area = FpuBuf::new();
    let b = area.bytes();
    let Ok(saved) = uaccess::slice(fp, b.len() as u64) else { fault::terminate(11, None) };
    b.copy_from_slice(saved);
    sanitize(b);
    // SAFETY: a 64-byte aligned area whose reserved bits were cleared, so XRSTOR/FXRSTOR
    // accept it.
    unsafe { fpu::restore(area.ptr) };
}

/// Clears what would make FXRSTOR/XRSTOR fault: MXCSR's reserved bits, unknown components and
/// the compacted form in the XSAVE header. A frame without the XSAVE magic carries only the
/// legacy (x87, SSE) state.
fn sanitize(b: &mut [u8]) {
    let mxcsr = u32::from_le_bytes(b[24..28].try_into().unwrap()) & 0xffff;
    b[24..28].copy_from_slice(&mxcsr.to_le_bytes());
    if fpu::uses_xsave() {
        let magic = u32::from_le_bytes(b[464..468].try_into().unwrap());
        let mut bv = u64::from_le_bytes(b[512..520].try_into().unwrap()) & fpu::xcr0();
        if magic != frame::FP_XSTATE_MAGIC1 {
            bv &= 3;
        }
        b[512..520].copy_from_slice(&bv.to_le_bytes());
        b[520..576].fill(0);
    }
}

/// A 64-byte aligned kernel buffer for an FPU save area.
struct FpuBuf {
    ptr: *mut u8,
    layout: Layout,
}

impl FpuBuf {
    fn new() -> Self {
        let layout = Layout::from_size_align(fpu::area_size(), 64).expect("FPU area layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            handle_alloc_error(layout);
        }
        FpuBuf { ptr, layout }
    }

    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` owns `layout.size()` initialised bytes.
        unsafe { core::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for FpuBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) };
    }
}
