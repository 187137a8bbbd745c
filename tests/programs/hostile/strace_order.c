/* `--strace` lines are held and sent in batches: they must still come out in order with the
 * program's own writes to stderr, and a fork must not print the parent's held lines twice.
 * Each umask has a mask of its own, which makes its line distinctive. */
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void say(const char *s) { (void)!write(2, s, strlen(s)); }

int main(void) {
    say("first\n");
    umask(01);
    say("second\n");
    umask(02);
    pid_t child = fork();
    if (child == 0) {
        umask(03);
        _exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    say("third\n");
    umask(04);
    return 0;
}
