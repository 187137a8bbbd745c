/* The vDSO's functions as programs that read its symbol table themselves find them (rustix,
 * Go's runtime): the five x86-64 Linux exports under version LINUX_2.6's names, and
 * __vdso_clock_getres answering as the system call does for every clock. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The address of the vDSO's defined function `name`, or NULL. */
static void *vdso_function(const char *name) {
    const unsigned char *base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
    if (!base)
        return NULL;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
    long load_offset = 0;
    const Elf64_Dyn *dyn = NULL;
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0)
            load_offset = (long)base - (long)ph[i].p_vaddr;
        if (ph[i].p_type == PT_DYNAMIC)
            dyn = (const Elf64_Dyn *)(base + ph[i].p_offset);
    }
    if (!dyn)
        return NULL;
    const Elf64_Sym *sym = NULL;
    const char *str = NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        if (dyn->d_tag == DT_SYMTAB)
            sym = (const Elf64_Sym *)(dyn->d_un.d_ptr + load_offset);
        if (dyn->d_tag == DT_STRTAB)
            str = (const char *)(dyn->d_un.d_ptr + load_offset);
    }
    if (!sym || !str || (const char *)sym >= str)
        return NULL;
    /* The dynamic string table follows the symbol table (as ld lays them out). */
    long count = (str - (const char *)sym) / (long)sizeof(Elf64_Sym);
    for (long i = 0; i < count; i++)
        if (sym[i].st_shndx != SHN_UNDEF && ELF64_ST_TYPE(sym[i].st_info) == STT_FUNC &&
            strcmp(str + sym[i].st_name, name) == 0)
            return (void *)(sym[i].st_value + load_offset);
    return NULL;
}

int main(void) {
    const char *names[] = {"__vdso_clock_gettime", "__vdso_gettimeofday", "__vdso_time", "__vdso_getcpu",
                           "__vdso_clock_getres"};
    for (int i = 0; i < 5; i++)
        printf("%s: %s\n", names[i], vdso_function(names[i]) ? "there" : "missing");
    int (*getres)(clockid_t, struct timespec *) = vdso_function("__vdso_clock_getres");
    if (!getres)
        return 1;
    int clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID,
                    CLOCK_MONOTONIC_RAW, CLOCK_REALTIME_COARSE, CLOCK_MONOTONIC_COARSE, CLOCK_BOOTTIME, 42};
    for (int i = 0; i < 9; i++) {
        struct timespec v = {7, 7}, s = {7, 7};
        int rv = getres(clocks[i], &v);
        int rs = syscall(SYS_clock_getres, clocks[i], &s);
        if (rs < 0)
            rs = -errno; /* the vDSO answers a failure as the raw call does */
        printf("clock %d: vDSO %d, as the call: %s\n", clocks[i], rv,
               rv == rs && v.tv_sec == s.tv_sec && v.tv_nsec == s.tv_nsec ? "yes" : "no");
    }
    printf("vdso symbols: done\n");
    return 0;
}
