/* Shared memory a forked child mapped is let go once the parent has reaped the child, as on
 * Linux: the parent seals a memory file against writes (F_SEAL_WRITE needs no writable
 * mapping left: it was EBUSY under hrt, whose exited child kept its memory until after the
 * parent heard of it), and a SysV segment shows only the parent attached (nattch 1, not 2).
 * Five rounds each (the child's teardown raced the parent's wait).
 * Usage: shared_after_child_exit */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    int sealed = 0, attached_once = 0;
    for (int round = 0; round < 5; round++) {
        int mf = memfd_create("hrt-seal", MFD_ALLOW_SEALING);
        ftruncate(mf, 4096);
        char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, mf, 0);
        m[0] = 1;
        pid_t pid = fork();
        if (pid == 0) {
            m[1] = 2;
            _exit(0);
        }
        waitpid(pid, NULL, 0);
        munmap(m, 4096);
        int r = fcntl(mf, F_ADD_SEALS, F_SEAL_WRITE);
        if (r == 0)
            sealed++;
        else
            printf("round %d: F_SEAL_WRITE %s\n", round, strerrorname_np(errno));
        close(mf);

        int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
        char *s = shmat(id, NULL, 0);
        pid = fork();
        if (pid == 0) {
            s[0] = 3;
            _exit(0);
        }
        waitpid(pid, NULL, 0);
        struct shmid_ds ds;
        shmctl(id, IPC_STAT, &ds);
        if (ds.shm_nattch == 1)
            attached_once++;
        else
            printf("round %d: nattch %lu\n", round, (unsigned long)ds.shm_nattch);
        shmdt(s);
        shmctl(id, IPC_RMID, NULL);
    }
    printf("sealed after the child: %d of 5; only the parent attached: %d of 5\n", sealed, attached_once);
    return 0;
}
