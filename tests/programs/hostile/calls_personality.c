/* personality: asked, set (ADDR_NO_RANDOMIZE, as `setarch -R` does), kept across fork and
 * exec, and the old value answered; PER_LINUX32 (`linux32`) makes uname's machine i686 (it
 * stayed x86_64 under hrt). */
#include <stdio.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    setvbuf(stdout, 0, _IONBF, 0);
    if (argc > 1 && strcmp(argv[1], "after-exec") == 0) {
        printf("after exec: %#x\n", personality(0xffffffff));
        return 0;
    }
    printf("at start: %#x\n", personality(0xffffffff));
    struct utsname u;
    personality(PER_LINUX32);
    uname(&u);
    printf("PER_LINUX32: machine %s\n", u.machine);
    personality(PER_LINUX);
    uname(&u);
    printf("PER_LINUX again: machine %s\n", u.machine);
    printf("set answers the old: %#x\n", personality(ADDR_NO_RANDOMIZE));
    printf("now: %#x\n", personality(0xffffffff));
    pid_t c = fork();
    if (c == 0) {
        printf("in a forked child: %#x\n", personality(0xffffffff));
        _exit(0);
    }
    waitpid(c, 0, 0);
    execl("/proc/self/exe", argv[0], "after-exec", (char *)0);
    return 1;
}
