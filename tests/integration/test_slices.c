/*
 * test_slices.c - big spawns done in slices across frame boundaries
 * (methods.c "Spawns in slices"): the answer is the same as a spawn in one
 * piece ({first, count}, consecutive ids), the client's later requests see
 * it whole, other clients go on meanwhile, and a spawn that cannot finish
 * (its prerequisite or level went away, the daemon shuts down) leaves
 * nothing behind.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"

START_TEST(slices_answer_like_one_piece)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":5}");
    json_t *r = tkit_ok(c, "entity.spawn", "{\"class\":\"mover\",\"count\":100000,"
                                           "\"props\":{\"vx\":1}}");
    ck_assert_int_eq(tkit_geti(r, "first"), 6);
    ck_assert_int_eq(tkit_geti(r, "count"), 100000);
    /* the next request of the same client sees all of it */
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 100005);
    json_t *e = tkit_ok(c, "entity.get", "{\"id\":100005}");
    ck_assert_str_eq(tkit_gets(e, "class"), "mover");
    ck_assert(tkit_getd(e, "props.vx") == 1.0);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "entity.spawn", "{\"class\":\"counter\"}"), "ids[0]"),
                     100006);
    /* pipelined: the answers keep their order */
    long long a = tkit_send_request(c, "entity.spawn", "{\"class\":\"counter\",\"count\":50000}");
    long long b = tkit_send_request(c, "world.status", NULL);
    json_t *ra = tkit_recv(c), *rb = tkit_recv(c);
    ck_assert_int_eq(tkit_geti(ra, "id"), a);
    ck_assert_int_eq(tkit_geti(rb, "id"), b);
    ck_assert_int_eq(tkit_geti(rb, "result.entities"), 150006);
    tkit_finish(d);
}
END_TEST

/* Other clients are served while one spawn is in slices. */
START_TEST(slices_others_go_on)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *a = tkit_connect(d);
    tkit_conn *b = tkit_connect(d);
    long long id = tkit_send_request(a, "entity.spawn", "{\"class\":\"counter\",\"count\":400000}");
    long long seen_partial = 0;
    for (int i = 0; i < 200; i++) {
        long long n = tkit_geti(tkit_ok(b, "world.status", NULL), "entities");
        ck_assert(n >= 0 && n <= 400000);
        if (n > 0 && n < 400000)
            seen_partial++;
        if (n == 400000)
            break;
    }
    json_t *r = tkit_recv_id(a, id);
    ck_assert_int_eq(tkit_geti(r, "result.count"), 400000);
    (void)seen_partial; /* how many frames it took depends on the machine */
    tkit_finish(d);
}
END_TEST

/* The prerequisite goes away while the spawn is in slices: error, and
 * nothing of the spawn is left. */
START_TEST(slices_fail_leave_nothing)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *a = tkit_connect(d);
    tkit_conn *b = tkit_connect(d);
    tkit_ok(a, "entity.spawn", "{\"class\":\"counter\"}"); /* id 1 */
    long long id = tkit_send_request(a, "entity.spawn",
                                     "{\"class\":\"counter\",\"count\":300000,"
                                     "\"prerequisites\":[1]}");
    tkit_ok(b, "entity.destroy", "{\"ids\":[1]}");
    json_t *r = tkit_recv_id(a, id);
    if (json_object_get(r, "result")) {
        /* the whole spawn finished before the destroy ran: also all-or-nothing */
        ck_assert_int_eq(tkit_geti(tkit_ok(a, "world.status", NULL), "entities"), 300000);
    } else {
        tkit_assert_error(r, TKIT_NOT_FOUND, "nothing is left of it");
        ck_assert_int_eq(tkit_geti(tkit_ok(a, "world.status", NULL), "entities"), 0);
        ck_assert_int_eq(tkit_geti(tkit_ok(a, "entity.list", NULL), "total"), 0);
    }
    tkit_finish(d);
}
END_TEST

/* Reserved ids count against max_entities while the spawn is in slices. */
START_TEST(slices_reserve_the_limit)
{
    static const char *const cfg[] = {"world.max_entities=150000", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *a = tkit_connect(d);
    tkit_conn *b = tkit_connect(d);
    long long ia = tkit_send_request(a, "entity.spawn", "{\"class\":\"counter\",\"count\":100000}");
    long long ib = tkit_send_request(b, "entity.spawn", "{\"class\":\"counter\",\"count\":100000}");
    json_t *ra = tkit_recv_id(a, ia), *rb = tkit_recv_id(b, ib);
    int ok = (json_object_get(ra, "result") != NULL) + (json_object_get(rb, "result") != NULL);
    ck_assert_int_eq(ok, 1);
    tkit_assert_error(json_object_get(ra, "result") ? rb : ra, TKIT_LIMIT, "max_entities");
    ck_assert_int_eq(tkit_geti(tkit_ok(a, "world.status", NULL), "entities"), 100000);
    tkit_finish(d);
}
END_TEST

START_TEST(slices_refuse_load_meanwhile)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *a = tkit_connect(d);
    tkit_conn *b = tkit_connect(d);
    tkit_ok(a, "world.save", NULL);
    long long id = tkit_send_request(a, "entity.spawn", "{\"class\":\"counter\",\"count\":1000000}");
    json_t *r = tkit_call(b, "world.load", NULL);
    if (json_object_get(r, "error"))
        tkit_assert_error(r, TKIT_INVALID_STATE, "spawn is in progress");
    tkit_assert_result(tkit_recv_id(a, id));
    tkit_finish(d);
}
END_TEST

/* SIGTERM while a spawn is in slices: it answers -32004 and is undone;
 * the daemon exits cleanly. */
START_TEST(slices_shutdown_undoes)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *a = tkit_connect(d);
    long long id = tkit_send_request(a, "entity.spawn", "{\"class\":\"counter\",\"count\":3000000}");
    tkit_wait_frames(tkit_connect(d), 2);
    tkit_signal(d, SIGTERM);
    json_t *r = tkit_recv_id(a, id);
    if (json_object_get(r, "error"))
        tkit_assert_error(r, TKIT_SHUTTING_DOWN, "entity.spawn");
    int st = tkit_wait_exit(d, 30);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    tkit_free(d);
}
END_TEST


/* Destroys of many ids and removals of big levels run in slices too. */
START_TEST(slices_destroy_and_level_remove)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    enum { N = 60000 };
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":%d}", N);
    /* one unknown id among many: nothing is destroyed */
    char *ids = malloc((size_t)N * 8 + 64);
    size_t k = 0;
    k += (size_t)sprintf(ids + k, "{\"ids\":[");
    for (int i = 1; i <= N; i++)
        k += (size_t)sprintf(ids + k, "%s%d", i > 1 ? "," : "", i == N ? 999999 : i);
    sprintf(ids + k, "]}");
    tkit_err(c, TKIT_NOT_FOUND, "999999", "entity.destroy", "%s", ids);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), N);
    /* all of them, in slices */
    k = 0;
    k += (size_t)sprintf(ids + k, "{\"ids\":[");
    for (int i = 1; i <= N; i++)
        k += (size_t)sprintf(ids + k, "%s%d", i > 1 ? "," : "", i);
    sprintf(ids + k, "]}");
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "entity.destroy", "%s", ids), "destroyed"), N);
    free(ids);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 0);
    /* a big level */
    tkit_ok(c, "level.add", "{\"name\":\"big\"}");
    tkit_ok(c, "entity.spawn", "{\"class\":\"mover\",\"count\":50000,\"level\":\"big\"}");
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":10}");
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "level.remove", "{\"name\":\"big\"}"), "destroyed"),
                     50000);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 10);
    json_t *levels = tkit_get(tkit_ok(c, "level.list", NULL), "levels");
    ck_assert_uint_eq(json_array_size(levels), 1);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "level.remove", "{\"name\":\"big\"}");
    tkit_finish(d);
}
END_TEST

static Suite *slices_suite(void)
{
    Suite *s = suite_create("slices");
    TCase *tc = tcase_create("slices");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, slices_answer_like_one_piece);
    tcase_add_test(tc, slices_others_go_on);
    tcase_add_test(tc, slices_fail_leave_nothing);
    tcase_add_test(tc, slices_reserve_the_limit);
    tcase_add_test(tc, slices_refuse_load_meanwhile);
    tcase_add_test(tc, slices_shutdown_undoes);
    tcase_add_test(tc, slices_destroy_and_level_remove);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(slices_suite); }
