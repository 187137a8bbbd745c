//! Classic BPF as seccomp runs it: the checks Linux makes before it accepts a filter
//! (`bpf_check_classic` and `seccomp_check_filter`: the instructions seccomp allows, loads of
//! `seccomp_data` words only, jumps inside the program, no division by a constant zero, no
//! shift by 32 or more, scratch memory read only after it was written on every path, a return
//! at the end), and an interpreter over a checked program.
//!
//! Written here rather than taken from a crate: the kernel is `no_std` and needs exactly
//! Linux's acceptance rules (a program Linux refuses must be refused with EINVAL), which the
//! BPF crates (for building filters on the host) do not check.

use crate::linux::errno::{Errno, EINVAL};

/// One instruction, as `struct sock_filter`.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

/// Linux's BPF_MAXINSNS.
pub const MAX_INSNS: usize = 4096;
/// `sizeof(struct seccomp_data)`: nr, arch, instruction_pointer, args[6].
pub const DATA_LEN: u32 = 64;
/// BPF_MEMWORDS.
const MEM_WORDS: u32 = 16;

// Instruction classes, sizes, modes and operations (linux/bpf_common.h).
const LD: u16 = 0x00;
const LDX: u16 = 0x01;
const ST: u16 = 0x02;
const STX: u16 = 0x03;
const ALU: u16 = 0x04;
const JMP: u16 = 0x05;
const RET: u16 = 0x06;
const MISC: u16 = 0x07;
const W: u16 = 0x00;
const IMM: u16 = 0x00;
const ABS: u16 = 0x20;
const MEM: u16 = 0x60;
const LEN: u16 = 0x80;
const K: u16 = 0x00;
const X: u16 = 0x08;
const RET_A: u16 = 0x10;
const ADD: u16 = 0x00;
const SUB: u16 = 0x10;
const MUL: u16 = 0x20;
const DIV: u16 = 0x30;
const OR: u16 = 0x40;
const AND: u16 = 0x50;
const LSH: u16 = 0x60;
const RSH: u16 = 0x70;
const NEG: u16 = 0x80;
const XOR: u16 = 0xa0;
const JA: u16 = 0x00;
const JEQ: u16 = 0x10;
const JGT: u16 = 0x20;
const JGE: u16 = 0x30;
const JSET: u16 = 0x40;
const TAX: u16 = 0x00;
const TXA: u16 = 0x80;

fn is_cond_jump(code: u16) -> bool {
    matches!(code, c if c & 0x07 == JMP && c & 0xf0 != JA)
}

/// Whether seccomp accepts opcode `code` at all (seccomp_check_filter's list).
fn allowed(code: u16) -> bool {
    const ALU_OPS: [u16; 9] = [ADD, SUB, MUL, DIV, AND, OR, XOR, LSH, RSH];
    match code {
        c if c == LD | W | ABS || c == LD | W | LEN || c == LDX | W | LEN => true,
        c if c == RET | K || c == RET | RET_A => true,
        c if c & 0x07 == ALU => c == ALU | NEG || ALU_OPS.iter().any(|&op| c == ALU | op | K || c == ALU | op | X),
        c if c == LD | IMM || c == LDX | IMM || c == LD | MEM || c == LDX | MEM || c == ST || c == STX => true,
        c if c == MISC | TAX || c == MISC | TXA => true,
        c if c == JMP | JA => true,
        c if c & 0x07 == JMP => [JEQ, JGT, JGE, JSET].iter().any(|&op| c == JMP | op | K || c == JMP | op | X),
        _ => false,
    }
}

/// Checks `prog` as Linux does before it attaches a seccomp filter; EINVAL if it would refuse it.
pub fn check(prog: &[Insn]) -> Result<(), Errno> {
    let len = prog.len();
    if len == 0 || len > MAX_INSNS {
        return Err(EINVAL);
    }
    for (pc, i) in prog.iter().enumerate() {
        if !allowed(i.code) {
            return Err(EINVAL);
        }
        let left = (len - pc - 1) as u64;
        let bad = match i.code {
            c if c == LD | W | ABS => i.k >= DATA_LEN || i.k % 4 != 0,
            c if c == ALU | DIV | K => i.k == 0,
            c if c == ALU | LSH | K || c == ALU | RSH | K => i.k >= 32,
            c if c == LD | MEM || c == LDX | MEM || c == ST || c == STX => i.k >= MEM_WORDS,
            c if c == JMP | JA => i.k as u64 >= left,
            c if is_cond_jump(c) => i.jt as u64 >= left || i.jf as u64 >= left,
            _ => false,
        };
        if bad {
            return Err(EINVAL);
        }
    }
    if !matches!(prog[len - 1].code, c if c == RET | K || c == RET | RET_A) {
        return Err(EINVAL);
    }
    check_scratch(prog)
}

/// No load from a scratch word that some path to it has not stored (check_load_and_stores).
fn check_scratch(prog: &[Insn]) -> Result<(), Errno> {
    let mut at_target = alloc::vec![u16::MAX; prog.len()];
    let mut valid: u16 = 0;
    for (pc, i) in prog.iter().enumerate() {
        valid &= at_target[pc];
        match i.code {
            c if c == ST || c == STX => valid |= 1 << i.k,
            c if (c == LD | MEM || c == LDX | MEM) && valid & (1 << i.k) == 0 => return Err(EINVAL),
            c if c == JMP | JA => {
                at_target[pc + 1 + i.k as usize] &= valid;
                valid = u16::MAX;
            }
            c if is_cond_jump(c) => {
                at_target[pc + 1 + i.jt as usize] &= valid;
                at_target[pc + 1 + i.jf as usize] &= valid;
                valid = u16::MAX;
            }
            _ => {}
        }
    }
    Ok(())
}

/// A checked instruction in the form the interpreter runs: one variant per operation and
/// operand kind, scratch and data indices reduced to words, jump targets made absolute. One
/// dispatch per instruction (the raw opcode took two or three, about 12 cycles an instruction;
/// filters of libseccomp's shape run 30-100 of them per call).
#[derive(Clone, Copy, Debug)]
enum Op {
    LdWord(u8),
    LdImm(u32),
    LdMem(u8),
    LdxImm(u32),
    LdxMem(u8),
    St(u8),
    Stx(u8),
    AluK(u16, u32),
    AluX(u16),
    Neg,
    Ja(u16),
    JeqK(u32, u16, u16),
    JgtK(u32, u16, u16),
    JgeK(u32, u16, u16),
    JsetK(u32, u16, u16),
    JeqX(u16, u16),
    JgtX(u16, u16),
    JgeX(u16, u16),
    JsetX(u16, u16),
    RetK(u32),
    RetA,
    Tax,
    Txa,
}

/// The length Linux gives checked program `prog` once it has converted it to eBPF
/// (`bpf_convert_filter`), which its limit on a chain's length counts: a 3-instruction
/// prologue; 2 for a return; for a conditional jump, 1 more when its constant is negative as
/// an i32 (moved to a register first), and 2 rather than 1 unless it falls through on false,
/// or on true for JEQ, JGT and JGE (then inverted); 4 for a division by X (the zero check);
/// 1 for anything else.
pub fn converted_len(prog: &[Insn]) -> usize {
    3 + prog
        .iter()
        .map(|i| match i.code {
            c if c & 0x07 == RET => 2,
            c if c == ALU | DIV | X => 4,
            c if is_cond_jump(c) => {
                let wide = (c & X == 0 && (i.k as i32) < 0) as usize;
                let one = i.jf == 0 || i.jt == 0 && matches!(c & 0xf0, JEQ | JGT | JGE);
                wide + if one { 1 } else { 2 }
            }
            _ => 1,
        })
        .sum::<usize>()
}

/// A program `check` accepted, in the interpreter's form (`compile`).
pub struct Program(alloc::vec::Vec<Op>);

impl Program {
    /// No program (strict mode's record has none; never run).
    pub fn empty() -> Program {
        Program(alloc::vec::Vec::new())
    }
}

/// Checks `prog` (`check`) and decodes it for `run`.
pub fn compile(prog: &[Insn]) -> Result<Program, Errno> {
    check(prog)?;
    Ok(Program(decode(prog)))
}

/// `prog`, which `check` accepted, in the interpreter's form.
fn decode(prog: &[Insn]) -> alloc::vec::Vec<Op> {
    prog.iter()
        .enumerate()
        .map(|(pc, i)| {
            let next = pc as u32 + 1;
            let (t, f) = ((next + i.jt as u32) as u16, (next + i.jf as u32) as u16);
            let word = (i.k / 4) as u8;
            let mem = i.k as u8;
            match i.code {
                c if c == LD | W | ABS => Op::LdWord(word),
                c if c == LD | W | LEN => Op::LdImm(DATA_LEN),
                c if c == LDX | W | LEN => Op::LdxImm(DATA_LEN),
                c if c == LD | IMM => Op::LdImm(i.k),
                c if c == LDX | IMM => Op::LdxImm(i.k),
                c if c == LD | MEM => Op::LdMem(mem),
                c if c == LDX | MEM => Op::LdxMem(mem),
                ST => Op::St(mem),
                STX => Op::Stx(mem),
                c if c == ALU | NEG => Op::Neg,
                c if c & 0x07 == ALU && c & X != 0 => Op::AluX(c & 0xf0),
                c if c & 0x07 == ALU => Op::AluK(c & 0xf0, i.k),
                c if c == JMP | JA => Op::Ja((next + i.k) as u16),
                c if c == JMP | JEQ | K => Op::JeqK(i.k, t, f),
                c if c == JMP | JGT | K => Op::JgtK(i.k, t, f),
                c if c == JMP | JGE | K => Op::JgeK(i.k, t, f),
                c if c == JMP | JSET | K => Op::JsetK(i.k, t, f),
                c if c == JMP | JEQ | X => Op::JeqX(t, f),
                c if c == JMP | JGT | X => Op::JgtX(t, f),
                c if c == JMP | JGE | X => Op::JgeX(t, f),
                c if c == JMP | JSET | X => Op::JsetX(t, f),
                c if c == RET | RET_A => Op::RetA,
                c if c == MISC | TXA => Op::Txa,
                c if c == MISC | TAX => Op::Tax,
                _ => Op::RetK(i.k), // RET | K, the only opcode left after `check`
            }
        })
        .collect()
}

/// `a` op `src` for an ALU operation (`op`: the opcode's operation bits); None for a division
/// by zero, which ends a classic BPF program with 0 on Linux.
fn alu(op: u16, a: u32, src: u32) -> Option<u32> {
    Some(match op {
        ADD => a.wrapping_add(src),
        SUB => a.wrapping_sub(src),
        MUL => a.wrapping_mul(src),
        DIV => a.checked_div(src)?,
        OR => a | src,
        AND => a & src,
        XOR => a ^ src,
        LSH => a.wrapping_shl(src),
        _ => a.wrapping_shr(src), // RSH, the only one left after `check`
    })
}

/// The next instruction after a conditional jump, as a branch rather than a select: filters
/// are mostly chains of compares that fall through, which the CPU then predicts, instead of
/// waiting for each compare before it can load the next instruction (7.3 -> 5.3 cycles an
/// instruction over a chain of 100 compares, measured).
#[inline(always)]
fn branch(taken: bool, t: u16, f: u16) -> usize {
    if taken {
        // An empty asm block keeps the compiler from turning the two arms into a select.
        // SAFETY: it does nothing.
        unsafe { core::arch::asm!("", options(nomem, nostack, preserves_flags)) };
        t as usize
    } else {
        f as usize
    }
}

/// Runs program `prog` over `data` (a `struct seccomp_data` as 16 words); its return value.
pub fn run(prog: &Program, data: &[u32; 16]) -> u32 {
    let prog = &prog.0;
    let (mut a, mut x) = (0u32, 0u32);
    let mut mem = [0u32; MEM_WORDS as usize];
    let mut pc = 0usize;
    loop {
        // SAFETY: `check` accepted the program: every jump lands inside it and its last
        // instruction returns, so `pc` never leaves it.
        let op = unsafe { *prog.get_unchecked(pc) };
        pc += 1;
        match op {
            Op::LdWord(w) => a = data[w as usize & 15],
            Op::LdImm(k) => a = k,
            Op::LdMem(m) => a = mem[m as usize & 15],
            Op::LdxImm(k) => x = k,
            Op::LdxMem(m) => x = mem[m as usize & 15],
            Op::St(m) => mem[m as usize & 15] = a,
            Op::Stx(m) => mem[m as usize & 15] = x,
            Op::AluK(o, k) => a = alu(o, a, k).unwrap_or(0),
            Op::AluX(o) => match alu(o, a, x) {
                Some(v) => a = v,
                None => return 0,
            },
            Op::Neg => a = a.wrapping_neg(),
            Op::Ja(t) => pc = t as usize,
            Op::JeqK(k, t, f) => pc = branch(a == k, t, f),
            Op::JgtK(k, t, f) => pc = branch(a > k, t, f),
            Op::JgeK(k, t, f) => pc = branch(a >= k, t, f),
            Op::JsetK(k, t, f) => pc = branch(a & k != 0, t, f),
            Op::JeqX(t, f) => pc = branch(a == x, t, f),
            Op::JgtX(t, f) => pc = branch(a > x, t, f),
            Op::JgeX(t, f) => pc = branch(a >= x, t, f),
            Op::JsetX(t, f) => pc = branch(a & x != 0, t, f),
            Op::RetK(k) => return k,
            Op::RetA => return a,
            Op::Tax => x = a,
            Op::Txa => a = x,
        }
    }
}
