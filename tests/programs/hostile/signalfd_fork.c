// A signalfd inherited across fork reads the reader's own signals, as Linux's does: a child's
// own raise and kill make the child's copy readable (poll, epoll, read), never the parent's; a
// signal pending in the parent at the fork stays the parent's (the child starts with none); a
// child's kill of its parent reaches the parent's copy; a signalfd the child makes after the
// fork works. Compared with the native run.
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHOW_WIDTH 44
#include "show.h"
#include "signalfd_read.h"

static void wait_for(pid_t c) {
    int st;
    waitpid(c, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        printf("child ended badly: %#x\n", st);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    sigaddset(&s, SIGUSR2);
    sigprocmask(SIG_BLOCK, &s, NULL);
    int sf = signalfd(-1, &s, SFD_NONBLOCK);

    // The child's own signals, right after the fork: raise is its first system call.
    pid_t c = fork();
    if (c == 0) {
        raise(SIGUSR1);
        show("child: poll after its own raise", readable(sf, 300));
        take("child: read", sf);
        kill(getpid(), SIGUSR2);
        int ep = epoll_create1(0);
        struct epoll_event ev = {.events = EPOLLIN};
        epoll_ctl(ep, EPOLL_CTL_ADD, sf, &ev);
        show("child: epoll after its own kill", epoll_wait(ep, &ev, 1, 300));
        take("child: read", sf);
        show("child: poll after reading", readable(sf, 0));
        _exit(0);
    }
    wait_for(c);
    show("parent: poll after the child's signals", readable(sf, 100));
    take("parent: read", sf);

    // A signal pending in the parent at the fork is the parent's alone.
    raise(SIGUSR2);
    c = fork();
    if (c == 0) {
        show("child: poll, parent's signal pending", readable(sf, 100));
        take("child: read", sf);
        _exit(0);
    }
    wait_for(c);
    show("parent: poll, its signal pending", readable(sf, 0));
    take("parent: read", sf);

    // The child signals its parent: the parent's copy becomes readable.
    for (int i = 0; i < 2; i++) {
        c = fork();
        if (c == 0) {
            kill(getppid(), SIGUSR1);
            _exit(0);
        }
        show("parent: poll for the child's kill", readable(sf, 60000)); /* a forked hrt child may take seconds to start on a busy host */
        take("parent: read", sf);
        wait_for(c);
    }

    // A signalfd the child makes itself, beside the inherited one.
    c = fork();
    if (c == 0) {
        int mine = signalfd(-1, &s, SFD_NONBLOCK);
        kill(getpid(), SIGUSR1);
        show("child: poll its new signalfd", readable(mine, 300));
        show("child: poll the inherited one", readable(sf, 0));
        take("child: read the new one", mine);
        take("child: read the inherited one", sf);
        _exit(0);
    }
    wait_for(c);
    show("parent: poll at the end", readable(sf, 0));
    return 0;
}
