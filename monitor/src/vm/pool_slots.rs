//! The program's pool is given to KVM chunk by chunk (`layout::POOL_CHUNK`, 64 MiB), as the
//! kernel first makes memory in them present (`nr::RAM_READY`), not all at once before the boot.
//!
//! Why: KVM's bookkeeping of a memory slot (on a shadow-paging host such as PVM, its reverse
//! maps and write-tracking arrays, ~2.5 MiB per GiB, allocated and cleared) takes ~1 ms per
//! GiB to set up and ~0.3 ms per GiB to tear down: 15-20 ms of a ~50 ms `hrt run` with the
//! then default 16 GiB, for memory most programs never touch. A program pays for the chunks it
//! uses: its image and heap at the pool's start, its stacks and mappings after the break's
//! window (~1 GiB in). A chunk asked for right above a registered run of them registers at
//! least as much again as that run, so a heap or a run of mappings that grows asks a few times
//! (doubling), not once per chunk. (Until 2026-11-30 the pool was registered from its start
//! up, doubling, and 2 GiB ahead of any request: the break's window in between, ~4 GiB for
//! an empty program, 4-5 ms of host time on a 2-CPU host while the kernel booted, ~1.2 ms of
//! the exit, and the same again in every forked child.)
//!
//! The kernel's own share of RAM (the top of RAM above the pool, `BootInfo::kernel_lazy`) is
//! given in growing pieces, downward: its top piece at start (`boot_info`), the rest as the
//! kernel's allocator runs out (`nr::KERNEL_RAM_READY`), each piece at least doubling what is
//! registered. Most programs use a few MiB of a share of 4 GiB (at the default 64 GiB).
//!
//! The kernel never touches pool memory before it is present in the program's page tables,
//! and it asks before it makes any present; it gives its allocator none of its share before
//! the monitor has registered it. A touch of RAM KVM does not know yet is an MMIO exit, which
//! the vCPU loop reports as a kernel fault rather than answer with made-up bytes.

use std::sync::{Arc, Condvar, Mutex};

use kvm_ioctls::VmFd;

use hrt_abi::layout::{self, POOL_CHUNK};

use super::boot_info::ram_offset;
use super::memory::{register, MemSlot, GRANULE};

/// The registration of the pool and of the kernel's lazy span, shared by the vCPU threads that
/// ask and the thread that does it. The vCPU threads run under the seccomp filter, which allows
/// no memory-slot ioctl: a thread of its own, started before them, registers the chunks.
pub struct PoolSlots {
    /// The pool: `[pool.0, pool.1)`.
    pool: (u64, u64),
    /// The kernel's share that is registered only as asked: `[kernel.0, kernel.1)`.
    kernel: (u64, u64),
    /// The top of RAM, where the kernel's share ends: its registered part is counted from here.
    top: u64,
    /// RAM ranges of the span covering both, as [`super::memory::GuestRam::give_to_except`]
    /// left them: where each chunk's host memory is.
    ranges: Vec<MemSlot>,
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    /// One bit per chunk of guest-physical memory (numbered from address 0): registered.
    registered: Vec<u64>,
    /// Chunk ranges `[first, last)` a vCPU waits for.
    wanted: Vec<(u64, u64)>,
    /// The next free memory-slot number.
    next_slot: u32,
    /// The kernel's share is KVM's from this guest address up.
    kernel_from: u64,
    /// The lowest address of the kernel's share a vCPU has asked for.
    kernel_wanted: u64,
    /// A registration failed: the VM cannot go on.
    failed: Option<String>,
}

impl State {
    fn is_registered(&self, chunk: u64) -> bool {
        self.registered.get(chunk as usize / 64).is_some_and(|w| w & (1 << (chunk % 64)) != 0)
    }

    fn mark(&mut self, first: u64, last: u64) {
        for chunk in first..last {
            let i = chunk as usize / 64;
            if self.registered.len() <= i {
                self.registered.resize(i + 1, 0);
            }
            self.registered[i] |= 1 << (chunk % 64);
        }
    }

    /// The end (a chunk number) of the registered run from `chunk` up (`chunk` itself if it
    /// is not registered).
    fn run_end(&self, mut chunk: u64) -> u64 {
        while self.is_registered(chunk) {
            chunk += 1;
        }
        chunk
    }
}

/// What the registering thread does next.
enum Job {
    /// Registers the pool's chunks `[first, last)` that are not yet KVM's.
    Pool(u64, u64),
    /// Registers the kernel's share from this address up.
    Kernel(u64),
}

impl PoolSlots {
    /// Registers the chunks `initial` (byte ranges in the pool) of the pool `[pool.0, pool.1)`
    /// at once, and starts the thread that registers the rest of the pool and the kernel's lazy
    /// span `[kernel.0, kernel.1)` (right above the pool; up to `top`, the top of RAM, the
    /// share is given) as vCPUs ask. `ranges`: as [`super::memory::GuestRam::give_to_except`]
    /// left them for the span covering both (one per RAM range, ascending; their slot numbers,
    /// the highest, are free for the chunks).
    pub fn start(
        vm: Arc<VmFd>,
        ranges: Vec<MemSlot>,
        pool: (u64, u64),
        kernel: (u64, u64),
        top: u64,
        initial: &[(u64, u64)],
    ) -> crate::error::Result<Arc<PoolSlots>> {
        // Nothing of a span to give: all of it is KVM's.
        let pool = if pool.0 < pool.1 && !ranges.is_empty() { pool } else { (0, 0) };
        let kernel = if kernel.0 < kernel.1 && !ranges.is_empty() { kernel } else { (0, 0) };
        let state = State {
            registered: Vec::new(),
            wanted: Vec::new(),
            next_slot: ranges.iter().map(|r| r.slot).min().unwrap_or(0),
            kernel_from: kernel.1,
            kernel_wanted: kernel.1,
            failed: None,
        };
        let slots =
            Arc::new(PoolSlots { pool, kernel, top, ranges, state: Mutex::new(state), changed: Condvar::new() });
        for &(start, end) in initial {
            let (first, last) = slots.chunks(start, end);
            if first < last {
                let mut st = slots.state.lock().unwrap_or_else(|e| e.into_inner());
                slots.register_chunks(&vm, &mut st, first, last)?;
            }
        }
        if pool.0 < pool.1 || kernel.0 < kernel.1 {
            let me = slots.clone();
            std::thread::Builder::new()
                .name("hrt-memslots".into())
                .spawn(move || me.serve(&vm))
                .map_err(|e| crate::error::err!("cannot start the memory-slot thread: {e}"))?;
        }
        Ok(slots)
    }

    /// The chunks `[first, last)` that hold the pool's part of `[start, end)` (empty if none).
    fn chunks(&self, start: u64, end: u64) -> (u64, u64) {
        let (start, end) = (start.max(self.pool.0), end.min(self.pool.1));
        if start >= end {
            return (0, 0);
        }
        (start / POOL_CHUNK, (end - 1) / POOL_CHUNK + 1)
    }

    /// Makes the pool KVM's at least in `[start, end)` (guest addresses from the guest: only
    /// the pool's part counts); returns the end of the registered run that holds `start`, or
    /// the error that stops the VM.
    pub fn ensure(&self, start: u64, end: u64) -> Result<u64, String> {
        let (first, last) = self.chunks(start, end);
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if first < last && !(first..last).all(|c| st.is_registered(c)) {
            st.wanted.push((first, last));
            self.changed.notify_all();
        }
        loop {
            if let Some(e) = &st.failed {
                return Err(e.clone());
            }
            if (first..last).all(|c| st.is_registered(c)) {
                return Ok(st.run_end(first) * POOL_CHUNK);
            }
            st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The pool's registered runs, as byte ranges within the pool (a forked child's VM gets
    /// them before it runs: its kernel's copy of the chunk map says they are KVM's).
    pub fn registered_runs(&self) -> Vec<(u64, u64)> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (mut runs, mut chunk) = (Vec::new(), self.pool.0 / POOL_CHUNK);
        let last = self.pool.1.div_ceil(POOL_CHUNK);
        while chunk < last {
            if !st.is_registered(chunk) {
                chunk += 1;
                continue;
            }
            let end = st.run_end(chunk);
            runs.push(((chunk * POOL_CHUNK).max(self.pool.0), (end * POOL_CHUNK).min(self.pool.1)));
            chunk = end;
        }
        runs
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

    /// The registering thread. For the pool, a request registers its chunks, and at least as
    /// many more as the registered run right below it holds (doubling a run that grows). For
    /// the kernel's share, a request doubles the registered part of the share (counted in RAM
    /// from the top of RAM down), at least down to what was asked. Both take their slot
    /// numbers from one counter.
    fn serve(&self, vm: &VmFd) {
        loop {
            let job = {
                let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    if st.kernel_wanted < st.kernel_from {
                        break Job::Kernel(st.kernel_wanted.min(self.kernel_doubled(st.kernel_from)));
                    }
                    let wanted = std::mem::take(&mut st.wanted);
                    let mut open = wanted.into_iter().filter(|&(f, l)| !(f..l).all(|c| st.is_registered(c)));
                    if let Some((first, last)) = open.next() {
                        let rest: Vec<_> = open.collect();
                        st.wanted = rest;
                        break Job::Pool(first, self.grown(&st, first, last));
                    }
                    st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
                }
            };
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let outcome = match job {
                Job::Pool(first, last) => self.register_chunks(vm, &mut st, first, last),
                Job::Kernel(wanted) => {
                    let from = (wanted & !(GRANULE - 1)).max(self.kernel.0);
                    let to = st.kernel_from;
                    let pieces = self.pieces(&mut st, from, to);
                    register(vm, &pieces).map(|()| st.kernel_from = from)
                }
            };
            if let Err(e) = outcome {
                st.failed = Some(e.to_string());
            }
            self.changed.notify_all();
            if st.failed.is_some() {
                return;
            }
        }
    }

    /// The chunks a request for `[first, last)` registers: up to `last`, and at least as many
    /// past `first` as the registered run that ends at `first` holds; within the pool.
    fn grown(&self, st: &State, first: u64, last: u64) -> u64 {
        let mut below = first;
        while below > 0 && st.is_registered(below - 1) {
            below -= 1;
        }
        last.max(first + (first - below)).min(self.pool.1.div_ceil(POOL_CHUNK))
    }

    /// Registers the chunks of `[first, last)` that are not yet KVM's (the pool's part of
    /// them), one slot per run per RAM range, and marks them registered.
    fn register_chunks(&self, vm: &VmFd, st: &mut State, first: u64, last: u64) -> crate::error::Result<()> {
        let mut chunk = first;
        while chunk < last {
            if st.is_registered(chunk) {
                chunk += 1;
                continue;
            }
            let mut end = chunk;
            while end < last && !st.is_registered(end) {
                end += 1;
            }
            let from = (chunk * POOL_CHUNK).max(self.pool.0);
            let to = (end * POOL_CHUNK).min(self.pool.1);
            let pieces = self.pieces(st, from, to);
            register(vm, &pieces)?;
            st.mark(chunk, end);
            chunk = end;
        }
        Ok(())
    }

    /// Memory slots for guest range `[from, to)` of the span, one per RAM range it covers,
    /// numbered from the counter.
    fn pieces(&self, st: &mut State, from: u64, to: u64) -> Vec<MemSlot> {
        let mut pieces = Vec::new();
        for r in &self.ranges {
            let (base, top) = (r.guest_phys_addr, r.guest_phys_addr + r.memory_size);
            let (from, to) = (from.max(base), to.min(top));
            if from < to {
                pieces.push(MemSlot {
                    slot: st.next_slot,
                    flags: 0,
                    guest_phys_addr: from,
                    memory_size: to - from,
                    userspace_addr: r.userspace_addr + (from - base),
                });
                st.next_slot += 1;
            }
        }
        pieces
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

    /// A VM with `mib` MiB of guest RAM, all given to it but `later` (returned as the slots
    /// left for the memory-slot thread), or None where there is no /dev/kvm.
    fn vm_with_ram(mib: u64, later: (u64, u64)) -> Option<(Arc<VmFd>, GuestRam, Vec<MemSlot>)> {
        let Ok(kvm) = kvm_ioctls::Kvm::new() else {
            eprintln!("no /dev/kvm: skipped");
            return None;
        };
        let vm = Arc::new(kvm.create_vm().expect("a VM"));
        let ram = GuestRam::map(mib * MIB, false).expect("guest RAM");
        let ranges = ram.give_to_except(&vm, later).expect("the rest of RAM");
        Some((vm, ram, ranges))
    }

    /// The kernel's share at --mem 3200M straddles the hole below 4 GiB: it grows downward in
    /// doublings counted in RAM, across the hole, never past the span whatever the guest asks,
    /// and its pieces' slots clash neither with the pool's nor with what was given at start (a
    /// second slot over registered memory would fail with EEXIST).
    #[test]
    fn the_kernel_share_grows_downward_within_its_span() {
        let (low_end, high) = (layout::LOW_RAM_END, layout::HIGH_RAM_BASE);
        let pool = (4 * MIB, 3000 * MIB);
        let kernel = (3000 * MIB, high + 36 * MIB);
        let Some((vm, ram, ranges)) = vm_with_ram(3200, (pool.0, kernel.1)) else { return };
        let slots = PoolSlots::start(vm, ranges, pool, kernel, ram.phys_end(), &[]).expect("the memory-slot thread");
        assert_eq!(slots.kernel_from(), kernel.1);
        // At or above what is registered: nothing to do.
        assert_eq!(slots.ensure_kernel(u64::MAX), Ok(kernel.1));
        assert_eq!(slots.ensure_kernel(kernel.1), Ok(kernel.1));
        // A page below: twice the 92 MiB registered of the share, counted without the hole.
        assert_eq!(slots.ensure_kernel(kernel.1 - 4096), Ok(low_end - 56 * MIB));
        // The pool grows meanwhile, from its own slot numbers.
        assert!(slots.ensure(pool.0, 1 << 30).expect("the pool") >= 1 << 30);
        // The hole is above that now.
        assert_eq!(slots.ensure_kernel(low_end + MIB), Ok(low_end - 56 * MIB));
        // The next doubling would reach below the span: all of it, and no more.
        assert_eq!(slots.ensure_kernel(low_end - 60 * MIB), Ok(kernel.0));
        assert_eq!(slots.ensure_kernel(4096), Ok(kernel.0));
        assert_eq!(slots.ensure_kernel(0), Ok(kernel.0));
        assert_eq!(slots.kernel_from(), kernel.0);
        assert_eq!(slots.ensure(0, u64::MAX), Ok(pool.1.next_multiple_of(POOL_CHUNK)));
    }

    /// The pool is registered by chunks, where it is asked for: a request in the middle of the
    /// pool registers its chunks only, one right above a registered run at least doubles it,
    /// runs that meet make one, and the runs a forked child gets are what was registered. A
    /// slot over memory already registered would fail (EEXIST), and so would the request.
    #[test]
    fn the_pool_is_registered_by_chunks_where_it_is_asked_for() {
        let c = POOL_CHUNK;
        let pool = (4 * MIB, 1600 * MIB);
        let Some((vm, ram, ranges)) = vm_with_ram(2048, pool) else { return };
        let first = [(pool.0, c)];
        let slots = PoolSlots::start(vm, ranges, pool, (0, 0), ram.phys_end(), &first).expect("the memory-slot thread");
        assert_eq!(slots.registered_runs(), vec![(pool.0, c)]);
        // Inside the first chunk: nothing to do.
        assert_eq!(slots.ensure(pool.0, pool.0 + 4096), Ok(c));
        // A page in chunk 16 (1 GiB in): that chunk only, a run of its own.
        assert_eq!(slots.ensure(16 * c + 4096, 16 * c + 8192), Ok(17 * c));
        assert_eq!(slots.registered_runs(), vec![(pool.0, c), (16 * c, 17 * c)]);
        // Chunk 17, right above the run of one: one more (at least as many as below).
        assert_eq!(slots.ensure(17 * c, 17 * c + 1), Ok(18 * c));
        // Chunk 18 above a run of two: two more.
        assert_eq!(slots.ensure(18 * c, 18 * c + 1), Ok(20 * c));
        // Chunks 1-2 above the first: two asked, one run below, so two; chunk 3 above three:
        // three more, up to chunk 6.
        assert_eq!(slots.ensure(c, 3 * c), Ok(3 * c));
        assert_eq!(slots.ensure(3 * c, 3 * c + 1), Ok(6 * c));
        // A range across registered and unregistered chunks (6-15 are not): the missing ones,
        // and the runs meet: one run from the pool's start to chunk 20.
        assert_eq!(slots.ensure(5 * c, 17 * c), Ok(20 * c));
        assert_eq!(slots.registered_runs(), vec![(pool.0, 20 * c)]);
        // Past the pool's end: its last chunk at most, clipped to the pool.
        assert_eq!(slots.ensure(24 * c, u64::MAX), Ok(pool.1.next_multiple_of(c)));
        assert_eq!(slots.registered_runs(), vec![(pool.0, 20 * c), (24 * c, pool.1)]);
        // Outside the pool (below it, or an empty range): nothing registered, no error.
        assert!(slots.ensure(0, pool.0).is_ok());
        assert!(slots.ensure(pool.1, u64::MAX).is_ok());
        assert_eq!(slots.registered_runs(), vec![(pool.0, 20 * c), (24 * c, pool.1)]);
    }
}
