/* Copies the first instructions of two system-call wrappers elsewhere and calls the copies,
 * as an inline hook's trampoline (Frida, funchook) or a binary translator does: the wrappers'
 * `mov $N, %eax; syscall` prologues, read once they have run many times, which under hrt is
 * after the kernel rewrote them into `mov $GATE+N, %eax; call *%rax`. The copies must make
 * the same system calls: getppid 1,000 times, and a read from a pipe that a SIGALRM handler
 * (SA_RESTART) interrupts before a thread writes the byte, restarted from the copy. Until
 * stop 98 the first copied call ended in a SIGSEGV at address 0. Prints what the calls gave;
 * the same on any machine. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#include "handler.h"

/* Wrappers whose first instructions are the call (7 bytes), then `ret`. */
__asm__(".text\n"
        ".globl wrapped_getppid\n.type wrapped_getppid,@function\nwrapped_getppid:\n"
        "mov $110, %eax\nsyscall\nret\n.size wrapped_getppid, .-wrapped_getppid\n"
        ".globl wrapped_read\n.type wrapped_read,@function\nwrapped_read:\n"
        "mov $0, %eax\nsyscall\nret\n.size wrapped_read, .-wrapped_read\n");
long wrapped_getppid(void);
long wrapped_read(int fd, void *buf, size_t len);

static int pipe_fds[2];
static volatile int alarms;

static void on_alarm(int sig) {
    (void)sig;
    alarms++;
}

static void *write_later(void *arg) {
    (void)arg;
    while (alarms == 0)
        usleep(1000);
    usleep(20000);
    (void)!write(pipe_fds[1], "x", 1);
    return NULL;
}

/* A trampoline: `len` bytes of `fn`'s start, then `ret`. */
static void *relocate(unsigned char *area, void *fn, size_t len) {
    memcpy(area, fn, len);
    area[len] = 0xc3;
    return area;
}

int main(void) {
    long parent = getppid(), same = 0;
    char c = 0;
    pipe(pipe_fds);
    for (int i = 0; i < 1000; i++) {
        same += wrapped_getppid() == parent;
        (void)!write(pipe_fds[1], "y", 1);
        same += wrapped_read(pipe_fds[0], &c, 1) == 1 && c == 'y';
    }
    printf("wrappers: %ld of 2000 calls as expected\n", same);
    unsigned char *area = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    long (*copy_getppid)(void) = (long (*)(void))relocate(area, (void *)wrapped_getppid, 7);
    long (*copy_read)(int, void *, size_t) = (long (*)(int, void *, size_t))relocate(area + 64, (void *)wrapped_read, 7);
    same = 0;
    for (int i = 0; i < 1000; i++)
        same += copy_getppid() == parent;
    printf("copied getppid: %ld of 1000 calls gave the parent\n", same);
    set_handler(SIGALRM, on_alarm, SA_RESTART);
    pthread_t writer;
    pthread_create(&writer, NULL, write_later, NULL);
    struct itimerval it = {{0, 0}, {0, 30000}};
    setitimer(ITIMER_REAL, &it, NULL);
    c = 0;
    long got = copy_read(pipe_fds[0], &c, 1);
    pthread_join(writer, NULL);
    printf("copied read, interrupted and restarted: %ld byte(s), '%c', %s alarm\n", got, c, alarms ? "after the" : "without an");
    return 0;
}
