/* A MAP_SHARED file mapping longer than its file: the page holding the end of the file is
 * the file's (its tail reads zero), the pages after it raise SIGBUS (BUS_ADRERR, the address)
 * on a read or a write, also after mprotect, and a call with a buffer there fails with EFAULT;
 * once the file grows over a page, the page is the file's; munmap gives them back. MAP_HUGETLB
 * of a file outside hugetlbfs is EINVAL. A file that shrinks under its mapping (ftruncate,
 * truncate, an open with O_TRUNC) raises SIGBUS past its new end (a write() from there is
 * EFAULT), and reads zero there once it grows again. One line per case, the same natively and under hrt.
 * Usage: shared_file_end */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "touch_fault.h"

#define PAGE 4096

/* Touches `p` (a read, or a write of 1) and says what happened. */
static void touch(const char *what, char *base, volatile char *p, int write) {
    struct touched t = touch_at(p, write, 1);
    if (t.sig)
        printf("%s: signal %d code %d at base+%ld\n", what, t.sig, t.code, (long)((char *)t.addr - base));
    else
        printf("%s: no signal, %s %d\n", what, write ? "wrote" : "read", write ? 1 : t.value);
}

/* A file with a name, three pages long and mapped whole, shrinks under the mapping. */
static void shrink(void) {
    char path[] = "/tmp/hrt-file-shrink-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, 3 * PAGE) != 0)
        exit(4);
    char *m = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        exit(5);
    memset(m, 7, 3 * PAGE);
    ftruncate(fd, PAGE + 1);
    touch("ftruncate shrank the file: its last page", m, m + PAGE + 1, 0);
    touch("ftruncate shrank the file: read past the new end", m, m + 2 * PAGE + 3, 0);
    touch("ftruncate shrank the file: write past the new end", m, m + 2 * PAGE, 1);
    int pipefd[2];
    if (pipe(pipefd) != 0)
        exit(6);
    errno = 0;
    ssize_t n = write(pipefd[1], m + 2 * PAGE, 10);
    printf("ftruncate shrank the file: write from past the new end: %zd errno %d\n", n, n < 0 ? errno : 0);
    n = write(pipefd[1], m + PAGE, 1);
    printf("ftruncate shrank the file: write from its last page: %zd\n", n);
    close(pipefd[0]);
    close(pipefd[1]);
    truncate(path, 10);
    touch("truncate shrank the file: read past the new end", m, m + PAGE + 8, 0);
    touch("truncate shrank the file: its bytes stay", m, m + 9, 0);
    ftruncate(fd, 3 * PAGE);
    touch("grown again: a page past the old end reads zero", m, m + 2 * PAGE + 3, 0);
    touch("grown again: the tail of the kept page reads zero", m, m + 100, 0);
    int again = open(path, O_RDWR | O_TRUNC);
    touch("an open with O_TRUNC emptied the file", m, m + 5, 1);
    printf("that open: %s\n", again >= 0 ? "opened" : "failed");
    unlink(path);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    catch_touch_faults();
    char path[] = "/tmp/hrt-file-end-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, PAGE + 100) != 0)
        return 1;
    unlink(path);
    char *m = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return 2;
    touch("first page", m, m + 10, 1);
    touch("end of the file's last page", m, m + 2 * PAGE - 1, 0);
    touch("read past the end", m, m + 2 * PAGE + 8, 0);
    touch("write past the end", m, m + 3 * PAGE + 16, 1);
    mprotect(m, 4 * PAGE, PROT_READ);
    touch("read past the end after mprotect", m, m + 2 * PAGE, 0);
    touch("write past the end, read-only", m, m + 3 * PAGE + 8, 1);
    mprotect(m + 3 * PAGE, PAGE, PROT_NONE);
    touch("read past the end, PROT_NONE", m, m + 3 * PAGE + 8, 0);
    mprotect(m, 4 * PAGE, PROT_READ | PROT_WRITE);
    touch("write past the end after mprotect", m, m + 3 * PAGE, 1);
    errno = 0;
    ssize_t n = pread(fd, m + 2 * PAGE, 10, 0);
    printf("pread into a page past the end: %zd errno %d\n", n, n < 0 ? errno : 0);
    char buf[8] = {0};
    n = pread(fd, buf, 1, 10);
    printf("the file holds the first store: %zd %d\n", n, buf[0]);
    /* The file grows over the third page: it is the file's now; the fourth is still past. */
    if (ftruncate(fd, 3 * PAGE) != 0)
        return 3;
    touch("write to a page the file grew over", m, m + 2 * PAGE + 5, 1);
    n = pread(fd, buf, 1, 2 * PAGE + 5);
    printf("the file holds that store: %zd %d\n", n, buf[0]);
    touch("read past the new end", m, m + 3 * PAGE + 4, 0);
    munmap(m + 2 * PAGE, 2 * PAGE);
    char *again = mmap(m + 2 * PAGE, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    touch("private memory there after munmap", m, again + 8, 0);
    /* MAP_HUGETLB of a file outside hugetlbfs is EINVAL (MPICH tries it first). */
    errno = 0;
    char *h = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_HUGETLB, fd, 0);
    printf("MAP_HUGETLB of a file: %s errno %d\n", h == MAP_FAILED ? "failed" : "mapped", errno);
    /* A read-only descriptor's mapping, one page short of its file, ends the same way. */
    int ro = open("/proc/self/exe", O_RDONLY);
    off_t size = lseek(ro, 0, SEEK_END);
    size_t len = ((size + PAGE - 1) / PAGE + 1) * PAGE;
    char *r = mmap(NULL, len, PROT_READ, MAP_SHARED, ro, 0);
    touch("read-only file, its last page", r, r + len - PAGE - 1, 0);
    touch("read-only file, past its end", r, r + len - PAGE, 0);
    shrink();
    return 0;
}
