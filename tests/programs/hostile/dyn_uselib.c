/* Linked against libdynlib.so (found through LD_LIBRARY_PATH at run time): prints its answer
 * and exits with it, so a preloaded library's override shows in both. */
#include <stdio.h>

int dyn_answer(void);

int main(void)
{
    int a = dyn_answer();
    printf("dyn_answer() = %d\n", a);
    return a;
}
