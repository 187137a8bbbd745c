/* A forked child starts without the parent's tid address (set_tid_address) and robust list,
 * as Linux's fork leaves them: the child's main thread's exit must not clear its copy of the
 * parent's tid word (hrt's child kept the address and cleared it), and get_robust_list in
 * the child (made with the raw system call, so that no C library registers its list again)
 * answers none. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int word;
static char stack[65536] __attribute__((aligned(16)));

static int second_thread(void *arg) {
    (void)arg;
    struct timespec t = {0, 100000000};
    syscall(SYS_nanosleep, &t, 0); /* the main thread has exited by now */
    syscall(SYS_exit_group, word == 0 ? 1 : 2);
    return 0;
}

int main(void) {
    syscall(SYS_set_tid_address, &word);
    int st;
    pid_t c = syscall(SYS_fork);
    if (c == 0) {
        void *head = (void *)1;
        size_t len = 0;
        syscall(SYS_get_robust_list, 0, &head, &len);
        if (head != NULL)
            syscall(SYS_exit_group, 3);
        word = 12345;
        clone(second_thread, stack + sizeof stack, CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD, 0);
        syscall(SYS_exit, 0);
    }
    waitpid(c, &st, 0);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    printf("forked child: robust list none %d, its tid word after its main thread's exit %s\n", code != 3,
           code == 1 ? "cleared" : code == 2 ? "kept" : "?");
    return 0;
}
