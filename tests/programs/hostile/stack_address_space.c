/* The main stack counts in the address space (RLIMIT_AS, VmSize) as far as Linux's has grown,
 * not the whole RLIMIT_STACK that hrt reserves at once: under a 16 MiB RLIMIT_AS a 10 MiB
 * mapping fits (hrt counted 8 MiB of stack and its 2 MiB guard: ENOMEM), and a small static
 * program's VmSize is a few MiB (hrt: over 10). */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

static long vm_size_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmSize:", 7))
            sscanf(line + 7, "%ld", &kib);
    if (f)
        fclose(f);
    return kib;
}

int main(void) {
    long kib = vm_size_kib();
    printf("VmSize below 8 MiB: %s\n", kib > 0 && kib < 8192 ? "yes" : "no");
    struct rlimit rl = {16 << 20, 16 << 20};
    if (setrlimit(RLIMIT_AS, &rl))
        perror("setrlimit");
    void *p = mmap(NULL, 10 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("a 10 MiB mapping under a 16 MiB RLIMIT_AS: %s\n", p == MAP_FAILED ? "ENOMEM" : "mapped");
    void *q = mmap(NULL, 32 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("and 32 MiB more: %s\n", q == MAP_FAILED ? "ENOMEM" : "mapped");
    return 0;
}
