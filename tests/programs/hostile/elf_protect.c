// The program's own ELF segments carry their permissions, as Linux's execve maps them: for each
// PT_LOAD segment (found with dl_iterate_phdr) a read and a write in a page only it covers, and
// for a page two segments share, a write there; a store into the PT_GNU_RELRO range (which libc
// makes read-only itself after relocating); a jump into code-free bytes of a segment without
// PF_X. Each fault goes to a SIGSEGV handler, which reports si_code and whether si_addr is the
// address touched, and siglongjmps back. Then what JITs do: mprotect a page of .text writable,
// patch a function, run it, make it read-only again (a store faults again), and system calls
// asked to write into .rodata or .text answer EFAULT.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"
#include "report.h"

static void probe_exec(const char *what, void *p) {
    probe_expected = (uintptr_t)p;
    printf("%s exec: ", what);
    fflush(stdout);
    if (sigsetjmp(probe_env, 1) == 0) {
        ((void (*)(void))p)();
        printf("ok\n");
    } else {
        printf("SIGSEGV si_code %d addr %s\n", probe_code, probe_addr_ok ? "ok" : "wrong");
    }
}

static int answer(void) __attribute__((noinline, aligned(64)));
static int answer(void) {
    return 1;
}

static const unsigned char ret_in_rodata[64] = {0xc3};
static const char rodata_text[] = "read-only data";

static const char *flags_of(ElfW(Word) f) {
    static char s[4];
    s[0] = f & PF_R ? 'R' : '-';
    s[1] = f & PF_W ? 'W' : '-';
    s[2] = f & PF_X ? 'X' : '-';
    return s;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    probe_setup();
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

    struct phdrs ph = own_phdrs();
    uintptr_t prev_end = 0;
    int load = 0;
    for (int i = 0; i < ph.n; i++) {
        const ElfW(Phdr) *p = &ph.phdr[i];
        uintptr_t start = ph.base + p->p_vaddr, end = start + p->p_memsz;
        char what[96];
        if (p->p_type == PT_LOAD) {
            // A page of this segment alone: not its first one if the previous segment ends there,
            // not its last one (the next segment may start there).
            uintptr_t lo = (start & ~(page - 1)) < prev_end ? (start | (page - 1)) + 1 : start;
            uintptr_t hi = (end - 1) & ~(page - 1);
            snprintf(what, sizeof what, "load %d %s", load, flags_of(p->p_flags));
            if (lo < hi) {
                // Its last page of its own: past the RELRO part at the start of a data segment.
                probe(what, (unsigned char *)(hi - page), 0);
                probe(what, (unsigned char *)(hi - page), 1);
            } else {
                printf("%s: no page of its own\n", what);
            }
            if ((start & ~(page - 1)) < prev_end) {
                snprintf(what, sizeof what, "load %d %s page shared with the one before", load,
                         flags_of(p->p_flags));
                probe(what, (unsigned char *)(start & ~(page - 1)), 1);
            }
            prev_end = end;
            load++;
        } else if (p->p_type == PT_GNU_RELRO) {
            // libc protects [start rounded down, end rounded down).
            if (start < (end & ~(page - 1)))
                probe("relro", (unsigned char *)start, 1);
            else
                printf("relro: less than a page\n");
        }
    }

    probe(".rodata", (unsigned char *)rodata_text, 1);
    probe(".text", (unsigned char *)answer, 1);
    probe_exec(".rodata", (void *)ret_in_rodata);

    // System calls asked to write into read-only segments.
    int fd = open("/proc/self/exe", O_RDONLY);
    report("read into .rodata", read(fd, (void *)rodata_text, 4));
    report("pread into .text", pread(fd, (void *)answer, 4, 0));
    report("clock_gettime into .rodata", syscall(SYS_clock_gettime, CLOCK_MONOTONIC, (void *)rodata_text));
    close(fd);

    // A JIT's way: make the page of `answer` writable, patch it to `mov $42, %eax; ret`.
    void *code_page = (void *)((uintptr_t)answer & ~(page - 1));
    int (*volatile call)(void) = answer;
    printf("answer before: %d\n", call());
    report("mprotect .text rwx", mprotect(code_page, page, PROT_READ | PROT_WRITE | PROT_EXEC));
    static const unsigned char patch[] = {0xb8, 42, 0, 0, 0, 0xc3};
    memcpy((void *)answer, patch, sizeof patch);
    printf("answer patched: %d\n", call());
    report("mprotect .text rx", mprotect(code_page, page, PROT_READ | PROT_EXEC));
    probe(".text again", (unsigned char *)answer, 1);
    printf("answer still: %d\n", call());
    report("mprotect .rodata rw", mprotect((void *)((uintptr_t)rodata_text & ~(page - 1)), page,
                                            PROT_READ | PROT_WRITE));
    probe(".rodata made writable", (unsigned char *)rodata_text, 1);
    return 0;
}
