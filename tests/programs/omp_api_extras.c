// omp_* routines of OpenMP 5.0/5.1 beyond the common ones, as libgomp answers them on a host
// without offloading: omp_pause_resource(_all), max-task-priority-var (OMP_MAX_TASK_PRIORITY),
// nteams-var and teams-thread-limit-var (OMP_NUM_TEAMS, OMP_TEAMS_THREAD_LIMIT and their
// setters), omp_get_device_num. Prints the answers; the test compares them with a native run.
#include <omp.h>
#include <stdio.h>

int main(void) {
    printf("max task priority %d\n", omp_get_max_task_priority());
    printf("device num %d, initial device %d\n", omp_get_device_num(), omp_get_initial_device());
    printf("max teams %d, teams thread limit %d\n", omp_get_max_teams(), omp_get_teams_thread_limit());
    omp_set_num_teams(5);
    omp_set_teams_thread_limit(7);
    printf("after setting: max teams %d, teams thread limit %d\n", omp_get_max_teams(),
           omp_get_teams_thread_limit());
    omp_set_num_teams(0);
    omp_set_teams_thread_limit(-1);
    printf("after -1: teams thread limit %d\n", omp_get_teams_thread_limit());
    omp_set_teams_thread_limit(0);
    printf("after non-positive: max teams %d, teams thread limit %d\n", omp_get_max_teams(),
           omp_get_teams_thread_limit());
    int sum = 0;
#pragma omp parallel reduction(+ : sum)
    sum += 1;
    printf("pause host (soft) %d\n", omp_pause_resource(omp_pause_soft, omp_get_initial_device()) == 0);
    printf("pause all (hard) %d\n", omp_pause_resource_all(omp_pause_hard) == 0);
    printf("pause a device that does not exist %d\n", omp_pause_resource(omp_pause_soft, 7) != 0);
    int inside = 0;
#pragma omp parallel num_threads(2)
    {
#pragma omp single
        inside = omp_pause_resource_all(omp_pause_soft) != 0;
    }
    printf("pause inside a region fails %d\n", inside);
    int again = 0;
#pragma omp parallel reduction(+ : again)
    again += 1;
    printf("a team after the pause has as many threads %d\n", again == sum);
    printf("done\n");
    return 0;
}
