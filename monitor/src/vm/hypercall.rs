//! Serving the kernel's hypercalls. The request block and every buffer it names are guest
//! addresses: each is checked against guest RAM before use.

use std::io::Write;

use hrt_abi::{nr, Hypercall};

use super::vcpu::{Exit, Shared};

/// The program's memory as forwarded calls see it: only its pool, never the kernel's memory,
/// and within the pool only the pages the kernel's page map says the program has mapped
/// (none before the kernel has sent the map).
pub struct ProgramMemory<'a> {
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

    fn writable_len(&self, addr: u64, len: u64) -> u64 {
        let mapped = self.mapped_len(addr, len);
        let Some(map) = self.map else { return 0 };
        let Some(bits) = self.ram.slice(map.read_only, map.bytes) else { return 0 };
        // SAFETY: as above, for the read-only bitmap.
        mapped.min(unsafe { crate::forward::unmarked_len_in(bits.as_ptr(), map, addr, mapped) })
    }
}

/// Performs forwarded system call `nr` for the program (ENOSYS without a forwarder): its
/// pointers may name only the program's mapped memory.
pub fn forward_call(shared: &Shared, nr: u64, args: [u64; 6]) -> i64 {
    match &shared.forwarder {
        Some(f) => f.call(&program_view(shared), nr, args),
        None => -(libc::ENOSYS as i64),
    }
}

/// The program's memory as forwarded calls may see it.
pub fn program_view(shared: &Shared) -> ProgramMemory<'_> {
    ProgramMemory { ram: &shared.ram, range: shared.program_mem, map: shared.user_map.get() }
}

/// `nr::FILE_OVERRIDES`: the override and import entries of the part of a file the program
/// just mapped executable, written to the kernel's buffer (in guest RAM, outside the program's
/// memory the program could write).
fn file_overrides(shared: &Shared, args: &[u64]) -> i64 {
    let Some(fwd) = &shared.forwarder else { return 0 };
    let Some(plans) = fwd.library_plans.get() else { return 0 };
    let (fd, off, len, buf, cap) = (args[0], args[1], args[2], args[3], args[4]);
    let Some(host) = fwd.host_fd(fd) else { return -(libc::EBADF as i64) };
    let entries = match plans.entries(host.raw(), off, len) {
        Ok(e) => e,
        Err(()) => return -(libc::EOPNOTSUPP as i64),
    };
    let bytes = crate::overrides::encode(&entries);
    let inside_program = buf < shared.program_mem.1 && buf.saturating_add(cap) > shared.program_mem.0;
    if bytes.len() as u64 > cap || inside_program {
        return -(libc::EINVAL as i64);
    }
    match shared.ram.host_ptr(buf, bytes.len() as u64) {
        Some(dst) => {
            // SAFETY: the range lies in guest RAM (checked), outside the program's memory.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len()) };
            entries.len() as i64
        }
        None => -(libc::EFAULT as i64),
    }
}

/// Accepts the kernel's page map (`nr::USER_MAP`) once: it must cover exactly the program's
/// pool and lie in guest RAM outside it (where the program cannot write it).
fn register_user_map(shared: &Shared, a: &[u64; 7]) -> i64 {
    let map =
        hrt_abi::UserMap { bitmap: a[0], bytes: a[1], base: a[2], pages: a[3], read_only: a[4], unreadable: a[5] };
    let (lo, hi) = shared.program_mem;
    let pool_pages = (hi - lo) / hrt_abi::USER_MAP_PAGE;
    let outside_pool = |at: u64| {
        shared.ram.slice(at, map.bytes).is_some() && at.checked_add(map.bytes).is_some_and(|end| end <= lo || at >= hi)
    };
    let valid = map.base == lo
        && map.pages == pool_pages
        && map.bytes >= pool_pages.div_ceil(8)
        && outside_pool(map.bitmap)
        && outside_pool(map.read_only)
        && outside_pool(map.unreadable);
    if !valid {
        return -(libc::EINVAL as i64);
    }
    accept_user_map(shared, map)
}

/// Takes `map` as the kernel's page map, once (0; EPERM after the first): checked by
/// `register_user_map`, or placed by the monitor itself (`BootInfo::page_map`).
pub(super) fn accept_user_map(shared: &Shared, map: hrt_abi::UserMap) -> i64 {
    match shared.user_map.set(map) {
        Ok(()) => {
            publish_page_maps(shared, &map);
            0
        }
        Err(_) => -(libc::EPERM as i64),
    }
}

/// Tells other processes' forwarders where the page maps are (cross-memory attach into this
/// VM checks them): their host addresses, in the RAM directory.
fn publish_page_maps(shared: &Shared, map: &hrt_abi::UserMap) {
    let host = |at: u64| shared.ram.host_ptr(at, map.bytes).map_or(0, |p| p as u64);
    let maps = crate::forward::cross_memory::PageMaps {
        mapped: host(map.bitmap),
        read_only: host(map.read_only),
        unreadable: host(map.unreadable),
        base: map.base,
        pages: map.pages,
    };
    crate::forward::cross_memory::publish_page_maps(maps);
    crate::forward::own_status::attach_memory(
        host(map.bitmap),
        map.bytes,
        map.base,
        map.pages,
        shared.ram.host_ranges_within(shared.program_mem),
    );
}

/// Fills `[addr, addr+len)` of guest RAM with the host's random bytes (`nr::RANDOM`).
fn fill_random(ram: &super::memory::GuestRam, addr: u64, len: u64) -> i64 {
    let Some(dst) = ram.host_ptr(addr, len) else { return -(libc::EFAULT as i64) };
    // SAFETY: the destination lies inside guest RAM (checked).
    match unsafe { super::seed::host_random(dst, len as usize) } {
        Ok(()) => len as i64,
        Err(e) => -(e as i64),
    }
}

/// `nr::MEM_FILL`: `count` u64s at guest `addr`, entry `i` = `first + i * step`.
fn fill_run(ram: &super::memory::GuestRam, addr: u64, count: u64, first: u64, step: u64) -> i64 {
    let Some(len) = count.checked_mul(8) else { return -(libc::EFAULT as i64) };
    let Some(dst) = ram.host_ptr(addr, len).filter(|_| addr.is_multiple_of(8)) else {
        return -(libc::EFAULT as i64);
    };
    let dst = dst as *mut u64;
    let mut value = first;
    for i in 0..count as usize {
        // SAFETY: `[addr, addr + 8 * count)` lies inside guest RAM (checked) and is 8-byte
        // aligned (guest RAM's host mapping is page aligned).
        unsafe { dst.add(i).write(value) };
        value = value.wrapping_add(step);
    }
    0
}

/// `nr::MEM_FILLS`: the `n` fills listed at guest `list`, in order (see `fill_run`).
fn fill_runs(ram: &super::memory::GuestRam, list: u64, n: u64) -> i64 {
    if n > nr::MEM_FILLS_MAX {
        return -(libc::EINVAL as i64);
    }
    for i in 0..n {
        let Some(fill) = list.checked_add(i * 32).and_then(|at| ram.read_obj::<[u64; 4]>(at)) else {
            return -(libc::EFAULT as i64);
        };
        let done = fill_run(ram, fill[0], fill[1], fill[2], fill[3]);
        if done != 0 {
            return done;
        }
    }
    0
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
            super::host_signals::note_program_ended();
            outcome = Outcome::Stop(Exit::Status(call.args[0] as i32));
            super::fork::note_end_signal(call.args[1]);
            0
        }
        nr::START_CPUS => {
            shared.release_secondaries();
            0
        }
        nr::SYSCALL => {
            let a = &call.args;
            let ret = forward_call(shared, a[0], [a[1], a[2], a[3], a[4], a[5], a[6]]);
            if a[0] & hrt_abi::process::SIGNALS_WATCHED != 0 {
                // As the channel's answers (`channel::Service::complete`).
                crate::taken_signals::sync();
            }
            ret
        }
        nr::CHANNEL => match shared.channel.get() {
            Some(svc) => svc.register(ram, shared.program_mem, call.args[0], call.args[1]),
            None => -(libc::ENOSYS as i64),
        },
        nr::HOST_YIELD => {
            // SAFETY: sched_yield has no arguments and only reorders this thread's turn.
            unsafe { libc::sched_yield() };
            0
        }
        nr::STOP => {
            crate::stop_signal::stop_with(call.args[0] as i32);
            0
        }
        nr::HOST_SIGNAL_ACTION => crate::run::mirror_signal_action(call.args[0] as i32, call.args[1]),
        nr::HOST_PRCTL => shared.host_prctl(&call.args),
        nr::HOST_RLIMIT => shared.host_rlimit(&call.args),
        nr::FILE_OVERRIDES => file_overrides(shared, &call.args),
        nr::PROFILE_FILE => shared.channel.get().map_or(0, |svc| svc.profile_file(shared, &call.args)),
        nr::MAP_SHARED_FILE => super::shared_files::map(shared, &call.args),
        nr::UNMAP_SHARED_FILE => super::shared_files::unmap(shared, &call.args),
        nr::REMAP_SHARED => super::shared_files::remap(shared, &call.args),
        nr::SHM_SEGMENT_SIZE => super::shared_files::shm_segment_size(&call.args),
        nr::SHM_ATTACH => super::shared_files::shm_attach(shared, &call.args),
        nr::SHARE_ANONYMOUS => super::shared_files::share_anonymous(shared, &call.args),
        nr::MSYNC => super::shared_files::msync(shared, &call.args),
        nr::REMOVE_SHARED => super::shared_files::remove(shared, &call.args),
        nr::SHARED_FILE_PAGE => super::shared_files::file_page(shared, &call.args),
        nr::DOORBELL => {
            if let Some(svc) = shared.channel.get() {
                svc.doorbell(shared);
            }
            0
        }
        nr::MEM_COPY => {
            mem_copy(ram, shared.forwarder.as_ref().map(|f| &f.placed), call.args[0], call.args[1], call.args[2])
        }
        nr::MEM_ZERO => zero_guest(ram, call.args[0], call.args[1], call.args[2], call.args[3]),
        nr::SMALL_HOST_PAGES if call.args[2] == nr::SMALL_HOST_PAGES_BARE => {
            ram.small_pages_only(call.args[0], call.args[1])
        }
        nr::SMALL_HOST_PAGES => ram.use_small_pages(call.args[0], call.args[1]),
        nr::USER_MAP => register_user_map(shared, &call.args),
        nr::CORE_DUMP => super::core_file::serve(shared, call.args[0], call.args[1]),
        nr::FORK => {
            let busy = [call.args[3], call.args[4], call.args[5], call.args[6]];
            super::fork::serve(shared, call.args[0], call.args[1], call.args[2], busy)
        }
        nr::RANDOM => fill_random(ram, call.args[0], call.args[1]),
        nr::MEM_FILL => fill_run(ram, call.args[0], call.args[1], call.args[2], call.args[3]),
        nr::MEM_FILLS => fill_runs(ram, call.args[0], call.args[1]),
        nr::RAM_READY => match shared.pool_slots.get().map(|p| p.ensure(call.args[0], call.args[1])) {
            None => i64::MAX,
            Some(Ok(ready_to)) => {
                if call.args[2] != 0 {
                    // Advice only: a bad range changes nothing (`use_small_pages` checks it).
                    ram.use_small_pages(call.args[2], super::memory::GRANULE);
                }
                ready_to.min(i64::MAX as u64) as i64
            }
            Some(Err(e)) => {
                eprintln!("hrt: {e}");
                outcome = Outcome::Stop(Exit::Failure(1));
                -(libc::ENOMEM as i64)
            }
        },
        nr::KERNEL_RAM_READY => match shared.pool_slots.get().map(|p| p.ensure_kernel(call.args[0])) {
            None => 0,
            Some(Ok(from)) => from.min(i64::MAX as u64) as i64,
            Some(Err(e)) => {
                eprintln!("hrt: {e}");
                outcome = Outcome::Stop(Exit::Failure(1));
                -(libc::ENOMEM as i64)
            }
        },
        nr::PANIC => {
            outcome = Outcome::Stop(Exit::Failure(hrt_abi::PANIC_STATUS as u8));
            0
        }
        nr::PROGRAM_GS_BASE => {
            outcome = Outcome::Stop(super::vcpu::program_set_gs_base(call.args[0]));
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

/// `nr::MEM_ZERO` (by hypercall or through the channel): zeroes guest RAM `[addr, addr + len)`
/// (`mode` `MEM_ZERO_DROP` or anything else); EFAULT unless the range is all guest RAM.
pub fn zero_guest(ram: &super::memory::GuestRam, addr: u64, len: u64, mode: u64, budget: u64) -> i64 {
    let Some(dst) = host_range(ram, addr, len) else { return -(libc::EFAULT as i64) };
    // SAFETY: the range is inside guest RAM (checked).
    let kept = unsafe {
        match mode {
            nr::MEM_ZERO_DROP => {
                super::guest_zero::zero_dropping(dst, len as usize);
                0
            }
            nr::MEM_ZERO_KEEP => super::guest_zero::zero_keeping(dst, len as usize, budget as usize),
            nr::MEM_ZERO_STAY_SMALL => {
                super::guest_zero::zero(dst, len as usize);
                return 0;
            }
            _ => {
                super::guest_zero::zero(dst, len as usize);
                0
            }
        }
    };
    ram.huge_pages_again(addr, len);
    kept as i64
}

/// The host address of the guest range `[addr, addr + len)` if it is all guest RAM. A raw
/// pointer, not a slice: the monitor writes through it, which a `&[u8]` would not allow (the
/// compiler may drop writes made through a shared reference).
fn host_range(ram: &super::memory::GuestRam, addr: u64, len: u64) -> Option<*mut u8> {
    ram.host_ptr(addr, len)
}

/// `nr::MEM_COPY`: `len` bytes from `src` to `dst`, both in guest RAM. A source inside a
/// placed program file is read from the monitor's view of the file, since its large segments
/// are not in guest RAM (`placed_image`).
fn mem_copy(
    ram: &super::memory::GuestRam,
    images: Option<&crate::placed_image::PlacedImages>,
    dst: u64,
    src: u64,
    len: u64,
) -> i64 {
    let (Some(to), Some(from)) = (host_range(ram, dst, len), host_range(ram, src, len)) else {
        return -(libc::EFAULT as i64);
    };
    match images.and_then(|i| i.copy_source(src, len, dst)) {
        // SAFETY: `to` is `len` bytes of guest RAM (checked) and `[off, off + len)` lies in the
        // file's bytes (checked by `copy_source`), the monitor's own memory.
        Some((file, off)) => unsafe { std::ptr::copy_nonoverlapping(file.as_ptr().add(off), to, len as usize) },
        // SAFETY: both ranges are inside guest RAM (checked); they may overlap.
        None => unsafe { std::ptr::copy(from, to, len as usize) },
    }
    0
}

/// A bounded, deterministic fuzz run of the hypercall decoder: random blocks (numbers, argument
/// words near and across the ends of guest RAM, block addresses in and out of it) are served
/// against real guest RAM without a VM. Nothing may panic, every range the guest names is
/// checked (results are compared with what a range check predicts), and the answer is always
/// written back inside guest RAM.
#[cfg(test)]
mod fuzz {
    use super::*;
    use crate::vm::memory::GuestRam;

    const RAM: u64 = 64 << 20;
    const HUGE: u64 = 2 << 20;

    use crate::forward::fuzz::Rng;

    /// Edge-seeking words on top of the shared generator.
    trait Words {
        fn word(&mut self) -> u64;
    }

    impl Words for Rng {
        /// A guest address or length chosen to hit edges: around 0, the end of RAM, the top of
        /// the address space, page boundaries, or anything.
        fn word(&mut self) -> u64 {
            let small = self.next() % 8192;
            match self.next() % 6 {
                0 => small,
                1 => RAM.wrapping_sub(small),
                2 => RAM + small,
                3 => u64::MAX - small,
                4 => (self.next() % RAM) & !0xfff,
                _ => self.next(),
            }
        }
    }

    fn fits(addr: u64, len: u64) -> bool {
        addr.checked_add(len).is_some_and(|end| end <= RAM)
    }

    #[test]
    fn random_hypercall_blocks_never_escape_guest_ram() {
        let ram = GuestRam::map(RAM, true).expect("guest RAM for the fuzz run");
        let shared = Shared::new(ram, None, (4 << 20, 32 << 20));
        let mut rng = Rng(0x0005_eed0_f4e7_ca11);
        let inputs = std::env::var("HRT_FUZZ_INPUTS").ok().and_then(|s| s.parse().ok()).unwrap_or(30_000u64);
        let mut served = 0u64;
        for i in 0..inputs {
            let nr = match rng.next() % 17 {
                _ if rng.next().is_multiple_of(8) => rng.next(),
                16 => nr::KERNEL_RAM_READY,
                12 => nr::MEM_FILL,
                13 => nr::SMALL_HOST_PAGES,
                14 => nr::MEM_FILLS,
                15 => nr::RAM_READY,
                n => n,
            };
            let mut args = [0u64; 7];
            for a in &mut args {
                *a = rng.word();
            }
            if nr == nr::CONSOLE_WRITE {
                // Keep the test's stderr readable: at most a few bytes reach it.
                args[1] %= 4;
            }
            if nr == nr::MEM_ZERO || nr == nr::MEM_COPY || nr == nr::RANDOM || nr == nr::MEM_FILL {
                // Mostly lengths that fit, so valid calls are exercised too.
                let len_arg = if nr == nr::MEM_COPY { 2 } else { 1 };
                if rng.next().is_multiple_of(2) {
                    args[len_arg] %= 1 << 16;
                }
            }
            if nr == nr::MEM_FILLS && rng.next().is_multiple_of(2) {
                // Mostly short lists inside RAM, so fills are read and applied too.
                args[0] %= RAM;
                args[1] %= 4;
            }
            if nr == nr::SMALL_HOST_PAGES && rng.next().is_multiple_of(2) {
                // Mostly whole 2 MiB pages, so valid calls are exercised too.
                args[0] &= !(HUGE - 1);
                args[1] = (args[1] % 8) * HUGE;
            }
            let block = if rng.next().is_multiple_of(16) { rng.word() } else { (rng.next() % (RAM - 4096)) & !7 };
            let call = Hypercall { nr, args, ret: 0x7777 };
            let in_ram = fits(block, std::mem::size_of::<Hypercall>() as u64);
            if in_ram {
                shared.ram.write_obj(block, &call).unwrap();
            }
            let outcome = serve(&shared, block);
            if !in_ram {
                assert!(
                    matches!(outcome, Outcome::Stop(Exit::Failure(1))),
                    "input {i}: a block outside RAM must stop the VM"
                );
                continue;
            }
            served += 1;
            // The block may have been overwritten by the call itself (MEM_ZERO/COPY/RANDOM over
            // it): only check results whose block survives.
            let Some(back) = shared.ram.read_obj::<Hypercall>(block) else { panic!("input {i}: block vanished") };
            if back.nr != nr || back.args != args {
                continue;
            }
            let efault = -(libc::EFAULT as i64);
            match nr {
                nr::MEM_ZERO => {
                    assert_eq!(back.ret == efault, !fits(args[0], args[1]), "input {i}: MEM_ZERO {args:x?}")
                }
                nr::MEM_COPY => assert_eq!(
                    back.ret == efault,
                    !(fits(args[0], args[2]) && fits(args[1], args[2])),
                    "input {i}: MEM_COPY {args:x?}"
                ),
                nr::RANDOM => {
                    assert_eq!(back.ret == efault, !fits(args[0], args[1]), "input {i}: RANDOM {args:x?}")
                }
                nr::MEM_FILL => {
                    let fits = args[1].checked_mul(8).is_some_and(|len| fits(args[0], len)) && args[0] % 8 == 0;
                    assert_eq!(back.ret == efault, !fits, "input {i}: MEM_FILL {args:x?}")
                }
                nr::CONSOLE_WRITE => {
                    assert_eq!(back.ret == efault, !fits(args[0], args[1]), "input {i}: CONSOLE_WRITE {args:x?}")
                }
                nr::SMALL_HOST_PAGES => {
                    let want = if args[0] % HUGE != 0 || args[1] % HUGE != 0 {
                        -(libc::EINVAL as i64)
                    } else if args[1] != 0 && !fits(args[0], args[1]) {
                        efault
                    } else {
                        0
                    };
                    assert_eq!(back.ret, want, "input {i}: SMALL_HOST_PAGES {args:x?}")
                }
                nr::MEM_FILLS => {
                    let einval = -(libc::EINVAL as i64);
                    if args[1] > nr::MEM_FILLS_MAX {
                        assert_eq!(back.ret, einval, "input {i}: MEM_FILLS {args:x?}")
                    } else {
                        assert!(back.ret == 0 || back.ret == efault, "input {i}: MEM_FILLS {args:x?}: {}", back.ret)
                    }
                }
                nr::SYSCALL => assert_eq!(back.ret, -(libc::ENOSYS as i64), "input {i}: no forwarder"),
                // All of RAM is the VM's here (no pool given in pieces).
                nr::RAM_READY => assert_eq!(back.ret, i64::MAX, "input {i}: RAM_READY"),
                nr::KERNEL_RAM_READY => assert_eq!(back.ret, 0, "input {i}: KERNEL_RAM_READY"),
                n if n > 12 => assert_eq!(back.ret, -(libc::ENOSYS as i64), "input {i}: unknown number {n}"),
                _ => {}
            }
        }
        eprintln!("hypercall fuzz: {inputs} inputs, {served} blocks served, no escape");
        assert!(served > inputs / 2);
    }

    /// MEM_FILLS applies its fills in order (a later one over an earlier one wins) and stops
    /// at the first outside guest RAM, the ones before it done.
    #[test]
    fn mem_fills_applies_its_fills_in_order() {
        let ram = GuestRam::map(RAM, true).expect("guest RAM");
        let shared = Shared::new(ram, None, (4 << 20, 32 << 20));
        let (list, table, block) = (0x10_0000u64, 0x20_0000u64, 0x30_0000u64);
        let fills: [[u64; 4]; 3] = [[table, 8, 0, 0], [table + 16, 4, 0x1000, 0x1000], [RAM - 8, 2, 7, 0]];
        shared.ram.write_obj(list, &fills).unwrap();
        shared.ram.write_obj(table, &[0xffu64; 8]).unwrap();
        let call = Hypercall { nr: nr::MEM_FILLS, args: [list, 3, 0, 0, 0, 0, 0], ret: 0 };
        shared.ram.write_obj(block, &call).unwrap();
        assert!(matches!(serve(&shared, block), Outcome::Continue));
        let back = shared.ram.read_obj::<Hypercall>(block).unwrap();
        assert_eq!(back.ret, -(libc::EFAULT as i64), "the third fill runs past guest RAM");
        let got = shared.ram.read_obj::<[u64; 8]>(table).unwrap();
        assert_eq!(got, [0, 0, 0x1000, 0x2000, 0x3000, 0x4000, 0, 0]);
        let call = Hypercall { nr: nr::MEM_FILLS, args: [list, nr::MEM_FILLS_MAX + 1, 0, 0, 0, 0, 0], ret: 0 };
        shared.ram.write_obj(block, &call).unwrap();
        serve(&shared, block);
        assert_eq!(shared.ram.read_obj::<Hypercall>(block).unwrap().ret, -(libc::EINVAL as i64));
    }
}
