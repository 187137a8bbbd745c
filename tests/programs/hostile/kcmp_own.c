/* kcmp within the program (it was ENOSYS): KCMP_FILE says whether two descriptors share an
 * open file (a dup does, a second open does not), EBADF for a closed one; the process and
 * its threads share their address space, descriptor table, file-system context and signal
 * handlers (0); an unknown type is EINVAL and a pid nobody has ESRCH. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static pid_t other_thread;
static volatile int done;

static void *thread_main(void *arg) {
    (void)arg;
    other_thread = gettid();
    while (!done)
        usleep(1000);
    return NULL;
}

static long kc(pid_t a, pid_t b, int type, long i, long j) {
    return syscall(SYS_kcmp, a, b, type, i, j);
}

static void show(const char *what, long r) {
    printf("%s: %s\n", what, r < 0 ? strerror(errno) : r == 0 ? "the same" : "different");
}

int main(void) {
    pid_t me = getpid();
    int a = open("/dev/null", O_RDONLY), b = dup(a), c = open("/dev/null", O_RDONLY);
    show("KCMP_FILE of a descriptor and its dup", kc(me, me, KCMP_FILE, a, b));
    show("KCMP_FILE of two opens", kc(me, me, KCMP_FILE, a, c));
    show("KCMP_FILE of a closed descriptor", kc(me, me, KCMP_FILE, a, 999));
    pthread_t t;
    pthread_create(&t, NULL, thread_main, NULL);
    while (!other_thread)
        usleep(1000);
    show("KCMP_VM of the process and a thread", kc(me, other_thread, KCMP_VM, 0, 0));
    show("KCMP_FILES of the process and a thread", kc(me, other_thread, KCMP_FILES, 0, 0));
    show("KCMP_FS", kc(me, other_thread, KCMP_FS, 0, 0));
    show("KCMP_SIGHAND", kc(me, other_thread, KCMP_SIGHAND, 0, 0));
    show("KCMP_FILE across threads", kc(me, other_thread, KCMP_FILE, a, b));
    show("type 99", kc(me, me, 99, 0, 0));
    show("pid 0", kc(0, me, KCMP_VM, 0, 0));
    show("a pid nobody has", kc(me, 0x3ffffff0, KCMP_VM, 0, 0));
    done = 1;
    pthread_join(t, NULL);
    return 0;
}
