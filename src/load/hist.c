/*
 * hist.c - a log-linear histogram of non-negative integer samples, for the
 * latency and frame-time percentiles of tickd-load.
 *
 * Layout (HdrHistogram's, with 128 sub-buckets per power of two):
 *
 *   value range          bucket width   buckets   relative error of a bucket
 *   [0, 256)             1              256       exact
 *   [256, 512)           2              128       < 0.4% (midpoint)
 *   [512, 1024)          4              128       < 0.4%
 *   ...                  ...            ...
 *   [2^62, 2^64)         2^56           128       < 0.4%
 *
 * so 256 + 56 * 128 = 7424 buckets cover every uint64_t.  In nanoseconds the
 * first exact range is a quarter microsecond: every latency and frame time
 * worth reporting is read back within 0.4%.  A sample is added in O(1); a
 * percentile walks the touched buckets only.
 *
 * What it deliberately is not: a sliding window (the caller resets a
 * per-second histogram itself) or a mergeable/serialisable format.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"

#define SUB_BITS 7                /* 128 sub-buckets per power of two */
#define SUB      (1u << SUB_BITS) /* 128 */
#define LINEAR   (2u * SUB)       /* values below this are exact: 256 */

/* The bucket of `v`. */
static int bucket_of(uint64_t v)
{
    if (v < LINEAR)
        return (int)v;
    int msb = 63 - __builtin_clzll(v); /* >= 8 */
    int shift = msb - SUB_BITS;        /* >= 1 */
    uint64_t mant = v >> shift;        /* in [128, 256) */
    return (int)(LINEAR + (unsigned)(shift - 1) * SUB + (unsigned)(mant - SUB));
}

/* The value a bucket stands for: the midpoint of its range. */
static uint64_t bucket_value(int b)
{
    if ((unsigned)b < LINEAR)
        return (uint64_t)b;
    unsigned i = (unsigned)b - LINEAR;
    int shift = (int)(i / SUB) + 1;
    uint64_t mant = (uint64_t)(i % SUB) + SUB;
    uint64_t lo = mant << shift;
    uint64_t width = (uint64_t)1 << shift;
    return lo + (width - 1) / 2;
}

void tk__load_hist_init(tk_load_hist_t *h)
{
    h->counts = tk__load_xcalloc(TK_LOAD_HIST_BUCKETS, sizeof *h->counts);
    h->n = 0;
    h->min = UINT64_MAX;
    h->max = 0;
    h->sum = 0;
    h->lo = TK_LOAD_HIST_BUCKETS;
    h->hi = -1;
}

void tk__load_hist_free(tk_load_hist_t *h)
{
    free(h->counts);
    h->counts = NULL;
    h->n = 0;
}

void tk__load_hist_reset(tk_load_hist_t *h)
{
    if (h->hi >= h->lo)
        memset(h->counts + h->lo, 0, (size_t)(h->hi - h->lo + 1) * sizeof *h->counts);
    h->n = 0;
    h->min = UINT64_MAX;
    h->max = 0;
    h->sum = 0;
    h->lo = TK_LOAD_HIST_BUCKETS;
    h->hi = -1;
}

void tk__load_hist_add(tk_load_hist_t *h, uint64_t v)
{
    int b = bucket_of(v);
    h->counts[b]++;
    if (b < h->lo)
        h->lo = b;
    if (b > h->hi)
        h->hi = b;
    h->n++;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
    h->sum += (double)v;
}

uint64_t tk__load_hist_pct(const tk_load_hist_t *h, double p)
{
    if (h->n == 0)
        return 0;
    if (p >= 100.0)
        return h->max;
    double r = ceil(p / 100.0 * (double)h->n);
    uint64_t rank = r < 1.0 ? 1 : (uint64_t)r;
    uint64_t seen = 0;
    for (int b = h->lo; b <= h->hi; b++) {
        seen += h->counts[b];
        if (seen >= rank) {
            uint64_t v = bucket_value(b);
            if (v < h->min)
                v = h->min;
            if (v > h->max)
                v = h->max;
            return v;
        }
    }
    return h->max; /* not reached: the counts add up to n */
}

double tk__load_hist_mean(const tk_load_hist_t *h) { return h->n ? h->sum / (double)h->n : 0.0; }

tk_load_pct_t tk__load_hist_summary_ms(const tk_load_hist_t *h)
{
    tk_load_pct_t s;
    memset(&s, 0, sizeof s);
    s.n = h->n;
    if (h->n == 0)
        return s;
    s.avg = tk__load_hist_mean(h) / 1e6;
    s.min = (double)h->min / 1e6;
    s.p50 = (double)tk__load_hist_pct(h, 50) / 1e6;
    s.p95 = (double)tk__load_hist_pct(h, 95) / 1e6;
    s.p99 = (double)tk__load_hist_pct(h, 99) / 1e6;
    s.max = (double)h->max / 1e6;
    return s;
}
