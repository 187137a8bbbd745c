//! Serving the kernel's hypercalls. The request block and every buffer it names are guest
//! addresses: each is checked against guest RAM before use.

use std::io::Write;

use hrt_abi::{nr, Hypercall};

use super::vcpu::{Exit, Shared};

/// The program's memory as forwarded calls see it: only its pool, never the kernel's memory,
/// and within the pool only the pages the kernel's page map says the program has mapped
/// (none before the kernel has sent the map).
struct ProgramMemory<'a> {
    ram: &'a super::memory::GuestRam,
    range: (u64, u64),
    map: Option<&'a hrt_abi::UserMap>,
}

impl crate::forward::GuestMemory for ProgramMemory<'_> {
    fn host_range(&self, addr: u64, len: u64) -> Option<*mut u8> {
        let end = addr.checked_add(len)?;
        if addr < self.range.0 || end > self.range.1 {
            return None;
        }
        self.ram.host_ptr(addr, len)
    }

    fn mapped_len(&self, addr: u64, len: u64) -> u64 {
        let Some(map) = self.map else { return 0 };
        let Some(bits) = self.ram.slice(map.bitmap, map.bytes) else { return 0 };
        // SAFETY: `bits` covers the bitmap's bytes in guest RAM (checked when it was registered
        // and again just now).
        unsafe { crate::forward::mapped_len_in(bits.as_ptr(), map, addr, len) }
    }
}

/// Accepts the kernel's page map (`nr::USER_MAP`) once: it must cover exactly the program's
/// pool and lie in guest RAM outside it (where the program cannot write it).
fn register_user_map(shared: &Shared, a: &[u64; 7]) -> i64 {
    let map = hrt_abi::UserMap { bitmap: a[0], bytes: a[1], base: a[2], pages: a[3] };
    let (lo, hi) = shared.program_mem;
    let pool_pages = (hi - lo) / hrt_abi::USER_MAP_PAGE;
    let bitmap_end = map.bitmap.checked_add(map.bytes);
    let valid = map.base == lo
        && map.pages == pool_pages
        && map.bytes >= pool_pages.div_ceil(8)
        && shared.ram.slice(map.bitmap, map.bytes).is_some()
        && bitmap_end.is_some_and(|end| end <= lo || map.bitmap >= hi);
    if !valid {
        return -(libc::EINVAL as i64);
    }
    match shared.user_map.set(map) {
        Ok(()) => 0,
        Err(_) => -(libc::EPERM as i64),
    }
}

/// Fills `[addr, addr+len)` of guest RAM with the host's random bytes (`nr::RANDOM`).
fn fill_random(ram: &super::memory::GuestRam, addr: u64, len: u64) -> i64 {
    let Some(dst) = ram.host_ptr(addr, len) else { return -(libc::EFAULT as i64) };
    let len = len as usize;
    let mut done = 0usize;
    while done < len {
        // SAFETY: the destination lies inside guest RAM (checked); getrandom writes at most the
        // length given.
        let n = unsafe { libc::getrandom(dst.add(done) as *mut libc::c_void, len - done, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
            if e == libc::EINTR {
                continue;
            }
            return -(e as i64);
        }
        done += n as usize;
    }
    len as i64
}

/// What the vCPU loop does after a hypercall.
pub enum Outcome {
    Continue,
    Stop(Exit),
}

pub fn serve(shared: &Shared, block_addr: u64) -> Outcome {
    let ram = &shared.ram;
    let Some(mut call) = ram.read_obj::<Hypercall>(block_addr) else {
        eprintln!("hrt: the guest passed a hypercall block outside its memory ({block_addr:#x})");
        return Outcome::Stop(Exit::Failure(1));
    };
    let mut outcome = Outcome::Continue;
    call.ret = match call.nr {
        nr::CONSOLE_WRITE => match ram.slice(call.args[0], call.args[1]) {
            Some(bytes) => {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(bytes);
                0
            }
            None => -(libc::EFAULT as i64),
        },
        nr::SHUTDOWN => {
            outcome = Outcome::Stop(Exit::Status(call.args[0] as i32));
            0
        }
        nr::START_CPUS => {
            shared.release_secondaries();
            0
        }
        nr::SYSCALL => match &shared.forwarder {
            Some(f) => {
                let a = &call.args;
                let view = ProgramMemory { ram, range: shared.program_mem, map: shared.user_map.get() };
                f.call(&view, a[0], [a[1], a[2], a[3], a[4], a[5], a[6]])
            }
            None => -(libc::ENOSYS as i64),
        },
        nr::MEM_COPY => {
            match (host_range(ram, call.args[0], call.args[2]), host_range(ram, call.args[1], call.args[2])) {
                (Some(dst), Some(src)) => {
                    // SAFETY: both ranges are inside guest RAM (checked); they may overlap.
                    unsafe { std::ptr::copy(src, dst, call.args[2] as usize) };
                    0
                }
                _ => -(libc::EFAULT as i64),
            }
        }
        nr::MEM_ZERO => match host_range(ram, call.args[0], call.args[1]) {
            Some(dst) => {
                // SAFETY: the range is inside guest RAM (checked).
                unsafe { zero(dst, call.args[1] as usize) };
                0
            }
            None => -(libc::EFAULT as i64),
        },
        nr::USER_MAP => register_user_map(shared, &call.args),
        nr::RANDOM => fill_random(ram, call.args[0], call.args[1]),
        nr::PANIC => {
            outcome = Outcome::Stop(Exit::Failure(hrt_abi::PANIC_STATUS as u8));
            0
        }
        _ => -(libc::ENOSYS as i64),
    };
    let ret_addr = block_addr + std::mem::offset_of!(Hypercall, ret) as u64;
    if ram.write_obj(ret_addr, &call.ret).is_err() {
        return Outcome::Stop(Exit::Failure(1));
    }
    outcome
}

/// Host huge-page size: zeroing gives whole 2 MiB pages back to the host.
const HUGE_PAGE: usize = 2 << 20;

/// The host address of the guest range `[addr, addr + len)` if it is all guest RAM. A raw
/// pointer, not a slice: the monitor writes through it, which a `&[u8]` would not allow (the
/// compiler may drop writes made through a shared reference).
fn host_range(ram: &super::memory::GuestRam, addr: u64, len: u64) -> Option<*mut u8> {
    ram.host_ptr(addr, len)
}

/// Zeroes `len` bytes of guest RAM at host address `dst` (MEM_ZERO). The whole 2 MiB pages
/// inside are given back to the host with `MADV_DONTNEED`: guest RAM is a private anonymous
/// mapping, so they read zero afterwards and cost the host nothing until written again, and
/// KVM drops its mappings of them through its MMU notifier. The ends are cleared with memset,
/// so a huge page the guest keeps using is not split (the guest would fault on its 4 KiB pieces
/// again).
///
/// # Safety
/// `[dst, dst + len)` must lie inside guest RAM.
unsafe fn zero(dst: *mut u8, len: usize) {
    let start = dst as usize;
    let end = start + len;
    let (inner_start, inner_end) = (start.next_multiple_of(HUGE_PAGE), end & !(HUGE_PAGE - 1));
    let memset = |from: usize, to: usize| {
        // SAFETY: [from, to) lies inside [dst, dst + len), guest RAM (the caller's promise).
        unsafe { std::ptr::write_bytes(from as *mut u8, 0, to - from) };
    };
    if inner_start >= inner_end {
        memset(start, end);
        return;
    }
    memset(start, inner_start);
    // SAFETY: advice on whole pages of our own guest RAM mapping, which the guest asked to zero.
    let released =
        unsafe { libc::madvise(inner_start as *mut libc::c_void, inner_end - inner_start, libc::MADV_DONTNEED) } == 0;
    if !released {
        memset(inner_start, inner_end);
    }
    memset(inner_end, end);
}
