/*
 * test_engine.c - the engine loop: pacing measured from the previous frame's
 * start (unreal) or on a fixed grid (steady), unlimited rate, fixed dt,
 * max_dt, frame counter at the very end, overruns, stop and max_frames.  A
 * fake clock and a fake wait hook make time exact: nothing sleeps; a late
 * wake-up is a wait hook that returns after its deadline.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- a world built aside and swapped in ---------------------------------- */

static int g_old_ticks, g_new_ticks, g_prof_events;

static void old_tick(void *t, float dt, tk_tick_ctx *c)
{
    (void)t, (void)dt, (void)c;
    g_old_ticks++;
}

static void new_tick(void *t, float dt, tk_tick_ctx *c)
{
    (void)t, (void)dt;
    /* The function runs in the engine's world once swapped in. */
    ck_assert_ptr_nonnull(tk_world_engine(c->world));
    g_new_ticks++;
}

static void count_prof(void *ud, const tk_prof_event *ev)
{
    (void)ud, (void)ev;
    g_prof_events++;
}

static void add_fn(tk_world_t *w, const char *cls_name, tk_tick_fn fn)
{
    tk_tick_class_desc cd = {cls_name, fn, NULL, false};
    tk_class_id cls;
    ck_assert_int_eq(tk_tick_class_register(w, &cd, &cls), 0);
    tk_tick_desc td = {0};
    td.cls = cls;
    tk_tick_spec_default(&td.spec);
    tk_tick_id id;
    ck_assert_int_eq(tk_tick_register(w, &td, &id), 0);
}

START_TEST(engine_swap_world)
{
    g_old_ticks = g_new_ticks = g_prof_events = 0;
    tk_engine_t *e = mk(0, 0.01);
    tk_world_t *w0 = tk_engine_world(e);
    add_fn(w0, "old", old_tick);
    tk_profiler pr = {0};
    pr.fn = count_prof;
    ck_assert_int_eq(tk_world_set_profiler(w0, &pr), 0);
    for (int i = 0; i < 5; i++)
        tk_engine_frame(e);
    ck_assert_int_eq(g_old_ticks, 5);
    uint64_t serial = tk_world_serial(w0);

    /* Built aside: its own clocks (restored), classes and functions. */
    tk_world_t *w1;
    ck_assert_int_eq(tk_world_new(1.0, &w1), 0);
    ck_assert_ptr_null(tk_world_engine(w1));
    ck_assert_int_eq(tk_world_restore_time(w1, 100, 2.0, 2.0, 2.0), 0);
    add_fn(w1, "new", new_tick);
    tk_world_settle(w1); /* optional: the first frame's upkeep, done aside */

    /* A world owned by an engine is refused, and nothing changes. */
    tk_world_t *old = NULL;
    ck_assert_int_eq(tk_engine_swap_world(e, w0, &old), TK_EINVAL);
    ck_assert_ptr_eq(tk_engine_world(e), w0);

    ck_assert_int_eq(tk_engine_swap_world(e, w1, &old), 0);
    ck_assert_ptr_eq(old, w0);
    ck_assert_ptr_eq(tk_engine_world(e), w1);
    ck_assert_ptr_null(tk_world_engine(w0));
    ck_assert_ptr_eq(tk_world_engine(w1), e);
    /* The serial goes on; the frame counter is the new world's. */
    ck_assert_uint_eq(tk_world_serial(w1), serial);
    ck_assert_uint_eq(tk_engine_frame_count(e), 100);
    ck_assert(tk_world_profiling(w1));
    ck_assert(!tk_world_profiling(w0));

    int before = g_prof_events;
    for (int i = 0; i < 3; i++)
        tk_engine_frame(e);
    ck_assert_int_eq(g_old_ticks, 5);
    ck_assert_int_eq(g_new_ticks, 3);
    ck_assert_uint_eq(tk_engine_frame_count(e), 103);
    ck_assert_uint_eq(tk_world_serial(w1), serial + 3);
    ck_assert_int_gt(g_prof_events, before);
    ck_assert_uint_eq(tk_world_time_ns(w1), 2030000000ull);

    /* The old world is one of its own: freed by its owner (any thread). */
    tk_world_free(old);
    tk_engine_free(e);
}
END_TEST

START_TEST(engine_swap_world_keeps_owed_steps_while_paused)
{
    tk_engine_t *e = mk(0, 0.01);
    tk_world_t *w0 = tk_engine_world(e);
    tk_world_set_paused(w0, true);
    ck_assert_int_eq(tk_world_step(w0, 4), 0);
    tk_engine_frame(e);
    ck_assert_uint_eq(tk_world_steps_pending(w0), 3);

    tk_world_t *w1, *old;
    ck_assert_int_eq(tk_world_new(1.0, &w1), 0);
    tk_world_set_paused(w1, true);
    ck_assert_int_eq(tk_engine_swap_world(e, w1, &old), 0);
    ck_assert_uint_eq(tk_world_steps_pending(w1), 3);
    ck_assert_uint_eq(tk_world_steps_pending(old), 0);
    tk_world_free(old);

    /* Into a running world the steps are dropped, as unpausing drops them. */
    tk_world_t *w2;
    ck_assert_int_eq(tk_world_new(1.0, &w2), 0);
    ck_assert_int_eq(tk_engine_swap_world(e, w2, &old), 0);
    ck_assert_uint_eq(tk_world_steps_pending(w2), 0);
    tk_world_free(old);
    tk_world_free(NULL);
    tk_engine_free(e);
}
END_TEST

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


/* A replay's dt: exactly the recorded raw dt, whatever fixed_dt, the clock
 * and max_dt say, for the next frame only. */
START_TEST(engine_next_dt_overrides_once)
{
    tk_engine_t *e = mk(0, 0.25);
    ck_assert_int_eq(tk_engine_set_max_dt(e, 0.1), 0);
    tk_engine_set_next_dt(e, 333333333ull);
    tk_engine_frame(e);
    tk_world_time t;
    tk_world_get_time(tk_engine_world(e), &t);
    ck_assert_double_eq_tol(t.raw_dt, 0.333333333, 1e-12);
    ck_assert_uint_eq(tk_world_real_time_ns(tk_engine_world(e)), 333333333ull);
    tk_engine_frame(e); /* back to fixed_dt, clamped by max_dt */
    tk_world_get_time(tk_engine_world(e), &t);
    ck_assert_double_eq_tol(t.raw_dt, 0.1, 1e-12);
    tk_engine_free(e);
}
END_TEST

/* Frames completed: one more than the counter from the end of the world
 * tick to the end of the frame (the core ticker, post_frame). */
static uint64_t g_done_in_ticker, g_done_in_pre;
static bool done_ticker(void *ud, double dt)
{
    (void)dt;
    g_done_in_ticker = tk_world_frames_done(tk_engine_world(ud));
    return true;
}

START_TEST(engine_frames_done)
{
    tk_engine_t *e = mk(0, 0.01);
    tk_ticker_handle h;
    ck_assert_int_eq(tk_ticker_add(e, 0, done_ticker, e, &h), 0);
    tk_world_t *w = tk_engine_world(e);
    ck_assert_uint_eq(tk_world_frames_done(w), 0);
    tk_engine_frame(e);
    ck_assert_uint_eq(g_done_in_ticker, 1);
    ck_assert_uint_eq(tk_world_frames_done(w), 1);
    ck_assert_uint_eq(tk_world_frame(w), 1);
    tk_engine_frame(e);
    ck_assert_uint_eq(g_done_in_ticker, 2);
    ck_assert_uint_eq(tk_world_frames_done(w), 2);
    (void)g_done_in_pre;
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

/* ---- pacing: unreal vs steady ------------------------------------------------------ */

static uint64_t g_oversleep[64]; /* ns the n-th wait returns after its deadline */

/* The fake wait, waking g_oversleep[n] late on its n-th call. */
static void late_wait(void *ud, uint64_t deadline)
{
    (void)ud;
    int n = g_nwaits;
    if (g_nwaits < 64)
        g_waits[g_nwaits++] = deadline;
    if (deadline > g_now)
        g_now = deadline + (n < 64 ? g_oversleep[n] : 0);
}

static tk_engine_t *mk_paced(double hz, tk_pacing pacing)
{
    g_now = 1000000000ull;
    g_nwaits = 0;
    g_work = 0;
    g_nframes = 0;
    memset(g_oversleep, 0, sizeof g_oversleep);
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    d.tick_rate = hz;
    d.pacing = pacing;
    d.clock = fake_clock;
    d.wait = late_wait;
    d.pre_world = pre_world;
    tk_engine_t *e;
    ck_assert_int_eq(tk_engine_new(&d, &e), 0);
    return e;
}

#define T0 1000000000ull /* the fake clock's start      */
#define P10 100000000ull /* the period at 10 Hz, in ns */

START_TEST(engine_pacing_default_is_unreal)
{
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    ck_assert_int_eq(d.pacing, TK_PACING_UNREAL);
    tk_engine_t *e = mk(10, 0);
    ck_assert_int_eq(tk_engine_pacing(e), TK_PACING_UNREAL);
    tk_engine_free(e);
    tk_pacing p;
    ck_assert_int_eq(tk_pacing_parse("steady", &p), 0);
    ck_assert_int_eq(p, TK_PACING_STEADY);
    ck_assert_int_eq(tk_pacing_parse("unreal", &p), 0);
    ck_assert_int_eq(p, TK_PACING_UNREAL);
    ck_assert_int_eq(tk_pacing_parse("Steady", &p), TK_EINVAL);
    ck_assert_int_eq(tk_pacing_parse(NULL, &p), TK_EINVAL);
    ck_assert_str_eq(tk_pacing_name(TK_PACING_STEADY), "steady");
    ck_assert_str_eq(tk_pacing_name(TK_PACING_UNREAL), "unreal");
    ck_assert_ptr_null(tk_pacing_name((tk_pacing)7));
    d.pacing = (tk_pacing)7;
    e = NULL;
    ck_assert_int_eq(tk_engine_new(&d, &e), TK_EINVAL);
    ck_assert_ptr_null(e);
}
END_TEST

/* One wake-up 30 ms late: unreal waits a whole period from that late start
 * (the 30 ms are lost), steady keeps its next deadline on the grid (paid
 * back by a 70 ms period). */
START_TEST(engine_unreal_late_wakeup_is_lost)
{
    tk_engine_t *e = mk_paced(10, TK_PACING_UNREAL);
    g_oversleep[1] = 30000000;
    for (int i = 0; i < 5; i++)
        tk_engine_frame(e);
    ck_assert_int_eq(g_nwaits, 4);
    ck_assert_uint_eq(g_waits[0], T0 + 1 * P10);
    ck_assert_uint_eq(g_waits[1], T0 + 2 * P10);
    ck_assert_uint_eq(g_waits[2], T0 + 3 * P10 + 30000000); /* shifted for good */
    ck_assert_uint_eq(g_waits[3], T0 + 4 * P10 + 30000000);
    ck_assert_uint_eq(tk_engine_last_frame(e)->deadline_ns, T0 + 4 * P10 + 30000000);
    tk_engine_free(e);
}
END_TEST

START_TEST(engine_steady_late_wakeup_is_paid_back)
{
    tk_engine_t *e = mk_paced(10, TK_PACING_STEADY);
    g_oversleep[1] = 30000000;
    for (int i = 0; i < 5; i++)
        tk_engine_frame(e);
    ck_assert_int_eq(g_nwaits, 4);
    ck_assert_uint_eq(g_waits[0], T0 + 1 * P10);
    ck_assert_uint_eq(g_waits[1], T0 + 2 * P10);
    ck_assert_uint_eq(g_waits[2], T0 + 3 * P10); /* still on the grid */
    ck_assert_uint_eq(g_waits[3], T0 + 4 * P10);
    const tk_frame_info *f = tk_engine_last_frame(e);
    ck_assert_uint_eq(f->start_ns, T0 + 4 * P10);
    ck_assert_uint_eq(f->deadline_ns, T0 + 4 * P10);
    /* dt is still the real time between starts: the late frame's 130 ms,
     * then the 70 ms that paid it back. */
    tk_world_time t;
    tk_world_get_time(tk_engine_world(e), &t);
    ck_assert_double_eq_tol(t.raw_dt, 0.1, 1e-9);
    ck_assert_double_eq_tol(t.real_time, 0.5, 1e-9); /* 5 frames, 5 periods */
    tk_engine_free(e);
}
END_TEST

/* Every wake-up 1 ms late, 60 Hz, 600 frames: unreal runs a period plus the
 * lateness per frame (59.64 frames per second); steady's average period is
 * the period exactly (the constant lateness cancels out). */
START_TEST(engine_steady_average_rate_is_the_tick_rate)
{
    for (int k = 0; k < 2; k++) {
        tk_pacing pacing = k ? TK_PACING_STEADY : TK_PACING_UNREAL;
        tk_engine_t *e = mk_paced(60, pacing);
        for (int i = 0; i < 64; i++)
            g_oversleep[i] = 1000000;
        g_work = 2000000; /* 2 ms of work per frame */
        const uint64_t period = 16666667;
        tk_engine_frame(e); /* at once */
        tk_engine_frame(e); /* the first one that waited (1 ms late) */
        uint64_t first = tk_engine_last_frame(e)->start_ns;
        for (int i = 0; i < 600; i++) {
            g_nwaits = 0; /* keep the oversleep table in range */
            tk_engine_frame(e);
        }
        uint64_t last = tk_engine_last_frame(e)->start_ns;
        if (pacing == TK_PACING_STEADY) {
            ck_assert_uint_eq(last - first, 600 * period);
            ck_assert_double_eq_tol(tk_engine_behind_s(e), 0.001, 1e-12);
        } else {
            ck_assert_uint_eq(last - first, 600 * (period + 1000000));
        }
        tk_engine_free(e);
    }
}
END_TEST

/* Frames of 250 ms at 10 Hz: steady runs them back to back (polling, no
 * wait) while they fall behind, and once one starts more than
 * TK_PACING_STEADY_MAX_BEHIND periods after its grid point the grid starts
 * again at that frame; when the work stops, frames are back on a grid. */
START_TEST(engine_steady_reanchors_instead_of_bursting)
{
    tk_engine_t *e = mk_paced(10, TK_PACING_STEADY);
    g_work = 250000000;
    /* Frame k starts at T0 + 250 ms * k; its grid point is T0 + 100 ms * k,
     * so it is 150 ms * k late: frame 3 is 450 ms > 400 ms late and the
     * grid re-anchors there. */
    uint64_t start[6];
    for (int i = 0; i < 6; i++) {
        tk_engine_frame(e);
        start[i] = tk_engine_last_frame(e)->start_ns;
        ck_assert_uint_eq(start[i], T0 + 250000000ull * (uint64_t)i);
    }
    for (int i = 0; i < g_nwaits; i++)
        ck_assert_uint_eq(g_waits[i], 0); /* polls only: behind all along */
    ck_assert_uint_eq(tk_engine_last_frame(e)->deadline_ns, start[3] + 2 * P10);
    /* Behind: what re-anchoring dropped (450 ms at frame 3) plus the current
     * lateness (frame 5 is 300 ms behind the grid started at frame 3). */
    ck_assert_double_eq_tol(tk_engine_behind_s(e), 0.45 + 0.3, 1e-9);
    g_work = 0;
    g_nwaits = 0;
    /* Frame 6 (grid point start[3] + 300 ms = start[5] - 200 ms: 450 ms
     * late, re-anchors again); from then on, a wait of one period each. */
    tk_engine_frame(e);
    uint64_t s6 = tk_engine_last_frame(e)->start_ns;
    ck_assert_uint_eq(s6, start[5] + 250000000ull);
    tk_engine_frame(e);
    tk_engine_frame(e);
    ck_assert_int_eq(g_nwaits, 3);
    ck_assert_uint_eq(g_waits[0], 0);
    ck_assert_uint_eq(g_waits[1], s6 + P10);
    ck_assert_uint_eq(g_waits[2], s6 + 2 * P10);
    ck_assert_double_eq_tol(tk_engine_behind_s(e), 0.0, 1e-12);
    tk_engine_free(e);
}
END_TEST

/* A short stall (one 250 ms frame at 10 Hz) is caught up: the frames after
 * it run back to back until they are on the grid again, so no frame of the
 * grid is lost. */
START_TEST(engine_steady_catches_up_a_short_stall)
{
    tk_engine_t *e = mk_paced(10, TK_PACING_STEADY);
    tk_engine_frame(e); /* frame 0 at T0 */
    g_work = 250000000;
    tk_engine_frame(e); /* frame 1 at T0 + 100 ms, ends at T0 + 350 ms */
    g_work = 10000000;
    g_nwaits = 0;
    tk_engine_frame(e); /* frame 2: due at 200, starts at 350 */
    ck_assert_uint_eq(tk_engine_last_frame(e)->start_ns, T0 + 350000000ull);
    ck_assert_double_eq_tol(tk_engine_behind_s(e), 0.15, 1e-9);
    tk_engine_frame(e); /* frame 3: due at 300, starts at 360 */
    ck_assert_uint_eq(tk_engine_last_frame(e)->start_ns, T0 + 360000000ull);
    tk_engine_frame(e); /* frame 4: due at 400, waits */
    ck_assert_uint_eq(tk_engine_last_frame(e)->start_ns, T0 + 400000000ull);
    ck_assert_int_eq(g_nwaits, 3);
    ck_assert_uint_eq(g_waits[0], 0);
    ck_assert_uint_eq(g_waits[1], 0);
    ck_assert_uint_eq(g_waits[2], T0 + 400000000ull);
    ck_assert_double_eq_tol(tk_engine_behind_s(e), 0.0, 1e-12);
    tk_world_time t;
    tk_world_get_time(tk_engine_world(e), &t);
    ck_assert_double_eq_tol(t.real_time, 0.5, 1e-9); /* 5 frames in 5 periods */
    /* Unreal, the same frames: the 150 ms are lost. */
    tk_engine_free(e);
    e = mk_paced(10, TK_PACING_UNREAL);
    tk_engine_frame(e);
    g_work = 250000000;
    tk_engine_frame(e);
    g_work = 10000000;
    tk_engine_frame(e);
    tk_engine_frame(e);
    tk_engine_frame(e);
    ck_assert_uint_eq(tk_engine_last_frame(e)->start_ns, T0 + 550000000ull);
    tk_engine_free(e);
}
END_TEST

/* Switching pacing between frames: steady starts its grid at the last
 * frame's start; a rate change keeps the grid's last point; a sprint
 * (unpaced) re-anchors it at every frame. */
START_TEST(engine_pacing_switch_and_rate_change)
{
    tk_engine_t *e = mk_paced(10, TK_PACING_UNREAL);
    g_oversleep[0] = 5000000;
    tk_engine_frame(e);
    tk_engine_frame(e); /* due T0 + 100, starts 5 ms late */
    uint64_t s1 = tk_engine_last_frame(e)->start_ns;
    ck_assert_uint_eq(s1, T0 + P10 + 5000000);
    ck_assert_int_eq(tk_engine_set_pacing(e, TK_PACING_STEADY), 0);
    ck_assert_int_eq(tk_engine_pacing(e), TK_PACING_STEADY);
    ck_assert_int_eq(tk_engine_set_pacing(e, (tk_pacing)9), TK_EINVAL);
    ck_assert_int_eq(tk_engine_pacing(e), TK_PACING_STEADY);
    g_oversleep[1] = 7000000;
    tk_engine_frame(e); /* the grid starts at s1 */
    tk_engine_frame(e);
    ck_assert_uint_eq(g_waits[1], s1 + P10);
    ck_assert_uint_eq(g_waits[2], s1 + 2 * P10);
    /* 20 Hz from the last grid point on. */
    ck_assert_int_eq(tk_engine_set_tick_rate(e, 20), 0);
    tk_engine_frame(e);
    ck_assert_uint_eq(g_waits[3], s1 + 2 * P10 + P10 / 2);
    /* A sprint, then paced again: the grid continues from the last start. */
    tk_engine_set_unpaced(e, true);
    g_work = 1000000;
    tk_engine_frame(e);
    tk_engine_frame(e);
    uint64_t sp = tk_engine_last_frame(e)->start_ns;
    tk_engine_set_unpaced(e, false);
    g_work = 0;
    int n = g_nwaits;
    tk_engine_frame(e);
    ck_assert_uint_eq(g_waits[n], sp + P10 / 2);
    tk_engine_free(e);
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
    tcase_add_test(tc, engine_pacing_default_is_unreal);
    tcase_add_test(tc, engine_unreal_late_wakeup_is_lost);
    tcase_add_test(tc, engine_steady_late_wakeup_is_paid_back);
    tcase_add_test(tc, engine_steady_average_rate_is_the_tick_rate);
    tcase_add_test(tc, engine_steady_reanchors_instead_of_bursting);
    tcase_add_test(tc, engine_steady_catches_up_a_short_stall);
    tcase_add_test(tc, engine_pacing_switch_and_rate_change);
    tcase_add_test(tc, engine_swap_world);
    tcase_add_test(tc, engine_next_dt_overrides_once);
    tcase_add_test(tc, engine_frames_done);
    tcase_add_test(tc, engine_swap_world_keeps_owed_steps_while_paused);
    suite_add_tcase(s, tc);
    return s;
}

TK_CHECK_MAIN(engine_suite)
