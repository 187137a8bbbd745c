// A device routine given a device that does not exist, under OMP_TARGET_OFFLOAD=mandatory:
// libgomp ends the program with status 1 and its message, through `exit`, which flushes what
// the program printed before into a pipe's or file's buffer; the kernel's runtime must too.
#include <omp.h>
#include <stdio.h>

int main(void) {
    printf("before the device routine\n");
    void *p = omp_target_alloc(16, omp_get_num_devices() + 4);
    printf("after it: %s\n", p ? "memory" : "none");
    return 0;
}
