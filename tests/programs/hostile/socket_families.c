/* socket() of families hrt does not forward (AF_PACKET, AF_RDS, AF_CAN, AF_ALG, ...), of
 * AF_VSOCK (40, forwarded) and of numbers no family has: one line per family and type with the
 * error, or "made". Where the host cannot make the socket either, hrt answers the host's error
 * (ENODEV, ESOCKTNOSUPPORT, EAFNOSUPPORT as natively); where the host could, EAFNOSUPPORT for a
 * family not forwarded (the test compares). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void) {
    int families[] = {3, 4, 5, 9, 17, 21, 29, 30, 31, 38, 40, 42, 44, 46, 99, 200};
    int types[] = {SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_SEQPACKET};
    for (unsigned i = 0; i < sizeof families / sizeof *families; i++)
        for (unsigned j = 0; j < sizeof types / sizeof *types; j++) {
            errno = 0;
            int s = socket(families[i], types[j], 0);
            printf("family %d type %d: %s\n", families[i], types[j], s >= 0 ? "made" : strerror(errno));
            if (s >= 0)
                close(s);
        }
    return 0;
}
