//! brk, mmap, munmap, mprotect, msync (mremap and madvise have their own files). Memory is physical, mapped once and reads
//! zero when handed out (free pool memory is kept zero: see usermem); protections other than
//! read-write are enforced by the page tables (`linux::protect`).

use linux_raw_sys::general;

use crate::arch::traps::TrapFrame;
use crate::linux::errno::{Errno, SysResult, EACCES, EBADF, EINVAL, ENODEV, ENOMEM, EPERM, ESPIPE};
use crate::linux::filemap;
use crate::linux::locked;
use crate::linux::past_eof;
use crate::linux::process::PROCESS;
use crate::linux::protect;
use crate::linux::shared_files;
use crate::linux::usermem::{self, page_up, PAGE};

// Linux's flag values (linux-raw-sys has them as u32; system-call arguments arrive as u64).
const MAP_SHARED: u64 = general::MAP_SHARED as u64;
const MAP_PRIVATE: u64 = general::MAP_PRIVATE as u64;
const MAP_FIXED: u64 = general::MAP_FIXED as u64;
const MAP_ANONYMOUS: u64 = general::MAP_ANONYMOUS as u64;
const MAP_FIXED_NOREPLACE: u64 = general::MAP_FIXED_NOREPLACE as u64;
const MAP_HUGETLB: u64 = general::MAP_HUGETLB as u64;
const MAP_STACK: u64 = general::MAP_STACK as u64;
const MAP_LOCKED: u64 = general::MAP_LOCKED as u64;
const MAP_GROWSDOWN: u64 = general::MAP_GROWSDOWN as u64;
const MAP_32BIT: u64 = 0x40;
const MAP_NORESERVE: u64 = general::MAP_NORESERVE as u64;
pub(super) const LARGE_PAGE: u64 = 2 << 20;
/// The top of the x86-64 user address space as Linux sees it (TASK_SIZE, 47-bit): Linux checks
/// lengths and fixed addresses against it before anything else.
pub(super) const TASK_SIZE: u64 = (1 << 47) - PAGE;

/// Linux's `vm.mmap_min_addr` (its default on x86-64): fixed mappings below it are EPERM
/// (Linux grants them only with CAP_SYS_RAWIO; HRT never does, and keeps these pages not
/// present, so NULL dereferences fault).
const MMAP_MIN_ADDR: u64 = 64 << 10;

/// Linux's `len > TASK_SIZE - start` test: whether `[start, start + len)` fits in user space.
pub(super) fn fits_user_space(start: u64, len: u64) -> bool {
    start <= TASK_SIZE && len <= TASK_SIZE - start
}

pub fn brk(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    filemap::forget();
    let want = a[0];
    // Under mlockall(MCL_FUTURE) the heap's growth is locked: whether the limit binds is asked
    // of the host before the break's lock is taken.
    let future = locked::future();
    let unlimited = future.is_some() && locked::unlimited();
    // Under RLIMIT_DATA the heap's growth counts with every private writable mapping, as in
    // Linux's `may_expand_vm` (an 80 MiB mapping and then an 80 MiB break under a 100 MiB
    // limit: the break is refused). Measured before the break's lock, which the measure takes.
    let data = super::data_limit::data_now();
    let mut b = PROCESS.brk.lock();
    if want < b.start || !super::data_limit::break_allowed(b.start, want) {
        return Ok(b.cur);
    }
    let (old_cur, old_end) = (b.cur, b.mapped_end);
    let grows = page_up(want).saturating_sub(page_up(b.cur).max(b.start));
    if grows != 0 && super::info::address_space_allows_with(&b, grows).is_err() {
        return Ok(b.cur);
    }
    if let Some(data) = data.filter(|_| grows != 0) {
        if super::data_limit::data_may_grow_from(data, grows).is_err() {
            return Ok(b.cur);
        }
    }
    if grows != 0 && future.is_some() && !unlimited && !locked::within_soft_limit(locked::total() + grows) {
        return Ok(b.cur);
    }
    // As Linux, the break stays a page short of the next mapping.
    if want > b.cur && page_up(want) + PAGE > b.mapped_end {
        let end = page_up(want).max(b.mapped_end);
        if usermem::mapped_within(b.mapped_end, end + PAGE) != 0 {
            return Ok(b.cur);
        }
    }
    if want > b.mapped_end {
        // Grow in 2 MiB steps; on failure the break stays (Linux returns the old break).
        let Some(new_end) = want.checked_next_multiple_of(LARGE_PAGE) else {
            return Ok(b.cur);
        };

        // Short of a mapping above (a fixed one, `break_window_yields`): just what it asks.
        let new_end = if usermem::grow_break(b.mapped_end, new_end) {
            new_end
        } else if usermem::grow_break(b.mapped_end, page_up(want)) {
            page_up(want)
        } else {
            return Ok(b.cur);
        };
        b.mapped_end = new_end;
    }
    // Lowered: the pages above the break become not present and zero (glibc's calloc relies
    // on memory reading zero when the break grows again); the window itself is kept.
    if want < b.cur {
        // The address space shrinks: its size now may be the largest it reached (VmPeak).
        crate::linux::status::note_peak();
    }
    b.cur = want;
    let (was_top, top) = (page_up(old_cur).max(b.start), page_up(want).max(b.start));
    if top > was_top && future.is_some() {
        locked::set(was_top, top, future);
    } else if top < was_top {
        locked::release(top, was_top);
    }
    let (old_page, new_page) = (page_up(old_cur).max(b.start), page_up(want).max(b.start));
    if new_page < old_page {
        if keeps_trimmed(&b, new_page, old_page) {
            usermem::break_lowered_kept(new_page, old_page);
            b.kept_top = b.kept_top.max(old_page);
            KEPT_LOWERINGS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        } else {
            EXACT_LOWERINGS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
            // Exactly: what an earlier lowering kept goes too.
            usermem::break_moved(old_cur, want, old_end, b.mapped_end);
            if b.kept_top > old_page {
                usermem::release_kept(old_page, b.kept_top);
            }
            b.kept_top = 0;
        }
    } else if new_page > old_page {
        let mut from = old_page;
        if b.kept_top > old_page {
            let kept_end = new_page.min(b.kept_top);
            usermem::break_regrown_kept(old_page, kept_end);
            if kept_end == b.kept_top {
                b.kept_top = 0;
            }
            from = kept_end;
        }
        b.grows = b.grows.saturating_add(1);
        let ahead = grows_ahead_to(&b, new_page);
        if from < new_page && ahead > new_page {
            usermem::break_grown_ahead(from, new_page, ahead, old_end, b.mapped_end);
            b.kept_top = ahead;
        } else {
            usermem::break_moved(from, want, old_end, b.mapped_end);
        }
    } else {
        usermem::break_moved(old_cur, want, old_end, b.mapped_end);
    }
    if new_page != old_page {
        if new_page > old_page && b.lowered {
            b.regrowths = b.regrowths.saturating_add(1);
        }
        b.lowered = new_page < old_page;
    }
    crate::linux::process::UNUSED_BREAK.store(b.unused(), core::sync::atomic::Ordering::Relaxed);
    Ok(want)
}

/// Lowerings of the break that kept their pages present, and those that made them not present
/// (`-v` prints both at exit).
static KEPT_LOWERINGS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);
static EXACT_LOWERINGS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// (lowerings that kept their pages, lowerings that unmapped them) so far.
pub fn lowerings() -> (u64, u64) {
    use core::sync::atomic::Ordering::Relaxed;
    (KEPT_LOWERINGS.load(Relaxed), EXACT_LOWERINGS.load(Relaxed))
}

/// After this many growths of the break, a growth into a 2 MiB page makes the whole page
/// present (`grows_ahead_to`).
const GROW_AHEAD_AFTER: u32 = 16;

/// Where the break's growth to `new_page` makes memory present up to: the end of the 2 MiB
/// page it grows into (within the break's window) once the break has grown a few times, else
/// `new_page`. A heap that grows by small steps (miniAMR's 6,315 growths of ~132 KiB) made
/// each step's pages present by themselves, which split every 2 MiB leaf into 4 KiB leaves,
/// and under shadow paging each 4 KiB page the program then touched cost a fault of its own
/// (6,000 growths of 132 KiB, each page touched: 30,594 faults, 0.56-2.2 s against 0.27
/// natively); a 2 MiB page made present whole stays one leaf, one fault. The pages above the
/// break are kept present as a lowering keeps them (`keeps_trimmed`): the page map says they
/// are no mapping, and the break growing over them zeroes them; a touch there does not fault.
fn grows_ahead_to(b: &crate::linux::process::Brk, new_page: u64) -> u64 {
    if b.grows < GROW_AHEAD_AFTER || crate::bootinfo::get().flags & hrt_abi::flags::EXACT_BRK != 0 {
        return new_page;
    }
    new_page.next_multiple_of(crate::arch::paging::LARGE_PAGE_SIZE).min(b.mapped_end).max(new_page)
}

/// After this many regrowths of a lowered break, lowering it keeps the pages (`keeps_trimmed`).
const KEEP_AFTER_REGROWTHS: u32 = 4;
/// At most this much above the break is kept present: a lowering past it is exact, and gives
/// the host its memory back as before (whole 2 MiB pages, `usermem::zero`).
const KEEP_AT_MOST: u64 = 64 << 20;

/// Whether lowering the break from `old_page` to `new_page` keeps the pages in between present
/// (their contents zeroed only when the break grows over them again) instead of making them not
/// present at once. Only once the break has shrunk and grown back a few times: a malloc heap
/// trimmed and grown again (glibc trims its top above 128 KiB, and LULESH's temporaries made
/// it do so ~8 times an iteration), where each lowering cost a TLB flush (a CR3 reload in
/// emulated ring 0 on a PVM host, ~25 us) and each regrowth a trapped page-table store and a
/// shadow-paging fault per page touched again. And only for pages with the default protection
/// and no host shared memory (Linux's lowering unmaps whatever is there; those take the exact
/// path). What differs from Linux then: a touch above the lowered break reads or writes the
/// kept page instead of faulting (SIGSEGV) — only a program that uses memory it gave back sees
/// it, as under McKernel and mOS, which keep every lowered heap. Memory the break grows over
/// still reads zero, forwarded calls and mprotect/madvise/mincore still find no mapping there
/// (the page map says so), and the window above the break, given up to a mapping, is made not
/// present and zero as before. At most `KEEP_AT_MOST` is kept: a program that gives a large
/// heap back gives the host its memory back.
fn keeps_trimmed(b: &crate::linux::process::Brk, new_page: u64, old_page: u64) -> bool {
    if b.regrowths < KEEP_AFTER_REGROWTHS
        || new_page >= old_page
        || b.kept_top.max(old_page) - new_page > KEEP_AT_MOST
        || crate::bootinfo::get().flags & hrt_abi::flags::EXACT_BRK != 0
    {
        return false;
    }
    let default = matches!(protect::runs(new_page, old_page).as_slice(), [(s, e, p)] if *s == new_page && *e == old_page && *p == protect::DEFAULT);
    let mut owned = 0;
    shared_files::for_each_guest_owned(new_page, old_page, |s, e| owned += e - s);
    default && owned == old_page - new_page
}

/// Whether the program's descriptor `fd` is open (asked of the monitor: only on the way to
/// an error).
fn descriptor_open(fd: i32) -> bool {
    crate::linux::syscall::forward(general::__NR_fcntl as u64, [fd as u32 as u64, general::F_GETFD as u64, 0, 0, 0, 0])
        >= 0
}

/// Linux's mmap checks for a file's descriptor: open (EBADF), readable, and for a shared
/// writable mapping open for writing and not append-only (EACCES); a pipe, socket or terminal
/// (not seekable) or a directory opened as one has no mapping (ENODEV).
fn descriptor_allows(fd: i32, prot: u64, shared: bool) -> Result<(), Errno> {
    let fl = crate::linux::syscall::forward(
        general::__NR_fcntl as u64,
        [fd as u32 as u64, general::F_GETFL as u64, 0, 0, 0, 0],
    );
    if fl < 0 {
        return Err(EBADF);
    }
    let (mode, fl) = (fl as u32 & general::O_ACCMODE, fl as u32);
    let writes = shared && prot & protect::PROT_WRITE != 0;
    if mode == general::O_WRONLY || writes && (mode != general::O_RDWR || fl & general::O_APPEND != 0) {
        return Err(EACCES);
    }
    let at = crate::linux::syscall::forward(
        general::__NR_lseek as u64,
        [fd as u32 as u64, 0, general::SEEK_CUR as u64, 0, 0, 0],
    );
    if at == -(ESPIPE as i64) || fl & general::O_DIRECTORY != 0 {
        return Err(ENODEV);
    }
    Ok(())
}

/// A fixed mapping at `[addr, addr + len)`: the part of the break's window above the break
/// (kept mapped so that the break grows cheaply, but free address space on Linux) is given up
/// from there on, so that MAP_FIXED_NOREPLACE finds it free and the break, to grow past the
/// new mapping, must find free memory (`grow_break`), as Linux's brk refuses to grow into a
/// mapping. (The break grew over such a mapping, and lowered again unmapped it.)
fn break_window_yields(addr: u64, len: u64) {
    let mut b = PROCESS.brk.lock();
    let in_use = page_up(b.cur).max(b.start);
    if addr + len > in_use {
        cut_break_window(&mut b, addr.max(in_use));
    }
}

/// Whether the program has memory in `[start, end)` other than the break's window above the
/// break (which is free address space on Linux, and yields to a fixed mapping here).
fn taken_outside_break_window(start: u64, end: u64) -> bool {
    let (lo, hi) = {
        let b = PROCESS.brk.lock();
        (page_up(b.cur).max(b.start), b.mapped_end)
    };
    let window = if lo < hi && lo < end && start < hi { usermem::mapped_within(start.max(lo), end.min(hi)) } else { 0 };
    usermem::mapped_within(start, end) > window
}

/// Gives the break's window from `cut` up back to the free memory; false if it ends there.
fn cut_break_window(b: &mut crate::linux::process::Brk, cut: u64) -> bool {
    if cut >= b.mapped_end {
        return false;
    }
    // Pages a lowering kept present there go as any window page: not present, zero.
    usermem::unmap(cut, b.mapped_end);
    if b.kept_top > cut {
        b.kept_top = if cut > page_up(b.cur).max(b.start) { cut } else { 0 };
    }
    b.mapped_end = cut;
    crate::linux::process::UNUSED_BREAK.store(b.unused(), core::sync::atomic::Ordering::Relaxed);
    true
}

/// Gives the break's window above the break back to the free memory (mappings may take it;
/// the break then grows only into free memory, `grow_break`); false if there was none.
fn break_window_given_up() -> bool {
    let mut b = PROCESS.brk.lock();
    let in_use = page_up(b.cur).max(b.start);
    cut_break_window(&mut b, in_use)
}

/// Linux's checks of a mapping's type and flags, in its order: an anonymous mapping is
/// MAP_SHARED or MAP_PRIVATE (MAP_SHARED_VALIDATE is EINVAL there); a file mapping may also be
/// MAP_SHARED_VALIDATE, which refuses flags Linux does not know (EOPNOTSUPP), and MAP_SYNC
/// needs a DAX file, which no host file here is; a file offset past the largest file size is
/// EOVERFLOW.
/// mmap's checks of its arguments, in Linux's order (do_mmap): the length (EINVAL for none,
/// ENOMEM past the address space), a fixed address (EINVAL unaligned, for MAP_HUGETLB to 2
/// MiB; ENOMEM past the address space), MAP_FIXED_NOREPLACE over a mapping (EEXIST), then the
/// mapping's type and flags.
fn checks_before_mapping(addr: u64, len: u64, flags: u64, off: u64) -> Result<(), u32> {
    if len == 0 {
        return Err(EINVAL);
    }
    // As Linux: a length that rounds past the end of the address space, or a fixed range that
    // does not fit in it, is ENOMEM.
    if len > TASK_SIZE {
        return Err(ENOMEM);
    }
    let len = page_up(len);
    let file = flags & MAP_ANONYMOUS == 0;
    if flags & (MAP_FIXED | MAP_FIXED_NOREPLACE) != 0 {
        // Anonymous huge pages are placed as 2 MiB pages (a file's MAP_HUGETLB is refused
        // below, with its type).
        let huge = !file && flags & MAP_HUGETLB != 0;
        if !addr.is_multiple_of(if huge { LARGE_PAGE } else { PAGE }) {
            return Err(EINVAL);
        }
        if !fits_user_space(addr, len) {
            return Err(ENOMEM);
        }
        if flags & MAP_FIXED == 0 && taken_outside_break_window(addr, addr + len) {
            return Err(crate::linux::errno::EEXIST);
        }
    }
    mapping_type_allowed(flags, file, off, len)
}

fn mapping_type_allowed(flags: u64, file: bool, off: u64, len: u64) -> Result<(), u32> {
    const MAP_TYPE: u64 = 0xf;
    const MAP_SHARED_VALIDATE: u64 = 0x3;
    const MAP_SYNC: u64 = 0x80000;
    // Linux's LEGACY_MAP_MASK: the flags MAP_SHARED always ignored unknown ones beside.
    const LEGACY_MAP_MASK: u64 = 0x1
        | 0x2
        | 0x10
        | 0x20
        | 0x40
        | 0x80
        | 0x100
        | 0x800
        | 0x1000
        | 0x2000
        | 0x4000
        | 0x8000
        | 0x1_0000
        | 0x2_0000
        | 0x4_0000
        | 0x400_0000
        | 0xfc00_0000;
    let kind = flags & MAP_TYPE;
    if !file {
        // Shared anonymous memory cannot grow down (Linux's do_mmap).
        let grows = kind == MAP_SHARED && flags & MAP_GROWSDOWN != 0;
        return if (kind == MAP_SHARED || kind == MAP_PRIVATE) && !grows { Ok(()) } else { Err(EINVAL) };
    }
    // No file here takes MAP_SYNC (a DAX file would), whatever the type (Linux 6.18 refuses
    // it for a private mapping too); a file's mapping never grows down.
    match kind {
        MAP_SHARED | MAP_SHARED_VALIDATE | MAP_PRIVATE
            if flags & MAP_SYNC != 0 || kind == MAP_SHARED_VALIDATE && flags & !LEGACY_MAP_MASK != 0 =>
        {
            return Err(crate::linux::errno::EOPNOTSUPP);
        }
        MAP_SHARED | MAP_SHARED_VALIDATE | MAP_PRIVATE if flags & MAP_GROWSDOWN != 0 => return Err(EINVAL),
        MAP_SHARED | MAP_SHARED_VALIDATE | MAP_PRIVATE => {}
        _ => return Err(EINVAL),
    }
    if off > (i64::MAX as u64).saturating_sub(len) {
        return Err(crate::linux::errno::EOVERFLOW);
    }
    Ok(())
}

/// mmap: `map`, with the new mapping locked where MAP_LOCKED or `mlockall(MCL_FUTURE)` asks
/// (`locked`).
pub fn mmap(frame: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let explicit = a[3] & MAP_LOCKED != 0;
    let locking = explicit || locked::future().is_some();
    if locking && a[1] != 0 && a[1] <= TASK_SIZE {
        locked::new_mapping_allowed(page_up(a[1]), explicit)?;
    }
    let start = map(frame, a)?;
    if locking {
        locked::new_mapping(start, start + page_up(a[1]), explicit);
    }
    // Private anonymous memory grows down (a private file mapping would grow with the file's
    // earlier pages on Linux: not followed, it stays as mapped).
    if a[3] & MAP_GROWSDOWN != 0 && a[3] & (MAP_ANONYMOUS | MAP_SHARED) == MAP_ANONYMOUS {
        crate::linux::grows_down::mapped(start, start + page_up(a[1]));
    }
    Ok(start)
}

fn map(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (addr, len, prot, flags, fd, off) = (a[0], a[1], super::info::with_implied_exec(a[2]), a[3], a[4] as i32, a[5]);
    if !off.is_multiple_of(PAGE) {
        return Err(EINVAL);
    }
    if let Err(e) = checks_before_mapping(addr, len, flags, off) {
        // Linux looks up a file mapping's descriptor before any of them: EBADF first (asked
        // only here: a good mapping's descriptor is checked by the host's read or map).
        if flags & MAP_ANONYMOUS == 0 && !descriptor_open(fd) {
            return Err(EBADF);
        }
        return Err(e);
    }
    let len = page_up(len);
    // RLIMIT_AS: what the mapping adds (a fixed one replaces what it covers).
    let adds = if flags & MAP_FIXED != 0 && fits_user_space(addr, len) {
        len - usermem::mapped_within(addr, addr + len)
    } else {
        len
    };
    super::info::address_space_allows(adds)?;
    if flags & (MAP_SHARED | MAP_PRIVATE) == MAP_PRIVATE && prot & protect::PROT_WRITE != 0 {
        super::data_limit::data_may_grow(adds)?;
    }
    let file = flags & MAP_ANONYMOUS == 0;
    // As Linux for a file outside hugetlbfs (MPICH tries it, then maps the file without it).
    if file && flags & MAP_HUGETLB != 0 {
        return Err(EINVAL);
    }
    // MAP_SHARED (or MAP_SHARED_VALIDATE) of a file: the host file's own pages (shared_files).
    // Shared anonymous memory is guest RAM (the program's threads share all memory) that a
    // fork makes host shared memory (shared_files::share_anonymous).
    let shared = file && flags & (MAP_SHARED | MAP_PRIVATE) != MAP_PRIVATE;
    let shared_anonymous = !file && flags & (MAP_SHARED | MAP_PRIVATE) != MAP_PRIVATE;
    // A fixed file mapping over the same file's bytes (ld.so's segments inside the extent it
    // mapped first) keeps them: see `filemap`.
    let reuse = file && !shared && flags & MAP_FIXED != 0 && filemap::reuse(addr, len, fd as u64, off, prot);
    if !reuse {
        filemap::forget();
    }
    let mut replaced = false;
    // A private file mapping the kernel places starts not present: what the file fills is made
    // present once read, and pages wholly past its end never are (`past_eof`).
    let mut unfilled = false;
    let start = if flags & (MAP_FIXED | MAP_FIXED_NOREPLACE) != 0 {
        if !addr.is_multiple_of(PAGE) {
            return Err(EINVAL);
        }
        // MAP_FIXED may replace mappings in use (their protections and old TLB entries too).
        replaced = flags & MAP_FIXED != 0;
        if !fits_user_space(addr, len) {
            return Err(ENOMEM);
        }
        if addr < MMAP_MIN_ADDR {
            return Err(EPERM);
        }
        if !usermem::is_user_range(addr, addr + len) {
            let call = if replaced { "mmap MAP_FIXED" } else { "mmap MAP_FIXED_NOREPLACE" };
            return Err(outside_program_memory(call, addr, len));
        }
        break_window_yields(addr, len);
        let over_itself = || !shared && crate::linux::private_files::all_from(addr, addr + len, fd as u64);
        if file && !reuse && flags & MAP_FIXED != 0 && usermem::mapped_within(addr, addr + len) != 0 && !over_itself() {
            // What it replaces stays if the descriptor is refused (the monitor's checks come
            // after the replacement): Linux checks before it unmaps anything. (Not over a
            // private mapping of the same descriptor, which was fit to map then: ld.so's.)
            descriptor_allows(fd, prot, shared)?;
        }
        if flags & MAP_FIXED_NOREPLACE != 0 {
            usermem::alloc_fixed(addr, len)?
        } else {
            // Replaces whatever the program had there with fresh contents (or, reused, with
            // the same).
            usermem::map_fixed(addr, len, !reuse)?
        }
    } else {
        // Mappings of whole 2 MiB pages get 2 MiB alignment where possible (fewer TLB
        // entries), as Linux (6.12 on) aligns only those: a mapping a little larger left a gap
        // of nearly 2 MiB behind it that no later one of its size fit, half of the memory lost
        // to 2 MiB + 4 KiB mappings (956 of them at --mem 4G, 1,700 natively). A stack
        // (MAP_STACK: glibc's thread stacks, 8 MiB + a guard page below) is used from the top,
        // so its end is aligned whatever its size: a thread that uses little of it touches one
        // 2 MiB page of the host, given small host pages (`small_host_pages_under_top`), not
        // the two a start-aligned stack's top straddles (600 threads with 2 MiB stacks: 73 MB
        // of host memory end-aligned, 1.27 GB packed). The gap below a stack stays for smaller
        // mappings.
        let stack = flags & MAP_STACK != 0;
        let whole = len.is_multiple_of(LARGE_PAGE) || stack;
        let align = if len >= LARGE_PAGE && whole { LARGE_PAGE } else { PAGE };
        if stack {
            // A thread comes next (glibc's stacks): its CPU starts waking now.
            crate::sched::thread::prewake_next_placement();
        }
        let kind = if !file && prot & (protect::PROT_READ | protect::PROT_WRITE | protect::PROT_EXEC) == 0 {
            usermem::Fresh::Absent { stack }
        } else if stack {
            usermem::Fresh::Stack
        } else if file && !shared {
            unfilled = true;
            usermem::Fresh::Unfilled
        } else {
            usermem::Fresh::Present
        };
        // An address hint is honoured where that memory is free (`place`).
        // Out of room elsewhere, the break's window above the break is free address space,
        // as on Linux, where mappings fill the space above the heap (and the break then
        // cannot grow).
        let place = || {
            if flags & MAP_32BIT != 0 {
                // Within the lowest 2 GiB, as Linux places it (a hint there is tried first).
                usermem::place_low(addr, len, kind)
            } else {
                usermem::place(addr, len, align, kind)
            }
        };
        let placed = match place() {
            Err(ENOMEM) if break_window_given_up() => place(),
            placed => placed,
        };
        // Linux's overcommit counts only private writable memory without MAP_NORESERVE (and
        // shared memory); anything else it reserves whatever its size.
        let accounted = (shared || prot & protect::PROT_WRITE != 0) && flags & MAP_NORESERVE == 0;
        placed.map_err(|e| memory_full("mmap", len, accounted, e))?
    };
    if shared {
        if let Err(e) = shared_files::map(fd as u64, start, len, off, prot) {
            usermem::unmap(start, start + len);
            return Err(e);
        }
        apply_prot(start, start + len, prot, !replaced);
        shared_files::hide_past_end(start, start + len, prot);
        return Ok(start);
    }
    if shared_anonymous {
        shared_files::add_anonymous(start, len);
    }
    // Where the pages the file fills end (the pages from there on lie wholly past its end), and
    // the count of forwarded calls when the read ended (see `past_eof::mapped`).
    let (mut filled_end, mut quiet) = (start + len, None);
    if file && !reuse {
        // A file mapping: read its contents through the monitor (private, read-only use). A
        // MAP_FIXED range keeps its old protection until `apply_prot` below: let the monitor
        // write there meanwhile.
        crate::linux::usermap::set_read_only(start, start + len, false);
        // Read until the mapping is full or the file ends: one host read stops at 0x7ffff000
        // bytes (Linux's MAX_RW_COUNT), and a mapping of more than 2 GiB read the rest as
        // zeros.
        let mut done = 0;
        while done < len {
            let args = [fd as u64, start + done, len - done, off + done, 0, 0];
            // The first read checks the descriptor as Linux's mmap does (EACCES, ENODEV).
            let nr = if done == 0 { hrt_abi::process::MAP_PREAD } else { general::__NR_pread64 as u64 };
            let got = crate::linux::syscall::forward(nr, args);
            if got < 0 {
                usermem::unmap(start, start + len);
                return Err((-got) as u32);
            }
            if got == 0 {
                break;
            }
            done += got as u64;
        }
        // Only the file's pages can be reused: those past its end are hidden below.
        filled_end = start + page_up(done);
        filemap::remember(start, filled_end - start, fd as u64, off, prot);
        quiet = filemap::quiet_forwarding();
        if unfilled {
            protect::reset(start, filled_end);
        }
    }
    if file {
        // Its pages are the file's to madvise (see `private_files`). Code never writable
        // (a library's text) keeps its bytes at MADV_DONTNEED: they are the file's, but for
        // the kernel's rewrites (`--omp`'s jumps into its runtime among them), which must stay.
        let code = prot & protect::PROT_EXEC != 0 && prot & protect::PROT_WRITE == 0;
        crate::linux::private_files::record(start, len, fd as u64, off, !code);
    }
    if file && off == 0 && crate::linux::rewrite::enabled() {
        // An ELF object mapped from its start (ld.so loading a library): its unwind table
        // gives the extents of its functions, for rewriting their system calls.
        crate::linux::eh_frame::add_mapped(start, len);
    }
    if file && prot & protect::PROT_EXEC != 0 {
        crate::linux::profile::file_mapped(fd as u64, off, start, filled_end - start);
    }
    let exec = file && prot & protect::PROT_EXEC != 0;
    if exec && crate::linux::overrides::file_may_have_entries(fd as u64, off, filled_end - start) {
        // A shared libgomp under `--omp`: its functions jump to the kernel's runtime. The
        // patches write the code, so a replaced (or reused) range loses its old protection.
        if replaced {
            protect::reset(start, filled_end);
        }
        crate::linux::overrides::apply_file(fd as u64, off, start, filled_end - start);
    }
    apply_prot(start, filled_end, prot, !replaced);
    if filled_end < start + len {
        // Pages wholly past the end of the file raise SIGBUS when touched, as on Linux.
        let at = past_eof::Mapped { start, past: filled_end, end: start + len, fd: fd as u64, off, prot };
        past_eof::mapped(at, unfilled, quiet);
    }
    Ok(start)
}

/// A fixed mapping Linux would grant but HRT cannot: the program's addresses are guest-physical
/// (the kernel and the monitor use its pointers as they are), so only guest RAM in the program's
/// pool can be mapped, never the hole below 4 GiB (devices: the IOAPIC, the local APIC), nor
/// anything below the pool or above the RAM. The request fails as a whole with ENOMEM, what
/// Linux answers for an address it cannot place, and `hrt` says so once on its stderr, since
/// the program would have got the memory on Linux.
pub(super) fn outside_program_memory(call: &str, addr: u64, len: u64) -> u32 {
    static SAID: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, core::sync::atomic::Ordering::Relaxed) {
        let (lo, hi) = usermem::pool_range();
        crate::kprintln!(
            "hrt: {call} of [{addr:#x}, {:#x}) is outside the guest RAM the program can have (in [{lo:#x}, {hi:#x}), without the hole below 4 GiB): returning ENOMEM (reported once)",
            addr + len
        );
    }
    ENOMEM
}

/// A mapping the kernel places found no free range that large in the program's memory
/// (`--mem`): ENOMEM, as Linux answers when its address space is full, and `hrt` says so once on
/// its stderr, since Linux reserves address space it does not back and would have given the
/// program the mapping (a program with ~1,500 threads alive at once has 8 MiB stacks for
/// 12 GiB; INNCABS' fib 15 launched async aborts so at the default `--mem` here).
fn memory_full(call: &str, len: u64, accounted: bool, e: u32) -> u32 {
    static SAID: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    // Only where Linux would grant it: its default overcommit refuses an `accounted` mapping
    // larger than the machine's memory too (a 64 TiB request took the one line, and the 4 GiB
    // one that Linux would have reserved got none); a PROT_NONE or MAP_NORESERVE reservation
    // of any size it grants (64 GiB of PROT_NONE got ENOMEM with no line).
    let host = crate::bootinfo::get().host_memory;
    let linux_grants = host == 0 || len <= host || !accounted;
    if e == ENOMEM && linux_grants && !SAID.swap(true, core::sync::atomic::Ordering::Relaxed) {
        // The pool's RAM, not its span (which may hold the hole below 4 GiB: a 4 GiB VM's
        // pool spanned 4,860 MiB).
        crate::kprintln!(
            "hrt: {call} of {len} bytes found no free range that large in the program's memory ({} MiB, --mem; {} MiB mapped): returning ENOMEM, where Linux would reserve it (reported once; a larger --mem may help)",
            usermem::pool_bytes() >> 20,
            usermem::mapped_bytes() >> 20
        );
    }
    e
}

/// Gives a new mapping its protection. Read-write (not executable) is what fresh memory
/// already allows (the pool made it present); anything else changes the page tables (a
/// replaced MAP_FIXED range may also carry an older protection, which `reset` undoes).
pub(super) fn apply_prot(start: u64, end: u64, prot: u64, fresh: bool) {
    let rw = protect::PROT_READ | protect::PROT_WRITE;
    let any = rw | protect::PROT_EXEC;
    if prot & any == 0 {
        usermem::access_changed(start, end, false);
    }
    if prot & any == rw {
        if !fresh {
            protect::reset(start, end);
        }
    } else {
        protect::set(start, end, prot);
    }
}

pub fn munmap(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    filemap::forget();
    let (addr, len) = (a[0], a[1]);
    if !addr.is_multiple_of(PAGE) || len == 0 || !fits_user_space(addr, len) {
        return Err(EINVAL);
    }
    usermem::unmap_allowed(addr, addr + page_up(len))?;
    usermem::unmap(addr, addr + page_up(len));
    Ok(0)
}

/// msync(addr, len, flags) as Linux checks it: unknown flags, MS_SYNC with MS_ASYNC, or an
/// unaligned address are EINVAL; a range with unmapped pages is ENOMEM. The file pages in it
/// are the host's, so the host's msync writes them back; other memory has nothing to sync.
/// MS_INVALIDATE of locked memory is EBUSY.
pub fn msync(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (addr, flags) = (a[0], a[2]);
    let (sync, ms_async) = (general::MS_SYNC as u64, general::MS_ASYNC as u64);
    let known = sync | ms_async | general::MS_INVALIDATE as u64;
    if flags & !known != 0 || !addr.is_multiple_of(PAGE) || flags & (sync | ms_async) == sync | ms_async {
        return Err(EINVAL);
    }
    let end = a[1].checked_next_multiple_of(PAGE).and_then(|l| addr.checked_add(l)).ok_or(ENOMEM)?;
    if addr == end {
        return Ok(0);
    }
    // As Linux: locked memory cannot be invalidated.
    if flags & general::MS_INVALIDATE as u64 != 0 && locked::any(addr, end) {
        return Err(crate::linux::errno::EBUSY);
    }
    if !usermem::program_mapped(addr, end) {
        return Err(ENOMEM);
    }
    shared_files::sync(addr, end, flags)?;
    Ok(0)
}

/// mprotect(addr, len, prot): the whole range must be mapped (ENOMEM otherwise, as Linux).
pub fn mprotect(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    filemap::forget();
    let (addr, len, prot) = (a[0], a[1], super::info::with_implied_exec(a[2]));
    let known = protect::PROT_READ | protect::PROT_WRITE | protect::PROT_EXEC;
    // PROT_SEM is valid on x86 and means nothing (all memory is fit for atomics).
    const PROT_SEM: u64 = 0x8;
    let grows = (general::PROT_GROWSDOWN | general::PROT_GROWSUP) as u64;
    // Linux's order (do_mprotect_pkey): both directions, the start's alignment, an empty
    // range (fine whatever the protection), a range past the end, unknown bits, then the
    // mapping at the start (ENOMEM for a hole), then a direction it cannot grow in (EINVAL).
    if prot & grows == grows || !addr.is_multiple_of(PAGE) {
        return Err(EINVAL);
    }
    if len == 0 {
        return Ok(0);
    }
    let end = addr.checked_add(page_up(len)).filter(|&e| e > addr).ok_or(ENOMEM)?;
    if prot & !(known | PROT_SEM | grows) != 0 {
        return Err(EINVAL);
    }
    if prot & grows != 0 && !usermem::program_mapped(addr, addr + PAGE) {
        return Err(ENOMEM);
    }
    // x86-64 has no mapping that grows up.
    if prot & general::PROT_GROWSUP as u64 != 0 {
        return Err(EINVAL);
    }
    // PROT_GROWSDOWN: the change reaches down to the start of a mapping that grows down, the
    // main stack (glibc's executable stack for a library that needs one) or a MAP_GROWSDOWN
    // mapping; any other mapping is EINVAL, unchanged.
    let addr = if prot & general::PROT_GROWSDOWN as u64 != 0 {
        let [_, bottom, top, _] = crate::linux::loader::main_stack();
        match crate::linux::grows_down::start_of(addr) {
            Some(start) => start,
            None if addr < bottom || end > top => return Err(EINVAL),
            None => bottom,
        }
    } else {
        addr
    };
    if prot & protect::PROT_WRITE != 0 {
        // Code the program will write: rewritten spin-wait loops there get their bytes back.
        crate::linux::spin_sites::restore_writable(addr, end);
        // An image's pages it may write: MADV_DONTNEED reads them from the file from now on.
        crate::linux::private_files::note_writable(addr, end);
    }
    if prot & protect::PROT_WRITE != 0 && super::data_limit::limited() {
        super::data_limit::data_may_grow(super::data_limit::becoming_data(addr, end))?;
    }
    if !usermem::program_mapped(addr, end) {
        // As Linux, which changes mapping after mapping: the mapped part before the first
        // hole takes the protection, then ENOMEM (nothing changed before).
        let mut mapped_to = addr;
        for (s, e) in usermem::program_parts(addr, end).0 {
            if s != mapped_to {
                break;
            }
            mapped_to = e;
        }
        if mapped_to > addr {
            protect_until_refused(addr, mapped_to, prot & known)?;
        }
        return Err(ENOMEM);
    }
    protect_until_refused(addr, end, prot & known)?;
    Ok(0)
}

/// mprotect's change of `[start, end)` (mapped): up to the first shared mapping that may not be
/// made writable, which is EACCES (as Linux, which has changed the mappings before it).
fn protect_until_refused(start: u64, end: u64, prot: u64) -> Result<(), Errno> {
    match shared_files::write_refused_from(start, end, prot) {
        Some(at) => {
            if at > start {
                set_protection(start, at, prot);
            }
            Err(EACCES)
        }
        None => {
            set_protection(start, end, prot);
            Ok(())
        }
    }
}

/// Gives `[start, end)` (mapped) protection `prot` (PROT_READ, PROT_WRITE, PROT_EXEC).
pub(super) fn set_protection(start: u64, end: u64, prot: u64) {
    protect::set(start, end, prot);
    usermem::access_changed(start, end, prot != 0);
    shared_files::hide_past_end(start, end, prot);
    past_eof::protect(start, end, prot);
}

/// pkey_alloc: the VM's CPUs run without protection keys (CR4.PKE is off). Linux on a CPU
/// without them (6.x, as on this project's hosts) refuses with EINVAL, which is what programs
/// (Node.js, glibc's `pkey_alloc`) take to mean "no protection keys".
pub fn pkey_alloc(_: &mut TrapFrame, _: [u64; 6]) -> SysResult {
    Err(EINVAL)
}

/// pkey_free: no key is ever allocated (see [`pkey_alloc`]).
pub fn pkey_free(_: &mut TrapFrame, _: [u64; 6]) -> SysResult {
    Err(EINVAL)
}

/// pkey_mprotect: with key -1 it is mprotect; any other key was never allocated (EINVAL, after
/// Linux's first checks: an unaligned start is EINVAL, an empty range succeeds).
pub fn pkey_mprotect(frame: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    if a[3] as i32 != -1 {
        return if a[0].is_multiple_of(usermem::PAGE) && a[1] == 0 { Ok(0) } else { Err(EINVAL) };
    }
    mprotect(frame, a)
}
