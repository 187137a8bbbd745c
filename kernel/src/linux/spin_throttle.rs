//! The program's own libgomp spins as it would natively on this host, when the vCPUs
//! outnumber the host's CPUs (`hrt run --cpus N`, `--overcommit pack`).
//!
//! libgomp spins 300,000 PAUSE rounds (about 7 ms here) before a waiting thread sleeps, but
//! only 100 while its threads outnumber the CPUs it found at start (`gomp_available_cpus`,
//! the CPUs of its affinity mask): natively, 4 threads on this 2-CPU host spin 100 rounds and
//! then hand the CPU to another thread with a futex wait. Under `--cpus 4` libgomp finds 4
//! CPUs and spins its 300,000 rounds on vCPUs that share 2 host CPUs, which only the kernel's
//! looks (`sched::spin_look`) can interrupt.
//!
//! So the monitor finds every copy of libgomp's test (`mov gomp_managed_threads(%rip), %reg;
//! cmp %reg, gomp_available_cpus(%rip); jb throttled`, monitor/src/overrides/spin_sites.rs)
//! and the kernel rewrites, while loading the program, the `cmp` and `jb` (9 or 13 bytes) into
//! `cmp $HOST, %reg; ja throttled` (the same lengths): libgomp throttles while its threads
//! outnumber the host's CPUs, as natively. Nothing the program can observe changes:
//! `gomp_available_cpus` keeps its value (`omp_get_num_procs`, the default team size and
//! `%A` of the affinity format still see the vCPUs), as do the environment, the CPU count and
//! affinity masks; only the three instructions that choose between libgomp's two spin counts
//! compare with another number. The program's threads then go to as many vCPUs as the host
//! has CPUs (`sched::thread`, as the kernel's OpenMP runtime's do): natively the host's
//! scheduler runs them on its 2 CPUs, and a futex wait hands the CPU to the other thread;
//! here a switch in the guest does the same, where spreading them would make every wait a
//! halted vCPU and a wake-up through emulated ring 0.
//!
//! When libgomp itself found fewer CPUs than the host has (an affinity mask or `OMP_PLACES`
//! with fewer), its own comparison is the stricter one: at the program's first thread
//! creation, after libgomp's constructor set `gomp_available_cpus`, the original bytes go
//! back and the threads are not packed.

use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use alloc::vec::Vec;
use hrt_abi::overrides::{self as abi, Entry};

use crate::sync::SpinLock;

/// A rewritten site: its address and its original bytes.
struct Site {
    at: u64,
    original: [u8; 13],
    len: usize,
}

/// The rewritten sites and where `gomp_available_cpus` is, until the first thread creation.
static SITES: SpinLock<(Vec<Site>, u64)> = SpinLock::new((Vec::new(), 0));
/// 0: no sites; 1: rewritten, not yet checked; 2: kept (threads are packed); 3: undone.
static STATE: AtomicU8 = AtomicU8::new(0);
static PACK: AtomicBool = AtomicBool::new(false);
/// The span of the image being loaded, while `apply` checks it.
static IMAGE: SpinLock<(u64, u64)> = SpinLock::new((0, 0));

/// The spin entries among `list` (`KIND_SPIN_SITE`, `KIND_SPIN_CPUS`), for the program (or its
/// shared libgomp's text) loaded `bias` bytes above its link addresses (file offsets) in
/// `[lo, hi)`, still writable and not yet run:
/// rewrites each site whose bytes are libgomp's test, to count `host` CPUs. Returns how many
/// were rewritten (none if any site is not as expected).
pub fn apply(list: &[Entry], bias: u64, lo: u64, hi: u64, host: usize) -> usize {
    *IMAGE.lock() = (lo, hi);
    let mut sites = Vec::new();
    let mut available = 0;
    for e in list {
        let at = bias.wrapping_add(e.addr);
        // The variable is only read, checked, through `uaccess` (a shared library's lies
        // outside its text); the sites are written here.
        if e.kind != abi::KIND_SPIN_CPUS && (at < lo || at.saturating_add(e.size as u64) > hi) {
            return 0;
        }
        match e.kind {
            abi::KIND_SPIN_CPUS if e.size == 8 => available = at,
            abi::KIND_SPIN_SITE if e.size == 9 || e.size == 13 => {
                let mut original = [0u8; 13];
                // SAFETY: `len` bytes inside the freshly copied image (checked above).
                unsafe { core::ptr::copy_nonoverlapping(at as *const u8, original.as_mut_ptr(), e.size as usize) };
                let site = Site { at, original, len: e.size as usize };
                if rewritten(&site, host).is_none() {
                    return 0;
                }
                sites.push(site);
            }
            _ => {}
        }
    }
    if sites.is_empty() || available == 0 {
        return 0;
    }
    for s in &sites {
        let code = rewritten(s, host).unwrap_or(s.original);
        // SAFETY: inside the freshly copied code, which nothing runs yet (checked above).
        unsafe { core::ptr::copy_nonoverlapping(code.as_ptr(), s.at as *mut u8, s.len) };
    }
    let n = sites.len();
    *SITES.lock() = (sites, available);
    STATE.store(1, Ordering::SeqCst);
    kinfo!("hrt: the program's libgomp: {n} spin test(s) count the host's {host} CPUs");
    n
}

/// `cmp %reg, disp(%rip); jb rel` (REX.W 39 /r, then 72 rel8 or 0F 82 rel32) as `cmp $host,
/// %reg; ja rel`: the flags then say "threads > host" where they said "available < threads".
/// Only if the `jb` is their only reader: on both paths after it, an instruction sets all the
/// arithmetic flags before any reads one (`flags_dead`).
fn rewritten(s: &Site, host: usize) -> Option<[u8; 13]> {
    let o = &s.original;
    let rex = o[0];
    if (rex != 0x48 && rex != 0x4c) || o[1] != 0x39 || o[2] & 0xc7 != 0x05 {
        return None;
    }
    let jcc_ok = match s.len {
        9 => o[7] == 0x72,
        _ => o[7] == 0x0f && o[8] == 0x82,
    };
    if !jcc_ok || host == 0 || host > i32::MAX as usize {
        return None;
    }
    let next = s.at + s.len as u64;
    let rel = match s.len {
        9 => o[8] as i8 as i64,
        _ => i32::from_le_bytes([o[9], o[10], o[11], o[12]]) as i64,
    };
    if !flags_dead(next) || !flags_dead(next.wrapping_add(rel as u64)) {
        return None;
    }
    let reg = (o[2] >> 3) & 7;
    // REX.R (the register in ModRM.reg) becomes REX.B (it is now ModRM.rm).
    let new_rex = 0x48 | ((rex >> 2) & 1);
    let mut code = *o;
    code[0] = new_rex;
    code[1] = 0x81;
    code[2] = 0xf8 | reg; // mod 11, /7 (cmp), rm = reg
    code[3..7].copy_from_slice(&(host as u32).to_le_bytes());
    if s.len == 9 {
        code[7] = 0x77;
    } else {
        code[8] = 0x87;
    }
    Some(code)
}

/// Whether the code at `at` (in the image being loaded) sets every arithmetic flag before it
/// reads any, within its next few instructions, following unconditional jumps (libgomp's
/// throttled path loads the other count and jumps back).
fn flags_dead(mut at: u64) -> bool {
    use iced_x86::{Decoder, DecoderOptions, FlowControl, OpKind, RflagsBits};
    const ARITH: u32 =
        RflagsBits::OF | RflagsBits::SF | RflagsBits::ZF | RflagsBits::AF | RflagsBits::CF | RflagsBits::PF;
    let (lo, hi) = *IMAGE.lock();
    for _ in 0..8 {
        if at < lo || at.saturating_add(16) > hi {
            return false;
        }
        // SAFETY: 16 bytes (the longest instruction) inside the image being loaded (checked above).
        let code = unsafe { core::slice::from_raw_parts(at as *const u8, 16) };
        let i = Decoder::with_ip(64, code, at, DecoderOptions::NONE).decode();
        if i.is_invalid() || i.rflags_read() & ARITH != 0 {
            return false;
        }
        if i.rflags_modified() & ARITH == ARITH {
            return true;
        }
        at = match i.flow_control() {
            FlowControl::Next => i.next_ip(),
            FlowControl::UnconditionalBranch if i.op0_kind() == OpKind::NearBranch64 => i.near_branch_target(),
            _ => return false,
        };
    }
    false
}

/// A program thread is about to be created (libgomp's constructor has run by then, unless the
/// program makes threads from an earlier one): the first time, keeps the rewritten sites if
/// libgomp found at least as many CPUs as the host has, else puts the original bytes back.
/// Only one program thread exists at the first creation, so no program code runs meanwhile.
pub fn before_first_thread(host: usize) {
    if STATE.load(Ordering::Relaxed) != 1 {
        return;
    }
    let (sites, available) = core::mem::take(&mut *SITES.lock());
    if STATE.swap(2, Ordering::SeqCst) != 1 {
        return;
    }
    let found = super::uaccess::read::<u64>(available).unwrap_or(0);
    if found >= host as u64 {
        PACK.store(true, Ordering::SeqCst);
        return;
    }
    for s in sites.iter().filter(|s| !super::shared_files::overlaps(s.at, s.at + s.len as u64)) {
        crate::arch::call_gate::write_code(s.at, &s.original[..s.len]);
    }
    STATE.store(3, Ordering::SeqCst);
    kinfo!("hrt: the program's libgomp found {found} CPU(s), fewer than the host's {host}: its spin tests are as they were");
}

/// Whether the program's threads go to the first vCPUs, as many as the host has CPUs: its
/// libgomp's spin tests count the host's CPUs, or its OpenMP runtime is LLVM's libomp, which
/// yields in its spin waits (`flags::PACK_THREADS`; the monitor's
/// `overrides::yielding_runtime`): there a yield hands the vCPU to the thread waited for.
pub fn packs_threads() -> bool {
    PACK.load(Ordering::Relaxed)
        || (crate::bootinfo::get().flags & hrt_abi::flags::PACK_THREADS != 0
            && crate::sched::placement_cpus() < crate::cpu::count())
}
