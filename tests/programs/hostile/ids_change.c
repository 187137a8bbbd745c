// Changing the user and group ids, as a daemon dropping root does: in a forked child, the group
// list, then the group ids, then the user ids become nobody's (65534); the ids read back, the
// files it may no longer read (EACCES) and those it makes (owned by 65534), a thread started
// after the change, and going back to root (EPERM). The parent keeps its ids. Run without
// root (or CAP_SETUID), every change is EPERM, natively and under hrt alike.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *err(int r) {
    return r == 0 ? "ok" : strerrorname_np(errno);
}

static void show_ids(const char *who) {
    uid_t r, e, s;
    gid_t rg, eg, sg;
    getresuid(&r, &e, &s);
    getresgid(&rg, &eg, &sg);
    printf("%s: uid %u %u %u gid %u %u %u getuid %u geteuid %u getgid %u getegid %u groups %d\n", who, r, e, s, rg,
           eg, sg, getuid(), geteuid(), getgid(), getegid(), getgroups(0, 0));
    /* The file-system ids follow the effective ones (setfsuid(-1) only reads). */
    printf("%s: fsuid %d fsgid %d, set to the effective ones: %d %d\n", who, setfsuid(-1), setfsgid(-1),
           setfsuid(geteuid()), setfsgid(getegid()));
}

static void *in_thread(void *path) {
    int fd = open(path, O_RDONLY);
    printf("thread: open of the root-only file: %s\n", fd >= 0 ? "opened" : strerrorname_np(errno));
    if (fd >= 0)
        close(fd);
    return 0;
}

int main(void) {
    setvbuf(stdout, 0, _IOLBF, 0);
    int root = geteuid() == 0;
    char dir[] = "/tmp/hrt-ids-XXXXXX";
    mkdtemp(dir);
    chmod(dir, 0777);
    char secret[64], made[64];
    snprintf(secret, sizeof secret, "%s/secret", dir);
    snprintf(made, sizeof made, "%s/made", dir);
    int fd = open(secret, O_WRONLY | O_CREAT, 0600);
    write(fd, "s", 1);
    close(fd);
    pid_t c = fork();
    if (c == 0) {
        gid_t none[1] = {65534};
        printf("setgroups: %s\n", err(setgroups(1, none)));
        printf("setresgid: %s\n", err(setresgid(65534, 65534, 65534)));
        printf("setresuid: %s\n", err(setresuid(65534, 65534, 65534)));
        show_ids("child");
        fd = open(secret, O_RDONLY);
        printf("open of the root-only file: %s\n", fd >= 0 ? "opened" : strerrorname_np(errno));
        fd = open(made, O_WRONLY | O_CREAT, 0644);
        struct stat st;
        fstat(fd, &st);
        printf("a new file's owner: %u:%u\n", st.st_uid, st.st_gid);
        pthread_t t;
        pthread_create(&t, 0, in_thread, secret);
        pthread_join(t, 0);
        printf("back to root: %s\n", err(setuid(0)));
        printf("setuid to itself: %s\n", err(setuid(getuid())));
        fflush(stdout);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    printf("child exit %d\n", WEXITSTATUS(st));
    show_ids(root ? "parent (root)" : "parent");
    unlink(made);
    unlink(secret);
    rmdir(dir);
    printf("ids change: done\n");
    return 0;
}
