//! Loads a program (and, for a dynamically linked program, its interpreter) into the program's
//! memory with the initial stack Linux builds: argc, argv, envp, auxv and the strings they point
//! to. At boot the monitor placed the files in memory and the main thread starts there; the
//! program's own execve (exec.rs) loads the new image through the same `load_image`.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use hrt_abi::channel::maps_kind;
use hrt_abi::BootInfo;

use super::elf::{Elf, ProgramHeader, ET_DYN, ET_EXEC, PF_R, PF_W, PF_X, PT_GNU_STACK, PT_LOAD, PT_PHDR};
use super::process::{Brk, PROCESS};
use super::protect;
use super::usermem::{self, page_up, PAGE};
use crate::arch::syscall as user;
use crate::sched::{self, ThreadOptions};
use crate::sync::IrqSpinLock;

const LARGE_PAGE: u64 = 2 << 20;
/// Inaccessible memory right below the main stack, so that a runaway recursion faults
/// (SIGSEGV) instead of writing over whatever lies below. One 2 MiB leaf made not present:
/// no page table is split. Linux's gap is 1 MiB (stack_guard_gap).
const STACK_GUARD: u64 = LARGE_PAGE;
/// The main stack's size at least, whatever the pool (Linux's default limit).
const STACK_FALLBACK: u64 = 8 << 20;
/// The main stack's size at most (an unlimited RLIMIT_STACK's).
const MAIN_STACK_MAX: u64 = 1 << 30;

/// The loaded program's stack guard's start, its stack's bottom and top, and its vDSO's end
/// (the vDSO starts at the stack's top), for its `/proc/self/maps` (`ChannelHeader::main_stack`).
static MAIN_STACK: [core::sync::atomic::AtomicU64; 4] = [const { core::sync::atomic::AtomicU64::new(0) }; 4];

/// The loaded images' files, the program's and its interpreter's (address and length), where
/// their bytes stay in memory: those the monitor placed at boot, reserved for good. An execve's
/// are staged in program memory and given back once loaded: (0, 0), out of reach.
static IMAGE_FILES: IrqSpinLock<[(u64, u64); 2]> = IrqSpinLock::new([(0, 0); 2]);

/// The bytes of image `kind`'s file (`maps_kind::PROGRAM` or `INTERPRETER`), if they stayed
/// in memory (see `IMAGE_FILES`): what its pages read again after MADV_DONTNEED.
pub fn image_file(kind: u32) -> Option<&'static [u8]> {
    let (addr, len) = IMAGE_FILES.lock()[(kind == maps_kind::INTERPRETER) as usize];
    // SAFETY: recorded only for the monitor's placed files, which stay reserved for good.
    (len != 0).then(|| unsafe { core::slice::from_raw_parts(addr as *const u8, len as usize) })
}

/// The loaded program's main stack and vDSO (see `MAIN_STACK`).
pub fn main_stack() -> [u64; 4] {
    MAIN_STACK.each_ref().map(|w| w.load(core::sync::atomic::Ordering::Relaxed))
}

/// The program's stack pointer at its start (its arguments and environment lie above it).
static START_SP: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// The bytes of the main stack's range (its guard included) that Linux would not count in the
/// address space (RLIMIT_AS, VmSize): its stack is a mapping that grows from what execve
/// made, the arguments and environment and 128 KiB below them, where here the whole
/// RLIMIT_STACK is reserved at once. Without this, a limit that Linux's program met was too
/// small here by the reservation (8 MiB and the 2 MiB guard: `ulimit -v 8000` then ld.so could
/// not map libc). Deeper use of the stack is not counted.
pub fn main_stack_uncounted() -> u64 {
    let [guard, bottom, top, _] = main_stack();
    let sp = START_SP.load(core::sync::atomic::Ordering::Relaxed);
    if top == 0 || sp == 0 || sp > top {
        return 0;
    }
    let counted = (usermem::page_up(top - sp) + (128 << 10)).min(top - bottom);
    (top - guard).saturating_sub(counted)
}

// Auxiliary vector keys.
const AT_NULL: u64 = 0;
const AT_PHDR: u64 = 3;
const AT_PHENT: u64 = 4;
const AT_PHNUM: u64 = 5;
const AT_PAGESZ: u64 = 6;
const AT_BASE: u64 = 7;
const AT_FLAGS: u64 = 8;
const AT_ENTRY: u64 = 9;
const AT_UID: u64 = 11;
const AT_EUID: u64 = 12;
const AT_GID: u64 = 13;
const AT_EGID: u64 = 14;
const AT_PLATFORM: u64 = 15;
const AT_HWCAP: u64 = 16;
const AT_CLKTCK: u64 = 17;
const AT_SECURE: u64 = 23;
const AT_RANDOM: u64 = 25;
const AT_HWCAP2: u64 = 26;
const AT_EXECFN: u64 = 31;
const AT_SYSINFO_EHDR: u64 = 33;
const AT_MINSIGSTKSZ: u64 = 51;
const AT_RSEQ_FEATURE_SIZE: u64 = 27;
const AT_RSEQ_ALIGN: u64 = 28;

/// Where the program landed.
struct Loaded {
    entry: u64,
    phdr: u64,
    phnum: u64,
    end: u64,
    /// The address its link address 0 landed at (AT_BASE for an interpreter).
    base: u64,
    /// How many of its functions jump to the kernel's (`--omp kernel`).
    overridden: usize,
    /// Its executable segments' span.
    code: (u64, u64),
    /// Its PT_GNU_STACK asks for an executable stack.
    exec_stack: bool,
}

/// What `load_image` loads: the program's file, its interpreter's (a dynamic program), and its
/// argv then envp strings.
pub struct Image<'a> {
    pub program: &'a [u8],
    pub interp: Option<&'a [u8]>,
    pub strings: &'a [&'a [u8]],
    pub argc: usize,
    /// AT_EXECFN: the file name execve got.
    pub execfn: &'a [u8],
    /// The function overrides the monitor chose for the program (`--omp`; encoded
    /// `hrt_abi::overrides::Entry`s, none when it keeps its own runtime).
    pub overrides: &'a [u8],
    /// `hrt_abi::flags::OMP_LIBRARY`/`OMP_REQUIRED`: its shared libgomp is handled when ld.so
    /// maps it (`overrides::apply_file`).
    pub library_mode: u64,
}

/// Where a loaded image starts: entry point and initial stack pointer.
pub struct Start {
    pub entry: u64,
    pub sp: u64,
}

/// Maps a program's PT_LOAD segments: an ET_EXEC program at its link addresses (at boot,
/// inside the span the monitor reserved), an ET_DYN one (or an interpreter) wherever memory is
/// free. `overrides`: the program's function overrides (not its interpreter's), applied to it.
fn load_segments(image: &[u8], boot: Option<&BootInfo>, overrides: Option<&[u8]>) -> Result<Loaded, &'static str> {
    let elf = Elf::parse(image).ok_or("not an ELF64 file")?;
    let loads: Vec<_> = elf.program_headers().filter(|p| p.kind == PT_LOAD).collect();
    let lo = loads.iter().map(|p| p.vaddr).min().ok_or("no loadable segment")? & !(PAGE - 1);
    let hi = page_up(loads.iter().map(|p| p.vaddr + p.memsz).max().unwrap_or(0));
    let base = match elf.kind {
        ET_EXEC => {
            if let Some(fixed) = boot.map(|b| b.program_fixed) {
                if lo < fixed.base || hi > fixed.base + fixed.size {
                    return Err("segments outside the span the monitor reserved");
                }
            }
            usermem::alloc_fixed(lo, hi - lo).map_err(|_| "its link addresses are not free")?;
            0
        }
        ET_DYN => usermem::alloc(hi - lo, LARGE_PAGE).map_err(|_| "not enough memory for its segments")? - lo,
        _ => return Err("not an executable"),
    };
    let image_addr = image.as_ptr() as u64;
    for p in &loads {
        if p.offset.checked_add(p.filesz).is_none_or(|e| e > image.len() as u64) || p.filesz > p.memsz {
            return Err("a segment lies outside the file");
        }
        usermem::copy(base + p.vaddr, image_addr + p.offset, p.filesz);
    }
    let whose = if overrides.is_some() { maps_kind::PROGRAM } else { maps_kind::INTERPRETER };
    if overrides.is_some() {
        super::calls::data_limit::program_loaded(loads.iter().map(|p| (p.vaddr, p.filesz)));
    }
    for p in loads.iter().filter(|p| p.filesz > 0) {
        let start = (base + p.vaddr) & !(PAGE - 1);
        let offset = p.offset.saturating_sub(base + p.vaddr - start);
        let writable = p.flags & PF_W != 0;
        super::private_files::record_image(start, page_up(base + p.vaddr + p.filesz), offset, whose, writable);
    }
    // The file's bytes for MADV_DONTNEED: at boot the monitor's placed copy stays.
    let kept = if boot.is_some() { (image_addr, image.len() as u64) } else { (0, 0) };
    IMAGE_FILES.lock()[(whose == maps_kind::INTERPRETER) as usize] = kept;
    // Overrides patch the code while it is still writable.
    let overridden = match overrides {
        Some(block) => super::overrides::apply(block, base, base + lo, base + hi)?,
        None => 0,
    };
    // Each segment gets its own permissions, as execve maps them: .text read-only and
    // executable, .rodata read-only, data not executable (libc makes its PT_GNU_RELRO part
    // read-only itself once relocated). Linux maps the segments one after the other, each over
    // the pages it covers, so a page two segments share ends up with the later one's
    // permissions: the same here, by setting them in the same order.
    for p in &loads {
        let start = (base + p.vaddr) & !(PAGE - 1);
        protect::set(start, page_up(base + p.vaddr + p.memsz), segment_prot(p));
    }
    // The whole pages between one segment's end and the next one's start are left unmapped,
    // as Linux leaves them: not present, and not in the program's mappings.
    let mut prev_end = base + lo;
    for p in &loads {
        let (start, end) = ((base + p.vaddr) & !(PAGE - 1), page_up(base + p.vaddr + p.memsz));
        if start > prev_end {
            protect::set(prev_end, start, 0);
            usermem::make_hole(prev_end, start);
        }
        prev_end = prev_end.max(end);
    }
    // The program headers: PT_PHDR, else inside the segment that maps file offset phoff.
    let phdr = match elf.program_headers().find(|p| p.kind == PT_PHDR) {
        Some(p) => base + p.vaddr,
        None => loads
            .iter()
            .find(|p| p.offset <= elf.phoff && elf.phoff < p.offset + p.filesz)
            .map(|p| base + p.vaddr + (elf.phoff - p.offset))
            .unwrap_or(0),
    };
    if super::rewrite::enabled() {
        super::symbols::load(image, base);
        let phdrs = elf.program_headers().map(|p| (p.kind, p.vaddr));
        if let Some(hdr) = super::eh_frame::image_hdr(phdrs, base) {
            super::eh_frame::add(base + lo, base + hi, hdr);
        }
    }
    let exec = loads.iter().filter(|p| p.flags & PF_X != 0);
    let code = exec.fold((u64::MAX, 0), |(lo, hi), p| (lo.min(base + p.vaddr), hi.max(base + p.vaddr + p.filesz)));
    let exec_stack = elf.program_headers().any(|p| p.kind == PT_GNU_STACK && p.flags & PF_X != 0);
    Ok(Loaded {
        entry: base + elf.entry,
        phdr,
        phnum: elf.phnum as u64,
        end: base + hi,
        base,
        overridden,
        code,
        exec_stack,
    })
}

/// Gives the kernel's OpenMP runtime the program's environment when the program's libgomp
/// functions were redirected to it (`--omp kernel`).
fn start_overrides(img: &Image, loaded: &Loaded) {
    super::overrides::set_program(img.strings.get(img.argc..).unwrap_or(&[]), img.library_mode);
    if !super::overrides::redirects_functions(img.overrides) {
        return;
    }
    let n = loaded.overridden;
    super::overrides::start_runtime();
    kinfo!("hrt: {n} of the program's OpenMP functions run on the kernel's runtime");
}

/// A segment's p_flags as PROT_* bits.
fn segment_prot(p: &ProgramHeader) -> u64 {
    [(PF_R, protect::PROT_READ), (PF_W, protect::PROT_WRITE), (PF_X, protect::PROT_EXEC)]
        .iter()
        .filter(|(pf, _)| p.flags & pf != 0)
        .fold(0, |prot, (_, bit)| prot | bit)
}

/// The bytes of a file the monitor placed in reserved guest memory.
fn placed_file(r: hrt_abi::Range) -> &'static [u8] {
    let ptr = crate::mem::phys_to_virt(r.base) as *const u8;
    // SAFETY: the monitor placed the file there and reserved the range for good.
    unsafe { core::slice::from_raw_parts(ptr, r.size as usize) }
}

/// Where the last built stack's environment strings (start, end), auxiliary vector (address,
/// bytes) and argument strings (start, end) are, for `/proc/self/environ`, `auxv` and
/// `cmdline` (`status::publish`) and core files.
pub static INITIAL_STACK: [AtomicU64; 6] = [const { AtomicU64::new(0) }; 6];

/// Words in Linux's saved copy of the auxiliary vector on x86-64 (`mm->saved_auxv`, 448
/// bytes), which PR_GET_AUXV answers with, zero-padded.
pub const SAVED_AUXV_WORDS: usize = 56;

/// The auxiliary vector of the program's last exec as it was built (PR_GET_AUXV), whatever
/// the program later writes over the copy on its stack.
pub static SAVED_AUXV: [AtomicU64; SAVED_AUXV_WORDS] = [const { AtomicU64::new(0) }; SAVED_AUXV_WORDS];

/// Builds the initial stack below `stack_hi` and returns the initial rsp.
fn build_stack(
    img: &Image,
    loaded: &Loaded,
    interp_base: u64,
    stack_hi: u64,
    vdso_at: u64,
) -> Result<u64, &'static str> {
    let strings = img.strings;
    let mut sp = stack_hi;
    let push_bytes = |sp: &mut u64, bytes: &[u8]| -> u64 {
        *sp -= bytes.len() as u64 + 1;
        // SAFETY: inside the freshly allocated stack (zeroed, so the NUL is already there).
        unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), *sp as *mut u8, bytes.len()) };
        *sp
    };
    // Linux's layout (fs/exec.c): an 8-byte end marker at the top, the file name below it,
    // then the argument and environment strings in one run, in order (argv[0] lowest, each
    // right after the previous one's NUL). Programs rely on it: libuv's `uv_setup_args` and
    // every setproctitle take the arguments' room as one area from argv[0] to the end of the
    // last, which may run on into the environment's.
    sp -= 8;
    let execfn = push_bytes(&mut sp, img.execfn);
    let strings_len: u64 = strings.iter().map(|s| s.len() as u64 + 1).sum();
    sp -= strings_len;
    let mut at = sp;
    let ptrs: Vec<u64> = strings
        .iter()
        .map(|s| {
            let p = at;
            // SAFETY: inside the freshly allocated stack, in the run just reserved (zeroed, so
            // each NUL is already there).
            unsafe { core::ptr::copy_nonoverlapping(s.as_ptr(), p as *mut u8, s.len()) };
            at += s.len() as u64 + 1;
            p
        })
        .collect();
    let argc = img.argc;
    let args_end = ptrs.get(argc).copied().unwrap_or(at);
    INITIAL_STACK[4].store(ptrs.first().copied().unwrap_or(at), Ordering::Relaxed);
    INITIAL_STACK[5].store(args_end, Ordering::Relaxed);
    INITIAL_STACK[0].store(args_end, Ordering::Relaxed);
    INITIAL_STACK[1].store(at, Ordering::Relaxed);
    let platform = push_bytes(&mut sp, b"x86_64");
    sp -= 16;
    let random_addr = sp;
    // Random bytes straight into the stack (seeds of the stack protector and pointer guard).
    // SAFETY: inside the freshly allocated stack, below the strings pushed above.
    let random = unsafe { core::slice::from_raw_parts_mut(random_addr as *mut u8, 16) };
    crate::random::fill(random).map_err(|_| "no random bytes from the host")?;

    // From the table where the kernel runs natively (leaf 1's EDX is the same on every CPU): a
    // CPUID traps to the host. In emulated ring 0 the table's lookup would cost more.
    let hwcap = if crate::arch::ring3::kernel_runs_natively() {
        crate::arch::cpuid_cache::answer(1, 0).3
    } else {
        crate::arch::instr::cpuid(1, 0).3
    } as u64;
    // Without a vDSO, libc simply makes system calls (the entry is then AT_IGNORE, 1).
    let vdso = super::vdso::map(Some(vdso_at)).map_or((1, 0), |a| (AT_SYSINFO_EHDR, a));
    let auxv: [(u64, u64); 23] = [
        vdso,
        (AT_PHDR, loaded.phdr),
        (AT_PHENT, 56),
        (AT_PHNUM, loaded.phnum),
        (AT_PAGESZ, PAGE),
        (AT_BASE, interp_base),
        (AT_FLAGS, 0),
        (AT_ENTRY, loaded.entry),
        (AT_UID, super::calls::ids::ruid() as u64),
        (AT_EUID, super::calls::ids::euid() as u64),
        (AT_GID, super::calls::ids::rgid() as u64),
        (AT_EGID, super::calls::ids::egid() as u64),
        (AT_SECURE, 0),
        (AT_RANDOM, random_addr),
        (AT_HWCAP, hwcap),
        (AT_HWCAP2, 0),
        (AT_CLKTCK, 100),
        (AT_PLATFORM, platform),
        (AT_EXECFN, execfn),
        (AT_MINSIGSTKSZ, super::signal::frame::min_alt_stack()),
        (AT_RSEQ_FEATURE_SIZE, super::rseq::FEATURE_SIZE),
        (AT_RSEQ_ALIGN, super::rseq::ALIGN),
        (AT_NULL, 0),
    ];
    // argc, argv..., NULL, envp..., NULL, auxv pairs.
    let words = 1 + argc + 1 + (ptrs.len() - argc) + 1 + auxv.len() * 2;
    sp = (sp - words as u64 * 8) & !15;
    let mut w = sp as *mut u64;
    let mut put = |v: u64| {
        // SAFETY: inside the stack, below the strings.
        unsafe {
            w.write(v);
            w = w.add(1);
        }
    };
    let envp = sp + 8 * (1 + argc as u64 + 1);
    let envc = (ptrs.len() - argc) as u64;
    INITIAL_STACK[2].store(envp + 8 * (envc + 1), Ordering::Relaxed);
    INITIAL_STACK[3].store(auxv.len() as u64 * 16, Ordering::Relaxed);
    put(argc as u64);
    ptrs[..argc].iter().for_each(|&p| put(p));
    put(0);
    ptrs[argc..].iter().for_each(|&p| put(p));
    put(0);
    let saved = auxv.iter().flat_map(|&(k, v)| [k, v]).chain(core::iter::repeat(0));
    for (slot, word) in SAVED_AUXV.iter().zip(saved) {
        slot.store(word, Ordering::Relaxed);
    }
    for (k, v) in auxv {
        put(k);
        put(v);
    }
    super::channel::stack_built();
    Ok(sp)
}

/// The main stack's size: RLIMIT_STACK's soft limit (8 MiB by default, as on Linux), in
/// whole 2 MiB pages, at most `MAIN_STACK_MAX` or an eighth of the program's pool (its
/// addresses are guest-physical, reserved up front, though touched only as the stack grows).
/// An unlimited or larger limit gets that most, as Linux's stack then grows until it meets
/// another mapping (8 MiB once, less than a 1 GiB limit got: a program recursing 64 MiB deep
/// under `ulimit -s unlimited` crashed).
fn main_stack_size() -> u64 {
    let soft = PROCESS.rlimits.lock()[3].0;
    let (lo, hi) = usermem::pool_range();
    let most = ((hi - lo) / 8).clamp(STACK_FALLBACK, MAIN_STACK_MAX);
    let size = soft.clamp(LARGE_PAGE, most);
    size.div_ceil(LARGE_PAGE) * LARGE_PAGE
}

/// How much of the main stack's `stack_size` bytes (`main_stack_size`) the program may use:
/// its soft RLIMIT_STACK in whole pages, at least `STACK_LIMIT_FLOOR` (its arguments and
/// environment must fit; Linux refuses an execve whose arguments take more than a quarter of
/// the limit).
fn main_stack_limit(stack_size: u64) -> u64 {
    const STACK_LIMIT_FLOOR: u64 = 16 << 10;
    let soft = PROCESS.rlimits.lock()[3].0;
    usermem::page_up(soft).clamp(STACK_LIMIT_FLOOR, stack_size)
}

/// Reserves the memory right after the program for its break, before anything else is placed
/// there (the allocator hands out the lowest free blocks, so the first stack or mmap would
/// otherwise sit where the break must grow, and brk would fail at once). An eighth of the
/// program's pool, at most 1 GiB, shrinking if that much is not free; only reserved, not
/// touched. Returns the end of the window (`end` itself if nothing could be reserved).
fn reserve_brk_window(end: u64, pool_size: u64) -> u64 {
    let mut window = (pool_size / 8).min(1 << 30) / LARGE_PAGE * LARGE_PAGE;
    let end_up = end.div_ceil(LARGE_PAGE) * LARGE_PAGE;
    while window >= LARGE_PAGE {
        let top = end_up + window;
        if usermem::reserve_break_window(end, top - end).is_ok() {
            return top;
        }
        window /= 2;
    }
    end
}

/// Loads `img` into the program's memory (empty but for what the caller holds): its segments,
/// the break right after them, its interpreter, the main stack with its guard; `boot` at boot
/// (the monitor's reservations and the function overrides), None for an execve.
pub fn load_image(img: &Image, boot: Option<&BootInfo>) -> Result<Start, &'static str> {
    let loaded = load_segments(img.program, boot, Some(img.overrides))?;
    start_overrides(img, &loaded);
    let (pool_lo, pool_hi) = usermem::pool_range();
    let brk_end = reserve_brk_window(loaded.end, pool_hi - pool_lo);
    let brk = Brk {
        start: loaded.end,
        cur: loaded.end,
        mapped_end: brk_end,
        kept_top: 0,
        regrowths: 0,
        lowered: false,
        grows: 0,
    };
    super::process::UNUSED_BREAK.store(brk.unused(), Ordering::Relaxed);
    *PROCESS.brk.lock() = brk;
    // Past the break's window: first the stack's guard, the stack, then the vDSO and the near
    // table right above its top, in one range whose end is on a 2 MiB boundary with 4 KiB host
    // pages under it (`usermem::alloc_stack`): the few KiB a program uses at the stack's top
    // and those pages cost the host a few 4 KiB clears, where a fresh host huge page each cost
    // a 2 MiB clear (0.3-1.4 ms here). The stack comes first so that the exit that gives its
    // chunk to KVM also asks for those pages (with the interpreter first, its load asked for
    // the chunk, and the stack's pages took an exit of their own).
    let stack_size = main_stack_size();
    let (vdso_len, near_len) = (super::vdso::len(), super::near_table::len());
    let guard = usermem::alloc_stack(STACK_GUARD + stack_size + vdso_len + near_len, LARGE_PAGE)
        .map_err(|_| "not enough memory for the stack")?;
    let top = guard + STACK_GUARD + stack_size;
    // A soft RLIMIT_STACK below the stack's whole 2 MiB pages: the part below the limit is gap
    // too, so that the stack ends where Linux's would (until 2026-12-03 `ulimit -s 100` gave a
    // 2 MiB stack).
    let bottom = top - main_stack_limit(stack_size);
    protect::set(guard, bottom, 0);
    super::stack_guard::set(guard, bottom);
    if loaded.exec_stack {
        // As Linux's execve for a program whose PT_GNU_STACK has PF_X; the C library gives its
        // threads' stacks PROT_EXEC itself then.
        protect::set(bottom, top, protect::ALL);
    }
    for (w, v) in MAIN_STACK.iter().zip([guard, bottom, top, top + vdso_len]) {
        w.store(v, core::sync::atomic::Ordering::Relaxed);
    }
    // A dynamically linked program starts in its interpreter (ld.so); the auxiliary vector
    // tells it where the program is (AT_PHDR, AT_ENTRY) and where it is itself (AT_BASE), as
    // Linux's execve does.
    let interp = match img.interp {
        None => None,
        Some(file) => Some(load_segments(file, boot, None).map_err(|_| "cannot load its interpreter")?),
    };
    super::profile::program_loaded(loaded.base, interp.as_ref().map_or(0, |i| i.base));
    let sp = build_stack(img, &loaded, interp.as_ref().map_or(0, |i| i.base), top, top)?;
    START_SP.store(sp, core::sync::atomic::Ordering::Relaxed);
    super::near_table::map(Some(top + vdso_len));
    // With the near table in place (far images' slots lie there), before the program runs.
    for l in core::iter::once(&loaded).chain(interp.as_ref()) {
        super::cpuid_sites::rewrite_loaded(l.code.0, l.code.1);
    }
    let entry = interp.as_ref().map_or(loaded.entry, |i| i.entry);
    Ok(Start { entry, sp })
}

pub fn start_program(boot: &BootInfo) -> Result<(), &'static str> {
    let pool = boot.user_pool;
    usermem::init(pool.base, pool.base + pool.size);
    let args = crate::mem::phys_to_virt(boot.args.base) as *const u8;
    // SAFETY: the monitor placed argv/envp there and reserved the range.
    let block = unsafe { core::slice::from_raw_parts(args, boot.args.size as usize) };
    let mut strings: Vec<&[u8]> = block.split(|&b| b == 0).take((boot.argc + boot.envc + 3) as usize).collect();
    if strings.len() < (boot.argc + boot.envc) as usize {
        return Err("malformed argument block");
    }
    // After envp: what readlink("/proc/self/exe") answers, the file name the exec named and
    // the command name, if the monitor put them there.
    let after = strings.split_off((boot.argc + boot.envc) as usize);
    let given = |i: usize, len: u32| after.get(i).copied().filter(|s| len != 0 && s.len() == len as usize);
    if let Some(exe) = given(0, boot.exe_len) {
        super::own_exe::set(exe);
    }
    let img = Image {
        program: placed_file(boot.program),
        interp: (boot.interp.size != 0).then(|| placed_file(boot.interp)),
        strings: &strings,
        argc: boot.argc as usize,
        execfn: given(1, boot.execfn_len).or(strings.first().copied()).unwrap_or(b""),
        overrides: super::overrides::boot_entries(boot),
        library_mode: boot.flags,
    };
    // The limits first: the main stack's size follows RLIMIT_STACK.
    super::process::inherit_rlimits(&boot.rlimits);
    let Start { entry, sp } = load_image(&img, Some(boot))?;
    PROCESS.live_threads.store(1, Ordering::SeqCst);
    super::calls::info::arm_cpu_limit();
    *PROCESS.name.lock() = comm_name(given(2, boot.comm_len).unwrap_or(img.execfn));
    let mask = super::signal::start_state(boot.sig_ignored, boot.sig_mask);
    let handle = sched::spawn_with(
        ThreadOptions::named("main").on_cpu(0).user(),
        |t| {
            // The main thread's tid is the pid, which is `hrt`'s host pid.
            t.tid = boot.host_pid;
            PROCESS.pid.store(t.tid, Ordering::Relaxed);
            t.sigmask = mask;
            super::calls::signal::thread_started(t);
            super::channel::publish_leader(Some(t));
        },
        move || {
            let top = sched::thread::stack_top(
                // SAFETY: the current thread's record is alive.
                unsafe { &*sched::current() },
            );
            if entry >= super::uaccess::USER_END {
                // See `exec::exec_self`: as the program's first instruction fault.
                super::fault::terminate(11, None);
            }
            // SAFETY: our own kernel stack; entry and sp are in program memory.
            unsafe { user::return_to_user(&user::initial_user_frame(entry, sp), top) }
        },
    )
    .map_err(|_| "cannot create the main thread")?;
    handle.detach();
    Ok(())
}

/// The comm name of a program started as `path`: its last component, at most 15 bytes.
pub fn comm_name(path: &[u8]) -> [u8; 16] {
    let base = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    let mut name = [0u8; 16];
    let n = base.len().min(15);
    name[..n].copy_from_slice(&base[..n]);
    name
}
