/* Guest side of the PVM probe: 64-bit ring-0 snippets loaded at GPA 0x10000. The host sets RIP to
 * one of them with arguments in registers; each reports through `out 0x500` (the host reads RAX). */
.intel_syntax noprefix
.code64
.globl _start
_start:
loop_test:                 /* +0x000: RCX iterations of dec/jnz; RAX = TSC cycles taken */
  rdtsc
  shl rdx, 32
  or rax, rdx
  mov r8, rax
1: dec rcx
  jnz 1b
  rdtsc
  shl rdx, 32
  or rax, rdx
  sub rax, r8
  mov dx, 0x500
  out dx, eax
  hlt
.org 0x100
wrmsr_test:                /* +0x100: WRMSR ECX := RAX; reports RAX if it did not fault */
  mov rdx, rax
  shr rdx, 32
  wrmsr
  mov dx, 0x500
  out dx, eax
  hlt
.org 0x300
cpuid_test:                /* +0x300: the PVM specification's synthetic CPUID of leaf EAX; EBX -> R9 */
  .byte 0x0f, 0x01, 0x3c, 0x25, 0x50, 0x56, 0x4d, 0xff   /* invlpg 0xffffffffff4d5650 */
  cpuid
  mov r9, rbx
  mov r10, rcx
  mov r11, rdx
  mov dx, 0x500
  out dx, eax
  hlt
