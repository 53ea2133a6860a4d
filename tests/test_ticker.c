/*
 * test_ticker.c - the core ticker (tickd/ticker.h), driven on its own
 * through ticker_int.h and through the engine (fixed dt 0.1 s, no pacing).
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../src/core/ticker_int.h"
#include "tickd/alloc.h"
#include "tickd/engine.h"
#include "tickd/error.h"
#include "tickd/tickable.h"
#include "tickd/world.h"
#include "check_main.h"

/* A probe: the passes on which it fired, the dt it got, and an action. */
typedef struct probe {
    int calls;                /* callbacks received                       */
    int fired_on[32];         /* pass numbers (1-based) of the calls      */
    int *pass;                /* current pass number, owned by the test   */
    double last_dt;           /* s                                        */
    double dts[32];           /* s, per call                              */
    char name;                /* letter appended to the order log         */
    char *log;                /* shared order log, or NULL                */
    int keep_calls;           /* return false on this call (0: never)     */
    void (*action)(struct probe *p);
    int action_on_call;       /* run action on this call (1-based)        */
    struct tk__ticker *t;     /* ticker for actions                       */
    tk_engine_t *e;           /* engine for actions, if any               */
    tk_ticker_handle self;    /* own handle                               */
    tk_ticker_handle other;   /* target of the action                     */
    struct probe *other_probe;
    double other_delay;       /* s, delay for a delegate the action adds  */
} probe;

static bool probe_fn(void *ud, double dt)
{
    probe *p = ud;
    if (p->calls < 32) {
        p->fired_on[p->calls] = p->pass ? *p->pass : 0;
        p->dts[p->calls] = dt;
    }
    p->calls++;
    p->last_dt = dt;
    if (p->log) {
        size_t n = strlen(p->log);
        p->log[n] = p->name;
        p->log[n + 1] = '\0';
    }
    if (p->action && p->calls == p->action_on_call)
        p->action(p);
    return !(p->keep_calls && p->calls == p->keep_calls);
}

static tk_ticker_handle add(struct tk__ticker *t, probe *p, double delay)
{
    tk_ticker_handle h = TK_TICKER_NONE;
    ck_assert_int_eq(tk__ticker_add(t, delay, probe_fn, p, &h), 0);
    ck_assert_uint_ne(h, TK_TICKER_NONE);
    p->self = h;
    p->t = t;
    return h;
}

static void passes(struct tk__ticker *t, int *pass, int n, double dt)
{
    for (int i = 0; i < n; i++) {
        (*pass)++;
        tk__ticker_tick(t, dt);
    }
}

START_TEST(ticker_delay_no_catchup)
{
    /* delay 0.25 at dt 0.1: due at 0.25 -> fires at t=0.3 (pass 3), next due
     * 0.3+0.25=0.55 -> t=0.6 (pass 6), then 0.85 -> 0.9 (pass 9), 1.15 ->
     * 1.2 (pass 12): the 0.05 overshoot is never credited back. */
    struct tk__ticker *t = tk__ticker_new();
    int pass = 0;
    probe p = {.pass = &pass};
    add(t, &p, 0.25);
    passes(t, &pass, 13, 0.1);
    ck_assert_int_eq(p.calls, 4);
    ck_assert_int_eq(p.fired_on[0], 3);
    ck_assert_int_eq(p.fired_on[1], 6);
    ck_assert_int_eq(p.fired_on[2], 9);
    ck_assert_int_eq(p.fired_on[3], 12);
    /* Called with the frame's dt, not the time since its last call. */
    for (int i = 0; i < 4; i++)
        ck_assert_double_eq(p.dts[i], 0.1);
    tk__ticker_free(t);
}
END_TEST

START_TEST(ticker_zero_delay_and_exact_due)
{
    struct tk__ticker *t = tk__ticker_new();
    int pass = 0;
    probe every = {.pass = &pass}, exact = {.pass = &pass};
    add(t, &every, 0);
    add(t, &exact, 0.2);              /* due exactly at a pass boundary */
    passes(t, &pass, 6, 0.1);
    ck_assert_int_eq(every.calls, 6);
    ck_assert_int_eq(exact.calls, 3);
    ck_assert_int_eq(exact.fired_on[0], 2);
    ck_assert_int_eq(exact.fired_on[1], 4);
    ck_assert_int_eq(exact.fired_on[2], 6);
    ck_assert_uint_eq(tk__ticker_time_ns(t), 600000000ull);
    tk__ticker_free(t);
}
END_TEST

START_TEST(ticker_false_removes)
{
    struct tk__ticker *t = tk__ticker_new();
    int pass = 0;
    probe p = {.pass = &pass, .keep_calls = 2}, q = {.pass = &pass};
    tk_ticker_handle h = add(t, &p, 0);
    add(t, &q, 0);
    passes(t, &pass, 5, 0.1);
    ck_assert_int_eq(p.calls, 2);
    ck_assert_int_eq(q.calls, 5);
    ck_assert_uint_eq(tk__ticker_count(t), 1);
    ck_assert_int_eq(tk__ticker_remove(t, h), TK_ENOENT);
    tk__ticker_free(t);
}
END_TEST

static void act_remove_self(probe *p)
{
    ck_assert_int_eq(tk__ticker_remove(p->t, p->self), 0);
    ck_assert_int_eq(tk__ticker_remove(p->t, p->self), TK_ENOENT);
}

START_TEST(ticker_remove_self)
{
    struct tk__ticker *t = tk__ticker_new();
    int pass = 0;
    char log[64] = "";
    probe a = {.pass = &pass, .name = 'a', .log = log};
    probe s = {.pass = &pass, .name = 's', .log = log};
    probe z = {.pass = &pass, .name = 'z', .log = log};
    add(t, &a, 0);
    tk_ticker_handle sh = add(t, &s, 0);
    add(t, &z, 0);
    s.action = act_remove_self;
    s.action_on_call = 2;             /* and it returns true: still removed */
    passes(t, &pass, 4, 0.1);
    ck_assert_str_eq(log, "aszaszazaz");
    ck_assert_int_eq(s.calls, 2);
    ck_assert_uint_eq(tk__ticker_count(t), 2);
    ck_assert_int_eq(tk__ticker_remove(t, sh), TK_ENOENT);
    tk__ticker_free(t);
}
END_TEST

static void act_remove_other(probe *p)
{
    ck_assert_int_eq(tk__ticker_remove(p->t, p->other), 0);
}

START_TEST(ticker_remove_other_during_pass)
{
    struct tk__ticker *t = tk__ticker_new();
    int pass = 0;
    char log[64] = "";
    probe a = {.pass = &pass, .name = 'a', .log = log};
    probe b = {.pass = &pass, .name = 'b', .log = log};
    probe c = {.pass = &pass, .name = 'c', .log = log};
    tk_ticker_handle ah = add(t, &a, 0);
    add(t, &b, 0);
    tk_ticker_handle ch = add(t, &c, 0);
    b.action = act_remove_other;       /* b removes c (ahead) on call 1 */
    b.action_on_call = 1;
    b.other = ch;
    passes(t, &pass, 1, 0.1);
    ck_assert_str_eq(log, "ab");
    b.action_on_call = 2;              /* then a (behind) on call 2 */
    b.other = ah;
    passes(t, &pass, 2, 0.1);
    ck_assert_str_eq(log, "ababb");
    ck_assert_uint_eq(tk__ticker_count(t), 1);
    tk__ticker_free(t);
}
END_TEST

static void act_add(probe *p)
{
    tk_ticker_handle h;
    ck_assert_int_eq(tk__ticker_add(p->t, p->other_delay, probe_fn, p->other_probe, &h), 0);
    p->other_probe->self = h;
    p->other_probe->t = p->t;
}

START_TEST(ticker_add_during_pass_same_pass)
{
    struct tk__ticker *t = tk__ticker_new();
    int pass = 0;
    char log[64] = "";
    probe a = {.pass = &pass, .name = 'a', .log = log};
    probe b = {.pass = &pass, .name = 'b', .log = log};
    probe n = {.pass = &pass, .name = 'n', .log = log};
    probe m = {.pass = &pass, .name = 'm', .log = log};
    add(t, &a, 0);
    add(t, &b, 0);
    a.action = act_add;                 /* 0-delay: fires in this pass */
    a.action_on_call = 1;
    a.other_probe = &n;
    a.other_delay = 0;
    b.action = act_add;                 /* 0.15 s: not due yet */
    b.action_on_call = 1;
    b.other_probe = &m;
    b.other_delay = 0.15;
    passes(t, &pass, 1, 0.1);
    ck_assert_str_eq(log, "abn");
    ck_assert_double_eq(n.last_dt, 0.1);
    ck_assert_int_eq(m.calls, 0);
    passes(t, &pass, 2, 0.1);           /* m due at 0.25: fires at 0.3 */
    ck_assert_str_eq(log, "abnabnabnm");
    ck_assert_int_eq(m.fired_on[0], 3);
    tk__ticker_free(t);
}
END_TEST

/* Many adds from inside a pass (the array moves under the pass). */
static void act_add_many(probe *p)
{
    for (int i = 0; i < 100; i++) {
        tk_ticker_handle h;
        ck_assert_int_eq(tk__ticker_add(p->t, 0, probe_fn, &p->other_probe[i], &h), 0);
    }
}

START_TEST(ticker_add_many_during_pass)
{
    struct tk__ticker *t = tk__ticker_new();
    int pass = 0;
    probe a = {.pass = &pass};
    probe *many = calloc(100, sizeof *many);
    add(t, &a, 0);
    a.action = act_add_many;
    a.action_on_call = 1;
    a.other_probe = many;
    passes(t, &pass, 2, 0.1);
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(many[i].calls, 2);
    ck_assert_uint_eq(tk__ticker_count(t), 101);
    tk__ticker_free(t);
    free(many);
}
END_TEST

START_TEST(ticker_time_stops_while_empty)
{
    struct tk__ticker *t = tk__ticker_new();
    int pass = 0;
    passes(t, &pass, 5, 0.1);
    ck_assert_uint_eq(tk__ticker_time_ns(t), 0);

    probe p = {.pass = &pass, .keep_calls = 1};
    add(t, &p, 0.2);
    passes(t, &pass, 1, 0.1);
    ck_assert_uint_eq(tk__ticker_time_ns(t), 100000000ull);
    passes(t, &pass, 1, 0.1);           /* fires and returns false */
    ck_assert_int_eq(p.calls, 1);
    ck_assert_uint_eq(tk__ticker_time_ns(t), 200000000ull);
    ck_assert_uint_eq(tk__ticker_count(t), 0);
    passes(t, &pass, 3, 0.1);
    ck_assert_uint_eq(tk__ticker_time_ns(t), 200000000ull);

    /* A delegate added now is due relative to the stopped time. */
    probe q = {.pass = &pass};
    tk_ticker_handle h = add(t, &q, 0.1);
    ck_assert_int_eq(tk__ticker_remove(t, h), 0);
    passes(t, &pass, 2, 0.1);
    ck_assert_int_eq(q.calls, 0);
    ck_assert_uint_eq(tk__ticker_time_ns(t), 200000000ull);
    tk__ticker_free(t);
}
END_TEST

START_TEST(ticker_validation)
{
    struct tk__ticker *t = tk__ticker_new();
    probe p = {0};
    tk_ticker_handle h = 42;
    ck_assert_int_eq(tk__ticker_add(t, -0.1, probe_fn, &p, &h), TK_EINVAL);
    ck_assert_int_eq(tk__ticker_add(t, NAN, probe_fn, &p, &h), TK_EINVAL);
    ck_assert_int_eq(tk__ticker_add(t, INFINITY, probe_fn, &p, &h), TK_EINVAL);
    ck_assert_int_eq(tk__ticker_add(t, 0, NULL, &p, &h), TK_EINVAL);
    ck_assert_uint_eq(h, 42);
    ck_assert_uint_eq(tk__ticker_count(t), 0);
    ck_assert_int_eq(tk__ticker_remove(t, TK_TICKER_NONE), TK_ENOENT);
    ck_assert_int_eq(tk__ticker_remove(t, ((uint64_t)1 << 32) | 5), TK_ENOENT);

    tk_alloc_fail_after(1);
    ck_assert_int_eq(tk__ticker_add(t, 0, probe_fn, &p, &h), TK_ENOMEM);
    tk_alloc_fail_after(0);
    ck_assert_uint_eq(tk__ticker_count(t), 0);

    /* Stale handles after slot reuse. */
    tk_ticker_handle h1, h2;
    ck_assert_int_eq(tk__ticker_add(t, 0, probe_fn, &p, &h1), 0);
    ck_assert_int_eq(tk__ticker_remove(t, h1), 0);
    ck_assert_int_eq(tk__ticker_add(t, 0, probe_fn, &p, &h2), 0);
    ck_assert_uint_ne(h1, h2);
    ck_assert_int_eq(tk__ticker_remove(t, h1), TK_ENOENT);
    ck_assert_int_eq(tk__ticker_remove(t, h2), 0);
    tk__ticker_free(t);
    tk__ticker_free(NULL);
}
END_TEST

/* ---- through the engine --------------------------------------------------- */

static tk_engine_t *make_engine(double fixed_dt)
{
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    d.tick_rate = 0;
    d.fixed_dt = fixed_dt;
    tk_engine_t *e = NULL;
    ck_assert_int_eq(tk_engine_new(&d, &e), 0);
    return e;
}

static void frames(tk_engine_t *e, int n)
{
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(tk_engine_frame(e), 0);
}

static void tickable_fn(void *ud, float dt, tk_world_t *w)
{
    (void)w;
    *(float *)ud = dt;
}

START_TEST(ticker_raw_undilated_dt)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    probe p = {0};
    tk_ticker_handle h;
    ck_assert_int_eq(tk_ticker_add(e, 0, probe_fn, &p, &h), 0);
    float world_dt = 0;
    tk_tickable_desc d = {.type = TK_TICKABLE_ALWAYS, .fn = tickable_fn, .ud = &world_dt};
    ck_assert_int_eq(tk_tickable_add(w, &d, NULL), 0);
    double applied;
    ck_assert_int_eq(tk_world_set_time_dilation(w, 2.0, &applied), 0);
    frames(e, 3);
    ck_assert_float_eq_tol(world_dt, 0.2f, 1e-7f);   /* the world is dilated */
    ck_assert_int_eq(p.calls, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_double_eq_tol(p.dts[i], 0.1, 1e-12); /* the ticker is not */
    ck_assert_int_eq(tk_ticker_remove(e, h), 0);
    ck_assert_int_eq(tk_ticker_remove(e, h), TK_ENOENT);
    ck_assert_str_ne(tk_world_last_error(w), "");
    frames(e, 1);
    ck_assert_int_eq(p.calls, 3);
    tk_engine_free(e);
}
END_TEST

START_TEST(ticker_ticks_while_paused)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    int pass = 0;
    probe p = {.pass = &pass};
    ck_assert_int_eq(tk_ticker_add(e, 0.25, probe_fn, &p, NULL), 0);
    tk_world_set_paused(w, true);
    for (int i = 0; i < 6; i++) {
        pass++;
        frames(e, 1);
    }
    ck_assert_uint_eq(tk_world_time_ns(w), 0);       /* the world stood */
    ck_assert_int_eq(p.calls, 2);                    /* the ticker did not */
    ck_assert_int_eq(p.fired_on[0], 3);
    ck_assert_int_eq(p.fired_on[1], 6);
    ck_assert_double_eq_tol(p.last_dt, 0.1, 1e-12);
    tk_engine_free(e);
}
END_TEST

START_TEST(ticker_engine_validation)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    probe p = {0};
    tk_ticker_handle h = 9;
    ck_assert_int_eq(tk_ticker_add(e, -1, probe_fn, &p, &h), TK_EINVAL);
    ck_assert_ptr_nonnull(strstr(tk_world_last_error(w), "delay"));
    ck_assert_int_eq(tk_ticker_add(e, 0, NULL, &p, &h), TK_EINVAL);
    ck_assert_ptr_nonnull(strstr(tk_world_last_error(w), "fn"));
    ck_assert_uint_eq(h, 9);
    ck_assert_uint_eq(tk__ticker_count(tk__engine_ticker(e)), 0);
    tk_engine_free(e);
}
END_TEST

static Suite *ticker_suite(void)
{
    Suite *s = suite_create("ticker");
    TCase *tc = tcase_create("ticker");
    tcase_add_test(tc, ticker_delay_no_catchup);
    tcase_add_test(tc, ticker_zero_delay_and_exact_due);
    tcase_add_test(tc, ticker_false_removes);
    tcase_add_test(tc, ticker_remove_self);
    tcase_add_test(tc, ticker_remove_other_during_pass);
    tcase_add_test(tc, ticker_add_during_pass_same_pass);
    tcase_add_test(tc, ticker_add_many_during_pass);
    tcase_add_test(tc, ticker_time_stops_while_empty);
    tcase_add_test(tc, ticker_validation);
    tcase_add_test(tc, ticker_raw_undilated_dt);
    tcase_add_test(tc, ticker_ticks_while_paused);
    tcase_add_test(tc, ticker_engine_validation);
    suite_add_tcase(s, tc);
    return s;
}

TK_CHECK_MAIN(ticker_suite)
