/*
 * test_guard.c - the request path against hostile and careless clients,
 * through the real daemon: listings come in pages and never past what a
 * reply may hold (control.max_output), idle clients and half-sent lines do
 * not hold connections forever, logs cannot be flooded, and a client's
 * held requests, answered-later calls included, are bounded
 * (control.max_input), and the read-only socket refuses what changes the
 * world or stops the daemon, in batches too.
 *
 * The slow attacks (millions of entities, floods measured by frame gaps)
 * are in `make hostile` (bench/bench_daemon.c --hostile), not here.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

/* n timers, pipelined in windows small enough that the unread answers stay
 * well under any max_output the tests set. */
static void add_timers(tkit_conn *c, int n)
{
    for (int i = 0; i < n; i += 100) {
        int k = n - i < 100 ? n - i : 100;
        for (int j = 0; j < k; j++)
            tkit_send_request(c, "timer.set", "{\"rate\":%g,\"loop\":true}", 100.0 + i + j);
        for (int j = 0; j < k; j++)
            tkit_assert_result(tkit_recv(c));
    }
}

START_TEST(guard_timer_list_pages)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    add_timers(c, 250);
    json_t *r = tkit_ok(c, "timer.list", NULL);
    ck_assert_int_eq(tkit_geti(r, "total"), 250);
    ck_assert_uint_eq(json_array_size(tkit_get(r, "timers")), 100); /* default limit */
    ck_assert_ptr_null(tkit_find(r, "truncated"));
    r = tkit_ok(c, "timer.list", "{\"offset\":200}");
    ck_assert_uint_eq(json_array_size(tkit_get(r, "timers")), 50);
    r = tkit_ok(c, "timer.list", "{\"offset\":1000}");
    ck_assert_uint_eq(json_array_size(tkit_get(r, "timers")), 0);
    r = tkit_ok(c, "timer.list", "{\"limit\":1000}");
    ck_assert_uint_eq(json_array_size(tkit_get(r, "timers")), 250);
    /* pages do not overlap and cover everything */
    long long seen = 0, prev = 0;
    for (int off = 0; off < 250; off += 60) {
        json_t *p = tkit_get(tkit_ok(c, "timer.list", "{\"offset\":%d,\"limit\":60}", off), "timers");
        for (size_t i = 0; i < json_array_size(p); i++) {
            long long h = tkit_geti(json_array_get(p, i), "handle");
            ck_assert(h != prev);
            prev = h;
            seen++;
        }
    }
    ck_assert_int_eq(seen, 250);
    tkit_err(c, TKIT_INVALID_PARAMS, "limit", "timer.list", "{\"limit\":-1}");
    tkit_err(c, TKIT_INVALID_PARAMS, "nope", "timer.list", "{\"nope\":1}");
    tkit_finish(d);
}
END_TEST

START_TEST(guard_tickable_list_pages)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    for (int i = 0; i < 120; i++)
        tkit_ok(c, "tickable.add", "{\"class\":\"counter\"}");
    json_t *r = tkit_ok(c, "tickable.list", NULL);
    ck_assert_int_eq(tkit_geti(r, "total"), 120);
    ck_assert_uint_eq(json_array_size(tkit_get(r, "tickables")), 100);
    r = tkit_ok(c, "tickable.list", "{\"offset\":100,\"limit\":100}");
    ck_assert_uint_eq(json_array_size(tkit_get(r, "tickables")), 20);
    tkit_finish(d);
}
END_TEST

/* Follow next_offset until the end; returns the items seen. */
static long long walk_pages(tkit_conn *c, const char *method, const char *key, int *pages)
{
    long long off = 0, seen = 0;
    *pages = 0;
    for (;;) {
        json_t *r = tkit_ok(c, method, "{\"offset\":%lld,\"limit\":1000000}", off);
        size_t n = json_array_size(tkit_get(r, key));
        seen += (long long)n;
        (*pages)++;
        json_t *t = tkit_find(r, "truncated");
        if (!t)
            break;
        ck_assert(json_is_true(t));
        ck_assert(n > 0);
        ck_assert_int_eq(tkit_geti(r, "next_offset"), off + (long long)n);
        off += (long long)n;
    }
    return seen;
}

/* A reply never grows past control.max_output: big pages are cut short
 * with "truncated" and the offset to go on from. */
START_TEST(guard_listings_bounded_by_max_output)
{
    static const char *const cfg[] = {"control.max_output=65536", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    add_timers(c, 2000);
    int pages;
    ck_assert_int_eq(walk_pages(c, "timer.list", "timers", &pages), 2000);
    ck_assert_int_gt(pages, 1);
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":20000}");
    ck_assert_int_eq(walk_pages(c, "entity.list", "ids", &pages), 20000);
    ck_assert_int_gt(pages, 1);
    ck_assert_int_eq(walk_pages(c, "tick.dump", "ticks", &pages), 20000);
    ck_assert_int_gt(pages, 1);
    /* the client was never cut off */
    tkit_ok(c, "engine.info", NULL);
    tkit_finish(d);
}
END_TEST

START_TEST(guard_idle_client_closed)
{
    static const char *const cfg[] = {"control.idle_timeout_s=0.3", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *idle = tkit_connect(d);
    tkit_conn *sub = tkit_connect(d);
    tkit_ok(sub, "events.subscribe", "{\"topics\":[\"stats\"]}");
    ck_assert(tkit_wait_eof(idle, 5));
    /* a subscriber waiting for events is not idle */
    tkit_ok(sub, "engine.info", NULL);
    ck_assert(strstr(tkit_stderr(d), "control.idle_timeout_s"));
    tkit_finish(d);
}
END_TEST

START_TEST(guard_partial_line_closed)
{
    static const char *const cfg[] = {"control.line_timeout_s=0.3", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    tkit_sendf(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"engine.in");
    ck_assert(tkit_wait_eof(c, 5));
    json_t *r = tkit_recv(c);
    tkit_assert_error(r, TKIT_LIMIT, "incomplete");
    /* others are served */
    tkit_conn *c2 = tkit_connect(d);
    tkit_ok(c2, "engine.info", NULL);
    tkit_finish(d);
}
END_TEST

/* 256 connections that never send do not lock new clients out forever. */
START_TEST(guard_idle_connections_do_not_lock_out)
{
    static const char *const cfg[] = {"control.max_clients=16", "control.idle_timeout_s=0.5",
                                      NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *hog[16];
    for (int i = 0; i < 16; i++)
        hog[i] = tkit_connect(d);
    for (int i = 0; i < 16; i++)
        ck_assert(tkit_wait_eof(hog[i], 5));
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "engine.info", NULL);
    tkit_finish(d);
}
END_TEST

/* A timer action that fails every frame: the log says so a bounded number
 * of times and counts the rest (the summary line that follows each 5 s
 * window is test_logging's). */
START_TEST(guard_log_flood_suppressed)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "timer.set",
            "{\"rate\":0.01,\"loop\":true,\"action\":{\"method\":\"entity.destroy\","
            "\"params\":{\"ids\":[987654321]}}}");
    double deadline = tkit_now() + tkit_scale(15);
    json_t *st = tkit_ok(c, "engine.stats", NULL);
    while (tkit_geti(st, "timer_action_errors") < 200 && tkit_now() < deadline) {
        tkit_wait_frames(c, 50);
        st = tkit_ok(c, "engine.stats", NULL);
    }
    const char *log = tkit_stderr(d);
    long long failed = tkit_geti(st, "timer_action_errors");
    long long lines = 0;
    for (const char *p = log; (p = strstr(p, "987654321")); p++)
        lines++;
    ck_assert_int_gt(failed, 100);
    ck_assert_msg(lines < failed / 2, "%lld log lines for %lld failures", lines, failed);
    ck_assert_int_gt(tkit_geti(st, "log_suppressed"), 0);
    tkit_finish(d);
}
END_TEST


/* The read-only socket: reads and events yes, changes and shutdown no. */
START_TEST(guard_readonly_socket)
{
    static const char *const cfg[] = {"control.readonly_socket=@DIR@/ro.sock",
                                      "control.readonly_socket_mode=0640", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *admin = tkit_connect(d);
    tkit_ok(admin, "entity.spawn", "{\"class\":\"mover\",\"count\":3}");
    const char *path = tkit_path(d, "ro.sock");
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert(S_ISSOCK(st.st_mode));
    ck_assert_int_eq(st.st_mode & 0777, 0640);
    tkit_conn *ro = tkit_connect_path(path);
    ck_assert_ptr_nonnull(ro);
    tkit_ok(ro, "engine.info", NULL);
    tkit_ok(ro, "engine.stats", NULL);
    ck_assert_int_eq(tkit_geti(tkit_ok(ro, "entity.list", NULL), "total"), 3);
    tkit_ok(ro, "entity.get", "{\"id\":1}");
    tkit_ok(ro, "timer.list", NULL);
    tkit_ok(ro, "events.subscribe", "{\"topics\":[\"stats\"]}");
    static const char *const denied[][2] = {
        {"entity.spawn", "{\"class\":\"counter\"}"}, {"entity.destroy", "{\"ids\":[1]}"},
        {"engine.shutdown", NULL},                   {"world.save", NULL},
        {"world.load", NULL},                        {"world.pause", NULL},
        {"engine.set_tick_rate", "{\"hz\":1}"},      {"timer.set", "{\"rate\":1}"},
    };
    for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) {
        json_t *e = denied[i][1] ? tkit_err(ro, -32005, "read-only", denied[i][0], "%s", denied[i][1])
                                 : tkit_err(ro, -32005, "read-only", denied[i][0], NULL);
        (void)e;
    }
    /* a batch is checked member by member: the read-only ones answer, the
     * rest are refused, and the daemon does not stop */
    tkit_conn *ro2 = tkit_connect_path(path); /* ro gets stats events */
    ck_assert_ptr_nonnull(ro2);
    tkit_sendf(ro2, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"engine.info\"},"
                   "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"engine.shutdown\"},"
                   "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"world.save\"}]\n");
    json_t *b = tkit_recv(ro2);
    ck_assert_msg(json_is_array(b) && json_array_size(b) == 3, "%s", tkit_dump(b));
    ck_assert_ptr_nonnull(tkit_find(b, "[0].result"));
    ck_assert_int_eq(tkit_geti(b, "[1].error.code"), -32005);
    ck_assert_int_eq(tkit_geti(b, "[2].error.code"), -32005);
    /* nothing changed, the daemon still runs, the admin socket still may */
    ck_assert_int_eq(tkit_geti(tkit_ok(admin, "world.status", NULL), "entities"), 3);
    ck_assert_int_eq(tkit_getb(tkit_ok(admin, "world.status", NULL), "paused"), 0);
    tkit_ok(admin, "world.pause", NULL);
    tkit_finish(d);
    /* both socket files are gone */
    ck_assert_int_ne(stat(path, &st), 0);
}
END_TEST


/*
 * Answered-later calls cannot hold unbounded memory: world.step calls on a
 * paused world wait for frames while they keep only their id and method,
 * and their ids count against control.max_input (a 64 KiB string id each,
 * 1 MiB allowed: the rest are refused with -32003 at once).  Repeated ones
 * carrying 256 KiB each used to grow memory without bound.
 */
START_TEST(guard_deferred_calls_bounded)
{
    enum { CALLS = 40, ID_BYTES = 64 * 1024 };
    static const char *const cfg[] = {"control.max_input=1M", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    tkit_conn *other = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    char *id = malloc(ID_BYTES + 1);
    ck_assert(id != NULL);
    for (int i = 0; i < CALLS; i++) {
        memset(id, 'a' + i % 26, ID_BYTES);
        snprintf(id + ID_BYTES - 8, 9, "%08u", (unsigned)i % 100000000u);
        tkit_sendf(c,
                   "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"world.step\","
                   "\"params\":{\"frames\":1000000000}}\n",
                   id);
    }
    free(id);
    /* The refusals answer at once, in order, before a last request's answer
     * (itself refused or not); the calls that wait answer when stopped. */
    tkit_sendf(c, "{\"jsonrpc\":\"2.0\",\"id\":\"last\",\"method\":\"engine.info\"}\n");
    int refused = 0, got = 0;
    for (;;) {
        json_t *r = tkit_recv(c);
        const char *rid = json_string_value(json_object_get(r, "id"));
        if (rid && !strcmp(rid, "last"))
            break;
        got++;
        tkit_assert_error(r, TKIT_LIMIT, "control.max_input");
        refused++;
    }
    int waiting = CALLS - refused;
    ck_assert_msg(refused >= 1 && waiting >= 1 && waiting <= 16,
                  "%d world.step calls refused, %d waiting (1 MiB of 64 KiB ids)", refused,
                  waiting);
    json_t *st = tkit_ok(other, "world.step_stop", NULL);
    (void)st;
    for (int i = 0; i < waiting; i++) {
        json_t *r = tkit_recv(c);
        ck_assert_msg(tkit_getb(r, "result.stopped"), "%s", tkit_dump(r));
    }
    ck_assert_int_eq(got, refused);
    /* Given back: a new one waits again. */
    long long k = tkit_send_request(c, "world.step", "{\"frames\":1000000000}");
    tkit_ok(other, "world.step_stop", NULL);
    ck_assert(tkit_getb(tkit_recv_id(c, k), "result.stopped"));
    tkit_finish(d);
}
END_TEST

/* Past [world] max_memory, what grows the world is refused; the rest works. */
START_TEST(guard_max_memory)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":10}");
    /* a limit far below any process's size, applied by SIGHUP */
    const char *cfg = tkit_slurp(tkit_config_path(d));
    tkit_write_file(d, "tickd.ini", cfg);
    char *more = NULL;
    ck_assert_int_ge(asprintf(&more, "%s\n[world]\nmax_memory = 65536\n", cfg), 0);
    ck_assert(strstr(cfg, "[world]") == NULL);
    tkit_write_file(d, "tickd.ini", more);
    free(more);
    tkit_signal(d, SIGHUP);
    double deadline = tkit_now() + tkit_scale(10);
    while (!strstr(tkit_stderr(d), "max_memory") && tkit_now() < deadline)
        tkit_wait_frames(c, 1);
    tkit_err(c, TKIT_LIMIT, "max_memory", "entity.spawn", "{\"class\":\"counter\"}");
    tkit_err(c, TKIT_LIMIT, "memory limit", "timer.set", "{\"rate\":1}");
    tkit_err(c, TKIT_LIMIT, "memory limit", "tickable.add", "{\"class\":\"counter\"}");
    /* reads and shrinking still work */
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 10);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "entity.destroy", "{\"ids\":[1,2]}"), "destroyed"), 2);
    tkit_ok(c, "engine.stats", NULL);
    tkit_finish(d);
}
END_TEST

static Suite *guard_suite(void)
{
    Suite *s = suite_create("guard");
    TCase *tc = tcase_create("guard");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, guard_timer_list_pages);
    tcase_add_test(tc, guard_tickable_list_pages);
    tcase_add_test(tc, guard_listings_bounded_by_max_output);
    tcase_add_test(tc, guard_idle_client_closed);
    tcase_add_test(tc, guard_partial_line_closed);
    tcase_add_test(tc, guard_idle_connections_do_not_lock_out);
    tcase_add_test(tc, guard_log_flood_suppressed);
    tcase_add_test(tc, guard_readonly_socket);
    tcase_add_test(tc, guard_max_memory);
    tcase_add_test(tc, guard_deferred_calls_bounded);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(guard_suite); }
