// memfd_create (it was ENOSYS) with a shared mapping seen through the descriptor and a
// forked child, its name under /proc/self/fd; fallocate, sync and syncfs (ENOSYS; `sync`,
// `fallocate`); mlock, mlock2, munlock, mlockall, munlockall (ENOSYS; gpg's secure memory) and
// their error cases. Compared with the native run.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHOW_WIDTH 34
#include "show.h"

int main(void) {
    int fd = memfd_create("hrt-test", MFD_CLOEXEC);
    printf("memfd ok %d cloexec %d\n", fd >= 0, fcntl(fd, F_GETFD) == FD_CLOEXEC);
    char path[64], link[128];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, link, sizeof link - 1);
    printf("name %.*s\n", (int)(n < 0 ? 0 : n), link);
    show("ftruncate", ftruncate(fd, 8192));
    char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    printf("mmap ok %d\n", m != MAP_FAILED);
    strcpy(m, "written through the mapping");
    char buf[64] = {0};
    pread(fd, buf, 27, 0);
    printf("read back: %s\n", buf);
    if (fork() == 0) {
        strcpy(m + 4096, "from the child");
        _exit(0);
    }
    wait(NULL);
    printf("child's write: %s\n", m + 4096);
    show("memfd, 280-byte name", memfd_create("0123456789012345678901234567890123456789012345678901234567890123456789"
                                              "0123456789012345678901234567890123456789012345678901234567890123456789"
                                               "0123456789012345678901234567890123456789012345678901234567890123456789"
                                               "0123456789012345678901234567890123456789012345678901234567890123456789"
                                               "0123456789",
                                               0));
    show("memfd, bad flags", memfd_create("x", 0x1000));
    show("memfd, bad name pointer", syscall(SYS_memfd_create, (char *)8, 0));
    show("memfd, MFD_ALLOW_SEALING", memfd_create("sealed", MFD_ALLOW_SEALING) >= 0);

    // A memory file sealed against writes maps shared read-only (a compositor's keymap, as
    // Wayland clients map it), never writable.
    int seals[] = {F_SEAL_WRITE, F_SEAL_FUTURE_WRITE};
    for (int i = 0; i < 2; i++) {
        int seal = seals[i];
        int m = memfd_create("keymap", MFD_ALLOW_SEALING);
        write(m, "keymap", 6);
        show("add the write seal", fcntl(m, F_ADD_SEALS, seal));
        char *ro = mmap(NULL, 4096, PROT_READ, MAP_SHARED, m, 0);
        printf("sealed, read-only shared map reads: %.6s\n", ro == MAP_FAILED ? "(none)" : ro);
        show("sealed, make it writable", ro == MAP_FAILED ? -1 : mprotect(ro, 4096, PROT_READ | PROT_WRITE));
        show("sealed, writable shared map", mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0) != MAP_FAILED);
        close(m);
    }

    char file[] = "/tmp/hrt-space-XXXXXX";
    int f = mkstemp(file);
    show("fallocate 1 MiB", fallocate(f, 0, 0, 1 << 20));
    struct stat st;
    fstat(f, &st);
    printf("size %ld\n", (long)st.st_size);
    show("fallocate KEEP_SIZE", fallocate(f, FALLOC_FL_KEEP_SIZE, 1 << 20, 4096));
    show("fallocate bad mode", fallocate(f, 0x1000, 0, 10));
    show("fallocate negative length", fallocate(f, 0, 0, -1));
    show("fallocate bad descriptor", fallocate(99, 0, 0, 10));
    unlink(file);
    sync();
    show("syncfs", syncfs(f));
    show("syncfs bad descriptor", syncfs(99));
    close(f);

    char *page = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    show("mlock", mlock(page, 4096));
    show("mlock unaligned", mlock(page + 100, 5000));
    show("munlock", munlock(page, 4096));
    show("mlock2 ONFAULT", syscall(SYS_mlock2, page, 4096, 1));
    show("mlock2 bad flags", syscall(SYS_mlock2, page, 4096, 2));
    munmap(page + 4096, 4096);
    show("mlock over a hole", mlock(page, 3 * 4096));
    show("mlockall(CURRENT)", mlockall(MCL_CURRENT));
    show("mlockall(0)", mlockall(0));
    show("mlockall(ONFAULT)", mlockall(MCL_ONFAULT));
    show("munlockall", munlockall());
    return 0;
}
