//! The program's pool is given to KVM in growing pieces, as the kernel first makes them
//! present (`nr::RAM_READY`), not all at once before the boot.
//!
//! Why: KVM's bookkeeping of a memory slot (on a shadow-paging host such as PVM, its reverse
//! maps and write-tracking arrays, ~2.5 MiB per GiB, allocated and cleared) takes ~1 ms per
//! GiB to set up and ~0.3 ms per GiB to tear down: 15-20 ms of a ~50 ms `hrt run` with the
//! default 16 GiB, for memory most programs never touch. A program now pays for the part of
//! its pool it uses, in pieces that double (so a few hypercalls in all): the first piece while
//! the kernel boots, the next ones ahead of need while nobody waits (up to 2 GiB, or twice the
//! highest address asked for), or when the kernel asks.
//!
//! The kernel's own share of RAM (the top of RAM above the pool, `BootInfo::kernel_lazy`) is
//! given the same way, growing downward: its top piece at start (`boot_info`), the rest as the
//! kernel's allocator runs out (`nr::KERNEL_RAM_READY`), each piece at least doubling what is
//! registered. Most programs use a few MiB of a share of 1 GiB (at the default 16 GiB).
//!
//! The kernel never touches pool memory before it is present in the program's page tables,
//! and it asks before it makes any present; it gives its allocator none of its share before
//! the monitor has registered it. A touch of RAM KVM does not know yet is an MMIO exit, which
//! the vCPU loop reports as a kernel fault rather than answer with made-up bytes.

use std::sync::{Arc, Condvar, Mutex};

use kvm_ioctls::VmFd;

use hrt_abi::layout;

use super::boot_info::ram_offset;
use super::memory::{register, MemSlot, GRANULE};

/// The first piece: what the kernel needs first (the program's image and break).
const FIRST_PIECE: u64 = 512 << 20;
/// Registered ahead of any request, after the first piece (see `serve`).
const READ_AHEAD: u64 = 2 << 30;

/// How the registered part grows before anybody asks.
#[derive(Clone, Copy)]
pub struct Growth {
    /// The first piece, registered at once.
    pub first: u64,
    /// Registered ahead of any request, after the first piece (see `serve`).
    pub read_ahead: u64,
}

impl Growth {
    /// A booting program: its image, break window, main stack and first thread stacks.
    pub const BOOT: Growth = Growth { first: FIRST_PIECE, read_ahead: READ_AHEAD };
    /// A forked child: what its parent used is registered before it starts (`fork.rs`); past
    /// that, pieces as it asks (a fork that execs at once asks for little).
    pub const FORKED: Growth = Growth { first: 64 << 20, read_ahead: 0 };
}

/// The registration of the pool and of the kernel's lazy span, shared by the vCPU threads that
/// ask and the thread that does it. The vCPU threads run under the seccomp filter, which allows
/// no memory-slot ioctl: a thread of its own, started before them, registers the pieces.
pub struct PoolSlots {
    /// The pool's end.
    hi: u64,
    /// The kernel's share that is registered only as asked: `[kernel.0, kernel.1)`.
    kernel: (u64, u64),
    /// The top of RAM, where the kernel's share ends: its registered part is counted from here.
    top: u64,
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    /// The pool is KVM's below this guest address.
    ready_to: u64,
    /// The highest address a vCPU has asked for.
    wanted: u64,
    /// The kernel's share is KVM's from this guest address up.
    kernel_from: u64,
    /// The lowest address of the kernel's share a vCPU has asked for.
    kernel_wanted: u64,
    /// A registration failed: the VM cannot go on.
    failed: Option<String>,
}

/// What the registering thread does next.
enum Job {
    /// Registers the pool below this address.
    Pool(u64),
    /// Registers the kernel's share from this address up.
    Kernel(u64),
}

impl PoolSlots {
    /// Starts the thread that registers the pool `[pool.0, pool.1)` (the part not yet given)
    /// and the kernel's lazy span `[kernel.0, kernel.1)` (right above the pool; up to `top`,
    /// the top of RAM, the share is given), `ranges` as
    /// [`super::memory::GuestRam::give_to_except`] left them for the span covering both (one
    /// per RAM range, ascending; their slot numbers, the highest, are free for the pieces). It
    /// registers the pool's first piece at once, while the kernel boots.
    pub fn start(
        vm: Arc<VmFd>,
        ranges: Vec<MemSlot>,
        pool: (u64, u64),
        kernel: (u64, u64),
        top: u64,
        growth: Growth,
    ) -> std::io::Result<Arc<PoolSlots>> {
        // Nothing of a span to give: all of it is KVM's.
        let (lo, hi) = if pool.0 < pool.1 && !ranges.is_empty() { pool } else { (u64::MAX, u64::MAX) };
        let kernel = if kernel.0 < kernel.1 && !ranges.is_empty() { kernel } else { (0, 0) };
        let state = State {
            ready_to: lo,
            wanted: lo.saturating_add(1).min(hi),
            kernel_from: kernel.1,
            kernel_wanted: kernel.1,
            failed: None,
        };
        let slots = Arc::new(PoolSlots { hi, kernel, top, state: Mutex::new(state), changed: Condvar::new() });
        if lo < hi || kernel.0 < kernel.1 {
            let me = slots.clone();
            std::thread::Builder::new()
                .name("hrt-memslots".into())
                .spawn(move || me.serve(&vm, &ranges, lo, growth))?;
        }
        Ok(slots)
    }

    /// Makes the pool KVM's at least below guest address `end` (the whole pool for an `end`
    /// beyond it); returns the address below which it now is, or the error that stops the VM.
    pub fn ensure(&self, end: u64) -> Result<u64, String> {
        let end = end.min(self.hi);
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if end > st.wanted {
            st.wanted = end;
            self.changed.notify_all();
        }
        loop {
            if let Some(e) = &st.failed {
                return Err(e.clone());
            }
            if end <= st.ready_to {
                return Ok(st.ready_to);
            }
            st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The address below which the pool is KVM's now.
    pub fn ready_to(&self) -> u64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).ready_to
    }

    /// Makes the kernel's share KVM's at least from guest address `from` up; returns the address
    /// from which it now is (0 where all of RAM is), or the error that stops the VM. `from` is
    /// the guest's and untrusted: only the lazy span is ever registered, an address below it
    /// asks for all of it and one above it for nothing.
    pub fn ensure_kernel(&self, from: u64) -> Result<u64, String> {
        let (lo, hi) = self.kernel;
        if lo >= hi {
            return Ok(0);
        }
        let from = from.clamp(lo, hi);
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if from < st.kernel_wanted {
            st.kernel_wanted = from;
            self.changed.notify_all();
        }
        loop {
            if let Some(e) = &st.failed {
                return Err(e.clone());
            }
            if from >= st.kernel_from {
                return Ok(st.kernel_from);
            }
            st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The address from which the kernel's share is KVM's now (0 where all of RAM is).
    pub fn kernel_from(&self) -> u64 {
        if self.kernel.0 >= self.kernel.1 {
            return 0;
        }
        self.state.lock().unwrap_or_else(|e| e.into_inner()).kernel_from
    }

    /// The registering thread. For the pool, each round doubles the registered part (at least
    /// the first piece, at least what was asked), in whole 2 MiB pages, one slot per RAM range
    /// it spans; with nothing asked, it reads ahead. For the kernel's share, a request doubles
    /// the registered part of the share (counted in RAM from the top of RAM down), at least
    /// down to what was asked; nothing is read ahead (a program rarely needs more than the
    /// first piece). Both take their slot numbers from one counter.
    fn serve(&self, vm: &VmFd, ranges: &[MemSlot], lo: u64, growth: Growth) {
        let mut next_slot = ranges.iter().map(|r| r.slot).min().unwrap_or(0);
        let mut ready_to = lo;
        let mut kernel_from = self.kernel.1;
        loop {
            let grown = lo.saturating_add((2 * ready_to.saturating_sub(lo)).max(growth.first));
            let job = {
                let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    if st.kernel_wanted < st.kernel_from {
                        break Job::Kernel(st.kernel_wanted.min(self.kernel_doubled(st.kernel_from)));
                    }
                    if st.ready_to >= self.hi {
                        // The pool is all KVM's; the kernel's share may still be asked for.
                        if st.kernel_from <= self.kernel.0 {
                            return;
                        }
                    } else if st.wanted > st.ready_to {
                        // Asked for: at least that, at least one doubling.
                        break Job::Pool(st.wanted.max(grown));
                    } else if st.ready_to < lo + (2 * (st.wanted - lo)).max(growth.read_ahead) {
                        // Read ahead, one doubling at a time, while nobody waits: up to twice
                        // the highest address asked for, and at least READ_AHEAD (a program's
                        // break window, main stack and first thread stacks lie around 1 GiB into
                        // the pool, and a vCPU that finds them unregistered waits ~1 ms per GiB).
                        break Job::Pool(grown);
                    }
                    st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
                }
            };
            let (from, to) = match job {
                Job::Pool(wanted) => (ready_to, wanted.next_multiple_of(GRANULE).min(self.hi)),
                Job::Kernel(wanted) => ((wanted & !(GRANULE - 1)).max(self.kernel.0), kernel_from),
            };
            let mut pieces = Vec::new();
            for r in ranges {
                let (base, top) = (r.guest_phys_addr, r.guest_phys_addr + r.memory_size);
                let (from, to) = (from.max(base), to.min(top));
                if from < to {
                    let host = r.userspace_addr + (from - base);
                    pieces.push(MemSlot {
                        slot: next_slot,
                        flags: 0,
                        guest_phys_addr: from,
                        memory_size: to - from,
                        userspace_addr: host,
                    });
                    next_slot += 1;
                }
            }
            let outcome = register(vm, &pieces);
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            match (outcome, job) {
                (Ok(()), Job::Pool(_)) => {
                    ready_to = to;
                    st.ready_to = to;
                }
                (Ok(()), Job::Kernel(_)) => {
                    kernel_from = from;
                    st.kernel_from = from;
                }
                (Err(e), _) => st.failed = Some(e.to_string()),
            }
            self.changed.notify_all();
            if st.failed.is_some() {
                return;
            }
        }
    }

    /// The address from which twice what is registered of the kernel's share now (from `from`
    /// to the top of RAM, counted without the hole below 4 GiB) would be.
    fn kernel_doubled(&self, from: u64) -> u64 {
        let top = ram_offset(self.top);
        let registered = top.saturating_sub(ram_offset(from));
        layout::ram_phys(top.saturating_sub(2 * registered))
    }
}

#[cfg(test)]
mod tests {
    use super::super::memory::GuestRam;
    use super::*;

    const MIB: u64 = 1 << 20;

    /// The kernel's share at --mem 3200M straddles the hole below 4 GiB: it grows downward in
    /// doublings counted in RAM, across the hole, never past the span whatever the guest asks,
    /// and its pieces' slots clash neither with the pool's nor with what was given at start (a
    /// second slot over registered memory would fail with EEXIST).
    #[test]
    fn the_kernel_share_grows_downward_within_its_span() {
        let Ok(kvm) = kvm_ioctls::Kvm::new() else {
            eprintln!("no /dev/kvm: skipped");
            return;
        };
        let vm = Arc::new(kvm.create_vm().expect("a VM"));
        let ram = GuestRam::map(3200 * MIB, false).expect("guest RAM");
        let (low_end, high) = (layout::LOW_RAM_END, layout::HIGH_RAM_BASE);
        let pool = (4 * MIB, 3000 * MIB);
        let kernel = (3000 * MIB, high + 36 * MIB);
        let ranges = ram.give_to_except(&vm, (pool.0, kernel.1)).expect("the rest of RAM");
        let slots =
            PoolSlots::start(vm, ranges, pool, kernel, ram.phys_end(), Growth::FORKED).expect("the memory-slot thread");
        assert_eq!(slots.kernel_from(), kernel.1);
        // At or above what is registered: nothing to do.
        assert_eq!(slots.ensure_kernel(u64::MAX), Ok(kernel.1));
        assert_eq!(slots.ensure_kernel(kernel.1), Ok(kernel.1));
        // A page below: twice the 92 MiB registered of the share, counted without the hole.
        assert_eq!(slots.ensure_kernel(kernel.1 - 4096), Ok(low_end - 56 * MIB));
        // The pool grows meanwhile, from its own slot numbers.
        assert!(slots.ensure(1 << 30).expect("the pool") >= 1 << 30);
        // The hole is above that now.
        assert_eq!(slots.ensure_kernel(low_end + MIB), Ok(low_end - 56 * MIB));
        // The next doubling would reach below the span: all of it, and no more.
        assert_eq!(slots.ensure_kernel(low_end - 60 * MIB), Ok(kernel.0));
        assert_eq!(slots.ensure_kernel(4096), Ok(kernel.0));
        assert_eq!(slots.ensure_kernel(0), Ok(kernel.0));
        assert_eq!(slots.kernel_from(), kernel.0);
        assert_eq!(slots.ensure(u64::MAX), Ok(pool.1));
    }
}
