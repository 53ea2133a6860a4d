/*
 * test_profile.c - the world's profiler hook (world.h, tk_profiler): runs of
 * same-class functions by group and level, single functions timed (each,
 * sampled, or every one of a class that proved slow), group, timer-pass and
 * tickable spans, batches off with `each`, nothing once removed.
 *
 * Time is a fake clock that moves 100 ns per read (and a "slow" class moves
 * it by 1 ms per tick), so durations are exact and nothing depends on the
 * machine's speed.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickd/tickd.h"
#include "check_main.h"

static uint64_t g_now;
static uint64_t fake_clock(void *ud)
{
    (void)ud;
    return g_now += 100;
}

static tk_engine_t *E;
static tk_world_t *W;
static tk_class_id C_A, C_BATCH, C_SLOW, C_MUT;
static int g_ticks, g_batch_calls;

static void a_tick(void *target, float dt, tk_tick_ctx *ctx)
{
    (void)target;
    (void)dt;
    (void)ctx;
    g_ticks++;
}

static void slow_tick(void *target, float dt, tk_tick_ctx *ctx)
{
    a_tick(target, dt, ctx);
    g_now += 1000000;
}

static void a_batch(void *const *targets, size_t n, float dt, tk_tick_ctx *ctx)
{
    g_batch_calls++;
    for (size_t i = 0; i < n; i++)
        a_tick(targets[i], dt, ctx);
}

/* A class whose ticks change later functions of their own lane mid-run
 * (m_victims: the ids it disables, changes the dilation of, and
 * unregisters, on its first tick of a frame). */
static tk_tick_id m_victims[3];
static int m_fired;
static void mut_tick(void *target, float dt, tk_tick_ctx *ctx)
{
    a_tick(target, dt, ctx);
    if (m_fired++)
        return;
    ck_assert_int_eq(tk_tick_set_enabled(ctx->world, m_victims[0], false), 0);
    ck_assert_int_eq(tk_tick_set_dilation(ctx->world, m_victims[1], 0.5f), 0);
    ck_assert_int_eq(tk_tick_unregister(ctx->world, m_victims[2]), 0);
}

static void tickable_fn(void *ud, float dt, tk_world_t *w)
{
    (void)ud;
    (void)dt;
    (void)w;
}

static void timer_fn(void *ud, tk_timer_handle h, tk_world_t *w)
{
    (void)ud;
    (void)h;
    (void)w;
}

#define MAX_EV 4096
static tk_prof_event g_ev[MAX_EV];
static int g_nev;

static void on_event(void *ud, const tk_prof_event *ev)
{
    (void)ud;
    ck_assert_int_lt(g_nev, MAX_EV);
    g_ev[g_nev++] = *ev;
}

static void setup(void)
{
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    d.tick_rate = 0;
    d.fixed_dt = 0.01;
    d.clock = fake_clock;
    ck_assert_int_eq(tk_engine_new(&d, &E), 0);
    W = tk_engine_world(E);
    tk_tick_class_desc a = {"a", a_tick, NULL, false};
    tk_tick_class_desc b = {"batch", a_tick, a_batch, false};
    tk_tick_class_desc s = {"slow", slow_tick, NULL, false};
    ck_assert_int_eq(tk_tick_class_register(W, &a, &C_A), 0);
    ck_assert_int_eq(tk_tick_class_register(W, &b, &C_BATCH), 0);
    ck_assert_int_eq(tk_tick_class_register(W, &s, &C_SLOW), 0);
    tk_tick_class_desc m = {"mut", mut_tick, NULL, false};
    ck_assert_int_eq(tk_tick_class_register(W, &m, &C_MUT), 0);
    g_nev = g_ticks = g_batch_calls = 0;
}

static void teardown(void)
{
    tk_engine_free(E);
    E = NULL;
    W = NULL;
}

static void reg(tk_class_id cls, tk_group g, tk_level_id level, int n)
{
    static int dummy;
    for (int i = 0; i < n; i++) {
        tk_tick_desc d = {0};
        d.cls = cls;
        d.target = &dummy;
        d.level = level;
        tk_tick_spec_default(&d.spec);
        d.spec.group = g;
        tk_tick_id id;
        ck_assert_int_eq(tk_tick_register(W, &d, &id), 0);
    }
}

/* Functions counted in RUN events of (cls, group, level); level 0 = any. */
static long run_calls(tk_class_id cls, int group, tk_level_id level)
{
    long n = 0;
    for (int i = 0; i < g_nev; i++)
        if (g_ev[i].kind == TK_PROF_RUN && g_ev[i].cls == cls && g_ev[i].group == group &&
            (!level || g_ev[i].level == level))
            n += g_ev[i].n;
    return n;
}

static int count_kind(tk_prof_kind k)
{
    int n = 0;
    for (int i = 0; i < g_nev; i++)
        n += g_ev[i].kind == k;
    return n;
}

static void frame(void) { ck_assert_int_eq(tk_engine_frame(E), 0); }

START_TEST(profile_runs_by_class_group_level)
{
    setup();
    tk_level_id l2;
    ck_assert_int_eq(tk_level_add(W, "l2", &l2), 0);
    /* Interleaved levels in one lane: runs are split by level. */
    for (int i = 0; i < 5; i++) {
        reg(C_A, TK_GROUP_PRE_PHYSICS, TK_LEVEL_PERSISTENT, 2);
        reg(C_A, TK_GROUP_PRE_PHYSICS, l2, 1);
    }
    reg(C_BATCH, TK_GROUP_POST_PHYSICS, TK_LEVEL_PERSISTENT, 7);
    tk_tickable_desc td = {.type = TK_TICKABLE_ALWAYS, .fn = tickable_fn};
    ck_assert_int_eq(tk_tickable_add(W, &td, NULL), 0);
    tk_timer_desc tm = {0};
    tm.rate = 0.001;
    tm.first_delay = -1;
    tm.loop = true;
    tm.fn = timer_fn;
    tk_timer_handle th;
    ck_assert_int_eq(tk_timer_set(W, &tm, &th), 0);
    frame(); /* settle the schedule */
    frame();
    ck_assert_int_eq(g_nev, 0); /* nothing without a profiler */
    ck_assert(!tk_world_profiling(W));

    tk_profiler bad = {0};
    ck_assert_int_eq(tk_world_set_profiler(W, &bad), TK_EINVAL);
    tk_profiler p = {.fn = on_event};
    ck_assert_int_eq(tk_world_set_profiler(W, &p), 0);
    ck_assert(tk_world_profiling(W));
    int ticks0 = g_ticks, batches0 = g_batch_calls;
    frame();
    ck_assert_int_eq(g_ticks - ticks0, 22);
    ck_assert_int_eq(g_batch_calls - batches0, 1); /* batches stay on */
    ck_assert_int_eq(run_calls(C_A, TK_GROUP_PRE_PHYSICS, TK_LEVEL_PERSISTENT), 10);
    ck_assert_int_eq(run_calls(C_A, TK_GROUP_PRE_PHYSICS, l2), 5);
    ck_assert_int_eq(run_calls(C_BATCH, TK_GROUP_POST_PHYSICS, 0), 7);
    ck_assert_int_eq(count_kind(TK_PROF_TICK), 0);
    ck_assert_int_eq(count_kind(TK_PROF_GROUP), TK_GROUP_COUNT);
    ck_assert_int_eq(count_kind(TK_PROF_TIMERS), 1);
    ck_assert_int_eq(count_kind(TK_PROF_TICKABLES), 1);
    ck_assert_int_eq(count_kind(TK_PROF_TICKABLE), 1);

    /* Every run lies inside its group's span; groups in frame order. */
    int last_group = -1;
    uint64_t groups_ns = 0;
    for (int i = 0; i < g_nev; i++) {
        const tk_prof_event *g = &g_ev[i];
        if (g->kind != TK_PROF_GROUP)
            continue;
        ck_assert_int_gt(g->group, last_group);
        last_group = g->group;
        groups_ns += g->ns;
        long n = 0;
        for (int k = 0; k < g_nev; k++) {
            const tk_prof_event *r = &g_ev[k];
            if (r->kind != TK_PROF_RUN || r->group != g->group)
                continue;
            ck_assert(r->ns > 0);
            ck_assert(r->start_ns >= g->start_ns && r->start_ns + r->ns <= g->start_ns + g->ns);
            n += r->n;
        }
        ck_assert_int_eq(n, (long)g->n);
    }
    tk_world_frame_stats fs;
    tk_world_get_frame_stats(W, &fs);
    uint64_t stats_ns = 0;
    for (int g = 0; g < TK_GROUP_COUNT; g++)
        stats_ns += fs.group_ns[g];
    ck_assert_uint_eq(groups_ns, stats_ns); /* the same clock reads */

    /* Removed: silence again, and no state left behind. */
    ck_assert_int_eq(tk_world_set_profiler(W, NULL), 0);
    g_nev = 0;
    frame();
    ck_assert_int_eq(g_nev, 0);
    teardown();
}
END_TEST

START_TEST(profile_each_times_every_function_without_batches)
{
    setup();
    reg(C_BATCH, TK_GROUP_PRE_PHYSICS, TK_LEVEL_PERSISTENT, 6);
    reg(C_A, TK_GROUP_LAST_DEMOTABLE, TK_LEVEL_PERSISTENT, 4);
    frame();
    tk_profiler p = {.fn = on_event, .each = true};
    ck_assert_int_eq(tk_world_set_profiler(W, &p), 0);
    int batches0 = g_batch_calls;
    frame();
    ck_assert_int_eq(g_batch_calls, batches0); /* one by one */
    ck_assert_int_eq(count_kind(TK_PROF_TICK), 10);
    uint64_t prev_end = 0;
    for (int i = 0; i < g_nev; i++) {
        if (g_ev[i].kind != TK_PROF_TICK)
            continue;
        ck_assert(g_ev[i].start_ns >= prev_end); /* in execution order */
        ck_assert(tk_tick_alive(W, g_ev[i].id));
        ck_assert_int_eq(g_ev[i].n, 1);
        ck_assert_int_eq(g_ev[i].level, TK_LEVEL_PERSISTENT);
        prev_end = g_ev[i].start_ns + g_ev[i].ns;
    }
    ck_assert_int_eq(run_calls(C_BATCH, TK_GROUP_PRE_PHYSICS, 0), 6);
    ck_assert_int_eq(run_calls(C_A, TK_GROUP_LAST_DEMOTABLE, 0), 4);
    ck_assert_int_eq(tk_world_set_profiler(W, NULL), 0);
    frame();
    ck_assert_int_eq(g_batch_calls, batches0 + 1); /* batches again */
    teardown();
}
END_TEST

START_TEST(profile_sampling_and_slow_classes)
{
    setup();
    reg(C_A, TK_GROUP_PRE_PHYSICS, TK_LEVEL_PERSISTENT, 20);
    reg(C_SLOW, TK_GROUP_POST_PHYSICS, TK_LEVEL_PERSISTENT, 3);
    frame();
    /* 1 in 4: 23 functions a frame -> the countdown fires 5 times. */
    tk_profiler p = {.fn = on_event, .sample_every = 4};
    ck_assert_int_eq(tk_world_set_profiler(W, &p), 0);
    frame();
    ck_assert_int_eq(count_kind(TK_PROF_TICK), 5);

    /* A class whose runs average over each_above_ns gets every function
     * timed from its next run on; cheap classes do not. */
    tk_profiler q = {.fn = on_event, .each_above_ns = 100000};
    ck_assert_int_eq(tk_world_set_profiler(W, &q), 0);
    g_nev = 0;
    frame();
    ck_assert_int_eq(count_kind(TK_PROF_TICK), 0);
    g_nev = 0;
    frame();
    ck_assert_int_eq(count_kind(TK_PROF_TICK), 3);
    for (int i = 0; i < g_nev; i++) {
        if (g_ev[i].kind != TK_PROF_TICK)
            continue;
        ck_assert_int_eq(g_ev[i].cls, C_SLOW);
        ck_assert_int_eq(g_ev[i].group, TK_GROUP_POST_PHYSICS);
        ck_assert(g_ev[i].ns >= 1000000);
    }
    teardown();
}
END_TEST

/* A run of functions ticked one by one is counted as a whole when it
 * starts: a tick that disables, unregisters or changes a later function of
 * the same run leaves the count equal to the functions that ran, with and
 * without sampling. */
START_TEST(profile_runs_counted_when_ticks_change_the_lane)
{
    for (int sample = 0; sample <= 3; sample += 3) {
        setup();
        static int t[12];
        tk_tick_id ids[12];
        for (int i = 0; i < 12; i++) {
            tk_tick_desc d = {0};
            d.cls = C_MUT;
            d.target = &t[i];
            tk_tick_spec_default(&d.spec);
            ck_assert_int_eq(tk_tick_register(W, &d, &ids[i]), 0);
        }
        m_fired = 1; /* not yet */
        frame();
        m_victims[0] = ids[4];
        m_victims[1] = ids[6];
        m_victims[2] = ids[9];
        m_fired = 0;
        tk_profiler p = {.fn = on_event, .sample_every = (uint32_t)sample};
        ck_assert_int_eq(tk_world_set_profiler(W, &p), 0);
        int ticks0 = g_ticks;
        frame();
        int ran = g_ticks - ticks0;
        ck_assert_int_ge(ran, 10); /* the disabled and the removed did not run */
        ck_assert_int_le(ran, 11);
        ck_assert_int_eq(run_calls(C_MUT, TK_GROUP_PRE_PHYSICS, 0), ran);
        for (int i = 0; i < g_nev; i++)
            if (g_ev[i].kind == TK_PROF_GROUP && g_ev[i].group == TK_GROUP_PRE_PHYSICS)
                ck_assert_int_eq(g_ev[i].n, ran);
        if (sample) {
            /* One tick in `sample` timed; an entry cancelled mid-run still
             * counts as a position of the run. */
            ck_assert_int_ge(count_kind(TK_PROF_TICK), ran / sample);
            ck_assert_int_le(count_kind(TK_PROF_TICK), 12 / sample);
        }
        /* The next frame, with the lane settled: 10 of them. */
        g_nev = 0;
        ticks0 = g_ticks;
        frame();
        ck_assert_int_eq(g_ticks - ticks0, 10);
        ck_assert_int_eq(run_calls(C_MUT, TK_GROUP_PRE_PHYSICS, 0), 10);
        teardown();
    }
}
END_TEST

START_TEST(profile_pause_frames)
{
    setup();
    /* Pause frames run functions one by one (no groups); counted too. */
    tk_profiler p = {.fn = on_event};
    ck_assert_int_eq(tk_world_set_profiler(W, &p), 0);
    reg(C_A, TK_GROUP_PRE_PHYSICS, TK_LEVEL_PERSISTENT, 3);
    frame();
    ck_assert_int_eq(run_calls(C_A, TK_GROUP_PRE_PHYSICS, 0), 3);
    static int t;
    tk_tick_desc d = {0};
    d.cls = C_A;
    d.target = &t;
    tk_tick_spec_default(&d.spec);
    d.spec.even_when_paused = true;
    d.spec.group = TK_GROUP_POST_PHYSICS;
    tk_tick_id id;
    ck_assert_int_eq(tk_tick_register(W, &d, &id), 0);
    tk_world_set_paused(W, true);
    g_nev = 0;
    frame();
    ck_assert_int_eq(run_calls(C_A, TK_GROUP_POST_PHYSICS, 0), 1);
    for (int i = 0; i < g_nev; i++)
        ck_assert(g_ev[i].pause_frame);
    ck_assert_int_eq(count_kind(TK_PROF_GROUP), 0);
    teardown();
}
END_TEST

static Suite *profile_suite(void)
{
    Suite *s = suite_create("profile");
    TCase *tc = tcase_create("hooks");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, profile_runs_by_class_group_level);
    tcase_add_test(tc, profile_each_times_every_function_without_batches);
    tcase_add_test(tc, profile_sampling_and_slow_classes);
    tcase_add_test(tc, profile_pause_frames);
    tcase_add_test(tc, profile_runs_counted_when_ticks_change_the_lane);
    suite_add_tcase(s, tc);
    return s;
}

TK_CHECK_MAIN(profile_suite)
