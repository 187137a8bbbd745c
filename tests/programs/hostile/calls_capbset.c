/* PR_CAPBSET_READ for capabilities 0-63, as procps tools ask at start: 1, 0, or 9 for EINVAL
 * (a capability the kernel does not know). */
#include <stdio.h>
#include <sys/prctl.h>

int main(void) {
    for (int c = 0; c < 64; c++) {
        int r = prctl(PR_CAPBSET_READ, c);
        printf("%d", r < 0 ? 9 : r);
    }
    printf("\n");
    return 0;
}
