/* A 64 TiB reservation, which Linux refuses too, then a 1 GiB one: under hrt --mem 512M the
 * second is ENOMEM as well, and the one line hrt says about a full program memory names the
 * 1 GiB request (it named the 64 TiB one, and the request that differs from Linux got none).
 * With an argument: 64 GiB of PROT_NONE, which Linux reserves whatever the machine's memory
 * (it does not count toward overcommit), and which got ENOMEM without the line. */
#include <stdio.h>
#include <sys/mman.h>

static void try_map(const char *what, size_t len, int prot) {
  void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  printf("%s: %s\n", what, p == MAP_FAILED ? "ENOMEM" : "mapped");
}

int main(int argc, char **argv) {
  (void)argv;
  if (argc > 1) {
    try_map("64 GiB PROT_NONE", (size_t)64 << 30, PROT_NONE);
    return 0;
  }
  try_map("64 TiB", (size_t)64 << 40, PROT_READ | PROT_WRITE);
  try_map("1 GiB", (size_t)1 << 30, PROT_READ | PROT_WRITE);
  return 0;
}
