/* Opens /proc/self/pagemap twice. Linux opens it; under hrt it would be the monitor's own page
 * map, so it is refused (EACCES), with one line on stderr saying why (it was silent). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    for (int i = 0; i < 2; i++) {
        int fd = open("/proc/self/pagemap", O_RDONLY);
        printf("open /proc/self/pagemap: %s\n", fd >= 0 ? "opened" : strerror(errno));
    }
    return 0;
}
