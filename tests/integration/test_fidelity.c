/*
 * test_fidelity.c - issue 14's Unreal rules seen through requests: requests
 * are Unreal's deferred commands (a timer a request sets or unpauses in a
 * running world is active at once), and a custom time dilation of 0 is
 * legal (the entity's ticks get dt 0).  The frame-exact behaviour behind
 * both is in tests/test_fidelity.c.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

static const char *const exact_cfg[] = {"engine.fixed_dt=0.0078125", NULL};

/* Send a batch of `n` members written in `body` (without the brackets) and
 * return member `k` of the answer. */
static json_t *batch_member(tkit_conn *c, size_t n, size_t k, const char *body)
{
    tkit_sendf(c, "[%s]\n", body);
    json_t *r = tkit_recv(c);
    ck_assert_msg(json_is_array(r) && json_array_size(r) == n, "batch -> %s", tkit_dump(r));
    return tkit_assert_result(json_array_get(r, k));
}

START_TEST(fidelity_timer_set_by_request_is_active)
{
    /* In a running world the frame before the request ticked the timer
     * manager, and its counter has not moved for it: active at once, with
     * the full rate remaining (pending, it would wait for this frame's pass
     * and fire a frame later). */
    tkit_opts o = {.config = exact_cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    tkit_wait_frames(c, 3);
    json_t *list = batch_member(c, 2, 1,
                                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"timer.set\","
                                "\"params\":{\"rate\":100}},"
                                "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"timer.list\"}");
    json_t *t = tkit_get(list, "timers[0]");
    ck_assert_str_eq(tkit_gets(t, "status"), "active");
    ck_assert_double_eq_tol(tkit_getd(t, "remaining"), 100.0, 1e-9);
    long long h = tkit_geti(t, "handle");
    /* Paused, then unpaused by a request: active at once too. */
    char body[512];
    snprintf(body, sizeof body,
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"timer.pause\",\"params\":{\"handle\":%lld}},"
             "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"timer.unpause\",\"params\":{\"handle\":%lld}},"
             "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"timer.get\",\"params\":{\"handle\":%lld}}",
             h, h, h);
    t = batch_member(c, 3, 2, body);
    ck_assert_str_eq(tkit_gets(t, "status"), "active");
    tkit_finish(d);
}
END_TEST

START_TEST(fidelity_timer_set_while_paused_is_pending)
{
    /* A paused world does not tick the timer manager (Unreal neither): a
     * request after a pause frame finds it not ticked, so pending. */
    tkit_opts o = {.config = exact_cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    tkit_wait_frames(c, 2);
    long long h = tkit_geti(tkit_ok(c, "timer.set", "{\"rate\":1}"), "handle");
    json_t *t = tkit_ok(c, "timer.get", "{\"handle\":%lld}", h);
    ck_assert_str_eq(tkit_gets(t, "status"), "pending");
    tkit_finish(d);
}
END_TEST

START_TEST(fidelity_custom_dilation_zero)
{
    /* Unreal's CustomTimeDilation 0: the actor's ticks run with dt 0. */
    tkit_opts o = {.config = exact_cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    json_t *r = tkit_ok(c, "entity.spawn",
                        "{\"class\":\"mover\",\"time_dilation\":0,\"props\":{\"vx\":1},"
                        "\"components\":[{\"class\":\"counter\"}]}");
    json_t *ids = json_object_get(r, "ids");
    long long a = ids ? tkit_geti(ids, "[0]") : tkit_geti(r, "first");
    tkit_ok(c, "world.step", "{\"frames\":4}");
    json_t *e = tkit_ok(c, "entity.get", "{\"id\":%lld}", a);
    ck_assert_double_eq(tkit_getd(e, "time_dilation"), 0.0);
    ck_assert_int_eq(tkit_geti(e, "tick.ticks"), 4);
    ck_assert_double_eq(tkit_getd(e, "tick.last_dt"), 0.0);
    ck_assert_double_eq(tkit_getd(e, "components[0].tick.last_dt"), 0.0);
    ck_assert_double_eq(tkit_getd(e, "props.x"), 0.0);
    /* negative stays invalid */
    tkit_err(c, TKIT_INVALID_PARAMS, "time_dilation", "entity.spawn",
             "{\"class\":\"counter\",\"time_dilation\":-0.5}");
    tkit_finish(d);
}
END_TEST

static Suite *fidelity_suite(void)
{
    Suite *s = suite_create("fidelity");
    TCase *tc = tcase_create("requests");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, fidelity_timer_set_by_request_is_active);
    tcase_add_test(tc, fidelity_timer_set_while_paused_is_pending);
    tcase_add_test(tc, fidelity_custom_dilation_zero);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(fidelity_suite); }
