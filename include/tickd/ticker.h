/*
 * tickd/ticker.h - the engine's core ticker (Unreal's FTSTicker, UE-SEMANTICS 6).
 *
 * Delegates that run once per engine frame after the world tick, with the
 * raw, undilated dt, also while the world is paused.  A delegate has a delay:
 * it fires when the ticker's time reaches its fire time, and returns true to
 * keep ticking (next fire = now + delay; no catch-up) or false to be removed.
 * Delegates run in the order they were added; one added during a pass is run
 * in the same pass (a 0-delay one fires at once).  If no delegate is
 * registered the ticker's time does not advance (as Unreal's).
 *
 * The home of periodic housekeeping: stats roll-ups, watchdog pings, events.
 */
#ifndef TICKD_TICKER_H
#define TICKD_TICKER_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tk_engine tk_engine_t;
typedef uint64_t tk_ticker_handle;
#define TK_TICKER_NONE ((tk_ticker_handle)0)

/* Returns true to keep ticking. `dt` is the frame's raw dt in seconds. */
typedef bool (*tk_ticker_fn)(void *ud, double dt);

/* Add a delegate; delay >= 0 and finite (s). */
int tk_ticker_add(tk_engine_t *e, double delay, tk_ticker_fn fn, void *ud,
                  tk_ticker_handle *out);
/* Remove (safe from inside its own callback). TK_ENOENT if gone. */
int tk_ticker_remove(tk_engine_t *e, tk_ticker_handle h);

#ifdef __cplusplus
}
#endif
#endif
