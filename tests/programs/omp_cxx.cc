// C++ on the OpenMP runtime (g++ -fopenmp): what GCC's libgomp.c++ tests use that C programs do
// not. Objects copied into tasks by their copy constructors (firstprivate) and destroyed by the
// task, also when a cancelled taskgroup discards tasks that have not started (libgomp still
// runs them, so that their objects are destroyed); exceptions thrown and caught inside parallel
// regions and tasks; user-defined reductions over a class; regions in member functions and
// templates; loops over random-access iterators; taskloop with firstprivate objects; a
// parallel region run by a static constructor before main. Prints only what does not depend on
// the team size or timing, then "all checks passed".
#include <omp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

static int failures;

static void check(bool ok, const char *what) {
    if (!ok) {
        std::printf("FAILED: %s\n", what);
        failures++;
    }
}

// Counts the live objects: constructors and destructors run wherever the runtime copies.
struct Counted {
    static int live;
    int v = 0;
    Counted() {
#pragma omp atomic
        live++;
    }
    Counted(const Counted &o) : v(o.v) {
#pragma omp atomic
        live++;
    }
    ~Counted() {
#pragma omp atomic
        live--;
    }
};
int Counted::live = 0;

// `cancel taskgroup` with tasks whose firstprivate objects were copied when they were created:
// every object is destroyed, whether the task ran its body or was cancelled before it started.
static void cancelled_taskgroup() {
    Counted a, b;
    int started = 0;
#pragma omp parallel firstprivate(a)
    {
#pragma omp single
#pragma omp taskgroup
        for (int i = 0; i < 40; i++) {
#pragma omp task firstprivate(a, b)
            {
                a.v++;
                b.v++;
#pragma omp atomic
                started++;
#pragma omp cancellation point taskgroup
                usleep(50);
#pragma omp cancel taskgroup if (i > 3)
            }
        }
    }
    check(Counted::live == 2, "objects of cancelled tasks destroyed");
    check(started >= 1 && started <= 40, "tasks started");
    std::printf("cancelled taskgroup: %d objects alive\n", Counted::live);
}

// Exceptions thrown and caught inside a region's threads and inside tasks.
static void exceptions() {
    int caught = 0, task_caught = 0;
#pragma omp parallel reduction(+ : caught)
    {
        try {
            throw std::runtime_error("thread " + std::to_string(omp_get_thread_num()));
        } catch (const std::runtime_error &e) {
            if (std::string(e.what()).rfind("thread ", 0) == 0) caught++;
        }
#pragma omp single
        for (int i = 0; i < 20; i++) {
#pragma omp task shared(task_caught)
            try {
                if (i % 2) throw i;
                throw std::string("even");
            } catch (int) {
#pragma omp atomic
                task_caught++;
            } catch (const std::string &) {
#pragma omp atomic
                task_caught++;
            }
        }
    }
    int threads = 0;
#pragma omp parallel
#pragma omp single
    threads = omp_get_num_threads();
    check(caught == threads, "one exception caught per thread");
    check(task_caught == 20, "exceptions caught in tasks");
    std::printf("exceptions: every thread and task caught its own\n");
}

// A user-defined reduction over a class, combining vectors.
struct Histogram {
    std::vector<long> bins = std::vector<long>(8, 0);
    void merge(const Histogram &o) {
        for (size_t i = 0; i < bins.size(); i++) bins[i] += o.bins[i];
    }
};
#pragma omp declare reduction(merge : Histogram : omp_out.merge(omp_in)) initializer(omp_priv = Histogram())

static void user_defined_reduction() {
    Histogram h;
#pragma omp parallel for reduction(merge : h) schedule(dynamic, 7)
    for (int i = 0; i < 10000; i++) h.bins[i % 8] += i;
    long total = 0;
    for (size_t b = 0; b < h.bins.size(); b++) {
        long want = 0;
        for (int i = (int)b; i < 10000; i += 8) want += i;
        check(h.bins[b] == want, "histogram bin");
        total += h.bins[b];
    }
    std::printf("user-defined reduction: total %ld\n", total);
}

// Regions in member functions, over the members, and in a template.
struct Grid {
    std::vector<double> cells;
    explicit Grid(int n) : cells(n) {}
    double fill_and_sum() {
#pragma omp parallel for
        for (size_t i = 0; i < cells.size(); i++) cells[i] = 0.5 * i;
        double s = 0;
#pragma omp parallel for reduction(+ : s)
        for (auto it = cells.begin(); it < cells.end(); ++it) s += *it;
        return s;
    }
};

template <typename T>
T template_sum(const std::vector<T> &v) {
    T s = T();
#pragma omp parallel for reduction(+ : s) schedule(guided)
    for (typename std::vector<T>::const_iterator it = v.begin(); it < v.end(); ++it) s += *it;
    return s;
}

static void members_and_templates() {
    Grid g(1001);
    double s = g.fill_and_sum();
    check(s == 0.5 * 1000 * 1001 / 2, "member function regions");
    std::vector<long> v(5000);
    for (size_t i = 0; i < v.size(); i++) v[i] = (long)i;
    check(template_sum(v) == 4999L * 5000 / 2, "template region");
    std::printf("members and templates: %.1f %ld\n", s, template_sum(v));
}

// taskloop with a firstprivate object: each task gets its copy, and all are destroyed.
static void taskloop_objects() {
    Counted c;
    c.v = 3;
    long sum = 0;
#pragma omp parallel
#pragma omp single
#pragma omp taskloop firstprivate(c) reduction(+ : sum) grainsize(10)
    for (int i = 0; i < 100; i++) sum += c.v;
    check(sum == 300, "taskloop sum");
    check(Counted::live == 1, "taskloop objects destroyed");
    std::printf("taskloop: sum %ld, %d object alive\n", sum, Counted::live);
}

// A parallel region run by a static constructor, before main.
struct StartsATeam {
    int sum = 0;
    StartsATeam() {
#pragma omp parallel for reduction(+ : sum)
        for (int i = 1; i <= 100; i++) sum += i;
    }
};
static StartsATeam before_main;

int main() {
    check(before_main.sum == 5050, "region in a static constructor");
    std::printf("static constructor region: %d\n", before_main.sum);
    cancelled_taskgroup();
    exceptions();
    user_defined_reduction();
    members_and_templates();
    taskloop_objects();
    if (failures == 0) std::printf("all checks passed\n");
    return failures != 0;
}
