/*
 * test_hostile.c - requests and snapshots built to hurt the daemon: each
 * case is a regression of a crash or a runaway cost, run against the real
 * daemon, that must now get an answer (a result or a clear error) and leave
 * the daemon serving.
 *
 * Cases: tiny life spans (from a spawn, a spawner template and a snapshot);
 * a 30,000-long reverse prerequisite chain, then closed into a cycle; ids
 * near 2^53 in a snapshot; a spawn whose template would create more than the
 * tick-function and template-byte limits allow; a snapshot naming timer
 * slot 16,777,214.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* The daemon still answers (and so did not crash or stall). */
static void assert_serving(tkit_conn *c)
{
    json_t *st = tkit_ok(c, "world.status", NULL);
    ck_assert(tkit_find(st, "frame") != NULL);
}

/* A paused world's snapshot: `entities`, `timers` are the arrays' contents. */
static char *snapshot_text(unsigned long long next_id, const char *entities,
                                 const char *timers)
{
    size_t n = strlen(entities) + strlen(timers) + 512;
    char *s = malloc(n);
    ck_assert(s != NULL);
    snprintf(s, n,
             "{\"format\":\"tickd-snapshot\",\"version\":1,\"world\":{\"frame\":0,"
             "\"world_time\":0.0,\"unpaused_time\":0.0,\"real_time\":0.0,\"time_dilation\":1.0,"
             "\"paused\":true,\"next_id\":%llu},\"levels\":[\"persistent\"],"
             "\"entities\":[%s],\"timers\":[%s],\"tickables\":[]}",
             next_id, entities, timers);
    return s; /* freed by load_text */
}

/* The tick object of a snapshot entity that never ran. */
#define SNAP_TICK                                                                                 \
    "\"tick\":{\"group\":\"pre_physics\",\"end_group\":\"pre_physics\",\"interval\":0.0,"         \
    "\"enabled\":true,\"even_when_paused\":false,\"high_priority\":false,\"batch\":true,"         \
    "\"on_dedicated_server\":true,\"any_thread\":false,\"ticks\":0,\"last_frame\":0,"             \
    "\"last_dt\":0.0,\"accum_dt\":0.0,\"cooldown\":-1.0,\"since_last_tick\":-1.0,"              \
    "\"prerequisites\":[]}"

/* Write `text` (freed here) to <dir>/<name> and world.load it. */
static json_t *load_text(tkit_daemon *d, tkit_conn *c, const char *name, char *text)
{
    const char *path = tkit_write_file(d, name, text);
    free(text);
    return tkit_call(c, "world.load", "{\"path\":\"%s\"}", path);
}

/* ---- life spans below the timer resolution ------------------------------------- */

START_TEST(hostile_tiny_life_span)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    /* Directly: every value in (0, 5e-10) used to abort the daemon. */
    const char *spans[] = {"1e-10", "4.9e-10", "1e-300", "5e-324"};
    for (size_t i = 0; i < sizeof spans / sizeof *spans; i++) {
        json_t *r = tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"life_span\":%s}",
                            spans[i]);
        long long id = tkit_geti(r, "ids[0]");
        /* As SetLifeSpan (and as any span shorter than a frame): the timer
         * set between frames is pending until the manager's next pass, and
         * fires at the pass after it. */
        tkit_ok(c, "world.step", "{\"frames\":2}");
        tkit_err(c, TKIT_NOT_FOUND, NULL, "entity.get", "{\"id\":%lld}", id);
    }
    /* From a spawner's template. */
    tkit_ok(c, "entity.spawn",
            "{\"class\":\"spawner\",\"props\":{\"spawn\":{\"class\":\"counter\","
            "\"life_span\":1e-10,\"count\":3},\"every\":1,\"max_total\":3}}");
    tkit_ok(c, "world.step", "{\"frames\":4}");
    assert_serving(c);
    /* From a snapshot entity. */
    json_t *r = load_text(
        d, c, "tiny.json",
        snapshot_text(2, "{\"id\":1,\"class\":\"counter\",\"life_span\":1e-10," SNAP_TICK "}", ""));
    tkit_assert_result(r);
    tkit_ok(c, "entity.get", "{\"id\":1}");
    tkit_ok(c, "world.step", "{\"frames\":2}");
    tkit_err(c, TKIT_NOT_FOUND, NULL, "entity.get", "{\"id\":1}");
    tkit_finish(d);
}
END_TEST

/* ---- deep prerequisite graphs ------------------------------------------------------ */

/* Pipeline `n` requests made by fmt(k) for k in [from, from + n), reading
 * every answer; each must succeed. */
static void pipeline_prereqs(tkit_conn *c, long long from, long long n)
{
    const long long chunk = 500;
    char line[160];
    for (long long k0 = from; k0 < from + n; k0 += chunk) {
        long long k1 = k0 + chunk < from + n ? k0 + chunk : from + n;
        size_t cap = (size_t)(k1 - k0) * sizeof line, len = 0;
        char *buf = malloc(cap);
        ck_assert(buf != NULL);
        for (long long k = k0; k < k1; k++) {
            int m = snprintf(line, sizeof line,
                             "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"tick.add_prerequisite\","
                             "\"params\":{\"id\":%lld,\"prerequisite\":%lld}}\n",
                             k, k, k + 1);
            memcpy(buf + len, line, (size_t)m);
            len += (size_t)m;
        }
        tkit_send_raw(c, buf, len);
        free(buf);
        for (long long k = k0; k < k1; k++)
            tkit_assert_result(tkit_recv_id(c, k));
    }
}

START_TEST(hostile_deep_prerequisite_chain)
{
    const long long n = 30000;
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":%lld}", n + 1);
    /* k waits for k + 1: placing entity 1 walks the whole chain. */
    pipeline_prereqs(c, 1, n);
    tkit_ok(c, "world.step", "{\"frames\":2}");
    json_t *e = tkit_ok(c, "entity.get", "{\"id\":1}");
    ck_assert_int_eq(tkit_geti(e, "tick.ticks"), 2);
    /* Closed into a cycle: accepted, ignored at schedule time with a warning. */
    tkit_ok(c, "tick.add_prerequisite", "{\"id\":%lld,\"prerequisite\":1}", n + 1);
    tkit_ok(c, "world.step", "{\"frames\":2}");
    e = tkit_ok(c, "entity.get", "{\"id\":%lld}", n + 1);
    ck_assert_int_eq(tkit_geti(e, "tick.ticks"), 4);
    ck_assert_msg(strstr(tkit_stderr(d), "would form a cycle") != NULL,
                  "no cycle warning in the log");
    tkit_finish(d);
}
END_TEST

/* ---- ids never size memory ---------------------------------------------------------- */

static long long rss_kib(tkit_daemon *d)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)tkit_pid(d));
    const char *st = tkit_slurp(path);
    ck_assert(st != NULL);
    const char *v = strstr(st, "VmRSS:");
    ck_assert(v != NULL);
    return atoll(v + 6);
}

START_TEST(hostile_huge_ids_cost_nothing)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    char ents[2048];
    snprintf(ents, sizeof ents,
             "{\"id\":68719476736,\"class\":\"counter\"," SNAP_TICK "},"
             "{\"id\":8999999999999999,\"class\":\"counter\"," SNAP_TICK "},"
             "{\"id\":3,\"class\":\"counter\"," SNAP_TICK "}");
    /* 2^36, 9e15 - 1 and 3 (out of order), next id 9e15. */
    json_t *r = load_text(d, c, "ids.json", snapshot_text(9000000000000000ull, ents, ""));
    tkit_assert_result(r);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "entity.get", "{\"id\":68719476736}"), "id"),
                     68719476736ll);
    json_t *sp = tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":2}");
    ck_assert_int_eq(tkit_geti(sp, "ids[0]"), 9000000000000000ll);
    json_t *l = tkit_ok(c, "entity.list", NULL);
    ck_assert_int_eq(tkit_geti(l, "total"), 5);
    ck_assert_int_eq(tkit_geti(l, "ids[0]"), 3);
    ck_assert_int_eq(tkit_geti(l, "ids[1]"), 68719476736ll);
    ck_assert_int_eq(tkit_geti(l, "ids[4]"), 9000000000000001ll);
    /* Memory follows the five entities, not the ids' values. */
    ck_assert_msg(rss_kib(d) < 64 * 1024, "RSS %lld KiB after loading 3 entities", rss_kib(d));
    /* A timer in slot 16,777,214 (a libFuzzer find: 11 s and 1.5 GiB). */
    r = load_text(d, c, "slot.json",
                  snapshot_text(2, "", "{\"handle\":33554430,\"rate\":1,\"remaining\":5}"));
    tkit_assert_result(r);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "timer.get", "{\"handle\":33554430}"), "handle"),
                     33554430);
    ck_assert_msg(rss_kib(d) < 64 * 1024, "RSS %lld KiB after a timer in slot 16777214",
                  rss_kib(d));
    tkit_ok(c, "timer.clear", "{\"handle\":33554430}");
    /* A tickable in slot 100,000,000 (generation 1). */
    char *doc = snapshot_text(2, "", "");
    char *tail = strstr(doc, "\"tickables\":[]");
    ck_assert(tail != NULL);
    char *tdoc = malloc(strlen(doc) + 256);
    ck_assert(tdoc != NULL);
    snprintf(tdoc, strlen(doc) + 256,
             "%.*s\"tickables\":[{\"id\":4395067296,\"class\":\"counter\","
             "\"tick_type\":\"always\",\"enabled\":true,\"when_paused\":false,\"ticks\":0,"
             "\"last_frame\":0,\"accum_dt\":0.0,\"props\":{}}]}",
             (int)(tail - doc), doc);
    free(doc);
    tkit_assert_result(load_text(d, c, "tickable.json", tdoc));
    json_t *tl = tkit_ok(c, "tickable.list", NULL);
    ck_assert_msg(strstr(tkit_dump(tl), "4395067296") != NULL, "tickable.list: %s",
                  tkit_dump(tl));
    ck_assert_msg(rss_kib(d) < 64 * 1024, "RSS %lld KiB after a tickable in slot 1e8",
                  rss_kib(d));
    /* Back to the five entities. */
    r = load_text(d, c, "ids2.json", snapshot_text(9000000000000000ull, ents, ""));
    tkit_assert_result(r);
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":2}");
    tkit_ok(c, "entity.destroy", "{\"ids\":[68719476736]}");
    tkit_err(c, TKIT_NOT_FOUND, NULL, "entity.get", "{\"id\":68719476736}");
    /* Past 2^53: refused with the field named, the world unchanged. */
    r = load_text(d, c, "big.json", snapshot_text(9007199254740993ull, "", ""));
    tkit_assert_error(r, TKIT_INVALID_PARAMS, "next_id");
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "entity.list", NULL), "total"), 4);
    tkit_finish(d);
}
END_TEST

/* ---- costs counted in what they cost ------------------------------------------------- */

/* A spawner whose template nests `depth` spawners deep, each level carrying
 * 64 mover components with props: about 200 KB of template once parsed. */
static char *nested_spawner(int depth)
{
    size_t cap = 1 << 20, len = 0;
    char *b = malloc(cap);
    ck_assert(b != NULL);
    for (int lv = 0; lv < depth; lv++) {
        len += (size_t)snprintf(b + len, cap - len,
                                "{\"class\":\"spawner\",\"components\":[");
        for (int k = 0; k < 64; k++)
            len += (size_t)snprintf(b + len, cap - len,
                                    "%s{\"class\":\"mover\",\"props\":{\"x\":1,\"y\":2,\"z\":3,"
                                    "\"vx\":4,\"vy\":5,\"vz\":6}}",
                                    k ? "," : "");
        len += (size_t)snprintf(b + len, cap - len,
                                "],\"props\":{\"every\":1000000,\"max_total\":1,\"spawn\":");
    }
    len += (size_t)snprintf(b + len, cap - len, "{\"class\":\"counter\"}");
    for (int lv = 0; lv < depth; lv++)
        len += (size_t)snprintf(b + len, cap - len, "}}");
    return b;
}

START_TEST(hostile_spawn_costs_counted)
{
    const char *const edits[] = {"world.max_tick_functions=30000",
                                 "world.max_template_bytes=2M", NULL};
    tkit_opts o = {.config = edits};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    char *tmpl = nested_spawner(6);
    /* 20,000 spawners of one ~200 KB template hold one copy of it, not
     * 20,000 (which took 4 GiB and aborted). */
    tkit_ok(c, "entity.spawn",
            "{\"class\":\"spawner\",\"count\":20000,\"props\":{\"every\":1000000,"
            "\"max_total\":1,\"spawn\":%s}}",
            tmpl);
    ck_assert_msg(rss_kib(d) < 256 * 1024, "RSS %lld KiB", rss_kib(d));
    json_t *e = tkit_ok(c, "entity.get", "{\"id\":20000}");
    ck_assert_str_eq(tkit_gets(e, "props.spawn.class"), "spawner");
    /* Tick functions: 20,000 + 10,001 would pass 30,000; nothing is made. */
    tkit_err(c, TKIT_LIMIT, "world.max_tick_functions", "entity.spawn",
             "{\"class\":\"counter\",\"count\":10001}");
    tkit_err(c, TKIT_LIMIT, "world.max_tick_functions", "entity.spawn",
             "{\"class\":\"counter\",\"count\":5001,"
             "\"components\":[{\"class\":\"mover\"}]}");
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "entity.list", "{\"limit\":1}"), "total"), 20000);
    /* Template bytes: each request holds its own copy; past 2 MiB in all,
     * refused before anything is created. */
    int ok = 0;
    for (int i = 0; i < 20; i++) {
        json_t *r = tkit_call(c, "entity.spawn",
                              "{\"class\":\"spawner\",\"props\":{\"every\":1000000,"
                              "\"max_total\":1,\"spawn\":%s}}",
                              tmpl);
        if (json_object_get(r, "error")) {
            tkit_assert_error(r, TKIT_LIMIT, "world.max_template_bytes");
            break;
        }
        ok++;
    }
    ck_assert_msg(ok > 0 && ok < 20, "%d template spawns passed a 2 MiB limit", ok);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "entity.list", "{\"limit\":1}"), "total"),
                     20000 + ok);
    /* Destroying the holders gives the bytes back. */
    tkit_ok(c, "entity.destroy", "{\"ids\":[20001]}");
    tkit_ok(c, "entity.spawn",
            "{\"class\":\"spawner\",\"props\":{\"every\":1000000,\"max_total\":1,\"spawn\":%s}}",
            tmpl);
    free(tmpl);
    tkit_finish(d);
}
END_TEST

static Suite *hostile_suite(void)
{
    Suite *s = suite_create("hostile");
    TCase *tc = tcase_create("hostile");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, hostile_tiny_life_span);
    tcase_add_test(tc, hostile_deep_prerequisite_chain);
    tcase_add_test(tc, hostile_huge_ids_cost_nothing);
    tcase_add_test(tc, hostile_spawn_costs_counted);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(hostile_suite); }
