//! mremap(old, old_len, new_len, flags, new_address): shrinking and growing in place, moving
//! (MREMAP_MAYMOVE), moving to `new_address` (MREMAP_FIXED, replacing what is there) and
//! moving while the old range stays mapped but empty (MREMAP_DONTUNMAP: private anonymous
//! memory reads zero there, a private file mapping its file again; shared memory shows the same
//! pages in both ranges), with Linux 6.x's errno for
//! each bad combination. A move copies the pages (memory is physical: no page tables to move);
//! the moved or grown range takes the protection of the mapping's first page (read-write
//! before 2026-12-03, whatever it was; a PROT_NONE mapping became read-write until stop 100).
//! A range to grow or move must be one mapping: memory of more than one protection is EFAULT,
//! as Linux answers for more than one VMA.

use linux_raw_sys::errno::EFAULT;
use linux_raw_sys::general;

use super::memory::{apply_prot, fits_user_space, outside_program_memory, LARGE_PAGE, TASK_SIZE};
use crate::arch::traps::TrapFrame;
use crate::linux::errno::{SysResult, EINVAL, ENOMEM};
use crate::linux::usermem::{self, PAGE};
use crate::linux::{filemap, fork_advice, past_eof, private_files, protect, shared_files};

const MREMAP_MAYMOVE: u64 = general::MREMAP_MAYMOVE as u64;
const MREMAP_FIXED: u64 = general::MREMAP_FIXED as u64;
const MREMAP_DONTUNMAP: u64 = general::MREMAP_DONTUNMAP as u64;

pub fn mremap(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    filemap::forget();
    let (old, flags, to) = (a[0], a[3], a[4]);
    // Linux's checks, in its order (check_mremap_params).
    if flags & !(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP) != 0 || !old.is_multiple_of(PAGE) {
        return Err(EINVAL);
    }
    // Lengths that round past the end of the address space become 0 on Linux: EINVAL.
    let (Some(old_len), Some(new_len)) = (a[1].checked_next_multiple_of(PAGE), a[2].checked_next_multiple_of(PAGE))
    else {
        return Err(EINVAL);
    };
    if new_len == 0 || new_len > TASK_SIZE {
        return Err(EINVAL);
    }
    // DONTUNMAP takes `to` as a hint, checked as FIXED's address is.
    let to_address = flags & (MREMAP_FIXED | MREMAP_DONTUNMAP) != 0;
    if to_address {
        let overlaps = to < old.saturating_add(old_len) && old < to.saturating_add(new_len);
        let resizes = flags & MREMAP_DONTUNMAP != 0 && old_len != new_len;
        if !fits_user_space(to, new_len)
            || !to.is_multiple_of(PAGE)
            || flags & MREMAP_MAYMOVE == 0
            || resizes
            || overlaps
        {
            return Err(EINVAL);
        }
    }
    if !fits_user_space(old, old_len) || !fits_user_space(old, new_len) {
        return Err(EFAULT);
    }
    if !usermem::is_mapped(old, old + old_len.max(PAGE)) {
        return Err(EFAULT);
    }
    if old_len == 0 {
        return alias(old, new_len, flags, to);
    }
    if to_address {
        return move_to(old, old_len, new_len, flags, to);
    }
    if new_len <= old_len {
        usermem::unmap(old + new_len, old + old_len);
        return Ok(old);
    }
    super::info::address_space_allows(new_len - old_len)?;
    crate::linux::locked::may_grow(old, old_len, new_len - old_len)?;
    if super::data_limit::limited() && super::data_limit::is_data_at(old) {
        super::data_limit::data_may_grow(new_len - old_len)?;
    }
    let memory = memory_at(old, old + old_len)?;
    one_protection(old, old + old_len)?;
    if let Memory::Host { grows: false, .. } = memory {
        return Err(shared_growth_refused());
    }
    let anonymous = memory == Memory::GuestAnonymous;
    if usermem::grow_in_place(old + old_len, old + new_len) {
        if let Memory::Host { prot, .. } = memory {
            return remap_host(old, old_len, old, new_len, prot, false).map(|()| old);
        }
        if anonymous {
            shared_files::anonymous_moved(old, old_len, old, new_len);
        }
        past_eof::remapped(old, old_len, old, new_len);
        fork_advice::moved(old, old_len, old, new_len);
        crate::linux::locked::moved(old, old_len, old, new_len, false);
        file_pages_grown(old, old_len, new_len)?;
        carry_protection(prot_of_first_page(old), old + old_len, old + new_len);
        return Ok(old);
    }
    if flags & MREMAP_MAYMOVE == 0 {
        return Err(ENOMEM);
    }
    let align = if new_len >= LARGE_PAGE { LARGE_PAGE } else { PAGE };
    let new = usermem::alloc(new_len, align)?;
    if let Memory::Host { prot, .. } = memory {
        remap_host(old, old_len, new, new_len, prot, false)?;
        usermem::unmap(old, old + old_len);
        return Ok(new);
    }
    let prot = prot_of_first_page(old);
    moved(old, old_len, new, new_len, anonymous, false);
    usermem::unmap(old, old + old_len);
    file_pages_grown(new, old_len, new_len)?;
    carry_protection(prot, new, new + new_len);
    Ok(new)
}

/// A private file mapping grown (now at `base`, from `old_len` to `new_len`) maps the file's
/// next pages there, as on Linux (its grown part read zero before). Pages past the end of the
/// file read zero here unless `past_eof` hides them (Linux: SIGBUS).
fn file_pages_grown(base: u64, old_len: u64, new_len: u64) -> Result<(), u32> {
    match private_files::grown(base, old_len, new_len) {
        Some(part) => super::madvise::read_again(part),
        None => Ok(()),
    }
}

/// What the memory to move or grow is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Memory {
    /// The program's private memory.
    Private,
    /// Anonymous shared memory not yet shared with another process: it grows and moves as
    /// private memory does (Linux's grown part would raise SIGBUS: its shared object keeps its
    /// size).
    GuestAnonymous,
    /// Host shared pages of one mapping (`remap_host`): whether it `grows` (a file's), and the
    /// protection its moved or grown pages take (a file mapping's; else its first page's).
    Host { grows: bool, prot: Option<u64> },
}

/// What `[start, end)` is (EFAULT: more than one mapping, as Linux answers).
fn memory_at(start: u64, end: u64) -> Result<Memory, u32> {
    match shared_files::remap_kind(start, end) {
        shared_files::Remap::Private => Ok(Memory::Private),
        shared_files::Remap::GuestAnonymous => Ok(Memory::GuestAnonymous),
        shared_files::Remap::Host => match shared_files::host_mapping(start) {
            Some((grows, prot)) => Ok(Memory::Host { grows, prot: prot.or_else(|| prot_of_first_page(start)) }),
            None => Err(EFAULT),
        },
        shared_files::Remap::Mixed => Err(EFAULT),
    }
}

/// Host shared pages `[old, old + old_len)` appear at `[new, new + new_len)` (memory just taken
/// for them; `new == old`: the pages after the old range), the same pages, not copies: the
/// host's mapping moves (`shared_files::remap_host`), and what the kernel remembers of them
/// follows. The moved or grown pages take the mapping's protection `prot` (a file's pages past
/// its end hidden). The caller gives the old range up, or keeps it (`keep_old`: DONTUNMAP, a
/// second mapping), its advice too. On failure the memory taken is given back.
fn remap_host(old: u64, old_len: u64, new: u64, new_len: u64, prot: Option<u64>, keep_old: bool) -> Result<(), u32> {
    let taken = if new == old { (old + old_len, old + new_len) } else { (new, new + new_len) };
    if let Err(e) = shared_files::remap_host(old, old_len, new, new_len) {
        usermem::unmap(taken.0, taken.1);
        return Err(e);
    }
    match keep_old {
        true => fork_advice::copied(old, old_len, new, new_len),
        false => fork_advice::moved(old, old_len, new, new_len),
    }
    crate::linux::locked::moved(old, old_len, new, new_len, keep_old);
    super::memory::set_protection(taken.0, taken.1, prot.unwrap_or(protect::DEFAULT));
    Ok(())
}

/// mremap with an old length of 0: a second mapping of the shared memory at `old` (and, for a
/// file, the pages after it), `new_len` long, at a place of the kernel's choosing or at `to`
/// (MREMAP_FIXED), the old one staying, as Linux makes one of a shared mapping. Private memory
/// is EINVAL (Linux refuses to duplicate a private mapping), no MREMAP_MAYMOVE ENOMEM (Linux
/// cannot grow the empty range in place). Anonymous shared memory still in guest RAM becomes
/// host shared memory first, as at a fork: two guest ranges share pages only that way.
fn alias(old: u64, new_len: u64, flags: u64, to: u64) -> SysResult {
    let Some((start, end, on_host)) = shared_files::containing(old) else {
        return Err(EINVAL);
    };
    if flags & MREMAP_MAYMOVE == 0 {
        return Err(ENOMEM);
    }
    if !on_host {
        shared_files::share(start, end)?;
    }
    let Some((grows, prot)) = shared_files::host_mapping(old) else {
        return Err(EINVAL);
    };
    if !grows && new_len > end - old {
        return Err(shared_growth_refused());
    }
    let new = new_range(flags & MREMAP_FIXED != 0, to, new_len, 0)?;
    let prot = prot.or_else(|| prot_of_first_page(old));
    remap_host(old, PAGE, new, new_len, prot, true)?;
    Ok(new)
}

/// The range a mapping moves to or a second mapping takes: `new_len` bytes at `to` (`fixed`,
/// replacing what is there) or where the kernel chooses, read-write and fresh. RLIMIT_AS
/// counts the new range, less what it replaces and the old range it frees (`freed`).
fn new_range(fixed: bool, to: u64, new_len: u64, freed: u64) -> Result<u64, u32> {
    let replaced = if fixed { usermem::mapped_within(to, to + new_len) } else { 0 };
    super::info::address_space_allows(new_len.saturating_sub(replaced + freed))?;
    if !fixed {
        let align = if new_len >= LARGE_PAGE { LARGE_PAGE } else { PAGE };
        return usermem::alloc(new_len, align);
    }
    if !usermem::is_user_range(to, to + new_len) {
        return Err(outside_program_memory("mremap MREMAP_FIXED", to, new_len));
    }
    usermem::map_fixed(to, new_len, true)?;
    // What it replaced may have had another protection.
    apply_prot(to, to + new_len, protect::PROT_READ | protect::PROT_WRITE, false);
    Ok(to)
}

/// MREMAP_FIXED (to `to`, replacing what is there) or MREMAP_DONTUNMAP (to a place of the
/// kernel's choosing unless FIXED; the old range stays mapped, empty). Linux unmaps the target
/// and cuts the old range to the new length first.
fn move_to(old: u64, mut old_len: u64, new_len: u64, flags: u64, to: u64) -> SysResult {
    let (fixed, keep_old) = (flags & MREMAP_FIXED != 0, flags & MREMAP_DONTUNMAP != 0);
    let mut memory = memory_at(old, old + old_len)?;
    // A move of the same size or smaller may take mappings of several protections along
    // (Linux 6.17 on); growing, or keeping the old range (DONTUNMAP), takes one mapping.
    if new_len > old_len || keep_old {
        one_protection(old, old + old_len)?;
    }
    if keep_old && memory == Memory::GuestAnonymous {
        // Both ranges go on showing the same shared memory, as on Linux: two guest ranges
        // share pages only as host shared memory, which it becomes now (as at a fork).
        shared_files::share(old, old + old_len)?;
        memory = memory_at(old, old + old_len)?;
    }
    if matches!(memory, Memory::Host { grows: false, .. }) && new_len > old_len {
        return Err(shared_growth_refused());
    }
    let anonymous = memory == Memory::GuestAnonymous;
    if keep_old && !matches!(memory, Memory::Host { .. }) {
        super::madvise::check_droppable(old, old + old_len)?;
    }
    let new = new_range(fixed, to, new_len, if keep_old { 0 } else { old_len })?;
    if new_len < old_len {
        usermem::unmap(old + new_len, old + old_len);
        old_len = new_len;
    }
    if let Memory::Host { prot, .. } = memory {
        // The old range keeps showing the same pages under DONTUNMAP, as on Linux.
        remap_host(old, old_len, new, new_len, prot, keep_old)?;
        if !keep_old {
            usermem::unmap(old, old + old_len);
        }
        return Ok(new);
    }
    let prots = crate::linux::maps::program_prots(old, old + old_len);
    moved(old, old_len, new, new_len, anonymous, keep_old);
    file_pages_grown(new, old_len, new_len)?;
    if keep_old {
        // Checked above: the files are in reach.
        super::madvise::drop_private_copy(old, old + old_len)?;
    } else {
        usermem::unmap(old, old + old_len);
    }
    // Each moved page keeps its protection; a grown tail takes the one (single) mapping's.
    for &(s, e, prot) in &prots {
        carry_protection(Some(prot), new + (s - old), new + (e - old));
    }
    if let Some(&(_, _, prot)) = prots.last() {
        carry_protection(Some(prot), new + old_len, new + new_len);
    }
    Ok(new)
}

/// The protection the program gave the mapped page at `addr` (a page hidden past the end of
/// its file keeps its own; any other page not present is PROT_NONE).
fn prot_of_first_page(addr: u64) -> Option<u64> {
    Some(crate::linux::maps::program_prots(addr, addr + PAGE).first().map_or(0, |r| r.2))
}

/// EFAULT where `[start, end)` has more than one protection: Linux grows or moves one VMA,
/// and pages of different protections are different VMAs.
fn one_protection(start: u64, end: u64) -> Result<(), u32> {
    match crate::linux::maps::program_prots(start, end).as_slice() {
        [] | [_] => Ok(()),
        _ => Err(EFAULT),
    }
}

/// `[start, end)`, made by moving or growing a mapping, takes the protection `prot` its first
/// page had (`protect::prot_at`), as Linux's mapping keeps it (code stays executable,
/// read-only memory read-only). Fresh memory is read-write already.
fn carry_protection(prot: Option<u64>, start: u64, end: u64) {
    if let Some(prot) = prot.filter(|&p| p != protect::DEFAULT) {
        super::memory::set_protection(start, end, prot);
    }
}

/// The pages of `[old, old + old_len)` are copied to `new` (its first `old_len` bytes; the rest
/// reads zero), and what the kernel remembers of them moves along. The caller unmaps the old
/// range, or keeps it (`keep_old`, DONTUNMAP: its file records and fork advice stay for it
/// too, as Linux's old mapping keeps its flags; a wipe-on-fork page written there after the
/// move was kept in a child until stop 98).
fn moved(old: u64, old_len: u64, new: u64, new_len: u64, anonymous: bool, keep_old: bool) {
    // Pages past the end of a file are not present (nor needed: they read zero).
    past_eof::for_each_present(old, old + old_len, |s, e| usermem::copy(new + (s - old), s, e - s));
    if anonymous {
        shared_files::anonymous_moved(old, old_len, new, new_len);
    }
    past_eof::remapped(old, old_len, new, new_len);
    if keep_old {
        private_files::copied(old, old_len, new);
        fork_advice::copied(old, old_len, new, new_len);
    } else {
        private_files::moved(old, old_len, new);
        fork_advice::moved(old, old_len, new, new_len);
    }
    // Locks move, DONTUNMAP's old range keeps none (as Linux's).
    crate::linux::locked::moved(old, old_len, new, new_len, false);
}

/// Growing a System V segment's or shared anonymous memory's mapping after a fork (host shared
/// memory of a fixed size): Linux grows the mapping, but its grown pages raise SIGBUS; refused
/// with ENOMEM (what Linux answers when a mapping cannot grow), said once.
fn shared_growth_refused() -> u32 {
    static SAID: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, core::sync::atomic::Ordering::Relaxed) {
        crate::kprintln!(
            "hrt: mremap growing a System V segment or shared anonymous memory shared with a forked process is not supported: returning ENOMEM (reported once)"
        );
    }
    ENOMEM
}
