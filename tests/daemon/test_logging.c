/*
 * test_logging.c - suite "logging": the daemon's log formats (journal prefix
 * and timestamped), journal detection, the level filter, newline splitting,
 * the forward hook and its recursion guard, and the rate limiter.
 *
 * Output tests point stderr at a pipe for the duration of one call and read
 * back what the handler wrote.  Each test runs in its own forked process
 * (check's fork mode), so redirecting stderr and setting JOURNAL_STREAM
 * there leaves nothing behind.
 */
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/daemon/logging.h"
#include "tickd/log.h"
#include "../check_main.h"

/* 2026-11-21T22:37:59Z */
#define T_2026_11_21 1795300679

static int g_pipe[2] = {-1, -1};   /* stderr is redirected to g_pipe[1]       */
static int g_saved_stderr = -1;    /* the real stderr meanwhile               */

/* Point stderr at a fresh pipe. */
static void capture_begin(void)
{
    ck_assert_int_eq(pipe(g_pipe), 0);
    g_saved_stderr = dup(STDERR_FILENO);
    ck_assert_int_ge(g_saved_stderr, 0);
    ck_assert_int_ge(dup2(g_pipe[1], STDERR_FILENO), 0);
}

/* Restore stderr and return what was written (caller frees). */
static char *capture_end(void)
{
    ck_assert_int_ge(dup2(g_saved_stderr, STDERR_FILENO), 0);
    close(g_saved_stderr);
    close(g_pipe[1]);
    size_t cap = 65536, len = 0;
    char *out = malloc(cap);
    ck_assert_ptr_nonnull(out);
    for (;;) {
        if (len + 1 >= cap) {
            cap *= 2;
            out = realloc(out, cap);
            ck_assert_ptr_nonnull(out);
        }
        ssize_t n = read(g_pipe[0], out + len, cap - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(g_pipe[0]);
    out[len] = '\0';
    return out;
}

/* Set JOURNAL_STREAM to the device:inode of `fd`. */
static void set_journal_stream(int fd)
{
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    char v[64];
    snprintf(v, sizeof v, "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
    ck_assert_int_eq(setenv("JOURNAL_STREAM", v, 1), 0);
}

static void setup(void)
{
    unsetenv("JOURNAL_STREAM");
    tk_log_set_level(TK_LOG_DEBUG);
}

static void teardown(void)
{
    tkd_logging_shutdown();
}

/* ---- formats ---------------------------------------------------------- */


static int g_emits;
static unsigned long g_emitted;
static char g_sample[TKD_LOGFLOOD_SAMPLE];

static void on_emit(void *ud, tk_log_level level, unsigned long n, double window_s,
                    const char *sample)
{
    (void)ud;
    (void)level;
    (void)window_s;
    g_emits++;
    g_emitted += n;
    snprintf(g_sample, sizeof g_sample, "%s", sample);
}

START_TEST(logging_flood_limits_similar_messages)
{
    static tkd_logflood f;
    memset(&f, 0, sizeof f);
    g_emits = 0;
    g_emitted = 0;
    int allowed = 0;
    char msg[128];
    for (int i = 0; i < 1000; i++) {
        /* numbers differ: still the same message */
        snprintf(msg, sizeof msg, "client %d: timer action failed (%d)", i, i * 7);
        allowed += tkd_logflood_allow(&f, TK_LOG_WARN, msg, 100.0 + i * 0.001, on_emit, NULL);
    }
    ck_assert_int_eq(allowed, TKD_LOGFLOOD_BURST);
    ck_assert_int_eq(g_emits, 0);
    /* another message is not held back by the first */
    ck_assert(tkd_logflood_allow(&f, TK_LOG_WARN, "something else", 101.0, on_emit, NULL));
    /* debug is never limited */
    for (int i = 0; i < 100; i++)
        ck_assert(tkd_logflood_allow(&f, TK_LOG_DEBUG, "debug", 101.0, on_emit, NULL));
    /* before the window ends, a flush says nothing */
    ck_assert_uint_eq(tkd_logflood_flush(&f, 104.0, on_emit, NULL), 0);
    /* after it, one summary with the count and the last text */
    ck_assert_uint_eq(tkd_logflood_flush(&f, 105.5, on_emit, NULL), 1);
    ck_assert_int_eq(g_emits, 1);
    ck_assert_uint_eq(g_emitted, 1000 - TKD_LOGFLOOD_BURST);
    ck_assert_str_eq(g_sample, "client 999: timer action failed (6993)");
    /* a new window allows a new burst */
    ck_assert(tkd_logflood_allow(&f, TK_LOG_WARN, "client 1: timer action failed (2)", 106.0,
                                 on_emit, NULL));
}
END_TEST

START_TEST(logging_flood_summary_on_next_window)
{
    static tkd_logflood f;
    memset(&f, 0, sizeof f);
    g_emits = 0;
    g_emitted = 0;
    for (int i = 0; i < TKD_LOGFLOOD_BURST + 5; i++)
        tkd_logflood_allow(&f, TK_LOG_ERROR, "disk full", 10.0, on_emit, NULL);
    /* the next message after the window reports the suppressed ones first */
    ck_assert(tkd_logflood_allow(&f, TK_LOG_ERROR, "disk full", 20.0, on_emit, NULL));
    ck_assert_int_eq(g_emits, 1);
    ck_assert_uint_eq(g_emitted, 5);
    /* more keys than the table holds: the oldest is replaced, its count reported */
    for (int k = 0; k < TKD_LOGFLOOD_KEYS + 4; k++) {
        char m[32];
        snprintf(m, sizeof m, "key %c%c", 'a' + k % 26, 'a' + k / 26);
        for (int i = 0; i < TKD_LOGFLOOD_BURST + 1; i++)
            tkd_logflood_allow(&f, TK_LOG_WARN, m, 30.0 + k, on_emit, NULL);
    }
    ck_assert_int_ge(g_emits, 1 + 4);
}
END_TEST

START_TEST(logging_format_plain)
{
    struct timespec ts = {T_2026_11_21, 123456789};
    char buf[256];
    size_t n = tkd_logging_format(buf, sizeof buf, TK_LOG_WARN, "message",
                                  false, &ts);
    ck_assert_str_eq(buf, "2026-11-21T22:37:59.123Z warn: message\n");
    ck_assert_uint_eq(n, strlen(buf));
    ts.tv_nsec = 999999;
    tkd_logging_format(buf, sizeof buf, TK_LOG_DEBUG, "x", false, &ts);
    ck_assert_str_eq(buf, "2026-11-21T22:37:59.000Z debug: x\n");
    tkd_logging_format(buf, sizeof buf, TK_LOG_ERROR, "x", false, &ts);
    ck_assert_str_eq(buf, "2026-11-21T22:37:59.000Z error: x\n");
    tkd_logging_format(buf, sizeof buf, TK_LOG_INFO, "x", false, &ts);
    ck_assert_str_eq(buf, "2026-11-21T22:37:59.000Z info: x\n");
}
END_TEST

START_TEST(logging_format_journal)
{
    char buf[256];
    tkd_logging_format(buf, sizeof buf, TK_LOG_ERROR, "e", true, NULL);
    ck_assert_str_eq(buf, "<3>e\n");
    tkd_logging_format(buf, sizeof buf, TK_LOG_WARN, "w", true, NULL);
    ck_assert_str_eq(buf, "<4>w\n");
    tkd_logging_format(buf, sizeof buf, TK_LOG_INFO, "i", true, NULL);
    ck_assert_str_eq(buf, "<6>i\n");
    tkd_logging_format(buf, sizeof buf, TK_LOG_DEBUG, "d", true, NULL);
    ck_assert_str_eq(buf, "<7>d\n");
}
END_TEST

/* [instance] name follows the level on every line, in both formats, and
 * goes away again with shutdown. */
START_TEST(logging_format_instance_name)
{
    struct timespec ts = {T_2026_11_21, 123456789};
    char buf[256];
    tkd_logging_set_name("alpha");
    tkd_logging_format(buf, sizeof buf, TK_LOG_WARN, "one\ntwo", false, &ts);
    ck_assert_str_eq(buf, "2026-11-21T22:37:59.123Z warn: alpha: one\n"
                          "2026-11-21T22:37:59.123Z warn: alpha: two\n");
    tkd_logging_format(buf, sizeof buf, TK_LOG_ERROR, "e", true, NULL);
    ck_assert_str_eq(buf, "<3>alpha: e\n");
    tkd_logging_set_name("");
    tkd_logging_format(buf, sizeof buf, TK_LOG_ERROR, "e", true, NULL);
    ck_assert_str_eq(buf, "<3>e\n");
    tkd_logging_set_name("beta");
    tkd_logging_shutdown();
    tkd_logging_format(buf, sizeof buf, TK_LOG_INFO, "i", true, NULL);
    ck_assert_str_eq(buf, "<6>i\n");
}
END_TEST

START_TEST(logging_newline_split)
{
    char buf[256];
    tkd_logging_format(buf, sizeof buf, TK_LOG_WARN, "a\nb\r\n\nc\n", true,
                       NULL);
    ck_assert_str_eq(buf, "<4>a\n<4>b\n<4>\n<4>c\n");
    tkd_logging_format(buf, sizeof buf, TK_LOG_INFO, "", true, NULL);
    ck_assert_str_eq(buf, "<6>\n");
    struct timespec ts = {T_2026_11_21, 5000000};
    tkd_logging_format(buf, sizeof buf, TK_LOG_ERROR, "one\ntwo", false, &ts);
    ck_assert_str_eq(buf, "2026-11-21T22:37:59.005Z error: one\n"
                          "2026-11-21T22:37:59.005Z error: two\n");
    /* Truncated like snprintf, with the full length returned. */
    char small[8];
    size_t n = tkd_logging_format(small, sizeof small, TK_LOG_WARN,
                                  "hello\nworld", true, NULL);
    ck_assert_uint_eq(n, strlen("<4>hello\n<4>world\n"));
    ck_assert_str_eq(small, "<4>hell");
    ck_assert_uint_eq(tkd_logging_format(NULL, 0, TK_LOG_WARN, "ab", true,
                                         NULL),
                      6);
}
END_TEST

/* ---- the installed handler -------------------------------------------- */

START_TEST(logging_journal_prefix)
{
    capture_begin();
    set_journal_stream(STDERR_FILENO); /* stderr is now the pipe */
    ck_assert(tkd_logging_detect_journal(STDERR_FILENO));
    tkd_logging_init();
    ck_assert(tkd_logging_journal());
    tk_log_warn("frame %d took %.1f ms", 120, 40.1);
    tk_log_error("first\nsecond");
    tk_log_debug("dbg");
    char *out = capture_end();
    ck_assert_str_eq(out, "<4>frame 120 took 40.1 ms\n<3>first\n<3>second\n"
                          "<7>dbg\n");
    free(out);
}
END_TEST

START_TEST(logging_plain_when_not_journal)
{
    /* JOURNAL_STREAM naming another file: plain format. */
    int fd = open("/dev/null", O_WRONLY);
    ck_assert_int_ge(fd, 0);
    set_journal_stream(fd);
    capture_begin();
    ck_assert(!tkd_logging_detect_journal(STDERR_FILENO));
    tkd_logging_init();
    ck_assert(!tkd_logging_journal());
    tk_log_info("hello");
    tk_log_warn("a\nb");
    char *out = capture_end();
    close(fd);

    regex_t re;
    const char *ts = "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"
                     "\\.[0-9]{3}Z";
    char pat[512];
    snprintf(pat, sizeof pat, "^%s info: hello\n%s warn: a\n%s warn: b\n$",
             ts, ts, ts);
    ck_assert_int_eq(regcomp(&re, pat, REG_EXTENDED), 0);
    ck_assert_msg(regexec(&re, out, 0, NULL, 0) == 0, "got: %s", out);
    regfree(&re);
    free(out);

    /* Malformed or empty variables read as "not the journal". */
    static const char *const bad[] = {"", "abc", "1:", ":2", "1:2x", "1-2"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("JOURNAL_STREAM", bad[i], 1);
        ck_assert_msg(!tkd_logging_detect_journal(STDERR_FILENO), "%s",
                      bad[i]);
    }
    unsetenv("JOURNAL_STREAM");
    ck_assert(!tkd_logging_detect_journal(STDERR_FILENO));
}
END_TEST

START_TEST(logging_level_filter)
{
    capture_begin();
    set_journal_stream(STDERR_FILENO);
    tkd_logging_init();
    tk_log_set_level(TK_LOG_WARN);
    tk_log_debug("no debug");
    tk_log_info("no info");
    tk_log_warn("warn");
    tk_log_error("error");
    tk_log_set_level(TK_LOG_ERROR);
    tk_log_warn("no warn");
    tk_log_error("error again");
    tk_log_set_level(TK_LOG_DEBUG);
    tk_log_debug("debug");
    char *out = capture_end();
    ck_assert_str_eq(out, "<4>warn\n<3>error\n<3>error again\n<7>debug\n");
    free(out);
}
END_TEST

START_TEST(logging_long_message)
{
    /* More lines than the stack buffer holds: one heap-formatted write. */
    char msg[1002];
    msg[0] = 'x';
    memset(msg + 1, '\n', 1000);
    msg[1001] = '\0';
    capture_begin();
    tkd_logging_init(); /* plain format: ~30 bytes of prefix per line */
    tk_log_warn("%s", msg);
    char *out = capture_end();
    size_t lines = 0;
    for (const char *p = out; *p; p++)
        lines += *p == '\n';
    ck_assert_uint_eq(lines, 1000);
    ck_assert_ptr_nonnull(strstr(out, " warn: x\n"));
    ck_assert_uint_eq(strlen(out), 1000 * strlen("2026-11-21T22:37:59.123Z "
                                                 "warn: \n") +
                                       1);
    free(out);
}
END_TEST

START_TEST(logging_shutdown_restores_default)
{
    capture_begin();
    set_journal_stream(STDERR_FILENO);
    tkd_logging_init();
    tkd_logging_shutdown();
    ck_assert(!tkd_logging_journal());
    tk_log_warn("plain");
    char *out = capture_end();
    ck_assert_str_eq(out, "tickd: warn: plain\n");
    free(out);
}
END_TEST

/* ---- forwarding ------------------------------------------------------- */

typedef struct fwd {
    int calls;
    tk_log_level level[8];
    char msg[8][64];
    bool log_inside;            /* the hook logs an error itself */
} fwd;

static void forward(void *ud, tk_log_level level, const char *msg)
{
    fwd *f = ud;
    ck_assert_int_lt(f->calls, 8);
    f->level[f->calls] = level;
    snprintf(f->msg[f->calls], sizeof f->msg[0], "%s", msg);
    f->calls++;
    if (f->log_inside)
        tk_log_error("subscriber %d is slow", 7);
}

START_TEST(logging_forward_warnings_and_errors)
{
    fwd f = {0};
    capture_begin();
    set_journal_stream(STDERR_FILENO);
    tkd_logging_init();
    tkd_logging_set_forward(forward, &f);
    tk_log_debug("d");
    tk_log_info("i");
    tk_log_warn("w1\nw2");
    tk_log_error("e");
    tkd_logging_set_forward(NULL, NULL);
    tk_log_error("after");
    char *out = capture_end();
    ck_assert_int_eq(f.calls, 2);
    ck_assert_int_eq(f.level[0], TK_LOG_WARN);
    ck_assert_str_eq(f.msg[0], "w1\nw2"); /* whole, unsplit */
    ck_assert_int_eq(f.level[1], TK_LOG_ERROR);
    ck_assert_str_eq(f.msg[1], "e");
    ck_assert_str_eq(out, "<7>d\n<6>i\n<4>w1\n<4>w2\n<3>e\n<3>after\n");
    free(out);
}
END_TEST

START_TEST(logging_forward_recursion_guard)
{
    fwd f = {0};
    f.log_inside = true;
    capture_begin();
    set_journal_stream(STDERR_FILENO);
    tkd_logging_init();
    tkd_logging_set_forward(forward, &f);
    tk_log_warn("outer");
    tk_log_warn("again");
    char *out = capture_end();
    /* The hook's own error is written but not forwarded back. */
    ck_assert_int_eq(f.calls, 2);
    ck_assert_str_eq(f.msg[0], "outer");
    ck_assert_str_eq(f.msg[1], "again");
    ck_assert_str_eq(out, "<4>outer\n<3>subscriber 7 is slow\n"
                          "<4>again\n<3>subscriber 7 is slow\n");
    free(out);
}
END_TEST

/* ---- rate limiter ----------------------------------------------------- */

START_TEST(logging_ratelimit)
{
    tkd_ratelimit_t rl;
    tkd_ratelimit_init(&rl, 1.0);
    unsigned long n = 99;
    ck_assert(tkd_ratelimit_allow(&rl, 0.0, &n)); /* the first, at t = 0 */
    ck_assert_uint_eq(n, 0);
    n = 99;
    ck_assert(!tkd_ratelimit_allow(&rl, 0.25, &n));
    ck_assert(!tkd_ratelimit_allow(&rl, 0.5, &n));
    ck_assert(!tkd_ratelimit_allow(&rl, 0.999, &n));
    ck_assert_uint_eq(n, 99); /* left alone while refused */
    ck_assert_uint_eq(rl.suppressed, 3);
    ck_assert(tkd_ratelimit_allow(&rl, 1.0, &n)); /* exactly one interval */
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(rl.suppressed, 0);
    ck_assert(!tkd_ratelimit_allow(&rl, 1.5, NULL));
    ck_assert(tkd_ratelimit_allow(&rl, 10.0, &n));
    ck_assert_uint_eq(n, 1);
    ck_assert(tkd_ratelimit_allow(&rl, 11.0, &n));
    ck_assert_uint_eq(n, 0);
    ck_assert_double_eq(rl.last, 11.0);

    /* Interval 0: everything passes. */
    tkd_ratelimit_init(&rl, 0);
    for (int i = 0; i < 5; i++) {
        ck_assert(tkd_ratelimit_allow(&rl, 3.0, &n));
        ck_assert_uint_eq(n, 0);
    }
    /* Negative start times work too (no "never" sentinel confusion). */
    tkd_ratelimit_init(&rl, 2.0);
    ck_assert(tkd_ratelimit_allow(&rl, -5.0, &n));
    ck_assert(!tkd_ratelimit_allow(&rl, -4.0, &n));
    ck_assert(tkd_ratelimit_allow(&rl, -3.0, &n));
    ck_assert_uint_eq(n, 1);
}
END_TEST

static Suite *logging_suite(void)
{
    Suite *s = suite_create("logging");
    TCase *tc = tcase_create("logging");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, logging_format_plain);
    tcase_add_test(tc, logging_flood_limits_similar_messages);
    tcase_add_test(tc, logging_flood_summary_on_next_window);
    tcase_add_test(tc, logging_format_journal);
    tcase_add_test(tc, logging_format_instance_name);
    tcase_add_test(tc, logging_newline_split);
    tcase_add_test(tc, logging_journal_prefix);
    tcase_add_test(tc, logging_plain_when_not_journal);
    tcase_add_test(tc, logging_level_filter);
    tcase_add_test(tc, logging_long_message);
    tcase_add_test(tc, logging_shutdown_restores_default);
    tcase_add_test(tc, logging_forward_warnings_and_errors);
    tcase_add_test(tc, logging_forward_recursion_guard);
    tcase_add_test(tc, logging_ratelimit);
    suite_add_tcase(s, tc);
    return s;
}

TK_CHECK_MAIN(logging_suite)
