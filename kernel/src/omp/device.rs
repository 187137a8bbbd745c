//! The device API with the host as the only device, as libgomp answers without an offload
//! device: no devices, the host is the initial device (number `omp_get_num_devices()`, 0), and
//! the device memory routines work on the host's memory for that number, failing as the
//! specification says for any other (NULL, EINVAL, 0 or nothing).

use super::allocators::{omp_alloc, omp_free, DEFAULT_MEM_ALLOC};
use super::thread;

const EINVAL: i32 = 22;

pub extern "C" fn omp_get_num_devices() -> i32 {
    0
}
pub extern "C" fn omp_get_initial_device() -> i32 {
    omp_get_num_devices()
}
pub extern "C" fn omp_is_initial_device() -> i32 {
    1
}
pub extern "C" fn omp_get_device_num() -> i32 {
    omp_get_initial_device()
}
pub extern "C" fn omp_get_default_device() -> i32 {
    thread::ctx().icv.default_device
}
/// As libgomp 12: a negative number sets device 0.
pub extern "C" fn omp_set_default_device(device: i32) {
    thread::ctx().icv.default_device = device.max(0);
}

fn is_host(device: i32) -> bool {
    device == omp_get_initial_device()
}

/// gcc's device number for "the default device" (GOMP_DEVICE_ICV) and for `if(false)`, which
/// runs the region on the host (GOMP_DEVICE_HOST_FALLBACK).
const DEVICE_ICV: i32 = -1;
const DEVICE_HOST_FALLBACK: i32 = -2;

/// A target construct's device: with OMP_TARGET_OFFLOAD=mandatory, a device other than the
/// host (the initial device, or `if(false)`'s fallback) is an error that ends the program, as
/// the specification says and libgomp does (here every other device number names no device);
/// otherwise the region runs on the host.
pub fn check_construct(device: i32) {
    let device = if device == DEVICE_ICV { omp_get_default_device() } else { device };
    if device != DEVICE_HOST_FALLBACK && !is_host(device) {
        no_device();
    }
}

/// A device memory routine's device: a negative number fails as a routine's result says, a
/// number past the host names no device (an error with OMP_TARGET_OFFLOAD=mandatory).
fn check_routine(device: i32) {
    if device > omp_get_initial_device() {
        no_device();
    }
}

fn no_device() {
    if super::icv::OFFLOAD_MANDATORY.load(core::sync::atomic::Ordering::Relaxed) {
        super::output::stderr(b"\nlibgomp: OMP_TARGET_OFFLOAD is set to MANDATORY, but device not found\n");
        super::exit_through_program(1);
    }
}

pub extern "C" fn omp_target_alloc(size: usize, device: i32) -> *mut u8 {
    check_routine(device);
    if !is_host(device) {
        return core::ptr::null_mut();
    }
    omp_alloc(size.max(1), DEFAULT_MEM_ALLOC)
}
pub extern "C" fn omp_target_free(p: *mut u8, device: i32) {
    check_routine(device);
    if !p.is_null() && is_host(device) {
        omp_free(p, DEFAULT_MEM_ALLOC);
    }
}
pub extern "C" fn omp_target_is_present(p: *const u8, device: i32) -> i32 {
    check_routine(device);
    (p.is_null() || is_host(device)) as i32
}
/// Associating host memory with device memory needs a device other than the host.
pub extern "C" fn omp_target_associate_ptr(
    _host: *const u8,
    _dev: *const u8,
    _size: usize,
    _off: usize,
    device: i32,
) -> i32 {
    check_routine(device);
    EINVAL
}
pub extern "C" fn omp_target_disassociate_ptr(_p: *const u8, device: i32) -> i32 {
    check_routine(device);
    EINVAL
}

/// # Safety
/// The program's buffers: `src + src_off` and `dst + dst_off` hold `len` bytes.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn omp_target_memcpy(
    dst: *mut u8,
    src: *const u8,
    len: usize,
    dst_off: usize,
    src_off: usize,
    dst_device: i32,
    src_device: i32,
) -> i32 {
    check_routine(dst_device);
    check_routine(src_device);
    if !is_host(dst_device) || !is_host(src_device) {
        return EINVAL;
    }
    // SAFETY: the caller's buffers (memmove: the specification does not forbid overlap).
    unsafe { core::ptr::copy(src.add(src_off), dst.add(dst_off), len) };
    0
}

/// One `omp_target_memcpy_rect` sub-volume: `dims` dimensions of `elem`-byte elements.
struct Rect<'a> {
    volume: &'a [usize],
    dst_offsets: &'a [usize],
    src_offsets: &'a [usize],
    dst_dims: &'a [usize],
    src_dims: &'a [usize],
}

impl Rect<'_> {
    fn inner(&self) -> Rect<'_> {
        Rect {
            volume: &self.volume[1..],
            dst_offsets: &self.dst_offsets[1..],
            src_offsets: &self.src_offsets[1..],
            dst_dims: &self.dst_dims[1..],
            src_dims: &self.src_dims[1..],
        }
    }

    /// Copies the sub-volume; None when a size overflows (EINVAL).
    ///
    /// # Safety
    /// The buffers hold the arrays the dimensions describe.
    unsafe fn copy(&self, dst: *mut u8, src: *const u8, elem: usize) -> Option<()> {
        if self.volume.len() == 1 {
            let len = elem.checked_mul(self.volume[0])?;
            let d = elem.checked_mul(self.dst_offsets[0])?;
            let s = elem.checked_mul(self.src_offsets[0])?;
            // SAFETY: the caller's buffers.
            unsafe { core::ptr::copy(src.add(s), dst.add(d), len) };
            return Some(());
        }
        let mut dst_slice = elem;
        let mut src_slice = elem;
        for i in 1..self.volume.len() {
            dst_slice = dst_slice.checked_mul(self.dst_dims[i])?;
            src_slice = src_slice.checked_mul(self.src_dims[i])?;
        }
        let mut d = dst_slice.checked_mul(self.dst_offsets[0])?;
        let mut s = src_slice.checked_mul(self.src_offsets[0])?;
        for _ in 0..self.volume[0] {
            // SAFETY: the caller's buffers; the offsets stay inside the arrays they describe.
            unsafe { self.inner().copy(dst.add(d), src.add(s), elem)? };
            d += dst_slice;
            s += src_slice;
        }
        Some(())
    }
}

/// # Safety
/// The program's arrays: `num_dims` entries each, and buffers that hold what they describe.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn omp_target_memcpy_rect(
    dst: *mut u8,
    src: *const u8,
    elem: usize,
    num_dims: i32,
    volume: *const usize,
    dst_offsets: *const usize,
    src_offsets: *const usize,
    dst_dims: *const usize,
    src_dims: *const usize,
    dst_device: i32,
    src_device: i32,
) -> i32 {
    if dst.is_null() && src.is_null() {
        return i32::MAX; // the number of dimensions supported
    }
    check_routine(dst_device);
    check_routine(src_device);
    if !is_host(dst_device) || !is_host(src_device) || num_dims < 1 {
        return EINVAL;
    }
    let n = num_dims as usize;
    // SAFETY: the caller's arrays of `num_dims` entries.
    let rect = unsafe {
        Rect {
            volume: core::slice::from_raw_parts(volume, n),
            dst_offsets: core::slice::from_raw_parts(dst_offsets, n),
            src_offsets: core::slice::from_raw_parts(src_offsets, n),
            dst_dims: core::slice::from_raw_parts(dst_dims, n),
            src_dims: core::slice::from_raw_parts(src_dims, n),
        }
    };
    // SAFETY: the caller's buffers.
    match unsafe { rect.copy(dst, src, elem) } {
        Some(()) => 0,
        None => EINVAL,
    }
}
