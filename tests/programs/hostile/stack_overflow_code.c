// A stack overflow caught on an alternate signal stack: the handler prints the signal and its
// si_code. Past the main stack (argv[1] "main") Linux says SEGV_MAPERR (nothing is mapped in the
// gap below a stack); in a thread's guard page ("thread"; glibc maps it PROT_NONE) SEGV_ACCERR.
// Compared with the native run.
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *code_name(int code) {
    switch (code) {
    case SEGV_MAPERR:
        return "SEGV_MAPERR";
    case SEGV_ACCERR:
        return "SEGV_ACCERR";
    default:
        return "other";
    }
}

static void on_segv(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    char line[96];
    int n = snprintf(line, sizeof line, "caught signal %d, si_code %d (%s)\n", sig, si->si_code, code_name(si->si_code));
    write(1, line, n);
    _exit(0);
}

// Installs on_segv on an alternate stack of the calling thread.
static void catch_on_altstack(void) {
    stack_t ss = {.ss_sp = malloc(64 << 10), .ss_size = 64 << 10, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0)
        perror("sigaltstack");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, NULL);
}

// Far more frames than any stack holds (a bound only so that gcc sees an end).
static volatile long depth_limit = 1L << 40;

// Each frame writes both ends of a 1 KiB buffer, so no frame jumps over a guard page.
__attribute__((noinline)) static int recurse(long n) {
    volatile char buf[1024];
    buf[0] = (char)n;
    buf[sizeof buf - 1] = (char)n;
    if (n >= depth_limit)
        return 0;
    return recurse(n + 1) + buf[0];
}

static void *thread_main(void *arg) {
    catch_on_altstack();
    recurse(0);
    return arg;
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "main";
    printf("%s: recursing\n", c);
    fflush(stdout);
    if (!strcmp(c, "thread")) {
        pthread_t t;
        pthread_create(&t, NULL, thread_main, NULL);
        pthread_join(t, NULL);
    } else {
        catch_on_altstack();
        recurse(0);
    }
    puts("survived (wrong)");
    return 1;
}
