/*
 * sim.h - the entity model on top of libtickd: actors with components, each
 * with its own tick function; entity classes with typed props; spawns,
 * destroys, levels, life spans; tickables made of entity classes.
 *
 * The sim knows nothing of JSON or sockets: the daemon turns requests into
 * the plain structures below and renders results from the accessors.  Every
 * operation validates completely before it changes anything, and reports
 * what is wrong in `err` naming the parameter path ("components[2].class:
 * unknown class 'x'").  Every call runs on the frame thread; spawns and
 * destroys may happen mid-frame (from ticks and timers) with Unreal's
 * newly-spawned semantics.
 *
 * Entity ids are never reused: they come from a counter that only grows (and
 * that a snapshot restores).
 */
#ifndef TICKD_SIM_H
#define TICKD_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tickd/plugin.h"
#include "tickd/tickd.h"

typedef uint64_t tks_id;
typedef struct tks_sim tks_sim;
typedef struct tks_entity tks_entity;
typedef struct tks_class tks_class;
typedef struct tks_spawn_req tks_spawn_req;

#define TKS_ERR_MAX 256
#define TKS_MAX_COMPONENTS 64
#define TKS_MAX_SPAWN 10000000     /* one request */

/* ---- values and props -------------------------------------------------- */

typedef enum tks_vtype {
    TKS_V_NUMBER,   /* num */
    TKS_V_BOOL,     /* b */
    TKS_V_STRING,   /* str (borrowed) */
    TKS_V_IDS,      /* ids[n_ids] (borrowed) */
    TKS_V_SPAWN,    /* spawn (borrowed), or self */
    TKS_V_OTHER     /* anything else the daemon could not map (always a type error) */
} tks_vtype;

typedef struct tks_value {
    tks_vtype type;
    double num;
    bool b;
    const char *str;
    const tks_id *ids;
    size_t n_ids;
    const tks_spawn_req *spawn; /* NULL with self = true means "self" */
    bool self;
} tks_value;

typedef struct tks_prop_kv {
    const char *key;
    tks_value v;
} tks_prop_kv;

/* Prop declarations are the plugin ABI's (tickd/plugin.h). */
typedef tkp_prop tks_prop_desc;
typedef tkp_prop_type tks_prop_type;
#define TKS_PROP_NUMBER TKP_PROP_NUMBER
#define TKS_PROP_COUNT TKP_PROP_COUNT
#define TKS_PROP_ID TKP_PROP_ID
#define TKS_PROP_BOOL TKP_PROP_BOOL
#define TKS_PROP_SPAWN TKP_PROP_SPAWN
#define TKS_PROP_STRING TKP_PROP_STRING
#define TKS_PROP_IDS TKP_PROP_IDS

/* ---- spawn requests ----------------------------------------------------- */

typedef struct tks_component_req {
    const char *cls;
    tk_tick_spec tick;
    tks_prop_kv *props;
    size_t n_props;
} tks_component_req;

struct tks_spawn_req {
    const char *cls;
    const char *level;         /* NULL: persistent                        */
    uint64_t count;            /* >= 1                                    */
    tk_tick_spec tick;
    tks_component_req *components;
    size_t n_components;
    tks_id *prereqs;
    size_t n_prereqs;
    tks_prop_kv *props;
    size_t n_props;
    double dilation;           /* custom time dilation, >= 0             */
    double life_span;          /* s; 0 = forever                         */
};

/* A request with the protocol's defaults (count 1, default tick spec,
 * dilation 1).  The caller fills what it has. */
void tks_spawn_req_init(tks_spawn_req *r);

/* Deep copy (strings, arrays, nested spawns) / free a copy. */
tks_spawn_req *tks_spawn_req_clone(const tks_spawn_req *r);
void tks_spawn_req_free(tks_spawn_req *r);

/* ---- the sim -------------------------------------------------------------- */

typedef struct tks_config {
    uint64_t max_entities;     /* live entities at once                 */
    uint64_t max_tick_functions; /* registered tick functions at once; 0 = no cap */
    uint64_t max_template_bytes; /* bytes of spawn templates held; 0 = no cap     */
} tks_config;

tks_sim *tks_new(tk_engine_t *engine, const tks_config *cfg);
void tks_free(tks_sim *s);

/*
 * Building a world aside (world.load).  tks_new_aside makes a sim on a world
 * of its own (tk_world_new) with the classes and limits of `like`, which it
 * only reads (its class table is fixed once plugins are loaded), so it may
 * run on another thread while `like` runs frames.  Restore into it with the
 * tks_restore_* calls and tkd's timer restore, on that one thread; class
 * check hooks run there, and create hooks of the classes whose hooks may run
 * anywhere (tks_class_hooks_anywhere); the others' creates wait for
 * tks_run_deferred_creates.  tks_swap, between frames on the frame thread,
 * makes it the engine's (tk_engine_swap_world), gives it the core-ticker
 * pass and the plugin libraries, and returns it; `live` is left detached
 * with the old world: tks_free it, on any thread, once tks_end_frame_hooks
 * ran (its other classes' destroy hooks run there).
 */
tks_sim *tks_new_aside(const tks_sim *like);
tks_sim *tks_swap(tks_sim *live, tks_sim *aside);
/* May c's create and destroy hooks run off the frame thread (world.load
 * building or freeing a world aside)?  A built-in class's, and a class
 * without those hooks.  Other plugin classes' hooks may share state with
 * their ticks: they run on the frame thread only. */
bool tks_class_hooks_anywhere(const tks_class *c);
/*
 * Frame thread, once a sim built aside is live (after tks_swap): the create
 * hooks its restores left (classes whose hooks run on the frame thread
 * only), in the order they would have run: entities in id order, an actor
 * before its components, then tickables in their restore order.  Their
 * cost is the hooks' own (the world was built aside).  Returns how many
 * ran.  Until then tks_free of that sim runs none of those classes' destroy
 * hooks (a load that failed or was cancelled never created them).
 */
size_t tks_run_deferred_creates(tks_sim *s);
/*
 * Frame thread, before a live sim is replaced and freed aside: the destroy
 * hooks of its instances of classes whose hooks run on the frame thread
 * only, in the order tks_free runs them (tickables, then entities in id
 * order, components before their actor); tks_free then skips them.  Costs a
 * walk of those classes' rows and the hooks.  Returns how many ran.
 */
size_t tks_end_frame_hooks(tks_sim *s);
void tks_set_max_entities(tks_sim *s, uint64_t max);
/* Limits a spawn is checked against before it creates anything (-32003,
 * naming the key): world.max_tick_functions and world.max_template_bytes. */
void tks_set_max_tick_functions(tks_sim *s, uint64_t max);
void tks_set_max_template_bytes(tks_sim *s, uint64_t max);
/* Bytes of spawn templates held by entities' and tickables' props now. */
uint64_t tks_template_bytes(const tks_sim *s);

tk_engine_t *tks_engine(const tks_sim *s);
tk_world_t *tks_world(const tks_sim *s);

/* Called after an entity is destroyed (by any path), e.g. for stats. */
void tks_set_on_destroy(tks_sim *s, void (*fn)(void *ud, tks_id id), void *ud);

/* Live entity count, the next id to be given, and setting it (snapshots). */
uint64_t tks_entity_count(const tks_sim *s);
tks_id tks_next_id(const tks_sim *s);
void tks_set_next_id(tks_sim *s, tks_id next);

/* ---- classes ---------------------------------------------------------------- */

size_t tks_class_count(const tks_sim *s);
const tks_class *tks_class_at(const tks_sim *s, size_t i);
const tks_class *tks_class_find(const tks_sim *s, const char *name);
const char *tks_class_name(const tks_class *c);
/* The class's ABI descriptor, and where it came from ("built-in" or the
 * plugin's path). */
const tkp_class *tks_class_abi(const tks_class *c);
/* The class declares TKP_CLASS_THREAD_SAFE (ABI 3 or later): its ticks are
 * parallel work (tickd/tick.h, Threads). */
bool tks_class_thread_safe(const tkp_class *p);
const char *tks_class_origin(const tks_class *c);

/*
 * How a class's actors and components are stored: densely, in chunks of
 * consecutive states in the order the scheduler runs them (see tickd/plugin.h
 * "Storage").  Destroys leave holes that the engine's core ticker closes at
 * the end of each frame (at most a budget of moves per frame), so `holes` is
 * 0 again a frame or a few after destroys.
 */
typedef struct tks_storage_info {
    uint64_t live;             /* instances stored (actors and components)    */
    uint64_t holes;            /* rows of destroyed ones, not yet closed      */
    uint64_t chunks;           /* chunks allocated                            */
    uint64_t rows;             /* rows those chunks hold (in use or free)     */
    uint64_t bytes;            /* bytes allocated for them                    */
    size_t stride;             /* bytes from one state to the next            */
} tks_storage_info;

void tks_class_storage(const tks_class *c, tks_storage_info *out);

/*
 * The storage the frame writes every frame (class states): the states of
 * the chunks that are mappings of their own, page-aligned, whole pages
 * (their headers before them, and small chunks, which live in the heap, are
 * not listed).  Fills up to `max` (out and used may be NULL with max 0) and
 * returns how many there are; used[i] (if used is not NULL) is how many
 * bytes of region i, from its start, hold rows in use (whole pages).  For
 * saving in a child process without copy-on-write (daemon/hotmem.h).  Valid
 * until the world changes.
 */
struct iovec;
size_t tks_hot_regions(const tks_sim *s, struct iovec *out, size_t *used, size_t max);

/*
 * Register a class (a plugin's; the built-in ones are registered by
 * tks_new).  Checks the ABI version, the name (unique), the tick function and
 * every prop declaration (types, offsets inside the state, unique names).
 * `origin` (copied) names where it comes from for messages.  0, or TK_EINVAL
 * / TK_EEXIST with `err`.
 */
int tks_register_class(tks_sim *s, const tkp_class *p, const char *origin, char err[TKS_ERR_MAX]);
/* The checks of tks_register_class alone (nothing registered). */
int tks_check_class(const tks_sim *s, const tkp_class *p, const char *origin,
                    char err[TKS_ERR_MAX]);

/*
 * Load a plugin: dlopen `path`, check tickd_plugin_abi, find
 * tickd_plugin_classes, run tickd_plugin_init if present, check every class,
 * then register them all.  Any failure loads nothing and names the file and
 * the symbol or class in `err`.
 */
int tks_load_plugin(tks_sim *s, const char *path, char err[TKS_ERR_MAX]);

/* The host services handed to plugins (tickd_plugin_classes, init). */
const tkp_api *tks_api(void);

/* ---- spawn / destroy ---------------------------------------------------------- */

/*
 * Spawn req->count entities.  All-or-nothing: validated first (class, level,
 * tick specs, components, prerequisites, props, limits), then created.  The
 * ids are consecutive: *first .. *first + count - 1.  Returns 0 or a TK_E*
 * code with `err` set (TK_EINVAL: bad parameter, TK_ENOENT: unknown class,
 * level or entity, TK_ELIMIT: max_entities).
 */
int tks_spawn(tks_sim *s, const tks_spawn_req *req, tks_id *first, char err[TKS_ERR_MAX]);

/*
 * Spawns in slices (the daemon spreads a big spawn over frame boundaries,
 * as Unreal's level streaming adds actors under a time limit):
 * tks_spawn_check validates the whole request (limit included) without
 * creating anything; tks_reserve_ids takes `n` consecutive ids and counts
 * them against max_entities until spawned or released; tks_spawn_ids
 * spawns req->count entities with the reserved ids first.. (validated
 * again: a prerequisite or level may have gone meanwhile), sharing the
 * spawn templates of its props with the other slices of the same session
 * (tks_share_new; NULL: none), which holds them until tks_share_free;
 * tks_release_ids gives back reservations that will not be spawned.
 */
int tks_spawn_check(tks_sim *s, const tks_spawn_req *req, char err[TKS_ERR_MAX]);
tks_id tks_reserve_ids(tks_sim *s, uint64_t n);
typedef struct tks_share tks_share;
tks_share *tks_share_new(void);
void tks_share_free(tks_share *ss);
int tks_spawn_ids(tks_sim *s, const tks_spawn_req *req, tks_id first, tks_share *ss,
                  char err[TKS_ERR_MAX]);
void tks_release_ids(tks_sim *s, uint64_t n);

/* Destroy entities.  All-or-nothing: any unknown id is TK_ENOENT naming it
 * (duplicates in the list count once).  *destroyed = number destroyed. */
int tks_destroy(tks_sim *s, const tks_id *ids, size_t n, size_t *destroyed,
                char err[TKS_ERR_MAX]);

/* ---- levels ------------------------------------------------------------------- */

int tks_level_add(tks_sim *s, const char *name, char err[TKS_ERR_MAX]);
/* Destroys the level's entities, then the level (TK_ESTATE for persistent). */
int tks_level_remove(tks_sim *s, const char *name, char err[TKS_ERR_MAX]);
/* Live entities in a level (by level id). */
uint64_t tks_level_entities(const tks_sim *s, tk_level_id level);

/* ---- entities --------------------------------------------------------------- */

const tks_entity *tks_entity_get(const tks_sim *s, tks_id id);
tks_id tks_entity_id(const tks_entity *e);
const tks_class *tks_entity_class(const tks_entity *e);
tk_level_id tks_entity_level(const tks_entity *e);
float tks_entity_dilation(const tks_entity *e);
/* Remaining life span in s, or a negative value if it has none. */
double tks_entity_life_remaining(const tks_sim *s, const tks_entity *e);
/* The timer of its life span (owner: the entity), TK_TIMER_NONE if none. */
tk_timer_handle tks_entity_life_timer(const tks_sim *s, const tks_entity *e);
size_t tks_entity_component_count(const tks_entity *e);
const tks_class *tks_entity_component_class(const tks_entity *e, size_t i);
/* Tick function of the actor (comp < 0) or of component `comp`; TK_TICK_NONE
 * if it has none (on_dedicated_server false) or comp is out of range. */
tk_tick_id tks_entity_tick(const tks_entity *e, int comp);
/* The tick spec of a function that was never registered (on_dedicated_server
 * false), NULL for a registered one (ask tk_tick_get). */
const tk_tick_spec *tks_entity_tick_spec(const tks_sim *s, const tks_entity *e, int comp);

/* Prop values of the actor (comp < 0) or a component, by the class schema. */
typedef void (*tks_prop_visit_fn)(void *ud, const tks_prop_desc *d, const tks_value *v);
void tks_entity_props(const tks_sim *s, const tks_entity *e, int comp, tks_prop_visit_fn fn,
                      void *ud);

/* Set props of the actor (validated against its class first). */
int tks_entity_set_props(tks_sim *s, tks_id id, const tks_prop_kv *kv, size_t n,
                         char err[TKS_ERR_MAX]);

/*
 * Iterate live entities in id order, optionally filtered by level and class,
 * skipping `offset` matches and visiting at most `limit`; returns the total
 * number of matches.
 */
uint64_t tks_entity_list(const tks_sim *s, tk_level_id level, const tks_class *cls,
                         uint64_t offset, uint64_t limit,
                         void (*fn)(void *ud, const tks_entity *e), void *ud);

/* The entity that owns a tick function (the target's owner), and which of its
 * functions it is (-1 = actor).  NULL for functions that are not entities'. */
const tks_entity *tks_tick_owner(const tks_sim *s, tk_tick_id id, int *comp);

/* ---- tickables made of entity classes --------------------------------------- */

int tks_tickable_add(tks_sim *s, const char *cls, tk_tickable_type type, bool when_paused,
                     const tks_prop_kv *props, size_t n_props, tk_tickable_id *out,
                     char err[TKS_ERR_MAX]);
/* Timer owners.  Every timer the sim sets has one: an entity id (life spans,
 * plugin timers of actors and components), or this bit with a tickable id
 * (plugin timers of tickables).  Timers of owner 0 are the embedder's. */
#define TKS_OWNER_TICKABLE (UINT64_C(1) << 63)

/* Class of a tickable created by tks_tickable_add, NULL otherwise. */
const tks_class *tks_tickable_class(const tks_sim *s, tk_tickable_id id);
void tks_tickable_props(const tks_sim *s, tk_tickable_id id, tks_prop_visit_fn fn, void *ud);

/* ---- snapshots --------------------------------------------------------------------- */

typedef struct tks_fn_restore {
    tk_tick_spec spec;         /* on_dedicated_server false: never registered */
    tk_tick_restore st;        /* counters and interval phase                 */
} tks_fn_restore;

typedef struct tks_comp_restore {
    const char *cls;
    tks_prop_kv *props;
    size_t n_props;
    tks_fn_restore fn;
} tks_comp_restore;

typedef struct tks_entity_restore {
    tks_id id;
    const char *cls;
    const char *level;         /* NULL: persistent                           */
    double dilation;           /* >= 0                                        */
    double life_remaining;     /* s; < 0: no life span                        */
    tk_timer_handle life_handle; /* its timer, restored already (tks_restore_life_timer),
                                  or 0: a new one for life_remaining          */
    tks_prop_kv *props;
    size_t n_props;
    tks_fn_restore fn;         /* the actor's tick function                   */
    tks_comp_restore *components;
    size_t n_components;
} tks_entity_restore;

/*
 * Check an entity of a snapshot without changing anything: classes, specs,
 * numbers, props.  Entity ids named by props need not exist (a follower may
 * outlive its target); spawn templates are checked for shape and classes
 * only (their levels and prerequisites are checked when they spawn).
 * `id_known` tells the snapshot's own ids (kept for callers that want to
 * report dangling references; it does not make a check fail).  `path`
 * prefixes error messages ("entities[3]").
 *
 * It reads only the class table, never the world, so it may run on another
 * thread while frames run (world.load reads files aside), given `ctx`: the
 * context class `check` hooks receive, taken on the frame thread with
 * tks_check_ctx.  ctx NULL: one is made now (frame thread only).
 */
int tks_restore_check(const tks_sim *s, const tks_entity_restore *e, const char *path,
                      bool (*id_known)(void *ud, tks_id id), void *ud, const tkp_ctx *ctx,
                      char err[TKS_ERR_MAX]);
/* The context for class check hooks run by tks_restore_check off the frame
 * thread: the current frame, no group. */
void tks_check_ctx(const tks_sim *s, tkp_ctx *out);


/* Remove every tickable this sim made and destroy every entity (before a load). */
void tks_clear(tks_sim *s);

/*
 * Create a checked entity under its saved id (unused; its level must exist),
 * with its tick functions (no prerequisites yet), counters and life span.
 * Between frames.  Then call tks_restore_done once all are back.
 */
int tks_restore_entity(tks_sim *s, const tks_entity_restore *e, char err[TKS_ERR_MAX]);
/*
 * A life span's timer under its saved handle, before its entity is restored
 * (with life_handle = h): restore every saved timer first, in slot order
 * (out of slot order a restore walks the free slots).  `rate` is the span
 * it was set with, `status` active or paused.  0, or a TK_E* code (the
 * handle's slot is taken, or not a handle).
 */
int tks_restore_life_timer(tks_sim *s, tks_id id, tk_timer_handle h, double rate,
                           tk_timer_status status, double remaining);

/* Let classes relink (followers to their targets) after a restore. */
void tks_restore_done(tks_sim *s);

/* A tickable of an entity class under its saved id, with its counters.  Its
 * props are checked as tks_restore_check does (ids need not be live). */
int tks_tickable_restore(tks_sim *s, const char *cls, const tk_tickable_desc *desc,
                         const tks_prop_kv *props, size_t n_props, tk_tickable_id id,
                         uint64_t ticks, uint64_t last_frame, double accum_dt,
                         char err[TKS_ERR_MAX]);

#endif
