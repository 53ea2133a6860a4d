/*
 * stat.h - statistics shared by the benchmark programs (bench/stat.c, linked
 * into every bench binary).  Times come from libtickd's tk_clock_now_ns().
 */
#ifndef TICKD_BENCH_STAT_H
#define TICKD_BENCH_STAT_H

#include <stddef.h>

/* Median of n values (n >= 1); sorts them in place. */
double bench_median(double *v, size_t n);

#endif
