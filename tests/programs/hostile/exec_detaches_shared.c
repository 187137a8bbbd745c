/* A forked child that has a System V segment attached and a memory file mapped shared, and
 * then execs a program, has neither once its parent's waitpid returns, as on Linux, where the
 * exec detaches them: the segment counts one attachment (the parent's), and the parent may
 * seal the memory file against writes. Under hrt the child's exec of a host program kept
 * them until the late teardown (nattch 2, F_SEAL_WRITE EBUSY in about half the runs). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc > 1) return 0; /* the exec'd program */
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 1;
    self[n] = 0;
    int rounds = 10, one_attached = 0, sealed = 0;
    for (int i = 0; i < rounds; i++) {
        int id = shmget(IPC_PRIVATE, 1 << 16, IPC_CREAT | 0600);
        char *seg = shmat(id, 0, 0);
        int mfd = memfd_create("exec_detaches", MFD_ALLOW_SEALING);
        if (id < 0 || seg == (void *)-1 || mfd < 0 || ftruncate(mfd, 1 << 16)) return 1;
        pid_t c = fork();
        if (c == 0) {
            char *m = mmap(0, 1 << 16, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
            if (m == MAP_FAILED) _exit(2);
            m[0] = seg[0] = 1;
            execl(self, self, "exec'd", (char *)0);
            _exit(127);
        }
        int st;
        waitpid(c, &st, 0);
        struct shmid_ds d;
        shmctl(id, IPC_STAT, &d);
        one_attached += d.shm_nattch == 1;
        sealed += fcntl(mfd, F_ADD_SEALS, F_SEAL_WRITE) == 0;
        shmdt(seg);
        shmctl(id, IPC_RMID, 0);
        close(mfd);
    }
    printf("after the exec'd child's waitpid: segment attached once in %d of %d rounds, memory file sealed in %d\n",
           one_attached, rounds, sealed);
    return 0;
}
