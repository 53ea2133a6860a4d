/*
 * ticker_int.h - the core ticker's entry points for the engine (ticker.c).
 *
 * The public calls (tickd/ticker.h) reach the engine's ticker through
 * tk__engine_ticker(); the tk__ticker_* calls below work on any ticker, so
 * the ticker can be driven on its own (unit tests, benchmarks).
 */
#ifndef TICKD_TICKER_INT_H
#define TICKD_TICKER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "tickd/ticker.h"

struct tk__ticker;

struct tk__ticker *tk__ticker_new(void);
/* Free the ticker and its delegates (there is no free_ud).  NULL is a no-op;
 * must not be called from inside a delegate. */
void tk__ticker_free(struct tk__ticker *t);
/* One pass with the frame's raw dt in seconds (engine step 5). */
void tk__ticker_tick(struct tk__ticker *t, double dt);
/* The engine's ticker (defined in engine.c). */
struct tk__ticker *tk__engine_ticker(tk_engine_t *e);

/* tk_ticker_add / tk_ticker_remove on a given ticker, with the same
 * contract; they return the code without a sentence. */
int tk__ticker_add(struct tk__ticker *t, double delay, tk_ticker_fn fn, void *ud,
                   tk_ticker_handle *out);
int tk__ticker_remove(struct tk__ticker *t, tk_ticker_handle h);
/* The ticker's time in ns: the sum of the dt of the passes that had at least
 * one delegate. */
uint64_t tk__ticker_time_ns(const struct tk__ticker *t);
/* Delegates registered (not removed). */
size_t tk__ticker_count(const struct tk__ticker *t);

#endif
