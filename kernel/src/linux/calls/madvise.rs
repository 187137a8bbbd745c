//! madvise(addr, len, advice) with Linux 6.x's answers.
//!
//! Every advice Linux knows is accepted, anything else is EINVAL. As on Linux the range is
//! taken mapping by mapping in address order: the first mapping that refuses the advice ends
//! the call with its errno (the ones before it took it), and unmapped pages in the range make
//! the answer ENOMEM once the mapped ones took it. What each does to the program's memory:
//! - hints (NORMAL, RANDOM, SEQUENTIAL, WILLNEED, COLD, PAGEOUT, MERGEABLE, UNMERGEABLE,
//!   HUGEPAGE, NOHUGEPAGE, DONTDUMP, DODUMP) change nothing the program can see: 0;
//! - DONTNEED (and DONTNEED_LOCKED) drops the program's private copy: anonymous memory reads
//!   zero, a private file mapping reads its file again (`private_files`), shared memory
//!   already holds what it would read again; FREE is DONTNEED for private anonymous memory
//!   only (EINVAL for the rest);
//! - DONTNEED, FREE and REMOVE on locked memory (`linux::locked`): EINVAL;
//! - REMOVE punches a hole in shared memory (the host's madvise, `nr::REMOVE_SHARED`):
//!   EINVAL for private anonymous memory, EACCES for a private file mapping;
//! - WIPEONFORK (private anonymous memory only), KEEPONFORK, DONTFORK and DOFORK are applied by a
//!   forked child's kernel (`fork_advice`);
//! - POPULATE_READ and POPULATE_WRITE: memory is present already; EINVAL where the protection
//!   forbids the access (POPULATE_READ of memory mapped without PROT_READ too, as Linux's
//!   permission check), EFAULT for pages past the end of a file (SIGBUS on a touch);
//! - what HRT cannot do fails loudly, once said: COLLAPSE and GUARD_INSTALL (EINVAL, what
//!   kernels without them answer), HWPOISON and SOFT_OFFLINE (EINVAL, as a kernel built
//!   without CONFIG_MEMORY_FAILURE answers: HRT's has no memory-failure handling; it was
//!   EPERM, which made LTP's madvise07 fail where the test host's own kernel says EINVAL).

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use linux_raw_sys::general;

use crate::arch::traps::TrapFrame;
use crate::linux::errno::{Errno, SysResult, EACCES, EFAULT, EINVAL, ENOMEM};
use crate::linux::fork_advice::{self, Change};
use crate::linux::private_files::{self, File, Part};
use crate::linux::usermem::{self, PAGE};
use crate::linux::{filemap, loader, past_eof, protect, shared_files, usermap};

/// What one part of the range is.
#[derive(Clone, Copy)]
enum Kind {
    PrivateAnonymous,
    /// A private file mapping: where its file is, the file offset, and whether the program may
    /// have written it (`private_files::Part::written`).
    PrivateFile {
        file: File,
        off: u64,
        written: bool,
    },
    /// Anonymous shared memory still in guest RAM (not shared with another process yet).
    SharedGuest,
    /// The host's shared pages: a file, a segment, anonymous memory shared at a fork.
    SharedHost,
    /// The vDSO's data page, which Linux maps as special pages ([vvar]): DONTNEED is EINVAL.
    KernelData,
    /// Code the kernel put in the program's memory: the vDSO's ([vdso], whose pages Linux
    /// fills again from the kernel's image after DONTNEED) and the near table of rewritten
    /// sites. DONTNEED leaves it as it is (it zeroed it until stop 98: the next vDSO call
    /// crashed).
    KernelCode,
}

pub fn madvise(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    filemap::forget();
    let (addr, advice) = (a[0], a[2]);
    if !known(advice) {
        return Err(EINVAL);
    }
    // As Linux: a length that rounds past the end of the address space is EINVAL.
    let Some(len) = a[1].checked_next_multiple_of(PAGE).filter(|l| addr.checked_add(*l).is_some()) else {
        return Err(EINVAL);
    };
    if !addr.is_multiple_of(PAGE) {
        return Err(EINVAL);
    }
    if len == 0 {
        return Ok(0);
    }
    let advice = advice as u32;
    match advice {
        general::MADV_HWPOISON | general::MADV_SOFT_OFFLINE => {
            let why =
                "madvise MADV_HWPOISON or MADV_SOFT_OFFLINE (poisoning memory) is not supported: returning EINVAL";
            return Err(say_once(&POISON, EINVAL, why));
        }
        general::MADV_COLLAPSE => {
            let why = "madvise MADV_COLLAPSE is not supported (the program's memory is the host's huge pages already): returning EINVAL";
            return Err(say_once(&COLLAPSE, EINVAL, why));
        }
        general::MADV_GUARD_INSTALL => {
            let why = "madvise MADV_GUARD_INSTALL is not supported: returning EINVAL (as kernels before 6.13)";
            return Err(say_once(&GUARD, EINVAL, why));
        }
        _ => {}
    }
    let (parts, unmapped) = parts(addr, addr + len);
    // COLD and PAGEOUT are refused for locked memory too (Linux's can_madv_lru_vma).
    let drops = matches!(
        advice,
        general::MADV_DONTNEED | general::MADV_FREE | general::MADV_REMOVE | general::MADV_COLD | general::MADV_PAGEOUT
    );
    for (s, e, kind) in parts {
        // As Linux: locked memory keeps its pages (DONTNEED_LOCKED is the advice for it).
        if drops && crate::linux::locked::any(s, e) {
            return Err(EINVAL);
        }
        apply(advice, s, e, kind)?;
    }
    if unmapped {
        return Err(ENOMEM);
    }
    Ok(0)
}

/// Whether Linux 6.x knows `advice`.
fn known(advice: u64) -> bool {
    use general::*;
    let Ok(advice) = u32::try_from(advice) else { return false };
    matches!(
        advice,
        MADV_NORMAL
            | MADV_RANDOM
            | MADV_SEQUENTIAL
            | MADV_WILLNEED
            | MADV_DONTNEED
            | MADV_FREE
            | MADV_REMOVE
            | MADV_DONTFORK
            | MADV_DOFORK
            | MADV_MERGEABLE
            | MADV_UNMERGEABLE
            | MADV_HUGEPAGE
            | MADV_NOHUGEPAGE
            | MADV_DONTDUMP
            | MADV_DODUMP
            | MADV_WIPEONFORK
            | MADV_KEEPONFORK
            | MADV_COLD
            | MADV_PAGEOUT
            | MADV_POPULATE_READ
            | MADV_POPULATE_WRITE
            | MADV_DONTNEED_LOCKED
            | MADV_COLLAPSE
            | MADV_HWPOISON
            | MADV_SOFT_OFFLINE
            | MADV_GUARD_INSTALL
            | MADV_GUARD_REMOVE
    )
}

/// Applies `advice` to `[s, e)`, one kind of memory.
fn apply(advice: u32, s: u64, e: u64, kind: Kind) -> Result<(), Errno> {
    use general::*;
    let anonymous = matches!(kind, Kind::PrivateAnonymous);
    match advice {
        MADV_DONTNEED | MADV_DONTNEED_LOCKED => match kind {
            Kind::PrivateAnonymous => usermem::zero(s, e - s),
            // An image's pages the program never wrote hold its file's bytes, but for the
            // kernel's rewrites of its code, which stay.
            Kind::PrivateFile { written: false, .. } => {}
            Kind::PrivateFile { file, off, written } => read_again(Part { start: s, end: e, file, off, written })?,
            Kind::SharedGuest | Kind::SharedHost | Kind::KernelCode => {}
            Kind::KernelData => return Err(EINVAL),
        },
        MADV_FREE if anonymous => usermem::zero(s, e - s),
        MADV_FREE => return Err(EINVAL),
        MADV_REMOVE => match kind {
            Kind::PrivateAnonymous | Kind::KernelData | Kind::KernelCode => return Err(EINVAL),
            Kind::PrivateFile { .. } => return Err(EACCES),
            // Not shared with anyone yet: the hole is this memory reading zero.
            Kind::SharedGuest => usermem::zero(s, e - s),
            Kind::SharedHost => {
                let ret = crate::arch::hypercall::call(hrt_abi::nr::REMOVE_SHARED, &[s, e - s]);
                if ret < 0 {
                    return Err((-ret) as u32);
                }
            }
        },
        MADV_WIPEONFORK if anonymous => fork_advice::change(s, e, Change { wipe: Some(true), dont_fork: None }),
        MADV_WIPEONFORK => return Err(EINVAL),
        MADV_KEEPONFORK => fork_advice::change(s, e, Change { wipe: Some(false), dont_fork: None }),
        MADV_DONTFORK => fork_advice::change(s, e, Change { wipe: None, dont_fork: Some(true) }),
        MADV_DOFORK => fork_advice::change(s, e, Change { wipe: None, dont_fork: Some(false) }),
        MADV_POPULATE_READ | MADV_POPULATE_WRITE if !protect::allows(s, e, advice == MADV_POPULATE_WRITE) => {
            return Err(if past_end_of_file(s, e) { EFAULT } else { EINVAL });
        }
        // The page tables cannot say "write-only" or "execute-only" (present means readable):
        // the program's PROT_READ is kept beside them.
        MADV_POPULATE_READ if usermap::readability_runs(s, e).iter().any(|&(_, _, unreadable)| unreadable) => {
            return Err(EINVAL);
        }
        // Hints, and GUARD_REMOVE (no guard is ever installed).
        _ => {}
    }
    Ok(())
}

/// mremap's MREMAP_DONTUNMAP: the old range (mapped, private memory) keeps its mappings but
/// loses its pages, as MADV_DONTNEED drops them. Fails loudly, changing nothing, where a
/// private file mapping's file is out of reach (`check_droppable` first, before the move).
pub(super) fn drop_private_copy(start: u64, end: u64) -> Result<(), Errno> {
    for (s, e, kind) in parts(start, end).0 {
        apply(general::MADV_DONTNEED, s, e, kind)?;
    }
    Ok(())
}

/// Whether `drop_private_copy` of `[start, end)` would fail: Err (said once) if a private file
/// mapping there no longer has its file.
pub(super) fn check_droppable(start: u64, end: u64) -> Result<(), Errno> {
    let gone = |k: &Kind| match *k {
        Kind::PrivateFile { file: File::Gone, .. } => true,
        Kind::PrivateFile { file: File::Image(kind), written: true, .. } => loader::image_file(kind).is_none(),
        _ => false,
    };
    match parts(start, end).0.iter().any(|(_, _, k)| gone(k)) {
        true => Err(out_of_reach()),
        false => Ok(()),
    }
}

/// The mapped parts of `[start, end)` with their kind, in address order, and whether some of
/// it is not mapped.
fn parts(start: u64, end: u64) -> (Vec<(u64, u64, Kind)>, bool) {
    let (mapped, unmapped) = usermem::program_parts(start, end);
    let mut out = Vec::new();
    for (s, e) in mapped {
        // Marks: (start, end, kind) of shared and private file mappings, in order; the rest
        // is private anonymous memory.
        let mut marks: Vec<(u64, u64, Kind)> = shared_files::parts(s, e)
            .into_iter()
            .map(|(a, b, host)| (a, b, if host { Kind::SharedHost } else { Kind::SharedGuest }))
            .collect();
        marks.extend(
            private_files::parts(s, e)
                .into_iter()
                .map(|p| (p.start, p.end, Kind::PrivateFile { file: p.file, off: p.off, written: p.written })),
        );
        marks.extend(kernel_parts(s, e));
        marks.sort_by_key(|m| m.0);
        let mut cur = s;
        for (a, b, kind) in marks {
            if cur < a {
                out.push((cur, a, Kind::PrivateAnonymous));
            }
            out.push((a.max(cur), b, kind));
            cur = b.max(cur);
        }
        if cur < e {
            out.push((cur, e, Kind::PrivateAnonymous));
        }
    }
    (out, unmapped)
}

/// The parts of `[start, end)` the kernel put there itself: the vDSO's data page and code, the
/// near table.
fn kernel_parts(start: u64, end: u64) -> Vec<(u64, u64, Kind)> {
    let (vvar, vdso_end) = crate::linux::vdso::range();
    let near = crate::linux::near_table::range();
    let ranges = [
        (vvar, vvar + PAGE, Kind::KernelData),
        (vvar + PAGE, vdso_end, Kind::KernelCode),
        (near.0, near.1, Kind::KernelCode),
    ];
    ranges
        .into_iter()
        .filter(|&(s, e, _)| s < e && s < end && start < e)
        .map(|(s, e, k)| (s.max(start), e.min(end), k))
        .collect()
}

/// Whether `[start, end)` has pages of a private file mapping wholly past the end of its
/// file (hidden: a touch raises SIGBUS).
fn past_end_of_file(start: u64, end: u64) -> bool {
    let mut present = 0;
    past_eof::for_each_present(start, end, |s, e| present += e - s);
    // A private file mapping's pages past the end, or a shared one's.
    present < end - start || !shared_files::hidden_prots(start, end).is_empty()
}

/// MADV_DONTNEED on private file pages: they read the file's bytes again (its current ones, as
/// Linux's page cache would show them), the tail of the page holding the end of the file zero;
/// pages wholly past the end stay hidden. Read into fresh memory and copied over, so the pages
/// never read anything else meanwhile and read-only ones need no change of protection.
pub(super) fn read_again(p: Part) -> Result<(), Errno> {
    // The descriptor's pread64, or the monitor's on its handle of the file; a loaded image's
    // from the bytes the loader kept.
    let (nr, fd) = match p.file {
        File::Fd(fd) => (general::__NR_pread64 as u64, fd),
        File::Kept(handle) => (hrt_abi::process::KEPT_PREAD, handle),
        File::Gone => return Err(out_of_reach()),
        File::Image(kind) => return image_again(&p, loader::image_file(kind).ok_or_else(image_out_of_reach)?),
    };
    const STEP: u64 = 2 << 20;
    let buf_len = (p.end - p.start).min(STEP);
    let buf = usermem::alloc(buf_len, PAGE)?;
    let mut result = Ok(());
    let mut at = p.start;
    while at < p.end {
        let len = (p.end - at).min(STEP);
        let mut done = 0;
        while done < len {
            let args = [fd, buf + done, len - done, p.off + (at - p.start) + done, 0, 0];
            let got = crate::linux::syscall::forward(nr, args);
            if got <= 0 {
                if got < 0 {
                    result = Err((-got) as u32);
                }
                break;
            }
            done += got as u64;
        }
        if result.is_err() {
            break;
        }
        if done < buf_len {
            // Past the end of the file: zero, whatever the last step left there.
            usermem::zero(buf + done, buf_len - done);
        }
        past_eof::for_each_present(at, at + len, |s, e| usermem::copy(s, buf + (s - at), e - s));
        at += len;
    }
    usermem::unmap(buf, buf + buf_len);
    result
}

/// `read_again` of a loaded image's pages: its file's bytes from `file`, zero past its end.
fn image_again(p: &Part, file: &[u8]) -> Result<(), Errno> {
    past_eof::for_each_present(p.start, p.end, |s, e| {
        let from = p.off + (s - p.start);
        let have = (file.len() as u64).saturating_sub(from).min(e - s);
        if have > 0 {
            usermem::copy(s, file.as_ptr() as u64 + from, have);
        }
        if have < e - s {
            usermem::zero(s + have, e - s - have);
        }
    });
    Ok(())
}

static POISON: AtomicBool = AtomicBool::new(false);
static COLLAPSE: AtomicBool = AtomicBool::new(false);
static GUARD: AtomicBool = AtomicBool::new(false);
static OUT_OF_REACH: AtomicBool = AtomicBool::new(false);

/// A private file mapping's pages cannot read the file again: its descriptor was closed or
/// replaced and the monitor could not keep the file (see `private_files`). EINVAL, said once.
fn out_of_reach() -> Errno {
    let why = "madvise MADV_DONTNEED (or mremap MREMAP_DONTUNMAP) of a private file mapping whose descriptor was closed or replaced, the monitor keeping too many files: the file is out of reach, returning EINVAL";
    say_once(&OUT_OF_REACH, EINVAL, why)
}

/// An execve's image's written pages cannot read its file again: the loader does not keep an
/// exec'd file's bytes (see `loader::IMAGE_FILES`). EINVAL, said once.
fn image_out_of_reach() -> Errno {
    static SAID: AtomicBool = AtomicBool::new(false);
    let why = "madvise MADV_DONTNEED (or mremap MREMAP_DONTUNMAP) of the written data of a program loaded by execve: its file's bytes are not kept, returning EINVAL";
    say_once(&SAID, EINVAL, why)
}

/// Says once on `hrt`'s stderr why madvise fails with `errno` where Linux would have done it.
fn say_once(said: &AtomicBool, errno: Errno, why: &str) -> Errno {
    if !said.swap(true, Ordering::Relaxed) {
        crate::kprintln!("hrt: {why} (reported once)");
    }
    errno
}
