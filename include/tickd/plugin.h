/*
 * tickd/plugin.h - the C ABI of an entity class, for plugins (shared objects
 * that tickd loads with dlopen from `[plugins] load`) and for tickd's own
 * built-in classes, which use exactly this interface.
 *
 * A class declares its per-instance state (a block of `state_size` bytes) and
 * its props (name, type, default, range, offset of the field in the state).
 * The host validates every request against those declarations (unknown
 * names, types, ranges, entity ids) before anything is created, fills the
 * state with the defaults and the given values, then calls `create`.  Props
 * are rendered back (entity.get, snapshots) from the same declarations.
 * Plugins never see JSON: extra checks read the given props through the
 * accessors of `tkp_api` (get number / bool / string / array of ids).
 *
 * An instance (`tkp_obj`) is an entity's actor, one of its components, or a
 * tickable.  Its tick runs as a tick function with Unreal's semantics (groups,
 * prerequisites, intervals; see tick.h); a tickable's tick runs with the
 * tickables.  A class may offer `tick_batch`: the scheduler then calls it once
 * per run of instances of the class that tick with the same dt, in order; it
 * must behave exactly like calling `tick` on each, and must not register,
 * unregister or change tick functions, spawn or destroy (a class that does
 * has no batch form).
 *
 * Storage.  The host keeps the states of a class's actors and components
 * densely, in chunks of consecutive states, in the order their tick functions
 * were registered (the order the scheduler runs them in).  A batch tick
 * receives its run as a `tkp_run`: n states `stride` bytes apart starting at
 * `states`, with their instances in the same order - a plain loop over memory,
 * no lookup per instance.  A run the scheduler hands over whole may reach the
 * class as several calls (one per chunk, or per stretch of consecutive
 * states), each in order.
 *
 * Pointer lifetimes.  Destroys leave holes that the host closes by moving
 * later instances of the class down (order kept), in a pass at the end of a
 * frame (the engine's core ticker, after the world tick), and only for
 * classes that lost an instance since the previous pass.  So a `tkp_obj *`
 * and a state pointer of an actor or a component stay valid from the moment
 * a call receives them until the end of the current frame (of the next one
 * for a call between frames), and for longer only while no instance of its
 * class is destroyed; a tickable's stay valid until it is removed.  Keep entity ids, not pointers, across frames: timers
 * hand their callback the current instance, entity_state finds a state by id.
 *
 * Threads: every call happens on tickd's frame thread, except `check` during
 * world.load, which runs on the loading thread (it has no side effects), and
 * the ticks of thread-safe classes and any_thread instances when tickd runs
 * more than one thread (`[engine] threads`; below).  A world holding
 * instances of a class with create or destroy hooks is loaded on the frame
 * thread; other worlds are built and freed aside.
 *
 * Thread-safe classes (flags TKP_CLASS_THREAD_SAFE).  With `[engine]
 * threads` > 1 their `tick` and `tick_batch` calls may run on worker
 * threads, at the same time as other ticks of the class and of other
 * thread-safe classes of the same tick group, priority and prerequisite
 * depth (ticks of instances spawned with `tick.any_thread` too, whatever
 * their class).  Such a tick
 *  - writes only its own instance's state (the run's states in a batch);
 *  - reads other entities (entity_position, entity_state) only where nothing
 *    running at the same time writes them: its prerequisites (they finished
 *    before it started) or entities that do not tick in its group;
 *  - may call state, entity, component, class_of, entity_position,
 *    entity_state and log (thread-safe), and learns its thread from
 *    ctx->thread;
 *  - may not call spawn, timer_set, timer_clear, add_prerequisite,
 *    remove_prerequisite or for_each: the host refuses them (spawn, the
 *    prerequisites -1 with err "refused...", timer_set 0, timer_clear and
 *    for_each nothing) and logs the first refusal of each run as an error
 *    naming the service and the class.  The same ticks are refused the same
 *    calls whether they happen to run on a worker or on the frame thread, so
 *    a world behaves the same with 2 threads or 64.  With one thread
 *    nothing is refused.
 * The host runs everything else (classes without the flag, create,
 * props_changed, destroy, timers, tickables) on the frame thread, never at
 * the same time as a thread-safe tick, and never lets a tick start before its
 * prerequisites finished, so a class that keeps to these rules gets exactly
 * the results of one thread.
 *
 * A plugin exports two symbols:
 *
 *   const uint32_t tickd_plugin_abi = TICKD_PLUGIN_ABI;
 *   const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n);
 *
 * and optionally `int tickd_plugin_init(const tkp_api *api, char *err,
 * size_t errlen)` (non-zero refuses the plugin with `err`).  The host checks
 * the ABI version before calling anything; a mismatch is refused with both
 * versions named.  Class names must be unique across built-in and plugin
 * classes.
 */
#ifndef TICKD_PLUGIN_H
#define TICKD_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version 3: tkp_class.flags (TKP_CLASS_THREAD_SAFE), tkp_ctx.thread.
 * Version 2: tick_batch receives a tkp_run (dense states); timer callbacks
 * receive their instance.  Version 2 plugins still load (their classes are
 * not thread-safe); version 1 plugins are refused, naming both versions. */
#define TICKD_PLUGIN_ABI 3
#define TICKD_PLUGIN_ABI_MIN 2 /* oldest version still loaded */

typedef uint64_t tkp_id;            /* an entity id; 0 = none */
typedef struct tkp_obj tkp_obj;     /* an instance (opaque)   */
typedef struct tkp_props tkp_props; /* props given to a class (opaque) */
typedef struct tkp_api tkp_api;

/* Prop types and the state field each fills. */
typedef enum tkp_prop_type {
    TKP_PROP_NUMBER = 0, /* double; finite, in [min, max]                     */
    TKP_PROP_COUNT = 1,  /* uint64_t; an integer in [min, max]                 */
    TKP_PROP_ID = 2,     /* uint64_t; an entity id that exists when given, or
                            0 (none, the default; refused if required)      */
    TKP_PROP_BOOL = 3,   /* bool                                               */
    TKP_PROP_SPAWN = 4,  /* tkp_spawn_ref: entity.spawn params or "self"       */
    TKP_PROP_STRING = 5, /* const char *: a string of at most `max` bytes
                            (0: 255; at most 65535); "" by default           */
    TKP_PROP_IDS = 6     /* tkp_ids: at most `max` entity ids (0: 64; at most
                            65535), each existing when given; empty by default */
} tkp_prop_type;

/* The state field of a TKP_PROP_IDS prop; owned by the host (a
 * TKP_PROP_STRING field, a const char *, is too: never NULL). */
typedef struct tkp_ids {
    const tkp_id *ids; /* n ids, NULL when n is 0 */
    size_t n;
} tkp_ids;

/* The state field of a TKP_PROP_SPAWN prop; owned by the host. */
typedef struct tkp_spawn_ref {
    void *tmpl;  /* the host's copy of the spawn params; NULL with self */
    bool self;   /* "self": a copy of the instance's own entity class   */
} tkp_spawn_ref;

typedef struct tkp_prop {
    const char *name;     /* [a-z0-9_], unique in the class           */
    tkp_prop_type type;
    size_t offset;        /* of its field in the state                */
    double def, min, max; /* numbers and counts (def for bool: 0/1)   */
    bool required;        /* must be given at creation                */
} tkp_prop;

/* What every call of a class receives besides its instance. */
typedef struct tkp_ctx {
    const tkp_api *api;   /* host services                            */
    void *host;           /* the host's (pass it back to the api)     */
    uint64_t frame;       /* current frame number (world.load rewinds it) */
    uint64_t serial;      /* grows every frame, never rewound: key
                             per-frame caches on (host, serial)       */
    int group;            /* tick group running (tk_group), -1 outside */
    bool pause_frame;     /* ticking in a pause frame                 */
    int thread;           /* 0: the frame thread; >= 1: a worker (see
                             "Thread-safe classes"); ABI 3            */
} tkp_ctx;

/* A run of instances of one class for tick_batch: the i-th (i < n) is
 * objs[i], its state at (char *)states + i * stride.  stride is the class's
 * state_size rounded up to a multiple of 8 (0 for a class without state);
 * states is aligned to 64 bytes at the start of a chunk, to 8 at least.
 * Valid during the call only. */
typedef struct tkp_run {
    void *states;              /* the first instance's state               */
    size_t stride;             /* bytes from one state to the next         */
    tkp_obj *const *objs;      /* the instances, in the same order         */
    size_t n;                  /* >= 1                                     */
} tkp_run;

/* tkp_class.flags */
#define TKP_CLASS_THREAD_SAFE 0x1u /* ticks may run on worker threads (above) */

typedef struct tkp_class {
    uint32_t abi;              /* TICKD_PLUGIN_ABI                         */
    const char *name;          /* 1..63 bytes of [A-Za-z0-9_.-]           */
    size_t state_size;         /* bytes of per-instance state             */
    const tkp_prop *props;     /* declared props                          */
    size_t n_props;
    ptrdiff_t position;        /* offset of x, y, z doubles, or -1        */
    /* Optional extra checks of the given props; no side effects.  Runs for
     * every instance of a request before anything is created. */
    int (*check)(const tkp_props *props, const tkp_ctx *ctx, char *err, size_t errlen);
    /* Optional: after the state is filled (may link prerequisites). */
    void (*create)(tkp_obj *o, const tkp_ctx *ctx);
    /* Required: one tick with the dt of the instance (s). */
    void (*tick)(tkp_obj *o, float dt, const tkp_ctx *ctx);
    /* Optional: the run's instances, in order, same dt (see tkp_run). */
    void (*tick_batch)(const tkp_run *run, float dt, const tkp_ctx *ctx);
    /* Optional: after entity.set_props changed the state (`old` = before). */
    void (*props_changed)(tkp_obj *o, const void *old, const tkp_ctx *ctx);
    /* Optional: before the instance is freed. */
    void (*destroy)(tkp_obj *o, const tkp_ctx *ctx);
    /* TKP_CLASS_* (ABI 3; read only from classes with abi >= 3). */
    uint32_t flags;
} tkp_class;

/* Host services.  Every function is valid only during a call of the class;
 * from a thread-safe tick only those "Thread-safe classes" allows. */
struct tkp_api {
    uint32_t abi;
    /* ---- the props given (check, create) ---- */
    bool (*prop_has)(const tkp_props *p, const char *key);
    /* 0 if present with that type, -1 otherwise. */
    int (*prop_number)(const tkp_props *p, const char *key, double *out);
    int (*prop_bool)(const tkp_props *p, const char *key, bool *out);
    int (*prop_string)(const tkp_props *p, const char *key, const char **out);
    int (*prop_ids)(const tkp_props *p, const char *key, const tkp_id **ids, size_t *n);
    /* ---- instances ---- */
    /* The state of o (see "Pointer lifetimes" above). */
    void *(*state)(tkp_obj *o);
    tkp_id (*entity)(const tkp_obj *o);       /* owning entity; 0: a tickable */
    int (*component)(const tkp_obj *o);       /* -1 actor, >= 0 component, -2 tickable */
    const tkp_class *(*class_of)(const tkp_obj *o);
    /* ---- other entities ---- */
    /* The position of an entity whose actor class has one. */
    bool (*entity_position)(const tkp_ctx *c, tkp_id id, double out[3]);
    /* The actor state of entity `id` if its class is `cls`, else NULL. */
    void *(*entity_state)(const tkp_ctx *c, tkp_id id, const tkp_class *cls);
    /* Every live instance of `cls` (actors, components and tickables), in
     * entity id order, tickables last. */
    void (*for_each)(const tkp_ctx *c, const tkp_class *cls, void (*fn)(void *ud, tkp_obj *o),
                     void *ud);
    /* Make o's tick run after entity `target`'s actor tick (an attached
     * child); takes effect from the next frame. 0 or -1. */
    int (*add_prerequisite)(const tkp_ctx *c, tkp_obj *o, tkp_id target);
    int (*remove_prerequisite)(const tkp_ctx *c, tkp_obj *o, tkp_id target);
    /* ---- actions (not from tick_batch) ---- */
    /* Spawn what a TKP_PROP_SPAWN field holds ("self": a copy of o's class,
     * props, tick spec and level).  0, or -1 with err. */
    int (*spawn)(const tkp_ctx *c, tkp_obj *o, const tkp_spawn_ref *ref, char *err,
                 size_t errlen);
    /* A world timer calling fn(ud, o, c) every `rate` s (or once), with o
     * where that instance is at the time (it may have moved), owned by o's
     * entity, or by o if it is a tickable: cleared when that is destroyed
     * or removed.  Not part of snapshots.  Returns the handle, 0 on error
     * (o or fn NULL, rate not finite and > 0, too many timers). */
    uint64_t (*timer_set)(const tkp_ctx *c, tkp_obj *o, double rate, bool loop,
                          void (*fn)(void *ud, tkp_obj *o, const tkp_ctx *c), void *ud);
    void (*timer_clear)(const tkp_ctx *c, uint64_t handle);
    /* ---- misc ---- */
    /* Log at level 0 error, 1 warn, 2 info, 3 debug, into tickd's log as given
     * (name the class in msg if it matters). */
    void (*log)(const tkp_ctx *c, int level, const char *msg);
};

/* The symbols a plugin exports. */
#define TICKD_PLUGIN_ABI_SYMBOL "tickd_plugin_abi"
#define TICKD_PLUGIN_CLASSES_SYMBOL "tickd_plugin_classes"
#define TICKD_PLUGIN_INIT_SYMBOL "tickd_plugin_init"

typedef const tkp_class *const *(*tkp_classes_fn)(const tkp_api *api, size_t *n);
typedef int (*tkp_init_fn)(const tkp_api *api, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
