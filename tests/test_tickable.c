/*
 * test_tickable.c - tickable objects (tickd/tickable.h), driven through the
 * engine with a fixed dt of 0.1 s and no pacing.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickd/alloc.h"
#include "tickd/engine.h"
#include "tickd/error.h"
#include "tickd/tickable.h"
#include "tickd/world.h"
#include "check_main.h"

static tk_engine_t *make_engine(double fixed_dt)
{
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    d.tick_rate = 0;
    d.fixed_dt = fixed_dt;
    tk_engine_t *e = NULL;
    ck_assert_int_eq(tk_engine_new(&d, &e), 0);
    ck_assert_ptr_nonnull(e);
    return e;
}

static void frames(tk_engine_t *e, int n)
{
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(tk_engine_frame(e), 0);
}

/* A probe: what a tickable saw, and an optional action run on a given tick. */
typedef struct probe {
    int ticks;               /* callbacks received                        */
    float last_dt;           /* s                                         */
    int freed;               /* free_ud calls                             */
    int freed_during_pass;   /* value of `freed` seen by a later callback */
    char name;               /* letter appended to the order log          */
    char *log;               /* order log shared by the probes, or NULL   */
    void (*action)(struct probe *p, tk_world_t *w);
    int action_on_tick;      /* run action on this tick (1-based), 0 never */
    tk_tickable_id self;     /* own id                                    */
    tk_tickable_id other;    /* target of the action                      */
    struct probe *other_probe;
    tk_tickable_id added;    /* id created by the action                  */
} probe;

static void probe_fn(void *ud, float dt, tk_world_t *w)
{
    probe *p = ud;
    p->ticks++;
    p->last_dt = dt;
    if (p->log) {
        size_t n = strlen(p->log);
        p->log[n] = p->name;
        p->log[n + 1] = '\0';
    }
    if (p->action && p->ticks == p->action_on_tick)
        p->action(p, w);
}

static void probe_free(void *ud)
{
    ((probe *)ud)->freed++;
}

static tk_tickable_id add_probe(tk_world_t *w, probe *p, tk_tickable_type type,
                                bool enabled, bool when_paused)
{
    tk_tickable_desc d = {.type = type, .enabled = enabled, .when_paused = when_paused,
                          .fn = probe_fn, .ud = p, .free_ud = probe_free};
    tk_tickable_id id = TK_TICKABLE_NONE;
    ck_assert_int_eq(tk_tickable_add(w, &d, &id), 0);
    ck_assert_uint_ne(id, TK_TICKABLE_NONE);
    p->self = id;
    return id;
}

START_TEST(tickable_types)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    probe a = {0}, c_on = {0}, c_off = {0}, n = {0};
    add_probe(w, &a, TK_TICKABLE_ALWAYS, false, false);
    add_probe(w, &c_on, TK_TICKABLE_CONDITIONAL, true, false);
    add_probe(w, &c_off, TK_TICKABLE_CONDITIONAL, false, false);
    tk_tickable_id nid = add_probe(w, &n, TK_TICKABLE_NEVER, true, false);
    ck_assert_uint_eq(tk_tickable_count(w), 4);
    frames(e, 3);
    ck_assert_int_eq(a.ticks, 3);     /* always ignores `enabled` */
    ck_assert_int_eq(c_on.ticks, 3);
    ck_assert_int_eq(c_off.ticks, 0);
    ck_assert_int_eq(n.ticks, 0);

    /* A never tickable is kept and reported, and can be switched. */
    tk_tickable_info info;
    ck_assert_int_eq(tk_tickable_get(w, nid, &info), 0);
    ck_assert_int_eq(info.type, TK_TICKABLE_NEVER);
    ck_assert_uint_eq(info.ticks, 0);
    ck_assert_uint_eq(info.last_frame, 0);
    ck_assert_int_eq(tk_tickable_set_type(w, nid, TK_TICKABLE_ALWAYS), 0);
    frames(e, 2);
    ck_assert_int_eq(n.ticks, 2);
    ck_assert_int_eq(tk_tickable_set_type(w, nid, TK_TICKABLE_NEVER), 0);
    frames(e, 2);
    ck_assert_int_eq(n.ticks, 2);
    ck_assert_int_eq(tk_tickable_set_type(w, nid, (tk_tickable_type)7), TK_EINVAL);
    ck_assert_str_ne(tk_world_last_error(w), "");
    ck_assert_int_eq(tk_tickable_get(w, nid, &info), 0);
    ck_assert_int_eq(info.type, TK_TICKABLE_NEVER);
    tk_engine_free(e);
}
END_TEST

START_TEST(tickable_conditional_toggle)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    probe p = {0};
    tk_tickable_id id = add_probe(w, &p, TK_TICKABLE_CONDITIONAL, false, false);
    frames(e, 2);
    ck_assert_int_eq(p.ticks, 0);
    ck_assert_int_eq(tk_tickable_set_enabled(w, id, true), 0);
    frames(e, 3);
    ck_assert_int_eq(p.ticks, 3);
    ck_assert_int_eq(tk_tickable_set_enabled(w, id, false), 0);
    frames(e, 2);
    ck_assert_int_eq(p.ticks, 3);
    tk_tickable_info info;
    ck_assert_int_eq(tk_tickable_get(w, id, &info), 0);
    ck_assert(!info.enabled);
    ck_assert_uint_eq(info.ticks, 3);
    ck_assert_uint_eq(info.last_frame, 4); /* frames 2, 3, 4 ticked */
    ck_assert_int_eq(tk_tickable_set_enabled(w, id, true), 0);
    frames(e, 1);
    ck_assert_int_eq(p.ticks, 4);
    tk_engine_free(e);
}
END_TEST

START_TEST(tickable_when_paused)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    probe plain = {0}, wp = {0}, wp_off = {0};
    add_probe(w, &plain, TK_TICKABLE_ALWAYS, true, false);
    tk_tickable_id wid = add_probe(w, &wp, TK_TICKABLE_ALWAYS, true, true);
    add_probe(w, &wp_off, TK_TICKABLE_CONDITIONAL, false, true);
    frames(e, 1);
    ck_assert_int_eq(plain.ticks, 1);
    ck_assert_int_eq(wp.ticks, 1);

    tk_world_set_paused(w, true);
    frames(e, 3);
    ck_assert_int_eq(plain.ticks, 1);  /* stands while paused */
    ck_assert_int_eq(wp.ticks, 4);     /* ticks in pause frames */
    ck_assert_int_eq(wp_off.ticks, 0); /* when_paused does not override enabled */
    ck_assert_float_eq_tol(wp.last_dt, 0.1f, 1e-6f);

    ck_assert_int_eq(tk_tickable_set_when_paused(w, wid, false), 0);
    frames(e, 1);
    ck_assert_int_eq(wp.ticks, 4);
    ck_assert_int_eq(tk_tickable_set_when_paused(w, wid, true), 0);

    /* A world step runs the frame as unpaused: everything ticks. */
    ck_assert_int_eq(tk_world_step(w, 1), 0);
    frames(e, 1);
    ck_assert_int_eq(plain.ticks, 2);
    ck_assert_int_eq(wp.ticks, 5);

    tk_world_set_paused(w, false);
    frames(e, 2);
    ck_assert_int_eq(plain.ticks, 4);
    ck_assert_int_eq(wp.ticks, 7);
    tk_engine_free(e);
}
END_TEST

static void act_add(probe *p, tk_world_t *w)
{
    p->added = add_probe(w, p->other_probe, TK_TICKABLE_ALWAYS, true, false);
}

START_TEST(tickable_add_during_pass)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    char log[64] = "";
    probe a = {.name = 'a', .log = log}, b = {.name = 'b', .log = log};
    probe n = {.name = 'n', .log = log};
    a.action = act_add;
    a.action_on_tick = 1;
    a.other_probe = &n;
    add_probe(w, &a, TK_TICKABLE_ALWAYS, true, false);
    add_probe(w, &b, TK_TICKABLE_ALWAYS, true, false);

    frames(e, 1);
    ck_assert_str_eq(log, "ab");     /* n was added after b: not this pass */
    ck_assert_int_eq(n.ticks, 0);
    ck_assert_uint_eq(tk_tickable_count(w), 3);
    tk_tickable_info info;
    ck_assert_int_eq(tk_tickable_get(w, a.added, &info), 0);
    ck_assert_uint_eq(info.ticks, 0);

    frames(e, 1);
    ck_assert_str_eq(log, "ababn");  /* from the next pass, in added order */
    ck_assert_int_eq(tk_tickable_get(w, a.added, &info), 0);
    ck_assert_uint_eq(info.ticks, 1);
    ck_assert_uint_eq(info.last_frame, 1);
    tk_engine_free(e);
}
END_TEST

/* Many additions during one pass (the slot array moves under the pass). */
static void act_add_many(probe *p, tk_world_t *w)
{
    for (int i = 0; i < 100; i++)
        add_probe(w, &p->other_probe[i], TK_TICKABLE_ALWAYS, true, false);
}

START_TEST(tickable_add_many_during_pass)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    probe *many = calloc(100, sizeof *many);
    probe a = {0}, z = {0};
    a.action = act_add_many;
    a.action_on_tick = 1;
    a.other_probe = many;
    add_probe(w, &a, TK_TICKABLE_ALWAYS, true, false);
    add_probe(w, &z, TK_TICKABLE_ALWAYS, true, false);
    frames(e, 1);
    ck_assert_int_eq(z.ticks, 1);
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(many[i].ticks, 0);
    frames(e, 1);
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(many[i].ticks, 1);
    ck_assert_uint_eq(tk_tickable_count(w), 102);
    tk_engine_free(e);
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(many[i].freed, 1);
    free(many);
}
END_TEST

static void act_remove_other(probe *p, tk_world_t *w)
{
    ck_assert_int_eq(tk_tickable_remove(w, p->other), 0);
    /* Stale at once, even though its slot is released after the pass. */
    tk_tickable_info info;
    ck_assert_int_eq(tk_tickable_get(w, p->other, &info), TK_ENOENT);
    ck_assert_int_eq(tk_tickable_remove(w, p->other), TK_ENOENT);
    ck_assert_int_eq(tk_tickable_set_enabled(w, p->other, true), TK_ENOENT);
}

static void act_remove_self(probe *p, tk_world_t *w)
{
    ck_assert_int_eq(tk_tickable_remove(w, p->self), 0);
}

static void act_record_freed(probe *p, tk_world_t *w)
{
    (void)w;
    p->freed_during_pass = p->other_probe->freed;
}

START_TEST(tickable_remove_during_pass)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    char log[64] = "";
    probe a = {.name = 'a', .log = log}, b = {.name = 'b', .log = log};
    probe c = {.name = 'c', .log = log}, d = {.name = 'd', .log = log};
    probe s = {.name = 's', .log = log}, z = {.name = 'z', .log = log};
    add_probe(w, &a, TK_TICKABLE_ALWAYS, true, false);
    tk_tickable_id bid = add_probe(w, &b, TK_TICKABLE_ALWAYS, true, false);
    tk_tickable_id cid = add_probe(w, &c, TK_TICKABLE_ALWAYS, true, false);
    add_probe(w, &d, TK_TICKABLE_ALWAYS, true, false);
    add_probe(w, &s, TK_TICKABLE_ALWAYS, true, false);
    add_probe(w, &z, TK_TICKABLE_ALWAYS, true, false);
    /* a removes c before c's turn; d removes b after b's turn; s removes
     * itself; z (last) records how many free_ud calls c got so far. */
    a.action = act_remove_other;
    a.action_on_tick = 1;
    a.other = cid;
    d.action = act_remove_other;
    d.action_on_tick = 1;
    d.other = bid;
    s.action = act_remove_self;
    s.action_on_tick = 1;
    z.action = act_record_freed;
    z.action_on_tick = 1;
    z.other_probe = &c;
    z.freed_during_pass = -1;

    frames(e, 1);
    ck_assert_str_eq(log, "abdsz");    /* c never ticked */
    ck_assert_int_eq(c.ticks, 0);
    ck_assert_int_eq(b.ticks, 1);
    ck_assert_int_eq(s.ticks, 1);
    ck_assert_int_eq(z.freed_during_pass, 0); /* free_ud waits for the pass end */
    ck_assert_int_eq(c.freed, 1);
    ck_assert_int_eq(b.freed, 1);
    ck_assert_int_eq(s.freed, 1);
    ck_assert_uint_eq(tk_tickable_count(w), 3);

    frames(e, 1);
    ck_assert_str_eq(log, "abdszadz");
    ck_assert_int_eq(b.ticks, 1);
    ck_assert_int_eq(s.ticks, 1);
    tk_engine_free(e);
    ck_assert_int_eq(a.freed, 1);
    ck_assert_int_eq(b.freed, 1);
    ck_assert_int_eq(c.freed, 1);
    ck_assert_int_eq(s.freed, 1);
}
END_TEST

/* The last tickable of the pass removed by an earlier one, then a new one
 * added in the same pass: the pass stops at its original end. */
static void act_remove_then_add(probe *p, tk_world_t *w)
{
    ck_assert_int_eq(tk_tickable_remove(w, p->other), 0);
    p->added = add_probe(w, p->other_probe, TK_TICKABLE_ALWAYS, true, false);
}

START_TEST(tickable_remove_last_and_add_during_pass)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    probe a = {0}, last = {0}, n = {0};
    add_probe(w, &a, TK_TICKABLE_ALWAYS, true, false);
    tk_tickable_id lid = add_probe(w, &last, TK_TICKABLE_ALWAYS, true, false);
    a.action = act_remove_then_add;
    a.action_on_tick = 1;
    a.other = lid;
    a.other_probe = &n;
    frames(e, 1);
    ck_assert_int_eq(last.ticks, 0);
    ck_assert_int_eq(n.ticks, 0);
    ck_assert_int_eq(last.freed, 1);
    frames(e, 1);
    ck_assert_int_eq(n.ticks, 1);
    ck_assert_int_eq(a.ticks, 2);
    tk_engine_free(e);
}
END_TEST

/* Changing another tickable mid-pass affects it if not yet reached. */
static void act_disable_other(probe *p, tk_world_t *w)
{
    ck_assert_int_eq(tk_tickable_set_type(w, p->other, TK_TICKABLE_NEVER), 0);
}

START_TEST(tickable_change_during_pass)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    probe a = {0}, b = {0};
    add_probe(w, &a, TK_TICKABLE_ALWAYS, true, false);
    tk_tickable_id bid = add_probe(w, &b, TK_TICKABLE_ALWAYS, true, false);
    a.action = act_disable_other;
    a.action_on_tick = 1;
    a.other = bid;
    frames(e, 2);
    ck_assert_int_eq(a.ticks, 2);
    ck_assert_int_eq(b.ticks, 0);
    tk_engine_free(e);
}
END_TEST

START_TEST(tickable_counters)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    probe p = {0}, q = {0};
    tk_tickable_id id = add_probe(w, &p, TK_TICKABLE_ALWAYS, true, false);
    tk_tickable_id qid = add_probe(w, &q, TK_TICKABLE_CONDITIONAL, false, false);
    frames(e, 10);
    tk_tickable_info info;
    ck_assert_int_eq(tk_tickable_get(w, id, &info), 0);
    ck_assert_uint_eq(info.id, id);
    ck_assert_uint_eq(info.ticks, 10);
    ck_assert_uint_eq(info.last_frame, 9);   /* frames 0..9 */
    ck_assert_double_eq_tol(info.accum_dt, 1.0, 1e-6);
    ck_assert_ptr_eq(info.ud, &p);
    ck_assert_int_eq(info.type, TK_TICKABLE_ALWAYS);
    ck_assert(info.enabled);
    ck_assert(!info.when_paused);
    ck_assert_float_eq_tol(p.last_dt, 0.1f, 1e-7f);

    ck_assert_int_eq(tk_tickable_get(w, qid, &info), 0);
    ck_assert_uint_eq(info.ticks, 0);
    ck_assert_uint_eq(info.last_frame, 0);
    ck_assert_double_eq(info.accum_dt, 0.0);
    ck_assert_int_eq(tk_tickable_get(w, qid, NULL), TK_EINVAL);
    tk_engine_free(e);
}
END_TEST

START_TEST(tickable_dilation)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    probe p = {0};
    tk_tickable_id id = add_probe(w, &p, TK_TICKABLE_ALWAYS, true, false);
    frames(e, 1);
    ck_assert_float_eq_tol(p.last_dt, 0.1f, 1e-7f);
    double applied = 0;
    ck_assert_int_eq(tk_world_set_time_dilation(w, 2.0, &applied), 0);
    ck_assert_double_eq(applied, 2.0);
    frames(e, 2);
    ck_assert_float_eq_tol(p.last_dt, 0.2f, 1e-7f);
    ck_assert_int_eq(tk_world_set_time_dilation(w, 0.5, &applied), 0);
    frames(e, 1);
    ck_assert_float_eq_tol(p.last_dt, 0.05f, 1e-7f);
    tk_tickable_info info;
    ck_assert_int_eq(tk_tickable_get(w, id, &info), 0);
    ck_assert_double_eq_tol(info.accum_dt, 0.1 + 0.2 + 0.2 + 0.05, 1e-6);
    tk_engine_free(e);
}
END_TEST

START_TEST(tickable_free_ud_once)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    probe out = {0}, in = {0}, kept = {0}, never = {0};
    tk_tickable_id oid = add_probe(w, &out, TK_TICKABLE_ALWAYS, true, false);
    add_probe(w, &in, TK_TICKABLE_ALWAYS, true, false);
    add_probe(w, &kept, TK_TICKABLE_CONDITIONAL, false, false);
    add_probe(w, &never, TK_TICKABLE_NEVER, false, false);
    in.action = act_remove_self;
    in.action_on_tick = 2;

    /* Removed outside a pass: free_ud runs before remove returns. */
    ck_assert_int_eq(tk_tickable_remove(w, oid), 0);
    ck_assert_int_eq(out.freed, 1);
    ck_assert_int_eq(tk_tickable_remove(w, oid), TK_ENOENT);
    ck_assert_int_eq(out.freed, 1);

    frames(e, 3);
    ck_assert_int_eq(in.freed, 1);
    ck_assert_int_eq(in.ticks, 2);
    ck_assert_int_eq(kept.freed, 0);

    /* The world frees the rest, each exactly once; NULL free_ud is fine. */
    tk_tickable_desc d = {.type = TK_TICKABLE_ALWAYS, .fn = probe_fn, .ud = &kept};
    ck_assert_int_eq(tk_tickable_add(w, &d, NULL), 0);
    tk_engine_free(e);
    ck_assert_int_eq(out.freed, 1);
    ck_assert_int_eq(in.freed, 1);
    ck_assert_int_eq(kept.freed, 1);
    ck_assert_int_eq(never.freed, 1);
}
END_TEST

START_TEST(tickable_stale_ids)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    probe p = {0}, q = {0};
    tk_tickable_id id = add_probe(w, &p, TK_TICKABLE_ALWAYS, true, false);
    ck_assert_int_eq(tk_tickable_remove(w, id), 0);
    tk_tickable_info info;
    ck_assert_int_eq(tk_tickable_get(w, id, &info), TK_ENOENT);
    ck_assert_int_eq(tk_tickable_set_enabled(w, id, true), TK_ENOENT);
    ck_assert_int_eq(tk_tickable_set_when_paused(w, id, true), TK_ENOENT);
    ck_assert_int_eq(tk_tickable_set_type(w, id, TK_TICKABLE_ALWAYS), TK_ENOENT);
    ck_assert_int_eq(tk_tickable_remove(w, id), TK_ENOENT);
    ck_assert_str_ne(tk_world_last_error(w), "");

    /* The slot is reused under a new generation: the old id stays stale. */
    tk_tickable_id id2 = add_probe(w, &q, TK_TICKABLE_ALWAYS, true, false);
    ck_assert_uint_ne(id2, id);
    ck_assert_uint_eq((uint32_t)id2, (uint32_t)id);
    ck_assert_int_eq(tk_tickable_get(w, id, &info), TK_ENOENT);
    ck_assert_int_eq(tk_tickable_get(w, id2, &info), 0);
    ck_assert_ptr_eq(info.ud, &q);
    ck_assert_int_eq(tk_tickable_remove(w, id), TK_ENOENT);
    ck_assert_uint_eq(tk_tickable_count(w), 1);

    /* Never-valid ids. */
    ck_assert_int_eq(tk_tickable_get(w, TK_TICKABLE_NONE, &info), TK_ENOENT);
    ck_assert_int_eq(tk_tickable_remove(w, TK_TICKABLE_NONE), TK_ENOENT);
    ck_assert_int_eq(tk_tickable_get(w, ((uint64_t)1 << 32) | 12345, &info), TK_ENOENT);
    ck_assert_int_eq(tk_tickable_get(w, (uint32_t)id2, &info), TK_ENOENT);
    frames(e, 1);
    ck_assert_int_eq(p.ticks, 0);
    ck_assert_int_eq(q.ticks, 1);
    tk_engine_free(e);
}
END_TEST

START_TEST(tickable_order_and_iteration)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    char log[64] = "";
    probe p[4] = {{.name = 'a', .log = log}, {.name = 'b', .log = log},
                  {.name = 'c', .log = log}, {.name = 'd', .log = log}};
    tk_tickable_id ids[4];
    for (int i = 0; i < 3; i++)
        ids[i] = add_probe(w, &p[i], TK_TICKABLE_ALWAYS, true, false);
    ck_assert_int_eq(tk_tickable_remove(w, ids[0]), 0);
    /* d reuses a's slot but goes to the end of the order. */
    ids[3] = add_probe(w, &p[3], TK_TICKABLE_ALWAYS, true, false);
    frames(e, 1);
    ck_assert_str_eq(log, "bcd");

    uint64_t cursor = 0;
    tk_tickable_id got;
    ck_assert(tk_tickable_next(w, &cursor, &got));
    ck_assert_uint_eq(got, ids[1]);
    ck_assert(tk_tickable_next(w, &cursor, &got));
    ck_assert_uint_eq(got, ids[2]);
    ck_assert(tk_tickable_next(w, &cursor, &got));
    ck_assert_uint_eq(got, ids[3]);
    ck_assert(!tk_tickable_next(w, &cursor, &got));
    ck_assert_uint_eq(tk_tickable_count(w), 3);

    /* Removing one not yet reached between calls skips it. */
    cursor = 0;
    ck_assert(tk_tickable_next(w, &cursor, &got));
    ck_assert_int_eq(tk_tickable_remove(w, ids[2]), 0);
    ck_assert(tk_tickable_next(w, &cursor, &got));
    ck_assert_uint_eq(got, ids[3]);
    ck_assert(!tk_tickable_next(w, &cursor, &got));
    tk_engine_free(e);
}
END_TEST

START_TEST(tickable_validation)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    probe p = {0};
    tk_tickable_id id = 77;
    tk_tickable_desc d = {.type = TK_TICKABLE_ALWAYS, .fn = NULL, .ud = &p};
    ck_assert_int_eq(tk_tickable_add(w, &d, &id), TK_EINVAL);
    ck_assert_ptr_nonnull(strstr(tk_world_last_error(w), "fn"));
    d.fn = probe_fn;
    d.type = (tk_tickable_type)3;
    ck_assert_int_eq(tk_tickable_add(w, &d, &id), TK_EINVAL);
    ck_assert_ptr_nonnull(strstr(tk_world_last_error(w), "type"));
    ck_assert_int_eq(tk_tickable_add(w, NULL, &id), TK_EINVAL);
    ck_assert_uint_eq(id, 77);             /* failed calls change nothing */
    ck_assert_uint_eq(tk_tickable_count(w), 0);

    /* Out of memory growing the registry: reported, nothing changes. */
    d.type = TK_TICKABLE_ALWAYS;
    tk_alloc_fail_after(1);
    ck_assert_int_eq(tk_tickable_add(w, &d, &id), TK_ENOMEM);
    tk_alloc_fail_after(0);
    ck_assert_uint_eq(tk_tickable_count(w), 0);
    ck_assert_int_eq(tk_tickable_add(w, &d, &id), 0);
    frames(e, 1);
    ck_assert_int_eq(p.ticks, 1);
    tk_engine_free(e);
}
END_TEST

START_TEST(tickable_type_names)
{
    tk_tickable_type t;
    const tk_tickable_type all[] = {TK_TICKABLE_ALWAYS, TK_TICKABLE_CONDITIONAL,
                                    TK_TICKABLE_NEVER};
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_int_eq(tk_tickable_type_parse(tk_tickable_type_name(all[i]), &t), 0);
        ck_assert_int_eq(t, all[i]);
    }
    ck_assert_str_eq(tk_tickable_type_name(TK_TICKABLE_CONDITIONAL), "conditional");
    ck_assert_str_eq(tk_tickable_type_name((tk_tickable_type)9), "unknown");
    ck_assert_int_eq(tk_tickable_type_parse("sometimes", &t), TK_EINVAL);
    ck_assert_int_eq(tk_tickable_type_parse(NULL, &t), TK_EINVAL);
}
END_TEST

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

/* Ids stay below 2^53 (exact in JSON): a slot's generation wraps to 1 after
 * the largest. */
START_TEST(tickable_ids_json_safe)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    char log[64] = "";
    probe a = {.name = 'a', .log = log}, b = {.name = 'b', .log = log};
    tk_tickable_desc d = {.type = TK_TICKABLE_ALWAYS, .enabled = true, .fn = probe_fn,
                          .free_ud = probe_free};
    tk_tickable_id top = ((UINT64_C(1) << 21) - 1) << 32; /* slot 0, last generation */
    ck_assert_uint_lt(top, UINT64_C(1) << 53);
    d.ud = &a;
    ck_assert_int_eq(tk_tickable_restore(w, &d, top, 0, 0, 0), 0);
    ck_assert_int_eq(tk_tickable_remove(w, top), 0);
    d.ud = &b;
    tk_tickable_id id;
    ck_assert_int_eq(tk_tickable_add(w, &d, &id), 0);
    ck_assert_uint_eq(id, UINT64_C(1) << 32); /* slot 0 again, generation 1 */
    tk_tickable_info info;
    ck_assert_int_eq(tk_tickable_get(w, top, &info), TK_ENOENT);
    tk_engine_free(e);
}
END_TEST

/* Restored ids whose index lies far past the ones in use (a snapshot naming
 * slot 100,000,000) cost one slot each, tick in restore order, iterate,
 * look up and remove like any other; stale forms of them stay unknown. */

/* Restoring what a snapshot keeps (every tickable under its id, then the
 * free slots with their generations) gives the next tickables the ids the
 * saved world would have given. */
START_TEST(tickable_restore_free_exact)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    probe p[8] = {{0}};
    tk_tickable_id id[8];
    for (int i = 0; i < 6; i++)
        id[i] = add_probe(w, &p[i], TK_TICKABLE_ALWAYS, true, false);
    /* Removed in the order 4, 1, 2; 1 reused once (generation 3 next). */
    ck_assert_int_eq(tk_tickable_remove(w, id[4]), 0);
    ck_assert_int_eq(tk_tickable_remove(w, id[1]), 0);
    id[6] = add_probe(w, &p[6], TK_TICKABLE_ALWAYS, true, false);
    ck_assert_uint_eq((uint32_t)id[6], (uint32_t)id[1]);
    ck_assert_int_eq(tk_tickable_remove(w, id[6]), 0);
    ck_assert_int_eq(tk_tickable_remove(w, id[2]), 0);
    tk_tickable_id fr[8];
    size_t nf = tk_tickable_free_ids(w, fr, 8);
    ck_assert_uint_eq(nf, 3);
    ck_assert_uint_eq(fr[0] >> 32, 2);         /* slot 2, used once */
    ck_assert_uint_eq((uint32_t)fr[1], (uint32_t)id[1]);
    ck_assert_uint_eq(fr[1] >> 32, 3);         /* slot 1, used twice */
    /* Restored elsewhere: the live ones under their ids, then the free list. */
    tk_engine_t *e2 = make_engine(0.1);
    tk_world_t *w2 = tk_engine_world(e2);
    probe q[8] = {{0}};
    int live[] = {0, 3, 5};
    for (int k = 0; k < 3; k++) {
        tk_tickable_desc d = {.type = TK_TICKABLE_ALWAYS, .enabled = true, .fn = probe_fn,
                              .free_ud = probe_free, .ud = &q[k]};
        ck_assert_int_eq(tk_tickable_restore(w2, &d, id[live[k]], 0, 0, 0), 0);
    }
    ck_assert_int_eq(tk_tickable_restore_free(w2, fr, nf), 0);
    tk_tickable_id fr2[8];
    ck_assert_uint_eq(tk_tickable_free_ids(w2, fr2, 8), nf);
    for (size_t k = 0; k < nf; k++)
        ck_assert_uint_eq(fr2[k], fr[k]);
    for (int k = 0; k < 4; k++)
        ck_assert_uint_eq(add_probe(w, &p[7], TK_TICKABLE_NEVER, true, false),
                          add_probe(w2, &q[7], TK_TICKABLE_NEVER, true, false));
    /* Bad input changes nothing. */
    tk_tickable_id bad[2] = {id[0], id[0]};
    ck_assert_int_eq(tk_tickable_restore_free(w2, bad, 1), TK_EINVAL); /* live */
    tk_tickable_id twice[2] = {(UINT64_C(1) << 32) | 40, (UINT64_C(1) << 32) | 40};
    ck_assert_int_eq(tk_tickable_restore_free(w2, twice, 2), TK_EINVAL);
    tk_engine_free(e2);
    tk_engine_free(e);
}
END_TEST

START_TEST(tickable_restore_sparse_ids)
{
    tk_engine_t *e = make_engine(0.1);
    tk_world_t *w = tk_engine_world(e);
    long rss0 = rss_kib();
    char log[64] = "";
    probe a = {.name = 'a', .log = log}, b = {.name = 'b', .log = log},
          c = {.name = 'c', .log = log};
    tk_tickable_desc d = {.type = TK_TICKABLE_ALWAYS, .enabled = true, .fn = probe_fn,
                          .free_ud = probe_free};
    tk_tickable_id ia = (UINT64_C(3) << 32) | 100000000u, ib = (UINT64_C(1) << 32) | 0,
                   ic = (UINT64_C(7) << 32) | 4000000000u;
    d.ud = &a;
    ck_assert_int_eq(tk_tickable_restore(w, &d, ia, 5, 0, 0), 0);
    d.ud = &b;
    /* index 0 now holds the alias of ia: ib is kept aside too */
    ck_assert_int_eq(tk_tickable_restore(w, &d, ib, 0, 0, 0), 0);
    d.ud = &c;
    ck_assert_int_eq(tk_tickable_restore(w, &d, ic, 0, 0, 0), 0);
    ck_assert_int_eq(tk_tickable_restore(w, &d, ic, 0, 0, 0), TK_EEXIST);
    ck_assert_msg(rss_kib() - rss0 < 64 * 1024, "RSS grew by %ld KiB", rss_kib() - rss0);
    tk_tickable_info info;
    ck_assert_int_eq(tk_tickable_get(w, ia, &info), 0);
    ck_assert_uint_eq(info.ticks, 5);
    ck_assert_int_eq(tk_tickable_get(w, (UINT64_C(2) << 32) | 100000000u, &info), TK_ENOENT);
    uint64_t cur = 0;
    tk_tickable_id got[4];
    int n = 0;
    while (n < 4 && tk_tickable_next(w, &cur, &got[n]))
        n++;
    ck_assert_int_eq(n, 3);
    ck_assert_uint_eq(got[0], ia);
    ck_assert_uint_eq(got[1], ib);
    ck_assert_uint_eq(got[2], ic);
    frames(e, 1);
    ck_assert_str_eq(log, "abc");
    ck_assert_int_eq(tk_tickable_remove(w, ia), 0);
    ck_assert_int_eq(a.freed, 1);
    ck_assert_int_eq(tk_tickable_get(w, ia, &info), TK_ENOENT);
    ck_assert_int_eq(tk_tickable_remove(w, ia), TK_ENOENT);
    /* A new tickable gets a fresh id, never one of the restored ones. */
    probe x = {.name = 'x', .log = log};
    tk_tickable_id ix = add_probe(w, &x, TK_TICKABLE_ALWAYS, true, false);
    ck_assert(ix != ia && ix != ib && ix != ic);
    frames(e, 1);
    ck_assert_str_eq(log, "abcbcx");
    tk_engine_free(e);
    ck_assert_int_eq(b.freed, 1);
    ck_assert_int_eq(c.freed, 1);
}
END_TEST

static Suite *tickable_suite(void)
{
    Suite *s = suite_create("tickable");
    TCase *tc = tcase_create("tickable");
    tcase_add_test(tc, tickable_types);
    tcase_add_test(tc, tickable_conditional_toggle);
    tcase_add_test(tc, tickable_when_paused);
    tcase_add_test(tc, tickable_add_during_pass);
    tcase_add_test(tc, tickable_add_many_during_pass);
    tcase_add_test(tc, tickable_remove_during_pass);
    tcase_add_test(tc, tickable_remove_last_and_add_during_pass);
    tcase_add_test(tc, tickable_change_during_pass);
    tcase_add_test(tc, tickable_counters);
    tcase_add_test(tc, tickable_dilation);
    tcase_add_test(tc, tickable_free_ud_once);
    tcase_add_test(tc, tickable_stale_ids);
    tcase_add_test(tc, tickable_order_and_iteration);
    tcase_add_test(tc, tickable_validation);
    tcase_add_test(tc, tickable_type_names);
    tcase_add_test(tc, tickable_restore_sparse_ids);
    tcase_add_test(tc, tickable_restore_free_exact);
    tcase_add_test(tc, tickable_ids_json_safe);
    suite_add_tcase(s, tc);
    return s;
}

TK_CHECK_MAIN(tickable_suite)
