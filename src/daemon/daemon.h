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

#include "agones.h"
#include "config.h"
#include "jsonw.h"
#include "logging.h"
#include "notify.h"
#include "profile.h"
#include "reqstats.h"
#include "server.h"
#include "sim/sim.h"
#include "tickd/tickd.h"

typedef struct tkd_waiter tkd_waiter;
typedef struct tkd_job tkd_job;
typedef struct tkd_replayer tkd_replayer;
struct tkd_journal;
struct tkd_replay_opts;

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
    tkd_prof *prof;             /* engine.profile, world.trace (profile.h)    */
    tkd_job *jobs;              /* big requests done in slices (methods.c)    */
    bool sprinting;
    uint64_t sprint_frames;     /* frames left to sprint (all sprint waiters) */

    /* counters for engine.stats */
    uint64_t action_runs;       /* timer actions run                          */
    uint64_t action_errors;     /* timer actions that failed                  */
    tkd_reqstats reqstats;      /* per-method calls, errors and time          */
    struct tkd_metrics *metrics; /* /metrics and /healthz (metrics.h), or NULL */

    tkd_ratelimit_t behind_rl;  /* "can't keep up" warnings                   */

    /* Where the frame went (issue "see where the frame goes"): what was
     * slowest in the frame being built, and in the worst frame of the
     * current lag streak, for the "can't keep up" line. */
    struct tkd_culprit {
        char what[96];          /* "request entity.spawn", "class burner in
                                   post_physics", "timer action world.save" */
        uint64_t ns;
    } cur_slowest, lag_worst, lag_prev;
    uint64_t lag_worst_work_ns; /* work of the worst frame of the streak      */
    uint64_t lag_prev_work_ns;  /* work of the previous frame                 */
    uint64_t slow_requests;     /* requests / actions over slow_request_ms    */
    uint64_t rss_cached;        /* bytes, for [world] max_memory              */
    uint64_t rss_at_ns;         /* when it was read                           */
    bool offline;               /* no socket (fuzzing, tests): tkd_init_offline */
    char *info_text;            /* engine.info result, serialized (cache)     */
    double info_rate, info_fixed; /* the tick rate and fixed dt it shows       */
    tk_pacing info_pacing;      /* and the pacing                             */
    unsigned info_threads;      /* ... and threads                             */
    tk_ticker_handle stats_ticker;
    tk_ticker_handle autosave_ticker;
    tkd_notify notify;          /* systemd notify socket and watchdog         */
    tk_ticker_handle status_ticker; /* STATUS= to systemd, every few seconds  */
    struct tkd_bgsave *bgsave;  /* world.save/autosave in a child (snapshot.c) */
    bool frame_done;            /* a frame ended; its idle time not begun yet  */
    uint64_t idle_deadline_ns;  /* while requests run between frames: when the
                                   next frame is due (monotonic), else 0     */
    tkd_agones *agones;         /* the Agones SDK client (agones.h), or NULL  */
    uint64_t info_agones_gen;   /* tkd_agones_info_gen the cached info shows  */
    uint64_t snap_journal_id;   /* written as the snapshot's "journal" id while
                                   the journal takes it as its base (journal.c);
                                   0: none                                   */

    /* The command journal (replay.h, journal.h). */
    struct tkd_journal *journal; /* [journal] path: the open journal, or NULL */
    struct event *journal_ev;   /* its eventfd: replies may go               */
    char *journal_base;         /* the base snapshot's resolved path         */
    uint64_t rewrite_id;        /* the id of a rewrite whose save runs, or 0  */
    uint64_t hash_frames;       /* frames since the last recorded hash        */
    bool rewrite_wanted;        /* a snapshot of the base is due (world.load) */
    bool journal_truncate_corrupt; /* --journal-truncate-corrupt              */
    tkd_replayer *replay;       /* a replay runs (recovery, tickd --replay)   */
    const struct tkd_replay_opts *replay_opts; /* tickd --replay, or NULL     */
    bool replay_req;            /* tkd_exec runs a recorded client request    */
    uint64_t replay_failures;   /* recorded requests that failed when replayed */
} tkd;

/* Create the daemon from a loaded config (binds the socket, creates levels).
 * On error writes a sentence in err and returns non-zero. */
int tkd_init(tkd *d, char *err, size_t errlen);
/* Threads ticks run on for `[engine] threads` = `configured` (0: one per
 * online CPU, at most TK_ENGINE_MAX_THREADS). */
unsigned tkd_threads(unsigned configured);
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
/* May clients of the read-only socket call it? */
bool tkd_method_readonly(const char *name);

/* Timer actions, for snapshots: check one, read a timer's, restore a timer
 * into world `w` (the daemon's, or one built aside for world.load: then on
 * the loading thread, which touches nothing of `d` but keeps the pointer). */
int tkd_action_check(const json_t *action, char *why, size_t len);
json_t *tkd_timer_action(tkd *d, tk_timer_handle h);
int tkd_timer_restore(tkd *d, tk_world_t *w, tk_timer_handle h, double rate, bool loop,
                      tk_timer_status status, double remaining, uint64_t fired,
                      const json_t *action);

/* A request or (action) a timer action took `ns` executing `method`
 * (tkd_exec calls this): remember it for the lag log, and if it is over
 * [stats] slow_request_ms count it, publish slow_request and return true. */
bool tkd_note_request(tkd *d, const char *method, uint64_t ns, bool action);

/* The work split of a frame: {"requests","ticks","timers","tickables",
 * "ticker","other"} in ms (new reference). */
json_t *tkd_frame_split_json(tkd *d, const tk_frame_info *f);

/* The engine.stats object (new reference). */
json_t *tkd_stats_json(tkd *d);

/* Run the requests done in slices (methods.c) until `deadline_ns`; true
 * while some remain. */
bool tkd_jobs_run(tkd *d, uint64_t deadline_ns);
/* Can a request in slices go on now (not a load whose file is still read)? */
bool tkd_jobs_ready(const tkd *d);
/* A replay's step of the oldest request in slices (a world.load: applied,
 * waiting for its reading), and its undoing; false if none is in progress. */
bool tkd_jobs_replay_step(tkd *d);
bool tkd_jobs_replay_cancel(tkd *d);

/* One pass of the event loop (at most `timeout_ms`; 0: poll) and the
 * requests that came, run at once (a replay serving between frames). */
void tkd_serve_once(tkd *d, int timeout_ms);

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
