/* Calls abort(): SIGABRT (exit status 134 through a shell). */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    printf("about to call abort()\n");
    fflush(stdout);
    abort();
}
