/*
 * tickd/tick.h - tick functions with Unreal's FTickFunction semantics.
 *
 * A tick function is a class (what to call) plus a target (what to call it
 * on) plus a tick spec (when).  Each frame the world runs the enabled ones in
 * Unreal's tick groups, in frame order:
 *
 *   pre_physics, start_physics, during_physics, end_physics, post_physics,
 *   [timer manager, tickables], post_update_work, last_demotable,
 *   newly_spawned (the drain after last_demotable)
 *
 * Rules (UE-SEMANTICS 3, with tickd's deliberate differences marked *):
 *  - Actual start group = max(own group, groups of considered prerequisites,
 *    the group being run for functions registered mid-frame); a function that
 *    was moved ("demoted") never lands in start_physics or end_physics.  The
 *    actual end group is the last demotable group in (start, max(end group,
 *    prerequisites' end groups)].  Groups block: a function runs entirely in
 *    its actual start group (a dedicated server does not overlap groups;
 *    neither do tickd's worker threads, see Threads).
 *  - Prerequisites run first.  A prerequisite that is disabled, cooling down,
 *    already ticked this frame or unregistered is ignored; a stale one (its
 *    function was unregistered) is dropped; an edge that closes a cycle is
 *    ignored and logged once (Unreal logs it every frame).
 *  - * Order inside a group is deterministic: high priority first, then
 *    prerequisite depth, then class, then registration order.  A
 *    high-priority function whose prerequisite runs in the same group without
 *    high priority runs with the normal ones, after it (prerequisites win).
 *    Functions queued during the frame (newly spawned, re-enabled) and those
 *    whose groups or priority an interval prerequisite changes in the frames
 *    it ticks run after the scheduled ones of their group and priority.  An
 *    interval prerequisite that cannot move a function counts in its depth
 *    like any other (it runs after it whenever both tick).  (Unreal: hash-set
 *    order; priority only orders dispatch.)
 *  - Intervals: a function with interval I > 0 ticks when it becomes enabled,
 *    then cools down; it is due in the first frame whose end passes its due
 *    time strictly, and is then rescheduled to due + I (Unreal's "credit for
 *    overrun"), at most once per frame.  It receives the world time elapsed
 *    since its previous tick (its first tick gets the frame's dt).
 *    even_when_paused functions cool down on unpaused time, others on world
 *    time.
 *  - Pause frames: only even_when_paused functions tick, without groups or
 *    prerequisites: due interval ones first (by due time), then the others.
 *  - Registering or enabling a function mid-frame ticks it later in the same
 *    frame (newly spawned): after the group being run, in the next group that
 *    its own group, prerequisites and demotion allow; after last_demotable up
 *    to 101 rounds of newly spawned functions are drained, then the runaway
 *    ones are logged (error, naming each) and discarded for that frame.
 *  - Disabling a function mid-frame cancels its pending tick this frame (a
 *    function queued later that frame still waits for its groups, as for
 *    Unreal's task, which stays queued and finds the function disabled).
 *    * Unregistering mid-frame cancels it too (Unreal leaves the queued task,
 *    which then finds its actor invalid and does nothing).
 *  - Custom dilation scales the dt handed to the function (an actor's
 *    CustomTimeDilation; tickd's entity layer sets it on the actor's function
 *    and its components'), not its interval scheduling.
 *  - on_dedicated_server = false: never registered (tk_tick_register
 *    succeeds and returns TK_TICK_NONE), as on an Unreal dedicated server.
 *  - Threads.  With the engine's `threads` = 1 (tk_engine_set_threads; a
 *    world without an engine) every tick runs on the frame thread, as on a
 *    single-threaded Unreal dedicated server.  With more, "parallel work"
 *    may run on worker threads inside its group: every function of a class
 *    registered thread_safe, and every any_thread function (Unreal's
 *    bRunOnAnyThread) that sits in its group's schedule (functions queued
 *    per frame, newly spawned or dynamic, and pause frames run on the frame
 *    thread).  The order above still decides what runs before what:
 *    parallel work that is consecutive in that order, of one priority band
 *    and prerequisite depth, runs at the same time; anything else runs on
 *    the frame thread alone, after all that precedes it finished and before
 *    anything that follows starts.  So a function never starts before its
 *    prerequisites finished, every function of a group (and those whose end
 *    group it is) finishes before the group ends, and newly spawned passes,
 *    pause frames, intervals, dilation and counters are those of one thread.
 *    The results equal one thread's as long as parallel work changes only
 *    its own target's state and reads of other state only what nothing
 *    running at the same time writes (a prerequisite's, say).  While parallel
 *    work runs, on any thread, the world must not change: every call of
 *    this API, timer.h, tickable.h and world.h that would change something
 *    (registering, unregistering, enabling, prerequisites, specs, timers,
 *    tickables, levels, pause, dilation) and tk_tick_get / tk_tick_save are
 *    refused with TK_ESTATE, and the first refusal of a run is logged as an
 *    error naming the call and the class (tk_tick_guard offers the same to
 *    a host of services).  Hooks (trace, slow tick, profiler) are called on
 *    the frame thread, after the work they report, in the one-thread order.
 *
 * Speed (see tick.c's header for the data structures): registered functions
 * live in a persistent schedule of "lanes" (same group, priority, depth and
 * class, in registration order) that changes only when a function is added,
 * removed or re-grouped; an every-frame function costs one pointer read per
 * frame when its class has a batch form, and a pointer and an id read when
 * it is ticked one by one (a class without a batch form, batch = false);
 * interval functions wait on a timing wheel and cost nothing in frames where
 * they are not due; those that come due together (registered or first ticked
 * in the same frame, same lane and interval) come due as one set and run in
 * batches; no allocation happens in a steady-state frame.
 */
#ifndef TICKD_TICK_H
#define TICKD_TICK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "world.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tk_group {
    TK_GROUP_PRE_PHYSICS = 0,
    TK_GROUP_START_PHYSICS = 1,
    TK_GROUP_DURING_PHYSICS = 2,
    TK_GROUP_END_PHYSICS = 3,
    TK_GROUP_POST_PHYSICS = 4,
    TK_GROUP_POST_UPDATE_WORK = 5,
    TK_GROUP_LAST_DEMOTABLE = 6,
    TK_GROUP_NEWLY_SPAWNED = 7, /* reported, never requested */
    TK_GROUP_COUNT = 8,
    TK_GROUP_SAME = -1          /* tick spec end_group: same as group */
} tk_group;

/* "pre_physics" ... "newly_spawned"; NULL for out-of-range values. */
const char *tk_group_name(tk_group g);
/* Parse a requestable group name (not newly_spawned): 0 or TK_EINVAL. */
int tk_group_parse(const char *s, tk_group *out);

typedef enum tk_tick_state {
    TK_TICK_ENABLED = 0,
    TK_TICK_DISABLED = 1,
    TK_TICK_COOLING_DOWN = 2
} tk_tick_state;

const char *tk_tick_state_name(tk_tick_state s); /* "enabled", ... */

/* A tick function handle: slot index (low 32 bits) + generation (high 32).
 * 0 is never a valid handle. */
typedef uint64_t tk_tick_id;
#define TK_TICK_NONE ((tk_tick_id)0)

/* A tick spec (FTickFunction's configuration). */
typedef struct tk_tick_spec {
    tk_group group;          /* earliest group; not newly_spawned            */
    tk_group end_group;      /* group to finish by; TK_GROUP_SAME = group    */
    double interval;         /* s between ticks; <= 0 means every frame      */
    bool enabled;            /* tick state at registration                   */
    bool even_when_paused;   /* ticks in pause frames                        */
    bool high_priority;      /* first within its group                       */
    bool batch;              /* may be dispatched in a class batch           */
    bool on_dedicated_server;/* false: never registered                      */
    bool any_thread;         /* may run on a worker thread (see Threads)     */
} tk_tick_spec;

/* The protocol's defaults: pre_physics, end same, every frame, enabled,
 * batch, on_dedicated_server; everything else off. */
void tk_tick_spec_default(tk_tick_spec *spec);

/* Validate a spec: group requestable, end not before group, interval finite.
 * Returns 0 or TK_EINVAL with `*why` (if non-NULL) naming the field. */
int tk_tick_spec_check(const tk_tick_spec *spec, const char **why);

/* ---- classes ----------------------------------------------------------- */

typedef uint16_t tk_class_id;
#define TK_CLASS_MAX 4096

/* What a tick function receives besides its target and dt. */
typedef struct tk_tick_ctx {
    tk_world_t *world;
    tk_tick_id self;     /* the function ticking; TK_TICK_NONE in a batch
                            and, for a class with slot_in_target, possibly
                            in a call of its own (its target has its slot:
                            tk_tick_id_at)                                */
    uint64_t frame;      /* current frame number                          */
    tk_group group;      /* group it runs in (newly_spawned in the drain) */
    bool pause_frame;    /* running in a pause frame                      */
    unsigned thread;     /* 0: the frame thread; 1 .. threads-1: a worker */
} tk_tick_ctx;

typedef void (*tk_tick_fn)(void *target, float dt, tk_tick_ctx *ctx);
/* Tick `n` targets of the same class with the same dt, in order.  Must behave
 * exactly as n calls of the class's tk_tick_fn, and must not register,
 * unregister or change tick functions (a class that does, has no batch form). */
typedef void (*tk_tick_batch_fn)(void *const *targets, size_t n, float dt,
                                 tk_tick_ctx *ctx);

typedef struct tk_tick_class_desc {
    const char *name;          /* copied; 1..63 bytes                      */
    tk_tick_fn fn;             /* required                                 */
    tk_tick_batch_fn fn_batch; /* optional                                 */
    bool thread_safe;          /* fn and fn_batch may run on worker threads,
                                  at the same time as other parallel work
                                  (see Threads): every function of the
                                  class is parallel work                   */
} tk_tick_class_desc;

/* Register a class (TK_EEXIST for a taken name, TK_ELIMIT past TK_CLASS_MAX). */
int tk_tick_class_register(tk_world_t *w, const tk_tick_class_desc *desc,
                           tk_class_id *out);
int tk_tick_class_find(const tk_world_t *w, const char *name, tk_class_id *out);

/*
 * Optional, before any function of the class is registered (TK_ESTATE
 * after): every target of the class holds, at `offset` bytes (a multiple of
 * 4 up to 65536; TK_EINVAL otherwise), a uint32_t that the scheduler
 * writes: its tick function's slot + 1 (tk_tick_id_at gives the id), set
 * when the function is registered or given a new target.  The class's
 * functions then cost 8 bytes less each (no id is kept beside the target),
 * their targets may not be NULL, and ctx->self may be TK_TICK_NONE in their
 * ticks.  The owner reads the field and must not change it while the
 * function is registered (afterwards the scheduler no longer reads it).
 */
int tk_tick_class_slot_in_target(tk_world_t *w, tk_class_id cls, size_t offset);
const char *tk_tick_class_name(const tk_world_t *w, tk_class_id cls);

/* ---- registration ------------------------------------------------------ */

typedef struct tk_tick_desc {
    tk_class_id cls;
    void *target;            /* passed to the class's functions; borrowed  */
    tk_level_id level;       /* TK_LEVEL_NONE means persistent             */
    tk_tick_spec spec;
    float dilation;          /* custom time dilation; 0 means 1            */
    const tk_tick_id *prerequisites; /* optional, `n_prerequisites` of them */
    size_t n_prerequisites;
} tk_tick_desc;

/*
 * Register a tick function.  Validates everything first (class, level, spec,
 * prerequisites must be live) and changes nothing on error.  Mid-frame, an
 * enabled function ticks later in the same frame (newly spawned).
 * With spec.on_dedicated_server false, returns 0 and *out = TK_TICK_NONE.
 */
int tk_tick_register(tk_world_t *w, const tk_tick_desc *desc, tk_tick_id *out);

/* Unregister (also mid-frame, also from its own tick): it never ticks again.
 * Functions that named it as a prerequisite drop it.  TK_ENOENT if stale. */
int tk_tick_unregister(tk_world_t *w, tk_tick_id id);

/* True if `id` names a registered function. */
bool tk_tick_alive(const tk_world_t *w, tk_tick_id id);

/* The id of the function registered in slot `slot` (the low 32 bits of its
 * id), TK_TICK_NONE if none: an owner that keeps its functions' slots (4
 * bytes instead of 8) gets their ids back.  O(1). */
tk_tick_id tk_tick_id_at(const tk_world_t *w, uint32_t slot);

/* ---- changing a registered function ------------------------------------ */

/* Enable / disable (SetTickFunctionEnable).  Disabling cancels this frame's
 * pending tick and drops the interval phase; enabling mid-frame ticks it later
 * this frame unless it already ticked or was cancelled this frame. */
int tk_tick_set_enabled(tk_world_t *w, tk_tick_id id, bool enabled);

/*
 * Change the spec (groups, interval, flags) at once; validated first.
 * Group and priority changes take effect from the next frame; an interval
 * change reschedules an interval function to `now + interval`
 * (UpdateTickIntervalAndCoolDown); `enabled` applies as tk_tick_set_enabled.
 * Setting on_dedicated_server false is TK_EINVAL (unregister instead).
 */
int tk_tick_set_spec(tk_world_t *w, tk_tick_id id, const tk_tick_spec *spec);

/* Custom time dilation (>= 0, finite; 0: its ticks get dt 0, as Unreal's
 * CustomTimeDilation 0); takes effect from the next tick. */
int tk_tick_set_dilation(tk_world_t *w, tk_tick_id id, float dilation);

/* Replace the target pointer (e.g. after the owner moved in memory). */
int tk_tick_set_target(tk_world_t *w, tk_tick_id id, void *target);

/* Add a prerequisite (unique; adding it twice is a no-op).  A prerequisite on
 * itself is TK_EINVAL; a cycle is accepted and ignored when scheduling.
 * Takes effect from the next frame. */
int tk_tick_add_prerequisite(tk_world_t *w, tk_tick_id id, tk_tick_id prereq);
/* TK_ENOENT if `prereq` is not among its prerequisites. */
int tk_tick_remove_prerequisite(tk_world_t *w, tk_tick_id id, tk_tick_id prereq);

/* ---- queries ----------------------------------------------------------- */

typedef struct tk_tick_info {
    tk_tick_id id;
    tk_class_id cls;
    tk_level_id level;
    void *target;
    tk_tick_spec spec;       /* end_group resolved                          */
    float dilation;
    tk_tick_state state;
    tk_group actual_group;   /* as last scheduled                           */
    tk_group actual_end_group;
    uint64_t ticks;          /* times it ticked                             */
    uint64_t last_frame;     /* frame of its last tick (0 if never)         */
    float last_dt;           /* dt passed to its last tick                  */
    double accum_dt;         /* sum of the dt passed to it                  */
    double cooldown;         /* s until due, for cooling-down functions     */
    size_t n_prerequisites;
    bool cycle;              /* one of its prerequisite edges closes a cycle */
} tk_tick_info;

int tk_tick_get(const tk_world_t *w, tk_tick_id id, tk_tick_info *out);

/* Copy up to `cap` live prerequisites into `out`; returns how many it has. */
size_t tk_tick_prerequisites(const tk_world_t *w, tk_tick_id id,
                             tk_tick_id *out, size_t cap);

/* Iterate registered functions in slot order: start with *cursor = 0; returns
 * false at the end.  The order is stable while nothing is registered. */
bool tk_tick_next(const tk_world_t *w, uint64_t *cursor, tk_tick_id *out);

/* What a snapshot needs to put a function back as it was (see
 * tk_tick_restore). */
typedef struct tk_tick_restore {
    uint64_t ticks;          /* counters                                     */
    uint64_t last_frame;
    float last_dt;
    double accum_dt;
    double cooldown;         /* s until due for a cooling-down interval
                                function; < 0: not cooling (ticks next frame) */
    double since_last_tick;  /* s of its clock since its last interval tick
                                (the next interval dt); < 0: none            */
} tk_tick_restore;

/* The restorable state of a function. */
int tk_tick_save(const tk_world_t *w, tk_tick_id id, tk_tick_restore *out);

/*
 * Put back counters and the interval phase of a function (between frames;
 * TK_ESTATE during a frame).  A cooldown only applies to an enabled interval
 * function.  Validated first (finite, non-negative numbers).
 */
int tk_tick_restore_state(tk_world_t *w, tk_tick_id id, const tk_tick_restore *st);

typedef struct tk_tick_counts {
    size_t registered, enabled, disabled, cooling_down;
} tk_tick_counts;

void tk_tick_get_counts(const tk_world_t *w, tk_tick_counts *out);

/* ---- threads ------------------------------------------------------------ */

/* True while parallel work runs (see Threads): the world must not change. */
bool tk_tick_parallel(const tk_world_t *w);

/*
 * For a host offering services to ticks: 0 if the world may change now;
 * while parallel work runs, TK_ESTATE, and the refusal of `what` (a short
 * name such as "spawn") is logged as libtickd's own refusals are (the first
 * of a run, naming the class).  Callable from any thread.
 */
int tk_tick_guard(tk_world_t *w, const char *what);

/* ---- naming, tracing (Unreal's tick.LogTicks) ---------------------------- */

/* Describe a tick function for log lines (cycles, runaway spawns): write a
 * short name such as "entity 12 [counter]" into buf.  Without a namer, the
 * world writes "tick <slot>:<generation> [<class>]". */
typedef void (*tk_tick_namer_fn)(void *ud, tk_tick_id id, void *target,
                                 char *buf, size_t len);

void tk_world_set_tick_namer(tk_world_t *w, tk_tick_namer_fn fn, void *ud);

/* Called for every tick function executed, in execution order (the order
 * of one thread: functions run by workers are reported after their run, in
 * that order), with the group it ran in (in pause frames: its own configured
 * group).  Tracing turns batching off while installed. */
typedef void (*tk_trace_fn)(void *ud, tk_tick_id id, void *target,
                            tk_group group);

void tk_world_set_trace(tk_world_t *w, tk_trace_fn fn, void *ud);

/*
 * A tick slower than `threshold_ns` (0 = off) is reported to `fn` with its
 * duration, as it runs.  The clock is not read per tick:
 *  - a batch is timed as a whole and reported with its first function and
 *    `n` = its size (> 1);
 *  - functions ticked one by one are timed in runs of consecutive ones of a
 *    class (up to 256, fewer the more they cost: one by one once a function
 *    costs more than an eighth of the threshold).  A slow run of one is that
 *    function (`n` = 1).  A slow run of several is reported like a batch
 *    (its first function, `n` > 1), and the functions of that run are then
 *    timed one by one for the next 64 runs of their lane, so that the one
 *    that was slow is named alone (`n` = 1) the next time it is slow.
 * `id` and `target` are those of the function named; `ns` covers the whole
 * run.  `fn` runs on the frame thread, inside the frame (for work done by
 * workers, after it, in the order of one thread).
 */
typedef void (*tk_slow_tick_fn)(void *ud, tk_tick_id id, void *target,
                                tk_class_id cls, uint64_t ns, size_t n);

void tk_world_set_slow_tick(tk_world_t *w, uint64_t threshold_ns,
                            tk_slow_tick_fn fn, void *ud);

#ifdef __cplusplus
}
#endif
#endif
