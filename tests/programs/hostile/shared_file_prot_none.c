/* A shared file mapping whose pages have their own protections (read-write, read-only,
 * PROT_NONE) when the file shrinks, grows and shrinks again, and in a forked child: each touch
 * faults as Linux's (SIGSEGV with SEGV_ACCERR where the protection forbids it, checked first;
 * SIGBUS past the end of the file). Until stop 98 a PROT_NONE page past the end gave SIGBUS
 * (the mapping kept one protection). Prints each touch's signal and code; the same on any
 * machine. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
static sigjmp_buf jb; static volatile int sig, code;
static void h(int s, siginfo_t *si, void *u) { (void)u; sig = s; code = si->si_code; siglongjmp(jb, 1); }
static void touch(const char *w, volatile unsigned char *p, int write) {
    sig = code = 0;
    if (sigsetjmp(jb, 1) == 0) { if (write) *p = 1; else (void)*p; }
    printf("%s: sig %d code %d\n", w, sig, code);
}
int main(void) {
    struct sigaction sa = {0}; sa.sa_sigaction = h; sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, 0); sigaction(SIGBUS, &sa, 0);
    char path[] = "/tmp/hrt-shared-file-XXXXXX"; int fd = mkstemp(path); unlink(path);
    ftruncate(fd, 4 * 4096);
    unsigned char *a = mmap(0, 4 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    mprotect(a + 3 * 4096, 4096, PROT_NONE);
    mprotect(a + 2 * 4096, 4096, PROT_READ);
    ftruncate(fd, 4096);
    touch("page 1 read (past EOF)", a + 4096, 0);
    touch("page 2 write (read-only, past EOF)", a + 2 * 4096, 1);
    touch("page 2 read (read-only, past EOF)", a + 2 * 4096, 0);
    touch("page 3 read (PROT_NONE, past EOF)", a + 3 * 4096, 0);
    ftruncate(fd, 4 * 4096);
    touch("grown: page 3 read (PROT_NONE)", a + 3 * 4096, 0);
    touch("grown: page 2 write (read-only)", a + 2 * 4096, 1);
    touch("grown: page 1 write", a + 4096, 1);
    ftruncate(fd, 4096);
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) { touch("child: page 1 read (past EOF)", a + 4096, 0); touch("child: page 3 read (PROT_NONE)", a + 3 * 4096, 0); fflush(stdout); _exit(0); }
    waitpid(c, 0, 0);
    return 0;
}
