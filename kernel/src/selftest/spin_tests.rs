//! The shapes of loop that `arch::spin_loop` takes for spin-waits, and those it must not.

use super::TestResult;
use alloc::format;

/// A few instructions, alone in a 64-byte block (a block never straddles a page: the check
/// reads only the interrupted instruction's page).
#[repr(align(64))]
struct Code([u8; 64]);

const fn code<const N: usize>(bytes: [u8; N]) -> Code {
    let mut block = [0xccu8; 64];
    let mut i = 0;
    while i < N {
        block[i] = bytes[i];
        i += 1;
    }
    Code(block)
}

// mov (%rax),%edx; test %edx,%edx; je back (NPB LU's `do while (iv .eq. 0)`).
static LOAD_TEST: Code = code([0x8b, 0x10, 0x85, 0xd2, 0x74, 0xfa]);
// mov (%rax),%edx; lock orq $0,(%rsp); test %edx,%edx; je back (a flush in the loop).
static WITH_FENCE: Code = code([0x8b, 0x10, 0xf0, 0x48, 0x83, 0x0c, 0x24, 0x00, 0x85, 0xd2, 0x74, 0xf4]);
// add $1,%rcx; cmp %rdx,%rcx; jne back (counts: ends by itself).
static COUNTS: Code = code([0x48, 0x83, 0xc1, 0x01, 0x48, 0x39, 0xd1, 0x75, 0xf7]);
// mov (%rax),%rax; test %rax,%rax; jne back (walks a list: ends by itself).
static WALKS: Code = code([0x48, 0x8b, 0x00, 0x48, 0x85, 0xc0, 0x75, 0xf8]);
// mov %ecx,(%rdi); mov (%rax),%edx; test %edx,%edx; je back (stores: not only waiting).
static STORES: Code = code([0x89, 0x0f, 0x8b, 0x10, 0x85, 0xd2, 0x74, 0xf8]);
// mov 0x40(%r10),%ecx; imul %eax,%ecx; add %r9d,%ecx; shl $4,%ecx; movslq %ecx,%rcx;
// mov (%rdx,%rcx,4),%ecx; cmp %ecx,%edi; jne back (PRK p2p's wait for its neighbour's flag:
// the index computed each round from a shared variable read again).
static COMPUTED_ADDRESS: Code = code([
    0x41, 0x8b, 0x4a, 0x40, 0x0f, 0xaf, 0xc8, 0x44, 0x01, 0xc9, 0xc1, 0xe1, 0x04, 0x48, 0x63, 0xc9, 0x8b, 0x0c, 0x8a,
    0x39, 0xcf, 0x75, 0xe9,
]);
// mov (%rax),%edx; add %edx,%ecx; test %edx,%edx; je back (adds up what it reads: keeps state).
static ACCUMULATES: Code = code([0x8b, 0x10, 0x01, 0xd1, 0x85, 0xd2, 0x74, 0xf8]);
// mov (%rax),%edx; test %edx,%edx; ret (no loop).
static NO_LOOP: Code = code([0x8b, 0x10, 0x85, 0xd2, 0xc3]);

pub fn spin_loop_shapes() -> TestResult {
    let at = |c: &Code, offset: u64| c.0.as_ptr() as u64 + offset;
    let cases = [
        ("load-test-branch, at the load", at(&LOAD_TEST, 0), true),
        ("load-test-branch, at the test", at(&LOAD_TEST, 2), true),
        ("load-test-branch, at the branch", at(&LOAD_TEST, 4), true),
        ("with a lock-or fence", at(&WITH_FENCE, 2), true),
        ("address computed from a load, at the imul", at(&COMPUTED_ADDRESS, 4), true),
        ("address computed from a load, at the flag's load", at(&COMPUTED_ADDRESS, 16), true),
        ("counting loop", at(&COUNTS, 4), false),
        ("accumulating loop", at(&ACCUMULATES, 2), false),
        ("list walk", at(&WALKS, 3), false),
        ("loop with a store", at(&STORES, 2), false),
        ("no loop", at(&NO_LOOP, 2), false),
    ];
    for (what, rip, want) in cases {
        if crate::arch::spin_loop::encloses(rip) != want {
            return Err(format!("{what}: spin-wait {} expected", if want { "" } else { "not" }));
        }
    }
    kprintln!("  {} loop shapes", cases.len());
    Ok(())
}
