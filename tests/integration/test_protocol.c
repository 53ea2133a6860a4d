/*
 * test_protocol.c - the control protocol's transport and JSON-RPC layer
 * against the real daemon (PROTOCOL.md "Transport and framing", "Errors"):
 * line framing (\n and \r\n, split writes, pipelining), the JSON-RPC 2.0
 * envelope (parse errors, invalid requests, params as an array, unknown
 * methods), ids of every kind, notifications, batches ([] and [1,2]
 * included), answered-later methods interleaved with normal ones, and bad
 * input that must be survived (binary junk, NUL bytes, invalid UTF-8, deep
 * nesting).
 *
 * Every test starts its own daemon (tick_rate 0, fixed_dt 0.01).  Not here:
 * per-method behaviour (test_methods.c), limits on clients and lines
 * (test_clients.c).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* Send `line` + "\n" and return the single message it produces. */
static json_t *roundtrip(tkit_conn *c, const char *line)
{
    tkit_sendf(c, "%s\n", line);
    return tkit_recv(c);
}

/* The response must carry "id": null. */
static void assert_id_null(json_t *resp)
{
    json_t *id = json_object_get(resp, "id");
    ck_assert_msg(id && json_is_null(id), "want id null: %s", tkit_dump(resp));
}

/* The daemon still answers a normal request on a fresh connection. */
static void assert_alive(tkit_daemon *d)
{
    tkit_conn *c = tkit_connect(d);
    ck_assert_str_eq(tkit_gets(tkit_ok(c, "engine.info", NULL), "name"), "tickd");
    tkit_close(c);
}

/* ---- framing ----------------------------------------------------------------------------- */

START_TEST(protocol_one_line_one_response)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    json_t *r = roundtrip(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"engine.info\"}");
    json_t *res = tkit_assert_result(r);
    ck_assert_int_eq(tkit_geti(r, "id"), 1);
    ck_assert_str_eq(tkit_gets(res, "name"), "tickd");
    ck_assert_int_eq(tkit_geti(res, "protocol"), 1);
    ck_assert_msg(tkit_quiet(c, 0.05), "a second message for one request");
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_crlf_accepted)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_sendf(c, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"world.status\"}\r\n");
    json_t *r = tkit_recv(c);
    tkit_assert_result(r);
    ck_assert_int_eq(tkit_geti(r, "id"), 7);
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_split_writes)
{
    /* A request written a few bytes at a time is one request. */
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    const char *req = "{\"jsonrpc\":\"2.0\",\"id\":\"split\",\"method\":\"world.status\"}\n";
    size_t n = strlen(req);
    for (size_t i = 0; i < n; i += 3) {
        size_t k = n - i < 3 ? n - i : 3;
        tkit_send_raw(c, req + i, k);
        if (i % 15 == 0)
            tkit_frame(tkit_connect(d)); /* let the daemon read in between */
    }
    json_t *r = tkit_recv(c);
    tkit_assert_result(r);
    ck_assert_str_eq(tkit_gets(r, "id"), "split");
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_pipelined_in_order)
{
    /* 60 requests in one write are answered in request order. */
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    static const char *const methods[] = {"engine.info", "world.status", "level.list",
                                          "entity.list", "timer.list",   "no.such"};
    char *buf = malloc(65536);
    size_t n = 0;
    for (int i = 1; i <= 60; i++) {
        const char *m = methods[i % 6];
        if (i % 7 == 0)
            n += (size_t)sprintf(buf + n,
                                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"entity.spawn\","
                                 "\"params\":{\"class\":\"counter\"}}\n",
                                 i);
        else
            n += (size_t)sprintf(buf + n, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\"}\n", i,
                                 m);
    }
    tkit_send_raw(c, buf, n);
    free(buf);
    for (int i = 1; i <= 60; i++) {
        json_t *r = tkit_recv(c);
        ck_assert_msg(tkit_geti(r, "id") == i, "response %d out of order: %s", i, tkit_dump(r));
        if (i % 7 != 0 && i % 6 == 5)
            tkit_assert_error(r, TKIT_METHOD_NOT_FOUND, "no.such");
        else
            tkit_assert_result(r);
    }
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_empty_lines_ignored_or_answered)
{
    /* Blank lines may be answered (with errors, id null) or skipped, but a
     * request after them is answered normally. */
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_sendf(c, "\n\r\n   \n{\"jsonrpc\":\"2.0\",\"id\":\"after\",\"method\":\"engine.info\"}\n");
    for (;;) {
        json_t *r = tkit_recv(c);
        json_t *id = json_object_get(r, "id");
        if (json_is_string(id)) {
            ck_assert_str_eq(json_string_value(id), "after");
            tkit_assert_result(r);
            break;
        }
        ck_assert_msg(json_object_get(r, "error") && json_is_null(id), "a blank line produced: %s",
                      tkit_dump(r));
    }
    tkit_finish(d);
}
END_TEST

/* ---- the envelope --------------------------------------------------------------------------- */

START_TEST(protocol_parse_error)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    static const char *const bad[] = {
        "{bad",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"engine.info\"",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"engine.info\"}}",
        "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"engine.info\"},",
        "nul",
        "{'jsonrpc':'2.0'}",
        NULL,
    };
    for (int i = 0; bad[i]; i++) {
        json_t *r = roundtrip(c, bad[i]);
        tkit_assert_error(r, TKIT_PARSE_ERROR, NULL);
        assert_id_null(r);
    }
    /* The connection is still usable after parse errors. */
    tkit_ok(c, "engine.info", NULL);
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_invalid_request)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    /* {line, expected id (-1: null)} */
    static const struct {
        const char *line;
        int id;
    } cases[] = {
        {"{\"id\":1,\"method\":\"engine.info\"}", 1},
        {"{\"jsonrpc\":\"1.0\",\"id\":2,\"method\":\"engine.info\"}", 2},
        {"{\"jsonrpc\":2.0,\"id\":3,\"method\":\"engine.info\"}", 3},
        {"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":5}", 4},
        {"{\"jsonrpc\":\"2.0\",\"id\":5}", 5},
        {"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"engine.info\",\"params\":\"x\"}", 6},
        {"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"engine.info\",\"params\":3}", 7},
        {"{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"engine.info\"}", -1},
        {"{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"engine.info\"}", -1},
        {"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"engine.info\"}", -1},
        {"1", -1},
        {"\"engine.info\"", -1},
        {"null", -1},
        {"true", -1},
        {"{}", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *r = roundtrip(c, cases[i].line);
        tkit_assert_error(r, TKIT_INVALID_REQUEST, NULL);
        if (cases[i].id < 0)
            assert_id_null(r);
        else
            ck_assert_msg(tkit_geti(r, "id") == cases[i].id, "%s -> %s", cases[i].line,
                          tkit_dump(r));
    }
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_params_array_is_invalid_params)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    json_t *r = roundtrip(c, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"world.step\","
                             "\"params\":[1]}");
    tkit_assert_error(r, TKIT_INVALID_PARAMS, "params");
    ck_assert_int_eq(tkit_geti(r, "id"), 9);
    r = roundtrip(c, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"engine.info\",\"params\":[]}");
    tkit_assert_error(r, TKIT_INVALID_PARAMS, NULL);
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_method_not_found)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_err(c, TKIT_METHOD_NOT_FOUND, "no.such_method", "no.such_method", NULL);
    tkit_err(c, TKIT_METHOD_NOT_FOUND, NULL, "", NULL);
    tkit_err(c, TKIT_METHOD_NOT_FOUND, NULL, "ENGINE.INFO", NULL);
    tkit_err(c, TKIT_METHOD_NOT_FOUND, NULL, "engine.info ", NULL);
    /* with params too: the method is unknown before params matter */
    tkit_err(c, TKIT_METHOD_NOT_FOUND, NULL, "engine.nothing", "{\"x\":1}");
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_unknown_param_is_invalid_params)
{
    /* A typo never passes silently: unknown names are -32602 naming them. */
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_err(c, TKIT_INVALID_PARAMS, "framez", "world.trace", "{\"framez\":2}");
    tkit_err(c, TKIT_INVALID_PARAMS, "verbose", "engine.info", "{\"verbose\":true}");
    tkit_err(c, TKIT_INVALID_PARAMS, "colour", "entity.spawn",
             "{\"class\":\"counter\",\"colour\":\"red\"}");
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 0);
    tkit_finish(d);
}
END_TEST

/* ---- ids ------------------------------------------------------------------------------------- */

START_TEST(protocol_ids_echoed)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    static const char *const ids[] = {"\"abc\"",
                                      "\"\"",
                                      "0",
                                      "-7",
                                      "9007199254740991",
                                      "1.5",
                                      "\"\\u043a\\u043b\\u044e\\u0447-\\u2713\"",
                                      "\"with \\\"quotes\\\" and \\\\ and \\n\"",
                                      NULL};
    for (int i = 0; ids[i]; i++) {
        json_t *want = tkit_json("%s", ids[i]);
        json_t *r = roundtrip(
            c, tkit_dump(tkit_json("{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"engine.info\"}",
                                   ids[i])));
        tkit_assert_result(r);
        ck_assert_msg(json_equal(json_object_get(r, "id"), want), "id %s came back as %s", ids[i],
                      tkit_dump(json_object_get(r, "id")));
    }
    /* An error keeps the id too. */
    json_t *r = roundtrip(c, "{\"jsonrpc\":\"2.0\",\"id\":\"e1\",\"method\":\"nope\"}");
    tkit_assert_error(r, TKIT_METHOD_NOT_FOUND, NULL);
    ck_assert_str_eq(tkit_gets(r, "id"), "e1");
    /* id null is a request (answered with id null). */
    r = roundtrip(c, "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"world.status\"}");
    tkit_assert_result(r);
    assert_id_null(r);
    tkit_finish(d);
}
END_TEST

/* ---- notifications ------------------------------------------------------------------------------
 */

START_TEST(protocol_notifications_get_no_response)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_sendf(c, "{\"jsonrpc\":\"2.0\",\"method\":\"engine.info\"}\n"
                  "{\"jsonrpc\":\"2.0\",\"method\":\"no.such\"}\n"
                  "{\"jsonrpc\":\"2.0\",\"method\":\"world.step\",\"params\":{\"frames\":0}}\n"
                  "{\"jsonrpc\":\"2.0\",\"method\":\"entity.spawn\",\"params\":"
                  "{\"class\":\"counter\",\"count\":3}}\n"
                  "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"world.status\"}\n");
    json_t *r = tkit_recv(c);
    ck_assert_msg(tkit_geti(r, "id") == 42, "first message is not the answer to 42: %s",
                  tkit_dump(r));
    /* The notification did its work (in order, before the request). */
    ck_assert_int_eq(tkit_geti(tkit_assert_result(r), "entities"), 3);
    ck_assert_msg(tkit_quiet(c, 0.05), "something more arrived");
    tkit_finish(d);
}
END_TEST

/* ---- batches
 * ------------------------------------------------------------------------------------- */

START_TEST(protocol_batch_empty)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    json_t *r = roundtrip(c, "[]");
    ck_assert_msg(json_is_object(r), "[] must be answered by one error object: %s", tkit_dump(r));
    tkit_assert_error(r, TKIT_INVALID_REQUEST, NULL);
    assert_id_null(r);
    r = roundtrip(c, "  [ ]  ");
    tkit_assert_error(r, TKIT_INVALID_REQUEST, NULL);
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_batch_of_invalid)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    json_t *r = roundtrip(c, "[1,2]");
    ck_assert_msg(json_is_array(r) && json_array_size(r) == 2, "[1,2] -> %s", tkit_dump(r));
    for (size_t i = 0; i < 2; i++) {
        tkit_assert_error(json_array_get(r, i), TKIT_INVALID_REQUEST, NULL);
        assert_id_null(json_array_get(r, i));
    }
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_batch_mixed)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    json_t *r = roundtrip(c, "["
                             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"engine.info\"},"
                             "{\"jsonrpc\":\"2.0\",\"method\":\"entity.spawn\","
                             "\"params\":{\"class\":\"counter\"}},"
                             "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"no.such\"},"
                             "5,"
                             "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"world.step\","
                             "\"params\":[1]},"
                             "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"entity.list\"}"
                             "]");
    ck_assert_msg(json_is_array(r) && json_array_size(r) == 5, "batch -> %s", tkit_dump(r));
    bool seen[5] = {false};
    size_t i;
    json_t *m;
    json_array_foreach(r, i, m)
    {
        json_t *id = json_object_get(m, "id");
        if (json_is_integer(id) && json_integer_value(id) == 1) {
            ck_assert_str_eq(tkit_gets(tkit_assert_result(m), "name"), "tickd");
            seen[0] = true;
        } else if (json_is_string(id)) {
            ck_assert_str_eq(json_string_value(id), "x");
            tkit_assert_error(m, TKIT_METHOD_NOT_FOUND, NULL);
            seen[1] = true;
        } else if (json_is_null(id)) {
            tkit_assert_error(m, TKIT_INVALID_REQUEST, NULL);
            seen[2] = true;
        } else if (json_is_integer(id) && json_integer_value(id) == 3) {
            tkit_assert_error(m, TKIT_INVALID_PARAMS, NULL);
            seen[3] = true;
        } else if (json_is_integer(id) && json_integer_value(id) == 4) {
            /* executed in order: the notification's spawn came first */
            ck_assert_int_eq(tkit_geti(tkit_assert_result(m), "total"), 1);
            seen[4] = true;
        } else {
            ck_abort_msg("unexpected member %s", tkit_dump(m));
        }
    }
    for (int k = 0; k < 5; k++)
        ck_assert_msg(seen[k], "batch response lacks member %d: %s", k, tkit_dump(r));
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_batch_of_notifications_is_silent)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_sendf(c, "[{\"jsonrpc\":\"2.0\",\"method\":\"entity.spawn\",\"params\":"
                  "{\"class\":\"counter\"}},{\"jsonrpc\":\"2.0\",\"method\":\"no.such\"}]\n"
                  "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"world.status\"}\n");
    json_t *r = tkit_recv(c);
    ck_assert_msg(json_is_object(r) && tkit_geti(r, "id") == 9,
                  "a batch of notifications was answered: %s", tkit_dump(r));
    ck_assert_int_eq(tkit_geti(tkit_assert_result(r), "entities"), 1);
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_batch_limit)
{
    static const char *const cfg[] = {"control.max_batch=4", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    const char *one = "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"entity.spawn\","
                      "\"params\":{\"class\":\"counter\"}}";
    char line[2048], item[256];
    /* 4: fine */
    strcpy(line, "[");
    for (int i = 1; i <= 4; i++) {
        snprintf(item, sizeof item, one, i);
        strcat(line, item);
        strcat(line, i < 4 ? "," : "]");
    }
    json_t *r = roundtrip(c, line);
    ck_assert_msg(json_is_array(r) && json_array_size(r) == 4, "-> %s", tkit_dump(r));
    /* 5: one -32003 error for the whole batch, nothing executed */
    strcpy(line, "[");
    for (int i = 1; i <= 5; i++) {
        snprintf(item, sizeof item, one, i);
        strcat(line, item);
        strcat(line, i < 5 ? "," : "]");
    }
    r = roundtrip(c, line);
    ck_assert_msg(json_is_object(r), "an over-long batch -> %s", tkit_dump(r));
    tkit_assert_error(r, TKIT_LIMIT, NULL);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 4);
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_batch_with_answered_later_member)
{
    /* A batch with a world.trace member answers once, when all are done. */
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\"}");
    json_t *r = roundtrip(c, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"world.trace\","
                             "\"params\":{\"frames\":3}},"
                             "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"engine.info\"}]");
    ck_assert_msg(json_is_array(r) && json_array_size(r) == 2, "-> %s", tkit_dump(r));
    for (size_t i = 0; i < 2; i++) {
        json_t *m = json_array_get(r, i);
        json_t *res = tkit_assert_result(m);
        if (tkit_geti(m, "id") == 1)
            ck_assert_int_eq(json_array_size(tkit_get(res, "frames")), 3);
    }
    tkit_finish(d);
}
END_TEST

/* ---- answered later
 * ------------------------------------------------------------------------------ */

START_TEST(protocol_answered_later_interleaved)
{
    /* world.step, engine.sprint and world.trace answer when done; requests
     * after them on the same connection are answered meanwhile, in order. */
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    tkit_sendf(
        c,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"world.step\",\"params\":{\"frames\":200}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"engine.info\"}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"engine.sprint\",\"params\":{\"frames\":300}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"world.status\"}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"world.trace\",\"params\":{\"frames\":16}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"level.list\"}\n");
    /* 2, 4 and 6 are answered at the frame boundary that took them all. */
    json_t *r2 = tkit_recv(c);
    ck_assert_msg(tkit_geti(r2, "id") == 2, "want 2, got %s", tkit_dump(r2));
    ck_assert_int_eq(tkit_geti(tkit_assert_result(r2), "protocol"), 1);
    json_t *r4 = tkit_recv(c);
    ck_assert_msg(tkit_geti(r4, "id") == 4, "want 4, got %s", tkit_dump(r4));
    ck_assert_msg(tkit_getb(tkit_assert_result(r4), "paused"), "%s", tkit_dump(r4));
    json_t *r6 = tkit_recv(c);
    ck_assert_msg(tkit_geti(r6, "id") == 6, "want 6, got %s", tkit_dump(r6));
    /* Then the three answered-later ones, whatever their order. */
    bool seen[3] = {false};
    for (int k = 0; k < 3; k++) {
        json_t *r = tkit_recv(c);
        long long id = tkit_geti(r, "id");
        json_t *res = tkit_assert_result(r);
        if (id == 1) {
            tkit_geti(res, "frame");
            seen[0] = true;
        } else if (id == 3) {
            ck_assert_int_eq(tkit_geti(res, "frames"), 300);
            seen[1] = true;
        } else if (id == 5) {
            ck_assert_int_eq(json_array_size(tkit_get(res, "frames")), 16);
            seen[2] = true;
        } else {
            ck_abort_msg("unexpected %s", tkit_dump(r));
        }
    }
    ck_assert(seen[0] && seen[1] && seen[2]);
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_answered_later_other_clients_flow)
{
    /* A pending step on one connection never holds back another's. */
    static const char *const cfg[] = {"engine.tick_rate=200", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *a = tkit_connect(d);
    tkit_conn *b = tkit_connect(d);
    tkit_ok(a, "world.pause", NULL);
    long long id = tkit_send_request(a, "world.step", "{\"frames\":100000}");
    for (int i = 0; i < 20; i++)
        tkit_ok(b, "world.status", NULL);
    ck_assert_msg(tkit_stashed(a) == 0 && tkit_quiet(a, 0.01), "the long step answered early");
    tkit_ok(a, "world.status", NULL); /* the same connection flows too */
    (void)id;
    tkit_finish(d);
}
END_TEST

/* ---- bad input ----------------------------------------------------------------------------- */

START_TEST(protocol_binary_junk_survived)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    enum { N = 65536 };
    unsigned char *junk = malloc(N);
    uint32_t x = 0x12345678u;
    for (size_t i = 0; i < N; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        junk[i] = (unsigned char)x;
    }
    junk[N - 1] = '\n';
    tkit_send_raw(c, junk, N);
    free(junk);
    tkit_sendf(c, "{\"jsonrpc\":\"2.0\",\"id\":\"after\",\"method\":\"engine.info\"}\n");
    int errors = 0;
    for (;;) {
        json_t *r = tkit_recv(c);
        json_t *id = json_object_get(r, "id");
        if (json_is_string(id) && strcmp(json_string_value(id), "after") == 0) {
            tkit_assert_result(r);
            break;
        }
        ck_assert_msg(json_object_get(r, "error"), "junk produced a non-error: %s", tkit_dump(r));
        errors++;
    }
    ck_assert_int_gt(errors, 0);
    assert_alive(d);
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_nul_and_control_bytes)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    static const char raw_nul[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"engine.info\0x\"}\n";
    tkit_send_raw(c, raw_nul, sizeof raw_nul - 1);
    json_t *r = tkit_recv(c);
    ck_assert_msg(json_object_get(r, "error"), "a raw NUL byte was accepted: %s", tkit_dump(r));
    /* An escaped NUL in a string is refused too (no string holds a NUL). */
    r = roundtrip(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"level.add\","
                     "\"params\":{\"name\":\"a\\u0000b\"}}");
    ck_assert_msg(json_object_get(r, "error"), "an escaped NUL was accepted: %s", tkit_dump(r));
    r = roundtrip(c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"engine.info\x01\"}");
    ck_assert_msg(json_object_get(r, "error"), "a control byte was accepted: %s", tkit_dump(r));
    json_t *levels = tkit_get(tkit_ok(c, "level.list", NULL), "levels");
    ck_assert_int_eq(json_array_size(levels), 1);
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_invalid_utf8)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    json_t *r = roundtrip(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"level.add\","
                             "\"params\":{\"name\":\"\xff\xfe\"}}");
    tkit_assert_error(r, TKIT_PARSE_ERROR, NULL);
    assert_id_null(r);
    /* Valid UTF-8 round-trips, also when quoted in an error message. */
    tkit_err(c, TKIT_INVALID_PARAMS, "\xd0\xb0\xd1\x80\xd0\xb5\xd0\xbd\xd0\xb0", "entity.spawn",
             "{\"class\":\"\xd0\xb0\xd1\x80\xd0\xb5\xd0\xbd\xd0\xb0\"}");
    ck_assert_int_eq(json_array_size(tkit_get(tkit_ok(c, "level.list", NULL), "levels")), 1);
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_deep_nesting_survived)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    enum { DEPTH = 200000 };
    char *buf = malloc(2 * DEPTH + 2);
    memset(buf, '[', DEPTH);
    memset(buf + DEPTH, ']', DEPTH);
    buf[2 * DEPTH] = '\n';
    tkit_send_raw(c, buf, 2 * DEPTH + 1);
    json_t *r = tkit_recv(c);
    ck_assert_msg(json_is_object(r) && json_object_get(r, "error"), "deep arrays -> %s",
                  tkit_dump(r));
    /* Deep params inside a valid envelope. */
    size_t n = 0;
    n += (size_t)sprintf(buf, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"entity.spawn\","
                              "\"params\":{\"class\":\"counter\",\"props\":");
    for (int i = 0; i < 5000; i++)
        n += (size_t)sprintf(buf + n, "{\"a\":");
    buf[n++] = '1';
    for (int i = 0; i < 5000; i++)
        buf[n++] = '}';
    n += (size_t)sprintf(buf + n, "}}\n");
    tkit_send_raw(c, buf, n);
    free(buf);
    r = tkit_recv(c);
    json_t *err = json_object_get(r, "error");
    ck_assert_msg(err, "deep params -> %s", tkit_dump(r));
    long long code = tkit_geti(err, "code");
    ck_assert_msg(code == TKIT_PARSE_ERROR || code == TKIT_INVALID_PARAMS ||
                      code == TKIT_INVALID_REQUEST,
                  "deep params -> %s", tkit_dump(r));
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 0);
    assert_alive(d);
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_duplicate_keys_refused)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    json_t *r = roundtrip(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"entity.spawn\","
                             "\"params\":{\"class\":\"counter\",\"count\":1,\"count\":500}}");
    ck_assert_msg(json_object_get(r, "error"), "duplicate keys accepted: %s", tkit_dump(r));
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 0);
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_large_valid_line)
{
    /* A line just under the default max_line (1 MiB) is served. */
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    enum { IDLEN = 1000000 };
    char *id = malloc(IDLEN + 1);
    memset(id, 'k', IDLEN);
    id[IDLEN] = '\0';
    tkit_sendf(c, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"engine.info\"}\n", id);
    json_t *r = tkit_recv(c);
    tkit_assert_result(r);
    ck_assert_msg(strcmp(tkit_gets(r, "id"), id) == 0, "the long id came back changed");
    free(id);
    tkit_finish(d);
}
END_TEST

START_TEST(protocol_counters_in_stats)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    json_t *s0 = tkit_ok(c, "engine.stats", NULL);
    long long req0 = tkit_geti(s0, "requests"), err0 = tkit_geti(s0, "errors");
    for (int i = 0; i < 5; i++)
        tkit_err(c, TKIT_METHOD_NOT_FOUND, NULL, "no.such", NULL);
    for (int i = 0; i < 5; i++)
        tkit_ok(c, "engine.info", NULL);
    json_t *s1 = tkit_ok(c, "engine.stats", NULL);
    ck_assert_int_ge(tkit_geti(s1, "requests") - req0, 11);
    ck_assert_int_ge(tkit_geti(s1, "errors") - err0, 5);
    ck_assert_int_ge(tkit_geti(s1, "clients"), 1);
    tkit_finish(d);
}
END_TEST

static Suite *protocol_suite(void)
{
    Suite *s = suite_create("protocol");
    TCase *tc = tcase_create("protocol");
    tcase_set_timeout(tc, tkit_scale(60));
    tcase_add_test(tc, protocol_one_line_one_response);
    tcase_add_test(tc, protocol_crlf_accepted);
    tcase_add_test(tc, protocol_split_writes);
    tcase_add_test(tc, protocol_pipelined_in_order);
    tcase_add_test(tc, protocol_empty_lines_ignored_or_answered);
    tcase_add_test(tc, protocol_parse_error);
    tcase_add_test(tc, protocol_invalid_request);
    tcase_add_test(tc, protocol_params_array_is_invalid_params);
    tcase_add_test(tc, protocol_method_not_found);
    tcase_add_test(tc, protocol_unknown_param_is_invalid_params);
    tcase_add_test(tc, protocol_ids_echoed);
    tcase_add_test(tc, protocol_notifications_get_no_response);
    tcase_add_test(tc, protocol_batch_empty);
    tcase_add_test(tc, protocol_batch_of_invalid);
    tcase_add_test(tc, protocol_batch_mixed);
    tcase_add_test(tc, protocol_batch_of_notifications_is_silent);
    tcase_add_test(tc, protocol_batch_limit);
    tcase_add_test(tc, protocol_batch_with_answered_later_member);
    tcase_add_test(tc, protocol_answered_later_interleaved);
    tcase_add_test(tc, protocol_answered_later_other_clients_flow);
    tcase_add_test(tc, protocol_binary_junk_survived);
    tcase_add_test(tc, protocol_nul_and_control_bytes);
    tcase_add_test(tc, protocol_invalid_utf8);
    tcase_add_test(tc, protocol_deep_nesting_survived);
    tcase_add_test(tc, protocol_duplicate_keys_refused);
    tcase_add_test(tc, protocol_large_valid_line);
    tcase_add_test(tc, protocol_counters_in_stats);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(protocol_suite); }
