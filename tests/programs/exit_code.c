/* Exits with the status given in argv[1] (taken modulo 256 by the kernel, as exit_group does).
 * argv[2] chooses how: "return" (from main, the default), "exit" (exit(3): stdio is flushed) or
 * "_exit" (_exit(2): stdio is not flushed, so the line below is lost when stdout is a pipe). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: exit_code STATUS [return|exit|_exit]\n");
        return 2;
    }
    int status = (int)strtol(argv[1], NULL, 0);
    const char *how = argc > 2 ? argv[2] : "return";
    printf("exiting with %d by %s\n", status, how);
    if (strcmp(how, "exit") == 0)
        exit(status);
    if (strcmp(how, "_exit") == 0)
        _exit(status);
    return status;
}
