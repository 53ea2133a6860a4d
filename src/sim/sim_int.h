/*
 * sim_int.h - the entity layer's private structures and the functions its
 * files share (sim.h is the public contract).  The module's files:
 *
 *   sim.c        the sim object: creation, limits, the class registry
 *   store.c      dense class storage: chunks of rows, compaction, the tick
 *                trampolines that hand runs of states to classes
 *   ids.c        entities by id (a table of id blocks), walks in id order,
 *                the side table of rare per-entity data (extras)
 *   props.c      spawn requests, prop values and their validation, spawn
 *                templates
 *   host.c       the plugin host: tkp_api, contexts, timers for classes
 *   spawn.c      spawns, destroys, levels, life spans
 *   entity.c     entity accessors, props, listing
 *   tickables.c  tickables made of entity classes
 *   restore.c    snapshot support: checks, clearing, restoring
 *   classes.c    the built-in classes; plugin.c: loading plugins
 *
 * Internal non-static names are tks__*.
 */
#ifndef TICKD_SIM_INT_H
#define TICKD_SIM_INT_H

#include <stdalign.h>
#include <stdlib.h>

#include "sim.h"

/* Internal invariants of the sim (validated requests cannot fail to apply). */
#define TKS_ALWAYS(x)                                                                     \
    do {                                                                                  \
        if (!(x)) {                                                                       \
            tk_log_error("sim invariant failed: %s (%s:%d)", #x, __FILE__, __LINE__);     \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

#define TKS_MAX_NESTING 8      /* spawn templates inside spawn templates          */
#define TKS_PROP_LIST_MAX 65535 /* most bytes / ids a string / ids prop may declare */

/* ---- instances ---------------------------------------------------------------- */

/*
 * An instance of a class: an actor, a component or a tickable (16 bytes).
 * It is the target of its tick function.  Actors' and components' headers
 * are rows of their class's store (store.c), beside their states; a
 * tickable's is the head of its own allocation (tks_tickable).
 *
 * Its tick function is kept as its slot (the low 32 bits of its id: the
 * core gives the whole id back, tk_tick_id_at) and its level as its index
 * (the low 16 bits of its id: the sim keeps the ids of the levels that hold
 * entities, tks_obj_level); read them through tks_obj_tick and
 * tks_obj_level.  Entity ids are below 2^53 (props.c refuses more), so the
 * id, the component index and the flags share a word.
 */
struct tkp_obj {
    uint32_t tslot;           /* its tick function's slot + 1; 0 = not registered
                                 (the scheduler writes it: slot_in_target)      */
    uint16_t row;             /* index in its chunk (0 for a tickable)           */
    uint16_t lslot;           /* the owning entity's level's index; 0 for a tickable */
    uint64_t id : 53;         /* the owning entity; 0 for a tickable             */
    int64_t comp : 8;         /* -1 actor, >= 0 component index, -2 tickable     */
    uint64_t flags : 3;       /* TKS_OBJ_*                                       */
};
typedef struct tkp_obj tks_obj;
_Static_assert(sizeof(tks_obj) == 16, "an instance header is 16 bytes");

#define TKS_OBJ_NOTICK 1u     /* on_dedicated_server false: spec kept in the extra */
#define TKS_OBJ_DEAD 2u       /* destroyed: a hole until its store compacts        */
#define TKS_OBJ_EXTRA 4u      /* an actor whose entity has an extra record         */

static inline void tks_obj_set_tick(tks_obj *o, tk_tick_id id)
{
    o->tslot = id == TK_TICK_NONE ? 0 : (uint32_t)id + 1;
}

/* An entity is its actor's row. */
struct tks_entity {
    tks_obj obj;
};

/* ---- dense storage (store.c) ---------------------------------------------------- */

typedef struct tks_store tks_store;

/*
 * A chunk: `cap` rows of one class, headers in one array and states in
 * another (a batch streams the states alone).  Rows [0, n) are in use, in
 * the order their tick functions were registered; dead ones among them are
 * holes until compaction.  A chunk never moves, so appending never moves a
 * row; only compaction does (between frames).
 */
typedef struct tks_chunk {
    tks_store *st;            /* the store it belongs to                        */
    unsigned char *states;    /* cap states, `stride` bytes apart, 64-aligned   */
    size_t stride;            /* = st->stride                                   */
    uint32_t n;               /* rows in use, dead ones included                */
    uint32_t cap;             /* rows it holds (<= 65535)                       */
    uint32_t n_dead;          /* dead rows among the n                          */
    uint32_t index;           /* position in st->chunks                         */
    tks_obj hdr[];            /* cap headers; the states follow                 */
} tks_chunk;

/* The rows of one class, in registration order across its chunks. */
struct tks_store {
    tks_sim *sim;
    const tks_class *cls;
    size_t stride;            /* bytes per state: state_size rounded up to 8     */
    uint32_t cap_next;        /* rows of the next chunk (grows to cap_max)       */
    uint32_t cap_max;         /* rows of a full-size chunk                       */
    tks_chunk **chunks;       /* in order; the last one takes appends            */
    size_t n_chunks, cap_chunks;
    uint64_t live;            /* live rows                                       */
    uint64_t dead;            /* dead rows waiting for compaction                */
    bool pending;             /* lost rows since its last complete compaction    */
};

static inline tks_chunk *tks_chunk_of(const tks_obj *o)
{
    return (tks_chunk *)((char *)(o - o->row) - offsetof(tks_chunk, hdr));
}

static inline void *tks_row_state(const tks_obj *o)
{
    tks_chunk *c = tks_chunk_of(o);
    return c->states + (size_t)o->row * c->stride;
}

/* Set up / free a class's store (no class hooks run). */
void tks__store_init(tks_store *st, tks_sim *s, const tks_class *cls);
void tks__store_fini(tks_store *st);
/* A new row at the end (state zeroed, header filled; tick NONE). */
tks_obj *tks__store_append(tks_store *st, tks_id id, tk_level_id level, int comp);
/* Mark a row dead (its class hooks have run, its props are freed); a chunk
 * left with dead rows only is freed at once (nothing moves). */
void tks__store_kill(tks_obj *o);
/* Close the holes of every store, moving at most about `budget` rows
 * (between frames only). Returns the rows moved. */
uint64_t tks__compact(tks_sim *s, uint64_t budget);
/* The core's tick functions of every class (trampolines to the class). */
void tks__obj_tick(void *target, float dt, tk_tick_ctx *tc);
void tks__obj_batch(void *const *targets, size_t n, float dt, tk_tick_ctx *tc);

/* ---- classes -------------------------------------------------------------------- */

/* A registered class: the ABI descriptor plus the host's bookkeeping. */
struct tks_class {
    char name[64];            /* copy of p->name                  */
    const tkp_class *p;       /* the descriptor (built-in/plugin) */
    tk_class_id tick_cls;     /* core class of its tick functions */
    char origin[256];         /* "built-in" or the plugin path    */
    tks_store store;          /* its actors' and components' rows */
};

/* ---- tickables (tickables.c) ---------------------------------------------------- */

typedef struct tks_tickable {
    tks_obj obj;              /* comp = -2                          */
    const tks_class *cls;
    tks_sim *sim;             /* for the class hooks at removal     */
    tk_tickable_id id;
    alignas(8) unsigned char state[];
} tks_tickable;

static inline tks_tickable *tickable_of(tks_obj *o) { return (tks_tickable *)o; }
static inline uint64_t tickable_owner(tk_tickable_id id) { return TKS_OWNER_TICKABLE | id; }

/* The class and the state of any instance. */
static inline const tks_class *tks_obj_class(const tks_obj *o)
{
    return o->comp == -2 ? ((const tks_tickable *)o)->cls : tks_chunk_of(o)->st->cls;
}

static inline void *tks_obj_state(tks_obj *o)
{
    return o->comp == -2 ? ((tks_tickable *)o)->state : tks_row_state(o);
}

void tks__remember_tickable(tks_sim *s, tk_tickable_id id);
void tks__tickable_tick(void *ud, float dt, tk_world_t *w);
void tks__tickable_free(void *ud);

/* ---- per-entity data that few entities have (ids.c) ------------------------------ */

typedef struct tks_compref {
    tks_obj *o;               /* the component's row (moves with it)            */
    tk_tick_spec kept;        /* its spec with TKS_OBJ_NOTICK                   */
} tks_compref;

typedef struct tks_extra {
    float dilation;           /* custom time dilation (1 without an extra)     */
    tk_timer_handle life;     /* life span timer, 0 if none                     */
    tk_tick_spec kept;        /* the actor's spec with TKS_OBJ_NOTICK           */
    uint16_t n_comps;
    tks_compref comps[];      /* n_comps components, in order                   */
} tks_extra;

/* ---- the sim ---------------------------------------------------------------------- */

/*
 * Entities by id: a hash table of blocks of TKS_IDB consecutive ids (open
 * addressing, load <= 1/2).  Memory follows live entities whatever the ids (a
 * lone id costs one block), and dense ids - the common case, a counter that
 * only grows - cost a table TKS_IDB times smaller than one slot per entity.
 * The blocks are also listed (blist), sorted by id unless restores added some
 * out of order, for walks in id order.
 *
 * A block is narrow or wide.  A narrow block's entities' rows are all in one
 * chunk, `ch`: each id keeps its row index there (2 bytes, TKS_IDB_NONE where
 * no entity), so the row is &ch->hdr[row], found in one step as a pointer
 * would be.  That is the common case: a spawn appends its actors' rows in id
 * order, and compaction slides rows within their chunk.  A block whose
 * entities' rows are in different chunks (classes interleaved in id order,
 * ids on both sides of a chunk's end, chunks merged by compaction) is wide:
 * a pointer per id.  A wide block counts its entities whose rows are in `ch`
 * (n_ch), and becomes narrow again when that is all of them.
 */
#define TKS_IDB_BITS 8 /* 256 ids a block: a dense narrow block costs 2.1 bytes per
                          entity (wide: 8.1), a lone id 544 bytes; measured over
                          1M movers, the whole table costs 2.8 bytes per entity
                          (blocks of 64 pointers: 9.7) */
#define TKS_IDB (1u << TKS_IDB_BITS)
#define TKS_IDB_NONE 0xffffu /* a narrow block's slot without an entity (rows of a
                                chunk are below it: store.c's ROWS_MAX) */

typedef struct tks_idblock {
    uint64_t key;             /* (first id >> TKS_IDB_BITS) + 1                 */
    uint16_t live;            /* entities in it                                 */
    uint16_t n_ch;            /* wide: entities whose rows are in ch            */
    uint32_t li : 31;         /* its index in blist                             */
    uint32_t wide : 1;        /* slots are row pointers, not row indexes        */
    tks_chunk *ch;            /* narrow: the chunk of every entity's row        */
    uint64_t slot[];          /* narrow: uint16_t rows[TKS_IDB] (TKS_IDB_NONE =
                                 none); wide: tks_obj *[TKS_IDB] (NULL = none)  */
} tks_idblock;
_Static_assert(TKS_IDB <= 0xffffu, "a block's counts are 16 bits");

typedef struct tks_idslot {
    uint64_t key;             /* 0 = empty */
    tks_idblock *b;
} tks_idslot;

typedef struct tks_xslot {
    tks_id id;                /* 0 = empty */
    tks_extra *x;
} tks_xslot;

/* A level that holds entities: how many, and its id (valid while n > 0:
 * entities are destroyed before their level is removed). */
typedef struct tks_level_use {
    uint64_t n;
    tk_level_id id;
} tks_level_use;

/* A spawn template shared by the entities one request made (props.c). */
typedef struct tks_tmpl tks_tmpl;
typedef struct tks_shared {
    const tks_spawn_req *src;
    tks_tmpl *t;
} tks_shared;

struct tks_sim {
    tk_engine_t *engine;       /* NULL for a sim built aside (tks_new_aside)     */
    tk_world_t *w;
    bool own_world;            /* w is a world of its own: tks_free frees it     */
    tks_class **classes;       /* registered classes (stable addresses)         */
    size_t n_classes;
    tk_ticker_handle compactor; /* core-ticker delegate compacting the stores   */
    size_t compact_next;       /* class the next compaction pass starts with    */
    tks_idslot *ids;           /* id block -> block, open addressing            */
    size_t ids_cap;            /* power of two, 0 = none yet                    */
    unsigned ids_shift;        /* 64 - log2(ids_cap): a key's home slot is the
                                  top bits of key * TKS_IDB_MUL                 */
    size_t n_blocks;           /* blocks in use                                 */
    tks_idblock **blist;       /* blocks for walks in id order; NULL: freed     */
    size_t n_blist, cap_blist, n_blist_dead;
    uint64_t blist_max;        /* largest key appended                          */
    bool blist_unsorted;       /* a smaller key was appended (restores)         */
    int iterating;             /* walks under way: blist is not reordered       */
    tks_xslot *xs;             /* extras by id, open addressing                 */
    size_t xs_cap, n_xs;
    uint64_t max_tick_functions; /* registered at once (world.max_tick_functions) */
    uint64_t max_template_bytes; /* held by spawn props (world.max_template_bytes) */
    uint64_t tmpl_bytes;       /* bytes, spawn templates held now               */
    tks_shared *share;         /* templates made by the spawn under way         */
    size_t n_share, cap_share;
    bool sharing;              /* a spawn is applying props: share templates    */
    bool share_keep;           /* the top spawn keeps its shares (a session)    */
    tks_id next_id;            /* next id to give (ids start at 1)              */
    uint64_t live;
    uint64_t reserved;         /* ids reserved for spawns in slices, not yet live */
    uint64_t max_entities;
    tks_level_use *levels;     /* by level index: entities, level id            */
    size_t n_levels;
    tk_tickable_id *tickables; /* tickables this sim made (removed by tks_free) */
    size_t n_tickables, cap_tickables;
    void **handles;            /* plugin libraries, closed by tks_free          */
    size_t n_handles;
    void (*on_destroy)(void *ud, tks_id id);
    void *on_destroy_ud;
    /* create and destroy hooks of classes whose hooks run on the frame
     * thread only (tks_class_hooks_anywhere false), for world.load: */
    bool defer_creates;        /* built aside: restores leave those creates ... */
    tks_id *later;             /* ... for tks_run_deferred_creates: entities,   */
    size_t n_later, cap_later; /*     in the order they would have run          */
    tk_tickable_id *later_tb;  /*     and tickables                             */
    size_t n_later_tb, cap_later_tb;
    bool frame_hooks_off;      /* tks_free runs none of those destroy hooks (they
                                  ran already, or their creates never did)     */
};

/* May class c's hooks run on this thread?  (tks_class_hooks_anywhere) */
static inline bool tks__frame_only(const tks_class *c) { return !tks_class_hooks_anywhere(c); }

/* ---- the id table's lookup (ids.c; inline: a follower makes one a tick) ---------- */

/* Fibonacci hashing of block keys: consecutive keys (dense ids) land far
 * apart, so probes stay short, in a multiply and a shift. */
#define TKS_IDB_MUL 0x9e3779b97f4a7c15ull

static inline size_t tks__idb_home(const tks_sim *s, uint64_t key)
{
    return (size_t)((key * TKS_IDB_MUL) >> s->ids_shift);
}

/* The hash slot of the block holding `id`, or NULL.  Id 0 needs no test: it
 * is never put, so its slot in block 1 is empty. */
static inline tks_idslot *tks__id_slot(const tks_sim *s, tks_id id)
{
    if (!s->ids_cap)
        return NULL;
    uint64_t key = (id >> TKS_IDB_BITS) + 1;
    size_t m = s->ids_cap - 1, h = tks__idb_home(s, key);
    for (; s->ids[h].key; h = (h + 1) & m)
        if (s->ids[h].key == key)
            return &s->ids[h];
    return NULL;
}

/* The row of slot i of block `b`, or NULL. */
static inline tks_obj *tks__idb_get(const tks_idblock *b, unsigned i)
{
    if (b->wide)
        return ((tks_obj *const *)b->slot)[i];
    uint16_t r = ((const uint16_t *)b->slot)[i];
    return r == TKS_IDB_NONE ? NULL : &b->ch->hdr[r];
}

/* The actor row of entity `id`, or NULL. */
static inline tks_obj *tks__entity(const tks_sim *s, tks_id id)
{
    tks_idslot *sl = tks__id_slot(s, id);
    return sl ? tks__idb_get(sl->b, id & (TKS_IDB - 1)) : NULL;
}

/* The sim of a world (kept as the world's user pointer). */
static inline tks_sim *tks_of_world(tk_world_t *w) { return tk_world_user(w); }

/* The tick function of an instance (TK_TICK_NONE if not registered). */
static inline tk_tick_id tks_obj_tick(const tks_sim *s, const tks_obj *o)
{
    return o->tslot ? tk_tick_id_at(s->w, o->tslot - 1) : TK_TICK_NONE;
}

/* The level of an actor or a component (its entity's). */
static inline tk_level_id tks_obj_level(const tks_sim *s, const tks_obj *o)
{
    return s->levels[o->lslot].id;
}

/* The sim a row belongs to (actors and components). */
static inline tks_sim *tks_row_sim(const tks_obj *o) { return tks_chunk_of(o)->st->sim; }

/* ---- ids.c ------------------------------------------------------------------------ */

void tks__id_put(tks_sim *s, tks_id id, tks_obj *o);
/* The actor row of `id` moved to `o`. */
void tks__id_move(tks_sim *s, tks_id id, tks_obj *o);
void tks__id_drop(tks_sim *s, tks_id id);
void tks__ids_free(tks_sim *s);

/* Walks over live entities in id order (entities destroyed during a walk
 * are skipped; ones spawned during it may or may not be visited). */
typedef struct tks_iter {
    size_t bi;                /* block index in blist */
    unsigned slot;            /* next slot in it      */
} tks_iter;
void tks__iter_begin(tks_sim *s, tks_iter *it);
tks_obj *tks__iter_next(tks_sim *s, tks_iter *it);
/* Skip up to `k` entities in whole blocks; returns how many were skipped. */
uint64_t tks__iter_skip(tks_sim *s, tks_iter *it, uint64_t k);
void tks__iter_end(tks_sim *s, tks_iter *it);

tks_extra *tks__extra(const tks_sim *s, tks_id id);
tks_extra *tks__extra_new(tks_sim *s, tks_obj *actor, size_t n_comps);
/* Remove the extra of `id` from the table and return it (the caller frees). */
tks_extra *tks__extra_take(tks_sim *s, tks_id id);
void tks__extras_free(tks_sim *s);

/* The row of component `comp` of the entity whose actor is `e`. */
tks_obj *tks__comp(const tks_sim *s, const tks_obj *e, int comp);
size_t tks__n_comps(const tks_sim *s, const tks_obj *e);

/* ---- props.c ---------------------------------------------------------------------- */

int tks__errf(char err[TKS_ERR_MAX], int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* How props are checked: against the live world, or against a snapshot's
 * ids (restore), where spawn templates are checked for shape only. */
typedef struct tks_check_mode {
    bool (*id_known)(void *ud, tks_id id); /* NULL: the entity must exist now */
    void *ud;
    const tkp_ctx *ctx; /* for class check hooks; NULL: made now (frame thread) */
} tks_check_mode;

extern const tks_check_mode tks__live_mode;     /* live requests                 */
extern const tks_check_mode tks__restored_mode; /* a snapshot's tickables        */

const tks_prop_desc *tks__find_prop(const tks_class *c, const char *key);
size_t tks__prop_size(tkp_prop_type t);
size_t tks__prop_limit(const tks_prop_desc *d);
int tks__check_prop(tks_sim *s, const tks_class *c, const tks_prop_kv *kv, const char *path,
                    int depth, const tks_check_mode *m, char err[TKS_ERR_MAX]);
int tks__check_props(tks_sim *s, const tks_class *c, const tks_prop_kv *kv, size_t n,
                     const char *path, int depth, const tks_check_mode *m,
                     char err[TKS_ERR_MAX]);
int tks__check_spec(const tk_tick_spec *spec, const char *path, char err[TKS_ERR_MAX]);
int tks__check_spawn(tks_sim *s, const tks_spawn_req *r, const char *path, int depth,
                     uint64_t *total, const tks_check_mode *m, char err[TKS_ERR_MAX]);

bool tks__owns_memory(const tks_prop_desc *d);
void tks__detach_field(const tks_prop_desc *d, unsigned char *f);
void tks__release_field(const tks_prop_desc *d, unsigned char *f);
void tks__set_default_props(const tks_class *c, void *state);
void tks__apply_props(tks_sim *s, const tks_class *c, void *state, const tks_prop_kv *kv,
                      size_t n);
void tks__free_state_props(const tks_class *c, void *state);
void tks__read_prop(const tks_prop_desc *d, const void *state, tks_value *v);
void tks__visit_props(const tks_class *c, const void *state, tks_prop_visit_fn fn, void *ud);

/* Spawn templates: the request a TKP_PROP_SPAWN field's tmpl holds; take /
 * drop a reference. */
const tks_spawn_req *tks__tmpl_req(const void *tmpl);
void tks__tmpl_ref(void *tmpl);
void tks__tmpl_release(void *tmpl);

/* ---- host.c ----------------------------------------------------------------------- */

/* The context of a class call (tc: the tick's, or NULL outside ticks). */
tkp_ctx tks__ctx(tks_sim *s, const tk_tick_ctx *tc);
/* Run the class's check hook on given props (ctx NULL: made now). */
int tks__class_check(tks_sim *s, const tks_class *c, const tks_prop_kv *kv, size_t n,
                     const tkp_ctx *ctx, char *why, size_t len);
/* Run a class's destroy hook and free what its state's props own. */
void tks__obj_fini(tks_sim *s, tks_obj *o);

/* ---- spawn.c ---------------------------------------------------------------------- */

uint64_t *tks__level_count(tks_sim *s, tk_level_id level);
/* Live timers of the world (life spans count against TK_TIMER_MAX). */
uint64_t tks__timers_live(const tks_sim *s);
tk_tick_id tks__register_tick(tks_sim *s, tks_obj *o, const tk_tick_spec *spec,
                              float dilation, const tk_tick_id *pre, size_t npre);
/* Arm the life span timer of entity `id` (span > 0 s, or remaining >= 0). */
tk_timer_handle tks__life_timer(tks_sim *s, tks_id id, double span);
void tks__destroy_one(tks_sim *s, tks_obj *e);
int tks__spawn_self(tks_sim *s, tks_obj *o, char err[TKS_ERR_MAX]);

/* ---- entity.c --------------------------------------------------------------------- */

bool tks__entity_pos(tks_sim *s, tks_id id, double out[3]);

/* ---- classes.c, plugin.c -------------------------------------------------------------- */

/* Built-in classes (classes.c), registered by tks_new through the same path
 * as plugins'. */
extern const tkp_class *const tks_builtin_classes[];
extern const size_t tks_n_builtin_classes;

/* Keep a plugin library open until the sim is freed (plugin.c). */
void tks__keep_handle(tks_sim *s, void *handle);

#endif
