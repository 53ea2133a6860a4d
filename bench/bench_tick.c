/*
 * bench_tick.c - the tick scheduler benchmarks of BENCH.md.
 *
 *   tick_ns_per_function_10k / _100k / _1m   every-frame ticks, one class
 *   ue_baseline_ratio                        Unreal's algorithm (ue_model.c)
 *                                            / libtickd, same workload (and
 *                                            both sides' ns per function:
 *                                            ue_baseline_model_ns_per_function,
 *                                            ue_baseline_tickd_ns_per_function)
 *   interval_ns_per_idle_function_1m         interval functions not due
 *   batch_speedup                            8 interleaved classes, a
 *                                            class without a batch form /
 *                                            the same classes batched
 *   unbatched_floor_ratio                    a class without a batch form /
 *                                            an indirect-call loop over the
 *                                            same objects (floor)
 *   batch_false_floor_ratio                  a batchable class registered
 *                                            with batch=false / the same floor
 *   unbatched_slow_tick_floor_ratio          the class without a batch form
 *                                            with slow-tick detection on (the
 *                                            daemon's shipped 5 ms) / floor
 *   interval_due_1m_ms, interval_due_ratio   the frame in which 1M interval
 *                                            functions come due together, and
 *                                            / a frame of 1M every-frame
 *                                            functions of the same class
 *   remove_2m_max_start_frame_ms             the longest StartFrame while
 *                                            the 2M functions of a level are
 *                                            unregistered in slices and the
 *                                            level removed (lane compaction)
 *   bytes_per_tick_function                  RSS growth per function
 *
 * Everything goes through libtickd's public API: an engine with tick rate 0
 * (unpaced) and a fixed dt of 1/60 s, frames run with tk_engine_frame.  Only
 * the frames are timed (CLOCK_MONOTONIC); each figure is the median of at
 * least 5 runs after a warm-up, and each ratio is the median of ratios of
 * runs taken side by side.  Figures go to stdout as key=value lines and
 * nothing else; the human-readable account goes to stderr.
 *
 * What this file does not measure: timers, the daemon, pacing (other bench
 * files).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stat.h"
#include "tickd/clock.h"
#include "tickd/tickd.h"
#include "ue_model.h"

#define RUNS 7                    /* timed runs per figure (>= 5)            */
#define FIXED_DT (1.0 / 60.0)     /* s                                       */
#define M1 1000000u


/* xorshift64*: the benchmark's workloads are seeded, so both sides of a
 * ratio get the same one. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD2Dull;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_tick: %s: %s\n", what, tk_strerror(rc));
    exit(1);
}

/* ---- the ticked classes ------------------------------------------------- */

/* An empty counter-like target: a tick counts. */
typedef struct counter {
    uint64_t n;
} counter;

static void counter_tick(void *target, float dt, tk_tick_ctx *ctx)
{
    (void)dt;
    (void)ctx;
    ((counter *)target)->n++;
}

static void counter_batch(void *const *targets, size_t n, float dt, tk_tick_ctx *ctx)
{
    (void)dt;
    (void)ctx;
    for (size_t i = 0; i < n; i++)
        ((counter *)targets[i])->n++;
}

/* The same tick for the model (its callback signature). */
static void counter_tick_ue(void *target, float dt, void *ctx)
{
    (void)dt;
    (void)ctx;
    ((counter *)target)->n++;
}

/* Eight classes with the same small real work, as eight distinct functions
 * (distinct code, as distinct entity classes would be). */
typedef struct body {
    float x;
    float pad;
} body;

#define BODY_CLASS(k)                                                          \
    static void body_tick_##k(void *target, float dt, tk_tick_ctx *ctx)        \
    {                                                                          \
        (void)ctx;                                                             \
        ((body *)target)->x += dt * (float)(k + 1);                            \
    }                                                                          \
    static void body_batch_##k(void *const *targets, size_t n, float dt,       \
                               tk_tick_ctx *ctx)                               \
    {                                                                          \
        (void)ctx;                                                             \
        for (size_t i = 0; i < n; i++)                                         \
            ((body *)targets[i])->x += dt * (float)(k + 1);                    \
    }
BODY_CLASS(0)
BODY_CLASS(1)
BODY_CLASS(2)
BODY_CLASS(3)
BODY_CLASS(4)
BODY_CLASS(5)
BODY_CLASS(6)
BODY_CLASS(7)

static const tk_tick_fn body_fns[8] = {body_tick_0, body_tick_1, body_tick_2, body_tick_3,
                                       body_tick_4, body_tick_5, body_tick_6, body_tick_7};
static const tk_tick_batch_fn body_batches[8] = {body_batch_0, body_batch_1, body_batch_2,
                                                 body_batch_3, body_batch_4, body_batch_5,
                                                 body_batch_6, body_batch_7};

/* A mover: p += v * dt, one call per object (the real work of the
 * unbatched figures). */
typedef struct mover {
    float x, y, vx, vy;
} mover;

static void mover_tick(void *target, float dt, tk_tick_ctx *ctx)
{
    (void)ctx;
    mover *m = target;
    m->x += m->vx * dt;
    m->y += m->vy * dt;
}

static void mover_batch(void *const *targets, size_t n, float dt, tk_tick_ctx *ctx)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++) {
        mover *m = targets[i];
        m->x += m->vx * dt;
        m->y += m->vy * dt;
    }
}

/* The floor's function pointer, read through a volatile so that the loop
 * makes a real indirect call per object, as a scheduler must. */
static tk_tick_fn volatile floor_fn = mover_tick;

/* ---- engines ------------------------------------------------------------ */

static tk_engine_t *engine_new(void)
{
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    d.tick_rate = 0;
    d.fixed_dt = FIXED_DT;
    tk_engine_t *e;
    int rc = tk_engine_new(&d, &e);
    if (rc)
        die("tk_engine_new", rc);
    return e;
}

static tk_class_id class_add(tk_world_t *w, const char *name, tk_tick_fn fn,
                             tk_tick_batch_fn batch)
{
    tk_tick_class_desc cd = {.name = name, .fn = fn, .fn_batch = batch};
    tk_class_id cls;
    int rc = tk_tick_class_register(w, &cd, &cls);
    if (rc)
        die("tk_tick_class_register", rc);
    return cls;
}

static tk_tick_id tick_add(tk_world_t *w, tk_class_id cls, void *target, double interval,
                           bool batch, const tk_tick_id *prereq)
{
    tk_tick_desc d = {0};
    d.cls = cls;
    d.target = target;
    tk_tick_spec_default(&d.spec);
    d.spec.interval = interval;
    d.spec.batch = batch;
    if (prereq) {
        d.prerequisites = prereq;
        d.n_prerequisites = 1;
    }
    tk_tick_id id;
    int rc = tk_tick_register(w, &d, &id);
    if (rc)
        die("tk_tick_register", rc);
    return id;
}

/* Time `frames` frames of `e`, in ns. */
static double time_frames(tk_engine_t *e, unsigned frames)
{
    uint64_t t0 = tk_clock_now_ns();
    for (unsigned i = 0; i < frames; i++)
        tk_engine_frame(e);
    return (double)(tk_clock_now_ns() - t0);
}

/* This thread's CPU time in ns: the side-by-side ratios below are taken on
 * it, so that a busy machine's preemptions (whole milliseconds on a shared
 * 2-core VM) do not land on one side of a ratio. */
static uint64_t cpu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Time one frame of `e` in CPU ns. */
static double cpu_frame(tk_engine_t *e)
{
    uint64_t t0 = cpu_now_ns();
    tk_engine_frame(e);
    return (double)(cpu_now_ns() - t0);
}

/* ---- tick_ns_per_function_N ---------------------------------------------- */

static double bench_every_frame(unsigned n)
{
    tk_engine_t *e = engine_new();
    tk_world_t *w = tk_engine_world(e);
    tk_class_id cls = class_add(w, "counter", counter_tick, counter_batch);
    counter *targets = calloc(n, sizeof *targets);
    for (unsigned i = 0; i < n; i++)
        tick_add(w, cls, &targets[i], 0, true, NULL);
    unsigned frames = 10000000u / n; /* 10M ticks per run */
    if (frames < 10)
        frames = 10;
    time_frames(e, 3 + frames / 4); /* warm-up: schedule built, caches hot */
    double v[RUNS];
    for (int r = 0; r < RUNS; r++)
        v[r] = time_frames(e, frames) / ((double)frames * n);
    double ns = bench_median(v, RUNS);
    if (targets[0].n != targets[n - 1].n || targets[0].n == 0) {
        fprintf(stderr, "bench_tick: counters disagree\n");
        exit(1);
    }
    tk_engine_free(e);
    free(targets);
    return ns;
}

/* ---- ue_baseline_ratio ---------------------------------------------------- */

/*
 * The workload: 1M functions; function i has interval 0.1 s if i % 10 == 0,
 * and one prerequisite on a random earlier function if i % 10 == 5.
 */
typedef struct baseline_load {
    unsigned n;
    int32_t *prereq;          /* index of the prerequisite, -1 for none     */
} baseline_load;

static baseline_load baseline_make(unsigned n)
{
    baseline_load b = {.n = n, .prereq = malloc(n * sizeof(int32_t))};
    uint64_t seed = 0x5eed0001;
    for (unsigned i = 0; i < n; i++)
        b.prereq[i] = (i % 10 == 5) ? (int32_t)(rng_next(&seed) % i) : -1;
    return b;
}

static double baseline_interval(unsigned i) { return i % 10 == 0 ? 0.1 : 0; }

static void bench_baseline(unsigned n, double *ratio, double *tickd_ns, double *model_ns)
{
    baseline_load load = baseline_make(n);

    tk_engine_t *e = engine_new();
    tk_world_t *w = tk_engine_world(e);
    tk_class_id cls = class_add(w, "counter", counter_tick, counter_batch);
    counter *tt = calloc(n, sizeof *tt);
    tk_tick_id *ids = malloc(n * sizeof *ids);
    for (unsigned i = 0; i < n; i++)
        ids[i] = tick_add(w, cls, &tt[i], baseline_interval(i), true,
                          load.prereq[i] >= 0 ? &ids[load.prereq[i]] : NULL);

    ue_model_t *m = ue_model_new(NULL); /* hash order, Unreal's behaviour */
    counter *mt = calloc(n, sizeof *mt);
    ue_tick_id *mids = malloc(n * sizeof *mids);
    for (unsigned i = 0; i < n; i++) {
        ue_tick_desc d;
        ue_tick_desc_default(&d, counter_tick_ue, &mt[i]);
        d.interval = baseline_interval(i);
        if (load.prereq[i] >= 0) {
            d.prerequisites = &mids[load.prereq[i]];
            d.n_prerequisites = 1;
        }
        int rc = ue_model_register(m, &d, &mids[i]);
        if (rc)
            die("ue_model_register", rc);
    }
    const uint64_t raw_ns = tk_s_to_ns(FIXED_DT);

    /* Runs of 12 frames: two full 0.1 s interval periods at 60 Hz. */
    const unsigned frames = 12;
    time_frames(e, frames);
    for (unsigned i = 0; i < frames; i++)
        ue_model_frame(m, raw_ns);
    double rt[RUNS], rm[RUNS], rr[RUNS];
    for (int r = 0; r < RUNS; r++) {
        rt[r] = time_frames(e, frames);
        uint64_t t0 = tk_clock_now_ns();
        for (unsigned i = 0; i < frames; i++)
            ue_model_frame(m, raw_ns);
        rm[r] = (double)(tk_clock_now_ns() - t0);
        rr[r] = rm[r] / rt[r];
    }
    /* Same work on both sides: equal tick counts. */
    for (unsigned i = 0; i < n; i++) {
        if (tt[i].n != mt[i].n) {
            fprintf(stderr, "bench_tick: baseline: function %u ticked %llu times in "
                            "tickd, %llu in the model\n",
                    i, (unsigned long long)tt[i].n, (unsigned long long)mt[i].n);
            exit(1);
        }
    }
    *ratio = bench_median(rr, RUNS);
    *tickd_ns = bench_median(rt, RUNS) / ((double)frames * n);
    *model_ns = bench_median(rm, RUNS) / ((double)frames * n);
    ue_model_free(m);
    tk_engine_free(e);
    free(tt);
    free(mt);
    free(ids);
    free(mids);
    free(load.prereq);
}

/* ---- interval_ns_per_idle_function_1m ------------------------------------ */

static double bench_idle_interval(unsigned n)
{
    tk_engine_t *e = engine_new();
    tk_world_t *w = tk_engine_world(e);
    tk_class_id cls = class_add(w, "counter", counter_tick, counter_batch);
    counter *targets = calloc(n, sizeof *targets);
    for (unsigned i = 0; i < n; i++)
        tick_add(w, cls, &targets[i], 10.0, true, NULL);
    time_frames(e, 1); /* all tick once, then cool down for 10 s = 600 frames */
    time_frames(e, 4);
    /* Due again 10 s after the first frame, in frame 600: 1 + 4 + 7 x 80 =
     * 565 frames stay clear of it. */
    const unsigned frames = 80;
    double v[RUNS];
    for (int r = 0; r < RUNS; r++)
        v[r] = time_frames(e, frames) / ((double)frames * n);
    for (unsigned i = 0; i < n; i++) {
        if (targets[i].n != 1) {
            fprintf(stderr, "bench_tick: idle interval: function %u ticked %llu times\n",
                    i, (unsigned long long)targets[i].n);
            exit(1);
        }
    }
    tk_engine_free(e);
    free(targets);
    return bench_median(v, RUNS);
}

/* ---- batch_speedup ---------------------------------------------------------- */

static tk_engine_t *batch_world(unsigned n, bool batch_form, body *targets)
{
    tk_engine_t *e = engine_new();
    tk_world_t *w = tk_engine_world(e);
    tk_class_id cls[8];
    for (int k = 0; k < 8; k++) {
        char name[16];
        snprintf(name, sizeof name, "body%d", k);
        cls[k] = class_add(w, name, body_fns[k], batch_form ? body_batches[k] : NULL);
    }
    for (unsigned i = 0; i < n; i++)
        tick_add(w, cls[i % 8], &targets[i], 0, true, NULL);
    return e;
}

static double bench_batch(unsigned n, double *batched_ns, double *unbatched_ns)
{
    body *tb = calloc(n, sizeof *tb), *tu = calloc(n, sizeof *tu);
    tk_engine_t *eb = batch_world(n, true, tb);
    tk_engine_t *eu = batch_world(n, false, tu);
    const unsigned frames = 10;
    time_frames(eb, frames);
    time_frames(eu, frames);
    double vb[RUNS], vu[RUNS], vr[RUNS];
    for (int r = 0; r < RUNS; r++) {
        vb[r] = time_frames(eb, frames);
        vu[r] = time_frames(eu, frames);
        vr[r] = vu[r] / vb[r];
    }
    for (unsigned i = 0; i < n; i++) {
        if (tb[i].x != tu[i].x) {
            fprintf(stderr, "bench_tick: batch: target %u differs\n", i);
            exit(1);
        }
    }
    *batched_ns = bench_median(vb, RUNS) / ((double)frames * n);
    *unbatched_ns = bench_median(vu, RUNS) / ((double)frames * n);
    tk_engine_free(eb);
    tk_engine_free(eu);
    free(tb);
    free(tu);
    return bench_median(vr, RUNS);
}

/* ---- unbatched_floor_ratio, batch_false_floor_ratio ------------------------ */

/*
 * 1M movers, one object each, in one heap array; the same objects are ticked
 * by (a) a class without a batch form, (b) a class with one whose functions
 * are registered with batch=false, (c) the class without a batch form with
 * slow-tick detection at 5 ms (the daemon's default), (d) the floor: a loop
 * making one indirect call per object through the same tick function.  One
 * frame (floor: one pass) of each per sample, 61 samples, in CPU time; each
 * ratio is the median of per-sample ratios.
 */
typedef struct unbatched_figs {
    double nb_ratio, bf_ratio, sl_ratio; /* ÷ the floor                 */
    double floor_ns, nb_ns, bf_ns, sl_ns; /* ns per object per frame     */
} unbatched_figs;

static void slow_tick_sink(void *ud, tk_tick_id id, void *target, tk_class_id cls, uint64_t ns,
                           size_t n)
{
    (void)id;
    (void)target;
    (void)cls;
    (void)ns;
    (void)n;
    (*(unsigned *)ud)++;
}

static void bench_unbatched(unsigned n, unbatched_figs *out)
{
    mover *objs = calloc(n, sizeof *objs);
    void **targets = malloc(n * sizeof *targets);
    for (unsigned i = 0; i < n; i++) {
        objs[i].vx = 1.0f + (float)(i % 7);
        objs[i].vy = -1.0f;
        targets[i] = &objs[i];
    }
    tk_engine_t *enb = engine_new(), *ebf = engine_new(), *esl = engine_new();
    tk_class_id cnb = class_add(tk_engine_world(enb), "mover_nb", mover_tick, NULL);
    tk_class_id cbf = class_add(tk_engine_world(ebf), "mover_bf", mover_tick, mover_batch);
    tk_class_id csl = class_add(tk_engine_world(esl), "mover_nb", mover_tick, NULL);
    unsigned slow_reports = 0;
    tk_world_set_slow_tick(tk_engine_world(esl), 5000000, slow_tick_sink, &slow_reports);
    for (unsigned i = 0; i < n; i++) {
        tick_add(tk_engine_world(enb), cnb, &objs[i], 0, true, NULL);
        tick_add(tk_engine_world(ebf), cbf, &objs[i], 0, false, NULL);
        tick_add(tk_engine_world(esl), csl, &objs[i], 0, true, NULL);
    }
    const float dt = (float)FIXED_DT;
    tk_tick_ctx ctx = {tk_engine_world(enb), TK_TICK_NONE, 0, TK_GROUP_PRE_PHYSICS, false, 0};
    time_frames(enb, 3);
    time_frames(ebf, 3);
    time_frames(esl, 3);
    /* Frames of the four contenders alternate, so that each sample sees the
     * same machine; the median of per-sample ratios drops the samples a
     * busy machine disturbed. */
    enum { SAMPLES = 61 };
    double vf[SAMPLES], vn[SAMPLES], vb[SAMPLES], vs[SAMPLES];
    double rn[SAMPLES], rb[SAMPLES], rs[SAMPLES];
    for (int r = 0; r < SAMPLES; r++) {
        uint64_t t0 = cpu_now_ns();
        tk_tick_fn fn = floor_fn;
        for (unsigned i = 0; i < n; i++)
            fn(targets[i], dt, &ctx);
        vf[r] = (double)(cpu_now_ns() - t0);
        vn[r] = cpu_frame(enb);
        vb[r] = cpu_frame(ebf);
        vs[r] = cpu_frame(esl);
        rn[r] = vn[r] / vf[r];
        rb[r] = vb[r] / vf[r];
        rs[r] = vs[r] / vf[r];
    }
    if (slow_reports) {
        fprintf(stderr, "bench_tick: unbatched: %u slow ticks reported (5 ms threshold)\n",
                slow_reports);
    }
    double per = (double)n;
    out->nb_ratio = bench_median(rn, SAMPLES);
    out->bf_ratio = bench_median(rb, SAMPLES);
    out->sl_ratio = bench_median(rs, SAMPLES);
    out->floor_ns = bench_median(vf, SAMPLES) / per;
    out->nb_ns = bench_median(vn, SAMPLES) / per;
    out->bf_ns = bench_median(vb, SAMPLES) / per;
    out->sl_ns = bench_median(vs, SAMPLES) / per;
    tk_engine_free(enb);
    tk_engine_free(ebf);
    tk_engine_free(esl);
    free(targets);
    free(objs);
}

/* ---- interval_due_1m_ms, interval_due_ratio ---------------------------------- */

/*
 * 1M counter functions with an interval of 0.1 s, registered together, so
 * that they come due in the same frames (every 6th frame at 60 Hz); beside
 * them a world of 1M every-frame functions of the same class.  A run times
 * the frames of one period one by one (CPU time), takes the one in which
 * they came due, and times one frame of the every-frame world right after.
 */
static void bench_interval_due(unsigned n, double *due_ms, double *ratio, double *every_ms)
{
    counter *ti = calloc(n, sizeof *ti), *te = calloc(n, sizeof *te);
    tk_engine_t *ei = engine_new(), *ee = engine_new();
    tk_class_id ci = class_add(tk_engine_world(ei), "counter", counter_tick, counter_batch);
    tk_class_id ce = class_add(tk_engine_world(ee), "counter", counter_tick, counter_batch);
    for (unsigned i = 0; i < n; i++) {
        tick_add(tk_engine_world(ei), ci, &ti[i], 0.1, true, NULL);
        tick_add(tk_engine_world(ee), ce, &te[i], 0, true, NULL);
    }
    /* Warm-up: the first ticks and two full periods. */
    time_frames(ei, 13);
    time_frames(ee, 13);
    double vd[RUNS], ve[RUNS], vr[RUNS];
    for (int r = 0; r < RUNS; r++) {
        uint64_t before = ti[0].n;
        double t = 0;
        for (int f = 0; f < 12 && ti[0].n == before; f++)
            t = cpu_frame(ei);
        if (ti[0].n != before + 1 || ti[n - 1].n != ti[0].n) {
            fprintf(stderr, "bench_tick: interval due: the functions did not come due together\n");
            exit(1);
        }
        vd[r] = t;
        ve[r] = cpu_frame(ee);
        vr[r] = vd[r] / ve[r];
    }
    *due_ms = bench_median(vd, RUNS) / 1e6;
    *every_ms = bench_median(ve, RUNS) / 1e6;
    *ratio = bench_median(vr, RUNS);
    tk_engine_free(ei);
    tk_engine_free(ee);
    free(ti);
    free(te);
}

/* ---- remove_2m_max_start_frame_ms ---------------------------------------------- */

/*
 * 2M counter functions in a level, 100k in the persistent level registered
 * among them (the same lane).  The level's functions are unregistered 50k
 * per frame, as the daemon destroys a level's entities in slices, then the
 * level is removed and 40 more frames run.  The figure is the longest
 * StartFrame (schedule upkeep, where lanes are compacted) of those frames in
 * CPU time (the world's statistics clock is this thread's CPU clock here, so
 * a busy machine's preemptions do not count), median of 3 runs;
 * `remove_2m_median_start_frame_ms` is the median StartFrame of the same
 * frames.
 */
static uint64_t cpu_clock(void *ud)
{
    (void)ud;
    return cpu_now_ns();
}

static void bench_remove(double *max_ms, double *median_ms)
{
    enum { N = 2000000, EVERY = 20, SLICE = 50000, TRIES = 3 };
    double vmax[TRIES], vmed[TRIES];
    counter *t = calloc(N, sizeof *t);
    tk_tick_id *ids = malloc(N * sizeof *ids);
    for (int r = 0; r < TRIES; r++) {
        tk_engine_t *e = engine_new();
        tk_world_t *w = tk_engine_world(e);
        tk_world_set_stats_clock(w, cpu_clock, NULL);
        tk_class_id cls = class_add(w, "counter", counter_tick, counter_batch);
        tk_level_id lv;
        int rc = tk_level_add(w, "doomed", &lv);
        if (rc)
            die("tk_level_add", rc);
        for (unsigned i = 0; i < N; i++) {
            tk_tick_desc d = {0};
            d.cls = cls;
            d.target = &t[i];
            d.level = i % EVERY == 0 ? TK_LEVEL_PERSISTENT : lv;
            tk_tick_spec_default(&d.spec);
            rc = tk_tick_register(w, &d, &ids[i]);
            if (rc)
                die("tk_tick_register", rc);
        }
        time_frames(e, 3);
        double sf[N / SLICE + 64];
        int n_sf = 0;
        unsigned next = 0;
        for (int f = 0; f < N / SLICE + 41; f++) {
            if (next < N) {
                unsigned end = next + SLICE < N ? next + SLICE : N;
                for (unsigned i = next; i < end; i++)
                    if (i % EVERY != 0)
                        tk_tick_unregister(w, ids[i]);
                next = end;
            } else if (tk_level_name(w, lv)) {
                tk_level_remove(w, lv);
            }
            tk_engine_frame(e);
            tk_world_frame_stats fs;
            tk_world_get_frame_stats(w, &fs);
            sf[n_sf++] = (double)fs.start_frame_ns / 1e6;
        }
        double mx = 0;
        for (int i = 0; i < n_sf; i++)
            mx = sf[i] > mx ? sf[i] : mx;
        vmax[r] = mx;
        vmed[r] = bench_median(sf, (size_t)n_sf);
        tk_engine_free(e);
    }
    free(t);
    free(ids);
    *max_ms = bench_median(vmax, TRIES);
    *median_ms = bench_median(vmed, TRIES);
}

/* ---- bytes_per_tick_function --------------------------------------------- */

static long rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    long size, resident;
    int ok = fscanf(f, "%ld %ld", &size, &resident) == 2;
    fclose(f);
    return ok ? resident * sysconf(_SC_PAGESIZE) : -1;
}

/* In the child: RSS growth from registering n functions (and running one
 * frame, so the schedule they need is built), divided by n. */
static double bytes_child(unsigned n)
{
    tk_engine_t *e = engine_new();
    tk_world_t *w = tk_engine_world(e);
    tk_class_id cls = class_add(w, "counter", counter_tick, counter_batch);
    counter *targets = calloc(n, sizeof *targets);
    memset(targets, 1, n * sizeof *targets); /* resident before measuring */
    tk_engine_frame(e);
    long before = rss_bytes();
    for (unsigned i = 0; i < n; i++)
        tick_add(w, cls, &targets[i], 0, true, NULL);
    tk_engine_frame(e);
    long after = rss_bytes();
    if (before < 0 || after < 0)
        return -1;
    return (double)(after - before) / n;
}

static double bench_bytes(unsigned n)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fd[0]);
        double b = bytes_child(n);
        ssize_t wr = write(fd[1], &b, sizeof b);
        _exit(wr == (ssize_t)sizeof b ? 0 : 1);
    }
    close(fd[1]);
    double b = -1;
    if (read(fd[0], &b, sizeof b) != (ssize_t)sizeof b)
        b = -1;
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -1;
    return b;
}

/* ---- reports ---------------------------------------------------------------- */

static void report_bytes(void)
{
    double bytes = bench_bytes(M1);
    if (bytes >= 0) {
        fprintf(stderr, "bytes_per_tick_function: %.1f bytes (RSS growth over 1M)\n", bytes);
        printf("bytes_per_tick_function=%.1f\n", bytes);
    } else {
        fprintf(stderr, "bytes_per_tick_function: could not be measured\n");
    }
}

static void report_every(void)
{
    static const unsigned sizes[] = {10000, 100000, M1};
    static const char *const keys[] = {"tick_ns_per_function_10k", "tick_ns_per_function_100k",
                                       "tick_ns_per_function_1m"};
    for (int i = 0; i < 3; i++) {
        double ns = bench_every_frame(sizes[i]);
        fprintf(stderr, "%s: %.3f ns per function per frame (%u every-frame ticks)\n",
                keys[i], ns, sizes[i]);
        printf("%s=%.3f\n", keys[i], ns);
        fflush(stdout);
    }
}

static void report_baseline(void)
{
    double ratio, tns, mns;
    bench_baseline(M1, &ratio, &tns, &mns);
    fprintf(stderr, "ue_baseline_ratio: %.1f (Unreal's algorithm %.1f ns, tickd %.2f ns "
                    "per function per frame; 1M, 10%% interval 0.1 s, 10%% with a prerequisite)\n",
            ratio, mns, tns);
    printf("ue_baseline_ratio=%.2f\n", ratio);
    printf("ue_baseline_model_ns_per_function=%.2f\n", mns);
    printf("ue_baseline_tickd_ns_per_function=%.2f\n", tns);
}

static void report_idle(void)
{
    double idle = bench_idle_interval(M1);
    fprintf(stderr, "interval_ns_per_idle_function_1m: %.4f ns per idle function per frame\n",
            idle);
    printf("interval_ns_per_idle_function_1m=%.4f\n", idle);
}

static void report_batch(void)
{
    double bns, uns;
    double speedup = bench_batch(M1, &bns, &uns);
    fprintf(stderr, "batch_speedup: %.2f (batched %.2f ns, without a batch form %.2f ns per "
                    "tick; 1M ticks of 8 interleaved classes)\n",
            speedup, bns, uns);
    printf("batch_speedup=%.2f\n", speedup);
    printf("batch_speedup_batched_ns=%.3f\n", bns);
    printf("batch_speedup_unbatched_ns=%.3f\n", uns);
}

static void report_unbatched(void)
{
    unbatched_figs u;
    bench_unbatched(M1, &u);
    fprintf(stderr, "unbatched_floor_ratio: %.2f (a class without a batch form %.2f ns, an "
                    "indirect-call loop %.2f ns per object; 1M movers)\n",
            u.nb_ratio, u.nb_ns, u.floor_ns);
    fprintf(stderr, "batch_false_floor_ratio: %.2f (batch=false %.2f ns per object)\n",
            u.bf_ratio, u.bf_ns);
    fprintf(stderr, "unbatched_slow_tick_floor_ratio: %.2f (slow-tick detection at 5 ms: "
                    "%.2f ns per object)\n",
            u.sl_ratio, u.sl_ns);
    printf("unbatched_floor_ratio=%.3f\n", u.nb_ratio);
    printf("unbatched_ns_per_function_1m=%.3f\n", u.nb_ns);
    printf("unbatched_floor_ns_per_function_1m=%.3f\n", u.floor_ns);
    printf("batch_false_floor_ratio=%.3f\n", u.bf_ratio);
    printf("batch_false_ns_per_function_1m=%.3f\n", u.bf_ns);
    printf("unbatched_slow_tick_floor_ratio=%.3f\n", u.sl_ratio);
}

static void report_due(void)
{
    double dms, dr, ems;
    bench_interval_due(M1, &dms, &dr, &ems);
    fprintf(stderr, "interval_due_1m_ms: %.2f ms (1M interval functions due in one frame; "
                    "1M every-frame functions: %.2f ms); interval_due_ratio: %.2f\n",
            dms, ems, dr);
    printf("interval_due_1m_ms=%.3f\n", dms);
    printf("interval_due_every_frame_1m_ms=%.3f\n", ems);
    printf("interval_due_ratio=%.3f\n", dr);
}

static void report_remove(void)
{
    double mx, med;
    bench_remove(&mx, &med);
    fprintf(stderr, "remove_2m_max_start_frame_ms: %.2f ms (longest StartFrame while a level "
                    "of 2M functions is removed in slices; median StartFrame %.3f ms)\n",
            mx, med);
    printf("remove_2m_max_start_frame_ms=%.3f\n", mx);
    printf("remove_2m_median_start_frame_ms=%.3f\n", med);
}

/*
 * Without arguments every part runs; with arguments only the named ones
 * (bytes, every, baseline, idle, batch, unbatched, due, remove), in this
 * order.
 */
int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*run)(void);
    } parts[] = {
        {"bytes", report_bytes}, /* first, before this process's heap has grown */
        {"every", report_every},         {"baseline", report_baseline},
        {"idle", report_idle},           {"batch", report_batch},
        {"unbatched", report_unbatched}, {"due", report_due},
        {"remove", report_remove},
    };
    for (size_t p = 0; p < sizeof parts / sizeof parts[0]; p++) {
        bool run = argc < 2;
        for (int i = 1; i < argc; i++)
            run |= strcmp(argv[i], parts[p].name) == 0;
        if (run) {
            parts[p].run();
            fflush(stdout);
        }
    }
    return 0;
}
