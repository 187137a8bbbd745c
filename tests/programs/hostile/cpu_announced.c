/* The processor's name (CPUID leaves 0x80000002-4) and the ring-3 features of leaf
 * 0x80000001 a program may check before it uses them (RDTSCP, LZCNT, SSE4A) as a program
 * reads them, on the first CPU and on the last one the program may use: the same as natively.
 * Under hrt on a PVM host, whose KVM reports the name leaves empty and leaves those bits out,
 * the name was empty and GROMACS's mdrun refused to run ("compiled to use the rdtscp CPU
 * instruction. However, this is not supported by the current hardware"). */
#define _GNU_SOURCE
#include <cpuid.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

static void say_name(const char *where) {
    unsigned a, b, c, d;
    char name[49] = {0};
    if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000004) {
        printf("%s: no name leaves\n", where);
        return;
    }
    for (unsigned i = 0; i < 3; i++) {
        __cpuid(0x80000002 + i, a, b, c, d);
        memcpy(name + 16 * i, &a, 4);
        memcpy(name + 16 * i + 4, &b, 4);
        memcpy(name + 16 * i + 8, &c, 4);
        memcpy(name + 16 * i + 12, &d, 4);
    }
    printf("%s: [%s]\n", where, name);
    __cpuid(0x80000001, a, b, c, d);
    printf("%s: rdtscp %u lzcnt %u sse4a %u\n", where, (d >> 27) & 1, (c >> 5) & 1, (c >> 6) & 1);
}

static void *on_last(void *arg) {
    (void)arg;
    say_name("cpu name on the last CPU");
    return NULL;
}

int main(void) {
    say_name("cpu name on the first CPU");
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        perror("sched_getaffinity");
        return 1;
    }
    int last = -1;
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &set))
            last = i;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    CPU_ZERO(&set);
    CPU_SET(last, &set);
    pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    pthread_t t;
    if (pthread_create(&t, &attr, on_last, NULL) != 0 || pthread_join(t, NULL) != 0) {
        printf("no thread\n");
        return 1;
    }
    return 0;
}
