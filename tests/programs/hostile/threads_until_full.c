/* Starts up to 5,000 threads with 16 KiB stacks that wait for good, then says how it ended.
 * Natively they all start; under hrt --mem 512M each takes a kernel stack and record from the
 * kernel's share of memory (64 MiB there), so thread creation fails with EAGAIN at ~2,200:
 * `hrt` now says so once on its stderr (it failed with no word why). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void *wait_for_good(void *arg) {
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

int main(void) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 16384);
    int n = 0, e = 0;
    for (; n < 5000; n++) {
        pthread_t t;
        if ((e = pthread_create(&t, &attr, wait_for_good, NULL)))
            break;
    }
    printf("%s\n", n == 5000 ? "5000 threads started" : strerror(e));
    return 0;
}
