/* Files mapped privately (their descriptors closed) take none of the program's descriptors,
 * as on Linux: after mapping 60 files, opening /dev/null until EMFILE reaches the soft
 * RLIMIT_NOFILE that the test sets (50, with a higher hard limit). Under hrt each such file
 * keeps a host descriptor of `hrt`'s, beside the program's. Usage: nofile_mapped DIR */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    int mapped = 0;
    for (int i = 0; i < 60; i++) {
        char name[4096];
        snprintf(name, sizeof name, "%s/mapped%d", argv[1], i);
        int fd = open(name, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || ftruncate(fd, 4096) != 0)
            return 1;
        mapped += mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) != MAP_FAILED;
        close(fd);
        unlink(name);
    }
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    int opened = 0, last = -1, fd;
    while ((fd = open("/dev/null", O_RDONLY)) >= 0) {
        opened++;
        last = fd;
    }
    printf("soft limit %ld: opened %d, %d files mapped, highest %d, then %s\n", (long)rl.rlim_cur, opened, mapped, last,
           strerrorname_np(errno));
    return 0;
}
