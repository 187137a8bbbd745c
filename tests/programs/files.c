/* File round trip in a directory: argv[1] (which must exist; the program leaves only
 * "kept.txt" in it) or, without arguments, a fresh mkdtemp directory under /tmp that is removed
 * at the end. Prints each verified step; never prints paths, which differ between runs.
 * Exit status 0 when everything matched, 1 otherwise. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (cond) {                                                                                                    \
            printf("ok   ");                                                                                           \
        } else {                                                                                                       \
            printf("FAIL ");                                                                                           \
            failures++;                                                                                                \
        }                                                                                                              \
        printf(__VA_ARGS__);                                                                                           \
        printf("\n");                                                                                                  \
    } while (0)

static const char *errname(int e) {
    switch (e) {
    case 0: return "0";
    case ENOENT: return "ENOENT";
    case EEXIST: return "EEXIST";
    case EBADF: return "EBADF";
    case ENOTDIR: return "ENOTDIR";
    case ENOTEMPTY: return "ENOTEMPTY";
    case EISDIR: return "EISDIR";
    case EINVAL: return "EINVAL";
    case EFAULT: return "EFAULT";
    case ESPIPE: return "ESPIPE";
    default: return "other";
    }
}

static unsigned char pattern(size_t i) { return (unsigned char)((i * 131 + (i >> 8) * 7 + 3) & 0xff); }

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted names in "." other than "." and "..", joined by spaces, through opendir/readdir
 * (getdents64 underneath). */
static void list_dir(char *out, size_t outsz) {
    char *names[64];
    int n = 0;
    DIR *d = opendir(".");
    if (!d) {
        snprintf(out, outsz, "<opendir failed: %s>", errname(errno));
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 64) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char type = e->d_type == DT_DIR ? '/' : e->d_type == DT_REG ? ' ' : '?';
        size_t len = strlen(e->d_name);
        names[n] = malloc(len + 2);
        memcpy(names[n], e->d_name, len);
        names[n][len] = type == ' ' ? '\0' : type;
        names[n][len + 1] = '\0';
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof names[0], cmp_str);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (i)
            strncat(out, " ", outsz - strlen(out) - 1);
        strncat(out, names[i], outsz - strlen(out) - 1);
        free(names[i]);
    }
}

int main(int argc, char **argv) {
    char tmpl[] = "/tmp/hrt-files-XXXXXX";
    const char *dir;
    int own_dir = argc < 2;
    if (own_dir) {
        dir = mkdtemp(tmpl);
        if (!dir) {
            perror("mkdtemp");
            return 1;
        }
    } else {
        dir = argv[1];
    }
    char start_cwd[PATH_MAX];
    CHECK(getcwd(start_cwd, sizeof start_cwd) != NULL, "getcwd");
    CHECK(chdir(dir) == 0, "chdir to the test directory");
    char cwd[PATH_MAX], real[PATH_MAX];
    CHECK(getcwd(cwd, sizeof cwd) && realpath(dir, real) && strcmp(cwd, real) == 0,
          "getcwd equals realpath of the directory");

    /* /proc/self/exe names this program. */
    char exe[PATH_MAX], argv0_real[PATH_MAX];
    ssize_t exe_len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (exe_len >= 0)
        exe[exe_len] = '\0';
    int exe_ok = exe_len > 0 && chdir(start_cwd) == 0 && realpath(argv[0], argv0_real) && strcmp(exe, argv0_real) == 0;
    CHECK(chdir(dir) == 0 && exe_ok, "readlink /proc/self/exe is the program");
    /* The kernel answers it itself (until an execve): the same edges as Linux. */
    char cut[4];
    CHECK(exe_len > 4 && readlink("/proc/self/exe", cut, sizeof cut) == 4 && memcmp(cut, exe, 4) == 0,
          "readlink /proc/self/exe into 4 bytes gives its first 4");
    errno = 0;
    CHECK(syscall(SYS_readlink, "/proc/self/exe", exe, 0) < 0 && errno == EINVAL, "readlink of size 0 gives %s",
          errname(errno));
    errno = 0;
    CHECK(syscall(SYS_readlink, "/proc/self/exe", (char *)8, 64) < 0 && errno == EFAULT,
          "readlink into a bad buffer gives %s", errname(errno));
    char at[PATH_MAX];
    ssize_t at_len = readlinkat(12345, "/proc/self/exe", at, sizeof at);
    CHECK(at_len == exe_len && memcmp(at, exe, (size_t)exe_len) == 0,
          "readlinkat with a closed descriptor and the absolute path names the program");

    /* Create and write 100000 bytes in uneven pieces. */
    mode_t old_mask = umask(022);
    int fd = open("a.txt", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
    CHECK(fd >= 0, "create a.txt");
    errno = 0;
    CHECK(open("a.txt", O_CREAT | O_EXCL | O_WRONLY, 0666) < 0 && errno == EEXIST, "O_EXCL again gives %s",
          errname(errno));
    enum { SIZE = 100000 };
    static unsigned char buf[SIZE], back[SIZE];
    for (size_t i = 0; i < SIZE; i++)
        buf[i] = pattern(i);
    size_t done = 0, piece = 1;
    int writes_ok = 1;
    while (done < SIZE) {
        size_t n = piece < SIZE - done ? piece : SIZE - done;
        if (write(fd, buf + done, n) != (ssize_t)n)
            writes_ok = 0;
        done += n;
        piece = piece * 3 + 1;
    }
    CHECK(writes_ok, "write %d bytes", SIZE);
    CHECK(fsync(fd) == 0, "fsync");
    CHECK(close(fd) == 0, "close");
    errno = 0;
    CHECK(close(fd) < 0 && errno == EBADF, "close again gives %s", errname(errno));

    struct stat st;
    CHECK(stat("a.txt", &st) == 0 && S_ISREG(st.st_mode), "stat: regular file");
    CHECK((st.st_mode & 0777) == 0644, "mode 0%o with umask 022", (unsigned)(st.st_mode & 0777));
    umask(old_mask);

    /* Read back in 4096-byte pieces. */
    fd = open("a.txt", O_RDONLY);
    CHECK(fd >= 0, "open a.txt read-only");
    CHECK(fstat(fd, &st) == 0 && st.st_size == SIZE, "fstat size %lld", (long long)st.st_size);
    done = 0;
    ssize_t r;
    while ((r = read(fd, back + done, SIZE - done < 4096 ? SIZE - done : 4096)) > 0)
        done += (size_t)r;
    CHECK(done == SIZE && memcmp(buf, back, SIZE) == 0, "read back %zu bytes, contents equal", done);
    CHECK(read(fd, back, 10) == 0, "read at end of file gives 0");

    /* lseek in all three ways. */
    unsigned char small[16];
    CHECK(lseek(fd, 12345, SEEK_SET) == 12345, "lseek SEEK_SET 12345");
    CHECK(read(fd, small, 16) == 16 && memcmp(small, buf + 12345, 16) == 0, "read 16 bytes at 12345");
    CHECK(lseek(fd, -100, SEEK_CUR) == 12261, "lseek SEEK_CUR -100");
    CHECK(lseek(fd, -10, SEEK_END) == SIZE - 10, "lseek SEEK_END -10");
    CHECK(read(fd, small, 16) == 10 && memcmp(small, buf + SIZE - 10, 10) == 0, "short read of the last 10 bytes");
    errno = 0;
    CHECK(lseek(fd, -1, SEEK_SET) < 0 && errno == EINVAL, "lseek to -1 gives %s", errname(errno));
    CHECK(pread(fd, small, 16, 777) == 16 && memcmp(small, buf + 777, 16) == 0, "pread 16 bytes at 777");
    CHECK(lseek(fd, 0, SEEK_CUR) == SIZE, "pread left the offset alone");
    int fd2 = dup(fd);
    CHECK(fd2 >= 0 && lseek(fd2, 0, SEEK_CUR) == SIZE, "dup shares the offset");
    int flags = fcntl(fd2, F_GETFD);
    CHECK(flags >= 0 && !(flags & FD_CLOEXEC), "dup clears FD_CLOEXEC");
    CHECK(fcntl(fd, F_GETFL) >= 0 && (fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY, "F_GETFL is O_RDONLY");
    close(fd2);
    close(fd);

    /* Read-write: pwrite, writev/readv, ftruncate. */
    fd = open("a.txt", O_RDWR);
    CHECK(pwrite(fd, "HRT", 3, 50) == 3, "pwrite 3 bytes at 50");
    CHECK(pread(fd, small, 5, 49) == 5 && small[0] == buf[49] && memcmp(small + 1, "HRT", 3) == 0 && small[4] == buf[53],
          "pread sees them");
    struct iovec iov[3] = {{"one ", 4}, {"two ", 4}, {"three\n", 6}};
    CHECK(lseek(fd, 0, SEEK_SET) == 0 && writev(fd, iov, 3) == 14, "writev 3 pieces");
    char r1[4], r2[10];
    struct iovec riov[2] = {{r1, 4}, {r2, 10}};
    CHECK(lseek(fd, 0, SEEK_SET) == 0 && readv(fd, riov, 2) == 14 && memcmp(r1, "one ", 4) == 0 &&
              memcmp(r2, "two three\n", 10) == 0,
          "readv 2 pieces");
    CHECK(ftruncate(fd, 1000) == 0 && fstat(fd, &st) == 0 && st.st_size == 1000, "ftruncate to 1000");
    close(fd);

    /* rename, access, stat of the old name. */
    CHECK(rename("a.txt", "b.txt") == 0, "rename a.txt b.txt");
    errno = 0;
    CHECK(stat("a.txt", &st) < 0 && errno == ENOENT, "stat a.txt gives %s", errname(errno));
    CHECK(access("b.txt", R_OK | W_OK) == 0, "access b.txt");
    CHECK(stat("b.txt", &st) == 0 && st.st_size == 1000, "b.txt has 1000 bytes");
    errno = 0;
    CHECK(open("missing/x", O_RDONLY) < 0 && errno == ENOENT, "open missing/x gives %s", errname(errno));

    /* A directory with files, listed sorted. */
    CHECK(mkdir("sub", 0755) == 0, "mkdir sub");
    errno = 0;
    CHECK(mkdir("sub", 0755) < 0 && errno == EEXIST, "mkdir sub again gives %s", errname(errno));
    CHECK(stat("sub", &st) == 0 && S_ISDIR(st.st_mode), "sub is a directory");
    static const char *names[] = {"zeta", "alpha", "mid.dat", "Upper", "x1", "x10", "x2"};
    int created = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int f = openat(AT_FDCWD, names[i], O_CREAT | O_WRONLY | O_TRUNC, 0600);
        if (f >= 0 && write(f, names[i], strlen(names[i])) == (ssize_t)strlen(names[i]) && close(f) == 0)
            created++;
    }
    CHECK(created == 7, "created %d files", created);
    char listing[1024];
    list_dir(listing, sizeof listing);
    printf("     listing: %s\n", listing);
    /* Many entries, so that getdents64 needs several calls. */
    int many = 0;
    char name[64];
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof name, "sub/entry-with-a-longish-name-%03d", i);
        int f = open(name, O_CREAT | O_WRONLY, 0600);
        if (f >= 0 && close(f) == 0)
            many++;
    }
    CHECK(many == 300, "created 300 files in sub");
    CHECK(chdir("sub") == 0, "chdir sub");
    int seen = 0;
    unsigned sum = 0;
    DIR *d = opendir(".");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        int k;
        if (sscanf(e->d_name, "entry-with-a-longish-name-%d", &k) == 1) {
            seen++;
            sum += (unsigned)k;
        }
    }
    if (d)
        closedir(d);
    CHECK(seen == 300 && sum == 299 * 300 / 2, "readdir saw all 300 entries exactly once");
    errno = 0;
    CHECK(rmdir("../sub") < 0 && errno == ENOTEMPTY, "rmdir of a non-empty directory gives %s", errname(errno));
    int removed = 0;
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof name, "entry-with-a-longish-name-%03d", i);
        removed += unlink(name) == 0;
    }
    CHECK(removed == 300, "unlinked 300 files");
    CHECK(chdir("..") == 0, "chdir ..");
    CHECK(unlinkat(AT_FDCWD, "sub", AT_REMOVEDIR) == 0, "unlinkat sub AT_REMOVEDIR");

    removed = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        removed += unlink(names[i]) == 0;
    CHECK(removed == 7, "unlinked 7 files");
    CHECK(unlink("b.txt") == 0, "unlink b.txt");
    errno = 0;
    CHECK(unlink("b.txt") < 0 && errno == ENOENT, "unlink b.txt again gives %s", errname(errno));

    /* One file stays for the caller to compare. */
    FILE *kept = fopen("kept.txt", "w");
    CHECK(kept != NULL, "fopen kept.txt");
    if (kept) {
        for (int i = 0; i < 100; i++)
            fprintf(kept, "line %d: %d\n", i, i * i);
        CHECK(fclose(kept) == 0, "fclose kept.txt");
    }
    list_dir(listing, sizeof listing);
    printf("     listing: %s\n", listing);

    CHECK(chdir(start_cwd) == 0, "chdir back");
    if (own_dir) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/kept.txt", dir);
        CHECK(unlink(path) == 0, "unlink kept.txt");
        CHECK(rmdir(dir) == 0, "rmdir the temporary directory");
    }
    printf("%s: %d failures\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}
