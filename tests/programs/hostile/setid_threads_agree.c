/* Set-id calls leave every thread of the program with the same credentials, as on Linux:
 * - setuid(0) back to a saved 0 by an unprivileged process changes only the effective id
 *   (hrt: the monitor's thread that made the call first became privileged and set all three
 *   there, the other threads only the effective one; getresuid answered either);
 * - a capset that drops an effective capability, then seteuid(1000), leaves no effective
 *   capability (hrt: threads catching up with the capset put its effective set back: root's
 *   powers at euid 1000, a root-only file opened);
 * - setgroups keeps duplicate groups (hrt dropped a list equal to the current one as a set);
 * - access() checks the whole path with the real ids (hrt walked it with the effective ones:
 *   after seteuid(1000) a file under a root-only directory was EACCES, after
 *   setresuid(1000, 0, 0) accessible).
 * Each part runs in a child of its own, and asks from several threads (under hrt, different
 * vCPUs and monitor threads serve them). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct cap_header { unsigned version; int pid; };
struct cap_data { unsigned eff, prm, inh; };

static const char *rootfile;
static int odd_ids, effective_caps, opened;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *ask(void *arg) {
    int caps = arg != NULL;
    for (int i = 0; i < 20; i++) {
        uid_t r, e, s;
        getresuid(&r, &e, &s);
        struct cap_header h = {0x20080522, 0};
        struct cap_data d[2];
        syscall(SYS_capget, &h, d);
        int fd = caps ? open(rootfile, O_RDONLY) : -1;
        pthread_mutex_lock(&lock);
        if (!caps && !(r == 1000 && e == 0 && s == 0)) odd_ids++;
        if (caps && (d[0].eff || d[1].eff)) effective_caps++;
        if (fd >= 0) opened++;
        pthread_mutex_unlock(&lock);
        if (fd >= 0) close(fd);
        usleep(1000);
    }
    return NULL;
}

static void from_threads(int caps) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, ask, caps ? (void *)1 : NULL);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
}

static void in_child(void (*part)(void)) {
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        part();
        fflush(stdout);
        _exit(0);
    }
    waitpid(c, NULL, 0);
}

static void saved_root_back(void) {
    setresuid(1000, 1000, 0);
    int rc = setuid(0);
    from_threads(0);
    uid_t r, e, s;
    getresuid(&r, &e, &s);
    printf("setuid(0) from 1000/1000/0: %d, now %u %u %u, other answers in 80 asks: %d\n", rc, r, e, s, odd_ids);
}

static void dropped_then_seteuid(void) {
    struct cap_header h = {0x20080522, 0};
    struct cap_data d[2];
    syscall(SYS_capget, &h, d);
    d[0].eff &= ~(1u << 1); /* CAP_DAC_OVERRIDE, from the effective set only */
    syscall(SYS_capset, &h, d);
    int rc = seteuid(1000);
    from_threads(1);
    printf("capset then seteuid(1000): %d; of 80 asks, %d saw effective capabilities, %d opened a root-only file\n",
           rc, effective_caps, opened);
}

static void duplicate_groups(void) {
    gid_t first[] = {10, 20, 30}, again[] = {30, 10, 10, 20}, got[8];
    setgroups(3, first);
    setgroups(4, again);
    int n = getgroups(8, got);
    printf("setgroups {30,10,10,20} over {10,20,30}: %d groups:", n);
    for (int i = 0; i < n; i++) printf(" %u", got[i]);
    printf("\n");
}

static char rootdir_file[96];

static void access_as_real(void) {
    int e = seteuid(1000);
    int as_root = access(rootdir_file, R_OK);
    int effective = faccessat(AT_FDCWD, rootdir_file, R_OK, AT_EACCESS);
    seteuid(0);
    setresuid(1000, 0, 0);
    int as_user = access(rootdir_file, R_OK);
    int effective_root = faccessat(AT_FDCWD, rootdir_file, R_OK, AT_EACCESS);
    printf("access under a root-only directory: seteuid(1000) %d: real %d, effective %d; "
           "setresuid(1000, 0, 0): real %d, effective %d\n",
           e, as_root, effective, as_user, effective_root);
}

int main(void) {
    if (geteuid() != 0) {
        printf("not root: nothing to check\n");
        return 0;
    }
    char dir[] = "/tmp/hrt-setid-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    static char path[64];
    snprintf(path, sizeof path, "%s/rootfile", dir);
    rootfile = path;
    close(open(path, O_CREAT | O_WRONLY, 0600));
    static char inner[80];
    snprintf(inner, sizeof inner, "%s/root-only", dir);
    mkdir(inner, 0700);
    snprintf(rootdir_file, sizeof rootdir_file, "%s/file", inner);
    close(open(rootdir_file, O_CREAT | O_WRONLY, 0644));
    in_child(saved_root_back);
    in_child(dropped_then_seteuid);
    in_child(duplicate_groups);
    in_child(access_as_real);
    unlink(rootdir_file);
    rmdir(inner);
    unlink(path);
    rmdir(dir);
    return 0;
}
