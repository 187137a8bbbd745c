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

/// Runs checked program `prog` over `data` (a `struct seccomp_data`); its return value.
pub fn run(prog: &[Insn], data: &[u8; DATA_LEN as usize]) -> u32 {
    let (mut a, mut x) = (0u32, 0u32);
    let mut mem = [0u32; MEM_WORDS as usize];
    let mut pc = 0usize;
    loop {
        let i = prog[pc];
        pc += 1;
        let src = if i.code & X != 0 { x } else { i.k };
        match i.code & 0x07 {
            LD => {
                a = match i.code & 0xe0 {
                    ABS => u32::from_le_bytes(data[i.k as usize..i.k as usize + 4].try_into().unwrap()),
                    LEN => DATA_LEN,
                    MEM => mem[i.k as usize],
                    _ => i.k,
                }
            }
            LDX => {
                x = match i.code & 0xe0 {
                    LEN => DATA_LEN,
                    MEM => mem[i.k as usize],
                    _ => i.k,
                }
            }
            ST => mem[i.k as usize] = a,
            STX => mem[i.k as usize] = x,
            ALU => {
                a = match i.code & 0xf0 {
                    ADD => a.wrapping_add(src),
                    SUB => a.wrapping_sub(src),
                    MUL => a.wrapping_mul(src),
                    // Linux's classic BPF ends the program with 0 on a division by X = 0.
                    DIV if src == 0 => return 0,
                    DIV => a / src,
                    OR => a | src,
                    AND => a & src,
                    XOR => a ^ src,
                    LSH => a.wrapping_shl(src),
                    RSH => a.wrapping_shr(src),
                    _ => a.wrapping_neg(), // NEG, the only other one checked
                }
            }
            JMP => {
                let taken = match i.code & 0xf0 {
                    JA => {
                        pc += i.k as usize;
                        continue;
                    }
                    JEQ => a == src,
                    JGT => a > src,
                    JGE => a >= src,
                    _ => a & src != 0, // JSET
                };
                pc += if taken { i.jt } else { i.jf } as usize;
            }
            RET => return if i.code & RET_A != 0 { a } else { i.k },
            _ => {
                if i.code & 0xf8 == TXA {
                    a = x;
                } else {
                    x = a; // TAX
                }
            }
        }
    }
}
