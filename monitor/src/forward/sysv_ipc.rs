//! System V semaphores and message queues, forwarded: the sets and queues are the host's, so an
//! id means the same in every process, under `hrt` or not (as `sysv_shm.rs` does for shared
//! memory). A semaphore's undo list (SEM_UNDO) is the monitor's host process's: it is applied
//! when that process, the program's, ends; a forked child's host process starts with none, an
//! exec keeps it, as Linux does.
//!
//! Every structure the host reads or writes is checked against the program's memory first. A
//! pointer that fails the check is handed to the host as one that faults there, so the host's own argument checks
//! (EINVAL, E2BIG) come before the EFAULT as on Linux. `msgrcv` receives into a buffer of the
//! monitor's when the program's does not hold `msgsz` bytes (Linux writes only the message's
//! length, so such a program works natively), bounded by `MSG_BOUNCE_MAX`.

use super::errno::{Errno, SysResult};
use super::guest_mem::Guest;
use super::host::{int, ptr};
use super::Forwarder;

/// `cmd | IPC_64`: the layouts this file copies are the 64-bit ones in any case.
const IPC_64: i32 = 0x100;
/// semctl commands Linux numbers but the libc crate does not name.
const SEM_STAT: i32 = 18;
const SEM_INFO: i32 = 19;
const SEM_STAT_ANY: i32 = 20;
/// msgctl commands.
const MSG_STAT: i32 = 11;
const MSG_INFO: i32 = 12;
const MSG_STAT_ANY: i32 = 13;
/// semop's flag (and msgsnd's, msgrcv's): fail instead of waiting.
const IPC_NOWAIT: u64 = libc::IPC_NOWAIT as u64;

/// Sizes of the structures the calls copy (x86-64).
const SEMBUF: u64 = 6;
const SEMID_DS: u64 = 104;
const SEMINFO: u64 = 40;
const MSQID_DS: u64 = std::mem::size_of::<libc::msqid_ds>() as u64;
const MSGINFO: u64 = 32;
const TIMESPEC: u64 = 16;
/// The `long mtype` in front of a message's text.
const MTYPE: u64 = 8;
/// Most operations one semop takes that are checked and copied here; more go to the host with
/// a faulting array, which answers E2BIG (SEMOPM is at most 1,000 by default, settable to 65,536).
const SEMOPS_MAX: u64 = 65_536;
/// Largest message text the monitor receives into a buffer of its own (`msgrcv`).
const MSG_BOUNCE_MAX: u64 = 16 << 20;

/// An address in the host kernel's half: every copy through it fails with EFAULT, and unlike
/// NULL it means nothing else (a NULL timeout waits for ever).
pub(super) const FAULTS: usize = 0xffff_ffff_ffff_f000;

/// A checked pointer, or one the host rejects with EFAULT (after its own argument checks).
pub(super) fn or_fault(p: SysResult<*mut u8>) -> *mut u8 {
    p.unwrap_or(FAULTS as *mut u8)
}

impl Forwarder {
    pub(super) fn semget(&self, key: u64, nsems: u64, flags: u64) -> SysResult<i64> {
        // SAFETY: no pointers.
        unsafe { self.sys(libc::SYS_semget, &[int(key), int(nsems), int(flags)]) }
    }

    /// semtimedop(id, sops, nsops, timeout); semop is the same without a timeout.
    pub(super) fn semtimedop(&self, g: Guest, id: u64, sops: u64, nsops: u64, timeout: u64) -> SysResult<i64> {
        let ops = if nsops as u32 as u64 <= SEMOPS_MAX {
            or_fault(g.range(sops, (nsops as u32 as u64) * SEMBUF))
        } else {
            FAULTS as *mut u8
        };
        let t = if timeout == 0 { std::ptr::null_mut() } else { or_fault(g.range(timeout, TIMESPEC)) };
        // SAFETY: `ops` and `t` fault on the host or cover the array and timespec in guest memory.
        unsafe { self.sys(libc::SYS_semtimedop, &[int(id), ptr(ops), nsops as u32 as libc::c_long, ptr(t)]) }
    }

    /// semop/semtimedop made now: the operations with IPC_NOWAIT added (a copy: the program's
    /// array is left alone). None if one would wait and the program's own operation waits.
    pub(super) fn semop_now(&self, g: Guest, id: u64, sops: u64, nsops: u64) -> Option<i64> {
        let n = nsops as u32 as u64;
        let Ok(mut ops) =
            (if (1..=SEMOPS_MAX).contains(&n) { g.read_bytes(sops, n * SEMBUF) } else { Err(Errno::EINVAL) })
        else {
            // Fails before it could wait (EINVAL, E2BIG, EFAULT): the call itself says which.
            return Some(super::errno::to_ret(self.semtimedop(g, id, sops, nsops, 0)));
        };
        let mut waits = false;
        for op in ops.chunks_exact_mut(SEMBUF as usize) {
            let flg = i16::from_ne_bytes([op[4], op[5]]) as u16 as u64;
            waits |= flg & IPC_NOWAIT == 0;
            op[4..6].copy_from_slice(&((flg | IPC_NOWAIT) as u16).to_ne_bytes());
        }
        // SAFETY: `ops` is the monitor's copy of the array.
        let r = unsafe { self.sys(libc::SYS_semtimedop, &[int(id), ptr(ops.as_ptr()), n as libc::c_long, 0]) };
        match r {
            Err(Errno::EAGAIN) if waits => None,
            r => Some(super::errno::to_ret(r)),
        }
    }

    pub(super) fn semctl(&self, g: Guest, id: u64, num: u64, cmd: u64, arg: u64) -> SysResult<i64> {
        let c = int(cmd) as i32 & !IPC_64;
        // The fourth argument: a value, or a pointer to what the command copies.
        let arg = match c {
            libc::IPC_RMID | libc::GETVAL | libc::GETPID | libc::GETNCNT | libc::GETZCNT => 0,
            libc::SETVAL => int(arg),
            libc::IPC_STAT | SEM_STAT | SEM_STAT_ANY => ptr(or_fault(g.range_mut(arg, SEMID_DS))),
            libc::IPC_SET => ptr(or_fault(g.range(arg, SEMID_DS))),
            libc::IPC_INFO | SEM_INFO => ptr(or_fault(g.range_mut(arg, SEMINFO))),
            libc::GETALL | libc::SETALL => {
                // As many values as the set has semaphores (asked of the host first).
                let mut ds = [0u64; (SEMID_DS / 8) as usize];
                // SAFETY: `ds` is a semid_ds-sized buffer of the monitor's.
                unsafe {
                    self.sys(libc::SYS_semctl, &[int(id), 0, libc::IPC_STAT as libc::c_long, ptr(ds.as_mut_ptr())])
                }?;
                // struct semid64_ds: sem_perm (48 bytes), sem_otime and sem_ctime each followed by
                // an unused word, then sem_nsems.
                let bytes = ds[10] * 2;
                let p = if c == libc::GETALL { g.range_mut(arg, bytes) } else { g.range(arg, bytes) };
                ptr(or_fault(p))
            }
            _ => return Err(Errno::EINVAL),
        };
        // SAFETY: `arg` is a value, or a pointer that faults on the host or covers what the command copies.
        unsafe { self.sys(libc::SYS_semctl, &[int(id), int(num), int(cmd), arg]) }
    }

    pub(super) fn msgget(&self, key: u64, flags: u64) -> SysResult<i64> {
        // SAFETY: no pointers.
        unsafe { self.sys(libc::SYS_msgget, &[int(key), int(flags)]) }
    }

    /// msgsnd(id, msgp, msgsz, flags): reads the type and `msgsz` bytes of text.
    pub(super) fn msgsnd(&self, g: Guest, id: u64, msgp: u64, msgsz: u64, flags: u64) -> SysResult<i64> {
        let p = match msgsz.checked_add(MTYPE).map(|n| g.range(msgp, n)) {
            Some(Ok(p)) => p,
            _ => {
                // Linux reads the type first, then checks the size, the id and the type, and
                // only then copies the text (EFAULT last).
                let Ok(mtype) = g.read::<i64>(msgp) else { return self.msgsnd_faulting(id, msgsz, flags) };
                let invalid = (msgsz as i64) < 0 || msgsz > self.msgmax() || int(id) < 0 || mtype < 1;
                return Err(if invalid { Errno::EINVAL } else { Errno::EFAULT });
            }
        };
        // SAFETY: `p` covers the message in guest memory.
        unsafe { self.sys(libc::SYS_msgsnd, &[int(id), ptr(p), msgsz as libc::c_long, int(flags)]) }
    }

    /// msgsnd with a type the host cannot read: EFAULT, as Linux answers it.
    fn msgsnd_faulting(&self, id: u64, msgsz: u64, flags: u64) -> SysResult<i64> {
        // SAFETY: the host fails to read the type at FAULTS and touches nothing else.
        unsafe { self.sys(libc::SYS_msgsnd, &[int(id), FAULTS as libc::c_long, msgsz as libc::c_long, int(flags)]) }
    }

    /// The host's largest message (`msgmax` of msgctl's IPC_INFO).
    fn msgmax(&self) -> u64 {
        let mut info = [0i32; 8];
        // SAFETY: `info` is a struct msginfo-sized buffer of the monitor's (32 bytes).
        match unsafe { self.sys(libc::SYS_msgctl, &[0, libc::IPC_INFO as libc::c_long, ptr(info.as_mut_ptr())]) } {
            Ok(_) => info[2] as u32 as u64,
            Err(_) => 8192,
        }
    }

    /// msgrcv(id, msgp, msgsz, msgtyp, flags): writes the type and the message's text (at most
    /// `msgsz` bytes) and answers the text's length.
    pub(super) fn msgrcv(&self, g: Guest, id: u64, msgp: u64, msgsz: u64, typ: u64, flags: u64) -> SysResult<i64> {
        let args = |p: *mut u8, size: u64| [int(id), ptr(p), size as libc::c_long, typ as libc::c_long, int(flags)];
        if (msgsz as i64) < 0 {
            // SAFETY: the host rejects a negative size before it looks at the buffer.
            return unsafe { self.sys(libc::SYS_msgrcv, &args(FAULTS as *mut u8, msgsz)) };
        }
        if let Ok(p) = g.range_mut(msgp, msgsz + MTYPE) {
            // SAFETY: `p` covers the largest message the call may write.
            return unsafe { self.sys(libc::SYS_msgrcv, &args(p, msgsz)) };
        }
        // A buffer shorter than msgsz: received here, then copied (EFAULT if the message does not
        // fit the program's memory, the message gone as on Linux).
        let size = msgsz.min(MSG_BOUNCE_MAX);
        let mut buf = vec![0u8; (size + MTYPE) as usize];
        // SAFETY: `buf` holds a type and `size` bytes of text.
        let n = unsafe { self.sys(libc::SYS_msgrcv, &args(buf.as_mut_ptr(), size)) }?;
        g.write_bytes(msgp, &buf[..(MTYPE as usize + n as usize)])?;
        Ok(n)
    }

    /// msgsnd or msgrcv made now, with IPC_NOWAIT: None if it would wait (a full queue, no
    /// message of the type) and the program's own call waits.
    pub(super) fn msg_now(&self, g: Guest, nr: libc::c_long, args: &[u64; 6]) -> Option<i64> {
        let flags_at = if nr == libc::SYS_msgsnd { 3 } else { 4 };
        let waits = args[flags_at] & IPC_NOWAIT == 0;
        let mut now = *args;
        now[flags_at] |= IPC_NOWAIT;
        let r = if nr == libc::SYS_msgsnd {
            self.msgsnd(g, now[0], now[1], now[2], now[3])
        } else {
            self.msgrcv(g, now[0], now[1], now[2], now[3], now[4])
        };
        match r {
            Err(Errno::EAGAIN) | Err(Errno::ENOMSG) if waits => None,
            r => Some(super::errno::to_ret(r)),
        }
    }

    pub(super) fn msgctl(&self, g: Guest, id: u64, cmd: u64, buf: u64) -> SysResult<i64> {
        let c = int(cmd) as i32 & !IPC_64;
        let p = match c {
            libc::IPC_RMID => std::ptr::null_mut(),
            libc::IPC_STAT | MSG_STAT | MSG_STAT_ANY => or_fault(g.range_mut(buf, MSQID_DS)),
            libc::IPC_SET => or_fault(g.range(buf, MSQID_DS)),
            libc::IPC_INFO | MSG_INFO => or_fault(g.range_mut(buf, MSGINFO)),
            _ => return Err(Errno::EINVAL),
        };
        // SAFETY: `p` is NULL (IPC_RMID), faults on the host or covers the structure the command
        // copies, in guest memory.
        let r = unsafe { self.sys(libc::SYS_msgctl, &[int(id), int(cmd), ptr(p)]) }?;
        if matches!(c, libc::IPC_STAT | MSG_STAT | MSG_STAT_ANY) {
            // The last sender and receiver: a blocking msgsnd or msgrcv ran on a worker thread
            // of this `hrt`, and Linux records the thread's id when it hands a message to a
            // waiting receiver (or takes a waiting sender's): the program's pid, as the
            // program's own (one-thread) call has natively.
            for at in [std::mem::offset_of!(libc::msqid_ds, msg_lspid), std::mem::offset_of!(libc::msqid_ds, msg_lrpid)]
            {
                let field = p.wrapping_add(at) as *mut libc::pid_t;
                // SAFETY: inside the structure checked above, which the host just wrote.
                let pid = unsafe { field.read_unaligned() };
                if pid > 0 && own_thread(pid) {
                    // SAFETY: as above.
                    unsafe { field.write_unaligned(libc::getpid()) };
                }
            }
        }
        Ok(r)
    }
}

/// Whether `tid` is a thread of this process other than its main one (a worker of the monitor).
fn own_thread(tid: libc::pid_t) -> bool {
    // SAFETY: getpid has no preconditions.
    tid != unsafe { libc::getpid() } && std::path::Path::new(&format!("/proc/self/task/{tid}")).exists()
}
