/*
 * sim.c - entities, components, props, spawns and destroys over libtickd
 * (the contract is in sim.h).
 *
 * Storage: entities are individually allocated records (obj header, id,
 * components, life-span timer, level, dilation, then the class state), found
 * by id through an open-addressing hash table, and listed in id order from
 * an array of pointers (holes where entities died, compacted when they are
 * half of it).  Both are proportional to the live entities, never to the
 * ids' values: a snapshot may name any id below 2^53.  Ids come from a
 * counter that only grows.
 *
 * Every mutating call validates the whole request first, then applies it;
 * applying cannot fail except by running out of memory, which aborts
 * (tk_malloc's policy).
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

/* Internal invariants of the sim (validated requests cannot fail to apply). */
#define TK_ALWAYS_SIM(x)                                                       \
    do {                                                                       \
        if (!(x)) {                                                            \
            tk_log_error("sim invariant failed: %s (%s:%d)", #x, __FILE__, __LINE__); \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define MAX_NESTING 8

/*
 * Entities by id: a hash table of blocks of IDB consecutive ids (open
 * addressing, load <= 1/2).  Memory follows live entities whatever the
 * ids (a lone id costs one block), and dense ids - the common case, a
 * counter that only grows - cost a table IDB times smaller than one slot
 * per entity: growing it to millions of entities rehashes a few hundred
 * thousand blocks, never millions of entries at once.
 */
#define IDB_BITS 4
#define IDB (1u << IDB_BITS)

typedef struct idblock {
    tks_entity *e[IDB];
    uint32_t live;
} idblock;

typedef struct idslot {
    uint64_t key;              /* (id >> IDB_BITS) + 1; 0 = empty */
    idblock *b;
} idslot;

struct tks_sim {
    tk_engine_t *engine;
    tk_world_t *w;
    tks_class **classes;       /* registered classes (stable addresses) */
    size_t n_classes;
    idslot *ids;               /* id block -> block, open addressing          */
    size_t ids_cap;            /* power of two, 0 = none yet                  */
    size_t n_blocks;           /* blocks in use                               */
    tks_entity **ord;          /* entities by id; NULL where one died          */
    size_t n_ord, cap_ord, n_ord_dead;
    tks_id ord_max;            /* largest id appended to ord                   */
    bool ord_unsorted;         /* an id below ord_max was appended (restores)  */
    int iterating;             /* walks of ord under way: no compaction        */
    uint64_t max_tick_functions; /* registered at once (world.max_tick_functions) */
    uint64_t max_template_bytes; /* held by spawn props (world.max_template_bytes) */
    uint64_t tmpl_bytes;       /* bytes, spawn templates held now               */
    struct share { const tks_spawn_req *src; struct tmpl *t; } *share;
    size_t n_share, cap_share; /* templates made by the spawn under way         */
    bool sharing;              /* a spawn is applying props: share templates    */
    bool share_keep;           /* the top spawn keeps its shares (a session)   */
    tks_id next_id;            /* next id to give (ids start at 1) */
    uint64_t live;
    uint64_t reserved;         /* ids reserved for spawns in slices, not yet live */
    uint64_t max_entities;
    uint64_t *level_counts;    /* by level slot */
    size_t n_level_counts;
    struct { tks_id id; tk_tick_spec spec; } *nospec; /* actors never registered */
    tk_tickable_id *tickables; /* tickables this sim made (removed by tks_free) */
    size_t n_tickables, cap_tickables;
    void **handles;            /* plugin libraries, closed by tks_free */
    size_t n_handles;
    size_t n_nospec, cap_nospec;
    void (*on_destroy)(void *ud, tks_id id);
    void *on_destroy_ud;
};

/* ---- requests -------------------------------------------------------------- */

void tks_spawn_req_init(tks_spawn_req *r)
{
    memset(r, 0, sizeof *r);
    r->count = 1;
    tk_tick_spec_default(&r->tick);
    r->dilation = 1.0;
}

static char *dupstr(const char *s) { return s ? tk_strdup(s) : NULL; }

static void clone_props(tks_prop_kv **out, const tks_prop_kv *in, size_t n);

static void clone_value(tks_value *dst, const tks_value *src)
{
    *dst = *src;
    if (src->type == TKS_V_STRING)
        dst->str = dupstr(src->str);
    if (src->type == TKS_V_IDS && src->n_ids) {
        tks_id *ids = tk_malloc(src->n_ids * sizeof *ids);
        memcpy(ids, src->ids, src->n_ids * sizeof *ids);
        dst->ids = ids;
    }
    if (src->type == TKS_V_SPAWN && src->spawn)
        dst->spawn = tks_spawn_req_clone(src->spawn);
}

static void clone_props(tks_prop_kv **out, const tks_prop_kv *in, size_t n)
{
    *out = NULL;
    if (!n)
        return;
    tks_prop_kv *kv = tk_calloc(n, sizeof *kv);
    for (size_t i = 0; i < n; i++) {
        kv[i].key = dupstr(in[i].key);
        clone_value(&kv[i].v, &in[i].v);
    }
    *out = kv;
}

static void free_props(tks_prop_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        tk_free((char *)kv[i].key);
        if (kv[i].v.type == TKS_V_STRING)
            tk_free((char *)kv[i].v.str);
        if (kv[i].v.type == TKS_V_IDS)
            tk_free((tks_id *)kv[i].v.ids);
        if (kv[i].v.type == TKS_V_SPAWN && kv[i].v.spawn)
            tks_spawn_req_free((tks_spawn_req *)kv[i].v.spawn);
    }
    tk_free(kv);
}

tks_spawn_req *tks_spawn_req_clone(const tks_spawn_req *r)
{
    tks_spawn_req *c = tk_malloc(sizeof *c);
    *c = *r;
    c->cls = dupstr(r->cls);
    c->level = dupstr(r->level);
    if (r->n_prereqs) {
        c->prereqs = tk_malloc(r->n_prereqs * sizeof *c->prereqs);
        memcpy(c->prereqs, r->prereqs, r->n_prereqs * sizeof *c->prereqs);
    } else {
        c->prereqs = NULL;
    }
    clone_props(&c->props, r->props, r->n_props);
    if (r->n_components) {
        c->components = tk_calloc(r->n_components, sizeof *c->components);
        for (size_t i = 0; i < r->n_components; i++) {
            c->components[i] = r->components[i];
            c->components[i].cls = dupstr(r->components[i].cls);
            clone_props(&c->components[i].props, r->components[i].props,
                        r->components[i].n_props);
        }
    } else {
        c->components = NULL;
    }
    return c;
}

void tks_spawn_req_free(tks_spawn_req *r)
{
    if (!r)
        return;
    tk_free((char *)r->cls);
    tk_free((char *)r->level);
    tk_free(r->prereqs);
    free_props(r->props, r->n_props);
    for (size_t i = 0; i < r->n_components; i++) {
        tk_free((char *)r->components[i].cls);
        free_props(r->components[i].props, r->components[i].n_props);
    }
    tk_free(r->components);
    tk_free(r);
}

/* ---- the sim --------------------------------------------------------------- */

static void tickable_tick(void *ud, float dt, tk_world_t *w);

/* Log lines name tick functions by entity. */
static void tick_namer(void *ud, tk_tick_id id, void *target, char *buf, size_t len)
{
    (void)ud;
    (void)id;
    const tks_obj *o = target;
    if (!o || !o->owner)
        snprintf(buf, len, "tickable [%s]", o ? o->cls->name : "?");
    else if (o->comp >= 0)
        snprintf(buf, len, "entity %llu component %d [%s]", (unsigned long long)o->owner->id,
                 o->comp, o->cls->name);
    else
        snprintf(buf, len, "entity %llu [%s]", (unsigned long long)o->owner->id, o->cls->name);
}

tks_sim *tks_new(tk_engine_t *engine, const tks_config *cfg)
{
    tks_sim *s = tk_calloc(1, sizeof *s);
    s->engine = engine;
    s->w = tk_engine_world(engine);
    s->next_id = 1;
    s->max_entities = cfg && cfg->max_entities ? cfg->max_entities : UINT64_MAX;
    s->max_tick_functions =
        cfg && cfg->max_tick_functions ? cfg->max_tick_functions : UINT64_MAX;
    s->max_template_bytes =
        cfg && cfg->max_template_bytes ? cfg->max_template_bytes : UINT64_MAX;
    tk_world_set_user(s->w, s);
    tk_world_set_tick_namer(s->w, tick_namer, s);
    for (size_t i = 0; i < tks_n_builtin_classes; i++) {
        char err[TKS_ERR_MAX];
        if (tks_register_class(s, tks_builtin_classes[i], "built-in", err) != 0) {
            tk_log_error("cannot register a built-in class: %s", err);
            abort();
        }
    }
    return s;
}

static void free_entity_mem(tks_sim *s, tks_entity *e);

static void remember_tickable(tks_sim *s, tk_tickable_id id)
{
    /* Compact out the ones already removed before growing. */
    if (s->n_tickables == s->cap_tickables) {
        size_t k = 0;
        for (size_t i = 0; i < s->n_tickables; i++) {
            tk_tickable_info info;
            if (tk_tickable_get(s->w, s->tickables[i], &info) == 0)
                s->tickables[k++] = s->tickables[i];
        }
        s->n_tickables = k;
        if (k * 2 >= s->cap_tickables) {
            s->cap_tickables = s->cap_tickables ? s->cap_tickables * 2 : 16;
            s->tickables = tk_realloc(s->tickables, s->cap_tickables * sizeof *s->tickables);
        }
    }
    s->tickables[s->n_tickables++] = id;
}

void tks_free(tks_sim *s)
{
    if (!s)
        return;
    /* Our tickables first: their cleanup needs the classes freed below. */
    for (size_t i = 0; i < s->n_tickables; i++)
        tk_tickable_remove(s->w, s->tickables[i]);
    tk_free(s->tickables);
    for (size_t i = 0; i < s->n_ord; i++)
        if (s->ord[i])
            free_entity_mem(s, s->ord[i]);
    tk_free(s->ord);
    for (size_t i = 0; i < s->ids_cap; i++)
        tk_free(s->ids[i].b);
    tk_free(s->ids);
    tk_free(s->share);
    tk_free(s->nospec);
    tk_free(s->level_counts);
    for (size_t i = 0; i < s->n_classes; i++)
        tk_free(s->classes[i]);
    tk_free(s->classes);
    tk_world_set_user(s->w, NULL);
    for (size_t i = 0; i < s->n_handles; i++)
        dlclose(s->handles[i]);
    tk_free(s->handles);
    tk_free(s);
}

void tks__keep_handle(tks_sim *s, void *handle)
{
    s->handles = tk_realloc(s->handles, (s->n_handles + 1) * sizeof *s->handles);
    s->handles[s->n_handles++] = handle;
}

void tks_set_max_entities(tks_sim *s, uint64_t max) { s->max_entities = max ? max : UINT64_MAX; }
void tks_set_max_tick_functions(tks_sim *s, uint64_t max)
{
    s->max_tick_functions = max ? max : UINT64_MAX;
}
void tks_set_max_template_bytes(tks_sim *s, uint64_t max)
{
    s->max_template_bytes = max ? max : UINT64_MAX;
}
uint64_t tks_template_bytes(const tks_sim *s) { return s->tmpl_bytes; }
tk_engine_t *tks_engine(const tks_sim *s) { return s->engine; }
tk_world_t *tks_world(const tks_sim *s) { return s->w; }
void tks_set_on_destroy(tks_sim *s, void (*fn)(void *, tks_id), void *ud)
{
    s->on_destroy = fn;
    s->on_destroy_ud = ud;
}
uint64_t tks_entity_count(const tks_sim *s) { return s->live; }
tks_id tks_next_id(const tks_sim *s) { return s->next_id; }
void tks_set_next_id(tks_sim *s, tks_id next)
{
    if (next > s->next_id)
        s->next_id = next;
}

/* ---- classes ---------------------------------------------------------------- */

size_t tks_class_count(const tks_sim *s) { return s->n_classes; }
const tks_class *tks_class_at(const tks_sim *s, size_t i)
{
    return i < s->n_classes ? s->classes[i] : NULL;
}
const tks_class *tks_class_find(const tks_sim *s, const char *name)
{
    for (size_t i = 0; name && i < s->n_classes; i++)
        if (strcmp(s->classes[i]->name, name) == 0)
            return s->classes[i];
    return NULL;
}
const char *tks_class_name(const tks_class *c) { return c->name; }
const tkp_class *tks_class_abi(const tks_class *c) { return c->p; }
const char *tks_class_origin(const tks_class *c) { return c->origin; }

/* ---- ids ---------------------------------------------------------------------- */

static inline size_t id_hash(tks_id id)
{
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdull;
    id ^= id >> 33;
    return (size_t)id;
}

/* The slot of the block holding `id`, or NULL. */
static idslot *id_slot(const tks_sim *s, tks_id id)
{
    if (id == 0 || !s->ids_cap)
        return NULL;
    uint64_t key = (id >> IDB_BITS) + 1;
    size_t m = s->ids_cap - 1, h = id_hash(key) & m;
    while (s->ids[h].key) {
        if (s->ids[h].key == key)
            return &s->ids[h];
        h = (h + 1) & m;
    }
    return NULL;
}

static tks_entity *tks__entity(tks_sim *s, tks_id id)
{
    idslot *sl = id_slot(s, id);
    return sl ? sl->b->e[id & (IDB - 1)] : NULL;
}

const tks_entity *tks_entity_get(const tks_sim *s, tks_id id)
{
    return tks__entity((tks_sim *)s, id);
}

static void ids_insert_raw(tks_sim *s, uint64_t key, idblock *b)
{
    size_t m = s->ids_cap - 1, h = id_hash(key) & m;
    while (s->ids[h].key)
        h = (h + 1) & m;
    s->ids[h].key = key;
    s->ids[h].b = b;
}

/* Close the holes of ord (only when no walk is under way). */
static void ord_compact(tks_sim *s)
{
    size_t k = 0;
    for (size_t i = 0; i < s->n_ord; i++) {
        if (s->ord[i]) {
            s->ord[k] = s->ord[i];
            s->ord[k]->ord = k;
            k++;
        }
    }
    s->n_ord = k;
    s->n_ord_dead = 0;
}

static int ord_cmp(const void *a, const void *b)
{
    tks_id x = (*(tks_entity *const *)a)->id, y = (*(tks_entity *const *)b)->id;
    return x < y ? -1 : x > y;
}

/* Before a walk in id order: ord sorted (restores may append out of order). */
static void ord_prepare(tks_sim *s)
{
    if (!s->ord_unsorted || s->iterating)
        return;
    ord_compact(s);
    qsort(s->ord, s->n_ord, sizeof *s->ord, ord_cmp);
    for (size_t i = 0; i < s->n_ord; i++)
        s->ord[i]->ord = i;
    s->ord_unsorted = false;
}

static void id_put(tks_sim *s, tks_id id, tks_entity *e)
{
    idslot *sl = id_slot(s, id);
    if (!sl) {
        if ((s->n_blocks + 1) * 2 > s->ids_cap) {
            idslot *old = s->ids;
            size_t ocap = s->ids_cap;
            s->ids_cap = ocap ? ocap * 2 : 64;
            s->ids = tk_calloc(s->ids_cap, sizeof *s->ids);
            for (size_t i = 0; i < ocap; i++)
                if (old[i].key)
                    ids_insert_raw(s, old[i].key, old[i].b);
            tk_free(old);
        }
        ids_insert_raw(s, (id >> IDB_BITS) + 1, tk_calloc(1, sizeof(idblock)));
        s->n_blocks++;
        sl = id_slot(s, id);
    }
    sl->b->e[id & (IDB - 1)] = e;
    sl->b->live++;
    if (!s->iterating && s->n_ord_dead > 64 && s->n_ord_dead * 2 > s->n_ord)
        ord_compact(s);
    if (s->n_ord == s->cap_ord) {
        s->cap_ord = s->cap_ord ? s->cap_ord * 2 : 64;
        s->ord = tk_realloc(s->ord, s->cap_ord * sizeof *s->ord);
    }
    if (id < s->ord_max)
        s->ord_unsorted = true;
    else
        s->ord_max = id;
    e->ord = s->n_ord;
    s->ord[s->n_ord++] = e;
}

static void id_drop(tks_sim *s, tks_id id)
{
    idslot *sl = id_slot(s, id);
    idblock *blk = sl->b;
    tks_entity *e = blk->e[id & (IDB - 1)];
    s->ord[e->ord] = NULL;
    s->n_ord_dead++;
    blk->e[id & (IDB - 1)] = NULL;
    if (--blk->live)
        return;
    /* The block's last entity: free it; backward-shift deletion of its
     * slot (no tombstones, lookups stay short). */
    tk_free(blk);
    s->n_blocks--;
    size_t m = s->ids_cap - 1, i = (size_t)(sl - s->ids), j = i;
    for (;;) {
        j = (j + 1) & m;
        if (!s->ids[j].key)
            break;
        size_t h = id_hash(s->ids[j].key) & m;
        if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
            continue;
        s->ids[i] = s->ids[j];
        i = j;
    }
    s->ids[i].key = 0;
    s->ids[i].b = NULL;
}

static uint64_t *level_count(tks_sim *s, tk_level_id level)
{
    size_t i = level & 0xffffu;
    if (i >= s->n_level_counts) {
        size_t n = i + 16;
        s->level_counts = tk_realloc(s->level_counts, n * sizeof *s->level_counts);
        memset(s->level_counts + s->n_level_counts, 0,
               (n - s->n_level_counts) * sizeof *s->level_counts);
        s->n_level_counts = n;
    }
    return &s->level_counts[i];
}

uint64_t tks_level_entities(const tks_sim *s, tk_level_id level)
{
    size_t i = level & 0xffffu;
    return i < s->n_level_counts ? s->level_counts[i] : 0;
}

/* Live timers of the world (life spans count against TK_TIMER_MAX). */
static uint64_t timers_live(const tks_sim *s)
{
    tk_timer_counts tc;
    tk_timer_get_counts(s->w, &tc);
    return (uint64_t)tc.active + tc.paused + tc.pending;
}

/* A spawn template held by TKP_PROP_SPAWN fields (tkp_spawn_ref.tmpl): one
 * copy per spawn request, shared by every entity that request made (20,000
 * spawners of a 100 KB template hold 100 KB, not 2 GB), freed with the last
 * field that holds it.  Its bytes count against world.max_template_bytes. */
typedef struct tmpl {
    size_t refs;          /* fields holding it                          */
    uint64_t bytes;       /* bytes of the copy (tmpl_req_bytes)         */
    uint64_t *acct;       /* the sim's tmpl_bytes                       */
    tks_spawn_req *req;   /* the copy                                   */
} tmpl;

static uint64_t props_bytes(const tks_prop_kv *kv, size_t n);

/* Bytes a copy of `r` holds (nesting is bounded by MAX_NESTING). */
static uint64_t tmpl_req_bytes(const tks_spawn_req *r)
{
    uint64_t b = sizeof(tmpl) + sizeof *r + (r->cls ? strlen(r->cls) + 1 : 0) +
                 (r->level ? strlen(r->level) + 1 : 0) + r->n_prereqs * sizeof(tks_id) +
                 r->n_components * sizeof(tks_component_req) + props_bytes(r->props, r->n_props);
    for (size_t i = 0; i < r->n_components; i++)
        b += (r->components[i].cls ? strlen(r->components[i].cls) + 1 : 0) +
             props_bytes(r->components[i].props, r->components[i].n_props);
    return b;
}

static uint64_t props_bytes(const tks_prop_kv *kv, size_t n)
{
    uint64_t b = n * sizeof *kv;
    for (size_t i = 0; i < n; i++) {
        b += kv[i].key ? strlen(kv[i].key) + 1 : 0;
        if (kv[i].v.type == TKS_V_STRING && kv[i].v.str)
            b += strlen(kv[i].v.str) + 1;
        else if (kv[i].v.type == TKS_V_IDS)
            b += kv[i].v.n_ids * sizeof(tks_id);
        else if (kv[i].v.type == TKS_V_SPAWN && kv[i].v.spawn)
            b += tmpl_req_bytes(kv[i].v.spawn);
    }
    return b;
}

/* The template for `src`: the one this spawn made already, or a new copy. */
static tmpl *tmpl_share(tks_sim *s, const tks_spawn_req *src)
{
    for (size_t i = 0; s && s->sharing && i < s->n_share; i++) {
        if (s->share[i].src == src) {
            s->share[i].t->refs++;
            return s->share[i].t;
        }
    }
    tmpl *t = tk_malloc(sizeof *t);
    t->refs = 1;
    t->req = tks_spawn_req_clone(src);
    t->bytes = tmpl_req_bytes(src);
    t->acct = s ? &s->tmpl_bytes : NULL;
    if (t->acct)
        *t->acct += t->bytes;
    if (s && s->sharing) {
        if (s->n_share == s->cap_share) {
            s->cap_share = s->cap_share ? s->cap_share * 2 : 8;
            s->share = tk_realloc(s->share, s->cap_share * sizeof *s->share);
        }
        s->share[s->n_share].src = src;
        s->share[s->n_share].t = t;
        s->n_share++;
    }
    return t;
}

static void tmpl_release(void *p)
{
    tmpl *t = p;
    if (!t || --t->refs)
        return;
    if (t->acct)
        *t->acct -= t->bytes;
    tks_spawn_req_free(t->req);
    tk_free(t);
}

/* Keep the spec of an actor never registered (on_dedicated_server false)
 * for reports; the entity knows its place in the list, so finding and
 * removing it is O(1) however many such entities there are. */
static void nospec_add(tks_sim *s, tks_entity *e, const tk_tick_spec *spec)
{
    if (s->n_nospec == s->cap_nospec) {
        s->cap_nospec = s->cap_nospec ? s->cap_nospec * 2 : 8;
        s->nospec = tk_realloc(s->nospec, s->cap_nospec * sizeof *s->nospec);
    }
    e->nospec = (uint32_t)s->n_nospec;
    s->nospec[s->n_nospec].id = e->id;
    s->nospec[s->n_nospec].spec = *spec;
    s->n_nospec++;
}

static tks_entity *tks__entity(tks_sim *s, tks_id id);

static void nospec_drop(tks_sim *s, tks_entity *e)
{
    size_t i = e->nospec, last = --s->n_nospec;
    if (i != last) {
        s->nospec[i] = s->nospec[last];
        tks__entity(s, s->nospec[i].id)->nospec = (uint32_t)i;
    }
}

/* ---- the plugin host ---------------------------------------------------------------- */

static int errf(char err[TKS_ERR_MAX], int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The props given to a class's check hook. */
struct tkp_props {
    const tks_prop_kv *kv;
    size_t n;
};

static const tkp_api host_api;

static tkp_ctx make_ctx(tks_sim *s, const tk_tick_ctx *tc)
{
    tkp_ctx c;
    c.api = &host_api;
    c.host = s;
    c.frame = tc ? tc->frame : tk_world_frame(s->w);
    c.serial = tk_world_serial(s->w);
    c.group = tc ? (int)tc->group : -1;
    c.pause_frame = tc ? tc->pause_frame : false;
    return c;
}

static const tks_value *prop_find(const tkp_props *p, const char *key)
{
    for (size_t i = 0; p && i < p->n; i++)
        if (strcmp(p->kv[i].key, key) == 0)
            return &p->kv[i].v;
    return NULL;
}

static bool api_prop_has(const tkp_props *p, const char *key) { return prop_find(p, key) != NULL; }

static int api_prop_number(const tkp_props *p, const char *key, double *out)
{
    const tks_value *v = prop_find(p, key);
    if (!v || v->type != TKS_V_NUMBER)
        return -1;
    *out = v->num;
    return 0;
}

static int api_prop_bool(const tkp_props *p, const char *key, bool *out)
{
    const tks_value *v = prop_find(p, key);
    if (!v || v->type != TKS_V_BOOL)
        return -1;
    *out = v->b;
    return 0;
}

static int api_prop_string(const tkp_props *p, const char *key, const char **out)
{
    const tks_value *v = prop_find(p, key);
    if (v && v->type == TKS_V_STRING) {
        *out = v->str;
        return 0;
    }
    if (v && v->type == TKS_V_SPAWN && v->self && !v->spawn) {
        *out = "self"; /* the JSON string "self", read as a spawn's */
        return 0;
    }
    return -1;
}

static int api_prop_ids(const tkp_props *p, const char *key, const tkp_id **ids, size_t *n)
{
    const tks_value *v = prop_find(p, key);
    if (!v || v->type != TKS_V_IDS)
        return -1;
    *ids = v->ids;
    *n = v->n_ids;
    return 0;
}

static void *api_state(tkp_obj *o) { return tks_obj_state(o); }
static tkp_id api_entity(const tkp_obj *o) { return o->owner ? o->owner->id : 0; }
static int api_component(const tkp_obj *o) { return o->comp; }
static const tkp_class *api_class_of(const tkp_obj *o) { return o->cls->p; }

static bool entity_pos(tks_sim *s, tks_id id, double out[3]);

static bool api_entity_position(const tkp_ctx *c, tkp_id id, double out[3])
{
    return entity_pos(c->host, id, out);
}

static void *api_entity_state(const tkp_ctx *c, tkp_id id, const tkp_class *cls)
{
    tks_entity *e = tks__entity(c->host, id);
    if (!e || (cls && e->obj.cls->p != cls))
        return NULL;
    return e->state;
}

static void api_for_each(const tkp_ctx *c, const tkp_class *cls, void (*fn)(void *, tkp_obj *),
                         void *ud)
{
    tks_sim *s = c->host;
    ord_prepare(s);
    s->iterating++;
    for (size_t i = 0; i < s->n_ord; i++) {
        tks_entity *e = s->ord[i];
        if (!e)
            continue;
        if (e->obj.cls->p == cls)
            fn(ud, &e->obj);
        for (uint16_t j = 0; j < e->n_comps; j++)
            if (e->comps[j]->obj.cls->p == cls)
                fn(ud, &e->comps[j]->obj);
    }
    s->iterating--;
    for (size_t i = 0; i < s->n_tickables; i++) {
        tk_tickable_info info;
        if (tk_tickable_get(s->w, s->tickables[i], &info) != 0 || !info.ud)
            continue;
        tks_tickable *t = info.ud;
        if (t->obj.cls->p == cls)
            fn(ud, &t->obj);
    }
}

static int api_prerequisite(const tkp_ctx *c, tkp_obj *o, tkp_id target, bool add)
{
    tks_sim *s = c->host;
    tks_entity *t = tks__entity(s, target);
    if (o->tick == TK_TICK_NONE || !t || t->obj.tick == TK_TICK_NONE || t->obj.tick == o->tick)
        return -1;
    int rc = add ? tk_tick_add_prerequisite(s->w, o->tick, t->obj.tick)
                 : tk_tick_remove_prerequisite(s->w, o->tick, t->obj.tick);
    return rc ? -1 : 0;
}

static int api_add_prerequisite(const tkp_ctx *c, tkp_obj *o, tkp_id target)
{
    return api_prerequisite(c, o, target, true);
}

static int api_remove_prerequisite(const tkp_ctx *c, tkp_obj *o, tkp_id target)
{
    return api_prerequisite(c, o, target, false);
}

static int spawn_self(tks_sim *s, tks_obj *o, char err[TKS_ERR_MAX]);

static int api_spawn(const tkp_ctx *c, tkp_obj *o, const tkp_spawn_ref *ref, char *err,
                     size_t errlen)
{
    tks_sim *s = c->host;
    char e[TKS_ERR_MAX] = "";
    tks_id first;
    int rc = ref->self ? spawn_self(s, o, e)
                       : ref->tmpl ? tks_spawn(s, ((tmpl *)ref->tmpl)->req, &first, e)
                                   : (snprintf(e, sizeof e, "nothing to spawn"), TK_EINVAL);
    if (rc && err && errlen)
        snprintf(err, errlen, "%s", e);
    return rc ? -1 : 0;
}

typedef struct plugin_timer {
    tks_sim *s;
    void (*fn)(void *ud, const tkp_ctx *c);
    void *ud;
} plugin_timer;

static void plugin_timer_fire(void *ud, tk_timer_handle h, tk_world_t *w)
{
    (void)h;
    (void)w;
    plugin_timer *pt = ud;
    tkp_ctx c = make_ctx(pt->s, NULL);
    pt->fn(pt->ud, &c);
}

static uint64_t api_timer_set(const tkp_ctx *c, tkp_obj *o, double rate, bool loop,
                              void (*fn)(void *ud, const tkp_ctx *c), void *ud)
{
    tks_sim *s = c->host;
    if (!fn || !o)
        return 0;
    plugin_timer *pt = tk_malloc(sizeof *pt);
    *pt = (plugin_timer){s, fn, ud};
    tk_timer_desc td = {0};
    td.rate = rate;
    td.loop = loop;
    td.first_delay = -1;
    td.fn = plugin_timer_fire;
    td.ud = pt;
    td.free_ud = tk_free;
    td.owner = o->owner ? o->owner->id : tickable_owner(tickable_of(o)->id);
    tk_timer_handle h;
    if (tk_timer_set(s->w, &td, &h) != 0) {
        tk_free(pt);
        return 0;
    }
    return h;
}

static void api_timer_clear(const tkp_ctx *c, uint64_t handle)
{
    tks_sim *s = c->host;
    tk_timer_clear(s->w, handle);
}

static void api_log(const tkp_ctx *c, int level, const char *msg)
{
    (void)c;
    if (level < 0)
        level = 0;
    if (level > 3)
        level = 3;
    tk_log((tk_log_level)level, "%s", msg);
}

static const tkp_api host_api = {
    .abi = TICKD_PLUGIN_ABI,
    .prop_has = api_prop_has,
    .prop_number = api_prop_number,
    .prop_bool = api_prop_bool,
    .prop_string = api_prop_string,
    .prop_ids = api_prop_ids,
    .state = api_state,
    .entity = api_entity,
    .component = api_component,
    .class_of = api_class_of,
    .entity_position = api_entity_position,
    .entity_state = api_entity_state,
    .for_each = api_for_each,
    .add_prerequisite = api_add_prerequisite,
    .remove_prerequisite = api_remove_prerequisite,
    .spawn = api_spawn,
    .timer_set = api_timer_set,
    .timer_clear = api_timer_clear,
    .log = api_log,
};

const tkp_api *tks_api(void) { return &host_api; }

/* Core tick functions of every class: a trampoline to the class's own. */
static void obj_tick(void *target, float dt, tk_tick_ctx *tc)
{
    tks_obj *o = target;
    tkp_ctx c = make_ctx(tks_of_world(tc->world), tc);
    o->cls->p->tick(o, dt, &c);
}

static void obj_batch(void *const *targets, size_t n, float dt, tk_tick_ctx *tc)
{
    const tks_obj *o = targets[0];
    tkp_ctx c = make_ctx(tks_of_world(tc->world), tc);
    o->cls->p->tick_batch((tkp_obj *const *)targets, n, dt, &c);
}

static bool valid_name(const char *n, bool allow_upper_dot)
{
    size_t len = n ? strlen(n) : 0;
    if (len < 1 || len > 63)
        return false;
    for (size_t i = 0; i < len; i++) {
        char ch = n[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                  (allow_upper_dot && ((ch >= 'A' && ch <= 'Z') || ch == '.' || ch == '-'));
        if (!ok)
            return false;
    }
    return true;
}

static size_t prop_size(tkp_prop_type t)
{
    switch (t) {
    case TKP_PROP_NUMBER:
        return sizeof(double);
    case TKP_PROP_COUNT:
    case TKP_PROP_ID:
        return sizeof(uint64_t);
    case TKP_PROP_BOOL:
        return sizeof(bool);
    case TKP_PROP_SPAWN:
        return sizeof(tkp_spawn_ref);
    case TKP_PROP_STRING:
        return sizeof(const char *);
    case TKP_PROP_IDS:
        return sizeof(tkp_ids);
    }
    return 0;
}

/* Longest string / most ids of a TKP_PROP_STRING / TKP_PROP_IDS prop. */
#define PROP_LIST_MAX 65535
static size_t prop_limit(const tks_prop_desc *d)
{
    if (d->max > 0)
        return (size_t)d->max;
    return d->type == TKP_PROP_STRING ? 255 : 64;
}

int tks_check_class(const tks_sim *s, const tkp_class *p, const char *origin,
                    char err[TKS_ERR_MAX])
{
    if (!p)
        return errf(err, TK_EINVAL, "%s: no class descriptor", origin);
    if (p->abi != TICKD_PLUGIN_ABI)
        return errf(err, TK_EINVAL, "%s: class '%s' speaks plugin ABI %u, this tickd speaks %u",
                    origin, p->name ? p->name : "?", (unsigned)p->abi, TICKD_PLUGIN_ABI);
    if (!valid_name(p->name, true))
        return errf(err, TK_EINVAL, "%s: class name must be 1..63 bytes of [A-Za-z0-9_.-]",
                    origin);
    if (tks_class_find(s, p->name))
        return errf(err, TK_EEXIST, "%s: class '%s' already exists (from %s)", origin, p->name,
                    tks_class_find(s, p->name)->origin);
    if (s->n_classes >= TK_CLASS_MAX)
        return errf(err, TK_ELIMIT, "%s: too many classes (max %d)", origin, TK_CLASS_MAX);
    if (!p->tick)
        return errf(err, TK_EINVAL, "%s: class '%s' has no tick function", origin, p->name);
    if (p->state_size > (1u << 20))
        return errf(err, TK_EINVAL, "%s: class '%s': state_size over 1 MiB", origin, p->name);
    if (p->n_props && !p->props)
        return errf(err, TK_EINVAL, "%s: class '%s': props is NULL", origin, p->name);
    for (size_t i = 0; i < p->n_props; i++) {
        const tkp_prop *d = &p->props[i];
        size_t sz = prop_size(d->type);
        if (!valid_name(d->name, false))
            return errf(err, TK_EINVAL, "%s: class '%s': prop %zu: name must be [a-z0-9_]",
                        origin, p->name, i);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(p->props[j].name, d->name))
                return errf(err, TK_EINVAL, "%s: class '%s': prop '%s' declared twice", origin,
                            p->name, d->name);
        if (!sz)
            return errf(err, TK_EINVAL, "%s: class '%s': prop '%s' has an unknown type", origin,
                        p->name, d->name);
        if (d->offset + sz > p->state_size || d->offset % (sz >= 8 ? 8 : sz) != 0)
            return errf(err, TK_EINVAL,
                        "%s: class '%s': prop '%s' is not an aligned field inside the state",
                        origin, p->name, d->name);
        if ((d->type == TKP_PROP_NUMBER || d->type == TKP_PROP_COUNT) &&
            !(d->min <= d->def && d->def <= d->max))
            return errf(err, TK_EINVAL, "%s: class '%s': prop '%s': default out of its range",
                        origin, p->name, d->name);
        if ((d->type == TKP_PROP_STRING || d->type == TKP_PROP_IDS) &&
            !(d->max >= 0 && d->max <= PROP_LIST_MAX && d->max == floor(d->max)))
            return errf(err, TK_EINVAL, "%s: class '%s': prop '%s': max must be 0..%d", origin,
                        p->name, d->name, PROP_LIST_MAX);
    }
    if (p->position >= 0 && ((size_t)p->position + 3 * sizeof(double) > p->state_size ||
                             p->position % 8 != 0))
        return errf(err, TK_EINVAL, "%s: class '%s': position is not inside the state", origin,
                    p->name);
    return 0;
}

int tks_register_class(tks_sim *s, const tkp_class *p, const char *origin, char err[TKS_ERR_MAX])
{
    int rc = tks_check_class(s, p, origin, err);
    if (rc)
        return rc;
    tks_class *c = tk_calloc(1, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", p->name);
    snprintf(c->origin, sizeof c->origin, "%s", origin);
    c->p = p;
    tk_tick_class_desc d = {c->name, obj_tick, p->tick_batch ? obj_batch : NULL};
    rc = tk_tick_class_register(s->w, &d, &c->tick_cls);
    if (rc) {
        tk_free(c);
        return errf(err, rc, "%s: class '%s': %s", origin, p->name, tk_world_last_error(s->w));
    }
    s->classes = tk_realloc(s->classes, (s->n_classes + 1) * sizeof *s->classes);
    s->classes[s->n_classes++] = c;
    return 0;
}

/* ---- validation ------------------------------------------------------------------ */

static int errf(char err[TKS_ERR_MAX], int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, TKS_ERR_MAX, fmt, ap);
    va_end(ap);
    return code;
}

static const tks_prop_desc *find_prop(const tks_class *c, const char *key)
{
    for (size_t i = 0; i < c->p->n_props; i++)
        if (strcmp(c->p->props[i].name, key) == 0)
            return &c->p->props[i];
    return NULL;
}

/* How props are checked: against the live world, or against a snapshot's
 * ids (restore), where spawn templates are checked for shape only. */
typedef struct check_mode {
    bool (*id_known)(void *ud, tks_id id); /* NULL: the entity must exist now */
    void *ud;
    const tkp_ctx *ctx; /* for class check hooks; NULL: made now (frame thread) */
} check_mode;

static const check_mode live_mode = {NULL, NULL, NULL};

/* A snapshot's tickable: its ids were checked against the snapshot already. */
static bool any_id(void *ud, tks_id id) { return true; }
static const check_mode restored_mode = {any_id, NULL, NULL};

static int check_spawn(tks_sim *s, const tks_spawn_req *r, const char *path, int depth,
                       uint64_t *total, const check_mode *m, char err[TKS_ERR_MAX]);

/* Check one prop value against its declaration. `path` names the props object. */
static int check_prop(tks_sim *s, const tks_class *c, const tks_prop_kv *kv, const char *path,
                      int depth, const check_mode *m, char err[TKS_ERR_MAX])
{
    const tks_prop_desc *d = find_prop(c, kv->key);
    if (!d)
        return errf(err, TK_EINVAL, "%s.%s: class '%s' has no prop '%s'", path, kv->key, c->name,
                    kv->key);
    const tks_value *v = &kv->v;
    switch (d->type) {
    case TKS_PROP_NUMBER:
        /* A snapshot holds what the simulation made of a number declared
         * unbounded ([-1e300, 1e300]): a mover integrated past the range, or
         * to +-inf or NaN.  That state loads back as it was saved. */
        if (m->id_known && v->type == TKS_V_NUMBER && d->min <= -1e300 && d->max >= 1e300)
            return 0;
        if (v->type != TKS_V_NUMBER || !isfinite(v->num))
            return errf(err, TK_EINVAL, "%s.%s: must be a number", path, d->name);
        if (v->num < d->min || v->num > d->max)
            return errf(err, TK_EINVAL, "%s.%s: must be in [%g, %g]", path, d->name, d->min,
                        d->max);
        return 0;
    case TKS_PROP_COUNT:
        if (v->type != TKS_V_NUMBER || v->num != floor(v->num) || !isfinite(v->num))
            return errf(err, TK_EINVAL, "%s.%s: must be an integer", path, d->name);
        if (v->num < d->min || v->num > d->max)
            return errf(err, TK_EINVAL, "%s.%s: must be in [%g, %g]", path, d->name, d->min,
                        d->max);
        return 0;
    case TKS_PROP_ID:
        if (v->type != TKS_V_NUMBER || v->num != floor(v->num) || v->num < 0 || v->num > 9e15 ||
            (v->num == 0 && d->required))
            return errf(err, TK_EINVAL, "%s.%s: must be an entity id", path, d->name);
        if (v->num == 0)
            return 0; /* none */
        /* A snapshot may hold an id whose entity died since it was set (a
         * follower of a destroyed target): that is a state the world had, so
         * it loads; a live request must name a live entity. */
        if (!m->id_known && !tks__entity(s, (tks_id)v->num))
            return errf(err, TK_ENOENT, "%s.%s: entity %.0f does not exist", path, d->name,
                        v->num);
        return 0;
    case TKS_PROP_BOOL:
        if (v->type != TKS_V_BOOL)
            return errf(err, TK_EINVAL, "%s.%s: must be true or false", path, d->name);
        return 0;
    case TKS_PROP_SPAWN:
        if (v->type != TKS_V_SPAWN)
            return errf(err, TK_EINVAL, "%s.%s: must be entity.spawn params or \"self\"", path,
                        d->name);
        if (v->self)
            return 0;
        if (!v->spawn) {
            if (d->required)
                return errf(err, TK_EINVAL, "%s.%s: must be entity.spawn params or \"self\"",
                            path, d->name);
            return 0; /* unset */
        }
        if (depth >= MAX_NESTING)
            return errf(err, TK_EINVAL, "%s.%s: spawn templates nested too deep (max %d)", path,
                        d->name, MAX_NESTING);
        {
            char sub[160];
            snprintf(sub, sizeof sub, "%s.%s", path, d->name);
            uint64_t dummy = 0;
            int rc = check_spawn(s, v->spawn, sub, depth + 1, &dummy, m, err);
            /* A template's limit is checked when it spawns, not now. */
            if (rc == TK_ELIMIT)
                rc = 0;
            return rc;
        }
    case TKS_PROP_STRING: {
        /* The string "self" arrives read as a spawn's "self". */
        const char *str = v->type == TKS_V_STRING                     ? v->str
                          : v->type == TKS_V_SPAWN && v->self && !v->spawn ? "self"
                                                                          : NULL;
        if (!str)
            return errf(err, TK_EINVAL, "%s.%s: must be a string", path, d->name);
        if (strlen(str) > prop_limit(d))
            return errf(err, TK_EINVAL, "%s.%s: longer than %zu bytes", path, d->name,
                        prop_limit(d));
        return 0;
    }
    case TKS_PROP_IDS:
        if (v->type != TKS_V_IDS)
            return errf(err, TK_EINVAL, "%s.%s: must be an array of entity ids", path, d->name);
        if (v->n_ids > prop_limit(d))
            return errf(err, TK_EINVAL, "%s.%s: more than %zu ids", path, d->name,
                        prop_limit(d));
        for (size_t i = 0; i < v->n_ids; i++) {
            if (v->ids[i] == 0 || v->ids[i] > 9e15)
                return errf(err, TK_EINVAL, "%s.%s[%zu]: must be an entity id", path, d->name, i);
            if (!m->id_known && !tks__entity(s, v->ids[i]))
                return errf(err, TK_ENOENT, "%s.%s[%zu]: entity %llu does not exist", path,
                            d->name, i, (unsigned long long)v->ids[i]);
        }
        return 0;
    }
    return errf(err, TK_EINVAL, "%s.%s: unsupported prop type", path, d->name);
}

static int check_props(tks_sim *s, const tks_class *c, const tks_prop_kv *kv, size_t n,
                       const char *path, int depth, const check_mode *m, char err[TKS_ERR_MAX])
{
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++)
            if (strcmp(kv[i].key, kv[j].key) == 0)
                return errf(err, TK_EINVAL, "%s.%s: given twice", path, kv[i].key);
        int rc = check_prop(s, c, &kv[i], path, depth, m, err);
        if (rc)
            return rc;
    }
    for (size_t i = 0; i < c->p->n_props; i++) {
        if (!c->p->props[i].required)
            continue;
        bool found = false;
        for (size_t j = 0; j < n && !found; j++)
            found = strcmp(kv[j].key, c->p->props[i].name) == 0;
        if (!found)
            return errf(err, TK_EINVAL, "%s.%s: required by class '%s'", path, c->p->props[i].name,
                        c->name);
    }
    if (c->p->check) {
        tkp_props pr = {kv, n};
        tkp_ctx ctx = m->ctx ? *m->ctx : make_ctx(s, NULL);
        char why[TKS_ERR_MAX] = "";
        if (c->p->check(&pr, &ctx, why, sizeof why) != 0)
            return errf(err, TK_EINVAL, "%s: %s", path, why[0] ? why : "refused by the class");
    }
    return 0;
}

static int check_spec(const tk_tick_spec *spec, const char *path, char err[TKS_ERR_MAX])
{
    const char *why;
    if (tk_tick_spec_check(spec, &why))
        return errf(err, TK_EINVAL, "%s: %s", path, why);
    if (spec->interval < 0)
        return errf(err, TK_EINVAL, "%s.interval: must be >= 0", path);
    return 0;
}

static int check_spawn(tks_sim *s, const tks_spawn_req *r, const char *path, int depth,
                       uint64_t *total, const check_mode *m, char err[TKS_ERR_MAX])
{
    bool shape_only = m->id_known != NULL;
    char sub[200];
    const char *p = path[0] ? path : "";
    const char *dot = path[0] ? "." : "";
    const tks_class *c = tks_class_find(s, r->cls);
    if (!r->cls)
        return errf(err, TK_EINVAL, "%s%sclass: required", p, dot);
    if (!c)
        return errf(err, TK_EINVAL, "%s%sclass: unknown class '%s'", p, dot, r->cls);
    if (r->level && !shape_only) {
        tk_level_id l;
        if (tk_level_find(s->w, r->level, &l) != 0)
            return errf(err, TK_ENOENT, "%s%slevel: level '%s' does not exist", p, dot, r->level);
    }
    if (r->count < 1 || r->count > TKS_MAX_SPAWN)
        return errf(err, TK_EINVAL, "%s%scount: must be in [1, %d]", p, dot, TKS_MAX_SPAWN);
    snprintf(sub, sizeof sub, "%s%stick", p, dot);
    int rc = check_spec(&r->tick, sub, err);
    if (rc)
        return rc;
    if (!(isfinite(r->dilation) && r->dilation > 0 && r->dilation <= 1e6))
        return errf(err, TK_EINVAL, "%s%stime_dilation: must be a number > 0", p, dot);
    if (!(isfinite(r->life_span) && r->life_span >= 0))
        return errf(err, TK_EINVAL, "%s%slife_span: must be a number >= 0", p, dot);
    if (r->n_components > TKS_MAX_COMPONENTS)
        return errf(err, TK_EINVAL, "%s%scomponents: at most %d", p, dot, TKS_MAX_COMPONENTS);
    for (size_t i = 0; i < r->n_components; i++) {
        const tks_component_req *cr = &r->components[i];
        const tks_class *cc = tks_class_find(s, cr->cls);
        if (!cr->cls)
            return errf(err, TK_EINVAL, "%s%scomponents[%zu].class: required", p, dot, i);
        if (!cc)
            return errf(err, TK_EINVAL, "%s%scomponents[%zu].class: unknown class '%s'", p, dot,
                        i, cr->cls);
        snprintf(sub, sizeof sub, "%s%scomponents[%zu].tick", p, dot, i);
        if ((rc = check_spec(&cr->tick, sub, err)))
            return rc;
        snprintf(sub, sizeof sub, "%s%scomponents[%zu].props", p, dot, i);
        if ((rc = check_props(s, cc, cr->props, cr->n_props, sub, depth, m, err)))
            return rc;
    }
    for (size_t i = 0; i < r->n_prereqs && !shape_only; i++)
        if (!tks__entity(s, r->prereqs[i]))
            return errf(err, TK_ENOENT, "%s%sprerequisites[%zu]: entity %llu does not exist", p,
                        dot, i, (unsigned long long)r->prereqs[i]);
    snprintf(sub, sizeof sub, "%s%sprops", p, dot);
    if ((rc = check_props(s, c, r->props, r->n_props, sub, depth, m, err)))
        return rc;
    *total += r->count;
    if (shape_only)
        return 0;
    if (s->live + s->reserved + *total > s->max_entities)
        return errf(err, TK_ELIMIT, "%s%scount: would exceed world.max_entities (%llu live, max %llu)",
                    p, dot, (unsigned long long)(s->live + s->reserved),
                    (unsigned long long)s->max_entities);
    /* Ids stay JSON-safe integers (below 2^53). */
    if (s->next_id + *total > (1ull << 53))
        return errf(err, TK_ELIMIT, "%s%scount: entity ids would pass 2^53", p, dot);
    /* Costs counted in what the spawn will hold: tick functions, and the
     * spawn templates its props carry (one shared copy each). */
    uint64_t fns = r->tick.on_dedicated_server ? 1 : 0;
    for (size_t i = 0; i < r->n_components; i++)
        fns += r->components[i].tick.on_dedicated_server ? 1 : 0;
    tk_tick_counts tc;
    tk_tick_get_counts(s->w, &tc);
    if (fns && (uint64_t)tc.registered + r->count * fns > s->max_tick_functions)
        return errf(err, TK_ELIMIT,
                    "%s%scount: %llu tick functions would exceed world.max_tick_functions "
                    "(%llu registered, max %llu)",
                    p, dot, (unsigned long long)(r->count * fns),
                    (unsigned long long)tc.registered, (unsigned long long)s->max_tick_functions);
    uint64_t tb = 0;
    for (size_t i = 0; i < r->n_props; i++)
        if (r->props[i].v.type == TKS_V_SPAWN && r->props[i].v.spawn)
            tb += tmpl_req_bytes(r->props[i].v.spawn);
    for (size_t i = 0; i < r->n_components; i++)
        for (size_t k = 0; k < r->components[i].n_props; k++)
            if (r->components[i].props[k].v.type == TKS_V_SPAWN &&
                r->components[i].props[k].v.spawn)
                tb += tmpl_req_bytes(r->components[i].props[k].v.spawn);
    if (tb && s->tmpl_bytes + tb > s->max_template_bytes)
        return errf(err, TK_ELIMIT,
                    "%s%sprops: spawn templates of %llu bytes would exceed "
                    "world.max_template_bytes (%llu held, max %llu)",
                    p, dot, (unsigned long long)tb, (unsigned long long)s->tmpl_bytes,
                    (unsigned long long)s->max_template_bytes);
    if (r->life_span > 0 && timers_live(s) + r->count > TK_TIMER_MAX)
        return errf(err, TK_ELIMIT,
                    "%s%slife_span: %llu life-span timers would exceed the timer limit (%u)", p,
                    dot, (unsigned long long)r->count, (unsigned)TK_TIMER_MAX);
    return 0;
}

/* ---- creating objects -------------------------------------------------------------- */

/* The value of a TKP_PROP_STRING field nobody set: not owned. */
static const char k_empty[] = "";

static bool owns_memory(const tks_prop_desc *d)
{
    return d->type == TKS_PROP_SPAWN || d->type == TKS_PROP_STRING || d->type == TKS_PROP_IDS;
}

/* Put an owning field at its unset value without freeing what it held. */
static void detach_field(const tks_prop_desc *d, unsigned char *f)
{
    if (d->type == TKS_PROP_STRING)
        *(const char **)f = k_empty;
    else
        memset(f, 0, prop_size(d->type));
}

/* Free what a field owns (a spawn template, a string, ids) and leave it at
 * its unset value. */
static void release_field(const tks_prop_desc *d, unsigned char *f)
{
    if (!owns_memory(d))
        return;
    if (d->type == TKS_PROP_SPAWN)
        tmpl_release(((tkp_spawn_ref *)f)->tmpl);
    else if (d->type == TKS_PROP_STRING && *(const char **)f != k_empty)
        tk_free(*(char **)f);
    else if (d->type == TKS_PROP_IDS)
        tk_free((tkp_id *)((tkp_ids *)f)->ids);
    detach_field(d, f);
}

/* Store a validated value into its state field `f` (freeing what the field
 * held). */
static void store_value(tks_sim *s, const tks_prop_desc *d, unsigned char *f, const tks_value *v)
{
    release_field(d, f);
    switch (d->type) {
    case TKS_PROP_NUMBER:
        *(double *)f = v->num;
        break;
    case TKS_PROP_COUNT:
    case TKS_PROP_ID:
        *(uint64_t *)f = (uint64_t)v->num;
        break;
    case TKS_PROP_BOOL:
        *(bool *)f = v->b;
        break;
    case TKS_PROP_SPAWN: {
        tkp_spawn_ref *ref = (tkp_spawn_ref *)f;
        ref->tmpl = v->self || !v->spawn ? NULL : tmpl_share(s, v->spawn);
        ref->self = v->self;
        break;
    }
    case TKS_PROP_STRING: {
        const char *str = v->type == TKS_V_STRING ? v->str : "self";
        if (str[0])
            *(char **)f = tk_strdup(str);
        break;
    }
    case TKS_PROP_IDS:
        if (v->n_ids) {
            tkp_id *ids = tk_malloc(v->n_ids * sizeof *ids);
            memcpy(ids, v->ids, v->n_ids * sizeof *ids);
            ((tkp_ids *)f)->ids = ids;
            ((tkp_ids *)f)->n = v->n_ids;
        }
        break;
    }
}

static void set_default_props(const tks_class *c, void *state)
{
    for (size_t i = 0; i < c->p->n_props; i++) {
        const tks_prop_desc *d = &c->p->props[i];
        unsigned char *f = (unsigned char *)state + d->offset;
        tks_value v = {.type = TKS_V_NUMBER, .num = d->def, .b = d->def != 0};
        if (owns_memory(d))
            detach_field(d, f); /* nothing to release yet */
        else
            store_value(NULL, d, f, &v);
    }
}

/* Apply validated props (what the fields owned is freed). */
static void apply_props(tks_sim *s, const tks_class *c, void *state, const tks_prop_kv *kv,
                        size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const tks_prop_desc *d = find_prop(c, kv[i].key);
        store_value(s, d, (unsigned char *)state + d->offset, &kv[i].v);
    }
}

static void free_state_props(const tks_class *c, void *state)
{
    for (size_t i = 0; i < c->p->n_props; i++) {
        const tks_prop_desc *d = &c->p->props[i];
        release_field(d, (unsigned char *)state + d->offset);
    }
}

static void obj_fini(tks_sim *s, tks_obj *o)
{
    if (o->cls->p->destroy) {
        tkp_ctx ctx = make_ctx(s, NULL);
        o->cls->p->destroy(o, &ctx);
    }
    free_state_props(o->cls, tks_obj_state(o));
}

static void free_entity_mem(tks_sim *s, tks_entity *e)
{
    for (uint16_t i = 0; i < e->n_comps; i++) {
        obj_fini(s, &e->comps[i]->obj);
        tk_free(e->comps[i]);
    }
    tk_free(e->comps);
    obj_fini(s, &e->obj);
    tk_free(e);
}

static tk_tick_id register_tick(tks_sim *s, tks_obj *o, tk_level_id level,
                                const tk_tick_spec *spec, float dilation, const tk_tick_id *pre,
                                size_t npre)
{
    tk_tick_desc d = {0};
    d.cls = o->cls->tick_cls;
    d.target = o;
    d.level = level;
    d.spec = *spec;
    d.dilation = dilation;
    d.prerequisites = pre;
    d.n_prerequisites = npre;
    tk_tick_id id = TK_TICK_NONE;
    int rc = tk_tick_register(s->w, &d, &id);
    TK_ALWAYS_SIM(rc == 0);
    return id;
}

/* The timer rate of a life span (> 0 s).  As Unreal's SetLifeSpan, a span
 * shorter than the timer manager's 1 ns resolution still destroys the entity,
 * at the next timer tick, rather than being refused. */
static double life_rate(double span)
{
    return tk_s_to_ns(span) < 1 ? 1e-9 : span;
}

static void life_expired(void *ud, tk_timer_handle h, tk_world_t *w)
{
    (void)h;
    tks_sim *s = tks_of_world(w);
    tks_id id = (tks_id)(uintptr_t)ud;
    char err[TKS_ERR_MAX];
    size_t n;
    if (tks__entity(s, id))
        tks_destroy(s, &id, 1, &n, err);
}

int tks_spawn_check(tks_sim *s, const tks_spawn_req *r, char err[TKS_ERR_MAX])
{
    uint64_t total = 0;
    return check_spawn(s, r, "", 0, &total, &live_mode, err);
}

tks_id tks_reserve_ids(tks_sim *s, uint64_t n)
{
    tks_id first = s->next_id;
    s->next_id += n;
    s->reserved += n;
    return first;
}

void tks_release_ids(tks_sim *s, uint64_t n) { s->reserved -= n <= s->reserved ? n : s->reserved; }

static int spawn_at(tks_sim *s, const tks_spawn_req *r, tks_id at, tks_id *first,
                    char err[TKS_ERR_MAX]);

int tks_spawn(tks_sim *s, const tks_spawn_req *r, tks_id *first, char err[TKS_ERR_MAX])
{
    return spawn_at(s, r, 0, first, err);
}

/* The templates a spawn in slices made, shared by all its slices: the
 * session holds a reference on each, so they outlive destroys in between. */
struct tks_share {
    struct share *e;
    size_t n, cap;
};

static void tmpl_release(void *p);

tks_share *tks_share_new(void) { return tk_calloc(1, sizeof(tks_share)); }

void tks_share_free(tks_share *ss)
{
    if (!ss)
        return;
    for (size_t i = 0; i < ss->n; i++)
        tmpl_release(ss->e[i].t);
    tk_free(ss->e);
    tk_free(ss);
}

int tks_spawn_ids(tks_sim *s, const tks_spawn_req *r, tks_id first, tks_share *ss,
                  char err[TKS_ERR_MAX])
{
    if (first == 0 || first + r->count > s->next_id || r->count > s->reserved)
        return errf(err, TK_EINVAL, "ids %llu..%llu were not reserved",
                    (unsigned long long)first, (unsigned long long)(first + r->count - 1));
    /* The slice's own ids are reserved: they count once, as live. */
    s->reserved -= r->count;
    /* The session's templates are this spawn's: swap them in. */
    struct share *own = s->share;
    size_t own_n = s->n_share, own_cap = s->cap_share;
    if (ss) {
        s->share = ss->e;
        s->n_share = ss->n;
        s->cap_share = ss->cap;
    }
    s->share_keep = ss != NULL;
    tks_id f;
    int rc = spawn_at(s, r, first, &f, err);
    s->share_keep = false;
    if (ss) {
        /* spawn_at kept the templates it made, each with a reference of the
         * session's. */
        ss->e = s->share;
        ss->cap = s->cap_share;
        ss->n = s->n_share;
        s->share = own;
        s->n_share = own_n;
        s->cap_share = own_cap;
    }
    if (rc)
        s->reserved += r->count;
    return rc;
}

/* Spawn r->count entities with ids from `at` (reserved), or from next_id
 * when `at` is 0. */
static int spawn_at(tks_sim *s, const tks_spawn_req *r, tks_id at, tks_id *first,
                    char err[TKS_ERR_MAX])
{
    bool keep = s->share_keep; /* for this spawn only, not nested ones */
    s->share_keep = false;
    uint64_t total = 0;
    int rc = check_spawn(s, r, "", 0, &total, &live_mode, err);
    if (rc)
        return rc;
    const tks_class *c = tks_class_find(s, r->cls);
    tk_level_id level = TK_LEVEL_PERSISTENT;
    if (r->level)
        tk_level_find(s->w, r->level, &level);
    const tks_class *ccls[TKS_MAX_COMPONENTS];
    for (size_t i = 0; i < r->n_components; i++)
        ccls[i] = tks_class_find(s, r->components[i].cls);
    /* Prerequisite tick functions: the actor ticks of the named entities. */
    tk_tick_id *pre = NULL;
    size_t npre = 0;
    if (r->n_prereqs) {
        pre = tk_malloc(r->n_prereqs * sizeof *pre);
        for (size_t i = 0; i < r->n_prereqs; i++) {
            tks_entity *pe = tks__entity(s, r->prereqs[i]);
            if (pe->obj.tick != TK_TICK_NONE)
                pre[npre++] = pe->obj.tick;
        }
    }
    float dil = (float)r->dilation;
    *first = at ? at : s->next_id;
    /* Entities of this request share its templates (create hooks may spawn:
     * a nested spawn shares its own, above share_base). */
    size_t share_base = s->n_share;
    bool was_sharing = s->sharing;
    for (uint64_t k = 0; k < r->count; k++) {
        s->sharing = true;
        tks_id id = at ? at + k : s->next_id++;
        tks_entity *e = tk_calloc(1, sizeof *e + c->p->state_size);
        e->obj.cls = c;
        e->obj.owner = e;
        e->obj.comp = -1;
        e->id = id;
        e->level = level;
        e->dilation = dil;
        set_default_props(c, e->state);
        apply_props(s, c, e->state, r->props, r->n_props);
        id_put(s, id, e);
        s->live++;
        (*level_count(s, level))++;
        if (r->n_components) {
            e->comps = tk_calloc(r->n_components, sizeof *e->comps);
            for (size_t i = 0; i < r->n_components; i++) {
                tks_comp *cp = tk_calloc(1, sizeof *cp + ccls[i]->p->state_size);
                cp->obj.cls = ccls[i];
                cp->obj.owner = e;
                cp->obj.comp = (int16_t)i;
                set_default_props(ccls[i], cp->state);
                apply_props(s, ccls[i], cp->state, r->components[i].props,
                            r->components[i].n_props);
                e->comps[i] = cp;
            }
            e->n_comps = (uint16_t)r->n_components;
        }
        /* Tick functions: the actor's, then the components'. */
        if (r->tick.on_dedicated_server)
            e->obj.tick = register_tick(s, &e->obj, level, &r->tick, dil, pre, npre);
        else
            e->obj.flags |= TKS_OBJ_NOTICK;
        for (size_t i = 0; i < r->n_components; i++) {
            tks_comp *cp = e->comps[i];
            if (r->components[i].tick.on_dedicated_server) {
                cp->obj.tick = register_tick(s, &cp->obj, level, &r->components[i].tick, dil,
                                             NULL, 0);
            } else {
                cp->obj.flags |= TKS_OBJ_NOTICK;
                cp->spec_kept = r->components[i].tick;
            }
        }
        if (!r->tick.on_dedicated_server) {
            /* Never registered: keep the spec aside for reports. */
            nospec_add(s, e, &r->tick);
        }
        s->sharing = was_sharing;
        /* Class hooks (a follower links itself to its target). */
        tkp_ctx ctx = make_ctx(s, NULL);
        if (c->p->create)
            c->p->create(&e->obj, &ctx);
        for (size_t i = 0; i < r->n_components; i++)
            if (ccls[i]->p->create)
                ccls[i]->p->create(&e->comps[i]->obj, &ctx);
        if (r->life_span > 0) {
            tk_timer_desc td = {0};
            td.rate = life_rate(r->life_span);
            td.first_delay = -1;
            td.fn = life_expired;
            td.ud = (void *)(uintptr_t)id;
            td.owner = id;
            rc = tk_timer_set(s->w, &td, &e->life);
            TK_ALWAYS_SIM(rc == 0);
        }
    }
    if (keep) {
        /* A session (tks_spawn_ids) keeps what this spawn made. */
        for (size_t i = share_base; i < s->n_share; i++)
            s->share[i].t->refs++;
    } else {
        s->n_share = share_base;
    }
    s->sharing = was_sharing;
    tk_free(pre);
    return 0;
}

/* ---- destroy ------------------------------------------------------------------ */

static void destroy_one(tks_sim *s, tks_entity *e)
{
    tks_id id = e->id;
    if (e->obj.tick != TK_TICK_NONE)
        tk_tick_unregister(s->w, e->obj.tick);
    for (uint16_t i = 0; i < e->n_comps; i++)
        if (e->comps[i]->obj.tick != TK_TICK_NONE)
            tk_tick_unregister(s->w, e->comps[i]->obj.tick);
    tk_timer_clear_owner(s->w, id);
    if (e->obj.flags & TKS_OBJ_NOTICK)
        nospec_drop(s, e);
    (*level_count(s, e->level))--;
    s->live--;
    id_drop(s, id);
    free_entity_mem(s, e);
    if (s->on_destroy)
        s->on_destroy(s->on_destroy_ud, id);
}

int tks_destroy(tks_sim *s, const tks_id *ids, size_t n, size_t *destroyed, char err[TKS_ERR_MAX])
{
    *destroyed = 0;
    for (size_t i = 0; i < n; i++)
        if (!tks__entity(s, ids[i]))
            return errf(err, TK_ENOENT, "ids[%zu]: entity %llu does not exist", i,
                        (unsigned long long)ids[i]);
    for (size_t i = 0; i < n; i++) {
        tks_entity *e = tks__entity(s, ids[i]);
        if (!e) /* a duplicate in the list */
            continue;
        destroy_one(s, e);
        (*destroyed)++;
    }
    return 0;
}

/* ---- levels --------------------------------------------------------------------- */

int tks_level_add(tks_sim *s, const char *name, char err[TKS_ERR_MAX])
{
    int rc = tk_level_add(s->w, name, NULL);
    if (rc)
        return errf(err, rc, "name: %s", tk_world_last_error(s->w));
    return 0;
}

int tks_level_remove(tks_sim *s, const char *name, char err[TKS_ERR_MAX])
{
    tk_level_id l;
    if (!name || tk_level_find(s->w, name, &l) != 0)
        return errf(err, TK_ENOENT, "name: level '%s' does not exist", name ? name : "");
    if (l == TK_LEVEL_PERSISTENT)
        return errf(err, TK_ESTATE, "name: the persistent level cannot be removed");
    ord_prepare(s);
    s->iterating++;
    for (size_t i = 0; i < s->n_ord && tks_level_entities(s, l); i++) {
        tks_entity *e = s->ord[i];
        if (e && e->level == l)
            destroy_one(s, e);
    }
    s->iterating--;
    int rc = tk_level_remove(s->w, l);
    if (rc)
        return errf(err, rc, "name: %s", tk_world_last_error(s->w));
    return 0;
}

/* ---- entity accessors ---------------------------------------------------------------- */

tks_id tks_entity_id(const tks_entity *e) { return e->id; }
const tks_class *tks_entity_class(const tks_entity *e) { return e->obj.cls; }
tk_level_id tks_entity_level(const tks_entity *e) { return e->level; }
float tks_entity_dilation(const tks_entity *e) { return e->dilation; }
size_t tks_entity_component_count(const tks_entity *e) { return e->n_comps; }
const tks_class *tks_entity_component_class(const tks_entity *e, size_t i)
{
    return i < e->n_comps ? e->comps[i]->obj.cls : NULL;
}

double tks_entity_life_remaining(const tks_sim *s, const tks_entity *e)
{
    tk_timer_info ti;
    if (!e->life || tk_timer_get(s->w, e->life, &ti) != 0)
        return -1;
    return ti.remaining;
}

tk_tick_id tks_entity_tick(const tks_entity *e, int comp)
{
    if (comp < 0)
        return e->obj.tick;
    if ((size_t)comp >= e->n_comps)
        return TK_TICK_NONE;
    return e->comps[comp]->obj.tick;
}

const tk_tick_spec *tks_entity_tick_spec(const tks_sim *s, const tks_entity *e, int comp)
{
    if (comp >= 0)
        return (size_t)comp < e->n_comps && (e->comps[comp]->obj.flags & TKS_OBJ_NOTICK)
                   ? &e->comps[comp]->spec_kept
                   : NULL;
    if (!(e->obj.flags & TKS_OBJ_NOTICK))
        return NULL;
    return e->nospec < s->n_nospec && s->nospec[e->nospec].id == e->id
               ? &s->nospec[e->nospec].spec
               : NULL;
}

/* The value of a declared prop in a state. */
static void read_prop(const tks_prop_desc *d, const void *state, tks_value *v)
{
    const unsigned char *f = (const unsigned char *)state + d->offset;
    memset(v, 0, sizeof *v);
    switch (d->type) {
    case TKS_PROP_NUMBER:
        v->type = TKS_V_NUMBER;
        v->num = *(const double *)f;
        break;
    case TKS_PROP_COUNT:
    case TKS_PROP_ID:
        v->type = TKS_V_NUMBER;
        v->num = (double)*(const uint64_t *)f;
        break;
    case TKS_PROP_BOOL:
        v->type = TKS_V_BOOL;
        v->b = *(const bool *)f;
        break;
    case TKS_PROP_SPAWN: {
        const tkp_spawn_ref *ref = (const tkp_spawn_ref *)f;
        v->type = TKS_V_SPAWN;
        v->spawn = ref->tmpl ? ((const tmpl *)ref->tmpl)->req : NULL;
        v->self = ref->self;
        break;
    }
    case TKS_PROP_STRING:
        v->type = TKS_V_STRING;
        v->str = *(const char *const *)f;
        break;
    case TKS_PROP_IDS:
        v->type = TKS_V_IDS;
        v->ids = ((const tkp_ids *)f)->ids;
        v->n_ids = ((const tkp_ids *)f)->n;
        break;
    }
}

static void visit_props(const tks_class *c, const void *state, tks_prop_visit_fn fn, void *ud)
{
    for (size_t i = 0; i < c->p->n_props; i++) {
        tks_value v;
        read_prop(&c->p->props[i], state, &v);
        fn(ud, &c->p->props[i], &v);
    }
}

void tks_entity_props(const tks_sim *s, const tks_entity *e, int comp, tks_prop_visit_fn fn,
                      void *ud)
{
    (void)s;
    tks_obj *o = comp < 0 ? (tks_obj *)&e->obj : &e->comps[comp]->obj;
    visit_props(o->cls, tks_obj_state(o), fn, ud);
}

int tks_entity_set_props(tks_sim *s, tks_id id, const tks_prop_kv *kv, size_t n,
                         char err[TKS_ERR_MAX])
{
    tks_entity *e = tks__entity(s, id);
    if (!e)
        return errf(err, TK_ENOENT, "id: entity %llu does not exist", (unsigned long long)id);
    const tks_class *c = e->obj.cls;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++)
            if (strcmp(kv[i].key, kv[j].key) == 0)
                return errf(err, TK_EINVAL, "props.%s: given twice", kv[i].key);
        int rc = check_prop(s, c, &kv[i], "props", 0, &live_mode, err);
        if (rc)
            return rc;
    }
    if (!c->p->props_changed) {
        apply_props(s, c, e->state, kv, n);
        return 0;
    }
    /* `old` keeps the replaced strings, ids and templates alive until the
     * class has seen them: their fields are detached before the apply. */
    unsigned char *old = c->p->state_size ? tk_malloc(c->p->state_size) : NULL;
    if (old)
        memcpy(old, e->state, c->p->state_size);
    for (size_t i = 0; i < n; i++) {
        const tks_prop_desc *d = find_prop(c, kv[i].key);
        if (owns_memory(d))
            detach_field(d, e->state + d->offset);
    }
    apply_props(s, c, e->state, kv, n);
    tkp_ctx ctx = make_ctx(s, NULL);
    c->p->props_changed(&e->obj, old, &ctx);
    for (size_t i = 0; i < n; i++) {
        const tks_prop_desc *d = find_prop(c, kv[i].key);
        release_field(d, old + d->offset);
    }
    tk_free(old);
    return 0;
}

uint64_t tks_entity_list(const tks_sim *s, tk_level_id level, const tks_class *cls,
                         uint64_t offset, uint64_t limit,
                         void (*fn)(void *ud, const tks_entity *e), void *ud)
{
    /* Sorting a restored world's list is a cache, not a change. */
    tks_sim *ms = (tks_sim *)s;
    ord_prepare(ms);
    uint64_t total = 0;
    bool unfiltered = level == TK_LEVEL_NONE && !cls;
    size_t i = 0;
    /* Without filters and holes the entities before `offset` are skipped. */
    if (unfiltered && s->n_ord_dead == 0 && !s->ord_unsorted) {
        total = offset < s->n_ord ? offset : s->n_ord;
        i = (size_t)total;
    }
    ms->iterating++;
    for (; i < s->n_ord; i++) {
        const tks_entity *e = s->ord[i];
        if (!e || (level != TK_LEVEL_NONE && e->level != level) || (cls && e->obj.cls != cls))
            continue;
        if (total >= offset && total - offset < limit && fn)
            fn(ud, e);
        total++;
    }
    ms->iterating--;
    return total;
}

const tks_entity *tks_tick_owner(const tks_sim *s, tk_tick_id id, int *comp)
{
    tk_tick_info info;
    if (tk_tick_get(s->w, id, &info) != 0 || !info.target)
        return NULL;
    const tks_obj *o = info.target;
    if (!o->owner)
        return NULL;
    if (comp)
        *comp = o->comp;
    return o->owner;
}

/* ---- helpers for the classes ------------------------------------------------------ */

static bool entity_pos(tks_sim *s, tks_id id, double out[3])
{
    tks_entity *e = tks__entity(s, id);
    if (!e || e->obj.cls->p->position < 0)
        return false;
    memcpy(out, e->state + e->obj.cls->p->position, 3 * sizeof(double));
    return true;
}


static int spawn_self(tks_sim *s, tks_obj *o, char err[TKS_ERR_MAX])
{
    /* A copy: same class, props, tick spec and level as the spawning object. */
    tks_spawn_req r;
    tks_spawn_req_init(&r);
    r.cls = o->cls->name;
    tk_level_id level = o->owner ? o->owner->level : TK_LEVEL_PERSISTENT;
    r.level = tk_level_name(s->w, level);
    if (o->tick != TK_TICK_NONE) {
        tk_tick_info ti;
        if (tk_tick_get(s->w, o->tick, &ti) == 0)
            r.tick = ti.spec;
    }
    if (o->owner)
        r.dilation = o->owner->dilation;
    /* Props as they are now. */
    size_t n = o->cls->p->n_props;
    tks_prop_kv *kv = n ? tk_calloc(n, sizeof *kv) : NULL;
    const void *state = tks_obj_state(o);
    for (size_t i = 0; i < n; i++) {
        kv[i].key = o->cls->p->props[i].name;
        read_prop(&o->cls->p->props[i], state, &kv[i].v);
    }
    r.props = kv;
    r.n_props = n;
    tks_id first;
    int rc = tks_spawn(s, &r, &first, err);
    tk_free(kv);
    return rc;
}

/* ---- tickables ------------------------------------------------------------------------- */

static void tickable_tick(void *ud, float dt, tk_world_t *w)
{
    tks_obj *o = ud;
    tkp_ctx c = make_ctx(tks_of_world(w), NULL);
    o->cls->p->tick(o, dt, &c);
}

static void tickable_free(void *ud)
{
    tks_tickable *t = ud;
    obj_fini(t->sim, &t->obj);
    if (t->id)
        tk_timer_clear_owner(t->sim->w, tickable_owner(t->id));
    tk_free(t);
}

static tks_tickable *tickable_new(tks_sim *s, const tks_class *c, const tks_prop_kv *props,
                                  size_t n_props)
{
    tks_tickable *t = tk_calloc(1, sizeof *t + c->p->state_size);
    t->obj.cls = c;
    t->obj.comp = -2;
    t->sim = s;
    set_default_props(c, t->state);
    apply_props(s, c, t->state, props, n_props);
    return t;
}

/* The core refused it: never created, so no destroy hook. */
static void tickable_discard(tks_tickable *t)
{
    free_state_props(t->obj.cls, t->state);
    tk_free(t);
}

/* Registered under `id`: the create hook runs now, so that the timers it sets
 * are owned by the tickable. */
static void tickable_created(tks_sim *s, tks_tickable *t, tk_tickable_id id)
{
    t->id = id;
    remember_tickable(s, id);
    if (t->obj.cls->p->create) {
        tkp_ctx ctx = make_ctx(s, NULL);
        t->obj.cls->p->create(&t->obj, &ctx);
    }
}

int tks_tickable_add(tks_sim *s, const char *cls, tk_tickable_type type, bool when_paused,
                     const tks_prop_kv *props, size_t n_props, tk_tickable_id *out,
                     char err[TKS_ERR_MAX])
{
    const tks_class *c = tks_class_find(s, cls);
    if (!c)
        return errf(err, TK_EINVAL, "class: unknown class '%s'", cls ? cls : "");
    int rc = check_props(s, c, props, n_props, "props", 0, &live_mode, err);
    if (rc)
        return rc;
    tks_tickable *t = tickable_new(s, c, props, n_props);
    tk_tickable_desc d = {0};
    d.type = type;
    d.enabled = true;
    d.when_paused = when_paused;
    d.fn = tickable_tick;
    d.ud = t;
    d.free_ud = tickable_free;
    tk_tickable_id id;
    rc = tk_tickable_add(s->w, &d, &id);
    if (rc) {
        tickable_discard(t);
        return errf(err, rc, "%s", tk_world_last_error(s->w));
    }
    tickable_created(s, t, id);
    *out = t->id;
    return 0;
}

const tks_class *tks_tickable_class(const tks_sim *s, tk_tickable_id id)
{
    tk_tickable_info info;
    if (tk_tickable_get(s->w, id, &info) != 0 || !info.ud)
        return NULL;
    return ((tks_tickable *)info.ud)->obj.cls;
}

void tks_tickable_props(const tks_sim *s, tk_tickable_id id, tks_prop_visit_fn fn, void *ud)
{
    tk_tickable_info info;
    if (tk_tickable_get(s->w, id, &info) != 0 || !info.ud)
        return;
    tks_tickable *t = info.ud;
    visit_props(t->obj.cls, t->state, fn, ud);
}

/* ---- snapshots ---------------------------------------------------------------------- */

void tks_check_ctx(const tks_sim *s, tkp_ctx *out) { *out = make_ctx((tks_sim *)s, NULL); }

int tks_restore_check(const tks_sim *cs, const tks_entity_restore *e, const char *path,
                      bool (*id_known)(void *ud, tks_id id), void *ud, const tkp_ctx *ctx,
                      char err[TKS_ERR_MAX])
{
    tks_sim *s = (tks_sim *)cs;
    check_mode m = {id_known, ud, ctx};
    char sub[200];
    const tks_class *c = tks_class_find(s, e->cls);
    if (!c)
        return errf(err, TK_EINVAL, "%s.class: unknown class '%s'", path, e->cls ? e->cls : "");
    if (e->id == 0 || e->id > 9e15)
        return errf(err, TK_EINVAL, "%s.id: must be an entity id", path);
    if (!(isfinite(e->dilation) && e->dilation > 0 && e->dilation <= 1e6))
        return errf(err, TK_EINVAL, "%s.time_dilation: must be a number > 0", path);
    if (!isfinite(e->life_remaining))
        return errf(err, TK_EINVAL, "%s.life_span: must be a number", path);
    snprintf(sub, sizeof sub, "%s.tick", path);
    int rc = check_spec(&e->fn.spec, sub, err);
    if (rc)
        return rc;
    snprintf(sub, sizeof sub, "%s.props", path);
    if ((rc = check_props(s, c, e->props, e->n_props, sub, 0, &m, err)))
        return rc;
    if (e->n_components > TKS_MAX_COMPONENTS)
        return errf(err, TK_EINVAL, "%s.components: at most %d", path, TKS_MAX_COMPONENTS);
    for (size_t i = 0; i < e->n_components; i++) {
        const tks_comp_restore *cr = &e->components[i];
        const tks_class *cc = tks_class_find(s, cr->cls);
        if (!cc)
            return errf(err, TK_EINVAL, "%s.components[%zu].class: unknown class '%s'", path, i,
                        cr->cls ? cr->cls : "");
        snprintf(sub, sizeof sub, "%s.components[%zu].tick", path, i);
        if ((rc = check_spec(&cr->fn.spec, sub, err)))
            return rc;
        snprintf(sub, sizeof sub, "%s.components[%zu].props", path, i);
        if ((rc = check_props(s, cc, cr->props, cr->n_props, sub, 0, &m, err)))
            return rc;
    }
    return 0;
}

void tks_clear(tks_sim *s)
{
    /* Tickables first: their destroy hooks may read entities. */
    for (size_t i = 0; i < s->n_tickables; i++)
        tk_tickable_remove(s->w, s->tickables[i]);
    s->n_tickables = 0;
    s->iterating++;
    for (size_t i = 0; i < s->n_ord; i++)
        if (s->ord[i])
            destroy_one(s, s->ord[i]);
    s->iterating--;
    ord_compact(s);
    s->ord_unsorted = false;
    s->ord_max = 0;
}

static void restore_fn(tks_sim *s, tks_obj *o, tk_level_id level, const tks_fn_restore *fr,
                       float dil, tk_tick_spec *kept)
{
    if (!fr->spec.on_dedicated_server) {
        o->flags |= TKS_OBJ_NOTICK;
        if (kept)
            *kept = fr->spec;
        return;
    }
    o->tick = register_tick(s, o, level, &fr->spec, dil, NULL, 0);
    tk_tick_restore_state(s->w, o->tick, &fr->st);
}

int tks_restore_entity(tks_sim *s, const tks_entity_restore *r, char err[TKS_ERR_MAX])
{
    const tks_class *c = tks_class_find(s, r->cls);
    if (!c)
        return errf(err, TK_EINVAL, "class: unknown class '%s'", r->cls ? r->cls : "");
    if (tks__entity(s, r->id))
        return errf(err, TK_EEXIST, "id: entity %llu exists", (unsigned long long)r->id);
    if (r->life_remaining >= 0 && timers_live(s) >= TK_TIMER_MAX)
        return errf(err, TK_ELIMIT, "life_span: the timer limit (%u) is reached",
                    (unsigned)TK_TIMER_MAX);
    tk_level_id level = TK_LEVEL_PERSISTENT;
    if (r->level && tk_level_find(s->w, r->level, &level) != 0)
        return errf(err, TK_ENOENT, "level: level '%s' does not exist", r->level);
    float dil = (float)r->dilation;
    tks_entity *e = tk_calloc(1, sizeof *e + c->p->state_size);
    e->obj.cls = c;
    e->obj.owner = e;
    e->obj.comp = -1;
    e->id = r->id;
    e->level = level;
    e->dilation = dil;
    set_default_props(c, e->state);
    apply_props(s, c, e->state, r->props, r->n_props);
    id_put(s, r->id, e);
    if (r->id >= s->next_id)
        s->next_id = r->id + 1;
    s->live++;
    (*level_count(s, level))++;
    if (r->n_components) {
        e->comps = tk_calloc(r->n_components, sizeof *e->comps);
        for (size_t i = 0; i < r->n_components; i++) {
            const tks_class *cc = tks_class_find(s, r->components[i].cls);
            tks_comp *cp = tk_calloc(1, sizeof *cp + cc->p->state_size);
            cp->obj.cls = cc;
            cp->obj.owner = e;
            cp->obj.comp = (int16_t)i;
            set_default_props(cc, cp->state);
            apply_props(s, cc, cp->state, r->components[i].props, r->components[i].n_props);
            e->comps[i] = cp;
        }
        e->n_comps = (uint16_t)r->n_components;
    }
    restore_fn(s, &e->obj, level, &r->fn, dil, NULL);
    if (!r->fn.spec.on_dedicated_server) {
        nospec_add(s, e, &r->fn.spec);
    }
    for (size_t i = 0; i < r->n_components; i++)
        restore_fn(s, &e->comps[i]->obj, level, &r->components[i].fn, dil,
                   &e->comps[i]->spec_kept);
    if (r->life_remaining >= 0) {
        tk_timer_desc td = {0};
        td.rate = life_rate(r->life_remaining);
        td.first_delay = -1;
        td.fn = life_expired;
        td.ud = (void *)(uintptr_t)r->id;
        td.owner = r->id;
        int rc = tk_timer_set(s->w, &td, &e->life);
        TK_ALWAYS_SIM(rc == 0);
    }
    return 0;
}

void tks_restore_done(tks_sim *s)
{
    tkp_ctx ctx = make_ctx(s, NULL);
    ord_prepare(s);
    s->iterating++;
    for (size_t i = 0; i < s->n_ord; i++) {
        tks_entity *e = s->ord[i];
        if (!e)
            continue;
        if (e->obj.cls->p->create)
            e->obj.cls->p->create(&e->obj, &ctx);
        for (uint16_t k = 0; k < e->n_comps; k++) {
            tks_obj *o = &e->comps[k]->obj;
            if (o->cls->p->create)
                o->cls->p->create(o, &ctx);
        }
    }
    s->iterating--;
}

int tks_tickable_restore(tks_sim *s, const char *cls, const tk_tickable_desc *desc,
                         const tks_prop_kv *props, size_t n_props, tk_tickable_id id,
                         uint64_t ticks, uint64_t last_frame, double accum_dt,
                         char err[TKS_ERR_MAX])
{
    const tks_class *c = tks_class_find(s, cls);
    if (!c)
        return errf(err, TK_EINVAL, "class: unknown class '%s'", cls ? cls : "");
    int rc = check_props(s, c, props, n_props, "props", 0, &restored_mode, err);
    if (rc)
        return rc;
    tks_tickable *t = tickable_new(s, c, props, n_props);
    tk_tickable_desc d = *desc;
    d.fn = tickable_tick;
    d.ud = t;
    d.free_ud = tickable_free;
    rc = tk_tickable_restore(s->w, &d, id, ticks, last_frame, accum_dt);
    if (rc) {
        tickable_discard(t);
        return errf(err, rc, "%s", tk_world_last_error(s->w));
    }
    tickable_created(s, t, id);
    return 0;
}
