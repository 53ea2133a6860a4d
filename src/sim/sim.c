/*
 * sim.c - the entity layer's object: creation and teardown, limits, and the
 * class registry (the contract is in sim.h; sim_int.h lists the module's
 * other files).
 *
 * Every class, built-in or plugin, gets a core tick class whose functions
 * are trampolines to the class (store.c) and a store of its instances' rows.
 * The sim adds one delegate to the engine's core ticker: once per frame,
 * after the world tick, it closes the holes that destroys left in the stores
 * (at most COMPACT_BUDGET rows moved per frame).
 *
 * Every mutating call validates the whole request first, then applies it;
 * applying cannot fail except by running out of memory, which aborts
 * (tk_malloc's policy).
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim_int.h"

/* Rows moved per frame at most by the compaction pass (about 1 - 3 ms). */
#define COMPACT_BUDGET 65536

/* Log lines name tick functions by entity. */
static void tick_namer(void *ud, tk_tick_id id, void *target, char *buf, size_t len)
{
    (void)ud;
    (void)id;
    const tks_obj *o = target;
    if (!o || o->comp == -2)
        snprintf(buf, len, "tickable [%s]", o ? tks_obj_class(o)->name : "?");
    else if (o->comp >= 0)
        snprintf(buf, len, "entity %llu component %d [%s]", (unsigned long long)o->id, o->comp,
                 tks_obj_class(o)->name);
    else
        snprintf(buf, len, "entity %llu [%s]", (unsigned long long)o->id, tks_obj_class(o)->name);
}

static bool compact_tick(void *ud, double dt)
{
    (void)dt;
    tks__compact(ud, COMPACT_BUDGET);
    return true;
}

static tks_sim *sim_alloc(tk_engine_t *engine, tk_world_t *w, const tks_config *cfg)
{
    tks_sim *s = tk_calloc(1, sizeof *s);
    s->engine = engine;
    s->w = w;
    s->next_id = 1;
    s->max_entities = cfg && cfg->max_entities ? cfg->max_entities : UINT64_MAX;
    s->max_tick_functions = cfg && cfg->max_tick_functions ? cfg->max_tick_functions : UINT64_MAX;
    s->max_template_bytes = cfg && cfg->max_template_bytes ? cfg->max_template_bytes : UINT64_MAX;
    tk_world_set_user(s->w, s);
    tk_world_set_tick_namer(s->w, tick_namer, s);
    return s;
}

tks_sim *tks_new(tk_engine_t *engine, const tks_config *cfg)
{
    tks_sim *s = sim_alloc(engine, tk_engine_world(engine), cfg);
    for (size_t i = 0; i < tks_n_builtin_classes; i++) {
        char err[TKS_ERR_MAX];
        if (tks_register_class(s, tks_builtin_classes[i], "built-in", err) != 0) {
            tk_log_error("cannot register a built-in class: %s", err);
            abort();
        }
    }
    TKS_ALWAYS(tk_ticker_add(engine, 0, compact_tick, s, &s->compactor) == 0);
    return s;
}

tks_sim *tks_new_aside(const tks_sim *like)
{
    tk_world_t *w;
    TKS_ALWAYS(tk_world_new(1.0, &w) == 0);
    tks_config cfg = {like->max_entities, like->max_tick_functions, like->max_template_bytes};
    tks_sim *s = sim_alloc(NULL, w, &cfg);
    s->own_world = true;
    /* The same classes in the same order: the same core class ids, the same
     * names in messages, the same hooks. */
    for (size_t i = 0; i < like->n_classes; i++) {
        char err[TKS_ERR_MAX];
        const tks_class *c = like->classes[i];
        if (tks_register_class(s, c->p, c->origin, err) != 0) {
            tk_log_error("cannot register class '%s' aside: %s", c->name, err);
            abort();
        }
    }
    s->on_destroy = like->on_destroy;
    s->on_destroy_ud = like->on_destroy_ud;
    /* Creates of classes whose hooks run on the frame thread only wait for
     * tks_run_deferred_creates; until then no destroy of theirs either. */
    s->defer_creates = true;
    s->frame_hooks_off = true;
    return s;
}

tks_sim *tks_swap(tks_sim *live, tks_sim *aside)
{
    TKS_ALWAYS(live->engine && !aside->engine && aside->own_world);
    tk_world_t *old;
    TKS_ALWAYS(tk_engine_swap_world(live->engine, aside->w, &old) == 0 && old == live->w);
    aside->engine = live->engine;
    aside->own_world = false;
    tk_ticker_remove(live->engine, live->compactor);
    TKS_ALWAYS(tk_ticker_add(aside->engine, 0, compact_tick, aside, &aside->compactor) == 0);
    live->engine = NULL;
    live->own_world = true;
    /* Limits may have been reloaded since the copy was made. */
    aside->max_entities = live->max_entities;
    aside->max_tick_functions = live->max_tick_functions;
    aside->max_template_bytes = live->max_template_bytes;
    aside->on_destroy = live->on_destroy;
    aside->on_destroy_ud = live->on_destroy_ud;
    live->on_destroy = NULL;
    /* The plugin libraries stay loaded as long as the live sim runs their code. */
    aside->handles = live->handles;
    aside->n_handles = live->n_handles;
    live->handles = NULL;
    live->n_handles = 0;
    return aside;
}

void tks_free(tks_sim *s)
{
    if (!s)
        return;
    if (s->engine)
        tk_ticker_remove(s->engine, s->compactor);
    /* Our tickables first: their cleanup needs the classes freed below. */
    for (size_t i = 0; i < s->n_tickables; i++)
        tk_tickable_remove(s->w, s->tickables[i]);
    tk_free(s->tickables);
    /* Class hooks of every entity, in id order (components first, as a
     * destroy runs them). */
    tks_iter it;
    tks__iter_begin(s, &it);
    for (tks_obj *e; (e = tks__iter_next(s, &it));) {
        for (size_t k = 0; k < tks__n_comps(s, e); k++)
            tks__obj_fini(s, tks__comp(s, e, (int)k));
        tks__obj_fini(s, e);
    }
    tks__iter_end(s, &it);
    tks__extras_free(s);
    tks__ids_free(s);
    tk_free(s->share);
    tk_free(s->levels);
    /* A world of its own goes first: its tick functions, timers and
     * tickables point into the stores freed below. */
    if (s->own_world) {
        tk_world_set_user(s->w, NULL);
        tk_world_free(s->w);
        s->w = NULL;
    }
    for (size_t i = 0; i < s->n_classes; i++) {
        tks__store_fini(&s->classes[i]->store);
        tk_free(s->classes[i]);
    }
    tk_free(s->classes);
    if (s->w)
        tk_world_set_user(s->w, NULL);
    for (size_t i = 0; i < s->n_handles; i++)
        dlclose(s->handles[i]);
    tk_free(s->handles);
    tk_free(s->later);
    tk_free(s->later_tb);
    tk_free(s);
}

bool tks_class_hooks_anywhere(const tks_class *c)
{
    return strcmp(c->origin, "built-in") == 0 || (!c->p->create && !c->p->destroy);
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

bool tks_class_thread_safe(const tkp_class *p)
{
    return p->abi >= 3 && (p->flags & TKP_CLASS_THREAD_SAFE);
}
const char *tks_class_origin(const tks_class *c) { return c->origin; }

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

int tks_check_class(const tks_sim *s, const tkp_class *p, const char *origin, char err[TKS_ERR_MAX])
{
    if (!p)
        return tks__errf(err, TK_EINVAL, "%s: no class descriptor", origin);
    if (p->abi < TICKD_PLUGIN_ABI_MIN || p->abi > TICKD_PLUGIN_ABI)
        return tks__errf(err, TK_EINVAL,
                         "%s: class '%s' speaks plugin ABI %u, this tickd speaks %u", origin,
                         p->name ? p->name : "?", (unsigned)p->abi, TICKD_PLUGIN_ABI);
    if (!valid_name(p->name, true))
        return tks__errf(err, TK_EINVAL, "%s: class name must be 1..63 bytes of [A-Za-z0-9_.-]",
                         origin);
    if (tks_class_find(s, p->name))
        return tks__errf(err, TK_EEXIST, "%s: class '%s' already exists (from %s)", origin, p->name,
                         tks_class_find(s, p->name)->origin);
    if (s->n_classes >= TK_CLASS_MAX)
        return tks__errf(err, TK_ELIMIT, "%s: too many classes (max %d)", origin, TK_CLASS_MAX);
    if (!p->tick)
        return tks__errf(err, TK_EINVAL, "%s: class '%s' has no tick function", origin, p->name);
    if (p->state_size > (1u << 20))
        return tks__errf(err, TK_EINVAL, "%s: class '%s': state_size over 1 MiB", origin, p->name);
    if (p->n_props && !p->props)
        return tks__errf(err, TK_EINVAL, "%s: class '%s': props is NULL", origin, p->name);
    for (size_t i = 0; i < p->n_props; i++) {
        const tkp_prop *d = &p->props[i];
        size_t sz = tks__prop_size(d->type);
        if (!valid_name(d->name, false))
            return tks__errf(err, TK_EINVAL, "%s: class '%s': prop %zu: name must be [a-z0-9_]",
                             origin, p->name, i);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(p->props[j].name, d->name))
                return tks__errf(err, TK_EINVAL, "%s: class '%s': prop '%s' declared twice", origin,
                                 p->name, d->name);
        if (!sz)
            return tks__errf(err, TK_EINVAL, "%s: class '%s': prop '%s' has an unknown type",
                             origin, p->name, d->name);
        if (d->offset + sz > p->state_size || d->offset % (sz >= 8 ? 8 : sz) != 0)
            return tks__errf(err, TK_EINVAL,
                             "%s: class '%s': prop '%s' is not an aligned field inside the state",
                             origin, p->name, d->name);
        if ((d->type == TKP_PROP_NUMBER || d->type == TKP_PROP_COUNT) &&
            !(d->min <= d->def && d->def <= d->max))
            return tks__errf(err, TK_EINVAL, "%s: class '%s': prop '%s': default out of its range",
                             origin, p->name, d->name);
        if ((d->type == TKP_PROP_STRING || d->type == TKP_PROP_IDS) &&
            !(d->max >= 0 && d->max <= TKS_PROP_LIST_MAX && d->max == floor(d->max)))
            return tks__errf(err, TK_EINVAL, "%s: class '%s': prop '%s': max must be 0..%d", origin,
                             p->name, d->name, TKS_PROP_LIST_MAX);
    }
    if (p->position >= 0 &&
        ((size_t)p->position + 3 * sizeof(double) > p->state_size || p->position % 8 != 0))
        return tks__errf(err, TK_EINVAL, "%s: class '%s': position is not inside the state", origin,
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
    tk_tick_class_desc d = {c->name, tks__obj_tick, p->tick_batch ? tks__obj_batch : NULL,
                            tks_class_thread_safe(p)};
    rc = tk_tick_class_register(s->w, &d, &c->tick_cls);
    /* Rows hold their function's slot (tkp_obj.tslot): no id beside each
     * target in the scheduler's lanes. */
    if (!rc)
        rc = tk_tick_class_slot_in_target(s->w, c->tick_cls, offsetof(tks_obj, tslot));
    if (rc) {
        tk_free(c);
        return tks__errf(err, rc, "%s: class '%s': %s", origin, p->name, tk_world_last_error(s->w));
    }
    tks__store_init(&c->store, s, c);
    s->classes = tk_realloc(s->classes, (s->n_classes + 1) * sizeof *s->classes);
    s->classes[s->n_classes++] = c;
    return 0;
}
