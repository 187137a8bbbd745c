// The vector extensions a program finds usable, the way libgcc (and glibc's own string
// functions) decide: CPUID's feature bits, OSXSAVE, and XCR0. Under hrt they must be what
// they are natively: without OSXSAVE in CPUID, AVX, AVX2 and AVX-512 all read as unusable;
// without LZCNT (ABM) the CPU is below x86-64-v3 for glibc and libgcc.
#include <stdio.h>

int main(void) {
    __builtin_cpu_init();
    printf("sse4.2 %d\n", __builtin_cpu_supports("sse4.2") != 0);
    printf("avx %d\n", __builtin_cpu_supports("avx") != 0);
    printf("avx2 %d\n", __builtin_cpu_supports("avx2") != 0);
    printf("fma %d\n", __builtin_cpu_supports("fma") != 0);
    printf("avx512f %d\n", __builtin_cpu_supports("avx512f") != 0);
    printf("avx512bw %d\n", __builtin_cpu_supports("avx512bw") != 0);
    printf("avx512vl %d\n", __builtin_cpu_supports("avx512vl") != 0);
    printf("lzcnt %d\n", __builtin_cpu_supports("abm") != 0);
    printf("x86-64-v2 %d\n", __builtin_cpu_supports("x86-64-v2") != 0);
    printf("x86-64-v3 %d\n", __builtin_cpu_supports("x86-64-v3") != 0);
    printf("x86-64-v4 %d\n", __builtin_cpu_supports("x86-64-v4") != 0);
    printf("cpu features: done\n");
    return 0;
}
