/*
 * profile.h - engine.profile and world.trace: where the frame goes.
 *
 * Both feed on libtickd's profiler hook (world.h, tk_profiler), installed
 * only while a profile or a trace runs, plus two daemon-side sources the
 * core cannot see: timer actions (methods.c times each action it runs while
 * profiling) and the frame's requests (daemon.c times the drain).
 *
 *   engine.profile {"seconds"?: 10, "frames"?}   answered later
 *       time and calls per class x group x level, per timer action method,
 *       per tickable class; the 20 slowest single tick functions timed; a
 *       frame-time histogram.  One running profile per connection (a second
 *       one is -32002), at most PROFILE_MAX_RUNNING in the daemon (-32003).
 *   world.trace {"frames"}                       answered later
 *       the executed tick functions of the next frames with start and
 *       duration, and spans for groups, timers, tickables and requests.
 *
 * Neither is available as a timer action (nowhere to answer).
 */
#ifndef TICKD_DAEMON_PROFILE_H
#define TICKD_DAEMON_PROFILE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "server.h"
#include "tickd/tickd.h"

struct tkd;
typedef struct tkd_prof tkd_prof;

#define PROFILE_MAX_SECONDS 600.0
#define PROFILE_MAX_FRAMES 36000
#define PROFILE_MAX_RUNNING 8
#define PROFILE_TOP 20
#define TRACE_MAX_FRAMES 600

/* The method handlers: answer (now or later) through `call`; a NULL call
 * (a timer action) is refused, logged and counted as an action error. */
void tkd_prof_engine_profile(struct tkd *d, tkd_call *call, json_t *params);
void tkd_prof_world_trace(struct tkd *d, tkd_call *call, json_t *params);

/* True while a profile or a trace runs: the daemon then times its timer
 * actions and requests and reports them below. */
static inline bool tkd_prof_active(const tkd_prof *p) { return p != NULL; }

/* A timer action of `method` ran from `t0` for `ns` (monotonic ns). */
void tkd_prof_timer_action(struct tkd *d, const char *method, uint64_t t0, uint64_t ns);
/* The frame's queued requests (`n` of them) ran from `t0` for `ns`. */
void tkd_prof_requests(struct tkd *d, size_t n, uint64_t t0, uint64_t ns);

/* End of a frame: account it, finish what is due. */
void tkd_prof_post_frame(struct tkd *d, const tk_frame_info *f);
/* Shutdown: answer what is pending with -32004 and free everything. */
void tkd_prof_shutdown(struct tkd *d);

#endif
