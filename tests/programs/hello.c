/* The smallest test program: one line on stdout, one on stderr, exit status 0. */
#include <stdio.h>

int main(void) {
    printf("Hello from a static program\n");
    fprintf(stderr, "hello on stderr\n");
    return 0;
}
