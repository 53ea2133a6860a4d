/*
 * test_rpc.c - the JSON-RPC parser and message builders (src/daemon/rpc.c),
 * without sockets: every parse and envelope error code, ids, notifications,
 * batches, the nesting guard, and a deterministic mutation run that checks
 * the parser's invariants on thousands of malformed lines.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tickd/error.h"

#include "../../src/daemon/rpc.h"
#include "../check_main.h"

static tkd_rpc_msg parse(const char *s, size_t max_batch)
{
    tkd_rpc_msg m;
    tkd_rpc_parse_line(s, strlen(s), max_batch, &m);
    return m;
}

static int code_of(json_t *resp)
{
    ck_assert_ptr_nonnull(resp);
    ck_assert_str_eq(json_string_value(json_object_get(resp, "jsonrpc")), "2.0");
    json_t *err = json_object_get(resp, "error");
    ck_assert_ptr_nonnull(err);
    ck_assert_ptr_nonnull(json_string_value(json_object_get(err, "message")));
    return (int)json_integer_value(json_object_get(err, "code"));
}

static const char *message_of(json_t *resp)
{
    return json_string_value(json_object_get(json_object_get(resp, "error"), "message"));
}

/* The response's id serialized, e.g. "null", "7", "\"a\"". */
static char *id_text(json_t *resp)
{
    json_t *id = json_object_get(resp, "id");
    ck_assert_ptr_nonnull(id);
    return json_dumps(id, JSON_ENCODE_ANY);
}

START_TEST(rpc_valid_request)
{
    tkd_rpc_msg m = parse("{\"jsonrpc\":\"2.0\",\"method\":\"world.status\","
                          "\"params\":{\"a\":1},\"id\":7}",
                          8);
    ck_assert_ptr_null(m.error);
    ck_assert(!m.batch);
    ck_assert_uint_eq(m.count, 1);
    tkd_rpc_item *it = &m.items[0];
    ck_assert_ptr_null(it->error);
    ck_assert_str_eq(it->method, "world.status");
    ck_assert_int_eq(json_integer_value(it->id), 7);
    ck_assert_int_eq(json_integer_value(json_object_get(it->params, "a")), 1);
    tkd_rpc_msg_release(&m);

    m = parse("{\"method\":\"m\",\"jsonrpc\":\"2.0\",\"id\":1}", 8);
    ck_assert_ptr_null(m.items[0].error);
    ck_assert_ptr_null(m.items[0].params);
    tkd_rpc_msg_release(&m);
}
END_TEST

START_TEST(rpc_ids)
{
    tkd_rpc_msg m = parse("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":\"abc\"}", 8);
    ck_assert_str_eq(json_string_value(m.items[0].id), "abc");
    tkd_rpc_msg_release(&m);
    m = parse("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":2.5}", 8);
    ck_assert(json_is_real(m.items[0].id));
    tkd_rpc_msg_release(&m);
    m = parse("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":null}", 8);
    ck_assert_ptr_nonnull(m.items[0].id); /* a request with id null ... */
    ck_assert(json_is_null(m.items[0].id)); /* ... is not a notification */
    tkd_rpc_msg_release(&m);
    m = parse("{\"jsonrpc\":\"2.0\",\"method\":\"m\"}", 8);
    ck_assert_ptr_null(m.items[0].error);
    ck_assert_ptr_null(m.items[0].id); /* notification */
    tkd_rpc_msg_release(&m);
}
END_TEST

START_TEST(rpc_parse_errors)
{
    static const char *const bad[] = {
        "{",
        "nope",
        "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":1} trailing",
        "{\"jsonrpc\":\"2.0\",\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":1}",
        "\"\xc3\x28\"",
        "\xff\xfe\x01\x02",
        "[1,2",
        "{\"a\":}",
        "",
        "123456789012345678901234567890",
        "{\"jsonrpc\":\"2.0\",\"method\":\"m\\u0000x\",\"id\":6}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tkd_rpc_msg m = parse(bad[i], 8);
        ck_assert_msg(m.error != NULL, "input %zu parsed", i);
        ck_assert_int_eq(code_of(m.error), TKD_RPC_PARSE_ERROR);
        char *id = id_text(m.error);
        ck_assert_str_eq(id, "null");
        free(id);
        ck_assert_ptr_null(m.root);
        ck_assert_uint_eq(m.count, 0);
        /* the message quotes the input safely: it must serialize */
        char *s = json_dumps(m.error, JSON_COMPACT);
        ck_assert_ptr_nonnull(s);
        free(s);
        tkd_rpc_msg_release(&m);
    }
    /* NUL bytes inside the line (length-delimited, not a C string) */
    const char nul[] = "{\"jsonrpc\":\"2.0\",\0\"method\":\"m\"}";
    tkd_rpc_msg m;
    tkd_rpc_parse_line(nul, sizeof nul - 1, 8, &m);
    ck_assert_int_eq(code_of(m.error), TKD_RPC_PARSE_ERROR);
    tkd_rpc_msg_release(&m);
}
END_TEST

/* {"jsonrpc":"2.0","method":"m","id":1,"params":{"a":{"a":...}}} with
 * `depth` levels of objects in total. */
static char *nested_request(int depth)
{
    size_t cap = 64 + (size_t)depth * 8;
    char *s = malloc(cap);
    strcpy(s, "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":1,\"params\":");
    for (int i = 1; i < depth - 1; i++)
        strcat(s, "{\"a\":");
    strcat(s, "{}");
    for (int i = 1; i < depth - 1; i++)
        strcat(s, "}");
    strcat(s, "}");
    return s;
}

START_TEST(rpc_deep_nesting)
{
    size_t n = 100000;
    char *s = malloc(n + 1);
    memset(s, '[', n);
    s[n] = '\0';
    tkd_rpc_msg m = parse(s, 8);
    ck_assert_int_eq(code_of(m.error), TKD_RPC_PARSE_ERROR);
    ck_assert_ptr_nonnull(strstr(message_of(m.error), "nesting"));
    tkd_rpc_msg_release(&m);
    free(s);

    s = nested_request(TKD_RPC_MAX_DEPTH);
    m = parse(s, 8);
    ck_assert_ptr_null(m.error);
    ck_assert_ptr_null(m.items[0].error);
    tkd_rpc_msg_release(&m);
    free(s);

    s = nested_request(TKD_RPC_MAX_DEPTH + 1);
    m = parse(s, 8);
    ck_assert_int_eq(code_of(m.error), TKD_RPC_PARSE_ERROR);
    tkd_rpc_msg_release(&m);
    free(s);

    /* brackets inside strings (escaped quotes included) do not count */
    n = 5000;
    s = malloc(n + 128);
    strcpy(s, "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":1,\"params\":{\"s\":\"\\\"");
    size_t off = strlen(s);
    memset(s + off, '[', n);
    strcpy(s + off + n, "\"}}");
    m = parse(s, 8);
    ck_assert_ptr_null(m.error);
    ck_assert_ptr_null(m.items[0].error);
    tkd_rpc_msg_release(&m);
    free(s);
}
END_TEST

typedef struct envelope_case {
    const char *in;
    int code;
    const char *id; /* serialized id of the error, NULL: no response */
} envelope_case;

START_TEST(rpc_invalid_request)
{
    static const envelope_case cases[] = {
        {"5", TKD_RPC_INVALID_REQUEST, "null"},
        {"\"x\"", TKD_RPC_INVALID_REQUEST, "null"},
        {"null", TKD_RPC_INVALID_REQUEST, "null"},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":{}}", TKD_RPC_INVALID_REQUEST,
         "null"},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":true}", TKD_RPC_INVALID_REQUEST,
         "null"},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":[1]}", TKD_RPC_INVALID_REQUEST,
         "null"},
        {"{\"method\":\"m\",\"id\":1}", TKD_RPC_INVALID_REQUEST, "1"},
        {"{\"jsonrpc\":\"1.0\",\"method\":\"m\",\"id\":1}", TKD_RPC_INVALID_REQUEST, "1"},
        {"{\"jsonrpc\":2.0,\"method\":\"m\",\"id\":1}", TKD_RPC_INVALID_REQUEST, "1"},
        {"{\"jsonrpc\":\"2.0\",\"id\":\"a\"}", TKD_RPC_INVALID_REQUEST, "\"a\""},
        {"{\"jsonrpc\":\"2.0\",\"method\":5,\"id\":2}", TKD_RPC_INVALID_REQUEST, "2"},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":3,\"extra\":1}",
         TKD_RPC_INVALID_REQUEST, "3"},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":\"bar\",\"id\":4}",
         TKD_RPC_INVALID_REQUEST, "4"},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":null,\"id\":4}",
         TKD_RPC_INVALID_REQUEST, "4"},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":5}", TKD_RPC_INVALID_REQUEST,
         "null"},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":[1],\"id\":5}",
         TKD_RPC_INVALID_PARAMS, "5"},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":[],\"id\":\"p\"}",
         TKD_RPC_INVALID_PARAMS, "\"p\""},
        /* a notification with params an array: invalid, but never answered */
        {"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":[1]}", TKD_RPC_INVALID_PARAMS,
         NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tkd_rpc_msg m = parse(cases[i].in, 8);
        ck_assert_msg(m.error == NULL, "case %zu: whole-line error", i);
        ck_assert_uint_eq(m.count, 1);
        tkd_rpc_item *it = &m.items[0];
        ck_assert_msg(it->error != NULL, "case %zu accepted", i);
        ck_assert_msg(code_of(it->error) == cases[i].code, "case %zu: code %d", i,
                      code_of(it->error));
        ck_assert_ptr_null(it->method);
        if (cases[i].id) {
            ck_assert_msg(!it->silent, "case %zu silent", i);
            char *id = id_text(it->error);
            ck_assert_msg(strcmp(id, cases[i].id) == 0, "case %zu: id %s", i, id);
            free(id);
        } else {
            ck_assert(it->silent);
        }
        tkd_rpc_msg_release(&m);
    }
    tkd_rpc_msg m = parse("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":[],\"id\":1}",
                          8);
    ck_assert_str_eq(message_of(m.items[0].error), "params must be an object");
    tkd_rpc_msg_release(&m);
}
END_TEST

START_TEST(rpc_batch_empty)
{
    tkd_rpc_msg m = parse("[]", 8);
    ck_assert(m.batch);
    ck_assert_int_eq(code_of(m.error), TKD_RPC_INVALID_REQUEST);
    ck_assert(json_is_object(m.error));
    ck_assert_uint_eq(m.count, 0);
    tkd_rpc_msg_release(&m);
    m = parse(" [ ] ", 8);
    ck_assert_int_eq(code_of(m.error), TKD_RPC_INVALID_REQUEST);
    tkd_rpc_msg_release(&m);
}
END_TEST

START_TEST(rpc_batch_invalid_members)
{
    tkd_rpc_msg m = parse("[1,2]", 8);
    ck_assert_ptr_null(m.error);
    ck_assert(m.batch);
    ck_assert_uint_eq(m.count, 2);
    for (size_t i = 0; i < 2; i++) {
        ck_assert_int_eq(code_of(m.items[i].error), TKD_RPC_INVALID_REQUEST);
        ck_assert(json_is_null(json_object_get(m.items[i].error, "id")));
    }
    tkd_rpc_msg_release(&m);
    /* a nested batch is not a request */
    m = parse("[[{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":1}]]", 8);
    ck_assert_uint_eq(m.count, 1);
    ck_assert_int_eq(code_of(m.items[0].error), TKD_RPC_INVALID_REQUEST);
    tkd_rpc_msg_release(&m);
}
END_TEST

START_TEST(rpc_batch_mixed)
{
    tkd_rpc_msg m = parse("[{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"id\":1},"
                          "{\"jsonrpc\":\"2.0\",\"method\":\"b\"},"
                          "3,"
                          "{\"jsonrpc\":\"2.0\",\"method\":\"c\",\"params\":[],\"id\":9},"
                          "{\"jsonrpc\":\"2.0\",\"method\":\"d\",\"params\":[]}]",
                          8);
    ck_assert_ptr_null(m.error);
    ck_assert_uint_eq(m.count, 5);
    ck_assert_str_eq(m.items[0].method, "a");
    ck_assert_int_eq(json_integer_value(m.items[0].id), 1);
    ck_assert_str_eq(m.items[1].method, "b");
    ck_assert_ptr_null(m.items[1].id);
    ck_assert_int_eq(code_of(m.items[2].error), TKD_RPC_INVALID_REQUEST);
    ck_assert_int_eq(code_of(m.items[3].error), TKD_RPC_INVALID_PARAMS);
    ck_assert(!m.items[3].silent);
    ck_assert(m.items[4].silent);
    tkd_rpc_msg_release(&m);
}
END_TEST

START_TEST(rpc_batch_over_limit)
{
    const char *req = "{\"jsonrpc\":\"2.0\",\"method\":\"m\"}";
    char line[1024] = "[";
    for (int i = 0; i < 5; i++) {
        strcat(line, req);
        strcat(line, i < 4 ? "," : "]");
    }
    tkd_rpc_msg m = parse(line, 4);
    ck_assert_int_eq(code_of(m.error), TKD_RPC_LIMIT);
    ck_assert(json_is_null(json_object_get(m.error, "id")));
    ck_assert_ptr_nonnull(strstr(message_of(m.error), "5"));
    tkd_rpc_msg_release(&m);
    m = parse(line, 5);
    ck_assert_ptr_null(m.error);
    ck_assert_uint_eq(m.count, 5);
    tkd_rpc_msg_release(&m);
}
END_TEST

START_TEST(rpc_builders)
{
    json_t *id = json_string("x");
    json_t *r = tkd_rpc_result(id, NULL);
    ck_assert(json_is_object(json_object_get(r, "result")));
    ck_assert_uint_eq(json_object_size(json_object_get(r, "result")), 0);
    ck_assert_str_eq(json_string_value(json_object_get(r, "id")), "x");
    ck_assert_str_eq(json_string_value(json_object_get(r, "jsonrpc")), "2.0");
    json_decref(r);

    r = tkd_rpc_result(NULL, json_integer(5));
    ck_assert(json_is_null(json_object_get(r, "id")));
    ck_assert_int_eq(json_integer_value(json_object_get(r, "result")), 5);
    json_decref(r);

    r = tkd_rpc_error(id, TKD_RPC_NOT_FOUND, json_pack("{s:i}", "id", 3),
                      "entity %d not found", 3);
    ck_assert_int_eq(code_of(r), TKD_RPC_NOT_FOUND);
    ck_assert_str_eq(message_of(r), "entity 3 not found");
    json_t *data = json_object_get(json_object_get(r, "error"), "data");
    ck_assert_int_eq(json_integer_value(json_object_get(data, "id")), 3);
    json_decref(r);

    /* no data member when none is given; bad UTF-8 in the message survives */
    r = tkd_rpc_error(NULL, TKD_RPC_METHOD_NOT_FOUND, NULL, "method not found: %s",
                      "a\xff\xc3");
    ck_assert_ptr_null(json_object_get(json_object_get(r, "error"), "data"));
    ck_assert_str_eq(message_of(r), "method not found: a??");
    json_decref(r);
    r = tkd_rpc_error(NULL, TKD_RPC_METHOD_NOT_FOUND, NULL, "%s", "caf\xc3\xa9");
    ck_assert_str_eq(message_of(r), "caf\xc3\xa9");
    json_decref(r);

    r = tkd_rpc_notification("event.frame", json_pack("{s:i}", "frame", 12));
    ck_assert_str_eq(json_string_value(json_object_get(r, "method")), "event.frame");
    ck_assert_ptr_null(json_object_get(r, "id"));
    ck_assert_int_eq(json_integer_value(
                         json_object_get(json_object_get(r, "params"), "frame")),
                     12);
    json_decref(r);
    r = tkd_rpc_notification("event.log", NULL);
    ck_assert_ptr_null(json_object_get(r, "params"));
    json_decref(r);
    json_decref(id);
}
END_TEST

START_TEST(rpc_code_mapping)
{
    ck_assert_int_eq(tkd_rpc_code_from_tk(TK_EINVAL), -32602);
    ck_assert_int_eq(tkd_rpc_code_from_tk(TK_ENOENT), -32001);
    ck_assert_int_eq(tkd_rpc_code_from_tk(TK_ESTATE), -32002);
    ck_assert_int_eq(tkd_rpc_code_from_tk(TK_EEXIST), -32002);
    ck_assert_int_eq(tkd_rpc_code_from_tk(TK_ELIMIT), -32003);
    ck_assert_int_eq(tkd_rpc_code_from_tk(TK_ENOMEM), -32603);
    ck_assert_int_eq(tkd_rpc_code_from_tk(TK_EIO), -32603);
}
END_TEST

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static bool known_code(int code)
{
    return code == TKD_RPC_PARSE_ERROR || code == TKD_RPC_INVALID_REQUEST ||
           code == TKD_RPC_INVALID_PARAMS || code == TKD_RPC_LIMIT;
}

/*
 * Mutations of valid lines (byte flips, insertions of JSON punctuation,
 * truncations, splices) must always give exactly one of: a line error, or
 * items each valid or carrying an error with a known code; and every
 * response must serialize.  ASan/UBSan runs make this a crash check too.
 */
START_TEST(rpc_mutation_invariants)
{
    static const char *const seeds[] = {
        "{\"jsonrpc\":\"2.0\",\"method\":\"entity.spawn\",\"params\":{\"class\":"
        "\"mover\",\"count\":3,\"tick\":{\"group\":\"pre_physics\"}},\"id\":1}",
        "[{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"id\":\"x\"},{\"jsonrpc\":\"2.0\","
        "\"method\":\"b\",\"params\":{\"l\":[1,2,{\"q\":null}]}}]",
        "{\"jsonrpc\":\"2.0\",\"method\":\"s\",\"params\":{\"t\":\"\\u00e9\\\"\"},"
        "\"id\":null}",
    };
    static const char punct[] = "{}[]\",:\\ 0-e.tfn\xff\x80";
    char buf[512];
    for (int iter = 0; iter < 20000; iter++) {
        const char *seed = seeds[rng() % 3];
        size_t len = strlen(seed);
        memcpy(buf, seed, len);
        int muts = 1 + (int)(rng() % 4);
        for (int k = 0; k < muts; k++) {
            size_t pos = len ? (size_t)(rng() % len) : 0;
            switch (rng() % 4) {
            case 0:
                buf[pos] = (char)(rng() & 0xff);
                break;
            case 1:
                if (len < sizeof buf - 1) {
                    memmove(buf + pos + 1, buf + pos, len - pos);
                    buf[pos] = punct[rng() % (sizeof punct - 1)];
                    len++;
                }
                break;
            case 2:
                len = pos;
                break;
            default:
                if (len > pos + 1) {
                    memmove(buf + pos, buf + pos + 1, len - pos - 1);
                    len--;
                }
                break;
            }
        }
        tkd_rpc_msg m;
        tkd_rpc_parse_line(buf, len, 4, &m);
        if (m.error) {
            ck_assert_uint_eq(m.count, 0);
            ck_assert_ptr_null(m.root);
            ck_assert(known_code(code_of(m.error)));
            char *s = json_dumps(m.error, JSON_COMPACT);
            ck_assert_ptr_nonnull(s);
            free(s);
        } else {
            ck_assert_uint_ge(m.count, 1);
            ck_assert_ptr_nonnull(m.root);
            for (size_t i = 0; i < m.count; i++) {
                tkd_rpc_item *it = &m.items[i];
                if (it->error) {
                    ck_assert(known_code(code_of(it->error)));
                    ck_assert_ptr_null(it->method);
                    char *s = json_dumps(it->error, JSON_COMPACT);
                    ck_assert_ptr_nonnull(s);
                    free(s);
                } else {
                    ck_assert_ptr_nonnull(it->method);
                    ck_assert(!it->params || json_is_object(it->params));
                }
            }
        }
        tkd_rpc_msg_release(&m);
    }
}
END_TEST

static Suite *rpc_suite(void)
{
    Suite *s = suite_create("rpc");
    TCase *tc = tcase_create("rpc");
    tcase_add_test(tc, rpc_valid_request);
    tcase_add_test(tc, rpc_ids);
    tcase_add_test(tc, rpc_parse_errors);
    tcase_add_test(tc, rpc_deep_nesting);
    tcase_add_test(tc, rpc_invalid_request);
    tcase_add_test(tc, rpc_batch_empty);
    tcase_add_test(tc, rpc_batch_invalid_members);
    tcase_add_test(tc, rpc_batch_mixed);
    tcase_add_test(tc, rpc_batch_over_limit);
    tcase_add_test(tc, rpc_builders);
    tcase_add_test(tc, rpc_code_mapping);
    tcase_add_test(tc, rpc_mutation_invariants);
    suite_add_tcase(s, tc);
    return s;
}

TK_CHECK_MAIN(rpc_suite)
