/*
 * tickd/engine.h - the engine loop: pacing, time, and the order of a frame.
 *
 * One frame (Unreal's FEngineLoop::Tick -> UWorld::Tick), written once here
 * and followed by engine.c in this order:
 *
 *   1. Pace: wait until the frame's deadline (tk_pacing: `unreal`, the
 *      previous frame's start + period, as UpdateTimeAndHandleMaxTickRate; or
 *      `steady`, the next point of a fixed grid of periods).  The wait is a
 *      hook: the daemon serves its socket there.  Tick rate 0: the hook is
 *      called with deadline 0 (poll without waiting).
 *   2. Time: read the clock once; raw dt = now - previous frame start (or the
 *      fixed dt), clamped to max_dt; the world derives its dilated dt.
 *   3. pre_world hook: deferred control requests (TickDeferredCommands).
 *      Unreal runs deferred commands at the end of the previous frame, after
 *      the core ticker and before GFrameCounter++; tickd runs requests in
 *      the wait hook and here, and for the timer manager both count as that
 *      slot (tk_timer_ticked_this_frame is true there when the previous
 *      frame ticked it), so a timer set by a request is active at once.
 *      tk_world_frame already reads the next frame's number there.
 *   4. World tick: StartFrame, pre_physics, start_physics, during_physics,
 *      end_physics, post_physics, timer manager, tickables, post_update_work,
 *      last_demotable + newly-spawned drain, EndFrame (or a pause frame).
 *   5. Core ticker (raw dt, also while paused), then the post_frame hook
 *      (stats, events, watchdog), then the frame counter + 1 - at the very end.
 *
 * Threads (tk_engine_desc.threads, tk_engine_set_threads): with more than
 * one, the world's parallel work (tick.h, Threads) runs on the frame thread
 * and threads - 1 workers inside its groups; everything else, and every
 * hook, stays on the frame thread.  The workers sleep (no CPU) while there
 * is nothing to split.
 *
 * dt is always the real time between two frame starts (then clamped), in
 * both pacings.  A frame counts as an overrun when its work time exceeds the
 * period.
 *
 * Pacing (tk_engine_desc.pacing, tk_engine_set_pacing):
 *
 *   TK_PACING_UNREAL  Unreal's MaxTickRate rule: deadline = the previous
 *                     frame's start + period.  Whatever makes a frame start
 *                     late (a late wake-up, a long frame) is never paid back,
 *                     so the average rate is below the tick rate by the mean
 *                     lateness (a 100 us wake-up latency at 60 Hz: 0.6%).
 *   TK_PACING_STEADY  Deadlines on a fixed grid: deadline = the previous
 *                     frame's grid point + period, wherever in its period
 *                     that frame actually started.  A late start is paid
 *                     back by the next, shorter, period; frames that fell
 *                     behind run back to back until the loop is on the grid
 *                     again.  Once a frame starts more than
 *                     TK_PACING_STEADY_MAX_BEHIND periods after its grid
 *                     point, the grid re-anchors at that frame's start (the
 *                     time is dropped, as with unreal) instead of bursting
 *                     that many frames.  The average rate equals the tick
 *                     rate whenever the loop can keep up; a constant
 *                     wake-up latency cancels out of every period.
 *
 * A change of tick rate applies to the deadline being waited for (the grid
 * continues from the last grid point with the new period); sprinting
 * (tk_engine_set_unpaced) and tick rate 0 re-anchor the grid at every frame.
 */
#ifndef TICKD_ENGINE_H
#define TICKD_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "world.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Wait until monotonic time `deadline_ns`, doing useful work meanwhile, and
 * return at or after the deadline (the engine re-reads the clock and calls
 * again if the hook returns early, unless tk_engine_stop() was called).
 * deadline_ns == 0: poll once without blocking.
 */
typedef void (*tk_wait_fn)(void *ud, uint64_t deadline_ns);

/* How frame deadlines are placed (see the top of this file). */
typedef enum tk_pacing {
    TK_PACING_UNREAL = 0,   /* previous start + period (Unreal's MaxTickRate) */
    TK_PACING_STEADY = 1    /* a fixed grid: late starts are paid back        */
} tk_pacing;

/* Steady pacing re-anchors its grid once a frame starts more than this many
 * periods after its grid point (at 60 Hz: 66.7 ms). */
#define TK_PACING_STEADY_MAX_BEHIND 4

/* "unreal", "steady"; NULL for anything else. */
const char *tk_pacing_name(tk_pacing p);
/* The pacing named `name` into *out: 0, or TK_EINVAL for an unknown name. */
int tk_pacing_parse(const char *name, tk_pacing *out);

typedef struct tk_frame_info {
    uint64_t frame;         /* number of the frame that just ran           */
    uint64_t start_ns;      /* monotonic start (after the wait)            */
    uint64_t raw_dt_ns;     /* after max_dt, before world clamps/dilation  */
    uint64_t world_dt_ns;   /* dilated world dt                            */
    uint64_t work_ns;       /* monotonic time spent in steps 2-5, plus the
                               work done in the wait hook before it and the
                               previous frame's post_frame hook: every ns of
                               the frame thread that was not idle          */
    uint64_t wait_ns;       /* time spent in the wait hook before it       */
    /* work_ns split (they add up to work_ns): */
    uint64_t requests_ns;   /* deferred commands: the pre_world hook plus
                               TK_WORK_REQUESTS added by the wait hook     */
    uint64_t world_ns;      /* the world tick (ticks, timers, tickables;
                               tk_world_get_frame_stats splits it further) */
    uint64_t ticker_ns;     /* the core ticker                             */
    uint64_t other_ns;      /* the previous post_frame hook (events, stats),
                               TK_WORK_OTHER added by the wait hook, and
                               the clock reads around them                 */
    uint64_t carried_ns;    /* the part of work_ns done before start_ns (in
                               the wait hook, the previous post_frame):
                               start_ns + work_ns - carried_ns is the end  */
    uint64_t cpu_ns;        /* CPU time of the frame thread (user + system:
                               page faults count; tick workers' time is not
                               in it) in steps 3-5 and in the previous
                               post_frame hook; their wall time is work_ns
                               minus what the wait hook added.  With one
                               thread, the difference is time the thread was
                               runnable but not running: the machine's     */
    uint64_t gap_ns;        /* start of this frame - start of the previous
                               (what a client sees; 0 for the first)      */
    uint64_t period_ns;     /* target period (0 = unlimited)               */
    uint64_t deadline_ns;   /* monotonic deadline this frame waited for (0:
                               not paced); start_ns - deadline_ns is how
                               late it started                             */
    bool overrun;           /* work_ns > period_ns                         */
    bool paused;            /* ran as a pause frame                        */
} tk_frame_info;

typedef struct tk_engine_desc {
    double tick_rate;       /* Hz; 0 = unlimited                             */
    double fixed_dt;        /* s; 0 = real time                              */
    double max_dt;          /* s; clamp on the raw dt; 0 = no clamp          */
    double time_dilation;   /* initial world dilation; 0 means 1             */
    uint64_t max_frames;    /* tk_engine_run stops after this many; 0 = never */
    tk_pacing pacing;       /* TK_PACING_UNREAL (0, the default) or STEADY   */
    unsigned threads;       /* threads that run ticks, the frame thread
                               included; 0 and 1: the frame thread only
                               (the default); at most TK_ENGINE_MAX_THREADS */
    double split_min_us;    /* a run of parallel work is split over the
                               threads when its expected work (measured)
                               reaches this; 0: TK_ENGINE_SPLIT_MIN_US      */
    tk_clock_fn clock;      /* NULL: CLOCK_MONOTONIC.  With threads > 1 it
                               is also called on workers while a profiler or
                               slow-tick detection is on: thread-safe then */
    void *clock_ud;
    tk_wait_fn wait;        /* NULL: tk_clock_sleep_until                    */
    void *wait_ud;
    void (*pre_world)(void *ud, tk_engine_t *e);   /* step 3 */
    void (*post_frame)(void *ud, tk_engine_t *e, const tk_frame_info *f);
    void *hook_ud;
} tk_engine_desc;

/* Most threads an engine runs ticks on (tk_engine_desc.threads). */
#define TK_ENGINE_MAX_THREADS 256
/* Default of tk_engine_desc.split_min_us: waking a sleeping worker costs
 * 10 - 40 us on a VM, so less work than this runs faster on one thread. */
#define TK_ENGINE_SPLIT_MIN_US 50.0

/* Fill a desc with the shipped defaults: 60 Hz, real time, max_dt 0.4,
 * unreal pacing (Unreal's MaxTickRate; the daemon ships steady), one
 * thread (the daemon ships one per online CPU). */
void tk_engine_desc_default(tk_engine_desc *desc);

/* Create an engine and its world.  Validates the desc (rates finite, >= 0,
 * threads <= TK_ENGINE_MAX_THREADS): TK_EINVAL; TK_ENOMEM if the worker
 * threads cannot be started. */
int tk_engine_new(const tk_engine_desc *desc, tk_engine_t **out);
/* Free the engine and its world.  NULL is a no-op. */
void tk_engine_free(tk_engine_t *e);

tk_world_t *tk_engine_world(tk_engine_t *e);

/*
 * Make `w` (a world of its own, tk_world_new) the engine's world, between
 * frames; the engine's world until now is returned in *old, a world of its
 * own (free it with tk_world_free, on any thread).  What belongs to the
 * engine rather than to the simulation moves with the engine: the frame
 * serial (it goes on, never rewinds), the stats clock, the last frame's
 * statistics, the profiler, the trace and slow-tick hooks, and the steps
 * owed to a paused world (kept if `w` is paused).  The levels, tick
 * functions, timers, tickables, clocks, dilation, pause and user pointer are
 * `w`'s.  TK_EINVAL (w owned by an engine), TK_ESTATE (inside a frame).
 */
int tk_engine_swap_world(tk_engine_t *e, tk_world_t *w, tk_world_t **old);
tk_engine_t *tk_world_engine(tk_world_t *w);

/* Run one frame, pacing first (0, or TK_ESTATE if stopped). */
int tk_engine_frame(tk_engine_t *e);
/* Run frames until tk_engine_stop() or max_frames; returns frames run. */
uint64_t tk_engine_run(tk_engine_t *e);
/* Ask tk_engine_run to return after the current frame (callable from hooks,
 * callbacks and signal-flag handlers on the frame thread). */
void tk_engine_stop(tk_engine_t *e);
bool tk_engine_stopping(const tk_engine_t *e);

int tk_engine_set_tick_rate(tk_engine_t *e, double hz);
double tk_engine_tick_rate(const tk_engine_t *e);
int tk_engine_set_fixed_dt(tk_engine_t *e, double s);
double tk_engine_fixed_dt(const tk_engine_t *e);
int tk_engine_set_max_dt(tk_engine_t *e, double s);
double tk_engine_max_dt(const tk_engine_t *e);
/* Change the pacing from the next deadline on (TK_EINVAL for an unknown
 * value).  Steady pacing starts its grid at the last frame's start. */
int tk_engine_set_pacing(tk_engine_t *e, tk_pacing p);
tk_pacing tk_engine_pacing(const tk_engine_t *e);
/*
 * Work the wait hook did on the frame thread (e.g. requests run between
 * frames), attributed to the next frame: it is added to that frame's
 * work_ns (and so to mspt and overruns) under `kind`.  Call from the wait
 * hook with the ns it measured.
 */
typedef enum tk_work_kind { TK_WORK_REQUESTS = 0, TK_WORK_OTHER = 1 } tk_work_kind;
void tk_engine_add_work(tk_engine_t *e, tk_work_kind kind, uint64_t ns);

/*
 * Run ticks on `threads` threads from the next frame on (0 and 1: the frame
 * thread only; at most TK_ENGINE_MAX_THREADS, else TK_EINVAL).  Between
 * frames only (TK_ESTATE inside one).  Workers are started or stopped here;
 * if they cannot be started, TK_ENOMEM and nothing changes.
 */
int tk_engine_set_threads(tk_engine_t *e, unsigned threads);
/* Threads ticks run on (1: the frame thread only). */
unsigned tk_engine_threads(const tk_engine_t *e);
/* tk_engine_desc.split_min_us from the next run of parallel work on (finite,
 * > 0 and <= 1e6, else TK_EINVAL). */
int tk_engine_set_split_min(tk_engine_t *e, double us);
double tk_engine_split_min(const tk_engine_t *e);

/* While set, frames are not paced (Minecraft's /tick sprint). */
void tk_engine_set_unpaced(tk_engine_t *e, bool unpaced);

/*
 * Replaying a recorded run: the next frame's raw dt (step 2) is exactly
 * `raw_dt_ns`, the raw dt a recorded frame had (tk_frame_info.raw_dt_ns),
 * whatever the clock, fixed_dt and max_dt say.  It applies to one frame;
 * set it again before each.  Pacing is unchanged (tick rate 0 or
 * tk_engine_set_unpaced for none), and statistics still read the clock.
 */
void tk_engine_set_next_dt(tk_engine_t *e, uint64_t raw_dt_ns);

/*
 * Run fn(ud) now as the request hooks run (step 3's deferred commands of
 * the frame that just ran: a timer set there is active at once when that
 * frame ticked the timer manager), without running a frame: for replaying
 * recorded requests that ran between frames.  Between frames only.
 */
void tk_engine_run_deferred(tk_engine_t *e, void (*fn)(void *ud), void *ud);

/* The raw dt of the frame being run (from step 2 on: in the pre_world hook,
 * of the frame about to tick); between frames, the last frame's.  ns. */
uint64_t tk_engine_frame_dt_ns(const tk_engine_t *e);

/* Frames completed (the frame counter). */
uint64_t tk_engine_frame_count(const tk_engine_t *e);
/* Monotonic ns from the engine's clock. */
uint64_t tk_engine_now(const tk_engine_t *e);

/* ---- statistics ---------------------------------------------------------- */

typedef struct tk_mspt {
    double mean, p50, p95, p99, max;  /* ms of work per frame, last 10 s */
} tk_mspt;

typedef struct tk_engine_stats {
    uint64_t frame;
    double target_hz;
    double tps_1s, tps_10s, tps_1m;   /* frames per second over the windows */
    tk_mspt mspt;
    uint64_t overruns;                /* frames whose work exceeded the period */
    double behind_s;                  /* how far the loop is behind its pace:
                                         unreal, the lateness summed over the
                                         current run of late frames; steady,
                                         the last start's distance from its
                                         grid point plus the time dropped by
                                         re-anchoring during that run       */
    double gap_max_ms_10s;            /* largest gap between frame starts over
                                         the last 10 whole seconds + this one */
    tk_frame_info last;               /* the last frame                       */
} tk_engine_stats;

void tk_engine_get_stats(const tk_engine_t *e, tk_engine_stats *out);
/* The last frame's report (NULL before the first frame); cheap, unlike
 * tk_engine_get_stats. */
const tk_frame_info *tk_engine_last_frame(const tk_engine_t *e);
/* How far the loop is behind its pace (s): tk_engine_stats.behind_s, cheap. */
double tk_engine_behind_s(const tk_engine_t *e);

/*
 * Frame-time statistics over a window, usable on their own (engine.sprint
 * reports the mspt of its frames).  Constant memory: per-second buckets of a
 * log-linear histogram (percentiles within 0.8% from 1 us to 17 s), enough
 * for 60 s of windows.  Windows fall on whole seconds of the monotonic clock;
 * stats.c's header states the exact edges and precision.
 */
typedef struct tk_frame_stats tk_frame_stats;
tk_frame_stats *tk_frame_stats_new(void);
void tk_frame_stats_free(tk_frame_stats *s);
void tk_frame_stats_reset(tk_frame_stats *s);
/* Record a frame of `work_ns` that started at monotonic `start_ns`. */
void tk_frame_stats_add(tk_frame_stats *s, uint64_t start_ns, uint64_t work_ns);
/* mspt over the last `window_s` seconds (1..60) ending at `now_ns`; window_s
 * 0 means every frame recorded since the last reset. */
void tk_frame_stats_mspt(const tk_frame_stats *s, uint64_t now_ns,
                         unsigned window_s, tk_mspt *out);
/* Frames per second over the last `window_s` (1..60) whole seconds before
 * `now_ns`, or over the time actually recorded when that is shorter (so the
 * rate is right from the start); window_s 0 means since the last reset. */
double tk_frame_stats_tps(const tk_frame_stats *s, uint64_t now_ns,
                          unsigned window_s);

#ifdef __cplusplus
}
#endif
#endif
