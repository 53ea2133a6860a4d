/*
 * tickd/world.h - the world: levels, world time, pause and time dilation.
 *
 * A world owns named levels (the level "persistent" always exists), the tick
 * functions registered in them (tick.h), a timer manager (timer.h) and the
 * tickable objects (tickable.h).  It is ticked once per frame by the engine
 * (engine.h), which owns it; nothing here reads a clock.
 *
 * Time follows Unreal's UWorld::Tick (UE-SEMANTICS 2.1):
 *   world dt  = dilation * clamp(raw dt, 0.0005 s, 0.4 s)   (FixupDeltaSeconds)
 *   dilation  in [0.0001, 20]                                (SetTimeDilation)
 *   world_time    += world dt, only while not paused (TimeSeconds)
 *   unpaused_time += world dt, always                 (UnpausedTimeSeconds)
 *   real_time     += raw dt, undilated                (RealTimeSeconds)
 * tickd keeps these clocks in integer nanoseconds, so that "exactly at a
 * multiple of the interval" means exactly that (Unreal's float cooldowns may
 * land one frame either way).
 *
 * The world is single-threaded: every call must come from the thread that
 * runs the engine's frames.  Calls made from inside a tick function, timer or
 * tickable callback are allowed and follow Unreal's mid-frame rules, except
 * from ticks that run as parallel work (tick.h, Threads), on whatever thread:
 * there a call that changes the world is refused (TK_ESTATE, logged).
 */
#ifndef TICKD_WORLD_H
#define TICKD_WORLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tk_world tk_world_t;
typedef struct tk_engine tk_engine_t;

/* A level handle: index (low 16 bits) + generation (high 16 bits); 0 never
 * names a level.  The persistent level is TK_LEVEL_PERSISTENT. */
typedef uint32_t tk_level_id;
#define TK_LEVEL_NONE ((tk_level_id)0)
#define TK_LEVEL_PERSISTENT ((tk_level_id)0x00010000u)
#define TK_LEVEL_NAME_MAX 63   /* bytes, excluding the terminator */
#define TK_LEVEL_MAX 4096      /* levels alive at once */

#define TK_DILATION_MIN 0.0001
#define TK_DILATION_MAX 20.0
#define TK_MIN_FRAME_S 0.0005  /* MinUndilatedFrameTime */
#define TK_MAX_FRAME_S 0.4     /* MaxUndilatedFrameTime */

/* ---- levels ---------------------------------------------------------- */

/*
 * Add a level named `name` (1..63 bytes of [A-Za-z0-9_.-]).
 * TK_EEXIST if a level of that name exists, TK_ELIMIT past TK_LEVEL_MAX.
 */
int tk_level_add(tk_world_t *w, const char *name, tk_level_id *out);

/*
 * Remove a level.  Every tick function registered in it is unregistered
 * first (also mid-frame: none of them ticks after this call returns).
 * TK_ESTATE for the persistent level, TK_ENOENT for an unknown or stale id.
 */
int tk_level_remove(tk_world_t *w, tk_level_id id);

/* Find a level by name: 0 or TK_ENOENT. */
int tk_level_find(const tk_world_t *w, const char *name, tk_level_id *out);

/* Name of a live level, or NULL. The string lives as long as the level. */
const char *tk_level_name(const tk_world_t *w, tk_level_id id);

/* Number of tick functions registered in a level (0 for unknown ids). */
size_t tk_level_tick_count(const tk_world_t *w, tk_level_id id);

/* Number of live levels, and the i-th in creation order (TK_LEVEL_NONE past
 * the end).  Order is stable while no level is added or removed. */
size_t tk_level_count(const tk_world_t *w);
tk_level_id tk_level_at(const tk_world_t *w, size_t i);

/* ---- time, pause, dilation ------------------------------------------- */

typedef struct tk_world_time {
    uint64_t frame;           /* frames completed so far (GFrameCounter)      */
    double world_time;        /* s, dilated, stops while paused (TimeSeconds) */
    double unpaused_time;     /* s, dilated, never stops                      */
    double real_time;         /* s, undilated                                 */
    double dt;                /* s, world dt of the last frame                */
    double raw_dt;            /* s, raw (undilated, max_dt-clamped) dt        */
    double time_dilation;     /* current global dilation                      */
    bool paused;              /* pause state between frames                   */
    bool in_frame;            /* true while the world is being ticked         */
} tk_world_time;

void tk_world_get_time(const tk_world_t *w, tk_world_time *out);

/* Exact clocks in ns (the doubles above are these times 1e-9). */
uint64_t tk_world_time_ns(const tk_world_t *w);
uint64_t tk_world_unpaused_time_ns(const tk_world_t *w);
uint64_t tk_world_frame(const tk_world_t *w);
/* Real (undilated) time in ns, exact. */
uint64_t tk_world_real_time_ns(const tk_world_t *w);
/*
 * Frames completed.  Between frames (and in the engine's request hooks) it
 * is tk_world_frame; from the end of a frame's world tick to the end of
 * that frame (the core ticker, the post_frame hook) the counter has not
 * moved yet, and this is one more: what a snapshot taken there records, so
 * that the restored world's next frame has the number the saved one's had.
 */
uint64_t tk_world_frames_done(const tk_world_t *w);
/* A frame number that tk_world_restore_time() does not rewind: it grows by
 * one every frame and never repeats in the process (each world starts its
 * own range at a multiple of 2^40).  Key per-frame caches on it. */
uint64_t tk_world_serial(const tk_world_t *w);

/*
 * Global time dilation, clamped to [TK_DILATION_MIN, TK_DILATION_MAX].
 * Takes effect from the next frame.  Returns the value actually set.
 * NaN is TK_EINVAL (nothing changes).
 */
int tk_world_set_time_dilation(tk_world_t *w, double value, double *applied);
double tk_world_time_dilation(const tk_world_t *w);

/* Pause / unpause; takes effect from the next frame (Unreal samples the pause
 * flag once at the start of UWorld::Tick). */
void tk_world_set_paused(tk_world_t *w, bool paused);
bool tk_world_paused(const tk_world_t *w);

/*
 * While paused, run the next `frames` frames as if unpaused (world time and
 * timers advance, all tick groups run).  TK_ESTATE if the world is not paused,
 * TK_EINVAL for 0.  Steps add up if called again before they ran.
 */
int tk_world_step(tk_world_t *w, uint64_t frames);
uint64_t tk_world_steps_pending(const tk_world_t *w);
/* Drop the steps not yet run (the world stays paused); returns how many. */
uint64_t tk_world_step_stop(tk_world_t *w);

/* ---- embedding --------------------------------------------------------- */

/*
 * A world of its own, without an engine: one built aside (e.g. from a
 * snapshot, on another thread, while the engine's world runs) and then
 * swapped in with tk_engine_swap_world.  Everything that takes a world works
 * on it, except what needs an engine (tk_world_engine is NULL).  A world is
 * used by one thread at a time.  tk_world_free frees one that no engine owns
 * (after a swap, the old world), on any thread; NULL is a no-op.
 */
int tk_world_new(double dilation, tk_world_t **out);
void tk_world_free(tk_world_t *w);
/* Do now, between frames, the upkeep the next frame would start with
 * (placing the tick functions registered or changed since the last frame),
 * so that the first frame of a world built aside does not pay for it (a
 * million restored functions: about a second).  Optional; any time between
 * frames. */
void tk_world_settle(tk_world_t *w);

/* One pointer of the embedder's (the daemon's entity layer keeps itself
 * here so that tick functions can find it from ctx->world). */
void tk_world_set_user(tk_world_t *w, void *user);
void *tk_world_user(const tk_world_t *w);

/*
 * Restore the clocks of a snapshot: frame counter, world, unpaused and real
 * time (s, >= 0).  Only between frames, and only while no tick function and
 * no timer exists (restore them afterwards): TK_ESTATE otherwise.
 */
int tk_world_restore_time(tk_world_t *w, uint64_t frame, double world_time,
                          double unpaused_time, double real_time);
/* The same with the exact clocks in ns (tk_world_time_ns,
 * tk_world_unpaused_time_ns, tk_world_real_time_ns): a double of seconds
 * loses nanoseconds past about 100 days. */
int tk_world_restore_time_ns(tk_world_t *w, uint64_t frame, uint64_t world_ns,
                             uint64_t unpaused_ns, uint64_t real_ns);

/* ---- errors and statistics ------------------------------------------- */

/* A sentence about the last failed call on this world ("" if none). */
const char *tk_world_last_error(const tk_world_t *w);

/* What the last frame spent, in ns of monotonic time, per phase. */
typedef struct tk_world_frame_stats {
    uint64_t group_ns[8];      /* by tk_group, TK_GROUP_NEWLY_SPAWNED = drain */
    uint64_t start_frame_ns;   /* StartFrame: cooldowns, schedule upkeep      */
    uint64_t timers_ns;        /* timer manager                               */
    uint64_t tickables_ns;     /* tickable objects                            */
    uint64_t ticks_run;        /* tick functions executed                     */
    uint64_t timers_fired;     /* timer callbacks run                         */
    uint64_t tickables_run;    /* tickables ticked                            */
    uint32_t newly_spawned_rounds; /* rounds of the last_demotable drain      */
    bool pause_frame;          /* the frame ran as a pause frame              */
    /* Threads (tick.h, Threads; all 0 with one thread): */
    uint32_t sections;         /* runs of parallel work                       */
    uint32_t sections_split;   /* of those, split over worker threads         */
    uint64_t par_ticks;        /* functions ticked as parallel work           */
    uint64_t worker_ticks;     /* of those, ticked on worker threads          */
    uint64_t worker_ns;        /* ns of tick work done on worker threads
                                  (summed over them; monotonic clock)         */
    uint64_t group_worker_ns[8]; /* worker_ns by tk_group                     */
} tk_world_frame_stats;

void tk_world_get_frame_stats(const tk_world_t *w, tk_world_frame_stats *out);

/*
 * The monotonic clock the world uses to time its phases for statistics (it
 * never influences simulation).  Set by the engine; NULL disables timing.
 * With worker threads (tick.h, Threads) it is also read on them while a
 * profiler or slow-tick detection is on: it must be thread-safe then.
 */
void tk_world_set_stats_clock(tk_world_t *w, uint64_t (*clock)(void *), void *ud);

/* ---- profiling (engine.profile, world.trace) --------------------------- */

/*
 * A profiler sees where a frame goes, in events reported while the frame
 * runs (work done by worker threads: after it, in the order of one thread).
 * Times are ns of the world's stats clock (tk_world_set_stats_clock;
 * monotonic; read on worker threads too), `start_ns` absolute.  Off (no profiler set), the frame pays one
 * predictable branch per lane of same-class functions, never per function.
 * On, it pays two clock reads per run of same-class, same-level functions
 * (a batch, or the functions of a lane ticked one by one), plus two per
 * function timed on its own (see tk_profiler).
 */
typedef enum tk_prof_kind {
    TK_PROF_RUN = 0,       /* n functions of one class, group and level, in a row */
    TK_PROF_TICK = 1,      /* one function timed on its own (inside a RUN too)     */
    TK_PROF_GROUP = 2,     /* a tick group, start to end (newly_spawned: the drain) */
    TK_PROF_TIMERS = 3,    /* the timer manager pass (n = timers fired)             */
    TK_PROF_TICKABLES = 4, /* the tickables pass (n = tickables ticked)             */
    TK_PROF_TICKABLE = 5   /* one tickable (id, target = its ud)                    */
} tk_prof_kind;

typedef struct tk_prof_event {
    tk_prof_kind kind;
    int group;             /* tk_group it ran in: RUN, TICK, GROUP (pause frames:
                              the function's own group)                          */
    uint16_t cls;          /* tk_class_id: RUN, TICK                             */
    tk_level_id level;     /* RUN, TICK                                          */
    uint32_t n;            /* RUN: functions; TICK, TICKABLE: 1; TIMERS,
                              TICKABLES: how many ran; GROUP: functions run      */
    uint64_t id;           /* TICK: tk_tick_id; RUN: its first function's;
                              TICKABLE: tk_tickable_id                           */
    void *target;          /* TICK, RUN: the (first) function's target;
                              TICKABLE: its ud                                   */
    uint64_t start_ns;     /* ns, stats clock                                    */
    uint64_t ns;           /* ns, duration                                       */
    bool pause_frame;      /* reported from a pause frame                        */
    unsigned thread;       /* RUN, TICK: the thread that ran them (0: the frame
                              thread, >= 1 a worker; tick.h, Threads)            */
} tk_prof_event;

typedef struct tk_profiler {
    void (*fn)(void *ud, const tk_prof_event *ev); /* required; must not
                              register, unregister or run tick functions         */
    void *ud;
    uint32_t sample_every; /* time 1 in N functions on their own (TICK), to
                              find the slowest ones; 0 = none                    */
    uint64_t each_above_ns;/* once a run of a class averages more than this per
                              function, time every function of that class on
                              its own (for the profiler's lifetime); 0 = never   */
    bool each;             /* time every function on its own, batches off
                              (traces: a start and a duration per tick)          */
} tk_profiler;

/*
 * Install a profiler (copied) or remove it (NULL).  Between frames or from a
 * callback; an install takes effect at the next run of functions.  TK_EINVAL
 * for a profiler without fn.
 */
int tk_world_set_profiler(tk_world_t *w, const tk_profiler *p);
bool tk_world_profiling(const tk_world_t *w);

#ifdef __cplusplus
}
#endif
#endif
