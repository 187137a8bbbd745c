/* stat of the program's own /proc descriptor and thread directories: /proc/self/fd's size is
 * the number of open descriptors (Linux 6.2 on; 0 before), /proc/self/task's link count is 2
 * plus one per thread, by stat, statx, fstat, fstatat(AT_EMPTY_PATH) and statx(AT_EMPTY_PATH),
 * through /proc/self, /proc/<pid> and /dev/fd. Under hrt these directories are the monitor's
 * own, and the figures counted hrt's descriptors and threads. Prints yes/no answers. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static void *idle(void *a) {
    pause();
    return a;
}

static long open_descriptors(void) {
    long n = -2; /* "." and ".." */
    DIR *d = opendir("/proc/self/fd");
    while (readdir(d))
        n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

/* Every way of asking agrees on (size, links); -1 if they differ. Those through a descriptor
 * see it open. */
static int figures(const char *p, long *size, long *links) {
    struct stat st, fs, fe;
    struct statx sx, sxe;
    if (stat(p, &st) || statx(AT_FDCWD, p, 0, STATX_ALL, &sx))
        return -1;
    int fd = open(p, O_RDONLY | O_DIRECTORY);
    if (fd < 0 || fstat(fd, &fs) || fstatat(fd, "", &fe, AT_EMPTY_PATH) || statx(fd, "", AT_EMPTY_PATH, STATX_ALL, &sxe))
        return -1;
    close(fd);
    long own = st.st_size != 0; /* the descriptor directory's size counts the open one */
    if ((long)sx.stx_size != st.st_size || fs.st_size != st.st_size + own || fe.st_size != fs.st_size ||
        (long)sxe.stx_size != fs.st_size)
        return -1;
    if ((long)sx.stx_nlink != (long)st.st_nlink || fs.st_nlink != st.st_nlink || fe.st_nlink != st.st_nlink ||
        (long)sxe.stx_nlink != (long)st.st_nlink)
        return -1;
    *size = st.st_size;
    *links = st.st_nlink;
    return 0;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, 0, idle, 0);
    pthread_create(&t, 0, idle, 0);
    char pid_fd[64], pid_task[64];
    snprintf(pid_fd, sizeof pid_fd, "/proc/%d/fd", getpid());
    snprintf(pid_task, sizeof pid_task, "/proc/%d/task/", getpid());
    const char *fd_dirs[] = {"/proc/self/fd", "/dev/fd/", pid_fd};
    for (int i = 0; i < 3; i++) {
        long size, links, before = open_descriptors();
        int ok = figures(fd_dirs[i], &size, &links) == 0;
        printf("%s: ways agree %d, size is the open descriptors (or 0) %d, links 2: %d\n", i == 2 ? "/proc/<pid>/fd" : fd_dirs[i],
               ok, size == before || size == 0, links == 2);
    }
    int extra = dup(1);
    long size, links;
    figures("/proc/self/fd", &size, &links);
    printf("after dup: size is the open descriptors (or 0) %d\n", size == open_descriptors() || size == 0);
    close(extra);
    figures("/proc/self/fdinfo", &size, &links);
    printf("/proc/self/fdinfo: size %ld\n", size);
    const char *task_dirs[] = {"/proc/self/task", pid_task};
    for (int i = 0; i < 2; i++) {
        int ok = figures(task_dirs[i], &size, &links) == 0;
        printf("%s: ways agree %d, size %ld, links 2 + 3 threads: %d\n", i ? "/proc/<pid>/task/" : task_dirs[i], ok, size,
               links == 5);
    }
    return 0;
}
