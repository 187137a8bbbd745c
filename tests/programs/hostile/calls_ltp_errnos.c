/* Answers LTP's system-call tests check, each as Linux gives it (hrt's before, in brackets):
 * wait4(INT_MIN) ESRCH [EINVAL]; sched_getparam and sched_getscheduler of a process that does
 * not exist ESRCH [0]; timer_settime without a new setting EINVAL [EFAULT]; a raw
 * timer_create with SIGEV_THREAD, which Linux takes as SIGEV_SIGNAL [EINVAL]; sigqueue and
 * kill to a thread's id reach the process [ESRCH]; a vfork child sees none of its parent's
 * pending signals [the parent's]; getsockopt of a level TCP does not know EOPNOTSUPP
 * [ENOPROTOOPT]; execveat of a symbolic link with AT_SYMLINK_NOFOLLOW from a forked or vfork
 * child ELOOP [EACCES]; a write or splice into /proc/self/maps opened read-only EBADF [the
 * write went into hrt's copy, the splice from an empty pipe waited for good];
 * pidfd_send_signal to itself with a siginfo of another signal EINVAL [the signal was sent];
 * with RLIMIT_SIGPENDING at 0, tgkill of a real-time signal EAGAIN [sent]; capget of the
 * program's own pid after a capset dropped CAP_NET_RAW from its effective set [still there];
 * F_SETOWN_EX of the owner F_GETOWN_EX read from a fresh descriptor (a thread id 0) [ESRCH];
 * shmat with SHM_RND|SHM_REMAP of an address that rounds to 0 EINVAL [ENOMEM]; PR_GET_TSC
 * PR_TSC_ENABLE and PR_SET_TSC of it 0 [EINVAL]. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "drop_cap.h"

static const char *res(long r) { return r < 0 ? strerror(errno) : "ok"; }
static volatile sig_atomic_t got_usr1, got_usr2;
static volatile int value;
static void on_signal(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    if (sig == SIGUSR1) {
        got_usr1 = 1;
        value = si->si_value.sival_int;
    } else {
        got_usr2 = 1;
    }
}
static pid_t thread_id;
static pthread_barrier_t bar;
static void *thread(void *arg) {
    (void)arg;
    thread_id = syscall(SYS_gettid);
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar);
    return NULL;
}

int main(void) {
    struct rusage ru;
    int st;
    printf("wait4(INT_MIN): %s\n", res(wait4(INT_MIN, &st, 0, &ru)));
    struct sched_param sp;
    printf("sched_getparam(INT_MAX): %s\n", res(sched_getparam(INT_MAX, &sp)));
    printf("sched_getscheduler(INT_MAX): %s\n", res(sched_getscheduler(INT_MAX)));
    timer_t t;
    struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM};
    timer_create(CLOCK_MONOTONIC, &ev, &t);
    printf("timer_settime without a setting: %s\n", res(syscall(SYS_timer_settime, t, 0, NULL, NULL)));
    int raw;
    ev.sigev_notify = SIGEV_THREAD;
    printf("raw timer_create with SIGEV_THREAD: %s\n", res(syscall(SYS_timer_create, CLOCK_MONOTONIC, &ev, &raw)));

    struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO};
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    pthread_barrier_init(&bar, NULL, 2);
    pthread_t th;
    pthread_create(&th, NULL, thread, NULL);
    pthread_barrier_wait(&bar);
    union sigval v = {.sival_int = 777};
    printf("sigqueue to a thread's id: %s", res(sigqueue(thread_id, SIGUSR1, v)));
    printf(", kill to it: %s\n", res(kill(thread_id, SIGUSR2)));
    pthread_barrier_wait(&bar);
    pthread_join(th, NULL);
    for (int i = 0; i < 1000 && !(got_usr1 && got_usr2); i++)
        usleep(1000);
    printf("handled: SIGUSR1 %d (value %d), SIGUSR2 %d\n", got_usr1, value, got_usr2);

    sigset_t block, pending;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigprocmask(SIG_BLOCK, &block, NULL);
    kill(getpid(), SIGUSR1);
    sigpending(&pending);
    printf("parent has SIGUSR1 pending: %d\n", sigismember(&pending, SIGUSR1));
    fflush(stdout);
    pid_t c = vfork();
    if (c == 0) {
        sigset_t mine;
        sigpending(&mine);
        _exit(sigismember(&mine, SIGUSR1) ? 1 : 0);
    }
    waitpid(c, &st, 0);
    printf("vfork child has it pending: %d\n", WEXITSTATUS(st));

    int s = socket(AF_INET, SOCK_STREAM, 0), o;
    socklen_t ol = sizeof o;
    printf("getsockopt level 500 of a TCP socket: %s\n", res(getsockopt(s, 500, 1, &o, &ol)));
    printf("getsockopt IPPROTO_UDP of a TCP socket: %s\n", res(getsockopt(s, IPPROTO_UDP, 1, &o, &ol)));

    char link[64];
    snprintf(link, sizeof link, "/tmp/hrt-ltp-link-%d", getpid());
    if (symlink("/bin/true", link) != 0)
        return 1;
    char *av[] = {"true", NULL};
    fflush(stdout);
    for (int by_vfork = 0; by_vfork < 2; by_vfork++) {
        c = by_vfork ? vfork() : fork();
        if (c == 0) {
            syscall(SYS_execveat, AT_FDCWD, link, av, environ, AT_SYMLINK_NOFOLLOW);
            _exit(errno == ELOOP ? 40 : 1);
        }
        waitpid(c, &st, 0);
        printf("%s child's execveat of a link, not followed: %s\n", by_vfork ? "vfork" : "forked",
               WEXITSTATUS(st) == 40 ? "ELOOP" : "another answer");
    }
    unlink(link);

    int maps = open("/proc/self/maps", O_RDONLY), pipefd[2];
    if (maps < 0 || pipe(pipefd) != 0)
        return 1;
    printf("write to /proc/self/maps opened read-only: %s\n", res(write(maps, "x", 1)));
    printf("splice from an empty pipe into it: %s\n", res(splice(pipefd[0], NULL, maps, NULL, 1, 0)));

    int self = syscall(SYS_pidfd_open, getpid(), 0);
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = SIGUSR1;
    si.si_code = SI_QUEUE;
    si.si_pid = getpid();
    si.si_uid = getuid();
    printf("pidfd_send_signal of SIGUSR2 with SIGUSR1's siginfo: %s\n",
           res(syscall(SYS_pidfd_send_signal, self, SIGUSR2, &si, 0)));

    sigset_t rt;
    sigemptyset(&rt);
    sigaddset(&rt, SIGRTMIN);
    sigprocmask(SIG_BLOCK, &rt, NULL);
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_SIGPENDING, &none);
    printf("tgkill of SIGRTMIN with RLIMIT_SIGPENDING 0: %s\n",
           res(syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGRTMIN)));

    drop_effective_capability(CAP_NET_RAW);
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, getpid()};
    struct __user_cap_data_struct d[2];
    syscall(SYS_capget, &h, d);
    printf("CAP_NET_RAW effective after dropping it, by capget of its pid: %d\n", !!(d[0].effective & 1 << CAP_NET_RAW));

    /* A fresh descriptor's owner, as F_GETOWN_EX reads it, set back (LTP fcntl31). */
    int nul = open("/dev/null", O_RDONLY);
    struct f_owner_ex own = {-1, -1};
    fcntl(nul, F_GETOWN_EX, &own);
    printf("F_GETOWN_EX of a fresh descriptor: type %d pid %d\n", own.type, own.pid);
    printf("F_SETOWN_EX of it back: %s\n", res(fcntl(nul, F_SETOWN_EX, &own)));

    /* shmat at an address that SHM_RND rounds to 0, with SHM_REMAP (LTP shmat03). */
    int shm = shmget(IPC_PRIVATE, 4096, 0600);
    void *at = shmat(shm, (void *)1, SHM_RND | SHM_REMAP);
    printf("shmat SHM_RND|SHM_REMAP of address 1: %s\n", at == (void *)-1 ? strerror(errno) : "attached");
    shmctl(shm, IPC_RMID, NULL);

    /* RDTSC's prctl (LTP prctl10): allowed, and asking that it stay so succeeds. */
    int tsc = -1;
    const char *got = res(prctl(PR_GET_TSC, &tsc));
    printf("PR_GET_TSC: %s, %d\n", got, tsc);
    printf("PR_SET_TSC PR_TSC_ENABLE: %s\n", res(prctl(PR_SET_TSC, PR_TSC_ENABLE)));
    return 0;
}
