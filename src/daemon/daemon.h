/*
 * daemon.h - the tickd daemon: one frame thread that owns the engine, the
 * entity layer, the control socket and the events (DESIGN.md "One thread
 * owns the world").
 *
 * The engine's pacing wait is the libevent loop: between frames the daemon
 * serves its socket until the frame deadline (a precise timer), then spins
 * the last stretch.  Requests are parsed as they arrive and executed at the
 * frame boundary (the engine's pre_world hook), in arrival order.
 */
#ifndef TICKD_DAEMON_H
#define TICKD_DAEMON_H

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "logging.h"
#include "notify.h"
#include "server.h"
#include "sim/sim.h"
#include "tickd/tickd.h"

typedef struct tkd_trace tkd_trace;
typedef struct tkd_waiter tkd_waiter;

typedef struct tkd {
    tkd_config cfg;
    tk_engine_t *engine;
    tk_world_t *world;
    tks_sim *sim;
    struct event_base *base;
    tkd_server *srv;
    struct event *sig_term, *sig_int, *sig_hup, *wake;

    volatile bool shutdown;     /* graceful stop requested                    */
    bool reload;                /* SIGHUP received, apply at frame boundary   */
    int exit_code;

    /* answered-later requests */
    tkd_waiter *waiters;        /* world.step / engine.sprint                 */
    tkd_trace *traces;          /* world.trace                                */
    bool sprinting;
    uint64_t sprint_frames;     /* frames left to sprint (all sprint waiters) */

    /* counters for engine.stats */
    uint64_t action_runs;       /* timer actions run                          */
    uint64_t action_errors;     /* timer actions that failed                  */

    tkd_ratelimit_t behind_rl;  /* "can't keep up" warnings                   */
    bool offline;               /* no socket (fuzzing, tests): tkd_init_offline */
    char *info_text;            /* engine.info result, serialized (cache)     */
    double info_rate, info_fixed; /* the tick rate and fixed dt it shows       */
    tk_ticker_handle stats_ticker;
    tk_ticker_handle autosave_ticker;
    tkd_notify notify;          /* systemd notify socket and watchdog         */
    tk_ticker_handle status_ticker; /* STATUS= to systemd, every few seconds  */
    struct tkd_bgsave *bgsave;  /* world.save/autosave in a child (snapshot.c) */
} tkd;

/* Create the daemon from a loaded config (binds the socket, creates levels).
 * On error writes a sentence in err and returns non-zero. */
int tkd_init(tkd *d, char *err, size_t errlen);
/* An engine and entity layer from the config, without socket, signals or
 * event loop, for driving methods directly (fuzz targets, tests): frames run
 * with tk_engine_frame; world.save/load always use cfg.snapshot_path. */
int tkd_init_offline(tkd *d, char *err, size_t errlen);
void tkd_fini_offline(tkd *d);

/* --check-config: load every configured plugin into a throwaway world. */
int tkd_check_plugins(const tkd_config *cfg, char *err, size_t errlen);

/* Run frames until shutdown or cfg max frames (0 = forever). */
void tkd_run(tkd *d, uint64_t max_frames);
/* Graceful teardown: answer what is pending, close clients, remove the socket. */
void tkd_fini(tkd *d);

/* Execute one request (from the socket or a timer action).  `call` may be
 * NULL: then the result is discarded and errors are logged and counted. */
void tkd_exec(tkd *d, tkd_call *call, const char *method, json_t *params);

/* Method names, NULL-terminated. */
const char *const *tkd_method_names(void);
bool tkd_method_exists(const char *name);

/* Timer actions, for snapshots: check one, read a timer's, restore a timer. */
int tkd_action_check(const json_t *action, char *why, size_t len);
json_t *tkd_timer_action(tkd *d, tk_timer_handle h);
int tkd_timer_restore(tkd *d, tk_timer_handle h, double rate, bool loop, tk_timer_status status,
                      double remaining, uint64_t fired, const json_t *action);

/* The engine.stats object (new reference). */
json_t *tkd_stats_json(tkd *d);

/* Frame-boundary hooks of methods.c for answered-later requests. */
void tkd_methods_post_frame(tkd *d, const tk_frame_info *f);
void tkd_methods_shutdown(tkd *d);

/* Protocol timers: the shortest rate (s).  A looping timer catches up one
 * action per elapsed period, so a tinier rate would run thousands of actions
 * in one frame. */
#define TKD_TIMER_MIN_RATE 0.001

/* Version string. */
#define TKD_VERSION TICKD_VERSION

#endif
