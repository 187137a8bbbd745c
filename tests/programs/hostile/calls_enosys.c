// Calls HRT does not implement, made many times: each must be reported once, with its name
// (acct was missing from the kernel's name table), and a number Linux has no call for too.
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    for (int i = 0; i < 50; i++) {
        syscall(SYS_acct, NULL);
        syscall(1000);
    }
    printf("done\n");
    return 0;
}
