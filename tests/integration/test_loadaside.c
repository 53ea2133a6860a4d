/*
 * test_loadaside.c - world.load reads, parses and checks its file on a
 * thread of its own (snapshot.c "loading aside"): frames run and other
 * clients are answered meanwhile; the load is applied whole at a frame
 * boundary, in its turn after requests in slices asked before it; the
 * loading client's later requests wait for it; a second load meanwhile is
 * refused; a shutdown while the file is read answers -32004 and leaves the
 * world as it was; errors are those of a load in one piece.  The new world
 * is built aside and swapped in whole: nothing of the old one (entities,
 * timers and their actions, levels) lives on, the loaded one runs.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* Entities in the file: enough that reading it takes many frames. */
#define BIG 20000

/* A world of BIG counters and one level saved to big.json, then the world
 * changed (so a load is visible): 3 movers left, no level. */
static void make_big(tkit_conn *c)
{
    tkit_ok(c, "level.add", "{\"name\":\"arena\"}");
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":%d,\"level\":\"arena\"}", BIG);
    json_t *r = tkit_ok(c, "world.save", "{\"path\":\"big.json\"}");
    ck_assert_int_eq(tkit_geti(r, "entities"), BIG);
    tkit_ok(c, "level.remove", "{\"name\":\"arena\"}");
    tkit_ok(c, "entity.spawn", "{\"class\":\"mover\",\"count\":3}");
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 3);
}

/* Frames run and another client is answered while the file is read. */
START_TEST(load_frames_run_meanwhile)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *a = tkit_connect(d);
    tkit_conn *b = tkit_connect(d);
    make_big(a);
    uint64_t f0 = tkit_frame(b);
    long long id = tkit_send_request(a, "world.load", "{\"path\":\"big.json\"}");
    /* b polls until the load is applied; before that it sees the old world
     * (3 entities) while frames move on. */
    int before = 0;
    uint64_t last_old_frame = 0;
    for (;;) {
        json_t *s = tkit_ok(b, "world.status", NULL);
        long long n = tkit_geti(s, "entities");
        if (n == 3) {
            before++;
            last_old_frame = (uint64_t)tkit_geti(s, "frame");
            continue;
        }
        ck_assert_int_eq(n, BIG); /* never a half-loaded world */
        break;
    }
    json_t *r = tkit_recv_id(a, id);
    ck_assert_int_eq(tkit_geti(r, "result.entities"), BIG);
    ck_assert_int_ge(before, 1);
    /* frames ran while the file was read (the load rewinds the frame
     * counter to the file's, so compare with what b saw before) */
    ck_assert_uint_gt(last_old_frame, f0);
    json_t *lv = tkit_ok(a, "level.list", NULL);
    ck_assert_str_eq(tkit_gets(lv, "levels[1].name"), "arena");
    ck_assert_int_eq(tkit_geti(lv, "levels[1].entities"), BIG);
    tkit_finish(d);
}
END_TEST

/* The loading client's next request waits for the load; another load
 * meanwhile is refused; a save meanwhile waits and holds the loaded world. */
START_TEST(load_order_and_refusals)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *a = tkit_connect(d);
    tkit_conn *b = tkit_connect(d);
    make_big(a);
    long long id = tkit_send_request(a, "world.load", "{\"path\":\"big.json\"}");
    long long st = tkit_send_request(a, "world.status", NULL);
    json_t *e = tkit_err(b, -32002, "world.load of", "world.load", "{\"path\":\"big.json\"}");
    ck_assert_ptr_nonnull(strstr(tkit_gets(e, "message"), "big.json"));
    long long sv = tkit_send_request(b, "world.save", "{\"path\":\"after.json\"}");
    json_t *r = tkit_recv_id(a, id);
    ck_assert_int_eq(tkit_geti(r, "result.entities"), BIG);
    json_t *s = tkit_recv_id(a, st);
    ck_assert_int_eq(tkit_geti(s, "result.entities"), BIG);
    /* the save was taken after the load was applied (saves wait for
     * requests in slices, the load among them) */
    ck_assert_int_eq(tkit_geti(tkit_recv_id(b, sv), "result.entities"), BIG);
    tkit_finish(d);
}
END_TEST

/* A load asked after a spawn in slices is applied after it: the world is
 * the file's, not the file's plus the spawn. */
START_TEST(load_after_slices)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *a = tkit_connect(d);
    tkit_conn *b = tkit_connect(d);
    make_big(a);
    long long sp = tkit_send_request(a, "entity.spawn", "{\"class\":\"counter\",\"count\":30000}");
    /* b's load arrives while a's spawn runs in slices (or just after) */
    json_t *r = tkit_ok(b, "world.load", "{\"path\":\"big.json\"}");
    ck_assert_int_eq(tkit_geti(r, "entities"), BIG);
    json_t *s = tkit_recv_id(a, sp);
    ck_assert_int_eq(tkit_geti(s, "result.count"), 30000);
    ck_assert_int_eq(tkit_geti(tkit_ok(b, "world.status", NULL), "entities"), BIG);
    tkit_finish(d);
}
END_TEST

/* Errors are those of a load in one piece, and change nothing. */
START_TEST(load_errors_change_nothing)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "entity.spawn", "{\"class\":\"mover\",\"count\":3}");
    tkit_write_file(d, "bad.json",
                    "{\"format\":\"tickd-snapshot\",\"version\":99,\"world\":{},"
                    "\"entities\":[{\"id\":1,\"class\":\"counter\"},{\"id\":1,\"class\":"
                    "\"counter\"}]}");
    tkit_err(c, TKIT_INVALID_PARAMS, "unsupported snapshot version", "world.load",
             "{\"path\":\"bad.json\"}");
    tkit_write_file(d, "junk.json", "{\"format\":\"tickd-snapshot\",");
    tkit_err(c, TKIT_INVALID_PARAMS, "not valid JSON", "world.load", "{\"path\":\"junk.json\"}");
    tkit_err(c, -32001, NULL, "world.load", "{\"path\":\"missing.json\"}");
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 3);
    tkit_finish(d);
}
END_TEST

/* The loaded world replaces the running one whole: the old world's timer
 * (an action spawning counters) is gone with it, the file's timer and
 * movers run, and a profile taken across the load reports frames of both. */
START_TEST(load_swaps_the_whole_world)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_conn *p = tkit_connect(d);
    tkit_ok(c, "level.add", "{\"name\":\"arena\"}");
    tkit_ok(c, "entity.spawn", "{\"class\":\"mover\",\"count\":2,\"level\":\"arena\","
                               "\"props\":{\"vx\":1}}");
    tkit_ok(c, "timer.set", "{\"rate\":0.5,\"loop\":true}");
    tkit_ok(c, "world.save", "{\"path\":\"w.json\"}");
    tkit_ok(c, "level.add", "{\"name\":\"other\"}");
    tkit_ok(c, "timer.set", "{\"rate\":0.02,\"loop\":true,\"action\":{\"method\":"
                            "\"entity.spawn\",\"params\":{\"class\":\"counter\"}}}");
    while (tkit_geti(tkit_ok(c, "world.status", NULL), "entities") < 4)
        ;
    long long pr = tkit_send_request(p, "engine.profile", "{\"frames\":20}");
    json_t *r = tkit_ok(c, "world.load", "{\"path\":\"w.json\"}");
    ck_assert_int_eq(tkit_geti(r, "entities"), 2);
    ck_assert_int_eq(tkit_geti(r, "timers"), 1);
    json_t *e0 = tkit_ok(c, "entity.get", "{\"id\":1}");
    double x0 = tkit_getd(e0, "props.x");
    tkit_wait_frames(c, 10);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 2);
    json_t *tl = tkit_ok(c, "timer.list", NULL);
    ck_assert_int_eq((int)json_array_size(tkit_get(tl, "timers")), 1);
    ck_assert_double_eq(tkit_getd(tl, "timers[0].rate"), 0.5);
    ck_assert(tkit_getd(tkit_ok(c, "entity.get", "{\"id\":1}"), "props.x") > x0);
    json_t *lv = tkit_ok(c, "level.list", NULL);
    ck_assert_int_eq((int)json_array_size(tkit_get(lv, "levels")), 2);
    ck_assert_str_eq(tkit_gets(lv, "levels[1].name"), "arena");
    json_t *prof = tkit_recv_id(p, pr);
    ck_assert_int_eq(tkit_geti(prof, "result.frames"), 20);
    tkit_finish(d);
}
END_TEST

/* SIGTERM while the file is read: the load is answered (-32004, or its
 * result if it was read in time), the daemon exits cleanly, and a
 * save_on_exit holds one whole world or the other. */
START_TEST(load_shutdown_meanwhile)
{
    char snap[700];
    snprintf(snap, sizeof snap, "snapshot.path=%s/loadaside-exit.json", tkit_tmpdir());
    const char *const cfg[] = {snap, "snapshot.save_on_exit=true", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *a = tkit_connect(d);
    make_big(a);
    long long id = tkit_send_request(a, "world.load", "{\"path\":\"big.json\"}");
    tkit_signal(d, SIGTERM);
    json_t *r = tkit_recv_id(a, id);
    long long expect;
    if (tkit_find(r, "error")) {
        tkit_assert_error(r, -32004, "the world was not changed");
        expect = 3;
    } else {
        ck_assert_int_eq(tkit_geti(r, "result.entities"), BIG);
        expect = BIG;
    }
    ck_assert_int_eq(tkit_wait_exit(d, 120), 0);
    tkit_free(d);
    const char *const cfg2[] = {snap, "snapshot.load_on_start=true", NULL};
    tkit_opts o2 = {.config = cfg2};
    tkit_daemon *d2 = tkit_start(&o2);
    tkit_conn *c2 = tkit_connect(d2);
    ck_assert_int_eq(tkit_geti(tkit_ok(c2, "world.status", NULL), "entities"), expect);
    tkit_finish(d2);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("loadaside");
    TCase *tc = tcase_create("loadaside");
    tcase_set_timeout(tc, tkit_scale(240));
    tcase_add_test(tc, load_frames_run_meanwhile);
    tcase_add_test(tc, load_order_and_refusals);
    tcase_add_test(tc, load_after_slices);
    tcase_add_test(tc, load_errors_change_nothing);
    tcase_add_test(tc, load_shutdown_meanwhile);
    tcase_add_test(tc, load_swaps_the_whole_world);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(suite); }
