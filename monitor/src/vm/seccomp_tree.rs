//! The seccomp filter's program: a binary search over the allowed call numbers.
//!
//! Why not seccompiler's compiled filter (its `SeccompFilter`): it tests the call number
//! against each allowed call in turn, 1,042 instructions for the ~250 calls of `seccomp.rs`.
//! Linux runs a new filter once for every call number when a thread installs it (to learn
//! which calls it always allows) and compiles it to machine code: with the chain, each vCPU
//! and polling thread's install took ~1 ms of host CPU time, at every `hrt run` and in every
//! forked child, on the vCPU's way to its first KVM_RUN. The tree needs ~8 comparisons per
//! call number. seccompiler still installs it (`apply_filter`).
//!
//! Shape: check the architecture; load the call number; a tree whose inner nodes are
//! `jge pivot` and whose leaves test up to `LEAF` numbers each (`ret ALLOW` on a match), with
//! `ret TRAP` after each leaf; a call allowed only with some values of one argument (`ioctl`'s
//! requests, `prctl`'s options) jumps to a block that tests that argument.
//! Conditional jumps only ever skip one instruction (their offsets are 8 bits); the longer
//! ones are `ja`, whose offset is 32 bits.

use seccompiler::{sock_filter, BpfProgram};

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const JA: u16 = 0x05;
const RET_K: u16 = 0x06;

pub const RET_ALLOW: u32 = 0x7fff_0000;
pub const RET_TRAP: u32 = 0x0003_0000;
pub const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;

/// Offsets in `struct seccomp_data`: the call number, the architecture, and the low half of
/// the first argument (little-endian; 8 bytes each after it), which is all an `int` argument
/// (`ioctl`'s request, `prctl`'s option) is to the kernel.
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const OFF_ARG0_LOW: u32 = 16;

/// A call allowed only when its argument `arg` (0-5; its low 32 bits) is one of `values`.
pub struct Filtered {
    pub nr: i64,
    pub arg: u32,
    pub values: Vec<u64>,
}

/// Numbers a leaf tests one after the other.
const LEAF: usize = 4;

fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter { code, jt: 0, jf: 0, k }
}

/// `if A == k` run the next instruction, else skip it.
fn test_eq(k: u32) -> sock_filter {
    sock_filter { code: JEQ_K, jt: 0, jf: 1, k }
}

struct Program {
    code: Vec<sock_filter>,
    /// `ja` instructions that go to a filtered call's block (by its index), placed last.
    to_block: Vec<(usize, usize)>,
}

impl Program {
    /// Points the `ja` at `at` to the next instruction to be emitted.
    fn land(&mut self, at: usize) {
        self.code[at].k = (self.code.len() - at - 1) as u32;
    }

    fn tree(&mut self, numbers: &[u32], filtered: &[Filtered]) {
        if numbers.len() <= LEAF {
            for &nr in numbers {
                self.code.push(test_eq(nr));
                if let Some(block) = filtered.iter().position(|f| f.nr as u32 == nr) {
                    self.to_block.push((self.code.len(), block));
                    self.code.push(stmt(JA, 0));
                } else {
                    self.code.push(stmt(RET_K, RET_ALLOW));
                }
            }
            self.code.push(stmt(RET_K, RET_TRAP));
            return;
        }
        let (low, high) = numbers.split_at(numbers.len() / 2);
        // A >= high[0]: the `ja` to the upper half; else skip it to the lower half.
        self.code.push(sock_filter { code: JGE_K, jt: 0, jf: 1, k: high[0] });
        let jump = self.code.len();
        self.code.push(stmt(JA, 0));
        self.tree(low, filtered);
        self.land(jump);
        self.tree(high, filtered);
    }
}

/// The program that allows the calls `allowed` with any arguments and the `filtered` ones with
/// the values they list, and traps every other call and any other architecture.
pub fn compile(allowed: &[i64], filtered: &[Filtered]) -> BpfProgram {
    let mut numbers: Vec<u32> = allowed.iter().chain(filtered.iter().map(|f| &f.nr)).map(|&nr| nr as u32).collect();
    numbers.sort_unstable();
    numbers.dedup();
    let mut p = Program { code: Vec::new(), to_block: Vec::new() };
    p.code.push(stmt(LD_W_ABS, OFF_ARCH));
    p.code.push(sock_filter { code: JEQ_K, jt: 1, jf: 0, k: AUDIT_ARCH_X86_64 });
    p.code.push(stmt(RET_K, RET_TRAP));
    p.code.push(stmt(LD_W_ABS, OFF_NR));
    p.tree(&numbers, filtered);
    let jumps = std::mem::take(&mut p.to_block);
    for (block, f) in filtered.iter().enumerate() {
        for &(at, _) in jumps.iter().filter(|&&(_, b)| b == block) {
            p.land(at);
        }
        p.code.push(stmt(LD_W_ABS, OFF_ARG0_LOW + 8 * f.arg));
        for &value in &f.values {
            p.code.push(test_eq(value as u32));
            p.code.push(stmt(RET_K, RET_ALLOW));
        }
        p.code.push(stmt(RET_K, RET_TRAP));
    }
    p.code
}

#[cfg(test)]
/// Runs `prog` as the kernel would on a call (only the instructions `compile` emits) whose
/// arguments are all `arg`; also counts the instructions run.
pub(super) fn run(prog: &[sock_filter], nr: u32, arch: u32, arg: u64) -> (u32, usize) {
    let data = |off: u32| match off {
        OFF_NR => nr,
        OFF_ARCH => arch,
        off if off >= OFF_ARG0_LOW && (off - OFF_ARG0_LOW).is_multiple_of(8) && off < OFF_ARG0_LOW + 48 => arg as u32,
        _ => panic!("load at {off}"),
    };
    let (mut pc, mut a, mut steps) = (0usize, 0u32, 0);
    loop {
        let i = &prog[pc];
        steps += 1;
        pc += 1;
        match i.code {
            LD_W_ABS => a = data(i.k),
            JEQ_K => pc += if a == i.k { i.jt } else { i.jf } as usize,
            JGE_K => pc += if a >= i.k { i.jt } else { i.jf } as usize,
            JA => pc += i.k as usize,
            RET_K => return (i.k, steps),
            other => panic!("opcode {other:#x}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allows_exactly_the_listed_calls_and_requests() {
        let allowed: Vec<i64> = vec![0, 1, 3, 9, 10, 11, 39, 60, 202, 231, 435, 463];
        let (ioctl, requests) = (16, [0xae80u64, 0x5413, 0x8004_ae83]);
        let (prctl, options) = (157, [8u64, 24]);
        let prog = compile(
            &allowed,
            &[
                Filtered { nr: ioctl, arg: 1, values: requests.to_vec() },
                Filtered { nr: prctl, arg: 0, values: options.to_vec() },
            ],
        );
        for nr in 0..600u32 {
            let (got, _) = run(&prog, nr, AUDIT_ARCH_X86_64, 0x1234);
            let want = if allowed.contains(&(nr as i64)) { RET_ALLOW } else { RET_TRAP };
            assert_eq!(got, want, "call {nr}");
            assert_eq!(run(&prog, nr, AUDIT_ARCH_X86_64, 8).0, if nr == prctl as u32 { RET_ALLOW } else { want });
            // x32 calls (bit 30) and other architectures never pass.
            assert_eq!(run(&prog, nr | 0x4000_0000, AUDIT_ARCH_X86_64, 0).0, RET_TRAP);
            assert_eq!(run(&prog, nr, 0x4000_0003, 0).0, RET_TRAP, "i386 call {nr}");
        }
        for req in requests {
            assert_eq!(run(&prog, ioctl as u32, AUDIT_ARCH_X86_64, req).0, RET_ALLOW);
            // Only the low half counts, as for the kernel's ioctl.
            assert_eq!(run(&prog, ioctl as u32, AUDIT_ARCH_X86_64, req | 1 << 40).0, RET_ALLOW);
        }
        assert_eq!(run(&prog, ioctl as u32, AUDIT_ARCH_X86_64, 0x5414).0, RET_TRAP);
        for option in options {
            assert_eq!(run(&prog, prctl as u32, AUDIT_ARCH_X86_64, option).0, RET_ALLOW);
        }
        for option in [0u64, 1, 15, 38] {
            assert_eq!(run(&prog, prctl as u32, AUDIT_ARCH_X86_64, option).0, RET_TRAP, "prctl {option}");
        }
    }

    #[test]
    fn the_monitors_list_takes_few_steps() {
        let allowed: Vec<i64> = (0..470).filter(|n| n % 2 == 0).collect();
        let prog = compile(&allowed, &[Filtered { nr: 16, arg: 1, values: vec![1, 2, 3] }]);
        assert!(prog.len() < 4096, "{} instructions", prog.len());
        let worst = (0..470).map(|nr| run(&prog, nr, AUDIT_ARCH_X86_64, 0).1).max().unwrap();
        assert!(worst <= 30, "{worst} instructions for one call");
    }
}
