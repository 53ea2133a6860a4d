/*
 * pool_int.h - the engine's worker threads (pool.c): threads - 1 workers
 * that run the chunks of a section (tick.c, "Threads") beside the thread
 * that publishes it, the frame thread, which takes chunks itself.
 *
 * Not part of the public API: embedders choose the number of threads with
 * tk_engine_desc.threads / tk_engine_set_threads (engine.h); the engine owns
 * its pool and the world reaches it through tk__engine_pool (world_int.h).
 */
#ifndef TICKD_POOL_INT_H
#define TICKD_POOL_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "tickd/engine.h"

typedef struct tk__pool tk__pool;

/* Run chunk `chunk` of the current section on thread `thread` (0: the
 * thread that called tk__pool_run; 1 .. threads - 1: a worker). */
typedef void (*tk__pool_job)(void *ud, uint32_t chunk, unsigned thread);

/*
 * A pool of `threads` threads in all (2 .. TK_ENGINE_MAX_THREADS, asserted):
 * the caller of tk__pool_run and threads - 1 workers started here, with
 * every signal blocked and named "tickd-worker-N".  The workers sleep on a
 * futex until the first section.  NULL when a worker cannot be started (the
 * error is logged; those already started are stopped).
 */
tk__pool *tk__pool_new(unsigned threads);

/* Stop and join the workers, free the pool.  NULL is a no-op.  Never during
 * tk__pool_run. */
void tk__pool_free(tk__pool *p);

/* Threads in all, the caller included; 1 for NULL (no pool). */
unsigned tk__pool_threads(const tk__pool *p);

/*
 * Run job(ud, k, thread) once for every chunk k in [0, n) and return when
 * all have finished; everything the chunks wrote is visible to the caller
 * then.  The caller takes chunks like any worker (a worker that has not
 * woken up yet simply gets none, so nothing waits for a wake-up), and only
 * waits for chunks others took.  `want` is how many threads the section is
 * worth, the caller included: at most want - 1 sleeping workers are woken
 * (a worker still spinning after the previous section may take chunks
 * anyway).  n = 0 returns at once.  One section at a time, always from the
 * same thread; `job` must not call tk__pool_run.
 */
void tk__pool_run(tk__pool *p, uint32_t n, tk__pool_job job, void *ud, unsigned want);

#endif
