/*
 * entity.c - what the daemon reads of entities and the props it sets (the
 * contract is in sim.h).  An entity is its actor's row (store.c); what few
 * entities have (components, dilation, life span, kept specs) is in its
 * extra record (ids.c), found from the row's store when an accessor has no
 * sim at hand.
 */
#include <string.h>

#include "sim_int.h"

static inline tks_sim *sim_of(const tks_entity *e) { return tks_chunk_of(&e->obj)->st->sim; }

static const tks_extra *extra_of(const tks_entity *e)
{
    return (e->obj.flags & TKS_OBJ_EXTRA) ? tks__extra(sim_of(e), e->obj.id) : NULL;
}

tks_id tks_entity_id(const tks_entity *e) { return e->obj.id; }
const tks_class *tks_entity_class(const tks_entity *e) { return tks_obj_class(&e->obj); }
tk_level_id tks_entity_level(const tks_entity *e)
{
    return tks_obj_level(tks_row_sim(&e->obj), &e->obj);
}

float tks_entity_dilation(const tks_entity *e)
{
    const tks_extra *x = extra_of(e);
    return x ? x->dilation : 1.0f;
}

size_t tks_entity_component_count(const tks_entity *e)
{
    const tks_extra *x = extra_of(e);
    return x ? x->n_comps : 0;
}

const tks_class *tks_entity_component_class(const tks_entity *e, size_t i)
{
    const tks_extra *x = extra_of(e);
    return x && i < x->n_comps ? tks_obj_class(x->comps[i].o) : NULL;
}

double tks_entity_life_remaining(const tks_sim *s, const tks_entity *e)
{
    const tks_extra *x = extra_of(e);
    tk_timer_info ti;
    if (!x || !x->life || tk_timer_get(s->w, x->life, &ti) != 0)
        return -1;
    return ti.remaining;
}

tk_timer_handle tks_entity_life_timer(const tks_sim *s, const tks_entity *e)
{
    (void)s;
    const tks_extra *x = extra_of(e);
    return x ? x->life : TK_TIMER_NONE;
}

tk_tick_id tks_entity_tick(const tks_entity *e, int comp)
{
    const tks_sim *s = tks_row_sim(&e->obj);
    if (comp < 0)
        return tks_obj_tick(s, &e->obj);
    const tks_extra *x = extra_of(e);
    return x && comp < x->n_comps ? tks_obj_tick(s, x->comps[comp].o) : TK_TICK_NONE;
}

const tk_tick_spec *tks_entity_tick_spec(const tks_sim *s, const tks_entity *e, int comp)
{
    const tks_extra *x = (e->obj.flags & TKS_OBJ_EXTRA) ? tks__extra(s, e->obj.id) : NULL;
    if (!x)
        return NULL;
    if (comp >= 0)
        return comp < x->n_comps && (x->comps[comp].o->flags & TKS_OBJ_NOTICK)
                   ? &x->comps[comp].kept
                   : NULL;
    return (e->obj.flags & TKS_OBJ_NOTICK) ? &x->kept : NULL;
}

void tks_entity_props(const tks_sim *s, const tks_entity *e, int comp, tks_prop_visit_fn fn,
                      void *ud)
{
    tks_obj *o = comp < 0 ? (tks_obj *)&e->obj : tks__comp(s, &e->obj, comp);
    if (o)
        tks__visit_props(tks_obj_class(o), tks_row_state(o), fn, ud);
}

int tks_entity_set_props(tks_sim *s, tks_id id, const tks_prop_kv *kv, size_t n,
                         char err[TKS_ERR_MAX])
{
    tks_obj *e = tks__entity(s, id);
    if (!e)
        return tks__errf(err, TK_ENOENT, "id: entity %llu does not exist", (unsigned long long)id);
    const tks_class *c = tks_obj_class(e);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++)
            if (strcmp(kv[i].key, kv[j].key) == 0)
                return tks__errf(err, TK_EINVAL, "props.%s: given twice", kv[i].key);
        int rc = tks__check_prop(s, c, &kv[i], "props", 0, &tks__live_mode, err);
        if (rc)
            return rc;
    }
    unsigned char *state = tks_row_state(e);
    if (!c->p->props_changed) {
        tks__apply_props(s, c, state, kv, n);
        return 0;
    }
    /* `old` keeps the replaced strings, ids and templates alive until the
     * class has seen them: their fields are detached before the apply. */
    unsigned char *old = c->p->state_size ? tk_malloc(c->p->state_size) : NULL;
    if (old)
        memcpy(old, state, c->p->state_size);
    for (size_t i = 0; i < n; i++) {
        const tks_prop_desc *d = tks__find_prop(c, kv[i].key);
        if (tks__owns_memory(d))
            tks__detach_field(d, state + d->offset);
    }
    tks__apply_props(s, c, state, kv, n);
    tkp_ctx ctx = tks__ctx(s, NULL);
    c->p->props_changed(e, old, &ctx);
    for (size_t i = 0; i < n; i++) {
        const tks_prop_desc *d = tks__find_prop(c, kv[i].key);
        tks__release_field(d, old + d->offset);
    }
    tk_free(old);
    return 0;
}

uint64_t tks_entity_list(const tks_sim *s, tk_level_id level, const tks_class *cls, uint64_t offset,
                         uint64_t limit, void (*fn)(void *ud, const tks_entity *e), void *ud)
{
    /* Sorting a restored world's block list is a cache, not a change. */
    tks_sim *ms = (tks_sim *)s;
    uint64_t total = 0;
    tks_iter it;
    tks__iter_begin(ms, &it);
    /* Without filters, whole blocks before `offset` are skipped. */
    if (level == TK_LEVEL_NONE && !cls)
        total = tks__iter_skip(ms, &it, offset);
    for (tks_obj *e; (e = tks__iter_next(ms, &it));) {
        if ((level != TK_LEVEL_NONE && tks_obj_level(s, e) != level) ||
            (cls && tks_obj_class(e) != cls))
            continue;
        if (total >= offset && total - offset < limit && fn)
            fn(ud, (const tks_entity *)e);
        total++;
    }
    tks__iter_end(ms, &it);
    return total;
}

const tks_entity *tks_tick_owner(const tks_sim *s, tk_tick_id id, int *comp)
{
    tk_tick_info info;
    if (tk_tick_get(s->w, id, &info) != 0 || !info.target)
        return NULL;
    const tks_obj *o = info.target;
    if (o->comp == -2)
        return NULL;
    if (comp)
        *comp = o->comp;
    return (const tks_entity *)tks__entity(s, o->id);
}

bool tks__entity_pos(tks_sim *s, tks_id id, double out[3])
{
    tks_obj *e = tks__entity(s, id);
    if (!e)
        return false;
    ptrdiff_t pos = tks_obj_class(e)->p->position;
    if (pos < 0)
        return false;
    memcpy(out, (unsigned char *)tks_row_state(e) + pos, 3 * sizeof(double));
    return true;
}
