/* Under a descriptor limit of 64 (soft and hard, as `ulimit -n 64` sets them) a program starts
 * a dynamically linked program and a copy of itself that opens files until EMFILE. Under hrt
 * the child's monitor kept 64 descriptors for itself, all the limit: the program's table held
 * 3, so ld.so could not open libc (status 127), and the copy could open nothing. The copy's
 * count differs (the monitor keeps a few), so only a lower bound is printed. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int run(char *const argv[]) {
    pid_t p;
    int e = posix_spawn(&p, argv[0], NULL, NULL, argv, environ);
    if (e) {
        printf("posix_spawn %s: %s\n", argv[0], strerror(e));
        return -1;
    }
    int st;
    waitpid(p, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv) {
    if (argc > 1) {
        int n = 0;
        while (open("/dev/null", O_RDONLY) >= 0)
            n++;
        printf("the copy opened at least 16 descriptors: %s, then %s\n", n >= 16 ? "yes" : "no",
               errno == EMFILE ? "EMFILE" : strerror(errno));
        return 0;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    struct rlimit rl = {64, 64};
    if (setrlimit(RLIMIT_NOFILE, &rl))
        perror("setrlimit");
    char *truth[] = {"/bin/true", NULL};
    printf("/bin/true under a limit of 64: status %d\n", run(truth));
    char *copy[] = {argv[0], "copy", NULL};
    printf("a copy under a limit of 64: status %d\n", run(copy));
    return 0;
}
