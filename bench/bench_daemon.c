/*
 * bench_daemon.c - the daemon benchmarks of BENCH.md, measured against the
 * real tickd ($BENCH_BUILD/tickd, default build/bench/tickd) that this
 * program starts in a temporary directory with its own socket, the shipped
 * config/tickd.ini when run from the repository root (else the built-in
 * defaults), --tick-rate 60, --log-level warn and no /metrics listener.
 *
 *   figure                  how it is measured                      runs
 *   idle_cpu_percent        utime+stime (/proc/PID/stat, whole       one 6 s run
 *                           process) of the idle daemon over 6 s of
 *                           wall time, % of one core
 *   pacing_p99_jitter_us    p99 of |frame period - 1/60 s| over 600  5 runs of 600
 *                           consecutive frames, idle world, shipped  frames, median
 *                           (steady) pacing; the period is the "dt"
 *                           of the daemon's own `frame` events
 *                           (start of a frame minus start of the
 *                           one before, from the daemon's monotonic
 *                           clock read once per frame: no socket
 *                           latency in it)
 *   pacing_jitter_ratio     the p99 of the daemon's periods / the    the 5 runs
 *                           p99 of the bare loop's beside it         pooled (3000
 *                           (below), each over the periods of all    periods a side)
 *                           the runs
 *   tps_steady_60           frames per second of a steady-paced      one 60 s run
 *                           daemon at 60 Hz with 2 burner entities
 *                           of 1 ms each (2 ms of work per frame):
 *                           frames run / the daemon's real_time
 *                           (world.status) over 60 s, both read at
 *                           frame boundaries
 *   rpc_requests_per_s      engine.info requests answered per second warm-up + 5,
 *                           pipelined on one connection: the client  median
 *                           keeps control.max_pending (1024, as
 *                           shipped) requests in flight, since more
 *                           would be refused with -32003
 *   spawn_1m_seconds        wall time of ten entity.spawn {"class":  warm-up + 5
 *                           "counter","count":100000}, each waited   fresh daemons,
 *                           for                                      medians
 *   rss_mib_1m_entities     VmRSS (/proc/PID/status) after 1M
 *                           counters and ~3.5 s of frames minus
 *                           VmRSS before the first spawn
 *   mspt_p50_1m_entities    median of the work ms ("ms") of the
 *                           `frame` events of 180 frames, taken
 *                           after 30 frames of settling; the daemon
 *                           measures work with the sleep excluded,
 *                           exactly as engine.stats' mspt
 *
 * Extra keys (no goal):
 *   pacing_max_jitter_us            max of the same 600 frames (median)
 *   pacing_p99_arrival_jitter_us    the same p99 from the arrival times of
 *                                   the frame events at this client
 *                                   (CLOCK_MONOTONIC): includes the
 *                                   daemon's publish path and socket
 *                                   wake-up latency, so an upper bound
 *   pacing_p99_jitter_us_bare_sleep the same p99 of a bare loop in a thread
 *                                   of this process, during the same 600
 *                                   frames: clock_nanosleep(TIMER_ABSTIME)
 *                                   with 1 ns timer slack and the daemon's
 *                                   final TK_CLOCK_SPIN_NS spin, deadlines
 *                                   placed by the daemon's rule (a grid for
 *                                   steady); the machine's floor (a VM's
 *                                   wake-up latency shows here)
 *   pacing_p99_jitter_us_unreal,    the same three figures of a second
 *   ..._bare_sleep_unreal,          idle daemon with engine.pacing=unreal,
 *   pacing_jitter_ratio_unreal      its runs alternating with the steady
 *                                   one's
 *   pacing_jitter_ratio_bare_pair   the A/A check of pacing_jitter_ratio:
 *                                   a second bare loop in the same steady
 *                                   runs (a quarter of a period after the
 *                                   daemon's frames; the first is half a
 *                                   period after them), pooled p99 / the
 *                                   first's: what the ratio reads with no
 *                                   difference at all between its sides
 *   tps_unreal_60                   as tps_steady_60 for a daemon with
 *                                   engine.pacing=unreal, run side by side
 *                                   with it over the same 60 s
 *   idle_cpu_percent_schedstat      the same 6 s from the run time in
 *                                   /proc/PID/task/_/schedstat (ns, all
 *                                   threads): finer than clock ticks
 *   rpc_latency_p50_us / _p99_us    one engine.info at a time, sent at
 *                                   uniformly random moments of the frame
 *                                   (100 requests): requests run at the
 *                                   next frame boundary, so ~half a period
 *   rpc_requests_per_s_unbounded    as rpc_requests_per_s but 100k lines
 *                                   written at once, to a separate daemon
 *                                   with control.max_pending=1000000 and
 *                                   control.max_output=1 GiB (warm-up + 5,
 *                                   median): the daemon's capacity without
 *                                   the per-connection limit
 *   mspt_p99_1m_entities            p99 of the same 180 frames (median of
 *                                   the 5 runs)
 *   mspt_p50_1m_movers              as mspt_p50_1m_entities with 1M
 *   mspt_p99_1m_movers              `mover` entities, default [engine]
 *                                   threads (one per online CPU): p50 and
 *                                   p99 (warm-up + 5 fresh daemons, median)
 *   mspt_p50_1m_movers_1t /         the same with [engine] threads = 1, a
 *   mspt_p99_1m_movers_1t           daemon of each kind in turn
 *   bytes_per_mover_entity          VmRSS growth of those daemons per
 *                                   mover, as rss_mib_1m_entities
 *                                   (median of the 5 runs)
 *   mspt_p50_1m_movers_floor /      the movers' floor: the same x += vx*dt
 *   mspt_p99_1m_movers_floor        over a contiguous array of 1M 48-byte
 *                                   states in this process, paced at 60
 *                                   Hz, 180 frames after 30, right after
 *                                   each movers daemon (median of the 5)
 *   mspt_p50_1m_movers_floor_2t /   that loop split over two threads
 *   mspt_p99_1m_movers_floor_2t     (split.h), the floor of the default
 *                                   threads on this machine
 *   mspt_p99_1m_movers_floor_ratio  mspt_p99_1m_movers_1t / the floor's
 *                                   p99, per run (median of the 5)
 *   mspt_p99_1m_movers_1t_cpu /     the same p99s of CPU time: the frame
 *   mspt_p99_1m_movers_floor_cpu    events' cpu_ms (the frame thread's
 *                                   CLOCK_THREAD_CPUTIME_ID over its
 *                                   work) and the floor's own; time a
 *                                   busy machine left them waiting for a
 *                                   CPU is not in them
 *   mspt_p99_1m_movers_cpu_floor_ratio  the two, per run (median of the 5)
 *   save_1m_max_frame_gap_ms        the largest gap between frames from a
 *                                   world.save of 1M movers until 10
 *                                   frames after its answer: the larger
 *                                   of the largest "dt" of the daemon's
 *                                   `frame` events (engine.max_dt=0, but
 *                                   the world still clamps dt to 0.4 s)
 *                                   and the largest gap between the
 *                                   arrivals of two of them here; the
 *                                   median of 5 saves one after the
 *                                   other in the same daemon, the first
 *                                   included (it also waits for the
 *                                   shadow of the states to grow); each
 *                                   save's seconds, bytes and maxima
 *                                   are noted
 *   save_1m_max_frame_gap_ms_worst  the largest of those 5
 *   save_1m_max_frame_dt_ms         the median of the 5 largest "dt": the
 *                                   daemon's own frame gaps, without the
 *                                   client's wake-ups
 *   save_1m_copy_ms / _fork_ms      what starting a save cost the frame
 *                                   thread (the answer's copy_ms and
 *                                   fork_ms), medians of the 5
 *   load_1m_max_frame_gap_ms        the same for a world.load of that
 *                                   file into the same daemon (read aside;
 *                                   the apply is one frame)
 *   load_1m_seconds                 that world.load's answer time
 *   journal_rpc_requests_per_s_     entity.set_props answered per second,
 *     {always,everysec,no}          pipelined as rpc_requests_per_s
 *                                   (JOURNAL_N per run), by four daemons
 *                                   started together: one without a
 *                                   journal (_none, the floor) and one per
 *                                   fsync policy, their runs interleaved
 *                                   (warm-up + 5, median)
 *   journal_rpc_ratio_{...}         each policy's rate / the floor's in the
 *                                   same round (median of the 5 ratios)
 *   journal_max_frame_gap_ms_{...}  the largest gap_ms of the daemon's frame
 *                                   events during those runs (and _none):
 *                                   the frame loop never waits for the disk
 *
 * stdout carries the key=value lines and nothing else; progress, the
 * per-run numbers and a table go to stderr.  Every wait has a deadline; on
 * any failure the daemon of that phase is killed, its log's tail is shown,
 * and the phases that do not depend on it still run.  Exit status 0 when
 * every BENCH.md figure was measured, 1 otherwise (the ones measured are
 * still printed).  The whole run takes about 4 minutes; `--pacing` runs
 * only the idle daemons and the TPS figures (about 2 minutes), `--movers`
 * the idle daemon's and the 1M movers figures, `--snapshots` only the save
 * and load ones.
 *
 * What this file does not measure: the core's tick, timer and memory
 * figures (bench_tick.c and the other bench files).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "split.h"
#include "tickd/alloc.h"
#include "tickd/clock.h"
#include "tickd/engine.h"

#define HZ       60.0       /* daemon tick rate                      */
#define PERIOD_S (1.0 / HZ) /* s                                     */
#define RUNS     5          /* timed runs per median figure (>= 5)   */
#define NS_PER_S 1000000000ull
#define MS(x)    ((uint64_t)(x)*1000000ull) /* ms -> ns                        */

#define READY_TIMEOUT_MS 10000    /* daemon start until engine.info answers */
#define CALL_TIMEOUT_MS  10000    /* one request's answer                   */
#define STOP_TIMEOUT_MS  10000    /* graceful exit after engine.shutdown    */
#define SETTLE_MS        1000     /* idle daemon settling before measuring  */
#define IDLE_WINDOW_MS   6000     /* idle CPU measurement window            */
#define PACING_FRAMES    600      /* frame periods in the pacing figure     */
#define LATENCY_CALLS    100      /* sequential calls in the latency figure */
#define RPC_WINDOW       1024     /* in-flight requests: max_pending shipped */
#define RPC_WARMUP       20000    /* requests in the warm-up run            */
#define RPC_N            60000    /* requests per timed run (~1 s)          */
#define RPC_N_UNBOUNDED  100000   /* requests per unbounded run             */
#define RPC_TIMEOUT_MS   20000    /* one throughput run                     */
#define SPAWN_BATCH      100000   /* entities per entity.spawn              */
#define SPAWN_TOTAL      1000000  /* entities per spawn run                 */
#define MSPT_SKIP        30       /* frames of settling after the spawns    */
#define MSPT_FRAMES      180      /* frames in the mspt figure (~3 s)       */
#define PRE_SPAWN_MS     300      /* frames run before the first RSS read   */
#define MAX_DAEMONS      32       /* daemons started by one run (25 now)     */
#define TPS_SECONDS      60       /* tps_steady_60: seconds averaged       */
#define TPS_SETTLE_MS    2000     /* frames run before its first reading   */
#define TPS_BURNERS      2        /* burner entities of its world ...      */
#define TPS_BURN_US      1000     /* ... each busy this long per frame     */

/* ---- time, statistics, output ---------------------------------------------- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / NS_PER_S), (long)(ns % NS_PER_S)};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
        ;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile p (0 < p <= 1) of n > 0 values; sorts v in place. */
static double percentile(double *v, size_t n, double p)
{
    qsort(v, n, sizeof *v, cmp_double);
    size_t k = (size_t)ceil(p * (double)n);
    return v[k ? k - 1 : 0];
}

/* Median of n > 0 values (sorts them in place). */
static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("bench_daemon: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* The figures: BENCH.md's first (required), then the extra ones. */
enum {
    F_IDLE_CPU,
    F_PACING,
    F_RPC,
    F_SPAWN,
    F_RSS,
    F_MSPT,
    F_REQUIRED, /* the ones above must be measured for exit status 0 */
    F_PACING_MAX = F_REQUIRED,
    F_PACING_ARRIVAL,
    F_PACING_BARE,
    F_IDLE_CPU_SCHED,
    F_LAT_P50,
    F_LAT_P99,
    F_RPC_UNBOUNDED,
    F_MSPT_P99,
    F_MSPT_MOVERS,
    F_SPAWN_GAP,
    F_HOSTILE_GAP,
    F_IDLE_GAP,
    F_SAVE_GAP,
    F_LOAD_GAP,
    F_LOAD_SECONDS,
    F_PACING_RATIO,
    F_PACING_UNREAL,
    F_PACING_BARE_UNREAL,
    F_PACING_RATIO_UNREAL,
    F_TPS_STEADY,
    F_TPS_UNREAL,
    F_MSPT_P99_MOVERS_1T,
    F_BYTES_MOVER,
    F_MSPT_P50_MOVERS_FLOOR,
    F_MSPT_P99_MOVERS_FLOOR,
    F_SAVE_GAP_WORST,
    F_SAVE_DT,
    F_SAVE_COPY,
    F_SAVE_FORK,
    F_MSPT_P99_MOVERS,
    F_MSPT_P50_MOVERS_1T,
    F_MSPT_P50_MOVERS_FLOOR_2T,
    F_MSPT_P99_MOVERS_FLOOR_2T,
    F_MSPT_P99_MOVERS_CPU,
    F_MSPT_P99_MOVERS_FLOOR_CPU,
    F_MSPT_P99_MOVERS_RATIO,
    F_MSPT_P99_MOVERS_CPU_RATIO,
    F_PACING_AA,
    F_JRPC_NONE,
    F_JRPC_ALWAYS,
    F_JRPC_EVERYSEC,
    F_JRPC_NO,
    F_JRATIO_ALWAYS,
    F_JRATIO_EVERYSEC,
    F_JRATIO_NO,
    F_JGAP_NONE,
    F_JGAP_ALWAYS,
    F_JGAP_EVERYSEC,
    F_JGAP_NO,
    F_COUNT
};

static const struct {
    const char *key;
    const char *fmt;  /* printf format of the value */
    const char *unit; /* for the table              */
} figs[F_COUNT] = {
    [F_IDLE_CPU] = {"idle_cpu_percent", "%.2f", "% of a core"},
    [F_PACING] = {"pacing_p99_jitter_us", "%.1f", "us"},
    [F_RPC] = {"rpc_requests_per_s", "%.0f", "requests/s"},
    [F_SPAWN] = {"spawn_1m_seconds", "%.3f", "s"},
    [F_RSS] = {"rss_mib_1m_entities", "%.1f", "MiB"},
    [F_MSPT] = {"mspt_p50_1m_entities", "%.3f", "ms"},
    [F_PACING_MAX] = {"pacing_max_jitter_us", "%.1f", "us"},
    [F_PACING_ARRIVAL] = {"pacing_p99_arrival_jitter_us", "%.1f", "us"},
    [F_PACING_BARE] = {"pacing_p99_jitter_us_bare_sleep", "%.1f", "us"},
    [F_IDLE_CPU_SCHED] = {"idle_cpu_percent_schedstat", "%.3f", "% of a core"},
    [F_LAT_P50] = {"rpc_latency_p50_us", "%.0f", "us"},
    [F_LAT_P99] = {"rpc_latency_p99_us", "%.0f", "us"},
    [F_RPC_UNBOUNDED] = {"rpc_requests_per_s_unbounded", "%.0f", "requests/s"},
    [F_MSPT_P99] = {"mspt_p99_1m_entities", "%.3f", "ms"},
    [F_MSPT_MOVERS] = {"mspt_p50_1m_movers", "%.3f", "ms"},
    [F_SPAWN_GAP] = {"spawn_1m_max_frame_gap_ms", "%.1f", "ms"},
    [F_HOSTILE_GAP] = {"max_frame_gap_ms_hostile", "%.1f", "ms"},
    [F_IDLE_GAP] = {"max_frame_gap_ms_idle", "%.1f", "ms"},
    [F_SAVE_GAP] = {"save_1m_max_frame_gap_ms", "%.1f", "ms"},
    [F_LOAD_GAP] = {"load_1m_max_frame_gap_ms", "%.1f", "ms"},
    [F_LOAD_SECONDS] = {"load_1m_seconds", "%.2f", "s"},
    [F_PACING_RATIO] = {"pacing_jitter_ratio", "%.3f", "x the bare loop"},
    [F_PACING_UNREAL] = {"pacing_p99_jitter_us_unreal", "%.1f", "us"},
    [F_PACING_BARE_UNREAL] = {"pacing_p99_jitter_us_bare_sleep_unreal", "%.1f", "us"},
    [F_PACING_RATIO_UNREAL] = {"pacing_jitter_ratio_unreal", "%.3f", "x the bare loop"},
    [F_TPS_STEADY] = {"tps_steady_60", "%.4f", "frames/s"},
    [F_TPS_UNREAL] = {"tps_unreal_60", "%.4f", "frames/s"},
    [F_MSPT_P99_MOVERS_1T] = {"mspt_p99_1m_movers_1t", "%.3f", "ms"},
    [F_BYTES_MOVER] = {"bytes_per_mover_entity", "%.1f", "bytes"},
    [F_MSPT_P50_MOVERS_FLOOR] = {"mspt_p50_1m_movers_floor", "%.3f", "ms"},
    [F_MSPT_P99_MOVERS_FLOOR] = {"mspt_p99_1m_movers_floor", "%.3f", "ms"},
    [F_SAVE_GAP_WORST] = {"save_1m_max_frame_gap_ms_worst", "%.1f", "ms"},
    [F_SAVE_DT] = {"save_1m_max_frame_dt_ms", "%.1f", "ms"},
    [F_SAVE_COPY] = {"save_1m_copy_ms", "%.2f", "ms"},
    [F_SAVE_FORK] = {"save_1m_fork_ms", "%.2f", "ms"},
    [F_MSPT_P99_MOVERS] = {"mspt_p99_1m_movers", "%.3f", "ms"},
    [F_MSPT_P50_MOVERS_1T] = {"mspt_p50_1m_movers_1t", "%.3f", "ms"},
    [F_MSPT_P50_MOVERS_FLOOR_2T] = {"mspt_p50_1m_movers_floor_2t", "%.3f", "ms"},
    [F_MSPT_P99_MOVERS_FLOOR_2T] = {"mspt_p99_1m_movers_floor_2t", "%.3f", "ms"},
    [F_MSPT_P99_MOVERS_CPU] = {"mspt_p99_1m_movers_1t_cpu", "%.3f", "ms of CPU"},
    [F_MSPT_P99_MOVERS_FLOOR_CPU] = {"mspt_p99_1m_movers_floor_cpu", "%.3f", "ms of CPU"},
    [F_MSPT_P99_MOVERS_RATIO] = {"mspt_p99_1m_movers_floor_ratio", "%.3f", "x the floor"},
    [F_MSPT_P99_MOVERS_CPU_RATIO] = {"mspt_p99_1m_movers_cpu_floor_ratio", "%.3f",
                                     "x the floor"},
    [F_PACING_AA] = {"pacing_jitter_ratio_bare_pair", "%.3f", "x the bare loop"},
    [F_JRPC_NONE] = {"journal_rpc_requests_per_s_none", "%.0f", "requests/s"},
    [F_JRPC_ALWAYS] = {"journal_rpc_requests_per_s_always", "%.0f", "requests/s"},
    [F_JRPC_EVERYSEC] = {"journal_rpc_requests_per_s_everysec", "%.0f", "requests/s"},
    [F_JRPC_NO] = {"journal_rpc_requests_per_s_no", "%.0f", "requests/s"},
    [F_JRATIO_ALWAYS] = {"journal_rpc_ratio_always", "%.3f", "x no journal"},
    [F_JRATIO_EVERYSEC] = {"journal_rpc_ratio_everysec", "%.3f", "x no journal"},
    [F_JRATIO_NO] = {"journal_rpc_ratio_no", "%.3f", "x no journal"},
    [F_JGAP_NONE] = {"journal_max_frame_gap_ms_none", "%.1f", "ms"},
    [F_JGAP_ALWAYS] = {"journal_max_frame_gap_ms_always", "%.1f", "ms"},
    [F_JGAP_EVERYSEC] = {"journal_max_frame_gap_ms_everysec", "%.1f", "ms"},
    [F_JGAP_NO] = {"journal_max_frame_gap_ms_no", "%.1f", "ms"},
};

static double fig_val[F_COUNT]; /* measured values                    */
static bool fig_ok[F_COUNT];    /* measured at all                     */

/* Record a figure and print its key=value line at once. */
static void figure(int f, double v)
{
    fig_val[f] = v;
    fig_ok[f] = true;
    printf("%s=", figs[f].key);
    printf(figs[f].fmt, v);
    putchar('\n');
    fflush(stdout);
}

/* ---- the daemon process ----------------------------------------------------- */

typedef struct bench {
    char dir[256];         /* temporary directory (mkdtemp)                 */
    char tickd[PATH_MAX];  /* absolute path of the daemon binary            */
    char config[PATH_MAX]; /* absolute path of config/tickd.ini, or ""      */
    int started;           /* daemons started so far (names their files)    */
} bench;

typedef struct proc {
    pid_t pid;           /* 0 when not running                            */
    char sock[PATH_MAX]; /* control socket                                */
    char log[PATH_MAX];  /* the daemon's stderr and stdout                */
    bool exited;         /* reaped                                        */
    int status;          /* waitpid status once exited                    */
} proc;

/* What the signal handler and the final cleanup remove: files in the
 * temporary directory (fixed arrays: no allocation in the handler). */
static char clean_dir[PATH_MAX];
static char clean_files[2 * MAX_DAEMONS][PATH_MAX];
static volatile sig_atomic_t clean_nfiles;
static volatile pid_t live_pid; /* the daemon to kill on a signal, or 0 */

static void cleanup_files(void)
{
    for (int i = 0; i < clean_nfiles; i++)
        unlink(clean_files[i]);
    if (clean_dir[0])
        rmdir(clean_dir);
}

static void on_fatal_signal(int sig)
{
    pid_t p = live_pid;
    if (p > 0)
        kill(p, SIGKILL);
    cleanup_files();
    _exit(128 + sig);
}

static void track_file(const char *path)
{
    if (clean_nfiles < 2 * MAX_DAEMONS) {
        snprintf(clean_files[clean_nfiles], PATH_MAX, "%s", path);
        clean_nfiles = clean_nfiles + 1;
    }
}

/*
 * Start tickd with --socket (in the temporary directory), --tick-rate 60,
 * --log-level warn, the shipped config if found, then `extra` (NULL-ended
 * argv pieces, may be NULL).  The child dies with this process
 * (PR_SET_PDEATHSIG) and runs in the temporary directory.  Returns false
 * if the process could not be created; readiness is daemon_ready's job.
 */
static bool proc_start(bench *b, proc *p, const char *const *extra)
{
    if (b->started >= MAX_DAEMONS) {
        note("too many daemons for one run");
        return false;
    }
    memset(p, 0, sizeof *p);
    int k = b->started++;
    snprintf(p->sock, sizeof p->sock, "%s/tickd-%d.sock", b->dir, k);
    snprintf(p->log, sizeof p->log, "%s/tickd-%d.log", b->dir, k);
    track_file(p->sock);
    track_file(p->log);

    const char *argv[32];
    int n = 0;
    argv[n++] = b->tickd;
    if (b->config[0]) {
        argv[n++] = "--config";
        argv[n++] = b->config;
    }
    argv[n++] = "--socket";
    argv[n++] = p->sock;
    argv[n++] = "--tick-rate";
    argv[n++] = "60";
    argv[n++] = "--log-level";
    argv[n++] = "warn";
    /* No /metrics listener: daemons of this run may be up side by side, and
     * another tickd on this machine may hold the shipped port. */
    argv[n++] = "--set";
    argv[n++] = "metrics.listen=";
    for (int i = 0; extra && extra[i] && n < 31; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;

    int logfd = open(p->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (logfd < 0) {
        note("cannot create %s: %s", p->log, strerror(errno));
        return false;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        note("fork: %s", strerror(errno));
        close(logfd);
        return false;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        dup2(logfd, 1);
        dup2(logfd, 2);
        if (chdir(b->dir) != 0)
            _exit(127);
        signal(SIGPIPE, SIG_DFL);
        execv(b->tickd, (char *const *)argv);
        _exit(127);
    }
    close(logfd);
    p->pid = pid;
    live_pid = pid;
    return true;
}

/* Has the daemon exited?  Reaps it if so (non-blocking). */
static bool proc_exited(proc *p)
{
    if (p->exited || p->pid <= 0)
        return true;
    int st;
    pid_t r = waitpid(p->pid, &st, WNOHANG);
    if (r == p->pid) {
        p->exited = true;
        p->status = st;
        live_pid = 0;
    }
    return p->exited;
}

/* Wait until the daemon exits or `deadline` passes; true if it exited. */
static bool proc_wait(proc *p, uint64_t deadline)
{
    while (!proc_exited(p)) {
        if (now_ns() >= deadline)
            return false;
        sleep_ns(MS(5));
    }
    return true;
}

static void proc_kill(proc *p)
{
    if (p->pid > 0 && !proc_exited(p)) {
        kill(p->pid, SIGKILL);
        proc_wait(p, now_ns() + MS(5000));
    }
}

/* The last lines of the daemon's log, to stderr (after a failure). */
static void proc_log_tail(const proc *p)
{
    FILE *f = fopen(p->log, "r");
    if (!f)
        return;
    char buf[4096];
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    long from = size > (long)sizeof buf - 1 ? size - (long)sizeof buf + 1 : 0;
    fseek(f, from, SEEK_SET);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    if (n == 0)
        return;
    fprintf(stderr, "---- tail of the daemon's log (%s) ----\n%s%s----\n", p->log, buf,
            buf[n - 1] == '\n' ? "" : "\n");
}

/* Describe how the daemon ended, for a message. */
static const char *exit_text(const proc *p, char *buf, size_t len)
{
    if (!p->exited)
        snprintf(buf, len, "still running");
    else if (WIFEXITED(p->status))
        snprintf(buf, len, "exit status %d", WEXITSTATUS(p->status));
    else if (WIFSIGNALED(p->status))
        snprintf(buf, len, "killed by signal %d", WTERMSIG(p->status));
    else
        snprintf(buf, len, "status 0x%x", p->status);
    return buf;
}

/* /proc/PID/status VmRSS in KiB, or -1. */
static long rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

/* utime + stime of the whole process (/proc/PID/stat), in clock ticks, or -1. */
static long long cpu_ticks(pid_t pid)
{
    char path[64], buf[2048];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *s = strrchr(buf, ')'); /* comm may contain spaces */
    if (!s)
        return -1;
    unsigned long long ut, st;
    /* after ")": state(3) ppid pgrp session tty_nr tpgid flags minflt
     * cminflt majflt cmajflt utime(14) stime(15) */
    if (sscanf(s + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (long long)(ut + st);
}

/* Sum of the on-CPU time of every thread (/proc/PID/task/TID/schedstat,
 * first field, ns), or -1 when schedstat is not available. */
static long long cpu_ns_schedstat(pid_t pid)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    long long sum = 0;
    bool any = false;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char p2[160];
        snprintf(p2, sizeof p2, "%s/%.32s/schedstat", path, de->d_name);
        FILE *f = fopen(p2, "r");
        if (!f)
            continue;
        unsigned long long run;
        if (fscanf(f, "%llu", &run) == 1) {
            sum += (long long)run;
            any = true;
        }
        fclose(f);
    }
    closedir(d);
    return any ? sum : -1;
}

/* ---- the control connection ----------------------------------------------------- */

#define READ_MIN (256 * 1024) /* bytes of free buffer before each read() */

typedef struct conn {
    int fd;           /* -1 when closed                               */
    char *buf;        /* received bytes                               */
    size_t off;       /* bytes of buf already consumed                */
    size_t len;       /* bytes held in buf                            */
    size_t cap;       /* bytes allocated                              */
    size_t scanned;   /* bytes after off searched for '\n' already    */
    bool eof;         /* the daemon closed the connection (or error)  */
    uint64_t fill_ns; /* monotonic time of the last read with data    */
    uint64_t next_id; /* id of the next request                       */
} conn;

static void conn_init(conn *c)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->next_id = 1;
}

static void conn_close(conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    tk_free(c->buf);
    conn_init(c);
}

/* Connect to the Unix socket at path and make it non-blocking; false on
 * failure with errno set. */
static bool conn_open(conn *c, const char *path)
{
    conn_close(c);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path) {
        errno = ENAMETOOLONG;
        return false;
    }
    memcpy(a.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return false;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    c->fd = fd;
    return true;
}

/* poll() timeout in ms until deadline (rounded up), 0 once it passed. */
static int ms_until(uint64_t deadline)
{
    uint64_t now = now_ns();
    if (now >= deadline)
        return 0;
    uint64_t ms = (deadline - now + 999999) / 1000000;
    return ms > 1000 ? 1000 : (int)ms;
}

/* Wait for `events` on fd until deadline: 1 ready (or hung up), 0 the
 * deadline passed, -1 poll failed. */
static int wait_fd(int fd, short events, uint64_t deadline)
{
    for (;;) {
        if (now_ns() >= deadline)
            return 0;
        struct pollfd p = {.fd = fd, .events = events, .revents = 0};
        int r = poll(&p, 1, ms_until(deadline));
        if (r > 0)
            return 1;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

/* One read(): > 0 bytes read, 0 nothing available now, -1 end of input or
 * a read error (c->eof set).  Lines taken before stay valid only until
 * this call. */
static ssize_t conn_read_some(conn *c)
{
    if (c->off == c->len)
        c->off = c->len = 0;
    if (c->cap - c->len < READ_MIN && c->off > 0) {
        memmove(c->buf, c->buf + c->off, c->len - c->off);
        c->len -= c->off;
        c->off = 0;
    }
    if (c->cap - c->len < READ_MIN) {
        size_t cap = c->cap ? c->cap : READ_MIN;
        while (cap - c->len < READ_MIN)
            cap *= 2;
        c->buf = tk_realloc(c->buf, cap);
        c->cap = cap;
    }
    ssize_t n = read(c->fd, c->buf + c->len, c->cap - c->len);
    if (n > 0) {
        c->len += (size_t)n;
        c->fill_ns = now_ns();
        return n;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    c->eof = true;
    return -1;
}

/* The next complete line already received (its '\n', and a '\r' before
 * it, replaced by NULs), or NULL.  Valid until the next conn_read_some. */
static char *conn_take_line(conn *c, size_t *len)
{
    if (!c->buf)
        return NULL;
    char *start = c->buf + c->off;
    size_t avail = c->len - c->off;
    char *nl = avail > c->scanned ? memchr(start + c->scanned, '\n', avail - c->scanned) : NULL;
    if (!nl) {
        c->scanned = avail;
        return NULL;
    }
    size_t l = (size_t)(nl - start);
    c->off += l + 1;
    c->scanned = 0;
    *nl = '\0';
    if (l && start[l - 1] == '\r')
        start[--l] = '\0';
    *len = l;
    return start;
}

/* The next line, waiting until deadline; NULL on timeout or end of input. */
static char *conn_line(conn *c, size_t *len, uint64_t deadline)
{
    for (;;) {
        char *l = conn_take_line(c, len);
        if (l)
            return l;
        if (c->eof || c->fd < 0)
            return NULL;
        ssize_t r = conn_read_some(c);
        if (r > 0)
            continue;
        if (r < 0 || wait_fd(c->fd, POLLIN, deadline) <= 0)
            return NULL;
    }
}

/* Write all n bytes of s, waiting until deadline; false on failure. */
static bool conn_write_all(conn *c, const char *s, size_t n, uint64_t deadline)
{
    while (n) {
        ssize_t w = send(c->fd, s, n, MSG_NOSIGNAL);
        if (w > 0) {
            s += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return false;
        if (wait_fd(c->fd, POLLOUT, deadline) <= 0)
            return false;
    }
    return true;
}

/*
 * Send one request (params: a JSON object text, or NULL for none) and wait
 * until deadline for its answer, skipping notifications.  Returns the
 * result, owned by the caller, or NULL after saying why on stderr (an
 * error answer, a timeout, a closed connection, a malformed answer).
 */
static json_t *conn_call_msg(conn *c, const char *method, const char *params, uint64_t deadline,
                             bool whole);

static json_t *conn_call(conn *c, const char *method, const char *params, uint64_t deadline)
{
    return conn_call_msg(c, method, params, deadline, false);
}

/* As conn_call, but the whole answer (result or error; NULL only when
 * none came). */
static json_t *conn_call_answer(conn *c, const char *method, const char *params,
                                uint64_t deadline)
{
    return conn_call_msg(c, method, params, deadline, true);
}

static json_t *conn_call_msg(conn *c, const char *method, const char *params, uint64_t deadline,
                             bool whole)
{
    char line[1024];
    unsigned long long id = c->next_id++;
    int n = params ? snprintf(line, sizeof line,
                              "{\"jsonrpc\":\"2.0\",\"id\":%llu,\"method\":\"%s\",\"params\":%s}\n",
                              id, method, params)
                   : snprintf(line, sizeof line,
                              "{\"jsonrpc\":\"2.0\",\"id\":%llu,\"method\":\"%s\"}\n", id, method);
    if (n < 0 || (size_t)n >= sizeof line) {
        note("%s: request too long", method);
        return NULL;
    }
    if (c->fd < 0 || !conn_write_all(c, line, (size_t)n, deadline)) {
        note("%s: cannot send the request: %s", method,
             c->fd < 0 ? "not connected" : strerror(errno));
        return NULL;
    }
    for (;;) {
        size_t len;
        char *l = conn_line(c, &len, deadline);
        if (!l) {
            note("%s: %s", method,
                 c->eof ? "the daemon closed the connection" : "no answer before the deadline");
            return NULL;
        }
        json_error_t je;
        json_t *m = json_loadb(l, len, 0, &je);
        if (!m || !json_is_object(m)) {
            note("%s: a line from the daemon is not a JSON object: %s", method,
                 m ? "(other JSON)" : je.text);
            json_decref(m);
            return NULL;
        }
        json_t *jid = json_object_get(m, "id");
        if (!jid) { /* a notification */
            json_decref(m);
            continue;
        }
        if (!json_is_integer(jid) || (unsigned long long)json_integer_value(jid) != id) {
            note("%s: an answer with an unexpected id", method);
            json_decref(m);
            return NULL;
        }
        if (whole)
            return m;
        json_t *res = json_object_get(m, "result");
        if (!res) {
            json_t *e = json_object_get(m, "error");
            note("%s: error %lld: %s", method,
                 (long long)json_integer_value(json_object_get(e, "code")),
                 json_string_value(json_object_get(e, "message"))
                     ? json_string_value(json_object_get(e, "message"))
                     : "(no message)");
            json_decref(m);
            return NULL;
        }
        json_incref(res);
        json_decref(m);
        return res;
    }
}

/* A number inside a result: o[k1] or o[k1][k2]; NAN when absent. */
static double jnum(const json_t *o, const char *k1, const char *k2)
{
    const json_t *v = json_object_get(o, k1);
    if (k2)
        v = json_object_get(v, k2);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* ---- the daemon, started and stopped ----------------------------------------------- */

/* After a failure: close, kill, show the log's tail. */
static void daemon_fail(proc *p, conn *c)
{
    char why[64];
    conn_close(c);
    if (proc_exited(p))
        note("the daemon had ended (%s)", exit_text(p, why, sizeof why));
    else
        note("killing the daemon (pid %d)", (int)p->pid);
    proc_kill(p);
    proc_log_tail(p);
}

/*
 * Start a daemon (proc_start's flags plus `extra`) and connect c to it.
 * True once it is ready (engine.info answered) before READY_TIMEOUT_MS;
 * otherwise the daemon is killed, its log's tail shown, and false.
 */
static bool daemon_up(bench *b, proc *p, conn *c, const char *const *extra)
{
    conn_init(c);
    if (!proc_start(b, p, extra))
        return false;
    uint64_t deadline = now_ns() + MS(READY_TIMEOUT_MS);
    for (;;) {
        char why[64];
        if (proc_exited(p)) {
            note("the daemon exited during start-up (%s)", exit_text(p, why, sizeof why));
            proc_log_tail(p);
            return false;
        }
        if (conn_open(c, p->sock))
            break;
        if (now_ns() >= deadline) {
            note("the daemon's socket %s accepted nothing within %d ms", p->sock, READY_TIMEOUT_MS);
            daemon_fail(p, c);
            return false;
        }
        sleep_ns(MS(10));
    }
    json_t *info = conn_call(c, "engine.info", NULL, deadline);
    if (!info) {
        daemon_fail(p, c);
        return false;
    }
    json_decref(info);
    return true;
}

/*
 * Stop gracefully: engine.shutdown, then wait for exit status 0; a daemon
 * still running after STOP_TIMEOUT_MS is killed.  Whatever the daemon
 * logged (warnings and errors) is shown.  False if the stop was not clean.
 */
static bool daemon_down(proc *p, conn *c)
{
    bool ok = true;
    uint64_t deadline = now_ns() + MS(STOP_TIMEOUT_MS);
    if (c->fd >= 0 && !proc_exited(p)) {
        json_t *r = conn_call(c, "engine.shutdown", NULL, deadline);
        ok = r != NULL;
        json_decref(r);
    }
    conn_close(c);
    char why[64];
    if (!proc_wait(p, deadline)) {
        note("the daemon did not exit within %d ms of engine.shutdown: killed", STOP_TIMEOUT_MS);
        proc_kill(p);
        ok = false;
    } else if (!WIFEXITED(p->status) || WEXITSTATUS(p->status) != 0) {
        note("the daemon ended with %s", exit_text(p, why, sizeof why));
        ok = false;
    }
    struct stat st;
    if (!ok || (stat(p->log, &st) == 0 && st.st_size > 0)) {
        if (ok)
            note("the daemon logged at warn level or above:");
        proc_log_tail(p);
    }
    return ok;
}

/* ---- frame events -------------------------------------------------------------------- */

typedef struct frame_ev {
    uint64_t frame;      /* frame number                                 */
    double dt;           /* s: the frame's dt (its period, undilated)    */
    double ms;           /* ms: work of the frame, sleep excluded        */
    uint64_t arrival_ns; /* monotonic: when this client read the event   */
    double cpu_ms;       /* ms: the frame thread's CPU time (NaN: none)  */
} frame_ev;

/*
 * Subscribe c to `frame` events, skip `skip` of them, record the next n in
 * ev, unsubscribe.  False after saying why (deadline, closed connection,
 * malformed event).
 */
static bool collect_frames(conn *c, frame_ev *ev, size_t n, size_t skip, uint64_t deadline)
{
    json_t *r = conn_call(c, "events.subscribe", "{\"topics\":[\"frame\"]}", deadline);
    if (!r)
        return false;
    json_decref(r);
    size_t got = 0, seen = 0;
    while (got < n) {
        size_t len;
        char *l = conn_line(c, &len, deadline);
        if (!l) {
            note("frame events: %s after %zu of %zu",
                 c->eof ? "the daemon closed the connection" : "none before the deadline", got, n);
            return false;
        }
        uint64_t t = c->fill_ns;
        json_t *m = json_loadb(l, len, 0, NULL);
        const char *meth = json_string_value(json_object_get(m, "method"));
        if (!meth || strcmp(meth, "event.frame") != 0) {
            json_decref(m);
            continue;
        }
        json_t *pr = json_object_get(m, "params");
        json_t *fr = json_object_get(pr, "frame");
        double dt = jnum(pr, "dt", NULL), ms = jnum(pr, "ms", NULL);
        if (!json_is_integer(fr) || isnan(dt) || isnan(ms)) {
            note("frame events: an event without frame, dt or ms: %.200s", l);
            json_decref(m);
            return false;
        }
        if (seen++ >= skip)
            ev[got++] = (frame_ev){(uint64_t)json_integer_value(fr), dt, ms, t,
                                   jnum(pr, "cpu_ms", NULL)};
        json_decref(m);
    }
    r = conn_call(c, "events.unsubscribe", "{\"topics\":[\"frame\"]}", deadline);
    if (!r)
        return false;
    json_decref(r);
    return true;
}

/* ---- phases on the idle daemon -------------------------------------------------------- */

/* idle_cpu_percent (and its schedstat twin): CPU time over IDLE_WINDOW_MS
 * of an idle daemon at 60 Hz with this one connection open and silent. */
static bool phase_idle_cpu(const proc *p)
{
    sleep_ns(MS(SETTLE_MS));
    uint64_t t0 = now_ns();
    long long c0 = cpu_ticks(p->pid), s0 = cpu_ns_schedstat(p->pid);
    sleep_ns(MS(IDLE_WINDOW_MS));
    uint64_t t1 = now_ns();
    long long c1 = cpu_ticks(p->pid), s1 = cpu_ns_schedstat(p->pid);
    if (c0 < 0 || c1 < 0) {
        note("idle CPU: cannot read /proc/%d/stat", (int)p->pid);
        return false;
    }
    double wall = (double)(t1 - t0) / 1e9;
    double pct = (double)(c1 - c0) / (double)sysconf(_SC_CLK_TCK) / wall * 100.0;
    note("idle CPU over %.2f s: %lld clock ticks of %ld/s = %.2f%% of a core", wall, c1 - c0,
         sysconf(_SC_CLK_TCK), pct);
    figure(F_IDLE_CPU, pct);
    if (s0 >= 0 && s1 >= 0) {
        double spct = (double)(s1 - s0) / 1e9 / wall * 100.0;
        note("idle CPU from schedstat: %.3f ms on CPU = %.3f%% of a core", (double)(s1 - s0) / 1e6,
             spct);
        figure(F_IDLE_CPU_SCHED, spct);
    }
    return true;
}

/*
 * The machine's own pacing floor: PACING_FRAMES periods of a bare
 * clock_nanosleep(TIMER_ABSTIME) loop in a thread of this process, with 1 ns
 * timer slack and the daemon's last stretch (tk_clock_sleep_until with
 * TK_CLOCK_SPIN_NS), run beside the daemon's frames and placing its
 * deadlines by the same rule as the daemon measured: the previous wake-up +
 * period (unreal) or a fixed grid (steady, re-anchored as the engine does).
 * Its first deadline is half a period away from the daemon's frames: with
 * the same period, the two would otherwise keep whatever phase they started
 * with, and on a 2-vCPU machine two wake-ups that fall together wait for
 * each other, every frame of the run (one run's ratio to the next swung
 * between 0.4 and 2.6 with the phase left to chance).
 */
typedef struct bare_loop {
    bool steady;                  /* grid deadlines                          */
    uint64_t phase;               /* monotonic ns: a first deadline, moved on
                                     by whole periods until it is ahead    */
    double jitter[PACING_FRAMES]; /* us: |period - 1/60 s|                   */
    size_t n;                     /* periods recorded                        */
    volatile sig_atomic_t stop;   /* set to end the loop early               */
} bare_loop;

static void *bare_loop_main(void *arg)
{
    bare_loop *bl = arg;
    prctl(PR_SET_TIMERSLACK, 1UL);
    const uint64_t period = (uint64_t)llround(PERIOD_S * 1e9);
    uint64_t first = bl->phase, now = now_ns();
    while (first <= now)
        first += period;
    tk_clock_sleep_until(first, TK_CLOCK_SPIN_NS);
    uint64_t last = now_ns(), grid = first;
    while (bl->n < PACING_FRAMES && !bl->stop) {
        uint64_t deadline = (bl->steady ? grid : last) + period;
        tk_clock_sleep_until(deadline, TK_CLOCK_SPIN_NS);
        uint64_t t = now_ns();
        grid = t - deadline > TK_PACING_STEADY_MAX_BEHIND * period ? t : deadline;
        bl->jitter[bl->n++] = fabs((double)(t - last) - (double)period) / 1e3;
        last = t;
    }
    return NULL;
}

/* One pacing run: p99 of |period - 1/60 s| of the daemon's frames (from
 * its own dt), their max, the p99 at this client (arrivals; NAN when too
 * many events were missing), and the p99 of the bare loop beside it. */
typedef struct pacing_run {
    double p99, max, arrival_p99, bare_p99; /* us */
    double jd[PACING_FRAMES], jb[PACING_FRAMES]; /* us: the periods' jitter,
                                                    daemon and bare loop   */
    double jb2[PACING_FRAMES]; /* us: a second bare loop's (the A/A check)  */
} pacing_run;

/* PACING_FRAMES consecutive frame periods of the idle daemon on c, with the
 * bare loop of the same pacing beside it (half a period after the daemon's
 * frames) and a second one (a quarter of a period after them): the two
 * bare loops are one loop twice, so their ratio is the measurement's own
 * noise.  False after saying why. */
static bool phase_pacing(conn *c, bool steady, pacing_run *out)
{
    size_t n = PACING_FRAMES + 1;
    const char *mode = steady ? "steady" : "unreal";
    frame_ev *ev = tk_malloc(n * sizeof *ev);
    double *jd = tk_malloc(n * sizeof *jd), *ja = tk_malloc(n * sizeof *ja);
    bare_loop *bl = tk_calloc(1, sizeof *bl), *bl2 = tk_calloc(1, sizeof *bl2);
    bl->steady = bl2->steady = steady;
    bool ok = false, bare = false, bare2 = false;
    pthread_t th, th2;
    uint64_t deadline = now_ns() + (uint64_t)((double)(n + 2) * PERIOD_S * 1e9) + MS(10000);
    /* The daemon's phase: a frame event arrives some 0.1 ms after its
     * frame started. */
    if (!collect_frames(c, ev, 1, 0, deadline))
        goto out;
    bl->phase = ev[0].arrival_ns + (uint64_t)llround(PERIOD_S * 1e9 / 2);
    bl2->phase = ev[0].arrival_ns + (uint64_t)llround(PERIOD_S * 1e9 / 4);
    bare = pthread_create(&th, NULL, bare_loop_main, bl) == 0;
    bare2 = bare && pthread_create(&th2, NULL, bare_loop_main, bl2) == 0;
    if (!bare || !bare2)
        note("pacing: cannot start the bare sleep loop threads");
    if (!collect_frames(c, ev, n, 2, deadline))
        goto out;
    size_t na = 0, gaps = 0;
    for (size_t i = 1; i < n; i++) {
        jd[i - 1] = fabs(ev[i].dt - PERIOD_S) * 1e6;
        if (ev[i].frame != ev[i - 1].frame + 1) {
            gaps++;
            continue;
        }
        ja[na++] = fabs((double)(ev[i].arrival_ns - ev[i - 1].arrival_ns) / 1e9 - PERIOD_S) * 1e6;
    }
    memcpy(out->jd, jd, sizeof out->jd);
    out->p99 = percentile(jd, PACING_FRAMES, 0.99);
    out->max = jd[PACING_FRAMES - 1];
    note("pacing (%s) over %d frames (the daemon's dt): |period - 16.667 ms| p50 %.1f us, "
         "p99 %.1f us, max %.1f us",
         mode, PACING_FRAMES, percentile(jd, PACING_FRAMES, 0.50), out->p99, out->max);
    if (gaps)
        note("pacing: %zu frame events missing (dropped?): arrival periods across them skipped",
             gaps);
    out->arrival_p99 = NAN;
    if (na >= PACING_FRAMES / 2) {
        out->arrival_p99 = percentile(ja, na, 0.99);
        note("pacing at this client (event arrival): p50 %.1f us, p99 %.1f us, max %.1f us over "
             "%zu periods",
             percentile(ja, na, 0.50), out->arrival_p99, ja[na - 1], na);
    }
    ok = true;
out:
    if (bare) {
        if (!ok)
            bl->stop = 1;
        pthread_join(th, NULL);
        if (ok && bl->n < PACING_FRAMES) {
            note("pacing: the bare loop recorded %zu of %d periods", bl->n, PACING_FRAMES);
            ok = false;
        }
        if (ok) {
            memcpy(out->jb, bl->jitter, sizeof out->jb);
            out->bare_p99 = percentile(bl->jitter, bl->n, 0.99);
            note("pacing of a bare %s sleep loop beside it (the machine's floor): p50 %.1f us, "
                 "p99 %.1f us, max %.1f us",
                 mode, percentile(bl->jitter, bl->n, 0.50), out->bare_p99,
                 bl->jitter[bl->n - 1]);
        }
    }
    if (bare2) {
        if (!ok)
            bl2->stop = 1;
        pthread_join(th2, NULL);
        if (ok && bl2->n < PACING_FRAMES) {
            note("pacing: the second bare loop recorded %zu of %d periods", bl2->n,
                 PACING_FRAMES);
            ok = false;
        }
        if (ok)
            memcpy(out->jb2, bl2->jitter, sizeof out->jb2);
    }
    ok = ok && bare && bare2;
    tk_free(bl);
    tk_free(bl2);
    tk_free(ev);
    tk_free(jd);
    tk_free(ja);
    return ok;
}

/* Where pacing_figures reports (-1: not reported). */
typedef struct pacing_figs {
    int p99, max, arrival, bare, ratio, aa;
} pacing_figs;

/* The medians of RUNS pacing runs into their figures; the ratio is the p99
 * of all the runs' periods of the daemon over the same of the bare loops
 * that ran beside them.  A run's p99 is its 6th worst period: one burst of
 * other jobs on the machine within its 10 s moves it, and the ratio of one
 * run to the next swung between 0.07 and 1.4 on a loaded VM (the median of
 * five such ratios, used before, kept the swing); pooled, the p99 is the
 * 30th worst of 3000. */
static void pacing_figures(const char *mode, const pacing_run *r, const pacing_figs *pf)
{
    double p99[RUNS], mx[RUNS], ar[RUNS], bare[RUNS], ratio[RUNS];
    size_t nar = 0;
    char runs[256];
    size_t k = 0;
    for (int i = 0; i < RUNS; i++) {
        p99[i] = r[i].p99;
        mx[i] = r[i].max;
        bare[i] = r[i].bare_p99;
        ratio[i] = r[i].bare_p99 > 0 ? r[i].p99 / r[i].bare_p99 : INFINITY;
        if (!isnan(r[i].arrival_p99))
            ar[nar++] = r[i].arrival_p99;
        k += (size_t)snprintf(runs + k, sizeof runs - k, "%s%.0f/%.0f", i ? " " : "", p99[i],
                              bare[i]);
    }
    note("pacing (%s), p99 us of the daemon / the bare loop, per run: %s", mode, runs);
    if (pf->p99 >= 0)
        figure(pf->p99, median(p99, RUNS));
    if (pf->max >= 0)
        figure(pf->max, median(mx, RUNS));
    if (pf->arrival >= 0 && nar == RUNS)
        figure(pf->arrival, median(ar, RUNS));
    if (pf->bare >= 0)
        figure(pf->bare, median(bare, RUNS));
    double *pd = tk_malloc(RUNS * PACING_FRAMES * sizeof *pd);
    double *pb = tk_malloc(RUNS * PACING_FRAMES * sizeof *pb);
    double *pb2 = tk_malloc(RUNS * PACING_FRAMES * sizeof *pb2);
    for (int i = 0; i < RUNS; i++) {
        memcpy(pd + (size_t)i * PACING_FRAMES, r[i].jd, sizeof r[i].jd);
        memcpy(pb + (size_t)i * PACING_FRAMES, r[i].jb, sizeof r[i].jb);
        memcpy(pb2 + (size_t)i * PACING_FRAMES, r[i].jb2, sizeof r[i].jb2);
    }
    double qd = percentile(pd, RUNS * PACING_FRAMES, 0.99);
    double qb = percentile(pb, RUNS * PACING_FRAMES, 0.99);
    double qb2 = percentile(pb2, RUNS * PACING_FRAMES, 0.99);
    note("pacing (%s), all runs pooled: p99 %.1f us (daemon) / %.1f us (bare loop) = %.3f; the "
         "median of the per-run ratios: %.3f; the second bare loop: p99 %.1f us, %.3f x the "
         "first (the measurement's noise)",
         mode, qd, qb, qb > 0 ? qd / qb : INFINITY, median(ratio, RUNS), qb2,
         qb > 0 ? qb2 / qb : INFINITY);
    if (pf->ratio >= 0)
        figure(pf->ratio, qb > 0 ? qd / qb : INFINITY);
    if (pf->aa >= 0)
        figure(pf->aa, qb > 0 ? qb2 / qb : INFINITY);
    tk_free(pd);
    tk_free(pb);
    tk_free(pb2);
}

/*
 * The pacing figures of both pacings: the shipped daemon on cs (steady)
 * and a second idle daemon with engine.pacing=unreal on cu, RUNS runs of
 * PACING_FRAMES frames each, alternating (so a noisy stretch of the
 * machine falls on both), each beside a bare loop of its rule.
 */
static bool phase_pacing_both(conn *cs, conn *cu)
{
    static const pacing_figs figs_s = {F_PACING,      F_PACING_MAX,   F_PACING_ARRIVAL,
                                       F_PACING_BARE, F_PACING_RATIO, F_PACING_AA};
    static const pacing_figs figs_u = {F_PACING_UNREAL,       -1, -1, F_PACING_BARE_UNREAL,
                                       F_PACING_RATIO_UNREAL, -1};
    pacing_run rs[RUNS], ru[RUNS];
    for (int i = 0; i < RUNS; i++)
        if (!phase_pacing(cs, true, &rs[i]) || !phase_pacing(cu, false, &ru[i]))
            return false;
    pacing_figures("steady", rs, &figs_s);
    pacing_figures("unreal", ru, &figs_u);
    return true;
}

/* rpc_latency_p50_us / _p99_us: LATENCY_CALLS engine.info, one at a time,
 * each sent at a uniformly random moment within a frame period. */
static bool phase_latency(conn *c)
{
    double lat[LATENCY_CALLS];
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < LATENCY_CALLS; i++) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        sleep_ns(seed % (uint64_t)(PERIOD_S * 1e9));
        uint64_t t0 = now_ns();
        json_t *r = conn_call(c, "engine.info", NULL, t0 + MS(CALL_TIMEOUT_MS));
        if (!r)
            return false;
        json_decref(r);
        lat[i] = (double)(now_ns() - t0) / 1e3;
    }
    double p50 = percentile(lat, LATENCY_CALLS, 0.50), p99 = percentile(lat, LATENCY_CALLS, 0.99);
    note("engine.info latency, one at a time: p50 %.0f us, p99 %.0f us, min %.0f us, max %.0f us",
         p50, p99, lat[0], lat[LATENCY_CALLS - 1]);
    figure(F_LAT_P50, p50);
    figure(F_LAT_P99, p99);
    return true;
}

static const char ok_prefix[] = "{\"jsonrpc\":\"2.0\",\"result\":";

/*
 * Check one answer of a pipelined run: 1 a result for request `want`,
 * 0 an error answer for it, 2 a notification (ignored), -1 anything else.
 * The first error and anything malformed are shown (*shown limits that).
 * The common case is decided from the text alone (the daemon writes
 * "jsonrpc", "result", then "id"); anything else is parsed.
 */
static int check_answer(const char *l, size_t len, unsigned long long want, bool *shown)
{
    char tail[48];
    size_t tn = (size_t)snprintf(tail, sizeof tail, ",\"id\":%llu}", want);
    size_t pn = sizeof ok_prefix - 1;
    if (len > pn + tn && memcmp(l, ok_prefix, pn) == 0 && memcmp(l + len - tn, tail, tn) == 0)
        return 1;
    json_t *m = json_loadb(l, len, 0, NULL);
    int rc = -1;
    json_t *id = json_object_get(m, "id");
    if (m && !id && json_object_get(m, "method")) {
        rc = 2;
    } else if (json_is_integer(id) && (unsigned long long)json_integer_value(id) == want) {
        rc = json_object_get(m, "result") ? 1 : json_object_get(m, "error") ? 0 : -1;
    }
    if ((rc == 0 && !*shown) || rc < 0) {
        note("request %llu: %s: %.300s", want, rc == 0 ? "error answer" : "unexpected answer", l);
        *shown = true;
    }
    json_decref(m);
    return rc;
}

/* The request lines of the throughput runs: printf formats whose one
 * argument, the request id, may be used twice ("%1$llu"). */
static const char engine_info_line[] = "{\"jsonrpc\":\"2.0\",\"id\":%1$llu,\"method\":\"engine.info\"}\n";
static const char set_props_line[] =
    "{\"jsonrpc\":\"2.0\",\"id\":%1$llu,\"method\":\"entity.set_props\",\"params\":{\"id\":1,"
    "\"props\":{\"x\":%1$llu}}}\n";

/*
 * n requests (lines of `line_fmt`) pipelined on c, at most `window` of them
 * sent and not yet answered.  Returns requests answered per second (first
 * byte sent to last answer read), or -1 after saying why.  Every answer
 * must be a result for the expected id, in request order.
 */
static double rpc_pipelined_lines(conn *c, const char *line_fmt, size_t n, size_t window,
                                  uint64_t deadline)
{
    size_t *off = tk_malloc((n + 1) * sizeof *off);
    char *text = tk_malloc(n * 160);
    unsigned long long base = c->next_id;
    size_t tl = 0;
    for (size_t i = 0; i < n; i++) {
        off[i] = tl;
        tl += (size_t)sprintf(text + tl, line_fmt, base + i);
    }
    off[n] = tl;
    c->next_id += n;

    double rate = -1;
    size_t sent = 0, got = 0, errors = 0;
    bool shown = false;
    uint64_t t0 = now_ns();
    while (got < n) {
        size_t lim = off[got + window < n ? got + window : n];
        struct pollfd pf = {
            .fd = c->fd, .events = (short)(POLLIN | (sent < lim ? POLLOUT : 0)), .revents = 0};
        if (now_ns() >= deadline) {
            note("pipelined run: %zu of %zu answered before the deadline", got, n);
            goto out;
        }
        int pr = poll(&pf, 1, ms_until(deadline));
        if (pr < 0 && errno != EINTR) {
            note("poll: %s", strerror(errno));
            goto out;
        }
        if (pr <= 0)
            continue;
        if (pf.revents & POLLOUT) {
            ssize_t w = send(c->fd, text + sent, lim - sent, MSG_NOSIGNAL);
            if (w > 0)
                sent += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                note("pipelined run: send: %s", strerror(errno));
                goto out;
            }
        }
        if (pf.revents & (POLLIN | POLLHUP | POLLERR)) {
            if (conn_read_some(c) < 0) {
                note("pipelined run: the daemon closed the connection after %zu answers", got);
                goto out;
            }
            size_t len;
            char *l;
            while (got < n && (l = conn_take_line(c, &len))) {
                int k = check_answer(l, len, base + got, &shown);
                if (k < 0)
                    goto out;
                if (k == 2)
                    continue;
                if (k == 0)
                    errors++;
                got++;
            }
        }
    }
    if (errors) {
        note("pipelined run: %zu of %zu requests answered with an error", errors, n);
        goto out;
    }
    rate = (double)n / ((double)(now_ns() - t0) / 1e9);
out:
    tk_free(off);
    tk_free(text);
    return rate;
}

static double rpc_pipelined(conn *c, size_t n, size_t window, uint64_t deadline)
{
    return rpc_pipelined_lines(c, engine_info_line, n, window, deadline);
}

/* A throughput figure: a warm-up run, then RUNS runs of n requests with
 * `window` in flight; the median goes to figure f. */
static bool phase_rpc(conn *c, size_t n, size_t window, int f)
{
    double v[RUNS];
    json_t *st0 = conn_call(c, "engine.stats", NULL, now_ns() + MS(CALL_TIMEOUT_MS));
    if (!st0)
        return false;
    bool ok = rpc_pipelined(c, RPC_WARMUP < n ? RPC_WARMUP : n, window,
                            now_ns() + MS(RPC_TIMEOUT_MS)) >= 0;
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    uint64_t w0 = now_ns();
    for (int i = 0; ok && i < RUNS; i++) {
        v[i] = rpc_pipelined(c, n, window, now_ns() + MS(RPC_TIMEOUT_MS));
        ok = v[i] >= 0;
    }
    getrusage(RUSAGE_SELF, &ru1);
    double wall = (double)(now_ns() - w0) / 1e9;
    double cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec + ru1.ru_stime.tv_sec -
                          ru0.ru_stime.tv_sec) +
                 (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec + ru1.ru_stime.tv_usec -
                          ru0.ru_stime.tv_usec) /
                     1e6;
    if (ok)
        note("%s: this client used %.0f%% of a core during the runs (it is not the bottleneck "
             "while well under 100%%)",
             figs[f].key, cpu / wall * 100.0);
    json_t *st1 = ok ? conn_call(c, "engine.stats", NULL, now_ns() + MS(CALL_TIMEOUT_MS)) : NULL;
    if (st1)
        note("%s: %.0f of %.0f frames overran their period during the runs", figs[f].key,
             jnum(st1, "overruns", NULL) - jnum(st0, "overruns", NULL),
             jnum(st1, "frame", NULL) - jnum(st0, "frame", NULL));
    json_decref(st0);
    json_decref(st1);
    if (!st1)
        return false;
    char runs[256];
    size_t k = 0;
    for (int i = 0; i < RUNS; i++)
        k += (size_t)snprintf(runs + k, sizeof runs - k, "%s%.0f", i ? " " : "", v[i]);
    double med = median(v, RUNS);
    note("%s: %zu engine.info per run, %zu in flight: runs %s -> median %.0f/s", figs[f].key, n,
         window, runs, med);
    figure(f, med);
    return true;
}

/* The idle daemon: idle CPU, pacing (beside a second, unreal-paced,
 * daemon), latency, throughput, in that order (the quiet measurements
 * first).  A failure ends these daemons. */
static void idle_daemon(bench *b)
{
    static const char *const extra_u[] = {"--set", "engine.pacing=unreal", NULL};
    proc p, pu;
    conn c, cu;
    note("idle daemon at 60 Hz: CPU over %d s, pacing over %d x %d frames (and as many of an "
         "unreal-paced daemon), latency, throughput",
         IDLE_WINDOW_MS / 1000, RUNS, PACING_FRAMES);
    if (!daemon_up(b, &p, &c, NULL))
        return;
    if (!phase_idle_cpu(&p)) {
        daemon_fail(&p, &c);
        return;
    }
    if (!daemon_up(b, &pu, &cu, extra_u)) {
        daemon_fail(&p, &c);
        return;
    }
    sleep_ns(MS(SETTLE_MS));
    if (!phase_pacing_both(&c, &cu)) {
        daemon_fail(&pu, &cu);
        daemon_fail(&p, &c);
        return;
    }
    daemon_down(&pu, &cu);
    if (phase_latency(&c) && phase_rpc(&c, RPC_N, RPC_WINDOW, F_RPC)) {
        daemon_down(&p, &c);
        return;
    }
    daemon_fail(&p, &c);
}

/* world.status's frame counter and real time (the sum of the frames' raw
 * dt: the daemon's own clock, read once per frame start). */
static bool frame_clock(conn *c, double *frame, double *real_s)
{
    json_t *st = conn_call(c, "world.status", NULL, now_ns() + MS(CALL_TIMEOUT_MS));
    if (!st)
        return false;
    *frame = jnum(st, "frame", NULL);
    *real_s = jnum(st, "real_time", NULL);
    json_decref(st);
    return !isnan(*frame) && !isnan(*real_s);
}

/*
 * tps_steady_60 and tps_unreal_60: two daemons at 60 Hz side by side, one
 * with each pacing, each with TPS_BURNERS burner entities busy TPS_BURN_US
 * per frame (a working world with headroom, 12% of the period: frames that
 * start late, or overrun on a busy machine, are the ones to pay back);
 * after TPS_SETTLE_MS, frames run over TPS_SECONDS of the daemon's own
 * frame clock: (frame1 - frame0) / (real_time1 - real_time0), both read
 * at frame boundaries, so no socket latency enters the rate.
 */
static void steady_tps(bench *b)
{
    static const char *const extra_u[] = {"--set", "engine.pacing=unreal", NULL};
    static const char *const extra_s[] = {"--set", "engine.pacing=steady", NULL};
    proc ps, pu;
    conn cs, cu;
    note("TPS over %d s at 60 Hz, steady and unreal pacing side by side (%d burners x %d us "
         "per frame each)",
         TPS_SECONDS, TPS_BURNERS, TPS_BURN_US);
    if (!daemon_up(b, &ps, &cs, extra_s))
        return;
    if (!daemon_up(b, &pu, &cu, extra_u)) {
        daemon_fail(&ps, &cs);
        return;
    }
    char params[128];
    snprintf(params, sizeof params, "{\"class\":\"burner\",\"count\":%d,\"props\":{\"work_us\":%d}}",
             TPS_BURNERS, TPS_BURN_US);
    json_t *r1 = conn_call(&cs, "entity.spawn", params, now_ns() + MS(CALL_TIMEOUT_MS));
    json_t *r2 = r1 ? conn_call(&cu, "entity.spawn", params, now_ns() + MS(CALL_TIMEOUT_MS)) : NULL;
    bool ok = r1 && r2;
    json_decref(r1);
    json_decref(r2);
    double f0s, t0s, f0u, t0u, f1s, t1s, f1u, t1u;
    json_t *st0 = NULL, *st1 = NULL, *su0 = NULL, *su1 = NULL;
    if (ok) {
        sleep_ns(MS(TPS_SETTLE_MS));
        st0 = conn_call(&cs, "engine.stats", NULL, now_ns() + MS(CALL_TIMEOUT_MS));
        su0 = conn_call(&cu, "engine.stats", NULL, now_ns() + MS(CALL_TIMEOUT_MS));
        ok = st0 && su0 && frame_clock(&cs, &f0s, &t0s) && frame_clock(&cu, &f0u, &t0u);
    }
    uint64_t w0 = now_ns();
    if (ok) {
        sleep_ns(MS(TPS_SECONDS * 1000));
        ok = frame_clock(&cs, &f1s, &t1s) && frame_clock(&cu, &f1u, &t1u);
    }
    double wall = (double)(now_ns() - w0) / 1e9;
    if (ok) {
        st1 = conn_call(&cs, "engine.stats", NULL, now_ns() + MS(CALL_TIMEOUT_MS));
        su1 = conn_call(&cu, "engine.stats", NULL, now_ns() + MS(CALL_TIMEOUT_MS));
        ok = st1 && su1;
    }
    if (ok && t1s > t0s && t1u > t0u) {
        double tps_s = (f1s - f0s) / (t1s - t0s), tps_u = (f1u - f0u) / (t1u - t0u);
        note("steady: %.0f frames in %.4f s = %.4f TPS, %.1f frames short of 60 Hz (%.2f s at "
             "this client), %.0f overruns, mspt p50 %.2f ms",
             f1s - f0s, t1s - t0s, tps_s, (t1s - t0s) * HZ - (f1s - f0s), wall,
             jnum(st1, "overruns", NULL) - jnum(st0, "overruns", NULL),
             jnum(st1, "mspt", "p50"));
        note("unreal: %.0f frames in %.4f s = %.4f TPS, %.1f frames short of 60 Hz (%.2f s at "
             "this client), %.0f overruns, mspt p50 %.2f ms",
             f1u - f0u, t1u - t0u, tps_u, (t1u - t0u) * HZ - (f1u - f0u), wall,
             jnum(su1, "overruns", NULL) - jnum(su0, "overruns", NULL),
             jnum(su1, "mspt", "p50"));
        figure(F_TPS_STEADY, tps_s);
        figure(F_TPS_UNREAL, tps_u);
    }
    json_decref(st0);
    json_decref(st1);
    json_decref(su0);
    json_decref(su1);
    if (ok) {
        daemon_down(&ps, &cs);
        daemon_down(&pu, &cu);
    } else {
        daemon_fail(&ps, &cs);
        daemon_fail(&pu, &cu);
    }
}

/* rpc_requests_per_s_unbounded: a daemon without the per-connection limit. */
static void unbounded_daemon(bench *b)
{
    static const char *const extra[] = {"--set", "control.max_pending=1000000", "--set",
                                        "control.max_output=1073741824", NULL};
    proc p;
    conn c;
    note("daemon with control.max_pending=1000000: %d requests written at once per run",
         RPC_N_UNBOUNDED);
    if (!daemon_up(b, &p, &c, extra))
        return;
    if (phase_rpc(&c, RPC_N_UNBOUNDED, RPC_N_UNBOUNDED, F_RPC_UNBOUNDED)) {
        daemon_down(&p, &c);
        return;
    }
    daemon_fail(&p, &c);
}

/* ---- 1M entities --------------------------------------------------------------------------- */

typedef struct spawn_result {
    double seconds;   /* s: the ten spawns                            */
    double rss_mib;   /* MiB: VmRSS growth                            */
    double mspt_p50;  /* ms: median work per frame                    */
    double mspt_p99;  /* ms: p99 work per frame                       */
    double stats_p50; /* ms: engine.stats mspt p50 at the end         */
    double gap_ms;    /* ms: largest frame gap while spawning        */
    double cpu_p99;   /* ms: p99 of the frames' cpu_ms               */
} spawn_result;

/*
 * One fresh daemon: SPAWN_TOTAL entities of class cls in batches of
 * SPAWN_BATCH, timed; then MSPT_FRAMES frames' work after MSPT_SKIP; then
 * engine.stats (must count SPAWN_TOTAL entities and ticks) and VmRSS.
 * False after saying why; the daemon is gone either way.
 */
static bool spawn_run(bench *b, const char *cls, const char *const *extra, spawn_result *out)
{
    proc p;
    conn c;
    if (!daemon_up(b, &p, &c, extra))
        return false;
    frame_ev *ev = tk_malloc(MSPT_FRAMES * sizeof *ev);
    double *ms = tk_malloc(MSPT_FRAMES * sizeof *ms);
    json_t *st = NULL;
    sleep_ns(MS(PRE_SPAWN_MS));
    long rss0 = rss_kib(p.pid);
    char params[128];
    snprintf(params, sizeof params, "{\"class\":\"%s\",\"count\":%d}", cls, SPAWN_BATCH);
    uint64_t t0 = now_ns();
    for (int i = 0; i < SPAWN_TOTAL / SPAWN_BATCH; i++) {
        json_t *r = conn_call(&c, "entity.spawn", params, now_ns() + MS(CALL_TIMEOUT_MS));
        if (!r)
            goto fail;
        json_t *ids = json_object_get(r, "ids");
        double cnt = json_is_array(ids) ? (double)json_array_size(ids) : jnum(r, "count", NULL);
        json_decref(r);
        if (cnt != SPAWN_BATCH) {
            note("entity.spawn: %g entities spawned, %d asked", cnt, SPAWN_BATCH);
            goto fail;
        }
    }
    out->seconds = (double)(now_ns() - t0) / 1e9;
    st = conn_call(&c, "engine.stats", NULL, now_ns() + MS(CALL_TIMEOUT_MS));
    if (!st)
        goto fail;
    out->gap_ms = jnum(st, "gap_max_ms_10s", NULL); /* the spawns took < 10 s */
    json_decref(st);
    st = NULL;
    uint64_t deadline =
        now_ns() + (uint64_t)((MSPT_SKIP + MSPT_FRAMES) * PERIOD_S * 1e9) * 4 + MS(10000);
    if (!collect_frames(&c, ev, MSPT_FRAMES, MSPT_SKIP, deadline))
        goto fail;
    st = conn_call(&c, "engine.stats", NULL, now_ns() + MS(CALL_TIMEOUT_MS));
    if (!st)
        goto fail;
    double ents = jnum(st, "entities", NULL), ticks = jnum(st, "ticks_run_last_frame", NULL);
    if (ents != SPAWN_TOTAL || ticks != SPAWN_TOTAL) {
        note("engine.stats: %g entities and %g ticks in the last frame, %d expected", ents, ticks,
             SPAWN_TOTAL);
        goto fail;
    }
    out->stats_p50 = jnum(st, "mspt", "p50");
    long rss1 = rss_kib(p.pid);
    if (rss0 < 0 || rss1 < 0) {
        note("cannot read /proc/%d/status", (int)p.pid);
        goto fail;
    }
    out->rss_mib = (double)(rss1 - rss0) / 1024.0;
    for (size_t i = 0; i < MSPT_FRAMES; i++)
        ms[i] = ev[i].ms;
    out->mspt_p99 = percentile(ms, MSPT_FRAMES, 0.99);
    out->mspt_p50 = percentile(ms, MSPT_FRAMES, 0.50);
    out->cpu_p99 = NAN;
    for (size_t i = 0; i < MSPT_FRAMES; i++)
        ms[i] = ev[i].cpu_ms;
    if (!isnan(ms[0]))
        out->cpu_p99 = percentile(ms, MSPT_FRAMES, 0.99);
    json_decref(st);
    tk_free(ev);
    tk_free(ms);
    daemon_down(&p, &c);
    return true;
fail:
    json_decref(st);
    tk_free(ev);
    tk_free(ms);
    daemon_fail(&p, &c);
    return false;
}

static void note_run(const char *what, const spawn_result *r)
{
    note("%s: spawn %.3f s (max frame gap %.1f ms), RSS +%.1f MiB, mspt p50 %.3f ms p99 %.3f ms "
         "(engine.stats p50 %.3f ms)",
         what, r->seconds, r->gap_ms, r->rss_mib, r->mspt_p50, r->mspt_p99, r->stats_p50);
}

/* spawn_1m_seconds, rss_mib_1m_entities, mspt_p50_1m_entities (and p99):
 * a warm-up daemon, then RUNS fresh daemons; medians. */
static void counters(bench *b)
{
    spawn_result r[RUNS], w;
    note("1M counters at 60 Hz: a warm-up daemon, then %d fresh daemons", RUNS);
    if (!spawn_run(b, "counter", NULL, &w))
        return;
    note_run("warm-up", &w);
    for (int i = 0; i < RUNS; i++) {
        if (!spawn_run(b, "counter", NULL, &r[i]))
            return;
        char what[32];
        snprintf(what, sizeof what, "run %d", i + 1);
        note_run(what, &r[i]);
    }
    double s[RUNS], m[RUNS], p50[RUNS], p99[RUNS], gap[RUNS];
    for (int i = 0; i < RUNS; i++) {
        gap[i] = r[i].gap_ms;
        s[i] = r[i].seconds;
        m[i] = r[i].rss_mib;
        p50[i] = r[i].mspt_p50;
        p99[i] = r[i].mspt_p99;
    }
    figure(F_SPAWN, median(s, RUNS));
    figure(F_RSS, median(m, RUNS));
    figure(F_MSPT, median(p50, RUNS));
    figure(F_MSPT_P99, median(p99, RUNS));
    figure(F_SPAWN_GAP, median(gap, RUNS));
}

/* The movers' floor: the same work as a plain C loop in this process, on
 * `threads` threads (split.h), paced at 60 Hz as the daemon is
 * (clock_nanosleep to each period's start), timed over MSPT_FRAMES frames
 * after MSPT_SKIP, right after the daemons (running it beside the daemon's
 * frames, in its idle time, was tried: on a loaded 2-vCPU machine the two
 * then overlap and slow each other down, doubling both p50s); its p50 and
 * p99 in ms, and on one thread the p99 of its CPU time
 * (CLOCK_THREAD_CPUTIME_ID).  A frame that a busy machine preempts shows in
 * the wall time here as it does in the daemon's. */
typedef struct mstate {
    double x, y, z, vx, vy, vz;
} mstate;

__attribute__((noinline)) static void mover_floor_frame(mstate *m, size_t n, float dt)
{
    for (size_t i = 0; i < n; i++) {
        m[i].x += m[i].vx * dt;
        m[i].y += m[i].vy * dt;
        m[i].z += m[i].vz * dt;
    }
}

static void mover_floor_part(void *ud, size_t lo, size_t hi)
{
    mover_floor_frame((mstate *)ud + lo, hi - lo, (float)PERIOD_S);
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* cpu_p99: NULL, or (threads 1) the p99 of the frames' CPU time. */
static void mover_floor(unsigned threads, double *p50, double *p99, double *cpu_p99)
{
    mstate *m = tk_calloc(SPAWN_TOTAL, sizeof *m);
    for (size_t i = 0; i < SPAWN_TOTAL; i++)
        m[i].vx = 1.0;
    bench_split *sp = bench_split_new(threads);
    double *ms = tk_malloc(MSPT_FRAMES * sizeof *ms), *cpu = tk_malloc(MSPT_FRAMES * sizeof *cpu);
    uint64_t next = now_ns();
    for (int f = 0; f < MSPT_SKIP + MSPT_FRAMES; f++) {
        next += (uint64_t)(PERIOD_S * 1e9);
        struct timespec ts = {(time_t)(next / NS_PER_S), (long)(next % NS_PER_S)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        uint64_t c0 = thread_cpu_ns(), t0 = now_ns();
        bench_split_run(sp, mover_floor_part, m, SPAWN_TOTAL);
        if (f >= MSPT_SKIP) {
            ms[f - MSPT_SKIP] = (double)(now_ns() - t0) / 1e6;
            cpu[f - MSPT_SKIP] = (double)(thread_cpu_ns() - c0) / 1e6;
        }
    }
    *p99 = percentile(ms, MSPT_FRAMES, 0.99);
    *p50 = percentile(ms, MSPT_FRAMES, 0.50);
    if (cpu_p99)
        *cpu_p99 = percentile(cpu, MSPT_FRAMES, 0.99);
    bench_split_free(sp);
    tk_free(cpu);
    tk_free(ms);
    tk_free(m);
}

/* mspt_p50/p99_1m_movers (default threads), _1t (one thread),
 * bytes_per_mover_entity: 1M movers (a class with real work) in a warm-up
 * daemon, then RUNS pairs of fresh daemons, one thread and the default in
 * turn; medians.  After each pair, the floors (mover_floor on one thread
 * and on two).  The ratios of the one-thread daemon to the one-thread floor
 * are medians of the per-run ratios.  The daemon's frame time (`ms`, wall)
 * includes the time its thread waited for a CPU, its `cpu_ms` does not: a
 * loaded machine shows in both wall p99s alike, our own costs in the CPU
 * ones. */
static void movers(bench *b)
{
    static const char *const one[] = {"--set", "engine.threads=1", NULL};
    spawn_result r[RUNS], r1[RUNS], w;
    note("1M movers at 60 Hz: a warm-up daemon, then %d pairs of fresh daemons (one thread, "
         "the default threads), each pair followed by the same work as a C loop at 60 Hz on "
         "one thread and on two",
         RUNS);
    if (!spawn_run(b, "mover", NULL, &w))
        return;
    note_run("movers warm-up", &w);
    double p50[RUNS], p99[RUNS], p50_1[RUNS], p99_1[RUNS], bytes[RUNS], f50[RUNS], f99[RUNS],
        g50[RUNS], g99[RUNS], c99[RUNS], fc99[RUNS], ratio[RUNS], cratio[RUNS];
    bool cpu = true;
    for (int i = 0; i < RUNS; i++) {
        char what[48];
        if (!spawn_run(b, "mover", one, &r1[i]))
            return;
        snprintf(what, sizeof what, "movers run %d, one thread", i + 1);
        note_run(what, &r1[i]);
        if (!spawn_run(b, "mover", NULL, &r[i]))
            return;
        snprintf(what, sizeof what, "movers run %d, default threads", i + 1);
        note_run(what, &r[i]);
        mover_floor(1, &f50[i], &f99[i], &fc99[i]);
        mover_floor(2, &g50[i], &g99[i], NULL);
        p50[i] = r[i].mspt_p50;
        p99[i] = r[i].mspt_p99;
        p50_1[i] = r1[i].mspt_p50;
        p99_1[i] = r1[i].mspt_p99;
        c99[i] = r1[i].cpu_p99;
        cpu = cpu && !isnan(c99[i]);
        ratio[i] = p99_1[i] / f99[i];
        cratio[i] = c99[i] / fc99[i];
        note("movers run %d floor (a C loop at 60 Hz): one thread p50 %.3f ms p99 %.3f ms; two "
             "threads p50 %.3f ms p99 %.3f ms; CPU p99, one thread: daemon %.3f ms, floor "
             "%.3f ms",
             i + 1, f50[i], f99[i], g50[i], g99[i], c99[i], fc99[i]);
        bytes[i] = r1[i].rss_mib * 1048576.0 / SPAWN_TOTAL;
    }
    figure(F_MSPT_MOVERS, median(p50, RUNS));
    figure(F_MSPT_P99_MOVERS, median(p99, RUNS));
    figure(F_MSPT_P50_MOVERS_1T, median(p50_1, RUNS));
    figure(F_MSPT_P99_MOVERS_1T, median(p99_1, RUNS));
    figure(F_BYTES_MOVER, median(bytes, RUNS));
    figure(F_MSPT_P50_MOVERS_FLOOR, median(f50, RUNS));
    figure(F_MSPT_P99_MOVERS_FLOOR, median(f99, RUNS));
    figure(F_MSPT_P50_MOVERS_FLOOR_2T, median(g50, RUNS));
    figure(F_MSPT_P99_MOVERS_FLOOR_2T, median(g99, RUNS));
    figure(F_MSPT_P99_MOVERS_RATIO, median(ratio, RUNS));
    if (cpu) {
        figure(F_MSPT_P99_MOVERS_CPU, median(c99, RUNS));
        figure(F_MSPT_P99_MOVERS_FLOOR_CPU, median(fc99, RUNS));
        figure(F_MSPT_P99_MOVERS_CPU_RATIO, median(cratio, RUNS));
    }
}

/* ---- hostile clients (make hostile; max_frame_gap_ms_hostile) ---------------------------- */

/*
 * A scripted mix of the attacks of the issue "hostile clients and big
 * worlds" against one 60 Hz daemon, each bounded in time.  The largest
 * frame gap (engine.stats gap_max_ms_10s, read after each attack: the
 * daemon measures it from its own frame starts) is the figure; `make
 * hostile` runs the same mix as a test: every attack must leave the daemon
 * alive and answering, and no gap may reach the systemd watchdog's 10 s.
 */
#define HOSTILE_FLOOD_MS    2000  /* pipelining clients that never read      */
#define HOSTILE_FLOODERS    4
#define HOSTILE_IDLE        200   /* connections that never send             */
#define HOSTILE_BATCH       10000 /* engine.info members of one batch        */
#define HOSTILE_TIMERS      200000
#define HOSTILE_SPAWN       2000000
#define HOSTILE_CHAIN       25000 /* reverse prerequisite chain              */
#define HOSTILE_LOAD_CHAIN  80000 /* loaded entities waiting for the last one */
#define HOSTILE_WATCHDOG_MS 10000

static int hostile_failed, hostile_passed;
static double hostile_gap_max;
static double hostile_gap_idle; /* the floor: the same daemon idle, 2 s */

/* A client that reads the daemon's `frame` events and keeps the largest
 * gap_ms (the daemon's own frame start minus the previous one) since the
 * last hostile_check. */
typedef struct observer {
    const char *sock;
    pthread_mutex_t mu;
    double gap_max;     /* ms, since the last take                      */
    uint64_t events;
    volatile bool stop;
} observer;

static void *observe_main(void *arg)
{
    observer *o = arg;
    conn c;
    conn_init(&c);
    if (!conn_open(&c, o->sock))
        return NULL;
    static const char sub[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"events.subscribe\","
                              "\"params\":{\"topics\":[\"frame\"]}}\n";
    if (!conn_write_all(&c, sub, sizeof sub - 1, now_ns() + MS(CALL_TIMEOUT_MS)))
        return NULL;
    while (!o->stop) {
        size_t len;
        char *l = conn_line(&c, &len, now_ns() + MS(200));
        if (!l) {
            if (c.eof)
                break;
            continue;
        }
        json_t *m = json_loadb(l, len, 0, NULL);
        json_t *gp = json_object_get(json_object_get(m, "params"), "gap_ms");
        if (json_is_number(gp)) {
            pthread_mutex_lock(&o->mu);
            if (json_number_value(gp) > o->gap_max)
                o->gap_max = json_number_value(gp);
            o->events++;
            pthread_mutex_unlock(&o->mu);
        }
        json_decref(m);
    }
    conn_close(&c);
    return NULL;
}

static double observer_take(observer *o)
{
    pthread_mutex_lock(&o->mu);
    double g = o->gap_max;
    o->gap_max = 0;
    pthread_mutex_unlock(&o->mu);
    return g;
}

static observer *hostile_obs;

typedef struct flooder {
    const char *sock;
    uint64_t until;
} flooder;

static void *flood_main(void *arg)
{
    const flooder *f = arg;
    conn c;
    conn_init(&c);
    if (!conn_open(&c, f->sock))
        return NULL;
    static const char line[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"engine.info\"}\n";
    char buf[64 * 1024];
    size_t n = 0;
    while (n + sizeof line - 1 <= sizeof buf) {
        memcpy(buf + n, line, sizeof line - 1);
        n += sizeof line - 1;
    }
    while (now_ns() < f->until) {
        ssize_t w = send(c.fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            break; /* disconnected for its unsent output: expected */
        if (w < 0)
            sleep_ns(MS(1));
    }
    conn_close(&c);
    return NULL;
}

/* Send `text` (whole lines) and read `answers` lines back. */
static bool send_read(conn *c, const char *text, size_t len, size_t answers, uint64_t deadline)
{
    if (!conn_write_all(c, text, len, deadline))
        return false;
    for (size_t i = 0; i < answers; i++) {
        size_t l;
        if (!conn_line(c, &l, deadline))
            return false;
    }
    return true;
}

/* n pipelined requests `method` with params made by fmt % (base + i,
 * base + i + 1), answers read. */
static bool pipeline(conn *c, const char *method, const char *fmt, size_t n, uint64_t base,
                     uint64_t deadline)
{
    enum { WINDOW = 500 };
    char *buf = tk_malloc(WINDOW * 256);
    bool ok = true;
    for (size_t i = 0; i < n && ok; i += WINDOW) {
        size_t len = 0, k = 0;
        for (; k < WINDOW && i + k < n; k++) {
            char params[160];
            snprintf(params, sizeof params, fmt, (unsigned long long)(base + i + k),
                     (unsigned long long)(base + i + k + 1));
            len += (size_t)snprintf(buf + len, 256, "{\"jsonrpc\":\"2.0\",\"id\":%zu,"
                                                   "\"method\":\"%s\",\"params\":%s}\n",
                                    i + k, method, params);
        }
        ok = send_read(c, buf, len, k, deadline);
    }
    tk_free(buf);
    return ok;
}

/* After an attack: the daemon answers, and its largest frame gap of the
 * last 10 s. */
static void hostile_check(proc *p, const char *attack, bool attack_ok)
{
    conn c;
    conn_init(&c);
    json_t *st = NULL;
    if (!proc_exited(p) && conn_open(&c, p->sock))
        st = conn_call(&c, "engine.stats", NULL, now_ns() + MS(CALL_TIMEOUT_MS));
    sleep_ns(MS(100)); /* the frames after it */
    double gap = st ? observer_take(hostile_obs) : NAN;
    bool ok = attack_ok && st && gap < HOSTILE_WATCHDOG_MS;
    note("hostile: %-52s %s  max frame gap %8.1f ms  RSS %ld MiB", attack, ok ? "ok  " : "FAIL",
         gap, st ? (long)(jnum(st, "rss_bytes", NULL) / 1048576) : -1L);
    if (ok)
        hostile_passed++;
    else
        hostile_failed++;
    if (gap > hostile_gap_max)
        hostile_gap_max = gap;
    json_decref(st);
    conn_close(&c);
    sleep_ns(MS(300)); /* frames between attacks */
    observer_take(hostile_obs);
}

/* Write `text` to <dir>/<name> (tracked for cleanup); false on failure. */
static bool hostile_file(bench *b, const char *name, const char *text, size_t len)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%.255s/%s", b->dir, name);
    track_file(path);
    FILE *f = fopen(path, "w");
    bool ok = f && fwrite(text, 1, len, f) == len;
    if (f && fclose(f) != 0)
        ok = false;
    return ok;
}

/* A paused world's snapshot of `n` counters, each waiting for the last one
 * (that load took 12 - 32 s when it was quadratic; the integration test
 * snapfiles_prerequisite_on_last_loads loads the same shape). */
static char *hostile_chain_doc(int n, size_t *len)
{
    size_t cap = (size_t)n * 128 + 512, k = 0;
    char *t = tk_malloc(cap);
    k += (size_t)snprintf(t + k, cap - k,
                          "{\"format\":\"tickd-snapshot\",\"version\":1,\"world\":{\"paused\":"
                          "true},\"entities\":[");
    for (int i = 1; i <= n; i++) {
        k += (size_t)snprintf(t + k, cap - k, "%s{\"id\":%d,\"class\":\"counter\"", i > 1 ? "," : "",
                              i);
        k += i < n ? (size_t)snprintf(t + k, cap - k, ",\"tick\":{\"prerequisites\":[{\"id\":%d}]}}", n)
                   : (size_t)snprintf(t + k, cap - k, ",\"tick\":{\"prerequisites\":[]}}");
    }
    k += (size_t)snprintf(t + k, cap - k, "]}");
    *len = k;
    return t;
}

static bool hostile(bench *b)
{
    proc p;
    conn c;
    char snap[PATH_MAX];
    snprintf(snap, sizeof snap, "snapshot.path=%.255s/hostile-save.json", b->dir);
    const char *const extra[] = {"--set", "control.max_line=4194304", "--set", snap, NULL};
    char saved[PATH_MAX];
    snprintf(saved, sizeof saved, "%.255s/hostile-save.json", b->dir);
    track_file(saved);
    if (!daemon_up(b, &p, &c, extra))
        return false;
    uint64_t dl = now_ns() + MS(60000);
    observer obs = {.sock = p.sock, .mu = PTHREAD_MUTEX_INITIALIZER};
    hostile_obs = &obs;
    pthread_t obs_th;
    pthread_create(&obs_th, NULL, observe_main, &obs);
    sleep_ns(MS(300));
    observer_take(&obs);
    sleep_ns(MS(2000)); /* the floor: the largest gap of the idle daemon */
    hostile_gap_idle = observer_take(&obs);
    note("hostile: %-52s       max frame gap %8.1f ms", "(idle, before the attacks)",
         hostile_gap_idle);

    /* Clients pipelining without reading: cut off at max_output, never a stall. */
    flooder f = {p.sock, now_ns() + MS(HOSTILE_FLOOD_MS)};
    pthread_t th[HOSTILE_FLOODERS];
    for (int i = 0; i < HOSTILE_FLOODERS; i++)
        pthread_create(&th[i], NULL, flood_main, &f);
    for (int i = 0; i < HOSTILE_FLOODERS; i++)
        pthread_join(th[i], NULL);
    hostile_check(&p, "4 clients pipelining, never reading", true);

    /* Connections that never send, and half-sent lines. */
    conn *idle = tk_calloc(HOSTILE_IDLE, sizeof *idle);
    for (int i = 0; i < HOSTILE_IDLE; i++) {
        conn_init(&idle[i]);
        if (conn_open(&idle[i], p.sock) && i % 4 == 0)
            conn_write_all(&idle[i], "{\"jsonrpc\":\"2.0\",\"method\":", 26, dl);
    }
    conn extra_c;
    conn_init(&extra_c);
    json_t *r = conn_open(&extra_c, p.sock)
                    ? conn_call(&extra_c, "engine.info", NULL, now_ns() + MS(CALL_TIMEOUT_MS))
                    : NULL;
    hostile_check(&p, "200 idle connections, 50 partial lines", r != NULL);
    json_decref(r);
    conn_close(&extra_c);
    for (int i = 0; i < HOSTILE_IDLE; i++)
        conn_close(&idle[i]);
    tk_free(idle);

    /* One batch of 10,000 engine.info. */
    size_t cap = (size_t)HOSTILE_BATCH * 64 + 16, len = 0;
    char *batch = tk_malloc(cap);
    batch[len++] = '[';
    for (int i = 0; i < HOSTILE_BATCH; i++)
        len += (size_t)snprintf(batch + len, cap - len,
                                "%s{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"engine.info\"}",
                                i ? "," : "", i);
    len += (size_t)snprintf(batch + len, cap - len, "]\n");
    bool ok = send_read(&c, batch, len, 1, dl);
    tk_free(batch);
    hostile_check(&p, "a batch of 10,000 engine.info", ok);

    /* 200k timers, then listings of everything at once. */
    ok = pipeline(&c, "timer.set", "{\"rate\":%llu.5,\"loop\":true}", HOSTILE_TIMERS, 0, dl);
    r = ok ? conn_call(&c, "timer.list", "{\"limit\":1000000}", now_ns() + MS(CALL_TIMEOUT_MS))
           : NULL;
    hostile_check(&p, "timer.list of 200k timers, limit 1M", r != NULL);
    json_decref(r);

    /* 2M entities in one request, then their level removed. */
    json_decref(conn_call(&c, "level.add", "{\"name\":\"hostile\"}", now_ns() + MS(CALL_TIMEOUT_MS)));
    char params[128];
    snprintf(params, sizeof params, "{\"class\":\"counter\",\"count\":%d,\"level\":\"hostile\"}",
             HOSTILE_SPAWN);
    r = conn_call(&c, "entity.spawn", params, now_ns() + MS(60000));
    hostile_check(&p, "entity.spawn count=2,000,000", r != NULL);
    json_decref(r);
    r = conn_call(&c, "tick.dump", "{\"limit\":1000000}", now_ns() + MS(CALL_TIMEOUT_MS));
    hostile_check(&p, "tick.dump of 2M tick functions, limit 1M", r != NULL);
    json_decref(r);
    r = conn_call_answer(&c, "world.trace", "{\"frames\":3}", now_ns() + MS(CALL_TIMEOUT_MS));
    hostile_check(&p, "world.trace of 2M tick functions (refused)",
                  jnum(json_object_get(r, "error"), "code", NULL) == -32003);
    json_decref(r);
    r = conn_call(&c, "level.remove", "{\"name\":\"hostile\"}", now_ns() + MS(60000));
    hostile_check(&p, "level.remove of 2M entities", r != NULL);
    json_decref(r);

    /* A reverse prerequisite chain closed into a cycle. */
    snprintf(params, sizeof params, "{\"class\":\"counter\",\"count\":%d}", HOSTILE_CHAIN);
    json_t *sp = conn_call(&c, "entity.spawn", params, now_ns() + MS(CALL_TIMEOUT_MS));
    double first = sp ? jnum(sp, "first", NULL) : NAN;
    json_decref(sp);
    ok = sp && pipeline(&c, "tick.add_prerequisite", "{\"id\":%llu,\"prerequisite\":%llu}",
                        HOSTILE_CHAIN - 1, (uint64_t)first, dl);
    if (ok) { /* and closed into a cycle */
        snprintf(params, sizeof params, "{\"id\":%.0f,\"prerequisite\":%.0f}",
                 first + HOSTILE_CHAIN - 1, first);
        json_t *cy = conn_call(&c, "tick.add_prerequisite", params, now_ns() + MS(CALL_TIMEOUT_MS));
        ok = cy != NULL;
        json_decref(cy);
    }
    hostile_check(&p, "a reverse prerequisite chain of 25,000, a cycle", ok);

    /* A tiny life span. */
    r = conn_call(&c, "entity.spawn", "{\"class\":\"counter\",\"count\":100,\"life_span\":1e-10}",
                  now_ns() + MS(CALL_TIMEOUT_MS));
    hostile_check(&p, "life_span 1e-10", r != NULL);
    json_decref(r);

    /* Files: a FIFO as a snapshot, a timer in slot 16,777,214, 80,000
     * entities waiting for the last one; then a save of what that loaded. */
    char fifo[PATH_MAX];
    snprintf(fifo, sizeof fifo, "%.255s/hostile-fifo.json", b->dir);
    track_file(fifo);
    ok = mkfifo(fifo, 0600) == 0;
    r = ok ? conn_call_answer(&c, "world.load", "{\"path\":\"hostile-fifo.json\"}",
                              now_ns() + MS(CALL_TIMEOUT_MS))
           : NULL;
    const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
    hostile_check(&p, "world.load of a FIFO (refused)", msg && strstr(msg, "not a regular file"));
    json_decref(r);
    static const char slot_doc[] =
        "{\"format\":\"tickd-snapshot\",\"version\":1,\"world\":{\"paused\":true},"
        "\"entities\":[],\"timers\":[{\"handle\":33554430,\"rate\":1,\"remaining\":5}]}";
    ok = hostile_file(b, "hostile-slot.json", slot_doc, sizeof slot_doc - 1);
    r = ok ? conn_call(&c, "world.load", "{\"path\":\"hostile-slot.json\"}",
                       now_ns() + MS(CALL_TIMEOUT_MS))
           : NULL;
    hostile_check(&p, "world.load of a timer in slot 16,777,214", r != NULL);
    json_decref(r);
    size_t clen;
    char *chain = hostile_chain_doc(HOSTILE_LOAD_CHAIN, &clen);
    ok = hostile_file(b, "hostile-chain.json", chain, clen);
    tk_free(chain);
    r = ok ? conn_call(&c, "world.load", "{\"path\":\"hostile-chain.json\"}", now_ns() + MS(60000))
           : NULL;
    hostile_check(&p, "world.load of 80,000 waiting for the last one",
                  r != NULL && jnum(r, "entities", NULL) == HOSTILE_LOAD_CHAIN);
    json_decref(r);
    r = conn_call(&c, "world.save", NULL, now_ns() + MS(60000));
    hostile_check(&p, "world.save of those 80,000", r != NULL);
    json_decref(r);

    /* A failing timer action every frame, 30 subscribers that never read. */
    conn subs[30];
    for (int i = 0; i < 30; i++) {
        conn_init(&subs[i]);
        if (conn_open(&subs[i], p.sock))
            conn_write_all(&subs[i],
                           "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"events.subscribe\","
                           "\"params\":{\"topics\":[\"log\",\"frame\"]}}\n",
                           87, dl);
    }
    r = conn_call(&c, "timer.set",
                  "{\"rate\":0.001,\"loop\":true,\"action\":{\"method\":\"entity.destroy\","
                  "\"params\":{\"ids\":[987654321]}}}",
                  now_ns() + MS(CALL_TIMEOUT_MS));
    sleep_ns(MS(2000));
    hostile_check(&p, "failing timer actions, 30 non-reading subscribers", r != NULL);
    json_decref(r);
    for (int i = 0; i < 30; i++)
        conn_close(&subs[i]);

    bool alive = !proc_exited(&p);
    obs.stop = true;
    pthread_join(obs_th, NULL);
    note("hostile: the observer saw %llu frames", (unsigned long long)obs.events);
    if (alive)
        daemon_down(&p, &c);
    else
        daemon_fail(&p, &c);
    return alive;
}

/* ---- saving 1M movers ------------------------------------------------------------------------- */

#define SAVE_AFTER_FRAMES 10    /* frames watched after world.save answered */
#define SAVE_TIMEOUT_MS   120000 /* one world.save of 1M movers               */

/*
 * Send `method` (params JSON or NULL) while subscribed to frame events;
 * read until SAVE_AFTER_FRAMES frames after its answer.  Fills the answer
 * time, the result (new reference) and the largest frame period: the
 * larger of the events' dt and the gap between their arrivals here.
 */
static bool watched_call(conn *c, const char *method, const char *params, uint64_t deadline,
                         double *seconds, json_t **result, double *max_gap_ms, double *max_dt_ms)
{
    unsigned long long id = c->next_id++;
    char req[512];
    int n = snprintf(req, sizeof req, "{\"jsonrpc\":\"2.0\",\"id\":%llu,\"method\":\"%s\"%s%s}\n",
                     id, method, params ? ",\"params\":" : "", params ? params : "");
    uint64_t t0 = now_ns();
    if (!conn_write_all(c, req, (size_t)n, deadline))
        return false;
    double max_ms = 0, max_arrival_ms = 0;
    uint64_t last_arrival = 0;
    int after = -1, frames = 0;
    *result = NULL;
    while (after < SAVE_AFTER_FRAMES) {
        size_t len;
        char *l = conn_line(c, &len, deadline);
        if (!l) {
            note("%s: %s", method, c->eof ? "the daemon closed the connection" : "no answer in time");
            json_decref(*result);
            return false;
        }
        json_t *m = json_loadb(l, len, 0, NULL);
        json_t *rid = json_object_get(m, "id");
        if (json_is_integer(rid) && (unsigned long long)json_integer_value(rid) == id) {
            json_t *res = json_object_get(m, "result");
            if (!res) {
                note("%s failed: %.300s", method, l);
                json_decref(m);
                return false;
            }
            *seconds = (double)(now_ns() - t0) / 1e9;
            *result = json_incref(res);
            after = 0;
        } else {
            const char *meth = json_string_value(json_object_get(m, "method"));
            double dt = jnum(json_object_get(m, "params"), "dt", NULL);
            if (meth && !strcmp(meth, "event.frame") && !isnan(dt)) {
                frames++;
                if (dt * 1e3 > max_ms)
                    max_ms = dt * 1e3;
                if (last_arrival && (double)(c->fill_ns - last_arrival) / 1e6 > max_arrival_ms)
                    max_arrival_ms = (double)(c->fill_ns - last_arrival) / 1e6;
                last_arrival = c->fill_ns;
                if (after >= 0)
                    after++;
            }
        }
        json_decref(m);
    }
    note("%s: answered in %.2f s, %d frames, largest dt %.1f ms, largest gap between frame "
         "events here %.1f ms",
         method, *seconds, frames, max_ms, max_arrival_ms);
    *max_gap_ms = max_ms > max_arrival_ms ? max_ms : max_arrival_ms;
    if (max_dt_ms)
        *max_dt_ms = max_ms;
    return true;
}

/* ---- the journal -------------------------------------------------------------------------- */

#define JOURNAL_N 20000 /* entity.set_props per run (about a second) */

/*
 * journal_rpc_requests_per_s_{always,everysec,no} and their ratio to a
 * daemon without a journal: four daemons at 60 Hz side by side (none,
 * always, everysec, no), one mover each, JOURNAL_N entity.set_props
 * pipelined RPC_WINDOW deep per run, the four runs of a round one after
 * the other (warm-up + RUNS rounds): the same machine state for the four
 * within a round.  A client of each reads its frame events: the largest
 * frame gap during the runs.
 */
static void journal_bench(bench *b)
{
    static const char *const names[4] = {"none", "always", "everysec", "no"};
    static const int f_rate[4] = {F_JRPC_NONE, F_JRPC_ALWAYS, F_JRPC_EVERYSEC, F_JRPC_NO};
    static const int f_ratio[4] = {-1, F_JRATIO_ALWAYS, F_JRATIO_EVERYSEC, F_JRATIO_NO};
    static const int f_gap[4] = {F_JGAP_NONE, F_JGAP_ALWAYS, F_JGAP_EVERYSEC, F_JGAP_NO};
    proc p[4];
    conn c[4];
    observer obs[4];
    pthread_t th[4];
    char jset[4][1200], fset[4][64], sset[4][320], jfile[4][280];
    int up = 0;
    note("journal: entity.set_props, %d pipelined per run, without a journal and with each "
         "fsync policy, side by side",
         JOURNAL_N);
    for (int k = 0; k < 4; k++) {
        snprintf(jfile[k], sizeof jfile[k], "%s/journal-%d", b->dir, k);
        snprintf(jset[k], sizeof jset[k], "journal.path=%s", k ? jfile[k] : "");
        snprintf(fset[k], sizeof fset[k], "journal.fsync=%s", k ? names[k] : "everysec");
        snprintf(sset[k], sizeof sset[k], "snapshot.path=%s/snapshot-%d.json", b->dir, k);
        track_file(jfile[k]);
        const char *extra[] = {"--set", jset[k], "--set", fset[k], "--set", sset[k], NULL};
        if (!daemon_up(b, &p[k], &c[k], extra))
            goto down;
        up++;
        json_t *r = conn_call(&c[k], "entity.spawn", "{\"class\":\"mover\"}",
                              now_ns() + MS(CALL_TIMEOUT_MS));
        if (!r)
            goto down;
        json_decref(r);
        obs[k] = (observer){.sock = p[k].sock};
        pthread_mutex_init(&obs[k].mu, NULL);
        pthread_create(&th[k], NULL, observe_main, &obs[k]);
    }
    double v[4][RUNS], gap[4] = {0};
    bool ok = true;
    for (int k = 0; k < 4 && ok; k++)
        ok = rpc_pipelined_lines(&c[k], set_props_line, JOURNAL_N, RPC_WINDOW,
                                 now_ns() + MS(RPC_TIMEOUT_MS)) >= 0;
    for (int k = 0; k < 4; k++)
        observer_take(&obs[k]);
    for (int i = 0; ok && i < RUNS; i++) {
        for (int k = 0; ok && k < 4; k++) {
            v[k][i] = rpc_pipelined_lines(&c[k], set_props_line, JOURNAL_N, RPC_WINDOW,
                                          now_ns() + MS(RPC_TIMEOUT_MS));
            ok = v[k][i] > 0;
            double g = observer_take(&obs[k]);
            if (g > gap[k])
                gap[k] = g;
        }
    }
    if (ok) {
        for (int k = 0; k < 4; k++) {
            double ratio[RUNS], copy[RUNS];
            char runs[256];
            size_t n = 0;
            for (int i = 0; i < RUNS; i++) {
                ratio[i] = v[k][i] / v[0][i];
                copy[i] = v[k][i];
                n += (size_t)snprintf(runs + n, sizeof runs - n, "%s%.0f", i ? " " : "", v[k][i]);
            }
            json_t *st = conn_call(&c[k], "engine.stats", NULL, now_ns() + MS(CALL_TIMEOUT_MS));
            json_t *js = json_object_get(st, "journal");
            if (js)
                note("journal %s: runs %s requests/s; largest frame gap %.1f ms; %.0f fsyncs, "
                     "longest %.2f ms, %.0f writes (group commits), longest %.2f ms",
                     names[k], runs, gap[k], jnum(js, "fsyncs", NULL),
                     jnum(js, "fsync_max_ms", NULL), jnum(js, "writes", NULL),
                     jnum(js, "write_max_ms", NULL));
            else
                note("journal %s: runs %s requests/s (the floor: no journal); largest frame "
                     "gap %.1f ms",
                     names[k], runs, gap[k]);
            json_decref(st);
            figure(f_rate[k], median(copy, RUNS));
            if (f_ratio[k] >= 0)
                figure(f_ratio[k], median(ratio, RUNS));
            figure(f_gap[k], gap[k]);
        }
    }
down:
    for (int k = 0; k < up; k++) {
        obs[k].stop = true;
        pthread_join(th[k], NULL);
        pthread_mutex_destroy(&obs[k].mu);
        daemon_down(&p[k], &c[k]);
        unlink(jfile[k]);
    }
}

/*
 * save_1m_max_frame_gap_ms: one daemon with 1M movers; subscribed to frame
 * events, send world.save and take the largest frame period until
 * SAVE_AFTER_FRAMES frames after its answer.  load_1m_max_frame_gap_ms:
 * then the same for a world.load of what it saved.
 */
static void save_gap(bench *b)
{
    proc p;
    conn c;
    char snap[PATH_MAX];
    snprintf(snap, sizeof snap, "snapshot.path=%.255s/save-1m.json", b->dir);
    /* max_dt 0: the frame events' dt is the whole frame period, unclamped. */
    const char *const extra[] = {"--set", snap, "--set", "engine.max_dt=0", NULL};
    note("world.save and world.load of 1M movers at 60 Hz: one daemon");
    if (!daemon_up(b, &p, &c, extra))
        return;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%.255s/save-1m.json", b->dir);
    track_file(path);
    char params[128];
    snprintf(params, sizeof params, "{\"class\":\"mover\",\"count\":%d}", SPAWN_BATCH);
    for (int i = 0; i < SPAWN_TOTAL / SPAWN_BATCH; i++) {
        json_t *r = conn_call(&c, "entity.spawn", params, now_ns() + MS(CALL_TIMEOUT_MS));
        if (!r)
            goto fail;
        json_decref(r);
    }
    sleep_ns(MS(SETTLE_MS));
    uint64_t deadline = now_ns() + MS(SAVE_TIMEOUT_MS);
    json_t *r = conn_call(&c, "events.subscribe", "{\"topics\":[\"frame\"]}", deadline);
    if (!r)
        goto fail;
    json_decref(r);
    double seconds = 0, gap = 0;
    double gaps[RUNS], dts[RUNS], copy[RUNS], forked[RUNS], worst = 0;
    for (int i = 0; i < RUNS; i++) {
        deadline = now_ns() + MS(SAVE_TIMEOUT_MS);
        if (!watched_call(&c, "world.save", NULL, deadline, &seconds, &r, &gaps[i], &dts[i]))
            goto fail;
        copy[i] = jnum(r, "copy_ms", NULL);
        forked[i] = jnum(r, "fork_ms", NULL);
        note("world.save %d of 1M movers: %.0f bytes in %.2f s, start: %.0f bytes of states "
             "copied in %.1f ms, fork %.1f ms",
             i + 1, jnum(r, "bytes", NULL), seconds, jnum(r, "copied_bytes", NULL), copy[i],
             forked[i]);
        json_decref(r);
        if (gaps[i] > worst)
            worst = gaps[i];
        sleep_ns(MS(SETTLE_MS / 2));
    }
    figure(F_SAVE_GAP, median(gaps, RUNS));
    figure(F_SAVE_GAP_WORST, worst);
    figure(F_SAVE_DT, median(dts, RUNS));
    if (!isnan(copy[0]) && !isnan(forked[0])) {
        figure(F_SAVE_COPY, median(copy, RUNS));
        figure(F_SAVE_FORK, median(forked, RUNS));
    }
    sleep_ns(MS(SETTLE_MS));
    deadline = now_ns() + MS(SAVE_TIMEOUT_MS);
    if (!watched_call(&c, "world.load", NULL, deadline, &seconds, &r, &gap, NULL))
        goto fail;
    note("world.load of 1M movers: %.0f entities", jnum(r, "entities", NULL));
    json_decref(r);
    figure(F_LOAD_GAP, gap);
    figure(F_LOAD_SECONDS, seconds);
    daemon_down(&p, &c);
    return;
fail:
    daemon_fail(&p, &c);
}

/* ---- main ------------------------------------------------------------------------------------ */

/* Fill b: the daemon binary ($BENCH_BUILD/tickd), the shipped config if
 * this runs from the repository root, a fresh temporary directory. */
static bool setup(bench *b)
{
    memset(b, 0, sizeof *b);
    const char *build = getenv("BENCH_BUILD");
    if (!build || !*build)
        build = "build/bench";
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s/tickd", build);
    if (!realpath(rel, b->tickd) || access(b->tickd, X_OK) != 0) {
        note("no daemon binary at %s (set BENCH_BUILD to the build directory)", rel);
        return false;
    }
    if (access("config/tickd.ini", R_OK) == 0 && realpath("config/tickd.ini", b->config))
        note("daemon: %s with %s", b->tickd, b->config);
    else
        note("daemon: %s with its built-in defaults", b->tickd);
    const char *tmp = getenv("TMPDIR");
    int n = snprintf(b->dir, sizeof b->dir, "%s/tickd-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (n < 0 || (size_t)n >= sizeof b->dir) {
        note("TMPDIR is too long for a socket path");
        return false;
    }
    if (!mkdtemp(b->dir)) {
        note("mkdtemp %s: %s", b->dir, strerror(errno));
        return false;
    }
    snprintf(clean_dir, sizeof clean_dir, "%s", b->dir);
    return true;
}

int main(int argc, char **argv)
{
    bench b;
    bool hostile_only = argc > 1 && !strcmp(argv[1], "--hostile");
    /* --snapshots: only the save and load figures (for working on them) */
    bool snapshots_only = argc > 1 && !strcmp(argv[1], "--snapshots");
    bool pacing_only = argc > 1 && !strcmp(argv[1], "--pacing");
    /* --spawn: only the 1M counters (spawn_1m_seconds and its frame gap) */
    bool spawn_only = argc > 1 && !strcmp(argv[1], "--spawn");
    /* --movers: only the 1M movers figures (threads) and the idle daemon's */
    bool movers_only = argc > 1 && !strcmp(argv[1], "--movers");
    /* --journal: only the journal's figures */
    bool journal_only = argc > 1 && !strcmp(argv[1], "--journal");
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    if (!setup(&b))
        return 1;
    uint64_t t0 = now_ns();

    if (hostile_only) {
        /* make hostile: the attacks as a test. */
        if (!hostile(&b))
            hostile_failed++;
        cleanup_files();
        rmdir(b.dir);
        printf("%d passed, %d failed\n", hostile_passed, hostile_failed);
        return hostile_failed ? 1 : 0;
    }
    if (spawn_only) {
        counters(&b);
        cleanup_files();
        rmdir(b.dir);
        return fig_ok[F_SPAWN] && fig_ok[F_SPAWN_GAP] ? 0 : 1;
    }
    if (journal_only) {
        journal_bench(&b);
        cleanup_files();
        rmdir(b.dir);
        return fig_ok[F_JRPC_ALWAYS] && fig_ok[F_JRPC_EVERYSEC] && fig_ok[F_JRPC_NO] ? 0 : 1;
    }
    if (snapshots_only) {
        save_gap(&b);
        cleanup_files();
        rmdir(b.dir);
        return fig_ok[F_SAVE_GAP] && fig_ok[F_LOAD_GAP] ? 0 : 1;
    }
    idle_daemon(&b);
    if (movers_only) {
        movers(&b);
        cleanup_files();
        rmdir(b.dir);
        return fig_ok[F_MSPT_P99_MOVERS] && fig_ok[F_MSPT_P99_MOVERS_1T] ? 0 : 1;
    }
    if (!pacing_only) {
        unbounded_daemon(&b);
        counters(&b);
        movers(&b);
        save_gap(&b);
        journal_bench(&b);
        if (hostile(&b)) {
            figure(F_HOSTILE_GAP, hostile_gap_max);
            figure(F_IDLE_GAP, hostile_gap_idle);
        }
    }
    steady_tps(&b);

    cleanup_files();
    if (rmdir(b.dir) != 0 && errno != ENOENT)
        note("could not remove %s: %s", b.dir, strerror(errno));

    int missing = 0;
    fprintf(stderr, "\n%-32s %14s  %s\n", "figure", "value", "unit");
    for (int f = 0; f < F_COUNT; f++) {
        char v[32];
        if (fig_ok[f])
            snprintf(v, sizeof v, figs[f].fmt, fig_val[f]);
        else
            snprintf(v, sizeof v, "not measured");
        fprintf(stderr, "%-32s %14s  %s\n", figs[f].key, v, figs[f].unit);
        if (!fig_ok[f] && f < F_REQUIRED && !pacing_only)
            missing++;
    }
    fprintf(stderr, "(%.0f s in all)\n", (double)(now_ns() - t0) / 1e9);
    if (missing)
        note("%d figure%s of BENCH.md could not be measured", missing, missing == 1 ? "" : "s");
    return missing ? 1 : 0;
}
