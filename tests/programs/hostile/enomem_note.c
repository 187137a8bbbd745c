/* A 64 TiB reservation, which Linux refuses too, then a 1 GiB one: under hrt --mem 512M the
 * second is ENOMEM as well, and the one line hrt says about a full program memory names the
 * 1 GiB request (it named the 64 TiB one, and the request that differs from Linux got none). */
#include <stdio.h>
#include <sys/mman.h>

static void try_map(const char *what, size_t len) {
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  printf("%s: %s\n", what, p == MAP_FAILED ? "ENOMEM" : "mapped");
}

int main(void) {
  try_map("64 TiB", (size_t)64 << 40);
  try_map("1 GiB", (size_t)1 << 30);
  return 0;
}
