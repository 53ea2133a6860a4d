/*
 * bench_timer.c - the timer benchmarks of BENCH.md: tickd's timer manager
 * against libevent's own timers, side by side in one process and run.
 *
 *   timer_ns_per_op                  tickd, ns per operation (set, clear or
 *                                    fire) with 1M live timers
 *   timer_libevent_ns_per_op         libevent, the same workload
 *   timer_ratio_vs_libevent          libevent time / tickd time
 *   timer_ns_per_op_256              tickd with only 256 distinct durations
 *   timer_libevent_common_ns_per_op  libevent with those 256 durations as
 *                                    common timeouts (its best case)
 *   timer_ratio_vs_libevent_common   libevent common / tickd, same workload
 *
 * The workload (identical on both sides)
 * --------------------------------------
 * 1,000,000 logical timers, each always armed once (one-shot).  Durations are
 * log-uniform over 10 ms .. 60 s in whole microseconds (libevent's
 * resolution), drawn from one 64K-entry table with the same RNG seed on both
 * sides.  Time advances in frames of exactly 16,667 us (60 Hz).  Per frame:
 *   - 2,000 random logical timers are cleared and set again with a fresh
 *     duration (2 operations each);
 *   - time advances one frame; every timer that is due fires, and its
 *     callback counts the call and sets the timer again with a fresh duration
 *     (2 operations each: the fire and the set); about 4,800 fire per frame
 *     (the live population is weighted toward long durations, so the short
 *     ones come round often).
 * So the live count stays at exactly 1M and about 13,600 operations run per
 * frame.  ns/op = wall time of the frames / operations actually performed.
 *
 * Fairness
 * --------
 *  - Same number of live timers, same operation mix, same duration
 *    distribution and RNG sequence, same dt, same trivial callback work
 *    (a counter, one RNG step, one set).
 *  - tickd: an engine with a fixed dt, unpaced; the clears and sets happen
 *    between frames through the public API, and each frame is a whole
 *    tk_engine_frame (empty tick groups and tickables included: that cost
 *    counts against tickd).  Records come from the slab's free list, so
 *    nothing is allocated in steady state.
 *  - libevent: one event_base with no I/O; the 1M struct events are allocated
 *    once (event_assign), and re-armed with evtimer_add, cleared with
 *    evtimer_del, fired by event_base_loop(EVLOOP_NONBLOCK) once per frame.
 *    libevent reads CLOCK_MONOTONIC itself, so this binary interposes
 *    clock_gettime: while libevent runs, the clock is a monotonic base that
 *    the benchmark advances by exactly dt per frame (no sleeping, the same
 *    timeline as tickd).  Reading that fake clock is cheaper than a real
 *    clock read, which slightly favours libevent.  Each loop call makes an
 *    epoll_wait(0) system call (two per frame), inherent to firing libevent
 *    timers through its loop and negligible next to ~13,600 operations.
 *  - libevent keeps timers in a binary min-heap (O(log n) add, delete and
 *    pop, with cache misses at 1M entries).  Its "common timeout" option
 *    (event_base_init_common_timeout) keeps timers of one duration in a FIFO
 *    queue with only the queue's head in the heap, making add/del O(1); it is
 *    limited to 256 durations per base, so it does not apply to the main
 *    workload.  The second pair of figures measures it on its own terms:
 *    durations quantized to 256 log-spaced values, libevent using one common
 *    timeout per value, tickd the same 256 durations.
 *  - Semantics differ slightly (libevent fires at timeout <= now, tickd at
 *    now > expiry after Unreal; tickd fires due timers in (expiry, set order)
 *    order); fire counts per side are reported.
 *  - Each side gets a warm-up of 600 frames after the fill, then 7 timed runs
 *    of 120 frames; the two sides of each pair run back to back, in
 *    alternating order, so that machine noise and drift hit both; figures
 *    are medians, and each ratio is the median of the ratios of the pairs.
 *
 * Output: key=value lines on stdout, nothing else; the account on stderr.
 */
#include <dlfcn.h>
#include <event2/event.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stat.h"
#include "tickd/tickd.h"

#define N_TIMERS 1000000u
#define CLEARS_PER_FRAME 2000u
#define DT_US 16667            /* us per frame (60 Hz)                  */
#define WARM_FRAMES 600        /* frames before timing                  */
#define RUN_FRAMES 120         /* frames per timed run                  */
#define RUNS 7                 /* timed runs per side (>= 5)            */
#define MIN_US 10000.0         /* shortest duration, us                 */
#define MAX_US 60000000.0      /* longest duration, us                  */
#define TABLE_BITS 16          /* duration table: 64K entries           */
#define COMMON_BITS 8          /* 256 durations (libevent's maximum)    */

/* ---- the clock libevent sees ----------------------------------------- */

static bool g_fake;          /* libevent is running: serve g_fake_ns    */
static int64_t g_fake_ns = INT64_C(1000) * 1000000000; /* ns, != 0      */
static int (*g_real_clock)(clockid_t, struct timespec *);

static void resolve_real_clock(void)
{
    if (!g_real_clock) {
        g_real_clock = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT,
                                                                   "clock_gettime");
        if (!g_real_clock) {
            fprintf(stderr, "bench_timer: cannot find clock_gettime\n");
            exit(1);
        }
    }
}

/* Interposes libc's clock_gettime for libevent (and everything else in this
 * process): the fake monotonic base while g_fake is set, else the real one. */
int clock_gettime(clockid_t id, struct timespec *ts)
{
    if (g_fake) {
        ts->tv_sec = (time_t)(g_fake_ns / 1000000000);
        ts->tv_nsec = (long)(g_fake_ns % 1000000000);
        return 0;
    }
    resolve_real_clock();
    return g_real_clock(id, ts);
}

static uint64_t real_now_ns(void)
{
    struct timespec ts;
    resolve_real_clock();
    g_real_clock(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- shared workload --------------------------------------------------- */

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Durations in us: log-uniform over [MIN_US, MAX_US] in 2^bits steps. */
static uint32_t *duration_table(unsigned bits)
{
    size_t n = (size_t)1 << bits;
    uint32_t *t = malloc(n * sizeof *t);
    if (!t)
        abort();
    for (size_t i = 0; i < n; i++) {
        double f = n > 1 ? (double)i / (double)(n - 1) : 0;
        t[i] = (uint32_t)llround(MIN_US * exp(f * log(MAX_US / MIN_US)));
    }
    return t;
}

typedef struct workload {
    const uint32_t *us;      /* duration table, us                      */
    unsigned mask;           /* table size - 1                          */
} workload;

/* ---- tickd side -------------------------------------------------------- */

typedef struct tk_side {
    tk_engine_t *e;
    tk_world_t *w;
    tk_timer_handle *h;      /* handle of each logical timer            */
    double *rate;            /* duration table in s                     */
    unsigned mask;
    uint64_t rng;
    uint64_t fired;          /* callbacks run                           */
} tk_side;

static tk_side TK;

static void tk_fire(void *ud, tk_timer_handle h, tk_world_t *w);

static void tk_arm(size_t i)
{
    tk_timer_desc d;
    memset(&d, 0, sizeof d);
    d.rate = TK.rate[rnd(&TK.rng) & TK.mask];
    d.first_delay = -1;
    d.fn = tk_fire;
    d.ud = (void *)(uintptr_t)i;
    if (tk_timer_set(TK.w, &d, &TK.h[i]) != 0) {
        fprintf(stderr, "bench_timer: tk_timer_set failed\n");
        exit(1);
    }
}

static void tk_fire(void *ud, tk_timer_handle h, tk_world_t *w)
{
    TK.fired++;
    tk_arm((size_t)(uintptr_t)ud);
}

static void tk_open(const workload *wl)
{
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    d.tick_rate = 0;
    d.fixed_dt = DT_US / 1e6;
    if (tk_engine_new(&d, &TK.e) != 0)
        abort();
    TK.w = tk_engine_world(TK.e);
    TK.h = malloc(N_TIMERS * sizeof *TK.h);
    TK.rate = malloc(((size_t)wl->mask + 1) * sizeof *TK.rate);
    if (!TK.h || !TK.rate)
        abort();
    for (size_t i = 0; i <= wl->mask; i++)
        TK.rate[i] = wl->us[i] / 1e6;
    TK.mask = wl->mask;
    TK.rng = 42;
    TK.fired = 0;
    for (size_t i = 0; i < N_TIMERS; i++)
        tk_arm(i);
}

/* Run `frames` frames; returns the operations performed. */
static uint64_t tk_frames(int frames)
{
    uint64_t fired0 = TK.fired, ops = 0;
    for (int f = 0; f < frames; f++) {
        for (unsigned k = 0; k < CLEARS_PER_FRAME; k++) {
            size_t i = (size_t)(rnd(&TK.rng) % N_TIMERS);
            if (tk_timer_clear(TK.w, TK.h[i]) != 0) {
                fprintf(stderr, "bench_timer: tk_timer_clear failed\n");
                exit(1);
            }
            tk_arm(i);
        }
        tk_engine_frame(TK.e);
        ops += 2 * CLEARS_PER_FRAME;
    }
    return ops + 2 * (TK.fired - fired0);
}

static void tk_close(void)
{
    tk_timer_counts c;
    tk_timer_get_counts(TK.w, &c);
    if (c.active + c.pending != N_TIMERS) {
        fprintf(stderr, "bench_timer: tickd lost timers (%zu live)\n",
                c.active + c.pending);
        exit(1);
    }
    tk_engine_free(TK.e);
    free(TK.h);
    free(TK.rate);
    memset(&TK, 0, sizeof TK);
}

/* ---- libevent side ----------------------------------------------------- */

typedef struct ev_side {
    struct event_base *base;
    unsigned char *events;   /* N_TIMERS struct events, esz bytes each */
    size_t esz;
    struct timeval *tv;      /* duration table (or common timeouts)    */
    unsigned mask;
    uint64_t rng;
    uint64_t fired;
} ev_side;

static ev_side EV;

static inline struct event *ev_at(size_t i)
{
    return (struct event *)(EV.events + i * EV.esz);
}

static void ev_arm(size_t i)
{
    if (evtimer_add(ev_at(i), &EV.tv[rnd(&EV.rng) & EV.mask]) != 0) {
        fprintf(stderr, "bench_timer: evtimer_add failed\n");
        exit(1);
    }
}

static void ev_fire(evutil_socket_t fd, short what, void *arg)
{
    EV.fired++;
    ev_arm((size_t)(uintptr_t)arg);
}

static void ev_open(const workload *wl, bool common)
{
    g_fake = true;
    struct event_config *cfg = event_config_new();
    EV.base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    if (!EV.base)
        abort();
    EV.esz = event_get_struct_event_size();
    EV.events = malloc(N_TIMERS * EV.esz);
    EV.tv = malloc(((size_t)wl->mask + 1) * sizeof *EV.tv);
    if (!EV.events || !EV.tv)
        abort();
    for (size_t i = 0; i <= wl->mask; i++) {
        struct timeval tv = {(time_t)(wl->us[i] / 1000000),
                             (suseconds_t)(wl->us[i] % 1000000)};
        if (common) {
            const struct timeval *ct = event_base_init_common_timeout(EV.base, &tv);
            if (!ct)
                abort();
            tv = *ct;
        }
        EV.tv[i] = tv;
    }
    EV.mask = wl->mask;
    EV.rng = 42;
    EV.fired = 0;
    for (size_t i = 0; i < N_TIMERS; i++) {
        if (event_assign(ev_at(i), EV.base, -1, 0, ev_fire, (void *)(uintptr_t)i) != 0)
            abort();
        ev_arm(i);
    }
    g_fake = false;
}

static uint64_t ev_frames(int frames)
{
    uint64_t fired0 = EV.fired, ops = 0;
    g_fake = true;
    for (int f = 0; f < frames; f++) {
        for (unsigned k = 0; k < CLEARS_PER_FRAME; k++) {
            size_t i = (size_t)(rnd(&EV.rng) % N_TIMERS);
            if (evtimer_del(ev_at(i)) != 0) {
                fprintf(stderr, "bench_timer: evtimer_del failed\n");
                exit(1);
            }
            ev_arm(i);
        }
        g_fake_ns += (int64_t)DT_US * 1000;
        event_base_loop(EV.base, EVLOOP_NONBLOCK);
        ops += 2 * CLEARS_PER_FRAME;
    }
    g_fake = false;
    return ops + 2 * (EV.fired - fired0);
}

static void ev_close(void)
{
    g_fake = true;
    for (size_t i = 0; i < N_TIMERS; i++)
        if (!evtimer_pending(ev_at(i), NULL)) {
            fprintf(stderr, "bench_timer: libevent lost timer %zu\n", i);
            exit(1);
        }
    for (size_t i = 0; i < N_TIMERS; i++)
        evtimer_del(ev_at(i));
    event_base_free(EV.base);
    g_fake = false;
    free(EV.events);
    free(EV.tv);
    memset(&EV, 0, sizeof EV);
}

/* ---- measurement ------------------------------------------------------- */


typedef struct result {
    double tk_ns, ev_ns, ratio;   /* medians: ns/op, ns/op, ev/tk  */
} result;

/*
 * One comparison: fill both sides, warm them up, then RUNS timed runs of
 * RUN_FRAMES frames each, alternating sides.
 */
static result compare(const char *name, const workload *wl, bool common)
{
    double tk_ns[RUNS], ev_ns[RUNS], ratio[RUNS];
    uint64_t t0 = real_now_ns();
    tk_open(wl);
    uint64_t t1 = real_now_ns();
    ev_open(wl, common);
    uint64_t t2 = real_now_ns();
    fprintf(stderr, "%s: fill of %u timers: tickd %.0f ns/set, libevent%s %.0f ns/set\n",
            name, N_TIMERS, (double)(t1 - t0) / N_TIMERS,
            common ? " (common timeouts)" : "", (double)(t2 - t1) / N_TIMERS);

    tk_frames(WARM_FRAMES);
    ev_frames(WARM_FRAMES);
    uint64_t tk_fired = 0, ev_fired = 0;
    for (int r = 0; r < RUNS; r++) {
        uint64_t ops = 0, eops = 0;
        /* the two sides of a pair run back to back, in alternating order */
        for (int side = 0; side < 2; side++) {
            if ((side == 0) == (r % 2 == 0)) {
                uint64_t f0 = TK.fired, a = real_now_ns();
                ops = tk_frames(RUN_FRAMES);
                tk_ns[r] = (double)(real_now_ns() - a) / (double)ops;
                tk_fired += TK.fired - f0;
            } else {
                uint64_t f0 = EV.fired, a = real_now_ns();
                eops = ev_frames(RUN_FRAMES);
                ev_ns[r] = (double)(real_now_ns() - a) / (double)eops;
                ev_fired += EV.fired - f0;
            }
        }
        ratio[r] = ev_ns[r] / tk_ns[r];
        fprintf(stderr, "%s: run %d: tickd %.1f ns/op (%llu ops), libevent %.1f ns/op "
                        "(%llu ops), ratio %.2f\n",
                name, r + 1, tk_ns[r], (unsigned long long)ops, ev_ns[r],
                (unsigned long long)eops, ratio[r]);
    }
    fprintf(stderr, "%s: fires per frame: tickd %.0f, libevent %.0f; clears per frame %u\n",
            name, (double)tk_fired / (RUNS * RUN_FRAMES),
            (double)ev_fired / (RUNS * RUN_FRAMES), CLEARS_PER_FRAME);
    tk_close();
    ev_close();
    result res = {bench_median(tk_ns, RUNS), bench_median(ev_ns, RUNS), bench_median(ratio, RUNS)};
    fprintf(stderr, "%s: median tickd %.1f ns/op, libevent %.1f ns/op, ratio %.2f\n",
            name, res.tk_ns, res.ev_ns, res.ratio);
    return res;
}

int main(void)
{
    fprintf(stderr, "bench_timer: %u live timers, durations log-uniform %.0f ms .. %.0f s, "
                    "dt %d us, %u clears per frame, %d runs x %d frames after %d\n",
            N_TIMERS, MIN_US / 1000, MAX_US / 1e6, DT_US, CLEARS_PER_FRAME, RUNS,
            RUN_FRAMES, WARM_FRAMES);
    tk_log_set_level(TK_LOG_WARN);

    uint32_t *full = duration_table(TABLE_BITS);
    workload wl = {full, (1u << TABLE_BITS) - 1};
    result a = compare("random durations", &wl, false);

    uint32_t *quant = duration_table(COMMON_BITS);
    workload wq = {quant, (1u << COMMON_BITS) - 1};
    result b = compare("256 durations", &wq, true);
    free(full);
    free(quant);

    printf("timer_ns_per_op=%.2f\n", a.tk_ns);
    printf("timer_libevent_ns_per_op=%.2f\n", a.ev_ns);
    printf("timer_ratio_vs_libevent=%.2f\n", a.ratio);
    printf("timer_ns_per_op_256=%.2f\n", b.tk_ns);
    printf("timer_libevent_common_ns_per_op=%.2f\n", b.ev_ns);
    printf("timer_ratio_vs_libevent_common=%.2f\n", b.ratio);
    return 0;
}
