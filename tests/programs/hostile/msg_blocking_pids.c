/* After a msgrcv that waited until a forked child sent, the queue's last receiver
 * (msg_lrpid) is the receiving process, as on Linux (whose hand-off to a waiting receiver
 * records the receiving thread: the program's one thread). Under hrt the wait ran on a
 * monitor worker thread, whose host id was recorded. */
#include <stdio.h>
#include <sys/msg.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct message { long type; char text[8]; };

int main(void) {
    int q = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
    if (q < 0) return 1;
    pid_t c = fork();
    if (c == 0) {
        struct timespec d = {0, 50000000};
        nanosleep(&d, 0);
        struct message m = {1, "hello"};
        msgsnd(q, &m, sizeof m.text, 0);
        _exit(0);
    }
    struct message m;
    ssize_t n = msgrcv(q, &m, sizeof m.text, 0, 0);
    waitpid(c, 0, 0);
    struct msqid_ds d;
    msgctl(q, IPC_STAT, &d);
    printf("received %zd bytes; last receiver is this process: %d, last sender the child: %d\n", n,
           d.msg_lrpid == getpid(), d.msg_lspid == c);
    msgctl(q, IPC_RMID, 0);
    return 0;
}
