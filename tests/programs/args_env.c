/* Prints argc, every argv string, selected environment variables, a digest of the whole
 * environment and the auxiliary-vector entries whose values do not depend on the machine. */
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

extern char **environ;

static uint64_t fnv1a(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

static void print_escaped(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
    putchar('"');
}

int main(int argc, char **argv, char **envp) {
    int failures = 0;
    printf("argc %d\n", argc);
    for (int i = 0; i < argc; i++) {
        printf("argv[%d] ", i);
        print_escaped(argv[i]);
        putchar('\n');
    }
    if (argv[argc] != NULL) {
        printf("argv[argc] is not NULL\n");
        failures++;
    }

    static const char *names[] = {"HRT_TEST_VAR", "HRT_TEST_EMPTY", "HRT_TEST_SPACES", "HRT_TEST_UNSET"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        printf("env %s ", names[i]);
        if (v)
            print_escaped(v);
        else
            printf("<unset>");
        putchar('\n');
    }

    /* The whole environment, order-independent: its size and a sum of string hashes. */
    size_t envc = 0;
    uint64_t digest = 0;
    for (char **e = envp; *e; e++) {
        envc++;
        digest += fnv1a(*e);
    }
    printf("envc %zu digest %016llx\n", envc, (unsigned long long)digest);
    if (envp != environ) {
        printf("envp != environ\n");
        failures++;
    }
    /* envp follows argv's NULL on the initial stack. */
    if (envp != argv + argc + 1) {
        printf("envp does not follow argv\n");
        failures++;
    }

    /* Auxiliary vector: values that are the same natively and in any VM. */
    printf("AT_PAGESZ %lu\n", getauxval(AT_PAGESZ));
    printf("AT_CLKTCK %lu\n", getauxval(AT_CLKTCK));
    printf("AT_SECURE %lu\n", getauxval(AT_SECURE));
    printf("AT_UID matches getuid %s\n", getauxval(AT_UID) == getuid() ? "yes" : "no");
    printf("AT_EUID matches geteuid %s\n", getauxval(AT_EUID) == geteuid() ? "yes" : "no");
    printf("AT_GID matches getgid %s\n", getauxval(AT_GID) == getgid() ? "yes" : "no");
    printf("AT_EGID matches getegid %s\n", getauxval(AT_EGID) == getegid() ? "yes" : "no");
    printf("AT_PHENT %lu\n", getauxval(AT_PHENT));
    printf("AT_PHDR present %s\n", getauxval(AT_PHDR) ? "yes" : "no");
    printf("AT_PHNUM present %s\n", getauxval(AT_PHNUM) ? "yes" : "no");
    printf("AT_ENTRY present %s\n", getauxval(AT_ENTRY) ? "yes" : "no");
    const char *platform = (const char *)getauxval(AT_PLATFORM);
    printf("AT_PLATFORM %s\n", platform ? platform : "<none>");
    const char *execfn = (const char *)getauxval(AT_EXECFN);
    printf("AT_EXECFN is argv[0] %s\n", execfn && strcmp(execfn, argv[0]) == 0 ? "yes" : "no");
    const unsigned char *random = (const unsigned char *)getauxval(AT_RANDOM);
    int random_nonzero = 0;
    if (random)
        for (int i = 0; i < 16; i++)
            random_nonzero |= random[i];
    printf("AT_RANDOM 16 bytes not all zero %s\n", random_nonzero ? "yes" : "no");
    printf("AT_MINSIGSTKSZ present %s\n", getauxval(AT_MINSIGSTKSZ) ? "yes" : "no");
    return failures ? 1 : 0;
}
