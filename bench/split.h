/*
 * split.h - the floor of the parallel benchmarks: a plain split of a loop
 * over `threads` threads (pthreads, a mutex and condition variables), what a
 * C programmer would write without a scheduler.  The helpers sleep between
 * runs, as tickd's workers do, so the floor pays the same wake-ups.
 */
#ifndef TICKD_BENCH_SPLIT_H
#define TICKD_BENCH_SPLIT_H

#include <stddef.h>

typedef struct bench_split bench_split;

/* `threads` threads in all (the caller and threads - 1 helpers, >= 1). */
bench_split *bench_split_new(unsigned threads);
void bench_split_free(bench_split *s);

/* fn(ud, lo, hi) over [0, n) in `threads` equal parts, the caller running
 * the first; returns when every part is done. */
void bench_split_run(bench_split *s, void (*fn)(void *ud, size_t lo, size_t hi), void *ud,
                     size_t n);

#endif
