/*
 * test_methods.c - every method of PROTOCOL.md "Methods" at least once
 * against the real daemon: the result's shape, the effect, and the errors
 * (-32602 naming the parameter at fault, -32001 for unknown things, -32002
 * for invalid states, -32003 for limits), with validation before any
 * change (a request that fails changes nothing).
 *
 * Every test starts its own daemon (tick_rate 0, fixed_dt 0.01 unless said
 * otherwise).  Not here: the timing semantics of ticks, timers and
 * tickables (test_semantics.c), the envelope (test_protocol.c).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

static const char *const all_methods[] = {
    "engine.info",
    "engine.stats",
    "engine.set_tick_rate",
    "engine.sprint",
    "engine.sprint_stop",
    "engine.profile",
    "engine.shutdown",
    "world.status",
    "world.pause",
    "world.unpause",
    "world.step",
    "world.step_stop",
    "world.set_time_dilation",
    "world.trace",
    "world.save",
    "world.load",
    "level.list",
    "level.add",
    "level.remove",
    "entity.spawn",
    "entity.destroy",
    "entity.get",
    "entity.list",
    "entity.set_props",
    "tick.set",
    "tick.add_prerequisite",
    "tick.remove_prerequisite",
    "tick.dump",
    "timer.set",
    "timer.set_for_next_tick",
    "timer.clear",
    "timer.pause",
    "timer.unpause",
    "timer.get",
    "timer.list",
    "tickable.add",
    "tickable.set",
    "tickable.remove",
    "tickable.get",
    "events.subscribe",
    "events.unsubscribe",
    NULL,
};

static const char *const groups[] = {
    "pre_physics",  "start_physics",    "during_physics", "end_physics",
    "post_physics", "post_update_work", "last_demotable", NULL};

/* entity.spawn with `params`; returns the first id. */
static long long spawn(tkit_conn *c, const char *params)
{
    json_t *r = tkit_ok(c, "entity.spawn", "%s", params);
    json_t *ids = json_object_get(r, "ids");
    if (ids)
        return tkit_geti(ids, "[0]");
    return tkit_geti(r, "first");
}

static long long entities(tkit_conn *c)
{
    return tkit_geti(tkit_ok(c, "world.status", NULL), "entities");
}

static void assert_number(json_t *j, const char *path) { tkit_getd(j, path); }

/* ---- engine ----------------------------------------------------------------------------- */

START_TEST(methods_engine_info)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    json_t *r = tkit_ok(c, "engine.info", NULL);
    ck_assert_str_eq(tkit_gets(r, "name"), "tickd");
    ck_assert_msg(strlen(tkit_gets(r, "version")) > 0, "empty version");
    ck_assert_int_eq(tkit_geti(r, "protocol"), 1);
    json_t *methods = tkit_get(r, "methods");
    for (int i = 0; all_methods[i]; i++)
        ck_assert_msg(tkit_has_string(methods, all_methods[i]), "methods lacks %s: %s",
                      all_methods[i], tkit_dump(methods));
    json_t *classes = tkit_get(r, "classes");
    static const char *const builtin[] = {"counter",  "mover",  "spawner",
                                          "follower", "burner", NULL};
    for (int i = 0; builtin[i]; i++)
        ck_assert_msg(tkit_has_string(classes, builtin[i]), "classes lacks %s: %s", builtin[i],
                      tkit_dump(classes));
    tkit_finish(d);
}
END_TEST

START_TEST(methods_every_listed_method_exists)
{
    /* No listed method answers "method not found". */
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    json_t *methods = tkit_get(tkit_ok(c, "engine.info", NULL), "methods");
    size_t i;
    json_t *m;
    json_array_foreach(methods, i, m)
    {
        const char *name = json_string_value(m);
        ck_assert_ptr_nonnull(name);
        if (strcmp(name, "engine.shutdown") == 0)
            continue;
        /* An unknown parameter: -32602, never -32601. */
        json_t *resp = tkit_call(c, name, "{\"no_such_param_x\":1}");
        json_t *err = json_object_get(resp, "error");
        ck_assert_msg(err, "%s accepted an unknown parameter: %s", name, tkit_dump(resp));
        ck_assert_msg(tkit_geti(err, "code") == TKIT_INVALID_PARAMS,
                      "%s with an unknown parameter: %s", name, tkit_dump(resp));
        ck_assert_msg(strstr(tkit_gets(err, "message"), "no_such_param_x"),
                      "%s: the error does not name the parameter: %s", name, tkit_dump(resp));
    }
    tkit_finish(d);
}
END_TEST

START_TEST(methods_engine_stats)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    spawn(c, "{\"class\":\"counter\",\"count\":5}");
    spawn(c, "{\"class\":\"counter\",\"tick\":{\"enabled\":false}}");
    tkit_ok(c, "timer.set", "{\"rate\":100,\"loop\":true}");
    tkit_ok(c, "tickable.add", "{\"class\":\"counter\"}");
    tkit_wait_frames(c, 3);
    json_t *s = tkit_ok(c, "engine.stats", NULL);
    static const char *const numbers[] = {"frame",
                                          "world_time",
                                          "real_time",
                                          "target_hz",
                                          "tps_1s",
                                          "tps_10s",
                                          "tps_1m",
                                          "mspt.mean",
                                          "mspt.p50",
                                          "mspt.p95",
                                          "mspt.p99",
                                          "mspt.max",
                                          "timers_ms",
                                          "tickables_ms",
                                          "ticks_run_last_frame",
                                          "overruns",
                                          "entities",
                                          "tick_functions.enabled",
                                          "tick_functions.disabled",
                                          "tick_functions.cooling_down",
                                          "timers.active",
                                          "timers.paused",
                                          "timers.pending",
                                          "tickables",
                                          "clients",
                                          "requests",
                                          "errors",
                                          "rss_bytes",
                                          NULL};
    for (int i = 0; numbers[i]; i++)
        assert_number(s, numbers[i]);
    for (int i = 0; groups[i]; i++) {
        char path[64];
        snprintf(path, sizeof path, "groups.%s", groups[i]);
        assert_number(s, path);
    }
    ck_assert_int_eq(tkit_geti(s, "entities"), 6);
    ck_assert_int_eq(tkit_geti(s, "tick_functions.enabled"), 5);
    ck_assert_int_eq(tkit_geti(s, "tick_functions.disabled"), 1);
    ck_assert_int_eq(tkit_geti(s, "timers.active"), 1);
    ck_assert_int_eq(tkit_geti(s, "tickables"), 1);
    ck_assert_int_eq(tkit_geti(s, "ticks_run_last_frame"), 5);
    ck_assert_int_ge(tkit_geti(s, "clients"), 1);
    ck_assert_int_gt(tkit_geti(s, "rss_bytes"), 0);
    ck_assert_double_eq_tol(tkit_getd(s, "target_hz"), 0.0, 1e-12);
    tkit_finish(d);
}
END_TEST

START_TEST(methods_engine_set_tick_rate)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    json_t *r = tkit_ok(c, "engine.set_tick_rate", "{\"hz\":30}");
    ck_assert_double_eq_tol(tkit_getd(r, "hz"), 30.0, 1e-12);
    ck_assert_double_eq_tol(tkit_getd(tkit_ok(c, "engine.stats", NULL), "target_hz"), 30.0, 1e-12);
    tkit_err(c, TKIT_INVALID_PARAMS, "hz", "engine.set_tick_rate", "{\"hz\":-1}");
    tkit_err(c, TKIT_INVALID_PARAMS, "hz", "engine.set_tick_rate", "{\"hz\":\"fast\"}");
    tkit_err(c, TKIT_INVALID_PARAMS, "hz", "engine.set_tick_rate", "{}");
    tkit_err(c, TKIT_INVALID_PARAMS, "hz", "engine.set_tick_rate", NULL);
    tkit_err(c, TKIT_INVALID_PARAMS, "rate", "engine.set_tick_rate", "{\"hz\":10,\"rate\":1}");
    ck_assert_double_eq_tol(tkit_getd(tkit_ok(c, "engine.stats", NULL), "target_hz"), 30.0, 1e-12);
    r = tkit_ok(c, "engine.set_tick_rate", "{\"hz\":0}");
    ck_assert_double_eq_tol(tkit_getd(r, "hz"), 0.0, 1e-12);
    tkit_finish(d);
}
END_TEST

START_TEST(methods_engine_sprint)
{
    static const char *const cfg[] = {"engine.tick_rate=50", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    uint64_t f0 = tkit_frame(c);
    /* 500 frames at 50 Hz would take 10 s; a sprint ignores the rate. */
    json_t *r = tkit_ok(c, "engine.sprint", "{\"frames\":500}");
    ck_assert_int_eq(tkit_geti(r, "frames"), 500);
    ck_assert_double_ge(tkit_getd(r, "seconds"), 0.0);
    static const char *const mspt[] = {"mspt.mean", "mspt.p50", "mspt.p95",
                                       "mspt.p99",  "mspt.max", NULL};
    for (int i = 0; mspt[i]; i++)
        assert_number(r, mspt[i]);
    ck_assert_uint_ge(tkit_frame(c), f0 + 500);
    ck_assert_double_eq_tol(tkit_getd(tkit_ok(c, "engine.stats", NULL), "target_hz"), 50.0, 1e-12);
    tkit_err(c, TKIT_INVALID_PARAMS, "frames", "engine.sprint", "{\"frames\":0}");
    tkit_err(c, TKIT_INVALID_PARAMS, "frames", "engine.sprint", "{\"frames\":-5}");
    tkit_err(c, TKIT_INVALID_PARAMS, "frames", "engine.sprint", "{\"frames\":1.5}");
    tkit_err(c, TKIT_INVALID_PARAMS, "frames", "engine.sprint", NULL);
    tkit_finish(d);
}
END_TEST

/* A sprint too long to wait for is stopped: it answers what ran. */
START_TEST(methods_engine_sprint_stop)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *a = tkit_connect(d);
    tkit_conn *b = tkit_connect(d);
    /* nothing to stop: {} */
    ck_assert_int_eq((int)json_object_size(tkit_ok(b, "engine.sprint_stop", NULL)), 0);
    uint64_t f0 = tkit_frame(b);
    long long id = tkit_send_request(a, "engine.sprint", "{\"frames\":1000000000}");
    tkit_wait_frames(b, 50);
    ck_assert_int_eq((int)json_object_size(tkit_ok(b, "engine.sprint_stop", NULL)), 0);
    json_t *r = tkit_recv_id(a, id);
    tkit_assert_result(r);
    ck_assert(tkit_getb(r, "result.stopped"));
    long long ran = tkit_geti(r, "result.frames");
    ck_assert_int_gt(ran, 0);
    ck_assert_int_lt(ran, 1000000000);
    ck_assert_uint_ge(tkit_frame(b), f0 + (uint64_t)ran);
    assert_number(r, "result.mspt.p99");
    tkit_err(b, TKIT_INVALID_PARAMS, "unknown parameter", "engine.sprint_stop", "{\"x\":1}");
    tkit_finish(d);
}
END_TEST

/* Steps too many to wait for are dropped: the waiting step answers what
 * ran, and the world stays paused with nothing pending. */
START_TEST(methods_world_step_stop)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *a = tkit_connect(d);
    tkit_conn *b = tkit_connect(d);
    tkit_ok(b, "world.pause", NULL);
    ck_assert_int_eq((int)json_object_size(tkit_ok(b, "world.step_stop", NULL)), 0);
    long long id = tkit_send_request(a, "world.step", "{\"frames\":1000000000}");
    for (int i = 0; i < 1000; i++) { /* until some steps ran */
        json_t *s = tkit_ok(b, "world.status", NULL);
        long long p = tkit_geti(s, "steps_pending");
        if (p > 0 && p < 1000000000 - 3)
            break;
    }
    tkit_ok(b, "world.step_stop", NULL);
    json_t *r = tkit_recv_id(a, id);
    tkit_assert_result(r);
    ck_assert(tkit_getb(r, "result.stopped"));
    long long ran = tkit_geti(r, "result.frames");
    ck_assert_int_ge(ran, 3);
    ck_assert_int_lt(ran, 1000000000);
    json_t *s = tkit_ok(b, "world.status", NULL);
    ck_assert_int_eq(tkit_geti(s, "steps_pending"), 0);
    ck_assert(tkit_getb(s, "paused"));
    tkit_finish(d);
}
END_TEST

START_TEST(methods_engine_shutdown)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_err(c, TKIT_INVALID_PARAMS, "now", "engine.shutdown", "{\"now\":true}");
    ck_assert(tkit_running(d));
    json_t *r = tkit_ok(c, "engine.shutdown", NULL);
    ck_assert_msg(json_is_object(r) && json_object_size(r) == 0, "-> %s", tkit_dump(r));
    int st = tkit_wait_exit(d, TKIT_DEADLINE_S);
    ck_assert_msg(st == 0, "engine.shutdown: wait status %d", st);
    struct stat sb;
    ck_assert_msg(lstat(tkit_sock(d), &sb) != 0, "socket file left behind");
    tkit_free(d);
}
END_TEST

/* ---- world ------------------------------------------------------------------------------- */

START_TEST(methods_world_status)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    json_t *s = tkit_ok(c, "world.status", NULL);
    tkit_geti(s, "frame");
    assert_number(s, "world_time");
    assert_number(s, "real_time");
    assert_number(s, "unpaused_time");
    ck_assert(!tkit_getb(s, "paused"));
    ck_assert_double_eq_tol(tkit_getd(s, "time_dilation"), 1.0, 1e-12);
    json_t *levels = tkit_get(s, "levels");
    ck_assert_msg(json_is_array(levels) && json_array_size(levels) == 1, "%s", tkit_dump(s));
    ck_assert_int_eq(tkit_geti(s, "entities"), 0);
    tkit_err(c, TKIT_INVALID_PARAMS, "verbose", "world.status", "{\"verbose\":1}");
    tkit_finish(d);
}
END_TEST

START_TEST(methods_world_pause_unpause)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    ck_assert(tkit_getb(tkit_ok(c, "world.pause", NULL), "paused"));
    ck_assert(tkit_getb(tkit_ok(c, "world.pause", NULL), "paused")); /* idempotent */
    json_t *a = tkit_ok(c, "world.status", NULL);
    ck_assert(tkit_getb(a, "paused"));
    tkit_wait_frames(c, 20);
    json_t *b = tkit_ok(c, "world.status", NULL);
    /* World time stands while paused; unpaused time does not. */
    ck_assert_double_eq(tkit_getd(a, "world_time"), tkit_getd(b, "world_time"));
    ck_assert_double_gt(tkit_getd(b, "unpaused_time"), tkit_getd(a, "unpaused_time"));
    ck_assert(!tkit_getb(tkit_ok(c, "world.unpause", NULL), "paused"));
    ck_assert(!tkit_getb(tkit_ok(c, "world.unpause", NULL), "paused"));
    tkit_wait_frames(c, 5);
    json_t *e = tkit_ok(c, "world.status", NULL);
    ck_assert(!tkit_getb(e, "paused"));
    ck_assert_double_gt(tkit_getd(e, "world_time"), tkit_getd(b, "world_time"));
    tkit_err(c, TKIT_INVALID_PARAMS, "x", "world.pause", "{\"x\":1}");
    tkit_finish(d);
}
END_TEST

START_TEST(methods_world_step)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_err(c, TKIT_INVALID_STATE, NULL, "world.step", "{\"frames\":1}");
    tkit_ok(c, "world.pause", NULL);
    json_t *a = tkit_ok(c, "world.status", NULL);
    json_t *r = tkit_ok(c, "world.step", "{\"frames\":5}");
    ck_assert_int_gt(tkit_geti(r, "frame"), tkit_geti(a, "frame"));
    json_t *b = tkit_ok(c, "world.status", NULL);
    ck_assert(tkit_getb(b, "paused"));
    ck_assert_double_eq_tol(tkit_getd(b, "world_time") - tkit_getd(a, "world_time"), 0.05, 1e-9);
    tkit_err(c, TKIT_INVALID_PARAMS, "frames", "world.step", "{\"frames\":0}");
    tkit_err(c, TKIT_INVALID_PARAMS, "frames", "world.step", "{\"frames\":-1}");
    tkit_err(c, TKIT_INVALID_PARAMS, "frames", "world.step", "{\"frames\":\"2\"}");
    tkit_err(c, TKIT_INVALID_PARAMS, "frames", "world.step", NULL);
    json_t *e = tkit_ok(c, "world.status", NULL);
    ck_assert_double_eq(tkit_getd(e, "world_time"), tkit_getd(b, "world_time"));
    tkit_finish(d);
}
END_TEST

START_TEST(methods_world_set_time_dilation)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    ck_assert_double_eq_tol(
        tkit_getd(tkit_ok(c, "world.set_time_dilation", "{\"value\":2}"), "value"), 2.0, 1e-12);
    ck_assert_double_eq_tol(tkit_getd(tkit_ok(c, "world.status", NULL), "time_dilation"), 2.0,
                            1e-12);
    ck_assert_double_eq_tol(
        tkit_getd(tkit_ok(c, "world.set_time_dilation", "{\"value\":100}"), "value"), 20.0, 1e-12);
    ck_assert_double_eq_tol(
        tkit_getd(tkit_ok(c, "world.set_time_dilation", "{\"value\":0}"), "value"), 0.0001, 1e-12);
    tkit_err(c, TKIT_INVALID_PARAMS, "value", "world.set_time_dilation", "{\"value\":\"x\"}");
    tkit_err(c, TKIT_INVALID_PARAMS, "value", "world.set_time_dilation", NULL);
    ck_assert_double_eq_tol(tkit_getd(tkit_ok(c, "world.status", NULL), "time_dilation"), 0.0001,
                            1e-12);
    tkit_finish(d);
}
END_TEST

START_TEST(methods_world_trace)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    long long a = spawn(c, "{\"class\":\"counter\",\"count\":2}");
    tkit_err(c, TKIT_INVALID_PARAMS, "frames", "world.trace", "{\"frames\":601}");
    tkit_err(c, TKIT_INVALID_PARAMS, "frames", "world.trace", "{\"frames\":0}");
    tkit_err(c, TKIT_INVALID_PARAMS, "frames", "world.trace", NULL);
    json_t *r = tkit_ok(c, "world.trace", "{\"frames\":3}");
    json_t *frames = tkit_get(r, "frames");
    ck_assert_int_eq(json_array_size(frames), 3);
    long long prev = -1;
    size_t i;
    json_t *f;
    json_array_foreach(frames, i, f)
    {
        long long n = tkit_geti(f, "frame");
        if (prev >= 0)
            ck_assert_int_eq(n, prev + 1);
        prev = n;
        json_t *ticks = tkit_get(f, "ticks");
        ck_assert_msg(json_array_size(ticks) == 2, "frame %lld: %s", n, tkit_dump(ticks));
        ck_assert_int_eq(tkit_geti(ticks, "[0].entity"), a);
        ck_assert_int_eq(tkit_geti(ticks, "[1].entity"), a + 1);
        ck_assert(json_is_null(tkit_get(ticks, "[0].component")));
        ck_assert_str_eq(tkit_gets(ticks, "[0].group"), "pre_physics");
    }
    r = tkit_ok(c, "world.trace", "{\"frames\":16}");
    ck_assert_int_eq(json_array_size(tkit_get(r, "frames")), 16);
    tkit_finish(d);
}
END_TEST

START_TEST(methods_world_save_load)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "level.add", "{\"name\":\"arena\"}");
    long long m = spawn(c, "{\"class\":\"mover\",\"level\":\"arena\",\"props\":{\"vx\":3},"
                           "\"tick\":{\"group\":\"post_physics\",\"interval\":0.5}}");
    long long k = spawn(c, "{\"class\":\"counter\",\"components\":[{\"class\":\"counter\"}]}");
    tkit_ok(c, "tick.add_prerequisite", "{\"id\":%lld,\"prerequisite\":{\"id\":%lld}}", k, m);
    tkit_ok(c, "timer.set", "{\"rate\":50,\"loop\":true}");
    tkit_ok(c, "tickable.add", "{\"class\":\"counter\"}");
    const char *path = tkit_path(d, "snap1.json");
    tkit_ok(c, "world.save", "{\"path\":\"%s\"}", path);
    json_error_t je;
    json_t *file = json_load_file(path, 0, &je);
    ck_assert_msg(file != NULL, "world.save wrote no JSON file at %s: %s", path, je.text);
    json_decref(file);
    /* Default path: [snapshot] path of the config. */
    tkit_ok(c, "world.save", NULL);
    struct stat sb;
    ck_assert_msg(stat(tkit_path(d, "snapshot.json"), &sb) == 0, "no default snapshot file");

    tkit_ok(c, "entity.destroy", "{\"ids\":[%lld,%lld]}", m, k);
    tkit_ok(c, "level.remove", "{\"name\":\"arena\"}");
    ck_assert_int_eq(entities(c), 0);
    tkit_ok(c, "world.load", "{\"path\":\"%s\"}", path);
    ck_assert_int_eq(entities(c), 2);
    json_t *e = tkit_ok(c, "entity.get", "{\"id\":%lld}", m);
    ck_assert_str_eq(tkit_gets(e, "class"), "mover");
    ck_assert_str_eq(tkit_gets(e, "level"), "arena");
    ck_assert_double_eq_tol(tkit_getd(e, "props.vx"), 3.0, 1e-12);
    ck_assert_str_eq(tkit_gets(e, "tick.group"), "post_physics");
    ck_assert_double_eq_tol(tkit_getd(e, "tick.interval"), 0.5, 1e-12);
    json_t *ek = tkit_ok(c, "entity.get", "{\"id\":%lld}", k);
    ck_assert_int_eq(json_array_size(tkit_get(ek, "components")), 1);
    ck_assert_int_eq(tkit_geti(ek, "prerequisites[0]"), m);
    ck_assert_int_eq(json_array_size(tkit_get(tkit_ok(c, "timer.list", NULL), "timers")), 1);
    /* A failed load changes nothing. */
    json_t *resp = tkit_call(c, "world.load", "{\"path\":\"%s\"}", tkit_path(d, "absent.json"));
    ck_assert_msg(json_object_get(resp, "error"), "loading a missing file: %s", tkit_dump(resp));
    tkit_write_file(d, "bad.json", "{\"not\": \"a snapshot\"");
    resp = tkit_call(c, "world.load", "{\"path\":\"%s\"}", tkit_path(d, "bad.json"));
    ck_assert_msg(json_object_get(resp, "error"), "loading a bad file: %s", tkit_dump(resp));
    ck_assert_int_eq(entities(c), 2);
    /* Ids stay unique after a load. */
    long long next = spawn(c, "{\"class\":\"counter\"}");
    ck_assert_int_gt(next, k);
    tkit_err(c, TKIT_INVALID_PARAMS, "path", "world.save", "{\"path\":7}");
    tkit_finish(d);
}
END_TEST

/* ---- levels ------------------------------------------------------------------------------- */

START_TEST(methods_levels)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    json_t *l = tkit_ok(c, "level.list", NULL);
    ck_assert_int_eq(json_array_size(tkit_get(l, "levels")), 1);
    ck_assert_str_eq(tkit_gets(l, "levels[0].name"), "persistent");
    ck_assert_int_eq(tkit_geti(l, "levels[0].entities"), 0);
    ck_assert_str_eq(tkit_gets(tkit_ok(c, "level.add", "{\"name\":\"arena\"}"), "name"), "arena");
    /* A taken name is refused, naming it (the code is the daemon's choice). */
    json_t *dup = tkit_call(c, "level.add", "{\"name\":\"arena\"}");
    ck_assert_msg(json_object_get(dup, "error"), "level.add of a taken name: %s", tkit_dump(dup));
    tkit_assert_error(dup, (int)tkit_geti(dup, "error.code"), "arena");
    tkit_err(c, TKIT_INVALID_PARAMS, "name", "level.add", "{}");
    tkit_err(c, TKIT_INVALID_PARAMS, "name", "level.add", "{\"name\":\"\"}");
    tkit_err(c, TKIT_INVALID_PARAMS, "name", "level.add", "{\"name\":5}");
    long long first = spawn(c, "{\"class\":\"counter\",\"level\":\"arena\",\"count\":3}");
    spawn(c, "{\"class\":\"counter\"}");
    l = tkit_get(tkit_ok(c, "level.list", NULL), "levels");
    ck_assert_int_eq(json_array_size(l), 2);
    size_t i;
    json_t *v;
    json_array_foreach(l, i, v)
    {
        if (strcmp(tkit_gets(v, "name"), "arena") == 0)
            ck_assert_int_eq(tkit_geti(v, "entities"), 3);
        else
            ck_assert_int_eq(tkit_geti(v, "entities"), 1);
    }
    long long ticks_before = tkit_geti(tkit_ok(c, "tick.dump", NULL), "total");
    ck_assert_int_eq(ticks_before, 4);
    tkit_ok(c, "level.remove", "{\"name\":\"arena\"}");
    for (long long id = first; id < first + 3; id++)
        tkit_err(c, TKIT_NOT_FOUND, NULL, "entity.get", "{\"id\":%lld}", id);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "tick.dump", NULL), "total"), 1);
    ck_assert_int_eq(json_array_size(tkit_get(tkit_ok(c, "level.list", NULL), "levels")), 1);
    tkit_err(c, TKIT_INVALID_STATE, NULL, "level.remove", "{\"name\":\"persistent\"}");
    tkit_err(c, TKIT_NOT_FOUND, "arena", "level.remove", "{\"name\":\"arena\"}");
    tkit_err(c, TKIT_NOT_FOUND, "level", "entity.spawn",
             "{\"class\":\"counter\",\"level\":\"arena\"}");
    tkit_err(c, TKIT_INVALID_PARAMS, "name", "level.remove", NULL);
    ck_assert_int_eq(entities(c), 1);
    tkit_finish(d);
}
END_TEST

/* ---- entities -------------------------------------------------------------------------------- */

START_TEST(methods_entity_spawn_ids)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    json_t *r = tkit_ok(c, "entity.spawn", "{\"class\":\"counter\"}");
    ck_assert_int_eq(json_array_size(tkit_get(r, "ids")), 1);
    ck_assert_int_eq(tkit_geti(r, "ids[0]"), 1); /* ids start at 1 */
    r = tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":3}");
    json_t *ids = tkit_get(r, "ids");
    ck_assert_int_eq(json_array_size(ids), 3);
    for (size_t i = 0; i < 3; i++)
        ck_assert_int_eq(json_integer_value(json_array_get(ids, i)), 2 + (long long)i);
    r = tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":1000}");
    ck_assert_int_eq(json_array_size(tkit_get(r, "ids")), 1000);
    ck_assert_int_eq(tkit_geti(r, "ids[999]"), 1004);
    r = tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":1001}");
    ck_assert_int_eq(tkit_geti(r, "first"), 1005);
    ck_assert_int_eq(tkit_geti(r, "count"), 1001);
    ck_assert_int_eq(spawn(c, "{\"class\":\"counter\"}"), 2006);
    /* Never reused: destroy the last one, the next id moves on. */
    tkit_ok(c, "entity.destroy", "{\"ids\":[2006]}");
    ck_assert_int_eq(spawn(c, "{\"class\":\"counter\"}"), 2007);
    ck_assert_int_eq(entities(c), 2006);
    tkit_finish(d);
}
END_TEST

START_TEST(methods_entity_spawn_full)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    long long t = spawn(c, "{\"class\":\"mover\"}");
    long long id = spawn(c, "{\"class\":\"mover\",\"level\":\"persistent\",\"count\":1,"
                            "\"tick\":{\"group\":\"post_physics\",\"end_group\":\"last_demotable\","
                            "\"interval\":0.25,\"enabled\":true,\"even_when_paused\":true,"
                            "\"high_priority\":true,\"batch\":false,\"on_dedicated_server\":true,"
                            "\"any_thread\":true},"
                            "\"components\":[{\"class\":\"counter\"},{\"class\":\"mover\","
                            "\"tick\":{\"group\":\"during_physics\"},\"props\":{\"vy\":2}}],"
                            "\"prerequisites\":[1],\"props\":{\"x\":1,\"y\":-4},"
                            "\"time_dilation\":0.5,\"life_span\":1000}");
    json_t *e = tkit_ok(c, "entity.get", "{\"id\":%lld}", id);
    ck_assert_int_eq(tkit_geti(e, "id"), id);
    ck_assert_str_eq(tkit_gets(e, "class"), "mover");
    ck_assert_str_eq(tkit_gets(e, "level"), "persistent");
    ck_assert_double_eq_tol(tkit_getd(e, "props.x"), 1.0, 1e-12);
    ck_assert_double_eq_tol(tkit_getd(e, "props.y"), -4.0, 1e-12);
    ck_assert_double_eq_tol(tkit_getd(e, "props.vx"), 0.0, 1e-12);
    ck_assert_str_eq(tkit_gets(e, "tick.group"), "post_physics");
    ck_assert_str_eq(tkit_gets(e, "tick.end_group"), "last_demotable");
    ck_assert_double_eq_tol(tkit_getd(e, "tick.interval"), 0.25, 1e-12);
    ck_assert(tkit_getb(e, "tick.enabled"));
    ck_assert(tkit_getb(e, "tick.even_when_paused"));
    ck_assert(tkit_getb(e, "tick.high_priority"));
    ck_assert(!tkit_getb(e, "tick.batch"));
    ck_assert(tkit_getb(e, "tick.on_dedicated_server"));
    ck_assert(tkit_getb(e, "tick.any_thread"));
    /* the tick report */
    tkit_gets(e, "tick.state");
    tkit_gets(e, "tick.actual_group");
    tkit_gets(e, "tick.actual_end_group");
    tkit_geti(e, "tick.ticks");
    tkit_geti(e, "tick.last_frame");
    assert_number(e, "tick.last_dt");
    assert_number(e, "tick.accum_dt");
    json_t *comps = tkit_get(e, "components");
    ck_assert_int_eq(json_array_size(comps), 2);
    ck_assert_str_eq(tkit_gets(comps, "[0].class"), "counter");
    ck_assert_str_eq(tkit_gets(comps, "[0].tick.group"), "pre_physics");
    ck_assert_str_eq(tkit_gets(comps, "[1].class"), "mover");
    ck_assert_str_eq(tkit_gets(comps, "[1].tick.group"), "during_physics");
    ck_assert_double_eq_tol(tkit_getd(comps, "[1].props.vy"), 2.0, 1e-12);
    ck_assert(json_is_object(tkit_get(comps, "[0].props")));
    json_t *pre = tkit_get(e, "prerequisites");
    ck_assert_int_eq(json_array_size(pre), 1);
    ck_assert_int_eq(tkit_geti(pre, "[0]"), t);
    tkit_finish(d);
}
END_TEST

START_TEST(methods_entity_spawn_errors)
{
    static const char *const cfg[] = {"world.levels=persistent,arena", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    long long mover = spawn(c, "{\"class\":\"mover\"}");
    static const struct {
        int code;
        const char *needle;
        const char *params;
    } cases[] = {
        {TKIT_INVALID_PARAMS, "class", "{}"},
        {TKIT_INVALID_PARAMS, "class", "{\"class\":\"dragon\"}"},
        {TKIT_INVALID_PARAMS, "class", "{\"class\":7}"},
        {TKIT_INVALID_PARAMS, "count", "{\"class\":\"counter\",\"count\":0}"},
        {TKIT_INVALID_PARAMS, "count", "{\"class\":\"counter\",\"count\":-3}"},
        {TKIT_INVALID_PARAMS, "count", "{\"class\":\"counter\",\"count\":\"two\"}"},
        {TKIT_INVALID_PARAMS, "count", "{\"class\":\"counter\",\"count\":2.5}"},
        {TKIT_INVALID_PARAMS, "components[1].class",
         "{\"class\":\"counter\",\"components\":[{\"class\":\"mover\"},{\"class\":\"nope\"}]}"},
        {TKIT_INVALID_PARAMS, "components[0].class", "{\"class\":\"counter\",\"components\":[{}]}"},
        {TKIT_INVALID_PARAMS, "components[0].tick.group",
         "{\"class\":\"counter\",\"components\":[{\"class\":\"counter\","
         "\"tick\":{\"group\":\"soon\"}}]}"},
        {TKIT_INVALID_PARAMS, "props.vx", "{\"class\":\"mover\",\"props\":{\"vx\":\"fast\"}}"},
        {TKIT_INVALID_PARAMS, "props.nope", "{\"class\":\"mover\",\"props\":{\"nope\":1}}"},
        {TKIT_INVALID_PARAMS, "props.x", "{\"class\":\"counter\",\"props\":{\"x\":1}}"},
        {TKIT_INVALID_PARAMS, "props.work_us", "{\"class\":\"burner\",\"props\":{\"work_us\":-1}}"},
        {TKIT_INVALID_PARAMS, "props.target", "{\"class\":\"follower\"}"},
        {TKIT_NOT_FOUND, "props.target", "{\"class\":\"follower\",\"props\":{\"target\":999999}}"},
        {TKIT_INVALID_PARAMS, "props.spawn", "{\"class\":\"spawner\",\"props\":{\"spawn\":3}}"},
        {TKIT_INVALID_PARAMS, "props.spawn.class",
         "{\"class\":\"spawner\",\"props\":{\"spawn\":{\"class\":\"nope\"}}}"},
        {TKIT_INVALID_PARAMS, "tick.group", "{\"class\":\"counter\",\"tick\":{\"group\":\"x\"}}"},
        {TKIT_INVALID_PARAMS, "tick.group",
         "{\"class\":\"counter\",\"tick\":{\"group\":\"newly_spawned\"}}"},
        {TKIT_INVALID_PARAMS, "end_group",
         "{\"class\":\"counter\",\"tick\":{\"group\":\"post_physics\","
         "\"end_group\":\"pre_physics\"}}"},
        {TKIT_INVALID_PARAMS, "tick.interval",
         "{\"class\":\"counter\",\"tick\":{\"interval\":\"often\"}}"},
        {TKIT_INVALID_PARAMS, "tick.enabled", "{\"class\":\"counter\",\"tick\":{\"enabled\":1}}"},
        {TKIT_INVALID_PARAMS, "tick.colour", "{\"class\":\"counter\",\"tick\":{\"colour\":1}}"},
        {TKIT_INVALID_PARAMS, "tick", "{\"class\":\"counter\",\"tick\":[]}"},
        {TKIT_NOT_FOUND, "level", "{\"class\":\"counter\",\"level\":\"moon\"}"},
        {TKIT_NOT_FOUND, "prerequisites", "{\"class\":\"counter\",\"prerequisites\":[424242]}"},
        {TKIT_INVALID_PARAMS, "prerequisites",
         "{\"class\":\"counter\",\"prerequisites\":[\"one\"]}"},
        {TKIT_INVALID_PARAMS, "time_dilation", "{\"class\":\"counter\",\"time_dilation\":-1}"},
        {TKIT_INVALID_PARAMS, "life_span", "{\"class\":\"counter\",\"life_span\":-1}"},
        {TKIT_INVALID_PARAMS, "colour", "{\"class\":\"counter\",\"colour\":\"red\"}"},
        {TKIT_INVALID_PARAMS, "components", "{\"class\":\"counter\",\"components\":{}}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *resp = tkit_call(c, "entity.spawn", "%s", cases[i].params);
        json_t *err = json_object_get(resp, "error");
        ck_assert_msg(err && tkit_geti(err, "code") == cases[i].code &&
                          strstr(tkit_gets(err, "message"), cases[i].needle),
                      "entity.spawn %s: want %d naming '%s', got %s", cases[i].params,
                      cases[i].code, cases[i].needle, tkit_dump(resp));
    }
    /* Nothing was spawned by any of them. */
    ck_assert_int_eq(entities(c), 1);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "tick.dump", NULL), "total"), 1);
    ck_assert_int_eq(spawn(c, "{\"class\":\"counter\"}"), mover + 1);
    tkit_finish(d);
}
END_TEST

START_TEST(methods_entity_spawn_all_or_nothing)
{
    /* A spawn of 1000 with one bad component spawns nothing. */
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_err(c, TKIT_INVALID_PARAMS, "components[2].class", "entity.spawn",
             "{\"class\":\"mover\",\"count\":1000,\"components\":[{\"class\":\"counter\"},"
             "{\"class\":\"mover\"},{\"class\":\"no_such_class\"}]}");
    ck_assert_int_eq(entities(c), 0);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "tick.dump", NULL), "total"), 0);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "entity.list", NULL), "total"), 0);
    tkit_err(c, TKIT_INVALID_PARAMS, "components[1].props.vx", "entity.spawn",
             "{\"class\":\"mover\",\"count\":1000,\"components\":[{\"class\":\"mover\"},"
             "{\"class\":\"mover\",\"props\":{\"vx\":true}}]}");
    ck_assert_int_eq(entities(c), 0);
    tkit_finish(d);
}
END_TEST

START_TEST(methods_entity_spawn_limit)
{
    static const char *const cfg[] = {"world.max_entities=10", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    tkit_err(c, TKIT_LIMIT, "count", "entity.spawn", "{\"class\":\"counter\",\"count\":11}");
    ck_assert_int_eq(entities(c), 0);
    spawn(c, "{\"class\":\"counter\",\"count\":10}");
    tkit_err(c, TKIT_LIMIT, NULL, "entity.spawn", "{\"class\":\"counter\"}");
    ck_assert_int_eq(entities(c), 10);
    tkit_finish(d);
}
END_TEST

START_TEST(methods_entity_destroy)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    long long a = spawn(c, "{\"class\":\"counter\",\"count\":4}");
    json_t *r = tkit_ok(c, "entity.destroy", "{\"ids\":[%lld,%lld]}", a, a + 1);
    ck_assert_int_eq(tkit_geti(r, "destroyed"), 2);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "entity.get", "{\"id\":%lld}", a);
    /* All or nothing: one unknown id destroys nothing, and is named. */
    tkit_err(c, TKIT_NOT_FOUND, "999999", "entity.destroy", "{\"ids\":[%lld,999999]}", a + 2);
    tkit_ok(c, "entity.get", "{\"id\":%lld}", a + 2);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "entity.destroy", "{\"ids\":[%lld,%lld]}", a + 2, a);
    ck_assert_int_eq(entities(c), 2);
    tkit_err(c, TKIT_INVALID_PARAMS, "ids", "entity.destroy", NULL);
    tkit_err(c, TKIT_INVALID_PARAMS, "ids", "entity.destroy", "{\"ids\":[\"x\"]}");
    tkit_err(c, TKIT_INVALID_PARAMS, "ids", "entity.destroy", "{\"ids\":%lld}", a + 2);
    /* Duplicates count once. */
    r = tkit_ok(c, "entity.destroy", "{\"ids\":[%lld,%lld,%lld]}", a + 2, a + 3, a + 2);
    ck_assert_int_eq(tkit_geti(r, "destroyed"), 2);
    ck_assert_int_eq(entities(c), 0);
    tkit_finish(d);
}
END_TEST

START_TEST(methods_entity_get_errors)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_err(c, TKIT_NOT_FOUND, "1", "entity.get", "{\"id\":1}");
    tkit_err(c, TKIT_INVALID_PARAMS, "id", "entity.get", NULL);
    tkit_err(c, TKIT_INVALID_PARAMS, "id", "entity.get", "{\"id\":\"one\"}");
    tkit_err(c, TKIT_INVALID_PARAMS, "id", "entity.get", "{\"id\":-2}");
    tkit_finish(d);
}
END_TEST

START_TEST(methods_entity_list)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "level.add", "{\"name\":\"arena\"}");
    long long a = spawn(c, "{\"class\":\"counter\",\"count\":5}");
    long long m = spawn(c, "{\"class\":\"mover\",\"count\":3,\"level\":\"arena\"}");
    json_t *r = tkit_ok(c, "entity.list", NULL);
    ck_assert_int_eq(tkit_geti(r, "total"), 8);
    json_t *ids = tkit_get(r, "ids");
    ck_assert_int_eq(json_array_size(ids), 8);
    for (size_t i = 0; i < 8; i++)
        ck_assert_int_eq(json_integer_value(json_array_get(ids, i)), a + (long long)i);
    r = tkit_ok(c, "entity.list", "{\"class\":\"mover\"}");
    ck_assert_int_eq(tkit_geti(r, "total"), 3);
    ck_assert_int_eq(tkit_geti(r, "ids[0]"), m);
    r = tkit_ok(c, "entity.list", "{\"level\":\"persistent\"}");
    ck_assert_int_eq(tkit_geti(r, "total"), 5);
    r = tkit_ok(c, "entity.list", "{\"level\":\"arena\",\"class\":\"counter\"}");
    ck_assert_int_eq(tkit_geti(r, "total"), 0);
    r = tkit_ok(c, "entity.list", "{\"offset\":2,\"limit\":3}");
    ck_assert_int_eq(tkit_geti(r, "total"), 8);
    ids = tkit_get(r, "ids");
    ck_assert_int_eq(json_array_size(ids), 3);
    ck_assert_int_eq(json_integer_value(json_array_get(ids, 0)), a + 2);
    r = tkit_ok(c, "entity.list", "{\"offset\":100}");
    ck_assert_int_eq(tkit_geti(r, "total"), 8);
    ck_assert_int_eq(json_array_size(tkit_get(r, "ids")), 0);
    r = tkit_ok(c, "entity.list", "{\"limit\":1000000}");
    ck_assert_int_eq(json_array_size(tkit_get(r, "ids")), 8);
    tkit_err(c, TKIT_INVALID_PARAMS, "limit", "entity.list", "{\"limit\":1000001}");
    tkit_err(c, TKIT_INVALID_PARAMS, "limit", "entity.list", "{\"limit\":-1}");
    tkit_err(c, TKIT_INVALID_PARAMS, "offset", "entity.list", "{\"offset\":\"a\"}");
    tkit_err(c, TKIT_INVALID_PARAMS, "class", "entity.list", "{\"class\":\"dragon\"}");
    tkit_err(c, TKIT_NOT_FOUND, "level", "entity.list", "{\"level\":\"moon\"}");
    tkit_finish(d);
}
END_TEST

START_TEST(methods_entity_set_props)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    long long m = spawn(c, "{\"class\":\"mover\",\"props\":{\"vx\":1}}");
    json_t *r = tkit_ok(c, "entity.set_props", "{\"id\":%lld,\"props\":{\"vx\":5,\"z\":-2}}", m);
    ck_assert_msg(json_is_object(r) && json_object_size(r) == 0, "-> %s", tkit_dump(r));
    json_t *e = tkit_ok(c, "entity.get", "{\"id\":%lld}", m);
    ck_assert_double_eq_tol(tkit_getd(e, "props.vx"), 5.0, 1e-12);
    ck_assert_double_eq_tol(tkit_getd(e, "props.z"), -2.0, 1e-12);
    /* Validated first: one bad prop changes none of them. */
    tkit_err(c, TKIT_INVALID_PARAMS, "props.nope", "entity.set_props",
             "{\"id\":%lld,\"props\":{\"vx\":7,\"nope\":1}}", m);
    tkit_err(c, TKIT_INVALID_PARAMS, "props.vy", "entity.set_props",
             "{\"id\":%lld,\"props\":{\"vx\":7,\"vy\":\"up\"}}", m);
    e = tkit_ok(c, "entity.get", "{\"id\":%lld}", m);
    ck_assert_double_eq_tol(tkit_getd(e, "props.vx"), 5.0, 1e-12);
    ck_assert_double_eq_tol(tkit_getd(e, "props.vy"), 0.0, 1e-12);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "entity.set_props", "{\"id\":999,\"props\":{\"vx\":1}}");
    tkit_err(c, TKIT_INVALID_PARAMS, "props", "entity.set_props", "{\"id\":%lld}", m);
    tkit_err(c, TKIT_INVALID_PARAMS, "props", "entity.set_props", "{\"id\":%lld,\"props\":[1]}", m);
    tkit_err(c, TKIT_INVALID_PARAMS, "id", "entity.set_props", "{\"props\":{\"vx\":1}}");
    /* A follower re-targeted to a missing entity: not found, unchanged. */
    long long f = tkit_geti(
        tkit_ok(c, "entity.spawn", "{\"class\":\"follower\",\"props\":{\"target\":%lld}}", m),
        "ids[0]");
    tkit_err(c, TKIT_NOT_FOUND, "props.target", "entity.set_props",
             "{\"id\":%lld,\"props\":{\"target\":999999}}", f);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "entity.get", "{\"id\":%lld}", f), "props.target"), m);
    tkit_finish(d);
}
END_TEST

/* ---- tick functions -------------------------------------------------------------------------- */

START_TEST(methods_tick_set)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    long long a = spawn(c, "{\"class\":\"counter\",\"count\":2,"
                           "\"components\":[{\"class\":\"counter\"}]}");
    long long b = a + 1;
    json_t *r = tkit_ok(c, "tick.set", "{\"id\":%lld,\"enabled\":false}", a);
    ck_assert_msg(json_is_object(r) && json_object_size(r) == 0, "-> %s", tkit_dump(r));
    tkit_wait_frames(c, 2);
    json_t *e = tkit_ok(c, "entity.get", "{\"id\":%lld}", a);
    ck_assert(!tkit_getb(e, "tick.enabled"));
    ck_assert_str_eq(tkit_gets(e, "tick.state"), "disabled");
    ck_assert_str_eq(tkit_gets(e, "components[0].tick.state"), "enabled");
    tkit_ok(c, "tick.set", "{\"id\":%lld,\"group\":\"post_physics\",\"high_priority\":true}", b);
    e = tkit_ok(c, "entity.get", "{\"id\":%lld}", b);
    ck_assert_str_eq(tkit_gets(e, "tick.group"), "post_physics");
    ck_assert(tkit_getb(e, "tick.high_priority"));
    /* "ids": the actor ticks of each. */
    tkit_ok(c, "tick.set", "{\"ids\":[%lld,%lld],\"interval\":0.5}", a, b);
    for (long long id = a; id <= b; id++) {
        e = tkit_ok(c, "entity.get", "{\"id\":%lld}", id);
        ck_assert_double_eq_tol(tkit_getd(e, "tick.interval"), 0.5, 1e-12);
        ck_assert_double_eq_tol(tkit_getd(e, "components[0].tick.interval"), 0.0, 1e-12);
    }
    /* a component's function */
    tkit_ok(c, "tick.set", "{\"id\":%lld,\"component\":0,\"group\":\"last_demotable\"}", a);
    e = tkit_ok(c, "entity.get", "{\"id\":%lld}", a);
    ck_assert_str_eq(tkit_gets(e, "components[0].tick.group"), "last_demotable");
    ck_assert_str_eq(tkit_gets(e, "tick.group"), "pre_physics");
    /* errors, each changing nothing */
    tkit_err(c, TKIT_NOT_FOUND, "component", "tick.set",
             "{\"id\":%lld,\"component\":5,\"enabled\":false}", a);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "tick.set", "{\"id\":999,\"enabled\":false}");
    tkit_err(c, TKIT_NOT_FOUND, "999", "tick.set", "{\"ids\":[%lld,999],\"enabled\":false}", b);
    tkit_err(c, TKIT_INVALID_PARAMS, "group", "tick.set", "{\"id\":%lld,\"group\":\"late\"}", b);
    tkit_err(c, TKIT_INVALID_PARAMS, "end_group", "tick.set",
             "{\"id\":%lld,\"group\":\"last_demotable\",\"end_group\":\"pre_physics\"}", b);
    tkit_err(c, TKIT_INVALID_PARAMS, "interval", "tick.set", "{\"id\":%lld,\"interval\":\"x\"}", b);
    tkit_err(c, TKIT_INVALID_PARAMS, "colour", "tick.set", "{\"id\":%lld,\"colour\":1}", b);
    tkit_err(c, TKIT_INVALID_PARAMS, NULL, "tick.set", "{\"enabled\":false}");
    e = tkit_ok(c, "entity.get", "{\"id\":%lld}", b);
    ck_assert(tkit_getb(e, "tick.enabled"));
    ck_assert_str_eq(tkit_gets(e, "tick.group"), "post_physics");
    tkit_finish(d);
}
END_TEST

/* An unknown class says where classes come from. */
START_TEST(methods_unknown_class_hint)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    json_t *e = tkit_err(c, TKIT_INVALID_PARAMS, "[plugins] load", "entity.spawn",
                         "{\"class\":\"boids\"}");
    ck_assert_ptr_nonnull(strstr(tkit_gets(e, "message"), "boids.so"));
    e = tkit_err(c, TKIT_INVALID_PARAMS, "[plugins] load", "entity.spawn", "{\"class\":\"nope\"}");
    ck_assert_ptr_nonnull(strstr(tkit_gets(e, "message"), "mover"));
    tkit_err(c, TKIT_INVALID_PARAMS, "boids.so", "tickable.add", "{\"class\":\"boids\"}");
    tkit_finish(d);
}
END_TEST

/* Selectors: {first,count}, level, class, alone or combined, select the
 * live entities matching all; bad ones change nothing. */
START_TEST(methods_selectors)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "level.add", "{\"name\":\"arena\"}");
    long long m = spawn(c, "{\"class\":\"mover\",\"count\":10}");                     /* persistent */
    long long k = spawn(c, "{\"class\":\"counter\",\"count\":10,\"level\":\"arena\"}");
    ck_assert_int_eq(k, m + 10);
    long long n = spawn(c, "{\"class\":\"mover\",\"count\":10,\"level\":\"arena\"}");
    /* errors first: nothing changes */
    tkit_err(c, TKIT_INVALID_PARAMS, "count", "entity.destroy", "{\"first\":%lld}", m);
    tkit_err(c, TKIT_INVALID_PARAMS, "first", "entity.destroy", "{\"count\":3}");
    tkit_err(c, TKIT_INVALID_PARAMS, "count", "entity.destroy", "{\"first\":1,\"count\":0}");
    tkit_err(c, TKIT_NOT_FOUND, "nowhere", "entity.destroy", "{\"level\":\"nowhere\"}");
    tkit_err(c, TKIT_INVALID_PARAMS, "unknown class", "entity.destroy", "{\"class\":\"nope\"}");
    tkit_err(c, TKIT_INVALID_PARAMS, "either", "entity.destroy",
             "{\"ids\":[%lld],\"class\":\"mover\"}", m);
    tkit_err(c, TKIT_INVALID_PARAMS, "one of", "tick.set",
             "{\"id\":%lld,\"class\":\"mover\",\"enabled\":false}", m);
    tkit_err(c, TKIT_INVALID_PARAMS, "component", "tick.set",
             "{\"class\":\"mover\",\"component\":0,\"enabled\":false}");
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 30);
    /* tick.set by class and level: the arena's movers only */
    json_t *r = tkit_ok(c, "tick.set", "{\"class\":\"mover\",\"level\":\"arena\",\"interval\":0.25}");
    ck_assert_int_eq(tkit_geti(r, "updated"), 10);
    ck_assert_double_eq_tol(tkit_getd(tkit_ok(c, "entity.get", "{\"id\":%lld}", n + 3),
                                      "tick.interval"), 0.25, 1e-12);
    ck_assert_double_eq_tol(tkit_getd(tkit_ok(c, "entity.get", "{\"id\":%lld}", m + 3),
                                      "tick.interval"), 0.0, 1e-12);
    /* a range of a spawn's answer, part of it already gone: the live ones */
    tkit_ok(c, "entity.destroy", "{\"ids\":[%lld,%lld]}", m, m + 1);
    r = tkit_ok(c, "entity.destroy", "{\"first\":%lld,\"count\":5}", m);
    ck_assert_int_eq(tkit_geti(r, "destroyed"), 3);
    /* a range over several spawns, with a class */
    r = tkit_ok(c, "entity.destroy", "{\"first\":%lld,\"count\":1000,\"class\":\"counter\"}", m);
    ck_assert_int_eq(tkit_geti(r, "destroyed"), 10);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "level.list", NULL), "levels[1].entities"), 10);
    /* nothing matches: not an error */
    r = tkit_ok(c, "entity.destroy", "{\"class\":\"counter\"}");
    ck_assert_int_eq(tkit_geti(r, "destroyed"), 0);
    r = tkit_ok(c, "tick.set", "{\"class\":\"counter\",\"enabled\":false}");
    ck_assert_int_eq(tkit_geti(r, "updated"), 0);
    /* by level alone */
    r = tkit_ok(c, "entity.destroy", "{\"level\":\"arena\"}");
    ck_assert_int_eq(tkit_geti(r, "destroyed"), 10);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 5);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "entity.destroy", "{\"class\":\"mover\"}"), "destroyed"), 5);
    /* a big selection goes in slices, answered the same */
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":30000}");
    r = tkit_ok(c, "entity.destroy", "{\"class\":\"counter\"}");
    ck_assert_int_eq(tkit_geti(r, "destroyed"), 30000);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 0);
    tkit_finish(d);
}
END_TEST

START_TEST(methods_tick_prerequisites)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    long long a = spawn(c, "{\"class\":\"counter\",\"count\":3,"
                           "\"components\":[{\"class\":\"counter\"}]}");
    long long b = a + 1, x = a + 2;
    json_t *r =
        tkit_ok(c, "tick.add_prerequisite", "{\"id\":%lld,\"prerequisite\":{\"id\":%lld}}", a, b);
    ck_assert_msg(json_is_object(r) && json_object_size(r) == 0, "-> %s", tkit_dump(r));
    json_t *e = tkit_ok(c, "entity.get", "{\"id\":%lld}", a);
    ck_assert_int_eq(json_array_size(tkit_get(e, "prerequisites")), 1);
    ck_assert_int_eq(tkit_geti(e, "prerequisites[0]"), b);
    /* component targets on both sides */
    tkit_ok(c, "tick.add_prerequisite",
            "{\"id\":%lld,\"component\":0,\"prerequisite\":{\"id\":%lld,\"component\":0}}", x, b);
    /* tick.dump shows prerequisites */
    json_t *dump = tkit_ok(c, "tick.dump", NULL);
    ck_assert_int_eq(tkit_geti(dump, "total"), 6);
    size_t i;
    json_t *t;
    bool found = false;
    json_array_foreach(tkit_get(dump, "ticks"), i, t)
    {
        if (tkit_geti(t, "entity") == a && json_is_null(tkit_get(t, "component"))) {
            ck_assert_int_eq(json_array_size(tkit_get(t, "prerequisites")), 1);
            found = true;
        }
    }
    ck_assert_msg(found, "tick.dump lacks the actor tick of %lld", a);
    /* A cycle is accepted (ignored at schedule time). */
    tkit_ok(c, "tick.add_prerequisite", "{\"id\":%lld,\"prerequisite\":{\"id\":%lld}}", b, a);
    e = tkit_ok(c, "entity.get", "{\"id\":%lld}", b);
    ck_assert_int_eq(tkit_geti(e, "prerequisites[0]"), a);
    tkit_wait_frames(c, 3);
    e = tkit_ok(c, "entity.get", "{\"id\":%lld}", b);
    ck_assert_int_gt(tkit_geti(e, "tick.ticks"), 0);
    /* removal */
    tkit_ok(c, "tick.remove_prerequisite", "{\"id\":%lld,\"prerequisite\":{\"id\":%lld}}", b, a);
    e = tkit_ok(c, "entity.get", "{\"id\":%lld}", b);
    ck_assert_int_eq(json_array_size(tkit_get(e, "prerequisites")), 0);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "tick.remove_prerequisite",
             "{\"id\":%lld,\"prerequisite\":{\"id\":%lld}}", b, a);
    /* errors */
    tkit_err(c, TKIT_NOT_FOUND, NULL, "tick.add_prerequisite",
             "{\"id\":%lld,\"prerequisite\":{\"id\":999}}", a);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "tick.add_prerequisite",
             "{\"id\":999,\"prerequisite\":{\"id\":%lld}}", a);
    tkit_err(c, TKIT_NOT_FOUND, "component", "tick.add_prerequisite",
             "{\"id\":%lld,\"prerequisite\":{\"id\":%lld,\"component\":3}}", a, x);
    tkit_err(c, TKIT_INVALID_PARAMS, "prerequisite", "tick.add_prerequisite", "{\"id\":%lld}", a);
    tkit_err(c, TKIT_INVALID_PARAMS, "prerequisite", "tick.add_prerequisite",
             "{\"id\":%lld,\"prerequisite\":\"b\"}", a);
    tkit_err(c, TKIT_INVALID_PARAMS, NULL, "tick.add_prerequisite",
             "{\"id\":%lld,\"prerequisite\":{\"id\":%lld}}", a, a);
    e = tkit_ok(c, "entity.get", "{\"id\":%lld}", a);
    ck_assert_int_eq(json_array_size(tkit_get(e, "prerequisites")), 1);
    tkit_finish(d);
}
END_TEST

START_TEST(methods_tick_dump)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    long long a = spawn(c, "{\"class\":\"mover\",\"count\":3,\"tick\":{\"interval\":5},"
                           "\"components\":[{\"class\":\"counter\","
                           "\"tick\":{\"enabled\":false}}]}");
    spawn(c, "{\"class\":\"counter\",\"tick\":{\"on_dedicated_server\":false}}");
    tkit_wait_frames(c, 2);
    json_t *r = tkit_ok(c, "tick.dump", NULL);
    ck_assert_int_eq(tkit_geti(r, "total"), 6); /* never-registered ones are not listed */
    json_t *ticks = tkit_get(r, "ticks");
    ck_assert_int_eq(json_array_size(ticks), 6);
    size_t i;
    json_t *t;
    int cooling = 0, disabled = 0;
    json_array_foreach(ticks, i, t)
    {
        long long ent = tkit_geti(t, "entity");
        ck_assert(ent >= a && ent < a + 3);
        tkit_gets(t, "class");
        const char *state = tkit_gets(t, "state");
        tkit_gets(t, "group");
        tkit_gets(t, "end_group");
        tkit_gets(t, "actual_group");
        assert_number(t, "interval");
        ck_assert(json_is_array(tkit_get(t, "prerequisites")));
        json_t *comp = tkit_get(t, "component");
        if (json_is_null(comp)) {
            ck_assert_str_eq(tkit_gets(t, "class"), "mover");
            cooling += strcmp(state, "cooling_down") == 0;
        } else {
            ck_assert_int_eq(json_integer_value(comp), 0);
            disabled += strcmp(state, "disabled") == 0;
        }
    }
    ck_assert_int_eq(cooling, 3);
    ck_assert_int_eq(disabled, 3);
    r = tkit_ok(c, "tick.dump", "{\"offset\":4,\"limit\":10}");
    ck_assert_int_eq(tkit_geti(r, "total"), 6);
    ck_assert_int_eq(json_array_size(tkit_get(r, "ticks")), 2);
    r = tkit_ok(c, "tick.dump", "{\"limit\":1}");
    ck_assert_int_eq(json_array_size(tkit_get(r, "ticks")), 1);
    tkit_err(c, TKIT_INVALID_PARAMS, "limit", "tick.dump", "{\"limit\":\"all\"}");
    tkit_finish(d);
}
END_TEST

/* ---- timers -------------------------------------------------------------------------------------
 */

START_TEST(methods_timers)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    long long h = tkit_geti(tkit_ok(c, "timer.set", "{\"rate\":100,\"loop\":true}"), "handle");
    ck_assert_int_gt(h, 0);
    tkit_wait_frames(c, 2);
    json_t *g = tkit_ok(c, "timer.get", "{\"handle\":%lld}", h);
    ck_assert_int_eq(tkit_geti(g, "handle"), h);
    ck_assert_str_eq(tkit_gets(g, "status"), "active");
    ck_assert_double_eq_tol(tkit_getd(g, "rate"), 100.0, 1e-12);
    ck_assert(tkit_getb(g, "loop"));
    assert_number(g, "elapsed");
    double rem = tkit_getd(g, "remaining");
    ck_assert(rem > 0 && rem <= 100.0);
    ck_assert_int_eq(tkit_geti(g, "fired"), 0);
    /* with an action, and a first delay */
    long long h2 = tkit_geti(
        tkit_ok(c, "timer.set",
                "{\"rate\":50,\"first_delay\":1000,\"action\":{\"method\":\"entity.spawn\","
                "\"params\":{\"class\":\"counter\"}}}"),
        "handle");
    ck_assert_int_ne(h2, h);
    json_t *list = tkit_get(tkit_ok(c, "timer.list", NULL), "timers");
    ck_assert_int_eq(json_array_size(list), 2);
    tkit_gets(list, "[0].status");
    /* pause / unpause / clear */
    ck_assert_int_eq(json_object_size(tkit_ok(c, "timer.pause", "{\"handle\":%lld}", h)), 0);
    ck_assert_str_eq(tkit_gets(tkit_ok(c, "timer.get", "{\"handle\":%lld}", h), "status"),
                     "paused");
    tkit_ok(c, "timer.pause", "{\"handle\":%lld}", h); /* no-op */
    tkit_ok(c, "timer.unpause", "{\"handle\":%lld}", h);
    const char *st = tkit_gets(tkit_ok(c, "timer.get", "{\"handle\":%lld}", h), "status");
    ck_assert_msg(strcmp(st, "active") == 0 || strcmp(st, "pending") == 0, "status %s", st);
    tkit_ok(c, "timer.clear", "{\"handle\":%lld}", h);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "timer.get", "{\"handle\":%lld}", h);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "timer.clear", "{\"handle\":%lld}", h);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "timer.pause", "{\"handle\":%lld}", h);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "timer.unpause", "{\"handle\":%lld}", h);
    ck_assert_int_eq(json_array_size(tkit_get(tkit_ok(c, "timer.list", NULL), "timers")), 1);
    /* for next tick */
    long long h3 = tkit_geti(tkit_ok(c, "timer.set_for_next_tick",
                                     "{\"action\":{\"method\":\"entity.spawn\","
                                     "\"params\":{\"class\":\"counter\",\"count\":2}}}"),
                             "handle");
    ck_assert_int_gt(h3, 0);
    tkit_wait_frames(c, 3);
    ck_assert_int_eq(entities(c), 2);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "timer.get", "{\"handle\":%lld}", h3);
    tkit_ok(c, "timer.set_for_next_tick", NULL);
    /* errors */
    tkit_err(c, TKIT_INVALID_PARAMS, "rate", "timer.set", "{\"rate\":0}");
    tkit_err(c, TKIT_INVALID_PARAMS, "rate", "timer.set", "{\"rate\":-1}");
    /* Deliberate difference: no rate below 1 ms from a client. */
    tkit_err(c, TKIT_INVALID_PARAMS, "at least 0.001", "timer.set", "{\"rate\":0.0009}");
    tkit_err(c, TKIT_INVALID_PARAMS, "rate", "timer.set", "{}");
    tkit_err(c, TKIT_INVALID_PARAMS, "loop", "timer.set", "{\"rate\":1,\"loop\":\"yes\"}");
    tkit_err(c, TKIT_INVALID_PARAMS, "action", "timer.set", "{\"rate\":1,\"action\":\"spawn\"}");
    tkit_err(c, TKIT_INVALID_PARAMS, "handle", "timer.get", NULL);
    tkit_err(c, TKIT_INVALID_PARAMS, "handle", "timer.get", "{\"handle\":\"h\"}");
    tkit_err(c, TKIT_NOT_FOUND, NULL, "timer.get", "{\"handle\":123456789}");
    ck_assert_int_eq(json_array_size(tkit_get(tkit_ok(c, "timer.list", NULL), "timers")), 1);
    tkit_finish(d);
}
END_TEST

/* ---- tickables
 * ----------------------------------------------------------------------------------- */

START_TEST(methods_tickables)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    long long t = tkit_geti(tkit_ok(c, "tickable.add", "{\"class\":\"counter\"}"), "id");
    json_t *g = tkit_ok(c, "tickable.get", "{\"id\":%lld}", t);
    ck_assert_int_eq(tkit_geti(g, "id"), t);
    ck_assert_str_eq(tkit_gets(g, "class"), "counter");
    ck_assert_str_eq(tkit_gets(g, "tick_type"), "conditional");
    ck_assert(tkit_getb(g, "enabled"));
    ck_assert(!tkit_getb(g, "when_paused"));
    tkit_geti(g, "ticks");
    tkit_geti(g, "last_frame");
    assert_number(g, "accum_dt");
    long long m = tkit_geti(tkit_ok(c, "tickable.add",
                                    "{\"class\":\"mover\",\"tick_type\":\"always\","
                                    "\"when_paused\":true,\"props\":{\"vx\":1}}"),
                            "id");
    ck_assert_int_ne(m, t);
    g = tkit_ok(c, "tickable.get", "{\"id\":%lld}", m);
    ck_assert_str_eq(tkit_gets(g, "tick_type"), "always");
    ck_assert(tkit_getb(g, "when_paused"));
    long long n = tkit_geti(
        tkit_ok(c, "tickable.add", "{\"class\":\"counter\",\"tick_type\":\"never\"}"), "id");
    ck_assert_str_eq(tkit_gets(tkit_ok(c, "tickable.get", "{\"id\":%lld}", n), "tick_type"),
                     "never");
    json_t *r =
        tkit_ok(c, "tickable.set", "{\"id\":%lld,\"enabled\":false,\"when_paused\":true}", t);
    ck_assert_msg(json_is_object(r) && json_object_size(r) == 0, "-> %s", tkit_dump(r));
    g = tkit_ok(c, "tickable.get", "{\"id\":%lld}", t);
    ck_assert(!tkit_getb(g, "enabled"));
    ck_assert(tkit_getb(g, "when_paused"));
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "engine.stats", NULL), "tickables"), 3);
    tkit_ok(c, "tickable.remove", "{\"id\":%lld}", t);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "tickable.get", "{\"id\":%lld}", t);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "tickable.remove", "{\"id\":%lld}", t);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "tickable.set", "{\"id\":%lld,\"enabled\":true}", t);
    tkit_err(c, TKIT_INVALID_PARAMS, "class", "tickable.add", "{\"class\":\"dragon\"}");
    tkit_err(c, TKIT_INVALID_PARAMS, "class", "tickable.add", "{}");
    tkit_err(c, TKIT_INVALID_PARAMS, "tick_type", "tickable.add",
             "{\"class\":\"counter\",\"tick_type\":\"sometimes\"}");
    tkit_err(c, TKIT_INVALID_PARAMS, "props.vx", "tickable.add",
             "{\"class\":\"mover\",\"props\":{\"vx\":\"x\"}}");
    tkit_err(c, TKIT_INVALID_PARAMS, "enabled", "tickable.set", "{\"id\":%lld,\"enabled\":2}", m);
    tkit_err(c, TKIT_INVALID_PARAMS, "id", "tickable.get", NULL);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "engine.stats", NULL), "tickables"), 2);
    tkit_finish(d);
}
END_TEST

/* ---- events -------------------------------------------------------------------------------------
 */

START_TEST(methods_events)
{
    static const char *const cfg[] = {"engine.tick_rate=200", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    json_t *r = tkit_ok(c, "events.subscribe", "{\"topics\":[\"frame\"]}");
    ck_assert(tkit_has_string(tkit_get(r, "topics"), "frame"));
    long long prev = -1;
    for (int i = 0; i < 3; i++) {
        json_t *m = tkit_recv(c);
        ck_assert_str_eq(tkit_gets(m, "jsonrpc"), "2.0");
        ck_assert_str_eq(tkit_gets(m, "method"), "event.frame");
        ck_assert_msg(!json_object_get(m, "id"), "a notification with an id: %s", tkit_dump(m));
        long long f = tkit_geti(m, "params.frame");
        ck_assert_int_gt(f, prev);
        prev = f;
        assert_number(m, "params.dt");
        assert_number(m, "params.ms");
    }
    r = tkit_ok(c, "events.unsubscribe", NULL);
    ck_assert(json_is_object(r));
    /* After the unsubscribe's answer no event arrives: the answer to the
     * next request is the very next message (events queued before the
     * unsubscribe answer were stashed by tkit_ok). */
    size_t stashed = tkit_stashed(c);
    for (size_t i = 0; i < stashed; i++)
        tkit_recv(c);
    tkit_sendf(c, "{\"jsonrpc\":\"2.0\",\"id\":\"next\",\"method\":\"world.status\"}\n");
    tkit_wait_frames(tkit_connect(d), 5);
    json_t *m = tkit_recv(c);
    ck_assert_msg(json_is_string(json_object_get(m, "id")), "an event after unsubscribe: %s",
                  tkit_dump(m));
    /* every topic can be subscribed; unknown ones are invalid params */
    r = tkit_ok(c, "events.subscribe",
                "{\"topics\":[\"frame\",\"stats\",\"overrun\",\"slow_tick\",\"log\"]}");
    ck_assert_int_eq(json_array_size(tkit_get(r, "topics")), 5);
    tkit_ok(c, "events.unsubscribe", "{\"topics\":[\"frame\",\"overrun\"]}");
    while (tkit_stashed(c) > 0) /* events sent before the answer */
        tkit_recv(c);
    tkit_err(c, TKIT_INVALID_PARAMS, "topics", "events.subscribe", "{\"topics\":[\"weather\"]}");
    tkit_err(c, TKIT_INVALID_PARAMS, "topics", "events.subscribe", "{\"topics\":\"frame\"}");
    tkit_err(c, TKIT_INVALID_PARAMS, "topics", "events.subscribe", NULL);
    tkit_err(c, TKIT_INVALID_PARAMS, "topics", "events.unsubscribe", "{\"topics\":[\"rain\"]}");
    /* The stats event comes about once a second: wait for one. */
    for (;;) {
        json_t *ev = tkit_recv(c);
        json_t *method = json_object_get(ev, "method");
        ck_assert_msg(json_is_string(method), "not an event: %s", tkit_dump(ev));
        ck_assert_msg(strcmp(json_string_value(method), "event.frame") != 0,
                      "a frame event after unsubscribing from frame");
        if (strcmp(json_string_value(method), "event.stats") == 0) {
            tkit_geti(ev, "params.frame");
            assert_number(ev, "params.mspt.p99");
            break;
        }
    }
    tkit_finish(d);
}
END_TEST

static Suite *methods_suite(void)
{
    Suite *s = suite_create("methods");
    TCase *tc = tcase_create("methods");
    tcase_set_timeout(tc, tkit_scale(60));
    tcase_add_test(tc, methods_engine_info);
    tcase_add_test(tc, methods_every_listed_method_exists);
    tcase_add_test(tc, methods_engine_stats);
    tcase_add_test(tc, methods_engine_set_tick_rate);
    tcase_add_test(tc, methods_engine_sprint);
    tcase_add_test(tc, methods_engine_sprint_stop);
    tcase_add_test(tc, methods_selectors);
    tcase_add_test(tc, methods_unknown_class_hint);
    tcase_add_test(tc, methods_world_step_stop);
    tcase_add_test(tc, methods_engine_shutdown);
    tcase_add_test(tc, methods_world_status);
    tcase_add_test(tc, methods_world_pause_unpause);
    tcase_add_test(tc, methods_world_step);
    tcase_add_test(tc, methods_world_set_time_dilation);
    tcase_add_test(tc, methods_world_trace);
    tcase_add_test(tc, methods_world_save_load);
    tcase_add_test(tc, methods_levels);
    tcase_add_test(tc, methods_entity_spawn_ids);
    tcase_add_test(tc, methods_entity_spawn_full);
    tcase_add_test(tc, methods_entity_spawn_errors);
    tcase_add_test(tc, methods_entity_spawn_all_or_nothing);
    tcase_add_test(tc, methods_entity_spawn_limit);
    tcase_add_test(tc, methods_entity_destroy);
    tcase_add_test(tc, methods_entity_get_errors);
    tcase_add_test(tc, methods_entity_list);
    tcase_add_test(tc, methods_entity_set_props);
    tcase_add_test(tc, methods_tick_set);
    tcase_add_test(tc, methods_tick_prerequisites);
    tcase_add_test(tc, methods_tick_dump);
    tcase_add_test(tc, methods_timers);
    tcase_add_test(tc, methods_tickables);
    tcase_add_test(tc, methods_events);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(methods_suite); }
