/*
 * stats.c - frame-time statistics over sliding windows (tk_frame_stats_* of
 * tickd/engine.h): mspt (milliseconds of work per frame) percentiles and tps
 * (frames per second), in constant memory and without a clock of its own
 * (every call takes the monotonic `now`/`start` it is about).
 *
 * Layout.  Frames are bucketed by the second they started in
 * (key = start_ns / 1e9) in a ring of RING = 61 buckets: 60 whole seconds
 * for the longest window (tps_1m) plus the second being written.  A bucket
 * holds a frame count, the exact sum and max of the work time, and a
 * log-linear histogram of it; a bucket is cleared when a frame of a newer
 * second lands in its slot, and a bucket whose key is not the second asked
 * for counts as empty (so gaps read as zero frames).  A cumulative histogram,
 * count, sum and max cover everything since the last reset (window 0).
 * Memory: 61 x 6.4 KB + 13 KB, about 400 KB, allocated once.
 *
 * Histogram (HDR-histogram style, work time in ns):
 *
 *   work time            bin width            relative width
 *   0 .. 1023 ns         16 ns (64 bins)      absolute, below 1 us
 *   2^e .. 2^(e+1) ns    2^(e-6) ns           1/128 .. 1/64
 *     (e = 10..33, 64 bins per octave: 1.02 us .. 17.2 s)
 *   >= 2^34 ns (17.2 s)  one overflow bin     reported as the window's max
 *
 * Precision.  A percentile is reported as the midpoint of the bin holding the
 * nearest-rank sample (rank = ceil(p * N)), clamped to the window's exact
 * max: at most 0.78% (half a bin) from a sample of that rank for work times
 * from 1 us to 17 s, within 8 ns below 1 us.  mean and max are exact.  Window
 * edges fall on whole seconds of the monotonic clock:
 *   - mspt over `window_s` merges the buckets from the second holding
 *     now - window_s to the second holding now (between window_s and
 *     window_s + 1 seconds of frames, the current partial second included);
 *   - tps over `window_s` counts the frames of the last window_s whole
 *     seconds (the current partial second excluded) and divides by window_s;
 *     while less history than that has been recorded since the reset, it
 *     divides by the time actually covered, from the first frame's start to
 *     the last whole second (so tps_1m after 5 s at 60 Hz is 60, not 5), and
 *     before a whole second has passed since the first frame it is the mean
 *     rate between frame starts, (frames - 1) / (last start - first start).
 *
 * What it is not: thread-safe, or a store of individual samples (the
 * percentiles are histogram estimates); frames older than the ring (out of
 * order by more than 60 s) count only in the since-reset figures.
 */
#include <string.h>

#include "tickd/clock.h"
#include "tickd/engine.h"
#include "util_int.h"

#define SUB_BITS 6                      /* log2 of bins per octave          */
#define SUB (1u << SUB_BITS)            /* 64 bins per octave               */
#define UNIT_SHIFT 4                    /* ns per bin below 1 us = 16       */
#define LIN_LIMIT (1ull << (SUB_BITS + UNIT_SHIFT)) /* 1024 ns              */
#define EXP_MIN (SUB_BITS + UNIT_SHIFT) /* first log octave: 2^10 ns        */
#define EXP_MAX 33                      /* last log octave: 2^33 .. 2^34 ns */
#define NBINS (SUB + (EXP_MAX - EXP_MIN + 1) * SUB + 1) /* + overflow: 1601 */
#define OVERFLOW_BIN (NBINS - 1)
#define WINDOW_MAX 60                   /* s, longest window                */
#define RING (WINDOW_MAX + 1)           /* buckets                          */
#define NO_SEC UINT64_MAX               /* key of an empty bucket           */

typedef struct sec_bucket {
    uint64_t sec;               /* start_ns / 1e9 of its frames; NO_SEC    */
    uint64_t frames;            /* frames that started in that second      */
    uint64_t sum_ns;            /* ns, total work                          */
    uint64_t max_ns;            /* ns, longest work                        */
    uint32_t hist[NBINS];       /* frames per work-time bin                */
} sec_bucket;

struct tk_frame_stats {
    sec_bucket *ring[RING];     /* slot = sec % RING; NULL until first used
                                   (a fresh engine touches 13 KB, not 400) */
    uint64_t all_hist[NBINS];   /* since reset, per bin                    */
    uint64_t all_frames;        /* since reset                             */
    uint64_t all_sum_ns;        /* ns, since reset                         */
    uint64_t all_max_ns;        /* ns, since reset                         */
    uint64_t first_start_ns;    /* monotonic ns, earliest frame start      */
    uint64_t last_start_ns;     /* monotonic ns, latest frame start        */
};

/* Histogram bin of a work time in ns. */
static inline unsigned bin_of(uint64_t v)
{
    if (v < LIN_LIMIT)
        return (unsigned)(v >> UNIT_SHIFT);
    unsigned e = 63u - (unsigned)__builtin_clzll(v);
    if (e > EXP_MAX)
        return OVERFLOW_BIN;
    unsigned sub = (unsigned)(v >> (e - SUB_BITS)) & (SUB - 1);
    return SUB + (e - EXP_MIN) * SUB + sub;
}

/* Midpoint of a (non-overflow) bin, in ns. */
static inline uint64_t bin_mid(unsigned b)
{
    if (b < SUB)
        return ((uint64_t)b << UNIT_SHIFT) + (1u << (UNIT_SHIFT - 1));
    unsigned k = b - SUB;
    unsigned e = EXP_MIN + k / SUB;
    uint64_t lo = (uint64_t)(SUB + k % SUB) << (e - SUB_BITS);
    return lo + (1ull << (e - SUB_BITS - 1));
}

static void bucket_clear(sec_bucket *b, uint64_t sec)
{
    memset(b, 0, sizeof *b);
    b->sec = sec;
}

tk_frame_stats *tk_frame_stats_new(void)
{
    tk_frame_stats *s = tk_calloc(1, sizeof *s);
    tk_frame_stats_reset(s);
    return s;
}

void tk_frame_stats_free(tk_frame_stats *s)
{
    if (!s)
        return;
    for (unsigned i = 0; i < RING; i++)
        tk_free(s->ring[i]);
    tk_free(s);
}

/* Forget every frame recorded (buckets already allocated are kept). */
void tk_frame_stats_reset(tk_frame_stats *s)
{
    for (unsigned i = 0; i < RING; i++)
        if (s->ring[i])
            s->ring[i]->sec = NO_SEC;
    memset(s->all_hist, 0, sizeof s->all_hist);
    s->all_frames = s->all_sum_ns = s->all_max_ns = 0;
    s->first_start_ns = s->last_start_ns = 0;
}

/*
 * Record one frame.  O(1); clears a 6.4 KB bucket when the frame is the first
 * of a new second.  A frame older than what its ring slot now holds (out of
 * order by a minute or more) counts only since reset.
 */
void tk_frame_stats_add(tk_frame_stats *s, uint64_t start_ns, uint64_t work_ns)
{
    unsigned bin = bin_of(work_ns);

    if (s->all_frames == 0 || start_ns < s->first_start_ns)
        s->first_start_ns = start_ns;
    if (s->all_frames == 0 || start_ns > s->last_start_ns)
        s->last_start_ns = start_ns;
    s->all_frames++;
    s->all_sum_ns += work_ns;
    s->all_max_ns = TK_MAX(s->all_max_ns, work_ns);
    s->all_hist[bin]++;

    uint64_t sec = start_ns / TK_NS_PER_S;
    sec_bucket **slot = &s->ring[sec % RING];
    sec_bucket *b = *slot;
    if (!b) {
        b = *slot = tk_malloc(sizeof *b);
        bucket_clear(b, sec);
    } else if (b->sec != sec) {
        if (b->sec != NO_SEC && b->sec > sec)
            return;
        bucket_clear(b, sec);
    }
    b->frames++;
    b->sum_ns += work_ns;
    b->max_ns = TK_MAX(b->max_ns, work_ns);
    b->hist[bin]++;
}

/* The bucket of second `sec`, or NULL if its slot holds another second. */
static inline const sec_bucket *bucket_at(const tk_frame_stats *s, uint64_t sec)
{
    const sec_bucket *b = s->ring[sec % RING];
    return b && b->sec == sec ? b : NULL;
}

/* Nearest rank of the p-th percentile (p in %) among n samples, >= 1. */
static inline uint64_t rank_of(uint64_t n, unsigned p)
{
    uint64_t r = (n * p + 99) / 100;
    return r ? r : 1;
}

/*
 * Fill out->p50/p95/p99 (ms) from the per-bin counts of `n` frames whose
 * longest work was `max_ns`: either one cumulative histogram `h64`, or (h64
 * NULL) the sum over `nb` buckets `in` of their histograms, merged bin by bin.
 */
static void fill_percentiles(tk_mspt *out, uint64_t n, uint64_t max_ns,
                             const uint64_t *h64, const sec_bucket *const *in,
                             unsigned nb)
{
    static const unsigned pct[3] = {50, 95, 99};
    double *dst[3] = {&out->p50, &out->p95, &out->p99};
    unsigned k = 0;
    uint64_t cum = 0;
    for (unsigned b = 0; b < NBINS && k < 3; b++) {
        if (h64) {
            cum += h64[b];
        } else {
            for (unsigned j = 0; j < nb; j++)
                cum += in[j]->hist[b];
        }
        while (k < 3 && cum >= rank_of(n, pct[k])) {
            uint64_t v = b == OVERFLOW_BIN ? max_ns : bin_mid(b);
            *dst[k++] = (double)TK_MIN(v, max_ns) / 1e6;
        }
    }
}

/*
 * mspt over a window ending at `now_ns` (see the file header for its edges
 * and precision); window_s 0 = since reset, > 60 is taken as 60.  All zero
 * when the window holds no frame.
 */
void tk_frame_stats_mspt(const tk_frame_stats *s, uint64_t now_ns,
                         unsigned window_s, tk_mspt *out)
{
    memset(out, 0, sizeof *out);
    if (window_s == 0) {
        if (s->all_frames == 0)
            return;
        out->mean = (double)s->all_sum_ns / (double)s->all_frames / 1e6;
        out->max = (double)s->all_max_ns / 1e6;
        fill_percentiles(out, s->all_frames, s->all_max_ns, s->all_hist, NULL, 0);
        return;
    }
    window_s = TK_MIN(window_s, WINDOW_MAX);

    const sec_bucket *in[RING];
    unsigned nb = 0;
    uint64_t n = 0, sum = 0, max = 0;
    uint64_t last = now_ns / TK_NS_PER_S;
    uint64_t span = window_s * TK_NS_PER_S;
    uint64_t from_ns = now_ns > span ? now_ns - span : 0;
    for (uint64_t sec = from_ns / TK_NS_PER_S; sec <= last; sec++) {
        const sec_bucket *b = bucket_at(s, sec);
        if (!b || b->frames == 0)
            continue;
        in[nb++] = b;
        n += b->frames;
        sum += b->sum_ns;
        max = TK_MAX(max, b->max_ns);
    }
    if (n == 0)
        return;
    out->mean = (double)sum / (double)n / 1e6;
    out->max = (double)max / 1e6;

    fill_percentiles(out, n, max, NULL, in, nb);
}

/* Mean rate between the first and the last frame start recorded. */
static double interval_rate(const tk_frame_stats *s)
{
    if (s->all_frames < 2 || s->last_start_ns <= s->first_start_ns)
        return 0;
    return (double)(s->all_frames - 1) /
           tk_ns_to_s(s->last_start_ns - s->first_start_ns);
}

/*
 * Frames per second over the last `window_s` whole seconds before `now_ns`
 * (see the file header for the young-history rules); window_s 0 = since
 * reset (frames / time from the first frame's start to now), > 60 is taken
 * as 60.  0 when nothing has been recorded.
 */
double tk_frame_stats_tps(const tk_frame_stats *s, uint64_t now_ns,
                          unsigned window_s)
{
    if (s->all_frames == 0)
        return 0;
    if (window_s == 0) {
        if (now_ns < s->first_start_ns + TK_NS_PER_S)
            return interval_rate(s);
        return (double)s->all_frames / tk_ns_to_s(now_ns - s->first_start_ns);
    }
    window_s = TK_MIN(window_s, WINDOW_MAX);

    uint64_t end_sec = now_ns / TK_NS_PER_S;     /* exclusive */
    uint64_t start_sec = end_sec > window_s ? end_sec - window_s : 0;
    uint64_t start_ns = start_sec * TK_NS_PER_S;
    uint64_t end_ns = end_sec * TK_NS_PER_S;
    uint64_t n = 0;
    for (uint64_t sec = start_sec; sec < end_sec; sec++) {
        const sec_bucket *b = bucket_at(s, sec);
        if (b)
            n += b->frames;
    }
    if (start_ns >= s->first_start_ns && end_ns - start_ns == window_s * TK_NS_PER_S)
        return (double)n / (double)window_s;

    /* Less history than the window: divide by the time covered. */
    if (end_ns < s->first_start_ns + TK_NS_PER_S)
        return interval_rate(s);
    uint64_t from = TK_MAX(start_ns, s->first_start_ns);
    return (double)n / tk_ns_to_s(end_ns - from);
}
