/*
 * test_snapshot.c - world.save / world.load against the real daemon: round
 * trip equality, all-or-nothing loads of truncated or corrupt files (the
 * error names the JSON path and the world is unchanged), unknown versions,
 * and kill -9 during autosaves never leaving a broken snapshot behind.
 */
#include <check.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

/* A world that uses every part of the snapshot format.  Built paused: an
 * unpaced daemon runs thousands of frames while a loaded machine delays the
 * client between two requests, enough for the 3 s timer to finish before it
 * is paused or the 30 s life spans to end. */
static void build_world(tkit_conn *c)
{
    tkit_ok(c, "world.pause", NULL);
    tkit_ok(c, "level.add", "{\"name\":\"arena\"}");
    tkit_ok(c, "entity.spawn",
            "{\"class\":\"mover\",\"count\":3,\"level\":\"arena\",\"props\":{\"vx\":1.5},"
            "\"time_dilation\":0.5,\"life_span\":30,"
            "\"components\":[{\"class\":\"counter\",\"tick\":{\"interval\":0.07}}]}");
    tkit_ok(c, "entity.spawn",
            "{\"class\":\"follower\",\"props\":{\"target\":1},\"tick\":{\"group\":\"post_physics\","
            "\"high_priority\":true}}");
    tkit_ok(c, "entity.spawn",
            "{\"class\":\"spawner\",\"props\":{\"spawn\":{\"class\":\"counter\",\"count\":2},"
            "\"every\":7,\"max_total\":2},\"tick\":{\"interval\":0.05}}");
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"tick\":{\"enabled\":false}}");
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"tick\":{\"on_dedicated_server\":false}}");
    tkit_ok(c, "tick.add_prerequisite", "{\"id\":2,\"prerequisite\":{\"id\":3}}");
    tkit_ok(c, "timer.set", "{\"rate\":0.5,\"loop\":true,\"action\":{\"method\":\"entity.spawn\","
                            "\"params\":{\"class\":\"counter\"}}}");
    json_t *t = tkit_ok(c, "timer.set", "{\"rate\":3}");
    tkit_ok(c, "timer.pause", "{\"handle\":%lld}", tkit_geti(t, "handle"));
    tkit_ok(c, "tickable.add", "{\"class\":\"mover\",\"tick_type\":\"always\","
                               "\"props\":{\"vy\":2}}");
    tkit_ok(c, "world.set_time_dilation", "{\"value\":1.25}");
    /* Let it run a little so counters, cooldowns and timers move. */
    tkit_ok(c, "world.step", "{\"frames\":23}");
}

static json_t *load_doc(const char *path)
{
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    ck_assert_msg(doc != NULL, "%s: %s", path, je.text);
    /* Fields that change with the wall clock or with paused frames. */
    json_object_del(doc, "saved_at");
    json_t *w = json_object_get(doc, "world");
    json_object_del(w, "frame");
    json_object_del(w, "unpaused_time");
    json_object_del(w, "real_time");
    json_object_del(w, "unpaused_time_ns");
    json_object_del(w, "real_time_ns");
    json_object_del(w, "timers_ticked"); /* false after a pause frame */
    return doc;
}

START_TEST(snapshot_round_trip_equal)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    build_world(c);
    const char *a = tkit_path(d, "a.json"), *b = tkit_path(d, "b.json");
    tkit_ok(c, "world.save", "{\"path\":\"%s\"}", a);
    json_t *ra = tkit_ok(c, "world.load", "{\"path\":\"%s\"}", a);
    ck_assert_int_ge(tkit_geti(ra, "entities"), 7);
    ck_assert_int_eq(tkit_geti(ra, "timers"), 2);
    ck_assert_int_eq(tkit_geti(ra, "tickables"), 1);
    tkit_ok(c, "world.save", "{\"path\":\"%s\"}", b);
    json_t *da = load_doc(a), *db = load_doc(b);
    ck_assert_msg(json_equal(da, db), "a snapshot loads back different:\n%s\n%s", tkit_dump(da),
                  tkit_dump(db));
    /* And the world keeps running the same way after the load. */
    tkit_ok(c, "world.step", "{\"frames\":10}");
    json_t *e = tkit_ok(c, "entity.get", "{\"id\":4}"); /* the follower */
    ck_assert_str_eq(tkit_gets(e, "tick.group"), "post_physics");
    ck_assert(tkit_getb(e, "tick.high_priority"));
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "entity.get", "{\"id\":2}"), "prerequisites[0]"), 3);
    json_decref(da);
    json_decref(db);
    tkit_finish(d);
}
END_TEST

/* The world's document now, for "nothing changed" checks. */
static json_t *world_doc(tkit_daemon *d, tkit_conn *c, const char *name)
{
    const char *p = tkit_path(d, name);
    tkit_ok(c, "world.save", "{\"path\":\"%s\"}", p);
    return load_doc(p);
}

START_TEST(snapshot_corrupt_or_truncated_changes_nothing)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    build_world(c);
    const char *good = tkit_path(d, "good.json");
    tkit_ok(c, "world.save", "{\"path\":\"%s\"}", good);
    const char *text = tkit_slurp(good);
    size_t len = strlen(text);
    json_t *before = world_doc(d, c, "before.json");

    /* Truncated at several points: never loads, never changes the world. */
    for (size_t cut = 1; cut < len; cut += len / 9 + 1) {
        char *t = strndup(text, cut);
        tkit_write_file(d, "cut.json", t);
        free(t);
        json_t *r = tkit_call(c, "world.load", "{\"path\":\"%s\"}", tkit_path(d, "cut.json"));
        ck_assert_msg(json_object_get(r, "error"), "a truncated snapshot loaded: %s", tkit_dump(r));
    }
    /* Corrupt content: the error names the JSON path at fault. */
    struct {
        const char *from, *to, *path;
    } cases[] = {
        {"\"class\":\"follower\"", "\"class\":\"no_such_class\"", "$.entities["},
        {"\"group\":\"post_physics\"", "\"group\":\"sideways\"", ".tick.group"},
        {"\"level\":\"arena\"", "\"level\":\"nowhere\"", ".level"},
        {"\"version\":1", "\"version\":99", "$.version: unsupported snapshot version 99"},
        {"\"rate\":0.5", "\"rate\":-1", "$.timers["},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *at = strstr(text, cases[i].from);
        ck_assert_msg(at != NULL, "the snapshot has no %s", cases[i].from);
        size_t pre = (size_t)(at - text);
        char *t = malloc(len + 64);
        memcpy(t, text, pre);
        strcpy(t + pre, cases[i].to);
        strcat(t, at + strlen(cases[i].from));
        tkit_write_file(d, "bad.json", t);
        free(t);
        json_t *err = tkit_err(c, TKIT_INVALID_PARAMS, cases[i].path, "world.load",
                               "{\"path\":\"%s\"}", tkit_path(d, "bad.json"));
        (void)err;
    }
    /* A dangling prerequisite target and a duplicate id. */
    json_t *doc = json_loads(text, 0, NULL);
    json_t *ents = json_object_get(doc, "entities");
    json_array_append(ents, json_array_get(ents, 0));
    char *dup = json_dumps(doc, 0);
    tkit_write_file(d, "dup.json", dup);
    free(dup);
    json_decref(doc);
    tkit_err(c, TKIT_INVALID_PARAMS, "appears twice", "world.load", "{\"path\":\"%s\"}",
             tkit_path(d, "dup.json"));

    json_t *after = world_doc(d, c, "after.json");
    ck_assert_msg(json_equal(before, after), "a refused load changed the world");
    json_decref(before);
    json_decref(after);
    tkit_finish(d);
}
END_TEST

/*
 * Timers due in the same pass with equal expiry fire in the order they were
 * set, also after a load: C reuses A's slot, so it is listed before B but
 * was set after, and the snapshot keeps each timer's place in that order
 * ("order").
 */
/* Class of the i-th live entity in id order. */
static const char *class_of(tkit_conn *c, int i)
{
    json_t *ids = tkit_get(tkit_ok(c, "entity.list", NULL), "ids");
    long long id = json_integer_value(json_array_get(ids, (size_t)i));
    return tkit_gets(tkit_ok(c, "entity.get", "{\"id\":%lld}", id), "class");
}

START_TEST(snapshot_timer_ties_follow_handles)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    long long a = tkit_geti(tkit_ok(c, "timer.set", "{\"rate\":0.05}"), "handle");
    long long b = tkit_geti(tkit_ok(c, "timer.set", "{\"rate\":0.05,\"action\":{\"method\":"
                                                    "\"entity.spawn\",\"params\":{\"class\":"
                                                    "\"counter\"}}}"),
                            "handle");
    tkit_ok(c, "timer.clear", "{\"handle\":%lld}", a);
    long long h = tkit_geti(tkit_ok(c, "timer.set", "{\"rate\":0.05,\"action\":{\"method\":"
                                                    "\"entity.spawn\",\"params\":{\"class\":"
                                                    "\"mover\"}}}"),
                            "handle");
    json_t *ts = tkit_get(tkit_ok(c, "timer.list", NULL), "timers");
    ck_assert_int_eq(tkit_geti(ts, "[0].handle"), h);
    ck_assert_int_eq(tkit_geti(ts, "[1].handle"), b);
    const char *s = tkit_path(d, "ties.json");
    tkit_ok(c, "world.save", "{\"path\":\"%s\"}", s);
    tkit_ok(c, "world.step", "{\"frames\":10}");
    ck_assert_str_eq(class_of(c, 0), "counter"); /* B, set first */
    ck_assert_str_eq(class_of(c, 1), "mover");
    tkit_ok(c, "world.load", "{\"path\":\"%s\"}", s);
    tkit_ok(c, "world.step", "{\"frames\":10}");
    ck_assert_str_eq(class_of(c, 0), "counter"); /* B, set first, listed second */
    ck_assert_str_eq(class_of(c, 1), "mover");
    tkit_finish(d);
}
END_TEST

START_TEST(snapshot_ids_continue_after_load)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":5}");
    tkit_ok(c, "entity.destroy", "{\"ids\":[4,5]}");
    const char *p = tkit_path(d, "s.json");
    tkit_ok(c, "world.save", "{\"path\":\"%s\"}", p);
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":3}"); /* 6, 7, 8 */
    tkit_ok(c, "world.load", "{\"path\":\"%s\"}", p);
    /* The snapshot's next id is 6, but ids never go back either way. */
    json_t *r = tkit_ok(c, "entity.spawn", "{\"class\":\"counter\"}");
    ck_assert_int_ge(tkit_geti(r, "ids[0]"), 6);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "entity.get", "{\"id\":4}");
    tkit_finish(d);
}
END_TEST

/* A snapshot file that loads (checked by a fresh daemon). */
static void assert_loadable(const char *path)
{
    char cfg[900];
    snprintf(cfg, sizeof cfg, "snapshot.path=%s", path);
    const char *const edits[] = {cfg, "snapshot.load_on_start=true", NULL};
    tkit_opts o = {.config = edits};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    ck_assert_int_ge(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 20000);
    tkit_finish(d);
}

START_TEST(snapshot_kill_during_autosave_keeps_previous)
{
    char snap[900];
    const char *dir = tkit_tmpdir();
    char path[800];
    snprintf(path, sizeof path, "%s/auto.json", dir);
    snprintf(snap, sizeof snap, "snapshot.path=%s", path);
    for (int round = 0; round < 3; round++) {
        const char *const edits[] = {snap, "snapshot.autosave_s=0.02", "engine.tick_rate=200",
                                     "!engine.fixed_dt", NULL};
        tkit_opts o = {.config = edits};
        tkit_daemon *d = tkit_start(&o);
        tkit_conn *c = tkit_connect(d);
        tkit_ok(c, "entity.spawn", "{\"class\":\"mover\",\"count\":20000}");
        /* Wait for a first autosave of the big world. */
        struct stat st;
        for (int i = 0; i < 500 && !(stat(path, &st) == 0 && st.st_size > 100000); i++)
            usleep(10000);
        ck_assert_msg(stat(path, &st) == 0, "no autosave appeared");
        /* Kill it at some point of a later save. */
        usleep((useconds_t)(7000 + 9000 * round));
        tkit_close(c);
        kill(tkit_pid(d), SIGKILL);
        tkit_wait_exit(d, 10);
        tkit_free(d);
        assert_loadable(path);
    }
}
END_TEST

static Suite *snapshot_suite(void)
{
    Suite *s = suite_create("snapshot");
    TCase *tc = tcase_create("snapshot");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, snapshot_round_trip_equal);
    tcase_add_test(tc, snapshot_corrupt_or_truncated_changes_nothing);
    tcase_add_test(tc, snapshot_ids_continue_after_load);
    tcase_add_test(tc, snapshot_timer_ties_follow_handles);
    tcase_add_test(tc, snapshot_kill_during_autosave_keeps_previous);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(snapshot_suite); }
