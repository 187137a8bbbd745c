/* Socket filters as on Linux: SO_ATTACH_FILTER's classic BPF program decides which datagrams a
 * socket receives (one that keeps nothing, one that keeps datagrams whose first byte is 'k',
 * SO_DETACH_FILTER), with Linux's checks (a wrong size, too many instructions, an unreadable
 * program, an invalid one); and raw sockets' ICMP_FILTER. hrt refused both options
 * (ENOPROTOOPT with a line: ping warned "failed to install socket filter"). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/icmp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef SOL_RAW
#define SOL_RAW 255
#endif

static const char *err(int r) {
    return r == 0 ? "0" : strerror(errno);
}

/* Sends "k1", "x2", "k3" from `tx` to `rx` and says which arrived. */
static void exchange(const char *what, int tx, int rx, struct sockaddr_in *to) {
    const char *msgs[] = {"k1", "x2", "k3"};
    for (int i = 0; i < 3; i++)
        sendto(tx, msgs[i], 2, 0, (struct sockaddr *)to, sizeof *to);
    printf("%s:", what);
    char buf[8];
    long n;
    while ((n = recv(rx, buf, sizeof buf, MSG_DONTWAIT)) > 0)
        printf(" %.*s", (int)n, buf);
    printf(" (then %s)\n", strerror(errno));
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(rx, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(rx, (struct sockaddr *)&a, &len) != 0) {
        perror("bind");
        return 1;
    }
    exchange("no filter", tx, rx, &a);

    struct sock_filter none[] = {BPF_STMT(BPF_RET | BPF_K, 0)};
    struct sock_fprog prog = {1, none};
    printf("attach keep-nothing: %s\n", err(setsockopt(rx, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog)));
    exchange("keep-nothing", tx, rx, &a);

    /* UDP sockets' filters see the UDP header first: the payload starts at byte 8. */
    struct sock_filter first_k[] = {
        BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 8),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 'k', 0, 1),
        BPF_STMT(BPF_RET | BPF_K, 0xffff),
        BPF_STMT(BPF_RET | BPF_K, 0),
    };
    prog = (struct sock_fprog){4, first_k};
    printf("attach keep-k: %s\n", err(setsockopt(rx, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog)));
    exchange("keep-k", tx, rx, &a);
    int dummy = 0;
    printf("detach: %s\n", err(setsockopt(rx, SOL_SOCKET, SO_DETACH_FILTER, &dummy, sizeof dummy)));
    exchange("detached", tx, rx, &a);

    printf("wrong size: %s\n", err(setsockopt(rx, SOL_SOCKET, SO_ATTACH_FILTER, &prog, 8)));
    struct sock_fprog unreadable = {4, (struct sock_filter *)8};
    printf("unreadable program: %s\n",
           err(setsockopt(rx, SOL_SOCKET, SO_ATTACH_FILTER, &unreadable, sizeof unreadable)));
    printf("unreadable struct: %s\n", err(setsockopt(rx, SOL_SOCKET, SO_ATTACH_FILTER, (void *)8, 16)));
    struct sock_fprog huge = {4097, first_k};
    printf("4097 instructions: %s\n", err(setsockopt(rx, SOL_SOCKET, SO_ATTACH_FILTER, &huge, sizeof huge)));
    struct sock_filter bad[] = {BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 8)};
    prog = (struct sock_fprog){1, bad};
    printf("no return: %s\n", err(setsockopt(rx, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog)));
    struct sock_fprog empty = {0, first_k};
    printf("no instructions: %s\n", err(setsockopt(rx, SOL_SOCKET, SO_ATTACH_FILTER, &empty, sizeof empty)));

    /* A raw ICMP socket's filter (root only; as natively otherwise). */
    int raw = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
    if (raw < 0) {
        printf("raw socket: %s\n", strerror(errno));
    } else {
        struct icmp_filter f = {~(1u << ICMP_ECHOREPLY)}, back = {0};
        socklen_t fl = sizeof back;
        printf("ICMP_FILTER: %s\n", err(setsockopt(raw, SOL_RAW, ICMP_FILTER, &f, sizeof f)));
        printf("ICMP_FILTER read back: %s, same %d\n", err(getsockopt(raw, SOL_RAW, ICMP_FILTER, &back, &fl)),
               back.data == f.data);
        close(raw);
    }
    return 0;
}
