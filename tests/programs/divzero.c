/* Integer division by zero: SIGFPE (exit status 136 through a shell). Volatile operands keep the
 * compiler from folding or removing the division. */
#include <stdio.h>

int main(void) {
    volatile int dividend = 42, divisor = 0;
    printf("about to divide by zero\n");
    fflush(stdout);
    volatile int quotient = dividend / divisor;
    printf("quotient %d\n", quotient);
    return 0;
}
