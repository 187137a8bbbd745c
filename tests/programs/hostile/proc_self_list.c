// `ls -la /proc/self/` under hrt: the directory's entries (read), each entry's type and
// permissions (lstat), its links (cwd, root, exe: readlink), "/proc/self/." and ".." (stat),
// and names it does not have (create, symlink, stat: ENOENT).
// Compared with the native run; sizes, link counts and times are not printed (`fd`'s size and
// `task`'s link count are `hrt`'s, which has more descriptors and threads).
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void) {
    DIR *d = opendir("/proc/self/");
    if (!d) {
        printf("opendir: %s\n", strerror(errno));
        return 1;
    }
    char *names[512];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 512)
        names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, n, sizeof names[0], by_name);
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "/proc/self/%s", names[i]);
        struct stat st;
        if (lstat(path, &st) != 0) {
            printf("%-20s lstat: %s\n", names[i], strerror(errno));
            continue;
        }
        printf("%-20s %06o", names[i], st.st_mode);
        if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t len = readlink(path, target, sizeof target - 1);
            if (len < 0)
                printf(" readlink: %s", strerror(errno));
            else
                printf(" -> %.*s", (int)len, target);
        }
        printf("\n");
    }
    struct stat st;
    printf("stat /proc/self/. %s\n", stat("/proc/self/.", &st) == 0 && S_ISDIR(st.st_mode) ? "dir" : strerror(errno));
    printf("lstat /proc/self/. %s\n", lstat("/proc/self/.", &st) == 0 && S_ISDIR(st.st_mode) ? "dir" : "not a dir");
    struct stat proc;
    stat("/proc", &proc);
    printf("stat /proc/self/.. is /proc %d\n", stat("/proc/self/..", &st) == 0 && st.st_ino == proc.st_ino);
    // Names a process directory does not have (`touch /proc/self/x`): ENOENT.
    errno = 0;
    int fd = open("/proc/self/nothing", O_WRONLY | O_CREAT, 0644);
    printf("create /proc/self/nothing: %d %s\n", fd < 0 ? -1 : 0, strerror(errno));
    errno = 0;
    int r = symlink("x", "/proc/self/link");
    printf("symlink /proc/self/link: %d %s\n", r, strerror(errno));
    errno = 0;
    r = stat("/proc/self/nothing", &st);
    printf("stat /proc/self/nothing: %d %s\n", r, strerror(errno));
    return 0;
}
