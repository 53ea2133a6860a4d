/*
 * spawn.c - spawns, destroys, levels and life spans (the contract is in
 * sim.h).
 *
 * A spawn validates the whole request first (props.c), then creates its
 * entities one after the other; applying cannot fail except by running out
 * of memory, which aborts (tk_malloc's policy).  For each entity it appends
 * the actor's row and its components' rows to their classes' stores
 * (store.c), fills the states, and only then registers their tick functions,
 * in the same order: that keeps every store in the order the scheduler runs
 * the functions.  Class create hooks run last (they may link prerequisites
 * or spawn).
 *
 * A destroy unregisters the entity's functions, clears its timers, runs the
 * destroy hooks (components first, as they were created after the actor),
 * frees what the props own and marks the rows dead; the stores close the
 * holes between frames.
 */
#include <stdio.h>
#include <string.h>

#include "sim_int.h"

/* ---- levels and limits ------------------------------------------------------------ */

uint64_t *tks__level_count(tks_sim *s, tk_level_id level)
{
    size_t i = level & 0xffffu;
    if (i >= s->n_levels) {
        size_t n = i + 16;
        s->levels = tk_realloc(s->levels, n * sizeof *s->levels);
        memset(s->levels + s->n_levels, 0, (n - s->n_levels) * sizeof *s->levels);
        s->n_levels = n;
    }
    /* One level per index while it holds entities (tks_obj_level). */
    TKS_ALWAYS(s->levels[i].n == 0 || s->levels[i].id == level);
    s->levels[i].id = level;
    return &s->levels[i].n;
}

uint64_t tks_level_entities(const tks_sim *s, tk_level_id level)
{
    size_t i = level & 0xffffu;
    return i < s->n_levels && s->levels[i].id == level ? s->levels[i].n : 0;
}

uint64_t tks__timers_live(const tks_sim *s)
{
    tk_timer_counts tc;
    tk_timer_get_counts(s->w, &tc);
    return (uint64_t)tc.active + tc.paused + tc.pending;
}

tk_tick_id tks__register_tick(tks_sim *s, tks_obj *o, const tk_tick_spec *spec, float dilation,
                              const tk_tick_id *pre, size_t npre)
{
    tk_tick_desc d = {0};
    d.cls = tks_obj_class(o)->tick_cls;
    d.target = o;
    d.level = tks_obj_level(s, o);
    d.spec = *spec;
    d.dilation = dilation;
    d.prerequisites = pre;
    d.n_prerequisites = npre;
    tk_tick_id id = TK_TICK_NONE;
    int rc = tk_tick_register(s->w, &d, &id);
    TKS_ALWAYS(rc == 0);
    if (dilation == 0 && id != TK_TICK_NONE) /* the desc's 0 means 1 */
        TKS_ALWAYS(tk_tick_set_dilation(s->w, id, 0.0f) == 0);
    return id;
}

/* ---- life spans ------------------------------------------------------------------- */

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

tk_timer_handle tks__life_timer(tks_sim *s, tks_id id, double span)
{
    tk_timer_desc td = {0};
    /* As Unreal's SetLifeSpan, a span shorter than the timer manager's 1 ns
     * resolution still destroys the entity, at the next timer tick, rather
     * than being refused. */
    td.rate = tk_s_to_ns(span) < 1 ? 1e-9 : span;
    td.first_delay = -1;
    td.fn = life_expired;
    td.ud = (void *)(uintptr_t)id;
    td.owner = id;
    tk_timer_handle h = 0;
    int rc = tk_timer_set(s->w, &td, &h);
    TKS_ALWAYS(rc == 0);
    return h;
}

int tks_restore_life_timer(tks_sim *s, tks_id id, tk_timer_handle h, double rate,
                           tk_timer_status status, double remaining)
{
    tk_timer_desc td = {0};
    td.rate = tk_s_to_ns(rate) < 1 ? 1e-9 : rate;
    td.fn = life_expired;
    td.ud = (void *)(uintptr_t)id;
    td.owner = id;
    if (status != TK_TIMER_PAUSED && status != TK_TIMER_PENDING)
        status = TK_TIMER_ACTIVE;
    return tk_timer_restore(s->w, &td, h, status, remaining, 0);
}

/* ---- spawning ----------------------------------------------------------------------- */

int tks_spawn_check(tks_sim *s, const tks_spawn_req *r, char err[TKS_ERR_MAX])
{
    uint64_t total = 0;
    return tks__check_spawn(s, r, "", 0, &total, &tks__live_mode, err);
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
    tks_shared *e;
    size_t n, cap;
};

tks_share *tks_share_new(void) { return tk_calloc(1, sizeof(tks_share)); }

void tks_share_free(tks_share *ss)
{
    if (!ss)
        return;
    for (size_t i = 0; i < ss->n; i++)
        tks__tmpl_release(ss->e[i].t);
    tk_free(ss->e);
    tk_free(ss);
}

int tks_spawn_ids(tks_sim *s, const tks_spawn_req *r, tks_id first, tks_share *ss,
                  char err[TKS_ERR_MAX])
{
    if (first == 0 || first + r->count > s->next_id || r->count > s->reserved)
        return tks__errf(err, TK_EINVAL, "ids %llu..%llu were not reserved",
                         (unsigned long long)first, (unsigned long long)(first + r->count - 1));
    /* The slice's own ids are reserved: they count once, as live. */
    s->reserved -= r->count;
    /* The session's templates are this spawn's: swap them in. */
    tks_shared *own = s->share;
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

/* A row of class `c` for entity `id` with the request's props. */
static tks_obj *new_row(tks_sim *s, const tks_class *c, tks_id id, tk_level_id level, int comp,
                        const tks_prop_kv *props, size_t n_props)
{
    tks_obj *o = tks__store_append((tks_store *)&c->store, id, level, comp);
    void *state = tks_row_state(o);
    tks__set_default_props(c, state);
    tks__apply_props(s, c, state, props, n_props);
    return o;
}

/* Spawn r->count entities with ids from `at` (reserved), or from next_id
 * when `at` is 0. */
static int spawn_at(tks_sim *s, const tks_spawn_req *r, tks_id at, tks_id *first,
                    char err[TKS_ERR_MAX])
{
    bool keep = s->share_keep; /* for this spawn only, not nested ones */
    s->share_keep = false;
    uint64_t total = 0;
    int rc = tks__check_spawn(s, r, "", 0, &total, &tks__live_mode, err);
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
            tks_obj *pe = tks__entity(s, r->prereqs[i]);
            if (pe->tslot)
                pre[npre++] = tks_obj_tick(s, pe);
        }
    }
    float dil = (float)r->dilation;
    /* Rare data goes to an extra record: only entities that have some. */
    bool extra = r->n_components || dil != 1.0f || r->life_span > 0 || !r->tick.on_dedicated_server;
    *first = at ? at : s->next_id;
    /* Entities of this request share its templates (create hooks may spawn:
     * a nested spawn shares its own, above share_base). */
    size_t share_base = s->n_share;
    bool was_sharing = s->sharing;
    for (uint64_t k = 0; k < r->count; k++) {
        s->sharing = true;
        tks_id id = at ? at + k : s->next_id++;
        tks_obj *e = new_row(s, c, id, level, -1, r->props, r->n_props);
        tks__id_put(s, id, e);
        s->live++;
        (*tks__level_count(s, level))++;
        tks_extra *x = extra ? tks__extra_new(s, e, r->n_components) : NULL;
        if (x)
            x->dilation = dil;
        for (size_t i = 0; i < r->n_components; i++)
            x->comps[i].o = new_row(s, ccls[i], id, level, (int)i, r->components[i].props,
                                    r->components[i].n_props);
        /* Tick functions: the actor's, then the components', in the order
         * of their rows (a component row never moves before compaction). */
        if (r->tick.on_dedicated_server) {
            tks_obj_set_tick(e, tks__register_tick(s, e, &r->tick, dil, pre, npre));
        } else {
            /* Never registered: the spec is kept for reports. */
            e->flags |= TKS_OBJ_NOTICK;
            x->kept = r->tick;
        }
        for (size_t i = 0; i < r->n_components; i++) {
            tks_obj *cp = x->comps[i].o;
            if (r->components[i].tick.on_dedicated_server) {
                tks_obj_set_tick(cp, tks__register_tick(s, cp, &r->components[i].tick, dil, NULL, 0));
            } else {
                cp->flags |= TKS_OBJ_NOTICK;
                x->comps[i].kept = r->components[i].tick;
            }
        }
        s->sharing = was_sharing;
        /* Class hooks (a follower links itself to its target).  A hook may
         * spawn, which appends rows but never moves one. */
        tkp_ctx ctx = tks__ctx(s, NULL);
        if (c->p->create)
            c->p->create(e, &ctx);
        for (size_t i = 0; i < r->n_components; i++)
            if (ccls[i]->p->create)
                ccls[i]->p->create(x->comps[i].o, &ctx);
        if (r->life_span > 0)
            x->life = tks__life_timer(s, id, r->life_span);
    }
    if (keep) {
        /* A session (tks_spawn_ids) keeps what this spawn made. */
        for (size_t i = share_base; i < s->n_share; i++)
            tks__tmpl_ref(s->share[i].t);
    } else {
        s->n_share = share_base;
    }
    s->sharing = was_sharing;
    tk_free(pre);
    return 0;
}

int tks__spawn_self(tks_sim *s, tks_obj *o, char err[TKS_ERR_MAX])
{
    /* A copy: same class, props, tick spec and level as the spawning object. */
    const tks_class *c = tks_obj_class(o);
    tks_spawn_req r;
    tks_spawn_req_init(&r);
    r.cls = c->name;
    tk_level_id level = o->comp == -2 ? TK_LEVEL_PERSISTENT : tks_obj_level(s, o);
    r.level = tk_level_name(s->w, level);
    if (o->tslot) {
        tk_tick_info ti;
        if (tk_tick_get(s->w, tks_obj_tick(s, o), &ti) == 0)
            r.tick = ti.spec;
    }
    if (o->comp != -2) {
        tks_obj *e = tks__entity(s, o->id);
        r.dilation = e ? tks_entity_dilation((const tks_entity *)e) : 1.0;
    }
    /* Props as they are now. */
    size_t n = c->p->n_props;
    tks_prop_kv *kv = n ? tk_calloc(n, sizeof *kv) : NULL;
    const void *state = tks_obj_state(o);
    for (size_t i = 0; i < n; i++) {
        kv[i].key = c->p->props[i].name;
        tks__read_prop(&c->p->props[i], state, &kv[i].v);
    }
    r.props = kv;
    r.n_props = n;
    tks_id first;
    int rc = tks_spawn(s, &r, &first, err);
    tk_free(kv);
    return rc;
}

/* ---- destroying ----------------------------------------------------------------------- */

void tks__destroy_one(tks_sim *s, tks_obj *e)
{
    tks_id id = e->id;
    tks_extra *x = (e->flags & TKS_OBJ_EXTRA) ? tks__extra(s, id) : NULL;
    size_t nc = x ? x->n_comps : 0;
    if (e->tslot)
        tk_tick_unregister(s->w, tks_obj_tick(s, e));
    for (size_t i = 0; i < nc; i++)
        if (x->comps[i].o->tslot)
            tk_tick_unregister(s->w, tks_obj_tick(s, x->comps[i].o));
    tk_timer_clear_owner(s->w, id);
    (*tks__level_count(s, tks_obj_level(s, e)))--;
    s->live--;
    tks__id_drop(s, id);
    /* Components first (created after the actor), then the actor. */
    for (size_t i = 0; i < nc; i++) {
        tks__obj_fini(s, x->comps[i].o);
        tks__store_kill(x->comps[i].o);
    }
    tks__obj_fini(s, e);
    tks__store_kill(e);
    if (x)
        tk_free(tks__extra_take(s, id));
    if (s->on_destroy)
        s->on_destroy(s->on_destroy_ud, id);
}

int tks_destroy(tks_sim *s, const tks_id *ids, size_t n, size_t *destroyed, char err[TKS_ERR_MAX])
{
    *destroyed = 0;
    for (size_t i = 0; i < n; i++)
        if (!tks__entity(s, ids[i]))
            return tks__errf(err, TK_ENOENT, "ids[%zu]: entity %llu does not exist", i,
                             (unsigned long long)ids[i]);
    for (size_t i = 0; i < n; i++) {
        tks_obj *e = tks__entity(s, ids[i]);
        if (!e) /* a duplicate in the list */
            continue;
        tks__destroy_one(s, e);
        (*destroyed)++;
    }
    return 0;
}

/* ---- levels --------------------------------------------------------------------------- */

int tks_level_add(tks_sim *s, const char *name, char err[TKS_ERR_MAX])
{
    int rc = tk_level_add(s->w, name, NULL);
    if (rc)
        return tks__errf(err, rc, "name: %s", tk_world_last_error(s->w));
    return 0;
}

int tks_level_remove(tks_sim *s, const char *name, char err[TKS_ERR_MAX])
{
    tk_level_id l;
    if (!name || tk_level_find(s->w, name, &l) != 0)
        return tks__errf(err, TK_ENOENT, "name: level '%s' does not exist", name ? name : "");
    if (l == TK_LEVEL_PERSISTENT)
        return tks__errf(err, TK_ESTATE, "name: the persistent level cannot be removed");
    tks_iter it;
    tks__iter_begin(s, &it);
    for (tks_obj *e; tks_level_entities(s, l) && (e = tks__iter_next(s, &it));)
        if (tks_obj_level(s, e) == l)
            tks__destroy_one(s, e);
    tks__iter_end(s, &it);
    int rc = tk_level_remove(s->w, l);
    if (rc)
        return tks__errf(err, rc, "name: %s", tk_world_last_error(s->w));
    return 0;
}
