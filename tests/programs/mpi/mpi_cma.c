/* Cross-memory attach between two MPI ranks, as UCX's `cma` transport does it: each rank
 * sends its pid and a buffer's address to the other, then copies the other's buffer with
 * process_vm_readv and writes into it with process_vm_writev, each byte checked. Then the
 * calls on the rank's own pid and the errors Linux gives (flags, a bad remote address, a pid
 * that does not exist, a bad local buffer), and the other rank's pages Linux refuses: a
 * read-only page written, a PROT_NONE page read or written (the copy stops there: the bytes
 * before it, EFAULT if none). Output is rank 0's; rank 1 prints its checks too. */
#define _GNU_SOURCE
#include <errno.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#define SIZE (1 << 20)

static unsigned char pattern(int rank, size_t i) { return (unsigned char)(i * 7 + rank * 13 + (i >> 12)); }

static long count_bad(const unsigned char *p, int rank, size_t n) {
    long bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += p[i] != pattern(rank, i);
    return bad;
}

static const char *result(ssize_t r) {
    static char buf[64];
    if (r >= 0)
        snprintf(buf, sizeof buf, "%zd", r);
    else
        snprintf(buf, sizeof buf, "-1 %s", strerrorname_np(errno));
    return buf;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = 1 - rank;
    unsigned char *mine = malloc(SIZE), *inbox = calloc(SIZE, 1), *copy = calloc(SIZE, 1);
    for (size_t i = 0; i < SIZE; i++)
        mine[i] = pattern(rank, i);
    /* Three pages: read-write, read-only, PROT_NONE (not unmapped: MPI could map it again). */
    unsigned char *guarded = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (guarded == MAP_FAILED || mprotect(guarded + 4096, 4096, PROT_READ) || mprotect(guarded + 8192, 4096, PROT_NONE))
        MPI_Abort(MPI_COMM_WORLD, 2);
    uint64_t me[4] = {(uint64_t)getpid(), (uint64_t)(uintptr_t)mine, (uint64_t)(uintptr_t)inbox, (uint64_t)(uintptr_t)guarded};
    uint64_t other[4];
    MPI_Sendrecv(me, 4, MPI_UINT64_T, peer, 0, other, 4, MPI_UINT64_T, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    pid_t pid = (pid_t)other[0];

    /* Read the other's buffer in two pieces (two remote iovecs into one local one). */
    struct iovec local = {copy, SIZE};
    struct iovec remote[2] = {{(void *)(uintptr_t)other[1], SIZE / 2}, {(void *)(uintptr_t)(other[1] + SIZE / 2), SIZE / 2}};
    ssize_t r = process_vm_readv(pid, &local, 1, remote, 2, 0);
    printf("rank %d: read the other's buffer: %s, mismatches %ld\n", rank, result(r), count_bad(copy, peer, SIZE));

    /* Write ours into the other's inbox; after the barrier the other checks it. */
    struct iovec from = {mine, SIZE}, to = {(void *)(uintptr_t)other[2], SIZE};
    r = process_vm_writev(pid, &from, 1, &to, 1, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d: wrote the other's inbox: %s; my inbox mismatches %ld\n", rank, result(r), count_bad(inbox, peer, SIZE));

    /* The rank's own memory through its own pid. */
    memset(copy, 0, SIZE);
    struct iovec self_remote = {mine, SIZE};
    r = process_vm_readv(getpid(), &local, 1, &self_remote, 1, 0);
    printf("rank %d: read itself: %s, mismatches %ld\n", rank, result(r), count_bad(copy, rank, SIZE));

    /* Errors. */
    r = process_vm_readv(pid, &local, 1, remote, 1, 1);
    printf("rank %d: flags 1: %s\n", rank, result(r));
    struct iovec bad = {(void *)16, 4096};
    r = process_vm_readv(pid, &local, 1, &bad, 1, 0);
    printf("rank %d: remote address 16: %s\n", rank, result(r));
    r = process_vm_readv(getpid(), &local, 1, &bad, 1, 0);
    printf("rank %d: own address 16: %s\n", rank, result(r));
    struct iovec bad_local = {(void *)16, 4096};
    r = process_vm_readv(pid, &bad_local, 1, remote, 1, 0);
    printf("rank %d: local address 16: %s\n", rank, result(r));
    r = process_vm_readv(pid, &local, 1, remote, 0, 0);
    printf("rank %d: no remote iovec: %s\n", rank, result(r));
    r = process_vm_readv(0x3ffffff0, &local, 1, remote, 1, 0);
    printf("rank %d: no such pid: %s\n", rank, result(r));

    /* The other's guarded pages. */
    unsigned char *theirs = (unsigned char *)(uintptr_t)other[3];
    struct iovec three = {theirs, 3 * 4096}, last = {theirs + 8192, 100}, two = {theirs, 2 * 4096};
    printf("rank %d: read the other's 3 guarded pages: %s\n", rank, result(process_vm_readv(pid, &local, 1, &three, 1, 0)));
    printf("rank %d: read the other's PROT_NONE page: %s\n", rank, result(process_vm_readv(pid, &local, 1, &last, 1, 0)));
    printf("rank %d: write the other's read-write and read-only pages: %s\n", rank,
           result(process_vm_writev(pid, &local, 1, &two, 1, 0)));
    struct iovec ro = {theirs + 4096, 10};
    printf("rank %d: write the other's read-only page: %s\n", rank, result(process_vm_writev(pid, &local, 1, &ro, 1, 0)));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
