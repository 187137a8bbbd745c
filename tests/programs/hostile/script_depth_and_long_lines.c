/* `#!` scripts as Linux's execve reads them, in the program's own exec (no fork): a script
 * may run through 5 scripts before its binary (the sixth is ELOOP; hrt said ELOOP at the
 * fifth), and a `#!` line longer than 256 bytes whose interpreter's name ends early runs with
 * its argument cut at byte 255 (hrt refused it with ENOEXEC). One process execs itself
 * through each in turn and prints what each stage sees. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "scratch.h"

static const char *names[] = {"n1", "n2", "n3", "n4", "n5", "n6"};

static void put(const char *name, const char *text) {
    FILE *f = fopen(name, "w");
    fputs(text, f);
    fclose(f);
    chmod(name, 0755);
}

static void finish(void) {
    char dir[4096];
    for (int i = 0; i < 6; i++)
        unlink(names[i]);
    unlink("long");
    if (getcwd(dir, sizeof dir))
        rmdir(dir);
}

int main(int argc, char **argv) {
    char *none[] = {"x", NULL};
    if (argc > 1 && !strcmp(argv[1], "nested")) {
        printf("5 scripts deep: ran with %d arguments, the last %s\n", argc, argv[argc - 1]);
        fflush(stdout);
        execv("./long", none);
        printf("long line: errno %d\n", errno);
    } else if (argc > 1 && !strncmp(argv[1], "long", 4)) {
        printf("long line: ran, its argument %zu bytes, then %s\n", strlen(argv[1]), argv[2]);
        fflush(stdout);
        execv("./n6", none);
        printf("6 scripts deep: %s\n", strerror(errno));
    } else {
        char self[4096], dir[] = "/tmp/hrt-script-depth-XXXXXX", line[600];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n < 0 || n > 100 || enter_scratch(dir) != 0)
            return 1;
        self[n] = 0;
        snprintf(line, sizeof line, "#!%s nested\n", self);
        put("n1", line);
        for (int i = 1; i < 6; i++) {
            snprintf(line, sizeof line, "#!./%s\n", names[i - 1]);
            put(names[i], line);
        }
        int len = snprintf(line, sizeof line, "#!%s long", self);
        memset(line + len, 'a', 300);
        strcpy(line + len + 300, "\n");
        put("long", line);
        fflush(stdout);
        execv("./n5", none);
        printf("5 scripts deep: %s\n", strerror(errno));
    }
    finish();
    return 0;
}
