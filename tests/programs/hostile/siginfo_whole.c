// A siginfo a program queues itself (rt_sigqueueinfo) arrives whole, as on Linux: the words at
// offsets 32-47 too (hrt kept 16-31); one with SI_TIMER is an ordinary queued signal, not one
// of the kernel's timers (hrt merged three into one with a summed overrun, and timer_delete of
// a timer with that id threw it away); and a signalfd record is laid out by the siginfo's kind:
// ssi_errno, SIGPOLL's band and fd, a child's utime and stime, a machine check's addr_lsb.
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "handler.h"

static void show_words(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)uc;
    uint64_t *w = (uint64_t *)si;
    printf("handler: code %d words %#llx %#llx %#llx %#llx\n", si->si_code, (unsigned long long)w[2],
           (unsigned long long)w[3], (unsigned long long)w[4], (unsigned long long)w[5]);
}

static int sfd;

static struct signalfd_siginfo through_signalfd(int sig, siginfo_t *si) {
    syscall(SYS_rt_sigqueueinfo, getpid(), sig, si);
    struct signalfd_siginfo r;
    memset(&r, 0, sizeof r);
    if (read(sfd, &r, sizeof r) != sizeof r)
        perror("read");
    return r;
}

int main(void) {
    set_info_handler(SIGUSR1, show_words, 0);
    siginfo_t si;
    memset(&si, 0, sizeof si);
    uint64_t *w = (uint64_t *)&si;
    si.si_signo = SIGUSR1;
    si.si_code = SI_QUEUE;
    w[2] = 0x1122334455667788ULL, w[3] = 0x99aabbccddeeff00ULL, w[4] = 0x1111111122222222ULL, w[5] = 0x3333333344444444ULL;
    syscall(SYS_rt_sigqueueinfo, getpid(), SIGUSR1, &si);

    sigset_t m;
    sigemptyset(&m);
    sigaddset(&m, 40);
    sigprocmask(SIG_BLOCK, &m, 0);
    for (int i = 0; i < 3; i++) {
        memset(&si, 0, sizeof si);
        si.si_signo = 40;
        si.si_code = SI_TIMER;
        si.si_timerid = 3;
        si.si_overrun = i == 2 ? 0x7ffffff0 : i;
        si.si_value.sival_int = 100 + i;
        syscall(SYS_rt_sigqueueinfo, getpid(), 40, &si);
    }
    struct timespec zero = {0, 0};
    while (sigtimedwait(&m, &si, &zero) == 40)
        printf("SI_TIMER queued: timer %d overrun %d value %d\n", si.si_timerid, si.si_overrun, si.si_value.sival_int);
    timer_t id;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = 40;
    timer_create(CLOCK_MONOTONIC, &sev, &id);
    memset(&si, 0, sizeof si);
    si.si_signo = 40;
    si.si_code = SI_TIMER;
    si.si_timerid = (int)(long)id;
    si.si_value.sival_int = 7;
    syscall(SYS_rt_sigqueueinfo, getpid(), 40, &si);
    timer_delete(id);
    int n = 0;
    while (sigtimedwait(&m, &si, &zero) == 40)
        n++;
    printf("queued SI_TIMER after a timer_delete of its id: %d\n", n);

    sigemptyset(&m);
    sigaddset(&m, SIGTERM);
    sigaddset(&m, SIGCHLD);
    sigaddset(&m, SIGBUS);
    sigprocmask(SIG_BLOCK, &m, 0);
    sfd = signalfd(-1, &m, SFD_NONBLOCK);
    memset(&si, 0, sizeof si);
    si.si_signo = SIGTERM;
    si.si_code = 2;
    si.si_errno = 5;
    si.si_band = 1234;
    si.si_fd = 77;
    struct signalfd_siginfo r = through_signalfd(SIGTERM, &si);
    printf("poll kind: code %d errno %d pid %u band %u fd %d\n", r.ssi_code, r.ssi_errno, r.ssi_pid, r.ssi_band, r.ssi_fd);
    memset(&si, 0, sizeof si);
    si.si_signo = SIGCHLD;
    si.si_code = CLD_EXITED;
    si.si_pid = 4321;
    si.si_uid = 7;
    si.si_status = 3;
    ((long *)&si)[4] = 11;
    ((long *)&si)[5] = 22;
    r = through_signalfd(SIGCHLD, &si);
    printf("child kind: code %d pid %u uid %u status %d utime %llu stime %llu\n", r.ssi_code, r.ssi_pid, r.ssi_uid,
           r.ssi_status, (unsigned long long)r.ssi_utime, (unsigned long long)r.ssi_stime);
    memset(&si, 0, sizeof si);
    si.si_signo = SIGBUS;
    si.si_code = BUS_MCEERR_AR;
    si.si_addr = (void *)0x1234000;
    ((short *)&si)[12] = 12;
    r = through_signalfd(SIGBUS, &si);
    printf("machine check kind: code %d addr %#llx lsb %u\n", r.ssi_code, (unsigned long long)r.ssi_addr, r.ssi_addr_lsb);
    printf("siginfo whole: done\n");
    return 0;
}
