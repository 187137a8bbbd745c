// Touches 256 MiB, gives them back, then starts argv[1..] with posix_spawn (a vfork and an
// exec, as a test runner starts programs) and exits with its status. Linux carries this
// process's resident peak into the started program's getrusage ru_maxrss (`signal->maxrss`,
// noted at the exec): a program's own figures must not take it for theirs.
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>

extern char **environ;

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    size_t len = 256UL << 20;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 3;
    memset(p, 1, len);
    munmap(p, len);
    pid_t pid;
    if (posix_spawn(&pid, argv[1], NULL, NULL, argv + 1, environ) != 0)
        return 4;
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
        return 5;
    return WEXITSTATUS(st);
}
