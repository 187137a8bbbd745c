// Workers end with the thread that started their team: a std::thread runs a parallel region
// of four threads and is joined; libgomp then ends that thread's workers (its pool goes with
// the thread), and their thread_local objects are destroyed. The program waits (up to 20 s)
// for the three workers' destructors beside the master's, then runs another region from the
// main thread, whose team starts afresh. Compared with the native run on libgomp.
#include <omp.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>

static std::atomic<int> destroyed{0};

struct PerThread {
    int v = -1;
    ~PerThread() { destroyed.fetch_add(1); }
};

static thread_local PerThread mine;

int main() {
    std::atomic<int> ran{0};
    std::thread starter([&] {
#pragma omp parallel num_threads(4)
        {
            mine.v = omp_get_thread_num();
            ran.fetch_add(1);
        }
    });
    starter.join();
    for (int i = 0; i < 20000 && destroyed.load() < 4; i++)
        usleep(1000);
    std::printf("a region of %d threads in a joined thread: %d thread_local destructors ran\n", ran.load(),
                destroyed.load());
    int team = 0;
#pragma omp parallel num_threads(3)
    {
#pragma omp atomic
        team++;
    }
    std::printf("the next region from the main thread: %d threads\n", team);
    std::printf("all checks passed\n");
    return 0;
}
