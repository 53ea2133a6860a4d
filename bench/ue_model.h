/*
 * ue_model.h - a reference model of Unreal Engine's tick scheduler in C.
 *
 * This is a port of Unreal's FTickTaskManager / FTickTaskLevel /
 * FTickTaskSequencer / FTickFunction algorithm (UE 5.8, single-threaded as on
 * a dedicated server), built for two jobs:
 *
 *   - the baseline of the tick benchmarks (bench/bench_tick.c): the same
 *     workload run on libtickd and on this model, side by side;
 *   - the oracle of the differential test (tests/test_tick_model.c): random
 *     scenarios applied to libtickd and to the model, compared frame by frame.
 *
 * What is ported, and how a reader can check it, is written in ue_model.c's
 * header.  This file is the API only.  It mirrors Unreal's concepts: a model
 * world with levels, tick functions registered with a spec, prerequisites and
 * a level, enable/disable, interval changes, pause, time dilation, and one
 * frame run with a raw dt.  It is not part of libtickd and libtickd never
 * calls it; it uses only tickd/alloc.h, tickd/log.h and tickd/error.h.
 *
 * Time is integer nanoseconds throughout (as in libtickd); Unreal keeps it
 * in float seconds, which only moves "exactly at a multiple of the interval"
 * by a frame either way and costs the same.
 */
#ifndef TICKD_BENCH_UE_MODEL_H
#define TICKD_BENCH_UE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ETickingGroup. */
enum {
    UE_TG_PRE_PHYSICS = 0,
    UE_TG_START_PHYSICS = 1,
    UE_TG_DURING_PHYSICS = 2,
    UE_TG_END_PHYSICS = 3,
    UE_TG_POST_PHYSICS = 4,
    UE_TG_POST_UPDATE_WORK = 5,
    UE_TG_LAST_DEMOTABLE = 6,
    UE_TG_NEWLY_SPAWNED = 7,
    UE_TG_MAX = 8,
    UE_TG_SAME = -1            /* end_group: same as group */
};

/* FTickFunction::ETickState. */
typedef enum ue_tick_state {
    UE_TICK_ENABLED = 0,
    UE_TICK_DISABLED = 1,
    UE_TICK_COOLING_DOWN = 2
} ue_tick_state;

typedef struct ue_model ue_model_t;

/* A tick function handle: slot index + 1 (slots are never reused, so a
 * handle stays unique for the model's life, like a UObject serial).  0 is
 * never valid. */
typedef uint64_t ue_tick_id;
#define UE_TICK_NONE ((ue_tick_id)0)

/* The tick callback (FTickFunction::ExecuteTick): `ctx` is the model's
 * ue_model_config.ctx, so a test can act on the model from inside a tick. */
typedef void (*ue_tick_fn)(void *target, float dt, void *ctx);

/* Execution log hook (tick.LogTicks): called for every tick actually
 * executed, right before the callback, with the group being run
 * (UE_TG_NEWLY_SPAWNED in the drain after last_demotable; in pause frames,
 * which run no groups, the function's own configured group) and the dt
 * handed to the callback. */
typedef void (*ue_exec_fn)(void *ud, ue_tick_id id, void *target, int group,
                           float dt);

typedef struct ue_model_config {
    /* Iterate AllEnabled / NewlySpawned in registration order instead of
     * hash-table order.  Unreal's order is hash order; the differential test
     * needs a reproducible order that matches libtickd's depth-first
     * prerequisite walk. */
    bool registration_order;
    /* tickd's documented difference: unregistering a function mid-frame
     * cancels its pending tick (Unreal runs the queued task anyway). */
    bool cancel_on_unregister;
    /* UE 5.4 behaviour for pause frames: reschedules are merged into the
     * cooldown list at the end of every pause frame, so even_when_paused
     * interval functions keep ticking at their interval while paused.  UE 5.8
     * merges only at the next StartFrame/EndFrame of an unpaused frame, so such
     * a function ticks at most once per pause. */
    bool pause_merge_each_frame;
    /* Called once per unpaused frame between post_physics and
     * post_update_work, where UWorld::Tick runs the timer manager and then
     * the tickables; code there may change tick functions (what it
     * registers is queued after post_update_work). */
    void (*between_groups)(void *ud);
    void *between_ud;
    void *ctx;                 /* handed to every tick callback               */
    ue_exec_fn on_exec;        /* optional execution log                      */
    void *exec_ud;
} ue_model_config;

/* A tick function's configuration (FTickFunction's public fields). */
typedef struct ue_tick_desc {
    ue_tick_fn fn;             /* required                                    */
    void *target;              /* passed to fn; borrowed                      */
    int level;                 /* level index from ue_model_level_add; 0 =
                                  the persistent level                        */
    int group;                 /* TickGroup, UE_TG_PRE_PHYSICS..LAST_DEMOTABLE */
    int end_group;             /* EndTickGroup; UE_TG_SAME = group             */
    double interval;           /* TickInterval, s; <= 0 every frame           */
    bool enabled;              /* initial TickState: Enabled / Disabled       */
    bool even_when_paused;     /* bTickEvenWhenPaused                         */
    bool high_priority;        /* bHighPriority                               */
    bool on_dedicated_server;  /* bAllowTickOnDedicatedServer; false: never
                                  registered (returns UE_TICK_NONE)           */
    float dilation;            /* actor CustomTimeDilation; 0 means 1         */
    const ue_tick_id *prerequisites; /* optional, live functions            */
    size_t n_prerequisites;
    uint64_t order;            /* place in registration order for
                                  cfg.registration_order; 0 = after every
                                  function registered so far.  Lets a caller
                                  that registers from inside ticks impose the
                                  order another implementation saw.          */
} ue_tick_desc;

/* Defaults of ue_tick_desc: pre_physics, end same, every frame, enabled,
 * on_dedicated_server, dilation 1, no prerequisites. */
void ue_tick_desc_default(ue_tick_desc *d, ue_tick_fn fn, void *target);

/* What ue_model_get reports about a function. */
typedef struct ue_tick_info {
    ue_tick_state state;       /* TickState                                   */
    int actual_start;          /* ActualStartTickGroup as last queued         */
    int actual_end;            /* ActualEndTickGroup as last queued           */
    bool registered;
    bool was_interval;         /* bWasInterval                                */
    int64_t cooldown_ns;       /* remaining cooldown if in the cooldown list,
                                  else -1                                     */
    size_t n_prerequisites;
} ue_tick_info;

/* ---- the model world ---------------------------------------------------- */

/* Create a model world with one level (index 0, "persistent").  `cfg` may be
 * NULL (hash order, Unreal's behaviour everywhere, no hooks).  Never fails
 * (allocation failure aborts, tk_malloc). */
ue_model_t *ue_model_new(const ue_model_config *cfg);
/* Free the world and every function in it.  NULL is a no-op. */
void ue_model_free(ue_model_t *m);

/* Add a level (a ULevel with its FTickTaskLevel); returns its index.  Levels
 * are ticked in creation order, as the world's level list. */
int ue_model_level_add(ue_model_t *m);

/* Register a tick function (RegisterTickFunction + AddPrerequisite for each
 * listed prerequisite).  Validates first (fn, level, groups, live
 * prerequisites) and changes nothing on error: TK_EINVAL.  Mid-frame, an
 * enabled function goes to NewlySpawned.  With on_dedicated_server false,
 * returns 0 and *out = UE_TICK_NONE. */
int ue_model_register(ue_model_t *m, const ue_tick_desc *d, ue_tick_id *out);

/* Unregister and destroy (the owning object goes away: UnRegisterTickFunction
 * and the weak prerequisite pointers held by other functions become stale).
 * TK_ENOENT for a dead id.  Mid-frame, the already queued task still runs
 * unless cfg.cancel_on_unregister. */
int ue_model_unregister(ue_model_t *m, ue_tick_id id);

bool ue_model_alive(const ue_model_t *m, ue_tick_id id);

/* SetTickFunctionEnable. */
int ue_model_set_enabled(ue_model_t *m, ue_tick_id id, bool enabled);
/* UpdateTickIntervalAndCoolDown (seconds). */
int ue_model_set_interval(ue_model_t *m, ue_tick_id id, double interval);
/* AddPrerequisite (unique) / RemovePrerequisite (TK_ENOENT if absent).
 * A prerequisite on itself is TK_EINVAL. */
int ue_model_add_prerequisite(ue_model_t *m, ue_tick_id id, ue_tick_id prereq);
int ue_model_remove_prerequisite(ue_model_t *m, ue_tick_id id, ue_tick_id prereq);

int ue_model_get(const ue_model_t *m, ue_tick_id id, ue_tick_info *out);

/* The functions whose tasks the pending or running task of `id` waits for
 * this frame (its considered prerequisites), up to `cap` of them into `out`;
 * returns how many there are (0 when it has no task).  Meant for the exec
 * hook. */
size_t ue_model_task_prerequisites(const ue_model_t *m, ue_tick_id id,
                                   ue_tick_id *out, size_t cap);

/* ---- time ----------------------------------------------------------------- */

/* Pause flag, sampled at the start of the next frame.  Unpausing drops
 * pending steps. */
void ue_model_set_paused(ue_model_t *m, bool paused);
/* While paused, run the next `frames` frames as unpaused. */
void ue_model_step(ue_model_t *m, uint64_t frames);
/* Global time dilation, clamped to [0.0001, 20]; from the next frame.
 * Returns the value set. */
double ue_model_set_dilation(ue_model_t *m, double dilation);

/*
 * One world tick with a raw (undilated) dt in ns: time update (dt clamp,
 * dilation, paused world time stands), then either StartFrame, the seven
 * tick groups with the newly-spawned handling, EndFrame; or a pause frame.
 * Timers and tickables are out of the model's scope: Unreal runs them
 * between post_physics and post_update_work (cfg.between_groups is called
 * there).  The frame counter then + 1.
 */
void ue_model_frame(ue_model_t *m, uint64_t raw_dt_ns);

uint64_t ue_model_frame_count(const ue_model_t *m);   /* frames run        */
uint64_t ue_model_time_ns(const ue_model_t *m);       /* TimeSeconds        */
uint64_t ue_model_unpaused_ns(const ue_model_t *m);   /* UnpausedTimeSeconds */
uint64_t ue_model_dt_ns(const ue_model_t *m);         /* last world dt      */
/* Warnings logged for prerequisite edges that would form a cycle, and
 * functions discarded as runaway newly spawned, since creation. */
uint64_t ue_model_cycle_warnings(const ue_model_t *m);
uint64_t ue_model_runaway_discards(const ue_model_t *m);
/* Rounds of the newly-spawned drain after last_demotable in the last frame
 * (releases of the newly_spawned group). */
unsigned ue_model_last_drain_rounds(const ue_model_t *m);

/* ---- the timer manager and the engine loop's order ------------------------ */

/*
 * FTimerManager (UE-SEMANTICS 4), ticked in every unpaused frame between
 * post_physics and the between_groups hook (the tickables) with the world's
 * dt: pending / active / paused / executing, strict expiry, CallCount
 * catch-up, HasBeenTickedThisFrame = LastTickedFrame == GFrameCounter, set
 * at the end of the pass, then the pending timers are activated.  Ties on
 * expiry fire in the order the timers were set (tickd's documented choice;
 * Unreal's heap leaves them arbitrary).  Clearing an active timer removes it
 * at once (Unreal marks it and drops it lazily: nothing observable differs).
 *
 * GFrameCounter is ue_model_frame_count() during a frame; code run through
 * ue_model_deferred runs as FEngineLoop::Tick's deferred commands, at the end
 * of the last frame, after its world tick and before its counter moved (so
 * there GFrameCounter is the last frame's).
 */
typedef uint64_t ue_timer_handle;          /* 0 = none */
typedef void (*ue_timer_fn)(void *ud, ue_timer_handle h);

typedef enum ue_timer_status {
    UE_TIMER_PENDING = 0,
    UE_TIMER_ACTIVE = 1,
    UE_TIMER_PAUSED = 2,
    UE_TIMER_EXECUTING = 3
} ue_timer_status;

/* SetTimer: rate > 0 (else TK_EINVAL: tickd's rule), first_delay < 0 means
 * rate. */
int ue_model_timer_set(ue_model_t *m, ue_timer_fn fn, void *ud, double rate, bool loop,
                       double first_delay, ue_timer_handle *out);
int ue_model_timer_clear(ue_model_t *m, ue_timer_handle h);   /* TK_ENOENT */
int ue_model_timer_pause(ue_model_t *m, ue_timer_handle h);
int ue_model_timer_unpause(ue_model_t *m, ue_timer_handle h);
/* Status, -1 if the handle names no timer; remaining time in ns (active:
 * expiry - now, executing 0, pending / paused: the stored remaining). */
int ue_model_timer_status(const ue_model_t *m, ue_timer_handle h, int64_t *remaining_ns);
bool ue_model_timer_ticked_this_frame(const ue_model_t *m);

/* Run fn(ud) as a deferred command of the last frame (see above). */
void ue_model_deferred(ue_model_t *m, void (*fn)(void *ud), void *ud);

/*
 * FTickableGameObject (UE-SEMANTICS 5), world-bound: TickObjects runs right
 * after the timer manager in unpaused frames (before cfg.between_groups) and
 * in pause frames after the pause-frame ticks, with the world's dt.  Each
 * pass first moves the tickables added since the last one into the tick
 * array (StartTicking), so one added during a pass ticks from the next;
 * then, in that order: Never never ticks, Conditional only while enabled
 * (IsTickable), and in a pause frame only when_paused ones.  Type and
 * enabled are read when the entry is reached; one removed during the pass
 * does not tick if it had not been reached.  The pending ones are taken in
 * the order added (Unreal's pending map has no order: a choice).
 */
typedef uint64_t ue_tickable_id;           /* 0 = none */
typedef void (*ue_tickable_fn)(void *ud, float dt);
enum { UE_TICKABLE_ALWAYS = 0, UE_TICKABLE_CONDITIONAL = 1, UE_TICKABLE_NEVER = 2 };

int ue_model_tickable_add(ue_model_t *m, ue_tickable_fn fn, void *ud, int type, bool enabled,
                          bool when_paused, ue_tickable_id *out);
int ue_model_tickable_remove(ue_model_t *m, ue_tickable_id id);       /* TK_ENOENT */
int ue_model_tickable_set_type(ue_model_t *m, ue_tickable_id id, int type);
int ue_model_tickable_set_enabled(ue_model_t *m, ue_tickable_id id, bool enabled);

#endif
