//! Whether an interrupted program sits in a spin-wait loop that has no PAUSE: a short loop
//! that only reads memory and tests what it read, as compilers emit for `while (flag == 0);`
//! on a volatile or atomic flag (NPB LU's pipeline, hand-written flags, `!$omp flush` loops).
//! Such a loop keeps no state of its own: every round reads the same addresses, so only
//! another thread's store can end it. A loop that computes (writes a register from anything
//! but a load, writes memory, calls) or walks memory (a loaded register feeds an address) is
//! not one. `pause::near` finds the loops that do have a PAUSE.

use iced_x86::{Decoder, DecoderOptions, FlowControl, Instruction, Mnemonic, OpKind, Register};

/// The longest loop recognised, in bytes (spin loops are a handful of instructions).
const MAX_LOOP: u64 = 48;
/// How many instructions after the interrupted one may come before the loop's back branch.
const MAX_AHEAD: usize = 8;

/// True if `rip` lies in a spin-wait loop without PAUSE (see the module comment). Reads only
/// inside `rip`'s page, through fault probes (another thread may unmap the code meanwhile).
pub fn encloses(rip: u64) -> bool {
    let page = rip & !0xfff;
    let lo = rip.saturating_sub(MAX_LOOP).max(page) & !7;
    let hi = (rip + MAX_LOOP + 16).min(page + 0x1000);
    let mut bytes = [0u8; 2 * MAX_LOOP as usize + 32];
    let Some(len) = super::pause::copy_code(lo, hi, &mut bytes) else { return false };
    let code = &bytes[..len];
    let Some((start, end)) = back_branch(code, lo, rip) else { return false };
    only_waits(code, lo, start, end, rip)
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

/// Whether the instructions from `start` to `end` (the back branch's end) only read memory,
/// compare, fence and branch, with no register they load used as an address, and decode
/// through `rip` on an instruction boundary.
fn only_waits(code: &[u8], lo: u64, start: u64, end: u64, rip: u64) -> bool {
    let mut decoder = Decoder::with_ip(64, &code[(start - lo) as usize..], start, DecoderOptions::NONE);
    let mut ins = Instruction::default();
    let mut written: [Register; 8] = [Register::None; 8];
    let mut written_count = 0;
    let mut addressing: [Register; 16] = [Register::None; 16];
    let mut addressing_count = 0;
    let mut loads = false;
    let mut through_rip = false;
    while decoder.can_decode() && decoder.ip() < end {
        through_rip |= decoder.ip() == rip;
        decoder.decode_out(&mut ins);
        if ins.is_invalid() {
            return false;
        }
        for op in 0..ins.op_count() {
            if ins.op_kind(op) == OpKind::Memory {
                loads = true;
                for reg in [ins.memory_base(), ins.memory_index()] {
                    if reg != Register::None && reg != Register::RIP && addressing_count < addressing.len() {
                        addressing[addressing_count] = reg.full_register();
                        addressing_count += 1;
                    }
                }
            }
        }
        match ins.mnemonic() {
            // A load into a register: the loop's only state.
            Mnemonic::Mov | Mnemonic::Movzx | Mnemonic::Movsx | Mnemonic::Movsxd => {
                if ins.op0_kind() != OpKind::Register
                    || ins.op1_kind() != OpKind::Memory
                    || written_count == written.len()
                {
                    return false;
                }
                written[written_count] = ins.op0_register().full_register();
                written_count += 1;
            }
            Mnemonic::Cmp | Mnemonic::Test | Mnemonic::Pause | Mnemonic::Nop | Mnemonic::Lfence | Mnemonic::Mfence => {}
            // `lock or $0, (%rsp)`: gcc's full fence (`!$omp flush`, `__sync_synchronize`); it
            // rewrites a stack word with its own value.
            Mnemonic::Or
                if ins.has_lock_prefix()
                    && ins.op0_kind() == OpKind::Memory
                    && ins.memory_base() == Register::RSP
                    && ins.memory_index() == Register::None
                    && ins.try_immediate(1).is_ok_and(|v| v == 0) => {}
            _ if matches!(ins.flow_control(), FlowControl::ConditionalBranch | FlowControl::UnconditionalBranch) => {}
            _ => return false,
        }
    }
    let ends_exactly = decoder.ip() == end;
    let walks = written[..written_count].iter().any(|w| addressing[..addressing_count].contains(w));
    ends_exactly && through_rip && loads && !walks
}
