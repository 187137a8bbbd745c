/* sigqueue to a child of the program (it was ESRCH under hrt), and signal 0 (existence only)
 * to processes outside the program: init, the parent. */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
static volatile sig_atomic_t got;
static void on(int s) { got = s; }
int main(void) {
    signal(SIGRTMIN, on);
    sigset_t blk; sigemptyset(&blk); sigaddset(&blk, SIGRTMIN); sigprocmask(SIG_BLOCK, &blk, 0);
    int r[2]; pipe(r);
    pid_t c = fork();
    if (c == 0) { sigset_t none; sigemptyset(&none); write(r[1], "r", 1); while (!got) sigsuspend(&none); _exit(got == SIGRTMIN ? 7 : 1); }
    char ch; read(r[0], &ch, 1);
    union sigval v = {.sival_int = 9};
    int q = sigqueue(c, SIGRTMIN, v);
    int st; waitpid(c, &st, 0);
    printf("sigqueue to a child: %d, child status %d\n", q, WEXITSTATUS(st));
    printf("to a process outside, signal 0: %d\n", sigqueue(1, 0, v) == 0);
    printf("kill 0 to our parent: %d\n", kill(getppid(), 0));
    return 0;
}
