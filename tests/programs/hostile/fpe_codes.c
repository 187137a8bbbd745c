/* si_code of SIGFPE for each floating-point exception a program unmasks, SSE (MXCSR) and x87
 * (its control word), as Linux gives them: overflow FPE_FLTOVF, underflow FPE_FLTUND, invalid
 * FPE_FLTINV, division by zero FPE_FLTDIV, inexact FPE_FLTRES. HRT told only division by zero
 * from invalid, and SBCL and ECL raised the wrong condition for an overflow. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "handler.h"

static sigjmp_buf back;
static volatile int code;

static void on_fpe(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)uc;
    code = si->si_code;
    siglongjmp(back, 1);
}

volatile double big = 1.7976931348623157e308, tiny = 2.2250738585072014e-308, zero = 0.0, one = 1.0, three = 3.0;
volatile long double lbig = 1e4000L, lzero = 0.0L, lone = 1.0L, lthree = 3.0L;

/* Exception bits, the same in MXCSR's flags and masks (7 bits up) and the x87 words. */
enum { INV = 1, DIV = 4, OVF = 8, UND = 16, RES = 32 };

static void sse_unmask(unsigned bits) {
    unsigned m;
    __asm__ volatile("stmxcsr %0" : "=m"(m));
    m &= ~0x3fu;             /* no flag raised yet */
    m |= 0x1f80u;            /* all masked */
    m &= ~(bits << 7);       /* but these */
    __asm__ volatile("ldmxcsr %0" : : "m"(m));
}

static void x87_unmask(unsigned bits) {
    unsigned short cw;
    __asm__ volatile("fnclex");
    __asm__ volatile("fnstcw %0" : "=m"(cw));
    cw |= 0x3f;
    cw &= ~bits;
    __asm__ volatile("fldcw %0" : : "m"(cw));
}

static void run(const char *name, int x87, unsigned bits, int which) {
    if (sigsetjmp(back, 1) == 0) {
        volatile double r = 0;
        volatile long double lr = 0;
        if (x87)
            x87_unmask(bits);
        else
            sse_unmask(bits);
        switch (which) {
        case 0: r = big * 10.0; break;
        case 1: r = tiny / 1e10; break;
        case 2: r = zero / zero; break;
        case 3: r = one / zero; break;
        case 4: r = one / three; break;
        case 5: lr = lbig * lbig; lr = lr * 2; break;
        case 6: lr = lone / lzero; lr = lr * 2; break;
        case 7: lr = lzero / lzero; lr = lr * 2; break;
        case 8: lr = lone / lthree; lr = lr * 2; break;
        }
        (void)r, (void)lr;
        printf("%-8s no signal\n", name);
    } else {
        printf("%-8s si_code %d\n", name, code);
    }
    sse_unmask(0);
    x87_unmask(0);
}

int main(void) {
    set_info_handler(SIGFPE, on_fpe, SA_NODEFER);
    run("sse-ovf", 0, OVF, 0);
    run("sse-und", 0, UND, 1);
    run("sse-inv", 0, INV, 2);
    run("sse-div", 0, DIV, 3);
    run("sse-res", 0, RES, 4);
    run("sse-all", 0, OVF | RES, 0); /* overflow and inexact at once: overflow */
    run("x87-ovf", 1, OVF, 5);
    run("x87-div", 1, DIV, 6);
    run("x87-inv", 1, INV, 7);
    run("x87-res", 1, RES, 8);
    printf("done\n");
    return 0;
}
