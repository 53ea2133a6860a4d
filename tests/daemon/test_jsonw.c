/*
 * test_jsonw.c - the daemon's JSON writer (src/daemon/jsonw.c): shortest
 * round-trip reals, and byte-for-byte agreement with jansson's json_dumps
 * for every value that holds no real.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/daemon/jsonw.h"
#include "../check_main.h"

static void real_is(double d, const char *want)
{
    char buf[TKD_JSONW_REAL_MAX];
    size_t n = tkd_jsonw_real(buf, d);
    ck_assert_uint_eq(n, strlen(buf));
    ck_assert_msg(!strcmp(buf, want), "%.17g: got %s, want %s", d, buf, want);
}

START_TEST(jsonw_real_shortest)
{
    real_is(0.1, "0.1");
    real_is(0.3, "0.3");
    real_is(0.1 + 0.2, "0.30000000000000004");
    real_is(1e300, "1e300");
    real_is(-1e300, "-1e300");
    real_is(1e-5, "1e-5");
    real_is(1.5e-7, "1.5e-7");
    real_is(2.0, "2.0");
    real_is(-0.0, "-0.0");
    real_is(0.0, "0.0");
    real_is(100.0, "100.0");
    real_is(12.3, "12.3");
    real_is(1e15, "1e15");
    real_is(123456789012345.0, "123456789012345.0");
    real_is(59.372455801311894, "59.372455801311894");
    real_is(DBL_MAX, "1.7976931348623157e308");
    /* Subnormals hold fewer digits: %.15g already reads back. */
    real_is(5e-324, "4.94065645841247e-324");
    real_is(1.0 / 3.0, "0.3333333333333333");
    real_is(NAN, "null");
}
END_TEST

/* xorshift64*: a fixed sequence, so a failure reproduces. */
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_u64(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ull;
}

/* Significant digits of a real's text (mantissa digits, leading zeros and
 * the ".0" of an integral value aside). */
static int sig_digits(const char *s)
{
    int n = 0, lead = 1;
    for (; *s && *s != 'e'; s++) {
        if (*s < '0' || *s > '9')
            continue;
        if (lead && *s == '0')
            continue;
        lead = 0;
        n++;
    }
    return n;
}

/* Fewer under the sanitizers, which make each strtod ten times slower. */
#if defined(__SANITIZE_ADDRESS__)
#define ROUNDTRIPS 50000
#else
#define ROUNDTRIPS 200000
#endif

START_TEST(jsonw_real_roundtrip_random)
{
    for (int i = 0; i < ROUNDTRIPS; i++) {
        double d;
        if (i % 2) {
            uint64_t bits = next_u64();
            memcpy(&d, &bits, sizeof d);
            if (!isfinite(d))
                continue;
        } else {
            /* Values of everyday size, e.g. times and rates. */
            d = (double)(next_u64() >> 11) / (double)(1ull << 53) * pow(10, (int)(i % 13) - 4);
        }
        char buf[TKD_JSONW_REAL_MAX];
        tkd_jsonw_real(buf, d);
        ck_assert_msg(strtod(buf, NULL) == d && signbit(strtod(buf, NULL)) == signbit(d),
                      "%s does not read back as %.17g", buf, d);
        ck_assert_msg(strpbrk(buf, ".e") != NULL, "%s would read back as an integer", buf);
        /* Never longer than jansson's %.17g, and identical to it when it
         * needs all 17 digits. */
        json_t *r = json_real(d);
        char *j = json_dumps(r, JSON_ENCODE_ANY);
        json_decref(r);
        ck_assert_int_le(sig_digits(buf), sig_digits(j));
        if (sig_digits(buf) == 17 && strchr(j, 'e') == NULL && strchr(buf, 'e') == NULL)
            ck_assert_str_eq(buf, j);
        free(j);
    }
}
END_TEST

/* tkd_jsonw_dump and json_dumps agree on `v` (stolen) under `flags`. */
static void same_as_jansson(json_t *v, size_t flags)
{
    char *want = json_dumps(v, flags);
    size_t len = 0;
    char *got = tkd_jsonw_dump(v, flags, &len);
    ck_assert_ptr_nonnull(want);
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, want);
    ck_assert_uint_eq(len, strlen(want));
    tkd_jsonw_free(got);
    free(want);
    json_decref(v);
}

START_TEST(jsonw_matches_jansson_strings)
{
    static const char *const samples[] = {
        "", "plain", "a\"b", "back\\slash", "a/b", "</script>", "\b\f\n\r\t",
        "\x01\x02\x1f\x7f", "caf\xc3\xa9", "\xe2\x82\xac uro", "\xf0\x9f\x98\x80 smile",
        "mixed \"\xe2\x82\xac\"\n/\\",
    };
    static const size_t flags[] = {
        JSON_COMPACT | JSON_ENCODE_ANY,
        JSON_COMPACT | JSON_ENCODE_ANY | JSON_ESCAPE_SLASH,
        JSON_COMPACT | JSON_ENCODE_ANY | JSON_ENSURE_ASCII,
        JSON_COMPACT | JSON_ENCODE_ANY | JSON_ENSURE_ASCII | JSON_ESCAPE_SLASH,
    };
    for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++) {
        for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++)
            same_as_jansson(json_string(samples[i]), flags[f]);
        same_as_jansson(json_stringn("nul\0inside", 10), flags[f]);
    }
}
END_TEST

START_TEST(jsonw_matches_jansson_trees)
{
    json_t *o = json_object();
    json_object_set_new(o, "zeta", json_integer(INT64_MIN));
    json_object_set_new(o, "alpha", json_integer(INT64_MAX));
    json_object_set_new(o, "m\xc3\xa9", json_integer(0));
    json_object_set_new(o, "list", json_pack("[i,s,b,b,n,[],{},[[]]]", -7, "x", 1, 0));
    json_object_set_new(o, "nested", json_pack("{s:{s:[i,i]},s:s}", "a", "b", 1, 2, "c", "\n"));
    json_object_set_new(o, "ab", json_null());
    json_object_set_new(o, "a", json_true());
    same_as_jansson(json_incref(o), JSON_COMPACT);
    same_as_jansson(json_incref(o), JSON_COMPACT | JSON_PRESERVE_ORDER);
    same_as_jansson(json_incref(o), JSON_COMPACT | JSON_SORT_KEYS);
    same_as_jansson(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
    same_as_jansson(json_array(), JSON_COMPACT);
    same_as_jansson(json_object(), JSON_COMPACT);
    same_as_jansson(json_integer(42), JSON_COMPACT | JSON_ENCODE_ANY);
    same_as_jansson(json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
    same_as_jansson(json_false(), JSON_COMPACT | JSON_ENCODE_ANY);

    /* A big tree: a typical entity.list-like reply. */
    json_t *ids = json_array();
    for (int i = 0; i < 5000; i++)
        json_array_append_new(ids, json_integer(i * 7919));
    same_as_jansson(json_pack("{s:s,s:{s:i,s:o},s:i}", "jsonrpc", "2.0", "result", "total",
                              5000, "ids", ids, "id", 3),
                    JSON_COMPACT);
}
END_TEST

START_TEST(jsonw_reals_in_trees)
{
    json_t *o = json_pack("{s:f,s:f,s:[f,f],s:i}", "vx", 0.1, "value", 0.3, "a", 1e300, 2.0,
                          "n", 3);
    char *s = tkd_jsonw_dump(o, JSON_COMPACT, NULL);
    ck_assert_str_eq(s, "{\"vx\":0.1,\"value\":0.3,\"a\":[1e300,2.0],\"n\":3}");
    /* It reads back to the same values, reals as reals. */
    json_t *back = json_loads(s, 0, NULL);
    ck_assert(json_equal(back, o));
    ck_assert(json_is_real(json_array_get(json_object_get(back, "a"), 1)));
    json_decref(back);
    tkd_jsonw_free(s);
    json_decref(o);
}
END_TEST

START_TEST(jsonw_refuses_what_jansson_refuses)
{
    /* Invalid UTF-8 (json_stringn_nocheck skips jansson's check). */
    json_t *bad = json_pack("{s:o}", "k", json_stringn_nocheck("a\xff", 2));
    ck_assert_ptr_null(json_dumps(bad, JSON_COMPACT));
    ck_assert_ptr_null(tkd_jsonw_dump(bad, JSON_COMPACT, NULL));
    json_decref(bad);
    static const char *const invalid[] = {"\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                                          "\xe2\x82", "\x80"};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        json_t *s = json_stringn_nocheck(invalid[i], strlen(invalid[i]));
        ck_assert_ptr_null(json_dumps(s, JSON_ENCODE_ANY | JSON_COMPACT));
        ck_assert_ptr_null(tkd_jsonw_dump(s, JSON_ENCODE_ANY | JSON_COMPACT, NULL));
        json_decref(s);
    }
    /* A scalar without JSON_ENCODE_ANY; anything without JSON_COMPACT. */
    json_t *i = json_integer(1);
    ck_assert_ptr_null(tkd_jsonw_dump(i, JSON_COMPACT, NULL));
    json_decref(i);
    json_t *o = json_object();
    ck_assert_ptr_null(tkd_jsonw_dump(o, 0, NULL));
    ck_assert_ptr_null(tkd_jsonw_dump(NULL, JSON_COMPACT, NULL));
    json_decref(o);
    tkd_jsonw_free(NULL);
}
END_TEST

static Suite *jsonw_suite(void)
{
    Suite *s = suite_create("jsonw");
    TCase *tc = tcase_create("jsonw");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, jsonw_real_shortest);
    tcase_add_test(tc, jsonw_real_roundtrip_random);
    tcase_add_test(tc, jsonw_matches_jansson_strings);
    tcase_add_test(tc, jsonw_matches_jansson_trees);
    tcase_add_test(tc, jsonw_reals_in_trees);
    tcase_add_test(tc, jsonw_refuses_what_jansson_refuses);
    suite_add_tcase(s, tc);
    return s;
}

TK_CHECK_MAIN(jsonw_suite)
