/* shmdt detaches every piece of an attachment that munmap or mprotect cut apart, and POSIX
 * message queue descriptors are close-on-exec whatever mq_open's flags, as on Linux (hrt
 * detached only the first piece, the segment staying attached; and kept queue descriptors
 * open across exec unless O_CLOEXEC was given). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <mqueue.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

static void detach_pieces(const char *how) {
    int id = shmget(IPC_PRIVATE, 1 << 20, IPC_CREAT | 0600);
    char *a = shmat(id, 0, 0);
    if (a == (void *)-1) {
        printf("%s: shmat failed\n", how);
        return;
    }
    if (how[0] == 'm' && how[1] == 'u')
        munmap(a + 4096, 4096);
    else
        mprotect(a + 4096, 4096, PROT_READ);
    int r = shmdt(a);
    struct shmid_ds d;
    shmctl(id, IPC_STAT, &d);
    unsigned char v;
    int tail = mincore(a + 8192, 4096, &v) == 0;
    printf("%s: shmdt %d, attached %lu, its tail still mapped %d, shmdt again %d\n", how, r,
           (unsigned long)d.shm_nattch, tail, shmdt(a + 8192));
    shmctl(id, IPC_RMID, 0);
}

int main(int argc, char **argv) {
    if (argc > 1) {
        printf("after exec: the queue descriptor is %s\n", fcntl(atoi(argv[1]), F_GETFD) >= 0 ? "open" : "closed");
        return 0;
    }
    detach_pieces("munmap inside");
    detach_pieces("mprotect inside");
    char name[64];
    snprintf(name, sizeof name, "/hrt_ipc_cloexec_%d", getpid());
    mqd_t q = mq_open(name, O_RDWR | O_CREAT, 0600, 0);
    mq_unlink(name);
    if (q < 0) {
        printf("mq_open failed\n");
        return 1;
    }
    printf("queue descriptor FD_CLOEXEC %d\n", fcntl(q, F_GETFD));
    fflush(stdout);
    char self[PATH_MAX], fd[16];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 1;
    self[n] = 0;
    snprintf(fd, sizeof fd, "%d", (int)q);
    execl(self, self, fd, (char *)0);
    return 1;
}
