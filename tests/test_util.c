/*
 * test_util.c - the small core modules: the error list, the log handler and
 * levels, the allocator's fault injection, and the clock helpers.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tickd/tickd.h"
#include "check_main.h"

START_TEST(util_error_list)
{
    ck_assert_str_eq(tk_strerror(TK_OK), "success");
    ck_assert_str_eq(tk_strerror(TK_EINVAL), "invalid argument");
    ck_assert_str_eq(tk_strerror(TK_ENOENT), "not found");
    ck_assert_str_eq(tk_strerror(TK_ESTATE), "invalid state");
    ck_assert_str_eq(tk_strerror(TK_ELIMIT), "limit exceeded");
    ck_assert_str_eq(tk_strerror(-999), "unknown error");
    ck_assert_str_eq(tk_errname(TK_EEXIST), "EEXIST");
    ck_assert_str_eq(tk_errname(0), "OK");
    ck_assert_str_eq(tk_errname(12345), "EUNKNOWN");
}
END_TEST

static int g_calls;
static tk_log_level g_level;
static char g_msg[256];

static void capture(void *ud, tk_log_level level, const char *msg)
{
    (void)ud;
    g_calls++;
    g_level = level;
    snprintf(g_msg, sizeof g_msg, "%s", msg);
}

START_TEST(util_log_levels_and_handler)
{
    tk_log_set_handler(capture, NULL);
    tk_log_set_level(TK_LOG_WARN);
    g_calls = 0;
    tk_log_info("dropped %d", 1);
    tk_log_debug("dropped too");
    ck_assert_int_eq(g_calls, 0);
    tk_log_warn("kept %d", 2);
    ck_assert_int_eq(g_calls, 1);
    ck_assert_int_eq(g_level, TK_LOG_WARN);
    ck_assert_str_eq(g_msg, "kept 2");
    tk_log_error("error %s", "x");
    ck_assert_int_eq(g_calls, 2);
    tk_log_level l;
    ck_assert_int_eq(tk_log_level_parse("debug", &l), 0);
    ck_assert_int_eq(l, TK_LOG_DEBUG);
    ck_assert_int_eq(tk_log_level_parse("warning", &l), 0);
    ck_assert_int_eq(l, TK_LOG_WARN);
    ck_assert_int_eq(tk_log_level_parse("loud", &l), TK_EINVAL);
    ck_assert_str_eq(tk_log_level_name(TK_LOG_INFO), "info");
    tk_log_set_level((tk_log_level)42); /* ignored */
    ck_assert_int_eq(tk_log_get_level(), TK_LOG_WARN);
    tk_log_set_handler(NULL, NULL);
    tk_log_set_level(TK_LOG_INFO);
}
END_TEST

START_TEST(util_alloc_fault_injection)
{
    void *p = tk_try_malloc(16);
    ck_assert_ptr_nonnull(p);
    tk_free(p);
    tk_alloc_fail_after(2);
    p = tk_try_malloc(16);
    ck_assert_ptr_nonnull(p); /* the first one still succeeds */
    ck_assert_ptr_null(tk_try_calloc(4, 4));
    void *q = tk_try_realloc(p, 64); /* disarmed again */
    ck_assert_ptr_nonnull(q);
    tk_free(q);
    char *s = tk_strdup("tickd");
    ck_assert_str_eq(s, "tickd");
    tk_free(s);
    tk_free(NULL);
}
END_TEST

START_TEST(util_clock)
{
    ck_assert_uint_eq(tk_s_to_ns(1.5), 1500000000ull);
    ck_assert_uint_eq(tk_s_to_ns(-1), 0);
    ck_assert_uint_eq(tk_s_to_ns(NAN), 0);
    ck_assert_uint_eq(tk_s_to_ns(1e-9), 1);
    ck_assert_double_eq(tk_ns_to_s(250000000ull), 0.25);
    uint64_t a = tk_clock_now_ns(), b = tk_clock_now_ns();
    ck_assert_uint_ge(b, a);
    /* A deadline in the past returns at once. */
    tk_clock_sleep_until(a, 0);
    ck_assert_uint_ge(tk_clock_now_ns(), a);
}
END_TEST

static Suite *util_suite(void)
{
    Suite *s = suite_create("util");
    TCase *tc = tcase_create("util");
    tcase_add_test(tc, util_error_list);
    tcase_add_test(tc, util_log_levels_and_handler);
    tcase_add_test(tc, util_alloc_fault_injection);
    tcase_add_test(tc, util_clock);
    suite_add_tcase(s, tc);
    return s;
}

TK_CHECK_MAIN(util_suite)
