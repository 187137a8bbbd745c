// System V semaphores and message queues as Linux gives them: values set and read one by one
// and all at once, the pid of the last operation, IPC_NOWAIT (EAGAIN, ENOMSG), a timed wait, a
// thread woken by another's operation, a blocked operation that a signal handler with
// SA_RESTART interrupts (EINTR: never restarted), a forked child's SEM_UNDO undone when it
// exits, a child's message received by its parent, types and MSG_NOERROR, a receive buffer
// shorter than msgsz (Linux writes only the message), IPC_STAT and IPC_SET, bad pointers and
// sizes (EFAULT, EINVAL, E2BIG in Linux's order), and ids removed (EINVAL/EIDRM).
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "result_name.h"

union semun {
    int val;
    struct semid_ds *buf;
    unsigned short *array;
};

static int sem;
static void *sem_waiter(void *arg) {
    (void)arg;
    struct sembuf down = {1, -1, 0};
    long r = semop(sem, &down, 1);
    printf("waiter: semop down on 1: %s\n", result(r));
    return 0;
}

static void on_alarm(int s) {
    (void)s;
}

/* SIGALRM every 50 ms until `alarm_off`: one that comes before the call waits (a loaded host)
 * is followed by one that ends the wait. */
static void alarm_every_50ms(void) {
    struct itimerval it = {{0, 50000}, {0, 50000}};
    setitimer(ITIMER_REAL, &it, 0);
}

static void alarm_off(void) {
    struct itimerval it = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &it, 0);
}

static void semaphores(void) {
    sem = semget(IPC_PRIVATE, 3, IPC_CREAT | 0600);
    printf("semget: %s\n", sem >= 0 ? "ok" : result(-1));
    unsigned short set[3] = {1, 0, 5}, got[3] = {9, 9, 9};
    printf("SETALL: %s\n", result(semctl(sem, 0, SETALL, (union semun){.array = set})));
    printf("GETALL: %s", result(semctl(sem, 0, GETALL, (union semun){.array = got})));
    printf(" -> %u %u %u\n", got[0], got[1], got[2]);
    printf("SETVAL 2 = 7: %s\n", result(semctl(sem, 2, SETVAL, (union semun){.val = 7})));
    printf("GETVAL 2: %s\n", result(semctl(sem, 2, GETVAL)));
    struct sembuf ops[2] = {{0, -1, 0}, {2, 3, 0}};
    printf("semop two: %s\n", result(semop(sem, ops, 2)));
    printf("values %ld %ld\n", (long)semctl(sem, 0, GETVAL), (long)semctl(sem, 2, GETVAL));
    printf("GETPID is ours: %d\n", semctl(sem, 0, GETPID) == getpid());
    struct sembuf nowait = {0, -1, IPC_NOWAIT};
    printf("semop nowait on 0: %s\n", result(semop(sem, &nowait, 1)));
    struct sembuf zero_wait = {2, 0, IPC_NOWAIT};
    printf("wait-for-zero nowait on 10: %s\n", result(semop(sem, &zero_wait, 1)));
    struct sembuf down = {0, -1, 0};
    struct timespec t = {0, 50000000};
    printf("semtimedop 50 ms: %s\n", result(semtimedop(sem, &down, 1, &t)));

    // Another thread waits; this one's operation wakes it.
    pthread_t th;
    pthread_create(&th, 0, sem_waiter, 0);
    /* (Until the waiter waits: at most ~5 s.) */
    for (int i = 0; i < 5000 && semctl(sem, 1, GETNCNT) != 1; i++)
        pause_ms(1);
    printf("GETNCNT 1: %s\n", result(semctl(sem, 1, GETNCNT)));
    struct sembuf up = {1, 1, 0};
    long up_r = semop(sem, &up, 1);
    pthread_join(th, 0);
    printf("semop up on 1: %s\n", result(up_r));

    // A signal with a SA_RESTART handler ends a waiting semop: EINTR, not restarted.
    struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
    sigaction(SIGALRM, &sa, 0);
    alarm_every_50ms();
    long down_r = semop(sem, &down, 1);
    alarm_off();
    printf("semop interrupted: %s\n", result(down_r));

    // A forked child's SEM_UNDO operation is undone when it exits.
    pid_t c = fork();
    if (c == 0) {
        struct sembuf undo = {1, 4, SEM_UNDO};
        long r = semop(sem, &undo, 1);
        printf("child: SEM_UNDO up by 4: %s, value %ld\n", result(r), (long)semctl(sem, 1, GETVAL));
        fflush(stdout);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    printf("after the child: value %ld\n", (long)semctl(sem, 1, GETVAL));

    struct semid_ds ds;
    printf("IPC_STAT: %s", result(semctl(sem, 0, IPC_STAT, (union semun){.buf = &ds})));
    printf(" nsems %lu mode %o\n", (unsigned long)ds.sem_nsems, ds.sem_perm.mode & 0777);
    ds.sem_perm.mode = 0640;
    printf("IPC_SET: %s", result(semctl(sem, 0, IPC_SET, (union semun){.buf = &ds})));
    semctl(sem, 0, IPC_STAT, (union semun){.buf = &ds});
    printf(" mode now %o\n", ds.sem_perm.mode & 0777);

    // Bad pointers and counts, in Linux's order.
    printf("semop NULL: %s\n", result(semop(sem, 0, 1)));
    printf("semop 0 ops: %s\n", result(semop(sem, ops, 0)));
    printf("semop 100000 ops at NULL: %s\n", result(semop(sem, 0, 100000)));
    printf("semtimedop bad timeout: %s\n", result(semtimedop(sem, &down, 1, (struct timespec *)16)));
    printf("GETALL NULL: %s\n", result(semctl(sem, 0, GETALL, (union semun){.array = 0})));
    printf("IPC_STAT NULL: %s\n", result(semctl(sem, 0, IPC_STAT, (union semun){.buf = 0})));
    printf("unknown command: %s\n", result(semctl(sem, 0, 77)));
    printf("IPC_RMID: %s\n", result(semctl(sem, 0, IPC_RMID)));
    printf("semop after IPC_RMID: %s\n", result(semop(sem, &nowait, 1)));
}

struct msg {
    long type;
    char text[64];
};

static int q;
static void *msg_waiter(void *arg) {
    (void)arg;
    struct msg m;
    long n = msgrcv(q, &m, sizeof m.text, 7, 0);
    printf("waiter: msgrcv type 7: %s '%.*s'\n", result(n), n > 0 ? (int)n : 0, m.text);
    return 0;
}

static void messages(void) {
    q = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
    printf("msgget: %s\n", q >= 0 ? "ok" : result(-1));
    struct msg a = {1, "hello"}, b = {2, "world!"}, r;
    printf("msgsnd 1: %s\n", result(msgsnd(q, &a, 6, 0)));
    printf("msgsnd 2: %s\n", result(msgsnd(q, &b, 7, 0)));
    long n = msgrcv(q, &r, sizeof r.text, 2, 0);
    printf("msgrcv type 2: %s '%s' type %ld\n", result(n), n > 0 ? r.text : "", r.type);
    struct msqid_ds ds;
    printf("IPC_STAT: %s", result(msgctl(q, IPC_STAT, &ds)));
    printf(" qnum %lu cbytes %lu\n", (unsigned long)ds.msg_qnum, (unsigned long)ds.__msg_cbytes);
    printf("msgrcv 3 bytes: %s\n", result(msgrcv(q, &r, 3, 0, IPC_NOWAIT)));
    memset(r.text, 0, sizeof r.text);
    n = msgrcv(q, &r, 3, 0, IPC_NOWAIT | MSG_NOERROR);
    printf("msgrcv 3 bytes MSG_NOERROR: %s '%s'\n", result(n), r.text);
    printf("msgrcv empty, nowait: %s\n", result(msgrcv(q, &r, sizeof r.text, 0, IPC_NOWAIT)));
    printf("msgrcv type -5 none, nowait: %s\n", result(msgrcv(q, &r, sizeof r.text, -5, IPC_NOWAIT)));

    // A receive buffer at the end of the program's memory, shorter than msgsz.
    char *page = mmap(0, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(page + 4096, 4096);
    struct msg *edge = (struct msg *)(page + 4096 - 16);
    struct msg small = {3, "tiny"};
    msgsnd(q, &small, 5, 0);
    n = msgrcv(q, edge, 4096, 3, 0);
    printf("msgrcv into 8 bytes of text with msgsz 4096: %s '%s'\n", result(n), n > 0 ? edge->text : "");
    struct msg big = {3, "a message longer than eight bytes"};
    msgsnd(q, &big, 34, 0);
    printf("msgrcv of 34 bytes there: %s\n", result(msgrcv(q, edge, 4096, 3, 0)));
    printf("and the message is gone: %s\n", result(msgrcv(q, &r, sizeof r.text, 3, IPC_NOWAIT)));

    // A waiting receiver woken by a send.
    pthread_t th;
    pthread_create(&th, 0, msg_waiter, 0);
    pause_ms(50);
    struct msg w = {7, "wake"};
    long sent = msgsnd(q, &w, 4, 0);
    pthread_join(th, 0);
    printf("msgsnd 7: %s\n", result(sent));

    // A waiting receive that a handler with SA_RESTART interrupts: EINTR.
    alarm_every_50ms();
    long rcv_r = msgrcv(q, &r, sizeof r.text, 0, 0);
    alarm_off();
    printf("msgrcv interrupted: %s\n", result(rcv_r));

    // A child's message.
    pid_t c = fork();
    if (c == 0) {
        struct msg m = {9, "from the child"};
        msgsnd(q, &m, 15, 0);
        _exit(0);
    }
    n = msgrcv(q, &r, sizeof r.text, 9, 0);
    printf("parent got: %s '%s'\n", result(n), n > 0 ? r.text : "");
    waitpid(c, 0, 0);

    // A full queue: IPC_NOWAIT says EAGAIN.
    ds.msg_qbytes = 16;
    printf("IPC_SET qbytes 16: %s\n", result(msgctl(q, IPC_SET, &ds)));
    struct msg f = {4, "0123456789abcdef"};
    printf("msgsnd 16: %s\n", result(msgsnd(q, &f, 16, 0)));
    printf("then nowait: %s\n", result(msgsnd(q, &f, 16, IPC_NOWAIT)));

    printf("msgsnd NULL: %s\n", result(msgsnd(q, 0, 4, IPC_NOWAIT)));
    printf("msgsnd negative size: %s\n", result(msgsnd(q, &f, (size_t)-1, IPC_NOWAIT)));
    edge->type = 5;
    printf("msgsnd text past the mapping: %s\n", result(msgsnd(q, edge, 4096, IPC_NOWAIT)));
    printf("msgsnd text past the mapping, too long: %s\n", result(msgsnd(q, edge, 1 << 30, IPC_NOWAIT)));
    edge->type = 0;
    printf("msgsnd type 0 past the mapping: %s\n", result(msgsnd(q, edge, 4096, IPC_NOWAIT)));
    printf("msgsnd type 0: %s\n", result(msgsnd(q, edge, 4, IPC_NOWAIT)));
    printf("msgrcv NULL: %s\n", result(msgrcv(q, 0, 64, 0, IPC_NOWAIT)));
    printf("msgctl IPC_STAT NULL: %s\n", result(msgctl(q, IPC_STAT, 0)));
    printf("unknown command: %s\n", result(msgctl(q, 77, &ds)));
    printf("IPC_RMID: %s\n", result(msgctl(q, IPC_RMID, 0)));
    printf("msgsnd after IPC_RMID: %s\n", result(msgsnd(q, &a, 6, IPC_NOWAIT)));
}

int main(void) {
    setvbuf(stdout, 0, _IOLBF, 0);
    semaphores();
    messages();
    printf("sysv sem msg: done\n");
    return 0;
}
