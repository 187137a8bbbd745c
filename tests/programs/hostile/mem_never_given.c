// Memory the program was never given faults as on Linux (SIGSEGV, SEGV_MAPERR, the address
// touched): the NULL page (a read, a write, a call through a NULL pointer), memory nothing mapped (an address far from every mapping), and memory
// above a lowered program break (the page the break ends in stays). mmap(MAP_FIXED) at address 0
// is EPERM (mmap_min_addr; run natively as root, the program first drops CAP_SYS_RAWIO, which
// would allow it). `mem_never_given` prints one line per case.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"
#include "report.h"

#define PAGE 4096UL
#define MIB (1UL << 20)

static int zero_fd, pipe_fds[2];
static volatile uintptr_t null_addr; // 0, hidden from the compiler's checks

// Natively as root, CAP_SYS_RAWIO allows mappings below mmap_min_addr: drop it (under hrt the
// call may fail; nothing depends on it there).
static void drop_rawio(void) {
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &hdr, data) == 0) {
        data[CAP_SYS_RAWIO / 32].effective &= ~(1u << (CAP_SYS_RAWIO % 32));
        data[CAP_SYS_RAWIO / 32].permitted &= ~(1u << (CAP_SYS_RAWIO % 32));
        syscall(SYS_capset, &hdr, data);
    }
}

static void call_null(void) {
    printf("call through NULL: ");
    fflush(stdout);
    probe_expected = 0;
    if (sigsetjmp(probe_env, 1) == 0) {
        void (*volatile f)(void) = NULL;
        f();
        printf("returned\n");
    } else {
        printf("SIGSEGV si_code %d addr %s\n", probe_code, probe_addr_ok ? "ok" : "wrong");
    }
}

static void low_memory(void) {
    probe("NULL", (volatile unsigned char *)0, 0);
    probe("NULL", (volatile unsigned char *)0, 1);
    probe("NULL + 8", (volatile unsigned char *)8, 0);
    probe("NULL + 4095", (volatile unsigned char *)4095, 0);
    /* The rest of the low 64 KiB (vm.mmap_min_addr): a field of a large struct at NULL. */
    probe("NULL + 4096", (volatile unsigned char *)4096, 0);
    probe("NULL + 0x1040", (volatile unsigned char *)0x1040, 0);
    probe("NULL + 0x8000", (volatile unsigned char *)0x8000, 1);
    probe("NULL + 0xfff8", (volatile unsigned char *)0xfff8, 0);
    call_null();
    report("read into NULL", read(zero_fd, (void *)(uintptr_t)null_addr, 16));
    void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    report("mmap MAP_FIXED at 0", p == MAP_FAILED ? -1 : (long)p);
    p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    report("mmap MAP_FIXED_NOREPLACE at 0", p == MAP_FAILED ? -1 : (long)p);
    probe("NULL after the mmap", (volatile unsigned char *)0, 0);
}

// An address nothing maps (no system call accepts it), far from a fresh mapping, then touched.
static void far_away(void) {
    char *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *found = NULL;
    for (long k = 1; k <= 32 && !found; k++) {
        for (int sign = 1; sign >= -1 && !found; sign -= 2) {
            char *a = p + sign * k * 16 * MIB;
            if (write(pipe_fds[1], a, 1) < 0 && errno == EFAULT)
                found = a;
        }
    }
    printf("an unmapped address near a mapping: %s\n", found ? "found" : "none");
    if (found) {
        probe("unmapped", (volatile unsigned char *)found, 0);
        probe("unmapped", (volatile unsigned char *)found, 1);
        probe("unmapped + 3 pages + 7", (volatile unsigned char *)found + 3 * PAGE + 7, 0);
        report("unmapped: read into it", read(zero_fd, found, 16));
    }
    munmap(p, PAGE);
}

// Lowers the break inside a page and across pages; what lies above the break's page faults.
static void lowered_break(void) {
    char *cur = sbrk(0);
    char *base = (char *)(((uintptr_t)cur + PAGE - 1) & ~(PAGE - 1));
    if (brk(base + 4 * PAGE)) {
        printf("brk: failed\n");
        return;
    }
    memset(base, 'x', 4 * PAGE);
    report("brk down into page 1", brk(base + PAGE + 100));
    probe("below the break", (volatile unsigned char *)base + PAGE + 99, 1);
    probe("above the break, same page", (volatile unsigned char *)base + PAGE + 100, 1);
    probe("above the break, end of its page", (volatile unsigned char *)base + 2 * PAGE - 1, 0);
    probe("above the break's page", (volatile unsigned char *)base + 2 * PAGE, 0);
    probe("above the break's page", (volatile unsigned char *)base + 2 * PAGE, 1);
    probe("old break's last page", (volatile unsigned char *)base + 4 * PAGE - 1, 0);
    report("above the break: read into it", read(zero_fd, base + 3 * PAGE, 16));
    report("brk up again", brk(base + 4 * PAGE));
    printf("kept bytes of the break's page: %d, fresh pages zero: %d\n", base[PAGE + 200] == 'x',
           base[2 * PAGE] == 0 && base[4 * PAGE - 1] == 0);
    probe("regrown", (volatile unsigned char *)base + 3 * PAGE, 1);

    // Several MiB up, then sbrk back below where it started.
    if (sbrk(5 * MIB) == (void *)-1) {
        printf("sbrk 5 MiB: failed\n");
        return;
    }
    memset(base + 4 * PAGE, 'y', 5 * MIB);
    report("sbrk down", sbrk(-(long)(5 * MIB + 3 * PAGE)) == (void *)-1 ? -1 : 0);
    probe("sbrk: kept page", (volatile unsigned char *)base + 10, 1);
    probe("sbrk: first page above", (volatile unsigned char *)base + PAGE, 0);
    probe("sbrk: 2 MiB above", (volatile unsigned char *)base + 2 * MIB + 40, 1);
    probe("sbrk: old top", (volatile unsigned char *)base + 4 * PAGE + 5 * MIB - 1, 0);
    report("sbrk up again", sbrk(5 * MIB) == (void *)-1 ? -1 : 0);
    printf("sbrk regrown zero: %d\n", base[PAGE] == 0 && base[2 * MIB + 40] == 0 && base[PAGE + 5 * MIB - 1] == 0);
    brk(cur);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    probe_setup();
    drop_rawio();
    zero_fd = open("/dev/zero", O_RDONLY);
    if (zero_fd < 0 || pipe(pipe_fds))
        return 1;
    low_memory();
    far_away();
    lowered_break();
    return 0;
}
