/*
 * restore.c - snapshot support (world.load): checking a snapshot's entities
 * without touching the world, clearing the world, and putting entities back
 * under their saved ids with their tick functions' counters and life spans
 * (the contract is in sim.h; the daemon's snapshot.c reads and writes the
 * files).
 *
 * A restored entity goes through the same storage as a spawned one: its
 * rows are appended and its functions registered in the same order, so the
 * stores stay in the order the scheduler runs them whatever order the
 * snapshot lists entities in.
 */
#include <math.h>
#include <stdio.h>

#include "sim_int.h"

void tks_check_ctx(const tks_sim *s, tkp_ctx *out) { *out = tks__ctx((tks_sim *)s, NULL); }

int tks_restore_check(const tks_sim *cs, const tks_entity_restore *e, const char *path,
                      bool (*id_known)(void *ud, tks_id id), void *ud, const tkp_ctx *ctx,
                      char err[TKS_ERR_MAX])
{
    tks_sim *s = (tks_sim *)cs;
    tks_check_mode m = {id_known, ud, ctx};
    char sub[200];
    const tks_class *c = tks_class_find(s, e->cls);
    if (!c)
        return tks__errf(err, TK_EINVAL, "%s.class: unknown class '%s'", path,
                         e->cls ? e->cls : "");
    if (e->id == 0 || e->id > 9e15)
        return tks__errf(err, TK_EINVAL, "%s.id: must be an entity id", path);
    if (!(isfinite(e->dilation) && e->dilation >= 0 && e->dilation <= 1e6))
        return tks__errf(err, TK_EINVAL, "%s.time_dilation: must be a number >= 0", path);
    if (!isfinite(e->life_remaining))
        return tks__errf(err, TK_EINVAL, "%s.life_span: must be a number", path);
    snprintf(sub, sizeof sub, "%s.tick", path);
    int rc = tks__check_spec(&e->fn.spec, sub, err);
    if (rc)
        return rc;
    snprintf(sub, sizeof sub, "%s.props", path);
    if ((rc = tks__check_props(s, c, e->props, e->n_props, sub, 0, &m, err)))
        return rc;
    if (e->n_components > TKS_MAX_COMPONENTS)
        return tks__errf(err, TK_EINVAL, "%s.components: at most %d", path, TKS_MAX_COMPONENTS);
    for (size_t i = 0; i < e->n_components; i++) {
        const tks_comp_restore *cr = &e->components[i];
        const tks_class *cc = tks_class_find(s, cr->cls);
        if (!cc)
            return tks__errf(err, TK_EINVAL, "%s.components[%zu].class: unknown class '%s'", path,
                             i, cr->cls ? cr->cls : "");
        snprintf(sub, sizeof sub, "%s.components[%zu].tick", path, i);
        if ((rc = tks__check_spec(&cr->fn.spec, sub, err)))
            return rc;
        snprintf(sub, sizeof sub, "%s.components[%zu].props", path, i);
        if ((rc = tks__check_props(s, cc, cr->props, cr->n_props, sub, 0, &m, err)))
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
    tks_iter it;
    tks__iter_begin(s, &it);
    for (tks_obj *e; (e = tks__iter_next(s, &it));)
        tks__destroy_one(s, e);
    tks__iter_end(s, &it);
}

/* Register a restored function (or keep its spec aside) and put back its
 * counters and interval phase. */
static void restore_fn(tks_sim *s, tks_obj *o, const tks_fn_restore *fr, float dil,
                       tk_tick_spec *kept)
{
    if (!fr->spec.on_dedicated_server) {
        o->flags |= TKS_OBJ_NOTICK;
        *kept = fr->spec;
        return;
    }
    tk_tick_id t = tks__register_tick(s, o, &fr->spec, dil, NULL, 0);
    tks_obj_set_tick(o, t);
    tk_tick_restore_state(s->w, t, &fr->st);
}

int tks_restore_entity(tks_sim *s, const tks_entity_restore *r, char err[TKS_ERR_MAX])
{
    const tks_class *c = tks_class_find(s, r->cls);
    if (!c)
        return tks__errf(err, TK_EINVAL, "class: unknown class '%s'", r->cls ? r->cls : "");
    if (tks__entity(s, r->id))
        return tks__errf(err, TK_EEXIST, "id: entity %llu exists", (unsigned long long)r->id);
    if (r->life_remaining >= 0 && !r->life_handle && tks__timers_live(s) >= TK_TIMER_MAX)
        return tks__errf(err, TK_ELIMIT, "life_span: the timer limit (%u) is reached",
                         (unsigned)TK_TIMER_MAX);
    tk_level_id level = TK_LEVEL_PERSISTENT;
    if (r->level && tk_level_find(s->w, r->level, &level) != 0)
        return tks__errf(err, TK_ENOENT, "level: level '%s' does not exist", r->level);
    const tks_class *ccls[TKS_MAX_COMPONENTS];
    for (size_t i = 0; i < r->n_components; i++) {
        ccls[i] = tks_class_find(s, r->components[i].cls);
        if (!ccls[i])
            return tks__errf(err, TK_EINVAL, "components[%zu].class: unknown class '%s'", i,
                             r->components[i].cls ? r->components[i].cls : "");
    }
    float dil = (float)r->dilation;
    tks_obj *e = tks__store_append((tks_store *)&c->store, r->id, level, -1);
    tks__set_default_props(c, tks_row_state(e));
    tks__apply_props(s, c, tks_row_state(e), r->props, r->n_props);
    tks__id_put(s, r->id, e);
    if (r->id >= s->next_id)
        s->next_id = r->id + 1;
    s->live++;
    (*tks__level_count(s, level))++;
    tks_extra *x = NULL;
    if (r->n_components || dil != 1.0f || r->life_remaining >= 0 || r->life_handle ||
        !r->fn.spec.on_dedicated_server)
        x = tks__extra_new(s, e, r->n_components);
    if (x)
        x->dilation = dil;
    for (size_t i = 0; i < r->n_components; i++) {
        tks_obj *cp = tks__store_append((tks_store *)&ccls[i]->store, r->id, level, (int)i);
        tks__set_default_props(ccls[i], tks_row_state(cp));
        tks__apply_props(s, ccls[i], tks_row_state(cp), r->components[i].props,
                         r->components[i].n_props);
        x->comps[i].o = cp;
    }
    restore_fn(s, e, &r->fn, dil, x ? &x->kept : NULL);
    for (size_t i = 0; i < r->n_components; i++)
        restore_fn(s, x->comps[i].o, &r->components[i].fn, dil, &x->comps[i].kept);
    if (r->life_handle && tk_timer_exists(s->w, r->life_handle))
        x->life = r->life_handle; /* restored already (tks_restore_life_timer) */
    else if (r->life_remaining >= 0)
        x->life = tks__life_timer(s, r->id, r->life_remaining);
    return 0;
}

/* Which create hooks create_entity runs. */
enum { CREATE_ALL, CREATE_ANYWHERE, CREATE_FRAME_ONLY };

static bool create_wanted(const tks_class *c, int which)
{
    return which == CREATE_ALL || tks__frame_only(c) == (which == CREATE_FRAME_ONLY);
}

/* Run the create hooks of entity id's actor and then its components, of
 * the classes `which` asks for; true if it left one of another class. */
static bool create_entity(tks_sim *s, tks_id id, const tkp_ctx *ctx, int which)
{
    bool left = false;
    tks_obj *e = tks__entity(s, id);
    if (!e)
        return false;
    const tks_class *c = tks_obj_class(e);
    if (c->p->create && create_wanted(c, which))
        c->p->create(e, ctx);
    else if (c->p->create)
        left = true;
    for (size_t k = 0; (e = tks__entity(s, id)) && k < tks__n_comps(s, e); k++) {
        tks_obj *o = tks__comp(s, e, (int)k);
        c = tks_obj_class(o);
        if (c->p->create && create_wanted(c, which))
            c->p->create(o, ctx);
        else if (c->p->create)
            left = true;
    }
    return left;
}

void tks_restore_done(tks_sim *s)
{
    tkp_ctx ctx = tks__ctx(s, NULL);
    tks_iter it;
    tks__iter_begin(s, &it);
    for (tks_obj *e; (e = tks__iter_next(s, &it));) {
        tks_id id = e->id;
        if (!s->defer_creates) {
            create_entity(s, id, &ctx, CREATE_ALL);
            continue;
        }
        /* Built aside: the frame-thread classes' creates later, in this
         * order (tks_run_deferred_creates). */
        if (create_entity(s, id, &ctx, CREATE_ANYWHERE)) {
            if (s->n_later == s->cap_later) {
                s->cap_later = s->cap_later ? s->cap_later * 2 : 64;
                s->later = tk_realloc(s->later, s->cap_later * sizeof *s->later);
            }
            s->later[s->n_later++] = id;
        }
    }
    tks__iter_end(s, &it);
}

size_t tks_run_deferred_creates(tks_sim *s)
{
    size_t n = s->n_later + s->n_later_tb;
    s->defer_creates = false;
    s->frame_hooks_off = false;
    tkp_ctx ctx = tks__ctx(s, NULL);
    for (size_t i = 0; i < s->n_later; i++)
        create_entity(s, s->later[i], &ctx, CREATE_FRAME_ONLY);
    for (size_t i = 0; i < s->n_later_tb; i++) {
        tk_tickable_info info;
        if (tk_tickable_get(s->w, s->later_tb[i], &info) == 0 && info.ud) {
            tks_tickable *t = info.ud;
            t->cls->p->create(&t->obj, &ctx);
        }
    }
    tk_free(s->later);
    tk_free(s->later_tb);
    s->later = NULL;
    s->later_tb = NULL;
    s->n_later = s->cap_later = s->n_later_tb = s->cap_later_tb = 0;
    return n;
}

static int cmp_id(const void *a, const void *b)
{
    tks_id x = *(const tks_id *)a, y = *(const tks_id *)b;
    return x < y ? -1 : x > y;
}

size_t tks_end_frame_hooks(tks_sim *s)
{
    size_t n = 0;
    s->frame_hooks_off = true; /* tks_free skips them from now on */
    tkp_ctx ctx = tks__ctx(s, NULL);
    for (size_t i = 0; i < s->n_tickables; i++) {
        tk_tickable_info info;
        if (tk_tickable_get(s->w, s->tickables[i], &info) != 0 || !info.ud)
            continue;
        tks_tickable *t = info.ud;
        if (t->cls->p->destroy && tks__frame_only(t->cls)) {
            t->cls->p->destroy(&t->obj, &ctx);
            n++;
        }
    }
    /* The entities with such an actor or component, from those classes'
     * rows, in id order. */
    tks_id *ids = NULL;
    size_t k = 0, cap = 0;
    for (size_t ci = 0; ci < s->n_classes; ci++) {
        const tks_class *c = s->classes[ci];
        if (!c->p->destroy || !tks__frame_only(c) || !c->store.live)
            continue;
        for (size_t h = 0; h < c->store.n_chunks; h++) {
            const tks_chunk *ch = c->store.chunks[h];
            for (uint32_t r = 0; r < ch->n; r++) {
                if (ch->hdr[r].flags & TKS_OBJ_DEAD)
                    continue;
                if (k == cap) {
                    cap = cap ? cap * 2 : 64;
                    ids = tk_realloc(ids, cap * sizeof *ids);
                }
                ids[k++] = ch->hdr[r].id;
            }
        }
    }
    if (k)
        qsort(ids, k, sizeof *ids, cmp_id);
    for (size_t i = 0; i < k; i++) {
        if (i > 0 && ids[i] == ids[i - 1])
            continue;
        tks_obj *e = tks__entity(s, ids[i]);
        if (!e)
            continue;
        for (size_t c = 0; c < tks__n_comps(s, e); c++) {
            tks_obj *o = tks__comp(s, e, (int)c);
            const tks_class *oc = tks_obj_class(o);
            if (oc->p->destroy && tks__frame_only(oc)) {
                oc->p->destroy(o, &ctx);
                n++;
            }
        }
        const tks_class *ec = tks_obj_class(e);
        if (ec->p->destroy && tks__frame_only(ec)) {
            ec->p->destroy(e, &ctx);
            n++;
        }
    }
    tk_free(ids);
    return n;
}
