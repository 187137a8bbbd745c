// Two PT_LOAD segments sharing a page (elf_shared_page.ld: the data segment starts right after
// the code, in its last page; no libc). Linux maps each segment over the one before, so the
// shared page gets the data segment's permissions: a store there works, but running the code
// segment's last function, which lies on that page, faults (SIGSEGV, exit 139) although its
// own segment is executable.
// Build: gcc -static -nostdlib -no-pie -Wl,-T,elf_shared_page.ld
#include "../bare/nolibc.h"

// Placed last in the code segment by the linker script, on the page the data segment starts in.
__attribute__((section(".text.last"), noinline)) int on_shared_page(void) {
    return 7;
}

volatile int data = 1;

__attribute__((force_align_arg_pointer, noreturn)) void _start(void) {
    int shared = ((long)&data >> 12) == ((long)on_shared_page >> 12);
    put(1, shared ? "data and code share a page\n" : "no shared page (linker script ignored?)\n");
    data = 2;
    put(1, "store on the shared page: ok\n");
    int r = on_shared_page();
    put(1, r == 7 ? "call on the shared page: ok\n" : "call on the shared page: wrong result\n");
    quit(0);
}
