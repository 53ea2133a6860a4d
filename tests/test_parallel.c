/*
 * test_parallel.c - tick functions on worker threads (tick.h, Threads): the
 * same mixed world run with 1, 2 and 4 threads ends in the same state, entry
 * by entry; workers really take chunks while the frame thread runs others;
 * prerequisites finish before their dependents start on any thread; calls
 * that would change the world from parallel work are refused (and allowed
 * with one thread); hooks see the one-thread order, on the frame thread;
 * small runs stay on the frame thread; the thread count changes between
 * frames only.
 *
 * The engines run with a fixed dt and no pacing, so nothing depends on the
 * machine's speed; the tests that need a worker to have run something poll
 * for it with a deadline.  A split threshold of 0.001 us splits every run of
 * parallel work, the most concurrency a world can get.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickd/tickd.h"
#include "check_main.h"

#define SPLIT_ALL 0.001 /* us: every run of parallel work is split */

static tk_engine_t *engine(unsigned threads, double split_us)
{
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    d.tick_rate = 0;
    d.fixed_dt = 1.0 / 60;
    d.threads = threads;
    d.split_min_us = split_us;
    tk_engine_t *e;
    ck_assert_int_eq(tk_engine_new(&d, &e), 0);
    ck_assert_uint_eq(tk_engine_threads(e), threads ? threads : 1);
    return e;
}

static tk_class_id add_class(tk_world_t *w, const char *name, tk_tick_fn fn,
                             tk_tick_batch_fn batch, bool thread_safe)
{
    tk_tick_class_desc cd = {name, fn, batch, thread_safe};
    tk_class_id c;
    ck_assert_int_eq(tk_tick_class_register(w, &cd, &c), 0);
    return c;
}

/* ---- the mixed world ---------------------------------------------------------- */

#define MAXOBJ 6000

typedef struct obj {
    double x, v;              /* mover: x += v * dt                     */
    double y;                 /* follower: a copy of its source's x     */
    struct obj *src;          /* follower: its prerequisite's target    */
    uint64_t n;               /* ticks seen by the target itself        */
    double sum_dt;            /* dt summed by the target itself         */
    int kind;
} obj;

typedef struct scene {
    tk_engine_t *e;
    tk_world_t *w;
    tk_class_id mv, fol, fol_ts, any, spawn;
    obj objs[MAXOBJ];
    tk_tick_id ids[MAXOBJ];
    int n;
    uint64_t timer_fires, tickable_ticks, paused_ticks;
} scene;

static scene *g_sc; /* the scene of the running test (one per process) */

static void mv_step(obj *o, float dt)
{
    o->x += o->v * dt;
    o->n++;
    o->sum_dt += dt;
}

static void mv_tick(void *t, float dt, tk_tick_ctx *c)
{
    (void)c;
    mv_step(t, dt);
}

static void mv_batch(void *const *t, size_t n, float dt, tk_tick_ctx *c)
{
    (void)c;
    for (size_t i = 0; i < n; i++)
        mv_step(t[i], dt);
}

/* A follower reads its prerequisite's x: the value after that one ticked. */
static void fol_tick(void *t, float dt, tk_tick_ctx *c)
{
    (void)c;
    obj *o = t;
    o->y = o->src->x + o->src->v * 0.5;
    o->n++;
    o->sum_dt += dt;
}

static void fol_batch(void *const *t, size_t n, float dt, tk_tick_ctx *c)
{
    for (size_t i = 0; i < n; i++)
        fol_tick(t[i], dt, c);
}

/* A class that is not thread-safe; some of its functions are any_thread. */
static void any_tick(void *t, float dt, tk_tick_ctx *c)
{
    (void)c;
    obj *o = t;
    o->x = o->x * 0.5 + (double)dt;
    o->n++;
    o->sum_dt += dt;
}

static int add_fn(scene *sc, tk_class_id cls, int kind, const tk_tick_spec *spec, float dil,
                  int prereq)
{
    ck_assert_int_lt(sc->n, MAXOBJ);
    int i = sc->n++;
    obj *o = &sc->objs[i];
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->x = (double)(i % 97);
    o->v = 1.0 + (double)(i % 13) * 0.25;
    tk_tick_desc d = {0};
    d.cls = cls;
    d.target = o;
    d.level = TK_LEVEL_PERSISTENT;
    d.spec = *spec;
    d.dilation = dil;
    tk_tick_id pre;
    if (prereq >= 0) {
        pre = sc->ids[prereq];
        d.prerequisites = &pre;
        d.n_prerequisites = 1;
        o->src = &sc->objs[prereq];
    }
    ck_assert_int_eq(tk_tick_register(sc->w, &d, &sc->ids[i]), 0);
    return i;
}

/* A spawner (frame thread): every 7th tick registers a mover (newly
 * spawned this frame), every 11th disables or enables one, every 13th
 * unregisters one, every 17th changes one's interval. */
static void spawn_tick(void *t, float dt, tk_tick_ctx *c)
{
    obj *o = t;
    scene *sc = g_sc;
    o->n++;
    o->sum_dt += dt;
    uint64_t k = o->n + (uint64_t)(o - sc->objs);
    if (k % 7 == 0 && sc->n < MAXOBJ) {
        tk_tick_spec s;
        tk_tick_spec_default(&s);
        s.group = (tk_group)(k % 3 == 0 ? TK_GROUP_POST_PHYSICS : TK_GROUP_PRE_PHYSICS);
        add_fn(sc, sc->mv, 1, &s, 1.0f, -1);
    }
    int victim = (int)(k % (uint64_t)sc->n);
    if (sc->objs[victim].kind != 1 || !tk_tick_alive(c->world, sc->ids[victim]))
        return;
    if (k % 11 == 0) {
        tk_tick_info info;
        ck_assert_int_eq(tk_tick_get(c->world, sc->ids[victim], &info), 0);
        tk_tick_set_enabled(c->world, sc->ids[victim], info.state == TK_TICK_DISABLED);
    } else if (k % 13 == 0) {
        tk_tick_unregister(c->world, sc->ids[victim]);
    } else if (k % 17 == 0) {
        tk_tick_info info;
        ck_assert_int_eq(tk_tick_get(c->world, sc->ids[victim], &info), 0);
        info.spec.interval = info.spec.interval > 0 ? 0 : 0.05;
        ck_assert_int_eq(tk_tick_set_spec(c->world, sc->ids[victim], &info.spec), 0);
    }
}

static void timer_fn(void *ud, tk_timer_handle h, tk_world_t *w)
{
    (void)h;
    scene *sc = ud;
    sc->timer_fires++;
    /* Between groups: flip a batch of movers. */
    for (int i = (int)(sc->timer_fires % 5); i < sc->n; i += 37)
        if (sc->objs[i].kind == 1 && tk_tick_alive(w, sc->ids[i]))
            tk_tick_set_enabled(w, sc->ids[i], sc->timer_fires % 2 == 0);
}

static void tickable_fn(void *ud, float dt, tk_world_t *w)
{
    (void)dt;
    scene *sc = ud;
    if (tk_world_paused(w))
        sc->paused_ticks++;
    sc->tickable_ticks++;
}

static void scene_build(scene *sc, unsigned threads, double split_us)
{
    memset(sc, 0, sizeof *sc);
    g_sc = sc;
    sc->e = engine(threads, split_us);
    sc->w = tk_engine_world(sc->e);
    sc->mv = add_class(sc->w, "mv", mv_tick, mv_batch, true);
    sc->fol = add_class(sc->w, "fol", fol_tick, NULL, false);
    sc->fol_ts = add_class(sc->w, "fol_ts", fol_tick, fol_batch, true);
    sc->any = add_class(sc->w, "any", any_tick, NULL, false);
    sc->spawn = add_class(sc->w, "spawn", spawn_tick, NULL, false);
    tk_tick_spec s;
    for (int i = 0; i < 3000; i++) {
        tk_tick_spec_default(&s);
        int r = i % 20;
        s.group = (tk_group)(r < 12 ? TK_GROUP_PRE_PHYSICS
                             : r < 16 ? TK_GROUP_DURING_PHYSICS
                                      : TK_GROUP_POST_PHYSICS);
        if (r == 3)
            s.end_group = TK_GROUP_POST_PHYSICS;
        s.high_priority = r == 5;
        s.interval = r == 7 ? 0.05 : r == 8 ? 0.1 : 0;
        s.even_when_paused = r == 9;
        s.batch = r != 10;
        float dil = r == 11 ? 0.5f : 1.0f;
        int k = add_fn(sc, sc->mv, 1, &s, dil, -1);
        /* Followers of some movers: on the frame thread, and thread-safe. */
        if (i % 9 == 0) {
            tk_tick_spec f;
            tk_tick_spec_default(&f);
            f.group = s.group;
            add_fn(sc, i % 18 == 0 ? sc->fol_ts : sc->fol, 2, &f, 1.0f, k);
        }
        /* A lane of a class that is not thread-safe, a third any_thread, in
         * stretches of 1, 2 and 3. */
        if (i % 4 == 0) {
            tk_tick_spec a;
            tk_tick_spec_default(&a);
            a.any_thread = (i / 4) % 6 == 1 || (i / 4) % 6 == 4 || (i / 4) % 6 == 5;
            a.interval = (i / 4) % 10 == 3 ? 0.1 : 0;
            add_fn(sc, sc->any, 3, &a, (i / 4) % 7 == 2 ? 2.0f : 1.0f, -1);
        }
    }
    for (int i = 0; i < 12; i++) {
        tk_tick_spec_default(&s);
        s.group = (tk_group)(i % 2 ? TK_GROUP_PRE_PHYSICS : TK_GROUP_POST_UPDATE_WORK);
        add_fn(sc, sc->spawn, 4, &s, 1.0f, -1);
    }
    tk_timer_desc td = {0};
    td.rate = 0.1;
    td.loop = true;
    td.first_delay = -1;
    td.fn = timer_fn;
    td.ud = sc;
    tk_timer_handle h;
    ck_assert_int_eq(tk_timer_set(sc->w, &td, &h), 0);
    tk_tickable_desc kd = {0};
    kd.type = TK_TICKABLE_ALWAYS;
    kd.when_paused = true;
    kd.fn = tickable_fn;
    kd.ud = sc;
    tk_tickable_id tid;
    ck_assert_int_eq(tk_tickable_add(sc->w, &kd, &tid), 0);
}

/* Run `frames` frames: paused from frame 100 to 130, with 3 steps at 110. */
static void scene_run(scene *sc, int frames)
{
    for (int f = 0; f < frames; f++) {
        if (f == 100)
            tk_world_set_paused(sc->w, true);
        if (f == 110)
            ck_assert_int_eq(tk_world_step(sc->w, 3), 0);
        if (f == 130)
            tk_world_set_paused(sc->w, false);
        ck_assert_int_eq(tk_engine_frame(sc->e), 0);
    }
}

/* Everything the two runs must agree on. */
static void scene_compare(const scene *a, const scene *b)
{
    ck_assert_int_eq(a->n, b->n);
    ck_assert_uint_eq(a->timer_fires, b->timer_fires);
    ck_assert_uint_eq(a->tickable_ticks, b->tickable_ticks);
    ck_assert_uint_eq(a->paused_ticks, b->paused_ticks);
    for (int i = 0; i < a->n; i++) {
        const obj *p = &a->objs[i], *q = &b->objs[i];
        CHECK(p->x == q->x && p->y == q->y && p->n == q->n && p->sum_dt == q->sum_dt,
              "object %d (kind %d): x %.17g / %.17g, y %.17g / %.17g, n %llu / %llu", i,
              p->kind, p->x, q->x, p->y, q->y, (unsigned long long)p->n,
              (unsigned long long)q->n);
        CHECK(a->ids[i] == b->ids[i], "function %d has another id", i);
        bool alive = tk_tick_alive(a->w, a->ids[i]);
        CHECK(alive == tk_tick_alive(b->w, b->ids[i]), "function %d: alive differs", i);
        if (!alive)
            continue;
        tk_tick_info x, y;
        ck_assert_int_eq(tk_tick_get(a->w, a->ids[i], &x), 0);
        ck_assert_int_eq(tk_tick_get(b->w, b->ids[i], &y), 0);
        CHECK(x.ticks == y.ticks && x.last_frame == y.last_frame && x.last_dt == y.last_dt &&
                  x.accum_dt == y.accum_dt && x.state == y.state && x.cooldown == y.cooldown &&
                  x.actual_group == y.actual_group,
              "function %d (kind %d): ticks %llu / %llu, last frame %llu / %llu", i,
              a->objs[i].kind, (unsigned long long)x.ticks, (unsigned long long)y.ticks,
              (unsigned long long)x.last_frame, (unsigned long long)y.last_frame);
        /* The counters the target kept agree with the scheduler's. */
        CHECK(x.ticks == a->objs[i].n, "function %d: %llu ticks, its target saw %llu", i,
              (unsigned long long)x.ticks, (unsigned long long)a->objs[i].n);
    }
}

static void scene_free(scene *sc) { tk_engine_free(sc->e); }

static void identical(unsigned threads, double split_us, int frames)
{
    static scene one, many;
    scene_build(&one, 1, 0);
    scene_run(&one, frames);
    scene_build(&many, threads, split_us);
    scene_run(&many, frames);
    scene_compare(&one, &many);
    /* Parallel work ran, and (split every time) some of it split. */
    tk_world_frame_stats fs;
    tk_world_get_frame_stats(many.w, &fs);
    ck_assert_uint_gt(fs.sections, 0);
    ck_assert_uint_gt(fs.par_ticks, 0);
    if (split_us == SPLIT_ALL)
        ck_assert_uint_eq(fs.sections_split, fs.sections);
    scene_free(&one);
    scene_free(&many);
}

START_TEST(parallel_identical_2_threads) { identical(2, SPLIT_ALL, 240); }
END_TEST

START_TEST(parallel_identical_4_threads) { identical(4, SPLIT_ALL, 240); }
END_TEST

START_TEST(parallel_identical_default_split) { identical(2, 0, 240); }
END_TEST

/* ---- workers take chunks; prerequisites finish first ---------------------------- */

static _Atomic unsigned g_seen_worker; /* a tick ran with ctx->thread >= 1   */
static _Atomic int g_order_errors;
static pthread_t g_frame_thread;

typedef struct cell {
    uint64_t n;                  /* ticks                                    */
    unsigned thread;             /* thread of its last tick                  */
    const struct cell *pre;      /* prerequisite (depth 1 cells)             */
    bool wait;                   /* waits until a worker ran something       */
} cell;

static void cell_tick(void *t, float dt, tk_tick_ctx *c)
{
    (void)dt;
    cell *x = t;
    CHECK((c->thread == 0) == pthread_equal(pthread_self(), g_frame_thread),
          "ctx->thread %u on the wrong thread", c->thread);
    if (c->thread)
        atomic_store(&g_seen_worker, 1);
    if (x->wait) {
        /* Hold this chunk until another chunk ran on a worker (a deadline,
         * not a sleep: it returns as soon as that happened). */
        uint64_t end = tk_clock_now_ns() + 20ull * 1000000000ull;
        while (!atomic_load(&g_seen_worker) && tk_clock_now_ns() < end)
            ;
    }
    /* Its prerequisite ticked this frame, before it started. */
    if (x->pre && x->pre->n != x->n + 1)
        atomic_fetch_add(&g_order_errors, 1);
    x->n++;
    x->thread = c->thread;
}

/* A frame-thread function of a later group: every cell of pre_physics
 * (parallel work, on any thread) finished before the group ended. */
static cell *g_cells;
static int g_n_cells, g_group_errors;

static void after_tick(void *t, float dt, tk_tick_ctx *c)
{
    (void)t, (void)dt;
    CHECK(c->thread == 0, "a function of a class that is not thread-safe on thread %u",
          c->thread);
    uint64_t n = g_cells[0].n;
    for (int i = 0; i < g_n_cells; i++)
        if (g_cells[i].n != n)
            g_group_errors++;
}

/* Register a function of class k for each of cells[0..n): every third in
 * post_physics when `groups`, else all in pre_physics. */
static void add_cells(tk_world_t *w, tk_class_id k, cell *cells, int n, bool groups)
{
    memset(cells, 0, (size_t)n * sizeof *cells);
    for (int i = 0; i < n; i++) {
        tk_tick_desc d = {0};
        d.cls = k;
        d.target = &cells[i];
        tk_tick_spec_default(&d.spec);
        if (groups && i % 3 == 0)
            d.spec.group = TK_GROUP_POST_PHYSICS;
        tk_tick_id id;
        ck_assert_int_eq(tk_tick_register(w, &d, &id), 0);
    }
}

START_TEST(parallel_workers_take_chunks)
{
    g_frame_thread = pthread_self();
    atomic_store(&g_seen_worker, 0);
    atomic_store(&g_order_errors, 0);
    tk_engine_t *e = engine(2, SPLIT_ALL);
    tk_world_t *w = tk_engine_world(e);
    tk_class_id k = add_class(w, "cell", cell_tick, NULL, true);
    enum { N = 64 };
    static cell cells[2 * N];
    memset(cells, 0, sizeof cells);
    tk_tick_id ids[N];
    for (int i = 0; i < 2 * N; i++) {
        tk_tick_desc d = {0};
        d.cls = k;
        d.target = &cells[i];
        tk_tick_spec_default(&d.spec);
        if (i >= N) {
            /* Depth 1: after cell i - N. */
            cells[i].pre = &cells[i - N];
            d.prerequisites = &ids[i - N];
            d.n_prerequisites = 1;
        }
        tk_tick_id id;
        ck_assert_int_eq(tk_tick_register(w, &d, &id), 0);
        if (i < N)
            ids[i] = id;
    }
    /* A function of the next group checks that the group finished. */
    g_cells = cells;
    g_n_cells = 2 * N;
    g_group_errors = 0;
    tk_tick_desc ad = {0};
    ad.cls = add_class(w, "after", after_tick, NULL, false);
    tk_tick_spec_default(&ad.spec);
    ad.spec.group = TK_GROUP_START_PHYSICS;
    tk_tick_id aid;
    ck_assert_int_eq(tk_tick_register(w, &ad, &aid), 0);
    /* The first cell of the first chunk holds its chunk until a worker ran
     * another: only a worker can end that wait. */
    cells[0].wait = true;
    for (int f = 0; f < 30; f++)
        ck_assert_int_eq(tk_engine_frame(e), 0);
    ck_assert_uint_eq(atomic_load(&g_seen_worker), 1);
    ck_assert_int_eq(atomic_load(&g_order_errors), 0);
    ck_assert_int_eq(g_group_errors, 0);
    for (int i = 0; i < 2 * N; i++)
        CHECK(cells[i].n == 30, "cell %d ticked %llu times", i, (unsigned long long)cells[i].n);
    tk_world_frame_stats fs;
    tk_world_get_frame_stats(w, &fs);
    ck_assert_uint_eq(fs.sections, 2); /* depth 0, depth 1 */
    ck_assert_uint_eq(fs.sections_split, 2);
    ck_assert_uint_eq(fs.par_ticks, 2 * N);
    ck_assert_uint_eq(fs.ticks_run, 2 * N + 1);
    ck_assert_uint_le(fs.worker_ticks, 2 * N);
    tk_engine_free(e);
}
END_TEST

/* ---- refusals ----------------------------------------------------------------------- */

static int g_refusal_logs, g_other_errors;
static char g_first_refusal[512];

static void count_log(void *ud, tk_log_level level, const char *msg)
{
    (void)ud;
    if (level != TK_LOG_ERROR)
        return;
    if (strstr(msg, "refused")) {
        if (!g_refusal_logs++)
            snprintf(g_first_refusal, sizeof g_first_refusal, "%s", msg);
    } else {
        g_other_errors++;
    }
}

typedef struct bad {
    int results[8];
    tk_class_id cls;
} bad;

static void noop_tick(void *t, float dt, tk_tick_ctx *c) { (void)t, (void)dt, (void)c; }

static void bad_tick(void *t, float dt, tk_tick_ctx *c)
{
    (void)dt;
    bad *b = t;
    tk_tick_desc d = {0};
    d.cls = b->cls;
    tk_tick_spec_default(&d.spec);
    tk_tick_id id;
    b->results[0] = tk_tick_register(c->world, &d, &id);
    tk_timer_desc td = {0};
    td.rate = 1;
    tk_timer_handle h;
    b->results[1] = tk_timer_set(c->world, &td, &h);
    tk_level_id lv;
    b->results[2] = tk_level_add(c->world, "extra", &lv);
    tk_tick_info info;
    b->results[3] = tk_tick_get(c->world, c->self ? c->self : 1, &info);
    b->results[4] = tk_tick_guard(c->world, "a host service");
    b->results[5] = tk_tick_parallel(c->world);
    tk_world_set_paused(c->world, true);
}

static void refusals(unsigned threads)
{
    g_refusal_logs = g_other_errors = 0;
    g_first_refusal[0] = 0;
    tk_log_set_handler(count_log, NULL);
    tk_engine_t *e = engine(threads, SPLIT_ALL);
    tk_world_t *w = tk_engine_world(e);
    static bad b[3];
    memset(b, 0, sizeof b);
    tk_class_id bc = add_class(w, "bad", bad_tick, NULL, true);
    tk_class_id nc = add_class(w, "noop", noop_tick, NULL, false);
    for (int i = 0; i < 3; i++) {
        b[i].cls = nc;
        tk_tick_desc d = {0};
        d.cls = bc;
        d.target = &b[i];
        tk_tick_spec_default(&d.spec);
        tk_tick_id id;
        ck_assert_int_eq(tk_tick_register(w, &d, &id), 0);
    }
    ck_assert_int_eq(tk_engine_frame(e), 0);
    tk_tick_counts tc;
    tk_tick_get_counts(w, &tc);
    tk_timer_counts tm;
    tk_timer_get_counts(w, &tm);
    if (threads > 1) {
        for (int i = 0; i < 3; i++) {
            for (int k = 0; k < 5; k++)
                ck_assert_int_eq(b[i].results[k], TK_ESTATE);
            ck_assert_int_eq(b[i].results[5], 1);
        }
        /* Nothing changed. */
        ck_assert_uint_eq(tc.registered, 3);
        ck_assert_uint_eq(tm.active + tm.pending, 0);
        ck_assert_uint_eq(tk_level_count(w), 1);
        ck_assert(!tk_world_paused(w));
        /* One line per run of parallel work names the first refusal and the
         * class; one more counts the rest (3 ticks x 6 calls). */
        ck_assert_int_eq(g_refusal_logs, 2);
        ck_assert_msg(strstr(g_first_refusal, "tk_tick_register refused") &&
                          strstr(g_first_refusal, "'bad'") &&
                          strstr(g_first_refusal, "pre_physics"),
                      "%s", g_first_refusal);
    } else {
        /* One thread: everything as before, the calls work. */
        for (int i = 0; i < 3; i++) {
            ck_assert_int_eq(b[i].results[0], 0);
            ck_assert_int_eq(b[i].results[1], 0);
            ck_assert_int_eq(b[i].results[4], 0);
            ck_assert_int_eq(b[i].results[5], 0);
        }
        ck_assert_uint_eq(tc.registered, 6);
        ck_assert(tk_world_paused(w));
        ck_assert_int_eq(g_refusal_logs, 0);
    }
    ck_assert_int_eq(g_other_errors, 0);
    tk_log_set_handler(NULL, NULL);
    tk_engine_free(e);
}

START_TEST(parallel_refuses_changes) { refusals(2); }
END_TEST

START_TEST(parallel_one_thread_allows_changes) { refusals(1); }
END_TEST

/* ---- hooks ---------------------------------------------------------------------------- */

#define MAXTR 20000
typedef struct trace_rec {
    tk_tick_id ids[MAXTR];
    int n;
    int off_thread;              /* hook calls not on the frame thread     */
    int prof_ticks, prof_thread_mismatch, prof_workers;
} trace_rec;

static trace_rec g_tr;

static void on_trace(void *ud, tk_tick_id id, void *target, tk_group g)
{
    (void)ud, (void)target, (void)g;
    if (!pthread_equal(pthread_self(), g_frame_thread))
        g_tr.off_thread++;
    if (g_tr.n < MAXTR)
        g_tr.ids[g_tr.n++] = id;
}

static void on_prof(void *ud, const tk_prof_event *ev)
{
    (void)ud;
    if (!pthread_equal(pthread_self(), g_frame_thread))
        g_tr.off_thread++;
    if (ev->kind != TK_PROF_TICK)
        return;
    g_tr.prof_ticks++;
    const cell *x = ev->target;
    if (x->thread != ev->thread)
        g_tr.prof_thread_mismatch++;
    g_tr.prof_workers += ev->thread != 0;
}

static void hooks_run(unsigned threads, trace_rec *out)
{
    memset(&g_tr, 0, sizeof g_tr);
    tk_engine_t *e = engine(threads, SPLIT_ALL);
    tk_world_t *w = tk_engine_world(e);
    tk_class_id k = add_class(w, "cell", cell_tick, NULL, true);
    static cell cells[300];
    add_cells(w, k, cells, 300, true);
    tk_world_set_trace(w, on_trace, NULL);
    tk_profiler p = {0};
    p.fn = on_prof;
    p.each = true;
    ck_assert_int_eq(tk_world_set_profiler(w, &p), 0);
    for (int f = 0; f < 20; f++)
        ck_assert_int_eq(tk_engine_frame(e), 0);
    *out = g_tr;
    tk_engine_free(e);
}

START_TEST(parallel_hooks_see_one_thread_order)
{
    g_frame_thread = pthread_self();
    atomic_store(&g_seen_worker, 0);
    static trace_rec one, many;
    hooks_run(1, &one);
    hooks_run(4, &many);
    ck_assert_int_eq(one.n, 300 * 20);
    ck_assert_int_eq(many.n, one.n);
    for (int i = 0; i < one.n; i++)
        CHECK(one.ids[i] == many.ids[i], "trace entry %d differs", i);
    ck_assert_int_eq(many.off_thread, 0);
    ck_assert_int_eq(many.prof_ticks, 300 * 20);
    /* Each tick's event names the thread the tick itself saw. */
    ck_assert_int_eq(many.prof_thread_mismatch, 0);
    ck_assert_int_eq(one.prof_workers, 0);
}
END_TEST

/* Slow-tick reports of work done on workers reach the frame thread. */
static int g_slow_reports, g_slow_off_thread;

static void on_slow(void *ud, tk_tick_id id, void *target, tk_class_id cls, uint64_t ns,
                    size_t n)
{
    (void)ud, (void)id, (void)target, (void)cls, (void)ns, (void)n;
    g_slow_reports++;
    if (!pthread_equal(pthread_self(), g_frame_thread))
        g_slow_off_thread++;
}

static void slow_cell_tick(void *t, float dt, tk_tick_ctx *c)
{
    cell *x = t;
    if (x->wait) {
        /* Slower than the 1 ms threshold, whatever the machine. */
        uint64_t end = tk_clock_now_ns() + 2000000;
        while (tk_clock_now_ns() < end)
            ;
    }
    cell_tick(t, dt, c);
}

START_TEST(parallel_slow_ticks_reported_on_frame_thread)
{
    g_frame_thread = pthread_self();
    g_slow_reports = g_slow_off_thread = 0;
    tk_engine_t *e = engine(2, SPLIT_ALL);
    tk_world_t *w = tk_engine_world(e);
    tk_class_id k = add_class(w, "slowcell", slow_cell_tick, NULL, true);
    static cell cells[40];
    add_cells(w, k, cells, 40, false);
    cells[17].wait = true;
    tk_world_set_slow_tick(w, 1000000, on_slow, NULL);
    for (int f = 0; f < 5; f++)
        ck_assert_int_eq(tk_engine_frame(e), 0);
    ck_assert_int_ge(g_slow_reports, 5);
    ck_assert_int_eq(g_slow_off_thread, 0);
    tk_engine_free(e);
}
END_TEST

/* ---- small runs, thread count ----------------------------------------------------------- */

START_TEST(parallel_small_runs_stay_on_frame_thread)
{
    tk_engine_t *e = engine(2, 1e6); /* a threshold no run reaches */
    tk_world_t *w = tk_engine_world(e);
    tk_class_id k = add_class(w, "cheap", noop_tick, NULL, true);
    for (int i = 0; i < 100; i++) {
        tk_tick_desc d = {0};
        d.cls = k;
        tk_tick_spec_default(&d.spec);
        tk_tick_id id;
        ck_assert_int_eq(tk_tick_register(w, &d, &id), 0);
    }
    for (int f = 0; f < 50; f++) {
        ck_assert_int_eq(tk_engine_frame(e), 0);
        tk_world_frame_stats fs;
        tk_world_get_frame_stats(w, &fs);
        ck_assert_uint_eq(fs.sections, 1);
        ck_assert_uint_eq(fs.sections_split, 0);
        ck_assert_uint_eq(fs.par_ticks, 100);
        ck_assert_uint_eq(fs.worker_ticks, 0);
    }
    tk_engine_free(e);
}
END_TEST

static tk_engine_t *g_e;
static int g_set_threads_rc;

static void set_threads_tick(void *t, float dt, tk_tick_ctx *c)
{
    (void)t, (void)dt, (void)c;
    g_set_threads_rc = tk_engine_set_threads(g_e, 3);
}

START_TEST(parallel_threads_change_between_frames)
{
    g_e = engine(1, SPLIT_ALL);
    tk_world_t *w = tk_engine_world(g_e);
    tk_class_id k = add_class(w, "setter", set_threads_tick, NULL, false);
    tk_class_id m = add_class(w, "cheap", noop_tick, NULL, true);
    tk_tick_desc d = {0};
    d.cls = k;
    tk_tick_spec_default(&d.spec);
    tk_tick_id id;
    ck_assert_int_eq(tk_tick_register(w, &d, &id), 0);
    d.cls = m;
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(tk_tick_register(w, &d, &id), 0);
    ck_assert_int_eq(tk_engine_frame(g_e), 0);
    ck_assert_int_eq(g_set_threads_rc, TK_ESTATE); /* inside a frame */
    ck_assert_uint_eq(tk_engine_threads(g_e), 1);
    ck_assert_int_eq(tk_engine_set_threads(g_e, TK_ENGINE_MAX_THREADS + 1), TK_EINVAL);
    ck_assert_int_eq(tk_engine_set_split_min(g_e, -1), TK_EINVAL);
    ck_assert_int_eq(tk_engine_set_split_min(g_e, 0), TK_EINVAL);
    unsigned seq[] = {4, 2, 1, 3, 0};
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
        ck_assert_int_eq(tk_engine_set_threads(g_e, seq[i]), 0);
        ck_assert_uint_eq(tk_engine_threads(g_e), seq[i] ? seq[i] : 1);
        ck_assert_int_eq(tk_engine_frame(g_e), 0);
        tk_world_frame_stats fs;
        tk_world_get_frame_stats(w, &fs);
        ck_assert_uint_eq(fs.ticks_run, 11);
        ck_assert_uint_eq(fs.sections, seq[i] > 1 ? 1 : 0);
    }
    tk_engine_desc bd;
    tk_engine_desc_default(&bd);
    bd.threads = TK_ENGINE_MAX_THREADS + 1;
    tk_engine_t *x;
    ck_assert_int_eq(tk_engine_new(&bd, &x), TK_EINVAL);
    tk_engine_desc_default(&bd);
    bd.split_min_us = -1;
    ck_assert_int_eq(tk_engine_new(&bd, &x), TK_EINVAL);
    tk_engine_free(g_e);
}
END_TEST

static Suite *parallel_suite(void)
{
    Suite *s = suite_create("parallel");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, parallel_identical_2_threads);
    tcase_add_test(tc, parallel_identical_4_threads);
    tcase_add_test(tc, parallel_identical_default_split);
    tcase_add_test(tc, parallel_workers_take_chunks);
    tcase_add_test(tc, parallel_refuses_changes);
    tcase_add_test(tc, parallel_one_thread_allows_changes);
    tcase_add_test(tc, parallel_hooks_see_one_thread_order);
    tcase_add_test(tc, parallel_slow_ticks_reported_on_frame_thread);
    tcase_add_test(tc, parallel_small_runs_stay_on_frame_thread);
    tcase_add_test(tc, parallel_threads_change_between_frames);
    suite_add_tcase(s, tc);
    return s;
}

TK_CHECK_MAIN(parallel_suite)
