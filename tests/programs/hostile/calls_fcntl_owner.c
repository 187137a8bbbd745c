/* fcntl's commands on a descriptor's owner and signals, leases, directory notification and
 * memory-file seals, as on Linux: O_ASYNC with F_SETOWN(getpid()) raises SIGIO when a pipe
 * becomes readable, F_SETSIG makes it a real-time signal, F_SETOWN_EX/F_GETOWN_EX read back,
 * F_NOTIFY raises SIGIO for a file created in the directory, a write lease reads back, and a
 * memory file's seals stop it growing and shrinking. Signals are waited for (up to 10 s each),
 * so the order of events, not their timing, is what is compared. One line per case.
 * Usage: calls_fcntl_owner */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile sig_atomic_t io, rt;
static void on_io(int sig) { io += sig == SIGIO; }
static void on_rt(int sig) { rt += sig == SIGRTMIN + 1; }

/* Waits until `*count` is at least `want` (10 s at most); says whether it got there. */
static int wait_for(volatile sig_atomic_t *count, int want) {
    for (int i = 0; i < 1000 && *count < want; i++)
        usleep(10000);
    return *count >= want;
}

static void say(const char *what, long r) {
    printf("%-40s %ld %s\n", what, r, r < 0 ? strerrorname_np(errno) : "");
}

static volatile pid_t other_tid;
static volatile int other_done;

static void *other_thread(void *arg) {
    (void)arg;
    other_tid = gettid();
    while (!other_done)
        usleep(1000);
    return NULL;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    signal(SIGIO, on_io);
    signal(SIGRTMIN + 1, on_rt);
    int p[2];
    if (pipe(p) != 0)
        return 1;
    say("F_SETOWN getpid()", fcntl(p[0], F_SETOWN, getpid()));
    say("F_GETOWN is getpid()", fcntl(p[0], F_GETOWN) == getpid());
    say("F_SETFL O_ASYNC", fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_ASYNC));
    write(p[1], "x", 1);
    say("SIGIO for the pipe", wait_for(&io, 1));
    char c;
    read(p[0], &c, 1);
    say("F_SETSIG SIGRTMIN+1", fcntl(p[0], F_SETSIG, SIGRTMIN + 1));
    say("F_GETSIG is SIGRTMIN+1", fcntl(p[0], F_GETSIG) == SIGRTMIN + 1);
    write(p[1], "y", 1);
    say("SIGRTMIN+1 for the pipe", wait_for(&rt, 1));
    struct f_owner_ex owner = {F_OWNER_PID, getpid()}, back = {0, 0};
    say("F_SETOWN_EX F_OWNER_PID", fcntl(p[0], F_SETOWN_EX, &owner));
    say("F_GETOWN_EX", fcntl(p[0], F_GETOWN_EX, &back));
    say("F_GETOWN_EX type and pid", back.type == F_OWNER_PID && back.pid == getpid());
    say("F_SETOWN 0", fcntl(p[0], F_SETOWN, 0));
    // Another thread of the program as the owner (F_SETOWN_EX's F_OWNER_TID, F_SETOWN of its
    // id): accepted (ESRCH and EPERM under hrt before), and the signal still comes.
    pthread_t t;
    pthread_create(&t, NULL, other_thread, NULL);
    while (!other_tid)
        ;
    struct f_owner_ex to_thread = {F_OWNER_TID, other_tid};
    say("F_SETOWN_EX F_OWNER_TID other thread", fcntl(p[0], F_SETOWN_EX, &to_thread));
    say("F_SETOWN other thread's id", fcntl(p[0], F_SETOWN, other_tid));
    int before_io = rt;
    write(p[1], "z", 1);
    say("SIGRTMIN+1 with a thread as owner", wait_for(&rt, before_io + 1));
    read(p[0], &c, 1);
    other_done = 1;
    pthread_join(t, NULL);
    say("F_SETOWN 0 again", fcntl(p[0], F_SETOWN, 0));

    char dir[] = "/tmp/hrt-fcntl-XXXXXX";
    if (!mkdtemp(dir))
        return 2;
    int d = open(dir, O_RDONLY | O_DIRECTORY);
    int before = io;
    say("F_NOTIFY DN_CREATE", fcntl(d, F_NOTIFY, DN_CREATE | DN_MULTISHOT));
    char path[64];
    snprintf(path, sizeof path, "%s/new", dir);
    int f = open(path, O_RDWR | O_CREAT, 0600);
    say("SIGIO for the created file", wait_for(&io, before + 1));
    say("F_SETLEASE F_WRLCK", fcntl(f, F_SETLEASE, F_WRLCK));
    say("F_GETLEASE is F_WRLCK", fcntl(f, F_GETLEASE) == F_WRLCK);
    say("F_SETLEASE F_UNLCK", fcntl(f, F_SETLEASE, F_UNLCK));
    close(f);
    unlink(path);
    rmdir(dir);

    int m = memfd_create("sealed", MFD_ALLOW_SEALING);
    ftruncate(m, 4096);
    say("F_ADD_SEALS shrink|grow", fcntl(m, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW));
    say("F_GET_SEALS", fcntl(m, F_GET_SEALS));
    say("ftruncate a sealed memory file", ftruncate(m, 8192));
    say("pwrite past its end", pwrite(m, "z", 1, 4096));
    say("pwrite inside", pwrite(m, "z", 1, 100));
    int plain = memfd_create("plain", 0);
    say("F_ADD_SEALS without MFD_ALLOW_SEALING", fcntl(plain, F_ADD_SEALS, F_SEAL_WRITE));
    return 0;
}
