//! shmat and shmdt: attaching the host's System V shared memory segments (`shmget` and
//! `shmctl` are forwarded, so segment ids are the host's). The segment's host pages are put
//! under the program memory the attachment gets (`shared_files`), shared with every other
//! process attached to it.

use crate::arch::traps::TrapFrame;
use crate::linux::errno::{SysResult, EEXIST, EINVAL};
use crate::linux::filemap;
use crate::linux::protect::{PROT_EXEC, PROT_READ, PROT_WRITE};
use crate::linux::shared_files;
use crate::linux::usermem::{self, page_up, PAGE};

use super::memory::{apply_prot, LARGE_PAGE};

// shmat flags (Linux's values).
const SHM_RDONLY: u64 = 0o10000;
const SHM_RND: u64 = 0o20000;
const SHM_REMAP: u64 = 0o40000;
const SHM_EXEC: u64 = 0o100000;

pub fn shmat(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    filemap::forget();
    let (id, addr, flags) = (a[0], a[1], a[2]);
    let len = page_up(shared_files::segment_size(id)?);
    let replaces = flags & SHM_REMAP != 0;
    let start = if addr != 0 {
        // SHMLBA is the page size on x86-64.
        let addr = if flags & SHM_RND != 0 { addr & !(PAGE - 1) } else { addr };
        // A rounded-down address of 0 may not be remapped (Linux's check: LTP shmat03).
        if !addr.is_multiple_of(PAGE) || addr == 0 && replaces {
            return Err(EINVAL);
        }
        if replaces {
            usermem::map_fixed(addr, len, true)?
        } else {
            // As Linux: an address in use without SHM_REMAP is EINVAL.
            usermem::alloc_fixed(addr, len).map_err(|e| if e == EEXIST { EINVAL } else { e })?
        }
    } else if replaces {
        return Err(EINVAL);
    } else {
        usermem::alloc(len, if len >= LARGE_PAGE { LARGE_PAGE } else { PAGE })?
    };
    let read_only = flags & SHM_RDONLY != 0;
    if let Err(e) = shared_files::attach_segment(id, start, len, read_only) {
        usermem::unmap(start, start + len);
        return Err(e);
    }
    let mut prot = PROT_READ;
    if !read_only {
        prot |= PROT_WRITE;
    }
    if flags & SHM_EXEC != 0 {
        prot |= PROT_EXEC;
    }
    apply_prot(start, start + len, prot, !replaces);
    Ok(start)
}

/// Detaches the segment attached at `addr` (EINVAL when none is).
pub fn shmdt(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    filemap::forget();
    let pieces = shared_files::segment_pieces(a[0]).ok_or(EINVAL)?;
    for (start, end) in pieces {
        usermem::unmap(start, end);
    }
    Ok(0)
}
