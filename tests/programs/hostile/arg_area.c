/* The argument and environment areas execve leaves on the new stack, as programs that set
 * their title use them (libuv's uv_setup_args, nginx, PostgreSQL): the strings in one run in
 * order (argv[0] lowest, the environment right after the last argument), /proc/self/stat's
 * fields 48-51 naming that run, and /proc/self/cmdline and environ read from it as it is now,
 * with Linux's rule for a title that runs on into the environment area. Re-executes itself
 * first with a fixed argv and environment, so that both runs see the same strings. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char file[65536];

static size_t read_file(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    size_t n = 0;
    ssize_t r;
    while ((r = read(fd, file + n, sizeof file - 1 - n)) > 0)
        n += r;
    close(fd);
    return n;
}

/* Prints a file's bytes with NULs as '|', and its length. */
static void show(const char *label, const char *path) {
    size_t n = read_file(path);
    printf("%s (%zu bytes): ", label, n);
    for (size_t i = 0; i < n; i++)
        putchar(file[i] ? file[i] : '|');
    putchar('\n');
}

int main(int argc, char **argv, char **envp) {
    if (argc == 1) {
        char *args[] = {argv[0], "one", "two-two", "three", NULL};
        char *env[] = {"A=1", "TITLE_VAR=old", "Z=last", NULL};
        execve("/proc/self/exe", args, env);
        perror("execve");
        return 1;
    }
    int envc = 0;
    while (envp[envc])
        envc++;
    /* In one run, in order. */
    int in_order = 1;
    for (int i = 0; i + 1 < argc; i++)
        in_order &= argv[i + 1] == argv[i] + strlen(argv[i]) + 1;
    char *args_end = argv[argc - 1] + strlen(argv[argc - 1]) + 1;
    in_order &= envp[0] == args_end;
    for (int i = 0; i + 1 < envc; i++)
        in_order &= envp[i + 1] == envp[i] + strlen(envp[i]) + 1;
    char *env_end = envp[envc - 1] + strlen(envp[envc - 1]) + 1;
    printf("strings in one run, in order: %s\n", in_order ? "yes" : "no");

    /* /proc/self/stat: arg_start, arg_end, env_start, env_end (fields 48-51). */
    size_t n = read_file("/proc/self/stat");
    file[n] = 0;
    char *p = strrchr(file, ')');
    unsigned long f[52] = {0};
    int field = 2;
    for (char *tok = strtok(p + 1, " \n"); tok && field < 51; tok = strtok(NULL, " \n"))
        f[++field] = strtoul(tok, NULL, 10);
    printf("stat arg_start %s, arg_end %s, env_start %s, env_end %s\n",
           f[48] == (unsigned long)argv[0] ? "is argv[0]" : "differs",
           f[49] == (unsigned long)args_end ? "ends the arguments" : "differs",
           f[50] == (unsigned long)envp[0] ? "is envp[0]" : "differs",
           f[51] == (unsigned long)env_end ? "ends the environment" : "differs");

    show("cmdline", "/proc/self/cmdline");
    show("environ", "/proc/self/environ");

    /* setenv of a variable that exists changes the pointer, not the area. */
    setenv("TITLE_VAR", "new", 1);
    show("environ after setenv", "/proc/self/environ");

    /* A string changed in place shows changed. */
    argv[1][0] = 'O';
    envp[0][2] = '9';
    show("cmdline after a change in place", "/proc/self/cmdline");
    show("environ after a change in place", "/proc/self/environ");

    /* A title within the area, the rest cleared (libuv's uv_set_process_title). */
    size_t cap = args_end - argv[0];
    memset(argv[0], 0, cap);
    memcpy(argv[0], "title", 5);
    show("cmdline with a short title", "/proc/self/cmdline");

    /* A title that runs on into the environment area: the area's last byte is not a NUL, so
     * Linux shows the title up to its NUL. */
    memset(argv[0], 'T', cap + 5);
    argv[0][cap + 5] = 0;
    show("cmdline with a long title", "/proc/self/cmdline");
    show("environ under the long title", "/proc/self/environ");
    printf("arg area: done\n");
    return 0;
}
