//! The forwarding channel: forwarded system calls travel through guest memory the kernel and the
//! monitor share, without a VM exit (issue 11). The kernel allocates one [`Channel`] and registers
//! it with `nr::CHANNEL`; from then on a forwarded call is:
//!
//! 1. the guest takes a free slot (its own bookkeeping), writes `nr` and `args`, sets `state` to
//!    [`SUBMITTED`] and the slot's bit in `pending`;
//! 2. if `service_awake` is 0 the guest rings the doorbell (`nr::DOORBELL`, the one exit left);
//! 3. a monitor service thread takes the bits of `pending` (atomic swap), performs each call with
//!    the usual checks, writes `ret`, then sets `state` to [`DONE`];
//! 4. the guest thread sees `DONE` while it spins, or, if it has gone to sleep in the guest
//!    scheduler, it has stored its CPU in `sleeper_cpu` first: the monitor then interrupts that
//!    CPU with [`COMPLETION_VECTOR`] unless the CPU says (`idle_polling`) that its idle loop is
//!    polling the slots anyway.
//!
//! 5. a sleeping caller that a signal interrupts sets its slot's bit in `cancel` (and rings the
//!    doorbell if the service sleeps): a call still blocked on the host is interrupted and
//!    answers EINTR, which the kernel turns into EINTR or a restart as Linux would.
//!
//! Every handshake is a store followed by a load of the other side's word, both sequentially
//! consistent (store `pending` / load `service_awake` against store `service_awake` / load
//! `pending`; store `sleeper_cpu` / load `state` against store `state` / load `sleeper_cpu`), so
//! a wake-up is never lost. Everything in the channel is written by the guest too: the monitor
//! copies a request once and trusts none of it.

use core::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, AtomicU8};

/// Number of slots: forwarded calls in flight at once (a thread blocked in a host call holds
/// its slot; further callers wait for a free one). With 256, a program whose 256 threads
/// blocked in reads of a pipe waited for good for the write that would have fed them.
pub const SLOTS: usize = 1024;

/// `ChannelSlot::state` values.
pub const FREE: u32 = 0;
pub const SUBMITTED: u32 = 1;
pub const DONE: u32 = 2;

/// `ChannelSlot::sleeper_cpu` when no thread sleeps on the slot (its caller polls it).
pub const NO_SLEEPER: u32 = u32::MAX;

/// A cancelled call's answer (negated) that is EINTR for good, never restarted: a socket call
/// with a time limit (SO_RCVTIMEO, SO_SNDTIMEO) that a signal interrupted, as Linux's
/// `sock_intr_errno` answers whatever SA_RESTART says. (Plain EINTR from a cancelled call
/// becomes a restart or EINTR as the signal's action decides.)
pub const EINTR_FOR_GOOD: i64 = 0x1_0000 | 4;

/// A wait's answer (negated; `wait4`, `waitid` without WNOHANG) when a child became waitable
/// after a signal reached `hrt` on the host, before the kernel took that signal: the child is
/// left waitable, and the kernel takes the host's signals now, then answers as Linux would for
/// a signal that came first (EINTR or a restart, by the action) if one is for the waiting
/// thread, or makes the wait again.
pub const SIGNAL_CAME_FIRST: i64 = 0x1_0000 | 5;

/// The interrupt the monitor sends to a CPU that has a thread asleep on a completed slot.
pub const COMPLETION_VECTOR: u8 = 0xf3;

/// The interrupt the monitor sends to CPU 0 when `host_signals` has news.
pub const HOST_SIGNAL_VECTOR: u8 = 0xf4;

/// The interrupt the monitor sends to every CPU when it set `files_shrank`.
pub const FILES_SHRANK_VECTOR: u8 = 0xf6;

/// The interrupt the monitor sends to every CPU, `--profile` times a second: the kernel notes
/// the address of the instruction it interrupted (`ChannelHeader::profile_area`).
pub const PROFILE_VECTOR: u8 = 0xf7;

/// A slot's `nr` with this bit set asks the monitor for one of its own operations (the
/// hypercall number in the low bits: `nr::MEM_ZERO` and `nr::SMALL_HOST_PAGES`) instead of a Linux call (below bit
/// 32: the bits from `process::CONTEXT_SHIFT` up name a spawned child's calls): the
/// polling service thread performs it at once, without the VM exit a hypercall costs
/// (~60 us on a PVM host against ~1 us through the channel).
pub const MONITOR_OP: u64 = 1 << 30;

/// One forwarded call. Two cache lines, so neighbours never share one.
#[repr(C, align(128))]
pub struct ChannelSlot {
    pub state: AtomicU32,
    /// The CPU whose scheduler holds the caller asleep, or [`NO_SLEEPER`].
    pub sleeper_cpu: AtomicU32,
    /// Linux system-call number and arguments (addresses are the program's).
    pub nr: AtomicU64,
    pub args: [AtomicU64; 6],
    /// The Linux return value (negated errno on failure), valid once `state` is [`DONE`].
    pub ret: AtomicI64,
}

/// Words both sides poll, each group on its own cache lines.
#[repr(C, align(64))]
pub struct ChannelHeader {
    /// Bit `i % 64` of word `i / 64`: slot `i` holds a request no service thread has taken yet.
    pub pending: [AtomicU64; SLOTS / 64],
    /// Bit `i`: the caller of slot `i` was interrupted by a signal while its call blocks on the
    /// host; the monitor interrupts that host call (EINTR) if it still waits.
    pub cancel: [AtomicU64; SLOTS / 64],
    /// Nonzero while a service thread polls `pending`; 0 when they all sleep and a new request
    /// needs the doorbell.
    pub service_awake: AtomicU32,
    /// How many of the guest's CPUs are halted now (their host CPUs are free): the service
    /// threads may spin longer after a call while one is (`ChannelConfig::idle_spin`).
    pub halted_cpus: AtomicU32,
    /// Signals sent to `hrt` on the host (bit `sig`, bit 0 for 64) that the kernel is to raise in the
    /// program; the monitor sets them and interrupts CPU 0 with [`HOST_SIGNAL_VECTOR`].
    pub host_signals: AtomicU64,
    /// Nonzero once the kernel takes [`HOST_SIGNAL_VECTOR`]: until then the monitor does not
    /// pass signals on (they act on `hrt` as on a program that has not started). A channel the
    /// monitor placed is served before the kernel runs.
    pub signals_ready: AtomicU32,
    /// Set by the monitor when a file the program maps `MAP_SHARED` was found shorter than the
    /// mapping's pages the file covered (another process shrank it; the monitor looks every
    /// quarter second), before it interrupts every CPU with [`FILES_SHRANK_VECTOR`]: the kernel
    /// hides the pages past the new end, so that touching them raises SIGBUS. (Left present,
    /// the host's fault on them fails inside KVM, which retries it for ever.)
    pub files_shrank: AtomicU32,
    /// Nonzero when the service threads have a host CPU to spare (set at registration): a
    /// doorbell that wakes them for a burst of calls then takes no host time from the vCPUs,
    /// and the kernel rings one for its monitor operations (`MONITOR_OP`) too; without, it
    /// makes those hypercalls while no service thread polls.
    pub pollers_spare: AtomicU32,
    pub _pad2: [u32; 9],
    /// Nonzero while that CPU polls the slots of its sleeping threads (it needs no interrupt
    /// then): its idle loop, or a thread spinning for its own answer with interrupts masked.
    pub idle_polling: [AtomicU8; crate::MAX_CPUS],
    /// The program's memory in bytes: all of it, and what is free. The kernel refreshes both
    /// before each forwarded `open`, `openat` and `openat2`; the monitor's `/proc/meminfo`
    /// shows them (a number from the guest, only displayed).
    pub program_memory: [AtomicU64; 2],
    /// Per signal (index `sig % 64`, as the bits of `host_signals`): the host's siginfo of the
    /// signal `hrt` received, written by the monitor before it sets the signal's bit (only
    /// while the bit is clear), read by the kernel before it clears the bit.
    pub host_siginfo: [HostSigInfo; 64],
    /// The program's main stack and vDSO, guest addresses: the start of the inaccessible guard
    /// below the stack, the stack's bottom (the guard's end), its top (the vDSO's start) and
    /// the vDSO's end. The kernel refreshes them with `program_memory`; the monitor's `/proc/self/maps` shows them as
    /// `[stack]` and `[vdso]` (glibc's `pthread_getattr_np` of the main thread reads its
    /// stack's size there). Zero until the kernel has written them.
    pub main_stack: [AtomicU64; 4],
    /// What the program's `/proc/self/status` and `/proc/self/stat` show of its threads,
    /// signals and address space, refreshed with `program_memory` (see [`ProgramStatus`]).
    pub status: ProgramStatus,
    /// The program's live threads, for its `/proc/self/task` listing: how many there are, and
    /// the ids of the first [`LISTED_THREADS`] (the main thread's, the pid, first). The kernel
    /// refreshes them with `program_memory` when threads came or went; numbers from the guest,
    /// only listed.
    pub thread_count: AtomicU32,
    pub _pad3: u32,
    pub thread_ids: [AtomicU32; LISTED_THREADS],
    /// A rename the program made by writing a thread's `comm` file (`/proc/self/task/<tid>/comm`,
    /// which glibc's `pthread_setname_np` of another thread writes): the monitor writes the
    /// name's 16 bytes in words 1-2, then the tid in word 0 (nonzero); the kernel takes it after
    /// the forwarded call and sets word 0 back to 0. One at a time: the monitor waits (briefly)
    /// for the word to be free.
    pub rename: [AtomicU64; 3],
    /// `hrt run --profile`: where the kernel keeps its samples (guest address; 0 while it keeps
    /// none). Per CPU `i`, at `profile_area + i * (profile_capacity + 1) * 8`: how many samples
    /// that CPU took (more than `profile_capacity`: the rest were dropped) in the bits below
    /// [`PROFILE_GENERATION_SHIFT`], the exec generation they count for above (a CPU whose
    /// generation is not `profile_generation` took none since the last exec), then up to
    /// `profile_capacity` addresses of the instructions [`PROFILE_VECTOR`] interrupted. Read
    /// by the monitor once the program has ended (numbers from the guest, only reported).
    pub profile_area: AtomicU64,
    pub profile_capacity: AtomicU64,
    /// Where the program's link address 0 landed (0 for a position-dependent program), for
    /// the profile's symbols.
    pub profile_program_base: AtomicU64,
    /// Where the interpreter's (ld.so's) link address 0 landed; 0 without one.
    pub profile_interp_base: AtomicU64,
    /// How many execs the program made: the samples are the last image's.
    pub profile_generation: AtomicU64,
    /// Nonzero while that CPU is halted (or, in a forked child, not started): `--profile`
    /// counts it as such without interrupting it.
    pub cpu_halted: [AtomicU8; crate::MAX_CPUS],
    /// The program's memory as its `/proc/self/maps` lists it: the guest address of an array
    /// of [`MapsEntry`] in the kernel's own memory, and how many there are. The kernel
    /// refreshes it with `program_memory` before a forwarded open of a path whose last
    /// component is `maps`; zero before. Numbers from the guest, only displayed: the monitor
    /// reads at most [`MAPS_MAX`] entries, and only from guest RAM.
    pub maps: [AtomicU64; 2],
    /// Where the program's leader thread (the one whose tid is the pid) keeps its scheduling
    /// state: the guest address of a 32-bit word that is [`LEADER_WAITING`] or
    /// [`LEADER_BLOCKING`] while it waits in the kernel; 0 while a forked child is being set up.
    /// The parent's monitor reads it in the child's `hrt` (the same host addresses: a fork) for
    /// the state its `/proc/<pid>/stat` and `status` show. Numbers from the guest, only
    /// displayed.
    pub leader_state: AtomicU64,
    /// 1 + the slot of the forwarded call the leader waits for, while it makes one; 0 otherwise.
    /// The parent's monitor counts the leader as sleeping in such a call only once a worker
    /// thread of the child's monitor has taken it (the host call waits there): a parent that
    /// saw S and then removed a semaphore set found its child's semop not yet made (EINVAL where
    /// Linux has EIDRM, LTP semop03).
    pub leader_slot: AtomicU64,
    /// Bit `i % 64` of word `i / 64`: a worker thread of the monitor is making slot `i`'s call
    /// (set just before its host call, cleared after).
    pub worker_busy: [AtomicU64; SLOTS / 64],
}

/// Values of the word [`ChannelHeader::leader_state`] names that mean the thread waits.
pub const LEADER_BLOCKING: u32 = 2;
pub const LEADER_WAITING: u32 = 3;

/// One line of the program's `/proc/self/maps` ([`ChannelHeader::maps`]): `[start, end)`,
/// its protection (PROT_* bits, and [`MAPS_LOCKED`] for locked memory), what it is ([`maps_kind`]), and for a file's pages the
/// file's offset of `start` and which file (`file`, by `kind`).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct MapsEntry {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    pub file: u64,
    pub prot: u32,
    pub kind: u32,
}

/// A [`MapsEntry::prot`] bit: the area is locked (mlock: smaps' `Locked:` and `lo`).
pub const MAPS_LOCKED: u32 = 1 << 16;
/// A [`MapsEntry::prot`] bit beside [`MAPS_LOCKED`]: locked on fault (MLOCK_ONFAULT,
/// MCL_ONFAULT: smaps' `lf`).
pub const MAPS_LOCKED_ON_FAULT: u32 = 1 << 17;

/// The most entries the monitor reads (Linux's default `vm.max_map_count` is 65,530).
pub const MAPS_MAX: u64 = 65_536;

/// What a [`MapsEntry`] is, and how its `file` names its file.
pub mod maps_kind {
    /// Anonymous memory (private).
    pub const ANONYMOUS: u32 = 0;
    /// The pages of the program's own file (its executable).
    pub const PROGRAM: u32 = 1;
    /// The pages of its interpreter's file (ld.so).
    pub const INTERPRETER: u32 = 2;
    /// The break's memory (`[heap]`).
    pub const HEAP: u32 = 3;
    /// The main thread's stack (`[stack]`).
    pub const STACK: u32 = 4;
    /// The vDSO (`[vdso]`).
    pub const VDSO: u32 = 5;
    /// A private mapping of a file still open as the program's descriptor `file`.
    pub const FILE_FD: u32 = 6;
    /// A private mapping of a file the monitor keeps as handle `file` (`process::KEEP_FILE`).
    pub const FILE_KEPT: u32 = 7;
    /// Shared memory: a file's pages, a System V segment or anonymous shared memory.
    pub const SHARED: u32 = 8;
}

/// See [`ChannelHeader::profile_area`].
pub const PROFILE_GENERATION_SHIFT: u64 = 40;

/// `nr::PROFILE_FILE`'s args[0] when the program has exec'd: its mappings are gone, and the
/// program is now the file it exec'd.
pub const PROFILE_EXECED: u64 = u64::MAX;

/// How many threads [`ProgramStatus`] lists with their signal masks.
pub const STATUS_THREADS: usize = 32;

/// The program's threads, signal state and address space as the kernel knows them, written by
/// the kernel before a forwarded `open`, `openat` or `openat2` whose path starts with `/proc/`
/// or is relative; the monitor's `/proc/self/status` shows them (numbers from the guest, only
/// displayed). Two threads opening at once may interleave their writes: the lines are then a
/// mix of two moments, each of them true when written.
#[repr(C)]
pub struct ProgramStatus {
    /// Nonzero once the kernel has written the block.
    pub valid: AtomicU64,
    /// The program's live threads.
    pub threads: AtomicU64,
    /// Signals (bit `sig - 1`) set to SIG_IGN, and set to a handler.
    pub ignored: AtomicU64,
    pub caught: AtomicU64,
    /// Signals pending for the process (any thread may take them).
    pub shared_pending: AtomicU64,
    /// Pending signal instances in all (queued real-time ones counted each).
    pub queued: AtomicU64,
    /// The tid of the thread whose open this is (`/proc/thread-self`).
    pub caller: AtomicU64,
    /// The address space in bytes: every mapping, PROT_NONE ones included, the break's window
    /// up to the break; and the largest it has been since the program's last exec.
    pub vm_size: AtomicU64,
    pub vm_peak: AtomicU64,
    /// The lowest start and the highest end of the program's mappings: the span of the page
    /// map the monitor reads for VmRSS.
    pub mapped_span: [AtomicU64; 2],
    /// How many entries `tids`, `blocked` and `pending` hold (at most [`STATUS_THREADS`]).
    pub listed: AtomicU64,
    /// Thread `tids[i]` blocks `blocked[i]` and has `pending[i]` pending for itself.
    pub tids: [AtomicU64; STATUS_THREADS],
    pub blocked: [AtomicU64; STATUS_THREADS],
    pub pending: [AtomicU64; STATUS_THREADS],
    /// Thread `tids[i]`'s name (PR_SET_NAME; 16 bytes, NUL-padded), and the process's (the
    /// main thread's): what `comm`, status's Name and stat's second field show.
    pub names: [[AtomicU64; 2]; STATUS_THREADS],
    pub process_name: [AtomicU64; 2],
    /// Thread `tids[i]`'s state as status and stat show it: `b'S'` while it waits (blocked
    /// in the kernel: a futex, a sleep, a forwarded call), `b'R'` while it runs or is ready.
    pub states: [AtomicU64; STATUS_THREADS],
    /// The program's resource limits (soft, hard) by resource number, as its kernel keeps
    /// them: what `/proc/self/limits` shows.
    pub rlimits: [[AtomicU64; 2]; crate::RLIMITS],
    /// Where the program's environment strings (start, end: Linux's env_start and env_end),
    /// auxiliary vector (address, bytes) and argument strings (arg_start, arg_end) are on its
    /// main stack: what `/proc/self/environ`, `auxv` and `cmdline` show, read from the
    /// program's memory as it is now (as Linux does). Zero before the kernel has built a stack.
    pub environ: [AtomicU64; 2],
    pub auxv: [AtomicU64; 2],
    pub args: [AtomicU64; 2],
    /// Thread `tids[i]`'s seccomp mode (0 none, 1 strict, 2 filters) and, from bit 8, how
    /// many filters it has: status's Seccomp and Seccomp_filters.
    pub seccomp: [AtomicU64; STATUS_THREADS],
    /// Bytes the program has locked (mlock and its kin): VmLck.
    pub vm_locked: AtomicU64,
    /// Thread `tids[i]`'s CPU mask (bit `n` of word `n / 64`; all zero: every vCPU): status's
    /// Cpus_allowed and its list.
    pub affinity: [[AtomicU64; 4]; STATUS_THREADS],
}

/// How many thread ids the channel header lists (`ChannelHeader::thread_ids`).
pub const LISTED_THREADS: usize = 1024;

/// What the kernel raises a host signal with: si_code and the siginfo words at offsets 16
/// (si_pid, si_uid) and 24 (si_value, or SIGCHLD's si_status). A signal whose siginfo the
/// monitor does not pass on has SI_USER (0) and zero words: sent by a process the program does
/// not know.
#[repr(C)]
pub struct HostSigInfo {
    pub code: AtomicI32,
    pub _pad: u32,
    pub w16: AtomicU64,
    pub w24: AtomicU64,
}

/// How many real-time signals sent to `hrt` the channel holds for the kernel at once
/// ([`SignalQueue`]); the kernel's own queue of a program's pending real-time signals is as
/// long.
pub const RT_QUEUED: usize = 4096;

/// One real-time signal in [`SignalQueue`]: its number and what [`HostSigInfo`] holds of its
/// siginfo. `turn` says whose the cell is for position `pos` (round `pos / RT_QUEUED`): even
/// `2 * round` free for the monitor to fill, odd `2 * round + 1` filled for the kernel to take;
/// the kernel then stores `2 * round + 2`, free for the next round. Zeroed memory is an empty
/// queue.
#[repr(C)]
pub struct QueuedSignal {
    pub turn: AtomicU64,
    pub signo: AtomicI32,
    pub code: AtomicI32,
    pub w16: AtomicU64,
    pub w24: AtomicU64,
}

/// Real-time signals sent to `hrt`, each instance kept in the order the host delivered them
/// (the one bit per signal of `ChannelHeader::host_signals` merged those that came before the
/// kernel took the first, so a burst of sigqueues from another process mostly vanished). A
/// bounded queue with many producers (the monitor's signal handlers, on any of its threads)
/// and many consumers (CPU 0's interrupt, a waiting thread's `SIGNAL_CAME_FIRST`): a producer
/// claims position `enqueue` by compare-and-swap once the cell's `turn` says it is free, fills
/// it, then marks it filled; a consumer claims `dequeue` alike once the cell is filled. The
/// monitor bounds its attempts (the program can write this memory) and, with the queue full,
/// sets the signal's bit in the word instead. After each instance it interrupts CPU 0 with
/// [`HOST_SIGNAL_VECTOR`], as for the word.
#[repr(C, align(64))]
pub struct SignalQueue {
    pub enqueue: AtomicU64,
    pub _pad0: [u64; 7],
    pub dequeue: AtomicU64,
    pub _pad1: [u64; 7],
    pub cells: [QueuedSignal; RT_QUEUED],
}

/// A signal taken from [`SignalQueue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TakenSignal {
    pub signo: i32,
    pub code: i32,
    pub w16: u64,
    pub w24: u64,
}

impl SignalQueue {
    /// How often `push` retries after another producer took the position it tried (each
    /// retry means one more signal went in: a bound only a program writing the queue reaches).
    const PUSH_ATTEMPTS: usize = 64;

    /// The monitor's side: appends `signal`; false if the queue is full (or the program wrote
    /// the queue's words into nonsense).
    pub fn push(&self, signal: TakenSignal) -> bool {
        use core::sync::atomic::Ordering::{AcqRel, Acquire, Release, SeqCst};
        for _ in 0..Self::PUSH_ATTEMPTS {
            let pos = self.enqueue.load(SeqCst);
            let cell = &self.cells[pos as usize % RT_QUEUED];
            let free = 2 * (pos / RT_QUEUED as u64);
            let turn = cell.turn.load(Acquire);
            if turn == free {
                if self.enqueue.compare_exchange(pos, pos + 1, AcqRel, Acquire).is_ok() {
                    cell.signo.store(signal.signo, Release);
                    cell.code.store(signal.code, Release);
                    cell.w16.store(signal.w16, Release);
                    cell.w24.store(signal.w24, Release);
                    cell.turn.store(free + 1, SeqCst);
                    return true;
                }
            } else if turn < free {
                // Last round's signal is still there: full.
                return false;
            }
        }
        false
    }

    /// The kernel's side: takes the oldest signal; None if there is none (or the oldest is
    /// still being written: its producer interrupts CPU 0 once it is in).
    pub fn pop(&self) -> Option<TakenSignal> {
        use core::sync::atomic::Ordering::{AcqRel, Acquire, SeqCst};
        loop {
            let pos = self.dequeue.load(SeqCst);
            let cell = &self.cells[pos as usize % RT_QUEUED];
            let filled = 2 * (pos / RT_QUEUED as u64) + 1;
            let turn = cell.turn.load(Acquire);
            if turn < filled {
                return None;
            }
            if turn > filled && self.dequeue.load(SeqCst) == pos {
                // Not a cell another consumer emptied meanwhile: the program wrote it.
                return None;
            }
            if turn == filled && self.dequeue.compare_exchange(pos, pos + 1, AcqRel, Acquire).is_ok() {
                let signal = TakenSignal {
                    signo: cell.signo.load(Acquire),
                    code: cell.code.load(Acquire),
                    w16: cell.w16.load(Acquire),
                    w24: cell.w24.load(Acquire),
                };
                cell.turn.store(filled + 1, SeqCst);
                return Some(signal);
            }
            // Another consumer took this one: look again.
            core::hint::spin_loop();
        }
    }

    /// Whether a signal was put in that no consumer has taken yet.
    pub fn has_signals(&self) -> bool {
        use core::sync::atomic::Ordering::SeqCst;
        self.enqueue.load(SeqCst) != self.dequeue.load(SeqCst)
    }
}

/// The whole shared area (`nr::CHANNEL` registers its guest-physical address and size).
#[repr(C, align(4096))]
pub struct Channel {
    pub header: ChannelHeader,
    pub slots: [ChannelSlot; SLOTS],
    pub rt_signals: SignalQueue,
}

const _: () = assert!(core::mem::size_of::<ChannelSlot>() == 128);
const _: () = assert!(core::mem::size_of::<QueuedSignal>() == 32);
const _: () = assert!(RT_QUEUED.is_power_of_two());
const _: () = assert!(core::mem::offset_of!(ChannelHeader, idle_polling).is_multiple_of(64));
const _: () = assert!(SLOTS.is_multiple_of(64));

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::boxed::Box;
    use std::vec::Vec;

    fn empty_queue() -> Box<SignalQueue> {
        // SAFETY: every field is an integer or atomic: all zeroes is an empty queue.
        unsafe { Box::new_zeroed().assume_init() }
    }

    fn signal(n: u64) -> TakenSignal {
        TakenSignal { signo: 34 + (n % 30) as i32, code: -1, w16: n, w24: !n }
    }

    /// Every instance comes out once, in order, over many rounds of the ring; a full queue
    /// refuses until one is taken.
    #[test]
    fn signals_come_out_in_order_and_a_full_queue_refuses() {
        let q = empty_queue();
        assert_eq!(q.pop(), None);
        let mut next_in = 0u64;
        let mut next_out = 0u64;
        for round in 0..5 {
            while q.push(signal(next_in)) {
                next_in += 1;
            }
            assert_eq!(next_in - next_out, RT_QUEUED as u64, "round {round}: full at RT_QUEUED");
            for _ in 0..RT_QUEUED / 2 + round {
                assert_eq!(q.pop(), Some(signal(next_out)));
                next_out += 1;
            }
        }
        while let Some(s) = q.pop() {
            assert_eq!(s, signal(next_out));
            next_out += 1;
        }
        assert_eq!(next_in, next_out);
        assert!(!q.has_signals());
    }

    /// Producers and consumers on several threads: nothing lost, nothing twice, each
    /// producer's signals in its order.
    #[test]
    fn threads_lose_nothing() {
        const PER: u64 = 20_000;
        let q: &'static SignalQueue = Box::leak(empty_queue());
        let taken = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for p in 0..3u64 {
                s.spawn(move || {
                    for i in 0..PER {
                        let sig = TakenSignal { signo: 40, code: p as i32, w16: i, w24: 0 };
                        while !q.push(sig) {
                            std::hint::spin_loop();
                        }
                    }
                });
            }
            for _ in 0..2 {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    let mut idle = 0u64;
                    while idle < 50_000_000 {
                        match q.pop() {
                            Some(sig) => {
                                mine.push(sig);
                                idle = 0;
                            }
                            None => idle += 1,
                        }
                        if mine.len() as u64 == 3 * PER {
                            break;
                        }
                    }
                    taken.lock().unwrap().extend(mine);
                });
            }
        });
        let taken = taken.into_inner().unwrap();
        assert_eq!(taken.len() as u64, 3 * PER);
        for p in 0..3 {
            let mut seen: Vec<u64> = taken.iter().filter(|s| s.code == p).map(|s| s.w16).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..PER).collect::<Vec<_>>(), "producer {p}");
        }
    }

    /// A queue the program wrote nonsense into neither hangs the monitor nor the kernel.
    #[test]
    fn nonsense_words_end_in_refusals() {
        let q = empty_queue();
        q.enqueue.store(u64::MAX / 3, core::sync::atomic::Ordering::SeqCst);
        q.dequeue.store(7, core::sync::atomic::Ordering::SeqCst);
        for c in q.cells.iter() {
            c.turn.store(u64::MAX, core::sync::atomic::Ordering::SeqCst);
        }
        assert!(!q.push(signal(1)));
        assert_eq!(q.pop(), None);
    }
}
