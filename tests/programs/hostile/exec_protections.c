/* Which memory runs as code, as on Linux (x86-64 with NX): a `ret` placed in a fresh
 * read-write mapping, on the stack, in the heap and in .data faults (SIGSEGV, SEGV_ACCERR);
 * in a PROT_EXEC mapping, after mprotect to read-execute and after mremap moves (and grows) an
 * executable mapping it runs. A read-only mapping moved by mremap stays read-only. With an
 * argument "stack" (a build with -z execstack) the stack runs code too. With the personality
 * READ_IMPLIES_EXEC (setarch -X) mmap and mprotect with PROT_READ make code. One line per case. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <unistd.h>

#include "handler.h"

static sigjmp_buf env;
static volatile int code;

static void on_segv(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    code = si->si_code;
    siglongjmp(env, 1);
}

static unsigned char data_page[64];

/* Calls a `ret` written at `p` (writable now, or written by the caller). */
static void run(const char *what, unsigned char *p, int write_it) {
    if (write_it)
        p[0] = 0xc3;
    printf("%-36s ", what);
    if (sigsetjmp(env, 1) == 0) {
        ((void (*)(void))p)();
        printf("runs\n");
    } else {
        printf("SIGSEGV code %d\n", code);
    }
}

static void write_to(const char *what, volatile unsigned char *p) {
    printf("%-36s ", what);
    if (sigsetjmp(env, 1) == 0) {
        p[0] = 1;
        printf("written\n");
    } else {
        printf("SIGSEGV code %d\n", code);
    }
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    set_info_handler(SIGSEGV, on_segv, SA_NODEFER);
    long pg = sysconf(_SC_PAGESIZE);

    unsigned char *rw = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    run("read-write mapping", rw, 1);
    unsigned char stack[64];
    run("stack", stack, 1);
    unsigned char *heap = malloc(64);
    run("heap", heap, 1);
    run(".data", data_page, 1);

    unsigned char *rwx = mmap(NULL, pg, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    run("read-write-execute mapping", rwx, 1);
    rw[0] = 0xc3;
    mprotect(rw, pg, PROT_READ | PROT_EXEC);
    run("mprotect to read-execute", rw, 0);
    mprotect(rw, pg, PROT_READ | PROT_WRITE);
    run("mprotect back to read-write", rw, 0);

    unsigned char *code_map = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    code_map[0] = 0xc3;
    mprotect(code_map, pg, PROT_READ | PROT_EXEC);
    unsigned char *moved = mremap(code_map, pg, 64 * pg, MREMAP_MAYMOVE);
    run("executable mapping after mremap", moved, 0);

    unsigned char *ro = mmap(NULL, pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *ro_moved = mremap(ro, pg, 64 * pg, MREMAP_MAYMOVE);
    write_to("read-only mapping after mremap", ro_moved);

    /* setarch -X: PROT_READ implies PROT_EXEC for mmap and mprotect from now on. */
    personality(READ_IMPLIES_EXEC);
    unsigned char *implied = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    run("READ_IMPLIES_EXEC: read-write mapping", implied, 1);
    mprotect(rw, pg, PROT_READ | PROT_WRITE);
    run("READ_IMPLIES_EXEC: mprotect read-write", rw, 1);
    personality(0);

    if (argc > 1 && strcmp(argv[1], "stack") == 0) {
        unsigned char more[64];
        run("stack (-z execstack)", more, 1);
    }
    printf("done\n");
    return 0;
}
