/*
 * bench_sim.c - the entity layer's real-work benchmarks of BENCH.md, in
 * process, one thread: the daemon's built-in `mover` class (x, y, z += v * dt)
 * through the entity layer (src/sim) on libtickd, against a floor measured in
 * the same run.
 *
 *   mover_ns_per_entity_1m            ns per entity per frame, 1M movers
 *                                     spawned in one request (the schedule
 *                                     built, frames timed)
 *   mover_floor_ns_per_entity_1m      the floor: a plain C loop over a
 *                                     contiguous array of the same 48-byte
 *                                     state doing the same x += vx * dt
 *   mover_floor_ratio                 the two, median of side-by-side ratios
 *   mover_shuffled_ns_per_entity_1m   2M movers and 2M counters spawned one
 *                                     by one, interleaved, then half of all
 *                                     destroyed at random: ns per frame per
 *                                     live mover (the ~1M counters tick too,
 *                                     batched), after 60 frames of settling
 *                                     (the stores close the holes then)
 *   mover_shuffled_floor_ratio        that ÷ the floor at the same count
 *   mover_unbatched_ns_per_entity_1m  1M movers spawned with
 *                                     tick.batch=false (one call each)
 *   parallel_speedup                  1M movers: a world ticking on one
 *                                     thread ÷ one on two ([engine]
 *                                     threads), frames alternating, median
 *                                     of the runs' ratios (wall time)
 *   parallel_floor_speedup            the floor of that: the plain loop on
 *                                     one thread ÷ the same loop split over
 *                                     two threads (split.h), alternating
 *                                     with the worlds' frames
 *   parallel_10k_ratio                10k movers: two threads ÷ one (a run
 *                                     too small to split: the cost of
 *                                     having threads), PAR10K_FRAMES frames
 *                                     per run
 *
 * Every figure is the median of RUNS runs after a warm-up; each run is
 * FRAMES frames of a fixed 1/60 s dt with an unpaced engine, alternating
 * frame by frame with the floor's.  Both sides of
 * a ratio run the same number of frames on the same initial states, so their
 * final positions must agree bit for bit: the program checks that the floor
 * did exactly the entity layer's work.
 *
 * Figures go to stdout as key=value lines; the account goes to stderr.
 *
 * The parallel figures are wall time (what a frame takes), not CPU time.
 *
 * What this file does not measure: the daemon (bench_daemon.c: RSS per mover,
 * MSPT at 60 Hz), the scheduler alone (bench_tick.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "split.h"
#include "stat.h"
#include "tickd/clock.h"
#include "tickd/tickd.h"

#define RUNS     7            /* timed runs per figure (>= 5) */
#define FRAMES   20           /* frames per run               */
#define FIXED_DT (1.0 / 60.0) /* s                            */
#define M1       1000000u
#define K10      10000u
#define PAR10K_FRAMES 400     /* frames per run of the 10k figure */

/* The mover's state as the class declares it (src/sim/classes.c). */
typedef struct mstate {
    double x, y, z, vx, vy, vz;
} mstate;

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD2Dull;
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_sim: %s: %s\n", what, why);
    exit(1);
}

/* Initial state of the i-th mover (both sides). */
static void mover_init(uint64_t i, mstate *m)
{
    m->x = (double)i;
    m->y = -(double)i;
    m->z = 0.5;
    m->vx = 1.0 + (double)(i % 7);
    m->vy = 0.25 * (double)(i % 5);
    m->vz = -2.0;
}

/* The floor: the mover's step over a contiguous array, as classes.c does it. */
__attribute__((noinline)) static void floor_frame(mstate *m, size_t n, float dt)
{
    for (size_t i = 0; i < n; i++) {
        m[i].x += m[i].vx * dt;
        m[i].y += m[i].vy * dt;
        m[i].z += m[i].vz * dt;
    }
}

static double time_floor(mstate *m, size_t n, unsigned frames)
{
    uint64_t t0 = tk_clock_now_ns();
    for (unsigned f = 0; f < frames; f++)
        floor_frame(m, n, (float)FIXED_DT);
    return (double)(tk_clock_now_ns() - t0);
}

typedef struct world {
    tk_engine_t *e;
    tks_sim *s;
} world;

static world world_new_threads(unsigned threads)
{
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    d.tick_rate = 0;
    d.fixed_dt = FIXED_DT;
    d.threads = threads;
    world w;
    if (tk_engine_new(&d, &w.e) != 0)
        die("tk_engine_new", "failed");
    tks_config cfg = {0};
    w.s = tks_new(w.e, &cfg);
    return w;
}

static world world_new(void) { return world_new_threads(1); }

static void world_free(world *w)
{
    tks_free(w->s);
    tk_engine_free(w->e);
}

static double time_frames(world *w, unsigned frames)
{
    uint64_t t0 = tk_clock_now_ns();
    for (unsigned f = 0; f < frames; f++)
        tk_engine_frame(w->e);
    return (double)(tk_clock_now_ns() - t0);
}

/* Spawn `count` entities of `cls` (movers: with mover_init(i0 + k) states). */
static tks_id spawn(world *w, const char *cls, uint64_t count, uint64_t i0, bool batch)
{
    tks_spawn_req r;
    tks_spawn_req_init(&r);
    r.cls = cls;
    r.count = 1;
    r.tick.batch = batch;
    tks_prop_kv kv[6];
    static const char *const keys[6] = {"x", "y", "z", "vx", "vy", "vz"};
    bool mover = strcmp(cls, "mover") == 0;
    tks_id first = 0;
    char err[TKS_ERR_MAX];
    for (uint64_t k = 0; k < count; k++) {
        if (mover) {
            mstate m;
            mover_init(i0 + k, &m);
            const double v[6] = {m.x, m.y, m.z, m.vx, m.vy, m.vz};
            for (int j = 0; j < 6; j++)
                kv[j] = (tks_prop_kv){keys[j], {.type = TKS_V_NUMBER, .num = v[j]}};
            r.props = kv;
            r.n_props = 6;
        } else if (k > 0) {
            /* Props-free entities can come in one request. */
            break;
        } else {
            r.count = count;
        }
        tks_id id;
        if (tks_spawn(w->s, &r, &id, err) != 0)
            die("tks_spawn", err);
        if (k == 0)
            first = id;
    }
    return first;
}

/* The x of a mover. */
typedef struct xread {
    double x;
} xread;

static void read_x(void *ud, const tks_prop_desc *d, const tks_value *v)
{
    if (strcmp(d->name, "x") == 0)
        ((xread *)ud)->x = v->num;
}

static double mover_x(world *w, tks_id id)
{
    const tks_entity *e = tks_entity_get(w->s, id);
    if (!e)
        die("mover_x", "no such entity");
    xread r = {0};
    tks_entity_props(w->s, e, -1, read_x, &r);
    return r.x;
}

/* Check the floor did the entity layer's work: mover `id` (initial state
 * `i`) against floor element `j`. */
static void check_same(world *w, tks_id id, const mstate *floor, size_t j)
{
    double x = mover_x(w, id);
    if (x != floor[j].x) {
        fprintf(stderr, "bench_sim: mover %llu has x %.17g, the floor %.17g\n",
                (unsigned long long)id, x, floor[j].x);
        exit(1);
    }
}

/* Time `w` against the floor over `n` states, side by side: a run is FRAMES
 * frames of each, alternating one and one (the two sides of a pair see the
 * same load on a shared machine).  *ns and *floor_ns per entity per frame (n
 * entities, medians of the runs); returns the median of the runs' ratios. */
static double side_by_side(world *w, mstate *fl, size_t n, double *ns, double *floor_ns)
{
    time_frames(w, 3);
    time_floor(fl, n, 3);
    double vw[RUNS], vf[RUNS], vr[RUNS];
    for (int r = 0; r < RUNS; r++) {
        vw[r] = vf[r] = 0;
        for (int f = 0; f < FRAMES; f++) {
            vw[r] += time_frames(w, 1);
            vf[r] += time_floor(fl, n, 1);
        }
        vr[r] = vw[r] / vf[r];
    }
    *ns = bench_median(vw, RUNS) / ((double)FRAMES * (double)n);
    *floor_ns = bench_median(vf, RUNS) / ((double)FRAMES * (double)n);
    return bench_median(vr, RUNS);
}

static mstate *floor_new(size_t n)
{
    mstate *m = malloc(n * sizeof *m);
    if (!m)
        die("malloc", "out of memory");
    for (size_t i = 0; i < n; i++)
        mover_init(i, &m[i]);
    return m;
}

/* mover_ns_per_entity_1m, mover_floor_ratio; unbatched with batch=false. */
static void bench_movers(bool batch)
{
    world w = world_new();
    tks_id first = spawn(&w, "mover", M1, 0, batch);
    mstate *fl = floor_new(M1);
    double ns, fns;
    double ratio = side_by_side(&w, fl, M1, &ns, &fns);
    check_same(&w, first, fl, 0);
    check_same(&w, first + M1 - 1, fl, M1 - 1);
    check_same(&w, first + M1 / 2, fl, M1 / 2);
    if (batch) {
        fprintf(stderr, "mover_ns_per_entity_1m: %.3f ns (floor %.3f ns, ratio %.3f)\n", ns, fns,
                ratio);
        printf("mover_ns_per_entity_1m=%.3f\n", ns);
        printf("mover_floor_ns_per_entity_1m=%.3f\n", fns);
        printf("mover_floor_ratio=%.3f\n", ratio);
    } else {
        fprintf(stderr, "mover_unbatched_ns_per_entity_1m: %.3f ns (floor %.3f ns, ratio %.3f)\n",
                ns, fns, ratio);
        printf("mover_unbatched_ns_per_entity_1m=%.3f\n", ns);
    }
    fflush(stdout);
    free(fl);
    world_free(&w);
}

/* mover_shuffled_ns_per_entity_1m. */
static void bench_shuffled(void)
{
    world w = world_new();
    const uint64_t n = 2 * (uint64_t)M1;
    uint64_t t0 = tk_clock_now_ns();
    /* Mover k gets id 2k + 1 (and state k), counter k id 2k + 2. */
    for (uint64_t k = 0; k < n; k++) {
        spawn(&w, "mover", 1, k, true);
        spawn(&w, "counter", 1, 0, true);
    }
    double spawn_s = (double)(tk_clock_now_ns() - t0) / 1e9;
    /* Half of all entities destroyed, chosen at random. */
    uint64_t total = 2 * n;
    tks_id *ids = malloc(total * sizeof *ids);
    for (uint64_t i = 0; i < total; i++)
        ids[i] = i + 1;
    uint64_t seed = 0x5eed0018;
    for (uint64_t i = total - 1; i > 0; i--) {
        uint64_t j = rng_next(&seed) % (i + 1);
        tks_id t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
    }
    size_t destroyed;
    char err[TKS_ERR_MAX];
    if (tks_destroy(w.s, ids, total / 2, &destroyed, err) != 0)
        die("tks_destroy", err);
    /* The survivors' movers, in id order; the floor gets their states. */
    uint8_t *alive = calloc(total + 1, 1);
    for (uint64_t i = total / 2; i < total; i++)
        alive[ids[i]] = 1;
    size_t movers = 0;
    for (uint64_t k = 0; k < n; k++)
        movers += alive[2 * k + 1];
    mstate *fl = malloc(movers * sizeof *fl);
    tks_id *mid = malloc(movers * sizeof *mid);
    size_t j = 0;
    for (uint64_t k = 0; k < n; k++) {
        if (alive[2 * k + 1]) {
            mover_init(k, &fl[j]);
            mid[j++] = 2 * k + 1;
        }
    }
    /* Settling: the stores close their holes at the end of frames, a budget
     * of moves per frame (the floor runs the frames too, to stay in step). */
    time_frames(&w, 60);
    time_floor(fl, movers, 60);
    double ns, fns;
    double ratio = side_by_side(&w, fl, movers, &ns, &fns);
    check_same(&w, mid[0], fl, 0);
    check_same(&w, mid[movers / 2], fl, movers / 2);
    check_same(&w, mid[movers - 1], fl, movers - 1);
    fprintf(stderr,
            "mover_shuffled_ns_per_entity_1m: %.3f ns per live mover (%zu movers and %llu "
            "counters left of 2M + 2M spawned interleaved in %.1f s; floor %.3f ns, ratio "
            "%.3f)\n",
            ns, movers, (unsigned long long)(total / 2 - movers), spawn_s, fns, ratio);
    printf("mover_shuffled_ns_per_entity_1m=%.3f\n", ns);
    printf("mover_shuffled_floor_ratio=%.3f\n", ratio);
    fflush(stdout);
    free(alive);
    free(fl);
    free(mid);
    free(ids);
    world_free(&w);
}

/* The floor of parallel_speedup: the mover's step over [lo, hi). */
static void floor_part(void *ud, size_t lo, size_t hi)
{
    mstate *m = ud;
    floor_frame(m + lo, hi - lo, (float)FIXED_DT);
}

static double time_split(bench_split *sp, mstate *m, size_t n)
{
    uint64_t t0 = tk_clock_now_ns();
    bench_split_run(sp, floor_part, m, n);
    return (double)(tk_clock_now_ns() - t0);
}

/* parallel_speedup, parallel_floor_speedup: 1M movers in a world on one
 * thread and one on two, and the plain loop on one and two threads, frame
 * by frame in turn. */
static void bench_parallel(void)
{
    world w1 = world_new_threads(1), w2 = world_new_threads(2);
    tks_id a = spawn(&w1, "mover", M1, 0, true), b = spawn(&w2, "mover", M1, 0, true);
    mstate *f1 = floor_new(M1), *f2 = floor_new(M1);
    bench_split *sp = bench_split_new(2);
    for (int f = 0; f < 3; f++) {
        time_frames(&w1, 1);
        time_frames(&w2, 1);
        time_floor(f1, M1, 1);
        time_split(sp, f2, M1);
    }
    double r[RUNS], fr[RUNS], t1[RUNS], t2[RUNS], g1[RUNS], g2[RUNS];
    for (int k = 0; k < RUNS; k++) {
        t1[k] = t2[k] = g1[k] = g2[k] = 0;
        for (int f = 0; f < FRAMES; f++) {
            t1[k] += time_frames(&w1, 1);
            t2[k] += time_frames(&w2, 1);
            g1[k] += time_floor(f1, M1, 1);
            g2[k] += time_split(sp, f2, M1);
        }
        r[k] = t1[k] / t2[k];
        fr[k] = g1[k] / g2[k];
    }
    /* Both worlds did the same work as the loops. */
    for (size_t j = 0; j < M1; j += M1 / 2 - 1) {
        check_same(&w1, a + j, f1, j);
        check_same(&w2, b + j, f2, j);
    }
    tk_world_frame_stats fs;
    tk_world_get_frame_stats(tk_engine_world(w2.e), &fs);
    double speed = bench_median(r, RUNS), fspeed = bench_median(fr, RUNS);
    double ms1 = bench_median(t1, RUNS) / FRAMES / 1e6, ms2 = bench_median(t2, RUNS) / FRAMES / 1e6;
    fprintf(stderr,
            "parallel_speedup: %.3f (1M movers: %.3f ms a frame on one thread, %.3f on two; "
            "last frame: %llu of %llu ticks on the worker, %u runs split); the plain loop split "
            "the same way: %.3f (%.3f ms, %.3f ms)\n",
            speed, ms1, ms2, (unsigned long long)fs.worker_ticks,
            (unsigned long long)fs.ticks_run, fs.sections_split, fspeed,
            bench_median(g1, RUNS) / FRAMES / 1e6, bench_median(g2, RUNS) / FRAMES / 1e6);
    printf("parallel_speedup=%.3f\n", speed);
    printf("parallel_floor_speedup=%.3f\n", fspeed);
    printf("parallel_1m_ms_1t=%.3f\n", ms1);
    printf("parallel_1m_ms_2t=%.3f\n", ms2);
    fflush(stdout);
    bench_split_free(sp);
    free(f1);
    free(f2);
    world_free(&w1);
    world_free(&w2);
}

/* parallel_10k_ratio: 10k movers, two threads ÷ one, frame by frame. */
static void bench_parallel_10k(void)
{
    world w1 = world_new_threads(1), w2 = world_new_threads(2);
    spawn(&w1, "mover", K10, 0, true);
    spawn(&w2, "mover", K10, 0, true);
    time_frames(&w1, 20);
    time_frames(&w2, 20);
    double r[RUNS], t1[RUNS], t2[RUNS];
    for (int k = 0; k < RUNS; k++) {
        t1[k] = t2[k] = 0;
        for (int f = 0; f < PAR10K_FRAMES; f++) {
            t1[k] += time_frames(&w1, 1);
            t2[k] += time_frames(&w2, 1);
        }
        r[k] = t2[k] / t1[k];
    }
    tk_world_frame_stats fs;
    tk_world_get_frame_stats(tk_engine_world(w2.e), &fs);
    double ratio = bench_median(r, RUNS);
    fprintf(stderr,
            "parallel_10k_ratio: %.3f (10k movers: %.2f us a frame on one thread, %.2f on two; "
            "%u of %u runs split)\n",
            ratio, bench_median(t1, RUNS) / PAR10K_FRAMES / 1e3,
            bench_median(t2, RUNS) / PAR10K_FRAMES / 1e3, fs.sections_split, fs.sections);
    printf("parallel_10k_ratio=%.3f\n", ratio);
    fflush(stdout);
    world_free(&w1);
    world_free(&w2);
}

int main(int argc, char **argv)
{
    bench_parallel();
    bench_parallel_10k();
    if (argc > 1 && !strcmp(argv[1], "--parallel"))
        return 0; /* only the parallel figures (for working on them) */
    bench_movers(true);
    bench_movers(false);
    bench_shuffled();
    return 0;
}
