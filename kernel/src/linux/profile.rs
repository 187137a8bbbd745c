//! `hrt run --profile`: the monitor interrupts every CPU a number of times a second with
//! `PROFILE_VECTOR`, and each interrupt notes the address of the instruction it stopped in
//! this CPU's part of an area the monitor reads once the program has ended (it names the
//! functions). On a PVM host the host's `perf` cannot see into the guest (its samples of a
//! vCPU all land in the host's event handler), so this is how the program's and the kernel's
//! time is found.
//!
//! In ring-3 mode the handler runs in ring 3 (emulated ring 0 only notes where the interrupt
//! found the CPU: `register_sampling`), when the interrupted code unmasks interrupts: a sample
//! of masked kernel code still names where it was interrupted. It takes no lock and only
//! writes its own CPU's words.

use core::ptr::null_mut;
use core::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use hrt_abi::channel::{Channel, PROFILE_VECTOR};

use crate::arch::traps::TrapFrame;

/// Samples kept per CPU: 65 s at 1,000 a second (512 KiB per CPU).
const CAPACITY: usize = 1 << 16;

/// The area (kernel address), null while profiling is off.
static AREA: AtomicPtr<u64> = AtomicPtr::new(null_mut());
/// Where the monitor looks for the program's and its interpreter's load addresses.
static PROGRAM_BASE: AtomicPtr<AtomicU64> = AtomicPtr::new(null_mut());
static INTERP_BASE: AtomicPtr<AtomicU64> = AtomicPtr::new(null_mut());
static CPUS: AtomicUsize = AtomicUsize::new(0);

/// With `flags::PROFILE`: makes the area, publishes it in the channel's header and takes the
/// interrupts. Without the memory, says so and profiles nothing.
pub fn init(ch: &'static Channel) {
    if crate::bootinfo::get().flags & hrt_abi::flags::PROFILE == 0 {
        return;
    }
    let cpus = crate::cpu::count();
    let bytes = cpus * (CAPACITY + 1) * 8;
    let order = crate::mem::order_for(bytes);
    let Some(phys) = crate::mem::alloc_pages(order, None) else {
        kprintln!("hrt: no memory for the profile's {} KiB; no profile", bytes >> 10);
        return;
    };
    super::usermem::zero(phys, bytes as u64);
    CPUS.store(cpus, Ordering::Relaxed);
    PROGRAM_BASE.store(&ch.header.profile_program_base as *const AtomicU64 as *mut AtomicU64, Ordering::Relaxed);
    INTERP_BASE.store(&ch.header.profile_interp_base as *const AtomicU64 as *mut AtomicU64, Ordering::Relaxed);
    AREA.store(crate::mem::phys_to_virt(phys).cast(), Ordering::Release);
    crate::arch::traps::register_sampling(PROFILE_VECTOR, sample);
    ch.header.profile_capacity.store(CAPACITY as u64, Ordering::Relaxed);
    ch.header.profile_area.store(phys, Ordering::Release);
}

/// The program was loaded with its link address 0 at `base` (0 for ET_EXEC), and its
/// interpreter at `interp` (0: none).
pub fn program_loaded(base: u64, interp: u64) {
    for (word, value) in [(&PROGRAM_BASE, base), (&INTERP_BASE, interp)] {
        let p = word.load(Ordering::Relaxed);
        if !p.is_null() {
            // SAFETY: the channel header's word, alive for the VM's life.
            unsafe { (*p).store(value, Ordering::Relaxed) };
        }
    }
}

/// The program mapped `[start, start + len)` of its descriptor `fd` from offset `off`,
/// executable: the monitor keeps the file to name the samples there (`nr::PROFILE_FILE`).
pub fn file_mapped(fd: u64, off: u64, start: u64, len: u64) {
    if AREA.load(Ordering::Relaxed).is_null() {
        return;
    }
    let args = [fd, off, start, len, 0, 0];
    if super::channel::monitor_op(hrt_abi::nr::PROFILE_FILE, args).is_none() {
        crate::arch::hypercall::call(hrt_abi::nr::PROFILE_FILE, &args[..4]);
    }
}

/// `PROFILE_VECTOR`: notes the interrupted instruction in this CPU's part of the area.
fn sample(frame: &mut TrapFrame) {
    let area = AREA.load(Ordering::Relaxed);
    let cpu = crate::cpu::id();
    if area.is_null() || cpu >= CPUS.load(Ordering::Relaxed) {
        return;
    }
    // SAFETY: the area holds `CPUS` parts of `CAPACITY + 1` words; only this CPU writes its
    // part, with interrupts off (the handler's), and the monitor reads it after the end.
    unsafe {
        let part = area.add(cpu * (CAPACITY + 1));
        let taken = part.read_volatile();
        if (taken as usize) < CAPACITY {
            part.add(1 + taken as usize).write_volatile(frame.rip);
        }
        part.write_volatile(taken + 1);
    }
}
