/*
 * ticker_int.h - the core ticker's entry points for the engine (ticker.c).
 */
#ifndef TICKD_TICKER_INT_H
#define TICKD_TICKER_INT_H

#include "tickd/ticker.h"

struct tk__ticker;

struct tk__ticker *tk__ticker_new(void);
void tk__ticker_free(struct tk__ticker *t);
/* One pass with the frame's raw dt in seconds (engine step 5). */
void tk__ticker_tick(struct tk__ticker *t, double dt);
/* The engine's ticker (defined in engine.c). */
struct tk__ticker *tk__engine_ticker(tk_engine_t *e);

#endif
