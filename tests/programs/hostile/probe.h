// Touching memory that may fault, without dying of it: a SIGSEGV handler that notes si_code and
// whether si_addr is the address touched, and siglongjmps back to the probe. Also the program's
// own program headers (the first object dl_iterate_phdr reports).
#ifndef HOSTILE_PROBE_H
#define HOSTILE_PROBE_H
#define _GNU_SOURCE
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static sigjmp_buf probe_env;
static volatile uintptr_t probe_expected;
static volatile int probe_code, probe_addr_ok;

static void probe_on_segv(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    probe_code = si->si_code;
    probe_addr_ok = (uintptr_t)si->si_addr == probe_expected;
    siglongjmp(probe_env, 1);
}

// Sends SIGSEGV to probe_on_segv.
static void probe_setup(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = probe_on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
}

// What touching `p` does: "ok" or "SIGSEGV si_code N addr ok|wrong".
static void probe(const char *what, volatile unsigned char *p, int write) {
    probe_expected = (uintptr_t)p;
    printf("%s %s: ", what, write ? "write" : "read");
    fflush(stdout);
    if (sigsetjmp(probe_env, 1) == 0) {
        unsigned char v = *p;
        if (write)
            *p = v; // the same byte: harmless where it succeeds
        printf("ok\n");
    } else {
        printf("SIGSEGV si_code %d addr %s\n", probe_code, probe_addr_ok ? "ok" : "wrong");
    }
}

struct phdrs {
    ElfW(Addr) base;
    const ElfW(Phdr) * phdr;
    int n;
};

static int probe_first_object(struct dl_phdr_info *info, size_t size, void *out) {
    (void)size;
    struct phdrs *p = out;
    p->base = info->dlpi_addr;
    p->phdr = info->dlpi_phdr;
    p->n = info->dlpi_phnum;
    return 1; // the program itself comes first
}

// The program's own program headers and load base.
__attribute__((unused)) static struct phdrs own_phdrs(void) {
    struct phdrs ph = {0};
    dl_iterate_phdr(probe_first_object, &ph);
    return ph;
}
#endif
