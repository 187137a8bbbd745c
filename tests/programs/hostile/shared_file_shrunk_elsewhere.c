/* A MAP_SHARED file mapping whose file ANOTHER process shrinks (a forked child, which under
 * hrt is another hrt): calls with a buffer in a page past the new end fail with EFAULT (a
 * write from it, a read into it, an fstat into it, a writev whose iovec array lies there, a
 * nanosleep's timespec and a private futex word there, which HRT's kernel reads itself),
 * touching such a page raises SIGBUS (BUS_ADRERR, the address) on a read or a write, the
 * file's last page stays the file's, and once the child grows the file again the pages read
 * zero. One line per case, the same natively and under hrt.
 * Usage: shared_file_shrunk_elsewhere */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "touch_fault.h"

#define PAGE 4096

/* Touches `p` (a read, or a write of 1) and says what happened. */
static void touch(const char *what, char *base, volatile char *p, int write) {
    struct touched t = touch_at(p, write, 1);
    if (t.sig)
        printf("%s: signal %d code %d, address %s\n", what, t.sig, t.code,
               (char *)t.addr == (char *)p ? "right" : "wrong");
    else
        printf("%s: no signal, %s %d\n", what, write ? "wrote" : "read", write ? 1 : t.value);
    (void)base;
}

/* A forked child sizes the file to `size` and exits; the parent waits for it. */
static void child_truncates(int fd, off_t size) {
    pid_t pid = fork();
    if (pid < 0)
        exit(3);
    if (pid == 0)
        _exit(ftruncate(fd, size) == 0 ? 0 : 1);
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        exit(4);
}

/* What a call returned: the value, or -1 and the errno. */
static void said(const char *what, long ret) {
    printf("%s: %ld errno %d\n", what, ret, ret < 0 ? errno : 0);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    catch_touch_faults();
    char path[] = "/tmp/hrt-shrunk-elsewhere-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, 3 * PAGE) != 0)
        return 1;
    unlink(path);
    char *m = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return 2;
    memset(m, 7, 3 * PAGE);
    int pipefd[2];
    if (pipe(pipefd) != 0)
        return 5;

    child_truncates(fd, PAGE + 1);
    /* Calls first, before any touch: the monitor copies some of these buffers itself. */
    errno = 0;
    said("write from a gone page", write(pipefd[1], m + 2 * PAGE, 10));
    errno = 0;
    said("pread into a gone page", pread(fd, m + 2 * PAGE + 16, 1, 0));
    errno = 0;
    said("fstat into a gone page", fstat(fd, (struct stat *)(m + 2 * PAGE + 64)));
    errno = 0;
    said("writev with its iovec array in a gone page", writev(pipefd[1], (struct iovec *)(m + 2 * PAGE + 256), 1));
    /* The kernel's own calls, which read the buffer themselves. */
    errno = 0;
    said("nanosleep with its timespec in a gone page", nanosleep((struct timespec *)(m + 2 * PAGE + 512), NULL));
    errno = 0;
    said("a private futex wait on a gone page",
         syscall(SYS_futex, (int *)(m + 2 * PAGE + 1024), FUTEX_WAIT_PRIVATE, 1, NULL, NULL, 0));
    errno = 0;
    said("write from the file's last page", write(pipefd[1], m + PAGE, 1));
    touch("read past the new end", m, m + 2 * PAGE + 3, 0);
    touch("write past the new end", m, m + 2 * PAGE + 100, 1);
    touch("the file's last page, its first byte", m, m + PAGE, 0);
    touch("the tail of the file's last page", m, m + PAGE + 1, 0);
    touch("the first page", m, m + 5, 0);

    child_truncates(fd, 3 * PAGE);
    touch("grown again: a page past the old end", m, m + 2 * PAGE + 3, 0);
    touch("grown again: a write there", m, m + 2 * PAGE + 3, 1);
    char b = 0;
    said("the file holds that store", pread(fd, &b, 1, 2 * PAGE + 3));
    printf("it is %d\n", b);
    return 0;
}
