/* A shared library that announces on stderr each way the dynamic loader runs it: its constructor
 * (LD_PRELOAD, and LD_AUDIT, which loads it too) and la_version, the first call ld.so makes into
 * an auditing library (LD_AUDIT). The dynamic-linking tests count the lines: a process that loads
 * it prints them once each, so `LD_PRELOAD=lib hrt run ./prog` shows whether the variable reached
 * the program only (once) or also `hrt` itself (twice). */
#include <string.h>
#include <unistd.h>

static void say(const char *s)
{
    /* write(2) only: nothing of libc that needs it initialised. */
    ssize_t ignored = write(2, s, strlen(s));
    (void)ignored;
}

__attribute__((constructor)) static void announce(void)
{
    say("dyn_announce: constructor ran\n");
}

unsigned int la_version(unsigned int version)
{
    say("dyn_announce: la_version ran\n");
    return version;
}
