/*
 * test_tick_lanes.c - how the scheduler runs what it scheduled (tick.c):
 * interval functions that come due together run in batches (due sets) with
 * exactly the results of running them one by one; a function waits for an
 * interval prerequisite statically unless the prerequisite can move it;
 * slow-tick detection times runs and still names the slow function; lane
 * compaction after a mass removal spreads over frames without changing what
 * ticks; a class whose targets hold their slots runs as any other.
 *
 * Time is fixed-dt frames; where durations matter (slow ticks) the engine's
 * clock is a fake one that moves 100 ns per read, and a slow function moves
 * it further, so nothing depends on the machine's speed.
 */
#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickd/tickd.h"
#include "check_main.h"

static tk_engine_t *E;
static tk_world_t *W;

static uint64_t g_now;
static uint64_t g_clock_reads;
static uint64_t fake_clock(void *ud)
{
    (void)ud;
    g_clock_reads++;
    return g_now += 100;
}

static void setup_clock(double dt, bool fake)
{
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    d.tick_rate = 0;
    d.fixed_dt = dt;
    if (fake)
        d.clock = fake_clock;
    g_now = 1000000000ull;
    g_clock_reads = 0;
    ck_assert_int_eq(tk_engine_new(&d, &E), 0);
    W = tk_engine_world(E);
}

static void teardown(void)
{
    tk_engine_free(E);
    E = NULL;
    W = NULL;
}

static void frame(void) { ck_assert_int_eq(tk_engine_frame(E), 0); }

static uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return (uint32_t)((x * 0x2545F4914F6CDD2Dull) >> 33) % n;
}

/* ======================================================================== */
/* Twins: the same functions in a class with a batch form and in one without */
/* ======================================================================== */

#define TW_N 240
#define TW_LOG 8192

typedef struct twin {
    int side;       /* 0: class with a batch form, 1: without      */
    int idx;        /* slot of the scenario                         */
    uint32_t slot;  /* its function's slot + 1, in scenarios where its
                       class keeps it there (tk_tick_class_slot_in_target) */
} twin;

typedef struct tw_rec {
    int idx;
    int group;
    float dt;
} tw_rec;

typedef struct tw_slot {
    bool alive, enabled;
    tk_group group;
    double interval;
    bool batch, ewp, hipri;
    float dilation;
    int pre;                    /* prerequisite slot, -1 = none         */
} tw_slot;

static twin g_tw[2][2][TW_N];   /* [buffer][side][slot]: targets move between buffers */
static int g_twb[2][TW_N];      /* the buffer each target is in now          */
static bool g_tw_sit[2];        /* the side's class keeps slots in targets   */
static tk_tick_id g_tid[2][TW_N];
static tw_slot g_sl[TW_N];
static int g_nsl;
static tw_rec g_twlog[2][TW_LOG];
static int g_ntw[2];
static tk_class_id g_twcls[2];
static long g_iv_batched;       /* interval functions ticked in a batch of >= 2 */

static void tw_tick(void *target, float dt, tk_tick_ctx *ctx)
{
    twin *t = target;
    CHECK(t->side >= 0, "a stale target ticked");
    CHECK(g_ntw[t->side] < TW_LOG, "more than %d ticks in a frame", TW_LOG);
    g_twlog[t->side][g_ntw[t->side]++] = (tw_rec){t->idx, (int)ctx->group, dt};
}

static void tw_batch(void *const *targets, size_t n, float dt, tk_tick_ctx *ctx)
{
    ck_assert_uint_eq(ctx->self, TK_TICK_NONE);
    for (size_t i = 0; i < n; i++) {
        twin *t = targets[i];
        if (n > 1 && g_sl[t->idx].interval > 0)
            g_iv_batched++;
        tw_tick(targets[i], dt, ctx);
    }
}

static void tw_register(int i)
{
    const tw_slot *s = &g_sl[i];
    for (int side = 0; side < 2; side++) {
        tk_tick_desc d = {0};
        d.cls = g_twcls[side];
        d.target = &g_tw[g_twb[side][i]][side][i];
        tk_tick_spec_default(&d.spec);
        d.spec.group = s->group;
        d.spec.interval = s->interval;
        d.spec.batch = s->batch;
        d.spec.even_when_paused = s->ewp;
        d.spec.high_priority = s->hipri;
        d.spec.enabled = s->enabled;
        d.dilation = s->dilation;
        if (s->pre >= 0) {
            d.prerequisites = &g_tid[side][s->pre];
            d.n_prerequisites = 1;
        }
        ck_assert_int_eq(tk_tick_register(W, &d, &g_tid[side][i]), 0);
    }
}

static void tw_new_slot(void)
{
    static const double ivs[] = {0, 0, 0.05, 0.1, 0.1, 0.1, 0.25, 1.0 / 60, 0.03, 0.5};
    int i = g_nsl++;
    tw_slot *s = &g_sl[i];
    s->alive = true;
    s->enabled = rnd(10) != 0;
    s->group = (tk_group)rnd(7);
    s->interval = ivs[rnd(sizeof ivs / sizeof ivs[0])];
    s->batch = rnd(5) != 0;
    s->ewp = rnd(10) == 0;
    s->hipri = rnd(10) == 0;
    s->dilation = rnd(10) == 0 ? 2.0f : 1.0f;
    s->pre = (i > 0 && rnd(5) == 0) ? (int)rnd((uint32_t)i) : -1;
    if (s->pre >= 0 && !g_sl[s->pre].alive)
        s->pre = -1;
    tw_register(i);
}

/* A random change between frames, applied to both sides alike. */
static void tw_change(void)
{
    int i = (int)rnd((uint32_t)g_nsl);
    tw_slot *s = &g_sl[i];
    switch (rnd(8)) {
    case 0:
        if (!s->alive)
            break;
        s->enabled = !s->enabled;
        for (int side = 0; side < 2; side++)
            ck_assert_int_eq(tk_tick_set_enabled(W, g_tid[side][i], s->enabled), 0);
        break;
    case 1: {
        if (!s->alive)
            break;
        static const double ivs[] = {0.05, 0.1, 0.2, 0.03};
        double iv = ivs[rnd(4)];
        if (iv == s->interval)
            break;
        s->interval = iv;
        for (int side = 0; side < 2; side++) {
            tk_tick_info info;
            ck_assert_int_eq(tk_tick_get(W, g_tid[side][i], &info), 0);
            info.spec.interval = iv;
            ck_assert_int_eq(tk_tick_set_spec(W, g_tid[side][i], &info.spec), 0);
        }
        break;
    }
    case 2:
        if (!s->alive)
            break;
        s->alive = false;
        for (int side = 0; side < 2; side++)
            ck_assert_int_eq(tk_tick_unregister(W, g_tid[side][i]), 0);
        for (int k = 0; k < g_nsl; k++)
            if (g_sl[k].pre == i)
                g_sl[k].pre = -1;
        break;
    case 3:
        tk_world_set_paused(W, !tk_world_paused(W));
        break;
    case 4:
        if (tk_world_paused(W))
            ck_assert_int_eq(tk_world_step(W, 1 + rnd(2)), 0);
        break;
    case 5: {
        static const double dil[] = {1, 1, 0.5, 2, 3};
        ck_assert_int_eq(tk_world_set_time_dilation(W, dil[rnd(5)], NULL), 0);
        break;
    }
    case 6:
        if (g_nsl < TW_N)
            tw_new_slot();
        break;
    case 7:
        /* The targets move (as the entity layer's rows do). */
        if (!s->alive)
            break;
        for (int side = 0; side < 2; side++) {
            int from = g_twb[side][i], to = !from;
            g_tw[to][side][i] = g_tw[from][side][i];
            g_tw[to][side][i].slot = 0;
            ck_assert_int_eq(tk_tick_set_target(W, g_tid[side][i], &g_tw[to][side][i]), 0);
            g_tw[from][side][i] = (twin){-1, -1, 0}; /* a stale target shows */
            g_twb[side][i] = to;
        }
        break;
    default:
        break;
    }
}

/* What the two sides ran this frame must be the same, in the same order. */
static void tw_compare(int f)
{
    CHECK(g_ntw[0] == g_ntw[1], "frame %d: %d ticks batched, %d one by one", f,
                  g_ntw[0], g_ntw[1]);
    for (int k = 0; k < g_ntw[0]; k++) {
        const tw_rec *a = &g_twlog[0][k], *b = &g_twlog[1][k];
        CHECK(a->idx == b->idx && a->group == b->group &&
                          memcmp(&a->dt, &b->dt, sizeof a->dt) == 0,
                      "frame %d tick %d: batched slot %d group %d dt %.9g, one by one slot %d "
                      "group %d dt %.9g",
                      f, k, a->idx, a->group, (double)a->dt, b->idx, b->group, (double)b->dt);
    }
    for (int i = 0; i < g_nsl; i++) {
        if (!g_sl[i].alive)
            continue;
        for (int side = 0; side < 2; side++) {
            const twin *t = &g_tw[g_twb[side][i]][side][i];
            if (g_tw_sit[side])
                CHECK(t->slot && tk_tick_id_at(W, t->slot - 1) == g_tid[side][i],
                      "frame %d slot %d side %d: the target holds slot + 1 = %u", f, i, side,
                      t->slot);
            else
                CHECK(t->slot == 0, "frame %d slot %d side %d: a slot written", f, i, side);
        }
        tk_tick_info x, y;
        CHECK(tk_tick_get(W, g_tid[0][i], &x) == 0, "slot %d", i);
        CHECK(tk_tick_get(W, g_tid[1][i], &y) == 0, "slot %d", i);
        CHECK(x.ticks == y.ticks && x.last_frame == y.last_frame &&
                          x.last_dt == y.last_dt && x.accum_dt == y.accum_dt &&
                          x.state == y.state && x.cooldown == y.cooldown &&
                          x.actual_group == y.actual_group,
                      "frame %d slot %d: counters %llu/%llu last %llu/%llu accum %g/%g state %d/%d "
                      "cooldown %g/%g",
                      f, i, (unsigned long long)x.ticks, (unsigned long long)y.ticks,
                      (unsigned long long)x.last_frame, (unsigned long long)y.last_frame,
                      x.accum_dt, y.accum_dt, (int)x.state, (int)y.state, x.cooldown,
                      y.cooldown);
    }
}

/*
 * Seeded scenarios: functions of every kind (intervals with different
 * phases, prerequisites, batch = false, even_when_paused, custom dilation,
 * high priority, disabled) registered in waves, changed between frames
 * (targets moved too), with pause frames, world steps and dilation changes.
 * Each function exists twice: in a class with a batch form and in one
 * without.  Every frame both sides must run the same functions in the same
 * groups and order with the same dt, and keep the same counters; due
 * interval functions must really have come in batches.  In a third of the
 * scenarios the class without a batch form keeps its functions' slots in
 * its targets (lanes without ids), in another third the batched one.
 */
START_TEST(lanes_due_sets_batched_like_one_by_one)
{
    setup_clock(1.0 / 60, false);
    tk_tick_class_desc b = {"twin_batch", tw_tick, tw_batch, false};
    tk_tick_class_desc o = {"twin_one", tw_tick, NULL, false};
    ck_assert_int_eq(tk_tick_class_register(W, &b, &g_twcls[0]), 0);
    ck_assert_int_eq(tk_tick_class_register(W, &o, &g_twcls[1]), 0);
    for (int side = 0; side < 2; side++) {
        g_tw_sit[side] = _i % 3 == 2 - side;
        if (g_tw_sit[side])
            ck_assert_int_eq(
                tk_tick_class_slot_in_target(W, g_twcls[side], offsetof(twin, slot)), 0);
    }
    rng_state = 0x9e3779b97f4a7c15ull * (uint64_t)(_i + 1);
    g_nsl = 0;
    g_iv_batched = 0;
    for (int i = 0; i < TW_N; i++)
        for (int side = 0; side < 2; side++) {
            g_tw[0][side][i] = g_tw[1][side][i] = (twin){side, i, 0};
            g_twb[side][i] = 0;
        }
    int mixed_frames = 0;
    for (int f = 0; f < 400; f++) {
        if (f < 40 && f % 8 == 0) /* waves: different phases */
            for (int k = 0; k < 30 && g_nsl < TW_N; k++)
                tw_new_slot();
        else if (f >= 40)
            for (int k = (int)rnd(4); k > 0; k--)
                tw_change();
        g_ntw[0] = g_ntw[1] = 0;
        frame();
        tw_compare(f);
        /* A group whose interval functions ticked with different dts. */
        for (int g = 0; g < 7; g++) {
            float first = -1;
            for (int k = 0; k < g_ntw[0]; k++) {
                const tw_rec *r = &g_twlog[0][k];
                if (r->group != g || g_sl[r->idx].interval <= 0 || g_sl[r->idx].ewp ||
                    g_sl[r->idx].dilation != 1.0f)
                    continue;
                if (first < 0) {
                    first = r->dt;
                } else if (r->dt != first) {
                    mixed_frames++;
                    break;
                }
            }
        }
    }
    ck_assert_int_gt(g_iv_batched, 20);
    ck_assert_int_gt(mixed_frames, 0);
    teardown();
}
END_TEST

/* ---- mid-frame views of due-set members ---------------------------------------- */

typedef struct probe {
    int ticks;
    float last_dt;
    tk_tick_id watch;            /* function looked at from this tick    */
    tk_tick_info seen;           /* what tk_tick_get said then           */
    bool disable;                /* disable `watch` from this tick       */
    bool enable;                 /* and enable it again                  */
} probe;

static int g_probe_batches;

static void probe_tick(void *target, float dt, tk_tick_ctx *ctx)
{
    probe *p = target;
    p->ticks++;
    p->last_dt = dt;
    if (p->watch) {
        ck_assert_int_eq(tk_tick_get(ctx->world, p->watch, &p->seen), 0);
        if (p->disable)
            ck_assert_int_eq(tk_tick_set_enabled(ctx->world, p->watch, false), 0);
        if (p->enable)
            ck_assert_int_eq(tk_tick_set_enabled(ctx->world, p->watch, true), 0);
        p->disable = p->enable = false;
    }
}

static void probe_batch(void *const *targets, size_t n, float dt, tk_tick_ctx *ctx)
{
    g_probe_batches++;
    for (size_t i = 0; i < n; i++) {
        probe *p = targets[i];
        p->ticks++;
        p->last_dt = dt;
    }
    (void)ctx;
}

static tk_tick_id probe_reg(tk_class_id cls, probe *p, tk_group g, double interval)
{
    tk_tick_desc d = {0};
    d.cls = cls;
    d.target = p;
    tk_tick_spec_default(&d.spec);
    d.spec.group = g;
    d.spec.interval = interval;
    tk_tick_id id;
    ck_assert_int_eq(tk_tick_register(W, &d, &id), 0);
    return id;
}

/*
 * Members of a due set seen from a tick earlier in the frame they are due:
 * their counters do not count this frame's tick yet, and they are cooling
 * down; seen afterwards, they do.  Disabling one before its turn cancels its
 * tick (the others of its set still run, in a batch); enabling it again in
 * the same frame ticks it after all (Unreal's task re-checks the flag).
 */
START_TEST(lanes_due_set_members_mid_frame)
{
    setup_clock(0.1, false);
    tk_tick_class_desc a = {"watcher", probe_tick, NULL, false};
    tk_tick_class_desc b = {"member", probe_tick, probe_batch, false};
    tk_class_id ca, cb;
    ck_assert_int_eq(tk_tick_class_register(W, &a, &ca), 0);
    ck_assert_int_eq(tk_tick_class_register(W, &b, &cb), 0);
    probe w1 = {0}, m[8] = {{0}};
    tk_tick_id mid[8];
    probe_reg(ca, &w1, TK_GROUP_PRE_PHYSICS, 0);
    for (int i = 0; i < 8; i++)
        mid[i] = probe_reg(cb, &m[i], TK_GROUP_POST_PHYSICS, 0.25);
    frame(); /* frame 0: first ticks (a new set, batched) */
    ck_assert_int_eq(g_probe_batches, 1);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(m[i].ticks, 1);
    /* Due 0.35: frame 3 (time 0.4).  Watch m[3] from pre_physics then. */
    frame();
    frame();
    w1.watch = mid[3];
    frame();
    ck_assert_int_eq(w1.seen.ticks, 1);
    ck_assert_int_eq(w1.seen.state, TK_TICK_COOLING_DOWN);
    ck_assert_int_eq(w1.seen.last_frame, 0);
    tk_tick_info info;
    ck_assert_int_eq(tk_tick_get(W, mid[3], &info), 0);
    ck_assert_int_eq(info.ticks, 2);
    ck_assert_int_eq(info.last_frame, 3);
    ck_assert_float_eq_tol(info.last_dt, 0.3f, 1e-6);
    ck_assert_double_eq_tol(info.accum_dt, 0.4, 1e-6);
    ck_assert_float_eq_tol(m[3].last_dt, 0.3f, 1e-6);
    ck_assert_int_eq(g_probe_batches, 2);
    /* Next due 0.6: not in frame 5 (time 0.6 is not past it), in frame 6. */
    frame(); /* frame 4 */
    frame(); /* frame 5 */
    w1.watch = mid[5];
    w1.disable = true;
    frame(); /* frame 6: m[5] disabled before its turn */
    ck_assert_int_eq(m[5].ticks, 2);
    ck_assert_int_eq(m[4].ticks, 3);
    ck_assert_int_eq(m[6].ticks, 3);
    ck_assert_int_eq(tk_tick_get(W, mid[5], &info), 0);
    ck_assert_int_eq(info.ticks, 2);
    ck_assert_int_eq(info.state, TK_TICK_DISABLED);
    /* Re-enabled: it ticks at once (next frame), then cools on its own
     * phase; the set goes on without it. */
    ck_assert_int_eq(tk_tick_set_enabled(W, mid[5], true), 0);
    frame(); /* frame 7 */
    ck_assert_int_eq(m[5].ticks, 3);
    ck_assert_float_eq_tol(m[5].last_dt, 0.1f, 1e-6);
    /* Disabled and enabled again before its turn in a due frame: it ticks,
     * with the frame's dt (disabling dropped its interval phase). */
    for (int f = 0; f < 3; f++)
        frame(); /* frames 8..10: the set is due in frame 8 (0.85 < 0.9), then 1.1 */
    int before = m[2].ticks;
    w1.watch = mid[2];
    w1.disable = true;
    w1.enable = true;
    frame(); /* frame 11 (1.2): the set is due */
    ck_assert_int_eq(m[2].ticks, before + 1);
    ck_assert_int_eq(m[2].ticks, m[1].ticks);
    ck_assert_float_eq_tol(m[1].last_dt, 0.3f, 1e-6);
    ck_assert_float_eq_tol(m[2].last_dt, 0.1f, 1e-6);
    teardown();
}
END_TEST

/*
 * Queries of a due-set member: cooling down with its set's remaining time,
 * counted among the cooling ones; a snapshot of it (tk_tick_save) restores
 * into another world to the same phase and the same next dt.
 */
START_TEST(lanes_due_set_queries_and_restore)
{
    setup_clock(0.1, false);
    tk_tick_class_desc b = {"member", probe_tick, probe_batch, false};
    tk_class_id cb;
    ck_assert_int_eq(tk_tick_class_register(W, &b, &cb), 0);
    probe m[4] = {{0}};
    tk_tick_id id[4];
    for (int i = 0; i < 4; i++)
        id[i] = probe_reg(cb, &m[i], TK_GROUP_PRE_PHYSICS, 0.35);
    frame(); /* time 0.1: first ticks, due 0.45 */
    frame(); /* 0.2 */
    tk_tick_info info;
    ck_assert_int_eq(tk_tick_get(W, id[2], &info), 0);
    ck_assert_int_eq(info.state, TK_TICK_COOLING_DOWN);
    ck_assert_double_eq_tol(info.cooldown, 0.25, 1e-9);
    tk_tick_counts c;
    tk_tick_get_counts(W, &c);
    ck_assert_uint_eq(c.cooling_down, 4);
    ck_assert_uint_eq(c.enabled, 0);
    tk_tick_restore st;
    ck_assert_int_eq(tk_tick_save(W, id[2], &st), 0);
    ck_assert_double_eq_tol(st.cooldown, 0.25, 1e-9);
    ck_assert_double_eq_tol(st.since_last_tick, 0.1, 1e-9);
    ck_assert_int_eq(st.ticks, 1);

    /* Another world at the same clocks gets it back. */
    tk_engine_t *e2;
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    d.tick_rate = 0;
    d.fixed_dt = 0.1;
    ck_assert_int_eq(tk_engine_new(&d, &e2), 0);
    tk_world_t *w2 = tk_engine_world(e2);
    ck_assert_int_eq(tk_world_restore_time(w2, 2, 0.2, 0.2, 0.2), 0);
    tk_class_id cb2;
    ck_assert_int_eq(tk_tick_class_register(w2, &b, &cb2), 0);
    probe r = {0};
    tk_tick_desc td = {0};
    td.cls = cb2;
    td.target = &r;
    tk_tick_spec_default(&td.spec);
    td.spec.interval = 0.35;
    tk_tick_id rid;
    ck_assert_int_eq(tk_tick_register(w2, &td, &rid), 0);
    ck_assert_int_eq(tk_tick_restore_state(w2, rid, &st), 0);
    for (int f = 0; f < 8; f++) {
        int before = m[2].ticks;
        frame();
        ck_assert_int_eq(tk_engine_frame(e2), 0);
        ck_assert_int_eq(r.ticks, m[2].ticks - 1); /* m[2] ticked once before the save */
        if (m[2].ticks != before)
            ck_assert_float_eq(r.last_dt, m[2].last_dt);
    }
    ck_assert_int_ge(m[2].ticks, 3);
    tk_tick_info a2, b2;
    ck_assert_int_eq(tk_tick_get(W, id[2], &a2), 0);
    ck_assert_int_eq(tk_tick_get(w2, rid, &b2), 0);
    ck_assert_int_eq(a2.ticks, b2.ticks);
    ck_assert_int_eq(a2.last_frame, b2.last_frame);
    ck_assert_float_eq(a2.last_dt, b2.last_dt);
    ck_assert_double_eq_tol(a2.accum_dt, b2.accum_dt, 1e-9);
    ck_assert_double_eq_tol(a2.cooldown, b2.cooldown, 1e-9);
    ck_assert_float_eq(m[2].last_dt, r.last_dt);
    tk_engine_free(e2);
    teardown();
}
END_TEST

/* ======================================================================== */
/* Interval prerequisites: static unless they move the function             */
/* ======================================================================== */

#define ORD_MAX 64
static const char *g_ord[ORD_MAX];
static int g_nord;

typedef struct named {
    const char *name;
    int ticks;
} named;

static void named_tick(void *target, float dt, tk_tick_ctx *ctx)
{
    (void)dt;
    (void)ctx;
    named *n = target;
    n->ticks++;
    if (g_nord < ORD_MAX)
        g_ord[g_nord++] = n->name;
}

static int ord_of(const char *name)
{
    for (int i = 0; i < g_nord; i++)
        if (strcmp(g_ord[i], name) == 0)
            return i;
    return -1;
}

static tk_tick_id named_reg(tk_class_id cls, named *n, tk_group g, double interval, bool hipri,
                            const tk_tick_id *pre)
{
    tk_tick_desc d = {0};
    d.cls = cls;
    d.target = n;
    tk_tick_spec_default(&d.spec);
    d.spec.group = g;
    d.spec.interval = interval;
    d.spec.high_priority = hipri;
    if (pre) {
        d.prerequisites = pre;
        d.n_prerequisites = 1;
    }
    tk_tick_id id;
    ck_assert_int_eq(tk_tick_register(W, &d, &id), 0);
    return id;
}

/*
 * D waits for P, an interval function of its own group and priority: P's
 * ticking never moves D, so D stays in its lane (by depth: after P when both
 * tick, and before Z, a later class at the same depth, every frame).  H, a
 * high-priority function waiting for a normal-priority interval function of
 * its group, is moved by it (to the normal band, after it) in the frames it
 * ticks and runs first in the others: it is queued per frame.
 */
START_TEST(lanes_interval_prerequisite_static_unless_it_moves)
{
    setup_clock(0.1, false);
    tk_tick_class_desc ka = {"ka", named_tick, NULL, false}, kb = {"kb", named_tick, NULL, false};
    tk_class_id ca, cb;
    ck_assert_int_eq(tk_tick_class_register(W, &ka, &ca), 0);
    ck_assert_int_eq(tk_tick_class_register(W, &kb, &cb), 0);
    named q = {"Q", 0}, p = {"P", 0}, dd = {"D", 0}, z = {"Z", 0}, h = {"H", 0}, n = {"N", 0};
    tk_tick_id qid = named_reg(ca, &q, TK_GROUP_PRE_PHYSICS, 0, false, NULL);
    tk_tick_id pid = named_reg(cb, &p, TK_GROUP_PRE_PHYSICS, 0.25, false, NULL);
    named_reg(ca, &dd, TK_GROUP_PRE_PHYSICS, 0, false, &pid);
    named_reg(cb, &z, TK_GROUP_PRE_PHYSICS, 0, false, &qid);
    named_reg(ca, &h, TK_GROUP_PRE_PHYSICS, 0, true, &pid);
    named_reg(ca, &n, TK_GROUP_PRE_PHYSICS, 0, false, NULL);
    int p_frames = 0, other_frames = 0;
    for (int f = 0; f < 12; f++) {
        int pt = p.ticks;
        g_nord = 0;
        frame();
        bool p_ticked = p.ticks != pt;
        ck_assert_int_ge(ord_of("D"), 0);
        ck_assert_int_lt(ord_of("D"), ord_of("Z"));
        if (p_ticked) {
            p_frames++;
            ck_assert_int_lt(ord_of("P"), ord_of("D"));
            ck_assert_int_lt(ord_of("P"), ord_of("H"));
            ck_assert_int_lt(ord_of("N"), ord_of("H")); /* normal band, after the lanes */
        } else {
            other_frames++;
            ck_assert_int_eq(ord_of("H"), 0); /* high priority first */
        }
    }
    ck_assert_int_gt(p_frames, 1);
    ck_assert_int_gt(other_frames, 1);
    tk_tick_info info;
    ck_assert_int_eq(tk_tick_get(W, pid, &info), 0);
    ck_assert_int_eq(info.ticks, (uint64_t)p_frames);
    teardown();
}
END_TEST

/* ======================================================================== */
/* Slow-tick detection                                                      */
/* ======================================================================== */

typedef struct slowt {
    int idx;
    uint64_t cost_ns;            /* fake time this tick takes            */
} slowt;

typedef struct slow_rep {
    tk_tick_id id;
    void *target;
    uint64_t ns;
    size_t n;
    uint64_t frame;
} slow_rep;

static slow_rep g_rep[256];
static int g_nrep;

static void slow_cb(void *ud, tk_tick_id id, void *target, tk_class_id cls, uint64_t ns, size_t n)
{
    (void)ud;
    (void)cls;
    if (g_nrep < 256)
        g_rep[g_nrep++] = (slow_rep){id, target, ns, n, tk_world_frame(W)};
}

static void slowt_tick(void *target, float dt, tk_tick_ctx *ctx)
{
    (void)dt;
    (void)ctx;
    g_now += ((slowt *)target)->cost_ns;
}

static void slowt_batch(void *const *targets, size_t n, float dt, tk_tick_ctx *ctx)
{
    for (size_t i = 0; i < n; i++)
        slowt_tick(targets[i], dt, ctx);
}

/*
 * 5,000 cheap functions of a class without a batch form, one of them slow
 * (10 ms against a 5 ms threshold).  The clock is not read per function: a
 * frame reads it far fewer times than it ticks.  The first frame it is slow
 * in reports the run that held it (n > 1, naming the run's first function);
 * from the next frame on that run's functions are timed one by one, so the
 * slow one is named alone (n = 1) with its own duration.  A function slow on
 * its own in a later frame elsewhere in the lane is likewise named one frame
 * after its run is reported.
 */
START_TEST(lanes_slow_tick_runs_then_named)
{
    setup_clock(0.01, true);
    tk_tick_class_desc k = {"cheap", slowt_tick, NULL, false};
    tk_class_id cls;
    ck_assert_int_eq(tk_tick_class_register(W, &k, &cls), 0);
    enum { N = 5000, SLOW = 3210 };
    slowt *t = calloc(N, sizeof *t);
    tk_tick_id *ids = calloc(N, sizeof *ids);
    for (int i = 0; i < N; i++) {
        t[i].idx = i;
        tk_tick_desc d = {0};
        d.cls = cls;
        d.target = &t[i];
        tk_tick_spec_default(&d.spec);
        ck_assert_int_eq(tk_tick_register(W, &d, &ids[i]), 0);
    }
    tk_world_set_slow_tick(W, 5000000, slow_cb, NULL);
    frame();
    frame();
    ck_assert_int_eq(g_nrep, 0);
    uint64_t reads = g_clock_reads;
    frame();
    ck_assert_uint_lt(g_clock_reads - reads, N / 16);

    t[SLOW].cost_ns = 10000000;
    g_nrep = 0;
    frame();
    ck_assert_int_eq(g_nrep, 1);
    ck_assert_uint_gt(g_rep[0].n, 1);
    int first = ((slowt *)g_rep[0].target)->idx;
    ck_assert_int_le(first, SLOW);
    ck_assert_int_gt(first + (int)g_rep[0].n, SLOW);
    ck_assert_uint_eq(g_rep[0].id, ids[first]);
    ck_assert_uint_ge(g_rep[0].ns, 10000000);
    g_nrep = 0;
    frame();
    ck_assert_int_eq(g_nrep, 1);
    ck_assert_uint_eq(g_rep[0].n, 1);
    ck_assert_uint_eq(g_rep[0].id, ids[SLOW]);
    ck_assert_ptr_eq(g_rep[0].target, &t[SLOW]);
    ck_assert_uint_ge(g_rep[0].ns, 10000000);
    ck_assert_uint_lt(g_rep[0].ns, 10010000);

    /* Another one, far from the first. */
    t[SLOW].cost_ns = 0;
    t[40].cost_ns = 7000000;
    g_nrep = 0;
    frame();
    frame();
    ck_assert_int_eq(g_nrep, 2);
    ck_assert_uint_gt(g_rep[0].n, 1);
    ck_assert_uint_eq(g_rep[1].n, 1);
    ck_assert_uint_eq(g_rep[1].id, ids[40]);
    free(t);
    free(ids);
    teardown();
}
END_TEST

/*
 * Functions that cost close to the threshold are timed one by one from
 * their second run on, so one over it is named in the frame it is slow in;
 * a batch is timed per call and reported with its size and first function;
 * functions ticked outside lanes (one waiting for an interval function of a
 * later group, queued per frame) are named too.
 */
START_TEST(lanes_slow_tick_costly_class_batches_and_extras)
{
    setup_clock(0.1, true);
    tk_tick_class_desc k = {"costly", slowt_tick, NULL, false};
    tk_tick_class_desc kb = {"batched", slowt_tick, slowt_batch, false};
    tk_class_id cls, cbat;
    ck_assert_int_eq(tk_tick_class_register(W, &k, &cls), 0);
    ck_assert_int_eq(tk_tick_class_register(W, &kb, &cbat), 0);
    slowt t[20] = {{0}}, bt[10] = {{0}}, late = {0}, dep = {0};
    tk_tick_id ids[20], bids[10], lid, did;
    for (int i = 0; i < 20; i++) {
        t[i].cost_ns = 2000000; /* 2 ms each: 40 ms a frame, none slow */
        tk_tick_desc d = {0};
        d.cls = cls;
        d.target = &t[i];
        tk_tick_spec_default(&d.spec);
        ck_assert_int_eq(tk_tick_register(W, &d, &ids[i]), 0);
    }
    for (int i = 0; i < 10; i++) {
        bt[i].cost_ns = 100000;
        tk_tick_desc d = {0};
        d.cls = cbat;
        d.target = &bt[i];
        tk_tick_spec_default(&d.spec);
        d.spec.group = TK_GROUP_PRE_PHYSICS;
        ck_assert_int_eq(tk_tick_register(W, &d, &bids[i]), 0);
    }
    {
        tk_tick_desc d = {0};
        d.cls = cls;
        d.target = &late;
        tk_tick_spec_default(&d.spec);
        d.spec.group = TK_GROUP_POST_PHYSICS;
        d.spec.interval = 0.05; /* due every frame at dt 0.1 */
        ck_assert_int_eq(tk_tick_register(W, &d, &lid), 0);
        d.target = &dep;
        d.spec.group = TK_GROUP_PRE_PHYSICS;
        d.spec.interval = 0;
        d.prerequisites = &lid;
        d.n_prerequisites = 1;
        ck_assert_int_eq(tk_tick_register(W, &d, &did), 0);
    }
    tk_world_set_slow_tick(W, 5000000, slow_cb, NULL);
    frame();
    frame();
    ck_assert_int_eq(g_nrep, 0);
    t[7].cost_ns = 6000000;
    bt[4].cost_ns = 6000000;
    dep.cost_ns = 8000000;
    frame();
    bool named7 = false, batch = false, named_dep = false;
    for (int i = 0; i < g_nrep; i++) {
        if (g_rep[i].n == 1 && g_rep[i].id == ids[7])
            named7 = true;
        if (g_rep[i].n == 10 && g_rep[i].id == bids[0])
            batch = true;
        if (g_rep[i].n == 1 && g_rep[i].id == did)
            named_dep = true;
    }
    ck_assert_msg(named7 && batch && named_dep, "reports: %d (named7 %d batch %d dep %d)",
                  g_nrep, named7, batch, named_dep);
    ck_assert_int_eq(g_nrep, 3);
    /* Off: nothing reported, and the clock is read per group, not per run. */
    tk_world_set_slow_tick(W, 0, NULL, NULL);
    g_nrep = 0;
    frame();
    ck_assert_int_eq(g_nrep, 0);
    teardown();
}
END_TEST

/* ======================================================================== */
/* Lane compaction after mass removal                                       */
/* ======================================================================== */

static uint64_t g_seq_ctr;

typedef struct seqt {
    uint64_t last;               /* g_seq_ctr at its last tick           */
    int ticks;
} seqt;

static void seq_tick(void *target, float dt, tk_tick_ctx *ctx)
{
    (void)dt;
    (void)ctx;
    seqt *s = target;
    s->last = ++g_seq_ctr;
    s->ticks++;
}

/*
 * 300,000 functions in a level, 1,000 survivors in the persistent level
 * interleaved with them in the same lane.  The level's functions are
 * unregistered in slices of 50,000 between frames (as the daemon does), then
 * the level removed; meanwhile survivors move to another lane and back
 * (which must merge them back into registration order, also in the middle
 * of a compaction).  Every frame every live function ticks exactly once, in
 * registration order, the removed ones never; counters stay right.
 */
START_TEST(lanes_compaction_over_frames_keeps_order)
{
    setup_clock(0.01, false);
    tk_tick_class_desc k = {"seq", seq_tick, NULL, false};
    tk_class_id cls;
    ck_assert_int_eq(tk_tick_class_register(W, &k, &cls), 0);
    tk_level_id big;
    ck_assert_int_eq(tk_level_add(W, "big", &big), 0);
    enum { N = 300000, EVERY = 300 };
    seqt *t = calloc(N, sizeof *t);
    tk_tick_id *ids = calloc(N, sizeof *ids);
    for (int i = 0; i < N; i++) {
        tk_tick_desc d = {0};
        d.cls = cls;
        d.target = &t[i];
        d.level = i % EVERY == 0 ? TK_LEVEL_PERSISTENT : big;
        tk_tick_spec_default(&d.spec);
        CHECK(tk_tick_register(W, &d, &ids[i]) == 0, "register %d", i);
    }
    frame();
    int removed_upto = 0;
    for (int round = 0; round < 30; round++) {
        if (removed_upto < N) {
            /* A slice of the level's functions goes. */
            int end = removed_upto + 50000 < N ? removed_upto + 50000 : N;
            for (int i = removed_upto; i < end; i++)
                if (i % EVERY != 0)
                    CHECK(tk_tick_unregister(W, ids[i]) == 0, "unregister %d", i);
            removed_upto = end;
        } else if (tk_level_name(W, big)) {
            ck_assert_uint_eq(tk_level_tick_count(W, big), 0);
            ck_assert_int_eq(tk_level_remove(W, big), 0);
        }
        {
            /* A survivor goes to another group (another lane) and back the
             * next frame: it comes back out of registration order, also
             * while the lane is being compacted. */
            int sv = EVERY * (1 + (round / 2) % 3);
            tk_tick_info info;
            ck_assert_int_eq(tk_tick_get(W, ids[sv], &info), 0);
            info.spec.group = info.spec.group == TK_GROUP_PRE_PHYSICS ? TK_GROUP_POST_PHYSICS
                                                                      : TK_GROUP_PRE_PHYSICS;
            info.spec.end_group = TK_GROUP_SAME;
            ck_assert_int_eq(tk_tick_set_spec(W, ids[sv], &info.spec), 0);
        }
        uint64_t base = g_seq_ctr;
        frame();
        /* Every survivor ticked once this frame; those in pre_physics in
         * registration order; the removed ones never. */
        uint64_t prev = 0;
        for (int i = 0; i < N; i += EVERY) {
            CHECK(t[i].last > base, "round %d: survivor %d did not tick", round, i);
            tk_tick_info info;
            CHECK(tk_tick_get(W, ids[i], &info) == 0, "survivor %d", i);
            CHECK(info.ticks == (uint64_t)t[i].ticks, "survivor %d: ticks", i);
            if (info.actual_group != TK_GROUP_PRE_PHYSICS)
                continue;
            CHECK(t[i].last > prev, "round %d: survivor %d out of order", round, i);
            prev = t[i].last;
        }
        for (int i = 0; i < removed_upto; i++)
            if (i % EVERY != 0)
                CHECK(t[i].last <= base, "round %d: removed %d ticked", round, i);
    }
    ck_assert_ptr_null(tk_level_name(W, big));
    tk_tick_counts c;
    tk_tick_get_counts(W, &c);
    ck_assert_uint_eq(c.registered, N / EVERY);
    free(t);
    free(ids);
    teardown();
}
END_TEST

/* ---- classes whose targets hold their slot ----------------------------------------- */

typedef struct slotted {
    uint64_t pad;
    uint32_t slot;    /* slot + 1, written by the scheduler */
    int ticks;
    tk_tick_id self;  /* ctx->self at the last tick         */
} slotted;

static void slotted_tick(void *target, float dt, tk_tick_ctx *ctx)
{
    slotted *o = target;
    o->ticks++;
    o->self = ctx->self;
    (void)dt;
}

/*
 * tk_tick_class_slot_in_target: checked (offset, state), the slot is written
 * at registration and on a new target, NULL targets are refused, the id
 * comes back from tk_tick_id_at (TK_TICK_NONE for a free slot), and the
 * functions tick as any others.
 */
START_TEST(lanes_slot_in_target)
{
    setup_clock(1.0 / 60, false);
    tk_tick_class_desc cd = {"slotted", slotted_tick, NULL, false};
    tk_class_id k, k2;
    ck_assert_int_eq(tk_tick_class_register(W, &cd, &k), 0);
    ck_assert_int_eq(tk_tick_class_slot_in_target(W, k, 6), TK_EINVAL);
    ck_assert_int_eq(tk_tick_class_slot_in_target(W, k, 65540), TK_EINVAL);
    ck_assert_int_eq(tk_tick_class_slot_in_target(W, 999, 8), TK_EINVAL);
    ck_assert_int_eq(tk_tick_class_slot_in_target(W, k, offsetof(slotted, slot)), 0);
    static slotted objs[100], moved;
    tk_tick_id ids[100];
    tk_tick_desc d = {0};
    d.cls = k;
    tk_tick_spec_default(&d.spec);
    d.target = NULL;
    ck_assert_int_eq(tk_tick_register(W, &d, &ids[0]), TK_EINVAL);
    for (int i = 0; i < 100; i++) {
        d.target = &objs[i];
        ck_assert_int_eq(tk_tick_register(W, &d, &ids[i]), 0);
        ck_assert_uint_eq(objs[i].slot, (uint32_t)ids[i] + 1);
        ck_assert_uint_eq(tk_tick_id_at(W, objs[i].slot - 1), ids[i]);
    }
    /* Used: too late to change. */
    ck_assert_int_eq(tk_tick_class_slot_in_target(W, k, 0), TK_ESTATE);
    frame();
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(objs[i].ticks, 1);
    /* A new target gets the slot; NULL is refused and changes nothing. */
    ck_assert_int_eq(tk_tick_set_target(W, ids[7], NULL), TK_EINVAL);
    moved = objs[7];
    moved.slot = 0;
    ck_assert_int_eq(tk_tick_set_target(W, ids[7], &moved), 0);
    ck_assert_uint_eq(moved.slot, (uint32_t)ids[7] + 1);
    /* Unregister half (the lane compacts), the rest still tick. */
    for (int i = 0; i < 100; i += 2)
        ck_assert_int_eq(tk_tick_unregister(W, ids[i]), 0);
    ck_assert_uint_eq(tk_tick_id_at(W, objs[0].slot - 1), TK_TICK_NONE);
    ck_assert_uint_eq(tk_tick_id_at(W, 1u << 30), TK_TICK_NONE);
    for (int f = 0; f < 5; f++)
        frame();
    for (int i = 1; i < 100; i += 2) {
        const slotted *o = i == 7 ? &moved : &objs[i];
        ck_assert_int_eq(o->ticks, 6);
        tk_tick_info ti;
        ck_assert_int_eq(tk_tick_get(W, ids[i], &ti), 0);
        ck_assert_ptr_eq(ti.target, o);
        ck_assert_uint_eq(ti.ticks, 6);
    }
    /* A function of another class keeps its id beside its target, and
     * ctx->self names it. */
    tk_tick_class_desc cd2 = {"plain", slotted_tick, NULL, false};
    ck_assert_int_eq(tk_tick_class_register(W, &cd2, &k2), 0);
    static slotted plain;
    d.cls = k2;
    d.target = &plain;
    tk_tick_id pid;
    ck_assert_int_eq(tk_tick_register(W, &d, &pid), 0);
    frame();
    ck_assert_uint_eq(plain.slot, 0);
    ck_assert_uint_eq(plain.self, pid);
    teardown();
}
END_TEST

static Suite *lanes_suite(void)
{
    Suite *s = suite_create("tick_lanes");
    TCase *tc = tcase_create("lanes");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, lanes_due_sets_batched_like_one_by_one, 0, 6);
    tcase_add_test(tc, lanes_due_set_members_mid_frame);
    tcase_add_test(tc, lanes_due_set_queries_and_restore);
    tcase_add_test(tc, lanes_interval_prerequisite_static_unless_it_moves);
    tcase_add_test(tc, lanes_slow_tick_runs_then_named);
    tcase_add_test(tc, lanes_slow_tick_costly_class_batches_and_extras);
    tcase_add_test(tc, lanes_compaction_over_frames_keeps_order);
    tcase_add_test(tc, lanes_slot_in_target);
    suite_add_tcase(s, tc);
    return s;
}

TK_CHECK_MAIN(lanes_suite)
