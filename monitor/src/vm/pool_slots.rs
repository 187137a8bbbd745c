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
//! The kernel never touches pool memory before it is present in the program's page tables,
//! and it asks before it makes any present; a touch of RAM KVM does not know yet is an MMIO
//! exit, which the vCPU loop reports as a kernel fault rather than answer with made-up bytes.

use std::sync::{Arc, Condvar, Mutex};

use kvm_ioctls::VmFd;

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

/// The pool's registration, shared by the vCPU threads that ask and the thread that does it.
/// The vCPU threads run under the seccomp filter, which allows no memory-slot ioctl: a thread
/// of its own, started before them, registers the pieces.
pub struct PoolSlots {
    hi: u64,
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    /// The pool is KVM's below this guest address.
    ready_to: u64,
    /// The highest address a vCPU has asked for.
    wanted: u64,
    /// A registration failed: the VM cannot go on.
    failed: Option<String>,
}

impl PoolSlots {
    /// Starts the thread that registers the pool, `ranges` as
    /// [`super::memory::GuestRam::give_to_except`] left them (one per RAM range, ascending;
    /// their slot numbers, the highest, are free for the pieces). It registers the first piece
    /// at once, while the kernel boots.
    pub fn start(vm: Arc<VmFd>, ranges: Vec<MemSlot>, growth: Growth) -> std::io::Result<Arc<PoolSlots>> {
        // No range left to give: all of RAM is KVM's.
        let lo = ranges.first().map_or(u64::MAX, |r| r.guest_phys_addr);
        let hi = ranges.last().map_or(u64::MAX, |r| r.guest_phys_addr + r.memory_size);
        let state = State { ready_to: lo, wanted: lo.saturating_add(1), failed: None };
        let slots = Arc::new(PoolSlots { hi, state: Mutex::new(state), changed: Condvar::new() });
        if !ranges.is_empty() {
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

    /// The registering thread: each round doubles the registered part (at least the first
    /// piece, at least what was asked), in whole 2 MiB pages, one slot per RAM range it spans;
    /// with nothing asked, it reads ahead.
    fn serve(&self, vm: &VmFd, ranges: &[MemSlot], lo: u64, growth: Growth) {
        let mut next_slot = ranges.iter().map(|r| r.slot).min().unwrap_or(0);
        let mut ready_to = lo;
        loop {
            let grown = lo + (2 * (ready_to - lo)).max(growth.first);
            let wanted = {
                let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    if st.wanted > st.ready_to {
                        // Asked for: at least that, at least one doubling.
                        break st.wanted.max(grown);
                    }
                    // Read ahead, one doubling at a time, while nobody waits: up to twice the
                    // highest address asked for, and at least READ_AHEAD (a program's break
                    // window, main stack and first thread stacks lie around 1 GiB into the pool,
                    // and a vCPU that finds them unregistered waits ~1 ms per GiB).
                    if st.ready_to < lo + (2 * (st.wanted - lo)).max(growth.read_ahead) {
                        break grown;
                    }
                    st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
                }
            };
            let target = wanted.next_multiple_of(GRANULE).min(self.hi);
            let mut pieces = Vec::new();
            for r in ranges {
                let (base, top) = (r.guest_phys_addr, r.guest_phys_addr + r.memory_size);
                let (from, to) = (ready_to.max(base), target.min(top));
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
            match outcome {
                Ok(()) => {
                    ready_to = target;
                    st.ready_to = target;
                }
                Err(e) => st.failed = Some(e.to_string()),
            }
            self.changed.notify_all();
            if st.failed.is_some() || ready_to >= self.hi {
                return;
            }
        }
    }
}
