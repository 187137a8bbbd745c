//! Whether an interrupted program sits in a spin-wait loop that has no PAUSE: a short loop
//! that only reads memory and tests what it read, as compilers emit for `while (flag == 0);`
//! on a volatile or atomic flag (NPB LU's pipeline, PRK's `p2p`, hand-written flags,
//! `!$omp flush` loops). Such a loop keeps no state from one round to the next: every round
//! reads the same addresses (perhaps computing them from what it read in the same round), so
//! only another thread's store can end it. A loop that stores, calls, counts its rounds or
//! walks memory (a value loaded in one round feeds the next round's address) is not one.
//! `pause::near` finds the loops that do have a PAUSE.

use iced_x86::{Decoder, DecoderOptions, FlowControl, Instruction, Mnemonic, OpKind, Register};

/// The longest loop recognised, in bytes (spin loops are a handful of instructions).
const MAX_LOOP: u64 = 48;
/// How many instructions after the interrupted one may come before the loop's back branch.
const MAX_AHEAD: usize = 8;

/// True if `rip` lies in a spin-wait loop without PAUSE (see the module comment). Reads only
/// inside `rip`'s page, through fault probes (another thread may unmap the code meanwhile).
pub fn encloses(rip: u64) -> bool {
    find(rip).is_some()
}

/// The spin-wait loop around `rip` (see `encloses`), as its head and the end of its back
/// branch.
pub fn find(rip: u64) -> Option<(u64, u64)> {
    let page = rip & !0xfff;
    let lo = rip.saturating_sub(MAX_LOOP).max(page) & !7;
    let hi = (rip + MAX_LOOP + 16).min(page + 0x1000);
    let mut bytes = [0u8; 2 * MAX_LOOP as usize + 32];
    let len = super::pause::copy_code(lo, hi, &mut bytes)?;
    let code = &bytes[..len];
    let (start, end) = back_branch(code, lo, rip)?;
    only_waits(code, lo, start, end, rip).then_some((start, end))
}

/// The loop around `rip`: decoding on from `rip`, the first branch back to `rip` or before it,
/// as (its target, the end of the branch). None if control leaves some other way first.
fn back_branch(code: &[u8], lo: u64, rip: u64) -> Option<(u64, u64)> {
    let mut decoder = Decoder::with_ip(64, &code[(rip - lo) as usize..], rip, DecoderOptions::NONE);
    let mut ins = Instruction::default();
    for _ in 0..MAX_AHEAD {
        if !decoder.can_decode() {
            return None;
        }
        decoder.decode_out(&mut ins);
        if ins.is_invalid() {
            return None;
        }
        match ins.flow_control() {
            FlowControl::Next => {}
            FlowControl::ConditionalBranch | FlowControl::UnconditionalBranch => {
                let target = ins.near_branch_target();
                if target <= rip && target >= lo && ins.next_ip() - target <= MAX_LOOP {
                    return Some((target, ins.next_ip()));
                }
                if ins.flow_control() == FlowControl::UnconditionalBranch {
                    return None;
                }
                // A forward exit of the loop: the back branch is further on.
            }
            _ => return None,
        }
    }
    None
}

/// The most instructions a recognised loop holds.
const MAX_INSTRUCTIONS: usize = 16;
/// The most forward branches to inside the loop (an `if` in the round).
const MAX_FORWARD: usize = 4;

/// Whether the loop from `start` to `end` (the back branch's end) only waits: every round reads
/// memory and computes from what it read, in registers, and keeps nothing for the next round
/// (every register the loop writes is written in a round before that round reads it), so
/// that only another thread's store can end it. Also, it decodes through `rip` on an
/// instruction boundary.
///
/// That takes loops that compute a flag's address from shared variables they read again each
/// round (PRK's `p2p`: `flag[(tid - 1 + j * nthread) * 16]` with `nthread` in a shared record, as
/// an atomic read makes the compiler reload it) and leaves out loops that count rounds, walk a
/// list (`p = p->next`: the loaded register feeds the next round's address) or store.
fn only_waits(code: &[u8], lo: u64, start: u64, end: u64, rip: u64) -> bool {
    let mut decoder = Decoder::with_ip(64, &code[(start - lo) as usize..], start, DecoderOptions::NONE);
    let mut round = [Instruction::default(); MAX_INSTRUCTIONS];
    let mut count = 0;
    let mut through_rip = false;
    while decoder.can_decode() && decoder.ip() < end {
        if count == MAX_INSTRUCTIONS {
            return false;
        }
        through_rip |= decoder.ip() == rip;
        decoder.decode_out(&mut round[count]);
        if round[count].is_invalid() {
            return false;
        }
        count += 1;
    }
    if decoder.ip() != end || !through_rip {
        return false;
    }
    let round = &round[..count];
    // The registers the loop writes, and whether it reads memory at all.
    let mut written = 0u16;
    let mut loads = false;
    for ins in round {
        let Some(e) = effect(ins) else { return false };
        written |= e.writes;
        loads |= e.loads;
    }
    // Along the round, the registers written so far on every path to this point.
    let mut defined = 0u16;
    let mut forward: [(u64, u16); MAX_FORWARD] = [(0, 0); MAX_FORWARD];
    let mut forward_count = 0;
    for (n, ins) in round.iter().enumerate() {
        for &(target, then_defined) in &forward[..forward_count] {
            if target == ins.ip() {
                defined &= then_defined;
            }
        }
        let Some(e) = effect(ins) else { return false };
        if e.reads & written & !defined != 0 {
            return false;
        }
        defined |= e.full_writes;
        if matches!(ins.flow_control(), FlowControl::ConditionalBranch | FlowControl::UnconditionalBranch) {
            let target = ins.near_branch_target();
            let last = n + 1 == round.len();
            if target > ins.ip() && target < end {
                if forward_count == MAX_FORWARD {
                    return false;
                }
                forward[forward_count] = (target, defined);
                forward_count += 1;
            } else if target >= start && target < end && !last {
                // A loop inside the round: not a shape spin-waits take.
                return false;
            }
        }
    }
    loads
}

/// What one instruction of a loop does with the general registers (bit `Register::number` of
/// the full register).
struct Effect {
    /// Registers read (a write to 8 or 16 of their bits keeps the rest: a read too).
    reads: u16,
    /// Registers written, wholly or in part.
    writes: u16,
    /// Registers written wholly (a 32-bit write clears the upper half).
    full_writes: u16,
    /// The instruction reads memory.
    loads: bool,
}

/// The effect of an instruction a spin-wait may hold: loads, computing into a register,
/// compares, fences and branches; None for anything else (a store, a call, other registers).
fn effect(ins: &Instruction) -> Option<Effect> {
    let mut e = Effect { reads: 0, writes: 0, full_writes: 0, loads: false };
    let (writes_op0, reads_op0) = match ins.mnemonic() {
        Mnemonic::Pause | Mnemonic::Nop | Mnemonic::Lfence | Mnemonic::Mfence => return Some(e),
        // `lock or $0, (%rsp)`: gcc's full fence (`!$omp flush`, `__sync_synchronize`); it
        // rewrites a stack word with its own value.
        Mnemonic::Or
            if ins.has_lock_prefix()
                && ins.op0_kind() == OpKind::Memory
                && ins.memory_base() == Register::RSP
                && ins.memory_index() == Register::None
                && ins.try_immediate(1).is_ok_and(|v| v == 0) =>
        {
            return Some(e)
        }
        _ if matches!(ins.flow_control(), FlowControl::ConditionalBranch | FlowControl::UnconditionalBranch) => {
            return Some(e)
        }
        Mnemonic::Cmp | Mnemonic::Test => (false, true),
        Mnemonic::Mov | Mnemonic::Movzx | Mnemonic::Movsx | Mnemonic::Movsxd | Mnemonic::Lea => (true, false),
        // `xor %eax,%eax` and `sub %eax,%eax` only clear.
        Mnemonic::Xor | Mnemonic::Sub
            if ins.op_count() == 2
                && ins.op0_kind() == OpKind::Register
                && ins.op1_kind() == OpKind::Register
                && ins.op0_register() == ins.op1_register() =>
        {
            (true, false)
        }
        Mnemonic::Imul if ins.op_count() == 3 => (true, false),
        Mnemonic::Imul if ins.op_count() == 2 => (true, true),
        Mnemonic::Add
        | Mnemonic::Sub
        | Mnemonic::And
        | Mnemonic::Or
        | Mnemonic::Xor
        | Mnemonic::Shl
        | Mnemonic::Shr
        | Mnemonic::Sar
        | Mnemonic::Not
        | Mnemonic::Neg
        | Mnemonic::Inc
        | Mnemonic::Dec
            if !ins.has_lock_prefix() =>
        {
            (true, true)
        }
        // Sign extensions of the accumulator.
        Mnemonic::Cdqe | Mnemonic::Cwde => {
            let rax = 1 << Register::RAX.number();
            return Some(Effect { reads: rax, writes: rax, full_writes: rax, loads: false });
        }
        _ => return None,
    };
    for op in 0..ins.op_count() {
        match ins.op_kind(op) {
            OpKind::Register => {
                let reg = ins.op_register(op);
                if !reg.is_gpr() {
                    return None;
                }
                let bit = 1u16 << reg.full_register().number();
                if op == 0 && writes_op0 {
                    e.writes |= bit;
                    if reg.size() >= 4 {
                        e.full_writes |= bit;
                    } else {
                        e.reads |= bit;
                    }
                    if reads_op0 {
                        e.reads |= bit;
                    }
                } else {
                    e.reads |= bit;
                }
            }
            OpKind::Memory => {
                if op == 0 && writes_op0 {
                    return None;
                }
                for reg in [ins.memory_base(), ins.memory_index()] {
                    if reg == Register::None || reg == Register::RIP {
                        continue;
                    }
                    if !reg.is_gpr() {
                        return None;
                    }
                    e.reads |= 1 << reg.full_register().number();
                }
                e.loads |= ins.mnemonic() != Mnemonic::Lea;
            }
            OpKind::Immediate8
            | OpKind::Immediate8_2nd
            | OpKind::Immediate16
            | OpKind::Immediate32
            | OpKind::Immediate64
            | OpKind::Immediate8to16
            | OpKind::Immediate8to32
            | OpKind::Immediate8to64
            | OpKind::Immediate32to64 => {}
            _ => return None,
        }
    }
    Some(e)
}
