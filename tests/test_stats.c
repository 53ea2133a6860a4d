/*
 * test_stats.c - frame-time statistics (tk_frame_stats_* of tickd/engine.h),
 * fed with synthetic start times: no clock is read.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "tickd/engine.h"
#include "check_main.h"

#define NS_S 1000000000ull
#define NS_MS 1000000ull
#define NS_US 1000ull
#define RES 0.0079       /* relative precision promised by stats.c (1/128) */

/* |got - want| <= RES * want, both in ms. */
static void assert_within_res(double got, double want)
{
    ck_assert_msg(fabs(got - want) <= RES * want + 1e-9,
                  "got %.6f ms, want %.6f ms within %.2f%%", got, want, RES * 100);
}

/* Frames at `hz` from `t0_ns` for `n` frames, all of `work_ns`. */
static uint64_t feed(tk_frame_stats *s, uint64_t t0_ns, uint64_t period_ns,
                     uint64_t n, uint64_t work_ns)
{
    for (uint64_t i = 0; i < n; i++)
        tk_frame_stats_add(s, t0_ns + i * period_ns, work_ns);
    return t0_ns + n * period_ns;
}

START_TEST(stats_empty)
{
    tk_frame_stats *s = tk_frame_stats_new();
    tk_mspt m = {.mean = 7, .p50 = 7, .p95 = 7, .p99 = 7, .max = 7};
    tk_frame_stats_mspt(s, 5 * NS_S, 10, &m);
    ck_assert_double_eq(m.mean, 0);
    ck_assert_double_eq(m.p50, 0);
    ck_assert_double_eq(m.p99, 0);
    ck_assert_double_eq(m.max, 0);
    tk_frame_stats_mspt(s, 5 * NS_S, 0, &m);
    ck_assert_double_eq(m.max, 0);
    ck_assert_double_eq(tk_frame_stats_tps(s, 5 * NS_S, 1), 0);
    ck_assert_double_eq(tk_frame_stats_tps(s, 5 * NS_S, 0), 0);
    tk_frame_stats_free(s);
    tk_frame_stats_free(NULL);
}
END_TEST

START_TEST(stats_percentiles_uniform)
{
    /* 1000 frames of 1, 2, ..., 1000 us (shuffled by a fixed stride): the
     * nearest-rank p50/p95/p99 are 500, 950 and 990 us exactly. */
    tk_frame_stats *s = tk_frame_stats_new();
    uint64_t t0 = 100 * NS_S;
    for (uint64_t i = 0; i < 1000; i++) {
        uint64_t v = (i * 7919) % 1000 + 1;
        tk_frame_stats_add(s, t0 + i * NS_MS / 2, v * NS_US);
    }
    tk_mspt m;
    tk_frame_stats_mspt(s, t0 + NS_S / 2, 10, &m);
    ck_assert_double_eq_tol(m.mean, 0.5005, 1e-9);   /* exact */
    ck_assert_double_eq_tol(m.max, 1.0, 1e-12);      /* exact */
    assert_within_res(m.p50, 0.500);
    assert_within_res(m.p95, 0.950);
    assert_within_res(m.p99, 0.990);
    ck_assert(m.p50 <= m.p95 && m.p95 <= m.p99 && m.p99 <= m.max);

    /* window 0 (since reset) agrees */
    tk_mspt m0;
    tk_frame_stats_mspt(s, t0 + NS_S / 2, 0, &m0);
    ck_assert_double_eq(m0.p50, m.p50);
    ck_assert_double_eq(m0.p99, m.p99);
    ck_assert_double_eq(m0.mean, m.mean);
    ck_assert_double_eq(m0.max, m.max);
    tk_frame_stats_free(s);
}
END_TEST

START_TEST(stats_percentiles_bimodal)
{
    /* 96% at 2 ms, 4% at 40 ms: p50 and p95 are 2 ms, p99 is 40 ms. */
    tk_frame_stats *s = tk_frame_stats_new();
    uint64_t t = 10 * NS_S;
    for (int i = 0; i < 1000; i++, t += 5 * NS_MS)
        tk_frame_stats_add(s, t, (i % 25 == 0) ? 40 * NS_MS : 2 * NS_MS);
    tk_mspt m;
    tk_frame_stats_mspt(s, t, 10, &m);
    assert_within_res(m.p50, 2.0);
    assert_within_res(m.p95, 2.0);
    assert_within_res(m.p99, 40.0);
    ck_assert_double_eq_tol(m.max, 40.0, 1e-12);
    ck_assert_double_eq_tol(m.mean, 0.96 * 2 + 0.04 * 40, 1e-9);
    tk_frame_stats_free(s);
}
END_TEST

START_TEST(stats_resolution_sweep)
{
    /* Every work time from 1 us to 10 s (1.3% steps) comes back within the
     * promised precision; a larger companion frame keeps the max clamp out of
     * the way, so this is the bin midpoint itself. */
    tk_frame_stats *s = tk_frame_stats_new();
    int checked = 0;
    for (double v = 1000; v <= 1e10; v *= 1.013) {
        tk_frame_stats_reset(s);
        uint64_t ns = (uint64_t)v;
        tk_frame_stats_add(s, 0, ns);
        tk_frame_stats_add(s, 1, 2 * ns);
        tk_mspt m;
        tk_frame_stats_mspt(s, 1, 1, &m);  /* 2 frames: p50 is the smaller */
        assert_within_res(m.p50, (double)ns / 1e6);
        checked++;
    }
    ck_assert_int_gt(checked, 900);

    /* Below 1 us: absolute resolution of 8 ns. */
    for (uint64_t ns = 0; ns < 1000; ns += 37) {
        tk_frame_stats_reset(s);
        tk_frame_stats_add(s, 0, ns);
        tk_frame_stats_add(s, 0, 5000);
        tk_mspt m;
        tk_frame_stats_mspt(s, 0, 0, &m);
        ck_assert_double_le(fabs(m.p50 * 1e6 - (double)ns), 8.0);
    }
    tk_frame_stats_free(s);
}
END_TEST

START_TEST(stats_overflow_is_max)
{
    /* Beyond the histogram's range (17.2 s) a percentile reports the max. */
    tk_frame_stats *s = tk_frame_stats_new();
    tk_frame_stats_add(s, 0, 30 * NS_S);
    tk_mspt m;
    tk_frame_stats_mspt(s, 0, 10, &m);
    ck_assert_double_eq_tol(m.p50, 30000.0, 1e-9);
    ck_assert_double_eq_tol(m.p99, 30000.0, 1e-9);
    ck_assert_double_eq_tol(m.max, 30000.0, 1e-9);
    tk_frame_stats_free(s);
}
END_TEST

START_TEST(stats_mspt_windows)
{
    /* 50 Hz: 20 s of 1 ms frames, then 10 s of 3 ms frames. */
    tk_frame_stats *s = tk_frame_stats_new();
    uint64_t t = feed(s, 1000 * NS_S, 20 * NS_MS, 1000, 1 * NS_MS);
    t = feed(s, t, 20 * NS_MS, 500, 3 * NS_MS);
    uint64_t now = t - 20 * NS_MS + 1;  /* just after the last frame */
    tk_mspt m;
    /* 5 s window: the seconds holding now-5 s .. now: all 3 ms frames. */
    tk_frame_stats_mspt(s, now, 5, &m);
    ck_assert_double_eq_tol(m.mean, 3.0, 1e-9);
    assert_within_res(m.p50, 3.0);
    /* 60 s window: everything; 2/3 of the frames at 1 ms. */
    tk_frame_stats_mspt(s, now, 60, &m);
    ck_assert_double_eq_tol(m.mean, (1000 * 1.0 + 500 * 3.0) / 1500, 1e-9);
    assert_within_res(m.p50, 1.0);
    assert_within_res(m.p95, 3.0);
    ck_assert_double_eq_tol(m.max, 3.0, 1e-12);
    /* A window longer than the ring is taken as 60 s. */
    tk_mspt m2;
    tk_frame_stats_mspt(s, now, 600, &m2);
    ck_assert_double_eq(m2.mean, m.mean);
    /* Long after the last frame, windows are empty; window 0 is not. */
    tk_frame_stats_mspt(s, now + 100 * NS_S, 60, &m);
    ck_assert_double_eq(m.mean, 0);
    tk_frame_stats_mspt(s, now + 100 * NS_S, 0, &m);
    ck_assert_double_eq_tol(m.mean, (1000 * 1.0 + 500 * 3.0) / 1500, 1e-9);
    tk_frame_stats_free(s);
}
END_TEST

START_TEST(stats_ring_wraps)
{
    /* 200 s at 10 Hz: 100 s at 1 ms then 100 s at 2 ms.  The ring only
     * remembers the last minute. */
    tk_frame_stats *s = tk_frame_stats_new();
    uint64_t t = feed(s, 0, 100 * NS_MS, 1000, 1 * NS_MS);
    t = feed(s, t, 100 * NS_MS, 1000, 2 * NS_MS);
    tk_mspt m;
    tk_frame_stats_mspt(s, t, 60, &m);
    ck_assert_double_eq_tol(m.mean, 2.0, 1e-9);
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, t, 60), 10.0, 1e-9);
    tk_frame_stats_mspt(s, t, 0, &m);
    ck_assert_double_eq_tol(m.mean, 1.5, 1e-9);
    tk_frame_stats_free(s);
}
END_TEST

START_TEST(stats_tps_steady)
{
    /* 50 Hz for 2 minutes starting at 1000 s. */
    tk_frame_stats *s = tk_frame_stats_new();
    uint64_t t = feed(s, 1000 * NS_S, 20 * NS_MS, 6000, NS_MS);
    uint64_t now = t + 5 * NS_MS;
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, now, 1), 50.0, 1e-9);
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, now, 10), 50.0, 1e-9);
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, now, 60), 50.0, 1e-9);
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, now, 0), 6000.0 / 120.005, 1e-9);

    /* The current partial second is not counted: 20 frames into second
     * 1120, tps_1s still reports second 1119. */
    t = feed(s, t, 50 * NS_MS, 20, NS_MS);     /* now 20 Hz */
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, t - 1, 1), 50.0, 1e-9);
    t = feed(s, t, 50 * NS_MS, 40, NS_MS);
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, t + 1, 1), 20.0, 1e-9);
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, t + 1, 10), (7 * 50 + 3 * 20) / 10.0,
                            1e-9);
    tk_frame_stats_free(s);
}
END_TEST

START_TEST(stats_tps_young)
{
    /* 60 Hz from 0 for 5 s: tps_1m divides by the 5 s covered. */
    tk_frame_stats *s = tk_frame_stats_new();
    for (uint64_t i = 0; i < 300; i++)
        tk_frame_stats_add(s, i * NS_S / 60, NS_MS);
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, 5 * NS_S, 60), 60.0, 1e-9);
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, 5 * NS_S, 10), 60.0, 1e-9);
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, 5 * NS_S, 1), 60.0, 1e-9);

    /* Started mid-second (5.7 s), 50 Hz, now 12.3 s: seconds 5..11 hold
     * 315 frames over the 6.3 s covered. */
    tk_frame_stats_reset(s);
    uint64_t t0 = 5700 * NS_MS;
    uint64_t t = feed(s, t0, 20 * NS_MS, 330, NS_MS);
    ck_assert_uint_eq(t, 12300 * NS_MS);
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, t, 60), 50.0, 1e-9);
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, t, 10), 50.0, 1e-9);
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, t, 1), 50.0, 1e-9);
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, t, 0), 330 / 6.6, 1e-9);

    /* Before a whole second: mean rate between frame starts. */
    tk_frame_stats_reset(s);
    feed(s, 3 * NS_S, 20 * NS_MS, 10, NS_MS);  /* 3.00 .. 3.18 s */
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, 3500 * NS_MS, 60), 50.0, 1e-9);
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, 3500 * NS_MS, 1), 50.0, 1e-9);
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, 3500 * NS_MS, 0), 50.0, 1e-9);
    tk_frame_stats_reset(s);
    tk_frame_stats_add(s, 3 * NS_S, NS_MS);
    ck_assert_double_eq(tk_frame_stats_tps(s, 3500 * NS_MS, 1), 0.0);
    tk_frame_stats_free(s);
}
END_TEST

START_TEST(stats_tps_stall)
{
    /* 50 Hz for 30 s, then nothing: the windows drain as time passes. */
    tk_frame_stats *s = tk_frame_stats_new();
    uint64_t t = feed(s, 200 * NS_S, 20 * NS_MS, 1500, NS_MS);  /* to 230 s */
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, 232 * NS_S, 1), 0.0, 1e-9);
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, 235 * NS_S, 10), 25.0, 1e-9);
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, 260 * NS_S, 60), 25.0, 1e-9);
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, 400 * NS_S, 60), 0.0, 1e-9);
    (void)t;
    tk_frame_stats_free(s);
}
END_TEST

START_TEST(stats_reset)
{
    tk_frame_stats *s = tk_frame_stats_new();
    uint64_t t = feed(s, 50 * NS_S, 20 * NS_MS, 500, 4 * NS_MS);
    tk_frame_stats_reset(s);
    tk_mspt m;
    tk_frame_stats_mspt(s, t, 10, &m);
    ck_assert_double_eq(m.mean, 0);
    ck_assert_double_eq(m.max, 0);
    tk_frame_stats_mspt(s, t, 0, &m);
    ck_assert_double_eq(m.max, 0);
    ck_assert_double_eq(tk_frame_stats_tps(s, t, 10), 0);

    /* Fresh history afterwards: young again, and only the new frames. */
    uint64_t t2 = feed(s, t, 10 * NS_MS, 300, 1 * NS_MS);  /* 3 s at 100 Hz */
    ck_assert_double_eq_tol(tk_frame_stats_tps(s, t2, 60), 100.0, 1e-9);
    tk_frame_stats_mspt(s, t2, 60, &m);
    ck_assert_double_eq_tol(m.max, 1.0, 1e-12);
    ck_assert_double_eq_tol(m.mean, 1.0, 1e-12);
    tk_frame_stats_free(s);
}
END_TEST

static Suite *stats_suite(void)
{
    Suite *s = suite_create("stats");
    TCase *tc = tcase_create("stats");
    tcase_add_test(tc, stats_empty);
    tcase_add_test(tc, stats_percentiles_uniform);
    tcase_add_test(tc, stats_percentiles_bimodal);
    tcase_add_test(tc, stats_resolution_sweep);
    tcase_add_test(tc, stats_overflow_is_max);
    tcase_add_test(tc, stats_mspt_windows);
    tcase_add_test(tc, stats_ring_wraps);
    tcase_add_test(tc, stats_tps_steady);
    tcase_add_test(tc, stats_tps_young);
    tcase_add_test(tc, stats_tps_stall);
    tcase_add_test(tc, stats_reset);
    suite_add_tcase(s, tc);
    return s;
}

TK_CHECK_MAIN(stats_suite)
