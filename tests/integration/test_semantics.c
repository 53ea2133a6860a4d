/*
 * test_semantics.c - Unreal's tick semantics seen through the protocol
 * (UE-SEMANTICS.md "tickd's mapping", include/tickd/tick.h and timer.h):
 * group order, prerequisites and demotion, high priority, intervals with
 * their exact frames, pause frames, world and custom dilation, timers
 * (pending activation, strict expiry, catch-up, pause), tickables, the
 * newly-spawned pass and the runaway cut, life spans, and the events that
 * report slow ticks, overruns and cycles.
 *
 * Time is driven in exact steps: the daemon runs with --fixed-dt (0.01 s,
 * or 1/128 s where strict expiry matters, so that every sum is exact in
 * binary), the world is paused, and frames run only through world.step.
 * tkit_step_traced() puts world.trace and world.step in one batch, so both are
 * taken at the same frame boundary and the trace covers exactly the
 * stepped frames.  Not here: result shapes and error codes (test_methods.c).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define DT_EXACT 0.0078125 /* s, 1/128: sums of it are exact doubles */

static const char *const exact_cfg[] = {"engine.fixed_dt=0.0078125", NULL};

/* A paused daemon (fixed dt from `cfg`, default 0.01 s) and a client. */
static tkit_daemon *start_paused(const char *const *cfg, tkit_conn **c)
{
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    *c = tkit_connect(d);
    tkit_ok(*c, "world.pause", NULL);
    return d;
}

static long long spawn(tkit_conn *c, const char *params)
{
    json_t *r = tkit_ok(c, "entity.spawn", "%s", params);
    json_t *ids = json_object_get(r, "ids");
    return ids ? tkit_geti(ids, "[0]") : tkit_geti(r, "first");
}

static void step(tkit_conn *c, int n) { tkit_ok(c, "world.step", "{\"frames\":%d}", n); }

/* The ticks of trace frame `i`. */
static json_t *ticks_of(json_t *frames, size_t i)
{
    return tkit_get(json_array_get(frames, i), "ticks");
}

/* Assert trace entry `k` of `ticks` is (entity, component (-1 = actor), group). */
static void assert_tick(json_t *ticks, size_t k, long long entity, int component, const char *group)
{
    json_t *t = json_array_get(ticks, k);
    ck_assert_msg(t, "no trace entry %zu in %s", k, tkit_dump(ticks));
    json_t *comp = tkit_get(t, "component");
    bool comp_ok = component < 0 ? json_is_null(comp)
                                 : json_is_integer(comp) && json_integer_value(comp) == component;
    ck_assert_msg(tkit_geti(t, "entity") == entity && comp_ok &&
                      strcmp(tkit_gets(t, "group"), group) == 0,
                  "trace entry %zu: want entity %lld component %d in %s; trace %s", k, entity,
                  component, group, tkit_dump(ticks));
}

static json_t *entity(tkit_conn *c, long long id)
{
    return tkit_ok(c, "entity.get", "{\"id\":%lld}", id);
}

static long long tick_count(tkit_conn *c, long long id)
{
    return tkit_geti(entity(c, id), "tick.ticks");
}

static double world_time(tkit_conn *c)
{
    return tkit_getd(tkit_ok(c, "world.status", NULL), "world_time");
}

static long long live_entities(tkit_conn *c)
{
    return tkit_geti(tkit_ok(c, "world.status", NULL), "entities");
}

static json_t *timer(tkit_conn *c, long long h)
{
    return tkit_ok(c, "timer.get", "{\"handle\":%lld}", h);
}

/* ---- groups, prerequisites, priority ----------------------------------------------------- */

START_TEST(semantics_group_order)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    static const char *const g[] = {"last_demotable", "post_update_work", "post_physics",
                                    "end_physics",    "during_physics",   "start_physics",
                                    "pre_physics"};
    long long first = 0;
    for (int i = 0; i < 7; i++) {
        char p[128];
        snprintf(p, sizeof p, "{\"class\":\"counter\",\"tick\":{\"group\":\"%s\"}}", g[i]);
        long long id = spawn(c, p);
        if (i == 0)
            first = id;
    }
    json_t *frames = tkit_step_traced(c, 2);
    for (size_t f = 0; f < 2; f++) {
        json_t *ticks = ticks_of(frames, f);
        ck_assert_int_eq(json_array_size(ticks), 7);
        for (int k = 0; k < 7; k++)
            assert_tick(ticks, (size_t)k, first + 6 - k, -1, g[6 - k]);
    }
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_prerequisite_order)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    long long a = spawn(c, "{\"class\":\"counter\"}");
    long long b = spawn(c, "{\"class\":\"counter\"}");
    json_t *ticks = ticks_of(tkit_step_traced(c, 1), 0);
    assert_tick(ticks, 0, a, -1, "pre_physics"); /* registration order */
    assert_tick(ticks, 1, b, -1, "pre_physics");
    tkit_ok(c, "tick.add_prerequisite", "{\"id\":%lld,\"prerequisite\":{\"id\":%lld}}", a, b);
    ticks = ticks_of(tkit_step_traced(c, 1), 0);
    assert_tick(ticks, 0, b, -1, "pre_physics"); /* prerequisites first */
    assert_tick(ticks, 1, a, -1, "pre_physics");
    tkit_ok(c, "tick.remove_prerequisite", "{\"id\":%lld,\"prerequisite\":{\"id\":%lld}}", a, b);
    ticks = ticks_of(tkit_step_traced(c, 1), 0);
    assert_tick(ticks, 0, a, -1, "pre_physics");
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_prerequisite_demotes)
{
    /* A pre_physics function whose prerequisite is in post_physics runs in
     * post_physics, after it. */
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    long long a = spawn(c, "{\"class\":\"counter\"}");
    long long b = spawn(c, "{\"class\":\"counter\",\"tick\":{\"group\":\"post_physics\"}}");
    tkit_ok(c, "tick.add_prerequisite", "{\"id\":%lld,\"prerequisite\":{\"id\":%lld}}", a, b);
    json_t *ticks = ticks_of(tkit_step_traced(c, 1), 0);
    ck_assert_int_eq(json_array_size(ticks), 2);
    assert_tick(ticks, 0, b, -1, "post_physics");
    assert_tick(ticks, 1, a, -1, "post_physics");
    json_t *e = entity(c, a);
    ck_assert_str_eq(tkit_gets(e, "tick.group"), "pre_physics");
    ck_assert_str_eq(tkit_gets(e, "tick.actual_group"), "post_physics");
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_follower_skips_start_physics)
{
    /* A pre_physics follower of a start_physics target is demoted, and a
     * demoted function never lands in start_physics: during_physics. */
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    long long t = spawn(c, "{\"class\":\"mover\",\"tick\":{\"group\":\"start_physics\"}}");
    char p[128];
    snprintf(p, sizeof p, "{\"class\":\"follower\",\"props\":{\"target\":%lld}}", t);
    long long f = spawn(c, p);
    json_t *ticks = ticks_of(tkit_step_traced(c, 1), 0);
    ck_assert_int_eq(json_array_size(ticks), 2);
    assert_tick(ticks, 0, t, -1, "start_physics");
    assert_tick(ticks, 1, f, -1, "during_physics");
    json_t *e = entity(c, f);
    ck_assert_int_eq(tkit_geti(e, "prerequisites[0]"), t);
    ck_assert_str_eq(tkit_gets(e, "tick.actual_group"), "during_physics");
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_follower_copies_position)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    long long m = spawn(c, "{\"class\":\"mover\",\"props\":{\"vx\":1,\"vy\":-2,\"vz\":0.5}}");
    char p[128];
    snprintf(p, sizeof p, "{\"class\":\"follower\",\"props\":{\"target\":%lld}}", m);
    long long f = spawn(c, p);
    step(c, 10);
    json_t *em = entity(c, m), *ef = entity(c, f);
    ck_assert_double_eq_tol(tkit_getd(em, "props.x"), 0.1, 1e-5);
    ck_assert_double_eq_tol(tkit_getd(em, "props.y"), -0.2, 1e-5);
    ck_assert_double_eq_tol(tkit_getd(em, "props.z"), 0.05, 1e-5);
    /* copied after the target moved in the same frame: equal */
    ck_assert_double_eq(tkit_getd(ef, "props.x"), tkit_getd(em, "props.x"));
    ck_assert_double_eq(tkit_getd(ef, "props.y"), tkit_getd(em, "props.y"));
    ck_assert_double_eq(tkit_getd(ef, "props.z"), tkit_getd(em, "props.z"));
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_high_priority_first)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    long long a = spawn(c, "{\"class\":\"counter\",\"count\":3}");
    long long hp = spawn(c, "{\"class\":\"mover\",\"tick\":{\"high_priority\":true}}");
    json_t *ticks = ticks_of(tkit_step_traced(c, 1), 0);
    ck_assert_int_eq(json_array_size(ticks), 4);
    assert_tick(ticks, 0, hp, -1, "pre_physics");
    for (int k = 0; k < 3; k++)
        assert_tick(ticks, (size_t)k + 1, a + k, -1, "pre_physics");
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_components_tick)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    long long a = spawn(c, "{\"class\":\"counter\",\"components\":[{\"class\":\"counter\"},"
                           "{\"class\":\"mover\",\"tick\":{\"group\":\"post_physics\"}}]}");
    json_t *ticks = ticks_of(tkit_step_traced(c, 1), 0);
    ck_assert_int_eq(json_array_size(ticks), 3);
    bool actor = false, c0 = false, c1 = false;
    size_t i;
    json_t *t;
    json_array_foreach(ticks, i, t)
    {
        ck_assert_int_eq(tkit_geti(t, "entity"), a);
        json_t *comp = tkit_get(t, "component");
        if (json_is_null(comp)) {
            actor = true;
            ck_assert_str_eq(tkit_gets(t, "group"), "pre_physics");
        } else if (json_integer_value(comp) == 0) {
            c0 = true;
            ck_assert_str_eq(tkit_gets(t, "group"), "pre_physics");
        } else {
            ck_assert_int_eq(json_integer_value(comp), 1);
            c1 = true;
            ck_assert_str_eq(tkit_gets(t, "group"), "post_physics");
            ck_assert_uint_eq(i, 2);
        }
    }
    ck_assert(actor && c0 && c1);
    json_t *e = entity(c, a);
    ck_assert_int_eq(tkit_geti(e, "components[1].tick.ticks"), 1);
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_tick_set_takes_effect_next_frame)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    long long a = spawn(c, "{\"class\":\"counter\",\"count\":2}");
    tkit_ok(c, "tick.set", "{\"id\":%lld,\"group\":\"last_demotable\"}", a);
    json_t *ticks = ticks_of(tkit_step_traced(c, 1), 0);
    assert_tick(ticks, 0, a + 1, -1, "pre_physics");
    assert_tick(ticks, 1, a, -1, "last_demotable");
    /* disabled: never ticks; enabled again: ticks from the next frame */
    tkit_ok(c, "tick.set", "{\"ids\":[%lld,%lld],\"enabled\":false}", a, a + 1);
    ck_assert_int_eq(json_array_size(ticks_of(tkit_step_traced(c, 3), 2)), 0);
    tkit_ok(c, "tick.set", "{\"id\":%lld,\"enabled\":true}", a + 1);
    ticks = ticks_of(tkit_step_traced(c, 1), 0);
    ck_assert_int_eq(json_array_size(ticks), 1);
    assert_tick(ticks, 0, a + 1, -1, "pre_physics");
    ck_assert_int_eq(tick_count(c, a), 1);
    ck_assert_int_eq(tick_count(c, a + 1), 2);
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_cycle_ignored_and_logged)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    tkit_conn *ev = tkit_connect(d);
    tkit_ok(ev, "events.subscribe", "{\"topics\":[\"log\"]}");
    long long a = spawn(c, "{\"class\":\"counter\",\"count\":2}");
    tkit_ok(c, "tick.add_prerequisite", "{\"id\":%lld,\"prerequisite\":{\"id\":%lld}}", a, a + 1);
    tkit_ok(c, "tick.add_prerequisite", "{\"id\":%lld,\"prerequisite\":{\"id\":%lld}}", a + 1, a);
    json_t *ticks = ticks_of(tkit_step_traced(c, 1), 0);
    ck_assert_int_eq(json_array_size(ticks), 2); /* both ran, once each */
    ck_assert_int_ne(tkit_geti(ticks, "[0].entity"), tkit_geti(ticks, "[1].entity"));
    ck_assert_int_eq(tkit_geti(entity(c, a), "prerequisites[0]"), a + 1);
    ck_assert_int_eq(tkit_geti(entity(c, a + 1), "prerequisites[0]"), a);
    /* a warning went to the log subscribers */
    json_t *m = tkit_recv(ev);
    ck_assert_str_eq(tkit_gets(m, "method"), "event.log");
    ck_assert_msg(json_is_object(tkit_get(m, "params")), "%s", tkit_dump(m));
    tkit_finish(d);
}
END_TEST

/* ---- intervals ----------------------------------------------------------------------------- */

START_TEST(semantics_interval_frames)
{
    /* dt 0.01, interval 0.1: ticks on frames 0, 11, 21, 31 (due when a
     * frame's end passes the due time strictly; then due + interval). */
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    long long a = spawn(c, "{\"class\":\"counter\",\"tick\":{\"interval\":0.1}}");
    json_t *frames = tkit_step_traced(c, 16);
    long long f0 = tkit_geti(json_array_get(frames, 0), "frame");
    for (size_t i = 0; i < 16; i++) {
        size_t n = json_array_size(ticks_of(frames, i));
        ck_assert_msg(n == (i == 0 || i == 11 ? 1u : 0u), "frame %zu: %s", i,
                      tkit_dump(ticks_of(frames, i)));
    }
    json_t *e = entity(c, a);
    ck_assert_int_eq(tkit_geti(e, "tick.ticks"), 2);
    ck_assert_int_eq(tkit_geti(e, "tick.last_frame"), f0 + 11);
    /* an interval tick gets the world time since its previous tick */
    ck_assert_double_eq_tol(tkit_getd(e, "tick.last_dt"), 0.11, 1e-5);
    ck_assert_str_eq(tkit_gets(e, "tick.state"), "cooling_down");
    /* (pause frames run between steps: frame numbers jump, the world's
     * time does not) */
    step(c, 5); /* frames 16..20 */
    ck_assert_int_eq(tick_count(c, a), 2);
    frames = tkit_step_traced(c, 1); /* frame 21 */
    ck_assert_int_eq(json_array_size(ticks_of(frames, 0)), 1);
    e = entity(c, a);
    ck_assert_int_eq(tkit_geti(e, "tick.ticks"), 3);
    ck_assert_int_eq(tkit_geti(e, "tick.last_frame"), tkit_geti(frames, "[0].frame"));
    ck_assert_double_eq_tol(tkit_getd(e, "tick.last_dt"), 0.10, 1e-5);
    step(c, 9); /* frames 22..30 */
    ck_assert_int_eq(tick_count(c, a), 3);
    frames = tkit_step_traced(c, 1); /* frame 31 */
    ck_assert_int_eq(json_array_size(ticks_of(frames, 0)), 1);
    e = entity(c, a);
    ck_assert_int_eq(tkit_geti(e, "tick.ticks"), 4);
    ck_assert_int_eq(tkit_geti(e, "tick.last_frame"), tkit_geti(frames, "[0].frame"));
    ck_assert_double_eq_tol(tkit_getd(e, "tick.accum_dt"), 0.01 + 0.11 + 0.10 + 0.10, 1e-5);
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_interval_exact_binary)
{
    /* dt 1/128, interval 8 dt: strict expiry gives frames 0, 9, 17, 25. */
    tkit_conn *c;
    tkit_daemon *d = start_paused(exact_cfg, &c);
    long long a = spawn(c, "{\"class\":\"counter\",\"tick\":{\"interval\":0.0625}}");
    json_t *frames = tkit_step_traced(c, 16);
    for (size_t i = 0; i < 16; i++) {
        size_t n = json_array_size(ticks_of(frames, i));
        ck_assert_msg(n == (i == 0 || i == 9 ? 1u : 0u), "frame %zu: %s", i,
                      tkit_dump(ticks_of(frames, i)));
    }
    frames = tkit_step_traced(c, 16); /* frames 16..31 */
    for (size_t i = 0; i < 16; i++) {
        size_t n = json_array_size(ticks_of(frames, i));
        ck_assert_msg(n == (i == 1 || i == 9 ? 1u : 0u), "frame %zu: %s", i + 16,
                      tkit_dump(ticks_of(frames, i)));
    }
    ck_assert_int_eq(tick_count(c, a), 4);
    tkit_finish(d);
}
END_TEST

/* ---- pause, step, dilation ------------------------------------------------------------------ */

START_TEST(semantics_pause_frames)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    long long a = spawn(c, "{\"class\":\"counter\"}");
    long long b = spawn(c, "{\"class\":\"counter\",\"tick\":{\"even_when_paused\":true,"
                           "\"group\":\"post_physics\"}}");
    json_t *s0 = tkit_ok(c, "world.status", NULL);
    tkit_wait_frames(c, 50);
    json_t *s1 = tkit_ok(c, "world.status", NULL);
    ck_assert_int_eq(tick_count(c, a), 0);
    ck_assert_int_ge(tick_count(c, b), 50);
    ck_assert_double_eq(tkit_getd(s0, "world_time"), tkit_getd(s1, "world_time"));
    ck_assert_double_ge(tkit_getd(s1, "unpaused_time") - tkit_getd(s0, "unpaused_time"),
                        50 * 0.01 - 1e-9);
    /* In pause frames only b ticks, reported in its own group. */
    json_t *r = tkit_ok(c, "world.trace", "{\"frames\":2}");
    for (size_t i = 0; i < 2; i++) {
        json_t *ticks = tkit_get(json_array_get(tkit_get(r, "frames"), i), "ticks");
        ck_assert_int_eq(json_array_size(ticks), 1);
        assert_tick(ticks, 0, b, -1, "post_physics");
    }
    /* A step runs as if unpaused, and the world stays paused. */
    step(c, 5);
    ck_assert_int_eq(tick_count(c, a), 5);
    json_t *s2 = tkit_ok(c, "world.status", NULL);
    ck_assert(tkit_getb(s2, "paused"));
    ck_assert_double_eq_tol(tkit_getd(s2, "world_time") - tkit_getd(s1, "world_time"), 0.05, 1e-9);
    tkit_ok(c, "world.unpause", NULL);
    tkit_wait_frames(c, 5);
    ck_assert_int_ge(tick_count(c, a), 10);
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_world_dilation)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    tkit_ok(c, "world.set_time_dilation", "{\"value\":2}");
    long long a = spawn(c, "{\"class\":\"counter\"}");
    double t0 = world_time(c);
    step(c, 10);
    ck_assert_double_eq_tol(world_time(c) - t0, 0.2, 1e-9);
    json_t *e = entity(c, a);
    ck_assert_double_eq_tol(tkit_getd(e, "tick.last_dt"), 0.02, 1e-6);
    ck_assert_double_eq_tol(tkit_getd(e, "tick.accum_dt"), 0.2, 1e-5);
    tkit_ok(c, "world.set_time_dilation", "{\"value\":0.5}");
    t0 = world_time(c);
    step(c, 4);
    ck_assert_double_eq_tol(world_time(c) - t0, 0.02, 1e-9);
    ck_assert_double_eq_tol(tkit_getd(entity(c, a), "tick.last_dt"), 0.005, 1e-6);
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_custom_dilation)
{
    /* An entity's time_dilation scales the dt of its own and its
     * components' ticks, not the world's time. */
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    long long a = spawn(c, "{\"class\":\"mover\",\"time_dilation\":0.5,\"props\":{\"vx\":1},"
                           "\"components\":[{\"class\":\"counter\"}]}");
    long long b = spawn(c, "{\"class\":\"counter\"}");
    double t0 = world_time(c);
    step(c, 4);
    ck_assert_double_eq_tol(world_time(c) - t0, 0.04, 1e-9);
    json_t *e = entity(c, a);
    ck_assert_double_eq_tol(tkit_getd(e, "tick.last_dt"), 0.005, 1e-6);
    ck_assert_double_eq_tol(tkit_getd(e, "tick.accum_dt"), 0.02, 1e-6);
    ck_assert_double_eq_tol(tkit_getd(e, "components[0].tick.last_dt"), 0.005, 1e-6);
    ck_assert_double_eq_tol(tkit_getd(e, "props.x"), 0.02, 1e-6);
    ck_assert_double_eq_tol(tkit_getd(entity(c, b), "tick.last_dt"), 0.01, 1e-6);
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_min_frame_time)
{
    /* world dt = dilation x clamp(raw dt, 0.0005, 0.4): a 0.1 ms fixed dt
     * still advances the world 0.5 ms per frame (FixupDeltaSeconds). */
    static const char *const cfg[] = {"engine.fixed_dt=0.0001", NULL};
    tkit_conn *c;
    tkit_daemon *d = start_paused(cfg, &c);
    long long a = spawn(c, "{\"class\":\"counter\"}");
    double t0 = world_time(c);
    step(c, 10);
    ck_assert_double_eq_tol(world_time(c) - t0, 0.005, 1e-9);
    ck_assert_double_eq_tol(tkit_getd(entity(c, a), "tick.last_dt"), 0.0005, 1e-7);
    tkit_finish(d);
}
END_TEST

/* ---- timers -------------------------------------------------------------------------------- */

START_TEST(semantics_timer_strict_expiry)
{
    /* Set while paused: pending until the first stepped frame's timer pass
     * (that frame's dt does not count); rate 8 dt then fires on the 9th
     * frame after it (strict >), and every 8 frames after that. */
    tkit_conn *c;
    tkit_daemon *d = start_paused(exact_cfg, &c);
    long long h = tkit_geti(tkit_ok(c, "timer.set", "{\"rate\":0.0625,\"loop\":true}"), "handle");
    ck_assert_str_eq(tkit_gets(timer(c, h), "status"), "pending");
    tkit_wait_frames(c, 20); /* pause frames: nothing moves */
    json_t *t = timer(c, h);
    ck_assert_str_eq(tkit_gets(t, "status"), "pending");
    ck_assert_int_eq(tkit_geti(t, "fired"), 0);
    step(c, 1); /* S0: activated with expiry now + 8 dt */
    t = timer(c, h);
    ck_assert_str_eq(tkit_gets(t, "status"), "active");
    ck_assert_double_eq_tol(tkit_getd(t, "remaining"), 0.0625, 1e-12);
    ck_assert_int_eq(tkit_geti(t, "fired"), 0);
    step(c, 8); /* S1..S8: S8 reaches the expiry exactly: not yet */
    t = timer(c, h);
    ck_assert_int_eq(tkit_geti(t, "fired"), 0);
    ck_assert_double_eq_tol(tkit_getd(t, "remaining"), 0.0, 1e-12);
    step(c, 1); /* S9 */
    t = timer(c, h);
    ck_assert_int_eq(tkit_geti(t, "fired"), 1);
    ck_assert_double_eq_tol(tkit_getd(t, "remaining"), 7 * DT_EXACT, 1e-12);
    step(c, 8); /* S17 */
    ck_assert_int_eq(tkit_geti(timer(c, h), "fired"), 2);
    /* timers stand in pause frames */
    tkit_wait_frames(c, 20);
    t = timer(c, h);
    ck_assert_int_eq(tkit_geti(t, "fired"), 2);
    ck_assert_double_eq_tol(tkit_getd(t, "remaining"), 7 * DT_EXACT, 1e-12);
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_timer_catch_up)
{
    /* rate dt/4: four calls per frame, back to back. */
    tkit_conn *c;
    tkit_daemon *d = start_paused(exact_cfg, &c);
    long long h = tkit_geti(
        tkit_ok(c, "timer.set",
                "{\"rate\":0.001953125,\"loop\":true,\"action\":{\"method\":\"entity.spawn\","
                "\"params\":{\"class\":\"counter\"}}}"),
        "handle");
    step(c, 1);
    ck_assert_int_eq(tkit_geti(timer(c, h), "fired"), 0);
    step(c, 1);
    ck_assert_int_eq(tkit_geti(timer(c, h), "fired"), 4);
    ck_assert_int_eq(live_entities(c), 4);
    step(c, 2);
    ck_assert_int_eq(tkit_geti(timer(c, h), "fired"), 12);
    ck_assert_int_eq(live_entities(c), 12);
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_timer_one_shot_action)
{
    /* A one-shot timer's action spawns a counter in the timer pass; the
     * counter ticks in that same frame, in last_demotable (spawned after
     * post_physics: queued after post_update_work, UE-SEMANTICS 3.8). */
    tkit_conn *c;
    tkit_daemon *d = start_paused(exact_cfg, &c);
    long long h = tkit_geti(tkit_ok(c, "timer.set",
                                    "{\"rate\":0.0625,\"action\":{\"method\":\"entity.spawn\","
                                    "\"params\":{\"class\":\"counter\"}}}"),
                            "handle");
    ck_assert(!tkit_getb(timer(c, h), "loop"));
    step(c, 9); /* S0..S8 */
    ck_assert_int_eq(live_entities(c), 0);
    json_t *ticks = ticks_of(tkit_step_traced(c, 1), 0); /* S9: fires */
    ck_assert_int_eq(live_entities(c), 1);
    long long id = tkit_geti(tkit_ok(c, "entity.list", NULL), "ids[0]");
    ck_assert_int_eq(json_array_size(ticks), 1);
    assert_tick(ticks, 0, id, -1, "last_demotable");
    /* finished: gone */
    tkit_err(c, TKIT_NOT_FOUND, NULL, "timer.get", "{\"handle\":%lld}", h);
    step(c, 20);
    ck_assert_int_eq(live_entities(c), 1);
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_timer_pause_keeps_remaining)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(exact_cfg, &c);
    long long h = tkit_geti(tkit_ok(c, "timer.set", "{\"rate\":0.0625}"), "handle");
    step(c, 4); /* S0 activates (8 dt left), S1..S3: 5 dt left */
    ck_assert_double_eq_tol(tkit_getd(timer(c, h), "remaining"), 5 * DT_EXACT, 1e-12);
    tkit_ok(c, "timer.pause", "{\"handle\":%lld}", h);
    json_t *t = timer(c, h);
    ck_assert_str_eq(tkit_gets(t, "status"), "paused");
    ck_assert_double_eq_tol(tkit_getd(t, "remaining"), 5 * DT_EXACT, 1e-12);
    step(c, 20);
    t = timer(c, h);
    ck_assert_str_eq(tkit_gets(t, "status"), "paused");
    ck_assert_int_eq(tkit_geti(t, "fired"), 0);
    ck_assert_double_eq_tol(tkit_getd(t, "remaining"), 5 * DT_EXACT, 1e-12);
    /* Unpaused before the pass: pending, activated at the end of the next
     * pass with its 5 dt, so it fires 6 frames after that pass. */
    tkit_ok(c, "timer.unpause", "{\"handle\":%lld}", h);
    ck_assert_str_eq(tkit_gets(timer(c, h), "status"), "pending");
    step(c, 6); /* U0..U5 */
    ck_assert_int_eq(tkit_geti(timer(c, h), "fired"), 0);
    step(c, 1); /* U6 */
    tkit_err(c, TKIT_NOT_FOUND, NULL, "timer.get", "{\"handle\":%lld}", h);
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_timer_for_next_tick)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    long long h = tkit_geti(tkit_ok(c, "timer.set_for_next_tick",
                                    "{\"action\":{\"method\":\"entity.spawn\","
                                    "\"params\":{\"class\":\"counter\",\"count\":3}}}"),
                            "handle");
    tkit_wait_frames(c, 10); /* not in pause frames */
    ck_assert_int_eq(live_entities(c), 0);
    tkit_ok(c, "timer.get", "{\"handle\":%lld}", h);
    step(c, 1); /* the next pass in which time advances */
    ck_assert_int_eq(live_entities(c), 3);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "timer.get", "{\"handle\":%lld}", h);
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_timer_action_errors_counted)
{
    /* A failing action is logged and counted; the timer keeps running. */
    tkit_conn *c;
    tkit_daemon *d = start_paused(exact_cfg, &c);
    long long h = tkit_geti(
        tkit_ok(c, "timer.set",
                "{\"rate\":0.0078125,\"loop\":true,\"action\":{\"method\":\"entity.destroy\","
                "\"params\":{\"ids\":[987654]}}}"),
        "handle");
    step(c, 5);
    json_t *t = timer(c, h);
    ck_assert_int_eq(tkit_geti(t, "fired"), 4);
    ck_assert_str_eq(tkit_gets(t, "status"), "active");
    ck_assert_msg(strstr(tkit_stderr(d), "987654"), "the failing action was not logged:\n%s",
                  tkit_stderr(d));
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_life_span)
{
    /* life_span is a world timer: 8 dt -> destroyed on the 9th frame after
     * the first stepped frame. */
    tkit_conn *c;
    tkit_daemon *d = start_paused(exact_cfg, &c);
    long long a = spawn(c, "{\"class\":\"counter\",\"life_span\":0.0625}");
    step(c, 9);
    ck_assert_int_eq(tick_count(c, a), 9);
    step(c, 1);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "entity.get", "{\"id\":%lld}", a);
    ck_assert_int_eq(live_entities(c), 0);
    tkit_finish(d);
}
END_TEST

/* ---- tickables ---------------------------------------------------------------------------- */

START_TEST(semantics_tickables)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    long long al = tkit_geti(
        tkit_ok(c, "tickable.add", "{\"class\":\"counter\",\"tick_type\":\"always\"}"), "id");
    long long co = tkit_geti(tkit_ok(c, "tickable.add", "{\"class\":\"counter\"}"), "id");
    long long ne = tkit_geti(
        tkit_ok(c, "tickable.add", "{\"class\":\"counter\",\"tick_type\":\"never\"}"), "id");
    long long wp = tkit_geti(tkit_ok(c, "tickable.add",
                                     "{\"class\":\"mover\",\"tick_type\":\"always\","
                                     "\"when_paused\":true,\"props\":{\"vx\":1}}"),
                             "id");
    tkit_wait_frames(c, 30); /* pause frames: only wp ticks */
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "tickable.get", "{\"id\":%lld}", al), "ticks"), 0);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "tickable.get", "{\"id\":%lld}", co), "ticks"), 0);
    long long wp0 = tkit_geti(tkit_ok(c, "tickable.get", "{\"id\":%lld}", wp), "ticks");
    ck_assert_int_ge(wp0, 30);
    step(c, 5);
    json_t *g = tkit_ok(c, "tickable.get", "{\"id\":%lld}", al);
    ck_assert_int_eq(tkit_geti(g, "ticks"), 5);
    ck_assert_double_eq_tol(tkit_getd(g, "accum_dt"), 0.05, 1e-6);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "tickable.get", "{\"id\":%lld}", co), "ticks"), 5);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "tickable.get", "{\"id\":%lld}", ne), "ticks"), 0);
    /* conditional: only while enabled */
    tkit_ok(c, "tickable.set", "{\"id\":%lld,\"enabled\":false}", co);
    tkit_ok(c, "tickable.set", "{\"id\":%lld,\"enabled\":false}", al);
    step(c, 5);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "tickable.get", "{\"id\":%lld}", co), "ticks"), 5);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "tickable.get", "{\"id\":%lld}", al), "ticks"), 10);
    tkit_ok(c, "tickable.set", "{\"id\":%lld,\"enabled\":true}", co);
    step(c, 2);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "tickable.get", "{\"id\":%lld}", co), "ticks"), 7);
    /* removed: gone for good */
    tkit_ok(c, "tickable.remove", "{\"id\":%lld}", al);
    step(c, 1);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "tickable.get", "{\"id\":%lld}", al);
    tkit_finish(d);
}
END_TEST

/* ---- newly spawned -------------------------------------------------------------------------- */

START_TEST(semantics_newly_spawned_same_frame)
{
    /* A pre_physics spawner's spawn ticks in the same frame: after
     * pre_physics, past start_physics (never demoted into): during_physics. */
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    long long s = spawn(c, "{\"class\":\"spawner\",\"props\":{\"spawn\":{\"class\":\"counter\"},"
                           "\"every\":1,\"max_total\":1}}");
    json_t *frames = tkit_step_traced(c, 2);
    json_t *ticks = ticks_of(frames, 0);
    ck_assert_int_eq(json_array_size(ticks), 2);
    assert_tick(ticks, 0, s, -1, "pre_physics");
    assert_tick(ticks, 1, s + 1, -1, "during_physics");
    /* next frame: both in pre_physics (ordered by class there) */
    ticks = ticks_of(frames, 1);
    ck_assert_int_eq(json_array_size(ticks), 2);
    long long e0 = tkit_geti(ticks, "[0].entity"), e1 = tkit_geti(ticks, "[1].entity");
    ck_assert_msg((e0 == s && e1 == s + 1) || (e0 == s + 1 && e1 == s), "%s", tkit_dump(ticks));
    ck_assert_str_eq(tkit_gets(ticks, "[0].group"), "pre_physics");
    ck_assert_str_eq(tkit_gets(ticks, "[1].group"), "pre_physics");
    ck_assert_int_eq(live_entities(c), 2);
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_batch_one_boundary)
{
    /* A batch runs at one frame boundary even when it outlasts the request
     * budget: world.trace + world.step traces the stepped frame, not a
     * pause frame run between the two (a 0.1 ms budget, 60 members). */
    static const char *const cfg[] = {"control.request_budget_ms=0.1", NULL};
    tkit_conn *c;
    tkit_daemon *d = start_paused(cfg, &c);
    long long s = spawn(c, "{\"class\":\"counter\"}");
    for (int round = 0; round < 5; round++) {
        char buf[8192];
        size_t n = (size_t)snprintf(buf, sizeof buf,
                                    "[{\"jsonrpc\":\"2.0\",\"id\":\"tr\",\"method\":"
                                    "\"world.trace\",\"params\":{\"frames\":1}}");
        for (int i = 0; i < 60; i++)
            n += (size_t)snprintf(buf + n, sizeof buf - n,
                                  ",{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"world.status\"}", i);
        snprintf(buf + n, sizeof buf - n,
                 ",{\"jsonrpc\":\"2.0\",\"id\":\"st\",\"method\":\"world.step\","
                 "\"params\":{\"frames\":1}}]");
        tkit_sendf(c, "%s\n", buf);
        json_t *r = tkit_recv(c);
        ck_assert_msg(json_is_array(r) && json_array_size(r) == 62, "batch -> %s", tkit_dump(r));
        json_t *frames = tkit_get(tkit_assert_result(json_array_get(r, 0)), "frames");
        json_t *ticks = ticks_of(frames, 0);
        ck_assert_msg(json_array_size(ticks) == 1, "round %d traced %zu ticks: %s", round,
                      json_array_size(ticks), tkit_dump(frames));
        assert_tick(ticks, 0, s, -1, "pre_physics");
    }
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_newly_spawned_drain)
{
    /* Spawned in last_demotable: the newly-spawned drain of that frame. */
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    long long s = spawn(c, "{\"class\":\"spawner\",\"tick\":{\"group\":\"last_demotable\"},"
                           "\"props\":{\"spawn\":{\"class\":\"counter\",\"count\":2},"
                           "\"every\":2,\"max_total\":2}}");
    json_t *frames = tkit_step_traced(c, 5);
    ck_assert_int_eq(json_array_size(ticks_of(frames, 0)), 1);
    json_t *ticks = ticks_of(frames, 1); /* 2nd tick: spawns 2 */
    ck_assert_int_eq(json_array_size(ticks), 3);
    assert_tick(ticks, 0, s, -1, "last_demotable");
    assert_tick(ticks, 1, s + 1, -1, "newly_spawned");
    assert_tick(ticks, 2, s + 2, -1, "newly_spawned");
    ck_assert_int_eq(json_array_size(ticks_of(frames, 2)), 3);
    ck_assert_int_eq(json_array_size(ticks_of(frames, 3)), 5); /* 4th tick: 2 more */
    ck_assert_int_eq(json_array_size(ticks_of(frames, 4)), 5); /* max_total reached */
    ck_assert_int_eq(live_entities(c), 5);
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_runaway_cut)
{
    /* A last_demotable spawner of copies of itself runs away: the drain
     * stops after 101 rounds and the 102nd copy waits for the next frame. */
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    long long s = spawn(c, "{\"class\":\"spawner\",\"tick\":{\"group\":\"last_demotable\"},"
                           "\"props\":{\"spawn\":\"self\",\"every\":1,\"max_total\":1}}");
    json_t *ticks = ticks_of(tkit_step_traced(c, 1), 0);
    ck_assert_int_eq(json_array_size(ticks), 1 + 101);
    assert_tick(ticks, 0, s, -1, "last_demotable");
    for (size_t k = 1; k <= 101; k++)
        assert_tick(ticks, k, s + (long long)k, -1, "newly_spawned");
    ck_assert_int_eq(live_entities(c), 1 + 102);
    json_t *e = entity(c, s + 102);
    ck_assert_int_eq(tkit_geti(e, "tick.ticks"), 0);
    ck_assert_msg(strstr(tkit_stderr(d), "runaway"), "the cut was not logged:\n%s", tkit_stderr(d));
    /* Next frame the held-back copy ticks in its own group and its chain
     * runs away again. */
    ticks = ticks_of(tkit_step_traced(c, 1), 0);
    ck_assert_int_eq(json_array_size(ticks), 103 + 101);
    ck_assert_int_eq(live_entities(c), 1 + 102 + 102);
    tkit_ok(c, "engine.info", NULL);
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_spawner_every_and_max_total)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    long long s = spawn(c, "{\"class\":\"spawner\",\"props\":{\"spawn\":{\"class\":\"mover\","
                           "\"props\":{\"vx\":3}},\"every\":3,\"max_total\":2}}");
    step(c, 2);
    ck_assert_int_eq(live_entities(c), 1);
    step(c, 1); /* 3rd tick */
    ck_assert_int_eq(live_entities(c), 2);
    json_t *m = entity(c, s + 1);
    ck_assert_str_eq(tkit_gets(m, "class"), "mover");
    ck_assert_double_eq_tol(tkit_getd(m, "props.vx"), 3.0, 1e-12);
    step(c, 10);
    ck_assert_int_eq(live_entities(c), 3);
    ck_assert_int_eq(tick_count(c, s), 13);
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_not_on_dedicated_server)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    long long a = spawn(c, "{\"class\":\"counter\",\"tick\":{\"on_dedicated_server\":false},"
                           "\"components\":[{\"class\":\"counter\"}]}");
    json_t *ticks = ticks_of(tkit_step_traced(c, 3), 2);
    ck_assert_int_eq(json_array_size(ticks), 1);
    assert_tick(ticks, 0, a, 0, "pre_physics");
    json_t *e = entity(c, a);
    ck_assert(!tkit_getb(e, "tick.on_dedicated_server"));
    ck_assert_int_eq(tkit_geti(e, "tick.ticks"), 0);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "tick.dump", NULL), "total"), 1);
    tkit_finish(d);
}
END_TEST

/* ---- events from the frame loop ------------------------------------------------------------ */

START_TEST(semantics_slow_tick_event)
{
    static const char *const cfg[] = {"stats.slow_tick_ms=1", NULL};
    tkit_conn *c;
    tkit_daemon *d = start_paused(cfg, &c);
    tkit_conn *ev = tkit_connect(d);
    tkit_ok(ev, "events.subscribe", "{\"topics\":[\"slow_tick\"]}");
    long long fast = spawn(c, "{\"class\":\"counter\",\"count\":10}");
    long long b = spawn(c, "{\"class\":\"burner\",\"props\":{\"work_us\":3000}}");
    step(c, 1);
    /* On a slow machine (valgrind) the counters' batch may pass 1 ms too:
     * its report may come first. */
    json_t *m = tkit_recv(ev);
    for (int i = 0; i < 20 && strcmp(tkit_gets(m, "params.class"), "burner") != 0; i++) {
        ck_assert_str_eq(tkit_gets(m, "method"), "event.slow_tick");
        ck_assert_str_eq(tkit_gets(m, "params.class"), "counter");
        m = tkit_recv(ev);
    }
    ck_assert_str_eq(tkit_gets(m, "method"), "event.slow_tick");
    ck_assert_int_eq(tkit_geti(m, "params.entity"), b);
    ck_assert_str_eq(tkit_gets(m, "params.class"), "burner");
    ck_assert(json_is_null(tkit_get(m, "params.component")));
    ck_assert_double_ge(tkit_getd(m, "params.ms"), 1.0);
    (void)fast;
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_overrun_event)
{
    /* 1000 Hz with a 3 ms tick: every frame overruns its 1 ms period. */
    static const char *const cfg[] = {"engine.tick_rate=1000", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    tkit_conn *ev = tkit_connect(d);
    tkit_ok(ev, "events.subscribe", "{\"topics\":[\"overrun\"]}");
    spawn(c, "{\"class\":\"burner\",\"props\":{\"work_us\":3000}}");
    json_t *m = tkit_recv(ev);
    ck_assert_str_eq(tkit_gets(m, "method"), "event.overrun");
    tkit_geti(m, "params.frame");
    ck_assert_double_ge(tkit_getd(m, "params.ms"), 1.0);
    ck_assert_double_eq_tol(tkit_getd(m, "params.target_ms"), 1.0, 1e-9);
    ck_assert_int_gt(tkit_geti(tkit_ok(c, "engine.stats", NULL), "overruns"), 0);
    tkit_finish(d);
}
END_TEST

START_TEST(semantics_frame_events)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(NULL, &c);
    tkit_conn *ev = tkit_connect(d);
    tkit_ok(ev, "events.subscribe", "{\"topics\":[\"frame\"]}");
    /* dt in frame events is the world's (0 in pause frames or the fixed dt
     * when stepped); frames are consecutive. */
    long long prev = -1;
    for (int i = 0; i < 20; i++) {
        json_t *m = tkit_recv(ev);
        ck_assert_str_eq(tkit_gets(m, "method"), "event.frame");
        long long f = tkit_geti(m, "params.frame");
        if (prev >= 0)
            ck_assert_int_eq(f, prev + 1);
        prev = f;
        ck_assert_double_ge(tkit_getd(m, "params.ms"), 0.0);
        ck_assert_double_ge(tkit_getd(m, "params.dt"), 0.0);
    }
    tkit_finish(d);
}
END_TEST

static Suite *semantics_suite(void)
{
    Suite *s = suite_create("semantics");
    TCase *tc = tcase_create("semantics");
    tcase_set_timeout(tc, tkit_scale(60));
    tcase_add_test(tc, semantics_group_order);
    tcase_add_test(tc, semantics_prerequisite_order);
    tcase_add_test(tc, semantics_prerequisite_demotes);
    tcase_add_test(tc, semantics_follower_skips_start_physics);
    tcase_add_test(tc, semantics_follower_copies_position);
    tcase_add_test(tc, semantics_high_priority_first);
    tcase_add_test(tc, semantics_components_tick);
    tcase_add_test(tc, semantics_tick_set_takes_effect_next_frame);
    tcase_add_test(tc, semantics_cycle_ignored_and_logged);
    tcase_add_test(tc, semantics_interval_frames);
    tcase_add_test(tc, semantics_interval_exact_binary);
    tcase_add_test(tc, semantics_pause_frames);
    tcase_add_test(tc, semantics_world_dilation);
    tcase_add_test(tc, semantics_custom_dilation);
    tcase_add_test(tc, semantics_min_frame_time);
    tcase_add_test(tc, semantics_timer_strict_expiry);
    tcase_add_test(tc, semantics_timer_catch_up);
    tcase_add_test(tc, semantics_timer_one_shot_action);
    tcase_add_test(tc, semantics_timer_pause_keeps_remaining);
    tcase_add_test(tc, semantics_timer_for_next_tick);
    tcase_add_test(tc, semantics_timer_action_errors_counted);
    tcase_add_test(tc, semantics_life_span);
    tcase_add_test(tc, semantics_tickables);
    tcase_add_test(tc, semantics_newly_spawned_same_frame);
    tcase_add_test(tc, semantics_newly_spawned_drain);
    tcase_add_test(tc, semantics_batch_one_boundary);
    tcase_add_test(tc, semantics_runaway_cut);
    tcase_add_test(tc, semantics_spawner_every_and_max_total);
    tcase_add_test(tc, semantics_not_on_dedicated_server);
    tcase_add_test(tc, semantics_slow_tick_event);
    tcase_add_test(tc, semantics_overrun_event);
    tcase_add_test(tc, semantics_frame_events);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(semantics_suite); }
