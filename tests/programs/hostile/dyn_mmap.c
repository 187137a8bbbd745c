/* What ld.so asks of file mappings, checked against Linux: a reservation of a whole file,
 * MAP_FIXED file mappings at an offset into it, the zero-filled tail of a partial last page,
 * an anonymous MAP_FIXED "bss" over it, private copy-on-write, code executed from a file
 * mapped PROT_READ|PROT_EXEC, the errors for bad offsets, and mincore; and MAP_FIXED segments
 * over a reservation of the same file, which HRT fills from the bytes already read while
 * nothing can have changed them (kernel/src/linux/filemap.rs): after a write to a segment, an
 * mprotect and a write, a change to the file, and with the descriptor naming another file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PG 4096
#define FILE_LEN (3 * PG + 100)

static unsigned char pattern(long i)
{
    return (unsigned char)(i * 7 + 3);
}

static int same_as_file(const unsigned char *p, long off, long len)
{
    for (long i = 0; i < len; i++)
        if (p[i] != pattern(off + i))
            return 0;
    return 1;
}

static int all_zero(const unsigned char *p, long len)
{
    for (long i = 0; i < len; i++)
        if (p[i])
            return 0;
    return 1;
}

/* A fresh reservation of the whole file, read-only (ld.so's first mapping of a library). */
static unsigned char *reserve(int fd)
{
    unsigned char *r = mmap(NULL, 4 * PG, PROT_READ, MAP_PRIVATE, fd, 0);
    if (r == MAP_FAILED)
        perror("mmap reservation"), exit(1);
    return r;
}

/* MAP_FIXED of `pages` pages at page `at` of `r`, from the same offset of `fd`. */
static unsigned char *segment(unsigned char *r, int at, int pages, int prot, int fd)
{
    unsigned char *p = mmap(r + at * PG, pages * PG, prot, MAP_PRIVATE | MAP_FIXED, fd, at * PG);
    if (p != r + at * PG)
        perror("mmap segment"), exit(1);
    return p;
}

/* Segments at the place their bytes already have in a reservation of the same file, as ld.so
 * maps them, and the cases where those bytes are no longer the file's. */
static void reread(int fd)
{
    static unsigned char file[FILE_LEN];
    if (pread(fd, file, FILE_LEN, 0) != FILE_LEN)
        perror("pread"), exit(1);
    unsigned char *r = reserve(fd);
    unsigned char *text = segment(r, 1, 1, PROT_READ | PROT_EXEC, fd);
    unsigned char *data = segment(r, 2, 2, PROT_READ | PROT_WRITE, fd);
    printf("ld.so-style segments hold the file: %d %d, tail zero %d\n", !memcmp(text, file + PG, PG),
           !memcmp(data, file + 2 * PG, FILE_LEN - 2 * PG), all_zero(data + FILE_LEN - 2 * PG, 4 * PG - FILE_LEN));
    memset(data, 0x5a, 64);
    data = segment(r, 2, 1, PROT_READ, fd);
    printf("segment again after a write to it: %d\n", !memcmp(data, file + 2 * PG, 64));
    munmap(r, 4 * PG);

    r = reserve(fd);
    mprotect(r, PG, PROT_READ | PROT_WRITE);
    memset(r, 0x5a, 64);
    unsigned char *first = segment(r, 0, 1, PROT_READ, fd);
    printf("segment after mprotect and a write: %d\n", !memcmp(first, file, 64));
    munmap(r, 4 * PG);

    r = reserve(fd);
    static const unsigned char changed[8] = "changed";
    if (pwrite(fd, changed, sizeof changed, PG) != sizeof changed)
        perror("pwrite"), exit(1);
    unsigned char *seg = segment(r, 1, 1, PROT_READ, fd);
    printf("segment after the file changed: %d\n", !memcmp(seg, changed, sizeof changed));
    if (pwrite(fd, file + PG, sizeof changed, PG) != sizeof changed)
        perror("pwrite"), exit(1);
    munmap(r, 4 * PG);

    /* The descriptor replaced by another file between the reservation and the segment. */
    char other_path[] = "/tmp/hrt-dyn-mmap-other-XXXXXX";
    int other = mkstemp(other_path);
    if (other < 0)
        perror("mkstemp"), exit(1);
    unlink(other_path);
    static unsigned char other_bytes[2 * PG];
    memset(other_bytes, 0x77, sizeof other_bytes);
    if (write(other, other_bytes, sizeof other_bytes) != sizeof other_bytes)
        perror("write"), exit(1);
    int saved = dup(fd);
    r = reserve(fd);
    dup2(other, fd);
    seg = segment(r, 1, 1, PROT_READ, fd);
    printf("segment after the descriptor changed file: %d\n", !memcmp(seg, other_bytes + PG, PG));
    munmap(r, 4 * PG);
    dup2(saved, fd);
    close(saved);
    close(other);
}

int main(void)
{
    char path[] = "/tmp/hrt-dyn-mmap-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return perror("mkstemp"), 1;
    unlink(path);
    static unsigned char buf[FILE_LEN];
    for (long i = 0; i < FILE_LEN; i++)
        buf[i] = pattern(i);
    if (write(fd, buf, FILE_LEN) != FILE_LEN)
        return perror("write"), 1;

    /* The reservation: the whole file and more, read-only. */
    unsigned char *r = mmap(NULL, 6 * PG, PROT_READ, MAP_PRIVATE, fd, 0);
    printf("reservation: %s\n", r == MAP_FAILED ? strerror(errno) : "mapped");
    printf("reservation holds the file: %d\n", same_as_file(r, 0, FILE_LEN));
    printf("partial last page zero after EOF: %d\n", all_zero(r + FILE_LEN, 4 * PG - FILE_LEN));

    /* A segment at an offset, MAP_FIXED into the reservation, writable and private. */
    unsigned char *seg = mmap(r + PG, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 2 * PG);
    printf("fixed segment at its address: %d\n", seg == r + PG);
    printf("segment holds file offset 8192: %d\n", same_as_file(seg, 2 * PG, PG + 100));
    printf("segment zero after EOF: %d\n", all_zero(seg + PG + 100, PG - 100));
    memset(seg, 0xee, 16);
    unsigned char back[16];
    printf("private write leaves the file: %d\n",
           pread(fd, back, 16, 2 * PG) == 16 && same_as_file(back, 2 * PG, 16));
    printf("rest of the reservation unchanged: %d\n", same_as_file(r, 0, PG));

    /* bss: an anonymous MAP_FIXED over the reservation's tail. */
    unsigned char *bss = mmap(r + 4 * PG, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1, 0);
    printf("bss at its address and zero: %d %d\n", bss == r + 4 * PG, all_zero(bss, 2 * PG));

    /* Code from a file: mov eax, 42; ret at file offset 4096. */
    static const unsigned char code[] = {0xb8, 42, 0, 0, 0, 0xc3};
    if (pwrite(fd, code, sizeof code, PG) != sizeof code)
        return perror("pwrite"), 1;
    void *text = mmap(NULL, PG, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, PG);
    if (text == MAP_FAILED)
        return perror("mmap exec"), 1;
    int (*fn)(void) = (int (*)(void))text;
    printf("code from the file returns %d\n", fn());

    reread(fd);

    /* Errors. */
    void *bad = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, fd, 100);
    printf("unaligned offset: %s\n", bad == MAP_FAILED ? strerror(errno) : "mapped");
    bad = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, 99, 0);
    printf("bad descriptor: %s\n", bad == MAP_FAILED ? strerror(errno) : "mapped");
    /* mincore (GNU tools probe their stack with it): resident, unmapped, unaligned. */
    unsigned char vec[2] = {0, 0};
    int rc = mincore(bss, 2 * PG, vec);
    printf("mincore of the bss: %d, resident %d %d\n", rc, vec[0] & 1, vec[1] & 1);
    munmap(r, 6 * PG);
    rc = mincore(r, PG, vec);
    printf("mincore after munmap: %s\n", rc ? strerror(errno) : "ok");
    rc = mincore((char *)text + 1, PG, vec);
    printf("mincore unaligned: %s\n", rc ? strerror(errno) : "ok");
    munmap(text, PG);
    close(fd);
    return 0;
}
