/* An interpreter for `#!` script tests: prints the argument vector it was given. */
#include <stdio.h>

int main(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        printf("argv[%d] = %s\n", i, argv[i]);
    return argc;
}
