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
//!
//! An exec starts the profile again (the monitor names the samples with the symbols of the
//! last image): each CPU's count carries the exec generation it counts for, and the handler
//! starts over when the generation has moved on.

use core::ptr::null_mut;
use core::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use hrt_abi::channel::{Channel, ChannelHeader, PROFILE_GENERATION_SHIFT, PROFILE_VECTOR};

use crate::arch::traps::TrapFrame;

/// Samples kept per CPU: 65 s at 1,000 a second (512 KiB per CPU).
const CAPACITY: usize = 1 << 16;

/// The area (kernel address), null while profiling is off.
static AREA: AtomicPtr<u64> = AtomicPtr::new(null_mut());
/// The channel's header, where the monitor finds the load addresses and the generation.
static HEADER: AtomicPtr<ChannelHeader> = AtomicPtr::new(null_mut());
static CPUS: AtomicUsize = AtomicUsize::new(0);
/// Images loaded (the first program, then one per exec), and the generation samples count for.
static LOADS: AtomicU64 = AtomicU64::new(0);
static GENERATION: AtomicU64 = AtomicU64::new(0);

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
    HEADER.store(&ch.header as *const ChannelHeader as *mut ChannelHeader, Ordering::Relaxed);
    AREA.store(crate::mem::phys_to_virt(phys).cast(), Ordering::Release);
    crate::arch::traps::register_sampling(PROFILE_VECTOR, sample);
    ch.header.profile_capacity.store(CAPACITY as u64, Ordering::Relaxed);
    ch.header.profile_area.store(phys, Ordering::Release);
}

fn header() -> Option<&'static ChannelHeader> {
    // SAFETY: the channel's header lives for the VM's life once `init` stored it.
    unsafe { HEADER.load(Ordering::Relaxed).as_ref() }
}

/// The program (or, after an exec, the new image) was loaded with its link address 0 at
/// `base` (0 for ET_EXEC), and its interpreter at `interp` (0: none). After an exec the
/// samples start over and the monitor forgets the old image's libraries.
pub fn program_loaded(base: u64, interp: u64) {
    let Some(h) = header() else { return };
    h.profile_program_base.store(base, Ordering::Relaxed);
    h.profile_interp_base.store(interp, Ordering::Relaxed);
    let generation = LOADS.fetch_add(1, Ordering::Relaxed);
    if generation > 0 {
        GENERATION.store(generation, Ordering::Relaxed);
        h.profile_generation.store(generation, Ordering::Relaxed);
        tell_monitor([hrt_abi::channel::PROFILE_EXECED, 0, 0, 0, 0, 0]);
    }
}

/// The program mapped `[start, start + len)` of its descriptor `fd` from offset `off`,
/// executable: the monitor keeps the file to name the samples there (`nr::PROFILE_FILE`).
pub fn file_mapped(fd: u64, off: u64, start: u64, len: u64) {
    if !AREA.load(Ordering::Relaxed).is_null() {
        tell_monitor([fd, off, start, len, 0, 0]);
    }
}

fn tell_monitor(args: [u64; 6]) {
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
    let generation = GENERATION.load(Ordering::Relaxed);
    // SAFETY: the area holds `CPUS` parts of `CAPACITY + 1` words; only this CPU writes its
    // part, with interrupts off (the handler's), and the monitor reads it after the end.
    unsafe {
        let part = area.add(cpu * (CAPACITY + 1));
        let word = part.read_volatile();
        let taken = if word >> PROFILE_GENERATION_SHIFT == generation {
            word & ((1 << PROFILE_GENERATION_SHIFT) - 1)
        } else {
            0
        };
        if (taken as usize) < CAPACITY {
            part.add(1 + taken as usize).write_volatile(frame.rip);
        }
        part.write_volatile(generation << PROFILE_GENERATION_SHIFT | (taken + 1));
    }
}
