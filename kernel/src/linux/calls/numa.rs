//! Memory policies: get_mempolicy and set_mempolicy (`ps` and every program linked with libnuma
//! call both at start-up). The kernel's zones are the VM's NUMA nodes (`--numa`, one by default).
//! On one node every policy places memory where the default one does, so a valid policy is
//! accepted and reported back, as Linux does on a one-node machine. With several nodes the
//! program's memory comes from one pool whatever the policy (it is placed when the VM starts and
//! never moves), so a policy other than the default or local one is refused loudly (ENOSYS and a
//! line on stderr) rather than silently ignored. Linux keeps a policy per thread; here it is one
//! per process (the last one set). `mbind` (a policy per range) is checked and accepted on one
//! node, refused as set_mempolicy with several; get_mempolicy of an address answers the
//! process's policy, not the range's.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::arch::traps::TrapFrame;
use crate::linux::errno::{SysResult, EFAULT, EINVAL, ENODEV, ENOSYS, EPERM, ESRCH};
use crate::linux::uaccess;

const MPOL_DEFAULT: i32 = 0;
const MPOL_PREFERRED: u64 = 1;
const MPOL_INTERLEAVE: u64 = 3;
const MPOL_LOCAL: u64 = 4;
/// One past the last mode Linux knows (MPOL_WEIGHTED_INTERLEAVE is 6).
const MPOL_MAX: u64 = 7;
const MPOL_F_NUMA_BALANCING: u64 = 1 << 13;
const MPOL_F_RELATIVE_NODES: u64 = 1 << 14;
const MPOL_F_STATIC_NODES: u64 = 1 << 15;
const MPOL_MODE_FLAGS: u64 = MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES | MPOL_F_NUMA_BALANCING;
const MPOL_BIND: u64 = 2;
const MPOL_PREFERRED_MANY: u64 = 5;
const MPOL_F_NODE: u64 = 1;
const MPOL_F_ADDR: u64 = 2;
const MPOL_F_MEMS_ALLOWED: u64 = 4;
/// Linux refuses to write a node mask larger than a page.
const MAX_MASK_BYTES: u64 = 4096;

/// get_mempolicy(mode, nodemask, maxnode, addr, flags), with Linux's checks and answers for a
/// thread under the default policy.
pub fn get_mempolicy(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (mode, nmask, maxnode, addr, flags) = (a[0], a[1], a[2], a[3], a[4]);
    let nodes = crate::mem::num_zones().max(1) as u64;
    if nmask != 0 && maxnode < nodes {
        return Err(EINVAL);
    }
    if flags & !(MPOL_F_NODE | MPOL_F_ADDR | MPOL_F_MEMS_ALLOWED) != 0 {
        return Err(EINVAL);
    }
    // The answer: a mode (or a node number) and a node mask.
    let (value, mask) = if flags & MPOL_F_MEMS_ALLOWED != 0 {
        if flags & (MPOL_F_NODE | MPOL_F_ADDR) != 0 {
            return Err(EINVAL);
        }
        (0, all_nodes(nodes))
    } else {
        if flags & MPOL_F_ADDR != 0 {
            if !crate::linux::usermap::is_mapped(addr & !0xfff, 1) {
                return Err(EFAULT);
            }
        } else if addr != 0 {
            return Err(EINVAL);
        }
        let (mode_flags, nodes_set) = policy();
        let value = match flags & (MPOL_F_NODE | MPOL_F_ADDR) {
            // The node the page at `addr` lives on.
            f if f == MPOL_F_NODE | MPOL_F_ADDR => crate::mem::zone_of(addr).unwrap_or(0) as i32,
            // The next interleave node: only under an interleave policy (one node: node 0).
            MPOL_F_NODE if mode_flags & !MPOL_MODE_FLAGS == MPOL_INTERLEAVE => 0,
            MPOL_F_NODE => return Err(EINVAL),
            _ => mode_flags as i32,
        };
        (value, [nodes_set])
    };
    if mode != 0 {
        uaccess::write(mode, value)?;
    }
    if nmask != 0 {
        write_mask(nmask, maxnode, nodes, &mask)?;
    }
    Ok(0)
}

/// A mask with nodes 0..n set (the kernel's zones fit one word: MAX_ZONES is small).
fn all_nodes(n: u64) -> [u64; 1] {
    [if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }]
}

/// Writes a node mask of `maxnode - 1` bits as Linux does: whole longs, those past the VM's
/// nodes cleared, EINVAL above a page.
fn write_mask(addr: u64, maxnode: u64, nodes: u64, mask: &[u64; 1]) -> SysResult {
    let bytes = (maxnode - 1).div_ceil(64) * 8;
    if bytes > MAX_MASK_BYTES {
        return Err(EINVAL);
    }
    let out = uaccess::slice_mut(addr, bytes)?;
    out.fill(0);
    let ours = (nodes.div_ceil(64) * 8).min(bytes) as usize;
    out[..ours].copy_from_slice(&mask[0].to_le_bytes()[..ours]);
    Ok(0)
}

/// The process's policy: mode with its flags in the low 32 bits, node mask above.
static POLICY: AtomicU64 = AtomicU64::new(MPOL_DEFAULT as u64);

fn policy() -> (u64, u64) {
    let p = POLICY.load(Ordering::Relaxed);
    (p & 0xffff_ffff, p >> 32)
}

/// set_mempolicy(mode, nodemask, maxnode), with Linux's checks (mpol_new's rules).
pub fn set_mempolicy(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (mode, mode_flags, set) = checked_policy("set_mempolicy", a[0] as u32 as u64, a[1], a[2])?;
    POLICY.store((mode | mode_flags) | (set << 32), Ordering::Relaxed);
    Ok(0)
}

const MPOL_MF_STRICT: u64 = 1;
const MPOL_MF_MOVE: u64 = 2;
const MPOL_MF_MOVE_ALL: u64 = 4;

/// mbind(start, len, mode, nodemask, maxnode, flags): a policy for a range. On one node every
/// policy places memory where the default does, so a valid call over mapped memory succeeds
/// and changes nothing (OpenBLAS asks for MPOL_PREFERRED on its buffers at start-up); with
/// several nodes a placing policy is refused as set_mempolicy's. Linux's checks: a page-aligned
/// start, known flags, the mode rules, and EFAULT for a range with unmapped pages.
pub fn mbind(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (start, len, flags) = (a[0], a[1], a[5]);
    if start & 0xfff != 0 || flags & !(MPOL_MF_STRICT | MPOL_MF_MOVE | MPOL_MF_MOVE_ALL) != 0 {
        return Err(EINVAL);
    }
    checked_policy("mbind", a[2] as u32 as u64, a[3], a[4])?;
    let len = len.checked_add(0xfff).ok_or(EINVAL)? & !0xfff;
    if len == 0 {
        return Ok(0);
    }
    start.checked_add(len).ok_or(EINVAL)?;
    if !crate::linux::usermap::is_mapped(start, len) {
        return Err(EFAULT);
    }
    Ok(0)
}

/// A policy's mode, mode flags and node set after Linux's checks (mpol_new's rules); `call`
/// names the call in the line said when several nodes make the policy unplaceable.
fn checked_policy(call: &str, mode_arg: u64, nmask: u64, maxnode: u64) -> Result<(u64, u64, u64), u32> {
    let (mode, mode_flags) = (mode_arg & !MPOL_MODE_FLAGS, mode_arg & MPOL_MODE_FLAGS);
    if mode >= MPOL_MAX
        || mode_flags & (MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES) == MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES
        || (mode_flags & MPOL_F_NUMA_BALANCING != 0 && mode != MPOL_BIND && mode != MPOL_PREFERRED_MANY)
    {
        return Err(EINVAL);
    }
    let nodes = crate::mem::num_zones().max(1) as u64;
    let asked = read_mask(nmask, maxnode)?;
    let online = all_nodes(nodes)[0];
    let (mode, set) = match mode {
        m if m == MPOL_DEFAULT as u64 => {
            if asked != 0 {
                return Err(EINVAL);
            }
            (m, 0)
        }
        // An empty preferred set means local allocation.
        MPOL_PREFERRED if asked == 0 => {
            if mode_flags & (MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES) != 0 {
                return Err(EINVAL);
            }
            (MPOL_LOCAL, 0)
        }
        MPOL_LOCAL => {
            if asked != 0 || mode_flags != 0 {
                return Err(EINVAL);
            }
            (MPOL_LOCAL, 0)
        }
        m => {
            // Nodes the VM does not have are dropped, as a cpuset drops them; none left: EINVAL.
            let set = if mode_flags & MPOL_F_RELATIVE_NODES != 0 { asked } else { asked & online };
            if set == 0 {
                return Err(EINVAL);
            }
            (m, set)
        }
    };
    if nodes > 1 && mode != MPOL_DEFAULT as u64 && mode != MPOL_LOCAL {
        return Err(unplaceable(call, mode));
    }
    Ok((mode, mode_flags, set))
}

/// A node mask of `maxnode - 1` bits from the program (EFAULT if unreadable, EINVAL above a
/// page). Only its first word can name this VM's nodes (MAX_ZONES is far below 64); nodes past
/// it are dropped like any node the VM does not have.
fn read_mask(addr: u64, maxnode: u64) -> Result<u64, u32> {
    // Linux counts `maxnode - 1` bits with unsigned arithmetic: 0 is a huge mask (EINVAL).
    let bits = maxnode.wrapping_sub(1);
    if addr == 0 || bits == 0 {
        return Ok(0);
    }
    if bits > MAX_MASK_BYTES * 8 {
        return Err(EINVAL);
    }
    let words = uaccess::slice(addr, bits.div_ceil(64) * 8)?;
    let mut first = [0u8; 8];
    first.copy_from_slice(&words[..8]);
    let w = u64::from_le_bytes(first);
    Ok(if bits < 64 { w & ((1u64 << bits) - 1) } else { w })
}

/// A policy that would place memory on chosen nodes of a VM with several: not honoured.
fn unplaceable(call: &str, mode: u64) -> u32 {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        crate::kprintln!(
            "hrt: {call} mode {mode} with several NUMA nodes (--numa) is not implemented: the program's memory is placed when the VM starts: returning ENOSYS (reported once)"
        );
    }
    ENOSYS
}

const CAP_SYS_NICE: u32 = 23;

/// The process `pid` names for move_pages and migrate_pages: 0, the process or one of its
/// threads. Another process's memory is out of reach (its own VM): ESRCH for a number that no
/// thread has, ENOSYS and a line for a real other process would be a guess, so ESRCH is said
/// only after asking the host whether it exists.
fn own_process(call: &str, pid: u64) -> Result<(), u32> {
    let pid = pid as i32;
    if pid == 0
        || pid == crate::linux::process::pid() as i32
        || pid > 0 && crate::linux::signal::is_program_thread(pid as u32)
    {
        return Ok(());
    }
    if pid < 0 || !crate::linux::calls::procs::host_process_exists(pid as u32) {
        return Err(ESRCH);
    }
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        crate::kprintln!("hrt: {call} of another process ({pid}) is not implemented: returning ENOSYS (reported once)");
    }
    Err(ENOSYS)
}

/// The node of the page holding `addr` (EFAULT, as a negative status, where nothing is mapped).
fn page_node(addr: u64) -> i32 {
    let page = addr & !0xfff;
    if !crate::linux::usermap::is_mapped(page, 0x1000) {
        return -(EFAULT as i32);
    }
    crate::mem::zone_of(page).unwrap_or(0) as i32
}

/// move_pages(pid, count, pages, nodes, status, flags): where pages are (`nodes` NULL) or a
/// move to the given nodes. The program's memory is placed when the VM starts and never moves,
/// so a move is honoured where the page already is (always, on one node) and refused loudly
/// (ENOSYS) where it would have to move. Linux's checks and per-page answers: EINVAL for other
/// flags, EPERM for MPOL_MF_MOVE_ALL without CAP_SYS_NICE, ENODEV for a node the VM does not
/// have, status EFAULT for an unmapped page. A page never touched is present here (no demand
/// paging), so it gets its node where Linux may answer ENOENT.
pub fn move_pages(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (pid, count, pages, nodes_arg, status, flags) = (a[0], a[1], a[2], a[3], a[4], a[5]);
    if flags & !(MPOL_MF_MOVE | MPOL_MF_MOVE_ALL) != 0 {
        return Err(EINVAL);
    }
    if flags & MPOL_MF_MOVE_ALL != 0 && !crate::linux::calls::ids::capable(CAP_SYS_NICE) {
        return Err(EPERM);
    }
    own_process("move_pages", pid)?;
    let nodes = crate::mem::num_zones().max(1) as i64;
    for i in 0..count {
        let addr: u64 = uaccess::read(pages.wrapping_add(i * 8)).map_err(|_| EFAULT)?;
        let now = page_node(addr);
        let answer = if nodes_arg == 0 {
            now
        } else {
            let target: i32 = uaccess::read(nodes_arg.wrapping_add(i * 4)).map_err(|_| EFAULT)?;
            if !(0..nodes).contains(&(target as i64)) {
                return Err(ENODEV);
            }
            if now >= 0 && now != target {
                return Err(unmovable("move_pages"));
            }
            now
        };
        uaccess::write(status.wrapping_add(i * 4), answer).map_err(|_| EFAULT)?;
    }
    Ok(0)
}

/// migrate_pages(pid, maxnode, old_nodes, new_nodes): moves a process's pages from one node
/// set to another; returns how many could not be moved. Linux's checks (the masks as
/// set_mempolicy reads them, EINVAL for a new node the VM does not have); nothing moves where
/// the sets leave every page in place (one node), otherwise refused loudly (ENOSYS).
pub fn migrate_pages(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (pid, maxnode, old, new) = (a[0], a[1], a[2], a[3]);
    let from = read_mask(old, maxnode)?;
    let to = read_mask(new, maxnode)?;
    own_process("migrate_pages", pid)?;
    let online = all_nodes(crate::mem::num_zones().max(1) as u64)[0];
    if to & !online != 0 {
        return Err(EINVAL);
    }
    // Pages move only from nodes in `from` that are not in `to`, and only if `to` names one.
    if from & online & !to != 0 && to != 0 {
        return Err(unmovable("migrate_pages"));
    }
    Ok(0)
}

/// A page move between the nodes of a VM with several: the memory never moves.
fn unmovable(call: &str) -> u32 {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        crate::kprintln!(
            "hrt: {call} to another NUMA node (--numa) is not implemented: the program's memory is placed when the VM starts: returning ENOSYS (reported once)"
        );
    }
    ENOSYS
}
