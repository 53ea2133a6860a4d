/*
 * test_engine.c - the engine loop: pacing measured from the previous frame's
 * start, unlimited rate, fixed dt, max_dt, frame counter at the very end,
 * overruns, stop and max_frames.  A fake clock and a fake wait hook make time
 * exact: nothing sleeps.
 */
#include <check.h>
#include <stdlib.h>

#include "tickd/tickd.h"
#include "check_main.h"

static uint64_t g_now;          /* fake monotonic ns */
static uint64_t g_waits[64];    /* deadlines the hook was asked for */
static int g_nwaits;
static uint64_t g_work;         /* ns of work each frame (pre_world hook) */
static uint64_t g_seen_frame[64];
static int g_nframes;
static uint64_t g_ticker_frames;

static uint64_t fake_clock(void *ud)
{
    (void)ud;
    return g_now;
}

static void fake_wait(void *ud, uint64_t deadline)
{
    (void)ud;
    if (g_nwaits < 64)
        g_waits[g_nwaits++] = deadline;
    if (deadline > g_now)
        g_now = deadline;
}

static void pre_world(void *ud, tk_engine_t *e)
{
    (void)ud;
    (void)e;
    g_now += g_work;
}

static void post_frame(void *ud, tk_engine_t *e, const tk_frame_info *f)
{
    (void)ud;
    /* The counter is incremented after this hook: it still names this frame. */
    ck_assert_uint_eq(tk_engine_frame_count(e), f->frame);
    if (g_nframes < 64)
        g_seen_frame[g_nframes++] = f->frame;
}

static bool count_ticker(void *ud, double dt)
{
    (void)ud;
    (void)dt;
    g_ticker_frames++;
    return true;
}

static tk_engine_t *mk(double hz, double fixed)
{
    g_now = 1000000000ull;
    g_nwaits = 0;
    g_work = 0;
    g_nframes = 0;
    g_ticker_frames = 0;
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    d.tick_rate = hz;
    d.fixed_dt = fixed;
    d.clock = fake_clock;
    d.wait = fake_wait;
    d.pre_world = pre_world;
    d.post_frame = post_frame;
    tk_engine_t *e;
    ck_assert_int_eq(tk_engine_new(&d, &e), 0);
    return e;
}

START_TEST(engine_paces_from_previous_frame_start)
{
    tk_engine_t *e = mk(10, 0);
    g_work = 30000000; /* 30 ms of work per frame */
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(tk_engine_frame(e), 0);
    /* First frame runs at once; then each deadline is the previous start +
     * 100 ms, whatever the work took. */
    ck_assert_int_eq(g_nwaits, 3);
    ck_assert_uint_eq(g_waits[0], 1000000000ull + 100000000ull);
    ck_assert_uint_eq(g_waits[1], 1000000000ull + 200000000ull);
    ck_assert_uint_eq(g_waits[2], 1000000000ull + 300000000ull);
    tk_world_time t;
    tk_world_get_time(tk_engine_world(e), &t);
    ck_assert_double_eq_tol(t.raw_dt, 0.1, 1e-9);
    tk_engine_stats s;
    tk_engine_get_stats(e, &s);
    ck_assert_uint_eq(s.overruns, 0);
    ck_assert_double_eq_tol(s.last.work_ns / 1e6, 30.0, 1e-6);
    tk_engine_free(e);
}
END_TEST

START_TEST(engine_late_frame_is_not_caught_up)
{
    tk_engine_t *e = mk(10, 0);
    g_work = 150000000; /* 150 ms: longer than the 100 ms period */
    tk_engine_frame(e);
    tk_engine_frame(e);
    tk_engine_frame(e);
    /* No wait once behind, only a poll (deadline 0) so a daemon keeps
     * serving its socket; the next frame's dt is simply longer. */
    ck_assert_int_eq(g_nwaits, 2);
    ck_assert_uint_eq(g_waits[0], 0);
    ck_assert_uint_eq(g_waits[1], 0);
    tk_world_time t;
    tk_world_get_time(tk_engine_world(e), &t);
    ck_assert_double_eq_tol(t.raw_dt, 0.15, 1e-9);
    tk_engine_stats s;
    tk_engine_get_stats(e, &s);
    ck_assert_uint_eq(s.overruns, 3);
    ck_assert_double_eq_tol(s.behind_s, 0.1, 1e-9);
    g_work = 0;
    tk_engine_frame(e);
    tk_engine_frame(e);
    tk_engine_get_stats(e, &s);
    ck_assert_double_eq_tol(s.behind_s, 0.0, 1e-9);
    tk_engine_free(e);
}
END_TEST

START_TEST(engine_unlimited_rate_polls)
{
    tk_engine_t *e = mk(0, 0);
    g_work = 1000;
    for (int i = 0; i < 5; i++)
        tk_engine_frame(e);
    ck_assert_int_eq(g_nwaits, 5);
    for (int i = 0; i < 5; i++)
        ck_assert_uint_eq(g_waits[i], 0);
    tk_engine_free(e);
}
END_TEST

START_TEST(engine_fixed_dt_is_exact)
{
    tk_engine_t *e = mk(60, 0.25);
    g_work = 12345;
    for (int i = 0; i < 8; i++)
        tk_engine_frame(e);
    tk_world_time t;
    tk_world_get_time(tk_engine_world(e), &t);
    ck_assert_double_eq_tol(t.world_time, 2.0, 1e-12);
    ck_assert_double_eq_tol(t.real_time, 2.0, 1e-12);
    ck_assert_int_eq(g_nwaits, 7); /* still paced by the tick rate */
    tk_engine_free(e);
}
END_TEST

START_TEST(engine_max_dt_clamps_raw_dt)
{
    tk_engine_t *e = mk(0, 0);
    ck_assert_int_eq(tk_engine_set_max_dt(e, 0.05), 0);
    tk_engine_frame(e);
    g_now += 2000000000ull; /* a 2 s hitch */
    tk_engine_frame(e);
    tk_world_time t;
    tk_world_get_time(tk_engine_world(e), &t);
    ck_assert_double_eq_tol(t.raw_dt, 0.05, 1e-12);
    ck_assert_int_eq(tk_engine_set_max_dt(e, -1), TK_EINVAL);
    tk_engine_free(e);
}
END_TEST

START_TEST(engine_frame_counter_incremented_at_end)
{
    tk_engine_t *e = mk(0, 0.01);
    tk_ticker_handle h;
    ck_assert_int_eq(tk_ticker_add(e, 0, count_ticker, NULL, &h), 0);
    for (int i = 0; i < 3; i++)
        tk_engine_frame(e);
    ck_assert_int_eq(g_nframes, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_uint_eq(g_seen_frame[i], (uint64_t)i);
    ck_assert_uint_eq(tk_engine_frame_count(e), 3);
    ck_assert_uint_eq(g_ticker_frames, 3);
    tk_engine_free(e);
}
END_TEST

static bool stop_at_5(void *ud, double dt)
{
    (void)dt;
    tk_engine_t *e = ud;
    if (tk_engine_frame_count(e) == 4)
        tk_engine_stop(e);
    return true;
}

START_TEST(engine_run_max_frames_and_stop)
{
    tk_engine_t *e = mk(0, 0.01);
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    tk_engine_free(e);
    g_now = 1;
    d.tick_rate = 0;
    d.fixed_dt = 0.01;
    d.max_frames = 7;
    d.clock = fake_clock;
    d.wait = fake_wait;
    ck_assert_int_eq(tk_engine_new(&d, &e), 0);
    ck_assert_uint_eq(tk_engine_run(e), 7);
    ck_assert_uint_eq(tk_engine_frame_count(e), 7);
    tk_engine_free(e);
    d.max_frames = 0;
    ck_assert_int_eq(tk_engine_new(&d, &e), 0);
    tk_ticker_handle h;
    tk_ticker_add(e, 0, stop_at_5, e, &h);
    ck_assert_uint_eq(tk_engine_run(e), 5);
    ck_assert(tk_engine_stopping(e));
    tk_engine_free(e);
}
END_TEST

START_TEST(engine_invalid_settings)
{
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    d.tick_rate = -1;
    tk_engine_t *e = NULL;
    ck_assert_int_eq(tk_engine_new(&d, &e), TK_EINVAL);
    ck_assert_ptr_null(e);
    e = mk(60, 0);
    ck_assert_int_eq(tk_engine_set_tick_rate(e, 1.0 / 0.0), TK_EINVAL);
    ck_assert_double_eq(tk_engine_tick_rate(e), 60);
    ck_assert_int_eq(tk_engine_set_fixed_dt(e, -0.5), TK_EINVAL);
    ck_assert_int_eq(tk_engine_set_tick_rate(e, 30), 0);
    ck_assert_double_eq(tk_engine_tick_rate(e), 30);
    tk_engine_free(e);
    tk_engine_free(NULL);
}
END_TEST

START_TEST(engine_unpaced_sprint)
{
    tk_engine_t *e = mk(10, 0);
    tk_engine_frame(e);
    tk_engine_set_unpaced(e, true);
    tk_engine_frame(e);
    tk_engine_frame(e);
    ck_assert_int_eq(g_nwaits, 2);
    ck_assert_uint_eq(g_waits[0], 0);
    tk_engine_set_unpaced(e, false);
    tk_engine_frame(e);
    ck_assert_uint_ne(g_waits[2], 0);
    tk_engine_free(e);
}
END_TEST

/* A wait hook that, asked to wait long, sets 60 Hz (as a request handled
 * while waiting does) and lets 1 ms pass. */
static tk_engine_t *g_engine;

static void rate_change_wait(void *ud, uint64_t deadline)
{
    (void)ud;
    if (g_nwaits < 64)
        g_waits[g_nwaits++] = deadline;
    if (deadline - g_now > 1000000000ull) {
        tk_engine_set_tick_rate(g_engine, 60);
        g_now += 1000000;
    } else if (deadline > g_now) {
        g_now = deadline;
    }
}

START_TEST(engine_rate_change_while_waiting)
{
    g_now = 1000000000ull;
    g_nwaits = 0;
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    d.tick_rate = 0.001; /* a frame every 1000 s */
    d.clock = fake_clock;
    d.wait = rate_change_wait;
    ck_assert_int_eq(tk_engine_new(&d, &g_engine), 0);
    ck_assert_int_eq(tk_engine_frame(g_engine), 0); /* the first runs at once */
    uint64_t start = g_now;
    ck_assert_int_eq(g_nwaits, 0);
    ck_assert_int_eq(tk_engine_frame(g_engine), 0);
    /* Asked for +1000 s, then for the new deadline: start + 1/60 s. */
    ck_assert_int_eq(g_nwaits, 2);
    ck_assert_uint_eq(g_waits[0], start + 1000000000000ull);
    ck_assert_uint_eq(g_waits[1], start + 16666667);
    start = g_now;
    /* A rate whose period would overflow waits a bounded time (11.6 days). */
    ck_assert_int_eq(tk_engine_set_tick_rate(g_engine, 1e-300), 0);
    ck_assert_int_eq(tk_engine_frame(g_engine), 0); /* the hook sets 60 Hz again */
    ck_assert_uint_eq(g_waits[2], start + 1000000000000000ull);
    ck_assert_uint_eq(g_waits[3], start + 16666667);
    tk_engine_free(g_engine);
}
END_TEST

static Suite *engine_suite(void)
{
    Suite *s = suite_create("engine");
    TCase *tc = tcase_create("loop");
    tcase_add_test(tc, engine_paces_from_previous_frame_start);
    tcase_add_test(tc, engine_late_frame_is_not_caught_up);
    tcase_add_test(tc, engine_unlimited_rate_polls);
    tcase_add_test(tc, engine_fixed_dt_is_exact);
    tcase_add_test(tc, engine_max_dt_clamps_raw_dt);
    tcase_add_test(tc, engine_frame_counter_incremented_at_end);
    tcase_add_test(tc, engine_run_max_frames_and_stop);
    tcase_add_test(tc, engine_invalid_settings);
    tcase_add_test(tc, engine_unpaced_sprint);
    tcase_add_test(tc, engine_rate_change_while_waiting);
    suite_add_tcase(s, tc);
    return s;
}

TK_CHECK_MAIN(engine_suite)
