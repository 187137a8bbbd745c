/* The OMP_* environment as the program sees it through the omp_* routines: every ICV at the
 * top level and in nested regions (thread counts, bind-var and places per level, partitions,
 * dynamic, schedule, active levels, thread limit, cancellation, devices, priorities, teams,
 * allocator, affinity format), the team sizes `parallel` gets, the proc_bind clause's effect,
 * which thread runs which iterations of a schedule(runtime) loop with a static schedule, and
 * the teams construct's defaults. `omp_env stack KIB`: a worker's stack size and a KIB KiB
 * VLA on it (OMP_STACKSIZE). Run by monitor/tests/omp_kernel.rs under environments taken from
 * the libgomp manual, valid and invalid, on libgomp and on the kernel's runtime, and compared
 * (stdout exactly; stderr, where OMP_DISPLAY_ENV, OMP_DISPLAY_AFFINITY and libgomp's messages
 * go, line by line sorted, as threads show their affinity lines in any order). Lines made by
 * threads are sorted too. */
#define _GNU_SOURCE
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXL 4096
static char lines[MAXL][256];
static int nlines;

static void add(const char *s) {
#pragma omp critical(probe_lines)
  {
    if (nlines < MAXL) {
      strncpy(lines[nlines], s, 255);
      nlines++;
    }
  }
}
static int cmp(const void *a, const void *b) { return strcmp(a, b); }
static void flush_lines(const char *tag) {
  qsort(lines, nlines, sizeof lines[0], cmp);
  for (int i = 0; i < nlines; i++) printf("%s %s\n", tag, lines[i]);
  nlines = 0;
}

static void partition(char *out, size_t n) {
  int np = omp_get_partition_num_places();
  int ids[256];
  if (np > 256) np = 256;
  omp_get_partition_place_nums(ids);
  int o = snprintf(out, n, "part=%d[", np);
  for (int i = 0; i < np && o < (int)n; i++) o += snprintf(out + o, n - o, "%s%d", i ? "," : "", ids[i]);
  if (o < (int)n) snprintf(out + o, n - o, "]");
}

static void describe(const char *path) {
  char part[128], buf[256];
  partition(part, sizeof part);
  snprintf(buf, sizeof buf,
           "%s lvl=%d act=%d nt=%d maxt=%d bind=%d place=%d %s inpar=%d tl=%d dyn=%d mal=%d anc0=%d ts1=%d",
           path, omp_get_level(), omp_get_active_level(), omp_get_num_threads(), omp_get_max_threads(),
           omp_get_proc_bind(), omp_get_place_num(), part, omp_in_parallel(), omp_get_thread_limit(),
           omp_get_dynamic(), omp_get_max_active_levels(), omp_get_ancestor_thread_num(0),
           omp_get_team_size(omp_get_level() > 0 ? 1 : 0));
  add(buf);
}

static void nest(const char *path, int depth) {
  describe(path);
  if (depth == 3) return;
#pragma omp parallel
  {
    char p[64];
    snprintf(p, sizeof p, "%s.%d", path, omp_get_thread_num());
    nest(p, depth + 1);
  }
}

__attribute__((noinline)) static int get_tl(void) { return omp_get_thread_limit(); }
__attribute__((noinline)) static int get_tn(void) { return omp_get_team_num(); }
__attribute__((noinline)) static int get_nteams(void) { return omp_get_num_teams(); }
int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "stack") == 0) {
    long kib = atol(argv[2]);
    int ok = 0;
    size_t wsz = 0;
#pragma omp parallel num_threads(2)
    {
      if (omp_get_thread_num() == 1) {
        pthread_attr_t a;
        if (pthread_getattr_np(pthread_self(), &a) == 0) {
          pthread_attr_getstacksize(&a, &wsz);
          pthread_attr_destroy(&a);
        }
        volatile char vla[kib * 1024];
        for (long i = 0; i < kib * 1024; i += 4096) vla[i] = (char)i;
        vla[kib * 1024 - 1] = 1;
        ok = vla[0] + 1;
      }
    }
    printf("stack vla=%ldKiB ok=%d worker_stacksize_k=%zu\n", kib, ok, wsz / 1024);
    return 0;
  }
  omp_sched_t k;
  int chunk;
  omp_get_schedule(&k, &chunk);
  printf("num_procs=%d\n", omp_get_num_procs());
  printf("max_threads=%d\n", omp_get_max_threads());
  printf("dynamic=%d nested=%d\n", omp_get_dynamic(), omp_get_nested());
  printf("schedule=0x%x chunk=%d\n", (unsigned)k, chunk);
  printf("proc_bind=%d\n", omp_get_proc_bind());
  int np = omp_get_num_places();
  printf("num_places=%d\n", np);
  for (int p = 0; p < np; p++) {
    int n = omp_get_place_num_procs(p);
    int ids[1024];
    omp_get_place_proc_ids(p, ids);
    printf("place %d n=%d:", p, n);
    for (int i = 0; i < n; i++) printf(" %d", ids[i]);
    printf("\n");
  }
  printf("place_num_procs(-1)=%d place_num_procs(np)=%d\n", omp_get_place_num_procs(-1), omp_get_place_num_procs(np));
  printf("place_num=%d\n", omp_get_place_num());
  {
    char part[128];
    partition(part, sizeof part);
    printf("%s\n", part);
  }
  printf("max_active_levels=%d supported=%d\n", omp_get_max_active_levels(), omp_get_supported_active_levels());
  printf("thread_limit=%d\n", omp_get_thread_limit());
  printf("cancellation=%d\n", omp_get_cancellation());
  printf("default_device=%d\n", omp_get_default_device());
  printf("max_task_priority=%d\n", omp_get_max_task_priority());
  double t = omp_get_wtick();
  printf("wtick_sane=%d\n", t > 0 && t < 0.01);
  printf("teams_thread_limit=%d max_teams=%d\n", omp_get_teams_thread_limit(), omp_get_max_teams());
  printf("default_allocator=%lu\n", (unsigned long)omp_get_default_allocator());
  {
    char buf[512];
    size_t n = omp_get_affinity_format(buf, sizeof buf);
    printf("affinity_format(%zu)=%s\n", n, buf);
    n = omp_capture_affinity(buf, sizeof buf, "L=%L n=%n N=%N a=%a A=%A");
    printf("capture(%zu)=%s\n", n, buf);
  }
  fflush(stdout);

  /* team sizes */
#pragma omp parallel
  {
#pragma omp single
    printf("team_default=%d\n", omp_get_num_threads());
  }
#pragma omp parallel num_threads(3)
  {
#pragma omp single
    printf("team_nt3=%d\n", omp_get_num_threads());
  }
#pragma omp parallel num_threads(9)
  {
#pragma omp single
    printf("team_nt9=%d\n", omp_get_num_threads());
  }
  /* capture affinity in a team */
#pragma omp parallel
  {
    char buf[512], l[600];
    omp_capture_affinity(buf, sizeof buf, "L=%L n=%n N=%N a=%a A=%A");
    snprintf(l, sizeof l, "%s", buf);
    add(l);
  }
  flush_lines("aff");
  /* nested levels */
  nest("0", 0);
  flush_lines("nest");
  /* runtime schedule */
  {
    int owner[40];
    int count[40];
    memset(count, 0, sizeof count);
    int nt = 0;
#pragma omp parallel
    {
#pragma omp single
      nt = omp_get_num_threads();
#pragma omp for schedule(runtime)
      for (int i = 0; i < 40; i++) {
        owner[i] = omp_get_thread_num();
#pragma omp atomic
        count[i]++;
      }
    }
    int once = 1;
    for (int i = 0; i < 40; i++) once &= count[i] == 1;
    printf("runtime_loop nt=%d once=%d", nt, once);
    if (((unsigned)k & 0x7fffffff) == omp_sched_static) {
      printf(" owners=");
      for (int i = 0; i < 40; i++) printf("%d", owner[i]);
    }
    printf("\n");
  }
  /* the proc_bind clause: ignored when bind-var is false; the threads' bind-var after */
  {
    int inner[2] = {-1, -1};
#pragma omp parallel num_threads(2) proc_bind(spread)
    inner[omp_get_thread_num() & 1] = omp_get_proc_bind();
    printf("proc_bind(spread) inner=%d,%d\n", inner[0], inner[1]);
#pragma omp parallel num_threads(2) proc_bind(close)
    inner[omp_get_thread_num() & 1] = omp_get_proc_bind();
    printf("proc_bind(close) inner=%d,%d\n", inner[0], inner[1]);
  }
  /* teams */
  {
    int nteams = -1, tl = -1;
#pragma omp teams
    {
      if (get_tn() == 0) {
        nteams = get_nteams();
        tl = get_tl();
      }
    }
    printf("teams n=%d thread_limit=%d\n", nteams, tl);
  }
  return 0;
}
