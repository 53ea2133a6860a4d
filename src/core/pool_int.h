/*
 * pool_int.h - the engine's worker threads (pool.c).
 */
#ifndef TICKD_POOL_INT_H
#define TICKD_POOL_INT_H

#include <stdbool.h>
#include <stdint.h>

#define TK_POOL_MAX_THREADS 256

typedef struct tk__pool tk__pool;

/* One chunk of a section, run on thread `thread` (0 = the caller). */
typedef void (*tk__pool_job)(void *ud, uint32_t chunk, unsigned thread);

tk__pool *tk__pool_new(unsigned threads);
void tk__pool_free(tk__pool *p);
unsigned tk__pool_threads(const tk__pool *p);
void tk__pool_run(tk__pool *p, uint32_t n, tk__pool_job job, void *ud, unsigned want);

#endif
