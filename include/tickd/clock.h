/*
 * tickd/clock.h - the monotonic clock.
 *
 * Time is nanoseconds of CLOCK_MONOTONIC as a uint64_t.  The engine reads it
 * once per frame (libuv's loop->time); everything below the engine receives
 * `now`/`dt` as arguments and never reads the clock itself, so tests drive
 * time in exact steps.  A clock can be replaced (tk_engine_desc.clock) by a
 * fake one in tests.
 */
#ifndef TICKD_CLOCK_H
#define TICKD_CLOCK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TK_NS_PER_S 1000000000ull

/* CLOCK_MONOTONIC in ns. */
uint64_t tk_clock_now_ns(void);

/* A clock source: returns monotonic ns. */
typedef uint64_t (*tk_clock_fn)(void *ud);

/* Seconds <-> ns, rounding to nearest; negative or NaN seconds give 0. */
uint64_t tk_s_to_ns(double s);
static inline double tk_ns_to_s(uint64_t ns) { return (double)ns * 1e-9; }

/*
 * Sleep until `deadline_ns` (monotonic) as precisely as the OS allows without
 * spinning a core: clock_nanosleep(TIMER_ABSTIME) to shortly before the
 * deadline, then a short spin (at most `spin_ns`).  Returns at once if the
 * deadline has passed.  Precise only with a small timer slack: the engine
 * sets the thread's to 1 ns (prctl PR_SET_TIMERSLACK), the kernel's default
 * is 50 us.
 */
void tk_clock_sleep_until(uint64_t deadline_ns, uint64_t spin_ns);

/*
 * The spin of the engine's default wait and of the daemon's last stretch
 * before a frame: about a wake-up latency of clock_nanosleep on a VM
 * (tens of us), so the sleep usually ends just before the deadline and
 * the spin is short; at 60 Hz it costs at most 0.6% of a core.
 */
#define TK_CLOCK_SPIN_NS 100000ull

#ifdef __cplusplus
}
#endif
#endif
