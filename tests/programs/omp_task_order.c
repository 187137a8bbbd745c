/* The order in which a team of one runs its tasks, which libgomp makes deterministic and a
 * program of one thread sees: a task is deferred (the code after it runs first), `taskwait`
 * and the end of a taskgroup run the newest of their tasks first, a barrier runs the oldest
 * first, a task with a higher priority (when OMP_MAX_TASK_PRIORITY allows one) goes before
 * the rest, tasks past the queue's limit run at once, `taskyield` switches to nothing.
 * Compared with libgomp natively (hrt run --omp kernel); every region has num_threads(1), so
 * the output depends neither on OMP_NUM_THREADS nor on the number of CPUs.
 *
 * A task in an inner taskgroup that depends on tasks of outer ones ends (its group's end runs
 * them). Last, a task that waits for a flag its creator sets after the task construct: it finishes
 * only if it was deferred (a runtime that ran it at once would spin; the wait gives up after
 * 10 s and says so, rather than hang the test). */
#include <omp.h>
#include <stdio.h>

static char buf[8192];
static int n;

static void mark(char c) {
#pragma omp critical
    buf[n++] = c;
}

static void number(int i) {
    mark('0' + i / 10 % 10);
    mark('0' + i % 10);
    mark(',');
}

/* Prints what the marks since the last line say, under `what`. */
static void line(const char *what) {
    buf[n] = 0;
    printf("%-40s %s\n", what, buf);
    n = 0;
}

static void deferred_and_taskwait(void) {
#pragma omp parallel num_threads(1)
    {
        for (int i = 0; i < 5; i++) {
#pragma omp task
            mark('a' + i);
        }
        mark('X');
#pragma omp taskwait
        mark('|');
        for (int i = 0; i < 5; i++) {
#pragma omp task priority(i)
            mark('0' + i);
        }
        mark('Y');
    }
    line("deferred, taskwait, barrier:");
}

static void nested_tasks(void) {
#pragma omp parallel num_threads(1)
    {
#pragma omp task
        {
            mark('p');
            for (int i = 0; i < 3; i++) {
#pragma omp task
                mark('q' + i);
            }
            mark('P');
#pragma omp taskwait
            mark('Q');
        }
#pragma omp task
        mark('z');
    }
    line("nested tasks:");
}

static void priorities(void) {
#pragma omp parallel num_threads(1)
    {
        for (int i = 0; i < 6; i++) {
#pragma omp task priority(i % 3)
            mark('A' + i);
        }
#pragma omp taskwait
        for (int i = 0; i < 6; i++) {
#pragma omp task priority((i * 7) % 4)
            mark('G' + i);
        }
    }
    line("priorities at taskwait and barrier:");
}

static void outside_any_region(void) {
    for (int i = 0; i < 3; i++) {
#pragma omp task
        mark('m' + i);
    }
    mark('M');
    line("outside any region:");
}

static void taskgroup(void) {
#pragma omp parallel num_threads(1)
    {
#pragma omp taskgroup
        {
            for (int i = 0; i < 4; i++) {
#pragma omp task priority(i)
                mark('s' + i);
            }
            mark('S');
        }
        mark('T');
    }
    line("taskgroup:");
}

static void past_the_limit(void) {
#pragma omp parallel num_threads(1)
    {
        for (int i = 0; i < 100; i++) {
#pragma omp task
            number(i);
        }
        mark('X');
    }
    line("100 tasks:");
}

static void taskloops(void) {
#pragma omp parallel num_threads(1)
    {
#pragma omp taskloop num_tasks(5)
        for (int i = 0; i < 5; i++)
            mark('a' + i);
        mark('X');
#pragma omp taskloop num_tasks(5) nogroup
        for (int i = 0; i < 5; i++)
            mark('f' + i);
        mark('Y');
#pragma omp task
        mark('k');
#pragma omp taskloop num_tasks(4) priority(3)
        for (int i = 0; i < 4; i++)
            mark('l' + i);
        mark('Z');
    }
    line("taskloops:");
}

static void dependences(void) {
    int a = 0, b = 0;
#pragma omp parallel num_threads(1)
    {
#pragma omp task depend(out : a)
        mark('A');
#pragma omp task depend(in : a)
        mark('B');
#pragma omp task depend(in : a)
        mark('C');
#pragma omp task depend(out : b)
        mark('D');
#pragma omp task depend(inout : a, b)
        mark('E');
#pragma omp task
        mark('F');
        mark('X');
#pragma omp taskwait
        mark('|');
#pragma omp task depend(out : a)
        mark('G');
#pragma omp task depend(in : a)
        mark('H');
#pragma omp task
        mark('I');
    }
    line("dependences:");
}

static void yield_if0_final(void) {
#pragma omp parallel num_threads(1)
    {
#pragma omp single
        {
            for (int i = 0; i < 3; i++) {
#pragma omp task
                mark('a' + i);
            }
#pragma omp taskyield
            mark('Y');
        }
        mark('S');
#pragma omp task if (0)
        mark('i');
#pragma omp task final(1)
        {
            mark('f');
#pragma omp task
            mark('g');
            mark('F');
        }
        mark('Z');
    }
    line("taskyield, if(0), final:");
}

static void nested_region(void) {
#pragma omp parallel num_threads(1)
    {
#pragma omp task
        mark('o');
#pragma omp parallel num_threads(1)
        {
#pragma omp task
            mark('i');
            mark('I');
        }
        mark('O');
    }
    line("nested region:");
}

/* A task in an inner taskgroup whose predecessors are in outer ones: the inner group's end must
 * run them (they are the waiting task's children) or wait for good with one thread. */
static void dependences_across_groups(void) {
    int x = 1;
#pragma omp parallel num_threads(1)
    {
#pragma omp taskgroup
        {
#pragma omp task shared(x) depend(in : x)
            mark(x == 1 ? 'a' : '!');
#pragma omp taskgroup
            {
#pragma omp task shared(x) depend(in : x)
                mark(x == 1 ? 'b' : '!');
#pragma omp taskgroup
                {
#pragma omp task shared(x) depend(out : x)
                    {
                        x = 2;
                        mark('c');
                    }
                }
                mark('B');
            }
            mark('A');
        }
    }
    line("dependences across taskgroups:");
}

static void waits_for_its_creator(void) {
    int flag = 0, seen = 0;
#pragma omp parallel num_threads(1) shared(flag, seen)
    {
#pragma omp task shared(flag, seen)
        {
            double start = omp_get_wtime();
            int f;
            do {
#pragma omp atomic read
                f = flag;
            } while (!f && omp_get_wtime() - start < 10.0);
            seen = f;
        }
#pragma omp atomic write
        flag = 1;
    }
    printf("%-40s %s\n", "a task waiting for its creator:", seen ? "finished" : "gave up (run at once)");
}

int main(void) {
    deferred_and_taskwait();
    nested_tasks();
    priorities();
    outside_any_region();
    taskgroup();
    past_the_limit();
    taskloops();
    dependences();
    yield_if0_final();
    nested_region();
    dependences_across_groups();
    waits_for_its_creator();
    printf("max task priority %d\n", omp_get_max_task_priority());
    return 0;
}
