/* Writes to address 0x10: SIGSEGV (exit status 139 through a shell). The line before it is
 * flushed so that it reaches stdout. */
#include <stdio.h>

int main(void) {
    printf("about to write to address 0x10\n");
    fflush(stdout);
    int *volatile target = (int *)0x10;
    *target = 42;
    printf("still alive after the write\n");
    return 0;
}
