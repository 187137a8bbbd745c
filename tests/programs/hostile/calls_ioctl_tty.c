// ioctl requests programs make of pipes and terminals: FIONBIO (libuv, so Node.js, sets
// non-blocking mode with it), terminal attributes set and read back, window size, process
// group, flushing, on a pseudo-terminal pair the program opens itself (/dev/ptmx: TIOCSPTLCK,
// TIOCGPTN), and the errors of the wrong descriptor kind and bad pointers. Plus capget and the
// protection-key calls (a CPU without protection keys). Compared with the native run.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#define SHOW_WIDTH 36
#include "show.h"

/* The kernel's struct termios2 (asm/termbits.h clashes with glibc's termios.h). */
struct k_termios2 {
    unsigned c_iflag, c_oflag, c_cflag, c_lflag;
    unsigned char c_line, c_cc[19];
    unsigned c_ispeed, c_ospeed;
};
#define K_TCGETS2 0x802c542aul
#define K_TCSETS2 0x402c542bul
#define K_TCSETSW2 0x402c542cul
#define K_TCSETSF2 0x402c542dul
#ifndef BOTHER
#define BOTHER 0010000
#endif

static int host_has_pkeys(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[4096];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f))
        found = strncmp(line, "flags", 5) == 0 && strstr(line, " pku") != NULL;
    if (f)
        fclose(f);
    return found;
}

int main(void) {
    int p[2];
    if (pipe(p) != 0)
        return 1;
    int on = 1, off = 0, n = -1;
    char c;
    show("FIONBIO on a pipe", ioctl(p[0], FIONBIO, &on));
    show("read of an empty non-blocking pipe", read(p[0], &c, 1));
    show("F_GETFL has O_NONBLOCK", (fcntl(p[0], F_GETFL) & O_NONBLOCK) != 0);
    show("FIONBIO off", ioctl(p[0], FIONBIO, &off));
    show("F_GETFL has O_NONBLOCK", (fcntl(p[0], F_GETFL) & O_NONBLOCK) != 0);
    show("FIONBIO, bad pointer", ioctl(p[0], FIONBIO, (int *)8));
    struct termios t;
    show("TCGETS on a pipe", ioctl(p[0], TCGETS, &t));
    show("TCSETS on a pipe", ioctl(p[0], TCSETS, &t));
    show("TCSETS on a pipe, bad pointer", ioctl(p[0], TCSETS, (void *)8));
    show("TIOCGPGRP on a pipe", ioctl(p[0], TIOCGPGRP, &n));
    show("TCFLSH on a pipe", ioctl(p[0], TCFLSH, TCIFLUSH));
    show("FIONREAD on a pipe", (write(p[1], "abc", 3), ioctl(p[0], FIONREAD, &n)));
    printf("  readable: %d\n", n);

    int m = posix_openpt(O_RDWR | O_NOCTTY);
    show("posix_openpt", m >= 0 ? 0 : -1);
    show("grantpt", grantpt(m));
    show("unlockpt", unlockpt(m));
    char *name = ptsname(m);
    show("ptsname under /dev/pts/", name && strncmp(name, "/dev/pts/", 9) == 0 ? 0 : -1);
    int s = open(name ? name : "/nonexistent", O_RDWR | O_NOCTTY);
    show("open the slave", s >= 0 ? 0 : -1);
    show("TCGETS on the slave", tcgetattr(s, &t));
    cfmakeraw(&t);
    t.c_cc[VMIN] = 1;
    show("TCSETS raw", tcsetattr(s, TCSANOW, &t));
    struct termios back;
    show("TCGETS again", tcgetattr(s, &back));
    printf("  raw mode kept: %s\n", (back.c_lflag & (ICANON | ECHO)) == 0 && (back.c_oflag & OPOST) == 0 ? "yes" : "no");
    show("TCSETSF (drain and flush)", tcsetattr(s, TCSAFLUSH, &t));
    show("TCSETS, bad pointer", ioctl(s, TCSETS, (void *)8));
    struct winsize w = {.ws_row = 33, .ws_col = 101}, w2 = {0};
    show("TIOCSWINSZ", ioctl(m, TIOCSWINSZ, &w));
    show("TIOCGWINSZ on the slave", ioctl(s, TIOCGWINSZ, &w2));
    printf("  size: %dx%d\n", w2.ws_row, w2.ws_col);
    show("master write", write(m, "hello", 5));
    char buf[16] = {0};
    show("slave read (raw)", read(s, buf, sizeof buf - 1));
    printf("  got: %s\n", buf);
    show("slave write", write(s, "back", 4));
    show("TIOCOUTQ on the slave", ioctl(s, TIOCOUTQ, &n));
    memset(buf, 0, sizeof buf);
    show("master read", read(m, buf, sizeof buf - 1));
    printf("  got: %s\n", buf);
    show("TCFLSH both", ioctl(s, TCFLSH, TCIOFLUSH));
    show("TCXONC off/on", ioctl(s, TCXONC, TCOOFF) | ioctl(s, TCXONC, TCOON));
    show("TIOCGPGRP (no controlling tty)", ioctl(s, TIOCGPGRP, &n));
    show("TIOCGSID (no controlling tty)", ioctl(s, TIOCGSID, &n));

    /* termios2 (glibc's tcsetattr from 2.42), termio, and the other requests of a terminal. */
    struct k_termios2 t2, t2back;
    show("TCGETS2", ioctl(s, K_TCGETS2, &t2));
    t2.c_lflag &= ~ECHO;
    t2.c_cflag = (t2.c_cflag & ~CBAUD) | BOTHER;
    t2.c_ispeed = t2.c_ospeed = 12345;
    show("TCSETS2 (any speed)", ioctl(s, K_TCSETS2, &t2));
    show("TCGETS2 again", ioctl(s, K_TCGETS2, &t2back));
    printf("  echo off: %s, speed %u\n", t2back.c_lflag & ECHO ? "no" : "yes", t2back.c_ospeed);
    show("TCSETSW2", ioctl(s, K_TCSETSW2, &t2));
    show("TCSETSF2", ioctl(s, K_TCSETSF2, &t2));
    show("TCSETS2, bad pointer", ioctl(s, K_TCSETS2, (void *)8));
    show("TCGETS2 on a pipe", ioctl(p[0], K_TCGETS2, &t2));
    struct termio to;
    show("TCGETA", ioctl(s, TCGETA, &to));
    printf("  termio lflag matches termios: %s\n", to.c_lflag == (unsigned short)t2back.c_lflag ? "yes" : "no");
    show("TCSETA", ioctl(s, TCSETA, &to));
    show("TCSETAW", ioctl(s, TCSETAW, &to));
    show("TCSETAF", ioctl(s, TCSETAF, &to));
    show("TIOCGETD", ioctl(s, TIOCGETD, &n));
    printf("  line discipline %d\n", n);
    show("TIOCSETD N_TTY", ioctl(s, TIOCSETD, &n));
    show("TIOCEXCL", ioctl(s, TIOCEXCL));
    show("TIOCGEXCL", ioctl(s, TIOCGEXCL, &n));
    printf("  exclusive %d\n", n);
    show("open the slave again (exclusive; root may)", open(name ? name : "/nonexistent", O_RDWR | O_NOCTTY) >= 0 ? 0 : -1);
    show("TIOCNXCL", ioctl(s, TIOCNXCL));
    struct termios locked;
    show("TIOCGLCKTRMIOS", ioctl(s, TIOCGLCKTRMIOS, &locked));
    show("TIOCGSOFTCAR", ioctl(s, TIOCGSOFTCAR, &n));
    show("TIOCSSOFTCAR", ioctl(s, TIOCSSOFTCAR, &n));
    unsigned dev = 0;
    show("TIOCGDEV", ioctl(s, TIOCGDEV, &dev));
    show("TIOCSBRK", ioctl(s, TIOCSBRK));
    show("TIOCCBRK", ioctl(s, TIOCCBRK));
    int one = 1;
    show("TIOCPKT on the master", ioctl(m, TIOCPKT, &one));
    show("TIOCGPKT", ioctl(m, TIOCGPKT, &n));
    printf("  packet mode %d\n", n);
    int zero = 0;
    show("TIOCPKT off", ioctl(m, TIOCPKT, &zero));
    show("TIOCGPTLCK", ioctl(m, TIOCGPTLCK, &n));
    printf("  locked %d\n", n);
    int peer = ioctl(m, 0x5441 /* TIOCGPTPEER */, O_RDWR | O_NOCTTY | O_CLOEXEC);
    show("TIOCGPTPEER", peer >= 0 ? 0 : -1);
    show("  a terminal", isatty(peer) ? 0 : -1);
    show("  close-on-exec", fcntl(peer, F_GETFD) == FD_CLOEXEC ? 0 : -1);
    show("  writes reach the master", write(peer, "peer", 4));
    memset(buf, 0, sizeof buf);
    show("  master reads them", read(m, buf, sizeof buf - 1) > 0 && strstr(buf, "peer") ? 0 : -1);
    show("TIOCGPTPEER on the slave", ioctl(s, 0x5441, O_RDWR));

    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2], mine[2];
    show("capget v3", syscall(SYS_capget, &h, d));
    memcpy(mine, d, sizeof d);
    h.version = _LINUX_CAPABILITY_VERSION_1;
    show("capget v1", syscall(SYS_capget, &h, d));
    printf("  v1 effective is v3's low word: %s\n", d[0].effective == mine[0].effective ? "yes" : "no");
    h.version = 0x1234;
    show("capget unknown version", syscall(SYS_capget, &h, d));
    printf("  preferred version %#x\n", h.version);
    h.version = 0x1234;
    show("capget unknown version, no data", syscall(SYS_capget, &h, NULL));
    printf("  preferred version %#x\n", h.version);
    h.version = _LINUX_CAPABILITY_VERSION_3;
    h.pid = -1;
    show("capget pid -1", syscall(SYS_capget, &h, d));
    h.pid = getppid();
    show("capget of the parent", syscall(SYS_capget, &h, d));
    show("capget, bad header", syscall(SYS_capget, (void *)8, d));

    if (host_has_pkeys()) {
        printf("protection keys: the host has them, not compared\n");
    } else {
        show("pkey_alloc", syscall(SYS_pkey_alloc, 0, 0));
        show("pkey_alloc, bad flags", syscall(SYS_pkey_alloc, 1, 0));
        show("pkey_alloc, bad rights", syscall(SYS_pkey_alloc, 0, 4));
        show("pkey_free 1", syscall(SYS_pkey_free, 1));
        void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        show("pkey_mprotect key -1", syscall(SYS_pkey_mprotect, page, 4096, PROT_READ, -1));
        show("pkey_mprotect key 1", syscall(SYS_pkey_mprotect, page, 4096, PROT_READ, 1));
        show("pkey_mprotect key 1, empty", syscall(SYS_pkey_mprotect, page, 0, PROT_READ, 1));
    }
    return 0;
}
