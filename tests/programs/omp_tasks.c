/* OpenMP tasks as the specification defines them, for the kernel's own runtime (hrt run --omp
 * kernel) compared with libgomp natively: deferred tasks from every thread, the barriers and
 * region ends that wait for them, taskwait (children only), taskgroup (descendants), dependences
 * (in/out/inout, mutexinoutset, depobj, array sections as a wavefront), if(0) and taskwait with
 * depend, firstprivate capture (incl. a variable-length array, which gcc copies with a copy
 * function), final and included tasks, more tasks than the queue holds, and task reductions
 * (taskgroup task_reduction with in_reduction tasks, nested groups, an array section;
 * reduction(task) on parallel, for and sections; taskloop reduction and in_reduction), and
 * detachable tasks (detach, omp_fulfill_event), and tasks the master makes after the other
 * threads finished their part of the region (run by them too). Every
 * printed line is independent of timing and of the number of CPUs. Exit status 0 when all
 * checks pass. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static int failures;

static void check(const char *what, int ok) {
    printf("%-64s %s\n", what, ok ? "ok" : "FAILED");
    failures += !ok;
}

static long fib(int n) {
    if (n < 2)
        return n;
    long a, b;
#pragma omp task shared(a)
    a = fib(n - 1);
#pragma omp task shared(b)
    b = fib(n - 2);
#pragma omp taskwait
    return a + b;
}

enum { W = 24 };

/* a[i][j] = a[i-1][j] + a[i][j-1] with a[0][*] = a[*][0] = 1: binomial coefficients, one task
 * per cell ordered only by dependences. */
static int wavefront(void) {
    static long a[W][W];
    for (int i = 0; i < W; i++)
        a[i][0] = a[0][i] = 1;
#pragma omp parallel
#pragma omp single
    for (int i = 1; i < W; i++)
        for (int j = 1; j < W; j++) {
#pragma omp task depend(in : a[i - 1][j], a[i][j - 1]) depend(out : a[i][j]) firstprivate(i, j)
            a[i][j] = a[i - 1][j] + a[i][j - 1];
        }
    long c = 1; /* C(2(W-1), W-1) */
    for (int k = 1; k < W; k++)
        c = c * (W - 1 + k) / k;
    return a[W - 1][W - 1] == c;
}

/* One writer, then readers, then a writer, repeatedly: every reader sees the value of the last
 * writer before it, and each writer waits for the readers before it. */
static int readers_and_writers(void) {
    int x = 0, bad = 0, seen[8 * 40];
#pragma omp parallel
#pragma omp single
    for (int round = 0; round < 40; round++) {
#pragma omp task depend(out : x) firstprivate(round)
        x = round * 10;
        for (int r = 0; r < 8; r++) {
#pragma omp task depend(in : x) firstprivate(round, r)
            seen[round * 8 + r] = x;
        }
#pragma omp task depend(inout : x)
        x += 1;
    }
    for (int round = 0; round < 40; round++)
        for (int r = 0; r < 8; r++)
            bad += seen[round * 8 + r] != round * 10;
    return bad == 0 && x == 391;
}

static int mutexinoutset_and_depobj(void) {
    int x = 0, y = 0, ok = 1;
    omp_depend_t obj;
#pragma omp parallel
#pragma omp single
    {
#pragma omp depobj(obj) depend(inout : y)
        for (int i = 0; i < 30; i++) {
#pragma omp task depend(mutexinoutset : x) shared(x)
            x += i; /* mutually exclusive with each other */
        }
#pragma omp task depend(in : x) shared(x, ok)
        ok &= x == 29 * 30 / 2;
        for (int i = 0; i < 20; i++) {
#pragma omp task depend(depobj : obj) firstprivate(i) shared(y, ok)
            {
                ok &= y == i;
                y++;
            }
        }
#pragma omp depobj(obj) destroy
    }
    return ok && y == 20;
}

static int undeferred_and_taskwait_depend(void) {
    int x = 0, y = 0, ok = 1;
#pragma omp parallel
#pragma omp single
    {
        for (int i = 0; i < 10; i++) {
#pragma omp task depend(inout : x) shared(x)
            x++;
        }
#pragma omp task if (0) depend(in : x) shared(x, ok)
        ok &= x == 10; /* an undeferred task still waits for its predecessors */
        for (int i = 0; i < 10; i++) {
#pragma omp task depend(inout : y) shared(y)
            y++;
        }
#pragma omp taskwait depend(in : y)
        ok &= y == 10;
    }
    return ok;
}

/* taskwait waits for the children; a taskgroup for the children and their descendants. */
static int taskwait_and_taskgroups(void) {
    int children = 0, descendants = 0, inner = 0, ok = 1;
#pragma omp parallel
#pragma omp single
    {
        for (int i = 0; i < 16; i++) {
#pragma omp task shared(children)
            __atomic_fetch_add(&children, 1, __ATOMIC_RELAXED);
        }
#pragma omp taskwait
        ok &= children == 16;
#pragma omp taskgroup
        {
            for (int i = 0; i < 8; i++) {
#pragma omp task shared(descendants, inner)
                {
                    for (int j = 0; j < 4; j++) {
#pragma omp task shared(descendants)
                        __atomic_fetch_add(&descendants, 1, __ATOMIC_RELAXED);
                    }
#pragma omp taskgroup
                    {
#pragma omp task shared(inner)
                        __atomic_fetch_add(&inner, 1, __ATOMIC_RELAXED);
                    }
                }
            }
        }
        ok &= descendants == 32 && inner == 8;
    }
    return ok;
}

/* Every thread creates tasks; the barrier after them, and the end of the region, wait. */
static int tasks_from_every_thread(int *after_region) {
    int count = 0, at_barrier = -1, threads_ok = 1;
#pragma omp parallel shared(count, at_barrier)
    {
        int nth = omp_get_num_threads();
        for (int i = 0; i < 100; i++) {
#pragma omp task shared(count, threads_ok) firstprivate(nth)
            {
                int me = omp_get_thread_num();
                if (me < 0 || me >= nth)
                    threads_ok = 0;
                __atomic_fetch_add(&count, 1, __ATOMIC_RELAXED);
            }
        }
#pragma omp barrier
#pragma omp single
        at_barrier = count == 100 * omp_get_num_threads();
        for (int i = 0; i < 50; i++) {
#pragma omp task shared(count)
            __atomic_fetch_add(&count, 1, __ATOMIC_RELAXED);
        }
    }
    *after_region = count;
    return at_barrier == 1 && threads_ok;
}

static int firstprivate_capture(void) {
    int bad = 0, n = 37;
    int vla[n];
    for (int i = 0; i < n; i++)
        vla[i] = i;
    int sums[64];
#pragma omp parallel
#pragma omp single
    {
        for (int i = 0; i < 64; i++) {
#pragma omp task firstprivate(i, vla) shared(sums)
            {
                int s = 0;
                for (int k = 0; k < n; k++)
                    s += vla[k];
                vla[0] = -1; /* the task's own copy */
                sums[i] = s + i;
            }
            vla[1] += 1000; /* changes after creation are not seen by earlier tasks */
        }
    }
    for (int i = 0; i < 64; i++)
        bad += sums[i] != 36 * 37 / 2 + 1000 * i + i;
    return bad == 0 && vla[0] == 0;
}

static int final_and_included(void) {
    int ok = 1;
#pragma omp parallel
#pragma omp single
    {
#pragma omp task final(1) shared(ok)
        {
            ok &= omp_in_final();
#pragma omp task shared(ok)
            ok &= omp_in_final(); /* included: final too */
        }
#pragma omp task final(0) shared(ok)
        ok &= !omp_in_final();
    }
    return ok;
}

/* Far more tasks than the runtime keeps queued, with a dependence chain through them. */
static int many_tasks(void) {
    long sum = 0, chain = 0;
#pragma omp parallel
#pragma omp single
    {
        for (long i = 0; i < 100000; i++) {
#pragma omp task shared(sum) firstprivate(i)
            __atomic_fetch_add(&sum, i, __ATOMIC_RELAXED);
            if (i % 10 == 0) {
#pragma omp task depend(inout : chain) shared(chain) firstprivate(i)
                chain = chain * 3 % 1000003 + i;
            }
        }
    }
    long expect = 0;
    for (long i = 0; i < 100000; i += 10)
        expect = expect * 3 % 1000003 + i;
    return sum == 99999L * 100000 / 2 && chain == expect;
}

static int locks_in_tasks(void) {
    omp_lock_t lock;
    omp_init_lock(&lock);
    long plain = 0;
    int crit = 0;
#pragma omp parallel
    {
#pragma omp for
        for (int i = 0; i < 400; i++) {
#pragma omp task shared(plain, crit, lock) firstprivate(i)
            {
                omp_set_lock(&lock);
                plain += i;
                omp_unset_lock(&lock);
#pragma omp critical
                crit++;
            }
        }
    }
    omp_destroy_lock(&lock);
    return plain == 399 * 400 / 2 && crit == 400;
}

static int nested_regions_in_tasks(void) {
    int total = 0;
    omp_set_max_active_levels(2);
#pragma omp parallel num_threads(2)
#pragma omp single
    for (int t = 0; t < 4; t++) {
#pragma omp task shared(total)
        {
            int inner = 0;
#pragma omp parallel num_threads(3) reduction(+ : inner)
            inner += 1;
            __atomic_fetch_add(&total, inner, __ATOMIC_RELAXED);
        }
    }
    omp_set_max_active_levels(1);
    return total == 12;
}

static int taskloop_nogroup(void) {
    static int hits[5000];
    int ok = 1;
#pragma omp parallel
#pragma omp single
    {
#pragma omp taskloop nogroup grainsize(64)
        for (int i = 0; i < 5000; i++)
            hits[i]++;
#pragma omp taskwait
        for (int i = 0; i < 5000; i++)
            ok &= hits[i] == 1;
#pragma omp taskloop num_tasks(13) if (0)
        for (int i = 0; i < 5000; i++)
            hits[i]++;
        for (int i = 0; i < 5000; i++)
            ok &= hits[i] == 2;
    }
    return ok;
}

static int taskgroup_reductions(void) {
    long sum = 0, prod = 1, outer = 0;
    int mx = -1000, arr[4] = {0, 0, 0, 0};
#pragma omp parallel
#pragma omp single
    {
#pragma omp taskgroup task_reduction(+ : sum) task_reduction(* : prod) task_reduction(max : mx)
        {
            for (int i = 1; i <= 20; i++) {
#pragma omp task in_reduction(+ : sum) in_reduction(* : prod) in_reduction(max : mx) firstprivate(i)
                {
                    sum += i;
                    if (i <= 10)
                        prod *= 2;
                    if (i * 7 % 23 > mx)
                        mx = i * 7 % 23;
                }
            }
        }
#pragma omp taskgroup task_reduction(+ : outer)
        {
#pragma omp taskgroup task_reduction(+ : arr[0 : 4])
            {
                for (int i = 0; i < 40; i++) {
#pragma omp task in_reduction(+ : outer, arr[0 : 4]) firstprivate(i)
                    {
                        outer += i;
                        arr[i % 4] += 1;
                    }
                }
            }
        }
    }
    return sum == 210 && prod == 1024 && mx == 22 && outer == 39 * 40 / 2 && arr[0] == 10 && arr[3] == 10;
}

static int construct_reductions(void) {
    long par = 0, loop = 0, secs = 0, tl = 0, tl_in = 0;
    int nth = 0;
#pragma omp parallel reduction(task, + : par) shared(nth)
    {
#pragma omp single
        nth = omp_get_num_threads();
#pragma omp task in_reduction(+ : par)
        par += 2;
        par += 1;
    }
#pragma omp parallel
    {
#pragma omp for reduction(task, + : loop)
        for (int i = 0; i < 100; i++) {
#pragma omp task in_reduction(+ : loop) firstprivate(i)
            loop += i;
        }
#pragma omp sections reduction(task, + : secs)
        {
#pragma omp section
            {
#pragma omp task in_reduction(+ : secs)
                secs += 5;
            }
#pragma omp section
            secs += 7;
        }
    }
#pragma omp parallel
#pragma omp single
    {
#pragma omp taskloop reduction(+ : tl) grainsize(17)
        for (int i = 0; i < 1000; i++)
            tl += i;
#pragma omp taskgroup task_reduction(+ : tl_in)
        {
#pragma omp taskloop in_reduction(+ : tl_in) num_tasks(9)
            for (int i = 0; i < 300; i++)
                tl_in += 2;
        }
    }
    return par == 3L * nth && loop == 4950 && secs == 12 && tl == 499500 && tl_in == 600;
}

/* Detachable tasks: a task completes when its body has run and its event is fulfilled, so its
 * dependent tasks and the taskwait/taskgroup/barrier that wait for it wait for the event. */
static int detached_tasks(void) {
    int ok = 1;
    for (int round = 0; round < 20; round++) {
        int x = 0, y = 0, seen_x = -1, seen_y = -1, late = 0, seen_late = -1;
        omp_event_handle_t ev, ev2;
#pragma omp parallel shared(x, y, seen_x, seen_y, late, seen_late, ev, ev2)
#pragma omp single
        {
            /* fulfilled by a later task; its dependent waits for that */
#pragma omp task depend(out : y) detach(ev) shared(y)
            y = 1;
#pragma omp task shared(x, ev)
            {
#pragma omp atomic write
                x = 1;
                omp_fulfill_event(ev);
            }
#pragma omp task depend(in : y) shared(x, y, seen_x, seen_y)
            {
#pragma omp atomic read
                seen_x = x;
                seen_y = y;
            }
            /* the dependent made before the fulfilling task */
#pragma omp taskgroup
            {
#pragma omp task depend(out : late) detach(ev2) shared(late)
                late = 1;
#pragma omp task depend(in : late) shared(late, seen_late)
                seen_late = late * 2;
#pragma omp task shared(ev2)
                omp_fulfill_event(ev2);
            }
        }
        ok &= seen_x == 1 && seen_y == 1 && seen_late == 2;
    }
    /* the event fulfilled in the task's own body (its copy of the handle), deferred or not */
    int a = 0, b = 0;
#pragma omp parallel shared(a, b)
#pragma omp single
    {
        omp_event_handle_t e1, e2;
#pragma omp task detach(e1) shared(a)
        {
            a = 5;
            omp_fulfill_event(e1);
        }
#pragma omp task if (0) detach(e2) shared(b)
        {
            b = 7;
            omp_fulfill_event(e2);
        }
#pragma omp taskwait
        ok &= a == 5 && b == 7;
    }
    /* outside any parallel region the task runs at once and is fulfilled in its body */
    omp_event_handle_t e3;
    int c = 0;
#pragma omp task detach(e3) shared(c)
    {
        c = 3;
        omp_fulfill_event(e3);
    }
#pragma omp taskwait
    return ok && c == 3;
}

/* The master makes a task that waits for a flag and then the task that sets it, 50 ms after
 * the other thread has finished its part of the region: that thread, waiting at the region's end,
 * must take one of them (a runtime whose other threads leave the region before the master's
 * tasks exist runs both on the master, the waiter first, and the waiter gives up after 10 s). */
static int master_tasks_shared(void) {
    int flag = 0, seen = 0, team = 0;
#pragma omp parallel num_threads(2) shared(flag, seen, team)
    {
#pragma omp master
        {
            team = omp_get_num_threads();
            if (team == 2) {
                /* Long enough for the other thread to finish its part and stop spinning. */
                double start = omp_get_wtime();
                while (omp_get_wtime() < start + 0.05)
                    ;
#pragma omp task shared(flag, seen)
                {
                    double until = omp_get_wtime() + 10;
                    while (!__atomic_load_n(&flag, __ATOMIC_ACQUIRE) && omp_get_wtime() < until)
                        ;
                    seen = __atomic_load_n(&flag, __ATOMIC_ACQUIRE);
                }
#pragma omp task shared(flag)
                __atomic_store_n(&flag, 1, __ATOMIC_RELEASE);
            }
        }
    }
    return team < 2 || seen;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    long f = 0;
#pragma omp parallel
#pragma omp single
    f = fib(22);
    check("fib(22), a task per call, taskwait", f == 17711);
    check("wavefront of tasks ordered by array-element dependences", wavefront());
    check("readers see their writer, writers wait for readers", readers_and_writers());
    check("mutexinoutset and depobj", mutexinoutset_and_depobj());
    check("if(0) task and taskwait depend wait for their predecessors", undeferred_and_taskwait_depend());
    check("taskwait waits for children, taskgroup for descendants", taskwait_and_taskgroups());
    int after = 0;
    check("tasks from every thread are done at the barrier", tasks_from_every_thread(&after));
    int nth = 0;
#pragma omp parallel
#pragma omp single
    nth = omp_get_num_threads();
    check("... and at the end of the region", after == 150 * nth);
    check("firstprivate values (a VLA too) captured at creation", firstprivate_capture());
    check("final tasks and the tasks included in them", final_and_included());
    check("100000 tasks and a dependence chain through them", many_tasks());
    check("locks and criticals inside tasks", locks_in_tasks());
    check("parallel regions inside tasks", nested_regions_in_tasks());
    check("taskloop nogroup with taskwait, taskloop if(0)", taskloop_nogroup());
    check("taskgroup task reductions: + * max, nested groups, an array", taskgroup_reductions());
    check("reduction(task) on parallel/for/sections, taskloop reductions", construct_reductions());
    check("detachable tasks complete when their event is fulfilled", detached_tasks());
    check("the master's tasks are shared by threads that finished their part", master_tasks_shared());
    printf(failures ? "%d FAILED\n" : "all checks passed\n", failures);
    return failures != 0;
}
