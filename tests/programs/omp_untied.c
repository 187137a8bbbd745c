// Task shapes the task-parallel suites use (BOTS builds most of its kernels this way), checked
// against what the OpenMP specification guarantees: untied tasks that suspend at taskwait and
// may resume on another thread, taskyield (a scheduling point only), mergeable and final tasks, tasks created inside a
// worksharing loop, and tasks capturing a variable-length array firstprivate (gcc passes a copy
// function to GOMP_task). Prints only results that do not depend on the schedule.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void check(const char *what, long got, long want) {
    printf("%-48s %ld\n", what, got);
    if (got != want) {
        printf("  FAILED: expected %ld\n", want);
        failures++;
    }
}

// Untied recursion: each level suspends at its taskwait.
static long tree(int depth) {
    if (depth == 0)
        return 1;
    long left = 0, right = 0;
#pragma omp task untied shared(left)
    left = tree(depth - 1);
#pragma omp task untied shared(right)
    right = tree(depth - 1);
#pragma omp taskwait
    return left + right + 1;
}

// Placements of n queens, each task working on its own copy of the board so far (a VLA,
// firstprivate, copied when the task is created).
static long queens(int n, int row, const int *cols) {
    if (row == n)
        return 1;
    long found[32] = {0};
    for (int c = 0; c < n; c++) {
        int board[n];
        memcpy(board, cols, sizeof(int) * (size_t)row);
        board[row] = c;
        int ok = 1;
        for (int r = 0; r < row; r++)
            if (board[r] == c || abs(board[r] - c) == row - r)
                ok = 0;
        if (!ok)
            continue;
#pragma omp task untied firstprivate(board, c) shared(found) if (row < 3)
        found[c] = queens(n, row + 1, board);
    }
#pragma omp taskwait
    long sum = 0;
    for (int c = 0; c < n; c++)
        sum += found[c];
    return sum;
}

// Mergeable tasks under final: their results must be visible after the taskwait whether or
// not the runtime merged them into the parent.
static long merged(int depth) {
    if (depth == 0)
        return 1;
    long a = 0, b = 0;
#pragma omp task mergeable final(depth < 4) shared(a)
    a = merged(depth - 1);
#pragma omp task mergeable final(depth < 4) shared(b)
    b = merged(depth - 1);
#pragma omp taskwait
    return a + b;
}

int main(void) {
    long nodes = 0, places = 0, leaves = 0, yields = 0, from_loop = 0, in_final = 0;
#pragma omp parallel
    {
#pragma omp single
        {
            nodes = tree(12);
            places = queens(8, 0, NULL);
            leaves = merged(10);
        }

        // taskyield in untied tasks (a scheduling point where the runtime may, but need not,
        // switch to another task): every task still runs once.
#pragma omp single
        {
            for (int i = 0; i < 64; i++) {
#pragma omp task untied shared(yields)
                {
#pragma omp taskyield
#pragma omp atomic
                    yields++;
#pragma omp taskyield
                }
            }
        }

        // Tasks created by every thread from its iterations of a loop (BOTS's "for" generators),
        // completed at the loop's implicit barrier.
#pragma omp for schedule(dynamic, 3)
        for (int i = 0; i < 200; i++) {
#pragma omp task untied firstprivate(i) shared(from_loop)
            {
#pragma omp atomic
                from_loop += i;
            }
        }

#pragma omp single
        {
#pragma omp task final(1) shared(in_final)
            {
                // Tasks generated in a final task are included, and final themselves.
                int inside = 0;
#pragma omp task shared(inside)
                inside = omp_in_final();
                in_final = inside;
            }
        }
    }
    check("untied tree of depth 12: nodes", nodes, 8191);
    check("8 queens through untied VLA tasks: placements", places, 92);
    check("mergeable/final tree of depth 10: leaves", leaves, 1024);
    check("untied tasks with taskyield: runs", yields, 64);
    check("tasks from a dynamic loop: sum of indices", from_loop, 19900);
    check("a task inside a final task is final", in_final, 1);
    if (failures == 0)
        printf("all checks passed\n");
    return failures != 0;
}
