/* Shared memory in the 2 MiB pages a fork copies for the child: under hrt the parent hands
 * the child a copy of the pages holding the code the fork returns to and the top of the heap
 * (monitor/src/vm/fork_private.rs), and must not do so where a MAP_SHARED mapping lies in
 * them, which would give the child a private copy of memory it shares with its parent. One
 * anonymous MAP_SHARED page is placed in the 2 MiB page of the fork's caller and one in the
 * heap's; children and a grandchild write them and private memory, the
 * parent reads both. One line per case, the same natively and under hrt.
 * Usage: fork_shared_beside_busy */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define HUGE ((uintptr_t)2 << 20)
#define PAGE ((uintptr_t)4096)

static int private_data = 1;

/* A shared page inside the 2 MiB page of `anchor`, as far from it as there is room; 0 if none. */
static volatile int *shared_in_page_of(uintptr_t anchor)
{
	uintptr_t base = anchor & ~(HUGE - 1);
	for (uintptr_t a = base + HUGE - PAGE; a >= base; a -= PAGE) {
		if (a + PAGE > (anchor & ~(PAGE - 1)) && a <= anchor)
			continue;
		void *p = mmap((void *)a, PAGE, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p == (void *)a)
			return p;
		if (p != MAP_FAILED)
			munmap(p, PAGE);
	}
	return 0;
}

static int wait_for(pid_t pid)
{
	int status;
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(void)
{
	char *heap = malloc(100);
	strcpy(heap, "parent");
	int on_stack = 5;
	volatile int *by_code = shared_in_page_of((uintptr_t)&main);
	volatile int *by_heap = shared_in_page_of((uintptr_t)sbrk(0) - 1);
	printf("shared pages placed: code %s, heap %s\n", by_code ? "yes" : "no", by_heap ? "yes" : "no");
	volatile int *all[] = {by_code, by_heap};
	for (int round = 1; round <= 20; round++) {
		pid_t pid = fork();
		if (pid == 0) {
			for (int i = 0; i < 2; i++)
				if (all[i])
					*all[i] += round;
			private_data = 100 + round;
			strcpy(heap, "child");
			on_stack = -1;
			if (round == 20) {
				/* A grandchild: its parent's pages were a copy too. */
				pid_t g = fork();
				if (g == 0) {
					for (int i = 0; i < 2; i++)
						if (all[i])
							*all[i] += 1000;
					_exit(private_data == 120 ? 0 : 9);
				}
				_exit(wait_for(g) == 0 ? 0 : 8);
			}
			_exit(0);
		}
		if (wait_for(pid) != 0) {
			printf("round %d: the child failed\n", round);
			return 1;
		}
	}
	int expect = 20 * 21 / 2 + 1000;
	for (int i = 0; i < 2; i++) {
		const char *name[] = {"code", "heap"};
		if (all[i])
			printf("%s page's shared word: %s\n", name[i], *all[i] == expect ? "every child's adds" : "LOST");
	}
	printf("private memory after 20 children: %d %s %d\n", private_data, heap, on_stack);
	return 0;
}
