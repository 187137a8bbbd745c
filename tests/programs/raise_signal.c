/* Raises the signal its argument names, with the default action: the program dies of it
 * (a real-time signal's death a shell reports as "Real-time signal N", N above SIGRTMIN). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int sig = argc > 1 ? atoi(argv[1]) : SIGTERM;
    printf("raising signal %d\n", sig);
    fflush(stdout);
    raise(sig);
    return 0;
}
