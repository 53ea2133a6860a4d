/*
 * test_timer.c - unit tests of the timer manager (src/core/timer.c).
 *
 * Every test drives an engine with a fixed dt (0.1 s unless said otherwise),
 * so the manager's internal time advances in exact steps: after k frames it
 * is k * 0.1 s, and a timer set before frame 0 with delay d is activated at
 * the end of frame 0 with expiry 0.1 + d.  Code "between frames" runs after
 * the frame counter moved on (the manager has not ticked this frame); the
 * pre_world hook runs before the world tick of a frame but is the request
 * slot, Unreal's deferred commands of the frame that just ran (its counter
 * has not moved for the manager: ticked, unless that was a pause frame); the
 * post_frame hook runs after the world tick (the manager has ticked).  Unreal's rules under test are those of
 * UE-SEMANTICS 4; timer_model_random checks the firing sequence, statuses,
 * remaining/elapsed times, counts and next_due against a direct model of
 * those rules over random operations at every wheel level.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickd/alloc.h"
#include "tickd/clock.h"
#include "tickd/engine.h"
#include "tickd/error.h"
#include "tickd/timer.h"
#include "tickd/world.h"
#include "check_main.h"

#define TOL 1e-9

/* For loops: Check's fork mode reports every passing ck_assert through a
 * pipe, which would dominate the run time of the bulk and model tests. */
#define REQUIRE(c)                                                             \
    do {                                                                       \
        if (!(c))                                                              \
            ck_abort_msg("line %d: %s", __LINE__, #c);                         \
    } while (0)
#define IDX(h) ((h) & 0xFFFFFFu)
#define SERIAL(h) ((h) >> 24)

/* ---- fixture: an engine with a fixed dt and two hooks ------------------- */

static tk_engine_t *E;
static tk_world_t *W;
static void (*g_pre)(void);  /* run in the pre_world hook (before the pass) */
static void (*g_post)(void); /* run in the post_frame hook (after the pass) */

static void pre_hook(void *ud, tk_engine_t *e) { if (g_pre) g_pre(); }
static void post_hook(void *ud, tk_engine_t *e, const tk_frame_info *f)
{
    if (g_post)
        g_post();
}

static void engine_open(double dt)
{
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    d.tick_rate = 0;
    d.fixed_dt = dt;
    d.pre_world = pre_hook;
    d.post_frame = post_hook;
    ck_assert_int_eq(tk_engine_new(&d, &E), 0);
    W = tk_engine_world(E);
    ck_assert_ptr_nonnull(W);
}

static void setup(void)
{
    g_pre = NULL;
    g_post = NULL;
    engine_open(0.1);
}

static void teardown(void)
{
    tk_engine_free(E);
    E = NULL;
    W = NULL;
}

static void frames(int n)
{
    for (int i = 0; i < n; i++)
        REQUIRE(tk_engine_frame(E) == 0);
}

/* ---- callbacks that record what happened ------------------------------- */

typedef struct call {
    int id;
    tk_timer_handle h;
    uint64_t frame;
    double mtime;     /* manager time during the call */
} call;

#define LOG_MAX 4096
static call g_log[LOG_MAX];
static int g_n;
static int g_freed[64]; /* free_ud calls by id */

static void log_fn(void *ud, tk_timer_handle h, tk_world_t *w)
{
    REQUIRE(g_n < LOG_MAX);
    g_log[g_n++] = (call){(int)(intptr_t)ud, h, tk_world_frame(w),
                          tk_timer_manager_time(w)};
}

static void free_fn(void *ud) { g_freed[(intptr_t)ud]++; }

static int calls_of(int id)
{
    int n = 0;
    for (int i = 0; i < g_n; i++)
        n += g_log[i].id == id;
    return n;
}

static int calls_in_frame(int id, uint64_t frame)
{
    int n = 0;
    for (int i = 0; i < g_n; i++)
        n += g_log[i].id == id && g_log[i].frame == frame;
    return n;
}

static tk_timer_desc mkdesc(double rate, bool loop, double first_delay,
                            tk_timer_fn fn, intptr_t id)
{
    tk_timer_desc d = {0};
    d.rate = rate;
    d.loop = loop;
    d.first_delay = first_delay;
    d.fn = fn;
    d.ud = (void *)id;
    d.free_ud = free_fn;
    return d;
}

static tk_timer_handle set_timer(double rate, bool loop, double first_delay,
                                 tk_timer_fn fn, intptr_t id)
{
    tk_timer_desc d = mkdesc(rate, loop, first_delay, fn, id);
    tk_timer_handle h = TK_TIMER_NONE;
    ck_assert_int_eq(tk_timer_set(W, &d, &h), 0);
    ck_assert_uint_ne(h, TK_TIMER_NONE);
    return h;
}

static tk_timer_info info_of(tk_timer_handle h)
{
    tk_timer_info in;
    ck_assert_int_eq(tk_timer_get(W, h, &in), 0);
    return in;
}

static void assert_counts(size_t active, size_t paused, size_t pending)
{
    tk_timer_counts c;
    tk_timer_get_counts(W, &c);
    ck_assert_uint_eq(c.active, active);
    ck_assert_uint_eq(c.paused, paused);
    ck_assert_uint_eq(c.pending, pending);
}

static void reset_log(void)
{
    g_n = 0;
    memset(g_freed, 0, sizeof g_freed);
}

/* Handles shared with callbacks of the test that is running. */
static tk_timer_handle g_h[8];

/* ---- pending -> active, remaining and elapsed -------------------------- */

START_TEST(timer_pending_to_active)
{
    reset_log();
    tk_timer_handle h = set_timer(1.0, false, -1, log_fn, 1);
    tk_timer_info in = info_of(h);
    ck_assert_int_eq(in.status, TK_TIMER_PENDING);
    ck_assert_double_eq_tol(in.rate, 1.0, TOL);
    ck_assert_double_eq_tol(in.remaining, 1.0, TOL);
    ck_assert_double_eq_tol(in.elapsed, 0.0, TOL);
    ck_assert(!in.loop);
    ck_assert_uint_eq(in.fired, 0);
    assert_counts(0, 0, 1);

    /* Activated at the end of frame 0's pass: expiry 0.1 + 1.0; the frame's
     * own dt did not count toward it. */
    frames(1);
    in = info_of(h);
    ck_assert_int_eq(in.status, TK_TIMER_ACTIVE);
    ck_assert_double_eq_tol(in.remaining, 1.0, TOL);
    ck_assert_double_eq_tol(in.elapsed, 0.0, TOL);
    assert_counts(1, 0, 0);

    frames(1);
    in = info_of(h);
    ck_assert_double_eq_tol(in.remaining, 0.9, TOL);
    ck_assert_double_eq_tol(in.elapsed, 0.1, TOL);

    frames(9); /* internal time 1.1 == expiry: not yet (strict) */
    ck_assert_int_eq(g_n, 0);
    ck_assert_double_eq_tol(info_of(h).remaining, 0.0, TOL);
    frames(1); /* 1.2 > 1.1 */
    ck_assert_int_eq(g_n, 1);
    ck_assert_uint_eq(g_log[0].frame, 11);
    ck_assert_uint_eq(g_log[0].h, h);
    ck_assert(!tk_timer_exists(W, h));
    ck_assert_int_eq(g_freed[1], 1);
    assert_counts(0, 0, 0);
}
END_TEST

START_TEST(timer_first_delay_elapsed_negative)
{
    reset_log();
    tk_timer_handle h = set_timer(1.0, true, 3.0, log_fn, 1);
    tk_timer_info in = info_of(h);
    ck_assert_int_eq(in.status, TK_TIMER_PENDING);
    ck_assert_double_eq_tol(in.remaining, 3.0, TOL);
    ck_assert_double_eq_tol(in.elapsed, -2.0, TOL); /* rate - remaining */

    frames(1); /* active, expiry 3.1 */
    in = info_of(h);
    ck_assert_int_eq(in.status, TK_TIMER_ACTIVE);
    ck_assert_double_eq_tol(in.remaining, 3.0, TOL);
    ck_assert_double_eq_tol(in.elapsed, -2.0, TOL);

    frames(31); /* 3.2 > 3.1: first call at frame 31 */
    ck_assert_int_eq(g_n, 1);
    ck_assert_uint_eq(g_log[0].frame, 31);
    /* then every 1.0 s: expiry 4.1 */
    in = info_of(h);
    ck_assert_double_eq_tol(in.remaining, 0.9, TOL);
    ck_assert_double_eq_tol(in.elapsed, 0.1, TOL);

    /* first_delay 0: expiry = activation time, fires in the next pass */
    reset_log();
    tk_timer_handle z = set_timer(5.0, false, 0.0, log_fn, 2);
    ck_assert_double_eq_tol(info_of(z).remaining, 0.0, TOL);
    ck_assert_double_eq_tol(info_of(z).elapsed, 5.0, TOL);
    frames(1);
    ck_assert_int_eq(calls_of(2), 0);
    frames(1);
    ck_assert_int_eq(calls_of(2), 1);
}
END_TEST

/* ---- catch-up ------------------------------------------------------------ */

START_TEST(timer_catch_up)
{
    reset_log();
    tk_timer_handle a = set_timer(0.035, true, -1, log_fn, 1); /* exp 0.135 */
    set_timer(0.05, false, -1, log_fn, 2);                     /* exp 0.15  */
    frames(1);
    ck_assert_int_eq(g_n, 0);
    frames(1); /* now 0.2: trunc(0.065 / 0.035) + 1 = 2 calls, then B */
    ck_assert_int_eq(g_n, 3);
    ck_assert_int_eq(g_log[0].id, 1);
    ck_assert_int_eq(g_log[1].id, 1);
    ck_assert_int_eq(g_log[2].id, 2);
    ck_assert_double_eq_tol(g_log[0].mtime, 0.2, TOL);
    /* expiry moved by 2 * rate: 0.205 */
    ck_assert_double_eq_tol(info_of(a).remaining, 0.005, TOL);
    frames(1); /* now 0.3: trunc(0.095 / 0.035) + 1 = 3; expiry 0.31 */
    ck_assert_int_eq(calls_in_frame(1, 2), 3);
    frames(1); /* now 0.4: trunc(0.09 / 0.035) + 1 = 3; expiry 0.415 */
    ck_assert_int_eq(calls_in_frame(1, 3), 3);
    ck_assert_uint_eq(info_of(a).fired, 8);
    ck_assert_double_eq_tol(info_of(a).remaining, 0.015, TOL);
}
END_TEST

/* ---- strict expiry at exact multiples ------------------------------------ */

START_TEST(timer_strict_expiry)
{
    reset_log();
    tk_timer_handle once = set_timer(0.1, false, -1, log_fn, 1);
    tk_timer_handle loop = set_timer(0.1, true, -1, log_fn, 2);
    ck_assert_int_eq(info_of(once).status, TK_TIMER_PENDING);
    frames(1); /* pending during frame 0, active after: expiry 0.2 */
    ck_assert_int_eq(info_of(once).status, TK_TIMER_ACTIVE);
    ck_assert_int_eq(g_n, 0);
    frames(1); /* now 0.2, not > 0.2 */
    ck_assert_int_eq(g_n, 0);
    ck_assert_double_eq_tol(info_of(once).remaining, 0.0, TOL);
    ck_assert_double_eq_tol(info_of(loop).remaining, 0.0, TOL);
    frames(1); /* now 0.3 > 0.2 */
    ck_assert_int_eq(calls_in_frame(1, 2), 1);
    ck_assert(!tk_timer_exists(W, once));
    /* The loop at an exact multiple: (0.3 - 0.2) / 0.1 = 1 -> 2 calls, then
     * expiry 0.4 == now of the next frame, so the pattern is 0, 2, 0, 2. */
    ck_assert_int_eq(calls_in_frame(2, 2), 2);
    frames(4);
    ck_assert_int_eq(calls_in_frame(2, 3), 0);
    ck_assert_int_eq(calls_in_frame(2, 4), 2);
    ck_assert_int_eq(calls_in_frame(2, 5), 0);
    ck_assert_int_eq(calls_in_frame(2, 6), 2);
    ck_assert_uint_eq(info_of(loop).fired, 6);
}
END_TEST

/* ---- clearing from callbacks --------------------------------------------- */

static int g_freed_at_call;

static void clear_self_fn(void *ud, tk_timer_handle h, tk_world_t *w)
{
    log_fn(ud, h, w);
    ck_assert_int_eq(tk_timer_clear(w, h), 0);
    ck_assert(!tk_timer_exists(w, h));
    ck_assert_int_eq(tk_timer_clear(w, h), TK_ENOENT);
    /* the ud stays valid until the callback returns */
    g_freed_at_call = g_freed[(intptr_t)ud];
}

START_TEST(timer_clear_own_callback)
{
    reset_log();
    tk_timer_handle a = set_timer(0.035, true, -1, clear_self_fn, 1);
    frames(2); /* would run 2 calls in frame 1; the first clears it */
    ck_assert_int_eq(calls_of(1), 1);
    ck_assert_int_eq(g_freed_at_call, 0);
    ck_assert_int_eq(g_freed[1], 1);
    ck_assert(!tk_timer_exists(W, a));
    assert_counts(0, 0, 0);
    frames(3);
    ck_assert_int_eq(calls_of(1), 1);
    ck_assert_int_eq(g_freed[1], 1);
}
END_TEST

static void clear_other_fn(void *ud, tk_timer_handle h, tk_world_t *w)
{
    log_fn(ud, h, w);
    ck_assert_int_eq(tk_timer_clear(w, g_h[1]), 0);
    /* the cleared timer's record is reused at once by a new timer */
    tk_timer_desc d = mkdesc(0.01, false, -1, log_fn, 3);
    ck_assert_int_eq(tk_timer_set(w, &d, &g_h[2]), 0);
    ck_assert_int_eq(tk_timer_get(w, g_h[2], &(tk_timer_info){0}), 0);
}

START_TEST(timer_clear_other_due)
{
    reset_log();
    g_h[0] = set_timer(0.05, false, -1, clear_other_fn, 1); /* exp 0.15 */
    g_h[1] = set_timer(0.08, false, -1, log_fn, 2);         /* exp 0.18 */
    frames(2); /* both due in frame 1; the first clears the second */
    ck_assert_int_eq(calls_of(1), 1);
    ck_assert_int_eq(calls_of(2), 0);
    ck_assert_int_eq(g_freed[2], 1);
    ck_assert(!tk_timer_exists(W, g_h[1]));
    /* the new timer took the freed record: the stale due entry of the
     * cleared timer did not fire it; it was pending until the pass ended */
    ck_assert_uint_eq(IDX(g_h[2]), IDX(g_h[1]));
    ck_assert_uint_ne(g_h[2], g_h[1]);
    ck_assert_int_eq(calls_of(3), 0);
    tk_timer_info in = info_of(g_h[2]);
    ck_assert_int_eq(in.status, TK_TIMER_ACTIVE);
    ck_assert_double_eq_tol(in.remaining, 0.01, TOL);
    frames(1);
    ck_assert_int_eq(calls_of(3), 1);
    ck_assert_uint_eq(g_log[g_n - 1].frame, 2);
}
END_TEST

/* ---- pause / unpause ----------------------------------------------------- */

static void pause_unpause_post(void)
{
    if (tk_world_frame(W) == 4) {
        ck_assert(tk_timer_ticked_this_frame(W));
        ck_assert_int_eq(tk_timer_pause(W, g_h[0]), 0);
        ck_assert_int_eq(tk_timer_unpause(W, g_h[0]), 0);
        /* after the pass: active again at once, same remaining */
        tk_timer_info in = info_of(g_h[0]);
        ck_assert_int_eq(in.status, TK_TIMER_ACTIVE);
        ck_assert_double_eq_tol(in.remaining, 0.6, TOL);
    }
}

START_TEST(timer_pause_unpause_same_frame)
{
    reset_log();
    /* Before the pass (between frames): pause + unpause makes it pending,
     * so this frame's dt does not count: it fires one frame later. */
    tk_timer_handle h = set_timer(1.0, false, -1, log_fn, 1); /* exp 1.1 */
    frames(5); /* now 0.5 */
    ck_assert_int_eq(tk_timer_pause(W, h), 0);
    tk_timer_info in = info_of(h);
    ck_assert_int_eq(in.status, TK_TIMER_PAUSED);
    ck_assert_double_eq_tol(in.remaining, 0.6, TOL);
    ck_assert_int_eq(tk_timer_unpause(W, h), 0);
    in = info_of(h);
    ck_assert_int_eq(in.status, TK_TIMER_PENDING);
    ck_assert_double_eq_tol(in.remaining, 0.6, TOL);
    assert_counts(0, 0, 1);
    frames(1); /* now 0.6, activated: expiry 1.2 */
    ck_assert_double_eq_tol(info_of(h).remaining, 0.6, TOL);
    frames(6);
    ck_assert_int_eq(g_n, 0);
    frames(1);
    ck_assert_int_eq(g_n, 1);
    ck_assert_uint_eq(g_log[0].frame, 12);

    /* After the pass (post_frame hook): active again at once, so it fires
     * when it would have without the pause. */
    teardown();
    setup();
    reset_log();
    g_h[0] = set_timer(1.0, false, -1, log_fn, 1); /* exp 1.1 */
    g_post = pause_unpause_post;
    frames(12);
    ck_assert_int_eq(g_n, 1);
    ck_assert_uint_eq(g_log[0].frame, 11);
}
END_TEST

static void pause_unpause_other_fn(void *ud, tk_timer_handle h, tk_world_t *w)
{
    log_fn(ud, h, w);
    ck_assert_int_eq(tk_timer_pause(w, g_h[1]), 0);
    ck_assert_int_eq(tk_timer_unpause(w, g_h[1]), 0);
    tk_timer_info in;
    ck_assert_int_eq(tk_timer_get(w, g_h[1], &in), 0);
    ck_assert_int_eq(in.status, TK_TIMER_PENDING); /* inside the pass */
    ck_assert_double_eq_tol(in.remaining, 0.4, TOL);
}

START_TEST(timer_pause_unpause_in_callback)
{
    reset_log();
    g_h[0] = set_timer(0.05, false, -1, pause_unpause_other_fn, 1); /* 0.15 */
    g_h[1] = set_timer(0.5, false, -1, log_fn, 2);                  /* 0.6  */
    frames(2); /* A fires at now 0.2, B: remaining 0.4, pending */
    tk_timer_info in = info_of(g_h[1]);
    ck_assert_int_eq(in.status, TK_TIMER_ACTIVE);
    ck_assert_double_eq_tol(in.remaining, 0.4, TOL); /* expiry 0.2 + 0.4 */
    frames(5);
    ck_assert_int_eq(calls_of(2), 1);
    ck_assert_uint_eq(g_log[g_n - 1].frame, 6);
}
END_TEST

START_TEST(timer_pause_keeps_remaining)
{
    reset_log();
    tk_timer_handle h = set_timer(1.0, false, -1, log_fn, 1); /* exp 1.1 */
    frames(3);                                                /* now 0.3 */
    ck_assert_int_eq(tk_timer_pause(W, h), 0);
    ck_assert_int_eq(tk_timer_pause(W, h), 0); /* no-op */
    frames(50);
    tk_timer_info in = info_of(h);
    ck_assert_int_eq(in.status, TK_TIMER_PAUSED);
    ck_assert_double_eq_tol(in.remaining, 0.8, TOL);
    ck_assert_double_eq_tol(in.elapsed, 0.2, TOL);
    ck_assert_double_eq_tol(tk_timer_manager_time(W), 5.3, TOL);
    ck_assert_int_eq(g_n, 0);
    assert_counts(0, 1, 0);
    ck_assert_double_lt(tk_timer_next_due(W), 0);

    ck_assert_int_eq(tk_timer_unpause(W, h), 0); /* pending */
    ck_assert_int_eq(tk_timer_unpause(W, h), 0); /* no-op: not paused */
    ck_assert_int_eq(info_of(h).status, TK_TIMER_PENDING);
    frames(1); /* now 5.4, expiry 6.2 */
    ck_assert_double_eq_tol(info_of(h).remaining, 0.8, TOL);
    frames(8);
    ck_assert_int_eq(g_n, 0);
    frames(1); /* 6.4 > 6.2 */
    ck_assert_int_eq(g_n, 1);
    ck_assert_uint_eq(g_log[0].frame, 62);

    /* pausing a pending timer keeps its remaining too */
    tk_timer_handle p = set_timer(2.0, false, 0.5, log_fn, 2);
    ck_assert_int_eq(tk_timer_pause(W, p), 0);
    assert_counts(0, 1, 0);
    frames(10);
    ck_assert_double_eq_tol(info_of(p).remaining, 0.5, TOL);
    ck_assert_double_eq_tol(info_of(p).elapsed, 1.5, TOL);
}
END_TEST

static void pause_self_fn(void *ud, tk_timer_handle h, tk_world_t *w)
{
    log_fn(ud, h, w);
    ck_assert_int_eq(tk_timer_pause(w, h), 0);
}

START_TEST(timer_pause_executing)
{
    reset_log();
    /* A looping timer pausing itself stops its catch-up calls and keeps
     * expire - now as remaining (negative: it was due), as Unreal does. */
    tk_timer_handle a = set_timer(0.035, true, -1, pause_self_fn, 1);
    /* A one-shot pausing itself is removed. */
    tk_timer_handle b = set_timer(0.05, false, -1, pause_self_fn, 2);
    frames(2); /* frame 1: now 0.2, A expiry 0.135, B expiry 0.15 */
    ck_assert_int_eq(calls_of(1), 1);
    ck_assert_int_eq(calls_of(2), 1);
    ck_assert(!tk_timer_exists(W, b));
    ck_assert_int_eq(g_freed[2], 1);
    tk_timer_info in = info_of(a);
    ck_assert_int_eq(in.status, TK_TIMER_PAUSED);
    ck_assert_double_eq_tol(in.remaining, -0.065, TOL);
    ck_assert_double_eq_tol(in.elapsed, 0.1, TOL);
    ck_assert_uint_eq(in.fired, 1);
    assert_counts(0, 1, 0);

    ck_assert_int_eq(tk_timer_unpause(W, a), 0);
    frames(1); /* frame 2: activated at 0.3 - 0.065 = 0.235 */
    ck_assert_int_eq(calls_of(1), 1);
    ck_assert_double_eq_tol(info_of(a).remaining, -0.065, TOL);
    ck_assert_double_lt(tk_timer_next_due(W), TOL);
    frames(1); /* frame 3: now 0.4: trunc(0.165 / 0.035) + 1 = 5 calls; the
                  first pauses it again */
    ck_assert_int_eq(calls_of(1), 2);
    ck_assert_double_eq_tol(info_of(a).remaining, -0.165, TOL);
}
END_TEST

/* ---- set_for_next_tick --------------------------------------------------- */

static void next_tick_pre(void)
{
    if (tk_world_frame(W) == 3) {
        /* pre_world is the deferred commands' slot: the manager ticked in
         * the frame that just ran (the counter has not moved for it) */
        ck_assert(tk_timer_ticked_this_frame(W));
        tk_timer_desc d = mkdesc(NAN, true, NAN, log_fn, 3);
        ck_assert_int_eq(tk_timer_set_for_next_tick(W, &d, &g_h[3]), 0);
    }
}

static void next_tick_post(void)
{
    if (tk_world_frame(W) == 1) {
        ck_assert(tk_timer_ticked_this_frame(W));
        tk_timer_desc d = mkdesc(0, false, -1, log_fn, 2);
        ck_assert_int_eq(tk_timer_set_for_next_tick(W, &d, &g_h[2]), 0);
        ck_assert_int_eq(info_of(g_h[2]).status, TK_TIMER_ACTIVE);
    }
}

static void next_tick_from_cb(void *ud, tk_timer_handle h, tk_world_t *w)
{
    log_fn(ud, h, w);
    tk_timer_desc d = mkdesc(1, false, -1, log_fn, 5);
    ck_assert_int_eq(tk_timer_set_for_next_tick(w, &d, &g_h[5]), 0);
    tk_timer_info in;
    ck_assert_int_eq(tk_timer_get(w, g_h[5], &in), 0);
    ck_assert_int_eq(in.status, TK_TIMER_ACTIVE); /* active, expiry = now */
    ck_assert_double_eq_tol(in.remaining, 0.0, TOL);
}

START_TEST(timer_set_for_next_tick)
{
    reset_log();
    g_pre = next_tick_pre;
    g_post = next_tick_post;
    /* between frames, before frame 0: active at once, fires in frame 0;
     * rate, loop and first_delay of the desc are ignored */
    tk_timer_desc d = mkdesc(-5, true, 7, log_fn, 1);
    ck_assert_int_eq(tk_timer_set_for_next_tick(W, &d, &g_h[1]), 0);
    tk_timer_info in = info_of(g_h[1]);
    ck_assert_int_eq(in.status, TK_TIMER_ACTIVE);
    ck_assert(!in.loop);
    ck_assert_double_eq_tol(in.rate, 0.0, TOL);
    assert_counts(1, 0, 0);
    ck_assert_double_eq_tol(tk_timer_next_due(W), 0.0, TOL);
    frames(1);
    ck_assert_int_eq(calls_in_frame(1, 0), 1);
    ck_assert(!tk_timer_exists(W, g_h[1]));
    ck_assert_int_eq(g_freed[1], 1);

    /* after the pass of frame 1 (post_frame): fires in frame 2 */
    frames(1);
    ck_assert_int_eq(calls_of(2), 0);
    frames(1);
    ck_assert_int_eq(calls_in_frame(2, 2), 1);

    /* before the pass of frame 3 (pre_world): fires in frame 3 */
    frames(1);
    ck_assert_int_eq(calls_in_frame(3, 3), 1);
    ck_assert_int_eq(calls_of(3), 1);

    /* from a callback (inside the pass of frame 5): fires in frame 6 */
    set_timer(0.05, false, -1, next_tick_from_cb, 4); /* set between 3, 4 */
    frames(2);
    ck_assert_int_eq(calls_in_frame(4, 5), 1);
    ck_assert_int_eq(calls_of(5), 0);
    frames(1);
    ck_assert_int_eq(calls_in_frame(5, 6), 1);
    ck_assert_int_eq(calls_of(5), 1);
    assert_counts(0, 0, 0);
}
END_TEST

/* ---- setting from a callback --------------------------------------------- */

static void set_in_cb_fn(void *ud, tk_timer_handle h, tk_world_t *w)
{
    log_fn(ud, h, w);
    ck_assert(!tk_timer_ticked_this_frame(w));
    tk_timer_desc d = mkdesc(0.01, true, -1, log_fn, 2); /* < dt */
    ck_assert_int_eq(tk_timer_set(w, &d, &g_h[2]), 0);
    tk_timer_info in;
    ck_assert_int_eq(tk_timer_get(w, g_h[2], &in), 0);
    ck_assert_int_eq(in.status, TK_TIMER_PENDING);
    tk_timer_desc n = mkdesc(0, false, -1, log_fn, 3);
    ck_assert_int_eq(tk_timer_set_for_next_tick(w, &n, &g_h[3]), 0);
    tk_timer_counts c;
    tk_timer_get_counts(w, &c);
    ck_assert_uint_eq(c.pending, 1);
    ck_assert_uint_eq(c.active, 2); /* itself (executing) + next tick */
}

START_TEST(timer_set_in_callback_pending)
{
    reset_log();
    set_timer(0.05, false, -1, set_in_cb_fn, 1); /* fires frame 1, now 0.2 */
    frames(2);
    ck_assert_int_eq(calls_of(1), 1);
    ck_assert_int_eq(calls_of(2), 0); /* pending until the pass ended */
    ck_assert_int_eq(calls_of(3), 0);
    tk_timer_info in = info_of(g_h[2]);
    ck_assert_int_eq(in.status, TK_TIMER_ACTIVE);
    ck_assert_double_eq_tol(in.remaining, 0.01, TOL); /* expiry 0.21 */
    frames(1); /* now 0.3: next-tick (0.2) first, then the loop (0.21):
                  trunc(0.09 / 0.01) + 1 = 10 calls */
    ck_assert_int_eq(g_n, 1 + 1 + 10);
    ck_assert_int_eq(g_log[1].id, 3);
    for (int i = 2; i < 12; i++)
        ck_assert_int_eq(g_log[i].id, 2);
}
END_TEST

/* ---- ordering ------------------------------------------------------------ */

START_TEST(timer_ties_fire_in_set_order)
{
    reset_log();
    /* Fill and partly free the slab so new timers get records in an order
     * unrelated to their set order (the free list is LIFO). */
    tk_timer_handle tmp[10];
    for (int i = 0; i < 10; i++)
        tmp[i] = set_timer(100, false, -1, log_fn, 40);
    for (int i = 0; i < 10; i += 2)
        ck_assert_int_eq(tk_timer_clear(W, tmp[i]), 0);

    /* expiries 0.68, 0.65 (x6), 0.61: none due at 0.6, all at 0.7 */
    set_timer(9, false, 0.58, log_fn, 20);
    for (int id = 10; id < 16; id++)
        set_timer(9, false, 0.55, log_fn, id);
    set_timer(9, false, 0.51, log_fn, 21);
    frames(6);
    ck_assert_int_eq(g_n, 0);
    frames(1);
    ck_assert_int_eq(g_n, 8);
    ck_assert_int_eq(g_log[0].id, 21);
    for (int i = 1; i <= 6; i++)
        ck_assert_int_eq(g_log[i].id, 9 + i);
    ck_assert_int_eq(g_log[7].id, 20);
    for (int i = 0; i < 8; i++)
        ck_assert_uint_eq(g_log[i].frame, 6);

    /* Looping timers with equal rates keep their set order at every firing. */
    reset_log();
    set_timer(0.25, true, -1, log_fn, 31);
    set_timer(0.25, true, -1, log_fn, 30);
    frames(20);
    ck_assert_int_gt(g_n, 10);
    for (int i = 0; i < g_n; i++)
        ck_assert_int_eq(g_log[i].id, i % 2 ? 30 : 31);
}
END_TEST

/* ---- 1M timers ----------------------------------------------------------- */

static uint64_t g_free_count;
static void count_free(void *ud) { g_free_count++; }

START_TEST(timer_million_no_leak)
{
    enum { N = 1000000 };
    tk_timer_handle *hs = malloc(N * sizeof *hs);
    ck_assert_ptr_nonnull(hs);
    g_free_count = 0;
    for (int i = 0; i < N; i++) {
        tk_timer_desc d = {0};
        d.rate = 0.001 + (i % 5000) * 0.013; /* 1 ms .. 65 s */
        d.loop = i % 3 == 0;
        d.first_delay = -1;
        d.free_ud = count_free;
        d.owner = (uint64_t)(i % 1000) + 1;
        REQUIRE(tk_timer_set(W, &d, &hs[i]) == 0);
    }
    assert_counts(0, 0, N);
    frames(3); /* activates all of them; the short ones fire */
    tk_timer_counts c;
    tk_timer_get_counts(W, &c);
    ck_assert_uint_eq(c.active + c.paused + c.pending, N - g_free_count);
    ck_assert_uint_eq(c.pending, 0);
    for (int i = 0; i < N; i += 2)
        if (tk_timer_exists(W, hs[i]))
            REQUIRE(tk_timer_clear(W, hs[i]) == 0);
    frames(2);
    for (int i = 1; i < N; i += 2)
        if (tk_timer_exists(W, hs[i]))
            REQUIRE(tk_timer_clear(W, hs[i]) == 0);
    assert_counts(0, 0, 0);
    ck_assert_uint_eq(g_free_count, N);
    uint64_t cursor = 0;
    tk_timer_handle h;
    ck_assert(!tk_timer_next(W, &cursor, &h));
    ck_assert_double_lt(tk_timer_next_due(W), 0);

    /* Again, reusing the records, then the world frees them. */
    g_free_count = 0;
    for (int i = 0; i < N; i++) {
        tk_timer_desc d = {0};
        d.rate = 0.5 + (i % 100);
        d.first_delay = -1;
        d.free_ud = count_free;
        REQUIRE(tk_timer_set(W, &d, &hs[i]) == 0);
        REQUIRE(IDX(hs[i]) < N);
    }
    frames(1);
    assert_counts(N, 0, 0);
    free(hs);
    tk_engine_free(E);
    E = NULL;
    ck_assert_uint_eq(g_free_count, N);
}
END_TEST

/* ---- handles ------------------------------------------------------------- */

START_TEST(timer_stale_handles)
{
    reset_log();
    tk_timer_info in;
    tk_timer_handle a = set_timer(1, false, -1, log_fn, 1);
    tk_timer_handle b = set_timer(0.05, false, -1, log_fn, 2);
    /* index in the low 24 bits, serial from 1 in the high 40 */
    ck_assert_uint_eq(a, (UINT64_C(1) << 24) | 0);
    ck_assert_uint_eq(b, (UINT64_C(2) << 24) | 1);

    ck_assert_int_eq(tk_timer_clear(W, a), 0);
    ck_assert_int_eq(tk_timer_clear(W, a), TK_ENOENT);
    ck_assert_int_eq(tk_timer_pause(W, a), TK_ENOENT);
    ck_assert_int_eq(tk_timer_unpause(W, a), TK_ENOENT);
    ck_assert_int_eq(tk_timer_get(W, a, &in), TK_ENOENT);
    ck_assert(!tk_timer_exists(W, a));
    ck_assert_ptr_nonnull(strstr(tk_world_last_error(W), "unknown"));

    /* reused record: same index, new serial; the old handle stays unknown */
    tk_timer_handle c = set_timer(1, false, -1, log_fn, 3);
    ck_assert_uint_eq(IDX(c), IDX(a));
    ck_assert_uint_eq(SERIAL(c), 3);
    ck_assert(!tk_timer_exists(W, a));
    ck_assert_int_eq(tk_timer_clear(W, a), TK_ENOENT);
    ck_assert(tk_timer_exists(W, c));

    /* finished one-shot */
    frames(2);
    ck_assert_int_eq(calls_of(2), 1);
    ck_assert_int_eq(tk_timer_get(W, b, &in), TK_ENOENT);
    ck_assert_int_eq(tk_timer_clear(W, b), TK_ENOENT);

    /* made-up handles */
    ck_assert_int_eq(tk_timer_clear(W, TK_TIMER_NONE), TK_ENOENT);
    ck_assert_int_eq(tk_timer_get(W, TK_TIMER_NONE, &in), TK_ENOENT);
    ck_assert_int_eq(tk_timer_clear(W, (UINT64_C(9) << 24) | IDX(c)), TK_ENOENT);
    ck_assert_int_eq(tk_timer_clear(W, (SERIAL(c) << 24) | 500), TK_ENOENT);
    ck_assert_int_eq(tk_timer_clear(W, IDX(c)), TK_ENOENT);
    ck_assert(tk_timer_exists(W, c));
    assert_counts(1, 0, 0);
}
END_TEST

/* ---- owners -------------------------------------------------------------- */

static void clear_owner_fn(void *ud, tk_timer_handle h, tk_world_t *w)
{
    log_fn(ud, h, w);
    ck_assert_uint_eq(tk_timer_clear_owner(w, 5), 2);
    ck_assert(!tk_timer_exists(w, h));
}

START_TEST(timer_clear_owner)
{
    reset_log();
    tk_timer_desc d = mkdesc(1, true, -1, log_fn, 1);
    d.owner = 7;
    tk_timer_handle a, b, c, x;
    ck_assert_int_eq(tk_timer_set(W, &d, &a), 0);
    frames(1);
    d.ud = (void *)2;
    ck_assert_int_eq(tk_timer_set(W, &d, &b), 0); /* pending */
    d.ud = (void *)3;
    ck_assert_int_eq(tk_timer_set(W, &d, &c), 0);
    ck_assert_int_eq(tk_timer_pause(W, c), 0);
    d.ud = (void *)4;
    d.owner = 8;
    ck_assert_int_eq(tk_timer_set(W, &d, &x), 0);
    assert_counts(1, 1, 2);

    ck_assert_uint_eq(tk_timer_clear_owner(W, 7), 3);
    ck_assert(!tk_timer_exists(W, a));
    ck_assert(!tk_timer_exists(W, b));
    ck_assert(!tk_timer_exists(W, c));
    ck_assert(tk_timer_exists(W, x));
    ck_assert_int_eq(g_freed[1] + g_freed[2] + g_freed[3], 3);
    ck_assert_int_eq(g_freed[4], 0);
    ck_assert_uint_eq(tk_timer_clear_owner(W, 7), 0);
    ck_assert_uint_eq(tk_timer_clear_owner(W, 0), 0);
    /* the owner can be used again */
    d.owner = 7;
    d.ud = (void *)10;
    ck_assert_int_eq(tk_timer_set(W, &d, &a), 0);
    ck_assert_uint_eq(tk_timer_clear_owner(W, 7), 1);
    ck_assert_int_eq(g_freed[10], 1);
    ck_assert_uint_eq(tk_timer_clear_owner(W, 12345), 0);
    ck_assert_uint_eq(info_of(x).owner, 8);
    assert_counts(0, 0, 1);

    /* Many owners (the index grows and shrinks), cleared in a mixed order. */
    for (uint64_t o = 100; o < 400; o++) {
        for (int k = 0; k < 3; k++) {
            tk_timer_desc e = mkdesc(1 + k, false, -1, NULL, 0);
            e.free_ud = NULL;
            e.owner = o;
            tk_timer_handle h;
            ck_assert_int_eq(tk_timer_set(W, &e, &h), 0);
        }
    }
    for (uint64_t o = 100; o < 400; o += 2)
        ck_assert_uint_eq(tk_timer_clear_owner(W, o), 3);
    for (uint64_t o = 101; o < 400; o += 2)
        ck_assert_uint_eq(tk_timer_clear_owner(W, o), 3);
    assert_counts(0, 0, 1);

    /* From a callback: clears itself (executing) and a pending sibling. */
    frames(1);
    reset_log();
    tk_timer_desc e = mkdesc(0.035, true, -1, clear_owner_fn, 5);
    e.owner = 5;
    ck_assert_int_eq(tk_timer_set(W, &e, &a), 0);
    frames(1);
    e = mkdesc(10, false, -1, log_fn, 6);
    e.owner = 5;
    ck_assert_int_eq(tk_timer_set(W, &e, &b), 0);
    frames(1); /* a runs 1 of its 2 calls and clears both */
    ck_assert_int_eq(calls_of(5), 1);
    ck_assert_int_eq(g_freed[5], 1);
    ck_assert_int_eq(g_freed[6], 1);
    ck_assert(!tk_timer_exists(W, b));
    ck_assert(tk_timer_exists(W, x));
}
END_TEST

/* The owner index under churn: owners added and removed in random order
 * (open addressing with backward-shift deletion) are always found. */
START_TEST(timer_owner_index_churn)
{
    enum { OWNERS = 5000 };
    static int count[OWNERS];
    uint64_t rng = 12345;
    memset(count, 0, sizeof count);
    for (int round = 0; round < 20000; round++) {
        rng = rng * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
        int o = (int)((rng >> 33) % OWNERS);
        if ((rng >> 20) % 3 == 0) {
            REQUIRE(tk_timer_clear_owner(W, (uint64_t)o + 1) == (size_t)count[o]);
            count[o] = 0;
        } else {
            tk_timer_desc d = mkdesc(1, false, -1, NULL, 0);
            d.free_ud = NULL;
            d.owner = (uint64_t)o + 1;
            tk_timer_handle h;
            REQUIRE(tk_timer_set(W, &d, &h) == 0);
            count[o]++;
        }
    }
    size_t total = 0;
    for (int o = 0; o < OWNERS; o++)
        total += (size_t)count[o];
    assert_counts(0, 0, total);
    for (int o = OWNERS - 1; o >= 0; o -= 2)
        REQUIRE(tk_timer_clear_owner(W, (uint64_t)o + 1) == (size_t)count[o]);
    for (int o = 0; o < OWNERS; o += 2)
        REQUIRE(tk_timer_clear_owner(W, (uint64_t)o + 1) == (size_t)count[o]);
    assert_counts(0, 0, 0);
}
END_TEST

/* ---- snapshot restore ---------------------------------------------------- */

static int g_restore_calls;

static void restore_in_pass_fn(void *ud, tk_timer_handle h, tk_world_t *w)
{
    tk_timer_desc d = mkdesc(1, false, -1, NULL, 0);
    REQUIRE(tk_timer_restore(w, &d, (UINT64_C(77) << 24) | 40, TK_TIMER_ACTIVE, 1,
                             0) == TK_ESTATE);
    g_restore_calls++;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            v = atol(line + 6);
    if (f)
        fclose(f);
    return v;
}

/* Handles stay below 2^53 (exact in JSON): the serial wraps to 1 after the
 * largest, and a handle past it is refused on restore. */
START_TEST(timer_handles_json_safe)
{
    reset_log();
    tk_timer_desc d = mkdesc(0.25, false, -1, log_fn, 1);
    tk_timer_handle top = (TK_TIMER_SERIAL_MAX << 24) | 5;
    ck_assert_uint_lt(top, UINT64_C(1) << 53);
    ck_assert_int_eq(tk_timer_restore(W, &d, top, TK_TIMER_ACTIVE, 0.05, 0), 0);
    ck_assert_int_eq(tk_timer_restore(W, &d, ((TK_TIMER_SERIAL_MAX + 1) << 24) | 6,
                                      TK_TIMER_ACTIVE, 0.05, 0),
                     TK_EINVAL);
    tk_timer_handle h;
    ck_assert_int_eq(tk_timer_set(W, &d, &h), 0);
    ck_assert_uint_eq(h >> 24, 1); /* wrapped */
    ck_assert_uint_lt(h, UINT64_C(1) << 53);
    ck_assert_int_eq(tk_timer_clear(W, h), 0);
    ck_assert_int_eq(tk_timer_clear(W, top), 0);
}
END_TEST

/* Handles whose slots lie far past the records in use (a snapshot naming
 * slot 16,777,214) cost one record each, not every record up to the slot;
 * they fire, pause, clear and list like any other, and the slots they name
 * stay usable by later restores. */
START_TEST(timer_restore_sparse_slots)
{
    reset_log();
    long rss0 = rss_kib();
    tk_timer_desc d = mkdesc(0.25, false, -1, log_fn, 1);
    tk_timer_handle a = (UINT64_C(3) << 24) | 16777214u;
    tk_timer_handle b = (UINT64_C(4) << 24) | 9000000u;
    tk_timer_handle c = (UINT64_C(2) << 24) | 0;
    ck_assert_int_eq(tk_timer_restore(W, &d, c, TK_TIMER_ACTIVE, 0.05, 0), 0);
    ck_assert_int_eq(tk_timer_restore(W, &d, b, TK_TIMER_ACTIVE, 0.15, 0), 0);
    d.ud = (void *)2;
    ck_assert_int_eq(tk_timer_restore(W, &d, a, TK_TIMER_PAUSED, 0.5, 3), 0);
    ck_assert_int_eq(tk_timer_restore(W, &d, a, TK_TIMER_PAUSED, 0.5, 3), TK_EEXIST);
    /* Another handle in a slot an alias's record holds is aliased too. */
    tk_timer_handle e = (UINT64_C(6) << 24) | 1;
    ck_assert_int_eq(tk_timer_restore(W, &d, e, TK_TIMER_PENDING, 0.2, 0), 0);
    ck_assert_msg(rss_kib() - rss0 < 64 * 1024, "RSS grew by %ld KiB", rss_kib() - rss0);
    assert_counts(2, 1, 1);
    ck_assert_uint_eq(info_of(a).fired, 3);
    /* Listing finds each once. */
    uint64_t cur = 0;
    tk_timer_handle h;
    int seen = 0;
    while (tk_timer_next(W, &cur, &h))
        seen += h == a || h == b || h == c || h == e;
    ck_assert_int_eq(seen, 4);
    /* New handles never collide. */
    tk_timer_handle n = set_timer(10, false, -1, NULL, 0);
    ck_assert(n != a && n != b && n != c && n != e);
    ck_assert_uint_gt(SERIAL(n), 6);
    frames(3);
    ck_assert_int_eq(calls_of(1), 2); /* c and b fired, once each */
    ck_assert(!tk_timer_exists(W, b));
    ck_assert_int_eq(tk_timer_unpause(W, a), 0);
    ck_assert_int_eq(tk_timer_clear(W, a), 0);
    ck_assert(!tk_timer_exists(W, a));
    ck_assert_int_eq(tk_timer_clear(W, a), TK_ENOENT);
    /* The slot is free again for a restore. */
    ck_assert_int_eq(tk_timer_restore(W, &d, a, TK_TIMER_PAUSED, 1, 0), 0);
    ck_assert(tk_timer_exists(W, a));
}
END_TEST


/* A world restored from what a snapshot saves (every timer under its
 * handle, the allocation state, the tie order, whether the manager ticked)
 * goes on exactly as the saved one: the same handles for new timers, equal
 * expiries in the same order. */
typedef struct saved_timer {
    tk_timer_info in;
    intptr_t id;
} saved_timer;

static int order_cmp(const void *a, const void *b)
{
    const saved_timer *x = a, *y = b;
    return x->in.order < y->in.order ? -1 : x->in.order > y->in.order;
}

static void run_and_log(tk_engine_t *e, tk_world_t *w, tk_timer_handle *news, int n_frames)
{
    tk_engine_t *keep_e = E;
    tk_world_t *keep_w = W;
    E = e;
    W = w;
    for (int i = 0; i < 3; i++)
        news[i] = set_timer(0.3, false, -1, log_fn, 20 + i);
    frames(n_frames);
    E = keep_e;
    W = keep_w;
}

START_TEST(timer_restore_exact)
{
    reset_log();
    tk_timer_handle h[10];
    /* Equal delays set in one slot: equal expiries, fired in set order. */
    for (int i = 0; i < 8; i++)
        h[i] = set_timer(0.5, i % 3 == 0, -1, log_fn, i + 1);
    frames(1);
    ck_assert_int_eq(tk_timer_clear(W, h[1]), 0);
    ck_assert_int_eq(tk_timer_clear(W, h[5]), 0);
    /* Set in the order slot 5, slot 1 (the free list is LIFO): restored in
     * slot order they would fire the other way round. */
    h[8] = set_timer(0.4, false, 0.4, log_fn, 9);
    h[9] = set_timer(0.4, false, 0.4, log_fn, 10);
    ck_assert_uint_eq(IDX(h[8]), IDX(h[5]));
    ck_assert_uint_eq(IDX(h[9]), IDX(h[1]));
    ck_assert_int_eq(tk_timer_pause(W, h[3]), 0);
    ck_assert_int_eq(tk_timer_unpause(W, h[3]), 0); /* set again: now last of its expiry */
    ck_assert_int_eq(tk_timer_clear(W, h[7]), 0);
    frames(2);
    /* What a snapshot keeps. */
    saved_timer sv[16];
    size_t n = 0;
    uint64_t cur = 0;
    tk_timer_handle x;
    while (tk_timer_next(W, &cur, &x)) {
        sv[n].in = info_of(x);
        sv[n].id = (intptr_t)sv[n].in.ud;
        n++;
    }
    uint32_t fs[64];
    size_t nfs = tk_timer_free_slots(W, fs, 64);
    ck_assert_uint_ge(nfs, 1);
    uint64_t serial = tk_timer_serial(W);
    bool ticked = tk_timer_ticked_last_frame(W);
    ck_assert(ticked); /* the last frame was not a pause frame */
    tk_world_time t;
    tk_world_get_time(W, &t);
    /* The restored world, its timers in slot order (as saved). */
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    d.tick_rate = 0;
    d.fixed_dt = 0.1;
    tk_engine_t *e2;
    ck_assert_int_eq(tk_engine_new(&d, &e2), 0);
    tk_world_t *w2 = tk_engine_world(e2);
    ck_assert_int_eq(tk_world_restore_time_ns(w2, t.frame, tk_world_time_ns(W),
                                              tk_world_unpaused_time_ns(W),
                                              tk_world_real_time_ns(W)),
                     0);
    for (size_t i = 0; i < n; i++) {
        tk_timer_desc td = mkdesc(sv[i].in.rate, sv[i].in.loop, -1, log_fn, sv[i].id);
        ck_assert_int_eq(tk_timer_restore(w2, &td, sv[i].in.handle, sv[i].in.status,
                                          sv[i].in.remaining, sv[i].in.fired),
                         0);
    }
    /* Not what the saved world would give yet. */
    qsort(sv, n, sizeof *sv, order_cmp);
    tk_timer_handle ord[16];
    for (size_t i = 0; i < n; i++)
        ord[i] = sv[i].in.handle;
    ck_assert_int_eq(tk_timer_restore_alloc(w2, serial, fs, nfs), 0);
    ck_assert_int_eq(tk_timer_restore_order(w2, ord, n), 0);
    tk_timer_restore_ticked(w2, ticked);
    uint32_t fs2[64];
    ck_assert_uint_eq(tk_timer_free_slots(w2, fs2, 64), nfs);
    for (size_t i = 0; i < nfs; i++)
        ck_assert_uint_eq(fs2[i], fs[i]);
    ck_assert_uint_eq(tk_timer_serial(w2), serial);
    /* Both go on: the same new handles, the same calls in the same order. */
    tk_timer_handle na[3], nb[3];
    run_and_log(E, W, na, 12);
    call la[LOG_MAX];
    int nla = g_n;
    memcpy(la, g_log, sizeof la);
    g_n = 0;
    run_and_log(e2, w2, nb, 12);
    for (int i = 0; i < 3; i++)
        ck_assert_uint_eq(na[i], nb[i]);
    ck_assert_int_eq(g_n, nla);
    for (int i = 0; i < nla; i++) {
        ck_assert_int_eq(g_log[i].id, la[i].id);
        ck_assert_uint_eq(g_log[i].h, la[i].h);
        ck_assert_uint_eq(g_log[i].frame, la[i].frame);
    }
    ck_assert_int_ge(nla, 8);
    /* Bad input changes nothing. */
    uint32_t busy = (uint32_t)(h[0] & 0xFFFFFFu); /* a loop: still there */
    ck_assert_int_eq(tk_timer_restore_alloc(w2, serial, &busy, 1), TK_EINVAL);
    uint32_t twice[2] = {40, 40};
    ck_assert_int_eq(tk_timer_restore_alloc(w2, serial, twice, 2), TK_EINVAL);
    tk_timer_handle dup[2] = {h[0], h[0]};
    ck_assert_int_eq(tk_timer_restore_order(w2, dup, 2), TK_EINVAL);
    tk_timer_handle gone = h[1];
    ck_assert_int_eq(tk_timer_restore_order(w2, &gone, 1), TK_ENOENT);
    tk_engine_free(e2);
}
END_TEST

/* Whether the manager ticked in the last completed frame: the same before
 * a frame's hooks and after (unlike "this frame"), false after a pause. */
START_TEST(timer_ticked_last_frame)
{
    ck_assert(!tk_timer_ticked_last_frame(W));
    frames(1);
    ck_assert(tk_timer_ticked_last_frame(W));
    tk_world_set_paused(W, true);
    frames(1);
    ck_assert(!tk_timer_ticked_last_frame(W));
    tk_world_set_paused(W, false);
    frames(1);
    ck_assert(tk_timer_ticked_last_frame(W));
}
END_TEST

START_TEST(timer_restore)
{
    reset_log();
    tk_timer_desc d = mkdesc(0.25, true, -1, log_fn, 1);
    tk_timer_handle a = (UINT64_C(5) << 24) | 3;
    ck_assert_int_eq(tk_timer_restore(W, &d, a, TK_TIMER_ACTIVE, 0.5, 7), 0);
    tk_timer_info in = info_of(a);
    ck_assert_int_eq(in.status, TK_TIMER_ACTIVE);
    ck_assert_double_eq_tol(in.remaining, 0.5, TOL);
    ck_assert_uint_eq(in.fired, 7);
    ck_assert_int_eq(tk_timer_restore(W, &d, a, TK_TIMER_ACTIVE, 0.5, 0), TK_EEXIST);

    /* paused with a negative remaining (paused while due), and pending */
    d.ud = (void *)2;
    tk_timer_handle p = (UINT64_C(9) << 24) | 1;
    ck_assert_int_eq(tk_timer_restore(W, &d, p, TK_TIMER_PAUSED, -0.065, 1), 0);
    ck_assert_double_eq_tol(info_of(p).remaining, -0.065, TOL);
    d.ud = (void *)3;
    d.loop = false;
    tk_timer_handle q = (UINT64_C(2) << 24) | 0;
    ck_assert_int_eq(tk_timer_restore(W, &d, q, TK_TIMER_PENDING, 0.05, 0), 0);
    assert_counts(1, 1, 1);

    /* invalid: nothing changes */
    ck_assert_int_eq(tk_timer_restore(W, &d, 40, TK_TIMER_ACTIVE, 1, 0), TK_EINVAL);
    ck_assert_int_eq(tk_timer_restore(W, &d, (UINT64_C(1) << 24) | 40, TK_TIMER_ACTIVE,
                                      NAN, 0), TK_EINVAL);
    ck_assert_int_eq(tk_timer_restore(W, &d, (UINT64_C(1) << 24) | 40,
                                      TK_TIMER_EXECUTING, 1, 0), TK_EINVAL);
    ck_assert_int_eq(tk_timer_restore(W, NULL, (UINT64_C(1) << 24) | 40,
                                      TK_TIMER_ACTIVE, 1, 0), TK_EINVAL);
    assert_counts(1, 1, 1);

    /* the slot below the restored ones are free; new handles are newer */
    tk_timer_handle n = set_timer(10, false, -1, NULL, 0);
    ck_assert_uint_eq(IDX(n), 2);
    ck_assert_uint_gt(SERIAL(n), 9);
    tk_timer_handle m;
    tk_timer_desc e = mkdesc(10, false, -1, NULL, 0);
    ck_assert_int_eq(tk_timer_set(W, &e, &m), 0);
    ck_assert_uint_lt(IDX(m), 5);
    ck_assert_uint_ne(IDX(m), 2);

    /* a free slot in the middle of the free list can be restored into */
    tk_timer_handle hs[6];
    for (int i = 0; i < 6; i++)
        hs[i] = set_timer(10, false, -1, NULL, 0);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(tk_timer_clear(W, hs[i]), 0);
    tk_timer_handle r = (UINT64_C(1000) << 24) | IDX(hs[2]);
    d.ud = (void *)4;
    ck_assert_int_eq(tk_timer_restore(W, &d, r, TK_TIMER_ACTIVE, 0.2, 0), 0);
    for (int i = 0; i < 5; i++) {
        tk_timer_handle x = set_timer(10, false, -1, NULL, 0);
        ck_assert_uint_ne(IDX(x), IDX(r));
    }

    /* they run: a (0.5, loop 0.25), q pending 0.05 -> 0.15, r 0.2 */
    frames(1); /* now 0.1: q activated (expiry 0.15) */
    ck_assert_int_eq(info_of(q).status, TK_TIMER_ACTIVE);
    frames(2); /* 0.3: q (0.15) then r (0.2) */
    ck_assert_int_eq(g_n, 2);
    ck_assert_int_eq(g_log[0].id, 3);
    ck_assert_int_eq(g_log[1].id, 4);
    frames(3); /* 0.6 > 0.5 */
    ck_assert_int_eq(calls_of(1), 1);
    ck_assert_uint_eq(info_of(a).fired, 8);

    /* unpausing the negative one: due at once */
    ck_assert_int_eq(tk_timer_unpause(W, p), 0);
    frames(1); /* activated at 0.7 - 0.065 = 0.635 */
    frames(1); /* 0.8: trunc(0.165 / 0.25) + 1 = 1 */
    ck_assert_int_eq(calls_of(2), 1);

    /* not during a pass */
    g_restore_calls = 0;
    set_timer(0.01, false, -1, restore_in_pass_fn, 5);
    frames(2);
    ck_assert_int_eq(g_restore_calls, 1);
    ck_assert(!tk_timer_exists(W, (UINT64_C(77) << 24) | 40));
}
END_TEST

/* A next-tick timer paused before it fired has rate 0; it saves and restores
 * as such, and fires once on the pass after it is unpaused. */
START_TEST(timer_restore_next_tick)
{
    reset_log();
    tk_timer_desc d = mkdesc(1, false, -1, log_fn, 1);
    tk_timer_handle h;
    ck_assert_int_eq(tk_timer_set_for_next_tick(W, &d, &h), 0);
    ck_assert_int_eq(tk_timer_pause(W, h), 0);
    tk_timer_info in = info_of(h);
    ck_assert_double_eq(in.rate, 0);
    ck_assert_int_eq(tk_timer_clear(W, h), 0);
    d.rate = 0;
    d.loop = true; /* a looping timer needs a period */
    ck_assert_int_eq(tk_timer_restore(W, &d, h, TK_TIMER_PAUSED, in.remaining, 0), TK_EINVAL);
    d.loop = false;
    ck_assert_int_eq(tk_timer_restore(W, &d, h, TK_TIMER_PAUSED, in.remaining, 0), 0);
    ck_assert_double_eq(info_of(h).rate, 0);
    frames(3);
    ck_assert_int_eq(g_n, 0);
    ck_assert_int_eq(tk_timer_unpause(W, h), 0);
    frames(2);
    ck_assert_int_eq(calls_of(1), 1);
    ck_assert(!tk_timer_exists(W, h));
}
END_TEST

/* ---- world pause and dilation -------------------------------------------- */

START_TEST(timer_world_paused_and_dilation)
{
    reset_log();
    tk_timer_handle h = set_timer(0.5, false, -1, log_fn, 1); /* exp 0.6 */
    frames(2);                                                /* now 0.2 */
    tk_world_set_paused(W, true);
    frames(20);
    ck_assert_double_eq_tol(tk_timer_manager_time(W), 0.2, TOL);
    ck_assert(!tk_timer_ticked_this_frame(W));
    ck_assert_double_eq_tol(info_of(h).remaining, 0.4, TOL);
    /* set while paused: stays pending however many frames run */
    tk_timer_handle p = set_timer(0.05, false, -1, log_fn, 2);
    frames(10);
    ck_assert_int_eq(info_of(p).status, TK_TIMER_PENDING);
    ck_assert_int_eq(g_n, 0);

    /* one stepped frame advances the manager by one dt */
    ck_assert_int_eq(tk_world_step(W, 1), 0);
    frames(3);
    ck_assert_double_eq_tol(tk_timer_manager_time(W), 0.3, TOL);
    ck_assert_int_eq(info_of(p).status, TK_TIMER_ACTIVE);

    tk_world_set_paused(W, false);
    frames(1); /* 0.4 > 0.35 */
    ck_assert_int_eq(calls_of(2), 1);
    frames(2); /* 0.6, not > 0.6 */
    ck_assert_int_eq(calls_of(1), 0);

    /* dilation 2: 0.2 s of manager time per frame */
    double applied = 0;
    ck_assert_int_eq(tk_world_set_time_dilation(W, 2.0, &applied), 0);
    ck_assert_double_eq_tol(applied, 2.0, TOL);
    frames(1);
    ck_assert_double_eq_tol(tk_timer_manager_time(W), 0.8, TOL);
    ck_assert_int_eq(calls_of(1), 1);
    tk_timer_handle q = set_timer(1.0, false, -1, log_fn, 3); /* exp 2.0 */
    frames(6);                                                /* now 2.0 */
    ck_assert_int_eq(calls_of(3), 0);
    ck_assert_double_eq_tol(info_of(q).remaining, 0.0, TOL);
    frames(1);
    ck_assert_int_eq(calls_of(3), 1);
    ck_assert_double_eq_tol(tk_timer_manager_time(W), 2.2, TOL);
}
END_TEST

/* ---- free_ud ------------------------------------------------------------- */

static void pause_self_once_fn(void *ud, tk_timer_handle h, tk_world_t *w)
{
    ck_assert_int_eq(tk_timer_pause(w, h), 0); /* one-shot: removed */
    ck_assert(!tk_timer_exists(w, h));
    g_freed_at_call = g_freed[(intptr_t)ud];
}

START_TEST(timer_free_ud_once)
{
    reset_log();
    tk_timer_handle h1 = set_timer(1, false, -1, log_fn, 1);
    tk_timer_handle h2 = set_timer(0.05, false, -1, log_fn, 2);
    set_timer(0.05, false, -1, pause_self_once_fn, 3);
    set_timer(0.05, true, -1, clear_self_fn, 4);
    tk_timer_desc d = mkdesc(1, true, -1, log_fn, 5);
    d.owner = 99;
    tk_timer_handle h5;
    ck_assert_int_eq(tk_timer_set(W, &d, &h5), 0);
    tk_timer_handle h9 = set_timer(0.02, true, -1, log_fn, 9);

    ck_assert_int_eq(tk_timer_clear(W, h1), 0); /* clear */
    ck_assert_int_eq(g_freed[1], 1);
    frames(1);
    ck_assert_int_eq(g_freed[2], 0);
    frames(1); /* finish, pause of an executing one-shot, clear in callback */
    ck_assert(!tk_timer_exists(W, h2));
    ck_assert_int_eq(g_freed[2], 1);
    ck_assert_int_eq(g_freed[3], 1);
    ck_assert_int_eq(g_freed_at_call, 0);
    ck_assert_int_eq(g_freed[4], 1);
    ck_assert_uint_eq(tk_timer_clear_owner(W, 99), 1);
    ck_assert_int_eq(g_freed[5], 1);
    ck_assert(!tk_timer_exists(W, h5));

    /* world free: pending, active (looping, fired many times), paused */
    set_timer(1, false, -1, log_fn, 6);
    frames(1);
    set_timer(1, false, -1, log_fn, 7);
    tk_timer_handle h8 = set_timer(1, true, -1, log_fn, 8);
    ck_assert_int_eq(tk_timer_pause(W, h8), 0);
    assert_counts(2, 1, 1);
    ck_assert_uint_gt(info_of(h9).fired, 5);
    ck_assert_int_eq(g_freed[9], 0);
    tk_engine_free(E);
    E = NULL;
    for (int id = 1; id <= 9; id++)
        ck_assert_int_eq(g_freed[id], 1);
}
END_TEST

/* ---- invalid arguments --------------------------------------------------- */

static void assert_rejected(const tk_timer_desc *d, const char *word)
{
    tk_timer_handle h = 0xabc;
    tk_timer_counts before, after;
    tk_timer_get_counts(W, &before);
    ck_assert_int_eq(tk_timer_set(W, d, &h), TK_EINVAL);
    ck_assert_uint_eq(h, 0xabc);
    tk_timer_get_counts(W, &after);
    ck_assert_mem_eq(&before, &after, sizeof before);
    ck_assert_ptr_nonnull(strstr(tk_world_last_error(W), word));
}

START_TEST(timer_invalid_args)
{
    reset_log();
    tk_timer_handle keep = set_timer(1, false, -1, log_fn, 1);
    tk_timer_desc d = mkdesc(1, false, -1, log_fn, 2);

    d.rate = 0;
    assert_rejected(&d, "rate");
    d.rate = -1;
    assert_rejected(&d, "rate");
    d.rate = NAN;
    assert_rejected(&d, "rate");
    d.rate = INFINITY;
    assert_rejected(&d, "rate");
    d.rate = 1e-12; /* rounds to 0 ns */
    assert_rejected(&d, "rate");
    d.rate = 1;
    d.first_delay = NAN;
    assert_rejected(&d, "first_delay");
    d.first_delay = INFINITY;
    assert_rejected(&d, "first_delay");
    d.first_delay = -INFINITY;
    assert_rejected(&d, "first_delay");
    d.first_delay = -1;

    tk_timer_handle h = 0xabc;
    ck_assert_int_eq(tk_timer_set(W, NULL, &h), TK_EINVAL);
    ck_assert_ptr_nonnull(strstr(tk_world_last_error(W), "desc"));
    ck_assert_int_eq(tk_timer_set(W, &d, NULL), TK_EINVAL);
    ck_assert_ptr_nonnull(strstr(tk_world_last_error(W), "out"));
    ck_assert_int_eq(tk_timer_set_for_next_tick(W, NULL, &h), TK_EINVAL);
    ck_assert_int_eq(tk_timer_set_for_next_tick(W, &d, NULL), TK_EINVAL);
    ck_assert_uint_eq(h, 0xabc);
    ck_assert_int_eq(tk_timer_get(W, keep, NULL), TK_EINVAL);
    uint64_t cursor = 0;
    ck_assert(!tk_timer_next(W, NULL, &h));
    ck_assert(!tk_timer_next(W, &cursor, NULL));
    assert_counts(0, 0, 1);

    /* out of memory: the slab cannot grow (a fresh world), then the owner
     * index cannot; nothing changes either time */
    teardown();
    setup();
    tk_alloc_fail_after(1);
    h = 0xabc;
    ck_assert_int_eq(tk_timer_set(W, &d, &h), TK_ENOMEM);
    tk_alloc_fail_after(0);
    ck_assert_uint_eq(h, 0xabc);
    assert_counts(0, 0, 0);
    ck_assert_int_eq(tk_timer_set(W, &d, &h), 0);
    d.owner = 3;
    tk_alloc_fail_after(1);
    tk_timer_handle h2 = 0xabc;
    ck_assert_int_eq(tk_timer_set(W, &d, &h2), TK_ENOMEM);
    tk_alloc_fail_after(0);
    ck_assert_uint_eq(h2, 0xabc);
    assert_counts(0, 0, 1);
    ck_assert_uint_eq(tk_timer_clear_owner(W, 3), 0);
    ck_assert_int_eq(tk_timer_set(W, &d, &h2), 0);
    ck_assert_uint_eq(tk_timer_clear_owner(W, 3), 1);

    /* huge values are clamped, not wrapped: it never fires */
    d.owner = 0;
    d.rate = 1e30;
    d.loop = true;
    ck_assert_int_eq(tk_timer_set(W, &d, &h), 0);
    frames(3);
    ck_assert_uint_eq(info_of(h).fired, 0);
    ck_assert_double_gt(info_of(h).remaining, 9e9);
    ck_assert_double_gt(tk_timer_next_due(W), 0);
}
END_TEST

/* ---- iteration, counts, queries ------------------------------------------ */

START_TEST(timer_list_iteration)
{
    uint64_t cursor = 0;
    tk_timer_handle h, hs[10];
    ck_assert(!tk_timer_next(W, &cursor, &h));

    for (int i = 0; i < 10; i++)
        hs[i] = set_timer(1 + i, false, -1, NULL, 0);
    ck_assert_int_eq(tk_timer_clear(W, hs[2]), 0);
    ck_assert_int_eq(tk_timer_clear(W, hs[5]), 0);
    ck_assert_int_eq(tk_timer_clear(W, hs[9]), 0);
    ck_assert_int_eq(tk_timer_pause(W, hs[0]), 0);
    ck_assert_int_eq(tk_timer_pause(W, hs[7]), 0);

    int seen[10] = {0}, n = 0;
    cursor = 0;
    while (tk_timer_next(W, &cursor, &h)) {
        n++;
        int found = -1;
        for (int i = 0; i < 10; i++)
            if (hs[i] == h)
                found = i;
        ck_assert_int_ge(found, 0);
        seen[found]++;
        ck_assert(tk_timer_exists(W, h));
    }
    ck_assert_int_eq(n, 7);
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(seen[i], i == 2 || i == 5 || i == 9 ? 0 : 1);
    ck_assert(!tk_timer_next(W, &cursor, &h)); /* stays at the end */
    cursor = 1000;
    ck_assert(!tk_timer_next(W, &cursor, &h));
}
END_TEST

static void counts_fn(void *ud, tk_timer_handle h, tk_world_t *w)
{
    tk_timer_counts c;
    tk_timer_get_counts(w, &c);
    ck_assert_uint_eq(c.active, 2); /* itself, executing, and the 5 s one */
    ck_assert_uint_eq(c.paused, 1);
    ck_assert_uint_eq(c.pending, 1);
    tk_timer_info in;
    ck_assert_int_eq(tk_timer_get(w, h, &in), 0);
    ck_assert_int_eq(in.status, TK_TIMER_EXECUTING);
    ck_assert_double_eq_tol(in.remaining, 0.0, TOL);
    /* rate - (expire - now) = 0.05 - (0.15 - 0.2) */
    ck_assert_double_eq_tol(in.elapsed, 0.1, TOL);
    ck_assert_ptr_eq(in.ud, ud);
    ck_assert_double_eq_tol(tk_timer_manager_time(w), 0.2, TOL);
    ck_assert(!tk_timer_ticked_this_frame(w));
    g_n++;
}

START_TEST(timer_counts)
{
    reset_log();
    assert_counts(0, 0, 0);
    tk_timer_handle a = set_timer(0.05, false, -1, counts_fn, 1);
    tk_timer_handle b = set_timer(5, false, -1, NULL, 0);
    tk_timer_handle c = set_timer(5, false, -1, NULL, 0);
    assert_counts(0, 0, 3);
    frames(1);
    assert_counts(3, 0, 0);
    ck_assert_int_eq(tk_timer_pause(W, c), 0);
    assert_counts(2, 1, 0);
    set_timer(5, false, -1, NULL, 0);
    assert_counts(2, 1, 1);
    frames(1); /* counts_fn checks the executing timer counts as active */
    ck_assert_int_eq(g_n, 1);
    ck_assert(!tk_timer_exists(W, a));
    assert_counts(2, 1, 0);
    ck_assert_int_eq(tk_timer_clear(W, b), 0);
    ck_assert_int_eq(tk_timer_clear(W, c), 0);
    assert_counts(1, 0, 0);

    ck_assert_str_eq(tk_timer_status_name(TK_TIMER_PENDING), "pending");
    ck_assert_str_eq(tk_timer_status_name(TK_TIMER_ACTIVE), "active");
    ck_assert_str_eq(tk_timer_status_name(TK_TIMER_PAUSED), "paused");
    ck_assert_str_eq(tk_timer_status_name(TK_TIMER_EXECUTING), "executing");
}
END_TEST

/* pre_world runs requests, Unreal's deferred commands of the frame that just
 * ran: ticked "this frame" once a frame has ticked the manager. */
static void ticked_pre(void)
{
    ck_assert(tk_timer_ticked_this_frame(W) == (tk_world_frame(W) > 0));
}
static void ticked_post(void) { ck_assert(tk_timer_ticked_this_frame(W)); }

START_TEST(timer_next_due_and_time)
{
    g_pre = ticked_pre;
    g_post = ticked_post;
    ck_assert_double_lt(tk_timer_next_due(W), 0);
    ck_assert_double_eq_tol(tk_timer_manager_time(W), 0.0, TOL);
    set_timer(100, false, -1, NULL, 0); /* pending: not active */
    ck_assert_double_lt(tk_timer_next_due(W), 0);
    frames(1);
    ck_assert(!tk_timer_ticked_this_frame(W)); /* between frames */
    ck_assert_double_eq_tol(tk_timer_manager_time(W), 0.1, TOL);
    ck_assert_double_eq_tol(tk_timer_next_due(W), 100.0, TOL);
    set_timer(5, false, -1, NULL, 0);
    set_timer(0.03, false, -1, NULL, 0);
    ck_assert_double_eq_tol(tk_timer_next_due(W), 100.0, TOL);
    frames(1); /* expiries 0.23, 5.2, 100.1 at now 0.2 */
    ck_assert_double_eq_tol(tk_timer_next_due(W), 0.03, TOL);
    frames(1);
    ck_assert_double_eq_tol(tk_timer_next_due(W), 4.9, TOL);
    tk_timer_desc d = mkdesc(0, false, -1, NULL, 0);
    tk_timer_handle h;
    ck_assert_int_eq(tk_timer_set_for_next_tick(W, &d, &h), 0);
    ck_assert_double_eq_tol(tk_timer_next_due(W), 0.0, TOL);
    frames(60); /* now 6.3: only the 100 s one is left, on a high level */
    ck_assert_double_eq_tol(tk_timer_next_due(W), 93.8, TOL);
}
END_TEST

/* ---- slab growth inside a callback, long delays -------------------------- */

static void set_many_fn(void *ud, tk_timer_handle h, tk_world_t *w)
{
    log_fn(ud, h, w);
    for (int i = 0; i < 20000; i++) {
        tk_timer_desc d = mkdesc(0.05 + (i % 7) * 0.01, false, -1, NULL, 0);
        d.free_ud = NULL;
        tk_timer_handle x;
        REQUIRE(tk_timer_set(w, &d, &x) == 0);
    }
    /* the next due timers must still fire correctly afterwards */
}

START_TEST(timer_callback_grows_slab)
{
    reset_log();
    set_timer(0.05, false, -1, set_many_fn, 1);
    for (int i = 0; i < 5; i++)
        set_timer(0.06 + i * 0.001, true, -1, log_fn, 2 + i);
    frames(2);
    ck_assert_int_eq(g_n, 6);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(g_log[i].id, 1 + i);
    assert_counts(20005, 0, 0);
    frames(2);
    assert_counts(5, 0, 0);
}
END_TEST

START_TEST(timer_long_delays)
{
    /* 8 s of manager time per frame: 0.4 s raw (the world's cap) x 20 */
    teardown();
    engine_open(0.4);
    double applied;
    ck_assert_int_eq(tk_world_set_time_dilation(W, 20, &applied), 0);
    reset_log();
    set_timer(400, false, -1, log_fn, 1);    /* expiry 408 */
    set_timer(86400, false, -1, log_fn, 2);  /* expiry 86408, one day */
    set_timer(7200, true, -1, log_fn, 3);    /* every 2 h */
    frames(51);                              /* now 408 */
    ck_assert_int_eq(calls_of(1), 0);
    frames(1);
    ck_assert_int_eq(calls_of(1), 1);
    ck_assert_uint_eq(g_log[0].frame, 51);
    frames(10800 - 52); /* now 86400 */
    ck_assert_int_eq(calls_of(2), 0);
    ck_assert_int_eq(calls_of(3), 11); /* 7208, ... 79208 */
    frames(1);
    ck_assert_int_eq(calls_of(2), 0); /* 86408 is not < 86408 */
    frames(1);
    ck_assert_int_eq(calls_of(2), 1);
    ck_assert_uint_eq(g_log[g_n - 1].frame, 10801);
    ck_assert_int_eq(calls_of(3), 12);
}
END_TEST

/* ---- model-based random test --------------------------------------------- */

/*
 * A direct model of UE-SEMANTICS 4 (arrays and a sort, no wheel).  Random
 * sets (delays from 1 ms to hours, exact multiples of dt among them),
 * clears, pauses, unpauses and next-tick timers happen between frames or
 * after the pass; frames use random dts and dilations, some of them paused.
 * After every frame the callbacks must have run in the model's order, and
 * statuses, remaining/elapsed times, fired counts, counts and next_due must
 * match exactly.
 */
typedef struct mtimer {
    tk_timer_handle h;
    int status;      /* tk_timer_status, or -1 when gone */
    int pos;         /* index in Mlive while live */
    int64_t expire;  /* ns: absolute when active, remaining otherwise */
    int64_t rate;    /* ns */
    bool loop;
    uint64_t seq;
    uint64_t fired;
} mtimer;

static mtimer *M;
static int Mn, Mcap;
static int *Mlive, Mlive_n;
static int64_t Mnow;
static bool Mticked;
static uint64_t Mseq, Mrng;
static int *Mexp, *Mgot;
static size_t Mexp_n, Mgot_n, Mexp_cap, Mgot_cap;
static int Mtarget;

static uint64_t rnd(void)
{
    Mrng ^= Mrng >> 12;
    Mrng ^= Mrng << 25;
    Mrng ^= Mrng >> 27;
    return Mrng * UINT64_C(2685821657736338717);
}

static int64_t rnd_range(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

static void ivec_push(int **v, size_t *n, size_t *cap, int x)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 1024;
        *v = realloc(*v, *cap * sizeof **v);
        REQUIRE(*v != NULL);
    }
    (*v)[(*n)++] = x;
}

static void model_fn(void *ud, tk_timer_handle h, tk_world_t *w)
{
    int id = (int)(intptr_t)ud;
    REQUIRE(M[id].h == h);
    ivec_push(&Mgot, &Mgot_n, &Mgot_cap, id);
}

static void model_gone(int id)
{
    int last = Mlive[--Mlive_n];
    Mlive[M[id].pos] = last;
    M[last].pos = M[id].pos;
    M[id].status = -1;
}

static int live_pick(void)
{
    return Mlive_n ? Mlive[rnd() % (uint64_t)Mlive_n] : -1;
}

static double model_seconds(int64_t ns) { return (double)ns / 1e9; }

static void model_set(bool next_tick)
{
    if (Mn == Mcap) {
        Mcap = Mcap ? Mcap * 2 : 256;
        M = realloc(M, (size_t)Mcap * sizeof *M);
        Mlive = realloc(Mlive, (size_t)Mcap * sizeof *Mlive);
        REQUIRE(M && Mlive);
    }
    int id = Mn++;
    mtimer *m = &M[id];
    memset(m, 0, sizeof *m);
    m->pos = Mlive_n;
    Mlive[Mlive_n++] = id;
    tk_timer_desc d = {0};
    d.fn = model_fn;
    d.ud = (void *)(intptr_t)id;
    int64_t us;
    uint64_t r = rnd() % 100;
    if (r < 10)
        us = rnd_range(1, 20) * 100000; /* multiples of 0.1 s */
    else if (r < 50)
        us = rnd_range(1000, 100000);
    else if (r < 80)
        us = rnd_range(100000, 5000000);
    else if (r < 95)
        us = rnd_range(5000000, 300000000);
    else
        us = rnd_range(300000000, 20000000000);
    d.rate = (double)us / 1e6;
    d.loop = rnd() % 2;
    d.first_delay = -1;
    r = rnd() % 10;
    if (r < 2)
        d.first_delay = 0;
    else if (r < 5)
        d.first_delay = (double)rnd_range(0, us * 2) / 1e6;

    int rc = next_tick ? tk_timer_set_for_next_tick(W, &d, &m->h)
                       : tk_timer_set(W, &d, &m->h);
    REQUIRE(rc == 0);
    m->seq = ++Mseq;
    if (next_tick) {
        m->status = TK_TIMER_ACTIVE;
        m->expire = Mnow;
        return;
    }
    m->rate = (int64_t)tk_s_to_ns(d.rate);
    m->loop = d.loop;
    int64_t delay = d.first_delay >= 0 ? (int64_t)tk_s_to_ns(d.first_delay) : m->rate;
    if (Mticked) {
        m->status = TK_TIMER_ACTIVE;
        m->expire = Mnow + delay;
    } else {
        m->status = TK_TIMER_PENDING;
        m->expire = delay;
    }
}

static void model_ops(int n)
{
    for (int k = 0; k < n; k++) {
        uint64_t r = rnd() % 100;
        if (r < 45) {
            if (Mlive_n < Mtarget)
                model_set(false);
            continue;
        }
        if (r < 50) {
            model_set(true);
            continue;
        }
        int i = live_pick();
        if (i < 0)
            continue;
        mtimer *m = &M[i];
        if (r < 70) {
            REQUIRE(tk_timer_clear(W, m->h) == 0);
            model_gone(i);
            REQUIRE(tk_timer_clear(W, m->h) == TK_ENOENT);
        } else if (r < 85) {
            REQUIRE(tk_timer_pause(W, m->h) == 0);
            if (m->status == TK_TIMER_ACTIVE)
                m->expire -= Mnow;
            m->status = TK_TIMER_PAUSED;
        } else {
            REQUIRE(tk_timer_unpause(W, m->h) == 0);
            if (m->status != TK_TIMER_PAUSED)
                continue;
            if (Mticked) {
                m->status = TK_TIMER_ACTIVE;
                m->expire += Mnow;
            } else {
                m->status = TK_TIMER_PENDING;
            }
        }
    }
}

static int model_cmp(const void *a, const void *b)
{
    const mtimer *x = &M[*(const int *)a], *y = &M[*(const int *)b];
    if (x->expire != y->expire)
        return x->expire < y->expire ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Unreal's Tick: advance, fire the due ones by (expiry, set order) with
 * catch-up (a re-armed timer is never due again in the same pass), then
 * activate the pending ones. */
static void model_pass(int64_t now2)
{
    Mnow = now2;
    int *due = malloc(((size_t)Mlive_n + 1) * sizeof *due);
    REQUIRE(due != NULL);
    int nd = 0;
    for (int k = 0; k < Mlive_n; k++) {
        mtimer *m = &M[Mlive[k]];
        if (m->status == TK_TIMER_ACTIVE && m->expire < Mnow)
            due[nd++] = Mlive[k];
    }
    qsort(due, (size_t)nd, sizeof *due, model_cmp);
    for (int k = 0; k < nd; k++) {
        mtimer *m = &M[due[k]];
        int64_t calls = m->loop ? (Mnow - m->expire) / m->rate + 1 : 1;
        for (int64_t c = 0; c < calls; c++)
            ivec_push(&Mexp, &Mexp_n, &Mexp_cap, due[k]);
        m->fired += (uint64_t)calls;
        if (m->loop)
            m->expire += calls * m->rate;
        else
            model_gone(due[k]);
    }
    free(due);
    Mticked = true;
    for (int k = 0; k < Mlive_n; k++) {
        mtimer *m = &M[Mlive[k]];
        if (m->status == TK_TIMER_PENDING) {
            m->status = TK_TIMER_ACTIVE;
            m->expire += Mnow;
        }
    }
}

static void model_check_calls(void)
{
    REQUIRE(Mgot_n == Mexp_n);
    for (size_t i = 0; i < Mexp_n; i++)
        REQUIRE(Mgot[i] == Mexp[i]);
    Mgot_n = Mexp_n = 0;
}

static void model_check_state(void)
{
    size_t na = 0, np = 0, nq = 0;
    int64_t best = INT64_MAX;
    for (int i = 0; i < Mn; i++)
        if (M[i].status < 0)
            REQUIRE(!tk_timer_exists(W, M[i].h));
    for (int k = 0; k < Mlive_n; k++) {
        mtimer *m = &M[Mlive[k]];
        tk_timer_info in;
        REQUIRE(tk_timer_get(W, m->h, &in) == 0);
        REQUIRE((int)in.status == m->status);
        REQUIRE(in.fired == m->fired);
        REQUIRE(in.loop == m->loop);
        int64_t rem = m->status == TK_TIMER_ACTIVE ? m->expire - Mnow : m->expire;
        REQUIRE(in.remaining == model_seconds(rem));
        REQUIRE(in.elapsed == model_seconds(m->rate - rem));
        if (m->status == TK_TIMER_ACTIVE) {
            na++;
            if (m->expire < best)
                best = m->expire;
        } else if (m->status == TK_TIMER_PAUSED) {
            np++;
        } else {
            nq++;
        }
    }
    assert_counts(na, np, nq);
    double due = tk_timer_next_due(W);
    if (best == INT64_MAX)
        REQUIRE(due < 0);
    else
        REQUIRE(due == (best > Mnow ? model_seconds(best - Mnow) : 0.0));
}

static void model_reset(uint64_t seed, int target)
{
    Mrng = seed * UINT64_C(0x9E3779B97F4A7C15) + 1;
    Mn = Mlive_n = 0;
    Mnow = 0;
    Mticked = false;
    Mseq = 0;
    Mtarget = target;
    Mexp_n = Mgot_n = 0;
}

static void model_free(void)
{
    free(M);
    free(Mlive);
    free(Mexp);
    free(Mgot);
    M = NULL;
    Mlive = Mexp = Mgot = NULL;
    Mcap = 0;
    Mexp_cap = Mgot_cap = 0;
}

/* Operations between frames (the manager has not ticked this frame). */
static void model_run(uint64_t seed, int nframes, int target)
{
    static const double dts[] = {0.0005, 0.001, 0.0167, 0.05, 0.1, 0.4};
    static const double dils[] = {1, 1, 1, 0.5, 3, 20};
    model_reset(seed, target);
    for (int f = 0; f < nframes; f++) {
        model_ops((int)(rnd() % 8));
        if (rnd() % 16 == 0) {
            REQUIRE(tk_engine_set_fixed_dt(E, dts[rnd() % 6]) == 0);
            REQUIRE(tk_world_set_time_dilation(W, dils[rnd() % 6], NULL) == 0);
        }
        tk_world_set_paused(W, rnd() % 20 == 0);
        int64_t before = (int64_t)tk_world_time_ns(W);
        bool will_tick = !tk_world_paused(W);
        frames(1);
        int64_t after = (int64_t)tk_world_time_ns(W);
        if (will_tick)
            model_pass(after);
        else
            REQUIRE(after == before);
        model_check_calls();
        Mticked = false;
        if (f % 7 == 0)
            model_check_state();
    }
    tk_world_set_paused(W, false);
    model_check_state();
    model_free();
}

START_TEST(timer_model_random)
{
    model_run((uint64_t)_i + 1, 3000, 200);
}
END_TEST

START_TEST(timer_model_random_large)
{
    model_run((uint64_t)_i + 101, 400, 3000);
}
END_TEST

/* Operations after the pass (the manager has ticked this frame: the
 * "active at once" branches), run from the post_frame hook. */
static void model_post_ticked(void)
{
    REQUIRE(tk_timer_ticked_this_frame(W));
    model_ops((int)(rnd() % 6));
}

START_TEST(timer_model_random_after_pass)
{
    model_reset((uint64_t)_i * 7919 + 3, 300);
    g_post = model_post_ticked;
    for (int f = 0; f < 2000; f++) {
        model_ops((int)(rnd() % 5));
        /* the expected calls are computed before the post_frame operations
         * change the model (dilation is 1: the manager's dt is the fixed dt) */
        model_pass(Mnow + (int64_t)tk_s_to_ns(tk_engine_fixed_dt(E)));
        frames(1);
        REQUIRE((int64_t)tk_world_time_ns(W) == Mnow);
        model_check_calls();
        Mticked = false;
        if (f % 5 == 0)
            model_check_state();
        if (rnd() % 50 == 0)
            REQUIRE(tk_engine_set_fixed_dt(E, (double)rnd_range(1, 400) / 1000) == 0);
    }
    model_free();
}
END_TEST

/* ---- suite --------------------------------------------------------------- */

static Suite *timer_suite(void)
{
    Suite *s = suite_create("timer");
    TCase *tc = tcase_create("timer");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, timer_pending_to_active);
    tcase_add_test(tc, timer_first_delay_elapsed_negative);
    tcase_add_test(tc, timer_catch_up);
    tcase_add_test(tc, timer_strict_expiry);
    tcase_add_test(tc, timer_clear_own_callback);
    tcase_add_test(tc, timer_clear_other_due);
    tcase_add_test(tc, timer_pause_unpause_same_frame);
    tcase_add_test(tc, timer_pause_unpause_in_callback);
    tcase_add_test(tc, timer_pause_keeps_remaining);
    tcase_add_test(tc, timer_pause_executing);
    tcase_add_test(tc, timer_set_for_next_tick);
    tcase_add_test(tc, timer_set_in_callback_pending);
    tcase_add_test(tc, timer_ties_fire_in_set_order);
    tcase_add_test(tc, timer_million_no_leak);
    tcase_add_test(tc, timer_stale_handles);
    tcase_add_test(tc, timer_clear_owner);
    tcase_add_test(tc, timer_owner_index_churn);
    tcase_add_test(tc, timer_restore);
    tcase_add_test(tc, timer_restore_next_tick);
    tcase_add_test(tc, timer_restore_exact);
    tcase_add_test(tc, timer_ticked_last_frame);
    tcase_add_test(tc, timer_world_paused_and_dilation);
    tcase_add_test(tc, timer_free_ud_once);
    tcase_add_test(tc, timer_invalid_args);
    tcase_add_test(tc, timer_list_iteration);
    tcase_add_test(tc, timer_counts);
    tcase_add_test(tc, timer_next_due_and_time);
    tcase_add_test(tc, timer_callback_grows_slab);
    tcase_add_test(tc, timer_long_delays);
    tcase_add_test(tc, timer_restore_sparse_slots);
    tcase_add_test(tc, timer_handles_json_safe);
    tcase_add_loop_test(tc, timer_model_random, 0, 6);
    tcase_add_loop_test(tc, timer_model_random_large, 0, 2);
    tcase_add_loop_test(tc, timer_model_random_after_pass, 0, 4);
    suite_add_tcase(s, tc);
    return s;
}

TK_CHECK_MAIN(timer_suite)
