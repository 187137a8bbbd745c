/* Vector state across thread switches: two threads share one CPU (run with --cpus 1) and keep
 * their own patterns in all 256 bits of ymm0-ymm15 while they give the CPU to each other:
 *   yield    through sched_yield (a system call keeps every register but rax, rcx, r11)
 *   preempt  by spinning until a timer interrupt preempts them (hrt run --preempt)
 * Every check must find its own pattern; a switch that saves only the SSE halves (FXSAVE)
 * hands each thread the other's upper halves. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum { ROUNDS = 200 };
static int mode_preempt;
static long wrong[2];

static void round_trip(const uint8_t *in, uint8_t *out) {
    __asm__ volatile(
        "vmovdqu 0(%0), %%ymm0\n vmovdqu 32(%0), %%ymm1\n vmovdqu 64(%0), %%ymm2\n vmovdqu 96(%0), %%ymm3\n"
        "vmovdqu 128(%0), %%ymm4\n vmovdqu 160(%0), %%ymm5\n vmovdqu 192(%0), %%ymm6\n vmovdqu 224(%0), %%ymm7\n"
        "vmovdqu 256(%0), %%ymm8\n vmovdqu 288(%0), %%ymm9\n vmovdqu 320(%0), %%ymm10\n vmovdqu 352(%0), %%ymm11\n"
        "vmovdqu 384(%0), %%ymm12\n vmovdqu 416(%0), %%ymm13\n vmovdqu 448(%0), %%ymm14\n vmovdqu 480(%0), %%ymm15\n"
        "cmpl $0, %2\n jne 2f\n"
        "mov $24, %%eax\n syscall\n jmp 3f\n"
        "2: mov $20000000, %%ecx\n 1: dec %%ecx\n jnz 1b\n"
        "3:\n"
        "vmovdqu %%ymm0, 0(%1)\n vmovdqu %%ymm1, 32(%1)\n vmovdqu %%ymm2, 64(%1)\n vmovdqu %%ymm3, 96(%1)\n"
        "vmovdqu %%ymm4, 128(%1)\n vmovdqu %%ymm5, 160(%1)\n vmovdqu %%ymm6, 192(%1)\n vmovdqu %%ymm7, 224(%1)\n"
        "vmovdqu %%ymm8, 256(%1)\n vmovdqu %%ymm9, 288(%1)\n vmovdqu %%ymm10, 320(%1)\n vmovdqu %%ymm11, 352(%1)\n"
        "vmovdqu %%ymm12, 384(%1)\n vmovdqu %%ymm13, 416(%1)\n vmovdqu %%ymm14, 448(%1)\n vmovdqu %%ymm15, 480(%1)\n"
        "vzeroupper\n"
        :
        : "r"(in), "r"(out), "m"(mode_preempt)
        : "rax", "rcx", "r11", "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
          "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

static void *worker(void *arg) {
    long id = (long)arg;
    uint8_t in[512], out[512];
    for (int r = 0; r < (mode_preempt ? 8 : ROUNDS); r++) {
        for (int i = 0; i < 512; i++)
            in[i] = (uint8_t)(id * 131 + r * 7 + i);
        round_trip(in, out);
        wrong[id] += memcmp(in, out, sizeof in) != 0;
    }
    return NULL;
}

int main(int argc, char **argv) {
    mode_preempt = argc > 1 && !strcmp(argv[1], "preempt");
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("rounds with a wrong ymm register: %ld\n", wrong[0] + wrong[1]);
    return 0;
}
