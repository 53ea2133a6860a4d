/*
 * test_parallel.c - ticks on worker threads ([engine] threads) seen through
 * the protocol: the same mixed world (movers, followers with prerequisites,
 * interval and high-priority and dilated functions, spawners, components,
 * timers with actions, life spans, tickables, any_thread functions, pause
 * and steps, destroys and spec changes between steps) run by a daemon with
 * one thread and one with four threads that split every run of parallel
 * work ends in the same snapshot, entity by entity; a spawner spawned with
 * tick.any_thread is refused its spawns (logged) with more than one thread
 * and spawns with one; threads and split_min_us reload on SIGHUP; engine.stats,
 * engine.info, engine.profile and world.trace report the threads.
 *
 * Frames run only through world.step (the worlds are paused first), with a
 * fixed dt, so both daemons run exactly the same frames; pause frames in
 * between tick nothing in these worlds (no even_when_paused function, no
 * when_paused tickable), but they do move the frame counter, so frame
 * numbers (`last_frame`, the world's clocks) are the one thing compared
 * loosely: not at all.  (world.hash covers frame numbers, so it is compared
 * where the frames are the same ones: test_journal's
 * journal_determinism_threads replays a world journaled on four threads on
 * one, and one on three, checking the hash after every frame.)
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static long long first_id(json_t *r)
{
    json_t *ids = json_object_get(r, "ids");
    return ids ? tkit_geti(ids, "[0]") : tkit_geti(r, "first");
}

static long long spawn(tkit_conn *c, const char *fmt, long long a, long long b)
{
    char params[1024];
    snprintf(params, sizeof params, fmt, a, b);
    return first_id(tkit_ok(c, "entity.spawn", "%s", params));
}

static void step(tkit_conn *c, int n) { tkit_ok(c, "world.step", "{\"frames\":%d}", n); }

/* The mixed world, built and run the same way on a daemon; the path of its
 * final snapshot. */
static const char *run_world(tkit_daemon *d)
{
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    tkit_ok(c, "level.add", "{\"name\":\"arena\"}");
    long long movers[24];
    for (int i = 0; i < 24; i++) {
        char tick[160];
        snprintf(tick, sizeof tick,
                 "{\"group\":\"%s\",\"interval\":%s,\"high_priority\":%s,\"any_thread\":%s}",
                 i % 4 == 3 ? "post_physics" : "pre_physics",
                 i % 5 == 1 ? "0.05" : i % 5 == 2 ? "0.03" : "0", i % 7 == 2 ? "true" : "false",
                 i % 3 == 0 ? "true" : "false");
        char fmt[512];
        snprintf(fmt, sizeof fmt,
                 "{\"class\":\"mover\",\"count\":%%lld,\"level\":\"%s\",\"tick\":%s,"
                 "\"time_dilation\":%s,\"props\":{\"x\":%%lld,\"vx\":%d.5,\"vy\":-%d,"
                 "\"vz\":0.25}}",
                 i % 2 ? "arena" : "persistent", tick, i % 6 == 4 ? "0.5" : "1", i, i % 9);
        movers[i] = spawn(c, fmt, 400, i * 10);
    }
    /* Followers (prerequisite on their target: the next depth), batched and
     * one by one. */
    for (int i = 0; i < 200; i++)
        spawn(c,
              i % 2 ? "{\"class\":\"follower\",\"props\":{\"target\":%lld},\"count\":%lld}"
                    : "{\"class\":\"follower\",\"props\":{\"target\":%lld},\"count\":%lld,"
                      "\"tick\":{\"batch\":false}}",
              movers[i % 24] + i, 1);
    /* Counters that may run anywhere, on an interval too, and some not. */
    spawn(c, "{\"class\":\"counter\",\"count\":%lld,\"tick\":{\"any_thread\":true}}", 3000, 0);
    spawn(c,
          "{\"class\":\"counter\",\"count\":%lld,\"tick\":{\"any_thread\":true,"
          "\"interval\":0.02,\"group\":\"during_physics\",\"end_group\":\"post_physics\"}}",
          1000, 0);
    /* An entity with components; movers that die of old age. */
    spawn(c,
          "{\"class\":\"mover\",\"count\":%lld,\"props\":{\"vx\":%lld},\"components\":"
          "[{\"class\":\"mover\",\"props\":{\"vy\":3}},{\"class\":\"counter\"}]}",
          50, 7);
    spawn(c, "{\"class\":\"mover\",\"count\":%lld,\"life_span\":0.25,\"props\":{\"vx\":%lld}}",
          100, 2);
    /* Spawners (frame thread): movers every 3rd tick (newly spawned). */
    spawn(c,
          "{\"class\":\"spawner\",\"count\":%lld,\"props\":{\"every\":3,\"max_total\":%lld,"
          "\"spawn\":{\"class\":\"mover\",\"count\":20,\"props\":{\"vx\":2,\"vy\":1}}}}",
          5, 30);
    /* Timers whose actions change the world between groups. */
    tkit_ok(c, "timer.set",
            "{\"rate\":0.07,\"loop\":true,\"action\":{\"method\":\"entity.set_props\","
            "\"params\":{\"id\":%lld,\"props\":{\"vx\":11}}}}",
            movers[3] + 5);
    tkit_ok(c, "timer.set",
            "{\"rate\":0.11,\"loop\":true,\"action\":{\"method\":\"tick.set\","
            "\"params\":{\"ids\":[%lld,%lld,%lld],\"enabled\":false}}}",
            movers[4], movers[4] + 1, movers[10] + 2);
    tkit_ok(c, "timer.set",
            "{\"rate\":0.13,\"action\":{\"method\":\"entity.spawn\","
            "\"params\":{\"class\":\"mover\",\"count\":30,\"props\":{\"vz\":4}}}}");
    tkit_ok(c, "tickable.add", "{\"class\":\"mover\",\"tick_type\":\"always\","
                               "\"props\":{\"vx\":1}}");
    tkit_ok(c, "tickable.add", "{\"class\":\"counter\"}");

    step(c, 40);
    /* Between steps: destroys, spec changes, prop changes. */
    tkit_ok(c, "entity.destroy", "{\"ids\":[%lld,%lld,%lld]}", movers[0] + 1, movers[5] + 9,
            movers[20]);
    tkit_ok(c, "tick.set", "{\"ids\":[%lld,%lld],\"interval\":0.04}", movers[7], movers[8] + 3);
    tkit_ok(c, "tick.set", "{\"id\":%lld,\"any_thread\":false,\"group\":\"post_physics\"}",
            movers[9] + 1);
    tkit_ok(c, "entity.set_props", "{\"id\":%lld,\"props\":{\"vx\":-3}}", movers[11] + 2);
    step(c, 35);
    tkit_ok(c, "world.set_time_dilation", "{\"value\":0.5}");
    step(c, 25);
    const char *path = tkit_path(d, "final.json");
    tkit_ok(c, "world.save", "{\"path\":\"%s\"}", path);
    return path;
}

/* Drop what legitimately differs: frame numbers and the world's clocks
 * (pause frames between steps move them), the save time. */
static void strip(json_t *j)
{
    if (json_is_object(j)) {
        json_object_del(j, "last_frame");
        json_object_del(j, "saved_at");
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v) strip(v);
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) strip(v);
    }
}

/* The snapshot at `path`, stripped; the caller owns it. */
static json_t *load_snapshot(const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    ck_assert_msg(j, "%s: %s", path, e.text);
    json_object_del(j, "world");
    strip(j);
    return j;
}

START_TEST(parallel_same_world_any_thread_count)
{
    static const char *const one[] = {"engine.threads=1", NULL};
    static const char *const four[] = {"engine.threads=4", "engine.split_min_us=0.001", NULL};
    tkit_opts oa = {.config = one}, ob = {.config = four};
    tkit_daemon *a = tkit_start(&oa), *b = tkit_start(&ob);
    json_t *sa = load_snapshot(run_world(a));
    json_t *sb = load_snapshot(run_world(b));
    json_t *ea = json_object_get(sa, "entities"), *eb = json_object_get(sb, "entities");
    ck_assert_uint_gt(json_array_size(ea), 10000);
    ck_assert_uint_eq(json_array_size(ea), json_array_size(eb));
    for (size_t i = 0; i < json_array_size(ea); i++) {
        json_t *x = json_array_get(ea, i), *y = json_array_get(eb, i);
        ck_assert_msg(json_equal(x, y), "entity %zu differs:\n1 thread:  %s\n4 threads: %s", i,
                      tkit_dump(x), tkit_dump(y));
    }
    ck_assert_msg(json_equal(sa, sb), "timers or tickables differ:\n%s\n%s",
                  tkit_dump(json_object_get(sa, "timers")), tkit_dump(json_object_get(sb, "timers")));
    json_decref(sa); /* loaded here, not through the harness */
    json_decref(sb);
    /* The four-thread daemon ran parallel work: movers and counters are
     * thread-safe, and every run of it was split. */
    tkit_conn *c = tkit_connect(b);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "engine.info", NULL), "threads"), 4);
    json_t *st = tkit_ok(c, "engine.stats", NULL);
    ck_assert_int_eq(tkit_geti(st, "threads.threads"), 4);
    tkit_finish(a);
    tkit_finish(b);
}
END_TEST

/* A spawner spawned with tick.any_thread runs as parallel work: its spawns
 * are refused (and logged) with more than one thread, made with one. */
static void any_thread_spawner(int threads)
{
    char cfg[64];
    snprintf(cfg, sizeof cfg, "engine.threads=%d", threads);
    const char *const edits[] = {cfg, NULL};
    tkit_opts o = {.config = edits};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    long long id = spawn(c,
                         "{\"class\":\"spawner\",\"count\":%lld,\"tick\":{\"any_thread\":true},"
                         "\"props\":{\"every\":1,\"max_total\":%lld,"
                         "\"spawn\":{\"class\":\"counter\"}}}",
                         1, 5);
    step(c, 5);
    long long total = tkit_geti(tkit_ok(c, "entity.list", NULL), "total");
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "entity.get", "{\"id\":%lld}", id), "tick.ticks"), 5);
    if (threads > 1) {
        ck_assert_int_eq(total, 1); /* nothing spawned */
        double deadline = tkit_now() + tkit_scale(TKIT_DEADLINE_S);
        while (!strstr(tkit_stderr(d), "spawn refused: a tick of class 'spawner' in "
                                       "pre_physics runs in parallel")) {
            ck_assert_msg(tkit_now() < deadline, "no refusal logged:\n%s", tkit_stderr(d));
            tkit_wait_frames(c, 1);
        }
        /* The spawner reports its refused spawn as any refusal. */
        ck_assert_msg(strstr(tkit_stderr(d), "could not spawn (1 times): refused"), "%s",
                      tkit_stderr(d));
    } else {
        ck_assert_int_eq(total, 6);
        ck_assert_msg(!strstr(tkit_stderr(d), "refused"), "%s", tkit_stderr(d));
    }
    tkit_finish(d);
}

START_TEST(parallel_any_thread_spawner_refused) { any_thread_spawner(2); }
END_TEST

START_TEST(parallel_one_thread_spawner_spawns) { any_thread_spawner(1); }
END_TEST

static long long info_threads(tkit_conn *c)
{
    return tkit_geti(tkit_ok(c, "engine.info", NULL), "threads");
}

START_TEST(parallel_threads_reload)
{
    static const char *const cfg[] = {"engine.threads=1", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    ck_assert_int_eq(info_threads(c), 1);
    static const char *const text[] = {"3", "0"};
    for (int k = 0; k < 2; k++) {
        char ini[512];
        snprintf(ini, sizeof ini,
                 "[engine]\ntick_rate = 0\nfixed_dt = 0.01\nthreads = %s\nsplit_min_us = 7\n"
                 "[control]\nsocket = @SOCK@\n[snapshot]\npath = @DIR@/snapshot.json\n",
                 text[k]);
        tkit_write_file(d, "tickd.ini", ini);
        tkit_signal(d, SIGHUP);
        char want[64];
        snprintf(want, sizeof want, "[engine] threads = %s (was %s)", text[k], k ? "3" : "1");
        double deadline = tkit_now() + tkit_scale(TKIT_DEADLINE_S);
        while (!strstr(tkit_stderr(d), want)) {
            ck_assert_msg(tkit_now() < deadline, "no '%s' logged:\n%s", want, tkit_stderr(d));
            tkit_wait_frames(c, 1);
        }
        long long n = info_threads(c);
        if (k == 0)
            ck_assert_int_eq(n, 3);
        else
            ck_assert_int_ge(n, 1); /* one per online CPU */
        ck_assert_int_eq(tkit_geti(tkit_ok(c, "engine.stats", NULL), "threads.threads"), n);
    }
    ck_assert_msg(strstr(tkit_stderr(d), "[engine] split_min_us = 7 (was 50)"), "%s",
                  tkit_stderr(d));
    /* A value out of range is refused as a whole: nothing changes. */
    tkit_write_file(d, "tickd.ini",
                    "[engine]\ntick_rate = 0\nfixed_dt = 0.01\nthreads = 257\n"
                    "[control]\nsocket = @SOCK@\n[snapshot]\npath = @DIR@/snapshot.json\n");
    long long before = info_threads(c);
    tkit_signal(d, SIGHUP);
    double deadline = tkit_now() + tkit_scale(TKIT_DEADLINE_S);
    while (!strstr(tkit_stderr(d), "threads = 257")) {
        ck_assert_msg(tkit_now() < deadline, "no error logged:\n%s", tkit_stderr(d));
        tkit_wait_frames(c, 1);
    }
    ck_assert_int_eq(info_threads(c), before);
    tkit_finish(d);
}
END_TEST

/* engine.stats, engine.profile and world.trace name the threads. */
START_TEST(parallel_reports_threads)
{
    static const char *const cfg[] = {"engine.threads=2", "engine.split_min_us=0.001", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    /* Running free (no pause frames): every frame runs the movers. */
    tkit_ok(c, "entity.spawn", "{\"class\":\"mover\",\"count\":2000,\"props\":{\"vx\":1}}");
    tkit_ok(c, "entity.spawn", "{\"class\":\"spawner\",\"props\":{\"every\":1000000,"
                               "\"spawn\":{\"class\":\"counter\"}}}");
    tkit_wait_frames(c, 2);
    json_t *st = tkit_ok(c, "engine.stats", NULL);
    json_t *th = tkit_get(st, "threads");
    ck_assert_int_eq(tkit_geti(th, "threads"), 2);
    ck_assert_int_eq(tkit_geti(th, "runs"), 1);
    ck_assert_int_eq(tkit_geti(th, "runs_split"), 1);
    ck_assert_int_eq(tkit_geti(th, "parallel_ticks"), 2000);
    ck_assert_int_le(tkit_geti(th, "worker_ticks"), 2000);
    ck_assert(tkit_getd(th, "worker_ms") >= 0);
    ck_assert(tkit_getd(th, "groups_worker_ms.pre_physics") >= 0);
    ck_assert_int_eq(tkit_geti(st, "ticks_run_last_frame"), 2001);

    json_t *frames = tkit_get(tkit_ok(c, "world.trace", "{\"frames\":2}"), "frames");
    ck_assert_uint_eq(json_array_size(frames), 2);
    for (size_t f = 0; f < 2; f++) {
        json_t *ticks = tkit_get(json_array_get(frames, f), "ticks");
        ck_assert_uint_eq(json_array_size(ticks), 2001);
        for (size_t i = 0; i < json_array_size(ticks); i++) {
            json_t *t = json_array_get(ticks, i);
            long long thr = tkit_geti(t, "thread");
            ck_assert_msg(thr == 0 || (thr == 1 && !strcmp(tkit_gets(t, "class"), "mover")),
                          "%s", tkit_dump(t));
        }
        /* In the order of one thread: the movers in id order, then the spawner. */
        ck_assert_int_eq(tkit_geti(ticks, "[0].entity"), 1);
        ck_assert_int_eq(tkit_geti(ticks, "[1999].entity"), 2000);
        ck_assert_str_eq(tkit_gets(ticks, "[2000].class"), "spawner");
    }
    json_t *p = tkit_ok(c, "engine.profile", "{\"frames\":3}");
    ck_assert(tkit_getd(p, "worker_ms") >= 0);
    json_t *classes = tkit_get(p, "classes");
    bool mover = false;
    for (size_t i = 0; i < json_array_size(classes); i++) {
        json_t *r = json_array_get(classes, i);
        ck_assert(tkit_getd(r, "worker_ms") <= tkit_getd(r, "ms") + 1e-9);
        ck_assert_int_le(tkit_geti(r, "worker_calls"), tkit_geti(r, "calls"));
        if (!strcmp(tkit_gets(r, "class"), "mover")) {
            mover = true;
            ck_assert_int_eq(tkit_geti(r, "calls"), 6000);
        } else {
            ck_assert_int_eq(tkit_geti(r, "worker_calls"), 0);
        }
    }
    ck_assert(mover);
    tkit_finish(d);
}
END_TEST

static Suite *parallel_suite(void)
{
    Suite *s = suite_create("parallel");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, tkit_scale(120));
    tcase_add_test(tc, parallel_same_world_any_thread_count);
    tcase_add_test(tc, parallel_any_thread_spawner_refused);
    tcase_add_test(tc, parallel_one_thread_spawner_spawns);
    tcase_add_test(tc, parallel_threads_reload);
    tcase_add_test(tc, parallel_reports_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(parallel_suite); }
