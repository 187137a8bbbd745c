/* An alarm survives execve (alarm(2)), also in a forked child, whose exec under `hrt run`
 * (--children host) starts the host program in the child's process: there it was lost
 * (alarm(0) answered 0 after the exec). Modes: "main" (the program execs itself), "fork" (a
 * forked child does, the parent waits); "check" is the exec'd program: it prints what is left
 * of the alarm, then cancels it. The alarm is long (10 s) and the bounds wide, since a loaded
 * host may delay the exec (a new VM under hrt) by a second or more; 0.6 s pass before the exec,
 * so an alarm re-armed afresh (9.5 s or more left) is told apart too. */
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void arm_and_exec(const char *self, const char *who) {
    alarm(10);
    struct timespec r = {0, 600000000};
    nanosleep(&r, NULL);
    execl(self, self, "check", who, (char *)NULL);
    perror("execl");
    _exit(1);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc > 2 && !strcmp(argv[1], "check")) {
        struct itimerval left;
        getitimer(ITIMER_REAL, &left);
        double s = left.it_value.tv_sec + left.it_value.tv_usec / 1e6;
        unsigned a = alarm(0);
        printf("%s after exec: 5-9.5 s of the alarm left: %d, alarm(0) 5-10: %d\n", argv[2], s > 5 && s < 9.5, a >= 5 && a <= 10);
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "fork")) {
        pid_t c = fork();
        if (c == 0)
            arm_and_exec(argv[0], "forked child");
        int status;
        waitpid(c, &status, 0);
        printf("child status %d\n", status);
        return 0;
    }
    arm_and_exec(argv[0], "program");
    return 1;
}
